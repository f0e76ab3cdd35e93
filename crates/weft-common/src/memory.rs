//! Memory budgets: a [`MemoryPool`] with a byte limit and [`MemoryReservation`]s drawn from it.
//!
//! # What
//!
//! Every sort, hash table and accumulator in weft accounts for the memory it holds through a
//! reservation on a pool whose limit is a setting (`work_mem` or `maintenance_work_mem`, per
//! participant). Before growing, an operator calls [`MemoryReservation::try_grow`]; if that
//! fails, nothing has changed and the operator must *spill* (write a run, a batch) and try
//! again, or report the error. It never overruns. When the operator frees memory it
//! shrinks the reservation; dropping the reservation gives back whatever it still holds, so an
//! operator that errors out cannot leak budget.
//!
//! # Why this shape
//!
//! This is DataFusion's `MemoryPool`/`MemoryReservation` design. PostgreSQL instead keeps a
//! per-operator `availMem` counter (tuplesort's `USEMEM`/`LACKMEM`) that each operator updates
//! by hand; it is easy to forget a decrement, cannot be shared between participants, and stops
//! being accurate when memory comes from allocators that do not report chunk sizes. A pool
//! shared by `Arc` can be one per participant (a private `work_mem`) or one per operation
//! (a budget divided among participants) with the same code; its `peak()` is the figure
//! EXPLAIN ANALYZE reports.
//!
//! # Rules
//!
//! 1. `try_grow` is all-or-nothing: on failure neither the reservation nor the pool changes.
//! 2. Only `try_grow` respects the limit. `grow` is for memory already allocated that must be
//!    accounted (a single tuple larger than the whole budget, say): it may push `reserved()`
//!    above the limit, and then every `try_grow` fails until memory is freed.
//! 3. `reserved()` is the sum of the sizes of all live reservations; `peak()` is the largest
//!    value `reserved()` has had.
//! 4. Shrinking a reservation below zero is a bug in the caller and panics.
//!
//! The pool is lock-free: `reserved` is one atomic updated with compare-and-swap, so
//! reservations on different threads never block each other.

use std::fmt;

use crate::sync::{Arc, AtomicUsize, Ordering};
use crate::{Error, Result, SqlState};

struct PoolState {
    limit_bytes: usize,
    reserved_bytes: AtomicUsize,
    peak_bytes: AtomicUsize,
}

/// A byte budget shared by reservations (cheap to clone: clones share the budget).
#[derive(Clone)]
pub struct MemoryPool {
    state: Arc<PoolState>,
}

impl fmt::Debug for MemoryPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryPool")
            .field("limit", &self.limit())
            .field("reserved", &self.reserved())
            .field("peak", &self.peak())
            .finish()
    }
}

impl MemoryPool {
    /// A pool whose reservations may hold at most `limit_bytes` together.
    pub fn new(limit_bytes: usize) -> MemoryPool {
        MemoryPool {
            state: Arc::new(PoolState {
                limit_bytes,
                reserved_bytes: AtomicUsize::new(0),
                peak_bytes: AtomicUsize::new(0),
            }),
        }
    }

    /// A pool without a limit (it still tracks `reserved` and `peak`).
    pub fn unbounded() -> MemoryPool {
        MemoryPool::new(usize::MAX)
    }

    /// A new, empty reservation on this pool; `name` appears in the out-of-memory error.
    pub fn reservation(&self, name: impl Into<String>) -> MemoryReservation {
        MemoryReservation { pool: self.clone(), name: name.into(), size_bytes: 0 }
    }

    pub fn limit(&self) -> usize {
        self.state.limit_bytes
    }

    /// Bytes held by all live reservations.
    pub fn reserved(&self) -> usize {
        self.state.reserved_bytes.load(Ordering::Acquire)
    }

    /// The largest `reserved()` this pool has seen.
    pub fn peak(&self) -> usize {
        self.state.peak_bytes.load(Ordering::Acquire)
    }

