//! `COPY table [(cols)] FROM 'file'` and `COPY table | (query) TO 'file'`, in PostgreSQL's
//! text and CSV formats.
//!
//! CSV follows PostgreSQL: an unquoted empty field is NULL, a quoted empty field (`""`) is
//! the empty string, quoted fields may span lines, and on output a field is quoted when it
//! holds the delimiter, a quote, a line break, or is empty. Text format: tab-separated,
//! `\N` is NULL, backslash escapes `\t \n \r \\`. Relative file names are resolved against
//! the working directory of the process (as DuckDB does; PostgreSQL uses the data
//! directory).
//!
//! `COPY ... FROM STDIN` and `COPY ... TO STDOUT` move the data through the client, a
//! [`CopyClient`]: psql's script or terminal in weft's shell, CopyData messages on the wire.
//! FROM STDIN asks the client for its data only once the table and columns are checked, so
//! a COPY that fails before reading leaves the client's data unread (psql then reads it as
//! SQL, as it does against PostgreSQL).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};

use sqlparser::ast::{self, CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget};
use weft_common::parallel::CancelToken;
use weft_common::{Datum, Error, Result, SqlState};
use weft_exec::expr::cast::{cast_datum, cast_text_to_modifier};
use weft_exec::insert_rows;

use crate::api::QueryResult;
use crate::bind::object_name;
use crate::session::Session;
use crate::statements::{exec_context, target_columns};

/// The client's end of `COPY ... FROM STDIN` and `COPY ... TO STDOUT`.
pub trait CopyClient {
    /// `COPY ... FROM STDIN` has checked its table and will now read rows of `columns`
    /// values: lines of text or CSV, ended by the end of the data or a line `\.`. An error
    /// while reading (the client gave up) fails the COPY with the error's text.
    fn copy_in(&mut self, columns: usize) -> Result<&mut dyn BufRead>;
    /// `COPY ... TO STDOUT` will send rows of `columns` values.
    fn copy_out_begin(&mut self, columns: usize) -> Result<()>;
    /// One row of `COPY ... TO STDOUT`, its line end included.
    fn copy_out_row(&mut self, row: &[u8]) -> Result<()>;
}

#[derive(Clone, Debug)]
struct Format {
    csv: bool,
    header: bool,
    delimiter: char,
    null: String,
    quote: char,
}

