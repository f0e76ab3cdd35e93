//! The slotted page, laid out the way PostgreSQL's `bufpage.h` lays it out.
//!
//! ```text
//! 0        8          12      14        16        18          20        22      24
//! +--------+----------+-------+---------+---------+-----------+---------+-------+
//! | lsn    | checksum | flags | pd_lower| pd_upper| pd_special| version | spare |
//! +--------+----------+-------+---------+---------+-----------+---------+-------+
//! | line pointer 1 | line pointer 2 | ...  ->                                   |
//! |                        free space                                         |
//! |                                           <- ... | item 2 | item 1        |
//! |                                                  | special space          |
//! +---------------------------------------------------------------------------+
//! ```
//!
//! Line pointers (4 bytes each) grow up from the header to `pd_lower`; item
//! bodies grow down from `pd_special` to `pd_upper`; the special space
//! (`pd_special..PAGE_SIZE`) belongs to the access method (a B-tree keeps its
//! sibling links there). A line pointer packs, as PostgreSQL's `ItemIdData`
//! does, a 15-bit offset, 2 bits of state and a 15-bit length.
//!
//! Departures from PostgreSQL:
//! - Items are not MAXALIGNed. Nothing in weft reinterprets page bytes in
//!   place (all decoding copies), so alignment would only waste space, and it
//!   keeps the contract simple: `add_item` succeeds iff `len <= free_space`.
//! - The checksum is a full 32-bit CRC-32C (the `crc32c` crate, hardware
//!   accelerated) of the page with the checksum field zeroed, followed by the
//!   block number — so a page copied to the wrong block fails verification.
//!   PostgreSQL folds an FNV-style sum to 16 bits.
//! - There is no item deletion or compaction yet; `item_mut` allows in-place
//!   updates of an item's bytes (for example a tuple header's xmax).
//!
//! A page that is all zero is *new*: it was never initialised (a block past
//! the end of the file, or one that was extended but never written). It is
//! valid, verifies, and reads as empty; `add_item` refuses it until `init`.
//!
//! Every reader here tolerates arbitrary bytes: a page that passes its
//! checksum but carries a nonsensical header reads as empty and refuses new
//! items rather than panicking. `verify` reports such damage.

use crate::{BlockNumber, OffsetNumber, Page, PAGE_SIZE};

/// Size of the page header, in bytes.
pub const HEADER_SIZE: usize = 24;
/// Size of one line pointer, in bytes.
pub const LINE_POINTER_SIZE: usize = 4;
/// Largest item that fits on an empty page with no special space.
pub const MAX_ITEM_SIZE: usize = PAGE_SIZE - HEADER_SIZE - LINE_POINTER_SIZE;
/// The layout version stored in every initialised page.
pub const LAYOUT_VERSION: u16 = 1;

const LSN_AT: usize = 0;
const CHECKSUM_AT: usize = 8;
const FLAGS_AT: usize = 12;
const LOWER_AT: usize = 14;
const UPPER_AT: usize = 16;
const SPECIAL_AT: usize = 18;
const VERSION_AT: usize = 20;

const LP_OFFSET_MASK: u32 = 0x7fff;
const LP_FLAGS_SHIFT: u32 = 15;
const LP_LENGTH_SHIFT: u32 = 17;
const LP_UNUSED: u32 = 0;
const LP_NORMAL: u32 = 1;

const _: () = assert!(PAGE_SIZE <= (LP_OFFSET_MASK as usize) + 1);
const _: () = assert!(MAX_ITEM_SIZE <= LP_OFFSET_MASK as usize);
const _: () = assert!(PAGE_SIZE <= u16::MAX as usize + 1);

#[inline]
fn get_u16(page: &Page, at: usize) -> u16 {
    u16::from_le_bytes([page[at], page[at + 1]])
}

#[inline]
fn put_u16(page: &mut Page, at: usize, value: u16) {
    page[at..at + 2].copy_from_slice(&value.to_le_bytes());
}

#[inline]
fn get_u32(page: &Page, at: usize) -> u32 {
    u32::from_le_bytes([page[at], page[at + 1], page[at + 2], page[at + 3]])
}

/// The three header bounds, checked: `HEADER_SIZE <= lower <= upper <= special <= PAGE_SIZE`.
#[derive(Clone, Copy)]
struct Bounds {
    lower: usize,
    upper: usize,
    special: usize,
}

impl Bounds {
    fn item_count(self) -> u16 {
        ((self.lower - HEADER_SIZE) / LINE_POINTER_SIZE) as u16
    }
}

