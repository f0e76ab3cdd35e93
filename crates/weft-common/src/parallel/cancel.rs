//! Cancellation shared by every participant of a statement.
//!
//! A [`CancelToken`] is an `Arc`'d flag plus the first error any participant reported. Two
//! ways to set it:
//!
//! - [`CancelToken::cancel`]: from outside (Ctrl-C in the shell, a cancel request on the
//!   wire). Participants see it at their next [`CancelToken::check`] or barrier poll and
//!   return `Error::canceled()` (57014, "canceling statement due to user request").
//! - [`CancelToken::fail`]: from a participant that hit an error. The first such error is
//!   kept and the flag is set, so the others stop; later errors (typically the others'
//!   "canceled") are dropped. The statement reports [`CancelToken::first_error`].
//!
//! A [`CancelToken::child`] has a flag and first error of its own and also sees its
//! parent's flag: a run whose failure the caller discards (falling back to another way)
//! must not cancel the statement.
//!
//! The flag is a relaxed-cheap `AtomicBool` read (Acquire), so checking it once per tuple
//! batch or page costs nothing measurable. There is no callback registry: waiting code polls
//! (barrier waits every 10 ms), which keeps the token free of locks on the hot path.

use crate::sync::{Arc, AtomicBool, Mutex, Ordering};
use crate::{Error, Result};

#[derive(Default)]
struct CancelState {
    canceled: AtomicBool,
    first_error: Mutex<Option<Error>>,
}

/// A statement's cancellation flag and first error; clones share them.
#[derive(Clone, Default)]
pub struct CancelToken {
    state: Arc<CancelState>,
    /// The token of the run this one is a [`child`](Self::child) of.
    parent: Option<Arc<CancelToken>>,
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken").field("canceled", &self.is_canceled()).finish()
    }
}

impl CancelToken {
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Ask every participant to stop.
    pub fn cancel(&self) {
        self.state.canceled.store(true, Ordering::Release);
    }

    pub fn is_canceled(&self) -> bool {
        self.state.canceled.load(Ordering::Acquire) || self.parent.as_ref().is_some_and(|p| p.is_canceled())
    }

    /// A token for a run inside this one whose failure must not fail this one (a run the
    /// caller may discard, such as a shortcut it falls back from): canceling this token
    /// stops the child, but the child's errors stay its own.
    pub fn child(&self) -> CancelToken {
        CancelToken { state: Arc::default(), parent: Some(Arc::new(self.clone())) }
    }

    /// `Err(Error::canceled())` once the token is canceled, for any reason.
    pub fn check(&self) -> Result<()> {
        if self.is_canceled() {
            Err(Error::canceled())
        } else {
            Ok(())
        }
    }

    /// Record `err` if it is the first error of this statement, then cancel everyone.
    /// Returns true if `err` was the one recorded.
    pub fn fail(&self, err: Error) -> bool {
        let recorded = {
            let mut first = self.state.first_error.lock();
            if first.is_none() {
                *first = Some(err);
                true
            } else {
                false
            }
        };
        self.cancel();
        recorded
    }

    /// The first error recorded by [`fail`](Self::fail), if any.
    pub fn first_error(&self) -> Option<Error> {
        self.state.first_error.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqlState;

    #[test]
    fn cancel_is_seen_by_clones() {
        let token = CancelToken::new();
        let other = token.clone();
        assert!(other.check().is_ok());
        token.cancel();
        assert_eq!(other.check().unwrap_err().sqlstate, SqlState::QUERY_CANCELED);
        assert!(other.first_error().is_none());
    }

    #[test]
    fn first_failure_wins() {
        let token = CancelToken::new();
        assert!(token.fail(Error::division_by_zero()));
        assert!(!token.clone().fail(Error::canceled()));
        assert!(token.is_canceled());
        assert_eq!(token.first_error().unwrap().sqlstate, SqlState::DIVISION_BY_ZERO);
    }

    #[test]
    fn a_child_fails_alone_but_stops_with_its_parent() {
        let parent = CancelToken::new();
        let child = parent.child();
        assert!(child.fail(Error::division_by_zero()));
        assert!(child.is_canceled());
        assert!(!parent.is_canceled() && parent.first_error().is_none());
        let other = parent.child();
        parent.cancel();
        assert_eq!(other.check().unwrap_err().sqlstate, SqlState::QUERY_CANCELED);
    }
}
