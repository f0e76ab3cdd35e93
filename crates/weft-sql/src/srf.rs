//! `generate_series(...)` in a select list, as in `INSERT INTO t SELECT generate_series(1,
//! 1000), 'x'`. PostgreSQL's ProjectSet emits, for each input row, one row per value of
//! the series; when the series' bounds read no column, that is the input cross joined with
//! the series in FROM. The select is rewritten so: the calls become a column of a series
//! added to FROM under a name no user writes, and each item keeps the output name it had
//! (`generate_series`, or `?column?` for `generate_series(1, 3) * 2`). Bounds that read
//! columns (PostgreSQL's LATERAL case), different series in one list, and calls inside
//! aggregates are left alone, and binding reports them as not supported. A grouped select
//! moves them only when their items are grouping keys (`SELECT unnest(tags) AS tag,
//! count(*) ... GROUP BY tag`): its groups are then over the series' values.
//!
//! `unnest(array)` moves the same way, also when its argument reads columns: the FROM
//! item is then LATERAL (`lateral.rs`), and a cross join with it is what ProjectSet does
//! with one set-returning call (an input row whose array is NULL or empty yields no row).

use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitorMut};

use crate::bind::column_name;

/// The FROM name of the series a select list's calls were moved to.
const SERIES_ALIAS: &str = "?series";

/// `select` with its select-list `generate_series` calls moved to FROM, or `None` when it
/// has none that can move.
pub(crate) fn move_series_to_from(select: &ast::Select) -> Option<ast::Select> {
    // Aggregates and window functions run before PostgreSQL's ProjectSet: a series beside
    // them would multiply their input here.
    let grouped = select.having.is_some()
        || !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        || select.projection.iter().any(|item| match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                crate::bind::contains_aggregate(e) || crate::window::contains_window(e)
            }
            _ => false,
        });
    // Unless the calls' items are grouping keys: the grouping then reads the series'
    // values, as PostgreSQL's ProjectSet below its Agg computes them.
    if grouped && !series_items_are_grouping_keys(select) {
        return None;
    }
    let mut finder = SeriesCalls::default();
    let mut projection = select.projection.clone();
    let _ = crate::ast_walk::walk_mut(&mut projection, &mut finder);
    let mut group_by = select.group_by.clone();
    if grouped {
        // `GROUP BY unnest(tags)` groups by the same column.
        let _ = crate::ast_walk::walk_mut(&mut group_by, &mut finder);
    }
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
