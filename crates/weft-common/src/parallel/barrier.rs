//! A phased barrier with PostgreSQL's semantics (`src/backend/storage/ipc/barrier.c`).
//!
//! # What
//!
//! Participants *attach* (learning the current phase), *arrive and wait* at the end of each
//! phase, and *detach* when they leave. A phase ends when every attached participant has
//! arrived; then the phase number advances and everybody is released. Exactly one
//! participant per phase gets `true` from [`Barrier::arrive_and_wait`] — the *elected* one —
//! which is how parallel operators say "one participant does this step" (allocate the hash
//! table, merge the runs) without a separate election protocol.
//!
//! ```text
//!   attach() ──► phase p ──arrive_and_wait()──► (all attached arrived) ──► phase p+1 ──► ...
//!                  ▲                                   │
//!                  └── late attach: joins phase p,     └── one caller gets `true` (elected)
//!                      must arrive like the rest
//! ```
//!
//! The elected participant is the last to arrive — or, when the phase ended because the last
//! missing participant *detached*, the first waiter to wake, exactly as in PostgreSQL.
//!
//! # Why phases rather than `std::sync::Barrier`
//!
//! A fixed-size barrier cannot express PostgreSQL's parallel plans: workers start late (or
//! never), finish early and leave, and a participant that attaches mid-operation must learn
//! which phase the operation is in to join at the right step (a hash join already probing
//! should not help build). A phase number read at attach time, plus detach that can complete
//! a phase, covers all of that.
//!
//! # Departures from PostgreSQL
//!
//! 1. Waits wake on cancellation: every wait polls the [`CancelToken`] every
//!    [`WAIT_POLL_INTERVAL`] and returns `Err(canceled)`, withdrawing the caller's arrival
//!    (the phase has not ended; the statement is being abandoned). PostgreSQL gets this from
//!    `CHECK_FOR_INTERRUPTS` inside `ConditionVariableSleep`.
//! 2. There is no "static party": any barrier may be attached to and detached from.
//! 3. Every wait is timed and recorded per phase ([`Barrier::wait_stats`]) so EXPLAIN
//!    ANALYZE can show where participants idled. Only the first [`WAIT_STATS_PHASES_MAX`]
//!    phases are recorded.
//! 4. [`Barrier::arrive_and_detach_except_last`] releases waiters if detaching completes the
//!    phase (PostgreSQL assumes nobody waits at that point).

use std::time::{Duration, Instant};

use super::CancelToken;
use crate::sync::{Condvar, Mutex};
use crate::{Error, Result};

/// How often a waiting participant checks for cancellation.
pub const WAIT_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// Phases whose waits are recorded; later phases are not (bounded memory).
pub const WAIT_STATS_PHASES_MAX: usize = 4096;

/// How long each participant waited at the end of one phase (in arrival-recording order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseWaitStats {
    /// The phase that was ending (the phase number before it advanced).
    pub phase: usize,
    pub waits: Vec<Duration>,
}

impl PhaseWaitStats {
    pub fn min(&self) -> Option<Duration> {
        self.waits.iter().min().copied()
    }

    pub fn max(&self) -> Option<Duration> {
        self.waits.iter().max().copied()
    }

    /// The median wait (the lower middle one for an even count).
    pub fn median(&self) -> Option<Duration> {
        let mut sorted = self.waits.clone();
        sorted.sort_unstable();
        sorted.get(sorted.len().saturating_sub(1) / 2).copied()
    }
}

#[derive(Debug)]
struct BarrierState {
    phase: usize,
    participants: usize,
    arrived: usize,
    /// The phase number whose election has happened (PostgreSQL's `elected`).
    elected: usize,
    wait_stats: Vec<PhaseWaitStats>,
}

impl BarrierState {
    fn record_wait(&mut self, phase: usize, waited: Duration) {
        match self.wait_stats.binary_search_by_key(&phase, |stats| stats.phase) {
            Ok(at) => self.wait_stats[at].waits.push(waited),
            Err(at) if self.wait_stats.len() < WAIT_STATS_PHASES_MAX => {
                self.wait_stats.insert(at, PhaseWaitStats { phase, waits: vec![waited] })
            }
            Err(_) => {}
        }
    }

    /// End the current phase because everyone attached has arrived.
    fn advance(&mut self) {
        self.arrived = 0;
        self.phase += 1;
    }
}

/// A PostgreSQL-style phased barrier; see the module documentation.
#[derive(Debug)]
pub struct Barrier {
    state: Mutex<BarrierState>,
    phase_ended: Condvar,
}

