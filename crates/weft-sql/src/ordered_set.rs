//! Binding `f(direct...) WITHIN GROUP (ORDER BY ...)`: the ordered-set aggregates
//! `percentile_cont`, `percentile_disc`, `mode` and the hypothetical-set aggregates `rank`,
//! `dense_rank`, `percent_rank`, `cume_dist` (`weft_exec::aggregate::ordered_set`).
//!
//! PostgreSQL resolves such a call as a function of the direct arguments followed by the
//! ordering ones (`percentile_cont(float8 ORDER BY float8)`), so a call that fits no
//! signature is 42883 naming all of them (`function percentile_cont(numeric, text) does not
//! exist`), and one that fits a plain aggregate's is 42809. Its checks, in its order:
//! WITHIN GROUP required or not, OVER (0A000), DISTINCT and a second ORDER BY (42601),
//! nesting (42803), argument types, and — in the aggregate's query — direct arguments
//! that read ungrouped columns (42803 with PostgreSQL's detail).
//!
//! 1. `percentile_cont`'s ordering argument is float8 or interval (integers and numerics
//!    cast to float8); `percentile_disc` and `mode` take any type and return it. The
//!    fraction is float8. An `ARRAY[...]` of fractions is 0A000: weft has no array values.
//! 2. A hypothetical row has as many values as there are ordering columns, and each pair
//!    takes its common type (`WITHIN GROUP types integer and text cannot be matched`).
//! 3. Direct arguments without column references are folded to constants here, so the
//!    executor knows them before any row (a fraction out of range fails over no rows).

use sqlparser::ast;
use weft_common::{DataType, Error, Result, SqlState};
use weft_exec::expr::{EvalContext, Expr};
use weft_exec::plan::{AggregateCall, AggregateFunction, AggregateOrderKey};

use crate::bind::{
    coerce_branch, contains_aggregate, is_unknown_literal, no_aggregate, result_type_ignoring_nulls, AggregateContext,
    Binder,
};

pub(crate) fn within_group_required(name: &str) -> Error {
    Error::new(SqlState::WRONG_OBJECT_TYPE, format!("WITHIN GROUP is required for ordered-set aggregate {name}"))
}

/// A call's plain argument expressions, and whether it has an `ORDER BY` inside them.
pub(crate) fn direct_argument_asts(f: &ast::Function) -> Result<(Vec<&ast::Expr>, bool)> {
    let ast::FunctionArguments::List(list) = &f.args else { return Ok((Vec::new(), false)) };
    let mut args = Vec::with_capacity(list.args.len());
    for arg in &list.args {
        match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(e),
            other => return Err(Error::not_supported(format!("aggregate argument {other}"))),
        }
    }
    let order_by = list.clauses.iter().any(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_)));
    Ok((args, order_by))
}

/// The error for an argument list no signature of the aggregate takes.
fn no_signature(name: &str, direct: &[Expr], keys: &[AggregateOrderKey]) -> Error {
    no_aggregate(name, direct.iter().chain(keys.iter().map(|k| &k.expr)))
}

