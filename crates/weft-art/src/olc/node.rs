//! Node layouts, the version word, and the per-kind child operations.
//!
//! Every field of every node is an atomic (from [`super::sync`]): readers read nodes
//! while a writer that holds the node's lock changes them, and in Rust such racing
//! accesses must be atomic to be defined. The loads on the read path are `Relaxed` or
//! `Acquire`, which on x86-64 and AArch64 are plain loads; nothing here needs `unsafe`.
//!
//! A value read optimistically may be stale or belong to a half-done change; it is
//! never trusted before the node's version has been validated, and every index derived
//! from such a value is bounds-checked or masked, so a torn read can cost a restart,
//! never a panic.
//!
//! # Keys
//! A key of `key_len <= 16` bytes is held as a `u128` with the key's bytes left-aligned
//! (byte 0 in the top 8 bits) and zeros after `key_len`; comparing two such integers
//! compares the keys as big-endian byte strings.
//!
//! # Node layout (sizes checked at compile time for normal builds)
//! | kind     | bytes | children | contents after the 32-byte header |
//! |----------|------:|----------|-----------------------------------|
//! | Leaf     |    24 | -        | key (2 words), value              |
//! | Node4    |    72 | 2..=4    | 4 key bytes in one word, 4 child words |
//! | Node16   |   176 | 4..=16   | 16 key bytes in two words, 16 child words |
//! | Node48   |   672 | 13..=48  | 256-byte child index, 48 child words |
//! | Node256  |  2080 | 38..=256 | 256 child words                    |
//!
//! The header: version word, meta word (depth in bits 0..8, child count in bits
//! 8..24), and the node's key prefix (the first `depth` bytes shared by every key below
//! the node, as a left-aligned `u128` in two words). Storing the whole prefix rather
//! than only the compressed part makes a node's depth and prefix immutable for its
//! lifetime: inserting a node above it or collapsing its parent never rewrites it.

use super::sync::{fence, AtomicU64, AtomicU8, Ordering};

/// An optimistic read saw a locked-then-changed or obsolete node: start over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Restart;

// ---------------------------------------------------------------------------
// Node references
// ---------------------------------------------------------------------------

/// A child word: 0 is "no child"; an inline value (below); otherwise
/// `(slot index << 7) | (depth << 3) | tag`, where `depth` is the inner node's depth
/// (0 for leaves). Carrying the (immutable) depth in the word lets a lookup compute
/// the child word's address without waiting for the node's header: the two cache
/// misses of a large node overlap instead of following each other.
pub(crate) type NodeRef = u64;
pub(crate) const NULL_REF: NodeRef = 0;
pub(crate) const TAG_LEAF: u64 = 1;
pub(crate) const TAG_N4: u64 = 2;
pub(crate) const TAG_N16: u64 = 3;
pub(crate) const TAG_N48: u64 = 4;
pub(crate) const TAG_N256: u64 = 5;
/// An inline value: `(value << 3) | TAG_VALUE`, only in a node at depth `key_len - 1`
/// (the key is then the node's prefix plus the child's byte; README rule 10).
pub(crate) const TAG_VALUE: u64 = 6;
const TAG_MASK: u64 = 7;

/// The largest value a child word can hold inline (61 bits); larger ones get a leaf.
pub(crate) const INLINE_VALUE_MAX: u64 = (1 << 61) - 1;

/// The child word holding `value` inline, if it fits.
#[inline]
pub(crate) fn inline_word(value: u64) -> Option<NodeRef> {
    (value <= INLINE_VALUE_MAX).then_some((value << 3) | TAG_VALUE)
}

#[inline]
pub(crate) fn inline_value(word: NodeRef) -> u64 {
    word >> 3
}

#[inline]
pub(crate) fn tag_of(node: NodeRef) -> u64 {
    node & TAG_MASK
}

#[inline]
pub(crate) fn index_of(node: NodeRef) -> usize {
    (node >> 7) as usize
}

