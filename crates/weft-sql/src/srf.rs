//! Set-returning functions (`generate_series`, `unnest`, `pg_partition_ancestors`) in a
//! select list, with PostgreSQL 10+'s semantics: `Plan::ProjectSet` (weft-exec's
//! `project_set.rs`).
//!
//! The binder, given an [`SrfContext`], binds such a call's arguments (over the level's
//! row: the scope's, or a grouped query's keys and aggregates, or window values) and
//! replaces the call by a placeholder column, as window calls are. A call whose arguments
//! read another call's placeholder sits one level above it. [`pre_srf_projection`] then
//! splits the select list: what the level's plan must produce (the columns the list and
//! the calls read), and [`PendingSrfs`], one ProjectSet per level over it, the select list
//! on the last. So aggregates and windows run below the calls, and ORDER BY, DISTINCT and
//! LIMIT above them. Anywhere else a call is refused with PostgreSQL's 0A000 (WHERE,
//! HAVING, JOIN conditions, CASE, COALESCE, aggregate arguments, ...).
//!
//! One rewrite remains: a grouped select whose calls are grouping keys (`SELECT unnest(tags)
//! AS tag, count(*) ... GROUP BY tag`, where PostgreSQL's ProjectSet runs below its Agg)
//! moves the call to FROM, as a (LATERAL) function item: with one call that is the same.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitorMut};

use weft_common::{DataType, Error, Result, SqlState};
use weft_exec::expr::Expr;
use weft_exec::{Plan, ProjectSetPlan, SetFunction, Step};

use crate::bind::{column_name, Binder};
use crate::exprutil::{columns_used, remap_columns};

/// The FROM name of the series a select list's calls were moved to.
const SERIES_ALIAS: &str = "?series";

/// A grouped `select` with its select-list `generate_series` / `unnest` call moved to
/// FROM when the call's items are grouping keys, else `None`.
pub(crate) fn move_series_to_from(select: &ast::Select) -> Option<ast::Select> {
    let grouped = select.having.is_some()
        || !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        || select.projection.iter().any(|item| match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                crate::bind::contains_aggregate(e) || crate::window::contains_window(e)
            }
            _ => false,
        });
    // The grouping reads the series' values, as PostgreSQL's ProjectSet below its Agg
    // computes them.
    if !grouped || !series_items_are_grouping_keys(select) {
        return None;
    }
    let mut finder = SeriesCalls::default();
    let mut projection = select.projection.clone();
    let _ = crate::ast_walk::walk_mut(&mut projection, &mut finder);
    let mut group_by = select.group_by.clone();
    // `GROUP BY unnest(tags)` groups by the same column.
    let _ = crate::ast_walk::walk_mut(&mut group_by, &mut finder);
    let call = finder.call.filter(|_| !finder.refused)?;
    let ast::FunctionArguments::List(list) = &call.args else { return None };
    let args: Vec<String> = list.args.iter().map(|a| a.to_string()).collect();
    let name = series_name(&call)?;
    let sql = format!("SELECT 1 FROM {name}({}) AS \"{SERIES_ALIAS}\"({name})", args.join(", "));
    let parsed = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &sql).ok()?;
    let ast::Statement::Query(query) = parsed.into_iter().next()? else { return None };
    let ast::SetExpr::Select(series_select) = *query.body else { return None };
    let series = series_select.from.into_iter().next()?;

    let mut rewritten = select.clone();
    rewritten.projection = select
        .projection
        .iter()
        .zip(projection)
        .map(|(original, moved)| match (original, moved) {
            // Keep the name the item had before its call became a column.
            (ast::SelectItem::UnnamedExpr(before), ast::SelectItem::UnnamedExpr(after)) if before != &after => {
                ast::SelectItem::ExprWithAlias { expr: after, alias: ast::Ident::with_quote('"', column_name(before)) }
            }
            (_, moved) => moved,
        })
        .collect();
    rewritten.group_by = group_by;
    rewritten.from.push(series);
    Some(rewritten)
}

/// Does a grouped select list call its set-returning function only in items that are
/// grouping keys (named in GROUP BY by alias, position or the same expression) or that
/// the call itself is a key for, outside aggregates and window functions?
fn series_items_are_grouping_keys(select: &ast::Select) -> bool {
    let ast::GroupByExpr::Expressions(keys, _) = &select.group_by else { return false };
    let mut any = false;
    for (position, item) in select.projection.iter().enumerate() {
        let (expr, alias) = match item {
            ast::SelectItem::UnnamedExpr(e) => (e, None),
            ast::SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
            _ => continue,
        };
        let mut finder = SeriesCalls::default();
        let _ = crate::ast_walk::walk_mut(&mut expr.clone(), &mut finder);
        if finder.call.is_none() && !finder.refused {
            continue;
        }
        any = true;
        if crate::bind::contains_aggregate(expr) || crate::window::contains_window(expr) {
            return false;
        }
        let keyed = keys.iter().any(|key| {
            key == expr
                || matches!((key, &finder.call), (ast::Expr::Function(k), Some(call)) if k == call)
                || key.to_string() == (position + 1).to_string()
                || matches!((key, alias), (ast::Expr::Identifier(k), Some(a)) if crate::bind::ident_name(k) == crate::bind::ident_name(a))
        });
        if !keyed {
            return false;
        }
    }
    any
}

