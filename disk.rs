// SPDX-License-Identifier: GPL-2.0

//! The block device: its settings and its blk-mq operations.
//!
//! C implementation: [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)

use crate::{
    badblocks::{
        self,
        Rules, //
    },
    faults::{
        self,
        Faults, //
    },
    queue::{
        IrqMode,
        NullBlk,
        QueueData, //
    },
    storage::{
        DiskMemory,
        PageStore, //
    },
    throttle::{
        Throttle,
        MAX_MBPS, //
    },
    zoned::{
        Geometry,
        Zones, //
    },
};
use kernel::{
    alloc::{
        num_online_nodes,
        NumaNode, //
    },
    block::{
        self,
        mq::{
            gen_disk::{
                GenDisk,
                GenDiskBuilder, //
            },
            tag_set::{
                Flag,
                Flags,
                Options, //
            },
            TagSet, //
        },
        zoned::ZoneCondition,
    },
    cpu::nr_cpu_ids,
    fmt,
    id_pool::IdPool,
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
    time::{
        hrtimer::ArcHrTimerHandle,
        Delta, //
    },
};

/// The only queue mode that still exists: blk-mq.
const QUEUE_MODE_MQ: u32 = 2;

/// `home_node` when the device has none: C's `NUMA_NO_NODE` (-1) as the
/// unsigned value the attribute holds.
const NO_HOME_NODE: u32 = u32::MAX;

/// The configuration of one device, as set through module parameters or
/// configfs attributes. Units and types follow C's `struct nullb_device`.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// Capacity in MiB.
    pub(crate) size: u64,
    /// Logical and physical block size in bytes; 0 means 512.
    pub(crate) blocksize: u32,
    /// Largest request in 512-byte sectors; 0 means the block layer's default.
    pub(crate) max_sectors: u32,
    /// Whether segments must not cross page boundaries (a virtual boundary).
    pub(crate) virt_boundary: bool,
    /// Whether the disk reports itself as rotational.
    pub(crate) rotational: bool,
    /// Completion mode: 0 none, 1 softirq, 2 timer (see [`IrqMode`]).
    pub(crate) irqmode: u32,
    /// Delay of timer completions (irqmode 2) in nanoseconds.
    pub(crate) completion_nsec: u64,
    /// Tags per hardware queue.
    pub(crate) hw_queue_depth: u32,
    /// Number of hardware submission queues.
    pub(crate) submit_queues: u32,
    /// Number of hardware queues for polled requests.
    pub(crate) poll_queues: u32,
    /// Whether `queue_rq` may sleep (`BLK_MQ_F_BLOCKING`).
    pub(crate) blocking: bool,
    /// Whether the disk starts without an I/O scheduler.
    pub(crate) no_sched: bool,
    /// Whether the hardware queues of the disk share one set of tags.
    pub(crate) shared_tag_bitmap: bool,
    /// Whether the disk uses the module-wide tag set, shared by all disks
    /// that set this and built from the module parameters only.
    pub(crate) shared_tags: bool,
    /// Whether written data is kept (in memory) and read back.
    pub(crate) memory_backed: bool,
    /// Whether the disk takes discard requests (memory-backed disks only).
    pub(crate) discard: bool,
    /// Size in MiB of the write-back cache of a memory-backed disk; 0 for
    /// none.
    pub(crate) cache_size: u64,
    /// Whether a disk with a cache honours FUA writes.
    pub(crate) fua: bool,
    /// NUMA node to allocate the tag set on, or [`NO_HOME_NODE`].
    pub(crate) home_node: u32,
    /// One hardware queue per online NUMA node, whatever `submit_queues` says.
    pub(crate) use_per_node_hctx: bool,
    /// Block interface: 2 (blk-mq) is the only one left.
    pub(crate) queue_mode: u32,
    /// The index of the disk made at the last power-on (0 before that).
    pub(crate) index: u32,
    /// Whether the disk is zoned (host-managed).
    pub(crate) zoned: bool,
    /// Zone size in MiB, a power of two.
    pub(crate) zone_size: u64,
    /// Writable MiB of a sequential zone; 0 means the zone size.
    pub(crate) zone_capacity: u64,
    /// Number of conventional zones, the first ones.
    pub(crate) zone_nr_conv: u32,
    /// Most zones open at once; 0 for no limit.
    pub(crate) zone_max_open: u32,
    /// Most zones open or closed at once; 0 for no limit.
    pub(crate) zone_max_active: u32,
    /// Largest zone append in sectors; 0 lets the block layer emulate them.
    pub(crate) zone_append_max_sectors: u32,
    /// Whether sequential zones start full.
    pub(crate) zone_full: bool,
    /// Whether a request that hits a bad range makes it good again.
    pub(crate) badblocks_once: bool,
    /// Whether a request that hits a bad sector moves the whole blocks
    /// before it first (memory-backed disks).
    pub(crate) badblocks_partial_io: bool,
    /// Bandwidth limit in MiB/s; 0 for none.
    pub(crate) mbps: u32,
}

