//! The hash table of a join's build side: tuples in per-participant arenas, a bucket array
//! of atomics whose chains are pushed with compare-and-swap (no lock), probed read-only.
//!
//! A tuple is named by a [`TupleId`]: its arena (one per participant that built) and its
//! index there, packed in a `u64` (`0` = end of chain). Each arena holds, per tuple, its
//! key hash, its key values, its row and the next tuple of its bucket chain. Inserting a
//! tuple writes its `next` and publishes it with one CAS on the bucket head; probing starts
//! after the build has ended (a barrier or a single thread), so readers see every chain
//! complete.

use std::hash::Hasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use weft_common::parallel::CancelToken;
use weft_common::{DataType, Datum, Result};
use weft_storage::memhint::{advise_huge_pages, prefetch, zeroed_atomics};

use crate::expr::compare::{compare_datums, datum_hash};
use crate::expr::{EvalContext, Expr};
use crate::plan::{HashJoin, JoinType};

/// A multiplicative hasher (keys are not attacker-chosen; SipHash buys nothing here).
struct KeyHasher(u64);

const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.write_u64(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(last) ^ (rest.len() as u64) << 59);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(23) ^ v).wrapping_mul(MULTIPLIER);
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }

    fn write_i32(&mut self, v: i32) {
        self.write_u64(v as u32 as u64);
    }

    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64);
    }

    fn finish(&self) -> u64 {
        // Fold the high bits down: bucket numbers are taken from the low ones.
        let h = self.0;
        h ^ (h >> 29) ^ (h >> 47)
    }
}

const KEY_HASH_SEED: u64 = 0x243F_6A88_85A3_08D3;

/// The hash of key values that compare equal under PostgreSQL's rules.
#[inline]
pub(crate) fn key_hash(keys: &[Datum]) -> u64 {
    match keys {
        // Nearly every key: one integer column.
        [Datum::Int4(v)] => int_key_hash(DataType::Int4, *v as i64),
        [Datum::Int8(v)] => int_key_hash(DataType::Int8, *v),
        _ => datums_hash(keys),
    }
}

/// [`key_hash`] through `datum_hash`, whatever the keys.
fn datums_hash(keys: &[Datum]) -> u64 {
    let mut h = KeyHasher(KEY_HASH_SEED);
    for k in keys {
        datum_hash(k, &mut h);
    }
    h.finish()
}

/// The outer row's key values, or `None` when one is NULL (it matches nothing): see
/// [`row_keys`]. Cloning the key into a buffer was an eighth of a probe-heavy join's time.
#[inline]
pub(crate) fn outer_keys<'a>(join: &HashJoin, outer: &'a [Datum], eval: &EvalContext, buffer: &'a mut Vec<Datum>) -> Result<Option<&'a [Datum]>> {
    row_keys(join.outer_key_column(), &join.outer_keys, outer, eval, buffer)
}

/// An inner row's keys, `None` when one is NULL: see [`row_keys`] (a text key is then not
/// copied per tuple).
pub(crate) fn inner_keys<'a>(join: &HashJoin, inner: &'a [Datum], eval: &EvalContext, buffer: &'a mut Vec<Datum>) -> Result<Option<&'a [Datum]>> {
    row_keys(join.inner_key_column(), &join.inner_keys, inner, eval, buffer)
}

/// A row's keys, `None` when one is NULL: borrowed from the row when the key is one
/// plain column (`column`), else `exprs` evaluated into `buffer`.
#[inline]
fn row_keys<'a>(
    column: Option<usize>,
    exprs: &[Expr],
    row: &'a [Datum],
    eval: &EvalContext,
    buffer: &'a mut Vec<Datum>,
) -> Result<Option<&'a [Datum]>> {
    if let Some(column) = column {
        let key = std::slice::from_ref(&row[column]);
        return Ok((!key[0].is_null()).then_some(key));
    }
    Ok(eval_keys(exprs, row, eval, buffer)?.then_some(buffer.as_slice()))
}

/// Evaluate key expressions into `out`; false when any key is NULL (it matches nothing).
pub(crate) fn eval_keys(exprs: &[Expr], row: &[Datum], eval: &EvalContext, out: &mut Vec<Datum>) -> Result<bool> {
    out.clear();
    for e in exprs {
        // Keys are nearly always plain columns: skip the evaluator for them.
        let value = match e {
            Expr::Column { index, .. } => row[*index].clone(),
            other => other.eval(row, eval)?,
        };
        if value.is_null() {
            return Ok(false);
        }
        out.push(value);
    }
    Ok(true)
}

/// Where a tuple lives: arena and index, plus one (`0` ends a chain); 48 bits.
type TupleId = u64;

const ID_BITS: u32 = 48;
const ID_MASK: u64 = (1 << ID_BITS) - 1;
const INDEX_BITS: u32 = 40;
/// Arenas a table can have (one per participant that built).
pub(crate) const MAX_ARENAS: usize = 1 << (ID_BITS - INDEX_BITS);

fn pack(arena: usize, index: usize) -> TupleId {
    debug_assert!(arena < MAX_ARENAS && index < 1 << INDEX_BITS);
    ((arena as u64) << INDEX_BITS | index as u64) + 1
}

fn unpack(id: TupleId) -> (usize, usize) {
    let v = id - 1;
    ((v >> INDEX_BITS) as usize, (v & ((1 << INDEX_BITS) - 1)) as usize)
}

/// A bucket head is a tuple id (low 48 bits) and a 16-bit filter of the hashes on its
/// chain (one bit per tuple, chosen by the hash's top bits): a probe whose bit is clear
/// skips the chain without touching a tuple — most probes of a selective join.
fn filter_bit(hash: u64) -> u64 {
    1 << (ID_BITS + (hash >> 60) as u32)
}

/// A tuple's chain entry: its hash and the next tuple, side by side (one cache line).
/// In an integer-row arena (`Arena::int_rows`) a keyed tuple's `word` is its value, not
/// its hash (computed again from the value when needed): a probe then finds the key it
/// compares in the entry it reads for the chain, one cache line a tuple instead of two.
pub(crate) struct Entry {
    /// The hash, or an integer-row arena's keyed value.
    word: u64,
    next: AtomicU64,
}

/// One participant's tuples.
pub(crate) struct Arena {
    width: usize,
    key_count: usize,
    /// When every key is a plain column of the row, its column: keys are then read from
    /// the row and not stored twice (a self-join's tuple is half the size).
    key_columns: Option<Vec<usize>>,
    entries: Vec<Entry>,
    /// False for a tuple with a NULL key (never in a chain; kept for right/full joins).
    keyed: Vec<bool>,
    keys: Vec<Datum>,
    /// The rows, `width` datums a tuple — unless `int_rows` is set.
    rows: Vec<Datum>,
    /// When the row is one int4 or int8 column that is also the key (a key-only build
    /// side, as in a self-join or a semi join), its type: the value is kept in the
    /// tuple's entry (`Entry::word`) instead of a 32-byte datum, compared as an integer.
    int_rows: Option<DataType>,
    matched: Vec<AtomicBool>,
    bytes: usize,
    /// The range of the keyed tuples' key when the key is one integer (int4 or int8)
    /// column: outer keys outside it are turned away before the row is decoded.
    int_keys: IntKeyRange,
}

/// The smallest and largest value of a one-column integer key, or `Unknown` once a key
/// of another type came (`Empty`: no keyed tuple yet).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) enum IntKeyRange {
    #[default]
    Empty,
    Range(i64, i64),
    Unknown,
}

/// An int4 or int8 value, widened.
#[inline]
fn int_value(d: &Datum) -> Option<i64> {
    match *d {
        Datum::Int4(v) => Some(v as i64),
        Datum::Int8(v) => Some(v),
        _ => None,
    }
}

impl IntKeyRange {
    pub(crate) fn add(self, key: &Datum) -> IntKeyRange {
        let Some(v) = int_value(key) else { return IntKeyRange::Unknown };
        self.add_value(v)
    }

    #[inline]
    fn add_value(self, v: i64) -> IntKeyRange {
        match self {
            IntKeyRange::Empty => IntKeyRange::Range(v, v),
            IntKeyRange::Range(lo, hi) => IntKeyRange::Range(lo.min(v), hi.max(v)),
            IntKeyRange::Unknown => IntKeyRange::Unknown,
        }
    }

    pub(crate) fn union(self, other: IntKeyRange) -> IntKeyRange {
        match (self, other) {
            (IntKeyRange::Empty, x) | (x, IntKeyRange::Empty) => x,
            (IntKeyRange::Range(a, b), IntKeyRange::Range(c, d)) => IntKeyRange::Range(a.min(c), b.max(d)),
            _ => IntKeyRange::Unknown,
        }
    }

    /// Could an integer `key` be among the keys? (Any other datum: maybe.)
    #[inline]
    fn may_contain(self, key: &Datum) -> bool {
        let Some(v) = int_value(key) else { return true };
        match self {
            IntKeyRange::Empty => false,
            IntKeyRange::Range(lo, hi) => lo <= v && v <= hi,
            IntKeyRange::Unknown => true,
        }
    }
}

impl Arena {
    pub fn new(join: &HashJoin) -> Arena {
        let key_columns: Option<Vec<usize>> = join
            .inner_keys
            .iter()
            .map(|k| match k {
                Expr::Column { index, .. } => Some(*index),
                _ => None,
            })
            .collect();
        Arena::empty(join.inner_width, join.inner_keys.len(), key_columns, Arena::int_row_type(join))
    }

