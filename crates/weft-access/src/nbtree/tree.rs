//! A built tree: descent, insertion with page splits.
//!
//! Concurrency: one writer at a time (the caller serializes writing statements), any
//! number of readers. Every page is read under its shared content lock and changed under
//! its exclusive one; a reader holds one lock at a time. An insert that fits changes its
//! leaf under one exclusive lock. A split writes the new right page first (not yet
//! reachable), then the left page (its high key lowered, its right link to the new page),
//! then the old right sibling's left link, then the parent: at every moment a reader that
//! follows right links finds every entry exactly once, and a reader arriving at a page too
//! far left (through a parent not yet updated) moves right, the key being above the
//! page's high key. Key ranges only ever split to the right (no deletion), so the
//! boundary between two pages, once there, stays.

use std::cmp::Ordering;
use std::ops::Bound;

use weft_common::{Datum, Error, Result, SqlState};
use weft_storage::{page as slotted, BlockNumber, Buffer, BufferPool, BufferTag, ForkNumber, Page, RelFileLocator, PAGE_SIZE};

use super::page::{self, IndexName, Opaque, View, FLAG_LEAF, FLAG_ROOT, META_BLOCK, P_NONE, USABLE_SPACE};
use super::scan::BTreeScan;
use super::{BTreeDesc, SearchKey};

/// A leaf split at the end of a level's rightmost leaf (ascending inserts) leaves the
/// left page this full, as a build with the default fill factor would…
const RIGHTMOST_LEAF_SPLIT_PERCENT: usize = 90;
/// …and an internal one this full, as the build packs upper levels.
const RIGHTMOST_INTERNAL_SPLIT_PERCENT: usize = 70;
/// Moves right at one level after which the number of blocks is consulted: more moves
/// than blocks means the right links form a cycle.
const MOVE_RIGHT_CHECK_EVERY: u32 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanDirection {
    Forward,
    Backward,
}

/// The number of blocks of the index's file (metapage included).
pub fn index_size_blocks(pool: &BufferPool, rel: RelFileLocator) -> Result<u32> {
    pool.nblocks(rel, ForkNumber::Main)
}

/// A B-tree opened for inserts and scans.
pub struct BTree<'a> {
    pub(crate) pool: &'a BufferPool,
    pub(crate) rel: RelFileLocator,
    pub(crate) desc: &'a BTreeDesc,
    /// How errors name the index (the tree knows its file, not its name).
    pub(crate) name: IndexName,
}

