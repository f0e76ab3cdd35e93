//! Temp files and the runs written to them.
//!
//! A sort owns one [`TempFileSet`]: a directory under the data directory's `tmp/` that is
//! removed when the set is dropped, however the sort ends (success, error, cancel, panic
//! unwinding). Each participant writes its own files in it; any participant may open any
//! file read-only once its writer has finished (tape unification: the leader, or in the
//! partitioned merge every participant, reads runs that others wrote).
//!
//! A run on tape is a byte range of one file holding `count` tuples, each a `u32` length
//! followed by the tuple — or, for a sort in pair form (`pairs.rs`), each a 16-byte pair
//! (abbreviation, payload), which is the tuple too, or 8 bytes when the pairs are packed:
//! such a run is merged by comparing 128-bit values and is rebuilt into tuples only where
//! tuples are read. While writing, every `INDEX_EVERY`-th tuple is copied into a
//! sparse index (ordinal, file offset, tuple) so that the partitioned merge can sample
//! splitters and find where a key falls in the run without reading it all.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use weft_common::{Error, Result};

use crate::memtuples::SortTuple;
use crate::pairs::{PackedPair, Packing, PairForm};

/// Bytes of a pair on tape, and of a packed pair.
const PAIR_BYTES: usize = 16;
const PACKED_BYTES: usize = 8;

/// Tuples between two entries of a run's sparse index.
pub(crate) const INDEX_EVERY: u64 = 256;

static NEXT_SET: AtomicU64 = AtomicU64::new(0);

/// A directory of temp files, removed on drop.
pub struct TempFileSet {
    dir: PathBuf,
    created: AtomicU64,
    written: AtomicU64,
}

impl TempFileSet {
    /// Create `<parent>/sort.<pid>.<n>`.
    pub fn create(parent: &Path) -> Result<TempFileSet> {
        TempFileSet::create_named(parent, "sort")
    }

    /// Create `<parent>/<kind>.<pid>.<n>` (other operators' spill files: `hashagg`).
    pub fn create_named(parent: &Path, kind: &str) -> Result<TempFileSet> {
        let dir = parent.join(format!("{kind}.{}.{}", std::process::id(), NEXT_SET.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("could not create temporary directory \"{}\"", dir.display()), &e))?;
        Ok(TempFileSet { dir, created: AtomicU64::new(0), written: AtomicU64::new(0) })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Total bytes written to files of this set.
    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// A new file named after its writer.
    pub fn new_file(&self, owner: &str) -> Result<(File, Arc<PathBuf>)> {
        let n = self.created.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{owner}.{n}"));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::io(format!("could not create temporary file \"{}\"", path.display()), &e))?;
        Ok((file, Arc::new(path)))
    }
}

