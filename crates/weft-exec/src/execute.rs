//! Running plans: pipelines on the worker pool, each feeding a sink.
//!
//! Every pipeline runs the same way: the shared state of its source (a block cursor, a
//! series counter, a row index) is built once; each participant then loops taking a
//! morsel, pushing each row through the steps into its *local* sink state; at the end each
//! participant hands its local state to the shared sink once (`finish`). Participants
//! never wait for one another inside a pipeline, so the number of workers actually
//! launched (maybe none) changes speed, never the result.

use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use weft_access::heap::{
    has_zone_value, page_zone, row_zone_value, scan_numbered_pages, text_index_of, HeapInserter, HeapPageBuilder, HeapScanCursor, PackedPages,
};
use crate::sort::Ordered;
use weft_common::parallel::{CancelToken, WorkerPool};
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result};
use weft_storage::zone_map::{block_runs, BlockZone};
use weft_storage::{BlockNumber, BufferAccessStrategy, BufferPool, NumberedPages, RelFileLocator};

use crate::aggregate::AggregateSink;
use crate::hash_join::run::{JoinLocal, JoinRun};
use crate::expr::{compare_datums, EvalContext};
use crate::plan::{IndexSource, Pipeline, Plan, Row, Source, Step};
use crate::sort::SortSettings;

/// What a statement's execution may use.
pub struct ExecContext<'a> {
    pub pool: &'a BufferPool,
    pub workers: &'a WorkerPool,
    pub cancel: &'a CancelToken,
    pub eval: &'a EvalContext,
    pub leader_participates: bool,
    /// One entry per pipeline run, in the order they finished (for EXPLAIN ANALYZE and
    /// the benchmark's serial fraction).
    pub stats: Mutex<Vec<PipelineStats>>,
    /// Budget, strategy, tracing and temp directory of sorts.
    pub sort: SortSettings,
    /// NOTICE / LOG lines for the client (`trace_sort`), in order.
    pub notices: Mutex<Vec<String>>,
    /// One report per sort that ran, in the order they finished (EXPLAIN ANALYZE).
    pub sort_reports: Mutex<Vec<weft_sort::SortReport>>,
    /// One entry per aggregate, limit and sort node run, in the order they finished
    /// (EXPLAIN ANALYZE; pipelines are in `stats`).
    pub nodes: Mutex<Vec<NodeStats>>,
    /// Budget and debug settings of hash joins.
    pub hash: crate::hash_join::HashJoinSettings,
    /// One entry per hash join step run, in the order they finished (EXPLAIN ANALYZE).
    pub joins: Mutex<Vec<crate::hash_join::HashJoinStats>>,
}

/// The identity EXPLAIN ANALYZE matches statistics to plan nodes by: the node's address
/// in the plan being executed (a `&Pipeline` for `PipelineStats`, a `&Plan` for
/// `NodeStats`), stable while the plan is borrowed. A node the executor ran from a copy
/// of the plan has no statistics under this identity.
pub fn node_id<T>(node: &T) -> usize {
    node as *const T as usize
}

/// What one aggregate, limit or sort node did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeStats {
    /// [`node_id`] of the `Plan`.
    pub node: usize,
    /// Rows the node returned.
    pub rows: u64,
    /// Aggregate: groups before the HAVING filter.
    pub groups: u64,
    /// Aggregate: groups the participants' partial aggregates handed over, summed.
    pub partial_groups: u64,
    /// From the node's start to its end (it returns all its rows at once).
    pub elapsed: Duration,
    /// Sort: the index in `ExecContext::sort_reports` of this sort's report.
    pub sort_report: Option<usize>,
    /// Aggregate: what its memory budget made it do (EXPLAIN ANALYZE's `Batches`,
    /// `Memory Usage`, `Disk Usage`).
    pub spill: Option<crate::aggregate::AggregateSpillReport>,
}

/// What one participant of a pipeline did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParticipantStats {
    /// Rows the source handed it, and rows its steps passed to the sink.
    pub rows_in: u64,
    pub rows_out: u64,
    /// From the pipeline's start to this participant's start, first row out, and finish.
    pub started: Duration,
    pub first_row: Option<Duration>,
    pub finished: Duration,
}

/// How one pipeline's participants shared its time.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineStats {
    /// [`node_id`] of the `Pipeline`.
    pub node: usize,
    pub workers_planned: usize,
    pub workers_launched: usize,
    /// From building the source's shared state to the last participant's finish.
    pub wall: Duration,
    /// Time during which every participant was working (the intersection of their
    /// busy intervals); the rest of `wall` had at most all-but-one at work.
    pub all_busy: Duration,
    /// One entry per participant, in the order they finished.
    pub participants: Vec<ParticipantStats>,
    /// Index-only scan: entries whose heap row had to be visited (EXPLAIN ANALYZE's
    /// `Heap Fetches`).
    pub heap_fetches: u64,
}

impl PipelineStats {
    /// Rows the source produced, over all participants.
    pub fn rows_in(&self) -> u64 {
        self.participants.iter().map(|p| p.rows_in).sum()
    }

    /// Rows that reached the sink, over all participants.
    pub fn rows_out(&self) -> u64 {
        self.participants.iter().map(|p| p.rows_out).sum()
    }

    /// The fraction of the pipeline's time not spent with every participant busy: what
    /// limits the speedup from more participants (Amdahl's serial fraction).
    pub fn serial_fraction(&self) -> f64 {
        if self.wall.is_zero() {
            return 0.0;
        }
        1.0 - self.all_busy.as_secs_f64() / self.wall.as_secs_f64()
    }
}

/// Where a sink's rows go, seen from one participant.
pub(crate) trait Sink: Sync {
    type Local: Send;
    fn local(&self) -> Result<Self::Local>;
    /// Take one row; `Ok(false)` asks the pipeline to stop (a limit was reached).
    fn push(&self, local: &mut Self::Local, row: &[Datum]) -> Result<bool>;
    /// Hand a participant's local state to the shared state, once.
    fn finish(&self, local: Self::Local) -> Result<()>;

    /// Does the sink only count the rows it takes (what they hold never matters)? Then
    /// [`push_count`](Self::push_count) may stand for that many pushes.
    fn counts_rows_only(&self) -> bool {
        false
    }

    /// Take `rows` rows, of which only the number matters (see [`counts_rows_only`](Self::counts_rows_only)).
    fn push_count(&self, _local: &mut Self::Local, _rows: u64) -> Result<()> {
        Err(Error::internal("rows counted for a sink that does not only count them"))
    }

    /// Can this sink read the tuples of a heap scan directly (no steps in between)?
    /// `columns` maps the pipeline's row positions to table columns. Called once, before
    /// any participant starts; a sink that says yes gets `push_raw_page` instead of `push`.
    fn accepts_raw(&self, _layout: &RowLayout, _columns: &[usize]) -> bool {
        false
    }

    /// Take the visible tuples of one page (`tuples` are byte ranges into `page`).
    fn push_raw_page(&self, _local: &mut Self::Local, _page: &[u8], _tuples: &[Range<usize>]) -> Result<bool> {
        Err(Error::internal("raw tuples sent to a sink that does not accept them"))
    }

    /// A column of the raw tuples by whose zone map the scan may skip blocks: the sink can
    /// tell from a block's `(min, max)` there that it wants none of the block's rows.
    fn zone_prunable_column(&self) -> Option<usize> {
        None
    }

    /// What a block must beat for the sink to want its rows, given what `local` holds now
    /// (`None`: it wants everything).
    fn prune_bar(&self, _local: &Self::Local) -> Option<u64> {
        None
    }

    /// May a block whose values of the prunable column lie in `min..=max` beat `bar`?
    fn may_beat(&self, _bar: u64, _min: i64, _max: i64) -> bool {
        true
    }

    /// A column of the rows the sink takes by whose value (as a zone map keeps it) the
    /// sink can turn a row away before the row is decoded, against [`prune_bar`](Self::prune_bar).
    fn row_prunable_column(&self) -> Option<usize> {
        None
    }

    /// May a row whose prunable column has the zone value `value` (`None`: NULL) beat `bar`?
    fn row_may_beat(&self, _bar: u64, _value: Option<i64>) -> bool {
        true
    }
}

