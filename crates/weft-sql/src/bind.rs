//! Binding: sqlparser's expression AST → typed `weft_exec::expr::Expr`.
//!
//! Names are resolved against a [`Scope`] (the columns of the FROM clause). Types follow
//! PostgreSQL: an integer literal is int4 if it fits, else int8, else numeric; a literal
//! with a point or exponent is numeric; a quoted string is text, but is cast to the type
//! of the other side when compared with a non-text value (PostgreSQL's "unknown" type).
//!
//! In an aggregate query the select list and HAVING are bound in *aggregate mode*: an
//! aggregate call becomes a reference to its slot in the aggregate's output row, any
//! subexpression equal to a GROUP BY expression becomes a reference to that key, and a
//! bare column that is neither is PostgreSQL's grouping error.

use std::ops::ControlFlow;
use std::sync::Arc;

use sqlparser::ast::{self, BinaryOperator, UnaryOperator, Value};
use weft_common::numeric::Numeric;
use weft_common::{Coercion, DataType, Datum, Error, Result, SqlState, TypeModifier};
use weft_exec::expr::{self as ex, BinaryOp, Expr, UnaryOp};
use weft_exec::plan::{AggregateCall, AggregateFunction, AggregateOrderKey};

use crate::ordered_set::{direct_argument_asts, within_group_required};
use crate::planner::PlanContext;
use crate::subplan::{is_unresolved, OuterQuery};

#[derive(Clone, Debug)]
pub struct ScopeColumn {
    /// The table name or alias that qualifies it (`t.a`).
    pub table: Option<String>,
    pub name: String,
    pub data_type: DataType,
    /// The declared type's modifier (`numeric(6,2)`), which an output column that is just
    /// this column keeps (CREATE TABLE AS).
    pub type_modifier: Option<TypeModifier>,
}

#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
    /// Columns found only through their table's name (indexes after `columns`): each
    /// side's own copy of a `JOIN ... USING` column, whose unqualified name means the
    /// merged column.
    pub qualified_only: Vec<ScopeColumn>,
    /// The enclosing query's columns, for a correlated subquery (indexes after
    /// `qualified_only`): found only when this level has no column of the name.
    pub outer: Vec<ScopeColumn>,
    /// How many of `outer`'s last columns are the enclosing query's `qualified_only` ones:
    /// an unqualified name there means the merged USING column, as at its own level.
    pub outer_qualified_only: usize,
}

impl Scope {
    pub fn new(columns: Vec<ScopeColumn>) -> Scope {
        Scope { columns, ..Scope::default() }
    }

    /// The column at a resolved index, whichever list it is in.
    pub fn column_at(&self, index: usize) -> &ScopeColumn {
        let local = self.columns.len() + self.qualified_only.len();
        if index < self.columns.len() {
            &self.columns[index]
        } else if index < local {
            &self.qualified_only[index - self.columns.len()]
        } else {
            &self.outer[index - local]
        }
    }

    /// Number of columns of this query level (outer references have larger indexes).
    pub fn local_width(&self) -> usize {
        self.columns.len() + self.qualified_only.len()
    }

    pub(crate) fn resolve(&self, qualifier: Option<&str>, name: &str) -> Result<(usize, DataType)> {
        let matches = |col: &ScopeColumn| {
            let table_matches = match qualifier {
                None => true,
                Some(q) => col.table.as_deref() == Some(q),
            };
            table_matches && col.name == name
        };
        let qualified = if qualifier.is_some() { &self.qualified_only[..] } else { &[][..] };
        let outer_end = if qualifier.is_some() { self.outer.len() } else { self.outer.len() - self.outer_qualified_only };
        let levels: [(usize, Vec<&ScopeColumn>); 2] = [
            (0, self.columns.iter().chain(qualified.iter()).collect()),
            (self.local_width(), self.outer[..outer_end].iter().collect()),
        ];
        for (base, level) in levels {
            let mut found = None;
            for (index, col) in level.iter().enumerate() {
                if matches(col) {
                    if found.is_some() {
                        return Err(Error::new(
                            SqlState::AMBIGUOUS_COLUMN,
                            format!("column reference \"{name}\" is ambiguous"),
                        ));
                    }
                    found = Some((base + index, col.data_type));
                }
            }
            if let Some(found) = found {
                return Ok(found);
            }
        }
        let any_table = |q: &str| {
            self.columns.iter().chain(&self.qualified_only).chain(&self.outer).any(|c| c.table.as_deref() == Some(q))
        };
        Err(match qualifier {
            Some(q) if !any_table(q) => Error::new(
                SqlState::UNDEFINED_TABLE,
                format!("missing FROM-clause entry for table \"{q}\""),
            ),
            Some(q) => Error::new(SqlState::UNDEFINED_COLUMN, format!("column {q}.{name} does not exist")),
            None => Error::new(SqlState::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist")),
        })
    }
}

/// The reference a `*` or `t.*` of a select list (or RETURNING) expands to for the scope
/// column at `index`. It names the column by position, not by name: a derived table may
/// have two columns of one name (`SELECT * FROM (SELECT 1 x, 2 x) s`), which `*` reads
/// while a name is ambiguous, as in PostgreSQL. The first part holds a NUL, which no
/// identifier holds; the last is the column's name (the item's output name). Its parts
/// carry the span of the `*` item (`at`), where PostgreSQL points errors about the column.
pub(crate) fn expanded_column(index: usize, column: &ScopeColumn, at: sqlparser::tokenizer::Span) -> ast::Expr {
    let quoted = |s: &str| ast::Ident::with_quote_and_span('"', at, s);
    let table = column.table.as_deref().unwrap_or("");
    ast::Expr::CompoundIdentifier(vec![quoted(&format!("{EXPANDED_COLUMN_MARK}{index}")), quoted(table), quoted(&column.name)])
}

const EXPANDED_COLUMN_MARK: char = '\0';

/// The marker of an [`expanded_outer_column`] (after [`EXPANDED_COLUMN_MARK`]).
const OUTER_MARK: char = 'o';

/// A reference to the column at `index` of the enclosing query's scope, as a subquery's
/// `t.*` naming a relation of that query expands (no name is written so, as for
/// [`expanded_column`]).
pub(crate) fn expanded_outer_column(index: usize, column: &ScopeColumn, at: sqlparser::tokenizer::Span) -> ast::Expr {
    let quoted = |s: &str| ast::Ident::with_quote_and_span('"', at, s);
    let table = column.table.as_deref().unwrap_or("");
    ast::Expr::CompoundIdentifier(vec![quoted(&format!("{EXPANDED_COLUMN_MARK}{OUTER_MARK}{index}")), quoted(table), quoted(&column.name)])
}

/// The outer scope index of an [`expanded_outer_column`] reference.
fn expanded_outer_index(parts: &[ast::Ident]) -> Option<usize> {
    match parts {
        [mark, _, _] => mark.value.strip_prefix(EXPANDED_COLUMN_MARK)?.strip_prefix(OUTER_MARK)?.parse().ok(),
        _ => None,
    }
}

/// The scope index of an [`expanded_column`] reference.
fn expanded_column_index(parts: &[ast::Ident]) -> Option<usize> {
    match parts {
        [mark, _, _] => mark.value.strip_prefix(EXPANDED_COLUMN_MARK)?.parse().ok(),
        _ => None,
    }
}

/// The column of this query level that `expr` is a plain reference to (a name, a
/// qualified name or a `*`-expanded column that resolves without error), if it is one.
pub(crate) fn local_column_of(expr: &ast::Expr, scope: &Scope) -> Option<usize> {
    let found = match expr {
        ast::Expr::CompoundIdentifier(parts) if expanded_column_index(parts).is_some() => return expanded_column_index(parts),
        ast::Expr::Identifier(ident) => scope.resolve(None, &ident_name(ident)),
        ast::Expr::CompoundIdentifier(parts) => match parts.as_slice() {
            [table, column] => scope.resolve(Some(&ident_name(table)), &ident_name(column)),
            _ => return None,
        },
        _ => return None,
    };
    found.ok().map(|(index, _)| index).filter(|&index| index < scope.local_width())
}

/// Identifier normalization: unquoted names fold to lower case, quoted ones are kept.
pub fn ident_name(ident: &ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

pub fn object_name(name: &ast::ObjectName) -> Result<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| p.as_ident().map(ident_name).ok_or_else(|| Error::syntax(format!("unexpected name {p}"))))
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [name] => Ok(name.clone()),
        // `pg_temp` names the session's temporary tables, which share weft's one namespace.
        [schema, name] if schema == "public" || schema == "pg_temp" => Ok(name.clone()),
        [schema, _] => Err(Error::new(SqlState::UNDEFINED_OBJECT, format!("schema \"{schema}\" does not exist"))),
        _ => Err(Error::syntax(format!("improper qualified name (too many dotted names): {name}"))),
    }
}

/// A function's name: built-in functions are also reached qualified by `pg_catalog`, their
/// schema in PostgreSQL (psql writes `pg_catalog.pg_get_userbyid(...)`).
pub(crate) fn function_name(name: &ast::ObjectName) -> Result<String> {
    match name.0.as_slice() {
        [schema, function] if schema.as_ident().is_some_and(|s| ident_name(s) == "pg_catalog") => {
            function.as_ident().map(ident_name).ok_or_else(|| Error::syntax(format!("unexpected name {function}")))
        }
        _ => object_name(name),
    }
}

/// The aggregate-mode state: group keys bound in the input scope, and the aggregate
/// calls collected so far.
pub struct AggregateContext {
    pub group_by: Vec<Expr>,
    pub calls: Vec<AggregateCall>,
    /// The GROUP BY expressions as written (positions and output names resolved), in
    /// `group_by`'s numbering (it may hold more keys). A key holding a subquery cannot be
    /// matched by its bound form (subplans compare by identity), so an expression equal to
    /// its text is that key, as PostgreSQL matches a grouped expression before its columns.
    pub key_asts: Vec<ast::Expr>,
}

pub fn aggregate_function(name: &str) -> Option<AggregateFunction> {
    Some(match name {
        "count" => AggregateFunction::Count,
        "sum" => AggregateFunction::Sum,
        "avg" => AggregateFunction::Avg,
        "min" => AggregateFunction::Min,
        "max" => AggregateFunction::Max,
        "bool_and" | "every" => AggregateFunction::BoolAnd,
        "bool_or" => AggregateFunction::BoolOr,
        "string_agg" => AggregateFunction::StringAgg,
        "array_agg" => AggregateFunction::ArrayAgg,
        "stddev" => AggregateFunction::Stddev,
        "stddev_samp" => AggregateFunction::StddevSamp,
        "stddev_pop" => AggregateFunction::StddevPop,
        "variance" => AggregateFunction::Variance,
        "var_samp" => AggregateFunction::VarSamp,
        "var_pop" => AggregateFunction::VarPop,
        "bit_and" => AggregateFunction::BitAnd,
        "bit_or" => AggregateFunction::BitOr,
        "bit_xor" => AggregateFunction::BitXor,
        "corr" => AggregateFunction::Corr,
        "covar_pop" => AggregateFunction::CovarPop,
        "covar_samp" => AggregateFunction::CovarSamp,
        "regr_count" => AggregateFunction::RegrCount,
        "regr_avgx" => AggregateFunction::RegrAvgX,
        "regr_avgy" => AggregateFunction::RegrAvgY,
        "regr_slope" => AggregateFunction::RegrSlope,
        "regr_intercept" => AggregateFunction::RegrIntercept,
        "regr_r2" => AggregateFunction::RegrR2,
        "regr_sxx" => AggregateFunction::RegrSxx,
        "regr_syy" => AggregateFunction::RegrSyy,
        "regr_sxy" => AggregateFunction::RegrSxy,
        "percentile_cont" => AggregateFunction::PercentileCont,
        "percentile_disc" => AggregateFunction::PercentileDisc,
        "mode" => AggregateFunction::Mode,
        _ => return None,
    })
}

/// The hypothetical-set aggregates: `rank(...) WITHIN GROUP (ORDER BY ...)`; without
/// WITHIN GROUP these names are window functions.
fn hypothetical_function(name: &str) -> Option<AggregateFunction> {
    Some(match name {
        "rank" => AggregateFunction::HypotheticalRank,
        "dense_rank" => AggregateFunction::HypotheticalDenseRank,
        "percent_rank" => AggregateFunction::HypotheticalPercentRank,
        "cume_dist" => AggregateFunction::HypotheticalCumeDist,
        _ => return None,
    })
}

/// The aggregate a call names: a plain or ordered-set aggregate, or a hypothetical-set
/// one when written with WITHIN GROUP. Whether it has OVER is the caller's question.
pub fn aggregate_of_call(f: &ast::Function) -> Option<AggregateFunction> {
    let name = object_name(&f.name).ok()?;
    aggregate_function(&name).or_else(|| if f.within_group.is_empty() { None } else { hypothetical_function(&name) })
}

/// `expr` without the parentheses around it.
fn strip_nested(mut expr: &ast::Expr) -> &ast::Expr {
    while let ast::Expr::Nested(inner) = expr {
        expr = inner;
    }
    expr
}

/// Does the expression hold a subquery (`(SELECT ...)`, EXISTS, IN (SELECT ...))?
pub(crate) fn contains_subquery(expr: &ast::Expr) -> bool {
    let mut subquery = false;
    let _ = crate::ast_walk::expressions(expr, |e| {
        subquery |= matches!(e, ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. });
        std::ops::ControlFlow::<()>::Continue(())
    });
    subquery
}

/// Does this AST contain an aggregate call (outside subqueries)? An aggregate inside a
/// `(SELECT ...)`, `EXISTS` or `IN (SELECT ...)` belongs to that subquery's level.
pub fn contains_aggregate(expr: &ast::Expr) -> bool {
    // `sum(x) OVER (...)` is a window function; its arguments may hold aggregates.
    contains_call(expr, |f| f.over.is_none() && aggregate_of_call(f).is_some())
}

/// Does this AST contain a function call `is_wanted` accepts, at this query level (not
/// inside a subquery)?
pub fn contains_call(expr: &ast::Expr, is_wanted: impl Fn(&ast::Function) -> bool) -> bool {
    /// Counts the queries it is inside; only calls at depth 0 are this level's.
    struct Finder<'a> {
        query_depth: usize,
        is_wanted: &'a dyn Fn(&ast::Function) -> bool,
    }
    impl ast::Visitor for Finder<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _query: &ast::Query) -> ControlFlow<()> {
            self.query_depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _query: &ast::Query) -> ControlFlow<()> {
            self.query_depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
            match e {
                ast::Expr::Function(f) if self.query_depth == 0 && (self.is_wanted)(f) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    crate::ast_walk::walk(expr, &mut Finder { query_depth: 0, is_wanted: &is_wanted }).is_break()
}

pub struct Binder<'a> {
    pub scope: &'a Scope,
    pub aggregates: Option<&'a mut AggregateContext>,
    /// Plans scalar subqueries (`(SELECT ...)`) into init plans; without it they are
    /// rejected (a place that binds before any planning context exists).
    pub planner: Option<&'a PlanContext<'a>>,
    /// Where window function calls go (`window.rs`); without it they are rejected.
    pub windows: Option<&'a mut crate::window::WindowContext>,
    /// Where set-returning function calls of a select list go (`srf.rs`); without it they
    /// are refused.
    pub srfs: Option<&'a mut crate::srf::SrfContext>,
    /// Bind the next `::regclass` cast to its oid (a select item's own cast, whose name
    /// the query's output step prints: see [`regclass_output`]).
    pub regclass_oid: bool,
}