/// `None` for a new page or one whose header is inconsistent.
fn bounds(page: &Page) -> Option<Bounds> {
    let lower = get_u16(page, LOWER_AT) as usize;
    let upper = get_u16(page, UPPER_AT) as usize;
    let special = get_u16(page, SPECIAL_AT) as usize;
    let sane = HEADER_SIZE <= lower
        && lower <= upper
        && upper <= special
        && special <= PAGE_SIZE
        && (lower - HEADER_SIZE).is_multiple_of(LINE_POINTER_SIZE);
    sane.then_some(Bounds { lower, upper, special })
}

/// Initialise an empty page with `special_size` bytes of special space at the end.
///
/// Panics if `special_size` leaves no room for the header: that is a bug in
/// the caller, not a property of data read from disk.
pub fn init(page: &mut Page, special_size: usize) {
    assert!(special_size <= PAGE_SIZE - HEADER_SIZE, "special space of {special_size} bytes does not fit a page");
    page.fill(0);
    let special = PAGE_SIZE - special_size;
    put_u16(page, LOWER_AT, HEADER_SIZE as u16);
    put_u16(page, UPPER_AT, special as u16);
    put_u16(page, SPECIAL_AT, special as u16);
    put_u16(page, VERSION_AT, LAYOUT_VERSION);
}

/// True for an all-zero page: never initialised; valid and empty.
pub fn is_new(page: &Page) -> bool {
    // Folding 64-byte chunks lets the compiler vectorise the inner loop.
    page.chunks_exact(64).all(|chunk| chunk.iter().fold(0u8, |acc, &b| acc | b) == 0)
}

/// The WAL position of the last change to this page (reserved; always 0 without WAL).
pub fn lsn(page: &Page) -> u64 {
    u64::from_le_bytes(page[LSN_AT..LSN_AT + 8].try_into().unwrap_or([0; 8]))
}

pub fn set_lsn(page: &mut Page, lsn: u64) {
    page[LSN_AT..LSN_AT + 8].copy_from_slice(&lsn.to_le_bytes());
}

/// Access-method flag bits stored in the header (free for callers to use).
pub fn flags(page: &Page) -> u16 {
    get_u16(page, FLAGS_AT)
}

pub fn set_flags(page: &mut Page, flags: u16) {
    put_u16(page, FLAGS_AT, flags);
}

/// Highest offset number in use (0 on a new or damaged page).
pub fn item_count(page: &Page) -> u16 {
    bounds(page).map_or(0, Bounds::item_count)
}

/// Bytes available for one new item, its line pointer already accounted for:
/// `add_item(page, item)` succeeds iff `item.len() <= free_space(page)`.
pub fn free_space(page: &Page) -> usize {
    bounds(page).map_or(0, |b| (b.upper - b.lower).saturating_sub(LINE_POINTER_SIZE))
}

/// Append an item; returns its offset number, or `None` if it does not fit, is
/// empty, or the page is new or damaged.
pub fn add_item(page: &mut Page, item: &[u8]) -> Option<OffsetNumber> {
    let mut appender = Appender::new(page)?;
    appender.push(page, item).then(|| appender.item_count())
}

/// Appends items to one page without reading and checking its header for each (bulk
/// loads: a B-tree build fills thousands of pages an entry at a time). Made from a page
/// whose header was checked once; the header is updated with every item, so the page is
/// consistent between pushes. Valid only while nothing else changes the page.
#[derive(Clone, Copy, Debug)]
pub struct Appender {
    lower: usize,
    upper: usize,
}

impl Appender {
    /// `None` for a new or damaged page.
    pub fn new(page: &Page) -> Option<Appender> {
        bounds(page).map(|b| Appender { lower: b.lower, upper: b.upper })
    }

    /// As [`free_space`] of the page.
    #[inline]
    pub fn free_space(&self) -> usize {
        (self.upper - self.lower).saturating_sub(LINE_POINTER_SIZE)
    }

    /// Highest offset number in use.
    #[inline]
    pub fn item_count(&self) -> OffsetNumber {
        ((self.lower - HEADER_SIZE) / LINE_POINTER_SIZE) as OffsetNumber
    }

    /// Append `item`; false (nothing written) if it is empty or does not fit.
    #[inline]
    pub fn push(&mut self, page: &mut Page, item: &[u8]) -> bool {
        if item.is_empty() || item.len() + LINE_POINTER_SIZE > self.upper - self.lower {
            return false;
        }
        let start = self.upper - item.len();
        page[start..self.upper].copy_from_slice(item);
        let line_pointer = (start as u32) | (LP_NORMAL << LP_FLAGS_SHIFT) | ((item.len() as u32) << LP_LENGTH_SHIFT);
        page[self.lower..self.lower + LINE_POINTER_SIZE].copy_from_slice(&line_pointer.to_le_bytes());
        self.lower += LINE_POINTER_SIZE;
        self.upper = start;
        put_u16(page, LOWER_AT, self.lower as u16);
        put_u16(page, UPPER_AT, self.upper as u16);
        true
    }
}

