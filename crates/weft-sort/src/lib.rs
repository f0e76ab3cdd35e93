#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod report;

pub use report::{ParticipantReport, SortMethod, SortReport, SortSpace, SortStrategy};
