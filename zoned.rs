// SPDX-License-Identifier: GPL-2.0

//! Zoned disks: the geometry checks of power-on, the zones with their
//! conditions and write pointers, and the requests that move them.
//!
//! C implementation: [`drivers/block/null_blk/zoned.c`](srctree/drivers/block/null_blk/zoned.c)
//!
//! Conventional zones come first, then sequential-write-required zones. Each
//! zone has a lock of its own, so that different zones are written in
//! parallel: a spinlock, or a mutex on a memory-backed disk, whose writes
//! may sleep. The counts of open and closed zones, which the open and active
//! limits bound, have a spinlock of their own, taken inside a zone's.

use crate::{
    badblocks::{
        Rules,
        Verdict, //
    },
    settings::Settings,
    storage::DiskMemory,
};
use kernel::{
    alloc::flags::__GFP_NOWARN,
    block::{
        mq::{
            gen_disk::ZonedLimits,
            Command,
            Operations,
            Request, //
        },
        zoned::{
            Zone,
            ZoneCondition as Cond,
            ZoneReport,
            ZoneType, //
        },
        SECTOR_SHIFT,
    },
    new_mutex, new_spinlock,
    prelude::*,
    sync::{
        Mutex,
        SpinLock, //
    },
    types::Owned,
};

/// The write pointer of a read-only or offline zone, as C's
/// `NULL_ZONE_INVALID_WP`.
const INVALID_WP: u64 = u64::MAX;

/// MiB in sectors: the zone settings are in MiB, as C's.
const MIB_SECTORS_SHIFT: u32 = 20 - SECTOR_SHIFT;

/// The geometry of a zoned disk, from its settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// The zone size in sectors, a power of two.
    zone_sectors: u64,
    /// The writable sectors of a sequential zone.
    capacity_sectors: u64,
    /// The number of zones.
    nr_zones: u32,
    /// The number of conventional zones, the first ones.
    nr_conv: u32,
    /// The most zones open at once, or 0.
    max_open: u32,
    /// The most zones open or closed at once, or 0.
    max_active: u32,
    /// The largest zone append, in sectors; 0 lets the block layer emulate it.
    append_max_sectors: u32,
    /// Whether sequential zones start full.
    full: bool,
}

impl Geometry {
    /// Checks and rewrites the zone settings of a disk of `disk_sectors`
    /// sectors at power-on, with C's checks, rewrites and messages, in C's
    /// order. Rewrites stay, even if a later check fails.
    pub(crate) fn new(settings: &mut Settings, disk_sectors: u64) -> Result<Self> {
        if settings.zone_size > settings.size {
            pr_err!("Zone size larger than device capacity\n");
            return Err(EINVAL);
        }
        if settings.zone_capacity == 0 {
            settings.zone_capacity = settings.zone_size;
        }
        if settings.zone_capacity > settings.zone_size {
            pr_err!(
                "zone capacity ({} MB) larger than zone size ({} MB)\n",
                settings.zone_capacity,
                settings.zone_size
            );
            return Err(EINVAL);
        }
        // The zone size is a power of two: `validate` checked it.
        if settings.zone_capacity != settings.zone_size
            && settings.size & (settings.zone_size - 1) != 0
        {
            pr_err!(
                "A smaller last zone is not allowed with zone capacity smaller than zone size.\n"
            );
            return Err(EINVAL);
        }
        // As C, sizes in sectors wrap at 64 bits; unlike C, whose queue
        // limit is 32 bits wide, a zone of 2^32 sectors or more is refused.
        let zone_sectors = settings.zone_size.wrapping_shl(MIB_SECTORS_SHIFT);
        let capacity_sectors = settings.zone_capacity.wrapping_shl(MIB_SECTORS_SHIFT);
        if zone_sectors == 0 {
            pr_err!("zone_size too large or too small, leads to zero sectors\n");
            return Err(EINVAL);
        }
        if u32::try_from(zone_sectors).is_err() {
            pr_err!("zone_size too large: {} MB\n", settings.zone_size);
            return Err(EINVAL);
        }
        let nr_zones = u32::try_from(disk_sectors.div_ceil(zone_sectors)).map_err(|_| EINVAL)?;

        if settings.zone_nr_conv >= nr_zones {
            settings.zone_nr_conv = nr_zones - 1;
            pr_info!(
                "changed the number of conventional zones to {}",
                settings.zone_nr_conv
            );
        }
        // Whole blocks, at most a zone's capacity; C's `ALIGN_DOWN` gives 0
        // for a block size of 0.
        let block_sectors = settings.blocksize >> SECTOR_SHIFT;
        let aligned = match block_sectors {
            0 => 0,
            n => settings.zone_append_max_sectors / n * n,
        };
        // At most `aligned`, a `u32`.
        settings.zone_append_max_sectors = u64::from(aligned).min(capacity_sectors) as u32;

        let nr_seq = nr_zones - settings.zone_nr_conv;
        if settings.zone_max_active >= nr_seq {
            settings.zone_max_active = 0;
            pr_info!("zone_max_active limit disabled, limit >= zone count\n");
        }
        if settings.zone_max_active != 0 && settings.zone_max_open > settings.zone_max_active {
            settings.zone_max_open = settings.zone_max_active;
            pr_info!(
                "changed the maximum number of open zones to {}\n",
                settings.zone_max_open
            );
        } else if settings.zone_max_open >= nr_seq {
            settings.zone_max_open = 0;
            pr_info!("zone_max_open limit disabled, limit >= zone count\n");
        }

        Ok(Self {
            zone_sectors,
            capacity_sectors,
            nr_zones,
            nr_conv: settings.zone_nr_conv,
            max_open: settings.zone_max_open,
            max_active: settings.zone_max_active,
            append_max_sectors: settings.zone_append_max_sectors,
            full: settings.zone_full,
        })
    }

