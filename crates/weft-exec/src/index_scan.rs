//! Index scans: entries of B-tree ranges in index order (the ranges first to last, or
//! last to first and each one backward), each turned into the pipeline's row — from the
//! heap row it points to, checked against the snapshot, or, for an index-only scan, from
//! the entry itself when it was written by the build (visible to every snapshot that sees
//! the index) and from the heap otherwise (an entry added by INSERT carries the
//! "check the heap" bit: its statement may have failed or not be visible yet).
//!
//! Conditions on index columns that the ranges do not bound (`key_filter`) are checked
//! on the entry's keys before the heap row is fetched. A conjunct `key op value` whose
//! value is the same for the whole scan (constants, the outer row's parameters) is
//! checked on the entry's bytes, its value evaluated once ([`KeyTest`]); the other
//! conjuncts are evaluated on the decoded keys. The pipeline's filter checks the rest of
//! the WHERE; the ranges themselves are exact (NULLs excluded by their bounds), so the
//! conjuncts they implement are not evaluated again.
//!
//! Inside a subplan or a LATERAL item the ranges may hold parameters (`ParamRanges`):
//! they are evaluated over the run's parameters when the scan starts and made into ranges
//! as the planner makes constant ones (a NULL value, or an int8 value an int4 key cannot
//! equal, means no rows).

use std::borrow::Cow;
use std::cmp::Ordering as CmpOrdering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

use weft_access::btree::{BTree, ScanDirection};
use weft_access::heap;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result};

use crate::execute::ExecContext;
use crate::expr::{comparison, compare_datums, BinaryOp, EvalContext, Expr};
use crate::plan::{prefix_range, IndexSource, KeyRange, KeyValue, ParamRanges};

/// Entries between two cancellation checks.
const CANCEL_CHECK_ENTRIES: u64 = 1024;

/// Run the scan, handing each visible row to `emit` until it returns false; the heap
/// visits of an index-only scan are added to `heap_fetches`.
pub(crate) fn run(
    source: &IndexSource,
    ctx: &ExecContext,
    heap_fetches: &AtomicU64,
    emit: impl FnMut(&[Datum]) -> Result<bool>,
) -> Result<()> {
    let mut fetches = 0u64;
    let outcome = scan(source, ctx, &mut fetches, emit);
    heap_fetches.fetch_add(fetches, Ordering::Relaxed);
    outcome
}

