//! The ART page table: a tree of trees (`buffer_mapping = art`).
//!
//! ```text
//!  outer OlcArt, 13-byte keys                 inner trees (one slot each)
//!  spc | db | rel (big-endian) | fork  ──▶  (generation << 32) | slot
//!                                             slots[slot].tree: OlcArt, 4-byte keys
//!                                             block (big-endian) ──▶ buffer id
//! ```
//!
//! The design follows the GSoC "artbufmgr" text (`seeds/004_*.txt`): the
//! outer tree is mostly read once it holds the relations in use, and the
//! path to a relation fork's inner tree is cached, so a lookup in the steady
//! state costs a thread-local probe, one atomic load and a walk of the inner
//! tree by the 4-byte block number. Both trees are `weft_art::olc::OlcArt`
//! (optimistic lock coupling: readers write no shared memory), and all their
//! nodes come from one fixed `NodePool` sized at start-up from
//! `shared_buffers`, as PostgreSQL's shared memory is fixed.
//!
//! # Slots and generations
//!
//! Inner trees live in a fixed array of slots allocated at start-up. A slot
//! is *attached* to a relation fork while the outer tree maps the fork's key
//! to it. Its state word is `generation (32) | RETIRING (1) | users (31)`:
//!
//! - A writer (insert, remove, listing) *enters* the slot with a CAS that
//!   checks the generation it expects and that RETIRING is clear, and
//!   *leaves* with a decrement. Lookups never enter: the mapping is a hint
//!   (the pool re-checks every buffer's tag under its header lock), so a
//!   lookup in a slot that was retired, or even re-attached to another fork,
//!   can only return a stale id or a false miss, both of which the pool
//!   handles by retrying.
//! - The thread that leaves last (users 1 → 0) and sees an empty tree
//!   *retires* the slot: a CAS from `(generation, 0 users)` to RETIRING
//!   (failing if anyone entered meanwhile: that thread will check when it
//!   leaves), a re-check that the tree is still empty, removal of the outer
//!   entry (`remove_if` with the exact value), then generation + 1 and the
//!   slot back on the free list. So an inner tree is never left empty and
//!   attached once its users are gone, and an insert can never land in a
//!   retired tree (it would have to enter with the old generation).
//! - A thread that finds the fork absent takes a free slot and publishes it
//!   with `insert_if_absent` in the outer tree; if another thread won, it
//!   gives its slot back and uses the winner's.
//!
//! After entering, a writer also checks the slot's recorded fork, so even a
//! 32-bit generation that wrapped around cannot send a write to another
//! fork's tree.
//!
//! # Path caching
//!
//! Each thread keeps a direct-mapped cache of `PATH_CACHE_ENTRIES` (mapping
//! instance, relation fork) → (slot, generation), validated on every use by
//! comparing the generation with the slot's state word. PostgreSQL would
//! keep the pointers in `SMgrRelation`; the pool's API passes buffer tags,
//! not relation handles, and a per-thread cache serves the same purpose
//! without changing every caller.
//!
//! Each entry also keeps up to `HINTS_PER_PATH` *last-level hints*: the
//! inner tree's node whose children are the buffer ids of 256 consecutive
//! blocks, with the version it had when it served this thread. A lookup
//! whose node is unchanged reads the child word straight from it
//! (`OlcArt::get_hinted`), skipping the walk from the root; any insert or
//! removal under that node changes its version and sends the next lookup
//! the long way. Hints are reset with their entry, since a hint is only
//! meaningful in the tree that gave it.
//!
//! # Memory and its worst case
//!
//! - Slots: `nbuffers + 2 * INSERTS_IN_FLIGHT_MAX`. An attached tree is
//!   non-empty except while a thread is inside it or between attaching and
//!   entering it, and its entries are buffers' tags or the new tag of an
//!   eviction in flight (inserted before the victim's old tag is removed),
//!   so attached slots <= nbuffers + in-flight insertions + threads inside.
//!   The slot array is fixed at that size but built `SLOT_CHUNK` slots at a
//!   time, when a slot of the chunk is first attached (`SlotArray`); slots are
//!   taken lowest first, so the few hundred forks of a typical pool build one
//!   chunk.
//! - Nodes: `NodePool::worst_case_bytes(inner + outer, 13)` with inner =
//!   `nbuffers + INSERTS_IN_FLIGHT_MAX` block entries and outer = the slot
//!   count: the OLC pool's bound holds for any forest whose entries add up
//!   to the count (every inner node at its smallest fill, plus the grace
//!   period's slack), so no distribution of pages over relations can exhaust
//!   it. Exhaustion (more than `INSERTS_IN_FLIGHT_MAX` threads between
//!   insert and re-tag at once) is reported as SQLSTATE 53200, never a panic.
//!
//! # Drop and truncate
//!
//! `fork_buffers` lists one inner tree (work proportional to the fork's
//! cached pages); the pool invalidates each buffer, which removes its entry,
//! and the last removal retires the tree.

