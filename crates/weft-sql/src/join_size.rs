//! Estimated rows of a hash join, shared by the join planner (which orders an island of
//! inner joins by it) and EXPLAIN (which prints it).
//!
//! An equality key `o = i` matches a fraction `1 / max(nd(o), nd(i))` of all pairs of
//! rows, where `nd` is a side's number of distinct values, clamped to that side's rows
//! (PostgreSQL's `eqjoinsel` without MCV lists); keys multiply. A side whose distinct
//! values are unknown (an expression, a subquery's column, a table without statistics)
//! is taken as unique on the smaller side: with neither side known the join keeps the
//! larger side's rows, the foreign-key guess weft made before it read statistics. Outer
//! joins keep at least their preserved rows; a semi join keeps the fraction of outer rows
//! whose key has a partner, `nd(i) / nd(o)` at most 1, and an anti join the rest
//! (`eqjoinsel_semi`), a half when unknown.

use weft_common::types::DataType;
use weft_exec::expr::Expr;
use weft_exec::plan::JoinType;

use crate::cost::DEFAULT_JOIN_FILTER_SELECTIVITY;

/// One equality key's distinct values on the outer (probe) and inner (build) side.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KeyDistinct {
    pub outer: Option<f64>,
    pub inner: Option<f64>,
}

/// The column a join key reads, directly or through one cast (a cast keeps the column's
/// distinct values): the key whose statistics can be looked up.
pub fn key_column(key: &Expr) -> Option<(usize, DataType)> {
    match key {
        Expr::Column { index, data_type } => Some((*index, *data_type)),
        Expr::Cast { expr, .. } => match expr.as_ref() {
            Expr::Column { index, data_type } => Some((*index, *data_type)),
            _ => None,
        },
        _ => None,
    }
}

/// Rows of `outer join_type inner` on `keys`, `filtered` when a further join condition
/// (a join filter) applies to matched pairs.
pub fn join_rows(join_type: JoinType, outer_rows: f64, inner_rows: f64, keys: &[KeyDistinct], filtered: bool) -> f64 {
    let (o, i) = (outer_rows.max(1.0), inner_rows.max(1.0));
    let filter = if filtered { DEFAULT_JOIN_FILTER_SELECTIVITY } else { 1.0 };
    let matched = (o * i * pair_fraction(o, i, keys) * filter).max(1.0);
    match join_type {
        JoinType::Inner => matched,
        JoinType::Left => matched.max(o),
        JoinType::Right => matched.max(i),
        JoinType::Full => matched.max(o).max(i),
        JoinType::Semi => (o * semi_fraction(o, i, keys) * filter).max(1.0),
        JoinType::Anti => (o * (1.0 - semi_fraction(o, i, keys) * filter)).max(1.0),
    }
}

/// The fraction of (outer, inner) pairs whose keys are equal.
fn pair_fraction(o: f64, i: f64, keys: &[KeyDistinct]) -> f64 {
    let unknown = o.min(i);
    keys.iter()
        .map(|k| {
            let outer = k.outer.map(|d| d.clamp(1.0, o));
            let inner = k.inner.map(|d| d.clamp(1.0, i));
            let distinct = match (outer, inner) {
                (Some(a), Some(b)) => a.max(b),
                (Some(known), None) | (None, Some(known)) => known.max(unknown),
                (None, None) => unknown,
            };
            1.0 / distinct
        })
        .product()
}

/// The fraction of outer rows that have a partner.
fn semi_fraction(o: f64, i: f64, keys: &[KeyDistinct]) -> f64 {
    if keys.is_empty() {
        return 0.5;
    }
    keys.iter()
        .map(|k| match (k.outer, k.inner) {
            (Some(outer), Some(inner)) => (inner.clamp(1.0, i) / outer.clamp(1.0, o)).min(1.0),
            _ => 0.5,
        })
        .product()
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNKNOWN: KeyDistinct = KeyDistinct { outer: None, inner: None };

    fn known(outer: f64, inner: f64) -> KeyDistinct {
        KeyDistinct { outer: Some(outer), inner: Some(inner) }
    }

    #[test]
    fn unknown_keys_keep_the_larger_side() {
        assert_eq!(join_rows(JoinType::Inner, 1_000_000.0, 5_000.0, &[UNKNOWN], false), 1_000_000.0);
        assert_eq!(join_rows(JoinType::Inner, 10.0, 20.0, &[], false), 200.0);
    }

    #[test]
    fn distinct_values_divide_the_product() {
        // 1M rows over 1000 values joined with 100 rows, each a value: 100 × 1000 rows.
        let rows = join_rows(JoinType::Inner, 1_000_000.0, 100.0, &[known(1000.0, 100.0)], false);
        assert!((rows - 100_000.0).abs() < 1e-6, "{rows}");
        // Distinct values beyond a side's rows (a filtered table) count as its rows.
        let rows = join_rows(JoinType::Inner, 50.0, 50.0, &[known(1e6, 1e6)], false);
        assert!((rows - 50.0).abs() < 1e-6, "{rows}");
    }

    #[test]
    fn outer_joins_keep_their_preserved_rows() {
        let keys = [known(1000.0, 1000.0)];
        assert_eq!(join_rows(JoinType::Left, 1000.0, 10.0, &keys, false), 1000.0);
        assert_eq!(join_rows(JoinType::Right, 10.0, 1000.0, &keys, false), 1000.0);
        assert_eq!(join_rows(JoinType::Full, 300.0, 400.0, &keys, false), 400.0);
    }

    #[test]
    fn semi_and_anti_joins_split_the_outer_rows() {
        let keys = [known(1000.0, 100.0)];
        assert!((join_rows(JoinType::Semi, 10_000.0, 100.0, &keys, false) - 1000.0).abs() < 1e-6);
        assert!((join_rows(JoinType::Anti, 10_000.0, 100.0, &keys, false) - 9000.0).abs() < 1e-6);
        assert_eq!(join_rows(JoinType::Semi, 10_000.0, 100.0, &[UNKNOWN], false), 5000.0);
    }
}
