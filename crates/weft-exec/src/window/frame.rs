//! Peer groups and frames of one partition.
//!
//! The partition's rows arrive sorted by the window's ORDER BY, so *peers* (rows equal on
//! every ORDER BY key, NULLs equal) are runs, numbered from 0 ([`Peers`]). A row's frame
//! is a half-open range of row indexes `head..tail` of the partition ([`FrameSpec::bounds`]),
//! empty when `tail <= head`:
//!
//! ```text
//!   ROWS    k PRECEDING / FOLLOWING   the row k before / after (clamped to the partition)
//!   GROUPS  k PRECEDING / FOLLOWING   the first (start) or last (end) row of the peer group k before / after
//!   RANGE   k PRECEDING / FOLLOWING   rows whose ordering value is within k of the current row's
//!   CURRENT ROW                       the row itself (ROWS) or its peer group's first / last row
//! ```
//!
//! Both ends only move forward as the current row advances (they are monotone in the
//! row index), which is what lets `functions.rs` aggregate frames incrementally.
//!
//! RANGE with an offset follows PostgreSQL's `in_range` support functions (integers
//! exactly, float8 with its NaN and infinity rules, numeric): the frame start is the
//! first row `in_range(value, current, offset, sub, less)` admits, the end the last. NULL
//! ordering values are peers of each other and in range of nothing else, so a row whose
//! value is NULL has the NULL peer group for an offset bound. The search is a binary
//! search over the partition's non-NULL run, which the sort keeps contiguous.

use std::ops::Range;

use weft_common::numeric::Numeric;
use weft_common::{Datum, Error, Result, SqlState};

use crate::expr::{compare_datums, EvalContext};
use crate::plan::{FrameBound, FrameUnits, Row, SortKey, WindowFrame};

/// The peer groups of a partition.
pub(crate) struct Peers {
    /// Per row: the index of its peer group.
    group_of: Vec<usize>,
    /// Per group: its first row; then one entry more, the partition's length.
    group_starts: Vec<usize>,
}

impl Peers {
    /// Peer groups of `rows` (sorted by `order_by`); with no ORDER BY every row is a peer of
    /// every other.
    pub(crate) fn new(rows: &[Row], order_by: &[SortKey]) -> Peers {
        let mut group_of = Vec::with_capacity(rows.len());
        let mut group_starts = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let new_group = i == 0 || !same_keys(&rows[i - 1], row, order_by.iter().map(|k| k.column));
            if new_group {
                group_starts.push(i);
            }
            group_of.push(group_starts.len() - 1);
        }
        group_starts.push(rows.len());
        Peers { group_of, group_starts }
    }

    pub(crate) fn group(&self, row: usize) -> usize {
        self.group_of[row]
    }

    pub(crate) fn groups(&self) -> usize {
        self.group_starts.len() - 1
    }

    /// The first row of `row`'s peer group.
    pub(crate) fn start_of(&self, row: usize) -> usize {
        self.group_starts[self.group_of[row]]
    }

    /// One past the last row of `row`'s peer group.
    pub(crate) fn end_of(&self, row: usize) -> usize {
        self.group_starts[self.group_of[row] + 1]
    }
}

/// Are two rows equal on these columns, under grouping equality (NULLs equal)?
pub(crate) fn same_keys(a: &Row, b: &Row, mut columns: impl Iterator<Item = usize>) -> bool {
    columns.all(|c| compare_datums(&a[c], &b[c]).is_eq())
}

/// One end of a frame with its offset evaluated.
#[derive(Clone, Debug, PartialEq)]
enum Bound {
    UnboundedPreceding,
    Preceding(Datum),
    CurrentRow,
    Following(Datum),
    UnboundedFollowing,
}

/// A window's frame with its offsets evaluated: what [`FrameSpec::bounds`] needs.
#[derive(Clone, Debug)]
pub(crate) struct FrameSpec {
    units: FrameUnits,
    start: Bound,
    end: Bound,
    /// RANGE with an offset: the one ORDER BY key the offset applies to.
    range_key: Option<SortKey>,
}

