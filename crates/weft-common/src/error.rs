//! Errors as PostgreSQL reports them: a SQLSTATE, a primary message, and an
//! optional detail and hint. User errors (bad input, unknown objects, overflow)
//! carry the SQLSTATE PostgreSQL would use; internal bugs use `XX000`.

use std::fmt;

/// A five-character SQLSTATE code, e.g. `42P01`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SqlState(pub &'static str);

impl fmt::Debug for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl SqlState {
    pub const SUCCESSFUL_COMPLETION: SqlState = SqlState("00000");
    pub const FEATURE_NOT_SUPPORTED: SqlState = SqlState("0A000");
    pub const CARDINALITY_VIOLATION: SqlState = SqlState("21000");
    pub const DATA_EXCEPTION: SqlState = SqlState("22000");
    pub const STRING_DATA_RIGHT_TRUNCATION: SqlState = SqlState("22001");
    pub const NUMERIC_VALUE_OUT_OF_RANGE: SqlState = SqlState("22003");
    pub const SEQUENCE_GENERATOR_LIMIT_EXCEEDED: SqlState = SqlState("2200H");
    pub const DATETIME_FIELD_OVERFLOW: SqlState = SqlState("22008");
    pub const INVALID_DATETIME_FORMAT: SqlState = SqlState("22007");
    pub const DIVISION_BY_ZERO: SqlState = SqlState("22012");
    pub const INVALID_PARAMETER_VALUE: SqlState = SqlState("22023");
    pub const INVALID_ROW_COUNT_IN_LIMIT_CLAUSE: SqlState = SqlState("2201W");
    pub const INVALID_TEXT_REPRESENTATION: SqlState = SqlState("22P02");
    pub const BAD_COPY_FILE_FORMAT: SqlState = SqlState("22P04");
    pub const NOT_NULL_VIOLATION: SqlState = SqlState("23502");
    pub const UNIQUE_VIOLATION: SqlState = SqlState("23505");
    pub const FOREIGN_KEY_VIOLATION: SqlState = SqlState("23503");
    pub const CHECK_VIOLATION: SqlState = SqlState("23514");
    pub const INDEX_CORRUPTED: SqlState = SqlState("XX002");
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: SqlState = SqlState("55000");
    pub const LOCK_NOT_AVAILABLE: SqlState = SqlState("55P03");
    pub const ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25001");
    pub const NO_ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25P01");
    pub const IN_FAILED_SQL_TRANSACTION: SqlState = SqlState("25P02");
    pub const INVALID_SAVEPOINT_SPECIFICATION: SqlState = SqlState("3B001");
    pub const INVALID_CURSOR_STATE: SqlState = SqlState("24000");
    pub const INVALID_CURSOR_NAME: SqlState = SqlState("34000");
    pub const DUPLICATE_CURSOR: SqlState = SqlState("42P03");
    pub const SYNTAX_ERROR: SqlState = SqlState("42601");
    pub const INSUFFICIENT_PRIVILEGE: SqlState = SqlState("42501");
    pub const UNDEFINED_COLUMN: SqlState = SqlState("42703");
    pub const UNDEFINED_FUNCTION: SqlState = SqlState("42883");
    pub const UNDEFINED_TABLE: SqlState = SqlState("42P01");
    pub const UNDEFINED_OBJECT: SqlState = SqlState("42704");
    pub const INVALID_NAME: SqlState = SqlState("42602");
    pub const INVALID_SCHEMA_NAME: SqlState = SqlState("3F000");
    pub const DUPLICATE_TABLE: SqlState = SqlState("42P07");
    pub const DUPLICATE_OBJECT: SqlState = SqlState("42710");
    pub const DUPLICATE_COLUMN: SqlState = SqlState("42701");
    pub const INVALID_TABLE_DEFINITION: SqlState = SqlState("42P16");
    pub const DEPENDENT_OBJECTS_STILL_EXIST: SqlState = SqlState("2BP01");
    pub const AMBIGUOUS_COLUMN: SqlState = SqlState("42702");
    pub const DUPLICATE_ALIAS: SqlState = SqlState("42712");
    pub const DATATYPE_MISMATCH: SqlState = SqlState("42804");
    pub const GROUPING_ERROR: SqlState = SqlState("42803");
    pub const INVALID_COLUMN_REFERENCE: SqlState = SqlState("42P10");
    pub const CANNOT_COERCE: SqlState = SqlState("42846");
    pub const WRONG_OBJECT_TYPE: SqlState = SqlState("42809");
    pub const UNDEFINED_PARAMETER: SqlState = SqlState("42704");
    pub const CANT_CHANGE_RUNTIME_PARAM: SqlState = SqlState("55P02");
    pub const OUT_OF_MEMORY: SqlState = SqlState("53200");
    pub const DISK_FULL: SqlState = SqlState("53100");
    pub const PROGRAM_LIMIT_EXCEEDED: SqlState = SqlState("54000");
    pub const QUERY_CANCELED: SqlState = SqlState("57014");
    pub const CONNECTION_FAILURE: SqlState = SqlState("08006");
    pub const IO_ERROR: SqlState = SqlState("58030");
    pub const UNDEFINED_FILE: SqlState = SqlState("58P01");
    pub const DATA_CORRUPTED: SqlState = SqlState("XX001");
    pub const INTERNAL_ERROR: SqlState = SqlState("XX000");
}

