//! Uncorrelated scalar subqueries: PostgreSQL's InitPlans.
//!
//! A `(SELECT ...)` that uses no column of the query around it has one value for the
//! whole statement. The planner plans it on its own and puts an [`InitPlan`] into the
//! expression ([`Expr::ScalarSubquery`]); before the statement's plan runs, the session
//! runs every init plan the plan holds ([`Plan::init_plans`], nested ones first) and
//! stores its value, which every participant then reads.

use std::sync::{Arc, OnceLock};

use weft_common::{DataType, Datum, Error, Result, SqlState};

use super::{BinaryOp, Expr};
use crate::execute::{execute, ExecContext};
use crate::plan::{Plan, Row};

#[derive(Debug)]
pub struct InitPlan {
    /// 1-based, in the order the planner finished planning them (an inner subquery
    /// before the one holding it), as PostgreSQL numbers its InitPlans.
    pub number: usize,
    pub plan: Plan,
    /// The type of the subquery's one column.
    pub data_type: DataType,
    /// An uncorrelated `EXISTS (SELECT ...)`: the value is whether `plan` (under a
    /// `LIMIT 1`) returns a row, a bool.
    pub exists: bool,
    value: OnceLock<Datum>,
}

impl PartialEq for InitPlan {
    /// Two references are equal when they name the same init plan (a GROUP BY key that
    /// is a subquery is matched by identity, never by comparing plans).
    fn eq(&self, other: &InitPlan) -> bool {
        std::ptr::eq(self, other)
    }
}

impl InitPlan {
    pub fn new(number: usize, plan: Plan, data_type: DataType) -> InitPlan {
        InitPlan { number, plan, data_type, exists: false, value: OnceLock::new() }
    }

    /// An uncorrelated `EXISTS (plan)`, `plan` limited to one row (PostgreSQL makes such
    /// a sublink an InitPlan too).
    pub fn exists(number: usize, plan: Plan) -> InitPlan {
        InitPlan { number, plan, data_type: DataType::Bool, exists: true, value: OnceLock::new() }
    }

    /// The parameter EXPLAIN prints for its value (`$0` for InitPlan 1).
    pub fn param(&self) -> usize {
        self.number.saturating_sub(1)
    }

    /// The value, once [`InitPlan::run`] has set it.
    pub fn value(&self) -> Result<&Datum> {
        self.value
            .get()
            .ok_or_else(|| Error::internal(format!("InitPlan {} was not run before its value was needed", self.number)))
    }

    /// Run the subquery and keep its value: NULL for no row, an error for more than one.
    /// Running it again (the value already set) does nothing.
    pub fn run(&self, ctx: &ExecContext) -> Result<()> {
        if self.value.get().is_some() {
            return Ok(());
        }
        let rows = execute(&self.plan, ctx)?;
        let value = if self.exists { Datum::Bool(!rows.is_empty()) } else { single_value(rows)? };
        let _ = self.value.set(value);
        Ok(())
    }
}

/// PostgreSQL's rule for a subquery used as an expression.
pub(super) fn single_value(rows: Vec<Row>) -> Result<Datum> {
    let mut rows = rows.into_iter();
    let first = rows.next();
    if rows.next().is_some() {
        return Err(Error::new(
            SqlState::CARDINALITY_VIOLATION,
            "more than one row returned by a subquery used as an expression",
        ));
    }
    Ok(first.and_then(|row| row.into_iter().next()).unwrap_or(Datum::Null))
}

/// Run the init plans of `plan` in order (their values are then set for its execution).
pub fn run_init_plans(plan: &Plan, ctx: &ExecContext) -> Result<()> {
    for init_plan in plan.init_plans() {
        init_plan.run(ctx)?;
    }
    Ok(())
}