/// Run a plan to completion and return its rows.
pub fn execute(plan: &Plan, ctx: &ExecContext) -> Result<Vec<Row>> {
    match plan {
        Plan::Pipeline(pipeline) => {
            let sink = CollectSink::new(None);
            run_pipeline(pipeline, ctx, &sink)?;
            Ok(sink.into_rows())
        }
        Plan::Aggregate { input, group_by, aggregates, output } => {
            let began = Instant::now();
            let sink = AggregateSink::new(group_by, aggregates, ctx, input.workers);
            run_pipeline(input, ctx, &sink)?;
            let partial_groups = sink.partial_groups();
            let rows = sink.take_rows()?;
            let spill = sink.spill_report();
            let groups = rows.len() as u64;
            let rows = apply_steps_to_all(rows, output, ctx.eval)?;
            ctx.nodes.lock().push(NodeStats {
                node: node_id(plan),
                rows: rows.len() as u64,
                groups,
                partial_groups,
                elapsed: began.elapsed(),
                sort_report: None,
                spill: Some(spill),
            });
            Ok(rows)
        }
        Plan::Limit { input, limit, offset, run_time, ties } => {
            let began = Instant::now();
            let (limit, offset) = match run_time {
                Some(run_time) => run_time.evaluate(*limit, *offset, ctx.eval)?,
                None => (*limit, *offset),
            };
            let (limit, offset) = (&limit, &offset);
            if *limit == Some(0) {
                // PostgreSQL's Limit never runs its input for LIMIT 0: nothing below is
                // evaluated, so no error it would raise is (EXPLAIN ANALYZE: never executed).
                ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows: 0, elapsed: began.elapsed(), ..NodeStats::default() });
                return Ok(Vec::new());
            }
            if let Some(ties) = ties {
                let rows = limit_with_ties(input, ties, *limit, *offset, ctx)?;
                ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows: rows.len() as u64, elapsed: began.elapsed(), ..NodeStats::default() });
                return Ok(rows);
            }
            let wanted = limit.map(|l| l.saturating_add(*offset));
            let rows = match input.as_ref() {
                Plan::Pipeline(pipeline) => {
                    let sink = CollectSink::new(wanted);
                    run_pipeline(pipeline, ctx, &sink)?;
                    sink.into_rows()
                }
                // The sort decodes only the rows kept; the offset's are counted.
                Plan::Sort(sort) => {
                    let window = crate::sort::RowWindow { skip: *offset, take: *limit };
                    let (rows, _) = execute_sort_node(input, sort, ctx, window)?;
                    ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows: rows.len() as u64, elapsed: began.elapsed(), ..NodeStats::default() });
                    return Ok(rows);
                }
                other => execute(other, ctx)?,
            };
            let start = (*offset).min(rows.len() as u64) as usize;
            let end = match limit {
                Some(l) => start.saturating_add(*l as usize).min(rows.len()),
                None => rows.len(),
            };
            let rows: Vec<Row> = rows.into_iter().skip(start).take(end - start).collect();
            ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows: rows.len() as u64, elapsed: began.elapsed(), ..NodeStats::default() });
            Ok(rows)
        }
        Plan::Unique { input, keys, output_width } => {
            let began = Instant::now();
            let mut rows = execute(input, ctx)?;
            let mut kept = 0;
            for i in 0..rows.len() {
                let new_run = kept == 0 || keys.iter().any(|&k| compare_datums(&rows[i][k], &rows[kept - 1][k]).is_ne());
                if new_run {
                    rows.swap(kept, i);
                    kept += 1;
                }
            }
            rows.truncate(kept);
            rows.iter_mut().for_each(|row| row.truncate(*output_width));
            ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows: rows.len() as u64, elapsed: began.elapsed(), ..NodeStats::default() });
            Ok(rows)
        }
        Plan::SetOp(setop) => {
            let began = Instant::now();
            let rows = crate::setop::execute_set_op(setop, ctx)?;
            ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows: rows.len() as u64, elapsed: began.elapsed(), ..NodeStats::default() });
            Ok(rows)
        }
        Plan::Sort(sort) => Ok(execute_sort_node(plan, sort, ctx, crate::sort::RowWindow::ALL)?.0),
        Plan::Window(window) => {
            let began = Instant::now();
            let rows = crate::window::execute_window(window, ctx)?;
            crate::window::record(plan, ctx, began, rows.len());
            Ok(rows)
        }
        Plan::NestLoop(nl) => crate::recursive::execute_nest_loop(plan, nl, ctx),
        Plan::RecursiveUnion(ru) => crate::recursive::execute_recursive_union(plan, ru, ctx),
        Plan::ProjectSet(ps) => crate::project_set::execute_project_set(plan, ps, ctx),
    }
}

/// `FETCH FIRST limit ROWS WITH TIES` after `offset` rows of the sort `input`: the
/// counted rows, then those equal to the last of them on the sort keys, read from the
/// sort's merge until the first that differs. `limit` None (a count that was NULL at run
/// time, as in PostgreSQL) keeps every row.
fn limit_with_ties(input: &Plan, ties: &crate::plan::WithTies, limit: Option<u64>, offset: u64, ctx: &ExecContext) -> Result<Vec<Row>> {
    let Plan::Sort(sort) = input else {
        return Err(Error::internal("WITH TIES over a plan that is not a sort"));
    };
    let mut rows: Vec<Row> = Vec::new();
    let window = crate::sort::RowWindow { skip: offset, take: None };
    sort_node_run(input, ctx, || {
        let produced = crate::sort::for_each_sorted_row(sort, ctx, window, |row| {
            if let (Some(limit), Some(last)) = (limit, rows.last()) {
                let tied = || ties.keys.iter().all(|k| compare_datums(&last[k.column], &row[k.column]).is_eq());
                if rows.len() as u64 >= limit && !tied() {
                    return Ok(false);
                }
            }
            rows.push(row);
            Ok(true)
        })?;
        Ok(((), produced))
    })?;
    rows.iter_mut().for_each(|row| row.truncate(ties.output_width));
    Ok(rows)
}

/// Run a plan and hand its rows to `consume` one at a time, in order; returns how many
/// there were. A sort at the top hands its rows over as its merge produces them (key
/// ranges merged in parallel, a range at a time), never collecting them all: a client
/// reading a big ordered result gets rows while the merge goes on, in bounded memory.
/// Other plans run to completion first.
pub fn execute_streaming(plan: &Plan, ctx: &ExecContext, consume: &mut (dyn FnMut(Row) -> Result<()> + Send)) -> Result<u64> {
    match plan {
        Plan::Pipeline(pipeline) => {
            let sink = StreamSink { consume: Mutex::new(consume), count: AtomicU64::new(0) };
            run_pipeline(pipeline, ctx, &sink)?;
            Ok(sink.count.into_inner())
        }
        Plan::Sort(sort) => {
            let (_, produced) = sort_node_run(plan, ctx, || {
                let produced = crate::sort::for_each_sorted_row(sort, ctx, crate::sort::RowWindow::ALL, |row| consume(row).map(|()| true))?;
                Ok(((), produced))
            })?;
            Ok(produced)
        }
        other => {
            let rows = execute(other, ctx)?;
            let count = rows.len() as u64;
            rows.into_iter().try_for_each(consume)?;
            Ok(count)
        }
    }
}

/// Hands a pipeline's rows on as they come ([`execute_streaming`]): each participant
/// gathers a batch, then passes it on under the lock, so participants' batches
/// interleave as a Gather's would, and one participant's rows keep their order.
/// Run `plan`, handing its rows to `take` until it returns `false`: a pipeline stops
/// there, as under a LIMIT (a subplan's EXISTS, ANY or ALL is decided by the first row
/// that settles it, as PostgreSQL's `ExecScanSubPlan` stops); other plans run whole first.
pub fn execute_until(plan: &Plan, ctx: &ExecContext, take: &mut (dyn FnMut(&[Datum]) -> Result<bool> + Send)) -> Result<()> {
    match plan {
        Plan::Pipeline(pipeline) => {
            let sink = UntilSink { take: Mutex::new(take), stopped: AtomicBool::new(false) };
            run_pipeline(pipeline, ctx, &sink)
        }
        _ => {
            for row in execute(plan, ctx)? {
                if !take(&row)? {
                    break;
                }
            }
            Ok(())
        }
    }
}

