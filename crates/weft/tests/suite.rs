//! weft's end-to-end tests, one module per area, in one test binary so that it is linked
//! once (each binary links the whole engine) and its tests share the test threads. The
//! PostgreSQL oracle tests compare with PostgreSQL 15; `oracle` is what they share.
//!
//! Run one area with its module path: `cargo test --release -p weft --test suite pg_oracle_sort::`.

mod oracle;

mod cli;
mod copy_stdio;
mod describe_psql;
mod describe_wire;
mod explain_psql;
mod hash_join_keys;
mod kill9_durability;
mod kill9_index;
mod kill9_txn;
mod pg_oracle;
mod pg_oracle_aggregates;
mod pg_oracle_arrays;
mod pg_oracle_catalog;
mod pg_oracle_constraints;
mod pg_oracle_datetime;
mod pg_oracle_timezone;
mod pg_oracle_ddl;
mod pg_oracle_functions;
mod pg_oracle_grouping_sets;
mod pg_oracle_index;
mod pg_oracle_index_expr;
mod pg_oracle_join;
mod pg_oracle_keyed_subplan;
mod pg_oracle_lateral;
mod pg_oracle_modify;
mod pg_oracle_numeric_special;
mod pg_oracle_ordered_set;
mod pg_oracle_param_index;
mod pg_oracle_recursive;
mod pg_oracle_returning;
mod pg_oracle_sort;
mod pg_oracle_sql;
mod pg_oracle_sql_gaps;
mod pg_oracle_sublink;
mod pg_oracle_txn;
mod pg_oracle_typmod;
mod pg_oracle_views;
mod pg_oracle_window;
mod pg_oracle_with_ties;
mod postgres_harness;
mod progress_bar;
mod server;
