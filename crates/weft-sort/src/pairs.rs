//! Pair form: tuples that are nothing but their sort key, held as 16-byte
//! (abbreviation, payload) pairs instead of bytes in an arena.
//!
//! A B-tree entry on one int4 or bool column is `(key, tid word)`, sorted by the key and
//! then the tid word. The key's abbreviation is exact (it gives the key back, NULL
//! included) and the tid word fits the pair's second half, so the pair *is* the tuple:
//! a participant keeps one array of pairs, sorts it by radix with no arena to visit, and
//! rebuilds each tuple's bytes only as it is read. No sub-runs are needed, since reading
//! a sorted array of pairs front to back visits nothing at random.
//!
//! Applies when the layout is exactly two columns, the first (bool or int4) is the first
//! key and the second (int8) the second key, ascending. A tuple whose second column is
//! NULL has no pair: the participant then leaves pair form and goes on with the arena.
//!
//! A pair of a non-NULL int4 key packs further, into 8 bytes ([`PackedPair`]), when the
//! caller gives an order-preserving 32-bit code of the second column ([`PayloadSqueeze`]:
//! an index build's tid words have one). Half the bytes to sort, to fault in and to hold:
//! twice the pairs in a budget. A participant keeps its pairs packed until one does not
//! pack (a NULL key, a payload without a code), then widens them and goes on at 16 bytes.

use std::sync::Arc;

use crate::keys::int4_order_value;
use crate::merge::PairRange;
use crate::memtuples::SortTuple;
use crate::radix::{self, RadixItem};

/// Unsigned order of the payload is the signed order of the int8 it encodes.
const SIGN: u64 = 1 << 63;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FirstKey {
    Bool,
    Int4,
}

/// How a pair maps to tuple bytes and back, resolved once per sort.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PairForm {
    pub first: FirstKey,
    pub first_offset: usize,
    pub second_offset: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

impl PairForm {
    /// Bytes a tuple of a pair form can have (a null bitmap byte, an int4 and an int8,
    /// each aligned): merges rebuild tuples into a buffer of this size.
    pub const MAX_TUPLE_LEN: usize = 16;

    /// Bytes of every tuple of the layout (null bitmap and the two fixed-width columns).
    #[inline]
    pub fn tuple_len(&self) -> usize {
        self.second_offset + 8
    }

    /// The payload of `tuple` (its second column), or `None` when that is NULL.
    #[inline]
    pub fn payload(&self, tuple: &[u8]) -> Option<u64> {
        if tuple[0] & 0b10 != 0 {
            return None;
        }
        let bytes = tuple.get(self.second_offset..self.second_offset + 8)?;
        Some(u64::from_le_bytes(bytes.try_into().expect("8 bytes")) ^ SIGN)
    }

    /// The pair of the tuple `(first, second)` of an int4-first form (`first` None for
    /// NULL), as `SortKeys::abbreviate` and `payload` would make it from its bytes.
    #[inline]
    pub fn int4_pair(&self, first: Option<i32>, second: i64) -> SortTuple {
        let abbrev = match first {
            None if self.nulls_first => 0,
            None => u64::MAX,
            Some(v) if self.descending => !int4_order_value(v),
            Some(v) => int4_order_value(v),
        };
        SortTuple::new(abbrev, second as u64 ^ SIGN)
    }

    /// Write the tuple of `pair` into `out` (replacing its contents).
    #[inline]
    pub fn rebuild(&self, pair: SortTuple, out: &mut Vec<u8>) {
        out.clear();
        out.resize(self.tuple_len(), 0);
        self.write_tuple(pair, out);
    }

