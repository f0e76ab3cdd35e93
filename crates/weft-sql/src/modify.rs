//! DELETE and UPDATE of one table.
//!
//! Both run inside the writer's transaction (writers are serialized) in two passes: a
//! serial scan of the rows the statement's snapshot sees collects the matching ones (their
//! TIDs and, for UPDATE, the new rows), then the old rows get the statement's xid as their
//! xmax and UPDATE inserts the new versions at the end of the table through the INSERT
//! path, which checks NOT NULL and maintains every index. Because the scan ends before
//! anything is written, a row is never seen twice (an UPDATE cannot chase its own new
//! rows). If the statement fails, its xid is recorded as aborted and the xmax it wrote
//! means nothing, exactly as the xmin of rows a failed INSERT wrote.
//!
//! The matching rows (and UPDATE's new rows) are held in memory until the writes. Unique
//! indexes are checked once for all new rows, after every old version is gone: an
//! `UPDATE t SET a = a + 1` that PostgreSQL may reject midway, depending on the order it
//! meets the rows, succeeds here (as with PostgreSQL's deferrable constraints).

use sqlparser::ast;
use weft_access::catalog::TableMeta;
use weft_access::heap::{self, Tid};
use weft_common::parallel::CancelToken;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_exec::expr::Expr;
use weft_exec::plan::{Pipeline, Plan, Source};
use weft_storage::ForkNumber;

use crate::api::QueryResult;
use crate::bind::{ident_name, object_name, Binder, Scope, ScopeColumn};
use crate::database::WriteTxn;
use crate::planner::PlanContext;
use crate::session::Session;
use crate::statements::{
    assignment_coerce, column_default, exec_context, finish_context, insert_rows, is_default_keyword, maintain_indexes,
    with_plan_context,
};

/// `DELETE FROM t [[AS] alias] [WHERE condition]`.
pub fn delete(session: &mut Session, delete: &ast::Delete, cancel: &CancelToken) -> Result<QueryResult> {
    if delete.using.is_some() || delete.returning.is_some() || !delete.order_by.is_empty() || delete.limit.is_some() {
        return Err(Error::not_supported("DELETE ... USING / RETURNING / ORDER BY / LIMIT is not supported yet"));
    }
    if !delete.tables.is_empty() {
        return Err(Error::syntax("syntax error at or near \"FROM\""));
    }
    let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) = &delete.from;
    let [target] = from.as_slice() else { return Err(Error::not_supported("DELETE from more than one table")) };
    let (table_name, alias) = single_table(target)?;
    let db = session.db.clone();
    let deleted = db.write(|txn| {
        let mut table = txn.catalog.table(&table_name)?.clone();
        let matches = with_plan_context(session, &txn.catalog, |ctx| {
            let scope = table_scope(&table, &alias);
            let condition = delete.selection.as_ref().map(|c| bind_condition(session, cancel, &scope, ctx, c)).transpose()?;
            run_init_plans_of(session, cancel, condition.iter().cloned().collect())?;
            matching_rows(session, txn, &table, condition.as_ref(), cancel, |_| Ok(()))
        })?;
        let tids: Vec<Tid> = matches.into_iter().map(|(tid, ())| tid).collect();
        if !tids.is_empty() {
            heap::set_xmax(&db.pool, table.locator(), &tids, txn.xid)?;
            txn.touch(table.locator());
            table.row_count = table.row_count.saturating_sub(tids.len() as u64);
            table.has_dead_rows = true;
            *txn.catalog.table_mut(&table_name)? = table;
        }
        Ok(tids.len())
    })?;
    Ok(QueryResult::command(format!("DELETE {deleted}")))
}

