//! Selectivity of WHERE clauses over one table: PostgreSQL's `selfuncs.c` and
//! `clausesel.c`, reduced to weft's operators, from the table's ANALYZE statistics when
//! it has usable ones and from PostgreSQL's defaults otherwise.
//!
//! | clause | with statistics | without |
//! |---|---|---|
//! | `v = c` | the MCV's frequency, else `(1 − Σ mcv − null_frac) / (n_distinct − #mcv)` capped by the least MCV frequency (`var_eq_const`) | `1 / n_distinct` when known (unique column: 1/rows; boolean: 1/2), else `DEFAULT_EQ_SEL` 0.005 (1/rows below 200 rows) |
//! | `v = p` (`p` a subplan's parameter, known when it runs) | `(1 − null_frac) / n_distinct`, at most the commonest value's frequency (`var_eq_non_const`) | `1 / n_distinct` when known, else 1/200 |
//! | `v <> c` | `1 − eq − null_frac` | 0.995 |
//! | `v < c` ... | MCVs that satisfy it, plus the histogram fraction (interpolated within the bucket, text by its leading bytes) of the rest (`scalarineqsel`) | `DEFAULT_INEQ_SEL` 1/3 |
//! | `lo < v AND v < hi` | `s(v > lo) + s(v < hi) − 1 + null_frac` (`clauselist_selectivity`'s range pairs) | `DEFAULT_RANGE_INEQ_SEL` 0.005 |
//! | `v IN (…)` (an OR of equalities) | the sum of the equalities' | the same |
//! | `v IS [NOT] NULL` | `null_frac` (or 1 − it) | 0.005 (0.995) |
//!
//! `AND` multiplies (after pairing ranges), `OR` is `s1 + s2 − s1 s2`, `NOT` is the
//! negator's selectivity when the planner would rewrite it, else `1 − s`; anything else
//! is 0.5. A constant side may be any expression without columns or volatile functions
//! (it is folded). Statistics are "usable" while the table's row count has moved by less
//! than 50 rows + 10 % since ANALYZE — PostgreSQL's autovacuum would have analyzed it
//! again by then (`autovacuum_analyze_threshold` / `_scale_factor`); weft has no
//! autovacuum, so older statistics are set aside rather than trusted.

use std::cmp::Ordering;

use weft_access::catalog::{Catalog, TableMeta};
use weft_access::stats::{ColumnStats, TableStats};
use weft_common::{DataType, Datum};
use weft_exec::expr::{cast_datum, compare_datums, BinaryOp, EvalContext, Expr, UnaryOp};

use crate::exprutil::{is_volatile, walk};

pub const DEFAULT_EQ_SEL: f64 = 0.005;
pub const DEFAULT_INEQ_SEL: f64 = 1.0 / 3.0;
pub const DEFAULT_RANGE_INEQ_SEL: f64 = 0.005;
pub const DEFAULT_UNK_SEL: f64 = 0.005;
pub const DEFAULT_NOT_UNK_SEL: f64 = 1.0 - DEFAULT_UNK_SEL;
pub const DEFAULT_SEL: f64 = 0.5;
pub const DEFAULT_NUM_DISTINCT: f64 = 200.0;

/// What is known about the columns of a pipeline's rows.
#[derive(Clone, Debug, Default)]
pub struct RelStats<'a> {
    /// The table's statistics, when usable.
    pub stats: Option<&'a TableStats>,
    /// Table column of each pipeline column (empty: the row is not a table's).
    pub columns: Vec<usize>,
    /// Rows of the table.
    pub tuples: f64,
    /// Table columns that a one-column unique index makes distinct.
    pub unique: Vec<usize>,
}

/// The statistics of `table` if they are still worth trusting (see the module comment).
pub fn usable_stats<'a>(catalog: &'a Catalog, table: &TableMeta) -> Option<&'a TableStats> {
    let stats = catalog.table_stats(table)?;
    if stats.sample_rows == 0 {
        return None;
    }
    let moved = (table.row_count as f64 - stats.rows as f64).abs();
    (moved <= 50.0 + 0.1 * stats.rows as f64).then_some(stats)
}

