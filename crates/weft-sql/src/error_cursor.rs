//! Where an error found while binding points in the statement's text (PostgreSQL's error
//! cursor, psql's `LINE n:` and caret).
//!
//! The parser keeps a line and column for every identifier, literal and keyword-led node;
//! the binder wraps each expression it binds with [`place`], so an error gets the place of
//! the innermost expression that raised it. Only errors PostgreSQL reports while reading
//! the text get a place: names and types (SQLSTATE class 42) and literals that do not read
//! as their type (class 22, pointed at that literal); errors of running (division by zero,
//! a subquery returning two rows) have none. [`weft_common::Error::located_in`] turns the
//! line and column into the character position the wire protocol and psql use.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Spanned};
use sqlparser::tokenizer::{Location, Span};
use weft_common::{Cursor, Error, SqlState};

/// The parser's location as a cursor; `None` for a node the binder made itself.
fn cursor_at(location: Location) -> Option<Cursor> {
    let line = u32::try_from(location.line).ok().filter(|&l| l > 0)?;
    let column = u32::try_from(location.column).ok().filter(|&c| c > 0)?;
    Some(Cursor::At { line, column })
}

/// The first character after `span` that is not white space: where an operator that
/// follows an operand is.
fn cursor_after(span: Span) -> Option<Cursor> {
    match cursor_at(span.end)? {
        // `span.end` is just past the operand; `After` starts looking at the character
        // after the one it names.
        Cursor::At { line, column } if column > 1 => Some(Cursor::After { line, column: column - 1 }),
        cursor => Some(cursor),
    }
}

/// Point `error` at `span`'s start, if it is an error of reading the text.
pub(crate) fn place_at(error: Error, span: Span) -> Error {
    match cursor_at(span.start) {
        Some(cursor) if error.cursor.is_none() && is_error_of_reading(&error) => error.at(cursor),
        _ => error,
    }
}

/// Point `error` at what follows `span` (an operator after its left operand), if it is an
/// error of reading the text.
pub(crate) fn place_after(error: Error, span: Span) -> Error {
    match cursor_after(span) {
        Some(cursor) if error.cursor.is_none() && is_error_of_reading(&error) => error.at(cursor),
        _ => error,
    }
}

/// Errors of names, types and grouping (class 42), which PostgreSQL finds while reading.
fn is_error_of_reading(error: &Error) -> bool {
    error.sqlstate.0.starts_with("42") && error.sqlstate != SqlState::INSUFFICIENT_PRIVILEGE
}

/// Point an error raised while binding `expr` into the text (see the module comment).
pub(crate) fn place(error: Error, expr: &ast::Expr) -> Error {
    if error.cursor.is_some() {
        return error;
    }
    if is_error_of_reading(&error) {
        let operator_error = error.message.starts_with("operator does not exist") || error.message.starts_with("operator is not unique");
        let cursor = match expr {
            // PostgreSQL points at the operator, which comes after the left operand.
            ast::Expr::BinaryOp { left, .. } if operator_error => cursor_after(left.span()),
            ast::Expr::InSubquery { expr: left, .. } | ast::Expr::AnyOp { left, .. } | ast::Expr::AllOp { left, .. } => {
                cursor_after(left.span())
            }
            _ => cursor_at(expr.span().start),
        };
        return match cursor {
            Some(cursor) => error.at(cursor),
            None => error,
        };
    }
    if error.sqlstate.0.starts_with("22") {
        if let Some(cursor) = literal_named_by(&error, expr) {
            return error.at(cursor);
        }
    }
    error
}

/// A string literal in `expr` whose text the error quotes (`invalid input syntax for type
/// integer: "zz"`): PostgreSQL points at the literal it could not read.
fn literal_named_by(error: &Error, expr: &ast::Expr) -> Option<Cursor> {
    let mut found = None;
    let _ = crate::ast_walk::expressions(expr, |e| {
        if let ast::Expr::Value(value) = e {
            if let ast::Value::SingleQuotedString(text) | ast::Value::EscapedStringLiteral(text) = &value.value {
                if error.message.ends_with(&format!("\"{text}\"")) {
                    found = cursor_at(value.span.start);
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    });
    found
}

#[cfg(test)]
mod tests {
    fn located(sql: &str) -> (String, Option<u32>) {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path(), &[]).unwrap();
        let mut session = db.session();
        session.execute("CREATE TABLE et (a int, b text)").unwrap();
        let error = session.execute(sql).unwrap_err();
        (error.message.clone(), error.position())
    }

    /// Positions as PostgreSQL 15 reports them for the same statements.
    #[test]
    fn errors_point_where_postgresql_points() {
        assert_eq!(located("select x from et"), ("column \"x\" does not exist".into(), Some(8)));
        assert_eq!(located("select a,\n     zz from et").1, Some(16));
        assert_eq!(located("select a from nosuch").1, Some(15));
        assert_eq!(located("select foo(1)").1, Some(8));
        assert_eq!(located("select 'abc'::int").1, Some(8));
        assert_eq!(located("select 1 + 'x'").1, Some(12));
        assert_eq!(located("select a from et where b = 1").1, Some(26));
        assert_eq!(located("selec 1").1, Some(1));
        assert_eq!(located("select cast('q' as date)").1, Some(13));
        assert_eq!(located("select et.q from et").1, Some(8));
        assert_eq!(located("select sum(b) from et").1, Some(8));
        assert_eq!(located("select a, b from et e1, et e2").1, Some(8));
        assert_eq!(located("select count(*) from et where exists (select nosuch)").1, Some(46));
        assert_eq!(located("select * from et where a in (select a, b from et)").1, Some(26));
        assert_eq!(located("select 'é' || x").1, Some(15));
        assert_eq!(located("select 1 +").1, Some(11));
        // Errors of running have no place.
        assert_eq!(located("select 1/0"), ("division by zero".into(), None));
    }
}
