//! LATERAL: FROM items that read the columns of the items before them.
//!
//! A FROM clause holding such an item (`LATERAL (subquery)`, or a function whose
//! arguments name columns, which PostgreSQL treats as LATERAL without the keyword) is
//! planned left to right in pieces: everything before a LATERAL item is joined by the
//! join planner (`join.rs`) into one relation, whose rows the LATERAL item is then run
//! for, one at a time, in a nested loop (`Plan::NestLoop`): the item is planned as a
//! subquery of the relation's scope (`subplan.rs`), so the columns it reads become
//! parameters, set from each outer row. The loop's output is again one relation (its
//! scope: the columns before, then the item's), joined with what follows as before.
//! `JOIN LATERAL ... ON` keeps its condition in the loop (a LEFT JOIN NULL-extends an
//! outer row none of the item's rows matched); RIGHT and FULL JOIN LATERAL may not read
//! the left side, as in PostgreSQL. WHERE's conditions on the relation before an item
//! alone filter its rows before the loop (and again above it), as PostgreSQL pushes them
//! down, so the item does not run for rows WHERE drops — unless the FROM clause holds a
//! RIGHT or FULL join, which could NULL-extend that relation. `x, LATERAL s FULL JOIN c`
//! (a join whose left side is the item) is 0A000. A subquery that only filters and
//! projects one table, or joins several by inner joins, is no loop: it is pulled up into
//! the join tree ([`pulled_up`], [`pulled_up_select`]), so
//! the join planner plans it as any join (its equalities with the left's columns are hash
//! keys, WHERE reduces a LEFT join, conditions reach its scan); the loop's pieces are then
//! not collapsed, and the FROM clause stays one join tree.

use std::collections::BTreeMap;

use sqlparser::ast::{self, TableFactor};
use weft_common::{Error, Result, SqlState};
use weft_exec::expr::Expr;
use weft_exec::plan::{NestLoopPlan, Pipeline, Plan, ScanLabel, Source, Step};

use crate::bind::{contains_aggregate, ident_name, Binder, Scope, ScopeColumn};
use crate::exprutil::remap_columns;
use crate::join::{FromBuilder, FromClause, Piece};
use crate::planner::{plan_table_factor, require_bool, From, PlanContext};
use crate::subplan::OuterQuery;

/// Does this FROM clause hold a LATERAL item?
pub(crate) fn has_lateral(from: &[ast::TableWithJoins]) -> bool {
    from.iter().any(item_has_lateral)
}

fn item_has_lateral(item: &ast::TableWithJoins) -> bool {
    is_lateral(&item.relation) || item.joins.iter().any(|j| is_lateral(&j.relation))
}

/// A LATERAL subquery, or a function whose arguments name a column.
fn is_lateral(factor: &TableFactor) -> bool {
    match factor {
        TableFactor::Derived { lateral, .. } => *lateral,
        TableFactor::UNNEST { array_exprs, .. } => array_exprs.iter().any(names_column),
        TableFactor::Table { args: Some(args), .. } => args.args.iter().any(names_column),
        _ => false,
    }
}

