//! DELETE and UPDATE of one table, with `USING` / `FROM` joins and RETURNING.
//!
//! Both run inside the writer's transaction (writers are serialized) in two passes: the
//! first finds the rows to change (their TIDs and, for UPDATE, the new rows) and holds them
//! in memory, then the old rows get the statement's xid as their xmax and UPDATE inserts
//! the new versions at the end of the table through the INSERT path, which checks NOT NULL
//! and maintains every index. Because the first pass ends before anything is written, a
//! row is never seen twice (an UPDATE cannot chase its own new rows). If the statement
//! fails, its xid is recorded as aborted and the xmax it wrote means nothing, exactly as
//! the xmin of rows a failed INSERT wrote.
//!
//! The first pass is a serial scan of the target for a plain statement. With `USING` /
//! `FROM` it is a join: the target's visible rows, each carrying its TID in a hidden
//! column, are the first relation of a FROM clause that the join planner plans with the
//! listed items and WHERE like a SELECT's (hash joins, pushed-down filters); each joined
//! row names a target row and carries what SET and RETURNING read. A target row several
//! joined rows match is changed once (PostgreSQL's rule; which match wins is left open
//! there as here). Materializing the target keeps the join planner unchanged, at the cost
//! of holding the target's rows in memory while the join runs.
//!
//! Unique keys of the new rows are checked as PostgreSQL checks them, one row at a time
//! in the order the statement met them (`Replacements`): an old row replaced later still
//! clashes.

use std::collections::{BTreeSet, HashSet};

use sqlparser::ast;
use weft_access::catalog::TableMeta;
use weft_access::heap::{self, Tid};
use weft_common::parallel::CancelToken;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_exec::expr::{EvalContext, Expr};
use weft_exec::plan::{Pipeline, Plan, Source};
use weft_storage::{BlockNumber, ForkNumber, OffsetNumber};

use crate::api::QueryResult;
use crate::bind::{ident_name, object_name, Binder, Scope, ScopeColumn};
use crate::database::WriteTxn;
use crate::indexes::Replacements;
use crate::planner::{From, PlanContext};
use crate::returning::{aliased_table_reference, statement_result, Returning, HIDDEN_COLUMN_PREFIX};
use crate::session::Session;
use crate::statements::{
    assign_to_column, column_default, exec_context, finish_context, insert_rows, is_default_keyword, maintain_indexes,
    run_query_plan, with_plan_context,
};

/// `DELETE FROM t [[AS] alias] [USING from_list] [WHERE condition] [RETURNING ...]`.
pub fn delete(session: &mut Session, delete: &ast::Delete, cancel: &CancelToken) -> Result<QueryResult> {
    // PostgreSQL's grammar has no DELETE ... ORDER BY / LIMIT and no DELETE of a join.
    if !delete.order_by.is_empty() {
        return Err(Error::syntax("syntax error at or near \"ORDER\""));
    }
    if delete.limit.is_some() {
        return Err(Error::syntax("syntax error at or near \"LIMIT\""));
    }
    if delete.output.is_some() {
        return Err(Error::syntax("syntax error at or near \"OUTPUT\""));
    }
    if !delete.tables.is_empty() {
        return Err(Error::syntax("syntax error at or near \"FROM\""));
    }
    let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) = &delete.from;
    let [target] = from.as_slice() else { return Err(Error::syntax("syntax error at or near \",\"")) };
    let (table_name, alias) = single_table(target)?;
    let request = Request {
        from: delete.using.as_deref().unwrap_or_default(),
        selection: delete.selection.as_ref(),
        assignments: None,
        returning: delete.returning.as_ref(),
    };
    let db = session.db.clone();
    let (deleted, returning, returned) = session.write(|txn| {
        let mut table = txn.catalog.table(&table_name)?.clone();
        let (changes, returning) = with_plan_context(session, &txn.catalog, |ctx| {
            Finder { session, txn, ctx, table: &table, alias: &alias, cancel }.find_changes(&request)
        })
        .map_err(|e| aliased_table_reference(e, &table_name, &alias))?;
        let tids: Vec<Tid> = changes.iter().map(|c| c.tid).collect();
        if !tids.is_empty() {
            heap::set_xmax(&db.pool, table.locator(), &tids, txn.xid)?;
            txn.touch(table.locator());
            table.row_count = table.row_count.saturating_sub(tids.len() as u64);
            table.has_dead_rows = true;
            *txn.catalog.table_mut(&table_name)? = table.clone();
            crate::constraints::check_removed_rows(session, txn, &table, &tids, crate::constraints::Removal::Delete, cancel)?;
        }
        Ok((tids.len(), returning, changes.into_iter().filter_map(|c| c.returned).collect()))
    })?;
    Ok(statement_result(returning, returned, format!("DELETE {deleted}")))
}

