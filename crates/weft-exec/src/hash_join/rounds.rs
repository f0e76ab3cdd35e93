//! What follows a join's probe (phases 5 onwards, see `run.rs`): batch 0's unmatched
//! inner tuples, then one *round* per later batch — or per chunk of a batch too big for
//! the budget (a hot key) — in which all participants load the batch's inner blocks into
//! a table, probe it with the batch's outer blocks, and scan what stayed unmatched.
//!
//! A batch processed in chunks is probed by its whole outer side once per chunk. Which
//! outer rows matched is kept in a bitmap over the batch's outer rows (numbered by block
//! in a fixed order): a semi join emits a row at its first match only, and after the last
//! chunk anti, left and full joins emit the rows whose bit is clear. Right and full joins
//! emit each chunk's unmatched inner tuples after that chunk's probe, as for any batch.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use weft_common::{DataType, Datum, Error, Result};

use super::batch::{Block, Records};
use super::run::*;
use super::table::{emit_unmatched_outer, inner_keys, int_rows_type, is_marked, outer_keys, Arena, Buckets, IntKeyRange, IntProbe, JoinTable, OuterMarks, ProbeBuffers, BUCKETS_MIN, MAX_ARENAS};
use crate::execute::ExecContext;
use crate::plan::{HashJoin, JoinType};

/// The rounds after the probe, fixed once the outer side is written.
pub(crate) struct RoundPlan {
    pub rounds: Vec<Round>,
    pub chunked_batches: usize,
    /// Per batch, its inner and outer blocks; emptied after the batch's last round (its
    /// files are then removed).
    blocks: Mutex<Vec<(Vec<Block>, Vec<Block>)>>,
    /// Per batch, the number of the first outer row of each of its outer blocks.
    outer_start: Vec<Vec<usize>>,
    /// Per batch processed in chunks (semi, anti, left and full joins): matched outer rows.
    marks: Vec<Option<Box<[AtomicU64]>>>,
}

/// One batch, or one chunk of a batch's inner blocks.
#[derive(Clone, Debug)]
pub(crate) struct Round {
    pub batch: usize,
    pub blocks: Range<usize>,
    /// Its bucket array's length (see `SharedJoin::round_buckets`).
    pub buckets: usize,
    /// Its inner tuples (whether slots can hold them: `Buckets::slots`).
    pub tuples: usize,
    pub chunked: bool,
    pub last_chunk: bool,
}

/// The current round's table, and what goes into it.
#[derive(Default)]
pub(crate) struct RoundState {
    buckets: Option<Arc<Buckets>>,
    arenas: Vec<(usize, Arena)>,
    table: Option<Arc<JoinTable>>,
    /// The previous round's arenas (emptied) and bucket array, for the next round to
    /// fill: their memory is already faulted in.
    spare_arenas: Vec<Arena>,
    spare_buckets: Option<Buckets>,
}

impl RoundState {
    /// Keep `table`'s arenas and buckets for the next round, if nobody else holds them.
    fn recycle(&mut self, table: Option<Arc<JoinTable>>) {
        let Some(table) = table.and_then(|t| Arc::into_inner(t)) else { return };
        let (arenas, buckets) = table.into_parts();
        for mut arena in arenas {
            arena.clear();
            self.spare_arenas.push(arena);
        }
        if let Some(buckets) = Arc::into_inner(buckets) {
            self.spare_buckets = Some(buckets);
        }
    }

    /// An empty array of `n` buckets for `tuples` of `join` (slots when they fit), the
    /// spare one if it has that many.
    fn buckets_of(&mut self, n: usize, join: &HashJoin, tuples: usize) -> Buckets {
        match self.spare_buckets.take() {
            Some(mut spare) if spare.len() == n => {
                spare.clear(Buckets::slots_fit(join, n, tuples));
                spare
            }
            _ => Buckets::for_join(n, join, tuples),
        }
    }
}

impl RoundPlan {
    fn inner_block(&self, batch: usize, i: usize) -> Option<Block> {
        self.blocks.lock().get(batch).and_then(|(inner, _)| inner.get(i).cloned())
    }

