//! Building a B-tree index from its table: the seed's parallel CREATE INDEX, and weft's
//! partitioned variant of it.
//!
//! 1. *Scanning table*: every participant takes chunks of blocks from one shared cursor
//!    and turns each visible heap tuple into an index tuple (key columns copied as bytes,
//!    then the TID word), pushed into its own `ParticipantSort` — one sorted run each.
//! 2. *Sorting live tuples*: the runs are unified.
//! 3. *Loading tuples in tree*, by `parallel_sort_strategy`:
//!    - `leader_merge` (PostgreSQL's): the leader merges every run and packs the leaves;
//!    - `partition`: every participant merges key ranges and packs their leaves; the leader
//!      appends the ranges in key order, as they become ready, and links them.
//!
//!    Then the leader writes the upper levels and the metapage.
//!
//! UNIQUE: neighbours in the sorted stream are compared on their key columns; within a
//! range by whoever packs it, across range boundaries by the leader. NULLs are distinct.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use weft_common::parallel::{CancelToken, WorkerPool};
use weft_common::progress::{CreateIndexPhase, IndexBuildProgress};
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Error, Result, SqlState};
use weft_sort::{
    merge_ranges_then_complete, Merger, RangeWorkers, SharedSort, SortOptions, SortReport, SortStrategy, TraceFn,
};
use weft_storage::{BufferAccessStrategy, BufferPool, ForkNumber, NumberedPages, RelFileLocator};

use crate::btree::{BTreeDesc, BTreeWriter, BuildSummary, KeyColumn, LeafPacker, PackedLeaves, TidWord};
use crate::catalog::{IndexMeta, TableMeta};
use crate::heap::{scan_blocks_with_tids, HeapScanCursor};
use crate::snapshot::Snapshot;

/// The B-tree description of `index` on `table`.
pub fn btree_desc(table: &TableMeta, index: &IndexMeta) -> Result<BTreeDesc> {
    let columns: Vec<KeyColumn> = index
        .columns
        .iter()
        .map(|c| KeyColumn { data_type: index.column_type(table, c.column), descending: c.descending, nulls_first: c.nulls_first })
        .collect();
    let include: Vec<DataType> = index.include.iter().map(|&c| table.columns[c].data_type).collect();
    BTreeDesc::with_include(&columns, &include)
}

/// What an expression or partial index does to a table row before its keys are taken:
/// `map` writes the index row (the table's columns, then the expressions' values, in
/// weft's tuple format) into `out`, or returns false when the predicate rejects the row.
pub trait IndexRowMap: Send + Sync {
    fn map(&self, row: &[u8], out: &mut Vec<u8>) -> Result<bool>;
}

/// Turns heap rows into index tuples without decoding them: key columns are copied as
/// bytes into the index layout (`keys ++ [tid word]`). For an index with expressions or
/// a predicate, the row goes through its `IndexRowMap` first.
pub struct KeyProjector {
    map: Option<std::sync::Arc<dyn IndexRowMap>>,
    heap: RowLayout,
    index: RowLayout,
    /// Per key: the heap column.
    columns: Vec<usize>,
    /// Length of the index tuple's bitmap and fixed section.
    index_fixed_end: usize,
}

impl KeyProjector {
    /// The projector of a plain index (`IndexMeta::is_plain`).
    pub fn new(table: &TableMeta, index: &IndexMeta, desc: &BTreeDesc) -> KeyProjector {
        debug_assert!(index.is_plain(), "index {} needs an IndexRowMap", index.name);
        Self::with_map(table, index, desc, None)
    }

    /// The projector of any index: `map` is required when it has expressions or a predicate.
    pub fn with_map(table: &TableMeta, index: &IndexMeta, desc: &BTreeDesc, map: Option<std::sync::Arc<dyn IndexRowMap>>) -> KeyProjector {
        let heap = RowLayout::new(&index.row_types(table));
        let index_layout = desc.layout().clone();
        let n = index_layout.len();
        let tid_offset = index_layout.fixed_offset_of(n - 1).expect("the tid word is fixed-width");
        KeyProjector {
            map,
            heap,
            index: index_layout,
            // Keys, then INCLUDE columns: the entry's columns in order.
            columns: index.columns.iter().map(|c| c.column).chain(index.include.iter().copied()).collect(),
            index_fixed_end: tid_offset + 8,
        }
    }