impl Binder<'_> {
    /// An ordered-set or hypothetical-set call (`window`: it has OVER).
    pub(crate) fn bind_ordered_set_call(
        &mut self,
        function: AggregateFunction,
        f: &ast::Function,
        name: &str,
        list: &ast::FunctionArgumentList,
        window: bool,
    ) -> Result<AggregateCall> {
        let (direct_asts, inner_order_by) = direct_argument_asts(f)?;
        if f.within_group.is_empty() {
            // Looked up with the arguments as written: one that fits the whole signature
            // (direct and ordering arguments) lacks only WITHIN GROUP.
            let fits = match function {
                AggregateFunction::PercentileCont | AggregateFunction::PercentileDisc => direct_asts.len() == 2,
                AggregateFunction::Mode => direct_asts.len() == 1,
                _ => true,
            };
            if fits {
                return Err(within_group_required(name));
            }
            let args = direct_asts.iter().map(|e| self.bind(e)).collect::<Result<Vec<_>>>()?;
            return Err(no_aggregate(name, &args));
        }
        if window {
            return Err(Error::not_supported(format!("OVER is not supported for ordered-set aggregate {name}")));
        }
        if list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct) {
            return Err(Error::syntax("cannot use DISTINCT with WITHIN GROUP"));
        }
        if inner_order_by {
            return Err(Error::syntax("cannot use multiple ORDER BY clauses with WITHIN GROUP"));
        }
        if let Some(other) = list.clauses.iter().find(|c| !matches!(c, ast::FunctionArgumentClause::OrderBy(_))) {
            return Err(Error::not_supported(format!("{other} in an aggregate call")));
        }
        let nested = |e: &ast::Expr| {
            if crate::window::contains_window(e) {
                Err(Error::new(SqlState::GROUPING_ERROR, "aggregate function calls cannot contain window function calls"))
            } else if contains_aggregate(e) {
                Err(Error::new(SqlState::GROUPING_ERROR, "aggregate function calls cannot be nested"))
            } else {
                Ok(())
            }
        };
        let mut direct = Vec::with_capacity(direct_asts.len());
        for e in &direct_asts {
            nested(e)?;
            if matches!(e, ast::Expr::Array(_)) && !function.is_hypothetical() {
                return Err(Error::not_supported(format!("{name} with an array of fractions is not supported")));
            }
            direct.push(self.bind(e)?);
        }
        let mut keys = Vec::with_capacity(f.within_group.len());
        for item in &f.within_group {
            nested(&item.expr)?;
            let (descending, nulls_first) = crate::planner::order_direction(item)?;
            keys.push(AggregateOrderKey { expr: self.bind(&item.expr)?, descending, nulls_first });
        }
        if function.is_hypothetical() {
            unify_hypothetical(name, &mut direct, &mut keys)?;
        } else {
            type_ordered_set(function, name, &mut direct, &mut keys)?;
        }
        let result_type = AggregateCall::result_type_for(function, Some(keys[0].expr.data_type()))
            .ok_or_else(|| no_signature(name, &direct, &keys))?;
        let filter = self.bind_aggregate_filter(f, false)?;
        let direct = direct.into_iter().map(fold_constant).collect();
        let call = AggregateCall {
            function,
            arg: Some(keys[0].expr.clone()),
            arg2: None,
            filter,
            order_by: keys,
            direct,
            distinct: false,
            result_type,
        };
        crate::subplan::check_aggregate_level(&call)?;
        Ok(call)
    }

    /// In the aggregate's query: the direct arguments of `call` (bound over the input
    /// rows) may read group keys only, as PostgreSQL checks them.
    pub(crate) fn check_direct_arguments(&self, call: &AggregateCall, f: &ast::Function) -> Result<()> {
        let mut read = std::collections::BTreeSet::new();
        call.direct.iter().for_each(|d| crate::exprutil::columns_used(d, &mut read));
        if read.is_empty() {
            return Ok(());
        }
        let Some(aggregates) = self.aggregates.as_ref() else { return Ok(()) };
        let mut keys_only = AggregateContext { group_by: aggregates.group_by.clone(), calls: Vec::new(), key_asts: aggregates.key_asts.clone() };
        let mut checker = Binder::with_aggregates(self.scope, &mut keys_only);
        for e in direct_argument_asts(f)?.0 {
            checker.bind(e).map_err(|error| match error.sqlstate {
                SqlState::GROUPING_ERROR => {
                    error.with_detail("Direct arguments of an ordered-set aggregate must use only grouped columns.")
                }
                _ => error,
            })?;
        }
        Ok(())
    }

    /// WITHIN GROUP on an aggregate that is not an ordered-set one: 42809 when the
    /// aggregate takes the direct and ordering arguments together, else 42883.
    pub(crate) fn within_group_of_plain_aggregate(
        &mut self,
        function: AggregateFunction,
        f: &ast::Function,
        name: &str,
        list: &ast::FunctionArgumentList,
    ) -> Error {
        let not_ordered_set = || {
            Error::new(SqlState::WRONG_OBJECT_TYPE, format!("{name} is not an ordered-set aggregate, so it cannot have WITHIN GROUP"))
        };
        let star = list.args.iter().any(|a| matches!(a, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)));
        if star {
            return not_ordered_set();
        }
        let mut args = Vec::new();
        let asts = match direct_argument_asts(f) {
            Ok((asts, _)) => asts,
            Err(e) => return e,
        };
        for e in asts.into_iter().chain(f.within_group.iter().map(|k| &k.expr)) {
            match self.bind(e) {
                Ok(bound) => args.push(bound),
                Err(e) => return e,
            }
        }
        let numeric = |t: DataType| matches!(t, DataType::Int4 | DataType::Int8 | DataType::Numeric | DataType::Float8);
        let fits = args.len() == function.arity()
            && match (function, args.as_slice()) {
                (AggregateFunction::StringAgg, [a, d]) => a.data_type() == DataType::Text && d.data_type() == DataType::Text,
                (f, [y, x]) if f.is_regression() => numeric(y.data_type()) && numeric(x.data_type()),
                (f, [a]) => AggregateCall::result_type_for(f, Some(a.data_type())).is_some(),
                _ => false,
            };
        if fits {
            not_ordered_set()
        } else {
            no_aggregate(name, &args)
        }
    }
}

