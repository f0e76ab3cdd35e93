//! Bottom-up build: sorted entries are packed into leaf page images (`LeafPacker`, in any
//! participant), appended in key order as contiguous blocks (`BTreeWriter`), and the upper
//! levels are built from the leaves' high keys.

use weft_common::{Error, Result};
use weft_storage::{page as slotted, BlockNumber, BufferPool, BufferTag, ForkNumber, NewPageWrites, NumberedPages, Page, RelFileLocator, PAGE_SIZE};

use super::page::{self, Opaque, FLAG_HIGH_KEY, FLAG_LEAF, FLAG_ROOT, META_BLOCK, P_NONE, USABLE_SPACE};
use super::BTreeDesc;

/// Upper pages are filled to 70%, as PostgreSQL's: room for the splits inserts bring.
const INTERNAL_FILL_PERCENT: usize = 70;

fn new_page() -> Box<Page> {
    slotted::zeroed_page()
}

/// Make `page` an empty leaf; returns where its first entry goes.
fn start_leaf(page: &mut Page) -> slotted::Appender {
    page::init(page, Opaque { left: P_NONE, right: P_NONE, level: 0, flags: FLAG_LEAF });
    slotted::Appender::new(page).expect("an initialised page")
}

/// Leaf page images in key order, each page's high key (a copy of its last entry), and
/// the number of entries.
#[derive(Default)]
pub struct PackedLeaves {
    pub pages: Vec<Box<Page>>,
    pub high_keys: Vec<Vec<u8>>,
    pub tuples: u64,
}

/// Packs sorted entries into leaf page images filled to the fill factor. Links are set
/// by the writer, which alone knows the blocks.
pub struct LeafPacker {
    desc: BTreeDesc,
    /// Free space a finished page keeps (the fill factor's slack).
    slack: usize,
    page: Box<Page>,
    /// Where the page being filled takes its next entry.
    appender: slotted::Appender,
    entries_on_page: usize,
    packed: PackedLeaves,
    /// The last entry of the last closed page, for the order check across pages.
    previous_last: Vec<u8>,
}

impl LeafPacker {
    pub fn new(desc: &BTreeDesc, fillfactor: u8) -> LeafPacker {
        let fillfactor = (fillfactor as usize).clamp(10, 100);
        let mut page = new_page();
        let appender = start_leaf(&mut page);
        LeafPacker {
            desc: desc.clone(),
            slack: PAGE_SIZE * (100 - fillfactor) / 100,
            page,
            appender,
            entries_on_page: 0,
            packed: PackedLeaves::default(),
            previous_last: Vec::new(),
        }
    }

    /// Add the next entry; entries must come strictly increasing.
    pub fn add(&mut self, tuple: &[u8]) -> Result<()> {
        if tuple.len() > page::MAX_ENTRY_SIZE {
            return Err(super::tree::too_big(tuple.len()));
        }
        if !self.desc.comparable(tuple) {
            return Err(Error::internal(format!("an index entry of {} bytes does not have the index's layout", tuple.len())));
        }
        let need = tuple.len() + slotted::LINE_POINTER_SIZE;
        // The order check is a debug-build guard on the sort, as PostgreSQL asserts it in
        // `_bt_buildadd` only: a full key comparison per entry was 5% of a parallel
        // build's time, and `weft_index_check` verifies the order of any built tree.
        if cfg!(debug_assertions) {
            self.check_follows(tuple)?;
        }
        // The entry, a copy of it as high key should it end the page, and the slack.
        if self.entries_on_page > 0 && self.appender.free_space() + slotted::LINE_POINTER_SIZE < 2 * need + self.slack {
            self.close_page();
        }
        if !self.appender.push(&mut self.page, tuple) {
            return Err(Error::internal("an entry did not fit an empty page"));
        }
        self.entries_on_page += 1;
        self.packed.tuples += 1;
        Ok(())
    }

    /// `tuple` comes strictly after the entry added before it.
    fn check_follows(&self, tuple: &[u8]) -> Result<()> {
        let previous = if self.entries_on_page > 0 {
            page::entry(&self.page, self.entries_on_page - 1)
        } else if !self.previous_last.is_empty() {
            Some(&self.previous_last[..])
        } else {
            None
        };
        match previous {
            Some(previous) if self.desc.compare(previous, tuple) != std::cmp::Ordering::Less => {
                Err(Error::internal("index entries reached the tree out of order"))
            }
            _ => Ok(()),
        }
    }

