//! Window functions in SELECT: binding `f(...) OVER (...)` and planning `WindowAgg`
//! nodes.
//!
//! # Binding
//!
//! The select list (and ORDER BY items it does not repeat) is bound with a
//! [`WindowContext`]: a window call's arguments, PARTITION BY and ORDER BY are bound like
//! any expression of the query level (so in a grouped query they may read group keys and
//! aggregates), the call is recorded, and the expression gets a placeholder column
//! (`PLACEHOLDER_BASE + k`) where its value will be. Named windows (`WINDOW w AS (...)`,
//! `OVER w`, `OVER (w ORDER BY ...)`) are resolved as PostgreSQL's `transformWindowDefinitions`
//! does, with its errors.
//!
//! # Planning
//!
//! ```text
//!   Project(final outputs)            ← placeholders → the function columns
//!   WindowAgg (window 2)
//!     Sort (partition 2, order 2)     ← left out when the rows are already in that order
//!       WindowAgg (window 1)
//!         Sort (partition 1, order 1)
//!           input projected to P = [columns the outputs read] ++ [window inputs]
//! ```
//!
//! The query's ordinary plan (a pipeline, or an aggregate's output steps) projects `P`
//! instead of the select list: the input columns the outputs read, then every window
//! argument, partition and ordering expression (each once). Calls with the same
//! partitioning, ordering and frame share one node, as in PostgreSQL; each node appends
//! its functions' values; the topmost applies the select list.

use std::collections::BTreeMap;

use sqlparser::ast;
use weft_common::{DataType, Error, Result, SqlState};
use weft_exec::expr::{self as ex, Expr};
use weft_exec::plan::{AggregateCall, FrameBound, FrameUnits, Plan, SortKey, SortPlan, Step, WindowCall, WindowFrame, WindowFunction, WindowPlan};

use crate::bind::{aggregate_function, ident_name, object_name, Binder};
use crate::exprutil::{columns_used, remap_columns};

/// Placeholder columns of window values start here (far above any real column).
const PLACEHOLDER_BASE: usize = 1 << 40;

fn windowing_error(message: impl Into<String>) -> Error {
    Error::new(SqlState("42P20"), message)
}

/// The names of PostgreSQL's built-in window functions (aggregates are window functions too).
pub fn is_window_function(name: &str) -> bool {
    window_function(name).is_some()
}

fn window_function(name: &str) -> Option<WindowFunction> {
    Some(match name {
        "row_number" => WindowFunction::RowNumber,
        "rank" => WindowFunction::Rank,
        "dense_rank" => WindowFunction::DenseRank,
        "percent_rank" => WindowFunction::PercentRank,
        "cume_dist" => WindowFunction::CumeDist,
        "ntile" => WindowFunction::Ntile,
        "lag" => WindowFunction::Lag,
        "lead" => WindowFunction::Lead,
        "first_value" => WindowFunction::FirstValue,
        "last_value" => WindowFunction::LastValue,
        "nth_value" => WindowFunction::NthValue,
        _ => return None,
    })
}

/// Does this AST contain a window function call (outside subqueries)?
pub fn contains_window(expr: &ast::Expr) -> bool {
    crate::bind::contains_call(expr, |f| f.over.is_some())
}

/// A window's definition after named windows are resolved.
#[derive(Clone, Debug, Default)]
struct WindowDefinition {
    partition_by: Vec<ast::Expr>,
    order_by: Vec<ast::OrderByExpr>,
    frame: Option<ast::WindowFrame>,
}

/// One bound window call: its function and its window, all over the query level's row.
#[derive(Clone, Debug)]
struct BoundCall {
    call: WindowCall,
    partition_by: Vec<Expr>,
    /// (expression, descending, nulls first).
    order_by: Vec<(Expr, bool, bool)>,
    frame: WindowFrame,
}

/// The window calls of one SELECT level and its named windows.
#[derive(Debug, Default)]
pub struct WindowContext {
    named: Vec<(String, WindowDefinition)>,
    calls: Vec<BoundCall>,
}

