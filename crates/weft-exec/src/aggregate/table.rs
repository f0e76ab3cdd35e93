//! The table of groups of one participant (first pass) or of one partition (combine
//! pass): open addressing with linear probing over columnar group storage, with every
//! byte it holds counted (`memory`), so that a caller can keep it under a budget.
//!
//! Groups are stored column by column — their hashes, their keys (`key_width` datums
//! each), their accumulators (`state_width` each) — in vectors whose capacity the table
//! chooses itself (`reserve_one`): it never grows past the limit it is given, except
//! that an empty table always takes one group (the "one group" slack of the budget).
//! The slot array holds, per slot, the group's index + 1 and 32 bits of its hash, so a
//! probe compares hash bits before it touches a key.

use std::hash::Hasher;
use std::mem::size_of;

use weft_common::Datum;

use super::Accumulator;
use crate::expr::compare::{compare_datums, datum_hash};

/// Groups of one table, or one partition's share of a table handed over in memory.
pub(super) struct Groups {
    pub key_width: usize,
    pub state_width: usize,
    pub hashes: Vec<u64>,
    pub keys: Vec<Datum>,
    pub states: Vec<Accumulator>,
}

impl Groups {
    pub fn new(key_width: usize, state_width: usize) -> Groups {
        Groups { key_width, state_width, hashes: Vec::new(), keys: Vec::new(), states: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    pub fn key(&self, g: usize) -> &[Datum] {
        &self.keys[g * self.key_width..(g + 1) * self.key_width]
    }

    pub fn states(&self, g: usize) -> &[Accumulator] {
        &self.states[g * self.state_width..(g + 1) * self.state_width]
    }

    pub fn states_mut(&mut self, g: usize) -> &mut [Accumulator] {
        &mut self.states[g * self.state_width..(g + 1) * self.state_width]
    }

    /// Split into `parts` groups by partition number (`partition_of`), moving every
    /// key and state (no copies of text).
    pub fn split(self, parts: usize, partition_of: impl Fn(u64) -> usize) -> Vec<Groups> {
        let (k, n) = (self.key_width, self.state_width);
        let mut counts = vec![0usize; parts];
        for &h in &self.hashes {
            counts[partition_of(h)] += 1;
        }
        let mut out: Vec<Groups> = counts
            .iter()
            .map(|&c| Groups {
                key_width: k,
                state_width: n,
                hashes: Vec::with_capacity(c),
                keys: Vec::with_capacity(c * k),
                states: Vec::with_capacity(c * n),
            })
            .collect();
        let mut keys = self.keys.into_iter();
        let mut states = self.states.into_iter();
        for h in self.hashes {
            let piece = &mut out[partition_of(h)];
            piece.hashes.push(h);
            piece.keys.extend(keys.by_ref().take(k));
            piece.states.extend(states.by_ref().take(n));
        }
        out
    }
}

/// Heap bytes of a datum outside its 32-byte `Datum` (a text's buffer).
pub(crate) fn datum_heap(d: &Datum) -> usize {
    match d {
        Datum::Text(s) => s.capacity(),
        Datum::Array(a) => a.items.capacity() * size_of::<Datum>() + a.items.iter().map(datum_heap).sum::<usize>(),
        _ => 0,
    }
}

/// The hash of a group key under PostgreSQL's grouping equality (`datum_hash`), the
/// same in every participant and every run: it picks the slot (low bits), the slot's
/// check bits (bits 16..48) and the spill partition at each level (top bits, a new
/// slice per level).
pub(super) fn hash_key(key: &[Datum]) -> u64 {
    let mut h = KeyHasher(0x243f_6a88_85a3_08d3);
    for d in key {
        datum_hash(d, &mut h);
    }
    h.finish()
}

/// A multiply-rotate hasher (fast on the few words a key feeds it) with a final
/// avalanche so that every bit of the result depends on every input bit.
struct KeyHasher(u64);

impl KeyHasher {
    #[inline]
    fn mix(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(23) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        // MurmurHash3's fmix64.
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in chunks.by_ref() {
            self.mix(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, v: u8) {
        self.mix(v as u64)
    }
    #[inline]
    fn write_u16(&mut self, v: u16) {
        self.mix(v as u64)
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.mix(v as u64)
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.mix(v)
    }
    #[inline]
    fn write_u128(&mut self, v: u128) {
        self.mix(v as u64);
        self.mix((v >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.mix(v as u64)
    }
}

/// Slot layout: bits 0..32 hold the group index + 1 (0 = empty), bits 32..64 hold
/// bits 16..48 of the group's hash.
const INDEX_MASK: u64 = 0xffff_ffff;
/// At most this many groups in one table (the slot's 32 index bits).
const MAX_GROUPS: usize = (u32::MAX - 1) as usize;

#[inline]
fn check_bits(hash: u64) -> u64 {
    (hash << 16) & !INDEX_MASK
}

fn slots_for(capacity: usize) -> usize {
    (capacity.max(1) * 2).next_power_of_two()
}

pub(super) struct GroupTable {
    pub groups: Groups,
    /// Groups whose accumulators went to a spill file (combine pass only): their key
    /// stays so that later input for them follows them to the file.
    pub evicted: Vec<bool>,
    slots: Vec<u64>,
    /// Groups the columns have room for.
    capacity: usize,
    /// Text bytes outside the columns (keys, min/max values).
    pub heap: usize,
}

impl GroupTable {
    pub fn new(key_width: usize, state_width: usize) -> GroupTable {
        GroupTable { groups: Groups::new(key_width, state_width), evicted: Vec::new(), slots: Vec::new(), capacity: 0, heap: 0 }
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Bytes per group of capacity in the columns.
    fn bytes_per_group(&self) -> usize {
        size_of::<u64>()
            + self.groups.key_width * size_of::<Datum>()
            + self.groups.state_width * size_of::<Accumulator>()
            + size_of::<bool>()
    }

    /// Bytes the table would hold with room for `capacity` groups (text not included).
    fn fixed_bytes(&self, capacity: usize) -> usize {
        slots_for(capacity) * size_of::<u64>() + capacity * self.bytes_per_group()
    }

    /// Every byte the table holds: slot array, columns (by capacity) and text.
    pub fn memory(&self) -> usize {
        self.slots.capacity() * size_of::<u64>()
            + self.groups.hashes.capacity() * size_of::<u64>()
            + self.groups.keys.capacity() * size_of::<Datum>()
            + self.groups.states.capacity() * size_of::<Accumulator>()
            + self.evicted.capacity() * size_of::<bool>()
            + self.heap
    }

    /// The group with this key, if present.
    #[inline]
    pub fn find(&self, hash: u64, key: &[Datum]) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let check = check_bits(hash);
        let mut i = hash as usize & mask;
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return None;
            }
            if slot & !INDEX_MASK == check {
                let g = (slot & INDEX_MASK) as usize - 1;
                // 32 bits of hash matched: compare keys (not the stored hash, one
                // cache miss fewer).
                if keys_equal(self.groups.key(g), key) {
                    return Some(g);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Make room for one more group whose text takes `extra_heap` bytes, keeping the
    /// table's memory within `limit`; false if it does not fit. An empty table always
    /// makes room (a group larger than the budget is still aggregated).
    pub fn reserve_one(&mut self, extra_heap: usize, limit: usize) -> bool {
        let len = self.len();
        if len < self.capacity {
            return len == 0 || self.memory() + extra_heap <= limit;
        }
        if len >= MAX_GROUPS {
            return false;
        }
        let fits = |c: usize| self.fixed_bytes(c) + self.heap + extra_heap <= limit;
        let wanted = (self.capacity * 2).clamp(16, MAX_GROUPS);
        let new_capacity = if fits(wanted) {
            wanted
        } else if fits(len + 1) {
            // The largest capacity that fits (fixed_bytes grows with capacity).
            let (mut lo, mut hi) = (len + 1, wanted);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if fits(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            lo
        } else if len == 0 {
            1
        } else {
            return false;
        };
        self.grow(new_capacity);
        true
    }

    fn grow(&mut self, capacity: usize) {
        let len = self.len();
        let (k, n) = (self.groups.key_width, self.groups.state_width);
        self.groups.hashes.reserve_exact(capacity - len);
        self.groups.keys.reserve_exact((capacity - len) * k);
        self.groups.states.reserve_exact((capacity - len) * n);
        self.evicted.reserve_exact(capacity - len);
        self.capacity = capacity;
        let slots = slots_for(capacity);
        if slots != self.slots.len() {
            self.slots = Vec::new(); // the old array goes before the new one comes
            self.slots = vec![0; slots];
            for g in 0..len {
                let hash = self.groups.hashes[g];
                self.place(hash, g);
            }
        }
    }

    #[inline]
    fn place(&mut self, hash: u64, g: usize) {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = check_bits(hash) | (g as u64 + 1);
    }

    /// Add a group (after `reserve_one` said yes and `find` said absent): its key and
    /// states are moved out of the buffers. `heap` is the text bytes they hold.
    pub fn insert(&mut self, hash: u64, key: &mut Vec<Datum>, states: &mut Vec<Accumulator>, heap: usize) -> usize {
        debug_assert!(self.len() < self.capacity);
        let g = self.len();
        self.groups.hashes.push(hash);
        self.groups.keys.append(key);
        self.groups.states.append(states);
        self.evicted.push(false);
        self.heap += heap;
        self.place(hash, g);
        g
    }

    /// Insert with fresh accumulators cloned from `template`.
    pub fn insert_fresh(&mut self, hash: u64, key: &mut Vec<Datum>, template: &[Accumulator], heap: usize) -> usize {
        debug_assert!(self.len() < self.capacity);
        let g = self.len();
        self.groups.hashes.push(hash);
        self.groups.keys.append(key);
        self.groups.states.extend_from_slice(template);
        self.evicted.push(false);
        self.heap += heap;
        self.place(hash, g);
        g
    }

    /// Forget every group, keeping the allocated capacity.
    pub fn clear(&mut self) {
        self.groups.hashes.clear();
        self.groups.keys.clear();
        self.groups.states.clear();
        self.evicted.clear();
        self.slots.fill(0);
        self.heap = 0;
    }

    /// Account for text bytes gained (or lost) by accumulators in place.
    #[inline]
    pub fn adjust_heap(&mut self, delta: isize) {
        self.heap = self.heap.saturating_add_signed(delta);
    }
}

#[inline]
fn keys_equal(a: &[Datum], b: &[Datum]) -> bool {
    a.iter().zip(b).all(|(x, y)| match (x, y) {
        (Datum::Int4(x), Datum::Int4(y)) => x == y,
        (Datum::Int8(x), Datum::Int8(y)) => x == y,
        (Datum::Text(x), Datum::Text(y)) => x == y,
        _ => compare_datums(x, y).is_eq(),
    })
}
