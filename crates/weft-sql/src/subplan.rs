//! Correlated scalar subqueries: outer references bound as parameters (PostgreSQL's
//! SubPlan params).
//!
//! A `(SELECT ...)` is planned with an [`OuterQuery`] in its [`PlanContext`]: a name the
//! subquery's own scopes lack is looked up there, in the scope of the expression holding
//! the subquery. A hit becomes `Expr::Param { index }`, and the outer column it names is
//! recorded as argument `index` of the subplan (the same column twice is one parameter).
//! A subquery that recorded no parameter is an init plan; one that did is a subplan,
//! planned serially (it runs once per outer row: starting workers for each would cost
//! more than it saves) and evaluated per row by `weft_exec::expr::SubPlan`.

use std::cell::RefCell;

use weft_common::{Error, Result, SqlState};
use weft_exec::expr::Expr;
use weft_exec::plan::AggregateCall;

use crate::bind::{Scope, ScopeColumn};

pub struct OuterQuery<'a> {
    /// The scope of the expression that holds the subquery.
    pub scope: &'a Scope,
    /// When that expression is itself inside a subquery: the level around it.
    pub parent: Option<&'a OuterQuery<'a>>,
    /// The outer references found so far, bound in `scope`: argument `i` is parameter `i`.
    pub params: RefCell<Vec<Expr>>,
}

impl<'a> OuterQuery<'a> {
    pub fn new(scope: &'a Scope, parent: Option<&'a OuterQuery<'a>>) -> OuterQuery<'a> {
        OuterQuery { scope, parent, params: RefCell::default() }
    }

    /// A name the subquery could not resolve: its parameter, or `None` when the outer
    /// query lacks it too (the caller then reports the subquery's own error).
    pub fn reference(&self, qualifier: Option<&str>, name: &str) -> Result<Option<Expr>> {
        let (index, _) = match self.scope.resolve(qualifier, name) {
            Ok(found) => found,
            Err(e) if is_unresolved(&e) => {
                let mut level = self.parent;
                while let Some(outer) = level {
                    if outer.scope.resolve(qualifier, name).is_ok() {
                        return Err(Error::not_supported(
                            "a subquery referring to a column two or more query levels out is not supported yet",
                        ));
                    }
                    level = outer.parent;
                }
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        Ok(Some(self.reference_at(index)))
    }

    /// The parameter reading the column at `index` of `scope`.
    pub fn reference_at(&self, index: usize) -> Expr {
        let data_type = self.scope.column_at(index).data_type;
        let column = Expr::Column { index, data_type };
        let mut params = self.params.borrow_mut();
        let slot = match params.iter().position(|p| *p == column) {
            Some(slot) => slot,
            None => {
                params.push(column);
                params.len() - 1
            }
        };
        Expr::Param { index: slot, data_type }
    }

    /// The columns a subquery's `t.*` stands for when `t` is a relation of this query
    /// (none when it is not), in order, with their indexes in `scope`. A relation only
    /// a query further out has is 0A000, as its columns are.
    pub fn table_columns(&self, qualifier: &str) -> Result<Vec<(usize, ScopeColumn)>> {
        // This level's relations hide those of the level around it, as for names.
        let of = |scope: &Scope| -> Vec<(usize, ScopeColumn)> {
            let all = scope.columns.iter().chain(&scope.qualified_only).chain(&scope.outer).enumerate();
            let mut found: Vec<(usize, ScopeColumn)> = all.filter(|(_, c)| c.table.as_deref() == Some(qualifier)).map(|(i, c)| (i, c.clone())).collect();
            if found.iter().any(|(i, _)| *i < scope.local_width()) {
                found.retain(|(i, _)| *i < scope.local_width());
            }
            found
        };
        let found = of(self.scope);
        if found.is_empty() {
            let mut level = self.parent;
            while let Some(outer) = level {
                if !of(outer.scope).is_empty() {
                    return Err(Error::not_supported(
                        "a subquery referring to a column two or more query levels out is not supported yet",
                    ));
                }
                level = outer.parent;
            }
        }
        // A side of a JOIN ... USING keeps its merged columns apart (`qualified_only`),
        // so the scope no longer has the table's column order.
        let visible = self.scope.columns.len();
        let local = self.scope.local_width();
        if found.iter().any(|(i, _)| *i < visible) && found.iter().any(|(i, _)| (visible..local).contains(i)) {
            return Err(Error::not_supported(format!("{qualifier}.* of a JOIN ... USING side in a subquery is not supported yet")));
        }
        Ok(found)
    }
}

/// An unknown column or table name (as opposed to an ambiguous one).
pub fn is_unresolved(error: &Error) -> bool {
    error.sqlstate == SqlState::UNDEFINED_COLUMN || error.sqlstate == SqlState::UNDEFINED_TABLE
}

/// In a grouped query the subplan is evaluated over the groups' rows: its arguments
/// become references to the group keys they are (PostgreSQL's error otherwise).
pub fn group_key_args(args: Vec<Expr>, group_by: &[Expr], scope: &Scope) -> Result<Vec<Expr>> {
    args.into_iter()
        .map(|arg| match group_by.iter().position(|key| *key == arg) {
            Some(index) => Ok(Expr::Column { index, data_type: arg.data_type() }),
            None => {
                let name = match &arg {
                    Expr::Column { index, .. } => {
                        let column = scope.column_at(*index);
                        column.table.as_ref().map_or(column.name.clone(), |t| format!("{t}.{}", column.name))
                    }
                    other => format!("{other:?}"),
                };
                Err(Error::new(SqlState::GROUPING_ERROR, format!("subquery uses ungrouped column \"{name}\" from outer query")))
            }
        })
        .collect()
}

/// An aggregate whose arguments read outer columns and none of its own query's belongs
/// to the outer query in SQL (`(SELECT max(o.x))` aggregates the outer rows): not
/// supported; binding it here would aggregate one value per outer row instead.
pub fn check_aggregate_level(call: &AggregateCall) -> Result<()> {
    let (mut outer, mut local) = (false, false);
    for expr in call.exprs() {
        crate::exprutil::walk(expr, &mut |e| match e {
            Expr::Param { .. } => outer = true,
            Expr::Column { .. } => local = true,
            _ => {}
        });
    }
    if outer && !local {
        return Err(Error::not_supported("an aggregate over only the columns of an outer query is not supported yet"));
    }
    Ok(())
}
