//! Physical plans: what the planner in `weft-sql` hands to the executor.
//!
//! A plan is a small tree whose leaves are *pipelines*: a source (heap scan, series,
//! literal rows, or a materialized sub-plan), then filters and projections, run by every
//! participant on the morsels it takes from the source's shared cursor. Above a pipeline
//! sits at most an aggregate (partial per participant, combined once) and a limit.

use std::ops::Bound;

use weft_access::btree::{BTreeDesc, ScanDirection};
use weft_access::Snapshot;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum};
use weft_storage::{BlockNumber, RelFileLocator};

use std::sync::Arc;

use crate::expr::{Expr, InitPlan};

pub type Row = Vec<weft_common::Datum>;

/// Where a pipeline's rows come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// One row with no columns: `SELECT 1`.
    Single,
    /// A sequential (and, with workers, parallel) scan of a heap table.
    Heap(HeapSource),
    /// `generate_series(start, stop, step)` over int4 or int8.
    Series { start: i64, stop: i64, step: i64, data_type: DataType, label: ScanLabel },
    /// `VALUES (...), (...)`: each row's expressions evaluated once.
    Values(Vec<Vec<Expr>>),
    /// A subquery in FROM, run to completion first.
    Subquery { plan: Box<Plan>, label: ScanLabel },
    /// An index scan (serial): rows of a heap table found through a B-tree.
    Index(Box<IndexSource>),
    /// `generate_series(start, stop [, step])` whose bounds are expressions over no row
    /// but parameters (a LATERAL function reading earlier FROM items' columns), evaluated
    /// when the source starts.
    SeriesExprs { args: Vec<Expr>, data_type: DataType, label: ScanLabel },
    /// `unnest(array) [WITH ORDINALITY]`: the elements (of type `data_type`) of an array
    /// expression over no row but parameters, evaluated when the source starts; with
    /// `ordinality` a second, int8 column numbers them from 1.
    Unnest { array: Expr, data_type: DataType, ordinality: bool, label: ScanLabel },
    /// The working table of the recursive union numbered `id` (PostgreSQL's WorkTable
    /// Scan): the rows the recursive term's previous run produced. The executor fills
    /// `rows` in a copy of the recursive term before each run.
    WorkTable { id: usize, rows: Arc<Vec<Row>>, types: Vec<DataType>, label: ScanLabel },
}

/// A range of index keys: lower and upper bounds, each a key prefix in index order.
pub type KeyRange = (Bound<Vec<Datum>>, Bound<Vec<Datum>>);

/// The key range of an equality `prefix` followed by a value range on the next column,
/// given in index order: `first` is the bound met first in the scan (the upper value bound
/// of a descending column), each `(value, inclusive)`; `None` is an open side. NULLs
/// satisfy no comparison, so an open side stops before the column's NULLs (which sort
/// first when `nulls_first`).
pub fn prefix_range(
    prefix: &[Datum],
    first: Option<&(Datum, bool)>,
    last: Option<&(Datum, bool)>,
    nulls_first: bool,
) -> KeyRange {
    let with = |v: &Datum| {
        let mut key = prefix.to_vec();
        key.push(v.clone());
        key
    };
    let open = || if prefix.is_empty() { Bound::Unbounded } else { Bound::Included(prefix.to_vec()) };
    let lower = match first {
        Some((v, true)) => Bound::Included(with(v)),
        Some((v, false)) => Bound::Excluded(with(v)),
        None if nulls_first => Bound::Excluded(with(&Datum::Null)),
        None => open(),
    };
    let upper = match last {
        Some((v, true)) => Bound::Included(with(v)),
        Some((v, false)) => Bound::Excluded(with(v)),
        None if !nulls_first => Bound::Excluded(with(&Datum::Null)),
        None => open(),
    };
    (lower, upper)
}

/// A key value of [`ParamRanges`]: a constant converted to the key column's type at plan
/// time, or an expression over no row but the parameters of a subplan or LATERAL item,
/// evaluated when the scan starts (each rescan).
#[derive(Clone, Debug)]
pub enum KeyValue {
    Const(Datum),
    Param(Expr),
}

/// Key ranges known only when the scan starts, because some of their values are
/// parameters (`index_scan::param_ranges` makes the [`KeyRange`]s then).
#[derive(Clone, Debug)]
pub struct ParamRanges {
    /// Equality prefixes on the leading key columns, in index order (several for an IN
    /// list of constants).
    pub prefixes: Vec<Vec<KeyValue>>,
    /// Comparisons (`<`, `<=`, `>`, `>=`: key op value) on the key column after the
    /// prefix; the tightest on each side wins. Empty: equality ranges on the prefixes.
    pub bounds: Vec<(crate::expr::BinaryOp, KeyValue)>,
    /// The type of each key column: a parameter's value is converted to it exactly (an
    /// int4 key against an int8 value outside int4's range bounds nothing or everything).
    pub key_types: Vec<DataType>,
    /// Whether the bounded column (the one after the prefix) is descending, and where its
    /// NULLs are.
    pub bound_descending: bool,
    pub bound_nulls_first: bool,
}