/// `UPDATE t [[AS] alias] SET col = expr [, ...] [WHERE condition]`.
pub fn update(session: &mut Session, update: &ast::Update, cancel: &CancelToken) -> Result<QueryResult> {
    if update.from.is_some() || update.returning.is_some() || update.or.is_some() || update.limit.is_some() {
        return Err(Error::not_supported("UPDATE ... FROM / RETURNING is not supported yet"));
    }
    if !update.table.joins.is_empty() {
        return Err(Error::not_supported("UPDATE of a join is not supported"));
    }
    let (table_name, alias) = single_table(&update.table)?;
    let db = session.db.clone();
    let updated = db.write(|txn| {
        let mut table = txn.catalog.table(&table_name)?.clone();
        let matches = with_plan_context(session, &txn.catalog, |ctx| {
            let scope = table_scope(&table, &alias);
            let condition = update.selection.as_ref().map(|c| bind_condition(session, cancel, &scope, ctx, c)).transpose()?;
            let assignments = bind_assignments(&table, &scope, ctx, &update.assignments)?;
            run_init_plans_of(session, cancel, condition.iter().cloned().chain(assignments.iter().map(|(_, e)| e.clone())).collect())?;
            matching_rows(session, txn, &table, condition.as_ref(), cancel, |row| {
                let mut new_row = row.clone();
                for (column, expr) in &assignments {
                    new_row[*column] = expr.eval(row, &session.eval)?;
                }
                Ok(new_row)
            })
        })?;
        if matches.is_empty() {
            return Ok(0);
        }
        let (tids, rows): (Vec<Tid>, Vec<Vec<Datum>>) = matches.into_iter().unzip();
        heap::set_xmax(&db.pool, table.locator(), &tids, txn.xid)?;
        table.has_dead_rows = true;
        *txn.catalog.table_mut(&table_name)? = table.clone();
        // The new versions go through INSERT's path: NOT NULL, encoding, index entries.
        let types = table.column_types();
        let literals = rows
            .into_iter()
            .map(|row| row.into_iter().zip(&types).map(|(value, &data_type)| Expr::Literal { value, data_type }).collect())
            .collect();
        let plan = Plan::Pipeline(Pipeline { source: Source::Values(literals), steps: Vec::new(), workers: 0 });
        let (inserted, first_block) = insert_rows(session, txn, &table, &plan, true, cancel)?;
        maintain_indexes(session, txn, &table, first_block, &tids, None, cancel)?;
        Ok(inserted as usize)
    })?;
    Ok(QueryResult::command(format!("UPDATE {updated}")))
}

/// The table a DELETE or UPDATE names, and the name its columns are qualified by.
fn single_table(target: &ast::TableWithJoins) -> Result<(String, String)> {
    if !target.joins.is_empty() {
        return Err(Error::not_supported("DELETE or UPDATE of a join is not supported"));
    }
    match &target.relation {
        ast::TableFactor::Table { name, alias, args: None, .. } => {
            let table = object_name(name)?;
            let alias = alias.as_ref().map_or_else(|| table.clone(), |a| ident_name(&a.name));
            Ok((table, alias))
        }
        other => Err(Error::not_supported(format!("DELETE or UPDATE of {other}"))),
    }
}

fn table_scope(table: &TableMeta, alias: &str) -> Scope {
    Scope::new(
        table
            .columns
            .iter()
            .map(|c| ScopeColumn { table: Some(alias.to_string()), name: c.name.clone(), data_type: c.data_type })
            .collect(),
    )
}

/// A WHERE condition, which must be boolean as in PostgreSQL.
fn bind_condition(session: &Session, cancel: &CancelToken, scope: &Scope, ctx: &PlanContext, condition: &ast::Expr) -> Result<Expr> {
    let run = |query: &ast::Query, columns| {
        run_subquery(session, cancel, ctx, query, columns).map_err(|e| {
            // A subquery that names the target table's columns is correlated.
            let names_target = scope.columns.iter().any(|c| c.table.as_ref().is_some_and(|t| query.to_string().contains(&format!("{t}."))));
            if names_target && matches!(e.sqlstate, SqlState::UNDEFINED_TABLE | SqlState::UNDEFINED_COLUMN) {
                Error::not_supported("correlated subqueries in DELETE and UPDATE are not supported yet")
            } else {
                e
            }
        })
    };
    let condition = run_membership_subqueries(&run, condition)?;
    let bound = Binder::new(scope).planning(ctx).bind(&condition)?;
    match bound.data_type() {
        DataType::Bool => Ok(bound),
        other => Err(Error::new(
            SqlState::DATATYPE_MISMATCH,
            format!("argument of WHERE must be type boolean, not type {}", other.name()),
        )),
    }
}

