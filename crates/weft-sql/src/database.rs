//! An open data directory: storage, buffer pool, catalog, worker pool, and the commit
//! protocol every writing statement goes through.
//!
//! ```text
//! <data_dir>/catalog.{0,1}    the catalog, two slots written alternately (the commit point)
//! <data_dir>/base/<db>/<rel>  one file per relation fork
//! <data_dir>/weft.conf        start-up settings (optional)
//! <data_dir>/tmp/             temp files of running operations
//! ```
//!
//! Writing statements are serialized by `write_lock`. Each runs inside [`Database::write`]:
//! it gets the next xid and a private copy of the catalog; on success the relations it
//! touched are flushed and fsynced, then the new catalog (with `committed_max = xid`) is
//! published; on failure the xid is recorded as aborted and the files it created are
//! removed. Readers take a [`Snapshot`] and never block writers.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use weft_access::catalog::{locator, Catalog};
use weft_access::{Snapshot, Xid};
use weft_common::parallel::WorkerPool;
use weft_common::{Error, Result, SqlState};
use weft_exec::expr::Sequences;
use weft_storage::{BufferMappingKind, BufferPool, BufferPoolConfig, ForkNumber, RelFileLocator, StorageManager};

use crate::settings::{parse_conf, Settings};

pub const CONF_FILE_NAME: &str = "weft.conf";
/// Held (flock) for as long as a process has the data directory open.
pub const LOCK_FILE_NAME: &str = "weft.lock";

pub struct Database {
    pub(crate) data_dir: PathBuf,
    pub(crate) pool: Arc<BufferPool>,
    pub(crate) workers: WorkerPool,
    catalog: RwLock<Arc<Catalog>>,
    write_lock: Mutex<()>,
    pub(crate) startup_settings: Settings,
    /// The sequences' current values, which move outside transactions; every commit
    /// records them in the catalog it publishes.
    pub(crate) sequences: Arc<Sequences>,
    /// Removes the files of dropped relations after their statements commit. Declared
    /// before the lock file: dropping it waits for the removals, so they are done when
    /// the directory's lock is released.
    unlinker: Unlinker,
    /// The open lock file; its lock is released when the database is dropped or the
    /// process dies.
    _lock: fs::File,
}

/// Removes the files of dropped and truncated relations off the statement's path, as
/// PostgreSQL leaves the unlink to its checkpointer: four `unlink`s per relation (one per
/// fork) and the freeing of the file's blocks were most of a small DROP's time. Safe
/// because the committed catalog no longer names the files and relation numbers are
/// never reused; a crash before the removal leaves orphans, which start-up removes.
struct Unlinker {
    sender: Option<std::sync::mpsc::Sender<Vec<RelFileLocator>>>,
    thread: Option<std::thread::JoinHandle<()>>,
    smgr: Arc<StorageManager>,
}

impl Unlinker {
    fn new(smgr: Arc<StorageManager>) -> Unlinker {
        let (sender, receiver) = std::sync::mpsc::channel::<Vec<RelFileLocator>>();
        let background = smgr.clone();
        let thread = std::thread::Builder::new()
            .name("weft-unlinker".into())
            .spawn(move || {
                for rels in receiver {
                    for rel in rels {
                        // If this fails the file stays an orphan until the next start-up.
                        let _ = background.unlink(rel);
                    }
                }
            })
            .ok();
        // Without a thread, unlink in the statement (`submit` sees no sender).
        let sender = thread.is_some().then_some(sender);
        Unlinker { sender, thread, smgr }
    }

    fn submit(&self, rels: Vec<RelFileLocator>) {
        if rels.is_empty() {
            return;
        }
        let rels = match &self.sender {
            Some(sender) => match sender.send(rels) {
                Ok(()) => return,
                Err(std::sync::mpsc::SendError(rels)) => rels,
            },
            None => rels,
        };
        for rel in rels {
            let _ = self.smgr.unlink(rel);
        }
    }
}

