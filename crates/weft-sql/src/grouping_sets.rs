//! `GROUP BY GROUPING SETS (...)`, `ROLLUP (...)`, `CUBE (...)` and `GROUPING(...)`.
//!
//! The GROUP BY list is expanded into its grouping sets (the cross product of its items,
//! duplicates kept, as PostgreSQL keeps them), each a list of positions among the query's
//! distinct grouping expressions (its *keys*). Each set is planned as an aggregate of its
//! own over the FROM clause, grouped by the set's keys; its output is first laid out as the
//! whole query's (every key, one column per distinct `GROUPING(...)` call, then the calls)
//! with NULL for the keys outside the set and the set's bitmask in each GROUPING column,
//! so the select list, HAVING and ORDER BY are bound once, against that layout. The sets'
//! aggregates are appended, and window functions run over the append.
//!
//! Reading the input once per set is simpler than expanding each row into one row per
//! set (PostgreSQL's MixedAggregate): every set gets the aggregate's parallel and spilling
//! paths as they are, and the empty set `()` is an aggregate without keys, so it yields
//! its one row over no input as `SELECT count(*)` does.

use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitorMut};
use weft_common::{Datum, Error, Result, SqlState};
use weft_exec::expr::Expr;
use weft_exec::plan::{Plan, SetOpPlan, SetOperator, Step};

use crate::bind::{contains_call, object_name, AggregateContext, Binder, Scope};
use crate::planner::{analyze_from_clause, bind_grouped_outputs, plan_aggregate, visible_asts, FromPlan, GroupedOutputs, PlanContext, PlannedQuery};
use crate::window::WindowContext;

/// PostgreSQL's limit on the number of grouping sets a GROUP BY expands to.
const MAX_GROUPING_SETS: usize = 4096;

/// A GROUP BY expanded into grouping sets.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupingSets {
    /// The distinct grouping expressions, as written, in order of first appearance.
    pub keys: Vec<ast::Expr>,
    /// Each set: positions in `keys` (after binding, in the bound keys).
    pub sets: Vec<Vec<usize>>,
}

impl GroupingSets {
    /// A plain GROUP BY of `keys` expressions: one set of all of them.
    pub fn single(keys: usize) -> GroupingSets {
        GroupingSets { keys: Vec::new(), sets: vec![(0..keys).collect()] }
    }

    /// The grouping sets of a GROUP BY list, or `None` when it holds no GROUPING SETS,
    /// ROLLUP or CUBE (a plain list, planned as one set).
    pub fn expand(items: &[ast::Expr]) -> Result<Option<GroupingSets>> {
        if !items.iter().any(|e| matches!(e, ast::Expr::GroupingSets(_) | ast::Expr::Rollup(_) | ast::Expr::Cube(_))) {
            return Ok(None);
        }
        let mut keys = Vec::new();
        let mut product: Vec<Vec<usize>> = vec![Vec::new()];
        for item in items {
            let item_sets = match item {
                ast::Expr::Tuple(empty) if empty.is_empty() => vec![Vec::new()],
                ast::Expr::GroupingSets(lists) => {
                    let mut sets = Vec::new();
                    for list in lists {
                        sets.extend(grouping_sets_element(list, &mut keys)?);
                    }
                    sets
                }
                ast::Expr::Rollup(lists) => rollup(&elements(lists, &mut keys)),
                ast::Expr::Cube(lists) => cube(&elements(lists, &mut keys))?,
                plain => vec![vec![key_position(plain, &mut keys)]],
            };
            if product.len().saturating_mul(item_sets.len()) > MAX_GROUPING_SETS {
                return Err(too_many_sets());
            }
            product = product
                .iter()
                .flat_map(|left| item_sets.iter().map(move |right| left.iter().chain(right).copied().collect()))
                .collect();
        }
        Ok(Some(GroupingSets { keys, sets: product }))
    }
}

fn too_many_sets() -> Error {
    Error::new(SqlState("54001"), format!("too many grouping sets present (maximum {MAX_GROUPING_SETS})"))
}

