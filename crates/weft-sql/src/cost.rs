//! The cost model: PostgreSQL's formulas (`costsize.c`) and default constants, reduced
//! to the nodes weft has and to the statistics it keeps (a table's row count and size,
//! ANALYZE's column statistics through `selectivity.rs`). The planner compares the costs
//! of access paths (`access_path.rs`); EXPLAIN prints them.
//!
//! Units are PostgreSQL's: reading one page sequentially costs `SEQ_PAGE_COST` = 1.
//!
//! | node | startup | total | rows |
//! |---|---|---|---|
//! | Seq Scan | 0 | pages × seq_page_cost + tuples × (cpu_tuple_cost + quals × cpu_operator_cost) | tuples × selectivity |
//! | Parallel Seq Scan | 0 | pages × seq_page_cost + CPU part / divisor | rows / divisor |
//! | Function Scan (generate_series) | 0 | count × cpu_tuple_cost (+ quals) | count × selectivity (the count is exact, as PostgreSQL's support function knows it) |
//! | Values Scan | 0 | rows × (cpu_tuple_cost + cpu_operator_cost) + operators × cpu_operator_cost | rows |
//! | Result | 0 | cpu_tuple_cost + operators × cpu_operator_cost | 1 |
//! | Subquery Scan | child startup | child total + rows × cpu_tuple_cost (+ quals) | child rows × selectivity |
//! | Gather | child startup + parallel_setup_cost | child total + parallel_setup_cost + rows × parallel_tuple_cost | child rows × divisor |
//! | Gather Merge | Gather's + heap build (2 × cpu_operator_cost × P log2 P) | + rows × (2 × cpu_operator_cost × log2 P + cpu_operator_cost + 1.05 × parallel_tuple_cost) | as Gather |
//! | Sort | input total + 2 × cpu_operator_cost × N log2 N (top-N: N log2 2K; spilling: + 2 × pages × passes) | startup + cpu_operator_cost × N | N (or K) |
//! | Aggregate | input total + input rows × (aggregates + argument operators) × cpu_operator_cost | startup + cpu_tuple_cost | 1 |
//! | HashAggregate | as Aggregate + input rows × keys × cpu_operator_cost | startup + groups × cpu_tuple_cost | groups × HAVING selectivity |
//! | Limit | input startup + run × offset / N | startup + run × limit / N | min(limit, N − offset) |
//!
//! where `divisor` is PostgreSQL's parallel divisor: the workers, plus the leader's share
//! `1 − 0.3 × workers` when it participates and that share is positive. Expression cost
//! counts one `cpu_operator_cost` per operator, function call or cast, evaluated once per
//! input row.
//!
//! **Rows.** A table's tuples are the catalog's `row_count` (kept exact by every writing
//! statement); when it is zero but the relation has pages, pages × tuples-per-page from
//! the estimated width. Estimates are clamped to at least one row, as PostgreSQL's
//! `clamp_row_est` does.
//!
//! **Selectivity**: `selectivity.rs` — ANALYZE's statistics when usable, else
//! PostgreSQL's defaults (`selfuncs.h`): `=` 0.005 (`DEFAULT_EQ_SEL`), `<>` 0.995, `<`
//! `<=` `>` `>=` 1/3 (`DEFAULT_INEQ_SEL`), a lower and upper bound on one column 0.005
//! (`DEFAULT_RANGE_INEQ_SEL`), `IS NULL` 0.005 and `IS NOT NULL` 0.995
//! (`DEFAULT_UNK_SEL`), a boolean column 0.5, `AND` multiplies, `OR` is `s1 + s2 − s1 s2`
//! (an IN list: the sum), `NOT` of a comparison is its negator's (`NOT (a < 1)` is
//! `a >= 1`, as the planner rewrites it), other `NOT`s `1 − s`, a constant true / false or
//! NULL is 1 / 0, anything else 0.5.
//!
//! **Index scans**: [`index_scan_cost`] (PostgreSQL's `cost_index` with
//! `btcostestimate`'s descent cost); sequential scans [`seq_scan_cost`].
//!
//! **Groups** of a GROUP BY: the product, over keys, of the key's distinct values —
//! exact for a `generate_series` column, otherwise `DEFAULT_NUM_DISTINCT` = 200 — clamped
//! to the input rows.
//!
//! **Width** of a row: the sum of its columns' average widths: 1 (bool), 4 (int4), 8
//! (int8, float8), 18 (weft's fixed numeric), and for text 32 (PostgreSQL's
//! `get_typavgwidth` default) — except for a table's text columns, measured from its
//! size: the bytes per row left after the fixed columns and per-tuple overhead, shared
//! among its text columns.