impl<'a> Binder<'a> {
    pub fn new(scope: &'a Scope) -> Binder<'a> {
        Binder { scope, aggregates: None, planner: None, windows: None, srfs: None, regclass_oid: false }
    }

    pub fn with_aggregates(scope: &'a Scope, aggregates: &'a mut AggregateContext) -> Binder<'a> {
        Binder { scope, aggregates: Some(aggregates), planner: None, windows: None, srfs: None, regclass_oid: false }
    }

    /// Let the binder plan scalar subqueries with `ctx`.
    pub fn planning(mut self, ctx: &'a PlanContext<'a>) -> Binder<'a> {
        self.planner = Some(ctx);
        self
    }

    /// Let the binder take window function calls into `windows`.
    pub fn windowing(mut self, windows: &'a mut crate::window::WindowContext) -> Binder<'a> {
        self.windows = Some(windows);
        self
    }

    /// Bind `expr`'s own `::regclass` cast, if it is one, to the oid rather than the name.
    pub fn regclass_as_oid(mut self, expr: &ast::Expr) -> Binder<'a> {
        self.regclass_oid = regclass_cast_operand(expr).is_some();
        self
    }

    /// Let the binder take set-returning function calls into `srfs`.
    pub fn set_returning(mut self, srfs: &'a mut crate::srf::SrfContext) -> Binder<'a> {
        self.srfs = Some(srfs);
        self
    }

    /// Bind `expr`; an error points at the innermost expression that raised it.
    pub fn bind(&mut self, expr: &ast::Expr) -> Result<Expr> {
        self.bind_placed(expr).map_err(|e| crate::error_cursor::place(e, expr))
    }

    fn bind_placed(&mut self, expr: &ast::Expr) -> Result<Expr> {
        if let ast::Expr::Function(f) = expr {
            if f.over.is_some() {
                return crate::window::bind_window_call(self, f);
            }
        }
        if self.aggregates.is_some() {
            if let Some(bound) = self.bind_aggregate_node(expr)? {
                return Ok(bound);
            }
        }
        self.bind_node(expr)
    }

    /// In aggregate mode: an aggregate call or a group key, else `None` (bind normally).
    fn bind_aggregate_node(&mut self, expr: &ast::Expr) -> Result<Option<Expr>> {
        if let ast::Expr::Function(f) = expr {
            if let Some(function) = aggregate_of_call(f) {
                let call = {
                    let mut plain = Binder { scope: self.scope, aggregates: None, planner: self.planner, windows: None, srfs: None, regclass_oid: false };
                    plain.bind_aggregate_call(function, f, false)?
                };
                self.check_direct_arguments(&call, f)?;
                let aggregates = self.aggregates.as_mut().expect("aggregate mode");
                let index = aggregates.group_by.len() + aggregates.calls.len();
                let data_type = call.result_type;
                aggregates.calls.push(call);
                return Ok(Some(Expr::Column { index, data_type }));
            }
        }
        if matches!(expr, ast::Expr::Value(_)) || contains_aggregate(expr) {
            return Ok(None);
        }
        if contains_subquery(expr) {
            let aggregates = self.aggregates.as_ref().expect("aggregate mode");
            let written = strip_nested(expr);
            if let Some(index) = aggregates.key_asts.iter().position(|k| strip_nested(k) == written) {
                return Ok(Some(Expr::Column { index, data_type: aggregates.group_by[index].data_type() }));
            }
            return Ok(None);
        }
        // A key written the same way (which may need the planner to bind: `oid::regclass`).
        {
            let aggregates = self.aggregates.as_ref().expect("aggregate mode");
            let written = strip_nested(expr);
            if let Some(index) = aggregates.key_asts.iter().position(|k| strip_nested(k) == written) {
                return Ok(Some(Expr::Column { index, data_type: aggregates.group_by[index].data_type() }));
            }
        }
        // Matched against the group keys without a planner: a subquery is never planned
        // twice (once here, once below), and a key is never matched through one.
        let mut plain = Binder::new(self.scope);
        if let Ok(bound) = plain.bind(expr) {
            let aggregates = self.aggregates.as_ref().expect("aggregate mode");
            if let Some(index) = aggregates.group_by.iter().position(|g| *g == bound) {
                return Ok(Some(Expr::Column { index, data_type: bound.data_type() }));
            }
        }
        Ok(None)
    }

    /// The call (`distinct` when written `count(DISTINCT x)`). A window aggregate (`window`) is bound by a binder in aggregate mode when the query
    /// groups, so its arguments may hold aggregates (`sum(sum(x)) OVER ()`).
    pub(crate) fn bind_aggregate_call(&mut self, function: AggregateFunction, f: &ast::Function, window: bool) -> Result<AggregateCall> {
        let name = object_name(&f.name)?;
        let list = match &f.args {
            ast::FunctionArguments::List(list) => list,
            ast::FunctionArguments::None => return Err(Error::syntax(format!("syntax error at or near \"{name}\""))),
            ast::FunctionArguments::Subquery(_) => return Err(Error::not_supported("subquery as function argument")),
        };
        let distinct = list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct);
        if function.is_ordered_set() {
            return self.bind_ordered_set_call(function, f, &name, list, window);
        }
        if !f.within_group.is_empty() {
            return Err(self.within_group_of_plain_aggregate(function, f, &name, list));
        }
        let mut order_asts: &[ast::OrderByExpr] = &[];
        for clause in &list.clauses {
            match clause {
                ast::FunctionArgumentClause::OrderBy(items) => order_asts = items,
                other => return Err(Error::not_supported(format!("{other} in an aggregate call"))),
            }
        }
        let nested = |e: &ast::Expr| {
            if crate::srf::contains_srf(e) {
                Err(Error::new(SqlState::FEATURE_NOT_SUPPORTED, "aggregate function calls cannot contain set-returning function calls")
                    .with_hint(crate::srf::LATERAL_HINT))
            } else if crate::window::contains_window(e) {
                Err(Error::new(SqlState::GROUPING_ERROR, "aggregate function calls cannot contain window function calls"))
            } else if contains_aggregate(e) && !window {
                Err(Error::new(SqlState::GROUPING_ERROR, "aggregate function calls cannot be nested"))
            } else {
                Ok(())
            }
        };
        let mut args = Vec::with_capacity(list.args.len());
        let mut star = false;
        for arg in &list.args {
            match arg {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) if function == AggregateFunction::Count => star = true,
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                    nested(e)?;
                    args.push(self.bind(e)?);
                }
                other => return Err(Error::not_supported(format!("aggregate argument {other}"))),
            }
        }
        if function.is_regression() {
            // Only float8 versions exist: integers and numerics are cast implicitly.
            let numeric = |a: &Expr| {
                !is_unknown_literal(a) && matches!(a.data_type(), DataType::Int4 | DataType::Int8 | DataType::Numeric | DataType::Float8)
            };
            if !star && args.len() == 2 && args.iter().all(numeric) {
                args = args.into_iter().map(|a| coerce_branch(a, DataType::Float8)).collect::<Result<_>>()?;
            }
        }
        let (function, arg, arg2) = match (star, args.len()) {
            (true, 0) if list.args.len() == 1 => (AggregateFunction::CountStar, None, None),
            (false, n) if n == function.arity() => {
                let mut args = args.into_iter();
                (function, args.next(), args.next())
            }
            _ => return Err(no_aggregate(&name, &args)),
        };
        let input = arg.as_ref().map(|a| a.data_type());
        if function == AggregateFunction::ArrayAgg && input.is_some_and(DataType::is_array) {
            return Err(Error::not_supported("array_agg over arrays (multidimensional arrays) is not supported"));
        }
        let result_type = AggregateCall::result_type_for(function, input)
            .filter(|_| match function {
                AggregateFunction::StringAgg => arg2.as_ref().is_some_and(|d| d.data_type() == DataType::Text),
                _ => arg2.as_ref().is_none_or(|x| Some(x.data_type()) == input),
            })
            .ok_or_else(|| no_aggregate(&name, arg.iter().chain(&arg2)))?;
        if distinct && function.is_regression() {
            return Err(Error::not_supported(format!("{name}(DISTINCT ...) is not supported yet")));
        }
        let filter = self.bind_aggregate_filter(f, window)?;
        let mut order_by = Vec::with_capacity(order_asts.len());
        for item in order_asts {
            nested(&item.expr)?;
            let (descending, nulls_first) = crate::planner::order_direction(item)?;
            order_by.push(AggregateOrderKey { expr: self.bind(&item.expr)?, descending, nulls_first });
        }
        if !matches!(function, AggregateFunction::StringAgg | AggregateFunction::ArrayAgg) {
            order_by.clear(); // the result does not depend on the order of the input
        }
        if function == AggregateFunction::ArrayAgg {
            if input.is_some_and(DataType::is_array) {
                return Err(Error::not_supported("array_agg over arrays (multidimensional arrays) is not supported"));
            }
            if distinct && filter.is_some() {
                return Err(Error::not_supported("array_agg(DISTINCT ...) FILTER (...) is not supported"));
            }
        }
        let mut call = AggregateCall { function, arg, arg2, filter, order_by, direct: Vec::new(), distinct, result_type };
        crate::subplan::check_aggregate_level(&call)?;
        if distinct {
            distinct_call(&mut call)?;
        }
        Ok(call)
    }

    pub(crate) fn bind_aggregate_filter(&mut self, f: &ast::Function, window: bool) -> Result<Option<Expr>> {
        let Some(condition) = &f.filter else { return Ok(None) };
        if contains_aggregate(condition) && !window {
            return Err(Error::new(SqlState::GROUPING_ERROR, "aggregate functions are not allowed in FILTER"));
        }
        Ok(Some(crate::planner::require_bool(self.bind(condition)?, "FILTER")?))
    }

    fn bind_node(&mut self, expr: &ast::Expr) -> Result<Expr> {
        use ast::Expr as A;
        match expr {
            A::Identifier(ident) => self.column(None, &ident_name(ident)),
            A::CompoundIdentifier(parts) if expanded_column_index(parts).is_some() => {
                self.expanded_column(expanded_column_index(parts).expect("checked"))
            }
            A::CompoundIdentifier(parts) if expanded_outer_index(parts).is_some() => {
                let outer = self.planner.and_then(|p| p.outer).ok_or_else(|| Error::internal("an outer column outside a subquery"))?;
                Ok(outer.reference_at(expanded_outer_index(parts).expect("checked")))
            }
            A::CompoundIdentifier(parts) => match parts.as_slice() {
                [table, column] => self.column(Some(&ident_name(table)), &ident_name(column)),
                [schema, table, column] if ident_name(schema) == "public" => {
                    self.column(Some(&ident_name(table)), &ident_name(column))
                }
                _ => Err(Error::not_supported(format!("column reference {expr}"))),
            },
            A::Value(v) => literal(&v.value),
            A::Nested(inner) => self.bind(inner),
            A::BinaryOp { left, op: BinaryOperator::PGCustomBinaryOperator(parts), right } => {
                // `OPERATOR(pg_catalog.~)`, as psql writes operators: the built-in operator.
                let op = match parts.as_slice() {
                    [schema, op] if schema == "pg_catalog" => builtin_operator(op),
                    [op] => builtin_operator(op),
                    _ => None,
                };
                let Some(op) = op else {
                    return Err(Error::new(SqlState::UNDEFINED_FUNCTION, format!("operator does not exist: {}", parts.join("."))));
                };
                self.bind(&A::BinaryOp { left: left.clone(), op, right: right.clone() })
            }
            A::BinaryOp { left, op, right } => {
                match (row_fields(left), row_fields(right)) {
                    (None, None) => {}
                    (Some(lefts), Some(rights)) => return self.bind(&row_comparison(&lefts, op, &rights)?),
                    (lefts, _) => {
                        let row_on_left = lefts.is_some();
                        let scalar = self.bind(if row_on_left { right } else { left })?.data_type().name();
                        let (l, r) = if row_on_left { ("record", scalar) } else { (scalar, "record") };
                        return Err(Error::new(SqlState::UNDEFINED_FUNCTION, format!("operator does not exist: {l} {op} {r}"))
                            .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
                    }
                }
                if matches!(op, BinaryOperator::AtArrow | BinaryOperator::ArrowAt | BinaryOperator::PGOverlap) {
                    let (l, r) = (self.bind(left)?, self.bind(right)?);
                    return ex::array::resolve_set_operator(&op.to_string(), l, r);
                }
                if let Some(function) = operator_function(op) {
                    let (l, r) = (self.bind(left)?, self.bind(right)?);
                    return resolve_operator_function(function, &op.to_string(), vec![l, r]);
                }
                let op = binary_op(op)?;
                let left = self.bind(left)?;
                let right = self.bind(right)?;
                let (left, right) = unify_unknown_literals(op, left, right)?;
                ex::resolve_binary(op, left, right)
            }
            A::UnaryOp { op, expr: inner } => match op {
                UnaryOperator::Plus => self.bind(inner),
                UnaryOperator::Minus => {
                    // Fold `-<number>` so that -2147483648 is an int4, as in PostgreSQL.
                    if let A::Value(v) = inner.as_ref() {
                        if let Value::Number(n, _) = &v.value {
                            return number_literal(&format!("-{n}"));
                        }
                    }
                    ex::resolve_unary(UnaryOp::Neg, self.bind(inner)?)
                }
                UnaryOperator::Not => ex::resolve_unary(UnaryOp::Not, self.bind(inner)?),
                UnaryOperator::BitwiseNot => resolve_operator_function("int_not", "~", vec![self.bind(inner)?]),
                UnaryOperator::PGSquareRoot => resolve_operator_function("sqrt", "|/", vec![self.bind(inner)?]),
                UnaryOperator::PGCubeRoot => resolve_operator_function("cbrt", "||/", vec![self.bind(inner)?]),
                UnaryOperator::PGAbs => resolve_operator_function("abs", "@", vec![self.bind(inner)?]),
                other => Err(Error::not_supported(format!("operator {other}"))),
            },
            A::Array(constructor) => {
                let items = self.array_constructor(&constructor.elem, None)?;
                let elem = items.first().map(Expr::data_type).unwrap_or(DataType::Text);
                ex::array::construct(elem, items)
            }
            A::Cast { expr: inner, data_type: array_type @ ast::DataType::Array(_), .. } if matches!(strip_nesting(inner), A::Array(_)) => {
                // `ARRAY[...]::int[]`: the elements cast to the element type (also `ARRAY[]`).
                let A::Array(constructor) = strip_nesting(inner) else { unreachable!("matched above") };
                let to = sql_type(array_type)?;
                let elem = to.element().ok_or_else(|| Error::internal("array cast to a scalar"))?;
                let items = self.array_constructor(&constructor.elem, Some(elem))?;
                ex::array::construct(elem, items)
            }
            A::CompoundFieldAccess { root, access_chain } => {
                let mut value = self.bind(root)?;
                for access in access_chain {
                    let ast::AccessExpr::Subscript(subscript) = access else {
                        return Err(Error::not_supported(format!("expression not supported: {expr}")));
                    };
                    if matches!(value, Expr::Function { func: ex::ScalarFunction::Array(ex::array::ArrayFunction::Subscript), .. }) {
                        return Err(Error::not_supported("subscripts of more than one dimension are not supported"));
                    }
                    value = match subscript {
                        ast::Subscript::Index { index } => ex::array::subscript(value, Some(self.bind(index)?), None, false)?,
                        ast::Subscript::Slice { lower_bound, upper_bound, stride: None } => {
                            let lower = lower_bound.as_ref().map(|e| self.bind(e)).transpose()?;
                            let upper = upper_bound.as_ref().map(|e| self.bind(e)).transpose()?;
                            ex::array::subscript(value, lower, upper, true)?
                        }
                        ast::Subscript::Slice { .. } => return Err(Error::syntax("syntax error at or near \":\"")),
                    };
                }
                Ok(value)
            }
            A::Cast { expr: inner, data_type, .. } => {
                if let Some(kind) = RegType::of(data_type) {
                    return self.bind_reg_cast(inner, kind);
                }
                let (to, modifier) = sql_type_modified(data_type)?;
                let mut bound = self.bind(inner)?;
                // `'t'::regclass::text` is the name: a regclass constant is bound to its oid.
                if to == DataType::Text && bound.data_type() == DataType::Int8 && regclass_cast_operand(inner).is_some() {
                    if let Some(ctx) = self.planner {
                        bound = regclass_names_of(bound, ctx.catalog);
                    }
                }
                if let Some(modifier) = modifier {
                    return coerce_to_modifier(bound, modifier, Coercion::Explicit);
                }
                if bound.data_type() == to {
                    // Keep the cast node: `'a'::text` is typed text, not an unknown literal.
                    return Ok(Expr::Cast { expr: Box::new(bound), to });
                }
                ex::coerce(bound, to, true)
            }
            A::Collate { expr: inner, collation } => {
                let name = collation.to_string();
                let plain = name.strip_prefix("pg_catalog.").unwrap_or(&name).trim_matches('"');
                if !matches!(plain, "C" | "POSIX" | "default" | "ucs_basic") {
                    return Err(Error::new(
                        SqlState::UNDEFINED_OBJECT,
                        format!("collation \"{plain}\" for encoding \"UTF8\" does not exist"),
                    ));
                }
                let bound = self.bind(inner)?;
                if bound.data_type() != DataType::Text {
                    return Err(Error::new(
                        SqlState::DATATYPE_MISMATCH,
                        format!("collations are not supported by type {}", bound.data_type().name()),
                    ));
                }
                Ok(bound)
            }
            A::IsDistinctFrom(left, right) => self.bind(&row_distinct_from(left, right, true)?),
            A::IsNotDistinctFrom(left, right) => self.bind(&row_distinct_from(left, right, false)?),
            A::IsNull(inner) => self.bind_is_null(inner, false),
            A::IsNotNull(inner) => self.bind_is_null(inner, true),
            A::IsTrue(inner) => self.is_bool(inner, true, false),
            A::IsNotTrue(inner) => self.is_bool(inner, true, true),
            A::IsFalse(inner) => self.is_bool(inner, false, false),
            A::IsNotFalse(inner) => self.is_bool(inner, false, true),
            // x IS [NOT] UNKNOWN is x IS [NOT] NULL for a boolean x.
            A::IsUnknown(inner) => Ok(Expr::IsNull { expr: Box::new(self.bool_argument(inner, "IS UNKNOWN")?), negated: false }),
            A::IsNotUnknown(inner) => {
                Ok(Expr::IsNull { expr: Box::new(self.bool_argument(inner, "IS NOT UNKNOWN")?), negated: true })
            }
            A::Between { expr: inner, negated, low, high } => {
                let ge = A::BinaryOp { left: inner.clone(), op: BinaryOperator::GtEq, right: low.clone() };
                let le = A::BinaryOp { left: inner.clone(), op: BinaryOperator::LtEq, right: high.clone() };
                let both = ex::resolve_binary(BinaryOp::And, self.bind(&ge)?, self.bind(&le)?)?;
                if *negated {
                    ex::resolve_unary(UnaryOp::Not, both)
                } else {
                    Ok(both)
                }
            }
            A::InList { expr: inner, list, negated } => {
                let mut equalities = Vec::with_capacity(list.len());
                for item in list {
                    let eq = A::BinaryOp { left: inner.clone(), op: BinaryOperator::Eq, right: Box::new(item.clone()) };
                    equalities.push(self.bind(&eq)?);
                }
                let mut any = balanced_chain(equalities, BinaryOp::Or).ok_or_else(|| Error::syntax("syntax error at or near \")\""))?;
                if list.len() > 1 {
                    // A one-argument COALESCE (the identity) marks the OR as an IN list,
                    // so EXPLAIN prints PostgreSQL's `a = ANY ('{1,2}'::integer[])`.
                    any = Expr::Coalesce { args: vec![any], data_type: DataType::Bool };
                }
                if *negated {
                    ex::resolve_unary(UnaryOp::Not, any)
                } else {
                    Ok(any)
                }
            }
            A::Case { operand, conditions, else_result, .. } => self.bind_case(operand.as_deref(), conditions, else_result.as_deref()),
            A::Function(f) => self.bind_function(f),
            A::AtTimeZone { timestamp, time_zone } => self.bind_at_time_zone(timestamp, time_zone),
            A::Substring { expr: inner, substring_from, substring_for, .. } => {
                let mut args = vec![self.bind(inner)?];
                args.push(match substring_from {
                    Some(from) => self.bind(from)?,
                    None => Expr::Literal { value: Datum::Int4(1), data_type: DataType::Int4 },
                });
                // `substring(text FROM pattern)`: a text (or unknown) FROM is a regular expression.
                if substring_for.is_none() && args[1].data_type() == DataType::Text {
                    return ex::resolve_function("substring_pattern", args);
                }
                if let Some(len) = substring_for {
                    args.push(self.bind(len)?);
                }
                if args[1].data_type() == DataType::Text && args.get(2).is_some_and(|a| a.data_type() == DataType::Text) {
                    return Err(Error::not_supported("substring(text FROM pattern FOR escape) is not supported yet"));
                }
                ex::resolve_function("substr", args)
            }
            A::TypedString(ts) => {
                let (to, modifier) = sql_type_modified(&ts.data_type)?;
                let text = match &ts.value.value {
                    Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                let literal = Expr::Literal { value: Datum::Text(text), data_type: DataType::Text };
                match modifier {
                    Some(modifier) => coerce_to_modifier(literal, modifier, Coercion::Explicit),
                    None => ex::coerce(literal, to, true),
                }
            }
            A::Extract { field, expr: inner, .. } => {
                let field = Expr::Literal { value: Datum::Text(field.to_string().to_ascii_lowercase()), data_type: DataType::Text };
                ex::resolve_function("extract", vec![field, self.bind(inner)?])
            }
            A::Interval(interval) => crate::datetime_bind::interval_literal(interval, |e| self.bind(e)),
            A::Subquery(query) => self.bind_subquery(query, SubqueryUse::Value),
            A::Exists { subquery, negated } => {
                let exists = self.bind_subquery(subquery, SubqueryUse::Exists)?;
                negate_if(exists, *negated)
            }
            A::InSubquery { expr: lhs, subquery, negated } => {
                let any = self.bind_subquery(subquery, SubqueryUse::Quantified { lhs, op: BinaryOp::Eq, all: false })?;
                negate_if(any, *negated)
            }
            A::AnyOp { left, compare_op, right, .. } | A::AllOp { left, compare_op, right } => {
                let all = matches!(expr, A::AllOp { .. });
                let A::Subquery(subquery) = strip_nesting(right) else {
                    return self.bind_array_comparison(left, compare_op, right, all);
                };
                let op = binary_op(compare_op)?;
                if !matches!(op, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq) {
                    return Err(Error::new(SqlState::UNDEFINED_FUNCTION, format!("operator does not return a boolean: {compare_op} {}", if all { "ALL" } else { "ANY" })));
                }
                self.bind_subquery(subquery, SubqueryUse::Quantified { lhs: left, op, all })
            }
            A::Like { any: true, .. } | A::ILike { any: true, .. } => Err(Error::not_supported("LIKE ANY is not supported")),
            A::Like { negated, expr, pattern, escape_char, .. } => self.bind_like(expr, pattern, escape_char.as_deref(), *negated, false),
            A::ILike { negated, expr, pattern, escape_char, .. } => self.bind_like(expr, pattern, escape_char.as_deref(), *negated, true),
            A::SimilarTo { negated, expr: inner, pattern, escape_char } => {
                let mut args = vec![self.bind(inner)?, self.bind(pattern)?];
                if let Some(escape) = escape_char {
                    args.push(self.bind(escape)?);
                }
                ex::resolve_function(if *negated { "not_similar_to" } else { "similar_to" }, args)
            }
            A::Overlay { expr: inner, overlay_what, overlay_from, overlay_for } => {
                let mut args = vec![self.bind(inner)?, self.bind(overlay_what)?, self.bind(overlay_from)?];
                if let Some(count) = overlay_for {
                    args.push(self.bind(count)?);
                }
                ex::resolve_function("overlay", args)
            }
            A::Ceil { expr, field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) } => {
                ex::resolve_function("ceil", vec![self.bind(expr)?])
            }
            A::Floor { expr, field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) } => {
                ex::resolve_function("floor", vec![self.bind(expr)?])
            }
            // POSITION(needle IN haystack) is strpos(haystack, needle).
            A::Position { expr, r#in } => ex::resolve_function("strpos", vec![self.bind(r#in)?, self.bind(expr)?]),
            A::Trim { trim_where, trim_what, expr, trim_characters: None } => {
                let name = match trim_where {
                    None | Some(ast::TrimWhereField::Both) => "btrim",
                    Some(ast::TrimWhereField::Leading) => "ltrim",
                    Some(ast::TrimWhereField::Trailing) => "rtrim",
                };
                let mut args = vec![self.bind(expr)?];
                if let Some(what) = trim_what {
                    args.push(self.bind(what)?);
                }
                ex::resolve_function(name, args)
            }
            other => Err(Error::not_supported(format!("expression not supported: {other}"))),
        }
    }

    /// `left op ANY | ALL (array)` where the array is `ARRAY[...]` or a literal `'{...}'`
    /// (cast to an array type, or else read in the left side's type): weft has no array
    /// type, so this is the comparison with each element, ORed for ANY and ANDed for ALL
    /// — the same three-valued result — inside the one-argument COALESCE that marks an IN
    /// list, which `= ANY` is (index conditions, EXPLAIN's `= ANY ('{...}'::integer[])`).
    /// An empty array is false for ANY and true for ALL; a NULL array is NULL.
    fn bind_array_comparison(&mut self, left: &ast::Expr, compare_op: &BinaryOperator, array: &ast::Expr, all: bool) -> Result<Expr> {
        let op = binary_op(compare_op)?;
        if !matches!(op, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq) {
            return Err(Error::new(SqlState::WRONG_OBJECT_TYPE, "op ANY/ALL (array) requires operator to yield boolean"));
        }
        let left = self.bind(left)?;
        let elements = match self.array_elements(array, &left)? {
            ArrayOperand::Null => return Ok(Expr::Literal { value: Datum::Null, data_type: DataType::Bool }),
            ArrayOperand::Elements(elements) => elements,
            ArrayOperand::Value(value) => return ex::array::resolve_any_all(op, all, left, value),
        };
        let mut comparisons = Vec::with_capacity(elements.len());
        for element in elements {
            let (l, r) = unify_unknown_literals(op, left.clone(), element)?;
            comparisons.push(ex::resolve_binary(op, l, r)?);
        }
        let combine = if all { BinaryOp::And } else { BinaryOp::Or };
        Ok(match balanced_chain(comparisons, combine) {
            None => Expr::Literal { value: Datum::Bool(all), data_type: DataType::Bool },
            Some(chain) => Expr::Coalesce { args: vec![chain], data_type: DataType::Bool },
        })
    }

    /// The elements of the right side of `op ANY | ALL (array)` when it is a literal or
    /// `ARRAY[...]`, each typed the array's element type; else the array value.
    fn array_elements(&mut self, array: &ast::Expr, left: &Expr) -> Result<ArrayOperand> {
        use ast::Expr as A;
        let (inner, element_type) = match strip_nesting(array) {
            A::Cast { expr: inner, data_type: array_type @ ast::DataType::Array(definition), .. } => {
                let element = match definition {
                    ast::ArrayElemTypeDef::SquareBracket(t, _) | ast::ArrayElemTypeDef::AngleBracket(t) | ast::ArrayElemTypeDef::Parenthesis(t) => t,
                    _ => return Err(Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{array_type}\" does not exist"))),
                };
                (strip_nesting(inner), Some(sql_type(element)?))
            }
            other => (other, None),
        };
        if let A::Array(constructor) = inner {
            return self.array_constructor(&constructor.elem, element_type).map(ArrayOperand::Elements);
        }
        let bound = self.bind(inner)?;
        if bound.is_null_literal() {
            return Ok(ArrayOperand::Null);
        }
        if bound.data_type().is_array() || (element_type.is_none() && bound.data_type() != DataType::Text) {
            // Any other array expression is compared element by element when evaluated.
            return Ok(ArrayOperand::Value(match element_type.and_then(DataType::array_of) {
                Some(to) => ex::coerce(bound, to, true)?,
                None => bound,
            }));
        }
        let Expr::Literal { value: Datum::Text(text), .. } = &bound else {
            return Err(match element_type {
                Some(t) => Error::new(SqlState::CANNOT_COERCE, format!("cannot cast type {} to {}[]", bound.data_type().name(), t.name())),
                None => Error::new(SqlState::WRONG_OBJECT_TYPE, "op ANY/ALL (array) requires array on right side"),
            });
        };
        // An untyped literal takes the type of the left side (text when that is untyped).
        let element_type = element_type.unwrap_or(if left.is_null_literal() { DataType::Text } else { left.data_type() });
        ex::array_literal::parse_array_literal(text)?
            .into_iter()
            .map(|element| {
                let value = match element {
                    Some(text) => ex::cast_datum(Datum::Text(text), element_type)?,
                    None => Datum::Null,
                };
                Ok(typed_element(Expr::Literal { value, data_type: element_type }))
            })
            .collect::<Result<Vec<_>>>()
            .map(ArrayOperand::Elements)
    }

    /// `ARRAY(SELECT x ...)`: `(SELECT array_agg(x) FROM (SELECT x ...) q)`, the rows
    /// aggregated in the order the subquery gives them, and `{}` for no row.
    fn bind_array_subquery(&mut self, query: &ast::Query) -> Result<Expr> {
        let sql = format!("SELECT array_agg(\"?array\") FROM ({query}) AS \"?array\"(\"?array\")");
        let parsed = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &sql)
            .map_err(|e| Error::internal(format!("ARRAY(subquery) rewrite: {e}")))?;
        let Some(ast::Statement::Query(aggregated)) = parsed.into_iter().next() else {
            return Err(Error::internal("ARRAY(subquery) rewrite is not a query"));
        };
        let bound = self.bind(&ast::Expr::Subquery(aggregated))?;
        let data_type = bound.data_type();
        let DataType::Array(elem) = data_type else { return Err(Error::internal("ARRAY(subquery) is not an array")) };
        let empty = Datum::Array(Box::new(weft_common::types::Array { elem, items: Vec::new() }));
        Ok(Expr::Coalesce { args: vec![bound, Expr::Literal { value: empty, data_type }], data_type })
    }

    /// `ARRAY[e1, e2, ...]`: the elements cast to their common type (untyped literals take
    /// it, as in PostgreSQL; all untyped is text), or to `cast_to` (`ARRAY[...]::int[]`).
    fn array_constructor(&mut self, items: &[ast::Expr], cast_to: Option<DataType>) -> Result<Vec<Expr>> {
        let bound: Vec<Expr> = items.iter().map(|item| self.bind(item)).collect::<Result<_>>()?;
        let is_untyped = |e: &Expr| e.is_null_literal() || matches!(e, Expr::Literal { value: Datum::Text(_), .. });
        let element_type = match cast_to {
            Some(t) => t,
            None if bound.is_empty() => {
                return Err(Error::new(SqlState("42P18"), "cannot determine type of empty array")
                    .with_hint("Explicitly cast to the desired type, for example ARRAY[]::integer[]."))
            }
            None => {
                let types: Vec<DataType> = bound.iter().filter(|e| !is_untyped(e)).map(Expr::data_type).collect();
                ex::common_type(&types, "ARRAY")?
            }
        };
        bound
            .into_iter()
            .map(|e| {
                if e.is_null_literal() {
                    return Ok(Expr::Literal { value: Datum::Null, data_type: element_type });
                }
                let explicit = cast_to.is_some() || is_untyped(&e);
                Ok(typed_element(ex::coerce(e, element_type, explicit)?))
            })
            .collect()
    }

    /// A subquery in an expression. `(SELECT ...)` is an init plan (run once, before the
    /// statement) when it reads no column of the query around it, else a subplan run per
    /// row with the outer columns it reads as parameters (`subplan.rs`). EXISTS and
    /// quantified comparisons are always subplans (one without parameters collects its
    /// rows once), planned serially like correlated ones.
    fn bind_subquery(&mut self, query: &ast::Query, usage: SubqueryUse) -> Result<Expr> {
        let Some(ctx) = self.planner else {
            return Err(Error::not_supported("a subquery is not supported in this position"));
        };
        let first_number = ctx.init_plan_count.get();
        let (mut planned, mut args) = self.plan_subquery(query, ctx, ctx.settings)?;
        if !args.is_empty() || !matches!(usage, SubqueryUse::Value) {
            if let Some(aggregates) = &self.aggregates {
                // Evaluated over groups: each outer column must be a group key.
                args = crate::subplan::group_key_args(args, &aggregates.group_by, self.scope)?;
            }
            // Planned again, serially: it runs once per outer row.
            ctx.init_plan_count.set(first_number);
            let mut serial = ctx.settings.clone();
            serial.set("max_parallel_workers_per_gather", "0")?;
            (planned, _) = self.plan_subquery(query, ctx, &serial)?;
        }
        match usage {
            SubqueryUse::Value if planned.columns.len() != 1 => return Err(Error::syntax("subquery must return only one column")),
            SubqueryUse::Quantified { lhs, .. } => {
                let width = row_items(lhs).len();
                if planned.columns.len() > width {
                    return Err(Error::syntax("subquery has too many columns"));
                }
                if planned.columns.len() < width {
                    return Err(Error::syntax("subquery has too few columns"));
                }
            }
            _ => {}
        }
        let number = ctx.init_plan_count.get() + 1;
        ctx.init_plan_count.set(number);
        let (kind, data_type, plan) = match usage {
            SubqueryUse::Value => {
                let data_type = planned.columns[0].data_type;
                if args.is_empty() {
                    return Ok(Expr::ScalarSubquery(Arc::new(ex::InitPlan::new(number, planned.plan, data_type))));
                }
                (ex::SubLinkKind::Value, data_type, planned.plan)
            }
            // One row answers EXISTS.
            SubqueryUse::Exists => {
                let plan = weft_exec::plan::Plan::Limit { input: Box::new(planned.plan), limit: Some(1), offset: 0, run_time: None, ties: None };
                if args.is_empty() {
                    // Uncorrelated: one value for the statement, an init plan as in
                    // PostgreSQL (`WHERE EXISTS (...)` then gates the query once).
                    return Ok(Expr::ScalarSubquery(Arc::new(ex::InitPlan::exists(number, plan))));
                }
                (ex::SubLinkKind::Exists, DataType::Bool, plan)
            }
            SubqueryUse::Quantified { lhs, op, all } => {
                let items = row_items(lhs);
                let width = items.len();
                // A row compares field by field: `=` when all are equal, `<>` when one differs.
                let combine = match op {
                    _ if width == 1 => BinaryOp::And,
                    BinaryOp::Eq => BinaryOp::And,
                    BinaryOp::NotEq => BinaryOp::Or,
                    _ => return Err(Error::not_supported("row comparisons other than = and <> with a subquery are not supported yet")),
                };
                let mut test: Option<Expr> = None;
                for (i, item) in items.into_iter().enumerate() {
                    let lhs = self.bind(item)?;
                    let value = Expr::Column { index: width + i, data_type: planned.columns[i].data_type };
                    let (lhs, value) = unify_unknown_literals(op, lhs, value)?;
                    let field = ex::resolve_binary(op, Expr::Column { index: i, data_type: lhs.data_type() }, value)?;
                    test = Some(match test {
                        None => field,
                        Some(prev) => ex::resolve_binary(combine, prev, field)?,
                    });
                    args.push(lhs);
                }
                let test = test.ok_or_else(|| Error::syntax("syntax error at or near \")\""))?;
                (ex::SubLinkKind::Quantified { test, all, width }, DataType::Bool, planned.plan)
            }
        };
        Ok(Expr::SubPlan { subplan: Arc::new(ex::SubPlan::new(number, plan, data_type, kind)), args })
    }

    /// Plan `query` as a subquery of this scope: the plan, and the outer columns it reads
    /// (bound in this scope; the plan reads them as parameters in this order).
    fn plan_subquery(&self, query: &ast::Query, ctx: &PlanContext, settings: &crate::settings::Settings) -> Result<(crate::planner::PlannedQuery, Vec<Expr>)> {
        let outer = OuterQuery::new(self.scope, ctx.outer);
        let inner = PlanContext { settings, ..ctx.nested(Some(&outer)) };
        let planned = crate::planner::plan_query(query, &inner);
        ctx.init_plan_count.set(inner.init_plan_count.get());
        Ok((planned?, outer.params.into_inner()))
    }

    /// `x IS [NOT] NULL`; on a row constructor PostgreSQL tests every field: IS NULL when
    /// all are NULL, IS NOT NULL when none is (so a row of both kinds is neither).
    fn bind_is_null(&mut self, inner: &ast::Expr, negated: bool) -> Result<Expr> {
        let Some(fields) = row_fields(inner) else {
            return Ok(Expr::IsNull { expr: Box::new(self.bind(inner)?), negated });
        };
        let mut test = Expr::Literal { value: Datum::Bool(true), data_type: DataType::Bool };
        for (i, field) in fields.into_iter().enumerate() {
            let one = Expr::IsNull { expr: Box::new(self.bind(field)?), negated };
            test = if i == 0 { one } else { ex::resolve_binary(BinaryOp::And, test, one)? };
        }
        Ok(test)
    }

    fn bind_like(&mut self, expr: &ast::Expr, pattern: &ast::Expr, escape: Option<&ast::Expr>, negated: bool, case_insensitive: bool) -> Result<Expr> {
        let escape = escape.map(|e| self.bind(e)).transpose()?;
        ex::resolve::resolve_like(self.bind(expr)?, self.bind(pattern)?, escape, negated, case_insensitive)
    }

    fn column(&mut self, qualifier: Option<&str>, name: &str) -> Result<Expr> {
        let (index, data_type) = match self.scope.resolve(qualifier, name) {
            Ok(found) => found,
            Err(error) => {
                // Inside a subquery, a name of the query around it is a parameter.
                if let Some(outer) = self.planner.and_then(|p| p.outer).filter(|_| is_unresolved(&error)) {
                    if let Some(param) = outer.reference(qualifier, name)? {
                        return Ok(param);
                    }
                }
                return Err(error);
            }
        };
        if self.aggregates.is_some() {
            return Err(self.ungrouped_column(qualifier, index));
        }
        Ok(Expr::Column { index, data_type })
    }

    /// The column a `*` expanded to (see [`expanded_column`]): the scope column at `index`.
    fn expanded_column(&mut self, index: usize) -> Result<Expr> {
        if index >= self.scope.local_width() {
            return Err(Error::internal(format!("expanded column {index} is outside its scope")));
        }
        if self.aggregates.is_some() {
            return Err(self.ungrouped_column(None, index));
        }
        Ok(Expr::Column { index, data_type: self.scope.column_at(index).data_type })
    }

    /// PostgreSQL's error for a column of a grouped query that is not a key.
    fn ungrouped_column(&self, qualifier: Option<&str>, index: usize) -> Error {
        let column = self.scope.column_at(index);
        let name = &column.name;
        let shown = match (qualifier, column.table.as_deref()) {
            (Some(q), _) | (None, Some(q)) => format!("{q}.{name}"),
            (None, None) => name.to_string(),
        };
        Error::new(
            SqlState::GROUPING_ERROR,
            format!("column \"{shown}\" must appear in the GROUP BY clause or be used in an aggregate function"),
        )
    }

    /// The operand of `IS [NOT] TRUE / FALSE / UNKNOWN`: a boolean, or a quoted literal or
    /// NULL read as one.
    fn bool_argument(&mut self, inner: &ast::Expr, test: &str) -> Result<Expr> {
        let bound = self.bind(inner)?;
        let quoted_literal = is_unknown_literal(&bound);
        if bound.data_type() != DataType::Bool && !quoted_literal {
            return Err(Error::new(
                SqlState::DATATYPE_MISMATCH,
                format!("argument of {test} must be type boolean, not type {}", bound.data_type().name()),
            ));
        }
        // A quoted literal is read by boolean's input function: `'f' IS FALSE` is true.
        ex::coerce(bound, DataType::Bool, quoted_literal)
    }

    fn is_bool(&mut self, inner: &ast::Expr, value: bool, negated: bool) -> Result<Expr> {
        // x IS TRUE  ==  coalesce(x = true, false); IS NOT TRUE negates that.
        let test = format!("IS {}{}", if negated { "NOT " } else { "" }, if value { "TRUE" } else { "FALSE" });
        let bound = self.bool_argument(inner, &test)?;
        let eq = ex::resolve_binary(
            BinaryOp::Eq,
            bound,
            Expr::Literal { value: Datum::Bool(value), data_type: DataType::Bool },
        )?;
        let known = Expr::Coalesce {
            args: vec![eq, Expr::Literal { value: Datum::Bool(false), data_type: DataType::Bool }],
            data_type: DataType::Bool,
        };
        if negated {
            ex::resolve_unary(UnaryOp::Not, known)
        } else {
            Ok(known)
        }
    }

    fn bind_case(
        &mut self,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        else_result: Option<&ast::Expr>,
    ) -> Result<Expr> {
        let parts = operand.into_iter().chain(conditions.iter().flat_map(|w| [&w.condition, &w.result])).chain(else_result);
        if parts.into_iter().any(crate::srf::contains_srf) {
            return Err(Error::new(SqlState::FEATURE_NOT_SUPPORTED, "set-returning functions are not allowed in CASE").with_hint(crate::srf::LATERAL_HINT));
        }
        let mut whens = Vec::with_capacity(conditions.len());
        for when in conditions {
            let condition = match operand {
                Some(op) => {
                    let eq = ast::Expr::BinaryOp {
                        left: Box::new(op.clone()),
                        op: BinaryOperator::Eq,
                        right: Box::new(when.condition.clone()),
                    };
                    self.bind(&eq)?
                }
                None => self.bind(&when.condition)?,
            };
            if condition.data_type() != DataType::Bool {
                return Err(Error::new(
                    SqlState::DATATYPE_MISMATCH,
                    format!("argument of CASE/WHEN must be type boolean, not type {}", condition.data_type().name()),
                ));
            }
            whens.push((condition, self.bind(&when.result)?));
        }
        let otherwise = else_result.map(|e| self.bind(e)).transpose()?;
        let mut types: Vec<DataType> = whens.iter().map(|(_, r)| r.data_type()).collect();
        if let Some(o) = &otherwise {
            types.push(o.data_type());
        }
        let data_type = result_type_ignoring_nulls(&whens.iter().map(|(_, r)| r).chain(otherwise.iter()).collect::<Vec<_>>(), "CASE")?;
        let _ = types;
        let whens = whens
            .into_iter()
            .map(|(c, r)| Ok((c, coerce_branch(r, data_type)?)))
            .collect::<Result<Vec<_>>>()?;
        let otherwise = otherwise.map(|o| coerce_branch(o, data_type)).transpose()?.map(Box::new);
        Ok(Expr::Case { whens, otherwise, data_type })
    }

    fn bind_function(&mut self, f: &ast::Function) -> Result<Expr> {
        let name = function_name(&f.name)?;
        if let ("array", ast::FunctionArguments::Subquery(query)) = (name.as_str(), &f.args) {
            return self.bind_array_subquery(query);
        }
        if aggregate_of_call(f).is_some() {
            return Err(Error::new(
                SqlState::GROUPING_ERROR,
                if self.aggregates.is_none() && !self.scope.columns.is_empty() {
                    "aggregate functions are not allowed in WHERE".to_string()
                } else {
                    "aggregate functions are not allowed here".to_string()
                },
            ));
        }
        let has_args = matches!(&f.args, ast::FunctionArguments::List(l) if !l.args.is_empty());
        if hypothetical_function(&name).is_some() && has_args {
            return Err(within_group_required(&name));
        }
        if crate::window::is_window_function(&name) {
            return Err(Error::new(SqlState::WRONG_OBJECT_TYPE, format!("window function {name} requires an OVER clause")));
        }
        if !f.within_group.is_empty() {
            // PostgreSQL looks for a function taking the direct and ordering arguments.
            let (direct, _) = direct_argument_asts(f)?;
            let mut args = direct.into_iter().map(|e| self.bind(e)).collect::<Result<Vec<_>>>()?;
            for item in &f.within_group {
                args.push(self.bind(&item.expr)?);
            }
            return Err(no_aggregate(&name, &args));
        }
        let clauses = match &f.args {
            ast::FunctionArguments::List(list) => list.clauses.as_slice(),
            _ => &[],
        };
        if f.filter.is_some() || clauses.iter().any(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_))) {
            let what = if f.filter.is_some() { "FILTER" } else { "ORDER BY" };
            return Err(Error::new(
                SqlState::WRONG_OBJECT_TYPE,
                format!("{what} specified, but {name} is not an aggregate function"),
            ));
        }
        if let Some(clause) = clauses.first() {
            return Err(Error::not_supported(format!("{clause} in a function call")));
        }
        if let Some(size) = crate::catalog_views::SizeFunction::by_name(&name) {
            return self.bind_relation_size(&name, size, &f.args);
        }
        if let Some(call) = self.bind_catalog_function(&name, &f.args)? {
            return Ok(call);
        }
        let no_arguments = match &f.args {
            ast::FunctionArguments::List(list) => list.args.is_empty(),
            _ => true,
        };
        // psql's catalog functions: every relation is owned by weft's one role and visible
        // on the search path (the argument is an oid; NULL gives NULL).
        if let (Some(value), ast::FunctionArguments::List(list)) = (crate::catalog_views::oid_function_value(&name), &f.args) {
            if let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = list.args.as_slice() {
                let is_null = Expr::IsNull { expr: Box::new(self.bind(arg)?), negated: false };
                let data_type = value.data_type().unwrap_or(DataType::Text);
                let null = Expr::Literal { value: Datum::Null, data_type };
                return Ok(Expr::Case { whens: vec![(is_null, null)], otherwise: Some(Box::new(Expr::Literal { value, data_type })), data_type });
            }
        }
        if let (Some(value), true) = (crate::catalog_views::session_value(&name), no_arguments) {
            return Ok(Expr::Literal { value: Datum::Text(value.to_string()), data_type: DataType::Text });
        }
        if name == "coalesce" {
            crate::srf::refuse_in_conditional(&f.args, "COALESCE")?;
        }
        let args = match &f.args {
            ast::FunctionArguments::List(list)
                if list.args.iter().any(|a| matches!(a, ast::FunctionArg::Named { .. } | ast::FunctionArg::ExprNamed { .. })) =>
            {
                self.bind_named_arguments(&name, &list.args)?
            }
            ast::FunctionArguments::List(list) => self.bind_positional_arguments(&list.args)?,
            ast::FunctionArguments::None => Vec::new(),
            ast::FunctionArguments::Subquery(_) => return Err(Error::not_supported("subquery as function argument")),
        };
        // `pg_typeof(x)`: the argument's type, known when the call is bound (its value is
        // never computed, as in PostgreSQL, where the result is a regtype printed as text).
        if name == "pg_typeof" && args.len() == 1 {
            let written_untyped = match &f.args {
                ast::FunctionArguments::List(list) => matches!(
                    list.args.first(),
                    Some(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v))))
                        if matches!(v.value, ast::Value::SingleQuotedString(_) | ast::Value::Null)
                ),
                _ => false,
            };
            let type_name = match output_modifier(&args[0], self.scope) {
                _ if written_untyped => "unknown",
                // regtype's output: `format_type` without the modifier.
                Some(TypeModifier::Char { .. }) => "character",
                Some(modifier) => modifier.base_type_name(),
                None => args[0].data_type().name(),
            };
            return Ok(Expr::Literal { value: Datum::Text(type_name.to_string()), data_type: DataType::Text });
        }
        if name == "coalesce" {
            if args.is_empty() {
                return Err(Error::syntax("syntax error at or near \")\""));
            }
            let data_type = result_type_ignoring_nulls(&args.iter().collect::<Vec<_>>(), "COALESCE")?;
            let args = args.into_iter().map(|a| coerce_branch(a, data_type)).collect::<Result<Vec<_>>>()?;
            return Ok(Expr::Coalesce { args, data_type });
        }
        if let Some(function) = variadic_any_function(&name) {
            return variadic_any_call(&name, function, args);
        }
        match name.as_str() {
            "nullif" => return null_if(args),
            "greatest" | "least" => {
                let context = name.to_uppercase();
                if args.is_empty() {
                    return Err(Error::syntax("syntax error at or near \")\""));
                }
                let data_type = result_type_ignoring_nulls(&args.iter().collect::<Vec<_>>(), &context)?;
                let args = args.into_iter().map(|a| coerce_branch(a, data_type)).collect::<Result<Vec<_>>>()?;
                let func = if name == "greatest" { ex::ScalarFunction::Greatest } else { ex::ScalarFunction::Least };
                return Ok(Expr::Function { func, args, data_type });
            }
            _ => {}
        }
        if name == "generate_series" || name == "unnest" || name == "pg_partition_ancestors" {
            return crate::srf::bind_set_returning_call(self, &name, args);
        }
        ex::resolve_function(&name, args)
    }
}