impl<'a> BTree<'a> {
    pub fn open(pool: &'a BufferPool, rel: RelFileLocator, desc: &'a BTreeDesc) -> BTree<'a> {
        BTree { pool, rel, desc, name: IndexName::File(rel.rel_number) }
    }

    /// Like [`open`](Self::open), with the index's name for error messages.
    pub fn open_named(pool: &'a BufferPool, rel: RelFileLocator, desc: &'a BTreeDesc, name: &str) -> BTree<'a> {
        BTree { pool, rel, desc, name: IndexName::Named(name.into()) }
    }

    pub(crate) fn buffer(&self, block: BlockNumber) -> Result<Buffer> {
        if block == META_BLOCK {
            return Err(self.corrupt(block, "link to the metapage"));
        }
        self.pool.read_buffer(BufferTag { rel: self.rel, fork: ForkNumber::Main, block }, None)
    }

    pub(crate) fn corrupt(&self, block: BlockNumber, what: impl std::fmt::Display) -> Error {
        page::corrupt(&self.name, block, what)
    }

    pub(crate) fn view<'p>(&'p self, p: &'p Page, block: BlockNumber) -> Result<View<'p>> {
        View::new(p, block, self.desc, &self.name)
    }

    /// The root block and its level.
    fn root(&self) -> Result<(BlockNumber, u32)> {
        let buffer = self.pool.read_buffer(BufferTag { rel: self.rel, fork: ForkNumber::Main, block: META_BLOCK }, None)?;
        let guard = buffer.read();
        let (root, level) = page::read_meta(&guard, &self.name)?;
        if root == P_NONE {
            return Err(self.corrupt(META_BLOCK, "the index has no root (its build did not finish)"));
        }
        Ok((root, level))
    }

    /// Guards the walks along right links against cycles, at the price of one look at
    /// the file size every few thousand moves.
    pub(crate) fn count_move(&self, moves: &mut u32, block: BlockNumber) -> Result<()> {
        *moves += 1;
        if (*moves).is_multiple_of(MOVE_RIGHT_CHECK_EVERY) && *moves > self.pool.nblocks(self.rel, ForkNumber::Main)? {
            return Err(self.corrupt(block, "sibling links form a cycle"));
        }
        Ok(())
    }

    /// Descend to the leaf where `key` belongs, moving right past pages whose high key is
    /// below it. Returns the leaf and the internal pages it went through, top down.
    pub(crate) fn descend(&self, key: &SearchKey) -> Result<(BlockNumber, Vec<BlockNumber>)> {
        let (mut block, mut level) = self.root()?;
        let mut path = Vec::with_capacity((level as usize).min(16));
        let mut moves = 0;
        loop {
            let buffer = self.buffer(block)?;
            let guard = buffer.read();
            let v = self.view(&guard, block)?;
            if v.o.level != level {
                return Err(v.corrupt(format!("level {} where level {level} was expected", v.o.level)));
            }
            if let Some(hk) = v.high_key()? {
                if key.compare(self.desc, hk) == Ordering::Greater {
                    self.count_move(&mut moves, block)?;
                    block = v.o.right;
                    continue;
                }
            }
            if v.o.is_leaf() {
                return Ok((block, path));
            }
            let i = first_above(&v, self.desc, key)?;
            if i == v.n {
                // Only a page with a high key can be passed, and that was checked above.
                return Err(v.corrupt("no downlink covers the search key (missing +infinity entry or separator above the high key)"));
            }
            path.push(block);
            block = v.downlink(i)?.0;
            level -= 1;
            moves = 0;
        }
    }

    /// The leftmost leaf (`rightmost = false`) or the rightmost one, as of the descent.
    pub(crate) fn edge_leaf(&self, rightmost: bool) -> Result<BlockNumber> {
        let (mut block, mut level) = self.root()?;
        let mut moves = 0;
        loop {
            let buffer = self.buffer(block)?;
            let guard = buffer.read();
            let v = self.view(&guard, block)?;
            if v.o.level != level {
                return Err(v.corrupt(format!("level {} where level {level} was expected", v.o.level)));
            }
            if rightmost && v.o.right != P_NONE {
                self.count_move(&mut moves, block)?;
                block = v.o.right;
                continue;
            }
            if v.o.is_leaf() {
                return Ok(block);
            }
            if v.n == 0 {
                return Err(v.corrupt("internal page without entries"));
            }
            block = v.downlink(if rightmost { v.n - 1 } else { 0 })?.0;
            level -= 1;
            moves = 0;
        }
    }

    /// Insert one entry. The caller is the only writer of this index. Inserting an entry
    /// that is already there (same keys and tid word) changes nothing.
    pub fn insert(&self, tuple: &[u8]) -> Result<()> {
        if tuple.len() > page::MAX_ENTRY_SIZE {
            return Err(too_big(tuple.len()));
        }
        if !self.desc.comparable(tuple) {
            return Err(Error::internal(format!("an index entry of {} bytes does not have the index's layout", tuple.len())));
        }
        let key = SearchKey::exact(tuple);
        let (leaf, path) = self.descend(&key)?;
        let buffer = self.buffer(leaf)?;
        let mut guard = buffer.write();
        let (at, o, entries, high_key) = {
            let v = self.view(&guard, leaf)?;
            if !v.o.is_leaf() {
                return Err(v.corrupt("descent ended on an internal page"));
            }
            let at = first_above(&v, self.desc, &key)?;
            if at < v.n && self.desc.compare(v.leaf_entry(at)?, tuple) == Ordering::Equal {
                return Ok(());
            }
            if tuple.len() <= slotted::free_space(&guard) {
                (at, v.o, None, None)
            } else {
                let (entries, high_key) = copy_items(&v)?;
                (at, v.o, Some(entries), high_key)
            }
        };
        let Some(mut entries) = entries else {
            // The common case: in place, under the one exclusive lock.
            slotted::insert_item(&mut guard, (at + 1) as u16, tuple).ok_or_else(|| self.corrupt(leaf, "the leaf refused an entry that fits"))?;
            return Ok(());
        };
        drop(guard);
        entries.insert(at, tuple.to_vec());
        self.split(leaf, buffer, o, entries, at, high_key, path)
    }

    /// Split page `block`, whose `entries` (including the new one, at `inserted_at`) do
    /// not fit, and carry the split up the `path` of parents.
    #[allow(clippy::too_many_arguments)]
    fn split(
        &self,
        block: BlockNumber,
        buffer: Buffer,
        o: Opaque,
        entries: Vec<Vec<u8>>,
        inserted_at: usize,
        high_key: Option<Vec<u8>>,
        mut path: Vec<BlockNumber>,
    ) -> Result<()> {
        let leaf = o.is_leaf();
        let at = choose_split(&entries, inserted_at, leaf, o.right == P_NONE, high_key.as_deref())
            .ok_or_else(|| self.corrupt(block, "no split point leaves both halves within a page"))?;
        let (left, right) = entries.split_at(at);
        // The left page's new high key: a copy of its last entry (the separator of an
        // internal entry).
        let left_high_key: Vec<u8> = {
            let last = &left[left.len() - 1];
            if leaf {
                last.clone()
            } else {
                let (_, sep) = page::downlink(last).ok_or_else(|| self.corrupt(block, "bad downlink"))?;
                sep.ok_or_else(|| self.corrupt(block, "+infinity entry before the end of a level"))?.to_vec()
            }
        };
        let mut image: Box<Page> = Box::new([0u8; PAGE_SIZE]);

        // 1. The new right page, reachable from nowhere yet.
        let new_buffer = self.pool.extend(self.rel, ForkNumber::Main, None)?;
        let new_block = new_buffer.block_number();
        let new_o = Opaque { left: block, right: o.right, level: o.level, flags: o.flags & FLAG_LEAF };
        if !page::rebuild(&mut image, new_o, &as_refs(right), high_key.as_deref()) {
            return Err(Error::internal("the right half of a split does not fit a page"));
        }
        new_buffer.write().copy_from_slice(&image[..]);
        drop(new_buffer);
        // 2. The left page: it ends at its new high key and leads to the new page.
        let left_o = Opaque { right: new_block, flags: o.flags & !FLAG_ROOT, ..o };
        if !page::rebuild(&mut image, left_o, &as_refs(left), Some(&left_high_key)) {
            return Err(Error::internal("the left half of a split does not fit a page"));
        }
        buffer.write().copy_from_slice(&image[..]);
        drop(buffer);
        // 3. The old right sibling's left link (backward scans cope with it lagging).
        if o.right != P_NONE {
            let sibling = self.buffer(o.right)?;
            let mut guard = sibling.write();
            let mut so = page::opaque(&guard).ok_or_else(|| self.corrupt(o.right, "page without B-tree special space"))?;
            so.left = new_block;
            page::set_opaque(&mut guard, so);
        }
        // 4. The parent.
        match path.pop() {
            Some(parent) => self.insert_downlink(parent, block, &left_high_key, new_block, path),
            None => self.new_root(block, &left_high_key, new_block, o.level + 1),
        }
    }

    /// After `child` split into `child` (up to `left_high_key`) and `new_child`: the
    /// entry of `parent` that led to `child` now leads to `new_child` (same separator),
    /// and `(child, left_high_key)` goes just before it — both under one exclusive lock.
    fn insert_downlink(
        &self,
        mut parent: BlockNumber,
        child: BlockNumber,
        left_high_key: &[u8],
        new_child: BlockNumber,
        path: Vec<BlockNumber>,
    ) -> Result<()> {
        let mut item = Vec::with_capacity(left_high_key.len() + 4);
        page::make_downlink(child, Some(left_high_key), &mut item);
        let mut moves = 0;
        loop {
            let buffer = self.buffer(parent)?;
            let mut guard = buffer.write();
            let (found, o, right) = {
                let v = self.view(&guard, parent)?;
                let mut found = None;
                for i in 0..v.n {
                    if v.downlink(i)?.0 == child {
                        found = Some(i);
                        break;
                    }
                }
                (found, v.o, v.o.right)
            };
            let Some(at) = found else {
                // Not expected with a single writer, but the downlink may only be to the right.
                if right == P_NONE {
                    return Err(self.corrupt(parent, format!("no downlink to split page {child}")));
                }
                self.count_move(&mut moves, parent)?;
                parent = right;
                continue;
            };
            if item.len() <= slotted::free_space(&guard) {
                let old = slotted::item_mut(&mut guard, (at + 1) as u16).ok_or_else(|| self.corrupt(parent, "damaged downlink"))?;
                old[..4].copy_from_slice(&new_child.to_le_bytes());
                slotted::insert_item(&mut guard, (at + 1) as u16, &item)
                    .ok_or_else(|| self.corrupt(parent, "the page refused a downlink that fits"))?;
                return Ok(());
            }
            // The page stays as it is until the split rewrites it: a reader must never
            // see the entry moved to `new_child` without `child`'s entry before it.
            let (mut entries, high_key) = {
                let v = self.view(&guard, parent)?;
                copy_items(&v)?
            };
            drop(guard);
            entries[at][..4].copy_from_slice(&new_child.to_le_bytes());
            entries.insert(at, item);
            return self.split(parent, buffer, o, entries, at, high_key, path);
        }
    }

    /// The root split: a new root above the two halves, then the metapage.
    fn new_root(&self, left: BlockNumber, left_high_key: &[u8], right: BlockNumber, level: u32) -> Result<()> {
        let root_buffer = self.pool.extend(self.rel, ForkNumber::Main, None)?;
        let root = root_buffer.block_number();
        let mut a = Vec::new();
        page::make_downlink(left, Some(left_high_key), &mut a);
        let mut b = Vec::new();
        page::make_downlink(right, None, &mut b);
        let mut image: Box<Page> = Box::new([0u8; PAGE_SIZE]);
        let o = Opaque { left: P_NONE, right: P_NONE, level, flags: FLAG_ROOT };
        if !page::rebuild(&mut image, o, &[&a, &b], None) {
            return Err(Error::internal("a new root does not fit a page"));
        }
        root_buffer.write().copy_from_slice(&image[..]);
        drop(root_buffer);
        let meta = self.pool.read_buffer(BufferTag { rel: self.rel, fork: ForkNumber::Main, block: META_BLOCK }, None)?;
        page::init_meta(&mut meta.write(), root, level);
        Ok(())
    }

    /// Visit the entries whose key columns equal those of `key` (a tuple of the index's
    /// layout; its tid word is ignored), in index order; `visit` returns false to stop.
    pub fn visit_equal(&self, key: &[u8], mut visit: impl FnMut(&[u8]) -> Result<bool>) -> Result<()> {
        if !self.desc.comparable(key) {
            return Err(Error::internal("a search key without the index's layout"));
        }
        let lower = SearchKey::equal_keys(self.desc, key, false);
        let upper = SearchKey::equal_keys(self.desc, key, true);
        let mut scan = self.scan_between(Some(lower), Some(upper), ScanDirection::Forward)?;
        while let Some(entry) = scan.next()? {
            if !visit(entry)? {
                break;
            }
        }
        Ok(())
    }

    /// Entries between two bounds given as key prefixes (0..=key_count leading values,
    /// NULL allowed), compared on that many leading columns in index order, in index
    /// order or backwards.
    pub fn scan(&self, lower: Bound<Vec<Datum>>, upper: Bound<Vec<Datum>>, direction: ScanDirection) -> Result<BTreeScan<'a>> {
        let lower = match lower {
            Bound::Unbounded => None,
            Bound::Included(p) => Some(SearchKey::prefix(self.desc, &p, false)?),
            Bound::Excluded(p) => Some(SearchKey::prefix(self.desc, &p, true)?),
        };
        let upper = match upper {
            Bound::Unbounded => None,
            Bound::Included(p) => Some(SearchKey::prefix(self.desc, &p, true)?),
            Bound::Excluded(p) => Some(SearchKey::prefix(self.desc, &p, false)?),
        };
        self.scan_between(lower, upper, direction)
    }

    fn scan_between(&self, lower: Option<SearchKey>, upper: Option<SearchKey>, direction: ScanDirection) -> Result<BTreeScan<'a>> {
        let start = match (direction, &lower, &upper) {
            (ScanDirection::Forward, Some(key), _) => self.descend(key)?.0,
            (ScanDirection::Forward, None, _) => self.edge_leaf(false)?,
            (ScanDirection::Backward, _, Some(key)) => self.descend(key)?.0,
            (ScanDirection::Backward, _, None) => self.edge_leaf(true)?,
        };
        let tree = BTree { pool: self.pool, rel: self.rel, desc: self.desc, name: self.name.clone() };
        Ok(BTreeScan::new(tree, lower, upper, direction, start))
    }
}

