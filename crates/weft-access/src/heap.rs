//! Heap tables: unordered rows in slotted pages, addressed by TID (block, offset).
//!
//! A heap tuple is `xmin (u32 LE) ++ xmax (u32 LE) ++ row`, where `row` is the tuple
//! format of `weft_common::tuple`: the statement that inserted it and the one that deleted
//! it (0: none). They make visibility a per-tuple check against the statement's
//! [`Snapshot`] (see `snapshot.rs`). DELETE and UPDATE only stamp xmax, in place, under
//! the page's exclusive lock; VACUUM reclaims the space by copying the live tuples into a
//! new relation ([`LiveTupleCopier`]).
//!
//! Loading: each participant fills a private page in memory and, when it is full, extends
//! the relation by one block and copies the page in. Participants never share a page, so a
//! parallel load takes no lock but the one inside `extend` and the content lock of the
//! brand-new buffer. Loads go through a bulk-write ring so they do not evict the pool.
//!
//! Scanning: a [`HeapScanCursor`] hands out chunks of consecutive blocks from one atomic
//! counter (PostgreSQL's parallel block table scan); a scan holds a page's shared content
//! lock only while it visits that page's tuples.

use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_storage::zone_map::{BlockZone, ZoneWriteGuard, NO_VALUES};
use weft_storage::{
    page, BlockNumber, BufferAccessStrategy, BufferPool, BufferTag, ForkNumber, NewPageWrites, NumberedPages, OffsetNumber, Page, RelFileLocator,
    PAGE_SIZE, READ_BATCH_BLOCKS_MAX,
};

use crate::snapshot::{Snapshot, Xid};

/// Bytes of the tuple header (xmin, xmax) before the row.
const XMIN_BYTES: usize = 8;

/// The header of a new tuple inserted by `xid`: no xmax.
fn new_header(xid: Xid) -> [u8; XMIN_BYTES] {
    let mut header = [0u8; XMIN_BYTES];
    header[..4].copy_from_slice(&(xid as u32).to_le_bytes());
    header
}

/// A tuple's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tid {
    pub block: BlockNumber,
    pub offset: OffsetNumber,
}

fn row_too_big(size: usize) -> Error {
    Error::new(
        SqlState::PROGRAM_LIMIT_EXCEEDED,
        format!("row is too big: size {size}, maximum size {}", page::MAX_ITEM_SIZE),
    )
}

/// Appends rows to one relation on behalf of one participant.
pub struct HeapInserter<'a> {
    pool: &'a BufferPool,
    rel: RelFileLocator,
    xid: Xid,
    strategy: BufferAccessStrategy,
    page: Box<Page>,
    page_has_rows: bool,
    scratch: Vec<u8>,
    rows_inserted: u64,
    /// When set, the private page is a copy of this existing block and is written back to
    /// it instead of extending the relation (so small INSERTs fill the last page).
    existing_block: Option<BlockNumber>,
    /// Keeps the relation's zone maps forgotten, and none built, while rows are added.
    _zone_write: ZoneWriteGuard,
}

