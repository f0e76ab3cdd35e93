//! A built tree: descent, insertion with page splits, range scans.
//!
//! Concurrency: one writer at a time (writing statements are serialized), any number of
//! readers. Every page is read under its shared content lock and written under its
//! exclusive one; a reader holds one lock at a time. A split writes the new right page
//! first, then the left page (now pointing to it), then the old right sibling's left link,
//! then the parent: at every moment, a reader that follows right links from any page
//! finds every entry, and a reader arriving at a page too far left (from a parent not yet
//! updated) moves right because the key is above the page's high key.

use std::cmp::Ordering;
use std::ops::Bound;

use weft_common::{Datum, Error, Result};
use weft_storage::{BlockNumber, Buffer, BufferPool, BufferTag, ForkNumber, Page, RelFileLocator, PAGE_SIZE};

use super::page::{self, Opaque, FLAG_LEAF, FLAG_ROOT, META_BLOCK, P_NONE};
use super::{BTreeDesc, SearchKey};

/// The name errors give an index found damaged during a scan or insert.
const INDEX_NAME_UNKNOWN: &str = "?";

pub struct BTree<'a> {
    pool: &'a BufferPool,
    rel: RelFileLocator,
    desc: &'a BTreeDesc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanDirection {
    Forward,
    Backward,
}