/// An error as PostgreSQL would report it. Boxed: every `Result` of the executor's hot
/// paths (a `Result<Datum>` per evaluated expression) is then a word or two wider than its
/// value instead of carrying four strings' worth of bytes (88 bytes for a `Datum`).
#[derive(Clone, PartialEq)]
pub struct Error(Box<ErrorFields>);

/// What an [`Error`] says; its fields are read and written through the error.
#[derive(Clone, PartialEq)]
pub struct ErrorFields {
    pub sqlstate: SqlState,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// Where in the statement's text the error was found, when it was found while reading
    /// the text (parsing, name resolution, literal coercion); `None` for errors of running.
    pub cursor: Option<Cursor>,
    /// Where the error happened, as PostgreSQL's CONTEXT line says it (`COPY t, line 2,
    /// column a: "zz"`).
    pub context: Option<String>,
}

/// Where an error points in a statement's text: PostgreSQL's error cursor, which psql shows
/// as a `LINE n:` line and a caret under the place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cursor {
    /// At this 1-based line and column (counted in characters), as the SQL parser counts
    /// them; [`Error::located_in`] turns it into a [`Cursor::Position`].
    At { line: u32, column: u32 },
    /// At the first character after this line and column that is not white space: an
    /// operator, whose place the parser does not keep, after its left operand's end.
    After { line: u32, column: u32 },
    /// PostgreSQL's `P` field: a 1-based character index into the statement's text.
    Position(u32),
}

