//! B-tree indexes: a Lehman–Yao B-link tree with inclusive high keys.
//!
//! See the crate README (`## B-tree`) for the page layout and the invariants. Modules:
//! `page` (page format), `build` (bottom-up build from sorted tuples), `tree` (descent,
//! insert with page splits), `scan` (range scans), `check` (the checker).

mod build;
mod check;
mod page;
mod scan;
mod tree;

use std::cmp::Ordering;
use std::sync::Arc;

use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_sort::{SortColumn, SortKeys};

use crate::heap::Tid;

pub use build::{BTreeWriter, BuildSummary, LeafPacker, PackedLeaves};
pub use check::{check, for_each_entry, CheckSummary};
pub use page::{MAX_ENTRY_SIZE, P_NONE};
pub use scan::BTreeScan;
pub use tree::{index_size_blocks, BTree, ScanDirection};

/// One key column of an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyColumn {
    pub data_type: DataType,
    pub descending: bool,
    pub nulls_first: bool,
}

/// A heap TID packed into the last column of an index tuple, with one flag bit below it:
/// set for entries added after the build (readers must check the heap row's visibility).
/// The bit is the lowest, so it never changes the order of two distinct TIDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TidWord(pub i64);

impl TidWord {
    pub fn new(tid: Tid, needs_heap_check: bool) -> TidWord {
        TidWord(((tid.block as i64) << 17) | ((tid.offset as i64) << 1) | needs_heap_check as i64)
    }

    pub fn tid(self) -> Tid {
        Tid { block: (self.0 >> 17) as u32, offset: ((self.0 >> 1) & 0xFFFF) as u16 }
    }

    pub fn needs_heap_check(self) -> bool {
        self.0 & 1 == 1
    }

    /// The 32-bit code of tid words a sort may pack pairs with (`weft_sort::PayloadSqueeze`):
    /// the flag and an offset below 512 (a heap page holds fewer line pointers) in the low
    /// 10 bits, the block above them, for tables of fewer than 2^22 blocks (32 GB); the
    /// offset's bits 9..16, always zero there, are dropped.
    pub fn squeeze() -> weft_sort::PayloadSqueeze {
        weft_sort::PayloadSqueeze::new(10, 7)
    }
}

/// Types a B-tree key may have (the ones `weft_sort::SortKeys` compares in place).
pub fn indexable(data_type: DataType) -> bool {
    matches!(
        data_type,
        DataType::Int4
            | DataType::Int8
            | DataType::Float8
            | DataType::Bool
            | DataType::Text
            | DataType::Numeric
            | DataType::Date
            | DataType::Time
            | DataType::Timestamp
            | DataType::TimestampTz
            | DataType::Interval
    )
}

/// How an index's tuples look and compare: `keys ++ [tid word]` in weft's tuple format,
/// ordered by the keys (each with its direction and NULL placement), then the tid word.
#[derive(Clone, Debug)]
pub struct BTreeDesc {
    inner: Arc<DescInner>,
}

#[derive(Debug)]
struct DescInner {
    columns: Vec<KeyColumn>,
    /// INCLUDE columns: stored after the keys, neither ordered nor compared.
    include: usize,
    layout: RowLayout,
    /// All keys, then the tid word: the order of entries.
    full: SortKeys,
    /// `prefixes[n]` compares the first `n` key columns only (n = 0..=key count).
    prefixes: Vec<SortKeys>,
    tid_offset: usize,
}

impl DescInner {
    /// Every tuple of the layout is at least this long (null bitmap and fixed-width
    /// columns, the tid word last among them): a shorter item read from disk would make
    /// the in-place comparisons read out of bounds, so it is reported as corruption.
    fn min_len(&self) -> usize {
        self.tid_offset + 8
    }
}

impl BTreeDesc {
    pub fn new(columns: &[KeyColumn]) -> Result<BTreeDesc> {
        Self::with_include(columns, &[])
    }

