//! The ordered-set aggregates `percentile_cont(f)`, `percentile_disc(f)`, `mode()` and the
//! hypothetical-set aggregates `rank(h...)`, `dense_rank`, `percent_rank`, `cume_dist`,
//! all written `WITHIN GROUP (ORDER BY ...)`.
//!
//! **Ordered sets** keep every non-NULL value of the group and sort them (in the WITHIN
//! GROUP direction) when the group finishes, as PostgreSQL's final functions sort their
//! tuplesort. Partial states of participants and spill files merge by appending, so the
//! result does not depend on the order rows arrive in. The state is counted like an
//! ordered string_agg's and, like it, one group's values are not bounded by the budget.
//!
//! **Hypothetical sets** need no sort: the rank of the hypothetical row is one plus the
//! rows sorting before it, and cume_dist counts its peers too, so the state is three
//! counters that merge by addition. `dense_rank` counts *distinct* rows before it, so it
//! also keeps those rows (deduplicated, under the sort's equality, when it finishes).
//! Hypothetical sets count rows with NULLs (NULLs sort as the key says), as PostgreSQL's.
//!
//! **Direct arguments** (the fraction, the hypothetical row) read only constants and
//! group keys. A constant one is known when the state is made (so a fraction out of
//! range fails even over no rows, as in PostgreSQL); one reading group keys is taken
//! from the group's first row, and travels with the state through merges and spills.

use std::sync::Arc;

use weft_common::types::format_float8;
use weft_common::{Datum, Error, Result, SqlState};

use super::table::datum_heap;
use crate::expr::compare::{compare_datums, compare_sort_keys};
use crate::expr::Expr;
use crate::plan::{AggregateCall, AggregateFunction};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SetKind {
    Cont,
    Disc,
    Mode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HypotheticalKind {
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
}

/// The direct arguments' values when they are constants (`Literal`s after binding).
fn constant_direct(call: &AggregateCall) -> Option<Vec<Datum>> {
    call.direct
        .iter()
        .map(|e| match e {
            Expr::Literal { value, .. } => Some(value.clone()),
            _ => None,
        })
        .collect()
}

fn values_bytes(values: &[Datum]) -> usize {
    values.iter().map(|v| size_of::<Datum>() + datum_heap(v)).sum()
}

/// The state of percentile_cont / percentile_disc / mode.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OrderedValues {
    pub(super) values: Vec<Datum>,
    pub(super) kind: SetKind,
    /// The direct arguments (the fraction, or none for mode), once known.
    pub(super) direct: Option<Vec<Datum>>,
    descending: bool,
    /// Heap bytes of `values` and `direct`.
    pub(super) bytes: usize,
}

impl OrderedValues {
    pub(super) fn new(call: &AggregateCall) -> Result<OrderedValues> {
        let kind = match call.function {
            AggregateFunction::PercentileCont => SetKind::Cont,
            AggregateFunction::PercentileDisc => SetKind::Disc,
            AggregateFunction::Mode => SetKind::Mode,
            other => return Err(Error::internal(format!("{other:?} is not an ordered-set aggregate"))),
        };
        let descending = call.order_by.first().is_some_and(|k| k.descending);
        let direct = constant_direct(call);
        let bytes = direct.as_deref().map_or(0, values_bytes);
        Ok(OrderedValues { values: Vec::new(), kind, direct, descending, bytes })
    }

    /// The same call's state with no value and its direct arguments unknown (a spill
    /// record carries them).
    pub(super) fn emptied(&self) -> OrderedValues {
        OrderedValues { values: Vec::new(), direct: None, bytes: 0, ..*self }
    }

    pub(super) fn needs_direct(&self) -> bool {
        self.direct.is_none()
    }

    /// Take the direct arguments (the group's first row's). Returns the change in bytes.
    pub(super) fn set_direct(&mut self, direct: Vec<Datum>) -> isize {
        let bytes = values_bytes(&direct);
        self.direct = Some(direct);
        self.bytes += bytes;
        bytes as isize
    }

