//! Running a join step: building its table (privately, or together through a phased
//! barrier), and the end of its probe (the unmatched inner rows of right and full joins).
//!
//! Parallel-aware joins follow PostgreSQL's parallel hash join phases, each done by *one*
//! participant (the one the barrier elects) or by *all* attached:
//!
//! | phase | who | what |
//! |---|---|---|
//! | 0 elect | all arrive | one participant is elected to allocate |
//! | 1 allocate | one | the bucket array, sized from the planner's estimate |
//! | 2 hash inner | all | inner morsels into each participant's arena, inserted lock-free |
//! | 3 assemble | one | the arenas become one table |
//! | 4 grow buckets | all | when far more tuples came than estimated: chains rebuilt in a larger array, ranges claimed from a counter |
//! | 5 probe | all | outer rows (the pipeline's morsels) probe the table |
//! | 6 scan unmatched | all | right/full joins: unmatched inner tuples, ranges claimed from a counter |
//! | 7 done | | |
//!
//! A participant attaches whenever it arrives (workers start late, or never) and joins the
//! phase the barrier is in: past the build it only probes. Nobody waits for a participant
//! that could itself be waiting for them: every participant pushes into its own sink, so no
//! wait depends on somebody consuming output (the seed's leader/tuple-queue deadlock cannot
//! arise), and no lock is held across a barrier wait.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use weft_common::parallel::{Barrier, ParticipantContext};
use weft_common::{Datum, Error, Result};

use super::table::{eval_keys, Arena, Buckets, JoinTable, MAX_ARENAS};
use super::{HashJoinStats, PhaseWait};
use crate::execute::{node_id, ExecContext, ParticipantStats, PipelineStats, SourceState, StepBuffers};
use crate::plan::{HashJoin, HashJoinMode};

pub const ELECT: usize = 0;
pub const ALLOCATE: usize = 1;
pub const HASH_INNER: usize = 2;
pub const ASSEMBLE: usize = 3;
pub const GROW_BUCKETS: usize = 4;
pub const PROBE: usize = 5;
pub const UNMATCHED: usize = 6;
pub const DONE: usize = 7;

/// Phase names, for EXPLAIN ANALYZE's barrier waits.
pub const PHASE_NAMES: [&str; 8] = ["elect", "allocate", "hash inner", "assemble", "grow buckets", "probe", "scan unmatched", "done"];

/// Global tuples a participant claims at once when inserting or scanning unmatched.
const CLAIM: usize = 4096;

/// A join step's state for one run of its pipeline.
pub(crate) enum JoinRun<'p> {
    /// Serial or parallel-oblivious: every participant builds its own table.
    Private { join: &'p HashJoin, stats: Mutex<Vec<ParticipantStats>>, figures: Mutex<Option<TableFigures>> },
    /// Parallel-aware: one table built by all.
    Shared(Box<SharedJoin<'p>>),
}

pub(crate) struct SharedJoin<'p> {
    join: &'p HashJoin,
    barrier: Barrier,
    source: SourceState<'p>,
    buckets: Mutex<Option<Arc<Buckets>>>,
    next_arena: AtomicUsize,
    deposited: Mutex<Vec<(usize, Arena)>>,
    table: OnceLock<JoinTable>,
    insert_cursor: AtomicUsize,
    unmatched_cursor: AtomicUsize,
    /// Debug attach phases: participants in arrival order, and those waiting to attach.
    arrivals: AtomicUsize,
    waiting: AtomicUsize,
    finished: AtomicUsize,
    inner_stats: Mutex<Vec<ParticipantStats>>,
}

/// A built table's figures (EXPLAIN ANALYZE's Hash node).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TableFigures {
    buckets: usize,
    original_buckets: usize,
    bytes: usize,
    tuples: usize,
}

impl TableFigures {
    fn of(table: &JoinTable) -> TableFigures {
        TableFigures { buckets: table.buckets(), original_buckets: table.original_buckets, bytes: table.bytes(), tuples: table.tuples() }
    }
}

/// A participant's table: its own, or the shared one.
pub(crate) enum TableRef<'a> {
    Owned(JoinTable),
    Shared(&'a JoinTable),
}