impl<'a> RelStats<'a> {
    /// Nothing known: PostgreSQL's defaults everywhere.
    pub fn none() -> RelStats<'static> {
        RelStats::default()
    }

    /// A scan of `table` producing table columns `columns`.
    pub fn for_table(catalog: &'a Catalog, table: &TableMeta, columns: &[usize]) -> RelStats<'a> {
        let unique = catalog
            .indexes_of(&table.name)
            .filter(|i| i.unique && i.columns.len() == 1)
            .map(|i| i.columns[0].column)
            .collect();
        RelStats { stats: usable_stats(catalog, table), columns: columns.to_vec(), tuples: table.row_count as f64, unique }
    }

    fn table_column(&self, pipeline_column: usize) -> Option<usize> {
        self.columns.get(pipeline_column).copied()
    }

    /// Statistics of a pipeline column.
    pub fn column_stats(&self, pipeline_column: usize) -> Option<&'a ColumnStats> {
        let c = self.table_column(pipeline_column)?;
        self.stats.and_then(|s| s.columns.get(c))
    }

    /// Statistics of a table column.
    pub fn table_column_stats(&self, table_column: usize) -> Option<&'a ColumnStats> {
        self.stats.and_then(|s| s.columns.get(table_column))
    }

    fn is_unique(&self, pipeline_column: usize) -> bool {
        self.table_column(pipeline_column).is_some_and(|c| self.unique.contains(&c))
    }

    /// Distinct non-null values of a pipeline column, when known (PostgreSQL's
    /// `get_variable_numdistinct` without its default).
    pub fn distinct(&self, pipeline_column: usize, data_type: DataType) -> Option<f64> {
        if self.is_unique(pipeline_column) && self.tuples >= 1.0 {
            return Some(self.tuples);
        }
        if let Some(d) = self.column_stats(pipeline_column).and_then(|s| s.distinct_values(self.tuples)) {
            return Some(d.min(self.tuples.max(1.0)));
        }
        (data_type == DataType::Bool).then_some(2.0)
    }

    fn null_frac(&self, pipeline_column: usize) -> Option<f64> {
        self.column_stats(pipeline_column).map(|s| s.null_frac)
    }
}

/// The value of an expression without columns or volatile functions, folded.
pub fn constant_value(e: &Expr) -> Option<Datum> {
    if let Expr::Literal { value, .. } = e {
        return Some(value.clone());
    }
    let mut has_column = false;
    walk(e, &mut |n| has_column |= matches!(n, Expr::Column { .. }));
    if has_column || is_volatile(e) {
        return None;
    }
    thread_local! {
        static EVAL: EvalContext = EvalContext::with_seed(0);
    }
    EVAL.with(|eval| e.eval(&[], eval).ok())
}

/// A column of the row, seen through a cast that widens it (int4 to int8, numeric or
/// float8; int8 to numeric or float8; numeric to float8): the column's index.
pub fn column_of(e: &Expr) -> Option<usize> {
    match e {
        Expr::Column { index, .. } => Some(*index),
        Expr::Cast { expr, to } => match (expr.as_ref(), to) {
            (
                Expr::Column { index, data_type: DataType::Int4 },
                DataType::Int8 | DataType::Numeric | DataType::Float8,
            )
            | (Expr::Column { index, data_type: DataType::Int8 }, DataType::Numeric | DataType::Float8)
            | (Expr::Column { index, data_type: DataType::Numeric }, DataType::Float8) => Some(*index),
            _ => None,
        },
        _ => None,
    }
}

/// `Column op constant` with the column on the left (the operator flipped if needed).
pub fn column_comparison(e: &Expr) -> Option<(usize, BinaryOp, Datum)> {
    let Expr::Binary { op, left, right, .. } = e else { return None };
    if !matches!(op, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq) {
        return None;
    }
    if let Some(c) = column_of(left) {
        if let Some(v) = constant_value(right) {
            return Some((c, *op, v));
        }
    }
    if let Some(c) = column_of(right) {
        if let Some(v) = constant_value(left) {
            return Some((c, op.commuted(), v));
        }
    }
    None
}

/// An expression known only when a subplan or LATERAL item runs (an index key
/// evaluated when the scan starts): over the run's parameters (at least one), without
/// columns, subqueries or volatile functions.
pub fn is_param_value(e: &Expr) -> bool {
    let (mut param, mut other) = (false, false);
    walk(e, &mut |n| match n {
        Expr::Param { .. } => param = true,
        Expr::Column { .. } | Expr::SubPlan { .. } | Expr::ScalarSubquery(_) => other = true,
        Expr::Function { func, .. } => other |= func.is_volatile(),
        _ => {}
    });
    param && !other
}