/// The depth of the inner node `node` names, from the word itself.
#[inline]
pub(crate) fn depth_of(node: NodeRef) -> usize {
    ((node >> 3) & 15) as usize
}

#[inline]
pub(crate) fn make_ref(tag: u64, index: usize, depth: usize) -> NodeRef {
    ((index as u64) << 7) | (((depth & 15) as u64) << 3) | tag
}

// ---------------------------------------------------------------------------
// Keys as left-aligned u128
// ---------------------------------------------------------------------------

/// The longest key the tree takes.
pub(crate) const KEY_LEN_MAX: usize = 16;

#[inline]
pub(crate) fn key_from_bytes(bytes: &[u8]) -> u128 {
    // Whole words where possible: copying into a stack buffer and reading it back as
    // two words costs a store-forwarding stall on every lookup.
    let bytes = &bytes[..bytes.len().min(KEY_LEN_MAX)];
    if let Ok(whole) = <[u8; KEY_LEN_MAX]>::try_from(bytes) {
        return u128::from_be_bytes(whole);
    }
    let (mut key, tail) = if let Some((head, tail)) = bytes.split_first_chunk::<8>() {
        ((u64::from_be_bytes(*head) as u128) << 64, tail)
    } else if let Some((head, tail)) = bytes.split_first_chunk::<4>() {
        ((u32::from_be_bytes(*head) as u128) << 96, tail)
    } else {
        (0u128, bytes)
    };
    let start = bytes.len() - tail.len();
    for (offset, &byte) in tail.iter().enumerate() {
        key |= (byte as u128) << (120 - 8 * (start + offset));
    }
    key
}

/// Byte `index` (0-based) of a key; `index` is masked to 0..16 so a torn depth cannot panic.
#[inline]
pub(crate) fn key_byte(key: u128, index: usize) -> u8 {
    (key >> (120 - 8 * (index & 15))) as u8
}

/// Mask of the first `len` bytes (`len <= 16`).
#[inline]
pub(crate) fn prefix_mask(len: usize) -> u128 {
    if len == 0 {
        0
    } else if len >= 16 {
        u128::MAX
    } else {
        u128::MAX << (128 - 8 * len)
    }
}

/// The key `prefix` (first `depth` bytes) followed by `byte` at `depth`.
#[inline]
pub(crate) fn key_with_byte(prefix: u128, depth: usize, byte: u8) -> u128 {
    (prefix & prefix_mask(depth)) | ((byte as u128) << (120 - 8 * (depth & 15)))
}

/// Index of the first byte where two keys differ (16 when equal).
#[inline]
pub(crate) fn first_difference(a: u128, b: u128) -> usize {
    ((a ^ b).leading_zeros() / 8) as usize
}

// ---------------------------------------------------------------------------
// The version word
// ---------------------------------------------------------------------------
//
// bit 0: obsolete (the node was unlinked; it stays so until its slot is reused)
// bit 1: locked (one writer owns the node)
// bits 2..: a counter bumped by every unlock
//
// Writers: `try_upgrade` (CAS from a version read earlier), then changes, then
// `write_unlock` or `write_unlock_obsolete`. Readers: `read_lock` (wait while
// locked, fail when obsolete), reads, `validate`.

pub(crate) const OBSOLETE_BIT: u64 = 1;
pub(crate) const LOCKED_BIT: u64 = 2;

/// Reads the version for an optimistic read: waits while a writer holds the node,
/// fails with [`Restart`] if the node is obsolete.
#[inline]
pub(crate) fn read_lock(version: &AtomicU64) -> Result<u64, Restart> {
    let mut iteration = 0u32;
    loop {
        let word = version.load(Ordering::Acquire);
        if word & OBSOLETE_BIT != 0 {
            return Err(Restart);
        }
        if word & LOCKED_BIT == 0 {
            return Ok(word);
        }
        super::sync::spin_wait(&mut iteration);
    }
}