fn scan(source: &IndexSource, ctx: &ExecContext, fetches: &mut u64, mut emit: impl FnMut(&[Datum]) -> Result<bool>) -> Result<()> {
    let table = &source.heap;
    let tree = BTree::open(ctx.pool, source.index_rel, &source.desc);
    // For index-only rows: where each produced column sits among the keys (and INCLUDE
    // columns, which `key_columns` lists after them).
    let key_of_column: Vec<Option<usize>> =
        table.columns.iter().map(|c| source.key_columns.iter().position(|k| k == c)).collect();
    let mut row: Vec<Datum> = Vec::with_capacity(table.columns.len());
    // An entry's keys, decoded when a key filter or an index-only row needs them: for the
    // filter alone, only up to the last key column it reads.
    let mut keys: Vec<Datum> = Vec::new();
    let layout = source.desc.layout();
    let (mut key_tests, residual) = match &source.key_filter {
        Some(filter) => split_key_filter(filter, layout),
        None => (Vec::new(), Vec::new()),
    };
    let mut filter_width = 0;
    for conjunct in &residual {
        conjunct.for_each_node(&mut |e| {
            if let Expr::Column { index, .. } = e {
                filter_width = filter_width.max(index + 1);
            }
        });
    }
    let mut seen = 0u64;
    let ranges: Cow<[KeyRange]> = match &source.param_ranges {
        Some(p) => Cow::Owned(param_ranges(p, ctx.eval)?),
        None => Cow::Borrowed(&source.ranges),
    };
    let ranges: Box<dyn Iterator<Item = _>> = match source.direction {
        ScanDirection::Forward => Box::new(ranges.iter()),
        ScanDirection::Backward => Box::new(ranges.iter().rev()),
    };
    // Under the leaf's lock, as the scan copies the page: entries failing the byte-level
    // tests are never copied out.
    let mut keep = |entry: &[u8]| {
        seen += 1;
        if seen.is_multiple_of(CANCEL_CHECK_ENTRIES) {
            ctx.cancel.check()?;
        }
        all_pass(&mut key_tests, layout, entry, ctx.eval)
    };
    for (lower, upper) in ranges {
        ctx.cancel.check()?;
        let mut scan = tree.scan(lower.clone(), upper.clone(), source.direction)?;
        while let Some(entry) = scan.next_where(&mut keep)? {
            let word = source.desc.tid_word(entry);
            row.clear();
            let index_only_row = source.index_only && !word.needs_heap_check();
            if !residual.is_empty() || index_only_row {
                let count = if index_only_row { usize::MAX } else { filter_width };
                source.desc.entry_datums_into(entry, &mut keys, count)?;
            }
            if !residual.is_empty() && !all_true(&residual, &keys, ctx.eval)? {
                continue;
            }
            if index_only_row {
                row.extend(key_of_column.iter().map(|k| k.map_or(Datum::Null, |k| keys[k].clone())));
            } else {
                if source.index_only {
                    *fetches += 1;
                }
                let fetched = heap::fetch(ctx.pool, table.rel, word.tid(), |header, tuple| {
                    if !header.live_for(&table.snapshot, None) {
                        return Ok(false);
                    }
                    for &col in &table.columns {
                        row.push(table.layout.get(tuple, col)?);
                    }
                    Ok(true)
                })?;
                if fetched != Some(true) {
                    continue;
                }
            }
            if !emit(&row)? {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// A key-filter conjunct `key op value` (or `value op key`) whose value reads no key
/// column and runs nothing per row: checked on the entry's bytes, with the value
/// evaluated at its first use and kept for the rest of the scan (where the generic
/// filter decodes the keys and evaluates the value, casts included, per entry).
struct KeyTest<'e> {
    column: usize,
    /// An int4 / int8 key: its offset in the entry and whether it is int8.
    int_key: Option<(usize, bool)>,
    /// `key op value`.
    op: BinaryOp,
    value_expr: &'e Expr,
    value: Option<TestValue>,
}

/// A [`KeyTest`]'s value, integers held as the i64 both int key types compare as.
enum TestValue {
    Null,
    Int(i64),
    Other(Datum),
}

impl KeyTest<'_> {
    fn passes(&mut self, layout: &RowLayout, entry: &[u8], eval: &EvalContext) -> Result<bool> {
        let value = match &self.value {
            Some(v) => v,
            None => self.value.insert(match self.value_expr.eval(&[], eval)? {
                Datum::Null => TestValue::Null,
                Datum::Int4(v) => TestValue::Int(v.into()),
                Datum::Int8(v) => TestValue::Int(v),
                other => TestValue::Other(other),
            }),
        };
        let ordering = match value {
            TestValue::Null => return Ok(false),
            TestValue::Int(value) => {
                let damaged = || Error::internal("an integer index key test on a damaged or non-integer entry");
                let (offset, int8) = self.int_key.ok_or_else(damaged)?;
                // The null bitmap lies before the fixed columns: in bounds once the key is.
                let bytes = entry.get(offset..offset + if int8 { 8 } else { 4 }).ok_or_else(damaged)?;
                if layout.is_null(entry, self.column) {
                    return Ok(false);
                }
                let key = match bytes.try_into() {
                    Ok(eight) => i64::from_le_bytes(eight),
                    Err(_) => i32::from_le_bytes(bytes.try_into().map_err(|_| damaged())?).into(),
                };
                key.cmp(value)
            }
            TestValue::Other(Datum::Text(value)) => match layout.var_column_bytes(entry, self.column)? {
                None => return Ok(false),
                Some(key) => key.cmp(value.as_bytes()),
            },
            TestValue::Other(value) => match layout.get(entry, self.column)? {
                Datum::Null => return Ok(false),
                key => compare_datums(&key, value),
            },
        };
        Ok(match self.op {
            BinaryOp::Eq => ordering.is_eq(),
            BinaryOp::NotEq => ordering.is_ne(),
            BinaryOp::Lt => ordering.is_lt(),
            BinaryOp::LtEq => ordering.is_le(),
            BinaryOp::Gt => ordering.is_gt(),
            // GtEq: `key_test` admits comparisons only.
            _ => ordering.is_ge(),
        })
    }
}

/// The key filter's conjuncts as byte-level tests and the rest, in the filter's order.
fn split_key_filter<'e>(filter: &'e Expr, layout: &RowLayout) -> (Vec<KeyTest<'e>>, Vec<&'e Expr>) {
    let mut tests = Vec::new();
    let mut rest = Vec::new();
    for conjunct in filter.conjuncts() {
        match key_test(conjunct, layout) {
            Some(test) => tests.push(test),
            None => rest.push(conjunct),
        }
    }
    (tests, rest)
}

fn key_test<'e>(conjunct: &'e Expr, layout: &RowLayout) -> Option<KeyTest<'e>> {
    let Expr::Binary { op, left, right, .. } = conjunct else { return None };
    let (op, key, value_expr) = if right.is_pseudoconstant() && !right.runs_per_row() {
        (*op, &**left, &**right)
    } else if left.is_pseudoconstant() && !left.runs_per_row() {
        (op.commuted(), &**right, &**left)
    } else {
        return None;
    };
    comparison(op)?;
    // An int4 key the query compares as int8 (`key::int8 = $1`) compares as it is: int
    // keys and values are compared as i64.
    let (column, widen) = match key {
        Expr::Column { index, .. } => (*index, false),
        Expr::Cast { expr, to: DataType::Int8 } => match &**expr {
            Expr::Column { index, data_type: DataType::Int4 } => (*index, true),
            _ => return None,
        },
        _ => return None,
    };
    let key_type = *layout.types().get(column)?;
    let compared_as = if widen { DataType::Int8 } else { key_type };
    // Text compares bytewise in place; other variable-width keys (arrays) decode.
    let in_place = layout.fixed_offset_of(column).is_some() || key_type == DataType::Text;
    let int_key = match key_type {
        DataType::Int4 => layout.fixed_offset_of(column).map(|offset| (offset, false)),
        DataType::Int8 => layout.fixed_offset_of(column).map(|offset| (offset, true)),
        _ => None,
    };
    (in_place && value_expr.data_type() == compared_as).then_some(KeyTest { column, int_key, op, value_expr, value: None })
}

