//! Running a join step: its shared state, each participant's local state, and what the
//! join reports.
//!
//! Every shape runs the same phase machine (`build.rs` for the build, `rounds.rs` for
//! what follows the probe): a parallel-aware join has one [`SharedJoin`] that every
//! participant attaches to; a serial or parallel-oblivious join gives each participant a
//! private one (its own read of the whole build side, its own budget and batch files),
//! which it runs alone — its barrier waits never wait. The phases, each done by *one*
//! participant (the one the barrier elects) or by *all* attached:
//!
//! | phase | who | what |
//! |---|---|---|
//! | 0 elect | all arrive | one participant is elected to allocate |
//! | 1 allocate | one | the bucket array and the first number of batches, from the planner's estimate |
//! | 2 hash inner | all | inner morsels: batch 0 into each participant's arena, later batches to batch files; batch growth (below) |
//! | 3 assemble | one | the arenas become batch 0's table |
//! | 4 grow buckets | all | when far more tuples came than estimated: chains rebuilt in a larger array |
//! | 5 probe / hash outer | all | outer rows of batch 0 probe the table; those of later batches go to batch files |
//! | 6 scan unmatched | all | right/full joins: batch 0's unmatched inner tuples; (one) the rounds are planned |
//! | 7 + 5r batch elect | one | round r: the previous table dropped, buckets for this one |
//! | 8 + 5r batch load | all | inner blocks of the round's batch (or chunk) into arenas, inserted lock-free |
//! | 9 + 5r batch assemble | one | the arenas become the round's table |
//! | 10 + 5r batch probe | all | the batch's outer blocks probe it |
//! | 11 + 5r batch scan | all | unmatched inner tuples (right/full); after a chunked batch's last chunk, its unmatched outer rows |
//! | 7 + 5R done | | |
//!
//! Batch growth has its own barrier (PostgreSQL's `grow_batches_barrier`), cycling
//! through *elect* (everyone hands over its batch files and reservation), *allocate*
//! (one: twice the batches, a new bucket array), *repartition* (all: each its own arena,
//! the arenas of those done hashing, and the blocks of the old batch files, claimed one at
//! a time) and *decide* (one: grow again, stop, or — a split that did not shrink a batch:
//! one hot key — disable growth). A participant is attached to it only while it hashes
//! inner morsels, and hands over everything it holds before detaching, so a growth never
//! waits for somebody who is done, and never misses what they built.
//!
//! No participant waits for another that could be waiting for it: every participant
//! pushes into its own sink (no wait depends on somebody consuming output: the seed's
//! leader/tuple-queue deadlock cannot arise); joins end in step order, so a wait at join
//! *i*'s barrier is only for participants still probing or finishing join *i*, which
//! never wait elsewhere first; the growth barrier is only waited on by participants
//! hashing; no lock is held across a wait; every wait polls the cancel token.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use weft_common::parallel::{Barrier, ParticipantContext};
use weft_common::{Datum, Error, Result};
use weft_storage::zone_map::ZoneMapBuild;

use super::batch::{batch_of, block_bytes, BatchWriters, Block, SpillSet, MAX_BATCHES};
use super::build::DenseUpFront;
use super::rounds::RoundPlan;
use super::table::{key_hash, outer_keys, Arena, Buckets, IntKeyRange, JoinFacts, JoinTable, ProbeBuffers};
use super::{HashJoinStats, PhaseWait};
use crate::execute::{node_id, ExecContext, ParticipantStats, PipelineStats, SourceState};
use crate::plan::{HashJoin, HashJoinMode, JoinType};

pub const ELECT: usize = 0;
pub const ALLOCATE: usize = 1;
pub const HASH_INNER: usize = 2;
pub const ASSEMBLE: usize = 3;
pub const GROW_BUCKETS: usize = 4;
pub const PROBE: usize = 5;
pub const UNMATCHED: usize = 6;
/// The first phase of the rounds that follow the probe (multi-batch joins); each round
/// has [`ROUND_PHASES`] phases.
pub const FIRST_ROUND: usize = 7;
pub const ROUND_PHASES: usize = 5;
pub const BATCH_ELECT: usize = 0;
pub const BATCH_LOAD: usize = 1;
pub const BATCH_ASSEMBLE: usize = 2;
pub const BATCH_PROBE: usize = 3;
pub const BATCH_SCAN: usize = 4;