/// `UPDATE t [[AS] alias] SET col = expr [, ...] [FROM from_list] [WHERE condition]
/// [RETURNING ...]`.
pub fn update(session: &mut Session, update: &ast::Update, cancel: &CancelToken) -> Result<QueryResult> {
    if !update.order_by.is_empty() {
        return Err(Error::syntax("syntax error at or near \"ORDER\""));
    }
    if update.limit.is_some() {
        return Err(Error::syntax("syntax error at or near \"LIMIT\""));
    }
    if update.or.is_some() || update.output.is_some() {
        return Err(Error::syntax("syntax error at or near \"UPDATE\""));
    }
    let from: &[ast::TableWithJoins] = match &update.from {
        None => &[],
        Some(ast::UpdateTableFromKind::AfterSet(from)) => from,
        Some(ast::UpdateTableFromKind::BeforeSet(_)) => return Err(Error::syntax("syntax error at or near \"FROM\"")),
    };
    let (table_name, alias) = single_table(&update.table)?;
    let request = Request {
        from,
        selection: update.selection.as_ref(),
        assignments: Some(&update.assignments),
        returning: update.returning.as_ref(),
    };
    let db = session.db.clone();
    let (updated, returning, returned) = session.write(|txn| {
        let mut table = txn.catalog.table(&table_name)?.clone();
        let (changes, returning) = with_plan_context(session, &txn.catalog, |ctx| {
            Finder { session, txn, ctx, table: &table, alias: &alias, cancel }.find_changes(&request)
        })
        .map_err(|e| aliased_table_reference(e, &table_name, &alias))?;
        if changes.is_empty() {
            return Ok((0, returning, Vec::new()));
        }
        let mut tids = Vec::with_capacity(changes.len());
        let mut rows = Vec::with_capacity(changes.len());
        let mut returned = Vec::new();
        for change in changes {
            tids.push(change.tid);
            rows.push(change.new_row);
            returned.extend(change.returned);
        }
        heap::set_xmax(&db.pool, table.locator(), &tids, txn.xid)?;
        table.has_dead_rows = true;
        *txn.catalog.table_mut(&table_name)? = table.clone();
        // The new versions are kept for the foreign keys referencing the table (ON UPDATE).
        let new_versions = if crate::constraints::is_referenced(&txn.catalog, &table.name) { rows.clone() } else { Vec::new() };
        let inserted = write_rows(session, txn, &table, rows, &Replacements::in_order(&tids), cancel)?;
        crate::constraints::check_removed_rows(session, txn, &table, &tids, crate::constraints::Removal::Update(&new_versions), cancel)?;
        Ok((inserted as usize, returning, returned))
    })?;
    Ok(statement_result(returning, returned, format!("UPDATE {updated}")))
}

