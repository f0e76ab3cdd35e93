//! Epoch-based reclamation for the node pool (our own, so that shuttle can schedule
//! every step of it; `crossbeam-epoch` would hide its atomics from the model checker).
//!
//! One [`EpochDomain`] per [`super::NodePool`]. A thread that operates on a tree first
//! *pins*: it announces the global epoch it saw in its own slot. A node unlinked from a
//! tree is *retired* with the global epoch of that moment and returned to the pool only
//! when the global epoch has advanced twice since; the global epoch advances only when
//! every pinned slot announces the current epoch. So a retired node is reused only after
//! every thread that was pinned when it was unlinked has unpinned (README rule 8).
//!
//! Costs of a pin: a thread-local lookup, one store to the thread's own slot (a cache
//! line no other thread writes) and one `SeqCst` fence. No shared cache line is
//! written. Point lookups skip it (README rule 8).
//!
//! Slots: `SLOTS_MAX` per domain, claimed by a thread on first use and released when
//! the thread exits (thread-local destructor). A thread that finds no free slot, or
//! whose thread-locals are being torn down, claims a slot for the one operation.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use super::sync::{fence, thread_local, AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Threads that can be pinned in one pool at the same time without waiting for a slot.
pub(crate) const SLOTS_MAX: usize = 512;

/// One thread's announcement, on its own cache line(s).
#[repr(align(128))]
struct Slot {
    /// Claimed by a thread.
    owned: AtomicBool,
    /// 0 when not pinned; else `(epoch << 1) | 1`.
    state: AtomicU64,
    /// Nesting depth of pins by the owner (only the owner touches it).
    depth: AtomicU64,
}

/// The shared part of a domain (kept alive by the pool and by thread-local registrations).
pub(crate) struct EpochDomain {
    id: u64,
    global: AtomicU64,
    slots: Box<[Slot]>,
    /// Slots `0..high_water` may be claimed; `try_advance` scans only those.
    high_water: AtomicUsize,
    /// Set when the pool is dropped, so thread-local registrations can be pruned.
    dead: AtomicBool,
}

/// Plain std counter: only a unique number, not part of any protocol.
static NEXT_DOMAIN_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

struct Registration {
    id: u64,
    domain: Arc<EpochDomain>,
    slot: usize,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.domain.release(self.slot);
    }
}

thread_local! {
    // Not `const {}`: shuttle's `thread_local!` takes the plain form only.
    #[allow(clippy::missing_const_for_thread_local)]
    static REGISTRATIONS: RefCell<Vec<Registration>> = RefCell::new(Vec::new());
    /// The registration used last, `(domain id, slot)`: the fast path of `pin` (ids are
    /// never reused, so a stale entry never matches a live domain).
    #[allow(clippy::missing_const_for_thread_local)]
    static LAST_REGISTRATION: Cell<(u64, usize)> = Cell::new((0, 0));
}

/// Proof of being pinned; unpins on drop.
pub(crate) struct Guard<'a> {
    domain: &'a EpochDomain,
    slot: usize,
    temporary: bool,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.domain.leave(self.slot);
        if self.temporary {
            self.domain.release(self.slot);
        }
    }
}

impl EpochDomain {
    pub(crate) fn new() -> Arc<EpochDomain> {
        Arc::new(EpochDomain {
            id: NEXT_DOMAIN_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            global: AtomicU64::new(1),
            slots: (0..SLOTS_MAX)
                .map(|_| Slot { owned: AtomicBool::new(false), state: AtomicU64::new(0), depth: AtomicU64::new(0) })
                .collect(),
            high_water: AtomicUsize::new(0),
            dead: AtomicBool::new(false),
        })
    }

    pub(crate) fn mark_dead(&self) {
        self.dead.store(true, Ordering::Relaxed);
    }

