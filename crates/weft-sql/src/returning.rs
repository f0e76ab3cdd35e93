//! `RETURNING expr-list | *` of INSERT, UPDATE and DELETE.
//!
//! The list is bound like a select list against the statement's row: the target table's
//! columns (under its name or alias) and, for `UPDATE ... FROM` / `DELETE ... USING`, the
//! other relations' columns after them. `*` expands to all of them, `t.*` to one table's.
//! Output names follow PostgreSQL's select-list naming (`column_name`). Each changed row
//! is projected once the statement has decided on it: INSERT's rows as stored (defaults and
//! serial values filled in), UPDATE's new versions, DELETE's old rows. Aggregates are
//! refused as PostgreSQL refuses them (42803).
//!
//! The rows are computed before the statement commits and handed back only if it does; a
//! failing statement returns its error and no rows, as in PostgreSQL.

use sqlparser::ast::{self, Spanned};
use weft_common::{Datum, Error, Result, SqlState};
use weft_exec::expr::{EvalContext, Expr};

use crate::api::{ColumnInfo, QueryResult};
use crate::bind::{column_name, contains_aggregate, expanded_column, ident_name, object_name, Binder, Scope, ScopeColumn};
use crate::planner::PlanContext;

/// A scope column that names cannot reach (an internal value carried beside the row, such
/// as a target row's TID); `*` skips it. SQL identifiers cannot hold a NUL.
pub(crate) const HIDDEN_COLUMN_PREFIX: char = '\0';

pub(crate) fn is_hidden(column: &ScopeColumn) -> bool {
    column.name.starts_with(HIDDEN_COLUMN_PREFIX)
}

/// A bound RETURNING list.
pub(crate) struct Returning {
    pub columns: Vec<ColumnInfo>,
    pub exprs: Vec<Expr>,
}

impl Returning {
    /// Bind `items` over `scope`; `None` when the statement has no RETURNING.
    pub fn bind(items: Option<&Vec<ast::SelectItem>>, scope: &Scope, ctx: &PlanContext) -> Result<Option<Returning>> {
        let Some(items) = items else { return Ok(None) };
        let mut expanded: Vec<(ast::Expr, String)> = Vec::with_capacity(items.len());
        for item in items {
            match item {
                ast::SelectItem::UnnamedExpr(e) => expanded.push((e.clone(), column_name(e))),
                ast::SelectItem::ExprWithAlias { expr, alias } => expanded.push((expr.clone(), ident_name(alias))),
                ast::SelectItem::Wildcard(_) => {
                    let visible = scope.columns.iter().enumerate().filter(|(_, c)| !is_hidden(c));
                    expanded.extend(visible.map(|(i, c)| (expanded_column(i, c, item.span()), c.name.clone())))
                }
                ast::SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                    let qualifier = object_name(name)?;
                    let before = expanded.len();
                    let all = scope.columns.iter().chain(&scope.qualified_only);
                    let matching = all.enumerate().filter(|(_, c)| !is_hidden(c) && c.table.as_deref() == Some(qualifier.as_str()));
                    expanded.extend(matching.map(|(i, c)| (expanded_column(i, c, item.span()), c.name.clone())));
                    if expanded.len() == before {
                        return Err(Error::new(
                            SqlState::UNDEFINED_TABLE,
                            format!("missing FROM-clause entry for table \"{qualifier}\""),
                        ));
                    }
                }
                other => return Err(Error::not_supported(format!("RETURNING item {other}"))),
            }
        }
        let mut returning = Returning { columns: Vec::with_capacity(expanded.len()), exprs: Vec::with_capacity(expanded.len()) };
        for (expr, name) in expanded {
            if contains_aggregate(&expr) {
                return Err(Error::new(SqlState::GROUPING_ERROR, "aggregate functions are not allowed in RETURNING"));
            }
            crate::srf::refuse_in_clause(Some(&expr), "RETURNING")?;
            let bound = Binder::new(scope).planning(ctx).bind(&expr)?;
            returning.columns.push(ColumnInfo { name, data_type: bound.data_type(), type_modifier: None });
            returning.exprs.push(bound);
        }
        Ok(Some(returning))
    }

    /// The RETURNING row of one changed row (`row` is over the scope it was bound in).
    pub fn project(&self, row: &[Datum], eval: &EvalContext) -> Result<Vec<Datum>> {
        self.exprs.iter().map(|e| e.eval(row, eval)).collect()
    }

    /// The statement's result: the returned rows under the command tag.
    pub fn result(self, rows: Vec<Vec<Datum>>, tag: String) -> QueryResult {
        QueryResult::rows(self.columns, rows, tag)
    }
}

/// PostgreSQL's error for a table the statement has but hides from the clause that named
/// it (a table renamed by its alias, EXCLUDED in RETURNING), in place of weft's "missing
/// FROM-clause entry".
pub(crate) fn hidden_table_reference(error: Error, table: &str, hint: String) -> Error {
    if error.sqlstate == SqlState::UNDEFINED_TABLE && error.message == format!("missing FROM-clause entry for table \"{table}\"") {
        return Error::new(SqlState::UNDEFINED_TABLE, format!("invalid reference to FROM-clause entry for table \"{table}\""))
            .with_hint(hint);
    }
    error
}

/// [`hidden_table_reference`] for a table named by its own name although it has an alias.
pub(crate) fn aliased_table_reference(error: Error, table: &str, alias: &str) -> Error {
    if table == alias {
        return error;
    }
    hidden_table_reference(error, table, format!("Perhaps you meant to reference the table alias \"{alias}\"."))
}

/// The result of a writing statement: its rows when it has RETURNING, else the tag alone.
pub(crate) fn statement_result(returning: Option<Returning>, rows: Vec<Vec<Datum>>, tag: String) -> QueryResult {
    match returning {
        Some(returning) => returning.result(rows, tag),
        None => QueryResult::command(tag),
    }
}