impl Settings {
    /// Checks and rewrites the settings before a disk is made from them, as
    /// C's `null_validate_conf` does; `max_poll_queues` is the module's
    /// `poll_queues`. Rewrites are visible on read-back.
    fn validate(&mut self, max_poll_queues: u32) -> Result<IrqMode> {
        match self.queue_mode {
            0 => {
                pr_err!("BIO-based IO path is no longer available, using blk-mq instead.\n");
                self.queue_mode = QUEUE_MODE_MQ;
            }
            1 => {
                pr_err!("legacy IO path is no longer available\n");
                return Err(EINVAL);
            }
            _ => (),
        }
        // Refused for every disk, also for one on the module-wide tag set,
        // which does not use it, so the answer does not depend on the tag set.
        self.numa_node()?;
        self.submit_queues = if self.use_per_node_hctx {
            num_online_nodes()
        } else {
            self.submit_queues.clamp(1, nr_cpu_ids())
        };
        self.poll_queues = self.poll_queues.min(max_poll_queues);
        // Storing data allocates memory, which may sleep; without it, a
        // cache has nothing to cache.
        if self.memory_backed {
            self.blocking = true;
        } else {
            self.cache_size = 0;
        }
        // As C, the cache size in bytes must fit an unsigned long.
        self.cache_size = self.cache_size.min(u64::MAX >> 20);
        self.irqmode = self.irqmode.min(2);
        self.mbps = self.mbps.min(MAX_MBPS);
        if self.zoned && !self.zone_size.is_power_of_two() {
            pr_err!("zone_size must be power-of-two\n");
            return Err(EINVAL);
        }
        Ok(IrqMode::from_raw(self.irqmode))
    }

    /// Turns discard off without memory backing. As C, this happens once the
    /// tag set is there: a power-on that fails before keeps the setting.
    fn check_discard(&mut self) {
        if self.discard && !self.memory_backed {
            pr_info!("discard option is ignored without memory backing\n");
            self.discard = false;
        }
        if self.discard && self.zoned {
            pr_info!("discard option is ignored in zoned mode\n");
            self.discard = false;
        }
    }

    /// The shape of the tag set of a disk made from these settings.
    fn tag_set_options(&self) -> Result<Options> {
        let mut flags = Flags::default();
        for (set, flag) in [
            (self.no_sched, Flag::NoSchedByDefault),
            (self.shared_tag_bitmap, Flag::TagHctxShared),
            // Unlike C, also for the module-wide tag set of memory-backed
            // module parameters, which are not validated like a device's.
            (self.blocking || self.memory_backed, Flag::Blocking),
        ] {
            if set {
                flags |= flag;
            }
        }
        Ok(Options::new(self.submit_queues, self.hw_queue_depth)
            .poll_queues(self.poll_queues)
            .numa_node(self.numa_node()?)
            .flags(flags)
            // As C: requests time out after five seconds.
            .timeout(Delta::from_millis(5000)))
    }

    /// The NUMA node to allocate on. C passes any `home_node` on to the
    /// allocator, which warns about nodes that are not online; rnull refuses
    /// them.
    fn numa_node(&self) -> Result<NumaNode> {
        match self.home_node {
            NO_HOME_NODE => Ok(NumaNode::NO_NODE),
            node if node < num_online_nodes() => NumaNode::new(node.try_into()?),
            node => {
                pr_err!("invalid home_node {node}: not an online node\n");
                Err(EINVAL)
            }
        }
    }

    /// The block size of the disk: as for C, a block size of 0 leaves the
    /// block layer's default.
    fn block_size(&self) -> u32 {
        match self.blocksize {
            0 => block::SECTOR_SIZE,
            size => size,
        }
    }

    /// Capacity in 512-byte sectors. C computes the capacity in bytes,
    /// which wraps around from 16 EiB on; rnull refuses such sizes.
    fn capacity_sectors(&self) -> Result<u64> {
        match self.size.checked_mul(1 << 20) {
            Some(bytes) => Ok(bytes >> block::SECTOR_SHIFT),
            None => {
                pr_err!("size {} MiB is too large\n", self.size);
                Err(EINVAL)
            }
        }
    }
}