    /// Add a value (NULLs are skipped). Returns the change in heap bytes.
    pub(super) fn push(&mut self, value: Datum) -> isize {
        if value.is_null() {
            return 0;
        }
        let bytes = size_of::<Datum>() + datum_heap(&value);
        self.values.push(value);
        self.bytes += bytes;
        bytes as isize
    }

    pub(super) fn merge(&mut self, other: OrderedValues) -> isize {
        let mut grew = 0;
        if let (None, Some(direct)) = (&self.direct, other.direct) {
            grew += self.set_direct(direct);
        }
        let bytes = values_bytes(&other.values);
        self.values.extend(other.values);
        self.bytes += bytes;
        grew + bytes as isize
    }

    pub(super) fn finish(mut self) -> Result<Datum> {
        // The fraction is checked before looking at the rows, as PostgreSQL's final
        // functions do. Unknown: it reads group keys and no row of the group reached the
        // call (all filtered out): the result is NULL either way.
        let fraction = match (self.kind, self.direct.as_deref()) {
            (SetKind::Mode, _) => 0.0,
            (_, None | Some([Datum::Null])) => return Ok(Datum::Null),
            (_, Some([Datum::Float8(f)])) if (0.0..=1.0).contains(f) => *f,
            (_, Some([Datum::Float8(f)])) => {
                return Err(Error::new(
                    SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                    format!("percentile value {} is not between 0 and 1", format_float8(*f)),
                ))
            }
            (_, Some(other)) => return Err(Error::internal(format!("percentile fraction {other:?}"))),
        };
        if self.values.is_empty() {
            return Ok(Datum::Null);
        }
        let descending = self.descending;
        self.values.sort_by(|a, b| if descending { compare_datums(b, a) } else { compare_datums(a, b) });
        let values = self.values;
        let n = values.len();
        Ok(match self.kind {
            SetKind::Disc => {
                // The first value whose cumulative share reaches the fraction.
                let row = (fraction * n as f64).ceil() as usize;
                values[row.clamp(1, n) - 1].clone()
            }
            SetKind::Cont => {
                let position = fraction * (n - 1) as f64;
                let (first, second) = (position.floor() as usize, position.ceil() as usize);
                if first == second {
                    values[first].clone()
                } else {
                    interpolate(&values[first], &values[second], position - first as f64)?
                }
            }
            SetKind::Mode => most_frequent(values),
        })
    }
}

/// `lo + (hi − lo) × share`, for float8 and interval (PostgreSQL's `float8_lerp`,
/// `interval_lerp`).
fn interpolate(lo: &Datum, hi: &Datum, share: f64) -> Result<Datum> {
    match (lo, hi) {
        (Datum::Float8(lo), Datum::Float8(hi)) => Ok(Datum::Float8(lo + (hi - lo) * share)),
        (Datum::Interval(lo), Datum::Interval(hi)) => Ok(Datum::Interval(lo.checked_add(&hi.checked_sub(lo)?.mul_f64(share)?)?)),
        (lo, hi) => Err(Error::internal(format!("percentile_cont between {lo:?} and {hi:?}"))),
    }
}

/// The first value of the longest run of equal sorted values; of runs as long, the first.
fn most_frequent(values: Vec<Datum>) -> Datum {
    let (mut best, mut best_count) = (0usize, 0usize);
    let mut start = 0usize;
    for i in 1..=values.len() {
        if i == values.len() || !compare_datums(&values[i], &values[start]).is_eq() {
            if i - start > best_count {
                (best, best_count) = (start, i - start);
            }
            start = i;
        }
    }
    values.into_iter().nth(best).unwrap_or(Datum::Null)
}

/// The state of rank / dense_rank / percent_rank / cume_dist WITHIN GROUP.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct HypotheticalCounts {
    pub(super) kind: HypotheticalKind,
    /// (descending, nulls first) per ORDER BY key.
    pub(super) order: Arc<[(bool, bool)]>,
    /// The hypothetical row (the direct arguments), once known.
    pub(super) row: Option<Vec<Datum>>,
    /// Rows sorting before the hypothetical row, equal to it, and in all.
    pub(super) before: i64,
    pub(super) peers: i64,
    pub(super) total: i64,
    /// dense_rank: the rows sorting before it (duplicates removed when finishing).
    pub(super) earlier: Vec<Vec<Datum>>,
    /// Heap bytes of `row` and `earlier`.
    pub(super) bytes: usize,
}

