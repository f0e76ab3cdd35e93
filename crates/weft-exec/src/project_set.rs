//! `Plan::ProjectSet`: set-returning functions of a select list, with PostgreSQL 10+'s
//! semantics. Per input row the functions' sets advance in lockstep; the row comes out as
//! many times as the longest set has elements, a set that has run out giving NULL. Sets
//! are produced as they are read (a series is not materialized), so a LIMIT above
//! (`stop_after`) ends a long series early, as PostgreSQL's pull-based ProjectSet does.

use std::time::Instant;

use weft_common::datetime::Interval;
use weft_common::{DataType, Datum, Error, Result, SqlState};

use crate::execute::{execute, node_id, series_count, ExecContext, NodeStats, StepBuffers};
use crate::expr::EvalContext;
use crate::plan::{Plan, ProjectSetPlan, Row, SetFunction};

/// Rows produced between two checks for a cancel.
const CANCEL_EVERY: u64 = 4096;

pub(crate) fn execute_project_set(plan: &Plan, ps: &ProjectSetPlan, ctx: &ExecContext) -> Result<Vec<Row>> {
    let began = Instant::now();
    let input = execute(&ps.input, ctx)?;
    let mut out: Vec<Row> = Vec::new();
    let enough = |out: &Vec<Row>| ps.stop_after.is_some_and(|n| out.len() as u64 >= n);
    let mut buffers = StepBuffers::new();
    let mut made = 0u64;
    'rows: for row in &input {
        if enough(&out) {
            break;
        }
        ctx.cancel.check()?;
        let mut sets = ps.functions.iter().map(|f| SetValues::new(f, row, ctx.eval)).collect::<Result<Vec<_>>>()?;
        let mut wide = row.clone();
        loop {
            wide.truncate(row.len());
            let mut any = false;
            for set in &mut sets {
                let value = set.next()?;
                any |= value.is_some();
                wide.push(value.unwrap_or(Datum::Null));
            }
            if !any {
                break;
            }
            made += 1;
            if made % CANCEL_EVERY == 0 {
                ctx.cancel.check()?;
            }
            buffers.process(&wide, &ps.output, ctx.eval, |kept| {
                out.push(kept.to_vec());
                Ok(true)
            })?;
            if enough(&out) {
                break 'rows;
            }
        }
    }
    ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows: out.len() as u64, elapsed: began.elapsed(), ..NodeStats::default() });
    Ok(out)
}

/// One function's set for one input row, read an element at a time.
enum SetValues {
    Empty,
    Integers { next: i64, left: i64, step: i64, int4: bool },
    Times { at: i64, stop: i64, step: Interval, timestamp: bool },
    Items(std::vec::IntoIter<Datum>),
}

impl SetValues {
    fn new(function: &SetFunction, row: &[Datum], eval: &EvalContext) -> Result<SetValues> {
        match function {
            SetFunction::Unnest { array, .. } => Ok(match array.eval(row, eval)? {
                Datum::Array(a) => SetValues::Items(a.items.into_iter()),
                // NULL: the function is strict.
                _ => SetValues::Empty,
            }),
            SetFunction::Series { args, data_type } => {
                let values = args.iter().map(|a| a.eval(row, eval)).collect::<Result<Vec<_>>>()?;
                if matches!(data_type, DataType::Timestamp | DataType::TimestampTz) {
                    return Ok(match values.as_slice() {
                        [Datum::Timestamp(start) | Datum::TimestampTz(start), Datum::Timestamp(stop) | Datum::TimestampTz(stop), Datum::Interval(step)] => {
                            if step.span() == 0 {
                                return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, "step size cannot equal zero"));
                            }
                            SetValues::Times { at: *start, stop: *stop, step: *step, timestamp: *data_type == DataType::Timestamp }
                        }
                        _ => SetValues::Empty,
                    });
                }
                let int = |d: &Datum| match d {
                    Datum::Int4(v) => Some(*v as i64),
                    Datum::Int8(v) => Some(*v),
                    _ => None,
                };
                let step = match values.get(2) {
                    Some(d) => int(d),
                    None => Some(1),
                };
                let (Some(start), Some(stop), Some(step)) = (int(&values[0]), int(&values[1]), step) else {
                    return Ok(SetValues::Empty);
                };
                let left = series_count(start, stop, step)?;
                Ok(SetValues::Integers { next: start, left, step, int4: *data_type == DataType::Int4 })
            }
        }
    }

    fn next(&mut self) -> Result<Option<Datum>> {
        match self {
            SetValues::Empty => Ok(None),
            SetValues::Items(items) => Ok(items.next()),
            SetValues::Integers { next, left, step, int4 } => {
                if *left == 0 {
                    return Ok(None);
                }
                let value = *next;
                *left -= 1;
                // The last value's successor may not fit: it is never read.
                if *left > 0 {
                    *next += *step;
                }
                Ok(Some(if *int4 { Datum::Int4(value as i32) } else { Datum::Int8(value) }))
            }
            SetValues::Times { at, stop, step, timestamp } => {
                let ascending = step.span() > 0;
                if !(if ascending { *at <= *stop } else { *at >= *stop }) {
                    return Ok(None);
                }
                let value = if *timestamp { Datum::Timestamp(*at) } else { Datum::TimestampTz(*at) };
                // As PostgreSQL, the step after the value must be in range too.
                *at = if *timestamp {
                    weft_common::datetime::timestamp_add_interval(*at, step)?
                } else {
                    // Days and months step in the session zone's local time.
                    let zone = weft_common::timezone::current();
                    weft_common::timezone::timestamptz_add_interval(*at, step, &zone)?
                };
                Ok(Some(value))
            }
        }
    }
}
