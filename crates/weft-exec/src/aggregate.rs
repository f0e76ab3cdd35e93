//! Grouping and aggregation: count, sum, avg, min, max with PostgreSQL's result types.
//!
//! Each participant aggregates its rows into a private hash table of group key →
//! accumulators (the hot path touches only local state); at the end it merges its table
//! into the shared one under one lock (`finish`). Accumulators are exact where PostgreSQL
//! is exact: sum(int8) and avg of integers accumulate in i128 and finish as `numeric`.
//!
//! Not yet: spilling to disk when the groups exceed `work_mem` (the hash-join issue brings
//! hash aggregation under a budget).

use std::collections::hash_map::Entry;
use std::ops::Range;
use std::collections::HashMap;

use parking_lot::Mutex;
use weft_common::numeric::Numeric;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result};

use crate::execute::Sink;
use crate::expr::compare::{compare_datums, GroupKey};
use crate::expr::{EvalContext, Expr};
use crate::plan::{AggregateCall, AggregateFunction, Row};

/// The running state of one aggregate in one group.
#[derive(Clone, Debug)]
pub(crate) enum Accumulator {
    Count(i64),
    SumInt { sum: i128, any: bool, result: DataType },
    SumFloat { sum: f64, any: bool },
    SumNumeric { sum: Option<Numeric> },
    AvgInt { sum: i128, count: i64 },
    AvgFloat { sum: f64, count: i64 },
    AvgNumeric { sum: Option<Numeric>, count: i64 },
    Min(Option<Datum>),
    Max(Option<Datum>),
}

impl Accumulator {
    fn new(call: &AggregateCall) -> Result<Accumulator> {
        use AggregateFunction::*;
        let input = call.arg.as_ref().map(|a| a.data_type());
        Ok(match (call.function, input) {
            (CountStar, _) | (Count, _) => Accumulator::Count(0),
            (Sum, Some(DataType::Int4 | DataType::Int8)) => {
                Accumulator::SumInt { sum: 0, any: false, result: call.result_type }
            }
            (Sum, Some(DataType::Float8)) => Accumulator::SumFloat { sum: 0.0, any: false },
            (Sum, Some(DataType::Numeric)) => Accumulator::SumNumeric { sum: None },
            (Avg, Some(DataType::Int4 | DataType::Int8)) => Accumulator::AvgInt { sum: 0, count: 0 },
            (Avg, Some(DataType::Float8)) => Accumulator::AvgFloat { sum: 0.0, count: 0 },
            (Avg, Some(DataType::Numeric)) => Accumulator::AvgNumeric { sum: None, count: 0 },
            (Min, _) => Accumulator::Min(None),
            (Max, _) => Accumulator::Max(None),
            (f, t) => return Err(Error::internal(format!("no accumulator for {f:?}({t:?})"))),
        })
    }