impl Expr {
    /// Visit every node of the expression, parents first (not into subquery plans).
    pub fn for_each_node(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Column { .. } | Expr::Literal { .. } | Expr::ScalarSubquery(_) | Expr::Param { .. } => {}
            Expr::SubPlan { args, .. } => args.iter().for_each(|a| a.for_each_node(f)),
            Expr::Cast { expr, .. } | Expr::ApplyModifier { expr, .. } | Expr::Unary { expr, .. } | Expr::IsNull { expr, .. } => expr.for_each_node(f),
            Expr::Binary { left, right, .. } => {
                left.for_each_node(f);
                right.for_each_node(f);
            }
            Expr::Case { whens, otherwise, .. } => {
                for (condition, result) in whens {
                    condition.for_each_node(f);
                    result.for_each_node(f);
                }
                if let Some(otherwise) = otherwise {
                    otherwise.for_each_node(f);
                }
            }
            Expr::Coalesce { args, .. } | Expr::Function { args, .. } => args.iter().for_each(|a| a.for_each_node(f)),
        }
    }

    /// Whether the expression holds something that must run for each row it is evaluated
    /// on: a volatile function or a SubPlan (an outer query's parameters are allowed).
    pub fn runs_per_row(&self) -> bool {
        let mut per_row = false;
        self.for_each_node(&mut |e| match e {
            Expr::Function { func, .. } => per_row |= func.is_volatile(),
            Expr::SubPlan { .. } => per_row = true,
            _ => {}
        });
        per_row
    }

    /// PostgreSQL's pseudoconstant qual: no column of the row (a subplan's arguments
    /// included) and nothing volatile. Its value is the same for every row of one run of
    /// the plan holding it, so it is a One-Time Filter: evaluated once, before the rows
    /// (`Step::Filter`'s conjuncts).
    pub fn is_pseudoconstant(&self) -> bool {
        let mut constant = true;
        self.for_each_node(&mut |e| match e {
            Expr::Column { .. } => constant = false,
            Expr::Function { func, .. } => constant &= !func.is_volatile(),
            _ => {}
        });
        constant
    }

    /// The conjuncts of an AND tree, in order (the expression itself when it is no AND).
    pub fn conjuncts(&self) -> Vec<&Expr> {
        self.operands_of(BinaryOp::And)
    }

    /// The arms of an OR tree, in order (the expression itself when it is no OR).
    pub fn disjuncts(&self) -> Vec<&Expr> {
        self.operands_of(BinaryOp::Or)
    }

    /// The operands of a tree of `op` (AND or OR), in order.
    fn operands_of(&self, op: BinaryOp) -> Vec<&Expr> {
        fn collect<'e>(e: &'e Expr, op: BinaryOp, out: &mut Vec<&'e Expr>) {
            match e {
                Expr::Binary { op: o, left, right, .. } if *o == op => {
                    collect(left, op, out);
                    collect(right, op, out);
                }
                other => out.push(other),
            }
        }
        let mut out = Vec::new();
        collect(self, op, &mut out);
        out
    }

    /// The init plans this expression reads directly, and those its subplans read (they
    /// too run once, before the statement).
    pub fn collect_init_plans(&self, out: &mut Vec<Arc<InitPlan>>) {
        self.for_each_node(&mut |e| match e {
            Expr::ScalarSubquery(init_plan) => out.push(init_plan.clone()),
            Expr::SubPlan { subplan, .. } => subplan.plan.for_each_expr(&mut |e| e.collect_init_plans(out)),
            _ => {}
        });
    }

    /// The subplans this expression holds directly (not those inside their plans).
    pub fn collect_subplans(&self, out: &mut Vec<Arc<super::SubPlan>>) {
        self.for_each_node(&mut |e| {
            if let Expr::SubPlan { subplan, .. } = e {
                out.push(subplan.clone());
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_rows_is_null_and_two_rows_an_error() {
        assert_eq!(single_value(vec![]).unwrap(), Datum::Null);
        assert_eq!(single_value(vec![vec![Datum::Int4(7)]]).unwrap(), Datum::Int4(7));
        let err = single_value(vec![vec![Datum::Int4(1)], vec![Datum::Int4(2)]]).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::CARDINALITY_VIOLATION);
    }

    #[test]
    fn value_before_run_is_an_internal_error() {
        let init_plan = InitPlan::new(1, Plan::Pipeline(crate::plan::Pipeline { source: crate::plan::Source::Single, steps: vec![], workers: 0 }), DataType::Int4);
        assert_eq!(init_plan.value().unwrap_err().sqlstate, SqlState::INTERNAL_ERROR);
        assert_eq!(init_plan.param(), 0);
    }
}
