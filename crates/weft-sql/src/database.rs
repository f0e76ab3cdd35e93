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
//! Writers are serialized by `write_lock`. A writing statement runs inside
//! [`Database::write`]: it gets the next xid and a private copy of the catalog; on success
//! the relations it touched are flushed and fsynced, then the new catalog (with
//! `committed_max = xid`) is published; on failure the xid is recorded as aborted and the
//! files it created are removed. A transaction block (`transaction.rs`) uses the same
//! steps — [`Database::begin`], [`Database::run_statement`] per statement,
//! [`Database::commit`] or [`Database::abort`] — holding the lock from its first write to
//! its end. Readers take a [`Snapshot`] and never block writers.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use weft_access::catalog::{locator, Catalog};
use weft_access::{Snapshot, Xid};
use weft_common::parallel::{CancelToken, WorkerPool};
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
    /// Every committed catalog version installed, while someone may hold it (pruned as
    /// they are released): the readers a drop's [`Retirement`] waits for.
    catalog_versions: Mutex<Vec<Weak<Catalog>>>,
    write_lock: Arc<WriteLock>,
    pub(crate) startup_settings: Settings,
    /// The sequences' current values, which move outside transactions; every commit
    /// records them in the catalog it publishes.
    pub(crate) sequences: Arc<Sequences>,
    /// The number the next session gets (`Session::backend_pid`).
    pub(crate) next_backend_pid: std::sync::atomic::AtomicI32,
    /// Every session's running index build (`pg_stat_progress_create_index`).
    pub(crate) progress: Arc<crate::session::ProgressRegistry>,
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
///
/// Readers never wait for writers, so a statement that started before the commit may
/// still be reading a dropped relation (a TRUNCATE, REINDEX or VACUUM gives a table or
/// index a new one) through the catalog it took. A [`Retirement`] keeps the files until
/// every catalog version that was committed before the drop has been released.
struct Unlinker {
    sender: Option<std::sync::mpsc::Sender<Retirement>>,
    thread: Option<std::thread::JoinHandle<()>>,
    pool: Arc<BufferPool>,
}

/// Relations to remove once no reader holds a catalog that names them.
struct Retirement {
    rels: Vec<RelFileLocator>,
    /// The catalog versions alive when the drop committed (the readers that may still
    /// use the relations).
    readers: Vec<Weak<Catalog>>,
}

impl Retirement {
    fn is_due(&self) -> bool {
        self.readers.iter().all(|r| r.strong_count() == 0)
    }

    /// Remove the files. The buffers were dropped at the commit; a reader still running
    /// then may have read some of them back.
    fn carry_out(self, pool: &BufferPool) {
        if !self.readers.is_empty() {
            pool.drop_relations_buffers(&self.rels);
        }
        for rel in self.rels {
            // If this fails the file stays an orphan until the next start-up.
            let _ = pool.smgr().unlink(rel);
        }
    }
}

/// How often the unlinker looks again at retirements that wait for readers.
const RETIREMENT_POLL: Duration = Duration::from_millis(5);

