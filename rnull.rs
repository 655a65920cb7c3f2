// SPDX-License-Identifier: GPL-2.0

//! A Rust port of the C null block driver.
//!
//! C implementation: [`drivers/block/null_blk`](srctree/drivers/block/null_blk)
//!
//! The module creates `nr_devices` disks named `rnullb<N>` from its parameters
//! when it is loaded, and lets users create more through configfs under
//! `/sys/kernel/config/rnull`. The parameters are the defaults of every device
//! created later through configfs.

mod badblocks;
mod configfs;
mod disk;
mod faults;
mod queue;
mod settings;
mod storage;
mod throttle;
mod zoned;

use disk::{
    Device,
    Disk,
    Registry, //
};
use faults::Faults;
use kernel::{
    alloc::num_online_nodes,
    cpu::nr_cpu_ids,
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc, //
};
use settings::Settings;

module! {
    type: RnullModule,
    name: "rnull",
    authors: ["Andreas Hindborg", "The rnull developers"],
    description: "Rust port of the null block driver",
    license: "GPL v2",
    params: {
        nr_devices: u32 {
            default: 1,
            description: "Number of devices to register",
            permissions: 0o444,
        },
        gb: i32 {
            default: 250,
            description: "Size in GB",
            permissions: 0o444,
        },
        bs: i32 {
            default: 512,
            description: "Block size (in bytes)",
            permissions: 0o444,
        },
        max_sectors: i32 {
            default: 0,
            description: "Maximum size of a command (in 512B sectors)",
            permissions: 0o444,
        },
        virt_boundary: bool {
            default: false,
            description: "Require a virtual boundary for the device. Default: False",
            permissions: 0o444,
        },
        irqmode: i32 {
            default: 1,
            description: "IRQ completion handler. 0-none, 1-softirq, 2-timer",
            permissions: 0o444,
        },
        completion_nsec: u64 {
            default: 10000,
            description: "Time in ns to complete a request in hardware. Default: 10,000ns",
            permissions: 0o444,
        },
        home_node: i32 {
            default: -1,
            description: "Home node for the device",
            permissions: 0o444,
        },
        use_per_node_hctx: bool {
            default: false,
            description: "Use per-node allocation for hardware context queues. Default: false",
            permissions: 0o444,
        },
        hw_queue_depth: i32 {
            default: 64,
            description: "Queue depth for each hardware queue. Default: 64",
            permissions: 0o444,
        },
        submit_queues: i32 {
            default: 1,
            description: "Number of submission queues",
            permissions: 0o444,
        },
        poll_queues: i32 {
            default: 1,
            description: "Number of IOPOLL submission queues",
            permissions: 0o444,
        },
        no_sched: i32 {
            default: 0,
            description: "No io scheduler",
            permissions: 0o444,
        },
        blocking: bool {
            default: false,
            description: "Register as a blocking blk-mq driver device",
            permissions: 0o444,
        },
        shared_tags: bool {
            default: false,
            description: "Share tag set between devices for blk-mq",
            permissions: 0o444,
        },
        shared_tag_bitmap: bool {
            default: false,
            description: "Use shared tag bitmap for all submission queues for blk-mq",
            permissions: 0o444,
        },
        memory_backed: bool {
            default: false,
            description: "Create a memory-backed block device. Default: false",
            permissions: 0o444,
        },
        discard: bool {
            default: false,
            description: "Support discard operations (memory-backed devices only). Default: false",
            permissions: 0o444,
        },
        cache_size: u64 {
            default: 0,
            description: "Cache size in MiB for memory-backed device. Default: 0 (none)",
            permissions: 0o444,
        },
        fua: bool {
            default: true,
            description: "Enable/disable FUA support when cache_size is used. Default: true",
            permissions: 0o444,
        },
        rotational: bool {
            default: false,
            description: "Set the rotational feature for the device",
            permissions: 0o444,
        },
        queue_mode: i32 {
            default: 2,
            description: "Block interface to use (0=bio,1=rq,2=multiqueue)",
            permissions: 0o444,
        },
        zoned: bool {
            default: false,
            description: "Host-managed zoned device. Default: false",
            permissions: 0o444,
        },
        zone_size: u64 {
            default: 256,
            description: "Zone size in MiB, a power of two. Default: 256",
            permissions: 0o444,
        },
        zone_capacity: u64 {
            default: 0,
            description: "Writable MiB of a zone, at most its size. Default: 0 (the zone size)",
            permissions: 0o444,
        },
        zone_nr_conv: u32 {
            default: 0,
            description: "Conventional zones. Default: 0",
            permissions: 0o444,
        },
        zone_max_open: u32 {
            default: 0,
            description: "Most zones open at once. Default: 0 (no limit)",
            permissions: 0o444,
        },
        zone_max_active: u32 {
            default: 0,
            description: "Most zones open or closed at once. Default: 0 (no limit)",
            permissions: 0o444,
        },
        zone_append_max_sectors: i32 {
            default: 2147483647,
            description: "Largest zone append in sectors; 0: emulated. Default: INT_MAX",
            permissions: 0o444,
        },
        zone_full: bool {
            default: false,
            description: "Sequential zones start full. Default: false",
            permissions: 0o444,
        },
        mbps: u32 {
            default: 0,
            description: "Limit maximum bandwidth (in MiB/s). Default: 0 (no limit)",
            permissions: 0o444,
        },
        timeout: string<80> {
            default: "",
            description: "Fault injection. timeout=<interval>,<probability>,<space>,<times>",
            permissions: 0o444,
        },
        requeue: string<80> {
            default: "",
            description: "Fault injection. requeue=<interval>,<probability>,<space>,<times>",
            permissions: 0o444,
        },
        init_hctx: string<80> {
            default: "",
            description: "Fault injection to fail hctx init. \
                init_hctx=<interval>,<probability>,<space>,<times>",
            permissions: 0o444,
        },
    },
}

