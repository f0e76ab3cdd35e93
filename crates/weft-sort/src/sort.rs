//! The parallel contract, after PostgreSQL's tuplesort.h:
//!
//! 1. The caller creates one [`SharedSort`] for up to N participants.
//! 2. Each participant takes a [`ParticipantSort`] ([`SharedSort::participant`]), pushes
//!    its share of tuples and calls [`ParticipantSort::finish`], which leaves exactly one
//!    sorted, materialized run (in memory when its share fit its budget, else on its own
//!    tape) in the shared state. `finish` consumes the participant: no tuple can be added
//!    after its run exists.
//! 3. Once every participant has finished, [`SharedSort::into_runs`] (which consumes the
//!    shared sort, so no participant can still be pushing) gives [`SortedRuns`]: the
//!    unified tapes. The output is either one merge of every run
//!    ([`SortedRuns::merge_all`], PostgreSQL's leader merge), or, with the partition
//!    strategy, [`SortedRuns::partition`] into key ranges that participants merge
//!    independently ([`SortedRuns::merge_range`]) and whose outputs concatenate.
//!
//! Dropping `SortedRuns` (or the shared sort, on an error) removes the temp file set.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use weft_common::parallel::CancelToken;
use weft_common::{Datum, Result};

use crate::cardinality::AbbreviationCheck;
use crate::keys::SortKeys;
use crate::memrun::{MemPosition, MemRun, MemRunReader, MemRunWriter, RunHandle};
use crate::memtuples::{MemTuples, SortTuple};
use crate::pairs::{sort_packed, sort_pairs, FirstKey, PackedPair, Packing, PairForm, PairRun, PairRunReader, PairStore, PayloadSqueeze};
use crate::merge::{MergeInput, Merger};
use crate::report::{ParticipantReport, SortMethod, SortReport, SortSpace, SortStrategy};
use crate::tape::{IndexEntry, RunReader, TapeRun, TapeWriter, TempFileSet};
use crate::topn::TopN;

/// Receives `trace_sort` lines.
pub type TraceFn = Arc<dyn Fn(String) + Send + Sync>;

#[derive(Clone)]
pub struct SortOptions {
    /// Memory budget of each participant, in bytes.
    pub budget: usize,
    /// Only the first `bound` tuples of the output are wanted (top-N). Each participant
    /// keeps its own best `bound`, so the merged output may be longer: the caller stops
    /// after `bound` tuples.
    pub bound: Option<u64>,
    pub strategy: SortStrategy,
    /// Parent directory of the sort's temp file set.
    pub temp_dir: PathBuf,
    pub cancel: CancelToken,
    pub trace: Option<TraceFn>,
    /// Largest sub-run sorted through pointers before it is laid out in order
    /// ([`DEFAULT_SUB_RUN_BYTES`]; tests make it tiny to merge many sub-runs in memory).
    pub sub_run_bytes: usize,
}

/// Per-input read buffer that sets the merge order. PostgreSQL reserves 256 kB (32 blocks)
/// per tape, for disks that seek; temp runs are read back through the page cache, where
/// 16 kB per `pread` costs little, and at a small budget (`work_mem` is 4MB by default) a
/// wider merge spares whole passes of writing every tuple to tape again (16 runs a merge
/// at 4MB with 256 kB, 256 with 16 kB).
const MERGE_BUFFER_BYTES: usize = 16 * 1024;
/// Merge order limits (PostgreSQL's MINORDER and MAXORDER).
const MIN_MERGE_ORDER: usize = 6;
const MAX_MERGE_ORDER: usize = 500;
/// Rows between two cancellation checks.
const CANCEL_CHECK_ROWS: u64 = 4096;

/// How many runs one merge may read at once within `budget`.
pub fn merge_order(budget: usize) -> usize {
    (budget / MERGE_BUFFER_BYTES).clamp(MIN_MERGE_ORDER, MAX_MERGE_ORDER)
}

/// Read buffer of each input of a merge: a share of the budget, between
/// `MERGE_BUFFER_BYTES` and 1 MiB (more does not read a run through the page cache any
/// faster, and key-range merges run several at once).
fn read_buffer_bytes(budget: usize, width: usize) -> usize {
    (budget / width.max(1)).clamp(MERGE_BUFFER_BYTES, 1 << 20)
}

/// A participant's one run.
#[derive(Clone)]
enum Run {
    Memory(Arc<MemRun>),
    Tape(TapeRun),
    Pairs(Arc<PairRun>),
}

impl Run {
    fn count(&self) -> u64 {
        match self {
            Run::Memory(m) => m.count(),
            Run::Tape(t) => t.count,
            Run::Pairs(p) => p.count(),
        }
    }
}

const PAIR_BYTES: usize = std::mem::size_of::<SortTuple>();

/// The most pairs of `pair_bytes` bytes a participant holds in `budget` bytes: each pair,
/// and a sixteenth of one for the radix sort's second buffer (its in-place sort needs a
/// buffer the size of its largest top-byte bucket, about 1/256 of the pairs on spread
/// keys).
fn pairs_in_budget(budget: usize, pair_bytes: usize) -> usize {
    (budget / 17 * 16 / pair_bytes).max(16)
}

/// Pairs a run of a participant holds: what `budget` holds, or when its expected `share`
/// of the input needs several runs, an even part of it (and a twentieth more for an
/// uneven share), so that no participant is left sorting a big last run alone while the
/// others wait with a small one.
fn pairs_per_run(budget: usize, pair_bytes: usize, share: Option<usize>) -> usize {
    let most = pairs_in_budget(budget, pair_bytes);
    match share {
        Some(share) if share > most => {
            let runs = share.div_ceil(most);
            (share.div_ceil(runs) + share / 20).min(most)
        }
        _ => most,
    }
}

/// A participant's tuples in pair form (`pairs.rs`): the pairs, packed while they pack,
/// and the radix sort's second buffer, both counted in its budget.
struct PairBuffer {
    form: PairForm,
    store: PairStore,
    /// Pairs the array takes before the budget is full (0 until it is reserved).
    limit: usize,
    scratch: Vec<SortTuple>,
    packed_scratch: Vec<PackedPair>,
}

