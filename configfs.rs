// SPDX-License-Identifier: GPL-2.0

//! The configfs interface: `/sys/kernel/config/rnull`.
//!
//! C implementation: [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)
//!
//! Every directory made under `rnull` is a device, configured through the
//! attribute files in it and brought up by writing 1 to `power`. The device
//! attributes are declared once, in the table passed to
//! [`device_attributes!`]; `features` lists them.

use crate::{
    badblocks,
    disk::{
        Device,
        Disk,
        Registry, //
    },
    faults::Faults,
    settings::Settings,
};
use kernel::{
    block::zoned::ZoneCondition,
    configfs::{
        self,
        AttributeOperations, //
    },
    configfs_attrs,
    fmt::{
        self,
        Write as _, //
    },
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    str::{
        kstrtobool_bytes,
        kstrtouint_bytes,
        kstrtoull_bytes,
        CString,
        Formatter, //
    },
    sync::{
        Arc,
        ArcBorrow,
        Mutex, //
    },
};

/// Creates the `rnull` configfs subsystem. New devices start from
/// `defaults` and share `registry` with the module's disks; `module_disks`
/// disks named `rnullb<N>` already exist.
pub(crate) fn subsystem(
    defaults: Settings,
    module_disks: u32,
    registry: Arc<Registry>,
) -> impl PinInit<configfs::Subsystem<Config>, Error> {
    let item_type = configfs_attrs! {
        container: configfs::Subsystem<Config>,
        data: Config,
        child: DeviceConfig,
        attributes: [
            features: 0,
        ],
    };

    configfs::Subsystem::new(
        c"rnull",
        item_type,
        try_pin_init!(Config {
            defaults,
            module_disks,
            registry,
        }),
    )
}

/// The data of the subsystem directory.
#[pin_data]
pub(crate) struct Config {
    /// The settings a new device starts with: the module parameters.
    defaults: Settings,
    /// How many `rnullb<N>` disks the module created at load.
    module_disks: u32,
    /// The disk indexes and the module-wide tag set.
    registry: Arc<Registry>,
}

impl Config {
    /// Whether `name` is the name of one of the module's own disks.
    fn is_module_disk(&self, name: &CStr) -> bool {
        let Some(digits) = name.to_bytes().strip_prefix(b"rnullb") else {
            return false;
        };
        // Only the names the module writes: decimal, no leading zero.
        let canonical = digits.iter().all(u8::is_ascii_digit)
            && (digits == b"0" || digits.first().is_some_and(|&d| d != b'0'));
        canonical && kstrtouint_bytes(digits).is_ok_and(|index| index < self.module_disks)
    }
}

#[vtable]
impl AttributeOperations<0> for Config {
    type Data = Config;

    fn show(_this: &Config, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        let mut writer = Formatter::new(page);
        for (i, name) in DEVICE_ATTRIBUTES.iter().enumerate() {
            let separator = if i + 1 == DEVICE_ATTRIBUTES.len() {
                "\n"
            } else {
                ","
            };
            writer.write_fmt(fmt!("{name}{separator}"))?;
        }
        Ok(writer.bytes_written())
    }
}

/// Whether `names` are in strictly increasing byte order: alphabetical, and
/// each once.
const fn strictly_sorted(names: &[&str]) -> bool {
    let mut i = 1;
    while i < names.len() {
        let (a, b) = (names[i - 1].as_bytes(), names[i].as_bytes());
        let mut j = 0;
        while j < a.len() && j < b.len() && a[j] == b[j] {
            j += 1;
        }
        let less = if j < a.len() && j < b.len() {
            a[j] < b[j]
        } else {
            a.len() < b.len()
        };
        if !less {
            return false;
        }
        i += 1;
    }
    true
}

#[vtable]
impl configfs::GroupOperations for Config {
    type Child = DeviceConfig;