/// Parameter names of the functions weft accepts named arguments for (`name => value`),
/// and how many of the last ones have a default (0).
const NAMED_PARAMETERS: &[(&str, &[&str], usize)] = &[
    ("make_interval", &["years", "months", "weeks", "days", "hours", "mins", "secs"], 7),
    ("make_date", &["year", "month", "day"], 0),
    ("make_timestamp", &["year", "month", "mday", "hour", "min", "sec"], 0),
];

impl Binder<'_> {
    /// The arguments of a call that names some of them, in parameter order: positional ones
    /// first, then each named one in its place, defaults (0) in the gaps PostgreSQL fills.
    fn bind_named_arguments(&mut self, function: &str, args: &[ast::FunctionArg]) -> Result<Vec<Expr>> {
        let mut slots: Vec<Option<Expr>> = Vec::new();
        let mut named: Vec<(String, Expr)> = Vec::new();
        for arg in args {
            match arg {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) if named.is_empty() => slots.push(Some(self.bind(e)?)),
                ast::FunctionArg::Unnamed(_) => {
                    return Err(Error::syntax("positional argument cannot follow named argument"));
                }
                ast::FunctionArg::Named { name, arg: ast::FunctionArgExpr::Expr(e), .. } => named.push((ident_name(name), self.bind(e)?)),
                ast::FunctionArg::ExprNamed { name: ast::Expr::Identifier(name), arg: ast::FunctionArgExpr::Expr(e), .. } => {
                    named.push((ident_name(name), self.bind(e)?))
                }
                other => return Err(Error::not_supported(format!("function argument {other}"))),
            }
        }
        let undefined = |slots: &[Option<Expr>], named: &[(String, Expr)]| {
            let mut shown: Vec<String> = slots.iter().flatten().map(|a| a.data_type().name().to_string()).collect();
            shown.extend(named.iter().map(|(n, a)| format!("{n} => {}", a.data_type().name())));
            Error::new(SqlState::UNDEFINED_FUNCTION, format!("function {function}({}) does not exist", shown.join(", ")))
                .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
        };
        let Some((_, parameters, defaults)) = NAMED_PARAMETERS.iter().find(|(f, _, _)| *f == function) else {
            return Err(undefined(&slots, &named));
        };
        slots.resize_with(parameters.len().max(slots.len()), || None);
        for (name, value) in &named {
            match parameters.iter().position(|p| p == name) {
                Some(at) if slots[at].is_none() => slots[at] = Some(value.clone()),
                _ => return Err(undefined(&slots, &named)),
            }
        }
        let required = parameters.len() - defaults;
        let last = slots.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
        let mut bound = Vec::with_capacity(last);
        for (at, slot) in slots.into_iter().take(last).enumerate() {
            bound.push(match slot {
                Some(value) => value,
                None if at >= required => {
                    let zero = if parameters[at] == "secs" { Datum::Float8(0.0) } else { Datum::Int4(0) };
                    let data_type = zero.data_type().unwrap_or(DataType::Int4);
                    Expr::Literal { value: zero, data_type }
                }
                None => return Err(undefined(&[], &named)),
            });
        }
        Ok(bound)
    }

    /// `value AT TIME ZONE zone`: PostgreSQL's `timezone(zone, value)`.
    fn bind_at_time_zone(&mut self, value: &ast::Expr, zone: &ast::Expr) -> Result<Expr> {
        let zone = self.bind(zone)?;
        let value = self.bind(value)?;
        ex::resolve_function("timezone", vec![zone, value])
    }

    /// `pg_relation_size(rel [, fork])` and the other size functions. A relation given by
    /// name (a string, or a `::regclass` cast of one) is looked up now, with PostgreSQL's
    /// errors; an oid that is not a constant becomes a lookup over every relation's size as
    /// of this statement (NULL for an oid that is no relation, as in PostgreSQL).
    fn bind_relation_size(&mut self, name: &str, size: crate::catalog_views::SizeFunction, args: &ast::FunctionArguments) -> Result<Expr> {
        let Some(ctx) = self.planner else {
            return Err(Error::not_supported(format!("{name} is not supported here")));
        };
        let args: Vec<&ast::Expr> = match args {
            ast::FunctionArguments::List(list) => list
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                    other => Err(Error::not_supported(format!("function argument {other}"))),
                })
                .collect::<Result<_>>()?,
            _ => Vec::new(),
        };
        let (relation, fork) = match (size, args.as_slice()) {
            (_, [relation]) => (*relation, None),
            (crate::catalog_views::SizeFunction::Relation, [relation, fork]) => (*relation, Some(*fork)),
            _ => {
                let bound: Vec<Expr> = args.iter().map(|a| self.bind(a)).collect::<Result<_>>()?;
                return Err(no_aggregate(name, &bound));
            }
        };
        // Forks other than the main one are empty in weft (no free space or visibility map).
        let main_fork = match fork.map(|f| self.bind(f)).transpose()? {
            None => true,
            Some(Expr::Literal { value: Datum::Null, .. }) => return Ok(Expr::Literal { value: Datum::Null, data_type: DataType::Int8 }),
            Some(Expr::Literal { value: Datum::Text(fork), .. }) => crate::catalog_views::is_main_fork(&fork)?,
            Some(_) => return Err(Error::not_supported(format!("{name} with a fork that is not a constant"))),
        };
        let relation = match relation {
            ast::Expr::Cast { expr, data_type: ast::DataType::Regclass, .. } => expr,
            other => other,
        };
        let zero_unless_main = |bytes: i64| if main_fork { bytes } else { 0 };
        match self.bind(relation)? {
            Expr::Literal { value: Datum::Null, .. } => Ok(Expr::Literal { value: Datum::Null, data_type: DataType::Int8 }),
            Expr::Literal { value: Datum::Text(text), .. } => {
                let bytes = size.bytes_by_name(&text, ctx.catalog, ctx.pool)?;
                Ok(Expr::Literal { value: Datum::Int8(zero_unless_main(bytes)), data_type: DataType::Int8 })
            }
            oid if matches!(oid.data_type(), DataType::Int4 | DataType::Int8) => {
                let oid = ex::coerce(oid, DataType::Int8, false)?;
                let whens = size
                    .bytes_by_oid(ctx.catalog, ctx.pool)?
                    .into_iter()
                    .map(|(relation, bytes)| {
                        let matches = Expr::Binary {
                            op: ex::BinaryOp::Eq,
                            left: Box::new(oid.clone()),
                            right: Box::new(Expr::Literal { value: Datum::Int8(relation), data_type: DataType::Int8 }),
                            data_type: DataType::Bool,
                        };
                        (matches, Expr::Literal { value: Datum::Int8(zero_unless_main(bytes)), data_type: DataType::Int8 })
                    })
                    .collect();
                Ok(Expr::Case { whens, otherwise: None, data_type: DataType::Int8 })
            }
            other => Err(no_aggregate(name, [&other])),
        }
    }
}

