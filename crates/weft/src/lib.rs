#![doc = include_str!("../README.md")]
//!
//! The library half of the `weft` binary crate, what integration tests reuse: `postgres` (a
//! throwaway PostgreSQL 15 cluster, the benchmark's other side and a test oracle) and
//! `workload` (the SQL of the source texts' workloads).
#![forbid(unsafe_code)]

pub mod postgres;
pub mod workload;
