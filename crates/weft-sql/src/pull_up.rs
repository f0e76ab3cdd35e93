//! Pulling a simple subquery in FROM up into the query that reads it, as PostgreSQL's
//! `pull_up_subqueries` does for a view or a derived table that is only a filter and a
//! projection over one table.
//!
//! Without it such a subquery is a `Subquery Scan`: its rows are computed in full before
//! the query above reads them, and a condition written above it (`SELECT * FROM v WHERE
//! a = 5`) can use no index. Pulled up, the query reads the table itself: its expressions
//! over the subquery's columns become the subquery's expressions, its filter joins the
//! subquery's, and the access path (index or sequential, parallel or not) is chosen for
//! the whole filter.

use weft_exec::expr::Expr;
use weft_exec::plan::{Plan, Source, Step};

use crate::exprutil::{and, is_volatile, substitute_columns};

/// A pipeline's steps when they are a projection, after a filter or not: the filter and
/// the projection's expressions.
pub(crate) fn filter_and_projection(steps: &[Step]) -> Option<(Option<&Expr>, &[Expr])> {
    match steps {
        [Step::Project(projection)] => Some((None, projection)),
        [Step::Filter(f), Step::Project(projection)] => Some((Some(f), projection)),
        _ => None,
    }
}

/// A subquery that only filters and projects a table's rows, with nothing volatile: its
/// table's scan, its filter and its projection. `None` for any other source.
pub(crate) fn simple_subquery(source: &Source) -> Option<(&Source, Option<&Expr>, &[Expr])> {
    let Source::Subquery { plan, .. } = source else { return None };
    let Plan::Pipeline(inner) = plan.as_ref() else { return None };
    if !matches!(inner.source, Source::Heap(_)) {
        return None;
    }
    let (filter, projection) = filter_and_projection(&inner.steps)?;
    // A volatile expression must run once per subquery row, not once per use above.
    if projection.iter().chain(filter).any(is_volatile) {
        return None;
    }
    Some((&inner.source, filter, projection))
}

/// If `source` is a [`simple_subquery`], make `source` that table's scan: `filter` (over
/// the subquery's rows) becomes the subquery's filter and then `filter`, and each of
/// `exprs` is rewritten over the table's row. Anything else is left as it is.
pub(crate) fn pull_up_simple_subquery(source: &mut Source, filter: &mut Option<Expr>, exprs: Vec<&mut Expr>) {
    let Some((table, inner_filter, projection)) = simple_subquery(source) else { return };
    for e in exprs {
        *e = substitute_columns(e, projection);
    }
    let outer = filter.take().map(|f| substitute_columns(&f, projection));
    *filter = match (inner_filter.cloned(), outer) {
        (Some(inner), Some(outer)) => Some(and(inner, outer)),
        (inner, outer) => inner.or(outer),
    };
    *source = table.clone();
}

/// A subquery in FROM planned as an index scan, a filter and a projection: make it the
/// table's sequential scan under the whole filter again, when that makes it a
/// [`simple_subquery`], so that the query reading it, which pulls it up, chooses the
/// access path for its own conditions and the subquery's together. Only for a subquery
/// without ORDER BY: an index scan may stand for its sort.
pub(crate) fn defer_access_path(plan: &mut Plan) {
    let Some(candidate) = as_table_scan(plan) else { return };
    if simple_subquery(&Source::Subquery { plan: Box::new(candidate.clone()), label: Default::default() }).is_some() {
        *plan = candidate;
    }
}

/// A pipeline that is an index scan, a filter and a projection, as the table's sequential
/// scan under the index conditions and the filter together.
pub(crate) fn as_table_scan(plan: &Plan) -> Option<Plan> {
    let Plan::Pipeline(pipeline) = plan else { return None };
    let Source::Index(index) = &pipeline.source else { return None };
    let (filter, projection) = filter_and_projection(&pipeline.steps)?;
    let conditions = index.conditions.iter().chain(filter).cloned().reduce(and);
    let steps = conditions.map(Step::Filter).into_iter().chain([Step::Project(projection.to_vec())]).collect();
    let heap = Source::Heap(index.heap.clone());
    Some(Plan::Pipeline(weft_exec::plan::Pipeline { source: heap, steps, workers: pipeline.workers }))
}
