//! A session: one connection's settings, random state and cancel flag; statement dispatch.

use std::sync::Arc;

use parking_lot::Mutex;
use sqlparser::ast::Statement;
use weft_common::parallel::CancelToken;
use weft_common::progress::{IndexBuildProgress, ProgressSnapshot};
use weft_common::{Error, Result, SqlState};
use weft_exec::expr::EvalContext;
use weft_exec::PipelineStats;

use crate::api::{QueryResult, RelationDescription, RelationInfo};
use crate::database::Database;
use crate::settings::Settings;
use crate::statements;

pub struct Session {
    pub(crate) db: Arc<Database>,
    pub(crate) settings: Settings,
    pub(crate) eval: EvalContext,
    cancel: Arc<Mutex<CancelToken>>,
    /// Pipelines of the last SELECT: participants and how their time overlapped.
    pub(crate) last_pipeline_stats: Vec<PipelineStats>,
    /// NOTICE / LOG lines raised by the running statement's execution (`trace_sort`),
    /// handed to its result.
    pub(crate) pending_notices: Mutex<Vec<String>>,
    /// Sorts of the last statement that ran a plan (SELECT, CREATE TABLE AS, INSERT).
    pub(crate) last_sort_reports: Mutex<Vec<weft_exec::SortReport>>,
    /// What the last CREATE INDEX / REINDEX build did.
    pub(crate) last_index_build: Mutex<Option<weft_access::index_build::IndexBuildReport>>,
    /// Where the next SELECT sends its rows (`execute_streaming`).
    pub(crate) row_sink: Option<Box<dyn crate::api::RowSink>>,
    /// The running maintenance statement's progress (CREATE INDEX, REINDEX), if any.
    pub(crate) progress: ProgressHandle,
    /// The open transaction block, if any (`transaction.rs`).
    pub(crate) block: Mutex<Option<crate::transaction::Block>>,
    /// The session's number among the database's sessions, as `pg_backend_pid()` gives it.
    backend_pid: i32,
    /// The temporary tables this session created (name, oid), dropped when it ends.
    pub(crate) temp_tables: Mutex<Vec<(String, u32)>>,
    /// The statements PREPARE kept, by name (`prepared.rs`).
    pub(crate) prepared: std::collections::HashMap<String, crate::prepared::Prepared>,
    /// The open cursors by name (`cursors.rs`).
    pub(crate) cursors: std::collections::HashMap<String, crate::cursors::Cursor>,
}

impl Drop for Session {
    /// A session that goes away inside a block rolls it back, as a closed connection does.
    fn drop(&mut self) {
        self.abandon_block();
        // A failure here leaves the tables to the next start-up, which forgets them.
        let _ = crate::statements::drop_temp_tables(self);
    }
}

/// Reads the progress of the statement a session is running, from another thread (the
/// shell's progress bar). `None` between statements and for statements without progress.
#[derive(Clone)]
pub struct ProgressHandle {
    current: Arc<Mutex<Option<Arc<IndexBuildProgress>>>>,
    /// Where the database lists every session's running build (`pg_stat_progress_create_index`).
    registry: Arc<ProgressRegistry>,
    backend_pid: i32,
}

impl ProgressHandle {
    pub fn current(&self) -> Option<ProgressSnapshot> {
        self.current.lock().as_ref().map(|p| p.snapshot())
    }

    /// Publish `progress` of building index `index_oid` on table `table_oid`, to this
    /// session's handle and to the database's registry, until the guard is dropped.
    pub(crate) fn publish(&self, progress: Arc<IndexBuildProgress>, table_oid: u32, index_oid: u32) -> ProgressGuard<'_> {
        *self.current.lock() = Some(progress.clone());
        self.registry.builds.lock().insert(self.backend_pid, RunningBuild { progress, table_oid, index_oid });
        ProgressGuard { handle: self }
    }
}

pub(crate) struct ProgressGuard<'a> {
    handle: &'a ProgressHandle,
}

impl Drop for ProgressGuard<'_> {
    fn drop(&mut self) {
        *self.handle.current.lock() = None;
        self.handle.registry.builds.lock().remove(&self.handle.backend_pid);
    }
}