    /// Append the index tuple of heap `row` at `tid` to `out`; false (and nothing
    /// appended) when a partial index's predicate rejects the row.
    #[must_use = "a row the predicate rejects has no entry"]
    pub fn project(&self, row: &[u8], tid: TidWord, out: &mut Vec<u8>) -> Result<bool> {
        match &self.map {
            None => self.project_index_row(row, tid, out).map(|()| true),
            Some(map) => {
                let mut index_row = Vec::with_capacity(row.len() + 32);
                if !map.map(row, &mut index_row)? {
                    return Ok(false);
                }
                self.project_index_row(&index_row, tid, out).map(|()| true)
            }
        }
    }

    /// Whether this projector takes rows through an `IndexRowMap`.
    pub fn maps_rows(&self) -> bool {
        self.map.is_some()
    }

    fn project_index_row(&self, row: &[u8], tid: TidWord, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        out.resize(start + self.index_fixed_end, 0);
        let tid_col = self.columns.len();
        let tid_off = self.index.fixed_offset_of(tid_col).expect("fixed");
        out[start + tid_off..start + tid_off + 8].copy_from_slice(&tid.0.to_le_bytes());
        for (key, &col) in self.columns.iter().enumerate() {
            if self.heap.is_null(row, col) {
                out[start + key / 8] |= 1 << (key % 8);
                continue;
            }
            if let (Some(from), Some(to)) = (self.heap.fixed_offset_of(col), self.index.fixed_offset_of(key)) {
                let width = self.heap.types()[col].fixed_width().expect("fixed");
                let bytes = row.get(from..from + width).ok_or_else(|| corrupt_row(tid))?;
                out[start + to..start + to + width].copy_from_slice(bytes);
            }
        }
        // Variable-width keys follow, in key order, as the layout wants.
        for (key, &col) in self.columns.iter().enumerate() {
            if self.heap.is_null(row, col) {
                continue;
            }
            if let Some(var) = self.heap.var_index_of(col) {
                debug_assert!(self.index.var_index_of(key).is_some());
                let bytes = self.heap.var_bytes(row, var)?;
                out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                out.extend_from_slice(bytes);
            }
        }
        Ok(())
    }
}

impl KeyProjector {
    /// The heap column and offset of the index's key when it is one int4 column: its
    /// entries can go to the sort as (key, tid word) without being encoded.
    pub fn single_int4_key(&self) -> Option<(usize, usize)> {
        if self.map.is_some() {
            return None;
        }
        match self.columns.as_slice() {
            &[col] if self.heap.types()[col] == DataType::Int4 => self.heap.fixed_offset_of(col).map(|off| (col, off)),
            _ => None,
        }
    }

    /// The int4 key at heap column `col` (offset `off`) of `row`, None when NULL.
    #[inline]
    pub fn int4_key(&self, row: &[u8], (col, off): (usize, usize), tid: TidWord) -> Result<Option<i32>> {
        if self.heap.is_null(row, col) {
            return Ok(None);
        }
        let bytes = row.get(off..off + 4).ok_or_else(|| corrupt_row(tid))?;
        Ok(Some(i32::from_le_bytes(bytes.try_into().expect("4 bytes"))))
    }
}

fn corrupt_row(tid: TidWord) -> Error {
    let tid = tid.tid();
    Error::new(SqlState::DATA_CORRUPTED, format!("invalid heap tuple at ({},{})", tid.block, tid.offset))
}

