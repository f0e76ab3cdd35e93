#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod aggregate;
pub mod execute;
pub mod expr;
pub mod hash_join;
mod index_scan;
pub mod plan;
mod project_set;
mod recursive;
mod setop;
mod sort;
mod spill;
mod window;

pub use aggregate::AggregateSpillReport;
pub use hash_join::{HashJoinSettings, HashJoinStats};
pub use sort::SortSettings;
pub use weft_sort::{SortReport, SortStrategy};
pub use execute::{execute, execute_discarding, execute_streaming, execute_until, execute_insert, failing_row, insert_rows, node_id, ExecContext, InsertTarget, NodeStats, ParticipantStats, PipelineStats};
pub use plan::{AggregateCall, AggregateFunction, HashJoin, HashJoinMode, HeapSource, IndexSource, JoinType, NestLoopPlan, Pipeline, Plan, ProjectSetPlan, SetFunction, RecursiveUnionPlan, Row, ScanLabel, SortKey, SortPlan, Source, Step};
pub use plan::{FrameBound, FrameUnits, WindowCall, WindowFrame, WindowFunction, WindowPlan};
pub use window::window_result_type;
