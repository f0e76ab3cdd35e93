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
        Error(Box::new(ErrorFields { sqlstate, message: message.into(), detail: None, hint: None }))
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Error {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Error {
        self.hint = Some(hint.into());
        self
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

    /// The text psql prints: `ERROR:  message`, then `DETAIL:  ...` and `HINT:  ...` lines.
    pub fn to_psql_string(&self) -> String {
        let mut out = format!("ERROR:  {}", self.message);
        if let Some(detail) = &self.detail {
            out.push_str("\nDETAIL:  ");
            out.push_str(detail);
        }
        if let Some(hint) = &self.hint {
            out.push_str("\nHINT:  ");
            out.push_str(hint);
        }
        out
    }
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