impl PairBuffer {
    fn new(form: PairForm, squeeze: Option<PayloadSqueeze>) -> PairBuffer {
        let store = match squeeze.and_then(|squeeze| Packing::new(form, squeeze)) {
            Some(packing) => PairStore::Packed(Vec::new(), packing),
            None => PairStore::Wide(Vec::new()),
        };
        PairBuffer { form, store, limit: 0, scratch: Vec::new(), packed_scratch: Vec::new() }
    }

    /// Memory in use: the arrays are reserved for the whole budget, but only the pages
    /// pairs have reached are committed.
    fn bytes(&self) -> usize {
        self.store.len() * self.store.pair_bytes()
            + self.scratch.len() * PAIR_BYTES
            + self.packed_scratch.len() * std::mem::size_of::<PackedPair>()
    }

    /// Sort the pairs with a second buffer of at most what `budget` leaves beside them
    /// (at least a sixteenth of them, which [`pairs_in_budget`] sets aside).
    fn sort(&mut self, budget: usize) {
        let (n, pair_bytes) = (self.store.len(), self.store.pair_bytes());
        let room = (budget / pair_bytes).saturating_sub(n).max(n / 16);
        match &mut self.store {
            PairStore::Wide(pairs) => sort_pairs(pairs, &mut self.scratch, room),
            PairStore::Packed(pairs, _) => sort_packed(pairs, &mut self.packed_scratch, room),
        }
    }

    /// Empty the pairs, keeping their memory for the next run.
    fn clear(&mut self) {
        match &mut self.store {
            PairStore::Wide(pairs) => pairs.clear(),
            PairStore::Packed(pairs, _) => pairs.clear(),
        }
    }

    /// Reserve address space for as many pairs as `budget` holds, on the first pair: pages
    /// are committed as pairs fill them, and the array never moves.
    fn reserve(&mut self, budget: usize, share: Option<usize>) {
        if self.limit > 0 {
            return;
        }
        let most = pairs_per_run(budget, self.store.pair_bytes(), share);
        self.limit = most;
        match &mut self.store {
            PairStore::Wide(pairs) => {
                *pairs = Vec::with_capacity(most);
                weft_storage::memhint::advise_huge_pages(pairs);
            }
            PairStore::Packed(pairs, _) => {
                *pairs = Vec::with_capacity(most);
                weft_storage::memhint::advise_huge_pages(pairs);
            }
        }
    }

    /// Is the budget full? (After [`reserve`](Self::reserve).)
    fn full(&self) -> bool {
        self.store.len() >= self.limit
    }
}

pub struct SharedSort {
    keys: Arc<SortKeys>,
    options: SortOptions,
    participants: usize,
    temp: Mutex<Option<Arc<TempFileSet>>>,
    runs: Mutex<Vec<(usize, Run)>>,
    reports: Mutex<Vec<ParticipantReport>>,
    next_index: AtomicUsize,
    started: Instant,
    payload_squeeze: Option<PayloadSqueeze>,
    expected_rows: Option<u64>,
}

impl SharedSort {
    /// A sort for up to `participants` participants (fewer may show up).
    pub fn new(keys: SortKeys, options: SortOptions, participants: usize) -> SharedSort {
        let shared = SharedSort {
            keys: Arc::new(keys),
            options,
            participants,
            temp: Mutex::new(None),
            runs: Mutex::new(Vec::new()),
            reports: Mutex::new(Vec::new()),
            next_index: AtomicUsize::new(0),
            started: Instant::now(),
            payload_squeeze: None,
            expected_rows: None,
        };
        shared.trace(format!(
            "begin tuple sort: nkeys = {}, workMem = {}, participants = {}, bound = {}, strategy = {}",
            shared.keys.len(),
            shared.options.budget / 1024,
            participants,
            shared.options.bound.map_or("none".to_string(), |b| b.to_string()),
            shared.options.strategy.name(),
        ));
        shared
    }

    /// Pairs of `(int4, int8)` tuples may pack into 8 bytes with this code of the second
    /// column (`pairs.rs`): what an index build gives for its tid words.
    pub fn with_payload_squeeze(mut self, squeeze: PayloadSqueeze) -> SharedSort {
        self.payload_squeeze = Some(squeeze);
        self
    }

    /// About how many tuples the sort will get (a table's row estimate): participants
    /// then size their runs of pairs evenly ([`pairs_per_run`]).
    pub fn with_expected_rows(mut self, rows: u64) -> SharedSort {
        self.expected_rows = Some(rows);
        self
    }

    /// A participant's expected part of the input, if the sort was told the input's size.
    fn expected_share(&self) -> Option<usize> {
        self.expected_rows.map(|rows| (rows / self.participants.max(1) as u64) as usize)
    }

    fn trace(&self, line: String) {
        if let Some(trace) = &self.options.trace {
            trace(line);
        }
    }

    fn temp_files(&self) -> Result<Arc<TempFileSet>> {
        let mut temp = self.temp.lock();
        if let Some(set) = temp.as_ref() {
            return Ok(set.clone());
        }
        let set = Arc::new(TempFileSet::create(&self.options.temp_dir)?);
        *temp = Some(set.clone());
        Ok(set)
    }

    /// The sort's bound (top-N), if any.
    pub fn bound(&self) -> Option<u64> {
        self.options.bound
    }

    pub fn keys(&self) -> &SortKeys {
        &self.keys
    }

