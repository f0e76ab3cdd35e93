//! Planning: a bound SELECT → a `weft_exec::Plan` and its output columns.
//!
//! Shape of what comes out, bottom up: one pipeline (source, WHERE filter, projection or
//! aggregate input), an optional aggregate (GROUP BY / aggregates, then HAVING and the
//! select list over its output), an optional sort, an optional limit. A heap scan decodes
//! only the columns the query uses, and `access_path.rs` may replace it by an index scan
//! (and drop the sort an index's order makes unnecessary). Parallelism is chosen per
//! pipeline from the source's size, as PostgreSQL's `compute_parallel_worker` does.

use std::collections::{BTreeMap, BTreeSet};

use sqlparser::ast::{self, SetExpr, Spanned, TableFactor};
use weft_access::catalog::Catalog;
use weft_access::Snapshot;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_exec::expr::{self as ex, EvalContext, Expr};
use weft_exec::plan::{AggregateCall, AggregateOrderKey, HeapSource, Pipeline, Plan, RunTimeLimit, ScanLabel, SortKey, SortPlan, Source, Step, WithTies};
use weft_storage::{BufferPool, ForkNumber};

use crate::api::ColumnInfo;
use crate::window::{contains_window, WindowContext};
use crate::bind::{column_name, contains_aggregate, expanded_column, ident_name, object_name, output_modifier, AggregateContext, Binder, Scope, ScopeColumn};
use crate::exprutil::{columns_used, is_volatile, remap_columns};
use crate::settings::Settings;

pub struct PlanContext<'a> {
    pub catalog: &'a Catalog,
    pub pool: &'a BufferPool,
    pub snapshot: &'a Snapshot,
    pub settings: &'a Settings,
    pub eval: &'a EvalContext,
    /// Every session's running index build, for `pg_stat_progress_create_index`.
    pub progress: &'a crate::session::ProgressRegistry,
    /// Init plans (scalar subqueries) numbered so far in this statement.
    pub init_plan_count: std::cell::Cell<usize>,
    /// While planning a subquery: the query around it, whose columns become parameters
    /// (`subplan.rs`).
    pub outer: Option<&'a crate::subplan::OuterQuery<'a>>,
}

impl<'a> PlanContext<'a> {
    /// The context a nested query is planned in: under `outer` (whose columns it reads as
    /// parameters), or on its own with `None`. Its init plans are numbered after this
    /// context's; the caller copies `init_plan_count` back when it is done.
    pub fn nested<'b>(&'b self, outer: Option<&'b crate::subplan::OuterQuery<'b>>) -> PlanContext<'b> {
        PlanContext {
            catalog: self.catalog,
            pool: self.pool,
            snapshot: self.snapshot,
            settings: self.settings,
            eval: self.eval,
            progress: self.progress,
            init_plan_count: std::cell::Cell::new(self.init_plan_count.get()),
            outer,
        }
    }
}

pub struct PlannedQuery {
    pub plan: Plan,
    pub columns: Vec<ColumnInfo>,
    /// ORDER BY expressions that are not output columns: the plan computes them after the
    /// visible columns, and they are projected away after the sort.
    pub hidden: Vec<ast::Expr>,
    /// The types of the hidden columns.
    pub hidden_types: Vec<DataType>,
    /// A SELECT's visible select-list expressions, `*` expanded, by output position: where
    /// ORDER BY finds an expression it repeats. Empty for other query bodies.
    pub select_items: Vec<ast::Expr>,
}

/// A generated row counts as this many bytes of table when deciding on parallelism, so
/// `min_parallel_table_scan_size` (8MB) puts the threshold near 100k rows.
const SERIES_ROW_BYTES_ESTIMATE: u128 = 80;

pub fn plan_query(query: &ast::Query, ctx: &PlanContext) -> Result<PlannedQuery> {
    if query.with.is_some() {
        let (inlined, _registration) = crate::cte::inline_with(query)?;
        return plan_query(&inlined, ctx);
    }
    if !query.locks.is_empty() {
        return Err(Error::not_supported("FOR UPDATE / FOR SHARE are not supported"));
    }
    let with_ties = query.fetch.as_ref().is_some_and(|f| f.with_ties);
    if query.fetch.as_ref().is_some_and(|f| f.percent) {
        return Err(Error::syntax("syntax error at or near \"percent\""));
    }
    if with_ties && query.order_by.is_none() {
        return Err(Error::syntax("WITH TIES cannot be specified without ORDER BY clause"));
    }
    let order_exprs: &[ast::OrderByExpr] = match query.order_by.as_ref().map(|o| &o.kind) {
        Some(ast::OrderByKind::Expressions(exprs)) => exprs,
        _ => &[],
    };
    let mut planned = plan_body(query.body.as_ref(), order_exprs, ctx)?;
    let distinct_on = matches!(query.body.as_ref(), SetExpr::Select(s) if matches!(s.distinct, Some(ast::Distinct::On(_))));
    if let (true, Plan::Unique { output_width, .. }) = (distinct_on, &mut planned.plan) {
        // SELECT DISTINCT ON sorted its rows by the ORDER BY already (`distinct_on.rs`).
        *output_width = planned.columns.len();
        planned.hidden.clear();
        planned.hidden_types.clear();
    } else if let Some(order_by) = &query.order_by {
        if !matches!(order_by.kind, ast::OrderByKind::Expressions(_)) {
            return Err(Error::not_supported("ORDER BY ALL"));
        }
        planned.plan = plan_order_by(planned.plan, &planned.columns, &planned.hidden, &planned.hidden_types, &planned.select_items, order_exprs)?;
        if !with_ties {
            // WITH TIES compares the rows' sort keys, constant ones included, which a sort
            // keeps and an index scan does not.
            planned.plan = drop_constant_sort_keys(planned.plan);
            planned.plan = crate::access_path::use_index_order(planned.plan, None, ctx);
        }
        planned.hidden.clear();
        planned.hidden_types.clear();
    }
    // FETCH FIRST n ROWS ONLY is LIMIT n; without n, one row.
    let one_row = ast::Expr::value(ast::Value::Number("1".to_string(), false));
    let fetch = query.fetch.as_ref().map(|f| f.quantity.as_ref().unwrap_or(&one_row));
    if query.limit_clause.is_some() || fetch.is_some() {
        let (limit, offset) = match &query.limit_clause {
            Some(ast::LimitClause::LimitOffset { limit, offset, limit_by }) => {
                if !limit_by.is_empty() {
                    return Err(Error::not_supported("LIMIT BY"));
                }
                if limit.is_some() && fetch.is_some() {
                    return Err(Error::syntax("syntax error at or near \"FETCH\""));
                }
                (limit.as_ref().or(fetch), offset.as_ref().map(|o| &o.value))
            }
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
            None => (fetch, None),
        };
        let limit = limit.map(|e| limit_count(e, "LIMIT", ctx)).transpose()?;
        let offset = offset.map(|e| limit_count(e, "OFFSET", ctx)).transpose()?;
        let run_time = match (&limit, &offset) {
            (Some(LimitCount::AtRunTime(_)), _) | (_, Some(LimitCount::AtRunTime(_))) => {
                let expr = |count: &Option<LimitCount>| match count {
                    Some(LimitCount::AtRunTime(e)) => Some(e.clone()),
                    _ => None,
                };
                Some(Box::new(RunTimeLimit { limit: expr(&limit), offset: expr(&offset) }))
            }
            _ => None,
        };
        let known = |count: Option<LimitCount>| match count {
            Some(LimitCount::Known(n)) => n,
            _ => None,
        };
        let (limit, offset) = (known(limit), known(offset).unwrap_or(0));
        if with_ties {
            let ties = with_ties_over_sort(&mut planned.plan, limit, &run_time)?;
            planned.plan = Plan::Limit { input: Box::new(planned.plan), limit, offset, run_time, ties: Some(Box::new(ties)) };
            crate::unread_outputs::mark_read_subquery_outputs(&mut planned.plan);
            return Ok(planned);
        }
        if let (Some(limit), None) = (limit, &run_time) {
            stop_after_rows(&mut planned.plan, limit.saturating_add(offset));
        }
        if let (Plan::Sort(_), Some(limit), None) = (&planned.plan, limit, &run_time) {
            planned.plan = crate::access_path::use_index_order(planned.plan, Some(limit.saturating_add(offset)), ctx);
        }
        if let (Plan::Sort(sort), Some(limit), None) = (&mut planned.plan, limit, &run_time) {
            // Only the first offset + limit rows of the sort are wanted: a top-N sort.
            sort.bound = Some(limit.saturating_add(offset));
        }
        planned.plan = postpone_subplans_past_sort(planned.plan);
        planned.plan = Plan::Limit { input: Box::new(planned.plan), limit, offset, run_time, ties: None };
    }
    crate::unread_outputs::mark_read_subquery_outputs(&mut planned.plan);
    Ok(planned)
}