    /// The queue limits of the disk.
    pub(crate) fn limits(&self) -> ZonedLimits {
        ZonedLimits {
            // Checked to fit in `new`.
            zone_sectors: self.zone_sectors as u32,
            max_open_zones: self.max_open,
            max_active_zones: self.max_active,
            max_zone_append_sectors: self.append_max_sectors,
        }
    }

    /// Whether zone appends are turned into writes by the block layer.
    pub(crate) fn emulates_append(&self) -> bool {
        self.append_max_sectors == 0
    }

    /// Zone `no` as it is at power-on, on a disk of `disk_sectors` sectors.
    fn initial_zone(&self, no: u32, disk_sectors: u64) -> Zone {
        let start = u64::from(no) * self.zone_sectors;
        if no < self.nr_conv {
            return Zone {
                start,
                len: self.zone_sectors,
                capacity: self.zone_sectors,
                write_pointer: start + self.zone_sectors,
                zone_type: ZoneType::Conventional,
                condition: Cond::NotWritePointer,
            };
        }
        let len = self.zone_sectors.min(disk_sectors - start);
        let capacity = len.min(self.capacity_sectors);
        let (condition, write_pointer) = if self.full {
            (Cond::Full, start + capacity)
        } else {
            (Cond::Empty, start)
        };
        Zone {
            start,
            len,
            capacity,
            write_pointer,
            zone_type: ZoneType::SequentialWriteRequired,
            condition,
        }
    }
}

/// A zone under its lock `L`.
#[pin_data]
struct Slot<L> {
    #[pin]
    zone: L,
}

/// The zones, each under its own lock.
enum ZoneLocks {
    /// Spinlocks: nothing done under them sleeps.
    Spin(Pin<KVBox<[Slot<SpinLock<Zone>>]>>),
    /// Mutexes, for a memory-backed disk: its writes may sleep.
    Sleep(Pin<KVBox<[Slot<Mutex<Zone>>]>>),
}

impl ZoneLocks {
    /// Runs `f` on zone `no` under its lock.
    fn with<R>(&self, no: usize, f: impl FnOnce(&mut Zone) -> R) -> R {
        match self {
            Self::Spin(zones) => f(&mut zones[no].zone.lock()),
            Self::Sleep(zones) => f(&mut zones[no].zone.lock()),
        }
    }

    /// Runs `f` on zone `no` if its lock is free.
    fn try_with<R>(&self, no: usize, f: impl FnOnce(&mut Zone) -> R) -> Option<R> {
        match self {
            Self::Spin(zones) => zones[no].zone.try_lock().map(|mut zone| f(&mut zone)),
            Self::Sleep(zones) => zones[no].zone.try_lock().map(|mut zone| f(&mut zone)),
        }
    }
}

/// The zones that count against the open and active limits.
#[derive(Default)]
struct Counts {
    imp_open: u32,
    exp_open: u32,
    closed: u32,
    /// Where the search for an implicitly open zone to close starts.
    next_to_close: u32,
}

