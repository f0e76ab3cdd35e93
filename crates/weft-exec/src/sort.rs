//! ORDER BY: a pipeline feeding `weft-sort`, one participant sort per pipeline participant.
//!
//! Run phase: every participant of the input pipeline encodes its rows once, in the sort's
//! tuple format (or, scanning a table in its own layout, hands over the page's tuples
//! as they are), and leaves one sorted run. Output phase: with the leader-merge strategy
//! (or a top-N bound, or one run) a single merge; with the partition strategy each
//! participant merges key ranges of all runs and the ranges are concatenated.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use weft_common::tuple::RowLayout;
use weft_common::{Datum, Result};
use weft_sort::{
    merge_ranges_then_complete, Merger, ParticipantSort, RangeWorkers, SharedSort, SortColumn, SortKeys, SortOptions, SortStrategy,
    SortedRuns,
};

use crate::execute::{execute, run_pipeline, ExecContext, Sink};
use crate::plan::{Plan, Row, SortPlan};

/// The session's settings that shape a sort.
#[derive(Clone, Debug)]
pub struct SortSettings {
    /// Budget of each participant (`work_mem`).
    pub work_mem: usize,
    pub strategy: SortStrategy,
    /// `trace_sort`: LOG lines describing each sort's phases.
    pub trace: bool,
    /// Where temp files go (`<data directory>/tmp`).
    pub temp_dir: PathBuf,
}

/// Which rows of a sort's output the caller keeps: from row `skip` on (OFFSET), at most
/// `take` (LIMIT). The others are counted, never decoded: decoding a row allocates its
/// values, and on these machines the fresh memory of 10M decoded rows cost more than the
/// sort (`EXPLAIN ANALYZE` or `OFFSET` over a big sort).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowWindow {
    pub skip: u64,
    pub take: Option<u64>,
}

impl RowWindow {
    /// Every row.
    pub const ALL: RowWindow = RowWindow { skip: 0, take: None };
    /// No row: only the count (EXPLAIN ANALYZE).
    pub const NONE: RowWindow = RowWindow { skip: u64::MAX, take: Some(0) };

    /// Where rows stop being kept.
    fn end(&self) -> u64 {
        self.take.map_or(u64::MAX, |take| self.skip.saturating_add(take))
    }
}

/// Sort and return the rows of `window`, cut to the plan's output width, with the number
/// of rows the sort produced (the node's row count: up to the window's end).
pub(crate) fn execute_sort(sort: &SortPlan, ctx: &ExecContext, window: RowWindow) -> Result<(Vec<Row>, u64)> {
    let layout = RowLayout::new(&sort.types);
    let read = |first: u64, merger: &mut Merger, bound: Option<u64>| window_rows(sort, &layout, window, first, merger, bound);
    Ok(match run_sort(sort, ctx)? {
        SortOutput::Merge(finished) => finished.merge(ctx, |merger, bound| read(0, merger, bound))?,
        // Every participant reads whole ranges; the ranges concatenate in order.
        SortOutput::Ranges(ranges) => {
            let mut rows = Vec::new();
            let mut produced = 0;
            for (part, n) in ranges.merge_in_parallel(ctx, |first, merger| read(first, merger, None))? {
                rows.extend(part);
                produced += n;
            }
            (rows, produced)
        }
    })
}

/// Read a merge's tuples, numbered from `first`, until it, the sort's bound or the window
/// ends; decode those inside the window. Returns them and how many tuples were read.
fn window_rows(sort: &SortPlan, layout: &RowLayout, window: RowWindow, first: u64, merger: &mut Merger, bound: Option<u64>) -> Result<(Vec<Row>, u64)> {
    let stop = bound.map_or(window.end(), |b| b.min(window.end()));
    let mut rows = Vec::new();
    let mut at = first;
    while at < stop {
        let Some(tuple) = merger.next()? else { break };
        if at >= window.skip {
            rows.push(decode_row(sort, layout, tuple)?);
        }
        at += 1;
    }
    Ok((rows, at - first))
}

