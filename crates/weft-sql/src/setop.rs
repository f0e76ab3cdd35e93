//! Planning `UNION [ALL]`, `INTERSECT [ALL]` and `EXCEPT [ALL]` (PostgreSQL's
//! `transformSetOperationTree`): both sides have as many columns; each output column
//! takes the common type of its inputs (`select_common_type` over weft's types: the
//! numeric family widens along `int4 → int8 → numeric → float8`, anything else must
//! match exactly) and its name from the leftmost query. `UNION ALL` chains become one
//! append; `UNION` is the distinct rows of the append; INTERSECT and EXCEPT count rows
//! on both sides (`weft_exec::plan::SetOpPlan`). INTERSECT binds tighter than UNION and
//! EXCEPT, which the parser already encodes in the tree.

use sqlparser::ast::{self, SetExpr, SetQuantifier};
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_exec::expr::{self as ex, Expr};
use weft_exec::plan::{Pipeline, Plan, ScanLabel, SetOpPlan, SetOperator, Source, Step};

use crate::api::ColumnInfo;
use crate::planner::{distinct_rows, plan_body, PlanContext, PlannedQuery};

pub fn plan_set_operation(
    op: &ast::SetOperator,
    quantifier: &SetQuantifier,
    left: &SetExpr,
    right: &SetExpr,
    ctx: &PlanContext,
) -> Result<PlannedQuery> {
    let (name, operator) = match op {
        ast::SetOperator::Union => ("UNION", SetOperator::Append),
        ast::SetOperator::Intersect => ("INTERSECT", SetOperator::Intersect),
        ast::SetOperator::Except | ast::SetOperator::Minus => ("EXCEPT", SetOperator::Except),
    };
    let all = match quantifier {
        SetQuantifier::All => true,
        SetQuantifier::Distinct | SetQuantifier::None => false,
        _ => return Err(Error::not_supported(format!("{name} BY NAME is not supported"))),
    };
    let left = plan_body(left, &[], ctx)?;
    let right = plan_body(right, &[], ctx)?;
    if left.columns.len() != right.columns.len() {
        return Err(Error::new(SqlState::SYNTAX_ERROR, format!("each {name} query must have the same number of columns")));
    }
    // A quoted literal output by a plain SELECT is PostgreSQL's unknown type: it takes the
    // other side's type (`SELECT f UNION SELECT 'NaN'` is float8).
    let (left_unknown, right_unknown) = (unknown_columns(&left), unknown_columns(&right));
    let mut types = Vec::with_capacity(left.columns.len());
    for (i, (l, r)) in left.columns.iter().zip(&right.columns).enumerate() {
        let typed: Vec<DataType> = [(l.data_type, left_unknown[i]), (r.data_type, right_unknown[i])]
            .into_iter()
            .filter(|&(_, unknown)| !unknown)
            .map(|(t, _)| t)
            .collect();
        types.push(ex::common_type(&typed, name)?);
    }
    let columns: Vec<ColumnInfo> =
        left
        .columns
        .iter()
        .zip(&right.columns)
        .zip(&types)
        .map(|((l, r), &data_type)| {
            // PostgreSQL keeps a modifier every input has (`select_common_typmod`).
            let type_modifier = l.type_modifier.filter(|m| r.type_modifier == Some(*m) && data_type == l.data_type);
            ColumnInfo { name: l.name.clone(), data_type, type_modifier }
        })
        .collect();
    let left_plan = cast_to(left, &types, &left_unknown)?;
    let right_plan = cast_to(right, &types, &right_unknown)?;
    let plan = match operator {
        SetOperator::Append => {
            // Flatten `a UNION ALL b UNION ALL c` into one append.
            let mut inputs = Vec::new();
            for input in [left_plan, right_plan] {
                match input {
                    Plan::SetOp(SetOpPlan { op: SetOperator::Append, inputs: nested, .. }) => inputs.extend(nested),
                    other => inputs.push(other),
                }
            }
            Plan::SetOp(SetOpPlan { op: SetOperator::Append, all: true, inputs })
        }
        other => Plan::SetOp(SetOpPlan { op: other, all, inputs: vec![left_plan, right_plan] }),
    };
    let planned = PlannedQuery { plan, columns, hidden: Vec::new(), hidden_types: Vec::new(), select_items: Vec::new() };
    Ok(if operator == SetOperator::Append && !all { distinct_rows(planned) } else { planned })
}

/// Which output columns of `planned` are quoted literals or untyped NULLs of a plain
/// SELECT's select list.
pub(crate) fn unknown_columns(planned: &PlannedQuery) -> Vec<bool> {
    let projected = match &planned.plan {
        Plan::Pipeline(Pipeline { steps, .. }) if !planned.select_items.is_empty() => match steps.last() {
            Some(Step::Project(exprs)) => Some(exprs),
            _ => None,
        },
        _ => None,
    };
    (0..planned.columns.len())
        .map(|i| {
            // An untyped NULL is unknown too: `SELECT a FROM t UNION ALL SELECT NULL` is int4.
            projected
                .and_then(|exprs| exprs.get(i))
                .is_some_and(|e| matches!(e, Expr::Literal { value: Datum::Text(_) | Datum::Null, .. }))
        })
        .collect()
}

/// `planned`'s plan, with its columns cast to `types` where they differ; an `unknown`
/// column is read by the type's input function, as a quoted literal is.
pub(crate) fn cast_to(planned: PlannedQuery, types: &[DataType], unknown: &[bool]) -> Result<Plan> {
    if planned.columns.iter().zip(types).all(|(c, &t)| c.data_type == t) {
        return Ok(planned.plan);
    }
    let mut exprs = Vec::with_capacity(types.len());
    for (index, (c, &t)) in planned.columns.iter().zip(types).enumerate() {
        exprs.push(ex::coerce(Expr::Column { index, data_type: c.data_type }, t, unknown[index])?);
    }
    let label = ScanLabel { alias: None, columns: planned.columns.iter().map(|c| c.name.clone()).collect() };
    let source = Source::Subquery { plan: Box::new(planned.plan), label };
    Ok(Plan::Pipeline(Pipeline { source, steps: vec![Step::Project(exprs)], workers: 0 }))
}