/// The object identifier types weft reads in casts: `x::regclass` and the like.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RegType {
    Class,
    Type,
    Namespace,
}

impl RegType {
    fn of(data_type: &ast::DataType) -> Option<RegType> {
        match data_type {
            ast::DataType::Regclass => Some(RegType::Class),
            ast::DataType::Custom(name, modifiers) if modifiers.is_empty() => match function_name(name).ok()?.as_str() {
                "regclass" => Some(RegType::Class),
                "regtype" => Some(RegType::Type),
                "regnamespace" => Some(RegType::Namespace),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The operand of `expr` if `expr` is a `::regclass` cast (in parentheses or not).
pub(crate) fn regclass_cast_operand(expr: &ast::Expr) -> Option<&ast::Expr> {
    match expr {
        ast::Expr::Nested(inner) => regclass_cast_operand(inner),
        ast::Expr::Cast { expr, data_type, .. } if RegType::of(data_type) == Some(RegType::Class) => Some(expr),
        _ => None,
    }
}

/// `regclass` output of the oid `key`: the relation's name (quoted as needed; every
/// relation is on the search path), or the number when there is no such relation.
pub(crate) fn regclass_names_of(key: Expr, catalog: &weft_access::Catalog) -> Expr {
    let whens = crate::pg_catalog::relation_names(catalog).into_iter().map(|(oid, name)| (equals(&key, oid), Datum::Text(name))).collect();
    let number = Expr::Cast { expr: Box::new(key), to: DataType::Text };
    catalog_lookup(whens, Some(number), DataType::Text)
}

/// A query's output step for its select items that are `::regclass` casts, which were
/// bound to oids (so ORDER BY and DISTINCT compare oids, as PostgreSQL's regclass does):
/// their names, as regclass output prints them.
pub(crate) fn regclass_output(planned: &mut crate::planner::PlannedQuery, catalog: &weft_access::Catalog) {
    let width = planned.columns.len();
    let converted: Vec<usize> = (0..width)
        .filter(|&i| planned.columns[i].data_type == DataType::Int8)
        .filter(|&i| planned.select_items.get(i).is_some_and(|e| regclass_cast_operand(e).is_some()))
        .collect();
    if converted.is_empty() {
        return;
    }
    for &i in &converted {
        planned.columns[i].data_type = DataType::Text;
    }
    // A plan ending in its select list's projection prints the names there.
    let last_projection = match &mut planned.plan {
        weft_exec::Plan::Pipeline(p) => p.steps.last_mut(),
        weft_exec::Plan::Aggregate { output, .. } => output.last_mut(),
        _ => None,
    };
    if let Some(weft_exec::Step::Project(exprs)) = last_projection {
        if exprs.len() == width {
            for &i in &converted {
                exprs[i] = regclass_names_of(exprs[i].clone(), catalog);
            }
            return;
        }
    }
    let mut exprs: Vec<Expr> = (0..width).map(|index| Expr::Column { index, data_type: DataType::Int8 }).collect();
    for (index, e) in exprs.iter_mut().enumerate() {
        *e = if converted.contains(&index) {
            regclass_names_of(Expr::Column { index, data_type: DataType::Int8 }, catalog)
        } else {
            Expr::Column { index, data_type: planned.columns[index].data_type }
        };
    }
    let plan = std::mem::replace(&mut planned.plan, weft_exec::Plan::Pipeline(weft_exec::Pipeline { source: weft_exec::Source::Single, steps: Vec::new(), workers: 0 }));
    planned.plan = weft_exec::Plan::Pipeline(weft_exec::Pipeline {
        source: weft_exec::Source::Subquery { plan: Box::new(plan), label: weft_exec::ScanLabel::default() },
        steps: vec![weft_exec::Step::Project(exprs)],
        workers: 0,
    });
}

/// An oid argument: an integer, or a quoted literal read as an oid (psql writes `'16385'`).
fn oid_key(expr: Expr) -> Result<Expr> {
    match expr {
        Expr::Literal { value: Datum::Null, .. } => Ok(Expr::Literal { value: Datum::Null, data_type: DataType::Int8 }),
        Expr::Literal { value: Datum::Text(text), .. } => match text.trim().parse::<u32>() {
            Ok(oid) => Ok(Expr::Literal { value: Datum::Int8(i64::from(oid)), data_type: DataType::Int8 }),
            Err(_) => Err(Error::new(SqlState::INVALID_TEXT_REPRESENTATION, format!("invalid input syntax for type oid: \"{text}\""))),
        },
        e if matches!(e.data_type(), DataType::Int4 | DataType::Int8) => ex::coerce(e, DataType::Int8, false),
        e => Err(Error::new(SqlState::UNDEFINED_FUNCTION, format!("cannot use {} as an oid", e.data_type().name()))),
    }
}

fn equals(left: &Expr, value: i64) -> Expr {
    Expr::Binary {
        op: ex::BinaryOp::Eq,
        left: Box::new(left.clone()),
        right: Box::new(Expr::Literal { value: Datum::Int8(value), data_type: DataType::Int8 }),
        data_type: DataType::Bool,
    }
}

fn both(left: Expr, right: Expr) -> Expr {
    Expr::Binary { op: ex::BinaryOp::And, left: Box::new(left), right: Box::new(right), data_type: DataType::Bool }
}

/// `CASE WHEN condition THEN value ... [ELSE otherwise] END` over a catalog's objects, as
/// bound for a function of an oid: the objects are those of the statement's catalog.
fn catalog_lookup(whens: Vec<(Expr, Datum)>, otherwise: Option<Expr>, data_type: DataType) -> Expr {
    let whens: Vec<(Expr, Expr)> = whens.into_iter().map(|(c, v)| (c, Expr::Literal { value: v, data_type })).collect();
    if whens.is_empty() {
        return otherwise.unwrap_or(Expr::Literal { value: Datum::Null, data_type });
    }
    Expr::Case { whens, otherwise: otherwise.map(Box::new), data_type }
}

impl Binder<'_> {
    /// `x::regclass`, `::regtype`, `::regnamespace`. weft has no such types and keeps oids
    /// as `bigint`: a quoted name (or number) is read as the object's oid, as the type's
    /// input function reads it, and an oid reads as the object's name, as its output
    /// function prints it (the number when there is no such object).
    fn bind_reg_cast(&mut self, inner: &ast::Expr, kind: RegType) -> Result<Expr> {
        let as_oid = std::mem::take(&mut self.regclass_oid) && kind == RegType::Class;
        let bound = self.bind(inner)?;
        let catalog = self.planner.map(|ctx| ctx.catalog);
        if let Expr::Literal { value: Datum::Text(input), .. } = &bound {
            if let Ok(oid) = input.trim().parse::<u32>() {
                return Ok(Expr::Literal { value: Datum::Int8(i64::from(oid)), data_type: DataType::Int8 });
            }
            let found = match kind {
                RegType::Class => {
                    let (schema, name) = crate::catalog_views::regclass_name(input)?;
                    let catalog = catalog.ok_or_else(|| Error::not_supported("regclass is not supported here"))?;
                    crate::pg_catalog::relation_oid(catalog, schema.as_deref(), &name)
                        .ok_or_else(|| Error::new(SqlState::UNDEFINED_TABLE, format!("relation \"{input}\" does not exist")))?
                }
                RegType::Type => {
                    let name = input.trim().strip_prefix("pg_catalog.").unwrap_or(input.trim()).to_lowercase();
                    crate::pg_catalog::types()
                        .into_iter()
                        .find(|t| t.typname == name || t.display == name)
                        .map(|t| t.oid)
                        .ok_or_else(|| Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{input}\" does not exist")))?
                }
                RegType::Namespace => crate::pg_catalog::NAMESPACES
                    .iter()
                    .find(|(_, name, _)| *name == input.trim())
                    .map(|(oid, _, _)| *oid)
                    .ok_or_else(|| Error::new(SqlState::UNDEFINED_OBJECT, format!("schema \"{input}\" does not exist")))?,
            };
            return Ok(Expr::Literal { value: Datum::Int8(found), data_type: DataType::Int8 });
        }
        let key = oid_key(bound)?;
        if as_oid {
            return Ok(key);
        }
        let names = match kind {
            RegType::Class => crate::pg_catalog::relation_names(catalog.ok_or_else(|| Error::not_supported("regclass is not supported here"))?),
            RegType::Type => crate::pg_catalog::type_names(),
            RegType::Namespace => crate::pg_catalog::namespace_names(),
        };
        let whens = names.into_iter().map(|(oid, name)| (equals(&key, oid), Datum::Text(name))).collect();
        let number = Expr::Cast { expr: Box::new(key), to: DataType::Text };
        Ok(catalog_lookup(whens, Some(number), DataType::Text))
    }

    /// A call's arguments, each a plain expression (no names, no `*`).
    fn bind_positional_arguments(&mut self, args: &[ast::FunctionArg]) -> Result<Vec<Expr>> {
        args.iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => self.bind(e),
                other => Err(Error::not_supported(format!("function argument {other}"))),
            })
            .collect()
    }

    /// psql's catalog functions (`pg_catalog.rs`), bound to lookups over the statement's
    /// catalog; `None` if `name` is none of them.
    fn bind_catalog_function(&mut self, name: &str, args: &ast::FunctionArguments) -> Result<Option<Expr>> {
        let arity = match name {
            "pg_get_expr" => 2..=3,
            "pg_get_constraintdef" | "pg_get_triggerdef" | "obj_description" => 1..=2,
            "pg_get_indexdef" => 1..=3,
            "format_type" | "col_description" | "shobj_description" => 2..=2,
            "pg_get_statisticsobjdef_columns" | "pg_relation_is_publishable" | "pg_encoding_to_char" | "pg_get_userbyid" => 1..=1,
            _ => return Ok(None),
        };
        let mut bound: Vec<Expr> = match args {
            ast::FunctionArguments::List(list) => self.bind_positional_arguments(&list.args)?,
            _ => Vec::new(),
        };
        if !arity.contains(&bound.len()) || (name == "pg_get_indexdef" && bound.len() == 2) {
            return Err(no_aggregate(name, &bound));
        }
        let text = DataType::Text;
        let null_text = Expr::Literal { value: Datum::Null, data_type: text };
        // weft keeps an expression as its text: it is its own deparsed form.
        if name == "pg_get_expr" {
            let expr = bound.remove(0);
            return Ok(Some(if expr.data_type() == text { expr } else { ex::coerce(expr, text, true)? }));
        }
        // weft has no triggers, extended statistics or comments: no oid is one of them.
        if matches!(name, "pg_get_triggerdef" | "pg_get_statisticsobjdef_columns" | "obj_description" | "col_description" | "shobj_description") {
            return Ok(Some(null_text));
        }
        let key = oid_key(bound.remove(0))?;
        let is_null = Expr::IsNull { expr: Box::new(key.clone()), negated: false };
        let catalog = || self.planner.map(|ctx| ctx.catalog).ok_or_else(|| Error::not_supported(format!("{name} is not supported here")));
        Ok(Some(match name {
            "pg_get_userbyid" => {
                let whens = vec![(is_null, Datum::Null), (equals(&key, crate::pg_catalog::DATABASE_OWNER_OID), Datum::Text(crate::pg_catalog::DATABASE_OWNER_NAME.into()))];
                catalog_lookup(whens, Some(Expr::Literal { value: Datum::Text(crate::catalog_views::OWNER_NAME.into()), data_type: text }), text)
            }
            // PostgreSQL returns an empty string for a number that is no encoding.
            "pg_encoding_to_char" => {
                let whens = vec![(is_null, Datum::Null), (equals(&key, crate::pg_catalog::UTF8_ENCODING), Datum::Text("UTF8".into()))];
                catalog_lookup(whens, Some(Expr::Literal { value: Datum::Text(String::new()), data_type: text }), text)
            }
            "pg_relation_is_publishable" => {
                let mut whens = vec![(is_null, Datum::Null)];
                whens.extend(crate::pg_catalog::table_oids(catalog()?).into_iter().map(|oid| (equals(&key, oid), Datum::Bool(true))));
                catalog_lookup(whens, Some(Expr::Literal { value: Datum::Bool(false), data_type: DataType::Bool }), DataType::Bool)
            }
            "pg_get_constraintdef" => {
                let whens = crate::pg_catalog::constraint_definitions(catalog()?).into_iter().map(|(oid, def)| (equals(&key, oid), Datum::Text(def))).collect();
                catalog_lookup(whens, None, text)
            }
            "pg_get_indexdef" => {
                // (index, column, pretty); the one-argument form is column 0, not pretty.
                let pretty = !matches!(bound.get(1), None | Some(Expr::Literal { value: Datum::Bool(false), .. }));
                let column = match bound.into_iter().next() {
                    Some(column) => oid_key(column)?,
                    None => Expr::Literal { value: Datum::Int8(0), data_type: DataType::Int8 },
                };
                let whens = crate::pg_catalog::index_definitions(catalog()?, pretty)
                    .into_iter()
                    .map(|(oid, n, def)| (both(equals(&key, oid), equals(&column, n)), Datum::Text(def)))
                    .collect();
                catalog_lookup(whens, None, text)
            }
            "format_type" => {
                let modifier = oid_key(bound.remove(0))?;
                let mut whens: Vec<(Expr, Datum)> = crate::pg_catalog::modified_types(catalog()?)
                    .into_iter()
                    .map(|(oid, typmod, name)| (both(equals(&key, oid), equals(&modifier, typmod)), Datum::Text(name)))
                    .collect();
                whens.extend(crate::pg_catalog::type_names().into_iter().map(|(oid, name)| (equals(&key, oid), Datum::Text(name))));
                catalog_lookup(whens, None, text)
            }
            _ => return Ok(None),
        }))
    }
}

