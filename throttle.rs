// SPDX-License-Identifier: GPL-2.0

//! The bandwidth limit of a disk (`mbps`): a budget of bytes that a timer
//! refills every tick. A request that finds it spent is refused, with the
//! hardware queues stopped until the next tick starts them again.
//!
//! C implementation: `null_handle_throttled` and `nullb_bwtimer_fn` in
//! [`drivers/block/null_blk/main.c`](srctree/drivers/block/null_blk/main.c)

use kernel::{
    block::mq::{
        QueueHandle,
        RequestQueue, //
    },
    impl_has_hr_timer,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        barrier::{
            smp_mb,
            Full, //
        },
        Arc,
        ArcBorrow, //
    },
    time::{
        hrtimer::{
            ArcHrTimerHandle,
            HrTimer,
            HrTimerCallback,
            HrTimerCallbackContext,
            HrTimerPointer,
            HrTimerRestart,
            RelativeMode, //
        },
        Delta,
        Monotonic, //
    },
};

/// The budget is refilled this many times a second, as in C.
const TICKS_PER_SEC: u32 = 50;

/// The highest limit, in MiB/s; C caps `mbps` at it.
pub(crate) const MAX_MBPS: u32 = 40960;

/// The bandwidth limit of a disk.
///
/// Unlike C, whose budget is reset every tick, so that a request larger
/// than a tick's worth never passes (its disk hangs), a request passes
/// while any budget is left and may overdraw it; the debt is paid by the
/// following ticks, so any request size gets the set rate.
#[pin_data]
pub(crate) struct Throttle {
    #[pin]
    timer: HrTimer<Self>,
    /// The bytes the disk may still move before the next tick; negative
    /// when overdrawn.
    budget: Atomic<i64>,
    /// The bytes a tick adds to the budget, and the most it can hold.
    per_tick: i64,
    /// The queue of the disk, whose stopped hardware queues each tick
    /// starts.
    queue: QueueHandle,
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for Throttle {
        mode: RelativeMode<Monotonic>, field: self.timer
    }
}

impl Throttle {
    /// The time between two ticks.
    const TICK: Delta = Delta::from_millis(1000 / TICKS_PER_SEC as i64);

    /// Starts limiting the disk of `queue` to `mbps` MiB/s, which is not 0.
    /// The ticks go on until the handle is dropped, after the disk: while it
    /// is being deleted, the requests still waiting need them.
    pub(crate) fn start(
        mbps: u32,
        queue: QueueHandle,
    ) -> Result<(Arc<Self>, ArcHrTimerHandle<Self>)> {
        // A tick's worth of a MiB, times the rate.
        let per_tick = i64::from((1 << 20) / TICKS_PER_SEC) * i64::from(mbps.min(MAX_MBPS));
        let throttle = Arc::pin_init(
            pin_init!(Self {
                timer <- HrTimer::new(),
                budget: Atomic::new(per_tick),
                per_tick,
                queue,
            }),
            GFP_KERNEL,
        )?;
        let handle = throttle.clone().start(Self::TICK);
        Ok((throttle, handle))
    }

    /// Takes `bytes` from the budget for a request issued on `queue`, if any
    /// budget is left. Otherwise the hardware queues stay stopped until the
    /// next tick, and the request must be given back to the block layer.
    #[inline]
    pub(crate) fn admit(&self, queue: &RequestQueue, bytes: u32) -> bool {
        let mut budget = self.budget.load(Relaxed);
        while budget > 0 {
            match self
                .budget
                .cmpxchg(budget, budget - i64::from(bytes), Relaxed)
            {
                Ok(_) => return true,
                Err(now) => budget = now,
            }
        }
        self.refuse(queue);
        false
    }

    #[cold]
    fn refuse(&self, queue: &RequestQueue) {
        queue.stop_hw_queues();
        // Pairs with the barrier of `run`: either the tick sees the queues
        // stopped and starts them, or this sees the budget it refilled.
        smp_mb(Full);
        if self.budget.load(Relaxed) > 0 {
            queue.start_stopped_hw_queues();
        }
    }
}

impl HrTimerCallback for Throttle {
    type Pointer<'a> = Arc<Self>;

    fn run(this: ArcBorrow<'_, Self>, mut ctx: HrTimerCallbackContext<'_, Self>) -> HrTimerRestart {
        // A debt is paid off; budget left over is not carried.
        let mut budget = this.budget.load(Relaxed);
        loop {
            let refilled = budget.saturating_add(this.per_tick).min(this.per_tick);
            match this.budget.cmpxchg(budget, refilled, Relaxed) {
                Ok(_) => break,
                Err(now) => budget = now,
            }
        }
        smp_mb(Full);
        this.queue.start_stopped_hw_queues();
        ctx.forward_now(Self::TICK);
        HrTimerRestart::Restart
    }
}
