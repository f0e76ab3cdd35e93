//! Range scans. A scan copies the matching entries of one leaf at a time under the
//! leaf's shared lock (into one flat buffer: no allocation per entry), releases it, and
//! moves on. The caller may add a test on each entry's bytes (`next_where`, PostgreSQL's
//! scan keys on columns the bounds do not cover): entries failing it are not copied.
//! From page to page it moves:
//!
//! - forward, along the right link read under that same lock: entries that a split moves
//!   right after the copy are already copied, and a split before it is seen whole;
//! - backward, to the page whose right link leads to the page just read — first the left
//!   link read with it, then, if that page split meanwhile, right from there until the
//!   right link leads back. The boundary between two pages never moves (ranges only split
//!   to the right), so the page found holds exactly the entries below the page just read.
//!
//! The first page comes from a descent that released its locks: the scan re-checks it
//! under the lock it copies with and moves right if a split moved its range away.

use std::cmp::Ordering;

use weft_common::Result;
use weft_storage::BlockNumber;

use super::page::{View, P_NONE};
use super::tree::{first_above, BTree, ScanDirection};
use super::{BTreeDesc, SearchKey};

/// A range scan in index order, forward or backward (see [`BTree::scan`]).
pub struct BTreeScan<'a> {
    tree: BTree<'a>,
    lower: Option<SearchKey>,
    upper: Option<SearchKey>,
    direction: ScanDirection,
    /// The next page to read: the start page, then a right link, or (backward) the left
    /// link of `came_from` as read with it.
    next_block: BlockNumber,
    /// The page read last (P_NONE before the first).
    came_from: BlockNumber,
    done: bool,
    /// The entries copied from the last page, in page order, and where each ends.
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// Entries of `ends` handed out so far.
    returned: usize,
    /// Pages visited, against a cycle of sibling links on a damaged index.
    moves: u32,
}

impl<'a> BTreeScan<'a> {
    pub(crate) fn new(tree: BTree<'a>, lower: Option<SearchKey>, upper: Option<SearchKey>, direction: ScanDirection, start: BlockNumber) -> BTreeScan<'a> {
        BTreeScan {
            tree,
            lower,
            upper,
            direction,
            next_block: start,
            came_from: P_NONE,
            done: false,
            bytes: Vec::new(),
            ends: Vec::new(),
            returned: 0,
            moves: 0,
        }
    }

    /// The next entry (keys ++ tid word) in the scan's direction, or None at the end.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<&[u8]>> {
        self.next_where(&mut |_| Ok(true))
    }

    /// The next entry for which `keep` holds. `keep` runs under the leaf's shared lock,
    /// once per entry in range of each page read (it must not touch the buffer pool).
    pub fn next_where<F: FnMut(&[u8]) -> Result<bool>>(&mut self, keep: &mut F) -> Result<Option<&[u8]>> {
        while self.returned >= self.ends.len() {
            if self.done {
                return Ok(None);
            }
            self.bytes.clear();
            self.ends.clear();
            self.returned = 0;
            self.tree.count_move(&mut self.moves, self.next_block)?;
            match self.direction {
                ScanDirection::Forward => self.read_forward(keep)?,
                ScanDirection::Backward => self.read_backward(keep)?,
            }
        }
        let i = match self.direction {
            ScanDirection::Forward => self.returned,
            ScanDirection::Backward => self.ends.len() - 1 - self.returned,
        };
        self.returned += 1;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Ok(Some(&self.bytes[start..self.ends[i]]))
    }

    /// Copy the entries of `v` that lie between the bounds and pass `keep`; returns how
    /// many entries lie below the lower bound and whether some lie above the upper one.
    fn copy_matching<F: FnMut(&[u8]) -> Result<bool>>(
        v: &View<'_>,
        desc: &BTreeDesc,
        bounds: (&Option<SearchKey>, &Option<SearchKey>),
        keep: &mut F,
        bytes: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<(usize, bool)> {
        let start = match bounds.0 {
            Some(key) => first_above(v, desc, key)?,
            None => 0,
        };
        let end = match bounds.1 {
            Some(key) => first_above(v, desc, key)?,
            None => v.n,
        };
        for i in start..end.max(start) {
            let entry = v.leaf_entry(i)?;
            if keep(entry)? {
                bytes.extend_from_slice(entry);
                ends.push(bytes.len());
            }
        }
        Ok((start, end < v.n))
    }

    fn read_forward<F: FnMut(&[u8]) -> Result<bool>>(&mut self, keep: &mut F) -> Result<()> {
        let mut moves = 0;
        let mut block = self.next_block;
        loop {
            let buffer = self.tree.buffer(block)?;
            let guard = buffer.read();
            let v = self.tree.view(&guard, block)?;
            if !v.o.is_leaf() {
                return Err(v.corrupt("a scan reached an internal page along the leaf level"));
            }
            let hk = v.high_key()?;
            // The whole page below the lower bound (it split since the descent): move right.
            if let (Some(lower), Some(hk)) = (&self.lower, hk) {
                if self.came_from == P_NONE && lower.compare(self.tree.desc, hk) == Ordering::Greater {
                    self.tree.count_move(&mut moves, block)?;
                    block = v.o.right;
                    continue;
                }
            }
            let (_, past_upper) =
                Self::copy_matching(&v, self.tree.desc, (&self.lower, &self.upper), keep, &mut self.bytes, &mut self.ends)?;
            // Past the upper bound, or the upper bound is below the high key: nothing to
            // the right can be in range.
            let upper_ends_here = match (&self.upper, hk) {
                (Some(upper), Some(hk)) => upper.compare(self.tree.desc, hk) == Ordering::Less,
                _ => false,
            };
            self.done = past_upper || upper_ends_here || v.o.right == P_NONE;
            self.came_from = block;
            self.next_block = v.o.right;
            return Ok(());
        }
    }

    fn read_backward<F: FnMut(&[u8]) -> Result<bool>>(&mut self, keep: &mut F) -> Result<()> {
        let mut moves = 0;
        let mut block = self.next_block;
        loop {
            let buffer = self.tree.buffer(block)?;
            let guard = buffer.read();
            let v = self.tree.view(&guard, block)?;
            if !v.o.is_leaf() {
                return Err(v.corrupt("a scan reached an internal page along the leaf level"));
            }
            if self.came_from == P_NONE {
                // The start page: move right while the upper bound lies beyond it (it split
                // since the descent; without an upper bound, until the rightmost leaf).
                let beyond = match (&self.upper, v.high_key()?) {
                    (_, None) => false,
                    (None, Some(_)) => true,
                    (Some(upper), Some(hk)) => upper.compare(self.tree.desc, hk) == Ordering::Greater,
                };
                if beyond {
                    self.tree.count_move(&mut moves, block)?;
                    block = v.o.right;
                    continue;
                }
            } else if v.o.right != self.came_from {
                // Reached through a stale left link: the page that leads back is to the right.
                if v.o.right == P_NONE {
                    return Err(v.corrupt(format!("no page to the left of block {} links back to it", self.came_from)));
                }
                self.tree.count_move(&mut moves, block)?;
                block = v.o.right;
                continue;
            }
            let (below_lower, _) =
                Self::copy_matching(&v, self.tree.desc, (&self.lower, &self.upper), keep, &mut self.bytes, &mut self.ends)?;
            self.done = below_lower > 0 || v.o.left == P_NONE;
            self.came_from = block;
            self.next_block = v.o.left;
            return Ok(());
        }
    }
}
