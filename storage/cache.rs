// SPDX-License-Identifier: GPL-2.0

//! The write-back cache of a memory-backed disk with a `cache_size`.
//!
//! C implementation: [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)
//!
//! Written data stays in cache pages until the cache is full, when pages are
//! written back to the store one at a time in rounds of increasing page
//! number, or until a FLUSH writes all of them back.

use super::{
    page_gfp,
    Chunk,
    Handle,
    Source,
    StorePage, //
};
use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNode, //
    },
};

/// The cached pages of a disk, by page number. Callers serialise access
/// (the cache sits in a mutex).
pub(super) struct Cache {
    pages: RBTree<usize, StorePage>,
    /// The number of pages in `pages`.
    count: usize,
    /// The most pages the cache holds; at least one.
    capacity: usize,
    /// The page number where the next write-back looks first.
    next: usize,
}

impl Cache {
    /// A cache of `bytes` bytes: as many whole pages as fit, at least one.
    pub(super) fn new(bytes: u64) -> Self {
        let capacity = usize::try_from(bytes / PAGE_SIZE as u64).unwrap_or(usize::MAX);
        Self {
            pages: RBTree::new(),
            count: 0,
            capacity: capacity.max(1),
            next: 0,
        }
    }

    /// The cached copy of page `index`, if there is one.
    pub(super) fn page(&self, index: usize) -> Option<&StorePage> {
        self.pages.get(&index)
    }

    /// Writes the part of `buffer` that `chunk` covers to the cache. A new
    /// cache page may first need room: a page is then written back to
    /// `store`. Fails with [`ENOSPC`] if memory runs out.
    ///
    /// Unlike C, an overwrite of data already written back goes to the
    /// cache too: C writes it straight to the store, so that it survives a
    /// power cycle without a FLUSH.
    pub(super) fn write(
        &mut self,
        store: &mut Handle<'_>,
        buffer: &impl Source,
        chunk: &Chunk,
    ) -> Result {
        if let Some(page) = self.pages.get_mut(&chunk.index) {
            return page.write(buffer, chunk);
        }
        while self.count >= self.capacity {
            self.write_back_one(store)?;
        }
        store.check_reserve()?;
        // Allocation may sleep.
        store.unlock();
        let page = StorePage::written(buffer, chunk)?;
        let node = RBTreeNode::new(chunk.index, page, page_gfp()).map_err(|_| ENOSPC)?;
        self.pages.insert(node);
        self.count += 1;
        Ok(())
    }

    /// Forgets the cached data `chunk` covers (it was discarded, or written
    /// to the store with FUA), and frees its page if it is left empty.
    pub(super) fn forget(&mut self, chunk: &Chunk) {
        if let Some(page) = self.pages.get_mut(&chunk.index) {
            if page.forget(chunk) {
                self.remove(chunk.index);
            }
        }
    }

    /// Writes every cached page back to `store` and empties the cache.
    /// On failure the pages not yet written back stay cached.
    pub(super) fn write_back_all(&mut self, store: &mut Handle<'_>) -> Result {
        while self.count > 0 {
            self.write_back_one(store)?;
        }
        Ok(())
    }

    /// Writes back the first cached page from `next` on, or the first one
    /// if there is none after it, and frees it.
    fn write_back_one(&mut self, store: &mut Handle<'_>) -> Result {
        let first = self
            .pages
            .cursor_lower_bound(&self.next)
            .or_else(|| self.pages.cursor_front());
        let Some((&index, page)) = first.as_ref().map(|cursor| cursor.current()) else {
            return Ok(());
        };
        store.write_back(index, page)?;
        self.remove(index);
        self.next = index.saturating_add(1);
        Ok(())
    }

    fn remove(&mut self, index: usize) {
        if self.pages.remove(&index).is_some() {
            self.count -= 1;
        }
    }

    /// The number of cached pages.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(super) fn len(&self) -> usize {
        self.count
    }
}