/// Succeeds if nothing changed the node since `read_lock` returned `seen`.
#[inline]
pub(crate) fn validate(version: &AtomicU64, seen: u64) -> Result<(), Restart> {
    fence(Ordering::Acquire);
    if version.load(Ordering::Relaxed) == seen {
        Ok(())
    } else {
        Err(Restart)
    }
}

/// Turns an optimistic read (version `seen`) into the write lock, if nothing changed.
#[inline]
pub(crate) fn try_upgrade(version: &AtomicU64, seen: u64) -> Result<(), Restart> {
    match version.compare_exchange(seen, seen + LOCKED_BIT, Ordering::Acquire, Ordering::Relaxed) {
        Ok(_) => {
            // Orders the lock before the data stores that follow (seqlock writer rule):
            // a reader that sees any of them sees the version changed.
            fence(Ordering::Release);
            Ok(())
        }
        Err(_) => Err(Restart),
    }
}

/// Takes the write lock, waiting for another writer to let go (used only by
/// `remove_prefix`, top-down below nodes it already holds; see README, rule 6).
/// Returns false if the node is obsolete (it was not locked then).
pub(crate) fn lock_blocking(version: &AtomicU64) -> bool {
    let mut iteration = 0u32;
    loop {
        let word = version.load(Ordering::Acquire);
        if word & OBSOLETE_BIT != 0 {
            return false;
        }
        if word & LOCKED_BIT == 0 && try_upgrade(version, word).is_ok() {
            return true;
        }
        super::sync::spin_wait(&mut iteration);
    }
}

#[inline]
pub(crate) fn write_unlock(version: &AtomicU64) {
    version.fetch_add(LOCKED_BIT, Ordering::Release);
}

#[inline]
pub(crate) fn write_unlock_obsolete(version: &AtomicU64) {
    version.fetch_add(LOCKED_BIT + OBSOLETE_BIT, Ordering::Release);
}

// ---------------------------------------------------------------------------
// Node structs
// ---------------------------------------------------------------------------

#[cfg_attr(not(feature = "shuttle"), allow(dead_code))] // slots are zeroed memory outside shuttle (slab_memory.rs)
fn atomic_words<const N: usize>() -> [AtomicU64; N] {
    std::array::from_fn(|_| AtomicU64::new(0))
}

/// The common header of inner nodes.
pub(crate) struct Header {
    pub(crate) version: AtomicU64,
    /// depth (bits 0..8) | count (bits 8..24)
    meta: AtomicU64,
    prefix_high: AtomicU64,
    prefix_low: AtomicU64,
}

impl Header {
    #[cfg_attr(not(feature = "shuttle"), allow(dead_code))] // slots are zeroed memory outside shuttle (slab_memory.rs)
    fn new() -> Header {
        Header {
            version: AtomicU64::new(0),
            meta: AtomicU64::new(0),
            prefix_high: AtomicU64::new(0),
            prefix_low: AtomicU64::new(0),
        }
    }

    /// Prepares a slot taken from the pool: version advanced and unlocked, not
    /// obsolete; depth, prefix (masked to `depth` bytes), count 0.
    fn init(&self, depth: usize, prefix: u128) {
        let old = self.version.load(Ordering::Relaxed);
        self.version.store((old | (OBSOLETE_BIT | LOCKED_BIT)) + 1, Ordering::Relaxed);
        let prefix = prefix & prefix_mask(depth);
        self.prefix_high.store((prefix >> 64) as u64, Ordering::Relaxed);
        self.prefix_low.store(prefix as u64, Ordering::Relaxed);
        self.meta.store(depth as u64, Ordering::Relaxed);
    }

    /// The byte position this node branches on (immutable while the node is linked).
    #[inline]
    pub(crate) fn depth(&self) -> usize {
        (self.meta.load(Ordering::Relaxed) & 0xff) as usize
    }