use std::cell::Cell;

use weft_art::olc::{LastLevelHint, NodePool, OlcArt, OutOfNodeMemory};
use weft_common::{Error, Result, SqlState};

use super::BufferMapping;
use crate::sync::{AtomicU64, Mutex, Ordering};
use crate::{BlockNumber, BufferTag, ForkNumber, RelFileLocator};

/// Length of an outer key: tablespace, database, relation (4 bytes each, big-endian), fork.
pub const OUTER_KEY_BYTES: usize = 13;
/// Length of an inner key: the block number, big-endian.
pub const INNER_KEY_BYTES: usize = 4;
/// Threads that may be between the mapping insert of a new tag and the
/// removal of their victim's old tag at the same time (sizing assumption).
pub const INSERTS_IN_FLIGHT_MAX: usize = 1024;
/// Entries of each thread's path cache (direct-mapped, a power of two; 2 KiB a
/// thread). With 16 the 16 relations of the lookup bench collided on three entries
/// and a third of the lookups fell through to the outer tree.
pub const PATH_CACHE_ENTRIES: usize = 64;

const USERS_MASK: u64 = (1 << 31) - 1;
const RETIRING: u64 = 1 << 31;
const GENERATION_SHIFT: u32 = 32;

/// SQLSTATE 53200, `out_of_memory` (PostgreSQL's "out of shared memory").
const OUT_OF_MEMORY: SqlState = SqlState("53200");

fn out_of_shared_memory(what: &str) -> Error {
    Error::new(OUT_OF_MEMORY, "out of shared memory")
        .with_detail(format!("The ART buffer mapping has no free {what}."))
        .with_hint("More than INSERTS_IN_FLIGHT_MAX threads are evicting at once; use buffer_mapping = hash.")
}

fn outer_key(rel: RelFileLocator, fork: ForkNumber) -> [u8; OUTER_KEY_BYTES] {
    let mut key = [0u8; OUTER_KEY_BYTES];
    key[0..4].copy_from_slice(&rel.spc_oid.to_be_bytes());
    key[4..8].copy_from_slice(&rel.db_oid.to_be_bytes());
    key[8..12].copy_from_slice(&rel.rel_number.to_be_bytes());
    key[12] = fork as u8;
    key
}

/// The relation fork packed into two words, as a slot records it.
fn fork_words(rel: RelFileLocator, fork: ForkNumber) -> (u64, u64) {
    (((rel.spc_oid as u64) << 32) | rel.db_oid as u64, ((rel.rel_number as u64) << 8) | fork as u64)
}

fn generation_of(state: u64) -> u32 {
    (state >> GENERATION_SHIFT) as u32
}

fn outer_value(slot: u32, generation: u32) -> u64 {
    ((generation as u64) << GENERATION_SHIFT) | slot as u64
}

