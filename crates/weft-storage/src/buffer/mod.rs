//! The buffer pool (PostgreSQL's `bufmgr.c`): a fixed array of page frames,
//! one descriptor each, a page table ([`BufferMapping`]) from page to frame,
//! clock-sweep replacement with usage counts, and rings for bulk access.
//!
//! # Reading a page (`read_buffer`)
//!
//! ```text
//! lookup(tag) ──hit──▶ lock header, tag still ours? ──yes──▶ pin ──▶ VALID? ──yes──▶ done
//!     │                        │no: retry                           │no
//!     miss                                                           ▼
//!     ▼                                                     start input I/O (or wait
//! victim := ring slot or clock sweep (pinned by us)         for the thread doing it)
//!     ▼
//! DIRTY? write it (checksum set on a copy) ──error──▶ unpin, return the error
//!     ▼
//! insert(tag → victim) ──taken──▶ unpin victim, retry (the other thread's buffer wins)
//!     ▼
//! lock header: still only our pin and clean? ──no──▶ remove(tag), unpin, retry
//!     ▼ yes
//! re-tag, set IO_IN_PROGRESS, remove(old tag), unlock
//!     ▼
//! read from disk (checksum verified) ──▶ VALID, clear IO_IN_PROGRESS, wake waiters
//! ```
//!
//! Writing a buffer out (`flush_buffer`) sets IO_IN_PROGRESS, clears
//! JUST_DIRTIED, copies the page under the shared content lock, and writes the
//! copy; DIRTY is cleared afterwards only if nobody dirtied the page again
//! meanwhile. An evictor writes its victim this way too, and any thread that
//! finds I/O in progress waits for it, so a page is never read from disk while
//! a newer copy is still on its way there.

mod desc;
mod drop;
mod frames;
mod strategy;

use std::collections::{HashMap, HashSet};
use std::fmt;

use parking_lot::{MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLockReadGuard, RwLockWriteGuard};
use weft_common::{Error, Result, SqlState};

use crate::mapping::{ArtMapping, BufferMapping, PartitionedHashMapping};
use crate::smgr::StorageManager;
use crate::sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering, RwLock};
use crate::{page, BlockNumber, BufferTag, ForkNumber, Page, RelFileLocator, PAGE_SIZE};
use desc::*;
use frames::{Frame, FrameMemory};

pub use drop::DROP_FULL_SCAN_DIVISOR;
pub use strategy::{BufferAccessStrategy, BULK_READ_RING_BYTES, BULK_WRITE_RING_BYTES};

/// Fewest frames a pool has, whatever the configuration (PostgreSQL's minimum
/// `shared_buffers`): operations such as a B-tree split pin several pages.
pub const POOL_FRAMES_MIN: usize = 16;

/// Most blocks one [`BufferPool::read_buffers`] call pins (PostgreSQL's
/// `MAX_IO_COMBINE_LIMIT` is 16 at the default 128 kB `io_combine_limit`).
pub const READ_BATCH_BLOCKS_MAX: u32 = 16;

/// Most blocks one write of new pages carries (IOV_MAX is 1024 on Linux).
const WRITE_BATCH_BLOCKS: usize = crate::bulk_write::BATCH_PAGES_MAX;

// A scan that holds one batch while reading the next must find a whole batch
// of its own unpinned buffers in the ring.
const _: () = assert!(BULK_READ_RING_BYTES / PAGE_SIZE >= 2 * READ_BATCH_BLOCKS_MAX as usize);

/// SQLSTATE 53400, `configuration_limit_exceeded`, which PostgreSQL reports
/// when every buffer is pinned.
pub const CONFIGURATION_LIMIT_EXCEEDED: SqlState = SqlState("53400");

/// Which page table the pool uses (`SET buffer_mapping`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BufferMappingKind {
    /// 128 partitions, each a lock around a hash map (PostgreSQL's).
    Hash,
    /// A tree of adaptive radix trees: relation fork → block (`mapping::art`); the
    /// default since it measured faster than the hash on lookups, select-only and DROP
    /// and smaller in memory (docs/PERFORMANCE.md, "Buffer mapping").
    #[default]
    Art,
}

