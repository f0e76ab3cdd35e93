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
//! the left side, as in PostgreSQL. The WHERE clause's conditions on the relation before
//! an item alone filter its rows before the loop (they are applied again above it), as
//! PostgreSQL pushes them down: the item does not run for rows WHERE drops anyway.

use std::collections::BTreeMap;

use sqlparser::ast::{self, TableFactor};
use weft_common::{DataType, Error, Result, SqlState};
use weft_exec::expr::{BinaryOp, Expr};
use weft_exec::plan::{NestLoopPlan, Pipeline, Plan, ScanLabel, Source, Step};

use crate::bind::{contains_aggregate, contains_subquery, ident_name, Binder, Scope};
use crate::exprutil::remap_columns;
use crate::join::{analyze_pieces, FromClause, Piece};
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
/// `where_clause` is the query's WHERE, whose conditions on the relation before a LATERAL
/// item are applied to it before the item runs — unless a RIGHT or FULL join follows, which
/// could NULL-extend that relation's columns (`a.x IS NULL` would then keep other rows).
pub(crate) fn analyze_lateral_from(from: &[ast::TableWithJoins], where_clause: Option<&ast::Expr>, ctx: &PlanContext) -> Result<FromClause> {
    let mut current: Option<From> = None;
    let mut pending: Vec<Piece> = Vec::new();
    // WHERE for the relation before a LATERAL item when the joins from `joins` of item `i`
    // on leave its rows unextended.
    let pushable = |i: usize, joins: usize| {
        use ast::JoinOperator as J;
        let later = from[i].joins.iter().skip(joins).chain(from[i + 1..].iter().flat_map(|t| &t.joins));
        let extended = later.into_iter().any(|j| matches!(j.join_operator, J::Right(_) | J::RightOuter(_) | J::FullOuter(_)));
        where_clause.filter(|_| !extended)
    };
    for (i, item) in from.iter().enumerate() {
        if !item_has_lateral(item) {
            pending.push(Piece::Item(item.clone()));
            continue;
        }
        // The item's part before its first LATERAL factor is one piece of the comma list.
        let first = if is_lateral(&item.relation) { 0 } else { item.joins.iter().position(|j| is_lateral(&j.relation)).unwrap_or(item.joins.len()) + 1 };
        if first == 0 && current.is_none() && pending.is_empty() {
            // Nothing to its left: planned alone (a reference to a later item fails).
            pending.push(Piece::Item(ast::TableWithJoins { relation: item.relation.clone(), joins: Vec::new() }));
        } else if first == 0 {
            let left = collapse(current.take(), std::mem::take(&mut pending), pushable(i, 0), ctx)?;
            current = Some(nest_loop(left, &item.relation, Kind::Inner, &ast::JoinConstraint::None, ctx)?);
        } else {
            pending.push(Piece::Item(ast::TableWithJoins { relation: item.relation.clone(), joins: item.joins[..first - 1].to_vec() }));
        }
        for (j, join) in item.joins.iter().enumerate().skip(first.saturating_sub(1)) {
            // (`first` 0: every join follows the LATERAL relation.)
            if !is_lateral(&join.relation) {
                pending.push(Piece::Join(join.clone()));
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
                pending.push(Piece::Join(join.clone()));
                continue;
            }
            let left = collapse(current.take(), std::mem::take(&mut pending), pushable(i, j + 1), ctx)?;
            current = Some(nest_loop(left, &join.relation, kind, constraint, ctx)?);
        }
    }
    analyze_pieces(current, &pending, ctx)
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

/// The pieces before a LATERAL item (after the relation `current` built so far) as one
/// relation whose row is its scope's columns in order, filtered by the conditions of
/// `where_clause` on it alone.
fn collapse(current: Option<From>, pieces: Vec<Piece>, where_clause: Option<&ast::Expr>, ctx: &PlanContext) -> Result<From> {
    let single = matches!(
        (&current, pieces.as_slice()),
        (None, [Piece::Item(item)]) if item.joins.is_empty() && !matches!(item.relation, TableFactor::NestedJoin { .. })
    );
    let (current, pieces) = match (current, pieces) {
        (None, pieces) if single => {
            let Some(Piece::Item(item)) = pieces.first() else { return Err(Error::internal("a LATERAL item's left side is not one item")) };
            (Some(plan_table_factor(&item.relation, ctx)?), Vec::new())
        }
        (None, pieces) if pieces.is_empty() => return Err(Error::internal("a LATERAL item with nothing to its left")),
        other => other,
    };
    match (current, pieces.as_slice()) {
        (Some(current), []) if pushed_filter(where_clause, &current.scope).is_none() => Ok(current),
        (current, _) => {
            let clause = analyze_pieces(current, &pieces, ctx)?;
            let scope = clause.scope.clone();
            let filter = pushed_filter(where_clause, &scope);
            let used = (0..scope.columns.len() + scope.qualified_only.len()).collect();
            let input = crate::join::plan_joins(clause, filter, &[], &used, false, ctx)?;
            let plan = Plan::Pipeline(Pipeline { source: input.source, steps: input.steps, workers: input.workers });
            let label = ScanLabel { alias: None, columns: scope.columns.iter().chain(&scope.qualified_only).map(|c| c.name.clone()).collect() };
            Ok(From { source: Source::Subquery { plan: Box::new(plan), label }, scope })
        }
    }
}

/// The conditions ANDed at the top of `where_clause` that read only `scope`'s columns,
/// bound over it; `None` without any. One that holds a subquery, an aggregate, a window
/// function or a volatile call stays where it is.
fn pushed_filter(where_clause: Option<&ast::Expr>, scope: &Scope) -> Option<Expr> {
    let mut conjuncts = Vec::new();
    let mut pending: Vec<&ast::Expr> = where_clause.into_iter().collect();
    while let Some(e) = pending.pop() {
        match e {
            ast::Expr::BinaryOp { left, op: ast::BinaryOperator::And, right } => {
                pending.push(right);
                pending.push(left);
            }
            ast::Expr::Nested(inner) => pending.push(inner),
            other => conjuncts.push(other),
        }
    }
    let mut pushed: Option<Expr> = None;
    for conjunct in conjuncts {
        if contains_subquery(conjunct) || contains_aggregate(conjunct) || crate::window::contains_window(conjunct) {
            continue;
        }
        // A name the scope lacks (a later item's column, an outer query's) fails to bind.
        let Ok(bound) = Binder::new(scope).bind(conjunct) else { continue };
        if bound.data_type() != DataType::Bool || crate::exprutil::is_volatile(&bound) {
            continue;
        }
        pushed = Some(match pushed {
            None => bound,
            Some(p) => Expr::Binary { op: BinaryOp::And, left: Box::new(p), right: Box::new(bound), data_type: DataType::Bool },
        });
    }
    pushed
}

/// `left` joined with the LATERAL item `factor`: a nested loop running the item per row.
fn nest_loop(left: From, factor: &TableFactor, kind: Kind, constraint: &ast::JoinConstraint, ctx: &PlanContext) -> Result<From> {
    let outer = OuterQuery::new(&left.scope, ctx.outer);
    let inner_ctx = ctx.nested(Some(&outer));
    let planned = plan_table_factor(factor, &inner_ctx);
    ctx.init_plan_count.set(inner_ctx.init_plan_count.get());
    let planned = planned?;
    let params = outer.params.into_inner();
    let left_visible = left.scope.columns.len();
    let left_width = left_visible + left.scope.qualified_only.len();
    let inner_width = planned.scope.columns.len();
    // Scope order: the left's visible columns, the item's, then the left's qualified-only
    // ones; the loop's rows are the left's row (visible, qualified-only), then the item's.
    let scope_to_raw: BTreeMap<usize, usize> = (0..left_visible)
        .map(|i| (i, i))
        .chain((0..inner_width).map(|j| (left_visible + j, left_width + j)))
        .chain((0..left_width - left_visible).map(|k| (left_visible + inner_width + k, left_visible + k)))
        .collect();
    let mut scope = Scope::new(left.scope.columns.iter().chain(&planned.scope.columns).cloned().collect());
    scope.qualified_only = left.scope.qualified_only.clone();
    let filter = match constraint {
        ast::JoinConstraint::On(condition) => {
            if contains_aggregate(condition) {
                return Err(Error::new(SqlState::GROUPING_ERROR, "aggregate functions are not allowed in JOIN conditions"));
            }
            let mut bound = require_bool(Binder::new(&scope).planning(ctx).bind(condition)?, "JOIN/ON")?;
            remap_columns(&mut bound, &scope_to_raw);
            match bound {
                Expr::Literal { value: weft_common::Datum::Bool(true), .. } => None,
                other => Some(other),
            }
        }
        ast::JoinConstraint::None => None,
        _ => return Err(Error::not_supported("JOIN LATERAL with USING or NATURAL is not supported")),
    };
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
    Ok(From { source: Source::Subquery { plan: Box::new(plan), label: ScanLabel { alias: None, columns: names } }, scope })
}
