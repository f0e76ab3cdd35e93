//! The last pass over a planned query: a sorted subquery in FROM (`Plan::Sort` as a
//! pipeline's `Source::Subquery`, or under a LIMIT there) is told which of its output
//! columns the query above it reads (`SortPlan::read_outputs`); the others come out of the sort NULL rather than
//! decoded. In `SELECT count(*) FROM (SELECT * FROM t ORDER BY a) s` the sort still sorts
//! whole rows, but hands on none of their text: decoding it was most of the merge phase.
//! PostgreSQL's `remove_unused_subquery_outputs` does the like.
//!
//! What a pipeline's consumer reads is worked back through its steps: a projection reads
//! the columns its kept outputs use, a filter reads its own columns as well, and a join
//! step makes the pass assume every column is read. A consumer that is not an aggregate
//! reads every column. The pass rewrites every sorted subquery it reaches, so running it
//! again on an enclosing query (which may read less) refines what a nested run set.

use std::collections::BTreeSet;

use weft_exec::plan::{Plan, Pipeline, Source, Step};

use crate::exprutil::columns_used;

/// Mark, in every sorted subquery of `plan`, the output columns that are read.
pub(crate) fn mark_read_subquery_outputs(plan: &mut Plan) {
    visit_plan(plan, None);
}

/// `read`: the columns of `plan`'s rows its consumer reads (`None`: all).
fn visit_plan(plan: &mut Plan, read: Option<&BTreeSet<usize>>) {
    match plan {
        Plan::Pipeline(pipeline) => visit_pipeline(pipeline, read),
        Plan::Aggregate { input, group_by, aggregates, .. } => {
            let mut used = BTreeSet::new();
            for expr in group_by.iter().chain(aggregates.iter().flat_map(|call| call.exprs())) {
                columns_used(expr, &mut used);
            }
            visit_pipeline(input, Some(&used));
        }
        // A limit reads no column of its rows, unless it compares their sort keys.
        Plan::Limit { input, ties: Some(ties), .. } => {
            let read = read.map(|read| read.iter().copied().chain(ties.keys.iter().map(|k| k.column)).collect::<BTreeSet<usize>>());
            visit_plan(input, read.as_ref())
        }
        Plan::Limit { input, .. } => visit_plan(input, read),
        Plan::Unique { input, .. } => visit_plan(input, None),
        Plan::Sort(sort) => {
            sort.read_outputs = read.map(|read| (0..sort.output_width).map(|col| read.contains(&col)).collect());
            visit_plan(&mut sort.input, None)
        }
        Plan::SetOp(setop) => setop.inputs.iter_mut().for_each(|input| visit_plan(input, None)),
        Plan::Window(window) => visit_plan(&mut window.input, None),
        Plan::ProjectSet(ps) => visit_plan(&mut ps.input, None),
        Plan::NestLoop(nl) => {
            visit_plan(&mut nl.outer, None);
            visit_plan(&mut nl.inner, None);
        }
        Plan::RecursiveUnion(ru) => {
            visit_plan(&mut ru.non_recursive, None);
            visit_plan(&mut ru.recursive, None);
        }
    }
}

fn visit_pipeline(pipeline: &mut Pipeline, read: Option<&BTreeSet<usize>>) {
    let mut read: Option<BTreeSet<usize>> = read.cloned();
    for step in pipeline.steps.iter_mut().rev() {
        match step {
            Step::Project(exprs) => {
                let mut used = BTreeSet::new();
                for (i, expr) in exprs.iter().enumerate() {
                    if read.as_ref().is_none_or(|read| read.contains(&i)) {
                        columns_used(expr, &mut used);
                    }
                }
                read = Some(used);
            }
            Step::Filter(expr) => {
                if let Some(read) = &mut read {
                    columns_used(expr, read);
                }
            }
            Step::HashJoin(join) => {
                visit_pipeline(&mut join.inner, None);
                read = None;
            }
        }
    }
    if let Source::Subquery { plan, .. } = &mut pipeline.source {
        visit_plan(plan, read.as_ref());
    }
}