use weft_common::DataType;
use weft_exec::expr::Expr;

pub const SEQ_PAGE_COST: f64 = 1.0;
pub const RANDOM_PAGE_COST: f64 = 4.0;
pub const CPU_INDEX_TUPLE_COST: f64 = 0.005;
/// PostgreSQL's cost of a disabled plan kind (`enable_seqscan = off`, ...).
pub const DISABLE_COST: f64 = 1.0e10;
pub const CPU_TUPLE_COST: f64 = 0.01;
pub const CPU_OPERATOR_COST: f64 = 0.0025;
pub const PARALLEL_TUPLE_COST: f64 = 0.1;
pub const PARALLEL_SETUP_COST: f64 = 1000.0;
/// Share of key matches a join filter keeps when nothing is known (PostgreSQL's default
/// selectivity of an opaque clause).
pub const DEFAULT_JOIN_FILTER_SELECTIVITY: f64 = 1.0 / 3.0;

pub use crate::selectivity::DEFAULT_NUM_DISTINCT;

/// A varlena column's width when nothing is known (`get_typavgwidth`).
const DEFAULT_VARLENA_WIDTH: f64 = 32.0;
/// Per-tuple bytes on a heap page besides the row: line pointer and xmin.
const HEAP_TUPLE_OVERHEAD: f64 = 4.0 + 8.0;
/// Usable bytes of a heap page (page size less its header).
const HEAP_PAGE_BYTES: f64 = (weft_storage::PAGE_SIZE - 24) as f64;

/// One node's estimate, as EXPLAIN prints it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub startup: f64,
    pub total: f64,
    pub rows: f64,
    pub width: f64,
}

/// PostgreSQL's `clamp_row_est`: at least one row, a whole number.
pub fn clamp_rows(rows: f64) -> f64 {
    if rows.is_nan() || rows <= 1.0 {
        1.0
    } else {
        rows.round()
    }
}

/// PostgreSQL's `get_parallel_divisor`.
pub fn parallel_divisor(workers: usize, leader_participates: bool) -> f64 {
    let mut divisor = workers as f64;
    if leader_participates {
        let leader = 1.0 - 0.3 * workers as f64;
        if leader > 0.0 {
            divisor += leader;
        }
    }
    divisor.max(1.0)
}

/// The average width of a value of `data_type` when nothing is measured.
pub fn type_width(data_type: DataType) -> f64 {
    match data_type.fixed_width() {
        Some(width) => width as f64,
        None => DEFAULT_VARLENA_WIDTH,
    }
}

/// Per-column widths of a heap table's rows: fixed types by their size, text columns
/// measured from the table's size when it has rows (see the module documentation).
pub fn heap_column_widths(types: &[DataType], row_count: u64, nblocks: u32) -> Vec<f64> {
    let var_columns = types.iter().filter(|t| t.fixed_width().is_none()).count();
    let mut widths: Vec<f64> = types.iter().map(|t| type_width(*t)).collect();
    if var_columns > 0 && row_count > 0 && nblocks > 0 {
        let per_row = HEAP_PAGE_BYTES * nblocks as f64 / row_count as f64;
        let fixed: f64 = types.iter().filter_map(|t| t.fixed_width()).map(|w| w as f64).sum();
        let bitmap = types.len().div_ceil(8) as f64;
        // Each text value also carries a four-byte length.
        let left = per_row - HEAP_TUPLE_OVERHEAD - bitmap - fixed - 4.0 * var_columns as f64;
        let each = (left / var_columns as f64).max(1.0);
        for (width, t) in widths.iter_mut().zip(types) {
            if t.fixed_width().is_none() {
                *width = each;
            }
        }
    }
    widths
}

