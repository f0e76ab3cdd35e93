//! `NodePool`: fixed node memory, carved at start-up into one slab per node size
//! class, with a free list per class and the epoch domain that decides when a freed
//! slot may be reused.
//!
//! # Why one slab per class
//! Slots of a class never change class, so a slot that a reader may still be looking
//! at holds a node of the type the reader expects, and every field is an atomic: a
//! stale read is a wrong number, never undefined behaviour. Nodes are named by
//! `(slot index << 7) | (depth << 3) | class tag` rather than by pointer, so the module needs no
//! `unsafe`. The price is that capacity is split between the classes up front: a pool
//! is sized by an entry count `n` (see [`NodePool::worst_case_bytes`]) and each class
//! gets the most slots an `n`-entry forest could need of it. README "The pool" argues
//! the bound.
//!
//! # Free lists and the byte counter
//! A class's free slots are a stack of indices behind a mutex (writers only: readers
//! never allocate). `used_bytes` counts slots handed out and not yet back in a free
//! list, retired-but-not-reclaimed slots included.
//!
//! # Reclamation
//! A node unlinked from a tree is *retired*: stamped with the epoch and queued. A
//! collection frees queued nodes whose stamp is two epochs old (`epoch.rs`).
//! Collections run every so often from `retire`, and an allocation that finds its class
//! empty asks the caller to unpin and call [`NodePool::reclaim_blocking`], which waits
//! (yielding) for the grace period of everything queued before it gives up.

use std::sync::Arc;

use super::epoch::{reusable_from, EpochDomain, Guard};
use super::slab_memory::EmptySlots;
use super::node::{
    index_of, make_ref, tag_of, Inner, Kind, Leaf, Node16, Node256, Node4, Node48, NodeRef, TAG_LEAF, TAG_N16,
    TAG_N256, TAG_N4, TAG_N48,
};
use super::sync::{lock, AtomicUsize, Mutex, Ordering, Padded};
use super::OutOfNodeMemory;

/// Extra slots per class beyond the entry bound: nodes allocated by writers that are
/// in the middle of replacing a node (at most one inner node and one leaf each), so up
/// to this many writers can be mid-replacement when the trees hold the bound's entries.
pub(crate) const GRACE_SLACK_SLOTS: usize = 64;

/// Queue length at which `retire` tries to collect (doubles while collections free
/// nothing, so a stalled reader cannot make retire quadratic).
const COLLECT_THRESHOLD_MIN: usize = 128;

/// Rounds `reclaim_blocking` waits for pinned threads before it gives up (yields, then
/// short sleeps: about two seconds in all).
const RECLAIM_ROUNDS_MAX: usize = 10_000;

struct Slab<T> {
    slots: Box<[T]>,
    /// Written by every allocation: kept off the line of `slots`, which lookups read.
    free: Padded<Mutex<FreeSlots>>,
}

/// A slab's free slots: those returned (a stack, reused most recent first) and those
/// never used (`fresh..count`), handed out in index order so that the memory a pool
/// touches grows with its use (see `slab_memory.rs`).
struct FreeSlots {
    returned: Vec<u32>,
    fresh: usize,
    count: usize,
}

impl<T: EmptySlots> Slab<T> {
    fn new(count: usize) -> Slab<T> {
        Slab { slots: T::empty_slots(count), free: Padded(Mutex::new(FreeSlots { returned: Vec::new(), fresh: 0, count })) }
    }

    fn pop(&self) -> Option<usize> {
        let mut free = lock(&self.free);
        if let Some(index) = free.returned.pop() {
            return Some(index as usize);
        }
        (free.fresh < free.count).then(|| {
            free.fresh += 1;
            free.fresh - 1
        })
    }

    fn push(&self, index: usize) {
        lock(&self.free).returned.push(index as u32);
    }

    fn free_count(&self) -> usize {
        let free = lock(&self.free);
        free.returned.len() + (free.count - free.fresh)
    }
}

struct Garbage {
    /// (retire epoch, node)
    queue: Vec<(u64, NodeRef)>,
    collect_at: usize,
    /// Nodes a collection has taken off `queue` and not yet pushed back on their free
    /// lists (it pushes them after releasing this lock). A waiter that finds the queue
    /// empty while this is not zero must wait for them too, or it gives up in the
    /// moment between another thread's take and its push.
    being_freed: usize,
}

