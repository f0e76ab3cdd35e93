//! The checker, in the spirit of PostgreSQL's amcheck: walks every level left to right
//! and verifies the invariants of the README's `## B-tree` section. A violation is an
//! INDEX_CORRUPTED error naming the index and the block.

use std::cmp::Ordering;

use weft_common::Result;
use weft_storage::{BlockNumber, BufferPool, BufferTag, ForkNumber, RelFileLocator};

use super::page::{self, corrupt, IndexName, Opaque, View, FLAG_ROOT, META_BLOCK, P_NONE};
use super::BTreeDesc;

/// What the checker saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckSummary {
    pub levels: u32,
    pub leaf_pages: u64,
    pub internal_pages: u64,
    pub entries: u64,
}

/// A page a level is expected to hold: block, exclusive lower bound and inclusive upper
/// bound (+infinity: None) from its parent's entries.
type Expected = (BlockNumber, Option<Vec<u8>>, Option<Vec<u8>>);

/// One page, copied.
struct PageCopy {
    o: Opaque,
    entries: Vec<Vec<u8>>,
    high_key: Option<Vec<u8>>,
}

fn read_page(pool: &BufferPool, rel: RelFileLocator, desc: &BTreeDesc, block: BlockNumber, index: &dyn std::fmt::Display) -> Result<PageCopy> {
    let nblocks = pool.nblocks(rel, ForkNumber::Main)?;
    if block == META_BLOCK || block >= nblocks {
        return Err(corrupt(index, block, format!("link to a block outside the tree (file has {nblocks} blocks)")));
    }
    let buffer = pool.read_buffer(BufferTag { rel, fork: ForkNumber::Main, block }, None)?;
    let guard = buffer.read();
    if let Err(what) = weft_storage::page::verify(&guard) {
        return Err(corrupt(index, block, what));
    }
    // The view checks every item's length (so comparing in place cannot go out of
    // bounds) and the shape of downlinks.
    let v = View::new(&guard, block, desc, index)?;
    let mut entries = Vec::with_capacity(v.n);
    for i in 0..v.n {
        if v.o.is_leaf() {
            v.leaf_entry(i)?;
        } else {
            v.downlink(i)?;
        }
        entries.push(v.item(i)?.to_vec());
    }
    let high_key = v.high_key()?.map(<[u8]>::to_vec);
    Ok(PageCopy { o: v.o, entries, high_key })
}

/// The key part of an entry: the entry itself on a leaf, the separator on an internal page.
fn key_of<'a>(entry: &'a [u8], leaf: bool, index: &dyn std::fmt::Display, block: BlockNumber, item: usize) -> Result<Option<&'a [u8]>> {
    if leaf {
        return Ok(Some(entry));
    }
    page::downlink(entry).map(|(_, sep)| sep).ok_or_else(|| corrupt(index, block, format!("item {item} is not a downlink")))
}