/// The sink of [`execute_until`]: rows go to `take` as they come, until it says stop.
struct UntilSink<'c> {
    take: Mutex<&'c mut (dyn FnMut(&[Datum]) -> Result<bool> + Send)>,
    stopped: AtomicBool,
}

impl Sink for UntilSink<'_> {
    type Local = ();

    fn local(&self) -> Result<()> {
        Ok(())
    }

    fn push(&self, _: &mut (), row: &[Datum]) -> Result<bool> {
        // Another participant may have stopped it: its answer is given.
        if self.stopped.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let go_on = (self.take.lock())(row)?;
        if !go_on {
            self.stopped.store(true, Ordering::Relaxed);
        }
        Ok(go_on)
    }

    fn finish(&self, _: ()) -> Result<()> {
        Ok(())
    }
}

struct StreamSink<'c> {
    consume: Mutex<&'c mut (dyn FnMut(Row) -> Result<()> + Send)>,
    count: AtomicU64,
}

impl StreamSink<'_> {
    const BATCH: usize = 256;

    fn hand_on(&self, rows: &mut Vec<Row>) -> Result<()> {
        self.count.fetch_add(rows.len() as u64, Ordering::Relaxed);
        let mut consume = self.consume.lock();
        rows.drain(..).try_for_each(|row| consume(row))
    }
}

impl Sink for StreamSink<'_> {
    type Local = Vec<Row>;

    fn local(&self) -> Result<Vec<Row>> {
        Ok(Vec::with_capacity(Self::BATCH))
    }

    fn push(&self, local: &mut Vec<Row>, row: &[Datum]) -> Result<bool> {
        local.push(row.to_vec());
        if local.len() >= Self::BATCH {
            self.hand_on(local)?;
        }
        Ok(true)
    }

    fn finish(&self, mut local: Vec<Row>) -> Result<()> {
        self.hand_on(&mut local)
    }
}

/// Run a plan whose rows are thrown away (EXPLAIN ANALYZE); returns how many there were.
/// A sort at the top counts its output without decoding it.
pub fn execute_discarding(plan: &Plan, ctx: &ExecContext) -> Result<u64> {
    match plan {
        Plan::Sort(sort) => Ok(execute_sort_node(plan, sort, ctx, crate::sort::RowWindow::NONE)?.1),
        other => Ok(execute(other, ctx)?.len() as u64),
    }
}

/// Run the sort node `plan` (whose sort is `sort`): the rows of `window`, and how many
/// rows the sort produced.
fn execute_sort_node(plan: &Plan, sort: &crate::plan::SortPlan, ctx: &ExecContext, window: crate::sort::RowWindow) -> Result<(Vec<Row>, u64)> {
    sort_node_run(plan, ctx, || crate::sort::execute_sort(sort, ctx, window))
}

/// Run the sort node `plan`'s work `run`, which returns its outcome and how many rows
/// the sort produced, and record the node's statistics around it.
pub(crate) fn sort_node_run<T>(plan: &Plan, ctx: &ExecContext, run: impl FnOnce() -> Result<(T, u64)>) -> Result<(T, u64)> {
    let began = Instant::now();
    let reports_before = ctx.sort_reports.lock().len();
    let (outcome, rows) = run()?;
    // Sorts nested in the input finished before this one: the last report is its.
    let reports_after = ctx.sort_reports.lock().len();
    let sort_report = (reports_after > reports_before).then(|| reports_after - 1);
    ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows, elapsed: began.elapsed(), sort_report, ..NodeStats::default() });
    Ok((outcome, rows))
}

/// Pages a sorted insert packs before appending them to the relation.
const APPEND_BATCH_PAGES: usize = 128;

/// Where inserted rows go: a heap relation, written by the statement's xid.
pub struct InsertTarget {
    pub rel: RelFileLocator,
    pub layout: RowLayout,
    pub xid: u64,
    pub table_name: String,
    /// (column index, column name) of NOT NULL columns.
    pub not_null: Vec<(usize, String)>,
    /// Let the first participant fill the relation's last page before starting new ones.
    /// Must be false when the plan scans the target itself: the scan holds that page's
    /// shared lock while the insert would rewrite it (see `Plan::reads_relation`).
    pub fill_last_page: bool,
}

impl InsertTarget {
    /// [`check_not_null`](Self::check_not_null) for a row in the table's tuple format.
    fn check_not_null_encoded(&self, tuple: &[u8]) -> Result<()> {
        if self.not_null.iter().any(|(index, _)| self.layout.is_null(tuple, *index)) {
            return self.check_not_null(&self.layout.decode(tuple)?);
        }
        Ok(())
    }

    /// Fail as PostgreSQL does if a NOT NULL column of `row` is NULL.
    pub fn check_not_null(&self, row: &[Datum]) -> Result<()> {
        for (index, name) in &self.not_null {
            if row[*index].is_null() {
                return Err(Error::new(
                    weft_common::SqlState::NOT_NULL_VIOLATION,
                    format!("null value in column \"{name}\" of relation \"{}\" violates not-null constraint", self.table_name),
                )
                .with_detail(format!("Failing row contains ({}).", failing_row(row))));
            }
        }
        Ok(())
    }
}

/// A row's values as PostgreSQL's "Failing row contains (...)" detail lists them.
pub fn failing_row(row: &[Datum]) -> String {
    row.iter().map(|d| d.to_pg_text().unwrap_or_else(|| "null".to_string())).collect::<Vec<_>>().join(", ")
}

/// Run a plan and insert its rows into `target`; returns the number of rows inserted.
/// A pipeline inserts in parallel (each participant fills its own pages).
pub fn execute_insert(plan: &Plan, ctx: &ExecContext, target: &InsertTarget) -> Result<u64> {
    let sink = InsertSink { pool: ctx.pool, target, inserted: AtomicU64::new(0), last_page_taken: AtomicBool::new(false) };
    match plan {
        Plan::Pipeline(pipeline) => run_pipeline(pipeline, ctx, &sink)?,
        // Sorted tuples already in the table's format go to its pages as they are.
        Plan::Sort(sort) if crate::sort::output_is_full_row(sort, target.layout.types()) => {
            let mut local = sink.local()?;
            // Ranges merged by workers arrive as packed heap pages.
            let pack = |merger: &mut weft_sort::Merger| -> Result<PackedPages> {
                let mut builder = HeapPageBuilder::new(target.xid);
                while let Some(tuple) = merger.next()? {
                    target.check_not_null_encoded(tuple)?;
                    builder.add(tuple)?;
                }
                Ok(builder.finish())
            };
            // Tuples of a single merge are packed here, a batch of pages at a time, and
            // written the same way: no buffer-pool frame per page.
            // Packed ranges are numbered in order here and written by the participant
            // that handed them over.
            let mut builder = HeapPageBuilder::new(target.xid);
            let consume = |item: Ordered<'_, PackedPages>| -> Result<Option<Option<NumberedPages>>> {
                Ok(Some(match item {
                    Ordered::Tuple(tuple) => {
                        target.check_not_null_encoded(tuple)?;
                        builder.add(tuple)?;
                        if builder.full_pages() >= APPEND_BATCH_PAGES {
                            local.append_pages(builder.take_full_pages())?;
                        }
                        None
                    }
                    Ordered::Packed(pages) => {
                        local.append_pages(std::mem::replace(&mut builder, HeapPageBuilder::new(target.xid)).finish())?;
                        Some(local.number_pages(pages)?)
                    }
                }))
            };
            let write = |pages: Option<NumberedPages>| pages.map_or(Ok(()), |p| p.write(ctx.pool));
            crate::sort::execute_sort_encoded(sort, ctx, pack, consume, write)?;
            local.append_pages(builder.finish())?;
            sink.finish(local)?;
        }
        other => {
            let rows = execute(other, ctx)?;
            let mut local = sink.local()?;
            for row in rows {
                ctx.cancel.check()?;
                sink.push(&mut local, &row)?;
            }
            sink.finish(local)?;
        }
    }
    Ok(sink.inserted.load(Ordering::Relaxed))
}