impl WindowContext {
    /// The context of a SELECT with these `WINDOW` definitions.
    pub fn new(definitions: &[ast::NamedWindowDefinition]) -> Result<WindowContext> {
        let mut context = WindowContext::default();
        for ast::NamedWindowDefinition(name, expr) in definitions {
            let name = ident_name(name);
            if context.named.iter().any(|(n, _)| *n == name) {
                return Err(windowing_error(format!("window \"{name}\" is already defined")));
            }
            let definition = match expr {
                ast::NamedWindowExpr::NamedWindow(other) => context.lookup(&ident_name(other))?.clone(),
                ast::NamedWindowExpr::WindowSpec(spec) => context.resolve_spec(spec)?,
            };
            context.named.push((name, definition));
        }
        Ok(context)
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    fn lookup(&self, name: &str) -> Result<&WindowDefinition> {
        self.named
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d)
            .ok_or_else(|| Error::new(SqlState::UNDEFINED_OBJECT, format!("window \"{name}\" does not exist")))
    }

    /// `(w ORDER BY ...)`: copy `w`'s partitioning and ordering, PostgreSQL's rules.
    fn resolve_spec(&self, spec: &ast::WindowSpec) -> Result<WindowDefinition> {
        let own = WindowDefinition { partition_by: spec.partition_by.clone(), order_by: spec.order_by.clone(), frame: spec.window_frame.clone() };
        let Some(base_name) = &spec.window_name else { return Ok(own) };
        let base_name = ident_name(base_name);
        let base = self.lookup(&base_name)?;
        if !own.partition_by.is_empty() {
            return Err(windowing_error(format!("cannot override PARTITION BY clause of window \"{base_name}\"")));
        }
        if !own.order_by.is_empty() && !base.order_by.is_empty() {
            return Err(windowing_error(format!("cannot override ORDER BY clause of window \"{base_name}\"")));
        }
        if base.frame.is_some() {
            return Err(windowing_error(format!("cannot copy window \"{base_name}\" because it has a frame clause"))
                .with_hint("Omit the parentheses in this OVER clause."));
        }
        let order_by = if own.order_by.is_empty() { base.order_by.clone() } else { own.order_by };
        Ok(WindowDefinition { partition_by: base.partition_by.clone(), order_by, frame: own.frame })
    }
}

/// Bind `f(...) OVER ...` (see the module comment): the placeholder of its value.
pub(crate) fn bind_window_call(binder: &mut Binder, f: &ast::Function) -> Result<Expr> {
    let Some(windows) = binder.windows.take() else {
        return Err(windowing_error("window functions are not allowed here"));
    };
    // Arguments and the window are bound without the context: a window call inside them is nested.
    // Set-returning calls run above the windows, so none may be inside.
    let srfs = binder.srfs.take();
    let bound = bind_call(binder, f, windows);
    binder.srfs = srfs;
    let index = PLACEHOLDER_BASE + windows.calls.len();
    let outcome = bound.map(|call| {
        let data_type = call.call.result_type;
        windows.calls.push(call);
        Expr::Column { index, data_type }
    });
    binder.windows = Some(windows);
    outcome
}