/// The index builds running in every session of a database, by backend pid: what
/// `pg_stat_progress_create_index` shows to any session.
#[derive(Default)]
pub(crate) struct ProgressRegistry {
    builds: Mutex<std::collections::BTreeMap<i32, RunningBuild>>,
}

#[derive(Clone)]
pub(crate) struct RunningBuild {
    pub progress: Arc<IndexBuildProgress>,
    pub table_oid: u32,
    pub index_oid: u32,
}

impl ProgressRegistry {
    /// The running builds, by backend pid, in pid order.
    pub(crate) fn running(&self) -> Vec<(i32, RunningBuild)> {
        self.builds.lock().iter().map(|(pid, build)| (*pid, build.clone())).collect()
    }
}

/// Cancels the statement a session is running, from another thread (Ctrl-C, a cancel
/// request on the wire). A cancel that arrives between statements is a no-op.
#[derive(Clone)]
pub struct CancelHandle {
    current: Arc<Mutex<CancelToken>>,
}

impl CancelHandle {
    pub fn cancel(&self) {
        self.current.lock().cancel();
    }
}

impl Database {
    pub fn session(self: &Arc<Self>) -> Session {
        let backend_pid = self.next_backend_pid.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Session {
            db: self.clone(),
            settings: self.startup_settings.clone(),
            eval: EvalContext::new().with_sequences(self.sequences.clone()).with_backend_pid(backend_pid),
            cancel: Arc::new(Mutex::new(CancelToken::new())),
            last_pipeline_stats: Vec::new(),
            pending_notices: Mutex::new(Vec::new()),
            last_sort_reports: Mutex::new(Vec::new()),
            progress: ProgressHandle { current: Arc::default(), registry: self.progress.clone(), backend_pid },
            backend_pid,
            last_index_build: Mutex::new(None),
            row_sink: None,
            block: Mutex::new(None),
            temp_tables: Mutex::new(Vec::new()),
            prepared: Default::default(),
            cursors: Default::default(),
        }
    }
}

/// A caught panic as an internal error.
pub(crate) fn panic_error(panic: Box<dyn std::any::Any + Send>) -> Error {
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown".into());
    Error::internal(format!("internal error: {message}"))
}

impl Session {
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// The session's number, unique among the database's sessions: `pg_backend_pid()`, and
    /// the process id a wire protocol client is told.
    pub fn backend_pid(&self) -> i32 {
        self.backend_pid
    }

    /// Run SQL text holding one statement (or several separated by `;`, in which case the
    /// result of the last is returned). An empty string gives an empty result. Each
    /// statement commits on its own unless a transaction block is open (`BEGIN`); an error
    /// inside a block puts it in the failed state.
    /// An error found while reading the text points into it ([`Error::position`]).
    pub fn execute(&mut self, sql: &str) -> Result<QueryResult> {
        self.execute_text(sql, None).map_err(|e| e.located_in(sql))
    }

    /// [`Session::execute`] with a client that moves the data of `COPY ... FROM STDIN`
    /// and `COPY ... TO STDOUT` (without one, they fail with 0A000).
    pub fn execute_with_copy(&mut self, sql: &str, client: &mut dyn crate::copy::CopyClient) -> Result<QueryResult> {
        self.execute_text(sql, Some(client)).map_err(|e| e.located_in(sql))
    }

    /// [`Session::execute`] for one statement whose rows, when it is a query, go to
    /// `sink` as they are produced (the result then has none, and `streamed` set): a
    /// server sends a big result without holding all of it.
    pub fn execute_streaming(&mut self, sql: &str, sink: Box<dyn crate::api::RowSink>) -> Result<QueryResult> {
        self.with_row_sink(sink, |session| session.execute(sql))
    }

    /// Run `statement` (one statement, e.g. [`Session::execute_with_typed_params`]) with
    /// `sink` taking a query's rows as [`Session::execute_streaming`] does.
    pub fn with_row_sink<R>(&mut self, sink: Box<dyn crate::api::RowSink>, statement: impl FnOnce(&mut Session) -> R) -> R {
        self.row_sink = Some(sink);
        let outcome = statement(self);
        self.row_sink = None;
        outcome
    }