/// A heap table's tuples: the catalog's count, or, when that is zero on a table with
/// pages (never the case after weft's own writes), what the pages would hold.
pub fn heap_tuples(row_count: u64, nblocks: u32, row_width: f64) -> f64 {
    if row_count > 0 || nblocks == 0 {
        return row_count as f64;
    }
    let per_page = (HEAP_PAGE_BYTES / (row_width + HEAP_TUPLE_OVERHEAD)).floor().max(1.0);
    per_page * nblocks as f64
}

/// Operators, function calls and casts in `expr`: its cost per evaluation in units of
/// `cpu_operator_cost`.
pub fn operator_count(expr: &Expr) -> f64 {
    match expr {
        // The subquery runs once per statement, not per row.
        Expr::Column { .. } | Expr::Literal { .. } | Expr::ScalarSubquery(_) | Expr::Param { .. } => 0.0,
        // Not costed yet: a subplan's plan runs per row.
        Expr::SubPlan { args, .. } => args.iter().map(operator_count).sum(),
        Expr::Cast { expr, .. } | Expr::ApplyModifier { expr, .. } | Expr::Unary { expr, .. } => 1.0 + operator_count(expr),
        Expr::IsNull { expr, .. } => operator_count(expr),
        Expr::Binary { left, right, .. } => 1.0 + operator_count(left) + operator_count(right),
        Expr::Case { whens, otherwise, .. } => {
            whens.iter().map(|(c, r)| operator_count(c) + operator_count(r)).sum::<f64>()
                + otherwise.as_deref().map_or(0.0, operator_count)
        }
        Expr::Coalesce { args, .. } => args.iter().map(operator_count).sum(),
        Expr::Function { args, .. } => 1.0 + args.iter().map(operator_count).sum::<f64>(),
    }
}

/// The fraction of rows for which the predicate is true, from PostgreSQL's defaults
/// (`selectivity.rs` with nothing known about the columns).
pub fn selectivity(predicate: &Expr) -> f64 {
    crate::selectivity::clause_selectivity(predicate, &crate::selectivity::RelStats::none())
}

/// PostgreSQL's `effective_cache_size` default (4GB) in pages: how much of a table the
/// Mackert–Lohman formula assumes stays cached during one index scan.
pub const EFFECTIVE_CACHE_PAGES: f64 = 524_288.0;

/// PostgreSQL's `index_pages_fetched` (Mackert and Lohman) for one scan: distinct pages
/// of a `pages`-page table read when fetching `tuples` rows in random order.
pub fn index_pages_fetched(tuples: f64, pages: f64) -> f64 {
    let t = pages.max(1.0);
    let b = EFFECTIVE_CACHE_PAGES.max(1.0);
    let fetched = if t <= b {
        let f = (2.0 * t * tuples) / (2.0 * t + tuples);
        f.min(t)
    } else {
        let lim = (2.0 * t * b) / (2.0 * t - b);
        if tuples <= lim {
            (2.0 * t * tuples) / (2.0 * t + tuples)
        } else {
            b + (tuples - lim) * (t - b) / t
        }
    };
    fetched.ceil()
}

/// What an index scan's cost depends on (PostgreSQL's `cost_index` and
/// `btcostestimate` inputs).
#[derive(Clone, Copy, Debug)]
pub struct IndexScanInput {
    /// Rows and pages of the table.
    pub tuples: f64,
    pub heap_pages: f64,
    /// Pages of the index file (metapage included) and its entries.
    pub index_pages: f64,
    pub index_tuples: f64,
    /// Entries read, over all ranges.
    pub entries: f64,
    /// Ranges scanned (one descent each).
    pub scans: f64,
    /// Index conditions checked per entry.
    pub index_quals: usize,
    /// The fraction of entries read that pass the conditions checked on their keys
    /// (conditions on later index columns): the others are not fetched from the heap.
    pub key_check_selectivity: f64,
    /// Correlation of the index's order with the heap's (its leading column's, times
    /// 0.75 for several columns, as PostgreSQL's `btcostestimate`).
    pub correlation: f64,
    /// Index-only: the fraction of entries whose heap row must still be visited;
    /// `None` for a plain index scan.
    pub index_only_heap_frac: Option<f64>,
    /// Heap pages the entries point to, when counted (a probe of the index), replacing
    /// the Mackert–Lohman / correlation estimate.
    pub counted_heap_pages: Option<(f64, f64)>,
}