/// Output columns holding a subplan that the sort does not order by, computed after the
/// sort under a LIMIT instead of for every row sorted (PostgreSQL's
/// `make_sort_input_target` postpones such costly expressions past a bounded sort the
/// same way): the sort carries the columns they read, and a projection above it, which
/// the LIMIT stops pulling from, runs them for the rows kept only. EXPLAIN shows that
/// projection as a `Result` node.
fn postpone_subplans_past_sort(plan: Plan) -> Plan {
    let Plan::Sort(mut sort) = plan else { return plan };
    let Plan::Pipeline(pipeline) = sort.input.as_mut() else { return Plan::Sort(sort) };
    let Some(Step::Project(exprs)) = pipeline.steps.last_mut() else { return Plan::Sort(sort) };
    let postponed: Vec<usize> = (0..sort.output_width.min(exprs.len()))
        .filter(|&i| !sort.keys.iter().any(|k| k.column == i))
        .filter(|&i| {
            let (mut subplan, mut volatile) = (false, false);
            exprs[i].for_each_node(&mut |e| match e {
                Expr::SubPlan { .. } => subplan = true,
                Expr::Function { func, .. } => volatile |= func.is_volatile(),
                _ => {}
            });
            subplan && !volatile
        })
        .collect();
    if postponed.is_empty() || exprs.len() != sort.types.len() {
        return Plan::Sort(sort);
    }
    // The sorted row keeps the other columns, then the columns the postponed
    // expressions read.
    let kept: Vec<usize> = (0..exprs.len()).filter(|i| !postponed.contains(i)).collect();
    let position: BTreeMap<usize, usize> = kept.iter().enumerate().map(|(n, &i)| (i, n)).collect();
    let mut carried: BTreeMap<usize, usize> = BTreeMap::new();
    let mut carried_exprs = Vec::new();
    for &i in &postponed {
        exprs[i].for_each_node(&mut |e| {
            if let Expr::Column { index, data_type } = e {
                if !carried.contains_key(index) {
                    carried.insert(*index, kept.len() + carried_exprs.len());
                    carried_exprs.push(Expr::Column { index: *index, data_type: *data_type });
                }
            }
        });
    }
    let after: Vec<Expr> = (0..sort.output_width)
        .map(|i| match position.get(&i) {
            Some(&n) => Expr::Column { index: n, data_type: sort.types[i] },
            None => {
                let mut expr = exprs[i].clone();
                remap_columns(&mut expr, &carried);
                expr
            }
        })
        .collect();
    let mut sorted_exprs: Vec<Expr> = kept.iter().map(|&i| exprs[i].clone()).collect();
    sorted_exprs.extend(carried_exprs);
    sort.types = sorted_exprs.iter().map(Expr::data_type).collect();
    sort.output_width = sorted_exprs.len();
    for key in &mut sort.keys {
        key.column = position[&key.column];
    }
    *exprs = sorted_exprs;
    let sorted = Plan::Sort(sort);
    Plan::Pipeline(Pipeline {
        source: Source::Subquery { plan: Box::new(sorted), label: ScanLabel::default() },
        steps: vec![Step::Project(after)],
        workers: 0,
    })
}

/// A LIMIT right above the scan of a recursive CTE or a LATERAL nested loop (no filter, no
/// sort in between): the recursion or the loop stops once it has produced the rows wanted,
/// as PostgreSQL's pull-based execution stops asking (so a LIMIT ends an endless recursion
/// there too, and a LIMIT over a huge LATERAL join does not hold all its rows).
fn stop_after_rows(plan: &mut Plan, rows: u64) {
    if let Plan::ProjectSet(ps) = plan {
        if ps.output.iter().all(|s| matches!(s, Step::Project(_))) {
            ps.stop_after = Some(ps.stop_after.map_or(rows, |n| n.min(rows)));
        }
        return;
    }
    let Plan::Pipeline(Pipeline { source: Source::Subquery { plan: inner, .. }, steps, .. }) = plan else { return };
    if !steps.iter().all(|s| matches!(s, Step::Project(_))) {
        return;
    }
    match inner.as_mut() {
        Plan::RecursiveUnion(ru) => ru.stop_after = Some(ru.stop_after.map_or(rows, |n| n.min(rows))),
        Plan::NestLoop(nl) => nl.stop_after = Some(nl.stop_after.map_or(rows, |n| n.min(rows))),
        other => stop_after_rows(other, rows),
    }
}

/// `FETCH FIRST n ROWS WITH TIES` over `sorted`, the query's ORDER BY: the sort stays
/// unbounded (a top-N sort would drop the ties) and keeps its hidden ORDER BY columns, which
/// the Limit compares and then cuts.
fn with_ties_over_sort(sorted: &mut Plan, limit: Option<u64>, run_time: &Option<Box<RunTimeLimit>>) -> Result<WithTies> {
    if limit.is_none() && run_time.as_ref().is_none_or(|r| r.limit.is_none()) {
        return Err(Error::new(
            SqlState::INVALID_ROW_COUNT_IN_LIMIT_CLAUSE,
            "row count cannot be null in FETCH FIRST ... WITH TIES clause",
        ));
    }
    let Plan::Sort(sort) = sorted else {
        return Err(Error::not_supported("FETCH ... WITH TIES with SELECT DISTINCT ON"));
    };
    let ties = WithTies { keys: sort.keys.clone(), output_width: sort.output_width };
    sort.output_width = sort.types.len();
    Ok(ties)
}

/// The rows of a query body (before its ORDER BY and LIMIT); `order_by` lets a SELECT
/// compute sort keys that are not in its select list.
pub(crate) fn plan_body(body: &SetExpr, order_by: &[ast::OrderByExpr], ctx: &PlanContext) -> Result<PlannedQuery> {
    match body {
        SetExpr::Select(select) => plan_select(select, order_by, ctx),
        SetExpr::Values(values) => plan_values(values, ctx),
        SetExpr::Query(inner) => plan_query(inner, ctx),
        SetExpr::SetOperation { op, set_quantifier, left, right } => {
            crate::setop::plan_set_operation(op, set_quantifier, left, right, ctx)
        }
        other => Err(Error::not_supported(format!("query form not supported: {other}"))),
    }
}

/// A LIMIT or OFFSET count: known while planning, or only once the statement runs.
enum LimitCount {
    /// NULL (no limit) or a count.
    Known(Option<u64>),
    /// An int8 expression reading a scalar subquery (or, inside a correlated subquery, a
    /// column of the query around it), evaluated when the Limit node starts.
    AtRunTime(Expr),
}

/// A LIMIT/OFFSET value: any int8 expression without columns of its own query; NULL means
/// no limit (an offset of 0). A constant is evaluated now, as PostgreSQL's planner folds
/// it; one reading a subquery becomes part of the plan.
fn limit_count(expr: &ast::Expr, what: &str, ctx: &PlanContext) -> Result<LimitCount> {
    let scope = Scope::default();
    let bound = Binder::new(&scope).planning(ctx).bind(expr)?;
    // A quoted constant is parsed as bigint, as PostgreSQL's unknown-type literal; numeric
    // and float8 values are rounded (PostgreSQL's assignment casts).
    let string_literal = matches!(bound, Expr::Literal { value: Datum::Text(_), .. });
    let from = bound.data_type();
    if !from.is_numeric_family() && !string_literal && !bound.is_null_literal() {
        return Err(Error::new(
            SqlState::DATATYPE_MISMATCH,
            format!("argument of {what} must be type bigint, not type {}", from.name()),
        ));
    }
    let rounded = matches!(from, DataType::Numeric | DataType::Float8);
    let bound = ex::coerce(bound, DataType::Int8, string_literal || rounded)?;
    let mut at_run_time = false;
    crate::exprutil::walk(&bound, &mut |e| {
        at_run_time |= matches!(e, Expr::ScalarSubquery(_) | Expr::SubPlan { .. } | Expr::Param { .. })
    });
    if at_run_time {
        return Ok(LimitCount::AtRunTime(bound));
    }
    // Evaluated now by the executor's rules, so the errors are the same.
    let is_limit = what == "LIMIT";
    let counts = if is_limit {
        RunTimeLimit { limit: Some(bound), offset: None }
    } else {
        RunTimeLimit { limit: None, offset: Some(bound) }
    };
    let (limit, offset) = counts.evaluate(None, 0, ctx.eval)?;
    Ok(LimitCount::Known(if is_limit { limit } else { Some(offset) }))
}

