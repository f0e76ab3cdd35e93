//! Grouping and aggregation: count, sum, avg, min, max, bool_and/bool_or, string_agg,
//! the variance family, bit_and/bit_or/bit_xor and the regression aggregates (`stats.rs`)
//! with PostgreSQL's result types, each call with an optional FILTER; hash aggregation under a memory budget, spilling partial states to disk when the
//! groups do not fit.
//!
//! # Passes
//!
//! **First pass** (`Sink::push`, every pipeline participant). Each participant
//! aggregates its rows into its own [`GroupTable`] (`table.rs`), whose memory — slots,
//! keys, accumulators, text — is counted, and which never grows past the participant's
//! budget, `work_mem × hash_mem_multiplier` (less the spill files' write buffers).
//! When a new group does not fit, the participant *flushes*: every group's partial
//! state goes to one of `P` spill files chosen by the top bits of the key's hash
//! (`spill.rs`), and the table starts empty again (with its capacity kept), as DuckDB's
//! radix-partitioned aggregation does. A min/max over text that grows a group past the
//! budget flushes too. At its end (`Sink::finish`) the participant hands over its spill
//! files and — if it never spilled — its table: split into the same `P` partitions
//! (moved, not copied), or whole when the pipeline is serial. A participant that spilled
//! flushes its table one last time instead, so its memory is free before the combine.
//!
//! **Combine pass** (`take_rows`). With one contributor and no spill file, the table is
//! the answer. Otherwise partition *p*'s inputs — the in-memory pieces and the files of
//! every participant — form one task, and the participants claim tasks from a shared
//! stack (largest first; in parallel when there are files or many groups, with the
//! pipeline's number of workers). A task aggregates its inputs into a fresh table under
//! the same budget, the way PostgreSQL 13+'s HashAggregate does: once a new group does
//! not fit, the table is *frozen* — records of groups already in it are still merged,
//! records of other groups go to `P` sub-partition files chosen by the hash's next
//! slice of bits — and at the end of the task every group in the table is complete and
//! is emitted; a group whose text min/max outgrows the budget is *evicted* (its state
//! goes to the spill, its later records follow it). Each sub-partition file becomes a
//! task of the next level, claimed by whoever is free. After `MAX_PARTITION_BITS` bits
//! of hash the budget is no longer enforced (only reachable by hash collisions of
//! distinct keys).
//!
//! Partial states round-trip through the files exactly (i128 sums, numeric mantissa and
//! scale, float bits, text bytes, count of avg, a min/max that saw nothing), and keys
//! hash and compare under PostgreSQL's grouping equality (`1.0 = 1.00`, `-0 = 0`,
//! NaN = NaN, NULLs together), so the result does not depend on the budget or on the
//! number of participants — except the order of float additions, as in PostgreSQL.
//!
//! # Memory
//!
//! A participant's tracked memory is its table plus its write buffers; a combine task's
//! is its table, its write buffers and its read buffer. Each stays within the budget,
//! with a slack of one group: an empty table always takes one group, and the scratch
//! space for encoding one record is counted on top. The tables handed over in memory by
//! participants that never spilled are the first pass's memory (at most one budget per
//! such participant), released piece by piece as the combine consumes them; they are not
//! counted again. A serial aggregate thus holds one budget at a time. A growth
//! step of a table's columns briefly holds the old and the new allocation of a column
//! (`Vec` reallocation); the figure counts the steady state.
//!
//! # Temp files
//!
//! One directory per aggregate under `temp_dir`, created at the first spill and removed
//! when the sink is dropped, however the statement ends (success, error, cancel); each
//! file is removed as soon as it has been read back.
//!
//! Without GROUP BY there is one group, no table and no spilling; `accepts_raw` lets such
//! aggregates over fixed-width columns read heap tuples directly.

mod distinct;
mod ordered_set;
mod spill;
mod stats;
mod table;

#[cfg(test)]
mod tests;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use weft_common::numeric::Numeric;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result, SqlState};

use self::distinct::DistinctValues;
use self::ordered_set::{HypotheticalCounts, OrderedValues};
use self::spill::{partition_of, PartitionWriters, SpillDir, SpillFile};
use self::stats::{bits_result, float_add, BitOp, ExactMoments, FloatMoments, RegrMoments, RegrOutput, Spread};
pub(crate) use self::table::datum_heap;
use self::table::{hash_key, GroupTable, Groups};
use crate::execute::{ExecContext, Sink};
use crate::expr::compare::{compare_datums, compare_sort_keys};
use crate::expr::functions::VALUE_SIZE_BYTES_MAX;
use crate::expr::{EvalContext, Expr};
use crate::plan::{AggregateCall, AggregateFunction, Row};

/// The running state of one aggregate in one group.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Accumulator {
    Count(i64),
    SumInt { sum: i128, any: bool, result: DataType },
    SumFloat { sum: f64, any: bool },
    SumNumeric { sum: Option<Numeric> },
    AvgInt { sum: i128, count: i64 },
    /// PostgreSQL's avg(float8) keeps float8_accum's state, whose Σ(x − mean)² can
    /// overflow (an error) where the sum alone would not.
    AvgFloat(FloatMoments),
    AvgNumeric { sum: Option<Numeric>, count: i64 },
    Min(Option<Datum>),
    Max(Option<Datum>),
    /// string_agg without ORDER BY: the values so far, each after its delimiter, and the
    /// length of the first value's delimiter, cut off when finishing (as PostgreSQL does):
    /// two partial states then simply concatenate.
    StringAgg(Option<(String, usize)>),
    /// string_agg with ORDER BY: every row's values, sorted and joined when finishing.
    StringAggSorted(SortedValues),
    /// `f(DISTINCT x)`: the distinct values so far (`distinct.rs`).
    Distinct(Box<DistinctValues>),
    /// array_agg: every row's value (NULLs included) with its ORDER BY keys, in arrival
    /// order; sorted (stably) when finishing, so partial states merge by appending.
    ArrayAgg(Box<ArrayValues>),
    /// The variance family over integers and numerics: exact count, Σx, Σx² (boxed, to
    /// keep every state small; the box is a fixed size per group, not counted as heap).
    Moments { moments: Box<ExactMoments>, spread: Spread },
    /// The variance family over float8 (Youngs-Cramer).
    FloatMoments { moments: FloatMoments, spread: Spread },
    /// bit_and / bit_or / bit_xor: the bits so far (an int4's sign-extended), or `None`.
    Bits { value: Option<i64>, op: BitOp, result: DataType },
    /// The two-argument regression aggregates.
    Regr { moments: RegrMoments, output: RegrOutput },
    /// percentile_cont / percentile_disc / mode: every non-NULL value (`ordered_set.rs`).
    OrderedSet(Box<OrderedValues>),
    /// rank / dense_rank / percent_rank / cume_dist WITHIN GROUP: counts around the
    /// hypothetical row (`ordered_set.rs`).
    Hypothetical(Box<HypotheticalCounts>),
}

/// The rows an array_agg has seen.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ArrayValues {
    pub(super) elem: weft_common::types::ElemType,
    /// (descending, nulls first) of each ORDER BY key.
    pub(super) order: Vec<(bool, bool)>,
    pub(super) rows: Vec<(Vec<Datum>, Datum)>,
    /// Heap bytes of `rows`.
    pub(super) bytes: usize,
}

impl ArrayValues {
    pub(super) fn push(&mut self, keys: Vec<Datum>, value: Datum) -> isize {
        let bytes = size_of::<(Vec<Datum>, Datum)>() + keys.len() * size_of::<Datum>() + keys.iter().map(datum_heap).sum::<usize>() + datum_heap(&value);
        self.rows.push((keys, value));
        self.bytes += bytes;
        bytes as isize
    }

    fn finish(mut self) -> Datum {
        if self.rows.is_empty() {
            return Datum::Null;
        }
        if !self.order.is_empty() {
            let order = self.order;
            self.rows.sort_by(|a, b| crate::expr::compare::compare_sort_keys(&a.0, &b.0, &order));
        }
        let items = self.rows.into_iter().map(|(_, v)| v).collect();
        Datum::Array(Box::new(weft_common::types::Array { elem: self.elem, items }))
    }
}