    fn make_group(
        &self,
        name: &CStr,
    ) -> Result<impl PinInit<configfs::Group<DeviceConfig>, Error>> {
        // A directory may not take the name of a disk that exists.
        if self.is_module_disk(name) {
            return Err(EEXIST);
        }

        let bad_blocks = Arc::pin_init(badblocks::Table::new(), GFP_KERNEL)?;
        let faults = Arc::pin_init(Faults::new(self.registry.fault_specs()), GFP_KERNEL)?;
        let off = Device::new(
            self.defaults.clone(),
            Some(bad_blocks.clone()),
            faults.clone(),
        );
        let device = try_pin_init!(DeviceConfig {
            registry: self.registry.clone(),
            state <- new_mutex!(DeviceState {
                device: off,
                name: name.try_into()?,
                disk: None,
            }),
            bad_blocks,
            faults,
        });
        // The fault attributes show as subdirectories of the device's.
        #[cfg(CONFIG_BLK_DEV_RUST_NULL_FAULT_INJECTION)]
        let group = configfs::Group::new_with_default_groups(
            name.try_into()?,
            device_item_type(),
            device,
            |device| device.faults.groups(),
        );
        #[cfg(not(CONFIG_BLK_DEV_RUST_NULL_FAULT_INJECTION))]
        let group = configfs::Group::new(name.try_into()?, device_item_type(), device);
        Ok(group)
    }

    fn drop_item(&self, child: ArcBorrow<'_, configfs::Group<DeviceConfig>>) {
        // rmdir powers the device off.
        child.state.lock().disk = None;
    }
}

/// One device directory.
#[pin_data]
pub(crate) struct DeviceConfig {
    registry: Arc<Registry>,
    /// The bad sectors, live while the device is on, kept while it is off.
    bad_blocks: Arc<badblocks::Table>,
    /// The fault attributes, kept over power cycles, as in C.
    faults: Arc<Faults>,
    #[pin]
    state: Mutex<DeviceState>,
}

/// The state of a device directory, under its mutex.
struct DeviceState {
    /// The settings and what survives power cycles.
    device: Device,
    name: CString,
    /// The disk, while powered on.
    disk: Option<Disk>,
}

impl DeviceConfig {
    /// Parses `page` into the setting `field` selects, which can only change
    /// while the device is off. Like C, a malformed value is refused before
    /// the power state is looked at.
    fn store_setting<T: AttributeValue>(
        &self,
        page: &[u8],
        field: impl FnOnce(&mut Settings) -> &mut T,
    ) -> Result {
        let value = T::parse(page)?;
        let mut state = self.state.lock();
        if state.disk.is_some() {
            return Err(EBUSY);
        }
        *field(&mut state.device.settings) = value;
        Ok(())
    }

    /// Makes the zone holding the sector in `page` read-only or offline
    /// (`cond`), or empty again if it is already, while the device is on.
    fn store_zone_condition(&self, page: &[u8], cond: ZoneCondition) -> Result {
        let state = self.state.lock();
        if !state.device.settings.zoned {
            pr_err!("rnull device is not zoned\n");
            return Err(EINVAL);
        }
        let Some(disk) = &state.disk else {
            pr_err!("rnull device is not yet powered\n");
            return Err(EINVAL);
        };
        disk.set_zone_condition(kstrtoull_bytes(page)?, cond)
    }

    fn store_zone_readonly(&self, page: &[u8]) -> Result {
        self.store_zone_condition(page, ZoneCondition::ReadOnly)
    }

    fn store_zone_offline(&self, page: &[u8]) -> Result {
        self.store_zone_condition(page, ZoneCondition::Offline)
    }

    fn show_badblocks(&self, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        Ok(self.bad_blocks.show(page))
    }

    fn store_badblocks(&self, page: &[u8]) -> Result {
        self.bad_blocks.store(page)
    }

    fn show_power(&self, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
        show_value(page, self.state.lock().disk.is_some())
    }

    /// Powers the device on or off; writing the current state does nothing.
    /// A failed power-on leaves the device off and returns the error.
    fn store_power(&self, page: &[u8]) -> Result {
        let power = kstrtobool_bytes(page)?;
        let mut guard = self.state.lock();
        let state = &mut *guard;

        match (state.disk.is_some(), power) {
            (false, true) => {
                state.disk = Some(state.device.power_on(&self.registry, Some(&state.name))?);
            }
            (true, false) => state.disk = None,
            _ => (),
        }
        Ok(())
    }