/// The zones of a zoned disk, and its memory if it is memory-backed.
#[pin_data]
pub(crate) struct Zones {
    geometry: Geometry,
    table: ZoneLocks,
    /// Whether there is an open or an active limit to keep.
    limited: bool,
    #[pin]
    counts: SpinLock<Counts>,
    memory: Option<DiskMemory>,
}

impl Zones {
    /// The zones of a disk of `disk_sectors` sectors with `geometry`, as at
    /// power-on (zone conditions are not kept across power cycles).
    pub(crate) fn new(
        geometry: Geometry,
        disk_sectors: u64,
        memory: Option<DiskMemory>,
    ) -> Result<impl PinInit<Self, Error>> {
        let len = geometry.nr_zones as usize;
        // The index fits: it is below the number of zones, a `u32`.
        let initial = |no: usize| geometry.initial_zone(no as u32, disk_sectors);
        // Millions of zones need gigabytes: fail quietly if they are not there.
        let flags = GFP_KERNEL | __GFP_NOWARN;
        let table = if memory.is_some() {
            let slot = |no| try_pin_init!(Slot { zone <- new_mutex!(initial(no)) }? Error);
            ZoneLocks::Sleep(KVBox::pin_slice(slot, len, flags)?)
        } else {
            let slot = |no| try_pin_init!(Slot { zone <- new_spinlock!(initial(no)) }? Error);
            ZoneLocks::Spin(KVBox::pin_slice(slot, len, flags)?)
        };
        Ok(try_pin_init!(Self {
            geometry,
            table,
            limited: geometry.max_open != 0 || geometry.max_active != 0,
            counts <- new_spinlock!(Counts {
                next_to_close: geometry.nr_conv,
                ..Counts::default()
            }),
            memory,
        }? Error))
    }

    /// The number of the zone that holds `sector`.
    fn zone_no(&self, sector: u64) -> Result<usize> {
        let no = sector >> self.geometry.zone_sectors.trailing_zeros();
        match usize::try_from(no) {
            Ok(no) if no < self.geometry.nr_zones as usize => Ok(no),
            _ => Err(EIO),
        }
    }

    fn is_conventional(&self, no: usize) -> bool {
        no < self.geometry.nr_conv as usize
    }

    /// The range of sequential zones.
    fn sequential(&self) -> core::ops::Range<usize> {
        self.geometry.nr_conv as usize..self.geometry.nr_zones as usize
    }

    /// Adds the zones from the one holding `sector` on to `report`, as C's
    /// `null_report_zones`.
    pub(crate) fn report(&self, sector: u64, report: &mut ZoneReport<'_>) -> Result {
        let Ok(first) = self.zone_no(sector) else {
            return Ok(());
        };
        for no in first..self.geometry.nr_zones as usize {
            if report.is_full() {
                break;
            }
            // A copy: whoever asked may change what it is given.
            let zone = self.table.with(no, |zone| *zone);
            report.report(&zone)?;
        }
        Ok(())
    }

    /// Does the work of `rq` on the zones and the memory, as C's
    /// `null_process_zoned_cmd`. Unlike C, polled requests come here too.
    /// Requests touching sectors `bad_blocks` holds fail as in C.
    pub(crate) fn process<T: Operations>(
        &self,
        rq: &mut Owned<Request<T>>,
        bad_blocks: Option<&Rules>,
    ) -> Result {
        let sector = rq.sector();
        let sectors = u64::from(rq.bytes() >> SECTOR_SHIFT);
        let bad = |sector| Verdict::on(bad_blocks, sector, sectors);
        match rq.command() {
            Command::Write => self.write(rq, sector, sectors, false, bad),
            Command::ZoneAppend => self.write(rq, sector, sectors, true, bad),
            Command::ZoneResetAll => {
                self.reset_all();
                Ok(())
            }
            op @ (Command::ZoneReset
            | Command::ZoneOpen
            | Command::ZoneClose
            | Command::ZoneFinish) => self.manage(op, sector),
            Command::Flush => self.memory.as_ref().map_or(Ok(()), DiskMemory::flush),
            Command::Read => self.read(rq, sector, sectors, bad),
            // Other operations are not advertised.
            _ => Ok(()),
        }
    }

