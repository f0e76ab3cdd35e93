//! Result formatting, byte for byte as psql 15 prints it.
//!
//! Three formats, chosen as psql chooses them:
//!
//! - *aligned* (the default): a header line with each column name centred in its column, a
//!   `-+-` rule, the rows (numbers right-aligned, everything else left-aligned, NULL empty),
//!   then `(N rows)` and an empty line. The header keeps trailing padding; a data line does not
//!   pad its last column when it is left-aligned (psql's exact behaviour, so `diff` against
//!   psql output works). A title (`List of relations`) is centred over the table's width.
//! - *unaligned* (`-A`): fields joined by the separator (`|`, or `-F`), header line, footer.
//! - *csv* (`--csv`): header and rows, RFC 4180 quoting, no title or footer.
//!
//! `-t` (tuples only) drops title, header and footer in every format. Widths are counted in
//! `char`s: East Asian wide characters would misalign, which psql handles and we do not yet.
//!
//! The formatter works on plain strings (`Table`), so `\d` output and query results share it
//! and it can be tested without an engine.

use weft_common::DataType;
use weft_sql::QueryResult;

/// psql's `\pset format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Aligned,
    Unaligned,
    Csv,
}

/// The output options the command line sets.
#[derive(Clone, Debug)]
pub struct OutputOptions {
    pub format: Format,
    /// `-t`: rows only.
    pub tuples_only: bool,
    /// `-F`: the unaligned field separator.
    pub field_separator: String,
    /// `-q`: no command tags.
    pub quiet: bool,
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions { format: Format::Aligned, tuples_only: false, field_separator: "|".to_string(), quiet: false }
    }
}

/// Where a column's values sit in aligned output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

impl Align {
    /// psql right-aligns the numeric types.
    pub fn for_type(data_type: DataType) -> Align {
        if data_type.is_numeric_family() {
            Align::Right
        } else {
            Align::Left
        }
    }
}

/// What to print below the rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Footer {
    /// `(N rows)`.
    RowCount,
    /// Lines printed as they are (`\d`'s `Indexes:` section).
    Lines(Vec<String>),
}

/// A table of already-rendered cells; `None` is NULL.
#[derive(Clone, Debug)]
pub struct Table {
    pub title: Option<String>,
    pub headers: Vec<String>,
    pub aligns: Vec<Align>,
    pub rows: Vec<Vec<Option<String>>>,
    pub footer: Footer,
}

impl Table {
    /// The table of a query result.
    pub fn from_result(result: &QueryResult) -> Table {
        Table {
            title: None,
            headers: result.columns.iter().map(|c| c.name.clone()).collect(),
            aligns: result.columns.iter().map(|c| Align::for_type(c.data_type)).collect(),
            rows: result.rows.iter().map(|row| row.iter().map(|d| d.to_pg_text()).collect()).collect(),
            footer: Footer::RowCount,
        }
    }

    /// A table of text columns (for meta-commands).
    pub fn text(title: Option<&str>, headers: &[&str], rows: Vec<Vec<Option<String>>>, footer: Footer) -> Table {
        Table {
            title: title.map(str::to_string),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            aligns: vec![Align::Left; headers.len()],
            rows,
            footer,
        }
    }
}

/// Everything psql prints on stdout for one statement's result: the table (when the statement
/// returns rows) and the command tag (unless quiet). DML with RETURNING prints both.
pub fn format_result(result: &QueryResult, options: &OutputOptions) -> String {
    let mut out = String::new();
    if result.returns_rows {
        out.push_str(&format_table(&Table::from_result(result), options));
        if !options.quiet && is_dml_tag(&result.tag) {
            out.push_str(&result.tag);
            out.push('\n');
        }
    } else if !options.quiet && !result.tag.is_empty() {
        out.push_str(&result.tag);
        out.push('\n');
    }
    out
}

fn is_dml_tag(tag: &str) -> bool {
    ["INSERT", "UPDATE", "DELETE", "MERGE"].iter().any(|t| tag.starts_with(t))
}

/// Render a table in the chosen format.
pub fn format_table(table: &Table, options: &OutputOptions) -> String {
    match options.format {
        Format::Aligned => format_aligned(table, options.tuples_only),
        Format::Unaligned => format_unaligned(table, options.tuples_only, &options.field_separator),
        Format::Csv => format_csv(table, options.tuples_only),
    }
}