/// The functions of PostgreSQL's catalog declared `variadic "any"`: they take any number
/// of arguments of any type and read them through their output text.
fn variadic_any_function(name: &str) -> Option<ex::ScalarFunction> {
    Some(match name {
        "concat" => ex::ScalarFunction::Concat,
        "concat_ws" => ex::ScalarFunction::ConcatWs,
        "format" => ex::ScalarFunction::Format,
        "num_nulls" => ex::ScalarFunction::NumNulls,
        "num_nonnulls" => ex::ScalarFunction::NumNonNulls,
        "quote_nullable" => ex::ScalarFunction::QuoteNullable,
        _ => return None,
    })
}

fn variadic_any_call(name: &str, func: ex::ScalarFunction, args: Vec<Expr>) -> Result<Expr> {
    use ex::ScalarFunction as F;
    if args.is_empty() || (func == F::QuoteNullable && args.len() != 1) {
        let types = args.iter().map(|a| a.data_type().name()).collect::<Vec<_>>().join(", ");
        return Err(Error::new(SqlState::UNDEFINED_FUNCTION, format!("function {name}({types}) does not exist"))
            .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."));
    }
    let mut args = args;
    // The first argument of concat_ws and format is text; quote_nullable reads text too.
    if matches!(func, F::ConcatWs | F::Format | F::QuoteNullable) {
        let first = args.remove(0);
        args.insert(0, ex::coerce(first, DataType::Text, func == F::QuoteNullable)?);
    }
    let data_type = if matches!(func, F::NumNulls | F::NumNonNulls) { DataType::Int4 } else { DataType::Text };
    Ok(Expr::Function { func, args, data_type })
}

/// The operator a symbol names.
fn builtin_operator(symbol: &str) -> Option<BinaryOperator> {
    Some(match symbol {
        "=" => BinaryOperator::Eq,
        "<>" | "!=" => BinaryOperator::NotEq,
        "<" => BinaryOperator::Lt,
        "<=" => BinaryOperator::LtEq,
        ">" => BinaryOperator::Gt,
        ">=" => BinaryOperator::GtEq,
        "+" => BinaryOperator::Plus,
        "-" => BinaryOperator::Minus,
        "*" => BinaryOperator::Multiply,
        "/" => BinaryOperator::Divide,
        "%" => BinaryOperator::Modulo,
        "||" => BinaryOperator::StringConcat,
        "~" => BinaryOperator::PGRegexMatch,
        "~*" => BinaryOperator::PGRegexIMatch,
        "!~" => BinaryOperator::PGRegexNotMatch,
        "!~*" => BinaryOperator::PGRegexNotIMatch,
        "~~" => BinaryOperator::PGLikeMatch,
        "!~~" => BinaryOperator::PGNotLikeMatch,
        "~~*" => BinaryOperator::PGILikeMatch,
        "!~~*" => BinaryOperator::PGNotILikeMatch,
        _ => return None,
    })
}

/// The built-in function behind an operator weft evaluates as a function call.
fn operator_function(op: &BinaryOperator) -> Option<&'static str> {
    Some(match op {
        BinaryOperator::PGRegexMatch => "textregexeq",
        BinaryOperator::PGRegexIMatch => "texticregexeq",
        BinaryOperator::PGRegexNotMatch => "textregexne",
        BinaryOperator::PGRegexNotIMatch => "texticregexne",
        BinaryOperator::PGLikeMatch => "textlike",
        BinaryOperator::PGNotLikeMatch => "textnlike",
        BinaryOperator::PGILikeMatch => "texticlike",
        BinaryOperator::PGNotILikeMatch => "texticnlike",
        BinaryOperator::PGExp | BinaryOperator::BitwiseXor => "power",
        BinaryOperator::PGBitwiseXor => "int_xor",
        BinaryOperator::BitwiseAnd => "int_and",
        BinaryOperator::BitwiseOr => "int_or",
        BinaryOperator::PGBitwiseShiftLeft => "int_shl",
        BinaryOperator::PGBitwiseShiftRight => "int_shr",
        _ => return None,
    })
}