impl TableRef<'_> {
    pub fn get(&self) -> &JoinTable {
        match self {
            TableRef::Owned(t) => t,
            TableRef::Shared(t) => t,
        }
    }
}

/// What a participant does after its probe, per join.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AfterProbe {
    /// Arrive at the end of the probe (waiting if unmatched rows follow).
    Arrive,
    /// Attached during the unmatched scan: help it.
    Unmatched,
    /// Attached when the join was over (or built privately with nothing to add).
    Nothing,
}

impl<'p> JoinRun<'p> {
    pub fn new(join: &'p HashJoin, ctx: &ExecContext, participants: usize) -> Result<JoinRun<'p>> {
        Ok(match join.mode {
            HashJoinMode::Serial | HashJoinMode::ParallelOblivious => {
                if join.join_type.emits_unmatched_inner() && join.mode == HashJoinMode::ParallelOblivious {
                    return Err(Error::internal("a parallel-oblivious right or full join"));
                }
                JoinRun::Private { join, stats: Mutex::new(Vec::new()), figures: Mutex::new(None) }
            }
            HashJoinMode::ParallelAware => JoinRun::Shared(Box::new(SharedJoin {
                join,
                barrier: Barrier::new(0),
                source: SourceState::new(&join.inner.source, ctx, participants)?,
                buckets: Mutex::new(None),
                next_arena: AtomicUsize::new(0),
                deposited: Mutex::new(Vec::new()),
                table: OnceLock::new(),
                insert_cursor: AtomicUsize::new(0),
                unmatched_cursor: AtomicUsize::new(0),
                arrivals: AtomicUsize::new(0),
                waiting: AtomicUsize::new(0),
                finished: AtomicUsize::new(0),
                inner_stats: Mutex::new(Vec::new()),
            })),
        })
    }

    /// Build (or join in building) the table; returns it and what to do after the probe.
    pub fn build<'s>(&'s self, ctx: &ExecContext, participant: &ParticipantContext) -> Result<(TableRef<'s>, AfterProbe)> {
        match self {
            JoinRun::Private { join, stats, figures } => {
                let began = Instant::now();
                // Each participant reads the whole build side through its own source.
                let source = SourceState::new(&join.inner.source, ctx, 1)?;
                let mut arena = Arena::new(join);
                let (rows_in, rows_out) = fill_arena(join, &source, ctx, &mut arena)?;
                let buckets = Arc::new(Buckets::for_tuples(arena.len()));
                JoinTable::insert_arena(&buckets, 0, &arena, 0);
                let n = buckets.len();
                let table = JoinTable::assemble(vec![arena], buckets, n);
                figures.lock().get_or_insert_with(|| TableFigures::of(&table));
                let finished = began.elapsed();
                stats.lock().push(ParticipantStats { rows_in, rows_out, started: Duration::ZERO, first_row: None, finished });
                let after = if join.join_type.emits_unmatched_inner() { AfterProbe::Arrive } else { AfterProbe::Nothing };
                Ok((TableRef::Owned(table), after))
            }
            JoinRun::Shared(shared) => shared.build(ctx, participant),
        }
    }

    /// After this participant's probe: the unmatched inner rows it must emit (right/full
    /// joins), given to `emit` in ranges, then leave the join.
    pub fn finish_probe(
        &self,
        table: &JoinTable,
        after: AfterProbe,
        ctx: &ExecContext,
        emit: &mut dyn FnMut(&JoinTable, std::ops::Range<usize>) -> Result<bool>,
    ) -> Result<()> {
        match self {
            JoinRun::Private { join, .. } => {
                if join.join_type.emits_unmatched_inner() {
                    emit(table, 0..table.tuples())?;
                }
                Ok(())
            }
            JoinRun::Shared(shared) => shared.finish_probe(table, after, ctx, emit),
        }
    }