fn footer_text(table: &Table) -> Option<String> {
    match &table.footer {
        Footer::RowCount if table.rows.len() == 1 => Some("(1 row)".to_string()),
        Footer::RowCount => Some(format!("({} rows)", table.rows.len())),
        Footer::Lines(lines) if lines.is_empty() => None,
        Footer::Lines(lines) => Some(lines.join("\n")),
    }
}

fn width(text: &str) -> usize {
    text.chars().count()
}

fn format_aligned(table: &Table, tuples_only: bool) -> String {
    let column_count = table.headers.len();
    // psql sizes columns by their headers even when `-t` does not print them.
    let mut widths: Vec<usize> = table.headers.iter().map(|h| width(h)).collect();
    for row in &table.rows {
        for (j, cell) in row.iter().enumerate().take(column_count) {
            widths[j] = widths[j].max(cell.as_deref().map_or(0, width));
        }
    }
    let mut out = String::new();
    if !tuples_only {
        let total_width: usize = widths.iter().map(|w| w + 2).sum::<usize>() + column_count.saturating_sub(1);
        if let Some(title) = &table.title {
            let indent = total_width.saturating_sub(width(title)) / 2;
            out.push_str(&" ".repeat(indent));
            out.push_str(title);
            out.push('\n');
        }
        if column_count > 0 {
            let header_cells: Vec<String> =
                table.headers.iter().zip(&widths).map(|(h, &w)| format!(" {} ", center(h, w))).collect();
            out.push_str(&header_cells.join("|"));
            out.push('\n');
        }
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(w + 2)).collect();
        let rule = rule.join("+");
        out.push_str(if column_count == 0 { "--" } else { &rule });
        out.push('\n');
    }
    for row in &table.rows {
        out.push_str(&aligned_row(row, &widths, &table.aligns));
        out.push('\n');
    }
    if !tuples_only {
        if let Some(footer) = footer_text(table) {
            out.push_str(&footer);
            out.push('\n');
        }
    }
    out.push('\n');
    out
}

fn aligned_row(row: &[Option<String>], widths: &[usize], aligns: &[Align]) -> String {
    let mut line = String::new();
    for (j, &w) in widths.iter().enumerate() {
        let value = row.get(j).and_then(|c| c.as_deref()).unwrap_or("");
        let pad = w.saturating_sub(width(value));
        let last = j + 1 == widths.len();
        if j > 0 {
            line.push('|');
        }
        line.push(' ');
        match aligns.get(j).copied().unwrap_or(Align::Left) {
            Align::Right => {
                line.push_str(&" ".repeat(pad));
                line.push_str(value);
            }
            Align::Left => {
                line.push_str(value);
                if !last {
                    line.push_str(&" ".repeat(pad));
                }
            }
        }
        if !last {
            line.push(' ');
        }
    }
    line
}

/// psql centres a header with the odd space on the right.
fn center(text: &str, w: usize) -> String {
    let pad = w.saturating_sub(width(text));
    let left = pad / 2;
    format!("{}{}{}", " ".repeat(left), text, " ".repeat(pad - left))
}

fn format_unaligned(table: &Table, tuples_only: bool, separator: &str) -> String {
    let mut out = String::new();
    if !tuples_only {
        if let Some(title) = &table.title {
            out.push_str(title);
            out.push('\n');
        }
        out.push_str(&table.headers.join(separator));
        out.push('\n');
    }
    for row in &table.rows {
        let cells: Vec<&str> = row.iter().map(|c| c.as_deref().unwrap_or("")).collect();
        out.push_str(&cells.join(separator));
        out.push('\n');
    }
    if !tuples_only {
        if let Some(footer) = footer_text(table) {
            out.push_str(&footer);
            out.push('\n');
        }
    }
    out
}

