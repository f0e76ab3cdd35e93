//! Correlated scalar subqueries: PostgreSQL's SubPlans.
//!
//! A `(SELECT ...)` that reads columns of the query around it is planned once, with each
//! such outer reference bound as a parameter ([`Expr::Param`], its slot in the
//! subquery's parameter list). The expression holding it ([`Expr::SubPlan`]) carries the
//! arguments — the outer expressions, over the outer row — and, each time it is
//! evaluated, computes them, runs the plan with them as the parameters (through the
//! statement's [`SubPlanRunner`], which knows the buffer pool, workers and settings) and
//! applies the same one-row rule as an init plan.
//!
//! `EXISTS (SELECT ...)` and `lhs op ANY | ALL (SELECT ...)` (`IN` is `= ANY`, `NOT IN`
//! is `NOT (= ANY)`) outside the top-level conditions of WHERE (which the planner turns
//! into semi and anti joins) are subplans too, of another [`SubLinkKind`]. One that
//! reads no outer column collects its rows once per statement and keeps them: its
//! arguments are only the left-hand side, evaluated per row. One over a small table whose
//! correlation is a set of comparisons runs once too, kept by its keys
//! ([`super::keyed_subplan`]).

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use weft_common::{DataType, Datum, Error, Result};

use super::keyed_subplan::{KeyedPlan, KeyedRows};
use super::subquery::single_value;
use super::compare::GroupKey;
use super::{BinaryOp, EvalContext, Expr};
use crate::plan::{Plan, Row};

#[derive(Debug)]
pub struct SubPlan {
    /// Numbered with the statement's init plans, as PostgreSQL numbers its subplans.
    pub number: usize,
    pub plan: Plan,
    /// The type of the expression's value: the subquery's one column for
    /// [`SubLinkKind::Value`], `bool` for the others.
    pub data_type: DataType,
    pub kind: SubLinkKind,
    /// The rows of a subplan without parameters, collected by its first evaluation.
    rows: OnceLock<Vec<Row>>,
    /// The same rows as a hash set, for an `= ANY` (`IN`) or `<> ALL` (`NOT IN`) test of
    /// one type on both sides (PostgreSQL's hashed SubPlan).
    hashed: OnceLock<HashedRows>,
    /// The rows of a correlated subplan over one small table, kept by their
    /// correlation keys after its first evaluation (`None`: evaluated per row).
    keyed: OnceLock<Option<KeyedRows>>,
}

/// The values of a subplan's rows, for membership tests under SQL's NULL rules.
#[derive(Debug)]
struct HashedRows {
    values: HashSet<GroupKey>,
    has_null: bool,
    empty: bool,
}

/// What a subplan's rows become (PostgreSQL's SubLink types EXPR, EXISTS, ANY, ALL).
#[derive(Debug)]
pub enum SubLinkKind {
    /// `(SELECT ...)`: its one value, NULL for no row, an error for more than one.
    Value,
    /// `EXISTS (SELECT ...)`: whether there is a row.
    Exists,
    /// `lhs op ANY (SELECT ...)` (`all`: `op ALL`), `lhs` a value or a row of `width`
    /// values. The expression's last `width` arguments are `lhs`; `test` is `lhs op
    /// value` over the row `[lhs..., value...]` (for rows, `=` is the AND of the fields'
    /// equalities and `<>` the OR of their differences, as SQL's row comparison). ANY is
    /// true when a test is true, else NULL when one is NULL, else false (no row: false);
    /// ALL is false when a test is false, else NULL when one is NULL, else true (no row:
    /// true).
    Quantified { test: Expr, all: bool, width: usize },
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

    /// [`run`](Self::run) for a run the caller may discard: its failure must not cancel
    /// the statement (a child of the statement's cancel token), which goes on another way.
    fn try_run(&self, plan: &Plan, eval: &EvalContext) -> Result<Vec<Row>>;

    /// Hand `plan`'s rows to `take` until it returns `false`; the rest need not be
    /// produced.
    fn run_until(&self, plan: &Plan, eval: &EvalContext, take: &mut (dyn FnMut(&[Datum]) -> Result<bool> + Send)) -> Result<()> {
        for row in self.run(plan, eval)? {
            if !take(&row)? {
                break;
            }
        }
        Ok(())
    }

