//! The B-tree page format, on weft-storage's slotted pages.
//!
//! ```text
//! block 0 (metapage): special { flags = META }, item 1 = magic u32, version u32, root u32, level u32
//! other pages:        special { left u32, right u32, level u32, flags u16, 0u16 }
//!                     items 1..n = entries in key order, then the high key if flags has HIGH_KEY
//! leaf entry:         an index tuple (keys ++ tid word)
//! internal entry:     child block u32 ++ separator tuple (the child's high key);
//!                     just the child block for +infinity (last entry of a level's rightmost page)
//! ```

use weft_common::{Error, Result, SqlState};
use weft_storage::{page, BlockNumber, Page, PAGE_SIZE};

pub(crate) const SPECIAL_SIZE: usize = 16;
/// No page: block 0 is the metapage, so it can never be a link.
pub const P_NONE: BlockNumber = 0;
pub(crate) const META_BLOCK: BlockNumber = 0;

pub(crate) const FLAG_LEAF: u16 = 1;
pub(crate) const FLAG_ROOT: u16 = 2;
pub(crate) const FLAG_META: u16 = 4;
pub(crate) const FLAG_HIGH_KEY: u16 = 8;

const META_MAGIC: u32 = 0x7765_6274; // "webt"
const META_VERSION: u32 = 1;

/// Bytes an entry may have: three entries and a high key must fit a page, as in PostgreSQL.
pub(crate) const MAX_ENTRY_SIZE: usize = (PAGE_SIZE - page::HEADER_SIZE - SPECIAL_SIZE) / 3 - 2 * page::LINE_POINTER_SIZE - 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Opaque {
    pub left: BlockNumber,
    pub right: BlockNumber,
    pub level: u32,
    pub flags: u16,
}

impl Opaque {
    pub fn is_leaf(&self) -> bool {
        self.flags & FLAG_LEAF != 0
    }

    pub fn has_high_key(&self) -> bool {
        self.flags & FLAG_HIGH_KEY != 0
    }
}

pub(crate) fn corrupt(index: &str, block: BlockNumber, what: impl std::fmt::Display) -> Error {
    Error::new(SqlState::INDEX_CORRUPTED, format!("index \"{index}\" block {block}: {what}"))
}

pub(crate) fn opaque(page: &Page) -> Option<Opaque> {
    let s = page::special(page);
    if s.len() != SPECIAL_SIZE {
        return None;
    }
    let u32_at = |i: usize| u32::from_le_bytes(s[i..i + 4].try_into().expect("4 bytes"));
    Some(Opaque { left: u32_at(0), right: u32_at(4), level: u32_at(8), flags: u16::from_le_bytes([s[12], s[13]]) })
}

pub(crate) fn set_opaque(page: &mut Page, o: Opaque) {
    let s = page::special_mut(page);
    s[0..4].copy_from_slice(&o.left.to_le_bytes());
    s[4..8].copy_from_slice(&o.right.to_le_bytes());
    s[8..12].copy_from_slice(&o.level.to_le_bytes());
    s[12..14].copy_from_slice(&o.flags.to_le_bytes());
    s[14..16].fill(0);
}

pub(crate) fn init(page: &mut Page, o: Opaque) {
    page::init(page, SPECIAL_SIZE);
    set_opaque(page, o);
}

/// The page's entries (without the high key).
pub(crate) fn entry_count(page: &Page, o: &Opaque) -> usize {
    page::item_count(page) as usize - o.has_high_key() as usize
}

/// Entry `i` (0-based), or None when missing or damaged.
pub(crate) fn entry<'a>(page: &'a Page, i: usize) -> Option<&'a [u8]> {
    page::item(page, (i + 1) as u16)
}

pub(crate) fn high_key<'a>(page: &'a Page, o: &Opaque) -> Option<&'a [u8]> {
    if o.has_high_key() {
        page::item(page, page::item_count(page))
    } else {
        None
    }
}

/// An internal entry's child block and separator (`None`: +infinity).
pub(crate) fn downlink(item: &[u8]) -> Option<(BlockNumber, Option<&[u8]>)> {
    let child = u32::from_le_bytes(item.get(..4)?.try_into().ok()?);
    Some((child, (item.len() > 4).then(|| &item[4..])))
}

pub(crate) fn make_downlink(child: BlockNumber, separator: Option<&[u8]>, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&child.to_le_bytes());
    if let Some(sep) = separator {
        out.extend_from_slice(sep);
    }
}

/// Space `items` and a high key take on a page.
pub(crate) fn space_needed<'a>(items: impl Iterator<Item = &'a [u8]>, high_key: Option<&'a [u8]>) -> usize {
    items.chain(high_key).map(|i| i.len() + page::LINE_POINTER_SIZE).sum()
}

pub(crate) const USABLE_SPACE: usize = PAGE_SIZE - page::HEADER_SIZE - SPECIAL_SIZE;

/// Rewrite `page` with `items` and `high_key` (flag set accordingly). False if they do not fit.
pub(crate) fn rebuild(page: &mut Page, mut o: Opaque, items: &[&[u8]], high_key: Option<&[u8]>) -> bool {
    if space_needed(items.iter().copied(), high_key) > USABLE_SPACE {
        return false;
    }
    if high_key.is_some() {
        o.flags |= FLAG_HIGH_KEY;
    } else {
        o.flags &= !FLAG_HIGH_KEY;
    }
    init(page, o);
    for item in items.iter().copied().chain(high_key) {
        if page::add_item(page, item).is_none() {
            return false;
        }
    }
    true
}

/// All entries of a page, copied, and its high key.
pub(crate) fn copy_entries(page: &Page, o: &Opaque) -> (Vec<Vec<u8>>, Option<Vec<u8>>) {
    let n = entry_count(page, o);
    let entries = (0..n).filter_map(|i| entry(page, i).map(<[u8]>::to_vec)).collect();
    (entries, high_key(page, o).map(<[u8]>::to_vec))
}

pub(crate) fn init_meta(page: &mut Page, root: BlockNumber, level: u32) {
    init(page, Opaque { left: P_NONE, right: P_NONE, level: 0, flags: FLAG_META });
    let mut item = Vec::with_capacity(16);
    for v in [META_MAGIC, META_VERSION, root, level] {
        item.extend_from_slice(&v.to_le_bytes());
    }
    page::add_item(page, &item).expect("an empty page holds the metadata");
}

/// The root block and its level, from the metapage.
pub(crate) fn read_meta(page: &Page, index: &str) -> Result<(BlockNumber, u32)> {
    let bad = || corrupt(index, META_BLOCK, "invalid metapage");
    let o = opaque(page).ok_or_else(bad)?;
    let item = page::item(page, 1).ok_or_else(bad)?;
    if o.flags & FLAG_META == 0 || item.len() != 16 {
        return Err(bad());
    }
    let at = |i: usize| u32::from_le_bytes(item[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
    if at(0) != META_MAGIC || at(1) != META_VERSION {
        return Err(bad());
    }
    Ok((at(2), at(3)))
}
