//! Nested loops over LATERAL items and `WITH RECURSIVE`'s recursive union.
//!
//! Both run their inputs as whole plans (every plan node returns all its rows): a nested
//! loop runs its inner plan once per outer row, with the outer row's parameters; a
//! recursive union runs the recursive term once per working table, on a copy of the term
//! whose working-table scans hold the rows of the previous run.

use std::collections::HashSet;
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
    for outer in outer_rows {
        if enough(&out) {
            break;
        }
        ctx.cancel.check()?;
        let params = nl.params.iter().map(|p| p.eval(&outer, ctx.eval)).collect::<Result<Vec<_>>>()?;
        let eval = ctx.eval.with_params(params);
        let inner_ctx = with_eval(ctx, &eval);
        let inner_rows = execute(&nl.inner, &inner_ctx)?;
        inner_ctx.notices.lock().drain(..).for_each(|n| ctx.notices.lock().push(n));
        let mut matched = false;
        for inner in inner_rows {
            if enough(&out) {
                break;
            }
            let mut row = outer.clone();
            row.extend(inner);
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
