//! `weft serve`: the PostgreSQL wire protocol (v3) over TCP, on `pgwire` and tokio.
//!
//! One [`Database`] serves every connection; each connection has its own [`Session`],
//! created at start-up, whose statements run on tokio's blocking threads (the engine is
//! synchronous and runs its own parallel workers), one at a time per connection.
//!
//! - Start-up: no TLS (SSLRequest is answered `N`), trust authentication, any user and
//!   database name; the ParameterStatus messages psql reads (`server_version` etc.).
//! - Simple query: the text is split as the shell splits scripts (`script.rs`) and each
//!   statement runs in turn; the first error ends the query string. weft does not wrap a
//!   multi-statement string in one implicit transaction as PostgreSQL does: statements
//!   before the error stay committed.
//! - Extended query: parameters are substituted into the statement by the engine
//!   (`Session::execute_with_typed_params`); Describe plans the statement without running
//!   it (`Session::describe_with_params`). An Execute to a portal's end streams its rows.
//!   Results in text, or binary for every type but numeric (weft stores the others as
//!   PostgreSQL's binary form holds them).
//! - ReadyForQuery reports the session's transaction block: idle, open or failed.
//! - COPY FROM STDIN / TO STDOUT in the simple query protocol (`server_copy.rs`).
//! - CancelRequest cancels the running statement through the session's `CancelHandle`.
//! - A panic in a statement is an XX000 error to its client; the server goes on.

use std::collections::HashMap;
use std::fmt::Debug;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::sink::{Sink, SinkExt};
use futures::stream;
use pgwire::api::auth::{finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata, ServerParameterProvider, StartupHandler};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{send_ready_for_query, ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{DescribePortalResponse, DescribeStatementResponse, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::portal::PortalExecutionState;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{
    ClientInfo, ClientPortalStore, PgWireConnectionState, PgWireServerHandlers, PidSecretKeyGenerator, RandomPidSecretKeyGenerator, Type,
    DEFAULT_NAME, METADATA_APPLICATION_NAME, METADATA_USER,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
use pgwire::messages::extendedquery::{Execute, Sync as PgSync};
use pgwire::messages::response::{CommandComplete, EmptyQueryResponse, ErrorResponse, NoticeResponse, TransactionStatus};
use pgwire::messages::simplequery::Query;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use weft_common::types::ElemType;
use weft_common::{Cursor, DataType, Datum};
use weft_sql::{CancelHandle, ColumnInfo, Database, Error, QueryResult, Session, SqlState};

use crate::script::{split_script, ScriptItem};
use crate::server_rows::{ChannelSink, Streamed};

/// `weft serve`'s options.
pub struct ServeOptions {
    pub data_dir: String,
    pub listen: String,
    pub port: u16,
    pub settings: Vec<(String, String)>,
}

/// Run the server until SIGINT / SIGTERM; the exit status.
pub fn run(options: &ServeOptions) -> i32 {
    let database = match Database::open(Path::new(&options.data_dir), &options.settings) {
        Ok(database) => database,
        Err(error) => {
            eprintln!("weft: error: could not open data directory \"{}\": {}", options.data_dir, error.message);
            return 1;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("weft: error: could not start the server's runtime: {error}");
            return 1;
        }
    };
    let backend = Arc::new(Backend { database, keys: RandomPidSecretKeyGenerator::default(), connections: Mutex::default() });
    let status = runtime.block_on(serve(backend.clone(), options));
    // Running statements were canceled; connections still open are dropped with the
    // runtime, and their sessions roll back any open transaction block.
    runtime.shutdown_timeout(Duration::from_secs(10));
    drop(backend);
    status
}

async fn serve(backend: Arc<Backend>, options: &ServeOptions) -> i32 {
    let listener = match tokio::net::TcpListener::bind((options.listen.as_str(), options.port)).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("weft: error: could not listen on {}:{}: {error}", options.listen, options.port);
            return 1;
        }
    };
    let address = listener.local_addr().map_or_else(|_| format!("{}:{}", options.listen, options.port), |a| a.to_string());
    eprintln!("weft: listening on {address} (data directory \"{}\")", options.data_dir);
    let handlers = Arc::new(Handlers(backend.clone()));
    let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(signal) => signal,
        Err(error) => {
            eprintln!("weft: error: could not install the SIGTERM handler: {error}");
            return 1;
        }
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => {
                    let handlers = handlers.clone();
                    tokio::spawn(async move {
                        // A connection's I/O error ends that connection only.
                        let _ = pgwire::tokio::process_socket(socket, None, handlers).await;
                    });
                }
                Err(error) => {
                    eprintln!("weft: warning: accept failed: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
        }
    }
    eprintln!("weft: shutting down");
    backend.cancel_all();
    0
}

/// What every connection shares.
struct Backend {
    database: Arc<Database>,
    keys: RandomPidSecretKeyGenerator,
    /// The cancel handles of open connections by (process id, secret key).
    connections: Mutex<HashMap<(i32, Bytes), CancelHandle>>,
}

impl Backend {
    fn cancel_all(&self) {
        for handle in lock(&self.connections).values() {
            handle.cancel();
        }
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One connection's session, kept in the client's session extensions.
pub(crate) struct Connection {
    session: Arc<Mutex<Session>>,
    backend: Arc<Backend>,
    key: (i32, Bytes),
    /// A COPY FROM STDIN waiting for CopyData (`server_copy.rs`).
    pub(crate) copy_in: Mutex<Option<crate::server_copy::CopyIn>>,
    /// The `TimeZone` the client was last told of (ParameterStatus).
    reported_zone: Mutex<String>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        lock(&self.backend.connections).remove(&self.key);
    }
}

impl Connection {
    /// Run `f` on the session on a blocking thread; a panic becomes an XX000 error.
    async fn run<R: Send + 'static>(&self, f: impl FnOnce(&mut Session) -> weft_sql::Result<R> + Send + 'static) -> weft_sql::Result<R> {
        run_on_session(self.session.clone(), f).await
    }

    /// A ParameterStatus for `TimeZone` when a statement changed it (SET, RESET, a block's
    /// end undoing a SET), as PostgreSQL reports it.
    fn zone_change(&self) -> Option<PgWireBackendMessage> {
        let zone = lock(&self.session).time_zone().name().to_string();
        let mut reported = lock(&self.reported_zone);
        if *reported == zone {
            return None;
        }
        *reported = zone.clone();
        Some(PgWireBackendMessage::ParameterStatus(ParameterStatus::new("TimeZone".into(), zone)))
    }

    fn transaction_status(&self) -> TransactionStatus {
        let session = lock(&self.session);
        if session.in_failed_transaction_block() {
            TransactionStatus::Error
        } else if session.in_transaction_block() {
            TransactionStatus::Transaction
        } else {
            TransactionStatus::Idle
        }
    }
}

/// Run `f` on `session` on a blocking thread; a panic becomes an XX000 error. (A running
/// COPY FROM STDIN holds the session, not its connection, so that a connection closing
/// mid-COPY drops the sender of the COPY's data and the COPY fails.)
pub(crate) async fn run_on_session<R: Send + 'static>(
    session: Arc<Mutex<Session>>,
    f: impl FnOnce(&mut Session) -> weft_sql::Result<R> + Send + 'static,
) -> weft_sql::Result<R> {
    let task = tokio::task::spawn_blocking(move || {
        let mut session = lock(&session);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut session))).unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown".into());
            Err(Error::internal(format!("internal error: {message}")))
        })
    });
    task.await.unwrap_or_else(|e| Err(Error::internal(format!("internal error: {e}"))))
}