/// The state of the loaded module.
///
/// Fields drop in declaration order: configfs goes away first, so no new
/// device can appear while the module's own disks are being removed.
#[pin_data]
struct RnullModule {
    #[pin]
    configfs: kernel::configfs::Subsystem<configfs::Config>,
    disks: KVec<Disk>,
}

impl kernel::InPlaceModule for RnullModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        pin_init::pin_init_scope(|| {
            let defaults = Settings::from_module_params()?;
            let fault_specs = faults::Specs {
                timeout: module_parameters::timeout.value(),
                requeue: module_parameters::requeue.value(),
                init_hctx: module_parameters::init_hctx.value(),
            };
            fault_specs.check()?;
            let nr_devices = module_parameters::nr_devices.value();
            let registry = Arc::pin_init(Registry::new(defaults.clone(), fault_specs), GFP_KERNEL)?;

            Ok(try_pin_init!(Self {
                disks: create_module_disks(&registry, &defaults, nr_devices)?,
                configfs <- configfs::subsystem(defaults, nr_devices, registry),
            })
            .pin_chain(|_| {
                pr_info!("module loaded\n");
                Ok(())
            }))
        })
    }
}

impl Settings {
    /// Reads the module parameters and applies the checks C's `null_init`
    /// applies to them; the result is the default of every new device.
    pub(crate) fn from_module_params() -> Result<Self> {
        use crate::module_parameters as p;

        let queue_mode = p::queue_mode.value();
        if !(0..=2).contains(&queue_mode) {
            pr_err!("invalid queue_mode {queue_mode}\n");
            return Err(EINVAL);
        }
        if queue_mode == 1 {
            pr_err!("legacy IO path is no longer available\n");
            return Err(EINVAL);
        }

        let irqmode = p::irqmode.value();
        if !(0..=2).contains(&irqmode) {
            pr_err!("invalid irqmode {irqmode}\n");
            return Err(EINVAL);
        }

        // Like C, a negative block size compares as a huge unsigned value.
        let mut bs = p::bs.value();
        if usize::try_from(bs).map_or(true, |bs| bs > PAGE_SIZE) {
            pr_warn!("invalid block size\n");
            pr_warn!("defaults block size to {PAGE_SIZE}\n");
            bs = PAGE_SIZE as i32;
        }

        let Ok(gb) = u64::try_from(p::gb.value()) else {
            pr_err!("invalid gb {}\n", p::gb.value());
            return Err(EINVAL);
        };

        let mut home_node = p::home_node.value();
        let online = u32::try_from(home_node).is_ok_and(|node| node < num_online_nodes());
        if home_node != -1 && !online {
            pr_err!("invalid home_node value\n");
            home_node = -1;
        }

        // C goes on with a negative count as a huge unsigned one, and fails
        // to make the tag set of the first device.
        let Ok(poll_queues) = u32::try_from(p::poll_queues.value()) else {
            pr_err!("invalid poll_queues {}\n", p::poll_queues.value());
            return Err(EINVAL);
        };

        let use_per_node_hctx = p::use_per_node_hctx.value();
        let submit_queues = match u32::try_from(p::submit_queues.value()) {
            _ if use_per_node_hctx => {
                let nodes = num_online_nodes();
                if p::submit_queues.value() != nodes as i32 {
                    pr_warn!("submit_queues param is set to {nodes}.\n");
                }
                nodes
            }
            Ok(0) | Err(_) => 1,
            Ok(n) => n.min(nr_cpu_ids()),
        };

        Ok(Self {
            size: gb * 1024,
            blocksize: bs.try_into()?,
            // As in C, the int parameter is used as an unsigned value.
            max_sectors: p::max_sectors.value() as u32,
            virt_boundary: p::virt_boundary.value(),
            rotational: p::rotational.value(),
            irqmode: irqmode.try_into()?,
            completion_nsec: p::completion_nsec.value(),
            // As in C, the int parameter is used as an unsigned value; blk-mq
            // reduces anything above its maximum.
            hw_queue_depth: p::hw_queue_depth.value() as u32,
            submit_queues,
            poll_queues,
            blocking: p::blocking.value(),
            no_sched: p::no_sched.value() != 0,
            shared_tag_bitmap: p::shared_tag_bitmap.value(),
            shared_tags: p::shared_tags.value(),
            memory_backed: p::memory_backed.value(),
            discard: p::discard.value(),
            cache_size: p::cache_size.value(),
            fua: p::fua.value(),
            // As in C, -1 (no node) becomes the unsigned value that means none.
            home_node: home_node as u32,
            use_per_node_hctx,
            queue_mode: queue_mode.try_into()?,
            index: 0,
            zoned: p::zoned.value(),
            zone_size: p::zone_size.value(),
            zone_capacity: p::zone_capacity.value(),
            zone_nr_conv: p::zone_nr_conv.value(),
            zone_max_open: p::zone_max_open.value(),
            zone_max_active: p::zone_max_active.value(),
            // As in C, the int parameter is used as an unsigned value.
            zone_append_max_sectors: p::zone_append_max_sectors.value() as u32,
            zone_full: p::zone_full.value(),
            // Settings of configfs devices only, as in C.
            badblocks_once: false,
            badblocks_partial_io: false,
            mbps: p::mbps.value(),
        })
    }
}

/// Creates the disks `rnullb0` .. `rnullb<count - 1>`. If one cannot be
/// created, those already made are dropped (removed) and the load fails.
fn create_module_disks(
    registry: &Arc<Registry>,
    defaults: &Settings,
    count: u32,
) -> Result<KVec<Disk>> {
    let mut disks = KVec::with_capacity(count.try_into()?, GFP_KERNEL)?;

    for _ in 0..count {
        let faults = Arc::pin_init(Faults::new(registry.fault_specs()), GFP_KERNEL)?;
        let mut device = Device::new(defaults.clone(), None, faults);
        disks.push(device.power_on(registry, None)?, GFP_KERNEL)?;
    }
    Ok(disks)
}
