//! Writes of new pages off the caller's thread, with direct I/O (`O_DIRECT`).
//!
//! A bulk load (CREATE TABLE AS, a sorted INSERT, an index build) writes hundreds of
//! megabytes of pages nobody has read yet. Through the page cache each 4 kB page costs
//! the kernel a fresh page and a copy on the writing participant's thread; on these
//! virtual machines a page the kernel has not handed out for a while also costs a
//! hypervisor fault, so a cold buffered write runs at about 1 GB/s of a participant's
//! CPU. A direct write costs the CPU one copy into a warm aligned buffer and leaves the
//! rest to the device, and a writer thread waits for the device instead of a participant.
//!
//! Invariants:
//! - A queued batch counts as pending for its file until it is written or has failed;
//!   [`BulkWriter::wait`] returns only when a relation has none, with the first
//!   error of its batches (which it forgets: the caller reports it once).
//! - Pages are never in the buffer pool (they are new blocks, reserved by their writer),
//!   so no buffer can disagree with the file; readers of the relation wait first.
//! - Where the file system refuses `O_DIRECT` (tmpfs) the writer writes through the page
//!   cache, still off the caller's thread.
//! - At most [`QUEUE_BATCHES`] batches wait in the queue: a producer faster than the
//!   device blocks instead of holding the whole relation in memory.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;

use crossbeam::channel::{bounded, Receiver, Sender};
use weft_common::{Error, Result};

use crate::sync::{Arc, AtomicBool, AtomicUsize, Condvar, Mutex, Ordering};
use crate::{Page, PAGE_SIZE};

/// Batches that may wait for a writer (each at most [`BATCH_PAGES_MAX`] pages).
pub const QUEUE_BATCHES: usize = 16;

/// Most pages written with one system call.
pub const BATCH_PAGES_MAX: usize = 128;

/// Writer threads: two keep the device busy while one thread copies its next batch.
const WRITER_THREADS: usize = 2;

/// Direct I/O wants the buffer, offset and length aligned to the device's block size;
/// a page boundary covers every device.
const DIRECT_ALIGN: usize = 4096;

/// Which pending batches belong to whom: files are grouped per relation so that
/// a relation's readers and its commit wait for all of its forks.
pub type RelKey = (u32, u32);

/// One batch of consecutive new pages.
struct Batch {
    rel: RelKey,
    path: PathBuf,
    /// The cached buffered handle, for file systems without direct I/O.
    file: Arc<File>,
    offset: u64,
    pages: Vec<Box<Page>>,
}

#[derive(Default)]
struct RelState {
    pending: usize,
    error: Option<Error>,
}

struct Shared {
    rels: Mutex<HashMap<RelKey, RelState>>,
    settled: Condvar,
    /// Batches queued or being written, all relations: readers skip the lock when zero.
    outstanding: AtomicUsize,
    /// Set once a file system refused `O_DIRECT`: later batches go through the page cache.
    no_direct: AtomicBool,
}

