//! `COPY ... FROM STDIN` and `COPY ... TO STDOUT` on the wire (simple query protocol).
//!
//! The statement runs on a blocking thread like any other, with a [`WireCopy`] as its
//! COPY client; the two sides talk through channels:
//!
//! - TO STDOUT: the statement announces its columns (CopyOutResponse) and sends each row
//!   (one CopyData a row, as PostgreSQL does); CopyDone and CommandComplete follow once it
//!   has finished.
//! - FROM STDIN: once the statement has checked its table it announces its columns; the
//!   server answers CopyInResponse and leaves `on_query` with the statement still running,
//!   waiting for data. CopyData messages (`on_copy_data`) are passed to it through a bounded
//!   channel, so a fast client waits for a slow load; CopyDone ends the data and the result
//!   is sent as for any statement; CopyFail, or the connection closing, makes the reader fail
//!   and the COPY roll back.
//!
//! Only a query string holding the COPY alone may copy in (psql sends one statement per
//! query); in the extended protocol COPY has no client and fails with 0A000.

use std::fmt::Debug;
use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::sink::{Sink, SinkExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse, CopyOutResponse};
use pgwire::messages::response::{CommandComplete, ErrorResponse};
use pgwire::messages::PgWireBackendMessage;
use weft_sql::{CopyClient, Error, QueryResult, Result, Session};

use crate::server::{connection, error_info, lock, run_on_session, send_notices, sync_status, user_error, Handlers};

/// Does this statement start with COPY (and so may need a client)?
pub fn is_copy(sql: &str) -> bool {
    sql.trim_start().get(..4).is_some_and(|word| word.eq_ignore_ascii_case("copy"))
        && sql.trim_start()[4..].starts_with(|c: char| c.is_whitespace() || c == '(')
}

/// What the running COPY tells the connection.
enum Event {
    InBegin(usize),
    OutBegin(usize),
    OutRow(Bytes),
}

/// What the connection hands the running COPY FROM STDIN.
enum Chunk {
    Data(Bytes),
    Done,
    Fail(String),
}

/// A COPY FROM STDIN waiting for its data; kept by the connection between messages.
pub struct CopyIn {
    data: tokio::sync::mpsc::Sender<Chunk>,
    statement: tokio::task::JoinHandle<Result<QueryResult>>,
}

/// The client side of a COPY that runs on a blocking thread.
struct WireCopy {
    events: tokio::sync::mpsc::Sender<Event>,
    data: BufReader<ChunkReader>,
    /// FROM STDIN is allowed (the COPY is its query string's only statement).
    copy_in_allowed: bool,
}

impl WireCopy {
    fn tell(&self, event: Event) -> Result<()> {
        self.events.blocking_send(event).map_err(|_| Error::new(weft_sql::SqlState("08006"), "connection to client lost"))
    }
}

impl CopyClient for WireCopy {
    fn copy_in(&mut self, columns: usize) -> Result<&mut dyn BufRead> {
        if !self.copy_in_allowed {
            return Err(Error::not_supported("COPY FROM STDIN must be the only statement of its query string"));
        }
        self.tell(Event::InBegin(columns))?;
        Ok(&mut self.data)
    }

    fn copy_out_begin(&mut self, columns: usize) -> Result<()> {
        self.tell(Event::OutBegin(columns))
    }

    fn copy_out_row(&mut self, row: &[u8]) -> Result<()> {
        self.tell(Event::OutRow(Bytes::copy_from_slice(row)))
    }
}

/// The COPY's data as a reader: the chunks CopyData brought, in order.
struct ChunkReader {
    chunks: tokio::sync::mpsc::Receiver<Chunk>,
    chunk: Bytes,
    done: bool,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if !self.chunk.is_empty() {
                let n = self.chunk.len().min(buf.len());
                buf[..n].copy_from_slice(&self.chunk.split_to(n));
                return Ok(n);
            }
            if self.done {
                return Ok(0);
            }
            match self.chunks.blocking_recv() {
                Some(Chunk::Data(bytes)) => self.chunk = bytes,
                Some(Chunk::Done) => self.done = true,
                Some(Chunk::Fail(message)) => return Err(std::io::Error::other(message)),
                None => return Err(std::io::Error::other("the connection closed")),
            }
        }
    }
}