    #[inline]
    pub(crate) fn count(&self) -> usize {
        ((self.meta.load(Ordering::Relaxed) >> 8) & 0xffff) as usize
    }

    #[inline]
    fn set_count(&self, count: usize) {
        let meta = self.meta.load(Ordering::Relaxed);
        self.meta.store((meta & 0xff) | ((count as u64) << 8), Ordering::Relaxed);
    }

    /// The first `depth` bytes of every key below this node (immutable while linked).
    #[inline]
    pub(crate) fn prefix(&self) -> u128 {
        let high = self.prefix_high.load(Ordering::Relaxed) as u128;
        let low = self.prefix_low.load(Ordering::Relaxed) as u128;
        (high << 64) | low
    }
}

/// A leaf: the full key (lazy expansion) and the value. The key is written before the
/// leaf is linked and not changed until the slot is reused after a grace period; the
/// value changes only under the lock of the node (or root slot) that points to it.
pub(crate) struct Leaf {
    key_high: AtomicU64,
    key_low: AtomicU64,
    pub(crate) value: AtomicU64,
}

impl Leaf {
    #[cfg_attr(not(feature = "shuttle"), allow(dead_code))] // slots are zeroed memory outside shuttle (slab_memory.rs)
    pub(crate) fn new() -> Leaf {
        Leaf { key_high: AtomicU64::new(0), key_low: AtomicU64::new(0), value: AtomicU64::new(0) }
    }