/// A B-tree range scan and the heap rows its entries point to (`index_scan.rs`).
#[derive(Clone, Debug)]
pub struct IndexSource {
    /// The table: its columns to produce, snapshot and label, as for a sequential scan.
    pub heap: HeapSource,
    pub index_name: String,
    pub index_rel: RelFileLocator,
    pub desc: BTreeDesc,
    /// The table column of each key column.
    pub key_columns: Vec<usize>,
    /// Key ranges in index order (several for an IN list), disjoint; scanned first to
    /// last, or last to first when the direction is backward.
    pub ranges: Vec<KeyRange>,
    /// When set, the ranges are made from these when the scan starts (and `ranges` is
    /// unused): an index scan inside a subplan or a LATERAL item whose conditions read
    /// the outer row's parameters.
    pub param_ranges: Option<ParamRanges>,
    pub direction: ScanDirection,
    /// Every column the query needs is a key: rows come from the entries, and the heap is
    /// visited only for entries added after the build.
    pub index_only: bool,
    /// The WHERE conjuncts the ranges implement exactly (EXPLAIN's `Index Cond:`), over
    /// the pipeline's row like a filter.
    pub conditions: Vec<Expr>,
    /// Conditions on index columns the ranges do not bound, over the entry's key columns
    /// (`Expr::Column { index }` is key `index`): an entry failing them is skipped before
    /// its heap row is fetched. Their conjuncts are among `conditions` too.
    pub key_filter: Option<Expr>,
    /// The planner's estimate of the heap rows the scan fetches (before any filter).
    pub estimated_rows: f64,
    /// The planner's estimated startup and total cost of the scan itself (descent, index
    /// pages, heap pages, per-entry and per-row CPU), filters not included.
    pub estimated_startup_cost: f64,
    pub estimated_total_cost: f64,
}

/// How EXPLAIN names a scan and its columns (PostgreSQL's range-table alias and column
/// names). Only EXPLAIN reads it; running the plan does not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanLabel {
    /// The alias the query gave the scan (`FROM t AS x`, `generate_series(1, 9) g`,
    /// a subquery's alias), if any.
    pub alias: Option<String>,
    /// Column names as the query sees them (alias renames applied). For a heap scan,
    /// one per table column (indexed like `HeapSource::columns`' values).
    pub columns: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct HeapSource {
    pub table_name: String,
    pub rel: RelFileLocator,
    pub layout: RowLayout,
    /// Table columns to decode, in the order the pipeline's rows carry them.
    pub columns: Vec<usize>,
    pub nblocks: BlockNumber,
    pub snapshot: Snapshot,
    pub label: ScanLabel,
}

/// One row-at-a-time step of a pipeline.
#[derive(Clone, Debug)]
pub enum Step {
    /// Keep rows for which the predicate is true (not false, not NULL).
    Filter(Expr),
    /// Replace the row by these expressions over it.
    Project(Vec<Expr>),
    /// Probe a hash table built from `join.inner`: one row in, zero or more rows out
    /// (`hash_join/`). The table is built by the pipeline's participants before their
    /// first probe; right and full joins emit the unmatched inner rows after the last.
    HashJoin(Box<HashJoin>),
}

/// The kinds of hash join. The row arriving at the step is the *outer* row, the build
/// side's row the *inner* one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinType {
    /// Matching pairs: `outer ++ inner`.
    Inner,
    /// Matching pairs, and each unmatched outer row with NULLs for the inner columns.
    Left,
    /// Matching pairs, and each unmatched inner row with NULLs for the outer columns
    /// (emitted after the probe).
    Right,
    /// Left and right together.
    Full,
    /// The outer row (its columns only), once, when at least one inner row matches.
    Semi,
    /// The outer row (its columns only) when no inner row matches. With
    /// `HashJoin::null_aware`, `NOT IN`'s rules instead.
    Anti,
}

impl JoinType {
    /// Does the output carry the inner columns (after the outer ones)?
    pub fn emits_inner_columns(self) -> bool {
        !matches!(self, JoinType::Semi | JoinType::Anti)
    }

    /// Must unmatched inner rows be emitted after the probe?
    pub fn emits_unmatched_inner(self) -> bool {
        matches!(self, JoinType::Right | JoinType::Full)
    }

    /// Must unmatched outer rows be emitted?
    pub fn emits_unmatched_outer(self) -> bool {
        matches!(self, JoinType::Left | JoinType::Full | JoinType::Anti)
    }
}

/// How the pipeline's participants share a hash join's build side (the seed's three
/// plan shapes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashJoinMode {
    /// The pipeline runs with no workers; one participant builds and probes.
    Serial,
    /// Every participant builds a private table from the whole inner side (its source
    /// read in full by each) and probes it with its share of the outer rows. Never used
    /// for right and full joins (no participant sees every match).
    ParallelOblivious,
    /// One table in shared memory built by all participants together (the inner
    /// source's morsels shared), probed by all; batches in shared temp files.
    ParallelAware,
}