    /// Bytes a `try_grow` could still obtain now (0 when over the limit after `grow`).
    pub fn available(&self) -> usize {
        self.limit().saturating_sub(self.reserved())
    }

    fn note_reserved(&self, reserved_bytes: usize) {
        self.state.peak_bytes.fetch_max(reserved_bytes, Ordering::AcqRel);
    }

    fn try_reserve(&self, bytes: usize) -> std::result::Result<(), usize> {
        let limit = self.state.limit_bytes;
        let result = self.state.reserved_bytes.fetch_update(Ordering::AcqRel, Ordering::Acquire, |reserved| {
            reserved.checked_add(bytes).filter(|&after| after <= limit)
        });
        match result {
            Ok(before) => {
                self.note_reserved(before + bytes);
                Ok(())
            }
            Err(reserved) => Err(reserved),
        }
    }

    fn reserve(&self, bytes: usize) {
        let before = self.state.reserved_bytes.fetch_add(bytes, Ordering::AcqRel);
        self.note_reserved(before.saturating_add(bytes));
    }

    fn release(&self, bytes: usize) {
        let before = self.state.reserved_bytes.fetch_sub(bytes, Ordering::AcqRel);
        debug_assert!(before >= bytes, "memory pool released more than reserved");
    }
}

/// Bytes held by one consumer (a sort, a hash table) against a [`MemoryPool`].
/// Dropping it returns its bytes to the pool.
pub struct MemoryReservation {
    pool: MemoryPool,
    name: String,
    size_bytes: usize,
}

impl fmt::Debug for MemoryReservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryReservation").field("name", &self.name).field("size", &self.size_bytes).finish()
    }
}

impl MemoryReservation {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes this reservation holds.
    pub fn size(&self) -> usize {
        self.size_bytes
    }

    pub fn pool(&self) -> &MemoryPool {
        &self.pool
    }

    /// Grow by `bytes` if the pool's limit allows it. On failure nothing changes and the
    /// caller must free memory (spill) and retry, or give up with the returned error
    /// (SQLSTATE 53200, "out of memory", with the request size in the detail).
    pub fn try_grow(&mut self, bytes: usize) -> Result<()> {
        self.pool.try_reserve(bytes).map_err(|reserved| {
            Error::new(SqlState::OUT_OF_MEMORY, "out of memory").with_detail(format!(
                "Failed on request of size {bytes} in memory budget \"{}\" (limit {} bytes, {} bytes reserved).",
                self.name,
                self.pool.limit(),
                reserved
            ))
        })?;
        self.size_bytes += bytes;
        Ok(())
    }

    /// Grow by `bytes` regardless of the limit: for memory already allocated that must be
    /// accounted. May leave the pool over its limit.
    pub fn grow(&mut self, bytes: usize) {
        self.pool.reserve(bytes);
        self.size_bytes += bytes;
    }

    /// Give back `bytes`. Panics if the reservation holds fewer.
    pub fn shrink(&mut self, bytes: usize) {
        assert!(bytes <= self.size_bytes, "shrinking reservation {:?} of {} bytes by {bytes}", self.name, self.size_bytes);
        self.pool.release(bytes);
        self.size_bytes -= bytes;
    }

    /// Set the size to `bytes`, growing with [`grow`](Self::grow) (not limited) or shrinking.
    pub fn resize(&mut self, bytes: usize) {
        match bytes.cmp(&self.size_bytes) {
            std::cmp::Ordering::Greater => self.grow(bytes - self.size_bytes),
            std::cmp::Ordering::Less => self.shrink(self.size_bytes - bytes),
            std::cmp::Ordering::Equal => {}
        }
    }

    /// Set the size to `bytes`, growing with [`try_grow`](Self::try_grow) (limited) or shrinking.
    pub fn try_resize(&mut self, bytes: usize) -> Result<()> {
        if bytes > self.size_bytes {
            self.try_grow(bytes - self.size_bytes)
        } else {
            self.shrink(self.size_bytes - bytes);
            Ok(())
        }
    }

