//! Batch files of a hash join: shared tuple stores, one temp file per participant per
//! batch (and side, and generation), read back in blocks by all participants.
//!
//! A writer fills a block buffer with records and writes it out whole; the block's place
//! (file, offset, length), its record count and the bytes its tuples take in memory are
//! kept in a [`Block`]. Whoever reads a batch claims its blocks one at a time from a
//! counter — PostgreSQL's `SharedTuplestore` read in chunks by every participant — so any
//! number of participants read one batch at once, and the memory a batch will take is
//! known, block by block, before it is loaded (a hot batch is loaded in chunks of blocks).
//!
//! A record is `u32` body length, then the key's `u64` hash, a flag byte (1: the tuple has
//! keys; 0: an inner tuple with a NULL key, kept for right and full joins), and the row's
//! datums in `crate::spill`'s exact encoding.
//!
//! Files are removed as soon as the last block naming them is dropped (after their batch
//! was processed, or their generation repartitioned), and the join's directory when the
//! join's state is dropped: however the statement ends.
//!
//! A writer keeps its file open while the join has few batches; beyond
//! [`OPEN_WRITERS_MAX`] batches it opens the file for each block it appends, so that the
//! number of open files does not grow with batches × participants.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use weft_common::{Datum, Error, Result};
use weft_sort::TempFileSet;

use crate::spill::{corrupt, encode_datum, io_error, Decoder, DiskCounters};

/// Most batches a join may have (then growth stops: a batch over budget is processed in
/// chunks). Batch bits are bits 32.. of the hash: below the 4 filter bits at the top.
pub(crate) const MAX_BATCHES: usize = 1 << 14;
const BATCH_SHIFT: u32 = 32;
const _: () = assert!(MAX_BATCHES.trailing_zeros() + BATCH_SHIFT <= 60);

/// Batches beyond which a writer does not keep its files open between blocks.
const OPEN_WRITERS_MAX: usize = 32;
/// Block sizes: a block buffer per batch per participant is held while writing.
const BLOCK_BYTES_MIN: usize = 8 << 10;
const BLOCK_BYTES_MAX: usize = 128 << 10;

/// The batch of a hash with `nbatch` (a power of two) batches: bits 32.. of the hash, a
/// rotation independent of the bucket bits (the low ones) and of the chain filter bits
/// (the top four), as PostgreSQL takes the batch from a rotation of the hash.
#[inline]
pub(crate) fn batch_of(hash: u64, nbatch: usize) -> usize {
    debug_assert!(nbatch.is_power_of_two() && nbatch <= MAX_BATCHES);
    ((hash >> BATCH_SHIFT) as usize) & (nbatch - 1)
}

/// Block size for a table budget of `space_allowed` bytes.
pub(crate) fn block_bytes(space_allowed: usize) -> usize {
    (space_allowed / 16).clamp(BLOCK_BYTES_MIN, BLOCK_BYTES_MAX)
}

/// The temp directory of one join (created at the first spill) and its disk figures.
pub(crate) struct SpillSet {
    files: TempFileSet,
    pub counters: DiskCounters,
}

impl SpillSet {
    pub fn create(parent: &Path) -> Result<SpillSet> {
        Ok(SpillSet { files: TempFileSet::create_named(parent, "hashjoin")?, counters: DiskCounters::default() })
    }
}

/// One writer's file for one batch; removed when the last block naming it is dropped.
pub(crate) struct BatchFile {
    set: Arc<SpillSet>,
    path: PathBuf,
    bytes: AtomicU64,
}

impl Drop for BatchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.set.counters.removed(self.bytes.load(Ordering::Relaxed));
    }
}

/// A run of whole records in a batch file.
#[derive(Clone)]
pub(crate) struct Block {
    file: Arc<BatchFile>,
    offset: u64,
    len: u32,
    pub records: u32,
    /// Bytes its tuples take in a table (`Arena::tuple_bytes`, summed).
    pub bytes: usize,
}

impl Block {
    /// Read the block's bytes into `buf`.
    pub fn read(&self, buf: &mut Vec<u8>) -> Result<()> {
        buf.resize(self.len as usize, 0);
        let file = File::open(&self.file.path).map_err(|e| io_error(&self.file.path, &e))?;
        file.read_exact_at(buf, self.offset).map_err(|e| io_error(&self.file.path, &e))?;
        Ok(())
    }
}

/// Records of a block read into a buffer.
pub(crate) struct Records<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Records<'a> {
    pub fn new(buf: &'a [u8]) -> Records<'a> {
        Records { buf, pos: 0 }
    }

    /// The next record: its hash, its keyed flag, and the row decoded into `row`.
    pub fn next_into(&mut self, width: usize, row: &mut Vec<Datum>) -> Result<Option<(u64, bool)>> {
        if self.pos == self.buf.len() {
            return Ok(None);
        }
        let len = self.buf.get(self.pos..self.pos + 4).ok_or_else(corrupt)?;
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        let body = self.buf.get(self.pos + 4..self.pos + 4 + len).ok_or_else(corrupt)?;
        self.pos += 4 + len;
        let mut decoder = Decoder::new(body);
        let hash = decoder.hash()?;
        let keyed = decoder.bool()?;
        row.clear();
        for _ in 0..width {
            row.push(decoder.datum()?);
        }
        if !decoder.at_end() {
            return Err(corrupt());
        }
        Ok(Some((hash, keyed)))
    }
}