/// A constant as PostgreSQL's parser reads one (an `A_Const`, where a minus sign before a
/// number is part of it): `Some(Ok(n))` for an integer, `Some(Err(()))` for any other.
fn clause_constant(e: &ast::Expr) -> Option<std::result::Result<i64, ()>> {
    let number = |n: &str| match n.parse::<i32>() {
        Ok(v) if n.bytes().all(|b| b.is_ascii_digit()) => Ok(i64::from(v)),
        // Past int4 PostgreSQL's lexer makes a numeric: not an integer constant.
        _ => Err(()),
    };
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => Some(number(n)),
            ast::Value::Placeholder(_) => None,
            _ => Some(Err(())),
        },
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => match expr.as_ref() {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => Some(number(n).map(|v| -v)),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// The 0-based select-list item a constant in ORDER BY, GROUP BY or DISTINCT ON names
/// (`clause` says which): an integer position, or an error as in PostgreSQL's
/// `findTargetlistEntrySQL92`.
pub(crate) fn select_list_position(e: &ast::Expr, len: usize, clause: &str) -> Result<usize> {
    match clause_constant(e) {
        Some(Ok(n)) if n >= 1 && n as usize <= len => Ok(n as usize - 1),
        Some(Ok(n)) => Err(Error::new(SqlState::INVALID_COLUMN_REFERENCE, format!("{clause} position {n} is not in select list"))),
        _ => Err(Error::new(SqlState::SYNTAX_ERROR, format!("non-integer constant in {clause}"))),
    }
}

/// Whether [`select_list_position`] reads `e` (rather than it being an expression).
pub(crate) fn is_clause_constant(e: &ast::Expr) -> bool {
    clause_constant(e).is_some()
}

pub(crate) fn plan_order_by(
    input: Plan,
    columns: &[ColumnInfo],
    hidden: &[ast::Expr],
    hidden_types: &[DataType],
    select_items: &[ast::Expr],
    exprs: &[ast::OrderByExpr],
) -> Result<Plan> {
    let mut keys = Vec::with_capacity(exprs.len());
    for item in exprs {
        let column = match &item.expr {
            e if clause_constant(e).is_some() => select_list_position(e, columns.len(), "ORDER BY")?,
            ast::Expr::Identifier(ident) if columns.iter().any(|c| c.name == ident_name(ident)) => {
                let name = ident_name(ident);
                let position = columns.iter().position(|c| c.name == name).expect("checked");
                // Two output columns of the name are fine only if they are the same expression.
                let differing = (position + 1..select_items.len().min(columns.len()))
                    .any(|i| columns[i].name == name && select_items[i] != select_items[position]);
                if differing {
                    let error = Error::new(SqlState::AMBIGUOUS_COLUMN, format!("ORDER BY \"{name}\" is ambiguous"));
                    return Err(crate::error_cursor::place_at(error, ident.span));
                }
                position
            }
            other => match select_items.iter().position(|e| e == other) {
                Some(position) => position,
                None => match hidden.iter().position(|e| e == other) {
                    Some(j) => columns.len() + j,
                    None => return Err(Error::internal(format!("ORDER BY {other} was not planned"))),
                },
            },
        };
        let (descending, nulls_first) = order_direction(item)?;
        keys.push(SortKey { column, descending, nulls_first });
    }
    let types = columns.iter().map(|c| c.data_type).chain(hidden_types.iter().copied()).collect();
    Ok(Plan::Sort(SortPlan { input: Box::new(input), keys, types, bound: None, output_width: columns.len(), read_outputs: None }))
}

/// ORDER BY keys that are the same for every row (a constant, an uncorrelated scalar
/// subquery, operators and casts over those) order nothing, and PostgreSQL drops them
/// (the pathkey of a constant is redundant). With no key left the rows need no sort, so a
/// LIMIT above stops its input early instead of waiting for all of it (`ORDER BY
/// (SELECT 1) LIMIT 5` over a huge join).
fn drop_constant_sort_keys(plan: Plan) -> Plan {
    let Plan::Sort(SortPlan { input, mut keys, types, bound, output_width, read_outputs }) = plan else { return plan };
    let input = match *input {
        Plan::Pipeline(mut pipeline) if !keys.is_empty() => {
            if let Some(Step::Project(exprs)) = pipeline.steps.last_mut() {
                if exprs.len() == types.len() {
                    keys.retain(|k| !is_row_constant(&exprs[k.column]));
                    if keys.is_empty() {
                        // The hidden columns computed only to sort by are projected away,
                        // as the sort did.
                        exprs.truncate(output_width);
                        return Plan::Pipeline(pipeline);
                    }
                }
            }
            Plan::Pipeline(pipeline)
        }
        other => other,
    };
    Plan::Sort(SortPlan { input: Box::new(input), keys, types, bound, output_width, read_outputs })
}

/// Whether `e` has one value for all rows of its query (no columns, parameters, subplans
/// or volatile functions).
fn is_row_constant(e: &Expr) -> bool {
    match e {
        Expr::Literal { .. } | Expr::ScalarSubquery(_) => true,
        Expr::Cast { expr, .. } | Expr::Unary { expr, .. } | Expr::IsNull { expr, .. } => is_row_constant(expr),
        Expr::Binary { left, right, .. } => is_row_constant(left) && is_row_constant(right),
        _ => false,
    }
}

/// An ORDER BY item's (descending, nulls first).
pub(crate) fn order_direction(item: &ast::OrderByExpr) -> Result<(bool, bool)> {
    let descending = match &item.options.sort {
        Some(ast::OrderBySort::Desc) => true,
        Some(ast::OrderBySort::Using(operator)) => using_descending(operator)?,
        _ => false,
    };
    // PostgreSQL: NULLS LAST for ascending, NULLS FIRST for descending.
    Ok((descending, item.options.nulls_first.unwrap_or(descending)))
}

/// `ORDER BY x USING <` sorts ascending and `USING >` descending (the btree ordering
/// operators of every sortable type); other operators order nothing.
fn using_descending(operator: &ast::ObjectName) -> Result<bool> {
    let name = operator.to_string();
    match name.as_str() {
        "<" => Ok(false),
        ">" => Ok(true),
        _ => Err(Error::new(SqlState::WRONG_OBJECT_TYPE, format!("operator {name} is not a valid ordering operator"))
            .with_hint("Ordering operators must be \"<\" or \">\" members of btree operator families.")),
    }
}

fn plan_values(values: &ast::Values, ctx: &PlanContext) -> Result<PlannedQuery> {
    let scope = Scope::default();
    let mut rows: Vec<Vec<Expr>> = Vec::with_capacity(values.rows.len());
    for row in &values.rows {
        row.iter().try_for_each(|e| crate::srf::refuse_in_clause(Some(e), "VALUES"))?;
        let bound = row.iter().map(|e| Binder::new(&scope).planning(ctx).bind(e)).collect::<Result<Vec<_>>>()?;
        if let Some(first) = rows.first() {
            if first.len() != bound.len() {
                return Err(Error::syntax("VALUES lists must all be the same length"));
            }
        }
        rows.push(bound);
    }
    let width = rows.first().map(|r| r.len()).unwrap_or(0);
    let mut columns = Vec::with_capacity(width);
    for col in 0..width {
        // Quoted literals are PostgreSQL's unknown type: they take the others' type.
        let is_unknown = |e: &Expr| crate::bind::is_null_literal(e) || matches!(e, Expr::Literal { value: Datum::Text(_), .. });
        let typed: Vec<DataType> = rows.iter().filter(|r| !is_unknown(&r[col])).map(|r| r[col].data_type()).collect();
        let data_type = if typed.is_empty() { DataType::Text } else { ex::common_type(&typed, "VALUES")? };
        for row in rows.iter_mut() {
            let expr = std::mem::replace(&mut row[col], Expr::Literal { value: Datum::Null, data_type });
            row[col] = if crate::bind::is_null_literal(&expr) {
                Expr::Literal { value: Datum::Null, data_type }
            } else if expr.data_type() == data_type {
                expr
            } else {
                let quoted_literal = is_unknown(&expr);
                ex::coerce(expr, data_type, quoted_literal)?
            };
        }
        columns.push(ColumnInfo { name: format!("column{}", col + 1), data_type, type_modifier: None });
    }
    let _ = ctx;
    Ok(PlannedQuery {
        plan: Plan::Pipeline(Pipeline { source: Source::Values(rows), steps: Vec::new(), workers: 0 }),
        columns,
        hidden: Vec::new(),
        hidden_types: Vec::new(),
        select_items: Vec::new(),
    })
}

/// The FROM clause: its source, the scope it defines, and the table layout if it is a heap.
pub(crate) struct From {
    pub source: Source,
    pub scope: Scope,
}

/// The FROM clause: one relation, or relations to join (`join.rs`).
pub(crate) enum FromPlan {
    Single(From),
    Joins(crate::join::FromClause),
}

impl FromPlan {
    pub(crate) fn scope(&self) -> &Scope {
        match self {
            FromPlan::Single(single) => &single.scope,
            FromPlan::Joins(joins) => &joins.scope,
        }
    }
}

fn plan_from(select: &ast::Select, ctx: &PlanContext) -> Result<From> {
    match select.from.as_slice() {
        [] => Ok(From { source: Source::Single, scope: Scope::default() }),
        [item] => {
            if !item.joins.is_empty() {
                return Err(Error::not_supported("joins are not supported yet"));
            }
            plan_table_factor(&item.relation, ctx)
        }
        _ => Err(Error::not_supported("joins are not supported yet")),
    }
}

pub(crate) fn plan_table_factor(factor: &TableFactor, ctx: &PlanContext) -> Result<From> {
    match factor {
        TableFactor::Table { name, alias, args, with_ordinality, .. } => {
            // A function in FROM may be qualified by `pg_catalog`, its schema in PostgreSQL.
            if let (Some(args), Ok(function)) = (args, crate::bind::function_name(name)) {
                if name.0.len() == 2 {
                    return plan_table_function(&function, &args.args, alias.as_ref(), *with_ordinality, ctx);
                }
            }
            if args.is_none() {
                if let Some(view) = crate::catalog_views::lookup(name) {
                    return plan_table_factor(&crate::catalog_views::derived_table(view, alias.as_ref(), ctx)?, ctx);
                }
                if let Some(error) = crate::catalog_views::undefined_system_relation(name) {
                    return Err(crate::error_cursor::place_at(error, name.span()));
                }
            }
            let table_name = object_name(name)?;
            if let (Some(id), None) = (crate::cte::recursive_reference_id(&table_name), args) {
                return crate::cte::plan_recursive_reference(id, alias.as_ref(), ctx);
            }
            if let (1, None) = (name.0.len(), args) {
                if let Some(work_table) = crate::cte::work_table_source(&table_name, alias.as_ref()) {
                    return Ok(work_table);
                }
            }
            if let Some(args) = args {
                return plan_table_function(&table_name, &args.args, alias.as_ref(), *with_ordinality, ctx);
            }
            if let Some(view) = ctx.catalog.views.get(&table_name) {
                return crate::views::plan_view(view, alias.as_ref(), ctx);
            }
            let meta = ctx.catalog.table(&table_name).map_err(|e| crate::error_cursor::place_at(e, name.span()))?;
            let qualifier = alias.as_ref().map(|a| ident_name(&a.name)).unwrap_or_else(|| table_name.clone());
            let mut scope = Scope::default();
            let renames = column_renames(alias.as_ref(), &qualifier, meta.columns.len())?;
            for (i, col) in meta.columns.iter().enumerate() {
                scope.columns.push(ScopeColumn {
                    table: Some(qualifier.clone()),
                    name: renames.get(i).cloned().unwrap_or_else(|| col.name.clone()),
                    data_type: col.data_type,
                    type_modifier: col.type_modifier,
                });
            }
            let nblocks = ctx.pool.nblocks(meta.locator(), ForkNumber::Main)?;
            let source = Source::Heap(HeapSource {
                table_name: meta.name.clone(),
                rel: meta.locator(),
                layout: RowLayout::new(&meta.column_types()),
                columns: (0..meta.columns.len()).collect(),
                nblocks,
                snapshot: ctx.snapshot.clone(),
                label: ScanLabel {
                    alias: alias.as_ref().map(|a| ident_name(&a.name)),
                    columns: scope.columns.iter().map(|c| c.name.clone()).collect(),
                },
            });
            Ok(From { source, scope })
        }
        // A LATERAL subquery is planned here too, inside a nested loop (`lateral.rs`)
        // whose outer scope its references to earlier FROM items resolve in.
        TableFactor::Derived { subquery, alias, lateral, .. } => {
            let Some(alias) = alias else {
                return Err(Error::syntax("subquery in FROM must have an alias")
                    .with_hint("For example, FROM (SELECT ...) [AS] foo."));
            };
            let mut planned = plan_query(subquery, ctx)?;
            // A LATERAL item runs per outer row as it is planned (see `lateral.rs`).
            if !*lateral && subquery.order_by.is_none() {
                crate::pull_up::defer_access_path(&mut planned.plan);
            }
            let qualifier = ident_name(&alias.name);
            let renames = column_renames(Some(alias), &qualifier, planned.columns.len())?;
            let scope = Scope::new(
                planned
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| ScopeColumn {
                        table: Some(qualifier.clone()),
                        name: renames.get(i).cloned().unwrap_or_else(|| c.name.clone()),
                        data_type: c.data_type,
                        type_modifier: c.type_modifier,
                    })
                    .collect(),
            );
            let label = ScanLabel { alias: Some(qualifier), columns: scope.columns.iter().map(|c| c.name.clone()).collect() };
            Ok(From { source: Source::Subquery { plan: Box::new(planned.plan), label }, scope })
        }
        TableFactor::UNNEST { alias, array_exprs, with_offset: false, with_offset_alias: None, with_ordinality } => {
            let args: Vec<ast::FunctionArg> = array_exprs.iter().map(|e| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e.clone()))).collect();
            plan_unnest(&args, alias.as_ref(), *with_ordinality, ctx)
        }
        TableFactor::NestedJoin { .. } => Err(Error::not_supported("joins are not supported yet")),
        other => Err(Error::not_supported(format!("FROM item not supported: {other}"))),
    }
}

