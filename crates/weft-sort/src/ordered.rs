//! The partitioned output phase: every participant merges key ranges of all runs and
//! packs each into a part (heap pages, B-tree leaves, decoded rows); the leader hands the
//! parts to a consumer in key order as soon as they are ready.
//!
//! Ranges are claimed in increasing order from one counter, so early ranges are ready
//! early and the consumer (appending pages to a file, say) overlaps with the packing of
//! later ones; only the last ranges are consumed after every participant is done.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use weft_common::parallel::{CancelToken, WorkerPool};
use weft_common::Result;

use crate::merge::Merger;
use crate::sort::SortedRuns;

/// Who merges the ranges.
pub struct RangeWorkers<'a> {
    pub pool: &'a WorkerPool,
    /// Workers asked for besides the leader.
    pub workers: usize,
    pub leader_participates: bool,
    pub cancel: &'a CancelToken,
}

/// How long the output phase took, and for how much of it not every participant worked.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutputTimes {
    pub wall: Duration,
    pub not_all_busy: Duration,
}

/// Cut `runs` into `ranges` key ranges; every participant merges and packs ranges with
/// `pack`; `consume` receives the parts in range order (returning false stops the output).
/// The times are returned even when the output fails, for the sort's report.
pub fn merge_ranges_in_order<P: Send>(
    runs: &SortedRuns,
    ranges: usize,
    who: &RangeWorkers,
    pack: impl Fn(&mut Merger) -> Result<P> + Sync,
    consume: impl FnMut(P) -> Result<bool> + Send,
) -> (OutputTimes, Result<()>) {
    let began = Instant::now();
    let busy = BusyIntervals::default();
    let outcome = (|| {
        let partitioning = runs.partition(ranges)?;
        let ranges = partitioning.ranges();
        let next_range = AtomicUsize::new(0);
        let parts: Mutex<Vec<Option<P>>> = Mutex::new((0..ranges).map(|_| None).collect());
        let ready = Condvar::new();
        let consumer = Mutex::new((consume, 0usize, false)); // (consume, next in order, stopped)
        // Hand over the parts that are ready, in order; with `wait`, all of them.
        let drain = |wait: bool| -> Result<()> {
            let mut guard = consumer.lock();
            let (consume, next, stopped) = &mut *guard;
            while *next < ranges && !*stopped {
                let part = {
                    let mut parts = parts.lock();
                    loop {
                        match parts[*next].take() {
                            Some(part) => break Some(part),
                            None if wait => {
                                who.cancel.check()?;
                                ready.wait_for(&mut parts, Duration::from_millis(10));
                            }
                            None => break None,
                        }
                    }
                };
                let Some(part) = part else { return Ok(()) };
                *next += 1;
                if !consume(part)? {
                    *stopped = true;
                }
            }
            Ok(())
        };
        who.pool.run(who.workers, who.leader_participates, who.cancel, |participant| {
            let _busy = busy.start();
            loop {
                let range = next_range.fetch_add(1, Ordering::Relaxed);
                if range >= ranges {
                    break;
                }
                let part = pack(&mut runs.merge_range(&partitioning, range)?)?;
                parts.lock()[range] = Some(part);
                ready.notify_all();
                if participant.is_leader {
                    drain(false)?;
                }
            }
            if participant.is_leader {
                drain(true)?;
            }
            Ok(())
        })?;
        // Without a participating leader, everything is handed over now.
        drain(true)
    })();
    let wall = began.elapsed();
    (OutputTimes { wall, not_all_busy: busy.not_all_busy(wall) }, outcome)
}

/// Participants' busy intervals, for the time during which not all of them worked.
#[derive(Default)]
struct BusyIntervals(Mutex<Vec<(Instant, Instant)>>);

struct BusyGuard<'a> {
    intervals: &'a BusyIntervals,
    start: Instant,
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.intervals.0.lock().push((self.start, Instant::now()));
    }
}

impl BusyIntervals {
    fn start(&self) -> BusyGuard<'_> {
        BusyGuard { intervals: self, start: Instant::now() }
    }

    /// `wall` minus the time during which every participant was busy.
    fn not_all_busy(&self, wall: Duration) -> Duration {
        let intervals = self.0.lock();
        let all_busy = match (intervals.iter().map(|i| i.0).max(), intervals.iter().map(|i| i.1).min()) {
            (Some(s), Some(e)) if e > s && intervals.len() > 1 => e - s,
            _ => Duration::ZERO,
        };
        wall.saturating_sub(all_busy)
    }
}