    pub(crate) fn init(&self, key: u128, value: u64) {
        self.key_high.store((key >> 64) as u64, Ordering::Relaxed);
        self.key_low.store(key as u64, Ordering::Relaxed);
        self.value.store(value, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn key(&self) -> u128 {
        let high = self.key_high.load(Ordering::Relaxed) as u128;
        let low = self.key_low.load(Ordering::Relaxed) as u128;
        (high << 64) | low
    }

    #[inline]
    pub(crate) fn value(&self) -> u64 {
        self.value.load(Ordering::Acquire)
    }
}

const BYTES_ONES: u64 = 0x0101_0101_0101_0101;
const BYTES_HIGHS: u64 = 0x8080_8080_8080_8080;

/// Node4 (`CAPACITY = 4, WORDS = 1`) and Node16 (`16, 2`): sorted key bytes packed in
/// words (byte `i` at bits `8*(i%8)` of word `i/8`) and a parallel child array.
pub(crate) struct SmallNode<const CAPACITY: usize, const WORDS: usize> {
    pub(crate) header: Header,
    keys: [AtomicU64; WORDS],
    children: [AtomicU64; CAPACITY],
}

pub(crate) type Node4 = SmallNode<4, 1>;
pub(crate) type Node16 = SmallNode<16, 2>;

impl<const CAPACITY: usize, const WORDS: usize> SmallNode<CAPACITY, WORDS> {
    #[cfg_attr(not(feature = "shuttle"), allow(dead_code))] // slots are zeroed memory outside shuttle (slab_memory.rs)
    pub(crate) fn new() -> Self {
        SmallNode { header: Header::new(), keys: atomic_words(), children: atomic_words() }
    }

    fn init(&self, depth: usize, prefix: u128) {
        self.header.init(depth, prefix);
    }

    #[inline]
    fn key_at(&self, index: usize) -> u8 {
        let index = index % CAPACITY;
        (self.keys[index / 8].load(Ordering::Relaxed) >> (8 * (index % 8))) as u8
    }

    fn load_keys(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        for (word_index, word) in self.keys.iter().enumerate() {
            let bytes = word.load(Ordering::Relaxed).to_le_bytes();
            out[word_index * 8..word_index * 8 + 8].copy_from_slice(&bytes);
        }
        out
    }

    fn store_keys(&self, keys: &[u8; 16]) {
        for (word_index, word) in self.keys.iter().enumerate() {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&keys[word_index * 8..word_index * 8 + 8]);
            word.store(u64::from_le_bytes(bytes), Ordering::Relaxed);
        }
    }

    /// Position of `byte` among the first `count` keys (SWAR: the lowest zero byte of
    /// `word ^ broadcast(byte)` found by the has-zero-byte trick is exact).
    #[inline]
    fn position(&self, byte: u8) -> Option<usize> {
        let count = self.header.count().min(CAPACITY);
        let pattern = BYTES_ONES.wrapping_mul(byte as u64);
        for (word_index, word) in self.keys.iter().enumerate() {
            if word_index * 8 >= count {
                break;
            }
            let x = word.load(Ordering::Relaxed) ^ pattern;
            let zero = x.wrapping_sub(BYTES_ONES) & !x & BYTES_HIGHS;
            if zero != 0 {
                let index = word_index * 8 + (zero.trailing_zeros() / 8) as usize;
                return if index < count { Some(index) } else { None };
            }
        }
        None
    }

    #[inline]
    fn find(&self, byte: u8) -> NodeRef {
        match self.position(byte) {
            Some(index) => self.children[index].load(Ordering::Acquire),
            None => NULL_REF,
        }
    }

    fn insert(&self, byte: u8, child: NodeRef) {
        let count = self.header.count();
        debug_assert!(count < CAPACITY);
        let mut keys = self.load_keys();
        let mut at = 0;
        while at < count && keys[at] < byte {
            at += 1;
        }
        let mut index = count;
        while index > at {
            keys[index] = keys[index - 1];
            let moved = self.children[index - 1].load(Ordering::Relaxed);
            self.children[index].store(moved, Ordering::Release);
            index -= 1;
        }
        keys[at] = byte;
        self.children[at].store(child, Ordering::Release);
        self.store_keys(&keys);
        self.header.set_count(count + 1);
    }

    fn replace(&self, byte: u8, child: NodeRef) -> bool {
        match self.position(byte) {
            Some(index) => {
                self.children[index].store(child, Ordering::Release);
                true
            }
            None => false,
        }
    }

    fn remove(&self, byte: u8) -> bool {
        let Some(at) = self.position(byte) else { return false };
        let count = self.header.count();
        let mut keys = self.load_keys();
        for index in at..count - 1 {
            keys[index] = keys[index + 1];
            let moved = self.children[index + 1].load(Ordering::Relaxed);
            self.children[index].store(moved, Ordering::Release);
        }
        keys[count - 1] = 0;
        self.children[count - 1].store(NULL_REF, Ordering::Release);
        self.store_keys(&keys);
        self.header.set_count(count - 1);
        true
    }

    /// The first child whose byte is `>= from` (`from <= 256`).
    fn next_child(&self, from: usize) -> Option<(u8, NodeRef)> {
        let count = self.header.count().min(CAPACITY);
        for index in 0..count {
            let byte = self.key_at(index);
            if byte as usize >= from {
                return Some((byte, self.children[index].load(Ordering::Acquire)));
            }
        }
        None
    }
}

/// Node48: a 256-entry index (0 = none, else slot + 1) into 48 child words; unused
/// child words are 0.
pub(crate) struct Node48 {
    pub(crate) header: Header,
    index: [AtomicU8; 256],
    children: [AtomicU64; 48],
}

impl Node48 {
    #[cfg_attr(not(feature = "shuttle"), allow(dead_code))] // slots are zeroed memory outside shuttle (slab_memory.rs)
    pub(crate) fn new() -> Node48 {
        Node48 {
            header: Header::new(),
            index: std::array::from_fn(|_| AtomicU8::new(0)),
            children: atomic_words(),
        }
    }

    fn init(&self, depth: usize, prefix: u128) {
        self.header.init(depth, prefix);
        for entry in &self.index {
            entry.store(0, Ordering::Relaxed);
        }
        for child in &self.children {
            child.store(NULL_REF, Ordering::Relaxed);
        }
    }