/// percentile_cont / percentile_disc / mode: one fraction (none for mode) and one key.
fn type_ordered_set(function: AggregateFunction, name: &str, direct: &mut [Expr], keys: &mut [AggregateOrderKey]) -> Result<()> {
    let fractions = usize::from(function != AggregateFunction::Mode);
    if direct.len() != fractions || keys.len() != 1 {
        return Err(no_signature(name, direct, keys));
    }
    let numeric = |e: &Expr| {
        is_unknown_literal(e) || matches!(e.data_type(), DataType::Int4 | DataType::Int8 | DataType::Numeric | DataType::Float8)
    };
    let continuous = function == AggregateFunction::PercentileCont;
    let interval = keys[0].expr.data_type() == DataType::Interval;
    if !direct.iter().all(numeric) || (continuous && !interval && !numeric(&keys[0].expr)) {
        return Err(no_signature(name, direct, keys));
    }
    // PostgreSQL also has array-of-fractions forms: an untyped fraction picks the float8
    // one only when the key is a number (its preferred-type rule); otherwise both fit.
    let number_key = matches!(keys[0].expr.data_type(), DataType::Int4 | DataType::Int8 | DataType::Numeric | DataType::Float8);
    if direct.first().is_some_and(is_unknown_literal) && !number_key {
        let message = no_signature(name, direct, keys).message.replace("does not exist", "is not unique");
        return Err(Error::new(SqlState("42725"), message)
            .with_hint("Could not choose a best candidate function. You might need to add explicit type casts."));
    }
    if let Some(fraction) = direct.first_mut() {
        *fraction = coerce_branch(fraction.clone(), DataType::Float8)?;
    }
    if continuous && !interval {
        keys[0].expr = coerce_branch(keys[0].expr.clone(), DataType::Float8)?;
    }
    Ok(())
}

/// A hypothetical row's values and the ordering columns, pairwise of one type.
fn unify_hypothetical(name: &str, direct: &mut [Expr], keys: &mut [AggregateOrderKey]) -> Result<()> {
    if direct.len() != keys.len() {
        return Err(no_signature(name, direct, keys).with_hint(format!(
            "To use the hypothetical-set aggregate {name}, the number of hypothetical direct arguments (here {}) must match the number of ordering columns (here {}).",
            direct.len(),
            keys.len()
        )));
    }
    for (value, key) in direct.iter_mut().zip(keys.iter_mut()) {
        let common = result_type_ignoring_nulls(&[&key.expr, &*value], "WITHIN GROUP")?;
        key.expr = coerce_branch(key.expr.clone(), common)?;
        *value = coerce_branch(value.clone(), common)?;
    }
    Ok(())
}

/// A direct argument that reads nothing of the row, as the constant it evaluates to.
fn fold_constant(expr: Expr) -> Expr {
    if matches!(expr, Expr::Literal { .. }) || !crate::deparse::is_constant(&expr) {
        return expr;
    }
    // Folding never calls a volatile function, so a throwaway context will do; an
    // error (22003 of an overflowing constant) is left for execution to raise.
    match expr.eval(&[], &EvalContext::with_seed(0)) {
        Ok(value) => Expr::Literal { value, data_type: expr.data_type() },
        Err(_) => expr,
    }
}