pub(crate) fn apply_steps_to_all(rows: Vec<Row>, steps: &[Step], eval: &EvalContext) -> Result<Vec<Row>> {
    if steps.is_empty() {
        return Ok(rows);
    }
    let mut buffers = StepBuffers::new();
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        buffers.process(row, steps, eval, |kept| {
            out.push(kept.to_vec());
            Ok(true)
        })?;
    }
    Ok(out)
}

/// Per-participant buffers for pushing borrowed rows through steps without allocating a
/// row per tuple: projections alternate between the two buffers.
pub(crate) struct StepBuffers {
    buffers: [Vec<Datum>; 2],
}

impl StepBuffers {
    pub(crate) fn new() -> StepBuffers {
        StepBuffers { buffers: [Vec::new(), Vec::new()] }
    }

    /// Run `row` through `steps` and hand the result to `sink`; a filtered row is skipped.
    #[inline]
    pub(crate) fn process(&mut self, row: &[Datum], steps: &[Step], eval: &EvalContext, sink: impl FnOnce(&[Datum]) -> Result<bool>) -> Result<bool> {
        // `current`: None = the input row, Some(i) = buffers[i].
        let mut current: Option<usize> = None;
        for step in steps {
            match step {
                Step::Filter(predicate) => {
                    let input = match current { None => row, Some(i) => &self.buffers[i][..] };
                    if !matches!(predicate.eval(input, eval)?, Datum::Bool(true)) {
                        return Ok(true);
                    }
                }
                Step::Project(exprs) => {
                    let target = match current { Some(0) => 1, _ => 0 };
                    let (first, second) = self.buffers.split_at_mut(1);
                    let (out, other) = if target == 0 { (&mut first[0], &second[0]) } else { (&mut second[0], &first[0]) };
                    let input = match current { None => row, Some(_) => &other[..] };
                    out.clear();
                    for expr in exprs {
                        out.push(expr.eval(input, eval)?);
                    }
                    current = Some(target);
                }
                // Pipelines with joins go through `process_joined`.
                Step::HashJoin(_) => return Err(Error::internal("a join step outside a joined pipeline")),
            }
        }
        sink(match current { None => row, Some(i) => &self.buffers[i][..] })
    }
}

/// Rows handed out in chunks from a shared index (VALUES, materialized subqueries).
const ROW_CHUNK: usize = 1024;
/// Blocks a scan's `keep` is asked about at once, ahead of reading them: few enough that
/// a bar raised by one page applies soon, enough for batched reads.
const KEEP_ASKED_AHEAD: BlockNumber = 32;
/// Series values handed out at once.
const SERIES_CHUNK: i64 = 4096;

/// A subquery that streams from a sort's merge: the sort node, its sort, the window of
/// its rows wanted, and the LIMIT node that asks for the window. LIMIT 0 is left to
/// `execute`, which never runs its input, and counts known only at run time to its
/// evaluation of them.
fn streamed_sort(plan: &Plan) -> Option<(&Plan, &crate::plan::SortPlan, crate::sort::RowWindow, Option<&Plan>)> {
    match plan {
        Plan::Sort(sort) => Some((plan, sort, crate::sort::RowWindow::ALL, None)),
        Plan::Limit { input, limit: limit @ (None | Some(1..)), offset, run_time: None, ties: None } => match input.as_ref() {
            Plan::Sort(sort) => Some((input, sort, crate::sort::RowWindow { skip: *offset, take: *limit }, Some(plan))),
            _ => None,
        },
        _ => None,
    }
}

