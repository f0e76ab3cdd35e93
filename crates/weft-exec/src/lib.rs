#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod aggregate;
pub mod execute;
pub mod expr;
mod index_scan;
pub mod plan;
mod sort;

pub use sort::SortSettings;
pub use weft_sort::{SortReport, SortStrategy};
pub use execute::{execute, execute_insert, insert_rows, node_id, ExecContext, InsertTarget, NodeStats, ParticipantStats, PipelineStats};
pub use plan::{AggregateCall, AggregateFunction, HeapSource, IndexSource, Pipeline, Plan, Row, ScanLabel, SortKey, SortPlan, Source, Step};
