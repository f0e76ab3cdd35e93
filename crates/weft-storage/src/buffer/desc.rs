//! Buffer descriptors and their state word (PostgreSQL's `BufferDesc` and
//! `buf_internals.h`).
//!
//! ```text
//!  63        28 27    26     25       24     23    22  21   18 17        0
//! +------------+-----+------+--------+------+-----+-----+------+----------+
//! |   unused   | JD  | IOER | IO_IP  | TAGV | VAL | DIR | usage| refcount |
//! +------------+-----+------+--------+------+-----+-----+------+----------+
//! ```
//!
//! The refcount (pins) and usage count change with lock-free compare-and-swap
//! on the word. The tag lives in the header mutex, which also serialises the
//! multi-step transitions: pinning through a lookup (check tag, then pin),
//! re-tagging a victim, starting and ending I/O, invalidation. Because every
//! pin of a buffer with refcount > 0 is taken under the header mutex, and the
//! clock sweep pins only buffers with refcount 0, an evictor that holds the
//! header mutex and sees refcount == 1 (its own pin) knows nobody else can
//! pin the buffer until it lets go of the mutex.

use crate::sync::{AtomicU64, Condvar, Mutex, Ordering};
use crate::BufferTag;

pub(crate) const REFCOUNT_ONE: u64 = 1;
pub(crate) const REFCOUNT_MASK: u64 = (1 << 18) - 1;
pub(crate) const USAGE_SHIFT: u32 = 18;
pub(crate) const USAGE_ONE: u64 = 1 << USAGE_SHIFT;
pub(crate) const USAGE_MASK: u64 = 0xf << USAGE_SHIFT;
/// Highest usage count (PostgreSQL's `BM_MAX_USAGE_COUNT`).
pub(crate) const USAGE_COUNT_MAX: u64 = 5;

/// The page differs from the disk copy.
pub(crate) const DIRTY: u64 = 1 << 22;
/// The page content is usable.
pub(crate) const VALID: u64 = 1 << 23;
/// The header's tag is meaningful (and mapped).
pub(crate) const TAG_VALID: u64 = 1 << 24;
/// A read or write of this buffer is under way; waiters sleep on `io_done`.
pub(crate) const IO_IN_PROGRESS: u64 = 1 << 25;
/// The last I/O failed.
pub(crate) const IO_ERROR: u64 = 1 << 26;
/// Dirtied since the current write started; the write must not clear DIRTY.
pub(crate) const JUST_DIRTIED: u64 = 1 << 27;

const _: () = assert!(USAGE_COUNT_MAX < 16);
const _: () = assert!(REFCOUNT_MASK & USAGE_MASK == 0);

pub(crate) fn refcount(state: u64) -> u64 {
    state & REFCOUNT_MASK
}

pub(crate) fn usage_count(state: u64) -> u64 {
    (state & USAGE_MASK) >> USAGE_SHIFT
}

/// What the clock sweep did with one buffer.
pub(crate) enum SweepOutcome {
    /// It was free with usage 0: now pinned by the sweeper.
    Pinned,
    /// Its usage count went down by one.
    Decremented,
    /// Pinned by someone else.
    Busy,
}

pub(crate) struct BufferDesc {
    pub(crate) state: AtomicU64,
    /// The tag; `None` iff TAG_VALID is clear. Also the header lock.
    pub(crate) header: Mutex<Option<BufferTag>>,
    /// Signalled (under `header`) when IO_IN_PROGRESS is cleared.
    pub(crate) io_done: Condvar,
}

impl BufferDesc {
    pub(crate) fn new() -> BufferDesc {
        BufferDesc { state: AtomicU64::new(0), header: Mutex::new(None), io_done: Condvar::new() }
    }

    pub(crate) fn load(&self) -> u64 {
        self.state.load(Ordering::Acquire)
    }

    /// Adds a pin and raises the usage count: by one without a strategy, to
    /// at most one with a strategy (so ring buffers stay recyclable).
    /// Callers hold the header lock, or already hold a pin.
    pub(crate) fn pin(&self, with_strategy: bool) {
        let mut state = self.load();
        loop {
            debug_assert!(refcount(state) < REFCOUNT_MASK, "buffer pin count overflow");
            let mut next = state + REFCOUNT_ONE;
            let usage = usage_count(state);
            if (!with_strategy && usage < USAGE_COUNT_MAX) || usage == 0 {
                next += USAGE_ONE;
            }
            match self.state.compare_exchange_weak(state, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(actual) => state = actual,
            }
        }
    }

    /// Adds a pin without touching the usage count. Callers hold the header
    /// lock, or already hold a pin.
    pub(crate) fn add_pin(&self) {
        let previous = self.state.fetch_add(REFCOUNT_ONE, Ordering::AcqRel);
        debug_assert!(refcount(previous) < REFCOUNT_MASK, "buffer pin count overflow");
    }

    pub(crate) fn unpin(&self) {
        let previous = self.state.fetch_sub(REFCOUNT_ONE, Ordering::AcqRel);
        debug_assert!(refcount(previous) > 0, "unpin of an unpinned buffer");
    }

    /// One step of the clock sweep; `usage_max` is 0 for the sweep, 1 for a ring.
    pub(crate) fn sweep(&self, usage_max: u64, decrement: bool) -> SweepOutcome {
        let mut state = self.load();
        loop {
            if refcount(state) != 0 {
                return SweepOutcome::Busy;
            }
            let (next, outcome) = if usage_count(state) > usage_max {
                if !decrement {
                    return SweepOutcome::Busy;
                }
                (state - USAGE_ONE, SweepOutcome::Decremented)
            } else {
                (state + REFCOUNT_ONE, SweepOutcome::Pinned)
            };
            match self.state.compare_exchange_weak(state, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return outcome,
                Err(actual) => state = actual,
            }
        }
    }

    pub(crate) fn set_flags(&self, flags: u64) -> u64 {
        self.state.fetch_or(flags, Ordering::AcqRel)
    }

    pub(crate) fn clear_flags(&self, flags: u64) -> u64 {
        self.state.fetch_and(!flags, Ordering::AcqRel)
    }

    /// Applies `f` to the state atomically; returns the previous state.
    pub(crate) fn update(&self, f: impl Fn(u64) -> u64) -> u64 {
        let mut state = self.load();
        loop {
            match self.state.compare_exchange_weak(state, f(state), Ordering::AcqRel, Ordering::Acquire) {
                Ok(previous) => return previous,
                Err(actual) => state = actual,
            }
        }
    }
}
