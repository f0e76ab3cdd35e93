//! The one place every layer of weft gets its locks, condition variables, atomics and `Arc`.
//!
//! # Why a facade
//!
//! Concurrency bugs in the parallel runtime (barriers, shared hash tables, the page table)
//! are found by model checkers that explore thread interleavings — loom exhaustively, shuttle
//! by randomized scheduling. Both work by substituting their own `Mutex`, `Condvar`, atomics
//! and `Arc`. If code imports `parking_lot` or `std::sync::atomic` directly, that substitution
//! means touching every file; if it imports `weft_common::sync`, it means changing this file
//! under a `cfg` (the plan: `#[cfg(loom)]` / `#[cfg(feature = "shuttle")]` re-export the
//! checker's types here, as redb's `src/sync.rs` and congee do). Until then these are plain
//! re-exports with no cost.
//!
//! # What
//!
//! - Locks: `parking_lot`'s `Mutex`, `RwLock`, `Condvar` and their guards — no poisoning (a
//!   panicking participant is turned into an error by the worker pool, and the lock's data is
//!   still consistent or the statement is abandoned), smaller, and `Condvar::wait_for` takes a
//!   `Duration`, which barrier waits use to poll for cancellation.
//! - Atomics: everything in `std::sync::atomic` (`AtomicBool`, `AtomicUsize`, `Ordering`, ...).
//! - Sharing: `std::sync::{Arc, Weak}`.
//!
//! Rule: no other module in weft names `parking_lot::`, `std::sync::Mutex` or
//! `std::sync::atomic::` directly.

pub use parking_lot::{
    Condvar, MappedMutexGuard, MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex, MutexGuard, Once, RwLock,
    RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard, WaitTimeoutResult,
};
pub use std::sync::atomic;
pub use std::sync::atomic::*;
pub use std::sync::{Arc, Weak};