/// `column op value` where the value is a parameter expression ([`is_param_value`]):
/// the column (seen through a widening cast), the operator (flipped if needed), the value.
pub fn column_param_comparison(e: &Expr) -> Option<(usize, BinaryOp, &Expr)> {
    let Expr::Binary { op, left, right, .. } = e else { return None };
    if !matches!(op, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq) {
        return None;
    }
    if let (Some(c), true) = (column_of(left), is_param_value(right)) {
        return Some((c, *op, right));
    }
    if let (Some(c), true) = (column_of(right), is_param_value(left)) {
        return Some((c, op.commuted(), left));
    }
    None
}


/// An OR of equalities between one column and constants (how the binder writes an IN
/// list or `= ANY (array)`): the column and the values.
pub fn in_list(e: &Expr) -> Option<(usize, Vec<Datum>)> {
    if let Expr::Coalesce { args, .. } = e {
        return match args.as_slice() {
            // `= ANY` over a one-element array.
            [inner @ Expr::Binary { op: BinaryOp::Eq, .. }] => match column_comparison(inner)? {
                (column, BinaryOp::Eq, value) => Some((column, vec![value])),
                _ => None,
            },
            [inner] => in_list(inner),
            _ => None,
        };
    }
    let Expr::Binary { op: BinaryOp::Or, .. } = e else { return None };
    let mut column = None;
    let mut values = Vec::new();
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Binary { op: BinaryOp::Or, left, right, .. } => {
                stack.push(right);
                stack.push(left);
            }
            other => match column_comparison(other)? {
                (c, BinaryOp::Eq, v) if column.is_none_or(|x| x == c) => {
                    column = Some(c);
                    values.push(v);
                }
                _ => return None,
            },
        }
    }
    Some((column?, values))
}

/// Tighten `column`'s lower (`>`, `>=`) or upper (`<`, `<=`) bound in `ranges` to a
/// selectivity of at most `selectivity`.
fn bound_range(ranges: &mut Vec<(usize, Option<f64>, Option<f64>)>, column: usize, op: BinaryOp, selectivity: f64) {
    let entry = match ranges.iter().position(|r| r.0 == column) {
        Some(at) => &mut ranges[at],
        None => {
            ranges.push((column, None, None));
            ranges.last_mut().expect("pushed")
        }
    };
    let slot = if matches!(op, BinaryOp::Gt | BinaryOp::GtEq) { &mut entry.1 } else { &mut entry.2 };
    *slot = Some(slot.map_or(selectivity, |old: f64| old.min(selectivity)));
}


/// Selectivity of a conjunction (PostgreSQL's `clauselist_selectivity`): a product,
/// except that a lower and an upper bound on one column are taken together.
pub fn clauselist_selectivity(clauses: &[&Expr], rel: &RelStats) -> f64 {
    // Per column: (lower-bound selectivity, upper-bound selectivity).
    let mut ranges: Vec<(usize, Option<f64>, Option<f64>)> = Vec::new();
    let mut s = 1.0;
    for clause in clauses {
        if let Some((column, op @ (BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq), value)) = column_comparison(clause) {
            if !value.is_null() {
                bound_range(&mut ranges, column, op, clause_selectivity(clause, rel));
                continue;
            }
        }
        // A parameter bound pairs like a constant one (PostgreSQL's range pair of two
        // default selectivities is DEFAULT_RANGE_INEQ_SEL).
        if let Some((column, op @ (BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq), _)) = column_param_comparison(clause) {
            bound_range(&mut ranges, column, op, DEFAULT_INEQ_SEL);
            continue;
        }
        s *= clause_selectivity(clause, rel);
    }
    for (column, lower, upper) in ranges {
        s *= match (lower, upper) {
            (Some(lo), Some(hi)) => {
                if lo == DEFAULT_INEQ_SEL || hi == DEFAULT_INEQ_SEL {
                    DEFAULT_RANGE_INEQ_SEL
                } else {
                    let both = lo + hi - 1.0 + rel.null_frac(column).unwrap_or(0.0);
                    if both > 0.0 {
                        both
                    } else if both < -0.01 {
                        DEFAULT_RANGE_INEQ_SEL
                    } else {
                        1.0e-10
                    }
                }
            }
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => 1.0,
        };
    }
    s.clamp(0.0, 1.0)
}

