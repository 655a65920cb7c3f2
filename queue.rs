// SPDX-License-Identifier: GPL-2.0

//! The request path: the blk-mq operations of an rnull disk, its hardware
//! queues and how requests complete.
//!
//! C implementation: [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)

use kernel::{
    block::{
        mq::{
            self,
            Command as Op,
            CompletionBatch,
            Operations,
            QueueType,
            RequestBatch,
            TimeoutAction, //
        },
        SECTOR_SHIFT,
    },
    new_spinlock,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{
            Atomic,
            Relaxed, //
        },
        SpinLock, //
    },
    time::Delta,
};

use crate::storage::Memory;

type Request = mq::Request<NullBlk>;

/// How many polled requests [`NullBlk::poll`] takes off the list at once.
const POLL_BATCH: usize = 16;

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

/// Per-disk data reachable from the request path.
pub(crate) struct QueueData {
    pub(crate) irqmode: IrqMode,
    /// The delay of timer completions.
    pub(crate) completion: Delta,
    /// The depth of the hardware queues: no queue holds more requests.
    pub(crate) queue_depth: u32,
    /// The data of a memory-backed disk.
    pub(crate) memory: Option<Memory>,
}

/// The data of a hardware queue.
#[pin_data]
pub(crate) struct HwQueue {
    /// Polled requests waiting for [`NullBlk::poll`]. Room for a full queue
    /// is reserved up front, so adding a request never allocates.
    #[pin]
    poll_list: SpinLock<KVVec<ARef<Request>>>,
    /// The length of `poll_list`, stored whenever it changes (under its
    /// lock). A poll that reads 0 returns without taking the lock, which
    /// submitters need: pollers spin, and most polls find nothing. Reading
    /// 0 just after a request was added only delays it to the next poll.
    polled: Atomic<usize>,
}

/// The data rnull keeps in every request.
pub(crate) struct Command {
    /// The errno the request ends with, or 0: set when it times out.
    error: Atomic<i32>,
}

impl Command {
    fn status(&self) -> Result {
        match self.error.load(Relaxed) {
            0 => Ok(()),
            errno => Err(Error::from_errno(errno)),
        }
    }

    /// Records the outcome of processing the request, unless an error
    /// (a timeout) was recorded first.
    fn set_status(&self, status: Result) {
        if let Err(e) = status {
            let _ = self.error.cmpxchg(0, e.to_errno(), Relaxed);
        }
    }
}

/// The blk-mq driver of an rnull disk.
pub(crate) struct NullBlk;

#[vtable]
impl Operations for NullBlk {
    type RequestData = Command;
    type QueueData = KBox<QueueData>;
    type HwData = Pin<KBox<HwQueue>>;

    fn new_request_data() -> impl PinInit<Command, Error> {
        Ok(Command {
            error: Atomic::new(0),
        })
    }

    fn init_hctx(queue_data: &QueueData, _hctx_idx: u32) -> Result<Pin<KBox<HwQueue>>> {
        let poll_list = KVVec::with_capacity(queue_data.queue_depth.try_into()?, GFP_KERNEL)?;
        KBox::pin_init(
            pin_init!(HwQueue {
                poll_list <- new_spinlock!(poll_list),
                polled: Atomic::new(0),
            }),
            GFP_KERNEL,
        )
    }

    #[inline(always)]
    fn queue_rq(
        hw_queue: Pin<&HwQueue>,
        queue_data: &QueueData,
        rq: ARef<Request>,
        _is_last: bool,
    ) -> Result {
        queue_request(hw_queue, queue_data, rq);
        Ok(())
    }

    fn queue_rqs(requests: RequestBatch<'_, Self>) {
        // As C, a batch is queued request by request: nothing is shared
        // between the requests of a null device.
        for batched in requests {
            queue_request(batched.hw_data, batched.queue_data, batched.request);
        }
    }

    fn commit_rqs(_hw_queue: Pin<&HwQueue>, _queue_data: &QueueData) {}

    #[inline(always)]
    fn complete(rq: ARef<Request>) {
        end_request(rq);
    }