impl Barrier {
    /// A barrier in phase 0 with `participants_initial` participants already attached.
    pub fn new(participants_initial: usize) -> Barrier {
        Barrier {
            state: Mutex::new(BarrierState {
                phase: 0,
                participants: participants_initial,
                arrived: 0,
                elected: 0,
                wait_stats: Vec::new(),
            }),
            phase_ended: Condvar::new(),
        }
    }

    /// Attach one more participant; returns the current phase, which it must take part in.
    pub fn attach(&self) -> usize {
        let mut state = self.state.lock();
        state.participants += 1;
        state.phase
    }

    /// Detach without arriving. If every remaining participant was already waiting, this
    /// ends the phase and releases them. Returns true if this was the last participant.
    pub fn detach(&self) -> bool {
        self.detach_impl(false)
    }

    /// Arrive at the end of the current phase and detach, without waiting. Ends the phase if
    /// the caller was the last to arrive (even if no one else is attached). Returns true if
    /// this was the last participant.
    pub fn arrive_and_detach(&self) -> bool {
        self.detach_impl(true)
    }

    fn detach_impl(&self, arrive: bool) -> bool {
        let mut state = self.state.lock();
        assert!(state.participants > 0, "detaching from a barrier with no participants");
        state.participants -= 1;
        let release = (arrive || state.participants > 0) && state.arrived == state.participants;
        if release {
            state.advance();
        }
        let last = state.participants == 0;
        drop(state);
        if release {
            self.phase_ended.notify_all();
        }
        last
    }

    /// Arrive, and detach unless the caller is the last participant, in which case the phase
    /// advances and the caller stays attached (returns true) to do the serial work after it.
    pub fn arrive_and_detach_except_last(&self) -> bool {
        let mut state = self.state.lock();
        assert!(state.participants > 0, "arriving at a barrier with no participants");
        if state.participants == 1 {
            debug_assert_eq!(state.arrived, 0);
            state.advance();
            return true;
        }
        state.participants -= 1;
        let release = state.arrived > 0 && state.arrived == state.participants;
        if release {
            state.advance();
        }
        drop(state);
        if release {
            self.phase_ended.notify_all();
        }
        false
    }

    /// Arrive at the end of the current phase and wait until every attached participant has
    /// arrived (or detached). Returns `Ok(true)` for exactly one participant per phase.
    /// Returns `Err(canceled)` if `cancel` is set while waiting; the caller's arrival is then
    /// withdrawn and it remains attached.
    pub fn arrive_and_wait(&self, cancel: &CancelToken) -> Result<bool> {
        let started = Instant::now();
        let mut state = self.state.lock();
        assert!(state.arrived < state.participants, "arriving at a barrier the caller is not attached to");
        let start_phase = state.phase;
        let next_phase = start_phase + 1;
        state.arrived += 1;
        if state.arrived == state.participants {
            state.advance();
            state.elected = next_phase;
            state.record_wait(start_phase, started.elapsed());
            drop(state);
            self.phase_ended.notify_all();
            return Ok(true);
        }
        loop {
            if state.phase != start_phase {
                debug_assert_eq!(state.phase, next_phase);
                // Nobody was elected if the phase ended by a detach: the first waiter is.
                let elected = state.elected != next_phase;
                state.elected = next_phase;
                state.record_wait(start_phase, started.elapsed());
                return Ok(elected);
            }
            if cancel.is_canceled() {
                state.arrived -= 1;
                return Err(Error::canceled());
            }
            self.phase_ended.wait_for(&mut state, WAIT_POLL_INTERVAL);
        }
    }

    /// The current phase number.
    pub fn phase(&self) -> usize {
        self.state.lock().phase
    }

    /// The number of attached participants.
    pub fn participants(&self) -> usize {
        self.state.lock().participants
    }