/// Selectivity of one boolean expression over the rows `rel` describes.
pub fn clause_selectivity(e: &Expr, rel: &RelStats) -> f64 {
    let s = match e {
        Expr::Literal { value: Datum::Bool(true), .. } => 1.0,
        Expr::Literal { .. } => 0.0,
        Expr::Binary { op: BinaryOp::And, .. } => clauselist_selectivity(&e.conjuncts(), rel),
        Expr::Binary { op: BinaryOp::Or, left, right, .. } => match in_list(e) {
            Some((column, values)) => {
                let data_type = column_type(e, column);
                values.iter().map(|v| eq_selectivity(column, v, data_type, rel)).sum::<f64>()
            }
            None => {
                let (l, r) = (clause_selectivity(left, rel), clause_selectivity(right, rel));
                l + r - l * r
            }
        },
        // An IN list's marker (`bind.rs`): the identity.
        Expr::Coalesce { args, .. } if args.len() == 1 => clause_selectivity(&args[0], rel),
        Expr::Unary { op: UnaryOp::Not, expr, .. } => match crate::deparse::negate(expr) {
            Some(negated) => clause_selectivity(&negated, rel),
            None => 1.0 - clause_selectivity(expr, rel),
        },
        Expr::IsNull { expr, negated } => {
            let frac = column_of(expr).and_then(|c| rel.null_frac(c));
            match (frac, negated) {
                (Some(f), false) => f,
                (Some(f), true) => 1.0 - f,
                (None, false) => DEFAULT_UNK_SEL,
                (None, true) => DEFAULT_NOT_UNK_SEL,
            }
        }
        Expr::Column { index, data_type: DataType::Bool } => match rel.column_stats(*index) {
            Some(_) => eq_selectivity(*index, &Datum::Bool(true), DataType::Bool, rel),
            None => DEFAULT_SEL,
        },
        Expr::Binary { op: BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq, .. } => {
            match column_comparison(e) {
                Some((column, op, value)) => {
                    let data_type = column_type(e, column);
                    match op {
                        BinaryOp::Eq => eq_selectivity(column, &value, data_type, rel),
                        BinaryOp::NotEq => {
                            if value.is_null() {
                                0.0
                            } else {
                                let nulls = rel.null_frac(column).unwrap_or(0.0);
                                match rel.column_stats(column) {
                                    Some(_) => 1.0 - eq_selectivity(column, &value, data_type, rel) - nulls,
                                    None => 1.0 - DEFAULT_EQ_SEL,
                                }
                            }
                        }
                        op => ineq_selectivity(column, op, &value, rel),
                    }
                }
                None => match (e, column_param_comparison(e)) {
                    (_, Some((column, BinaryOp::Eq, _))) => eq_non_const_selectivity(column, column_type(e, column), rel),
                    (_, Some((column, BinaryOp::NotEq, _))) => {
                        1.0 - eq_non_const_selectivity(column, column_type(e, column), rel) - rel.null_frac(column).unwrap_or(0.0)
                    }
                    (Expr::Binary { op: BinaryOp::Eq, .. }, _) => DEFAULT_EQ_SEL,
                    (Expr::Binary { op: BinaryOp::NotEq, .. }, _) => 1.0 - DEFAULT_EQ_SEL,
                    _ => DEFAULT_INEQ_SEL,
                },
            }
        }
        _ => DEFAULT_SEL,
    };
    s.clamp(0.0, 1.0)
}

/// The type of column `column` as `e` refers to it (before any widening cast).
fn column_type(e: &Expr, column: usize) -> DataType {
    let mut found = None;
    walk(e, &mut |n| {
        if let Expr::Column { index, data_type } = n {
            if *index == column && found.is_none() {
                found = Some(*data_type);
            }
        }
    });
    found.unwrap_or(DataType::Text)
}

/// Compare a statistics value (of the column's type) with a constant (maybe of a wider
/// numeric type).
fn compare_value(stat: &Datum, constant: &Datum) -> Ordering {
    match (stat.data_type(), constant.data_type()) {
        (Some(a), Some(b)) if a != b => match cast_datum(stat.clone(), b) {
            Ok(widened) => compare_datums(&widened, constant),
            Err(_) => compare_datums(stat, constant),
        },
        _ => compare_datums(stat, constant),
    }
}