/// The condition with each uncorrelated `[NOT] IN (subquery)` and `[NOT] EXISTS (subquery)`
/// in its boolean structure (AND, OR, NOT, parentheses) replaced by what the subquery
/// returned: an IN list of its values (same NULL logic as IN over the subquery) or a
/// boolean. A correlated subquery fails to plan on its own and is reported as such.
fn run_membership_subqueries(run: &SubqueryRunner, condition: &ast::Expr) -> Result<ast::Expr> {
    let rewrite = |e: &ast::Expr| run_membership_subqueries(run, e).map(Box::new);
    Ok(match condition {
        ast::Expr::Nested(inner) => ast::Expr::Nested(rewrite(inner)?),
        ast::Expr::UnaryOp { op, expr } => ast::Expr::UnaryOp { op: *op, expr: rewrite(expr)? },
        ast::Expr::BinaryOp { left, op, right } => ast::Expr::BinaryOp { left: rewrite(left)?, op: op.clone(), right: rewrite(right)? },
        ast::Expr::Exists { subquery, negated } => {
            let rows = run(subquery, None)?;
            ast::Expr::Value(ast::Value::Boolean(rows.is_empty() == *negated).into())
        }
        ast::Expr::InSubquery { expr, subquery, negated } => {
            let rows = run(subquery, Some(1))?;
            let list = rows.into_iter().map(|mut row| datum_literal(row.pop().unwrap_or(Datum::Null))).collect::<Result<_>>()?;
            match list {
                // `x IN (empty)` is false even for a NULL x; an empty IN list is not SQL.
                list if Vec::is_empty(&list) => ast::Expr::Value(ast::Value::Boolean(*negated).into()),
                list => ast::Expr::InList { expr: rewrite(expr)?, list, negated: *negated },
            }
        }
        other => other.clone(),
    })
}

/// Runs a subquery, given the number of columns it must return, if any.
type SubqueryRunner<'a> = dyn Fn(&ast::Query, Option<usize>) -> Result<Vec<Vec<Datum>>> + 'a;

/// Run an uncorrelated subquery of a DELETE or UPDATE condition.
fn run_subquery(session: &Session, cancel: &CancelToken, ctx: &PlanContext, query: &ast::Query, columns: Option<usize>) -> Result<Vec<Vec<Datum>>> {
    let planned = crate::planner::plan_query(query, ctx)?;
    if columns.is_some_and(|expected| planned.columns.len() > expected) {
        return Err(Error::syntax("subquery has too many columns"));
    }
    let exec = exec_context(session, cancel);
    let outcome = crate::statements::run_query_plan(&planned.plan, &exec);
    finish_context(session, &exec);
    outcome
}

/// A value as SQL text that binds back to the same value and type: `'text'::type`.
fn datum_literal(value: Datum) -> Result<ast::Expr> {
    let data_type = value.data_type();
    Ok(match value.to_pg_text() {
        None => ast::Expr::Value(ast::Value::Null.into()),
        Some(text) => ast::Expr::Cast {
            kind: ast::CastKind::DoubleColon,
            expr: Box::new(ast::Expr::Value(ast::Value::SingleQuotedString(text).into())),
            data_type: ast::DataType::Custom(ast::ObjectName::from(vec![ast::Ident::new(data_type.unwrap_or(DataType::Text).name())]), vec![]),
            format: None,
        },
    })
}