pub(crate) fn connection<C: ClientInfo + ?Sized>(client: &C) -> PgWireResult<Arc<Connection>> {
    client
        .session_extensions()
        .get::<Connection>()
        .ok_or_else(|| user_error(&Error::internal("connection has no session")))
}

/// Set the client's transaction status from its session's block.
pub(crate) fn sync_status<C: ClientInfo>(client: &mut C) -> TransactionStatus {
    let status = connection(client).map_or(TransactionStatus::Idle, |c| c.transaction_status());
    client.set_transaction_status(status);
    status
}

pub(crate) fn error_info(error: &Error) -> ErrorInfo {
    let mut info = ErrorInfo::new("ERROR".into(), error.sqlstate.0.into(), error.message.clone());
    info.detail = error.detail.clone();
    info.hint = error.hint.clone();
    info.position = error.position().map(|p| p.to_string());
    info.where_context = error.context.clone();
    info
}

/// An error of a statement that starts `offset` characters into the query string, with its
/// position counted from the string's start (none when the statement was not found there).
fn shift_position(mut error: Error, offset: Option<usize>) -> Error {
    error.cursor = match (error.position(), offset) {
        (Some(position), Some(offset)) => u32::try_from(offset).ok().and_then(|o| position.checked_add(o)).map(Cursor::Position),
        _ => None,
    };
    error
}

pub(crate) fn user_error(error: &Error) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(error)))
}

/// A notice of `QueryResult::notices` (`NOTICE:  text`, maybe with `DETAIL:` / `HINT:`
/// lines; a bare text is a NOTICE) as a NoticeResponse.
fn notice_response(notice: &str) -> NoticeResponse {
    const LEVELS: [&str; 5] = ["NOTICE", "WARNING", "INFO", "LOG", "DEBUG"];
    let (severity, rest) = LEVELS
        .iter()
        .find_map(|level| notice.strip_prefix(level).and_then(|r| r.strip_prefix(':')).map(|r| (*level, r.trim_start())))
        .unwrap_or(("NOTICE", notice));
    let mut message = Vec::new();
    let (mut detail, mut hint) = (None, None);
    for line in rest.lines() {
        if let Some(text) = line.strip_prefix("DETAIL:") {
            detail = Some(text.trim_start().to_string());
        } else if let Some(text) = line.strip_prefix("HINT:") {
            hint = Some(text.trim_start().to_string());
        } else {
            message.push(line);
        }
    }
    let code = if severity == "WARNING" { "01000" } else { "00000" };
    let mut info = ErrorInfo::new(severity.into(), code.into(), message.join("\n"));
    info.detail = detail;
    info.hint = hint;
    info.into()
}

