// SPDX-License-Identifier: GPL-2.0

//! Memory backing: the data written to a `memory_backed` device.
//!
//! C implementation: [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)
//!
//! Data is kept in pages allocated on first write, in an [`RcuXArray`]
//! indexed by page number, each with a bit per 512-byte sector that says
//! whether the sector holds data. Sectors never written read as zeros. Pages
//! are looked up without a lock, under RCU, and copied to and from under a
//! lock of their own. A disk with a `cache_size` puts a write-back [`Cache`]
//! of such pages in front of the store.

mod cache;

use kernel::{
    alloc::{
        available_memory,
        flags::{
            __GFP_NORETRY,
            __GFP_NOWARN, //
            GFP_NOIO,
        },
        Flags, //
    },
    block::{
        mq::{
            Command,
            Operations,
            ReadSegment,
            Request,
            WriteSegment, //
        },
        SECTOR_SHIFT,
        SECTOR_SIZE, //
    },
    new_mutex, new_spinlock,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
        Mutex,
        SpinLock, //
    },
    xarray::{
        self,
        RcuXArray, //
    },
};

use cache::Cache;

/// How the pages of the store and the cache are allocated: on the I/O path
/// (no I/O for reclaim), and failing rather than retrying hard or calling
/// the OOM killer, silently. With [`MEMORY_RESERVE`], a disk larger than the
/// memory left fails the writes that need more, with `ENOSPC`, instead of
/// having the kernel kill processes for its pages (C's `GFP_NOIO`
/// allocations do, until nothing is left to kill and the kernel panics).
#[inline]
fn page_gfp() -> Flags {
    GFP_NOIO | __GFP_NORETRY | __GFP_NOWARN
}

/// The memory a disk leaves to the rest of the system: no page of data is
/// allocated once less would be available (`MemAvailable`).
const MEMORY_RESERVE: usize = 32 << 20;

/// Sectors in a page.
const PAGE_SECTORS: usize = PAGE_SIZE >> SECTOR_SHIFT;

/// Bytes in a sector.
const SECTOR_BYTES: usize = SECTOR_SIZE as usize;

/// Memory that data is copied to or from: a segment of a request or, in
/// tests, a plain buffer.
pub(crate) trait Buffer {
    /// The length in bytes.
    fn len(&self) -> usize;
}

/// A [`Buffer`] that written data is copied from: a segment of a write
/// request, which may only be read.
pub(crate) trait Source: Buffer {
    /// Copies `dst.len()` bytes from byte `offset` into `dst`.
    fn copy_to_slice(&self, offset: usize, dst: &mut [u8]) -> Result;
    /// Appends `len` bytes from byte `offset` to `vec`, growing it with
    /// [`page_gfp`] flags.
    fn append_to(&self, offset: usize, len: usize, vec: &mut KVec<u8>) -> Result;
}

/// A [`Buffer`] that read data is copied to: a segment of a read request.
pub(crate) trait Sink: Buffer {
    /// Copies `src` in, from byte `offset`.
    fn copy_from_slice(&self, offset: usize, src: &[u8]) -> Result;
    /// Fills `len` bytes from byte `offset` with zeros.
    fn zero(&self, offset: usize, len: usize) -> Result {
        self.fill(offset, len, 0)
    }
    /// Fills `len` bytes from byte `offset` with `byte`.
    fn fill(&self, offset: usize, len: usize, byte: u8) -> Result;
}

impl<B: Buffer> Buffer for &B {
    fn len(&self) -> usize {
        (**self).len()
    }
}

impl<B: Source> Source for &B {
    fn copy_to_slice(&self, offset: usize, dst: &mut [u8]) -> Result {
        (**self).copy_to_slice(offset, dst)
    }

    fn append_to(&self, offset: usize, len: usize, vec: &mut KVec<u8>) -> Result {
        (**self).append_to(offset, len, vec)
    }
}

impl<B: Sink> Sink for &B {
    fn copy_from_slice(&self, offset: usize, src: &[u8]) -> Result {
        (**self).copy_from_slice(offset, src)
    }

    fn fill(&self, offset: usize, len: usize, byte: u8) -> Result {
        (**self).fill(offset, len, byte)
    }
}

impl Buffer for WriteSegment<'_> {
    fn len(&self) -> usize {
        WriteSegment::len(self)
    }
}

impl Source for WriteSegment<'_> {
    fn copy_to_slice(&self, offset: usize, dst: &mut [u8]) -> Result {
        WriteSegment::copy_to_slice(self, offset, dst)
    }

    fn append_to(&self, offset: usize, len: usize, vec: &mut KVec<u8>) -> Result {
        self.append_to_vec(offset, len, vec, page_gfp())
    }
}

impl Buffer for ReadSegment<'_> {
    fn len(&self) -> usize {
        ReadSegment::len(self)
    }
}

impl Sink for ReadSegment<'_> {
    fn copy_from_slice(&self, offset: usize, src: &[u8]) -> Result {
        ReadSegment::copy_from_slice(self, offset, src)
    }

    fn fill(&self, offset: usize, len: usize, byte: u8) -> Result {
        ReadSegment::fill(self, offset, len, byte)
    }
}

/// The start of a [`Buffer`]: its first `len` bytes.
pub(crate) struct Prefix<B> {
    buffer: B,
    len: usize,
}

/// The first `bytes` bytes of `buffers`, placed one after the other: the
/// part a request moves before its first bad sector.
pub(crate) fn prefix<B: Buffer>(
    buffers: impl IntoIterator<Item = B>,
    bytes: u64,
) -> impl Iterator<Item = Prefix<B>> {
    buffers.into_iter().scan(bytes, |left, buffer| {
        if *left == 0 {
            return None;
        }
        let len = buffer
            .len()
            .min(usize::try_from(*left).unwrap_or(usize::MAX));
        *left -= len as u64;
        Some(Prefix { buffer, len })
    })
}

impl<B: Buffer> Buffer for Prefix<B> {
    fn len(&self) -> usize {
        self.len
    }
}

impl<B: Source> Source for Prefix<B> {
    fn copy_to_slice(&self, offset: usize, dst: &mut [u8]) -> Result {
        self.buffer.copy_to_slice(offset, dst)
    }

    fn append_to(&self, offset: usize, len: usize, vec: &mut KVec<u8>) -> Result {
        self.buffer.append_to(offset, len, vec)
    }
}

impl<B: Sink> Sink for Prefix<B> {
    fn copy_from_slice(&self, offset: usize, src: &[u8]) -> Result {
        self.buffer.copy_from_slice(offset, src)
    }