fn bind_call(binder: &mut Binder, f: &ast::Function, windows: &WindowContext) -> Result<BoundCall> {
    let name = object_name(&f.name)?;
    // WITHIN GROUP, or an ordered-set aggregate: PostgreSQL's errors, OVER's last.
    if let Some(function) = crate::bind::aggregate_of_call(f).filter(|a| a.is_ordered_set() || !f.within_group.is_empty()) {
        binder.bind_aggregate_call(function, f, true)?;
        return Err(Error::internal(format!("{name} bound as a window aggregate")));
    }
    let list = match &f.args {
        ast::FunctionArguments::List(list) => Some(list),
        ast::FunctionArguments::None => None,
        ast::FunctionArguments::Subquery(_) => return Err(Error::not_supported("subquery as function argument")),
    };
    let arg_asts: Vec<&ast::Expr> = list.map_or(Vec::new(), |l| l.args.iter().filter_map(|a| match a {
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
        _ => None,
    }).collect());
    if arg_asts.iter().copied().chain(f.filter.as_deref()).any(contains_window) {
        return Err(windowing_error("window function calls cannot be nested"));
    }
    if arg_asts.iter().copied().any(crate::srf::contains_srf) {
        return Err(Error::new(SqlState::FEATURE_NOT_SUPPORTED, "window function calls cannot contain set-returning function calls")
            .with_hint(crate::srf::LATERAL_HINT));
    }
    if list.is_some_and(|l| l.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct)) {
        return Err(Error::not_supported("DISTINCT is not implemented for window functions"));
    }
    if list.is_some_and(|l| l.clauses.iter().any(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_)))) {
        return Err(Error::not_supported("aggregate ORDER BY is not implemented for window functions"));
    }
    if f.null_treatment.is_some() || list.is_some_and(|l| !l.clauses.is_empty()) {
        return Err(Error::not_supported(format!("this form of window function call ({name}) is not supported")));
    }
    if name == "array_agg" {
        return Err(Error::not_supported("array_agg as a window function is not supported"));
    }
    let call = if let Some(function) = aggregate_function(&name) {
        let aggregate = binder.bind_aggregate_call(function, f, true)?;
        let result_type = aggregate.result_type;
        WindowCall { function: WindowFunction::Aggregate(aggregate), args: Vec::new(), result_type }
    } else if let Some(function) = window_function(&name) {
        if f.filter.is_some() {
            return Err(Error::not_supported("FILTER is not implemented for non-aggregate window functions"));
        }
        let ranking = matches!(function, WindowFunction::Rank | WindowFunction::DenseRank | WindowFunction::PercentRank | WindowFunction::CumeDist);
        if ranking && !arg_asts.is_empty() {
            // With arguments these name PostgreSQL's hypothetical-set aggregates.
            return Err(Error::new(SqlState::WRONG_OBJECT_TYPE, format!("WITHIN GROUP is required for ordered-set aggregate {name}")));
        }
        if list.is_some_and(|l| l.args.len() != arg_asts.len()) {
            return Err(Error::not_supported(format!("argument form of {name}")));
        }
        let args = arg_asts.iter().map(|e| binder.bind(e)).collect::<Result<Vec<_>>>()?;
        typed_call(&name, function, args)?
    } else {
        return Err(Error::new(
            SqlState::WRONG_OBJECT_TYPE,
            format!("OVER specified, but {name} is not a window function nor an aggregate function"),
        ));
    };
    let definition = match f.over.as_ref() {
        Some(ast::WindowType::NamedWindow(w)) => windows.lookup(&ident_name(w))?.clone(),
        Some(ast::WindowType::WindowSpec(spec)) => windows.resolve_spec(spec)?,
        None => return Err(Error::internal("window call without OVER")),
    };
    bind_window(binder, call, &definition)
}

/// Coerce the arguments of a built-in window function to its signature; its result type.
fn typed_call(name: &str, function: WindowFunction, mut args: Vec<Expr>) -> Result<WindowCall> {
    let to_int4 = |e: Expr| -> Result<Expr> {
        if crate::bind::is_unknown_literal(&e) {
            crate::bind::coerce_branch(e, DataType::Int4)
        } else {
            Ok(e)
        }
    };
    match function {
        WindowFunction::Ntile => args = args.into_iter().map(to_int4).collect::<Result<_>>()?,
        WindowFunction::Lag | WindowFunction::Lead | WindowFunction::NthValue if args.len() >= 2 => {
            args[1] = to_int4(args[1].clone())?;
        }
        _ => {}
    }
    // lag/lead(value, offset, default): value and default take their common type
    // (PostgreSQL's `anycompatible`).
    if matches!(function, WindowFunction::Lag | WindowFunction::Lead) && args.len() == 3 {
        let common = crate::bind::result_type_ignoring_nulls(&[&args[0], &args[2]], name)?;
        args[0] = crate::bind::coerce_branch(args[0].clone(), common)?;
        args[2] = crate::bind::coerce_branch(args[2].clone(), common)?;
    }
    let types: Vec<DataType> = args.iter().map(|a| a.data_type()).collect();
    let result_type = weft_exec::window_result_type(&function, &types).ok_or_else(|| crate::bind::no_aggregate(name, &args))?;
    Ok(WindowCall { function, args, result_type })
}

