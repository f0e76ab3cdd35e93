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
use crate::plan::{Pipeline, Plan, Row, Source, Step};

/// A filter conjunct `key op probe`: `key` reads the table's row, `probe` only the
/// parameters.
#[derive(Debug)]
struct Correlation {
    key: Expr,
    op: BinaryOp,
    probe: Expr,
}

/// The run-once form of a subplan's plan: the plan whose rows are the original's
/// outputs followed by the equality keys and then the range key.
#[derive(Debug)]
pub(super) struct KeyedPlan {
    plan: Plan,
    width: usize,
    equalities: Vec<Correlation>,
    range: Option<Correlation>,
    /// LIMIT and OFFSET of each evaluation's rows.
    window: Option<(Option<u64>, u64)>,
}

/// The rows of a [`KeyedPlan`], grouped by their equality keys.
#[derive(Debug)]
pub(super) struct KeyedRows {
    equalities: Vec<Expr>,
    range: Option<(BinaryOp, Expr)>,
    window: Option<(Option<u64>, u64)>,
    groups: HashMap<GroupKey, Group>,
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
    /// The run-once form of `plan`, when it is a filter and a projection over a table
    /// scan whose pages fit `budget` bytes and whose parameters appear only in
    /// comparisons of the filter (any number of equalities, at most one inequality).
    pub(super) fn of(plan: &Plan, budget: usize) -> Option<KeyedPlan> {
        // A constant LIMIT / OFFSET (EXISTS's `Limit 1`) applies to each key's rows.
        let (plan, window) = match plan {
            Plan::Limit { input, limit, offset, run_time: None, ties: None } => (input.as_ref(), Some((*limit, *offset))),
            plan => (plan, None),
        };
        let Plan::Pipeline(pipeline) = plan else { return None };
        let Source::Heap(heap) = &pipeline.source else { return None };
        if (heap.nblocks as usize).saturating_mul(weft_storage::PAGE_SIZE) > budget {
            return None;
        }
        let [Step::Filter(filter), Step::Project(projection)] = pipeline.steps.as_slice() else { return None };
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
        let mut outputs = projection.clone();
        outputs.extend(equalities.iter().chain(&range).map(|c| c.key.clone()));
        let mut steps: Vec<Step> = rest.into_iter().reduce(|a, b| Expr::Binary { op: BinaryOp::And, left: Box::new(a), right: Box::new(b), data_type: weft_common::DataType::Bool }).map(Step::Filter).into_iter().collect();
        steps.push(Step::Project(outputs));
        let plan = Plan::Pipeline(Pipeline { source: pipeline.source.clone(), steps, workers: pipeline.workers });
        Some(KeyedPlan { plan, width: projection.len(), equalities, range, window })
    }

    pub(super) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Group the plan's rows by their keys.
    pub(super) fn keep(self, rows: Vec<Row>) -> KeyedRows {
        let equal_count = self.equalities.len();
        let mut groups: HashMap<GroupKey, Group> = HashMap::new();
        for mut row in rows {
            let mut keys = row.split_off(self.width);
            if keys.iter().any(Datum::is_null) {
                continue;
            }
            let range_key = (keys.len() > equal_count).then(|| keys.pop().expect("a range key"));
            let group = groups.entry(GroupKey(keys)).or_default();
            group.range_keys.extend(range_key);
            group.rows.push(row);
        }
        if self.range.is_some() {
            for group in groups.values_mut() {
                let mut pairs: Vec<(Datum, Row)> = std::mem::take(&mut group.range_keys).into_iter().zip(std::mem::take(&mut group.rows)).collect();
                pairs.sort_by(|a, b| compare_datums(&a.0, &b.0));
                (group.range_keys, group.rows) = pairs.into_iter().unzip();
            }
        }
        KeyedRows {
            equalities: self.equalities.into_iter().map(|c| c.probe).collect(),
            range: self.range.map(|c| (c.op, c.probe)),
            window: self.window,
            groups,
        }
    }
}

impl KeyedRows {
    /// The rows the subplan's plan returns with these parameters (`ctx` holds them).
    pub(super) fn matching(&self, ctx: &EvalContext) -> Result<&[Row]> {
        let mut key = Vec::with_capacity(self.equalities.len());
        for probe in &self.equalities {
            match probe.eval(&[], ctx)? {
                Datum::Null => return Ok(&[]),
                value => key.push(value),
            }
        }
        let Some(group) = self.groups.get(&GroupKey(key)) else { return Ok(&[]) };
        let rows = match &self.range {
            None => &group.rows[..],
            Some((op, probe)) => match probe.eval(&[], ctx)? {
                Datum::Null => &[],
                bound => &group.rows[Self::in_range(&group.range_keys, *op, &bound)],
            },
        };
        Ok(match self.window {
            None => rows,
            Some((limit, offset)) => {
                let start = rows.len().min(offset as usize);
                let end = limit.map_or(rows.len(), |n| rows.len().min(start.saturating_add(n as usize)));
                &rows[start..end]
            }
        })
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