    /// Per phase, how long each participant spent in `arrive_and_wait`, in phase order.
    pub fn wait_stats(&self) -> Vec<PhaseWaitStats> {
        self.state.lock().wait_stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::{AtomicUsize, Ordering};
    use crate::SqlState;

    #[test]
    fn one_elected_per_phase_with_more_participants_than_cores() {
        const PARTICIPANTS: usize = 8;
        const PHASES: usize = 150;
        let barrier = Barrier::new(PARTICIPANTS);
        let cancel = CancelToken::new();
        let elected: Vec<AtomicUsize> = (0..PHASES).map(|_| AtomicUsize::new(0)).collect();
        let finished_phase: Vec<AtomicUsize> = (0..PHASES).map(|_| AtomicUsize::new(0)).collect();
        std::thread::scope(|scope| {
            for _ in 0..PARTICIPANTS {
                scope.spawn(|| {
                    for phase in 0..PHASES {
                        assert_eq!(barrier.phase(), phase);
                        finished_phase[phase].fetch_add(1, Ordering::SeqCst);
                        if barrier.arrive_and_wait(&cancel).unwrap() {
                            elected[phase].fetch_add(1, Ordering::SeqCst);
                        }
                        // Nobody passes the barrier before everybody finished the phase.
                        assert_eq!(finished_phase[phase].load(Ordering::SeqCst), PARTICIPANTS);
                    }
                });
            }
        });
        assert!(elected.iter().all(|count| count.load(Ordering::SeqCst) == 1));
        assert_eq!(barrier.phase(), PHASES);
        let stats = barrier.wait_stats();
        assert_eq!(stats.len(), PHASES);
        for (phase, phase_stats) in stats.iter().enumerate() {
            assert_eq!(phase_stats.phase, phase);
            assert_eq!(phase_stats.waits.len(), PARTICIPANTS);
            assert!(phase_stats.min() <= phase_stats.median() && phase_stats.median() <= phase_stats.max());
        }
    }

    #[test]
    fn late_attach_joins_the_current_phase() {
        let barrier = Barrier::new(1);
        let cancel = CancelToken::new();
        assert!(barrier.arrive_and_wait(&cancel).unwrap()); // alone: always elected
        assert_eq!(barrier.phase(), 1);
        let elected = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                assert_eq!(barrier.attach(), 1);
                elected.fetch_add(barrier.arrive_and_wait(&cancel).unwrap() as usize, Ordering::SeqCst);
                assert!(!barrier.detach()); // the leader is still attached
            });
            // Wait until the worker attached, so the phase cannot end without it.
            while barrier.participants() < 2 {
                std::thread::yield_now();
            }
            elected.fetch_add(barrier.arrive_and_wait(&cancel).unwrap() as usize, Ordering::SeqCst);
        });
        assert_eq!(elected.load(Ordering::SeqCst), 1);
        assert_eq!(barrier.phase(), 2);
        assert_eq!(barrier.participants(), 1);
        assert!(barrier.arrive_and_wait(&cancel).unwrap());
        assert!(barrier.detach());
    }

    #[test]
    fn detach_of_the_last_missing_participant_releases_and_elects_a_waiter() {
        let barrier = Barrier::new(3);
        let cancel = CancelToken::new();
        let elected = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    elected.fetch_add(barrier.arrive_and_wait(&cancel).unwrap() as usize, Ordering::SeqCst);
                });
            }
            while barrier.state.lock().arrived < 2 {
                std::thread::yield_now();
            }
            assert!(!barrier.detach());
        });
        assert_eq!(elected.load(Ordering::SeqCst), 1);
        assert_eq!((barrier.phase(), barrier.participants()), (1, 2));
    }

    #[test]
    fn arrive_and_detach_ends_the_phase() {
        let barrier = Barrier::new(2);
        let cancel = CancelToken::new();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| barrier.arrive_and_wait(&cancel).unwrap());
            while barrier.state.lock().arrived < 1 {
                std::thread::yield_now();
            }
            assert!(!barrier.arrive_and_detach());
            assert!(waiter.join().unwrap(), "the phase ended by a detach elects the waiter");
        });
        assert_eq!(barrier.phase(), 1);
        assert!(barrier.arrive_and_detach()); // alone: the phase advances, and it was the last
        assert_eq!((barrier.phase(), barrier.participants()), (2, 0));
    }

    #[test]
    fn arrive_and_detach_except_last_keeps_one() {
        let barrier = Barrier::new(3);
        assert!(!barrier.arrive_and_detach_except_last());
        assert!(!barrier.arrive_and_detach_except_last());
        assert!(barrier.arrive_and_detach_except_last());
        assert_eq!((barrier.phase(), barrier.participants()), (1, 1));
    }

    #[test]
    fn cancellation_wakes_waiters() {
        let barrier = Barrier::new(3);
        let cancel = CancelToken::new();
        std::thread::scope(|scope| {
            let waiters: Vec<_> = (0..2)
                .map(|_| {
                    scope.spawn(|| {
                        let started = Instant::now();
                        let result = barrier.arrive_and_wait(&cancel);
                        (result, started.elapsed())
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_millis(30));
            cancel.cancel();
            for waiter in waiters {
                let (result, waited) = waiter.join().unwrap();
                assert_eq!(result.unwrap_err().sqlstate, SqlState::QUERY_CANCELED);
                assert!(waited < Duration::from_secs(2), "waited {waited:?}");
            }
        });
        // The arrivals were withdrawn: the phase did not end and nobody is counted as arrived.
        assert_eq!((barrier.phase(), barrier.state.lock().arrived), (0, 0));
    }
}