impl BufferMappingKind {
    /// The setting's value (`"hash"`, `"art"`).
    pub fn name(self) -> &'static str {
        match self {
            BufferMappingKind::Hash => "hash",
            BufferMappingKind::Art => "art",
        }
    }

    /// Parses the setting's value.
    pub fn from_name(name: &str) -> Option<BufferMappingKind> {
        match name {
            "hash" => Some(BufferMappingKind::Hash),
            "art" => Some(BufferMappingKind::Art),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct BufferPoolConfig {
    pub shared_buffers_bytes: usize,
    pub mapping: BufferMappingKind,
}

impl Default for BufferPoolConfig {
    fn default() -> Self {
        BufferPoolConfig { shared_buffers_bytes: 128 * 1024 * 1024, mapping: BufferMappingKind::Hash }
    }
}

/// Counters since the pool was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferPoolStats {
    /// Pins satisfied without I/O.
    pub hits: u64,
    /// Pages read from disk.
    pub reads: u64,
    /// Pages written to disk.
    pub writes: u64,
    /// Frames taken from one page for another.
    pub evictions: u64,
    /// Blocks added by `extend`.
    pub extends: u64,
    /// Buffers examined by drop and truncate (a descriptor visited by a full
    /// scan, or a buffer found by a lookup or in the mapping's listing).
    pub invalidation_visits: u64,
    /// Wall time spent forgetting buffers in drop and truncate, in nanoseconds
    /// (statistics and benchmarks; never asserted on).
    pub invalidation_ns: u64,
}

#[derive(Default)]
struct StatCounters {
    hits: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
    evictions: AtomicU64,
    extends: AtomicU64,
    invalidation_visits: AtomicU64,
    invalidation_ns: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Descriptors and frames, shared with every [`Buffer`] pin.
struct Arena {
    descs: Box<[BufferDesc]>,
    /// Frame `i` belongs to descriptor `i`; the lock is the content lock.
    frames: Box<[RwLock<Frame>]>,
    /// The memory of every frame (`frames.rs`).
    _memory: FrameMemory,
}

/// Why a page is being pinned.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// An ordinary read.
    Read,
    /// A block `extend` just allocated: it is read like any other (past the
    /// end of the file that returns zeros without I/O, and if another thread
    /// already wrote the block and it was evicted, returns that), then marked
    /// dirty so the file grows. Zero-filling instead would clobber a write
    /// made by a thread that saw the new size before the extender got here.
    Extend,
}

/// What `try_start_input_io` found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum InputIo {
    /// The buffer was invalid; IO_IN_PROGRESS is now set for the caller.
    Started,
    /// The buffer is valid.
    Valid,
    /// Another thread's I/O is in progress on it.
    Busy,
}

/// Shared page cache in front of a [`StorageManager`].
pub struct BufferPool {
    smgr: Arc<StorageManager>,
    arena: Arc<Arena>,
    mapping: Box<dyn BufferMapping>,
    clock_hand: AtomicU64,
    /// Frames `never_used..nbuffers` have never held a page: handed out before any
    /// eviction (PostgreSQL's free list, for the frames it starts with), also to ring
    /// scans, so a big scan on a fresh pool leaves as much of its table resident as fits.
    never_used: AtomicUsize,
    /// Logical size of each fork, including extended blocks not yet written.
    nblocks: Mutex<HashMap<(RelFileLocator, ForkNumber), BlockNumber>>,
    /// Relations written since their last fsync.
    pending_sync: Mutex<HashSet<RelFileLocator>>,
    /// Hash mapping only: per fork, a bound on the blocks in the pool (see `drop`).
    mapped_bounds: drop::MappedBounds,
    /// Per-block value ranges of integer columns, built by scans (see `zone_map.rs`).
    zone_maps: Arc<crate::zone_map::ZoneMaps>,
    /// Hash mapping only: drop/truncate of a small relation by lookups.
    drop_lookup_shortcut: AtomicBool,
    stats: StatCounters,
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool")
            .field("nbuffers", &self.nbuffers())
            .field("mapping", &self.mapping.name())
            .field("stats", &self.stats())
            .finish()
    }
}

fn no_unpinned_buffers() -> Error {
    Error::new(CONFIGURATION_LIMIT_EXCEEDED, "no unpinned buffers available")
}

impl BufferPool {
    pub fn new(smgr: Arc<StorageManager>, config: BufferPoolConfig) -> Arc<BufferPool> {
        let nbuffers = (config.shared_buffers_bytes / PAGE_SIZE).max(POOL_FRAMES_MIN);
        let mapping: Box<dyn BufferMapping> = match config.mapping {
            BufferMappingKind::Hash => Box::new(PartitionedHashMapping::new(nbuffers)),
            BufferMappingKind::Art => Box::new(ArtMapping::new(nbuffers)),
        };
        let memory = FrameMemory::new(nbuffers);
        let arena = Arena {
            descs: (0..nbuffers).map(|_| BufferDesc::new()).collect(),
            frames: memory.frames().map(RwLock::new).collect(),
            _memory: memory,
        };
        Arc::new(BufferPool {
            smgr,
            arena: Arc::new(arena),
            mapping,
            clock_hand: AtomicU64::new(0),
            never_used: AtomicUsize::new(0),
            nblocks: Mutex::new(HashMap::new()),
            pending_sync: Mutex::new(HashSet::new()),
            mapped_bounds: drop::new_mapped_bounds(),
            drop_lookup_shortcut: AtomicBool::new(false),
            stats: StatCounters::default(),
            zone_maps: Arc::default(),
        })
    }

    pub fn smgr(&self) -> &Arc<StorageManager> {
        &self.smgr
    }

    /// Number of frames.
    /// The zone maps of the relations in this pool.
    pub fn zone_maps(&self) -> &Arc<crate::zone_map::ZoneMaps> {
        &self.zone_maps
    }

    pub fn nbuffers(&self) -> usize {
        self.arena.descs.len()
    }

