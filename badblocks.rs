// SPDX-License-Identifier: GPL-2.0

//! Bad blocks: sectors that fail the requests touching them, set through a
//! device's `badblocks` attribute.
//!
//! C implementation: [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)

use kernel::{
    block::badblocks::BadBlocks,
    page::PAGE_SIZE,
    prelude::*,
    str::kstrtoull_bytes,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
    },
};

/// The bad sectors of a configfs device. The table belongs to the device,
/// not to its disk: it survives power cycles and is freed by `rmdir`.
#[pin_data]
pub(crate) struct Table {
    #[pin]
    sectors: BadBlocks,
    /// Set by the first well-formed write to `badblocks`. Until then, as C's
    /// disabled table, the table shows nothing and requests skip it.
    enabled: Atomic<bool>,
}

impl Table {
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            sectors <- BadBlocks::new(),
            enabled: Atomic::new(false),
        })
    }

    /// Takes a write to `badblocks`: `+<first>-<last>` marks the sectors
    /// from `first` to `last` bad, `-<first>-<last>` good again. The numbers
    /// are read as `kstrtoull` reads them (base 0), white space around the
    /// whole is ignored. As in C, malformed input and a change the table
    /// cannot make fail with `EINVAL`, a number too large with `ERANGE`.
    ///
    /// Unlike C, ranges reaching sector 2^54, which C's table cannot hold
    /// and records at the wrong place, and ranges longer than 2^31 - 1
    /// sectors, on which C's table code can loop forever with interrupts
    /// off, fail with `EINVAL`.
    pub(crate) fn store(&self, page: &[u8]) -> Result {
        // What C's `kstrndup` and `strstrip` leave of the input.
        let page = page.split(|&c| c == 0).next().unwrap_or_default();
        let text = trim_space(page);
        let (bad, range) = match text.split_first() {
            Some((b'+', range)) => (true, range),
            Some((b'-', range)) => (false, range),
            _ => return Err(EINVAL),
        };
        let dash = range.iter().position(|&c| c == b'-').ok_or(EINVAL)?;
        let first = kstrtoull_bytes(&range[..dash])?;
        let last = kstrtoull_bytes(&range[dash + 1..])?;
        if first > last {
            return Err(EINVAL);
        }
        self.enabled.store(true, Relaxed);
        // The whole range of sectors is no range at all.
        let sectors = (last - first).checked_add(1).ok_or(EINVAL)?;
        let changed = if bad {
            self.sectors.add(first, sectors)
        } else {
            self.sectors.remove(first, sectors)
        };
        changed.map_err(|_| EINVAL)
    }

    /// Shows the table as C does: a `<first> <length>` line per range, or
    /// nothing before the first write. Unlike C, which then makes configfs
    /// warn and fail the read, a table longer than a page is cut to the
    /// lines that fit.
    pub(crate) fn show(&self, page: &mut [u8; PAGE_SIZE]) -> usize {
        if self.enabled.load(Relaxed) {
            self.sectors.show(page)
        } else {
            0
        }
    }
}

