//! A correlated subplan over one sequentially scanned table, run once and kept by its
//! correlation keys (beyond PostgreSQL, which runs such a SubPlan for every outer row).
//!
//! `EXISTS (SELECT 1 FROM t WHERE t.k = outer.k AND t.d < outer.d AND t.x > 0)` scans
//! all of `t` for each outer row when `t` has no index on `k`. Its filter splits into
//! conjuncts that compare a column expression of `t` with an expression of the
//! parameters (`t.k = $1`, `t.d < $2`) and conjuncts that read no parameter (`t.x >
//! 0`). The plan without the first kind, projecting the key expressions as well, runs
//! once; its rows are grouped by their equality keys and, within a group, sorted by the
//! key of at most one inequality. An evaluation then finds the rows the original plan
//! would return for its parameters by a hash lookup and a binary search: a NULL key or
//! parameter compares as NULL, which no row passes, so such rows are left out of the
//! groups and a NULL parameter finds none.
//!
//! An aggregating subquery (`(SELECT max(t.x) FROM t WHERE t.k = outer.k)`, with or
//! without GROUP BY and HAVING) whose parameters appear only in such equalities runs once
//! as the same aggregate grouped by the equality keys first; an evaluation finds its
//! key's rows (the HAVING filter and projection applied), and a key no row has — or a
//! NULL parameter — gets what the aggregate returns over no rows (`count` 0, `max` NULL,
//! no row under GROUP BY), computed once as well.
//!
//! Only when the kept rows are cheap to hold: the table's pages fit the hash budget
//! (`work_mem` × `hash_mem_multiplier`). Anything volatile or any nested subplan keeps the
//! per-row evaluation, and so does a build that fails (a conjunct erring on a row the
//! correlation would have filtered out first): the rows' order within a key, or an
//! error PostgreSQL would not raise, must not depend on this shortcut.

use std::cmp::Ordering;
use std::collections::HashMap;

use weft_common::{Datum, Result};

use super::compare::{compare_datums, GroupKey};
use super::{BinaryOp, EvalContext, Expr};
use crate::plan::{AggregateCall, Pipeline, Plan, Row, Source, Step};

/// A filter conjunct `key op probe`: `key` reads the table's row, `probe` only the
/// parameters.
#[derive(Debug)]
struct Correlation {
    key: Expr,
    op: BinaryOp,
    probe: Expr,
}

/// The run-once form of a subplan's plan.
#[derive(Debug)]
pub(super) struct KeyedPlan {
    plan: Plan,
    form: Form,
    equalities: Vec<Correlation>,
    range: Option<Correlation>,
    /// LIMIT and OFFSET of each evaluation's rows.
    window: Option<(Option<u64>, u64)>,
}

#[derive(Debug)]
enum Form {
    /// The plan's rows are the original's `width` outputs followed by the equality keys
    /// and then the range key.
    Rows { width: usize },
    /// The plan's rows are the equality keys followed by the aggregate's own row (its
    /// groups and aggregates), to which `output` (HAVING, the projection) applies;
    /// `absent` is the aggregate over no rows, the result for a key no row has.
    Aggregate { output: Vec<Step>, absent: Box<Plan> },
}

/// A scan's filter split by its use of the parameters.
struct SplitScan {
    /// The conjuncts that read no parameter.
    rest: Vec<Expr>,
    equalities: Vec<Correlation>,
    range: Option<Correlation>,
    /// The scan's projection (its decoded columns when it has none).
    projection: Vec<Expr>,
}

/// The rows of a [`KeyedPlan`], grouped by their equality keys.
#[derive(Debug)]
pub(super) struct KeyedRows {
    equalities: Vec<Expr>,
    range: Option<(BinaryOp, Expr)>,
    window: Option<(Option<u64>, u64)>,
    groups: HashMap<GroupKey, Group>,
    /// The rows of an evaluation whose key no group has.
    absent: Vec<Row>,
}

