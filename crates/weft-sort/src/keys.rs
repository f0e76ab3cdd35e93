//! Sort keys over encoded tuples: full comparison and the abbreviated key.
//!
//! Tuples stay in the tuple format of `weft_common::tuple` the whole way through the
//! sort (memory, tapes, merge): keys are read in place, never decoded into `Datum`s.
//!
//! The abbreviated key is a `u64` computed once per tuple from the first sort key, such
//! that `abbrev(a) < abbrev(b)` implies `a < b` (it is order-preserving, not injective):
//! equal abbreviations fall back to the full comparison. Direction and NULL placement are
//! folded in, so comparing abbreviations is always an unsigned `<`.

use std::cmp::Ordering;

use weft_common::numeric::Numeric;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result};

use crate::pairs::{FirstKey, PairForm};

/// One ORDER BY item: a column of the sorted rows and its direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortColumn {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

impl SortColumn {
    /// PostgreSQL's default: NULLS LAST for ascending, NULLS FIRST for descending.
    pub fn new(column: usize, descending: bool) -> SortColumn {
        SortColumn { column, descending, nulls_first: descending }
    }
}

/// Where a key's value sits in a tuple, resolved once per sort.
#[derive(Clone, Copy, Debug)]
enum Access {
    Bool(usize),
    Int4(usize),
    Int8(usize),
    Float8(usize),
    Numeric(usize),
    /// An interval, ordered by its linear span (`Interval::span`).
    Interval(usize),
    /// Index among the variable-width columns.
    Text(usize),
    /// An array (index among the variable-width columns): decoded to compare, with no
    /// abbreviation (every array abbreviates alike, so the full comparison decides).
    Array(usize, weft_common::types::ElemType),
}

#[derive(Clone, Copy, Debug)]
struct Key {
    column: usize,
    access: Access,
    descending: bool,
    nulls_first: bool,
}

/// The layout of the sorted tuples and the keys they are ordered by.
#[derive(Clone, Debug)]
pub struct SortKeys {
    layout: RowLayout,
    keys: Vec<Key>,
}

impl SortKeys {
    pub fn new(layout: RowLayout, columns: &[SortColumn]) -> Result<SortKeys> {
        let mut keys = Vec::with_capacity(columns.len());
        for c in columns {
            if c.column >= layout.len() {
                return Err(Error::internal(format!("sort key column {} out of {}", c.column, layout.len())));
            }
            let fixed = layout.fixed_offset_of(c.column);
            let access = match (layout.types()[c.column], fixed) {
                (DataType::Bool, Some(off)) => Access::Bool(off),
                // A date is an i32 day count and times and timestamps are i64
                // microsecond counts (infinities at the ends), ordered as the integers.
                (DataType::Int4 | DataType::Date, Some(off)) => Access::Int4(off),
                (DataType::Int8 | DataType::Time | DataType::Timestamp | DataType::TimestampTz, Some(off)) => {
                    Access::Int8(off)
                }
                (DataType::Interval, Some(off)) => Access::Interval(off),
                (DataType::Float8, Some(off)) => Access::Float8(off),
                (DataType::Numeric, Some(off)) => Access::Numeric(off),
                (DataType::Text, None) => Access::Text(layout.var_index_of(c.column).expect("variable-width column")),
                (DataType::Array(elem), None) => Access::Array(layout.var_index_of(c.column).expect("variable-width column"), elem),
                (ty, _) => return Err(Error::internal(format!("cannot sort by a column of type {}", ty.name()))),
            };
            keys.push(Key { column: c.column, access, descending: c.descending, nulls_first: c.nulls_first });
        }
        Ok(SortKeys { layout, keys })
    }

