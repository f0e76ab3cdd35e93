//! Worker slots: how many threads a parallel statement may use, and running it on them.
//!
//! # What
//!
//! A [`WorkerPool`] owns `max_worker_processes` *slots*. [`WorkerPool::run`] reserves up to
//! the requested number of free slots in one atomic step (it gets those that are free —
//! possibly none), starts one scoped thread per slot, runs the participant closure on each
//! and, unless told otherwise, on the calling thread as the leader, joins them all, releases
//! the slots and reports [`ParallelRun`] figures for EXPLAIN ANALYZE.
//!
//! # Why slots and scoped threads, not a pool of persistent threads
//!
//! Participants borrow the statement's shared state — the plan, the shared hash table, the
//! barrier — straight from the leader's stack. `std::thread::scope` makes that borrow safe
//! (the scope joins before the borrowed data goes away) without `Arc`-wrapping every shared
//! structure or `'static` bounds on the closure. A persistent thread pool (rayon, a channel
//! of boxed jobs) would need `'static` jobs or `unsafe` lifetime erasure, and this crate
//! forbids `unsafe`. What a persistent pool would save — thread creation, tens of
//! microseconds — is noise next to a parallel scan or sort. So the pool keeps only the count
//! of slots in use, which is also exactly PostgreSQL's `max_worker_processes` limit: a
//! statement that finds all slots taken runs with fewer workers (or none), never waits.
//!
//! # Rules
//!
//! 1. Slots are reserved with one compare-and-swap, so concurrent statements never exceed
//!    `max_workers` together; they are released even if a participant panics.
//! 2. If no worker could be launched the leader runs the closure even when
//!    `leader_participates` is false, so the statement always finishes.
//! 3. Participant indexes are `0..participants`; the leader, when it participates, is 0.
//!    Workers learn the final participant count before they start (a worker that the OS
//!    refuses to start is simply not counted).
//! 4. A participant's error is recorded in the [`CancelToken`] (the first one wins) and
//!    cancels the rest; a panic becomes `Error::internal("participant panicked: ...")`. `run`
//!    returns the first error after every participant has stopped.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use super::CancelToken;
use crate::sync::{AtomicUsize, Condvar, Mutex, Ordering};
use crate::{Error, Result};

/// The default number of worker slots: the number of cores.
pub fn default_max_workers() -> usize {
    std::thread::available_parallelism().map(|cores| cores.get()).unwrap_or(1)
}

/// Who a participant is, handed to the participant closure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParticipantContext {
    /// 0..participants; 0 is the leader when it participates.
    pub index: usize,
    /// How many participants run the closure in this run.
    pub participants: usize,
    pub is_leader: bool,
}

/// What a parallel run used, for EXPLAIN ANALYZE ("Workers Planned", "Workers Launched").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParallelRun {
    pub workers_planned: usize,
    pub workers_launched: usize,
    /// Whether the leader ran the closure (it always does when no worker was launched).
    pub leader_participated: bool,
    /// Wall time of each participant, indexed by `ParticipantContext::index`.
    pub participant_times: Vec<Duration>,
}

/// `max_worker_processes` worker slots shared by all statements of a server.
#[derive(Debug)]
pub struct WorkerPool {
    max_workers: usize,
    workers_in_use: AtomicUsize,
}

impl Default for WorkerPool {
    fn default() -> WorkerPool {
        WorkerPool::new(default_max_workers())
    }
}

/// Slots held by one run; returned on drop.
struct SlotReservation<'a> {
    pool: &'a WorkerPool,
    count: usize,
}

impl SlotReservation<'_> {
    /// Give back all but `keep` slots.
    fn truncate(&mut self, keep: usize) {
        debug_assert!(keep <= self.count);
        self.pool.workers_in_use.fetch_sub(self.count - keep, Ordering::AcqRel);
        self.count = keep;
    }
}

impl Drop for SlotReservation<'_> {
    fn drop(&mut self) {
        self.truncate(0);
    }
}

/// Holds workers until the leader knows how many were launched.
#[derive(Default)]
struct StartGate {
    /// (participants, leader runs) once decided.
    decision: Mutex<Option<(usize, bool)>>,
    decided: Condvar,
}

impl StartGate {
    fn open(&self, participants: usize, leader_runs: bool) {
        *self.decision.lock() = Some((participants, leader_runs));
        self.decided.notify_all();
    }

    fn wait(&self) -> (usize, bool) {
        let mut decision = self.decision.lock();
        loop {
            if let Some(decided) = *decision {
                return decided;
            }
            self.decided.wait(&mut decision);
        }
    }
}

/// Opens the gate when dropped, so workers never wait forever even if the leader unwinds.
struct GateOpener<'a> {
    gate: &'a StartGate,
    decision: (usize, bool),
}