/// One equality key's rows, in the order of their range keys (when there is a range).
#[derive(Debug, Default)]
struct Group {
    range_keys: Vec<Datum>,
    rows: Vec<Row>,
}

fn reads(expr: &Expr) -> (bool, bool) {
    let (mut columns, mut params) = (false, false);
    expr.for_each_node(&mut |e| match e {
        Expr::Column { .. } => columns = true,
        Expr::Param { .. } => params = true,
        _ => {}
    });
    (columns, params)
}

/// `conjunct` as `key op probe`, when it compares an expression of the row alone with
/// one of the parameters alone, of one type.
fn correlation(conjunct: &Expr) -> Option<Correlation> {
    let Expr::Binary { op, left, right, .. } = conjunct else { return None };
    if !matches!(op, BinaryOp::Eq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq) {
        return None;
    }
    if left.data_type() != right.data_type() || left.runs_per_row() || right.runs_per_row() {
        return None;
    }
    match (reads(left), reads(right)) {
        ((_, false), (false, true)) => Some(Correlation { key: (**left).clone(), op: *op, probe: (**right).clone() }),
        ((false, true), (_, false)) => Some(Correlation { key: (**right).clone(), op: op.commuted(), probe: (**left).clone() }),
        _ => None,
    }
}

impl KeyedPlan {
    /// The run-once form of `plan`: a filter (and a projection) over a table scan, or an
    /// aggregate over one, whose table's pages fit `budget` bytes and whose parameters
    /// appear only in comparisons of the filter (any number of equalities; at most one
    /// inequality, and none under an aggregate).
    pub(super) fn of(plan: &Plan, budget: usize) -> Option<KeyedPlan> {
        // A constant LIMIT / OFFSET (EXISTS's `Limit 1`) applies to each key's rows.
        let (plan, window) = match plan {
            Plan::Limit { input, limit, offset, run_time: None, ties: None } => (input.as_ref(), Some((*limit, *offset))),
            plan => (plan, None),
        };
        match plan {
            Plan::Pipeline(pipeline) => {
                let SplitScan { rest, equalities, range, projection } = split_scan(pipeline, budget)?;
                let width = projection.len();
                let mut outputs = projection;
                outputs.extend(equalities.iter().chain(&range).map(|c| c.key.clone()));
                let plan = Plan::Pipeline(scan_with(pipeline, rest, outputs));
                Some(KeyedPlan { plan, form: Form::Rows { width }, equalities, range, window })
            }
            Plan::Aggregate { input, group_by, aggregates, output } => {
                let SplitScan { rest, equalities, range, projection } = split_scan(input, budget)?;
                let per_row = |e: &Expr| e.runs_per_row() || reads(e).1;
                let output_per_row = output.iter().any(|step| match step {
                    Step::Filter(e) => per_row(e),
                    Step::Project(exprs) => exprs.iter().any(per_row),
                    Step::HashJoin(_) => true,
                });
                if range.is_some()
                    || equalities.is_empty()
                    || output_per_row
                    || group_by.iter().chain(aggregates.iter().flat_map(AggregateCall::exprs)).any(per_row)
                {
                    return None;
                }
                // The keys group first; the aggregate's own groups and values follow.
                let width = projection.len();
                let mut outputs = projection;
                outputs.extend(equalities.iter().map(|c| c.key.clone()));
                let mut keyed_group_by: Vec<Expr> =
                    equalities.iter().enumerate().map(|(j, c)| Expr::Column { index: width + j, data_type: c.key.data_type() }).collect();
                keyed_group_by.extend(group_by.iter().cloned());
                let plan = Plan::Aggregate {
                    input: scan_with(input, rest, outputs),
                    group_by: keyed_group_by,
                    aggregates: aggregates.clone(),
                    output: Vec::new(),
                };
                let nothing = Pipeline { source: Source::Values(Vec::new()), steps: Vec::new(), workers: 0 };
                let absent = Plan::Aggregate { input: nothing, group_by: group_by.clone(), aggregates: aggregates.clone(), output: output.clone() };
                Some(KeyedPlan { plan, form: Form::Aggregate { output: output.clone(), absent: Box::new(absent) }, equalities, range, window })
            }
            _ => None,
        }
    }