/// Resolves an operator through its function, reporting a mismatch as PostgreSQL does for
/// operators (`operator does not exist: integer ~ text`).
fn resolve_operator_function(function: &str, symbol: &str, args: Vec<Expr>) -> Result<Expr> {
    // A quoted literal has no type yet: PostgreSQL calls it `unknown`.
    let types: Vec<&str> = args
        .iter()
        .map(|a| match a {
            Expr::Literal { value: Datum::Text(_) | Datum::Null, .. } => "unknown",
            other => other.data_type().name(),
        })
        .collect();
    ex::resolve_function(function, args).map_err(|e| {
        if e.sqlstate != SqlState::UNDEFINED_FUNCTION {
            return e;
        }
        let shape = match types.as_slice() {
            [l, r] => format!("{l} {symbol} {r}"),
            [only] => format!("{symbol} {only}"),
            _ => symbol.to_string(),
        };
        Error::new(SqlState::UNDEFINED_FUNCTION, format!("operator does not exist: {shape}"))
            .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
    })
}

/// `NULLIF(a, b)`: both sides as the `=` between them takes them (whose lookup gives
/// PostgreSQL's errors); the result has the type of its left input.
fn null_if(args: Vec<Expr>) -> Result<Expr> {
    let Ok([a, b]) = <[Expr; 2]>::try_from(args) else {
        return Err(Error::syntax("syntax error at or near \")\""));
    };
    let (a, b) = unify_unknown_literals(BinaryOp::Eq, a, b)?;
    match ex::resolve_binary(BinaryOp::Eq, a, b)? {
        Expr::Binary { left, right, .. } => {
            let data_type = left.data_type();
            Ok(Expr::Function { func: ex::ScalarFunction::NullIf, args: vec![*left, *right], data_type })
        }
        other => Err(Error::internal(format!("NULLIF's comparison resolved to {other:?}"))),
    }
}

/// `function name(types) does not exist`, PostgreSQL's error for an aggregate (or another
/// function bound here) without a matching signature.
pub(crate) fn no_aggregate<'e>(name: &str, args: impl IntoIterator<Item = &'e Expr>) -> Error {
    let types: Vec<&str> = args.into_iter().map(|a| if is_unknown_literal(a) { "unknown" } else { a.data_type().name() }).collect();
    Error::new(SqlState::UNDEFINED_FUNCTION, format!("function {name}({}) does not exist", types.join(", ")))
        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
}