impl<'a> BTree<'a> {
    pub fn open(pool: &'a BufferPool, rel: RelFileLocator, desc: &'a BTreeDesc) -> BTree<'a> {
        BTree { pool, rel, desc }
    }

    fn buffer(&self, block: BlockNumber) -> Result<Buffer> {
        self.pool.read_buffer(BufferTag { rel: self.rel, fork: ForkNumber::Main, block }, None)
    }

    fn opaque_of(&self, page: &Page, block: BlockNumber) -> Result<Opaque> {
        page::opaque(page).ok_or_else(|| page::corrupt(INDEX_NAME_UNKNOWN, block, "page without B-tree special space"))
    }

    fn root(&self) -> Result<(BlockNumber, u32)> {
        let buffer = self.buffer(META_BLOCK)?;
        let guard = buffer.read();
        page::read_meta(&guard, INDEX_NAME_UNKNOWN)
    }

    /// The child to follow on internal page `p` for `key`: the first entry whose separator
    /// is above the key; `None` when the key is above the whole page (move right).
    fn child_for(&self, p: &Page, o: &Opaque, key: &SearchKey) -> Option<(usize, BlockNumber)> {
        let n = page::entry_count(p, o);
        // Binary search for the first entry with separator > key.
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (_, sep) = page::downlink(page::entry(p, mid)?)?;
            let key_below = match sep {
                None => true,
                Some(sep) => key.compare(self.desc, sep) == Ordering::Less,
            };
            if key_below {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if lo == n {
            return None;
        }
        page::downlink(page::entry(p, lo)?).map(|(child, _)| (lo, child))
    }

    /// Is `key` above everything page `p` may hold (so the search moves right)?
    fn beyond_high_key(&self, p: &Page, o: &Opaque, key: &SearchKey) -> bool {
        page::high_key(p, o).is_some_and(|hk| key.compare(self.desc, hk) == Ordering::Greater)
    }

    /// Descend to the leaf where `key` belongs; returns the leaf and the internal pages
    /// visited, top down (a writer's path for the downlinks of a split).
    fn descend(&self, key: &SearchKey) -> Result<(BlockNumber, Vec<BlockNumber>)> {
        let (mut block, _) = self.root()?;
        let mut path = Vec::new();
        loop {
            let buffer = self.buffer(block)?;
            let guard = buffer.read();
            let o = self.opaque_of(&guard, block)?;
            if o.is_leaf() {
                if self.beyond_high_key(&guard, &o, key) && o.right != P_NONE {
                    block = o.right;
                    continue;
                }
                return Ok((block, path));
            }
            match self.child_for(&guard, &o, key) {
                Some((_, child)) => {
                    path.push(block);
                    block = child;
                }
                None if o.right != P_NONE => block = o.right,
                None => return Err(page::corrupt(INDEX_NAME_UNKNOWN, block, "rightmost internal page without a +infinity entry")),
            }
        }
    }

    /// The leftmost (or rightmost) leaf.
    fn edge_leaf(&self, rightmost: bool) -> Result<BlockNumber> {
        let (mut block, _) = self.root()?;
        loop {
            let buffer = self.buffer(block)?;
            let guard = buffer.read();
            let o = self.opaque_of(&guard, block)?;
            if rightmost && o.right != P_NONE {
                block = o.right;
                continue;
            }
            if o.is_leaf() {
                return Ok(block);
            }
            let n = page::entry_count(&guard, &o);
            let at = if rightmost { n.checked_sub(1) } else { (n > 0).then_some(0) };
            let item = at.and_then(|i| page::entry(&guard, i)).ok_or_else(|| page::corrupt(INDEX_NAME_UNKNOWN, block, "empty internal page"))?;
            block = page::downlink(item).ok_or_else(|| page::corrupt(INDEX_NAME_UNKNOWN, block, "bad downlink"))?.0;
        }
    }

    /// Insert one entry (the caller is the only writer).
    pub fn insert(&self, tuple: &[u8]) -> Result<()> {
        if tuple.len() > page::MAX_ENTRY_SIZE {
            return Err(Error::new(
                weft_common::SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("index row size {} exceeds btree maximum, {}", tuple.len(), page::MAX_ENTRY_SIZE),
            ));
        }
        let key = SearchKey::exact(tuple);
        let (leaf, path) = self.descend(&key)?;
        let buffer = self.buffer(leaf)?;
        let (o, mut entries, high_key) = {
            let guard = buffer.read();
            let o = self.opaque_of(&guard, leaf)?;
            let (entries, hk) = page::copy_entries(&guard, &o);
            (o, entries, hk)
        };
        let at = entries.partition_point(|e| key.compare(self.desc, e) == Ordering::Greater);
        entries.insert(at, tuple.to_vec());
        self.store_or_split(leaf, buffer, o, entries, high_key, path)
    }

    /// Write `entries` to page `block`, splitting it when they do not fit, and carry a
    /// split up the `path` of parents.
    fn store_or_split(
        &self,
        block: BlockNumber,
        buffer: Buffer,
        o: Opaque,
        entries: Vec<Vec<u8>>,
        high_key: Option<Vec<u8>>,
        mut path: Vec<BlockNumber>,
    ) -> Result<()> {
        let refs: Vec<&[u8]> = entries.iter().map(Vec::as_slice).collect();
        let mut image = Box::new([0u8; PAGE_SIZE]);
        if page::rebuild(&mut image, o, &refs, high_key.as_deref()) {
            buffer.write().copy_from_slice(&image[..]);
            return Ok(());
        }
        // Split by bytes: the left half keeps about half the space.
        let total: usize = entries.iter().map(|e| e.len() + 4).sum();
        let mut split = 0;
        let mut left_bytes = 0;
        while split < entries.len() - 1 && (left_bytes + entries[split].len() + 4) * 2 <= total {
            left_bytes += entries[split].len() + 4;
            split += 1;
        }
        let split = split.clamp(1, entries.len() - 1);
        let (left, right) = entries.split_at(split);
        // The left page's new high key: its last entry (a leaf entry, or an internal
        // entry's separator).
        let left_high_key: Vec<u8> = if o.is_leaf() {
            left[left.len() - 1].clone()
        } else {
            let (_, sep) = page::downlink(&left[left.len() - 1]).ok_or_else(|| page::corrupt(INDEX_NAME_UNKNOWN, block, "bad downlink"))?;
            sep.ok_or_else(|| page::corrupt(INDEX_NAME_UNKNOWN, block, "+infinity entry before the end of a page"))?.to_vec()
        };

        // 1. The new right page, not yet linked from the left.
        let new_buffer = self.pool.extend(self.rel, ForkNumber::Main, None)?;
        let new_block = new_buffer.block_number();
        let new_o = Opaque { left: block, right: o.right, level: o.level, flags: o.flags & FLAG_LEAF };
        let right_refs: Vec<&[u8]> = right.iter().map(Vec::as_slice).collect();
        if !page::rebuild(&mut image, new_o, &right_refs, high_key.as_deref()) {
            return Err(Error::internal("the right half of a split does not fit a page"));
        }
        new_buffer.write().copy_from_slice(&image[..]);
        // 2. The left page, now ending at its high key and pointing to the new page.
        let left_o = Opaque { right: new_block, flags: o.flags & !FLAG_ROOT, ..o };
        let left_refs: Vec<&[u8]> = left.iter().map(Vec::as_slice).collect();
        if !page::rebuild(&mut image, left_o, &left_refs, Some(&left_high_key)) {
            return Err(Error::internal("the left half of a split does not fit a page"));
        }
        buffer.write().copy_from_slice(&image[..]);
        drop(buffer);
        // 3. The old right sibling's left link.
        if o.right != P_NONE {
            let sibling = self.buffer(o.right)?;
            let mut guard = sibling.write();
            let mut so = self.opaque_of(&guard, o.right)?;
            so.left = new_block;
            page::set_opaque(&mut guard, so);
        }
        // 4. The parent: (left high key -> left page) before the entry that pointed to the
        //    page, which now points to the new right page.
        match path.pop() {
            Some(parent) => {
                let parent_buffer = self.buffer(parent)?;
                let (po, mut items, phk) = {
                    let guard = parent_buffer.read();
                    let po = self.opaque_of(&guard, parent)?;
                    let (items, hk) = page::copy_entries(&guard, &po);
                    (po, items, hk)
                };
                let at = items
                    .iter()
                    .position(|item| page::downlink(item).is_some_and(|(child, _)| child == block))
                    .ok_or_else(|| page::corrupt(INDEX_NAME_UNKNOWN, parent, format!("no downlink to split page {block}")))?;
                let (_, old_sep) = page::downlink(&items[at]).expect("found above");
                let old_sep = old_sep.map(<[u8]>::to_vec);
                let mut moved = Vec::new();
                page::make_downlink(new_block, old_sep.as_deref(), &mut moved);
                items[at] = moved;
                let mut left_link = Vec::new();
                page::make_downlink(block, Some(&left_high_key), &mut left_link);
                items.insert(at, left_link);
                self.store_or_split(parent, parent_buffer, po, items, phk, path)
            }
            None => self.new_root(block, &left_high_key, new_block, o.level + 1),
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
        let mut image = Box::new([0u8; PAGE_SIZE]);
        let o = Opaque { left: P_NONE, right: P_NONE, level, flags: FLAG_ROOT };
        if !page::rebuild(&mut image, o, &[&a, &b], None) {
            return Err(Error::internal("a new root does not fit a page"));
        }
        root_buffer.write().copy_from_slice(&image[..]);
        let meta = self.buffer(META_BLOCK)?;
        page::init_meta(&mut meta.write(), root, level);
        Ok(())
    }

    /// Visit the entries whose key columns equal those of `key` (its tid word is ignored).
    pub fn visit_equal(&self, key: &[u8], mut visit: impl FnMut(&[u8]) -> Result<bool>) -> Result<()> {
        let n = self.desc.key_count();
        let lower = SearchKey { key: key.to_vec(), columns: n, after: false, full: false };
        let upper = SearchKey { key: key.to_vec(), columns: n, after: true, full: false };
        let mut scan = self.scan_between(Some(lower), Some(upper), ScanDirection::Forward)?;
        while let Some(entry) = scan.next()? {
            if !visit(entry)? {
                break;
            }
        }
        Ok(())
    }

    /// Entries between two bounds given as key prefixes, in index order or backwards.
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

    /// Entries above `lower` and below `upper` (positions between entries).
    fn scan_between(&self, lower: Option<SearchKey>, upper: Option<SearchKey>, direction: ScanDirection) -> Result<BTreeScan<'a>> {
        let start = match (direction, &lower, &upper) {
            (ScanDirection::Forward, Some(key), _) => self.descend(key)?.0,
            (ScanDirection::Forward, None, _) => self.edge_leaf(false)?,
            (ScanDirection::Backward, _, Some(key)) => self.descend(key)?.0,
            (ScanDirection::Backward, _, None) => self.edge_leaf(true)?,
        };
        Ok(BTreeScan {
            tree: BTree { pool: self.pool, rel: self.rel, desc: self.desc },
            lower,
            upper,
            direction,
            next_block: Some(start),
            came_from: P_NONE,
            entries: Vec::new(),
            position: 0,
            done: false,
        })
    }
}