/// A phase's name, for EXPLAIN ANALYZE's barrier waits.
pub fn phase_name(phase: usize) -> &'static str {
    const FIRST: [&str; FIRST_ROUND] = ["elect", "allocate", "hash inner", "assemble", "grow buckets", "probe", "scan unmatched"];
    const ROUND: [&str; ROUND_PHASES] = ["batch elect", "batch load", "batch assemble", "batch probe", "batch scan"];
    if phase < FIRST_ROUND {
        FIRST[phase]
    } else {
        ROUND[(phase - FIRST_ROUND) % ROUND_PHASES]
    }
}

/// Batch growth: nothing asked, more batches asked, or growth given up (a hot key).
pub(crate) const GROWTH_OK: u8 = 0;
pub(crate) const GROWTH_NEED_MORE: u8 = 1;
pub(crate) const GROWTH_DISABLED: u8 = 2;

/// Percent of the budget skew buckets' inner tuples may take (PostgreSQL's
/// `SKEW_HASH_MEM_PERCENT`).
pub(crate) const SKEW_PERCENT: usize = 2;

/// Tuples a participant claims at once when inserting or scanning unmatched.
pub(crate) const CLAIM: usize = 4096;

/// A join step's state for one run of its pipeline.
pub(crate) enum JoinRun<'p> {
    /// Serial or parallel-oblivious: every participant builds its own table.
    Private { join: &'p HashJoin, stats: Mutex<Vec<ParticipantStats>>, figures: Mutex<Option<Figures>> },
    /// Parallel-aware: one table built by all.
    Shared(Box<SharedJoin<'p>>),
}

/// What a join did, for EXPLAIN ANALYZE (merged over private tables).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Figures {
    pub buckets: usize,
    pub original_buckets: usize,
    pub batches: usize,
    pub original_batches: usize,
    pub peak_memory: usize,
    pub tuples: u64,
    pub disk_bytes: u64,
    pub rounds: usize,
    pub chunked_batches: usize,
    pub skew_inner: u64,
    pub skew_outer: u64,
    pub outer_spilled: u64,
}

impl Figures {
    fn merge(&mut self, other: Figures) {
        self.buckets = self.buckets.max(other.buckets);
        self.original_buckets = self.original_buckets.max(other.original_buckets);
        self.batches = self.batches.max(other.batches);
        self.original_batches = self.original_batches.max(other.original_batches);
        self.peak_memory = self.peak_memory.max(other.peak_memory);
        self.tuples = self.tuples.max(other.tuples);
        self.disk_bytes += other.disk_bytes;
        self.rounds = self.rounds.max(other.rounds);
        self.chunked_batches = self.chunked_batches.max(other.chunked_batches);
        self.skew_inner = self.skew_inner.max(other.skew_inner);
        self.skew_outer += other.skew_outer;
        self.outer_spilled += other.outer_spilled;
    }
}