impl FrameSpec {
    /// Evaluate the frame's offsets (as PostgreSQL does when the node starts): a NULL
    /// offset is an error, so is a negative ROWS or GROUPS offset (a negative RANGE offset
    /// fails when it is first used, in `in_range`).
    pub(crate) fn new(frame: &WindowFrame, order_by: &[SortKey], eval: &EvalContext) -> Result<FrameSpec> {
        let bound = |bound: &FrameBound, which: &str| -> Result<Bound> {
            let offset = |e: &crate::expr::Expr| -> Result<Datum> {
                let value = e.eval(&[], eval)?;
                if value.is_null() {
                    return Err(Error::new(SqlState("22004"), format!("frame {which} offset must not be null")));
                }
                let negative = match value {
                    Datum::Int4(v) => v < 0,
                    Datum::Int8(v) => v < 0,
                    _ => false,
                };
                if negative && frame.units != FrameUnits::Range {
                    return Err(Error::new(SqlState("22013"), format!("frame {which} offset must not be negative")));
                }
                Ok(value)
            };
            Ok(match bound {
                FrameBound::UnboundedPreceding => Bound::UnboundedPreceding,
                FrameBound::Preceding(e) => Bound::Preceding(offset(e)?),
                FrameBound::CurrentRow => Bound::CurrentRow,
                FrameBound::Following(e) => Bound::Following(offset(e)?),
                FrameBound::UnboundedFollowing => Bound::UnboundedFollowing,
            })
        };
        let start = bound(&frame.start, "starting")?;
        let end = bound(&frame.end, "ending")?;
        let has_offset = |b: &Bound| matches!(b, Bound::Preceding(_) | Bound::Following(_));
        let range_key = (frame.units == FrameUnits::Range && (has_offset(&start) || has_offset(&end)))
            .then(|| order_by.first().copied())
            .flatten();
        if frame.units == FrameUnits::Range && range_key.is_none() && (has_offset(&start) || has_offset(&end)) {
            return Err(Error::internal("RANGE frame with an offset but no ORDER BY key"));
        }
        Ok(FrameSpec { units: frame.units, start, end, range_key })
    }

    /// The frame of row `i`: `head..tail` (empty when `tail <= head`).
    pub(crate) fn bounds(&self, rows: &[Row], peers: &Peers, i: usize) -> Result<Range<usize>> {
        let head = self.position(rows, peers, i, &self.start, true)?;
        let tail = self.position(rows, peers, i, &self.end, false)?;
        Ok(head..tail)
    }

    /// Where a bound puts the frame's head (`is_start`: the first row in it) or its tail
    /// (one past the last row in it).
    fn position(&self, rows: &[Row], peers: &Peers, i: usize, bound: &Bound, is_start: bool) -> Result<usize> {
        let n = rows.len();
        Ok(match (bound, self.units) {
            (Bound::UnboundedPreceding, _) => 0,
            (Bound::UnboundedFollowing, _) => n,
            (Bound::CurrentRow, FrameUnits::Rows) => i + !is_start as usize,
            (Bound::CurrentRow, _) if is_start => peers.start_of(i),
            (Bound::CurrentRow, _) => peers.end_of(i),
            (Bound::Preceding(offset), FrameUnits::Rows) => {
                let row = i as i128 - count(offset) + !is_start as i128;
                row.clamp(0, n as i128) as usize
            }
            (Bound::Following(offset), FrameUnits::Rows) => {
                let row = i as i128 + count(offset) + !is_start as i128;
                row.clamp(0, n as i128) as usize
            }
            (Bound::Preceding(offset), FrameUnits::Groups) => {
                let group = peers.group(i) as i128 - count(offset);
                match (group < 0, is_start) {
                    (true, true) => 0,
                    (true, false) => 0, // the frame ends before the partition: empty
                    (false, start) => group_edge(peers, group as usize, start),
                }
            }
            (Bound::Following(offset), FrameUnits::Groups) => {
                let group = peers.group(i) as i128 + count(offset);
                if group >= peers.groups() as i128 {
                    n
                } else {
                    group_edge(peers, group as usize, is_start)
                }
            }
            (Bound::Preceding(offset), FrameUnits::Range) => self.range_position(rows, peers, i, offset, true, is_start)?,
            (Bound::Following(offset), FrameUnits::Range) => self.range_position(rows, peers, i, offset, false, is_start)?,
        })
    }