/// Sort and hand the rows of `window` (cut to the plan's output width) to `consume` in
/// order, one at a time, until it returns false: a single merge is read as it is
/// consumed, never collected; key ranges merged in parallel are decoded a range at a
/// time. Rows before the window are counted, not decoded. Returns how many rows the sort
/// produced (those skipped included).
pub(crate) fn for_each_sorted_row(
    sort: &SortPlan,
    ctx: &ExecContext,
    window: RowWindow,
    mut consume: impl FnMut(Row) -> Result<bool> + Send,
) -> Result<u64> {
    let layout = RowLayout::new(&sort.types);
    let decode = |tuple: &[u8]| decode_row(sort, &layout, tuple);
    let end = window.end();
    let mut produced = 0u64;
    match run_sort(sort, ctx)? {
        SortOutput::Merge(finished) => finished.merge(ctx, |merger, bound| {
            let stop = bound.map_or(end, |b| b.min(end));
            while produced < stop {
                let Some(tuple) = merger.next()? else { break };
                produced += 1;
                if produced > window.skip && !consume(decode(tuple)?)? {
                    break;
                }
            }
            Ok(())
        })?,
        SortOutput::Ranges(ranges) => {
            let pack = |first_row: u64, merger: &mut Merger| window_rows(sort, &layout, window, first_row, merger, None);
            let feed = |(part, n): (Vec<Row>, u64)| -> Result<Option<()>> {
                produced += n;
                for row in part {
                    if !consume(row)? {
                        return Ok(None);
                    }
                }
                Ok(Some(()))
            };
            ranges.merge_in_order(ctx, pack, feed, |()| Ok(()))?
        }
    }
    Ok(produced)
}

/// A sorted tuple as a row, cut to the plan's output width.
/// Columns nobody reads (`SortPlan::read_outputs`) are NULL: a text column not decoded is
/// an allocation and a UTF-8 check saved per row.
fn decode_row(sort: &SortPlan, layout: &RowLayout, tuple: &[u8]) -> Result<Row> {
    let Some(read) = &sort.read_outputs else {
        let mut row = Vec::with_capacity(sort.types.len());
        layout.decode_into(tuple, &mut row)?;
        row.truncate(sort.output_width);
        return Ok(row);
    };
    (0..sort.output_width)
        .map(|col| match read.get(col) {
            Some(false) => Ok(Datum::Null),
            _ => layout.get(tuple, col),
        })
        .collect()
}

/// What the consumer of an ordered output receives, in order: a tuple of a merge read by
/// the leader, or a whole key range that a participant merged and packed with `pack`.
pub(crate) enum Ordered<'a, P> {
    Tuple(&'a [u8]),
    Packed(P),
}