    /// The bytes a hash table of the statement may hold (`work_mem` ×
    /// `hash_mem_multiplier`).
    fn hash_memory(&self) -> usize;
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
    pub fn new(number: usize, plan: Plan, data_type: DataType, kind: SubLinkKind) -> SubPlan {
        SubPlan { number, plan, data_type, kind, rows: OnceLock::new(), hashed: OnceLock::new(), keyed: OnceLock::new() }
    }

    /// The expression's value for the outer row `row`: `args` (over `row`) are the
    /// subquery's parameters, then, for a quantified comparison, its left-hand side.
    pub fn eval(&self, args: &[Expr], row: &[Datum], ctx: &EvalContext) -> Result<Datum> {
        let (param_args, lhs) = match self.kind {
            SubLinkKind::Quantified { width, .. } => args.split_at(args.len().saturating_sub(width)),
            _ => (args, &[][..]),
        };
        let params = param_args.iter().map(|a| a.eval(row, ctx)).collect::<Result<Vec<_>>>()?;
        if params.is_empty() {
            if let Some((lhs_side, value_side, negate)) = self.hashable_test() {
                return self.eval_hashed(lhs_side, value_side, negate, &lhs[0], row, ctx);
            }
        }
        let fresh;
        let rows: &[Row] = if params.is_empty() {
            self.collected_rows(ctx)?
        } else {
            let with_params = ctx.with_params(params);
            match self.keyed_rows(ctx)? {
                Some(keyed) => keyed.matching(&with_params)?,
                None if matches!(self.kind, SubLinkKind::Value) => {
                    fresh = ctx.subplans().runner()?.run(&self.plan, &with_params)?;
                    &fresh
                }
                // EXISTS, ANY and ALL stop at the row that decides them.
                None => {
                    let runner = ctx.subplans().runner()?;
                    return self.decide(lhs, row, ctx, |take| runner.run_until(&self.plan, &with_params, take));
                }
            }
        };
        match &self.kind {
            SubLinkKind::Value => single_value(rows.to_vec()),
            _ => self.decide(lhs, row, ctx, |take| {
                for sub_row in rows {
                    if !take(sub_row)? {
                        break;
                    }
                }
                Ok(())
            }),
        }
    }

    /// An EXISTS or quantified subplan's value over the rows `rows` hands to its callback
    /// (which returns `false` once the value is decided: the rest need not be read).
    fn decide(
        &self,
        lhs: &[Expr],
        row: &[Datum],
        ctx: &EvalContext,
        rows: impl FnOnce(&mut (dyn FnMut(&[Datum]) -> Result<bool> + Send)) -> Result<()>,
    ) -> Result<Datum> {
        match &self.kind {
            SubLinkKind::Value => Err(Error::internal("a value subplan decided as a condition")),
            SubLinkKind::Exists => {
                let mut found = false;
                rows(&mut |_| {
                    found = true;
                    Ok(false)
                })?;
                Ok(Datum::Bool(found))
            }
            SubLinkKind::Quantified { test, all, width } => {
                if lhs.len() != *width {
                    return Err(Error::internal("a quantified subplan without its left-hand side"));
                }
                let mut pair = lhs.iter().map(|e| e.eval(row, ctx)).collect::<Result<Vec<_>>>()?;
                pair.resize(2 * width, Datum::Null);
                let (mut saw_null, mut decided) = (false, None);
                rows(&mut |sub_row| {
                    for (slot, value) in pair[*width..].iter_mut().zip(sub_row) {
                        *slot = value.clone();
                    }
                    match test.eval(&pair, ctx)? {
                        Datum::Bool(outcome) if outcome != *all => {
                            decided = Some(outcome);
                            return Ok(false);
                        }
                        Datum::Null => saw_null = true,
                        _ => {}
                    }
                    Ok(true)
                })?;
                Ok(match decided {
                    Some(outcome) => Datum::Bool(outcome),
                    None if saw_null => Datum::Null,
                    None => Datum::Bool(*all),
                })
            }
        }
    }

