//! ORDER BY: a pipeline feeding `weft-sort`, one participant sort per pipeline participant.
//!
//! Run phase: every participant of the input pipeline encodes its rows once, in the sort's
//! tuple format (or, scanning a table in its own layout, hands over the page's tuples
//! as they are), and leaves one sorted run. Output phase: with the leader-merge strategy
//! (or a top-N bound, or one run) a single merge; with the partition strategy each
//! participant merges key ranges of all runs and the ranges are concatenated.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use weft_common::tuple::RowLayout;
use weft_common::{Datum, Result};
use weft_sort::{Merger, ParticipantSort, SharedSort, SortColumn, SortKeys, SortOptions, SortStrategy, SortedRuns};

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

/// Sort and return the rows, cut to the plan's output width.
pub(crate) fn execute_sort(sort: &SortPlan, ctx: &ExecContext) -> Result<Vec<Row>> {
    let layout = RowLayout::new(&sort.types);
    let decode = |merger: &mut Merger, limit: Option<u64>| -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        while limit.is_none_or(|l| (rows.len() as u64) < l) {
            let Some(tuple) = merger.next()? else { break };
            let mut row = Vec::with_capacity(sort.types.len());
            layout.decode_into(tuple, &mut row)?;
            row.truncate(sort.output_width);
            rows.push(row);
        }
        Ok(rows)
    };
    Ok(match run_sort(sort, ctx, decode)? {
        SortOutput::Merge(finished) => finished.merge(ctx, |merger, limit| decode(merger, limit))?,
        SortOutput::Ranges(parts) => parts.into_iter().flatten().collect(),
    })
}

/// Sort and hand the encoded tuples, in order, to `consume` (which returns false to
/// stop). For CREATE TABLE AS / INSERT whose table layout is the sort's: no decoding.
pub(crate) fn execute_sort_encoded(sort: &SortPlan, ctx: &ExecContext, mut consume: impl FnMut(&[u8]) -> Result<bool>) -> Result<()> {
    // Ranges merged in parallel are copied out, length-prefixed, and consumed in order.
    let copy_out = |merger: &mut Merger, _: Option<u64>| -> Result<Vec<u8>> {
        let mut buffer = Vec::new();
        while let Some(tuple) = merger.next()? {
            buffer.extend_from_slice(&(tuple.len() as u32).to_le_bytes());
            buffer.extend_from_slice(tuple);
        }
        Ok(buffer)
    };
    match run_sort(sort, ctx, copy_out)? {
        SortOutput::Merge(finished) => finished.merge(ctx, |merger, limit| {
            let mut n = 0u64;
            while limit.is_none_or(|l| n < l) {
                let Some(tuple) = merger.next()? else { break };
                if !consume(tuple)? {
                    break;
                }
                n += 1;
            }
            Ok(())
        }),
        SortOutput::Ranges(parts) => {
            for part in &parts {
                ctx.cancel.check()?;
                let mut at = 0;
                while at < part.len() {
                    let len = u32::from_le_bytes(part[at..at + 4].try_into().expect("4 bytes")) as usize;
                    if !consume(&part[at + 4..at + 4 + len])? {
                        return Ok(());
                    }
                    at += 4 + len;
                }
            }
            Ok(())
        }
    }
}

/// Is the sort's output exactly a row of `types` (nothing projected away)?
pub(crate) fn output_is_full_row(sort: &SortPlan, types: &[weft_common::DataType]) -> bool {
    sort.output_width == sort.types.len() && sort.types == types
}

/// How a sort's output is to be read.
enum SortOutput<T, M = FinishedSort> {
    /// One merge of every run, read by the caller as it consumes.
    Merge(M),
    /// Key ranges already merged in parallel, in order.
    Ranges(Vec<T>),
}

/// The runs of a sort whose output is one merge.
struct FinishedSort {
    runs: SortedRuns,
    bound: Option<u64>,
    trace_lines: Arc<Mutex<Vec<String>>>,
}

