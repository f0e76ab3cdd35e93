//! The embedding API: open a [`Database`], make [`Session`]s, run statements.

use weft_common::{DataType, Datum};

pub use crate::database::Database;
pub use crate::session::{CancelHandle, ProgressHandle, Session};

/// A column of a result set.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnInfo {
    pub name: String,
    pub data_type: DataType,
    /// The modifier PostgreSQL's `exprTypmod` finds for the column (a cast to
    /// `numeric(6,2)`, a column so declared): CREATE TABLE AS declares its column with it.
    pub type_modifier: Option<weft_common::TypeModifier>,
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
    /// The session's time zone when the statement ran: `timestamptz` values print in it
    /// (`Datum::to_pg_text` on the session's thread does; other threads use
    /// `to_pg_text_in`).
    pub time_zone: weft_common::timezone::TimeZone,
    /// The rows went to the [`RowSink`] of [`Session::execute_streaming`] as they were
    /// produced: `rows` is empty and `tag` counts them.
    pub streamed: bool,
}

/// Where [`Session::execute_streaming`] sends a query's result as it is produced.
pub trait RowSink: Send {
    /// The result's columns, before its first row.
    fn columns(&mut self, columns: &[ColumnInfo]) -> weft_common::Result<()>;

    /// One row; an error (the client went away) stops the query.
    fn row(&mut self, row: Vec<Datum>) -> weft_common::Result<()>;
}

impl QueryResult {
    pub fn command(tag: impl Into<String>) -> QueryResult {
        QueryResult { tag: tag.into(), ..QueryResult::default() }
    }

    /// A command's result with the NOTICE / INFO lines it raised.
    pub fn command_with_notices(tag: impl Into<String>, notices: Vec<String>) -> QueryResult {
        QueryResult { tag: tag.into(), notices, ..QueryResult::default() }
    }

    pub fn rows(columns: Vec<ColumnInfo>, rows: Vec<Vec<Datum>>, tag: impl Into<String>) -> QueryResult {
        QueryResult { columns, rows, tag: tag.into(), returns_rows: true, ..QueryResult::default() }
    }
}

/// A line of `\d`, `\dt`, `\di` and their `+` forms.
#[derive(Clone, Debug)]
pub struct RelationInfo {
    pub name: String,
    /// "table", "index", "sequence" or "view".
    pub kind: String,
    /// For an index: its table.
    pub table: Option<String>,
    /// Bytes of the relation's file (whole 8 KiB blocks): the `Size` column of `\d+`.
    pub size_bytes: u64,
}

/// What `\d NAME` (and `\d+ NAME`) prints.
#[derive(Clone, Debug)]
pub struct RelationDescription {
    pub name: String,
    /// "table", "index" or "sequence".
    pub kind: String,
    /// (column name, type name as `format_type` prints it, nullable); for an index, its key
    /// columns in key order, then its INCLUDE columns, the flag telling keys (true) apart.
    pub columns: Vec<(String, String, bool)>,
    /// Per column, `\d+`'s Storage (`pg_type.typstorage`): `plain` (fixed width), `main`
    /// (numeric) or `extended` (text).
    pub storage: Vec<String>,
    /// For a table, per column, its default as `\d`'s Default column prints it. Empty for an
    /// index.
    pub defaults: Vec<Option<String>>,
    /// For a sequence, psql's one row: Type, Start, Minimum, Maximum, Increment, Cycles?,
    /// Cache. Empty for a table or an index.
    pub sequence: Vec<String>,
    /// For an index, per key column, the Definition column: the column name as
    /// `pg_get_indexdef(index, n, true)` prints it (quoted when it must be). Empty for a table.
    pub definitions: Vec<String>,
    /// Footer lines as psql prints them: a table's `Indexes:` section, an index's
    /// `btree, for table "public.t"`.
    pub footer: Vec<String>,
    /// Footer lines that only `\d+` adds after `footer`: `Access method: heap` for a table,
    /// then `Options: ...` when a table or an index has storage parameters.
    pub verbose_footer: Vec<String>,
}
