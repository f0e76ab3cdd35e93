//! Hash aggregation under a budget against a naive oracle (a `BTreeMap` of every group's
//! rows, each aggregate computed from scratch), with budgets small enough to spill and
//! to repartition several levels deep.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use weft_common::numeric::Numeric;
use weft_common::parallel::{CancelToken, WorkerPool};
use weft_common::{DataType, Datum, Result, SqlState};
use weft_storage::{BufferMappingKind, BufferPool, BufferPoolConfig, StorageManager};

use super::spill::{encode_for_test, Decoder};
use super::stats::FloatMoments;
use super::{Accumulator, AggregateSink, AggregateSpillReport, Budget};
use crate::execute::{run_pipeline, ExecContext, Sink};
use crate::expr::compare::{compare_datums, GroupKey};
use crate::expr::{BinaryOp, EvalContext, Expr};
use crate::hash_join::HashJoinSettings;
use crate::plan::{AggregateCall, AggregateFunction, Pipeline, Row, ScanLabel, Source, Step};
use crate::sort::SortSettings;

static NEXT_ENV: AtomicU64 = AtomicU64::new(0);

/// A data directory for one test, removed at the end.
struct Env {
    root: PathBuf,
    pool: Arc<BufferPool>,
    workers: WorkerPool,
    cancel: CancelToken,
    eval: EvalContext,
}

impl Env {
    fn new() -> Env {
        let root = std::env::temp_dir()
            .join(format!("weft-agg-unit.{}.{}", std::process::id(), NEXT_ENV.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&root).unwrap();
        let smgr = StorageManager::open(&root).unwrap();
        let pool = BufferPool::new(smgr, BufferPoolConfig { shared_buffers_bytes: 64 * 8192, mapping: BufferMappingKind::Hash });
        Env { root, pool, workers: WorkerPool::new(8), cancel: CancelToken::new(), eval: EvalContext::with_seed(1) }
    }

    fn temp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    fn ctx(&self, work_mem: usize) -> ExecContext<'_> {
        ExecContext {
            pool: &self.pool,
            workers: &self.workers,
            cancel: &self.cancel,
            eval: &self.eval,
            leader_participates: true,
            stats: Default::default(),
            sort: SortSettings {
                work_mem,
                strategy: weft_sort::SortStrategy::Partition,
                trace: false,
                temp_dir: self.temp_dir(),
            },
            notices: Default::default(),
            sort_reports: Default::default(),
            nodes: Default::default(),
            hash: HashJoinSettings { work_mem, hash_mem_multiplier: 1.0, attach_phases: Vec::new(), dense_up_front: true },
            joins: Default::default(),
        }
    }