    /// The type of a join's inner rows when they are one int4 or int8 column that is the
    /// whole key (kept in the entries: `int_rows`).
    pub(crate) fn int_row_type(join: &HashJoin) -> Option<DataType> {
        match (join.inner_width, join.inner_keys.as_slice()) {
            (1, [Expr::Column { index: 0, data_type: t @ (DataType::Int4 | DataType::Int8) }]) => Some(*t),
            _ => None,
        }
    }

    /// Bytes a tuple of `join`'s inner side will take, for choosing the number of batches
    /// before any is built (`estimated_inner_width`: the planner's average row width).
    pub fn estimated_tuple_bytes(join: &HashJoin) -> usize {
        let fixed = std::mem::size_of::<Entry>() + 2;
        match Arena::int_row_type(join) {
            Some(_) => fixed,
            None => fixed + join.inner_width * std::mem::size_of::<Datum>() + join.estimated_inner_width,
        }
    }

    fn empty(width: usize, key_count: usize, key_columns: Option<Vec<usize>>, int_row: Option<DataType>) -> Arena {
        Arena {
            width,
            key_count,
            key_columns,
            entries: Vec::new(),
            keyed: Vec::new(),
            keys: Vec::new(),
            rows: Vec::new(),
            int_rows: int_row,
            matched: Vec::new(),
            bytes: 0,
            int_keys: IntKeyRange::Empty,
        }
    }

    /// Empty again, its arrays' memory kept: a later round's tuples go where this one's
    /// were, in memory already faulted in, instead of arrays grown (and zeroed by the
    /// kernel) from nothing.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.keyed.clear();
        self.keys.clear();
        self.rows.clear();
        self.matched.clear();
        self.bytes = 0;
        self.int_keys = IntKeyRange::Empty;
    }

    /// Room for `tuples` more tuples, so that a build whose size is known in advance does
    /// not copy its arrays as they grow.
    pub fn reserve(&mut self, tuples: usize) {
        self.entries.reserve(tuples);
        self.keyed.reserve(tuples);
        // Probes land anywhere in these: huge pages save a TLB miss on most of them.
        advise_huge_pages(&mut self.entries);
        if self.int_rows.is_none() {
            self.rows.reserve(tuples * self.width);
            advise_huge_pages(&mut self.rows);
        }
        self.matched.reserve(tuples);
        if self.key_columns.is_none() {
            self.keys.reserve(tuples * self.key_count);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Bytes the tuples hold, roughly.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes a tuple of `row` (with `keys`, or none when a key is NULL) takes here.
    pub fn tuple_bytes(&self, keys: Option<&[Datum]>, row: &[Datum]) -> usize {
        if self.int_rows.is_some() {
            return std::mem::size_of::<Entry>() + 2;
        }
        let mut bytes = std::mem::size_of::<Entry>() + 2 + row.iter().map(datum_bytes).sum::<usize>();
        if self.key_columns.is_none() {
            bytes += keys.unwrap_or(&[]).iter().map(datum_bytes).sum::<usize>();
        }
        bytes
    }

    /// Add an inner tuple of hash `hash`; `keys` is `None` when a key is NULL (such a
    /// tuple is never in a chain: right and full joins emit it unmatched). Returns the
    /// tuple's index.
    pub fn push(&mut self, hash: u64, keys: Option<&[Datum]>, row: &[Datum]) -> usize {
        let index = self.entries.len();
        let word = match (self.int_rows, keys.is_some()) {
            // Keyed: the value (its hash is `int_key_hash` of it). A tuple with a NULL key
            // keeps its (made-up) hash.
            (Some(_), true) => int_value(&row[0]).unwrap_or(0) as u64,
            _ => hash,
        };
        debug_assert!(self.int_rows.is_none() || keys.is_none() || int_key_hash(self.int_rows.unwrap(), word as i64) == hash);
        self.entries.push(Entry { word, next: AtomicU64::new(0) });
        self.keyed.push(keys.is_some());
        let bytes = self.tuple_bytes(keys, row);
        if self.key_columns.is_none() {
            match keys {
                Some(k) => self.keys.extend_from_slice(k),
                None => self.keys.extend(std::iter::repeat_n(Datum::Null, self.key_count)),
            }
        }
        if self.int_rows.is_none() {
            self.rows.extend_from_slice(row);
        }
        self.matched.push(AtomicBool::new(false));
        self.bytes += bytes;
        if keys.is_some() && self.key_count == 1 {
            let key = match &self.key_columns {
                Some(columns) => &row[columns[0]],
                None => &self.keys[index],
            };
            self.int_keys = self.int_keys.add(key);
        }
        index
    }

    /// Add a keyed tuple of value `value` to an integer-row arena (`int_rows`), read from
    /// a compact batch record: no `Datum` row is built for it. Returns its index.
    #[inline]
    pub fn push_int(&mut self, value: i64) -> usize {
        debug_assert!(self.int_rows.is_some());
        let index = self.entries.len();
        self.entries.push(Entry { word: value as u64, next: AtomicU64::new(0) });
        self.keyed.push(true);
        self.matched.push(AtomicBool::new(false));
        self.bytes += std::mem::size_of::<Entry>() + 2;
        self.int_keys = self.int_keys.add_value(value);
        index
    }

    /// Bytes tuple `index` takes here (as [`Arena::tuple_bytes`] counted it).
    pub fn tuple_bytes_at(&self, index: usize) -> usize {
        let keys = (self.key_columns.is_none() && self.keyed[index]).then(|| &self.keys[index * self.key_count..(index + 1) * self.key_count]);
        self.tuple_bytes(keys, &self.row(index))
    }

    /// Keyed tuples whose hash `pred` says yes to, and their bytes.
    pub fn count_where(&self, pred: impl Fn(u64) -> bool) -> (u64, usize) {
        let (mut tuples, mut bytes) = (0, 0);
        for index in 0..self.len() {
            if self.keyed[index] && pred(self.hash_at(index)) {
                tuples += 1;
                bytes += self.tuple_bytes_at(index);
            }
        }
        (tuples, bytes)
    }

    /// Tuple `index`'s hash, keyed flag and row (to write it to a batch file).
    pub fn tuple(&self, index: usize) -> (u64, bool, ArenaRow<'_>) {
        (self.hash_at(index), self.keyed[index], self.row(index))
    }

    /// Keep the tuples `keep` says yes to (by hash), handing the others to `moved`
    /// (hash, keyed, row, bytes) first; the indexes of the kept tuples change, so their
    /// chains must be rebuilt. Returns the bytes moved.
    pub fn retain(&mut self, keep: impl Fn(u64) -> bool, moved: &mut dyn FnMut(u64, bool, &[Datum], usize) -> Result<()>) -> Result<usize> {
        let empty = Arena::empty(self.width, self.key_count, self.key_columns.clone(), self.int_rows);
        let old = std::mem::replace(self, empty);
        let mut moved_bytes = 0;
        for index in 0..old.len() {
            let (hash, keyed, row) = old.tuple(index);
            let keys = if old.key_columns.is_none() { Some(&old.keys[index * old.key_count..(index + 1) * old.key_count]) } else { None };
            let keys = if keyed { Some(keys.unwrap_or(&[])) } else { None };
            if keep(hash) {
                // Keys stored apart are copied; plain-column keys are read from the row.
                let index = self.push(hash, keys, &row);
                debug_assert!(index < old.len());
                self.keyed[index] = keyed;
            } else {
                let bytes = old.tuple_bytes(keys, &row);
                moved_bytes += bytes;
                moved(hash, keyed, &row, bytes)?;
            }
        }
        Ok(moved_bytes)
    }

    /// Tuple `index`'s hash.
    #[inline]
    fn hash_at(&self, index: usize) -> u64 {
        let word = self.entries[index].word;
        match self.int_rows {
            Some(data_type) if self.keyed[index] => int_key_hash(data_type, word as i64),
            _ => word,
        }
    }

    pub fn row(&self, index: usize) -> ArenaRow<'_> {
        match self.int_rows {
            Some(data_type) => ArenaRow::Int([if self.keyed[index] { int_datum(data_type, self.entries[index].word as i64) } else { Datum::Null }]),
            None => ArenaRow::Datums(&self.rows[index * self.width..(index + 1) * self.width]),
        }
    }

    /// Tuple `index`'s row, the tuple being on a chain (keyed).
    #[inline]
    fn chained_row(&self, index: usize) -> ArenaRow<'_> {
        match self.int_rows {
            Some(data_type) => ArenaRow::Int([int_datum(data_type, self.entries[index].word as i64)]),
            None => ArenaRow::Datums(&self.rows[index * self.width..(index + 1) * self.width]),
        }
    }

    /// Are tuple `index`'s keys equal to `probe`'s? `hash` is the probe's.
    #[inline]
    fn key_equals(&self, index: usize, hash: u64, probe: &[Datum]) -> bool {
        let word = self.entries[index].word;
        if self.int_rows.is_some() {
            // Only keyed tuples are on chains; both keys have the column's type.
            return int_value(&probe[0]) == Some(word as i64);
        }
        if word != hash {
            return false;
        }
        match &self.key_columns {
            Some(columns) => {
                let row = self.row(index);
                columns.iter().zip(probe).all(|(&c, p)| compare_datums(&row[c], p).is_eq())
            }
            None => {
                let keys = &self.keys[index * self.key_count..(index + 1) * self.key_count];
                keys.iter().zip(probe).all(|(a, b)| compare_datums(a, b).is_eq())
            }
        }
    }
}

