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
//! A record starts with a tag byte. [`RECORD_ROW`]: then `u32` body length, the key's
//! `u64` hash, a flag byte (1: the tuple has keys; 0: an inner tuple with a NULL key, kept
//! for right and full joins), and the row's datums in `crate::spill`'s exact encoding.
//! [`RECORD_INT4_KEY`] / [`RECORD_INT8_KEY`]: then the value, little-endian — a row that is
//! nothing but its one integer key (a self-join's `count(*)` side), whose hash is the key's
//! and is computed again when read: 5 or 9 bytes instead of 19 or 23.
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

use weft_common::{DataType, Datum, Error, Result};
use weft_sort::TempFileSet;

use super::table::key_hash;
use crate::spill::{corrupt, encode_datum, io_error, Decoder, DiskCounters};

/// Record tags (see the module documentation).
const RECORD_ROW: u8 = 0;
const RECORD_INT4_KEY: u8 = 1;
const RECORD_INT8_KEY: u8 = 2;

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
        let tag = self.buf[self.pos];
        self.pos += 1;
        if tag != RECORD_ROW {
            let key = match tag {
                RECORD_INT4_KEY => Datum::Int4(i32::from_le_bytes(self.take::<4>()?)),
                RECORD_INT8_KEY => Datum::Int8(i64::from_le_bytes(self.take::<8>()?)),
                _ => return Err(corrupt()),
            };
            if width != 1 {
                return Err(corrupt());
            }
            row.clear();
            row.push(key);
            return Ok(Some((key_hash(row), true)));
        }
        let len = u32::from_le_bytes(self.take::<4>()?) as usize;
        let body = self.buf.get(self.pos..self.pos + len).ok_or_else(corrupt)?;
        self.pos += len;
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

    /// The next record's value when it is a compact integer record of `data_type` (int4
    /// or int8), consumed; `None` (nothing consumed) at the end or before any other
    /// record. Lets a reader of integer-key rows skip building a `Datum` row per record.
    #[inline]
    pub fn next_int(&mut self, data_type: DataType) -> Result<Option<i64>> {
        let expected = match data_type {
            DataType::Int4 => RECORD_INT4_KEY,
            DataType::Int8 => RECORD_INT8_KEY,
            _ => return Ok(None),
        };
        if self.buf.get(self.pos) != Some(&expected) {
            return Ok(None);
        }
        self.pos += 1;
        Ok(Some(match data_type {
            DataType::Int4 => i32::from_le_bytes(self.take::<4>()?) as i64,
            _ => i64::from_le_bytes(self.take::<8>()?),
        }))
    }

    /// Were all records read?
    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// The next `N` bytes.
    #[inline]
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.buf.get(self.pos..self.pos + N).ok_or_else(corrupt)?;
        self.pos += N;
        Ok(bytes.try_into().expect("N bytes"))
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
    /// The side's rows are their one key (width 1, the key a plain column): an integer
    /// key is written as a compact record.
    row_is_key: bool,
    keep_open: bool,
    writers: Vec<Writer>,
    record: Vec<u8>,
}

impl BatchWriters {
    /// `name` tells files apart: side, generation and participant. `row_is_key`: see the
    /// field.
    pub fn new(set: Arc<SpillSet>, name: String, nbatch: usize, block_bytes: usize, row_is_key: bool) -> BatchWriters {
        BatchWriters {
            set,
            name,
            block_bytes,
            row_is_key,
            keep_open: nbatch <= OPEN_WRITERS_MAX,
            writers: (0..nbatch).map(|_| Writer::new()).collect(),
            record: Vec::new(),
        }
    }

