//! Access paths of a single-table scan: a sequential scan (maybe parallel) or one of the
//! table's B-tree indexes, as an Index Scan or an Index Only Scan, forward or backward;
//! the cheapest wins, as in PostgreSQL's `indxpath.c` / `costsize.c`.
//!
//! **Index conditions.** WHERE conjuncts of the forms `column op constant` (either side;
//! `=`, `<`, `<=`, `>`, `>=`; BETWEEN binds to two of them), `column IN (list)` (the
//! binder's OR of equalities), an OR of ranges on one column (BETWEEN SYMMETRIC: one
//! range per arm, merged where they meet), `column IS [NOT] NULL` and a bare boolean column (`flag`,
//! `NOT flag`). The constant may be any expression without columns or volatile functions
//! (folded at plan time). Cross-type comparisons are converted exactly into the column's
//! type: an int4 column against an int8 or numeric constant becomes a bound on int4
//! (`a < 2.5` is `a <= 2`, `a = 2.5` and `a > 5000000000` match nothing, `a < 5000000000`
//! is every non-NULL `a`); an int4 column against float8 likewise; an int8 column
//! compared as float8 is left to the filter. Conditions on the index's columns in order
//! make key ranges: equalities (and IS NULL) extend a prefix, an IN list multiplies the
//! prefixes (up to [`MAX_RANGES`], each value one range in index order — several
//! equality scans, not one scan over min..max), and the first column with neither ends
//! the ranges with its tightest lower and upper bounds. Ranges are exact — NULLs are
//! excluded by a bound just before (or after) the NULLs — so the conjuncts they implement
//! leave the filter and show as `Index Cond:`; the rest of the WHERE is the scan's
//! `Filter:`.
//!
//! **Rows.** With usable ANALYZE statistics (`selectivity.rs`): the entries read are the
//! selectivity of the index conditions times the table's rows, at most one per range
//! for equalities on every column of a unique index. Without statistics the index
//! itself is probed: the entries in its ranges are counted (up to [`PROBE_ENTRIES`] or
//! 1 % of the table, whichever is more, and never past the count at which it cannot win),
//! which also counts the heap pages they point to and the entries an index-only scan
//! would have to check in the heap. A probe that stops early knows the ranges hold at
//! least that many entries, and takes the larger of that and PostgreSQL's default
//! selectivity (fetching 1 % of a table's rows in random order already costs more than
//! reading all of it).
//!
//! **Costs** (`cost::index_scan_cost`, PostgreSQL's `cost_index`): descent, index pages
//! and entries, heap pages between the uncorrelated Mackert–Lohman estimate and a
//! sequential run by the squared correlation (or the counted pages), an index-only scan
//! paying heap pages only for entries added after the build, and `cpu_tuple_cost` per
//! row; the filter's operators per row fetched. A sequential scan costs its pages and
//! rows, or its parallel version with Gather's setup and per-row transfer. `enable_*`
//! settings add PostgreSQL's disable cost: `enable_indexscan = off` disables both index
//! scan kinds, `enable_indexonlyscan = off` turns an index-only scan into a plain one.
//! An index scan is considered when it has conditions, when it answers the query alone
//! (index-only), or when its order is wanted.
//!
//! **Order.** `ORDER BY` on an index's columns — in its order, or all exactly reversed
//! (a Backward scan) — after any leading columns fixed by equalities, is answered by an
//! index scan in that order instead of a sort when that is cheaper: for `LIMIT n`, the
//! scan's cost counts for the fraction of its rows the limit takes, against the whole
//! input and a top-N sort.

use std::cmp::Ordering;
use std::ops::Bound;

use weft_access::btree::{BTree, BTreeDesc, ScanDirection};
use weft_access::catalog::{IndexMeta, TableMeta};
use weft_access::index_build::btree_desc;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Numeric};
use weft_exec::expr::{compare_datums, BinaryOp, Expr, UnaryOp};
use weft_exec::plan::{prefix_range, HeapSource, IndexSource, KeyValue, ParamRanges, Plan, SortPlan, Source, Step};
use weft_sort::{SortColumn, SortKeys};
use weft_storage::ForkNumber;

use crate::cost::{self, Estimate, IndexScanCost, IndexScanInput, CPU_OPERATOR_COST, DISABLE_COST};
use crate::planner::{choose_workers, PlanContext};
use crate::selectivity::{self, column_comparison, column_param_comparison, in_list, RelStats};

/// Most ranges an index scan is split into (IN lists multiply them).
pub const MAX_RANGES: usize = 10_000;
/// Most index entries a plan-time probe reads.
pub const PROBE_ENTRIES: u64 = 20_000;
/// ... or this fraction of the table's rows, when more.
const PROBE_FRACTION: f64 = 0.01;

type Range = weft_exec::plan::KeyRange;

/// A conjunct as a condition on one table column, in the column's value order.
#[derive(Clone, Debug)]
enum Condition {
    /// `= value`; NULL stands for IS NULL.
    Eq(Datum),
    /// One of these non-null values.
    In(Vec<Datum>),
    /// Non-null values within the bounds (`(value, inclusive)`); none: IS NOT NULL.
    Range { lower: Option<(Datum, bool)>, upper: Option<(Datum, bool)> },
    /// Non-null values within any of these disjoint ranges, in increasing order: an OR
    /// of range conditions on the column (`BETWEEN SYMMETRIC`'s two orders).
    Ranges(Vec<(Option<(Datum, bool)>, Option<(Datum, bool)>)>),
    /// No row qualifies (a comparison with NULL, a value the column's type cannot hold).
    Empty,
    /// `op value` (`=`, `<`, `<=`, `>`, `>=`) where the value is known only when the scan
    /// starts (a subplan's or LATERAL item's parameters): of the column's type, or an
    /// integer the executor converts exactly (int4 and int8 either way).
    Param { op: BinaryOp, value: Expr },
}

#[derive(Clone, Debug)]
struct ColumnCondition {
    /// Index of the conjunct in the WHERE's list.
    conjunct: usize,
    /// Table column.
    column: usize,
    condition: Condition,
}

/// Where a constant falls among the values of a column type.
enum Position {
    Exact(Datum),
    /// Below or above every value of the type.
    Below,
    Above,
    /// Strictly between two consecutive integers of the type.
    Between(Datum, Datum),
}

fn int_datum(v: i128, t: DataType) -> Option<Datum> {
    match t {
        DataType::Int4 => i32::try_from(v).ok().map(Datum::Int4),
        DataType::Int8 => i64::try_from(v).ok().map(Datum::Int8),
        _ => None,
    }
}

fn int_range(t: DataType) -> (i128, i128) {
    match t {
        DataType::Int4 => (i32::MIN as i128, i32::MAX as i128),
        _ => (i64::MIN as i128, i64::MAX as i128),
    }
}

/// An integer column against a value `floor` (+ a fraction when not `integral`).
fn integer_position(floor: i128, integral: bool, t: DataType) -> Option<Position> {
    let (min, max) = int_range(t);
    Some(if integral {
        if floor < min {
            Position::Below
        } else if floor > max {
            Position::Above
        } else {
            Position::Exact(int_datum(floor, t)?)
        }
    } else if floor >= max {
        Position::Above
    } else if floor < min {
        Position::Below
    } else {
        Position::Between(int_datum(floor, t)?, int_datum(floor + 1, t)?)
    })
}

