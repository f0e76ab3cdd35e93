//! The one place the concurrent tree gets its atomics, locks, thread-locals and
//! spin hints from.
//!
//! Normal builds use `std`. With the crate feature `shuttle` every primitive is
//! shuttle's, so the randomized/PCT schedulers of the `shuttle` crate can explore
//! interleavings of the optimistic-lock-coupling protocol (`tests/olc_shuttle.rs`).
//! Nothing outside `olc/` uses this module, and nothing inside `olc/` uses
//! `std::sync` or `std::thread` directly (the domain-id counter in `epoch.rs` is
//! the one exception: it is not part of any protocol, only a unique number).

#[cfg(not(feature = "shuttle"))]
mod imp {
    pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
    pub(crate) use std::sync::{Mutex, MutexGuard};
    pub(crate) use std::thread_local;

    /// One step of a wait loop: a CPU pause for the first iterations, then yielding the
    /// thread (on an oversubscribed machine the lock holder may be descheduled).
    #[inline]
    pub(crate) fn spin_wait(iteration: &mut u32) {
        if *iteration < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
        *iteration = iteration.saturating_add(1);
    }

    /// Give the processor away.
    pub(crate) fn yield_now() {
        std::thread::yield_now();
    }

    /// One round of the blocking reclamation loop: yield at first, then sleep a little,
    /// since on an oversubscribed machine a pinned thread may stay descheduled for
    /// longer than thousands of yields take.
    pub(crate) fn reclaim_wait(round: usize) {
        if round < 1000 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}

#[cfg(feature = "shuttle")]
mod imp {
    pub(crate) use shuttle::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
    pub(crate) use shuttle::sync::{Mutex, MutexGuard};
    pub(crate) use shuttle::thread_local;

    /// Under shuttle a wait loop must yield, or a spinning thread could be scheduled forever.
    #[inline]
    pub(crate) fn spin_wait(iteration: &mut u32) {
        shuttle::thread::yield_now();
        *iteration = iteration.saturating_add(1);
    }

    pub(crate) fn yield_now() {
        shuttle::thread::yield_now();
    }

    pub(crate) fn reclaim_wait(_round: usize) {
        shuttle::thread::yield_now();
    }
}

pub(crate) use imp::*;

/// Locks a mutex; a poisoned mutex (a panic while it was held, which the tree's code
/// does not do while holding one) is still usable because every critical section
/// leaves the protected data consistent at each step.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A value on cache lines of its own (128 bytes: two lines, for adjacent-line
/// prefetchers), so writes to it do not evict what readers keep next to it.
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
