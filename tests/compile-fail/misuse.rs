// SPDX-License-Identifier: GPL-2.0

//! Misuses of the block request API that must not compile.
//!
//! Each `#[cfg(misuse = "...")]` block is one misuse: a way a driver could
//! cause undefined behaviour if the API allowed it (see
//! Documentation/rnull-testing.rst). `scripts/compile-fail.sh` builds this
//! file as an out-of-tree module once without any misuse, which must compile,
//! and once with each misuse, which must fail with the error listed in
//! `tests/compile-fail/misuses`.

use kernel::{
    block::mq::{
        tag_set::Options,
        CompletionBatch,
        Operations,
        Request,
        TagSet,
        TimedOutRequest,
        TimeoutAction, //
    },
    prelude::*,
    sync::Arc,
    time::Delta,
    types::Owned,
};

/// The private data of each request. With the misuse `aligned_data`, it
/// needs more alignment than the block layer gives it.
#[cfg_attr(misuse = "aligned_data", repr(align(64)))]
struct Pdu(u8);

struct Dev;

#[vtable]
impl Operations for Dev {
    type RequestData = Pdu;
    type QueueData = ();
    type HwData = ();

    fn new_request_data() -> impl PinInit<Pdu, Error> {
        Ok(Pdu(0))
    }

    fn init_hctx((): (), _: u32) -> Result {
        Ok(())
    }

    fn queue_rq(
        (): (),
        (): (),
        rq: Owned<Request<Self>>,
        _: bool,
    ) -> Result<(), (Owned<Request<Self>>, Error)> {
        let _ = rq.data().0;

        // Ending a request twice.
        #[cfg(misuse = "end_twice")]
        rq.end_ok();

        // Completing a request, then also handing it back to the block
        // layer by refusing it.
        #[cfg(misuse = "complete_then_refuse")]
        {
            rq.complete();
            return Err((rq, EBUSY));
        }

        // Starting the completion timer of a request twice.
        #[cfg(misuse = "complete_after_twice")]
        rq.complete_after(Delta::from_micros(1));

        // Keeping a second handle to complete the request from elsewhere.
        #[cfg(misuse = "second_handle")]
        let _stashed = rq.clone();

        // Completing a request through a shared reference to its handle.
        #[cfg(misuse = "complete_shared")]
        complete_shared(&rq);

        // Using a request, or its data pages, after ending it.
        #[cfg(misuse = "use_after_end")]
        {
            let segments = rq.read_segments();
            rq.end_ok();
            for segment in segments {
                let _ = segment.zero(0, segment.len());
            }
            return Ok(());
        }

        // Writing into the data of a write request (which may be the
        // kernel's shared zero page, or a page still in use).
        #[cfg(misuse = "write_into_write_segment")]
        for segment in rq.write_segments() {
            let _ = segment.copy_from_slice(0, &[0]);
        }

        // Reading the data of a read request before filling it is allowed;
        // copying it out is not, as for writes the other way round.
        #[cfg(misuse = "read_from_read_segment")]
        for segment in rq.read_segments() {
            let _ = segment.copy_to_slice(0, &mut [0]);
        }

        rq.complete_after(Delta::from_micros(1));
        Ok(())
    }

    fn commit_rqs((): (), (): ()) {}

    fn complete(rq: Owned<Request<Self>>) {
        rq.end_ok();
    }

    fn poll((): (), (): (), _batch: &mut CompletionBatch<'_>) -> u32 {
        0
    }

    fn timeout((): (), rq: TimedOutRequest<'_, Self>) -> TimeoutAction {
        // Reading the data pages of a request that may be ending on another
        // CPU.
        #[cfg(misuse = "timeout_segments")]
        for _ in rq.read_segments() {}

        // Ending a request from the timeout without owning it.
        #[cfg(misuse = "timeout_end")]
        rq.end_ok();

        if let Some(rq) = rq.reclaim() {
            rq.end(Err(ETIMEDOUT));
        }
        TimeoutAction::Done
    }
}

#[cfg(misuse = "complete_shared")]
fn complete_shared(rq: &Owned<Request<Dev>>) {
    rq.complete();
}

/// The module, with the parameter `$param` that takes `$permissions`.
macro_rules! case_module {
    ($param:ident, $permissions:literal) => {
        module! {
            type: Case,
            name: "rnull_misuse",
            authors: ["The rnull developers"],
            description: "Misuses of the block request API that must not compile",
            license: "GPL v2",
            params: {
                $param: u32 {
                    default: 0,
                    description: "A parameter shown in sysfs",
                    permissions: $permissions,
                },
            },
        }
    };
}

#[cfg(not(misuse = "writable_param"))]
case_module!(shown, 0o444);

// Parameters are only set at load time: they cannot be writable in sysfs.
#[cfg(misuse = "writable_param")]
case_module!(writable, 0o644);

struct Case;

impl kernel::Module for Case {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // Makes the tag set of `Dev`, so that its checks are instantiated.
        let _tag_set = Arc::pin_init(TagSet::<Dev>::new_with(Options::new(1, 1)), GFP_KERNEL)?;
        Ok(Case)
    }
}