/// The column names of `alias(a, b, ...)` for a relation of `available` columns: at most
/// that many (42P10 otherwise, as PostgreSQL); the columns past them keep their names.
fn column_renames(alias: Option<&ast::TableAlias>, qualifier: &str, available: usize) -> Result<Vec<String>> {
    let renames: Vec<String> = alias.map(|a| a.columns.iter().map(|c| ident_name(&c.name)).collect()).unwrap_or_default();
    if renames.len() > available {
        return Err(Error::new(
            SqlState::INVALID_COLUMN_REFERENCE,
            format!("table \"{qualifier}\" has {available} columns available but {} columns specified", renames.len()),
        ));
    }
    Ok(renames)
}

fn plan_table_function(name: &str, args: &[ast::FunctionArg], alias: Option<&ast::TableAlias>, ordinality: bool, ctx: &PlanContext) -> Result<From> {
    if name == "unnest" {
        return plan_unnest(args, alias, ordinality, ctx);
    }
    if name == "pg_partition_ancestors" {
        return plan_partition_ancestors(args, alias, ordinality, ctx);
    }
    if ordinality {
        return Err(Error::not_supported(format!("{name}(...) WITH ORDINALITY is not supported")));
    }
    if name != "generate_series" {
        return Err(Error::new(SqlState::UNDEFINED_FUNCTION, format!("function {name} does not exist")));
    }
    let bound = bind_positional_args("generate_series", args, ctx)?;
    let label_and_scope = |data_type: DataType| {
        let column = alias.map(|a| a.columns.first().map(|c| ident_name(&c.name)).unwrap_or_else(|| ident_name(&a.name)));
        let qualifier = alias.map(|a| ident_name(&a.name)).unwrap_or_else(|| "generate_series".to_string());
        let column = column.unwrap_or_else(|| "generate_series".to_string());
        let label = ScanLabel { alias: alias.map(|a| ident_name(&a.name)), columns: vec![column.clone()] };
        (label, Scope::new(vec![ScopeColumn { table: Some(qualifier), name: column, data_type, type_modifier: None }]))
    };
    let (bound, data_type) = series_signature(bound)?;
    if weft_exec::expr::datetime::is_datetime(data_type) {
        let (label, scope) = label_and_scope(data_type);
        return Ok(From { source: Source::SeriesExprs { args: bound, data_type, label }, scope });
    }
    let mut at_run_time = false;
    for e in &bound {
        crate::exprutil::walk(e, &mut |e| at_run_time |= matches!(e, Expr::ScalarSubquery(_) | Expr::SubPlan { .. } | Expr::Param { .. }));
    }
    if at_run_time {
        let (label, scope) = label_and_scope(data_type);
        return Ok(From { source: Source::SeriesExprs { args: bound, data_type, label }, scope });
    }
    let mut values = Vec::with_capacity(3);
    for expr in &bound {
        values.push(match expr.eval(&[], ctx.eval)? {
            Datum::Int4(v) => Some(v as i64),
            Datum::Int8(v) => Some(v),
            _ => None,
        });
    }
    let (label, scope) = label_and_scope(data_type);
    // A NULL bound yields no rows, as the strict function returns nothing.
    let source = match (values[0], values[1], values.get(2).copied().unwrap_or(Some(1))) {
        (Some(start), Some(stop), Some(step)) => {
            if step == 0 {
                return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, "step size cannot equal zero"));
            }
            Source::Series { start, stop, step, data_type, label }
        }
        _ => Source::Values(Vec::new()),
    };
    Ok(From { source, scope })
}