/// The position of `expr` among `keys`, added when new.
fn key_position(expr: &ast::Expr, keys: &mut Vec<ast::Expr>) -> usize {
    let expr = strip_nested(expr);
    match keys.iter().position(|k| k == expr) {
        Some(p) => p,
        None => {
            keys.push(expr.clone());
            keys.len() - 1
        }
    }
}

fn strip_nested(mut expr: &ast::Expr) -> &ast::Expr {
    while let ast::Expr::Nested(inner) = expr {
        expr = inner;
    }
    expr
}

/// ROLLUP's and CUBE's elements: each a single expression or a parenthesized list.
fn elements(lists: &[Vec<ast::Expr>], keys: &mut Vec<ast::Expr>) -> Vec<Vec<usize>> {
    lists.iter().map(|list| list.iter().map(|e| key_position(e, keys)).collect()).collect()
}

/// `ROLLUP (e1, ..., en)`: the sets (e1..en), (e1..en-1), ..., ().
fn rollup(elements: &[Vec<usize>]) -> Vec<Vec<usize>> {
    (0..=elements.len()).rev().map(|n| elements[..n].concat()).collect()
}

/// `CUBE (e1, ..., en)`: every subset of the elements, the whole list first.
fn cube(elements: &[Vec<usize>]) -> Result<Vec<Vec<usize>>> {
    if elements.len() > 12 {
        return Err(Error::new(SqlState("54011"), "CUBE is limited to 12 elements"));
    }
    let n = elements.len();
    Ok((0..1usize << n)
        .rev()
        .map(|mask| (0..n).filter(|i| mask & (1 << (n - 1 - i)) != 0).flat_map(|i| elements[i].iter().copied()).collect())
        .collect())
}

/// One element of `GROUPING SETS (...)`: an expression, a parenthesized list (one set),
/// `()`, or a nested ROLLUP or CUBE (which sqlparser reads there as a function call).
fn grouping_sets_element(list: &[ast::Expr], keys: &mut Vec<ast::Expr>) -> Result<Vec<Vec<usize>>> {
    if let [ast::Expr::Function(f)] = list {
        let name = object_name(&f.name)?;
        if (name == "rollup" || name == "cube") && f.over.is_none() && f.filter.is_none() {
            let mut lists = Vec::new();
            for arg in function_args(f)? {
                lists.push(match strip_nested(arg) {
                    ast::Expr::Tuple(items) => items.clone(),
                    single => vec![single.clone()],
                });
            }
            let elements = elements(&lists, keys);
            return if name == "rollup" { Ok(rollup(&elements)) } else { cube(&elements) };
        }
    }
    if let [ast::Expr::GroupingSets(_) | ast::Expr::Rollup(_) | ast::Expr::Cube(_)] = list {
        return GroupingSets::expand(list).map(|sets| sets.map(|s| remap_into(s, keys)).unwrap_or_default());
    }
    Ok(vec![list.iter().map(|e| key_position(e, keys)).collect()])
}

/// Sets expanded against their own keys, renumbered against `keys`.
fn remap_into(expanded: GroupingSets, keys: &mut Vec<ast::Expr>) -> Vec<Vec<usize>> {
    let positions: Vec<usize> = expanded.keys.iter().map(|k| key_position(k, keys)).collect();
    expanded.sets.into_iter().map(|set| set.into_iter().map(|i| positions[i]).collect()).collect()
}

/// A call's plain positional arguments.
fn function_args(f: &ast::Function) -> Result<Vec<&ast::Expr>> {
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(Error::syntax(format!("syntax error at or near \"{}\"", f.name)));
    };
    list.args
        .iter()
        .map(|arg| match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
            other => Err(Error::syntax(format!("syntax error at or near \"{other}\""))),
        })
        .collect()
}

