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

use super::BTreeDesc;

pub(crate) const SPECIAL_SIZE: usize = 16;
/// How errors name an index: by name when the caller gave one, else by its file.
#[derive(Clone, Debug)]
pub(crate) enum IndexName {
    File(u32),
    Named(std::sync::Arc<str>),
}

impl std::fmt::Display for IndexName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexName::File(n) => write!(f, "file {n}"),
            IndexName::Named(name) => f.write_str(name),
        }
    }
}

/// No page: block 0 is the metapage, so it can never be a link.
pub const P_NONE: BlockNumber = 0;
pub(crate) const META_BLOCK: BlockNumber = 0;

pub(crate) const FLAG_LEAF: u16 = 1;
pub(crate) const FLAG_ROOT: u16 = 2;
pub(crate) const FLAG_META: u16 = 4;
pub(crate) const FLAG_HIGH_KEY: u16 = 8;

const META_MAGIC: u32 = 0x7765_6274; // "webt"
const META_VERSION: u32 = 1;

/// Bytes an entry may have: three entries and a high key must fit a page, as in PostgreSQL
/// (so a split always finds a point where both halves fit).
pub const MAX_ENTRY_SIZE: usize = (PAGE_SIZE - page::HEADER_SIZE - SPECIAL_SIZE) / 3 - 2 * page::LINE_POINTER_SIZE - 8;

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

pub(crate) fn corrupt(index: &dyn std::fmt::Display, block: BlockNumber, what: impl std::fmt::Display) -> Error {
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
    (page::item_count(page) as usize).saturating_sub(o.has_high_key() as usize)
}

/// Entry `i` (0-based), or None when missing or damaged.
#[inline]
pub(crate) fn entry(page: &Page, i: usize) -> Option<&[u8]> {
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
pub(crate) fn read_meta(page: &Page, index: &dyn std::fmt::Display) -> Result<(BlockNumber, u32)> {
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

/// One B-tree page read under its content lock, with every item checked before it is
/// handed out: long enough to be compared in place, downlinks well formed. Damage is an
/// INDEX_CORRUPTED error, never a panic.
pub(crate) struct View<'p> {
    pub page: &'p Page,
    pub block: BlockNumber,
    pub o: Opaque,
    /// Entries, not counting the high key.
    pub n: usize,
    desc: &'p BTreeDesc,
    index: &'p dyn std::fmt::Display,
}

impl<'p> View<'p> {
    pub fn new(page: &'p Page, block: BlockNumber, desc: &'p BTreeDesc, index: &'p dyn std::fmt::Display) -> Result<View<'p>> {
        let o = opaque(page).ok_or_else(|| corrupt(index, block, "page without B-tree special space"))?;
        if o.flags & FLAG_META != 0 {
            return Err(corrupt(index, block, "metapage linked into the tree"));
        }
        if o.is_leaf() != (o.level == 0) {
            return Err(corrupt(index, block, format!("leaf flag does not match level {}", o.level)));
        }
        if o.has_high_key() && page::item_count(page) == 0 {
            return Err(corrupt(index, block, "high key flag on a page without items"));
        }
        if o.has_high_key() != (o.right != P_NONE) {
            return Err(corrupt(index, block, "only the rightmost page of a level lacks a high key"));
        }
        Ok(View { page, block, o, n: entry_count(page, &o), desc, index })
    }

    #[cold]
    pub fn corrupt(&self, what: impl std::fmt::Display) -> Error {
        corrupt(self.index, self.block, what)
    }

    /// `what` names the tuple in the error; built only then, as this runs for every entry a
    /// scan reads.
    #[inline]
    fn checked_tuple<'t>(&self, t: &'t [u8], what: impl FnOnce() -> String) -> Result<&'t [u8]> {
        if self.desc.comparable(t) {
            Ok(t)
        } else {
            Err(self.corrupt(format!("{} is too short for an index tuple ({} bytes)", what(), t.len())))
        }
    }

    /// Raw item of entry `i` (0-based).
    #[inline]
    pub fn item(&self, i: usize) -> Result<&'p [u8]> {
        entry(self.page, i).ok_or_else(|| self.corrupt(format!("item {} is damaged", i + 1)))
    }

    /// Entry `i` of a leaf: an index tuple.
    #[inline]
    pub fn leaf_entry(&self, i: usize) -> Result<&'p [u8]> {
        let item = self.item(i)?;
        self.checked_tuple(item, || format!("item {}", i + 1))
    }

    /// Downlink `i` of an internal page: child and separator (`None`: +infinity).
    pub fn downlink(&self, i: usize) -> Result<(BlockNumber, Option<&'p [u8]>)> {
        let item = self.item(i)?;
        let (child, sep) = downlink(item).ok_or_else(|| self.corrupt(format!("item {} is not a downlink", i + 1)))?;
        if child == P_NONE {
            return Err(self.corrupt(format!("item {} points to block 0", i + 1)));
        }
        match sep {
            Some(sep) => Ok((child, Some(self.checked_tuple(sep, || format!("separator of item {}", i + 1))?))),
            None => Ok((child, None)),
        }
    }

    /// What entry `i` is ordered by: the tuple on a leaf, the separator above.
    pub fn key(&self, i: usize) -> Result<Option<&'p [u8]>> {
        if self.o.is_leaf() {
            self.leaf_entry(i).map(Some)
        } else {
            self.downlink(i).map(|(_, sep)| sep)
        }
    }

    pub fn high_key(&self) -> Result<Option<&'p [u8]>> {
        match high_key(self.page, &self.o) {
            None if self.o.has_high_key() => Err(self.corrupt("high key is damaged")),
            None => Ok(None),
            Some(hk) => self.checked_tuple(hk, || "high key".to_string()).map(Some),
        }
    }
}