    /// Join the sort as the next participant.
    pub fn participant(&self) -> ParticipantSort<'_> {
        let index = self.next_index.fetch_add(1, Ordering::Relaxed);
        let topn = match self.options.bound {
            // A bound whose tuples clearly cannot fit is sorted normally.
            Some(bound) if (bound as usize).saturating_mul(64) <= self.options.budget => Some(TopN::new(bound as usize)),
            _ => None,
        };
        let check = self.keys.first_key_is_text().then(AbbreviationCheck::new);
        let pairs = match topn {
            None => self.keys.pair_form().map(|form| PairBuffer::new(form, self.payload_squeeze)),
            Some(_) => None,
        };
        ParticipantSort {
            shared: self,
            index,
            mem: MemTuples::new(self.options.budget.min(self.options.sub_run_bytes), self.keys.suits_radix_sort()),
            mem_runs: Vec::new(),
            mem_runs_bytes: 0,
            topn,
            pairs,
            writer: None,
            runs: Vec::new(),
            rows: 0,
            abbreviating: true,
            check,
            peak_memory: 0,
            started: Instant::now(),
        }
    }

    /// All participants have finished: unify their runs.
    pub fn into_runs(self) -> SortedRuns {
        let mut runs = self.runs.into_inner();
        runs.sort_by_key(|(index, _)| *index);
        let mut reports = self.reports.into_inner();
        reports.sort_by_key(|r| r.index);
        SortedRuns {
            keys: self.keys,
            runs: runs.into_iter().map(|(_, run)| run).filter(|run| run.count() > 0).collect(),
            reports,
            temp: self.temp.into_inner(),
            budget: self.options.budget,
            strategy: self.options.strategy,
            trace: self.options.trace,
            run_phase: self.started.elapsed(),
            participants: self.participants,
        }
    }
}

/// One participant's share of a sort.
pub struct ParticipantSort<'s> {
    shared: &'s SharedSort,
    index: usize,
    /// The sub-run being filled, sorted through pointers.
    mem: MemTuples,
    /// Sorted sub-runs laid out in order, waiting to be merged.
    mem_runs: Vec<MemRun>,
    mem_runs_bytes: usize,
    topn: Option<TopN>,
    /// Pair form, until a tuple without a pair comes.
    pairs: Option<PairBuffer>,
    writer: Option<TapeWriter>,
    runs: Vec<TapeRun>,
    rows: u64,
    abbreviating: bool,
    check: Option<AbbreviationCheck>,
    peak_memory: usize,
    started: Instant,
}

impl<'s> ParticipantSort<'s> {
    pub fn index(&self) -> usize {
        self.index
    }

    /// Add one tuple (in the sort's layout).
    pub fn push(&mut self, tuple: &[u8]) -> Result<()> {
        self.rows += 1;
        if self.rows % CANCEL_CHECK_ROWS == 0 {
            self.shared.options.cancel.check()?;
        }
        let keys = &*self.shared.keys;
        let mut abbrev = if self.abbreviating { keys.abbreviate(tuple) } else { 0 };
        if let Some(check) = self.check.as_mut() {
            if !check.observe(abbrev, keys.first_key_text(tuple)) {
                self.abbreviating = false;
                self.mem.clear_abbreviations();
                if let Some(topn) = self.topn.as_mut() {
                    topn.forget_abbreviations(keys);
                }
                abbrev = 0;
                self.check = None;
                self.shared.trace(format!(
                    "participant {}: abbreviated keys abandoned after {} rows: they do not tell keys apart",
                    self.index, self.rows
                ));
            } else if check.settled() {
                self.check = None;
            }
        }
        if let Some(topn) = self.topn.as_mut() {
            topn.push(keys, tuple, abbrev);
            if topn.bytes() <= self.shared.options.budget {
                self.peak_memory = self.peak_memory.max(topn.bytes());
                return Ok(());
            }
            // The bounded tuples outgrew the budget: sort everything normally.
            let topn = self.topn.take().expect("present");
            for (abbrev, tuple) in topn.into_tuples() {
                self.add_to_memory(&tuple, if self.abbreviating { abbrev } else { 0 })?;
            }
            return Ok(());
        }
        if let Some(buffer) = self.pairs.as_ref() {
            match buffer.form.payload(tuple) {
                Some(payload) => return self.add_pair(abbrev, payload),
                None => self.leave_pair_form()?,
            }
        }
        self.add_to_memory(tuple, abbrev)
    }

    /// For a bounded sort that keeps its `bound` best tuples in a heap, once it is full:
    /// the abbreviation of the worst of them. A tuple whose abbreviation is above it
    /// cannot enter, so a scan may skip blocks whose best key is above it
    /// ([`SortKeys::best_abbrev_in`]).
    pub fn top_n_bar(&self) -> Option<u64> {
        self.topn.as_ref().filter(|_| self.abbreviating).and_then(TopN::worst_kept_abbrev)
    }

    /// Does [`push_int4_pair`](Self::push_int4_pair) store pairs directly? (The sort's
    /// tuples are `(int4, int8)` sorted by both, and this participant is in pair form.)
    pub fn takes_int4_pairs(&self) -> bool {
        self.pairs.as_ref().is_some_and(|b| b.form.first == FirstKey::Int4)
    }

    /// Add the tuple `(first, second)` of an `(int4, int8)` layout (`first` None for
    /// NULL) without encoding it: what a B-tree build on one int4 column pushes.
    pub fn push_int4_pair(&mut self, first: Option<i32>, second: i64) -> Result<()> {
        if !self.takes_int4_pairs() {
            let mut tuple = Vec::with_capacity(16);
            let row = [first.map_or(Datum::Null, Datum::Int4), Datum::Int8(second)];
            self.shared.keys.layout().encode(&row, &mut tuple)?;
            return self.push(&tuple);
        }
        self.rows += 1;
        if self.rows % CANCEL_CHECK_ROWS == 0 {
            self.shared.options.cancel.check()?;
        }
        let PairBuffer { store, limit, .. } = self.pairs.as_mut().expect("in pair form");
        if let PairStore::Packed(pairs, packing) = store {
            match packing.pack(first, second) {
                // The common case, kept short: room in the array.
                Some(packed) if pairs.len() < *limit => {
                    pairs.push(packed);
                    return Ok(());
                }
                Some(packed) => return self.add_packed(packed),
                None => self.widen_pairs()?,
            }
        }
        let pair = self.pairs.as_ref().expect("in pair form").form.int4_pair(first, second);
        self.add_pair(pair.abbrev, pair.payload())
    }