    fn read<T: Operations>(
        &self,
        rq: &Request<T>,
        sector: u64,
        sectors: u64,
        bad: impl FnOnce(u64) -> Verdict,
    ) -> Result {
        let no = self.zone_no(sector)?;
        let conventional = self.is_conventional(no);
        self.table.with(no, |zone| {
            if zone.condition == Cond::Offline {
                return Err(EIO);
            }
            let bad = bad(sector);
            let Some(memory) = &self.memory else {
                return bad.status;
            };
            // Data past the write pointer reads as 0xff.
            let valid = if conventional || sector + sectors <= zone.write_pointer {
                u64::MAX
            } else {
                zone.write_pointer.saturating_sub(sector) << SECTOR_SHIFT
            };
            let (pos, bytes) = (sector << SECTOR_SHIFT, bad.good << SECTOR_SHIFT);
            memory.read_request(rq, pos, bytes, valid)?;
            bad.status
        })
    }

    /// A write or, with `append`, a zone append, as C's `null_zone_write`.
    fn write<T: Operations>(
        &self,
        rq: &mut Owned<Request<T>>,
        sector: u64,
        sectors: u64,
        append: bool,
        bad: impl FnOnce(u64) -> Verdict,
    ) -> Result {
        let no = self.zone_no(sector)?;
        if self.is_conventional(no) {
            if append {
                return Err(EIO);
            }
            let bad = bad(sector);
            self.store(rq, sector, bad.good)?;
            return bad.status;
        }
        self.table.with(no, |zone| {
            let mut sector = sector;
            if append {
                // The block layer emulates appends without a limit.
                if self.geometry.emulates_append() || zone.write_pointer == INVALID_WP {
                    return Err(EIO);
                }
                sector = zone.write_pointer;
                rq.set_append_sector(sector)?;
            }
            // Full, read-only and offline zones fail here too.
            if sector != zone.write_pointer
                || zone.write_pointer + sectors > zone.start + zone.capacity
            {
                return Err(EIO);
            }
            if matches!(zone.condition, Cond::Closed | Cond::Empty) {
                if self.limited {
                    let mut counts = self.counts.lock();
                    self.check_resources(&mut counts, zone)?;
                    if zone.condition == Cond::Closed {
                        counts.closed -= 1;
                    }
                    counts.imp_open += 1;
                }
                zone.condition = Cond::ImplicitOpen;
            }
            // As in C, a write that fails on a bad sector leaves the zone
            // open, with what it wrote before that sector.
            let bad = bad(sector);
            if bad.good == 0 {
                bad.status?;
            }
            self.store(rq, sector, bad.good)?;
            zone.write_pointer += bad.good;
            if zone.write_pointer == zone.start + zone.capacity {
                if self.limited {
                    let mut counts = self.counts.lock();
                    match zone.condition {
                        Cond::ExplicitOpen => counts.exp_open -= 1,
                        Cond::ImplicitOpen => counts.imp_open -= 1,
                        _ => (),
                    }
                }
                zone.condition = Cond::Full;
            }
            bad.status
        })
    }

    /// Writes the first `sectors` sectors of `rq` to the memory, at `sector`.
    fn store<T: Operations>(&self, rq: &Request<T>, sector: u64, sectors: u64) -> Result {
        match &self.memory {
            Some(memory) => {
                memory.write_request(rq, sector << SECTOR_SHIFT, sectors << SECTOR_SHIFT)
            }
            None => Ok(()),
        }
    }

    /// Whether the active limit allows one more active zone.
    fn check_active(&self, counts: &Counts) -> Result {
        let max = self.geometry.max_active;
        if max == 0 || counts.exp_open + counts.imp_open + counts.closed < max {
            Ok(())
        } else {
            Err(EOVERFLOW)
        }
    }

    /// Whether the open limit allows one more open zone, after closing an
    /// implicitly open zone if that is allowed.
    fn check_open(&self, counts: &mut Counts) -> Result {
        let max = self.geometry.max_open;
        if max == 0 || counts.exp_open + counts.imp_open < max {
            return Ok(());
        }
        if counts.imp_open > 0 && self.check_active(counts).is_ok() && self.close_imp_open(counts) {
            return Ok(());
        }
        Err(ETOOMANYREFS)
    }