/// How a COPY statement left `on_query`.
pub enum CopyStep {
    /// It ended, with this result (a COPY TO STDOUT's rows are sent).
    Finished(Result<QueryResult>),
    /// It waits for CopyData: CopyInResponse is sent and the connection copies in.
    AwaitingData,
}

/// Run a COPY statement of a simple query.
pub async fn run_copy<C>(client: &mut C, session: Arc<Mutex<Session>>, sql: String, copy_in_allowed: bool) -> PgWireResult<CopyStep>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let (events_tx, mut events) = tokio::sync::mpsc::channel(64);
    let (data, chunks) = tokio::sync::mpsc::channel(16);
    let mut wire = WireCopy { events: events_tx, data: BufReader::new(ChunkReader { chunks, chunk: Bytes::new(), done: false }), copy_in_allowed };
    let statement = tokio::spawn(run_on_session(session, move |session| session.execute_with_copy(&sql, &mut wire)));
    let mut copied_out = false;
    while let Some(event) = events.recv().await {
        match event {
            Event::OutBegin(columns) => {
                copied_out = true;
                let response = CopyOutResponse::new(0, columns as i16, vec![0; columns]);
                client.feed(PgWireBackendMessage::CopyOutResponse(response)).await?;
            }
            Event::OutRow(row) => client.feed(PgWireBackendMessage::CopyData(CopyData::new(row))).await?,
            Event::InBegin(columns) => {
                let response = CopyInResponse::new(0, columns as i16, vec![0; columns]);
                client.send(PgWireBackendMessage::CopyInResponse(response)).await?;
                let connection = connection(client)?;
                *lock(&connection.copy_in) = Some(CopyIn { data, statement });
                client.set_state(PgWireConnectionState::CopyInProgress(false));
                return Ok(CopyStep::AwaitingData);
            }
        }
    }
    let result = statement.await.unwrap_or_else(|e| Err(Error::internal(format!("internal error: {e}"))));
    if copied_out && result.is_ok() {
        client.feed(PgWireBackendMessage::CopyDone(CopyDone::new())).await?;
    }
    Ok(CopyStep::Finished(result))
}

/// The connection's COPY FROM STDIN, taken for its end.
fn take_copy_in<C: ClientInfo>(client: &C) -> PgWireResult<CopyIn> {
    let connection = connection(client)?;
    let taken = lock(&connection.copy_in).take();
    taken.ok_or_else(|| user_error(&Error::new(weft_sql::SqlState("08P01"), "unexpected message type during COPY")))
}

#[async_trait]
impl CopyHandler for Handlers {
    async fn on_copy_data<C>(&self, client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let sender = lock(&connection(client)?.copy_in).as_ref().map(|copy| copy.data.clone());
        if let Some(sender) = sender {
            // A COPY that already failed reads no more: its data is dropped, as PostgreSQL
            // discards CopyData after an error until CopyDone.
            let _ = sender.send(Chunk::Data(copy_data.data)).await;
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let copy = take_copy_in(client)?;
        let _ = copy.data.send(Chunk::Done).await;
        drop(copy.data);
        let result = copy.statement.await.unwrap_or_else(|e| Err(Error::internal(format!("internal error: {e}"))));
        match result {
            Ok(result) => {
                send_notices(client, &result).await?;
                client.feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(result.tag.clone()))).await?;
            }
            Err(error) => client.feed(PgWireBackendMessage::ErrorResponse(ErrorResponse::from(error_info(&error)))).await?,
        }
        // pgwire sends ReadyForQuery next, with this status.
        sync_status(client);
        Ok(())
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let copy = match take_copy_in(client) {
            Ok(copy) => copy,
            Err(error) => return error,
        };
        let _ = copy.data.send(Chunk::Fail(fail.message)).await;
        drop(copy.data);
        let result = copy.statement.await.unwrap_or_else(|e| Err(Error::internal(format!("internal error: {e}"))));
        sync_status(client);
        match result {
            Err(error) => user_error(&error),
            // The data was complete before the client gave up; PostgreSQL fails it anyway.
            Ok(_) => user_error(&Error::new(weft_sql::SqlState::QUERY_CANCELED, "COPY from stdin failed")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_copy;

    #[test]
    fn copy_statements_are_recognized() {
        assert!(is_copy("COPY t FROM STDIN"));
        assert!(is_copy("  copy(select 1) to stdout"));
        assert!(!is_copy("copyright"));
        assert!(!is_copy("select 1"));
        assert!(!is_copy("cop"));
    }
}
