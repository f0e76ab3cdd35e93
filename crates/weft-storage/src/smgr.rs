//! The storage manager: one file per relation fork, read and written a block
//! at a time (PostgreSQL's `smgr`/`md.c`, without 1 GB segments).
//!
//! Paths are `<data_dir>/base/<db_oid>/<rel_number>` for the main fork and
//! `<rel_number>_fsm`, `_vm`, `_init` for the others. Only the default
//! tablespace exists, so `spc_oid` is not part of a path.
//!
//! Open files are cached (at most [`OPEN_FILES_MAX`]) as `Arc<File>` and used
//! with positioned I/O (`pread`/`pwrite` through `FileExt`), which needs no
//! seek position, so any number of threads may use one file at once. Evicting
//! a handle from the cache never invalidates one a thread is still using.
//!
//! Blocks are checksummed by the caller before `write_block` and verified by
//! `read_block`. `read_blocks_into` reads a run of consecutive blocks with one
//! `preadv` straight into the buffer pool's frames (its batched reads, which
//! then verify each page with `verify_block`). A block past the end of the file, or in a hole left by
//! writing past the end, reads as a new (all-zero) page.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use weft_common::{Error, Result, SqlState};

use crate::bulk_write::{BulkWriter, RelKey};
use crate::sync::{Arc, RwLock};
use crate::{page, BlockNumber, ForkNumber, Page, RelFileLocator, DEFAULT_TABLESPACE_OID, PAGE_SIZE};

/// Most file handles kept open at once.
pub const OPEN_FILES_MAX: usize = 1024;

/// Key of the handle cache: what the path depends on.
type FileKey = (u32, u32, ForkNumber);

fn file_key(rel: RelFileLocator, fork: ForkNumber) -> FileKey {
    (rel.db_oid, rel.rel_number, fork)
}

/// Files of relation forks under one data directory.
pub struct StorageManager {
    base_dir: PathBuf,
    files: RwLock<HashMap<FileKey, Arc<File>>>,
    /// PostgreSQL's `fsync` setting: off makes `sync` a no-op (a crash of the machine,
    /// not just of the process, can then lose committed data).
    fsync: std::sync::atomic::AtomicBool,
    /// New pages written off the callers' threads; every other use of a relation's
    /// files waits for its pending batches first.
    bulk: BulkWriter,
}

impl std::fmt::Debug for StorageManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageManager").field("base_dir", &self.base_dir).finish()
    }
}

/// An error on a file, with PostgreSQL's SQLSTATE for a missing file.
fn file_error(context: String, err: &std::io::Error) -> Error {
    let mut error = Error::io(context, err);
    if err.kind() == ErrorKind::NotFound {
        error.sqlstate = SqlState::UNDEFINED_FILE;
    }
    error
}

fn rel_key(rel: RelFileLocator) -> RelKey {
    (rel.db_oid, rel.rel_number)
}

fn block_offset(block: BlockNumber) -> u64 {
    block as u64 * PAGE_SIZE as u64
}

impl StorageManager {
    /// Opens (creating `base/` if needed) the data directory.
    pub fn open(data_dir: &Path) -> Result<Arc<StorageManager>> {
        let base_dir = data_dir.join("base");
        std::fs::create_dir_all(&base_dir)
            .map_err(|e| Error::io(format!("could not create directory \"{}\"", base_dir.display()), &e))?;
        Ok(Arc::new(StorageManager {
            base_dir,
            files: RwLock::new(HashMap::new()),
            fsync: std::sync::atomic::AtomicBool::new(true),
            bulk: BulkWriter::new(),
        }))
    }

    /// `fsync = off`: written pages reach the kernel but are not forced to disk.
    pub fn set_fsync(&self, enabled: bool) {
        self.fsync.store(enabled, std::sync::atomic::Ordering::Relaxed);
    }