/// One inner tree and its synchronisation, on 128-byte blocks of its own, so that
/// writers of one slot do not disturb readers of its neighbours: the state and fork
/// words, then the tree (its root words, then its entry counter). 384 bytes; there can
/// be a slot per buffer (the worst case: every buffer a fork of its own).
#[repr(C, align(128))]
struct InnerSlot {
    /// `generation << 32 | RETIRING | users`.
    state: AtomicU64,
    /// The attached fork (`fork_words`); written before the slot is published.
    fork_high: AtomicU64,
    fork_low: AtomicU64,
    tree: OlcArt,
}

enum Enter {
    Entered,
    /// Being retired: try again in a moment.
    Retiring,
    /// Another generation: the path is stale.
    Stale,
}

impl InnerSlot {
    #[inline]
    fn generation(&self) -> u32 {
        generation_of(self.state.load(Ordering::Acquire))
    }

    fn enter(&self, generation: u32) -> Enter {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            if generation_of(state) != generation {
                return Enter::Stale;
            }
            if state & RETIRING != 0 {
                return Enter::Retiring;
            }
            debug_assert!(state & USERS_MASK < USERS_MASK);
            match self.state.compare_exchange_weak(state, state + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Enter::Entered,
                Err(actual) => state = actual,
            }
        }
    }

    fn holds(&self, words: (u64, u64)) -> bool {
        self.fork_high.load(Ordering::Relaxed) == words.0 && self.fork_low.load(Ordering::Relaxed) == words.1
    }
}

/// One entry of a thread's path cache.
#[derive(Clone, Copy)]
struct CachedPath {
    /// `ArtMapping::instance`; 0 = empty.
    instance: u64,
    fork: (u64, u64),
    slot: u32,
    generation: u32,
}

impl CachedPath {
    const EMPTY: CachedPath = CachedPath { instance: 0, fork: (0, 0), slot: 0, generation: 0 };
}

/// One entry of a thread's path cache and the last-level nodes of its inner tree
/// that served this thread's lookups, by `block >> 8` (direct-mapped): a lookup
/// whose node is unchanged skips the walk (`OlcArt::get_hinted`). The hints are
/// reset when the entry is refilled. Path and hints share one thread-local, so a
/// lookup computes one thread-local address and touches adjacent lines.
struct PathEntry {
    path: Cell<CachedPath>,
    hints: [Cell<LastLevelHint>; HINTS_PER_PATH],
}

impl PathEntry {
    const EMPTY: PathEntry =
        PathEntry { path: Cell::new(CachedPath::EMPTY), hints: [const { Cell::new(LastLevelHint::EMPTY) }; HINTS_PER_PATH] };
}

thread_local! {
    static PATH_CACHE: [PathEntry; PATH_CACHE_ENTRIES] = const { [PathEntry::EMPTY; PATH_CACHE_ENTRIES] };
}

/// Last-level hints per cached path: a fork of up to `256 * HINTS_PER_PATH` blocks
/// keeps one for each of its last-level nodes (B-tree roots and inner pages, the
/// low blocks of an index, share one).
const HINTS_PER_PATH: usize = 4;