/// What all disks share: the pool of indexes and the module-wide tag set.
#[pin_data]
pub(crate) struct Shared {
    /// The indexes of the disks that exist. As with C's `nullb_indexes`,
    /// the module's disks and configfs's draw from one pool, lowest free
    /// first.
    #[pin]
    indexes: Mutex<IdPool>,
    /// The module parameters, which shape the module-wide tag set.
    module_settings: Settings,
    /// The fault-injection parameters, which every device starts from.
    fault_specs: faults::Specs,
    /// The tag set of the disks with `shared_tags`, made with the first.
    #[pin]
    tag_set: Mutex<Option<Arc<TagSet<NullBlk>>>>,
}

impl Shared {
    pub(crate) fn new(module_settings: Settings, fault_specs: faults::Specs) -> impl PinInit<Self> {
        pin_init!(Self {
            indexes <- new_mutex!(IdPool::new()),
            module_settings,
            fault_specs,
            tag_set <- new_mutex!(None),
        })
    }

    /// The fault-injection parameters.
    pub(crate) fn fault_specs(&self) -> &faults::Specs {
        &self.fault_specs
    }

    /// Takes the lowest free index; it returns to the pool when the result
    /// is dropped.
    fn take_index(self: &Arc<Self>) -> Result<Index> {
        let mut pool = self.indexes.lock();
        loop {
            if let Some(id) = pool.find_unused_id(0) {
                let value = id.as_u32();
                id.acquire();
                return Ok(Index {
                    shared: self.clone(),
                    value,
                });
            }
            let request = pool.grow_request().ok_or(ENOSPC)?;
            drop(pool);
            let resizer = request.realloc(GFP_KERNEL)?;
            pool = self.indexes.lock();
            pool.grow(resizer);
        }
    }

    /// The module-wide tag set, made from the module parameters on first
    /// use. It lives as long as the module.
    fn tag_set(&self) -> Result<Arc<TagSet<NullBlk>>> {
        let mut tag_set = self.tag_set.lock();
        if let Some(tag_set) = &*tag_set {
            return Ok(tag_set.clone());
        }
        let options = self.module_settings.tag_set_options()?;
        let new = Arc::pin_init(TagSet::new_with(options), GFP_KERNEL)?;
        *tag_set = Some(new.clone());
        Ok(new)
    }
}

/// An index in use.
struct Index {
    shared: Arc<Shared>,
    value: u32,
}

impl Drop for Index {
    fn drop(&mut self) {
        self.shared.indexes.lock().release_id(self.value as usize);
    }
}

/// A disk that exists, with the index it holds.
pub(crate) struct Disk {
    // Fields drop in order: the disk is gone before its index is free, and
    // before its bandwidth limit, which the requests still waiting need.
    _disk: GenDisk<NullBlk>,
    _throttle: Option<ArcHrTimerHandle<Throttle>>,
    tag_set: Arc<TagSet<NullBlk>>,
    index: Index,
    /// The zones of a zoned disk, also reached from configfs.
    zones: Option<Arc<Zones>>,
}

/// A device as it is while off, and what its disk is made from: its
/// settings, which power-on checks and rewrites as C does, and what
/// survives power cycles: the data of a memory-backed device, its bad
/// sectors and its faults. Each configfs directory owns one, and so does
/// each disk the module makes at load.
pub(crate) struct Device {
    /// The settings, as attributes show them.
    pub(crate) settings: Settings,
    /// The data of a memory-backed device, from its first power-on.
    storage: Option<Arc<PageStore>>,
    /// The bad sectors that requests to the disk fail on.
    bad_blocks: Option<Arc<badblocks::Table>>,
    /// The faults injected into the disk.
    faults: Arc<Faults>,
}

impl Device {
    /// A device that is off, with `settings`, bad sectors from `bad_blocks`
    /// and the faults of `faults`.
    pub(crate) fn new(
        settings: Settings,
        bad_blocks: Option<Arc<badblocks::Table>>,
        faults: Arc<Faults>,
    ) -> Self {
        Self {
            settings,
            storage: None,
            bad_blocks,
            faults,
        }
    }

