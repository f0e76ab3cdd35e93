//! Hash aggregation under `work_mem` through the executor's public entry point
//! (`execute` of a `Plan::Aggregate`): results equal the unbounded run's whatever the
//! budget and the number of workers, and the temp directory is empty afterwards —
//! after success, after an error in the middle of the aggregation, after a cancel.
//! (The memory figures are checked by the unit tests in `src/aggregate/tests.rs`.)

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weft_common::numeric::Numeric;
use weft_common::parallel::{CancelToken, WorkerPool};
use weft_common::{DataType, Datum, SqlState};
use weft_exec::expr::{BinaryOp, EvalContext, Expr, GroupKey};
use weft_exec::{
    execute, AggregateCall, AggregateFunction, ExecContext, HashJoinSettings, Pipeline, Plan, Row, ScanLabel,
    SortSettings, Source, Step,
};
use weft_storage::{BufferMappingKind, BufferPool, BufferPoolConfig, StorageManager};

static NEXT_ENV: AtomicU64 = AtomicU64::new(0);

struct Env {
    root: PathBuf,
    pool: Arc<BufferPool>,
    workers: WorkerPool,
    eval: EvalContext,
}

impl Env {
    fn new() -> Env {
        let root = std::env::temp_dir()
            .join(format!("weft-agg-spill.{}.{}", std::process::id(), NEXT_ENV.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&root).unwrap();
        let smgr = StorageManager::open(&root).unwrap();
        let pool = BufferPool::new(smgr, BufferPoolConfig { shared_buffers_bytes: 64 * 8192, mapping: BufferMappingKind::Hash });
        Env { root, pool, workers: WorkerPool::new(8), eval: EvalContext::with_seed(7) }
    }

    fn ctx<'a>(&'a self, cancel: &'a CancelToken, work_mem: usize) -> ExecContext<'a> {
        ExecContext {
            pool: &self.pool,
            workers: &self.workers,
            cancel,
            eval: &self.eval,
            leader_participates: true,
            stats: Default::default(),
            sort: SortSettings {
                work_mem,
                strategy: weft_exec::SortStrategy::Partition,
                trace: false,
                temp_dir: self.root.join("tmp"),
            },
            notices: Default::default(),
            sort_reports: Default::default(),
            nodes: Default::default(),
            hash: HashJoinSettings { work_mem, hash_mem_multiplier: 2.0, attach_phases: Vec::new(), dense_up_front: true },
            joins: Default::default(),
        }
    }

    fn temp_entries(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.root.join("tmp")) {
            Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn col(index: usize, data_type: DataType) -> Expr {
    Expr::Column { index, data_type }
}

fn lit8(v: i64) -> Expr {
    Expr::Literal { value: Datum::Int8(v), data_type: DataType::Int8 }
}

fn binary(op: BinaryOp, left: Expr, right: Expr, data_type: DataType) -> Expr {
    Expr::Binary { op, left: Box::new(left), right: Box::new(right), data_type }
}

fn cast(expr: Expr, to: DataType) -> Expr {
    Expr::Cast { expr: Box::new(expr), to }
}

fn call(function: AggregateFunction, arg: Option<Expr>) -> AggregateCall {
    let result_type = AggregateCall::result_type_for(function, arg.as_ref().map(Expr::data_type)).unwrap();
    AggregateCall::new(function, arg, result_type)
}

/// `SELECT k1, k2, aggregates FROM generate_series(1, n) x GROUP BY k1, k2` where the
/// projected row is `(k1, k2, x, x::numeric / 8, x::float8 / 4, x::text)`.
fn plan(n: i64, k1: Expr, k2: Expr, workers: usize) -> Plan {
    let x = col(0, DataType::Int8);
    let project = vec![
        k1,
        k2,
        x.clone(),
        binary(BinaryOp::Div, cast(x.clone(), DataType::Numeric), cast(lit8(8), DataType::Numeric), DataType::Numeric),
        binary(BinaryOp::Div, cast(x.clone(), DataType::Float8), cast(lit8(4), DataType::Float8), DataType::Float8),
        cast(x, DataType::Text),
    ];
    let key_types = [project[0].data_type(), project[1].data_type()];
    let mut aggregates = vec![call(AggregateFunction::CountStar, None)];
    for (i, t) in [DataType::Int8, DataType::Numeric, DataType::Float8, DataType::Text].into_iter().enumerate() {
        for f in [AggregateFunction::Count, AggregateFunction::Sum, AggregateFunction::Avg, AggregateFunction::Min, AggregateFunction::Max] {
            if AggregateCall::result_type_for(f, Some(t)).is_some() {
                aggregates.push(call(f, Some(col(2 + i, t))));
            }
        }
    }
    Plan::Aggregate {
        input: Pipeline {
            source: Source::Series { start: 1, stop: n, step: 1, data_type: DataType::Int8, label: ScanLabel::default() },
            steps: vec![Step::Project(project)],
            workers,
        },
        group_by: vec![col(0, key_types[0]), col(1, key_types[1])],
        aggregates,
        output: Vec::new(),
    }
}

/// Rows keyed by their first two columns (the group keys are unique).
fn by_key(rows: Vec<Row>) -> BTreeMap<GroupKey, Row> {
    let count = rows.len();
    let map: BTreeMap<GroupKey, Row> = rows.into_iter().map(|r| (GroupKey(r[..2].to_vec()), r)).collect();
    assert_eq!(map.len(), count, "a group came out twice");
    map
}

fn same(a: &Datum, b: &Datum) -> bool {
    match (a, b) {
        (Datum::Numeric(x), Datum::Numeric(y)) => x.eq_value(y),
        _ => a.data_type() == b.data_type() && weft_exec::expr::compare_datums(a, b).is_eq(),
    }
}

fn assert_same(got: Vec<Row>, expected: &BTreeMap<GroupKey, Row>) {
    let got = by_key(got);
    assert_eq!(got.len(), expected.len());
    for ((gk, g), (ek, e)) in got.iter().zip(expected) {
        assert_eq!(gk, ek);
        for (i, (x, y)) in g.iter().zip(e).enumerate() {
            assert!(same(x, y), "column {i}: got {g:?}, expected {e:?}");
        }
    }
}

/// Keys of three kinds: int8 `x % 5000` with `x % 7 = 0` as NULL, and text; numeric
/// `x % 3000 / 4` (equal values at different scales) with float8 `-0`/`0`; an int4 alone.
fn key_shapes() -> Vec<(Expr, Expr)> {
    let x = || col(0, DataType::Int8);
    let m = |v: i64| binary(BinaryOp::Mod, x(), lit8(v), DataType::Int8);
    let null_when_7 = Expr::Case {
        whens: vec![(binary(BinaryOp::Eq, m(7), lit8(0), DataType::Bool), Expr::Literal { value: Datum::Null, data_type: DataType::Int8 })],
        otherwise: Some(Box::new(m(5000))),
        data_type: DataType::Int8,
    };
    let text = cast(m(3), DataType::Text);
    // (x % 3000)::numeric / 4 gives 0.25, 0.5 (= 0.50), 1 (= 1.00) ...
    let numeric = binary(BinaryOp::Div, cast(m(3000), DataType::Numeric), cast(lit8(4), DataType::Numeric), DataType::Numeric);
    // -(x % 2)::float8 * 0: -0 for odd x, 0 for even: one group.
    let zero = binary(
        BinaryOp::Mul,
        Expr::Unary { op: weft_exec::expr::UnaryOp::Neg, expr: Box::new(cast(m(2), DataType::Float8)), data_type: DataType::Float8 },
        cast(lit8(0), DataType::Float8),
        DataType::Float8,
    );
    let int4 = cast(m(4093), DataType::Int4);
    let null4 = Expr::Literal { value: Datum::Null, data_type: DataType::Int4 };
    vec![(null_when_7, text), (numeric, zero), (int4, null4)]
}

#[test]
fn spilling_matches_unbounded_for_any_worker_count() {
    let env = Env::new();
    let n = 40_000;
    for (k1, k2) in key_shapes() {
        let cancel = CancelToken::new();
        let unbounded = env.ctx(&cancel, 1 << 30);
        let expected = by_key(execute(&plan(n, k1.clone(), k2.clone(), 0), &unbounded).unwrap());
        for work_mem in [16 << 10, 64 << 10, 256 << 10] {
            for workers in [0, 1, 3, 7] {
                let ctx = env.ctx(&cancel, work_mem);
                let rows = execute(&plan(n, k1.clone(), k2.clone(), workers), &ctx).unwrap();
                assert_same(rows, &expected);
                assert!(env.temp_entries().is_empty(), "{:?}", env.temp_entries());
            }
        }
    }
}

/// Numeric keys `1`, `1.0`, `1.00` are one group; so are float `-0` and `0`, and NaNs.
#[test]
fn equal_keys_of_different_representations_group_together() {
    let env = Env::new();
    let cancel = CancelToken::new();
    let values: Vec<Vec<Expr>> = (0..3000)
        .map(|i| {
            let scale = (i % 3) as u32;
            let numeric = Numeric { mantissa: (i % 10) as i128 * 10i128.pow(scale), scale: scale as u16 };
            let float = match i % 4 {
                0 => -0.0,
                1 => 0.0,
                2 => f64::NAN,
                _ => f64::from_bits(0x7ff8_0000_0000_0042),
            };
            vec![
                Expr::Literal { value: Datum::Numeric(numeric), data_type: DataType::Numeric },
                Expr::Literal { value: Datum::Float8(float), data_type: DataType::Float8 },
                Expr::Literal { value: Datum::Int8(i), data_type: DataType::Int8 },
            ]
        })
        .collect();
    let plan = |workers| Plan::Aggregate {
        input: Pipeline { source: Source::Values(values.clone()), steps: Vec::new(), workers },
        group_by: vec![col(0, DataType::Numeric), col(1, DataType::Float8)],
        aggregates: vec![call(AggregateFunction::CountStar, None), call(AggregateFunction::Sum, Some(col(2, DataType::Int8)))],
        output: Vec::new(),
    };
    for workers in [0, 2] {
        let rows = execute(&plan(workers), &env.ctx(&cancel, 1 << 10)).unwrap();
        // 10 numeric values × {zero, NaN}.
        assert_eq!(rows.len(), 20, "{rows:?}");
        assert_eq!(rows.iter().map(|r| match r[2] { Datum::Int8(c) => c, _ => 0 }).sum::<i64>(), 3000);
    }
}

/// Division by zero in a key, long after the first spill: the error, and no file left.
#[test]
fn error_mid_aggregation_leaves_no_temp_files() {
    let env = Env::new();
    let x = col(0, DataType::Int8);
    let key = binary(BinaryOp::Div, lit8(1 << 40), binary(BinaryOp::Sub, x, lit8(30_000), DataType::Int8), DataType::Int8);
    for workers in [0, 3] {
        let cancel = CancelToken::new();
        let err = execute(&plan(60_000, key.clone(), lit8(1), workers), &env.ctx(&cancel, 16 << 10)).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::DIVISION_BY_ZERO);
        assert!(env.temp_entries().is_empty(), "{:?}", env.temp_entries());
    }
}

/// A cancel while the aggregate is spilling: the statement ends with 57014 and its
/// files are gone.
#[test]
fn cancel_mid_aggregation_leaves_no_temp_files() {
    let env = Env::new();
    let cancel = CancelToken::new();
    let x = || col(0, DataType::Int8);
    let plan = plan(5_000_000, binary(BinaryOp::Mod, x(), lit8(1_000_003), DataType::Int8), cast(x(), DataType::Text), 3);
    let result = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            // Cancel once spill files exist (or give up after a while).
            let began = Instant::now();
            while env.temp_entries().is_empty() && began.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(2));
            }
            cancel.cancel();
        });
        let result = execute(&plan, &env.ctx(&cancel, 64 << 10));
        cancel.cancel();
        watcher.join().unwrap();
        result
    });
    let err = result.expect_err("the statement should have been canceled");
    assert_eq!(err.sqlstate, SqlState::QUERY_CANCELED);
    assert!(env.temp_entries().is_empty(), "{:?}", env.temp_entries());
}