    /// Sets the queue count `field` selects. While the device is on, the
    /// disk's queues change at once; if they cannot, the count is kept.
    fn store_queue_count(&self, page: &[u8], field: impl Fn(&mut Settings) -> &mut u32) -> Result {
        let value = u32::parse(page)?;
        let mut guard = self.state.lock();
        let state = &mut *guard;
        if let Some(disk) = &state.disk {
            let mut wanted = state.device.settings.clone();
            *field(&mut wanted) = value;
            disk.update_queues(&wanted)?;
        }
        *field(&mut state.device.settings) = value;
        Ok(())
    }
}

/// A value of a device attribute: how it is parsed and shown, as C's
/// `nullb_device_{uint,ulong,bool}_attr_{store,show}`.
trait AttributeValue: Copy {
    fn parse(page: &[u8]) -> Result<Self>;
    fn write(self, writer: &mut Formatter<'_>) -> fmt::Result;
}

impl AttributeValue for u32 {
    fn parse(page: &[u8]) -> Result<Self> {
        kstrtouint_bytes(page)
    }

    fn write(self, writer: &mut Formatter<'_>) -> fmt::Result {
        writer.write_fmt(fmt!("{self}\n"))
    }
}

impl AttributeValue for u64 {
    fn parse(page: &[u8]) -> Result<Self> {
        kstrtoull_bytes(page)
    }

    fn write(self, writer: &mut Formatter<'_>) -> fmt::Result {
        writer.write_fmt(fmt!("{self}\n"))
    }
}

impl AttributeValue for bool {
    fn parse(page: &[u8]) -> Result<Self> {
        kstrtobool_bytes(page)
    }

    fn write(self, writer: &mut Formatter<'_>) -> fmt::Result {
        u32::from(self).write(writer)
    }
}

fn show_value(page: &mut [u8; PAGE_SIZE], value: impl AttributeValue) -> Result<usize> {
    let mut writer = Formatter::new(page);
    value.write(&mut writer)?;
    Ok(writer.bytes_written())
}

/// Declares the device attributes. Each row is `name: id => kind`:
/// - `setting`: the [`Settings`] field of that name, shown and parsed by its
///   [`AttributeValue`] type, writable only while the device is off;
/// - `read_only`: the [`Settings`] field of that name, shown only;
/// - `live`: a queue count, shown like a setting and changed through
///   [`DeviceConfig::store_queue_count`], also while the device is on;
/// - `custom(show, store)`: [`DeviceConfig`] methods do the work;
/// - `write_only(store)`: a [`DeviceConfig`] method takes what is written;
///   there is nothing to read.
///
/// The row is the only place an attribute is declared: the configfs item
/// type and the `features` list are generated from the table. Rows are in
/// alphabetical order, which the build checks, so that `features` lists
/// them as they are; the ids only need to differ.
macro_rules! device_attributes {
    ($($name:ident: $id:literal => $kind:ident $(($($method:ident),+))?),* $(,)?) => {
        $(device_attributes!(@impl $name $id $kind $(($($method),+))?);)*

        /// The names of all device attributes, in the order of the rows.
        const DEVICE_ATTRIBUTES: [&str; [$($id),*].len()] = [$(stringify!($name)),*];

        // `features` lists the rows as they are: in alphabetical order.
        const _: () = assert!(
            strictly_sorted(&DEVICE_ATTRIBUTES),
            "device attribute rows must be in alphabetical order, each once"
        );

        fn device_item_type(
        ) -> &'static configfs::ItemType<configfs::Group<DeviceConfig>, DeviceConfig> {
            configfs_attrs! {
                container: configfs::Group<DeviceConfig>,
                data: DeviceConfig,
                attributes: [$($name: $id),*],
            }
        }
    };
    (@impl $name:ident $id:literal setting) => {
        device_attributes!(@stored $name $id store_setting);
    };
    (@impl $name:ident $id:literal live) => {
        device_attributes!(@stored $name $id store_queue_count);
    };
    (@stored $name:ident $id:literal $store:ident) => {
        #[vtable]
        impl AttributeOperations<$id> for DeviceConfig {
            type Data = DeviceConfig;

            fn show(this: &DeviceConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
                show_value(page, this.state.lock().device.settings.$name)
            }

            fn store(this: &DeviceConfig, page: &[u8]) -> Result {
                this.$store(page, |settings| &mut settings.$name)
            }
        }
    };
    (@impl $name:ident $id:literal read_only) => {
        #[vtable]
        impl AttributeOperations<$id> for DeviceConfig {
            type Data = DeviceConfig;

            fn show(this: &DeviceConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
                show_value(page, this.state.lock().device.settings.$name)
            }
        }
    };
    (@impl $name:ident $id:literal write_only($store:ident)) => {
        #[vtable]
        impl AttributeOperations<$id> for DeviceConfig {
            type Data = DeviceConfig;

            fn store(this: &DeviceConfig, page: &[u8]) -> Result {
                this.$store(page)
            }
        }
    };
    (@impl $name:ident $id:literal custom($show:ident, $store:ident)) => {
        #[vtable]
        impl AttributeOperations<$id> for DeviceConfig {
            type Data = DeviceConfig;

            fn show(this: &DeviceConfig, page: &mut [u8; PAGE_SIZE]) -> Result<usize> {
                this.$show(page)
            }

            fn store(this: &DeviceConfig, page: &[u8]) -> Result {
                this.$store(page)
            }
        }
    };
}