/// The shared part of a running source.
pub(crate) enum SourceState<'p> {
    Single(AtomicBool),
    Heap { source: &'p crate::plan::HeapSource, cursor: HeapScanCursor },
    Series { next_index: AtomicI64, count: i64, start: i64, step: i64, data_type: DataType },
    /// `generate_series` over timestamps, stepped by an interval: made by the first
    /// participant to come, since a step of months makes each value depend on the last
    /// (January 31st plus a month is February 29th, plus another is March 29th).
    TimeSeries { start: i64, stop: i64, step: weft_common::datetime::Interval, data_type: DataType, taken: AtomicBool },
    Rows { rows: Vec<Row>, next: AtomicUsize },
    /// A subquery that is one sort (`plan`): run whole by the first participant to come,
    /// its rows streamed from the sort's merge into the pipeline, never collected (10M
    /// sorted rows decoded at once took gigabytes of fresh memory).
    /// `window`: the rows of a LIMIT / OFFSET over the sort (`limit`, that node).
    Sorted {
        plan: &'p Plan,
        sort: &'p crate::plan::SortPlan,
        window: crate::sort::RowWindow,
        limit: Option<&'p Plan>,
        taken: AtomicBool,
    },
    /// Run whole by the first participant to come (index scans are serial).
    Index { source: &'p IndexSource, taken: AtomicBool, heap_fetches: AtomicU64 },
}

impl<'p> SourceState<'p> {
    pub(crate) fn new(source: &'p Source, ctx: &ExecContext, participants: usize) -> Result<SourceState<'p>> {
        Ok(match source {
            Source::Single => SourceState::Single(AtomicBool::new(false)),
            Source::Heap(heap) => {
                SourceState::Heap { source: heap, cursor: HeapScanCursor::new(heap.nblocks, participants) }
            }
            Source::Series { start, stop, step, data_type, .. } => {
                let count = series_count(*start, *stop, *step)?;
                SourceState::Series {
                    next_index: AtomicI64::new(0),
                    count,
                    start: *start,
                    step: *step,
                    data_type: *data_type,
                }
            }
            Source::Values(rows) => {
                let mut out = Vec::with_capacity(rows.len());
                for exprs in rows {
                    let mut row = Vec::with_capacity(exprs.len());
                    for expr in exprs {
                        row.push(expr.eval(&[], ctx.eval)?);
                    }
                    out.push(row);
                }
                SourceState::Rows { rows: out, next: AtomicUsize::new(0) }
            }
            Source::Subquery { plan, .. } => match streamed_sort(plan) {
                Some((sort_node, sort, window, limit)) => {
                    SourceState::Sorted { plan: sort_node, sort, window, limit, taken: AtomicBool::new(false) }
                }
                None => SourceState::Rows { rows: execute(plan, ctx)?, next: AtomicUsize::new(0) },
            },
            Source::Index(index) => SourceState::Index { source: index, taken: AtomicBool::new(false), heap_fetches: AtomicU64::new(0) },
            Source::SeriesExprs { args, data_type: data_type @ (DataType::Timestamp | DataType::TimestampTz), .. } => {
                let values = args.iter().map(|arg| arg.eval(&[], ctx.eval)).collect::<Result<Vec<_>>>()?;
                match values.as_slice() {
                    [Datum::Timestamp(start) | Datum::TimestampTz(start), Datum::Timestamp(stop) | Datum::TimestampTz(stop), Datum::Interval(step)] => {
                        if step.span() == 0 {
                            return Err(Error::new(weft_common::SqlState::INVALID_PARAMETER_VALUE, "step size cannot equal zero"));
                        }
                        SourceState::TimeSeries { start: *start, stop: *stop, step: *step, data_type: *data_type, taken: AtomicBool::new(false) }
                    }
                    // A NULL argument: no rows (the function is strict).
                    _ => SourceState::Rows { rows: Vec::new(), next: AtomicUsize::new(0) },
                }
            }
            Source::SeriesExprs { args, data_type, .. } => {
                let mut values = Vec::with_capacity(3);
                for arg in args {
                    values.push(match arg.eval(&[], ctx.eval)? {
                        Datum::Int4(v) => Some(v as i64),
                        Datum::Int8(v) => Some(v),
                        _ => None,
                    });
                }
                // A NULL argument: no rows (the function is strict).
                let (start, stop, step) = match (values[0], values[1], values.get(2).copied().unwrap_or(Some(1))) {
                    (Some(start), Some(stop), Some(step)) => (start, stop, step),
                    _ => (0, -1, 1),
                };
                SourceState::Series {
                    next_index: AtomicI64::new(0),
                    count: series_count(start, stop, step)?,
                    start,
                    step,
                    data_type: *data_type,
                }
            }
            Source::WorkTable { rows, .. } => SourceState::Rows { rows: rows.as_ref().clone(), next: AtomicUsize::new(0) },
            Source::Unnest { array, ordinality, .. } => {
                // A NULL array: no rows (the function is strict).
                let rows = match array.eval(&[], ctx.eval)? {
                    Datum::Array(a) => a
                        .items
                        .into_iter()
                        .enumerate()
                        .map(|(i, item)| if *ordinality { vec![item, Datum::Int8(i as i64 + 1)] } else { vec![item] })
                        .collect(),
                    _ => Vec::new(),
                };
                SourceState::Rows { rows, next: AtomicUsize::new(0) }
            }
        })
    }

    /// A heap source's share of visible tuples, a page at a time.
    pub(crate) fn run_raw_pages(&self, ctx: &ExecContext, mut emit: impl FnMut(&[u8], &[Range<usize>]) -> Result<bool>) -> Result<()> {
        self.run_numbered_pages(ctx, |_| true, |_, _| true, |_, page, tuples| Ok(tuples.is_empty() || emit(page, tuples)?))
    }

    /// [`SourceState::run_raw_pages`] with block numbers, every page read (also one
    /// without a visible tuple), and only the blocks `keep` says yes to. `keep` is asked
    /// shortly before a block is read (a few blocks ahead), so it may change its mind as
    /// the scan goes (a bounded sort's bar rises).
    pub(crate) fn run_numbered_pages(
        &self,
        ctx: &ExecContext,
        keep: impl Fn(BlockNumber) -> bool,
        mut screen: impl FnMut(BlockNumber, &[u8]) -> bool,
        mut emit: impl FnMut(BlockNumber, &[u8], &[Range<usize>]) -> Result<bool>,
    ) -> Result<()> {
        let SourceState::Heap { source, cursor } = self else {
            return Err(Error::internal("raw tuples from a source that is not a heap scan"));
        };
        // PostgreSQL's rule: a table larger than a quarter of the pool is scanned through a
        // small ring, so that it does not evict everything else; a smaller one is cached.
        let mut ring = (source.nblocks as usize > ctx.pool.nbuffers() / 4).then(BufferAccessStrategy::bulk_read);
        while let Some(blocks) = cursor.next_chunk() {
            ctx.cancel.check()?;
            let mut start = blocks.start;
            while start < blocks.end {
                let end = blocks.end.min(start.saturating_add(KEEP_ASKED_AHEAD));
                for run in block_runs(start..end, &keep) {
                    if !scan_numbered_pages(ctx.pool, source.rel, run, ring.as_mut(), &source.snapshot, &mut screen, &mut emit)? {
                        return Ok(());
                    }
                }
                start = end;
            }
        }
        Ok(())
    }

    /// Feed this participant's share of rows to `emit` until the source is exhausted or
    /// `emit` returns false.
    pub(crate) fn run(&self, ctx: &ExecContext, mut emit: impl FnMut(&[Datum]) -> Result<bool> + Send) -> Result<()> {
        match self {
            SourceState::Single(taken) => {
                if !taken.swap(true, Ordering::Relaxed) {
                    emit(&[])?;
                }
                Ok(())
            }
            SourceState::Index { source, taken, heap_fetches } => {
                if taken.swap(true, Ordering::Relaxed) {
                    return Ok(());
                }
                crate::index_scan::run(source, ctx, heap_fetches, emit)
            }
            SourceState::Sorted { plan, sort, window, limit, taken } => {
                if taken.swap(true, Ordering::Relaxed) {
                    return Ok(());
                }
                let began = Instant::now();
                let mut rows = 0u64;
                sort_node_run(plan, ctx, || {
                    let produced = crate::sort::for_each_sorted_row(sort, ctx, *window, |row| {
                        rows += 1;
                        emit(&row)
                    })?;
                    Ok(((), produced))
                })?;
                if let Some(limit) = limit {
                    ctx.nodes.lock().push(NodeStats { node: node_id(*limit), rows, elapsed: began.elapsed(), ..NodeStats::default() });
                }
                Ok(())
            }
            SourceState::Heap { source, .. } => {
                let mut row: Vec<Datum> = Vec::with_capacity(source.columns.len());
                self.run_raw_pages(ctx, |page, tuples| {
                    for range in tuples {
                        decode_row(source, &page[range.clone()], &mut row)?;
                        if !emit(&row)? {
                            return Ok(false);
                        }
                    }
                    Ok(true)
                })
            }
            SourceState::Series { next_index, count, start, step, data_type } => loop {
                ctx.cancel.check()?;
                let first = next_index.fetch_add(SERIES_CHUNK, Ordering::Relaxed);
                if first >= *count {
                    return Ok(());
                }
                let last = (first + SERIES_CHUNK).min(*count);
                for index in first..last {
                    let value = start + index * step;
                    let datum = match data_type {
                        DataType::Int4 => Datum::Int4(value as i32),
                        _ => Datum::Int8(value),
                    };
                    if !emit(std::slice::from_ref(&datum))? {
                        return Ok(());
                    }
                }
            },
            SourceState::TimeSeries { start, stop, step, data_type, taken } => {
                if taken.swap(true, Ordering::Relaxed) {
                    return Ok(());
                }
                let ascending = step.span() > 0;
                let mut at = *start;
                let mut made = 0u64;
                while if ascending { at <= *stop } else { at >= *stop } {
                    made += 1;
                    if made % SERIES_CHUNK as u64 == 0 {
                        ctx.cancel.check()?;
                    }
                    let datum = if *data_type == DataType::Timestamp { Datum::Timestamp(at) } else { Datum::TimestampTz(at) };
                    if !emit(std::slice::from_ref(&datum))? {
                        return Ok(());
                    }
                    // As PostgreSQL, the step after the last value must be in range too.
                    at = if *data_type == DataType::Timestamp {
                        weft_common::datetime::timestamp_add_interval(at, step)?
                    } else {
                        // Days and months step in the session zone's local time.
                        let zone = weft_common::timezone::current();
                        weft_common::timezone::timestamptz_add_interval(at, step, &zone)?
                    };
                }
                Ok(())
            }
            SourceState::Rows { rows, next } => loop {
                ctx.cancel.check()?;
                let first = next.fetch_add(ROW_CHUNK, Ordering::Relaxed);
                if first >= rows.len() {
                    return Ok(());
                }
                for row in &rows[first..(first + ROW_CHUNK).min(rows.len())] {
                    if !emit(row)? {
                        return Ok(());
                    }
                }
            },
        }
    }
}

/// A heap source's columns of `tuple`, into `row`, which the scan keeps from tuple to
/// tuple: each column is overwritten in place (`RowLayout::assign`).
#[inline]
fn decode_row(source: &crate::plan::HeapSource, tuple: &[u8], row: &mut Vec<Datum>) -> Result<()> {
    if row.len() != source.columns.len() {
        row.clear();
        row.resize(source.columns.len(), Datum::Null);
    }
    for (slot, &col) in row.iter_mut().zip(&source.columns) {
        source.layout.assign(tuple, col, slot)?;
    }
    Ok(())
}

/// How many values `generate_series(start, stop, step)` yields.
pub fn series_count(start: i64, stop: i64, step: i64) -> Result<i64> {
    if step == 0 {
        return Err(Error::new(weft_common::SqlState::INVALID_PARAMETER_VALUE, "step size cannot equal zero"));
    }
    let span = stop as i128 - start as i128;
    if (span > 0 && step < 0) || (span < 0 && step > 0) {
        return Ok(0);
    }
    let count = span / step as i128 + 1;
    i64::try_from(count).map_err(|_| Error::out_of_range("bigint"))
}

pub(crate) fn run_pipeline<S: Sink>(pipeline: &Pipeline, ctx: &ExecContext, sink: &S) -> Result<()> {
    run_pipeline_with(pipeline, pipeline.workers, ctx, sink)
}

/// Push `row` through `steps` into `out`; a join step (whose participant state is
/// `joins[i]`, index for index with `steps`) emits each of its rows through the steps
/// after it, counted in `emitted[i]`. A projection writes into `projected[i]`, reused
/// from row to row.
fn process_joined(
    row: &[Datum],
    steps: &[Step],
    joins: &mut [Option<JoinLocal>],
    emitted: &mut [u64],
    projected: &mut [Vec<Datum>],
    ctx: &ExecContext,
    out: &mut dyn FnMut(&[Datum]) -> Result<bool>,
) -> Result<bool> {
    // The step whose projection is the current row (`None`: the input row).
    let mut current: Option<usize> = None;
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Filter(predicate) => {
                let input = current.map_or(row, |c| &projected[c][..]);
                if !matches!(predicate.eval(input, ctx.eval)?, Datum::Bool(true)) {
                    return Ok(true);
                }
            }
            Step::Project(exprs) => {
                let (before, after) = projected.split_at_mut(i);
                let input = current.map_or(row, |c| &before[c][..]);
                let buffer = &mut after[0];
                buffer.clear();
                for e in exprs {
                    buffer.push(e.eval(input, ctx.eval)?);
                }
                current = Some(i);
            }
            Step::HashJoin(join) => {
                let (mine, rest_joins) = joins[i..].split_first_mut().expect("one join state per step");
                let mine = mine.as_mut().ok_or_else(|| Error::internal("a join step without its table"))?;
                let (count, rest_counts) = emitted[i..].split_first_mut().expect("one count per step");
                let (before, rest_projected) = projected.split_at_mut(i + 1);
                let input = current.map_or(row, |c| &before[c][..]);
                let rest = &steps[i + 1..];
                return mine.probe(join, input, ctx, &mut |joined| {
                    *count += 1;
                    process_joined(joined, rest, rest_joins, rest_counts, rest_projected, ctx, out)
                });
            }
        }
    }
    out(current.map_or(row, |c| &projected[c][..]))
}