/// The rows an ordered string_agg has seen.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SortedValues {
    /// (ORDER BY keys, delimiter, value) per row with a non-NULL value.
    pub(super) rows: Vec<(Vec<Datum>, Option<String>, String)>,
    /// (descending, nulls first) per key.
    pub(super) order: Arc<[(bool, bool)]>,
    /// Heap bytes of `rows`.
    bytes: usize,
}

impl SortedValues {
    pub(super) fn empty(order: Arc<[(bool, bool)]>) -> SortedValues {
        SortedValues { rows: Vec::new(), order, bytes: 0 }
    }

    pub(super) fn push(&mut self, keys: Vec<Datum>, delimiter: Option<String>, value: String) -> isize {
        let bytes = size_of::<(Vec<Datum>, Option<String>, String)>()
            + keys.capacity() * size_of::<Datum>()
            + keys.iter().map(datum_heap).sum::<usize>()
            + delimiter.as_ref().map_or(0, String::capacity)
            + value.capacity();
        self.rows.push((keys, delimiter, value));
        self.bytes += bytes;
        bytes as isize
    }

    fn finish(mut self) -> Datum {
        if self.rows.is_empty() {
            return Datum::Null;
        }
        let order = self.order.clone();
        self.rows.sort_by(|a, b| compare_sort_keys(&a.0, &b.0, &order));
        let mut out = String::new();
        for (i, (_, delimiter, value)) in self.rows.iter().enumerate() {
            if i > 0 {
                out.push_str(delimiter.as_deref().unwrap_or(""));
            }
            out.push_str(value);
        }
        Datum::Text(out)
    }
}

impl Accumulator {
    pub(crate) fn new(call: &AggregateCall) -> Result<Accumulator> {
        let plain = Accumulator::new_plain(call)?;
        Ok(if call.distinct { Accumulator::Distinct(Box::new(DistinctValues::new(plain))) } else { plain })
    }

    /// The state of `call` without its DISTINCT.
    fn new_plain(call: &AggregateCall) -> Result<Accumulator> {
        use AggregateFunction::*;
        if call.function.is_hypothetical() {
            return Ok(Accumulator::Hypothetical(Box::new(HypotheticalCounts::new(call)?)));
        }
        if call.function.is_ordered_set() {
            return Ok(Accumulator::OrderedSet(Box::new(OrderedValues::new(call)?)));
        }
        let input = call.arg.as_ref().map(|a| a.data_type());
        match (input, Spread::of(call.function), BitOp::of(call.function), RegrOutput::of(call.function)) {
            (Some(DataType::Int4 | DataType::Int8 | DataType::Numeric), Some(spread), _, _) => {
                return Ok(Accumulator::Moments { moments: Box::new(ExactMoments::EMPTY), spread })
            }
            (Some(DataType::Float8), Some(spread), _, _) => {
                return Ok(Accumulator::FloatMoments { moments: FloatMoments::default(), spread })
            }
            (Some(DataType::Int4 | DataType::Int8), _, Some(op), _) => {
                return Ok(Accumulator::Bits { value: None, op, result: call.result_type })
            }
            (Some(DataType::Float8), _, _, Some(output)) => {
                return Ok(Accumulator::Regr { moments: RegrMoments::default(), output })
            }
            _ => {}
        }
        Ok(match (call.function, input) {
            (CountStar, _) | (Count, _) => Accumulator::Count(0),
            (Sum, Some(DataType::Int4 | DataType::Int8)) => {
                Accumulator::SumInt { sum: 0, any: false, result: call.result_type }
            }
            (Sum, Some(DataType::Float8)) => Accumulator::SumFloat { sum: 0.0, any: false },
            (Sum, Some(DataType::Numeric)) => Accumulator::SumNumeric { sum: None },
            (Avg, Some(DataType::Int4 | DataType::Int8)) => Accumulator::AvgInt { sum: 0, count: 0 },
            (Avg, Some(DataType::Float8)) => Accumulator::AvgFloat(FloatMoments::default()),
            (Avg, Some(DataType::Numeric)) => Accumulator::AvgNumeric { sum: None, count: 0 },
            // false < true: AND is the minimum, OR the maximum.
            (Min | BoolAnd, _) => Accumulator::Min(None),
            (Max | BoolOr, _) => Accumulator::Max(None),
            (ArrayAgg, _) => {
                let Some(DataType::Array(elem)) = Some(call.result_type) else {
                    return Err(Error::internal("array_agg without an array result"));
                };
                Accumulator::ArrayAgg(Box::new(ArrayValues {
                    elem,
                    order: call.order_by.iter().map(|k| (k.descending, k.nulls_first)).collect(),
                    rows: Vec::new(),
                    bytes: 0,
                }))
            }
            (StringAgg, _) if call.order_by.is_empty() => Accumulator::StringAgg(None),
            (StringAgg, _) => Accumulator::StringAggSorted(SortedValues::empty(
                call.order_by.iter().map(|k| (k.descending, k.nulls_first)).collect(),
            )),
            (f, t) => return Err(Error::internal(format!("no accumulator for {f:?}({t:?})"))),
        })
    }

    /// Bytes this state holds outside itself (a text min/max).
    #[inline]
    fn heap_bytes(&self) -> usize {
        match self {
            Accumulator::Min(Some(d)) | Accumulator::Max(Some(d)) => datum_heap(d),
            Accumulator::StringAgg(Some((text, _))) => text.capacity(),
            Accumulator::StringAggSorted(sorted) => sorted.bytes,
            Accumulator::ArrayAgg(values) => values.bytes,
            Accumulator::Distinct(values) => values.bytes,
            Accumulator::OrderedSet(values) => values.bytes,
            Accumulator::Hypothetical(rank) => rank.bytes,
            _ => 0,
        }
    }

    /// Add one input value (NULLs are skipped). Returns the change in `heap_bytes`.
    #[inline]
    pub(crate) fn update_ref(&mut self, value: &Datum) -> Result<isize> {
        if value.is_null() {
            return Ok(0);
        }
        match self {
            Accumulator::Count(n) => *n += 1,
            Accumulator::SumInt { sum, any, .. } => {
                *sum = sum.checked_add(int_value(value)?).ok_or_else(numeric_overflow)?;
                *any = true;
            }
            Accumulator::SumFloat { sum, any } => {
                *sum = sum_float(*sum, *any, float_value(value)?)?;
                *any = true;
            }
            Accumulator::SumNumeric { sum } => *sum = Some(add_numeric(sum.take(), numeric_value(value)?)?),
            Accumulator::AvgInt { sum, count } => {
                *sum = sum.checked_add(int_value(value)?).ok_or_else(numeric_overflow)?;
                *count += 1;
            }
            Accumulator::AvgFloat(moments) => moments.add(float_value(value)?)?,
            Accumulator::AvgNumeric { sum, count } => {
                *sum = Some(add_numeric(sum.take(), numeric_value(value)?)?);
                *count += 1;
            }
            Accumulator::Min(current) => {
                if current.as_ref().is_none_or(|c| compare_datums(value, c).is_lt()) {
                    return Ok(replace_extreme(current, value.clone()));
                }
            }
            Accumulator::Max(current) => {
                if current.as_ref().is_none_or(|c| compare_datums(value, c).is_gt()) {
                    return Ok(replace_extreme(current, value.clone()));
                }
            }
            Accumulator::Distinct(values) => return Ok(values.insert(value.clone())),
            Accumulator::ArrayAgg(values) => return Ok(values.push(Vec::new(), value.clone())),
            Accumulator::Moments { moments, .. } => moments.add(match value {
                Datum::Numeric(v) => *v,
                other => Numeric::from_i128(int_value(other)?),
            })?,
            Accumulator::FloatMoments { moments, .. } => moments.add(float_value(value)?)?,
            Accumulator::Bits { value: bits, op, .. } => {
                let v = int_value(value)? as i64; // int4 or int8: fits
                *bits = Some(bits.map_or(v, |b| op.apply(b, v)));
            }
            Accumulator::StringAgg(_) | Accumulator::StringAggSorted(_) => {
                return Err(Error::internal("string_agg updated without its delimiter"))
            }
            Accumulator::Regr { .. } => return Err(Error::internal("regression aggregate updated with one value")),
            Accumulator::OrderedSet(_) | Accumulator::Hypothetical(_) => {
                return Err(Error::internal("ordered-set aggregate updated without its direct arguments"))
            }
        }
        Ok(0)
    }