/// Finds the select list's `generate_series` calls and replaces each by the series column.
#[derive(Default)]
struct SeriesCalls {
    call: Option<ast::Function>,
    /// Subqueries entered (their calls are their own).
    depth: usize,
    /// A call that cannot move: bounds that read columns, or a second, different series.
    refused: bool,
}

impl VisitorMut for SeriesCalls {
    type Break = ();

    fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::Function(f) = expr else { return ControlFlow::Continue(()) };
        let Some(name) = series_name(f).filter(|_| self.depth == 0) else {
            return ControlFlow::Continue(());
        };
        if (name == "generate_series" && reads_columns(f)) || self.call.as_ref().is_some_and(|c| c != f) {
            self.refused = true;
            return ControlFlow::Continue(());
        }
        self.call = Some(f.clone());
        *expr = ast::Expr::CompoundIdentifier(vec![ast::Ident::with_quote('"', SERIES_ALIAS), ast::Ident::new(name)]);
        ControlFlow::Continue(())
    }
}

/// The set-returning function `f` calls, if it is one that can move.
fn series_name(f: &ast::Function) -> Option<&'static str> {
    // Also qualified by `pg_catalog`, their schema in PostgreSQL.
    let part = match f.name.0.as_slice() {
        [part] => part,
        [schema, part] if schema.as_ident().is_some_and(|s| crate::bind::ident_name(s) == "pg_catalog") => part,
        _ => return None,
    };
    let ident = part.as_ident().filter(|i| i.quote_style.is_none())?;
    ["generate_series", "unnest", "pg_partition_ancestors"].into_iter().find(|name| ident.value.eq_ignore_ascii_case(name))
}

/// Do the call's arguments read a column or run a subquery?
fn reads_columns(f: &ast::Function) -> bool {
    let mut reads = false;
    let _ = crate::ast_walk::expressions(&f.args, |e| {
        reads |= matches!(
            e,
            ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) | ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. }
        );
        ControlFlow::<()>::Continue(())
    });
    reads
}

/// The hint PostgreSQL gives with its refusals of a set-returning call.
pub(crate) const LATERAL_HINT: &str = "You might be able to move the set-returning function into a LATERAL FROM item.";

/// Placeholder columns of set-returning calls start here (window calls' start at 1 << 40).
const PLACEHOLDER_BASE: usize = 1 << 44;

/// Is `f` a set-returning function call?
fn is_set_returning(f: &ast::Function) -> bool {
    f.over.is_none() && series_name(f).is_some()
}

/// Does `e` call a set-returning function at this query level?
pub(crate) fn contains_srf(e: &ast::Expr) -> bool {
    crate::bind::contains_call(e, is_set_returning)
}

/// PostgreSQL's refusal of a set-returning call among the arguments of `construct`
/// (COALESCE), whose arguments are evaluated only as far as needed.
pub(crate) fn refuse_in_conditional(args: &ast::FunctionArguments, construct: &str) -> Result<()> {
    let mut found = false;
    let _ = crate::ast_walk::expressions(args, |e| {
        found |= matches!(e, ast::Expr::Function(f) if is_set_returning(f));
        ControlFlow::<()>::Continue(())
    });
    if found {
        return Err(Error::new(SqlState::FEATURE_NOT_SUPPORTED, format!("set-returning functions are not allowed in {construct}")).with_hint(LATERAL_HINT));
    }
    Ok(())
}

/// PostgreSQL's refusal of a set-returning call in `clause` (WHERE, HAVING, JOIN
/// conditions, ...), checked before the clause is bound.
pub(crate) fn refuse_in_clause(e: Option<&ast::Expr>, clause: &str) -> Result<()> {
    match e {
        Some(e) if contains_srf(e) => Err(Error::new(SqlState::FEATURE_NOT_SUPPORTED, format!("set-returning functions are not allowed in {clause}"))),
        _ => Ok(()),
    }
}

/// The set-returning calls of one query level's select list, in binding order: each with
/// its level (0 when its arguments read no other call, else one above the highest call
/// they read).
#[derive(Default)]
pub(crate) struct SrfContext {
    calls: Vec<(SetFunction, usize)>,
}

