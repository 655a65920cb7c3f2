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
mod cache;
mod configfs;
mod disk;
mod faults;
mod queue;
mod storage;
mod throttle;
mod zoned;

use disk::{
    Disk,
    Settings,
    Shared, //
};
use faults::Faults;
use kernel::{
    prelude::*,
    sync::Arc, //
};

module! {
    type: RnullModule,
    name: "rnull",
    authors: ["The rnull developers"],
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
            let shared = Arc::pin_init(Shared::new(defaults.clone(), fault_specs), GFP_KERNEL)?;

            Ok(try_pin_init!(Self {
                disks: create_module_disks(&shared, &defaults, nr_devices)?,
                configfs <- configfs::subsystem(defaults, nr_devices, shared),
            })
            .pin_chain(|_| {
                pr_info!("module loaded\n");
                Ok(())
            }))
        })
    }
}

/// Creates the disks `rnullb0` .. `rnullb<count - 1>`. If one cannot be
/// created, those already made are dropped (removed) and the load fails.
fn create_module_disks(
    shared: &Arc<Shared>,
    defaults: &Settings,
    count: u32,
) -> Result<KVec<Disk>> {
    let mut disks = KVec::with_capacity(count.try_into()?, GFP_KERNEL)?;

    for _ in 0..count {
        let mut settings = defaults.clone();
        let faults = Arc::pin_init(Faults::new(shared.fault_specs()), GFP_KERNEL)?;
        disks.push(
            Disk::new(shared, None, &mut settings, &mut None, None, faults)?,
            GFP_KERNEL,
        )?;
    }
    Ok(disks)
}
