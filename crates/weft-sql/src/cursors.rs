//! SQL cursors: `DECLARE name [NO] [SCROLL] CURSOR [WITH[OUT] HOLD] FOR query`, `FETCH`
//! and `MOVE` (every direction PostgreSQL has) and `CLOSE name | ALL`, as psql's
//! `FETCH_COUNT` and drivers' server-side cursors use them.
//!
//! A cursor's query runs to its end at DECLARE and FETCH reads the rows it holds, where
//! PostgreSQL runs the query as rows are fetched. The rows are the same (the query sees
//! the snapshot of the DECLARE either way); what differs is when a volatile function is
//! called and when an error in the query is raised. Holding them also makes every
//! cursor scrollable; one declared NO SCROLL still refuses to move backward, as
//! PostgreSQL's does.
//!
//! A cursor lives until CLOSE or the end of its transaction block; one WITH HOLD
//! outlives the block's COMMIT (not its ROLLBACK) and may be declared outside a block.
//! ROLLBACK TO a savepoint closes the cursors declared after it, as PostgreSQL drops the
//! portals of an aborted subtransaction (those declared before keep their position).

use sqlparser::ast::{self, CloseCursor, DeclareType, FetchDirection, Value};
use weft_common::parallel::CancelToken;
use weft_common::{Datum, Error, Result, SqlState};

use crate::api::{ColumnInfo, QueryResult};
use crate::bind::ident_name;
use crate::session::Session;

/// An open cursor: its rows and where it stands among them.
pub(crate) struct Cursor {
    columns: Vec<ColumnInfo>,
    rows: Vec<Vec<Datum>>,
    /// 0 before the first row, `1..=n` on row `n`, `n + 1` after the last.
    position: usize,
    no_scroll: bool,
    hold: bool,
    /// Declared in the open transaction block, which a ROLLBACK takes it away with.
    in_block: bool,
    /// How many of the block's savepoints were live at DECLARE (lowered by RELEASE): a
    /// ROLLBACK TO one of those savepoints keeps the cursor, to a later one closes it.
    savepoints: usize,
}

pub(crate) fn declare(session: &mut Session, declarations: &[ast::Declare], cancel: &CancelToken) -> Result<QueryResult> {
    let [declaration] = declarations else {
        return Err(Error::not_supported("DECLARE of several names is not supported"));
    };
    let (Some(DeclareType::Cursor), [name], Some(query)) = (&declaration.declare_type, &declaration.names[..], &declaration.for_query) else {
        return Err(Error::not_supported("only DECLARE ... CURSOR FOR query is supported"));
    };
    if declaration.binary == Some(true) {
        return Err(Error::not_supported("BINARY cursors are not supported"));
    }
    let name = ident_name(name);
    let hold = declaration.hold == Some(true);
    let in_block = session.in_transaction_block();
    if !in_block && !hold {
        return Err(Error::new(SqlState::NO_ACTIVE_SQL_TRANSACTION, "DECLARE CURSOR can only be used in transaction blocks"));
    }
    if session.cursors.contains_key(&name) {
        return Err(Error::new(SqlState::DUPLICATE_CURSOR, format!("cursor \"{name}\" already exists")));
    }
    // The rows are held, not sent: a streaming caller's sink is not this statement's.
    let sink = session.row_sink.take();
    let result = crate::statements::select(session, query, cancel);
    session.row_sink = sink;
    let result = result?;
    let no_scroll = declaration.scroll == Some(false);
    let savepoints = crate::transaction::savepoint_count(session);
    session.cursors.insert(name, Cursor { columns: result.columns, rows: result.rows, position: 0, no_scroll, hold, in_block, savepoints });
    Ok(QueryResult::command("DECLARE CURSOR"))
}

/// Where a FETCH moves: `count` rows forward (backward when negative; 0 re-reads the
/// current row), or to one row by its number.
enum Motion {
    Forward(i64),
    Absolute(i64),
    Relative(i64),
}