    /// Write the tuple of `pair` into `out`, which is `tuple_len()` bytes long.
    #[inline]
    pub fn write_tuple(&self, pair: SortTuple, out: &mut [u8]) {
        out.fill(0);
        let null = if self.nulls_first { 0 } else { u64::MAX };
        if pair.abbrev == null {
            out[0] |= 1;
        } else {
            // Undo `SortKeys::abbreviate`: the reflection for DESC, then the offset.
            let value = if self.descending { !pair.abbrev } else { pair.abbrev };
            match self.first {
                FirstKey::Bool => out[self.first_offset] = (value - 1) as u8,
                FirstKey::Int4 => {
                    let v = ((value - 1) as i64 + i32::MIN as i64) as i32;
                    out[self.first_offset..self.first_offset + 4].copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        let second = (pair.payload() ^ SIGN) as i64;
        out[self.second_offset..self.second_offset + 8].copy_from_slice(&second.to_le_bytes());
    }
}

/// Sort pairs by (abbreviation, payload): a big array in place by radix (no second array
/// to touch); else by radix on the abbreviation through `scratch`, then runs of equal
/// abbreviations by payload (already in order when pushed in order, as an index build
/// pushes heap order). `scratch` never holds more than `scratch_cap` pairs (what the
/// budget leaves beside the pairs): past it, a comparison sort in place.
pub(crate) fn sort_pairs(pairs: &mut Vec<SortTuple>, scratch: &mut Vec<SortTuple>, scratch_cap: usize) {
    if radix::sort_pairs_in_place(pairs, scratch, scratch_cap) {
        return;
    }
    if pairs.len() > scratch_cap || !radix::sort_by_abbrev(pairs, scratch) {
        pairs.sort_unstable_by_key(|p| (p.abbrev, p.payload()));
        return;
    }
    if pairs.windows(2).all(|w| (w[0].abbrev, w[0].payload()) <= (w[1].abbrev, w[1].payload())) {
        return;
    }
    let mut start = 0;
    while start < pairs.len() {
        let abbrev = pairs[start].abbrev;
        let end = start + pairs[start..].iter().take_while(|p| p.abbrev == abbrev).count();
        let run = &mut pairs[start..end];
        if !run.windows(2).all(|w| w[0].payload() <= w[1].payload()) {
            run.sort_unstable_by_key(|p| p.payload());
        }
        start = end;
    }
}

/// An order-preserving 32-bit code of the int8 second column of a pair, from a caller
/// that knows its values: bits `low_bits .. low_bits + zero_bits` of every value it
/// describes are zero (an index build's tid word: a line pointer's offset stays below
/// 512), so dropping them keeps the order. A negative value, one with a bit set there, or
/// one whose bits above do not fit the code has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PayloadSqueeze {
    low_bits: u32,
    zero_bits: u32,
}

impl PayloadSqueeze {
    pub fn new(low_bits: u32, zero_bits: u32) -> PayloadSqueeze {
        assert!(low_bits < 32 && low_bits + zero_bits < 63, "a 32-bit code of a non-negative int8");
        PayloadSqueeze { low_bits, zero_bits }
    }

    #[inline]
    pub fn pack(self, value: i64) -> Option<u32> {
        let value = u64::try_from(value).ok()?;
        let low = value & ((1 << self.low_bits) - 1);
        let dropped = (value >> self.low_bits) & ((1 << self.zero_bits) - 1);
        let high = value >> (self.low_bits + self.zero_bits);
        (dropped == 0 && high < 1 << (32 - self.low_bits)).then(|| ((high << self.low_bits) | low) as u32)
    }

    #[inline]
    pub fn unpack(self, code: u32) -> i64 {
        let code = code as u64;
        let low = code & ((1 << self.low_bits) - 1);
        (((code >> self.low_bits) << (self.low_bits + self.zero_bits)) | low) as i64
    }
}

/// A pair in 8 bytes: the int4 key's order code in the high half (unsigned order is the
/// key's order, DESC included), the payload's code in the low half. Its unsigned order is
/// the pair's, and equal values are equal tuples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct PackedPair(pub u64);

impl RadixItem for PackedPair {
    #[inline(always)]
    fn key(&self) -> u64 {
        self.0 >> 32
    }

    #[inline(always)]
    fn tie(&self) -> u64 {
        self.0 & 0xFFFF_FFFF
    }
}

/// How an int4-first pair form's pairs pack ([`PackedPair`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Packing {
    form: PairForm,
    squeeze: PayloadSqueeze,
}

impl Packing {
    pub fn new(form: PairForm, squeeze: PayloadSqueeze) -> Option<Packing> {
        (form.first == FirstKey::Int4).then_some(Packing { form, squeeze })
    }

    pub fn form(&self) -> PairForm {
        self.form
    }

    /// The packed pair of the tuple `(first, second)`, if it has one.
    #[inline]
    pub fn pack(&self, first: Option<i32>, second: i64) -> Option<PackedPair> {
        let key = (first? as u32) ^ 0x8000_0000;
        let key = if self.form.descending { !key } else { key };
        Some(PackedPair((key as u64) << 32 | self.squeeze.pack(second)? as u64))
    }

    /// The packed form of a 16-byte pair of this form, if it has one.
    pub fn pack_pair(&self, pair: SortTuple) -> Option<PackedPair> {
        let order = if self.form.descending { !pair.abbrev } else { pair.abbrev };
        if order == 0 || order > 1 << 32 {
            return None; // NULL
        }
        let first = ((order - 1) as i64 + i32::MIN as i64) as i32;
        self.pack(Some(first), (pair.payload() ^ SIGN) as i64)
    }