/// One equi-join step of a pipeline (see [`Step::HashJoin`]).
#[derive(Clone, Debug)]
pub struct HashJoin {
    pub join_type: JoinType,
    pub mode: HashJoinMode,
    /// The build side. Its `workers` is ignored: it is read by the participants of the
    /// pipeline the step belongs to (shared morsels when parallel-aware, a full private
    /// read per participant when parallel-oblivious).
    pub inner: Pipeline,
    /// Key expressions over the outer row and over the inner row, pairwise of the same
    /// type (the planner has cast both sides to a common type). Rows match when every
    /// pair is equal; a NULL key never matches.
    pub outer_keys: Vec<Expr>,
    pub inner_keys: Vec<Expr>,
    /// Further ON conditions over `outer ++ inner` (outer columns first), checked on each
    /// key match; a pair failing it is not a match (for outer joins too).
    pub filter: Option<Expr>,
    /// `NOT IN (subquery)` (anti join, one key): no row at all when the inner side has a
    /// NULL key; an outer row with a NULL key is emitted only when the inner side is empty.
    pub null_aware: bool,
    /// Columns of the outer row and of the inner row.
    pub outer_width: usize,
    pub inner_width: usize,
    /// The planner's estimates of the inner side (rows, average row width in bytes), used to
    /// size the table and the first number of batches (PostgreSQL's `ExecChooseHashTableSize`).
    pub estimated_inner_rows: f64,
    pub estimated_inner_width: usize,
    /// The outer key's most common values with their frequencies, most frequent first
    /// (from the statistics of the base-table column a one-column outer key reads; empty
    /// when unknown). Inner tuples of these keys are kept in memory when the join runs in
    /// several batches, so outer rows with them are joined at once and never spilled
    /// (PostgreSQL's skew buckets, `ExecHashBuildSkewHash`).
    pub outer_mcvs: Vec<(Datum, f64)>,
}

impl HashJoin {
    /// The outer row's column that is the whole key, when the key is one plain column
    /// (nearly always): the probe then reads the key in place instead of evaluating it.
    #[inline]
    pub fn outer_key_column(&self) -> Option<usize> {
        match self.outer_keys.as_slice() {
            [Expr::Column { index, .. }] => Some(*index),
            _ => None,
        }
    }