pub(crate) fn too_big(len: usize) -> Error {
    Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, format!("index row size {len} exceeds btree maximum, {}", page::MAX_ENTRY_SIZE))
        .with_hint("Values larger than 1/3 of a buffer page cannot be indexed.")
}

/// The first entry of page `v` that is above `key` (`v.n` if none): binary search, the
/// search key never being equal to an entry. +infinity separators are above everything.
pub(crate) fn first_above(v: &View<'_>, desc: &BTreeDesc, key: &SearchKey) -> Result<usize> {
    let (mut lo, mut hi) = (0usize, v.n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let above = match v.key(mid)? {
            None => true,
            Some(k) => key.compare(desc, k) == Ordering::Less,
        };
        if above {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(lo)
}

/// A page's entries and high key, copied.
type PageItems = (Vec<Vec<u8>>, Option<Vec<u8>>);

/// Every entry of a page, copied, and its high key.
fn copy_items(v: &View<'_>) -> Result<PageItems> {
    let mut entries = Vec::with_capacity(v.n + 1);
    for i in 0..v.n {
        entries.push(v.item(i)?.to_vec());
    }
    Ok((entries, v.high_key()?.map(<[u8]>::to_vec)))
}

fn as_refs(items: &[Vec<u8>]) -> Vec<&[u8]> {
    items.iter().map(Vec::as_slice).collect()
}

/// Where to split `entries` (the left page gets `..at`, `at` in `1..len`): among the
/// points where both halves fit with their high keys, the one balancing their bytes —
/// or, when the entry was appended at the end of a level's rightmost page (ascending
/// inserts), the one leaving the left page as full as a build would.
fn choose_split(entries: &[Vec<u8>], inserted_at: usize, leaf: bool, rightmost: bool, high_key: Option<&[u8]>) -> Option<usize> {
    let n = entries.len();
    if n < 2 {
        return None;
    }
    let size = |e: &Vec<u8>| e.len() + slotted::LINE_POINTER_SIZE;
    let total: usize = entries.iter().map(size).sum();
    let right_high_key = high_key.map_or(0, |hk| hk.len() + slotted::LINE_POINTER_SIZE);
    // The left page's high key is a copy of its last entry (without the child block on
    // an internal page).
    let left_high_key = |last: &Vec<u8>| size(last) - if leaf { 0 } else { 4 };
    let append = rightmost && inserted_at == n - 1;
    let fill = USABLE_SPACE * if leaf { RIGHTMOST_LEAF_SPLIT_PERCENT } else { RIGHTMOST_INTERNAL_SPLIT_PERCENT } / 100;
    let mut best: Option<(usize, usize)> = None;
    let mut left_bytes = 0;
    for at in 1..n {
        left_bytes += size(&entries[at - 1]);
        let left = left_bytes + left_high_key(&entries[at - 1]);
        let right = total - left_bytes + right_high_key;
        if left > USABLE_SPACE || right > USABLE_SPACE {
            continue;
        }
        let score = if append {
            // As full as `fill` allows, then as little over it as possible.
            if left <= fill { fill - left } else { USABLE_SPACE + left - fill }
        } else {
            left.abs_diff(right)
        };
        if best.is_none_or(|(_, s)| score < s) {
            best = Some((at, score));
        }
    }
    best.map(|(at, _)| at)
}
