//! Sequences at run time: `nextval`, `currval`, `setval`.
//!
//! As in PostgreSQL, a sequence moves outside transactions: a value handed out is never
//! handed out again, even if the statement that took it fails. The database keeps one
//! [`Sequences`] for all sessions; each writing statement's commit copies the current
//! values into the catalog it publishes (so values used by committed rows are durable), and
//! a statement that moved a sequence without writing anything is followed by an empty
//! commit for the same purpose (see `Session::execute`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use weft_access::SequenceMeta;
use weft_common::{Error, Result, SqlState};

/// The sequences of a database with their current values.
#[derive(Debug, Default)]
pub struct Sequences {
    state: Mutex<BTreeMap<String, SequenceMeta>>,
    /// Set when a value moved since the last commit copied them.
    moved: AtomicBool,
}

/// Each session's last `nextval` per sequence, for `currval`.
#[derive(Debug, Default)]
pub struct SessionSequenceValues(Mutex<HashMap<String, i64>>);

fn undefined(name: &str) -> Error {
    Error::new(SqlState::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist"))
}

/// The sequence a `nextval('...')` argument names: `public.` is the only schema, and an
/// unquoted name folds to lower case (PostgreSQL's regclass input).
pub fn sequence_name(text: &str) -> String {
    let text = text.trim();
    let text = text.strip_prefix("public.").unwrap_or(text);
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => text.to_lowercase(),
    }
}

impl Sequences {
    pub fn new(sequences: &BTreeMap<String, SequenceMeta>) -> Sequences {
        Sequences { state: Mutex::new(sequences.clone()), moved: AtomicBool::new(false) }
    }

    /// `nextval(name)`: the next value, recorded as the session's `currval`.
    pub fn next_value(&self, name: &str, session: &SessionSequenceValues) -> Result<i64> {
        let name = sequence_name(name);
        let mut state = self.state.lock();
        let seq = state.get_mut(&name).ok_or_else(|| undefined(&name))?;
        let value = if !seq.is_called {
            seq.last_value
        } else {
            let next = seq.last_value.checked_add(seq.increment);
            match next {
                Some(v) if v <= seq.max_value && v >= seq.min_value => v,
                _ if seq.increment > 0 => {
                    return Err(Error::new(
                        SqlState::SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
                        format!("nextval: reached maximum value of sequence \"{name}\" ({})", seq.max_value),
                    ))
                }
                _ => {
                    return Err(Error::new(
                        SqlState::SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
                        format!("nextval: reached minimum value of sequence \"{name}\" ({})", seq.min_value),
                    ))
                }
            }
        };
        seq.last_value = value;
        seq.is_called = true;
        self.moved.store(true, Ordering::Release);
        session.0.lock().insert(name, value);
        Ok(value)
    }

    /// `currval(name)`: this session's last `nextval` of it.
    pub fn current_value(&self, name: &str, session: &SessionSequenceValues) -> Result<i64> {
        let name = sequence_name(name);
        if !self.state.lock().contains_key(&name) {
            return Err(undefined(&name));
        }
        session.0.lock().get(&name).copied().ok_or_else(|| {
            Error::new(
                SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("currval of sequence \"{name}\" is not yet defined in this session"),
            )
        })
    }

    /// `setval(name, value [, is_called])`.
    pub fn set_value(&self, name: &str, value: i64, is_called: bool, session: &SessionSequenceValues) -> Result<i64> {
        let name = sequence_name(name);
        let mut state = self.state.lock();
        let seq = state.get_mut(&name).ok_or_else(|| undefined(&name))?;
        if value < seq.min_value || value > seq.max_value {
            return Err(Error::new(
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                format!("setval: value {value} is out of bounds for sequence \"{name}\" ({}..{})", seq.min_value, seq.max_value),
            ));
        }
        seq.last_value = value;
        seq.is_called = is_called;
        self.moved.store(true, Ordering::Release);
        if is_called {
            session.0.lock().insert(name, value);
        }
        Ok(value)
    }

    /// Did a value move since the last [`record_into`](Self::record_into)?
    pub fn moved(&self) -> bool {
        self.moved.load(Ordering::Acquire)
    }

    /// Before a commit: write the current values into the catalog being published (for
    /// the sequences it still has).
    pub fn record_into(&self, catalog: &mut BTreeMap<String, SequenceMeta>) {
        self.moved.store(false, Ordering::Release);
        let state = self.state.lock();
        for (name, seq) in catalog.iter_mut() {
            if let Some(current) = state.get(name) {
                if current.owned_by == seq.owned_by && current.data_type == seq.data_type {
                    seq.last_value = current.last_value;
                    seq.is_called = current.is_called;
                }
            }
        }
    }

    /// After a statement of a transaction block: sequences it created can be used (by
    /// the block; dropped ones stay until the block commits).
    pub fn add_created(&self, catalog: &BTreeMap<String, SequenceMeta>) {
        let mut state = self.state.lock();
        for (name, seq) in catalog {
            state.entry(name.clone()).or_insert_with(|| seq.clone());
        }
    }

    /// After a commit: take the published set of sequences (created ones appear, dropped
    /// ones go; the others keep their run-time values).
    pub fn install(&self, catalog: &BTreeMap<String, SequenceMeta>) {
        let mut state = self.state.lock();
        state.retain(|name, _| catalog.contains_key(name));
        for (name, seq) in catalog {
            // The owner follows the catalog (a rename, or the rollback of one).
            state.entry(name.clone()).and_modify(|s| s.owned_by.clone_from(&seq.owned_by)).or_insert_with(|| seq.clone());
        }
    }

    /// ALTER TABLE ... RENAME moved the owner of sequence `name` (a serial column's):
    /// the next commit must still recognize it as the same sequence when it records its
    /// value. A rollback puts the old owner back through [`install`](Self::install).
    pub fn set_owner(&self, name: &str, owned_by: Option<(String, String)>) {
        if let Some(seq) = self.state.lock().get_mut(name) {
            seq.owned_by = owned_by;
        }
    }
}