/// PostgreSQL's type OID of a weft type.
fn type_of(data_type: DataType) -> Type {
    match data_type {
        DataType::Bool => Type::BOOL,
        DataType::Int4 => Type::INT4,
        DataType::Int8 => Type::INT8,
        DataType::Float8 => Type::FLOAT8,
        DataType::Numeric => Type::NUMERIC,
        DataType::Text => Type::TEXT,
        DataType::Date => Type::DATE,
        DataType::Time => Type::TIME,
        DataType::Timestamp => Type::TIMESTAMP,
        DataType::TimestampTz => Type::TIMESTAMPTZ,
        DataType::Interval => Type::INTERVAL,
        DataType::Array(elem) => match elem {
            ElemType::Bool => Type::BOOL_ARRAY,
            ElemType::Int4 => Type::INT4_ARRAY,
            ElemType::Int8 => Type::INT8_ARRAY,
            ElemType::Float8 => Type::FLOAT8_ARRAY,
            ElemType::Numeric => Type::NUMERIC_ARRAY,
            ElemType::Text => Type::TEXT_ARRAY,
            ElemType::Date => Type::DATE_ARRAY,
            ElemType::Time => Type::TIME_ARRAY,
            ElemType::Timestamp => Type::TIMESTAMP_ARRAY,
            ElemType::TimestampTz => Type::TIMESTAMPTZ_ARRAY,
            ElemType::Interval => Type::INTERVAL_ARRAY,
        },
    }
}

/// The weft type a declared parameter type is cast to; `None` leaves it untyped.
fn declared_type(oid: u32) -> Option<DataType> {
    Some(match oid {
        16 => DataType::Bool,
        21 | 23 => DataType::Int4,
        20 => DataType::Int8,
        700 | 701 => DataType::Float8,
        1700 => DataType::Numeric,
        25 | 1042 | 1043 | 19 => DataType::Text,
        1082 => DataType::Date,
        1083 => DataType::Time,
        1114 => DataType::Timestamp,
        1184 => DataType::TimestampTz,
        1186 => DataType::Interval,
        1000 => DataType::Array(ElemType::Bool),
        1005 | 1007 => DataType::Array(ElemType::Int4),
        1016 => DataType::Array(ElemType::Int8),
        1021 | 1022 => DataType::Array(ElemType::Float8),
        1231 => DataType::Array(ElemType::Numeric),
        1009 | 1014 | 1015 => DataType::Array(ElemType::Text),
        1182 => DataType::Array(ElemType::Date),
        1183 => DataType::Array(ElemType::Time),
        1115 => DataType::Array(ElemType::Timestamp),
        1185 => DataType::Array(ElemType::TimestampTz),
        1187 => DataType::Array(ElemType::Interval),
        _ => return None,
    })
}

/// pg_type.typlen.
fn type_size(data_type: DataType) -> i16 {
    match data_type {
        DataType::Bool => 1,
        DataType::Int4 | DataType::Date => 4,
        DataType::Int8 | DataType::Float8 | DataType::Time | DataType::Timestamp | DataType::TimestampTz => 8,
        DataType::Interval => 16,
        DataType::Numeric | DataType::Text | DataType::Array(_) => -1,
    }
}

/// Types whose binary form is sent: those stored as PostgreSQL's binary form holds them
/// (integers, float8, bool, text; dates, times and intervals in the same units and epoch,
/// infinities included). Not numeric, not arrays.
fn binary_supported(data_type: DataType) -> bool {
    data_type != DataType::Numeric && !data_type.is_array()
}

fn row_description(columns: &[ColumnInfo], formats: &[FieldFormat]) -> RowDescription {
    let fields = columns
        .iter()
        .zip(formats)
        .map(|(column, format)| {
            FieldDescription::new(column.name.clone(), 0, 0, type_of(column.data_type).oid(), type_size(column.data_type), -1, format.value())
        })
        .collect();
    RowDescription::new(fields)
}

fn field_infos(columns: &[ColumnInfo], formats: &[FieldFormat]) -> Vec<FieldInfo> {
    columns
        .iter()
        .zip(formats)
        .map(|(column, format)| {
            FieldInfo::new(column.name.clone(), None, None, type_of(column.data_type), *format).with_type_size(type_size(column.data_type))
        })
        .collect()
}