impl std::ops::Deref for Error {
    type Target = ErrorFields;
    fn deref(&self) -> &ErrorFields {
        &self.0
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut ErrorFields {
        &mut self.0
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(sqlstate: SqlState, message: impl Into<String>) -> Error {
        Error(Box::new(ErrorFields { sqlstate, message: message.into(), detail: None, hint: None, cursor: None, context: None }))
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Error {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Error {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_context(mut self, context: impl Into<String>) -> Error {
        self.context = Some(context.into());
        self
    }

    /// Point the error at `cursor`, unless it points somewhere already (the innermost
    /// place that found it knows best).
    pub fn at(mut self, cursor: Cursor) -> Error {
        if self.cursor.is_none() {
            self.cursor = Some(cursor);
        }
        self
    }

    /// The error's place as a 1-based character index into `text`, the text the parser
    /// read: a line and column become a position, one outside the text is dropped.
    pub fn located_in(mut self, text: &str) -> Error {
        self.cursor = match self.cursor {
            Some(Cursor::At { line, column }) => char_index(text, line, column, false).map(Cursor::Position),
            Some(Cursor::After { line, column }) => char_index(text, line, column, true).map(Cursor::Position),
            other => other,
        };
        self
    }

    /// The position [`Error::located_in`] found, if any.
    pub fn position(&self) -> Option<u32> {
        match self.cursor {
            Some(Cursor::Position(p)) => Some(p),
            _ => None,
        }
    }

    /// An internal error: a bug in weft, not in the user's input.
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(SqlState::INTERNAL_ERROR, message)
    }

    pub fn not_supported(message: impl Into<String>) -> Error {
        Error::new(SqlState::FEATURE_NOT_SUPPORTED, message)
    }

    pub fn syntax(message: impl Into<String>) -> Error {
        Error::new(SqlState::SYNTAX_ERROR, message)
    }

    pub fn canceled() -> Error {
        Error::new(SqlState::QUERY_CANCELED, "canceling statement due to user request")
    }

    pub fn out_of_range(type_name: &str) -> Error {
        Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, format!("{type_name} out of range"))
    }

    pub fn division_by_zero() -> Error {
        Error::new(SqlState::DIVISION_BY_ZERO, "division by zero")
    }

    /// An I/O error on a named file; a full disk gets its own SQLSTATE.
    pub fn io(context: impl fmt::Display, err: &std::io::Error) -> Error {
        let sqlstate = if err.raw_os_error() == Some(28) { SqlState::DISK_FULL } else { SqlState::IO_ERROR };
        Error::new(sqlstate, format!("{context}: {err}"))
    }

    /// The text psql prints: `ERROR:  message`, then `DETAIL:  ...`, `HINT:  ...` and
    /// `CONTEXT:  ...` lines.
    pub fn to_psql_string(&self) -> String {
        self.psql_text(None)
    }

    /// [`Error::to_psql_string`] with psql's `LINE n:` display of the error's position in
    /// `query`, the statement's text, when it has one.
    pub fn to_psql_string_for(&self, query: &str) -> String {
        self.psql_text(Some(query))
    }

    fn psql_text(&self, query: Option<&str>) -> String {
        let mut out = format!("ERROR:  {}", self.message);
        if let Some(lines) = query.zip(self.position()).and_then(|(q, p)| cursor_display(q, p)) {
            out.push('\n');
            out.push_str(&lines);
        }
        if let Some(detail) = &self.detail {
            out.push_str("\nDETAIL:  ");
            out.push_str(detail);
        }
        if let Some(hint) = &self.hint {
            out.push_str("\nHINT:  ");
            out.push_str(hint);
        }
        if let Some(context) = &self.context {
            out.push_str("\nCONTEXT:  ");
            out.push_str(context);
        }
        out
    }
}

/// The 1-based character index of the character at `line` / `column` (1-based, as the
/// parser counts: lines end at `\n`), or with `skip_space` of the first character at or
/// after the one following it that is not white space.
fn char_index(text: &str, line: u32, column: u32, skip_space: bool) -> Option<u32> {
    if line == 0 || column == 0 {
        return None; // a node the binder made, not one the parser read
    }
    let (mut at_line, mut at_column) = (1, 1);
    let mut chars = text.chars().enumerate().peekable();
    while let Some(&(index, c)) = chars.peek() {
        if at_line == line && at_column == column {
            if !skip_space {
                return u32::try_from(index + 1).ok();
            }
            chars.next();
            return chars.find(|(_, c)| !c.is_whitespace()).and_then(|(i, _)| u32::try_from(i + 1).ok());
        }
        if c == '\n' {
            at_line += 1;
            at_column = 1;
        } else {
            at_column += 1;
        }
        chars.next();
    }
    // Just past the end: PostgreSQL points there for `syntax error at end of input`.
    (at_line == line && at_column == column && !skip_space).then(|| u32::try_from(text.chars().count() + 1).ok()).flatten()
}

/// psql's display of an error position: `LINE n: ` and the line holding character
/// `position` (1-based) of `query`, cut to about 60 columns around it, then a caret under
/// it. `None` when the position is outside the text.
pub fn cursor_display(query: &str, position: u32) -> Option<String> {
    const DISPLAY_WIDTH: usize = 60;
    const KEEP_RIGHT: usize = 10; // characters kept after the caret when the line is cut
    let chars: Vec<char> = query.chars().map(|c| if c == '\t' { ' ' } else { c }).collect();
    let at = (position as usize).checked_sub(1)?;
    if at > chars.len() {
        return None;
    }
    // The line holding `at`: a `\r`, a `\n` or a `\r\n` ends one.
    let mut line_number = 1;
    let mut begin = 0;
    for (i, &c) in chars.iter().enumerate().take(at) {
        if c == '\r' || c == '\n' {
            if c == '\r' || i == 0 || chars[i - 1] != '\r' {
                line_number += 1;
            }
            begin = i + 1;
        }
    }
    let mut end = chars[at..].iter().position(|&c| c == '\r' || c == '\n').map_or(chars.len(), |i| at + i);
    let (mut cut_left, mut cut_right) = (false, false);
    if end - begin > DISPLAY_WIDTH {
        if begin + DISPLAY_WIDTH >= at + KEEP_RIGHT {
            end = begin + DISPLAY_WIDTH;
            cut_right = true;
        } else {
            if at + KEEP_RIGHT < end {
                end = at + KEEP_RIGHT;
                cut_right = true;
            }
            if end - begin > DISPLAY_WIDTH {
                begin = end - DISPLAY_WIDTH;
                cut_left = true;
            }
        }
    }
    let prefix = format!("LINE {line_number}: {}", if cut_left { "..." } else { "" });
    let text: String = chars[begin..end].iter().collect();
    let caret_column = prefix.chars().count() + (at - begin);
    Some(format!("{prefix}{text}{}\n{}^", if cut_right { "..." } else { "" }, " ".repeat(caret_column)))
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.message, self.sqlstate.0)?;
        if let Some(d) = &self.detail {
            write!(f, " DETAIL: {d}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(query: &str, line: u32, column: u32) -> String {
        let error = Error::syntax("x").at(Cursor::At { line, column }).located_in(query);
        cursor_display(query, error.position().expect("a position")).unwrap()
    }

    #[test]
    fn positions_count_characters_and_lines() {
        assert_eq!(shown("select x from et", 1, 8), "LINE 1: select x from et\n               ^");
        assert_eq!(shown("select a,\n     zz from et", 2, 6), "LINE 2:      zz from et\n             ^");
        assert_eq!(shown("select 'é' || x", 1, 15), "LINE 1: select 'é' || x\n                      ^");
        // Just past the end (end of input), and outside the text.
        assert_eq!(Error::syntax("x").at(Cursor::At { line: 1, column: 9 }).located_in("select 1").position(), Some(9));
        assert_eq!(Error::syntax("x").at(Cursor::At { line: 3, column: 1 }).located_in("select 1").position(), None);
        assert_eq!(Error::syntax("x").at(Cursor::At { line: 0, column: 0 }).located_in("select 1").position(), None);
        // An operator after its left operand.
        let after = Error::syntax("x").at(Cursor::After { line: 1, column: 24 }).located_in("select a from et where b  = 1");
        assert_eq!(after.position(), Some(27));
        // The first place set wins.
        let first = Error::syntax("x").at(Cursor::Position(3)).at(Cursor::Position(5));
        assert_eq!(first.position(), Some(3));
    }

    #[test]
    fn long_lines_are_cut_as_psql_cuts_them() {
        let long = format!("select {}, {}, c from et", "a".repeat(58), "b".repeat(61));
        assert_eq!(shown(&long, 1, 8), format!("LINE 1: select {}...\n               ^", "a".repeat(53)));
        // Far right: cut on the left too, ten characters kept after the caret.
        let error = Error::syntax("x").at(Cursor::At { line: 1, column: 120 }).located_in(&long);
        let display = cursor_display(&long, error.position().unwrap()).unwrap();
        let (text, caret) = display.split_once('\n').unwrap();
        assert!(text.starts_with("LINE 1: ...") && text.ends_with("..."), "{text}");
        assert_eq!(text.chars().count(), "LINE 1: ...".len() + 60 + 3);
        assert_eq!(caret.chars().count() - 1, "LINE 1: ...".len() + 50);
        assert_eq!(cursor_display("select 1", 10), None);
    }

    #[test]
    fn psql_text_puts_the_line_before_the_detail() {
        let error = Error::syntax("boom").with_detail("why").at(Cursor::At { line: 1, column: 1 }).located_in("selec 1");
        assert_eq!(error.to_psql_string_for("selec 1"), "ERROR:  boom\nLINE 1: selec 1\n        ^\nDETAIL:  why");
        assert_eq!(error.to_psql_string(), "ERROR:  boom\nDETAIL:  why");
    }
}