fn format_from(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<Format> {
    let mut csv = false;
    let mut header = false;
    let mut delimiter = None;
    let mut null = None;
    let mut quote = '"';
    for option in options {
        match option {
            CopyOption::Format(name) => match name.value.to_ascii_lowercase().as_str() {
                "csv" => csv = true,
                "text" => csv = false,
                other => return Err(Error::not_supported(format!("COPY format \"{other}\" is not supported"))),
            },
            CopyOption::Header(h) => header = *h,
            CopyOption::Delimiter(d) => delimiter = Some(*d),
            CopyOption::Null(n) => null = Some(n.clone()),
            CopyOption::Quote(q) => quote = *q,
            CopyOption::Encoding(e) if e.eq_ignore_ascii_case("utf8") || e.eq_ignore_ascii_case("utf-8") => {}
            other => return Err(Error::not_supported(format!("COPY option {other} is not supported"))),
        }
    }
    for option in legacy {
        match option {
            CopyLegacyOption::Csv(csv_options) => {
                csv = true;
                for o in csv_options {
                    match o {
                        CopyLegacyCsvOption::Header => header = true,
                        CopyLegacyCsvOption::Quote(q) => quote = *q,
                        other => return Err(Error::not_supported(format!("COPY option {other} is not supported"))),
                    }
                }
            }
            CopyLegacyOption::Header => header = true,
            CopyLegacyOption::Delimiter(d) => delimiter = Some(*d),
            CopyLegacyOption::Null(n) => null = Some(n.clone()),
            other => return Err(Error::not_supported(format!("COPY option {other} is not supported"))),
        }
    }
    if header && !csv {
        return Err(Error::not_supported("COPY HEADER is supported only in CSV mode"));
    }
    Ok(Format {
        csv,
        header,
        delimiter: delimiter.unwrap_or(if csv { ',' } else { '\t' }),
        null: null.unwrap_or_else(|| if csv { String::new() } else { "\\N".to_string() }),
        quote,
    })
}

#[allow(clippy::too_many_arguments)]
pub fn copy(
    session: &mut Session,
    source: &CopySource,
    to: bool,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
    cancel: &CancelToken,
    client: Option<&mut dyn CopyClient>,
) -> Result<QueryResult> {
    let format = format_from(options, legacy)?;
    let path = match target {
        CopyTarget::File { filename } => filename.clone(),
        CopyTarget::Stdin | CopyTarget::Stdout => {
            let direction = if to { "TO STDOUT" } else { "FROM STDIN" };
            let client = client.ok_or_else(|| {
                Error::not_supported(format!("COPY {direction} needs a client that moves the data (psql, \\copy, or a driver's COPY support)"))
            })?;
            return if to {
                copy_to(session, source, Output::Client(client), &format, cancel)
            } else {
                copy_from(session, source, Input::Client(client), &format, cancel)
            };
        }
        CopyTarget::Program { .. } => return Err(Error::not_supported("COPY PROGRAM is not supported")),
    };
    if to {
        let file = File::create(&path).map_err(|e| Error::io(format!("could not open file \"{path}\" for writing"), &e))?;
        copy_to(session, source, Output::File { out: BufWriter::new(file), path: &path }, &format, cancel)
    } else {
        let file = File::open(&path).map_err(|e| Error::io(format!("could not open file \"{path}\" for reading"), &e))?;
        copy_from(session, source, Input::File { input: BufReader::new(file), path: &path }, &format, cancel)
    }
}

/// Where COPY TO writes its rows.
enum Output<'a> {
    File { out: BufWriter<File>, path: &'a str },
    Client(&'a mut dyn CopyClient),
}

impl Output<'_> {
    fn begin(&mut self, columns: usize) -> Result<()> {
        match self {
            Output::File { .. } => Ok(()),
            Output::Client(client) => client.copy_out_begin(columns),
        }
    }

    fn row(&mut self, row: &[u8]) -> Result<()> {
        match self {
            Output::File { out, path } => out.write_all(row).map_err(|e| Error::io(format!("could not write to file \"{path}\""), &e)),
            Output::Client(client) => client.copy_out_row(row),
        }
    }

    fn finish(self) -> Result<()> {
        match self {
            Output::File { mut out, path } => out.flush().map_err(|e| Error::io(format!("could not write to file \"{path}\""), &e)),
            Output::Client(_) => Ok(()),
        }
    }
}

/// Where COPY FROM reads its rows: a file, or the client once the target is checked.
enum Input<'a> {
    File { input: BufReader<File>, path: &'a str },
    Client(&'a mut dyn CopyClient),
}

fn copy_to(session: &mut Session, source: &CopySource, mut output: Output<'_>, format: &Format, cancel: &CancelToken) -> Result<QueryResult> {
    let query: Box<ast::Query> = match source {
        CopySource::Query(q) => q.clone(),
        CopySource::Table { table_name, columns } => {
            let name = object_name(table_name)?;
            let list = if columns.is_empty() {
                "*".to_string()
            } else {
                columns.iter().map(|c| format!("\"{}\"", crate::bind::ident_name(c).replace('"', "\"\""))).collect::<Vec<_>>().join(", ")
            };
            let sql = format!("SELECT {list} FROM \"{}\"", name.replace('"', "\"\""));
            let mut parsed = sqlparser::parser::Parser::parse_sql(&sqlparser::dialect::PostgreSqlDialect {}, &sql)
                .map_err(|e| Error::internal(e.to_string()))?;
            match parsed.pop() {
                Some(ast::Statement::Query(q)) => q,
                _ => return Err(Error::internal("COPY TO query did not parse")),
            }
        }
    };
    let catalog = session.catalog();
    let planned = crate::statements::plan_output(session, &catalog, &query)?;
    let rows = crate::statements::run_query_plan(&planned.plan, &exec_context(session, cancel))?;
    output.begin(planned.columns.len())?;
    if format.header {
        let names: Vec<Option<String>> = planned.columns.iter().map(|c| Some(c.name.clone())).collect();
        output.row(record_line(&names, format).as_bytes())?;
    }
    for row in &rows {
        let fields: Vec<Option<String>> = row.iter().map(|d| d.to_pg_text()).collect();
        output.row(record_line(&fields, format).as_bytes())?;
    }
    output.finish()?;
    Ok(QueryResult::command(format!("COPY {}", rows.len())))
}

/// One record of COPY TO's output, with its line end.
fn record_line(fields: &[Option<String>], format: &Format) -> String {
    let mut line = String::new();
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            line.push(format.delimiter);
        }
        match field {
            None => line.push_str(&format.null),
            Some(value) if format.csv => {
                let needs_quotes = value.is_empty() && format.null.is_empty()
                    || *value == format.null
                    || value.contains([format.delimiter, format.quote, '\n', '\r']);
                if needs_quotes {
                    line.push(format.quote);
                    for c in value.chars() {
                        if c == format.quote {
                            line.push(format.quote);
                        }
                        line.push(c);
                    }
                    line.push(format.quote);
                } else {
                    line.push_str(value);
                }
            }
            Some(value) => {
                for c in value.chars() {
                    match c {
                        '\\' => line.push_str("\\\\"),
                        '\n' => line.push_str("\\n"),
                        '\r' => line.push_str("\\r"),
                        '\t' => line.push_str("\\t"),
                        c if c == format.delimiter => {
                            line.push('\\');
                            line.push(c);
                        }
                        c => line.push(c),
                    }
                }
            }
        }
    }
    line.push('\n');
    line
}