impl Drop for GateOpener<'_> {
    fn drop(&mut self) {
        self.gate.open(self.decision.0, self.decision.1);
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_string()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Run one participant, turning a panic into an error and recording the first error.
fn run_participant<F>(f: &F, context: ParticipantContext, cancel: &CancelToken) -> (Duration, Result<()>)
where
    F: Fn(ParticipantContext) -> Result<()>,
{
    let started = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| f(context)))
        .unwrap_or_else(|payload| Err(Error::internal(format!("participant panicked: {}", panic_message(&*payload)))));
    if let Err(err) = &result {
        cancel.fail(err.clone());
    }
    (started.elapsed(), result)
}

impl WorkerPool {
    /// A pool of `max_workers` slots (0 is allowed: every statement then runs in the leader).
    pub fn new(max_workers: usize) -> WorkerPool {
        WorkerPool { max_workers, workers_in_use: AtomicUsize::new(0) }
    }

    pub fn max_workers(&self) -> usize {
        self.max_workers
    }

    /// Slots currently held by running statements.
    pub fn workers_in_use(&self) -> usize {
        self.workers_in_use.load(Ordering::Acquire)
    }

    /// Take min(requested, free) slots in one atomic step.
    fn reserve(&self, requested: usize) -> SlotReservation<'_> {
        let mut granted = 0;
        let _ = self.workers_in_use.fetch_update(Ordering::AcqRel, Ordering::Acquire, |in_use| {
            granted = requested.min(self.max_workers.saturating_sub(in_use));
            Some(in_use + granted)
        });
        SlotReservation { pool: self, count: granted }
    }

    /// Run `f` on up to `requested_workers` worker threads plus the calling thread (the
    /// leader) if `leader_participates` — or if no worker could be had. Returns the first
    /// error of any participant after all have stopped. See the module documentation.
    pub fn run<F>(&self, requested_workers: usize, leader_participates: bool, cancel: &CancelToken, f: F) -> Result<ParallelRun>
    where
        F: Fn(ParticipantContext) -> Result<()> + Sync,
    {
        cancel.check()?;
        let mut slots = self.reserve(requested_workers);
        let gate = StartGate::default();
        let (f, gate_ref) = (&f, &gate);
        // Participants evaluate in the leader's session time zone.
        let zone = crate::timezone::current();
        let zone = &zone;
        let (leader_runs, participant_results) = std::thread::scope(|scope| {
            let mut workers = Vec::with_capacity(slots.count);
            for ordinal in 0..slots.count {
                let spawned = std::thread::Builder::new().name(format!("weft worker {ordinal}")).spawn_scoped(scope, move || {
                    crate::timezone::set_current(zone.clone());
                    let (participants, leader_runs) = gate_ref.wait();
                    let index = ordinal + leader_runs as usize;
                    let context = ParticipantContext { index, participants, is_leader: false };
                    (index, run_participant(f, context, cancel))
                });
                match spawned {
                    Ok(handle) => workers.push(handle),
                    Err(_) => break, // the OS refused a thread: run with the ones we have
                }
            }
            let launched = workers.len();
            slots.truncate(launched);
            let leader_runs = leader_participates || launched == 0;
            let participants = launched + leader_runs as usize;
            drop(GateOpener { gate: gate_ref, decision: (participants, leader_runs) });

            let mut results = Vec::with_capacity(participants);
            if leader_runs {
                let context = ParticipantContext { index: 0, participants, is_leader: true };
                results.push((0, run_participant(f, context, cancel)));
            }
            for worker in workers {
                // run_participant catches panics, so a join error would be a bug here.
                let joined = worker.join().unwrap_or_else(|_| {
                    let err = Error::internal("worker thread ended abnormally");
                    cancel.fail(err.clone());
                    (usize::MAX, (Duration::ZERO, Err(err)))
                });
                results.push(joined);
            }
            (leader_runs, results)
        });
        let workers_launched = slots.count;
        drop(slots);

        let mut participant_times = vec![Duration::ZERO; participant_results.len()];
        let mut first_error = None;
        for (index, (elapsed, result)) in participant_results {
            if let Some(time) = participant_times.get_mut(index) {
                *time = elapsed;
            }
            if let Err(err) = result {
                first_error.get_or_insert(err);
            }
        }
        if let Some(err) = first_error {
            return Err(cancel.first_error().unwrap_or(err));
        }
        Ok(ParallelRun {
            workers_planned: requested_workers,
            workers_launched,
            leader_participated: leader_runs,
            participant_times,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::Barrier;
    use crate::sync::Arc;
    use crate::SqlState;

    fn indexes_seen(pool: &WorkerPool, requested: usize, leader_participates: bool) -> (ParallelRun, Vec<ParticipantContext>) {
        let seen = Mutex::new(Vec::new());
        let run = pool
            .run(requested, leader_participates, &CancelToken::new(), |context| {
                seen.lock().push(context);
                Ok(())
            })
            .unwrap();
        let mut seen = seen.into_inner();
        seen.sort_by_key(|context| context.index);
        (run, seen)
    }

    #[test]
    fn requesting_more_than_max_gets_max() {
        let pool = WorkerPool::new(2);
        let (run, seen) = indexes_seen(&pool, 5, true);
        assert_eq!((run.workers_planned, run.workers_launched, run.leader_participated), (5, 2, true));
        assert_eq!(run.participant_times.len(), 3);
        let expected: Vec<_> =
            (0..3).map(|index| ParticipantContext { index, participants: 3, is_leader: index == 0 }).collect();
        assert_eq!(seen, expected);
        assert_eq!(pool.workers_in_use(), 0);
    }

    #[test]
    fn leader_can_stay_out() {
        let pool = WorkerPool::new(4);
        let (run, seen) = indexes_seen(&pool, 2, false);
        assert_eq!((run.workers_launched, run.leader_participated), (2, false));
        assert!(seen.iter().all(|context| !context.is_leader && context.participants == 2));
        assert_eq!(seen.iter().map(|context| context.index).collect::<Vec<_>>(), vec![0, 1]);
    }

    #[test]
    fn no_free_slots_still_finishes_in_the_leader() {
        let pool = Arc::new(WorkerPool::new(2));
        let release = crate::sync::AtomicBool::new(false);
        std::thread::scope(|scope| {
            let busy = scope.spawn(|| {
                pool.run(2, false, &CancelToken::new(), |_| {
                    while !release.load(Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Ok(())
                })
            });
            while pool.workers_in_use() < 2 {
                std::thread::yield_now();
            }
            // All slots taken; leader participation off — the leader must run anyway.
            let (run, seen) = indexes_seen(&pool, 2, false);
            assert_eq!((run.workers_launched, run.leader_participated), (0, true));
            assert_eq!(seen, vec![ParticipantContext { index: 0, participants: 1, is_leader: true }]);
            release.store(true, Ordering::Release);
            assert_eq!(busy.join().unwrap().unwrap().workers_launched, 2);
        });
        assert_eq!(pool.workers_in_use(), 0);
    }

    #[test]
    fn participants_borrow_shared_state() {
        let pool = WorkerPool::new(3);
        let data: Vec<u64> = (1..=1000).collect();
        let next_chunk = AtomicUsize::new(0);
        let total = AtomicUsize::new(0);
        pool.run(3, true, &CancelToken::new(), |_| {
            loop {
                let chunk = next_chunk.fetch_add(1, Ordering::Relaxed);
                let Some(values) = data.chunks(64).nth(chunk) else { return Ok(()) };
                total.fetch_add(values.iter().sum::<u64>() as usize, Ordering::Relaxed);
            }
        })
        .unwrap();
        assert_eq!(total.into_inner(), 500_500);
    }

    #[test]
    fn one_error_cancels_the_others_and_is_returned() {
        let pool = WorkerPool::new(3);
        let cancel = CancelToken::new();
        // Participants 0 and 1 wait at a barrier that participant 2 never reaches.
        let barrier = Barrier::new(3);
        let result = pool.run(3, true, &cancel, |context| {
            if context.index == 2 {
                std::thread::sleep(Duration::from_millis(20));
                return Err(Error::division_by_zero());
            }
            barrier.arrive_and_wait(&cancel)?;
            Ok(())
        });
        let err = result.unwrap_err();
        assert_eq!(err.sqlstate, SqlState::DIVISION_BY_ZERO);
        assert!(cancel.is_canceled());
        assert_eq!(pool.workers_in_use(), 0);
    }

    #[test]
    fn a_panic_becomes_an_error() {
        let pool = WorkerPool::new(2);
        let cancel = CancelToken::new();
        let result = pool.run(2, true, &cancel, |context| {
            if context.index == 1 {
                panic!("boom");
            }
            while cancel.check().is_ok() {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(Error::canceled())
        });
        let err = result.unwrap_err();
        assert_eq!(err.sqlstate, SqlState::INTERNAL_ERROR);
        assert_eq!(err.message, "participant panicked: boom");
        assert_eq!(pool.workers_in_use(), 0);
    }

    #[test]
    fn an_already_canceled_statement_does_not_start() {
        let pool = WorkerPool::new(2);
        let cancel = CancelToken::new();
        cancel.cancel();
        let err = pool.run(2, true, &cancel, |_| Ok(())).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::QUERY_CANCELED);
    }

    #[test]
    fn zero_slots_means_leader_only() {
        let pool = WorkerPool::new(0);
        let (run, seen) = indexes_seen(&pool, 4, true);
        assert_eq!((run.workers_launched, seen.len()), (0, 1));
        assert!(WorkerPool::default().max_workers() >= 1);
    }
}