    #[inline]
    fn find(&self, byte: u8) -> NodeRef {
        let slot = self.index[byte as usize].load(Ordering::Relaxed) as usize;
        if slot == 0 || slot > 48 {
            return NULL_REF;
        }
        self.children[slot - 1].load(Ordering::Acquire)
    }

    fn insert(&self, byte: u8, child: NodeRef) {
        let count = self.header.count();
        debug_assert!(count < 48);
        let free = self
            .children
            .iter()
            .position(|word| word.load(Ordering::Relaxed) == NULL_REF)
            .expect("Node48 with count < 48 has a free child word");
        self.children[free].store(child, Ordering::Release);
        self.index[byte as usize].store(free as u8 + 1, Ordering::Relaxed);
        self.header.set_count(count + 1);
    }

    fn replace(&self, byte: u8, child: NodeRef) -> bool {
        let slot = self.index[byte as usize].load(Ordering::Relaxed) as usize;
        if slot == 0 {
            return false;
        }
        self.children[slot - 1].store(child, Ordering::Release);
        true
    }

    fn remove(&self, byte: u8) -> bool {
        let slot = self.index[byte as usize].load(Ordering::Relaxed) as usize;
        if slot == 0 {
            return false;
        }
        self.index[byte as usize].store(0, Ordering::Relaxed);
        self.children[slot - 1].store(NULL_REF, Ordering::Release);
        self.header.set_count(self.header.count() - 1);
        true
    }

    fn next_child(&self, from: usize) -> Option<(u8, NodeRef)> {
        for byte in from..256 {
            let slot = self.index[byte].load(Ordering::Relaxed) as usize;
            if slot != 0 && slot <= 48 {
                return Some((byte as u8, self.children[slot - 1].load(Ordering::Acquire)));
            }
        }
        None
    }

    /// Quiescent check of the index/child-word correspondence.
    fn check_index(&self) -> Result<(), String> {
        let mut used = [false; 48];
        let mut count = 0;
        for byte in 0..256 {
            let slot = self.index[byte].load(Ordering::Relaxed) as usize;
            if slot == 0 {
                continue;
            }
            if slot > 48 {
                return Err(format!("Node48 index[{byte}] = {slot} out of range"));
            }
            if used[slot - 1] {
                return Err(format!("Node48 child word {} indexed twice", slot - 1));
            }
            used[slot - 1] = true;
            if self.children[slot - 1].load(Ordering::Relaxed) == NULL_REF {
                return Err(format!("Node48 index[{byte}] points at an empty child word"));
            }
            count += 1;
        }
        for (word, in_use) in used.iter().enumerate() {
            if !in_use && self.children[word].load(Ordering::Relaxed) != NULL_REF {
                return Err(format!("Node48 child word {word} is set but not indexed"));
            }
        }
        if count != self.header.count() {
            return Err(format!("Node48 count {} but {count} indexed children", self.header.count()));
        }
        Ok(())
    }
}

/// Node256: one child word per byte value.
pub(crate) struct Node256 {
    pub(crate) header: Header,
    children: [AtomicU64; 256],
}

impl Node256 {
    #[cfg_attr(not(feature = "shuttle"), allow(dead_code))] // slots are zeroed memory outside shuttle (slab_memory.rs)
    pub(crate) fn new() -> Node256 {
        Node256 { header: Header::new(), children: atomic_words() }
    }

    fn init(&self, depth: usize, prefix: u128) {
        self.header.init(depth, prefix);
        for child in &self.children {
            child.store(NULL_REF, Ordering::Relaxed);
        }
    }

    #[inline]
    fn find(&self, byte: u8) -> NodeRef {
        self.children[byte as usize].load(Ordering::Acquire)
    }

    fn insert(&self, byte: u8, child: NodeRef) {
        self.children[byte as usize].store(child, Ordering::Release);
        self.header.set_count(self.header.count() + 1);
    }

    fn replace(&self, byte: u8, child: NodeRef) -> bool {
        if self.children[byte as usize].load(Ordering::Relaxed) == NULL_REF {
            return false;
        }
        self.children[byte as usize].store(child, Ordering::Release);
        true
    }

