//! Planning `UNION [ALL]`, `INTERSECT [ALL]` and `EXCEPT [ALL]` (PostgreSQL's
//! `transformSetOperationTree`): both sides have as many columns; each output column
//! takes the common type of its inputs (`select_common_type` over weft's types: the
//! numeric family widens along `int4 → int8 → numeric → float8`, anything else must
//! match exactly) and its name from the leftmost query. `UNION ALL` chains become one
//! append; `UNION` is the distinct rows of the append; INTERSECT and EXCEPT count rows
//! on both sides (`weft_exec::plan::SetOpPlan`). INTERSECT binds tighter than UNION and
//! EXCEPT, which the parser already encodes in the tree.

use sqlparser::ast::{self, SetExpr, SetQuantifier};
use weft_common::{DataType, Error, Result, SqlState};
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
    let mut types = Vec::with_capacity(left.columns.len());
    for (l, r) in left.columns.iter().zip(&right.columns) {
        types.push(ex::common_type(&[l.data_type, r.data_type], name)?);
    }
    let columns: Vec<ColumnInfo> =
        left.columns.iter().zip(&types).map(|(c, &data_type)| ColumnInfo { name: c.name.clone(), data_type }).collect();
    let left_plan = cast_to(left, &types)?;
    let right_plan = cast_to(right, &types)?;
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
    let planned = PlannedQuery { plan, columns, hidden: Vec::new(), hidden_types: Vec::new() };
    Ok(if operator == SetOperator::Append && !all { distinct_rows(planned) } else { planned })
}

/// `planned`'s plan, with its columns cast to `types` where they differ.
fn cast_to(planned: PlannedQuery, types: &[DataType]) -> Result<Plan> {
    if planned.columns.iter().zip(types).all(|(c, &t)| c.data_type == t) {
        return Ok(planned.plan);
    }
    let mut exprs = Vec::with_capacity(types.len());
    for (index, (c, &t)) in planned.columns.iter().zip(types).enumerate() {
        exprs.push(ex::coerce(Expr::Column { index, data_type: c.data_type }, t, false)?);
    }
    let label = ScanLabel { alias: None, columns: planned.columns.iter().map(|c| c.name.clone()).collect() };
    let source = Source::Subquery { plan: Box::new(planned.plan), label };
    Ok(Plan::Pipeline(Pipeline { source, steps: vec![Step::Project(exprs)], workers: 0 }))
}