/// Fixed node memory, carved up front (like PostgreSQL's shared memory), shared by
/// any number of trees. Node slots freed by trees return to it after an epoch grace period.
pub struct NodePool {
    leaves: Slab<Leaf>,
    node4s: Slab<Node4>,
    node16s: Slab<Node16>,
    node48s: Slab<Node48>,
    node256s: Slab<Node256>,
    used_bytes: Padded<AtomicUsize>,
    /// Slots returned to a free list since start-up, by anyone (a waiter's measure of
    /// progress: nodes another thread's collection freed count too).
    freed_total: Padded<AtomicUsize>,
    capacity_bytes: usize,
    pub(crate) epochs: Arc<EpochDomain>,
    garbage: Padded<Mutex<Garbage>>,
}

/// Slot sizes of the classes, in tag order (leaf, 4, 16, 48, 256).
fn class_bytes() -> [usize; 5] {
    [
        std::mem::size_of::<Leaf>(),
        std::mem::size_of::<Node4>(),
        std::mem::size_of::<Node16>(),
        std::mem::size_of::<Node48>(),
        std::mem::size_of::<Node256>(),
    ]
}

/// Slots per class that any forest holding `entries` entries in total can need in a
/// quiescent state: `entries` leaves, and of each inner kind at most
/// `entries / (children_min - 1)` nodes (README "The pool": every inner node with `c`
/// children accounts for `c - 1` of the entries).
fn class_slots(entries: usize) -> [usize; 5] {
    let per_kind = |kind: Kind| entries.div_ceil(kind.children_min() - 1);
    [entries, per_kind(Kind::N4), per_kind(Kind::N16), per_kind(Kind::N48), per_kind(Kind::N256)]
}

fn bytes_of(slots: [usize; 5]) -> usize {
    slots.iter().zip(class_bytes()).map(|(count, bytes)| count.saturating_mul(bytes)).fold(0usize, usize::saturating_add)
}

impl NodePool {
    /// A pool of at most `bytes` bytes of node memory.
    ///
    /// The bytes are split between the size classes as [`NodePool::worst_case_bytes`]
    /// splits them for the largest entry count that fits, so
    /// `NodePool::new(NodePool::worst_case_bytes(n, k))` holds any `n` entries. A pool
    /// smaller than the grace slack alone gets the same number of slots in every class.
    pub fn new(bytes: usize) -> Arc<NodePool> {
        let slack_bytes = bytes_of([GRACE_SLACK_SLOTS; 5]);
        let slots = if bytes < slack_bytes {
            [bytes / bytes_of([1; 5]); 5]
        } else {
            let (mut low, mut high) = (0usize, bytes / class_bytes()[0] + 1);
            while low < high {
                let middle = low + (high - low).div_ceil(2);
                if Self::worst_case_bytes(middle, super::node::KEY_LEN_MAX) <= bytes {
                    low = middle;
                } else {
                    high = middle - 1;
                }
            }
            class_slots(low).map(|count| count + GRACE_SLACK_SLOTS)
        };
        Self::with_class_slots(slots)
    }

    fn with_class_slots(slots: [usize; 5]) -> Arc<NodePool> {
        Arc::new(NodePool {
            leaves: Slab::new(slots[0]),
            node4s: Slab::new(slots[1]),
            node16s: Slab::new(slots[2]),
            node48s: Slab::new(slots[3]),
            node256s: Slab::new(slots[4]),
            used_bytes: Padded(AtomicUsize::new(0)),
            freed_total: Padded(AtomicUsize::new(0)),
            capacity_bytes: bytes_of(slots),
            epochs: EpochDomain::new(),
            garbage: Padded(Mutex::new(Garbage { queue: Vec::new(), collect_at: COLLECT_THRESHOLD_MIN, being_freed: 0 })),
        })
    }

    /// Bytes a tree needs in the worst case to hold `entries` keys of `key_len` bytes
    /// (every inner node at its smallest fill), so a caller can size the pool.
    ///
    /// The bound holds for any number of trees sharing the pool whose entries add up to
    /// `entries`, whatever their key lengths (`key_len` is accepted for the contract and
    /// does not lower the bound), and includes the grace-period slack of
    /// `GRACE_SLACK_SLOTS` slots per class.
    pub fn worst_case_bytes(entries: usize, key_len: usize) -> usize {
        debug_assert!((1..=super::node::KEY_LEN_MAX).contains(&key_len));
        bytes_of(class_slots(entries).map(|count| count.saturating_add(GRACE_SLACK_SLOTS)))
    }