    fn execute_text(&mut self, sql: &str, mut copy: Option<&mut dyn crate::copy::CopyClient>) -> Result<QueryResult> {
        // sqlparser does not know CLUSTER, REINDEX or MOVE, and reads VACUUM in Redshift's form only.
        let token = CancelToken::new();
        *self.cancel.lock() = token.clone();
        let vacuum = crate::vacuum::is_vacuum(sql);
        let cluster = crate::cluster::is_cluster(sql);
        let reindex = crate::indexes::is_reindex(sql);
        let fetch = crate::cursors::is_fetch_or_move(sql);
        let alter_cluster = crate::cluster::may_be_alter_table_cluster(sql);
        let analyze = crate::analyze::is_multi_table_analyze(sql);
        if vacuum || cluster || reindex || fetch || alter_cluster || analyze || crate::alter_table::is_text_statement(sql) {
            self.check_not_failed()?;
            let outcome = if vacuum {
                Some(crate::vacuum::vacuum(self, sql, &token))
            } else if analyze {
                crate::analyze::try_analyze_text(self, sql, &token)
            } else if cluster {
                Some(crate::cluster::cluster(self, sql, &token))
            } else if reindex {
                crate::indexes::try_reindex(self, sql, &token)
            } else if fetch {
                crate::cursors::fetch_text(self, sql)
            } else if alter_cluster {
                crate::cluster::alter_table_cluster(self, sql).or_else(|| crate::alter_table::try_text_statement(self, sql))
            } else {
                crate::alter_table::try_text_statement(self, sql)
            };
            if let Some(outcome) = outcome {
                let mut result = self.after_statement(outcome)?;
                result.notices.splice(0..0, self.pending_notices.lock().drain(..));
                return Ok(result);
            }
        }
        let statements = crate::parse::parse_statements(sql);
        let statements = self.after_statement(statements)?;
        let mut last = QueryResult::command("");
        let mut notices = Vec::new();
        for statement in &statements {
            let token = CancelToken::new();
            *self.cancel.lock() = token.clone();
            // now() is read afresh for each statement.
            self.eval.clock.reset();
            // The statement reads and prints timestamptz in the session's zone, also where
            // it is planned (constant folding) and in its parallel workers.
            weft_common::timezone::set_current(self.time_zone());
            let mut outcome = match crate::transaction::control(self, statement) {
                Some(outcome) => outcome,
                None => {
                    let copy = copy.as_mut().map(|client| &mut **client as &mut dyn crate::copy::CopyClient);
                    self.check_not_failed().and_then(|()| self.execute_statement(statement, &token, copy))
                }
            };
            // A statement that moved a sequence without committing anything (a SELECT of
            // nextval) commits nothing but the sequences' values, so that none is reused.
            if self.db.sequences.moved() {
                if let Err(e) = self.db.record_sequences() {
                    outcome = outcome.and(Err(e));
                }
            }
            // Execution notices come first: they were raised before the statement's own.
            notices.append(&mut self.pending_notices.lock());
            let mut result = self.after_statement(outcome)?;
            result.time_zone = weft_common::timezone::current();
            notices.append(&mut result.notices);
            last = result;
        }
        last.notices = notices;
        Ok(last)
    }

    /// The session's `TimeZone` setting as a zone.
    pub fn time_zone(&self) -> weft_common::timezone::TimeZone {
        weft_common::timezone::from_setting_name(&self.settings.text("TimeZone"))
    }

    /// An error fails the open transaction block, if any.
    fn after_statement<T>(&self, outcome: Result<T>) -> Result<T> {
        if outcome.is_err() {
            self.fail_block();
        }
        outcome
    }

    /// The cancel token of the running statement.
    pub(crate) fn current_cancel_token(&self) -> CancelToken {
        self.cancel.lock().clone()
    }

    /// `lock_timeout`: how long a writer waits for the database's write lock (none: until
    /// canceled).
    pub(crate) fn lock_timeout(&self) -> Option<std::time::Duration> {
        let ms = self.settings.milliseconds("lock_timeout");
        (ms > 0).then(|| std::time::Duration::from_millis(ms as u64))
    }

