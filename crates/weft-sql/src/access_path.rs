//! Choosing between a sequential scan and the table's B-tree indexes.
//!
//! Usable conditions: WHERE conjuncts `column op constant` (either side; `=`, `<`, `<=`,
//! `>`, `>=`; BETWEEN binds to two of them) and IN lists (an OR of equalities on one
//! column) on the index's leading columns: equalities on a prefix, then an IN list or a
//! range on the next column. They become key ranges in index order, exact — NULLs are
//! excluded by a bound just before (or after) the NULLs — so the conjuncts they implement
//! leave the filter and show as `Index Cond:`.
//!
//! Rows are estimated by counting the entries of the ranges in the index itself, up to
//! the count at which the index can no longer win (so a plan reads at most that many
//! entries): exact for selective conditions, which are the ones that matter.
//! Costs follow PostgreSQL's constants: a sequential scan costs `seq_page_cost` per page
//! and `cpu_tuple_cost` per row; an index scan `random_page_cost` per row fetched from the
//! heap (none for entries an index-only scan answers) and `cpu_index_tuple_cost` per entry.
//!
//! ORDER BY on an index's leading columns (in its order or exactly reversed) is answered
//! by the scan when the WHERE already chose that index, or with a LIMIT small next to the
//! table: the sort disappears.

use std::cmp::Ordering;
use std::ops::Bound;

use weft_access::btree::{BTree, BTreeDesc, ScanDirection};
use weft_access::catalog::IndexMeta;
use weft_access::index_build::btree_desc;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum};
use weft_exec::expr::{BinaryOp, Expr};
use weft_exec::plan::{HeapSource, IndexSource, Plan, SortPlan, Source, Step};
use weft_sort::{SortColumn, SortKeys};

use crate::cost::{CPU_INDEX_TUPLE_COST, CPU_TUPLE_COST, DISABLE_COST, RANDOM_PAGE_COST, SEQ_PAGE_COST};
use crate::planner::PlanContext;


/// One conjunct as a condition on a table column.
#[derive(Clone, Debug)]
enum Condition {
    Compare { column: usize, op: BinaryOp, value: Datum },
    In { column: usize, values: Vec<Datum> },
}

impl Condition {
    fn column(&self) -> usize {
        match self {
            Condition::Compare { column, .. } | Condition::In { column, .. } => *column,
        }
    }
}

fn flip(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        other => other,
    }
}

/// `value` as a key of type `to`, when that is exact.
fn key_value(value: &Datum, to: DataType) -> Option<Datum> {
    Some(match (value, to) {
        (Datum::Null, _) => return None,
        (Datum::Int4(v), DataType::Int8) => Datum::Int8(*v as i64),
        (Datum::Int8(v), DataType::Int4) => Datum::Int4(i32::try_from(*v).ok()?),
        (Datum::Int4(v), DataType::Float8) => Datum::Float8(*v as f64),
        (v, to) if v.data_type() == Some(to) => v.clone(),
        _ => return None,
    })
}

/// A constant, possibly widened by the binder (`bigint_column = 5`); `key_value` then
/// accepts only exact conversions to the key's type.
fn constant_value(e: &Expr) -> Option<&Datum> {
    match e {
        Expr::Literal { value, .. } => Some(value),
        Expr::Cast { expr, .. } => match expr.as_ref() {
            Expr::Literal { value, .. } => Some(value),
            _ => None,
        },
        _ => None,
    }
}

/// `conjunct` as a condition on a table column (`columns` maps the pipeline's row to
/// table columns).
fn condition(conjunct: &Expr, columns: &[usize], types: &[DataType]) -> Option<Condition> {
    match conjunct {
        Expr::Binary { op: op @ (BinaryOp::Eq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq), left, right, .. } => {
            let (column, literal, op) = match (left.as_ref(), right.as_ref()) {
                (Expr::Column { index, .. }, constant) => (*index, constant_value(constant)?, *op),
                (constant, Expr::Column { index, .. }) => (*index, constant_value(constant)?, flip(*op)),
                _ => return None,
            };
            let column = *columns.get(column)?;
            Some(Condition::Compare { column, op, value: key_value(literal, types[column])? })
        }
        Expr::Binary { op: BinaryOp::Or, .. } => {
            let mut values = Vec::new();
            let mut column = None;
            let mut stack = vec![conjunct];
            while let Some(e) = stack.pop() {
                match e {
                    Expr::Binary { op: BinaryOp::Or, left, right, .. } => {
                        stack.push(right);
                        stack.push(left);
                    }
                    other => match condition(other, columns, types)? {
                        Condition::Compare { column: c, op: BinaryOp::Eq, value } if column.is_none_or(|x| x == c) => {
                            column = Some(c);
                            values.push(value);
                        }
                        _ => return None,
                    },
                }
            }
            Some(Condition::In { column: column?, values })
        }
        _ => None,
    }
}