    /// The 16-byte pair of a packed one.
    #[inline]
    pub fn unpack(&self, packed: PackedPair) -> SortTuple {
        let key = (packed.0 >> 32) as u32;
        let key = if self.form.descending { !key } else { key };
        self.form.int4_pair(Some((key ^ 0x8000_0000) as i32), self.squeeze.unpack(packed.0 as u32))
    }
}

/// Pairs of a participant or of a run: 16 bytes each, or packed into 8.
pub(crate) enum PairStore {
    Wide(Vec<SortTuple>),
    Packed(Vec<PackedPair>, Packing),
}

impl PairStore {
    pub fn len(&self) -> usize {
        match self {
            PairStore::Wide(pairs) => pairs.len(),
            PairStore::Packed(pairs, _) => pairs.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes a pair takes.
    pub fn pair_bytes(&self) -> usize {
        match self {
            PairStore::Wide(_) => std::mem::size_of::<SortTuple>(),
            PairStore::Packed(..) => std::mem::size_of::<PackedPair>(),
        }
    }

    /// The pair at `ordinal`, as 16 bytes.
    #[inline]
    pub fn get(&self, ordinal: usize) -> SortTuple {
        match self {
            PairStore::Wide(pairs) => pairs[ordinal],
            PairStore::Packed(pairs, packing) => packing.unpack(pairs[ordinal]),
        }
    }
}

/// Sort packed pairs: by radix in place; small arrays, and keys that vary in one byte,
/// by LSD passes over the bytes that vary through `scratch` when `scratch_cap` allows,
/// else by comparison.
pub(crate) fn sort_packed(pairs: &mut Vec<PackedPair>, scratch: &mut Vec<PackedPair>, scratch_cap: usize) {
    if radix::sort_pairs_in_place(pairs, scratch, scratch_cap) {
        return;
    }
    let n = pairs.len();
    if n <= scratch_cap && n > 1 {
        scratch.clear();
        scratch.resize(n, PackedPair::default());
        radix::sort_by_bytes(pairs, scratch, &[0, 1, 2, 3, 4, 5, 6, 7], |p: &PackedPair| p.0);
    } else {
        pairs.sort_unstable();
    }
}

/// A participant's sorted pairs: its one run when its share fit its budget.
pub(crate) struct PairRun {
    pub form: PairForm,
    pub store: PairStore,
}

impl PairRun {
    #[cfg(test)]
    pub fn wide(form: PairForm, pairs: Vec<SortTuple>) -> PairRun {
        PairRun { form, store: PairStore::Wide(pairs) }
    }

    pub fn count(&self) -> u64 {
        self.store.len() as u64
    }

    pub fn len(&self) -> usize {
        self.store.len()
    }

    #[inline]
    pub fn get(&self, ordinal: usize) -> SortTuple {
        self.store.get(ordinal)
    }

    /// The tuple at `ordinal`.
    pub fn tuple_at(&self, ordinal: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.form.tuple_len());
        self.form.rebuild(self.get(ordinal), &mut out);
        out
    }
}

/// Reads pairs `[from, to)` of a run as tuples.
pub(crate) struct PairRunReader {
    run: Arc<PairRun>,
    next: usize,
    end: usize,
    tuple: Vec<u8>,
    has_current: bool,
}

impl PairRunReader {
    pub fn new(run: Arc<PairRun>, from: usize, to: usize) -> PairRunReader {
        PairRunReader { run, next: from, end: to, tuple: Vec::with_capacity(PairForm::MAX_TUPLE_LEN), has_current: false }
    }

    /// The pairs not read yet, for a merge that reads pairs rather than tuples.
    pub fn into_range(self) -> PairRange {
        PairRange { run: self.run, next: self.next, end: self.end }
    }

    #[inline]
    pub fn current(&self) -> Option<&[u8]> {
        self.has_current.then_some(&self.tuple[..])
    }

    /// The current tuple's abbreviation (only meaningful after `advance` returned true).
    #[inline]
    pub fn current_abbrev(&self) -> u64 {
        self.run.get(self.next - 1).abbrev
    }