    /// The `fsync` setting, for other files of the data directory (the catalog).
    pub fn fsync_enabled(&self) -> bool {
        self.fsync.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn file_path(&self, rel: RelFileLocator, fork: ForkNumber) -> PathBuf {
        self.base_dir.join(rel.db_oid.to_string()).join(format!("{}{}", rel.rel_number, fork.file_suffix()))
    }

    /// Makes room for `key` in the handle cache by closing some other handle.
    fn make_room(files: &mut HashMap<FileKey, Arc<File>>, key: FileKey) {
        if files.len() >= OPEN_FILES_MAX && !files.contains_key(&key) {
            if let Some(victim) = files.keys().next().copied() {
                files.remove(&victim);
            }
        }
    }

    /// The open file of a fork; an error if it does not exist.
    fn handle(&self, rel: RelFileLocator, fork: ForkNumber) -> Result<Arc<File>> {
        let key = file_key(rel, fork);
        if let Some(file) = self.files.read().get(&key) {
            return Ok(file.clone());
        }
        let path = self.file_path(rel, fork);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| file_error(format!("could not open file \"{}\"", path.display()), &e))?;
        // Insert-if-absent: a handle cached meanwhile (by `create` after an
        // `unlink`) is newer than ours, which may be of an unlinked file.
        let mut files = self.files.write();
        Self::make_room(&mut files, key);
        Ok(files.entry(key).or_insert_with(|| Arc::new(file)).clone())
    }

