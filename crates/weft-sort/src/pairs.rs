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

use std::sync::Arc;

use crate::keys::int4_order_value;
use crate::merge::PairRange;
use crate::memtuples::SortTuple;
use crate::radix;

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

/// A participant's sorted pairs: its one run when its share fit its budget.
pub(crate) struct PairRun {
    pub form: PairForm,
    pub pairs: Vec<SortTuple>,
}

impl PairRun {
    pub fn count(&self) -> u64 {
        self.pairs.len() as u64
    }

    /// The tuple at `ordinal`.
    pub fn tuple_at(&self, ordinal: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.form.tuple_len());
        self.form.rebuild(self.pairs[ordinal], &mut out);
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
        self.run.pairs[self.next - 1].abbrev
    }

    #[inline]
    pub fn advance(&mut self) -> bool {
        self.has_current = self.next < self.end;
        if self.has_current {
            self.run.form.rebuild(self.run.pairs[self.next], &mut self.tuple);
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
