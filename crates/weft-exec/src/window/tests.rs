//! Frames and window functions against trivially correct models: each frame bound by
//! its definition (scan every row), each aggregate recomputed from scratch per frame.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use weft_common::{DataType, Datum};

use super::frame::{in_range, FrameSpec, Peers};
use super::functions::{evaluate, Partition};
use crate::expr::{EvalContext, Expr};
use crate::plan::{AggregateCall, AggregateFunction, FrameBound, FrameUnits, Row, SortKey, WindowCall, WindowFrame, WindowFunction};

/// Repeatable random partitions.
struct Rng(Xoshiro256PlusPlus);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }
}

fn int8(v: i64) -> Expr {
    Expr::Literal { value: Datum::Int8(v), data_type: DataType::Int8 }
}

fn column(index: usize, data_type: DataType) -> Expr {
    Expr::Column { index, data_type }
}

/// A sorted partition of (ordering value, argument) rows; about one value in six NULL.
fn partition(rng: &mut Rng, n: usize, descending: bool, nulls_first: bool) -> Vec<Row> {
    let mut rows: Vec<Row> = (0..n)
        .map(|_| {
            let key = if rng.below(6) == 0 { Datum::Null } else { Datum::Int4(rng.below(12) as i32) };
            let arg = if rng.below(5) == 0 { Datum::Null } else { Datum::Int4(rng.below(100) as i32 - 50) };
            vec![key, arg]
        })
        .collect();
    let order = [(descending, nulls_first)];
    rows.sort_by(|a, b| crate::expr::compare::compare_sort_keys(&a[..1], &b[..1], &order));
    rows
}

/// Row `j` is in row `i`'s frame by the SQL definition (for RANGE with an integer key).
fn in_frame_model(rows: &[Row], key: SortKey, units: FrameUnits, start: &FrameBound, end: &FrameBound, i: usize, j: usize) -> bool {
    let peers = Peers::new(rows, &[key]);
    let offset = |e: &Expr| match e {
        Expr::Literal { value: Datum::Int8(v), .. } => *v,
        _ => unreachable!(),
    };
    // Signed distance from i to j in the unit's measure; None when not comparable (NULLs).
    let distance = |j: usize| -> Option<i64> {
        match units {
            FrameUnits::Rows => Some(j as i64 - i as i64),
            FrameUnits::Groups => Some(peers.group(j) as i64 - peers.group(i) as i64),
            FrameUnits::Range => match (&rows[i][0], &rows[j][0]) {
                (Datum::Int4(a), Datum::Int4(b)) => Some(if key.descending { (*a - *b) as i64 } else { (*b - *a) as i64 }),
                _ => None,
            },
        }
    };
    let peer = |j: usize| peers.group(i) == peers.group(j);
    // RANGE: NULL ordering values are in range of each other whatever the offset.
    let null_peers = units == FrameUnits::Range && rows[i][0].is_null() && rows[j][0].is_null();
    let after_start = match start {
        FrameBound::UnboundedPreceding => true,
        FrameBound::CurrentRow if units == FrameUnits::Rows => j >= i,
        FrameBound::CurrentRow => j >= i || peer(j),
        FrameBound::Preceding(_) | FrameBound::Following(_) if null_peers => true,
        FrameBound::Preceding(e) => match distance(j) {
            Some(d) => d >= -offset(e),
            None => j > i, // a non-comparable row before the current one is outside
        },
        FrameBound::Following(e) => match distance(j) {
            Some(d) => d >= offset(e),
            None => j > i,
        },
        FrameBound::UnboundedFollowing => false,
    };
    let before_end = match end {
        FrameBound::UnboundedFollowing => true,
        FrameBound::CurrentRow if units == FrameUnits::Rows => j <= i,
        FrameBound::CurrentRow => j <= i || peer(j),
        FrameBound::Preceding(_) | FrameBound::Following(_) if null_peers => true,
        FrameBound::Preceding(e) => match distance(j) {
            Some(d) => d <= -offset(e),
            None => j < i,
        },
        FrameBound::Following(e) => match distance(j) {
            Some(d) => d <= offset(e),
            None => j < i,
        },
        FrameBound::UnboundedPreceding => false,
    };
    after_start && before_end
}