/// Distinguishes mappings in the thread-local caches (never reused).
static NEXT_INSTANCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn cache_index(words: (u64, u64)) -> usize {
    let mixed = (words.1 ^ words.0.rotate_left(17)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (mixed >> (64 - PATH_CACHE_ENTRIES.trailing_zeros())) as usize
}

/// The tree-of-trees page table.
/// The inner-tree slots, one per buffer plus slack: a fixed array, built a chunk at a
/// time when a slot of the chunk is first attached. Slots are taken lowest first, so a
/// pool whose buffers belong to a few hundred forks builds one chunk, not a slot for
/// every buffer (384 bytes each, most of the mapping's memory if built up front).
struct SlotArray {
    chunks: Box<[std::sync::OnceLock<Box<[InnerSlot]>>]>,
    len: usize,
    pool: std::sync::Arc<NodePool>,
}

/// Slots per chunk (192 KiB).
const SLOT_CHUNK: usize = 512;

impl SlotArray {
    fn new(len: usize, pool: std::sync::Arc<NodePool>) -> SlotArray {
        SlotArray { chunks: (0..len.div_ceil(SLOT_CHUNK)).map(|_| std::sync::OnceLock::new()).collect(), len, pool }
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Slot `index`, its chunk built if this is the chunk's first use.
    #[inline]
    fn get(&self, index: usize) -> Option<&InnerSlot> {
        match self.get_built(index) {
            Some(slot) => Some(slot),
            None => self.build(index),
        }
    }

    /// Slot `index` if its chunk is built (every slot a path can name is: it was
    /// attached): the lookup's path, without the building branch.
    #[inline]
    fn get_built(&self, index: usize) -> Option<&InnerSlot> {
        self.chunks.get(index / SLOT_CHUNK)?.get()?.get(index % SLOT_CHUNK)
    }

    #[cold]
    fn build(&self, index: usize) -> Option<&InnerSlot> {
        if index >= self.len {
            return None;
        }
        let chunk = self.chunks[index / SLOT_CHUNK].get_or_init(|| {
            let first = index / SLOT_CHUNK * SLOT_CHUNK;
            (first..(first + SLOT_CHUNK).min(self.len))
                .map(|_| InnerSlot {
                    state: AtomicU64::new(0),
                    fork_high: AtomicU64::new(0),
                    fork_low: AtomicU64::new(0),
                    tree: OlcArt::new(INNER_KEY_BYTES, self.pool.clone()),
                })
                .collect()
        });
        chunk.get(index % SLOT_CHUNK)
    }

    /// The slots built so far, with their indexes.
    fn built(&self) -> impl Iterator<Item = (usize, &InnerSlot)> {
        self.chunks.iter().enumerate().filter_map(|(c, chunk)| chunk.get().map(|slots| (c, slots))).flat_map(|(c, slots)| {
            slots.iter().enumerate().map(move |(i, slot)| (c * SLOT_CHUNK + i, slot))
        })
    }
}

impl std::ops::Index<usize> for SlotArray {
    type Output = InnerSlot;

    #[inline]
    fn index(&self, index: usize) -> &InnerSlot {
        self.get(index).expect("slot index below the slot count")
    }
}

pub struct ArtMapping {
    instance: u64,
    pool: std::sync::Arc<NodePool>,
    outer: OlcArt,
    slots: SlotArray,
    /// Detached slots (a stack; slots are reused most-recent first).
    free: Mutex<Vec<u32>>,
}

impl ArtMapping {
    /// A page table for `nbuffers` buffers, its node memory carved now.
    pub fn new(nbuffers: usize) -> ArtMapping {
        let slot_count = Self::slot_count(nbuffers);
        let pool = NodePool::new(Self::node_pool_bytes(nbuffers));
        let slots = SlotArray::new(slot_count, pool.clone());
        ArtMapping {
            instance: NEXT_INSTANCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            outer: OlcArt::new(OUTER_KEY_BYTES, pool.clone()),
            pool,
            slots,
            free: Mutex::new((0..slot_count as u32).rev().collect()),
        }
    }

    /// Inner-tree slots for a pool of `nbuffers` buffers.
    pub fn slot_count(nbuffers: usize) -> usize {
        nbuffers + 2 * INSERTS_IN_FLIGHT_MAX
    }

    /// Node memory for a pool of `nbuffers` buffers: the worst case of the
    /// whole forest (block entries plus one outer entry per slot).
    pub fn node_pool_bytes(nbuffers: usize) -> usize {
        let entries = nbuffers + INSERTS_IN_FLIGHT_MAX + Self::slot_count(nbuffers);
        NodePool::worst_case_bytes(entries, OUTER_KEY_BYTES)
    }

    /// Node memory in use (including nodes in their grace period) and carved.
    pub fn node_bytes(&self) -> (usize, usize) {
        (self.pool.used_bytes(), self.pool.capacity_bytes())
    }

    /// The node pool (statistics, tests).
    pub fn node_pool(&self) -> &NodePool {
        &self.pool
    }

    /// Relation forks with an inner tree.
    pub fn inner_trees(&self) -> usize {
        self.outer.len()
    }

    /// The fork's (slot, generation) from this thread's cache or the outer
    /// tree, if the fork has an inner tree of the current generation.
    #[inline]
    fn find_path(&self, rel: RelFileLocator, fork: ForkNumber) -> Option<(u32, u32)> {
        let words = fork_words(rel, fork);
        PATH_CACHE.with(|cache| self.path_in(&cache[cache_index(words)], words, rel, fork))
            .map(|(slot, generation, _)| (slot, generation))
    }

    /// The fork's path from `entry` (its cache entry) if valid, else from the outer
    /// tree: (slot, generation) and the slot itself, read once.
    #[inline]
    fn path_in(&self, entry: &PathEntry, words: (u64, u64), rel: RelFileLocator, fork: ForkNumber) -> Option<(u32, u32, &InnerSlot)> {
        let cached = entry.path.get();
        if let Some(inner) = self.slots.get_built(cached.slot as usize) {
            if cached.instance == self.instance && cached.fork == words && inner.generation() == cached.generation {
                return Some((cached.slot, cached.generation, inner));
            }
        }
        let (slot, generation) = self.find_path_slow(entry, words, rel, fork)?;
        Some((slot, generation, self.slots.get(slot as usize)?))
    }

    #[cold]
    fn find_path_slow(&self, entry: &PathEntry, words: (u64, u64), rel: RelFileLocator, fork: ForkNumber) -> Option<(u32, u32)> {
        let value = self.outer.get(&outer_key(rel, fork))?;
        let (slot, generation) = (value as u32, (value >> GENERATION_SHIFT) as u32);
        if self.slots.get(slot as usize)?.generation() != generation {
            return None; // being retired
        }
        entry.path.set(CachedPath { instance: self.instance, fork: words, slot, generation });
        // The hints were of the entry's previous tree; a hint is valid only in its own.
        entry.hints.iter().for_each(|hint| hint.set(LastLevelHint::EMPTY));
        Some((slot, generation))
    }

    /// Enters the fork's inner tree, attaching a new one if `attach` and it
    /// has none. `Ok(None)`: the fork has no tree (and `attach` is false).
    fn enter_fork(&self, rel: RelFileLocator, fork: ForkNumber, attach: bool) -> Result<Option<u32>> {
        let words = fork_words(rel, fork);
        loop {
            let (slot, generation) = match self.find_path(rel, fork) {
                Some(path) => path,
                None if attach => self.attach(rel, fork)?,
                None => {
                    // Absent, or mid-retirement: in the latter case wait it out,
                    // since the tree may still hold entries until its re-check.
                    match self.outer.get(&outer_key(rel, fork)) {
                        None => return Ok(None),
                        Some(_) => {
                            std::thread::yield_now();
                            continue;
                        }
                    }
                }
            };
            let inner = &self.slots[slot as usize];
            match inner.enter(generation) {
                Enter::Entered if inner.holds(words) => return Ok(Some(slot)),
                Enter::Entered => self.leave(slot),
                Enter::Retiring => std::thread::yield_now(),
                Enter::Stale => {}
            }
        }
    }

    /// Takes a free slot and publishes it as the fork's inner tree; returns
    /// the path of whichever tree won.
    fn attach(&self, rel: RelFileLocator, fork: ForkNumber) -> Result<(u32, u32)> {
        let slot = self.free.lock().pop().ok_or_else(|| out_of_shared_memory("inner tree slot"))?;
        let inner = &self.slots[slot as usize];
        let (high, low) = fork_words(rel, fork);
        inner.fork_high.store(high, Ordering::Relaxed);
        inner.fork_low.store(low, Ordering::Relaxed);
        let generation = inner.generation();
        debug_assert!(inner.tree.is_empty() && inner.state.load(Ordering::Relaxed) & (USERS_MASK | RETIRING) == 0);
        match self.outer.insert_if_absent(&outer_key(rel, fork), outer_value(slot, generation)) {
            Ok(Ok(())) => Ok((slot, generation)),
            Ok(Err(existing)) => {
                self.free.lock().push(slot);
                Ok((existing as u32, (existing >> GENERATION_SHIFT) as u32))
            }
            Err(OutOfNodeMemory) => {
                self.free.lock().push(slot);
                Err(out_of_shared_memory("node memory"))
            }
        }
    }

    /// Leaves a slot entered with `enter_fork`; the last one out retires an empty tree.
    fn leave(&self, slot: u32) {
        let inner = &self.slots[slot as usize];
        let previous = inner.state.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(previous & USERS_MASK > 0);
        if previous & USERS_MASK == 1 && inner.tree.is_empty() {
            self.retire(slot, generation_of(previous));
        }
    }

    fn retire(&self, slot: u32, generation: u32) {
        let inner = &self.slots[slot as usize];
        let idle = (generation as u64) << GENERATION_SHIFT;
        if inner.state.compare_exchange(idle, idle | RETIRING, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return; // someone entered: they will check when they leave
        }
        if !inner.tree.is_empty() {
            inner.state.store(idle, Ordering::Release);
            return;
        }
        let words = (inner.fork_high.load(Ordering::Relaxed), inner.fork_low.load(Ordering::Relaxed));
        let key = outer_key_of_words(words);
        let removed = self.outer.remove_if(&key, outer_value(slot, generation));
        debug_assert!(removed, "attached slot {slot} not in the outer tree");
        let next = generation.wrapping_add(1);
        inner.state.store((next as u64) << GENERATION_SHIFT, Ordering::Release);
        self.free.lock().push(slot);
    }
}

fn outer_key_of_words(words: (u64, u64)) -> [u8; OUTER_KEY_BYTES] {
    let rel = RelFileLocator::new((words.0 >> 32) as u32, words.0 as u32, (words.1 >> 8) as u32);
    let mut key = outer_key(rel, ForkNumber::Main);
    key[12] = words.1 as u8;
    key
}

impl BufferMapping for ArtMapping {
    fn name(&self) -> &'static str {
        "art"
    }

    #[inline]
    fn lookup(&self, tag: &BufferTag) -> Option<usize> {
        let words = fork_words(tag.rel, tag.fork);
        PATH_CACHE.with(|cache| {
            let entry = &cache[cache_index(words)];
            let (_, _, inner) = self.path_in(entry, words, tag.rel, tag.fork)?;
            let cell = &entry.hints[(tag.block >> 8) as usize % HINTS_PER_PATH];
            let mut hint = cell.get();
            let found = inner.tree.get_hinted(&tag.block.to_be_bytes(), &mut hint);
            cell.set(hint);
            found.map(|id| id as usize)
        })
    }

    fn insert(&self, tag: BufferTag, buffer_id: usize) -> Result<std::result::Result<(), usize>> {
        let Some(slot) = self.enter_fork(tag.rel, tag.fork, true)? else {
            return Err(Error::internal("ART mapping: attach returned no tree"));
        };
        let outcome = self.slots[slot as usize].tree.insert_if_absent(&tag.block.to_be_bytes(), buffer_id as u64);
        self.leave(slot);
        match outcome {
            Ok(Ok(())) => Ok(Ok(())),
            Ok(Err(existing)) => Ok(Err(existing as usize)),
            Err(OutOfNodeMemory) => Err(out_of_shared_memory("node memory")),
        }
    }

    fn remove(&self, tag: &BufferTag, buffer_id: usize) -> bool {
        // Attaching never fails here (`attach` is false), so neither does this.
        let Ok(Some(slot)) = self.enter_fork(tag.rel, tag.fork, false) else { return false };
        let removed = self.slots[slot as usize].tree.remove_if(&tag.block.to_be_bytes(), buffer_id as u64);
        self.leave(slot);
        removed
    }

    fn lists_forks(&self) -> bool {
        true
    }

    fn fork_buffers(&self, rel: RelFileLocator, fork: ForkNumber) -> Option<Vec<(BlockNumber, usize)>> {
        let Ok(Some(slot)) = self.enter_fork(rel, fork, false) else { return Some(Vec::new()) };
        let tree = &self.slots[slot as usize].tree;
        let mut entries = Vec::with_capacity(tree.len());
        tree.for_each(|key, id| {
            let block = BlockNumber::from_be_bytes(key.try_into().expect("inner keys are 4 bytes"));
            entries.push((block, id as usize));
        });
        self.leave(slot);
        Some(entries)
    }

    fn len(&self) -> usize {
        let mut total = 0;
        self.outer.for_each(|_, value| total += self.slots[value as u32 as usize].tree.len());
        total
    }

    fn verify(&self) -> std::result::Result<(), String> {
        self.outer.verify().map_err(|e| format!("outer tree: {e}"))?;
        let mut attached = vec![false; self.slots.len()];
        let mut failure = None;
        self.outer.for_each(|key, value| {
            if failure.is_some() {
                return;
            }
            let (slot, generation) = (value as u32 as usize, (value >> GENERATION_SHIFT) as u32);
            let Some(inner) = self.slots.get(slot) else {
                failure = Some(format!("outer entry {key:?} names slot {slot} of {}", self.slots.len()));
                return;
            };
            let state = inner.state.load(Ordering::Acquire);
            let words = (inner.fork_high.load(Ordering::Relaxed), inner.fork_low.load(Ordering::Relaxed));
            failure = if generation_of(state) != generation || state & (USERS_MASK | RETIRING) != 0 {
                Some(format!("slot {slot}: state {state:#x}, outer says generation {generation}"))
            } else if outer_key_of_words(words) != key {
                Some(format!("slot {slot} records another fork than its outer key {key:?}"))
            } else if inner.tree.is_empty() {
                Some(format!("slot {slot} ({key:?}) is attached but empty"))
            } else {
                inner.tree.verify().err().map(|e| format!("inner tree of slot {slot}: {e}"))
            };
            attached[slot] = true;
        });
        if let Some(failure) = failure {
            return Err(failure);
        }
        let free = self.free.lock();
        if free.len() + self.outer.len() != self.slots.len() {
            return Err(format!("{} free + {} attached slots of {}", free.len(), self.outer.len(), self.slots.len()));
        }
        let mut is_free = vec![false; self.slots.len()];
        for &slot in free.iter() {
            is_free[slot as usize] = true;
        }
        // Slots never built are empty and detached by construction.
        for (slot, inner) in self.slots.built() {
            if is_free[slot] && (attached[slot] || !inner.tree.is_empty() || inner.state.load(Ordering::Acquire) & (USERS_MASK | RETIRING) != 0) {
                return Err(format!("free slot {slot} is attached, in use or not empty"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_keys_round_trip_and_sort_by_relation_then_fork() {
        let rel = RelFileLocator::new(1663, 5, 16384);
        for fork in ForkNumber::ALL {
            assert_eq!(outer_key_of_words(fork_words(rel, fork)), outer_key(rel, fork));
        }
        assert!(outer_key(rel, ForkNumber::Init) < outer_key(RelFileLocator::new(1663, 5, 16385), ForkNumber::Main));
    }

    /// The slot array is a slot per buffer: its size is part of the mapping's memory.
    #[test]
    fn an_inner_slot_is_three_blocks() {
        assert_eq!(std::mem::size_of::<InnerSlot>(), 384);
    }

    /// The node pool grows linearly with the buffer count (the worst case per
    /// buffer is a constant), printed for the README.
    #[test]
    fn node_pool_is_linear_in_buffers() {
        let per_buffer = |n: usize| ArtMapping::node_pool_bytes(n) as f64 / n as f64;
        for n in [16_384usize, 131_072, 1_048_576] {
            println!("nbuffers {n}: node pool {} MB ({:.0} bytes per buffer)", ArtMapping::node_pool_bytes(n) >> 20, per_buffer(n));
        }
        let (small, large) = (per_buffer(131_072), per_buffer(1_048_576));
        assert!(large <= small && large > small * 0.9, "{small} vs {large}");
    }
}