/// `generate_series`'s overload for `bound` arguments: over timestamps (see
/// [`datetime_series_arguments`]), else over int4 when every argument is one, int8
/// otherwise. The arguments coerced to it, and the element type.
pub(crate) fn series_signature(bound: Vec<Expr>) -> Result<(Vec<Expr>, DataType)> {
    if bound.iter().any(|e| weft_exec::expr::datetime::is_datetime(e.data_type()) && !crate::bind::is_unknown_literal(e)) {
        return datetime_series_arguments(bound);
    }
    if !(2..=3).contains(&bound.len()) || bound.iter().any(|e| !matches!(e.data_type(), DataType::Int4 | DataType::Int8) && !crate::bind::is_null_literal(e)) {
        let types: Vec<&str> = bound.iter().map(|e| e.data_type().name()).collect();
        return Err(Error::new(
            SqlState::UNDEFINED_FUNCTION,
            format!("function generate_series({}) does not exist", types.join(", ")),
        )
        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."));
    }
    let data_type = if bound.iter().all(|e| e.data_type() == DataType::Int4) { DataType::Int4 } else { DataType::Int8 };
    let args = bound.into_iter().map(|e| if e.data_type() == data_type { Ok(e) } else { ex::coerce(e, data_type, false) }).collect::<Result<Vec<_>>>()?;
    Ok((args, data_type))
}

/// Compile every constant regular expression a WHERE clause matches against. PostgreSQL's
/// planner compiles them to estimate the clause's selectivity, so a bad pattern fails the
/// statement even over a table with no rows.
fn check_constant_patterns(filter: &Expr, ctx: &PlanContext) -> Result<()> {
    use weft_exec::expr::ScalarFunction as F;
    let mut checks = Vec::new();
    crate::exprutil::walk(filter, &mut |e| {
        if let Expr::Function { func, args, data_type } = e {
            let is_pattern_match = matches!(func, F::RegexMatch | F::RegexIMatch | F::RegexNotMatch | F::RegexNotIMatch | F::SimilarTo | F::NotSimilarTo);
            if is_pattern_match && args[1..].iter().all(|a| matches!(a, Expr::Literal { value: Datum::Text(_), .. })) {
                let empty = Expr::Literal { value: Datum::Text(String::new()), data_type: DataType::Text };
                let args = std::iter::once(empty).chain(args[1..].iter().cloned()).collect();
                checks.push(Expr::Function { func: *func, args, data_type: *data_type });
            }
        }
    });
    checks.iter().try_for_each(|check| check.eval(&[], ctx.eval).map(drop))
}

/// The positional arguments of a function in FROM, bound in an empty scope: a LATERAL
/// function's outer references become parameters.
fn bind_positional_args(function: &str, args: &[ast::FunctionArg], ctx: &PlanContext) -> Result<Vec<Expr>> {
    let scope = Scope::default();
    args.iter()
        .map(|arg| match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Binder::new(&scope).planning(ctx).bind(e),
            _ => Err(Error::not_supported(format!("named arguments to {function}"))),
        })
        .collect()
}

/// `unnest(array) [WITH ORDINALITY]` in FROM: one column named after the alias (or
/// `unnest`), plus `ordinality`, as PostgreSQL names them.
fn plan_unnest(args: &[ast::FunctionArg], alias: Option<&ast::TableAlias>, ordinality: bool, ctx: &PlanContext) -> Result<From> {
    let array = unnest_argument(bind_positional_args("unnest", args, ctx)?)?;
    unnest_source(array, "unnest", alias, ordinality)
}