impl<'a> HeapInserter<'a> {
    pub fn new(pool: &'a BufferPool, rel: RelFileLocator, xid: Xid) -> HeapInserter<'a> {
        let mut page: Box<Page> = Box::new([0u8; PAGE_SIZE]);
        page::init(&mut page, 0);
        HeapInserter {
            pool,
            rel,
            xid,
            strategy: BufferAccessStrategy::bulk_write(),
            page,
            page_has_rows: false,
            scratch: Vec::with_capacity(256),
            rows_inserted: 0,
            existing_block: None,
            _zone_write: pool.zone_maps().begin_write(rel),
        }
    }

    /// An inserter that starts by filling the relation's last page. Only one inserter of a
    /// statement may do this, and writing statements are serialized, so no one else
    /// modifies that page meanwhile (readers may read it: the write-back takes its lock).
    pub fn appending(pool: &'a BufferPool, rel: RelFileLocator, xid: Xid) -> Result<HeapInserter<'a>> {
        let mut inserter = HeapInserter::new(pool, rel, xid);
        let nblocks = pool.nblocks(rel, ForkNumber::Main)?;
        if nblocks > 0 {
            let block = nblocks - 1;
            let buffer = pool.read_buffer(BufferTag { rel, fork: ForkNumber::Main, block }, None)?;
            let guard = buffer.read();
            if !page::is_new(&guard) {
                inserter.page.copy_from_slice(&guard[..]);
                inserter.existing_block = Some(block);
            }
        }
        Ok(inserter)
    }

    /// A buffer callers encode a row into before [`insert_scratch`](Self::insert_scratch);
    /// saves one copy per row.
    pub fn scratch(&mut self) -> &mut Vec<u8> {
        self.scratch.clear();
        self.scratch.extend_from_slice(&new_header(self.xid));
        &mut self.scratch
    }

    /// Insert the row last encoded into [`scratch`](Self::scratch).
    pub fn insert_scratch(&mut self) -> Result<()> {
        if self.scratch.len() > page::MAX_ITEM_SIZE {
            return Err(row_too_big(self.scratch.len() - XMIN_BYTES));
        }
        if page::add_item(&mut self.page, &self.scratch).is_none() {
            self.flush_page()?;
            page::add_item(&mut self.page, &self.scratch)
                .ok_or_else(|| Error::internal("a row that fits an empty page did not fit"))?;
        }
        self.page_has_rows = true;
        self.rows_inserted += 1;
        Ok(())
    }

    fn flush_page(&mut self) -> Result<()> {
        if self.page_has_rows {
            let buffer = match self.existing_block {
                Some(block) => self.pool.read_buffer(BufferTag { rel: self.rel, fork: ForkNumber::Main, block }, None)?,
                None => self.pool.extend(self.rel, ForkNumber::Main, Some(&mut self.strategy))?,
            };
            let mut guard = buffer.write();
            guard.copy_from_slice(&self.page[..]);
        }
        self.existing_block = None;
        self.page.fill(0);
        page::init(&mut self.page, 0);
        self.page_has_rows = false;
        Ok(())
    }

    /// Append pages packed elsewhere (by [`HeapPageBuilder`]s of other participants),
    /// after the rows inserted so far: the relation keeps the order in which rows and
    /// pages were handed over.
    pub fn append_pages(&mut self, pages: PackedPages) -> Result<()> {
        self.number_pages(pages)?.write(self.pool)
    }

    /// Give `pages` the blocks after everything appended or numbered so far, without
    /// writing them: what comes back is written by [`NumberedPages::write`], in any
    /// participant, beside other numbered batches (a sorted insert's key ranges keep
    /// their order in the file, and their writes are spread over the participants).
    pub fn number_pages(&mut self, pages: PackedPages) -> Result<NumberedPages> {
        self.flush_page()?;
        self.rows_inserted += pages.rows;
        self.pool.number_new_pages(self.rel, ForkNumber::Main, pages.pages, NewPageWrites::PageCache)
    }

    /// Write the last partial page; returns the number of rows inserted.
    pub fn finish(mut self) -> Result<u64> {
        self.flush_page()?;
        Ok(self.rows_inserted)
    }
}

/// Packs rows of one transaction into heap page images in memory, for a participant that
/// may not extend the relation itself (its pages must come after another's): the pages go
/// to the relation later, in order, through [`HeapInserter::append_pages`].
pub struct HeapPageBuilder {
    xid: Xid,
    page: Box<Page>,
    page_has_rows: bool,
    scratch: Vec<u8>,
    packed: PackedPages,
}

/// Full heap page images and the rows they hold.
#[derive(Default)]
pub struct PackedPages {
    pages: Vec<Box<Page>>,
    rows: u64,
}

impl HeapPageBuilder {
    pub fn new(xid: Xid) -> HeapPageBuilder {
        let mut page: Box<Page> = Box::new([0u8; PAGE_SIZE]);
        page::init(&mut page, 0);
        HeapPageBuilder { xid, page, page_has_rows: false, scratch: Vec::with_capacity(256), packed: PackedPages::default() }
    }

    /// Add a row already in the table's tuple format.
    pub fn add(&mut self, row: &[u8]) -> Result<()> {
        self.scratch.clear();
        self.scratch.extend_from_slice(&new_header(self.xid));
        self.scratch.extend_from_slice(row);
        if self.scratch.len() > page::MAX_ITEM_SIZE {
            return Err(row_too_big(row.len()));
        }
        if page::add_item(&mut self.page, &self.scratch).is_none() {
            self.next_page();
            page::add_item(&mut self.page, &self.scratch)
                .ok_or_else(|| Error::internal("a row that fits an empty page did not fit"))?;
        }
        self.page_has_rows = true;
        self.packed.rows += 1;
        Ok(())
    }

    fn next_page(&mut self) {
        if self.page_has_rows {
            let mut fresh = page::zeroed_page();
            page::init(&mut fresh, 0);
            self.packed.pages.push(std::mem::replace(&mut self.page, fresh));
            self.page_has_rows = false;
        }
    }

    /// Full pages packed so far.
    pub fn full_pages(&self) -> usize {
        self.packed.pages.len()
    }

    /// Take the full pages packed so far (the page being filled stays).
    pub fn take_full_pages(&mut self) -> PackedPages {
        let rows_on_current = if self.page_has_rows { page::item_count(&self.page) as u64 } else { 0 };
        let mut taken = std::mem::take(&mut self.packed);
        taken.rows -= rows_on_current;
        self.packed.rows = rows_on_current;
        taken
    }

    pub fn finish(mut self) -> PackedPages {
        self.next_page();
        self.packed
    }
}

/// The shared block cursor of a (parallel) sequential scan.
pub struct HeapScanCursor {
    next_block: AtomicU32,
    nblocks: BlockNumber,
    chunk_blocks: u32,
}

/// Largest chunk handed out at once; small enough that the last participant to finish is
/// never more than a few milliseconds behind.
const SCAN_CHUNK_BLOCKS_MAX: u32 = 64;

impl HeapScanCursor {
    pub fn new(nblocks: BlockNumber, participants: usize) -> HeapScanCursor {
        let per_participant = nblocks / (participants.max(1) as u32 * 16);
        let chunk_blocks = per_participant.clamp(1, SCAN_CHUNK_BLOCKS_MAX);
        HeapScanCursor { next_block: AtomicU32::new(0), nblocks, chunk_blocks }
    }

    /// The next range of blocks to scan, or `None` when the table is exhausted.
    pub fn next_chunk(&self) -> Option<Range<BlockNumber>> {
        let start = self.next_block.fetch_add(self.chunk_blocks, Ordering::Relaxed);
        if start >= self.nblocks {
            return None;
        }
        Some(start..(start + self.chunk_blocks).min(self.nblocks))
    }
}

/// Load one byte of every cache line of the page, so the page comes into the cache at
/// memory bandwidth (the loads are independent, so many are in flight at once) instead of
/// at memory latency (the tuple walk's loads depend on line pointers, one miss at a time,
/// and hardware prefetchers stop at 4 KiB boundaries). This took the pool-resident scan
/// from memory-latency bound to about twice as fast.
#[inline]
fn warm_page(page: &Page) {
    const CACHE_LINE_BYTES: usize = 64;
    let mut touched = 0u8;
    for line in page.chunks_exact(CACHE_LINE_BYTES) {
        touched ^= line[0];
    }
    std::hint::black_box(touched);
}

/// Visit the visible tuples of consecutive blocks `blocks` a page at a time: the page's
/// bytes and the byte ranges of its visible tuples (without xmin), so a consumer that
/// aggregates can loop over a page's tuples once per aggregate, with no call per tuple.
/// Blocks are read in batches with one system call per run of blocks not in the pool.
/// With a ring `strategy` the scan recycles its own few buffers (a big table); without,
/// its pages stay in the pool like any other. Stops early when `visit_page` returns false.
pub fn scan_blocks_by_page(
    pool: &BufferPool,
    rel: RelFileLocator,
    blocks: Range<BlockNumber>,
    strategy: Option<&mut BufferAccessStrategy>,
    snapshot: &Snapshot,
    mut visit_page: impl FnMut(&[u8], &[Range<usize>]) -> Result<bool>,
) -> Result<bool> {
    scan_numbered_pages(pool, rel, blocks, strategy, snapshot, |_, _| true, |_, page, tuples| {
        Ok(tuples.is_empty() || visit_page(page, tuples)?)
    })
}

/// [`scan_blocks_by_page`] with each page's block number, for every page read, also one
/// without a visible tuple (a zone map's build must see every block). `screen` sees each
/// page first; a page it returns false for is passed over before its tuples' visibility
/// is worked out.
pub fn scan_numbered_pages(
    pool: &BufferPool,
    rel: RelFileLocator,
    blocks: Range<BlockNumber>,
    strategy: Option<&mut BufferAccessStrategy>,
    snapshot: &Snapshot,
    mut screen: impl FnMut(BlockNumber, &[u8]) -> bool,
    mut visit_page: impl FnMut(BlockNumber, &[u8], &[Range<usize>]) -> Result<bool>,
) -> Result<bool> {
    let mut ranges: Vec<Range<usize>> = Vec::with_capacity(256);
    for_each_page(pool, rel, blocks, strategy, |page, block| {
        if !screen(block, &page[..]) {
            return Ok(true);
        }
        let base = page.as_ptr() as usize;
        ranges.clear();
        for_each_visible(page, block, rel, snapshot, |_, tuple| {
            let start = tuple.as_ptr() as usize - base;
            ranges.push(start..start + tuple.len());
            Ok(true)
        })?;
        visit_page(block, &page[..], &ranges)
    })
}

/// The smallest and largest non-NULL value of integer (int4, int8) column `col` over every
/// tuple of a heap page, visible or not, and how many there are — what a zone map keeps of
/// the block (see `weft_storage::zone_map`): the range is `NO_VALUES` when there is none,
/// and the whole `i64` range (the block is never skipped) for anything unexpected, whose
/// count is then the page's items (or as many as a page could hold): never too few. For a
/// text column, the values are the texts' first 8 bytes (zero-padded) read as a big-endian
/// `u64` with its top bit flipped, so that `i64` order is byte order:
/// [`weft_sort::text_zone_value`].
pub fn page_zone(page: &[u8], layout: &RowLayout, col: usize) -> BlockZone {
    const ANYTHING: (i64, i64) = (i64::MIN, i64::MAX);
    // A line pointer takes 4 bytes: no page holds more items.
    const MOST_ITEMS: u32 = (PAGE_SIZE / 4) as u32;
    let Ok(page) = <&Page>::try_from(page) else { return BlockZone { range: ANYTHING, values: MOST_ITEMS } };
    if page::is_new(page) {
        return BlockZone { range: NO_VALUES, values: 0 };
    }
    let text_index = text_index_of(layout, col);
    let (mut lo, mut hi) = NO_VALUES;
    let mut values = 0u32;
    for (_, item) in page::items(page) {
        let value = item.get(XMIN_BYTES..).and_then(|row| row_zone_value(row, layout, col, text_index));
        match value {
            Some(Some(v)) => {
                lo = lo.min(v);
                hi = hi.max(v);
                values += 1;
            }
            Some(None) => {}
            None => return BlockZone { range: ANYTHING, values: page::items(page).count() as u32 },
        }
    }
    BlockZone { range: (lo, hi), values }
}

/// Whether column `col` can have a zone map: an int4, int8 or text column (the kinds
/// [`row_zone_value`] reads).
pub fn has_zone_value(layout: &RowLayout, col: usize) -> bool {
    matches!(layout.types().get(col), Some(DataType::Int4 | DataType::Int8 | DataType::Text))
}

/// The index among variable-width columns of a text column (what [`row_zone_value`] needs).
pub fn text_index_of(layout: &RowLayout, col: usize) -> Option<usize> {
    match layout.types().get(col) {
        Some(DataType::Text) => layout.var_index_of(col),
        _ => None,
    }
}

/// A row's value of column `col` as a zone map keeps it (an integer, or a text's 8-byte
/// prefix by `weft_sort::text_zone_value`): `Some(None)` for NULL, `None` when the column
/// has no zone value or the row cannot be read. `text_index` is [`text_index_of`]'s.
#[inline]
pub fn row_zone_value(row: &[u8], layout: &RowLayout, col: usize, text_index: Option<usize>) -> Option<Option<i64>> {
    if let Some(index) = text_index {
        if layout.is_null(row, col) {
            return Some(None);
        }
        return layout.var_bytes(row, index).ok().map(|bytes| Some(weft_sort::text_zone_value(bytes)));
    }
    match layout.get_fixed(row, col) {
        Some(Datum::Int4(v)) => Some(Some(v as i64)),
        Some(Datum::Int8(v)) => Some(Some(v)),
        Some(Datum::Null) => Some(None),
        _ => None,
    }
}

/// Visit consecutive blocks of the main fork under their shared locks, read in batches
/// with one system call per run of blocks not in the pool. Stops when `visit` returns false.
/// A page found in the pool is warmed first ([`warm_page`]); one this call read is in the
/// cache already (copied in and checksummed just now).
fn for_each_page(
    pool: &BufferPool,
    rel: RelFileLocator,
    blocks: Range<BlockNumber>,
    mut strategy: Option<&mut BufferAccessStrategy>,
    mut visit: impl FnMut(&Page, BlockNumber) -> Result<bool>,
) -> Result<bool> {
    let mut first = blocks.start;
    while first < blocks.end {
        let count = (blocks.end - first).min(READ_BATCH_BLOCKS_MAX);
        let (buffers, read) = pool.read_buffers_noting_reads(rel, ForkNumber::Main, first, count, strategy.as_deref_mut())?;
        for (index, buffer) in buffers.iter().enumerate() {
            let page = buffer.read();
            if read & (1 << index) == 0 {
                warm_page(&page);
            }
            if !visit(&page, buffer.block_number())? {
                return Ok(false);
            }
        }
        first += count;
    }
    Ok(true)
}

/// Visit the visible tuples of consecutive blocks with their TIDs (index builds), reading
/// blocks in batches like [`scan_blocks_by_page`]. Stops early when `visit` returns false.
pub fn scan_blocks_with_tids(
    pool: &BufferPool,
    rel: RelFileLocator,
    blocks: Range<BlockNumber>,
    strategy: Option<&mut BufferAccessStrategy>,
    snapshot: &Snapshot,
    visit: impl FnMut(Tid, &[u8]) -> Result<bool>,
) -> Result<bool> {
    scan_pages_and_tids(pool, rel, blocks, strategy, snapshot, |_, _| {}, visit)
}

/// [`scan_blocks_with_tids`], each page read (also one without a visible tuple) shown
/// whole to `page` before its tuples are visited: ANALYZE's whole-table read builds zone
/// maps on the way.
pub fn scan_pages_and_tids(
    pool: &BufferPool,
    rel: RelFileLocator,
    blocks: Range<BlockNumber>,
    strategy: Option<&mut BufferAccessStrategy>,
    snapshot: &Snapshot,
    mut page: impl FnMut(BlockNumber, &[u8]),
    mut visit: impl FnMut(Tid, &[u8]) -> Result<bool>,
) -> Result<bool> {
    for_each_page(pool, rel, blocks, strategy, |p, block| {
        page(block, &p[..]);
        for_each_visible(p, block, rel, snapshot, &mut visit)
    })
}

/// The rows written by transaction `xid` in blocks `blocks` (the index maintenance pass of
/// an INSERT: the statement's own rows, which no snapshot sees yet), with their TIDs.
pub fn scan_own_rows(
    pool: &BufferPool,
    rel: RelFileLocator,
    blocks: Range<BlockNumber>,
    xid: Xid,
    visit: impl FnMut(Tid, &[u8]) -> Result<()>,
) -> Result<()> {
    scan_rows_where(pool, rel, blocks, |header| header.xmin == xid, visit)
}

/// The rows of blocks `blocks` whose header `keep` accepts, with their TIDs, in physical
/// order: what a writer sees with its own changes (`TupleHeader::live_for` with its xid),
/// or only the rows it wrote and still sees (constraint checks after a write).
pub fn scan_rows_where(
    pool: &BufferPool,
    rel: RelFileLocator,
    blocks: Range<BlockNumber>,
    keep: impl Fn(TupleHeader) -> bool,
    mut visit: impl FnMut(Tid, &[u8]) -> Result<()>,
) -> Result<()> {
    for block in blocks {
        let buffer = pool.read_buffer(BufferTag { rel, fork: ForkNumber::Main, block }, None)?;
        let guard = buffer.read();
        if page::is_new(&guard) {
            continue;
        }
        for (offset, item) in page::items(&guard) {
            let (header, row) = split_header(item, block, offset, rel)?;
            if keep(header) {
                visit(Tid { block, offset }, row)?;
            }
        }
    }
    Ok(())
}

/// Read the tuple at `tid` (index scans, the index checker): `visit` gets its header and
/// row under the page's shared lock. `Ok(None)` when no tuple is there.
pub fn fetch<T>(
    pool: &BufferPool,
    rel: RelFileLocator,
    tid: Tid,
    visit: impl FnOnce(TupleHeader, &[u8]) -> Result<T>,
) -> Result<Option<T>> {
    if tid.block >= pool.nblocks(rel, ForkNumber::Main)? {
        return Ok(None);
    }
    let buffer = pool.read_buffer(BufferTag { rel, fork: ForkNumber::Main, block: tid.block }, None)?;
    let guard = buffer.read();
    if page::is_new(&guard) {
        return Ok(None);
    }
    let Some(item) = page::item(&guard, tid.offset) else { return Ok(None) };
    let (header, row) = split_header(item, tid.block, tid.offset, rel)?;
    visit(header, row).map(Some)
}

/// Stamp `xid` as the deleter of the tuples at `tids` (sorted by block), each page once
/// under its exclusive lock. Every tid must hold a tuple this statement sees live.
pub fn set_xmax(pool: &BufferPool, rel: RelFileLocator, tids: &[Tid], xid: Xid) -> Result<()> {
    let xmax = (xid as u32).to_le_bytes();
    for same_block in tids.chunk_by(|a, b| a.block == b.block) {
        let block = same_block[0].block;
        let buffer = pool.read_buffer(BufferTag { rel, fork: ForkNumber::Main, block }, None)?;
        let mut guard = buffer.write();
        for tid in same_block {
            let item = page::item_mut(&mut guard, tid.offset).filter(|item| item.len() >= XMIN_BYTES).ok_or_else(|| {
                Error::new(
                    SqlState::DATA_CORRUPTED,
                    format!("invalid heap tuple at ({block},{}) of relation {}", tid.offset, rel.rel_number),
                )
            })?;
            item[4..XMIN_BYTES].copy_from_slice(&xmax);
        }
    }
    Ok(())
}

/// What VACUUM finds in a heap: the tuples the latest snapshot sees, and the others,
/// which no snapshot taken from now on will see (VACUUM runs while no writer is in
/// progress, so every xid on disk is committed or aborted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TupleCensus {
    pub live: u64,
    pub dead: u64,
}

/// Count the live and dead tuples of blocks `blocks` for `snapshot`.
pub fn census_blocks(
    pool: &BufferPool,
    rel: RelFileLocator,
    blocks: Range<BlockNumber>,
    strategy: Option<&mut BufferAccessStrategy>,
    snapshot: &Snapshot,
) -> Result<TupleCensus> {
    let mut census = TupleCensus::default();
    for_each_page(pool, rel, blocks, strategy, |page, block| {
        if page::is_new(page) {
            return Ok(true);
        }
        for (offset, item) in page::items(page) {
            let (header, _) = split_header(item, block, offset, rel)?;
            if header.live_for(snapshot, None) {
                census.live += 1;
            } else {
                census.dead += 1;
            }
        }
        Ok(true)
    })?;
    Ok(census)
}

/// VACUUM's rewrite: the tuples `snapshot` sees, copied into a new relation in physical
/// order with their xmin. Readers of the old relation are not disturbed: they keep
/// reading the old file until they finish.
pub struct LiveTupleCopier<'a> {
    pool: &'a BufferPool,
    from: RelFileLocator,
    snapshot: Snapshot,
    inserter: HeapInserter<'a>,
    census: TupleCensus,
}