    /// Append a record to `batch`; returns what a block completed by it added.
    pub fn write(&mut self, batch: usize, hash: u64, keyed: bool, row: &[Datum], bytes: usize) -> Result<Option<Written>> {
        // A key-only record is an array of known length, copied by a few stores rather
        // than a call to `memmove` (one per row of every spilled batch).
        match row {
            [Datum::Int4(v)] if keyed && self.row_is_key => {
                debug_assert_eq!(hash, key_hash(row));
                let v = v.to_le_bytes();
                self.append(batch, bytes, &[RECORD_INT4_KEY, v[0], v[1], v[2], v[3]])
            }
            [Datum::Int8(v)] if keyed && self.row_is_key => {
                debug_assert_eq!(hash, key_hash(row));
                let mut record = [RECORD_INT8_KEY; 9];
                record[1..].copy_from_slice(&v.to_le_bytes());
                self.append(batch, bytes, &record)
            }
            _ => {
                let mut record = std::mem::take(&mut self.record);
                record.clear();
                record.push(RECORD_ROW);
                record.extend_from_slice(&[0; 4]);
                record.extend_from_slice(&hash.to_le_bytes());
                record.push(keyed as u8);
                for d in row {
                    encode_datum(&mut record, d);
                }
                let written = match u32::try_from(record.len() - 5) {
                    Ok(len) => {
                        record[1..5].copy_from_slice(&len.to_le_bytes());
                        self.append(batch, bytes, &record)
                    }
                    Err(_) => Err(Error::internal("hash join batch record over 4 GB")),
                };
                self.record = record;
                written
            }
        }
    }

    /// Add `record` (of a row of `bytes` in memory) to `batch`'s buffer, first writing
    /// the buffer out as a block if the record would not fit.
    #[inline(always)]
    fn append(&mut self, batch: usize, bytes: usize, record: &[u8]) -> Result<Option<Written>> {
        let mut written = None;
        if !self.writers[batch].buf.is_empty() && self.writers[batch].buf.len() + record.len() > self.block_bytes {
            written = self.flush(batch)?;
        }
        let writer = &mut self.writers[batch];
        if writer.buf.capacity() == 0 {
            writer.buf.reserve_exact(self.block_bytes.max(record.len()));
        }
        writer.buf.extend_from_slice(record);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows that are one integer key go to disk as compact records and come back with the
    /// hash they were written with; every other row, NULL-keyed ones included, keeps the
    /// general record. Both kinds mix in one block.
    #[test]
    fn compact_and_general_records_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let set = Arc::new(SpillSet::create(dir.path()).unwrap());
        let rows: Vec<(Vec<Datum>, bool, u64)> = vec![
            (vec![Datum::Int4(-7)], true, key_hash(&[Datum::Int4(-7)])),
            (vec![Datum::Null], false, 0xDEAD_BEEF),
            (vec![Datum::Int8(i64::MIN)], true, key_hash(&[Datum::Int8(i64::MIN)])),
            (vec![Datum::Text("k".into())], true, key_hash(&[Datum::Text("k".into())])),
            (vec![Datum::Int4(i32::MAX)], true, key_hash(&[Datum::Int4(i32::MAX)])),
        ];
        let mut block_lens = Vec::new();
        for row_is_key in [true, false] {
            let mut writers = BatchWriters::new(set.clone(), format!("t{row_is_key}"), 1, BLOCK_BYTES_MIN, row_is_key);
            for (row, keyed, hash) in &rows {
                writers.write(0, *hash, *keyed, row, 16).unwrap();
            }
            let (blocks, _) = writers.take_blocks().unwrap();
            let mut buf = Vec::new();
            blocks[0][0].read(&mut buf).unwrap();
            block_lens.push(buf.len());
            let mut records = Records::new(&buf);
            let mut row = Vec::new();
            for (expected, keyed, hash) in &rows {
                assert_eq!(records.next_into(1, &mut row).unwrap(), Some((*hash, *keyed)));
                assert_eq!(&row, expected);
            }
            assert_eq!(records.next_into(1, &mut row).unwrap(), None);
        }
        // Three compact records (5, 9 and 5 bytes) instead of general ones (each carrying a
        // length, the hash, a flag and a datum tag besides the value).
        assert!(block_lens[0] + 3 * 13 <= block_lens[1], "{block_lens:?}");
        // An unknown tag is corruption, not a wrong row.
        assert!(Records::new(&[9, 0, 0, 0, 0]).next_into(1, &mut Vec::new()).is_err());
    }
}
