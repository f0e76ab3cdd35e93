//! The sort against `slice::sort_by` over random inputs: every key type, directions and
//! NULL placement, sizes from empty to multi-pass external, 1 to 8 participants (more
//! than this machine's cores), both merge strategies, bounded and unbounded; and the temp
//! directory empty afterwards.

use std::cmp::Ordering;
use std::sync::Arc;

use proptest::prelude::*;
use weft_common::parallel::CancelToken;
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum};
use weft_sort::{PayloadSqueeze, SharedSort, SortColumn, SortKeys, SortOptions, SortStrategy};

const TYPES: [DataType; 5] = [DataType::Bool, DataType::Int4, DataType::Int8, DataType::Float8, DataType::Text];

fn value(ty: DataType) -> BoxedStrategy<Datum> {
    let v: BoxedStrategy<Datum> = match ty {
        DataType::Bool => any::<bool>().prop_map(Datum::Bool).boxed(),
        DataType::Int4 => prop_oneof![any::<i32>(), 0i32..20].prop_map(Datum::Int4).boxed(),
        DataType::Int8 => prop_oneof![any::<i64>(), 0i64..20].prop_map(Datum::Int8).boxed(),
        DataType::Float8 => prop_oneof![
            any::<f64>(),
            Just(f64::NAN),
            Just(-0.0),
            Just(0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            (0i32..5).prop_map(f64::from)
        ]
        .prop_map(Datum::Float8)
        .boxed(),
        _ => prop_oneof!["[a-c]{0,3}", "prefix-same-[a-c]{0,4}", "[a-z\u{e9}]{0,40}"].prop_map(Datum::Text).boxed(),
    };
    prop_oneof![1 => Just(Datum::Null), 8 => v].boxed()
}

fn reference_compare(a: &[Datum], b: &[Datum], keys: &[SortColumn]) -> Ordering {
    for k in keys {
        let (x, y) = (&a[k.column], &b[k.column]);
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => if k.nulls_first { Ordering::Less } else { Ordering::Greater },
            (false, true) => if k.nulls_first { Ordering::Greater } else { Ordering::Less },
            _ => {
                let o = match (x, y) {
                    (Datum::Bool(p), Datum::Bool(q)) => p.cmp(q),
                    (Datum::Int4(p), Datum::Int4(q)) => p.cmp(q),
                    (Datum::Int8(p), Datum::Int8(q)) => p.cmp(q),
                    (Datum::Float8(p), Datum::Float8(q)) => match (p.is_nan(), q.is_nan()) {
                        (true, true) => Ordering::Equal,
                        (true, false) => Ordering::Greater,
                        (false, true) => Ordering::Less,
                        _ => p.partial_cmp(q).unwrap(),
                    },
                    (Datum::Text(p), Datum::Text(q)) => p.as_bytes().cmp(q.as_bytes()),
                    _ => unreachable!(),
                };
                if k.descending { o.reverse() } else { o }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

#[derive(Debug, Clone)]
struct Case {
    types: Vec<DataType>,
    rows: Vec<Vec<Datum>>,
    keys: Vec<SortColumn>,
    participants: usize,
    budget: usize,
    strategy: SortStrategy,
    bound: Option<u64>,
    /// Participant that gets no rows (tests an empty share).
    idle: Option<usize>,
    /// Sub-runs sorted through pointers (small: many sub-runs merged in memory).
    sub_run_bytes: usize,
}

fn case() -> impl Strategy<Value = Case> {
    (prop::collection::vec(prop::sample::select(&TYPES[..]), 1..4), prop_oneof![Just(0usize), 1usize..50, 50usize..3000, Just(6000usize)])
        .prop_flat_map(|(types, n)| {
            let row = types.iter().map(|t| value(*t)).collect::<Vec<_>>();
            let ncols = types.len();
            (
                Just(types),
                prop::collection::vec(row, n..=n),
                prop::collection::vec((0..ncols, any::<bool>(), any::<bool>()), 1..4),
                1usize..9,
                prop_oneof![Just(8 * 1024usize), Just(64 * 1024), Just(1 << 20), Just(64 << 20)],
                prop_oneof![Just(SortStrategy::Partition), Just(SortStrategy::LeaderMerge)],
                prop_oneof![3 => Just(None), 1 => (0u64..100).prop_map(Some)],
                prop_oneof![Just(None), (0usize..8).prop_map(Some)],
                prop_oneof![Just(4096usize), Just(64 * 1024), Just(weft_sort::DEFAULT_SUB_RUN_BYTES)],
            )
        })
        .prop_map(|(types, rows, keys, participants, budget, strategy, bound, idle, sub_run_bytes)| Case {
            types,
            rows,
            keys: keys.into_iter().map(|(column, descending, nulls_first)| SortColumn { column, descending, nulls_first }).collect(),
            participants,
            budget,
            strategy,
            bound,
            idle,
            sub_run_bytes,
        })
}

/// Run the sort with one thread per participant, then merge per the strategy.
fn run(case: &Case, temp: &std::path::Path, cancel: CancelToken) -> weft_common::Result<Vec<Vec<u8>>> {
    let layout = RowLayout::new(&case.types);
    let keys = SortKeys::new(layout.clone(), &case.keys).unwrap();
    let options = SortOptions {
        budget: case.budget,
        bound: case.bound,
        strategy: case.strategy,
        temp_dir: temp.to_path_buf(),
        cancel,
        trace: None,
        sub_run_bytes: case.sub_run_bytes,
    };
    let shared = SharedSort::new(keys, options, case.participants);
    let encoded: Vec<Vec<u8>> = case
        .rows
        .iter()
        .map(|r| {
            let mut out = Vec::new();
            layout.encode(r, &mut out).unwrap();
            out
        })
        .collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..case.participants)
            .map(|p| {
                let shared = &shared;
                let encoded = &encoded;
                let case = &case;
                scope.spawn(move || -> weft_common::Result<()> {
                    let mut sort = shared.participant();
                    let share = sort.index();
                    // An idle participant only makes sense when another one takes the rows.
                    let idle = case.idle.filter(|&idle| idle < case.participants && case.participants > 1);
                    if idle != Some(share) {
                        for (i, t) in encoded.iter().enumerate() {
                            let owner = if idle.is_some() {
                                let others: Vec<usize> = (0..case.participants).filter(|q| Some(*q) != idle).collect();
                                others[i % others.len()]
                            } else {
                                i % case.participants
                            };
                            if owner == share {
                                sort.push(t)?;
                            }
                        }
                    }
                    let _ = p;
                    sort.finish()
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().unwrap())
    })?;
    let runs = shared.into_runs();
    let mut out = Vec::new();
    match case.strategy {
        SortStrategy::LeaderMerge => {
            let mut merger = runs.merge_all()?;
            while let Some(t) = merger.next()? {
                out.push(t.to_vec());
            }
        }
        SortStrategy::Partition => {
            let partitioning = runs.partition(case.participants)?;
            // Ranges merged concurrently, outputs concatenated in range order.
            let parts: Vec<weft_common::Result<Vec<Vec<u8>>>> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..partitioning.ranges())
                    .map(|range| {
                        let runs = &runs;
                        let partitioning = &partitioning;
                        scope.spawn(move || {
                            let mut merger = runs.merge_range(partitioning, range)?;
                            let mut part = Vec::new();
                            while let Some(t) = merger.next()? {
                                part.push(t.to_vec());
                            }
                            Ok(part)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for part in parts {
                out.extend(part?);
            }
        }
    }
    let _report = runs.report(Default::default(), Default::default());
    // With a bound, each participant kept its own first `bound`: the caller stops there.
    if let Some(bound) = case.bound {
        out.truncate(bound as usize);
    }
    Ok(out)
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let temp = tempfile::tempdir().unwrap();
    let layout = RowLayout::new(&case.types);
    let out = run(case, temp.path(), CancelToken::new()).unwrap();
    let decoded: Vec<Vec<Datum>> = out.iter().map(|t| layout.decode(t).unwrap()).collect();
    let mut expected = case.rows.clone();
    expected.sort_by(|a, b| reference_compare(a, b, &case.keys));
    let wanted = case.bound.map_or(expected.len(), |b| (b as usize).min(expected.len()));
    prop_assert_eq!(decoded.len(), wanted);
    for pair in decoded.windows(2) {
        prop_assert_ne!(reference_compare(&pair[0], &pair[1], &case.keys), Ordering::Greater, "out of order: {:?}", pair);
    }
    // Same rows: compare the multisets (as text, so NaN equals NaN).
    let text = |rows: &[Vec<Datum>]| {
        let mut v: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
        v.sort();
        v
    };
    if case.bound.is_none() {
        prop_assert_eq!(text(&decoded), text(&expected));
    } else {
        // Top-N: the key sequence equals the reference's first N.
        for (got, want) in decoded.iter().zip(&expected) {
            prop_assert_eq!(reference_compare(got, want, &case.keys), Ordering::Equal);
        }
    }
    prop_assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0, "temp files left behind");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn sorts_like_slice_sort(case in case()) {
        check(&case)?;
    }
}

/// B-tree entries of one int4 or bool column: `(key, tid word)` sorted by both, which the
/// sort keeps as 16-byte pairs (in memory and spilled). A NULL second column, which no
/// index entry has, makes a participant leave pair form midway.
fn pair_form_case() -> impl Strategy<Value = Case> {
    (prop::sample::select(vec![DataType::Int4, DataType::Bool]), prop_oneof![1usize..50, 50usize..3000, Just(8000usize)])
        .prop_flat_map(|(first, n)| {
            let second = prop_oneof![1 => Just(None), 200 => prop_oneof![any::<i64>(), 0i64..1000].prop_map(Some)];
            (
                Just(first),
                prop::collection::vec((value(first), second), n..=n),
                any::<bool>(),
                any::<bool>(),
                1usize..9,
                prop_oneof![Just(8 * 1024usize), Just(64 * 1024), Just(64 << 20)],
                prop_oneof![Just(SortStrategy::Partition), Just(SortStrategy::LeaderMerge)],
                prop_oneof![Just(None), (0usize..8).prop_map(Some)],
            )
        })
        .prop_map(|(first, rows, descending, nulls_first, participants, budget, strategy, idle)| Case {
            types: vec![first, DataType::Int8],
            rows: rows.into_iter().map(|(a, b)| vec![a, b.map_or(Datum::Null, Datum::Int8)]).collect(),
            keys: vec![SortColumn { column: 0, descending, nulls_first }, SortColumn::new(1, false)],
            participants,
            budget,
            strategy,
            bound: None,
            idle,
            sub_run_bytes: weft_sort::DEFAULT_SUB_RUN_BYTES,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn sorts_pair_form_tuples_like_slice_sort(case in pair_form_case()) {
        check(&case)?;
    }
}

fn int_case(values: Vec<i64>, participants: usize, budget: usize, strategy: SortStrategy) -> Case {
    Case {
        types: vec![DataType::Int8, DataType::Text],
        rows: values.into_iter().map(|v| vec![Datum::Int8(v), Datum::Text(format!("row {v}"))]).collect(),
        keys: vec![SortColumn::new(0, false)],
        participants,
        budget,
        strategy,
        bound: None,
        idle: None,
        sub_run_bytes: 16 * 1024,
    }
}

#[test]
fn shapes_of_input() {
    let n = 20_000i64;
    let inputs: Vec<(&str, Vec<i64>)> = vec![
        ("sorted", (0..n).collect()),
        ("reverse", (0..n).rev().collect()),
        ("all duplicates", vec![7; n as usize]),
        ("two values", (0..n).map(|i| i % 2).collect()),
        ("empty", vec![]),
    ];
    for (name, values) in inputs {
        for strategy in [SortStrategy::Partition, SortStrategy::LeaderMerge] {
            for participants in [1, 3, 8] {
                // 8 kB forces many runs and several merge passes per participant.
                for budget in [8 * 1024, 1 << 20, 64 << 20] {
                    let case = int_case(values.clone(), participants, budget, strategy);
                    check(&case).unwrap_or_else(|e| panic!("{name} {strategy:?} p={participants} budget={budget}: {e}"));
                }
            }
        }
    }
}

#[test]
fn duplicate_heavy_keys_partition_evenly() {
    let temp = tempfile::tempdir().unwrap();
    let case = int_case(vec![5; 40_000], 4, 64 * 1024, SortStrategy::Partition);
    let layout = RowLayout::new(&case.types);
    let keys = SortKeys::new(layout.clone(), &case.keys).unwrap();
    let options = SortOptions {
        budget: case.budget,
        bound: None,
        strategy: case.strategy,
        temp_dir: temp.path().to_path_buf(),
        cancel: CancelToken::new(),
        trace: None,
        sub_run_bytes: weft_sort::DEFAULT_SUB_RUN_BYTES,
    };
    let shared = SharedSort::new(keys, options, 4);
    std::thread::scope(|scope| {
        for p in 0..4 {
            let shared = &shared;
            let case = &case;
            let layout = &layout;
            scope.spawn(move || {
                let mut sort = shared.participant();
                let mut buf = Vec::new();
                for row in case.rows.iter().skip(p).step_by(4) {
                    buf.clear();
                    layout.encode(row, &mut buf).unwrap();
                    sort.push(&buf).unwrap();
                }
                sort.finish().unwrap();
            });
        }
    });
    let runs = shared.into_runs();
    let partitioning = runs.partition(4).unwrap();
    for range in 0..4 {
        let len = partitioning.range_len(range);
        assert!((8_000..=12_000).contains(&len), "range {range} has {len} of 40000 rows");
    }
}

#[test]
fn cancel_stops_the_sort_and_removes_temp_files() {
    let temp = tempfile::tempdir().unwrap();
    let cancel = CancelToken::new();
    cancel.cancel();
    let case = int_case((0..50_000).collect(), 3, 8 * 1024, SortStrategy::Partition);
    let err = run(&case, temp.path(), cancel).unwrap_err();
    assert_eq!(err.sqlstate, weft_common::SqlState::QUERY_CANCELED);
    assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
}

#[test]
fn abandoned_abbreviation_still_sorts() {
    let rows: Vec<Vec<Datum>> =
        (0..30_000).map(|i| vec![Datum::Text(format!("https://example.com/page/{}", (i * 7919) % 30_000))]).collect();
    let case = Case {
        types: vec![DataType::Text],
        rows,
        keys: vec![SortColumn::new(0, false)],
        participants: 2,
        budget: 64 << 20,
        strategy: SortStrategy::Partition,
        bound: None,
        idle: None,
        sub_run_bytes: 64 * 1024,
    };
    check(&case).unwrap();
    let _ = Arc::new(());
}

/// Sub-runs big enough for the most-significant-byte-first sort of abbreviations that
/// vary in every byte (`radix::sort_tuples_by_abbrev`): text prefixes with duplicates
/// and NULLs, then an int8 key descending; full-range int8 keys with ties.
#[test]
fn abbreviations_varying_in_every_byte_sort_like_slice_sort() {
    let mix = |i: i64| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64;
    let text_rows: Vec<Vec<Datum>> = (0..150_000i64)
        .map(|i| {
            let first = match i % 11 {
                0 => Datum::Null,
                1 => Datum::Text("same prefix, then ".to_string() + &(mix(i) % 7).to_string()),
                _ => Datum::Text(format!("{:016x}", mix(i % 90_000))),
            };
            vec![first, Datum::Int8(mix(i) % 1000)]
        })
        .collect();
    let int_rows: Vec<Vec<Datum>> = (0..150_000i64).map(|i| vec![Datum::Int8(mix(i % 120_000)), Datum::Int8(i)]).collect();
    for (types, rows) in [(vec![DataType::Text, DataType::Int8], text_rows), (vec![DataType::Int8, DataType::Int8], int_rows)] {
        for participants in [1, 2] {
            let case = Case {
                types: types.clone(),
                rows: rows.clone(),
                keys: vec![SortColumn::new(0, false), SortColumn::new(1, true)],
                participants,
                budget: 256 << 20,
                strategy: SortStrategy::Partition,
                bound: None,
                idle: None,
                sub_run_bytes: 128 << 20,
            };
            check(&case).unwrap();
        }
    }
}

/// An index build's `(int4, tid)` entries at a real budget (32MB a participant: pairs
/// sorted in place by their top byte, `radix::sort_pairs_in_place`): spread keys, keys
/// arriving in order, a hot key with NULL keys at both ends; in memory and spilled; 16
/// bytes a pair, and packed into 8 by a tid code (ASC and DESC), with tids that have no
/// code among the last rows (the participant widens its packed pairs midway). The output
/// is the entries in (key, tid) order and no temp file is left.
#[test]
fn int4_pairs_at_a_real_budget_sort_like_slice_sort() {
    let n: i64 = 1_300_000;
    // Tid words as a heap scan makes them (block << 17 | offset << 1), rising; with
    // `widen`, a few of the last have an offset past what the code holds.
    let tid = |i: i64, widen: bool| {
        let offset = if widen && i > n - 1000 && i % 7 == 0 { 600 } else { i % 200 };
        ((i / 200) << 17) | (offset << 1)
    };
    let squeeze = Some(PayloadSqueeze::new(10, 7));
    // (tid code, DESC, widen)
    let packings = [(None, false, false), (squeeze, false, true), (squeeze, true, false)];
    let shapes: [(&str, fn(i64) -> Option<i32>); 3] = [
        ("spread", |i| Some((i as i32).wrapping_mul(-1_640_531_535))),
        ("in order", |i| Some(i as i32 - 600_000)),
        ("hot key and NULLs", |i| match i % 5 {
            0 => None,
            1 | 2 => Some(42),
            _ => Some((i as i32).wrapping_mul(97) % 100_000),
        }),
    ];
    for (name, key) in shapes {
        // 8MB: a participant's packed pairs outnumber what the budget holds at 16 bytes
        // when they widen, so they are written to tape first. 4MB: runs of packed pairs
        // on tape, merged as packed values.
        for (participants, budget) in [(2usize, 32usize << 20), (1, 32 << 20), (2, 8 << 20), (2, 4 << 20)] {
            for (nulls_first, (squeeze, descending, widen)) in [false, true].into_iter().flat_map(|nf| packings.map(|p| (nf, p))) {
                let temp = tempfile::tempdir().unwrap();
                let layout = RowLayout::new(&[DataType::Int4, DataType::Int8]);
                let columns = [SortColumn { column: 0, descending, nulls_first }, SortColumn::new(1, false)];
                let keys = SortKeys::new(layout.clone(), &columns).unwrap();
                let options = SortOptions {
                    budget,
                    bound: None,
                    strategy: SortStrategy::Partition,
                    temp_dir: temp.path().to_path_buf(),
                    cancel: CancelToken::new(),
                    trace: None,
                    sub_run_bytes: weft_sort::DEFAULT_SUB_RUN_BYTES,
                };
                let mut shared = SharedSort::new(keys, options, participants);
                if let Some(squeeze) = squeeze {
                    shared = shared.with_payload_squeeze(squeeze);
                }
                std::thread::scope(|scope| {
                    for p in 0..participants {
                        let shared = &shared;
                        scope.spawn(move || {
                            let mut sort = shared.participant();
                            assert!(sort.takes_int4_pairs());
                            // Tids in heap order, as a scan pushes them.
                            for i in (p as i64..n).step_by(participants) {
                                sort.push_int4_pair(key(i), tid(i, widen)).unwrap();
                            }
                            sort.finish().unwrap();
                        });
                    }
                });
                let runs = shared.into_runs();
                let mut merger = runs.merge_all().unwrap();
                let mut got = Vec::with_capacity(n as usize);
                while let Some(tuple) = merger.next().unwrap() {
                    let row = layout.decode(tuple).unwrap();
                    let key = match row[0] {
                        Datum::Null => None,
                        Datum::Int4(v) => Some(v),
                        ref other => panic!("{other:?}"),
                    };
                    let Datum::Int8(tid) = row[1] else { panic!("{:?}", row[1]) };
                    got.push((key, tid));
                }
                let mut expected: Vec<(Option<i32>, i64)> = (0..n).map(|i| (key(i), tid(i, widen))).collect();
                // NULLs last unless NULLS FIRST (None sorts first in Option's order).
                expected.sort_by(|a, b| match (a.0, b.0, nulls_first) {
                    (None, Some(_), false) => Ordering::Greater,
                    (Some(_), None, false) => Ordering::Less,
                    (Some(x), Some(y), _) if descending => y.cmp(&x).then(a.1.cmp(&b.1)),
                    _ => a.cmp(b),
                });
                assert!(
                    got == expected,
                    "{name}, {participants} participants, budget {budget}, nulls first {nulls_first}, packed {}, descending {descending}",
                    squeeze.is_some()
                );
                drop(merger);
                drop(runs);
                assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
            }
        }
    }
}
