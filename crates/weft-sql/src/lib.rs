#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod api;

pub use api::{CancelHandle, ColumnInfo, Database, QueryResult, RelationDescription, RelationInfo, Session};
pub use weft_common::{DataType, Datum, Error, Result, SqlState};