    /// The inner row's column, when the one inner key is a plain column.
    pub fn inner_key_column(&self) -> Option<usize> {
        match self.inner_keys.as_slice() {
            [Expr::Column { index, .. }] => Some(*index),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Pipeline {
    pub source: Source,
    pub steps: Vec<Step>,
    /// Workers to ask for besides the leader; 0 runs the pipeline serially.
    pub workers: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateFunction {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// `bool_and` / `every` and `bool_or`: the minimum and maximum of booleans.
    BoolAnd,
    BoolOr,
    /// `string_agg(text, delimiter)`: the non-NULL values joined, each after its row's
    /// delimiter but the first.
    StringAgg,
    ArrayAgg,
    /// The variance family over int4, int8, numeric (exact, numeric result) and float8
    /// (Youngs-Cramer, float8 result). `stddev` and `variance` are the sample forms but
    /// keep their own names for EXPLAIN.
    Stddev,
    StddevSamp,
    StddevPop,
    Variance,
    VarSamp,
    VarPop,
    /// `bit_and`, `bit_or`, `bit_xor` over int4 / int8.
    BitAnd,
    BitOr,
    BitXor,
    /// The two-argument float8 aggregates `f(Y, X)`: `arg` is Y, `arg2` is X; rows where
    /// either is NULL are skipped.
    Corr,
    CovarPop,
    CovarSamp,
    RegrCount,
    RegrAvgX,
    RegrAvgY,
    RegrSlope,
    RegrIntercept,
    RegrR2,
    RegrSxx,
    RegrSyy,
    RegrSxy,
    /// The ordered-set aggregates `f(direct) WITHIN GROUP (ORDER BY x)` (`ordered_set.rs`):
    /// `arg` is x, `order_by` its one key, `direct` the percentile's fraction (float8).
    PercentileCont,
    PercentileDisc,
    Mode,
    /// The hypothetical-set aggregates `f(h1, ..., hn) WITHIN GROUP (ORDER BY x1, ..., xn)`:
    /// the rank the row (h1, ..., hn) would have among the group's rows. `order_by` holds
    /// the xi, `direct` the hi (each pair of one type), `arg` is x1.
    HypotheticalRank,
    HypotheticalDenseRank,
    HypotheticalPercentRank,
    HypotheticalCumeDist,
}

impl AggregateFunction {
    /// The SQL name (what EXPLAIN prints; `every` is shown as `bool_and`).
    pub fn name(self) -> &'static str {
        use AggregateFunction::*;
        match self {
            CountStar | Count => "count",
            Sum => "sum",
            Avg => "avg",
            Min => "min",
            Max => "max",
            BoolAnd => "bool_and",
            BoolOr => "bool_or",
            StringAgg => "string_agg",
            ArrayAgg => "array_agg",
            Stddev => "stddev",
            StddevSamp => "stddev_samp",
            StddevPop => "stddev_pop",
            Variance => "variance",
            VarSamp => "var_samp",
            VarPop => "var_pop",
            BitAnd => "bit_and",
            BitOr => "bit_or",
            BitXor => "bit_xor",
            Corr => "corr",
            CovarPop => "covar_pop",
            CovarSamp => "covar_samp",
            RegrCount => "regr_count",
            RegrAvgX => "regr_avgx",
            RegrAvgY => "regr_avgy",
            RegrSlope => "regr_slope",
            RegrIntercept => "regr_intercept",
            RegrR2 => "regr_r2",
            RegrSxx => "regr_sxx",
            RegrSyy => "regr_syy",
            RegrSxy => "regr_sxy",
            PercentileCont => "percentile_cont",
            PercentileDisc => "percentile_disc",
            Mode => "mode",
            HypotheticalRank => "rank",
            HypotheticalDenseRank => "dense_rank",
            HypotheticalPercentRank => "percent_rank",
            HypotheticalCumeDist => "cume_dist",
        }
    }

    /// Written `f(...) WITHIN GROUP (ORDER BY ...)`: an ordered-set or hypothetical-set
    /// aggregate.
    pub fn is_ordered_set(self) -> bool {
        use AggregateFunction::*;
        matches!(self, PercentileCont | PercentileDisc | Mode) || self.is_hypothetical()
    }

    pub fn is_hypothetical(self) -> bool {
        use AggregateFunction::*;
        matches!(self, HypotheticalRank | HypotheticalDenseRank | HypotheticalPercentRank | HypotheticalCumeDist)
    }

    /// Takes two arguments (string_agg's value and delimiter, a regression's Y and X).
    pub fn arity(self) -> usize {
        use AggregateFunction::*;
        match self {
            StringAgg | Corr | CovarPop | CovarSamp | RegrCount | RegrAvgX | RegrAvgY | RegrSlope | RegrIntercept | RegrR2
            | RegrSxx | RegrSyy | RegrSxy => 2,
            _ => 1,
        }
    }

    /// One of the two-argument float8 regression aggregates.
    pub fn is_regression(self) -> bool {
        self.arity() == 2 && self != AggregateFunction::StringAgg
    }
}

#[derive(Clone, Debug)]
pub struct AggregateCall {
    pub function: AggregateFunction,
    /// `None` only for `count(*)`.
    pub arg: Option<Expr>,
    /// The second argument, an expression over the input row like `arg`: string_agg's
    /// delimiter, the X of a regression aggregate.
    pub arg2: Option<Expr>,
    /// `FILTER (WHERE ...)`: only rows for which it is true reach the aggregate.
    pub filter: Option<Expr>,
    /// `ORDER BY` inside the call, kept only where the result depends on the order of the
    /// input (string_agg): its rows are sorted by these keys when the aggregate finishes,
    /// so partial states of participants and spill files combine in any order. For an
    /// ordered-set aggregate, its `WITHIN GROUP (ORDER BY ...)`.
    pub order_by: Vec<AggregateOrderKey>,
    /// An ordered-set aggregate's direct arguments (`percentile_cont(0.5)`, `rank(3, 'x')`):
    /// expressions over the input row that read only constants and group keys, so every
    /// row of a group gives the same values. Empty for the other aggregates.
    pub direct: Vec<Expr>,
    /// `f(DISTINCT x)`: each group's distinct non-NULL values of `arg` are collected and
    /// fed to `f` in ascending order when the group finishes (the order PostgreSQL's sort
    /// gives them). The binder has folded a FILTER into `arg`.
    pub distinct: bool,
    pub result_type: DataType,
}

/// One key of an aggregate's `ORDER BY`, over the input row.
#[derive(Clone, Debug, PartialEq)]
pub struct AggregateOrderKey {
    pub expr: Expr,
    pub descending: bool,
    pub nulls_first: bool,
}

impl AggregateCall {
    /// A call of `function` on `arg`, with no second argument, FILTER or ORDER BY.
    pub fn new(function: AggregateFunction, arg: Option<Expr>, result_type: DataType) -> AggregateCall {
        AggregateCall {
            function,
            arg,
            arg2: None,
            filter: None,
            order_by: Vec::new(),
            direct: Vec::new(),
            distinct: false,
            result_type,
        }
    }

    /// Every expression the call evaluates per input row.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        let order = self.order_by.iter().map(|k| &k.expr);
        self.arg.iter().chain(&self.arg2).chain(&self.filter).chain(order).chain(&self.direct)
    }

    pub fn exprs_mut(&mut self) -> impl Iterator<Item = &mut Expr> {
        let order = self.order_by.iter_mut().map(|k| &mut k.expr);
        self.arg.iter_mut().chain(&mut self.arg2).chain(&mut self.filter).chain(order).chain(&mut self.direct)
    }

    /// PostgreSQL's result type of `function(input)` (for a regression aggregate, both
    /// arguments are of type `input`).
    pub fn result_type_for(function: AggregateFunction, input: Option<DataType>) -> Option<DataType> {
        use AggregateFunction::*;
        use DataType::*;
        Some(match (function, input) {
            (CountStar, _) | (Count, _) => Int8,
            (Sum, Some(Int4)) => Int8,
            (Sum, Some(Int8)) | (Sum, Some(Numeric)) => Numeric,
            (Sum, Some(Float8)) => Float8,
            (Avg, Some(Int4)) | (Avg, Some(Int8)) | (Avg, Some(Numeric)) => Numeric,
            (Avg, Some(Float8)) => Float8,
            // PostgreSQL has no min/max over boolean (it has bool_and/bool_or).
            (Min, Some(Bool)) | (Max, Some(Bool)) => return None,
            (Min, Some(t)) | (Max, Some(t)) => t,
            (BoolAnd, Some(Bool)) | (BoolOr, Some(Bool)) => Bool,
            (StringAgg, Some(Text)) => Text,
            (ArrayAgg, Some(t)) => return t.array_of(),
            (Stddev | StddevSamp | StddevPop | Variance | VarSamp | VarPop, Some(Int4 | Int8 | Numeric)) => Numeric,
            (Stddev | StddevSamp | StddevPop | Variance | VarSamp | VarPop, Some(Float8)) => Float8,
            (BitAnd | BitOr | BitXor, Some(t @ (Int4 | Int8))) => t,
            (RegrCount, Some(Float8)) => Int8,
            (f, Some(Float8)) if f.is_regression() => Float8,
            (PercentileCont, Some(t @ (Float8 | Interval))) => t,
            (PercentileDisc | Mode, Some(t)) => t,
            (HypotheticalRank | HypotheticalDenseRank, _) => Int8,
            (HypotheticalPercentRank | HypotheticalCumeDist, _) => Float8,
            _ => return None,
        })
    }
}

#[derive(Clone, Debug)]
pub enum Plan {
    Pipeline(Pipeline),
    /// Rows of the output are the group keys followed by the aggregate values, then
    /// `output` (HAVING filter, final projection) is applied.
    Aggregate { input: Pipeline, group_by: Vec<Expr>, aggregates: Vec<AggregateCall>, output: Vec<Step> },
    /// `LIMIT` / `OFFSET` with the counts the planner knew; a count it could not know
    /// (a scalar subquery's value) is in `run_time` and replaces it when the node starts.
    /// `ties`: `FETCH FIRST n ROWS WITH TIES` over a sort.
    Limit { input: Box<Plan>, limit: Option<u64>, offset: u64, run_time: Option<Box<RunTimeLimit>>, ties: Option<Box<WithTies>> },
    /// Sort the input's rows by some of its columns (`weft-sort`: in memory, external, or
    /// top-N; in parallel when the input is a parallel pipeline).
    Sort(SortPlan),
    /// `UNION ALL` (append), `INTERSECT [ALL]`, `EXCEPT [ALL]` of inputs whose columns
    /// have the same types (`setop.rs`). `UNION` is an aggregate over `UNION ALL`.
    SetOp(SetOpPlan),
    /// The first row of each run of rows equal on `keys` (NULLs equal, grouping equality):
    /// `SELECT DISTINCT ON` over its sorted input. Rows keep their first `output_width`
    /// columns.
    Unique { input: Box<Plan>, keys: Vec<usize>, output_width: usize },
    /// Window functions over the input's rows, which arrive sorted by the partition and
    /// order keys (`window/`): each row leaves with one more column per function, then
    /// `output` is applied.
    Window(WindowPlan),
    /// A nested loop over a LATERAL item: `inner` runs once per row of `outer`.
    NestLoop(NestLoopPlan),
    /// `WITH RECURSIVE`'s iteration (PostgreSQL's Recursive Union).
    RecursiveUnion(RecursiveUnionPlan),
    /// Set-returning functions of a select list (PostgreSQL's ProjectSet).
    ProjectSet(ProjectSetPlan),
}

/// PostgreSQL 10+'s ProjectSet (`project_set.rs`): for each input row every function's
/// set is computed from the row, and the row comes out once per element of the longest
/// set, with one more column per function: its element, or NULL once its set has run
/// out. A row whose sets are all empty comes out no time. Then `output` is applied.
#[derive(Clone, Debug)]
pub struct ProjectSetPlan {
    pub input: Box<Plan>,
    pub functions: Vec<SetFunction>,
    pub output: Vec<Step>,
    /// Stop once this many rows are out (a LIMIT right above).
    pub stop_after: Option<u64>,
}

/// A set-returning function whose arguments are expressions over the input row.
#[derive(Clone, Debug, PartialEq)]
pub enum SetFunction {
    /// `generate_series(start, stop [, step])` over int4 / int8 (`data_type`), or over
    /// timestamp / timestamptz with an interval step.
    Series { args: Vec<Expr>, data_type: DataType },
    /// `unnest(array)`: its elements, of type `data_type`.
    Unnest { array: Expr, data_type: DataType },
}

impl SetFunction {
    pub fn result_type(&self) -> DataType {
        match self {
            SetFunction::Series { data_type, .. } | SetFunction::Unnest { data_type, .. } => *data_type,
        }
    }

    pub fn args(&self) -> Vec<&Expr> {
        match self {
            SetFunction::Series { args, .. } => args.iter().collect(),
            SetFunction::Unnest { array, .. } => vec![array],
        }
    }

    pub fn args_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            SetFunction::Series { args, .. } => args.iter_mut().collect(),
            SetFunction::Unnest { array, .. } => vec![array],
        }
    }

