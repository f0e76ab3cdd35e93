//! `SELECT DISTINCT ON (exprs)`: the first row of each set of rows equal on `exprs`, in the
//! order of the query's ORDER BY. As in PostgreSQL, the ORDER BY must begin with the
//! DISTINCT ON expressions (in any order among themselves); those it does not name are
//! appended to it when nothing else comes before them. The rows are sorted by that order
//! and a `Unique` keeps the first row of each run of equal keys — PostgreSQL's plan.

use sqlparser::ast;
use weft_common::{Error, Result, SqlState};
use weft_exec::plan::Plan;

use crate::bind::{ident_name, Binder, Scope};
use crate::planner::{plan_order_by, PlannedQuery};

pub(crate) struct DistinctOn {
    /// The sort: the query's ORDER BY items, then DISTINCT ON expressions it lacks.
    pub order_by: Vec<ast::OrderByExpr>,
    /// How many items of `order_by` are the query's own.
    query_items: usize,
    /// How many leading items of `order_by` are DISTINCT ON expressions: the Unique's keys.
    key_count: usize,
}

impl DistinctOn {
    /// Match the DISTINCT ON expressions with the ORDER BY (`items`: the select list, `*`
    /// expanded, with output names; `scope`: the FROM clause's columns).
    pub fn new(on: &[ast::Expr], order_by: &[ast::OrderByExpr], items: &[(ast::Expr, String)], scope: &Scope) -> Result<DistinctOn> {
        let on: Vec<ast::Expr> = on.iter().map(|e| resolve(e, items, "DISTINCT ON")).collect::<Result<_>>()?;
        let mut named = vec![false; on.len()];
        let mut skipped = false;
        let mut key_count = 0;
        let mut seen: Vec<ast::Expr> = Vec::new();
        for item in order_by {
            let e = resolve(&item.expr, items, "ORDER BY")?;
            // A repeated ORDER BY item adds nothing to the order (PostgreSQL drops it).
            if seen.iter().any(|earlier| same_expression(earlier, &e, scope)) {
                continue;
            }
            seen.push(e.clone());
            let mut hit = false;
            for (i, d) in on.iter().enumerate() {
                if same_expression(&e, d, scope) {
                    named[i] = true;
                    hit = true;
                }
            }
            match (hit, skipped) {
                (false, _) => skipped = true,
                (true, true) => return Err(mismatch()),
                (true, false) => key_count += 1,
            }
        }
        let mut sort = order_by.to_vec();
        for i in 0..on.len() {
            if named[i] {
                continue;
            }
            if skipped {
                return Err(mismatch());
            }
            // A repeated DISTINCT ON expression is one key.
            for (j, d) in on.iter().enumerate().skip(i) {
                named[j] |= same_expression(&on[i], d, scope);
            }
            sort.push(ast::OrderByExpr { expr: on[i].clone(), options: ast::OrderByOptions { sort: None, nulls_first: None }, with_fill: None });
            key_count += 1;
        }
        Ok(DistinctOn { order_by: sort, query_items: order_by.len(), key_count })
    }

    /// The Unique over the rows sorted by `order_by`. Hidden columns only DISTINCT ON
    /// needed are dropped by it; those of the query's ORDER BY stay for the caller, which
    /// finds its rows sorted already.
    pub fn plan(self, planned: PlannedQuery) -> Result<PlannedQuery> {
        let PlannedQuery { plan, columns, mut hidden, mut hidden_types, select_items } = planned;
        let Plan::Sort(mut sort) = plan_order_by(plan, &columns, &hidden, &hidden_types, &select_items, &self.order_by)? else {
            return Err(Error::internal("DISTINCT ON without its sort"));
        };
        sort.output_width = columns.len() + hidden.len();
        let keys = sort.keys[..self.key_count].iter().map(|k| k.column).collect();
        // plan_select adds hidden columns in ORDER BY order: the query's come first.
        let query_order = &self.order_by[..self.query_items];
        let query_hidden = hidden.iter().filter(|h| query_order.iter().any(|o| &o.expr == *h)).count();
        hidden.truncate(query_hidden);
        hidden_types.truncate(query_hidden);
        let output_width = columns.len() + query_hidden;
        let plan = Plan::Unique { input: Box::new(Plan::Sort(sort)), keys, output_width };
        Ok(PlannedQuery { plan, columns, hidden, hidden_types, select_items })
    }
}

fn mismatch() -> Error {
    Error::new(SqlState::INVALID_COLUMN_REFERENCE, "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
}

/// A position or an output name stands for its select-list expression, as in ORDER BY.
fn resolve(e: &ast::Expr, items: &[(ast::Expr, String)], clause: &str) -> Result<ast::Expr> {
    match e {
        e if crate::planner::is_clause_constant(e) => {
            Ok(items[crate::planner::select_list_position(e, items.len(), clause)?].0.clone())
        }
        ast::Expr::Identifier(ident) => {
            let name = ident_name(ident);
            Ok(items.iter().find(|(_, n)| *n == name).map_or_else(|| e.clone(), |(item, _)| item.clone()))
        }
        _ => Ok(e.clone()),
    }
}

/// The same expression once bound (`t.a` and `a`), or — where it cannot be bound on its
/// own, as an aggregate — written alike.
fn same_expression(a: &ast::Expr, b: &ast::Expr, scope: &Scope) -> bool {
    match (Binder::new(scope).bind(a), Binder::new(scope).bind(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}