impl Drop for TempFileSet {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One entry of a run's sparse index.
#[derive(Clone, Debug)]
pub(crate) struct IndexEntry {
    pub ordinal: u64,
    pub offset: u64,
    pub tuple: Vec<u8>,
}

/// A sorted run in a temp file.
#[derive(Clone, Debug)]
pub(crate) struct TapeRun {
    pub path: Arc<PathBuf>,
    pub file: Arc<File>,
    pub start: u64,
    pub end: u64,
    pub count: u64,
    pub index: Vec<IndexEntry>,
    /// Some for a run of pairs (16 bytes each) rather than of length-prefixed tuples.
    pub pairs: Option<PairForm>,
    /// Some when those pairs are packed (8 bytes each).
    pub packing: Option<Packing>,
}

/// Writes runs, one after another, into one file.
pub(crate) struct TapeWriter {
    set: Arc<TempFileSet>,
    path: Arc<PathBuf>,
    file: Arc<File>,
    out: BufWriter<FileWriter>,
    position: u64,
    run_start: u64,
    run_count: u64,
    index: Vec<IndexEntry>,
    /// The current run's pair form, once a pair was written to it, and its packing when
    /// its pairs are packed.
    run_pairs: Option<PairForm>,
    run_packing: Option<Packing>,
    /// Pairs are encoded here a slice at a time and written at once.
    encoded: Vec<u8>,
}

/// `Write` over a shared file handle, at explicit offsets (the handle is also read).
struct FileWriter {
    file: Arc<File>,
    offset: u64,
}

impl Write for FileWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write_at(buf, self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const WRITE_BUFFER: usize = 1 << 20;

impl TapeWriter {
    pub fn new(set: Arc<TempFileSet>, owner: &str) -> Result<TapeWriter> {
        let (file, path) = set.new_file(owner)?;
        let file = Arc::new(file);
        let out = BufWriter::with_capacity(WRITE_BUFFER, FileWriter { file: file.clone(), offset: 0 });
        Ok(TapeWriter {
            set,
            path,
            file,
            out,
            position: 0,
            run_start: 0,
            run_count: 0,
            index: Vec::new(),
            run_pairs: None,
            run_packing: None,
            encoded: Vec::new(),
        })
    }

    fn io_error(&self, e: std::io::Error) -> Error {
        Error::io(format!("could not write to file \"{}\"", self.path.display()), &e)
    }

    #[inline]
    pub fn write(&mut self, tuple: &[u8]) -> Result<()> {
        debug_assert!(self.run_pairs.is_none(), "a run holds tuples or pairs, not both");
        if self.run_count % INDEX_EVERY == 0 {
            self.index.push(IndexEntry { ordinal: self.run_count, offset: self.position, tuple: tuple.to_vec() });
        }
        let len = (tuple.len() as u32).to_le_bytes();
        if let Err(e) = self.out.write_all(&len).and_then(|_| self.out.write_all(tuple)) {
            return Err(self.io_error(e));
        }
        self.position += 4 + tuple.len() as u64;
        self.run_count += 1;
        Ok(())
    }

    /// Write `pair` (of `form`) as the next entry of a run of pairs.
    #[inline]
    pub fn write_pair(&mut self, form: &PairForm, pair: SortTuple) -> Result<()> {
        debug_assert!(self.run_count == 0 || self.run_pairs.is_some(), "a run holds tuples or pairs, not both");
        if self.run_count % INDEX_EVERY == 0 {
            let mut tuple = Vec::with_capacity(PairForm::MAX_TUPLE_LEN);
            form.rebuild(pair, &mut tuple);
            self.index.push(IndexEntry { ordinal: self.run_count, offset: self.position, tuple });
        }
        self.run_pairs = Some(*form);
        let mut record = [0u8; PAIR_BYTES];
        record[..8].copy_from_slice(&pair.abbrev.to_le_bytes());
        record[8..].copy_from_slice(&pair.payload().to_le_bytes());
        if let Err(e) = self.out.write_all(&record) {
            return Err(self.io_error(e));
        }
        self.position += PAIR_BYTES as u64;
        self.run_count += 1;
        Ok(())
    }

    /// Write sorted `pairs` (of `form`) as the next entries of a run of pairs, 16 bytes
    /// each.
    pub fn write_pairs(&mut self, form: &PairForm, pairs: &[SortTuple]) -> Result<()> {
        debug_assert!(self.run_count == 0 || (self.run_pairs.is_some() && self.run_packing.is_none()));
        self.run_pairs = Some(*form);
        self.write_records(pairs, PAIR_BYTES, |p| *p, |pair, out| {
            out[..8].copy_from_slice(&pair.abbrev.to_le_bytes());
            out[8..].copy_from_slice(&pair.payload().to_le_bytes());
        })
    }

    /// Write sorted packed `pairs` as the next entries of a run of packed pairs, 8 bytes
    /// each.
    pub fn write_packed(&mut self, packing: &Packing, pairs: &[PackedPair]) -> Result<()> {
        debug_assert!(self.run_count == 0 || self.run_packing.is_some());
        self.run_pairs = Some(packing.form());
        self.run_packing = Some(*packing);
        self.write_records(pairs, PACKED_BYTES, |p| packing.unpack(*p), |pair, out| out.copy_from_slice(&pair.0.to_le_bytes()))
    }

    /// Encode `items` into `width`-byte records in one buffer and write it; every
    /// `INDEX_EVERY`-th goes to the sparse index as its tuple.
    fn write_records<T>(&mut self, items: &[T], width: usize, wide: impl Fn(&T) -> SortTuple, encode: impl Fn(&T, &mut [u8])) -> Result<()> {
        let form = self.run_pairs.expect("set by the caller");
        self.encoded.clear();
        self.encoded.resize(items.len() * width, 0);
        for (item, out) in items.iter().zip(self.encoded.chunks_exact_mut(width)) {
            encode(item, out);
        }
        let mut ordinal = self.run_count.next_multiple_of(INDEX_EVERY);
        while ordinal < self.run_count + items.len() as u64 {
            let mut tuple = Vec::with_capacity(PairForm::MAX_TUPLE_LEN);
            form.rebuild(wide(&items[(ordinal - self.run_count) as usize]), &mut tuple);
            let offset = self.position + (ordinal - self.run_count) * width as u64;
            self.index.push(IndexEntry { ordinal, offset, tuple });
            ordinal += INDEX_EVERY;
        }
        if let Err(e) = self.out.write_all(&self.encoded) {
            return Err(self.io_error(e));
        }
        self.position += self.encoded.len() as u64;
        self.run_count += items.len() as u64;
        Ok(())
    }

    /// Close the current run and start the next one at the end of the file.
    pub fn end_run(&mut self) -> Result<TapeRun> {
        // Readers use their own positioned reads: what is buffered must reach the file.
        self.out.flush().map_err(|e| self.io_error(e))?;
        let run = TapeRun {
            path: self.path.clone(),
            file: self.file.clone(),
            start: self.run_start,
            end: self.position,
            count: self.run_count,
            index: std::mem::take(&mut self.index),
            pairs: self.run_pairs.take(),
            packing: self.run_packing.take(),
        };
        self.set.written.fetch_add(self.position - self.run_start, Ordering::Relaxed);
        self.run_start = self.position;
        self.run_count = 0;
        Ok(run)
    }
}

/// Reads a byte range of a run tuple by tuple through one buffer.
pub(crate) struct RunReader {
    file: Arc<File>,
    path: Arc<PathBuf>,
    /// Next file offset to read into the buffer.
    next_offset: u64,
    end: u64,
    buffer: Vec<u8>,
    /// Valid bytes in `buffer`, and where the next tuple's length word starts.
    filled: usize,
    position: usize,
    /// The current tuple: a range of `buffer` (of `pair_tuple` for a run of pairs).
    current: Option<(usize, usize)>,
    remaining: u64,
    /// The run's pair form, the current pair and its tuple, for a run of pairs; its
    /// packing when they are packed.
    pair_form: Option<PairForm>,
    packing: Option<Packing>,
    pair: SortTuple,
    pair_tuple: [u8; PairForm::MAX_TUPLE_LEN],
}

impl RunReader {
    /// Read `count` tuples starting at byte `start` of the run's file, through a buffer
    /// of `buffer_bytes`.
    pub fn new(run: &TapeRun, start: u64, count: u64, buffer_bytes: usize) -> RunReader {
        RunReader {
            file: run.file.clone(),
            path: run.path.clone(),
            next_offset: start,
            end: run.end,
            buffer: vec![0; buffer_bytes.max(64)],
            filled: 0,
            position: 0,
            current: None,
            remaining: count,
            pair_form: run.pairs,
            packing: run.packing,
            pair: SortTuple::new(0, 0),
            pair_tuple: [0; PairForm::MAX_TUPLE_LEN],
        }
    }

    #[inline]
    pub fn current(&self) -> Option<&[u8]> {
        let (s, e) = self.current?;
        Some(if self.pair_form.is_some() { &self.pair_tuple[s..e] } else { &self.buffer[s..e] })
    }

    /// The pair form of the run read, if it is a run of pairs.
    pub fn pair_form(&self) -> Option<PairForm> {
        self.pair_form
    }

    /// How the run's pairs are packed, if they are.
    pub fn packing(&self) -> Option<Packing> {
        self.packing
    }

    /// The next packed pair's value of a run of packed pairs, not unpacked; `None` once
    /// the range is exhausted. (`current` and `current_pair` are left as they were.)
    #[inline]
    pub fn advance_packed(&mut self) -> Result<Option<u64>> {
        debug_assert!(self.packing.is_some());
        if self.remaining == 0 {
            return Ok(None);
        }
        self.ensure(PACKED_BYTES)?;
        let record = &self.buffer[self.position..self.position + PACKED_BYTES];
        self.position += PACKED_BYTES;
        self.remaining -= 1;
        Ok(Some(u64::from_le_bytes(record.try_into().expect("8 bytes"))))
    }

    /// The current pair of a run of pairs (after `advance` or `advance_pair`).
    #[inline]
    pub fn current_pair(&self) -> SortTuple {
        self.pair
    }

    /// Move to the next pair of a run of pairs without rebuilding its tuple: what a merge
    /// of pairs reads. `None` once the range is exhausted.
    #[inline]
    pub fn advance_pair(&mut self) -> Result<Option<SortTuple>> {
        debug_assert!(self.pair_form.is_some());
        if self.remaining == 0 {
            self.current = None;
            return Ok(None);
        }
        if let Some(packing) = self.packing {
            let Some(value) = self.advance_packed()? else { return Ok(None) };
            self.pair = packing.unpack(PackedPair(value));
            return Ok(Some(self.pair));
        }
        self.ensure(PAIR_BYTES)?;
        let record = &self.buffer[self.position..self.position + PAIR_BYTES];
        let abbrev = u64::from_le_bytes(record[..8].try_into().expect("8 bytes"));
        let payload = u64::from_le_bytes(record[8..].try_into().expect("8 bytes"));
        self.pair = SortTuple::new(abbrev, payload);
        self.position += PAIR_BYTES;
        self.remaining -= 1;
        Ok(Some(self.pair))
    }

    /// Make sure `need` bytes from `position` are in the buffer (refilling it), or fail.
    fn ensure(&mut self, need: usize) -> Result<()> {
        if self.filled - self.position >= need {
            return Ok(());
        }
        self.buffer.copy_within(self.position..self.filled, 0);
        self.filled -= self.position;
        self.position = 0;
        if self.buffer.len() < need {
            self.buffer.resize(need, 0);
        }
        while self.filled < need {
            let want = (self.buffer.len() - self.filled).min((self.end - self.next_offset) as usize);
            if want == 0 {
                return Err(Error::new(
                    weft_common::SqlState::DATA_CORRUPTED,
                    format!("unexpected end of temporary file \"{}\"", self.path.display()),
                ));
            }
            let n = self
                .file
                .read_at(&mut self.buffer[self.filled..self.filled + want], self.next_offset)
                .map_err(|e| Error::io(format!("could not read from file \"{}\"", self.path.display()), &e))?;
            if n == 0 {
                return Err(Error::new(
                    weft_common::SqlState::DATA_CORRUPTED,
                    format!("unexpected end of temporary file \"{}\"", self.path.display()),
                ));
            }
            self.filled += n;
            self.next_offset += n as u64;
        }
        Ok(())
    }

    /// Move to the next tuple; `false` once the range is exhausted.
    pub fn advance(&mut self) -> Result<bool> {
        if let Some(form) = self.pair_form {
            let Some(pair) = self.advance_pair()? else { return Ok(false) };
            let len = form.tuple_len();
            form.write_tuple(pair, &mut self.pair_tuple[..len]);
            self.current = Some((0, len));
            return Ok(true);
        }
        if self.remaining == 0 {
            self.current = None;
            return Ok(false);
        }
        self.ensure(4)?;
        let len = u32::from_le_bytes(self.buffer[self.position..self.position + 4].try_into().expect("4 bytes")) as usize;
        self.ensure(4 + len)?;
        let start = self.position + 4;
        self.current = Some((start, start + len));
        self.position = start + len;
        self.remaining -= 1;
        Ok(true)
    }

    /// File offset of the tuple after the current one.
    pub fn offset_after_current(&self) -> u64 {
        self.next_offset - (self.filled - self.position) as u64
    }
}