    fn fill(&self, offset: usize, len: usize, byte: u8) -> Result {
        self.buffer.fill(offset, len, byte)
    }
}

/// A page of data, in the store or in the cache.
struct StorePage {
    /// Bit `n` is set when sector `n` of the page holds data.
    valid: u64,
    /// `PAGE_SIZE` bytes.
    data: KVec<u8>,
}

impl StorePage {
    /// A page holding the part of `buffer` that `chunk` covers; [`ENOSPC`]
    /// if there is no memory for it. The caller checks the reserve first
    /// ([`PageStore::check_reserve`]).
    fn written(buffer: &impl Source, chunk: &Chunk) -> Result<Self> {
        // A sector bit map of a page must fit the `valid` field.
        const { assert!(PAGE_SECTORS <= u64::BITS as usize) };
        if chunk.offset == 0 && chunk.len == PAGE_SIZE {
            // The write fills the page: its bytes are copied once, with no
            // zeroing before.
            let mut data = KVec::new();
            buffer
                .append_to(chunk.buffer_offset, PAGE_SIZE, &mut data)
                .map_err(|e| if e == ENOMEM { ENOSPC } else { e })?;
            return Ok(Self {
                valid: chunk.sector_bits(),
                data,
            });
        }
        // Zeroed, so that nothing of the kernel's leaks even if a bug let an
        // invalid sector be read.
        let mut page = Self::empty()?;
        page.write(buffer, chunk)?;
        Ok(page)
    }

    /// An empty page; [`ENOSPC`] if there is no memory for it.
    fn empty() -> Result<Self> {
        let data = KVec::from_elem(0, PAGE_SIZE, page_gfp()).map_err(|_| ENOSPC)?;
        Ok(Self { valid: 0, data })
    }

    /// Whether the first sector of `chunk` holds data (a chunk lies within
    /// a block, which is written whole).
    #[inline]
    fn holds(&self, chunk: &Chunk) -> bool {
        self.valid & (1 << chunk.first_sector()) != 0
    }

    /// Copies the part of `buffer` that `chunk` covers into the page.
    #[inline(always)]
    fn write(&mut self, buffer: &impl Source, chunk: &Chunk) -> Result {
        buffer.copy_to_slice(chunk.buffer_offset, &mut self.data[chunk.range()])?;
        self.valid |= chunk.sector_bits();
        Ok(())
    }

    /// Copies the data `chunk` covers into `buffer`.
    #[inline(always)]
    fn read(&self, buffer: &impl Sink, chunk: &Chunk) -> Result {
        buffer.copy_from_slice(chunk.buffer_offset, &self.data[chunk.range()])
    }

    /// Forgets the sectors `chunk` covers; returns whether the page is left
    /// without data.
    fn forget(&mut self, chunk: &Chunk) -> bool {
        self.valid &= !chunk.sector_bits();
        self.valid == 0
    }

    /// Copies the sectors of `newer` that hold data over those of the page.
    ///
    /// C's cache flush copies a whole block from the first sector of each
    /// block instead, which reaches past the page when blocks are larger
    /// than a page; sector by sector, nothing outside the page is touched.
    fn merge(&mut self, newer: &StorePage) {
        for sector in (0..PAGE_SECTORS).filter(|s| newer.valid & (1 << s) != 0) {
            let bytes = sector * SECTOR_BYTES..(sector + 1) * SECTOR_BYTES;
            self.data[bytes.clone()].copy_from_slice(&newer.data[bytes]);
        }
        self.valid |= newer.valid;
    }
}

/// A page of the store, with a lock of its own: readers find it without the
/// store's lock (under RCU), and copy to or from it under this one.
#[pin_data]
struct SharedPage {
    #[pin]
    state: SpinLock<PageState>,
}

struct PageState {
    page: StorePage,
    /// Set, under the lock, when a discard takes the page out of the
    /// store: a writer that found it before must not write to it.
    removed: bool,
}

impl SharedPage {
    fn new(page: StorePage) -> impl PinInit<Self> {
        pin_init!(Self {
            state <- new_spinlock!(PageState { page, removed: false }),
        })
    }

    /// Calls `f` on the page, a page of `store`, unless it left the store;
    /// returns whether it did.
    #[inline(always)]
    fn update(&self, store: &PageStore, f: impl FnOnce(&mut StorePage) -> Result) -> Result<bool> {
        let mut state = self.state.lock();
        if state.removed {
            return Ok(false);
        }
        store.fill(&mut state.page, f)?;
        Ok(true)
    }
}

/// The data of a memory-backed device. It outlives the disk: data survives
/// power cycles and is freed with the device.
///
/// Pages are looked up without a lock, under RCU, and each has a lock of
/// its own ([`SharedPage`]): requests on different pages run in parallel.
/// C serialises every page operation of a device on one spinlock. The
/// store's lock (the array's) is taken only to add and remove pages; a page
/// removed by a discard is freed once no reader can hold it, after an RCU
/// grace period, which the discard waits for. Zone resets, which come often
/// in zoned workloads, do not wait. A reset empties the pages of its zone
/// and keeps them in the store, up to [`KEPT_PAGES`] empty pages in all, for
/// the writes that follow (a zone is written again after its reset): they
/// read as zeros and take new data with no allocation, no change to the
/// array and no grace period. The pages beyond that wait in `limbo`, and
/// are used again for new data once the grace period has passed, or freed
/// by a later reset or discard, or with the device.
#[pin_data]
pub(crate) struct PageStore {
    #[pin]
    pages: RcuXArray<Pin<KBox<SharedPage>>>,
    #[pin]
    limbo: Mutex<KVVec<RetiredPage>>,
    /// The number of pages in `limbo`, set with its lock held: read
    /// without the lock, it spares a new page the lock when limbo is empty.
    in_limbo: Atomic<usize>,
    /// The number of empty pages in `pages` (kept by zone resets). It grows
    /// only with the array's lock held, so never above [`KEPT_PAGES`].
    kept: Atomic<usize>,
    /// How many more pages may be allocated before the memory left is
    /// looked up again ([`PageStore::check_reserve`]).
    unchecked: Atomic<isize>,
}

/// The most pages a store allocates between two look-ups of the memory left:
/// 256 KiB, little beside [`MEMORY_RESERVE`].
const RESERVE_CHECK_PAGES: usize = 64;

