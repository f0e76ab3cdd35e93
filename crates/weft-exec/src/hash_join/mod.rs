//! Hash joins: `Step::HashJoin` inside a pipeline (see the crate README, "Hash join"):
//! the table (`table.rs`), its batch files (`batch.rs`), and how participants build it
//! (`build.rs`) and finish it (`rounds.rs`), over the phases listed in `run.rs`.

use std::time::Duration;

pub(crate) mod batch;
mod build;
mod rounds;
pub(crate) mod run;
pub(crate) mod table;

/// Budget and debugging knobs of hash joins, from the session's settings.
#[derive(Clone, Debug)]
pub struct HashJoinSettings {
    /// `work_mem` in bytes; the budget of a participant's share of a table is `work_mem` ×
    /// `hash_mem_multiplier` (combined across participants for a shared table); beyond
    /// it the join runs in batches.
    pub work_mem: usize,
    pub hash_mem_multiplier: f64,
    /// Debug (`weft_hash_attach_phases`): participant `i` (in the order participants
    /// arrive at the join) first attaches to the join's barrier at phase
    /// `attach_phases[i]`; participants beyond the list attach wherever the join is.
    pub attach_phases: Vec<usize>,
    /// `weft_hash_dense_up_front`: an int4 key-only build side whose key column has a zone
    /// map goes straight into dense slots sized from the map, in one batch (off: it is
    /// built like any other, so tests can run the batch machinery on such joins).
    pub dense_up_front: bool,
}

impl Default for HashJoinSettings {
    fn default() -> HashJoinSettings {
        HashJoinSettings { work_mem: 4 << 20, hash_mem_multiplier: 2.0, attach_phases: Vec::new(), dense_up_front: true }
    }
}

/// Waits at one barrier phase of a parallel-aware join, over its participants.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseWait {
    /// The phase's name (`"build"`, `"probe"`, ...).
    pub phase: String,
    pub waits: Vec<Duration>,
}

/// What one hash join step did (EXPLAIN ANALYZE's `Hash` node and join statistics).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HashJoinStats {
    /// [`crate::node_id`] of the `HashJoin` (the boxed struct in `Step::HashJoin`).
    pub node: usize,
    pub buckets: usize,
    pub original_buckets: usize,
    pub batches: usize,
    pub original_batches: usize,
    /// Peak bytes of the in-memory table (all participants' shares for a shared table).
    pub peak_memory: usize,
    /// Rows the build side put into the table (all batches).
    pub inner_rows: u64,
    /// Bytes written to the join's temp files (both sides, all participants).
    pub disk_bytes: u64,
    /// Rounds after the probe (one per later batch, or per chunk of a batch too big for
    /// the budget), and batches processed in chunks.
    pub rounds: usize,
    pub chunked_batches: usize,
    /// Skew buckets (the outer key's most common values, several batches only): inner
    /// tuples of those keys kept in batch 0's table whatever their batch, and outer rows
    /// joined with them during the probe instead of being written to a batch file.
    pub skew_inner_rows: u64,
    pub skew_outer_rows: u64,
    /// Outer rows written to batch files (all participants).
    pub outer_spilled: u64,
    /// Rows the step emitted, per participant.
    pub rows_out: Vec<u64>,
    /// Barrier waits per phase (parallel-aware only).
    pub phase_waits: Vec<PhaseWait>,
}