/// The shared state of one join (of all participants, or of one for a private table).
pub(crate) struct SharedJoin<'p> {
    pub(super) join: &'p HashJoin,
    pub(super) private: bool,
    pub(super) barrier: Barrier,
    pub(super) source: SourceState<'p>,
    temp_parent: PathBuf,
    spill: Mutex<Option<Arc<SpillSet>>>,
    /// Budget of the in-memory table (tuples and bucket array), all participants'.
    pub(super) space_allowed: usize,
    pub(super) block_bytes: usize,
    /// A participant's reservations of `space_used` are this big (a tuple's if bigger).
    pub(super) reserve_chunk: usize,
    pub(super) original_batches: usize,
    /// Tuples each participant's first arena makes room for.
    pub(super) reserve_tuples: usize,
    /// The build side goes straight into dense slots made at *allocate*, in one batch.
    pub(super) dense_up_front: Option<DenseUpFront>,
    /// A zone map of the build side's key column, built by its scan when there is none
    /// (published at *assemble* if every block was read): the next join of the table gets
    /// dense slots made up front.
    pub(super) inner_zone_build: Mutex<Option<ZoneMapBuild>>,
    /// Skew buckets: key hashes of the outer key's most common values, sorted (empty: no
    /// skew buckets), and the budget of their inner tuples (2% of `space_allowed`,
    /// PostgreSQL's `SKEW_HASH_MEM_PERCENT`). Their tuples are batch 0's whatever their
    /// batch bits while the join has several batches and batch 0 is not evicted.
    pub(super) skew: Vec<u64>,
    pub(super) skew_allowed: usize,
    /// Bytes of skew tuples in the arenas (beyond `skew_allowed` they count in
    /// `space_used` too); inner tuples kept as skew tuples; outer rows probed as such, and
    /// outer rows written to batch files.
    pub(super) skew_bytes: AtomicUsize,
    pub(super) skew_inner: AtomicU64,
    pub(super) skew_outer: AtomicU64,
    pub(super) outer_spilled: AtomicU64,
    // BUILD (build.rs)
    pub(super) build: Mutex<BuildState>,
    pub(super) nbatch: AtomicUsize,
    pub(super) growth: AtomicU8,
    pub(super) grow_barrier: Barrier,
    /// Bytes reserved for batch 0's tuples, and the bytes of its bucket array.
    pub(super) space_used: AtomicUsize,
    pub(super) bucket_bytes: AtomicUsize,
    /// Batch 0 held a hot key: all of it goes to batch files (processed in chunks).
    pub(super) batch0_evicted: AtomicBool,
    /// A tuple of batch 0 (or a skew tuple) found no room since the last growth: the
    /// growth asked for is batch 0's, whatever its size after the split (see `decide`).
    pub(super) batch0_full: AtomicBool,
    pub(super) next_arena: AtomicUsize,
    pub(super) generation: AtomicUsize,
    pub(super) repartition_cursor: AtomicUsize,
    pub(super) inner_null_key: AtomicBool,
    /// A data exception (SQLSTATE class 22) the build side raised, kept until an outer
    /// row comes (see [`SharedJoin::defers`]).
    pub(super) deferred_error: Mutex<Option<Error>>,
    pub(super) build_deferred: AtomicBool,
    pub(super) inner_rows: AtomicU64,
    pub(super) tuples: AtomicU64,
    /// Batch 0's table, from phase 3 until the first round.
    pub(super) table: Mutex<Option<Arc<JoinTable>>>,
    pub(super) table_buckets: AtomicUsize,
    pub(super) original_buckets: AtomicUsize,
    pub(super) insert_cursor: AtomicUsize,
    pub(super) unmatched_cursor: AtomicUsize,
    // PROBE AND ROUNDS (rounds.rs)
    pub(super) outer_blocks: Mutex<Vec<Vec<Block>>>,
    pub(super) plan: std::sync::OnceLock<RoundPlan>,
    pub(super) round: Mutex<super::rounds::RoundState>,
    pub(super) round_arena: AtomicUsize,
    pub(super) load_cursor: AtomicUsize,
    pub(super) probe_cursor: AtomicUsize,
    pub(super) scan_cursor: AtomicUsize,
    pub(super) outer_scan_cursor: AtomicUsize,
    pub(super) peak_memory: AtomicUsize,
    // DEBUG ATTACH
    arrivals: AtomicUsize,
    waiting: AtomicUsize,
    pub(super) finished: AtomicUsize,
    pub(super) inner_stats: Mutex<Vec<ParticipantStats>>,
}

/// The build's shared bookkeeping (under one lock, taken per block and per phase).
#[derive(Default)]
pub(crate) struct BuildState {
    pub buckets: Option<Arc<Buckets>>,
    /// Per batch of the current generation: bytes its tuples would take in a table, and
    /// tuples, of the blocks written (batch 0: of its files once evicted).
    pub batch_bytes: Vec<usize>,
    pub batch_tuples: Vec<u64>,
    pub inner_blocks: Vec<Vec<Block>>,
    /// Arenas of participants done hashing (already in `buckets`), by arena number.
    pub deposited: Vec<(usize, Arena)>,
    /// Growth: batch 0's tuples handed over at *elect*, kept at *repartition*; the old
    /// generation's tuples per batch, its blocks and arenas to repartition.
    pub elect_batch0: u64,
    pub repartition_batch0: u64,
    pub old_tuples: Vec<u64>,
    pub old_blocks: Vec<Block>,
    pub old_arenas: Vec<(usize, Arena)>,
    /// The range of every keyed inner tuple's key, all batches (tracked for an int4
    /// key-only build side: rounds may keep their tables in dense slots).
    pub int_keys: IntKeyRange,
}