fn random_bound(rng: &mut Rng) -> FrameBound {
    match rng.below(5) {
        0 => FrameBound::UnboundedPreceding,
        1 => FrameBound::Preceding(int8(rng.below(4) as i64)),
        2 => FrameBound::CurrentRow,
        3 => FrameBound::Following(int8(rng.below(4) as i64)),
        _ => FrameBound::UnboundedFollowing,
    }
}

#[test]
fn frame_bounds_match_the_definition() {
    let mut rng = Rng::new(0x9e3779b97f4a7c15);
    let eval = EvalContext::default();
    for round in 0..3000 {
        let (descending, nulls_first) = (rng.below(2) == 1, rng.below(2) == 1);
        let n = 1 + rng.below(25) as usize;
        let rows = partition(&mut rng, n, descending, nulls_first);
        let key = SortKey { column: 0, descending, nulls_first };
        let units = [FrameUnits::Rows, FrameUnits::Range, FrameUnits::Groups][rng.below(3) as usize];
        let (start, end) = (random_bound(&mut rng), random_bound(&mut rng));
        if matches!(start, FrameBound::UnboundedFollowing) || matches!(end, FrameBound::UnboundedPreceding) {
            continue;
        }
        let frame = WindowFrame { units, start: start.clone(), end: end.clone() };
        let spec = FrameSpec::new(&frame, &[key], &eval).unwrap();
        let peers = Peers::new(&rows, &[key]);
        for i in 0..rows.len() {
            let bounds = spec.bounds(&rows, &peers, i).unwrap();
            let model: Vec<usize> = (0..rows.len()).filter(|&j| in_frame_model(&rows, key, units, &start, &end, i, j)).collect();
            let got: Vec<usize> = bounds.clone().collect();
            assert_eq!(got, model, "round {round}: {frame:?} row {i} of {rows:?}");
        }
    }
}

#[test]
fn peer_groups_follow_the_order_keys() {
    let rows: Vec<Row> = [1, 1, 2, 3, 3, 3].iter().map(|&v| vec![Datum::Int4(v)]).collect();
    let key = SortKey { column: 0, descending: false, nulls_first: false };
    let peers = Peers::new(&rows, &[key]);
    assert_eq!(peers.groups(), 3);
    assert_eq!((0..6).map(|i| (peers.start_of(i), peers.end_of(i))).collect::<Vec<_>>(), [(0, 2), (0, 2), (2, 3), (3, 6), (3, 6), (3, 6)]);
    // Without ORDER BY the whole partition is one group.
    assert_eq!(Peers::new(&rows, &[]).groups(), 1);
}

#[test]
fn in_range_follows_postgresql_for_floats_and_sizes() {
    let f = Datum::Float8;
    assert!(in_range(&f(f64::NAN), &f(f64::NAN), &f(1.0), true, false).unwrap());
    assert!(in_range(&f(f64::NAN), &f(1.0), &f(1.0), true, false).unwrap());
    assert!(!in_range(&f(f64::NAN), &f(1.0), &f(1.0), true, true).unwrap());
    assert!(in_range(&f(-5.0), &f(f64::INFINITY), &f(f64::INFINITY), true, false).unwrap());
    assert!(in_range(&f(3.0), &f(1.0), &f(2.0), false, true).unwrap());
    assert!(in_range(&Datum::Int4(i32::MIN), &Datum::Int4(i32::MAX), &Datum::Int8(i64::MAX), true, false).unwrap());
    let err = in_range(&Datum::Int4(1), &Datum::Int4(1), &Datum::Int8(-1), true, false).unwrap_err();
    assert_eq!(err.sqlstate.0, "22013");
    assert!(in_range(&f(1.0), &f(1.0), &f(f64::NAN), true, false).is_err());
}