/// An int4 or int8 value as a datum of `data_type`.
#[inline]
fn int_datum(data_type: DataType, v: i64) -> Datum {
    match data_type {
        DataType::Int4 => Datum::Int4(v as i32),
        _ => Datum::Int8(v),
    }
}

/// The hash of a one-column integer key of `data_type` (int4 or int8) whose value is `v`:
/// what `datum_hash` feeds for the datum (its type's rank, then the value as `Hash` writes
/// it), without building one — this runs several times per tuple of an integer join.
#[inline]
fn int_key_hash(data_type: DataType, v: i64) -> u64 {
    let mut h = KeyHasher(KEY_HASH_SEED);
    match data_type {
        DataType::Int4 => {
            h.write_u8(INT4_RANK);
            h.write_i32(v as i32);
        }
        _ => {
            h.write_u8(INT8_RANK);
            h.write_i64(v);
        }
    }
    h.finish()
}

/// `datum_hash`'s type ranks of int4 and int8 (checked by a test against it).
const INT4_RANK: u8 = 1;
const INT8_RANK: u8 = 2;

/// A tuple's row: borrowed from its arena, or rebuilt from an integer-row arena's value.
pub(crate) enum ArenaRow<'a> {
    Datums(&'a [Datum]),
    Int([Datum; 1]),
}

impl std::ops::Deref for ArenaRow<'_> {
    type Target = [Datum];

    fn deref(&self) -> &[Datum] {
        match self {
            ArenaRow::Datums(row) => row,
            ArenaRow::Int(row) => row,
        }
    }
}

/// A datum's bytes in an arena: the value, and a text's characters.
fn datum_bytes(d: &Datum) -> usize {
    std::mem::size_of::<Datum>()
        + match d {
            Datum::Text(t) => t.capacity(),
            _ => 0,
        }
}

/// Does `join` keep its table in slots ([`Buckets::slots`]) when they fit: a build side
/// whose row is one int4 column that is the whole key, in a join that never emits
/// unmatched inner tuples (inner, left, semi, anti).
pub(crate) fn slots_join(join: &HashJoin) -> bool {
    Arena::int_row_type(join) == Some(DataType::Int4) && !join.join_type.emits_unmatched_inner()
}

/// An int4 key's value as a slot holds it, `None` for any other datum or an int8 out of
/// int4's range (which no int4 equals).
#[inline]
pub(crate) fn slot_value(key: &Datum) -> Option<u32> {
    int_value(key).and_then(|v| i32::try_from(v).ok()).map(|v| v as u32)
}

/// Bucket arrays have at least this many heads, and at most (bucket bits stay below the
/// batch bits, which start at bit 32 of the hash: see `batch::batch_of`).
pub(crate) const BUCKETS_MIN: usize = 1024;
pub(crate) const BUCKETS_MAX: usize = 1 << 30;

/// A bucket array: the head of each chain — or, for an int4 key-only build side
/// ([`Buckets::slots`]), open-addressing slots holding the keys themselves.
pub(crate) struct Buckets {
    heads: Box<[AtomicU64]>,
    mask: u64,
    /// Slots mode: each word is an int4 key (low 32 bits) and how many tuples have it
    /// (high 32 bits; 0 = empty slot), placed by linear probing from its hash's bucket.
    /// A tuple of such a table is nothing but its key, so equal tuples are one slot and
    /// a probe reads one cache line instead of a head and the chain's entries (two or
    /// three misses on a table bigger than the caches).
    slots: bool,
    /// Dense slots ([`Buckets::dense`]): the keys lie in a range at most
    /// [`DENSE_BITS_PER_TUPLE`] times as wide as the tuples are many, and `heads` is a
    /// bitmap over it — a key's bit says it has a tuple. Keys of integer sequences (the
    /// ids a foreign key joins on) make a bitmap of a bit or a few a tuple, which stays in
    /// the caches where slots (ten bytes and more a tuple) miss on nearly every probe.
    dense: Option<Box<DenseKeys>>,
}

/// The range and duplicates of dense slots.
struct DenseKeys {
    /// The smallest key; bit `k - lo` is key `k`'s.
    lo: i64,
    /// Keys in the range (bits in the bitmap).
    span: u64,
    /// The tuples of a key beyond its first (and of a key outside the range), counted in
    /// slots made when the first such tuple comes: a table of distinct keys in its
    /// range never makes them.
    extra: OnceLock<Buckets>,
    /// How many slots `extra` gets (enough for every tuple).
    extra_len: usize,
}

/// Dense slots are used when the keys' range has at most this many keys per tuple: its
/// bitmap then takes at most 8 bytes a tuple, less than slots take (10.7 to 21).
pub(crate) const DENSE_BITS_PER_TUPLE: u64 = 64;

impl DenseKeys {
    /// Key `value`'s bit: its word and mask, `None` outside the range.
    #[inline]
    fn bit_of(&self, value: u32) -> Option<(usize, u64)> {
        let offset = (value as i32 as i64).wrapping_sub(self.lo) as u64;
        (offset < self.span).then(|| ((offset / 64) as usize, 1u64 << (offset % 64)))
    }
}

/// One tuple in a slot word's count.
const SLOT_ONE: u64 = 1 << 32;

/// At most this share of a slot array may be taken (so a probe meets an empty slot soon).
const SLOTS_MAX_LOAD: (usize, usize) = (3, 4);

impl Buckets {
    /// At least twice `tuples` buckets (a power of two, at least 1024): at a load of one, a
    /// probe's chain held another tuple about half the time, a miss that cannot be
    /// prefetched with the first; at a half the 10M self-join ran 11% faster.
    pub fn for_tuples(tuples: usize) -> Buckets {
        Buckets::with_len(Buckets::count_for(tuples))
    }

    /// The bucket count [`Buckets::for_tuples`] gives.
    pub fn count_for(tuples: usize) -> usize {
        tuples.saturating_mul(2).clamp(BUCKETS_MIN, BUCKETS_MAX).next_power_of_two()
    }

    /// `n` (a power of two) empty buckets.
    /// The array comes zeroed from the allocator: its pages are faulted in by the
    /// participants that insert into it, not by the one that makes it (measured: a 16M
    /// array filled with zeros took 375 ms of a one-batch 10M self-join's serial phase).
    pub fn with_len(n: usize) -> Buckets {
        debug_assert!(n.is_power_of_two() && n <= BUCKETS_MAX);
        Buckets { heads: zeroed_atomics(n), mask: n as u64 - 1, slots: false, dense: None }
    }

    /// `n` empty slots for `join`'s tuples when it can use them ([`Buckets::slots`]) and
    /// `tuples` leave enough of them empty; else `n` empty chain heads.
    pub fn for_join(n: usize, join: &HashJoin, tuples: usize) -> Buckets {
        let mut buckets = Buckets::with_len(n);
        buckets.slots = Buckets::slots_fit(join, n, tuples);
        buckets
    }

    /// Dense slots ([`Buckets::dense`]) for `tuples` int4 keys in `lo..=hi`, when the range
    /// is narrow enough; `spare` is reused when it has the bitmap's length.
    pub fn dense(lo: i64, hi: i64, tuples: usize, spare: Option<Buckets>) -> Option<Buckets> {
        let span = Buckets::dense_span(lo, hi, tuples)?;
        let words = span.div_ceil(64) as usize;
        let heads = match spare {
            Some(mut spare) if spare.heads.len() == words => {
                spare.clear(true);
                spare.heads
            }
            _ => zeroed_atomics(words),
        };
        Some(Buckets::dense_with(heads, lo, span, Buckets::slots_len(tuples)))
    }

    fn dense_with(heads: Box<[AtomicU64]>, lo: i64, span: u64, extra_len: usize) -> Buckets {
        Buckets { heads, mask: 0, slots: true, dense: Some(Box::new(DenseKeys { lo, span, extra: OnceLock::new(), extra_len })) }
    }

    /// The keys in `lo..=hi` when dense slots suit `tuples` of them.
    fn dense_span(lo: i64, hi: i64, tuples: usize) -> Option<u64> {
        let span = hi.checked_sub(lo)?.checked_add(1)? as u64;
        (tuples > 0 && hi >= lo && span <= (tuples as u64).saturating_mul(DENSE_BITS_PER_TUPLE) && span <= 1 << 32).then_some(span)
    }

    /// Bytes of dense slots for `tuples` keys in `lo..=hi` (their bitmap), if they suit.
    pub fn dense_bytes(lo: i64, hi: i64, tuples: usize) -> Option<usize> {
        Buckets::dense_span(lo, hi, tuples).map(|span| Buckets::bytes_for(span.div_ceil(64) as usize))
    }

    /// Dense slots made before any tuple comes, for at most `values` int4 keys known to
    /// lie in `lo..=hi` (a zone map's bounds and count): the range's bitmap, and extra
    /// slots enough for every key that can have a second tuple (at most one in two of the
    /// tuples, and at most every key of the range), so an insert never runs out of room.
    /// With their size in bytes (the extra slots' pages are only touched when used).
    pub fn dense_up_front(lo: i64, hi: i64, values: usize) -> Option<(Buckets, usize)> {
        let (span, extra_len, bytes) = Buckets::dense_up_front_size(lo, hi, values)?;
        Some((Buckets::dense_with(zeroed_atomics(span.div_ceil(64) as usize), lo, span, extra_len), bytes))
    }

