#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod aggregate;
pub mod execute;
pub mod expr;
pub mod plan;

pub use execute::{execute, execute_insert, insert_rows, ExecContext, InsertTarget, PipelineStats};
pub use plan::{AggregateCall, AggregateFunction, HeapSource, Pipeline, Plan, Row, SortKey, Source, Step};