    pub(super) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The plan whose rows an evaluation gets when its key has no rows, if any.
    pub(super) fn absent_plan(&self) -> Option<&Plan> {
        match &self.form {
            Form::Rows { .. } => None,
            Form::Aggregate { absent, .. } => Some(absent),
        }
    }

    /// Group the plan's rows by their keys (`absent`: the absent plan's rows).
    pub(super) fn keep(self, rows: Vec<Row>, absent: Vec<Row>, ctx: &EvalContext) -> Result<KeyedRows> {
        let equal_count = self.equalities.len();
        let mut groups: HashMap<GroupKey, Group> = HashMap::new();
        for mut row in rows {
            let mut keys = match &self.form {
                Form::Rows { width } => row.split_off(*width),
                Form::Aggregate { .. } => row.drain(..equal_count).collect(),
            };
            if keys.iter().any(Datum::is_null) {
                continue;
            }
            let range_key = (keys.len() > equal_count).then(|| keys.pop().expect("a range key"));
            let group = groups.entry(GroupKey(keys)).or_default();
            group.range_keys.extend(range_key);
            match &self.form {
                Form::Rows { .. } => group.rows.push(row),
                Form::Aggregate { output, .. } => group.rows.extend(crate::execute::apply_steps_to_all(vec![row], output, ctx)?),
            }
        }
        if self.range.is_some() {
            for group in groups.values_mut() {
                let mut pairs: Vec<(Datum, Row)> = std::mem::take(&mut group.range_keys).into_iter().zip(std::mem::take(&mut group.rows)).collect();
                pairs.sort_by(|a, b| compare_datums(&a.0, &b.0));
                (group.range_keys, group.rows) = pairs.into_iter().unzip();
            }
        }
        Ok(KeyedRows {
            equalities: self.equalities.into_iter().map(|c| c.probe).collect(),
            range: self.range.map(|c| (c.op, c.probe)),
            window: self.window,
            groups,
            absent,
        })
    }
}

/// `pipeline`'s filter split into the conjuncts that read no parameter and the
/// correlations, when it is a table scan that fits `budget` bytes with a filter and at
/// most a projection after it, and reads parameters only in correlations.
fn split_scan(pipeline: &Pipeline, budget: usize) -> Option<SplitScan> {
    let Source::Heap(heap) = &pipeline.source else { return None };
    if (heap.nblocks as usize).saturating_mul(weft_storage::PAGE_SIZE) > budget {
        return None;
    }
    let (filter, projection) = match pipeline.steps.as_slice() {
        [Step::Filter(filter), Step::Project(projection)] => (filter, projection.clone()),
        [Step::Filter(filter)] => {
            let types = heap.layout.types();
            (filter, heap.columns.iter().enumerate().map(|(index, &c)| Expr::Column { index, data_type: types[c] }).collect())
        }
        _ => return None,
    };
    if projection.iter().any(|e| e.runs_per_row() || reads(e).1) {
        return None;
    }
    let (mut rest, mut equalities, mut range) = (Vec::new(), Vec::new(), None);
    for part in filter.conjuncts() {
        if part.runs_per_row() {
            return None;
        }
        if !reads(part).1 {
            rest.push(part.clone());
            continue;
        }
        let correlation = correlation(part)?;
        if correlation.op == BinaryOp::Eq {
            equalities.push(correlation);
        } else if range.replace(correlation).is_some() {
            return None;
        }
    }
    Some(SplitScan { rest, equalities, range, projection })
}

/// `pipeline`'s scan filtered by `rest` and projecting `outputs`.
fn scan_with(pipeline: &Pipeline, rest: Vec<Expr>, outputs: Vec<Expr>) -> Pipeline {
    let filter = rest.into_iter().reduce(|a, b| Expr::Binary { op: BinaryOp::And, left: Box::new(a), right: Box::new(b), data_type: weft_common::DataType::Bool });
    let mut steps: Vec<Step> = filter.map(Step::Filter).into_iter().collect();
    steps.push(Step::Project(outputs));
    Pipeline { source: pipeline.source.clone(), steps, workers: pipeline.workers }
}

