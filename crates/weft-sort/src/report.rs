//! What a finished sort tells EXPLAIN ANALYZE, `trace_sort` and the benchmark.

use std::time::Duration;

/// How participants' runs become one ordered output (`parallel_sort_strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortStrategy {
    /// PostgreSQL's: the leader merges every participant's run, serially.
    LeaderMerge,
    /// Sampled splitters cut every run into key ranges; each participant merges one range.
    Partition,
}

impl SortStrategy {
    pub fn name(self) -> &'static str {
        match self {
            SortStrategy::LeaderMerge => "leader_merge",
            SortStrategy::Partition => "partition",
        }
    }

    pub fn from_name(name: &str) -> Option<SortStrategy> {
        match name {
            "leader_merge" => Some(SortStrategy::LeaderMerge),
            "partition" => Some(SortStrategy::Partition),
            _ => None,
        }
    }
}

/// PostgreSQL's `Sort Method:` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortMethod {
    Quicksort,
    TopNHeapsort,
    ExternalMerge,
}

impl SortMethod {
    pub fn name(self) -> &'static str {
        match self {
            SortMethod::Quicksort => "quicksort",
            SortMethod::TopNHeapsort => "top-N heapsort",
            SortMethod::ExternalMerge => "external merge",
        }
    }
}

/// Where the space a sort reports was used: `Memory: N kB` or `Disk: N kB`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortSpace {
    Memory,
    Disk,
}

impl SortSpace {
    pub fn name(self) -> &'static str {
        match self {
            SortSpace::Memory => "Memory",
            SortSpace::Disk => "Disk",
        }
    }
}

/// One participant's share of a sort.
#[derive(Clone, Debug, PartialEq)]
pub struct ParticipantReport {
    /// 0 is the leader when it participates; workers follow.
    pub index: usize,
    pub rows: u64,
    /// Runs written before this participant merged them into its one run (0 = in memory).
    pub runs_written: usize,
    /// Merges it ran to bring its runs down to one.
    pub merge_passes: usize,
    pub method: SortMethod,
    pub space: SortSpace,
    /// Peak memory or temp bytes, per `space`.
    pub space_bytes: u64,
    /// From its first row to its run being ready.
    pub elapsed: Duration,
}

/// A finished sort.
#[derive(Clone, Debug, PartialEq)]
pub struct SortReport {
    pub method: SortMethod,
    pub space: SortSpace,
    pub space_bytes: u64,
    pub strategy: SortStrategy,
    pub participants: Vec<ParticipantReport>,
    /// Inputs of the final merge (participants' runs, or runs left after earlier passes).
    pub merge_width: usize,
    /// Merge passes before the final merge.
    pub merge_passes: usize,
    /// Bytes written to temp files, over all participants and passes.
    pub temp_bytes: u64,
    /// Wall time of building runs, and of the final merge (or of the partitioned merge).
    pub run_phase: Duration,
    pub merge_phase: Duration,
    /// Time within the merge phase during which only one participant worked.
    pub serial_merge: Duration,
}

impl SortReport {
    /// `Sort Method: external merge  Disk: 1234kB`, as PostgreSQL prints it.
    pub fn explain_line(&self) -> String {
        format!("Sort Method: {}  {}: {}kB", self.method.name(), self.space.name(), self.space_bytes.div_ceil(1024))
    }
}
