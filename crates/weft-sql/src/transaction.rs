//! Transaction blocks: `BEGIN` / `START TRANSACTION`, `COMMIT` / `END`, `ROLLBACK` /
//! `ABORT`, `SAVEPOINT`, `ROLLBACK TO SAVEPOINT`, `RELEASE SAVEPOINT`, PostgreSQL 15's
//! behaviour at READ COMMITTED.
//!
//! A block is a session state (`Session::block`), not a transaction by itself: until its
//! first writing statement it holds nothing, and each of its statements reads the latest
//! committed catalog, exactly as outside a block (READ COMMITTED takes a new snapshot per
//! statement anyway). Its first writing statement takes the database's write lock and a
//! [`WriteTxn`]; from then on every statement of the block runs in that transaction with
//! an xid of its own (consecutive xids are the block's command ids, see
//! `weft_access::snapshot`), and the block's reads use the transaction's catalog, whose
//! horizon is the last xid used: they see the block's own tables, rows and DDL. Nothing is
//! flushed or published until COMMIT, which is [`Database::commit`] — the same commit point
//! as a single statement's, one catalog publish for the whole block. ROLLBACK is
//! [`Database::abort`]: every xid of the block becomes aborted (one range) and the files
//! the block created are removed, so its rows, index entries (which carry the "check the
//! heap" bit) and DDL vanish together.
//!
//! States, as PostgreSQL's `TBLOCK_*` reduced to what a single-level block needs:
//!
//! ```text
//!            BEGIN                 error
//!  (none) ─────────▶ in progress ─────────▶ failed ── ROLLBACK / COMMIT ──▶ (none)
//!    ▲                 │    ▲                  │
//!    └─ COMMIT/ROLLBACK┘    └── ROLLBACK TO ───┘
//! ```
//!
//! In the failed state every statement but COMMIT, ROLLBACK and ROLLBACK TO fails with
//! 25P02; COMMIT of a failed block rolls it back and reports `ROLLBACK`.
//!
//! Savepoints keep a copy of the transaction's catalog and file sets; ROLLBACK TO restores
//! it, aborts the xids used since (one range) and removes the files created since. A
//! savepoint taken before the block's first write rolls back by aborting the whole write
//! transaction, which also releases the write lock.
//!
//! Settings: SET in a block is undone by ROLLBACK (and by ROLLBACK TO a savepoint taken
//! before it); SET LOCAL lasts until the block ends. The block keeps the settings of BEGIN
//! and the session-level settings (every SET but SET LOCAL) to restore them.
//!
//! Cursors: ROLLBACK TO closes those declared after the savepoint (`cursors.rs`).
//!
//! Not supported (0A000): isolation levels above READ COMMITTED, READ ONLY blocks,
//! `AND CHAIN`.

use std::sync::Arc;

use sqlparser::ast::{self, Statement};
use weft_access::Catalog;
use weft_common::{Error, Result, SqlState};
use weft_storage::RelFileLocator;

use crate::api::QueryResult;
use crate::bind::ident_name;
use crate::database::WriteTxn;
use crate::session::Session;
use crate::settings::Settings;

/// An open transaction block of a session.
pub(crate) struct Block {
    /// The write transaction, from the block's first writing statement on. Taken out while
    /// a statement runs in it.
    txn: Option<WriteTxn>,
    /// A statement failed: the block only accepts COMMIT, ROLLBACK and ROLLBACK TO.
    failed: bool,
    /// The transaction's catalog as the block's readers see it, made on demand after each
    /// write.
    view: Option<Arc<Catalog>>,
    /// The settings at BEGIN: ROLLBACK restores them.
    settings_at_begin: Settings,
    /// The settings without the block's SET LOCALs: COMMIT leaves these.
    session_settings: Settings,
    savepoints: Vec<Savepoint>,
}

struct Savepoint {
    name: String,
    /// The write transaction's state when the savepoint was taken; `None` when the block
    /// had not written yet.
    txn: Option<SavedTxn>,
    settings: Settings,
    session_settings: Settings,
}

struct SavedTxn {
    catalog: Catalog,
    created: std::collections::BTreeSet<RelFileLocator>,
    dropped: std::collections::BTreeSet<RelFileLocator>,
}

fn in_failed_block() -> Error {
    Error::new(SqlState::IN_FAILED_SQL_TRANSACTION, "current transaction is aborted, commands ignored until end of transaction block")
}

fn warning(tag: &str, message: &str) -> QueryResult {
    let mut result = QueryResult::command(tag);
    result.notices.push(format!("WARNING:  {message}"));
    result
}

fn only_in_block(what: &str) -> Error {
    Error::new(SqlState::NO_ACTIVE_SQL_TRANSACTION, format!("{what} can only be used in transaction blocks"))
}

fn no_savepoint(name: &str) -> Error {
    Error::new(SqlState::INVALID_SAVEPOINT_SPECIFICATION, format!("savepoint \"{name}\" does not exist"))
}