/// The result formats a client asked for; binary only where supported (else 0A000).
pub(crate) fn result_formats(columns: &[ColumnInfo], format: &Format) -> weft_sql::Result<Vec<FieldFormat>> {
    columns
        .iter()
        .enumerate()
        .map(|(i, column)| {
            let wanted = match format {
                Format::Individual(codes) if i >= codes.len() => FieldFormat::Text,
                _ => format.format_for(i),
            };
            if wanted == FieldFormat::Binary && !binary_supported(column.data_type) {
                return Err(Error::not_supported(format!(
                    "binary format for result column \"{}\" of type {} is not supported",
                    column.name,
                    column.data_type.name()
                )));
            }
            Ok(wanted)
        })
        .collect()
}

/// A row; a timestamptz prints in `zone`, the session's when the statement ran.
fn data_row(row: &[Datum], formats: &[FieldFormat], zone: &weft_common::timezone::TimeZone) -> DataRow {
    weft_common::timezone::with_zone(zone, || data_row_in_zone(row, formats))
}

fn data_row_in_zone(row: &[Datum], formats: &[FieldFormat]) -> DataRow {
    let mut data = BytesMut::new();
    crate::server_rows::encode_row(row, formats, &mut data);
    DataRow::new(data, row.len() as i16)
}

/// Start `statement` on the connection's session with a [`ChannelSink`] taking a query's
/// rows (`server_rows.rs`): they arrive on the receiver as they are produced, the
/// statement's outcome through the handle.
fn start_streaming(
    connection: &Connection,
    requested: Option<Format>,
    statement: impl FnOnce(&mut Session) -> weft_sql::Result<QueryResult> + Send + 'static,
) -> (tokio::sync::mpsc::Receiver<Streamed>, tokio::task::JoinHandle<weft_sql::Result<QueryResult>>) {
    let (sender, receiver) = tokio::sync::mpsc::channel::<Streamed>(4);
    let sink = Box::new(ChannelSink::new(sender, requested));
    let run = tokio::spawn(run_on_session(connection.session.clone(), move |session| session.with_row_sink(sink, statement)));
    (receiver, run)
}

/// Write what a statement started by [`start_streaming`] sends: a RowDescription when
/// `describe` (the simple protocol; a portal's columns were sent by Describe), then
/// the rows. Then its outcome. The receiver moves in, so a failed write drops it: the
/// statement stops at its next chunk instead of waiting for room in the channel.
async fn forward_streamed<C>(
    mut receiver: tokio::sync::mpsc::Receiver<Streamed>,
    run: tokio::task::JoinHandle<weft_sql::Result<QueryResult>>,
    client: &mut C,
    describe: bool,
) -> PgWireResult<weft_sql::Result<QueryResult>>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let forward = async move {
        let mut fields = 0i16;
        while let Some(message) = receiver.recv().await {
            match message {
                Streamed::Columns { columns, formats } => {
                    fields = columns.len() as i16;
                    if describe {
                        client.feed(PgWireBackendMessage::RowDescription(row_description(&columns, &formats))).await?;
                    }
                }
                Streamed::Rows { mut data, lengths } => {
                    for length in lengths {
                        client.feed(PgWireBackendMessage::DataRow(DataRow::new(data.split_to(length), fields))).await?;
                    }
                }
            }
        }
        Ok::<(), PgWireError>(())
    };
    let forwarded = forward.await;
    let outcome = run.await.unwrap_or_else(|e| Err(Error::internal(format!("internal error: {e}"))));
    forwarded?;
    Ok(outcome)
}

/// Run one statement of a simple query; a query's RowDescription and rows are sent as
/// they are produced, and its result says `streamed`.
async fn run_streaming<C>(connection: &Connection, client: &mut C, sql: String) -> PgWireResult<weft_sql::Result<QueryResult>>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let (receiver, run) = start_streaming(connection, None, move |session| session.execute(&sql));
    forward_streamed(receiver, run, client, true).await
}