    fn poll(
        hw_queue: Pin<&HwQueue>,
        queue_data: &QueueData,
        batch: &mut CompletionBatch<'_>,
    ) -> u32 {
        // Only the requests there at the first look: submitters may keep
        // adding more. They are taken off the list a handful at a time, so
        // that the lock is not taken for each, and ended together with the
        // batch, as C does.
        if hw_queue.polled.load(Relaxed) == 0 {
            return 0;
        }
        let mut left = usize::MAX;
        let mut completed = 0;
        let mut taken: [Option<ARef<Request>>; POLL_BATCH] = [const { None }; POLL_BATCH];
        loop {
            let count = {
                let mut list = hw_queue.poll_list.lock();
                left = left.min(list.len());
                let count = left.min(POLL_BATCH);
                for slot in &mut taken[..count] {
                    *slot = list.pop();
                }
                hw_queue.polled.store(list.len(), Relaxed);
                count
            };
            left -= count;
            for rq in taken[..count].iter_mut().filter_map(Option::take) {
                rq.data().set_status(transfer(queue_data, &rq));
                let status = rq.data().status();
                if mq::Request::end_batched(rq, status, batch).is_err() {
                    pr_err!("request still referenced at completion\n");
                }
                completed += 1;
            }
            if left == 0 {
                break;
            }
        }
        completed
    }

    fn timeout(hw_queue: Pin<&HwQueue>, rq: &Request) -> TimeoutAction {
        // A polled request is taken off the poll list, unless polling has
        // completed it meanwhile.
        let polled = if rq.queue_type() == QueueType::Poll {
            let mut list = hw_queue.poll_list.lock();
            let Some(position) = list.iter().position(|r| core::ptr::eq(&**r, rq)) else {
                return TimeoutAction::Done;
            };
            let polled = list.remove(position).ok();
            hw_queue.polled.store(list.len(), Relaxed);
            polled
        } else {
            None
        };

        pr_info!("request timed out\n");
        rq.data().error.store(ETIMEDOUT.to_errno(), Relaxed);

        // A request the driver dropped (a faked timeout) is completed here.
        // Any other is still held by its submitter or its timer, which ends
        // it with the error stored above.
        if let Some(rq) = polled.or_else(|| rq.reclaim()) {
            mq::Request::complete(rq);
        }
        TimeoutAction::Done
    }
}

/// Queues `rq`, issued on `hw_queue` of the disk of `queue_data`: the work
/// of C's `null_queue_rq`, which cannot fail for a null device.
#[inline(always)]
fn queue_request(hw_queue: Pin<&HwQueue>, queue_data: &QueueData, rq: ARef<Request>) {
    rq.data().error.store(0, Relaxed);
    // Like C, the fault injection is consulted for every request, and
    // polled requests are completed by polling even if it fires.
    let fake_timeout = rq.should_fake_timeout();

    if rq.queue_type() == QueueType::Poll {
        let mut list = hw_queue.poll_list.lock();
        match list.push_within_capacity(rq) {
            Ok(()) => hw_queue.polled.store(list.len(), Relaxed),
            // Cannot happen: a queue holds at most `queue_depth` requests.
            Err(full) => {
                drop(list);
                end_request(full.0);
            }
        }
        return;
    }
    if fake_timeout {
        // Dropped without ending: the block layer times it out.
        return;
    }

    rq.data().set_status(transfer(queue_data, &rq));
    match queue_data.irqmode {
        IrqMode::None => end_request(rq),
        IrqMode::Soft => mq::Request::complete(rq),
        IrqMode::Timer => mq::Request::complete_after(rq, queue_data.completion),
    }
}

/// Moves the data of `rq` between its pages and the memory of a
/// memory-backed disk, as C's `null_handle_memory_backed`. Other disks keep
/// nothing and leave read buffers as they are.
#[inline(always)]
fn transfer(queue_data: &QueueData, rq: &Request) -> Result {
    match &queue_data.memory {
        Some(memory) => transfer_memory(memory, rq),
        None => Ok(()),
    }
}

/// The part of [`transfer`] for a memory-backed disk.
fn transfer_memory(memory: &Memory, rq: &Request) -> Result {
    let pos = rq.sector() << SECTOR_SHIFT;
    match rq.command() {
        Op::Read => memory.read(rq.segments(), pos)?,
        Op::Write => memory.write(rq.segments(), pos, rq.is_fua())?,
        Op::Discard => memory.discard(pos, rq.bytes().try_into()?)?,
        // As C, a FLUSH that fails for want of memory ends with -ENOMEM.
        Op::Flush => memory.flush().map_err(|_| ENOMEM)?,
        // Other operations are not advertised.
        _ => (),
    }
    Ok(())
}

/// Ends `rq` with the status recorded in it.
#[inline(always)]
fn end_request(rq: ARef<Request>) {
    let status = rq.data().status();
    // The driver holds one reference to a request at a time, so the one it
    // ends is unique and `end` cannot fail; there is nothing else that
    // could end the request if it did.
    if mq::Request::end(rq, status).is_err() {
        pr_err!("request still referenced at completion\n");
    }
}