/// Bind the window of a call: its partitioning, ordering and frame.
fn bind_window(binder: &mut Binder, call: WindowCall, definition: &WindowDefinition) -> Result<BoundCall> {
    let in_definition = |e: &ast::Expr| {
        if contains_window(e) {
            Err(windowing_error("window functions are not allowed in window definitions"))
        } else {
            Ok(())
        }
    };
    let mut partition_by = Vec::with_capacity(definition.partition_by.len());
    for e in &definition.partition_by {
        in_definition(e)?;
        partition_by.push(binder.bind(e)?);
    }
    let mut order_by = Vec::with_capacity(definition.order_by.len());
    for item in &definition.order_by {
        in_definition(&item.expr)?;
        let (descending, nulls_first) = crate::planner::order_direction(item)?;
        order_by.push((binder.bind(&item.expr)?, descending, nulls_first));
    }
    let frame = match &definition.frame {
        None => WindowFrame::default_frame(),
        Some(frame) => bind_frame(binder, frame, &order_by)?,
    };
    Ok(BoundCall { call, partition_by, order_by, frame })
}

/// A frame clause: PostgreSQL's grammar checks, then the offsets (constants, typed for
/// the units and, for RANGE, the ordering column).
fn bind_frame(binder: &Binder, frame: &ast::WindowFrame, order_by: &[(Expr, bool, bool)]) -> Result<WindowFrame> {
    use ast::WindowFrameBound as B;
    let end = frame.end_bound.clone();
    match (&frame.start_bound, &end) {
        (B::Following(None), _) => return Err(windowing_error("frame start cannot be UNBOUNDED FOLLOWING")),
        (B::Following(Some(_)), None) => {
            return Err(windowing_error("frame starting from following row cannot end with current row"))
        }
        (_, Some(B::Preceding(None))) => return Err(windowing_error("frame end cannot be UNBOUNDED PRECEDING")),
        (B::CurrentRow, Some(B::Preceding(Some(_)))) => {
            return Err(windowing_error("frame starting from current row cannot have preceding rows"))
        }
        (B::Following(Some(_)), Some(B::Preceding(Some(_)) | B::CurrentRow)) => {
            return Err(windowing_error("frame starting from following row cannot have preceding rows"))
        }
        _ => {}
    }
    let units = match frame.units {
        ast::WindowFrameUnits::Rows => FrameUnits::Rows,
        ast::WindowFrameUnits::Range => FrameUnits::Range,
        ast::WindowFrameUnits::Groups => FrameUnits::Groups,
    };
    let has_offset = |b: &B| matches!(b, B::Preceding(Some(_)) | B::Following(Some(_)));
    let any_offset = has_offset(&frame.start_bound) || end.as_ref().is_some_and(has_offset);
    if units == FrameUnits::Range && any_offset && order_by.len() != 1 {
        return Err(windowing_error("RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column"));
    }
    if units == FrameUnits::Groups && order_by.is_empty() {
        return Err(windowing_error("GROUPS mode requires an ORDER BY clause"));
    }
    let range_type = order_by.first().map(|(e, _, _)| e.data_type());
    let bound = |b: &B| -> Result<FrameBound> {
        Ok(match b {
            B::CurrentRow => FrameBound::CurrentRow,
            B::Preceding(None) => FrameBound::UnboundedPreceding,
            B::Following(None) => FrameBound::UnboundedFollowing,
            B::Preceding(Some(e)) => FrameBound::Preceding(frame_offset(binder, e, frame.units, range_type)?),
            B::Following(Some(e)) => FrameBound::Following(frame_offset(binder, e, frame.units, range_type)?),
        })
    };
    let start = bound(&frame.start_bound)?;
    let end = match &end {
        Some(b) => bound(b)?,
        None => FrameBound::CurrentRow,
    };
    Ok(WindowFrame { units, start, end })
}