    pub fn layout(&self) -> &RowLayout {
        &self.layout
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Is the first key text (the only type whose abbreviation can stop discriminating)?
    pub fn first_key_is_text(&self) -> bool {
        matches!(self.keys.first().map(|k| k.access), Some(Access::Text(_)))
    }

    /// The column of a first key whose per-block `(min, max)` (a zone map) can tell a
    /// bounded sort that a block holds nothing it keeps: int4, int8 or text (its 8-byte
    /// prefix, the abbreviation) with NULLs last (a block's NULLs are not in its range,
    /// so with NULLs first any block might hold the best rows).
    pub fn zone_prunable_column(&self) -> Option<usize> {
        let key = self.keys.first()?;
        (matches!(key.access, Access::Int4(_) | Access::Int8(_) | Access::Text(_)) && !key.nulls_first).then_some(key.column)
    }

    /// The column of a first key of int4, int8 or text: a row's value of it as a zone map
    /// keeps it gives the row's abbreviation ([`abbrev_of_zone_value`](Self::abbrev_of_zone_value)),
    /// so a bounded sort can turn the row away before it is decoded.
    pub fn row_prunable_column(&self) -> Option<usize> {
        let key = self.keys.first()?;
        matches!(key.access, Access::Int4(_) | Access::Int8(_) | Access::Text(_)).then_some(key.column)
    }

    /// The abbreviation of a row whose first key has the zone value `value` (`None`: NULL),
    /// for a first key that [`row_prunable_column`](Self::row_prunable_column) accepts.
    pub fn abbrev_of_zone_value(&self, value: Option<i64>) -> u64 {
        match value {
            Some(v) => self.best_abbrev_in(v, v),
            None if self.keys.first().is_some_and(|k| k.nulls_first) => 0,
            None => u64::MAX,
        }
    }

    /// The abbreviation of the best first key a block whose non-NULL values lie in
    /// `min..=max` can hold (`min > max`: none, only NULLs if anything), for a first key
    /// that [`zone_prunable_column`](Self::zone_prunable_column) accepts (for text, the
    /// values are prefixes as [`text_zone_value`] makes them). A block
    /// whose best is above the worst abbreviation a bounded sort keeps holds nothing it
    /// keeps: its keys' abbreviations are all above it.
    pub fn best_abbrev_in(&self, min: i64, max: i64) -> u64 {
        let Some(key) = self.keys.first() else { return 0 };
        if min > max {
            return if key.nulls_first { 0 } else { u64::MAX };
        }
        let order = |v: i64| match key.access {
            Access::Int4(_) => Some(int4_order_value(v.clamp(i32::MIN as i64, i32::MAX as i64) as i32)),
            // Int8's abbreviation, and the inverse of `text_zone_value`.
            Access::Int8(_) | Access::Text(_) => Some((v as u64) ^ ZONE_SIGN),
            _ => None,
        };
        let best = if key.descending { order(max).map(|v| !v) } else { order(min) };
        // Not prunable: every block may hold the best.
        best.unwrap_or(0)
    }

    /// Are the first key's abbreviations few-byte integers that a radix sort orders in a
    /// handful of passes? Not for text, whose 8-byte prefixes vary in every byte.
    pub fn suits_radix_sort(&self) -> bool {
        matches!(self.keys.first().map(|k| k.access), Some(Access::Bool(_) | Access::Int4(_) | Access::Int8(_)))
    }

    /// The pair form of these keys' tuples, if they have one (see `pairs.rs`): two
    /// columns, a bool or int4 first key, then an ascending int8 second key.
    pub(crate) fn pair_form(&self) -> Option<PairForm> {
        let [first, second] = self.keys.as_slice() else { return None };
        if self.layout.len() != 2 || first.column != 0 || second.column != 1 || second.descending {
            return None;
        }
        let (kind, first_offset) = match first.access {
            Access::Bool(off) => (FirstKey::Bool, off),
            Access::Int4(off) => (FirstKey::Int4, off),
            _ => return None,
        };
        let Access::Int8(second_offset) = second.access else { return None };
        if second_offset + 8 > PairForm::MAX_TUPLE_LEN {
            return None;
        }
        Some(PairForm { first: kind, first_offset, second_offset, descending: first.descending, nulls_first: first.nulls_first })
    }

    /// The bytes of the first key when it is text (for the cardinality check).
    pub fn first_key_text<'a>(&self, tuple: &'a [u8]) -> &'a [u8] {
        match self.keys.first() {
            Some(Key { access: Access::Text(index), column, .. }) if !self.layout.is_null(tuple, *column) => {
                text_bytes(&self.layout, tuple, *index)
            }
            _ => &[],
        }
    }

    /// Compare two tuples by every key.
    #[inline]
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        for key in &self.keys {
            let ordering = self.compare_key(key, a, b);
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        Ordering::Equal
    }

    /// Compare by every key but the first: what is left once equal abbreviations of an
    /// abbreviation that is exact (integers, bool) have settled the first key.
    #[inline]
    pub fn compare_after_first(&self, a: &[u8], b: &[u8]) -> Ordering {
        for key in &self.keys[1..] {
            let ordering = self.compare_key(key, a, b);
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        Ordering::Equal
    }

    #[inline(always)]
    fn compare_key(&self, key: &Key, a: &[u8], b: &[u8]) -> Ordering {
        let layout = &self.layout;
        match (layout.is_null(a, key.column), layout.is_null(b, key.column)) {
            (true, true) => return Ordering::Equal,
            (true, false) => return if key.nulls_first { Ordering::Less } else { Ordering::Greater },
            (false, true) => return if key.nulls_first { Ordering::Greater } else { Ordering::Less },
            (false, false) => {}
        }
        let ordering = match key.access {
            Access::Bool(off) => a[off].cmp(&b[off]),
            Access::Int4(off) => read_i32(a, off).cmp(&read_i32(b, off)),
            Access::Int8(off) => read_i64(a, off).cmp(&read_i64(b, off)),
            Access::Float8(off) => compare_float8(read_f64(a, off), read_f64(b, off)),
            Access::Numeric(off) => read_numeric(a, off).cmp_value(&read_numeric(b, off)),
            Access::Interval(off) => interval_span(a, off).cmp(&interval_span(b, off)),
            Access::Text(index) => text_bytes(layout, a, index).cmp(text_bytes(layout, b, index)),
            Access::Array(index, elem) => compare_array_bytes(layout, a, b, index, elem),
        };
        if key.descending { ordering.reverse() } else { ordering }
    }

    /// Is equality of abbreviations equality of the first key? True for bool and
    /// integers (NULL is then told apart by [`abbreviate`](Self::abbreviate)'s caller).
    pub fn abbreviation_is_exact(&self) -> bool {
        matches!(self.keys.first().map(|k| k.access), Some(Access::Bool(_) | Access::Int4(_)))
    }

    /// The order-preserving `u64` of the first key (0 when there are no keys).
    #[inline]
    pub fn abbreviate(&self, tuple: &[u8]) -> u64 {
        let Some(key) = self.keys.first() else { return 0 };
        let value = if self.layout.is_null(tuple, key.column) {
            // NULL goes to an end of the range; a value mapping to the same end ties
            // with it and the full comparison decides.
            return if key.nulls_first { 0 } else { u64::MAX };
        } else {
            match key.access {
                Access::Bool(off) => tuple[off] as u64 + 1,
                // int4 leaves room at both ends, so that NULL never ties with a value.
                Access::Int4(off) => int4_order_value(read_i32(tuple, off)),
                Access::Int8(off) => (read_i64(tuple, off) as u64) ^ (1 << 63),
                Access::Float8(off) => float8_abbrev(read_f64(tuple, off)),
                Access::Numeric(off) => float8_abbrev(read_numeric(tuple, off).to_f64()),
                Access::Interval(off) => interval_abbrev(interval_span(tuple, off)),
                Access::Text(index) => text_abbrev(text_bytes(&self.layout, tuple, index)),
                Access::Array(..) => 1 << 63,
            }
        };
        if key.descending {
            // Keep NULL's end reserved: reflect values inside [1, MAX-1] where possible.
            !value
        } else {
            value
        }
    }
}