/// A call over distinct values (`f(DISTINCT x ...)`) aggregates each group's distinct
/// values of `x` (`planner::distinct_aggregate`, or the accumulator's set of them): its
/// ORDER BY may only sort by the argument, its FILTER becomes a CASE around the argument
/// (every aggregate skips NULLs), and a delimiter must not read the row.
fn distinct_call(call: &mut AggregateCall) -> Result<()> {
    if call.order_by.iter().any(|k| Some(&k.expr) != call.arg.as_ref()) {
        return Err(Error::new(
            SqlState::INVALID_COLUMN_REFERENCE,
            "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
        ));
    }
    if let Some(filter) = call.filter.take() {
        let arg = call.arg.take().ok_or_else(|| Error::internal("DISTINCT aggregate without an argument"))?;
        let data_type = arg.data_type();
        let folded = Expr::Case { whens: vec![(filter, arg)], otherwise: None, data_type };
        call.order_by.iter_mut().for_each(|k| k.expr = folded.clone());
        call.arg = Some(folded);
    }
    let mut read = std::collections::BTreeSet::new();
    call.arg2.iter().for_each(|d| crate::exprutil::columns_used(d, &mut read));
    if !read.is_empty() {
        return Err(Error::not_supported("string_agg(DISTINCT ...) with a delimiter that is not a constant is not supported yet"));
    }
    Ok(())
}

/// A branch PostgreSQL types `unknown`: an untyped NULL or a quoted literal.
pub(crate) fn is_unknown_literal(expr: &Expr) -> bool {
    matches!(expr, Expr::Literal { value: Datum::Null | Datum::Text(_), .. })
}

/// The common type of CASE / COALESCE branches; untyped NULLs and quoted literals adopt it.
pub(crate) fn result_type_ignoring_nulls(branches: &[&Expr], context: &str) -> Result<DataType> {
    let types: Vec<DataType> = branches.iter().filter(|e| !is_unknown_literal(e)).map(|e| e.data_type()).collect();
    if types.is_empty() {
        return Ok(DataType::Text);
    }
    ex::common_type(&types, context)
}

pub(crate) fn coerce_branch(expr: Expr, to: DataType) -> Result<Expr> {
    if is_null_literal(&expr) {
        return Ok(Expr::Literal { value: Datum::Null, data_type: to });
    }
    if expr.data_type() == to {
        return Ok(expr);
    }
    // A quoted literal is read by the type's input function, as PostgreSQL does.
    let quoted_literal = is_unknown_literal(&expr);
    ex::coerce(expr, to, quoted_literal)
}

/// `left IS [NOT] DISTINCT FROM right`; two rows are distinct when any pair of fields is
/// (PostgreSQL compares them field by field, NULLs equal), not when they differ as wholes.
fn row_distinct_from(left: &ast::Expr, right: &ast::Expr, distinct: bool) -> Result<ast::Expr> {
    let (Some(lefts), Some(rights)) = (row_fields(left), row_fields(right)) else {
        return Ok(distinct_from(left, right, distinct));
    };
    if lefts.len() != rights.len() {
        return Err(Error::syntax("unequal number of entries in row expressions"));
    }
    let combine = if distinct { ast::BinaryOperator::Or } else { ast::BinaryOperator::And };
    let nest = |e: ast::Expr| ast::Expr::Nested(Box::new(e));
    lefts
        .iter()
        .zip(&rights)
        .map(|(l, r)| nest(distinct_from(l, r, distinct)))
        .reduce(|a, b| nest(ast::Expr::BinaryOp { left: Box::new(a), op: combine.clone(), right: Box::new(b) }))
        .ok_or_else(|| Error::syntax("syntax error at or near \")\""))
}

/// `left IS [NOT] DISTINCT FROM right` as the CASE it means: NULLs equal each other and
/// nothing else; otherwise `=` decides (whose operator lookup gives PostgreSQL's errors).
fn distinct_from(left: &ast::Expr, right: &ast::Expr, distinct: bool) -> ast::Expr {
    use ast::Expr as A;
    let is_null = |e: &ast::Expr, negated: bool| {
        let e = Box::new(e.clone());
        if negated { A::IsNotNull(e) } else { A::IsNull(e) }
    };
    let equal = A::Nested(Box::new(A::BinaryOp { left: Box::new(left.clone()), op: ast::BinaryOperator::Eq, right: Box::new(right.clone()) }));
    let otherwise = if distinct { A::UnaryOp { op: ast::UnaryOperator::Not, expr: Box::new(equal) } } else { equal };
    A::Case {
        case_token: ast::helpers::attached_token::AttachedToken::empty(),
        end_token: ast::helpers::attached_token::AttachedToken::empty(),
        operand: None,
        conditions: vec![
            ast::CaseWhen { condition: is_null(left, false), result: is_null(right, distinct) },
            ast::CaseWhen { condition: is_null(right, false), result: A::Value(ast::Value::Boolean(distinct).into()) },
        ],
        else_result: Some(Box::new(otherwise)),
    }
}

pub fn is_null_literal(expr: &Expr) -> bool {
    matches!(expr, Expr::Literal { value: Datum::Null, .. })
}

/// A quoted string literal compared with a typed value takes that value's type.
fn unify_unknown_literals(op: BinaryOp, left: Expr, right: Expr) -> Result<(Expr, Expr)> {
    if matches!(op, BinaryOp::Concat | BinaryOp::And | BinaryOp::Or) {
        return Ok((left, right));
    }
    let is_text_literal = |e: &Expr| matches!(e, Expr::Literal { value: Datum::Text(_), .. });
    if is_text_literal(&left) && right.data_type() != DataType::Text && !is_null_literal(&right) {
        let to = right.data_type();
        return Ok((ex::coerce(left, to, true)?, right));
    }
    if is_text_literal(&right) && left.data_type() != DataType::Text && !is_null_literal(&left) {
        let to = left.data_type();
        return Ok((left, ex::coerce(right, to, true)?));
    }
    Ok((left, right))
}

/// How an expression uses a subquery.
enum SubqueryUse<'a> {
    /// `(SELECT ...)`: its one value.
    Value,
    /// `EXISTS (SELECT ...)`.
    Exists,
    /// `lhs op ANY | ALL (SELECT ...)`; `lhs IN (SELECT ...)` is `= ANY`.
    Quantified { lhs: &'a ast::Expr, op: BinaryOp, all: bool },
}

/// The fields of a row constructor `(a, b, ...)`, or the one expression that is not one.
pub(crate) fn row_items(expr: &ast::Expr) -> Vec<&ast::Expr> {
    match strip_nesting(expr) {
        ast::Expr::Tuple(items) => items.iter().collect(),
        one => vec![one],
    }
}

/// `(a, b) op (c, d)` as the scalar comparisons it means, as PostgreSQL compares rows:
/// `=` when every pair is equal, `<>` when any pair differs, and `<`, `<=`, `>`, `>=`
/// decided by the first pair that is not equal — `(a < c) OR (a = c AND b < d)`, whose
/// NULLs come out as PostgreSQL's (a NULL pair before the deciding one makes the result
/// NULL). `lefts` and `rights` are the two rows' fields (`row_fields`).
fn row_comparison(lefts: &[&ast::Expr], op: &BinaryOperator, rights: &[&ast::Expr]) -> Result<ast::Expr> {
    use ast::Expr as A;
    if lefts.len() != rights.len() {
        return Err(Error::syntax("unequal number of entries in row expressions"));
    }
    let pair = |l: &ast::Expr, op: BinaryOperator, r: &ast::Expr| {
        A::Nested(Box::new(A::BinaryOp { left: Box::new(l.clone()), op, right: Box::new(r.clone()) }))
    };
    let join = |a: ast::Expr, op: BinaryOperator, b: ast::Expr| A::Nested(Box::new(A::BinaryOp { left: Box::new(a), op, right: Box::new(b) }));
    let pairs = lefts.iter().zip(rights);
    let expanded = match op {
        BinaryOperator::Eq | BinaryOperator::NotEq => {
            let (each, combine) = if *op == BinaryOperator::Eq { (BinaryOperator::Eq, BinaryOperator::And) } else { (BinaryOperator::NotEq, BinaryOperator::Or) };
            pairs.map(|(l, r)| pair(l, each.clone(), r)).reduce(|a, b| join(a, combine.clone(), b))
        }
        BinaryOperator::Lt | BinaryOperator::LtEq | BinaryOperator::Gt | BinaryOperator::GtEq => {
            let strict = if matches!(op, BinaryOperator::Lt | BinaryOperator::LtEq) { BinaryOperator::Lt } else { BinaryOperator::Gt };
            let mut pairs = pairs.rev();
            let (l, r) = pairs.next().ok_or_else(|| Error::syntax("syntax error at or near \")\""))?;
            let last = pair(l, op.clone(), r);
            Some(pairs.fold(last, |rest, (l, r)| {
                let tie = join(pair(l, BinaryOperator::Eq, r), BinaryOperator::And, rest);
                join(pair(l, strict.clone(), r), BinaryOperator::Or, tie)
            }))
        }
        other => return Err(Error::not_supported(format!("operator {other} on rows"))),
    };
    expanded.ok_or_else(|| Error::syntax("syntax error at or near \")\""))
}

/// The fields of a row constructor, `(a, b)` or `ROW(a, ...)`.
fn row_fields(expr: &ast::Expr) -> Option<Vec<&ast::Expr>> {
    match strip_nesting(expr) {
        ast::Expr::Tuple(items) => Some(items.iter().collect()),
        ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("row") => match &f.args {
            ast::FunctionArguments::List(list) => list
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                })
                .collect(),
            _ => None,
        },
        _ => None,
    }
}

fn negate_if(expr: Expr, negated: bool) -> Result<Expr> {
    if negated {
        ex::resolve_unary(UnaryOp::Not, expr)
    } else {
        Ok(expr)
    }
}

/// An array element of type text stays typed: unlike a quoted literal it is not cast to
/// the other side's type (`1 = ANY ('{1}'::text[])` is PostgreSQL's 42883).
fn typed_element(element: Expr) -> Expr {
    match element {
        Expr::Literal { value: value @ Datum::Text(_), data_type } => {
            Expr::Cast { expr: Box::new(Expr::Literal { value, data_type }), to: DataType::Text }
        }
        other => other,
    }
}

/// `items` joined by `op` as a balanced tree (an IN list or array of thousands of values
/// stays shallow for the recursive walks over expressions), left to right.
pub(crate) fn balanced_chain(mut items: Vec<Expr>, op: BinaryOp) -> Option<Expr> {
    while items.len() > 1 {
        let mut paired = Vec::with_capacity(items.len().div_ceil(2));
        let mut rest = items.into_iter();
        while let Some(left) = rest.next() {
            paired.push(match rest.next() {
                Some(right) => Expr::Binary { op, left: Box::new(left), right: Box::new(right), data_type: DataType::Bool },
                None => left,
            });
        }
        items = paired;
    }
    items.pop()
}

fn strip_nesting(expr: &ast::Expr) -> &ast::Expr {
    match expr {
        ast::Expr::Nested(inner) => strip_nesting(inner),
        other => other,
    }
}

fn binary_op(op: &BinaryOperator) -> Result<BinaryOp> {
    Ok(match op {
        BinaryOperator::Plus => BinaryOp::Add,
        BinaryOperator::Minus => BinaryOp::Sub,
        BinaryOperator::Multiply => BinaryOp::Mul,
        BinaryOperator::Divide => BinaryOp::Div,
        BinaryOperator::Modulo => BinaryOp::Mod,
        BinaryOperator::Eq => BinaryOp::Eq,
        BinaryOperator::NotEq => BinaryOp::NotEq,
        BinaryOperator::Lt => BinaryOp::Lt,
        BinaryOperator::LtEq => BinaryOp::LtEq,
        BinaryOperator::Gt => BinaryOp::Gt,
        BinaryOperator::GtEq => BinaryOp::GtEq,
        BinaryOperator::And => BinaryOp::And,
        BinaryOperator::Or => BinaryOp::Or,
        BinaryOperator::StringConcat => BinaryOp::Concat,
        other => {
            return Err(Error::new(SqlState::UNDEFINED_FUNCTION, format!("operator is not supported: {other}")))
        }
    })
}

pub fn literal(value: &Value) -> Result<Expr> {
    Ok(match value {
        Value::Number(n, _) => return number_literal(n),
        Value::SingleQuotedString(s)
        | Value::EscapedStringLiteral(s)
        | Value::DoubleQuotedString(s)
        | Value::NationalStringLiteral(s) => Expr::Literal { value: Datum::Text(s.clone()), data_type: DataType::Text },
        Value::DollarQuotedString(d) => Expr::Literal { value: Datum::Text(d.value.clone()), data_type: DataType::Text },
        Value::Boolean(b) => Expr::Literal { value: Datum::Bool(*b), data_type: DataType::Bool },
        Value::Null => Expr::Literal { value: Datum::Null, data_type: DataType::Text },
        other => return Err(Error::not_supported(format!("literal {other}"))),
    })
}