/// C's `isspace`, which `strstrip` trims: unlike [`u8::is_ascii_whitespace`]
/// it takes the vertical tab.
fn is_space(c: &u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

fn trim_space(text: &[u8]) -> &[u8] {
    let start = text.iter().position(|c| !is_space(c)).unwrap_or(text.len());
    let end = text
        .iter()
        .rposition(|c| !is_space(c))
        .map_or(start, |i| i + 1);
    &text[start..end]
}

/// What a disk does with requests that touch bad sectors: its table and the
/// `badblocks_once` and `badblocks_partial_io` settings.
pub(crate) struct Rules {
    pub(crate) table: Arc<Table>,
    /// A hit makes the sectors of the bad range good again.
    pub(crate) once: bool,
    /// A request moves the whole blocks before the first bad sector before
    /// it fails, instead of nothing.
    pub(crate) partial_io: bool,
    /// Sectors per logical block.
    pub(crate) block_sectors: u64,
}

/// What the bad sectors leave of a request: it moves its first `good`
/// sectors, then ends with `status`.
pub(crate) struct Verdict {
    pub(crate) good: u64,
    pub(crate) status: Result,
}

impl Verdict {
    /// The verdict of `rules`, if the disk has any, on a request of
    /// `sectors` sectors from `sector`.
    #[inline]
    pub(crate) fn on(rules: Option<&Rules>, sector: u64, sectors: u64) -> Self {
        match rules.and_then(|rules| rules.check(sector, sectors)) {
            None => Self {
                good: sectors,
                status: Ok(()),
            },
            Some(good) => Self {
                good,
                status: Err(EIO),
            },
        }
    }
}

impl Rules {
    /// Checks the `sectors` sectors from `sector` of a request, as C's
    /// `null_handle_badblocks`. `None`: none is bad. `Some(n)`: the request
    /// moves its first `n` sectors, then fails with `EIO`.
    #[inline]
    fn check(&self, sector: u64, sectors: u64) -> Option<u64> {
        if !self.table.enabled.load(Relaxed) {
            return None;
        }
        self.hit(sector, sectors)
    }

    fn hit(&self, sector: u64, sectors: u64) -> Option<u64> {
        let bad = self.table.sectors.check(sector, sectors)?;
        if self.once {
            // Cannot fail: requests are processed with interrupts on, and
            // a whole range of the table leaves nothing to split.
            let _ = self.table.sectors.remove(bad.start, bad.end - bad.start);
        }
        // Not `%`: its panic path for a zero divisor would be dead code that
        // objtool does not know the end of.
        let first_bad = bad.start - bad.start.checked_rem(self.block_sectors).unwrap_or(0);
        Some(if self.partial_io {
            first_bad.saturating_sub(sector)
        } else {
            0
        })
    }
}

#[kunit_tests(rnull_badblocks)]
mod tests {
    use super::*;

    fn table() -> Result<Arc<Table>> {
        Arc::pin_init(Table::new(), GFP_KERNEL)
    }

    fn shown(table: &Table) -> Result<KVec<u8>> {
        let mut page = KBox::new([0u8; PAGE_SIZE], GFP_KERNEL)?;
        let len = table.show(&mut page);
        let mut text = KVec::new();
        text.extend_from_slice(&page[..len], GFP_KERNEL)?;
        Ok(text)
    }

    #[test]
    fn store_parses_like_c() -> Result {
        let t = table()?;
        for bad in [
            &b""[..],
            b"+",
            b"+1",
            b"*1-2",
            b"+a-3",
            b"+1 -2",
            b"+-1-2",
            b"+5-3",
            b"+0-18446744073709551615",
            b"+18014398509481984-18014398509481984",
        ] {
            assert_eq!(t.store(bad), Err(EINVAL));
        }
        // The refused writes changed nothing.
        assert_eq!(&*shown(&t)?, b"");
        assert_eq!(t.store(b"+1-99999999999999999999"), Err(ERANGE));
        t.store(b" \x0b+0x10-0x13\n")?;
        t.store(b"++010-011\0-1-2")?;
        assert_eq!(&*shown(&t)?, b"8 2\n16 4\n");
        t.store(b"-16-17")?;
        assert_eq!(&*shown(&t)?, b"8 2\n18 2\n");
        Ok(())
    }

    #[test]
    fn rules_like_null_handle_badblocks() -> Result {
        let t = table()?;
        let mut rules = Rules {
            table: t.clone(),
            once: false,
            partial_io: false,
            block_sectors: 8,
        };
        t.store(b"+0-0")?;
        t.store(b"-0-0")?;
        t.store(b"+20-21")?;
        assert_eq!(rules.check(0, 16), None);
        assert_eq!(rules.check(16, 8), Some(0));
        rules.partial_io = true;
        // The good prefix ends at the block holding the first bad sector.
        assert_eq!(rules.check(8, 16), Some(8));
        assert_eq!(rules.check(21, 8), Some(0));
        rules.once = true;
        assert_eq!(rules.check(8, 16), Some(8));
        assert_eq!(rules.check(8, 16), None);
        Ok(())
    }
}