    /// Finish the page being filled: its last entry is copied as its high key.
    fn close_page(&mut self) {
        let high_key = page::entry(&self.page, self.entries_on_page - 1).expect("page has entries").to_vec();
        assert!(self.appender.push(&mut self.page, &high_key), "room for the high key was reserved");
        self.previous_last.clear();
        self.previous_last.extend_from_slice(&high_key);
        let mut o = page::opaque(&self.page).expect("initialised");
        o.flags |= FLAG_HIGH_KEY;
        page::set_opaque(&mut self.page, o);
        let mut next = new_page();
        self.appender = start_leaf(&mut next);
        self.entries_on_page = 0;
        self.packed.pages.push(std::mem::replace(&mut self.page, next));
        self.packed.high_keys.push(high_key);
    }

    /// Finished pages packed so far.
    pub fn full_pages(&self) -> usize {
        self.packed.pages.len()
    }

    /// Take the finished pages (the page being filled stays).
    pub fn take_full_pages(&mut self) -> PackedLeaves {
        let on_page = self.entries_on_page as u64;
        let mut taken = std::mem::take(&mut self.packed);
        taken.tuples -= on_page;
        self.packed.tuples = on_page;
        taken
    }

    /// Everything, including the last, partial page.
    pub fn finish(mut self) -> PackedLeaves {
        if self.entries_on_page > 0 {
            self.close_page();
        }
        self.packed
    }
}

/// What a build wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildSummary {
    pub tuples: u64,
    pub leaf_pages: u64,
    pub internal_pages: u64,
    /// Levels including the leaves.
    pub levels: u32,
    pub total_blocks: u32,
}

/// Writes a new B-tree into an empty relation: metapage, leaves as appended, upper levels.
pub struct BTreeWriter<'a> {
    pool: &'a BufferPool,
    rel: RelFileLocator,
    desc: BTreeDesc,
    next_block: BlockNumber,
    /// The last leaf so far, not yet written: its right link depends on what follows.
    pending: Option<Box<Page>>,
    /// (high key, block) of every leaf.
    downlinks: Vec<(Vec<u8>, BlockNumber)>,
    summary: BuildSummary,
}