fn all_pass(tests: &mut [KeyTest], layout: &RowLayout, entry: &[u8], eval: &EvalContext) -> Result<bool> {
    for test in tests {
        if !test.passes(layout, entry, eval)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn all_true(conjuncts: &[&Expr], keys: &[Datum], eval: &EvalContext) -> Result<bool> {
    for conjunct in conjuncts {
        if !matches!(conjunct.eval(keys, eval)?, Datum::Bool(true)) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What `key op value` allows on a key column of type `t` (`value` not NULL).
enum KeyCondition {
    /// No key (a NULL, or an int8 value outside an int4 key's range for `=`).
    Nothing,
    /// Every non-NULL key.
    All,
    /// `op` against this value of the key's type.
    Exact(Datum),
}

/// `value` converted exactly to a key of type `t` for `key op value`.
fn key_condition(op: BinaryOp, value: Datum, t: DataType) -> Result<KeyCondition> {
    if value.is_null() {
        return Ok(KeyCondition::Nothing);
    }
    if value.data_type() == Some(t) {
        return Ok(KeyCondition::Exact(value));
    }
    match (value, t) {
        (Datum::Int4(v), DataType::Int8) => Ok(KeyCondition::Exact(Datum::Int8(v as i64))),
        (Datum::Int8(v), DataType::Int4) => match i32::try_from(v) {
            Ok(v) => Ok(KeyCondition::Exact(Datum::Int4(v))),
            // Below every int4: `key > v` holds for all keys, `key = v` / `key < v` for none.
            Err(_) if v < 0 => Ok(if matches!(op, BinaryOp::Gt | BinaryOp::GtEq) { KeyCondition::All } else { KeyCondition::Nothing }),
            Err(_) => Ok(if matches!(op, BinaryOp::Lt | BinaryOp::LtEq) { KeyCondition::All } else { KeyCondition::Nothing }),
        },
        (value, t) => Err(Error::internal(format!("an index key of type {t:?} bound to a parameter of type {:?}", value.data_type()))),
    }
}

/// The key ranges of `p` for the parameters of `eval`, in index order.
pub(crate) fn param_ranges(p: &ParamRanges, eval: &EvalContext) -> Result<Vec<KeyRange>> {
    let value = |v: &KeyValue, op: BinaryOp, k: usize| -> Result<KeyCondition> {
        let t = p.key_types.get(k).copied().ok_or_else(|| Error::internal("an index key value past the index's columns"))?;
        match v {
            // Converted by the planner (a NULL here is an IS NULL prefix).
            KeyValue::Const(d) => Ok(KeyCondition::Exact(d.clone())),
            KeyValue::Param(e) => key_condition(op, e.eval(&[], eval)?, t),
        }
    };
    let mut prefixes = Vec::with_capacity(p.prefixes.len());
    for prefix in &p.prefixes {
        let mut keys = Vec::with_capacity(prefix.len());
        for (k, v) in prefix.iter().enumerate() {
            match value(v, BinaryOp::Eq, k)? {
                KeyCondition::Exact(d) => keys.push(d),
                // `=` never yields All.
                KeyCondition::Nothing | KeyCondition::All => return Ok(Vec::new()),
            }
        }
        prefixes.push(keys);
    }
    if p.bounds.is_empty() {
        return Ok(prefixes.into_iter().map(|k| (Bound::Included(k.clone()), Bound::Included(k))).collect());
    }
    // The tightest bound on each side, in value order: (value, inclusive).
    let k = p.prefixes.first().map_or(0, Vec::len);
    let mut lower: Option<(Datum, bool)> = None;
    let mut upper: Option<(Datum, bool)> = None;
    for (op, v) in &p.bounds {
        let d = match value(v, *op, k)? {
            KeyCondition::Nothing => return Ok(Vec::new()),
            KeyCondition::All => continue,
            KeyCondition::Exact(d) => d,
        };
        let inclusive = matches!(op, BinaryOp::LtEq | BinaryOp::GtEq);
        let (slot, wanted) = match op {
            BinaryOp::Gt | BinaryOp::GtEq => (&mut lower, CmpOrdering::Greater),
            BinaryOp::Lt | BinaryOp::LtEq => (&mut upper, CmpOrdering::Less),
            other => return Err(Error::internal(format!("an index bound with operator {other:?}"))),
        };
        let tighter = match slot {
            None => true,
            Some((old, old_inclusive)) => match compare_datums(&d, old) {
                CmpOrdering::Equal => *old_inclusive && !inclusive,
                o => o == wanted,
            },
        };
        if tighter {
            *slot = Some((d, inclusive));
        }
    }
    // Bounds that cross leave nothing (the B-tree scan expects lower <= upper).
    if let (Some((lo, lo_inclusive)), Some((hi, hi_inclusive))) = (&lower, &upper) {
        match compare_datums(lo, hi) {
            CmpOrdering::Greater => return Ok(Vec::new()),
            CmpOrdering::Equal if !(*lo_inclusive && *hi_inclusive) => return Ok(Vec::new()),
            _ => {}
        }
    }
    // In index order, a descending column's upper value bound comes first.
    let (first, last) = if p.bound_descending { (upper, lower) } else { (lower, upper) };
    let ranges = prefixes
        .iter()
        .map(|prefix| prefix_range(prefix, first.as_ref(), last.as_ref(), p.bound_nulls_first))
        .collect();
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;

    fn param(data_type: DataType) -> KeyValue {
        KeyValue::Param(Expr::Param { index: 0, data_type })
    }

    fn ranges(p: &ParamRanges, value: Datum) -> Vec<KeyRange> {
        param_ranges(p, &EvalContext::with_seed(0).with_params(vec![value])).unwrap()
    }

    #[test]
    fn equality_on_a_parameter() {
        let p = ParamRanges {
            prefixes: vec![vec![param(DataType::Int8)]],
            bounds: Vec::new(),
            key_types: vec![DataType::Int4],
            bound_descending: false,
            bound_nulls_first: false,
        };
        let point = |v: i32| vec![(Bound::Included(vec![Datum::Int4(v)]), Bound::Included(vec![Datum::Int4(v)]))];
        assert_eq!(ranges(&p, Datum::Int8(7)), point(7));
        // `k = NULL` and an int8 no int4 equals match nothing.
        assert!(ranges(&p, Datum::Null).is_empty());
        assert!(ranges(&p, Datum::Int8(5_000_000_000)).is_empty());
        assert!(ranges(&p, Datum::Int8(-5_000_000_000)).is_empty());
    }

    #[test]
    fn bounds_on_a_parameter() {
        // key > $0 AND key < 10 on an int4 key, ascending, NULLs last.
        let mut p = ParamRanges {
            prefixes: vec![Vec::new()],
            bounds: vec![(BinaryOp::Gt, param(DataType::Int8)), (BinaryOp::Lt, KeyValue::Const(Datum::Int4(10)))],
            key_types: vec![DataType::Int4],
            bound_descending: false,
            bound_nulls_first: false,
        };
        let key = |v: i32| vec![Datum::Int4(v)];
        assert_eq!(ranges(&p, Datum::Int8(3)), vec![(Bound::Excluded(key(3)), Bound::Excluded(key(10)))]);
        // Below every int4: the constant bound alone, NULLs (first here) excluded.
        p.bound_nulls_first = true;
        assert_eq!(ranges(&p, Datum::Int8(-5_000_000_000)), vec![(Bound::Excluded(vec![Datum::Null]), Bound::Excluded(key(10)))]);
        // Above every int4, crossing bounds, NULL: nothing.
        assert!(ranges(&p, Datum::Int8(5_000_000_000)).is_empty());
        assert!(ranges(&p, Datum::Int8(10)).is_empty());
        assert!(ranges(&p, Datum::Null).is_empty());
        // A descending key: the upper value bound comes first in index order.
        p.bound_descending = true;
        assert_eq!(ranges(&p, Datum::Int8(3)), vec![(Bound::Excluded(key(10)), Bound::Excluded(key(3)))]);
    }
}