    /// The range, extra slots and bytes of [`Buckets::dense_up_front`], if dense slots suit.
    pub fn dense_up_front_size(lo: i64, hi: i64, values: usize) -> Option<(u64, usize, usize)> {
        let span = Buckets::dense_span(lo, hi, values)?;
        let extra_len = Buckets::slots_len((values / 2).min(span as usize));
        Some((span, extra_len, Buckets::bytes_for(span.div_ceil(64) as usize) + Buckets::bytes_for(extra_len)))
    }

    /// Dense slots: count one more tuple of int4 key `value` (its hash computed only if
    /// it goes to the extra slots).
    #[inline]
    pub fn insert_dense(&self, value: u32) {
        match &self.dense {
            Some(dense) => self.insert_into_dense(dense, value, || int_key_hash(DataType::Int4, value as i32 as i64)),
            None => self.insert_value(int_key_hash(DataType::Int4, value as i32 as i64), value),
        }
    }

    /// A key's first tuple sets its bit; the rest, and any key outside the range (none
    /// when the range is the tuples' own), are counted in the extra slots.
    #[inline]
    fn insert_into_dense(&self, dense: &DenseKeys, value: u32, hash: impl FnOnce() -> u64) {
        let first = dense.bit_of(value).is_some_and(|(word, bit)| self.heads[word].fetch_or(bit, Ordering::Relaxed) & bit == 0);
        if !first {
            dense.extra.get_or_init(|| Buckets { slots: true, ..Buckets::with_len(dense.extra_len) }).insert_value(hash(), value);
        }
    }

    /// Bytes of the array and, for dense slots, of their extra slots once made.
    pub fn bytes(&self) -> usize {
        let extra = self.dense.as_ref().and_then(|dense| dense.extra.get()).map_or(0, |extra| extra.bytes());
        Buckets::bytes_for(self.heads.len()) + extra
    }

    /// Slots mode: the word that holds (or would hold) int4 key `value` of hash `hash`,
    /// to prefetch.
    #[inline]
    fn slot_hint(&self, hash: u64, value: u32) -> &AtomicU64 {
        match &self.dense {
            Some(dense) => dense.bit_of(value).map_or(&self.heads[0], |(word, _)| &self.heads[word]),
            None => &self.heads[(hash & self.mask) as usize],
        }
    }

    /// The slots [`Buckets::slots`] makes for `tuples` tuples: the fewest (a power of two)
    /// that leave a quarter of them empty. Fewer than chain heads (two a tuple): less
    /// fresh memory for the kernel to zero, and a probe still reads one line.
    pub fn slots_len(tuples: usize) -> usize {
        tuples.saturating_mul(SLOTS_MAX_LOAD.1).div_ceil(SLOTS_MAX_LOAD.0).clamp(BUCKETS_MIN, BUCKETS_MAX).next_power_of_two()
    }

    /// Can `n` slots hold `join`'s `tuples` (see [`Buckets::slots`])? Only an int4 key-only
    /// build side of a join that never emits unmatched inner tuples (a slot does not say
    /// which tuples matched) qualifies.
    pub fn slots_fit(join: &HashJoin, n: usize, tuples: usize) -> bool {
        slots_join(join) && tuples.saturating_mul(SLOTS_MAX_LOAD.1) <= n.saturating_mul(SLOTS_MAX_LOAD.0)
    }

    /// Empty every bucket (an array kept from an earlier round: rewriting its memory
    /// costs less than a new array's first touch), to hold chains or (`slots`) slots.
    pub fn clear(&mut self, slots: bool) {
        for head in self.heads.iter_mut() {
            *head.get_mut() = 0;
        }
        self.slots = slots;
        self.dense = None;
    }

    /// Holds slots ([`Buckets::slots`]), not chains?
    pub fn is_slots(&self) -> bool {
        self.slots
    }

    /// Holds dense slots ([`Buckets::dense`])?
    pub fn is_dense(&self) -> bool {
        self.dense.is_some()
    }

    /// Slots mode: count one tuple of each int4 key of `values` (read from a batch file),
    /// the slot [`INSERT_PREFETCH_DISTANCE`] values ahead fetched first.
    pub fn insert_ints(&self, values: &[i64]) {
        debug_assert!(self.slots);
        let hash = |v: i64| int_key_hash(DataType::Int4, v);
        for (i, &v) in values.iter().enumerate() {
            if let Some(&ahead) = values.get(i + INSERT_PREFETCH_DISTANCE) {
                prefetch(self.slot_hint(hash(ahead), ahead as i32 as u32));
            }
            self.insert_value(hash(v), v as i32 as u32);
        }
    }

    /// Slots mode: count one more tuple of int4 key `value` (lock-free: a slot is taken
    /// by a compare-and-swap from empty, a count raised by an atomic add).
    fn insert_value(&self, hash: u64, value: u32) {
        if let Some(dense) = &self.dense {
            return self.insert_into_dense(dense, value, || hash);
        }
        let mut i = (hash & self.mask) as usize;
        loop {
            let slot = &self.heads[i];
            let mut word = slot.load(Ordering::Relaxed);
            if word == 0 {
                match slot.compare_exchange(0, SLOT_ONE | value as u64, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return,
                    Err(actual) => word = actual,
                }
            }
            if word as u32 == value {
                slot.fetch_add(SLOT_ONE, Ordering::Relaxed);
                return;
            }
            i = (i + 1) & self.mask as usize;
        }
    }

    /// Slots mode: how many tuples have int4 key `value` (of hash `hash`).
    #[inline]
    fn count_of(&self, hash: u64, value: u32) -> u64 {
        if let Some(dense) = &self.dense {
            let extra = || dense.extra.get().map_or(0, |extra| extra.count_of(hash, value));
            return match dense.bit_of(value) {
                Some((word, bit)) if self.heads[word].load(Ordering::Relaxed) & bit != 0 => 1 + extra(),
                // In the range without its bit: no tuple (a first tuple sets it).
                Some(_) => 0,
                None => extra(),
            };
        }
        let mut i = (hash & self.mask) as usize;
        loop {
            let word = self.heads[i].load(Ordering::Relaxed);
            if word == 0 {
                return 0;
            }
            if word as u32 == value {
                return word >> 32;
            }
            i = (i + 1) & self.mask as usize;
        }
    }

    /// Bytes of `n` bucket heads.
    pub fn bytes_for(n: usize) -> usize {
        n * std::mem::size_of::<AtomicU64>()
    }

    pub fn len(&self) -> usize {
        self.heads.len()
    }

    /// Push a tuple on its chain: lock-free, any number of participants at once.
    fn insert(&self, id: TupleId, hash: u64, entry: &Entry) {
        let head = &self.heads[(hash & self.mask) as usize];
        let bit = filter_bit(hash);
        let mut current = head.load(Ordering::Relaxed);
        loop {
            entry.next.store(current & ID_MASK, Ordering::Relaxed);
            // Release: whoever reads the new head after the build sees `next` written.
            match head.compare_exchange_weak(current, id | (current & !ID_MASK) | bit, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }
}

/// The whole build side, ready to probe.
pub(crate) struct JoinTable {
    arenas: Vec<Arena>,
    buckets: Arc<Buckets>,
    /// The first global tuple number of each arena, and the total after them.
    starts: Vec<usize>,
    facts: JoinFacts,
    /// The range of a one-column integer key over every arena's tuples.
    int_keys: IntKeyRange,
    /// The tuples are not in `buckets` yet: every one must be inserted
    /// ([`JoinTable::insert_range`]) before the table is probed.
    pub needs_insert: bool,
    /// Tuples kept in `buckets` alone, in no arena (dense slots filled while hashing).
    bucket_only_tuples: usize,
}

/// What a probe must know about the whole inner side (every batch), for `NOT IN`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct JoinFacts {
    /// Some inner row has a NULL key.
    pub inner_has_null_key: bool,
    /// The inner side has no row at all.
    pub inner_empty: bool,
}

/// Chunked batches: a bit per outer row of the batch, set when it matched in some chunk.
pub(crate) type OuterMarks = [AtomicU64];

/// Set bit `i`; was it set before?
fn set_mark(marks: &OuterMarks, i: usize) -> bool {
    let bit = 1u64 << (i % 64);
    marks[i / 64].fetch_or(bit, Ordering::Relaxed) & bit != 0
}

pub(crate) fn is_marked(marks: &OuterMarks, i: usize) -> bool {
    marks[i / 64].load(Ordering::Relaxed) & (1u64 << (i % 64)) != 0
}

impl JoinTable {
    pub(crate) fn facts(&self) -> JoinFacts {
        self.facts
    }

    /// Assemble the arenas built into `buckets` (their tuples already inserted unless
    /// `reinsert` is needed, see [`JoinTable::needs_more_buckets`]).
    pub fn assemble(arenas: Vec<Arena>, buckets: Arc<Buckets>, facts: JoinFacts) -> JoinTable {
        let mut starts = Vec::with_capacity(arenas.len() + 1);
        let mut total = 0;
        for a in &arenas {
            starts.push(total);
            total += a.len();
        }
        starts.push(total);
        let int_keys = arenas.iter().fold(IntKeyRange::Empty, |range, a| range.union(a.int_keys));
        JoinTable { arenas, buckets, starts, facts, int_keys, needs_insert: false, bucket_only_tuples: 0 }
    }