/// PostgreSQL's error for two equal keys in a unique index.
pub fn unique_violation(desc: &BTreeDesc, table: &TableMeta, index: &IndexMeta, tuple: &[u8], building: bool) -> Error {
    let names = index.key_names(table);
    let values: Vec<String> = match desc.key_datums(tuple) {
        Ok(datums) => datums.iter().map(|d| d.to_pg_text().unwrap_or_else(|| "null".into())).collect(),
        Err(_) => vec!["?".into(); names.len()],
    };
    let key = format!("({})=({})", names.join(", "), values.join(", "));
    if building {
        Error::new(SqlState::UNIQUE_VIOLATION, format!("could not create unique index \"{}\"", index.name))
            .with_detail(format!("Key {key} is duplicated."))
    } else {
        Error::new(SqlState::UNIQUE_VIOLATION, format!("duplicate key value violates unique constraint \"{}\"", index.name))
            .with_detail(format!("Key {key} already exists."))
    }
}

/// What a build needs from its statement.
pub struct BuildEnv<'a> {
    pub pool: &'a BufferPool,
    pub workers: &'a WorkerPool,
    /// Workers asked for besides the leader.
    pub workers_requested: usize,
    pub leader_participates: bool,
    pub cancel: &'a CancelToken,
    /// `maintenance_work_mem`: the budget of the whole build, split among participants.
    pub budget: usize,
    pub strategy: SortStrategy,
    pub temp_dir: PathBuf,
    pub trace: Option<TraceFn>,
    pub progress: &'a IndexBuildProgress,
    /// The index's row map when it has expressions or a predicate.
    pub row_map: Option<std::sync::Arc<dyn IndexRowMap>>,
}

/// What a build did, for `trace_sort`, the benchmark and tests.
#[derive(Clone, Debug)]
pub struct IndexBuildReport {
    pub sort: SortReport,
    pub tree: BuildSummary,
    pub workers_launched: usize,
    /// Scan and run phase (all participants).
    pub scan_sort: Duration,
    /// Merging and writing the tree.
    pub load: Duration,
    /// Time during which not every participant worked.
    pub serial: Duration,
    pub total: Duration,
}

/// Leaf pages a packer hands over at once in the leader-merge load.
const LEAF_BATCH_PAGES: usize = 256;