/// One frame offset: no column, no window function; bigint for ROWS and GROUPS; for
/// RANGE a type PostgreSQL has an `in_range` function for with the ordering column's.
fn frame_offset(binder: &Binder, e: &ast::Expr, units: ast::WindowFrameUnits, range_type: Option<DataType>) -> Result<Expr> {
    // The SQL parser reads a quoted offset (`'1' PRECEDING`) as an interval literal;
    // weft has no intervals, so it is the quoted literal it was written as.
    let e = match e {
        ast::Expr::Interval(interval)
            if interval.leading_field.is_none() && interval.last_field.is_none() && matches!(interval.value.as_ref(), ast::Expr::Value(_)) =>
        {
            interval.value.as_ref()
        }
        other => other,
    };
    let mut plain = Binder::new(binder.scope);
    let bound = plain.bind(e)?;
    let mut read = std::collections::BTreeSet::new();
    columns_used(&bound, &mut read);
    if !read.is_empty() {
        return Err(Error::new(SqlState::INVALID_COLUMN_REFERENCE, format!("argument of {units} must not contain variables")));
    }
    let unknown = crate::bind::is_unknown_literal(&bound);
    let offset_type = bound.data_type();
    let to = match (units, range_type) {
        (ast::WindowFrameUnits::Range, Some(column)) => {
            use DataType::*;
            let allowed = match column {
                Int4 => matches!(offset_type, Int4 | Int8).then_some(offset_type),
                Int8 => matches!(offset_type, Int4 | Int8).then_some(Int8),
                Float8 => matches!(offset_type, Int4 | Int8 | Numeric | Float8).then_some(Float8),
                Numeric => matches!(offset_type, Int4 | Int8 | Numeric).then_some(Numeric),
                Bool | Text | Date | Time | Timestamp | TimestampTz | Interval | Array(_) => {
                    return Err(Error::not_supported(format!(
                        "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {}",
                        column.name()
                    )))
                }
            };
            match (allowed, unknown) {
                (_, true) => column,
                (Some(to), false) => to,
                (None, false) => {
                    return Err(Error::not_supported(format!(
                        "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} and offset type {}",
                        column.name(),
                        offset_type.name()
                    ))
                    .with_hint("Cast the offset value to an appropriate type."))
                }
            }
        }
        _ => {
            // An assignment cast, as PostgreSQL's `coerce_to_specific_type`: numeric rounds.
            if !unknown && !matches!(offset_type, DataType::Int4 | DataType::Int8 | DataType::Numeric | DataType::Float8) {
                return Err(Error::new(
                    SqlState::DATATYPE_MISMATCH,
                    format!("argument of {units} must be type bigint, not type {}", offset_type.name()),
                ));
            }
            DataType::Int8
        }
    };
    if bound.data_type() == to && !unknown {
        return Ok(bound);
    }
    let rounded = matches!(offset_type, DataType::Numeric | DataType::Float8) && to == DataType::Int8;
    ex::coerce(bound, to, unknown || rounded)
}

/// Plan the windows of a query level over `input`, whose rows are the level's rows
/// (scope row, or an aggregate's keys and values): returns the pre-window projection `P`
/// the input must produce instead of the outputs, and a function that puts the window
/// nodes and the final `outputs` on top of the input's plan.
pub(crate) fn pre_window_projection(outputs: Vec<Expr>, windows: WindowContext) -> (Vec<Expr>, PendingWindows) {
    let mut pre: Vec<Expr> = Vec::new();
    let mut intern = |e: Expr| -> usize {
        match pre.iter().position(|p| *p == e) {
            Some(i) => i,
            None => {
                pre.push(e);
                pre.len() - 1
            }
        }
    };
    // Input columns the outputs read, in column order.
    let mut read = std::collections::BTreeSet::new();
    outputs.iter().for_each(|e| columns_used(e, &mut read));
    let mut map: BTreeMap<usize, usize> = BTreeMap::new();
    let mut types: BTreeMap<usize, DataType> = BTreeMap::new();
    outputs.iter().for_each(|e| crate::exprutil::walk(e, &mut |x| {
        if let Expr::Column { index, data_type } = x {
            types.insert(*index, *data_type);
        }
    }));
    for &c in read.iter().filter(|&&c| c < PLACEHOLDER_BASE) {
        let data_type = types[&c];
        map.insert(c, intern(Expr::Column { index: c, data_type }));
    }
    // Window inputs: each non-constant expression becomes a column of P.
    let mut column_of = |e: Expr| -> Expr {
        if matches!(e, Expr::Literal { .. }) {
            return e;
        }
        let data_type = e.data_type();
        Expr::Column { index: intern(e), data_type }
    };
    let mut nodes: Vec<PendingNode> = Vec::new();
    for (k, bound) in windows.calls.into_iter().enumerate() {
        let BoundCall { mut call, partition_by, order_by, frame } = bound;
        call.args = call.args.into_iter().map(&mut column_of).collect();
        if let WindowFunction::Aggregate(aggregate) = &mut call.function {
            let AggregateCall { arg, arg2, filter, .. } = aggregate;
            for slot in [arg, arg2, filter] {
                *slot = slot.take().map(&mut column_of);
            }
        }
        let mut column = |e: Expr| match column_of(e) {
            Expr::Column { index, .. } => Some(index),
            _ => None, // a constant key orders nothing
        };
        let partition: Vec<usize> = partition_by.into_iter().filter_map(&mut column).collect();
        let order: Vec<SortKey> = order_by
            .into_iter()
            .filter_map(|(e, descending, nulls_first)| column(e).map(|column| SortKey { column, descending, nulls_first }))
            .collect();
        match nodes.iter_mut().find(|n| n.partition == partition && n.order == order && n.frame == frame) {
            Some(node) => node.calls.push((PLACEHOLDER_BASE + k, call)),
            None => nodes.push(PendingNode { partition, order, frame, calls: vec![(PLACEHOLDER_BASE + k, call)] }),
        }
    }
    let types = pre.iter().map(Expr::data_type).collect();
    (pre, PendingWindows { outputs, map, nodes, types })
}

