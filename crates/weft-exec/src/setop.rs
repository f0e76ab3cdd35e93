//! Set operations: `UNION ALL` as an append of its inputs' rows, `INTERSECT [ALL]` and
//! `EXCEPT [ALL]` by counting each distinct row on both sides (PostgreSQL's HashSetOp).
//!
//! Rows compare with SQL's grouping equality (`GroupKey`): NULLs are equal here, unlike
//! in `=`, as the standard says set operations treat them. The output keeps the left
//! input's order of first appearance. The inputs are materialized, as a FROM subquery's
//! are; the counting table is not bounded by `work_mem` yet.

use std::collections::HashMap;

use weft_common::Result;

use crate::execute::{execute, ExecContext};
use crate::expr::GroupKey;
use crate::plan::{Row, SetOpPlan, SetOperator};

pub(crate) fn execute_set_op(plan: &SetOpPlan, ctx: &ExecContext) -> Result<Vec<Row>> {
    match plan.op {
        SetOperator::Append => {
            let mut rows = Vec::new();
            for input in &plan.inputs {
                ctx.cancel.check()?;
                rows.extend(execute(input, ctx)?);
            }
            Ok(rows)
        }
        SetOperator::Intersect | SetOperator::Except => {
            let [left, right] = plan.inputs.as_slice() else {
                return Err(weft_common::Error::internal("INTERSECT / EXCEPT with other than two inputs"));
            };
            let left = execute(left, ctx)?;
            ctx.cancel.check()?;
            let right = execute(right, ctx)?;
            Ok(combine(plan.op, plan.all, left, right))
        }
    }
}

/// Per distinct row: where it first appears on the left, and how often on each side.
struct Counts {
    first: usize,
    left: usize,
    right: usize,
}

fn combine(op: SetOperator, all: bool, left: Vec<Row>, right: Vec<Row>) -> Vec<Row> {
    let mut counts: HashMap<GroupKey, Counts> = HashMap::with_capacity(left.len());
    for (i, row) in left.into_iter().enumerate() {
        counts.entry(GroupKey(row)).or_insert(Counts { first: i, left: 0, right: 0 }).left += 1;
    }
    for row in right {
        if let Some(c) = counts.get_mut(&GroupKey(row)) {
            c.right += 1;
        }
    }
    let mut kept: Vec<(usize, Row, usize)> = counts
        .into_iter()
        .filter_map(|(key, c)| {
            let copies = match (op, all) {
                (SetOperator::Intersect, true) => c.left.min(c.right),
                (SetOperator::Intersect, false) => usize::from(c.right > 0),
                (SetOperator::Except, true) => c.left.saturating_sub(c.right),
                (SetOperator::Except, false) => usize::from(c.right == 0),
                (SetOperator::Append, _) => c.left,
            };
            (copies > 0).then_some((c.first, key.0, copies))
        })
        .collect();
    kept.sort_unstable_by_key(|(first, _, _)| *first);
    let mut out = Vec::with_capacity(kept.iter().map(|k| k.2).sum());
    for (_, row, copies) in kept {
        for _ in 1..copies {
            out.push(row.clone());
        }
        out.push(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use weft_common::Datum;

    fn rows(values: &[Option<i32>]) -> Vec<Row> {
        values.iter().map(|v| vec![v.map_or(Datum::Null, Datum::Int4)]).collect()
    }

    /// Multiset semantics written the obvious way: count, then take copies.
    fn oracle(op: SetOperator, all: bool, left: &[Option<i32>], right: &[Option<i32>]) -> Vec<Option<i32>> {
        let count = |xs: &[Option<i32>], x: Option<i32>| xs.iter().filter(|&&y| y == x).count();
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for &x in left {
            if seen.contains(&x) {
                continue;
            }
            seen.push(x);
            let (m, n) = (count(left, x), count(right, x));
            let copies = match (op, all) {
                (SetOperator::Intersect, true) => m.min(n),
                (SetOperator::Intersect, false) => usize::from(n > 0),
                (SetOperator::Except, true) => m.saturating_sub(n),
                (SetOperator::Except, false) => usize::from(n == 0),
                (SetOperator::Append, _) => m,
            };
            out.extend(std::iter::repeat_n(x, copies));
        }
        out
    }

    proptest! {
        #[test]
        fn intersect_and_except_count_like_the_oracle(
            left in proptest::collection::vec(proptest::option::weighted(0.8, 0..6i32), 0..30),
            right in proptest::collection::vec(proptest::option::weighted(0.8, 0..6i32), 0..30),
        ) {
            for op in [SetOperator::Intersect, SetOperator::Except] {
                for all in [false, true] {
                    let got = combine(op, all, rows(&left), rows(&right));
                    prop_assert_eq!(got, rows(&oracle(op, all, &left, &right)));
                }
            }
        }
    }
}