    /// Whether `zone`, empty or closed, may be opened, as C's
    /// `null_check_zone_resources`.
    fn check_resources(&self, counts: &mut Counts, zone: &Zone) -> Result {
        match zone.condition {
            Cond::Empty => {
                self.check_active(counts)?;
                self.check_open(counts)
            }
            Cond::Closed => self.check_open(counts),
            // Callers open only empty and closed zones; C warns here too.
            _ => {
                kernel::warn_on!(true);
                Err(EIO)
            }
        }
    }

    /// Closes the next implicitly open zone, round-robin from where the last
    /// search stopped, as C's `null_close_imp_open_zone`. Unlike C, which
    /// changes the zone without its lock, a zone whose lock is taken (a
    /// request is writing or reading it, or it is the caller's own) is
    /// passed over. Returns whether a zone was closed.
    fn close_imp_open(&self, counts: &mut Counts) -> bool {
        let seq = self.sequential();
        let mut no = counts.next_to_close as usize;
        for _ in seq.clone() {
            if !seq.contains(&no) {
                no = seq.start;
            }
            let this = no;
            no += 1;
            let closed = self.table.try_with(this, |zone| {
                if zone.condition != Cond::ImplicitOpen {
                    return None;
                }
                zone.condition = if zone.write_pointer == zone.start {
                    Cond::Empty
                } else {
                    Cond::Closed
                };
                Some(zone.condition)
            });
            if let Some(Some(condition)) = closed {
                counts.imp_open -= 1;
                // A zone closed before it was written is empty, not closed.
                if condition == Cond::Closed {
                    counts.closed += 1;
                }
                let next = if no < seq.end { no } else { seq.start };
                // The index fits: it is below the number of zones.
                counts.next_to_close = next as u32;
                return true;
            }
        }
        false
    }

    /// An OPEN, CLOSE, FINISH or RESET of the zone holding `sector`, as C's
    /// `null_zone_mgmt`.
    fn manage(&self, op: Command, sector: u64) -> Result {
        let no = self.zone_no(sector)?;
        if self.is_conventional(no) {
            return Err(EIO);
        }
        self.table.with(no, |zone| {
            if matches!(zone.condition, Cond::ReadOnly | Cond::Offline) {
                return Err(EIO);
            }
            match op {
                Command::ZoneReset => self.reset(zone),
                Command::ZoneOpen => self.open(zone),
                Command::ZoneClose => self.close(zone),
                Command::ZoneFinish => self.finish(zone),
                _ => Err(EOPNOTSUPP),
            }
        })
    }

    fn open(&self, zone: &mut Zone) -> Result {
        match zone.condition {
            // Opening an explicitly open zone is not an error.
            Cond::ExplicitOpen => return Ok(()),
            Cond::Empty | Cond::ImplicitOpen | Cond::Closed => (),
            _ => return Err(EIO),
        }
        if self.limited {
            let mut counts = self.counts.lock();
            match zone.condition {
                Cond::Empty => self.check_resources(&mut counts, zone)?,
                Cond::ImplicitOpen => counts.imp_open -= 1,
                _ => {
                    self.check_resources(&mut counts, zone)?;
                    counts.closed -= 1;
                }
            }
            counts.exp_open += 1;
        }
        zone.condition = Cond::ExplicitOpen;
        Ok(())
    }

    fn close(&self, zone: &mut Zone) -> Result {
        match zone.condition {
            // Closing a closed zone is not an error.
            Cond::Closed => return Ok(()),
            Cond::ImplicitOpen | Cond::ExplicitOpen => (),
            _ => return Err(EIO),
        }
        let written = zone.write_pointer > zone.start;
        if self.limited {
            let mut counts = self.counts.lock();
            if zone.condition == Cond::ImplicitOpen {
                counts.imp_open -= 1;
            } else {
                counts.exp_open -= 1;
            }
            if written {
                counts.closed += 1;
            }
        }
        zone.condition = if written { Cond::Closed } else { Cond::Empty };
        Ok(())
    }

    /// Makes the zone full. Unlike C, which moves the write pointer to the
    /// end of the zone, it goes to the end of the zone's capacity, as when
    /// the zone fills by writes or starts full.
    fn finish(&self, zone: &mut Zone) -> Result {
        if self.limited {
            let mut counts = self.counts.lock();
            match zone.condition {
                // Finishing a full zone is not an error.
                Cond::Full => return Ok(()),
                Cond::Empty => self.check_resources(&mut counts, zone)?,
                Cond::ImplicitOpen => counts.imp_open -= 1,
                Cond::ExplicitOpen => counts.exp_open -= 1,
                Cond::Closed => {
                    self.check_resources(&mut counts, zone)?;
                    counts.closed -= 1;
                }
                _ => return Err(EIO),
            }
        }
        zone.condition = Cond::Full;
        zone.write_pointer = zone.start + zone.capacity;
        Ok(())
    }

