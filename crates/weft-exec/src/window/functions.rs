//! The window functions over one partition: each returns one value per row.
//!
//! Ranking functions read only the row's position and its peer group; lag/lead read a
//! row at an offset in the partition; first_value/last_value/nth_value and aggregates
//! read the row's frame.
//!
//! An aggregate runs over the frames in row order with one state: rows entering at the
//! tail are added; rows leaving at the head are taken back out when the state has an
//! inverse (`Accumulator::invertible`), else the state restarts at the new head (as
//! PostgreSQL's `eval_windowaggregates` does). A frame that starts at the partition's
//! first row never loses rows, so the default frame and `ROWS UNBOUNDED PRECEDING` cost
//! O(n) per partition; a sliding frame costs O(n) with an inverse and O(n·w) without. A
//! row whose frame equals the previous row's (RANGE peers) reuses its value.

use std::ops::Range;

use weft_common::{DataType, Datum, Error, Result, SqlState};

use crate::aggregate::{moving_input, update_call, Accumulator};
use crate::expr::EvalContext;
use crate::plan::{AggregateCall, Row, WindowCall, WindowFunction};

use super::frame::Peers;

/// What every function of a node may read about the current partition.
pub(crate) struct Partition<'a> {
    pub rows: &'a [Row],
    pub peers: &'a Peers,
    /// Per row, its frame (computed only when a function of the node reads frames).
    pub frames: &'a [Range<usize>],
    pub eval: &'a EvalContext,
}

/// Does this function read the frame?
pub(crate) fn uses_frame(call: &WindowCall) -> bool {
    matches!(call.function, WindowFunction::FirstValue | WindowFunction::LastValue | WindowFunction::NthValue | WindowFunction::Aggregate(_))
}

/// The function's value for every row of the partition.
pub(crate) fn evaluate(call: &WindowCall, part: &Partition) -> Result<Vec<Datum>> {
    let n = part.rows.len();
    let rows_count = n as f64;
    let peers = part.peers;
    Ok(match &call.function {
        WindowFunction::RowNumber => (0..n).map(|i| Datum::Int8(i as i64 + 1)).collect(),
        WindowFunction::Rank => (0..n).map(|i| Datum::Int8(peers.start_of(i) as i64 + 1)).collect(),
        WindowFunction::DenseRank => (0..n).map(|i| Datum::Int8(peers.group(i) as i64 + 1)).collect(),
        WindowFunction::PercentRank => (0..n)
            .map(|i| Datum::Float8(if n > 1 { peers.start_of(i) as f64 / (rows_count - 1.0) } else { 0.0 }))
            .collect(),
        WindowFunction::CumeDist => (0..n).map(|i| Datum::Float8(peers.end_of(i) as f64 / rows_count)).collect(),
        WindowFunction::Ntile => ntile(call, part)?,
        WindowFunction::Lag | WindowFunction::Lead => lag_lead(call, part)?,
        WindowFunction::FirstValue | WindowFunction::LastValue | WindowFunction::NthValue => frame_value(call, part)?,
        WindowFunction::Aggregate(aggregate) => aggregate_frames(aggregate, part)?,
    })
}

/// `ntile(buckets)`: buckets read at the first row (if NULL, the row's value is NULL and
/// the next row reads it again, as PostgreSQL does); the first `n % buckets` buckets get
/// one row more than the others.
fn ntile(call: &WindowCall, part: &Partition) -> Result<Vec<Datum>> {
    let n = part.rows.len() as i64;
    let mut out = Vec::with_capacity(part.rows.len());
    // (bucket, rows in it so far, rows it holds, buckets that hold one row more left).
    let mut state: Option<(i64, i64, i64, i64)> = None;
    for row in part.rows {
        let (bucket, used, size, larger) = match state.as_mut() {
            Some(state) => state,
            None => {
                let buckets = match call.args[0].eval(row, part.eval)? {
                    Datum::Null => {
                        out.push(Datum::Null);
                        continue;
                    }
                    Datum::Int4(b) => b as i64,
                    other => return Err(Error::internal(format!("ntile argument {other:?}"))),
                };
                if buckets <= 0 {
                    return Err(Error::new(SqlState("22014"), "argument of ntile must be greater than zero"));
                }
                let size = (n / buckets).max(1);
                let larger = if n / buckets == 0 { 0 } else { n % buckets };
                state.insert((1, 0, size + (larger > 0) as i64, larger))
            }
        };
        if *used == *size {
            if *larger > 0 {
                *larger -= 1;
                if *larger == 0 {
                    *size -= 1;
                }
            }
            *bucket += 1;
            *used = 0;
        }
        *used += 1;
        out.push(Datum::Int4(*bucket as i32));
    }
    Ok(out)
}

