//! The embedding API: open a `Database`, make `Session`s, run statements.

use std::path::Path;
use std::sync::Arc;

use weft_common::{DataType, Datum, Error, Result};

/// One open data directory. Shared by every session of the process.
pub struct Database {
    _private: (),
}

/// A column of a result set.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnInfo {
    pub name: String,
    pub data_type: DataType,
}

/// What one statement produced.
#[derive(Clone, Debug, Default)]
pub struct QueryResult {
    /// Empty for statements that return no rows (but `SELECT` with zero rows still has columns).
    pub columns: Vec<ColumnInfo>,
    pub rows: Vec<Vec<Datum>>,
    /// The command tag as PostgreSQL sends it: `SELECT 3`, `INSERT 0 5`, `CREATE TABLE`, `SET`.
    pub tag: String,
    /// NOTICE / LOG lines produced while running (e.g. `trace_sort`), in order.
    pub notices: Vec<String>,
    /// True when the statement returns a result set (SELECT, SHOW, EXPLAIN), even if empty.
    pub returns_rows: bool,
}

/// A line of `\d`.
#[derive(Clone, Debug)]
pub struct RelationInfo {
    pub name: String,
    /// "table" or "index".
    pub kind: String,
}

/// What `\d NAME` prints.
#[derive(Clone, Debug)]
pub struct RelationDescription {
    pub name: String,
    pub kind: String,
    /// (column name, type name as `format_type` prints it, nullable)
    pub columns: Vec<(String, String, bool)>,
}

impl Database {
    /// Open (creating if needed) the data directory `dir`. `startup_settings` override
    /// `weft.conf` in that directory; settings such as `shared_buffers` can only be set here.
    pub fn open(dir: &Path, startup_settings: &[(String, String)]) -> Result<Arc<Database>> {
        let _ = (dir, startup_settings);
        Err(Error::not_supported("Database::open"))
    }

    pub fn session(self: &Arc<Self>) -> Session {
        Session { _private: () }
    }
}

/// One connection's state: settings, the random seed, the cancel flag.
pub struct Session {
    _private: (),
}

/// Cancels the statement a session is running, from another thread (Ctrl-C handler).
#[derive(Clone)]
pub struct CancelHandle {
    _private: (),
}

impl CancelHandle {
    pub fn cancel(&self) {}
}

impl Session {
    /// Run exactly one SQL statement (a trailing `;` is allowed).
    pub fn execute(&mut self, sql: &str) -> Result<QueryResult> {
        let _ = sql;
        Err(Error::not_supported("Session::execute"))
    }

    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle { _private: () }
    }

    /// The tables (and later indexes) for `\d`, sorted by name.
    pub fn list_relations(&self) -> Vec<RelationInfo> {
        Vec::new()
    }

    /// `\d NAME`; an error naming the relation when it does not exist.
    pub fn describe(&self, name: &str) -> Result<RelationDescription> {
        Err(Error::not_supported(format!("describe {name}")))
    }
}