impl<'a> BTreeWriter<'a> {
    pub fn new(pool: &'a BufferPool, rel: RelFileLocator, desc: &BTreeDesc) -> Result<BTreeWriter<'a>> {
        if pool.nblocks(rel, ForkNumber::Main)? != 0 {
            return Err(Error::internal("a B-tree is built into an empty file"));
        }
        let mut meta = new_page();
        page::init_meta(&mut meta, P_NONE, 0);
        pool.extend_with_pages(rel, ForkNumber::Main, vec![meta], NewPageWrites::Direct)?;
        Ok(BTreeWriter { pool, rel, desc: desc.clone(), next_block: 1, pending: None, downlinks: Vec::new(), summary: BuildSummary::default() })
    }

    fn write(&self, pages: &mut Vec<Box<Page>>) -> Result<()> {
        if !pages.is_empty() {
            self.pool.extend_with_pages(self.rel, ForkNumber::Main, std::mem::take(pages), NewPageWrites::Direct)?;
        }
        Ok(())
    }

    /// Append leaves after those appended so far; they become contiguous blocks.
    pub fn append_leaves(&mut self, leaves: PackedLeaves) -> Result<()> {
        self.number_leaves(leaves)?.write(self.pool)
    }

    /// Give leaves the blocks after those numbered so far and link them, without writing
    /// them: what comes back is written by [`NumberedPages::write`], in any participant,
    /// beside other numbered batches. Ranges must come in key order. The last leaf so far
    /// stays behind (its right link depends on what follows), so the batch returned
    /// starts with the previous call's last leaf.
    pub fn number_leaves(&mut self, leaves: PackedLeaves) -> Result<NumberedPages> {
        if leaves.pages.len() != leaves.high_keys.len() {
            return Err(Error::internal("packed leaves without one high key per page"));
        }
        // Ranges must come in key order: the first entry after the last high key so far.
        if let (Some((last, _)), Some(first)) = (self.downlinks.last(), leaves.pages.first().and_then(|p| page::entry(p, 0))) {
            if self.desc.compare(last, first) != std::cmp::Ordering::Less {
                return Err(Error::internal("index leaf ranges were appended out of order"));
            }
        }
        let reserved = self.pool.reserve_blocks(self.rel, ForkNumber::Main, leaves.pages.len())?;
        if reserved != self.next_block {
            return Err(Error::internal("a B-tree being built was extended by someone else"));
        }
        self.summary.tuples += leaves.tuples;
        let held_back = self.pending.is_some() as BlockNumber;
        let mut pages = Vec::with_capacity(leaves.pages.len());
        for (mut leaf, high_key) in leaves.pages.into_iter().zip(leaves.high_keys) {
            let block = self.next_block;
            self.next_block += 1;
            let mut o = page::opaque(&leaf).ok_or_else(|| Error::internal("leaf page image without special space"))?;
            o.left = if block == 1 { P_NONE } else { block - 1 };
            o.right = block + 1;
            page::set_opaque(&mut leaf, o);
            if let Some(previous) = self.pending.replace(leaf) {
                pages.push(previous);
            }
            self.downlinks.push((high_key, block));
            self.summary.leaf_pages += 1;
        }
        // The batch starts with the leaf held back last time, whose block was reserved
        // then: only the blocks of this call's pages are new.
        Ok(NumberedPages::new(self.rel, ForkNumber::Main, reserved - held_back, pages, NewPageWrites::Direct))
    }

    /// Write the last leaf, the upper levels and the metapage.
    pub fn finish(mut self) -> Result<BuildSummary> {
        let (root, root_level) = match self.pending.take() {
            None => {
                // An empty index: one empty leaf is the root.
                let mut leaf = new_page();
                page::init(&mut leaf, Opaque { left: P_NONE, right: P_NONE, level: 0, flags: FLAG_LEAF | FLAG_ROOT });
                self.write(&mut vec![leaf])?;
                self.summary.leaf_pages = 1;
                self.next_block = 2;
                (1, 0)
            }
            Some(last) => {
                // The rightmost leaf has no high key and no right sibling.
                let mut o = page::opaque(&last).expect("checked when appended");
                let (entries, _) = page::copy_entries(&last, &o);
                o.right = P_NONE;
                if self.downlinks.len() == 1 {
                    o.flags |= FLAG_ROOT;
                }
                let mut leaf = new_page();
                let refs: Vec<&[u8]> = entries.iter().map(Vec::as_slice).collect();
                if !page::rebuild(&mut leaf, o, &refs, None) {
                    return Err(Error::internal("the last leaf does not fit without its high key"));
                }
                // Its block was reserved when it was numbered.
                self.pool.write_new_pages(self.rel, ForkNumber::Main, self.next_block - 1, vec![leaf], NewPageWrites::Direct)?;
                self.build_upper_levels()?
            }
        };
        // The metapage goes through the pool: the statement's commit flushes and syncs it.
        let buffer = self.pool.read_buffer(BufferTag { rel: self.rel, fork: ForkNumber::Main, block: META_BLOCK }, None)?;
        page::init_meta(&mut buffer.write(), root, root_level);
        self.summary.levels = root_level + 1;
        self.summary.total_blocks = self.next_block;
        Ok(self.summary)
    }

    /// Levels above the leaves, each packed to 70% from the high keys of the one below,
    /// until one page remains: the root. Returns the root and its level.
    fn build_upper_levels(&mut self) -> Result<(BlockNumber, u32)> {
        let mut children: Vec<(Option<Vec<u8>>, BlockNumber)> = std::mem::take(&mut self.downlinks)
            .into_iter()
            .map(|(hk, block)| (Some(hk), block))
            .collect();
        if let Some(last) = children.last_mut() {
            last.0 = None;
        }
        let mut level = 0u32;
        let target = USABLE_SPACE * INTERNAL_FILL_PERCENT / 100;
        let mut item = Vec::new();
        while children.len() > 1 {
            level += 1;
            let mut pages: Vec<Vec<Vec<u8>>> = vec![Vec::new()];
            let mut used = 0usize;
            for (separator, child) in &children {
                page::make_downlink(*child, separator.as_deref(), &mut item);
                let need = item.len() + slotted::LINE_POINTER_SIZE;
                let current = pages.last().expect("one page at least");
                if current.len() >= 2 && used + 2 * need > target {
                    pages.push(Vec::new());
                    used = 0;
                }
                used += need;
                pages.last_mut().expect("one page at least").push(item.clone());
            }
            let first = self.next_block;
            let count = pages.len() as BlockNumber;
            let mut next_children = Vec::with_capacity(pages.len());
            let mut images = Vec::with_capacity(pages.len());
            for (i, items) in pages.iter().enumerate() {
                let block = first + i as BlockNumber;
                let rightmost = i + 1 == pages.len();
                let high_key = if rightmost {
                    None
                } else {
                    let last = items.last().expect("pages are not empty");
                    Some(page::downlink(last).and_then(|(_, sep)| sep).expect("only the last child is +infinity").to_vec())
                };
                let mut flags = 0;
                if count == 1 {
                    flags |= FLAG_ROOT;
                }
                let o = Opaque {
                    left: if i == 0 { P_NONE } else { block - 1 },
                    right: if rightmost { P_NONE } else { block + 1 },
                    level,
                    flags,
                };
                let mut image = new_page();
                let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
                if !page::rebuild(&mut image, o, &refs, high_key.as_deref()) {
                    return Err(Error::internal("an internal page overflowed during the build"));
                }
                images.push(image);
                next_children.push((high_key, block));
            }
            self.next_block += count;
            self.summary.internal_pages += count as u64;
            self.pool.extend_with_pages(self.rel, ForkNumber::Main, images, NewPageWrites::Direct)?;
            children = next_children;
        }
        Ok((children[0].1, level))
    }
}
