//! Correlated scalar subqueries: PostgreSQL's SubPlans.
//!
//! A `(SELECT ...)` that reads columns of the query around it is planned once, with each
//! such outer reference bound as a parameter ([`Expr::Param`], its slot in the
//! subquery's parameter list). The expression holding it ([`Expr::SubPlan`]) carries the
//! arguments — the outer expressions, over the outer row — and, each time it is
//! evaluated, computes them, runs the plan with them as the parameters (through the
//! statement's [`SubPlanRunner`], which knows the buffer pool, workers and settings) and
//! applies the same one-row rule as an init plan.

use std::sync::Arc;

use parking_lot::Mutex;
use weft_common::{DataType, Datum, Error, Result};

use super::subquery::single_value;
use super::{EvalContext, Expr};
use crate::plan::{Plan, Row};

#[derive(Debug)]
pub struct SubPlan {
    /// Numbered with the statement's init plans, as PostgreSQL numbers its subplans.
    pub number: usize,
    pub plan: Plan,
    /// The type of the subquery's one column.
    pub data_type: DataType,
}

impl PartialEq for SubPlan {
    /// By identity, as [`super::InitPlan`]s are compared.
    fn eq(&self, other: &SubPlan) -> bool {
        std::ptr::eq(self, other)
    }
}

/// Runs a subplan's plan; the statement installs one ([`SubPlanSlot::install`]) so that
/// expression evaluation, which sees only an [`EvalContext`], can execute plans.
pub trait SubPlanRunner: Send + Sync {
    /// Every row of `plan`, evaluating its expressions with `eval` (which holds the
    /// parameters).
    fn run(&self, plan: &Plan, eval: &EvalContext) -> Result<Vec<Row>>;
}

/// The runner of the statement in progress, shared by every clone of a session's
/// [`EvalContext`].
#[derive(Clone, Default)]
pub struct SubPlanSlot(Arc<Mutex<Option<Arc<dyn SubPlanRunner>>>>);

impl std::fmt::Debug for SubPlanSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubPlanSlot")
    }
}

impl SubPlanSlot {
    pub fn install(&self, runner: Arc<dyn SubPlanRunner>) {
        *self.0.lock() = Some(runner);
    }

    fn runner(&self) -> Result<Arc<dyn SubPlanRunner>> {
        self.0.lock().clone().ok_or_else(|| Error::internal("a correlated subquery ran outside a statement"))
    }
}

impl SubPlan {
    /// The subquery's value for the outer row `row`: `args` (over `row`) are its
    /// parameters.
    pub fn eval(&self, args: &[Expr], row: &[Datum], ctx: &EvalContext) -> Result<Datum> {
        let params = args.iter().map(|a| a.eval(row, ctx)).collect::<Result<Vec<_>>>()?;
        let runner = ctx.subplans().runner()?;
        single_value(runner.run(&self.plan, &ctx.with_params(params))?)
    }
}