/// Insert an item so that it gets offset number `off` (`1..=item_count + 1`): the line
/// pointers of items `off..` move up one slot (their offset numbers grow by one), their
/// bodies stay where they are. Keeps an ordered page ordered without rewriting it.
/// `None` under the same conditions as [`add_item`], or if `off` is out of range.
pub fn insert_item(page: &mut Page, off: OffsetNumber, item: &[u8]) -> Option<OffsetNumber> {
    let b = bounds(page)?;
    if off == 0 || off > b.item_count() + 1 || item.is_empty() || item.len() + LINE_POINTER_SIZE > b.upper - b.lower {
        return None;
    }
    let start = b.upper - item.len();
    page[start..b.upper].copy_from_slice(item);
    let at = HEADER_SIZE + (off as usize - 1) * LINE_POINTER_SIZE;
    page.copy_within(at..b.lower, at + LINE_POINTER_SIZE);
    let line_pointer = (start as u32) | (LP_NORMAL << LP_FLAGS_SHIFT) | ((item.len() as u32) << LP_LENGTH_SHIFT);
    page[at..at + LINE_POINTER_SIZE].copy_from_slice(&line_pointer.to_le_bytes());
    put_u16(page, LOWER_AT, (b.lower + LINE_POINTER_SIZE) as u16);
    put_u16(page, UPPER_AT, start as u16);
    Some(off)
}

/// Byte range of item `off`, given already-checked bounds.
#[inline]
fn item_range(page: &Page, b: Bounds, off: OffsetNumber) -> Option<std::ops::Range<usize>> {
    if off == 0 || off > b.item_count() {
        return None;
    }
    let line_pointer = get_u32(page, HEADER_SIZE + (off as usize - 1) * LINE_POINTER_SIZE);
    if (line_pointer >> LP_FLAGS_SHIFT) & 0x3 != LP_NORMAL {
        return None;
    }
    let start = (line_pointer & LP_OFFSET_MASK) as usize;
    let len = (line_pointer >> LP_LENGTH_SHIFT) as usize;
    (start >= b.upper && start + len <= b.special).then_some(start..start + len)
}

/// The bytes of item `off`; `None` if out of range, unused, or damaged.
#[inline]
pub fn item(page: &Page, off: OffsetNumber) -> Option<&[u8]> {
    let range = item_range(page, bounds(page)?, off)?;
    Some(&page[range])
}

/// The bytes of item `off`, for an in-place change of the same length.
pub fn item_mut(page: &mut Page, off: OffsetNumber) -> Option<&mut [u8]> {
    let range = item_range(page, bounds(page)?, off)?;
    Some(&mut page[range])
}

/// Iterates over `(offset number, bytes)` of every item in use, in offset order.
pub fn items(page: &Page) -> Items<'_> {
    match bounds(page) {
        Some(b) => Items { page, bounds: b, next: 1, count: b.item_count() },
        None => Items { page, bounds: Bounds { lower: HEADER_SIZE, upper: PAGE_SIZE, special: PAGE_SIZE }, next: 1, count: 0 },
    }
}

/// Iterator returned by [`items`]; reads the header once.
pub struct Items<'a> {
    page: &'a Page,
    bounds: Bounds,
    next: u16,
    count: u16,
}

impl<'a> Iterator for Items<'a> {
    type Item = (OffsetNumber, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        while self.next <= self.count {
            let off = self.next;
            self.next += 1;
            if let Some(range) = item_range(self.page, self.bounds, off) {
                return Some((off, &self.page[range]));
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.count.saturating_sub(self.next - 1) as usize))
    }
}

/// The special space (`pd_special..PAGE_SIZE`); empty on a new or damaged page.
pub fn special(page: &Page) -> &[u8] {
    match bounds(page) {
        Some(b) => &page[b.special..],
        None => &[],
    }
}

pub fn special_mut(page: &mut Page) -> &mut [u8] {
    match bounds(page) {
        Some(b) => &mut page[b.special..],
        None => &mut [],
    }
}

/// CRC-32C of the page with its checksum field read as zero, then of the block
/// number (so a page written to the wrong block fails too). `crc-fast` folds the
/// page with carry-less multiplies (VPCLMULQDQ where the CPU has it): about 2.5x the
/// throughput of the `crc32` instruction alone, and every page a scan reads from
/// the OS passes through here.
fn compute_checksum(page: &Page, blkno: BlockNumber) -> u32 {
    let mut digest = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi);
    digest.update(&page[..CHECKSUM_AT]);
    digest.update(&[0u8; 4]);
    digest.update(&page[CHECKSUM_AT + 4..]);
    digest.update(&blkno.to_le_bytes());
    digest.finalize() as u32
}

