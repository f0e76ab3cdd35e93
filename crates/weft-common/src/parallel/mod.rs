//! The parallel runtime's primitives: worker slots, a phased barrier, cancellation.
//!
//! # The model (DESIGN.md, "Parallel runtime")
//!
//! A statement that runs in parallel asks a [`WorkerPool`] for up to N workers, gets those
//! that are free — possibly none — and must still finish: the leader (the session's own
//! thread) always takes part when no worker could be had, and otherwise unless
//! `parallel_leader_participation = off`. Each participant runs the same closure with a
//! [`ParticipantContext`] saying who it is. Participants share one *shared* state (borrowed
//! by the closure) and keep their own *local* state; they meet only at explicit points:
//! a phased [`Barrier`], atomics, channels.
//!
//! Threads, not processes: participants share the address space, so the shared state is an
//! ordinary Rust value borrowed across `std::thread::scope`, not a DSM segment.
//!
//! # Failure and cancellation
//!
//! One [`CancelToken`] per statement. A user's cancel request sets it; so does the first
//! participant that fails ([`CancelToken::fail`] records that error). Every long loop calls
//! [`CancelToken::check`], and every barrier wait polls the token, so one failing participant
//! stops all of them promptly and the statement reports the *first* error — not the
//! "canceling statement" errors of the participants it stopped. A panicking participant is
//! caught and becomes an internal error (`XX000`), never a crash of the server.
//!
//! # Deadlock rule
//!
//! A participant never waits for something only another participant's *progress past a
//! barrier* can give (PostgreSQL's leader-drains-tuple-queue-while-at-barrier deadlock): a
//! barrier wait depends only on other participants arriving or detaching, and every waiting
//! loop also wakes on cancellation.

mod barrier;
mod cancel;
mod pool;

pub use barrier::{Barrier, PhaseWaitStats};
pub use cancel::CancelToken;
pub use pool::{default_max_workers, ParallelRun, ParticipantContext, WorkerPool};