impl Drop for Unlinker {
    fn drop(&mut self) {
        self.sender.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The state of one writing statement, handed to its body by [`Database::write`].
pub struct WriteTxn {
    pub xid: Xid,
    /// The catalog as it will be published if the statement succeeds.
    pub catalog: Catalog,
    /// Relations whose pages this statement dirtied: flushed before commit.
    touched: BTreeSet<RelFileLocator>,
    /// Relations created by this statement: removed if it fails.
    created: BTreeSet<RelFileLocator>,
    /// Relations no longer named after commit: removed once it is published.
    dropped: BTreeSet<RelFileLocator>,
}

impl WriteTxn {
    pub fn touch(&mut self, rel: RelFileLocator) {
        self.touched.insert(rel);
    }

    /// Allocate a relation file for a new table or a truncation.
    pub fn create_relation(&mut self, db: &Database) -> Result<RelFileLocator> {
        let rel = locator(self.catalog.allocate_oid());
        db.pool.smgr().create(rel, ForkNumber::Main)?;
        self.created.insert(rel);
        self.touched.insert(rel);
        Ok(rel)
    }

    pub fn drop_relation(&mut self, rel: RelFileLocator) {
        self.dropped.insert(rel);
    }
}

impl Database {
    pub fn open(dir: &Path, startup_settings: &[(String, String)]) -> Result<Arc<Database>> {
        fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("could not create data directory \"{}\"", dir.display()), &e))?;
        let lock = lock_data_dir(dir)?;
        let mut pairs = Vec::new();
        let conf_path = dir.join(CONF_FILE_NAME);
        if let Ok(text) = fs::read_to_string(&conf_path) {
            pairs.extend(parse_conf(&text)?);
        }
        pairs.extend(startup_settings.iter().cloned());
        let settings = Settings::startup(&pairs)?;

        let tmp = dir.join("tmp");
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp).map_err(|e| Error::io(format!("could not create \"{}\"", tmp.display()), &e))?;

        let smgr = StorageManager::open(dir)?;
        smgr.set_fsync(settings.boolean("fsync"));
        let mut catalog = Catalog::load(dir)?;
        // The only xid that can have been in flight when the last process died.
        let in_flight = catalog.next_xid;
        catalog.aborted.insert(in_flight);
        catalog.next_xid = in_flight + 1;
        catalog.publish(dir, smgr.fsync_enabled())?;
        remove_orphans(&smgr, &catalog)?;