    /// Nothing left under the temp directory (or it was never created).
    fn temp_is_empty(&self) -> bool {
        match std::fs::read_dir(self.temp_dir()) {
            Ok(mut entries) => entries.next().is_none(),
            Err(_) => true,
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

// ---------------------------------------------------------------------------------------
// Data: key columns of several types, then one argument column of each type.

#[derive(Clone, Copy, Debug)]
enum KeyType {
    Int4,
    Int8,
    Text,
    Numeric,
    Float8,
}

impl KeyType {
    fn data_type(self) -> DataType {
        match self {
            KeyType::Int4 => DataType::Int4,
            KeyType::Int8 => DataType::Int8,
            KeyType::Text => DataType::Text,
            KeyType::Numeric => DataType::Numeric,
            KeyType::Float8 => DataType::Float8,
        }
    }
}

/// A key value from `v`, among about `domain` distinct groups, with NULLs, equal values
/// of different representations (`1 = 1.0 = 1.00`, `-0 = 0`, two NaNs).
fn key_datum(t: KeyType, v: u32, domain: u32) -> Datum {
    let x = v % domain.max(1);
    if x == 0 {
        return Datum::Null;
    }
    let centered = x as i64 - (domain / 2) as i64;
    match t {
        KeyType::Int4 => Datum::Int4(centered as i32),
        KeyType::Int8 => Datum::Int8(centered.wrapping_mul(1_000_000_007)),
        KeyType::Text => Datum::Text(format!("k{x}{}", "·".repeat((x % 4) as usize))),
        KeyType::Numeric => {
            let (value, scale) = (centered / 3, x % 3);
            Datum::Numeric(Numeric { mantissa: value as i128 * 10i128.pow(scale), scale: scale as u16 })
        }
        KeyType::Float8 => Datum::Float8(match x {
            1 => -0.0,
            2 => 0.0,
            3 => f64::NAN,
            4 => f64::from_bits(0xfff8_0000_0000_0001), // another NaN
            5 => f64::INFINITY,
            6 => f64::NEG_INFINITY,
            _ => centered as f64 * 0.25,
        }),
    }
}

const ARG_TYPES: [DataType; 5] = [DataType::Int4, DataType::Int8, DataType::Numeric, DataType::Float8, DataType::Text];

/// The argument columns from one seed: full-range integers (sums past i64), numerics of
/// scales 0..3, floats that are multiples of 0.25 (sums exact in any order) or NaN/inf,
/// text of varying length; each NULL now and then.
fn arg_datums(s: u64) -> [Datum; 5] {
    let int4 = if s.is_multiple_of(11) { Datum::Null } else { Datum::Int4((s >> 8) as i32) };
    let int8 = if s.is_multiple_of(13) { Datum::Null } else { Datum::Int8((s >> 3) as i64 ^ (s << 61) as i64) };
    let numeric = if s.is_multiple_of(7) {
        Datum::Null
    } else {
        Datum::Numeric(Numeric { mantissa: ((s >> 16) % 2_000_001) as i128 - 1_000_000, scale: ((s >> 40) % 4) as u16 })
    };
    let float = match s % 101 {
        0..=19 => Datum::Null,
        20 => Datum::Float8(f64::NAN),
        21 => Datum::Float8(f64::INFINITY),
        22 => Datum::Float8(-0.0),
        _ => Datum::Float8(((s >> 20) % 4001) as f64 * 0.25 - 500.0),
    };
    let text = if s.is_multiple_of(3) {
        Datum::Null
    } else {
        Datum::Text(format!("{:x}{}", (s >> 32) % 4096, "y".repeat(((s >> 50) % 24) as usize)))
    };
    [int4, int8, numeric, float, text]
}

fn make_rows(keys: &[KeyType], domain: u32, raw: &[(u32, u32, u64)]) -> Vec<Row> {
    raw.iter()
        .map(|&(a, b, s)| {
            let mut row: Row = Vec::new();
            for (i, &t) in keys.iter().enumerate() {
                // The second key column varies less, so that groups still repeat.
                row.push(if i == 0 { key_datum(t, a, domain) } else { key_datum(t, b, 5) });
            }
            row.extend(arg_datums(s));
            row
        })
        .collect()
}

/// count(*), and count, sum, avg, min, max of every argument column they accept.
fn every_aggregate(key_width: usize) -> Vec<AggregateCall> {
    use AggregateFunction::*;
    let mut calls = vec![AggregateCall::new(CountStar, None, DataType::Int8)];
    for (i, &t) in ARG_TYPES.iter().enumerate() {
        for f in [Count, Sum, Avg, Min, Max] {
            if let Some(result_type) = AggregateCall::result_type_for(f, Some(t)) {
                calls.push(AggregateCall::new(f, Some(Expr::Column { index: key_width + i, data_type: t }), result_type));
            }
        }
    }
    calls
}

/// `every_aggregate` with every other call over an argument made DISTINCT — but not
/// avg(DISTINCT numeric), whose result scale depends on which of two equal values
/// (`1.0`, `1.00`) was kept, in PostgreSQL too.
fn distinct_and_plain_calls(key_width: usize) -> Vec<AggregateCall> {
    let mut calls = every_aggregate(key_width);
    for (i, call) in calls.iter_mut().enumerate() {
        let numeric_avg = call.function == AggregateFunction::Avg
            && call.arg.as_ref().is_some_and(|a| a.data_type() == DataType::Numeric);
        call.distinct = i % 2 == 1 && call.arg.is_some() && !numeric_avg;
    }
    calls
}

fn group_by(keys: &[KeyType]) -> Vec<Expr> {
    keys.iter().enumerate().map(|(index, t)| Expr::Column { index, data_type: t.data_type() }).collect()
}

// ---------------------------------------------------------------------------------------
// The oracle.

fn oracle(rows: &[Row], key_width: usize, calls: &[AggregateCall]) -> Vec<Row> {
    let mut groups: BTreeMap<GroupKey, Vec<&Row>> = BTreeMap::new();
    for row in rows {
        groups.entry(GroupKey(row[..key_width].to_vec())).or_default().push(row);
    }
    groups
        .into_iter()
        .map(|(key, members)| {
            let mut out = key.0;
            for call in calls {
                out.push(oracle_aggregate(call, &members));
            }
            out
        })
        .collect()
}

fn oracle_aggregate(call: &AggregateCall, rows: &[&Row]) -> Datum {
    use AggregateFunction::*;
    let Some(Expr::Column { index, data_type }) = &call.arg else {
        return Datum::Int8(rows.len() as i64);
    };
    let mut values: Vec<&Datum> = rows.iter().map(|r| &r[*index]).filter(|d| !d.is_null()).collect();
    if call.distinct {
        values.sort_by(|a, b| compare_datums(a, b));
        values.dedup_by(|a, b| compare_datums(a, b).is_eq());
    }
    if call.function == Count {
        return Datum::Int8(values.len() as i64);
    }
    if values.is_empty() {
        return Datum::Null;
    }
    let ints = || values.iter().map(|d| match d {
        Datum::Int4(v) => *v as i128,
        Datum::Int8(v) => *v as i128,
        _ => unreachable!(),
    });
    let numeric_sum = || values.iter().fold(Numeric::from_i64(0), |acc, d| match d {
        Datum::Numeric(n) => acc.add(n).unwrap(),
        _ => unreachable!(),
    });
    let float_sum = || values.iter().map(|d| match d {
        Datum::Float8(v) => *v,
        _ => unreachable!(),
    }).fold(0.0, |a, b| a + b);
    let count = values.len() as i64;
    match (call.function, data_type) {
        (Sum, DataType::Int4) => Datum::Int8(ints().sum::<i128>() as i64),
        (Sum, DataType::Int8) => Datum::Numeric(Numeric::from_i128(ints().sum())),
        (Sum, DataType::Numeric) => Datum::Numeric(numeric_sum()),
        (Sum, DataType::Float8) => Datum::Float8(float_sum()),
        (Avg, DataType::Int4 | DataType::Int8) => {
            Datum::Numeric(Numeric::from_i128(ints().sum()).div(&Numeric::from_i64(count)).unwrap())
        }
        (Avg, DataType::Numeric) => Datum::Numeric(numeric_sum().div(&Numeric::from_i64(count)).unwrap()),
        (Avg, DataType::Float8) => Datum::Float8(float_sum() / count as f64),
        (Min, _) => (*values.iter().min_by(|a, b| compare_datums(a, b)).unwrap()).clone(),
        (Max | BoolOr, _) => (*values.iter().max_by(|a, b| compare_datums(a, b)).unwrap()).clone(),
        (BoolAnd, _) => (*values.iter().min_by(|a, b| compare_datums(a, b)).unwrap()).clone(),
        other => panic!("no oracle for {other:?}"),
    }
}

/// Equal as SQL sees them: same type and equal value (numerics by value, floats with
/// NaN = NaN and -0 = 0), or both NULL.
fn same(a: &Datum, b: &Datum) -> bool {
    match (a, b) {
        (Datum::Null, Datum::Null) => true,
        (Datum::Numeric(x), Datum::Numeric(y)) => x.eq_value(y),
        _ => a.data_type() == b.data_type() && compare_datums(a, b).is_eq(),
    }
}

fn assert_same_groups(mut got: Vec<Row>, expected: Vec<Row>, key_width: usize) {
    got.sort_by(|a, b| GroupKey(a[..key_width].to_vec()).cmp(&GroupKey(b[..key_width].to_vec())));
    assert_eq!(got.len(), expected.len(), "number of groups");
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(g.len(), e.len());
        for (i, (x, y)) in g.iter().zip(e).enumerate() {
            assert!(same(x, y), "column {i} differs: got {g:?}\nexpected {e:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Driving the sink.

/// Rows of one `key` column (about `domain` groups) and the argument columns, aggregated
/// by `calls` under `budget` in `participants` threads: the groups of `expected`, and no
/// temp file left. Memory is not checked.
#[allow(clippy::too_many_arguments)]
fn one_key_case(
    key: KeyType,
    domain: u32,
    raw: &[(u32, u32, u64)],
    calls: &[AggregateCall],
    expected: impl Fn(&[Row]) -> Vec<Row>,
    participants: usize,
    parallel_combine: bool,
    budget: usize,
) {
    let env = Env::new();
    let ctx = env.ctx(4 << 20);
    let rows = make_rows(&[key], domain, raw);
    let keys = group_by(&[key]);
    let workers = if parallel_combine { participants.saturating_sub(1).max(1) } else { 0 };
    let (result, _) = aggregate_with(&ctx, &keys, calls, &rows, participants, workers, budget);
    assert_same_groups(result.unwrap(), expected(&rows), 1);
    assert!(env.temp_is_empty());
}

/// Push `rows` through `participants` participants (threads, each with its own local
/// state, the rows cut into contiguous shares), then combine.
fn aggregate_with(
    ctx: &ExecContext,
    keys: &[Expr],
    calls: &[AggregateCall],
    rows: &[Row],
    participants: usize,
    workers: usize,
    budget: usize,
) -> (Result<Vec<Row>>, AggregateSpillReport) {
    let sink = AggregateSink::new(keys, calls, ctx, workers).with_budget(budget);
    let share = rows.len().div_ceil(participants.max(1)).max(1);
    let pushed: Result<()> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..participants)
            .map(|p| {
                let sink = &sink;
                let mine = rows.get((p * share).min(rows.len())..((p + 1) * share).min(rows.len())).unwrap_or(&[]);
                scope.spawn(move || -> Result<()> {
                    let mut local = sink.local()?;
                    for row in mine {
                        sink.push(&mut local, row)?;
                    }
                    sink.finish(local)
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().unwrap())
    });
    let result = pushed.and_then(|_| sink.take_rows());
    let report = sink.spill_report();
    (result, report)
}

/// The most a tracked figure may exceed the budget by: one group's entry (slots, hash,
/// key and states, text) and the encoding of one record in a reader and in a writer.
fn one_group_slack(key_width: usize, aggregates: usize, max_text: usize) -> usize {
    let entry = 2 * 8 + 8 + 1 + key_width * size_of::<Datum>() + aggregates * size_of::<Accumulator>();
    let text = (key_width + aggregates) * max_text;
    let record = 8 + (key_width + aggregates) * 20 + text;
    entry + text + 2 * record
}

fn check_report(report: &AggregateSpillReport, budget: usize, slack: usize) {
    for &peak in &report.participant_peak_bytes {
        assert!(peak <= budget + slack, "a participant tracked {peak} bytes, budget {budget} + {slack}: {report:?}");
    }
    assert!(
        report.combine_peak_bytes <= budget + slack,
        "a combine task tracked {} bytes, budget {budget} + {slack}: {report:?}",
        report.combine_peak_bytes
    );
}

const MAX_TEXT: usize = 64;

proptest! {
    // 48 cases unless PROPTEST_CASES says otherwise.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    /// Any budget, any number of participants: the oracle's groups and values, memory
    /// within the budget, and no file left.
    #[test]
    fn spilled_aggregation_matches_oracle(
        key_types in prop::collection::vec(
            prop_oneof![Just(KeyType::Int4), Just(KeyType::Int8), Just(KeyType::Text), Just(KeyType::Numeric), Just(KeyType::Float8)],
            1..=2,
        ),
        domain in prop_oneof![Just(3u32), 1u32..40, 40u32..3000],
        raw in prop::collection::vec((any::<u32>(), any::<u32>(), any::<u64>()), 0..2500),
        participants in 1usize..=8,
        parallel_combine in any::<bool>(),
        budget in prop_oneof![Just(4usize << 10), Just(12 << 10), Just(48 << 10), Just(1 << 30)],
    ) {
        let env = Env::new();
        let ctx = env.ctx(4 << 20);
        let rows = make_rows(&key_types, domain, &raw);
        let keys = group_by(&key_types);
        let calls = every_aggregate(keys.len());
        let workers = if parallel_combine { participants.saturating_sub(1).max(1) } else { 0 };
        let (result, report) = aggregate_with(&ctx, &keys, &calls, &rows, participants, workers, budget);
        let got = result.unwrap();
        assert_same_groups(got, oracle(&rows, keys.len(), &calls), keys.len());
        check_report(&report, budget, one_group_slack(keys.len(), calls.len(), MAX_TEXT));
        if budget == 1 << 30 {
            prop_assert_eq!(report.disk_written_bytes, 0);
            prop_assert_eq!(report.batches, 1);
        }
        prop_assert!(env.temp_is_empty());
    }

    /// string_agg (with ORDER BY, so the result is defined) and FILTER, whatever the budget
    /// and the participants. Memory is not checked: one group's string is one state, which
    /// no budget bounds (nor does PostgreSQL's).
    #[test]
    fn ordered_string_agg_and_filter_match_oracle(
        domain in prop_oneof![Just(3u32), 1u32..40, 40u32..3000],
        raw in prop::collection::vec((any::<u32>(), any::<u32>(), any::<u64>()), 0..1500),
        participants in 1usize..=6,
        parallel_combine in any::<bool>(),
        budget in prop_oneof![Just(4usize << 10), Just(48 << 10), Just(1 << 30)],
    ) {
        let calls = string_agg_and_filter_calls();
        one_key_case(KeyType::Int4, domain, &raw, &calls, string_agg_and_filter_oracle, participants, parallel_combine, budget);
    }

    /// `f(DISTINCT x)` next to plain calls and over other arguments (a set of values per
    /// group and call), whatever the budget and the participants. Memory is not checked:
    /// one group's set is one state, which no budget bounds.
    #[test]
    fn distinct_calls_match_oracle(
        domain in prop_oneof![Just(2u32), 1u32..40, 40u32..3000],
        raw in prop::collection::vec((any::<u32>(), any::<u32>(), any::<u64>()), 0..1500),
        participants in 1usize..=6,
        parallel_combine in any::<bool>(),
        budget in prop_oneof![Just(4usize << 10), Just(48 << 10), Just(1 << 30)],
    ) {
        let calls = distinct_and_plain_calls(1);
        one_key_case(KeyType::Int8, domain, &raw, &calls, |rows| oracle(rows, 1, &calls), participants, parallel_combine, budget);
    }

    /// Every partial state and every key datum survives a spill record exactly.
    #[test]
    fn states_round_trip(raw in prop::collection::vec((any::<u32>(), any::<u64>()), 1..40)) {
        let calls = every_aggregate(1);
        for (v, s) in raw {
            let key = [key_datum(KeyType::Float8, v, 9), key_datum(KeyType::Numeric, v, 50), key_datum(KeyType::Text, v, 50)];
            let mut states: Vec<Accumulator> = calls.iter().map(|c| Accumulator::new(c).unwrap()).collect();
            let row: Row = std::iter::once(Datum::Null).chain(arg_datums(s)).collect();
            for (acc, call) in states.iter_mut().zip(&calls) {
                match &call.arg {
                    None => acc.update_count_star(),
                    Some(Expr::Column { index, .. }) => { acc.update_ref(&row[*index]).unwrap(); }
                    Some(_) => unreachable!(),
                }
            }
            let bytes = encode_for_test(&key, &states);
            let mut decoder = Decoder::new(&bytes);
            for k in &key {
                let back = decoder.datum().unwrap();
                prop_assert!(bit_identical(k, &back), "{:?} came back as {:?}", k, back);
            }
            let templates: Vec<Accumulator> = calls.iter().map(|c| Accumulator::new(c).unwrap()).collect();
            for (state, template) in states.iter().zip(&templates) {
                let back = decoder.state(template).unwrap();
                prop_assert!(states_identical(state, &back), "{:?} came back as {:?}", state, back);
            }
            prop_assert!(decoder.at_end());
        }
    }
}

/// Over a row of one int4 key and the `ARG_TYPES` columns: `string_agg(text, '/' ORDER BY
/// text DESC)`, `count(*) FILTER (WHERE int8 IS NOT NULL)`, `string_agg(text, int4::text
/// ORDER BY int4 NULLS FIRST, text) FILTER (WHERE numeric IS NULL)`.
fn string_agg_and_filter_calls() -> Vec<AggregateCall> {
    use crate::plan::AggregateOrderKey;
    let column = |i: usize| Expr::Column { index: 1 + i, data_type: ARG_TYPES[i] };
    let key = |i: usize, descending: bool, nulls_first: bool| AggregateOrderKey { expr: column(i), descending, nulls_first };
    let is_null = |i: usize, negated: bool| Expr::IsNull { expr: Box::new(column(i)), negated };
    let text = Some(column(4));
    let mut plain = AggregateCall::new(AggregateFunction::StringAgg, text.clone(), DataType::Text);
    plain.arg2 = Some(Expr::Literal { value: Datum::Text("/".into()), data_type: DataType::Text });
    plain.order_by = vec![key(4, true, true)];
    let mut count = AggregateCall::new(AggregateFunction::CountStar, None, DataType::Int8);
    count.filter = Some(is_null(1, true));
    let mut filtered = AggregateCall::new(AggregateFunction::StringAgg, text, DataType::Text);
    filtered.arg2 = Some(Expr::Cast { expr: Box::new(column(0)), to: DataType::Text });
    filtered.order_by = vec![key(0, false, true), key(4, false, false)];
    filtered.filter = Some(is_null(2, false));
    vec![plain, count, filtered]
}

fn string_agg_and_filter_oracle(rows: &[Row]) -> Vec<Row> {
    let text = |d: &Datum| match d {
        Datum::Text(s) => Some(s.clone()),
        _ => None,
    };
    let join = |mut parts: Vec<(Vec<Datum>, String, String)>| -> Datum {
        parts.sort_by(|a, b| crate::expr::compare::compare_sort_keys(&a.0, &b.0, &[(false, true), (false, false)]));
        let mut out: Option<String> = None;
        for (_, delimiter, value) in parts {
            out = Some(match out {
                None => value,
                Some(o) => o + &delimiter + &value,
            });
        }
        out.map_or(Datum::Null, Datum::Text)
    };
    let mut groups: BTreeMap<GroupKey, Vec<&Row>> = BTreeMap::new();
    for row in rows {
        groups.entry(GroupKey(row[..1].to_vec())).or_default().push(row);
    }
    groups
        .into_iter()
        .map(|(key, members)| {
            let mut values: Vec<String> = members.iter().filter_map(|r| text(&r[5])).collect();
            values.sort_by(|a, b| b.as_bytes().cmp(a.as_bytes()));
            let plain = if values.is_empty() { Datum::Null } else { Datum::Text(values.join("/")) };
            let count = Datum::Int8(members.iter().filter(|r| !r[2].is_null()).count() as i64);
            let filtered = members
                .iter()
                .filter(|r| r[3].is_null())
                .filter_map(|r| {
                    let delimiter = match &r[1] {
                        Datum::Int4(v) => v.to_string(),
                        _ => String::new(),
                    };
                    Some((vec![r[1].clone(), r[5].clone()], delimiter, text(&r[5])?))
                })
                .collect();
            let mut out = key.0;
            out.extend([plain, count, join(filtered)]);
            out
        })
        .collect()
}

#[test]
fn string_agg_states_round_trip() {
    let mut calls = string_agg_and_filter_calls();
    calls.push(AggregateCall { order_by: Vec::new(), ..calls[0].clone() });
    let mut states: Vec<Accumulator> = calls.iter().map(|c| Accumulator::new(c).unwrap()).collect();
    states[0].update_string_agg("b".into(), Some("/".into()), vec![Datum::Text("b".into())]).unwrap();
    states[0].update_string_agg("ä".into(), None, vec![Datum::Null]).unwrap();
    states[2].update_string_agg("".into(), Some("--".into()), vec![Datum::Int4(-1), Datum::Null]).unwrap();
    states[3].update_string_agg("x".into(), Some("::".into()), Vec::new()).unwrap();
    states[3].update_string_agg("y".into(), Some(",".into()), Vec::new()).unwrap();
    let bytes = encode_for_test(&[], &states);
    let mut decoder = Decoder::new(&bytes);
    for state in &states {
        let template = Accumulator::new(&calls[states.iter().position(|s| std::ptr::eq(s, state)).unwrap()]).unwrap();
        let back = decoder.state(&template).unwrap();
        match (&back, state) {
            // Heap bytes are an estimate from capacities, which may differ.
            (Accumulator::StringAggSorted(x), Accumulator::StringAggSorted(y)) => {
                assert_eq!((&x.rows, &x.order), (&y.rows, &y.order))
            }
            _ => assert_eq!(&back, state),
        }
    }
    assert!(decoder.at_end());
    // A partial state's first delimiter separates it from the state it is appended to.
    let mut merged = states[3].clone();
    merged.merge(states[3].clone()).unwrap();
    assert_eq!(merged.finish().unwrap(), Datum::Text("x,y::x,y".into()));
}

/// The same value and the same representation (scale of a numeric, bits of a float).
fn bit_identical(a: &Datum, b: &Datum) -> bool {
    match (a, b) {
        (Datum::Float8(x), Datum::Float8(y)) => x.to_bits() == y.to_bits(),
        (Datum::Numeric(x), Datum::Numeric(y)) => ({ x.mantissa }, { x.scale }) == ({ y.mantissa }, { y.scale }),
        _ => a == b,
    }
}

fn states_identical(a: &Accumulator, b: &Accumulator) -> bool {
    match (a, b) {
        (Accumulator::SumFloat { sum: x, any: p }, Accumulator::SumFloat { sum: y, any: q }) => x.to_bits() == y.to_bits() && p == q,
        (Accumulator::Min(Some(x)), Accumulator::Min(Some(y))) | (Accumulator::Max(Some(x)), Accumulator::Max(Some(y))) => bit_identical(x, y),
        // NaN spreads are not equal to themselves: compare what they show.
        (Accumulator::FloatMoments { .. } | Accumulator::AvgFloat(_), _) | (Accumulator::Regr { .. }, _) => format!("{a:?}") == format!("{b:?}"),
        _ => a == b,
    }
}

#[test]
fn extreme_states_round_trip() {
    let n = |mantissa: i128, scale: u16| Numeric { mantissa, scale };
    let states = [
        Accumulator::Count(i64::MAX),
        Accumulator::SumInt { sum: i128::MIN, any: true, result: DataType::Numeric },
        Accumulator::SumInt { sum: 0, any: false, result: DataType::Int8 },
        Accumulator::SumFloat { sum: -0.0, any: true },
        Accumulator::SumFloat { sum: f64::from_bits(0x7ff8_0000_dead_beef), any: true },
        Accumulator::SumNumeric { sum: None },
        Accumulator::SumNumeric { sum: Some(n(i128::MAX, 38)) },
        Accumulator::AvgInt { sum: i128::MAX, count: i64::MAX },
        Accumulator::AvgFloat(FloatMoments { n: 3.0, sx: f64::NEG_INFINITY, sxx: f64::NAN }),
        Accumulator::AvgNumeric { sum: Some(n(-100, 2)), count: 7 },
        Accumulator::AvgNumeric { sum: None, count: 0 },
        Accumulator::Min(None),
        Accumulator::Max(None),
        Accumulator::Min(Some(Datum::Text(String::new()))),
        Accumulator::Max(Some(Datum::Text("ünïcødé ✓".into()))),
        Accumulator::Min(Some(Datum::Numeric(n(1000, 3)))),
        Accumulator::Max(Some(Datum::Float8(-0.0))),
        Accumulator::Min(Some(Datum::Int4(i32::MIN))),
        Accumulator::Max(Some(Datum::Int8(i64::MAX))),
        Accumulator::Max(Some(Datum::Bool(true))),
    ];
    let key = [Datum::Null, Datum::Bool(false), Datum::Numeric(n(-5, 1)), Datum::Text("a\u{0}b".into())];
    let bytes = encode_for_test(&key, &states);
    let mut decoder = Decoder::new(&bytes);
    for k in &key {
        assert!(bit_identical(k, &decoder.datum().unwrap()));
    }
    for state in &states {
        let template = match state {
            Accumulator::SumInt { result, .. } => Accumulator::SumInt { sum: 0, any: false, result: *result },
            other => other.clone(),
        };
        let back = decoder.state(&template).unwrap();
        assert!(states_identical(state, &back), "{state:?} came back as {back:?}");
    }
    assert!(decoder.at_end());
}

/// Many groups, a budget of a few groups: partitions are repartitioned several levels
/// deep, and the answer is still the oracle's.
#[test]
fn deep_repartitioning() {
    let env = Env::new();
    let ctx = env.ctx(4 << 20);
    let key_types = [KeyType::Text, KeyType::Int4];
    let raw: Vec<(u32, u32, u64)> = (0..20_000u64)
        .map(|i| {
            let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            ((h >> 7) as u32, (h >> 40) as u32, h ^ (h >> 29))
        })
        .collect();
    let rows = make_rows(&key_types, 6000, &raw);
    let keys = group_by(&key_types);
    let calls = every_aggregate(keys.len());
    let budget = 8 << 10;
    for (participants, workers) in [(1, 0), (4, 3), (8, 7)] {
        let (result, report) = aggregate_with(&ctx, &keys, &calls, &rows, participants, workers, budget);
        assert_same_groups(result.unwrap(), oracle(&rows, keys.len(), &calls), keys.len());
        check_report(&report, budget, one_group_slack(keys.len(), calls.len(), MAX_TEXT));
        assert!(report.max_level >= 2, "expected repartitioning: {report:?}");
        assert!(report.batches > Budget::new(budget).partitions() as u64, "{report:?}");
        assert!(report.disk_peak_bytes > 0 && report.disk_written_bytes >= report.disk_peak_bytes);
        assert!(report.explain_line().contains("Disk Usage: "), "{}", report.explain_line());
        assert!(env.temp_is_empty());
    }
}

/// With room for every group nothing is written, and the EXPLAIN line says so.
#[test]
fn fitting_groups_stay_in_memory() {
    let env = Env::new();
    let ctx = env.ctx(4 << 20);
    let key_types = [KeyType::Int8];
    let raw: Vec<(u32, u32, u64)> = (0..5000u64).map(|i| (i as u32, 0, i * 7919)).collect();
    let rows = make_rows(&key_types, 500, &raw);
    let keys = group_by(&key_types);
    let calls = every_aggregate(1);
    let (result, report) = aggregate_with(&ctx, &keys, &calls, &rows, 3, 2, 8 << 20);
    assert_same_groups(result.unwrap(), oracle(&rows, 1, &calls), 1);
    assert_eq!((report.batches, report.disk_peak_bytes, report.spill_files), (1, 0, 0));
    assert!(report.peak_memory_bytes > 0);
    let line = report.explain_line();
    assert!(line.starts_with("Batches: 1  Memory Usage: ") && line.ends_with("kB") && !line.contains("Disk"), "{line}");
}

fn series_pipeline(count: i64, steps: Vec<Step>, workers: usize) -> Pipeline {
    Pipeline {
        source: Source::Series { start: 1, stop: count, step: 1, data_type: DataType::Int8, label: ScanLabel::default() },
        steps,
        workers,
    }
}

fn col(index: usize, data_type: DataType) -> Expr {
    Expr::Column { index, data_type }
}

fn binary(op: BinaryOp, left: Expr, right: Expr, data_type: DataType) -> Expr {
    Expr::Binary { op, left: Box::new(left), right: Box::new(right), data_type }
}

fn lit8(v: i64) -> Expr {
    Expr::Literal { value: Datum::Int8(v), data_type: DataType::Int8 }
}

/// `SELECT x % groups, count(*), sum(x), min(x), max(x) FROM generate_series(1, n) x
/// GROUP BY 1` through a real pipeline on the worker pool, under `work_mem`.
#[test]
fn pipeline_on_the_worker_pool_spills_within_work_mem() {
    let env = Env::new();
    let (n, groups) = (60_000i64, 7_000i64);
    let work_mem = 64 << 10;
    let ctx = env.ctx(work_mem);
    let steps = vec![Step::Project(vec![binary(BinaryOp::Mod, col(0, DataType::Int8), lit8(groups), DataType::Int8), col(0, DataType::Int8)])];
    let keys = vec![col(0, DataType::Int8)];
    let x = || Some(col(1, DataType::Int8));
    let calls = vec![
        AggregateCall::new(AggregateFunction::CountStar, None, DataType::Int8),
        AggregateCall::new(AggregateFunction::Sum, x(), DataType::Numeric),
        AggregateCall::new(AggregateFunction::Min, x(), DataType::Int8),
        AggregateCall::new(AggregateFunction::Max, x(), DataType::Int8),
    ];
    for workers in [0, 3, 7] {
        let pipeline = series_pipeline(n, steps.clone(), workers);
        let sink = AggregateSink::new(&keys, &calls, &ctx, workers);
        run_pipeline(&pipeline, &ctx, &sink).unwrap();
        let mut rows = sink.take_rows().unwrap();
        let report = sink.spill_report();
        rows.sort_by(|a, b| compare_datums(&a[0], &b[0]));
        assert_eq!(rows.len() as i64, groups);
        for (r, row) in rows.iter().enumerate() {
            let r = r as i64;
            let members: Vec<i64> = (0..).map(|k| k * groups + r).skip_while(|&v| v == 0).take_while(|&v| v <= n).collect();
            let sum: i128 = members.iter().map(|&v| v as i128).sum();
            assert_eq!(row[0], Datum::Int8(r));
            assert_eq!(row[1], Datum::Int8(members.len() as i64));
            assert!(same(&row[2], &Datum::Numeric(Numeric::from_i128(sum))));
            assert_eq!(row[3], Datum::Int8(members[0]));
            assert_eq!(row[4], Datum::Int8(*members.last().unwrap()));
        }
        assert!(report.spilled_participants >= 1 && report.disk_written_bytes > 0, "{report:?}");
        check_report(&report, work_mem, one_group_slack(1, calls.len(), 0));
        drop(sink);
        assert!(env.temp_is_empty());
    }
}

/// An error in the first pass, after spilling began, leaves no file behind.
#[test]
fn error_in_first_pass_removes_temp_files() {
    // Key: 1000000 / (x - 50000): division by zero at x = 50000, long after the first flush.
    let key = binary(BinaryOp::Div, lit8(1_000_000_000), binary(BinaryOp::Sub, col(0, DataType::Int8), lit8(50_000), DataType::Int8), DataType::Int8);
    let steps = vec![Step::Project(vec![key, col(0, DataType::Int8)])];
    let keys = vec![col(0, DataType::Int8)];
    let calls = vec![AggregateCall::new(AggregateFunction::Max, Some(col(1, DataType::Int8)), DataType::Int8)];
    for workers in [0, 5] {
        let env = Env::new();
        let ctx = env.ctx(32 << 10);
        let pipeline = series_pipeline(100_000, steps.clone(), workers);
        let sink = AggregateSink::new(&keys, &calls, &ctx, workers);
        let err = run_pipeline(&pipeline, &ctx, &sink).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::DIVISION_BY_ZERO, "{err:?}");
        assert!(sink.spill_report().spilled_participants >= 1);
        drop(sink);
        assert!(env.temp_is_empty());
    }
}

/// An error while combining (numeric overflow merging two participants' sums of one
/// group) leaves no file behind.
#[test]
fn error_in_combine_removes_temp_files() {
    let keys = vec![col(0, DataType::Int8)];
    let calls = vec![AggregateCall::new(AggregateFunction::Sum, Some(col(1, DataType::Numeric)), DataType::Numeric)];
    let huge = Datum::Numeric(Numeric { mantissa: i128::MAX / 3 * 2, scale: 0 });
    // Two participants, each: one huge value in group 0 among many small groups.
    let mut rows: Vec<Row> = Vec::new();
    for p in 0..2i64 {
        rows.push(vec![Datum::Int8(0), huge.clone()]);
        for g in 1..3000 {
            rows.push(vec![Datum::Int8(g + p), Datum::Numeric(Numeric::from_i64(g))]);
        }
    }
    for workers in [0, 1] {
        let env = Env::new();
        let ctx = env.ctx(4 << 20);
        let (result, report) = aggregate_with(&ctx, &keys, &calls, &rows, 2, workers, 16 << 10);
        let err = result.unwrap_err();
        assert_eq!(err.sqlstate, SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "{err:?}");
        assert!(report.disk_written_bytes > 0, "{report:?}");
        assert!(env.temp_is_empty());
    }
}

/// A cancel between the passes stops the combine and removes the files.
#[test]
fn cancel_removes_temp_files() {
    let env = Env::new();
    let ctx = env.ctx(4 << 20);
    let keys = vec![col(0, DataType::Int8)];
    let calls = vec![AggregateCall::new(AggregateFunction::CountStar, None, DataType::Int8)];
    let rows: Vec<Row> = (0..20_000).map(|i| vec![Datum::Int8(i * 31 % 9000)]).collect();
    let sink = AggregateSink::new(&keys, &calls, &ctx, 3).with_budget(8 << 10);
    for share in rows.chunks(5000) {
        let mut local = sink.local().unwrap();
        for row in share {
            sink.push(&mut local, row).unwrap();
        }
        sink.finish(local).unwrap();
    }
    assert!(!env.temp_is_empty(), "the first pass should have spilled");
    env.cancel.cancel();
    let err = sink.take_rows().unwrap_err();
    assert_eq!(err.sqlstate, SqlState::QUERY_CANCELED);
    assert!(env.temp_is_empty());
}

/// Budgets split as documented: the table's share plus buffers never exceed the total.
#[test]
fn budget_shares() {
    for total in [1usize << 10, 4 << 10, 64 << 10, 1 << 20, 8 << 20, 1 << 30] {
        let b = Budget::new(total);
        assert!(b.partitions() >= 4 && b.partitions() <= 64);
        assert!(b.first_pass_limit() <= total && b.combine_limit() <= b.first_pass_limit());
        if total >= 4 << 10 {
            assert!(b.combine_limit() >= total / 2, "{b:?}");
        }
    }
}

/// Not an assertion on time: prints what 10M rows into 1M groups do under
/// `work_mem = 4MB × 2` (run with `-- --ignored --nocapture`).
#[test]
#[ignore]
fn report_ten_million_rows_into_a_million_groups() {
    let env = Env::new();
    let mut ctx = env.ctx(4 << 20);
    ctx.hash.hash_mem_multiplier = 2.0;
    let steps = vec![Step::Project(vec![binary(BinaryOp::Mod, col(0, DataType::Int8), lit8(1_000_000), DataType::Int8), col(0, DataType::Int8)])];
    let keys = vec![col(0, DataType::Int8)];
    let calls = vec![
        AggregateCall::new(AggregateFunction::CountStar, None, DataType::Int8),
        AggregateCall::new(AggregateFunction::Sum, Some(col(1, DataType::Int8)), DataType::Numeric),
    ];
    for workers in [0, 1] {
        let pipeline = series_pipeline(10_000_000, steps.clone(), workers);
        let began = std::time::Instant::now();
        let sink = AggregateSink::new(&keys, &calls, &ctx, workers);
        run_pipeline(&pipeline, &ctx, &sink).unwrap();
        let rows = sink.take_rows().unwrap();
        let elapsed = began.elapsed();
        assert_eq!(rows.len(), 1_000_000);
        let report = sink.spill_report();
        eprintln!("workers={workers}: {elapsed:?}  {}\n  {report:?}", report.explain_line());
    }
}

/// A distinct set survives a spill record (values, delimiter) and finishes in ascending
/// order, each value once.
#[test]
fn distinct_states_round_trip() {
    let mut call = AggregateCall::new(AggregateFunction::StringAgg, Some(col(0, DataType::Text)), DataType::Text);
    call.arg2 = Some(Expr::Literal { value: Datum::Text(", ".into()), data_type: DataType::Text });
    call.distinct = true;
    let mut state = Accumulator::new(&call).unwrap();
    for value in ["b", "a", "b", "c", "a"] {
        state.update_string_agg(value.into(), Some(", ".into()), Vec::new()).unwrap();
    }
    let bytes = encode_for_test(&[], std::slice::from_ref(&state));
    let back = Decoder::new(&bytes).state(&Accumulator::new(&call).unwrap()).unwrap();
    let (Accumulator::Distinct(x), Accumulator::Distinct(y)) = (&back, &state) else { panic!("{back:?}") };
    assert_eq!((&x.values, &x.delimiter), (&y.values, &y.delimiter));
    assert_eq!(back.finish().unwrap(), Datum::Text("a, b, c".into()));

    let mut sum = AggregateCall::new(AggregateFunction::Sum, Some(col(0, DataType::Int4)), DataType::Int8);
    sum.distinct = true;
    let mut a = Accumulator::new(&sum).unwrap();
    let mut b = Accumulator::new(&sum).unwrap();
    for v in [1, 2, 2, 5] {
        a.update_ref(&Datum::Int4(v)).unwrap();
    }
    for v in [5, 7, 1] {
        b.update_ref(&Datum::Int4(v)).unwrap();
    }
    a.update_ref(&Datum::Null).unwrap();
    a.merge(b).unwrap();
    assert_eq!(a.finish().unwrap(), Datum::Int8(15));
}

/// A state of `function` over `input` after `values` (NULLs skipped).
fn state_after(function: AggregateFunction, input: DataType, values: &[Datum]) -> Accumulator {
    let result = AggregateCall::result_type_for(function, Some(input)).unwrap();
    let mut state = Accumulator::new(&AggregateCall::new(function, Some(col(0, input)), result)).unwrap();
    for v in values {
        state.update_ref(v).unwrap();
    }
    state
}

/// Finish `values` whole, and split in two states merged (as partial aggregates are), and
/// through a spill record; all three must print `expected` (PostgreSQL 15's output).
fn check_statistic(function: AggregateFunction, input: DataType, values: &[Datum], split: usize, expected: &str) {
    let show = shown;
    let whole = state_after(function, input, values);
    let mut merged = state_after(function, input, &values[..split]);
    merged.merge(state_after(function, input, &values[split..])).unwrap();
    let bytes = encode_for_test(&[], std::slice::from_ref(&merged));
    let template = state_after(function, input, &[]);
    let back = Decoder::new(&bytes).state(&template).unwrap();
    assert!(states_identical(&back, &merged), "{back:?} vs {merged:?}");
    assert_eq!(show(whole.finish().unwrap()), expected, "{function:?}({input:?}) whole");
    let merged = show(merged.finish().unwrap());
    let close = merged == expected
        || match (merged.parse::<f64>(), expected.parse::<f64>()) {
        (Ok(a), Ok(b)) if input == DataType::Float8 => (a - b).abs() <= 1e-12 * a.abs().max(b.abs()),
        _ => merged == expected,
    };
    assert!(close, "{function:?}({input:?}) merged: {merged} vs {expected}");
    assert_eq!(show(back.finish().unwrap()), merged);
}

/// A result as PostgreSQL prints it ("" for NULL).
fn shown(d: Datum) -> String {
    match d {
        Datum::Null => String::new(),
        Datum::Float8(f) => weft_common::types::format_float8(f),
        Datum::Int4(v) => v.to_string(),
        Datum::Int8(v) => v.to_string(),
        Datum::Numeric(v) => v.to_string(),
        other => format!("{other:?}"),
    }
}

/// NaN and the infinities in numeric sums, averages and spreads, whole, merged from two
/// partial states (the special value in either one) and through a spill record.
#[test]
fn numeric_specials_aggregate_as_postgresql() {
    use AggregateFunction::*;
    let values = |texts: &[&str]| -> Vec<Datum> { texts.iter().map(|s| Datum::Numeric(Numeric::parse(s).unwrap())).collect() };
    // select sum(x), avg(x) from (values (1::numeric), ('inf')) v(x)  =>  Infinity | Infinity
    // ... (1), ('-inf')  =>  -Infinity | -Infinity;  (1), ('inf'), ('-inf')  =>  NaN | NaN;  (1), ('nan')  =>  NaN | NaN
    let cases: [(&[&str], &str); 4] =
        [(&["1", "Infinity"], "Infinity"), (&["1", "-Infinity"], "-Infinity"), (&["Infinity", "1", "-Infinity"], "NaN"), (&["1.5", "NaN"], "NaN")];
    for (inputs, expected) in cases {
        let inputs = values(inputs);
        for split in 0..=inputs.len() {
            check_statistic(Sum, DataType::Numeric, &inputs, split, expected);
            check_statistic(Avg, DataType::Numeric, &inputs, split, expected);
        }
    }
    // select stddev(x), var_pop(x) from (values (1::numeric), ('inf')) v(x)  =>  NaN | NaN;
    // one 'inf': stddev NULL, var_pop NaN.
    for split in 0..=2 {
        check_statistic(Stddev, DataType::Numeric, &values(&["1", "Infinity"]), split, "NaN");
        check_statistic(VarPop, DataType::Numeric, &values(&["NaN", "2"]), split, "NaN");
    }
    check_statistic(Stddev, DataType::Numeric, &values(&["Infinity"]), 1, "");
    check_statistic(VarPop, DataType::Numeric, &values(&["-Infinity"]), 0, "NaN");
}

#[test]
fn variance_family_matches_postgresql() {
    use AggregateFunction::*;
    let ints: Vec<Datum> = [1, 2, 3, 4, 10].into_iter().map(Datum::Int4).chain([Datum::Null]).collect();
    for (f, expected) in [(Stddev, "3.5355339059327376"), (StddevPop, "3.1622776601683793"), (VarSamp, "12.5000000000000000"), (VarPop, "10.0000000000000000")] {
        check_statistic(f, DataType::Int4, &ints, 2, expected);
        let bigints: Vec<Datum> = ints.iter().map(|d| if let Datum::Int4(v) = d { Datum::Int8(*v as i64) } else { Datum::Null }).collect();
        check_statistic(f, DataType::Int8, &bigints, 3, expected);
    }
    let numerics: Vec<Datum> = ["1.5", "2.25", "-3.125"].into_iter().map(|s| Datum::Numeric(Numeric::parse(s).unwrap())).collect();
    check_statistic(Stddev, DataType::Numeric, &numerics, 1, "2.9110064124514280");
    check_statistic(VarPop, DataType::Numeric, &numerics, 2, "5.6493055555555556");
    // Squares past numeric's 38 digits (int8 extremes, numerics with 20 decimals) are
    // summed exactly, as PostgreSQL's numeric state sums them.
    let extremes = [Datum::Int8(i64::MAX), Datum::Int8(i64::MIN), Datum::Int8(5)];
    for (f, expected) in [
        (Stddev, "9223372036854775808"),
        (VarPop, "56713727820156410571080186547391518044"),
        (VarSamp, "85070591730234615856620279821087277066"),
        (StddevPop, "7530851732716320752"),
    ] {
        for split in 0..=3 {
            check_statistic(f, DataType::Int8, &extremes, split, expected);
        }
    }
    let wide = |texts: &[&str]| -> Vec<Datum> { texts.iter().map(|s| Datum::Numeric(Numeric::parse(s).unwrap())).collect() };
    let same = wide(&["0.37000000000000000000", "0.37000000000000000000", "0.37000000000000000000"]);
    check_statistic(VarPop, DataType::Numeric, &same, 1, "0");
    check_statistic(Stddev, DataType::Numeric, &same, 2, "0");
    let close = wide(&["0.10000000000000000000", "0.11000000000000000000", "0.10500000000000000000"]);
    check_statistic(VarSamp, DataType::Numeric, &close, 1, "0.0000250000000000000000000000000000000000");
    check_statistic(Stddev, DataType::Numeric, &close, 2, "0.0050000000000000000000000000000000000000");
    check_statistic(VarPop, DataType::Numeric, &close, 0, "0.0000166666666666666666666666666666666667");
    let mixed = wide(&["123456789012345678.5", "-98765432109876543.25", "7"]);
    check_statistic(Variance, DataType::Numeric, &mixed, 1, "12396484148930549499990349981522143.3958");
    check_statistic(Stddev, DataType::Numeric, &mixed, 2, "111339499500090036.5552");
    let floats: Vec<Datum> = [0.1, 0.2, 0.3, 1e10, -7.5].into_iter().map(Datum::Float8).collect();
    for (f, expected) in [
        (StddevSamp, "4472135955.771023"),
        (StddevPop, "4000000000.6900005"),
        (Variance, "2.0000000006900003e+19"),
        (VarPop, "1.6000000005520003e+19"),
    ] {
        check_statistic(f, DataType::Float8, &floats, 2, expected);
    }
    // One value: no sample statistic; a population one of 0 (numeric 0 without digits).
    check_statistic(Stddev, DataType::Int4, &[Datum::Int4(5)], 0, "");
    check_statistic(StddevPop, DataType::Int4, &[Datum::Int4(5)], 1, "0");
    check_statistic(VarPop, DataType::Float8, &[Datum::Float8(5.0)], 1, "0");
    check_statistic(VarPop, DataType::Numeric, &[], 0, "");
    // An infinite input makes the spread NaN; finite inputs overflowing are an error.
    check_statistic(VarPop, DataType::Float8, &[Datum::Float8(f64::INFINITY), Datum::Float8(1.0)], 1, "NaN");
    let mut state = state_after(VarPop, DataType::Float8, &[Datum::Float8(1e308)]);
    assert_eq!(state.update_ref(&Datum::Float8(1e308)).unwrap_err().sqlstate, SqlState::NUMERIC_VALUE_OUT_OF_RANGE);
}

#[test]
fn bitwise_aggregates_match_postgresql() {
    use AggregateFunction::*;
    let values = [Datum::Int4(-6), Datum::Null, Datum::Int4(7), Datum::Int4(12)];
    for (f, expected) in [(BitAnd, "0"), (BitOr, "-1"), (BitXor, "-15")] {
        check_statistic(f, DataType::Int4, &values, 1, expected);
        check_statistic(f, DataType::Int4, &values, 0, expected);
        check_statistic(f, DataType::Int4, &[], 0, "");
    }
    let big = [Datum::Int8(1 << 40), Datum::Int8((1 << 40) | 3)];
    check_statistic(BitXor, DataType::Int8, &big, 1, "3");
    assert_eq!(state_after(BitOr, DataType::Int4, &[Datum::Int4(-1)]).finish().unwrap(), Datum::Int4(-1));
}

#[test]
fn regression_aggregates_match_postgresql() {
    use AggregateFunction::*;
    let pairs = [(Some(1.0), Some(0.5)), (Some(2.5), Some(1.5)), (None, Some(1.0)), (Some(2.0), Some(3.25)), (Some(3.0), None), (Some(7.0), Some(4.0))];
    let expected = [
        (Corr, "0.7720936108259834"),
        (CovarPop, "2.4609375"),
        (CovarSamp, "3.28125"),
        (RegrCount, "4"),
        (RegrAvgX, "2.3125"),
        (RegrAvgY, "3.125"),
        (RegrSlope, "1.2830957230142566"),
        (RegrIntercept, "0.15784114052953147"),
        (RegrR2, "0.596128543878305"),
        (RegrSxx, "7.671875"),
        (RegrSyy, "21.1875"),
        (RegrSxy, "9.84375"),
    ];
    let call_of = |f: AggregateFunction| {
        let result = AggregateCall::result_type_for(f, Some(DataType::Float8)).unwrap();
        let mut call = AggregateCall::new(f, Some(col(0, DataType::Float8)), result);
        call.arg2 = Some(col(1, DataType::Float8));
        call
    };
    let eval = EvalContext::with_seed(1);
    let rows: Vec<Row> = pairs.iter().map(|&(y, x)| vec![y.map_or(Datum::Null, Datum::Float8), x.map_or(Datum::Null, Datum::Float8)]).collect();
    let show = shown;
    for (f, expected) in expected {
        let call = call_of(f);
        let fed = |rows: &[Row]| {
            let mut state = Accumulator::new(&call).unwrap();
            for row in rows {
                super::update_call(&mut state, &call, row, &eval).unwrap();
            }
            state
        };
        assert_eq!(show(fed(&rows).finish().unwrap()), expected, "{f:?}");
        let mut merged = fed(&rows[..3]);
        merged.merge(fed(&rows[3..])).unwrap();
        let bytes = encode_for_test(&[], std::slice::from_ref(&merged));
        let back = Decoder::new(&bytes).state(&Accumulator::new(&call).unwrap()).unwrap();
        assert!(states_identical(&back, &merged));
        let got: f64 = show(back.finish().unwrap()).parse().unwrap();
        let want: f64 = expected.parse().unwrap();
        assert!((got - want).abs() <= 1e-12 * want.abs(), "{f:?} merged: {got} vs {want}");
        // No rows: NULL, and a count of 0.
        let empty = fed(&[]).finish().unwrap();
        assert_eq!(empty, if f == RegrCount { Datum::Int8(0) } else { Datum::Null });
    }
    // A vertical line (all X equal): no slope, no correlation; a horizontal one: r² = 1.
    let flat: Vec<Row> = [(1.0, 2.0), (3.0, 2.0)].iter().map(|&(y, x)| vec![Datum::Float8(y), Datum::Float8(x)]).collect();
    let finish = |f, rows: &[Row]| {
        let call = call_of(f);
        let mut state = Accumulator::new(&call).unwrap();
        rows.iter().for_each(|r| {
            super::update_call(&mut state, &call, r, &eval).unwrap();
        });
        state.finish().unwrap()
    };
    assert_eq!(finish(RegrSlope, &flat), Datum::Null);
    assert_eq!(finish(Corr, &flat), Datum::Null);
    let horizontal: Vec<Row> = flat.iter().map(|r| vec![r[1].clone(), r[0].clone()]).collect();
    assert_eq!(finish(RegrR2, &horizontal), Datum::Float8(1.0));
}

// ---------------------------------------------------------------------------------------
// Ordered-set and hypothetical-set aggregates.

/// Over a row of one int4 key and the `ARG_TYPES` columns (1 int4, 2 int8, 3 numeric,
/// 4 float8, 5 text): percentile_cont(0.37) WITHIN GROUP (ORDER BY float8 DESC),
/// percentile_disc(0.5) (ORDER BY text), mode() (ORDER BY int4 % 5), rank(0) (ORDER BY
/// int4 DESC NULLS LAST) FILTER (WHERE numeric IS NULL), dense_rank('8', 0.0) (ORDER BY
/// text NULLS FIRST, float8), cume_dist(100) (ORDER BY int8) and percent_rank(key) (ORDER
/// BY int4 % 7): a hypothetical row read from the group key, as `rank(k)` with GROUP BY k.
fn ordered_set_calls() -> Vec<AggregateCall> {
    use crate::plan::AggregateOrderKey;
    use AggregateFunction::*;
    let column = |i: usize| Expr::Column { index: 1 + i, data_type: ARG_TYPES[i] };
    let key = |expr: Expr, descending: bool, nulls_first: bool| AggregateOrderKey { expr, descending, nulls_first };
    let lit = |value: Datum, data_type: DataType| Expr::Literal { value, data_type };
    let modulo = |m: i64| binary(BinaryOp::Mod, column(0), Expr::Literal { value: Datum::Int4(m as i32), data_type: DataType::Int4 }, DataType::Int4);
    let call = |function, order_by: Vec<AggregateOrderKey>, direct: Vec<Expr>, result_type| {
        let mut c = AggregateCall::new(function, Some(order_by[0].expr.clone()), result_type);
        c.order_by = order_by;
        c.direct = direct;
        c
    };
    let fraction = |f: f64| lit(Datum::Float8(f), DataType::Float8);
    let mut rank = call(HypotheticalRank, vec![key(column(0), true, false)], vec![lit(Datum::Int4(0), DataType::Int4)], DataType::Int8);
    rank.filter = Some(Expr::IsNull { expr: Box::new(column(2)), negated: false });
    vec![
        call(PercentileCont, vec![key(column(3), true, true)], vec![fraction(0.37)], DataType::Float8),
        call(PercentileDisc, vec![key(column(4), false, false)], vec![fraction(0.5)], DataType::Text),
        call(Mode, vec![key(modulo(5), false, false)], Vec::new(), DataType::Int4),
        rank,
        call(
            HypotheticalDenseRank,
            vec![key(column(4), false, true), key(column(3), false, false)],
            vec![lit(Datum::Text("8".into()), DataType::Text), fraction(0.0)],
            DataType::Int8,
        ),
        call(HypotheticalCumeDist, vec![key(column(1), false, false)], vec![lit(Datum::Int8(100), DataType::Int8)], DataType::Float8),
        call(HypotheticalPercentRank, vec![key(modulo(7), false, false)], vec![col(0, DataType::Int4)], DataType::Float8),
    ]
}

/// The calls of `ordered_set_calls` computed from each group's rows by definition.
fn ordered_set_oracle(rows: &[Row]) -> Vec<Row> {
    use crate::expr::compare::compare_sort_keys;
    let mut groups: BTreeMap<GroupKey, Vec<&Row>> = BTreeMap::new();
    for row in rows {
        groups.entry(GroupKey(row[..1].to_vec())).or_default().push(row);
    }
    let sorted = |members: &[&Row], i: usize, descending: bool| -> Vec<Datum> {
        let mut v: Vec<Datum> = members.iter().map(|r| r[i].clone()).filter(|d| !d.is_null()).collect();
        v.sort_by(|a, b| if descending { compare_datums(b, a) } else { compare_datums(a, b) });
        v
    };
    let modulo = |d: &Datum, m: i32| match d {
        Datum::Int4(v) => Datum::Int4(v % m),
        _ => Datum::Null,
    };
    // Rows before the hypothetical row, rows equal to it, all rows.
    let counts = |keys: &[Vec<Datum>], row: &[Datum], order: &[(bool, bool)]| {
        let before = keys.iter().filter(|k| compare_sort_keys(k, row, order).is_lt()).count();
        let peers = keys.iter().filter(|k| compare_sort_keys(k, row, order).is_eq()).count();
        (before as i64, peers as i64, keys.len() as i64)
    };
    groups
        .into_iter()
        .map(|(key, members)| {
            let floats = sorted(&members, 4, true);
            let cont = match floats.len() {
                0 => Datum::Null,
                n => {
                    let at = 0.37 * (n - 1) as f64;
                    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
                    let (Datum::Float8(x), Datum::Float8(y)) = (&floats[lo], &floats[hi]) else { unreachable!() };
                    Datum::Float8(if lo == hi { *x } else { x + (y - x) * (at - lo as f64) })
                }
            };
            let texts = sorted(&members, 5, false);
            let disc = match texts.len() {
                0 => Datum::Null,
                n => texts[((0.5 * n as f64).ceil() as usize).max(1) - 1].clone(),
            };
            let mut fives: BTreeMap<i32, usize> = BTreeMap::new();
            for r in &members {
                if let Datum::Int4(v) = modulo(&r[1], 5) {
                    *fives.entry(v).or_default() += 1;
                }
            }
            let most = fives.values().copied().max();
            let mode = fives.iter().find(|(_, &n)| Some(n) == most).map_or(Datum::Null, |(v, _)| Datum::Int4(*v));
            let filtered: Vec<Vec<Datum>> = members.iter().filter(|r| r[3].is_null()).map(|r| vec![r[1].clone()]).collect();
            let rank = Datum::Int8(counts(&filtered, &[Datum::Int4(0)], &[(true, false)]).0 + 1);
            let pairs: Vec<Vec<Datum>> = members.iter().map(|r| vec![r[5].clone(), r[4].clone()]).collect();
            let pair_order = [(false, true), (false, false)];
            let hypothetical = [Datum::Text("8".into()), Datum::Float8(0.0)];
            let mut before: Vec<&Vec<Datum>> = pairs.iter().filter(|k| compare_sort_keys(k, &hypothetical, &pair_order).is_lt()).collect();
            before.sort_by(|a, b| compare_sort_keys(a, b, &pair_order));
            before.dedup_by(|a, b| compare_sort_keys(a, b, &pair_order).is_eq());
            let dense = Datum::Int8(before.len() as i64 + 1);
            let int8s: Vec<Vec<Datum>> = members.iter().map(|r| vec![r[2].clone()]).collect();
            let (b, p, t) = counts(&int8s, &[Datum::Int8(100)], &[(false, false)]);
            let cume = Datum::Float8((b + p + 1) as f64 / (t + 1) as f64);
            let sevens: Vec<Vec<Datum>> = members.iter().map(|r| vec![modulo(&r[1], 7)]).collect();
            let (b, _, t) = counts(&sevens, &key.0, &[(false, false)]);
            let percent = Datum::Float8(if t == 0 { 0.0 } else { b as f64 / t as f64 });
            let mut out = key.0;
            out.extend([cont, disc, mode, rank, dense, cume, percent]);
            out
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Ordered-set and hypothetical-set calls give each group's answer whatever the
    /// budget (spilled partial states, repartitioned) and the participants (partial
    /// states merged in any order).
    #[test]
    fn ordered_set_calls_match_oracle(
        domain in prop_oneof![Just(3u32), 1u32..40, 40u32..3000],
        raw in prop::collection::vec((any::<u32>(), any::<u32>(), any::<u64>()), 0..1500),
        participants in 1usize..=6,
        parallel_combine in any::<bool>(),
        budget in prop_oneof![Just(4usize << 10), Just(48 << 10), Just(1 << 30)],
    ) {
        let calls = ordered_set_calls();
        one_key_case(KeyType::Int4, domain, &raw, &calls, ordered_set_oracle, participants, parallel_combine, budget);
    }

    /// A state split in pieces merged in any order, and sent through a spill record,
    /// finishes as the whole does.
    #[test]
    fn ordered_set_states_merge_in_any_order(
        raw in prop::collection::vec((any::<u32>(), any::<u32>(), any::<u64>()), 0..300),
        cuts in prop::collection::vec(0usize..300, 0..4),
        reversed in any::<bool>(),
    ) {
        let env = Env::new();
        let calls = ordered_set_calls();
        let rows = make_rows(&[KeyType::Int4], 1, &raw); // one group: every key NULL
        let state_of = |rows: &[Row]| -> Vec<Accumulator> {
            let mut states: Vec<Accumulator> = calls.iter().map(|c| Accumulator::new(c).unwrap()).collect();
            for row in rows {
                for (s, c) in states.iter_mut().zip(&calls) {
                    super::update_call(s, c, row, &env.eval).unwrap();
                }
            }
            states
        };
        let whole = state_of(&rows);
        let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (rows.len() + 1)).collect();
        bounds.extend([0, rows.len()]);
        bounds.sort_unstable();
        let mut pieces: Vec<Vec<Accumulator>> = bounds.windows(2).map(|w| state_of(&rows[w[0]..w[1]])).collect();
        if reversed {
            pieces.reverse();
        }
        let mut merged = state_of(&[]);
        for piece in pieces {
            // Each piece goes through a spill record first.
            let bytes = encode_for_test(&[], &piece);
            let mut decoder = Decoder::new(&bytes);
            for (m, template) in merged.iter_mut().zip(state_of(&[])) {
                m.merge(decoder.state(&template).unwrap()).unwrap();
            }
            prop_assert!(decoder.at_end());
        }
        for (w, m) in whole.into_iter().zip(merged) {
            let (w, m) = (w.finish(), m.finish());
            match (w, m) {
                (Ok(w), Ok(m)) => prop_assert!(same(&w, &m), "{w:?} vs {m:?}"),
                (w, m) => prop_assert!(false, "{w:?} vs {m:?}"),
            }
        }
    }
}

/// PostgreSQL's results on small inputs (checked against PostgreSQL 15), and a fraction
/// out of range failing even over no rows.
#[test]
fn ordered_set_edge_cases() {
    use AggregateFunction::*;
    let f8 = |v: f64| Datum::Float8(v);
    let finish = |function, fraction: Datum, order: (bool, bool), values: &[Datum]| -> Result<Datum> {
        let t = values.iter().find(|v| !v.is_null()).and_then(|v| v.data_type()).unwrap_or(DataType::Float8);
        let mut call = AggregateCall::new(function, Some(col(0, t)), DataType::Float8);
        call.order_by = vec![crate::plan::AggregateOrderKey { expr: col(0, t), descending: order.0, nulls_first: order.1 }];
        if function.is_hypothetical() {
            call.direct = vec![Expr::Literal { value: fraction, data_type: t }];
        } else if function != Mode {
            call.direct = vec![Expr::Literal { value: fraction, data_type: DataType::Float8 }];
        }
        let eval = EvalContext::default();
        let mut state = Accumulator::new(&call)?;
        for v in values {
            super::update_call(&mut state, &call, std::slice::from_ref(v), &eval)?;
        }
        state.finish()
    };
    let asc = (false, false);
    let ints = [Datum::Int4(1), Datum::Int4(2), Datum::Null, Datum::Int4(2)];
    let floats: Vec<Datum> = [1.0, 2.0, 3.0, 4.0].map(f8).to_vec();
    assert_eq!(finish(PercentileCont, f8(0.5), asc, &floats).unwrap(), f8(2.5));
    assert_eq!(finish(PercentileCont, f8(1.0), asc, &floats).unwrap(), f8(4.0));
    assert_eq!(finish(PercentileCont, f8(0.5), (true, true), &floats).unwrap(), f8(2.5));
    assert_eq!(finish(PercentileDisc, f8(0.5), asc, &floats).unwrap(), f8(2.0));
    assert_eq!(finish(PercentileDisc, f8(0.0), (true, true), &floats).unwrap(), f8(4.0));
    assert_eq!(finish(PercentileCont, Datum::Null, asc, &floats).unwrap(), Datum::Null);
    assert_eq!(finish(Mode, Datum::Null, asc, &ints).unwrap(), Datum::Int4(2));
    let out_of_range = finish(PercentileCont, f8(1.5), asc, &[]).unwrap_err();
    assert_eq!((out_of_range.sqlstate, out_of_range.message.as_str()), (SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "percentile value 1.5 is not between 0 and 1"));
    let nan = finish(PercentileDisc, f8(f64::NAN), asc, &floats).unwrap_err();
    assert_eq!(nan.message, "percentile value NaN is not between 0 and 1");
    // rank(2), dense_rank(2), percent_rank(2), cume_dist(2) over 1, 2, NULL, 2 (NULLs last).
    let two = Datum::Int4(2);
    assert_eq!(finish(HypotheticalRank, two.clone(), asc, &ints).unwrap(), Datum::Int8(2));
    assert_eq!(finish(HypotheticalRank, two.clone(), (true, true), &ints).unwrap(), Datum::Int8(2));
    assert_eq!(finish(HypotheticalDenseRank, two.clone(), asc, &ints).unwrap(), Datum::Int8(2));
    assert_eq!(finish(HypotheticalPercentRank, two.clone(), asc, &ints).unwrap(), f8(0.25));
    assert_eq!(finish(HypotheticalCumeDist, two.clone(), asc, &ints).unwrap(), f8(0.8));
    assert_eq!(finish(HypotheticalRank, Datum::Null, asc, &ints).unwrap(), Datum::Int8(4));
    assert_eq!(finish(HypotheticalRank, Datum::Null, (false, true), &ints).unwrap(), Datum::Int8(1));
    assert_eq!(finish(HypotheticalCumeDist, Datum::Null, asc, &ints).unwrap(), f8(1.0));
    assert_eq!(finish(HypotheticalPercentRank, two.clone(), asc, &[]).unwrap(), f8(0.0));
    assert_eq!(finish(HypotheticalCumeDist, two, asc, &[]).unwrap(), f8(1.0));
}