impl<'a> LiveTupleCopier<'a> {
    pub fn new(pool: &'a BufferPool, from: RelFileLocator, to: RelFileLocator, snapshot: Snapshot) -> LiveTupleCopier<'a> {
        // The inserter's xid is replaced by each tuple's own xmin.
        LiveTupleCopier { pool, from, snapshot, inserter: HeapInserter::new(pool, to, 0), census: TupleCensus::default() }
    }

    /// Copy the live tuples of `blocks` (called with consecutive ranges, in order).
    pub fn copy_blocks(&mut self, blocks: Range<BlockNumber>, strategy: Option<&mut BufferAccessStrategy>) -> Result<()> {
        let LiveTupleCopier { pool, from, snapshot, inserter, census } = self;
        for_each_page(pool, *from, blocks, strategy, |page, block| {
            if page::is_new(page) {
                return Ok(true);
            }
            for (offset, item) in page::items(page) {
                let (header, row) = split_header(item, block, offset, *from)?;
                if header.live_for(snapshot, None) {
                    census.live += 1;
                    // The tuple keeps its xmin (committed, so every later snapshot and the
                    // index builds that follow see it); an aborted deleter's xmax goes.
                    let scratch = inserter.scratch();
                    scratch[..4].copy_from_slice(&item[..4]);
                    scratch.extend_from_slice(row);
                    inserter.insert_scratch()?;
                } else {
                    census.dead += 1;
                }
            }
            Ok(true)
        })?;
        Ok(())
    }

    /// Copy the tuple at `tid` if it is live (CLUSTER: tuples in an index's order).
    pub fn copy_tid(&mut self, tid: Tid) -> Result<()> {
        let LiveTupleCopier { pool, from, snapshot, inserter, census } = self;
        fetch(pool, *from, tid, |header, row| {
            if !header.live_for(snapshot, None) {
                census.dead += 1;
                return Ok(());
            }
            census.live += 1;
            let scratch = inserter.scratch();
            scratch[..4].copy_from_slice(&(header.xmin as u32).to_le_bytes());
            scratch.extend_from_slice(row);
            inserter.insert_scratch()
        })?;
        Ok(())
    }

    /// Write the last page; what was kept and what was left behind.
    pub fn finish(self) -> Result<TupleCensus> {
        let copied = self.inserter.finish()?;
        debug_assert_eq!(copied, self.census.live);
        Ok(self.census)
    }
}

/// Who inserted a tuple and who deleted it (0 if nobody).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TupleHeader {
    pub xmin: Xid,
    pub xmax: Xid,
}