impl SrfContext {
    pub(crate) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

/// Bind `name(args)` (arguments already bound): its placeholder column.
pub(crate) fn bind_set_returning_call(binder: &mut Binder, name: &str, args: Vec<Expr>) -> Result<Expr> {
    let Some(srfs) = binder.srfs.as_deref_mut() else {
        return Err(Error::new(SqlState::FEATURE_NOT_SUPPORTED, "set-returning functions are not allowed here"));
    };
    let function = if name == "pg_partition_ancestors" {
        // weft has no partitions: no ancestors, not even the relation itself (as for a
        // relation that is no partition), whatever the argument.
        if args.len() != 1 {
            return Err(crate::bind::no_aggregate("pg_partition_ancestors", &args));
        }
        SetFunction::Unnest { array: crate::planner::empty_oids(), data_type: DataType::Int8 }
    } else if name == "unnest" {
        let array = crate::planner::unnest_argument(args)?;
        let data_type = array.data_type().element().ok_or_else(|| Error::internal("unnest of a non-array"))?;
        SetFunction::Unnest { array, data_type }
    } else {
        let (args, data_type) = crate::planner::series_signature(args)?;
        SetFunction::Series { args, data_type }
    };
    let mut read = BTreeSet::new();
    function.args().into_iter().for_each(|a| columns_used(a, &mut read));
    let level = read
        .range(PLACEHOLDER_BASE..)
        .map(|&c| srfs.calls[c - PLACEHOLDER_BASE].1 + 1)
        .max()
        .unwrap_or(0);
    let data_type = function.result_type();
    // The same call twice is one set: in lockstep, both would give the same values.
    let k = match srfs.calls.iter().position(|(f, l)| *l == level && *f == function) {
        Some(k) => k,
        None => {
            srfs.calls.push((function, level));
            srfs.calls.len() - 1
        }
    };
    Ok(Expr::Column { index: PLACEHOLDER_BASE + k, data_type })
}

/// Split a level's bound `outputs` (reading set-returning placeholders of `srfs`) into
/// what the level's plan must produce (the non-placeholder columns the outputs and the
/// calls read) and the ProjectSet nodes to put over it.
pub(crate) fn pre_srf_projection(outputs: Vec<Expr>, srfs: SrfContext) -> (Vec<Expr>, PendingSrfs) {
    let mut types: BTreeMap<usize, DataType> = BTreeMap::new();
    let mut note = |e: &Expr| {
        crate::exprutil::walk(e, &mut |x| {
            if let Expr::Column { index, data_type } = x {
                types.insert(*index, *data_type);
            }
        })
    };
    outputs.iter().for_each(&mut note);
    srfs.calls.iter().flat_map(|(f, _)| f.args()).for_each(&mut note);
    let mut pre = Vec::new();
    let mut map = BTreeMap::new();
    for (&index, &data_type) in types.range(..PLACEHOLDER_BASE) {
        map.insert(index, pre.len());
        pre.push(Expr::Column { index, data_type });
    }
    let width = pre.len();
    (pre, PendingSrfs { outputs, calls: srfs.calls, map, width })
}

/// The ProjectSet nodes and select list still to put over a level's plan.
pub(crate) struct PendingSrfs {
    outputs: Vec<Expr>,
    calls: Vec<(SetFunction, usize)>,
    /// Level column or placeholder → column of the rows a node reads.
    map: BTreeMap<usize, usize>,
    /// Columns of the plan's rows.
    width: usize,
}

impl PendingSrfs {
    /// One ProjectSet per level over `input` (which produces the pre-projection), each
    /// appending its calls' columns, the select list applied by the last.
    pub(crate) fn plan(self, input: Plan) -> Plan {
        let PendingSrfs { mut outputs, calls, mut map, mut width } = self;
        let levels = calls.iter().map(|(_, l)| l + 1).max().unwrap_or(0);
        let mut plan = input;
        for level in 0..levels {
            let mut functions = Vec::new();
            for (k, (function, _)) in calls.iter().enumerate().filter(|(_, (_, l))| *l == level) {
                let mut function = function.clone();
                function.args_mut().into_iter().for_each(|a| remap_columns(a, &map));
                functions.push(function);
                map.insert(PLACEHOLDER_BASE + k, width);
                width += 1;
            }
            let output = if level + 1 == levels {
                outputs.iter_mut().for_each(|e| remap_columns(e, &map));
                vec![Step::Project(std::mem::take(&mut outputs))]
            } else {
                Vec::new()
            };
            plan = Plan::ProjectSet(ProjectSetPlan { input: Box::new(plan), functions, output, stop_after: None });
        }
        plan
    }
}
