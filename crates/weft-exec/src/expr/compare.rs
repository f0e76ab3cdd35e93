//! Ordering, equality and hashing of datums, as sorts, comparisons and `GROUP BY` need them.
//!
//! PostgreSQL's btree opclasses define one total order per type, and its hash opclasses
//! hash consistently with that order's equality. weft follows them:
//!
//! 1. `float8`: NaN equals NaN and is greater than every other value (also `Infinity`);
//!    `-0` equals `0` (`float8_cmp_internal`). Hashing maps `-0` to `0` and every NaN to
//!    one NaN, as `hashfloat8` does.
//! 2. `numeric`: by value, not by representation: `1.0 = 1.00`. Hashing strips trailing
//!    fractional zeros first, so equal values hash equal.
//! 3. `text`: byte order of the UTF-8 encoding, i.e. the C collation.
//! 4. Values of different types never compare equal; they are ordered by a fixed type
//!    rank. Resolution casts both sides of a comparison to one type, so this only orders
//!    mixed rows deterministically (e.g. in a test), it carries no SQL meaning.
//! 5. arrays: element by element, a NULL element after every value, then by length
//!    (`array_cmp`); equal arrays hash equal through their elements' hashes.
//! 6. `NULL` sorts after every value and equals `NULL` (SQL grouping, `NULLS LAST`).
//!    SQL's `=` on `NULL` yields `NULL`; that is `eval`'s job, not this module's.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use weft_common::{Datum, Numeric};

/// Compares two datums under PostgreSQL's btree order (see the module comment).
/// Meant for two non-null values of one type; mixed types and NULLs get a fixed,
/// total but meaningless order.
pub fn compare_datums(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        (Datum::Bool(x), Datum::Bool(y)) => x.cmp(y),
        (Datum::Int4(x), Datum::Int4(y)) => x.cmp(y),
        (Datum::Int8(x), Datum::Int8(y)) => x.cmp(y),
        (Datum::Float8(x), Datum::Float8(y)) => compare_float8(*x, *y),
        (Datum::Numeric(x), Datum::Numeric(y)) => compare_numeric(x, y),
        (Datum::Text(x), Datum::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Datum::Date(x), Datum::Date(y)) => x.cmp(y),
        (Datum::Time(x), Datum::Time(y)) => x.cmp(y),
        (Datum::Timestamp(x), Datum::Timestamp(y)) => x.cmp(y),
        (Datum::TimestampTz(x), Datum::TimestampTz(y)) => x.cmp(y),
        // Intervals by their linear span: `1 mon` = `30 days` = `720 hours`.
        (Datum::Interval(x), Datum::Interval(y)) => x.cmp_value(y),
        (Datum::Array(x), Datum::Array(y)) => super::array::compare_arrays(x, y),
        _ => type_rank(a).cmp(&type_rank(b)),
    }
}

pub use weft_common::types::compare_float8;

/// Orders two rows of sort keys, each key `(descending, nulls_first)` as in ORDER BY.
pub fn compare_sort_keys(a: &[Datum], b: &[Datum], order: &[(bool, bool)]) -> Ordering {
    for ((x, y), &(descending, nulls_first)) in a.iter().zip(b).zip(order) {
        let ordering = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => if nulls_first { Ordering::Less } else { Ordering::Greater },
            (false, true) => if nulls_first { Ordering::Greater } else { Ordering::Less },
            (false, false) if descending => compare_datums(x, y).reverse(),
            (false, false) => compare_datums(x, y),
        };
        if ordering.is_ne() {
            return ordering;
        }
    }
    Ordering::Equal
}

/// Numeric comparison by value (`1.0 = 1.00`).
pub fn compare_numeric(a: &Numeric, b: &Numeric) -> Ordering {
    a.cmp_value(b)
}

fn type_rank(d: &Datum) -> u8 {
    match d {
        Datum::Bool(_) => 0,
        Datum::Int4(_) => 1,
        Datum::Int8(_) => 2,
        Datum::Float8(_) => 3,
        Datum::Numeric(_) => 4,
        Datum::Text(_) => 5,
        Datum::Date(_) => 7,
        Datum::Time(_) => 8,
        Datum::Timestamp(_) => 9,
        Datum::TimestampTz(_) => 10,
        Datum::Interval(_) => 11,
        Datum::Array(_) => 12,
        Datum::Null => u8::MAX,
    }
}

/// Feeds `d` into `h` so that values `compare_datums` calls equal hash equal.
#[inline]
pub fn datum_hash<H: Hasher>(d: &Datum, h: &mut H) {
    type_rank(d).hash(h);
    match d {
        Datum::Null => {}
        Datum::Bool(v) => v.hash(h),
        Datum::Int4(v) => v.hash(h),
        Datum::Int8(v) => v.hash(h),
        Datum::Float8(v) => canonical_float8_bits(*v).hash(h),
        Datum::Numeric(n) => {
            let normalized = n.normalize();
            { normalized.mantissa }.hash(h);
            normalized.scale.hash(h);
        }
        Datum::Text(s) => s.as_bytes().hash(h),
        Datum::Date(v) => v.hash(h),
        Datum::Time(v) | Datum::Timestamp(v) | Datum::TimestampTz(v) => v.hash(h),
        Datum::Interval(iv) => iv.span().hash(h),
        Datum::Array(a) => {
            a.items.len().hash(h);
            for item in &a.items {
                datum_hash(item, h);
            }
        }
    }
}

/// One bit pattern per equality class: `-0` becomes `0`, every NaN the same NaN.
fn canonical_float8_bits(v: f64) -> u64 {
    if v.is_nan() {
        f64::NAN.to_bits()
    } else if v == 0.0 {
        0.0f64.to_bits()
    } else {
        v.to_bits()
    }
}

/// A grouping key: one row's `GROUP BY` values, with SQL grouping semantics — NULLs
/// group together, `-0` groups with `0`, `1.0` with `1.00`, NaN with NaN.
#[derive(Clone, Debug)]
pub struct GroupKey(pub Vec<Datum>);

impl PartialEq for GroupKey {
    fn eq(&self, other: &GroupKey) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().zip(&other.0).all(|(a, b)| compare_datums(a, b) == Ordering::Equal)
    }
}

impl Eq for GroupKey {}

impl Hash for GroupKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.len().hash(h);
        for d in &self.0 {
            datum_hash(d, h);
        }
    }
}

impl PartialOrd for GroupKey {
    fn partial_cmp(&self, other: &GroupKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Lexicographic by `compare_datums`; consistent with `Eq`.
impl Ord for GroupKey {
    fn cmp(&self, other: &GroupKey) -> Ordering {
        for (a, b) in self.0.iter().zip(&other.0) {
            let ord = compare_datums(a, b);
            if ord != Ordering::Equal {
                return ord;
            }
        }
        self.0.len().cmp(&other.0.len())
    }
}