/// A heap scan whose first step is a join on one plain column: the source, the join, and
/// the key's column in the tuple.
fn probe_key<'a, 's>(state: &'a SourceState, steps: &'s [Step]) -> Option<(&'a crate::plan::HeapSource, &'s crate::plan::HashJoin, usize)> {
    let (SourceState::Heap { source, .. }, Some(Step::HashJoin(join))) = (state, steps.first()) else {
        return None;
    };
    Some((source, join, source.columns[join.outer_key_column()?]))
}

/// A heap scan feeding a join that can deal with some outer tuples by their key alone,
/// before they are decoded: see [`RawProbe`].
fn raw_probe_scan<'a, 's>(state: &'a SourceState, steps: &'s [Step], locals: &[Option<JoinLocal>]) -> Option<RawProbe<'a, 's>> {
    let (heap, join, key_column) = probe_key(state, steps)?;
    let local = locals.first()?.as_ref()?;
    let prefilter = local.prefilter(join);
    // The scan's row is the key and nothing else: read from the tuple, not decoded.
    let key_only = heap.columns.len() == 1 && join.outer_key_column() == Some(0);
    (prefilter.is_some() || key_only).then_some(RawProbe { heap, join, key_column, prefilter, key_only })
}

/// How a scan's first join takes outer tuples by their key: `prefilter` turns away the
/// tuples whose key surely matches nothing (`JoinLocal::prefilter`: one batch, and blocks
/// outside the inner keys' range are not read at all). With `key_only` the scan's row is
/// the key alone, read from the tuple without decoding it: a tuple whose key belongs to a
/// later batch goes straight to its batch file (`JoinLocal::spill_key`), any other is
/// probed with the key as its row (no prefilter: the probe costs no more than it).
struct RawProbe<'a, 's> {
    heap: &'a crate::plan::HeapSource,
    join: &'s crate::plan::HashJoin,
    key_column: usize,
    prefilter: Option<std::sync::Arc<crate::hash_join::table::JoinTable>>,
    key_only: bool,
}

/// The zone map a pipeline's scan could prune by: a probe key of an integer type.
fn zone_map_key<'a>(state: &'a SourceState, steps: &[Step]) -> Option<(&'a crate::plan::HeapSource, usize)> {
    let (source, _, column) = probe_key(state, steps)?;
    matches!(source.layout.types().get(column), Some(DataType::Int4 | DataType::Int8)).then_some((source, column))
}