/// The array argument of `unnest(...)`, or PostgreSQL's error for other arguments.
pub(crate) fn unnest_argument(mut bound: Vec<Expr>) -> Result<Expr> {
    match bound.as_slice() {
        [one] if one.data_type().is_array() && !crate::bind::is_unknown_literal(one) => Ok(bound.pop().expect("one argument")),
        [_, _, ..] => Err(Error::not_supported("unnest of several arrays is not supported")),
        _ => {
            let types: Vec<&str> = bound.iter().map(|e| if crate::bind::is_unknown_literal(e) { "unknown" } else { e.data_type().name() }).collect();
            Err(Error::new(SqlState::UNDEFINED_FUNCTION, format!("function unnest({}) does not exist", types.join(", ")))
                .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."))
        }
    }
}

/// `pg_partition_ancestors(relation)`: the relation and the partitioned tables above it,
/// or no rows when it is no partition. weft has no partitions: always no rows (an empty
/// `regclass` set, weft's oids being `bigint`), planned as the unnest of an empty array.
fn plan_partition_ancestors(args: &[ast::FunctionArg], alias: Option<&ast::TableAlias>, ordinality: bool, ctx: &PlanContext) -> Result<From> {
    // The set is empty whatever the argument, which is never evaluated: an argument a
    // function in FROM cannot read yet (a column two query levels out, as in psql's query
    // of a table's triggers) is accepted.
    let bound = match bind_positional_args("pg_partition_ancestors", args, ctx) {
        Err(e) if e.sqlstate == SqlState::FEATURE_NOT_SUPPORTED && args.len() == 1 => return unnest_source(empty_oids(), "relid", alias, ordinality),
        other => other?,
    };
    if bound.len() != 1 {
        return Err(crate::bind::no_aggregate("pg_partition_ancestors", &bound));
    }
    unnest_source(empty_oids(), "relid", alias, ordinality)
}

/// An empty `bigint[]` (weft's oids are `bigint`).
pub(crate) fn empty_oids() -> Expr {
    let elem = weft_common::types::ElemType::Int8;
    Expr::Literal { value: Datum::Array(Box::new(weft_common::types::Array { elem, items: Vec::new() })), data_type: DataType::Array(elem) }
}

/// The FROM item reading the elements of `array`: one column (named after the alias, or
/// `column`), plus `ordinality`.
fn unnest_source(array: Expr, column: &str, alias: Option<&ast::TableAlias>, ordinality: bool) -> Result<From> {
    let data_type = array.data_type().element().ok_or_else(|| Error::internal("unnest of a non-array"))?;
    let qualifier = alias.map(|a| ident_name(&a.name)).unwrap_or_else(|| column.to_string());
    let renames: Vec<String> = alias.map(|a| a.columns.iter().map(|c| ident_name(&c.name)).collect()).unwrap_or_default();
    let first = renames.first().cloned().unwrap_or_else(|| qualifier.clone());
    let mut columns = vec![ScopeColumn { table: Some(qualifier.clone()), name: first, data_type, type_modifier: None }];
    if ordinality {
        let name = renames.get(1).cloned().unwrap_or_else(|| "ordinality".to_string());
        columns.push(ScopeColumn { table: Some(qualifier.clone()), name, data_type: DataType::Int8, type_modifier: None });
    }
    let label = ScanLabel { alias: alias.map(|a| ident_name(&a.name)), columns: columns.iter().map(|c| c.name.clone()).collect() };
    Ok(From { source: Source::Unnest { array, data_type, ordinality, label }, scope: Scope::new(columns) })
}

/// `generate_series(start, stop, step interval)` over timestamps: PostgreSQL's two
/// overloads, `timestamp` when the bounds are, else `timestamptz` (a date or a quoted
/// literal beside a typed interval is read as the preferred `timestamptz`). The arguments
/// coerced, and the element type.
fn datetime_series_arguments(bound: Vec<Expr>) -> Result<(Vec<Expr>, DataType)> {
    use crate::bind::{coerce_branch, is_unknown_literal};
    let bounds: Vec<DataType> = bound.iter().take(2).filter(|e| !is_unknown_literal(e)).map(|e| e.data_type()).collect();
    let fits = bound.len() == 3
        && bounds.iter().all(|t| matches!(t, DataType::Timestamp | DataType::TimestampTz | DataType::Date))
        && (is_unknown_literal(&bound[2]) || bound[2].data_type() == DataType::Interval);
    if !fits {
        return Err(crate::bind::no_aggregate("generate_series", &bound));
    }
    let data_type = if !bounds.is_empty() && bounds.iter().all(|t| *t == DataType::Timestamp) { DataType::Timestamp } else { DataType::TimestampTz };
    let mut args = bound.into_iter();
    let mut next = |to: DataType| coerce_branch(args.next().expect("three arguments"), to);
    Ok((vec![next(data_type)?, next(data_type)?, next(DataType::Interval)?], data_type))
}

fn plan_select(select: &ast::Select, order_by: &[ast::OrderByExpr], ctx: &PlanContext) -> Result<PlannedQuery> {
    if let Some(moved) = crate::srf::move_series_to_from(select) {
        return plan_select(&moved, order_by, ctx);
    }
    let (distinct, distinct_on) = match &select.distinct {
        None | Some(ast::Distinct::All) => (false, None),
        Some(ast::Distinct::Distinct) => (true, None),
        Some(ast::Distinct::On(exprs)) => (false, Some(exprs.as_slice())),
    };
    if select.into.is_some() {
        return Err(Error::not_supported("SELECT INTO is not supported; use CREATE TABLE AS"));
    }
    crate::srf::refuse_in_clause(select.selection.as_ref(), "WHERE")?;
    crate::srf::refuse_in_clause(select.having.as_ref(), "HAVING")?;
    let (where_plain, subqueries) = crate::join::split_where(select.selection.as_ref());
    let (mut where_plain, mut subqueries) = crate::join::keep_correlated_subplans(where_plain, subqueries, ctx);
    if select.from.is_empty() {
        // No FROM: EXISTS / IN filter the one row as subplans (evaluated once), with
        // their NULL semantics, as in a select list.
        where_plain.extend(subqueries.drain(..).map(crate::join::SubqueryCondition::into_expr));
    }
    let from = analyze_from_clause(select, ctx)?;
    let scope = from.scope();

    // Select list: expand `*`, keep (ast, output name).
    let mut items: Vec<(ast::Expr, String)> = Vec::new();
    for item in &select.projection {
        match item {
            ast::SelectItem::UnnamedExpr(e) => items.push((e.clone(), column_name(e))),
            ast::SelectItem::ExprWithAlias { expr, alias } => items.push((expr.clone(), ident_name(alias))),
            ast::SelectItem::Wildcard(options) => {
                if scope.columns.is_empty() {
                    return Err(Error::syntax("SELECT * with no tables specified is not valid"));
                }
                let at = options.wildcard_token.0.span;
                for (index, col) in scope.columns.iter().enumerate() {
                    items.push((expanded_column(index, col, at), col.name.clone()));
                }
            }
            ast::SelectItem::QualifiedWildcard(kind, _) => {
                let at = kind.span();
                let qualifier = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(name) => object_name(name)?,
                    _ => return Err(Error::not_supported("qualified wildcard form")),
                };
                let matching: Vec<(usize, &ScopeColumn)> = match &from {
                    FromPlan::Joins(joins) => joins.table_columns(&qualifier),
                    FromPlan::Single(_) => scope.columns.iter().enumerate().filter(|(_, c)| c.table.as_deref() == Some(&qualifier)).collect(),
                };
                if matching.is_empty() {
                    // In a subquery (`LATERAL (SELECT t.*)`), a relation of the query
                    // around it: its columns are parameters, as its named columns are.
                    let outer = match ctx.outer {
                        Some(outer) => outer.table_columns(&qualifier)?,
                        None => Vec::new(),
                    };
                    if outer.is_empty() {
                        let error = Error::new(SqlState::UNDEFINED_TABLE, format!("missing FROM-clause entry for table \"{qualifier}\""));
                        return Err(crate::error_cursor::place_at(error, at));
                    }
                    for (index, col) in outer {
                        items.push((crate::bind::expanded_outer_column(index, &col, at), col.name.clone()));
                    }
                    continue;
                }
                for (index, col) in matching {
                    items.push((expanded_column(index, col, at), col.name.clone()));
                }
            }
            other => return Err(Error::not_supported(format!("select item {other}"))),
        }
    }

    // Two output columns of one name that read the same column (`SELECT *, a ... ORDER BY
    // a`) are one expression for ORDER BY, as in PostgreSQL, whose targets compare as
    // expressions: the later is written as the earlier.
    for i in 1..items.len() {
        let Some(column) = crate::bind::local_column_of(&items[i].0, scope) else { continue };
        let same = items[..i].iter().find(|(e, name)| *name == items[i].1 && crate::bind::local_column_of(e, scope) == Some(column));
        if let Some((earlier, _)) = same {
            items[i].0 = earlier.clone();
        }
    }

    // DISTINCT ON sorts by the ORDER BY, with its expressions first (`distinct_on`).
    let distinct_on = match distinct_on {
        Some(on) => Some(crate::distinct_on::DistinctOn::new(on, order_by, &items, scope)?),
        None => None,
    };
    let order_by = distinct_on.as_ref().map_or(order_by, |d| d.order_by.as_slice());

    // ORDER BY items that are neither positions, output names nor select items are
    // computed as hidden trailing columns.
    let visible = items.len();
    let mut hidden = Vec::new();
    for item in order_by {
        let e = &item.expr;
        let is_position = is_clause_constant(e);
        let is_output_name =
            matches!(e, ast::Expr::Identifier(i) if items[..visible].iter().any(|(_, n)| *n == ident_name(i)));
        let is_select_item = items[..visible].iter().any(|(x, _)| x == e);
        if !is_position && !is_output_name && !is_select_item && !hidden.contains(e) {
            hidden.push(e.clone());
            items.push((e.clone(), "?column?".to_string()));
        }
    }

    // WHERE without its subquery conditions (those become semi and anti joins).
    let where_plain: Vec<&ast::Expr> = if subqueries.is_empty() { select.selection.iter().collect() } else { where_plain.iter().collect() };
    if select.selection.as_ref().is_some_and(crate::grouping_sets::contains_grouping) {
        return Err(Error::new(SqlState::GROUPING_ERROR, "grouping operations are not allowed in WHERE"));
    }
    let mut filter: Option<Expr> = None;
    for predicate in where_plain {
        if contains_aggregate(predicate) {
            return Err(Error::new(SqlState::GROUPING_ERROR, "aggregate functions are not allowed in WHERE"));
        }
        if contains_window(predicate) {
            return Err(Error::new(SqlState("42P20"), "window functions are not allowed in WHERE"));
        }
        let bound = require_bool(Binder::new(scope).planning(ctx).bind(predicate)?, "WHERE")?;
        check_constant_patterns(&bound, ctx)?;
        filter = Some(match filter {
            None => bound,
            Some(f) => Expr::Binary { op: ex::BinaryOp::And, left: Box::new(f), right: Box::new(bound), data_type: DataType::Bool },
        });
    }
    let mut filter = filter.and_then(crate::exprutil::fold_constant_conjuncts).map(|f| {
        let gates = crate::exprutil::implied_gates(&f.conjuncts().into_iter().cloned().collect::<Vec<_>>());
        crate::exprutil::order_quals(gates.into_iter().fold(f, crate::exprutil::and))
    });

    let mut grouping_sets = None;
    let (group_by_asts, has_group_by): (Vec<ast::Expr>, bool) = match &select.group_by {
        ast::GroupByExpr::Expressions(exprs, modifiers) => {
            if !modifiers.is_empty() {
                return Err(Error::not_supported("GROUP BY modifiers"));
            }
            if exprs.iter().any(crate::grouping_sets::contains_grouping) {
                return Err(Error::new(SqlState::GROUPING_ERROR, "grouping operations are not allowed in GROUP BY"));
            }
            if let Some(sets) = crate::grouping_sets::GroupingSets::expand(exprs)? {
                let keys = sets.keys.clone();
                grouping_sets = Some(sets);
                (keys, true)
            } else {
            // `()` is the empty grouping set: it adds no key, but a GROUP BY of nothing
            // but `()` still makes one group of all rows (one row even over no rows).
            let keys = exprs.iter().filter(|e| !matches!(e, ast::Expr::Tuple(items) if items.is_empty())).cloned().collect();
            (keys, !exprs.is_empty())
            }
        }
        ast::GroupByExpr::All(_) => return Err(Error::not_supported("GROUP BY ALL")),
    };
    let is_aggregate = has_group_by
        || select.having.is_some()
        || items.iter().any(|(e, _)| contains_aggregate(e));
    let mut windows = WindowContext::new(&select.named_window)?;
    let has_windows = items.iter().any(|(e, _)| contains_window(e));
    for (clause, exprs) in [("GROUP BY", group_by_asts.iter().collect::<Vec<_>>()), ("HAVING", select.having.iter().collect())] {
        if exprs.into_iter().any(contains_window) {
            return Err(Error::new(SqlState("42P20"), format!("window functions are not allowed in {clause}")));
        }
    }
    if distinct && !hidden.is_empty() {
        return Err(Error::new(
            SqlState::INVALID_COLUMN_REFERENCE,
            "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
        ));
    }
    // A subquery in the select list may read columns that are not output columns, which a
    // GROUP BY of the output could not give it.
    let subquery_items = items[..visible].iter().any(|(e, _)| crate::bind::contains_subquery(e));
    // Set-returning calls run above the grouping, so DISTINCT is over their rows too.
    let srf_items = items.iter().any(|(e, _)| crate::srf::contains_srf(e));
    if distinct && (is_aggregate || has_windows || subquery_items || srf_items) {
        // DISTINCT over grouped rows, window values or subquery values: group the query's
        // output again.
        let mut plain = select.clone();
        plain.distinct = None;
        let planned = plan_select(&plain, order_by, ctx)?;
        return Ok(distinct_rows(planned));
    }
    // DISTINCT over plain rows is a GROUP BY of every output column (PostgreSQL plans it
    // the same way: a HashAggregate keyed by the select list).
    // A constant in the select list is a value to group by, not a position.
    let as_group_key = |e: &ast::Expr| match e {
        e if is_clause_constant(e) => ast::Expr::Nested(Box::new(e.clone())),
        _ => e.clone(),
    };
    let (group_by_asts, is_aggregate) =
        if distinct { (items[..visible].iter().map(|(e, _)| as_group_key(e)).collect(), true) } else { (group_by_asts, is_aggregate) };

    let workers_for = |source: &Source, exprs_volatile: bool| -> usize {
        if exprs_volatile {
            return 0;
        }
        choose_workers(source, ctx)
    };

    let uses_grouping = items.iter().any(|(e, _)| crate::grouping_sets::contains_grouping(e))
        || select.having.as_ref().is_some_and(crate::grouping_sets::contains_grouping);
    if uses_grouping && !is_aggregate {
        return Err(crate::grouping_sets::not_a_grouping_expression());
    }
    if !is_aggregate {
        let mut exprs = Vec::with_capacity(items.len());
        let mut columns = Vec::with_capacity(items.len());
        let mut srfs = crate::srf::SrfContext::default();
        for (ast_expr, name) in &items {
            let bound = Binder::new(scope).planning(ctx).windowing(&mut windows).set_returning(&mut srfs).regclass_as_oid(ast_expr).bind(ast_expr)?;
            let type_modifier = output_modifier(&bound, scope);
            columns.push(ColumnInfo { name: name.clone(), data_type: bound.data_type(), type_modifier });
            exprs.push(bound);
        }
        // With set-returning calls the plan below produces what they and the list read.
        let (exprs, pending_srfs) = if srfs.is_empty() {
            (exprs, None)
        } else {
            let (pre, pending) = crate::srf::pre_srf_projection(exprs, srfs);
            (pre, Some(pending))
        };
        // With window functions the pipeline projects their inputs (`window.rs`).
        let (exprs_projected, pending) = if windows.is_empty() {
            (exprs, None)
        } else {
            let (pre, pending) = crate::window::pre_window_projection(exprs, windows);
            (pre, Some(pending))
        };
        let mut exprs = exprs_projected;
        let (source, mut steps, workers) = match from {
            FromPlan::Joins(joins) => {
                let serial = exprs.iter().any(is_volatile);
                let input = crate::join::plan_joins(joins, filter.take(), &subqueries, &scope_columns_used(exprs.iter()), serial, ctx)?;
                exprs.iter_mut().for_each(|e| remap_columns(e, &input.positions));
                (input.source, input.steps, input.workers)
            }
            FromPlan::Single(single) => {
                let mut source = single.source;
                crate::pull_up::pull_up_simple_subquery(&mut source, &mut filter, exprs.iter_mut().collect());
                {
                    let mut all: Vec<&mut Expr> = exprs.iter_mut().collect();
                    if let Some(f) = filter.as_mut() {
                        all.push(f);
                    }
                    prune_heap_columns(&mut source, all);
                }
                crate::access_path::choose_index_scan(&mut source, &mut filter, ctx);
                let volatile = exprs.iter().chain(filter.iter()).any(is_volatile);
                let steps: Vec<Step> = filter.take().map(Step::Filter).into_iter().collect();
                let workers = workers_for(&source, volatile);
                (source, steps, workers)
            }
        };
        steps.push(Step::Project(exprs));
        let workers = if crate::exprutil::filtered_out(&steps) { 0 } else { workers };
        let hidden_types = columns.drain(visible..).map(|c| c.data_type).collect();
        let select_items = visible_asts(&items, visible);
        let mut plan = Plan::Pipeline(Pipeline { source, steps, workers });
        if let Some(pending) = pending {
            plan = pending.plan(plan);
        }
        if let Some(pending) = pending_srfs {
            plan = pending.plan(plan);
        }
        let planned = PlannedQuery { plan, columns, hidden, hidden_types, select_items };
        return match distinct_on {
            Some(on) => on.plan(planned),
            None => Ok(planned),
        };
    }

    // Aggregate query. GROUP BY items may name output columns or positions, as in PostgreSQL.
    let mut group_by = Vec::with_capacity(group_by_asts.len());
    let mut key_asts = Vec::with_capacity(group_by_asts.len());
    for g in &group_by_asts {
        let resolved = resolve_group_item(g, &items, scope)?;
        if contains_aggregate(&resolved) {
            return Err(Error::new(SqlState::GROUPING_ERROR, "aggregate functions are not allowed in GROUP BY"));
        }
        group_by.push(Binder::new(scope).planning(ctx).regclass_as_oid(&resolved).bind(&resolved)?);
        key_asts.push(resolved);
    }
    if grouping_sets.is_some() || uses_grouping {
        let sets = grouping_sets.unwrap_or_else(|| crate::grouping_sets::GroupingSets::single(group_by.len()));
        let query = crate::grouping_sets::GroupedQuery { select, from, filter, subqueries: &subqueries, items: &items, visible, hidden, windows, keys: group_by, key_asts };
        let planned = crate::grouping_sets::plan(query, sets, ctx)?;
        return match distinct_on {
            Some(on) => on.plan(planned),
            None => Ok(planned),
        };
    }
    let GroupedOutputs { outputs, mut columns, pending, pending_srfs, having, aggregates } =
        bind_grouped_outputs(scope, ctx, group_by, key_asts, windows, items.iter().map(|(e, name)| (e, name)), select.having.as_ref())?;
    let AggregateContext { group_by, calls, .. } = aggregates;
    let mut output = Vec::new();
    if let Some(h) = having {
        output.push(Step::Filter(h));
    }
    output.push(Step::Project(outputs));
    let mut plan = plan_aggregate(from, filter, &subqueries, group_by, calls, output, ctx)?;
    let hidden_types = columns.drain(visible..).map(|c| c.data_type).collect();
    if let Some(pending) = pending {
        plan = pending.plan(plan);
    }
    if let Some(pending) = pending_srfs {
        plan = pending.plan(plan);
    }
    let planned = PlannedQuery { plan, columns, hidden, hidden_types, select_items: visible_asts(&items, visible) };
    match distinct_on {
        Some(on) => on.plan(planned),
        None => Ok(planned),
    }
}