/// Execute a portal that has not run yet, to its end (`max_rows` 0, what drivers send
/// outside cursors), sending a query's rows as they are produced. `None` when the
/// Execute is another kind, which pgwire's portal machinery serves (`do_query`).
async fn execute_portal_streaming<C>(client: &mut C, message: &Execute) -> Option<PgWireResult<()>>
where
    C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::PortalStore: PortalStore<Statement = Prepared>,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if message.max_rows != 0 || !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
        return None;
    }
    let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
    let Some(Entry::Value(portal)) = client.portal_store().get_portal(name) else {
        return None;
    };
    let state = portal.state();
    let mut state = state.lock().await;
    if !matches!(*state, PortalExecutionState::Initial) {
        return None;
    }
    // Executed once, whatever its outcome: a later Execute finds it finished.
    *state = PortalExecutionState::Finished;
    drop(state);
    client.set_state(PgWireConnectionState::QueryInProgress);
    let outcome = async {
        let connection = connection(client)?;
        let params = portal_parameters(&portal)?;
        let prepared = portal.statement.statement.clone();
        let statement = move |session: &mut Session| session.execute_with_typed_params(&prepared.sql, &params, &prepared.casts);
        let (receiver, run) = start_streaming(&connection, Some(portal.result_column_format.clone()), statement);
        let result = forward_streamed(receiver, run, client, false).await?.map_err(|e| user_error(&e))?;
        send_notices(client, &result).await?;
        if result.returns_rows && !result.streamed {
            let formats = result_formats(&result.columns, &portal.result_column_format).map_err(|e| user_error(&e))?;
            for row in &result.rows {
                client.feed(PgWireBackendMessage::DataRow(data_row(row, &formats, &result.time_zone))).await?;
            }
        }
        client.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(result.tag.clone()))).await?;
        if let Some(status) = connection.zone_change() {
            client.feed(status).await?;
        }
        Ok(())
    }
    .await;
    client.set_state(PgWireConnectionState::ReadyForQuery);
    Some(outcome)
}

/// A statement's command tag minus its row count, for portals (pgwire appends the count
/// of rows it sent): `INSERT 0 3` → `INSERT 0`.
fn tag_without_count(tag: &str) -> &str {
    match tag.rsplit_once(' ') {
        Some((head, count)) if count.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => tag,
    }
}

pub(crate) async fn send_notices<C>(client: &mut C, result: &QueryResult) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for notice in &result.notices {
        client.feed(PgWireBackendMessage::NoticeResponse(notice_response(notice))).await?;
    }
    Ok(())
}

/// A statement prepared by Parse.
#[derive(Clone, Debug)]
pub(crate) struct Prepared {
    sql: String,
    /// The type each parameter is sent as (declared, found from the statement, or text).
    wire_types: Vec<Type>,
    /// The type each parameter is cast to: those the client declared.
    casts: Vec<Option<DataType>>,
    /// The types declared or found (Describe plans with NULLs of these types).
    typed: Vec<Option<DataType>>,
}

/// A parameter of Bind as text (`None`: NULL), binary forms decoded by their type.
fn parameter_text(value: Option<&Bytes>, wire_type: &Type, binary: bool, index: usize) -> PgWireResult<Option<String>> {
    let Some(bytes) = value else { return Ok(None) };
    let invalid = || user_error(&Error::new(SqlState("22P03"), format!("incorrect binary data format in bind parameter {}", index + 1)));
    if !binary {
        return String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| user_error(&Error::new(SqlState("22021"), "invalid byte sequence for encoding \"UTF8\"")));
    }
    let fixed = |n: usize| -> PgWireResult<&[u8]> { (bytes.len() == n).then_some(&bytes[..]).ok_or_else(invalid) };
    let text = match wire_type.oid() {
        16 => (if fixed(1)?[0] != 0 { "t" } else { "f" }).to_string(),
        21 => i16::from_be_bytes(fixed(2)?.try_into().unwrap()).to_string(),
        23 => i32::from_be_bytes(fixed(4)?.try_into().unwrap()).to_string(),
        20 => i64::from_be_bytes(fixed(8)?.try_into().unwrap()).to_string(),
        700 => float_text(f32::from_be_bytes(fixed(4)?.try_into().unwrap()) as f64),
        701 => float_text(f64::from_be_bytes(fixed(8)?.try_into().unwrap())),
        25 | 1042 | 1043 | 19 | 705 => String::from_utf8(bytes.to_vec()).map_err(|_| invalid())?,
        // Dates and times as weft prints them (ISO), which it reads back exactly.
        1082 => text_of(Datum::Date(i32::from_be_bytes(fixed(4)?.try_into().unwrap()))),
        1083 => text_of(Datum::Time(i64::from_be_bytes(fixed(8)?.try_into().unwrap()))),
        1114 => text_of(Datum::Timestamp(i64::from_be_bytes(fixed(8)?.try_into().unwrap()))),
        // With its offset, so the session reads the same instant in any zone.
        1184 => weft_common::timezone::format_timestamptz(
            i64::from_be_bytes(fixed(8)?.try_into().unwrap()),
            &weft_common::timezone::TimeZone::utc(),
        ),
        1186 => {
            let b = fixed(16)?;
            let micros = i64::from_be_bytes(b[0..8].try_into().unwrap());
            let days = i32::from_be_bytes(b[8..12].try_into().unwrap());
            let months = i32::from_be_bytes(b[12..16].try_into().unwrap());
            text_of(Datum::Interval(weft_common::datetime::Interval::new(months, days, micros)))
        }
        _ => {
            return Err(user_error(&Error::not_supported(format!(
                "binary format for parameter ${} of type {} is not supported",
                index + 1,
                wire_type.name()
            ))))
        }
    };
    Ok(Some(text))
}