fn copy_from(session: &mut Session, source: &CopySource, input: Input<'_>, format: &Format, cancel: &CancelToken) -> Result<QueryResult> {
    let CopySource::Table { table_name, columns } = source else {
        return Err(Error::syntax("COPY FROM requires a table"));
    };
    let table_name = object_name(table_name)?;
    let inserted = session.write(|txn| {
        let table = txn.catalog.table(&table_name)?.clone();
        let names: Vec<String> = columns.iter().map(crate::bind::ident_name).collect();
        let targets = target_columns(&table, &names)?;
        let mut input = input;
        let (input, source): (&mut dyn BufRead, String) = match &mut input {
            Input::File { input, path } => (input, format!("file \"{path}\"")),
            Input::Client(client) => (client.copy_in(targets.len())?, String::new()),
        };
        let mut reader = RecordReader { input, format: format.clone(), line_number: 0, source, record_text: String::new() };
        let target = crate::statements::insert_target_for(&table, txn.xid);
        let first_block = crate::statements::first_block_written(session, &table)?;
        if format.header {
            reader.next_record()?;
        }
        let types = table.column_types();
        let rows = std::iter::from_fn(|| {
            let record = match reader.next_record() {
                Ok(Some(record)) => record,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            };
            Some(build_row(record, &targets, &table, &types).map_err(|(error, field)| reader.in_context(error, &table, &targets, field)))
        });
        let inserted = insert_rows(&exec_context(session, cancel), &target, rows)?;
        if reader.source.is_empty() {
            // Data after a `\.` line is read and ignored, so that a client giving up later
            // (CopyFail) still undoes the COPY, as in PostgreSQL.
            let mut rest = String::new();
            while reader.read_line(&mut rest)? {
                rest.clear();
            }
        }
        txn.touch(table.locator());
        crate::statements::maintain_indexes(session, txn, &table, first_block, &Default::default(), None, cancel)?;
        txn.catalog.table_mut(&table_name)?.row_count += inserted;
        Ok(inserted)
    })?;
    Ok(QueryResult::command(format!("COPY {inserted}")))
}

/// A record as a row of the table. An error names the record's field that failed, if one
/// did, so that the caller can give PostgreSQL's CONTEXT.
fn build_row(
    record: Vec<Option<String>>,
    targets: &[usize],
    table: &weft_access::TableMeta,
    types: &[weft_common::DataType],
) -> std::result::Result<Vec<Datum>, (Error, Option<usize>)> {
    if record.len() != targets.len() {
        let message = if record.len() < targets.len() {
            format!("missing data for column \"{}\"", table.columns[targets[record.len()]].name)
        } else {
            "extra data after last expected column".to_string()
        };
        return Err((Error::new(SqlState::BAD_COPY_FILE_FORMAT, message), None));
    }
    let mut row = vec![Datum::Null; types.len()];
    for (field, (value, &column)) in record.into_iter().zip(targets).enumerate() {
        if let Some(text) = value {
            row[column] = match table.columns[column].type_modifier {
                Some(modifier) => cast_text_to_modifier(text, modifier),
                None => cast_datum(Datum::Text(text), types[column]),
            }
            .map_err(|e| (e, Some(field)))?;
        }
    }
    Ok(row)
}

struct RecordReader<'a> {
    input: &'a mut dyn BufRead,
    format: Format,
    line_number: usize,
    /// `file "name"`, or empty for the client's data.
    source: String,
    /// The text of the last record read (more than one line for a CSV field with line
    /// breaks), for error messages.
    record_text: String,
}

