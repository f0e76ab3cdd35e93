//! Buffer access strategies: a small ring of buffers that one bulk operation
//! recycles, so that a scan or a load larger than the pool evicts at most its
//! ring instead of everything (PostgreSQL's `freelist.c` rings).
//!
//! When a participant needs a victim it first tries the ring's next slot: the
//! buffer there is reused if nobody has it pinned and its usage count is at
//! most one (nobody else found it useful since). Otherwise the clock sweep
//! picks a victim, which then takes that ring slot. Pins taken with a strategy
//! raise a usage count to one, never beyond, so the ring's pages stay cheap to
//! evict while pages other sessions use keep their higher counts.
//!
//! A ring is capped at an eighth of the pool (at least one buffer), as
//! PostgreSQL caps it.
//!
//! `BufferPool::read_buffers` grows a strategy's ring to at least twice the
//! batch, so that a caller still holding the previous batch
//! while reading the next one recycles its own ring instead of going to the
//! clock sweep.

/// Bytes of the ring for bulk reads (sequential scans).
pub const BULK_READ_RING_BYTES: usize = 256 * 1024;
/// Bytes of the ring for bulk writes (COPY, CREATE TABLE AS, index builds).
pub const BULK_WRITE_RING_BYTES: usize = 16 * 1024 * 1024;

/// A ring of buffers owned by one scanning or loading participant.
#[derive(Clone)]
pub struct BufferAccessStrategy {
    slots: Vec<Option<usize>>,
    current: usize,
}

impl std::fmt::Debug for BufferAccessStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferAccessStrategy")
            .field("slots", &self.slots)
            .field("current", &self.current)
            .finish()
    }
}

impl BufferAccessStrategy {
    /// A ring of `ring_bytes` (rounded down to pages, at least one).
    pub fn with_ring_bytes(ring_bytes: usize) -> BufferAccessStrategy {
        let slots = (ring_bytes / crate::PAGE_SIZE).max(1);
        BufferAccessStrategy { slots: vec![None; slots], current: 0 }
    }

    /// A 256 kB ring, for scans.
    pub fn bulk_read() -> BufferAccessStrategy {
        Self::with_ring_bytes(BULK_READ_RING_BYTES)
    }

    /// A 16 MB ring, for bulk loads.
    pub fn bulk_write() -> BufferAccessStrategy {
        Self::with_ring_bytes(BULK_WRITE_RING_BYTES)
    }

    /// Ring size in buffers before the pool's cap.
    pub fn ring_buffers(&self) -> usize {
        self.slots.len()
    }

    /// Grows the ring to at least `slots` buffers (before the pool's cap).
    pub(crate) fn reserve_slots(&mut self, slots: usize) {
        if self.slots.len() < slots {
            self.slots.resize(slots, None);
        }
    }

    /// Advances to the next slot of a ring capped at `nbuffers / 8`; returns
    /// the buffer in it, if any and if it belongs to a pool of `nbuffers`.
    pub(crate) fn advance(&mut self, nbuffers: usize) -> Option<usize> {
        let len = self.slots.len().min(nbuffers / 8).max(1);
        self.current = (self.current + 1) % len;
        self.slots[self.current].filter(|&id| id < nbuffers)
    }

    /// Puts `buffer_id` in the current slot (after the sweep chose it).
    pub(crate) fn remember(&mut self, buffer_id: usize) {
        self.slots[self.current] = Some(buffer_id);
    }
}