    /// A table whose `tuples` are in `buckets` alone (dense slots filled while hashing, no
    /// arena), their keys in `int_keys`.
    pub fn of_buckets(buckets: Arc<Buckets>, tuples: usize, int_keys: IntKeyRange, facts: JoinFacts) -> JoinTable {
        JoinTable { int_keys, bucket_only_tuples: tuples, ..JoinTable::assemble(Vec::new(), buckets, facts) }
    }

    /// The table's arenas and bucket array, to be reused.
    pub fn into_parts(self) -> (Vec<Arena>, Arc<Buckets>) {
        (self.arenas, self.buckets)
    }

    /// The inner keys' range when the key is one integer column: `lo..=hi` (an empty
    /// range, `1..=0`, when no tuple has a key); `None` when unknown.
    pub fn int_key_bounds(&self) -> Option<(i64, i64)> {
        match self.int_keys {
            IntKeyRange::Empty => Some((1, 0)),
            IntKeyRange::Range(lo, hi) => Some((lo, hi)),
            IntKeyRange::Unknown => None,
        }
    }

    /// Could an outer row whose key is the one value `key` match a tuple here? False only
    /// when it surely cannot: NULL, outside the integer keys' range, or (a bucket array
    /// small enough to stay in cache) absent from its bucket's hash filter. Lets a scan
    /// skip such rows before decoding them (see `JoinLocal::prefilter`); a large array's
    /// heads are left to the batched probe, which overlaps their cache misses.
    #[inline]
    pub fn may_match(&self, key: &Datum) -> bool {
        if key.is_null() || !self.int_keys.may_contain(key) {
            return false;
        }
        if self.buckets.len() >= BATCHED_PROBE_MIN_BUCKETS {
            return true;
        }
        let hash = key_hash(std::slice::from_ref(key));
        if self.buckets.slots {
            return slot_value(key).is_some_and(|v| self.buckets.count_of(hash, v) != 0);
        }
        let head = self.buckets.heads[(hash & self.buckets.mask) as usize].load(Ordering::Relaxed);
        head & filter_bit(hash) != 0
    }

    pub fn tuples(&self) -> usize {
        *self.starts.last().unwrap_or(&0) + self.bucket_only_tuples
    }

    pub fn bytes(&self) -> usize {
        self.arenas.iter().map(Arena::bytes).sum::<usize>() + self.buckets.bytes()
    }

    /// Buckets as EXPLAIN reports them: heads or slots, or for dense slots the keys of
    /// their range (each key has its own bit).
    pub fn buckets(&self) -> usize {
        self.buckets.dense.as_ref().map_or(self.buckets.len(), |dense| dense.span as usize)
    }

    /// Were far more tuples built than the estimate sized the buckets for?
    pub fn needs_more_buckets(&self) -> bool {
        self.tuples() > self.buckets.len()
    }

    /// Replace the bucket array by one sized for the tuples; their chains must then be
    /// rebuilt with [`JoinTable::insert_range`] over every tuple.
    pub fn grow_buckets(&mut self) {
        self.set_buckets(Buckets::for_tuples(self.tuples()));
    }

    /// Index the tuples (none inserted yet) in `n` buckets of `join`'s kind (slots when
    /// they fit): the array the table has when it is that long and nobody else holds it
    /// (nothing was written into it), else a new one. Every tuple must then be inserted
    /// with [`JoinTable::insert_range`].
    pub fn index_anew(&mut self, n: usize, join: &HashJoin) {
        let slots = Buckets::slots_fit(join, n, self.tuples());
        match Arc::get_mut(&mut self.buckets) {
            Some(buckets) if buckets.len() == n => {
                buckets.slots = slots;
                self.needs_insert = true;
            }
            _ => self.set_buckets(Buckets::for_join(n, join, self.tuples())),
        }
    }

    /// Replace the bucket array by `buckets` (empty); every tuple must then be inserted
    /// with [`JoinTable::insert_range`].
    pub fn set_buckets(&mut self, buckets: Buckets) {
        self.buckets = Arc::new(buckets);
        self.needs_insert = true;
    }

    /// Insert global tuples `range` into the bucket array (several participants may insert
    /// disjoint ranges at once).
    pub fn insert_range(&self, range: std::ops::Range<usize>) {
        let mut global = range.start;
        while global < range.end {
            let arena = self.starts.partition_point(|&s| s <= global) - 1;
            let index = global - self.starts[arena];
            let end = (range.end - self.starts[arena]).min(self.arenas[arena].len());
            JoinTable::insert_arena(&self.buckets, arena, &self.arenas[arena], index..end);
            global += end - index;
        }
    }

    /// Insert tuples `indexes` of one arena (as the participant that built it does once
    /// its build ends). Each insert is a compare-and-swap on a random head: a large array
    /// misses the caches on nearly every one, and an atomic cannot overlap its miss with
    /// the next, so the head [`INSERT_PREFETCH_DISTANCE`] tuples ahead is fetched first.
    pub fn insert_arena(buckets: &Buckets, arena_number: usize, arena: &Arena, indexes: std::ops::Range<usize>) {
        let prefetching = buckets.len() >= BATCHED_PROBE_MIN_BUCKETS;
        for index in indexes.clone() {
            let ahead = index + INSERT_PREFETCH_DISTANCE;
            if prefetching && ahead < indexes.end {
                if buckets.slots {
                    prefetch(buckets.slot_hint(arena.hash_at(ahead), arena.entries[ahead].word as i64 as i32 as u32));
                } else {
                    prefetch(&buckets.heads[(arena.hash_at(ahead) & buckets.mask) as usize]);
                }
            }
            if !arena.keyed[index] {
                continue;
            }
            if buckets.slots {
                // A keyed tuple of an int4 integer-row arena: its entry's word is its value.
                buckets.insert_value(arena.hash_at(index), arena.entries[index].word as i64 as i32 as u32);
            } else {
                buckets.insert(pack(arena_number, index), arena.hash_at(index), &arena.entries[index]);
            }
        }
    }

    /// Take one outer row. With a large bucket array, rows wait in `buffers` until
    /// [`PROBE_BATCH`] have come (or [`JoinTable::flush`] is called): then every row's
    /// bucket head is loaded first — independent loads the processor overlaps — and only
    /// then are the chains walked. A small array is probed at once.
    /// Returns false when the sink asked to stop.
    pub fn probe(
        &self,
        join: &HashJoin,
        outer: &[Datum],
        eval: &EvalContext,
        buffers: &mut ProbeBuffers,
        emit: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        if let Some(data_type) = buffers.int_rows {
            // The outer row is its one integer key (a NULL one takes the general way).
            if let Some(value) = int_value(&outer[0]) {
                buffers.ints.values.push(value);
                if buffers.ints.values.len() >= INT_PROBE_BATCH {
                    return self.flush_ints(join, data_type, buffers, emit);
                }
                return Ok(true);
            }
        }
        let ProbeBuffers { keys: key_buffer, joined, pending, cancel, .. } = buffers;
        let keys = outer_keys(join, outer, eval, key_buffer)?;
        let hash = keys.map_or(0, key_hash);
        if self.buckets.len() < BATCHED_PROBE_MIN_BUCKETS {
            // A small bucket array stays in cache: probing at once beats copying rows.
            let head = if keys.is_some() { self.buckets.heads[(hash & self.buckets.mask) as usize].load(Ordering::Acquire) } else { 0 };
            return self.probe_one(join, outer, keys.is_some(), keys.unwrap_or(&[]), hash, head, eval, joined, cancel.as_ref(), None, emit);
        }
        Self::queue(join, outer, keys, hash, pending);
        if pending.has_key.len() >= PROBE_BATCH {
            return self.flush(join, eval, buffers, None, emit);
        }
        Ok(true)
    }

    /// Probe with one outer row read back from a batch file, whose keys (none NULL) and
    /// hash are known, batched as [`JoinTable::probe`] batches rows. `marks` (a chunk of a
    /// chunked batch) holds the bits of the rows, the first waiting row's at its `usize`:
    /// rows queue only while their marks are consecutive, so the caller flushes at the
    /// end of each block it reads.
    #[allow(clippy::too_many_arguments)]
    pub fn probe_keyed_batched(
        &self,
        join: &HashJoin,
        outer: &[Datum],
        keys: &[Datum],
        hash: u64,
        eval: &EvalContext,
        buffers: &mut ProbeBuffers,
        marks: Option<(&OuterMarks, usize)>,
        emit: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        if self.buckets.len() < BATCHED_PROBE_MIN_BUCKETS {
            // A small array stays in cache: probed at once (no row waits, so `marks`
            // names this row's bit).
            let head = self.buckets.heads[(hash & self.buckets.mask) as usize].load(Ordering::Acquire);
            return self.probe_one(join, outer, true, keys, hash, head, eval, &mut buffers.joined, buffers.cancel.as_ref(), marks, emit);
        }
        Self::queue(join, outer, Some(keys), hash, &mut buffers.pending);
        if buffers.pending.has_key.len() >= PROBE_BATCH {
            return self.flush(join, eval, buffers, marks, emit);
        }
        Ok(true)
    }

    /// Let `outer` wait for the next flush.
    fn queue(join: &HashJoin, outer: &[Datum], keys: Option<&[Datum]>, hash: u64, pending: &mut PendingRows) {
        pending.rows.extend_from_slice(outer);
        pending.hashes.push(hash);
        pending.has_key.push(keys.is_some());
        if join.outer_key_column().is_none() {
            // Evaluated keys wait beside the rows; a plain column is read from the row.
            match keys {
                Some(keys) => pending.keys.extend_from_slice(keys),
                None => pending.keys.extend(std::iter::repeat_n(Datum::Null, join.outer_keys.len())),
            }
        }
    }