/// An aggregate query's select list and HAVING, bound over its groups.
pub(crate) struct GroupedOutputs {
    /// What the aggregate outputs: the select list, or with window functions their inputs.
    pub outputs: Vec<Expr>,
    pub columns: Vec<ColumnInfo>,
    /// The window functions still to run over `outputs`.
    pub pending: Option<crate::window::PendingWindows>,
    /// The set-returning calls still to run over the windows' output.
    pub pending_srfs: Option<crate::srf::PendingSrfs>,
    pub having: Option<Expr>,
    /// The group keys and the aggregate calls the expressions refer to.
    pub aggregates: AggregateContext,
}

/// Bind the select list `items` (expression, output name) and `having` of a query grouped
/// by `group_by` (plain GROUP BY, or every grouping set at once), written `key_asts`.
pub(crate) fn bind_grouped_outputs<'a>(
    scope: &Scope,
    ctx: &PlanContext,
    group_by: Vec<Expr>,
    key_asts: Vec<ast::Expr>,
    mut windows: WindowContext,
    items: impl ExactSizeIterator<Item = (&'a ast::Expr, &'a String)>,
    having: Option<&ast::Expr>,
) -> Result<GroupedOutputs> {
    let mut aggregates = AggregateContext { group_by, calls: Vec::new(), key_asts };
    let mut outputs = Vec::with_capacity(items.len());
    let mut columns = Vec::with_capacity(items.len());
    let mut srfs = crate::srf::SrfContext::default();
    for (ast_expr, name) in items {
        let bound = Binder::with_aggregates(scope, &mut aggregates).planning(ctx).windowing(&mut windows).set_returning(&mut srfs).regclass_as_oid(ast_expr).bind(ast_expr)?;
        // Over grouped rows a column is a group key, not the scope's: only casts keep a modifier.
        let type_modifier = output_modifier(&bound, &Scope::default());
        columns.push(ColumnInfo { name: name.clone(), data_type: bound.data_type(), type_modifier });
        outputs.push(bound);
    }
    // Set-returning calls run over the groups (and windows): see `srf.rs`.
    let pending_srfs = if srfs.is_empty() {
        None
    } else {
        let (pre, pending) = crate::srf::pre_srf_projection(std::mem::take(&mut outputs), srfs);
        outputs = pre;
        Some(pending)
    };
    // With window functions the aggregate's output is their inputs (`window.rs`).
    let pending = if windows.is_empty() {
        None
    } else {
        let (pre, pending) = crate::window::pre_window_projection(std::mem::take(&mut outputs), windows);
        outputs = pre;
        Some(pending)
    };
    let having = match having {
        Some(h) => Some(require_bool(Binder::with_aggregates(scope, &mut aggregates).planning(ctx).bind(h)?, "HAVING")?),
        None => None,
    };
    Ok(GroupedOutputs { outputs, columns, pending, pending_srfs, having, aggregates })
}

/// The FROM clause analysed for planning: one relation, or joins (LATERAL items too).
pub(crate) fn analyze_from_clause(select: &ast::Select, ctx: &PlanContext) -> Result<FromPlan> {
    Ok(if crate::lateral::has_lateral(&select.from) {
        FromPlan::Joins(crate::lateral::analyze_lateral_from(&select.from, select.selection.as_ref(), ctx).map_err(|e| crate::lateral::invalid_reference(e, &select.from))?)
    } else if crate::join::needs_join_planning(select) {
        FromPlan::Joins(crate::join::analyze_from(&select.from, ctx).map_err(|e| crate::lateral::invalid_reference(e, &select.from))?)
    } else {
        FromPlan::Single(plan_from(select, ctx)?)
    })
}

