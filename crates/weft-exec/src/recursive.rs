//! Nested loops over LATERAL items and `WITH RECURSIVE`'s recursive union.
//!
//! Both run their inputs as whole plans (every plan node returns all its rows): a nested
//! loop runs its inner plan once per outer row, with the outer row's parameters; a
//! recursive union runs the recursive term once per working table, on a copy of the term
//! whose working-table scans hold the rows of the previous run.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use weft_common::{Datum, Result};

use crate::execute::{execute, node_id, ExecContext, NodeStats};
use crate::expr::GroupKey;
use crate::plan::{NestLoopPlan, Plan, RecursiveUnionPlan, Row};

/// `ctx` with another evaluation context (the inner side's parameters); what the inner
/// runs record is not kept.
fn with_eval<'a>(ctx: &ExecContext<'a>, eval: &'a crate::expr::EvalContext) -> ExecContext<'a> {
    ExecContext {
        pool: ctx.pool,
        workers: ctx.workers,
        cancel: ctx.cancel,
        eval,
        leader_participates: ctx.leader_participates,
        stats: Default::default(),
        sort: ctx.sort.clone(),
        notices: Default::default(),
        sort_reports: Default::default(),
        nodes: Default::default(),
        hash: ctx.hash.clone(),
        joins: Default::default(),
    }
}

pub(crate) fn execute_nest_loop(plan: &Plan, nl: &NestLoopPlan, ctx: &ExecContext) -> Result<Vec<Row>> {
    let began = Instant::now();
    let outer_rows = execute(&nl.outer, ctx)?;
    let mut out = Vec::new();
    let enough = |out: &Vec<Row>| nl.stop_after.is_some_and(|n| out.len() as u64 >= n);
    let mut memo = Memo::new(&nl.inner, ctx.sort.work_mem);
    for outer in outer_rows {
        if enough(&out) {
            break;
        }
        ctx.cancel.check()?;
        let params = nl.params.iter().map(|p| p.eval(&outer, ctx.eval)).collect::<Result<Vec<_>>>()?;
        let inner_rows = match memo.get(&params) {
            Some(rows) => rows,
            None => {
                let eval = ctx.eval.with_params(params.clone());
                let inner_ctx = with_eval(ctx, &eval);
                let rows = Arc::new(execute(&nl.inner, &inner_ctx)?);
                inner_ctx.notices.lock().drain(..).for_each(|n| ctx.notices.lock().push(n));
                memo.put(params, &rows);
                rows
            }
        };
        let mut matched = false;
        for inner in inner_rows.iter() {
            if enough(&out) {
                break;
            }
            let mut row = outer.clone();
            row.extend_from_slice(inner);
            if let Some(filter) = &nl.filter {
                if !matches!(filter.eval(&row, ctx.eval)?, Datum::Bool(true)) {
                    continue;
                }
            }
            matched = true;
            out.push(row);
        }
        if nl.left && !matched {
            let mut row = outer;
            row.resize(row.len() + nl.inner_types.len(), Datum::Null);
            out.push(row);
        }
    }
    ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows: out.len() as u64, elapsed: began.elapsed(), ..NodeStats::default() });
    Ok(out)
}

/// The inner rows of a nested loop by parameter values, as PostgreSQL's Memoize keeps
/// them: outer rows that repeat a value (a NULL-extended side, a low-cardinality column)
/// reuse the rows instead of running the inner plan again. Only for an inner plan that
/// gives the same rows for the same parameters (no volatile function, no subplan, which
/// could hold one), and within `work_mem`; past it, values not yet cached run as before.
struct Memo {
    enabled: bool,
    budget: usize,
    used: usize,
    /// Hashed with SQL grouping semantics; hits must also be the same bits (`0` and `-0`,
    /// `1.5` and `1.50` print differently when the inner plan outputs its parameter).
    entries: HashMap<GroupKey, Vec<(Vec<Datum>, Arc<Vec<Row>>)>>,
}

impl Memo {
    fn new(inner: &Plan, work_mem: usize) -> Memo {
        let mut deterministic = true;
        inner.for_each_expr(&mut |e| deterministic &= !e.runs_per_row());
        Memo { enabled: deterministic, budget: work_mem, used: 0, entries: HashMap::new() }
    }

    fn get(&self, params: &[Datum]) -> Option<Arc<Vec<Row>>> {
        if !self.enabled {
            return None;
        }
        let bucket = self.entries.get(&GroupKey(params.to_vec()))?;
        bucket.iter().find(|(key, _)| key.len() == params.len() && key.iter().zip(params).all(|(a, b)| same_datum(a, b))).map(|(_, rows)| rows.clone())
    }

    fn put(&mut self, params: Vec<Datum>, rows: &Arc<Vec<Row>>) {
        if !self.enabled {
            return;
        }
        let bytes = row_bytes(&params) + rows.iter().map(|r| row_bytes(r)).sum::<usize>();
        if self.used + bytes > self.budget {
            return;
        }
        self.used += bytes;
        self.entries.entry(GroupKey(params.clone())).or_default().push((params, rows.clone()));
    }
}

/// Binary equality: floats by their bits, everything else by its representation.
fn same_datum(a: &Datum, b: &Datum) -> bool {
    match (a, b) {
        (Datum::Float8(x), Datum::Float8(y)) => x.to_bits() == y.to_bits(),
        (Datum::Array(x), Datum::Array(y)) => {
            x.elem == y.elem && x.items.len() == y.items.len() && x.items.iter().zip(&y.items).all(|(a, b)| same_datum(a, b))
        }
        _ => a == b,
    }
}

/// Rough memory of a cached row.
fn row_bytes(row: &[Datum]) -> usize {
    32 + row.iter().map(|d| std::mem::size_of::<Datum>() + crate::aggregate::datum_heap(d)).sum::<usize>()
}

pub(crate) fn execute_recursive_union(plan: &Plan, ru: &RecursiveUnionPlan, ctx: &ExecContext) -> Result<Vec<Row>> {
    let began = Instant::now();
    let mut seen: HashSet<GroupKey> = HashSet::new();
    let mut out: Vec<Row> = Vec::new();
    let limit = ru.stop_after.map(|n| n as usize);
    // Keep the rows new to the output (all of them for UNION ALL); true when the
    // output is long enough.
    let mut keep = |rows: Vec<Row>, out: &mut Vec<Row>| -> Vec<Row> {
        let mut fresh = Vec::with_capacity(rows.len());
        for row in rows {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            if ru.distinct && !seen.insert(GroupKey(row.clone())) {
                continue;
            }
            out.push(row.clone());
            fresh.push(row);
        }
        fresh
    };
    let first = execute(&ru.non_recursive, ctx)?;
    let mut working = keep(first, &mut out);
    while !working.is_empty() && !limit.is_some_and(|l| out.len() >= l) {
        ctx.cancel.check()?;
        let mut term = (*ru.recursive).clone();
        term.set_work_table(ru.id, &Arc::new(std::mem::take(&mut working)));
        let produced = execute(&term, ctx)?;
        working = keep(produced, &mut out);
    }
    ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows: out.len() as u64, elapsed: began.elapsed(), ..NodeStats::default() });
    Ok(out)
}