/// CRC-32C of `bytes` (the page checksum's algorithm, for other files' checksums).
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, bytes) as u32
}

/// The checksum stored in the header.
pub fn checksum(page: &Page) -> u32 {
    get_u32(page, CHECKSUM_AT)
}

/// Store the checksum of this page as block `blkno`. Done just before a write.
pub fn set_checksum(page: &mut Page, blkno: BlockNumber) {
    let sum = compute_checksum(page, blkno);
    page[CHECKSUM_AT..CHECKSUM_AT + 4].copy_from_slice(&sum.to_le_bytes());
}

/// True if the stored checksum matches, or the page is new (all zero).
pub fn verify_checksum(page: &Page, blkno: BlockNumber) -> bool {
    checksum(page) == compute_checksum(page, blkno) || is_new(page)
}

/// Structural check in the spirit of amcheck: header bounds, and every line
/// pointer inside `pd_upper..pd_special` without overlaps. A new page is valid.
pub fn verify(page: &Page) -> Result<(), String> {
    if is_new(page) {
        return Ok(());
    }
    let b = bounds(page).ok_or_else(|| {
        format!(
            "bad page header: lower {} upper {} special {}",
            get_u16(page, LOWER_AT),
            get_u16(page, UPPER_AT),
            get_u16(page, SPECIAL_AT)
        )
    })?;
    let mut ranges = Vec::new();
    for off in 1..=b.item_count() {
        let line_pointer = get_u32(page, HEADER_SIZE + (off as usize - 1) * LINE_POINTER_SIZE);
        match (line_pointer >> LP_FLAGS_SHIFT) & 0x3 {
            LP_UNUSED => continue,
            LP_NORMAL => {}
            other => return Err(format!("line pointer {off} has unknown state {other}")),
        }
        let range = item_range(page, b, off).ok_or_else(|| format!("line pointer {off} points outside the item area"))?;
        ranges.push((range.start, range.end, off));
    }
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        if pair[0].1 > pair[1].0 {
            return Err(format!("items {} and {} overlap", pair[0].2, pair[1].2));
        }
    }
    Ok(())
}


/// Page images a bulk write has finished with, kept for the next ones to be filled: an
/// index build makes a new image per page, and a fresh allocation of that many is page
/// faults and kernel zeroing, where a recycled image is a cached buffer to clear.
static SPARE_PAGES: parking_lot::Mutex<Vec<Box<Page>>> = parking_lot::Mutex::new(Vec::new());

/// Most spare images kept (32 MB): what is in flight between packers and the writer.
const SPARE_PAGES_MAX: usize = 4096;

/// An all-zero page image, recycled when one is spare.
pub fn zeroed_page() -> Box<Page> {
    match SPARE_PAGES.lock().pop() {
        Some(mut page) => {
            page.fill(0);
            page
        }
        None => Box::new([0u8; PAGE_SIZE]),
    }
}

/// Keep `pages` (written, no longer needed) for [`zeroed_page`], up to the limit.
pub fn recycle_pages(pages: Vec<Box<Page>>) {
    let mut spare = SPARE_PAGES.lock();
    let room = SPARE_PAGES_MAX.saturating_sub(spare.len());
    spare.extend(pages.into_iter().take(room));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_item_shifts_line_pointers() {
        let mut p: Box<Page> = Box::new([0u8; PAGE_SIZE]);
        init(&mut p, 16);
        assert_eq!(insert_item(&mut p, 2, b"x"), None, "past the end");
        assert_eq!(insert_item(&mut p, 1, b"c"), Some(1));
        assert_eq!(insert_item(&mut p, 1, b"a"), Some(1));
        assert_eq!(insert_item(&mut p, 2, b"bb"), Some(2));
        assert_eq!(insert_item(&mut p, 4, b"dddd"), Some(4));
        assert_eq!(insert_item(&mut p, 0, b"x"), None);
        assert_eq!(insert_item(&mut p, 1, b""), None);
        let got: Vec<&[u8]> = items(&p).map(|(_, i)| i).collect();
        assert_eq!(got, vec![&b"a"[..], b"bb", b"c", b"dddd"]);
        assert!(verify(&p).is_ok());
        // Fill up: the contract is the same as add_item's.
        let big = vec![7u8; free_space(&p)];
        assert_eq!(insert_item(&mut p, 3, &big), Some(3));
        assert_eq!(free_space(&p), 0);
        assert_eq!(insert_item(&mut p, 1, b"z"), None);
        assert_eq!(item(&p, 4), Some(&b"c"[..]));
        assert!(verify(&p).is_ok());
    }
}
