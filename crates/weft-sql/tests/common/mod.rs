//! What the weft-sql integration tests share.

/// The same sequence of random choices on every run.
pub use weft_common::XorShift64 as Rng;