fn text_of(datum: Datum) -> String {
    datum.to_pg_text().unwrap_or_default()
}

/// A float as float8 input reads it back exactly.
fn float_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        (if v > 0.0 { "Infinity" } else { "-Infinity" }).into()
    } else {
        format!("{v:e}")
    }
}

fn portal_parameters(portal: &Portal<Prepared>) -> PgWireResult<Vec<Option<String>>> {
    let prepared = &portal.statement.statement;
    portal
        .parameters
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let binary = match &portal.parameter_format {
                Format::Individual(codes) if i >= codes.len() => false,
                format => format.is_binary(i),
            };
            parameter_text(value.as_ref(), prepared.wire_types.get(i).unwrap_or(&Type::TEXT), binary, i)
        })
        .collect()
}

pub(crate) struct Parser;

#[async_trait]
impl QueryParser for Parser {
    type Statement = Prepared;

    async fn parse_sql<C>(&self, client: &C, sql: &str, types: &[Option<Type>]) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let connection = connection(client)?;
        let text = sql.to_string();
        let found = connection.run(move |session| session.parameter_types(&text)).await.map_err(|e| user_error(&e))?;
        let count = found.len().max(types.len());
        let declared = |i: usize| types.get(i).cloned().flatten().filter(|t| *t != Type::UNKNOWN);
        let wire_types = (0..count)
            .map(|i| declared(i).or_else(|| found.get(i).copied().flatten().map(type_of)).unwrap_or(Type::TEXT))
            .collect();
        let casts: Vec<Option<DataType>> = (0..count).map(|i| declared(i).and_then(|t| declared_type(t.oid()))).collect();
        let typed = (0..count).map(|i| casts[i].or_else(|| found.get(i).copied().flatten())).collect();
        Ok(Some(Prepared { sql: sql.to_string(), wire_types, casts, typed }))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.wire_types.clone())
    }

    fn get_result_schema(&self, _stmt: &Prepared, _format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        // Describe is answered by `do_describe_*`, which can reach the session.
        Ok(Vec::new())
    }
}

struct ServerParameters {
    user: Option<String>,
    application_name: Option<String>,
}

impl ServerParameterProvider for ServerParameters {
    fn server_parameters<C: ClientInfo>(&self, _client: &C) -> Option<HashMap<String, String>> {
        let mut parameters: HashMap<String, String> = [
            ("server_version", "15.0 (weft)"),
            ("server_encoding", "UTF8"),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, MDY"),
            ("IntervalStyle", "postgres"),
            ("integer_datetimes", "on"),
            ("standard_conforming_strings", "on"),
            ("TimeZone", "UTC"),
            ("is_superuser", "on"),
            ("in_hot_standby", "off"),
            ("default_transaction_read_only", "off"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        if let Some(user) = &self.user {
            parameters.insert("session_authorization".into(), user.clone());
        }
        parameters.insert("application_name".into(), self.application_name.clone().unwrap_or_default());
        Some(parameters)
    }
}

/// Does `sql` begin, end or mark a transaction (`BEGIN`, `COMMIT`, `SAVEPOINT`, ...)?
fn is_transaction_control(sql: &str) -> bool {
    let first = sql.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("").to_ascii_lowercase();
    matches!(first.as_str(), "begin" | "start" | "commit" | "end" | "rollback" | "abort" | "savepoint" | "release" | "prepare")
}

/// The handlers of every connection: the backend behind an `Arc` a connection keeps.
pub(crate) struct Handlers(Arc<Backend>);

#[async_trait]
impl StartupHandler for Handlers {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // Trust: no password is asked for; any user and database name will do.
        let PgWireFrontendMessage::Startup(startup) = message else { return Ok(()) };
        protocol_negotiation(client, &startup).await?;
        save_startup_parameters_to_metadata(client, &startup);
        let session = self.0.database.session();
        // The process id a client is told is the session's number, which
        // `pg_backend_pid()` and `pg_stat_progress_create_index.pid` show too.
        let (_, secret_key) = self.0.keys.generate(client);
        let pid = session.backend_pid();
        client.set_pid_and_secret_key(pid, secret_key.clone());
        let key = (pid, secret_key.to_bytes());
        lock(&self.0.connections).insert(key.clone(), session.cancel_handle());
        client.session_extensions().insert(Connection {
            session: Arc::new(Mutex::new(session)),
            backend: self.0.clone(),
            key,
            copy_in: Mutex::new(None),
            reported_zone: Mutex::new("UTC".into()),
        });
        let parameters = ServerParameters {
            user: client.metadata().get(METADATA_USER).cloned(),
            application_name: client.metadata().get(METADATA_APPLICATION_NAME).cloned(),
        };
        finish_authentication(client, &parameters).await
    }
}

#[async_trait]
impl CancelHandler for Handlers {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let handle = lock(&self.0.connections).get(&(request.pid, request.secret_key.to_bytes())).cloned();
        if let Some(handle) = handle {
            handle.cancel();
        }
    }
}