/// An index scan's estimate: startup, total (filters not included), heap rows fetched.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexScanCost {
    pub startup: f64,
    pub total: f64,
    pub heap_rows: f64,
}

/// PostgreSQL's cost of a B-tree index scan, filters aside (they are the caller's):
/// startup is the descent (`ceil(log2 N) × cpu_operator_cost` plus
/// `50 × cpu_operator_cost` per level); then the index pages in proportion to the
/// entries read at `random_page_cost`, `cpu_index_tuple_cost` + one operator per
/// condition per entry, the heap pages between the uncorrelated Mackert–Lohman count at
/// `random_page_cost` and the perfectly correlated sequential run, interpolated by the
/// squared correlation (only the not-all-visible share of them for an index-only scan),
/// and `cpu_tuple_cost` per row fetched.
pub fn index_scan_cost(input: &IndexScanInput) -> IndexScanCost {
    let index_tuples = input.index_tuples.max(1.0);
    let entries = input.entries.max(0.0);
    let scans = input.scans.max(1.0);
    // The descent, once per range.
    let mut height = 0.0;
    let mut level_pages = (input.index_pages - 1.0).max(1.0);
    while level_pages > 1.0 {
        level_pages /= 256.0;
        height += 1.0;
    }
    let descent = index_tuples.log2().ceil().max(0.0) * CPU_OPERATOR_COST + (height + 1.0) * 50.0 * CPU_OPERATOR_COST;
    let startup = descent;
    let leaf_pages = if input.index_pages > 1.0 { (entries * input.index_pages / index_tuples).ceil().max(1.0) } else { 1.0 };
    let index_io = leaf_pages.min(input.index_pages.max(1.0)) * RANDOM_PAGE_COST;
    let index_cpu = entries * (CPU_INDEX_TUPLE_COST + input.index_quals as f64 * CPU_OPERATOR_COST);
    let heap_rows = entries * input.key_check_selectivity.clamp(0.0, 1.0);
    let visit_frac = input.index_only_heap_frac.unwrap_or(1.0).clamp(0.0, 1.0);
    let heap_io = match input.counted_heap_pages {
        Some((random, sequential)) => {
            (random * RANDOM_PAGE_COST + sequential * SEQ_PAGE_COST) * visit_frac * input.key_check_selectivity.clamp(0.0, 1.0)
        }
        None => {
            let max_pages = (index_pages_fetched(heap_rows, input.heap_pages) * visit_frac).ceil();
            let max_io = max_pages * RANDOM_PAGE_COST;
            let selectivity = if input.tuples > 0.0 { (heap_rows / input.tuples).min(1.0) } else { 1.0 };
            let min_pages = (selectivity * input.heap_pages * visit_frac).ceil();
            let min_io = if min_pages > 0.0 { RANDOM_PAGE_COST + (min_pages - 1.0).max(0.0) * SEQ_PAGE_COST } else { 0.0 };
            let c2 = input.correlation * input.correlation;
            max_io + c2 * (min_io - max_io)
        }
    };
    let total = startup + (scans - 1.0) * descent + index_io + index_cpu + heap_io + heap_rows * CPU_TUPLE_COST;
    IndexScanCost { startup, total, heap_rows }
}

/// A sequential scan's total cost without filters; with `workers`, the parallel scan
/// under its Gather (rows out: `out_rows`).
pub fn seq_scan_cost(pages: f64, tuples: f64, filter_ops: f64, out_rows: f64, workers: usize, leader_participates: bool) -> f64 {
    let cpu = tuples * (CPU_TUPLE_COST + filter_ops * CPU_OPERATOR_COST);
    if workers == 0 {
        return pages * SEQ_PAGE_COST + cpu;
    }
    let divisor = parallel_divisor(workers, leader_participates);
    pages * SEQ_PAGE_COST + cpu / divisor + PARALLEL_SETUP_COST + out_rows * PARALLEL_TUPLE_COST
}

