// SPDX-License-Identifier: GPL-2.0

//! The write-back cache of a memory-backed disk with a `cache_size`.
//!
//! C implementation: [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)
//!
//! As in C: a write goes to the cache page of its page if there is one, else
//! to the store's page if there is one, else to a new cache page. Data stays
//! in cache pages until the cache is full, when pages are written back to the
//! store in batches of up to [`WRITE_BACK_BATCH`] in rounds of increasing
//! page number, or until a FLUSH writes all of them back.
//!
//! The pages are in an [`XArray`] by page number, as C's are in a radix
//! tree: a lookup walks a few nodes of 64 slots whatever the size of the
//! cache. The cache's mutex serialises every access, so lookups borrow the
//! array exclusively ([`XArray::load_mut`]) and take no lock of its own;
//! only adding and removing pages does.

use super::{
    page_gfp,
    Chunk,
    Source,
    StoreAccess,
    StorePage, //
};
use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    xarray::{
        AllocKind,
        XArray, //
    },
};

/// The most pages written back at once when the cache is full: C's
/// `FREE_BATCH`.
const WRITE_BACK_BATCH: usize = 16;

/// The cached pages of a disk, by page number. Callers serialise access
/// (the cache sits in a mutex).
pub(super) struct Cache {
    pages: Pin<KBox<XArray<KBox<StorePage>>>>,
    /// Which pages may be in `pages`: most writes to a full cache go to the
    /// store, and most lookups find nothing.
    filter: Filter,
    /// The number of pages in `pages`.
    count: usize,
    /// The cache's size in pages; at least one. As in C, pages are written
    /// back once the cache holds one page less.
    capacity: usize,
    /// The page number where the next write-back looks first: C's
    /// `cache_flush_pos`, the last page written back.
    next: usize,
}

impl Cache {
    /// A cache of `bytes` bytes: as many whole pages as fit, at least one.
    pub(super) fn new(bytes: u64) -> Result<Self> {
        let capacity = usize::try_from(bytes / PAGE_SIZE as u64)
            .unwrap_or(usize::MAX)
            .max(1);
        Ok(Self {
            pages: KBox::pin_init(XArray::new(AllocKind::None), GFP_KERNEL)?,
            filter: Filter::new(capacity)?,
            count: 0,
            capacity,
            next: 0,
        })
    }

    /// The cached copy of page `index`, if there is one.
    #[inline]
    pub(super) fn page(&mut self, index: usize) -> Option<&StorePage> {
        self.page_mut(index).map(|page| &*page)
    }

    /// The cached copy of page `index`, if there is one, to write to.
    #[inline]
    fn page_mut(&mut self, index: usize) -> Option<&mut StorePage> {
        if !self.filter.may_hold(index) {
            return None;
        }
        self.pages.as_mut().load_mut(index)
    }

    /// Writes the part of `buffer` that `chunk` covers, as C's
    /// `copy_to_nullb` does: first, if the cache is full, a batch of pages
    /// is written back to `store`; then the data goes to the page's cached
    /// copy if there is one, else to the store's page if there is one (an
    /// overwrite of data written back survives a power cycle without a
    /// FLUSH), else to a new cache page. Fails with [`ENOSPC`] if memory runs
    /// out.
    #[inline]
    pub(super) fn write(
        &mut self,
        store: &mut StoreAccess<'_>,
        buffer: &impl Source,
        chunk: &Chunk,
    ) -> Result {
        if self.count + 1 >= self.capacity {
            self.make_room(store)?;
        }
        if let Some(page) = self.page_mut(chunk.index) {
            return page.write(buffer, chunk);
        }
        if store.write_existing(buffer, chunk, false)? {
            return Ok(());
        }
        self.add(store, buffer, chunk)
    }

    /// The slow path of [`Cache::write`]: a new cache page.
    fn add(&mut self, store: &mut StoreAccess<'_>, buffer: &impl Source, chunk: &Chunk) -> Result {
        store.check_reserve()?;
        // Allocation may sleep.
        store.unlock();
        let page = KBox::new(StorePage::written(buffer, chunk)?, page_gfp()).map_err(|_| ENOSPC)?;
        self.pages
            .lock()
            .store(chunk.index, page, page_gfp())
            .map_err(|_| ENOSPC)?;
        self.filter.add(chunk.index);
        self.count += 1;
        Ok(())
    }