/// A rough comparison, not an assertion on time: 10M rows into 1M groups with
/// `work_mem = 4MB` (× hash_mem_multiplier 2) against an unbounded budget. Run with
/// `cargo test --release -p weft-exec --test aggregate_spill -- --ignored --nocapture`.
#[test]
#[ignore]
fn ten_million_rows_into_a_million_groups() {
    let env = Env::new();
    let cancel = CancelToken::new();
    let x = || col(0, DataType::Int8);
    let plan = |workers| Plan::Aggregate {
        input: Pipeline {
            source: Source::Series { start: 1, stop: 10_000_000, step: 1, data_type: DataType::Int8, label: ScanLabel::default() },
            steps: vec![Step::Project(vec![binary(BinaryOp::Mod, x(), lit8(1_000_000), DataType::Int8), x()])],
            workers,
        },
        group_by: vec![col(0, DataType::Int8)],
        aggregates: vec![call(AggregateFunction::CountStar, None), call(AggregateFunction::Sum, Some(col(1, DataType::Int8)))],
        output: Vec::new(),
    };
    for workers in [0, 1] {
        for (label, work_mem) in [("unbounded", 1usize << 36), ("work_mem=4MB", 4 << 20)] {
            let ctx = env.ctx(&cancel, work_mem);
            let began = Instant::now();
            let rows = execute(&plan(workers), &ctx).unwrap();
            let elapsed = began.elapsed();
            assert_eq!(rows.len(), 1_000_000);
            eprintln!("workers={workers} {label}: {elapsed:?}");
            assert!(env.temp_entries().is_empty());
        }
    }
}
