// SPDX-License-Identifier: GPL-2.0

//! The settings of a device, as module parameters and configfs attributes
//! give them, and the checks a disk is made after.
//!
//! C implementation: [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)

use crate::throttle::MAX_MBPS;
use kernel::{
    alloc::{
        num_online_nodes,
        NumaNode, //
    },
    block::{
        self,
        mq::tag_set::{
            Flag,
            Flags,
            Options, //
        },
    },
    cpu::nr_cpu_ids,
    prelude::*,
    time::Delta,
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
    pub(crate) fn validate(&mut self, max_poll_queues: u32) -> Result<IrqMode> {
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
        // The cache size in bytes must fit an unsigned long.
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
    pub(crate) fn check_discard(&mut self) {
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
    pub(crate) fn tag_set_options(&self) -> Result<Options> {
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
            // Requests time out after five seconds.
            .timeout(Delta::from_millis(5000)))
    }

    /// The NUMA node to allocate on. C passes any `home_node` on to the
    /// allocator, which warns about nodes that are not online; rnull refuses
    /// them.
    pub(crate) fn numa_node(&self) -> Result<NumaNode> {
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
    pub(crate) fn block_size(&self) -> u32 {
        match self.blocksize {
            0 => block::SECTOR_SIZE,
            size => size,
        }
    }

    /// Capacity in 512-byte sectors. C computes the capacity in bytes,
    /// which wraps around from 16 EiB on; rnull refuses such sizes.
    pub(crate) fn capacity_sectors(&self) -> Result<u64> {
        match self.size.checked_mul(1 << 20) {
            Some(bytes) => Ok(bytes >> block::SECTOR_SHIFT),
            None => {
                pr_err!("size {} MiB is too large\n", self.size);
                Err(EINVAL)
            }
        }
    }

    /// Settings at C's defaults for a disk of 1 MiB, whatever the module
    /// was loaded with.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn for_tests() -> Self {
        Self {
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
}

/// How a request is completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IrqMode {
    /// Ended inline, in `queue_rq`.
    None,
    /// Completed through `blk_mq_complete_request`, in softirq context.
    Soft,
    /// Completed by a timer in the request, after `completion_nsec`.
    Timer,
}

impl IrqMode {
    /// Maps the numeric `irqmode` of C null_blk, once clamped to 0..=2.
    pub(crate) fn from_raw(value: u32) -> Self {
        match value {
            0 => Self::None,
            1 => Self::Soft,
            _ => Self::Timer,
        }
    }
}

#[kunit_tests(rnull_settings)]
mod tests {
    use super::*;

    #[test]
    fn validate_rewrites_like_null_blk() {
        let mut s = Settings {
            submit_queues: 0,
            queue_mode: 0,
            irqmode: 0,
            ..Settings::for_tests()
        };
        assert_eq!(s.validate(1), Ok(IrqMode::None));
        assert_eq!(s.submit_queues, 1);
        assert_eq!(s.queue_mode, QUEUE_MODE_MQ);

        let mut s = Settings {
            submit_queues: u32::MAX,
            ..Settings::for_tests()
        };
        assert_eq!(s.validate(1), Ok(IrqMode::Soft));
        assert_eq!(s.submit_queues, nr_cpu_ids());

        // Like C, modes above 2 become 2, and poll queues are capped at the
        // module's.
        let mut s = Settings {
            irqmode: 7,
            poll_queues: 3,
            ..Settings::for_tests()
        };
        assert_eq!(s.validate(2), Ok(IrqMode::Timer));
        assert_eq!(s.irqmode, 2);
        assert_eq!(s.poll_queues, 2);

        let mut s = Settings {
            queue_mode: 1,
            ..Settings::for_tests()
        };
        assert_eq!(s.validate(1), Err(EINVAL));
    }

    #[test]
    fn numa_settings() {
        let mut s = Settings {
            use_per_node_hctx: true,
            submit_queues: 5,
            ..Settings::for_tests()
        };
        assert_eq!(s.validate(1), Ok(IrqMode::Soft));
        assert_eq!(s.submit_queues, num_online_nodes());

        assert!(Settings::for_tests().numa_node() == Ok(NumaNode::NO_NODE));
        let s = Settings {
            home_node: 0,
            ..Settings::for_tests()
        };
        assert!(s.numa_node() == Ok(NumaNode::new(0).unwrap()));
        let mut s = Settings {
            home_node: num_online_nodes(),
            shared_tags: true,
            ..Settings::for_tests()
        };
        assert!(s.numa_node() == Err(EINVAL));
        // Also for a disk on the module-wide tag set, which has its own node.
        assert_eq!(s.validate(1), Err(EINVAL));
    }

    #[test]
    fn capacity_in_sectors() {
        let s = Settings {
            size: 3,
            ..Settings::for_tests()
        };
        assert_eq!(s.capacity_sectors(), Ok(3 << 11));

        // The largest size whose bytes fit in 64 bits, and the next.
        let s = Settings {
            size: u64::MAX >> 20,
            ..Settings::for_tests()
        };
        assert_eq!(s.capacity_sectors(), Ok((u64::MAX >> 20) << 11));
        let s = Settings {
            size: (u64::MAX >> 20) + 1,
            ..Settings::for_tests()
        };
        assert_eq!(s.capacity_sectors(), Err(EINVAL));
    }
}