/// `column = value` (PostgreSQL's `var_eq_const`).
pub fn eq_selectivity(column: usize, value: &Datum, data_type: DataType, rel: &RelStats) -> f64 {
    if value.is_null() {
        return 0.0;
    }
    if rel.is_unique(column) && rel.tuples >= 1.0 {
        return 1.0 / rel.tuples;
    }
    let Some(stats) = rel.column_stats(column) else {
        let distinct = match rel.distinct(column, data_type) {
            Some(d) => d,
            None if rel.tuples >= 1.0 && rel.tuples < DEFAULT_NUM_DISTINCT => rel.tuples,
            None => return DEFAULT_EQ_SEL,
        };
        return 1.0 / distinct.max(1.0);
    };
    for (v, f) in stats.most_common_vals.iter().zip(&stats.most_common_freqs) {
        if compare_value(&v.0, value) == Ordering::Equal {
            return *f;
        }
    }
    let sumcommon: f64 = stats.most_common_freqs.iter().sum();
    let mut selec = (1.0 - sumcommon - stats.null_frac).clamp(0.0, 1.0);
    let distinct = stats.distinct_values(rel.tuples).unwrap_or(DEFAULT_NUM_DISTINCT);
    let other = distinct - stats.most_common_vals.len() as f64;
    if other > 1.0 {
        selec /= other;
    }
    if let Some(least) = stats.most_common_freqs.last() {
        if selec > *least {
            selec = *least;
        }
    }
    selec
}

/// `column = value` for a value known only at run time, such as a subplan's parameter
/// (PostgreSQL's `var_eq_non_const`): the non-NULL fraction over the distinct values
/// (`DEFAULT_NUM_DISTINCT` when unknown), at most the commonest value's frequency.
pub fn eq_non_const_selectivity(column: usize, data_type: DataType, rel: &RelStats) -> f64 {
    if rel.is_unique(column) && rel.tuples >= 1.0 {
        return 1.0 / rel.tuples;
    }
    let distinct = match rel.distinct(column, data_type) {
        Some(d) => d,
        None if rel.tuples >= 1.0 && rel.tuples < DEFAULT_NUM_DISTINCT => rel.tuples,
        None => DEFAULT_NUM_DISTINCT,
    };
    let mut s = 1.0 - rel.null_frac(column).unwrap_or(0.0);
    if distinct > 1.0 {
        s /= distinct;
    }
    if let Some(first) = rel.column_stats(column).and_then(|c| c.most_common_freqs.first()) {
        s = s.min(*first);
    }
    s.clamp(0.0, 1.0)
}

/// `column op value` for `<`, `<=`, `>`, `>=` (PostgreSQL's `scalarineqsel`).
pub fn ineq_selectivity(column: usize, op: BinaryOp, value: &Datum, rel: &RelStats) -> f64 {
    if value.is_null() {
        return 0.0;
    }
    let Some(stats) = rel.column_stats(column) else { return DEFAULT_INEQ_SEL };
    if stats.most_common_vals.is_empty() && stats.histogram_bounds.len() < 2 {
        return if stats.null_frac >= 1.0 { 0.0 } else { DEFAULT_INEQ_SEL };
    }
    let satisfies = |v: &Datum| {
        let o = compare_value(v, value);
        match op {
            BinaryOp::Lt => o == Ordering::Less,
            BinaryOp::LtEq => o != Ordering::Greater,
            BinaryOp::Gt => o == Ordering::Greater,
            _ => o != Ordering::Less,
        }
    };
    let mut mcv_selec = 0.0;
    let mut sumcommon = 0.0;
    for (v, f) in stats.most_common_vals.iter().zip(&stats.most_common_freqs) {
        sumcommon += f;
        if satisfies(&v.0) {
            mcv_selec += f;
        }
    }
    let mut selec = 1.0 - stats.null_frac - sumcommon;
    match histogram_fraction(&stats.histogram_bounds.iter().map(|v| &v.0).collect::<Vec<_>>(), op, value) {
        Some(h) => selec *= h,
        None => selec *= 0.5,
    }
    selec += mcv_selec;
    selec.clamp(0.0, 1.0)
}