impl Session {
    /// Run a writing statement's body: in its own transaction (autocommit), or as the next
    /// statement of this session's transaction block (which takes the write lock at its
    /// first write).
    pub(crate) fn write<T>(&self, body: impl FnOnce(&mut WriteTxn) -> Result<T>) -> Result<T> {
        let cancel = self.current_cancel_token();
        let lock_timeout = self.lock_timeout();
        let mut guard = self.block.lock();
        let Some(block) = guard.as_mut() else {
            drop(guard);
            return self.db.write(&cancel, lock_timeout, body);
        };
        let mut txn = match block.txn.take() {
            Some(txn) => txn,
            None => self.db.begin(&cancel, lock_timeout)?,
        };
        block.view = None;
        drop(guard);
        let outcome = self.db.run_statement(&mut txn, body);
        self.db.sequences.add_created(&txn.catalog.sequences);
        if let Some(block) = self.block.lock().as_mut() {
            block.txn = Some(txn);
        }
        outcome
    }

    /// The catalog this session's statements read: the block's transaction's once it has
    /// written, else the committed one.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        let mut guard = self.block.lock();
        match guard.as_mut() {
            Some(Block { txn: Some(txn), view, .. }) => view.get_or_insert_with(|| Arc::new(txn.catalog.clone())).clone(),
            _ => self.db.catalog(),
        }
    }

    /// Is this session inside a transaction block? (psql's `*` in the prompt.)
    pub fn in_transaction_block(&self) -> bool {
        self.block.lock().is_some()
    }

    /// Is this session's transaction block in the failed state? (psql's `!`.)
    pub fn in_failed_transaction_block(&self) -> bool {
        self.block.lock().as_ref().is_some_and(|b| b.failed)
    }

    /// After a statement failed: a block it ran in is failed.
    pub(crate) fn fail_block(&self) {
        if let Some(block) = self.block.lock().as_mut() {
            block.failed = true;
        }
    }

    /// The statement is refused if the block is failed (25P02).
    pub(crate) fn check_not_failed(&self) -> Result<()> {
        if self.in_failed_transaction_block() {
            return Err(in_failed_block());
        }
        Ok(())
    }

    /// A plain SET / RESET (not LOCAL) changed `name` (all settings: `None`): inside a block
    /// it also holds after COMMIT.
    pub(crate) fn note_session_setting(&self, name: Option<&str>) {
        if let Some(block) = self.block.lock().as_mut() {
            match name {
                Some(name) => block.session_settings.copy_value(&self.settings, name),
                None => block.session_settings = self.settings.clone(),
            }
        }
    }

    /// End an open block, if any, without committing (the session is going away).
    pub(crate) fn abandon_block(&mut self) {
        if let Some(block) = self.block.get_mut().take() {
            if let Some(txn) = block.txn {
                self.db.abort(txn);
            }
        }
    }
}

/// Run a transaction control statement; `None` for any other statement.
pub(crate) fn control(session: &mut Session, statement: &Statement) -> Option<Result<QueryResult>> {
    Some(match statement {
        Statement::StartTransaction { modes, begin, statements, exception, has_end_keyword, .. } => {
            if !statements.is_empty() || exception.is_some() || *has_end_keyword {
                return Some(Err(Error::not_supported("BEGIN ... END blocks of statements are not supported")));
            }
            begin_block(session, modes, if *begin { "BEGIN" } else { "START TRANSACTION" })
        }
        Statement::Commit { chain: true, .. } | Statement::Rollback { chain: true, .. } => {
            Err(Error::not_supported("AND CHAIN is not supported yet"))
        }
        Statement::Commit { .. } => commit(session),
        Statement::Rollback { savepoint: None, .. } => Ok(rollback(session)),
        Statement::Rollback { savepoint: Some(name), .. } => rollback_to(session, &ident_name(name)),
        Statement::Savepoint { name } => session.check_not_failed().and_then(|()| savepoint(session, ident_name(name))),
        Statement::ReleaseSavepoint { name } => session.check_not_failed().and_then(|()| release(session, &ident_name(name))),
        _ => return None,
    })
}

fn begin_block(session: &mut Session, modes: &[ast::TransactionMode], tag: &str) -> Result<QueryResult> {
    for mode in modes {
        match mode {
            ast::TransactionMode::IsolationLevel(
                ast::TransactionIsolationLevel::ReadCommitted | ast::TransactionIsolationLevel::ReadUncommitted,
            )
            | ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadWrite) => {}
            other => {
                return Err(Error::not_supported(format!(
                    "{other} is not supported yet: transaction blocks run at READ COMMITTED, READ WRITE"
                )))
            }
        }
    }
    session.check_not_failed()?;
    let mut guard = session.block.lock();
    if guard.is_some() {
        return Ok(warning(tag, "there is already a transaction in progress"));
    }
    *guard = Some(Block {
        txn: None,
        failed: false,
        view: None,
        settings_at_begin: session.settings.clone(),
        session_settings: session.settings.clone(),
        savepoints: Vec::new(),
    });
    Ok(QueryResult::command(tag))
}