/// `value` (non-null) placed among the values of type `t`, exactly, or `None`.
fn position(value: &Datum, t: DataType) -> Option<Position> {
    if value.data_type() == Some(t) {
        return Some(Position::Exact(value.clone()));
    }
    match (value, t) {
        (Datum::Int4(v), DataType::Int8) => Some(Position::Exact(Datum::Int8(*v as i64))),
        (Datum::Int4(v), DataType::Float8) => Some(Position::Exact(Datum::Float8(*v as f64))),
        (Datum::Int8(v), DataType::Int4) => integer_position(*v as i128, true, t),
        (Datum::Numeric(n), DataType::Int4 | DataType::Int8) => {
            let zero = Numeric::parse("0").ok()?;
            let Ok(rounded) = n.round(0) else {
                return Some(if n.cmp_value(&zero) == Ordering::Less { Position::Below } else { Position::Above });
            };
            let Ok(r) = rounded.to_i64_rounded() else {
                return Some(if n.cmp_value(&zero) == Ordering::Less { Position::Below } else { Position::Above });
            };
            match rounded.cmp_value(n) {
                Ordering::Equal => integer_position(r as i128, true, t),
                Ordering::Greater => integer_position(r as i128 - 1, false, t),
                Ordering::Less => integer_position(r as i128, false, t),
            }
        }
        // An int4 is exact in float8, so the comparison is exact too.
        (Datum::Float8(f), DataType::Int4) => {
            if f.is_nan() || *f == f64::INFINITY {
                Some(Position::Above)
            } else if *f == f64::NEG_INFINITY {
                Some(Position::Below)
            } else {
                let floor = f.floor();
                if floor < i64::MIN as f64 || floor > i64::MAX as f64 {
                    return Some(if floor < 0.0 { Position::Below } else { Position::Above });
                }
                integer_position(floor as i128, floor == *f, t)
            }
        }
        _ => None,
    }
}

/// The condition `column op value` means on a column of type `t`.
fn comparison_condition(op: BinaryOp, value: &Datum, t: DataType) -> Option<Condition> {
    if value.is_null() {
        return match op {
            BinaryOp::Eq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq => Some(Condition::Empty),
            _ => None,
        };
    }
    let all = || Condition::Range { lower: None, upper: None };
    Some(match (position(value, t)?, op) {
        (Position::Exact(v), BinaryOp::Eq) => Condition::Eq(v),
        (Position::Exact(v), BinaryOp::Lt) => Condition::Range { lower: None, upper: Some((v, false)) },
        (Position::Exact(v), BinaryOp::LtEq) => Condition::Range { lower: None, upper: Some((v, true)) },
        (Position::Exact(v), BinaryOp::Gt) => Condition::Range { lower: Some((v, false)), upper: None },
        (Position::Exact(v), BinaryOp::GtEq) => Condition::Range { lower: Some((v, true)), upper: None },
        (Position::Below, BinaryOp::Eq | BinaryOp::Lt | BinaryOp::LtEq) => Condition::Empty,
        (Position::Below, BinaryOp::Gt | BinaryOp::GtEq) => all(),
        (Position::Above, BinaryOp::Eq | BinaryOp::Gt | BinaryOp::GtEq) => Condition::Empty,
        (Position::Above, BinaryOp::Lt | BinaryOp::LtEq) => all(),
        (Position::Between(..), BinaryOp::Eq) => Condition::Empty,
        (Position::Between(floor, _), BinaryOp::Lt | BinaryOp::LtEq) => Condition::Range { lower: None, upper: Some((floor, true)) },
        (Position::Between(_, ceil), BinaryOp::Gt | BinaryOp::GtEq) => Condition::Range { lower: Some((ceil, true)), upper: None },
        _ => return None,
    })
}

/// `conjunct` as a condition on a table column (`columns` maps the pipeline's row to
/// table columns, `types` are the table's column types).
fn condition(conjunct: &Expr, columns: &[usize], types: &[DataType]) -> Option<(usize, Condition)> {
    let table_column = |c: usize| columns.get(c).copied();
    match conjunct {
        // An IN list (`bind.rs` marks it with a one-argument COALESCE).
        Expr::Binary { op: BinaryOp::Or, .. } if in_list(conjunct).is_none() => {
            let (column, ranges) = or_of_ranges(conjunct, types, &table_column)?;
            Some((column, if ranges.is_empty() { Condition::Empty } else { Condition::Ranges(ranges) }))
        }
        Expr::Binary { op: BinaryOp::Or, .. } | Expr::Coalesce { .. } => {
            let (column, values) = in_list(conjunct)?;
            let column = table_column(column)?;
            let t = types[column];
            let mut kept = Vec::new();
            for v in values {
                if v.is_null() {
                    continue;
                }
                if let Position::Exact(v) = position(&v, t)? {
                    kept.push(v);
                }
            }
            Some((column, if kept.is_empty() { Condition::Empty } else { Condition::In(kept) }))
        }
        Expr::Binary { .. } => {
            // The column may be widened by a cast (`column_of`); `position` converts the
            // constant back exactly or gives up (an int8 compared as float8).
            if let Some((column, op, value)) = column_comparison(conjunct) {
                let column = table_column(column)?;
                return Some((column, comparison_condition(op, &value, types[column])?));
            }
            let (column, op, value) = column_param_comparison(conjunct)?;
            if !matches!(op, BinaryOp::Eq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq) {
                return None;
            }
            let column = table_column(column)?;
            // Other type pairs (an int4 key against a numeric or float8 value) cannot be
            // bounded exactly without knowing the value: left to the filter.
            let exact = match (value.data_type(), types[column]) {
                (v, t) if v == t => true,
                (DataType::Int4, DataType::Int8) | (DataType::Int8, DataType::Int4) => true,
                _ => false,
            };
            exact.then(|| (column, Condition::Param { op, value: value.clone() }))
        }
        Expr::IsNull { expr, negated } => match expr.as_ref() {
            Expr::Column { index, .. } => {
                let column = table_column(*index)?;
                Some((column, if *negated { Condition::Range { lower: None, upper: None } } else { Condition::Eq(Datum::Null) }))
            }
            _ => None,
        },
        Expr::Column { index, data_type: DataType::Bool } => Some((table_column(*index)?, Condition::Eq(Datum::Bool(true)))),
        Expr::Unary { op: UnaryOp::Not, expr, .. } => match expr.as_ref() {
            Expr::Column { index, data_type: DataType::Bool } => Some((table_column(*index)?, Condition::Eq(Datum::Bool(false)))),
            _ => None,
        },
        _ => None,
    }
}

type ValueRange = (Option<(Datum, bool)>, Option<(Datum, bool)>);

/// An OR whose every arm is an AND of comparisons of one column with constants (`(a >= 38
/// AND a <= 24) OR (a >= 24 AND a <= 38)`, BETWEEN SYMMETRIC): the column and the union
/// of the arms' ranges, disjoint and in increasing order (empty when no arm can hold).
fn or_of_ranges(conjunct: &Expr, types: &[DataType], table_column: &dyn Fn(usize) -> Option<usize>) -> Option<(usize, Vec<ValueRange>)> {
    let mut column = None;
    let mut ranges: Vec<ValueRange> = Vec::new();
    for arm in conjunct.disjuncts() {
        let (mut lower, mut upper): ValueRange = (None, None);
        let mut empty = false;
        for part in arm.conjuncts() {
            let (c, op, value) = column_comparison(part)?;
            let c = table_column(c)?;
            if *column.get_or_insert(c) != c {
                return None;
            }
            let (lo, hi) = match comparison_condition(op, &value, types[c])? {
                Condition::Eq(v) => (Some((v.clone(), true)), Some((v, true))),
                Condition::Range { lower, upper } => (lower, upper),
                Condition::Empty => {
                    empty = true;
                    continue;
                }
                _ => return None,
            };
            lower = tighter(lower, lo, Ordering::Greater);
            upper = tighter(upper, hi, Ordering::Less);
        }
        if let (Some((l, l_inclusive)), Some((u, u_inclusive))) = (&lower, &upper) {
            match compare_datums(l, u) {
                Ordering::Greater => empty = true,
                Ordering::Equal => empty |= !(*l_inclusive && *u_inclusive),
                Ordering::Less => {}
            }
        }
        if !empty {
            ranges.push((lower, upper));
        }
    }
    // In increasing order of lower bound (unbounded first, inclusive before exclusive),
    // overlapping or touching ranges merged: an index scan must not read an entry twice.
    ranges.sort_by(|a, b| match (&a.0, &b.0) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((x, xi)), Some((y, yi))) => compare_datums(x, y).then(yi.cmp(xi)),
    });
    let mut merged: Vec<ValueRange> = Vec::new();
    for (lower, upper) in ranges {
        if let Some(last) = merged.last_mut() {
            let meets = match (&last.1, &lower) {
                (None, _) | (_, None) => true,
                (Some((u, u_inclusive)), Some((l, l_inclusive))) => match compare_datums(l, u) {
                    Ordering::Less => true,
                    Ordering::Equal => *u_inclusive || *l_inclusive,
                    Ordering::Greater => false,
                },
            };
            if meets {
                last.1 = looser(last.1.take(), upper);
                continue;
            }
        }
        merged.push((lower, upper));
    }
    Some((column?, merged))
}