/// The fraction of a histogram's population for which `v op value` holds, interpolating
/// within the bucket the constant falls in (`ineq_histogram_selectivity`).
fn histogram_fraction(bounds: &[&Datum], op: BinaryOp, value: &Datum) -> Option<f64> {
    let n = bounds.len();
    if n < 2 {
        return None;
    }
    let inclusive_below = matches!(op, BinaryOp::LtEq | BinaryOp::Gt);
    // Bounds below the constant (or not above it, for <= and >).
    let below = |b: &Datum| {
        let o = compare_value(b, value);
        o == Ordering::Less || (inclusive_below && o == Ordering::Equal)
    };
    let i = bounds.partition_point(|b| below(b));
    let fraction_below = if i == 0 {
        0.0
    } else if i >= n {
        1.0
    } else {
        let bin = interpolate(bounds[i - 1], bounds[i], value).unwrap_or(0.5);
        ((i - 1) as f64 + bin) / (n - 1) as f64
    };
    let mut h = if matches!(op, BinaryOp::Lt | BinaryOp::LtEq) { fraction_below } else { 1.0 - fraction_below };
    // The bounds are approximate: no estimate below a hundredth of a bucket.
    let cutoff = 0.01 / (n - 1) as f64;
    h = h.clamp(cutoff, 1.0 - cutoff);
    Some(h)
}

/// Where `value` falls between `lo` and `hi`, in 0..1 (`convert_to_scalar`).
fn interpolate(lo: &Datum, hi: &Datum, value: &Datum) -> Option<f64> {
    let (l, h, v) = match (lo, hi, value) {
        (Datum::Text(l), Datum::Text(h), Datum::Text(v)) => text_scalars(l, h, v),
        _ => (scalar(lo)?, scalar(hi)?, scalar(value)?),
    };
    if !(l.is_finite() && h.is_finite() && v.is_finite()) || h <= l {
        return None;
    }
    Some(((v - l) / (h - l)).clamp(0.0, 1.0))
}

fn scalar(d: &Datum) -> Option<f64> {
    match d {
        Datum::Bool(b) => Some(*b as u8 as f64),
        Datum::Int4(v) => Some(*v as f64),
        Datum::Int8(v) => Some(*v as f64),
        Datum::Float8(v) if !v.is_nan() => Some(*v),
        Datum::Numeric(n) => Some(n.to_f64()),
        _ => None,
    }
}