impl KeyedRows {
    /// The rows the subplan's plan returns with these parameters (`ctx` holds them).
    pub(super) fn matching(&self, ctx: &EvalContext) -> Result<&[Row]> {
        let mut key = Vec::with_capacity(self.equalities.len());
        for probe in &self.equalities {
            match probe.eval(&[], ctx)? {
                Datum::Null => return Ok(self.windowed(&self.absent)),
                value => key.push(value),
            }
        }
        let Some(group) = self.groups.get(&GroupKey(key)) else { return Ok(self.windowed(&self.absent)) };
        let rows = match &self.range {
            None => &group.rows[..],
            Some((op, probe)) => match probe.eval(&[], ctx)? {
                Datum::Null => &[],
                bound => &group.rows[Self::in_range(&group.range_keys, *op, &bound)],
            },
        };
        Ok(self.windowed(rows))
    }

    /// `rows` after the plan's LIMIT and OFFSET.
    fn windowed<'r>(&self, rows: &'r [Row]) -> &'r [Row] {
        match self.window {
            None => rows,
            Some((limit, offset)) => {
                let start = rows.len().min(offset as usize);
                let end = limit.map_or(rows.len(), |n| rows.len().min(start.saturating_add(n as usize)));
                &rows[start..end]
            }
        }
    }

    /// The positions of the sorted `keys` with `key op bound`.
    fn in_range(keys: &[Datum], op: BinaryOp, bound: &Datum) -> std::ops::Range<usize> {
        let below = |strict: bool| {
            keys.partition_point(|k| match compare_datums(k, bound) {
                Ordering::Less => true,
                Ordering::Equal => !strict,
                Ordering::Greater => false,
            })
        };
        match op {
            BinaryOp::Lt => 0..below(true),
            BinaryOp::LtEq => 0..below(false),
            BinaryOp::Gt => below(false)..keys.len(),
            BinaryOp::GtEq => below(true)..keys.len(),
            _ => 0..keys.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_of_sorted_keys_follow_the_operator() {
        let keys: Vec<Datum> = [1, 3, 3, 5].into_iter().map(Datum::Int4).collect();
        let range = |op, bound| KeyedRows::in_range(&keys, op, &Datum::Int4(bound));
        assert_eq!(range(BinaryOp::Lt, 3), 0..1);
        assert_eq!(range(BinaryOp::LtEq, 3), 0..3);
        assert_eq!(range(BinaryOp::Gt, 3), 3..4);
        assert_eq!(range(BinaryOp::GtEq, 3), 1..4);
        assert_eq!(range(BinaryOp::Lt, 0), 0..0);
        assert_eq!(range(BinaryOp::Gt, 9), 4..4);
    }

    #[test]
    fn a_correlation_compares_the_row_with_the_parameters_alone() {
        let column = || Box::new(Expr::Column { index: 0, data_type: weft_common::DataType::Int4 });
        let param = || Box::new(Expr::Param { index: 0, data_type: weft_common::DataType::Int4 });
        let compare = |op, left, right| Expr::Binary { op, left, right, data_type: weft_common::DataType::Bool };
        // `$1 < t.c` is `t.c > $1`.
        let found = correlation(&compare(BinaryOp::Lt, param(), column())).expect("a correlation");
        assert_eq!(found.op, BinaryOp::Gt);
        assert!(matches!(found.key, Expr::Column { .. }) && matches!(found.probe, Expr::Param { .. }));
        // Both sides reading the parameters, or another operator: not a correlation.
        assert!(correlation(&compare(BinaryOp::Eq, param(), param())).is_none());
        assert!(correlation(&compare(BinaryOp::NotEq, column(), param())).is_none());
    }
}