/// Build `index` (whose file `rel` is empty) from the rows of `table` visible to `snapshot`.
pub fn build_btree(
    env: &BuildEnv,
    table: &TableMeta,
    index: &IndexMeta,
    rel: RelFileLocator,
    snapshot: &Snapshot,
) -> Result<IndexBuildReport> {
    let began = Instant::now();
    let desc = btree_desc(table, index)?;
    let projector = KeyProjector::with_map(table, index, &desc, env.row_map.clone());
    let heap_rel = table.locator();
    let nblocks = env.pool.nblocks(heap_rel, ForkNumber::Main)?;
    env.progress.set_phase(CreateIndexPhase::ScanningTable, nblocks as u64, 0);

    // Fewer participants than planned may come; each gets an equal share of the budget.
    let participants = env.workers_requested + 1;
    let options = SortOptions {
        budget: (env.budget / participants).max(64 * 1024),
        bound: None,
        strategy: env.strategy,
        temp_dir: env.temp_dir.clone(),
        cancel: env.cancel.clone(),
        trace: env.trace.clone(),
        sub_run_bytes: weft_sort::DEFAULT_SUB_RUN_BYTES,
    };
    let shared = SharedSort::new(desc.sort_keys().clone(), options, participants)
        .with_payload_squeeze(TidWord::squeeze())
        .with_expected_rows(table.row_count);
    let cursor = HeapScanCursor::new(nblocks, participants);
    // Like a sequential scan, a big table is read through a ring so it does not evict the pool.
    let big_table = nblocks as usize > env.pool.nbuffers() / 4;
    let run = env.workers.run(env.workers_requested, env.leader_participates, env.cancel, |_| {
        let mut sort = shared.participant();
        let mut ring = big_table.then(BufferAccessStrategy::bulk_read);
        let mut tuple = Vec::with_capacity(64);
        // One int4 key: (key, tid word) straight from the heap row into the sort's pairs.
        let int4_key = projector.single_int4_key().filter(|_| sort.takes_int4_pairs());
        while let Some(chunk) = cursor.next_chunk() {
            env.cancel.check()?;
            let blocks = (chunk.end - chunk.start) as u64;
            scan_blocks_with_tids(env.pool, heap_rel, chunk, ring.as_mut(), snapshot, |tid, row| {
                let tid = TidWord::new(tid, false);
                if let Some(column) = int4_key {
                    sort.push_int4_pair(projector.int4_key(row, column, tid)?, tid.0)?;
                } else {
                    tuple.clear();
                    if projector.project(row, tid, &mut tuple)? {
                        sort.push(&tuple)?;
                    }
                }
                Ok(true)
            })?;
            env.progress.add_blocks_done(blocks);
        }
        sort.finish()
    })?;
    let runs = shared.into_runs();
    let scan_sort = began.elapsed();
    env.progress.set_phase(CreateIndexPhase::SortingLiveTuples, 0, runs.rows());
    env.progress.set_phase(CreateIndexPhase::LoadingTuplesInTree, 0, runs.rows());

    let load_began = Instant::now();
    let mut writer = BTreeWriter::new(env.pool, rel, &desc)?;
    let fillfactor = index.fillfactor;
    let duplicate = |tuple: &[u8]| unique_violation(&desc, table, index, tuple, true);
    let partitioned = env.strategy == SortStrategy::Partition && runs.run_count() > 1 && run.workers_launched > 0;
    let (serial_load, outcome) = if partitioned {
        // A range's pages, and its first and last tuple for the checks across boundaries.
        struct Range {
            leaves: PackedLeaves,
            first: Option<Vec<u8>>,
            last: Option<Vec<u8>>,
        }
        let pack = |_first_row: u64, merger: &mut Merger| -> Result<Range> {
            let mut packer = LeafPacker::new(&desc, fillfactor);
            let mut first = None;
            let mut last: Vec<u8> = Vec::new();
            let mut any = false;
            while let Some(tuple) = merger.next()? {
                if index.unique && any && desc.keys_equal_not_null(&last, tuple) {
                    return Err(duplicate(tuple));
                }
                if !any {
                    first = Some(tuple.to_vec());
                    any = true;
                }
                if index.unique {
                    last.clear();
                    last.extend_from_slice(tuple);
                }
                packer.add(tuple)?;
            }
            let leaves = packer.finish();
            env.progress.add_tuples_done(leaves.tuples);
            let last = (any && index.unique).then_some(last);
            Ok(Range { leaves, first, last })
        };
        let mut previous_last: Option<Vec<u8>> = None;
        let consume = |range: Range| -> Result<Option<NumberedPages>> {
            if let (Some(prev), Some(first)) = (&previous_last, &range.first) {
                if index.unique && desc.keys_equal_not_null(prev, first) {
                    return Err(duplicate(first));
                }
            }
            if range.last.is_some() {
                previous_last = range.last;
            }
            // Numbered here, in key order; written by whichever participant consumed it.
            writer.number_leaves(range.leaves).map(Some)
        };
        let write = |leaves: NumberedPages| leaves.write(env.pool);
        let who = RangeWorkers {
            pool: env.workers,
            workers: run.workers_launched,
            leader_participates: env.leader_participates,
            cancel: env.cancel,
        };
        let ranges = (run.workers_launched + 1) * weft_sort::RANGES_PER_PARTICIPANT;
        let (times, outcome) = merge_ranges_then_complete(&runs, ranges, &who, pack, consume, write);
        (times.not_all_busy, outcome)
    } else {
        let outcome = (|| {
            let mut merger = runs.merge_all()?;
            let mut packer = LeafPacker::new(&desc, fillfactor);
            let mut last: Vec<u8> = Vec::new();
            let mut any = false;
            while let Some(tuple) = merger.next()? {
                if index.unique {
                    if any && desc.keys_equal_not_null(&last, tuple) {
                        return Err(duplicate(tuple));
                    }
                    last.clear();
                    last.extend_from_slice(tuple);
                }
                any = true;
                packer.add(tuple)?;
                if packer.full_pages() >= LEAF_BATCH_PAGES {
                    env.cancel.check()?;
                    let leaves = packer.take_full_pages();
                    env.progress.add_tuples_done(leaves.tuples);
                    writer.append_leaves(leaves)?;
                }
            }
            let leaves = packer.finish();
            env.progress.add_tuples_done(leaves.tuples);
            writer.append_leaves(leaves)
        })();
        (load_began.elapsed(), outcome)
    };
    let sort = runs.report(load_began.elapsed(), serial_load);
    if let Err(error) = outcome {
        // weft's sort finds some duplicate; PostgreSQL names another one.
        if error.sqlstate == SqlState::UNIQUE_VIOLATION {
            if let Some(entry) = duplicate_postgres_names(env, heap_rel, nblocks, &projector, &desc, snapshot)? {
                return Err(duplicate(&entry));
            }
        }
        return Err(error);
    }
    drop(runs);
    // The upper levels and the metapage: the leader alone.
    let finish_began = Instant::now();
    let tree = writer.finish()?;
    let serial = run_phase_serial(&run.participant_times, scan_sort) + serial_load + finish_began.elapsed();
    env.progress.set_phase(CreateIndexPhase::Done, 0, tree.tuples);
    Ok(IndexBuildReport {
        sort,
        tree,
        workers_launched: run.workers_launched,
        scan_sort,
        serial,
        load: load_began.elapsed(),
        total: began.elapsed(),
    })
}