/// Sort and hand the encoded tuples, in order, to `consume` (which returns `None` to
/// stop, else work for `complete`). For CREATE TABLE AS / INSERT whose table layout is
/// the sort's: no decoding, and with the partition strategy the key ranges arrive packed
/// (as heap pages), merged and packed by all participants at once; `consume` takes them
/// in order (numbering their pages) and `complete` (writing them) runs in the participant
/// that handed the range over, beside the others. For a single merge both run in turn.
pub(crate) fn execute_sort_encoded<P: Send, W>(
    sort: &SortPlan,
    ctx: &ExecContext,
    pack: impl Fn(&mut Merger) -> Result<P> + Sync,
    mut consume: impl FnMut(Ordered<'_, P>) -> Result<Option<W>> + Send,
    complete: impl Fn(W) -> Result<()> + Sync,
) -> Result<()> {
    match run_sort(sort, ctx)? {
        SortOutput::Merge(finished) => finished.merge(ctx, |merger, limit| {
            let mut n = 0u64;
            while limit.is_none_or(|l| n < l) {
                let Some(tuple) = merger.next()? else { break };
                match consume(Ordered::Tuple(tuple))? {
                    Some(work) => complete(work)?,
                    None => break,
                }
                n += 1;
            }
            Ok(())
        }),
        SortOutput::Ranges(ranges) => {
            ranges.merge_in_order(ctx, |_, merger| pack(merger), |part| consume(Ordered::Packed(part)), complete)
        }
    }
}

/// Is the sort's output exactly a row of `types` (nothing projected away)?
pub(crate) fn output_is_full_row(sort: &SortPlan, types: &[weft_common::DataType]) -> bool {
    sort.output_width == sort.types.len() && sort.types == types
}

/// How a sort's output is to be read.
enum SortOutput {
    /// One merge of every run, read by the caller as it consumes.
    Merge(FinishedSort),
    /// Key ranges to be merged by all participants.
    Ranges(PartitionedSort),
}

/// What a finished run phase leaves for the output phase.
struct SortState {
    runs: SortedRuns,
    trace_lines: Arc<Mutex<Vec<String>>>,
}

impl SortState {
    /// Record the sort's report and hand its trace lines to the statement.
    fn report(&self, ctx: &ExecContext, merge_phase: Duration, serial: Duration) {
        ctx.sort_reports.lock().push(self.runs.report(merge_phase, serial));
        ctx.notices.lock().append(&mut self.trace_lines.lock());
    }
}

/// The runs of a sort whose output is one merge.
struct FinishedSort {
    state: SortState,
    bound: Option<u64>,
}

impl FinishedSort {
    /// Merge every run into `read` (with the number of tuples wanted), then report.
    fn merge<T>(self, ctx: &ExecContext, read: impl FnOnce(&mut Merger, Option<u64>) -> Result<T>) -> Result<T> {
        let began = Instant::now();
        let outcome = self.state.runs.merge_all().and_then(|mut merger| read(&mut merger, self.bound));
        // The whole merge ran in the leader: all of it is serial.
        self.state.report(ctx, began.elapsed(), began.elapsed());
        outcome
    }
}

/// The runs of a sort whose output is merged by key range, in parallel.
struct PartitionedSort {
    state: SortState,
    workers: usize,
}

impl PartitionedSort {
    fn ranges(&self) -> usize {
        (self.workers + 1) * weft_sort::RANGES_PER_PARTICIPANT
    }

    /// Every participant merges ranges (claimed from a counter) into parts with `emit`;
    /// returns the parts in range order.
    fn merge_in_parallel<T: Send>(self, ctx: &ExecContext, emit: impl Fn(u64, &mut Merger) -> Result<T> + Sync) -> Result<Vec<T>> {
        let mut parts = Vec::new();
        self.merge_in_order(
            ctx,
            emit,
            |part| {
                parts.push(part);
                Ok(Some(()))
            },
            |()| Ok(()),
        )?;
        Ok(parts)
    }

    /// Every participant merges and packs key ranges; `consume` gets them in order and
    /// `complete` finishes each in the participant that handed it over
    /// (`weft_sort::merge_ranges_then_complete`).
    fn merge_in_order<P: Send, W>(
        self,
        ctx: &ExecContext,
        pack: impl Fn(u64, &mut Merger) -> Result<P> + Sync,
        consume: impl FnMut(P) -> Result<Option<W>> + Send,
        complete: impl Fn(W) -> Result<()> + Sync,
    ) -> Result<()> {
        let who = RangeWorkers {
            pool: ctx.workers,
            workers: self.workers,
            leader_participates: ctx.leader_participates,
            cancel: ctx.cancel,
        };
        let (times, outcome) = merge_ranges_then_complete(&self.state.runs, self.ranges(), &who, pack, consume, complete);
        self.state.report(ctx, times.wall, times.not_all_busy);
        outcome
    }
}

/// The run phase: every participant of the input sorts its share into one run.
fn run_sort(sort: &SortPlan, ctx: &ExecContext) -> Result<SortOutput> {
    let layout = RowLayout::new(&sort.types);
    let columns: Vec<SortColumn> = sort
        .keys
        .iter()
        .map(|k| SortColumn { column: k.column, descending: k.descending, nulls_first: k.nulls_first })
        .collect();
    let keys = SortKeys::new(layout.clone(), &columns)?;
    let trace_lines = Arc::new(Mutex::new(Vec::new()));
    let trace: Option<weft_sort::TraceFn> = ctx.sort.trace.then(|| {
        let lines = trace_lines.clone();
        Arc::new(move |line: String| lines.lock().push(format!("LOG:  {line}"))) as weft_sort::TraceFn
    });
    let options = SortOptions {
        budget: ctx.sort.work_mem,
        bound: sort.bound,
        strategy: ctx.sort.strategy,
        temp_dir: ctx.sort.temp_dir.clone(),
        cancel: ctx.cancel.clone(),
        trace,
        sub_run_bytes: weft_sort::DEFAULT_SUB_RUN_BYTES,
    };
    let strategy = options.strategy;
    let outcome = (|| {
        let (shared, workers) = match sort.input.as_ref() {
            Plan::Pipeline(pipeline) => {
                let shared = SharedSort::new(keys, options, pipeline.workers + 1);
                run_pipeline(pipeline, ctx, &SortSink { shared: &shared, layout })?;
                (shared, pipeline.workers)
            }
            other => {
                let rows = execute(other, ctx)?;
                let shared = SharedSort::new(keys, options, 1);
                let mut participant = shared.participant();
                let mut scratch = Vec::new();
                for row in &rows {
                    scratch.clear();
                    layout.encode(row, &mut scratch)?;
                    participant.push(&scratch)?;
                }
                participant.finish()?;
                (shared, 0)
            }
        };
        Ok((shared.into_runs(), workers))
    })();
    let (runs, workers) = match outcome {
        Ok(done) => done,
        Err(e) => {
            ctx.notices.lock().append(&mut trace_lines.lock());
            return Err(e);
        }
    };
    let state = SortState { runs, trace_lines };
    let partitioned = strategy == SortStrategy::Partition && sort.bound.is_none() && state.runs.run_count() > 1 && workers > 0;
    Ok(if partitioned {
        SortOutput::Ranges(PartitionedSort { state, workers })
    } else {
        SortOutput::Merge(FinishedSort { state, bound: sort.bound })
    })
}

/// The run phase's sink: each pipeline participant is a sort participant.
struct SortSink<'s> {
    shared: &'s SharedSort,
    layout: RowLayout,
}

