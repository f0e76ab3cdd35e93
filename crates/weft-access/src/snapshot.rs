//! Statement-level visibility without a WAL.
//!
//! Every writing statement gets a transaction id (`Xid`) and stamps it into each tuple it
//! inserts. Writing statements run one at a time, so xids commit in order: the catalog keeps
//! the highest committed xid and the (rare) set of xids that failed or were cut off by a
//! crash. A tuple is visible when its xmin is committed and not aborted. This is what makes
//! a failed `INSERT ... SELECT` or a `kill -9` mid-statement leave nothing half-visible: the
//! rows are on disk, but nobody can see them.

use std::collections::BTreeSet;
use std::sync::Arc;

pub type Xid = u64;

/// What a statement may see: fixed when it starts.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub committed_max: Xid,
    pub aborted: Arc<BTreeSet<Xid>>,
}

impl Snapshot {
    #[inline]
    pub fn is_visible(&self, xmin: Xid) -> bool {
        xmin <= self.committed_max && (self.aborted.is_empty() || !self.aborted.contains(&xmin))
    }
}