/// One WindowAgg to build: keys are columns of `P`.
struct PendingNode {
    partition: Vec<usize>,
    order: Vec<SortKey>,
    frame: WindowFrame,
    /// (placeholder, call).
    calls: Vec<(usize, WindowCall)>,
}

/// The window nodes and final projection still to put over the input (see
/// [`pre_window_projection`]).
pub(crate) struct PendingWindows {
    outputs: Vec<Expr>,
    /// Input column or placeholder → column of the rows the final projection reads.
    map: BTreeMap<usize, usize>,
    nodes: Vec<PendingNode>,
    /// Types of `P`'s columns.
    types: Vec<DataType>,
}

impl PendingWindows {
    /// The window nodes over `input` (which produces `P`), the select list on top.
    pub(crate) fn plan(self, input: Plan) -> Plan {
        let PendingWindows { mut outputs, mut map, mut nodes, mut types } = self;
        // As PostgreSQL's `select_active_windows`: windows with more sort keys first, so
        // one whose keys are a prefix of the previous one's needs no sort of its own, and
        // a window without keys runs last, over rows in any order.
        nodes.sort_by_key(|n| std::cmp::Reverse(n.partition.len() + n.order.len()));
        let mut plan = input;
        // The order the rows are in: the last sort's keys.
        let mut ordered_by: Vec<SortKey> = Vec::new();
        let count = nodes.len();
        for (n, node) in nodes.into_iter().enumerate() {
            let mut keys: Vec<SortKey> = node.partition.iter().map(|&column| SortKey { column, descending: false, nulls_first: false }).collect();
            keys.extend(node.order.iter().copied());
            let sorted = keys.len() <= ordered_by.len() && ordered_by[..keys.len()] == keys[..];
            if !sorted {
                let width = types.len();
                plan = Plan::Sort(SortPlan { input: Box::new(plan), keys: keys.clone(), types: types.clone(), bound: None, output_width: width, read_outputs: None });
                ordered_by = keys;
            }
            let input_width = types.len();
            let mut functions = Vec::with_capacity(node.calls.len());
            for (placeholder, call) in node.calls {
                map.insert(placeholder, types.len());
                types.push(call.result_type);
                functions.push(call);
            }
            let output = if n + 1 == count {
                outputs.iter_mut().for_each(|e| remap_columns(e, &map));
                vec![Step::Project(std::mem::take(&mut outputs))]
            } else {
                Vec::new()
            };
            plan = Plan::Window(WindowPlan {
                input: Box::new(plan),
                partition_by: node.partition,
                order_by: node.order,
                frame: node.frame,
                functions,
                output,
                input_width,
            });
        }
        plan
    }
}