/// Whether a function argument names a column (of an item to its left, so the item is
/// implicitly LATERAL, as PostgreSQL treats functions in FROM).
fn names_column<N: ast::Visit>(arg: &N) -> bool {
    let mut names_column = false;
    let _ = crate::ast_walk::expressions(arg, |e| {
        if matches!(e, ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_)) {
            names_column = true;
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    names_column
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Inner,
    Left,
    RightOrFull,
}

/// Analyse a FROM clause holding LATERAL items into one relation (and the join planner's
/// form of it).
/// WHERE (`selection`) still applies to the whole; its conjuncts over the columns left of
/// a LATERAL item also filter those rows before the item runs for them (see [`collapse`]).
pub(crate) fn analyze_lateral_from(from: &[ast::TableWithJoins], selection: Option<&ast::Expr>, ctx: &PlanContext) -> Result<FromClause> {
    // A RIGHT or FULL join would NULL-extend the rows on its left, which a condition like
    // `x IS NULL` then reads otherwise: no condition moves below one.
    let (mut conditions, _) = crate::join::split_where(selection);
    if from.iter().any(has_right_or_full_join) {
        conditions.clear();
    }
    conditions.retain(|c| !crate::bind::contains_subquery(c));
    let mut builder = FromBuilder::new(ctx);
    for item in from {
        if !item_has_lateral(item) {
            builder.add(&Piece::Item(item.clone()))?;
            continue;
        }
        // The item's part before its first LATERAL factor is one piece of the comma list.
        let first = if is_lateral(&item.relation) { 0 } else { item.joins.iter().position(|j| is_lateral(&j.relation)).unwrap_or(item.joins.len()) + 1 };
        if first == 0 && builder.is_empty() {
            // Nothing to its left: planned alone (a reference to a later item fails).
            builder.add(&Piece::Item(ast::TableWithJoins { relation: item.relation.clone(), joins: Vec::new() }))?;
        } else if first == 0 {
            // `x, LATERAL s FULL JOIN c` is `x CROSS JOIN (s FULL JOIN c)`: the join would
            // need planning inside the loop, per row of `x`. An inner or left join there
            // is the same as after the loop.
            let outer_join = |j: &ast::Join| matches!(j.join_operator, ast::JoinOperator::Right(_) | ast::JoinOperator::RightOuter(_) | ast::JoinOperator::FullOuter(_));
            if item.joins.iter().any(outer_join) {
                return Err(Error::not_supported("a RIGHT or FULL JOIN whose left side is a LATERAL item after a comma is not supported"));
            }
            builder = lateral_join(builder, &item.relation, Kind::Inner, &ast::JoinConstraint::None, &conditions, ctx)?;
        } else {
            builder.add(&Piece::Item(ast::TableWithJoins { relation: item.relation.clone(), joins: item.joins[..first - 1].to_vec() }))?;
        }
        for join in item.joins.iter().skip(first.saturating_sub(1)) {
            // (`first` 0: every join follows the LATERAL relation.)
            if !is_lateral(&join.relation) {
                builder.add(&Piece::Join(join.clone()))?;
                continue;
            }
            use ast::JoinOperator as J;
            let (kind, constraint) = match &join.join_operator {
                J::Join(c) | J::Inner(c) | J::CrossJoin(c) => (Kind::Inner, c),
                J::Left(c) | J::LeftOuter(c) => (Kind::Left, c),
                J::Right(c) | J::RightOuter(c) | J::FullOuter(c) => (Kind::RightOrFull, c),
                other => return Err(Error::not_supported(format!("join type not supported: {other:?}"))),
            };
            if kind == Kind::RightOrFull {
                if let Err(e) = plan_table_factor(&join.relation, ctx) {
                    return Err(match missing_table(&e) {
                        Some(table) => Error::new(
                            SqlState::INVALID_COLUMN_REFERENCE,
                            format!("invalid reference to FROM-clause entry for table \"{table}\""),
                        )
                        .with_detail("The combining JOIN type must be INNER or LEFT for a LATERAL reference."),
                        None => e,
                    });
                }
                // It reads nothing to its left: an ordinary join.
                builder.add(&Piece::Join(join.clone()))?;
                continue;
            }
            builder = lateral_join(builder, &join.relation, kind, constraint, &conditions, ctx)?;
        }
    }
    builder.finish()
}

fn has_right_or_full_join(item: &ast::TableWithJoins) -> bool {
    use ast::JoinOperator as J;
    let nested = |factor: &TableFactor| matches!(factor, TableFactor::NestedJoin { table_with_joins, .. } if has_right_or_full_join(table_with_joins));
    nested(&item.relation)
        || item.joins.iter().any(|j| {
            matches!(j.join_operator, J::Right(_) | J::RightOuter(_) | J::FullOuter(_)) || nested(&j.relation)
        })
}

/// The table a "missing FROM-clause entry" error names.
fn missing_table(error: &Error) -> Option<&str> {
    if error.sqlstate != SqlState::UNDEFINED_TABLE {
        return None;
    }
    error.message.strip_prefix("missing FROM-clause entry for table \"")?.strip_suffix('"')
}

/// PostgreSQL's error for a name of an earlier FROM item read by a FROM item that is not
/// LATERAL, from weft's "missing" errors.
pub(crate) fn invalid_reference(error: Error, from: &[ast::TableWithJoins]) -> Error {
    let Some(table) = missing_table(&error) else { return error };
    let mut names = Vec::new();
    for item in from {
        collect_names(&item.relation, &mut names);
        item.joins.iter().for_each(|j| collect_names(&j.relation, &mut names));
    }
    if !names.iter().any(|n| n == table) {
        return error;
    }
    let table = table.to_string();
    Error::new(SqlState::UNDEFINED_TABLE, format!("invalid reference to FROM-clause entry for table \"{table}\""))
        .with_hint(format!("There is an entry for table \"{table}\", but it cannot be referenced from this part of the query."))
}

fn collect_names(factor: &TableFactor, out: &mut Vec<String>) {
    match factor {
        TableFactor::Table { name, alias, .. } => match alias {
            Some(a) => out.push(ident_name(&a.name)),
            None => {
                if let Ok(n) = crate::bind::object_name(name) {
                    out.push(n)
                }
            }
        },
        TableFactor::Derived { alias: Some(a), .. } => out.push(ident_name(&a.name)),
        TableFactor::NestedJoin { table_with_joins, .. } => {
            collect_names(&table_with_joins.relation, out);
            table_with_joins.joins.iter().for_each(|j| collect_names(&j.relation, out));
        }
        _ => {}
    }
}

/// What was built before a LATERAL item that runs in a loop, as one relation whose row
/// is its scope's columns in order. The WHERE `conditions` that read only its columns
/// filter it here, so the item runs only for the rows that can pass WHERE, and a
/// condition on a table can use its index (PostgreSQL pushes them down too).
fn collapse(builder: FromBuilder, conditions: &[ast::Expr], ctx: &PlanContext) -> Result<From> {
    let Some(single) = builder.single() else {
        let clause = builder.finish()?;
        let scope = clause.scope.clone();
        let filter = pushed_down(conditions, &scope, ctx);
        let used = (0..scope.columns.len() + scope.qualified_only.len()).collect();
        let input = crate::join::plan_joins(clause, filter, &[], &used, false, ctx)?;
        let plan = Plan::Pipeline(Pipeline { source: input.source, steps: input.steps, workers: input.workers });
        return Ok(From { source: Source::Subquery { plan: Box::new(plan), label: row_label(&scope) }, scope });
    };
    let Some(filter) = pushed_down(conditions, &single.scope, ctx) else { return Ok(single) };
    let From { mut source, scope } = single;
    let mut filter = Some(filter);
    crate::access_path::choose_index_scan(&mut source, &mut filter, ctx);
    let plan = Plan::Pipeline(Pipeline { source, steps: filter.map(Step::Filter).into_iter().collect(), workers: 0 });
    Ok(From { source: Source::Subquery { plan: Box::new(plan), label: row_label(&scope) }, scope })
}

/// The label of a relation whose row is `scope`'s columns in order, with no alias.
fn row_label(scope: &Scope) -> ScanLabel {
    ScanLabel { alias: None, columns: scope.columns.iter().chain(&scope.qualified_only).map(|c| c.name.clone()).collect() }
}

/// The conjunction of the `conditions` that bind in `scope` alone (no outer query's
/// columns either) and are not volatile, over the scope's columns.
fn pushed_down(conditions: &[ast::Expr], scope: &Scope, ctx: &PlanContext) -> Option<Expr> {
    let alone = ctx.nested(None);
    conditions
        .iter()
        .filter_map(|c| Binder::new(scope).planning(&alone).bind(c).ok())
        .filter(|e| e.data_type() == weft_common::DataType::Bool && !crate::exprutil::is_volatile(e))
        .reduce(crate::exprutil::and)
}

/// A LATERAL subquery that only filters and projects one table (no aggregate, grouping,
/// DISTINCT, window, LIMIT, ORDER BY or set-returning call, nothing volatile), pulled up
/// into the join tree as PostgreSQL's `pull_up_subqueries` does: the table joins the left
/// (`left_scope`'s relations) on the subquery's filter (its parameters, `params`, being
/// the left's columns) and the ON condition (`on`, over the loop's scope). The join
/// planner then orders and plans it as any join (a hash join whose keys are the
/// equalities with the left, conditions pushed to the scans, WHERE reducing a LEFT join),
/// instead of a scan of the table per left row; an index scan the subquery was planned
/// with is turned back into the table's scan, as for a derived table
/// (`pull_up::defer_access_path`). Under a LEFT JOIN a column not of the table is computed
/// only for matched rows (a CASE on a table column the conditions prove non-null; without
/// one, the loop stays). `None` when the subquery is not such a one; otherwise the table,
/// the join's conditions and the item's columns, over the left's scope columns followed
/// by the table's.
fn pulled_up(left_scope: &Scope, factor: &TableFactor, planned: &From, params: &[Expr], on: Option<&Expr>, kind: Kind, ctx: &PlanContext) -> Option<(From, Vec<Expr>, Vec<Expr>)> {
    let TableFactor::Derived { subquery, .. } = factor else { return None };
    let Source::Subquery { plan, label } = &planned.source else { return None };
    let mut plan = plan.as_ref().clone();
    // Without ORDER BY (for which an index scan may stand in) an index scan, keyed by the
    // left row or not, is the table's scan under its conditions.
    if subquery.order_by.is_none() {
        if let Some(scan) = crate::pull_up::as_table_scan(&plan) {
            plan = scan;
        }
    }
    let Plan::Pipeline(inner) = &plan else { return None };
    let Source::Heap(heap) = &inner.source else { return None };
    let (filter, projection) = crate::pull_up::filter_and_projection(&inner.steps)?;
    // The filter and the projection may read the left's columns (parameters), but
    // nothing volatile.
    if projection.iter().chain(filter).any(Expr::runs_per_row) || on.is_some_and(crate::exprutil::is_volatile) {
        return None;
    }
    let meta = ctx.catalog.tables.get(&heap.table_name)?;
    // The table as a relation of its own, every column decoded (the join planner prunes).
    let left_width = left_scope.columns.len() + left_scope.qualified_only.len();
    let table_columns: Vec<ScopeColumn> = meta
        .columns
        .iter()
        .map(|c| ScopeColumn { table: label.alias.clone(), name: c.name.clone(), data_type: c.data_type, type_modifier: c.type_modifier })
        .collect();
    let to_combined: BTreeMap<usize, usize> = heap.columns.iter().enumerate().map(|(k, &c)| (k, left_width + c)).collect();
    let over_combined = |e: &Expr| {
        let mut e = e.clone();
        remap_columns(&mut e, &to_combined);
        crate::exprutil::replace_params(&mut e, params);
        e
    };
    let mut conditions: Vec<Expr> = filter.map(|f| over_combined(f).conjuncts().into_iter().cloned().collect()).unwrap_or_default();
    let mut outputs: Vec<Expr> = projection.iter().map(over_combined).collect();
    if let Some(on) = on {
        // The loop's scope: the left's visible columns, the item's, the left's
        // qualified-only ones.
        let visible = left_scope.columns.len();
        let column = |i: usize| Expr::Column { index: i, data_type: left_scope.column_at(i).data_type };
        let values: Vec<Expr> = (0..visible).map(column).chain(outputs.iter().cloned()).chain((visible..left_width).map(column)).collect();
        conditions.extend(crate::exprutil::substitute_columns(on, &values).conjuncts().into_iter().cloned());
    }
    if kind == Kind::Left {
        // A column that is not the table's must be NULL for a left row nothing matched, as
        // the loop's NULL-extended row of the subquery is: it is computed only when a
        // column of the table that the conditions prove non-null in every matched row is
        // not NULL.
        let proven = conditions.iter().flat_map(crate::exprutil::nonnullable_columns).filter(|&c| c >= left_width).min();
        let matched = proven.map(|c| Expr::Column { index: c, data_type: meta.columns[c - left_width].data_type });
        for e in &mut outputs {
            if matches!(e, Expr::Column { index, .. } if *index >= left_width) {
                continue;
            }
            let Some(matched) = &matched else { return None };
            let when = Expr::IsNull { expr: Box::new(matched.clone()), negated: true };
            *e = Expr::Case { whens: vec![(when, e.clone())], otherwise: None, data_type: e.data_type() };
        }
    }
    let mut table = heap.clone();
    table.columns = (0..meta.columns.len()).collect();
    Some((From { source: Source::Heap(table), scope: Scope::new(table_columns) }, conditions, outputs))
}

/// What `builder` holds joined with the LATERAL item `factor`: the subquery pulled up
/// into the join tree ([`pulled_up`]), or else a nested loop running the item per row of
/// what was built so far, whose output starts a new builder.
fn lateral_join<'c, 'a>(mut builder: FromBuilder<'c, 'a>, factor: &TableFactor, kind: Kind, constraint: &ast::JoinConstraint, conditions: &[ast::Expr], ctx: &'c PlanContext<'a>) -> Result<FromBuilder<'c, 'a>> {
    let left_scope = builder.scope();
    if let Some(pulled) = pulled_up_select(&left_scope, factor, kind, constraint, conditions, ctx) {
        builder.join_lateral_from(pulled.sub, pulled.left_join, pulled.conditions, pulled.item, pulled.outputs)?;
        return Ok(builder);
    }
    let outer = OuterQuery::new(&left_scope, ctx.outer);
    let inner_ctx = ctx.nested(Some(&outer));
    let planned = plan_table_factor(factor, &inner_ctx);
    ctx.init_plan_count.set(inner_ctx.init_plan_count.get());
    let planned = planned?;
    let params = outer.params.into_inner();
    let left_visible = left_scope.columns.len();
    let left_width = left_visible + left_scope.qualified_only.len();
    let inner_width = planned.scope.columns.len();
    let mut scope = Scope::new(left_scope.columns.iter().chain(&planned.scope.columns).cloned().collect());
    scope.qualified_only = left_scope.qualified_only.clone();
    // ON, over the loop's scope (the left's visible columns, the item's, the left's
    // qualified-only ones).
    let on = match constraint {
        ast::JoinConstraint::On(condition) => {
            crate::srf::refuse_in_clause(Some(condition), "JOIN conditions")?;
            if contains_aggregate(condition) {
                return Err(Error::new(SqlState::GROUPING_ERROR, "aggregate functions are not allowed in JOIN conditions"));
            }
            match require_bool(Binder::new(&scope).planning(ctx).bind(condition)?, "JOIN/ON")? {
                Expr::Literal { value: weft_common::Datum::Bool(true), .. } => None,
                other => Some(other),
            }
        }
        ast::JoinConstraint::None => None,
        _ => return Err(Error::not_supported("JOIN LATERAL with USING or NATURAL is not supported")),
    };
    // A WHERE condition that a NULL-extended row of the item cannot pass makes the LEFT
    // join an inner one (PostgreSQL's reduce_outer_joins; the join planner does it for a
    // pulled-up item too, but this decides whether its columns need guarding).
    let kind = if kind == Kind::Left && rejects_null_item(conditions, &scope, left_visible..left_visible + inner_width, ctx) { Kind::Inner } else { kind };
    if let Some((table, join_conditions, outputs)) = pulled_up(&left_scope, factor, &planned, &params, on.as_ref(), kind, ctx) {
        builder.join_lateral_table(table, kind == Kind::Left, join_conditions, planned.scope.columns.clone(), outputs)?;
        return Ok(builder);
    }
    let left = collapse(builder, conditions, ctx)?;
    // Scope order: the left's visible columns, the item's, then the left's qualified-only
    // ones; the loop's rows are the left's row (visible, qualified-only), then the item's.
    let scope_to_raw: BTreeMap<usize, usize> = (0..left_visible)
        .map(|i| (i, i))
        .chain((0..inner_width).map(|j| (left_visible + j, left_width + j)))
        .chain((0..left_width - left_visible).map(|k| (left_visible + inner_width + k, left_visible + k)))
        .collect();
    let filter = on.map(|mut on| {
        remap_columns(&mut on, &scope_to_raw);
        on
    });
    let inner_types = planned.scope.columns.iter().map(|c| c.data_type).collect();
    let inner = match planned.source {
        Source::Subquery { plan, .. } => *plan,
        source => Plan::Pipeline(Pipeline { source, steps: Vec::new(), workers: 0 }),
    };
    let outer_plan = match left.source {
        Source::Subquery { plan, label } if label.alias.is_none() => *plan,
        source => Plan::Pipeline(Pipeline { source, steps: Vec::new(), workers: 0 }),
    };
    let nest_loop = Plan::NestLoop(NestLoopPlan {
        outer: Box::new(outer_plan),
        inner: Box::new(inner),
        params,
        filter,
        left: kind == Kind::Left,
        inner_types,
        stop_after: None,
    });
    let names: Vec<String> = scope.columns.iter().chain(&scope.qualified_only).map(|c| c.name.clone()).collect();
    let plan = if left_width == left_visible {
        nest_loop
    } else {
        let reorder = (0..left_width + inner_width)
            .map(|i| {
                let raw = scope_to_raw[&i];
                let data_type = scope.column_at(i).data_type;
                Expr::Column { index: raw, data_type }
            })
            .collect();
        let label = ScanLabel { alias: None, columns: names.clone() };
        Plan::Pipeline(Pipeline { source: Source::Subquery { plan: Box::new(nest_loop), label }, steps: vec![Step::Project(reorder)], workers: 0 })
    };
    let mut builder = FromBuilder::new(ctx);
    builder.add_from(From { source: Source::Subquery { plan: Box::new(plan), label: ScanLabel { alias: None, columns: names } }, scope })?;
    Ok(builder)
}

/// Does a WHERE conjunct (`conditions`, bound in the loop's `scope`) reject every row
/// whose item columns (the scope's `item` range) are NULL, as a NULL-extended row's are?
fn rejects_null_item(conditions: &[ast::Expr], scope: &Scope, item: std::ops::Range<usize>, ctx: &PlanContext) -> bool {
    let alone = ctx.nested(None);
    conditions
        .iter()
        .filter_map(|c| Binder::new(scope).planning(&alone).bind(c).ok())
        .filter(|e| e.data_type() == weft_common::DataType::Bool)
        .any(|e| crate::exprutil::nonnullable_columns(&e).iter().any(|c| item.contains(c)))
}

/// A LATERAL subquery over several tables pulled up (see [`pulled_up_select`]).
struct PulledUpSelect<'c, 'a> {
    /// Its FROM clause, analysed on its own.
    sub: FromBuilder<'c, 'a>,
    left_join: bool,
    /// The join's conditions and the item's columns, over the subquery's scope columns
    /// followed by the left's.
    conditions: Vec<Expr>,
    item: Vec<ScopeColumn>,
    outputs: Vec<Expr>,
}

/// A LATERAL subquery whose FROM clause joins several tables by inner joins, and that
/// only filters and projects their rows (the shape of [`simple_select`], nothing
/// volatile), pulled up into the join tree as [`pulled_up`] does for one table: its
/// tables join the left on its WHERE and the ON condition. Bound from the text, not
/// planned: the WHERE and the select list read the left's columns as columns of an outer
/// scope. `None` for any other item, or when anything fails to bind (the loop then plans
/// it and reports the error).
fn pulled_up_select<'c, 'a>(left_scope: &Scope, factor: &TableFactor, kind: Kind, constraint: &ast::JoinConstraint, where_conditions: &[ast::Expr], ctx: &'c PlanContext<'a>) -> Option<PulledUpSelect<'c, 'a>> {
    let TableFactor::Derived { subquery, alias: Some(alias), .. } = factor else { return None };
    let select = simple_select(subquery)?;
    // One table: planned as a subquery and pulled up by `pulled_up`.
    if select.from.iter().map(|t| 1 + t.joins.len()).sum::<usize>() < 2 {
        return None;
    }
    let mut sub = FromBuilder::new(ctx);
    for item in &select.from {
        sub.add(&Piece::Item(item.clone())).ok()?;
    }
    let mut scope = sub.scope();
    if !sub.is_inner_only() || !scope.qualified_only.is_empty() {
        return None;
    }
    let sub_width = scope.columns.len();
    scope.outer = left_scope.columns.iter().chain(&left_scope.qualified_only).cloned().collect();
    scope.outer_qualified_only = left_scope.qualified_only.len();
    let bind = |e: &ast::Expr| Binder::new(&scope).planning(ctx).bind(e).ok();
    let mut conditions = Vec::new();
    if let Some(selection) = &select.selection {
        let bound = bind(selection).filter(|b| b.data_type() == weft_common::DataType::Bool)?;
        conditions.extend(bound.conjuncts().into_iter().cloned());
    }
    let mut outputs = Vec::new();
    let mut names = Vec::new();
    let column = |i: usize| Expr::Column { index: i, data_type: scope.columns[i].data_type };
    for item in &select.projection {
        match item {
            ast::SelectItem::UnnamedExpr(e) => {
                outputs.push(bind(e)?);
                names.push(crate::bind::column_name(e));
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                outputs.push(bind(expr)?);
                names.push(ident_name(alias));
            }
            ast::SelectItem::Wildcard(_) => {
                outputs.extend((0..sub_width).map(column));
                names.extend(scope.columns.iter().map(|c| c.name.clone()));
            }
            ast::SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                let qualifier = crate::bind::object_name(name).ok()?;
                let columns: Vec<usize> = (0..sub_width).filter(|&i| scope.columns[i].table.as_deref() == Some(qualifier.as_str())).collect();
                if columns.is_empty() {
                    return None;
                }
                outputs.extend(columns.iter().map(|&i| column(i)));
                names.extend(columns.iter().map(|&i| scope.columns[i].name.clone()));
            }
            _ => return None,
        }
    }
    if outputs.iter().chain(&conditions).any(Expr::runs_per_row) || alias.columns.len() > outputs.len() {
        return None;
    }
    let qualifier = ident_name(&alias.name);
    let item: Vec<ScopeColumn> = outputs
        .iter()
        .zip(names)
        .enumerate()
        .map(|(i, (e, name))| ScopeColumn {
            table: Some(qualifier.clone()),
            name: alias.columns.get(i).map(|c| ident_name(&c.name)).unwrap_or(name),
            data_type: e.data_type(),
            type_modifier: crate::bind::output_modifier(e, &scope),
        })
        .collect();
    // ON, bound in the loop's scope (the left's visible columns, the item's, the left's
    // qualified-only ones), then over the subquery's columns and the left's.
    let left_visible = left_scope.columns.len();
    let left_width = left_visible + left_scope.qualified_only.len();
    let mut loop_scope = Scope::new(left_scope.columns.iter().chain(&item).cloned().collect());
    loop_scope.qualified_only = left_scope.qualified_only.clone();
    let left_column = |i: usize| Expr::Column { index: sub_width + i, data_type: left_scope.column_at(i).data_type };
    match constraint {
        ast::JoinConstraint::On(condition) => {
            if contains_aggregate(condition) || crate::srf::contains_srf(condition) {
                return None;
            }
            let on = Binder::new(&loop_scope).planning(ctx).bind(condition).ok().filter(|b| b.data_type() == weft_common::DataType::Bool)?;
            if on.runs_per_row() {
                return None;
            }
            let values: Vec<Expr> = (0..left_visible).map(left_column).chain(outputs.iter().cloned()).chain((left_visible..left_width).map(left_column)).collect();
            conditions.extend(crate::exprutil::substitute_columns(&on, &values).conjuncts().into_iter().cloned());
        }
        ast::JoinConstraint::None => {}
        _ => return None,
    }
    let item_columns = left_visible..left_visible + item.len();
    let left_join = kind == Kind::Left && !rejects_null_item(where_conditions, &loop_scope, item_columns, ctx);
    if left_join {
        // As in `pulled_up`: a column not of the subquery's tables is NULL for a left row
        // nothing matched, guarded by a column the conditions prove non-null.
        let proven = conditions.iter().flat_map(crate::exprutil::nonnullable_columns).filter(|&c| c < sub_width).min()?;
        let matched = column(proven);
        for e in &mut outputs {
            if matches!(e, Expr::Column { index, .. } if *index < sub_width) {
                continue;
            }
            let when = Expr::IsNull { expr: Box::new(matched.clone()), negated: true };
            *e = Expr::Case { whens: vec![(when, e.clone())], otherwise: None, data_type: e.data_type() };
        }
    }
    Some(PulledUpSelect { sub, left_join, conditions, item, outputs })
}

/// A subquery that is one SELECT over plain tables joined by inner joins (ON) or commas,
/// without WITH, ORDER BY, LIMIT, DISTINCT, grouping, aggregates, windows, set-returning
/// calls or subqueries: PostgreSQL's simple subquery, which it pulls up.
fn simple_select(query: &ast::Query) -> Option<&ast::Select> {
    let ast::SetExpr::Select(select) = query.body.as_ref() else { return None };
    let plain_query = query.with.is_none() && query.order_by.is_none() && query.limit_clause.is_none() && query.fetch.is_none() && query.locks.is_empty();
    let plain_select = select.distinct.is_none()
        && select.top.is_none()
        && select.into.is_none()
        && select.having.is_none()
        && select.exclude.is_none()
        && select.prewhere.is_none()
        && select.qualify.is_none()
        && select.named_window.is_empty()
        && select.lateral_views.is_empty()
        && select.connect_by.is_empty()
        && select.cluster_by.is_empty()
        && select.distribute_by.is_empty()
        && select.sort_by.is_empty()
        && matches!(&select.group_by, ast::GroupByExpr::Expressions(keys, modifiers) if keys.is_empty() && modifiers.is_empty());
    let plain_expr = |e: &ast::Expr| !contains_aggregate(e) && !crate::window::contains_window(e) && !crate::srf::contains_srf(e) && !crate::bind::contains_subquery(e);
    let plain_items = select.projection.iter().all(|item| match item {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => plain_expr(e),
        _ => true,
    }) && select.selection.iter().all(plain_expr);
    let table = |f: &TableFactor| matches!(f, TableFactor::Table { args: None, .. });
    use ast::JoinOperator as J;
    let plain_from = select.from.iter().all(|t| {
        table(&t.relation)
            && t.joins.iter().all(|j| {
                table(&j.relation)
                    && matches!(&j.join_operator, J::Join(ast::JoinConstraint::On(_)) | J::Inner(ast::JoinConstraint::On(_)) | J::CrossJoin(ast::JoinConstraint::None))
            })
    });
    (plain_query && plain_select && plain_items && plain_from).then_some(select.as_ref())
}