    /// Keys, then INCLUDE columns of types `include` (payload of the entries: not part of
    /// their order), then the tid word.
    pub fn with_include(columns: &[KeyColumn], include: &[DataType]) -> Result<BTreeDesc> {
        if columns.is_empty() {
            return Err(Error::internal("an index needs at least one key column"));
        }
        for c in columns {
            if !indexable(c.data_type) {
                return Err(Error::new(
                    SqlState::UNDEFINED_OBJECT,
                    format!("data type {} has no default operator class for access method \"btree\"", c.data_type.name()),
                ));
            }
        }
        let mut types: Vec<DataType> = columns.iter().map(|c| c.data_type).collect();
        types.extend_from_slice(include);
        types.push(DataType::Int8);
        let layout = RowLayout::new(&types);
        let tid_column = columns.len() + include.len();
        let sort_columns: Vec<SortColumn> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| SortColumn { column: i, descending: c.descending, nulls_first: c.nulls_first })
            .chain(std::iter::once(SortColumn { column: tid_column, descending: false, nulls_first: false }))
            .collect();
        let full = SortKeys::new(layout.clone(), &sort_columns)?;
        let prefixes = (0..=columns.len())
            .map(|n| SortKeys::new(layout.clone(), &sort_columns[..n]))
            .collect::<Result<Vec<_>>>()?;
        let tid_offset = layout.fixed_offset_of(tid_column).expect("int8 is fixed-width");
        Ok(BTreeDesc {
            inner: Arc::new(DescInner { columns: columns.to_vec(), include: include.len(), layout, full, prefixes, tid_offset }),
        })
    }

    pub fn key_count(&self) -> usize {
        self.inner.columns.len()
    }

    /// INCLUDE columns, after the keys.
    pub fn include_count(&self) -> usize {
        self.inner.include
    }

    /// The key values of an entry, then its INCLUDE values.
    pub fn entry_datums(&self, tuple: &[u8]) -> Result<Vec<Datum>> {
        let mut row = Vec::with_capacity(self.inner.layout.len());
        self.entry_datums_into(tuple, &mut row, usize::MAX)?;
        Ok(row)
    }

    /// The first `count` of [`Self::entry_datums`] (at most all) into `row` (cleared first),
    /// for a scan that decodes entry after entry without a new vector each, and only the
    /// columns its key filter reads.
    pub fn entry_datums_into(&self, tuple: &[u8], row: &mut Vec<Datum>, count: usize) -> Result<()> {
        row.clear();
        self.inner.layout.decode_prefix_into(tuple, row, count.min(self.key_count() + self.inner.include))
    }

    pub fn columns(&self) -> &[KeyColumn] {
        &self.inner.columns
    }

    pub fn layout(&self) -> &RowLayout {
        &self.inner.layout
    }

    /// The order of entries: what the build's sort uses.
    pub fn sort_keys(&self) -> &SortKeys {
        &self.inner.full
    }

    pub fn encode(&self, key: &[Datum], tid: TidWord, out: &mut Vec<u8>) -> Result<()> {
        if key.len() != self.key_count() {
            return Err(Error::internal(format!("index key has {} values, index {}", key.len(), self.key_count())));
        }
        let mut row: Vec<Datum> = key.to_vec();
        row.resize(key.len() + self.inner.include, Datum::Null);
        row.push(Datum::Int8(tid.0));
        self.inner.layout.encode(&row, out)
    }

    pub fn tid_word(&self, tuple: &[u8]) -> TidWord {
        let at = self.inner.tid_offset;
        match tuple.get(at..at + 8) {
            Some(bytes) => TidWord(i64::from_le_bytes(bytes.try_into().expect("8 bytes"))),
            None => TidWord(0),
        }
    }

    /// The key values of an entry.
    pub fn key_datums(&self, tuple: &[u8]) -> Result<Vec<Datum>> {
        let mut row = self.inner.layout.decode(tuple)?;
        row.truncate(self.key_count());
        Ok(row)
    }

    /// For UNIQUE: all key columns equal and none of them NULL (NULLs are distinct).
    pub fn keys_equal_not_null(&self, a: &[u8], b: &[u8]) -> bool {
        let n = self.key_count();
        (0..n).all(|c| !self.inner.layout.is_null(a, c))
            && self.inner.prefixes[n].compare(a, b) == Ordering::Equal
    }

    /// The full order of entries (keys, then tid word).
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.inner.full.compare(a, b)
    }

    /// Compare the first `n` key columns only.
    fn compare_prefix(&self, n: usize, a: &[u8], b: &[u8]) -> Ordering {
        self.inner.prefixes[n].compare(a, b)
    }

    /// Is `tuple` a well-formed entry of this layout?
    fn decodable(&self, tuple: &[u8]) -> bool {
        self.inner.layout.decode(tuple).is_ok()
    }

    /// Long enough to be compared in place (the cheap check done on every item read).
    #[inline]
    fn comparable(&self, tuple: &[u8]) -> bool {
        tuple.len() >= self.inner.min_len()
    }
}