/// COMMIT / END: commit the block, or roll it back if it failed (tag `ROLLBACK`). A commit
/// that fails (an I/O error) rolls back and reports the error.
fn commit(session: &mut Session) -> Result<QueryResult> {
    let Some(block) = session.block.get_mut().take() else {
        return Ok(warning("COMMIT", "there is no transaction in progress"));
    };
    session.settings = block.session_settings;
    if block.failed {
        if let Some(txn) = block.txn {
            session.db.abort(txn);
        }
        crate::cursors::end_of_block(session, false);
        return Ok(QueryResult::command("ROLLBACK"));
    }
    if let Some(mut txn) = block.txn {
        if let Err(e) = session.db.commit(&mut txn) {
            session.db.abort(txn);
            crate::cursors::end_of_block(session, false);
            return Err(e);
        }
    }
    crate::cursors::end_of_block(session, true);
    Ok(QueryResult::command("COMMIT"))
}

/// ROLLBACK / ABORT.
fn rollback(session: &mut Session) -> QueryResult {
    let Some(block) = session.block.get_mut().take() else {
        return warning("ROLLBACK", "there is no transaction in progress");
    };
    session.settings = block.settings_at_begin;
    if let Some(txn) = block.txn {
        session.db.abort(txn);
    }
    crate::cursors::end_of_block(session, false);
    QueryResult::command("ROLLBACK")
}

fn savepoint(session: &mut Session, name: String) -> Result<QueryResult> {
    let settings = session.settings.clone();
    let Some(block) = session.block.get_mut().as_mut() else { return Err(only_in_block("SAVEPOINT")) };
    let txn = block.txn.as_ref().map(|txn| SavedTxn {
        catalog: txn.catalog.clone(),
        created: txn.created.clone(),
        dropped: txn.dropped.clone(),
    });
    block.savepoints.push(Savepoint { name, txn, settings, session_settings: block.session_settings.clone() });
    Ok(QueryResult::command("SAVEPOINT"))
}

/// How many savepoints the open block has (0 outside a block).
pub(crate) fn savepoint_count(session: &mut Session) -> usize {
    session.block.get_mut().as_ref().map_or(0, |block| block.savepoints.len())
}

/// RELEASE [SAVEPOINT] name: forget it and every later savepoint (their work stays).
fn release(session: &mut Session, name: &str) -> Result<QueryResult> {
    let Some(block) = session.block.get_mut().as_mut() else { return Err(only_in_block("RELEASE SAVEPOINT")) };
    let at = block.savepoints.iter().rposition(|s| s.name == name).ok_or_else(|| no_savepoint(name))?;
    block.savepoints.truncate(at);
    crate::cursors::released_to(session, at);
    Ok(QueryResult::command("RELEASE"))
}

/// ROLLBACK TO [SAVEPOINT] name: undo what the block did since the savepoint (which stays),
/// also in the failed state, which it leaves.
fn rollback_to(session: &mut Session, name: &str) -> Result<QueryResult> {
    let db = session.db.clone();
    let Some(block) = session.block.get_mut().as_mut() else { return Err(only_in_block("ROLLBACK TO SAVEPOINT")) };
    let at = block.savepoints.iter().rposition(|s| s.name == name).ok_or_else(|| no_savepoint(name))?;
    block.savepoints.truncate(at + 1);
    let savepoint = &block.savepoints[at];
    match (&savepoint.txn, block.txn.take()) {
        (_, None) => {}
        // The block had not written at the savepoint: nothing it wrote since survives.
        (None, Some(txn)) => db.abort(txn),
        (Some(saved), Some(mut txn)) => {
            let removed: Vec<RelFileLocator> = txn.created.difference(&saved.created).copied().collect();
            db.remove_created(removed.clone());
            for rel in &removed {
                txn.touched.remove(rel);
            }
            txn.created = saved.created.clone();
            txn.dropped = saved.dropped.clone();
            let mut catalog = saved.catalog.clone();
            catalog.aborted = std::mem::take(&mut txn.catalog.aborted);
            catalog.aborted.insert_range(saved.catalog.next_xid..txn.catalog.next_xid);
            catalog.next_xid = txn.catalog.next_xid;
            catalog.committed_max = txn.catalog.next_xid - 1;
            // Relation numbers stay unused once handed out.
            catalog.next_oid = txn.catalog.next_oid;
            txn.catalog = catalog;
            block.txn = Some(txn);
        }
    }
    block.view = None;
    block.failed = false;
    session.settings = savepoint.settings.clone();
    block.session_settings = savepoint.session_settings.clone();
    crate::cursors::rolled_back_to(session, at + 1);
    Ok(QueryResult::command("ROLLBACK"))
}