    fn reset(&self, zone: &mut Zone) -> Result {
        self.release(zone)?;
        zone.condition = Cond::Empty;
        zone.write_pointer = zone.start;
        self.forget(zone)
    }

    /// Takes `zone` out of the open and closed counts, as a reset does.
    fn release(&self, zone: &Zone) -> Result {
        if self.limited {
            let mut counts = self.counts.lock();
            match zone.condition {
                Cond::ImplicitOpen => counts.imp_open -= 1,
                Cond::ExplicitOpen => counts.exp_open -= 1,
                Cond::Closed => counts.closed -= 1,
                Cond::Empty | Cond::Full => (),
                _ => return Err(EIO),
            }
        }
        Ok(())
    }

    /// Forgets the data of `zone` on a memory-backed disk.
    fn forget(&self, zone: &Zone) -> Result {
        match &self.memory {
            Some(memory) => {
                let bytes = usize::try_from(zone.len << SECTOR_SHIFT)?;
                memory.reset(zone.start << SECTOR_SHIFT, bytes)
            }
            None => Ok(()),
        }
    }

    /// Resets every sequential zone that is not empty, read-only or offline.
    fn reset_all(&self) {
        for no in self.sequential() {
            self.table.with(no, |zone| {
                if !matches!(zone.condition, Cond::Empty | Cond::ReadOnly | Cond::Offline) {
                    // A zone that fails to reset is left as it is.
                    let _ = self.reset(zone);
                }
            });
        }
    }

    /// Makes the zone holding `sector` read-only or offline (`cond`), or
    /// empty again if it already is, as writing a sector to the configfs
    /// attributes `zone_readonly` and `zone_offline` does.
    pub(crate) fn set_condition(&self, sector: u64, cond: Cond) -> Result {
        let Ok(no) = self.zone_no(sector) else {
            pr_err!("Sector out of range\n");
            return Err(EINVAL);
        };
        if self.is_conventional(no) {
            pr_err!("Can not change condition of conventional zones\n");
            return Err(EINVAL);
        }
        self.table.with(no, |zone| {
            if zone.condition == cond {
                zone.condition = Cond::Empty;
                zone.write_pointer = zone.start;
                // The zone is empty even if its memory stays.
                let _ = self.forget(zone);
                return;
            }
            // Unlike C, which finishes the zone first and can leave it in
            // the counts when the limits refuse that, the zone just leaves
            // the counts.
            if !matches!(zone.condition, Cond::ReadOnly | Cond::Offline) {
                let _ = self.release(zone);
            }
            zone.condition = cond;
            zone.write_pointer = INVALID_WP;
        });
        Ok(())
    }
}

#[kunit_tests(rnull_zoned)]
mod tests {
    use super::*;

    /// The settings of a zoned disk of `size` MiB with zones of `zone` MiB,
    /// the others at C's defaults.
    fn settings(size: u64, zone: u64) -> Settings {
        Settings {
            size,
            zoned: true,
            zone_size: zone,
            ..Settings::for_tests()
        }
    }

    /// Zones of 1 MiB on a disk of `size` MiB, with `nr_conv` conventional
    /// zones and the limits given.
    fn zones(size: u64, nr_conv: u32, max_open: u32, max_active: u32) -> Result<Pin<KBox<Zones>>> {
        let mut s = settings(size, 1);
        s.zone_nr_conv = nr_conv;
        s.zone_max_open = max_open;
        s.zone_max_active = max_active;
        let geometry = Geometry::new(&mut s, size << MIB_SECTORS_SHIFT)?;
        KBox::pin_init(
            Zones::new(geometry, size << MIB_SECTORS_SHIFT, None)?,
            GFP_KERNEL,
        )
    }

    fn cond(zones: &Zones, no: usize) -> Cond {
        zones.table.with(no, |zone| zone.condition)
    }

    /// Opens zone `no` as a first write to it would.
    fn open_implicitly(zones: &Zones, no: usize) -> Result {
        zones.table.with(no, |zone| {
            let mut counts = zones.counts.lock();
            zones.check_resources(&mut counts, zone)?;
            counts.imp_open += 1;
            zone.write_pointer += 8;
            zone.condition = Cond::ImplicitOpen;
            Ok(())
        })
    }