    fn execute_statement(&mut self, statement: &Statement, cancel: &CancelToken, copy: Option<&mut dyn crate::copy::CopyClient>) -> Result<QueryResult> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| statements::execute(self, statement, cancel, copy)))
            .unwrap_or_else(|panic| Err(panic_error(panic)))
    }

    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle { current: self.cancel.clone() }
    }

    /// What the last CREATE INDEX / REINDEX of this session did (the benchmark reports it).
    pub fn last_index_build(&self) -> Option<weft_access::index_build::IndexBuildReport> {
        self.last_index_build.lock().clone()
    }

    /// Remember the last index a statement built, if it built any (a statement that built
    /// none leaves the previous report).
    pub(crate) fn note_index_build(&self, report: Option<weft_access::index_build::IndexBuildReport>) {
        if report.is_some() {
            *self.last_index_build.lock() = report;
        }
    }

    /// A handle through which another thread can follow a long statement's progress.
    pub fn progress_handle(&self) -> ProgressHandle {
        self.progress.clone()
    }

    /// How the pipelines of the last SELECT used their participants.
    pub fn last_pipeline_stats(&self) -> &[PipelineStats] {
        &self.last_pipeline_stats
    }

    /// What the sorts of the last SELECT / CREATE TABLE AS / INSERT did.
    pub fn last_sort_reports(&self) -> Vec<weft_exec::SortReport> {
        self.last_sort_reports.lock().clone()
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The tables, indexes, sequences and views for `\d`, `\dt`, `\di`, `\ds` and `\dv` (and their `+` forms), sorted by
    /// name (bytewise, as PostgreSQL sorts `name`).
    pub fn list_relations(&self) -> Vec<RelationInfo> {
        let catalog = self.catalog();
        let tables = catalog.tables.values().map(|t| RelationInfo {
            name: t.name.clone(),
            kind: "table".into(),
            table: None,
            size_bytes: self.relation_file_bytes(t.locator()),
        });
        let indexes = catalog.indexes.values().map(|i| RelationInfo {
            name: i.name.clone(),
            kind: "index".into(),
            table: Some(i.table.clone()),
            size_bytes: self.relation_file_bytes(i.locator()),
        });
        // A sequence's state lives in the catalog, not in a relation file of its own.
        let sequences = catalog.sequences.values().map(|s| RelationInfo { name: s.name.clone(), kind: "sequence".into(), table: None, size_bytes: 0 });
        let views = catalog.views.values().map(|v| RelationInfo { name: v.name.clone(), kind: "view".into(), table: None, size_bytes: 0 });
        let mut out: Vec<RelationInfo> = tables.chain(indexes).chain(sequences).chain(views).collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// `\d NAME` (NAME exact, as stored): a table with its indexes, an index, a sequence or
    /// a view.
    pub fn describe(&self, name: &str) -> Result<RelationDescription> {
        let catalog = self.catalog();
        if let Some(sequence) = catalog.sequences.get(name) {
            let footer = sequence.owned_by.iter().map(|(table, column)| format!("Owned by: public.{table}.{column}")).collect();
            return Ok(RelationDescription {
                name: sequence.name.clone(),
                kind: "sequence".into(),
                columns: Vec::new(),
                storage: Vec::new(),
                defaults: Vec::new(),
                sequence: vec![
                    sequence.data_type.name().to_string(),
                    sequence.start.to_string(),
                    sequence.min_value.to_string(),
                    sequence.max_value.to_string(),
                    sequence.increment.to_string(),
                    // weft's sequences neither cycle nor cache.
                    "no".to_string(),
                    "1".to_string(),
                ],
                definitions: Vec::new(),
                footer,
                verbose_footer: Vec::new(),
            });
        }
        let not_found = || Error::new(SqlState::UNDEFINED_TABLE, format!("Did not find any relation named \"{name}\"."));
        if let Some(index) = catalog.indexes.get(name) {
            let table = catalog.tables.get(&index.table).ok_or_else(not_found)?;
            // (name, type, storage, definition) of each column, as pg_attribute shows them.
            let attributes = crate::pg_catalog::index_attributes(table, index);
            let keys = attributes.iter().filter(|a| a.key).count();
            let key_columns: Vec<(String, String, String, String)> = attributes
                .into_iter()
                .map(|a| {
                    let type_name = a.modifier.map_or_else(|| a.data_type.name().to_string(), |m| m.format_type());
                    (a.name, type_name, storage_of(a.data_type).to_string(), a.definition)
                })
                .collect();
            let kind = match index.constraint {
                Some(weft_access::IndexConstraint::PrimaryKey) => "primary key, btree",
                _ if index.unique => "unique, btree",
                _ => "btree",
            };
            let options = index_options(index);
            let mut footer = format!("{kind}, for table \"public.{}\"", table.name);
            if let Some(predicate) = &index.predicate_display {
                footer.push_str(&format!(", predicate ({predicate})"));
            }
            return Ok(RelationDescription {
                name: index.name.clone(),
                kind: "index".into(),
                // Key columns are never shown as nullable or not: psql has no such column for an index.
                columns: key_columns.iter().enumerate().map(|(i, c)| (c.0.clone(), c.1.clone(), i < keys)).collect(),
                storage: key_columns.iter().map(|c| c.2.clone()).collect(),
                defaults: Vec::new(),
                sequence: Vec::new(),
                definitions: key_columns.iter().map(|c| c.3.clone()).collect(),
                footer: vec![footer],
                verbose_footer: options_line(&options).into_iter().collect(),
            });
        }
        if let Some(view) = catalog.views.get(name) {
            // Its text as written, where psql prints PostgreSQL's deparsed query.
            return Ok(RelationDescription {
                name: view.name.clone(),
                kind: "view".into(),
                columns: view.columns.iter().map(|c| (c.name.clone(), c.type_name(), true)).collect(),
                storage: view.columns.iter().map(|c| storage_of(c.data_type).to_string()).collect(),
                defaults: Vec::new(),
                sequence: Vec::new(),
                definitions: Vec::new(),
                footer: Vec::new(),
                verbose_footer: vec!["View definition:".to_string(), format!(" {};", view.query.trim_end_matches([';', ' ']))],
            });
        }
        let table = catalog.tables.get(name).ok_or_else(not_found)?;
        let mut footer = Vec::new();
        // psql lists the primary key first, then by name.
        let mut indexes: Vec<_> = catalog.indexes_of(name).collect();
        indexes.sort_by_key(|i| i.constraint != Some(weft_access::IndexConstraint::PrimaryKey));
        if !indexes.is_empty() {
            footer.push("Indexes:".to_string());
            for index in indexes {
                footer.push(format!("    \"{}\" {}", index.name, index_definition(table, index)));
            }
        }
        footer.extend(crate::constraints::describe(&catalog, table));
        let mut verbose_footer = vec!["Access method: heap".to_string()];
        let table_options: Vec<(&str, String)> =
            table.parallel_workers.map(|n| ("parallel_workers", n.to_string())).into_iter().collect();
        verbose_footer.extend(options_line(&table_options));
        Ok(RelationDescription {
            name: table.name.clone(),
            kind: "table".into(),
            columns: table
                .columns
                .iter()
                .map(|c| (c.name.clone(), c.type_name(), !c.not_null))
                .collect(),
            storage: table.columns.iter().map(|c| storage_of(c.data_type).to_string()).collect(),
            defaults: table
                .columns
                .iter()
                .map(|c| c.default.as_deref().map(|d| crate::catalog_views::default_text(d, c.type_modifier)))
                .collect(),
            sequence: Vec::new(),
            definitions: Vec::new(),
            footer,
            verbose_footer,
        })
    }

    /// Bytes of a relation's main fork on disk (whole blocks), as `pg_table_size` would count
    /// them; 0 when the file cannot be read. Reads file metadata only: no file is opened and
    /// nothing is cached, so a relation dropped meanwhile costs nothing.
    fn relation_file_bytes(&self, rel: weft_storage::RelFileLocator) -> u64 {
        let path = self.db.pool.smgr().file_path(rel, weft_storage::ForkNumber::Main);
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        bytes / weft_storage::PAGE_SIZE as u64 * weft_storage::PAGE_SIZE as u64
    }
}

/// psql's `\d+` Storage of a column type (`pg_type.typstorage`): `plain` for fixed-width
/// types, `main` for numeric, `extended` for text.
fn storage_of(data_type: weft_common::DataType) -> &'static str {
    use weft_common::DataType;
    match data_type {
        DataType::Bool | DataType::Int4 | DataType::Int8 | DataType::Float8 => "plain",
        DataType::Date | DataType::Time | DataType::Timestamp | DataType::TimestampTz | DataType::Interval => "plain",
        DataType::Numeric => "main",
        DataType::Text | DataType::Array(_) => "extended",
    }
}

