//! weft-sql's integration tests, one module per area, in one test binary so that the engine
//! is linked once and the tests share the test threads.
//!
//! Run one area with its module path: `cargo test --release -p weft-sql --test suite vacuum::`.

mod common;

mod alter_table;
mod catalog_describe;
mod database;
mod dml_concurrency;
mod explain;
mod hash_join;
mod index_expr;
mod index_scan;
mod indexes;
mod join_plans;
mod slt;
mod topn_zone_maps;
mod temp_tables;
mod transactions;
mod upsert_model;
mod vacuum;