pub(crate) fn fetch(session: &mut Session, name: &ast::Ident, direction: &FetchDirection, into: Option<&ast::ObjectName>) -> Result<QueryResult> {
    if into.is_some() {
        return Err(Error::not_supported("FETCH ... INTO is not supported"));
    }
    let motion = match direction {
        FetchDirection::Count { limit } | FetchDirection::Forward { limit: Some(limit) } => Motion::Forward(count(limit)?),
        FetchDirection::Next | FetchDirection::Forward { limit: None } => Motion::Forward(1),
        FetchDirection::Prior | FetchDirection::Backward { limit: None } => Motion::Forward(-1),
        FetchDirection::Backward { limit: Some(limit) } => Motion::Forward(count(limit)?.saturating_neg()),
        FetchDirection::All | FetchDirection::ForwardAll => Motion::Forward(i64::MAX),
        FetchDirection::BackwardAll => Motion::Forward(-i64::MAX),
        FetchDirection::First => Motion::Absolute(1),
        FetchDirection::Last => Motion::Absolute(-1),
        FetchDirection::Absolute { limit } => Motion::Absolute(count(limit)?),
        FetchDirection::Relative { limit } => Motion::Relative(count(limit)?),
    };
    run_fetch(session, &ident_name(name), motion, false)
}

/// Is `sql` a FETCH or MOVE? sqlparser reads neither a signed count (`ABSOLUTE -1`), a
/// FETCH without FROM / IN, nor MOVE: [`fetch_text`] reads them.
pub(crate) fn is_fetch_or_move(sql: &str) -> bool {
    let first = sql.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
    first.eq_ignore_ascii_case("fetch") || first.eq_ignore_ascii_case("move")
}

/// The words of `sql`, split at white space, a double-quoted name (which may hold white
/// space, and `""` for a quote) kept whole with its quotes; `None` for an unclosed quote.
fn words(sql: &str) -> Option<Vec<&str>> {
    let mut words = Vec::new();
    let mut rest = sql.trim_start();
    while !rest.is_empty() {
        let end = if rest.starts_with('"') {
            // The closing quote is one not doubled.
            let mut at = 1;
            loop {
                at += rest[at..].find('"')? + 1;
                if !rest[at..].starts_with('"') {
                    break at;
                }
                at += 1;
            }
        } else {
            rest.find(|c: char| c.is_whitespace() || c == '"').unwrap_or(rest.len())
        };
        words.push(&rest[..end]);
        rest = rest[end..].trim_start();
    }
    Some(words)
}

/// Run `FETCH | MOVE [direction] [FROM | IN] cursor`; `None` when `sql` is not in that
/// form (sqlparser then reads it, and reports what is wrong).
pub(crate) fn fetch_text(session: &mut Session, sql: &str) -> Option<Result<QueryResult>> {
    let words = words(sql.trim().trim_end_matches(';'))?;
    let (first, name, mut direction) = match &words[..] {
        [first, direction @ .., name] => (first.to_ascii_lowercase(), *name, direction.to_vec()),
        _ => return None,
    };
    if direction.last().is_some_and(|w| w.eq_ignore_ascii_case("from") || w.eq_ignore_ascii_case("in")) {
        direction.pop();
    }
    let direction: Vec<String> = direction.iter().map(|w| w.to_ascii_lowercase()).collect();
    let number = |w: &String| w.parse::<i64>().ok();
    let motion = match direction.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] | ["next"] | ["forward"] => Motion::Forward(1),
        ["prior"] | ["backward"] => Motion::Forward(-1),
        ["first"] => Motion::Absolute(1),
        ["last"] => Motion::Absolute(-1),
        ["all"] | ["forward", "all"] => Motion::Forward(i64::MAX),
        ["backward", "all"] => Motion::Forward(-i64::MAX),
        ["absolute", _] => Motion::Absolute(number(&direction[1])?),
        ["relative", _] => Motion::Relative(number(&direction[1])?),
        ["forward", _] => Motion::Forward(number(&direction[1])?),
        ["backward", _] => Motion::Forward(number(&direction[1])?.checked_neg()?),
        [_] => Motion::Forward(number(&direction[0])?),
        _ => return None,
    };
    let name = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None if name.chars().all(|c| c.is_alphanumeric() || c == '_') => name.to_lowercase(),
        None => return None,
    };
    Some(run_fetch(session, &name, motion, first == "move"))
}