    /// Add one row's string_agg value (non-NULL), delimiter and ORDER BY keys. Returns the
    /// change in `heap_bytes`.
    fn update_string_agg(&mut self, value: String, delimiter: Option<String>, keys: Vec<Datum>) -> Result<isize> {
        match self {
            Accumulator::StringAgg(state) => {
                let (text, first_delimiter) = state.get_or_insert_with(|| (String::new(), delimiter.as_ref().map_or(0, String::len)));
                let before = text.capacity();
                text.push_str(delimiter.as_deref().unwrap_or(""));
                text.push_str(&value);
                check_value_size(text.len() - *first_delimiter)?;
                Ok(text.capacity() as isize - before as isize)
            }
            Accumulator::StringAggSorted(sorted) => Ok(sorted.push(keys, delimiter, value)),
            Accumulator::Distinct(values) => Ok(values.insert_text(value, delimiter)),
            other => Err(Error::internal(format!("string_agg value for {other:?}"))),
        }
    }

    /// Add one row's array_agg value (NULL included) and ORDER BY keys. Returns the change
    /// in `heap_bytes`.
    pub(super) fn update_array_agg(&mut self, value: Datum, keys: Vec<Datum>) -> Result<isize> {
        match self {
            Accumulator::ArrayAgg(values) => Ok(values.push(keys, value)),
            Accumulator::Distinct(values) => Ok(values.insert(value)),
            other => Err(Error::internal(format!("array_agg value for {other:?}"))),
        }
    }

    /// Add one (Y, X) pair of a regression aggregate, both non-NULL.
    fn update_pair(&mut self, y: f64, x: f64) -> Result<()> {
        match self {
            Accumulator::Regr { moments, .. } => moments.add(y, x),
            other => Err(Error::internal(format!("a (Y, X) pair for {other:?}"))),
        }
    }

    /// [`update_ref`](Self::update_ref) with an owned value (a min/max keeps it without a copy).
    #[inline]
    fn update_owned(&mut self, value: Datum) -> Result<isize> {
        match self {
            Accumulator::Distinct(values) if !value.is_null() => Ok(values.insert(value)),
            Accumulator::Min(current) if !value.is_null() => {
                if current.as_ref().is_none_or(|c| compare_datums(&value, c).is_lt()) {
                    return Ok(replace_extreme(current, value));
                }
                Ok(0)
            }
            Accumulator::Max(current) if !value.is_null() => {
                if current.as_ref().is_none_or(|c| compare_datums(&value, c).is_gt()) {
                    return Ok(replace_extreme(current, value));
                }
                Ok(0)
            }
            _ => self.update_ref(&value),
        }
    }

    #[inline]
    fn update_count_star(&mut self) {
        if let Accumulator::Count(n) = self {
            *n += 1;
        }
    }

    /// Update with a non-null integer input, without building a `Datum` where possible.
    #[inline]
    fn update_int(&mut self, v: i64, as_datum: fn(i64) -> Datum) -> Result<()> {
        match self {
            Accumulator::Count(n) => *n += 1,
            Accumulator::SumInt { sum, any, .. } => {
                *sum += v as i128; // i128 cannot overflow from i64 additions before 2^64 rows
                *any = true;
            }
            Accumulator::AvgInt { sum, count } => {
                *sum += v as i128;
                *count += 1;
            }
            _ => {
                self.update_owned(as_datum(v))?;
            }
        }
        Ok(())
    }

    #[inline]
    fn update_float(&mut self, v: f64) -> Result<()> {
        match self {
            Accumulator::Count(n) => *n += 1,
            Accumulator::SumFloat { sum, any } => {
                *sum = sum_float(*sum, *any, v)?;
                *any = true;
            }
            Accumulator::AvgFloat(moments) => moments.add(v)?,
            _ => {
                self.update_owned(Datum::Float8(v))?;
            }
        }
        Ok(())
    }

    /// Fold another partial state of the same group into this one. Returns the change
    /// in `heap_bytes`.
    fn merge(&mut self, other: Accumulator) -> Result<isize> {
        match (self, other) {
            (Accumulator::Count(a), Accumulator::Count(b)) => *a += b,
            (Accumulator::SumInt { sum, any, .. }, Accumulator::SumInt { sum: s, any: a, .. }) => {
                *sum = sum.checked_add(s).ok_or_else(numeric_overflow)?;
                *any |= a;
            }
            (Accumulator::SumFloat { sum, any }, Accumulator::SumFloat { sum: s, any: a }) => {
                if a {
                    *sum = sum_float(*sum, *any, s)?;
                    *any = true;
                }
            }
            (Accumulator::SumNumeric { sum }, Accumulator::SumNumeric { sum: s }) => {
                if let Some(s) = s {
                    *sum = Some(add_numeric(sum.take(), s)?);
                }
            }
            (Accumulator::AvgInt { sum, count }, Accumulator::AvgInt { sum: s, count: c }) => {
                *sum = sum.checked_add(s).ok_or_else(numeric_overflow)?;
                *count += c;
            }
            (Accumulator::AvgFloat(a), Accumulator::AvgFloat(b)) => a.merge(&b)?,
            (Accumulator::AvgNumeric { sum, count }, Accumulator::AvgNumeric { sum: s, count: c }) => {
                if let Some(s) = s {
                    *sum = Some(add_numeric(sum.take(), s)?);
                }
                *count += c;
            }
            (Accumulator::Min(a), Accumulator::Min(Some(b))) => {
                if a.as_ref().is_none_or(|x| compare_datums(&b, x).is_lt()) {
                    return Ok(replace_extreme(a, b));
                }
            }
            (Accumulator::Max(a), Accumulator::Max(Some(b))) => {
                if a.as_ref().is_none_or(|x| compare_datums(&b, x).is_gt()) {
                    return Ok(replace_extreme(a, b));
                }
            }
            (Accumulator::Min(_), Accumulator::Min(None)) | (Accumulator::Max(_), Accumulator::Max(None)) => {}
            (Accumulator::StringAgg(a), Accumulator::StringAgg(Some((b, first_delimiter)))) => match a {
                None => {
                    let grew = b.capacity() as isize;
                    *a = Some((b, first_delimiter));
                    return Ok(grew);
                }
                Some((text, first)) => {
                    let before = text.capacity();
                    text.push_str(&b); // b's first delimiter now separates it from a's values
                    check_value_size(text.len() - *first)?;
                    return Ok(text.capacity() as isize - before as isize);
                }
            },
            (Accumulator::StringAgg(_), Accumulator::StringAgg(None)) => {}
            (Accumulator::StringAggSorted(a), Accumulator::StringAggSorted(b)) => {
                a.rows.extend(b.rows);
                a.bytes += b.bytes;
                return Ok(b.bytes as isize);
            }
            (Accumulator::Distinct(a), Accumulator::Distinct(b)) => return Ok(a.merge(*b)),
            (Accumulator::ArrayAgg(a), Accumulator::ArrayAgg(b)) => {
                a.rows.extend(b.rows);
                a.bytes += b.bytes;
                return Ok(b.bytes as isize);
            }
            (Accumulator::Moments { moments: a, .. }, Accumulator::Moments { moments: b, .. }) => a.merge(&b)?,
            (Accumulator::FloatMoments { moments: a, .. }, Accumulator::FloatMoments { moments: b, .. }) => a.merge(&b)?,
            (Accumulator::Bits { value: a, op, .. }, Accumulator::Bits { value: b, .. }) => {
                if let Some(b) = b {
                    *a = Some(a.map_or(b, |a| op.apply(a, b)));
                }
            }
            (Accumulator::Regr { moments: a, .. }, Accumulator::Regr { moments: b, .. }) => a.merge(&b)?,
            (Accumulator::OrderedSet(a), Accumulator::OrderedSet(b)) => return Ok(a.merge(*b)),
            (Accumulator::Hypothetical(a), Accumulator::Hypothetical(b)) => return Ok(a.merge(*b)),
            (a, b) => return Err(Error::internal(format!("cannot merge {a:?} with {b:?}"))),
        }
        Ok(0)
    }