/// Insert full rows of `table` through INSERT's path (NOT NULL, encoding, index entries
/// with unique checks); `replaced` says which old rows the statement deleted and when.
pub(crate) fn write_rows(
    session: &Session,
    txn: &mut WriteTxn,
    table: &TableMeta,
    rows: Vec<Vec<Datum>>,
    replaced: &Replacements,
    cancel: &CancelToken,
) -> Result<u64> {
    let types = table.column_types();
    let literals = rows
        .into_iter()
        .map(|row| row.into_iter().zip(&types).map(|(value, &data_type)| Expr::Literal { value, data_type }).collect())
        .collect();
    let plan = Plan::Pipeline(Pipeline { source: Source::Values(literals), steps: Vec::new(), workers: 0 });
    let (inserted, first_block) = insert_rows(session, txn, table, &plan, true, cancel)?;
    maintain_indexes(session, txn, table, first_block, replaced, None, cancel)?;
    Ok(inserted)
}

/// What a DELETE or UPDATE asks for besides its target table.
struct Request<'a> {
    /// `USING` / `FROM` items joined to the target; empty for a plain statement.
    from: &'a [ast::TableWithJoins],
    selection: Option<&'a ast::Expr>,
    /// UPDATE's SET list; `None` for DELETE.
    assignments: Option<&'a [ast::Assignment]>,
    returning: Option<&'a Vec<ast::SelectItem>>,
}

/// One row the statement changes: where it is, its new version (UPDATE; empty for
/// DELETE) and its RETURNING row.
struct Change {
    tid: Tid,
    new_row: Vec<Datum>,
    returned: Option<Vec<Datum>>,
}

/// A DELETE or UPDATE being planned: where, and against which table.
struct Finder<'a> {
    session: &'a Session,
    txn: &'a WriteTxn,
    ctx: &'a PlanContext<'a>,
    table: &'a TableMeta,
    alias: &'a str,
    cancel: &'a CancelToken,
}

/// The statement's clauses bound over its scope.
struct Bound {
    condition: Option<Expr>,
    assignments: Option<Vec<(usize, Expr)>>,
    returning: Option<Returning>,
}

impl Bound {
    /// The expressions the statement evaluates itself, outside any plan.
    fn statement_exprs(&self) -> impl Iterator<Item = &Expr> {
        self.assignments.iter().flatten().map(|(_, e)| e).chain(self.returning.iter().flat_map(|r| &r.exprs))
    }

    /// The change to the target row at `tid`, given the statement's row.
    fn change(&self, tid: Tid, row: &[Datum], width: usize, eval: &EvalContext) -> Result<Change> {
        change_of(tid, row, width, self.assignments.as_deref(), self.returning.as_ref(), eval)
    }
}

