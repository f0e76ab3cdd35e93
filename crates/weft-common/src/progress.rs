//! Progress of long maintenance statements (CREATE INDEX, REINDEX), kept in one place.
//!
//! The statement updates a shared [`IndexBuildProgress`] with atomics as it goes; anyone
//! holding the `Arc` (the shell's progress bar, a `weft_stat_progress_create_index` view)
//! reads a consistent-enough [`ProgressSnapshot`] at any time without stopping it. Phase
//! names are PostgreSQL's (`pg_stat_progress_create_index`).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Phases of a B-tree build, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CreateIndexPhase {
    Initializing = 0,
    ScanningTable = 1,
    SortingLiveTuples = 2,
    LoadingTuplesInTree = 3,
    Done = 4,
}

impl CreateIndexPhase {
    /// PostgreSQL's name for the phase.
    pub fn name(self) -> &'static str {
        match self {
            CreateIndexPhase::Initializing => "initializing",
            CreateIndexPhase::ScanningTable => "building index: scanning table",
            CreateIndexPhase::SortingLiveTuples => "building index: sorting live tuples",
            CreateIndexPhase::LoadingTuplesInTree => "building index: loading tuples in tree",
            CreateIndexPhase::Done => "done",
        }
    }

    fn from_u8(v: u8) -> CreateIndexPhase {
        match v {
            0 => CreateIndexPhase::Initializing,
            1 => CreateIndexPhase::ScanningTable,
            2 => CreateIndexPhase::SortingLiveTuples,
            3 => CreateIndexPhase::LoadingTuplesInTree,
            _ => CreateIndexPhase::Done,
        }
    }
}

/// The live state of one index build; every participant updates it.
#[derive(Debug)]
pub struct IndexBuildProgress {
    /// `CREATE INDEX` or `REINDEX`.
    pub command: &'static str,
    pub index: String,
    pub table: String,
    phase: AtomicU8,
    blocks_total: AtomicU64,
    blocks_done: AtomicU64,
    tuples_total: AtomicU64,
    tuples_done: AtomicU64,
}

/// What a reader of the progress sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgressSnapshot {
    pub command: &'static str,
    pub index: String,
    pub table: String,
    pub phase: CreateIndexPhase,
    pub blocks_total: u64,
    pub blocks_done: u64,
    pub tuples_total: u64,
    pub tuples_done: u64,
}

impl IndexBuildProgress {
    pub fn new(command: &'static str, index: &str, table: &str) -> IndexBuildProgress {
        IndexBuildProgress {
            command,
            index: index.to_string(),
            table: table.to_string(),
            phase: AtomicU8::new(CreateIndexPhase::Initializing as u8),
            blocks_total: AtomicU64::new(0),
            blocks_done: AtomicU64::new(0),
            tuples_total: AtomicU64::new(0),
            tuples_done: AtomicU64::new(0),
        }
    }

    /// Enter `phase`; the counters of the previous phase are reset, as PostgreSQL's are.
    pub fn set_phase(&self, phase: CreateIndexPhase, blocks_total: u64, tuples_total: u64) {
        self.blocks_total.store(blocks_total, Ordering::Relaxed);
        self.blocks_done.store(0, Ordering::Relaxed);
        self.tuples_total.store(tuples_total, Ordering::Relaxed);
        self.tuples_done.store(0, Ordering::Relaxed);
        self.phase.store(phase as u8, Ordering::Release);
    }

    pub fn add_blocks_done(&self, n: u64) {
        self.blocks_done.fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_tuples_done(&self, n: u64) {
        self.tuples_done.fetch_add(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ProgressSnapshot {
        ProgressSnapshot {
            command: self.command,
            index: self.index.clone(),
            table: self.table.clone(),
            phase: CreateIndexPhase::from_u8(self.phase.load(Ordering::Acquire)),
            blocks_total: self.blocks_total.load(Ordering::Relaxed),
            blocks_done: self.blocks_done.load(Ordering::Relaxed),
            tuples_total: self.tuples_total.load(Ordering::Relaxed),
            tuples_done: self.tuples_done.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_reset_counters() {
        let p = IndexBuildProgress::new("CREATE INDEX", "i", "t");
        p.set_phase(CreateIndexPhase::ScanningTable, 10, 0);
        p.add_blocks_done(4);
        assert_eq!(p.snapshot().blocks_done, 4);
        p.set_phase(CreateIndexPhase::LoadingTuplesInTree, 0, 100);
        let s = p.snapshot();
        assert_eq!((s.phase, s.blocks_done, s.tuples_total), (CreateIndexPhase::LoadingTuplesInTree, 0, 100));
        assert_eq!(s.phase.name(), "building index: loading tuples in tree");
    }
}