    pub(crate) fn finish(self) -> Result<Datum> {
        Ok(match self {
            Accumulator::Count(n) => Datum::Int8(n),
            Accumulator::SumInt { any: false, .. } | Accumulator::SumFloat { any: false, .. } => Datum::Null,
            Accumulator::SumInt { sum, result: DataType::Int8, .. } => {
                Datum::Int8(i64::try_from(sum).map_err(|_| Error::out_of_range("bigint"))?)
            }
            Accumulator::SumInt { sum, .. } => Datum::Numeric(Numeric::from_i128(sum)),
            Accumulator::SumFloat { sum, .. } => Datum::Float8(sum),
            Accumulator::SumNumeric { sum } => sum.map(Datum::Numeric).unwrap_or(Datum::Null),
            Accumulator::AvgInt { count: 0, .. }
            | Accumulator::AvgNumeric { count: 0, .. } => Datum::Null,
            Accumulator::AvgInt { sum, count } => {
                Datum::Numeric(Numeric::from_i128(sum).div(&Numeric::from_i64(count))?)
            }
            Accumulator::AvgFloat(moments) => moments.mean(),
            Accumulator::AvgNumeric { sum, count } => match sum {
                Some(sum) => Datum::Numeric(sum.div(&Numeric::from_i64(count))?),
                None => Datum::Null,
            },
            Accumulator::Min(v) | Accumulator::Max(v) => v.unwrap_or(Datum::Null),
            Accumulator::StringAgg(state) => match state {
                Some((mut text, first_delimiter)) => {
                    text.drain(..first_delimiter);
                    Datum::Text(text)
                }
                None => Datum::Null,
            },
            Accumulator::StringAggSorted(sorted) => {
                let value = sorted.finish();
                if let Datum::Text(text) = &value {
                    check_value_size(text.len())?;
                }
                value
            }
            Accumulator::Distinct(values) => values.finish()?,
            Accumulator::ArrayAgg(values) => values.finish(),
            Accumulator::Moments { moments, spread } => moments.finish(spread)?,
            Accumulator::FloatMoments { moments, spread } => moments.finish(spread),
            Accumulator::Bits { value, result, .. } => bits_result(value, result),
            Accumulator::Regr { moments, output } => moments.finish(output),
            Accumulator::OrderedSet(values) => values.finish()?,
            Accumulator::Hypothetical(rank) => rank.finish(),
        })
    }
}

impl Accumulator {
    /// Can [`retract`](Self::retract) take values out of this state? Counts, and sums and
    /// averages of integers (exact), as PostgreSQL's moving-aggregate inverse transition
    /// functions (`aggminvtransfn`); float8 has none (rounding), numeric none here (its
    /// result scale is the largest input scale of the values left, which a difference
    /// does not know), min/max none. A window over these recomputes a frame whose head
    /// moved.
    pub(crate) fn invertible(call: &AggregateCall) -> bool {
        use AggregateFunction::*;
        let input = call.arg.as_ref().map(|a| a.data_type());
        if call.distinct {
            return false;
        }
        match call.function {
            CountStar | Count => true,
            Sum | Avg => matches!(input, Some(DataType::Int4 | DataType::Int8)),
            _ => false,
        }
    }

    /// Take one non-NULL value that [`update_ref`](Self::update_ref) added back out.
    pub(crate) fn retract(&mut self, value: &Datum) -> Result<()> {
        match self {
            Accumulator::Count(n) => *n -= 1,
            Accumulator::SumInt { sum, .. } | Accumulator::AvgInt { sum, .. } => {
                *sum = sum.checked_sub(int_value(value)?).ok_or_else(numeric_overflow)?;
                if let Accumulator::AvgInt { count, .. } = self {
                    *count -= 1;
                }
            }
            other => return Err(Error::internal(format!("no inverse transition for {other:?}"))),
        }
        Ok(())
    }
}

/// The value an [`Accumulator::invertible`] call takes from `row` (after its FILTER;
/// count(*) takes a 1), or `None` when the row does not count: what a moving frame adds
/// with `update_ref` and takes back with `retract`.
pub(crate) fn moving_input(call: &AggregateCall, row: &[Datum], eval: &EvalContext) -> Result<Option<Datum>> {
    if let Some(filter) = &call.filter {
        if filter.eval(row, eval)? != Datum::Bool(true) {
            return Ok(None);
        }
    }
    let value = match &call.arg {
        None => Datum::Int8(1),
        Some(arg) => arg.eval(row, eval)?,
    };
    Ok((!value.is_null()).then_some(value))
}

/// Put `value` in a min/max; the change in heap bytes.
#[inline]
fn replace_extreme(current: &mut Option<Datum>, value: Datum) -> isize {
    let before = current.as_ref().map_or(0, datum_heap) as isize;
    let after = datum_heap(&value) as isize;
    *current = Some(value);
    after - before
}

/// A string_agg result may not outgrow PostgreSQL's largest value (`MaxAllocSize`).
fn check_value_size(len: usize) -> Result<()> {
    if len > VALUE_SIZE_BYTES_MAX {
        return Err(Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "out of memory")
            .with_detail(format!("Cannot enlarge string buffer containing {len} bytes.")));
    }
    Ok(())
}

/// Feed one input row to one call's state, after its FILTER. Returns the change in the
/// state's `heap_bytes`.
#[inline]
pub(crate) fn update_call(acc: &mut Accumulator, call: &AggregateCall, row: &[Datum], eval: &EvalContext) -> Result<isize> {
    if let Some(filter) = &call.filter {
        if filter.eval(row, eval)? != Datum::Bool(true) {
            return Ok(0);
        }
    }
    if call.function.is_ordered_set() {
        return update_ordered_set(acc, call, row, eval);
    }
    match &call.arg {
        None => {
            acc.update_count_star();
            Ok(0)
        }
        Some(arg) if call.function.is_regression() => {
            let Datum::Float8(y) = arg.eval(row, eval)? else { return Ok(0) };
            let x = match &call.arg2 {
                Some(arg2) => arg2.eval(row, eval)?,
                None => return Err(Error::internal("regression aggregate without its X")),
            };
            let Datum::Float8(x) = x else { return Ok(0) };
            acc.update_pair(y, x)?;
            Ok(0)
        }
        Some(arg) if call.function == AggregateFunction::ArrayAgg => {
            let value = arg.eval(row, eval)?;
            let keys = call.order_by.iter().map(|k| k.expr.eval(row, eval)).collect::<Result<Vec<_>>>()?;
            acc.update_array_agg(value, keys)
        }
        Some(arg) if call.function == AggregateFunction::StringAgg => {
            let Datum::Text(value) = arg.eval(row, eval)? else { return Ok(0) };
            let delimiter = match call.arg2.as_ref().map(|d| d.eval(row, eval)).transpose()? {
                Some(Datum::Text(d)) => Some(d),
                _ => None,
            };
            let keys = call.order_by.iter().map(|k| k.expr.eval(row, eval)).collect::<Result<Vec<_>>>()?;
            acc.update_string_agg(value, delimiter, keys)
        }
        Some(Expr::Column { index, .. }) => acc.update_ref(&row[*index]),
        Some(arg) => acc.update_owned(arg.eval(row, eval)?),
    }
}

/// Feed one row (past the FILTER) to an ordered-set or hypothetical-set state; the
/// direct arguments are evaluated on the group's first row when they are not constants.
fn update_ordered_set(acc: &mut Accumulator, call: &AggregateCall, row: &[Datum], eval: &EvalContext) -> Result<isize> {
    let direct = |eval_direct: bool| -> Result<Option<Vec<Datum>>> {
        eval_direct.then(|| call.direct.iter().map(|e| e.eval(row, eval)).collect()).transpose()
    };
    match acc {
        Accumulator::OrderedSet(set) => {
            let mut grew = 0;
            if let Some(values) = direct(set.needs_direct())? {
                grew += set.set_direct(values);
            }
            let Some(arg) = &call.arg else { return Err(Error::internal("ordered-set aggregate without its argument")) };
            Ok(grew + set.push(arg.eval(row, eval)?))
        }
        Accumulator::Hypothetical(rank) => {
            let mut grew = 0;
            if let Some(values) = direct(rank.needs_direct())? {
                grew += rank.set_direct(values);
            }
            let keys = call.order_by.iter().map(|k| k.expr.eval(row, eval)).collect::<Result<Vec<_>>>()?;
            Ok(grew + rank.push(keys)?)
        }
        other => Err(Error::internal(format!("{other:?} is not an ordered-set state"))),
    }
}