    fn add_pair(&mut self, abbrev: u64, payload: u64) -> Result<()> {
        if let Some(PairStore::Packed(_, packing)) = self.pairs.as_ref().map(|b| &b.store) {
            match packing.pack_pair(SortTuple::new(abbrev, payload)) {
                Some(packed) => return self.add_packed(packed),
                None => self.widen_pairs()?,
            }
        }
        self.make_room_for_a_pair()?;
        let buffer = self.pairs.as_mut().expect("in pair form");
        let PairStore::Wide(pairs) = &mut buffer.store else { unreachable!("packed pairs widen before a wide one comes") };
        pairs.push(SortTuple::new(abbrev, payload));
        self.peak_memory = self.peak_memory.max(buffer.bytes());
        Ok(())
    }

    #[inline]
    fn add_packed(&mut self, packed: PackedPair) -> Result<()> {
        self.make_room_for_a_pair()?;
        let buffer = self.pairs.as_mut().expect("in pair form");
        let PairStore::Packed(pairs, _) = &mut buffer.store else { unreachable!("checked by the caller") };
        pairs.push(packed);
        self.peak_memory = self.peak_memory.max(buffer.bytes());
        Ok(())
    }

    /// Reserve the pair array on the first pair; when the budget is full, the pairs
    /// become a run on tape (their memory stays).
    #[inline]
    fn make_room_for_a_pair(&mut self) -> Result<()> {
        let budget = self.shared.options.budget;
        let share = self.shared.expected_share();
        let buffer = self.pairs.as_mut().expect("in pair form");
        buffer.reserve(budget, share);
        if buffer.full() {
            self.spill()?;
        }
        Ok(())
    }

    /// A pair that does not pack came: the packed pairs become 16-byte ones (written to
    /// tape first when the budget holds fewer of those), and the participant goes on at
    /// 16 bytes a pair.
    fn widen_pairs(&mut self) -> Result<()> {
        let budget = self.shared.options.budget;
        let most = pairs_per_run(budget, PAIR_BYTES, self.shared.expected_share());
        if self.pairs.as_ref().is_some_and(|b| b.store.len() > most) {
            self.spill()?;
        }
        let buffer = self.pairs.as_mut().expect("in pair form");
        let PairStore::Packed(packed, packing) = &buffer.store else { return Ok(()) };
        let mut wide = Vec::new();
        if !packed.is_empty() {
            wide = Vec::with_capacity(most);
            weft_storage::memhint::advise_huge_pages(&mut wide);
            wide.extend(packed.iter().map(|&p| packing.unpack(p)));
        }
        buffer.limit = if wide.capacity() > 0 { most } else { 0 };
        buffer.store = PairStore::Wide(wide);
        buffer.packed_scratch = Vec::new();
        Ok(())
    }

    /// A tuple without a pair came: the pairs so far go to the arena as tuples.
    fn leave_pair_form(&mut self) -> Result<()> {
        let Some(PairBuffer { form, store, .. }) = self.pairs.take() else { return Ok(()) };
        let mut tuple = Vec::new();
        for ordinal in 0..store.len() {
            let pair = store.get(ordinal);
            form.rebuild(pair, &mut tuple);
            self.add_to_memory(&tuple, pair.abbrev)?;
        }
        Ok(())
    }

    fn add_to_memory(&mut self, tuple: &[u8], abbrev: u64) -> Result<()> {
        let growth = self.mem.growth_for(tuple.len());
        let budget = self.shared.options.budget;
        let limit = self.shared.options.sub_run_bytes.min(budget.saturating_sub(self.mem_runs_bytes));
        if self.mem.bytes() + growth > limit && !self.mem.is_empty() {
            self.close_sub_run()?;
        }
        self.mem.push(tuple, abbrev);
        self.peak_memory = self.peak_memory.max(self.mem.bytes() + self.mem_runs_bytes);
        Ok(())
    }

    /// Is this the sort's only participant (planned so, not just the only one to come)?
    fn serial(&self) -> bool {
        self.shared.participants == 1
    }

    /// Does this participant leave its sub-runs or tape runs as they are instead of
    /// merging them into one? A serial sort does (its final merge reads them on the fly),
    /// and so does a participant of a partitioned sort, whose key-range merges read every
    /// run of every participant anyway: merging its own runs first would copy its whole
    /// share once more (and at a small budget write it to tape once more).
    fn keeps_runs(&self) -> bool {
        self.serial() || self.shared.options.strategy == SortStrategy::Partition
    }

    /// Runs this participant may leave unmerged: its share of one merge's order, so that
    /// a merge of every participant's runs fits the budget.
    fn runs_kept_at_most(&self) -> usize {
        (merge_order(self.shared.options.budget) / self.shared.participants.max(1)).max(1)
    }

    /// Sort the current sub-run and lay it out beside the others, whatever the budget
    /// (it is already in memory; only its copy is added, briefly).
    fn close_sub_run_in_memory(&mut self) {
        if self.mem.is_empty() {
            return;
        }
        self.mem.sort(&self.shared.keys, self.exact());
        let run = self.mem.lay_out();
        self.peak_memory = self.peak_memory.max(self.mem.bytes() + self.mem_runs_bytes + run.bytes());
        self.mem_runs_bytes += run.bytes();
        self.mem_runs.push(run);
        // Keep the buffer's memory for the next sub-run while the budget leaves room for
        // a full one beside the runs (no page faults on refill); else give it back.
        if self.mem.bytes() <= self.shared.options.budget.saturating_sub(self.mem_runs_bytes) / 2 {
            self.mem.reset();
        } else {
            self.mem.clear();
        }
    }

    fn exact(&self) -> bool {
        self.abbreviating && self.shared.keys.abbreviation_is_exact()
    }

    /// The sub-run is full: sort it and lay it out in order, or, when that copy would not
    /// fit the budget beside the sub-runs already laid out, write all of them to tape as
    /// one run.
    fn close_sub_run(&mut self) -> Result<()> {
        if self.mem_runs_bytes + 2 * self.mem.bytes() > self.shared.options.budget {
            self.mem.sort(&self.shared.keys, self.exact());
            return self.spill();
        }
        self.close_sub_run_in_memory();
        Ok(())
    }

