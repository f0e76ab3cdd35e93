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

use weft_exec::expr::{BinaryOp, Expr};
use weft_exec::plan::{Plan, Source, Step};

use crate::exprutil::{is_volatile, substitute_columns};

/// If `source` is a subquery that only filters and projects a table's rows, with nothing
/// volatile, make `source` that table's scan: `filter` (over the subquery's rows) becomes
/// the subquery's filter and then `filter`, and each of `exprs` is rewritten over the
/// table's row. Anything else is left as it is.
pub(crate) fn pull_up_simple_subquery(source: &mut Source, filter: &mut Option<Expr>, exprs: Vec<&mut Expr>) {
    let Source::Subquery { plan, .. } = source else { return };
    let Plan::Pipeline(inner) = plan.as_ref() else { return };
    if !matches!(inner.source, Source::Heap(_)) {
        return;
    }
    let (inner_filter, projection) = match inner.steps.as_slice() {
        [Step::Project(projection)] => (None, projection),
        [Step::Filter(f), Step::Project(projection)] => (Some(f), projection),
        _ => return,
    };
    // A volatile expression must run once per subquery row, not once per use above.
    if projection.iter().chain(inner_filter).any(is_volatile) {
        return;
    }
    for e in exprs {
        *e = substitute_columns(e, projection);
    }
    let outer = filter.take().map(|f| substitute_columns(&f, projection));
    *filter = match (inner_filter.cloned(), outer) {
        (Some(inner), Some(outer)) => {
            Some(Expr::Binary { op: BinaryOp::And, left: Box::new(inner), right: Box::new(outer), data_type: weft_common::DataType::Bool })
        }
        (inner, outer) => inner.or(outer),
    };
    *source = inner.source.clone();
}