/// The most empty pages zone resets keep in a store: 16 MiB, what C frees
/// at once and allocates again as the zone is written.
const KEPT_PAGES: usize = (16 << 20) / PAGE_SIZE;

/// A page removed from the store, which readers may still hold.
type RetiredPage = xarray::Retired<Pin<KBox<SharedPage>>>;

impl PageStore {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            pages <- RcuXArray::new(xarray::AllocKind::None),
            limbo <- new_mutex!(KVVec::new()),
            in_limbo: Atomic::new(0),
            kept: Atomic::new(0),
            unchecked: Atomic::new(0),
        })
    }

    /// Calls `f`, which writes data, on `page`, a page of the store: an
    /// empty page kept by a zone reset that it fills leaves the count.
    #[inline(always)]
    fn fill(&self, page: &mut StorePage, f: impl FnOnce(&mut StorePage) -> Result) -> Result {
        let kept = page.valid == 0;
        f(page)?;
        if kept && page.valid != 0 {
            self.kept.fetch_sub(1, Relaxed);
        }
        Ok(())
    }

    /// Fails with [`ENOSPC`] if a new page would leave less than
    /// [`MEMORY_RESERVE`] to the system. The memory left is looked up once
    /// for up to [`RESERVE_CHECK_PAGES`] new pages, as many as it leaves
    /// room for above the reserve: the look-up (`si_mem_available()`) costs
    /// as much as a lookup of a page.
    #[inline]
    fn check_reserve(&self) -> Result {
        if self.unchecked.fetch_sub(1, Relaxed) > 0 {
            return Ok(());
        }
        let room = available_memory().saturating_sub(MEMORY_RESERVE) / PAGE_SIZE;
        if room == 0 {
            return Err(ENOSPC);
        }
        // This page, and the others there is room for, up to the bound.
        let more = room.min(RESERVE_CHECK_PAGES) - 1;
        self.unchecked.store(more as isize, Relaxed);
        Ok(())
    }

    /// Frees the pages in limbo whose grace period has passed, and puts
    /// those of `retired` there (or, if there is no memory for them, frees
    /// them after waiting for their grace period).
    fn retire(&self, retired: &mut KVVec<RetiredPage>) {
        let mut limbo = self.limbo.lock();
        limbo.retain(|page| !page.grace_period_passed());
        if limbo.reserve(retired.len(), page_gfp()).is_err() {
            self.in_limbo.store(limbo.len(), Relaxed);
            drop(limbo);
            drain(retired);
            return;
        }
        for page in retired.drain_all() {
            // Within the capacity reserved above.
            let _ = limbo.push_within_capacity(page);
        }
        self.in_limbo.store(limbo.len(), Relaxed);
        // Else, with nothing else in the system needing a grace period, the
        // pages could wait in limbo for long, and new ones be allocated.
        if let Some(last) = limbo.last_mut() {
            last.start_grace_period();
        }
    }

    /// Frees the pages of `retired` after their grace period, waiting for
    /// it if `wait`, and then the pages in limbo whose grace period has
    /// passed; or, unless `wait`, puts them in limbo.
    fn free(&self, retired: &mut KVVec<RetiredPage>, wait: bool) {
        if wait {
            drain(retired);
            let mut limbo = self.limbo.lock();
            limbo.retain(|page| !page.grace_period_passed());
            self.in_limbo.store(limbo.len(), Relaxed);
        } else {
            self.retire(retired);
        }
    }

    /// A page of limbo whose grace period has passed, for new data: the one
    /// retired last, whose grace period covers those before it. Saves an
    /// allocation and a free a page in zoned workloads, where zones are
    /// reset and written again. It holds stale data of this store, which
    /// its sector bit map hides. [`None`] at once, without the lock, while
    /// limbo is empty, as it is in workloads without resets.
    fn recycle(&self) -> Option<Pin<KBox<SharedPage>>> {
        if self.in_limbo.load(Relaxed) == 0 {
            return None;
        }
        let mut limbo = self.limbo.lock();
        if !limbo.last()?.grace_period_passed() {
            return None;
        }
        let page = limbo.pop()?;
        self.in_limbo.store(limbo.len(), Relaxed);
        drop(limbo);
        Some(page.into_inner())
    }

    /// The store, for the chunks of one request.
    fn access(&self) -> StoreAccess<'_> {
        StoreAccess {
            storage: self,
            pages: None,
        }
    }
}

/// The store as one request uses it. Its pages are looked up through an
/// [`xarray::RcuCursor`], made on first use and dropped before anything
/// that may sleep: the chunks of a transfer are in consecutive pages, and
/// the lookup of the page after the last one is a step in the array rather
/// than a walk from its root.
struct StoreAccess<'a> {
    storage: &'a PageStore,
    pages: Option<xarray::RcuCursor<'a, Pin<KBox<SharedPage>>>>,
}

