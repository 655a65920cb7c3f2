// SPDX-License-Identifier: GPL-2.0

//! The request path: the blk-mq operations of an rnull disk, its hardware
//! queues and how requests complete.
//!
//! C implementation: [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)

use kernel::{
    block::{
        mq::{
            self,
            CompletionBatch,
            Operations,
            QueueType,
            RequestBatch,
            TimedOutRequest,
            TimeoutAction, //
        },
        zoned::ZoneReport,
        SECTOR_SHIFT,
    },
    new_spinlock,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
        SpinLock, //
    },
    time::Delta,
    types::Owned,
};

use crate::{
    badblocks::{
        Rules,
        Verdict, //
    },
    faults::Faults,
    settings::IrqMode,
    storage::DiskMemory,
    throttle::Throttle,
    zoned::Zones, //
};

type Request = mq::Request<NullBlk>;

/// The handle of a request the driver holds.
type OwnedRequest = Owned<Request>;

/// How many polled requests [`poll_batches`] takes off the list at once.
const POLL_BATCH: usize = 16;

/// Per-disk data reachable from the request path.
pub(crate) struct QueueData {
    pub(crate) irqmode: IrqMode,
    /// The delay of timer completions.
    pub(crate) completion: Delta,
    /// The depth of the hardware queues: no queue holds more requests.
    pub(crate) queue_depth: u32,
    /// What the disk keeps of the data written to it.
    pub(crate) media: Media,
    /// The bad sectors of a disk made through configfs.
    pub(crate) bad_blocks: Option<Rules>,
    /// The bandwidth limit of the disk, if it has one.
    pub(crate) throttle: Option<Arc<Throttle>>,
    /// The faults the disk injects.
    pub(crate) faults: Arc<Faults>,
}

/// What a disk keeps of the data written to it.
pub(crate) enum Media {
    /// Nothing: reads leave their buffers as they are.
    Null,
    /// The data of a memory-backed disk that is not zoned.
    Memory(DiskMemory),
    /// The zones of a zoned disk, and through them (under their locks) its
    /// data if it is memory-backed.
    Zoned(Arc<Zones>),
}

/// The data of a hardware queue.
#[pin_data]
pub(crate) struct HwQueue {
    /// Polled requests waiting for [`NullBlk::poll`]. Room for a full queue
    /// is reserved up front, so adding a request never allocates.
    #[pin]
    poll_list: SpinLock<KVVec<OwnedRequest>>,
    /// The length of `poll_list`, stored whenever it changes (under its
    /// lock). A poll that reads 0 returns without taking the lock, which
    /// submitters need: pollers spin, and most polls find nothing. Reading
    /// 0 just after a request was added only delays it to the next poll.
    polled: Atomic<usize>,
    /// How many requests the requeue fault injection took: it alternates
    /// between the two ways of requeueing, as C does.
    requeues: Atomic<u32>,
}

/// The data rnull keeps in every request: the status it ends with.
pub(crate) struct RequestStatus {
    /// The errno the request ends with, or 0: set when it times out.
    error: Atomic<i32>,
}

impl RequestStatus {
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
    type RequestData = RequestStatus;
    type QueueData = KBox<QueueData>;
    type HwData = Pin<KBox<HwQueue>>;

    fn new_request_data() -> impl PinInit<RequestStatus, Error> {
        Ok(RequestStatus {
            error: Atomic::new(0),
        })
    }

    fn init_hctx(queue_data: &QueueData, _hctx_idx: u32) -> Result<Pin<KBox<HwQueue>>> {
        // Like C, fails with `EFAULT`; the disk is not made.
        if queue_data.faults.init_hctx() {
            return Err(EFAULT);
        }
        let poll_list = KVVec::with_capacity(queue_data.queue_depth.try_into()?, GFP_KERNEL)?;
        KBox::pin_init(
            pin_init!(HwQueue {
                poll_list <- new_spinlock!(poll_list),
                polled: Atomic::new(0),
                requeues: Atomic::new(0),
            }),
            GFP_KERNEL,
        )
    }

    #[inline(always)]
    fn queue_rq(
        hw_queue: Pin<&HwQueue>,
        queue_data: &QueueData,
        rq: OwnedRequest,
        _is_last: bool,
    ) -> Result<(), (OwnedRequest, Error)> {
        queue_request(hw_queue, queue_data, rq)
    }

    fn queue_rqs(requests: RequestBatch<'_, Self>) {
        // As C, a batch is queued request by request: nothing is shared
        // between the requests of a null device.
        for batched in requests {
            if let Err((rq, _)) =
                queue_request(batched.hw_data, batched.queue_data, batched.request)
            {
                rq.requeue();
            }
        }
    }

    fn commit_rqs(_hw_queue: Pin<&HwQueue>, _queue_data: &QueueData) {}

    #[inline(always)]
    fn complete(rq: OwnedRequest) {
        end_request(rq);
    }

    fn poll(
        hw_queue: Pin<&HwQueue>,
        _queue_data: &QueueData,
        batch: &mut CompletionBatch<'_>,
    ) -> u32 {
        // Only the requests there at the first look: submitters may keep
        // adding more. They are ended oldest first and together with the
        // batch, as C does, outside the lock (ending one may submit more).
        // Their data moved when they were queued.
        if hw_queue.polled.load(Relaxed) == 0 {
            return 0;
        }
        // Most polls find one request: it is taken on its own, without the
        // batch below, whose array costs more than the request
        // (Documentation/rnull-performance.rst).
        let (first, left) = {
            let mut list = hw_queue.poll_list.lock();
            let first = list.remove(0).ok();
            hw_queue.polled.store(list.len(), Relaxed);
            (first, list.len())
        };
        let Some(first) = first else {
            return 0;
        };
        let status = first.data().status();
        first.end_batched(status, batch);
        if left == 0 {
            1
        } else {
            1 + poll_batches(hw_queue, left, batch)
        }
    }