/// One batch's file being written by one participant.
struct Writer {
    file: Option<Arc<BatchFile>>,
    handle: Option<File>,
    buf: Vec<u8>,
    records: u32,
    bytes: usize,
    offset: u64,
    blocks: Vec<Block>,
}

impl Writer {
    fn new() -> Writer {
        Writer { file: None, handle: None, buf: Vec::new(), records: 0, bytes: 0, offset: 0, blocks: Vec::new() }
    }
}

/// What a completed block added to its batch (for the build's accounting).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Written {
    pub batch: usize,
    pub records: u32,
    pub bytes: usize,
}

/// One participant's writers for every batch of one side and generation.
pub(crate) struct BatchWriters {
    set: Arc<SpillSet>,
    name: String,
    block_bytes: usize,
    keep_open: bool,
    writers: Vec<Writer>,
    record: Vec<u8>,
}

impl BatchWriters {
    /// `name` tells files apart: side, generation and participant.
    pub fn new(set: Arc<SpillSet>, name: String, nbatch: usize, block_bytes: usize) -> BatchWriters {
        BatchWriters {
            set,
            name,
            block_bytes,
            keep_open: nbatch <= OPEN_WRITERS_MAX,
            writers: (0..nbatch).map(|_| Writer::new()).collect(),
            record: Vec::new(),
        }
    }

    /// Append a record to `batch`; returns what a block completed by it added.
    pub fn write(&mut self, batch: usize, hash: u64, keyed: bool, row: &[Datum], bytes: usize) -> Result<Option<Written>> {
        let record = &mut self.record;
        record.clear();
        record.extend_from_slice(&[0; 4]);
        record.extend_from_slice(&hash.to_le_bytes());
        record.push(keyed as u8);
        for d in row {
            encode_datum(record, d);
        }
        let len = u32::try_from(record.len() - 4).map_err(|_| Error::internal("hash join batch record over 4 GB"))?;
        record[..4].copy_from_slice(&len.to_le_bytes());
        let mut written = None;
        if !self.writers[batch].buf.is_empty() && self.writers[batch].buf.len() + self.record.len() > self.block_bytes {
            written = self.flush(batch)?;
        }
        let writer = &mut self.writers[batch];
        if writer.buf.capacity() == 0 {
            writer.buf.reserve_exact(self.block_bytes.max(self.record.len()));
        }
        writer.buf.extend_from_slice(&self.record);
        writer.records += 1;
        writer.bytes += bytes;
        Ok(written)
    }

    /// Write out `batch`'s buffer as one block.
    fn flush(&mut self, batch: usize) -> Result<Option<Written>> {
        let writer = &mut self.writers[batch];
        if writer.buf.is_empty() {
            return Ok(None);
        }
        let file = match &writer.file {
            Some(file) => file.clone(),
            None => {
                let (handle, path) = self.set.files.new_file(&format!("{}.b{batch}", self.name))?;
                self.set.counters.add_file();
                let file = Arc::new(BatchFile { set: self.set.clone(), path: Arc::unwrap_or_clone(path), bytes: AtomicU64::new(0) });
                writer.handle = Some(handle);
                writer.file = Some(file.clone());
                file
            }
        };
        let handle = match writer.handle.take() {
            Some(handle) => handle,
            None => File::options().write(true).open(&file.path).map_err(|e| io_error(&file.path, &e))?,
        };
        handle.write_all_at(&writer.buf, writer.offset).map_err(|e| io_error(&file.path, &e))?;
        if self.keep_open {
            writer.handle = Some(handle);
        }
        let len = writer.buf.len() as u64;
        file.bytes.fetch_add(len, Ordering::Relaxed);
        self.set.counters.wrote(len);
        let block = Block { file, offset: writer.offset, len: len as u32, records: writer.records, bytes: writer.bytes };
        writer.offset += len;
        let written = Written { batch, records: block.records, bytes: block.bytes };
        writer.blocks.push(block);
        writer.buf.clear();
        writer.records = 0;
        writer.bytes = 0;
        Ok(Some(written))
    }

    /// Write out every partial block and hand over every block, by batch, with what the
    /// partial blocks added; the writers stay usable (new blocks go to the same files).
    pub fn take_blocks(&mut self) -> Result<(Vec<Vec<Block>>, Vec<Written>)> {
        let mut added = Vec::new();
        for batch in 0..self.writers.len() {
            if let Some(w) = self.flush(batch)? {
                added.push(w);
            }
        }
        let blocks = self.writers.iter_mut().map(|w| std::mem::take(&mut w.blocks)).collect();
        Ok((blocks, added))
    }

    /// Release the block buffers (the writers are done).
    pub fn close(&mut self) {
        for w in &mut self.writers {
            w.buf = Vec::new();
            w.handle = None;
        }
        self.record = Vec::new();
    }
}