/// The tighter of two bounds of one side (`toward`: Greater for lower bounds, Less for
/// upper ones); `None` is no bound.
fn tighter(a: Option<(Datum, bool)>, b: Option<(Datum, bool)>, toward: Ordering) -> Option<(Datum, bool)> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => match compare_datums(&a.0, &b.0) {
            Ordering::Equal => Some((a.0, a.1 && b.1)),
            o if o == toward => Some(a),
            _ => Some(b),
        },
    }
}

/// The looser of two upper bounds (`None`: unbounded).
fn looser(a: Option<(Datum, bool)>, b: Option<(Datum, bool)>) -> Option<(Datum, bool)> {
    match (a, b) {
        (None, _) | (_, None) => None,
        (Some(a), Some(b)) => match compare_datums(&a.0, &b.0) {
            Ordering::Equal => Some((a.0, a.1 || b.1)),
            Ordering::Greater => Some(a),
            Ordering::Less => Some(b),
        },
    }
}

/// Sort `values` in the order of key column `k` of `desc`, without duplicates.
fn sort_in_index_order(desc: &BTreeDesc, k: usize, values: Vec<Datum>) -> Vec<Datum> {
    let column = desc.columns()[k];
    let layout = RowLayout::new(&[column.data_type]);
    let Ok(keys) = SortKeys::new(layout.clone(), &[SortColumn { column: 0, descending: column.descending, nulls_first: column.nulls_first }])
    else {
        return values;
    };
    let mut encoded: Vec<(Vec<u8>, Datum)> = values
        .into_iter()
        .filter_map(|v| {
            let mut out = Vec::new();
            layout.encode(std::slice::from_ref(&v), &mut out).ok().map(|_| (out, v))
        })
        .collect();
    encoded.sort_by(|a, b| keys.compare(&a.0, &b.0));
    encoded.dedup_by(|a, b| keys.compare(&a.0, &b.0) == Ordering::Equal);
    encoded.into_iter().map(|(_, v)| v).collect()
}

/// Key ranges an index scan reads for some conditions.
struct Ranges {
    ranges: Vec<Range>,
    /// Conjuncts implemented, in index column order.
    used: Vec<usize>,
    /// Equalities (or IN) on every column of a unique index: at most one row per range.
    unique_point: bool,
    /// Index columns fixed to a single value by an equality (for ORDER BY).
    fixed_columns: Vec<usize>,
    /// Conjuncts on other index columns, checked on each entry's keys before the heap is
    /// visited (PostgreSQL's non-boundary index quals), in index column order.
    key_checks: Vec<usize>,
    /// Ranges with parameters, made when the scan starts (`ranges` is then empty).
    param: Option<ParamRanges>,
}

impl Ranges {
    /// Index descents per scan.
    fn scans(&self) -> usize {
        self.param.as_ref().map_or(self.ranges.len(), |p| p.prefixes.len())
    }
}

/// Prefixes holding only constants as datums.
fn constant_prefixes(prefixes: Vec<Vec<KeyValue>>) -> Vec<Vec<Datum>> {
    let datum = |v: KeyValue| match v {
        KeyValue::Const(d) => d,
        // Not reached: prefixes with parameters become `ParamRanges`.
        KeyValue::Param(_) => Datum::Null,
    };
    prefixes.into_iter().map(|p| p.into_iter().map(datum).collect()).collect()
}