    fn outer_block(&self, batch: usize, i: usize) -> Option<(Block, usize)> {
        let block = self.blocks.lock().get(batch).and_then(|(_, outer)| outer.get(i).cloned())?;
        Some((block, self.outer_start[batch][i]))
    }
}

impl<'p> SharedJoin<'p> {
    fn multi_batch(&self) -> bool {
        self.nbatch.load(Ordering::Acquire) > 1
    }

    /// The phase after this participant's last one, when known.
    fn done_phase(&self) -> Option<usize> {
        if !self.multi_batch() {
            return Some(if self.join.join_type.emits_unmatched_inner() { FIRST_ROUND } else { UNMATCHED });
        }
        self.plan.get().map(|plan| FIRST_ROUND + ROUND_PHASES * plan.rounds.len())
    }

    /// Hand over a prober's outer blocks (before it arrives at the end of the probe).
    pub(super) fn deposit_outer(&self, blocks: Vec<Vec<Block>>) {
        let mut outer = self.outer_blocks.lock();
        if outer.len() < blocks.len() {
            outer.resize(blocks.len(), Vec::new());
        }
        for (batch, mut list) in blocks.into_iter().enumerate() {
            outer[batch].append(&mut list);
        }
    }

    /// From `phase` (the probe, or the phase this participant attached at) to the end of
    /// the join; rows go to `out`, or where `counted` is `Some`, rows a probe of slots
    /// finds are added to it (see `JoinLocal::count_rows_only`). `table` is batch 0's,
    /// dropped before the first round.
    pub(super) fn finish(
        &self,
        phase: usize,
        table: &mut Option<Arc<JoinTable>>,
        counted: &mut Option<u64>,
        ctx: &ExecContext,
        out: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<()> {
        let result = self.finish_phases(phase, table, counted, ctx, out);
        self.finished.fetch_add(1, Ordering::Relaxed);
        result
    }

    fn finish_phases(
        &self,
        mut phase: usize,
        table: &mut Option<Arc<JoinTable>>,
        counted: &mut Option<u64>,
        ctx: &ExecContext,
        out: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<()> {
        let mut elected = false;
        // False once the sink asked to stop: this participant then only keeps step.
        let mut going = true;
        loop {
            if let Some(done) = self.done_phase() {
                if phase >= done {
                    self.barrier.detach();
                    return Ok(());
                }
            }
            match phase {
                PROBE => {}
                UNMATCHED => {
                    if elected && self.multi_batch() {
                        self.plan_rounds()?;
                    }
                    if going && self.join.join_type.emits_unmatched_inner() {
                        let batch0 = match table {
                            Some(t) => Some(t.clone()),
                            None => self.table.lock().clone(),
                        };
                        if let Some(t) = batch0 {
                            going = self.scan_unmatched(&t, &self.unmatched_cursor, ctx, out)?;
                        }
                    }
                    // Done with batch 0's table before arriving: the first round's elect
                    // then holds its only reference and reuses its memory.
                    *table = None;
                }
                p if p >= FIRST_ROUND => {
                    *table = None;
                    going = self.round_phase(p, elected, going, counted, ctx, out)?;
                }
                _ => return Err(Error::internal(format!("hash join finishing from build phase {phase}"))),
            }
            if self.done_phase() == Some(phase + 1) {
                self.barrier.arrive_and_detach();
                return Ok(());
            }
            elected = self.barrier.arrive_and_wait(ctx.cancel)?;
            phase += 1;
        }
    }

    /// Phase 6's one step: the rounds, from the blocks of both sides.
    fn plan_rounds(&self) -> Result<()> {
        let nbatch = self.nbatch.load(Ordering::Acquire);
        let evicted = self.batch0_evicted.load(Ordering::Acquire);
        let mut inner = std::mem::take(&mut self.build.lock().inner_blocks);
        let mut outer = std::mem::take(&mut *self.outer_blocks.lock());
        inner.resize(nbatch, Vec::new());
        outer.resize(nbatch, Vec::new());
        let join_type = self.join.join_type;
        let needs_marks = matches!(join_type, JoinType::Semi | JoinType::Anti | JoinType::Left | JoinType::Full);
        let mut rounds = Vec::new();
        let mut marks: Vec<Option<Box<[AtomicU64]>>> = (0..nbatch).map(|_| None).collect();
        let mut chunked_batches = 0;
        for batch in 0..nbatch {
            if batch == 0 && !evicted {
                continue;
            }
            let inner_tuples: usize = inner[batch].iter().map(|b| b.records as usize).sum();
            let outer_rows: usize = outer[batch].iter().map(|b| b.records as usize).sum();
            if (inner_tuples == 0 && !join_type.emits_unmatched_outer()) || (outer_rows == 0 && !join_type.emits_unmatched_inner()) {
                continue;
            }
            // One round when the batch fits the budget with a dense enough bucket array;
            // else chunks of consecutive blocks, each with twice its tuples in buckets
            // within the budget.
            let inner_bytes: usize = inner[batch].iter().map(|b| b.bytes).sum();
            let mut chunks: Vec<(Range<usize>, usize, usize)> = Vec::new();
            match self.round_buckets(inner_tuples, inner_bytes) {
                Some(buckets) => chunks.push((0..inner[batch].len(), buckets, inner_tuples)),
                None => {
                    let (mut start, mut bytes, mut tuples) = (0, 0usize, 0usize);
                    for (i, block) in inner[batch].iter().enumerate() {
                        let total = bytes + block.bytes + Buckets::bytes_for(Buckets::count_for(tuples + block.records as usize));
                        if i > start && total > self.space_allowed {
                            chunks.push((start..i, Buckets::count_for(tuples), tuples));
                            (start, bytes, tuples) = (i, 0, 0);
                        }
                        bytes += block.bytes;
                        tuples += block.records as usize;
                    }
                    chunks.push((start..inner[batch].len(), Buckets::count_for(tuples), tuples));
                }
            }
            let chunked = chunks.len() > 1;
            if chunked {
                chunked_batches += 1;
                if needs_marks {
                    marks[batch] = Some((0..outer_rows.div_ceil(64)).map(|_| AtomicU64::new(0)).collect());
                }
            }
            let last = chunks.len() - 1;
            for (c, (blocks, buckets, tuples)) in chunks.into_iter().enumerate() {
                rounds.push(Round { batch, blocks, buckets, tuples, chunked, last_chunk: c == last });
            }
        }
        let outer_start = outer
            .iter()
            .map(|blocks| {
                let mut next = 0;
                blocks
                    .iter()
                    .map(|b| {
                        let first = next;
                        next += b.records as usize;
                        first
                    })
                    .collect()
            })
            .collect();
        let plan = RoundPlan { rounds, chunked_batches, blocks: Mutex::new(inner.into_iter().zip(outer).collect()), outer_start, marks };
        self.plan.set(plan).map_err(|_| Error::internal("hash join rounds planned twice"))
    }

    /// The bucket count of a batch of `tuples` tuples taking `bytes` processed in one
    /// round: twice the tuples (`Buckets::count_for`), or fewer — down to a quarter of
    /// the tuples — when that does not fit the budget; `None` when even that does not (the
    /// batch is then processed in chunks). A batch the build kept within the budget thus
    /// stays one round: with twice its tuples in buckets a full batch did not fit and was
    /// processed in two chunks, each of its outer rows read and probed twice (the 10M
    /// self-join at 4MB: 30 rounds for 15 batches), where a denser array only makes some
    /// chains a tuple longer.
    fn round_buckets(&self, tuples: usize, bytes: usize) -> Option<usize> {
        let least = (tuples / 4).max(BUCKETS_MIN);
        let mut n = Buckets::count_for(tuples);
        loop {
            if bytes + Buckets::bytes_for(n) <= self.space_allowed {
                return Some(n);
            }
            if n / 2 < least {
                return None;
            }
            n /= 2;
        }
    }

    /// One phase of round `(phase - FIRST_ROUND) / ROUND_PHASES`.
    fn round_phase(
        &self,
        phase: usize,
        elected: bool,
        going: bool,
        counted: &mut Option<u64>,
        ctx: &ExecContext,
        out: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        let plan = self.plan.get().ok_or_else(|| Error::internal("hash join rounds not planned"))?;
        let r = (phase - FIRST_ROUND) / ROUND_PHASES;
        let round = plan.rounds.get(r).ok_or_else(|| Error::internal("hash join round out of range"))?;
        match (phase - FIRST_ROUND) % ROUND_PHASES {
            BATCH_ELECT => {
                if elected {
                    self.prepare_round(plan, r);
                }
            }
            BATCH_LOAD => self.load_round(plan, round, ctx)?,
            BATCH_ASSEMBLE => {
                if elected {
                    self.assemble_round()?;
                }
            }
            BATCH_PROBE if going => return self.probe_round(plan, round, counted, ctx, out),
            BATCH_SCAN if going => return self.scan_round(plan, round, ctx, out),
            _ => {}
        }
        Ok(going)
    }

    /// *batch elect* (one): drop the previous table (and the blocks of a batch done
    /// with), make this round's bucket array, reset the claim counters.
    fn prepare_round(&self, plan: &RoundPlan, r: usize) {
        let batch0 = self.table.lock().take();
        let round = &plan.rounds[r];
        if let Some(previous) = r.checked_sub(1).map(|p| &plan.rounds[p]) {
            if previous.batch != round.batch {
                plan.blocks.lock()[previous.batch] = (Vec::new(), Vec::new());
            }
        }
        let mut state = self.round.lock();
        let previous = state.table.take();
        state.recycle(previous.or(batch0));
        state.arenas.clear();
        // Slots hold the whole round's table (no arena: see `load_round_slots`): as many
        // as its tuples need when the budget holds them.
        let slots = Buckets::slots_len(round.tuples);
        let in_slots = Buckets::slots_fit(self.join, slots, round.tuples) && Buckets::bytes_for(slots) <= self.space_allowed;
        let n = if in_slots { slots } else { round.buckets };
        // Slots over keys in a narrow enough range (all batches'): a bitmap of it.
        let dense = match self.build.lock().int_keys {
            IntKeyRange::Range(lo, hi) if in_slots && Buckets::dense_bytes(lo, hi, round.tuples).is_some() => {
                Buckets::dense(lo, hi, round.tuples, state.spare_buckets.take())
            }
            _ => None,
        };
        let buckets = match dense {
            Some(dense) => dense,
            None => state.buckets_of(n, self.join, round.tuples),
        };
        state.buckets = Some(Arc::new(buckets));
        for cursor in [&self.load_cursor, &self.probe_cursor, &self.scan_cursor, &self.outer_scan_cursor, &self.round_arena] {
            cursor.store(0, Ordering::Relaxed);
        }
    }

    /// *batch load* (all): inner blocks claimed one at a time into this participant's
    /// arena, inserted lock-free.
    fn load_round(&self, plan: &RoundPlan, round: &Round, ctx: &ExecContext) -> Result<()> {
        let buckets = self.round.lock().buckets.clone().ok_or_else(|| Error::internal("hash join round without buckets"))?;
        if buckets.is_slots() {
            return self.load_round_slots(plan, round, &buckets, ctx);
        }
        let mut arena: Option<(usize, Arena)> = None;
        let (mut buf, mut row, mut keys) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            ctx.cancel.check()?;
            let i = round.blocks.start + self.load_cursor.fetch_add(1, Ordering::Relaxed);
            if i >= round.blocks.end {
                break;
            }
            let block = plan.inner_block(round.batch, i).ok_or_else(|| Error::internal("hash join inner block missing"))?;
            block.read(&mut buf)?;
            let (_, a) = arena.get_or_insert_with(|| {
                let spare = self.round.lock().spare_arenas.pop();
                (self.round_arena.fetch_add(1, Ordering::Relaxed), spare.unwrap_or_else(|| Arena::new(self.join)))
            });
            let mut records = Records::new(&buf);
            if let Some(data_type) = Arena::int_row_type(self.join) {
                // Compact records first (a block's are all compact but for NULL keys).
                while let Some(value) = records.next_int(data_type)? {
                    a.push_int(value);
                }
            }
            while let Some((hash, keyed)) = records.next_into(self.join.inner_width, &mut row)? {
                let row_keys = if keyed { inner_keys(self.join, &row, ctx.eval, &mut keys)? } else { None };
                a.push(hash, row_keys, &row);
            }
        }
        if let Some((number, a)) = arena {
            if number >= MAX_ARENAS {
                return Err(Error::not_supported(format!("a parallel hash join with more than {MAX_ARENAS} participants")));
            }
            JoinTable::insert_arena(&buckets, number, &a, 0..a.len());
            self.round.lock().arenas.push((number, a));
        }
        Ok(())
    }

    /// [`SharedJoin::load_round`] into slots (`Buckets::slots`): each block's values go
    /// straight into the slots, without an arena — the slots are the whole table, as
    /// nothing but them is read by the probe of a join that never emits unmatched inner
    /// tuples.
    fn load_round_slots(&self, plan: &RoundPlan, round: &Round, buckets: &Buckets, ctx: &ExecContext) -> Result<()> {
        let (mut buf, mut row, mut values) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            ctx.cancel.check()?;
            let i = round.blocks.start + self.load_cursor.fetch_add(1, Ordering::Relaxed);
            if i >= round.blocks.end {
                return Ok(());
            }
            let block = plan.inner_block(round.batch, i).ok_or_else(|| Error::internal("hash join inner block missing"))?;
            block.read(&mut buf)?;
            let mut records = Records::new(&buf);
            values.clear();
            loop {
                while let Some(value) = records.next_int(DataType::Int4)? {
                    values.push(value);
                }
                // Any other record: a NULL key (matches nothing, and such a join never
                // emits an unmatched inner tuple) or a key written in full.
                match records.next_into(self.join.inner_width, &mut row)? {
                    None => break,
                    Some((_, keyed)) => {
                        if let (true, Some(Datum::Int4(value))) = (keyed, row.first()) {
                            values.push(*value as i64);
                        }
                    }
                }
            }
            buckets.insert_ints(&values);
        }
    }