    /// The SQL name (EXPLAIN).
    pub fn name(&self) -> &'static str {
        match self {
            SetFunction::Series { .. } => "generate_series",
            SetFunction::Unnest { .. } => "unnest",
        }
    }
}

/// `outer` joined with a LATERAL subquery or function (`inner`), which reads columns of
/// the outer row as parameters: for each outer row, `params` (over that row) are
/// evaluated and `inner` is run with them. Output rows are `outer ++ inner`.
#[derive(Clone, Debug)]
pub struct NestLoopPlan {
    pub outer: Box<Plan>,
    pub inner: Box<Plan>,
    pub params: Vec<Expr>,
    /// The ON condition over `outer ++ inner` (`None`: every pair matches).
    pub filter: Option<Expr>,
    /// LEFT JOIN: an outer row without a match comes out once, NULLs for `inner`'s columns.
    pub left: bool,
    /// The types of `inner`'s columns.
    pub inner_types: Vec<DataType>,
    /// A LIMIT right above the loop: stop once this many rows are out (the loop's rows are
    /// all collected, so without it a LIMIT over a big LATERAL join held them all).
    pub stop_after: Option<u64>,
}

/// `non_recursive UNION [ALL] recursive`, where `recursive` scans the working table
/// (`Source::WorkTable { id }`): the non-recursive term's rows are the first working
/// table; the recursive term then runs over the working table, its rows become the next
/// one, until a run produces no row. The output is every working table in order. With
/// `distinct` (UNION), a row equal (NULLs equal) to one produced before is dropped.
#[derive(Clone, Debug)]
pub struct RecursiveUnionPlan {
    pub id: usize,
    /// The CTE's name (EXPLAIN).
    pub name: String,
    pub non_recursive: Box<Plan>,
    pub recursive: Box<Plan>,
    pub distinct: bool,
    /// Stop once this many rows are produced (a LIMIT right above the CTE's scan).
    pub stop_after: Option<u64>,
}