/// The queue and its writer threads (started at the first batch).
pub struct BulkWriter {
    shared: Arc<Shared>,
    queue: Mutex<Option<Sender<Batch>>>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl BulkWriter {
    pub fn new() -> BulkWriter {
        let shared = Shared {
            rels: Mutex::new(HashMap::new()),
            settled: Condvar::new(),
            outstanding: AtomicUsize::new(0),
            no_direct: AtomicBool::new(false),
        };
        BulkWriter { shared: Arc::new(shared), queue: Mutex::new(None), threads: Mutex::new(Vec::new()) }
    }

    /// Queue `pages` for `offset..` of the file at `path` (whose buffered handle is
    /// `file`). Fails at once if an earlier batch of the relation failed.
    pub fn submit(&self, rel: RelKey, path: PathBuf, file: Arc<File>, offset: u64, pages: Vec<Box<Page>>) -> Result<()> {
        if pages.len() > BATCH_PAGES_MAX {
            return Err(Error::internal(format!("a background write of {} pages (at most {BATCH_PAGES_MAX})", pages.len())));
        }
        {
            let mut rels = self.shared.rels.lock();
            let state = rels.entry(rel).or_default();
            if let Some(error) = state.error.take() {
                return Err(error);
            }
            state.pending += 1;
        }
        self.shared.outstanding.fetch_add(1, Ordering::AcqRel);
        let sender = self.sender();
        let batch = Batch { rel, path, file, offset, pages };
        if let Err(unsent) = sender.send(batch) {
            // Only if every writer thread is gone (they end with the queue).
            let batch = unsent.into_inner();
            self.shared.finish(batch.rel, Err(Error::internal("the background writer has stopped")));
            return self.wait(rel);
        }
        Ok(())
    }

    fn sender(&self) -> Sender<Batch> {
        let mut queue = self.queue.lock();
        queue
            .get_or_insert_with(|| {
                let (sender, receiver) = bounded(QUEUE_BATCHES);
                for n in 0..WRITER_THREADS {
                    let (shared, receiver) = (self.shared.clone(), receiver.clone());
                    let thread = std::thread::Builder::new()
                        .name(format!("weft-bulk-writer-{n}"))
                        .spawn(move || writer_loop(&shared, &receiver))
                        .expect("could not start a writer thread");
                    self.threads.lock().push(thread);
                }
                sender
            })
            .clone()
    }

    /// Waits until no batch of `rel` is pending; the first error among them, once.
    pub fn wait(&self, rel: RelKey) -> Result<()> {
        if self.shared.outstanding.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        let mut rels = self.shared.rels.lock();
        loop {
            match rels.get_mut(&rel) {
                None => return Ok(()),
                Some(state) if state.pending == 0 => {
                    let error = state.error.take();
                    rels.remove(&rel);
                    return error.map_or(Ok(()), Err);
                }
                Some(_) => self.shared.settled.wait(&mut rels),
            }
        }
    }
}

impl Default for BulkWriter {
    fn default() -> BulkWriter {
        BulkWriter::new()
    }
}

impl Drop for BulkWriter {
    /// Closing the queue ends the writers once they have written what it holds; they
    /// are waited for, so nothing queued is lost when the engine shuts down.
    fn drop(&mut self) {
        self.queue.lock().take();
        for thread in self.threads.lock().drain(..) {
            let _ = thread.join();
        }
    }
}

impl Shared {
    fn finish(&self, rel: RelKey, outcome: Result<()>) {
        let mut rels = self.rels.lock();
        let state = rels.entry(rel).or_default();
        state.pending -= 1;
        if let Err(error) = outcome {
            state.error.get_or_insert(error);
        }
        self.outstanding.fetch_sub(1, Ordering::AcqRel);
        self.settled.notify_all();
    }
}

fn writer_loop(shared: &Shared, receiver: &Receiver<Batch>) {
    let mut buffer = AlignedBuffer::new(BATCH_PAGES_MAX * PAGE_SIZE);
    while let Ok(batch) = receiver.recv() {
        let outcome = write_batch(shared, &batch, &mut buffer).map_err(|e| {
            let last = batch.offset / PAGE_SIZE as u64 + batch.pages.len() as u64 - 1;
            let first = batch.offset / PAGE_SIZE as u64;
            Error::io(format!("could not write blocks {first}..{last} in file \"{}\"", batch.path.display()), &e)
        });
        let rel = batch.rel;
        // The pages are freed (kept for reuse) before the batch counts as written.
        crate::page::recycle_pages(batch.pages);
        shared.finish(rel, outcome);
    }
}

fn write_batch(shared: &Shared, batch: &Batch, buffer: &mut AlignedBuffer) -> std::io::Result<()> {
    if !shared.no_direct.load(Ordering::Relaxed) {
        match write_direct(batch, buffer) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                // tmpfs and some others: no direct I/O on this file system.
                shared.no_direct.store(true, Ordering::Relaxed);
            }
            outcome => return outcome,
        }
    }
    crate::smgr::pwritev_all(&batch.file, &batch.pages, batch.offset)
}

fn write_direct(batch: &Batch, buffer: &mut AlignedBuffer) -> std::io::Result<()> {
    let file = OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(&batch.path)?;
    let bytes = buffer.fill(&batch.pages);
    file.write_all_at(bytes, batch.offset)
}

/// A buffer whose start is aligned for direct I/O, carved out of a larger vector (no
/// unsafe allocation needed).
struct AlignedBuffer {
    storage: Vec<u8>,
    start: usize,
}

impl AlignedBuffer {
    fn new(len: usize) -> AlignedBuffer {
        let storage = vec![0u8; len + DIRECT_ALIGN];
        let start = storage.as_ptr().align_offset(DIRECT_ALIGN);
        AlignedBuffer { storage, start }
    }