device_attributes! {
    badblocks: 0 => custom(show_badblocks, store_badblocks),
    badblocks_once: 1 => setting,
    badblocks_partial_io: 2 => setting,
    blocking: 3 => setting,
    blocksize: 4 => setting,
    cache_size: 5 => setting,
    completion_nsec: 6 => setting,
    discard: 7 => setting,
    fua: 8 => setting,
    home_node: 9 => setting,
    hw_queue_depth: 10 => setting,
    index: 11 => read_only,
    irqmode: 12 => setting,
    max_sectors: 13 => setting,
    mbps: 14 => setting,
    memory_backed: 15 => setting,
    no_sched: 16 => setting,
    poll_queues: 17 => live,
    power: 18 => custom(show_power, store_power),
    queue_mode: 19 => setting,
    rotational: 20 => setting,
    shared_tag_bitmap: 21 => setting,
    shared_tags: 22 => setting,
    size: 23 => setting,
    submit_queues: 24 => live,
    use_per_node_hctx: 25 => setting,
    virt_boundary: 26 => setting,
    zone_append_max_sectors: 27 => setting,
    zone_capacity: 28 => setting,
    zone_full: 29 => setting,
    zone_max_active: 30 => setting,
    zone_max_open: 31 => setting,
    zone_nr_conv: 32 => setting,
    zone_offline: 33 => write_only(store_zone_offline),
    zone_readonly: 34 => write_only(store_zone_readonly),
    zone_size: 35 => setting,
    zoned: 36 => setting,
}

#[kunit_tests(rnull_configfs)]
mod tests {
    use super::*;

    #[test]
    fn module_disk_names() -> Result {
        let config = Config {
            defaults: Settings::from_module_params()?,
            module_disks: 2,
            registry: Arc::pin_init(
                Registry::new(
                    Settings::from_module_params()?,
                    crate::faults::Specs::none(),
                ),
                GFP_KERNEL,
            )?,
        };
        assert!(config.is_module_disk(c"rnullb0"));
        assert!(config.is_module_disk(c"rnullb1"));
        assert!(!config.is_module_disk(c"rnullb2"));
        assert!(!config.is_module_disk(c"rnullb"));
        assert!(!config.is_module_disk(c"rnullb01"));
        assert!(!config.is_module_disk(c"rnullb+1"));
        assert!(!config.is_module_disk(c"rnullb0x1"));
        assert!(!config.is_module_disk(c"nullb0"));
        assert!(!config.is_module_disk(c"disk"));
        Ok(())
    }

    #[test]
    fn attributes_are_in_alphabetical_order() {
        assert!(strictly_sorted(&DEVICE_ATTRIBUTES));
        assert!(DEVICE_ATTRIBUTES.contains(&"power"));
        assert!(strictly_sorted(&["a", "ab", "b", "b_c", "bc"]));
        assert!(!strictly_sorted(&["ab", "a"]));
        assert!(!strictly_sorted(&["a", "a"]));
    }
}
