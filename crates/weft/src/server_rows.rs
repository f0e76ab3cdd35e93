//! Rows on the wire: a row's `DataRow` body, and the streaming of a query's rows from the
//! session's thread to the connection's task as they are produced.
//!
//! A query's rows are not collected before they are sent (`Session::execute_streaming`):
//! the session's thread encodes each row as it comes out of the plan into a chunk of
//! `DataRow` bodies, and hands full chunks over a bounded channel to the connection's
//! task, which writes them to the client. The channel's bound is the backpressure: a
//! client reading slowly holds the query back instead of letting the result pile up in
//! memory; a client gone makes the next hand-over fail, which stops the query.

use bytes::{BufMut, BytesMut};
use pgwire::api::portal::Format;
use pgwire::api::results::FieldFormat;
use tokio::sync::mpsc;
use weft_common::Datum;
use weft_sql::{ColumnInfo, Error, RowSink, SqlState};

/// Bytes of encoded rows handed over at a time.
const CHUNK_BYTES: usize = 64 * 1024;

/// What the session's thread sends the connection's task.
pub(crate) enum Streamed {
    /// The result's columns and their formats, before any row.
    Columns { columns: Vec<ColumnInfo>, formats: Vec<FieldFormat> },
    /// `DataRow` bodies back to back, each `lengths[i]` bytes.
    Rows { data: BytesMut, lengths: Vec<usize> },
}

/// A [`RowSink`] that encodes rows and sends them in chunks.
pub(crate) struct ChannelSink {
    sender: mpsc::Sender<Streamed>,
    /// The formats a portal's Bind asked for; `None` is text (the simple protocol).
    requested: Option<Format>,
    formats: Vec<FieldFormat>,
    data: BytesMut,
    lengths: Vec<usize>,
}

impl ChannelSink {
    pub(crate) fn new(sender: mpsc::Sender<Streamed>, requested: Option<Format>) -> ChannelSink {
        ChannelSink { sender, requested, formats: Vec::new(), data: BytesMut::with_capacity(CHUNK_BYTES * 2), lengths: Vec::new() }
    }

    fn send(&self, message: Streamed) -> weft_common::Result<()> {
        self.sender.blocking_send(message).map_err(|_| Error::new(SqlState::CONNECTION_FAILURE, "connection to client lost"))
    }

    fn flush(&mut self) -> weft_common::Result<()> {
        if self.lengths.is_empty() {
            return Ok(());
        }
        let data = self.data.split();
        let lengths = std::mem::take(&mut self.lengths);
        self.send(Streamed::Rows { data, lengths })
    }
}

impl RowSink for ChannelSink {
    fn columns(&mut self, columns: &[ColumnInfo]) -> weft_common::Result<()> {
        self.formats = match &self.requested {
            Some(requested) => crate::server::result_formats(columns, requested)?,
            None => vec![FieldFormat::Text; columns.len()],
        };
        self.send(Streamed::Columns { columns: columns.to_vec(), formats: self.formats.clone() })
    }

    fn row(&mut self, row: Vec<Datum>) -> weft_common::Result<()> {
        let start = self.data.len();
        encode_row(&row, &self.formats, &mut self.data);
        self.lengths.push(self.data.len() - start);
        if self.data.len() >= CHUNK_BYTES {
            self.flush()?;
        }
        Ok(())
    }
}

impl Drop for ChannelSink {
    /// The rows of the last chunk (also those before an error: the client gets them,
    /// then the error, as from PostgreSQL).
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Append the body of `row`'s `DataRow` (each field's length, then its bytes; -1 for
/// NULL) to `out`. Text is written straight from the value, without a string of its own
/// per field for text and integers. A `timestamptz` prints in the thread's current zone.
pub(crate) fn encode_row(row: &[Datum], formats: &[FieldFormat], out: &mut BytesMut) {
    for (datum, format) in row.iter().zip(formats) {
        let length_at = out.len();
        out.put_i32(0);
        match (format, datum) {
            (_, Datum::Null) => {
                out[length_at..length_at + 4].copy_from_slice(&(-1i32).to_be_bytes());
                continue;
            }
            (FieldFormat::Binary, Datum::Bool(b)) => out.put_u8(*b as u8),
            (FieldFormat::Binary, Datum::Int4(v)) => out.put_i32(*v),
            (FieldFormat::Binary, Datum::Int8(v)) => out.put_i64(*v),
            (FieldFormat::Binary, Datum::Float8(v)) => out.put_f64(*v),
            (FieldFormat::Binary, Datum::Date(d)) => out.put_slice(&d.to_be_bytes()),
            (FieldFormat::Binary, Datum::Time(t) | Datum::Timestamp(t) | Datum::TimestampTz(t)) => out.put_slice(&t.to_be_bytes()),
            (FieldFormat::Binary, Datum::Interval(iv)) => {
                out.put_i64(iv.micros);
                out.put_slice(&iv.days.to_be_bytes());
                out.put_slice(&iv.months.to_be_bytes());
            }
            (_, Datum::Text(s)) => out.put_slice(s.as_bytes()),
            (_, Datum::Int4(v)) => out.put_slice(itoa::Buffer::new().format(*v).as_bytes()),
            (_, Datum::Int8(v)) => out.put_slice(itoa::Buffer::new().format(*v).as_bytes()),
            (_, datum) => out.put_slice(datum.to_pg_text().unwrap_or_default().as_bytes()),
        }
        let length = (out.len() - length_at - 4) as i32;
        out[length_at..length_at + 4].copy_from_slice(&length.to_be_bytes());
    }
}
