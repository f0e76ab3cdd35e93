#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod datetime_bind;
mod access_path;
mod alter_column;
mod alter_table;
mod ast_walk;
mod analyze;
mod api;
mod bind;
mod catalog_views;
mod constraints;
mod copy;
mod cost;
mod cte;
mod database;
mod deparse;
mod distinct_on;
mod explain;
mod exprutil;
mod grouping_sets;
mod index_expr;
mod indexes;
mod join;
mod lateral;
mod modify;
mod ordered_set;
mod params;
mod parse;
mod planner;
mod returning;
mod selectivity;
mod sequences;
mod session;
mod setop;
mod srf;
pub mod settings;
mod statements;
mod subplan;
mod transaction;
mod unread_outputs;
mod upsert;
mod vacuum;
mod window;

pub use api::{CancelHandle, ColumnInfo, Database, ProgressHandle, QueryResult, RelationDescription, RelationInfo, Session};
pub use weft_common::{DataType, Datum, Error, Result, SqlState};
pub use weft_exec::PipelineStats;