    #[test]
    fn geometry_is_checked_and_rewritten_like_null_blk() -> Result {
        let mut s = settings(64, 16);
        s.zone_nr_conv = 9;
        s.zone_max_open = 5;
        s.zone_max_active = 2;
        s.zone_append_max_sectors = 1001;
        s.blocksize = 4096;
        let g = Geometry::new(&mut s, 64 << MIB_SECTORS_SHIFT)?;
        assert_eq!(g.nr_zones, 4);
        assert_eq!((s.zone_nr_conv, s.zone_capacity), (3, 16));
        // One sequential zone left: the active limit goes, the open one too.
        assert_eq!((s.zone_max_active, s.zone_max_open), (0, 0));
        assert_eq!(s.zone_append_max_sectors, 1000);

        let mut s = settings(8, 16);
        assert_eq!(Geometry::new(&mut s, 8 << MIB_SECTORS_SHIFT), Err(EINVAL));
        let mut s = settings(60, 16);
        s.zone_capacity = 8;
        assert_eq!(Geometry::new(&mut s, 60 << MIB_SECTORS_SHIFT), Err(EINVAL));
        s.zone_capacity = 32;
        assert_eq!(Geometry::new(&mut s, 60 << MIB_SECTORS_SHIFT), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn open_limit_closes_implicitly_open_zones_in_turn() -> Result {
        let zones = zones(8, 1, 2, 0)?;
        open_implicitly(&zones, 1)?;
        open_implicitly(&zones, 2)?;
        // A third zone closes the first, then the second.
        open_implicitly(&zones, 3)?;
        assert_eq!(
            (cond(&zones, 1), cond(&zones, 2)),
            (Cond::Closed, Cond::ImplicitOpen)
        );
        open_implicitly(&zones, 4)?;
        assert_eq!(cond(&zones, 2), Cond::Closed);
        assert_eq!(zones.counts.lock().closed, 2);
        // Explicitly open zones are never closed for room.
        zones.table.with(5, |zone| zones.open(zone))?;
        zones.table.with(6, |zone| zones.open(zone))?;
        assert_eq!(
            zones.table.with(7, |zone| zones.open(zone)),
            Err(ETOOMANYREFS)
        );
        Ok(())
    }

    #[test]
    fn active_limit_refuses_with_eoverflow() -> Result {
        let zones = zones(8, 0, 0, 2)?;
        open_implicitly(&zones, 0)?;
        zones.table.with(1, |zone| zones.open(zone))?;
        assert_eq!(open_implicitly(&zones, 2), Err(EOVERFLOW));
        zones.table.with(0, |zone| zones.close(zone))?;
        assert_eq!(open_implicitly(&zones, 2), Err(EOVERFLOW));
        zones.table.with(0, |zone| zones.reset(zone))?;
        open_implicitly(&zones, 2)
    }

    #[test]
    fn finish_moves_the_write_pointer_to_the_capacity() -> Result {
        let mut s = settings(8, 2);
        s.zone_capacity = 1;
        let geometry = Geometry::new(&mut s, 8 << MIB_SECTORS_SHIFT)?;
        let zones = Zones::new(geometry, 8 << MIB_SECTORS_SHIFT, None)?;
        let zones = KBox::pin_init(zones, GFP_KERNEL)?;
        let zone = zones.table.with(1, |zone| {
            zones.finish(zone)?;
            Ok::<_, Error>(*zone)
        })?;
        assert_eq!(zone.condition, Cond::Full);
        assert_eq!(zone.write_pointer, zone.start + (1 << MIB_SECTORS_SHIFT));
        Ok(())
    }

    #[test]
    fn read_only_zones_leave_the_counts() -> Result {
        let zones = zones(8, 0, 0, 2)?;
        open_implicitly(&zones, 0)?;
        zones.set_condition(0, Cond::ReadOnly)?;
        assert_eq!(zones.counts.lock().imp_open, 0);
        assert_eq!(zones.table.with(0, |zone| zone.write_pointer), INVALID_WP);
        // Again: empty.
        zones.set_condition(0, Cond::ReadOnly)?;
        assert_eq!(cond(&zones, 0), Cond::Empty);
        Ok(())
    }
}