    /// *batch assemble* (one): the arenas become the round's table.
    fn assemble_round(&self) -> Result<()> {
        let mut state = self.round.lock();
        let mut arenas = std::mem::take(&mut state.arenas);
        arenas.sort_by_key(|(number, _)| *number);
        if arenas.iter().enumerate().any(|(i, (n, _))| i != *n) {
            return Err(Error::internal("hash join arenas missing at assembly"));
        }
        let buckets = state.buckets.take().ok_or_else(|| Error::internal("hash join round without buckets"))?;
        let table = JoinTable::assemble(arenas.into_iter().map(|(_, a)| a).collect(), buckets, self.facts());
        self.peak_memory.fetch_max(table.bytes(), Ordering::Relaxed);
        state.table = Some(Arc::new(table));
        Ok(())
    }

    fn round_table(&self) -> Result<Arc<JoinTable>> {
        self.round.lock().table.clone().ok_or_else(|| Error::internal("hash join round table missing"))
    }

    /// *batch probe* (all): the batch's outer blocks claimed one at a time.
    fn probe_round(
        &self,
        plan: &RoundPlan,
        round: &Round,
        counted: &mut Option<u64>,
        ctx: &ExecContext,
        out: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        let table = self.round_table()?;
        let marks = if round.chunked { plan.marks[round.batch].as_deref() } else { None };
        let mut buffers = ProbeBuffers::default();
        buffers.cancel = Some(ctx.cancel.clone());
        let int_rows = int_rows_type(self.join);
        // Counting or not, as the participant's batch-0 probe; the count joins its own.
        let mut ints = IntProbe::default();
        ints.counted = counted.map(|_| 0);
        let going = self.probe_round_blocks(plan, round, marks, int_rows, &table, &mut ints, &mut buffers, ctx, out);
        if let (Some(total), Some(n)) = (counted.as_mut(), ints.counted) {
            *total += n;
        }
        going
    }