    /// Give back everything; returns how many bytes that was.
    pub fn free(&mut self) -> usize {
        let bytes = self.size_bytes;
        if bytes > 0 {
            self.shrink(bytes);
        }
        bytes
    }
}

impl Drop for MemoryReservation {
    fn drop(&mut self) {
        self.free();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_grow_fails_without_side_effect() {
        let pool = MemoryPool::new(100);
        let mut a = pool.reservation("sort");
        let mut b = pool.reservation("hash");
        a.try_grow(60).unwrap();
        let err = b.try_grow(41).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::OUT_OF_MEMORY);
        assert!(err.detail.clone().unwrap().contains("request of size 41 in memory budget \"hash\""));
        assert_eq!((a.size(), b.size(), pool.reserved()), (60, 0, 60));
        b.try_grow(40).unwrap();
        assert_eq!(pool.reserved(), 100);
        a.shrink(10);
        b.try_resize(50).unwrap();
        assert_eq!((pool.reserved(), pool.available()), (100, 0));
        drop(a);
        assert_eq!(pool.reserved(), 50);
        assert_eq!(b.free(), 50);
        assert_eq!((pool.reserved(), pool.peak()), (0, 100));
    }

    #[test]
    fn grow_may_overshoot_and_blocks_try_grow() {
        let pool = MemoryPool::new(10);
        let mut r = pool.reservation("tuple");
        r.grow(25);
        assert_eq!((pool.reserved(), pool.peak(), pool.available()), (25, 25, 0));
        assert!(r.try_grow(1).is_err());
        r.resize(5);
        r.try_grow(5).unwrap();
        assert_eq!(pool.reserved(), 10);
        drop(r);
        assert_eq!(pool.reserved(), 0);
    }

    #[test]
    fn unbounded_pool_tracks_peak() {
        let pool = MemoryPool::unbounded();
        let mut r = pool.reservation("accumulator");
        r.try_grow(1 << 40).unwrap();
        r.shrink(1 << 39);
        assert_eq!((pool.reserved(), pool.peak()), (1 << 39, 1 << 40));
    }

    #[test]
    #[should_panic(expected = "shrinking reservation")]
    fn shrinking_below_zero_is_a_bug() {
        MemoryPool::new(10).reservation("x").shrink(1);
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Step {
            TryGrow(usize),
            Shrink(usize),
            Drop,
        }

        fn step() -> impl Strategy<Value = Step> {
            prop_oneof![
                4 => (1usize..400).prop_map(Step::TryGrow),
                3 => (0usize..400).prop_map(Step::Shrink),
                1 => Just(Step::Drop),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]

            /// Threads run random grow/shrink/drop sequences on one pool: with only `try_grow`
            /// the pool never exceeds its limit (checked after every step and via `peak`), and
            /// it ends at zero.
            #[test]
            fn concurrent_reservations_respect_the_limit(
                limit in 1usize..2000,
                programs in prop::collection::vec(prop::collection::vec(step(), 1..60), 2..5),
            ) {
                let pool = MemoryPool::new(limit);
                std::thread::scope(|scope| {
                    for (thread, program) in programs.iter().enumerate() {
                        let pool = pool.clone();
                        scope.spawn(move || {
                            let mut reservation = pool.reservation(format!("thread {thread}"));
                            for step in program {
                                match *step {
                                    Step::TryGrow(bytes) => {
                                        let before = reservation.size();
                                        if reservation.try_grow(bytes).is_err() {
                                            assert_eq!(reservation.size(), before);
                                        }
                                    }
                                    Step::Shrink(bytes) => reservation.shrink(bytes.min(reservation.size())),
                                    Step::Drop => reservation = pool.reservation(format!("thread {thread} again")),
                                }
                                assert!(pool.reserved() <= limit);
                            }
                        });
                    }
                });
                prop_assert!(pool.peak() <= limit);
                prop_assert_eq!(pool.reserved(), 0);
            }
        }
    }
}