/// An index's storage parameters that differ from the defaults, in the order
/// `pg_get_indexdef` would print them. (A fill factor given explicitly as 90 is not told
/// apart from the default: the catalog keeps only the number.)
pub(crate) fn index_options(index: &weft_access::IndexMeta) -> Vec<(&'static str, String)> {
    let mut options = Vec::new();
    if index.fillfactor != crate::indexes::DEFAULT_FILLFACTOR {
        options.push(("fillfactor", index.fillfactor.to_string()));
    }
    if let Some(workers) = index.parallel_workers {
        options.push(("parallel_workers", workers.to_string()));
    }
    options
}

/// psql's `\d+` `Options: fillfactor=70, parallel_workers=1` line, if there are options.
fn options_line(options: &[(&str, String)]) -> Option<String> {
    (!options.is_empty()).then(|| {
        let items: Vec<String> = options.iter().map(|(name, value)| format!("{name}={value}")).collect();
        format!("Options: {}", items.join(", "))
    })
}

/// What psql's `\d` prints after an index's name: `UNIQUE, btree (a DESC, "Col B" NULLS
/// FIRST) WITH (fillfactor='70')`.
fn index_definition(table: &weft_access::TableMeta, index: &weft_access::IndexMeta) -> String {
    let unique = match index.constraint {
        Some(weft_access::IndexConstraint::PrimaryKey) => "PRIMARY KEY, ",
        Some(weft_access::IndexConstraint::Unique) => "UNIQUE CONSTRAINT, ",
        None if index.unique => "UNIQUE, ",
        None => "",
    };
    format!("{unique}{}", index_method_definition(table, index, true))
}