/// Startup and total cost of sorting `rows` rows of `width` bytes whose input costs
/// `input` (PostgreSQL's `cost_sort`): in memory, N log2 N comparisons at twice
/// `cpu_operator_cost`; top-N (`bound` well below N): N log2 2K; more than `work_mem`
/// bytes: also writing and reading every page once per merge pass (merge order 6 runs
/// per pass, a simplification of `tuplesort_merge_order`).
pub fn sort_cost(input: &Estimate, rows: f64, width: f64, bound: Option<f64>, work_mem: usize) -> (f64, f64) {
    let n = rows.max(2.0);
    let comparison = 2.0 * CPU_OPERATOR_COST;
    let bytes = rows * (width + 16.0);
    let mut startup = input.total;
    match bound {
        Some(k) if 2.0 * k < n && bytes * k / n <= work_mem as f64 => {
            startup += comparison * n * (2.0 * k).max(2.0).log2();
        }
        _ => {
            startup += comparison * n * n.log2();
            if bytes > work_mem as f64 {
                let pages = (bytes / weft_storage::PAGE_SIZE as f64).ceil();
                let runs = (bytes / work_mem.max(1) as f64).ceil();
                let passes = runs.log(6.0).ceil().max(1.0);
                startup += 2.0 * pages * passes * SEQ_PAGE_COST;
            }
        }
    }
    (startup, startup + CPU_OPERATOR_COST * n)
}