/// A participant's handle on the join it runs: the shared one, or its own.
pub(crate) enum Handle<'s, 'p> {
    Shared(&'s SharedJoin<'p>),
    Private(Box<SharedJoin<'p>>),
}

impl<'p> std::ops::Deref for Handle<'_, 'p> {
    type Target = SharedJoin<'p>;
    fn deref(&self) -> &SharedJoin<'p> {
        match self {
            Handle::Shared(s) => s,
            Handle::Private(s) => s,
        }
    }
}

/// One participant's state at one join step while its pipeline runs.
pub(crate) struct JoinLocal<'s, 'p> {
    pub(super) handle: Handle<'s, 'p>,
    /// Batch 0's table while probing.
    pub(super) table: Option<Arc<JoinTable>>,
    buffers: ProbeBuffers,
    /// Multi-batch: where outer rows of later batches go.
    outer: Option<OuterSpill>,
    /// The phase this participant is in: [`PROBE`], or the later phase it attached at
    /// (it then has no outer row to probe: the source was exhausted).
    pub(super) phase: usize,
    keys: Vec<Datum>,
    /// The build's deferred error, raised by the first outer row this participant takes.
    deferred: Option<Error>,
    /// Outer rows this participant probed against skew tuples, and wrote to batch files.
    skew_outer: u64,
    spilled: u64,
    /// Outer rows probed, to poll the cancel token every [`PROBES_PER_CANCEL_CHECK`]: a
    /// row may visit every inner tuple (a join without keys), and a join emitting few
    /// rows (an anti join) would otherwise never reach a check downstream.
    probes: u64,
}

/// How often [`JoinLocal::probe`] polls the cancel token.
const PROBES_PER_CANCEL_CHECK: u64 = 64;

struct OuterSpill {
    nbatch: usize,
    /// Batch 0 was evicted: its outer rows are spilled too.
    spill_batch0: bool,
    writers: Option<BatchWriters>,
}