impl HypotheticalCounts {
    pub(super) fn new(call: &AggregateCall) -> Result<HypotheticalCounts> {
        let kind = match call.function {
            AggregateFunction::HypotheticalRank => HypotheticalKind::Rank,
            AggregateFunction::HypotheticalDenseRank => HypotheticalKind::DenseRank,
            AggregateFunction::HypotheticalPercentRank => HypotheticalKind::PercentRank,
            AggregateFunction::HypotheticalCumeDist => HypotheticalKind::CumeDist,
            other => return Err(Error::internal(format!("{other:?} is not a hypothetical-set aggregate"))),
        };
        if call.direct.len() != call.order_by.len() {
            return Err(Error::internal("hypothetical row and ORDER BY of different lengths"));
        }
        let order = call.order_by.iter().map(|k| (k.descending, k.nulls_first)).collect();
        let row = constant_direct(call);
        let bytes = row.as_deref().map_or(0, values_bytes);
        Ok(HypotheticalCounts { kind, order, row, before: 0, peers: 0, total: 0, earlier: Vec::new(), bytes })
    }

    /// The same call's state with nothing counted and its row unknown.
    pub(super) fn emptied(&self) -> HypotheticalCounts {
        HypotheticalCounts {
            kind: self.kind,
            order: self.order.clone(),
            row: None,
            before: 0,
            peers: 0,
            total: 0,
            earlier: Vec::new(),
            bytes: 0,
        }
    }

    pub(super) fn needs_direct(&self) -> bool {
        self.row.is_none()
    }

    pub(super) fn set_direct(&mut self, row: Vec<Datum>) -> isize {
        let bytes = values_bytes(&row);
        self.row = Some(row);
        self.bytes += bytes;
        bytes as isize
    }

    /// Count one row of ORDER BY keys (the row must be known). Returns the change in bytes.
    pub(super) fn push(&mut self, keys: Vec<Datum>) -> Result<isize> {
        let Some(row) = &self.row else { return Err(Error::internal("hypothetical row unknown")) };
        self.total += 1;
        match compare_sort_keys(&keys, row, &self.order) {
            std::cmp::Ordering::Less => {
                self.before += 1;
                if self.kind == HypotheticalKind::DenseRank {
                    return Ok(self.push_earlier(keys));
                }
            }
            std::cmp::Ordering::Equal => self.peers += 1,
            std::cmp::Ordering::Greater => {}
        }
        Ok(0)
    }

    pub(super) fn push_earlier(&mut self, keys: Vec<Datum>) -> isize {
        let bytes = size_of::<Vec<Datum>>() + values_bytes(&keys);
        self.earlier.push(keys);
        self.bytes += bytes;
        bytes as isize
    }

    pub(super) fn merge(&mut self, other: HypotheticalCounts) -> isize {
        let mut grew = 0;
        if let (None, Some(row)) = (&self.row, other.row) {
            grew += self.set_direct(row);
        }
        self.before += other.before;
        self.peers += other.peers;
        self.total += other.total;
        for keys in other.earlier {
            grew += self.push_earlier(keys);
        }
        grew
    }

    pub(super) fn finish(mut self) -> Datum {
        match self.kind {
            HypotheticalKind::Rank => Datum::Int8(self.before + 1),
            HypotheticalKind::PercentRank if self.total == 0 => Datum::Float8(0.0),
            HypotheticalKind::PercentRank => Datum::Float8(self.before as f64 / self.total as f64),
            HypotheticalKind::CumeDist => Datum::Float8((self.before + self.peers + 1) as f64 / (self.total + 1) as f64),
            HypotheticalKind::DenseRank => {
                let order = self.order.clone();
                self.earlier.sort_by(|a, b| compare_sort_keys(a, b, &order));
                self.earlier.dedup_by(|a, b| compare_sort_keys(a, b, &order).is_eq());
                Datum::Int8(self.earlier.len() as i64 + 1)
            }
        }
    }
}