    fn claim(&self) -> Option<usize> {
        for (index, slot) in self.slots.iter().enumerate() {
            if !slot.owned.load(Ordering::Relaxed)
                && slot.owned.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                self.high_water.fetch_max(index + 1, Ordering::AcqRel);
                return Some(index);
            }
        }
        None
    }

    fn claim_waiting(&self) -> usize {
        loop {
            if let Some(slot) = self.claim() {
                return slot;
            }
            super::sync::yield_now();
        }
    }

    fn release(&self, slot: usize) {
        let slot = &self.slots[slot];
        slot.state.store(0, Ordering::Release);
        slot.depth.store(0, Ordering::Relaxed);
        slot.owned.store(false, Ordering::Release);
    }

    fn enter(&self, slot: usize) {
        let slot = &self.slots[slot];
        let depth = slot.depth.load(Ordering::Relaxed);
        slot.depth.store(depth + 1, Ordering::Relaxed);
        if depth == 0 {
            let epoch = self.global.load(Ordering::Relaxed);
            slot.state.store((epoch << 1) | 1, Ordering::Relaxed);
            // The announcement is ordered before every read of the tree that follows.
            fence(Ordering::SeqCst);
        }
    }

    fn leave(&self, slot: usize) {
        let slot = &self.slots[slot];
        let depth = slot.depth.load(Ordering::Relaxed);
        slot.depth.store(depth.saturating_sub(1), Ordering::Relaxed);
        if depth <= 1 {
            slot.state.store(0, Ordering::Release);
        }
    }

    /// Whether the calling thread is pinned in this domain.
    pub(crate) fn is_pinned_here(&self) -> bool {
        REGISTRATIONS
            .try_with(|registrations| {
                registrations.borrow().iter().any(|registration| {
                    registration.id == self.id && self.slots[registration.slot].depth.load(Ordering::Relaxed) > 0
                })
            })
            .unwrap_or(false)
    }

    /// Pins the calling thread until the guard drops.
    #[inline]
    pub(crate) fn pin(self: &Arc<Self>) -> Guard<'_> {
        if let Ok((id, slot)) = LAST_REGISTRATION.try_with(Cell::get) {
            if id == self.id {
                self.enter(slot);
                return Guard { domain: self, slot, temporary: false };
            }
        }
        self.pin_slow()
    }

    #[cold]
    fn pin_slow(self: &Arc<Self>) -> Guard<'_> {
        let registered = REGISTRATIONS.try_with(|registrations| {
            let mut registrations = registrations.borrow_mut();
            if let Some(registration) = registrations.iter().find(|registration| registration.id == self.id) {
                return Some(registration.slot);
            }
            registrations.retain(|registration| !registration.domain.dead.load(Ordering::Relaxed));
            let slot = self.claim()?;
            registrations.push(Registration { id: self.id, domain: Arc::clone(self), slot });
            Some(slot)
        });
        let (slot, temporary) = match registered {
            Ok(Some(slot)) => {
                let _ = LAST_REGISTRATION.try_with(|last| last.set((self.id, slot)));
                (slot, false)
            }
            _ => (self.claim_waiting(), true),
        };
        self.enter(slot);
        Guard { domain: self, slot, temporary }
    }

    /// Advances the global epoch if every pinned thread has seen the current one.
    /// Returns the global epoch after the attempt.
    pub(crate) fn try_advance(&self) -> u64 {
        let epoch = self.global.load(Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let high_water = self.high_water.load(Ordering::Acquire).min(self.slots.len());
        for slot in &self.slots[..high_water] {
            let state = slot.state.load(Ordering::Relaxed);
            if state & 1 == 1 && state >> 1 != epoch {
                return epoch;
            }
        }
        fence(Ordering::Acquire);
        match self.global.compare_exchange(epoch, epoch + 1, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => epoch + 1,
            Err(current) => current,
        }
    }

    /// The epoch to stamp a node unlinked just now with.
    pub(crate) fn retire_epoch(&self) -> u64 {
        fence(Ordering::SeqCst);
        self.global.load(Ordering::Relaxed)
    }
}

/// A node retired at `epoch` may be reused once the global epoch is at least this.
pub(crate) fn reusable_from(epoch: u64) -> u64 {
    epoch + 2
}