/// PostgreSQL's typing of numeric constants.
fn number_literal(text: &str) -> Result<Expr> {
    if !text.contains(['.', 'e', 'E']) {
        if let Ok(v) = text.parse::<i32>() {
            return Ok(Expr::Literal { value: Datum::Int4(v), data_type: DataType::Int4 });
        }
        if let Ok(v) = text.parse::<i64>() {
            return Ok(Expr::Literal { value: Datum::Int8(v), data_type: DataType::Int8 });
        }
    }
    match Numeric::parse(text) {
        Ok(n) => Ok(Expr::Literal { value: Datum::Numeric(n), data_type: DataType::Numeric }),
        // weft's numeric holds 38 digits; a larger constant (1e300) is kept as float8,
        // which is what such constants are nearly always cast to.
        Err(e) if e.sqlstate == SqlState::NUMERIC_VALUE_OUT_OF_RANGE => match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Expr::Literal { value: Datum::Float8(v), data_type: DataType::Float8 }),
            _ => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// The right side of `op ANY | ALL (array)`.
enum ArrayOperand {
    Null,
    Elements(Vec<Expr>),
    Value(Expr),
}

/// A type name in SQL → weft's type (its modifier dropped: see [`sql_type_modified`]).
pub fn sql_type(data_type: &ast::DataType) -> Result<DataType> {
    Ok(sql_type_modified(data_type)?.0)
}

/// A type name in SQL → weft's stored type and the modifier the name adds to it
/// (`numeric(6,2)`, `varchar(3)`, `char` = `char(1)`, `smallint`), checked as PostgreSQL's
/// `typmodin` functions check them.
pub fn sql_type_modified(data_type: &ast::DataType) -> Result<(DataType, Option<TypeModifier>)> {
    use ast::DataType as T;
    let no_modifier = |name: &str| {
        Err(Error::syntax(format!("type modifier is not allowed for type \"{name}\"")))
    };
    let modified = |modifier: TypeModifier| Ok((modifier.storage_type(), Some(modifier)));
    match data_type {
        T::Int(Some(_)) | T::Integer(Some(_)) | T::Int4(Some(_)) => no_modifier("int4"),
        T::SmallInt(Some(_)) | T::Int2(Some(_)) => no_modifier("int2"),
        T::BigInt(Some(_)) | T::Int8(Some(_)) => no_modifier("int8"),
        T::Int(_) | T::Integer(_) | T::Int4(_) => Ok((DataType::Int4, None)),
        T::SmallInt(_) | T::Int2(_) => modified(TypeModifier::SmallInt),
        T::BigInt(_) | T::Int8(_) => Ok((DataType::Int8, None)),
        T::Float8 | T::DoublePrecision | T::Double(_) | T::Float(_) | T::Real | T::Float4 => Ok((DataType::Float8, None)),
        T::Numeric(info) | T::Decimal(info) | T::Dec(info) => match info {
            ast::ExactNumberInfo::None => Ok((DataType::Numeric, None)),
            ast::ExactNumberInfo::Precision(p) => modified(TypeModifier::numeric(clamp_i64(*p), 0)?),
            ast::ExactNumberInfo::PrecisionAndScale(p, s) => modified(TypeModifier::numeric(clamp_i64(*p), *s)?),
        },
        T::Varchar(length) | T::CharacterVarying(length) => {
            modified(TypeModifier::Varchar { max_chars: character_length(length.as_ref(), "varchar")? })
        }
        // `char` alone is `char(1)`, as in PostgreSQL.
        T::Char(length) | T::Character(length) => {
            modified(TypeModifier::Char { max_chars: Some(character_length(length.as_ref(), "char")?.unwrap_or(1)) })
        }
        T::Text => Ok((DataType::Text, None)),
        T::String(Some(_)) => no_modifier("text"),
        T::String(None) => Ok((DataType::Text, None)),
        T::Boolean | T::Bool => Ok((DataType::Bool, None)),
        T::Date | T::Timestamp(..) | T::Time(..) | T::Interval { .. } => crate::datetime_bind::sql_type(data_type),
        T::Custom(name, modifiers) => {
            // Built-in types are also named with their schema (`pg_catalog.text`).
            let name = function_name(name)?;
            let data_type = DataType::from_sql_name(&name)?;
            match (name.to_ascii_lowercase().as_str(), modifiers.as_slice()) {
                ("bpchar", []) => modified(TypeModifier::Char { max_chars: None }),
                ("bpchar", [length]) => {
                    let length = length.trim().parse::<i64>().map_err(|_| Error::syntax("syntax error at or near \")\""))?;
                    modified(TypeModifier::Char { max_chars: Some(TypeModifier::char_length(length, "char")?) })
                }
                ("int2", []) => modified(TypeModifier::SmallInt),
                (_, []) => Ok((data_type, None)),
                (other, _) => no_modifier(other),
            }
        }
        T::Array(definition) => {
            let element = match definition {
                ast::ArrayElemTypeDef::SquareBracket(t, _) | ast::ArrayElemTypeDef::AngleBracket(t) | ast::ArrayElemTypeDef::Parenthesis(t) => t,
                _ => {
                    return Err(Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{data_type}\" does not exist")))
                }
            };
            // The element's modifier (`varchar(3)[]`) is dropped: arrays carry none.
            let element = sql_type(element)?;
            let array = element.array_of().ok_or_else(|| Error::not_supported("arrays of arrays are not supported"))?;
            Ok((array, None))
        }
        other => Err(Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{other}\" does not exist"))),
    }
}

fn clamp_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The length of `varchar(n)` / `char(n)`, if written.
fn character_length(length: Option<&ast::CharacterLength>, type_name: &str) -> Result<Option<u32>> {
    match length {
        None => Ok(None),
        Some(ast::CharacterLength::IntegerLength { length, .. }) => {
            Ok(Some(TypeModifier::char_length(clamp_i64(*length), type_name)?))
        }
        Some(ast::CharacterLength::Max) => Err(Error::syntax("syntax error at or near \"max\"")),
    }
}

/// The type modifier of a bound expression's value, as PostgreSQL's `exprTypmod` finds it:
/// a cast's, a column's declared one (looked up in `scope`), or the one every branch of a
/// CASE / COALESCE has. Anything else (arithmetic, functions) has none.
pub fn output_modifier(expr: &Expr, scope: &Scope) -> Option<TypeModifier> {
    let common = |mut modifiers: Vec<Option<TypeModifier>>| {
        let first = modifiers.pop().flatten()?;
        modifiers.iter().all(|m| *m == Some(first)).then_some(first)
    };
    match expr {
        Expr::ApplyModifier { modifier, .. } => Some(*modifier),
        Expr::Column { index, data_type } if *index < scope.local_width() => {
            let column = scope.column_at(*index);
            column.type_modifier.filter(|_| column.data_type == *data_type)
        }
        Expr::Case { whens, otherwise, .. } => {
            let mut modifiers: Vec<_> = whens.iter().map(|(_, result)| output_modifier(result, scope)).collect();
            // A missing ELSE is a NULL without a modifier. (PostgreSQL keeps the branch's
            // when the planner folds the CASE away: `CASE WHEN true THEN x END`.)
            modifiers.push(otherwise.as_deref().and_then(|o| output_modifier(o, scope)));
            common(modifiers)
        }
        // A one-argument COALESCE marks an IN list (a boolean), never a column's value.
        Expr::Coalesce { args, .. } if args.len() > 1 => common(args.iter().map(|a| output_modifier(a, scope)).collect()),
        _ => None,
    }
}

/// `expr` converted to a type with a modifier: to its storage type (an explicit cast, or
/// the assignment rules for a column), then the modifier applied. A `smallint` keeps an
/// integer or text input as it is and reads anything else as `int8`, so its range check
/// sees the whole value.
pub fn coerce_to_modifier(expr: Expr, modifier: TypeModifier, coercion: Coercion) -> Result<Expr> {
    let from = expr.data_type();
    let input = match modifier {
        TypeModifier::SmallInt if matches!(from, DataType::Int4 | DataType::Int8 | DataType::Text) => expr,
        TypeModifier::SmallInt if expr.is_null_literal() => ex::coerce(expr, DataType::Int4, true)?,
        TypeModifier::SmallInt => ex::coerce(expr, DataType::Int8, true)?,
        _ => ex::coerce(expr, modifier.storage_type(), true)?,
    };
    Ok(Expr::ApplyModifier { expr: Box::new(input), modifier, coercion })
}

/// The name PostgreSQL gives an output column with no alias.
pub fn column_name(expr: &ast::Expr) -> String {
    column_name_and_strength(expr).0
}

/// PostgreSQL's `FigureColnameInternal`: a name and how sure it is — 2 for a column,
/// function or subquery, 1 for a name made up from the node (`case`, a cast's type), 0 for
/// none (`?column?`). A cast takes its type's name unless its operand has a strong one, so
/// `3.5::float8::numeric(10,2)` is `numeric` and `a::text` is `a`.
fn column_name_and_strength(expr: &ast::Expr) -> (String, u8) {
    use ast::Expr as A;
    match expr {
        A::Identifier(i) => (ident_name(i), 2),
        A::CompoundIdentifier(parts) => match parts.last() {
            Some(last) => (ident_name(last), 2),
            None => ("?column?".into(), 0),
        },
        // PostgreSQL names the column after the function, however it is qualified.
        A::Function(f) => match f.name.0.last().and_then(|p| p.as_ident()) {
            Some(name) => (ident_name(name), 2),
            None => ("?column?".into(), 0),
        },
        A::Cast { expr, data_type, .. } => match column_name_and_strength(expr) {
            (name, 2) => (name, 2),
            _ => (cast_type_name(data_type), 1),
        },
        A::Nested(inner) | A::Collate { expr: inner, .. } => column_name_and_strength(inner),
        A::Case { .. } => ("case".into(), 1),
        A::Array(_) => ("array".into(), 2),
        A::CompoundFieldAccess { root, .. } => column_name_and_strength(root),
        // PostgreSQL names a scalar subquery's column after the subquery's own column.
        A::Subquery(query) => match query.body.as_ref() {
            ast::SetExpr::Select(select) => match select.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(e)) => (column_name(e), 2),
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => (ident_name(alias), 2),
                _ => ("?column?".into(), 2),
            },
            _ => ("?column?".into(), 2),
        },
        A::Exists { negated: false, .. } => ("exists".into(), 2),
        A::TypedString(ts) => (cast_type_name(&ts.data_type), 1),
        A::Interval(_) => ("interval".into(), 1),
        A::Extract { .. } => ("extract".into(), 2),
        A::AtTimeZone { .. } => ("timezone".into(), 2),
        A::Substring { shorthand, .. } => (if *shorthand { "substr" } else { "substring" }.into(), 2),
        _ => ("?column?".into(), 0),
    }
}

/// The last name of a cast's type as PostgreSQL's grammar writes it (`pg_type.typname` for
/// the SQL-standard spellings: `smallint` is `int2`, `varchar(3)` is `varchar`, `real` is
/// `float4`); another name as written.
fn cast_type_name(data_type: &ast::DataType) -> String {
    use ast::DataType as T;
    let name = match data_type {
        T::Int(_) | T::Integer(_) | T::Int4(_) => "int4",
        T::SmallInt(_) | T::Int2(_) => "int2",
        T::BigInt(_) | T::Int8(_) => "int8",
        T::Real | T::Float4 => "float4",
        T::Float(ast::ExactNumberInfo::Precision(p)) if *p <= 24 => "float4",
        T::Float8 | T::DoublePrecision | T::Double(_) | T::Float(_) => "float8",
        T::Numeric(_) | T::Decimal(_) | T::Dec(_) => "numeric",
        T::Varchar(_) | T::CharacterVarying(_) => "varchar",
        T::Char(_) | T::Character(_) => "bpchar",
        T::Text | T::String(_) => "text",
        T::Boolean | T::Bool => "bool",
        T::Custom(name, _) => return object_name(name).unwrap_or_else(|_| "?column?".into()),
        // PostgreSQL names `x::int[]` after the element type (`int4`).
        T::Array(ast::ArrayElemTypeDef::SquareBracket(element, _)) => return cast_type_name(element),
        _ => return sql_type(data_type).map(pg_type_short_name).unwrap_or("?column?").to_string(),
    };
    name.to_string()
}

/// `pg_type.typname` of a type without a modifier.
pub(crate) fn pg_type_short_name(t: DataType) -> &'static str {
    match t {
        DataType::Bool => "bool",
        DataType::Int4 => "int4",
        DataType::Int8 => "int8",
        DataType::Float8 => "float8",
        DataType::Numeric => "numeric",
        DataType::Text => "text",
        DataType::Date => "date",
        DataType::Time => "time",
        DataType::Timestamp => "timestamp",
        DataType::TimestampTz => "timestamptz",
        DataType::Interval => "interval",
        DataType::Array(elem) => {
            use weft_common::types::ElemType as E;
            match elem {
                E::Bool => "_bool",
                E::Int4 => "_int4",
                E::Int8 => "_int8",
                E::Float8 => "_float8",
                E::Numeric => "_numeric",
                E::Text => "_text",
                E::Date => "_date",
                E::Time => "_time",
                E::Timestamp => "_timestamp",
                E::TimestampTz => "_timestamptz",
                E::Interval => "_interval",
            }
        }
    }
}

#[cfg(test)]
mod scalar_subquery_tests {
    use weft_common::SqlState;

    use crate::Database;

    fn session() -> (tempfile::TempDir, crate::Session) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), &[]).unwrap();
        let mut session = db.session();
        for sql in [
            "CREATE TABLE t1 (a int, b text)",
            "INSERT INTO t1 VALUES (1, 'x'), (2, 'y'), (3, NULL)",
            "CREATE TABLE t2 (c int)",
            "INSERT INTO t2 VALUES (10), (20)",
            "SET max_parallel_workers_per_gather = 0",
        ] {
            session.execute(sql).unwrap();
        }
        (dir, session)
    }

    fn lines(session: &mut crate::Session, sql: &str) -> Vec<String> {
        let result = session.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        result.rows.iter().map(|r| r.iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join("|")).collect()
    }

    /// Output column names follow the call as written (PostgreSQL's FigureColname).
    #[test]
    fn substr_and_substring_name_their_columns_as_written() {
        let (_dir, mut s) = session();
        let result = s.execute("SELECT substr(b, 1), substring(b, 1), substring(b FROM 1) FROM t1").unwrap();
        let names: Vec<&str> = result.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["substr", "substring", "substring"]);
    }

    #[test]
    fn aggregates_inside_a_subquery_do_not_make_the_query_an_aggregate() {
        let (_dir, mut s) = session();
        assert_eq!(lines(&mut s, "SELECT a, (SELECT max(c) FROM t2) FROM t1 ORDER BY a"), ["1|20", "2|20", "3|20"]);
        assert_eq!(lines(&mut s, "SELECT b FROM t1 WHERE a = (SELECT min(a) FROM t1)"), ["x"]);
        let result = s.execute("SELECT (SELECT max(c) FROM t2), (SELECT c AS z FROM t2 LIMIT 1)").unwrap();
        assert_eq!(result.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["max", "z"]);
    }

    #[test]
    fn explain_prints_init_plans_without_running_them() {
        let (_dir, mut s) = session();
        // Two rows: running it would fail, EXPLAIN must not.
        let plan = lines(&mut s, "EXPLAIN (COSTS OFF) SELECT a FROM t1 WHERE a = (SELECT c FROM t2)");
        assert_eq!(plan, ["Seq Scan on t1", "  Filter: (a = $0)", "  InitPlan 1 (returns $0)", "    ->  Seq Scan on t2"]);
        let err = s.execute("SELECT a FROM t1 WHERE a = (SELECT c FROM t2)").unwrap_err();
        assert_eq!(err.sqlstate, SqlState::CARDINALITY_VIOLATION);
        let nested = lines(&mut s, "EXPLAIN (COSTS OFF) SELECT (SELECT max(a) + (SELECT min(c) FROM t2) FROM t1)");
        assert_eq!(
            nested,
            [
                "Result",
                "  InitPlan 2 (returns $1)",
                "    ->  Aggregate",
                "          InitPlan 1 (returns $0)",
                "            ->  Aggregate",
                "                  ->  Seq Scan on t2",
                "          ->  Seq Scan on t1",
            ]
        );
    }

    #[test]
    fn errors_are_postgresql_s() {
        let (_dir, mut s) = session();
        let err = s.execute("SELECT (SELECT a, b FROM t1)").unwrap_err();
        assert_eq!((err.sqlstate, err.message.as_str()), (SqlState::SYNTAX_ERROR, "subquery must return only one column"));
        let err = s.execute("SELECT a FROM t1 WHERE a < (SELECT c FROM t2 WHERE c = nosuch)").unwrap_err();
        assert_eq!(err.sqlstate, SqlState::UNDEFINED_COLUMN);
        // Correlated: a subplan, run per row of t1.
        assert_eq!(lines(&mut s, "SELECT a, (SELECT max(c) FROM t2 WHERE c > a * 9) FROM t1 ORDER BY a"), ["1|20", "2|20", "3|"]);
        // LIMIT's subquery runs before the query, as an init plan.
        assert_eq!(lines(&mut s, "SELECT a FROM t1 ORDER BY a LIMIT (SELECT 1)"), ["1"]);
        assert_eq!(lines(&mut s, "SELECT EXISTS (SELECT 1 FROM t2), NOT EXISTS (SELECT 1 FROM t2 WHERE c > 99)"), ["t|t"]);
        let err = s.execute("SELECT a = ANY (SELECT c, c FROM t2) FROM t1").unwrap_err();
        assert_eq!((err.sqlstate, err.message.as_str()), (SqlState::SYNTAX_ERROR, "subquery has too many columns"));
        assert_eq!(lines(&mut s, "SELECT (SELECT c FROM t2 WHERE c > 99) IS NULL"), ["t"]);
    }
}