    /// Bytes in use now: slots handed out, including retired slots still in their
    /// grace period (statistics, tests).
    pub fn used_bytes(&self) -> usize {
        self.used_bytes.load(Ordering::Relaxed)
    }

    /// Node memory carved at start-up, in bytes.
    pub fn capacity_bytes(&self) -> usize {
        self.capacity_bytes
    }

    /// Free slots per class `[leaf, node4, node16, node48, node256]` (statistics, tests).
    pub fn free_slots(&self) -> [usize; 5] {
        [
            self.leaves.free_count(),
            self.node4s.free_count(),
            self.node16s.free_count(),
            self.node48s.free_count(),
            self.node256s.free_count(),
        ]
    }

    pub(crate) fn pin(&self) -> Guard<'_> {
        self.epochs.pin()
    }

    // -- access -------------------------------------------------------------

    #[inline]
    pub(crate) fn leaf(&self, node: NodeRef) -> &Leaf {
        &self.leaves.slots[index_of(node)]
    }

    /// The inner node `node` names; `None` for a leaf or null reference.
    #[inline]
    pub(crate) fn inner(&self, node: NodeRef) -> Option<Inner<'_>> {
        let index = index_of(node);
        match tag_of(node) {
            TAG_N4 => Some(Inner::N4(&self.node4s.slots[index])),
            TAG_N16 => Some(Inner::N16(&self.node16s.slots[index])),
            TAG_N48 => Some(Inner::N48(&self.node48s.slots[index])),
            TAG_N256 => Some(Inner::N256(&self.node256s.slots[index])),
            _ => None,
        }
    }

    // -- allocation -----------------------------------------------------------

    fn class_index(tag: u64) -> usize {
        (tag - TAG_LEAF) as usize
    }

    fn slab_pop(&self, tag: u64) -> Option<usize> {
        match tag {
            TAG_LEAF => self.leaves.pop(),
            TAG_N4 => self.node4s.pop(),
            TAG_N16 => self.node16s.pop(),
            TAG_N48 => self.node48s.pop(),
            TAG_N256 => self.node256s.pop(),
            _ => None,
        }
    }

    fn allocate(&self, tag: u64, depth: usize) -> Result<NodeRef, OutOfNodeMemory> {
        let index = self.slab_pop(tag).ok_or(OutOfNodeMemory)?;
        self.used_bytes.fetch_add(class_bytes()[Self::class_index(tag)], Ordering::Relaxed);
        Ok(make_ref(tag, index, depth))
    }

    /// A fresh leaf holding `key` and `value` (not yet linked).
    pub(crate) fn allocate_leaf(&self, key: u128, value: u64) -> Result<NodeRef, OutOfNodeMemory> {
        let node = self.allocate(TAG_LEAF, 0)?;
        self.leaf(node).init(key, value);
        Ok(node)
    }

    /// A fresh, empty inner node of `kind` (not yet linked).
    pub(crate) fn allocate_inner(&self, kind: Kind, depth: usize, prefix: u128) -> Result<NodeRef, OutOfNodeMemory> {
        let node = self.allocate(kind.tag(), depth)?;
        if let Some(inner) = self.inner(node) {
            inner.init(depth, prefix);
        }
        Ok(node)
    }

    /// Returns a slot no thread can reach (never linked, or past its grace period, or
    /// the tree is being dropped).
    pub(crate) fn free_now(&self, node: NodeRef) {
        let tag = tag_of(node);
        let index = index_of(node);
        match tag {
            TAG_LEAF => self.leaves.push(index),
            TAG_N4 => self.node4s.push(index),
            TAG_N16 => self.node16s.push(index),
            TAG_N48 => self.node48s.push(index),
            TAG_N256 => self.node256s.push(index),
            _ => return,
        }
        self.used_bytes.fetch_sub(class_bytes()[Self::class_index(tag)], Ordering::Relaxed);
        self.freed_total.fetch_add(1, Ordering::Release);
    }

    /// Slots returned to free lists so far (see [`NodePool::reclaim_blocking`]).
    pub(crate) fn freed_total(&self) -> usize {
        self.freed_total.load(Ordering::Acquire)
    }

    // -- reclamation ------------------------------------------------------------

    /// Queues an unlinked node; it returns to its free list after the grace period.
    pub(crate) fn retire(&self, node: NodeRef) {
        let epoch = self.epochs.retire_epoch();
        let collect = {
            let mut garbage = lock(&self.garbage);
            garbage.queue.push((epoch, node));
            garbage.queue.len() >= garbage.collect_at
        };
        if collect {
            self.collect();
        }
    }

    /// Frees every queued node whose grace period is over; returns how many.
    pub(crate) fn collect(&self) -> usize {
        let epoch = self.epochs.try_advance();
        let ready: Vec<NodeRef> = {
            let mut garbage = lock(&self.garbage);
            let mut ready = Vec::new();
            garbage.queue.retain(|&(retired, node)| {
                if reusable_from(retired) <= epoch {
                    ready.push(node);
                    false
                } else {
                    true
                }
            });
            garbage.collect_at = if ready.is_empty() {
                garbage.collect_at.saturating_mul(2)
            } else {
                COLLECT_THRESHOLD_MIN.max(garbage.queue.len() * 2)
            };
            garbage.being_freed += ready.len();
            ready
        };
        for &node in &ready {
            self.free_now(node);
        }
        if !ready.is_empty() {
            lock(&self.garbage).being_freed -= ready.len();
        }
        ready.len()
    }

    /// Waits (yielding) until everything retired so far is reusable and back on its
    /// free list, whoever collects it. Called by a writer that found its class empty,
    /// after unpinning, with `since` = [`NodePool::freed_total`] before its attempt;
    /// returns how many slots anyone freed since then (0: waiting cannot help). Gives
    /// up after `RECLAIM_ROUNDS_MAX` rounds (a thread pinned for that long) or at once
    /// if the caller is still pinned in this pool (it would wait for itself).
    pub(crate) fn reclaim_blocking(&self, since: usize) -> usize {
        self.collect();
        if !self.epochs.is_pinned_here() {
            for round in 0..RECLAIM_ROUNDS_MAX {
                {
                    let garbage = lock(&self.garbage);
                    if garbage.queue.is_empty() && garbage.being_freed == 0 {
                        break;
                    }
                }
                super::sync::reclaim_wait(round);
                self.collect();
            }
        }
        self.freed_total().wrapping_sub(since)
    }

    /// Nodes retired and not yet reusable (statistics, tests).
    pub fn retired_nodes(&self) -> usize {
        lock(&self.garbage).queue.len()
    }
}