/// Verify the whole structure of the index in `rel`.
pub fn check(pool: &BufferPool, rel: RelFileLocator, desc: &BTreeDesc, index: &str) -> Result<CheckSummary> {
    let index: &dyn std::fmt::Display = &index;
    let (root, root_level) = {
        let buffer = pool.read_buffer(BufferTag { rel, fork: ForkNumber::Main, block: META_BLOCK }, None)?;
        let guard = buffer.read();
        page::read_meta(&guard, index)?
    };
    let mut summary = CheckSummary { levels: root_level.saturating_add(1), ..CheckSummary::default() };
    let root_page = read_page(pool, rel, desc, root, index)?;
    if root_page.o.level != root_level {
        return Err(corrupt(index, root, format!("root has level {} but the metapage says {root_level}", root_page.o.level)));
    }
    if root_page.o.left != P_NONE || root_page.o.right != P_NONE {
        return Err(corrupt(index, root, "root has siblings"));
    }
    if root_page.o.flags & FLAG_ROOT == 0 {
        return Err(corrupt(index, root, "root page without the root flag"));
    }
    // Each level: the pages its parent level points to, in order, with the bounds the
    // parent gives them: (lower bound exclusive, upper bound inclusive or +infinity).
    let mut expected: Vec<Expected> = vec![(root, None, None)];
    let mut level = root_level;
    loop {
        let leaf = level == 0;
        let mut next: Vec<Expected> = Vec::new();
        let mut previous_block = P_NONE;
        let mut previous_last: Option<Vec<u8>> = None;
        for (i, (block, lower, upper)) in expected.iter().enumerate() {
            let block = *block;
            let p = read_page(pool, rel, desc, block, index)?;
            let rightmost = i + 1 == expected.len();
            if p.o.level != level {
                return Err(corrupt(index, block, format!("level {} where level {level} was expected", p.o.level)));
            }
            if p.o.is_leaf() != leaf {
                return Err(corrupt(index, block, "leaf flag does not match the level"));
            }
            if block != root && p.o.flags & FLAG_ROOT != 0 {
                return Err(corrupt(index, block, "root flag on a page that is not the root"));
            }
            if let Some(hk) = &p.high_key {
                if !desc.decodable(hk) {
                    return Err(corrupt(index, block, "high key is not a valid index tuple"));
                }
            }
            if p.o.left != previous_block {
                return Err(corrupt(index, block, format!("left link {} but the left neighbour is {previous_block}", p.o.left)));
            }
            let right_expected = if rightmost { P_NONE } else { expected[i + 1].0 };
            if p.o.right != right_expected {
                return Err(corrupt(index, block, format!("right link {} but the right neighbour is {right_expected}", p.o.right)));
            }
            // The parent's separator is this page's high key.
            match (&p.high_key, upper) {
                (None, None) => {}
                (Some(hk), Some(sep)) if desc.compare(hk, sep) == Ordering::Equal => {}
                (Some(_), None) => return Err(corrupt(index, block, "rightmost page of its level has a high key")),
                (None, Some(_)) => return Err(corrupt(index, block, "page is missing its high key")),
                (Some(_), Some(_)) => return Err(corrupt(index, block, "high key differs from the parent's separator")),
            }
            if !leaf && p.entries.is_empty() {
                return Err(corrupt(index, block, "internal page without entries"));
            }
            for (n, entry) in p.entries.iter().enumerate() {
                let item = n + 1;
                let key = key_of(entry, leaf, index, block, item)?;
                match key {
                    None if !(rightmost && n + 1 == p.entries.len()) => {
                        return Err(corrupt(index, block, format!("item {item} is +infinity but not the last of its level")))
                    }
                    None => {}
                    Some(key) => {
                        if !desc.decodable(key) {
                            return Err(corrupt(index, block, format!("item {item} is not a valid index tuple")));
                        }
                        if let Some(prev) = &previous_last {
                            if desc.compare(prev, key) != Ordering::Less {
                                return Err(corrupt(index, block, format!("item {item} is not greater than the item before it")));
                            }
                        }
                        if let Some(lower) = lower {
                            if desc.compare(lower, key) != Ordering::Less {
                                return Err(corrupt(index, block, format!("item {item} is not above the parent's lower bound")));
                            }
                        }
                        if let Some(hk) = &p.high_key {
                            if desc.compare(key, hk) == Ordering::Greater {
                                return Err(corrupt(index, block, format!("item {item} is above the high key")));
                            }
                        }
                        previous_last = Some(key.to_vec());
                    }
                }
                if !leaf {
                    let (child, sep) = page::downlink(entry).expect("checked by key_of");
                    let child_lower = next.last().and_then(|(_, _, upper): &Expected| upper.clone());
                    next.push((child, child_lower, sep.map(<[u8]>::to_vec)));
                }
            }
            if let (Some(hk), Some(last)) = (&p.high_key, &previous_last) {
                // A page's high key is its largest possible key; the next page is above it.
                previous_last = Some(if desc.compare(hk, last) == Ordering::Greater { hk.clone() } else { last.clone() });
            }
            if leaf {
                summary.leaf_pages += 1;
                summary.entries += p.entries.len() as u64;
            } else {
                summary.internal_pages += 1;
            }
            previous_block = block;
        }
        if leaf {
            break;
        }
        level -= 1;
        expected = next;
    }
    Ok(summary)
}

/// Visit every leaf entry in key order with its leaf block.
pub fn for_each_entry(pool: &BufferPool, rel: RelFileLocator, desc: &BTreeDesc, mut visit: impl FnMut(BlockNumber, &[u8]) -> Result<()>) -> Result<()> {
    let index = IndexName::File(rel.rel_number);
    let mut block = leftmost_leaf(pool, rel, desc, &index)?;
    let mut pages: u64 = 0;
    loop {
        let p = read_page(pool, rel, desc, block, &index)?;
        if !p.o.is_leaf() {
            return Err(corrupt(&index, block, "internal page on the leaf level"));
        }
        for entry in &p.entries {
            visit(block, entry)?;
        }
        if p.o.right == P_NONE {
            return Ok(());
        }
        pages += 1;
        if pages > pool.nblocks(rel, ForkNumber::Main)? as u64 {
            return Err(corrupt(&index, block, "right links form a cycle"));
        }
        block = p.o.right;
    }
}

fn leftmost_leaf(pool: &BufferPool, rel: RelFileLocator, desc: &BTreeDesc, index: &dyn std::fmt::Display) -> Result<BlockNumber> {
    let (mut block, mut level) = {
        let buffer = pool.read_buffer(BufferTag { rel, fork: ForkNumber::Main, block: META_BLOCK }, None)?;
        let guard = buffer.read();
        page::read_meta(&guard, index)?
    };
    loop {
        let p = read_page(pool, rel, desc, block, index)?;
        if p.o.level != level {
            return Err(corrupt(index, block, format!("level {} where level {level} was expected", p.o.level)));
        }
        if p.o.is_leaf() {
            return Ok(block);
        }
        let first = p.entries.first().ok_or_else(|| corrupt(index, block, "internal page without entries"))?;
        block = page::downlink(first).ok_or_else(|| corrupt(index, block, "bad downlink"))?.0;
        level -= 1;
    }
}
