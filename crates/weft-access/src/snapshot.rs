//! Visibility without a WAL: transaction ids, a commit horizon and the aborted set.
//!
//! Every writing statement gets a transaction id (`Xid`) and stamps it into each tuple it
//! inserts (xmin) or deletes (xmax). Writers run one at a time (the database's write lock),
//! so xids commit in order: the catalog keeps the highest committed xid and the (rare) set
//! of xids that failed, were rolled back or were cut off by a crash. A tuple is visible when
//! its xmin is committed and not aborted. This is what makes a failed `INSERT ... SELECT` or
//! a `kill -9` mid-statement leave nothing half-visible: the rows are on disk, but nobody
//! can see them.
//!
//! A transaction block (`BEGIN ... COMMIT`) gives each of its statements an xid of its own,
//! consecutive ones, and holds the write lock from its first write to its end: the xids of
//! a block play the part of PostgreSQL's command ids. A statement of the block sees the
//! block's earlier statements (its snapshot's horizon is its own xid − 1, which only the
//! block can have used since it holds the lock) but not its own in-progress writes, and
//! other sessions' snapshots stop before the block's first xid until COMMIT moves the
//! horizon past its last one. ROLLBACK (or ROLLBACK TO a savepoint) adds the xids
//! concerned to the aborted set as one range.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub type Xid = u64;

/// A set of xids kept as disjoint, non-adjacent ranges, so that a rolled-back block of a
/// million statements costs one entry. In the catalog it is a JSON array of single xids
/// and `[start, end)` pairs (a catalog written before ranges, all single xids, still loads).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XidSet {
    /// start → end (exclusive).
    ranges: BTreeMap<Xid, Xid>,
}

impl XidSet {
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    #[inline]
    pub fn contains(&self, xid: Xid) -> bool {
        self.ranges.range(..=xid).next_back().is_some_and(|(_, &end)| xid < end)
    }

    pub fn insert(&mut self, xid: Xid) {
        self.insert_range(xid..xid + 1);
    }

    /// Add every xid of `range`, merging with the ranges it touches or overlaps.
    pub fn insert_range(&mut self, range: Range<Xid>) {
        if range.is_empty() {
            return;
        }
        let (mut start, mut end) = (range.start, range.end);
        if let Some((&s, &e)) = self.ranges.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
            }
        }
        let covered: Vec<(Xid, Xid)> = self.ranges.range(start..=end).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in covered {
            self.ranges.remove(&s);
            end = end.max(e);
        }
        self.ranges.insert(start, end);
        debug_assert!(self.contains(range.start) && self.contains(range.end - 1));
    }

    /// The ranges, in order.
    pub fn ranges(&self) -> impl Iterator<Item = Range<Xid>> + '_ {
        self.ranges.iter().map(|(&s, &e)| s..e)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum XidSetItem {
    One(Xid),
    Range(Xid, Xid),
}

impl Serialize for XidSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let items: Vec<XidSetItem> =
            self.ranges().map(|r| if r.end == r.start + 1 { XidSetItem::One(r.start) } else { XidSetItem::Range(r.start, r.end) }).collect();
        items.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for XidSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<XidSet, D::Error> {
        let items = Vec::<XidSetItem>::deserialize(deserializer)?;
        let mut set = XidSet::default();
        for item in items {
            match item {
                XidSetItem::One(xid) => set.insert(xid),
                XidSetItem::Range(start, end) => set.insert_range(start..end),
            }
        }
        Ok(set)
    }
}

/// What a statement may see: fixed when it starts.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub committed_max: Xid,
    pub aborted: Arc<XidSet>,
}

impl Snapshot {
    #[inline]
    pub fn is_visible(&self, xmin: Xid) -> bool {
        xmin <= self.committed_max && (self.aborted.is_empty() || !self.aborted.contains(xmin))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_answer_like_a_set() {
        let mut set = XidSet::default();
        let mut model = std::collections::BTreeSet::new();
        let mut rng = weft_common::XorShift64(0x2545_f491_4f6c_dd1d);
        for _ in 0..2000 {
            let state = rng.next_u64();
            let start = state % 300;
            let len = (state >> 20) % 6;
            set.insert_range(start..start + len);
            model.extend(start..start + len);
            let ranges: Vec<Range<Xid>> = set.ranges().collect();
            assert!(ranges.windows(2).all(|w| w[0].end < w[1].start), "disjoint, not adjacent: {ranges:?}");
        }
        for xid in 0..320 {
            assert_eq!(set.contains(xid), model.contains(&xid), "{xid}");
        }
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(serde_json::from_str::<XidSet>(&json).unwrap(), set);
        // The format of catalogs written before ranges: a plain array of xids.
        let old: XidSet = serde_json::from_str("[3, 4, 9]").unwrap();
        assert_eq!(old.ranges().collect::<Vec<_>>(), vec![3..5, 9..10]);
    }
}