fn numeric_overflow() -> Error {
    Error::out_of_range("numeric")
}

fn int_value(d: &Datum) -> Result<i128> {
    match d {
        Datum::Int4(v) => Ok(*v as i128),
        Datum::Int8(v) => Ok(*v as i128),
        other => Err(Error::internal(format!("integer aggregate got {other:?}"))),
    }
}

fn float_value(d: &Datum) -> Result<f64> {
    match d {
        Datum::Float8(v) => Ok(*v),
        other => Err(Error::internal(format!("float aggregate got {other:?}"))),
    }
}

fn numeric_value(d: &Datum) -> Result<Numeric> {
    match d {
        Datum::Numeric(v) => Ok(*v),
        other => Err(Error::internal(format!("numeric aggregate got {other:?}"))),
    }
}

fn add_numeric(sum: Option<Numeric>, value: Numeric) -> Result<Numeric> {
    match sum {
        None => Ok(value),
        Some(sum) => sum.add(&value),
    }
}

/// Bits of hash that partition levels may use; a task at a level whose sub-partitions
/// would need more is aggregated without a budget.
const MAX_PARTITION_BITS: u32 = 24;
/// Below this many groups handed over in memory (and with no spill file), the combine
/// pass runs in the calling thread rather than starting workers.
const PARALLEL_COMBINE_MIN_GROUPS: usize = 16 * 1024;
/// Records between two cancel checks in the combine pass.
const CANCEL_EVERY: u32 = 1024;

/// How a participant's budget is shared between its table and its spill buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget {
    /// `work_mem × hash_mem_multiplier`, bytes.
    pub total: usize,
    /// log2 of the number of partitions per level.
    pub bits: u32,
    /// Write buffer per partition file.
    pub write_buffer: usize,
    /// Read buffer of a combine task.
    pub read_buffer: usize,
}

impl Budget {
    pub(crate) fn new(total: usize) -> Budget {
        // 4 partitions for small budgets, up to 64 (one per 128 kB of budget), so that a
        // spilled partition is likely to fit and there are enough to combine in parallel.
        let partitions = (total / (128 << 10)).clamp(4, 64).next_power_of_two();
        let write_buffer = (total / (8 * partitions)).clamp(128, 64 << 10);
        let read_buffer = (total / 16).clamp(512, 256 << 10);
        Budget { total, bits: partitions.trailing_zeros(), write_buffer, read_buffer }
    }

    fn from_settings(ctx: &ExecContext) -> Budget {
        let total = ctx.hash.work_mem as f64 * ctx.hash.hash_mem_multiplier;
        Budget::new(if total.is_finite() && total > 0.0 { total.min(usize::MAX as f64) as usize } else { usize::MAX })
    }

    pub(crate) fn partitions(&self) -> usize {
        1 << self.bits
    }

    fn write_reserve(&self) -> usize {
        self.partitions() * self.write_buffer
    }

    /// The first pass's table limit.
    fn first_pass_limit(&self) -> usize {
        self.total.saturating_sub(self.write_reserve())
    }

    /// A combine task's table limit.
    fn combine_limit(&self) -> usize {
        self.total.saturating_sub(self.write_reserve() + self.read_buffer)
    }

    /// May a task at `level` spill to sub-partitions (level + 1)?
    fn can_repartition(&self, level: usize) -> bool {
        self.bits * (level as u32 + 2) <= MAX_PARTITION_BITS
    }
}

/// What a hash aggregate's memory budget made it do: the figures of PostgreSQL 15's
/// EXPLAIN ANALYZE `Batches: N  Memory Usage: N kB  Disk Usage: N kB`, and more.
// Read by tests until `execute.rs` surfaces it in EXPLAIN ANALYZE.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AggregateSpillReport {
    /// Each participant's budget, `work_mem × hash_mem_multiplier`, in bytes.
    pub budget_bytes: usize,
    /// Spill partitions per level.
    pub partitions: usize,
    /// 1 + partitions read back from disk, at all levels (EXPLAIN's `Batches`).
    pub batches: u64,
    /// The largest tracked memory of one participant's table or one combine task, in
    /// bytes (EXPLAIN's `Memory Usage`).
    pub peak_memory_bytes: usize,
    /// The first pass's tracked peak per participant, in the order they finished.
    pub participant_peak_bytes: Vec<usize>,
    /// The largest tracked memory of a combine task.
    pub combine_peak_bytes: usize,
    /// The most bytes in spill files at once (EXPLAIN's `Disk Usage`).
    pub disk_peak_bytes: u64,
    /// Bytes written to spill files, all levels.
    pub disk_written_bytes: u64,
    pub spill_files: u64,
    /// Partial states written to spill files, all levels.
    pub spilled_records: u64,
    /// Participants that spilled in the first pass.
    pub spilled_participants: usize,
    /// The deepest partition level read back (0: no repartitioning).
    pub max_level: usize,
}

impl AggregateSpillReport {
    /// The line PostgreSQL 15 prints under a HashAggregate node in EXPLAIN ANALYZE.
    pub fn explain_line(&self) -> String {
        let memory_kb = self.peak_memory_bytes.div_ceil(1024);
        let mut line = format!("Batches: {}  Memory Usage: {memory_kb}kB", self.batches);
        if self.disk_peak_bytes > 0 {
            line.push_str(&format!("  Disk Usage: {}kB", self.disk_peak_bytes.div_ceil(1024)));
        }
        line
    }
}

#[derive(Default)]
struct SpillStats {
    participant_peaks: Mutex<Vec<usize>>,
    combine_peak: AtomicUsize,
    /// Combine tasks that read at least one file.
    disk_batches: AtomicU64,
    max_level: AtomicUsize,
    spilled_participants: AtomicUsize,
    spilled_records: AtomicU64,
    /// (peak, written, files) of the spill directory, kept when it is removed.
    disk: Mutex<(u64, u64, u64)>,
}

/// One participant's aggregation state. Without GROUP BY there is one group and no
/// hashing at all.
pub(crate) enum LocalAggregate {
    Ungrouped(Vec<Accumulator>),
    Grouped(Box<LocalGroups>),
}

/// A participant's table of groups in the first pass.
pub(crate) struct LocalGroups {
    table: GroupTable,
    /// Fresh accumulators, cloned for each new group.
    template: Vec<Accumulator>,
    /// The current row's key.
    key: Vec<Datum>,
    /// Level-0 partition files, from the first flush on.
    spill: Option<PartitionWriters>,
    /// Tracked memory: the largest table + write buffers seen.
    peak: usize,
    /// Groups written out by flushes.
    flushed: u64,
}

impl LocalGroups {
    fn memory(&self) -> usize {
        self.table.memory() + self.spill.as_ref().map_or(0, PartitionWriters::memory)
    }

    #[inline]
    fn note_memory(&mut self) {
        self.peak = self.peak.max(self.memory());
    }
}

/// What the participants handed over.
#[derive(Default)]
struct Shared {
    ungrouped: Option<Vec<Accumulator>>,
    /// Tables handed over whole (serial pipelines).
    whole: Vec<Groups>,
    /// Per level-0 partition: the pieces of the participants' tables.
    pieces: Vec<Vec<Groups>>,
    /// Per level-0 partition: the participants' spill files.
    files: Vec<Vec<SpillFile>>,
    /// Participants that handed over groups or files.
    contributors: usize,
}

/// A partition to aggregate in the combine pass.
struct Task {
    level: usize,
    pieces: Vec<Groups>,
    files: Vec<SpillFile>,
}