/// One `WindowAgg` node: every function shares its partitioning, ordering and frame.
#[derive(Clone, Debug)]
pub struct WindowPlan {
    /// Sorted by `partition_by` then `order_by` (a Sort, or a window node below that
    /// left its rows in an order this one can use).
    pub input: Box<Plan>,
    /// Input columns: rows equal on all of them (NULLs equal) form one partition.
    pub partition_by: Vec<usize>,
    /// Input columns and directions of the window's ORDER BY: rows equal on all of them
    /// are *peers*.
    pub order_by: Vec<SortKey>,
    pub frame: WindowFrame,
    pub functions: Vec<WindowCall>,
    /// Steps over `input row ++ one value per function`.
    pub output: Vec<Step>,
    /// Columns of an input row; the function values follow them.
    pub input_width: usize,
}

/// A window function call; its arguments are expressions over the input row.
#[derive(Clone, Debug)]
pub struct WindowCall {
    pub function: WindowFunction,
    pub args: Vec<Expr>,
    pub result_type: DataType,
}

#[derive(Clone, Debug)]
pub enum WindowFunction {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    /// `ntile(buckets)`: the argument is read at the partition's first row.
    Ntile,
    /// `lag(value [, offset [, default]])` and `lead`: the value at a row `offset` before
    /// (after) the current one in the partition, ignoring the frame.
    Lag,
    Lead,
    FirstValue,
    LastValue,
    /// `nth_value(value, n)`: the value at the frame's n-th row (1-based).
    NthValue,
    /// An aggregate over the frame (its `arg`/`filter` are over the input row; `args` is empty).
    Aggregate(AggregateCall),
}

impl WindowFunction {
    /// The name PostgreSQL prints.
    pub fn name(&self) -> &'static str {
        match self {
            WindowFunction::RowNumber => "row_number",
            WindowFunction::Rank => "rank",
            WindowFunction::DenseRank => "dense_rank",
            WindowFunction::PercentRank => "percent_rank",
            WindowFunction::CumeDist => "cume_dist",
            WindowFunction::Ntile => "ntile",
            WindowFunction::Lag => "lag",
            WindowFunction::Lead => "lead",
            WindowFunction::FirstValue => "first_value",
            WindowFunction::LastValue => "last_value",
            WindowFunction::NthValue => "nth_value",
            WindowFunction::Aggregate(_) => "aggregate",
        }
    }
}

/// `ROWS`, `RANGE` or `GROUPS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