#[async_trait]
impl SimpleQueryHandler for Handlers {
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let connection = connection(client)?;
        client.set_state(PgWireConnectionState::QueryInProgress);
        let items = split_script(&query.query);
        if items.is_empty() {
            client.feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())).await?;
        }
        // Several statements run as one transaction, an implicit block, as in PostgreSQL:
        // an error undoes the ones before it. Not when the string manages transactions
        // itself or a block is already open.
        let manages_transactions = items.iter().any(|item| matches!(item, ScriptItem::Statement { sql, .. } if is_transaction_control(sql)));
        let implicit_block = items.len() > 1
            && !manages_transactions
            && connection
                .run(|session| Ok(!session.in_transaction_block() && session.execute("BEGIN").is_ok()))
                .await
                .unwrap_or(false);
        let mut failed = false;
        let mut searched_to = 0; // bytes of the query string before the statement to find
        let alone = items.len() == 1;
        for item in items {
            let sql = match item {
                ScriptItem::Statement { sql, .. } => sql,
                ScriptItem::Meta { .. } => {
                    let error = Error::syntax("syntax error at or near \"\\\"");
                    client.feed(PgWireBackendMessage::ErrorResponse(ErrorResponse::from(error_info(&error)))).await?;
                    failed = true;
                    break;
                }
            };
            // The statement's place in the string, so that an error's position counts from
            // the string's start as the protocol wants.
            let offset = query.query[searched_to..].find(sql.as_str()).map(|at| {
                searched_to += at + sql.len();
                query.query[..searched_to - sql.len()].chars().count()
            });
            let outcome = if crate::server_copy::is_copy(&sql) {
                match crate::server_copy::run_copy(client, connection.session.clone(), sql, alone).await? {
                    crate::server_copy::CopyStep::Finished(outcome) => outcome,
                    // The COPY reads CopyData next; its end sends the rest (`on_copy_done`).
                    crate::server_copy::CopyStep::AwaitingData => return Ok(()),
                }
            } else {
                run_streaming(&connection, client, sql).await?
            };
            match outcome.map_err(|e| shift_position(e, offset)) {
                Ok(result) => {
                    send_notices(client, &result).await?;
                    if result.returns_rows && !result.streamed {
                        let formats = vec![FieldFormat::Text; result.columns.len()];
                        client.feed(PgWireBackendMessage::RowDescription(row_description(&result.columns, &formats))).await?;
                        for row in &result.rows {
                            client.feed(PgWireBackendMessage::DataRow(data_row(row, &formats, &result.time_zone))).await?;
                        }
                    }
                    client.feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(result.tag.clone()))).await?;
                    if let Some(status) = connection.zone_change() {
                        client.feed(status).await?;
                    }
                }
                Err(error) => {
                    client.feed(PgWireBackendMessage::ErrorResponse(ErrorResponse::from(error_info(&error)))).await?;
                    failed = true;
                    break;
                }
            }
        }
        if implicit_block {
            let end = if failed { "ROLLBACK" } else { "COMMIT" };
            if let Err(error) = connection.run(move |session| session.execute(end)).await {
                client.feed(PgWireBackendMessage::ErrorResponse(ErrorResponse::from(error_info(&error)))).await?;
            }
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        let status = sync_status(client);
        send_ready_for_query(client, status).await
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // `on_query` does the work.
        Ok(Vec::new())
    }
}