/// `lag(value, offset, default)` / `lead`: the offset and default are read at the current
/// row, the value at the row `offset` before (after) it; NULL offset, NULL result.
fn lag_lead(call: &WindowCall, part: &Partition) -> Result<Vec<Datum>> {
    let direction = if matches!(call.function, WindowFunction::Lag) { -1 } else { 1 };
    let n = part.rows.len() as i64;
    let mut out = Vec::with_capacity(part.rows.len());
    for (i, row) in part.rows.iter().enumerate() {
        let offset = match call.args.get(1).map(|e| e.eval(row, part.eval)).transpose()? {
            None => 1,
            Some(Datum::Int4(v)) => v as i64,
            Some(Datum::Null) => {
                out.push(Datum::Null);
                continue;
            }
            Some(other) => return Err(Error::internal(format!("lag/lead offset {other:?}"))),
        };
        let target = i as i64 + direction * offset;
        out.push(if (0..n).contains(&target) {
            call.args[0].eval(&part.rows[target as usize], part.eval)?
        } else {
            match call.args.get(2) {
                Some(default) => default.eval(row, part.eval)?,
                None => Datum::Null,
            }
        });
    }
    Ok(out)
}

/// first_value, last_value, nth_value: the value at a row of the frame, NULL when the
/// frame has no such row.
fn frame_value(call: &WindowCall, part: &Partition) -> Result<Vec<Datum>> {
    let mut out = Vec::with_capacity(part.rows.len());
    for (i, row) in part.rows.iter().enumerate() {
        let frame = &part.frames[i];
        let target = match call.function {
            WindowFunction::FirstValue => Some(frame.start),
            WindowFunction::LastValue => frame.end.checked_sub(1),
            _ => match call.args[1].eval(row, part.eval)? {
                Datum::Null => None,
                Datum::Int4(nth) if nth <= 0 => {
                    return Err(Error::new(SqlState("22016"), "argument of nth_value must be greater than zero"))
                }
                Datum::Int4(nth) => frame.start.checked_add(nth as usize - 1),
                other => return Err(Error::internal(format!("nth_value argument {other:?}"))),
            },
        };
        out.push(match target.filter(|t| frame.contains(t)) {
            Some(t) => call.args[0].eval(&part.rows[t], part.eval)?,
            None => Datum::Null,
        });
    }
    Ok(out)
}

/// An aggregate over each row's frame (see the module comment).
fn aggregate_frames(call: &AggregateCall, part: &Partition) -> Result<Vec<Datum>> {
    let invertible = Accumulator::invertible(call);
    let mut state = Accumulator::new(call)?;
    // The state holds rows `head..tail`; `live` of them counted (for an invertible sum,
    // which returns to NULL when none is left).
    let (mut head, mut tail, mut live) = (0usize, 0usize, 0i64);
    let mut out: Vec<Datum> = Vec::with_capacity(part.rows.len());
    for (i, frame) in part.frames.iter().enumerate() {
        let frame = frame.start..frame.end.max(frame.start);
        if i > 0 && part.frames[i - 1] == part.frames[i] {
            out.push(out[i - 1].clone());
            continue;
        }
        let restart = frame.start < head || frame.end < tail || frame.start > tail || (frame.start > head && !invertible);
        if restart {
            state = Accumulator::new(call)?;
            (head, tail, live) = (frame.start, frame.start, 0);
        }
        while head < frame.start {
            if let Some(value) = moving_input(call, &part.rows[head], part.eval)? {
                state.retract(&value)?;
                live -= 1;
                if live == 0 {
                    state = Accumulator::new(call)?;
                }
            }
            head += 1;
        }
        while tail < frame.end {
            let row = &part.rows[tail];
            if invertible {
                if let Some(value) = moving_input(call, row, part.eval)? {
                    state.update_ref(&value)?;
                    live += 1;
                }
            } else {
                update_call(&mut state, call, row, part.eval)?;
            }
            tail += 1;
        }
        out.push(state.clone().finish()?);
    }
    Ok(out)
}

/// PostgreSQL's result type of a window function over arguments of these types (`None`:
/// no such function). Aggregates use [`AggregateCall::result_type_for`].
pub fn window_result_type(function: &WindowFunction, args: &[DataType]) -> Option<DataType> {
    use WindowFunction::*;
    Some(match (function, args) {
        (RowNumber | Rank | DenseRank, []) => DataType::Int8,
        (PercentRank | CumeDist, []) => DataType::Float8,
        (Ntile, [DataType::Int4]) => DataType::Int4,
        (Lag | Lead, [value] | [value, DataType::Int4]) => *value,
        (Lag | Lead, [value, DataType::Int4, default]) if default == value => *value,
        (FirstValue | LastValue, [value]) => *value,
        (NthValue, [value, DataType::Int4]) => *value,
        _ => return None,
    })
}