    /// The merge inputs of everything held in memory: laid-out sub-runs (given up as
    /// they are read) and the sorted current sub-run.
    fn memory_inputs(&mut self) -> Vec<MergeInput<'_>> {
        self.mem_runs_bytes = 0;
        let mut inputs: Vec<MergeInput> =
            std::mem::take(&mut self.mem_runs).into_iter().map(|run| MergeInput::Memory(MemRunReader::whole(run))).collect();
        if !self.mem.is_empty() {
            inputs.push(MergeInput::sorted(&self.mem));
        }
        inputs
    }

    /// Write everything in memory to tape as one sorted run (the current sub-run must be
    /// sorted).
    fn spill(&mut self) -> Result<()> {
        let shared = self.shared;
        if self.writer.is_none() {
            shared.trace(format!(
                "participant {} switching to external sort after {} rows ({} kB in memory)",
                self.index,
                self.rows,
                (self.mem.bytes() + self.mem_runs_bytes + self.pairs.as_ref().map_or(0, PairBuffer::bytes)) / 1024
            ));
            self.writer = Some(TapeWriter::new(shared.temp_files()?, &format!("p{}", self.index))?);
        }
        if let Some(buffer) = self.pairs.as_ref() {
            self.peak_memory = self.peak_memory.max(buffer.bytes());
        }
        let began = Instant::now();
        let mut writer = self.writer.take().expect("created");
        let outcome = match self.pairs.as_mut() {
            Some(buffer) => write_pairs(buffer, shared.options.budget, &mut writer, &shared.options.cancel).and_then(|()| writer.end_run()),
            None => (|| {
                let keys = shared.keys.clone();
                write_merged(Merger::new(keys, self.memory_inputs())?, &mut writer, &shared.options.cancel)?;
                writer.end_run()
            })(),
        };
        self.writer = Some(writer);
        let run = outcome?;
        shared.trace(format!(
            "participant {} finished writing run {}: {} rows, {} kB, {:.3} s",
            self.index,
            self.runs.len() + 1,
            run.count,
            (run.end - run.start) / 1024,
            began.elapsed().as_secs_f64()
        ));
        self.runs.push(run);
        // The next run fills the same buffers: keeping them spares it the page faults
        // of a new arena and the reallocations of a growing pair array (still counted
        // by `bytes()`, so the budget holds).
        self.mem.reset();
        Ok(())
    }

    /// Leave this participant's one run in the shared state.
    pub fn finish(mut self) -> Result<()> {
        let shared = self.shared;
        let budget = shared.options.budget;
        let (runs, method, space, space_bytes, runs_written, merge_passes) = if let Some(topn) = self.topn.take() {
            let sorted = topn.into_sorted(&shared.keys).lay_out();
            (vec![Run::Memory(Arc::new(sorted))], SortMethod::TopNHeapsort, SortSpace::Memory, self.peak_memory as u64, 0, 0)
        } else if self.runs.is_empty() && self.pairs.is_some() {
            // Everything fit in pair form: one radix sort, and the pairs are the run.
            let mut buffer = self.pairs.take().expect("checked");
            self.peak_memory = self.peak_memory.max(buffer.bytes());
            let sorting = Instant::now();
            buffer.sort(budget);
            shared.trace(format!(
                "participant {} sorted {} pairs in memory: {:.3} s",
                self.index,
                buffer.store.len(),
                sorting.elapsed().as_secs_f64()
            ));
            let run = PairRun { form: buffer.form, store: buffer.store };
            (vec![Run::Pairs(Arc::new(run))], SortMethod::Quicksort, SortSpace::Memory, self.peak_memory as u64, 0, 0)
        } else if self.runs.is_empty() && self.keeps_runs() {
            // A serial sort has no one to hand a single run to: like PostgreSQL's, its
            // final merge reads the sub-runs on the fly, without merging them first. A
            // partitioned sort's range merges read them the same way.
            self.close_sub_run_in_memory();
            let runs = std::mem::take(&mut self.mem_runs).into_iter().map(|r| Run::Memory(Arc::new(r))).collect();
            (runs, SortMethod::Quicksort, SortSpace::Memory, self.peak_memory as u64, 0, 0)
        } else if self.runs.is_empty() {
            // Everything fit: merge the sub-runs in memory into the one run.
            self.mem.sort(&shared.keys, self.exact());
            let run = if self.mem_runs.is_empty() {
                self.mem.lay_out()
            } else {
                let chunk_size = self.mem.chunk_size();
                let keys = shared.keys.clone();
                let cancel = shared.options.cancel.clone();
                let mut merger = Merger::new(keys, self.memory_inputs())?;
                let mut writer = MemRunWriter::new(chunk_size);
                let mut n = 0u64;
                while let Some(tuple) = merger.next()? {
                    writer.write(tuple);
                    n += 1;
                    if n % CANCEL_CHECK_ROWS == 0 {
                        cancel.check()?;
                    }
                }
                writer.finish()
            };
            self.mem.clear();
            (vec![Run::Memory(Arc::new(run))], SortMethod::Quicksort, SortSpace::Memory, self.peak_memory as u64, 0, 0)
        } else {
            let pairs_left = self.pairs.as_ref().is_some_and(|b| !b.store.is_empty());
            let only_pairs_left = pairs_left && self.mem.is_empty() && self.mem_runs.is_empty();
            let mut last_in_memory = None;
            if only_pairs_left && self.keeps_runs() {
                // The last run of pairs stays where it is: the merges that read runs on
                // the fly read it in memory, and it is never written nor read back. Its
                // array is this participant's budget, held until those merges end.
                let mut buffer = self.pairs.take().expect("checked");
                self.peak_memory = self.peak_memory.max(buffer.bytes());
                buffer.sort(budget);
                last_in_memory = Some(Run::Pairs(Arc::new(PairRun { form: buffer.form, store: buffer.store })));
            } else if !self.mem.is_empty() || !self.mem_runs.is_empty() || pairs_left {
                self.mem.sort(&shared.keys, self.exact());
                self.spill()?;
            }
            let runs_written = self.runs.len();
            let temp = shared.temp_files()?;
            let runs = std::mem::take(&mut self.runs);
            // A serial sort's final merge (or a partitioned sort's range merges) reads the
            // runs on the fly when one merge can take them all; a participant of a
            // leader-merged sort leaves exactly one run, as PostgreSQL's does.
            let most = if self.keeps_runs() { self.runs_kept_at_most().saturating_sub(last_in_memory.is_some() as usize) } else { 1 };
            let (runs, passes) = merge_down_to(shared, &temp, self.index, runs, most, budget)?;
            // What this share occupies on disk once sorted (passes reuse freed space).
            let disk = runs.iter().map(|r| r.end - r.start).sum();
            let runs = runs.into_iter().map(Run::Tape).chain(last_in_memory).collect();
            (runs, SortMethod::ExternalMerge, SortSpace::Disk, disk, runs_written, passes)
        };
        let elapsed = self.started.elapsed();
        shared.trace(format!(
            "participant {} done: {} rows, {} runs written, {} {} kB, {:.3} s",
            self.index,
            self.rows,
            runs_written,
            method.name(),
            space_bytes / 1024,
            elapsed.as_secs_f64()
        ));
        shared.reports.lock().push(ParticipantReport {
            index: self.index,
            rows: self.rows,
            runs_written,
            merge_passes,
            method,
            space,
            space_bytes,
            elapsed,
        });
        shared.runs.lock().extend(runs.into_iter().map(|run| (self.index, run)));
        Ok(())
    }
}