/// Three strings as numbers in base 256 after their common prefix (PostgreSQL's
/// `convert_string_to_scalar`, in the C collation).
fn text_scalars(lo: &str, hi: &str, v: &str) -> (f64, f64, f64) {
    let (lo, hi, v) = (lo.as_bytes(), hi.as_bytes(), v.as_bytes());
    let prefix = lo.iter().zip(hi).zip(v).take_while(|((a, b), c)| a == b && b == c).count();
    let to_scalar = |s: &[u8]| {
        let mut num = 0.0;
        let mut denom = 256.0;
        for &byte in s.iter().skip(prefix).take(12) {
            num += byte as f64 / denom;
            denom *= 256.0;
        }
        num
    };
    (to_scalar(lo), to_scalar(hi), to_scalar(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_access::stats::StatValue;

    fn col(i: usize) -> Expr {
        Expr::Column { index: i, data_type: DataType::Int4 }
    }

    fn lit(v: i32) -> Expr {
        Expr::Literal { value: Datum::Int4(v), data_type: DataType::Int4 }
    }

    fn cmp(op: BinaryOp, l: Expr, r: Expr) -> Expr {
        Expr::Binary { op, left: Box::new(l), right: Box::new(r), data_type: DataType::Bool }
    }

    fn and(l: Expr, r: Expr) -> Expr {
        cmp(BinaryOp::And, l, r)
    }

    /// 10000 rows: 10 % NULL, value 7 in 20 % of rows, the rest uniform over 0..1000.
    fn table_stats() -> TableStats {
        TableStats {
            rows: 10_000,
            sample_rows: 10_000,
            pages: 50,
            columns: vec![ColumnStats {
                null_frac: 0.1,
                avg_width: 4.0,
                n_distinct: 1000.0,
                most_common_vals: vec![StatValue(Datum::Int4(7))],
                most_common_freqs: vec![0.2],
                histogram_bounds: (0..=100).map(|i| StatValue(Datum::Int4(i * 10))).collect(),
                correlation: Some(0.0),
            }],
            indexes: Default::default(),
        }
    }

    #[test]
    fn defaults_without_statistics() {
        let rel = RelStats { tuples: 10_000.0, columns: vec![0], ..Default::default() };
        assert_eq!(clause_selectivity(&cmp(BinaryOp::Eq, col(0), lit(5)), &rel), DEFAULT_EQ_SEL);
        assert_eq!(clause_selectivity(&cmp(BinaryOp::Lt, col(0), lit(5)), &rel), DEFAULT_INEQ_SEL);
        let range = and(cmp(BinaryOp::Gt, col(0), lit(5)), cmp(BinaryOp::Lt, col(0), lit(9)));
        assert_eq!(clause_selectivity(&range, &rel), DEFAULT_RANGE_INEQ_SEL);
        let small = RelStats { tuples: 40.0, columns: vec![0], ..Default::default() };
        assert_eq!(clause_selectivity(&cmp(BinaryOp::Eq, col(0), lit(5)), &small), 1.0 / 40.0);
        let unique = RelStats { tuples: 10_000.0, columns: vec![0], unique: vec![0], ..Default::default() };
        assert_eq!(clause_selectivity(&cmp(BinaryOp::Eq, lit(5), col(0)), &unique), 1.0 / 10_000.0);
    }

    #[test]
    fn statistics_drive_the_estimates() {
        let stats = table_stats();
        let rel = RelStats { stats: Some(&stats), columns: vec![0], tuples: 10_000.0, unique: vec![] };
        // The MCV.
        assert_eq!(clause_selectivity(&cmp(BinaryOp::Eq, col(0), lit(7)), &rel), 0.2);
        // Another value: 70 % of rows over 999 other values.
        let other = clause_selectivity(&cmp(BinaryOp::Eq, col(0), lit(500)), &rel);
        assert!((other - 0.7 / 999.0).abs() < 1e-12, "{other}");
        // a < 500: half the histogram (0.35) plus the MCV 7 (0.2).
        let lt = clause_selectivity(&cmp(BinaryOp::Lt, col(0), lit(500)), &rel);
        assert!((lt - 0.55).abs() < 0.01, "{lt}");
        let gt = clause_selectivity(&cmp(BinaryOp::Gt, col(0), lit(500)), &rel);
        assert!((gt - 0.35).abs() < 0.01, "{gt}");
        // 100 <= a <= 200: a tenth of the histogram's 70 %.
        let range = and(cmp(BinaryOp::GtEq, col(0), lit(100)), cmp(BinaryOp::LtEq, col(0), lit(200)));
        let r = clause_selectivity(&range, &rel);
        assert!((r - 0.07).abs() < 0.005, "{r}");
        // Beyond the histogram: a hundredth of a bucket, not zero.
        let beyond = clause_selectivity(&cmp(BinaryOp::Gt, col(0), lit(5000)), &rel);
        assert!(beyond > 0.0 && beyond < 0.001, "{beyond}");
        let is_null = Expr::IsNull { expr: Box::new(col(0)), negated: false };
        assert_eq!(clause_selectivity(&is_null, &rel), 0.1);
        // IN (7, 500): the sum.
        let in_list = cmp(BinaryOp::Or, cmp(BinaryOp::Eq, col(0), lit(7)), cmp(BinaryOp::Eq, col(0), lit(500)));
        assert!((clause_selectivity(&in_list, &rel) - (0.2 + 0.7 / 999.0)).abs() < 1e-12);
        // <> 7: everything else that is not NULL.
        assert!((clause_selectivity(&cmp(BinaryOp::NotEq, col(0), lit(7)), &rel) - 0.7).abs() < 1e-12);
    }

    #[test]
    fn text_interpolates_by_leading_bytes() {
        let (l, h, v) = text_scalars("abc", "abz", "abm");
        assert!(l < v && v < h);
        let bounds = [Datum::Text("a".into()), Datum::Text("c".into())];
        let refs: Vec<&Datum> = bounds.iter().collect();
        let f = histogram_fraction(&refs, BinaryOp::Lt, &Datum::Text("b".into())).unwrap();
        assert!((f - 0.5).abs() < 0.01, "{f}");
    }

    #[test]
    fn widened_columns_and_folded_constants() {
        let widened = Expr::Cast { expr: Box::new(col(2)), to: DataType::Int8 };
        let minus_five = Expr::Unary { op: UnaryOp::Neg, expr: Box::new(lit(5)), data_type: DataType::Int4 };
        let e = cmp(BinaryOp::Lt, minus_five, widened);
        assert_eq!(column_comparison(&e), Some((2, BinaryOp::Gt, Datum::Int4(-5))));
    }
}