    /// Record what the join did (once, after every participant finished).
    pub fn report(&self, ctx: &ExecContext, rows_out: Vec<u64>) {
        let (join, inner, figures) = match self {
            JoinRun::Private { join, stats, figures } => (*join, std::mem::take(&mut *stats.lock()), *figures.lock()),
            JoinRun::Shared(shared) => {
                (shared.join, std::mem::take(&mut *shared.inner_stats.lock()), shared.table.get().map(TableFigures::of))
            }
        };
        let phase_waits = match self {
            JoinRun::Shared(shared) => shared
                .barrier
                .wait_stats()
                .into_iter()
                .filter(|w| w.phase < PHASE_NAMES.len())
                .map(|w| PhaseWait { phase: PHASE_NAMES[w.phase].to_string(), waits: w.waits })
                .collect(),
            JoinRun::Private { .. } => Vec::new(),
        };
        let figures = figures.unwrap_or_default();
        ctx.joins.lock().push(HashJoinStats {
            node: node_id(join),
            buckets: figures.buckets,
            original_buckets: figures.original_buckets,
            batches: 1,
            original_batches: 1,
            peak_memory: figures.bytes,
            inner_rows: figures.tuples as u64,
            rows_out,
            phase_waits,
        });
        let wall = inner.iter().map(|p| p.finished).max().unwrap_or_default();
        ctx.stats.lock().push(PipelineStats {
            node: node_id(&join.inner),
            workers_planned: 0,
            workers_launched: 0,
            wall,
            all_busy: Duration::ZERO,
            participants: inner,
            heap_fetches: 0,
        });
    }
}

/// Read `source` (the build side's, whole or this participant's morsels) through the build
/// pipeline's steps into `arena`. Returns rows read and rows kept.
fn fill_arena(join: &HashJoin, source: &SourceState, ctx: &ExecContext, arena: &mut Arena) -> Result<(u64, u64)> {
    let mut buffers = StepBuffers::new();
    let mut keys: Vec<Datum> = Vec::with_capacity(join.inner_keys.len());
    let keep_unkeyed = join.join_type.emits_unmatched_inner() || join.null_aware;
    let (mut rows_in, mut rows_out) = (0u64, 0u64);
    source.run(ctx, |row| {
        rows_in += 1;
        buffers.process(row, &join.inner.steps, ctx.eval, |inner| {
            rows_out += 1;
            let keyed = eval_keys(&join.inner_keys, inner, ctx.eval, &mut keys)?;
            arena.push(keyed.then_some(&keys[..]), inner, keep_unkeyed);
            Ok(true)
        })
    })?;
    Ok((rows_in, rows_out))
}