/// Of the run phase's wall time, the part during which not every participant worked
/// (the slowest participant's lead over the fastest).
fn run_phase_serial(times: &[Duration], wall: Duration) -> Duration {
    match (times.iter().min(), times.len()) {
        (Some(&fastest), n) if n > 1 => wall.saturating_sub(fastest),
        _ => wall,
    }
}

/// Tables up to this many blocks are sorted by PostgreSQL in one process (the size at which
/// `plan_create_index_workers` starts asking for workers: `min_parallel_table_scan_size`).
const POSTGRES_SERIAL_BUILD_BLOCKS_MAX: u32 = 1024;

/// The entry PostgreSQL names in "Key ... is duplicated." when building this unique index
/// fails. PostgreSQL finds duplicates while sorting: its in-memory quicksort (the
/// Bentley-McIlroy variant of its `sort_template.h`) over the entries in heap order fails
/// at the first comparison of two equal keys without NULLs and names the first compared
/// entry. Which pair that is depends on the whole sequence of comparisons, so the same
/// quicksort is run over the same entries here. None for a table PostgreSQL would sort
/// with parallel workers, whose timing decides.
fn duplicate_postgres_names(
    env: &BuildEnv,
    heap_rel: RelFileLocator,
    nblocks: u32,
    projector: &KeyProjector,
    desc: &BTreeDesc,
    snapshot: &Snapshot,
) -> Result<Option<Vec<u8>>> {
    if nblocks > POSTGRES_SERIAL_BUILD_BLOCKS_MAX {
        return Ok(None);
    }
    let mut entries: Vec<Vec<u8>> = Vec::new();
    scan_blocks_with_tids(env.pool, heap_rel, 0..nblocks, None, snapshot, |tid, row| {
        let mut entry = Vec::new();
        if projector.project(row, TidWord::new(tid, false), &mut entry)? {
            entries.push(entry);
        }
        Ok(true)
    })?;
    // No cancellation check: the failed build has cancelled its own participants, and
    // the scan is at most POSTGRES_SERIAL_BUILD_BLOCKS_MAX blocks.
    let mut sort = PostgresQuicksort { desc, entries: &mut entries };
    Ok(sort.sort(0, sort.entries.len()).err())
}

/// PostgreSQL's quicksort over index entries, stopped (`Err`, with the entry it would
/// name) at the first comparison of equal keys without NULLs. Other entries compare by
/// key, then heap position, as in PostgreSQL.
struct PostgresQuicksort<'a> {
    desc: &'a BTreeDesc,
    entries: &'a mut Vec<Vec<u8>>,
}