/// `SET col = expr, (a, b) = (x, y)`: each target column once, each value coerced to its
/// column's type (`DEFAULT` is the column's default).
fn bind_assignments(table: &TableMeta, scope: &Scope, ctx: &PlanContext, assignments: &[ast::Assignment]) -> Result<Vec<(usize, Expr)>> {
    let mut bound: Vec<(usize, Expr)> = Vec::new();
    for assignment in assignments {
        let pairs: Vec<(&ast::ObjectName, &ast::Expr)> = match (&assignment.target, &assignment.value) {
            (ast::AssignmentTarget::ColumnName(name), value) => vec![(name, value)],
            (ast::AssignmentTarget::Tuple(names), ast::Expr::Tuple(values)) if names.len() == values.len() => {
                names.iter().zip(values).collect()
            }
            (ast::AssignmentTarget::Tuple(_), _) => {
                return Err(Error::syntax("number of columns does not match number of values"));
            }
        };
        for (name, value) in pairs {
            let parts = &name.0;
            let column_name = match parts.last().and_then(|p| p.as_ident()) {
                Some(ident) if parts.len() == 1 => ident_name(ident),
                _ => return Err(Error::not_supported(format!("assignment to {name}"))),
            };
            let column = table.column_index(&column_name).ok_or_else(|| {
                Error::new(
                    SqlState::UNDEFINED_COLUMN,
                    format!("column \"{column_name}\" of relation \"{}\" does not exist", table.name),
                )
            })?;
            if bound.iter().any(|(c, _)| *c == column) {
                return Err(Error::new(SqlState::SYNTAX_ERROR, format!("multiple assignments to same column \"{column_name}\"")));
            }
            let meta = &table.columns[column];
            let expr = if is_default_keyword(value) {
                column_default(ctx, meta)?
            } else {
                assignment_coerce(Binder::new(scope).planning(ctx).bind(value)?, meta.data_type, &meta.name)?
            };
            bound.push((column, expr));
        }
    }
    Ok(bound)
}

/// Run the scalar subqueries of the statement's expressions once, before the scan, as a
/// query runs its init plans.
fn run_init_plans_of(session: &Session, cancel: &CancelToken, exprs: Vec<Expr>) -> Result<()> {
    let holder = Plan::Pipeline(Pipeline { source: Source::Values(vec![exprs]), steps: Vec::new(), workers: 0 });
    let ctx = exec_context(session, cancel);
    let outcome = weft_exec::expr::run_init_plans(&holder, &ctx);
    finish_context(session, &ctx);
    outcome
}

/// The rows of `table` the writer's snapshot sees for which `condition` is true, with
/// what `per_row` makes of each (decoded) row, in physical order.
fn matching_rows<T>(
    session: &Session,
    txn: &WriteTxn,
    table: &TableMeta,
    condition: Option<&Expr>,
    cancel: &CancelToken,
    mut per_row: impl FnMut(&Vec<Datum>) -> Result<T>,
) -> Result<Vec<(Tid, T)>> {
    let pool = &session.db.pool;
    let layout = RowLayout::new(&table.column_types());
    let snapshot = txn.catalog.snapshot();
    let blocks = pool.nblocks(table.locator(), ForkNumber::Main)?;
    let mut found = Vec::new();
    let mut row = Vec::with_capacity(table.columns.len());
    let mut seen = 0u64;
    heap::scan_blocks_with_tids(pool, table.locator(), 0..blocks, None, &snapshot, |tid, tuple| {
        seen += 1;
        if seen % 4096 == 0 {
            cancel.check()?;
        }
        row.clear();
        layout.decode_into(tuple, &mut row)?;
        if let Some(condition) = condition {
            if !matches!(condition.eval(&row, &session.eval)?, Datum::Bool(true)) {
                return Ok(true);
            }
        }
        found.push((tid, per_row(&row)?));
        Ok(true)
    })?;
    Ok(found)
}