impl Finder<'_> {
    /// The rows the statement changes, in physical order (each once), and its bound RETURNING.
    fn find_changes(&self, request: &Request) -> Result<(Vec<Change>, Option<Returning>)> {
        if !request.from.is_empty() {
            return self.find_joined_changes(request);
        }
        let bound = self.bind(&table_scope(self.table, self.alias), request)?;
        let init_plans = bound.condition.iter().chain(bound.statement_exprs()).cloned().collect();
        run_init_plans_of(self.session, self.cancel, init_plans)?;
        let width = self.table.columns.len();
        let changes = matching_rows(self.session, self.txn, self.table, bound.condition.as_ref(), self.cancel, |tid, row| {
            bound.change(tid, row, width, &self.session.eval)
        })?;
        Ok((changes, bound.returning))
    }

    fn bind(&self, scope: &Scope, request: &Request) -> Result<Bound> {
        let (session, ctx) = (self.session, self.ctx);
        Ok(Bound {
            // Evaluated in PostgreSQL's order, as a SELECT's WHERE is.
            condition: request.selection.map(|c| bind_condition(session, self.cancel, scope, ctx, c)).transpose()?.map(crate::exprutil::order_quals),
            assignments: request.assignments.map(|a| bind_assignments(self.table, scope, ctx, a)).transpose()?,
            returning: Returning::bind(request.returning, scope, ctx)?,
        })
    }

    /// `UPDATE ... FROM` / `DELETE ... USING`: the target's visible rows, each with its TID
    /// in a hidden column, become the first relation of a join planned by the join planner
    /// (`join.rs`) with the listed items and WHERE; each joined row names a target row and
    /// carries the values SET and RETURNING read. A target row that several joined rows
    /// match is changed once, with the first of them (PostgreSQL leaves the choice open).
    fn find_joined_changes(&self, request: &Request) -> Result<(Vec<Change>, Option<Returning>)> {
        let (session, table, alias) = (self.session, self.table, self.alias);
        let types = table.column_types();
        let rows = matching_rows(session, self.txn, table, None, self.cancel, |tid, row| {
            let mut exprs: Vec<Expr> =
                row.iter().zip(&types).map(|(value, &data_type)| Expr::Literal { value: value.clone(), data_type }).collect();
            exprs.push(Expr::Literal { value: Datum::Int8(tid_value(tid)), data_type: DataType::Int8 });
            Ok(exprs)
        })?;
        let mut scope = table_scope(table, alias);
        let width = scope.columns.len();
        let hidden = ScopeColumn { table: Some(alias.to_string()), name: format!("{HIDDEN_COLUMN_PREFIX}tid"), data_type: DataType::Int8, type_modifier: None };
        scope.columns.push(hidden);
        let from = crate::join::analyze_from_with_target(From { source: Source::Values(rows), scope }, request.from, self.ctx)?;
        let mut bound = self.bind(&from.scope, request)?;
        run_init_plans_of(session, self.cancel, bound.statement_exprs().cloned().collect())?;
        // Every column of the scope, in scope order: the rows come out as scope rows.
        let used: BTreeSet<usize> = (0..from.scope.local_width()).collect();
        let input = crate::join::plan_joins(from, bound.condition.take(), &[], &used, false, self.ctx)?;
        let plan = Plan::Pipeline(Pipeline { source: input.source, steps: input.steps, workers: input.workers });
        let exec = exec_context(session, self.cancel);
        let outcome = run_query_plan(&plan, &exec);
        finish_context(session, &exec);
        let mut seen = HashSet::new();
        let mut changes = Vec::new();
        for row in outcome? {
            let Datum::Int8(value) = row[width] else { return Err(Error::internal("a joined target row without its TID")) };
            let tid = tid_of_value(value);
            if seen.insert(tid) {
                changes.push(bound.change(tid, &row, width, &session.eval)?);
            }
        }
        changes.sort_by_key(|c| c.tid);
        Ok((changes, bound.returning))
    }
}

/// The change to the target row at `tid`, given the statement's row (`row`, whose first
/// `width` values are the target's columns).
fn change_of(
    tid: Tid,
    row: &[Datum],
    width: usize,
    assignments: Option<&[(usize, Expr)]>,
    returning: Option<&Returning>,
    eval: &EvalContext,
) -> Result<Change> {
    let Some(assignments) = assignments else {
        return Ok(Change { tid, new_row: Vec::new(), returned: returning.map(|r| r.project(row, eval)).transpose()? });
    };
    let mut new_row = row[..width].to_vec();
    for (column, expr) in assignments {
        new_row[*column] = expr.eval(row, eval)?;
    }
    // RETURNING sees the new version of the target row beside the other relations' columns.
    let returned = returning
        .map(|r| {
            let mut seen = row.to_vec();
            seen[..width].clone_from_slice(&new_row);
            r.project(&seen, eval)
        })
        .transpose()?;
    Ok(Change { tid, new_row, returned })
}

/// A TID as one int8 value (block in the high bits), and back.
fn tid_value(tid: Tid) -> i64 {
    ((tid.block as i64) << 16) | tid.offset as i64
}

fn tid_of_value(value: i64) -> Tid {
    Tid { block: (value >> 16) as BlockNumber, offset: (value & 0xffff) as OffsetNumber }
}