    #[inline]
    fn update(&mut self, value: Datum, count_star: bool) -> Result<()> {
        if value.is_null() && !count_star {
            return Ok(());
        }
        match self {
            Accumulator::Count(n) => *n += 1,
            Accumulator::SumInt { sum, any, .. } => {
                *sum = sum.checked_add(int_value(&value)?).ok_or_else(numeric_overflow)?;
                *any = true;
            }
            Accumulator::SumFloat { sum, any } => {
                *sum += float_value(&value)?;
                *any = true;
            }
            Accumulator::SumNumeric { sum } => *sum = Some(add_numeric(sum.take(), numeric_value(&value)?)?),
            Accumulator::AvgInt { sum, count } => {
                *sum = sum.checked_add(int_value(&value)?).ok_or_else(numeric_overflow)?;
                *count += 1;
            }
            Accumulator::AvgFloat { sum, count } => {
                *sum += float_value(&value)?;
                *count += 1;
            }
            Accumulator::AvgNumeric { sum, count } => {
                *sum = Some(add_numeric(sum.take(), numeric_value(&value)?)?);
                *count += 1;
            }
            Accumulator::Min(current) => {
                if current.as_ref().is_none_or(|c| compare_datums(&value, c).is_lt()) {
                    *current = Some(value);
                }
            }
            Accumulator::Max(current) => {
                if current.as_ref().is_none_or(|c| compare_datums(&value, c).is_gt()) {
                    *current = Some(value);
                }
            }
        }
        Ok(())
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
            _ => return self.update(as_datum(v), false),
        }
        Ok(())
    }

    #[inline]
    fn update_float(&mut self, v: f64) -> Result<()> {
        match self {
            Accumulator::Count(n) => *n += 1,
            Accumulator::SumFloat { sum, any } => {
                *sum += v;
                *any = true;
            }
            Accumulator::AvgFloat { sum, count } => {
                *sum += v;
                *count += 1;
            }
            _ => return self.update(Datum::Float8(v), false),
        }
        Ok(())
    }

    /// Fold another participant's state for the same group into this one.
    fn merge(&mut self, other: Accumulator) -> Result<()> {
        match (self, other) {
            (Accumulator::Count(a), Accumulator::Count(b)) => *a += b,
            (Accumulator::SumInt { sum, any, .. }, Accumulator::SumInt { sum: s, any: a, .. }) => {
                *sum = sum.checked_add(s).ok_or_else(numeric_overflow)?;
                *any |= a;
            }
            (Accumulator::SumFloat { sum, any }, Accumulator::SumFloat { sum: s, any: a }) => {
                *sum += s;
                *any |= a;
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
            (Accumulator::AvgFloat { sum, count }, Accumulator::AvgFloat { sum: s, count: c }) => {
                *sum += s;
                *count += c;
            }
            (Accumulator::AvgNumeric { sum, count }, Accumulator::AvgNumeric { sum: s, count: c }) => {
                if let Some(s) = s {
                    *sum = Some(add_numeric(sum.take(), s)?);
                }
                *count += c;
            }
            (Accumulator::Min(a), Accumulator::Min(Some(b))) => {
                if a.as_ref().is_none_or(|x| compare_datums(&b, x).is_lt()) {
                    *a = Some(b);
                }
            }
            (Accumulator::Max(a), Accumulator::Max(Some(b))) => {
                if a.as_ref().is_none_or(|x| compare_datums(&b, x).is_gt()) {
                    *a = Some(b);
                }
            }
            (Accumulator::Min(_), Accumulator::Min(None)) | (Accumulator::Max(_), Accumulator::Max(None)) => {}
            (a, b) => return Err(Error::internal(format!("cannot merge {a:?} with {b:?}"))),
        }
        Ok(())
    }

    fn finish(self) -> Result<Datum> {
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
            | Accumulator::AvgFloat { count: 0, .. }
            | Accumulator::AvgNumeric { count: 0, .. } => Datum::Null,
            Accumulator::AvgInt { sum, count } => {
                Datum::Numeric(Numeric::from_i128(sum).div(&Numeric::from_i64(count))?)
            }
            Accumulator::AvgFloat { sum, count } => Datum::Float8(sum / count as f64),
            Accumulator::AvgNumeric { sum, count } => match sum {
                Some(sum) => Datum::Numeric(sum.div(&Numeric::from_i64(count))?),
                None => Datum::Null,
            },
            Accumulator::Min(v) | Accumulator::Max(v) => v.unwrap_or(Datum::Null),
        })
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

pub(crate) type Groups = HashMap<GroupKey, Vec<Accumulator>>;

/// One participant's aggregation state. Without GROUP BY there is one group and no
/// hashing at all.
pub(crate) enum LocalAggregate {
    Ungrouped(Vec<Accumulator>),
    Grouped(Groups),
}

/// The shared state of a hash aggregate.
pub(crate) struct AggregateSink<'a> {
    group_by: &'a [Expr],
    aggregates: &'a [AggregateCall],
    eval: &'a EvalContext,
    groups: Mutex<Groups>,
    /// Set when the sink reads heap tuples directly (see `accepts_raw`).
    raw: std::sync::OnceLock<RawInputs>,
    /// Groups handed over by participants' `finish`, summed (EXPLAIN ANALYZE's rows of
    /// the partial aggregates).
    partial_groups: std::sync::atomic::AtomicU64,
}