/// FETCH (or, `moving`, MOVE) the cursor `name` by `motion`.
fn run_fetch(session: &mut Session, name: &str, motion: Motion, moving: bool) -> Result<QueryResult> {
    let cursor = session.cursors.get_mut(name).ok_or_else(|| no_cursor(name))?;
    let rows = cursor.fetch(motion)?;
    if moving {
        return Ok(QueryResult::command(format!("MOVE {}", rows.len())));
    }
    let tag = format!("FETCH {}", rows.len());
    Ok(QueryResult::rows(cursor.columns.clone(), rows, tag))
}

pub(crate) fn close(session: &mut Session, which: &CloseCursor) -> Result<QueryResult> {
    match which {
        CloseCursor::All => {
            session.cursors.clear();
            return Ok(QueryResult::command("CLOSE CURSOR ALL"));
        }
        CloseCursor::Specific { name } => {
            let name = ident_name(name);
            session.cursors.remove(&name).ok_or_else(|| no_cursor(&name))?;
        }
    }
    Ok(QueryResult::command("CLOSE CURSOR"))
}

/// The transaction block ended: its cursors go, but those WITH HOLD outlive a commit.
pub(crate) fn end_of_block(session: &mut Session, committed: bool) {
    session.cursors.retain(|_, cursor| cursor.hold && (committed || !cursor.in_block));
    session.cursors.values_mut().for_each(|cursor| cursor.in_block = false);
}

/// ROLLBACK TO the savepoint that was the `kept`-th of the block: the cursors declared
/// after it are gone.
pub(crate) fn rolled_back_to(session: &mut Session, kept: usize) {
    session.cursors.retain(|_, cursor| cursor.savepoints < kept);
}

/// RELEASE left `live` savepoints: the cursors declared under the released ones now
/// belong to the savepoint before them (a later ROLLBACK TO it closes them).
pub(crate) fn released_to(session: &mut Session, live: usize) {
    session.cursors.values_mut().for_each(|cursor| cursor.savepoints = cursor.savepoints.min(live));
}

impl Cursor {
    fn fetch(&mut self, motion: Motion) -> Result<Vec<Vec<Datum>>> {
        let n = self.rows.len() as i64;
        let at = self.position as i64;
        let (target, moving_back) = match motion {
            Motion::Forward(count) => (at.saturating_add(count).clamp(0, n + 1), count < 0),
            Motion::Absolute(k) => {
                let target = if k >= 0 { k.min(n + 1) } else { (n + 1 + k.max(-n - 1)).max(0) };
                (target, target < at)
            }
            Motion::Relative(k) => (at.saturating_add(k).clamp(0, n + 1), k < 0),
        };
        if moving_back && self.no_scroll {
            return Err(Error::new(SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "cursor can only scan forward")
                .with_hint("Declare it with SCROLL option to enable backward scan."));
        }
        self.position = target as usize;
        let row = |i: i64| self.rows[(i - 1) as usize].clone();
        Ok(match motion {
            // Every row passed over, in the order passed: forward from the one after the
            // current, backward from the one before it.
            Motion::Forward(count) if count > 0 => (at + 1..=target.min(n)).map(row).collect(),
            Motion::Forward(count) if count < 0 => (target.max(1)..at.min(n + 1)).rev().map(row).collect(),
            // One row, if the cursor now stands on one (0 re-reads the current row).
            _ => (1..=n).contains(&target).then(|| row(target)).into_iter().collect(),
        })
    }
}

fn count(limit: &ast::ValueWithSpan) -> Result<i64> {
    match &limit.value {
        Value::Number(text, _) => text.parse().map_err(|_| Error::syntax(format!("invalid FETCH count \"{text}\""))),
        other => Err(Error::syntax(format!("syntax error at or near \"{other}\""))),
    }
}

fn no_cursor(name: &str) -> Error {
    Error::new(SqlState::INVALID_CURSOR_NAME, format!("cursor \"{name}\" does not exist"))
}