impl<'s> Sink for SortSink<'s> {
    type Local = (ParticipantSort<'s>, Vec<u8>);

    fn local(&self) -> Result<Self::Local> {
        Ok((self.shared.participant(), Vec::new()))
    }

    fn push(&self, (participant, scratch): &mut Self::Local, row: &[Datum]) -> Result<bool> {
        scratch.clear();
        self.layout.encode(row, scratch)?;
        participant.push(scratch)?;
        Ok(true)
    }

    fn finish(&self, (participant, _): Self::Local) -> Result<()> {
        participant.finish()
    }

    /// A scan of a table whose rows are exactly the sorted rows: the page's tuples are
    /// already in the sort's format.
    fn accepts_raw(&self, layout: &RowLayout, columns: &[usize]) -> bool {
        layout.types() == self.layout.types() && columns.iter().copied().eq(0..layout.len())
    }

    fn push_raw_page(&self, (participant, _): &mut Self::Local, page: &[u8], tuples: &[Range<usize>]) -> Result<bool> {
        for range in tuples {
            participant.push(&page[range.clone()])?;
        }
        Ok(true)
    }

    /// A bounded sort on an integer or text column (NULLs last) skips the blocks whose
    /// values cannot beat the worst row it keeps: after the first few pages of a big
    /// table that is nearly all of them. The raw rows are the sorted rows, so the key's
    /// column is the table's.
    fn zone_prunable_column(&self) -> Option<usize> {
        self.shared.bound().and(self.shared.keys().zone_prunable_column())
    }

    fn prune_bar(&self, (participant, _): &Self::Local) -> Option<u64> {
        participant.top_n_bar()
    }

    fn may_beat(&self, bar: u64, min: i64, max: i64) -> bool {
        self.shared.keys().best_abbrev_in(min, max) <= bar
    }

    /// A bounded sort on an integer or text column turns away, before they are decoded,
    /// the rows whose key cannot beat the worst row it keeps.
    fn row_prunable_column(&self) -> Option<usize> {
        self.shared.bound().and(self.shared.keys().row_prunable_column())
    }

    fn row_may_beat(&self, bar: u64, value: Option<i64>) -> bool {
        self.shared.keys().abbrev_of_zone_value(value) <= bar
    }
}