    /// Makes the device's disk under the lowest free index, named `name`,
    /// or `rnullb<index>` without a name. As in C, the settings are
    /// rewritten where they are adjusted, failed or not, and on success
    /// record the index.
    pub(crate) fn power_on(&mut self, shared: &Arc<Shared>, name: Option<&CStr>) -> Result<Disk> {
        let Self {
            settings,
            storage,
            bad_blocks,
            faults,
        } = self;
        let bad_blocks = bad_blocks.as_ref();
        let faults = faults.clone();
        let index = shared.take_index()?;
        let irqmode = settings.validate(shared.module_settings.poll_queues)?;
        let tag_set = if settings.shared_tags {
            let module = &shared.module_settings;
            if settings.memory_backed && !(module.blocking || module.memory_backed) {
                pr_err!(
                    "a memory-backed disk cannot use the shared tag set, which is not blocking\n"
                );
                return Err(EINVAL);
            }
            shared.tag_set()?
        } else {
            Arc::pin_init(TagSet::new_with(settings.tag_set_options()?), GFP_KERNEL)?
        };
        settings.check_discard();
        let geometry = if settings.zoned {
            let sectors = settings.capacity_sectors()?;
            Some(Geometry::new(settings, sectors)?)
        } else {
            None
        };
        let memory = match storage {
            _ if !settings.memory_backed => None,
            Some(storage) => Some(storage.clone()),
            None => Some(
                storage
                    .insert(Arc::pin_init(PageStore::new(), GFP_KERNEL)?)
                    .clone(),
            ),
        }
        .map(|storage| {
            let block_size = settings.block_size().try_into()?;
            DiskMemory::new(storage, block_size, settings.cache_size << 20)
        })
        .transpose()?;
        // A zoned disk's memory is reached through its zones, under their
        // locks.
        let (memory, zones) = match geometry {
            Some(geometry) => {
                let zones = Zones::new(geometry, settings.capacity_sectors()?, memory)?;
                (None, Some(Arc::pin_init(zones, GFP_KERNEL)?))
            }
            None => (memory, None),
        };
        // Ticking before the disk exists: adding it reads its partition
        // table, which may be throttled already.
        let mut builder = GenDiskBuilder::new();
        let (throttle, ticks) = match settings.mbps {
            0 => (None, None),
            mbps => {
                let (throttle, ticks) = Throttle::start(mbps, builder.queue_handle()?)?;
                (Some(throttle), Some(ticks))
            }
        };
        let queue_data = QueueData {
            irqmode,
            memory,
            zones: zones.clone(),
            completion: Delta::from_nanos(settings.completion_nsec.try_into().unwrap_or(i64::MAX)),
            queue_depth: tag_set.queue_depth(),
            bad_blocks: bad_blocks.map(|table| Rules {
                table: table.clone(),
                once: settings.badblocks_once,
                partial_io: settings.badblocks_partial_io,
                block_sectors: u64::from(settings.block_size() >> block::SECTOR_SHIFT),
            }),
            throttle,
            faults,
        };
        let disk = match name {
            Some(name) => gen_disk(
                builder,
                fmt!("{}", name.to_str()?),
                settings,
                &tag_set,
                queue_data,
                geometry,
            )?,
            None => gen_disk(
                builder,
                fmt!("rnullb{}", index.value),
                settings,
                &tag_set,
                queue_data,
                geometry,
            )?,
        };
        settings.index = index.value;
        Ok(Disk {
            _disk: disk,
            _throttle: ticks,
            tag_set,
            index,
            zones,
        })
    }
}

impl Disk {
    /// Makes the zone holding `sector` read-only or offline (`cond`), or
    /// empty again if it is already, as C's `zone_cond_store`.
    pub(crate) fn set_zone_condition(&self, sector: u64, cond: ZoneCondition) -> Result {
        match &self.zones {
            Some(zones) => zones.set_condition(sector, cond),
            None => {
                pr_err!("rnull device is not zoned\n");
                Err(EINVAL)
            }
        }
    }

    /// Gives the disk, while it is in use, the queue counts of `settings`,
    /// with the rules of C's `nullb_update_nr_hw_queues`.
    pub(crate) fn update_queues(&self, settings: &Settings) -> Result {
        // Other disks use the module-wide tag set too.
        if settings.shared_tags {
            return Err(EINVAL);
        }
        let (submit, poll) = (settings.submit_queues, settings.poll_queues);
        let max_poll = self.index.shared.module_settings.poll_queues;
        if submit == 0 || submit > nr_cpu_ids() || poll > max_poll {
            return Err(EINVAL);
        }
        self.tag_set.update_hw_queues(submit, poll)
    }
}