    /// A RANGE offset bound: see the module comment.
    fn range_position(&self, rows: &[Row], peers: &Peers, i: usize, offset: &Datum, preceding: bool, is_start: bool) -> Result<usize> {
        let key = self.range_key.ok_or_else(|| Error::internal("RANGE offset without its key"))?;
        let base = &rows[i][key.column];
        if base.is_null() {
            return Ok(if is_start { peers.start_of(i) } else { peers.end_of(i) });
        }
        let non_null = non_null_run(rows, key);
        // PostgreSQL's choice of `sub` and `less` per bound and direction.
        let (mut sub, mut less) = (preceding, !is_start);
        if key.descending {
            sub = !sub;
            less = !less;
        }
        // Head: the first row in range. Tail: one past the last row in range.
        let search_for_in_range = is_start;
        let (mut low, mut high) = (non_null.start, non_null.end);
        while low < high {
            let middle = low + (high - low) / 2;
            let inside = in_range(&rows[middle][key.column], base, offset, sub, less)?;
            if inside != search_for_in_range {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        Ok(low)
    }
}

/// An offset of ROWS or GROUPS (bigint, checked non-negative) as a count.
fn count(offset: &Datum) -> i128 {
    match offset {
        Datum::Int4(v) => *v as i128,
        Datum::Int8(v) => *v as i128,
        _ => 0,
    }
}

/// The first row of a group (`start`), or one past its last.
fn group_edge(peers: &Peers, group: usize, start: bool) -> usize {
    peers.group_starts[group + !start as usize]
}

/// The rows of the partition whose `key` column is not NULL (contiguous: the sort put
/// the NULLs first or last).
fn non_null_run(rows: &[Row], key: SortKey) -> Range<usize> {
    let column = key.column;
    if key.nulls_first {
        rows.partition_point(|r| r[column].is_null())..rows.len()
    } else {
        0..rows.partition_point(|r| !r[column].is_null())
    }
}

fn invalid_size() -> Error {
    Error::new(SqlState("22013"), "invalid preceding or following size in window function")
}

/// PostgreSQL's `in_range(val, base, offset, sub, less)`: is `val <= base -/+ offset`
/// (`less`) or `val >= base -/+ offset` (not `less`), `sub` choosing the minus?
pub(crate) fn in_range(val: &Datum, base: &Datum, offset: &Datum, sub: bool, less: bool) -> Result<bool> {
    let compare = |ordering: std::cmp::Ordering| if less { ordering.is_le() } else { ordering.is_ge() };
    match (val, base) {
        (Datum::Int4(_) | Datum::Int8(_), Datum::Int4(_) | Datum::Int8(_)) => {
            let offset = count_checked(offset)?;
            let bound = if sub { int(base) - offset } else { int(base) + offset };
            Ok(compare(int(val).cmp(&bound)))
        }
        (Datum::Float8(val), Datum::Float8(base)) => {
            let Datum::Float8(offset) = offset else { return Err(Error::internal(format!("float8 RANGE offset {offset:?}"))) };
            in_range_float8(*val, *base, *offset, sub, less)
        }
        (Datum::Numeric(val), Datum::Numeric(base)) => {
            let Datum::Numeric(offset) = offset else { return Err(Error::internal(format!("numeric RANGE offset {offset:?}"))) };
            // NaN sorts above everything, so the check must name it.
            if offset.is_nan() || offset.cmp_value(&Numeric::from_i64(0)).is_lt() {
                return Err(invalid_size());
            }
            // PostgreSQL's `in_range_numeric_numeric`: NaN is above every other value and
            // equal to itself; `Inf - Inf` and `-Inf + Inf` take in every row.
            if val.is_nan() || base.is_nan() {
                return Ok(compare(val.cmp_value(base)));
            }
            // `Inf - Inf` or `-Inf + Inf` (an infinity's mantissa is its sign).
            if offset.is_infinite() && base.is_infinite() && (base.mantissa > 0) == sub {
                return Ok(true);
            }
            let bound = if sub { base.sub(offset)? } else { base.add(offset)? };
            Ok(compare(val.cmp_value(&bound)))
        }
        (val, base) => Err(Error::internal(format!("in_range over {val:?} and {base:?}"))),
    }
}

fn int(d: &Datum) -> i128 {
    match d {
        Datum::Int4(v) => *v as i128,
        Datum::Int8(v) => *v as i128,
        _ => 0,
    }
}

fn count_checked(offset: &Datum) -> Result<i128> {
    let value = match offset {
        Datum::Int4(_) | Datum::Int8(_) => int(offset),
        other => return Err(Error::internal(format!("integer RANGE offset {other:?}"))),
    };
    if value < 0 {
        return Err(invalid_size());
    }
    Ok(value)
}

/// `in_range_float8_float8`: NaN is equal to NaN and after everything else; an infinite
/// offset from an infinite base of the same sign reaches everything.
fn in_range_float8(val: f64, base: f64, offset: f64, sub: bool, less: bool) -> Result<bool> {
    if offset.is_nan() || offset < 0.0 {
        return Err(invalid_size());
    }
    if val.is_nan() {
        return Ok(base.is_nan() || !less);
    }
    if base.is_nan() {
        return Ok(less);
    }
    if offset.is_infinite() && base.is_infinite() && (if sub { base > 0.0 } else { base < 0.0 }) {
        return Ok(true);
    }
    let bound = if sub { base - offset } else { base + offset };
    Ok(if less { val <= bound } else { val >= bound })
}