impl Drop for NodePool {
    fn drop(&mut self) {
        self.epochs.mark_dead();
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    /// A node retired while a thread is pinned is not reused until that thread unpins
    /// (README rule 8); after it unpins, two collections bring the slot back.
    #[test]
    fn retired_slot_waits_for_the_pinned_thread() {
        let pool = NodePool::new(NodePool::worst_case_bytes(0, 4) / 64 * 4);
        let leaf = pool.allocate_leaf(7, 7).unwrap();
        let free_before = pool.free_slots()[0];
        let guard = pool.pin();
        pool.retire(leaf);
        for _ in 0..10 {
            pool.collect();
        }
        assert_eq!(pool.free_slots()[0], free_before, "reused while a reader was pinned");
        assert_eq!(pool.reclaim_blocking(pool.freed_total()), 0, "a pinned thread must not wait for itself");
        drop(guard);
        pool.collect();
        pool.collect();
        pool.collect();
        assert_eq!(pool.free_slots()[0], free_before + 1);
        assert_eq!(pool.retired_nodes(), 0);
    }

    /// Another thread's pin holds reclamation back the same way.
    #[test]
    fn retired_slot_waits_for_another_pinned_thread() {
        let pool = NodePool::new(NodePool::worst_case_bytes(0, 4) / 64 * 4);
        let leaf = pool.allocate_leaf(7, 7).unwrap();
        let (pinned_sender, pinned_receiver) = std::sync::mpsc::channel();
        let (release_sender, release_receiver) = std::sync::mpsc::channel::<()>();
        let reader = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                let _guard = pool.pin();
                pinned_sender.send(()).unwrap();
                release_receiver.recv().unwrap();
            })
        };
        pinned_receiver.recv().unwrap();
        pool.retire(leaf);
        for _ in 0..10 {
            pool.collect();
        }
        assert_eq!(pool.retired_nodes(), 1);
        let since = pool.freed_total();
        release_sender.send(()).unwrap();
        reader.join().unwrap();
        assert_eq!(pool.reclaim_blocking(since), 1);
        assert_eq!(pool.retired_nodes(), 0);
    }
}