    /// Probe with every row waiting in `buffers`; `marks` as for
    /// [`JoinTable::probe_keyed_batched`].
    pub fn flush(
        &self,
        join: &HashJoin,
        eval: &EvalContext,
        buffers: &mut ProbeBuffers,
        marks: Option<(&OuterMarks, usize)>,
        emit: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        if let Some(data_type) = buffers.int_rows {
            if !buffers.ints.values.is_empty() && !self.flush_ints(join, data_type, buffers, emit)? {
                return Ok(false);
            }
        }
        let mut pending = std::mem::take(&mut buffers.pending);
        let count = pending.has_key.len();
        let width = join.outer_width;
        let key_count = join.outer_keys.len();
        pending.heads.clear();
        pending.heads.extend(pending.hashes.iter().zip(&pending.has_key).map(|(&hash, &has_key)| {
            if has_key {
                self.buckets.heads[(hash & self.buckets.mask) as usize].load(Ordering::Acquire)
            } else {
                0
            }
        }));
        // Then the first tuple of each chain (its entry and its row) is prefetched before
        // any is used: a table bigger than the caches misses on both. Then the second
        // (a chain has one more tuple than the probe's own for a good part of the keys),
        // whose id the first's entry holds: walked unprefetched, each costs a whole miss,
        // which the work between two probes keeps from overlapping with the next.
        // (Slots: the word loaded is the probe's slot; there are no chains.)
        let chains = !self.buckets.slots;
        for (&head, &hash) in pending.heads.iter().zip(&pending.hashes) {
            if chains && head & filter_bit(hash) != 0 {
                self.prefetch_tuple(head & ID_MASK);
            }
        }
        for (&head, &hash) in pending.heads.iter().zip(&pending.hashes) {
            if chains && head & filter_bit(hash) != 0 {
                let (arena, index) = unpack(head & ID_MASK);
                let second = self.arenas[arena].entries[index].next.load(Ordering::Relaxed);
                if second != 0 {
                    self.prefetch_tuple(second);
                }
            }
        }
        let mut going = true;
        let key_column = join.outer_key_column();
        for j in 0..count {
            let outer = &pending.rows[j * width..(j + 1) * width];
            let keys = match key_column {
                Some(column) => std::slice::from_ref(&outer[column]),
                None => &pending.keys[j * key_count..(j + 1) * key_count],
            };
            let (hash, head) = (pending.hashes[j], pending.heads[j]);
            let mark = marks.map(|(m, first)| (m, first + j));
            if !self.probe_one(join, outer, pending.has_key[j], keys, hash, head, eval, &mut buffers.joined, buffers.cancel.as_ref(), mark, emit)? {
                going = false;
                break;
            }
        }
        pending.clear();
        buffers.pending = pending;
        Ok(going)
    }

    /// Probe with the integer outer rows waiting in `buffers.ints` (see
    /// [`ProbeBuffers::for_join`]).
    fn flush_ints(&self, join: &HashJoin, data_type: DataType, buffers: &mut ProbeBuffers, emit: &mut dyn FnMut(&[Datum]) -> Result<bool>) -> Result<bool> {
        let going = self.probe_ints(join, data_type, &mut buffers.ints, None, emit)?;
        buffers.ints.values.clear();
        Ok(going)
    }

    /// Bring tuple `id`'s entry and the start of its row closer.
    #[inline]
    fn prefetch_tuple(&self, id: TupleId) {
        let (arena, index) = unpack(id);
        let arena = &self.arenas[arena];
        prefetch(&arena.entries[index]);
        if arena.int_rows.is_none() {
            if let Some(first) = arena.rows.get(index * arena.width) {
                prefetch(first);
            }
        }
    }

    /// Emit what `outer` produces against the table: joined rows, the outer row alone
    /// (semi/anti) or with NULLs (left/full), or nothing. `head` is its bucket's head word.
    /// With `marks` (one chunk of a batch processed in chunks) a match sets the row's bit,
    /// a semi join emits the row only at its first match over all chunks, and nothing is
    /// emitted for an unmatched row: that is known after the last chunk.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn probe_one(
        &self,
        join: &HashJoin,
        outer: &[Datum],
        has_key: bool,
        keys: &[Datum],
        hash: u64,
        head: u64,
        eval: &EvalContext,
        joined: &mut Vec<Datum>,
        cancel: Option<&CancelToken>,
        marks: Option<(&OuterMarks, usize)>,
        emit: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        if join.null_aware {
            // NOT IN: a NULL in the subquery makes it never true; a NULL outside is true
            // only against an empty subquery.
            if self.facts.inner_has_null_key {
                return Ok(true);
            }
            if !has_key {
                return if self.facts.inner_empty { emit(outer) } else { Ok(true) };
            }
        }
        if let Some((marks, i)) = marks {
            if matches!(join.join_type, JoinType::Semi | JoinType::Anti) && is_marked(marks, i) {
                // Decided by an earlier chunk.
                return Ok(true);
            }
        }
        if self.buckets.slots {
            return self.probe_one_slots(join, outer, has_key, keys, hash, eval, joined, marks, emit);
        }
        let mut any = false;
        if has_key {
            let mut id = if head & filter_bit(hash) != 0 { head & ID_MASK } else { 0 };
            // A chain may hold the whole inner side (a join without keys, one hot key):
            // the cancel token is polled along it, not only between outer rows.
            let mut visited = 0u32;
            while id != 0 {
                visited = visited.wrapping_add(1);
                if visited % VISITS_PER_CANCEL_CHECK == 0 {
                    if let Some(cancel) = cancel {
                        cancel.check()?;
                    }
                }
                let (arena_number, index) = unpack(id);
                let arena = &self.arenas[arena_number];
                let entry = &arena.entries[index];
                id = entry.next.load(Ordering::Relaxed);
                if !arena.key_equals(index, hash, keys) {
                    continue;
                }
                joined.clear();
                joined.extend_from_slice(outer);
                joined.extend_from_slice(&arena.chained_row(index));
                if let Some(filter) = &join.filter {
                    if !matches!(filter.eval(joined, eval)?, Datum::Bool(true)) {
                        continue;
                    }
                }
                if !any {
                    any = true;
                    if let Some((marks, i)) = marks {
                        let before = set_mark(marks, i);
                        if join.join_type == JoinType::Semi && before {
                            return Ok(true);
                        }
                    }
                }
                match join.join_type {
                    JoinType::Semi => return emit(outer),
                    JoinType::Anti => return Ok(true),
                    JoinType::Right | JoinType::Full => {
                        if !arena.matched[index].load(Ordering::Relaxed) {
                            arena.matched[index].store(true, Ordering::Relaxed);
                        }
                    }
                    JoinType::Inner | JoinType::Left => {}
                }
                if !emit(joined)? {
                    return Ok(false);
                }
            }
        }
        if !any && marks.is_none() && join.join_type.emits_unmatched_outer() {
            return emit_unmatched_outer(join, outer, joined, emit);
        }
        Ok(true)
    }