/// One end of a frame. Offsets are constant expressions (no column), evaluated once when
/// the node starts: bigint for ROWS and GROUPS, for RANGE of a type that can be added to
/// the ordering column.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WindowFrame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl WindowFrame {
    /// PostgreSQL's default: `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW` (with
    /// an ORDER BY, the current row's peers; without, the whole partition).
    pub fn default_frame() -> WindowFrame {
        WindowFrame { units: FrameUnits::Range, start: FrameBound::UnboundedPreceding, end: FrameBound::CurrentRow }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOperator {
    /// All rows of every input, in input order (`all` must be true).
    Append,
    Intersect,
    Except,
}

#[derive(Clone, Debug)]
pub struct SetOpPlan {
    pub op: SetOperator,
    /// `ALL`: keep duplicates (`INTERSECT ALL`: min(m, n) copies of a row found m times on
    /// the left and n on the right; `EXCEPT ALL`: max(m - n, 0)). Without it each row
    /// appears at most once.
    pub all: bool,
    /// Two inputs for INTERSECT and EXCEPT, any number for an append.
    pub inputs: Vec<Plan>,
}

/// `FETCH FIRST n ROWS WITH TIES`: the Limit's input is a sort that keeps every column
/// (hidden ORDER BY columns too); after the `n` counted rows come those equal to the last
/// of them on the sort's `keys`, and every row leaves cut to `output_width`.
#[derive(Clone, Debug)]
pub struct WithTies {
    pub keys: Vec<SortKey>,
    pub output_width: usize,
}

/// LIMIT and OFFSET counts evaluated when the Limit node starts, as PostgreSQL's
/// `recompute_limits`: int8 expressions over no row (scalar subqueries, whose init plans
/// have run by then). NULL is no limit and an offset of 0.
#[derive(Clone, Debug)]
pub struct RunTimeLimit {
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
}

impl RunTimeLimit {
    /// The limit and offset, those not given here taken from `limit` and `offset`.
    pub fn evaluate(&self, limit: Option<u64>, offset: u64, eval: &crate::expr::EvalContext) -> weft_common::Result<(Option<u64>, u64)> {
        let count = |expr: &Expr, what: &str, sqlstate: &'static str| -> weft_common::Result<Option<u64>> {
            match expr.eval(&[], eval)? {
                Datum::Null => Ok(None),
                Datum::Int8(v) => u64::try_from(v)
                    .map(Some)
                    .map_err(|_| weft_common::Error::new(weft_common::SqlState(sqlstate), format!("{what} must not be negative"))),
                other => Err(weft_common::Error::internal(format!("{what} evaluated to {other:?}"))),
            }
        };
        let limit = match &self.limit {
            Some(e) => count(e, "LIMIT", "2201W")?,
            None => limit,
        };
        let offset = match &self.offset {
            Some(e) => count(e, "OFFSET", "2201X")?.unwrap_or(0),
            None => offset,
        };
        Ok((limit, offset))
    }
}

impl Plan {
    /// Does any heap scan of this plan read `rel`? (An INSERT that reads its own target
    /// must not rewrite the page its scan is visiting.)
    pub fn reads_relation(&self, rel: RelFileLocator) -> bool {
        match self {
            Plan::Pipeline(pipeline) | Plan::Aggregate { input: pipeline, .. } => pipeline.reads_relation(rel),
            Plan::Limit { input, .. } | Plan::Unique { input, .. } => input.reads_relation(rel),
            Plan::Sort(sort) => sort.input.reads_relation(rel),
            Plan::SetOp(setop) => setop.inputs.iter().any(|p| p.reads_relation(rel)),
            Plan::Window(window) => window.input.reads_relation(rel),
            Plan::NestLoop(nl) => nl.outer.reads_relation(rel) || nl.inner.reads_relation(rel),
            Plan::RecursiveUnion(ru) => ru.non_recursive.reads_relation(rel) || ru.recursive.reads_relation(rel),
            Plan::ProjectSet(ps) => ps.input.reads_relation(rel),
        }
    }
}

impl Plan {
    /// Every init plan (scalar subquery) the plan's expressions read, with those their
    /// own plans read, each once, in number order: an inner subquery comes before the
    /// one that reads it, so running them in this order gives each its inputs.
    pub fn init_plans(&self) -> Vec<Arc<InitPlan>> {
        let mut found = Vec::new();
        let mut pending = Vec::new();
        self.for_each_expr(&mut |e| e.collect_init_plans(&mut pending));
        while let Some(init_plan) = pending.pop() {
            if found.iter().any(|f: &Arc<InitPlan>| Arc::ptr_eq(f, &init_plan)) {
                continue;
            }
            init_plan.plan.for_each_expr(&mut |e| e.collect_init_plans(&mut pending));
            found.push(init_plan);
        }
        found.sort_by_key(|p| p.number);
        found
    }

    /// Visit every expression of the plan (not those inside init plans).
    pub fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        match self {
            Plan::Pipeline(pipeline) => pipeline.for_each_expr(f),
            Plan::Aggregate { input, group_by, aggregates, output } => {
                input.for_each_expr(f);
                group_by.iter().for_each(|e| f(e));
                aggregates.iter().flat_map(AggregateCall::exprs).for_each(|e| f(e));
                output.iter().for_each(|step| step.for_each_expr(f));
            }
            Plan::Limit { input, run_time, .. } => {
                input.for_each_expr(f);
                if let Some(run_time) = run_time {
                    run_time.limit.iter().chain(&run_time.offset).for_each(|e| f(e));
                }
            }
            Plan::Unique { input, .. } => input.for_each_expr(f),
            Plan::Sort(sort) => sort.input.for_each_expr(f),
            Plan::SetOp(setop) => setop.inputs.iter().for_each(|p| p.for_each_expr(f)),
            Plan::Window(window) => {
                window.input.for_each_expr(f);
                for call in &window.functions {
                    call.args.iter().for_each(|e| f(e));
                    if let WindowFunction::Aggregate(aggregate) = &call.function {
                        aggregate.exprs().for_each(|e| f(e));
                    }
                }
                for bound in [&window.frame.start, &window.frame.end] {
                    if let FrameBound::Preceding(e) | FrameBound::Following(e) = bound {
                        f(e);
                    }
                }
                window.output.iter().for_each(|step| step.for_each_expr(f));
            }
            Plan::NestLoop(nl) => {
                nl.outer.for_each_expr(f);
                nl.inner.for_each_expr(f);
                nl.params.iter().chain(&nl.filter).for_each(|e| f(e));
            }
            Plan::RecursiveUnion(ru) => {
                ru.non_recursive.for_each_expr(f);
                ru.recursive.for_each_expr(f);
            }
            Plan::ProjectSet(ps) => {
                ps.input.for_each_expr(f);
                ps.functions.iter().flat_map(SetFunction::args).for_each(|e| f(e));
                ps.output.iter().for_each(|step| step.for_each_expr(f));
            }
        }
    }
}