pub use weft_common::types::compare_float8;

/// Two stored arrays in PostgreSQL's order; undecodable bytes (never written by
/// `RowLayout::encode`) compare equal rather than panic.
fn compare_array_bytes(layout: &RowLayout, a: &[u8], b: &[u8], index: usize, elem: weft_common::types::ElemType) -> Ordering {
    let decode = |t: &[u8]| layout.var_bytes(t, index).and_then(|bytes| weft_common::tuple::decode_array(elem, bytes));
    match (decode(a), decode(b)) {
        (Ok(Datum::Array(x)), Ok(Datum::Array(y))) => weft_common::types::compare_arrays(&x, &y),
        _ => Ordering::Equal,
    }
}

/// The linear span of an interval stored at `off` (micros, days, months).
#[inline]
fn interval_span(tuple: &[u8], off: usize) -> i128 {
    let micros = read_i64(tuple, off);
    let days = read_i32(tuple, off + 8);
    let months = read_i32(tuple, off + 12);
    weft_common::datetime::Interval::new(months, days, micros).span()
}

/// An interval span's abbreviation: the span shifted right so that every span fits in
/// 64 bits, order-preserving but not injective; kept inside [1, MAX-1] for NULL.
#[inline]
fn interval_abbrev(span: i128) -> u64 {
    // |span| < 2^31 * 30 * 86400e6 * 2 + 2^63 < 2^96: drop the low 32 bits.
    let shifted = (span >> 32) as i64;
    ((shifted as u64) ^ (1 << 63)).clamp(1, u64::MAX - 1)
}