#[test]
fn moving_aggregates_equal_recomputing_every_frame() {
    let mut rng = Rng::new(0x2545f4914f6cdd1d);
    let eval = EvalContext::default();
    let arg = column(1, DataType::Int4);
    let calls = [
        AggregateCall::new(AggregateFunction::CountStar, None, DataType::Int8),
        AggregateCall::new(AggregateFunction::Count, Some(arg.clone()), DataType::Int8),
        AggregateCall::new(AggregateFunction::Sum, Some(arg.clone()), DataType::Int8),
        AggregateCall::new(AggregateFunction::Avg, Some(arg.clone()), DataType::Numeric),
        AggregateCall::new(AggregateFunction::Min, Some(arg.clone()), DataType::Int4),
        AggregateCall::new(AggregateFunction::Max, Some(arg), DataType::Int4),
    ];
    for _ in 0..400 {
        let n = 1 + rng.below(30) as usize;
        let rows = partition(&mut rng, n, false, false);
        let key = SortKey { column: 0, descending: false, nulls_first: false };
        let units = [FrameUnits::Rows, FrameUnits::Range, FrameUnits::Groups][rng.below(3) as usize];
        let (start, end) = (random_bound(&mut rng), random_bound(&mut rng));
        if matches!(start, FrameBound::UnboundedFollowing) || matches!(end, FrameBound::UnboundedPreceding) {
            continue;
        }
        let spec = FrameSpec::new(&WindowFrame { units, start, end }, &[key], &eval).unwrap();
        let peers = Peers::new(&rows, &[key]);
        let frames: Vec<_> = (0..rows.len()).map(|i| spec.bounds(&rows, &peers, i).unwrap()).collect();
        let part = Partition { rows: &rows, peers: &peers, frames: &frames, eval: &eval };
        for call in &calls {
            let window = WindowCall { function: WindowFunction::Aggregate(call.clone()), args: Vec::new(), result_type: call.result_type };
            let got = evaluate(&window, &part).unwrap();
            for (i, frame) in frames.iter().enumerate() {
                let mut state = crate::aggregate::Accumulator::new(call).unwrap();
                for row in &rows[frame.start..frame.end.max(frame.start)] {
                    crate::aggregate::update_call(&mut state, call, row, &eval).unwrap();
                }
                assert_eq!(got[i], state.finish().unwrap(), "{:?} over {frame:?} of {rows:?}", call.function);
            }
        }
    }
}

#[test]
fn ranking_and_offset_functions() {
    let rows: Vec<Row> = [10, 10, 20, 30, 30].iter().map(|&v| vec![Datum::Int4(v)]).collect();
    let key = SortKey { column: 0, descending: false, nulls_first: false };
    let peers = Peers::new(&rows, &[key]);
    let eval = EvalContext::default();
    let part = Partition { rows: &rows, peers: &peers, frames: &[], eval: &eval };
    let run = |function: WindowFunction, args: Vec<Expr>| {
        let call = WindowCall { function, args, result_type: DataType::Int8 };
        evaluate(&call, &part).unwrap().iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join(",")
    };
    assert_eq!(run(WindowFunction::RowNumber, vec![]), "1,2,3,4,5");
    assert_eq!(run(WindowFunction::Rank, vec![]), "1,1,3,4,4");
    assert_eq!(run(WindowFunction::DenseRank, vec![]), "1,1,2,3,3");
    assert_eq!(run(WindowFunction::PercentRank, vec![]), "0,0,0.5,0.75,0.75");
    assert_eq!(run(WindowFunction::CumeDist, vec![]), "0.4,0.4,0.6,1,1");
    let int4 = |v: i32| Expr::Literal { value: Datum::Int4(v), data_type: DataType::Int4 };
    assert_eq!(run(WindowFunction::Ntile, vec![int4(2)]), "1,1,1,2,2");
    assert_eq!(run(WindowFunction::Ntile, vec![int4(9)]), "1,2,3,4,5");
    let value = column(0, DataType::Int4);
    assert_eq!(run(WindowFunction::Lag, vec![value.clone()]), ",10,10,20,30");
    assert_eq!(run(WindowFunction::Lead, vec![value.clone(), int4(2), int4(-1)]), "20,30,30,-1,-1");
    assert_eq!(run(WindowFunction::Lag, vec![value, int4(-1)]), "10,20,30,30,");
}