fn format_csv(table: &Table, tuples_only: bool) -> String {
    let mut out = String::new();
    if !tuples_only {
        let cells: Vec<String> = table.headers.iter().map(|h| csv_field(h)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    for row in &table.rows {
        let cells: Vec<String> = row.iter().map(|c| c.as_deref().map(csv_field).unwrap_or_default()).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// RFC 4180: quote a field holding a comma, a quote, CR or LF, doubling inner quotes.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// psql's `\timing` line: milliseconds, and for a second or more the clock time too.
pub fn format_timing(elapsed_ms: f64) -> String {
    if elapsed_ms < 1000.0 {
        return format!("Time: {elapsed_ms:.3} ms");
    }
    let mut seconds = elapsed_ms / 1000.0;
    let mut minutes = (seconds / 60.0).floor();
    seconds -= 60.0 * minutes;
    if minutes < 60.0 {
        return format!("Time: {elapsed_ms:.3} ms ({:02}:{seconds:06.3})", minutes as i64);
    }
    let mut hours = (minutes / 60.0).floor();
    minutes -= 60.0 * hours;
    if hours < 24.0 {
        return format!("Time: {elapsed_ms:.3} ms ({:02}:{:02}:{seconds:06.3})", hours as i64, minutes as i64);
    }
    let days = (hours / 24.0).floor();
    hours -= 24.0 * days;
    format!("Time: {elapsed_ms:.3} ms ({days:.0} d {:02}:{:02}:{seconds:06.3})", hours as i64, minutes as i64)
}

/// A server message as psql prints it: notices keep their level word; a bare text is a NOTICE.
pub fn format_notice(notice: &str) -> String {
    const LEVELS: [&str; 6] = ["NOTICE:", "WARNING:", "INFO:", "LOG:", "DEBUG:", "ERROR:"];
    if LEVELS.iter().any(|level| notice.starts_with(level)) {
        notice.to_string()
    } else {
        format!("NOTICE:  {notice}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_common::{Datum, Numeric};
    use weft_sql::ColumnInfo;

    fn column(name: &str, data_type: DataType) -> ColumnInfo {
        ColumnInfo { name: name.to_string(), data_type, type_modifier: None }
    }

    /// `select 1 as a, 'xx'::text as bb, null::int as c, 1.5::float8 as d`
    fn one_row() -> QueryResult {
        QueryResult {
            columns: vec![
                column("a", DataType::Int4),
                column("bb", DataType::Text),
                column("c", DataType::Int4),
                column("d", DataType::Float8),
            ],
            rows: vec![vec![Datum::Int4(1), Datum::Text("xx".into()), Datum::Null, Datum::Float8(1.5)]],
            tag: "SELECT 1".into(),
            notices: vec![],
            returns_rows: true,
            time_zone: Default::default(),
            streamed: false,
        }
    }

    /// `select 'hello world' as x, 12345678901::int8 as longnumbercolumn, null::text as n,
    /// 2.25::numeric as numcol union all select 'a', -1, 'zz', 100`
    fn two_rows() -> QueryResult {
        let numeric = |mantissa: i128, scale: u16| Datum::Numeric(Numeric { mantissa, scale });
        QueryResult {
            columns: vec![
                column("x", DataType::Text),
                column("longnumbercolumn", DataType::Int8),
                column("n", DataType::Text),
                column("numcol", DataType::Numeric),
            ],
            rows: vec![
                vec![Datum::Text("hello world".into()), Datum::Int8(12345678901), Datum::Null, numeric(225, 2)],
                vec![Datum::Text("a".into()), Datum::Int8(-1), Datum::Text("zz".into()), numeric(100, 0)],
            ],
            tag: "SELECT 2".into(),
            notices: vec![],
            returns_rows: true,
            time_zone: Default::default(),
            streamed: false,
        }
    }

    fn options(format: Format, tuples_only: bool) -> OutputOptions {
        OutputOptions { format, tuples_only, ..OutputOptions::default() }
    }

    // The expected strings below were produced by psql 15.18 against PostgreSQL 15.

    #[test]
    fn aligned_matches_psql() {
        let expected = " a | bb | c |  d  \n---+----+---+-----\n 1 | xx |   | 1.5\n(1 row)\n\n";
        assert_eq!(format_result(&one_row(), &OutputOptions::default()), expected);
        let expected = concat!(
            "      x      | longnumbercolumn | n  | numcol \n",
            "-------------+------------------+----+--------\n",
            " hello world |      12345678901 |    |   2.25\n",
            " a           |               -1 | zz |    100\n",
            "(2 rows)\n\n"
        );
        assert_eq!(format_result(&two_rows(), &OutputOptions::default()), expected);
    }

    #[test]
    fn aligned_empty_and_tuples_only() {
        let mut empty = one_row();
        empty.columns.truncate(1);
        empty.rows.clear();
        assert_eq!(format_result(&empty, &OutputOptions::default()), " a \n---\n(0 rows)\n\n");
        assert_eq!(format_result(&empty, &options(Format::Aligned, true)), "\n");
        let mut two = one_row();
        two.columns.truncate(2);
        two.rows[0].truncate(2);
        assert_eq!(format_result(&two, &options(Format::Aligned, true)), " 1 | xx\n\n");
        // Widths still count the headers nobody sees (psql: ` 1 | xx |   | 1.5`).
        assert_eq!(format_result(&one_row(), &options(Format::Aligned, true)), " 1 | xx |   | 1.5\n\n");
    }

    #[test]
    fn unaligned_matches_psql() {
        assert_eq!(format_result(&one_row(), &options(Format::Unaligned, false)), "a|bb|c|d\n1|xx||1.5\n(1 row)\n");
        assert_eq!(format_result(&one_row(), &options(Format::Unaligned, true)), "1|xx||1.5\n");
        let semicolon = OutputOptions { field_separator: ";".into(), ..options(Format::Unaligned, false) };
        assert_eq!(format_result(&one_row(), &semicolon), "a;bb;c;d\n1;xx;;1.5\n(1 row)\n");
        let mut empty = one_row();
        empty.rows.clear();
        assert_eq!(format_result(&empty, &options(Format::Unaligned, true)), "");
    }

    #[test]
    fn csv_matches_psql() {
        // select 1 as a, 'x,"y' as "b c", null::int as c, '' as e, E'li\nne' as f
        let result = QueryResult {
            columns: vec![
                column("a", DataType::Int4),
                column("b c", DataType::Text),
                column("c", DataType::Int4),
                column("e", DataType::Text),
                column("f", DataType::Text),
            ],
            rows: vec![vec![
                Datum::Int4(1),
                Datum::Text("x,\"y".into()),
                Datum::Null,
                Datum::Text(String::new()),
                Datum::Text("li\nne".into()),
            ]],
            tag: "SELECT 1".into(),
            notices: vec![],
            returns_rows: true,
            time_zone: Default::default(),
            streamed: false,
        };
        assert_eq!(format_result(&result, &options(Format::Csv, false)), "a,b c,c,e,f\n1,\"x,\"\"y\",,,\"li\nne\"\n");
    }

    #[test]
    fn command_tags() {
        let insert = QueryResult { tag: "INSERT 0 2".into(), ..QueryResult::default() };
        assert_eq!(format_result(&insert, &OutputOptions::default()), "INSERT 0 2\n");
        assert_eq!(format_result(&insert, &options(Format::Csv, false)), "INSERT 0 2\n");
        let quiet = OutputOptions { quiet: true, ..OutputOptions::default() };
        assert_eq!(format_result(&insert, &quiet), "");
    }

    #[test]
    fn titled_tables_match_psql() {
        let list = Table::text(
            Some("List of relations"),
            &["Schema", "Name", "Type", "Owner"],
            vec![vec![Some("public".into()), Some("t".into()), Some("table".into()), Some("postgres".into())]],
            Footer::RowCount,
        );
        let expected = concat!(
            "        List of relations\n",
            " Schema | Name | Type  |  Owner   \n",
            "--------+------+-------+----------\n",
            " public | t    | table | postgres\n",
            "(1 row)\n\n"
        );
        assert_eq!(format_table(&list, &OutputOptions::default()), expected);

        let describe = Table::text(
            Some("Table \"public.t\""),
            &["Column", "Type", "Collation", "Nullable", "Default"],
            vec![
                vec![Some("a".into()), Some("integer".into()), None, Some("not null".into()), None],
                vec![Some("b".into()), Some("text".into()), None, None, None],
            ],
            Footer::Lines(Vec::new()),
        );
        let expected = concat!(
            "                 Table \"public.t\"\n",
            " Column |  Type   | Collation | Nullable | Default \n",
            "--------+---------+-----------+----------+---------\n",
            " a      | integer |           | not null | \n",
            " b      | text    |           |          | \n",
            "\n"
        );
        assert_eq!(format_table(&describe, &OutputOptions::default()), expected);
        let expected = "Table \"public.t\"\nColumn|Type|Collation|Nullable|Default\na|integer||not null|\nb|text|||\n";
        assert_eq!(format_table(&describe, &options(Format::Unaligned, false)), expected);
    }

    #[test]
    fn timing_lines_match_psql() {
        assert_eq!(format_timing(0.192), "Time: 0.192 ms");
        assert_eq!(format_timing(1234.5678), "Time: 1234.568 ms (00:01.235)");
        assert_eq!(format_timing(61_000.0), "Time: 61000.000 ms (01:01.000)");
        assert_eq!(format_timing(3_661_000.0), "Time: 3661000.000 ms (01:01:01.000)");
        assert_eq!(format_timing(90_061_000.0), "Time: 90061000.000 ms (1 d 01:01:01.000)");
    }

    #[test]
    fn notices() {
        assert_eq!(format_notice("hi there"), "NOTICE:  hi there");
        assert_eq!(format_notice("LOG:  begin tuple sort"), "LOG:  begin tuple sort");
    }
}