    fn timeout(hw_queue: Pin<&HwQueue>, rq: TimedOutRequest<'_, NullBlk>) -> TimeoutAction {
        // A polled request is taken off the poll list, unless polling has
        // completed it meanwhile.
        let polled = if rq.queue_type() == QueueType::Poll {
            let mut list = hw_queue.poll_list.lock();
            let Some(position) = list.iter().position(|r| rq.is(r)) else {
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
            rq.complete();
        }
        TimeoutAction::Done
    }

    fn report_zones(queue_data: &QueueData, sector: u64, report: &mut ZoneReport<'_>) -> Result {
        match &queue_data.media {
            Media::Zoned(zones) => zones.report(sector, report),
            _ => Err(EOPNOTSUPP),
        }
    }
}

/// Queues `rq`, issued on `hw_queue` of the disk of `queue_data`: the work
/// of C's `null_queue_rq`. A request the disk cannot take now is given back
/// with the reason, for the block layer to issue it again later: `EBUSY`
/// (`BLK_STS_DEV_RESOURCE`) once the disk starts its queues again, `ENOMEM`
/// (`BLK_STS_RESOURCE`) after a short delay.
#[inline(always)]
fn queue_request(
    hw_queue: Pin<&HwQueue>,
    queue_data: &QueueData,
    mut rq: OwnedRequest,
) -> Result<(), (OwnedRequest, Error)> {
    rq.data().error.store(0, Relaxed);
    // The fault injection is consulted for every request, and polled
    // requests are completed by polling even if it fires.
    let fake_timeout = queue_data.faults.timeout() || rq.should_fake_timeout();

    if queue_data.faults.requeue() {
        // Every other one is refused, the others requeued.
        if hw_queue.requeues.fetch_add(1, Relaxed) % 2 == 0 {
            return Err((rq, ENOMEM));
        }
        rq.requeue();
        return Ok(());
    }

    if let Some(throttle) = &queue_data.throttle {
        if !throttle.admit(rq.queue(), rq.bytes()) {
            return Err((rq, EBUSY));
        }
    }

    let polled = rq.queue_type() == QueueType::Poll;
    if fake_timeout && !polled {
        // Dropped without ending: parked, the block layer times it out.
        drop(rq);
        return Ok(());
    }

    // Unlike C, which moves the data of a polled request in `poll`, it moves
    // here: `poll` runs inside an RCU read-side critical section
    // (`bio_poll`), where the page allocations and the cache mutex of a
    // memory-backed disk must not sleep, while the queues of such a disk are
    // blocking, so `queue_rq` may.
    let status = transfer(queue_data, &mut rq);
    rq.data().set_status(status);
    if polled {
        let mut list = hw_queue.poll_list.lock();
        match list.push_within_capacity(rq) {
            Ok(()) => hw_queue.polled.store(list.len(), Relaxed),
            // Cannot happen: a queue holds at most `queue_depth` requests.
            Err(full) => {
                drop(list);
                kernel::warn_on!(true);
                end_request(full.0);
            }
        }
        return Ok(());
    }
    match queue_data.irqmode {
        IrqMode::None => end_request(rq),
        IrqMode::Soft => rq.complete(),
        IrqMode::Timer => rq.complete_after(queue_data.completion),
    }
    Ok(())
}

/// Moves the data of `rq` between its pages and the memory of a
/// memory-backed disk, as C's `null_process_cmd`, and on a zoned disk moves
/// its zones. Other disks keep nothing and leave read buffers as they are.
/// A request that touches a bad sector moves what the disk's rules leave of
/// it, then fails with `EIO`.
#[inline(always)]
fn transfer(queue_data: &QueueData, rq: &mut OwnedRequest) -> Result {
    let bad_blocks = queue_data.bad_blocks.as_ref();
    let sectors = u64::from(rq.bytes() >> SECTOR_SHIFT);
    let verdict = || Verdict::on(bad_blocks, rq.sector(), sectors);
    match &queue_data.media {
        Media::Zoned(zones) => zones.process(rq, bad_blocks),
        Media::Memory(memory) => {
            let verdict = verdict();
            memory.process(rq, verdict.good)?;
            verdict.status
        }
        Media::Null => verdict().status,
    }
}

/// Ends the next `left` requests of a poll list, oldest first, taking them
/// off the list a handful at a time, so that the lock is not taken for each.
/// (Taken from the front of a list of at most `queue_depth` requests, which
/// moves the rest.)
fn poll_batches(hw_queue: Pin<&HwQueue>, mut left: usize, batch: &mut CompletionBatch<'_>) -> u32 {
    let mut completed = 0;
    let mut taken: [Option<OwnedRequest>; POLL_BATCH] = [const { None }; POLL_BATCH];
    while left > 0 {
        let count = {
            let mut list = hw_queue.poll_list.lock();
            left = left.min(list.len());
            let count = left.min(POLL_BATCH);
            for slot in &mut taken[..count] {
                *slot = list.remove(0).ok();
            }
            hw_queue.polled.store(list.len(), Relaxed);
            count
        };
        left -= count;
        for rq in taken[..count].iter_mut().filter_map(Option::take) {
            let status = rq.data().status();
            rq.end_batched(status, batch);
            completed += 1;
        }
    }
    completed
}

/// Ends `rq` with the status recorded in it.
#[inline(always)]
fn end_request(rq: OwnedRequest) {
    let status = rq.data().status();
    rq.end(status);
}