/// An aggregate over the FROM clause filtered by `filter`: rows grouped by `group_by`
/// (scope expressions), with `calls`, then `output` over (keys, call values).
pub(crate) fn plan_aggregate(
    from: FromPlan,
    mut filter: Option<Expr>,
    subqueries: &[crate::join::SubqueryCondition],
    mut group_by: Vec<Expr>,
    mut calls: Vec<AggregateCall>,
    output: Vec<Step>,
    ctx: &PlanContext,
) -> Result<Plan> {
    let outputs_volatile = output.iter().any(|step| match step {
        Step::Project(exprs) => exprs.iter().any(is_volatile),
        Step::Filter(e) => is_volatile(e),
        Step::HashJoin(_) => false,
    });
    let (source, steps, workers) = match from {
        FromPlan::Joins(joins) => {
            let serial = outputs_volatile
                || group_by.iter().chain(calls.iter().flat_map(AggregateCall::exprs)).any(is_volatile);
            let used = scope_columns_used(group_by.iter().chain(calls.iter().flat_map(AggregateCall::exprs)));
            let input = crate::join::plan_joins(joins, filter.take(), subqueries, &used, serial, ctx)?;
            group_by.iter_mut().for_each(|e| remap_columns(e, &input.positions));
            calls.iter_mut().flat_map(AggregateCall::exprs_mut).for_each(|e| remap_columns(e, &input.positions));
            (input.source, input.steps, input.workers)
        }
        FromPlan::Single(single) => {
            let mut source = single.source;
            {
                let mut exprs: Vec<&mut Expr> = group_by.iter_mut().collect();
                exprs.extend(calls.iter_mut().flat_map(AggregateCall::exprs_mut));
                crate::pull_up::pull_up_simple_subquery(&mut source, &mut filter, exprs);
            }
            {
                let mut all: Vec<&mut Expr> = group_by.iter_mut().collect();
                all.extend(calls.iter_mut().flat_map(AggregateCall::exprs_mut));
                if let Some(f) = filter.as_mut() {
                    all.push(f);
                }
                prune_heap_columns(&mut source, all);
            }
            crate::access_path::choose_index_scan(&mut source, &mut filter, ctx);
            let volatile = group_by.iter().chain(filter.iter()).chain(calls.iter().flat_map(AggregateCall::exprs)).any(is_volatile)
                || outputs_volatile;
            let steps: Vec<Step> = filter.take().map(Step::Filter).into_iter().collect();
            let workers = if volatile { 0 } else { choose_workers(&source, ctx) };
            (source, steps, workers)
        }
    };
    let workers = if crate::exprutil::filtered_out(&steps) { 0 } else { workers };
    Ok(match shared_distinct_argument(&calls) {
        None => Plan::Aggregate { input: Pipeline { source, steps, workers }, group_by, aggregates: calls, output },
        Some(arg) => distinct_aggregate(Pipeline { source, steps, workers }, group_by, calls, arg, output),
    })
}

/// The expressions of the first `visible` select items.
pub(crate) fn visible_asts(items: &[(ast::Expr, String)], visible: usize) -> Vec<ast::Expr> {
    items[..visible].iter().map(|(e, _)| e.clone()).collect()
}

/// The argument of the query's `f(DISTINCT x)` calls when every call is one over the same
/// `x`: the form `distinct_aggregate` plans. Other mixes keep a set of distinct values per
/// group and call (`Accumulator::Distinct`).
fn shared_distinct_argument(calls: &[AggregateCall]) -> Option<Expr> {
    let first = calls.first()?.arg.clone();
    calls.iter().all(|c| c.distinct && c.arg == first).then_some(first).flatten()
}

/// `g, f(DISTINCT x) ... GROUP BY g` as two aggregates: the distinct (g, x) pairs first,
/// then `f(x)` per g over them. The outer aggregate's rows have the layout the one-step
/// aggregate would have (keys, then calls), so `output` applies unchanged.
fn distinct_aggregate(input: Pipeline, group_by: Vec<Expr>, calls: Vec<AggregateCall>, arg: Expr, output: Vec<Step>) -> Plan {
    let keys = group_by.len();
    let arg_type = arg.data_type();
    let outer_keys: Vec<Expr> =
        group_by.iter().enumerate().map(|(index, g)| Expr::Column { index, data_type: g.data_type() }).collect();
    let mut pairs = group_by;
    pairs.push(arg);
    let label = ScanLabel { alias: None, columns: (0..=keys).map(|i| format!("column{}", i + 1)).collect() };
    let inner = Plan::Aggregate { input, group_by: pairs, aggregates: Vec::new(), output: Vec::new() };
    // The binder left nothing else of the calls reading the input (`bind::distinct_call`).
    let value = Expr::Column { index: keys, data_type: arg_type };
    let calls = calls
        .into_iter()
        .map(|c| AggregateCall {
            arg: Some(value.clone()),
            distinct: false,
            order_by: c.order_by.into_iter().map(|k| AggregateOrderKey { expr: value.clone(), ..k }).collect(),
            ..c
        })
        .collect();
    let source = Source::Subquery { plan: Box::new(inner), label };
    Plan::Aggregate { input: Pipeline { source, steps: Vec::new(), workers: 0 }, group_by: outer_keys, aggregates: calls, output }
}

/// The distinct rows of `planned`: an aggregate keyed by all its columns over it.
pub(crate) fn distinct_rows(planned: PlannedQuery) -> PlannedQuery {
    let group_by = planned
        .columns
        .iter()
        .enumerate()
        .map(|(index, c)| Expr::Column { index, data_type: c.data_type })
        .collect();
    let label = ScanLabel { alias: None, columns: planned.columns.iter().map(|c| c.name.clone()).collect() };
    let source = Source::Subquery { plan: Box::new(planned.plan), label };
    PlannedQuery {
        plan: Plan::Aggregate { input: Pipeline { source, steps: Vec::new(), workers: 0 }, group_by, aggregates: Vec::new(), output: Vec::new() },
        columns: planned.columns,
        hidden: planned.hidden,
        hidden_types: planned.hidden_types,
        select_items: planned.select_items,
    }
}

/// The scope columns these expressions read.
fn scope_columns_used<'e>(exprs: impl Iterator<Item = &'e Expr>) -> BTreeSet<usize> {
    let mut used = BTreeSet::new();
    for e in exprs {
        columns_used(e, &mut used);
    }
    used
}

/// `GROUP BY 1` and `GROUP BY alias` refer to select-list items; input columns win over
/// output names, as in PostgreSQL.
fn resolve_group_item(g: &ast::Expr, items: &[(ast::Expr, String)], scope: &Scope) -> Result<ast::Expr> {
    if clause_constant(g).is_some() {
        return Ok(items[select_list_position(g, items.len(), "GROUP BY")?].0.clone());
    }
    if let ast::Expr::Identifier(ident) = g {
        let name = ident_name(ident);
        if !scope.columns.iter().any(|c| c.name == name) {
            if let Some((e, _)) = items.iter().find(|(_, n)| *n == name) {
                return Ok(e.clone());
            }
        }
    }
    Ok(g.clone())
}

pub(crate) fn require_bool(expr: Expr, clause: &str) -> Result<Expr> {
    if crate::bind::is_null_literal(&expr) {
        return Ok(Expr::Literal { value: Datum::Null, data_type: DataType::Bool });
    }
    if expr.data_type() != DataType::Bool {
        return Err(Error::new(
            SqlState::DATATYPE_MISMATCH,
            format!("argument of {clause} must be type boolean, not type {}", expr.data_type().name()),
        ));
    }
    Ok(expr)
}

/// Make a heap source decode only the columns `exprs` use, and renumber them.
pub(crate) fn prune_heap_columns(source: &mut Source, exprs: Vec<&mut Expr>) {
    let Source::Heap(heap) = source else { return };
    let mut used = BTreeSet::new();
    for e in exprs.iter() {
        columns_used(e, &mut used);
    }
    let map: BTreeMap<usize, usize> = used.iter().enumerate().map(|(new, old)| (*old, new)).collect();
    for e in exprs {
        remap_columns(e, &map);
    }
    // Positions in the row the source decodes now (already pruned once, for a pulled-up
    // subquery), mapped back to table columns.
    heap.columns = used.into_iter().map(|position| heap.columns[position]).collect();
}

/// Workers for a pipeline over `source`, PostgreSQL's rule: none below
/// `min_parallel_table_scan_size`, then one more for every tripling of the size, capped by
/// `max_parallel_workers_per_gather`.
pub fn choose_workers(source: &Source, ctx: &PlanContext) -> usize {
    choose_workers_reading(source, None, ctx)
}

/// [`choose_workers`] for a heap scan that will read only `blocks` of its blocks (a zone
/// map skips the others).
pub fn choose_workers_reading(source: &Source, blocks: Option<u64>, ctx: &PlanContext) -> usize {
    // A table's `parallel_workers` storage parameter overrides the size rule, as in
    // PostgreSQL (still capped by max_parallel_workers_per_gather).
    if let Source::Heap(heap) = source {
        if let Some(Some(n)) = ctx.catalog.tables.get(&heap.table_name).map(|t| t.parallel_workers) {
            let max = ctx.settings.integer("max_parallel_workers_per_gather").max(0) as usize;
            return (n as usize).min(max);
        }
    }
    workers_by_size(source, blocks, ctx.settings)
}

fn workers_by_size(source: &Source, blocks_read: Option<u64>, settings: &Settings) -> usize {
    let max = settings.integer("max_parallel_workers_per_gather").max(0) as usize;
    match source {
        Source::Heap(heap) => {
            let threshold = (settings.memory_bytes("min_parallel_table_scan_size") / weft_storage::PAGE_SIZE).max(1) as u64;
            let mut blocks = blocks_read.unwrap_or(heap.nblocks as u64);
            if blocks < threshold {
                return 0;
            }
            let mut workers = 1;
            while blocks >= threshold * 3 {
                workers += 1;
                blocks /= 3;
            }
            workers.min(max)
        }
        Source::Series { start, stop, step, .. } => {
            let count = ((*stop as i128 - *start as i128) / *step as i128).unsigned_abs() + 1;
            let threshold = settings.memory_bytes("min_parallel_table_scan_size") as u128 / SERIES_ROW_BYTES_ESTIMATE;
            if count >= threshold {
                max
            } else {
                0
            }
        }
        _ => 0,
    }
}