    /// Creates the file of a fork; an error if it already exists. The new
    /// directory entry is fsynced, so the file survives a crash once `sync`ed.
    pub fn create(&self, rel: RelFileLocator, fork: ForkNumber) -> Result<()> {
        let path = self.file_path(rel, fork);
        let dir = path.parent().unwrap_or(&self.base_dir).to_path_buf();
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("could not create directory \"{}\"", dir.display()), &e))?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::io(format!("could not create file \"{}\"", path.display()), &e))?;
        {
            let key = file_key(rel, fork);
            let mut files = self.files.write();
            Self::make_room(&mut files, key);
            files.insert(key, Arc::new(file));
        }
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(format!("could not fsync directory \"{}\"", dir.display()), &e))
    }

    pub fn exists(&self, rel: RelFileLocator, fork: ForkNumber) -> bool {
        self.file_path(rel, fork).exists()
    }

    /// Removes the files of every fork of `rel`; missing files are fine.
    pub fn unlink(&self, rel: RelFileLocator) -> Result<()> {
        // The relation is going away: a failed background write of it no longer matters.
        let _ = self.bulk.wait(rel_key(rel));
        for fork in ForkNumber::ALL {
            self.files.write().remove(&file_key(rel, fork));
            let path = self.file_path(rel, fork);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(format!("could not remove file \"{}\"", path.display()), &e)),
            }
            // A thread that opened the file before it was removed may have cached it.
            self.files.write().remove(&file_key(rel, fork));
        }
        Ok(())
    }

    /// Number of blocks, from the file size (a partial last block is not counted).
    pub fn nblocks(&self, rel: RelFileLocator, fork: ForkNumber) -> Result<BlockNumber> {
        self.bulk.wait(rel_key(rel))?;
        let file = self.handle(rel, fork)?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(format!("could not stat file \"{}\"", self.file_path(rel, fork).display()), &e))?
            .len();
        let blocks = len / PAGE_SIZE as u64;
        BlockNumber::try_from(blocks).map_err(|_| {
            Error::new(
                SqlState::DATA_CORRUPTED,
                format!("file \"{}\" is too large", self.file_path(rel, fork).display()),
            )
        })
    }

    /// Reads one block and verifies its checksum. A block past the end of the
    /// file reads as zeros (a new page).
    pub fn read_block(&self, rel: RelFileLocator, fork: ForkNumber, block: BlockNumber, buf: &mut Page) -> Result<()> {
        self.bulk.wait(rel_key(rel))?;
        let file = self.handle(rel, fork)?;
        read_full_at(&file, buf, block_offset(block)).map_err(|e| {
            let path = self.file_path(rel, fork);
            file_error(format!("could not read block {block} in file \"{}\"", path.display()), &e)
        })?;
        self.verify_block(rel, fork, block, buf)
    }

    /// Reads the consecutive blocks `first ..` straight into `pages` (one frame
    /// each) with one vectored positioned read (`preadv`; more only if the kernel
    /// returns less without reaching the end of the file), so a batch costs the
    /// kernel's copy and no second one. Pages past the end of the file read as
    /// zeros. Checksums are *not* verified: call [`verify_block`](Self::verify_block)
    /// on each page.
    pub fn read_blocks_into(&self, rel: RelFileLocator, fork: ForkNumber, first: BlockNumber, pages: &mut [&mut Page]) -> Result<()> {
        self.bulk.wait(rel_key(rel))?;
        let file = self.handle(rel, fork)?;
        preadv_full(&file, pages, block_offset(first)).map_err(|e| {
            let path = self.file_path(rel, fork);
            let last = first as u64 + pages.len() as u64 - 1;
            file_error(format!("could not read blocks {first}..{last} in file \"{}\"", path.display()), &e)
        })
    }

    /// `Ok` if `page`, read from `block`, has a valid checksum (or is new);
    /// otherwise `XX001 invalid page in block N of relation PATH`.
    pub fn verify_block(&self, rel: RelFileLocator, fork: ForkNumber, block: BlockNumber, page: &Page) -> Result<()> {
        if page::verify_checksum(page, block) {
            return Ok(());
        }
        let path = self.file_path(rel, fork);
        Err(Error::new(SqlState::DATA_CORRUPTED, format!("invalid page in block {block} of relation {}", path.display())))
    }

    /// Writes one block whose checksum the caller has set; may write past the
    /// end of the file (the gap reads as new pages).
    pub fn write_block(&self, rel: RelFileLocator, fork: ForkNumber, block: BlockNumber, buf: &Page) -> Result<()> {
        let file = self.handle(rel, fork)?;
        file.write_all_at(buf, block_offset(block)).map_err(|e| {
            let path = self.file_path(rel, fork);
            file_error(format!("could not write block {block} in file \"{}\"", path.display()), &e)
        })
    }

    /// Writes consecutive blocks from `first` on, whose checksums the caller has set, with
    /// vectored writes: a bulk writer's pages cost one system call per batch instead of
    /// one per page (and, when several participants fill one file, one take of the
    /// file's write lock per batch, which they would otherwise spin on).
    pub fn write_blocks(&self, rel: RelFileLocator, fork: ForkNumber, first: BlockNumber, pages: &[Box<Page>]) -> Result<()> {
        if pages.is_empty() {
            return Ok(());
        }
        let file = self.handle(rel, fork)?;
        pwritev_all(&file, pages, block_offset(first)).map_err(|e| {
            let path = self.file_path(rel, fork);
            let last = first as u64 + pages.len() as u64 - 1;
            file_error(format!("could not write blocks {first}..{last} in file \"{}\"", path.display()), &e)
        })
    }

    /// Queues consecutive blocks from `first` on (at most
    /// [`BATCH_PAGES_MAX`](crate::bulk_write::BATCH_PAGES_MAX)), whose checksums the
    /// caller has set, for a writer thread ([`crate::bulk_write`]): new blocks that
    /// nobody reads before [`wait_bulk_writes`](Self::wait_bulk_writes) (or
    /// any read, `sync` or `nblocks` of the relation, which wait too).
    pub fn write_blocks_in_background(&self, rel: RelFileLocator, fork: ForkNumber, first: BlockNumber, pages: Vec<Box<Page>>) -> Result<()> {
        if pages.is_empty() {
            return Ok(());
        }
        let file = self.handle(rel, fork)?;
        self.bulk.submit(rel_key(rel), self.file_path(rel, fork), file, block_offset(first), pages)
    }

    /// Waits until every queued write of `rel` is done; the first error among them.
    pub fn wait_bulk_writes(&self, rel: RelFileLocator) -> Result<()> {
        self.bulk.wait(rel_key(rel))
    }

    /// Cuts (or extends with zeros) the fork to `nblocks` blocks.
    pub fn truncate(&self, rel: RelFileLocator, fork: ForkNumber, nblocks: BlockNumber) -> Result<()> {
        self.bulk.wait(rel_key(rel))?;
        let file = self.handle(rel, fork)?;
        file.set_len(block_offset(nblocks)).map_err(|e| {
            let path = self.file_path(rel, fork);
            file_error(format!("could not truncate file \"{}\" to {nblocks} blocks", path.display()), &e)
        })
    }

    /// Waits for the background writes of `rel`, then fsyncs every existing fork of it.
    pub fn sync(&self, rel: RelFileLocator) -> Result<()> {
        self.bulk.wait(rel_key(rel))?;
        if !self.fsync.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        for fork in ForkNumber::ALL {
            if !self.exists(rel, fork) {
                continue;
            }
            let file = match self.handle(rel, fork) {
                Ok(file) => file,
                Err(e) if e.sqlstate == SqlState::UNDEFINED_FILE => continue,
                Err(e) => return Err(e),
            };
            file.sync_all().map_err(|e| {
                let path = self.file_path(rel, fork);
                file_error(format!("could not fsync file \"{}\"", path.display()), &e)
            })?;
        }
        Ok(())
    }

    /// Every relation file under `base/`, sorted; names that are not relation
    /// files are skipped. Found files carry `spc_oid = DEFAULT_TABLESPACE_OID`.
    pub fn list_relation_files(&self) -> Result<Vec<(RelFileLocator, ForkNumber, PathBuf)>> {
        let read_dir = |dir: &Path| {
            std::fs::read_dir(dir).map_err(|e| Error::io(format!("could not open directory \"{}\"", dir.display()), &e))
        };
        let mut found = Vec::new();
        for db_entry in read_dir(&self.base_dir)? {
            let db_entry = db_entry.map_err(|e| Error::io(format!("could not read directory \"{}\"", self.base_dir.display()), &e))?;
            let Some(db_oid) = db_entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            let db_dir = db_entry.path();
            if !db_dir.is_dir() {
                continue;
            }
            for entry in read_dir(&db_dir)? {
                let entry = entry.map_err(|e| Error::io(format!("could not read directory \"{}\"", db_dir.display()), &e))?;
                let Some((rel_number, fork)) = entry.file_name().to_str().and_then(parse_file_name) else { continue };
                let rel = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid, rel_number };
                found.push((rel, fork, entry.path()));
            }
        }
        found.sort();
        Ok(found)
    }
}