/// Probe the outer rows still waiting at each join step from `first` on, in step order (a
/// flush feeds the later steps, which are flushed after it). False when the sink stopped.
fn flush_joins(
    first: usize,
    steps: &[Step],
    joins: &mut [Option<JoinLocal>],
    emitted: &mut [u64],
    projected: &mut [Vec<Datum>],
    ctx: &ExecContext,
    out: &mut dyn FnMut(&[Datum]) -> Result<bool>,
) -> Result<bool> {
    for i in first..steps.len() {
        let Step::HashJoin(join) = &steps[i] else { continue };
        let (mine, rest_joins) = joins[i..].split_first_mut().expect("one join state per step");
        let Some(mine) = mine.as_mut() else { continue };
        if !mine.has_pending() {
            continue;
        }
        let (count, rest_counts) = emitted[i..].split_first_mut().expect("one count per step");
        let rest = &steps[i + 1..];
        let rest_projected = &mut projected[i + 1..];
        let going = mine.flush(join, ctx, &mut |joined| {
            *count += 1;
            process_joined(joined, rest, rest_joins, rest_counts, rest_projected, ctx, out)
        })?;
        if !going {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Does a filter of `steps` reject every row: a pseudoconstant conjunct (`WHERE false`,
/// `WHERE $0` of an init plan) that is not true, evaluated once (PostgreSQL's One-Time
/// Filter), with no join after it that emits unmatched inner rows (those would not pass
/// through it)?
fn never_passes(steps: &[Step], eval: &EvalContext) -> Result<bool> {
    let mut last_false = None;
    for (i, step) in steps.iter().enumerate() {
        let Step::Filter(f) = step else { continue };
        for c in f.conjuncts().into_iter().filter(|c| c.is_pseudoconstant()) {
            if !matches!(c.eval(&[], eval)?, Datum::Bool(true)) {
                last_false = Some(i);
                break;
            }
        }
    }
    let Some(last_false) = last_false else { return Ok(false) };
    Ok(!steps[last_false..].iter().any(|s| matches!(s, Step::HashJoin(join) if join.join_type.emits_unmatched_inner())))
}

fn run_pipeline_with<S: Sink>(pipeline: &Pipeline, workers: usize, ctx: &ExecContext, sink: &S) -> Result<()> {
    let participants = workers + 1;
    // A filter false whatever the row lets nothing through: neither the source nor any
    // join's build side is read (PostgreSQL's gating Result, `One-Time Filter: false`).
    let gated_off = never_passes(&pipeline.steps, ctx.eval)?;
    let joins: Vec<Option<JoinRun>> = pipeline
        .steps
        .iter()
        .map(|step| match step {
            Step::HashJoin(join) if !gated_off => JoinRun::new(join, ctx, participants).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<_>>()?;
    let has_joins = joins.iter().any(Option::is_some);
    // Rows each join step emitted, per participant.
    let join_rows: Mutex<Vec<Vec<u64>>> = Mutex::new(vec![Vec::new(); joins.len()]);
    let started = Instant::now();
    let intervals: Mutex<Vec<(Instant, Instant)>> = Mutex::new(Vec::new());
    let participant_stats: Mutex<Vec<ParticipantStats>> = Mutex::new(Vec::new());
    let steps = &pipeline.steps;
    let nothing = Source::Values(Vec::new());
    let source = if gated_off { &nothing } else { &pipeline.source };
    let state = SourceState::new(source, ctx, participants)?;
    // A heap scan straight into a sink that decodes tuples itself skips building rows.
    let raw = match (&state, source) {
        (SourceState::Heap { .. }, Source::Heap(heap)) => {
            (steps.is_empty() || is_identity(steps, heap.columns.len())) && sink.accepts_raw(&heap.layout, &heap.columns)
        }
        _ => false,
    };
    // A raw scan into a sink that can skip blocks by a zone map (an integer or text column).
    let raw_zone_column = match (source, raw) {
        (Source::Heap(heap), true) => sink
            .zone_prunable_column()
            .filter(|&c| has_zone_value(&heap.layout, c))
            .map(|c| (heap, c)),
        _ => None,
    };
    // A probe-side scan or a raw scan that could skip blocks by a zone map and has none
    // builds one.
    let zone_key = zone_map_key(&state, steps).or(raw_zone_column);
    let zone_build = zone_key.and_then(|(heap, column)| {
        let maps = ctx.pool.zone_maps();
        maps.get(heap.rel, column).is_none().then(|| maps.begin_build(heap.rel, column, heap.nblocks)).flatten()
    });
    // A bounded sort over a scan whose first key is a column of the table: rows that
    // cannot beat the worst row it keeps are skipped before they are decoded.
    let top_n_key = if raw || has_joins { None } else { top_n_key_column(&state, steps, sink) };
    let run = ctx.workers.run(workers, ctx.leader_participates, ctx.cancel, |participant| {
        let begin = Instant::now();
        let mut local = sink.local()?;
        // Counted in locals, summed once at the end (EXPLAIN ANALYZE's rows).
        let (mut rows_in, mut rows_out) = (0u64, 0u64);
        let mut first_row = None;
        if raw {
            // A sink that can turn whole blocks away by their zone map (a bounded sort
            // whose kept rows beat everything in them) skips them; a scan without the map
            // builds it.
            let zone = raw_zone_column.and_then(|(heap, column)| ctx.pool.zone_maps().get(heap.rel, column));
            let building = zone_build.as_ref().filter(|_| raw_zone_column.is_some() && zone.is_none());
            let bar = Cell::new(None::<u64>);
            let keep = |block| match (bar.get(), zone.as_deref().and_then(|map| map.range(block))) {
                (Some(bar), Some((min, max))) => sink.may_beat(bar, min, max),
                _ => true,
            };
            let mut built: Vec<(BlockNumber, BlockZone)> = Vec::new();
            // A page read while building the map is measured for it first; that range
            // rules the page out as the finished map would, before its tuples' visibility.
            let screen = |block, page: &[u8]| match (building, raw_zone_column) {
                (Some(_), Some((heap, column))) => {
                    let zone = page_zone(page, &heap.layout, column);
                    let (min, max) = zone.range;
                    built.push((block, zone));
                    bar.get().map_or(true, |bar| sink.may_beat(bar, min, max))
                }
                _ => true,
            };
            state.run_numbered_pages(ctx, keep, screen, |_, page, tuples| {
                if tuples.is_empty() {
                    return Ok(true);
                }
                if rows_in == 0 {
                    first_row = Some(Instant::now());
                }
                rows_in += tuples.len() as u64;
                let going = sink.push_raw_page(&mut local, page, tuples)?;
                if raw_zone_column.is_some() {
                    bar.set(sink.prune_bar(&local));
                }
                Ok(going)
            })?;
            if let Some(build) = building {
                build.add_all(&built);
            }
            rows_out = rows_in;
        } else if has_joins {
            // Every join's table first (built alone, or together), in step order.
            let mut locals: Vec<Option<JoinLocal>> = Vec::with_capacity(joins.len());
            for join in &joins {
                locals.push(match join {
                    Some(run) => Some(run.build(ctx, &participant)?),
                    None => None,
                });
            }
            // A join whose rows go straight into a sink that only counts them (`count(*)`
            // over the join; at most projections of columns between, which cannot fail)
            // counts what its probe of slots finds instead of emitting it.
            let counted_join = steps.iter().rposition(|step| matches!(step, Step::HashJoin(_))).filter(|&last| {
                sink.counts_rows_only()
                    && steps[last + 1..].iter().all(|step| {
                        matches!(step, Step::Project(exprs) if exprs.iter().all(|e| matches!(e, crate::expr::Expr::Column { .. })))
                    })
            });
            if let Some(local) = counted_join.and_then(|i| locals[i].as_mut()) {
                local.count_rows_only();
            }
            let mut counted = 0u64;
            let mut emitted = vec![0u64; steps.len()];
            let mut projected: Vec<Vec<Datum>> = vec![Vec::new(); steps.len()];
            let mut push = |out: &[Datum]| {
                if rows_out == 0 {
                    first_row = Some(Instant::now());
                }
                rows_out += 1;
                sink.push(&mut local, out)
            };
            // A join that only emits matched outer rows, over an empty inner side, lets no
            // row through: the outer side is not read at all (PostgreSQL skips it too, with
            // whatever per-row work its filters would have done).
            let nothing_passes = joins.iter().zip(&locals).any(|(run, local)| {
                run.as_ref().is_some_and(|run| !run.join().join_type.emits_unmatched_outer())
                    && local.as_ref().is_some_and(|local| local.inner_is_empty())
            });
            match raw_probe_scan(&state, steps, &locals).filter(|_| !nothing_passes) {
                _ if nothing_passes => {}
                Some(RawProbe { heap, join, key_column, prefilter, key_only }) => {
                    // Outer tuples are looked at by their key first: those the first join
                    // can deal with so are never decoded. Blocks whose keys all lie outside
                    // the inner keys' range are not read at all (a zone map), and a scan
                    // without a zone map builds one.
                    let zone = ctx.pool.zone_maps().get(heap.rel, key_column);
                    let prune = zone
                        .as_deref()
                        .and_then(|map| prefilter.as_ref()?.int_key_bounds().map(|(lo, hi)| (map, lo, hi)));
                    let keep = |block| prune.is_none_or(|(map, lo, hi)| map.may_contain(block, lo, hi));
                    let building = zone_build.as_ref().filter(|_| zone.is_none());
                    let mut built: Vec<(BlockNumber, BlockZone)> = Vec::new();
                    let mut row: Vec<Datum> = Vec::with_capacity(heap.columns.len());
                    state.run_numbered_pages(ctx, keep, |_, _| true, |block, page, tuples| {
                        if building.is_some() {
                            built.push((block, page_zone(page, &heap.layout, key_column)));
                        }
                        rows_in += tuples.len() as u64;
                        for range in tuples {
                            let tuple = &page[range.clone()];
                            if let Some(key) = heap.layout.get_fixed(tuple, key_column) {
                                if key_only {
                                    let first = locals[0].as_mut().ok_or_else(|| Error::internal("a join step without its table"))?;
                                    if first.spill_key(join, &key, ctx)? {
                                        continue;
                                    }
                                    if !process_joined(std::slice::from_ref(&key), steps, &mut locals, &mut emitted, &mut projected, ctx, &mut push)? {
                                        return Ok(false);
                                    }
                                    continue;
                                }
                                if prefilter.as_ref().is_some_and(|table| !table.may_match(&key)) {
                                    continue;
                                }
                            }
                            decode_row(heap, tuple, &mut row)?;
                            if !process_joined(&row, steps, &mut locals, &mut emitted, &mut projected, ctx, &mut push)? {
                                return Ok(false);
                            }
                        }
                        Ok(true)
                    })?;
                    if let Some(build) = building {
                        build.add_all(&built);
                    }
                }
                None => state.run(ctx, |row| {
                    rows_in += 1;
                    process_joined(row, steps, &mut locals, &mut emitted, &mut projected, ctx, &mut push)
                })?,
            }
            // Outer rows still waiting at a join are probed before its probe ends.
            flush_joins(0, steps, &mut locals, &mut emitted, &mut projected, ctx, &mut push)?;
            // The end of each join, in step order: its later batches and the unmatched
            // rows of right and full joins go on through the later steps (later joins
            // are still probing).
            for (i, join) in joins.iter().enumerate() {
                let Some(run) = join else { continue };
                let (mine, rest_joins) = locals[i..].split_first_mut().expect("one join state per step");
                let mine = mine.as_mut().ok_or_else(|| Error::internal("a join step without its table"))?;
                let (count, rest_emitted) = emitted[i..].split_first_mut().expect("one count per step");
                let rest = &steps[i + 1..];
                let rest_projected = &mut projected[i + 1..];
                run.finish(mine, ctx, &mut |row| {
                    *count += 1;
                    process_joined(row, rest, rest_joins, rest_emitted, rest_projected, ctx, &mut push)
                })?;
                flush_joins(i + 1, steps, &mut locals, &mut emitted, &mut projected, ctx, &mut push)?;
                if counted_join == Some(i) {
                    let n = locals[i].as_mut().map_or(0, JoinLocal::take_counted);
                    emitted[i] += n;
                    counted += n;
                }
                // This join's tables and files are no longer needed by this participant.
                locals[i] = None;
            }
            if counted > 0 {
                first_row.get_or_insert_with(Instant::now);
                rows_out += counted;
                sink.push_count(&mut local, counted)?;
            }
            let mut all = join_rows.lock();
            for (i, count) in emitted.iter().enumerate() {
                if joins[i].is_some() {
                    all[i].push(*count);
                }
            }
        } else if let Some((heap, key_column)) = top_n_key {
            let text_index = text_index_of(&heap.layout, key_column);
            let mut buffers = StepBuffers::new();
            let mut row: Vec<Datum> = Vec::with_capacity(heap.columns.len());
            state.run_numbered_pages(ctx, |_| true, |_, _| true, |_, page, tuples| {
                rows_in += tuples.len() as u64;
                // The bar as of this page (it only tightens as rows come).
                let bar = sink.prune_bar(&local);
                for range in tuples {
                    let tuple = &page[range.clone()];
                    if let Some(bar) = bar {
                        if let Some(value) = row_zone_value(tuple, &heap.layout, key_column, text_index) {
                            if !sink.row_may_beat(bar, value) {
                                continue;
                            }
                        }
                    }
                    decode_row(heap, tuple, &mut row)?;
                    let going = buffers.process(&row, steps, ctx.eval, |out| {
                        if rows_out == 0 {
                            first_row = Some(Instant::now());
                        }
                        rows_out += 1;
                        sink.push(&mut local, out)
                    })?;
                    if !going {
                        return Ok(false);
                    }
                }
                Ok(true)
            })?;
        } else {
            let mut buffers = StepBuffers::new();
            state.run(ctx, |row| {
                rows_in += 1;
                buffers.process(row, steps, ctx.eval, |out| {
                    if rows_out == 0 {
                        first_row = Some(Instant::now());
                    }
                    rows_out += 1;
                    sink.push(&mut local, out)
                })
            })?;
        }
        sink.finish(local)?;
        let end = Instant::now();
        intervals.lock().push((begin, end));
        participant_stats.lock().push(ParticipantStats {
            rows_in,
            rows_out,
            started: begin - started,
            first_row: first_row.map(|f| f - started),
            finished: end - started,
        });
        Ok(())
    })?;
    if let Some(build) = zone_build {
        // Published only if every block was read and nobody wrote meanwhile.
        ctx.pool.zone_maps().publish(build);
    }
    let join_rows = join_rows.into_inner();
    for (run, rows) in joins.iter().zip(join_rows) {
        if let Some(run) = run {
            run.report(ctx, rows);
        }
    }
    let wall = started.elapsed();
    let intervals = intervals.into_inner();
    let last_start = intervals.iter().map(|i| i.0).max();
    let first_end = intervals.iter().map(|i| i.1).min();
    let all_busy = match (last_start, first_end) {
        (Some(s), Some(e)) if e > s => e - s,
        _ => Duration::ZERO,
    };
    ctx.stats.lock().push(PipelineStats {
        node: node_id(pipeline),
        workers_planned: run.workers_planned,
        workers_launched: run.workers_launched,
        wall,
        all_busy,
        participants: participant_stats.into_inner(),
        heap_fetches: match &state {
            SourceState::Index { heap_fetches, .. } => heap_fetches.load(Ordering::Relaxed),
            _ => 0,
        },
    });
    Ok(())
}

/// The first key of a bounded sort that `sink` is (its `row_prunable_column`), followed
/// back through the pipeline's filters and projections to a column of a scanned table
/// (int4, int8 or text): the source and that column.
fn top_n_key_column<'a, S: Sink>(state: &'a SourceState, steps: &[Step], sink: &S) -> Option<(&'a crate::plan::HeapSource, usize)> {
    let SourceState::Heap { source, .. } = state else { return None };
    let mut column = sink.row_prunable_column()?;
    for step in steps.iter().rev() {
        match step {
            Step::Filter(_) => {}
            Step::Project(exprs) => match exprs.get(column)? {
                crate::expr::Expr::Column { index, .. } => column = *index,
                _ => return None,
            },
            Step::HashJoin(_) => return None,
        }
    }
    let table_column = *source.columns.get(column)?;
    has_zone_value(&source.layout, table_column)
        .then_some((source, table_column))
}

/// Is `steps` one projection that passes a row of `width` columns through unchanged
/// (`SELECT *`)?
pub(crate) fn is_identity(steps: &[Step], width: usize) -> bool {
    match steps {
        [Step::Project(exprs)] => {
            exprs.len() == width && exprs.iter().enumerate().all(|(i, e)| matches!(e, crate::expr::Expr::Column { index, .. } if *index == i))
        }
        _ => false,
    }
}

/// Collects result rows; with a limit, participants stop once enough rows exist.
struct CollectSink {
    wanted: Option<u64>,
    collected: AtomicU64,
    parts: Mutex<Vec<Vec<Row>>>,
}

impl CollectSink {
    fn new(wanted: Option<u64>) -> CollectSink {
        CollectSink { wanted, collected: AtomicU64::new(0), parts: Mutex::new(Vec::new()) }
    }

    fn into_rows(self) -> Vec<Row> {
        let parts = self.parts.into_inner();
        if parts.len() == 1 {
            return parts.into_iter().next().unwrap_or_default();
        }
        parts.into_iter().flatten().collect()
    }
}

impl Sink for CollectSink {
    type Local = Vec<Row>;

    fn local(&self) -> Result<Vec<Row>> {
        Ok(Vec::new())
    }

    fn push(&self, local: &mut Vec<Row>, row: &[Datum]) -> Result<bool> {
        local.push(row.to_vec());
        match self.wanted {
            None => Ok(true),
            Some(wanted) => Ok(self.collected.fetch_add(1, Ordering::Relaxed) + 1 < wanted),
        }
    }

    fn finish(&self, local: Vec<Row>) -> Result<()> {
        self.parts.lock().push(local);
        Ok(())
    }
}

struct InsertSink<'a> {
    pool: &'a BufferPool,
    target: &'a InsertTarget,
    inserted: AtomicU64,
    /// The first participant fills the relation's last page; the others start new pages.
    last_page_taken: AtomicBool,
}

impl<'a> Sink for InsertSink<'a> {
    type Local = HeapInserter<'a>;

    fn local(&self) -> Result<HeapInserter<'a>> {
        if !self.target.fill_last_page || self.last_page_taken.swap(true, Ordering::Relaxed) {
            Ok(HeapInserter::new(self.pool, self.target.rel, self.target.xid))
        } else {
            HeapInserter::appending(self.pool, self.target.rel, self.target.xid)
        }
    }

    fn push(&self, local: &mut HeapInserter<'a>, row: &[Datum]) -> Result<bool> {
        self.target.check_not_null(row)?;
        self.target.layout.encode(row, local.scratch())?;
        local.insert_scratch()?;
        Ok(true)
    }

    fn finish(&self, local: HeapInserter<'a>) -> Result<()> {
        let rows = local.finish()?;
        self.inserted.fetch_add(rows, Ordering::Relaxed);
        Ok(())
    }
}

/// Insert rows produced by an iterator (COPY FROM), serially, with the same checks as
/// INSERT. Stops at the first error, which the caller turns into an abort.
pub fn insert_rows(ctx: &ExecContext, target: &InsertTarget, rows: impl Iterator<Item = Result<Row>>) -> Result<u64> {
    let sink = InsertSink { pool: ctx.pool, target, inserted: AtomicU64::new(0), last_page_taken: AtomicBool::new(false) };
    let mut local = sink.local()?;
    for (i, row) in rows.enumerate() {
        if i % 1024 == 0 {
            ctx.cancel.check()?;
        }
        sink.push(&mut local, &row?)?;
    }
    sink.finish(local)?;
    Ok(sink.inserted.load(Ordering::Relaxed))
}