impl<'p> SharedJoin<'p> {
    /// Attach (at the debug phase asked for, if any) and take part in the build phases.
    fn build<'s>(&'s self, ctx: &ExecContext, participant: &ParticipantContext) -> Result<(TableRef<'s>, AfterProbe)> {
        let mut phase = self.attach(ctx, participant)?;
        let began = Instant::now();
        loop {
            match phase {
                ELECT => {
                    if self.barrier.arrive_and_wait(ctx.cancel)? {
                        // Phase 1 (one): the elected participant allocates the buckets.
                        let estimate = self.join.estimated_inner_rows.max(0.0) as usize;
                        *self.buckets.lock() = Some(Arc::new(Buckets::for_tuples(estimate)));
                    }
                    self.barrier.arrive_and_wait(ctx.cancel)?;
                    phase = HASH_INNER;
                }
                ALLOCATE => {
                    self.barrier.arrive_and_wait(ctx.cancel)?;
                    phase = HASH_INNER;
                }
                HASH_INNER => {
                    // All: this participant's morsels into its own arena, then its tuples
                    // pushed on their chains (lock-free, while the others push theirs).
                    let buckets = self.buckets.lock().clone().ok_or_else(|| Error::internal("hash join buckets not allocated"))?;
                    let number = self.next_arena.fetch_add(1, Ordering::Relaxed);
                    if number >= MAX_ARENAS {
                        return Err(Error::not_supported(format!("a parallel hash join with more than {MAX_ARENAS} participants")));
                    }
                    let mut arena = Arena::new(self.join);
                    let (rows_in, rows_out) = fill_arena(self.join, &self.source, ctx, &mut arena)?;
                    JoinTable::insert_arena(&buckets, number, &arena, 0);
                    self.deposited.lock().push((number, arena));
                    self.inner_stats.lock().push(ParticipantStats {
                        rows_in,
                        rows_out,
                        started: Duration::ZERO,
                        first_row: None,
                        finished: began.elapsed(),
                    });
                    if self.barrier.arrive_and_wait(ctx.cancel)? {
                        // Phase 3 (one): the arenas become the table.
                        self.assemble(buckets);
                    }
                    self.barrier.arrive_and_wait(ctx.cancel)?;
                    phase = GROW_BUCKETS;
                }
                ASSEMBLE => {
                    self.barrier.arrive_and_wait(ctx.cancel)?;
                    phase = GROW_BUCKETS;
                }
                GROW_BUCKETS => {
                    let table = self.table()?;
                    if table.original_buckets != table.buckets() {
                        // All: rebuild chains in the larger array, ranges claimed from a counter.
                        loop {
                            ctx.cancel.check()?;
                            let first = self.insert_cursor.fetch_add(CLAIM, Ordering::Relaxed);
                            if first >= table.tuples() {
                                break;
                            }
                            table.insert_range(first..(first + CLAIM).min(table.tuples()));
                        }
                    }
                    self.barrier.arrive_and_wait(ctx.cancel)?;
                    phase = PROBE;
                }
                PROBE => return Ok((TableRef::Shared(self.table()?), AfterProbe::Arrive)),
                UNMATCHED if self.join.join_type.emits_unmatched_inner() => {
                    return Ok((TableRef::Shared(self.table()?), AfterProbe::Unmatched))
                }
                UNMATCHED | DONE.. => {
                    // The join is over for this participant: nothing left to do here.
                    self.barrier.detach();
                    self.finished.fetch_add(1, Ordering::Relaxed);
                    return Ok((TableRef::Shared(self.table()?), AfterProbe::Nothing));
                }
            }
        }
    }

    fn table(&self) -> Result<&JoinTable> {
        self.table.get().ok_or_else(|| Error::internal("hash join table used before it was assembled"))
    }

    /// Phase 3: gather the deposited arenas in arena-number order; grow the buckets when
    /// far more tuples came than the estimate (their chains are rebuilt in phase 4).
    fn assemble(&self, buckets: Arc<Buckets>) {
        let mut deposited = std::mem::take(&mut *self.deposited.lock());
        deposited.sort_by_key(|(number, _)| *number);
        // Arena numbers are dense: every participant that took one deposited it.
        let arenas: Vec<Arena> = deposited.into_iter().map(|(_, a)| a).collect();
        let original = buckets.len();
        let mut table = JoinTable::assemble(arenas, buckets, original);
        if table.needs_more_buckets() {
            table.grow_buckets();
        }
        // Only the elected participant assembles, once per join.
        let _ = self.table.set(table);
    }

    fn attach(&self, ctx: &ExecContext, participant: &ParticipantContext) -> Result<usize> {
        let order = self.arrivals.fetch_add(1, Ordering::Relaxed);
        let Some(&target) = ctx.hash.attach_phases.get(order) else {
            return Ok(self.barrier.attach());
        };
        // Debug: wait for the phase asked for before attaching — unless nobody attached
        // could get there because everybody still running is waiting too.
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let attached = loop {
            ctx.cancel.check()?;
            let phase = self.barrier.phase();
            let others_running = participant.participants - self.finished.load(Ordering::Relaxed);
            let stuck = self.barrier.participants() == 0 && self.waiting.load(Ordering::Relaxed) >= others_running;
            if phase >= target || stuck {
                break self.barrier.attach();
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        Ok(attached)
    }

    fn finish_probe(
        &self,
        table: &JoinTable,
        after: AfterProbe,
        ctx: &ExecContext,
        emit: &mut dyn FnMut(&JoinTable, std::ops::Range<usize>) -> Result<bool>,
    ) -> Result<()> {
        if after == AfterProbe::Nothing {
            return Ok(());
        }
        let scan = if after == AfterProbe::Arrive {
            if self.join.join_type.emits_unmatched_inner() {
                // Wait for every prober: a match may still come from any of them.
                self.barrier.arrive_and_wait(ctx.cancel)?;
                true
            } else {
                false
            }
        } else {
            true
        };
        if scan {
            let total = table.tuples();
            loop {
                ctx.cancel.check()?;
                let first = self.unmatched_cursor.fetch_add(CLAIM, Ordering::Relaxed);
                if first >= total {
                    break;
                }
                if !emit(table, first..(first + CLAIM).min(total))? {
                    break;
                }
            }
        }
        self.barrier.arrive_and_detach();
        self.finished.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