    /// Forgets the cached data `chunk` covers (it was discarded, or written
    /// to the store with FUA), and frees its page if it is left empty.
    pub(super) fn forget(&mut self, chunk: &Chunk) {
        if let Some(page) = self.page_mut(chunk.index) {
            if page.forget(chunk) {
                self.remove(chunk.index);
            }
        }
    }

    /// Writes every cached page back to `store` and empties the cache, in
    /// batches from where the last write-back stopped, as C's FLUSH does.
    /// On failure the pages not yet written back stay cached.
    pub(super) fn write_back_all(&mut self, store: &mut StoreAccess<'_>) -> Result {
        while self.count > 0 {
            if self.write_back_batch(store)? == 0 {
                self.next = 0;
            }
        }
        Ok(())
    }

    /// Makes room for a page, as C's `null_make_cache_space`: writes back the
    /// next batch of pages, from the first one at or after `next`, or from
    /// the first page if there is none there.
    #[cold]
    fn make_room(&mut self, store: &mut StoreAccess<'_>) -> Result {
        while self.count > 0 {
            if self.write_back_batch(store)? > 0 {
                break;
            }
            self.next = 0;
        }
        Ok(())
    }

    /// Writes back up to [`WRITE_BACK_BATCH`] cached pages, in page order
    /// from the first one at or after `next`, and frees them; `next` is then
    /// the last one. Returns how many were written back.
    fn write_back_batch(&mut self, store: &mut StoreAccess<'_>) -> Result<usize> {
        let mut done = 0;
        let mut from = Some(self.next);
        while let Some(start) = from.filter(|_| done < WRITE_BACK_BATCH) {
            let Some((index, page)) = self.pages.as_mut().find_mut(start) else {
                break;
            };
            // May sleep; the page stays cached if it fails.
            store.write_back(index, page)?;
            self.remove(index);
            self.next = index;
            done += 1;
            from = index.checked_add(1);
        }
        Ok(done)
    }

    fn remove(&mut self, index: usize) {
        if self.pages.lock().remove(index).is_some() {
            self.filter.remove(index);
            self.count -= 1;
        }
    }

    /// The number of cached pages.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(super) fn len(&self) -> usize {
        self.count
    }
}

/// A counting filter over page numbers: a count for each slot of page
/// numbers (a page's slot is its number modulo the slot count), of the pages
/// that were added and not removed. A page whose slot counts 0 was not
/// added: a walk down the array, several nodes from its root, is then saved
/// by a load and a test. A count that reaches its maximum
/// stays there, so that the filter only ever errs towards a lookup.
struct Filter {
    counts: KVVec<u16>,
    /// The number of slots, less one: a power of two, less one.
    mask: usize,
}

impl Filter {
    /// A filter for a cache of `capacity` pages: about eight slots a page,
    /// between 64 and 2^20 (2 MiB of counts) of them.
    fn new(capacity: usize) -> Result<Self> {
        let slots = capacity
            .saturating_mul(8)
            .clamp(64, 1 << 20)
            .next_power_of_two();
        Ok(Self {
            counts: KVVec::from_elem(0, slots, GFP_KERNEL)?,
            mask: slots - 1,
        })
    }

    /// Whether page `index` may have been added.
    #[inline(always)]
    fn may_hold(&self, index: usize) -> bool {
        self.counts
            .get(index & self.mask)
            .is_some_and(|&count| count != 0)
    }

    fn add(&mut self, index: usize) {
        if let Some(count) = self.counts.get_mut(index & self.mask) {
            *count = count.saturating_add(1);
        }
    }

    fn remove(&mut self, index: usize) {
        if let Some(count) = self.counts.get_mut(index & self.mask) {
            if *count != u16::MAX {
                *count = count.saturating_sub(1);
            }
        }
    }
}