impl<'p> JoinRun<'p> {
    /// The join this runs.
    pub(crate) fn join(&self) -> &'p HashJoin {
        match self {
            JoinRun::Private { join, .. } => join,
            JoinRun::Shared(shared) => shared.join,
        }
    }

    pub fn new(join: &'p HashJoin, ctx: &ExecContext, participants: usize) -> Result<JoinRun<'p>> {
        Ok(match join.mode {
            HashJoinMode::Serial | HashJoinMode::ParallelOblivious => {
                if join.join_type.emits_unmatched_inner() && join.mode == HashJoinMode::ParallelOblivious {
                    return Err(Error::internal("a parallel-oblivious right or full join"));
                }
                JoinRun::Private { join, stats: Mutex::new(Vec::new()), figures: Mutex::new(None) }
            }
            HashJoinMode::ParallelAware => JoinRun::Shared(Box::new(SharedJoin::new(join, ctx, participants, false)?)),
        })
    }

    /// Build (or join in building) the table; returns this participant's state to probe
    /// with.
    pub fn build<'s>(&'s self, ctx: &ExecContext, participant: &ParticipantContext) -> Result<JoinLocal<'s, 'p>> {
        match self {
            JoinRun::Private { join, .. } => {
                // Each participant reads the whole build side through its own source.
                let own = Box::new(SharedJoin::new(join, ctx, 1, true)?);
                let phase = own.run_build(ctx, participant)?;
                Ok(JoinLocal::new(Handle::Private(own), phase, ctx))
            }
            JoinRun::Shared(shared) => {
                let phase = shared.run_build(ctx, participant)?;
                Ok(JoinLocal::new(Handle::Shared(shared), phase, ctx))
            }
        }
    }

    /// After this participant's probe: the rest of the join (unmatched rows, later
    /// batches), whose rows go to `out`; then leave the join.
    pub fn finish(&self, local: &mut JoinLocal, ctx: &ExecContext, out: &mut dyn FnMut(&[Datum]) -> Result<bool>) -> Result<()> {
        if let Some(writers) = local.outer.take().and_then(|o| o.writers) {
            let mut writers = writers;
            let (blocks, _) = writers.take_blocks()?;
            writers.close();
            local.handle.deposit_outer(blocks);
        }
        local.handle.skew_outer.fetch_add(std::mem::take(&mut local.skew_outer), Ordering::Relaxed);
        local.handle.outer_spilled.fetch_add(std::mem::take(&mut local.spilled), Ordering::Relaxed);
        local.handle.finish(local.phase, &mut local.table, &mut local.buffers.ints.counted, ctx, out)?;
        if let (JoinRun::Private { stats, figures, .. }, Handle::Private(own)) = (self, &local.handle) {
            stats.lock().append(&mut own.inner_stats.lock());
            let mine = own.figures();
            figures.lock().get_or_insert_with(Figures::default).merge(mine);
        }
        Ok(())
    }

    /// Record what the join did (once, after every participant finished).
    pub fn report(&self, ctx: &ExecContext, rows_out: Vec<u64>) {
        let (join, inner, figures) = match self {
            JoinRun::Private { join, stats, figures } => (*join, std::mem::take(&mut *stats.lock()), figures.lock().unwrap_or_default()),
            JoinRun::Shared(shared) => (shared.join, std::mem::take(&mut *shared.inner_stats.lock()), shared.figures()),
        };
        let phase_waits = match self {
            JoinRun::Shared(shared) => shared
                .barrier
                .wait_stats()
                .into_iter()
                .map(|w| PhaseWait { phase: phase_name(w.phase).to_string(), waits: w.waits })
                .collect(),
            JoinRun::Private { .. } => Vec::new(),
        };
        ctx.joins.lock().push(HashJoinStats {
            node: node_id(join),
            buckets: figures.buckets,
            original_buckets: figures.original_buckets,
            batches: figures.batches,
            original_batches: figures.original_batches,
            peak_memory: figures.peak_memory,
            inner_rows: figures.tuples,
            disk_bytes: figures.disk_bytes,
            rounds: figures.rounds,
            chunked_batches: figures.chunked_batches,
            skew_inner_rows: figures.skew_inner,
            skew_outer_rows: figures.skew_outer,
            outer_spilled: figures.outer_spilled,
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

impl<'s, 'p> JoinLocal<'s, 'p> {
    /// The whole inner side (every batch) turned out empty.
    pub(crate) fn inner_is_empty(&self) -> bool {
        // (A build cut short by a deferred error is not empty: its outer rows must come.)
        self.deferred.is_none() && self.table.as_ref().is_some_and(|table| table.facts().inner_empty)
    }

    fn new(handle: Handle<'s, 'p>, phase: usize, ctx: &ExecContext) -> JoinLocal<'s, 'p> {
        let (table, outer) = if phase == PROBE {
            let nbatch = handle.nbatch.load(Ordering::Acquire);
            let outer = (nbatch > 1).then(|| OuterSpill {
                nbatch,
                spill_batch0: handle.batch0_evicted.load(Ordering::Acquire),
                writers: None,
            });
            (handle.table.lock().clone(), outer)
        } else {
            (None, None)
        };
        let mut buffers = ProbeBuffers::for_join(handle.join);
        buffers.cancel = Some(ctx.cancel.clone());
        // Every participant's build has ended here (a barrier, or a private table).
        let deferred = handle.deferred_error.lock().clone();
        JoinLocal { handle, table, buffers, outer, phase, keys: Vec::new(), deferred, skew_outer: 0, spilled: 0, probes: 0 }
    }

    /// Take one outer row: probe batch 0's table with it, or write it to its batch's file.
    /// Returns false when the sink asked to stop.
    pub fn probe(&mut self, join: &HashJoin, outer: &[Datum], ctx: &ExecContext, emit: &mut dyn FnMut(&[Datum]) -> Result<bool>) -> Result<bool> {
        if self.table.is_none() {
            // Attached after the probe: the outer side was exhausted by the others, so a
            // row only comes after a LIMIT stopped the statement (see `JoinLocal::phase`).
            return Ok(false);
        }
        if let Some(error) = &self.deferred {
            // The outer side is not empty after all: the build's error stands.
            return Err(error.clone());
        }
        self.count_probe(ctx)?;
        if self.outer.is_some() {
            if let Some(hash) = outer_keys(join, outer, ctx.eval, &mut self.keys)?.map(key_hash) {
                if self.spill_outer(join, hash, outer)? {
                    return Ok(true);
                }
            }
        }
        let Some(table) = &self.table else { return Ok(false) };
        table.probe(join, outer, ctx.eval, &mut self.buffers, emit)
    }

    #[inline]
    fn count_probe(&mut self, ctx: &ExecContext) -> Result<()> {
        self.probes += 1;
        if self.probes % PROBES_PER_CANCEL_CHECK == 0 {
            ctx.cancel.check()?;
        }
        Ok(())
    }

    /// Multi-batch: an outer row of key hash `hash` that belongs to a later batch is
    /// written to its batch file (or, against an inner NULL under NOT IN, dropped) and
    /// `true` returned; `false` when it is to be probed now.
    #[inline]
    fn spill_outer(&mut self, join: &HashJoin, hash: u64, outer: &[Datum]) -> Result<bool> {
        let Some(spill) = &mut self.outer else { return Ok(false) };
        let batch = batch_of(hash, spill.nbatch);
        if batch != 0 && !spill.spill_batch0 && self.handle.is_skew(hash) {
            // A most common key: its inner tuples are in batch 0's table.
            self.skew_outer += 1;
            return Ok(false);
        }
        if batch == 0 && !spill.spill_batch0 {
            return Ok(false);
        }
        if join.null_aware && self.handle.inner_null_key.load(Ordering::Relaxed) {
            // NOT IN against a NULL: no row at all.
            return Ok(true);
        }
        let writers = match &mut spill.writers {
            Some(w) => w,
            slot @ None => slot.insert(self.handle.writers("outer", spill.nbatch)?),
        };
        writers.write(batch, hash, true, outer, 0)?;
        self.spilled += 1;
        Ok(true)
    }

    /// [`probe`](Self::probe)'s first step for an outer row that is its key alone (one
    /// plain key column, nothing else read from the scan): a row of a later batch is
    /// written to its batch file straight from the scan's tuple, without being decoded
    /// and sent through the pipeline's steps. Returns `true` when the row was taken so
    /// (or dropped), `false` when it is to be probed.
    pub fn spill_key(&mut self, join: &HashJoin, key: &Datum, ctx: &ExecContext) -> Result<bool> {
        if self.outer.is_none() || self.table.is_none() || self.deferred.is_some() || key.is_null() {
            return Ok(false);
        }
        let key = std::slice::from_ref(key);
        if self.spill_outer(join, key_hash(key), key)? {
            self.count_probe(ctx)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The table to test outer keys against before decoding their rows
    /// ([`JoinTable::may_match`]), when a row it turns away surely produces nothing: the
    /// whole inner side is in the table (one batch), the key is one plain column, and an
    /// unmatched outer row emits nothing (inner, semi and right joins).
    pub fn prefilter(&self, join: &HashJoin) -> Option<Arc<JoinTable>> {
        let emits_nothing_unmatched = matches!(join.join_type, JoinType::Inner | JoinType::Semi | JoinType::Right);
        if self.outer.is_some() || self.deferred.is_some() || join.null_aware || !emits_nothing_unmatched || join.outer_key_column().is_none() {
            return None;
        }
        self.table.clone()
    }

    /// Whatever takes this join's rows only counts them (`count(*)` right above it): a
    /// probe of slots counts its rows instead of emitting them, and
    /// [`take_counted`](Self::take_counted) hands the count over.
    pub fn count_rows_only(&mut self) {
        self.buffers.ints.counted = Some(0);
    }

    /// The rows counted since the last call (see [`count_rows_only`](Self::count_rows_only)).
    pub fn take_counted(&mut self) -> u64 {
        self.buffers.ints.counted.as_mut().map_or(0, std::mem::take)
    }

    /// Are outer rows waiting to be probed together?
    pub fn has_pending(&self) -> bool {
        self.buffers.has_pending()
    }

    /// Probe the outer rows waiting.
    pub fn flush(&mut self, join: &HashJoin, ctx: &ExecContext, emit: &mut dyn FnMut(&[Datum]) -> Result<bool>) -> Result<bool> {
        match &self.table {
            Some(table) => table.flush(join, ctx.eval, &mut self.buffers, None, emit),
            None => Ok(true),
        }
    }
}

impl<'p> SharedJoin<'p> {
    fn new(join: &'p HashJoin, ctx: &ExecContext, participants: usize, private: bool) -> Result<SharedJoin<'p>> {
        let per_participant = (ctx.hash.work_mem as f64 * ctx.hash.hash_mem_multiplier.max(1.0)) as usize;
        let space_allowed = per_participant.saturating_mul(participants.max(1)).max(64 << 10);
        // PostgreSQL's ExecChooseHashTableSize: batches enough for the estimated inner
        // side, each fitting the budget with its bucket array.
        let tuple_bytes = Arena::estimated_tuple_bytes(join);
        let inner_bytes = join.estimated_inner_rows.max(0.0) * tuple_bytes as f64;
        let dense_up_front = DenseUpFront::plan(join, ctx, space_allowed);
        let nbatch = if inner_bytes <= space_allowed as f64 * 0.75 || dense_up_front.is_some() {
            1
        } else {
            ((inner_bytes / (space_allowed as f64 * 0.75)).ceil() as usize).next_power_of_two().min(MAX_BATCHES)
        };
        let participants = participants.max(1);
        // Each participant's arena is sized up front for its share of batch 0's estimated
        // tuples (at most its share of the budget): growing it would copy every tuple a
        // few times, each time into memory touched for the first time. An eighth more
        // than an even share: participants' shares differ by a few percent, and memory
        // reserved but never touched costs nothing.
        let share = (join.estimated_inner_rows.max(0.0) as usize) / nbatch / participants;
        let reserve_tuples = if dense_up_front.is_some() { 0 } else { (share + share / 8).min(space_allowed / participants / tuple_bytes.max(1)) };
        // Skew buckets: the most common outer keys, as many as the skew budget could hold
        // one inner tuple of (PostgreSQL's ExecHashBuildSkewHash), most common first.
        let skew_allowed = if join.outer_keys.len() == 1 && !join.outer_mcvs.is_empty() { space_allowed * SKEW_PERCENT / 100 } else { 0 };
        let mut skew: Vec<u64> = join
            .outer_mcvs
            .iter()
            .take(skew_allowed / tuple_bytes.max(1))
            .filter(|(value, _)| !value.is_null())
            .map(|(value, _)| key_hash(std::slice::from_ref(value)))
            .collect();
        skew.sort_unstable();
        skew.dedup();
        let skew_allowed = if skew.is_empty() { 0 } else { skew_allowed };
        Ok(SharedJoin {
            join,
            private,
            barrier: Barrier::new(0),
            source: SourceState::new(&join.inner.source, ctx, participants)?,
            temp_parent: ctx.sort.temp_dir.clone(),
            spill: Mutex::new(None),
            space_allowed,
            block_bytes: block_bytes(space_allowed / participants),
            reserve_chunk: (space_allowed / (16 * participants)).clamp(256, 32 << 10),
            original_batches: nbatch,
            reserve_tuples,
            dense_up_front,
            inner_zone_build: Mutex::new(super::build::inner_zone_build(join, ctx)),
            skew,
            skew_allowed,
            skew_bytes: AtomicUsize::new(0),
            skew_inner: AtomicU64::new(0),
            skew_outer: AtomicU64::new(0),
            outer_spilled: AtomicU64::new(0),
            build: Mutex::new(BuildState::default()),
            nbatch: AtomicUsize::new(nbatch),
            growth: AtomicU8::new(GROWTH_OK),
            grow_barrier: Barrier::new(0),
            space_used: AtomicUsize::new(0),
            bucket_bytes: AtomicUsize::new(0),
            batch0_evicted: AtomicBool::new(false),
            batch0_full: AtomicBool::new(false),
            next_arena: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            repartition_cursor: AtomicUsize::new(0),
            inner_null_key: AtomicBool::new(false),
            deferred_error: Mutex::new(None),
            build_deferred: AtomicBool::new(false),
            inner_rows: AtomicU64::new(0),
            tuples: AtomicU64::new(0),
            table: Mutex::new(None),
            table_buckets: AtomicUsize::new(0),
            original_buckets: AtomicUsize::new(0),
            insert_cursor: AtomicUsize::new(0),
            unmatched_cursor: AtomicUsize::new(0),
            outer_blocks: Mutex::new(Vec::new()),
            plan: std::sync::OnceLock::new(),
            round: Mutex::new(super::rounds::RoundState::default()),
            round_arena: AtomicUsize::new(0),
            load_cursor: AtomicUsize::new(0),
            probe_cursor: AtomicUsize::new(0),
            scan_cursor: AtomicUsize::new(0),
            outer_scan_cursor: AtomicUsize::new(0),
            peak_memory: AtomicUsize::new(0),
            arrivals: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            inner_stats: Mutex::new(Vec::new()),
        })
    }

    /// The join's temp directory, created at the first spill.
    pub(super) fn spill_set(&self) -> Result<Arc<SpillSet>> {
        let mut spill = self.spill.lock();
        if let Some(set) = &*spill {
            return Ok(set.clone());
        }
        let set = Arc::new(SpillSet::create(&self.temp_parent)?);
        *spill = Some(set.clone());
        Ok(set)
    }

    /// New writers for `nbatch` batches of one side (file names: side, generation, writer).
    pub(super) fn writers(&self, side: &str, nbatch: usize) -> Result<BatchWriters> {
        static WRITER: AtomicUsize = AtomicUsize::new(0);
        let name = format!("{side}.g{}.w{}", self.generation.load(Ordering::Relaxed), WRITER.fetch_add(1, Ordering::Relaxed));
        let (width, key_column) = match side {
            "inner" => (self.join.inner_width, self.join.inner_key_column()),
            _ => (self.join.outer_width, self.join.outer_key_column()),
        };
        Ok(BatchWriters::new(self.spill_set()?, name, nbatch, self.block_bytes, width == 1 && key_column == Some(0)))
    }

    /// What the join did so far.
    fn figures(&self) -> Figures {
        let plan = self.plan.get();
        Figures {
            buckets: self.table_buckets.load(Ordering::Relaxed),
            original_buckets: self.original_buckets.load(Ordering::Relaxed),
            batches: self.nbatch.load(Ordering::Relaxed),
            original_batches: self.original_batches,
            peak_memory: self.peak_memory.load(Ordering::Relaxed),
            tuples: self.tuples.load(Ordering::Relaxed),
            disk_bytes: self.spill.lock().as_ref().map_or(0, |s| s.counters.written()),
            rounds: plan.map_or(0, |p| p.rounds.len()),
            chunked_batches: plan.map_or(0, |p| p.chunked_batches),
            skew_inner: self.skew_inner.load(Ordering::Relaxed),
            skew_outer: self.skew_outer.load(Ordering::Relaxed),
            outer_spilled: self.outer_spilled.load(Ordering::Relaxed),
        }
    }

    /// Is `hash` one of the skew buckets' (a most common outer key's)?
    #[inline]
    pub(super) fn is_skew(&self, hash: u64) -> bool {
        !self.skew.is_empty() && self.skew.binary_search(&hash).is_ok()
    }

    /// The facts a probe needs about the whole inner side (known once it is hashed).
    pub(super) fn facts(&self) -> JoinFacts {
        JoinFacts {
            inner_has_null_key: self.inner_null_key.load(Ordering::Acquire),
            inner_empty: self.inner_rows.load(Ordering::Acquire) == 0,
        }
    }

    /// Attach to the join's barrier (at the debug phase asked for, if any): the phase to
    /// take part in.
    pub(super) fn attach(&self, ctx: &ExecContext, participant: &ParticipantContext) -> Result<usize> {
        if self.private {
            return Ok(self.barrier.attach());
        }
        let order = self.arrivals.fetch_add(1, Ordering::Relaxed);
        let Some(&target) = ctx.hash.attach_phases.get(order) else {
            return Ok(self.barrier.attach());
        };
        // Debug: wait for the phase asked for before attaching — unless nobody attached
        // could get there because everybody still running is waiting too.
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let attached = loop {
            if let Err(e) = ctx.cancel.check() {
                self.waiting.fetch_sub(1, Ordering::Relaxed);
                return Err(e);
            }
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
}