/// A position in key order that falls between entries: `key`'s first `columns` columns,
/// and on ties just before (`after = false`) or just after all entries equal on them.
/// Never equal to an entry, so a search for it is a clean cut.
#[derive(Clone, Debug)]
pub(crate) struct SearchKey {
    key: Vec<u8>,
    columns: usize,
    after: bool,
    /// Compare the tid word too (an exact entry: insertion).
    full: bool,
}

impl SearchKey {
    /// Just before entry `tuple` (inserting it).
    pub(crate) fn exact(tuple: &[u8]) -> SearchKey {
        SearchKey { key: tuple.to_vec(), columns: 0, after: false, full: true }
    }

    /// Before (`after = false`) or after all entries whose key columns equal those of
    /// `tuple` (its tid word is ignored).
    pub(crate) fn equal_keys(desc: &BTreeDesc, tuple: &[u8], after: bool) -> SearchKey {
        SearchKey { key: tuple.to_vec(), columns: desc.key_count(), after, full: false }
    }

    /// Before (`after = false`) or after all entries whose first `prefix.len()` keys equal `prefix`.
    pub(crate) fn prefix(desc: &BTreeDesc, prefix: &[Datum], after: bool) -> Result<SearchKey> {
        let n = desc.key_count();
        if prefix.len() > n {
            return Err(Error::internal(format!("search key has {} values, index {n}", prefix.len())));
        }
        let mut row: Vec<Datum> = prefix.to_vec();
        row.resize(n, Datum::Null);
        let row: Vec<Datum> = row
            .into_iter()
            .zip(desc.columns())
            .map(|(d, c)| weft_common_cast(d, c.data_type))
            .collect::<Result<_>>()?;
        let mut key = Vec::new();
        desc.encode(&row, TidWord(0), &mut key)?;
        Ok(SearchKey { key, columns: prefix.len(), after, full: false })
    }

    /// Where this search key falls relative to entry (or separator) `tuple`: never Equal.
    pub(crate) fn compare(&self, desc: &BTreeDesc, tuple: &[u8]) -> Ordering {
        let order = if self.full { desc.compare(&self.key, tuple) } else { desc.compare_prefix(self.columns, &self.key, tuple) };
        match order {
            Ordering::Equal if self.after => Ordering::Greater,
            Ordering::Equal => Ordering::Less,
            other => other,
        }
    }
}

/// A bound value must have its column's type; integers of another width are converted
/// when they fit (the planner's business is to avoid anything lossy).
fn weft_common_cast(d: Datum, to: DataType) -> Result<Datum> {
    Ok(match (d, to) {
        (Datum::Null, _) => Datum::Null,
        (Datum::Int4(v), DataType::Int8) => Datum::Int8(v as i64),
        (Datum::Int8(v), DataType::Int4) if i32::try_from(v).is_ok() => Datum::Int4(v as i32),
        (Datum::Int4(v), DataType::Float8) => Datum::Float8(v as f64),
        (Datum::Int8(v), DataType::Float8) => Datum::Float8(v as f64),
        (d, to) if d.data_type() == Some(to) => d,
        (d, to) => return Err(Error::internal(format!("index bound {d:?} does not have the key's type {}", to.name()))),
    })
}