/// The ranges `conditions` allow on `index` (a full scan when none applies).
fn ranges_for(index: &IndexMeta, desc: &BTreeDesc, conditions: &[ColumnCondition]) -> Ranges {
    let mut prefixes: Vec<Vec<KeyValue>> = vec![Vec::new()];
    let mut has_param = false;
    let key_types: Vec<DataType> = desc.columns().iter().map(|c| c.data_type).collect();
    let mut used = Vec::new();
    let mut fixed_columns = Vec::new();
    let mut all_points = true;
    for (k, key) in index.columns.iter().enumerate() {
        let on: Vec<&ColumnCondition> = conditions.iter().filter(|c| c.column == key.column).collect();
        if let Some(c) = on.iter().find(|c| matches!(c.condition, Condition::Empty)) {
            used.push(c.conjunct);
            return Ranges { ranges: Vec::new(), used, unique_point: true, fixed_columns, key_checks: Vec::new(), param: None };
        }
        if let Some(c) = on.iter().find(|c| matches!(c.condition, Condition::Eq(_))) {
            let Condition::Eq(v) = &c.condition else { unreachable!() };
            all_points &= !v.is_null();
            prefixes.iter_mut().for_each(|p| p.push(KeyValue::Const(v.clone())));
            used.push(c.conjunct);
            fixed_columns.push(k);
            continue;
        }
        if let Some(c) = on.iter().find(|c| matches!(c.condition, Condition::Param { op: BinaryOp::Eq, .. })) {
            let Condition::Param { value, .. } = &c.condition else { unreachable!() };
            prefixes.iter_mut().for_each(|p| p.push(KeyValue::Param(value.clone())));
            has_param = true;
            used.push(c.conjunct);
            fixed_columns.push(k);
            continue;
        }
        if let Some(c) = on.iter().find(|c| matches!(&c.condition, Condition::In(v) if prefixes.len() * v.len() <= MAX_RANGES)) {
            let Condition::In(values) = &c.condition else { unreachable!() };
            let values = sort_in_index_order(desc, k, values.clone());
            prefixes = prefixes
                .iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut p = p.clone();
                        p.push(KeyValue::Const(v.clone()));
                        p
                    })
                })
                .collect();
            used.push(c.conjunct);
            continue;
        }
        all_points = false;
        // An OR of ranges: one range per arm and prefix, in index order.
        let or_ranges = on.iter().find(|c| matches!(&c.condition, Condition::Ranges(r) if prefixes.len() * r.len() <= MAX_RANGES));
        if let (Some(c), false) = (or_ranges, has_param) {
            let Condition::Ranges(arms) = &c.condition else { unreachable!() };
            used.push(c.conjunct);
            let mut arms = arms.clone();
            if key.descending {
                arms.reverse();
            }
            let ranges = constant_prefixes(prefixes)
                .iter()
                .flat_map(|prefix| {
                    arms.iter().map(move |(lower, upper)| {
                        // In index order, a descending column's upper value bound comes first.
                        let (first, last) = if key.descending { (upper, lower) } else { (lower, upper) };
                        prefix_range(prefix, first.as_ref(), last.as_ref(), key.nulls_first)
                    })
                })
                .collect();
            let key_checks = key_checks(index, conditions, &used);
            return Ranges { ranges, used, unique_point: false, fixed_columns, key_checks, param: None };
        }
        // A range on this column: the tightest bound on each side.
        let mut lower: Option<(Datum, bool)> = None;
        let mut upper: Option<(Datum, bool)> = None;
        let mut any = false;
        for c in &on {
            let Condition::Range { lower: lo, upper: hi } = &c.condition else { continue };
            any = true;
            used.push(c.conjunct);
            if let Some((v, inclusive)) = lo {
                let tighter = match &lower {
                    None => true,
                    Some((old, old_inclusive)) => match compare_datums(v, old) {
                        Ordering::Greater => true,
                        Ordering::Equal => *old_inclusive && !inclusive,
                        Ordering::Less => false,
                    },
                };
                if tighter {
                    lower = Some((v.clone(), *inclusive));
                }
            }
            if let Some((v, inclusive)) = hi {
                let tighter = match &upper {
                    None => true,
                    Some((old, old_inclusive)) => match compare_datums(v, old) {
                        Ordering::Less => true,
                        Ordering::Equal => *old_inclusive && !inclusive,
                        Ordering::Greater => false,
                    },
                };
                if tighter {
                    upper = Some((v.clone(), *inclusive));
                }
            }
        }
        let mut bounds: Vec<(BinaryOp, KeyValue)> = Vec::new();
        for c in &on {
            if let Condition::Param { op: op @ (BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq), value } = &c.condition {
                used.push(c.conjunct);
                bounds.push((*op, KeyValue::Param(value.clone())));
            }
        }
        if !any && bounds.is_empty() {
            break;
        }
        if has_param || !bounds.is_empty() {
            // The constant bounds join the parameters'; the executor takes the tightest.
            if let Some((v, inclusive)) = lower {
                bounds.push((if inclusive { BinaryOp::GtEq } else { BinaryOp::Gt }, KeyValue::Const(v)));
            }
            if let Some((v, inclusive)) = upper {
                bounds.push((if inclusive { BinaryOp::LtEq } else { BinaryOp::Lt }, KeyValue::Const(v)));
            }
            let param = ParamRanges { prefixes, bounds, key_types, bound_descending: key.descending, bound_nulls_first: key.nulls_first };
            let key_checks = key_checks(index, conditions, &used);
            return Ranges { ranges: Vec::new(), used, unique_point: false, fixed_columns, key_checks, param: Some(param) };
        }
        let prefixes = constant_prefixes(prefixes);
        // In index order, a descending column's upper value bound comes first.
        let (first, last) = if key.descending { (upper, lower) } else { (lower, upper) };
        let ranges = prefixes
            .iter()
            .map(|prefix| prefix_range(prefix, first.as_ref(), last.as_ref(), key.nulls_first))
            .collect();
        let key_checks = key_checks(index, conditions, &used);
        return Ranges { ranges, used, unique_point: false, fixed_columns, key_checks, param: None };
    }
    let unique_point = index.unique && all_points && used.len() >= index.columns.len() && !used.is_empty();
    let key_checks = key_checks(index, conditions, &used);
    if has_param {
        let param = ParamRanges { prefixes, bounds: Vec::new(), key_types, bound_descending: false, bound_nulls_first: false };
        return Ranges { ranges: Vec::new(), used, unique_point, fixed_columns, key_checks, param: Some(param) };
    }
    let ranges = if used.is_empty() {
        vec![(Bound::Unbounded, Bound::Unbounded)]
    } else {
        constant_prefixes(prefixes).into_iter().map(|p| (Bound::Included(p.clone()), Bound::Included(p))).collect()
    };
    Ranges { ranges, used, unique_point, fixed_columns, key_checks, param: None }
}

/// Conditions on `index`'s columns that the ranges do not implement, in column order.
fn key_checks(index: &IndexMeta, conditions: &[ColumnCondition], used: &[usize]) -> Vec<usize> {
    let mut checks: Vec<usize> = Vec::new();
    for key in &index.columns {
        for c in conditions.iter().filter(|c| c.column == key.column) {
            if !used.contains(&c.conjunct) && !checks.contains(&c.conjunct) {
                checks.push(c.conjunct);
            }
        }
    }
    checks
}

/// What a probe of the index found.
struct Probe {
    /// Entries counted; `complete` when the ranges held no more.
    entries: u64,
    complete: bool,
    /// Entries an index-only scan would check in the heap.
    flagged: u64,
    /// Heap page changes along the entries: to a far page, and to the next page.
    random_pages: u64,
    sequential_pages: u64,
}

fn probe(ctx: &PlanContext, index: &IndexMeta, desc: &BTreeDesc, ranges: &[Range], cap: u64) -> Option<Probe> {
    let tree = BTree::open(ctx.pool, index.locator(), desc);
    let mut p = Probe { entries: 0, complete: true, flagged: 0, random_pages: 0, sequential_pages: 0 };
    let mut last_block: Option<u32> = None;
    for (lower, upper) in ranges {
        let mut scan = tree.scan(lower.clone(), upper.clone(), ScanDirection::Forward).ok()?;
        while let Some(entry) = scan.next().ok()? {
            if p.entries >= cap {
                p.complete = false;
                return Some(p);
            }
            p.entries += 1;
            let word = desc.tid_word(entry);
            p.flagged += word.needs_heap_check() as u64;
            let block = word.tid().block;
            match last_block {
                Some(b) if b == block => {}
                Some(b) if block == b + 1 => p.sequential_pages += 1,
                _ => p.random_pages += 1,
            }
            last_block = Some(block);
        }
    }
    Some(p)
}

/// Everything the paths of one scan share.
struct Scan<'a> {
    ctx: &'a PlanContext<'a>,
    table: &'a TableMeta,
    heap: &'a HeapSource,
    rel: RelStats<'a>,
    conjuncts: Vec<Expr>,
    conditions: Vec<ColumnCondition>,
    tuples: f64,
    pages: f64,
}

/// What an index makes of the scan's conjuncts: for an expression index, the conjuncts
/// with its expressions (over the pipeline's columns) replaced by virtual columns past
/// the pipeline's, and the conditions on them (on index row positions past the table's
/// columns); for a partial index, the conjuncts its predicate repeats.
struct IndexView {
    conditions: Vec<ColumnCondition>,
    /// The conjuncts as the key checks see them (the expressions as virtual columns).
    rewritten: Vec<Expr>,
    /// Pipeline width: virtual column `width + k` is the index's expression k.
    width: usize,
    /// Conjuncts equal to a conjunct of the predicate: every entry satisfies them.
    implied: Vec<usize>,
}

/// One candidate index path.
struct IndexPath {
    index: IndexMeta,
    view: IndexView,
    desc: BTreeDesc,
    ranges: Ranges,
    index_only: bool,
    direction: ScanDirection,
    cost: IndexScanCost,
    /// Operators of the filter (the conjuncts not implemented), per row fetched.
    filter_ops: f64,
    /// Rows out after the filter.
    rows: f64,
}

impl IndexPath {
    fn total(&self) -> f64 {
        self.cost.total + self.cost.heap_rows * self.filter_ops * CPU_OPERATOR_COST
    }

    /// Cost of reading the first `fraction` of its rows.
    fn partial(&self, fraction: f64) -> f64 {
        self.cost.startup + (self.total() - self.cost.startup) * fraction.clamp(0.0, 1.0)
    }
}