impl PostgresQuicksort<'_> {
    fn compare(&self, a: usize, b: usize) -> std::result::Result<std::cmp::Ordering, Vec<u8>> {
        let (x, y) = (&self.entries[a], &self.entries[b]);
        if self.desc.keys_equal_not_null(x, y) {
            return Err(x.clone());
        }
        Ok(self.desc.compare(x, y))
    }

    fn median_of_three(&self, a: usize, b: usize, c: usize) -> std::result::Result<usize, Vec<u8>> {
        use std::cmp::Ordering::{Greater, Less};
        Ok(if self.compare(a, b)? == Less {
            if self.compare(b, c)? == Less {
                b
            } else if self.compare(a, c)? == Less {
                c
            } else {
                a
            }
        } else if self.compare(b, c)? == Greater {
            b
        } else if self.compare(a, c)? == Less {
            a
        } else {
            c
        })
    }

    /// Swap the `n` entries from `a` with the `n` from `b`, pairwise.
    fn swap_runs(&mut self, a: usize, b: usize, n: usize) {
        for i in 0..n {
            self.entries.swap(a + i, b + i);
        }
    }

    /// Sort `entries[start..start + n]`: insertion sort below 7 entries, nothing if already
    /// in order, else a three-way partition around a median (of medians above 40 entries),
    /// recursing into the smaller side and looping on the larger.
    fn sort(&mut self, mut start: usize, mut n: usize) -> std::result::Result<(), Vec<u8>> {
        use std::cmp::Ordering::{Equal, Greater, Less};
        loop {
            if n < 7 {
                for m in start + 1..start + n {
                    let mut l = m;
                    while l > start && self.compare(l - 1, l)? == Greater {
                        self.entries.swap(l, l - 1);
                        l -= 1;
                    }
                }
                return Ok(());
            }
            let mut presorted = true;
            for m in start + 1..start + n {
                if self.compare(m - 1, m)? == Greater {
                    presorted = false;
                    break;
                }
            }
            if presorted {
                return Ok(());
            }
            let mut middle = start + n / 2;
            if n > 7 {
                let mut low = start;
                let mut high = start + n - 1;
                if n > 40 {
                    let d = n / 8;
                    low = self.median_of_three(low, low + d, low + 2 * d)?;
                    middle = self.median_of_three(middle - d, middle, middle + d)?;
                    high = self.median_of_three(high - 2 * d, high - d, high)?;
                }
                middle = self.median_of_three(low, middle, high)?;
            }
            self.entries.swap(start, middle);
            let pivot = start;
            // [start+1, pa): equal to the pivot; [pa, pb): less; (pc, pd]: greater;
            // (pd, end): equal.
            let (mut pa, mut pb) = (start + 1, start + 1);
            let (mut pc, mut pd) = (start + n - 1, start + n - 1);
            loop {
                while pb <= pc {
                    let order = self.compare(pb, pivot)?;
                    if order == Greater {
                        break;
                    }
                    if order == Equal {
                        self.entries.swap(pa, pb);
                        pa += 1;
                    }
                    pb += 1;
                }
                while pb <= pc {
                    let order = self.compare(pc, pivot)?;
                    if order == Less {
                        break;
                    }
                    if order == Equal {
                        self.entries.swap(pc, pd);
                        pd -= 1;
                    }
                    pc -= 1;
                }
                if pb > pc {
                    break;
                }
                self.entries.swap(pb, pc);
                pb += 1;
                pc -= 1;
            }
            let end = start + n;
            let d = (pa - start).min(pb - pa);
            self.swap_runs(start, pb - d, d);
            let d = (pd - pc).min(end - pd - 1);
            self.swap_runs(pb, end - d, d);
            let (less, greater) = (pb - pa, pd - pc);
            if less <= greater {
                if less > 1 {
                    self.sort(start, less)?;
                }
                if greater <= 1 {
                    return Ok(());
                }
                (start, n) = (end - greater, greater);
            } else {
                if greater > 1 {
                    self.sort(end - greater, greater)?;
                }
                if less <= 1 {
                    return Ok(());
                }
                n = less;
            }
        }
    }
}
