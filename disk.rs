// SPDX-License-Identifier: GPL-2.0

//! The block device: a device powered off or on as a disk, and what all
//! disks of the module share.
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
        Media,
        NullBlk,
        QueueData, //
    },
    settings::Settings,
    storage::{
        DiskMemory,
        PageStore, //
    },
    throttle::Throttle,
    zoned::{
        Geometry,
        Zones, //
    },
};
use kernel::{
    block::{
        self,
        mq::{
            gen_disk::{
                GenDisk,
                GenDiskBuilder, //
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

/// What all disks of the module share: the pool of indexes and the
/// module-wide tag set.
#[pin_data]
pub(crate) struct Registry {
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

impl Registry {
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
                    registry: self.clone(),
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
    registry: Arc<Registry>,
    value: u32,
}

impl Drop for Index {
    fn drop(&mut self) {
        self.registry.indexes.lock().release_id(self.value as usize);
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
    /// or `rnullb<index>` without a name, in the steps of C's
    /// `null_add_dev`. As in C, the settings are rewritten where they are
    /// adjusted, failed or not, and on success record the index.
    pub(crate) fn power_on(
        &mut self,
        registry: &Arc<Registry>,
        name: Option<&CStr>,
    ) -> Result<Disk> {
        let index = registry.take_index()?;
        let max_poll_queues = registry.module_settings.poll_queues;
        let irqmode = self.settings.validate(max_poll_queues)?;
        let tag_set = self.tag_set(registry)?;
        self.settings.check_discard();
        let (media, geometry) = self.media()?;
        let zones = match &media {
            Media::Zoned(zones) => Some(zones.clone()),
            _ => None,
        };
        // Ticking before the disk exists: adding it reads its partition
        // table, which may be throttled already.
        let mut builder = GenDiskBuilder::new();
        let (throttle, ticks) = match self.settings.mbps {
            0 => (None, None),
            mbps => {
                let (throttle, ticks) = Throttle::start(mbps, builder.queue_handle()?)?;
                (Some(throttle), Some(ticks))
            }
        };
        let queue_data = QueueData {
            irqmode,
            media,
            completion: Delta::from_nanos(
                self.settings.completion_nsec.try_into().unwrap_or(i64::MAX),
            ),
            queue_depth: tag_set.queue_depth(),
            bad_blocks: self.rules(),
            throttle,
            faults: self.faults.clone(),
        };
        let name = match name {
            Some(name) => DiskName::Configfs(name.to_str()?),
            None => DiskName::Module(index.value),
        };
        let disk = gen_disk(
            builder,
            fmt!("{name}"),
            &self.settings,
            &tag_set,
            queue_data,
            geometry,
        )?;
        self.settings.index = index.value;
        Ok(Disk {
            _disk: disk,
            _throttle: ticks,
            tag_set,
            index,
            zones,
        })
    }

    /// The tag set of the disk: the module's, shared with other disks, or
    /// one of its own.
    fn tag_set(&self, registry: &Registry) -> Result<Arc<TagSet<NullBlk>>> {
        let settings = &self.settings;
        if !settings.shared_tags {
            return Arc::pin_init(TagSet::new_with(settings.tag_set_options()?), GFP_KERNEL);
        }
        let module = &registry.module_settings;
        if settings.memory_backed && !(module.blocking || module.memory_backed) {
            pr_err!("a memory-backed disk cannot use the shared tag set, which is not blocking\n");
            return Err(EINVAL);
        }
        registry.tag_set()
    }

    /// What the disk keeps: zones (with memory or not), memory, or nothing;
    /// and the geometry of a zoned disk. The memory of a memory-backed
    /// device is made on its first power-on and kept.
    fn media(&mut self) -> Result<(Media, Option<Geometry>)> {
        let settings = &mut self.settings;
        let geometry = if settings.zoned {
            let sectors = settings.capacity_sectors()?;
            Some(Geometry::new(settings, sectors)?)
        } else {
            None
        };
        let memory = match &mut self.storage {
            _ if !settings.memory_backed => None,
            Some(storage) => Some(storage.clone()),
            storage @ None => Some(
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
        let media = match (geometry, memory) {
            (Some(geometry), memory) => {
                let zones = Zones::new(geometry, settings.capacity_sectors()?, memory)?;
                Media::Zoned(Arc::pin_init(zones, GFP_KERNEL)?)
            }
            (None, Some(memory)) => Media::Memory(memory),
            (None, None) => Media::Null,
        };
        Ok((media, geometry))
    }

    /// What the disk does with requests that touch bad sectors, if the
    /// device has a table of them.
    fn rules(&self) -> Option<Rules> {
        let settings = &self.settings;
        self.bad_blocks.as_ref().map(|table| Rules {
            table: table.clone(),
            once: settings.badblocks_once,
            partial_io: settings.badblocks_partial_io,
            block_sectors: u64::from(settings.block_size() >> block::SECTOR_SHIFT),
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
        let max_poll = self.index.registry.module_settings.poll_queues;
        if submit == 0 || submit > nr_cpu_ids() || poll > max_poll {
            return Err(EINVAL);
        }
        self.tag_set.update_hw_queues(submit, poll)
    }
}

/// The name of a disk: the name of its configfs directory, or `rnullb<N>`
/// for one the module makes at load.
enum DiskName<'a> {
    Configfs(&'a str),
    Module(u32),
}

impl fmt::Display for DiskName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Configfs(name) => f.write_str(name),
            Self::Module(index) => write!(f, "rnullb{index}"),
        }
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
        // Any buffer alignment will do.
        .dma_alignment(1)
        .max_discard_sectors(if settings.discard { u32::MAX >> 9 } else { 0 })
        .write_cache(settings.cache_size > 0)
        .fua(settings.cache_size > 0 && settings.fua)
        .rotational(settings.rotational)
        .build(name, tag_set.clone(), queue_data)?;
    pr_info!("disk {name} created\n");
    Ok(disk)
}