impl FinishedSort {
    /// Merge every run into `read` (with the number of tuples wanted), then report.
    fn merge<T>(self, ctx: &ExecContext, read: impl FnOnce(&mut Merger, Option<u64>) -> Result<T>) -> Result<T> {
        let began = Instant::now();
        let outcome = self.runs.merge_all().and_then(|mut merger| read(&mut merger, self.bound));
        // The whole merge ran in the leader: all of it is serial.
        ctx.sort_reports.lock().push(self.runs.report(began.elapsed(), began.elapsed()));
        ctx.notices.lock().append(&mut self.trace_lines.lock());
        outcome
    }
}

/// Run phase, then, with the partition strategy, the parallel merge of key ranges
/// (`emit` turns one range's merge into a part).
fn run_sort<T: Send>(sort: &SortPlan, ctx: &ExecContext, emit: impl Fn(&mut Merger, Option<u64>) -> Result<T> + Sync) -> Result<SortOutput<T>> {
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
    };
    let outcome = sort_phases(sort, ctx, keys, layout, options, &emit);
    match outcome {
        Ok(SortOutput::Merge(runs)) => Ok(SortOutput::Merge(FinishedSort { runs, bound: sort.bound, trace_lines })),
        Ok(SortOutput::Ranges(parts)) => {
            ctx.notices.lock().append(&mut trace_lines.lock());
            Ok(SortOutput::Ranges(parts))
        }
        Err(e) => {
            ctx.notices.lock().append(&mut trace_lines.lock());
            Err(e)
        }
    }
}

fn sort_phases<T: Send>(
    sort: &SortPlan,
    ctx: &ExecContext,
    keys: SortKeys,
    layout: RowLayout,
    options: SortOptions,
    emit: &(impl Fn(&mut Merger, Option<u64>) -> Result<T> + Sync),
) -> Result<SortOutput<T, SortedRuns>> {
    let strategy = options.strategy;
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
    let runs = shared.into_runs();
    let partitioned = strategy == SortStrategy::Partition && sort.bound.is_none() && runs.run_count() > 1 && workers > 0;
    if !partitioned {
        return Ok(SortOutput::Merge(runs));
    }
    let began = Instant::now();
    let (parts, serial) = merge_partitioned(&runs, ctx, workers, emit)?;
    ctx.sort_reports.lock().push(runs.report(began.elapsed(), serial));
    Ok(SortOutput::Ranges(parts))
}

/// Each participant merges key ranges (claimed from a counter) of every run. Returns the
/// parts in range order and the time during which not every participant was merging.
fn merge_partitioned<T: Send>(
    runs: &SortedRuns,
    ctx: &ExecContext,
    workers: usize,
    emit: &(impl Fn(&mut Merger, Option<u64>) -> Result<T> + Sync),
) -> Result<(Vec<T>, Duration)> {
    let began = Instant::now();
    let ranges = workers + 1;
    let partitioning = runs.partition(ranges)?;
    let next_range = AtomicUsize::new(0);
    let parts: Mutex<Vec<Option<T>>> = Mutex::new((0..ranges).map(|_| None).collect());
    let intervals: Mutex<Vec<(Instant, Instant)>> = Mutex::new(Vec::new());
    ctx.workers.run(workers, ctx.leader_participates, ctx.cancel, |_participant| {
        let start = Instant::now();
        loop {
            let range = next_range.fetch_add(1, Ordering::Relaxed);
            if range >= ranges {
                break;
            }
            let mut merger = runs.merge_range(&partitioning, range)?;
            let part = emit(&mut merger, None)?;
            parts.lock()[range] = Some(part);
        }
        intervals.lock().push((start, Instant::now()));
        Ok(())
    })?;
    let wall = began.elapsed();
    let intervals = intervals.into_inner();
    let all_busy = match (intervals.iter().map(|i| i.0).max(), intervals.iter().map(|i| i.1).min()) {
        (Some(s), Some(e)) if e > s && intervals.len() > 1 => e - s,
        _ => Duration::ZERO,
    };
    let parts = parts.into_inner().into_iter().map(|p| p.ok_or_else(|| weft_common::Error::internal("a key range was not merged"))).collect::<Result<Vec<T>>>()?;
    Ok((parts, wall.saturating_sub(all_busy)))
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
}