/// Makes and adds the disk `name` on `tag_set` with `builder`.
fn gen_disk(
    mut builder: GenDiskBuilder,
    name: fmt::Arguments<'_>,
    settings: &Settings,
    tag_set: &Arc<TagSet<NullBlk>>,
    queue_data: QueueData,
    zoned: Option<Geometry>,
) -> Result<GenDisk<NullBlk>> {
    let queue_data = KBox::new(queue_data, GFP_KERNEL)?;

    let block_size = settings.block_size();
    if let Some(geometry) = zoned {
        let how = if geometry.emulates_append() {
            "emulated"
        } else {
            "native"
        };
        pr_info!("{name}: using {how} zone append\n");
        builder = builder.zoned(geometry.limits());
    }
    let disk = builder
        .capacity_sectors(settings.capacity_sectors()?)
        .logical_block_size(block_size)?
        .physical_block_size(block_size)?
        .max_hw_sectors(settings.max_sectors)
        .virt_boundary_mask(if settings.virt_boundary {
            PAGE_SIZE - 1
        } else {
            0
        })
        // Like C: any buffer alignment will do.
        .dma_alignment(1)
        .max_discard_sectors(if settings.discard { u32::MAX >> 9 } else { 0 })
        .write_cache(settings.cache_size > 0)
        .fua(settings.cache_size > 0 && settings.fua)
        .rotational(settings.rotational)
        .build(name, tag_set.clone(), queue_data)?;
    pr_info!("disk {name} created\n");
    Ok(disk)
}

#[kunit_tests(rnull_disk)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            size: 1,
            blocksize: 512,
            max_sectors: 0,
            virt_boundary: false,
            rotational: false,
            irqmode: 1,
            completion_nsec: 10_000,
            hw_queue_depth: 64,
            submit_queues: 1,
            poll_queues: 1,
            blocking: false,
            no_sched: false,
            shared_tag_bitmap: false,
            shared_tags: false,
            memory_backed: false,
            discard: false,
            cache_size: 0,
            fua: true,
            home_node: NO_HOME_NODE,
            use_per_node_hctx: false,
            queue_mode: QUEUE_MODE_MQ,
            index: 0,
            zoned: false,
            zone_size: 256,
            zone_capacity: 0,
            zone_nr_conv: 0,
            zone_max_open: 0,
            zone_max_active: 0,
            zone_append_max_sectors: i32::MAX as u32,
            zone_full: false,
            badblocks_once: false,
            badblocks_partial_io: false,
            mbps: 0,
        }
    }

    #[test]
    fn validate_rewrites_like_null_blk() {
        let mut s = Settings {
            submit_queues: 0,
            queue_mode: 0,
            irqmode: 0,
            ..settings()
        };
        assert_eq!(s.validate(1), Ok(IrqMode::None));
        assert_eq!(s.submit_queues, 1);
        assert_eq!(s.queue_mode, QUEUE_MODE_MQ);

        let mut s = Settings {
            submit_queues: u32::MAX,
            ..settings()
        };
        assert_eq!(s.validate(1), Ok(IrqMode::Soft));
        assert_eq!(s.submit_queues, nr_cpu_ids());

        // Like C, modes above 2 become 2, and poll queues are capped at the
        // module's.
        let mut s = Settings {
            irqmode: 7,
            poll_queues: 3,
            ..settings()
        };
        assert_eq!(s.validate(2), Ok(IrqMode::Timer));
        assert_eq!(s.irqmode, 2);
        assert_eq!(s.poll_queues, 2);

        let mut s = Settings {
            queue_mode: 1,
            ..settings()
        };
        assert_eq!(s.validate(1), Err(EINVAL));
    }

    #[test]
    fn numa_settings() {
        let mut s = Settings {
            use_per_node_hctx: true,
            submit_queues: 5,
            ..settings()
        };
        assert_eq!(s.validate(1), Ok(IrqMode::Soft));
        assert_eq!(s.submit_queues, num_online_nodes());

        assert!(settings().numa_node() == Ok(NumaNode::NO_NODE));
        let s = Settings {
            home_node: 0,
            ..settings()
        };
        assert!(s.numa_node() == Ok(NumaNode::new(0).unwrap()));
        let mut s = Settings {
            home_node: num_online_nodes(),
            shared_tags: true,
            ..settings()
        };
        assert!(s.numa_node() == Err(EINVAL));
        // Also for a disk on the module-wide tag set, which has its own node.
        assert_eq!(s.validate(1), Err(EINVAL));
    }

    #[test]
    fn capacity_in_sectors() {
        let s = Settings {
            size: 3,
            ..settings()
        };
        assert_eq!(s.capacity_sectors(), Ok(3 << 11));

        // The largest size whose bytes fit in 64 bits, and the next.
        let s = Settings {
            size: u64::MAX >> 20,
            ..settings()
        };
        assert_eq!(s.capacity_sectors(), Ok((u64::MAX >> 20) << 11));
        let s = Settings {
            size: (u64::MAX >> 20) + 1,
            ..settings()
        };
        assert_eq!(s.capacity_sectors(), Err(EINVAL));
    }
}