/// An int4's abbreviation before direction is applied: order-preserving, leaving room at
/// both ends so that NULL (0 or `u64::MAX`) never ties with a value.
#[inline(always)]
pub(crate) fn int4_order_value(v: i32) -> u64 {
    (v as i64 - i32::MIN as i64) as u64 + 1
}

/// Map a float8 to a `u64` whose unsigned order is PostgreSQL's order.
#[inline]
fn float8_abbrev(v: f64) -> u64 {
    if v.is_nan() {
        return u64::MAX - 1;
    }
    // -0 and 0 compare equal, so they must abbreviate equally.
    let bits = if v == 0.0 { 0 } else { v.to_bits() };
    let mapped = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
    // Keep u64::MAX and 0 for NULL and NaN at the ends: squeeze values into [1, MAX-2].
    mapped.clamp(1, u64::MAX - 2)
}

/// A text's place in a zone map (see `weft_storage::zone_map`): its abbreviation (first
/// 8 bytes, zero-padded, big-endian) with the top bit flipped, so that signed order is
/// byte order. [`SortKeys::best_abbrev_in`] undoes it.
pub fn text_zone_value(bytes: &[u8]) -> i64 {
    (text_abbrev(bytes) ^ ZONE_SIGN) as i64
}

/// Flips unsigned order into signed order and back.
const ZONE_SIGN: u64 = 1 << 63;