impl Unlinker {
    fn new(pool: Arc<BufferPool>) -> Unlinker {
        let (sender, receiver) = std::sync::mpsc::channel::<Retirement>();
        let background = pool.clone();
        let thread = std::thread::Builder::new()
            .name("weft-unlinker".into())
            .spawn(move || {
                use std::sync::mpsc::RecvTimeoutError;
                let mut waiting: Vec<Retirement> = Vec::new();
                loop {
                    let received = if waiting.is_empty() {
                        receiver.recv().map_err(|_| RecvTimeoutError::Disconnected)
                    } else {
                        receiver.recv_timeout(RETIREMENT_POLL)
                    };
                    match received {
                        Ok(retirement) => waiting.push(retirement),
                        Err(RecvTimeoutError::Timeout) => {}
                        // The database is closing: no statement runs any more.
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                    let (due, still): (Vec<_>, Vec<_>) = waiting.drain(..).partition(Retirement::is_due);
                    waiting = still;
                    due.into_iter().for_each(|r| r.carry_out(&background));
                }
                waiting.into_iter().for_each(|r| r.carry_out(&background));
            })
            .ok();
        // Without a thread, unlink in the statement (`submit` sees no sender).
        let sender = thread.is_some().then_some(sender);
        Unlinker { sender, thread, pool }
    }

    fn submit(&self, retirement: Retirement) {
        if retirement.rels.is_empty() {
            return;
        }
        let retirement = match &self.sender {
            Some(sender) => match sender.send(retirement) {
                Ok(()) => return,
                Err(std::sync::mpsc::SendError(retirement)) => retirement,
            },
            None => retirement,
        };
        retirement.carry_out(&self.pool);
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

/// The state of a writing transaction, handed to each statement's body: one statement's
/// (autocommit, [`Database::write`]) or a transaction block's (`transaction.rs`), which
/// runs several statements with consecutive xids under one write lock.
pub struct WriteTxn {
    /// The running statement's xid (each statement of a block has its own).
    pub xid: Xid,
    /// The first xid of the transaction: ROLLBACK aborts `first_xid..catalog.next_xid`.
    pub(crate) first_xid: Xid,
    /// The catalog as it will be published if the transaction commits. Between statements
    /// its `committed_max` is the last xid used, so its snapshot is the one the next
    /// statement of the block reads with.
    pub catalog: Catalog,
    /// Relations whose pages this transaction dirtied: flushed before commit.
    pub(crate) touched: BTreeSet<RelFileLocator>,
    /// Relations created by this transaction: removed if it fails.
    pub(crate) created: BTreeSet<RelFileLocator>,
    /// Relations no longer named after commit: removed once it is published.
    pub(crate) dropped: BTreeSet<RelFileLocator>,
    /// The database's write lock, released when the transaction ends (dropped).
    _lock: WriteLockGuard,
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

/// The database's single writer slot: held by a writing statement, or by a transaction
/// block from its first write to its end. Not a `MutexGuard`, because a block's hold spans
/// statements (and the session may move between threads meanwhile).
#[derive(Default)]
struct WriteLock {
    held: Mutex<bool>,
    released: Condvar,
}

/// How often a writer waiting for the lock looks at its cancel flag.
const WRITE_LOCK_POLL: Duration = Duration::from_millis(50);

pub(crate) struct WriteLockGuard {
    lock: Arc<WriteLock>,
}

impl Drop for WriteLockGuard {
    fn drop(&mut self) {
        *self.lock.held.lock() = false;
        self.lock.released.notify_one();
    }
}

impl WriteLock {
    /// Wait until the lock is free and take it; `timeout` is `lock_timeout` (none: wait
    /// until canceled).
    fn acquire(self: &Arc<Self>, cancel: &CancelToken, timeout: Option<Duration>) -> Result<WriteLockGuard> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut held = self.held.lock();
        while *held {
            cancel.check()?;
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(Error::new(SqlState::LOCK_NOT_AVAILABLE, "canceling statement due to lock timeout"));
            }
            let wait = deadline.map_or(WRITE_LOCK_POLL, |d| (d - now).min(WRITE_LOCK_POLL));
            self.released.wait_for(&mut held, wait);
        }
        *held = true;
        Ok(WriteLockGuard { lock: self.clone() })
    }

    fn try_acquire(self: &Arc<Self>) -> Option<WriteLockGuard> {
        let mut held = self.held.lock();
        if *held {
            return None;
        }
        *held = true;
        Some(WriteLockGuard { lock: self.clone() })
    }
}

/// xids a transaction block reserves at a time (one catalog publish each): see
/// [`Catalog::xid_reserved`](weft_access::Catalog).
const XID_RESERVE_CHUNK: Xid = 1024;

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
        // The only xids that can have been in flight when the last process died.
        let in_flight = catalog.in_flight_xids();
        catalog.next_xid = in_flight.end;
        catalog.aborted.insert_range(in_flight);
        // The sessions that owned temporary tables are gone.
        catalog.forget_temporary_tables();
        catalog.publish(dir, smgr.fsync_enabled())?;
        remove_orphans(&smgr, &catalog)?;

        let shared_buffers = settings.memory_bytes("shared_buffers");
        let mapping_name = settings.text("buffer_mapping");
        let mapping = BufferMappingKind::from_name(&mapping_name).ok_or_else(|| {
            Error::internal(format!("buffer_mapping \"{mapping_name}\" passed validation but is unknown"))
        })?;
        let pool = BufferPool::new(smgr, BufferPoolConfig { shared_buffers_bytes: shared_buffers, mapping });
        let unlinker_pool = pool.clone();
        pool.set_drop_lookup_shortcut(settings.boolean("weft_buffer_drop_lookup"));
        let workers = WorkerPool::new(settings.integer("max_worker_processes").max(0) as usize);
        Ok(Arc::new(Database {
            data_dir: dir.to_path_buf(),
            pool,
            workers,
            sequences: Arc::new(Sequences::new(&catalog.sequences)),
            catalog: RwLock::new(Arc::new(catalog)),
            catalog_versions: Mutex::default(),
            write_lock: Arc::default(),
            startup_settings: settings,
            // Numbered from the process id, so a session's number looks like the backend
            // pid PostgreSQL reports.
            next_backend_pid: std::sync::atomic::AtomicI32::new(std::process::id().min(i32::MAX as u32 / 2) as i32),
            progress: Arc::default(),
            unlinker: Unlinker::new(unlinker_pool),
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

    /// Make `catalog` the committed one; the catalog versions that may still be in use.
    fn install(&self, catalog: Catalog) -> Vec<Weak<Catalog>> {
        let catalog = Arc::new(catalog);
        let mut versions = self.catalog_versions.lock();
        let previous = std::mem::replace(&mut *self.catalog.write(), catalog.clone());
        versions.retain(|v| v.strong_count() > 0);
        if versions.is_empty() {
            versions.push(Arc::downgrade(&previous));
        }
        let mut in_use = versions.clone();
        versions.push(Arc::downgrade(&catalog));
        drop(versions);
        drop(previous);
        // Only versions someone still holds: once replaced, a version is not handed out.
        in_use.retain(|v| v.strong_count() > 0);
        in_use
    }

    pub fn snapshot(&self) -> Snapshot {
        self.catalog.read().snapshot()
    }

    /// Run one writing statement under the commit protocol described above (autocommit).
    pub fn write<T>(&self, cancel: &CancelToken, lock_timeout: Option<Duration>, body: impl FnOnce(&mut WriteTxn) -> Result<T>) -> Result<T> {
        let mut txn = self.begin(cancel, lock_timeout)?;
        let outcome = self.run_statement(&mut txn, body).and_then(|value| self.commit(&mut txn).map(|()| value));
        if outcome.is_err() {
            self.abort(txn);
        }
        outcome
    }

    /// Take the write lock and start a transaction on a copy of the committed catalog.
    pub(crate) fn begin(&self, cancel: &CancelToken, lock_timeout: Option<Duration>) -> Result<WriteTxn> {
        let lock = self.write_lock.acquire(cancel, lock_timeout)?;
        let catalog = (*self.catalog()).clone();
        Ok(WriteTxn {
            xid: 0,
            first_xid: catalog.next_xid,
            catalog,
            touched: BTreeSet::new(),
            created: BTreeSet::new(),
            dropped: BTreeSet::new(),
            _lock: lock,
        })
    }

    /// Run one statement of `txn` with the next xid. On success the transaction's catalog
    /// sees it (`committed_max`); on failure its xid is aborted, and a panic is an error.
    pub(crate) fn run_statement<T>(&self, txn: &mut WriteTxn, body: impl FnOnce(&mut WriteTxn) -> Result<T>) -> Result<T> {
        let xid = txn.catalog.next_xid;
        // Heap tuples keep xids in 32 bits; weft has no wraparound (no VACUUM FREEZE).
        if xid > u32::MAX as Xid {
            return Err(Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                "database is not accepting commands that assign new transaction IDs",
            )
            .with_hint("weft keeps transaction IDs in 32 bits: dump and reload the data into a new data directory."));
        }
        self.reserve_xid(xid)?;
        txn.xid = xid;
        txn.catalog.committed_max = xid - 1;
        txn.catalog.next_xid = xid + 1;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(txn)))
            .unwrap_or_else(|panic| Err(crate::session::panic_error(panic)));
        match &outcome {
            Ok(_) => txn.catalog.committed_max = xid,
            Err(_) => txn.catalog.aborted.insert(xid),
        }
        outcome
    }

    /// Make sure a crash leaves `xid` aborted: the committed catalog's in-flight range
    /// (which start-up aborts) must hold it. Only the first xid after the committed
    /// `next_xid` is covered without a publish; a transaction block reserves more at a time.
    fn reserve_xid(&self, xid: Xid) -> Result<()> {
        let committed = self.catalog();
        if committed.in_flight_xids().contains(&xid) {
            return Ok(());
        }
        let mut reserved = (*committed).clone();
        reserved.xid_reserved = xid + XID_RESERVE_CHUNK;
        reserved.publish(&self.data_dir, self.pool.smgr().fsync_enabled())?;
        self.install(reserved);
        Ok(())
    }

    /// Make everything `txn` did durable and visible at once: the commit point.
    pub(crate) fn commit(&self, txn: &mut WriteTxn) -> Result<()> {
        for rel in &txn.touched {
            if !txn.dropped.contains(rel) {
                self.pool.flush_relation(*rel)?;
            }
        }
        let committed = self.catalog();
        txn.catalog.committed_max = txn.catalog.next_xid - 1;
        txn.catalog.xid_reserved = committed.xid_reserved;
        txn.catalog.follow_publishes_of(&committed);
        self.sequences.record_into(&mut txn.catalog.sequences);
        txn.catalog.publish(&self.data_dir, self.pool.smgr().fsync_enabled())?;
        self.sequences.install(&txn.catalog.sequences);
        let readers = self.install(txn.catalog.clone());
        // One pass for all of them (a DROP of many tables visits the hash
        // mapping's descriptors once; the ART retires each relation's trees).
        let dropped: Vec<RelFileLocator> = txn.dropped.iter().copied().collect();
        self.pool.drop_relations_buffers(&dropped);
        // The catalog no longer names the files: remove them off the statement's path,
        // once the statements that started before are done with them.
        self.unlinker.submit(Retirement { rels: dropped, readers });
        Ok(())
    }

    /// Make a failed or rolled-back transaction's work invisible (every xid it used is
    /// aborted), remove the files it created and release the write lock.
    pub(crate) fn abort(&self, txn: WriteTxn) {
        self.remove_created(txn.created.iter().copied().collect());
        let mut catalog = (*self.catalog()).clone();
        let used = txn.first_xid..txn.catalog.next_xid.max(txn.first_xid + 1);
        catalog.next_xid = catalog.next_xid.max(used.end);
        catalog.aborted.insert_range(used);
        self.sequences.record_into(&mut catalog.sequences);
        // If this publish fails, the persisted in-flight range still holds the xids, and
        // start-up aborts it: the rows stay invisible either way.
        let _ = catalog.publish(&self.data_dir, self.pool.smgr().fsync_enabled());
        self.sequences.install(&catalog.sequences);
        self.install(catalog);
    }

    /// Drop the buffers of relations a failed transaction created and unlink their files.
    pub(crate) fn remove_created(&self, created: Vec<RelFileLocator>) {
        self.pool.drop_relations_buffers(&created);
        for rel in &created {
            let _ = self.pool.smgr().unlink(*rel);
        }
    }

    /// Publish the sequences' values with an empty commit (after a read-only statement
    /// moved one) unless a writer holds the lock: its commit or rollback records them.
    pub(crate) fn record_sequences(&self) -> Result<()> {
        let Some(lock) = self.write_lock.try_acquire() else { return Ok(()) };
        let mut catalog = (*self.catalog()).clone();
        self.sequences.record_into(&mut catalog.sequences);
        catalog.publish(&self.data_dir, self.pool.smgr().fsync_enabled())?;
        self.install(catalog);
        drop(lock);
        Ok(())
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