fn is_grouping_call(f: &ast::Function) -> bool {
    f.over.is_none()
        && matches!(f.name.0.as_slice(), [part] if part.as_ident().is_some_and(|i| i.value.eq_ignore_ascii_case("grouping") && i.quote_style.is_none()))
}

/// Does the expression call GROUPING(...) at this query level?
pub fn contains_grouping(expr: &ast::Expr) -> bool {
    contains_call(expr, is_grouping_call)
}

pub fn not_a_grouping_expression() -> Error {
    Error::new(SqlState::GROUPING_ERROR, "arguments to GROUPING must be grouping expressions of the associated query level")
}

/// `expr` with each GROUPING(...) call of this query level replaced by the expression
/// `replacement` gives for it.
fn replace_grouping(expr: &ast::Expr, replacement: &mut dyn FnMut(&ast::Function) -> Result<ast::Expr>) -> Result<ast::Expr> {
    struct Replacer<'v> {
        replacement: &'v mut dyn FnMut(&ast::Function) -> Result<ast::Expr>,
        /// Subqueries entered: their GROUPING calls are their own.
        query_depth: usize,
        /// Aggregate calls entered: GROUPING may not be inside one.
        aggregate_depth: usize,
        /// Why the walk stopped.
        error: Option<Error>,
    }
    fn is_aggregate_call(f: &ast::Function) -> bool {
        f.over.is_none() && crate::bind::aggregate_of_call(f).is_some()
    }
    impl VisitorMut for Replacer<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.query_depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.query_depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
            if let ast::Expr::Function(f) = expr {
                if self.query_depth == 0 && is_aggregate_call(f) {
                    self.aggregate_depth += 1;
                }
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
            let ast::Expr::Function(f) = expr else { return ControlFlow::Continue(()) };
            if self.query_depth > 0 {
                return ControlFlow::Continue(());
            }
            if is_aggregate_call(f) {
                self.aggregate_depth -= 1;
            } else if is_grouping_call(f) {
                if self.aggregate_depth > 0 {
                    self.error = Some(Error::new(SqlState::GROUPING_ERROR, "aggregate function calls cannot be nested"));
                    return ControlFlow::Break(());
                }
                match (self.replacement)(f) {
                    Ok(e) => *expr = e,
                    Err(e) => {
                        self.error = Some(e);
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut rewritten = expr.clone();
    let mut replacer = Replacer { replacement, query_depth: 0, aggregate_depth: 0, error: None };
    let _ = crate::ast_walk::walk_mut(&mut rewritten, &mut replacer);
    match replacer.error {
        Some(e) => Err(e),
        None => Ok(rewritten),
    }
}

/// GROUPING call `n` is written, for binding, as this marker: an expression no query
/// writes (a cast of an int4 near its minimum), bound once and added to the grouping
/// expressions, so the binder turns it into a column of the aggregate's layout, where
/// each set puts its own bitmask. A marker, not the bitmask itself: window functions and
/// the outputs above them run over all sets' rows at once.
fn grouping_marker(n: usize) -> ast::Expr {
    let value = i64::from(i32::MIN) + 1 + n as i64;
    let sql = format!("CAST(({value}) AS integer)");
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(&sql)
        .and_then(|mut parser| parser.parse_expr())
        .expect("a cast of an integer parses")
}

/// What `plan_select` has analysed of an aggregate query with grouping sets.
pub struct GroupedQuery<'q> {
    pub select: &'q ast::Select,
    pub from: FromPlan,
    /// WHERE, bound over the FROM clause's scope.
    pub filter: Option<Expr>,
    pub subqueries: &'q [crate::join::SubqueryCondition],
    /// The select list then hidden ORDER BY items, with their output names.
    pub items: &'q [(ast::Expr, String)],
    pub visible: usize,
    pub hidden: Vec<ast::Expr>,
    pub windows: WindowContext,
    /// Every grouping expression bound over the scope, in `sets`' numbering.
    pub keys: Vec<Expr>,
    /// The grouping expressions as written, in `keys`' numbering.
    pub key_asts: Vec<ast::Expr>,
}

/// One aggregate per grouping set, appended (see the module's header).
pub fn plan(query: GroupedQuery, sets: GroupingSets, ctx: &PlanContext) -> Result<PlannedQuery> {
    let GroupedQuery { select, from, filter, subqueries, items, visible, hidden, windows, keys, key_asts } = query;
    // Keys written differently but bound alike (`a`, `t.a`) are one key.
    let canonical: Vec<usize> = keys.iter().enumerate().map(|(i, k)| keys.iter().position(|o| o == k).unwrap_or(i)).collect();
    let sets: Vec<Vec<usize>> = sets
        .sets
        .iter()
        .map(|set| {
            let mut distinct = Vec::with_capacity(set.len());
            for &i in set {
                if !distinct.contains(&canonical[i]) {
                    distinct.push(canonical[i]);
                }
            }
            distinct
        })
        .collect();

    // The select list, HAVING and ORDER BY are bound once, over (keys, GROUPING markers,
    // calls); each set's aggregate is then projected to that layout.
    let scope: &Scope = from.scope();
    let mut grouping_calls: Vec<Vec<usize>> = Vec::new();
    let mut markers: Vec<Expr> = Vec::new();
    let mut to_marker = |f: &ast::Function| -> Result<ast::Expr> {
        let args = function_args(f)?;
        if args.len() > 31 {
            return Err(Error::new(SqlState("54023"), "GROUPING must have fewer than 32 arguments"));
        }
        let mut arg_keys = Vec::with_capacity(args.len());
        for arg in args {
            let bound = Binder::new(scope).bind(arg)?;
            let Some(i) = keys.iter().position(|k| *k == bound) else { return Err(not_a_grouping_expression()) };
            arg_keys.push(canonical[i]);
        }
        let n = match grouping_calls.iter().position(|c| *c == arg_keys) {
            Some(n) => n,
            None => {
                grouping_calls.push(arg_keys);
                let marker = grouping_marker(grouping_calls.len() - 1);
                markers.push(Binder::new(scope).bind(&marker)?);
                grouping_calls.len() - 1
            }
        };
        Ok(grouping_marker(n))
    };
    let mut rewritten_items = Vec::with_capacity(items.len());
    for (ast_expr, _) in items {
        rewritten_items.push(replace_grouping(ast_expr, &mut to_marker)?);
    }
    let having_ast = select.having.as_ref().map(|h| replace_grouping(h, &mut to_marker)).transpose()?;

    let mut group_by = keys.clone();
    group_by.extend(markers.iter().cloned());
    let named = rewritten_items.iter().zip(items).map(|(rewritten, (_, name))| (rewritten, name));
    let GroupedOutputs { outputs, mut columns, pending, pending_srfs, having, aggregates } =
        bind_grouped_outputs(scope, ctx, group_by, key_asts, windows, named, having_ast.as_ref())?;
    let AggregateContext { calls, .. } = aggregates;

    let mut first_from = Some(from);
    let mut inputs = Vec::with_capacity(sets.len());
    for set in &sets {
        // Each set reads the FROM clause again; the bound expressions fit every reading.
        let from = match first_from.take() {
            Some(from) => from,
            None => analyze_from_clause(select, ctx)?,
        };
        let mut layout = Vec::with_capacity(keys.len() + markers.len() + calls.len());
        for (i, key) in keys.iter().enumerate() {
            let data_type = key.data_type();
            layout.push(match set.iter().position(|&j| j == canonical[i]) {
                Some(index) => Expr::Column { index, data_type },
                None => Expr::Literal { value: Datum::Null, data_type },
            });
        }
        for (args, marker) in grouping_calls.iter().zip(&markers) {
            // Bit set: the argument is not grouped in this set; the first is the highest.
            let mask = args.iter().fold(0i32, |mask, key| mask << 1 | i32::from(!set.contains(key)));
            layout.push(Expr::Literal { value: Datum::Int4(mask), data_type: marker.data_type() });
        }
        for (j, call) in calls.iter().enumerate() {
            layout.push(Expr::Column { index: set.len() + j, data_type: call.result_type });
        }
        let mut output = vec![Step::Project(layout)];
        output.extend(having.clone().map(Step::Filter));
        output.push(Step::Project(outputs.clone()));
        let set_keys = set.iter().map(|&i| keys[i].clone()).collect();
        inputs.push(plan_aggregate(from, filter.clone(), subqueries, set_keys, calls.clone(), output, ctx)?);
    }
    let mut plan = if inputs.len() == 1 {
        inputs.pop().expect("one input")
    } else {
        Plan::SetOp(SetOpPlan { op: SetOperator::Append, all: true, inputs })
    };
    if let Some(pending) = pending {
        plan = pending.plan(plan);
    }
    if let Some(pending) = pending_srfs {
        plan = pending.plan(plan);
    }
    let hidden_types = columns.drain(visible..).map(|c| c.data_type).collect();
    Ok(PlannedQuery { plan, columns, hidden, hidden_types, select_items: visible_asts(items, visible) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets_of(sql: &str) -> Vec<Vec<String>> {
        let statements = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, sql).unwrap();
        let ast::Statement::Query(query) = &statements[0] else { panic!("not a query") };
        let ast::SetExpr::Select(select) = query.body.as_ref() else { panic!("not a select") };
        let ast::GroupByExpr::Expressions(items, _) = &select.group_by else { panic!("no group by") };
        let expanded = GroupingSets::expand(items).unwrap().unwrap();
        expanded.sets.iter().map(|set| set.iter().map(|&i| expanded.keys[i].to_string()).collect()).collect()
    }

    fn names(sets: &[&[&str]]) -> Vec<Vec<String>> {
        sets.iter().map(|set| set.iter().map(|s| s.to_string()).collect()).collect()
    }

    #[test]
    fn rollup_cube_and_grouping_sets_expand_as_postgresql() {
        assert_eq!(sets_of("SELECT 1 FROM t GROUP BY ROLLUP (a, b)"), names(&[&["a", "b"], &["a"], &[]]));
        assert_eq!(sets_of("SELECT 1 FROM t GROUP BY CUBE (a, b)"), names(&[&["a", "b"], &["a"], &["b"], &[]]));
        assert_eq!(sets_of("SELECT 1 FROM t GROUP BY ROLLUP ((a, b), c)"), names(&[&["a", "b", "c"], &["a", "b"], &[]]));
        assert_eq!(sets_of("SELECT 1 FROM t GROUP BY GROUPING SETS ((a, b), (a), ())"), names(&[&["a", "b"], &["a"], &[]]));
        assert_eq!(sets_of("SELECT 1 FROM t GROUP BY a, ROLLUP (b, c)"), names(&[&["a", "b", "c"], &["a", "b"], &["a"]]));
        assert_eq!(
            sets_of("SELECT 1 FROM t GROUP BY GROUPING SETS (a, ROLLUP (b), CUBE (c), ())"),
            names(&[&["a"], &["b"], &[], &["c"], &[], &[]])
        );
        assert_eq!(sets_of("SELECT 1 FROM t GROUP BY GROUPING SETS (a, a), ()"), names(&[&["a"], &["a"]]));
    }

    #[test]
    fn a_cube_of_more_than_twelve_is_an_error() {
        let statements =
            sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, "SELECT 1 FROM t GROUP BY CUBE (a, b, c, d, e, f, g, h, i, j, k, l, m)").unwrap();
        let ast::Statement::Query(query) = &statements[0] else { panic!("not a query") };
        let ast::SetExpr::Select(select) = query.body.as_ref() else { panic!("not a select") };
        let ast::GroupByExpr::Expressions(items, _) = &select.group_by else { panic!("no group by") };
        assert_eq!(GroupingSets::expand(items).unwrap_err().sqlstate, SqlState("54011"));
    }
}