/// Write a merge's output to the tape's current run (a merge of pairs as pairs).
fn write_merged(mut merger: Merger<'_>, writer: &mut TapeWriter, cancel: &CancelToken) -> Result<()> {
    let mut n = 0u64;
    if let Some(form) = merger.pair_form() {
        while let Some(pair) = merger.next_pair()? {
            writer.write_pair(&form, pair)?;
            n += 1;
            if n % CANCEL_CHECK_ROWS == 0 {
                cancel.check()?;
            }
        }
        return Ok(());
    }
    while let Some(tuple) = merger.next()? {
        writer.write(tuple)?;
        n += 1;
        if n % CANCEL_CHECK_ROWS == 0 {
            cancel.check()?;
        }
    }
    Ok(())
}

/// Sort a participant's pairs and write them, as pairs, to the tape's current run; the
/// buffer keeps its memory for the next ones.
fn write_pairs(buffer: &mut PairBuffer, budget: usize, writer: &mut TapeWriter, cancel: &CancelToken) -> Result<()> {
    buffer.sort(budget);
    let chunk = CANCEL_CHECK_ROWS as usize;
    match &buffer.store {
        PairStore::Wide(pairs) => {
            for part in pairs.chunks(chunk) {
                cancel.check()?;
                writer.write_pairs(&buffer.form, part)?;
            }
        }
        PairStore::Packed(pairs, packing) => {
            for part in pairs.chunks(chunk) {
                cancel.check()?;
                writer.write_packed(packing, part)?;
            }
        }
    }
    buffer.clear();
    Ok(())
}

/// Merge a participant's runs until at most `most` remain (one for a leader-merged sort;
/// a share of one merge's order when a later merge reads them on the fly), in as many
/// passes as the merge order needs; returns the runs and the number of passes.
fn merge_down_to(
    shared: &SharedSort,
    temp: &Arc<TempFileSet>,
    index: usize,
    mut runs: Vec<TapeRun>,
    most: usize,
    budget: usize,
) -> Result<(Vec<TapeRun>, usize)> {
    let order = merge_order(budget);
    let most = most.clamp(1, order);
    let mut pass = 0;
    while runs.len() > most {
        pass += 1;
        let began = Instant::now();
        // Rewrite no more than needed: a last pass of `order` runs can leave `most`, so
        // earlier passes merge the smallest few, just enough that the passes after them
        // are full (Huffman's rule: the fewest bytes rewritten).
        let last_pass_from = most + order - 1;
        let take = if runs.len() <= last_pass_from {
            runs.len() - most + 1
        } else {
            order.min(runs.len() - last_pass_from + 1)
        };
        runs.sort_by_key(|r| std::cmp::Reverse(r.end - r.start));
        let group = runs.split_off(runs.len() - take);
        let buffer = read_buffer_bytes(budget, group.len());
        let inputs = group.iter().map(|run| MergeInput::Tape(RunReader::new(run, run.start, run.count, buffer))).collect();
        let mut writer = TapeWriter::new(temp.clone(), &format!("p{index}.pass{pass}"))?;
        write_merged(Merger::new(shared.keys.clone(), inputs)?, &mut writer, &shared.options.cancel)?;
        runs.push(writer.end_run()?);
        shared.trace(format!(
            "participant {index}: merge pass {pass}: {take} runs into 1, {} left (merge order {order}), {:.3} s",
            runs.len(),
            began.elapsed().as_secs_f64()
        ));
        // Files no remaining run lives in are consumed: give their space back now.
        let mut consumed: Vec<&PathBuf> = group.iter().map(|r| &*r.path).filter(|p| runs.iter().all(|r| &*r.path != *p)).collect();
        consumed.sort();
        consumed.dedup();
        for path in consumed {
            let _ = std::fs::remove_file(path);
        }
    }
    Ok((runs, pass))
}

/// A memory run position as a `RunPosition` offset: chunk in the high half.
fn pack(position: MemPosition) -> u64 {
    (position.chunk as u64) << 32 | position.offset as u64
}

fn mem_position(position: RunPosition) -> MemPosition {
    MemPosition { ordinal: position.ordinal, chunk: (position.offset >> 32) as u32, offset: position.offset as u32 }
}

/// Where a key range starts within one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunPosition {
    pub ordinal: u64,
    /// Byte offset in the run's file, or a memory run's packed (chunk, offset).
    offset: u64,
}

/// The cut points of every run: `bounds[run][range]` is where `range` starts in `run`;
/// `bounds[run][ranges]` is the run's end.
#[derive(Clone, Debug)]
pub struct Partitioning {
    bounds: Vec<Vec<RunPosition>>,
    ranges: usize,
}

impl Partitioning {
    pub fn ranges(&self) -> usize {
        self.ranges
    }

    /// Tuples in one range, over all runs.
    pub fn range_len(&self, range: usize) -> u64 {
        self.bounds.iter().map(|b| b[range + 1].ordinal - b[range].ordinal).sum()
    }
}

