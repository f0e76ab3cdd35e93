#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod arena;
mod cardinality;
pub mod keys;
mod memrun;
mod memtuples;
mod merge;
mod ordered;
mod pairs;
mod radix;
pub mod report;
mod sort;
mod tape;
mod topn;

pub use keys::{text_zone_value, SortColumn, SortKeys};
pub use memrun::DEFAULT_SUB_RUN_BYTES;
pub use merge::Merger;
pub use pairs::PayloadSqueeze;
pub use ordered::{merge_ranges_then_complete, OutputTimes, RangeWorkers, RANGES_PER_PARTICIPANT};
pub use report::{ParticipantReport, SortMethod, SortReport, SortSpace, SortStrategy};
pub use sort::{merge_order, ParticipantSort, Partitioning, SharedSort, SortOptions, SortedRuns, TraceFn};
pub use tape::TempFileSet;