impl Pipeline {
    fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        match &self.source {
            Source::Single | Source::Heap(_) | Source::Series { .. } | Source::WorkTable { .. } => {}
            Source::SeriesExprs { args, .. } => args.iter().for_each(|e| f(e)),
            Source::Unnest { array, .. } => f(array),
            Source::Values(rows) => rows.iter().flatten().for_each(|e| f(e)),
            Source::Subquery { plan, .. } => plan.for_each_expr(f),
            Source::Index(index) => {
                index.conditions.iter().for_each(|e| f(e));
                let params = index.param_ranges.iter().flat_map(|p| p.prefixes.iter().flatten().chain(p.bounds.iter().map(|b| &b.1)));
                params.for_each(|v| {
                    if let KeyValue::Param(e) = v {
                        f(e)
                    }
                });
                index.key_filter.iter().for_each(|e| f(e));
            }
        }
        self.steps.iter().for_each(|step| step.for_each_expr(f));
    }
}

impl Step {
    fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        match self {
            Step::Filter(e) => f(e),
            Step::Project(exprs) => exprs.iter().for_each(|e| f(e)),
            Step::HashJoin(join) => {
                join.inner.for_each_expr(f);
                join.outer_keys.iter().chain(&join.inner_keys).chain(&join.filter).for_each(|e| f(e));
            }
        }
    }
}

impl Pipeline {
    /// Does the pipeline's source, or the build side of one of its joins, read `rel`?
    pub fn reads_relation(&self, rel: RelFileLocator) -> bool {
        self.source.reads_relation(rel)
            || self.steps.iter().any(|step| matches!(step, Step::HashJoin(join) if join.inner.reads_relation(rel)))
    }
}

impl Source {
    fn reads_relation(&self, rel: RelFileLocator) -> bool {
        match self {
            Source::Heap(heap) => heap.rel == rel,
            Source::Index(index) => index.heap.rel == rel,
            Source::Subquery { plan, .. } => plan.reads_relation(rel),
            Source::Single | Source::Series { .. } | Source::Values(_) | Source::SeriesExprs { .. } | Source::WorkTable { .. } => false,
            Source::Unnest { .. } => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortKey {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

#[derive(Clone, Debug)]
pub struct SortPlan {
    pub input: Box<Plan>,
    pub keys: Vec<SortKey>,
    /// The types of the input's columns (the sort stores rows in the tuple format).
    pub types: Vec<DataType>,
    /// Only the first `bound` rows are wanted (ORDER BY ... LIMIT): a top-N sort.
    pub bound: Option<u64>,
    /// Columns kept in the output: the first `output_width` (trailing ones were computed
    /// only to sort by).
    pub output_width: usize,
    /// Which output columns the consumer reads (`None`: all of them); the others come out
    /// NULL instead of decoded. Set for a sorted subquery in FROM by the planner's last
    /// pass (`weft-sql`'s `unread_outputs`).
    pub read_outputs: Option<Vec<bool>>,
}

impl Plan {
    /// Give every scan of working table `id` in this plan the rows `rows`.
    pub fn set_work_table(&mut self, id: usize, rows: &Arc<Vec<Row>>) {
        match self {
            Plan::Pipeline(pipeline) | Plan::Aggregate { input: pipeline, .. } => pipeline.set_work_table(id, rows),
            Plan::Limit { input, .. } | Plan::Unique { input, .. } => input.set_work_table(id, rows),
            Plan::Sort(sort) => sort.input.set_work_table(id, rows),
            Plan::SetOp(setop) => setop.inputs.iter_mut().for_each(|p| p.set_work_table(id, rows)),
            Plan::Window(window) => window.input.set_work_table(id, rows),
            Plan::NestLoop(nl) => {
                nl.outer.set_work_table(id, rows);
                nl.inner.set_work_table(id, rows);
            }
            Plan::RecursiveUnion(ru) => {
                ru.non_recursive.set_work_table(id, rows);
                ru.recursive.set_work_table(id, rows);
            }
            Plan::ProjectSet(ps) => ps.input.set_work_table(id, rows),
        }
    }
}

impl Pipeline {
    fn set_work_table(&mut self, id: usize, new_rows: &Arc<Vec<Row>>) {
        match &mut self.source {
            Source::WorkTable { id: mine, rows, .. } if *mine == id => *rows = new_rows.clone(),
            Source::Subquery { plan, .. } => plan.set_work_table(id, new_rows),
            _ => {}
        }
        for step in &mut self.steps {
            if let Step::HashJoin(join) = step {
                join.inner.set_work_table(id, new_rows);
            }
        }
    }
}
