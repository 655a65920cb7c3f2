// SPDX-License-Identifier: GPL-2.0

//! Memory backing: the data written to a `memory_backed` device.
//!
//! C implementation: [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)
//!
//! Data is kept in pages allocated on first write, in an [`XArray`] indexed
//! by page number, each with a bit per 512-byte sector that says whether the
//! sector holds data. Sectors never written read as zeros.

use kernel::{
    alloc::flags::GFP_NOIO,
    block::{
        mq::Segment,
        SECTOR_SHIFT,
        SECTOR_SIZE, //
    },
    page::PAGE_SIZE,
    prelude::*,
    xarray::{
        self,
        XArray, //
    },
};

/// Sectors in a page.
const PAGE_SECTORS: usize = PAGE_SIZE >> SECTOR_SHIFT;

/// A page of the store.
struct StorePage {
    /// Bit `n` is set when sector `n` of the page holds data.
    valid: u64,
    /// `PAGE_SIZE` bytes.
    data: KVec<u8>,
}

impl StorePage {
    fn new() -> Result<KBox<Self>> {
        // Zeroed, so that nothing of the kernel's leaks even if a bug let an
        // invalid sector be read.
        let data = KVec::from_elem(0, PAGE_SIZE, GFP_NOIO)?;
        Ok(KBox::new(Self { valid: 0, data }, GFP_NOIO)?)
    }
}

/// The data of a memory-backed device. It outlives the disk: data survives
/// power cycles and is freed with the device.
#[pin_data]
pub(crate) struct Storage {
    #[pin]
    pages: XArray<KBox<StorePage>>,
}

impl Storage {
    pub(crate) fn new() -> impl PinInit<Self> {
        // A sector bit map of a page must fit the `valid` field.
        const { assert!(PAGE_SECTORS <= u64::BITS as usize) };
        pin_init!(Self {
            pages <- XArray::new(xarray::AllocKind::Alloc),
        })
    }

    /// Copies `segment` to the store, at byte `pos` of the device, in chunks
    /// of at most `block_size` bytes within a page. Fails with [`ENOSPC`] if
    /// a page cannot be allocated; the chunks before are written.
    pub(crate) fn write(&self, segment: &Segment<'_>, pos: u64, block_size: usize) -> Result {
        self.for_each_chunk(segment, pos, block_size, |chunk| {
            let mut pages = self.lock_page(chunk.index)?;
            let page = pages.get_mut(chunk.index).ok_or(ENOSPC)?;
            let data = &mut page.data[chunk.offset..chunk.offset + chunk.len];
            segment.copy_to_slice(chunk.segment_offset, data)?;
            page.valid |= chunk.sector_bits();
            Ok(())
        })
    }

    /// Copies from the store into `segment`, from byte `pos` of the device,
    /// in chunks of at most `block_size` bytes within a page. A chunk whose
    /// first sector holds no data reads as zeros.
    pub(crate) fn read(&self, segment: &Segment<'_>, pos: u64, block_size: usize) -> Result {
        self.for_each_chunk(segment, pos, block_size, |chunk| {
            let pages = self.pages.lock();
            match pages.get(chunk.index) {
                Some(page) if page.valid & (1 << chunk.first_sector) != 0 => {
                    let data = &page.data[chunk.offset..chunk.offset + chunk.len];
                    segment.copy_from_slice(chunk.segment_offset, data)
                }
                _ => segment.zero(chunk.segment_offset, chunk.len),
            }
        })
    }

    /// Forgets the data of `bytes` bytes from byte `pos` of the device;
    /// pages left without data are freed. Unlike C, which clears only the
    /// first sector of each block, every sector of the range is cleared, so
    /// blocks larger than a page are discarded whole.
    pub(crate) fn discard(&self, pos: u64, bytes: u64) -> Result {
        let end = pos.checked_add(bytes).ok_or(EINVAL)?;
        let mut at = pos;
        while at < end {
            let index = usize::try_from(at / PAGE_SIZE as u64)?;
            // The remainder of a division by the page size fits.
            let offset = (at % PAGE_SIZE as u64) as usize;
            let len = (PAGE_SIZE - offset).min(usize::try_from(end - at).unwrap_or(usize::MAX));
            let chunk = Chunk {
                index,
                offset,
                len,
                segment_offset: 0,
                first_sector: offset / SECTOR_SIZE as usize,
            };
            let mut pages = self.pages.lock();
            if let Some(page) = pages.get_mut(index) {
                page.valid &= !chunk.sector_bits();
                if page.valid == 0 {
                    drop(pages.remove(index));
                }
            }
            at += len as u64;
        }
        Ok(())
    }

    /// The store locked, with page `index` present: allocated (outside the
    /// lock, as allocation may sleep) if it was not.
    fn lock_page(&self, index: usize) -> Result<xarray::Guard<'_, KBox<StorePage>>> {
        let pages = self.pages.lock();
        if pages.get(index).is_some() {
            return Ok(pages);
        }
        drop(pages);
        let new = StorePage::new().map_err(|_| ENOSPC)?;
        let mut pages = self.pages.lock();
        // Another writer may have added the page meanwhile; keep theirs.
        if pages.get(index).is_none() {
            pages.store(index, new, GFP_NOIO).map_err(|_| ENOSPC)?;
        }
        Ok(pages)
    }

    /// Cuts the part of the device that `segment` covers, from byte `pos`,
    /// into chunks within one page and one block, and calls `f` on each.
    fn for_each_chunk(
        &self,
        segment: &Segment<'_>,
        pos: u64,
        block_size: usize,
        mut f: impl FnMut(Chunk) -> Result,
    ) -> Result {
        let mut done = 0;
        while done < segment.len() {
            let at = pos + done as u64;
            let index = usize::try_from(at / PAGE_SIZE as u64)?;
            // The remainder of a division by the page size fits.
            let offset = (at % PAGE_SIZE as u64) as usize;
            let len = block_size.min(segment.len() - done).min(PAGE_SIZE - offset);
            f(Chunk {
                index,
                offset,
                len,
                segment_offset: done,
                first_sector: offset / SECTOR_SIZE as usize,
            })?;
            done += len;
        }
        Ok(())
    }
}

/// A piece of a segment within one page of the store.
struct Chunk {
    /// The page.
    index: usize,
    /// The byte offset in the page.
    offset: usize,
    /// The length in bytes.
    len: usize,
    /// The byte offset in the segment.
    segment_offset: usize,
    /// The first sector of the chunk in the page.
    first_sector: usize,
}

impl Chunk {
    /// The bits of the sectors the chunk covers.
    fn sector_bits(&self) -> u64 {
        let sectors = self.len.div_ceil(SECTOR_SIZE as usize);
        let mask = if sectors >= 64 {
            u64::MAX
        } else {
            (1 << sectors) - 1
        };
        mask << self.first_sector
    }
}