impl<'a> Scan<'a> {
    fn new(ctx: &'a PlanContext<'a>, heap: &'a HeapSource, conjuncts: Vec<Expr>) -> Option<Scan<'a>> {
        let table = ctx.catalog.tables.get(&heap.table_name)?;
        let types = table.column_types();
        let conditions = conjuncts
            .iter()
            .enumerate()
            .filter_map(|(i, e)| condition(e, &heap.columns, &types).map(|(column, condition)| ColumnCondition { conjunct: i, column, condition }))
            .collect();
        let rel = RelStats::for_table(ctx.catalog, table, &heap.columns);
        let widths = cost::heap_column_widths(&types, table.row_count, heap.nblocks);
        let tuples = cost::heap_tuples(table.row_count, heap.nblocks, widths.iter().sum());
        Some(Scan { ctx, table, heap, rel, conjuncts, conditions, tuples, pages: heap.nblocks as f64 })
    }

    fn selectivity(&self, which: impl Fn(usize) -> bool) -> f64 {
        let clauses: Vec<&Expr> = self.conjuncts.iter().enumerate().filter(|(i, _)| which(*i)).map(|(_, e)| e).collect();
        selectivity::clauselist_selectivity(&clauses, &self.rel)
    }

    fn filter_ops(&self, which: impl Fn(usize) -> bool) -> f64 {
        self.conjuncts.iter().enumerate().filter(|(i, _)| which(*i)).map(|(_, e)| cost::operator_count(e)).sum()
    }

    /// Output rows of the scan with every conjunct applied.
    fn rows(&self) -> f64 {
        cost::clamp_rows(self.tuples * self.selectivity(|_| true))
    }

    /// The sequential scan's total cost (parallel when the pipeline would be).
    fn seq_cost(&self, workers: usize) -> f64 {
        let disabled = if self.ctx.settings.boolean("enable_seqscan") { 0.0 } else { DISABLE_COST };
        let leader = self.ctx.settings.boolean("parallel_leader_participation");
        cost::seq_scan_cost(self.pages, self.tuples, self.filter_ops(|_| true), self.rows(), workers, leader) + disabled
    }

    /// The path through `index`, if it is worth considering: it has conditions, it
    /// answers the query alone, or `ordered` (its order is wanted). `beat` is the cost it
    /// must come under (the probe stops where it cannot).
    /// The index's view of the conjuncts; None when the index cannot serve the scan (a
    /// predicate the WHERE does not imply, an expression that does not bind).
    fn index_view(&self, index: &IndexMeta) -> Option<IndexView> {
        let width = self.heap.columns.len();
        let mut view = IndexView { conditions: self.conditions.clone(), rewritten: self.conjuncts.clone(), width, implied: Vec::new() };
        if index.is_plain() {
            return Some(view);
        }
        let bound = crate::index_expr::bind_index(self.table, index).ok()?;
        let ncols = self.table.columns.len();
        if !bound.expressions.is_empty() {
            let expressions: Vec<Expr> = bound.expressions.iter().map(|e| to_pipeline(e, self.table, &self.heap.columns)).collect();
            let mut columns = self.heap.columns.clone();
            columns.extend((0..expressions.len()).map(|k| ncols + k));
            let mut types = self.table.column_types();
            types.extend(index.expressions.iter().map(|e| e.data_type));
            for (i, conjunct) in self.conjuncts.iter().enumerate() {
                let rewritten = replace_expressions(conjunct, &expressions, width);
                if &rewritten == conjunct {
                    continue;
                }
                if let Some((column, condition)) = condition(&rewritten, &columns, &types) {
                    view.conditions.push(ColumnCondition { conjunct: i, column, condition });
                }
                view.rewritten[i] = rewritten;
            }
        }
        if let Some(predicate) = &bound.predicate {
            let predicate = to_pipeline(predicate, self.table, &self.heap.columns);
            let types = self.table.column_types();
            for part in predicate.conjuncts() {
                if let Some(i) = self.conjuncts.iter().position(|c| c == part) {
                    view.implied.push(i);
                    continue;
                }
                if !self.implies(part, &types) {
                    return None;
                }
            }
        }
        Some(view)
    }

    /// Does some conjunct of the scan imply `part` (a conjunct of an index's predicate
    /// over the pipeline's columns)? `x IS NOT NULL` by any strict condition on x; a
    /// comparison on x by a condition on x whose values all satisfy it.
    fn implies(&self, part: &Expr, types: &[DataType]) -> bool {
        let Some((column, wanted)) = condition(part, &self.heap.columns, types) else { return false };
        self.conditions.iter().filter(|c| c.column == column).any(|c| condition_within(&c.condition, &wanted))
    }

    fn index_path(&self, index: &IndexMeta, direction: ScanDirection, ordered: bool, beat: f64) -> Option<IndexPath> {
        let desc = btree_desc(self.table, index).ok()?;
        let view = self.index_view(index)?;
        let ranges = ranges_for(index, &desc, &view.conditions);
        let settings = self.ctx.settings;
        let covers = self.heap.columns.iter().all(|c| index.columns.iter().any(|k| k.column == *c) || index.include.contains(c));
        // After a DELETE or UPDATE, entries of the build may point to dead rows: every
        // entry would need the heap, so there is no index-only scan.
        let index_only = covers && !self.table.has_dead_rows && settings.boolean("enable_indexonlyscan");
        if ranges.used.is_empty() && ranges.key_checks.is_empty() && !index_only && !ordered {
            return None;
        }
        let disabled = if settings.boolean("enable_indexscan") { 0.0 } else { DISABLE_COST };
        let used = ranges.used.clone();
        let is_used = |i: usize| used.contains(&i);
        let is_key_check = |i: usize| ranges.key_checks.contains(&i);
        let in_index = |i: usize| is_used(i) || is_key_check(i) || view.implied.contains(&i);
        let index_pages = self.ctx.pool.nblocks(index.locator(), ForkNumber::Main).ok()? as f64;
        let filter_ops = self.filter_ops(|i| !in_index(i));
        let remaining_sel = self.selectivity(|i| !in_index(i));
        let key_check_sel = self.selectivity(is_key_check);
        let stats = self.rel.stats;
        let mut input = IndexScanInput {
            tuples: self.tuples,
            heap_pages: self.pages,
            index_pages,
            index_tuples: self.tuples,
            entries: 0.0,
            scans: ranges.scans() as f64,
            index_quals: used.len() + ranges.key_checks.len(),
            key_check_selectivity: key_check_sel,
            correlation: 0.0,
            index_only_heap_frac: None,
            counted_heap_pages: None,
        };
        let leading = index.columns.first().map(|k| k.column);
        if let Some(correlation) = leading.and_then(|c| self.rel.table_column_stats(c)).and_then(|s| s.correlation) {
            input.correlation = if index.columns.len() > 1 { correlation * 0.75 } else { correlation };
        }
        let heap_frac = stats.and_then(|s| s.indexes.get(&index.name)).map_or(0.0, |i| i.heap_check_frac);
        if index_only {
            input.index_only_heap_frac = Some(heap_frac);
        }
        if ranges.used.is_empty() {
            input.entries = self.tuples;
        } else if stats.is_some() || ranges.param.is_some() {
            // Ranges with parameters cannot be probed: estimated like PostgreSQL's
            // (`var_eq_non_const`: one of the column's distinct values per equality).
            let mut entries = self.tuples * self.selectivity(is_used);
            if ranges.unique_point {
                entries = entries.min(ranges.scans() as f64);
            }
            input.entries = entries.max(if ranges.scans() == 0 { 0.0 } else { 1.0 });
        } else {
            // No statistics: count the entries (a cheap path is cheap to count).
            let per_entry = cost::CPU_INDEX_TUPLE_COST + cost::CPU_TUPLE_COST;
            let most = PROBE_ENTRIES.max((self.tuples * PROBE_FRACTION) as u64);
            let cap = ((beat / per_entry).ceil().max(0.0) as u64).saturating_add(1).min(most);
            let p = probe(self.ctx, index, &desc, &ranges.ranges, cap)?;
            if p.complete {
                input.entries = p.entries as f64;
                input.counted_heap_pages = Some((p.random_pages as f64, p.sequential_pages as f64));
                if index_only {
                    input.index_only_heap_frac = Some(if p.entries == 0 { 0.0 } else { p.flagged as f64 / p.entries as f64 });
                }
            } else {
                input.entries = (self.tuples * self.selectivity(is_used)).max(p.entries as f64);
                if index_only && p.entries > 0 {
                    input.index_only_heap_frac = Some(p.flagged as f64 / p.entries as f64);
                }
            }
        }
        let mut cost = cost::index_scan_cost(&input);
        cost.startup += disabled;
        cost.total += disabled;
        let rows = cost::clamp_rows(input.entries * key_check_sel * remaining_sel);
        Some(IndexPath { index: index.clone(), view, desc, ranges, index_only, direction, cost, filter_ops, rows })
    }

    /// The cheapest index path in no particular order.
    fn best_index_path(&self, beat: f64) -> Option<IndexPath> {
        let mut best: Option<IndexPath> = None;
        for index in self.ctx.catalog.indexes_of(&self.table.name) {
            let bar = best.as_ref().map_or(beat, |b| b.total().min(beat));
            if let Some(path) = self.index_path(index, ScanDirection::Forward, false, bar) {
                if best.as_ref().is_none_or(|b| path.total() < b.total()) {
                    best = Some(path);
                }
            }
        }
        best
    }

    /// The source and filter of `path`.
    fn apply(self, path: IndexPath) -> (Source, Option<Expr>) {
        let mut remaining = Vec::new();
        let mut implemented = vec![None; self.conjuncts.len()];
        for (i, part) in self.conjuncts.into_iter().enumerate() {
            if path.ranges.used.contains(&i) || path.ranges.key_checks.contains(&i) {
                implemented[i] = Some(part);
            } else if path.view.implied.contains(&i) {
                // The predicate of a partial index: every entry's row satisfies it.
            } else {
                remaining.push(part);
            }
        }
        let and = |a: Expr, b: Expr| Expr::Binary { op: BinaryOp::And, left: Box::new(a), right: Box::new(b), data_type: DataType::Bool };
        // The key checks over the entry's keys: pipeline column → table column → key.
        // Virtual column `width + k` (expression k) is index row position `ncols + k`.
        let ncols = self.table.columns.len();
        let virtual_columns = (0..path.index.expressions.len()).map(|k| (path.view.width + k, ncols + k));
        let key_map: std::collections::BTreeMap<usize, usize> = self
            .heap
            .columns
            .iter()
            .copied()
            .enumerate()
            .chain(virtual_columns)
            .filter_map(|(p, c)| path.index.columns.iter().position(|k| k.column == c).map(|k| (p, k)))
            .collect();
        let key_filter = path
            .ranges
            .key_checks
            .iter()
            .filter(|&&i| implemented[i].is_some())
            .map(|&i| path.view.rewritten[i].clone())
            .map(|mut e| {
                crate::exprutil::remap_columns(&mut e, &key_map);
                e
            })
            .reduce(and);
        // Index Cond in index column order: the ranges' conditions, then the key checks.
        let conditions =
            path.ranges.used.iter().chain(&path.ranges.key_checks).filter_map(|&i| implemented[i].take()).collect();
        let filter = remaining.into_iter().reduce(and);
        let source = Source::Index(Box::new(IndexSource {
            heap: self.heap.clone(),
            index_name: path.index.name.clone(),
            index_rel: path.index.locator(),
            desc: path.desc,
            key_columns: path.index.columns.iter().map(|c| c.column).chain(path.index.include.iter().copied()).collect(),
            ranges: path.ranges.ranges,
            param_ranges: path.ranges.param,
            direction: path.direction,
            index_only: path.index_only,
            conditions,
            key_filter,
            estimated_rows: path.cost.heap_rows,
            estimated_startup_cost: path.cost.startup,
            estimated_total_cost: path.cost.total,
        }));
        (source, filter)
    }
}

fn split_conjuncts(filter: Option<&Expr>) -> Vec<Expr> {
    filter.map(|f| f.conjuncts().into_iter().cloned().collect()).unwrap_or_default()
}

/// Replace a heap source by an index scan when one of the table's indexes is cheaper;
/// the conjuncts it implements leave `filter`.
pub(crate) fn choose_index_scan(source: &mut Source, filter: &mut Option<Expr>, ctx: &PlanContext) {
    let Source::Heap(heap) = source else { return };
    if ctx.catalog.indexes_of(&heap.table_name).next().is_none() {
        return;
    }
    let heap = heap.clone();
    let Some(scan) = Scan::new(ctx, &heap, split_conjuncts(filter.as_ref())) else { return };
    let workers = choose_workers(&Source::Heap(heap.clone()), ctx);
    let seq = scan.seq_cost(workers).min(scan.seq_cost(0));
    let Some(path) = scan.best_index_path(seq) else { return };
    if path.total() >= seq {
        return;
    }
    let (new_source, new_filter) = scan.apply(path);
    *source = new_source;
    *filter = new_filter;
}

/// The direction in which `index` yields `sort_columns` (table column, descending,
/// nulls first), skipping index columns fixed by equalities: its order, or every key
/// exactly reversed.
fn index_order(index: &IndexMeta, sort_columns: &[(usize, bool, bool)], fixed: &[usize]) -> Option<ScanDirection> {
    if sort_columns.is_empty() {
        return None;
    }
    let mut direction: Option<ScanDirection> = None;
    let mut keys = sort_columns.iter().peekable();
    for (k, key) in index.columns.iter().enumerate() {
        let Some(&&(column, descending, nulls_first)) = keys.peek() else { break };
        if column == key.column {
            let here = if descending == key.descending && nulls_first == key.nulls_first {
                ScanDirection::Forward
            } else if descending != key.descending && nulls_first != key.nulls_first {
                ScanDirection::Backward
            } else {
                return None;
            };
            if direction.is_some_and(|d| d != here) {
                return None;
            }
            direction = Some(here);
            keys.next();
        } else if !fixed.contains(&k) {
            return None;
        }
    }
    if keys.peek().is_some() {
        return None;
    }
    direction
}

/// Replace a sort by an index scan in the sort's order when that is cheaper (see the
/// module comment); `bound` is LIMIT + OFFSET when there is one.
pub(crate) fn use_index_order(plan: Plan, bound: Option<u64>, ctx: &PlanContext) -> Plan {
    let Plan::Sort(sort) = plan else { return plan };
    let SortPlan { input, keys, types, bound: sort_bound, output_width, read_outputs } = sort;
    let rebuild = |input: Box<Plan>| Plan::Sort(SortPlan { input, keys: keys.clone(), types: types.clone(), bound: sort_bound, output_width, read_outputs: read_outputs.clone() });
    let Plan::Pipeline(mut pipeline) = *input else { return rebuild(input) };
    // The steps must be an optional filter, then projections.
    let (filter, projections) = match pipeline.steps.split_first() {
        Some((Step::Filter(f), rest)) => (Some(f.clone()), rest),
        _ => (None, &pipeline.steps[..]),
    };
    if projections.is_empty() || projections.iter().any(|s| !matches!(s, Step::Project(_))) {
        return rebuild(Box::new(Plan::Pipeline(pipeline)));
    }
    let (heap, mut conjuncts, current) = match &pipeline.source {
        Source::Heap(h) => (h.clone(), split_conjuncts(filter.as_ref()), None),
        Source::Index(i) => {
            let mut all = i.conditions.clone();
            all.extend(split_conjuncts(filter.as_ref()));
            (i.heap.clone(), all, Some(i.as_ref().clone()))
        }
        _ => return rebuild(Box::new(Plan::Pipeline(pipeline))),
    };
    // Each sort key must be a table column through the projections, or (through the
    // first projection) an expression over the pipeline's columns an index may hold.
    let mut sort_keys: Vec<(Expr, bool, bool)> = Vec::with_capacity(keys.len());
    for key in &keys {
        let mut column = Some(key.column);
        let mut expr = None;
        for (depth, step) in projections.iter().enumerate().rev() {
            let Step::Project(exprs) = step else { unreachable!() };
            column = match column.and_then(|c| exprs.get(c)) {
                Some(Expr::Column { index, .. }) => Some(*index),
                Some(e) if depth == 0 && !crate::exprutil::is_volatile(e) => {
                    expr = Some(e.clone());
                    None
                }
                _ => None,
            };
        }
        let expr = match (column, expr) {
            (Some(c), _) if c < heap.columns.len() => {
                Expr::Column { index: c, data_type: DataType::Bool }
            }
            (None, Some(e)) => e,
            _ => return rebuild(Box::new(Plan::Pipeline(pipeline))),
        };
        sort_keys.push((expr, key.descending, key.nulls_first));
    }
    if ctx.catalog.indexes_of(&heap.table_name).next().is_none() {
        return rebuild(Box::new(Plan::Pipeline(pipeline)));
    }
    // Conjunct order as the WHERE had it is lost once split; the filter keeps the order
    // in which it was written after the index conditions.
    let Some(scan) = Scan::new(ctx, &heap, std::mem::take(&mut conjuncts)) else {
        return rebuild(Box::new(Plan::Pipeline(pipeline)));
    };
    // The current input and its sort.
    let rows = scan.rows();
    let input_cost = match &current {
        Some(index) => index.estimated_total_cost + index.estimated_rows * filter.as_ref().map_or(0.0, cost::operator_count) * CPU_OPERATOR_COST,
        None => scan.seq_cost(pipeline.workers),
    };
    let width: f64 = types.iter().map(|t| cost::type_width(*t)).sum();
    let estimate = Estimate { startup: 0.0, total: input_cost, rows, width };
    let (sort_startup, sort_total) =
        cost::sort_cost(&estimate, rows, width, bound.map(|b| b as f64), ctx.settings.memory_bytes("work_mem"));
    let sorted = if bound.is_some() { sort_startup } else { sort_total };
    let fraction = bound.map_or(1.0, |b| b as f64 / rows.max(1.0));
    let mut best: Option<(f64, IndexPath)> = None;
    for index in ctx.catalog.indexes_of(&heap.table_name) {
        let Ok(desc) = btree_desc(scan.table, index) else { continue };
        let Some(sort_columns) = index_sort_columns(&scan, index, &sort_keys) else { continue };
        let Some(view) = scan.index_view(index) else { continue };
        let fixed = ranges_for(index, &desc, &view.conditions).fixed_columns;
        let Some(direction) = index_order(index, &sort_columns, &fixed) else { continue };
        let bar = best.as_ref().map_or(sorted, |b| b.0.min(sorted));
        // The probe's cap: what the whole path may cost for its first rows to beat `bar`.
        let beat = if fraction < 1.0 { bar / fraction.max(1e-9) } else { bar };
        let Some(path) = scan.index_path(index, direction, true, beat) else { continue };
        let effective = path.partial(bound.map_or(1.0, |b| b as f64 / path.rows.max(1.0)));
        if best.as_ref().is_none_or(|b| effective < b.0) {
            best = Some((effective, path));
        }
    }
    let Some((effective, path)) = best else { return rebuild(Box::new(Plan::Pipeline(pipeline))) };
    if effective >= sorted {
        return rebuild(Box::new(Plan::Pipeline(pipeline)));
    }
    let (source, filter) = scan.apply(path);
    pipeline.source = source;
    pipeline.steps.retain(|s| !matches!(s, Step::Filter(_)));
    if let Some(f) = filter {
        pipeline.steps.insert(0, Step::Filter(f));
    }
    pipeline.workers = 0;
    // The sort's hidden columns (ORDER BY expressions not selected) are cut by a projection.
    if output_width < types.len() {
        if let Some(Step::Project(exprs)) = pipeline.steps.last_mut() {
            exprs.truncate(output_width);
        }
    }
    Plan::Pipeline(pipeline)
}

/// The sort keys as index row positions of `index` (table columns, and `ncols + k` for
/// its expression k); None when a key is neither.
fn index_sort_columns(scan: &Scan, index: &IndexMeta, sort_keys: &[(Expr, bool, bool)]) -> Option<Vec<(usize, bool, bool)>> {
    let ncols = scan.table.columns.len();
    let expressions: Vec<Expr> = if index.expressions.is_empty() {
        Vec::new()
    } else {
        let bound = crate::index_expr::bind_index(scan.table, index).ok()?;
        bound.expressions.iter().map(|e| to_pipeline(e, scan.table, &scan.heap.columns)).collect()
    };
    sort_keys
        .iter()
        .map(|(expr, descending, nulls_first)| {
            let column = match expr {
                Expr::Column { index, .. } => *scan.heap.columns.get(*index)?,
                e => ncols + expressions.iter().position(|x| x == e)?,
            };
            Some((column, *descending, *nulls_first))
        })
        .collect()
}

/// An expression over the table's columns moved onto the pipeline's (`columns` maps
/// pipeline columns to table columns); a table column the pipeline does not read becomes
/// a column no conjunct has, so the expression matches nothing.
fn to_pipeline(expr: &Expr, table: &TableMeta, columns: &[usize]) -> Expr {
    let values: Vec<Expr> = table
        .columns
        .iter()
        .enumerate()
        .map(|(c, meta)| Expr::Column { index: columns.iter().position(|&x| x == c).unwrap_or(usize::MAX), data_type: meta.data_type })
        .collect();
    crate::exprutil::substitute_columns(expr, &values)
}

/// `expr` with each occurrence of `targets[k]` replaced by column `base + k`.
fn replace_expressions(expr: &Expr, targets: &[Expr], base: usize) -> Expr {
    if let Some(k) = targets.iter().position(|t| t == expr) {
        return Expr::Column { index: base + k, data_type: expr.data_type() };
    }
    let recurse = |e: &Expr| Box::new(replace_expressions(e, targets, base));
    let all = |args: &[Expr]| args.iter().map(|a| replace_expressions(a, targets, base)).collect::<Vec<_>>();
    match expr {
        Expr::Column { .. } | Expr::Literal { .. } | Expr::ScalarSubquery(_) | Expr::Param { .. } | Expr::SubPlan { .. } => expr.clone(),
        Expr::Cast { expr, to } => Expr::Cast { expr: recurse(expr), to: *to },
        Expr::ApplyModifier { expr, modifier, coercion } => Expr::ApplyModifier { expr: recurse(expr), modifier: *modifier, coercion: *coercion },
        Expr::Unary { op, expr, data_type } => Expr::Unary { op: *op, expr: recurse(expr), data_type: *data_type },
        Expr::IsNull { expr, negated } => Expr::IsNull { expr: recurse(expr), negated: *negated },
        Expr::Binary { op, left, right, data_type } => Expr::Binary { op: *op, left: recurse(left), right: recurse(right), data_type: *data_type },
        Expr::Case { whens, otherwise, data_type } => Expr::Case {
            whens: whens.iter().map(|(c, r)| (replace_expressions(c, targets, base), replace_expressions(r, targets, base))).collect(),
            otherwise: otherwise.as_ref().map(|o| recurse(o)),
            data_type: *data_type,
        },
        Expr::Coalesce { args, data_type } => Expr::Coalesce { args: all(args), data_type: *data_type },
        Expr::Function { func, args, data_type } => Expr::Function { func: *func, args: all(args), data_type: *data_type },
    }
}

/// Are all values `inner` allows (non-NULL: every condition but IS NULL rejects NULLs)
/// allowed by `outer` too?
fn condition_within(inner: &Condition, outer: &Condition) -> bool {
    let is_null = |c: &Condition| matches!(c, Condition::Eq(Datum::Null));
    if matches!(inner, Condition::Param { .. }) || matches!(outer, Condition::Param { .. }) {
        return false;
    }
    if matches!(inner, Condition::Empty) {
        return true;
    }
    if is_null(inner) || is_null(outer) {
        return is_null(inner) && is_null(outer);
    }
    let (lower, upper) = match outer {
        Condition::Range { lower, upper } => (lower.clone(), upper.clone()),
        Condition::Eq(v) => (Some((v.clone(), true)), Some((v.clone(), true))),
        Condition::In(values) => {
            return match inner {
                Condition::Eq(v) => values.iter().any(|x| compare_datums(x, v) == Ordering::Equal),
                Condition::In(vs) => vs.iter().all(|v| values.iter().any(|x| compare_datums(x, v) == Ordering::Equal)),
                _ => false,
            }
        }
        Condition::Empty | Condition::Param { .. } | Condition::Ranges(_) => return false,
    };
    let above = |v: &Datum, inclusive: bool| match &lower {
        None => true,
        Some((l, l_inclusive)) => match compare_datums(v, l) {
            Ordering::Greater => true,
            Ordering::Equal => *l_inclusive || !inclusive,
            Ordering::Less => false,
        },
    };
    let below = |v: &Datum, inclusive: bool| match &upper {
        None => true,
        Some((u, u_inclusive)) => match compare_datums(v, u) {
            Ordering::Less => true,
            Ordering::Equal => *u_inclusive || !inclusive,
            Ordering::Greater => false,
        },
    };
    match inner {
        Condition::Eq(v) => above(v, true) && below(v, true),
        Condition::In(vs) => vs.iter().all(|v| above(v, true) && below(v, true)),
        Condition::Range { lower: il, upper: iu } => {
            let low_ok = match il {
                Some((v, inclusive)) => above(v, *inclusive),
                None => lower.is_none(),
            };
            let high_ok = match iu {
                Some((v, inclusive)) => below(v, *inclusive),
                None => upper.is_none(),
            };
            low_ok && high_ok
        }
        Condition::Empty => true,
        Condition::Param { .. } | Condition::Ranges(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(op: BinaryOp, v: Datum, t: DataType) -> String {
        format!("{:?}", comparison_condition(op, &v, t))
    }

    #[test]
    fn cross_type_bounds_are_exact() {
        let n = |s: &str| Datum::Numeric(Numeric::parse(s).unwrap());
        assert_eq!(cond(BinaryOp::Lt, n("2.5"), DataType::Int4), format!("{:?}", Some(Condition::Range { lower: None, upper: Some((Datum::Int4(2), true)) })));
        assert_eq!(cond(BinaryOp::Gt, n("-2.5"), DataType::Int4), format!("{:?}", Some(Condition::Range { lower: Some((Datum::Int4(-2), true)), upper: None })));
        assert_eq!(cond(BinaryOp::Eq, n("2.5"), DataType::Int4), format!("{:?}", Some(Condition::Empty)));
        assert_eq!(cond(BinaryOp::Eq, n("3.000"), DataType::Int4), format!("{:?}", Some(Condition::Eq(Datum::Int4(3)))));
        assert_eq!(cond(BinaryOp::Gt, Datum::Int8(5_000_000_000), DataType::Int4), format!("{:?}", Some(Condition::Empty)));
        assert_eq!(
            cond(BinaryOp::Lt, Datum::Int8(5_000_000_000), DataType::Int4),
            format!("{:?}", Some(Condition::Range { lower: None, upper: None }))
        );
        assert_eq!(cond(BinaryOp::GtEq, Datum::Int8(-5_000_000_000), DataType::Int4), format!("{:?}", Some(Condition::Range { lower: None, upper: None })));
        assert_eq!(cond(BinaryOp::Lt, Datum::Float8(f64::NAN), DataType::Int4), format!("{:?}", Some(Condition::Range { lower: None, upper: None })));
        assert_eq!(cond(BinaryOp::LtEq, Datum::Float8(-0.5), DataType::Int4), format!("{:?}", Some(Condition::Range { lower: None, upper: Some((Datum::Int4(-1), true)) })));
        assert_eq!(cond(BinaryOp::Eq, Datum::Null, DataType::Int4), format!("{:?}", Some(Condition::Empty)));
        assert_eq!(cond(BinaryOp::Eq, Datum::Int4(7), DataType::Int8), format!("{:?}", Some(Condition::Eq(Datum::Int8(7)))));
        // An int8 compared as float8 is not converted.
        assert_eq!(cond(BinaryOp::Eq, Datum::Float8(1.0), DataType::Int8), "None");
        assert_eq!(cond(BinaryOp::NotEq, Datum::Int4(1), DataType::Int4), "None");
    }

    #[test]
    fn parameters_are_conditions_of_exact_types() {
        let col = |t| Expr::Column { index: 0, data_type: t };
        let param = |t| Expr::Param { index: 0, data_type: t };
        let cmp = |op, l: Expr, r: Expr| Expr::Binary { op, left: Box::new(l), right: Box::new(r), data_type: DataType::Bool };
        let widened = Expr::Cast { expr: Box::new(col(DataType::Int4)), to: DataType::Int8 };
        let is_param = |e: &Expr, t: DataType| matches!(condition(e, &[0], &[t]), Some((0, Condition::Param { .. })));
        assert!(is_param(&cmp(BinaryOp::Eq, col(DataType::Int4), param(DataType::Int4)), DataType::Int4));
        assert!(is_param(&cmp(BinaryOp::Lt, widened, param(DataType::Int8)), DataType::Int4));
        assert!(is_param(&cmp(BinaryOp::GtEq, param(DataType::Text), col(DataType::Text)), DataType::Text));
        // An int4 column compared as float8 is not bounded exactly; `<>` bounds nothing;
        // a value reading the scan's own columns is no parameter.
        let as_float = Expr::Cast { expr: Box::new(col(DataType::Int4)), to: DataType::Float8 };
        assert!(condition(&cmp(BinaryOp::Eq, as_float, param(DataType::Float8)), &[0], &[DataType::Int4]).is_none());
        assert!(condition(&cmp(BinaryOp::NotEq, col(DataType::Int4), param(DataType::Int4)), &[0], &[DataType::Int4]).is_none());
        let mixed = Expr::Binary { op: BinaryOp::Add, left: Box::new(param(DataType::Int4)), right: Box::new(col(DataType::Int4)), data_type: DataType::Int4 };
        assert!(condition(&cmp(BinaryOp::Eq, col(DataType::Int4), mixed), &[0], &[DataType::Int4]).is_none());
    }

    #[test]
    fn order_skips_columns_fixed_by_equalities() {
        use weft_access::catalog::IndexColumnMeta;
        let index = IndexMeta {
            oid: 1,
            name: "i".into(),
            table: "t".into(),
            columns: vec![
                IndexColumnMeta { column: 0, descending: false, nulls_first: false, opclass: None },
                IndexColumnMeta { column: 1, descending: true, nulls_first: true, opclass: None },
            ],
            unique: false,
            fillfactor: 90,
            parallel_workers: None,
            rel_number: 1,
            constraint: None,
            expressions: Vec::new(),
            predicate: None,
            predicate_display: None,
            include: Vec::new(),
            clustered: false,
        };
        assert_eq!(index_order(&index, &[(0, false, false)], &[]), Some(ScanDirection::Forward));
        assert_eq!(index_order(&index, &[(0, true, true), (1, false, false)], &[]), Some(ScanDirection::Backward));
        assert_eq!(index_order(&index, &[(0, true, true), (1, true, true)], &[]), None);
        assert_eq!(index_order(&index, &[(1, true, true)], &[]), None);
        assert_eq!(index_order(&index, &[(1, true, true)], &[0]), Some(ScanDirection::Forward));
        assert_eq!(index_order(&index, &[(1, false, false)], &[0]), Some(ScanDirection::Backward));
        assert_eq!(index_order(&index, &[(0, false, true)], &[]), None);
    }
}