        let shared_buffers = settings.memory_bytes("shared_buffers");
        let mapping_name = settings.text("buffer_mapping");
        let mapping = BufferMappingKind::from_name(&mapping_name).ok_or_else(|| {
            Error::internal(format!("buffer_mapping \"{mapping_name}\" passed validation but is unknown"))
        })?;
        let smgr_handle = smgr.clone();
        let pool = BufferPool::new(smgr, BufferPoolConfig { shared_buffers_bytes: shared_buffers, mapping });
        pool.set_drop_lookup_shortcut(settings.boolean("weft_buffer_drop_lookup"));
        let workers = WorkerPool::new(settings.integer("max_worker_processes").max(0) as usize);
        Ok(Arc::new(Database {
            data_dir: dir.to_path_buf(),
            pool,
            workers,
            sequences: Arc::new(Sequences::new(&catalog.sequences)),
            catalog: RwLock::new(Arc::new(catalog)),
            write_lock: Mutex::new(()),
            startup_settings: settings,
            unlinker: Unlinker::new(smgr_handle),
            _lock: lock,
        }))
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn buffer_pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// The committed catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    pub fn snapshot(&self) -> Snapshot {
        self.catalog.read().snapshot()
    }

    /// Run one writing statement under the commit protocol described above.
    pub fn write<T>(&self, body: impl FnOnce(&mut WriteTxn) -> Result<T>) -> Result<T> {
        let _serialized = self.write_lock.lock();
        let current = self.catalog();
        // Heap tuples keep xids in 32 bits; weft has no wraparound (no VACUUM FREEZE).
        if current.next_xid > u32::MAX as Xid {
            return Err(Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                "database is not accepting commands that assign new transaction IDs",
            )
            .with_hint("weft keeps transaction IDs in 32 bits: dump and reload the data into a new data directory."));
        }
        let mut txn = WriteTxn {
            xid: current.next_xid,
            catalog: (*current).clone(),
            touched: BTreeSet::new(),
            created: BTreeSet::new(),
            dropped: BTreeSet::new(),
        };
        let outcome = body(&mut txn).and_then(|value| self.commit(&mut txn).map(|()| value));
        if outcome.is_err() {
            self.abort(&txn, &current);
        }
        outcome
    }

    fn commit(&self, txn: &mut WriteTxn) -> Result<()> {
        for rel in &txn.touched {
            if !txn.dropped.contains(rel) {
                self.pool.flush_relation(*rel)?;
            }
        }
        txn.catalog.committed_max = txn.xid;
        txn.catalog.next_xid = txn.xid + 1;
        self.sequences.record_into(&mut txn.catalog.sequences);
        txn.catalog.publish(&self.data_dir, self.pool.smgr().fsync_enabled())?;
        self.sequences.install(&txn.catalog.sequences);
        *self.catalog.write() = Arc::new(txn.catalog.clone());
        // One pass for all of them (a DROP of many tables visits the hash
        // mapping's descriptors once; the ART retires each relation's trees).
        let dropped: Vec<RelFileLocator> = txn.dropped.iter().copied().collect();
        self.pool.drop_relations_buffers(&dropped);
        // The catalog no longer names the files: remove them off the statement's path.
        self.unlinker.submit(dropped);
        Ok(())
    }

    /// Make a failed statement's work invisible and remove the files it created.
    fn abort(&self, txn: &WriteTxn, current: &Catalog) {
        let created: Vec<RelFileLocator> = txn.created.iter().copied().collect();
        self.pool.drop_relations_buffers(&created);
        for rel in &created {
            let _ = self.pool.smgr().unlink(*rel);
        }
        let mut catalog = current.clone();
        catalog.aborted.insert(txn.xid);
        catalog.next_xid = txn.xid + 1;
        // If this publish fails, the persisted next_xid is still txn.xid, which start-up
        // marks aborted: the rows stay invisible either way.
        let _ = catalog.publish(&self.data_dir, self.pool.smgr().fsync_enabled());
        *self.catalog.write() = Arc::new(catalog);
    }
}

/// How long a data directory's lock is waited for before it counts as held by another
/// process.
const LOCK_RETRY_FOR: std::time::Duration = std::time::Duration::from_millis(500);

/// Two processes writing one data directory would corrupt it: take an exclusive lock.
fn lock_data_dir(dir: &Path) -> Result<fs::File> {
    let path = dir.join(LOCK_FILE_NAME);
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(format!("could not open lock file \"{}\"", path.display()), &e))?;
    // A process that forks while holding the lock (to start a program) shares it with the
    // child until that child execs: a lock released just before may still look held for
    // a moment, so a held lock is retried briefly before it counts as another user's.
    let give_up = std::time::Instant::now() + LOCK_RETRY_FOR;
    let mut attempt = file.try_lock();
    while matches!(attempt, Err(fs::TryLockError::WouldBlock)) && std::time::Instant::now() < give_up {
        std::thread::sleep(std::time::Duration::from_millis(10));
        attempt = file.try_lock();
    }
    match attempt {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(Error::new(
            weft_common::SqlState("55006"),
            format!("data directory \"{}\" is in use by another weft process", dir.display()),
        )
        .with_hint("Close the other session, or give another directory with -D.")),
        Err(fs::TryLockError::Error(e)) => {
            Err(Error::io(format!("could not lock file \"{}\"", path.display()), &e))
        }
    }
}

/// Remove relation files the catalog does not name: leftovers of a statement that was
/// interrupted, or of a drop whose unlink did not happen.
fn remove_orphans(smgr: &StorageManager, catalog: &Catalog) -> Result<()> {
    let live = catalog.live_rel_numbers();
    for (rel, _fork, path) in smgr.list_relation_files()? {
        if !live.contains(&rel.rel_number) {
            fs::remove_file(&path)
                .map_err(|e| Error::io(format!("could not remove orphan file \"{}\"", path.display()), &e))?;
        }
    }
    Ok(())
}