/// The participants' runs, unified: what the output is merged from.
pub struct SortedRuns {
    keys: Arc<SortKeys>,
    runs: Vec<Run>,
    reports: Vec<ParticipantReport>,
    /// Holds the temp files until the output has been read.
    temp: Option<Arc<TempFileSet>>,
    budget: usize,
    strategy: SortStrategy,
    trace: Option<TraceFn>,
    run_phase: Duration,
    participants: usize,
}

/// Samples taken from each run per range when choosing splitters.
const SAMPLES_PER_RANGE: usize = 128;

struct Sample<'a> {
    run: usize,
    ordinal: u64,
    offset: u64,
    tuple: Cow<'a, [u8]>,
    weight: f64,
}

impl SortedRuns {
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }

    pub fn rows(&self) -> u64 {
        self.runs.iter().map(Run::count).sum()
    }

    fn trace(&self, line: String) {
        if let Some(trace) = &self.trace {
            trace(line);
        }
    }

    fn input(&self, run: usize, start: RunPosition, end: RunPosition, width: usize) -> MergeInput<'_> {
        match &self.runs[run] {
            Run::Memory(m) => {
                MergeInput::Memory(MemRunReader::new(RunHandle::Shared(m.clone()), mem_position(start), end.ordinal - start.ordinal))
            }
            Run::Tape(t) => {
                let buffer = read_buffer_bytes(self.budget, width);
                MergeInput::Tape(RunReader::new(t, start.offset, end.ordinal - start.ordinal, buffer))
            }
            Run::Pairs(p) => MergeInput::Pairs(PairRunReader::new(p.clone(), start.ordinal as usize, end.ordinal as usize)),
        }
    }

    fn start_of(&self, run: usize) -> RunPosition {
        match &self.runs[run] {
            Run::Memory(_) | Run::Pairs(_) => RunPosition { ordinal: 0, offset: 0 },
            Run::Tape(t) => RunPosition { ordinal: 0, offset: t.start },
        }
    }

    fn end_of(&self, run: usize) -> RunPosition {
        match &self.runs[run] {
            Run::Memory(m) => RunPosition { ordinal: m.count(), offset: pack(m.end()) },
            Run::Tape(t) => RunPosition { ordinal: t.count, offset: t.end },
            Run::Pairs(p) => RunPosition { ordinal: p.count(), offset: p.count() },
        }
    }

    /// PostgreSQL's way: one merge of every participant's run.
    pub fn merge_all(&self) -> Result<Merger<'_>> {
        let width = self.runs.len();
        self.trace(format!("leader merge of {width} runs"));
        let inputs = (0..width).map(|r| self.input(r, self.start_of(r), self.end_of(r), width)).collect();
        Merger::new(self.keys.clone(), inputs)
    }

    /// Cut every run into `ranges` key ranges of about equal size. A splitter is a
    /// (key, run, ordinal) triple, so equal keys can be cut anywhere: ranges stay balanced
    /// even when one key fills the table.
    pub fn partition(&self, ranges: usize) -> Result<Partitioning> {
        let ranges = ranges.max(1);
        let keys = &*self.keys;
        let mut samples: Vec<Sample> = Vec::new();
        for (r, run) in self.runs.iter().enumerate() {
            match run {
                Run::Memory(m) => {
                    let index = m.index();
                    let take = index.len().min(SAMPLES_PER_RANGE * ranges);
                    for i in 0..take {
                        let entry = &index[i * index.len() / take];
                        samples.push(Sample {
                            run: r,
                            ordinal: entry.ordinal,
                            offset: pack(MemPosition { ordinal: entry.ordinal, chunk: entry.chunk, offset: entry.offset }),
                            tuple: Cow::Borrowed(m.tuple_at(entry.chunk, entry.offset)),
                            weight: m.count() as f64 / take as f64,
                        });
                    }
                }
                Run::Tape(t) => {
                    let n = t.index.len();
                    let take = n.min(SAMPLES_PER_RANGE * ranges);
                    for i in 0..take {
                        let entry = &t.index[i * n / take];
                        samples.push(Sample {
                            run: r,
                            ordinal: entry.ordinal,
                            offset: entry.offset,
                            tuple: Cow::Borrowed(&entry.tuple),
                            weight: t.count as f64 / take as f64,
                        });
                    }
                }
                Run::Pairs(p) => {
                    let n = p.len();
                    let take = n.min(SAMPLES_PER_RANGE * ranges);
                    for i in 0..take {
                        let ordinal = (i * n / take) as u64;
                        samples.push(Sample {
                            run: r,
                            ordinal,
                            offset: ordinal,
                            tuple: Cow::Owned(p.tuple_at(ordinal as usize)),
                            weight: n as f64 / take as f64,
                        });
                    }
                }
            }
        }
        samples.sort_unstable_by(|a, b| {
            keys.compare(&a.tuple, &b.tuple).then(a.run.cmp(&b.run)).then(a.ordinal.cmp(&b.ordinal))
        });
        let total: f64 = samples.iter().map(|s| s.weight).sum();
        let mut splitters: Vec<&Sample> = Vec::with_capacity(ranges - 1);
        let mut cumulative = 0.0;
        for sample in &samples {
            // The first sample at or past each j/ranges quantile of the weight.
            while splitters.len() + 1 < ranges && cumulative >= total * (splitters.len() + 1) as f64 / ranges as f64 {
                splitters.push(sample);
            }
            cumulative += sample.weight;
        }
        let mut bounds = Vec::with_capacity(self.runs.len());
        for r in 0..self.runs.len() {
            let mut run_bounds = Vec::with_capacity(ranges + 1);
            run_bounds.push(self.start_of(r));
            for s in &splitters {
                let position = if r == s.run {
                    RunPosition { ordinal: s.ordinal, offset: s.offset }
                } else {
                    // Runs before the splitter's run put their equal keys before it.
                    let equal_goes_left = r < s.run;
                    self.bound_in_run(r, &s.tuple, equal_goes_left)?
                };
                run_bounds.push(position);
            }
            // Fewer splitters than ranges - 1 (tiny input): the last ranges are empty.
            while run_bounds.len() < ranges {
                run_bounds.push(self.end_of(r));
            }
            run_bounds.push(self.end_of(r));
            bounds.push(run_bounds);
        }
        let partitioning = Partitioning { bounds, ranges };
        self.trace(format!(
            "partitioned {} runs into {} key ranges of {:?} rows",
            self.runs.len(),
            ranges,
            (0..ranges).map(|j| partitioning.range_len(j)).collect::<Vec<_>>()
        ));
        Ok(partitioning)
    }

    /// The first position of run `r` whose tuple is after `key` (`equal_goes_left`) or not
    /// before it.
    fn bound_in_run(&self, r: usize, key: &[u8], equal_goes_left: bool) -> Result<RunPosition> {
        let keys = &*self.keys;
        let goes_left = |tuple: &[u8]| match keys.compare(tuple, key) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => equal_goes_left,
            std::cmp::Ordering::Greater => false,
        };
        match &self.runs[r] {
            Run::Memory(m) => {
                // The last sparse-index entry still left of the cut, then read forward.
                let index = m.index();
                let after = index.partition_point(|e| goes_left(m.tuple_at(e.chunk, e.offset)));
                if after == 0 {
                    return Ok(RunPosition { ordinal: 0, offset: 0 });
                }
                let entry = index[after - 1];
                let from = MemPosition { ordinal: entry.ordinal, chunk: entry.chunk, offset: entry.offset };
                let mut reader = MemRunReader::new(RunHandle::Shared(m.clone()), from, m.count() - entry.ordinal);
                let mut position = from;
                while reader.advance() {
                    if !goes_left(reader.current().expect("advanced")) {
                        break;
                    }
                    position = reader.position_after_current(position.ordinal + 1);
                }
                Ok(RunPosition { ordinal: position.ordinal, offset: pack(position) })
            }
            Run::Tape(t) => {
                // The last sparse-index entry still left of the cut, then read forward.
                let after = t.index.partition_point(|e: &IndexEntry| goes_left(&e.tuple));
                if after == 0 {
                    return Ok(RunPosition { ordinal: 0, offset: t.start });
                }
                let entry = &t.index[after - 1];
                let mut reader = RunReader::new(t, entry.offset, t.count - entry.ordinal, 64 * 1024);
                let mut position = RunPosition { ordinal: entry.ordinal, offset: entry.offset };
                while reader.advance()? {
                    if !goes_left(reader.current().expect("advanced")) {
                        break;
                    }
                    position = RunPosition { ordinal: position.ordinal + 1, offset: reader.offset_after_current() };
                }
                Ok(position)
            }
            Run::Pairs(p) => {
                let mut tuple = Vec::new();
                // The first pair that does not go left, by bisection.
                let (mut low, mut high) = (0, p.len());
                while low < high {
                    let middle = low + (high - low) / 2;
                    p.form.rebuild(p.get(middle), &mut tuple);
                    if goes_left(&tuple) {
                        low = middle + 1;
                    } else {
                        high = middle;
                    }
                }
                let cut = low as u64;
                Ok(RunPosition { ordinal: cut, offset: cut })
            }
        }
    }

    /// A merge of one key range of every run.
    pub fn merge_range(&self, partitioning: &Partitioning, range: usize) -> Result<Merger<'_>> {
        let width = self.runs.len();
        let inputs = (0..width)
            .filter(|&r| partitioning.bounds[r][range + 1].ordinal > partitioning.bounds[r][range].ordinal)
            .map(|r| self.input(r, partitioning.bounds[r][range], partitioning.bounds[r][range + 1], width))
            .collect();
        Merger::new(self.keys.clone(), inputs)
    }

    /// What the sort did; `merge_phase` and `serial_merge` are measured by the caller,
    /// which ran the merge.
    pub fn report(&self, merge_phase: Duration, serial_merge: Duration) -> SortReport {
        let method = if self.reports.iter().any(|r| r.method == SortMethod::ExternalMerge) {
            SortMethod::ExternalMerge
        } else if self.reports.iter().any(|r| r.method == SortMethod::TopNHeapsort) {
            SortMethod::TopNHeapsort
        } else {
            SortMethod::Quicksort
        };
        let space = if method == SortMethod::ExternalMerge { SortSpace::Disk } else { SortSpace::Memory };
        let space_bytes = self.reports.iter().filter(|r| r.space == space).map(|r| r.space_bytes).sum();
        let merge_passes = self.reports.iter().map(|r| r.merge_passes).max().unwrap_or(0);
        let report = SortReport {
            method,
            space,
            space_bytes,
            strategy: self.strategy,
            participants: self.reports.clone(),
            merge_width: self.runs.len(),
            merge_passes,
            temp_bytes: self.temp.as_ref().map_or(0, |t| t.bytes_written()),
            run_phase: self.run_phase,
            merge_phase,
            serial_merge,
        };
        self.trace(format!(
            "sort done: {} participants of {} planned, {} rows, {}, run phase {:.3} s, merge phase {:.3} s ({:.3} s serial)",
            self.reports.len(),
            self.participants,
            self.rows(),
            report.explain_line(),
            self.run_phase.as_secs_f64(),
            merge_phase.as_secs_f64(),
            serial_merge.as_secs_f64()
        ));
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of pairs split an expected share evenly and never exceed the budget.
    #[test]
    fn runs_of_pairs_split_a_share_evenly_within_the_budget() {
        let budget = 32 << 20;
        let most = pairs_in_budget(budget, 8);
        assert!(most * 8 + most / 2 <= budget, "a sixteenth of a pair for the second buffer");
        assert_eq!(pairs_per_run(budget, 8, None), most);
        assert_eq!(pairs_per_run(budget, 8, Some(most / 2)), most, "a share that fits takes one run");
        for share in [most + 1, 5_000_000, 3 * most - 7, 10 * most] {
            let per_run = pairs_per_run(budget, 8, Some(share));
            assert!(per_run <= most);
            let runs = share.div_ceil(per_run);
            assert_eq!(runs, share.div_ceil(most), "{share}: no more runs than the budget needs");
            assert!(share - (runs - 1) * per_run >= per_run / 2, "{share}: the last run is not a sliver");
        }
    }
}