    #[inline]
    pub fn advance(&mut self) -> bool {
        self.has_current = self.next < self.end;
        if self.has_current {
            self.run.form.rebuild(self.run.get(self.next), &mut self.tuple);
            self.next += 1;
        }
        self.has_current
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{SortColumn, SortKeys};
    use proptest::prelude::*;
    use weft_common::tuple::RowLayout;
    use weft_common::{DataType, Datum};

    proptest! {
        /// Every tuple of a pair-form layout comes back byte for byte from its pair, and
        /// pair order is the keys' order.
        #[test]
        fn a_pair_rebuilds_its_tuple_and_orders_like_it(
            first in prop::sample::select(vec![DataType::Int4, DataType::Bool]),
            descending in any::<bool>(),
            nulls_first in any::<bool>(),
            rows in prop::collection::vec((prop::option::of(any::<i32>()), any::<i64>()), 2..50),
        ) {
            let layout = RowLayout::new(&[first, DataType::Int8]);
            let keys = SortKeys::new(layout.clone(), &[SortColumn { column: 0, descending, nulls_first }, SortColumn::new(1, false)]).unwrap();
            let form = keys.pair_form().expect("pair form");
            let tuples: Vec<Vec<u8>> = rows.iter().map(|&(a, b)| {
                let a = match (a, first) {
                    (None, _) => Datum::Null,
                    (Some(v), DataType::Int4) => Datum::Int4(v),
                    (Some(v), _) => Datum::Bool(v % 2 == 0),
                };
                let mut out = Vec::new();
                layout.encode(&[a, Datum::Int8(b)], &mut out).unwrap();
                out
            }).collect();
            let pairs: Vec<SortTuple> = tuples.iter().map(|t| SortTuple::new(keys.abbreviate(t), form.payload(t).unwrap())).collect();
            if first == DataType::Int4 {
                for (pair, &(a, b)) in pairs.iter().zip(&rows) {
                    let direct = form.int4_pair(a, b);
                    prop_assert_eq!((direct.abbrev, direct.payload()), (pair.abbrev, pair.payload()));
                }
            }
            let mut rebuilt = Vec::new();
            for (pair, tuple) in pairs.iter().zip(&tuples) {
                form.rebuild(*pair, &mut rebuilt);
                prop_assert_eq!(&rebuilt, tuple);
            }
            for (i, j) in [(0, 1), (1, 0)] {
                let by_pair = (pairs[i].abbrev, pairs[i].payload()).cmp(&(pairs[j].abbrev, pairs[j].payload()));
                prop_assert_eq!(by_pair, keys.compare(&tuples[i], &tuples[j]));
            }
        }
    }

    proptest! {
        /// A payload's code gives it back and orders like it; a value with a bit where
        /// the code drops bits, or too big for it, has none.
        #[test]
        fn a_payload_code_keeps_value_and_order(a in 0i64..1 << 40, b in 0i64..1 << 40, low in 0u32..12, zero in 0u32..12) {
            let squeeze = PayloadSqueeze::new(low, zero);
            let fits = |v: i64| (v >> low) & ((1 << zero) - 1) == 0 && v >> (low + zero) < 1 << (32 - low);
            for v in [a, b] {
                match squeeze.pack(v) {
                    Some(code) => prop_assert_eq!(squeeze.unpack(code), v),
                    None => prop_assert!(!fits(v)),
                }
                prop_assert_eq!(squeeze.pack(v).is_some(), fits(v));
            }
            if let (Some(x), Some(y)) = (squeeze.pack(a), squeeze.pack(b)) {
                prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            }
            prop_assert_eq!(squeeze.pack(-1), None);
        }

        /// A packed pair unpacks to the pair of its tuple, packs back from it, and packed
        /// order is pair order, ASC and DESC; a NULL key does not pack.
        #[test]
        fn a_packed_pair_is_its_pair(
            descending in any::<bool>(),
            nulls_first in any::<bool>(),
            rows in prop::collection::vec((any::<i32>(), 0i64..1 << 31), 2..40),
        ) {
            let layout = RowLayout::new(&[DataType::Int4, DataType::Int8]);
            let keys = SortKeys::new(layout, &[SortColumn { column: 0, descending, nulls_first }, SortColumn::new(1, false)]).unwrap();
            let form = keys.pair_form().expect("pair form");
            let packing = Packing::new(form, PayloadSqueeze::new(10, 0)).expect("an int4 form packs");
            let mut packed = Vec::new();
            for &(first, second) in &rows {
                let pair = form.int4_pair(Some(first), second);
                let p = packing.pack(Some(first), second).expect("packs");
                let back = packing.unpack(p);
                prop_assert_eq!((back.abbrev, back.payload()), (pair.abbrev, pair.payload()));
                prop_assert_eq!(packing.pack_pair(pair), Some(p));
                packed.push((p, pair));
            }
            prop_assert_eq!(packing.pack(None, 5), None);
            prop_assert_eq!(packing.pack_pair(form.int4_pair(None, 5)), None);
            for w in packed.windows(2) {
                let (x, y) = (w[0], w[1]);
                prop_assert_eq!(x.0.cmp(&y.0), (x.1.abbrev, x.1.payload()).cmp(&(y.1.abbrev, y.1.payload())));
            }
        }
    }

    /// Packed pairs sort like their values, in place and through the second buffer.
    #[test]
    fn packed_pairs_sort_like_their_values() {
        let spread = |i: u64| i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let cases: [(&str, Box<dyn Fn(u64) -> u64>); 3] = [
            ("spread", Box::new(spread)),
            ("one key byte varies", Box::new(|i: u64| ((i * 31) % 256) << 32 | (spread(i) >> 40))),
            ("ties", Box::new(|i: u64| ((i % 3) << 40) | (i * 7919 % 100_003))),
        ];
        for (name, value) in cases {
            for (n, cap) in [(200_000u64, usize::MAX), (200_000, 2_000), (3_000, 100), (3_000, usize::MAX)] {
                let mut pairs: Vec<PackedPair> = (0..n).map(|i| PackedPair(value(i))).collect();
                let mut expected = pairs.clone();
                expected.sort_unstable();
                sort_packed(&mut pairs, &mut Vec::new(), cap);
                assert!(pairs == expected, "{name}, {n} pairs, cap {cap}");
            }
        }
    }

    #[test]
    fn sorts_by_abbreviation_then_payload() {
        let mut pairs: Vec<SortTuple> =
            (0..5000u64).map(|i| SortTuple::new((i * 7919) % 97, (i * 104_729) % 5000)).collect();
        sort_pairs(&mut pairs, &mut Vec::new(), usize::MAX);
        assert!(pairs.windows(2).all(|w| (w[0].abbrev, w[0].payload()) <= (w[1].abbrev, w[1].payload())));
    }

    /// With the second buffer capped, big buckets and big arrays sort by comparison in
    /// place: the order is the same and the buffer stays within the cap.
    #[test]
    fn a_capped_second_buffer_sorts_the_same() {
        let spread = |i: u64| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16) | 1 << 60;
        let cases: [(&str, Box<dyn Fn(u64) -> u64>); 4] = [
            ("spread", Box::new(spread)),
            // Most keys share one top byte: that bucket is past any small cap.
            ("crowded", Box::new(move |i: u64| if i % 8 == 0 { spread(i) } else { (5 << 56) | (i * 7919 % 100_003) })),
            ("one byte varies", Box::new(|i: u64| (i * 31) % 256)),
            ("ties", Box::new(|i: u64| (i % 3) << 40 | (i % 5) << 8)),
        ];
        for (name, key) in cases {
            for (n, cap) in [(200_000u64, 0usize), (200_000, 2_000), (200_000, 12_500), (3_000, 100), (70_000, 70_000)] {
                let original: Vec<SortTuple> = (0..n).map(|i| SortTuple::new(key(i), (i * 104_729) % n)).collect();
                let mut expected = original.clone();
                expected.sort_unstable_by_key(|p| (p.abbrev, p.payload()));
                let mut pairs = original.clone();
                let mut scratch = Vec::new();
                sort_pairs(&mut pairs, &mut scratch, cap);
                assert!(scratch.len() <= cap, "{name}, {n} pairs: the buffer grew to {} past {cap}", scratch.len());
                let got: Vec<(u64, u64)> = pairs.iter().map(|p| (p.abbrev, p.payload())).collect();
                let want: Vec<(u64, u64)> = expected.iter().map(|p| (p.abbrev, p.payload())).collect();
                assert!(got == want, "{name}, {n} pairs, cap {cap}: not in (abbreviation, payload) order");
            }
        }
    }

    #[test]
    fn only_two_column_int_layouts_have_a_pair_form() {
        let keys = |types: &[DataType], columns: &[SortColumn]| SortKeys::new(RowLayout::new(types), columns).unwrap();
        let asc = |c| SortColumn::new(c, false);
        assert!(keys(&[DataType::Int4, DataType::Int8], &[asc(0), asc(1)]).pair_form().is_some());
        assert!(keys(&[DataType::Int8, DataType::Int8], &[asc(0), asc(1)]).pair_form().is_none());
        assert!(keys(&[DataType::Int4, DataType::Int8], &[asc(0), SortColumn::new(1, true)]).pair_form().is_none());
        assert!(keys(&[DataType::Int4, DataType::Int8], &[asc(0)]).pair_form().is_none());
        assert!(keys(&[DataType::Int4, DataType::Int8, DataType::Int4], &[asc(0), asc(1)]).pair_form().is_none());
        assert!(keys(&[DataType::Int4, DataType::Int8], &[asc(1), asc(0)]).pair_form().is_none());
    }
}