    /// Copies `pages` to the start of the buffer; the bytes to write.
    fn fill(&mut self, pages: &[Box<Page>]) -> &[u8] {
        let len = pages.len() * PAGE_SIZE;
        let region = &mut self.storage[self.start..self.start + len];
        for (chunk, page) in region.chunks_exact_mut(PAGE_SIZE).zip(pages) {
            chunk.copy_from_slice(&page[..]);
        }
        region
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_of(byte: u8) -> Box<Page> {
        Box::new([byte; PAGE_SIZE])
    }

    fn open(path: &std::path::Path) -> Arc<File> {
        Arc::new(OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).unwrap())
    }

    /// Batches queued out of order from several threads land where they belong, on a disk
    /// file system (direct I/O) and on tmpfs (which refuses it) alike.
    #[test]
    fn batches_from_many_threads_land_in_their_blocks() {
        let mut dirs = vec![tempfile::tempdir().unwrap()];
        if std::path::Path::new("/dev/shm").is_dir() {
            dirs.push(tempfile::tempdir_in("/dev/shm").unwrap());
        }
        for dir in &dirs {
            let writer = BulkWriter::new();
            let paths: Vec<PathBuf> = (0..3).map(|r| dir.path().join(format!("rel{r}"))).collect();
            let files: Vec<Arc<File>> = paths.iter().map(|p| open(p)).collect();
            std::thread::scope(|scope| {
                for t in 0..6u8 {
                    let (writer, paths, files) = (&writer, &paths, &files);
                    scope.spawn(move || {
                        let rel = (t % 3) as usize;
                        // Thread t writes blocks 10*(t/3) .. +7 of its relation, last batch first.
                        for part in (0..2u64).rev() {
                            let first = 10 * (t as u64 / 3) + 4 * part;
                            let pages: Vec<Box<Page>> = (0..4).map(|i| page_of((first + i) as u8 + 100 * rel as u8)).collect();
                            let pages = if part == 1 { pages[..3].to_vec() } else { pages };
                            writer.submit((1, rel as u32), paths[rel].clone(), files[rel].clone(), first * PAGE_SIZE as u64, pages).unwrap();
                        }
                    });
                }
            });
            for (rel, file) in files.iter().enumerate() {
                writer.wait((1, rel as u32)).unwrap();
                for block in (0..7).chain(10..17) {
                    let mut buf = vec![0u8; PAGE_SIZE];
                    file.read_exact_at(&mut buf, block * PAGE_SIZE as u64).unwrap();
                    let expected = block as u8 + 100 * rel as u8;
                    assert!(buf.iter().all(|&b| b == expected), "block {block} of relation {rel} in {:?}", dir.path());
                }
            }
        }
    }

    /// A batch that cannot be written fails the relation's next wait (once) and its next
    /// submit, and leaves other relations alone.
    #[test]
    fn a_failed_batch_is_reported_once_to_its_relation() {
        let dir = tempfile::tempdir().unwrap();
        let writer = BulkWriter::new();
        let good = dir.path().join("good");
        let gone = dir.path().join("gone");
        let (good_file, gone_file) = (open(&good), open(&gone));
        std::fs::remove_file(&gone).unwrap();
        writer.submit((1, 1), gone.clone(), gone_file.clone(), 0, vec![page_of(1)]).unwrap();
        writer.submit((1, 2), good.clone(), good_file.clone(), 0, vec![page_of(2)]).unwrap();
        let error = writer.wait((1, 1)).unwrap_err();
        assert!(error.message.contains("could not write blocks 0..0"), "{}", error.message);
        writer.wait((1, 1)).unwrap();
        writer.wait((1, 2)).unwrap();
        // The error is also what a producer still submitting would get.
        writer.submit((1, 1), gone.clone(), gone_file.clone(), 0, vec![page_of(1)]).unwrap();
        while writer.shared.outstanding.load(Ordering::Acquire) != 0 {
            std::thread::yield_now();
        }
        assert!(writer.submit((1, 1), gone, gone_file, PAGE_SIZE as u64, vec![page_of(1)]).is_err());
        writer.wait((1, 1)).unwrap();
    }

    /// Dropping the writer writes what is queued before it returns.
    #[test]
    fn drop_writes_everything_queued() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rel");
        let file = open(&path);
        {
            let writer = BulkWriter::new();
            for block in 0..40u64 {
                writer.submit((1, 1), path.clone(), file.clone(), block * PAGE_SIZE as u64, vec![page_of(block as u8)]).unwrap();
            }
        }
        assert_eq!(file.metadata().unwrap().len(), 40 * PAGE_SIZE as u64);
        let mut buf = vec![0u8; PAGE_SIZE];
        file.read_exact_at(&mut buf, 39 * PAGE_SIZE as u64).unwrap();
        assert!(buf.iter().all(|&b| b == 39));
    }
}