impl Task {
    /// Rough size, to hand out the largest tasks first.
    fn size(&self) -> u64 {
        self.pieces.iter().map(|p| p.len() as u64 * 64).sum::<u64>() + self.files.iter().map(|f| f.bytes).sum::<u64>()
    }
}

/// The shared state of a hash aggregate.
pub(crate) struct AggregateSink<'a> {
    group_by: &'a [Expr],
    aggregates: &'a [AggregateCall],
    ctx: &'a ExecContext<'a>,
    eval: &'a EvalContext,
    /// Workers of the input pipeline: also those the combine pass may use. With none,
    /// tables are handed over whole.
    workers: usize,
    budget: Budget,
    shared: Mutex<Shared>,
    /// Created at the first spill; removed (with every file in it) when dropped.
    dir: Mutex<Option<Arc<SpillDir>>>,
    stats: SpillStats,
    /// Set when the sink reads heap tuples directly (see `accepts_raw`).
    raw: OnceLock<RawInputs>,
    /// Groups handed over by participants' `finish` or written out by their flushes,
    /// summed (EXPLAIN ANALYZE's rows of the partial aggregates).
    partial_groups: AtomicU64,
}

/// Per aggregate: the table column it reads straight from tuple bytes (`None` for
/// count(*)), for ungrouped aggregates over fixed-width numeric columns — the shape of
/// `SELECT count(*), sum(x) FROM big`, which then runs without building rows.
struct RawInputs {
    layout: RowLayout,
    columns: Vec<Option<(usize, DataType)>>,
}

impl<'a> AggregateSink<'a> {
    /// `workers`: the input pipeline's (`Pipeline::workers`).
    pub(crate) fn new(group_by: &'a [Expr], aggregates: &'a [AggregateCall], ctx: &'a ExecContext<'a>, workers: usize) -> Self {
        AggregateSink {
            group_by,
            aggregates,
            ctx,
            eval: ctx.eval,
            workers,
            budget: Budget::from_settings(ctx),
            shared: Mutex::new(Shared::default()),
            dir: Mutex::new(None),
            stats: SpillStats::default(),
            raw: OnceLock::new(),
            partial_groups: AtomicU64::new(0),
        }
    }

    /// With a budget other than the session's (tests).
    #[cfg(test)]
    pub(crate) fn with_budget(mut self, total: usize) -> Self {
        self.budget = Budget::new(total);
        self
    }

    /// Groups the participants handed over, summed over participants.
    pub(crate) fn partial_groups(&self) -> u64 {
        self.partial_groups.load(Ordering::Relaxed)
    }

    fn fresh_accumulators(&self) -> Result<Vec<Accumulator>> {
        self.aggregates.iter().map(Accumulator::new).collect()
    }

    fn spill_dir(&self) -> Result<Arc<SpillDir>> {
        let mut dir = self.dir.lock();
        if let Some(dir) = &*dir {
            return Ok(dir.clone());
        }
        let created = Arc::new(SpillDir::create(&self.ctx.sort.temp_dir)?);
        *dir = Some(created.clone());
        Ok(created)
    }

    /// What the budget made the aggregate do; complete once `take_rows` has run.
    pub(crate) fn spill_report(&self) -> AggregateSpillReport {
        let participant_peak_bytes = self.stats.participant_peaks.lock().clone();
        let combine_peak_bytes = self.stats.combine_peak.load(Ordering::Relaxed);
        let (mut disk_peak_bytes, mut disk_written_bytes, mut spill_files) = *self.stats.disk.lock();
        if let Some(dir) = &*self.dir.lock() {
            (disk_peak_bytes, disk_written_bytes, spill_files) =
                (dir.counters.peak(), dir.counters.written(), dir.counters.files());
        }
        AggregateSpillReport {
            budget_bytes: self.budget.total,
            partitions: self.budget.partitions(),
            batches: 1 + self.stats.disk_batches.load(Ordering::Relaxed),
            peak_memory_bytes: participant_peak_bytes.iter().copied().max().unwrap_or(0).max(combine_peak_bytes),
            participant_peak_bytes,
            combine_peak_bytes,
            disk_peak_bytes,
            disk_written_bytes,
            spill_files,
            spilled_records: self.stats.spilled_records.load(Ordering::Relaxed),
            spilled_participants: self.stats.spilled_participants.load(Ordering::Relaxed),
            max_level: self.stats.max_level.load(Ordering::Relaxed),
        }
    }

    /// Group keys followed by aggregate values, one row per group. Without GROUP BY there
    /// is exactly one row, even over no input (count = 0, sum = NULL). The sink is kept so
    /// that [`spill_report`](Self::spill_report) can be read afterwards; the spill
    /// directory is removed whether it succeeds or not.
    pub(crate) fn take_rows(&self) -> Result<Vec<Row>> {
        let result = self.combine_all();
        if let Some(dir) = self.dir.lock().take() {
            *self.stats.disk.lock() = (dir.counters.peak(), dir.counters.written(), dir.counters.files());
        }
        result
    }

    fn combine_all(&self) -> Result<Vec<Row>> {
        let shared = std::mem::take(&mut *self.shared.lock());
        if self.group_by.is_empty() {
            let accumulators = match shared.ungrouped {
                Some(accumulators) => accumulators,
                None => self.fresh_accumulators()?,
            };
            return Ok(vec![accumulators.into_iter().map(Accumulator::finish).collect::<Result<Row>>()?]);
        }
        let Shared { whole, mut pieces, mut files, contributors, .. } = shared;
        let no_files = files.iter().all(Vec::is_empty);
        let mut rows = Vec::new();
        if no_files && contributors <= 1 {
            // One table: its groups are complete and distinct.
            for groups in whole.into_iter().chain(pieces.into_iter().flatten()) {
                groups_into_rows(groups, None, &mut rows)?;
            }
            return Ok(rows);
        }
        let parts = self.budget.partitions();
        pieces.resize_with(parts, Vec::new);
        files.resize_with(parts, Vec::new);
        let bits = self.budget.bits;
        for table in whole {
            for (p, piece) in table.split(parts, |h| partition_of(h, 0, bits)).into_iter().enumerate() {
                if piece.len() > 0 {
                    pieces[p].push(piece);
                }
            }
        }
        let in_memory: usize = pieces.iter().flatten().map(Groups::len).sum();
        let mut tasks: Vec<Task> = pieces
            .into_iter()
            .zip(files)
            .filter(|(p, f)| !p.is_empty() || !f.is_empty())
            .map(|(pieces, files)| Task { level: 0, pieces, files })
            .collect();
        tasks.sort_by_key(Task::size); // popped from the end: largest first
        let workers = if no_files && in_memory < PARALLEL_COMBINE_MIN_GROUPS {
            0
        } else {
            self.workers.min(tasks.len().saturating_sub(1))
        };
        let queue = Mutex::new(tasks);
        let outputs: Mutex<Vec<Vec<Row>>> = Mutex::new(Vec::new());
        let work = || -> Result<()> {
            let mut rows = Vec::new();
            loop {
                self.ctx.cancel.check()?;
                let Some(task) = queue.lock().pop() else { break };
                self.combine(task, &queue, &mut rows)?;
            }
            outputs.lock().push(rows);
            Ok(())
        };
        if workers == 0 {
            work()?;
        } else {
            self.ctx.workers.run(workers, self.ctx.leader_participates, self.ctx.cancel, |_| work())?;
        }
        let outputs = outputs.into_inner();
        rows.reserve(outputs.iter().map(Vec::len).sum());
        for part in outputs {
            rows.extend(part);
        }
        Ok(rows)
    }