/// Fills `buf` from `offset`, retrying short reads; zeros past the end of the file.
fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf[done..].fill(0);
    Ok(())
}

/// Fills `pages` from `offset` on with vectored reads; past the end of the file
/// the rest is zeros.
fn preadv_full(file: &File, pages: &mut [&mut Page], offset: u64) -> std::io::Result<()> {
    // Progress is counted in bytes: a short read may stop inside a page.
    let total = pages.len() * PAGE_SIZE;
    let mut done = 0;
    while done < total {
        let (first_page, within) = (done / PAGE_SIZE, done % PAGE_SIZE);
        let mut slices: Vec<std::io::IoSliceMut<'_>> = Vec::with_capacity(pages.len() - first_page);
        let (head, tail) = pages[first_page..].split_first_mut().expect("done < total");
        slices.push(std::io::IoSliceMut::new(&mut head[within..]));
        slices.extend(tail.iter_mut().map(|page| std::io::IoSliceMut::new(&mut page[..])));
        match rustix::io::preadv(file, &mut slices, offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    for (index, page) in pages.iter_mut().enumerate() {
        let start = (index * PAGE_SIZE).max(done);
        if start < (index + 1) * PAGE_SIZE {
            page[start - index * PAGE_SIZE..].fill(0);
        }
    }
    Ok(())
}

/// Writes all of `pages` at `offset` with vectored writes, resuming after short ones.
pub(crate) fn pwritev_all(file: &File, pages: &[Box<Page>], offset: u64) -> std::io::Result<()> {
    let total = pages.len() * PAGE_SIZE;
    let mut done = 0;
    while done < total {
        let (first_page, within) = (done / PAGE_SIZE, done % PAGE_SIZE);
        let mut slices: Vec<std::io::IoSlice<'_>> = Vec::with_capacity(pages.len() - first_page);
        slices.push(std::io::IoSlice::new(&pages[first_page][within..]));
        slices.extend(pages[first_page + 1..].iter().map(|page| std::io::IoSlice::new(&page[..])));
        match rustix::io::pwritev(file, &slices, offset + done as u64) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `"16384"` → (16384, Main), `"16384_vm"` → (16384, VisibilityMap).
fn parse_file_name(name: &str) -> Option<(u32, ForkNumber)> {
    let (number, fork) = match name.split_once('_') {
        None => (name, ForkNumber::Main),
        Some((number, suffix)) => {
            let fork = ForkNumber::ALL.into_iter().find(|f| f.file_suffix().get(1..) == Some(suffix))?;
            (number, fork)
        }
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((number.parse().ok()?, fork))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_parse() {
        assert_eq!(parse_file_name("16384"), Some((16384, ForkNumber::Main)));
        assert_eq!(parse_file_name("16384_fsm"), Some((16384, ForkNumber::Fsm)));
        assert_eq!(parse_file_name("16384_vm"), Some((16384, ForkNumber::VisibilityMap)));
        assert_eq!(parse_file_name("16384_init"), Some((16384, ForkNumber::Init)));
        assert_eq!(parse_file_name("16384_x"), None);
        assert_eq!(parse_file_name("_vm"), None);
        assert_eq!(parse_file_name("+1"), None);
        assert_eq!(parse_file_name("16384.1"), None);
    }
}