/// A range scan: one leaf's matching entries are copied at a time.
pub struct BTreeScan<'a> {
    tree: BTree<'a>,
    lower: Option<SearchKey>,
    upper: Option<SearchKey>,
    direction: ScanDirection,
    next_block: Option<BlockNumber>,
    /// Backward scans: the page visited last, whose left neighbour comes next.
    came_from: BlockNumber,
    entries: Vec<Vec<u8>>,
    position: usize,
    done: bool,
}

impl BTreeScan<'_> {
    /// The next entry in the scan's direction.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<&[u8]>> {
        while self.position >= self.entries.len() {
            if self.done {
                return Ok(None);
            }
            self.load_next_page()?;
        }
        self.position += 1;
        Ok(Some(&self.entries[self.position - 1]))
    }

    fn in_range(&self, entry: &[u8]) -> (bool, bool) {
        let desc = self.tree.desc;
        let above_lower = self.lower.as_ref().is_none_or(|k| k.compare(desc, entry) == Ordering::Less);
        let below_upper = self.upper.as_ref().is_none_or(|k| k.compare(desc, entry) == Ordering::Greater);
        (above_lower, below_upper)
    }

    fn load_next_page(&mut self) -> Result<()> {
        self.entries.clear();
        self.position = 0;
        let Some(block) = self.next_block else {
            self.done = true;
            return Ok(());
        };
        match self.direction {
            ScanDirection::Forward => {
                let buffer = self.tree.buffer(block)?;
                let guard = buffer.read();
                let o = self.tree.opaque_of(&guard, block)?;
                let n = page::entry_count(&guard, &o);
                for i in 0..n {
                    let entry = page::entry(&guard, i).ok_or_else(|| page::corrupt(INDEX_NAME_UNKNOWN, block, "damaged entry"))?;
                    let (above_lower, below_upper) = self.in_range(entry);
                    if !below_upper {
                        self.done = true;
                        break;
                    }
                    if above_lower {
                        self.entries.push(entry.to_vec());
                    }
                }
                self.next_block = (o.right != P_NONE).then_some(o.right);
            }
            ScanDirection::Backward => {
                // Pages split since we left them lie between the left link and where we
                // came from: visit them right to left.
                let chain = self.backward_chain(block)?;
                for page_block in chain.iter().rev() {
                    let buffer = self.tree.buffer(*page_block)?;
                    let guard = buffer.read();
                    let o = self.tree.opaque_of(&guard, *page_block)?;
                    let n = page::entry_count(&guard, &o);
                    for i in (0..n).rev() {
                        let entry = page::entry(&guard, i).ok_or_else(|| page::corrupt(INDEX_NAME_UNKNOWN, *page_block, "damaged entry"))?;
                        let (above_lower, below_upper) = self.in_range(entry);
                        if !above_lower {
                            self.done = true;
                            break;
                        }
                        if below_upper {
                            self.entries.push(entry.to_vec());
                        }
                    }
                    if self.done {
                        break;
                    }
                }
                let leftmost = chain[0];
                let buffer = self.tree.buffer(leftmost)?;
                let o = self.tree.opaque_of(&buffer.read(), leftmost)?;
                self.came_from = leftmost;
                self.next_block = (o.left != P_NONE).then_some(o.left);
            }
        }
        Ok(())
    }

    /// From `block` (reached through a left link, or the start), the pages up to the one
    /// whose right link is where the scan came from.
    fn backward_chain(&self, block: BlockNumber) -> Result<Vec<BlockNumber>> {
        let mut chain = vec![block];
        if self.came_from == P_NONE {
            return Ok(chain);
        }
        let mut current = block;
        loop {
            let buffer = self.tree.buffer(current)?;
            let o = self.tree.opaque_of(&buffer.read(), current)?;
            if o.right == self.came_from || o.right == P_NONE {
                return Ok(chain);
            }
            current = o.right;
            chain.push(current);
            if chain.len() > 1_000_000 {
                return Err(page::corrupt(INDEX_NAME_UNKNOWN, block, "right links never lead back"));
            }
        }
    }
}