impl RecordReader<'_> {
    fn read_line(&mut self, buf: &mut String) -> Result<bool> {
        let n = self.input.read_line(buf).map_err(|e| {
            if self.source.is_empty() {
                // The client stopped sending: its reason, as PostgreSQL reports a CopyFail.
                Error::new(SqlState::QUERY_CANCELED, format!("COPY from stdin failed: {e}"))
            } else {
                Error::io(format!("could not read from {}", self.source), &e)
            }
        })?;
        if n > 0 {
            self.line_number += 1;
        }
        Ok(n > 0)
    }

    /// The next record's fields (`None` = NULL), or `None` at end of file or at a line
    /// `\.` (the end of data, in both formats).
    fn next_record(&mut self) -> Result<Option<Vec<Option<String>>>> {
        let mut line = std::mem::take(&mut self.record_text);
        line.clear();
        let read = self.read_line(&mut line);
        let fields = match read {
            Ok(false) => None,
            _ if line.trim_end_matches(['\n', '\r']) == "\\." => None,
            Ok(true) if self.format.csv => Some(self.parse_csv(&mut line)),
            Ok(true) => Some(Ok(self.parse_text(line.trim_end_matches('\n').trim_end_matches('\r')))),
            Err(e) => Some(Err(e)),
        };
        self.record_text = line;
        fields.transpose()
    }

    /// `error` of the record just read, with PostgreSQL's CONTEXT: the field that failed,
    /// or the whole record.
    fn in_context(&mut self, error: Error, table: &weft_access::TableMeta, targets: &[usize], field: Option<usize>) -> Error {
        let (line, name) = (self.line_number, &table.name);
        let text = std::mem::take(&mut self.record_text);
        let context = match field {
            Some(i) => {
                let fields = if self.format.csv { self.parse_csv(&mut text.clone()).unwrap_or_default() } else { self.parse_text(text.trim_end_matches(['\n', '\r'])) };
                let value = fields.get(i).cloned().flatten().unwrap_or_default();
                format!("COPY {name}, line {line}, column {}: \"{value}\"", table.columns[targets[i]].name)
            }
            None => format!("COPY {name}, line {line}: \"{}\"", text.trim_end_matches(['\n', '\r'])),
        };
        self.record_text = text;
        error.with_context(context)
    }

    fn parse_text(&self, line: &str) -> Vec<Option<String>> {
        line.split(self.format.delimiter)
            .map(|raw| {
                if raw == self.format.null {
                    return None;
                }
                let mut value = String::with_capacity(raw.len());
                let mut chars = raw.chars();
                while let Some(c) = chars.next() {
                    if c != '\\' {
                        value.push(c);
                        continue;
                    }
                    match chars.next() {
                        Some('n') => value.push('\n'),
                        Some('r') => value.push('\r'),
                        Some('t') => value.push('\t'),
                        Some('b') => value.push('\u{8}'),
                        Some('f') => value.push('\u{c}'),
                        Some('v') => value.push('\u{b}'),
                        Some(other) => value.push(other),
                        None => value.push('\\'),
                    }
                }
                Some(value)
            })
            .collect()
    }

    fn parse_csv(&mut self, line: &mut String) -> Result<Vec<Option<String>>> {
        let (delimiter, quote) = (self.format.delimiter, self.format.quote);
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut in_quotes = false;
        let mut pos = 0;
        loop {
            let rest = &line[pos..];
            let Some(c) = rest.chars().next() else {
                if in_quotes {
                    // A quoted field continues on the next line.
                    let mut next = String::new();
                    if !self.read_line(&mut next)? {
                        return Err(Error::new(SqlState::BAD_COPY_FILE_FORMAT, "unterminated CSV quoted field"));
                    }
                    line.push_str(&next);
                    continue;
                }
                break;
            };
            pos += c.len_utf8();
            if in_quotes {
                if c == quote {
                    if line[pos..].starts_with(quote) {
                        field.push(quote);
                        pos += quote.len_utf8();
                    } else {
                        in_quotes = false;
                    }
                } else {
                    field.push(c);
                }
            } else if c == quote {
                in_quotes = true;
                quoted = true;
            } else if c == delimiter {
                fields.push(self.csv_value(std::mem::take(&mut field), quoted));
                quoted = false;
            } else if c == '\n' || (c == '\r' && line[pos..].starts_with('\n')) {
                break;
            } else {
                field.push(c);
            }
        }
        fields.push(self.csv_value(field, quoted));
        Ok(fields)
    }

    fn csv_value(&self, field: String, quoted: bool) -> Option<String> {
        if !quoted && field == self.format.null {
            None
        } else {
            Some(field)
        }
    }
}
