#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod error;
pub mod numeric;
pub mod tuple;
pub mod types;

pub use error::{Error, Result, SqlState};
pub use numeric::Numeric;
pub use types::{DataType, Datum};
