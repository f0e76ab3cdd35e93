//! The partitioned output phase: every participant merges key ranges of all runs and
//! packs each into a part (heap pages, B-tree leaves, decoded rows); the leader hands the
//! parts to a consumer in key order as soon as they are ready.
//!
//! Ranges are claimed in increasing order from one counter, so early ranges are ready
//! early and the consumer (appending pages to a file, say) overlaps with the packing of
//! later ones; only the last ranges are consumed after every participant is done. The
//! consumer's work is split into an ordered step and an unordered one (number the pages,
//! then write them): the ordered step runs under a lock, the rest in parallel in
//! whichever participant took the part.

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

/// Key ranges per participant of a partitioned output (`merge_ranges_then_complete`):
/// more ranges than participants let whoever is faster take more of them and let early
/// ranges be handed over while later ones are merged. At the end one participant may
/// still be merging a range while the others have none left, so a range's share of the
/// work bounds the output phase's serial tail: with 4 per participant that tail was
/// about 12% of the phase on 2 participants; ranges are cheap (a splitter search in
/// each run, one merger set-up).
pub const RANGES_PER_PARTICIPANT: usize = 16;

/// How long the output phase took, and for how much of it not every participant worked.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutputTimes {
    pub wall: Duration,
    pub not_all_busy: Duration,
}

/// Cut `runs` into `ranges` key ranges; every participant merges and packs ranges with
/// `pack`, which is told where its range starts in the whole output (the number of
/// tuples of the ranges before it: a reader that skips rows knows which to skip). The consumer's work comes in two steps: `consume` takes the parts in range
/// order, one at a time, and does what depends on that order (numbering pages, say),
/// returning the rest of the work (`None` stops the output); `complete` then does that
/// rest in the participant that consumed the part, outside the ordering lock, beside
/// other participants' completions (writing the numbered pages). Any participant hands
/// over the parts that are ready after packing one; the leader also waits for the last
/// ones. The times are returned even when the output fails, for the sort's report.
pub fn merge_ranges_then_complete<P: Send, W>(
    runs: &SortedRuns,
    ranges: usize,
    who: &RangeWorkers,
    pack: impl Fn(u64, &mut Merger) -> Result<P> + Sync,
    consume: impl FnMut(P) -> Result<Option<W>> + Send,
    complete: impl Fn(W) -> Result<()> + Sync,
) -> (OutputTimes, Result<()>) {
    let began = Instant::now();
    let busy = BusyIntervals::default();
    let outcome = (|| {
        let partitioning = runs.partition(ranges)?;
        let ranges = partitioning.ranges();
        let first_rows: Vec<u64> = (0..ranges)
            .scan(0u64, |before, range| {
                let first = *before;
                *before += partitioning.range_len(range);
                Some(first)
            })
            .collect();
        let next_range = AtomicUsize::new(0);
        let parts: Mutex<Vec<Option<P>>> = Mutex::new((0..ranges).map(|_| None).collect());
        let ready = Condvar::new();
        let consumer = Mutex::new((consume, 0usize, false)); // (consume, next in order, stopped)
        // Hand over the parts that are ready, in order, and complete them; with `wait`,
        // all of them. Without it, a participant finding another one handing over goes on.
        let drain = |wait: bool| -> Result<()> {
            loop {
                let mut consumed = Vec::new();
                let waiting_for = {
                    let mut guard = match consumer.try_lock() {
                        Some(guard) => guard,
                        None if wait => consumer.lock(),
                        None => return Ok(()),
                    };
                    let (consume, next, stopped) = &mut *guard;
                    loop {
                        if *next >= ranges || *stopped {
                            break None;
                        }
                        let Some(part) = parts.lock()[*next].take() else { break Some(*next) };
                        *next += 1;
                        match consume(part)? {
                            Some(rest) => consumed.push(rest),
                            None => *stopped = true,
                        }
                    }
                };
                if !consumed.is_empty() {
                    // A leader waiting for a part this one handed over looks again.
                    ready.notify_all();
                }
                for rest in consumed {
                    complete(rest)?;
                }
                let Some(range) = waiting_for.filter(|_| wait) else { return Ok(()) };
                who.cancel.check()?;
                let mut parts = parts.lock();
                if parts[range].is_none() {
                    ready.wait_for(&mut parts, Duration::from_millis(10));
                }
            }
        };
        who.pool.run(who.workers, who.leader_participates, who.cancel, |participant| {
            let _busy = busy.start();
            loop {
                let range = next_range.fetch_add(1, Ordering::Relaxed);
                if range >= ranges {
                    break;
                }
                let part = pack(first_rows[range], &mut runs.merge_range(&partitioning, range)?)?;
                parts.lock()[range] = Some(part);
                ready.notify_all();
                drain(false)?;
            }
            if participant.is_leader {
                drain(true)?;
            }
            Ok(())
        })?;
        // Without a participating leader, everything left is handed over now.
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