/// Per aggregate: the table column it reads straight from tuple bytes (`None` for
/// count(*)), for ungrouped aggregates over fixed-width numeric columns — the shape of
/// `SELECT count(*), sum(x) FROM big`, which then runs without building rows.
struct RawInputs {
    layout: RowLayout,
    columns: Vec<Option<(usize, DataType)>>,
}

impl<'a> AggregateSink<'a> {
    pub(crate) fn new(group_by: &'a [Expr], aggregates: &'a [AggregateCall], eval: &'a EvalContext) -> Self {
        AggregateSink {
            group_by,
            aggregates,
            eval,
            groups: Mutex::new(HashMap::new()),
            raw: std::sync::OnceLock::new(),
            partial_groups: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Groups the participants handed over, summed over participants.
    pub(crate) fn partial_groups(&self) -> u64 {
        self.partial_groups.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn fresh_accumulators(&self) -> Result<Vec<Accumulator>> {
        self.aggregates.iter().map(Accumulator::new).collect()
    }

    /// Group keys followed by aggregate values, one row per group. Without GROUP BY there
    /// is exactly one row, even over no input (count = 0, sum = NULL).
    pub(crate) fn into_rows(self) -> Result<Vec<Row>> {
        let mut groups = self.groups.into_inner();
        if self.group_by.is_empty() && groups.is_empty() {
            groups.insert(GroupKey(Vec::new()), self.aggregates.iter().map(Accumulator::new).collect::<Result<_>>()?);
        }
        let mut rows = Vec::with_capacity(groups.len());
        for (key, accumulators) in groups {
            let mut row = key.0;
            for acc in accumulators {
                row.push(acc.finish()?);
            }
            rows.push(row);
        }
        Ok(rows)
    }
}

impl Sink for AggregateSink<'_> {
    type Local = LocalAggregate;

    fn local(&self) -> Result<LocalAggregate> {
        Ok(if self.group_by.is_empty() {
            LocalAggregate::Ungrouped(self.fresh_accumulators()?)
        } else {
            LocalAggregate::Grouped(HashMap::new())
        })
    }

    #[inline]
    fn push(&self, local: &mut LocalAggregate, row: &[Datum]) -> Result<bool> {
        let accumulators = match local {
            LocalAggregate::Ungrouped(accumulators) => accumulators,
            LocalAggregate::Grouped(groups) => {
                let mut key = Vec::with_capacity(self.group_by.len());
                for expr in self.group_by {
                    key.push(expr.eval(row, self.eval)?);
                }
                match groups.entry(GroupKey(key)) {
                    Entry::Occupied(entry) => entry.into_mut(),
                    Entry::Vacant(entry) => entry.insert(self.fresh_accumulators()?),
                }
            }
        };
        for (acc, call) in accumulators.iter_mut().zip(self.aggregates) {
            match &call.arg {
                None => acc.update(Datum::Null, true)?,
                Some(Expr::Column { index, .. }) => acc.update(row[*index].clone(), false)?,
                Some(arg) => acc.update(arg.eval(row, self.eval)?, false)?,
            }
        }
        Ok(true)
    }

    fn accepts_raw(&self, layout: &RowLayout, columns: &[usize]) -> bool {
        if !self.group_by.is_empty() {
            return false;
        }
        let mut inputs = Vec::with_capacity(self.aggregates.len());
        for call in self.aggregates {
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
            LocalAggregate::Ungrouped(accumulators) => HashMap::from([(GroupKey(Vec::new()), accumulators)]),
            LocalAggregate::Grouped(groups) => groups,
        };
        self.partial_groups.fetch_add(local.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let mut shared = self.groups.lock();
        if shared.is_empty() {
            *shared = local;
            return Ok(());
        }
        for (key, accumulators) in local {
            match shared.get_mut(&key) {
                Some(existing) => {
                    for (a, b) in existing.iter_mut().zip(accumulators) {
                        a.merge(b)?;
                    }
                }
                None => {
                    shared.insert(key, accumulators);
                }
            }
        }
        Ok(())
    }
}
