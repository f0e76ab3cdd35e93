#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod datetime;
pub mod error;
pub mod hash;
pub mod md5;
pub mod memory;
pub mod numeric;
pub mod parallel;
pub mod progress;
pub mod sync;
pub mod timezone;
pub mod tuple;
pub mod typmod;
pub mod types;
pub mod units;
pub mod xorshift;

pub use error::{Cursor, Error, Result, SqlState};
pub use numeric::Numeric;
pub use types::{DataType, Datum};
pub use typmod::{Coercion, TypeModifier};
pub use xorshift::XorShift64;
