// SPDX-License-Identifier: GPL-2.0

//! The driver's own fault injection, built with
//! `CONFIG_BLK_DEV_RUST_NULL_FAULT_INJECTION`: requests that time out or are
//! requeued, and hardware queues that fail to set up, on purpose. Each device
//! has three fault attributes, set up from the module parameters `timeout`,
//! `requeue` and `init_hctx` and, for configfs devices, changed through the
//! directories `timeout_inject`, `requeue_inject` and
//! `init_hctx_fault_inject`.
//!
//! C implementation: `should_timeout_request`, `should_requeue_request` and
//! `should_init_hctx_fail` in
//! [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)

use kernel::{
    module_param::StringParam,
    prelude::*, //
};

/// The size of the buffers of the string parameters, as in C.
pub(crate) const SPEC_SIZE: usize = 80;

/// The fault-injection parameters: `<interval>,<probability>,<space>,<times>`
/// for each attribute, or empty.
#[derive(Clone, Copy)]
pub(crate) struct Specs {
    pub(crate) timeout: StringParam<SPEC_SIZE>,
    pub(crate) requeue: StringParam<SPEC_SIZE>,
    pub(crate) init_hctx: StringParam<SPEC_SIZE>,
}

impl Specs {
    /// No faults.
    #[cfg(CONFIG_KUNIT)]
    pub(crate) fn none() -> Self {
        let none = StringParam::new("");
        Self {
            timeout: none,
            requeue: none,
            init_hctx: none,
        }
    }

    fn all(&self) -> [&CStr; 3] {
        [
            self.timeout.as_cstr(),
            self.requeue.as_cstr(),
            self.init_hctx.as_cstr(),
        ]
    }
}

#[cfg(CONFIG_BLK_DEV_RUST_NULL_FAULT_INJECTION)]
mod imp {
    use super::Specs;
    use kernel::{
        configfs::DefaultGroup,
        fault_inject::{
            FaultAttr,
            FaultConfig, //
        },
        prelude::*,
    };

    impl Specs {
        /// Checks the specs as C does at load: one that does not parse fails
        /// with `EINVAL` (and `setup_fault_attr` says why).
        pub(crate) fn check(&self) -> Result {
            for spec in self.all() {
                KBox::pin_init(FaultAttr::new(spec, 0), GFP_KERNEL)?;
            }
            Ok(())
        }
    }

    /// The verbosity of an attribute set up from `spec`: as in C, quiet when
    /// set up from a parameter; else the default, which logs each injected
    /// fault with a stack trace.
    fn verbose(spec: &CStr) -> u8 {
        if spec.is_empty() {
            2
        } else {
            0
        }
    }

    /// The fault attributes of a device.
    #[pin_data]
    pub(crate) struct Faults {
        #[pin]
        timeout: FaultConfig,
        #[pin]
        requeue: FaultConfig,
        #[pin]
        init_hctx: FaultConfig,
    }

    impl Faults {
        pub(crate) fn new(specs: &Specs) -> impl PinInit<Self, Error> + '_ {
            let [timeout, requeue, init_hctx] = specs.all();
            try_pin_init!(Self {
                timeout <- FaultConfig::new(c"timeout_inject", timeout, verbose(timeout)),
                requeue <- FaultConfig::new(c"requeue_inject", requeue, verbose(requeue)),
                init_hctx <- FaultConfig::new(
                    c"init_hctx_fault_inject",
                    init_hctx,
                    verbose(init_hctx)
                ),
            })
        }

        /// Whether a request should be lost, so that it times out.
        #[inline]
        pub(crate) fn timeout(&self) -> bool {
            self.timeout.should_fail(1)
        }

        /// Whether a request should be given back to the block layer.
        #[inline]
        pub(crate) fn requeue(&self) -> bool {
            self.requeue.should_fail(1)
        }

        /// Whether setting up a hardware queue should fail.
        pub(crate) fn init_hctx(&self) -> bool {
            self.init_hctx.should_fail(1)
        }

        /// The configfs directories of the attributes, shown in the
        /// directory of a device.
        pub(crate) fn groups(&self) -> [&dyn DefaultGroup; 3] {
            [&self.timeout, &self.requeue, &self.init_hctx]
        }
    }
}

#[cfg(not(CONFIG_BLK_DEV_RUST_NULL_FAULT_INJECTION))]
mod imp {
    use super::Specs;
    use kernel::prelude::*;

    impl Specs {
        /// Without fault injection, a fault that is asked for cannot be
        /// injected: the load fails with `EINVAL` rather than ignore it.
        pub(crate) fn check(&self) -> Result {
            if self.all().iter().any(|spec| !spec.is_empty()) {
                pr_err!(
                    "fault injection is not built in: timeout, requeue, init_hctx must be empty\n"
                );
                return Err(EINVAL);
            }
            Ok(())
        }
    }

    /// No faults.
    pub(crate) struct Faults;

    impl Faults {
        pub(crate) fn new(_specs: &Specs) -> impl PinInit<Self, Error> + '_ {
            Ok::<_, Error>(Faults)
        }

        #[inline(always)]
        pub(crate) fn timeout(&self) -> bool {
            false
        }

        #[inline(always)]
        pub(crate) fn requeue(&self) -> bool {
            false
        }

        pub(crate) fn init_hctx(&self) -> bool {
            false
        }
    }
}

pub(crate) use imp::Faults;