#[async_trait]
impl ExtendedQueryHandler for Handlers {
    type Statement = Prepared;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        Arc::new(Parser)
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let outcome = match execute_portal_streaming(client, &message).await {
            Some(outcome) => outcome,
            None => self._on_execute(client, message).await,
        };
        sync_status(client);
        outcome
    }

    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        client.portal_store().rm_portal(DEFAULT_NAME);
        let status = sync_status(client);
        send_ready_for_query(client, status).await?;
        client.flush().await?;
        Ok(())
    }

    async fn do_describe_statement<C>(&self, client: &mut C, target: &StoredStatement<Prepared>) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let connection = connection(client)?;
        let prepared = target.statement.clone();
        // Parameters are NULL, typed as found, so that `$1::int + 1` plans as integer.
        let nulls = vec![None; prepared.wire_types.len()];
        let (sql, types) = (prepared.sql.clone(), prepared.typed.clone());
        let columns = connection.run(move |session| session.describe_with_params(&sql, &nulls, &types)).await.map_err(|e| user_error(&e))?;
        let columns = columns.unwrap_or_default();
        let formats = vec![FieldFormat::Text; columns.len()];
        Ok(DescribeStatementResponse::new(prepared.wire_types, field_infos(&columns, &formats)))
    }

    async fn do_describe_portal<C>(&self, client: &mut C, portal: &Portal<Prepared>) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let connection = connection(client)?;
        let params = portal_parameters(portal)?;
        let prepared = portal.statement.statement.clone();
        let columns = connection
            .run(move |session| session.describe_with_params(&prepared.sql, &params, &prepared.casts))
            .await
            .map_err(|e| user_error(&e))?
            .unwrap_or_default();
        let formats = result_formats(&columns, &portal.result_column_format).map_err(|e| user_error(&e))?;
        Ok(DescribePortalResponse::new(field_infos(&columns, &formats)))
    }

    async fn do_query<C>(&self, client: &mut C, portal: &Portal<Prepared>, _max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let connection = connection(client)?;
        let params = portal_parameters(portal)?;
        let prepared = portal.statement.statement.clone();
        let result = connection
            .run(move |session| session.execute_with_typed_params(&prepared.sql, &params, &prepared.casts))
            .await
            .map_err(|e| user_error(&e))?;
        send_notices(client, &result).await?;
        if let Some(status) = connection.zone_change() {
            client.feed(status).await?;
        }
        if !result.returns_rows {
            return Ok(Response::Execution(Tag::new(&result.tag)));
        }
        let formats = result_formats(&result.columns, &portal.result_column_format).map_err(|e| user_error(&e))?;
        let schema = Arc::new(field_infos(&result.columns, &formats));
        let rows: Vec<PgWireResult<DataRow>> = result.rows.iter().map(|row| Ok(data_row(row, &formats, &result.time_zone))).collect();
        let mut response = QueryResponse::new(schema, stream::iter(rows));
        response.set_command_tag(tag_without_count(&result.tag));
        Ok(Response::Query(response))
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::new(Handlers(self.0.clone()))
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        Arc::new(Handlers(self.0.clone()))
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::new(Handlers(self.0.clone()))
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        Arc::new(Handlers(self.0.clone()))
    }

    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        Arc::new(Handlers(self.0.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_keep_their_level_and_detail() {
        let notice = notice_response("WARNING:  careful\nDETAIL:  why\nHINT:  how");
        let fields: HashMap<u8, String> = notice.fields.into_iter().collect();
        assert_eq!(fields[&b'S'], "WARNING");
        assert_eq!(fields[&b'M'], "careful");
        assert_eq!(fields[&b'D'], "why");
        assert_eq!(fields[&b'H'], "how");
        let bare: HashMap<u8, String> = notice_response("x").fields.into_iter().collect();
        assert_eq!(bare[&b'S'], "NOTICE");
    }

    #[test]
    fn a_panic_is_an_internal_error_and_the_session_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let database = Database::open(dir.path(), &[]).unwrap();
        let backend = Arc::new(Backend { database: database.clone(), keys: RandomPidSecretKeyGenerator::default(), connections: Mutex::default() });
        let connection = Connection {
            session: Arc::new(Mutex::new(database.session())),
            backend,
            key: (1, Bytes::new()),
            copy_in: Mutex::new(None),
            reported_zone: Mutex::new("UTC".into()),
        };
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let error = runtime.block_on(connection.run(|_| -> weft_sql::Result<()> { panic!("boom") })).unwrap_err();
        assert_eq!(error.sqlstate, SqlState::INTERNAL_ERROR);
        assert_eq!(error.message, "internal error: boom");
        let result = runtime.block_on(connection.run(|session| session.execute("SELECT 1"))).unwrap();
        assert_eq!(result.rows.len(), 1);
    }

    #[test]
    fn binary_parameters_become_text() {
        let text = |bytes: &[u8], t: &Type| parameter_text(Some(&Bytes::copy_from_slice(bytes)), t, true, 0).unwrap().unwrap();
        assert_eq!(text(&5i32.to_be_bytes(), &Type::INT4), "5");
        assert_eq!(text(&(-7i64).to_be_bytes(), &Type::INT8), "-7");
        assert_eq!(text(&[1], &Type::BOOL), "t");
        assert_eq!(text(b"hi", &Type::TEXT), "hi");
        assert_eq!(text(&0.1f64.to_be_bytes(), &Type::FLOAT8).parse::<f64>().unwrap(), 0.1);
        assert_eq!(text(&0i32.to_be_bytes(), &Type::DATE), "2000-01-01");
        assert_eq!(text(&[&3_600_000_000i64.to_be_bytes()[..], &1i32.to_be_bytes(), &2i32.to_be_bytes()].concat(), &Type::INTERVAL), "2 mons 1 day 01:00:00");
        assert!(parameter_text(Some(&Bytes::from_static(&[0; 4])), &Type::NUMERIC, true, 0).is_err());
        assert!(parameter_text(Some(&Bytes::from_static(&[0; 3])), &Type::INT4, true, 0).is_err());
        assert_eq!(tag_without_count("INSERT 0 3"), "INSERT 0");
        assert_eq!(tag_without_count("SELECT 1"), "SELECT");
    }
}