impl<'a> StoreAccess<'a> {
    /// The cursor over the pages, in an RCU read-side critical section.
    #[inline]
    fn pages(&mut self) -> &mut xarray::RcuCursor<'a, Pin<KBox<SharedPage>>> {
        let storage = self.storage;
        self.pages.get_or_insert_with(|| storage.pages.cursor())
    }

    /// Ends the critical section, before something that may sleep.
    fn unlock(&mut self) {
        self.pages = None;
    }

    /// Fails with [`ENOSPC`] if a new page would leave less than
    /// [`MEMORY_RESERVE`] to the system ([`PageStore::check_reserve`]).
    #[inline]
    fn check_reserve(&mut self) -> Result {
        self.storage.check_reserve()
    }

    /// Calls `update` on page `index` of the store. If there is no such
    /// page, one is made by `make` (the lock-free lookup is over by then:
    /// allocation may sleep) and added, unless another writer added one
    /// meanwhile: `update` then goes to theirs. [`ENOSPC`] if there is no
    /// memory for it.
    #[inline(always)]
    fn update(
        &mut self,
        index: usize,
        make: impl FnOnce() -> Result<StorePage>,
        update: impl Fn(&mut StorePage) -> Result,
    ) -> Result {
        let storage = self.storage;
        if let Some(page) = self.pages().get(index) {
            if page.update(storage, &update)? {
                return Ok(());
            }
        }
        self.add(index, make, update)
    }

    /// The slow path of [`StoreAccess::update`]: a new page, or one of limbo
    /// used again ([`PageStore::recycle`]) and emptied first.
    fn add(
        &mut self,
        index: usize,
        make: impl FnOnce() -> Result<StorePage>,
        update: impl Fn(&mut StorePage) -> Result,
    ) -> Result {
        self.unlock();
        let new = match self.storage.recycle() {
            Some(page) => {
                let mut state = page.state.lock();
                state.removed = false;
                state.page.valid = 0;
                update(&mut state.page)?;
                drop(state);
                page
            }
            None => {
                self.check_reserve()?;
                KBox::pin_init(SharedPage::new(make()?), page_gfp()).map_err(|_| ENOSPC)?
            }
        };
        let mut pages = self.storage.pages.lock();
        match pages.insert(index, new, page_gfp()) {
            Ok(()) => Ok(()),
            Err(e) if e.error == EBUSY => match pages.get(index) {
                // Found with the lock held, the page is in the store.
                Some(page) => page.update(self.storage, update).map(|_| ()),
                None => Err(ENOSPC),
            },
            Err(_) => Err(ENOSPC),
        }
    }

    /// Writes the part of `buffer` that `chunk` covers.
    ///
    /// This, [`StoreAccess::read`] and the page copies they call are inlined
    /// into the loop over the chunks of a transfer, as C's loop is one
    /// function: a call per page costs a measurable share of a large
    /// transfer (Documentation/rnull-performance.rst).
    #[inline(always)]
    fn write(&mut self, buffer: &impl Source, chunk: &Chunk) -> Result {
        if self.write_existing(buffer, chunk, true)? {
            return Ok(());
        }
        self.add(
            chunk.index,
            || StorePage::written(buffer, chunk),
            |page| page.write(buffer, chunk),
        )
    }

    /// Writes the part of `buffer` that `chunk` covers to the store's page,
    /// if the store has that page: returns whether it did. An empty page
    /// (kept by a zone reset) counts as one only if `into_empty`: the cache
    /// takes writes to pages the store has no data of, as in C, where a
    /// reset frees them. (The path of a page that is there, written out
    /// rather than through `update`, whose closure rustc left a call per
    /// page.)
    #[inline(always)]
    fn write_existing(
        &mut self,
        buffer: &impl Source,
        chunk: &Chunk,
        into_empty: bool,
    ) -> Result<bool> {
        let storage = self.storage;
        if let Some(page) = self.pages().get(chunk.index) {
            let mut state = page.state.lock();
            if !state.removed && (into_empty || state.page.valid != 0) {
                storage.fill(&mut state.page, |page| page.write(buffer, chunk))?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Reads the data `chunk` covers into `buffer`: zeros if it holds none.
    #[inline(always)]
    fn read(&mut self, buffer: &impl Sink, chunk: &Chunk) -> Result {
        if let Some(page) = self.pages().get(chunk.index) {
            // A page a discard removed holds no data.
            let state = page.state.lock();
            if state.page.holds(chunk) {
                return state.page.read(buffer, chunk);
            }
        }
        buffer.zero(chunk.buffer_offset, chunk.len)
    }

    /// Writes the data of `page`, a cached copy of page `index`, back.
    fn write_back(&mut self, index: usize, page: &StorePage) -> Result {
        self.update(
            index,
            || {
                let mut new = StorePage::empty()?;
                new.merge(page);
                Ok(new)
            },
            |old| {
                old.merge(page);
                Ok(())
            },
        )
    }

    /// Forgets the data of `bytes` bytes from byte `pos` of the device, and
    /// frees the pages left without data, calling `also` on every chunk (a
    /// page each) first.
    ///
    /// The pages removed are freed after an RCU grace period, which this
    /// waits for if `wait`, once per batch of up to [`DISCARD_BATCH`] pages,
    /// whose pointers are kept meanwhile; else they go to the store's limbo.
    fn discard(
        &mut self,
        pos: u64,
        bytes: usize,
        wait: bool,
        mut also: impl FnMut(&Chunk),
    ) -> Result {
        self.unlock();
        let pages_in = bytes
            .div_ceil(PAGE_SIZE)
            .saturating_add(1)
            .min(DISCARD_BATCH);
        // A few pages a batch if there is no memory for more.
        let mut retired = KVVec::with_capacity(pages_in, page_gfp())
            .or_else(|_| KVVec::with_capacity(pages_in.min(8), page_gfp()))
            .map_err(|_| ENOMEM)?;
        let storage = self.storage;
        let mut locked = None;
        let result = for_each_chunk(pos, bytes, PAGE_SIZE, |chunk| {
            also(chunk);
            if retired.len() == retired.capacity() {
                // Wait for the batch, without the lock: the page removed
                // last first, its grace period covers the others.
                locked = None;
                storage.free(&mut retired, wait);
            }
            let pages = locked.get_or_insert_with(|| storage.pages.lock());
            let emptied = pages.get(chunk.index).is_some_and(|page| {
                let mut state = page.state.lock();
                let kept = state.page.valid == 0;
                if !state.page.forget(chunk) {
                    return false;
                }
                // A reset keeps the pages it empties while there is room
                // (under the array's lock: the count cannot pass the bound).
                if !wait && (kept || storage.kept.load(Relaxed) < KEPT_PAGES) {
                    if !kept {
                        storage.kept.add(1, Relaxed);
                    }
                    return false;
                }
                if kept {
                    storage.kept.fetch_sub(1, Relaxed);
                }
                state.removed = true;
                true
            });
            if emptied {
                if let Some(page) = pages.remove(chunk.index) {
                    // Within capacity: the batch was emptied above.
                    let _ = retired.push_within_capacity(page);
                }
            }
            Ok(())
        });
        drop(locked);
        self.storage.free(&mut retired, wait);
        result
    }
}

/// Frees the pages of `retired` once no reader can hold them: after an
/// expedited RCU grace period (a discard, or the reset of a zone, waits for
/// it; a normal one takes milliseconds) from the removal of the page
/// removed last, which covers the others.
fn drain(retired: &mut KVVec<RetiredPage>) {
    if let Some(last) = retired.pop() {
        drop(last.into_inner_expedited());
    }
    retired.clear();
}

/// The most pages a discard frees after one grace period.
const DISCARD_BATCH: usize = 1 << 16;

/// The memory of a memory-backed disk while it is powered on: the device's
/// [`PageStore`], behind a write-back [`Cache`] if the disk has one.
///
/// The cache belongs to the disk: as in C, what it holds at power-off is
/// lost, as it would be from a real disk's volatile cache.
pub(crate) struct DiskMemory {
    storage: Arc<PageStore>,
    cache: Option<Pin<KBox<Mutex<Cache>>>>,
    /// The block size in bytes: data moves in chunks of at most a block.
    block_size: usize,
}

impl DiskMemory {
    /// The memory of a disk on `storage`, with a cache of `cache_bytes`
    /// bytes unless 0.
    pub(crate) fn new(
        storage: Arc<PageStore>,
        block_size: usize,
        cache_bytes: u64,
    ) -> Result<Self> {
        let cache = match cache_bytes {
            0 => None,
            bytes => Some(KBox::pin_init(new_mutex!(Cache::new(bytes)?), GFP_KERNEL)?),
        };
        Ok(Self {
            storage,
            cache,
            block_size,
        })
    }

    /// Does the data work of `rq`, C's `null_handle_memory_backed` and
    /// `null_handle_flush`, for its first `sectors` sectors: what bad
    /// sectors leave of it.
    pub(crate) fn process<T: Operations>(&self, rq: &Request<T>, sectors: u64) -> Result {
        let pos = rq.sector() << SECTOR_SHIFT;
        if sectors != u64::from(rq.bytes() >> SECTOR_SHIFT) {
            return self.process_prefix(rq, pos, sectors << SECTOR_SHIFT);
        }
        match rq.command() {
            Command::Read => self.read(rq.read_segments(), pos),
            Command::Write => self.write(rq.write_segments(), pos, rq.is_fua()),
            Command::Discard => self.discard(pos, rq.bytes().try_into()?),
            Command::Flush => self.flush(),
            // Other operations are not advertised.
            _ => Ok(()),
        }
    }

    /// The part of [`DiskMemory::process`] for a request cut short by bad
    /// sectors: its first `bytes` bytes, at byte `pos` of the device.
    #[cold]
    fn process_prefix<T: Operations>(&self, rq: &Request<T>, pos: u64, bytes: u64) -> Result {
        match rq.command() {
            Command::Read => self.read_request(rq, pos, bytes, u64::MAX),
            Command::Write => self.write_request(rq, pos, bytes),
            Command::Discard if bytes > 0 => self.discard(pos, bytes.try_into()?),
            _ => Ok(()),
        }
    }

    /// Reads the first `bytes` bytes of `rq` from byte `pos` of the device,
    /// those from byte `pos + valid` on as 0xff ([`DiskMemory::read_up_to`]).
    pub(crate) fn read_request<T: Operations>(
        &self,
        rq: &Request<T>,
        pos: u64,
        bytes: u64,
        valid: u64,
    ) -> Result {
        match bytes {
            0 => Ok(()),
            _ => self.read_up_to(prefix(rq.read_segments(), bytes), pos, valid),
        }
    }

    /// Writes the first `bytes` bytes of `rq` from byte `pos` of the device,
    /// past the cache if `rq` asks for forced unit access.
    pub(crate) fn write_request<T: Operations>(
        &self,
        rq: &Request<T>,
        pos: u64,
        bytes: u64,
    ) -> Result {
        match bytes {
            0 => Ok(()),
            _ => self.write(prefix(rq.write_segments(), bytes), pos, rq.is_fua()),
        }
    }

    /// Writes `buffers`, one after the other, from byte `pos` of the
    /// device. With a cache, the data goes to the cache, unless `fua` asks
    /// for it to be stable at once: then it goes to the store and leaves
    /// the cache. Fails with [`ENOSPC`] if memory runs out; the chunks
    /// before are written.
    pub(crate) fn write<B: Source>(
        &self,
        buffers: impl IntoIterator<Item = B>,
        pos: u64,
        fua: bool,
    ) -> Result {
        let mut cache = self.cache.as_ref().map(|cache| cache.lock());
        let mut store = self.storage.access();
        self.for_each_chunk(buffers, pos, |buffer, chunk| match &mut cache {
            None => store.write(buffer, chunk),
            Some(cache) if !fua => cache.write(&mut store, buffer, chunk),
            Some(cache) => {
                store.write(buffer, chunk)?;
                cache.forget(chunk);
                Ok(())
            }
        })
    }

    /// Reads into `buffers`, one after the other, from byte `pos` of the
    /// device: from the cache where it holds the data, else from the store.
    pub(crate) fn read<B: Sink>(&self, buffers: impl IntoIterator<Item = B>, pos: u64) -> Result {
        self.read_up_to(buffers, pos, u64::MAX)
    }

    /// Reads like [`DiskMemory::read`] the first `valid` bytes from byte `pos`;
    /// the bytes after them read as 0xff, as C's zoned devices give past the
    /// write pointer of a zone.
    pub(crate) fn read_up_to<B: Sink>(
        &self,
        buffers: impl IntoIterator<Item = B>,
        pos: u64,
        valid: u64,
    ) -> Result {
        let end = pos.saturating_add(valid);
        let mut cache = self.cache.as_ref().map(|cache| cache.lock());
        let mut store = self.storage.access();
        self.for_each_chunk(buffers, pos, |buffer, chunk| {
            let kept = chunk.kept_before(end);
            if kept < chunk.len {
                buffer.fill(chunk.buffer_offset + kept, chunk.len - kept, 0xff)?;
                if kept == 0 {
                    return Ok(());
                }
            }
            let chunk = &chunk.prefix(kept);
            match cache.as_mut().and_then(|cache| cache.page(chunk.index)) {
                Some(page) if page.holds(chunk) => page.read(buffer, chunk),
                _ => store.read(buffer, chunk),
            }
        })
    }

    /// Forgets the data of `bytes` bytes from byte `pos` of the device, in
    /// the cache and in the store. Unlike C, which clears only the first
    /// sector of each block, every sector of the range is cleared, so blocks
    /// larger than a page are discarded whole.
    pub(crate) fn discard(&self, pos: u64, bytes: usize) -> Result {
        self.forget(pos, bytes, true)
    }

    /// Forgets data like [`DiskMemory::discard`], for the reset of a zone: the
    /// pages freed are left for a later discard or reset to free, once no
    /// reader can hold them, instead of waiting for that.
    pub(crate) fn reset(&self, pos: u64, bytes: usize) -> Result {
        self.forget(pos, bytes, false)
    }

    fn forget(&self, pos: u64, bytes: usize, wait: bool) -> Result {
        let mut cache = self.cache.as_ref().map(|cache| cache.lock());
        self.storage.access().discard(pos, bytes, wait, |chunk| {
            if let Some(cache) = &mut cache {
                cache.forget(chunk);
            }
        })
    }

    /// Writes everything the cache holds back to the store (a FLUSH). As in
    /// C, a FLUSH that fails for want of memory ends with `ENOMEM`.
    pub(crate) fn flush(&self) -> Result {
        match &self.cache {
            Some(cache) => cache
                .lock()
                .write_back_all(&mut self.storage.access())
                .map_err(|_| ENOMEM),
            None => Ok(()),
        }
    }

    /// Cuts `buffers`, placed one after the other from byte `pos` of the
    /// device, into chunks of at most a block within a page, and calls `f`
    /// on each in order.
    fn for_each_chunk<B: Buffer>(
        &self,
        buffers: impl IntoIterator<Item = B>,
        mut pos: u64,
        mut f: impl FnMut(&B, &Chunk) -> Result,
    ) -> Result {
        for buffer in buffers {
            for_each_chunk(pos, buffer.len(), self.block_size, |chunk| {
                f(&buffer, chunk)
            })?;
            pos += buffer.len() as u64;
        }
        Ok(())
    }
}

/// A piece of a transfer within one page and one block.
struct Chunk {
    /// The page.
    index: usize,
    /// The byte offset in the page.
    offset: usize,
    /// The length in bytes.
    len: usize,
    /// The byte offset in the buffer of the transfer.
    buffer_offset: usize,
}

impl Chunk {
    /// How many bytes of the chunk lie before byte `end` of the device.
    #[inline]
    fn kept_before(&self, end: u64) -> usize {
        let start = self.index as u64 * PAGE_SIZE as u64 + self.offset as u64;
        // At most `self.len`, which is a `usize`.
        end.saturating_sub(start).min(self.len as u64) as usize
    }

    /// The first `len` bytes of the chunk.
    #[inline]
    fn prefix(&self, len: usize) -> Chunk {
        Chunk { len, ..*self }
    }

    /// The bytes of the page the chunk covers.
    #[inline]
    fn range(&self) -> core::ops::Range<usize> {
        self.offset..self.offset + self.len
    }

    /// The first sector of the chunk in the page.
    #[inline]
    fn first_sector(&self) -> usize {
        self.offset / SECTOR_BYTES
    }

    /// The bits of the sectors the chunk covers.
    #[inline]
    fn sector_bits(&self) -> u64 {
        let sectors = self.len.div_ceil(SECTOR_BYTES);
        let mask = if sectors >= 64 {
            u64::MAX
        } else {
            (1 << sectors) - 1
        };
        mask << self.first_sector()
    }
}

/// Cuts `len` bytes of the device from byte `pos` into chunks of at most
/// `max_len` bytes within a page, as C does with the block size, and calls
/// `f` on each in order.
fn for_each_chunk(
    pos: u64,
    len: usize,
    max_len: usize,
    mut f: impl FnMut(&Chunk) -> Result,
) -> Result {
    let mut done = 0;
    while done < len {
        let at = pos.checked_add(done as u64).ok_or(EINVAL)?;
        let index = usize::try_from(at / PAGE_SIZE as u64)?;
        // The remainder of a division by the page size fits.
        let offset = (at % PAGE_SIZE as u64) as usize;
        let chunk_len = max_len.min(len - done).min(PAGE_SIZE - offset);
        f(&Chunk {
            index,
            offset,
            len: chunk_len,
            buffer_offset: done,
        })?;
        done += chunk_len;
    }
    Ok(())
}

#[kunit_tests(rnull_storage)]
mod tests {
    use super::*;

    use kernel::{
        new_spinlock,
        sync::SpinLock, //
    };

    /// A buffer in plain memory. Like a segment, it is copied to and from
    /// under a page's spinlock.
    struct Bytes(Pin<KBox<SpinLock<KVec<u8>>>>);

    impl Bytes {
        fn new(len: usize, fill: u8) -> Result<Self> {
            let bytes = KVec::from_elem(fill, len, GFP_KERNEL)?;
            Ok(Self(KBox::pin_init(new_spinlock!(bytes), GFP_KERNEL)?))
        }

        /// A buffer whose byte `n` is `n / 512 + seed`.
        fn pattern(len: usize, seed: u8) -> Result<Self> {
            let bytes = Self::new(len, 0)?;
            for (n, byte) in bytes.0.lock().iter_mut().enumerate() {
                *byte = ((n / SECTOR_BYTES) as u8).wrapping_add(seed);
            }
            Ok(bytes)
        }

        /// Whether both hold the same bytes. The two locks, of one class,
        /// are never held together: lockdep would report a recursion.
        fn same(&self, other: &Bytes) -> bool {
            const STEP: usize = 256;
            let len = self.len();
            let mut chunk = [0u8; STEP];
            len == other.len()
                && (0..len).step_by(STEP).all(|at| {
                    let n = STEP.min(len - at);
                    chunk[..n].copy_from_slice(&self.0.lock()[at..at + n]);
                    other.0.lock()[at..at + n] == chunk[..n]
                })
        }

        fn all(&self, value: u8) -> bool {
            self.0.lock().iter().all(|&byte| byte == value)
        }
    }

    impl Buffer for Bytes {
        fn len(&self) -> usize {
            self.0.lock().len()
        }
    }

    impl Source for Bytes {
        fn copy_to_slice(&self, offset: usize, dst: &mut [u8]) -> Result {
            let bytes = self.0.lock();
            let src = bytes.get(offset..offset + dst.len()).ok_or(EINVAL)?;
            dst.copy_from_slice(src);
            Ok(())
        }

        fn append_to(&self, offset: usize, len: usize, vec: &mut KVec<u8>) -> Result {
            let bytes = self.0.lock();
            let src = bytes.get(offset..offset + len).ok_or(EINVAL)?;
            // Under the spinlock: no sleeping allocation.
            vec.extend_from_slice(src, GFP_ATOMIC)?;
            Ok(())
        }
    }

    impl Sink for Bytes {
        fn copy_from_slice(&self, offset: usize, src: &[u8]) -> Result {
            let mut bytes = self.0.lock();
            let dst = bytes.get_mut(offset..offset + src.len()).ok_or(EINVAL)?;
            dst.copy_from_slice(src);
            Ok(())
        }

        fn fill(&self, offset: usize, len: usize, byte: u8) -> Result {
            let mut bytes = self.0.lock();
            bytes
                .get_mut(offset..offset + len)
                .ok_or(EINVAL)?
                .fill(byte);
            Ok(())
        }
    }

    fn storage() -> Result<Arc<PageStore>> {
        Arc::pin_init(PageStore::new(), GFP_KERNEL)
    }

    fn has_page(storage: &PageStore, index: usize) -> bool {
        storage.pages.lock().get(index).is_some()
    }

    fn cached_pages(memory: &DiskMemory) -> usize {
        memory.cache.as_ref().map_or(0, |cache| cache.lock().len())
    }

    /// Reads `len` bytes at `pos` of `memory`.
    fn read(memory: &DiskMemory, pos: u64, len: usize) -> Result<Bytes> {
        let bytes = Bytes::new(len, 0xff)?;
        memory.read([&bytes], pos)?;
        Ok(bytes)
    }

    #[test]
    fn written_data_reads_back() -> Result {
        let memory = DiskMemory::new(storage()?, 512, 0)?;
        assert!(read(&memory, 0, 2 * PAGE_SIZE)?.all(0));

        let data = Bytes::pattern(PAGE_SIZE, 1)?;
        memory.write([&data], 1536, false)?;
        assert!(read(&memory, 1536, PAGE_SIZE)?.same(&data));
        assert!(read(&memory, 0, 1536)?.all(0));
        assert!(has_page(&memory.storage, 0) && has_page(&memory.storage, 1));
        Ok(())
    }

    #[test]
    fn resets_keep_a_bounded_number_of_emptied_pages() -> Result {
        let storage = storage()?;
        let memory = DiskMemory::new(storage.clone(), 4096, 0)?;
        let pages = KEPT_PAGES + 2;
        let data = Bytes::pattern(PAGE_SIZE, 1)?;
        for n in 0..pages {
            memory.write([&data], (n * PAGE_SIZE) as u64, false)?;
        }
        memory.reset(0, pages * PAGE_SIZE)?;
        // The first pages stay in the store, emptied; the others leave it.
        assert_eq!(storage.kept.load(Relaxed), KEPT_PAGES);
        assert!(has_page(&storage, 0) && has_page(&storage, KEPT_PAGES - 1));
        assert!(!has_page(&storage, KEPT_PAGES) && !has_page(&storage, KEPT_PAGES + 1));
        for n in [0, KEPT_PAGES - 1, KEPT_PAGES] {
            assert!(read(&memory, (n * PAGE_SIZE) as u64, PAGE_SIZE)?.all(0));
        }
        // Written again, a kept page takes the data and leaves the count.
        memory.write([&data], 0, false)?;
        assert!(read(&memory, 0, PAGE_SIZE)?.same(&data));
        assert_eq!(storage.kept.load(Relaxed), KEPT_PAGES - 1);
        // Reset again, it is kept again; a discard frees every kept page.
        memory.reset(0, PAGE_SIZE)?;
        assert_eq!(storage.kept.load(Relaxed), KEPT_PAGES);
        memory.discard(0, pages * PAGE_SIZE)?;
        assert_eq!(storage.kept.load(Relaxed), 0);
        assert!(!has_page(&storage, 0) && !has_page(&storage, KEPT_PAGES - 1));
        Ok(())
    }

    #[test]
    fn the_cache_takes_writes_to_a_page_a_reset_emptied() -> Result {
        let storage = storage()?;
        let memory = DiskMemory::new(storage.clone(), 4096, 16 * PAGE_SIZE as u64)?;
        let (old, new) = (Bytes::pattern(PAGE_SIZE, 1)?, Bytes::pattern(PAGE_SIZE, 2)?);
        memory.write([&old], 0, false)?;
        memory.flush()?;
        assert_eq!(cached_pages(&memory), 0);
        memory.reset(0, PAGE_SIZE)?;
        assert!(has_page(&storage, 0) && read(&memory, 0, PAGE_SIZE)?.all(0));
        // As in C, where the reset freed the page: the write is cached,
        // and the store's page stays empty until a flush.
        memory.write([&new], 0, false)?;
        assert_eq!(cached_pages(&memory), 1);
        assert_eq!(storage.kept.load(Relaxed), 1);
        assert!(read(&memory, 0, PAGE_SIZE)?.same(&new));
        memory.flush()?;
        assert_eq!(storage.kept.load(Relaxed), 0);
        assert!(read(&memory, 0, PAGE_SIZE)?.same(&new));
        Ok(())
    }

    #[test]
    fn whole_and_partial_new_pages_read_back() -> Result {
        let memory = DiskMemory::new(storage()?, 4096, 0)?;
        let page = |n: u64| n * PAGE_SIZE as u64;
        // Two pages written whole, made from the write.
        let whole = Bytes::pattern(2 * PAGE_SIZE, 3)?;
        memory.write([&whole], page(1), false)?;
        assert!(has_page(&memory.storage, 1) && has_page(&memory.storage, 2));
        assert!(read(&memory, page(1), 2 * PAGE_SIZE)?.same(&whole));
        // A sector of a new page: zeros around it.
        let sector = Bytes::pattern(512, 9)?;
        memory.write([&sector], page(4) + 1024, false)?;
        assert!(read(&memory, page(4), 1024)?.all(0));
        assert!(read(&memory, page(4) + 1024, 512)?.same(&sector));
        assert!(read(&memory, page(4) + 1536, PAGE_SIZE - 1536)?.all(0));
        // A page written whole over one that holds data.
        let over = Bytes::pattern(PAGE_SIZE, 5)?;
        memory.write([&over], page(4), false)?;
        assert!(read(&memory, page(4), PAGE_SIZE)?.same(&over));
        Ok(())
    }

    #[test]
    fn a_prefix_moves_only_its_bytes() -> Result {
        let memory = DiskMemory::new(storage()?, 512, 0)?;
        let (a, b) = (Bytes::pattern(1024, 1)?, Bytes::pattern(1024, 2)?);
        // 1536 bytes: all of `a`, half of `b`, nothing after.
        memory.write(prefix([&a, &b], 1536), 0, false)?;
        assert!(read(&memory, 0, 1024)?.same(&a));
        assert!(read(&memory, 1536, 1024)?.all(0));
        let (x, y) = (Bytes::new(1024, 7)?, Bytes::new(1024, 7)?);
        memory.read(prefix([&x, &y], 1024), 0)?;
        assert!(x.same(&a) && y.all(7));
        assert_eq!(prefix([&x, &y], 0).count(), 0);
        Ok(())
    }

    #[test]
    fn bytes_past_the_valid_ones_read_as_ff() -> Result {
        let memory = DiskMemory::new(storage()?, 4096, PAGE_SIZE as u64)?;
        memory.write([&Bytes::pattern(2 * PAGE_SIZE, 1)?], 0, false)?;

        // The end falls inside a block and a page: the chunk is cut there.
        let bytes = Bytes::new(2 * PAGE_SIZE, 0)?;
        memory.read_up_to([&bytes], 512, 1024)?;
        let mut first = KVec::from_elem(0u8, 1024, GFP_KERNEL)?;
        {
            let data = bytes.0.lock();
            assert!(data[1024..].iter().all(|&b| b == 0xff));
            first.copy_from_slice(&data[..1024]);
        }
        // One buffer locked at a time: they share a lock class.
        let head = read(&memory, 512, 1024)?;
        assert!(head.0.lock()[..] == first[..]);

        // Nothing valid: all 0xff; everything valid: a plain read.
        let none = Bytes::new(PAGE_SIZE, 0)?;
        memory.read_up_to([&none], 0, 0)?;
        assert!(none.all(0xff));
        let all = Bytes::new(PAGE_SIZE, 0)?;
        memory.read_up_to([&all], 0, u64::MAX)?;
        assert!(all.same(&read(&memory, 0, PAGE_SIZE)?));
        Ok(())
    }

    #[test]
    fn discard_frees_emptied_pages() -> Result {
        let memory = DiskMemory::new(storage()?, 512, 0)?;
        memory.write([&Bytes::pattern(2 * PAGE_SIZE, 1)?], 0, false)?;

        memory.discard(0, 1024)?;
        assert!(has_page(&memory.storage, 0));
        memory.discard(1024, PAGE_SIZE)?;
        assert!(!has_page(&memory.storage, 0) && has_page(&memory.storage, 1));
        assert!(read(&memory, 0, PAGE_SIZE)?.all(0));
        // Sectors 8 and 9 are gone, sector 10 on is still there.
        assert!(read(&memory, PAGE_SIZE as u64, 1024)?.all(0));
        let rest = PAGE_SIZE - 1024;
        assert!(read(&memory, PAGE_SIZE as u64 + 1024, rest)?.same(&Bytes::pattern(rest, 11)?));
        Ok(())
    }

    #[test]
    fn full_cache_writes_back_in_batches() -> Result {
        // 32 pages, of which C's rule uses 31: a batch of 16 is written back
        // once 31 are held.
        let memory = DiskMemory::new(storage()?, 4096, 32 * PAGE_SIZE as u64)?;
        let page = |n: usize| (n * PAGE_SIZE) as u64;
        let write =
            |n: usize, tag: u8| memory.write([&Bytes::pattern(PAGE_SIZE, tag)?], page(n), false);
        for n in 0..31 {
            write(n, n as u8)?;
        }
        assert_eq!(cached_pages(&memory), 31);
        assert!(!has_page(&memory.storage, 0));

        // Page 31 needs room: pages 0-15 go to the store.
        write(31, 31)?;
        assert_eq!(cached_pages(&memory), 16);
        assert!(has_page(&memory.storage, 15) && !has_page(&memory.storage, 16));

        // The next batch goes on after the page written back last.
        for n in 32..48 {
            write(n, n as u8)?;
        }
        assert!(has_page(&memory.storage, 31) && !has_page(&memory.storage, 32));
        assert_eq!(cached_pages(&memory), 16);

        // A page the store holds is written there, not cached; a cached one
        // is written in the cache.
        write(5, 105)?;
        write(40, 140)?;
        assert_eq!(cached_pages(&memory), 16);
        for n in 0..48 {
            let tag = match n {
                5 => 105,
                40 => 140,
                n => n as u8,
            };
            assert!(read(&memory, page(n), PAGE_SIZE)?.same(&Bytes::pattern(PAGE_SIZE, tag)?));
        }
        Ok(())
    }

    #[test]
    fn flush_makes_data_survive_the_cache() -> Result {
        let storage = storage()?;
        let data = Bytes::pattern(3 * PAGE_SIZE, 7)?;

        // Without a flush, the cache's data goes with the disk.
        let memory = DiskMemory::new(storage.clone(), 512, 1 << 20)?;
        memory.write([&data], 0, false)?;
        assert!(read(&memory, 0, 3 * PAGE_SIZE)?.same(&data));
        drop(memory);
        let memory = DiskMemory::new(storage.clone(), 512, 1 << 20)?;
        assert!(read(&memory, 0, 3 * PAGE_SIZE)?.all(0));

        memory.write([&data], 0, false)?;
        memory.flush()?;
        assert_eq!(cached_pages(&memory), 0);
        drop(memory);
        let memory = DiskMemory::new(storage, 512, 0)?;
        assert!(read(&memory, 0, 3 * PAGE_SIZE)?.same(&data));
        Ok(())
    }

    #[test]
    fn fua_writes_bypass_the_cache() -> Result {
        let memory = DiskMemory::new(storage()?, 512, 1 << 20)?;
        let old = Bytes::pattern(PAGE_SIZE, 1)?;
        memory.write([&old], 0, false)?;
        assert!(!has_page(&memory.storage, 0));

        // The FUA sector goes to the store and leaves the cache; the other
        // sectors of the page stay cached.
        let new = Bytes::pattern(512, 9)?;
        memory.write([&new], 0, true)?;
        assert!(has_page(&memory.storage, 0));
        assert_eq!(cached_pages(&memory), 1);
        assert!(read(&memory, 0, 512)?.same(&new));
        assert!(read(&memory, 512, PAGE_SIZE - 512)?.same(&Bytes::pattern(PAGE_SIZE - 512, 2)?));

        // Written in full with FUA, the page leaves the cache.
        memory.write([&Bytes::pattern(PAGE_SIZE, 5)?], 0, true)?;
        assert_eq!(cached_pages(&memory), 0);
        Ok(())
    }

    #[test]
    fn blocks_larger_than_a_page_are_written_back_whole() -> Result {
        const BLOCK: usize = 16 * PAGE_SIZE;
        let memory = DiskMemory::new(storage()?, BLOCK, PAGE_SIZE as u64)?;
        let data = Bytes::pattern(2 * BLOCK, 3)?;
        memory.write([&data], 0, false)?;
        assert_eq!(cached_pages(&memory), 1);
        memory.flush()?;
        assert!((0..32).all(|index| has_page(&memory.storage, index)));
        assert!(read(&memory, 0, 2 * BLOCK)?.same(&data));

        memory.discard(0, BLOCK)?;
        assert!((0..16).all(|index| !has_page(&memory.storage, index)));
        assert!(read(&memory, 0, BLOCK)?.all(0));
        Ok(())
    }
}
