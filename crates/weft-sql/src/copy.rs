//! `COPY table [(cols)] FROM 'file'` and `COPY table | (query) TO 'file'`, in PostgreSQL's
//! text and CSV formats.
//!
//! CSV follows PostgreSQL: an unquoted empty field is NULL, a quoted empty field (`""`) is
//! the empty string, quoted fields may span lines, and on output a field is quoted when it
//! holds the delimiter, a quote, a line break, or is empty. Text format: tab-separated,
//! `\N` is NULL, backslash escapes `\t \n \r \\`. Relative file names are resolved against
//! the working directory of the process (as DuckDB does; PostgreSQL uses the data
//! directory). FROM STDIN / TO STDOUT need the wire protocol and are not supported yet.

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
use crate::statements::{exec_context, plan, target_columns};

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

pub fn copy(
    session: &mut Session,
    source: &CopySource,
    to: bool,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
    cancel: &CancelToken,
) -> Result<QueryResult> {
    let format = format_from(options, legacy)?;
    let path = match target {
        CopyTarget::File { filename } => filename.clone(),
        CopyTarget::Stdin | CopyTarget::Stdout => {
            return Err(Error::not_supported("COPY FROM STDIN / TO STDOUT is not supported yet; use a file name"))
        }
        CopyTarget::Program { .. } => return Err(Error::not_supported("COPY PROGRAM is not supported")),
    };
    if to {
        copy_to(session, source, &path, &format, cancel)
    } else {
        let CopySource::Table { table_name, columns } = source else {
            return Err(Error::syntax("COPY FROM requires a table"));
        };
        copy_from(session, &object_name(table_name)?, columns, &path, &format, cancel)
    }
}

fn copy_to(session: &mut Session, source: &CopySource, path: &str, format: &Format, cancel: &CancelToken) -> Result<QueryResult> {
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
    let planned = plan(session, &catalog, &query)?;
    let rows = crate::statements::run_query_plan(&planned.plan, &exec_context(session, cancel))?;
    let file = File::create(path).map_err(|e| Error::io(format!("could not open file \"{path}\" for writing"), &e))?;
    let mut out = BufWriter::new(file);
    let write_err = |e: std::io::Error| Error::io(format!("could not write to file \"{path}\""), &e);
    if format.header {
        let names: Vec<Option<String>> = planned.columns.iter().map(|c| Some(c.name.clone())).collect();
        write_record(&mut out, &names, format).map_err(write_err)?;
    }
    for row in &rows {
        let fields: Vec<Option<String>> = row.iter().map(|d| d.to_pg_text()).collect();
        write_record(&mut out, &fields, format).map_err(write_err)?;
    }
    out.flush().map_err(write_err)?;
    Ok(QueryResult::command(format!("COPY {}", rows.len())))
}

fn write_record(out: &mut impl Write, fields: &[Option<String>], format: &Format) -> std::io::Result<()> {
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
    out.write_all(line.as_bytes())
}

fn copy_from(
    session: &mut Session,
    table_name: &str,
    columns: &[ast::Ident],
    path: &str,
    format: &Format,
    cancel: &CancelToken,
) -> Result<QueryResult> {
    let file = File::open(path).map_err(|e| Error::io(format!("could not open file \"{path}\" for reading"), &e))?;
    let mut reader = RecordReader { input: BufReader::new(file), format: format.clone(), line_number: 0, path: path.to_string() };
    let inserted = session.write(|txn| {
        let table = txn.catalog.table(table_name)?.clone();
        let names: Vec<String> = columns.iter().map(crate::bind::ident_name).collect();
        let targets = target_columns(&table, &names)?;
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
            Some(build_row(record, &targets, &table, &types, reader.line_number))
        });
        let inserted = insert_rows(&exec_context(session, cancel), &target, rows)?;
        txn.touch(table.locator());
        crate::statements::maintain_indexes(session, txn, &table, first_block, &Default::default(), None, cancel)?;
        txn.catalog.table_mut(table_name)?.row_count += inserted;
        Ok(inserted)
    })?;
    Ok(QueryResult::command(format!("COPY {inserted}")))
}

fn build_row(
    record: Vec<Option<String>>,
    targets: &[usize],
    table: &weft_access::TableMeta,
    types: &[weft_common::DataType],
    line: usize,
) -> Result<Vec<Datum>> {
    let context = |e: Error| {
        let mut e = e;
        e.message = format!("{} (COPY {}, line {line})", e.message, table.name);
        e
    };
    if record.len() != targets.len() {
        let message = if record.len() < targets.len() { "missing data for column" } else { "extra data after last expected column" };
        let detail = if record.len() < targets.len() {
            format!("{message} \"{}\"", table.columns[targets[record.len()]].name)
        } else {
            message.to_string()
        };
        return Err(Error::new(SqlState::BAD_COPY_FILE_FORMAT, format!("{detail} (COPY {}, line {line})", table.name)));
    }
    let mut row = vec![Datum::Null; types.len()];
    for (field, &column) in record.into_iter().zip(targets) {
        if let Some(text) = field {
            row[column] = match table.columns[column].type_modifier {
                Some(modifier) => cast_text_to_modifier(text, modifier),
                None => cast_datum(Datum::Text(text), types[column]),
            }
            .map_err(context)?;
        }
    }
    Ok(row)
}

struct RecordReader<R> {
    input: R,
    format: Format,
    line_number: usize,
    path: String,
}

impl<R: BufRead> RecordReader<R> {
    fn read_line(&mut self, buf: &mut String) -> Result<bool> {
        let n = self
            .input
            .read_line(buf)
            .map_err(|e| Error::io(format!("could not read from file \"{}\"", self.path), &e))?;
        if n > 0 {
            self.line_number += 1;
        }
        Ok(n > 0)
    }

    /// The next record's fields (`None` = NULL), or `None` at end of file.
    fn next_record(&mut self) -> Result<Option<Vec<Option<String>>>> {
        let mut line = String::new();
        if !self.read_line(&mut line)? {
            return Ok(None);
        }
        if self.format.csv {
            self.parse_csv(line).map(Some)
        } else {
            let line = line.strip_suffix('\n').unwrap_or(&line);
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line == "\\." {
                return Ok(None);
            }
            Ok(Some(self.parse_text(line)))
        }
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

    fn parse_csv(&mut self, mut line: String) -> Result<Vec<Option<String>>> {
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