    /// [`JoinTable::probe_one`] of a table in slots ([`Buckets::slots`]): the key's count
    /// of inner tuples, each of which is the key itself, so a join filter (over the outer
    /// row and the key) passes all of them or none.
    #[allow(clippy::too_many_arguments)]
    fn probe_one_slots(
        &self,
        join: &HashJoin,
        outer: &[Datum],
        has_key: bool,
        keys: &[Datum],
        hash: u64,
        eval: &EvalContext,
        joined: &mut Vec<Datum>,
        marks: Option<(&OuterMarks, usize)>,
        emit: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        let value = if has_key { slot_value(&keys[0]) } else { None };
        let count = value.map_or(0, |v| self.buckets.count_of(hash, v));
        let mut any = false;
        if let Some(v) = value.filter(|_| count != 0) {
            joined.clear();
            joined.extend_from_slice(outer);
            joined.push(Datum::Int4(v as i32));
            any = match &join.filter {
                Some(filter) => matches!(filter.eval(joined, eval)?, Datum::Bool(true)),
                None => true,
            };
        }
        if any {
            if let Some((marks, i)) = marks {
                if set_mark(marks, i) && join.join_type == JoinType::Semi {
                    return Ok(true);
                }
            }
            match join.join_type {
                JoinType::Semi => return emit(outer),
                JoinType::Anti => return Ok(true),
                _ => {}
            }
            for _ in 0..count {
                if !emit(joined)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        if marks.is_none() && join.join_type.emits_unmatched_outer() {
            return emit_unmatched_outer(join, outer, joined, emit);
        }
        Ok(true)
    }

    /// Probe an integer-row table (`Arena::int_rows`) with outer rows that are nothing
    /// but their one integer key of `data_type` (`scratch.values`, read from a batch
    /// file's compact records, none NULL), for a join without a further ON condition:
    /// what [`JoinTable::probe_one`] does, without a `Datum` row per outer row (a joined
    /// row is two datums on the stack). `marks` as for [`JoinTable::probe_keyed_batched`],
    /// the first value's bit at its `usize`.
    ///
    /// The cache misses are software-pipelined instead of taken in batches: row `i + HEAD_AHEAD`'s
    /// bucket head is prefetched, row `i + FIRST_AHEAD`'s head (arrived by then) read and
    /// its first tuple prefetched, row `i + SECOND_AHEAD`'s first tuple read and the second
    /// prefetched, and row `i` walked: the misses of a block's rows overlap all along
    /// instead of one batch's at a time.
    pub fn probe_ints(
        &self,
        join: &HashJoin,
        data_type: DataType,
        scratch: &mut IntProbe,
        marks: Option<(&OuterMarks, usize)>,
        emit: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        debug_assert!(join.filter.is_none() && join.outer_width == 1);
        if join.null_aware && self.facts.inner_has_null_key {
            // NOT IN against a NULL: never true.
            return Ok(true);
        }
        if self.buckets.slots {
            return self.probe_int_slots(join, data_type, scratch, marks, emit);
        }
        let IntProbe { values, hashes, heads, .. } = scratch;
        let n = values.len();
        hashes.clear();
        hashes.extend(values.iter().map(|&v| int_key_hash(data_type, v)));
        heads.clear();
        heads.resize(n, 0);
        let buckets = &*self.buckets;
        let head_of = |hash: u64| &buckets.heads[(hash & buckets.mask) as usize];
        // The first tuple of row `j`'s chain, when the filter lets it have one.
        let first_of = |j: usize, heads: &[u64]| {
            let head = heads[j];
            if head & filter_bit(hashes[j]) != 0 {
                head & ID_MASK
            } else {
                0
            }
        };
        let entry_of = |id: TupleId| {
            let (arena, index) = unpack(id);
            &self.arenas[arena].entries[index]
        };
        for &hash in &hashes[..HEAD_AHEAD.min(n)] {
            prefetch(head_of(hash));
        }
        for j in 0..FIRST_AHEAD.min(n) {
            heads[j] = head_of(hashes[j]).load(Ordering::Acquire);
            let first = first_of(j, heads);
            if first != 0 {
                prefetch(entry_of(first));
            }
        }
        for j in 0..SECOND_AHEAD.min(n) {
            let first = first_of(j, heads);
            if first != 0 {
                let second = entry_of(first).next.load(Ordering::Relaxed);
                if second != 0 {
                    prefetch(entry_of(second));
                }
            }
        }
        let join_type = join.join_type;
        let semi_or_anti = matches!(join_type, JoinType::Semi | JoinType::Anti);
        'rows: for i in 0..n {
            if i + HEAD_AHEAD < n {
                prefetch(head_of(hashes[i + HEAD_AHEAD]));
            }
            if i + FIRST_AHEAD < n {
                let j = i + FIRST_AHEAD;
                heads[j] = head_of(hashes[j]).load(Ordering::Acquire);
                let first = first_of(j, heads);
                if first != 0 {
                    prefetch(entry_of(first));
                }
            }
            if i + SECOND_AHEAD < n {
                let first = first_of(i + SECOND_AHEAD, heads);
                if first != 0 {
                    let second = entry_of(first).next.load(Ordering::Relaxed);
                    if second != 0 {
                        prefetch(entry_of(second));
                    }
                }
            }
            let value = values[i];
            let mark = marks.map(|(m, start)| (m, start + i));
            if let Some((m, k)) = mark {
                if semi_or_anti && is_marked(m, k) {
                    // Decided by an earlier chunk.
                    continue;
                }
            }
            let mut any = false;
            let mut id = first_of(i, heads);
            while id != 0 {
                let (arena_number, index) = unpack(id);
                let arena = &self.arenas[arena_number];
                let entry = &arena.entries[index];
                id = entry.next.load(Ordering::Relaxed);
                // Only keyed tuples are on chains: `word` is the value.
                if entry.word != value as u64 {
                    continue;
                }
                if !any {
                    any = true;
                    if let Some((m, k)) = mark {
                        if set_mark(m, k) && join_type == JoinType::Semi {
                            continue 'rows;
                        }
                    }
                }
                match join_type {
                    JoinType::Semi => {
                        if !emit(&[int_datum(data_type, value)])? {
                            return Ok(false);
                        }
                        continue 'rows;
                    }
                    JoinType::Anti => continue 'rows,
                    JoinType::Right | JoinType::Full => {
                        if !arena.matched[index].load(Ordering::Relaxed) {
                            arena.matched[index].store(true, Ordering::Relaxed);
                        }
                    }
                    JoinType::Inner | JoinType::Left => {}
                }
                // Both columns are the key: equal values.
                if !emit(&[int_datum(data_type, value), int_datum(data_type, value)])? {
                    return Ok(false);
                }
            }
            if !any && mark.is_none() {
                let going = match join_type {
                    JoinType::Anti => emit(&[int_datum(data_type, value)])?,
                    JoinType::Left | JoinType::Full => emit(&[int_datum(data_type, value), Datum::Null])?,
                    _ => true,
                };
                if !going {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// [`JoinTable::probe_ints`] of a table in slots ([`Buckets::slots`]; an int4 key, no
    /// right or full join): row `i + SLOT_AHEAD`'s slot is prefetched while row `i` reads
    /// its count, the one cache miss of its probe.
    fn probe_int_slots(
        &self,
        join: &HashJoin,
        data_type: DataType,
        scratch: &mut IntProbe,
        marks: Option<(&OuterMarks, usize)>,
        emit: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        debug_assert!(data_type == DataType::Int4);
        let IntProbe { values, hashes, counted, .. } = scratch;
        // `n` rows like `row`: emitted, or only counted.
        let mut out = |row: &[Datum], n: u64| -> Result<bool> {
            if let Some(counted) = counted.as_mut() {
                *counted += n;
                return Ok(true);
            }
            for _ in 0..n {
                if !emit(row)? {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        let n = values.len();
        hashes.clear();
        hashes.extend(values.iter().map(|&v| int_key_hash(DataType::Int4, v)));
        let buckets = &*self.buckets;
        let slot_of = |i: usize| buckets.slot_hint(hashes[i], values[i] as i32 as u32);
        for i in 0..SLOT_AHEAD.min(n) {
            prefetch(slot_of(i));
        }
        let join_type = join.join_type;
        let semi_or_anti = matches!(join_type, JoinType::Semi | JoinType::Anti);
        for i in 0..n {
            if i + SLOT_AHEAD < n {
                prefetch(slot_of(i + SLOT_AHEAD));
            }
            let value = values[i];
            let mark = marks.map(|(m, start)| (m, start + i));
            if let Some((m, k)) = mark {
                if semi_or_anti && is_marked(m, k) {
                    // Decided by an earlier chunk.
                    continue;
                }
            }
            // Values read from an int4 column's records are in int4's range.
            let count = buckets.count_of(hashes[i], value as i32 as u32);
            let datum = Datum::Int4(value as i32);
            if count != 0 {
                if let Some((m, k)) = mark {
                    if set_mark(m, k) && join_type == JoinType::Semi {
                        continue;
                    }
                }
                let going = match join_type {
                    JoinType::Semi => out(std::slice::from_ref(&datum), 1)?,
                    JoinType::Anti => true,
                    // Both columns are the key: equal values.
                    _ => out(&[datum.clone(), datum], count)?,
                };
                if !going {
                    return Ok(false);
                }
                continue;
            }
            if mark.is_none() {
                let going = match join_type {
                    JoinType::Anti => out(std::slice::from_ref(&datum), 1)?,
                    JoinType::Left => out(&[datum, Datum::Null], 1)?,
                    _ => true,
                };
                if !going {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Right and full joins: the inner tuples of global numbers `range` no outer row
    /// matched, after NULLs for the outer columns.
    pub fn emit_unmatched(
        &self,
        outer_width: usize,
        range: std::ops::Range<usize>,
        emit: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        let mut row = Vec::with_capacity(outer_width + self.arenas.first().map_or(0, |a| a.width));
        for global in range {
            let arena_number = self.starts.partition_point(|&s| s <= global) - 1;
            let index = global - self.starts[arena_number];
            let arena = &self.arenas[arena_number];
            if arena.matched[index].load(Ordering::Relaxed) {
                continue;
            }
            row.clear();
            row.extend(std::iter::repeat_n(Datum::Null, outer_width));
            row.extend_from_slice(&arena.row(index));
            if !emit(&row)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// An outer row no inner row matched: alone (anti) or with NULLs (left, full).
pub(crate) fn emit_unmatched_outer(
    join: &HashJoin,
    outer: &[Datum],
    joined: &mut Vec<Datum>,
    emit: &mut dyn FnMut(&[Datum]) -> Result<bool>,
) -> Result<bool> {
    if join.join_type == JoinType::Anti {
        return emit(outer);
    }
    joined.clear();
    joined.extend_from_slice(outer);
    joined.extend(std::iter::repeat_n(Datum::Null, join.inner_width));
    emit(joined)
}

/// How far ahead of the row it walks [`JoinTable::probe_ints`] prefetches a bucket head,
/// reads it (prefetching the first tuple), and reads the first tuple (prefetching the
/// second).
const HEAD_AHEAD: usize = 24;
/// How far ahead of the row it probes [`JoinTable::probe_int_slots`] prefetches a slot.
const SLOT_AHEAD: usize = 16;
const FIRST_AHEAD: usize = 16;
const SECOND_AHEAD: usize = 8;

/// Scratch of [`JoinTable::probe_ints`]: a block's outer values (filled by the caller),
/// their hashes and bucket heads.
#[derive(Default)]
pub(crate) struct IntProbe {
    pub values: Vec<i64>,
    hashes: Vec<u64>,
    heads: Vec<u64>,
    /// Rows a probe of slots produced, counted instead of emitted (`Some`) when whatever
    /// takes them only counts them ([`JoinLocal::count_rows_only`]).
    pub counted: Option<u64>,
}

/// How far ahead of its insert a tuple's bucket head is fetched.
const INSERT_PREFETCH_DISTANCE: usize = 16;

/// Outer rows a join step holds before probing them together.
pub(crate) const PROBE_BATCH: usize = 64;
/// Bucket arrays from this size (2 MiB of heads) are probed in batches: their heads miss
/// the caches, and loading a batch's heads at once overlaps the misses.
const BATCHED_PROBE_MIN_BUCKETS: usize = 1 << 18;

/// Chain tuples visited by one probe between two polls of the cancel token.
const VISITS_PER_CANCEL_CHECK: u32 = 4096;

/// A prober's reusable buffers: the outer row's keys, the joined row, and the outer rows
/// waiting to be probed.
#[derive(Default)]
pub(crate) struct ProbeBuffers {
    /// The statement's cancel token, polled while a long chain is walked.
    pub cancel: Option<CancelToken>,
    keys: Vec<Datum>,
    joined: Vec<Datum>,
    pending: PendingRows,
    /// Set when both sides' rows are one integer key ([`int_rows_type`]): outer rows with
    /// a key then wait in `ints` as bare values, probed by [`JoinTable::probe_ints`].
    int_rows: Option<DataType>,
    pub(super) ints: IntProbe,
}

/// Outer integer keys probed together by [`JoinTable::probe`]: the software pipeline of
/// [`JoinTable::probe_ints`] runs across them.
const INT_PROBE_BATCH: usize = 256;

impl ProbeBuffers {
    /// Buffers for probing `join`'s table with its outer rows.
    pub fn for_join(join: &HashJoin) -> ProbeBuffers {
        ProbeBuffers { int_rows: int_rows_type(join), ..ProbeBuffers::default() }
    }

    /// Are outer rows waiting (a flush is due before the probe ends)?
    pub fn has_pending(&self) -> bool {
        !self.pending.has_key.is_empty() || !self.ints.values.is_empty()
    }
}

/// The key's type when both sides' rows are nothing but one int4/int8 key column (the
/// self-join `SELECT count(*) FROM t t1 JOIN t t2 USING (a)`) and no further ON condition
/// applies: the table keeps its tuples' values in their entries (`Arena::int_rows`), batch
/// files hold compact records of both sides, and outer rows are probed as bare values
/// ([`JoinTable::probe_ints`]); a round's inner records are loaded without `Datum` rows
/// (`Arena::push_int`).
pub(crate) fn int_rows_type(join: &HashJoin) -> Option<DataType> {
    let data_type = Arena::int_row_type(join)?;
    let outer_is_key = join.outer_width == 1 && matches!(join.outer_keys.as_slice(), [Expr::Column { index: 0, data_type: t }] if *t == data_type);
    (outer_is_key && join.filter.is_none()).then_some(data_type)
}

/// Outer rows (flat), their keys (flat), hashes, and bucket heads once loaded.
#[derive(Default)]
struct PendingRows {
    rows: Vec<Datum>,
    keys: Vec<Datum>,
    hashes: Vec<u64>,
    has_key: Vec<bool>,
    heads: Vec<u64>,
}

impl PendingRows {
    fn clear(&mut self) {
        self.rows.clear();
        self.keys.clear();
        self.hashes.clear();
        self.has_key.clear();
        self.heads.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The integer shortcut hashes as `datum_hash` does: batches, buckets and chain
    /// filters of integer keys depend on it, as does a cross-check against keys hashed
    /// the general way (a NULL-keyed tuple's, a key built by an expression).
    #[test]
    fn integer_keys_hash_as_datums_do() {
        let mut rng = weft_common::XorShift64(0x1a7_4a54);
        let mut values: Vec<i64> = vec![0, 1, -1, i32::MIN as i64, i32::MAX as i64, i64::MIN, i64::MAX];
        values.extend((0..1000).map(|_| rng.next_u64() as i64));
        for v in values {
            let int4 = Datum::Int4(v as i32);
            assert_eq!(key_hash(std::slice::from_ref(&int4)), datums_hash(std::slice::from_ref(&int4)), "{v}");
            assert_eq!(int_key_hash(DataType::Int4, v as i32 as i64), datums_hash(&[int4]), "{v}");
            let int8 = Datum::Int8(v);
            assert_eq!(key_hash(std::slice::from_ref(&int8)), datums_hash(std::slice::from_ref(&int8)), "{v}");
            assert_eq!(int_key_hash(DataType::Int8, v), datums_hash(&[int8]), "{v}");
        }
    }

    proptest::proptest! {
        /// Dense slots count each key's tuples as a `HashMap` does, inserted by several
        /// threads at once (first tuples in the bitmap, the rest in the extra slots),
        /// and say 0 for keys they do not hold, inside and outside their range.
        #[test]
        fn dense_slots_count_like_a_map(
            keys in proptest::collection::vec(-3000i32..3000, 100..4000),
            base in proptest::prop_oneof![proptest::strategy::Just(0i32), proptest::strategy::Just(i32::MIN + 3000), proptest::strategy::Just(i32::MAX - 3000)],
            threads in 1usize..5,
        ) {
            let keys: Vec<i64> = keys.iter().map(|&k| base.wrapping_add(k) as i64).collect();
            let (lo, hi) = (*keys.iter().min().unwrap(), *keys.iter().max().unwrap());
            let buckets = Buckets::dense(lo, hi, keys.len(), None).expect("a range of 6000 keys suits 100 tuples and more");
            std::thread::scope(|scope| {
                for part in keys.chunks(keys.len().div_ceil(threads)) {
                    let buckets = &buckets;
                    scope.spawn(move || buckets.insert_ints(part));
                }
            });
            let mut counts = std::collections::HashMap::new();
            for &k in &keys {
                *counts.entry(k).or_insert(0u64) += 1;
            }
            for probe in (lo - 70..=hi + 70).chain([i32::MIN as i64, i32::MAX as i64]) {
                let probe = probe.clamp(i32::MIN as i64, i32::MAX as i64);
                let count = buckets.count_of(int_key_hash(DataType::Int4, probe), probe as i32 as u32);
                proptest::prop_assert_eq!(count, counts.get(&probe).copied().unwrap_or(0), "key {}", probe);
            }
            proptest::prop_assert_eq!(buckets.dense.as_ref().unwrap().extra.get().is_some(), counts.len() < keys.len());
        }
    }

    /// Dense slots made up front ([`Buckets::dense_up_front`]) from a range and a count
    /// of values have room for the worst their tuples can be: every key of the range
    /// twice (as many keys with a second tuple as can be), or one key every time. Threads
    /// insert at once; each key's count comes back.
    #[test]
    fn dense_slots_made_up_front_hold_every_duplicate() {
        let twice: Vec<i64> = (0..3000).chain(0..3000).collect();
        let mut same = vec![-7i64; 5000];
        same.extend(-10..=10);
        for keys in [twice, same] {
            let (lo, hi) = (*keys.iter().min().unwrap(), *keys.iter().max().unwrap());
            let (buckets, bytes) = Buckets::dense_up_front(lo, hi, keys.len()).expect("a narrow range");
            std::thread::scope(|scope| {
                for part in keys.chunks(keys.len().div_ceil(5)) {
                    let buckets = &buckets;
                    scope.spawn(move || part.iter().for_each(|&k| buckets.insert_dense(k as i32 as u32)));
                }
            });
            let mut counts = std::collections::HashMap::new();
            for &k in &keys {
                *counts.entry(k).or_insert(0u64) += 1;
            }
            for probe in lo - 5..=hi + 5 {
                let count = buckets.count_of(int_key_hash(DataType::Int4, probe), probe as i32 as u32);
                assert_eq!(count, counts.get(&probe).copied().unwrap_or(0), "key {probe}");
            }
            assert!(buckets.bytes() <= bytes, "the slots take no more than they reserved");
        }
        assert!(Buckets::dense_up_front(0, 1 << 20, 100).is_none(), "too wide for its tuples");
    }

    /// A key outside dense slots' range is counted in their extra slots, never lost.
    #[test]
    fn dense_slots_count_keys_outside_their_range() {
        let buckets = Buckets::dense(100, 199, 50, None).unwrap();
        let keys: Vec<i64> = vec![100, 150, 150, 199, 99, 200, -5, -5, -5, i32::MAX as i64];
        buckets.insert_ints(&keys);
        let count = |k: i64| buckets.count_of(int_key_hash(DataType::Int4, k), k as i32 as u32);
        for (k, n) in [(100, 1), (150, 2), (199, 1), (99, 1), (200, 1), (-5, 3), (i32::MAX as i64, 1), (101, 0), (201, 0), (0, 0)] {
            assert_eq!(count(k), n, "key {k}");
        }
    }

    /// Dense slots only for ranges narrow enough, never across an overflow.
    #[test]
    fn dense_slots_suit_narrow_ranges() {
        assert!(Buckets::dense(0, 9_999_999, 10_000_000, None).is_some());
        assert!(Buckets::dense(-5, 5, 1, None).is_some());
        assert!(Buckets::dense(0, 64 * 1000, 1000, None).is_none());
        assert!(Buckets::dense(1, 0, 10, None).is_none());
        assert!(Buckets::dense(0, 10, 0, None).is_none());
        assert!(Buckets::dense(i64::MIN, i64::MAX, usize::MAX, None).is_none());
        assert_eq!(Buckets::dense_bytes(0, 63, 1), Some(8));
    }
}