impl TupleHeader {
    /// Live for a statement that sees `snapshot` and is itself `own` (the writer's xid,
    /// whose own inserts and deletes count; `None` for readers).
    pub fn live_for(&self, snapshot: &Snapshot, own: Option<Xid>) -> bool {
        let sees = |xid: Xid| Some(xid) == own || snapshot.is_visible(xid);
        sees(self.xmin) && (self.xmax == 0 || !sees(self.xmax))
    }
}

#[inline]
fn split_header(item: &[u8], block: BlockNumber, offset: OffsetNumber, rel: RelFileLocator) -> Result<(TupleHeader, &[u8])> {
    if item.len() < XMIN_BYTES {
        return Err(invalid_tuple(block, offset, rel));
    }
    let word = |at: usize| u32::from_le_bytes(item[at..at + 4].try_into().expect("length checked")) as Xid;
    Ok((TupleHeader { xmin: word(0), xmax: word(4) }, &item[XMIN_BYTES..]))
}

#[cold]
fn invalid_tuple(block: BlockNumber, offset: OffsetNumber, rel: RelFileLocator) -> Error {
    Error::new(SqlState::DATA_CORRUPTED, format!("invalid heap tuple at ({block},{offset}) of relation {}", rel.rel_number))
}

/// Visit the visible tuples of one locked heap page.
fn for_each_visible(
    guard: &Page,
    block: BlockNumber,
    rel: RelFileLocator,
    snapshot: &Snapshot,
    mut visit: impl FnMut(Tid, &[u8]) -> Result<bool>,
) -> Result<bool> {
    if page::is_new(guard) {
        return Ok(true);
    }
    // Tuples of one page nearly always share an xmin: check visibility once per run.
    let mut last_xmin = Xid::MAX;
    let mut last_visible = false;
    for (offset, item) in page::items(guard) {
        let (header, row) = split_header(item, block, offset, rel)?;
        if header.xmin != last_xmin {
            last_xmin = header.xmin;
            last_visible = snapshot.is_visible(header.xmin);
        }
        if !last_visible || (header.xmax != 0 && snapshot.is_visible(header.xmax)) {
            continue;
        }
        if !visit(Tid { block, offset }, row)? {
            return Ok(false);
        }
    }
    Ok(true)
}