/// Limit's cost and rows (PostgreSQL's `adjust_limit_rows_costs`).
pub fn limit(input: &Estimate, limit: Option<u64>, offset: u64) -> Estimate {
    let mut out = *input;
    let run = input.total - input.startup;
    if offset > 0 {
        let offset_rows = (offset as f64).min(out.rows);
        if input.rows > 0.0 {
            out.startup += run * offset_rows / input.rows;
        }
        out.rows = clamp_rows(out.rows - offset_rows);
    }
    if let Some(limit) = limit {
        let count_rows = (limit as f64).min(out.rows);
        if input.rows > 0.0 {
            out.total = out.startup + run * count_rows / input.rows;
        }
        out.rows = clamp_rows(count_rows);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_common::Datum;
    use weft_exec::expr::BinaryOp;

    fn col(i: usize) -> Expr {
        Expr::Column { index: i, data_type: DataType::Int4 }
    }

    fn cmp(op: BinaryOp) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(col(0)),
            right: Box::new(Expr::Literal { value: Datum::Int4(5), data_type: DataType::Int4 }),
            data_type: DataType::Bool,
        }
    }

    #[test]
    fn default_selectivities() {
        assert_eq!(selectivity(&cmp(BinaryOp::Eq)), 0.005);
        assert!((selectivity(&cmp(BinaryOp::Gt)) - 1.0 / 3.0).abs() < 1e-12);
        // A lower and an upper bound on one column: DEFAULT_RANGE_INEQ_SEL.
        let and = Expr::Binary { op: BinaryOp::And, left: Box::new(cmp(BinaryOp::Gt)), right: Box::new(cmp(BinaryOp::Lt)), data_type: DataType::Bool };
        assert!((selectivity(&and) - 0.005).abs() < 1e-12);
        let both_gt = Expr::Binary { op: BinaryOp::And, left: Box::new(cmp(BinaryOp::Gt)), right: Box::new(cmp(BinaryOp::Eq)), data_type: DataType::Bool };
        assert!((selectivity(&both_gt) - 0.005 / 3.0).abs() < 1e-12);
        let or = Expr::Binary { op: BinaryOp::Or, left: Box::new(cmp(BinaryOp::Eq)), right: Box::new(cmp(BinaryOp::Eq)), data_type: DataType::Bool };
        // An OR of equalities on one column is an IN list: the sum.
        assert!((selectivity(&or) - 0.01).abs() < 1e-12);
        assert_eq!(operator_count(&and), 3.0);
    }

    #[test]
    fn index_scan_costs_follow_postgres() {
        // Mackert-Lohman: never more pages than the table, about N for few rows.
        assert_eq!(index_pages_fetched(10.0, 1000.0), 10.0);
        assert_eq!(index_pages_fetched(1e6, 1000.0), 1000.0);
        let base = IndexScanInput {
            tuples: 100_000.0,
            heap_pages: 1000.0,
            index_pages: 300.0,
            index_tuples: 100_000.0,
            entries: 5000.0,
            scans: 1.0,
            index_quals: 1,
            key_check_selectivity: 1.0,
            correlation: 0.0,
            index_only_heap_frac: None,
            counted_heap_pages: None,
        };
        let random = index_scan_cost(&base);
        let correlated = index_scan_cost(&IndexScanInput { correlation: 1.0, ..base });
        let index_only = index_scan_cost(&IndexScanInput { index_only_heap_frac: Some(0.0), ..base });
        let half_checked = index_scan_cost(&IndexScanInput { index_only_heap_frac: Some(0.5), ..base });
        assert!(correlated.total < random.total && index_only.total < correlated.total);
        assert!(index_only.total < half_checked.total && half_checked.total < random.total);
        assert_eq!(random.startup, correlated.startup);
        assert_eq!(random.heap_rows, 5000.0);
        // Correlated: one random page then 49 sequential ones.
        let heap_io = correlated.total - index_only.total;
        assert!((heap_io - (4.0 + 49.0) - 0.0).abs() < 1e-6, "{heap_io}");
        let checked = index_scan_cost(&IndexScanInput { key_check_selectivity: 0.1, ..base });
        assert_eq!(checked.heap_rows, 500.0);
        assert!(checked.total < random.total);
        // Several ranges descend several times.
        let ranges = index_scan_cost(&IndexScanInput { scans: 10.0, ..base });
        assert!(ranges.total > random.total);
    }

    #[test]
    fn parallel_divisor_is_postgres() {
        assert_eq!(parallel_divisor(0, true), 1.0);
        assert!((parallel_divisor(2, true) - 2.4).abs() < 1e-12);
        assert_eq!(parallel_divisor(4, true), 4.0);
        assert_eq!(parallel_divisor(2, false), 2.0);
    }

    #[test]
    fn sort_costs_grow_with_n_log_n_and_top_n_is_cheaper() {
        let input = Estimate { startup: 0.0, total: 100.0, rows: 10_000.0, width: 4.0 };
        let (startup, total) = sort_cost(&input, 10_000.0, 4.0, None, 4 << 20);
        let expected = 100.0 + 2.0 * CPU_OPERATOR_COST * 10_000.0 * 10_000f64.log2();
        assert!((startup - expected).abs() < 1e-9);
        assert!((total - startup - CPU_OPERATOR_COST * 10_000.0).abs() < 1e-9);
        let (top_n, _) = sort_cost(&input, 10_000.0, 4.0, Some(10.0), 4 << 20);
        assert!(top_n < startup);
        let (spilled, _) = sort_cost(&input, 10_000.0, 4.0, None, 64 << 10);
        assert!(spilled > startup);
    }

    #[test]
    fn limit_takes_its_fraction() {
        let input = Estimate { startup: 10.0, total: 110.0, rows: 1000.0, width: 4.0 };
        let l = limit(&input, Some(10), 0);
        assert_eq!(l.rows, 10.0);
        assert!((l.total - 11.0).abs() < 1e-9);
        let l = limit(&input, Some(10), 100);
        assert!((l.startup - 20.0).abs() < 1e-9);
        assert!((l.total - 21.0).abs() < 1e-9);
        assert_eq!(clamp_rows(0.2), 1.0);
    }

    #[test]
    fn heap_widths_are_measured_from_the_table_size() {
        // 100 rows of (int4, text) in 10 pages: about 817 bytes a row.
        let widths = heap_column_widths(&[DataType::Int4, DataType::Text], 100, 10);
        assert_eq!(widths[0], 4.0);
        assert!(widths[1] > 700.0 && widths[1] < 815.0, "{widths:?}");
        assert_eq!(heap_column_widths(&[DataType::Text], 0, 0), vec![32.0]);
        assert_eq!(heap_tuples(0, 2, 4.0), 2.0 * (8168.0f64 / 16.0).floor());
    }
}