fn conjuncts(filter: &Expr, out: &mut Vec<Expr>) {
    match filter {
        Expr::Binary { op: BinaryOp::And, left, right, .. } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        other => out.push(other.clone()),
    }
}

/// An index path: ranges in index order, the conjuncts they implement, its cost.
struct IndexPath {
    index: IndexMeta,
    desc: BTreeDesc,
    ranges: Vec<(Bound<Vec<Datum>>, Bound<Vec<Datum>>)>,
    used: Vec<usize>,
    rows: f64,
    cost: f64,
    index_only: bool,
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

/// The ranges `conditions` allow on `index`, and which conditions they implement.
#[allow(clippy::type_complexity)]
fn ranges_for(index: &IndexMeta, desc: &BTreeDesc, conditions: &[(usize, Condition)]) -> Option<(Vec<(Bound<Vec<Datum>>, Bound<Vec<Datum>>)>, Vec<usize>)> {
    let mut prefix: Vec<Datum> = Vec::new();
    let mut used = Vec::new();
    for (k, key) in index.columns.iter().enumerate() {
        let on_column: Vec<&(usize, Condition)> = conditions.iter().filter(|(_, c)| c.column() == key.column).collect();
        if let Some((i, Condition::Compare { value, .. })) =
            on_column.iter().find(|(_, c)| matches!(c, Condition::Compare { op: BinaryOp::Eq, .. }))
        {
            prefix.push(value.clone());
            used.push(*i);
            continue;
        }
        if let Some((i, Condition::In { values, .. })) = on_column.iter().find(|(_, c)| matches!(c, Condition::In { .. })) {
            used.push(*i);
            let ranges = sort_in_index_order(desc, k, values.clone())
                .into_iter()
                .map(|v| {
                    let mut p = prefix.clone();
                    p.push(v);
                    (Bound::Included(p.clone()), Bound::Included(p))
                })
                .collect();
            return Some((ranges, used));
        }
        // A range on this column: at most one bound per side, in index order.
        let mut lower: Option<(Datum, bool)> = None;
        let mut upper: Option<(Datum, bool)> = None;
        for (i, c) in &on_column {
            let Condition::Compare { op, value, .. } = c else { continue };
            // In index order, a descending column's `>` bounds from above.
            let op = if key.descending { flip(*op) } else { *op };
            let (slot, inclusive) = match op {
                BinaryOp::Gt => (&mut lower, false),
                BinaryOp::GtEq => (&mut lower, true),
                BinaryOp::Lt => (&mut upper, false),
                BinaryOp::LtEq => (&mut upper, true),
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some((value.clone(), inclusive));
                used.push(*i);
            }
        }
        if lower.is_none() && upper.is_none() {
            break;
        }
        // NULLs satisfy no comparison: stop before them on the open side.
        let nulls_at_end = !key.nulls_first;
        let with = |v: Datum| {
            let mut p = prefix.clone();
            p.push(v);
            p
        };
        let lower_bound = match lower {
            Some((v, true)) => Bound::Included(with(v)),
            Some((v, false)) => Bound::Excluded(with(v)),
            None if !nulls_at_end => Bound::Excluded(with(Datum::Null)),
            None if prefix.is_empty() => Bound::Unbounded,
            None => Bound::Included(prefix.clone()),
        };
        let upper_bound = match upper {
            Some((v, true)) => Bound::Included(with(v)),
            Some((v, false)) => Bound::Excluded(with(v)),
            None if nulls_at_end => Bound::Excluded(with(Datum::Null)),
            None if prefix.is_empty() => Bound::Unbounded,
            None => Bound::Included(prefix.clone()),
        };
        return Some((vec![(lower_bound, upper_bound)], used));
    }
    if prefix.is_empty() {
        return None;
    }
    Some((vec![(Bound::Included(prefix.clone()), Bound::Included(prefix))], used))
}

/// Entries in `ranges`, counted up to `cap`.
fn count_entries(ctx: &PlanContext, index: &IndexMeta, desc: &BTreeDesc, ranges: &[(Bound<Vec<Datum>>, Bound<Vec<Datum>>)], cap: u64) -> Option<u64> {
    let tree = BTree::open(ctx.pool, index.locator(), desc);
    let mut n = 0u64;
    for (lower, upper) in ranges {
        let mut scan = tree.scan(lower.clone(), upper.clone(), ScanDirection::Forward).ok()?;
        while scan.next().ok()?.is_some() {
            n += 1;
            if n >= cap {
                return Some(n);
            }
        }
    }
    Some(n)
}

fn seq_scan_cost(ctx: &PlanContext, heap: &HeapSource, rows: f64) -> f64 {
    let disabled = if ctx.settings.boolean("enable_seqscan") { 0.0 } else { DISABLE_COST };
    heap.nblocks as f64 * SEQ_PAGE_COST + rows * CPU_TUPLE_COST + disabled
}

fn index_cost(rows: f64, index_only: bool) -> f64 {
    let heap = if index_only { 0.0 } else { rows * RANDOM_PAGE_COST };
    heap + rows * (CPU_INDEX_TUPLE_COST + CPU_TUPLE_COST)
}

fn enabled(ctx: &PlanContext, index_only: bool) -> bool {
    ctx.settings.boolean(if index_only { "enable_indexonlyscan" } else { "enable_indexscan" })
        || (index_only && ctx.settings.boolean("enable_indexscan"))
}

/// Replace a heap source by an index scan when one of the table's indexes implements
/// some of `filter`'s conjuncts and is cheaper; the implemented conjuncts leave `filter`.
pub(crate) fn choose_index_scan(source: &mut Source, filter: &mut Option<Expr>, ctx: &PlanContext) {
    let Source::Heap(heap) = source else { return };
    let Some(predicate) = filter.as_ref() else { return };
    let Some(table) = ctx.catalog.tables.get(&heap.table_name) else { return };
    let types = table.column_types();
    let mut parts = Vec::new();
    conjuncts(predicate, &mut parts);
    let conditions: Vec<(usize, Condition)> =
        parts.iter().enumerate().filter_map(|(i, e)| condition(e, &heap.columns, &types).map(|c| (i, c))).collect();
    if conditions.is_empty() {
        return;
    }
    let rows = table.row_count as f64;
    let seq_cost = seq_scan_cost(ctx, heap, rows);
    let mut best: Option<IndexPath> = None;
    for index in ctx.catalog.indexes_of(&table.name) {
        let Ok(desc) = btree_desc(table, index) else { continue };
        let Some((ranges, used)) = ranges_for(index, &desc, &conditions) else { continue };
        let index_only = heap.columns.iter().all(|c| index.columns.iter().any(|k| k.column == *c));
        if !enabled(ctx, index_only) {
            continue;
        }
        let beat = best.as_ref().map_or(seq_cost, |b| b.cost.min(seq_cost));
        // Entries beyond which this index cannot win: stop counting there.
        let per_row = index_cost(1.0, index_only);
        let cap = ((beat / per_row).ceil() as u64).saturating_add(1);
        let Some(count) = count_entries(ctx, index, &desc, &ranges, cap) else { continue };
        let cost = index_cost(count as f64, index_only);
        if cost < beat {
            let used = used.into_iter().map(|u| conditions[u].0).collect();
            best = Some(IndexPath { index: index.clone(), desc, ranges, used, rows: count as f64, cost, index_only });
        }
    }
    let Some(path) = best else { return };
    let mut remaining = Vec::new();
    let mut implemented = Vec::new();
    for (i, part) in parts.into_iter().enumerate() {
        if path.used.contains(&i) {
            implemented.push(part);
        } else {
            remaining.push(part);
        }
    }
    *filter = remaining.into_iter().reduce(|a, b| Expr::Binary { op: BinaryOp::And, left: Box::new(a), right: Box::new(b), data_type: DataType::Bool });
    *source = index_source(heap.clone(), &path.index, path.desc, path.ranges, ScanDirection::Forward, path.index_only, implemented, path.rows);
}

#[allow(clippy::too_many_arguments)]
fn index_source(
    heap: HeapSource,
    index: &IndexMeta,
    desc: BTreeDesc,
    ranges: Vec<(Bound<Vec<Datum>>, Bound<Vec<Datum>>)>,
    direction: ScanDirection,
    index_only: bool,
    conditions: Vec<Expr>,
    estimated_rows: f64,
) -> Source {
    Source::Index(IndexSource {
        heap,
        index_name: index.name.clone(),
        index_rel: index.locator(),
        desc,
        key_columns: index.columns.iter().map(|c| c.column).collect(),
        ranges,
        direction,
        index_only,
        conditions,
        estimated_rows,
    })
}

/// The direction in which `index` yields the sort's order, if it does: the sort keys are
/// the index's leading columns with the same (or all exactly reversed) directions.
fn index_order(index: &IndexMeta, sort_columns: &[(usize, bool, bool)]) -> Option<ScanDirection> {
    if sort_columns.is_empty() || sort_columns.len() > index.columns.len() {
        return None;
    }
    let same = sort_columns.iter().zip(&index.columns).all(|(s, k)| s.0 == k.column && s.1 == k.descending && s.2 == k.nulls_first);
    let reversed =
        sort_columns.iter().zip(&index.columns).all(|(s, k)| s.0 == k.column && s.1 != k.descending && s.2 != k.nulls_first);
    if same {
        Some(ScanDirection::Forward)
    } else if reversed {
        Some(ScanDirection::Backward)
    } else {
        None
    }
}

/// Drop a sort that an index scan can replace (see the module comment); `bound` is the
/// LIMIT + OFFSET when there is one.
pub(crate) fn use_index_order(plan: Plan, bound: Option<u64>, ctx: &PlanContext) -> Plan {
    let Plan::Sort(sort) = plan else { return plan };
    let SortPlan { input, keys, types, bound: sort_bound, output_width } = sort;
    let rebuild = |input: Box<Plan>| Plan::Sort(SortPlan { input, keys: keys.clone(), types: types.clone(), bound: sort_bound, output_width });
    let Plan::Pipeline(mut pipeline) = *input else { return rebuild(input) };
    // Each sort key must be a plain table column of the pipeline's final projection.
    let projection: Option<&Vec<Expr>> = pipeline.steps.iter().rev().find_map(|s| match s {
        Step::Project(exprs) => Some(exprs),
        Step::Filter(_) => None,
    });
    let heap_columns: &[usize] = match &pipeline.source {
        Source::Heap(h) => &h.columns,
        Source::Index(i) => &i.heap.columns,
        _ => return rebuild(Box::new(Plan::Pipeline(pipeline))),
    };
    let mut sort_columns = Vec::with_capacity(keys.len());
    for key in &keys {
        let column = match projection.and_then(|p| p.get(key.column)) {
            Some(Expr::Column { index, .. }) => heap_columns.get(*index).copied(),
            _ => None,
        };
        let Some(column) = column else { return rebuild(Box::new(Plan::Pipeline(pipeline))) };
        sort_columns.push((column, key.descending, key.nulls_first));
    }
    let replaced = match &mut pipeline.source {
        // The WHERE chose an index: its order is free when it is the sort's.
        Source::Index(scan) if scan.ranges.len() == 1 => {
            let meta = ctx.catalog.indexes.get(&scan.index_name);
            match meta.and_then(|m| index_order(m, &sort_columns)) {
                Some(direction) => {
                    scan.direction = direction;
                    true
                }
                None => false,
            }
        }
        // Otherwise only for a few rows of a big table.
        Source::Heap(heap) => {
            let rows = ctx.catalog.tables.get(&heap.table_name).map_or(0, |t| t.row_count);
            let few = bound.is_some_and(|b| b.saturating_mul(10) <= rows);
            let choice = ctx
                .catalog
                .indexes_of(&heap.table_name)
                .filter_map(|m| index_order(m, &sort_columns).map(|d| (m.clone(), d)))
                .next();
            match (few && ctx.settings.boolean("enable_indexscan"), choice, ctx.catalog.tables.get(&heap.table_name)) {
                (true, Some((meta, direction)), Some(table)) => match btree_desc(table, &meta) {
                    Ok(desc) => {
                        let index_only = heap.columns.iter().all(|c| meta.columns.iter().any(|k| k.column == *c));
                        let estimated = bound.unwrap_or(0) as f64;
                        pipeline.source = index_source(
                            heap.clone(),
                            &meta,
                            desc,
                            vec![(Bound::Unbounded, Bound::Unbounded)],
                            direction,
                            index_only,
                            Vec::new(),
                            estimated,
                        );
                        true
                    }
                    Err(_) => false,
                },
                _ => false,
            }
        }
        _ => false,
    };
    if !replaced {
        return rebuild(Box::new(Plan::Pipeline(pipeline)));
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