    /// Whether, with these arguments, membership is tested in a hash set of the rows
    /// (EXPLAIN's `hashed SubPlan`): an `= ANY` / `<> ALL` without parameters.
    pub fn is_hashed(&self, args: &[Expr]) -> bool {
        args.len() == 1 && self.hashable_test().is_some()
    }

    /// The rows of a correlated subplan run once and kept by their correlation keys,
    /// when its plan allows it ([`KeyedPlan::of`]); built by the first evaluation.
    fn keyed_rows(&self, ctx: &EvalContext) -> Result<Option<&KeyedRows>> {
        if let Some(keyed) = self.keyed.get() {
            return Ok(keyed.as_ref());
        }
        let runner = ctx.subplans().runner()?;
        let keyed = KeyedPlan::of(&self.plan, runner.hash_memory()).and_then(|keyed| {
            // A failed run (a conjunct erring on a row the correlation filters out
            // first) leaves the per-row evaluation to raise what it raises.
            let rows = runner.try_run(keyed.plan(), ctx).ok()?;
            let absent = match keyed.absent_plan() {
                Some(plan) => runner.try_run(plan, ctx).ok()?,
                None => Vec::new(),
            };
            keyed.keep(rows, absent, ctx).ok()
        });
        Ok(self.keyed.get_or_init(|| keyed).as_ref())
    }

    /// The rows of a subplan without parameters: run by the first evaluation, kept.
    fn collected_rows(&self, ctx: &EvalContext) -> Result<&[Row]> {
        if let Some(rows) = self.rows.get() {
            return Ok(rows);
        }
        let rows = ctx.subplans().runner()?.run(&self.plan, ctx)?;
        Ok(self.rows.get_or_init(|| rows))
    }

    /// For `lhs = ANY` and `lhs <> ALL` whose two sides are one type: the test's sides
    /// (over `[lhs, _]` and `[_, value]`) and whether the membership is negated (ALL).
    fn hashable_test(&self) -> Option<(&Expr, &Expr, bool)> {
        let SubLinkKind::Quantified { test: Expr::Binary { op, left, right, .. }, all, width: 1 } = &self.kind else { return None };
        let negate = match (op, all) {
            (BinaryOp::Eq, false) => false,
            (BinaryOp::NotEq, true) => true,
            _ => return None,
        };
        let reads_only = |expr: &Expr, column: usize| {
            let mut only = true;
            expr.for_each_node(&mut |e| only &= !matches!(e, Expr::Column { index, .. } if *index != column));
            only
        };
        (left.data_type() == right.data_type() && reads_only(left, 0) && reads_only(right, 1)).then_some((left, right, negate))
    }

    /// `lhs = ANY (rows)` by a hash set: true when the set holds lhs; else NULL when lhs
    /// is NULL or a row is NULL (unless there is no row: false); else false.
    fn eval_hashed(&self, lhs_side: &Expr, value_side: &Expr, negate: bool, lhs: &Expr, row: &[Datum], ctx: &EvalContext) -> Result<Datum> {
        let hashed = match self.hashed.get() {
            Some(hashed) => hashed,
            None => {
                let rows = self.collected_rows(ctx)?;
                let mut hashed = HashedRows { values: HashSet::with_capacity(rows.len()), has_null: false, empty: rows.is_empty() };
                let mut pair = [Datum::Null, Datum::Null];
                for sub_row in rows {
                    pair[1] = sub_row.first().cloned().unwrap_or(Datum::Null);
                    match value_side.eval(&pair, ctx)? {
                        Datum::Null => hashed.has_null = true,
                        value => {
                            hashed.values.insert(GroupKey(vec![value]));
                        }
                    }
                }
                self.hashed.get_or_init(|| hashed)
            }
        };
        if hashed.empty {
            return Ok(Datum::Bool(negate));
        }
        let key = lhs_side.eval(&[lhs.eval(row, ctx)?, Datum::Null], ctx)?;
        let found = match key {
            Datum::Null => return Ok(Datum::Null),
            key => hashed.values.contains(&GroupKey(vec![key])),
        };
        Ok(if found {
            Datum::Bool(!negate)
        } else if hashed.has_null {
            Datum::Null
        } else {
            Datum::Bool(negate)
        })
    }
}