    /// Name of the page table in use.
    pub fn mapping_name(&self) -> &'static str {
        self.mapping.name()
    }

    pub fn stats(&self) -> BufferPoolStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        BufferPoolStats {
            hits: get(&self.stats.hits),
            reads: get(&self.stats.reads),
            writes: get(&self.stats.writes),
            evictions: get(&self.stats.evictions),
            extends: get(&self.stats.extends),
            invalidation_visits: get(&self.stats.invalidation_visits),
            invalidation_ns: get(&self.stats.invalidation_ns),
        }
    }

    /// Returns the page `tag`, pinned, reading it from disk on a miss.
    pub fn read_buffer(&self, tag: BufferTag, strategy: Option<&mut BufferAccessStrategy>) -> Result<Buffer> {
        self.pin_page(tag, strategy, Fill::Read)
    }

    /// Pins blocks `first .. first + count` of one fork, in order, reading the
    /// ones not in the pool with as few system calls as possible: one `preadv`
    /// per run of consecutive blocks that this call has to read, straight into
    /// the run's frames, where each page is then verified. Per block the semantics are
    /// those of [`read_buffer`](Self::read_buffer): checksums are verified, a
    /// block past the end of the file reads as a new page, a block another
    /// thread is reading is waited for rather than read twice, and errors
    /// name the file and the block. On an error no buffer of the batch stays
    /// pinned or with I/O in progress; pages read successfully stay valid.
    ///
    /// Works in two passes, as PostgreSQL's `StartReadBuffers`/`WaitReadBuffers`:
    /// first every block is pinned (a miss re-tags a victim *without*
    /// starting I/O on it, so nothing waits on this call while it may still
    /// have to write out a dirty victim, which takes that victim's content
    /// lock), then the blocks are walked in order, starting input I/O on each
    /// that is still invalid and reading each run of them at once. I/O is in
    /// progress only on the run being read, never while waiting for another
    /// thread's I/O.
    ///
    /// A strategy's ring is grown to at least `2 * count` buffers.
    ///
    /// # Panics
    ///
    /// If `count > READ_BATCH_BLOCKS_MAX` or `first + count` overflows a block number.
    pub fn read_buffers(
        &self,
        rel: RelFileLocator,
        fork: ForkNumber,
        first: BlockNumber,
        count: u32,
        strategy: Option<&mut BufferAccessStrategy>,
    ) -> Result<Vec<Buffer>> {
        self.read_buffers_noting_reads(rel, fork, first, count, strategy).map(|(buffers, _)| buffers)
    }

    /// [`read_buffers`](Self::read_buffers), also returning which of the blocks
    /// this call read from the file (bit `i` for `first + i`): their pages have
    /// just passed through the cache (copied in and checksummed), which a caller
    /// about to walk them may want to know.
    pub fn read_buffers_noting_reads(
        &self,
        rel: RelFileLocator,
        fork: ForkNumber,
        first: BlockNumber,
        count: u32,
        mut strategy: Option<&mut BufferAccessStrategy>,
    ) -> Result<(Vec<Buffer>, u32)> {
        const _: () = assert!(READ_BATCH_BLOCKS_MAX <= u32::BITS);
        assert!(count <= READ_BATCH_BLOCKS_MAX, "read_buffers: count {count} > {READ_BATCH_BLOCKS_MAX}");
        assert!(first.checked_add(count).is_some(), "read_buffers: block {first} + {count} overflows");
        if let Some(ring) = strategy.as_deref_mut() {
            ring.reserve_slots(2 * count as usize);
        }
        // Pass 1: pin every block. Dropping `buffers` (on an error) unpins.
        let mut buffers = Vec::with_capacity(count as usize);
        for block in first..first + count {
            let tag = BufferTag { rel, fork, block };
            let id = self.pin_for_batch(tag, strategy.as_deref_mut())?;
            buffers.push(self.new_buffer(id, tag));
        }
        // Pass 2: make them valid, a run of our own reads at a time.
        let mut run_start: Option<usize> = None;
        let mut read = 0u32;
        let run_bits = |start: usize, end: usize| ((1u64 << end) - (1u64 << start)) as u32;
        for i in 0..buffers.len() {
            let id = buffers[i].id;
            match self.try_start_input_io(id) {
                InputIo::Started => {
                    run_start.get_or_insert(i);
                }
                outcome => {
                    if let Some(start) = run_start.take() {
                        self.read_run(&buffers[start..i])?;
                        read |= run_bits(start, i);
                    }
                    // No I/O of ours is in progress now, so waiting is safe.
                    if outcome == InputIo::Valid || !self.start_input_io(id) {
                        bump(&self.stats.hits);
                    } else {
                        run_start = Some(i);
                    }
                }
            }
        }
        if let Some(start) = run_start {
            self.read_run(&buffers[start..])?;
            read |= run_bits(start, buffers.len());
        }
        Ok((buffers, read))
    }

    /// Pass 1 of `read_buffers` for one block: returns a buffer tagged `tag`
    /// and pinned by us, valid or not, with no I/O of ours in progress.
    fn pin_for_batch(&self, tag: BufferTag, mut strategy: Option<&mut BufferAccessStrategy>) -> Result<usize> {
        loop {
            if let Some(id) = self.mapping.lookup(&tag) {
                if self.pin_if_tagged(id, &tag, strategy.is_some()) {
                    return Ok(id);
                }
                std::thread::yield_now();
                continue;
            }
            let victim = self.get_victim(strategy.as_deref_mut())?;
            if self.retag_victim(victim, tag, false)? {
                return Ok(victim);
            }
        }
    }

    /// Like `start_input_io` but never waits: `Busy` if another thread's I/O
    /// is in progress on the buffer.
    fn try_start_input_io(&self, id: usize) -> InputIo {
        let desc = &self.arena.descs[id];
        let _header = desc.header.lock();
        let state = desc.load();
        if state & IO_IN_PROGRESS != 0 {
            InputIo::Busy
        } else if state & VALID != 0 {
            InputIo::Valid
        } else {
            desc.set_flags(IO_IN_PROGRESS);
            InputIo::Started
        }
    }

    /// Reads `run` (consecutive blocks of one fork, input I/O started by us
    /// on each) straight into its frames with one vectored read, then
    /// verifies each page and ends its I/O. The frames' content locks are
    /// free: a victim had no pins, and whoever pins it now waits for our I/O
    /// before locking. Every buffer of the run has its I/O ended, valid or
    /// with IO_ERROR, whatever happens; the first error is returned.
    fn read_run(&self, run: &[Buffer]) -> Result<()> {
        let BufferTag { rel, fork, block: first } = run[0].tag;
        debug_assert!(run.iter().enumerate().all(|(i, b)| b.tag == BufferTag { rel, fork, block: first + i as u32 }));
        let mut frames: Vec<_> = run.iter().map(|buffer| self.arena.frames[buffer.id].write()).collect();
        let read = {
            let mut pages: Vec<&mut Page> = frames.iter_mut().map(|frame| &mut ***frame).collect();
            self.smgr.read_blocks_into(rel, fork, first, &mut pages)
        };
        if read.is_err() {
            // Read them one at a time, so that the error names its block.
            drop(frames);
            let mut first_error = None;
            for buffer in run {
                if let Err(e) = self.fill_and_finish_io(buffer.id, buffer.tag, Fill::Read) {
                    first_error.get_or_insert(e);
                }
            }
            return first_error.map_or(Ok(()), Err);
        }
        let mut first_error = None;
        for (buffer, mut frame) in run.iter().zip(frames) {
            let verified = self.smgr.verify_block(rel, fork, buffer.tag.block, &frame);
            if verified.is_err() {
                frame.fill(0);
            }
            drop(frame);
            match verified {
                Ok(()) => {
                    bump(&self.stats.reads);
                    self.finish_io(buffer.id, |s| (s | VALID) & !IO_ERROR);
                }
                Err(e) => {
                    self.finish_io(buffer.id, |s| s | IO_ERROR);
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Adds a block to the fork: the next block number is taken atomically,
    /// and returned pinned, zeroed (a new page: call `page::init`), valid and
    /// dirty. The block counts in `nblocks` as soon as it is allocated, so
    /// another thread may pin (and change) it before the caller locks it:
    /// check `page::is_new` under the exclusive lock before `page::init`.
    /// If no buffer can be had the number is still used up; the hole reads as
    /// a new page.
    pub fn extend(
        &self,
        rel: RelFileLocator,
        fork: ForkNumber,
        strategy: Option<&mut BufferAccessStrategy>,
    ) -> Result<Buffer> {
        let block = {
            let mut sizes = self.nblocks.lock();
            let n = match sizes.get(&(rel, fork)) {
                Some(&n) => n,
                None => self.smgr.nblocks(rel, fork)?,
            };
            if n == BlockNumber::MAX {
                let path = self.smgr.file_path(rel, fork);
                return Err(Error::new(
                    SqlState::PROGRAM_LIMIT_EXCEEDED,
                    format!("cannot extend file \"{}\" beyond {} blocks", path.display(), BlockNumber::MAX),
                ));
            }
            sizes.insert((rel, fork), n + 1);
            n
        };
        bump(&self.stats.extends);
        self.pin_page(BufferTag { rel, fork, block }, strategy, Fill::Extend)
    }

    /// Adds `pages` (complete page images) to the end of the fork, written straight to
    /// its file by `path`: a bulk load's pages need no buffer, and writing them from here
    /// costs one copy instead of a frame, an eviction and a write each. Sets their
    /// checksums; returns the first new block. The blocks are never in the pool (they are
    /// new), so no buffer can disagree with them; `flush_relation` fsyncs them with the rest.
    pub fn extend_with_pages(&self, rel: RelFileLocator, fork: ForkNumber, pages: Vec<Box<Page>>, path: NewPageWrites) -> Result<BlockNumber> {
        let first = self.reserve_blocks(rel, fork, pages.len())?;
        self.write_new_pages(rel, fork, first, pages, path)?;
        Ok(first)
    }

    /// Adds `count` blocks to the end of the fork without writing them, for a caller that
    /// writes them later with [`write_new_pages`](Self::write_new_pages) (several bulk
    /// writers filling their own reserved blocks at once). Until then they read as zeros
    /// or past the file's end: only a relation no one else sees yet (an index being
    /// built) is filled this way. Returns the first reserved block.
    pub fn reserve_blocks(&self, rel: RelFileLocator, fork: ForkNumber, count: usize) -> Result<BlockNumber> {
        let mut sizes = self.nblocks.lock();
        let n = match sizes.get(&(rel, fork)) {
            Some(&n) => n,
            None => self.smgr.nblocks(rel, fork)?,
        };
        let end = BlockNumber::try_from(count)
            .ok()
            .and_then(|count| n.checked_add(count))
            .filter(|&e| e < BlockNumber::MAX)
            .ok_or_else(|| {
                let path = self.smgr.file_path(rel, fork);
                Error::new(
                    SqlState::PROGRAM_LIMIT_EXCEEDED,
                    format!("cannot extend file \"{}\" beyond {} blocks", path.display(), BlockNumber::MAX),
                )
            })?;
        sizes.insert((rel, fork), end);
        Ok(n)
    }

    /// Reserve the blocks after the fork's end for `pages` ([`reserve_blocks`](Self::reserve_blocks)):
    /// they are written later by [`NumberedPages::write`], by whoever holds them.
    pub fn number_new_pages(&self, rel: RelFileLocator, fork: ForkNumber, pages: Vec<Box<Page>>, path: NewPageWrites) -> Result<NumberedPages> {
        let first = self.reserve_blocks(rel, fork, pages.len())?;
        Ok(NumberedPages { rel, fork, first, pages, path })
    }

    /// Write complete page images into blocks `first..` of the fork, reserved by
    /// [`reserve_blocks`](Self::reserve_blocks) and never written since (so never in the
    /// pool). Sets their checksums.
    pub fn write_new_pages(&self, rel: RelFileLocator, fork: ForkNumber, first: BlockNumber, mut pages: Vec<Box<Page>>, path: NewPageWrites) -> Result<()> {
        for (i, image) in pages.iter_mut().enumerate() {
            page::set_checksum(image, first + i as BlockNumber);
        }
        self.stats.extends.fetch_add(pages.len() as u64, Ordering::Relaxed);
        let mut block = first;
        while !pages.is_empty() {
            let rest = pages.split_off(pages.len().min(WRITE_BATCH_BLOCKS));
            let count = pages.len() as BlockNumber;
            match path {
                NewPageWrites::PageCache => {
                    self.smgr.write_blocks(rel, fork, block, &pages)?;
                    crate::page::recycle_pages(pages);
                }
                NewPageWrites::Direct => self.smgr.write_blocks_in_background(rel, fork, block, pages)?,
            }
            block += count;
            pages = rest;
        }
        Ok(())
    }

    /// Logical size of the fork, including extended blocks not yet written.
    pub fn nblocks(&self, rel: RelFileLocator, fork: ForkNumber) -> Result<BlockNumber> {
        let mut sizes = self.nblocks.lock();
        if let Some(&n) = sizes.get(&(rel, fork)) {
            return Ok(n);
        }
        let n = self.smgr.nblocks(rel, fork)?;
        sizes.insert((rel, fork), n);
        Ok(n)
    }

    /// True if the page is in the pool (valid). For tests and statistics.
    pub fn is_resident(&self, tag: BufferTag) -> bool {
        let Some(id) = self.mapping.lookup(&tag) else { return false };
        let desc = &self.arena.descs[id];
        let header = desc.header.lock();
        *header == Some(tag) && desc.load() & VALID != 0
    }

    fn pin_page(&self, tag: BufferTag, mut strategy: Option<&mut BufferAccessStrategy>, fill: Fill) -> Result<Buffer> {
        loop {
            if let Some(id) = self.mapping.lookup(&tag) {
                if self.pin_if_tagged(id, &tag, strategy.is_some()) {
                    return self.complete_pin(id, tag, fill);
                }
                // Evicted or being re-tagged under us: look again.
                std::thread::yield_now();
                continue;
            }
            let victim = self.get_victim(strategy.as_deref_mut())?;
            if let Some(buffer) = self.claim_victim(victim, tag, fill)? {
                return Ok(buffer);
            }
        }
    }

    /// Pins buffer `id` if it still holds `tag`.
    fn pin_if_tagged(&self, id: usize, tag: &BufferTag, with_strategy: bool) -> bool {
        let desc = &self.arena.descs[id];
        let header = desc.header.lock();
        if header.as_ref() != Some(tag) {
            return false;
        }
        desc.pin(with_strategy);
        true
    }

    fn new_buffer(&self, id: usize, tag: BufferTag) -> Buffer {
        Buffer { arena: self.arena.clone(), id, tag }
    }

    /// `id` is pinned and tagged `tag`: make it valid (reading it, or waiting
    /// for the thread that does) and hand out the pin.
    fn complete_pin(&self, id: usize, tag: BufferTag, fill: Fill) -> Result<Buffer> {
        let buffer = self.new_buffer(id, tag);
        if self.start_input_io(id) {
            self.fill_and_finish_io(id, tag, fill)?;
        } else {
            bump(&self.stats.hits);
            if fill == Fill::Extend {
                // Another thread pinned the new block first; keep what it
                // wrote. Dirty, so that the file grows.
                self.arena.descs[id].set_flags(DIRTY | JUST_DIRTIED);
            }
        }
        Ok(buffer)
    }

    /// Waits for I/O in progress; returns true if the caller must now fill the
    /// buffer (IO_IN_PROGRESS is then set for it), false if it is valid.
    fn start_input_io(&self, id: usize) -> bool {
        let desc = &self.arena.descs[id];
        let mut header = desc.header.lock();
        loop {
            let state = desc.load();
            if state & IO_IN_PROGRESS != 0 {
                desc.io_done.wait(&mut header);
                continue;
            }
            if state & VALID != 0 {
                return false;
            }
            desc.set_flags(IO_IN_PROGRESS);
            return true;
        }
    }

    /// Ends an I/O: clears IO_IN_PROGRESS, sets or clears other flags, wakes waiters.
    fn finish_io(&self, id: usize, f: impl Fn(u64) -> u64) {
        let desc = &self.arena.descs[id];
        let _header = desc.header.lock();
        desc.update(|state| f(state) & !IO_IN_PROGRESS);
        desc.io_done.notify_all();
    }

    /// Reads the page of a buffer whose input I/O we started.
    fn fill_and_finish_io(&self, id: usize, tag: BufferTag, fill: Fill) -> Result<()> {
        let result = {
            let mut frame = self.arena.frames[id].write();
            let result = self.smgr.read_block(tag.rel, tag.fork, tag.block, &mut frame);
            if result.is_err() {
                frame.fill(0);
            }
            result
        };
        match (&result, fill) {
            (Ok(()), Fill::Read) => {
                bump(&self.stats.reads);
                self.finish_io(id, |s| (s | VALID) & !IO_ERROR);
            }
            (Ok(()), Fill::Extend) => self.finish_io(id, |s| (s | VALID | DIRTY) & !IO_ERROR),
            (Err(_), _) => self.finish_io(id, |s| s | IO_ERROR),
        }
        result
    }

    /// A pinned buffer to recycle: from the ring if it has a reusable one,
    /// else from the clock sweep.
    fn get_victim(&self, strategy: Option<&mut BufferAccessStrategy>) -> Result<usize> {
        let nbuffers = self.nbuffers();
        if let Some(id) = self.take_never_used(nbuffers) {
            // Not remembered in a ring: the page stays in the pool after the scan.
            return Ok(id);
        }
        if let Some(ring) = strategy {
            if let Some(id) = ring.advance(nbuffers) {
                if let SweepOutcome::Pinned = self.arena.descs[id].sweep(1, false) {
                    return Ok(id);
                }
            }
            let id = self.clock_sweep()?;
            ring.remember(id);
            return Ok(id);
        }
        self.clock_sweep()
    }

    /// A pinned frame that never held a page, while any remain.
    fn take_never_used(&self, nbuffers: usize) -> Option<usize> {
        if self.never_used.load(Ordering::Relaxed) >= nbuffers {
            return None;
        }
        loop {
            let id = self.never_used.fetch_add(1, Ordering::Relaxed);
            if id >= nbuffers {
                return None;
            }
            let desc = &self.arena.descs[id];
            // Claimed meanwhile by the clock sweep: skip it (it is in use now).
            if desc.load() & TAG_VALID != 0 {
                continue;
            }
            if let SweepOutcome::Pinned = desc.sweep(0, false) {
                return Some(id);
            }
        }
    }

    /// PostgreSQL's `StrategyGetBuffer` without a free list: move the hand,
    /// decrement usage counts, take the first unpinned buffer at usage 0.
    /// Gives up once it has passed every buffer pinned without any usage
    /// count going down in between.
    fn clock_sweep(&self) -> Result<usize> {
        let nbuffers = self.nbuffers();
        let mut tries_left = nbuffers;
        loop {
            let id = (self.clock_hand.fetch_add(1, Ordering::Relaxed) % nbuffers as u64) as usize;
            match self.arena.descs[id].sweep(0, true) {
                SweepOutcome::Pinned => return Ok(id),
                SweepOutcome::Decremented => tries_left = nbuffers,
                SweepOutcome::Busy => {
                    tries_left -= 1;
                    if tries_left == 0 {
                        return Err(no_unpinned_buffers());
                    }
                }
            }
        }
    }

    /// Tries to turn pinned `victim` into the buffer for `tag`. `Ok(None)`
    /// means "start over" (the victim has been given back).
    fn claim_victim(&self, victim: usize, tag: BufferTag, fill: Fill) -> Result<Option<Buffer>> {
        if !self.retag_victim(victim, tag, true)? {
            return Ok(None);
        }
        let buffer = self.new_buffer(victim, tag);
        self.fill_and_finish_io(victim, tag, fill)?;
        Ok(Some(buffer))
    }

    /// Writes pinned `victim` out if dirty and re-tags it `tag`, still pinned
    /// once by us, invalid, with IO_IN_PROGRESS set iff `start_io`.
    /// `Ok(false)` means "start over" (the victim has been given back); on an
    /// error it has been given back too.
    fn retag_victim(&self, victim: usize, tag: BufferTag, start_io: bool) -> Result<bool> {
        let desc = &self.arena.descs[victim];
        if let Err(e) = self.flush_buffer(victim) {
            desc.unpin();
            return Err(e);
        }
        self.note_mapped_block(&tag);
        match self.mapping.insert(tag, victim) {
            Ok(Ok(())) => {}
            Ok(Err(_)) => {
                // Another thread is bringing the page in: use its buffer.
                desc.unpin();
                return Ok(false);
            }
            Err(e) => {
                desc.unpin();
                return Err(e);
            }
        }
        let mut header = desc.header.lock();
        let state = desc.load();
        if refcount(state) != 1 || state & (DIRTY | IO_IN_PROGRESS) != 0 {
            // Someone pinned the old page (and maybe dirtied it) meanwhile.
            drop(header);
            self.mapping.remove(&tag, victim);
            desc.unpin();
            return Ok(false);
        }
        let old = header.replace(tag);
        let io = if start_io { IO_IN_PROGRESS } else { 0 };
        desc.update(|s| (s & REFCOUNT_MASK) | USAGE_ONE | TAG_VALID | io);
        if let Some(old) = old {
            debug_assert!(state & TAG_VALID != 0);
            let removed = self.mapping.remove(&old, victim);
            debug_assert!(removed, "mapping lost {old:?}");
            bump(&self.stats.evictions);
        }
        Ok(true)
    }

    /// Writes buffer `id` (pinned by the caller) if it is dirty; waits for a
    /// write already under way instead of starting a second one.
    fn flush_buffer(&self, id: usize) -> Result<()> {
        let desc = &self.arena.descs[id];
        let tag = {
            let mut header = desc.header.lock();
            loop {
                let state = desc.load();
                if state & IO_IN_PROGRESS != 0 {
                    desc.io_done.wait(&mut header);
                    continue;
                }
                if state & DIRTY == 0 {
                    return Ok(());
                }
                match *header {
                    Some(tag) => {
                        desc.update(|s| (s | IO_IN_PROGRESS) & !JUST_DIRTIED);
                        break tag;
                    }
                    None => {
                        // Invalidated (relation dropped) while dirty: nothing to write.
                        desc.clear_flags(DIRTY | JUST_DIRTIED);
                        return Ok(());
                    }
                }
            }
        };
        let mut copy: Box<Page> = Box::new([0u8; PAGE_SIZE]);
        copy.copy_from_slice(&self.arena.frames[id].read()[..]);
        if !page::is_new(&copy) {
            page::set_checksum(&mut copy, tag.block);
        }
        let result = self.smgr.write_block(tag.rel, tag.fork, tag.block, &copy);
        match &result {
            Ok(()) => {
                bump(&self.stats.writes);
                self.pending_sync.lock().insert(tag.rel);
                self.finish_io(id, |s| if s & JUST_DIRTIED == 0 { s & !(DIRTY | IO_ERROR) } else { s & !IO_ERROR });
            }
            Err(_) => self.finish_io(id, |s| s | IO_ERROR),
        }
        result
    }

    /// Buffers worth visiting for `rel`: the mapping's lists of its forks,
    /// or all of them.
    fn candidate_buffers(&self, rel: RelFileLocator) -> Vec<usize> {
        if !self.mapping.lists_forks() {
            return (0..self.nbuffers()).collect();
        }
        let mut ids = Vec::new();
        for fork in ForkNumber::ALL {
            if let Some(entries) = self.mapping.fork_buffers(rel, fork) {
                ids.extend(entries.into_iter().map(|(_, id)| id));
            }
        }
        ids
    }

    /// Writes every dirty buffer whose tag satisfies `wanted`.
    fn flush_matching(&self, ids: Vec<usize>, wanted: impl Fn(&BufferTag) -> bool) -> Result<()> {
        for id in ids {
            let desc = &self.arena.descs[id];
            {
                let header = desc.header.lock();
                match *header {
                    Some(tag) if wanted(&tag) && desc.load() & DIRTY != 0 => desc.add_pin(),
                    _ => continue,
                }
            }
            let result = self.flush_buffer(id);
            desc.unpin();
            result?;
        }
        Ok(())
    }

    /// Writes every dirty buffer of `rel` (all forks) without fsyncing
    /// (PostgreSQL's `FlushRelationBuffers`); the files stay pending for
    /// `flush_all`.
    pub fn write_relation_buffers(&self, rel: RelFileLocator) -> Result<()> {
        self.flush_matching(self.candidate_buffers(rel), |tag| tag.rel == rel)
    }

    /// Writes every dirty buffer of `rel` (all forks) and fsyncs its files.
    pub fn flush_relation(&self, rel: RelFileLocator) -> Result<()> {
        self.write_relation_buffers(rel)?;
        self.pending_sync.lock().remove(&rel);
        self.smgr.sync(rel).inspect_err(|_| {
            self.pending_sync.lock().insert(rel);
        })
    }

    /// Writes every dirty buffer and fsyncs every file written since its last fsync.
    pub fn flush_all(&self) -> Result<()> {
        self.flush_matching((0..self.nbuffers()).collect(), |_| true)?;
        let rels: Vec<RelFileLocator> = self.pending_sync.lock().drain().collect();
        for (i, rel) in rels.iter().enumerate() {
            if let Err(e) = self.smgr.sync(*rel) {
                self.pending_sync.lock().extend(rels[i..].iter().copied());
                return Err(e);
            }
        }
        Ok(())
    }

    /// Checks the pool's invariants; meaningful only while no other thread
    /// uses the pool. With `expect_unpinned`, also that no pins are held.
    pub fn check_invariants(&self, expect_unpinned: bool) -> std::result::Result<(), String> {
        let mut tagged = 0;
        for (id, desc) in self.arena.descs.iter().enumerate() {
            let header = desc.header.lock();
            let state = desc.load();
            if state & IO_IN_PROGRESS != 0 {
                return Err(format!("buffer {id}: I/O in progress"));
            }
            if expect_unpinned && refcount(state) != 0 {
                return Err(format!("buffer {id}: pinned {} times", refcount(state)));
            }
            if usage_count(state) > USAGE_COUNT_MAX {
                return Err(format!("buffer {id}: usage count {}", usage_count(state)));
            }
            match *header {
                Some(tag) => {
                    tagged += 1;
                    if state & TAG_VALID == 0 {
                        return Err(format!("buffer {id}: tag without TAG_VALID"));
                    }
                    if self.mapping.lookup(&tag) != Some(id) {
                        return Err(format!("buffer {id}: {tag:?} not mapped to it"));
                    }
                    if !self.mapping.lists_forks() && self.mapped_bound(tag.rel, tag.fork) <= tag.block {
                        return Err(format!("buffer {id}: {tag:?} past its fork's mapped bound"));
                    }
                    if state & VALID != 0 {
                        page::verify(&self.arena.frames[id].read())
                            .map_err(|e| format!("buffer {id} ({tag:?}): {e}"))?;
                    }
                }
                None => {
                    if state & (TAG_VALID | VALID | DIRTY) != 0 {
                        return Err(format!("buffer {id}: untagged but state {state:#x}"));
                    }
                }
            }
        }
        if self.mapping.len() != tagged {
            return Err(format!("mapping has {} entries for {tagged} tagged buffers", self.mapping.len()));
        }
        self.mapping.verify().map_err(|e| format!("{} mapping: {e}", self.mapping.name()))?;
        Ok(())
    }
}

/// Shared access to a pinned page (its content lock, held shared).
pub type PageReadGuard<'a> = MappedRwLockReadGuard<'a, Page>;
/// Exclusive access to a pinned page (its content lock, held exclusively).
pub type PageWriteGuard<'a> = MappedRwLockWriteGuard<'a, Page>;

/// A pin on one buffer; dropping it unpins. While pinned, the buffer keeps
/// its page. Do not take a second content lock on the same page in one
/// thread while holding the first: content locks are not re-entrant.
pub struct Buffer {
    arena: Arc<Arena>,
    id: usize,
    tag: BufferTag,
}

impl Buffer {
    pub fn tag(&self) -> BufferTag {
        self.tag
    }

    pub fn block_number(&self) -> BlockNumber {
        self.tag.block
    }

    /// Index of the frame (for diagnostics).
    pub fn buffer_id(&self) -> usize {
        self.id
    }

    /// Takes the content lock shared.
    pub fn read(&self) -> PageReadGuard<'_> {
        RwLockReadGuard::map(self.arena.frames[self.id].read(), |frame| &**frame)
    }

    /// Takes the content lock exclusively and marks the buffer dirty.
    pub fn write(&self) -> PageWriteGuard<'_> {
        let guard = self.arena.frames[self.id].write();
        // Dirty before any change: a write that copies the page after this
        // point sees JUST_DIRTIED and leaves DIRTY set.
        self.arena.descs[self.id].set_flags(DIRTY | JUST_DIRTIED);
        RwLockWriteGuard::map(guard, |frame| &mut **frame)
    }
}

impl Clone for Buffer {
    /// Another pin on the same buffer.
    fn clone(&self) -> Buffer {
        self.arena.descs[self.id].add_pin();
        Buffer { arena: self.arena.clone(), id: self.id, tag: self.tag }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.arena.descs[self.id].unpin();
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer").field("id", &self.id).field("tag", &self.tag).finish()
    }
}

/// How a bulk writer's new pages reach their file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewPageWrites {
    /// Written by the caller through the page cache, where the next reader finds them: a
    /// table is usually read again soon (a CREATE TABLE AS, then its index build).
    PageCache,
    /// Handed to the writer threads of `bulk_write`, which write them with direct I/O:
    /// the caller's thread pays no copy and the page cache nothing (on these machines a
    /// cold page-cache page costs a hypervisor fault per 4 kB). For an index build,
    /// whose pages are read again a few at a time.
    Direct,
}

/// New page images with their blocks reserved ([`BufferPool::number_new_pages`]): numbered
/// in order by one caller, written by any (bulk loads whose participants write their own
/// parts of a relation that grows in order).
pub struct NumberedPages {
    rel: RelFileLocator,
    fork: ForkNumber,
    first: BlockNumber,
    pages: Vec<Box<Page>>,
    path: NewPageWrites,
}

impl NumberedPages {
    /// Pages for blocks `first..` of the fork, which the caller reserved
    /// ([`BufferPool::reserve_blocks`]) and nobody has written.
    pub fn new(rel: RelFileLocator, fork: ForkNumber, first: BlockNumber, pages: Vec<Box<Page>>, path: NewPageWrites) -> NumberedPages {
        NumberedPages { rel, fork, first, pages, path }
    }

    pub fn write(self, pool: &BufferPool) -> Result<()> {
        pool.write_new_pages(self.rel, self.fork, self.first, self.pages, self.path)
    }
}