    fn remove(&self, byte: u8) -> bool {
        if self.children[byte as usize].load(Ordering::Relaxed) == NULL_REF {
            return false;
        }
        self.children[byte as usize].store(NULL_REF, Ordering::Release);
        self.header.set_count(self.header.count() - 1);
        true
    }

    fn next_child(&self, from: usize) -> Option<(u8, NodeRef)> {
        for byte in from..256 {
            let child = self.children[byte].load(Ordering::Acquire);
            if child != NULL_REF {
                return Some((byte as u8, child));
            }
        }
        None
    }
}

#[cfg(not(feature = "shuttle"))]
const _: () = {
    assert!(std::mem::size_of::<Leaf>() == 24);
    assert!(std::mem::size_of::<Node4>() == 72);
    assert!(std::mem::size_of::<Node16>() == 176);
    assert!(std::mem::size_of::<Node48>() == 672);
    assert!(std::mem::size_of::<Node256>() == 2080);
};

// ---------------------------------------------------------------------------
// Dispatch over the inner kinds
// ---------------------------------------------------------------------------

/// A borrowed inner node of any kind.
#[derive(Clone, Copy)]
pub(crate) enum Inner<'a> {
    N4(&'a Node4),
    N16(&'a Node16),
    N48(&'a Node48),
    N256(&'a Node256),
}

/// Inner node kinds, smallest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    N4,
    N16,
    N48,
    N256,
}

impl Kind {
    pub(crate) fn capacity(self) -> usize {
        match self {
            Kind::N4 => 4,
            Kind::N16 => 16,
            Kind::N48 => 48,
            Kind::N256 => 256,
        }
    }

    /// The fewest children a node of this kind has in a quiescent tree (README rule 3):
    /// a Node4 collapses at one child; the others shrink when a removal leaves
    /// `shrink_at` children, so they hold at least `shrink_at + 1`.
    pub(crate) fn children_min(self) -> usize {
        match self {
            Kind::N4 => 2,
            _ => self.shrink_at() + 1,
        }
    }

    /// A removal that leaves this many children replaces the node by the next
    /// smaller kind (hysteresis: a grow needs capacity + 1).
    pub(crate) fn shrink_at(self) -> usize {
        match self {
            Kind::N4 => 1,
            Kind::N16 => 3,
            Kind::N48 => 12,
            Kind::N256 => 37,
        }
    }

    /// The smallest kind that holds `children` children.
    pub(crate) fn fitting(children: usize) -> Kind {
        match children {
            0..=4 => Kind::N4,
            5..=16 => Kind::N16,
            17..=48 => Kind::N48,
            _ => Kind::N256,
        }
    }

    pub(crate) fn larger(self) -> Option<Kind> {
        match self {
            Kind::N4 => Some(Kind::N16),
            Kind::N16 => Some(Kind::N48),
            Kind::N48 => Some(Kind::N256),
            Kind::N256 => None,
        }
    }

    pub(crate) fn tag(self) -> u64 {
        match self {
            Kind::N4 => TAG_N4,
            Kind::N16 => TAG_N16,
            Kind::N48 => TAG_N48,
            Kind::N256 => TAG_N256,
        }
    }
}

impl<'a> Inner<'a> {
    #[inline]
    pub(crate) fn header(self) -> &'a Header {
        match self {
            Inner::N4(node) => &node.header,
            Inner::N16(node) => &node.header,
            Inner::N48(node) => &node.header,
            Inner::N256(node) => &node.header,
        }
    }

    pub(crate) fn kind(self) -> Kind {
        match self {
            Inner::N4(_) => Kind::N4,
            Inner::N16(_) => Kind::N16,
            Inner::N48(_) => Kind::N48,
            Inner::N256(_) => Kind::N256,
        }
    }

    /// Resets a fresh slot: depth, prefix, no children.
    pub(crate) fn init(self, depth: usize, prefix: u128) {
        match self {
            Inner::N4(node) => node.init(depth, prefix),
            Inner::N16(node) => node.init(depth, prefix),
            Inner::N48(node) => node.init(depth, prefix),
            Inner::N256(node) => node.init(depth, prefix),
        }
    }

    /// The child for `byte`, or `NULL_REF` (optimistic: validate before trusting it).
    #[inline]
    pub(crate) fn find(self, byte: u8) -> NodeRef {
        match self {
            Inner::N4(node) => node.find(byte),
            Inner::N16(node) => node.find(byte),
            Inner::N48(node) => node.find(byte),
            Inner::N256(node) => node.find(byte),
        }
    }

    #[inline]
    pub(crate) fn count(self) -> usize {
        self.header().count()
    }

    pub(crate) fn is_full(self) -> bool {
        self.count() >= self.kind().capacity()
    }

    /// Adds a child for an absent `byte` (caller holds the lock, node not full).
    pub(crate) fn insert(self, byte: u8, child: NodeRef) {
        match self {
            Inner::N4(node) => node.insert(byte, child),
            Inner::N16(node) => node.insert(byte, child),
            Inner::N48(node) => node.insert(byte, child),
            Inner::N256(node) => node.insert(byte, child),
        }
    }

    /// Points the existing entry for `byte` at `child` (caller holds the lock).
    pub(crate) fn replace(self, byte: u8, child: NodeRef) -> bool {
        match self {
            Inner::N4(node) => node.replace(byte, child),
            Inner::N16(node) => node.replace(byte, child),
            Inner::N48(node) => node.replace(byte, child),
            Inner::N256(node) => node.replace(byte, child),
        }
    }

    /// Removes the entry for `byte` (caller holds the lock).
    pub(crate) fn remove(self, byte: u8) -> bool {
        match self {
            Inner::N4(node) => node.remove(byte),
            Inner::N16(node) => node.remove(byte),
            Inner::N48(node) => node.remove(byte),
            Inner::N256(node) => node.remove(byte),
        }
    }

    /// The first child with byte `>= from`, in byte order (optimistic).
    pub(crate) fn next_child(self, from: usize) -> Option<(u8, NodeRef)> {
        if from > 255 {
            return None;
        }
        match self {
            Inner::N4(node) => node.next_child(from),
            Inner::N16(node) => node.next_child(from),
            Inner::N48(node) => node.next_child(from),
            Inner::N256(node) => node.next_child(from),
        }
    }

    /// Copies every child except the one at `skip` into `target` (both locked or
    /// unpublished), in byte order.
    pub(crate) fn copy_children_into(self, target: Inner<'_>, skip: Option<u8>) {
        let mut from = 0usize;
        while let Some((byte, child)) = self.next_child(from) {
            if Some(byte) != skip {
                target.insert(byte, child);
            }
            from = byte as usize + 1;
        }
    }

    /// Quiescent structural check of this node's own layout (sorted keys, index).
    pub(crate) fn check_layout(self) -> Result<(), String> {
        match self {
            Inner::N4(node) => check_sorted(&node.load_keys()[..node.header.count().min(4)]),
            Inner::N16(node) => check_sorted(&node.load_keys()[..node.header.count().min(16)]),
            Inner::N48(node) => node.check_index(),
            Inner::N256(node) => {
                let present = node.children.iter().filter(|c| c.load(Ordering::Relaxed) != NULL_REF).count();
                if present == node.header.count() {
                    Ok(())
                } else {
                    Err(format!("Node256 count {} but {present} children", node.header.count()))
                }
            }
        }
    }
}

fn check_sorted(keys: &[u8]) -> Result<(), String> {
    if keys.windows(2).all(|pair| pair[0] < pair[1]) {
        Ok(())
    } else {
        Err(format!("small node keys not strictly increasing: {keys:?}"))
    }
}