/// The first eight bytes, big-endian: byte order of the prefix.
#[inline]
fn text_abbrev(bytes: &[u8]) -> u64 {
    let mut prefix = [0u8; 8];
    let n = bytes.len().min(8);
    prefix[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(prefix)
}

#[inline(always)]
fn read_i32(tuple: &[u8], off: usize) -> i32 {
    i32::from_le_bytes(tuple[off..off + 4].try_into().expect("4 bytes"))
}

#[inline(always)]
fn read_i64(tuple: &[u8], off: usize) -> i64 {
    i64::from_le_bytes(tuple[off..off + 8].try_into().expect("8 bytes"))
}

#[inline(always)]
fn read_f64(tuple: &[u8], off: usize) -> f64 {
    f64::from_bits(read_i64(tuple, off) as u64)
}

fn read_numeric(tuple: &[u8], off: usize) -> Numeric {
    Numeric {
        mantissa: i128::from_le_bytes(tuple[off..off + 16].try_into().expect("16 bytes")),
        scale: u16::from_le_bytes(tuple[off + 16..off + 18].try_into().expect("2 bytes")),
    }
}

/// A text column of a tuple this sort encoded itself (so well formed).
#[inline(always)]
fn text_bytes<'a>(layout: &RowLayout, tuple: &'a [u8], index: usize) -> &'a [u8] {
    layout.var_bytes(tuple, index).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use weft_common::Datum;

    fn encode(layout: &RowLayout, row: &[Datum]) -> Vec<u8> {
        let mut out = Vec::new();
        layout.encode(row, &mut out).unwrap();
        out
    }

    fn float_strategy() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            Just(f64::NAN),
            Just(-0.0),
            Just(0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            (-3i32..3).prop_map(|v| v as f64),
        ]
    }

    fn datum_strategy(ty: DataType) -> BoxedStrategy<Datum> {
        let value: BoxedStrategy<Datum> = match ty {
            DataType::Bool => any::<bool>().prop_map(Datum::Bool).boxed(),
            DataType::Int4 => prop_oneof![any::<i32>(), -3i32..3, Just(i32::MIN), Just(i32::MAX)].prop_map(Datum::Int4).boxed(),
            DataType::Int8 => prop_oneof![any::<i64>(), -3i64..3, Just(i64::MIN), Just(i64::MAX)].prop_map(Datum::Int8).boxed(),
            DataType::Float8 => float_strategy().prop_map(Datum::Float8).boxed(),
            DataType::Text => "(abcdefgh){0,2}[a-c\u{e9}]{0,3}".prop_map(Datum::Text).boxed(),
            DataType::Date => prop_oneof![any::<i32>(), -3i32..3, Just(i32::MIN), Just(i32::MAX)].prop_map(Datum::Date).boxed(),
            DataType::Timestamp => prop_oneof![any::<i64>(), -3i64..3, Just(i64::MIN), Just(i64::MAX)].prop_map(Datum::Timestamp).boxed(),
            DataType::TimestampTz => any::<i64>().prop_map(Datum::TimestampTz).boxed(),
            DataType::Time => (0i64..=86_400_000_000).prop_map(Datum::Time).boxed(),
            // Small fields collide often: `1 mon` against `30 days` against `720:00:00`.
            DataType::Interval => prop_oneof![
                (any::<i32>(), any::<i32>(), any::<i64>()),
                (-2i32..2, (-2i32..2).prop_map(|d| d * 30), (-2i64..2).prop_map(|h| h * 86_400_000_000)),
                (Just(0), Just(0), (-(1i64 << 40)..(1i64 << 40)).prop_map(|v| v << 20)),
            ]
            .prop_map(|(m, d, us)| Datum::Interval(weft_common::datetime::Interval::new(m, d, us)))
            .boxed(),
            _ => unreachable!(),
        };
        prop_oneof![1 => Just(Datum::Null), 6 => value].boxed()
    }

    /// The reference order, written independently of the encoded-tuple code.
    fn reference(a: &Datum, b: &Datum, descending: bool, nulls_first: bool) -> Ordering {
        match (a.is_null(), b.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => if nulls_first { Ordering::Less } else { Ordering::Greater },
            (false, true) => if nulls_first { Ordering::Greater } else { Ordering::Less },
            _ => {
                let o = match (a, b) {
                    (Datum::Bool(x), Datum::Bool(y)) => x.cmp(y),
                    (Datum::Int4(x), Datum::Int4(y)) => x.cmp(y),
                    (Datum::Int8(x), Datum::Int8(y)) => x.cmp(y),
                    (Datum::Float8(x), Datum::Float8(y)) => compare_float8(*x, *y),
                    (Datum::Text(x), Datum::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
                    (Datum::Date(x), Datum::Date(y)) => x.cmp(y),
                    (Datum::Time(x), Datum::Time(y))
                    | (Datum::Timestamp(x), Datum::Timestamp(y))
                    | (Datum::TimestampTz(x), Datum::TimestampTz(y)) => x.cmp(y),
                    (Datum::Interval(x), Datum::Interval(y)) => {
                        let span = |i: &weft_common::datetime::Interval| {
                            (i.months as i128 * 30 + i.days as i128) * 86_400_000_000 + i.micros as i128
                        };
                        span(x).cmp(&span(y))
                    }
                    _ => unreachable!(),
                };
                if descending { o.reverse() } else { o }
            }
        }
    }

    fn type_strategy() -> impl Strategy<Value = DataType> {
        prop_oneof![
            Just(DataType::Bool),
            Just(DataType::Int4),
            Just(DataType::Int8),
            Just(DataType::Float8),
            Just(DataType::Text),
            Just(DataType::Date),
            Just(DataType::Time),
            Just(DataType::Timestamp),
            Just(DataType::TimestampTz),
            Just(DataType::Interval)
        ]
    }

    proptest! {
        #[test]
        fn abbreviation_preserves_order(
            (ty, pairs) in type_strategy().prop_flat_map(|ty| {
                (Just(ty), prop::collection::vec((datum_strategy(ty), datum_strategy(ty)), 1..50))
            }),
            descending in any::<bool>(),
            nulls_first in any::<bool>(),
        ) {
            let layout = RowLayout::new(&[DataType::Int4, ty]);
            let keys = SortKeys::new(layout.clone(), &[SortColumn { column: 1, descending, nulls_first }]).unwrap();
            for (a, b) in pairs {
                let (ta, tb) = (encode(&layout, &[Datum::Int4(0), a.clone()]), encode(&layout, &[Datum::Int4(0), b.clone()]));
                let expected = reference(&a, &b, descending, nulls_first);
                prop_assert_eq!(keys.compare(&ta, &tb), expected, "{:?} vs {:?}", a, b);
                let (x, y) = (keys.abbreviate(&ta), keys.abbreviate(&tb));
                if x < y { prop_assert_eq!(expected, Ordering::Less, "{:?} vs {:?}", a, b); }
                if x > y { prop_assert_eq!(expected, Ordering::Greater, "{:?} vs {:?}", a, b); }
                if keys.abbreviation_is_exact() && x == y { prop_assert_eq!(expected, Ordering::Equal); }
            }
        }
    }

    #[test]
    fn numeric_order_is_postgres_order() {
        use weft_common::numeric::Numeric;
        // Ascending, equal values in one group: -Infinity < finite < Infinity < NaN = NaN.
        let groups: &[&[&str]] = &[
            &["-Infinity", "-inf"],
            &["-99999999999999999999999999999999999999"],
            &["-1.5", "-1.500"],
            &["0", "0.000"],
            &["0.0000000000000000000000000000000000001"],
            &["1.5", "1.50"],
            &["99999999999999999999999999999999999999"],
            &["Infinity"],
            &["NaN", "nan"],
        ];
        let values: Vec<(usize, Datum)> = groups
            .iter()
            .enumerate()
            .flat_map(|(rank, group)| group.iter().map(move |v| (rank, Datum::Numeric(Numeric::parse(v).unwrap()))))
            .chain([(groups.len(), Datum::Null)])
            .collect();
        let layout = RowLayout::new(&[DataType::Numeric]);
        for descending in [false, true] {
            let keys = SortKeys::new(layout.clone(), &[SortColumn { column: 0, descending, nulls_first: false }]).unwrap();
            for (rank_a, a) in &values {
                for (rank_b, b) in &values {
                    let (ta, tb) = (encode(&layout, &[a.clone()]), encode(&layout, &[b.clone()]));
                    let null_involved = a.is_null() || b.is_null();
                    let expected = if descending && !null_involved { rank_b.cmp(rank_a) } else { rank_a.cmp(rank_b) };
                    assert_eq!(keys.compare(&ta, &tb), expected, "{a:?} vs {b:?}, descending {descending}");
                    // The abbreviation may tie where values differ, never disagree.
                    let (x, y) = (keys.abbreviate(&ta), keys.abbreviate(&tb));
                    assert!(x == y || x.cmp(&y) == expected, "abbreviations of {a:?} vs {b:?}, descending {descending}");
                }
            }
        }
    }

    #[test]
    fn float_order_is_postgres_order() {
        let layout = RowLayout::new(&[DataType::Float8]);
        let keys = SortKeys::new(layout.clone(), &[SortColumn::new(0, false)]).unwrap();
        let values = [f64::NEG_INFINITY, -1.5, -0.0, 0.0, 2.0, f64::INFINITY, f64::NAN];
        let tuples: Vec<Vec<u8>> = values.iter().map(|v| encode(&layout, &[Datum::Float8(*v)])).collect();
        for i in 0..tuples.len() {
            for j in 0..tuples.len() {
                let expected = if values[i].is_nan() || values[j].is_nan() {
                    values[i].is_nan().cmp(&values[j].is_nan())
                } else {
                    values[i].partial_cmp(&values[j]).unwrap()
                };
                assert_eq!(keys.compare(&tuples[i], &tuples[j]), expected);
            }
        }
        assert_eq!(keys.abbreviate(&tuples[2]), keys.abbreviate(&tuples[3]), "-0 and 0 abbreviate alike");
    }
}