    /// Aggregate one partition into a table under the budget; emit its complete groups
    /// into `rows` and queue its sub-partitions (see the module documentation).
    fn combine(&self, task: Task, queue: &Mutex<Vec<Task>>, rows: &mut Vec<Row>) -> Result<()> {
        let level = task.level;
        let can_repartition = self.budget.can_repartition(level);
        let from_disk = !task.files.is_empty();
        let mut c = Combiner {
            table: GroupTable::new(self.group_by.len(), self.aggregates.len()),
            template: self.fresh_accumulators()?,
            key: Vec::with_capacity(self.group_by.len()),
            states: Vec::with_capacity(self.aggregates.len()),
            limit: if can_repartition { self.budget.combine_limit() } else { usize::MAX },
            frozen: false,
            spill: None,
            level,
            peak: 0,
            since_check: 0,
        };
        let (k, n) = (self.group_by.len(), self.aggregates.len());
        for piece in task.pieces {
            let Groups { hashes, keys, states, .. } = piece;
            let mut keys = keys.into_iter();
            let mut states = states.into_iter();
            for hash in hashes {
                c.key.extend(keys.by_ref().take(k));
                c.states.extend(states.by_ref().take(n));
                c.absorb(self, hash, 0)?;
            }
        }
        for file in task.files {
            let mut reader = file.reader(self.budget.read_buffer)?;
            loop {
                let reading = reader.memory();
                let Some(mut record) = reader.next()? else { break };
                let hash = record.hash()?;
                for _ in 0..k {
                    c.key.push(record.datum()?);
                }
                for t in &c.template {
                    c.states.push(record.state(t)?);
                }
                if !record.at_end() {
                    return Err(Error::internal("corrupt aggregate spill record"));
                }
                c.absorb(self, hash, reading)?;
            }
        }
        let Combiner { table, spill, peak, .. } = c;
        self.stats.combine_peak.fetch_max(peak, Ordering::Relaxed);
        if from_disk {
            self.stats.disk_batches.fetch_add(1, Ordering::Relaxed);
            self.stats.max_level.fetch_max(level, Ordering::Relaxed);
        }
        let GroupTable { groups, evicted, .. } = table;
        groups_into_rows(groups, Some(&evicted), rows)?;
        if let Some(spill) = spill {
            self.stats.spilled_records.fetch_add(spill.records, Ordering::Relaxed);
            let mut sub: Vec<Task> =
                spill.finish()?.into_iter().map(|(_, file)| Task { level: level + 1, pieces: Vec::new(), files: vec![file] }).collect();
            queue.lock().append(&mut sub);
        }
        Ok(())
    }

    /// Write out every group of a participant's table and empty it.
    fn flush(&self, local: &mut LocalGroups) -> Result<()> {
        self.ctx.cancel.check()?;
        if local.spill.is_none() {
            local.spill = Some(PartitionWriters::new(self.spill_dir()?, 0, self.budget.bits, self.budget.write_buffer));
            self.stats.spilled_participants.fetch_add(1, Ordering::Relaxed);
        }
        let writers = local.spill.as_mut().expect("created above");
        let groups = &local.table.groups;
        for g in 0..groups.len() {
            writers.write(groups.hashes[g], groups.key(g), groups.states(g))?;
        }
        local.flushed += groups.len() as u64;
        local.note_memory();
        local.table.clear();
        Ok(())
    }

    #[inline]
    fn push_grouped(&self, local: &mut LocalGroups, row: &[Datum]) -> Result<()> {
        local.key.clear();
        for expr in self.group_by {
            local.key.push(match expr {
                Expr::Column { index, .. } => row[*index].clone(),
                _ => expr.eval(row, self.eval)?,
            });
        }
        let hash = hash_key(&local.key);
        let g = match local.table.find(hash, &local.key) {
            Some(g) => g,
            None => {
                let heap = local.key.iter().map(datum_heap).sum();
                let limit = self.budget.first_pass_limit();
                if !local.table.reserve_one(heap, limit) {
                    self.flush(local)?;
                    local.table.reserve_one(heap, limit); // an empty table always has room
                }
                let g = local.table.insert_fresh(hash, &mut local.key, &local.template, heap);
                local.note_memory();
                g
            }
        };
        let mut grew = 0isize;
        for (acc, call) in local.table.groups.states_mut(g).iter_mut().zip(self.aggregates) {
            grew += update_call(acc, call, row, self.eval)?;
        }
        if grew != 0 {
            local.table.adjust_heap(grew);
            if grew > 0 {
                local.note_memory();
                if local.table.memory() > self.budget.first_pass_limit() {
                    self.flush(local)?;
                }
            }
        }
        Ok(())
    }
}

/// A combine task's table and spill.
struct Combiner {
    table: GroupTable,
    template: Vec<Accumulator>,
    /// The record being absorbed.
    key: Vec<Datum>,
    states: Vec<Accumulator>,
    limit: usize,
    /// A new group did not fit: no group enters any more.
    frozen: bool,
    spill: Option<PartitionWriters>,
    level: usize,
    peak: usize,
    since_check: u32,
}

impl Combiner {
    /// Merge the record in `key`/`states` into its group, insert it as a new group, or
    /// send it to the sub-partition files. `reading`: the reader's memory.
    fn absorb(&mut self, sink: &AggregateSink, hash: u64, reading: usize) -> Result<()> {
        self.since_check += 1;
        if self.since_check >= CANCEL_EVERY {
            self.since_check = 0;
            sink.ctx.cancel.check()?;
        }
        match self.table.find(hash, &self.key) {
            Some(g) if !self.table.evicted[g] => {
                let mut grew = 0isize;
                for (a, b) in self.table.groups.states_mut(g).iter_mut().zip(self.states.drain(..)) {
                    grew += a.merge(b)?;
                }
                self.key.clear();
                if grew != 0 {
                    self.table.adjust_heap(grew);
                    if grew > 0 {
                        self.note_memory(reading);
                        if self.table.memory() > self.limit {
                            self.evict(sink, g)?;
                        }
                    }
                }
            }
            Some(_) => self.spill_record(sink, hash)?,
            None => {
                let heap = self.key.iter().map(datum_heap).sum::<usize>()
                    + self.states.iter().map(Accumulator::heap_bytes).sum::<usize>();
                if !self.frozen && self.table.reserve_one(heap, self.limit) {
                    self.table.insert(hash, &mut self.key, &mut self.states, heap);
                } else {
                    self.frozen = true;
                    self.spill_record(sink, hash)?;
                }
            }
        }
        self.note_memory(reading);
        Ok(())
    }

    fn note_memory(&mut self, reading: usize) {
        let memory = self.table.memory() + self.spill.as_ref().map_or(0, PartitionWriters::memory) + reading;
        self.peak = self.peak.max(memory);
    }

    fn writers(&mut self, sink: &AggregateSink) -> Result<&mut PartitionWriters> {
        if self.spill.is_none() {
            self.spill = Some(PartitionWriters::new(sink.spill_dir()?, self.level + 1, sink.budget.bits, sink.budget.write_buffer));
        }
        Ok(self.spill.as_mut().expect("created above"))
    }

    fn spill_record(&mut self, sink: &AggregateSink, hash: u64) -> Result<()> {
        let (key, states) = (std::mem::take(&mut self.key), std::mem::take(&mut self.states));
        let written = self.writers(sink).and_then(|w| w.write(hash, &key, &states));
        (self.key, self.states) = (key, states);
        self.key.clear();
        self.states.clear();
        written
    }

    /// Send group `g`'s state to the sub-partition files; its later records follow it.
    fn evict(&mut self, sink: &AggregateSink, g: usize) -> Result<()> {
        let hash = self.table.groups.hashes[g];
        let writers = {
            if self.spill.is_none() {
                self.writers(sink)?;
            }
            self.spill.as_mut().expect("created above")
        };
        writers.write(hash, self.table.groups.key(g), self.table.groups.states(g))?;
        let freed: usize = self.table.groups.states(g).iter().map(Accumulator::heap_bytes).sum();
        self.table.groups.states_mut(g).clone_from_slice(&self.template);
        self.table.adjust_heap(-(freed as isize));
        self.table.evicted[g] = true;
        Ok(())
    }
}

/// Finish every group (except evicted ones) into output rows.
fn groups_into_rows(groups: Groups, evicted: Option<&[bool]>, rows: &mut Vec<Row>) -> Result<()> {
    let Groups { key_width, state_width, hashes, keys, states } = groups;
    let mut keys = keys.into_iter();
    let mut states = states.into_iter();
    rows.reserve(hashes.len());
    for g in 0..hashes.len() {
        if evicted.is_some_and(|e| e[g]) {
            keys.by_ref().take(key_width).for_each(drop);
            states.by_ref().take(state_width).for_each(drop);
            continue;
        }
        let mut row = Vec::with_capacity(key_width + state_width);
        row.extend(keys.by_ref().take(key_width));
        for state in states.by_ref().take(state_width) {
            row.push(state.finish()?);
        }
        rows.push(row);
    }
    Ok(())
}