/// The table a DELETE or UPDATE names, and the name its columns are qualified by.
fn single_table(target: &ast::TableWithJoins) -> Result<(String, String)> {
    if !target.joins.is_empty() {
        return Err(Error::syntax("syntax error at or near \"JOIN\""));
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

pub(crate) fn table_scope(table: &TableMeta, alias: &str) -> Scope {
    Scope::new(
        table
            .columns
            .iter()
            .map(|c| ScopeColumn { table: Some(alias.to_string()), name: c.name.clone(), data_type: c.data_type, type_modifier: c.type_modifier })
            .collect(),
    )
}

/// A WHERE condition, which must be boolean as in PostgreSQL.
pub(crate) fn bind_condition(session: &Session, cancel: &CancelToken, scope: &Scope, ctx: &PlanContext, condition: &ast::Expr) -> Result<Expr> {
    let run = |query: &ast::Query, columns| match run_subquery(session, cancel, ctx, query, columns) {
        Ok(rows) => Ok(Some(rows)),
        // A subquery that names the target table's columns (qualified or not) is
        // correlated: the binder makes it a subplan, run per target row, and reports the
        // name itself if the target lacks it too.
        Err(e) if matches!(e.sqlstate, SqlState::UNDEFINED_TABLE | SqlState::UNDEFINED_COLUMN) => Ok(None),
        Err(e) => Err(e),
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
        ast::Expr::Exists { subquery, negated } => match run(subquery, None)? {
            Some(rows) => ast::Expr::Value(ast::Value::Boolean(rows.is_empty() == *negated).into()),
            None => condition.clone(),
        },
        // A row IN is left to the binder, as a correlated subquery is.
        ast::Expr::InSubquery { expr, .. } if crate::bind::row_items(expr).len() > 1 => condition.clone(),
        ast::Expr::InSubquery { expr, subquery, negated } => {
            let Some(rows) = run(subquery, Some(1))? else { return Ok(condition.clone()) };
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
/// `None` for a correlated subquery, left to the binder.
type SubqueryRunner<'a> = dyn Fn(&ast::Query, Option<usize>) -> Result<Option<Vec<Vec<Datum>>>> + 'a;

/// Run an uncorrelated subquery of a DELETE or UPDATE condition.
fn run_subquery(session: &Session, cancel: &CancelToken, ctx: &PlanContext, query: &ast::Query, columns: Option<usize>) -> Result<Vec<Vec<Datum>>> {
    let planned = crate::planner::plan_query(query, ctx)?;
    if columns.is_some_and(|expected| planned.columns.len() > expected) {
        return Err(Error::syntax("subquery has too many columns"));
    }
    let exec = exec_context(session, cancel);
    let outcome = run_query_plan(&planned.plan, &exec);
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
pub(crate) fn bind_assignments(table: &TableMeta, scope: &Scope, ctx: &PlanContext, assignments: &[ast::Assignment]) -> Result<Vec<(usize, Expr)>> {
    let mut bound: Vec<(usize, Expr)> = Vec::new();
    for assignment in assignments {
        crate::srf::refuse_in_clause(Some(&assignment.value), "UPDATE")?;
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
                assign_to_column(Binder::new(scope).planning(ctx).bind(value)?, meta)?
            };
            bound.push((column, expr));
        }
    }
    Ok(bound)
}

/// Run the scalar subqueries of the statement's expressions once, before the scan, as a
/// query runs its init plans.
pub(crate) fn run_init_plans_of(session: &Session, cancel: &CancelToken, exprs: Vec<Expr>) -> Result<()> {
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
    mut per_row: impl FnMut(Tid, &[Datum]) -> Result<T>,
) -> Result<Vec<T>> {
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
        found.push(per_row(tid, &row)?);
        Ok(true)
    })?;
    Ok(found)
}