    /// [`SharedJoin::probe_round`]'s loop over the outer blocks.
    #[allow(clippy::too_many_arguments)]
    fn probe_round_blocks(
        &self,
        plan: &RoundPlan,
        round: &Round,
        marks: Option<&OuterMarks>,
        int_rows: Option<DataType>,
        table: &JoinTable,
        ints: &mut IntProbe,
        buffers: &mut ProbeBuffers,
        ctx: &ExecContext,
        out: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        let (mut buf, mut row, mut keys) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            ctx.cancel.check()?;
            let j = self.probe_cursor.fetch_add(1, Ordering::Relaxed);
            let Some((block, start)) = plan.outer_block(round.batch, j) else { return Ok(true) };
            block.read(&mut buf)?;
            if let Some(data_type) = int_rows {
                let mut records = Records::new(&buf);
                ints.values.clear();
                while let Some(value) = records.next_int(data_type)? {
                    ints.values.push(value);
                }
                // An outer row always has its key: every record is compact.
                if records.at_end() {
                    if !table.probe_ints(self.join, data_type, ints, marks.map(|m| (m, start)), out)? {
                        return Ok(false);
                    }
                    continue;
                }
            }
            let mut records = Records::new(&buf);
            // The mark of the first row waiting in `buffers`.
            let (mut k, mut first_waiting) = (start, start);
            while let Some((hash, _)) = records.next_into(self.join.outer_width, &mut row)? {
                let Some(keys) = outer_keys(self.join, &row, ctx.eval, &mut keys)? else {
                    return Err(Error::internal("an outer row without keys in a hash join batch file"));
                };
                if !buffers.has_pending() {
                    first_waiting = k;
                }
                let marks = marks.map(|m| (m, first_waiting));
                if !table.probe_keyed_batched(self.join, &row, keys, hash, ctx.eval, buffers, marks, out)? {
                    return Ok(false);
                }
                k += 1;
            }
            // Marks are numbered per block: no row waits across blocks.
            if buffers.has_pending() && !table.flush(self.join, ctx.eval, buffers, marks.map(|m| (m, first_waiting)), out)? {
                return Ok(false);
            }
        }
    }

    /// *batch scan* (all): unmatched inner tuples (right/full); after a chunked batch's
    /// last chunk, its outer rows no chunk matched (left, full, anti).
    fn scan_round(&self, plan: &RoundPlan, round: &Round, ctx: &ExecContext, out: &mut dyn FnMut(&[Datum]) -> Result<bool>) -> Result<bool> {
        if self.join.join_type.emits_unmatched_inner() && !self.scan_unmatched(&*self.round_table()?, &self.scan_cursor, ctx, out)? {
            return Ok(false);
        }
        if !(round.chunked && round.last_chunk && self.join.join_type.emits_unmatched_outer()) {
            return Ok(true);
        }
        if self.join.null_aware && self.facts().inner_has_null_key {
            return Ok(true);
        }
        let marks = plan.marks[round.batch].as_deref().ok_or_else(|| Error::internal("hash join chunked batch without marks"))?;
        let (mut buf, mut row, mut joined) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            ctx.cancel.check()?;
            let j = self.outer_scan_cursor.fetch_add(1, Ordering::Relaxed);
            let Some((block, start)) = plan.outer_block(round.batch, j) else { return Ok(true) };
            block.read(&mut buf)?;
            let mut records = Records::new(&buf);
            let mut k = start;
            while records.next_into(self.join.outer_width, &mut row)?.is_some() {
                if !is_marked(marks, k) && !emit_unmatched_outer(self.join, &row, &mut joined, out)? {
                    return Ok(false);
                }
                k += 1;
            }
        }
    }

    /// Right and full joins: `table`'s unmatched tuples, ranges claimed from `cursor`.
    fn scan_unmatched(
        &self,
        table: &JoinTable,
        cursor: &std::sync::atomic::AtomicUsize,
        ctx: &ExecContext,
        out: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        let total = table.tuples();
        loop {
            ctx.cancel.check()?;
            let first = cursor.fetch_add(CLAIM, Ordering::Relaxed);
            if first >= total {
                return Ok(true);
            }
            if !table.emit_unmatched(self.join.outer_width, first..(first + CLAIM).min(total), out)? {
                return Ok(false);
            }
        }
    }
}