/// `pg_get_indexdef` from `USING` on: `btree (a DESC, "Col B" NULLS FIRST) WITH
/// (fillfactor='70')`. DESC and NULLS are printed only when they differ from the defaults
/// (ASC NULLS LAST, DESC NULLS FIRST). `pretty` is psql's form; without it expressions
/// keep all their parentheses, as `pg_indexes.indexdef` prints them.
pub(crate) fn index_method_definition(table: &weft_access::TableMeta, index: &weft_access::IndexMeta, pretty: bool) -> String {
    use crate::index_expr::{display, rebind, IndexClause};
    use weft_exec::expr::Expr;
    // The stored text bound again and printed in full, or the pretty form if it no longer binds.
    let full = |text: &str, clause: IndexClause| rebind(table, &index.name, text, clause).ok();
    let columns: Vec<String> = index
        .columns
        .iter()
        .map(|c| {
            let mut text = match index.expression_of(table, c.column) {
                Some(e) if !pretty => match full(&e.text, IndexClause::Expression) {
                    Some(bound @ (Expr::Function { .. } | Expr::Coalesce { .. })) => display(table, &bound),
                    Some(bound) => format!("({})", display(table, &bound)),
                    None => e.display.clone(),
                },
                Some(e) => e.display.clone(),
                None => crate::deparse::quote_identifier(&table.columns[c.column].name),
            };
            if let Some(opclass) = &c.opclass {
                text.push(' ');
                text.push_str(opclass);
            }
            if c.descending {
                text.push_str(" DESC");
            }
            match (c.descending, c.nulls_first) {
                (false, true) => text.push_str(" NULLS FIRST"),
                (true, false) => text.push_str(" NULLS LAST"),
                _ => {}
            }
            text
        })
        .collect();
    let options = index_options(index);
    let with = if options.is_empty() {
        String::new()
    } else {
        let items: Vec<String> = options.iter().map(|(name, value)| format!("{name}='{value}'")).collect();
        format!(" WITH ({})", items.join(", "))
    };
    let predicate = match (&index.predicate, &index.predicate_display) {
        (Some(text), _) if !pretty => match full(text, IndexClause::Predicate) {
            Some(bound) => format!(" WHERE {}", display(table, &bound)),
            None => format!(" WHERE ({})", index.predicate_display.as_deref().unwrap_or(text)),
        },
        (_, Some(p)) => format!(" WHERE {p}"),
        _ => String::new(),
    };
    let include = if index.include.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = index.include.iter().map(|&c| crate::deparse::quote_identifier(&table.columns[c].name)).collect();
        format!(" INCLUDE ({})", names.join(", "))
    };
    format!("btree ({}){include}{with}{predicate}", columns.join(", "))
}