impl Sink for AggregateSink<'_> {
    type Local = LocalAggregate;

    fn local(&self) -> Result<LocalAggregate> {
        Ok(if self.group_by.is_empty() {
            LocalAggregate::Ungrouped(self.fresh_accumulators()?)
        } else {
            LocalAggregate::Grouped(Box::new(LocalGroups {
                table: GroupTable::new(self.group_by.len(), self.aggregates.len()),
                template: self.fresh_accumulators()?,
                key: Vec::with_capacity(self.group_by.len()),
                spill: None,
                peak: 0,
                flushed: 0,
            }))
        })
    }

    #[inline]
    fn push(&self, local: &mut LocalAggregate, row: &[Datum]) -> Result<bool> {
        match local {
            LocalAggregate::Grouped(local) => self.push_grouped(local, row)?,
            LocalAggregate::Ungrouped(accumulators) => {
                for (acc, call) in accumulators.iter_mut().zip(self.aggregates) {
                    update_call(acc, call, row, self.eval)?;
                }
            }
        }
        Ok(true)
    }

    /// Ungrouped `count(*)` calls and nothing else: a row counts whatever it holds.
    fn counts_rows_only(&self) -> bool {
        self.group_by.is_empty()
            && !self.aggregates.is_empty()
            && self.aggregates.iter().all(|call| call.function == AggregateFunction::CountStar && call.arg.is_none() && call.filter.is_none())
    }

    fn push_count(&self, local: &mut LocalAggregate, rows: u64) -> Result<()> {
        let LocalAggregate::Ungrouped(accumulators) = local else {
            return Err(Error::internal("rows counted for a grouped aggregate"));
        };
        for acc in accumulators.iter_mut() {
            match acc {
                Accumulator::Count(n) => *n += rows as i64,
                _ => return Err(Error::internal("rows counted for an aggregate other than count(*)")),
            }
        }
        Ok(())
    }

    fn accepts_raw(&self, layout: &RowLayout, columns: &[usize]) -> bool {
        if !self.group_by.is_empty() {
            return false;
        }
        let mut inputs = Vec::with_capacity(self.aggregates.len());
        for call in self.aggregates {
            // array_agg keeps NULLs, which the raw loops skip.
            if call.filter.is_some() || call.arg2.is_some() || call.function.is_ordered_set() || call.function == AggregateFunction::ArrayAgg {
                return false;
            }
            match &call.arg {
                None => inputs.push(None),
                Some(Expr::Column { index, data_type: t @ (DataType::Int4 | DataType::Int8 | DataType::Float8) }) => {
                    inputs.push(Some((columns[*index], *t)))
                }
                Some(_) => return false,
            }
        }
        self.raw.set(RawInputs { layout: layout.clone(), columns: inputs }).is_ok()
    }

    /// One loop over the page's tuples per aggregate, dispatching on the aggregate and
    /// column type once per page instead of once per tuple.
    fn push_raw_page(&self, local: &mut LocalAggregate, page: &[u8], tuples: &[Range<usize>]) -> Result<bool> {
        let (LocalAggregate::Ungrouped(accumulators), Some(raw)) = (&mut *local, self.raw.get()) else {
            return Err(Error::internal("raw aggregate input without its setup"));
        };
        let layout = &raw.layout;
        for (acc, input) in accumulators.iter_mut().zip(&raw.columns) {
            match (acc, *input) {
                (Accumulator::Count(n), None) => *n += tuples.len() as i64,
                (Accumulator::Count(n), Some((col, _))) => {
                    *n += tuples.iter().filter(|r| !layout.is_null(&page[(*r).clone()], col)).count() as i64;
                }
                (Accumulator::SumInt { sum, any, .. }, Some((col, DataType::Int8))) => {
                    let mut page_sum: i128 = 0;
                    let mut seen = false;
                    for r in tuples {
                        let tuple = &page[r.clone()];
                        if !layout.is_null(tuple, col) {
                            page_sum += layout.get_i64_unchecked(tuple, col) as i128;
                            seen = true;
                        }
                    }
                    *sum += page_sum;
                    *any |= seen;
                }
                (Accumulator::SumInt { sum, any, .. }, Some((col, DataType::Int4))) => {
                    let mut page_sum: i64 = 0; // < 2^31 * tuples per page: cannot overflow
                    let mut seen = false;
                    for r in tuples {
                        let tuple = &page[r.clone()];
                        if !layout.is_null(tuple, col) {
                            page_sum += layout.get_i32(tuple, col) as i64;
                            seen = true;
                        }
                    }
                    *sum += page_sum as i128;
                    *any |= seen;
                }
                (acc, input) => {
                    for r in tuples {
                        let tuple = &page[r.clone()];
                        match input {
                            None => acc.update_count_star(),
                            Some((col, _)) if layout.is_null(tuple, col) => {}
                            Some((col, DataType::Float8)) => acc.update_float(layout.get_f64(tuple, col))?,
                            Some((col, DataType::Int4)) => {
                                acc.update_int(layout.get_i32(tuple, col) as i64, |v| Datum::Int4(v as i32))?
                            }
                            Some((col, _)) => acc.update_int(layout.get_i64_unchecked(tuple, col), Datum::Int8)?,
                        }
                    }
                }
            }
        }
        Ok(true)
    }

    fn finish(&self, local: LocalAggregate) -> Result<()> {
        let local = match local {
            LocalAggregate::Ungrouped(accumulators) => {
                self.partial_groups.fetch_add(1, Ordering::Relaxed);
                let mut shared = self.shared.lock();
                match &mut shared.ungrouped {
                    None => shared.ungrouped = Some(accumulators),
                    Some(existing) => {
                        for (a, b) in existing.iter_mut().zip(accumulators) {
                            a.merge(b)?;
                        }
                    }
                }
                return Ok(());
            }
            LocalAggregate::Grouped(local) => local,
        };
        let mut local = local;
        if local.spill.is_some() && local.table.len() > 0 {
            // A participant that spilled writes out the rest too, so that its memory is
            // free before the combine pass takes its own budget.
            self.flush(&mut local)?;
        }
        let LocalGroups { table, spill, mut peak, flushed, .. } = *local;
        peak = peak.max(table.memory());
        self.stats.participant_peaks.lock().push(peak);
        let files = match spill {
            Some(spill) => {
                self.stats.spilled_records.fetch_add(spill.records, Ordering::Relaxed);
                spill.finish()?
            }
            None => Vec::new(),
        };
        let groups = table.groups;
        self.partial_groups.fetch_add(groups.len() as u64 + flushed, Ordering::Relaxed);
        if groups.len() == 0 && files.is_empty() {
            return Ok(());
        }
        let parts = self.budget.partitions();
        // A parallel pipeline's table is split here, by each participant, not later by one.
        let (whole, pieces) = if groups.len() == 0 {
            (None, Vec::new())
        } else if self.workers == 0 {
            (Some(groups), Vec::new())
        } else {
            let bits = self.budget.bits;
            (None, groups.split(parts, |h| partition_of(h, 0, bits)))
        };
        let mut shared = self.shared.lock();
        shared.contributors += 1;
        shared.pieces.resize_with(parts, Vec::new);
        shared.files.resize_with(parts, Vec::new);
        for (p, file) in files {
            shared.files[p].push(file);
        }
        for (p, piece) in pieces.into_iter().enumerate() {
            if piece.len() > 0 {
                shared.pieces[p].push(piece);
            }
        }
        shared.whole.extend(whole);
        Ok(())
    }
}

/// `sum(float8)` after one more value (or partial sum): PostgreSQL's sum starts from the
/// first value, not from 0, so a sum of `-0`s stays `-0`; float8 `+` fails on overflow.
fn sum_float(sum: f64, any: bool, value: f64) -> Result<f64> {
    if any {
        float_add(sum, value)
    } else {
        Ok(value)
    }
}
