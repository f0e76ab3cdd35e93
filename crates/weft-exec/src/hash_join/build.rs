//! The build phases of a join (0–4, see `run.rs`): hashing the inner side under the
//! budget, batch growth, and batch 0's table.
//!
//! Batch 0's tuples go to the participant's arena against a reservation of the shared
//! `space_used` (taken [`SharedJoin::reserve_chunk`] bytes at a time, so the counter is
//! touched once per many tuples); tuples of later batches go to the participant's batch
//! files, and each block written adds to its batch's size. When batch 0 cannot reserve,
//! or a later batch grows past the budget, the participant asks for growth and the
//! participants hashing double the number of batches together (PostgreSQL's
//! `ExecParallelHashIncreaseNumBatches`). Unlike PostgreSQL, which gives up and exceeds
//! its budget when a split does not shrink a batch, a batch that stays too big is
//! processed later in chunks — batch 0 included: its tuples are then *evicted* to batch
//! files like those of any later batch.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use weft_access::heap::{has_zone_value, page_zone};
use weft_common::parallel::ParticipantContext;
use weft_common::{Datum, Error, Result};
use weft_storage::zone_map::{BlockZone, ZoneMapBuild};
use weft_storage::BlockNumber;

use super::batch::{batch_of, BatchWriters, Records, Written, MAX_BATCHES};
use super::run::*;
use super::table::{eval_keys, inner_keys, key_hash, slot_value, slots_join, Arena, Buckets, IntKeyRange, JoinTable, BUCKETS_MIN, MAX_ARENAS};
use crate::execute::{is_identity, ExecContext, ParticipantStats, StepBuffers};
use crate::expr::Expr;
use crate::plan::{HashJoin, HeapSource, Source, Step};

/// The grow barrier's phases (its phase number modulo 4).
const GROW_ELECT: usize = 0;
const GROW_ALLOCATE: usize = 1;
const GROW_REPARTITION: usize = 2;
const GROW_DECIDE: usize = 3;

/// One participant's part of the build.
pub(super) struct BuildLocal {
    number: usize,
    arena: Arena,
    writers: Option<BatchWriters>,
    /// The number of batches this participant routes by (the shared one after growth).
    nbatch: usize,
    /// Bytes reserved in `space_used` and not used yet.
    reserved: usize,
    evicted: bool,
    keys: Vec<Datum>,
    rows_out: u64,
    tuples: u64,
    unkeyed: u64,
    /// The range of its keyed tuples' keys (a join that may use slots).
    int_keys: IntKeyRange,
}

impl<'p> SharedJoin<'p> {
    /// Attach and take part in the build phases; returns the phase this participant is in
    /// after them ([`PROBE`], or a later one it attached at).
    pub(super) fn run_build(&self, ctx: &ExecContext, participant: &ParticipantContext) -> Result<usize> {
        let mut phase = self.attach(ctx, participant)?;
        loop {
            match phase {
                ELECT => {
                    if self.barrier.arrive_and_wait(ctx.cancel)? {
                        self.allocate();
                    }
                    self.barrier.arrive_and_wait(ctx.cancel)?;
                    phase = HASH_INNER;
                }
                ALLOCATE => {
                    self.barrier.arrive_and_wait(ctx.cancel)?;
                    phase = HASH_INNER;
                }
                HASH_INNER => {
                    self.hash_inner(ctx)?;
                    if self.barrier.arrive_and_wait(ctx.cancel)? {
                        self.assemble(ctx)?;
                    }
                    self.barrier.arrive_and_wait(ctx.cancel)?;
                    phase = GROW_BUCKETS;
                }
                ASSEMBLE => {
                    self.barrier.arrive_and_wait(ctx.cancel)?;
                    phase = GROW_BUCKETS;
                }
                GROW_BUCKETS => {
                    let table = self.table.lock().clone().ok_or_else(|| Error::internal("hash join table used before it was assembled"))?;
                    if table.needs_insert {
                        // All: rebuild chains in the larger array, ranges claimed from a counter.
                        loop {
                            ctx.cancel.check()?;
                            let first = self.insert_cursor.fetch_add(CLAIM, Ordering::Relaxed);
                            if first >= table.tuples() {
                                break;
                            }
                            table.insert_range(first..(first + CLAIM).min(table.tuples()));
                        }
                    }
                    drop(table);
                    self.barrier.arrive_and_wait(ctx.cancel)?;
                    phase = PROBE;
                }
                _ => return Ok(phase),
            }
        }
    }

    /// Phase 1 (one): the first batches and batch 0's bucket array, from the estimate.
    fn allocate(&self) {
        let nbatch = self.nbatch.load(Ordering::Relaxed);
        let mut build = self.build.lock();
        build.batch_bytes = vec![0; nbatch];
        build.batch_tuples = vec![0; nbatch];
        build.inner_blocks = vec![Vec::new(); nbatch];
        // Dense slots for the whole build side, filled while hashing.
        if let Some((dense, (buckets, bytes))) = self.dense_up_front.and_then(|d| Some((d, Buckets::dense_up_front(d.lo, d.hi, d.values)?))) {
            build.buckets = Some(Arc::new(buckets));
            self.bucket_bytes.store(bytes, Ordering::Relaxed);
            self.original_buckets.store((dense.hi - dense.lo + 1) as usize, Ordering::Relaxed);
            return;
        }
        let estimate = (self.join.estimated_inner_rows.max(0.0) as usize) / nbatch;
        // The bucket array takes at most a quarter of the budget.
        let most = (self.space_allowed / 4 / Buckets::bytes_for(1)).max(1024).next_power_of_two() / 2;
        let count = Buckets::count_for(estimate).min(most.max(1024));
        // A table that may be kept in slots is indexed after its build (see `assemble`),
        // in an array made then for the tuples it has: `count` is only reserved here.
        let allocated = if slots_join(self.join) { BUCKETS_MIN } else { count };
        build.buckets = Some(Arc::new(Buckets::with_len(allocated)));
        self.bucket_bytes.store(Buckets::bytes_for(count), Ordering::Relaxed);
        self.original_buckets.store(count, Ordering::Relaxed);
    }

    /// Room for batch 0's tuples (besides the skew buckets' share).
    fn tuple_allowed(&self) -> usize {
        self.space_allowed.saturating_sub(self.bucket_bytes.load(Ordering::Relaxed) + self.skew_allowed)
    }

    /// Are skew buckets in use for a tuple of `hash` routed by `local`? (Several batches,
    /// batch 0 not evicted, a most common outer key.)
    fn skewed(&self, local: &BuildLocal, keyed: bool, hash: u64) -> bool {
        keyed && local.nbatch > 1 && !local.evicted && self.is_skew(hash)
    }

    /// Room for a skew tuple of `bytes`: in the skew buckets' share, or beyond it in batch
    /// 0's (false: batch 0 is full too).
    fn reserve_skew(&self, local: &mut BuildLocal, bytes: usize) -> bool {
        let before = self.skew_bytes.fetch_add(bytes, Ordering::AcqRel);
        let over = (before + bytes).saturating_sub(self.skew_allowed).min(bytes);
        if over == 0 {
            return true;
        }
        if over <= local.reserved || self.reserve(local, over) {
            local.reserved -= over;
            return true;
        }
        self.skew_bytes.fetch_sub(bytes, Ordering::AcqRel);
        false
    }

    /// Phase 2 (all): this participant's inner morsels.
    fn hash_inner(&self, ctx: &ExecContext) -> Result<()> {
        let began = Instant::now();
        let number = self.next_arena.fetch_add(1, Ordering::Relaxed);
        if number >= MAX_ARENAS {
            return Err(Error::not_supported(format!("a parallel hash join with more than {MAX_ARENAS} participants")));
        }
        let mut local = BuildLocal {
            number,
            arena: Arena::new(self.join),
            writers: None,
            nbatch: self.nbatch.load(Ordering::Acquire),
            reserved: 0,
            evicted: false,
            keys: Vec::with_capacity(self.join.inner_keys.len()),
            rows_out: 0,
            tuples: 0,
            unkeyed: 0,
            int_keys: IntKeyRange::Empty,
        };
        local.arena.reserve(self.reserve_tuples);
        let grow_phase = self.grow_barrier.attach();
        if grow_phase % 4 != GROW_ELECT {
            // A growth is under way: take part in it first.
            self.grow(&mut local, grow_phase, ctx)?;
        }
        local.nbatch = self.nbatch.load(Ordering::Acquire);
        let mut buffers = StepBuffers::new();
        let mut rows_in = 0u64;
        let dense = match self.dense_up_front {
            Some(_) => self.build.lock().buckets.clone().filter(|buckets| buckets.is_dense()),
            None => None,
        };
        let building_map = self.inner_zone_build.lock().is_some();
        let mut zones: Vec<(BlockNumber, BlockZone)> = Vec::new();
        // Dense slots made up front take each key straight (no arena, no batch, no growth:
        // they have room for every key the zone map allows).
        let read = match inner_key_column(self.join) {
            // The row is an integer key alone: read from each tuple, not decoded, and
            // inserted without going through the (empty) steps.
            Some((heap, column)) => self.source.run_numbered_pages(ctx, |_| true, |block, page| {
                // Every page read, also one without a visible tuple, for the zone map.
                if building_map {
                    zones.push((block, page_zone(page, &heap.layout, column)));
                }
                true
            }, |_, page, tuples| {
                if tuples.is_empty() {
                    return Ok(true);
                }
                rows_in += tuples.len() as u64;
                if self.build_deferred.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                for range in tuples {
                    let key = heap.layout.get(&page[range.clone()], column)?;
                    match &dense {
                        Some(buckets) => self.insert_dense(&mut local, buckets, &key),
                        None => self.insert(&mut local, std::slice::from_ref(&key), ctx)?,
                    }
                }
                Ok(true)
            }),
            None => self.source.run(ctx, |row| {
                rows_in += 1;
                // Another participant's deferred error: the rest of the build side is moot.
                if self.build_deferred.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                buffers.process(row, &self.join.inner.steps, ctx.eval, |inner| {
                    match &dense {
                        Some(buckets) => self.insert_dense(&mut local, buckets, &inner[0]),
                        None => self.insert(&mut local, inner, ctx)?,
                    }
                    Ok(true)
                })
            }),
        };
        if let Some(build) = self.inner_zone_build.lock().as_ref() {
            build.add_all(&zones);
        }
        match read {
            Err(error) if self.defers(&error) => {
                // This participant stops reading; the table stays partial and is never
                // used: the first outer row raises the error.
                let mut deferred = self.deferred_error.lock();
                if deferred.is_none() {
                    *deferred = Some(error);
                }
                self.build_deferred.store(true, Ordering::Relaxed);
            }
            other => other?,
        }
        self.end_hashing(&mut local, ctx)?;
        self.inner_stats.lock().push(ParticipantStats {
            rows_in,
            rows_out: local.rows_out,
            started: Duration::ZERO,
            first_row: None,
            finished: began.elapsed(),
        });
        Ok(())
    }

    /// Is `error`, raised while reading the build side, held back until an outer row
    /// comes? PostgreSQL fetches the first outer row before building (when the join
    /// never emits unmatched inner rows) and skips the build when there is none, so an
    /// error of the inner side's expressions (`abs(-2147483648)`, a division by zero:
    /// data exceptions, class 22) is only raised when the outer side has a row.
    /// Right and full joins build first in PostgreSQL too: their errors stand at once.
    fn defers(&self, error: &Error) -> bool {
        !self.join.join_type.emits_unmatched_inner() && error.sqlstate.0.starts_with("22")
    }

    /// One inner row, its int4 key alone, into dense slots made up front.
    #[inline]
    fn insert_dense(&self, local: &mut BuildLocal, buckets: &Buckets, key: &Datum) {
        local.rows_out += 1;
        match slot_value(key) {
            Some(value) => {
                local.tuples += 1;
                local.int_keys = local.int_keys.add(key);
                buckets.insert_dense(value);
            }
            // NOT IN: one NULL is all that matters; other joins drop NULL keys.
            None if self.join.null_aware => self.inner_null_key.store(true, Ordering::Relaxed),
            None => {}
        }
    }

    /// One inner row (after the build side's steps).
    fn insert(&self, local: &mut BuildLocal, row: &[Datum], ctx: &ExecContext) -> Result<()> {
        if self.growth.load(Ordering::Relaxed) == GROWTH_NEED_MORE {
            self.grow(local, GROW_ELECT, ctx)?;
        }
        if !local.evicted && self.batch0_evicted.load(Ordering::Relaxed) {
            self.evict(local)?;
        }
        local.rows_out += 1;
        // A plain column key is read from the row each time (not copied into `keys`).
        let key_column = self.join.inner_key_column();
        let keyed = match key_column {
            Some(column) => !row[column].is_null(),
            None => eval_keys(&self.join.inner_keys, row, ctx.eval, &mut local.keys)?,
        };
        let hash = if keyed {
            key_hash(key_slice(key_column, row, &local.keys))
        } else if self.join.null_aware {
            // NOT IN: one NULL is all that matters.
            self.inner_null_key.store(true, Ordering::Relaxed);
            return Ok(());
        } else if self.join.join_type.emits_unmatched_inner() {
            // Kept for right and full joins, spread over batches by a made-up hash.
            local.unkeyed += 1;
            key_hash(&[Datum::Int8(local.number as i64), Datum::Int8(local.unkeyed as i64)])
        } else {
            return Ok(());
        };
        local.tuples += 1;
        if keyed && slots_join(self.join) {
            local.int_keys = local.int_keys.add(&row[0]);
        }
        let keys = keyed.then(|| key_slice(key_column, row, &local.keys));
        let bytes = local.arena.tuple_bytes(keys, row);
        loop {
            let batch = if local.nbatch == 1 { 0 } else { batch_of(hash, local.nbatch) };
            if self.skewed(local, keyed, hash) {
                // A most common outer key's tuple: in memory whatever its batch.
                if self.reserve_skew(local, bytes) {
                    let keys = keyed.then(|| key_slice(key_column, row, &local.keys));
                    local.arena.push(hash, keys, row);
                    return Ok(());
                }
            } else {
                if batch != 0 || local.evicted {
                    return self.write_inner(local, batch, hash, keyed, row, bytes);
                }
                if bytes <= local.reserved || self.reserve(local, bytes) {
                    local.reserved -= bytes;
                    let keys = keyed.then(|| key_slice(key_column, row, &local.keys));
                    local.arena.push(hash, keys, row);
                    return Ok(());
                }
            }
            match self.growth.load(Ordering::Acquire) {
                GROWTH_DISABLED => {
                    self.batch0_evicted.store(true, Ordering::Release);
                    self.evict(local)?;
                }
                _ => {
                    self.batch0_full.store(true, Ordering::Release);
                    let _ = self.growth.compare_exchange(GROWTH_OK, GROWTH_NEED_MORE, Ordering::AcqRel, Ordering::Acquire);
                    self.grow(local, GROW_ELECT, ctx)?;
                }
            }
        }
    }

    /// Reserve room for at least `bytes` of batch 0's tuples.
    fn reserve(&self, local: &mut BuildLocal, bytes: usize) -> bool {
        let allowed = self.tuple_allowed();
        let mut used = self.space_used.load(Ordering::Relaxed);
        loop {
            let want = if used + bytes.max(self.reserve_chunk) <= allowed {
                bytes.max(self.reserve_chunk)
            } else if used + bytes <= allowed || (used == 0 && local.arena.len() == 0) {
                // The last room, or one tuple bigger than the whole budget (kept: no split
                // could help it).
                bytes
            } else {
                return false;
            };
            match self.space_used.compare_exchange_weak(used, used + want, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    local.reserved += want;
                    return true;
                }
                Err(actual) => used = actual,
            }
        }
    }

    /// Write an inner tuple to its batch's file.
    fn write_inner(&self, local: &mut BuildLocal, batch: usize, hash: u64, keyed: bool, row: &[Datum], bytes: usize) -> Result<()> {
        let writers = match &mut local.writers {
            Some(w) => w,
            slot @ None => slot.insert(self.writers("inner", local.nbatch)?),
        };
        if let Some(written) = writers.write(batch, hash, keyed, row, bytes)? {
            self.account(written);
        }
        Ok(())
    }

    /// A block written: its batch's size grows; past the budget, more batches are asked.
    fn account(&self, written: Written) {
        let mut build = self.build.lock();
        let Some(bytes) = build.batch_bytes.get_mut(written.batch) else { return };
        *bytes += written.bytes;
        let over = *bytes > self.tuple_allowed();
        build.batch_tuples[written.batch] += written.records as u64;
        drop(build);
        if over && written.batch != 0 {
            let _ = self.growth.compare_exchange(GROWTH_OK, GROWTH_NEED_MORE, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// Hand over this participant's blocks (every partial block written out).
    fn hand_over_blocks(&self, local: &mut BuildLocal) -> Result<()> {
        let Some(writers) = &mut local.writers else { return Ok(()) };
        let (blocks, added) = writers.take_blocks()?;
        for written in added {
            self.account(written);
        }
        let mut build = self.build.lock();
        for (batch, mut blocks) in blocks.into_iter().enumerate() {
            if let Some(list) = build.inner_blocks.get_mut(batch) {
                list.append(&mut blocks);
            } else if !blocks.is_empty() {
                return Err(Error::internal("hash join blocks of a batch that does not exist"));
            }
        }
        Ok(())
    }

    /// Batch 0 is evicted: this participant's batch-0 tuples go to batch 0's files (and
    /// skew tuples, skew buckets being given up with it, to their own batches').
    fn evict(&self, local: &mut BuildLocal) -> Result<()> {
        local.evicted = true;
        let freed = local.arena.bytes() + local.reserved;
        let mut arena = std::mem::replace(&mut local.arena, Arena::new(self.join));
        let nbatch = local.nbatch;
        arena.retain(|_| false, &mut |hash, keyed, row, bytes| self.write_inner(local, batch_of(hash, nbatch), hash, keyed, row, bytes))?;
        local.reserved = 0;
        self.space_used.fetch_sub(freed.min(self.space_used.load(Ordering::Relaxed)), Ordering::Relaxed);
        Ok(())
    }

    /// The end of this participant's hashing: hand over its blocks (taking part in any
    /// growth they call for), put its arena in the table, leave the growth barrier.
    fn end_hashing(&self, local: &mut BuildLocal, ctx: &ExecContext) -> Result<()> {
        loop {
            if self.growth.load(Ordering::Acquire) == GROWTH_NEED_MORE {
                self.grow(local, GROW_ELECT, ctx)?;
                continue;
            }
            if !local.evicted && self.batch0_evicted.load(Ordering::Acquire) {
                self.evict(local)?;
            }
            self.hand_over_blocks(local)?;
            if self.growth.load(Ordering::Acquire) != GROWTH_NEED_MORE {
                break;
            }
        }
        if let Some(w) = &mut local.writers {
            w.close();
        }
        self.space_used.fetch_sub(local.reserved, Ordering::Relaxed);
        local.reserved = 0;
        self.inner_rows.fetch_add(local.rows_out, Ordering::Relaxed);
        self.tuples.fetch_add(local.tuples, Ordering::Relaxed);
        let arena = std::mem::replace(&mut local.arena, Arena::new(self.join));
        let buckets = self.build.lock().buckets.clone().ok_or_else(|| Error::internal("hash join buckets not allocated"))?;
        // Inserted while no growth can start (this participant is still attached), and
        // outside the lock: the participants insert at once. A table that may be kept in
        // slots is inserted after assembly instead, once its tuples are counted.
        if !slots_join(self.join) {
            JoinTable::insert_arena(&buckets, local.number, &arena, 0..arena.len());
        }
        let mut build = self.build.lock();
        build.int_keys = build.int_keys.union(local.int_keys);
        build.deposited.push((local.number, arena));
        drop(build);
        self.grow_barrier.detach();
        Ok(())
    }

    /// Take part in batch growth from `phase` of the grow barrier until it is over.
    fn grow(&self, local: &mut BuildLocal, mut phase: usize, ctx: &ExecContext) -> Result<()> {
        loop {
            match phase % 4 {
                GROW_ELECT => {
                    // Hand over everything the repartition must see.
                    self.hand_over_blocks(local)?;
                    local.writers = None;
                    self.space_used.fetch_sub(local.reserved, Ordering::Relaxed);
                    local.reserved = 0;
                    self.build.lock().elect_batch0 += local.arena.len() as u64;
                    if self.grow_barrier.arrive_and_wait(ctx.cancel)? {
                        self.allocate_batches();
                    }
                }
                GROW_ALLOCATE => {
                    self.grow_barrier.arrive_and_wait(ctx.cancel)?;
                }
                GROW_REPARTITION => {
                    local.nbatch = self.nbatch.load(Ordering::Acquire);
                    self.repartition(local, ctx)?;
                    if self.grow_barrier.arrive_and_wait(ctx.cancel)? {
                        self.decide();
                    }
                }
                _ => {
                    debug_assert_eq!(phase % 4, GROW_DECIDE);
                    self.grow_barrier.arrive_and_wait(ctx.cancel)?;
                    if self.growth.load(Ordering::Acquire) != GROWTH_NEED_MORE {
                        local.nbatch = self.nbatch.load(Ordering::Acquire);
                        return Ok(());
                    }
                }
            }
            phase += 1;
        }
    }

    /// Growth *allocate* (one): twice the batches, a fresh bucket array, the old
    /// generation's blocks and arenas set out for the repartition.
    fn allocate_batches(&self) {
        let mut build = self.build.lock();
        let old = self.nbatch.load(Ordering::Relaxed);
        // Never past MAX_BATCHES (`decide` then gives growth up).
        let new = (old * 2).min(MAX_BATCHES);
        let mut old_tuples = std::mem::take(&mut build.batch_tuples);
        old_tuples.resize(old, 0);
        old_tuples[0] = build.elect_batch0 + build.deposited.iter().map(|(_, a)| a.len() as u64).sum::<u64>();
        build.old_tuples = old_tuples;
        build.elect_batch0 = 0;
        build.repartition_batch0 = 0;
        build.batch_bytes = vec![0; new];
        build.batch_tuples = vec![0; new];
        build.old_blocks = std::mem::take(&mut build.inner_blocks).into_iter().flatten().collect();
        build.inner_blocks = vec![Vec::new(); new];
        build.old_arenas = std::mem::take(&mut build.deposited);
        let count = build.buckets.as_ref().map_or(1024, |b| b.len());
        build.buckets = Some(Arc::new(Buckets::with_len(count)));
        self.space_used.store(0, Ordering::Relaxed);
        self.skew_bytes.store(0, Ordering::Relaxed);
        self.repartition_cursor.store(0, Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Relaxed);
        self.nbatch.store(new, Ordering::Release);
    }

    /// Growth *repartition* (all): this participant's arena, arenas of those done
    /// hashing, and old blocks, claimed one at a time, split by the new batch bits.
    fn repartition(&self, local: &mut BuildLocal, ctx: &ExecContext) -> Result<()> {
        let nbatch = local.nbatch;
        // Skew tuples stay in memory (growth happens before any eviction).
        let skew = |hash: u64| self.is_skew(hash);
        let stays = |hash: u64| batch_of(hash, nbatch) == 0 || skew(hash);
        let mut arena = std::mem::replace(&mut local.arena, Arena::new(self.join));
        arena.retain(stays, &mut |hash, keyed, row, bytes| self.write_inner(local, batch_of(hash, nbatch), hash, keyed, row, bytes))?;
        let (mut kept_bytes, mut kept) = (arena.bytes(), arena.len() as u64);
        let mut skew_bytes = if self.skew.is_empty() { 0 } else { arena.count_where(skew).1 };
        local.arena = arena;
        let buckets = self.build.lock().buckets.clone().ok_or_else(|| Error::internal("hash join buckets not allocated"))?;
        loop {
            ctx.cancel.check()?;
            let Some((number, mut arena)) = self.build.lock().old_arenas.pop() else { break };
            arena.retain(stays, &mut |hash, keyed, row, bytes| self.write_inner(local, batch_of(hash, nbatch), hash, keyed, row, bytes))?;
            if !slots_join(self.join) {
                JoinTable::insert_arena(&buckets, number, &arena, 0..arena.len());
            }
            kept_bytes += arena.bytes();
            kept += arena.len() as u64;
            if !self.skew.is_empty() {
                skew_bytes += arena.count_where(skew).1;
            }
            self.build.lock().deposited.push((number, arena));
        }
        let mut buf = Vec::new();
        let mut row = Vec::with_capacity(self.join.inner_width);
        // Not `local.keys`: they hold the keys of the tuple whose insertion asked for this
        // growth, which `insert` stores once the growth is over.
        let mut keys_scratch = Vec::with_capacity(self.join.inner_keys.len());
        loop {
            ctx.cancel.check()?;
            let i = self.repartition_cursor.fetch_add(1, Ordering::Relaxed);
            let Some(block) = self.build.lock().old_blocks.get(i).cloned() else { break };
            block.read(&mut buf)?;
            let mut records = Records::new(&buf);
            while let Some((hash, keyed)) = records.next_into(self.join.inner_width, &mut row)? {
                let keys = if keyed { inner_keys(self.join, &row, ctx.eval, &mut keys_scratch)? } else { None };
                let bytes = local.arena.tuple_bytes(keys, &row);
                self.write_inner(local, batch_of(hash, nbatch), hash, keyed, &row, bytes)?;
            }
        }
        // Skew tuples count in the skew share (its excess in batch 0's: see `decide`).
        self.space_used.fetch_add(kept_bytes - skew_bytes, Ordering::Relaxed);
        self.skew_bytes.fetch_add(skew_bytes, Ordering::Relaxed);
        self.build.lock().repartition_batch0 += kept;
        self.hand_over_blocks(local)
    }

    /// Growth *decide* (one): are all batches within budget now? A batch still over it
    /// that kept (nearly) every tuple of the batch it was split from is ruled by one hot
    /// key: growth stops (that batch is processed in chunks).
    fn decide(&self) {
        let mut build = self.build.lock();
        // The old generation's blocks are read: their files go.
        build.old_blocks = Vec::new();
        // Skew tuples beyond the skew share take batch 0's room.
        let skew_over = self.skew_bytes.load(Ordering::Relaxed).saturating_sub(self.skew_allowed);
        self.space_used.fetch_add(skew_over, Ordering::Relaxed);
        let nbatch = self.nbatch.load(Ordering::Relaxed);
        let allowed = self.tuple_allowed();
        let (mut over, mut skew) = (false, false);
        // Batch 0 could not take a tuple: a split that kept (nearly) all of its tuples —
        // one hot key, or skew tuples, which a split never moves — leaves it as full as
        // before though within budget, and the tuple would ask for growth again, doubling
        // the batches without end. Growth stops and batch 0 goes to batch files instead.
        if self.batch0_full.swap(false, Ordering::AcqRel)
            && (nbatch >= MAX_BATCHES || build.old_tuples.first().is_some_and(|&parent| split_kept_nearly_all(parent, build.repartition_batch0)))
        {
            over = true;
            skew = true;
        }
        for batch in 0..nbatch {
            let (bytes, tuples) = if batch == 0 {
                (self.space_used.load(Ordering::Relaxed), build.repartition_batch0)
            } else {
                (build.batch_bytes[batch], build.batch_tuples[batch])
            };
            if bytes > allowed {
                over = true;
                if build.old_tuples.get(batch % (nbatch / 2)).is_some_and(|&parent| split_kept_nearly_all(parent, tuples)) {
                    skew = true;
                }
            }
        }
        let growth = if !over {
            GROWTH_OK
        } else if skew || nbatch >= MAX_BATCHES {
            if self.space_used.load(Ordering::Relaxed) > allowed {
                // Batch 0 itself is too big: it goes to batch files too.
                self.batch0_evicted.store(true, Ordering::Release);
            }
            GROWTH_DISABLED
        } else {
            GROWTH_NEED_MORE
        };
        self.growth.store(growth, Ordering::Release);
    }

    /// Phase 3 (one): the deposited arenas become batch 0's table (or, batch 0 evicted,
    /// go to its files); the bucket array grows when far more tuples came than estimated.
    fn assemble(&self, ctx: &ExecContext) -> Result<()> {
        // Every participant has read its blocks: a map with all of them is published.
        if let Some(zone_build) = self.inner_zone_build.lock().take() {
            ctx.pool.zone_maps().publish(zone_build);
        }
        let mut build = self.build.lock();
        if build.buckets.as_ref().is_some_and(|buckets| buckets.is_dense()) {
            // Dense slots before assembly are made up front (others are made below) and
            // were filled while hashing: every tuple is in them, the arenas are empty.
            build.deposited.clear();
            let buckets = build.buckets.take().ok_or_else(|| Error::internal("hash join buckets not allocated"))?;
            let table = JoinTable::of_buckets(buckets, self.tuples.load(Ordering::Relaxed) as usize, build.int_keys, self.facts());
            self.table_buckets.store(table.buckets(), Ordering::Relaxed);
            self.peak_memory.fetch_max(table.bytes(), Ordering::Relaxed);
            drop(build);
            *self.table.lock() = Some(Arc::new(table));
            return Ok(());
        }
        let mut deposited = std::mem::take(&mut build.deposited);
        deposited.sort_by_key(|(number, _)| *number);
        let mut buckets = build.buckets.take().ok_or_else(|| Error::internal("hash join buckets not allocated"))?;
        let nbatch = self.nbatch.load(Ordering::Relaxed);
        if self.batch0_evicted.load(Ordering::Acquire) {
            // Arenas handed over before the eviction: to batch 0's files.
            let mut writers: Option<BatchWriters> = None;
            for (_, arena) in &mut deposited {
                arena.retain(|_| false, &mut |hash, keyed, row, bytes| {
                    let w = match &mut writers {
                        Some(w) => w,
                        slot @ None => slot.insert(self.writers("inner", nbatch)?),
                    };
                    w.write(batch_of(hash, nbatch), hash, keyed, row, bytes)?;
                    Ok(())
                })?;
            }
            if let Some(mut w) = writers {
                let (blocks, _) = w.take_blocks()?;
                for (batch, mut list) in blocks.into_iter().enumerate() {
                    build.inner_blocks[batch].append(&mut list);
                }
            }
            buckets = Arc::new(Buckets::with_len(buckets.len()));
        }
        // Arena numbers are dense: every participant that took one deposited it.
        if deposited.iter().enumerate().any(|(i, (n, _))| i != *n) {
            return Err(Error::internal("hash join arenas missing at assembly"));
        }
        let arenas: Vec<Arena> = deposited.into_iter().map(|(_, a)| a).collect();
        if nbatch > 1 && !self.skew.is_empty() && !self.batch0_evicted.load(Ordering::Acquire) {
            let skew_inner = arenas.iter().map(|a| a.count_where(|hash| batch_of(hash, nbatch) != 0 && self.is_skew(hash)).0).sum();
            self.skew_inner.store(skew_inner, Ordering::Relaxed);
        }
        let original = buckets.len();
        let mut table = JoinTable::assemble(arenas, buckets, self.facts());
        if slots_join(self.join) {
            // Nothing inserted yet (see `hash_inner`), and only a stand-in array made:
            // slots for the tuples when the bucket array reserved or the budget holds
            // them, else chains (the reserved count, or twice the tuples if that fits);
            // phase 4 inserts.
            let tuples = table.tuples();
            let reserved = self.original_buckets.load(Ordering::Relaxed);
            let tuple_bytes = table.bytes() - Buckets::bytes_for(original);
            let fits = |n: usize| n <= reserved || tuple_bytes + Buckets::bytes_for(n) <= self.space_allowed;
            // As few slots as leave a quarter free, whatever the estimate reserved: less
            // fresh memory to zero and fill (measured: a fifth of the CPU time of a 10M-row
            // one-batch self-join); the reserved heads only bound what the budget allows.
            let slots = Buckets::slots_len(tuples);
            let n = if Buckets::slots_fit(self.join, slots, tuples) && fits(slots) {
                slots
            } else if fits(Buckets::count_for(tuples)) {
                Buckets::count_for(tuples).max(reserved)
            } else {
                reserved
            };
            // Keys in a range narrow enough: a bitmap of it (dense slots), whenever it fits
            // — also where slots would not (a batch 0 filling the budget: 8 bytes a tuple
            // at most against their 10.7 or more).
            let dense_fits = |(lo, hi): (i64, i64)| {
                Buckets::dense_bytes(lo, hi, tuples).is_some_and(|bytes| bytes <= Buckets::bytes_for(reserved) || tuple_bytes + bytes <= self.space_allowed)
            };
            let dense = match table.int_key_bounds() {
                Some(bounds) if slots_join(self.join) && dense_fits(bounds) => Buckets::dense(bounds.0, bounds.1, tuples, None),
                _ => None,
            };
            match dense {
                Some(dense) => table.set_buckets(dense),
                None => table.index_anew(n, self.join),
            }
        } else if table.needs_more_buckets() {
            let more = Buckets::bytes_for(Buckets::count_for(table.tuples())) - Buckets::bytes_for(original);
            if table.bytes() + more <= self.space_allowed {
                table.grow_buckets();
            }
        }
        self.table_buckets.store(table.buckets(), Ordering::Relaxed);
        self.peak_memory.fetch_max(table.bytes(), Ordering::Relaxed);
        drop(build);
        *self.table.lock() = Some(Arc::new(table));
        Ok(())
    }
}

/// Did a split leave a batch with `kept` of its parent's `parent` tuples ruled by one hot
/// key? PostgreSQL stops growing only when a split moves none of them; a hot key beside
/// a few other keys then doubles the batches until each split moves nothing — up to
/// thousands of batches and files for one key (`MAX_BATCHES` here). Keeping 15/16 or more
/// says the same: the other keys are too few for further splits to bring the batch
/// within budget, and the chunked batch is processed within it anyway.
fn split_kept_nearly_all(parent: u64, kept: u64) -> bool {
    kept.saturating_mul(16) >= parent.saturating_mul(15)
}

/// The build side's heap and the table column of its one integer key, when its rows are
/// that key alone, scanned with no step between (`Arena::int_row_type`).
pub(super) fn inner_key_column(join: &HashJoin) -> Option<(&HeapSource, usize)> {
    let Source::Heap(heap) = &join.inner.source else { return None };
    let plain = join.inner.steps.is_empty() || is_identity(&join.inner.steps, heap.columns.len());
    (plain && heap.columns.len() == 1 && Arena::int_row_type(join).is_some()).then(|| (heap, heap.columns[0]))
}

/// A zone map build of the key column of `join`'s build side, when that side is the
/// column read whole from a heap ([`inner_key_column`]) and the column has no map.
pub(super) fn inner_zone_build(join: &HashJoin, ctx: &ExecContext) -> Option<ZoneMapBuild> {
    let (heap, column) = inner_key_column(join)?;
    let maps = ctx.pool.zone_maps();
    (has_zone_value(&heap.layout, column) && maps.get(heap.rel, column).is_none()).then(|| maps.begin_build(heap.rel, column, heap.nblocks)).flatten()
}

/// The build side's heap and the table column of its one integer key when its rows are
/// that key alone: read with no step between ([`inner_key_column`]), or through filters
/// and a projection of the column. Its values are then some of the column's (what the
/// column's zone map bounds and counts).
fn key_heap_column(join: &HashJoin) -> Option<(&HeapSource, usize)> {
    if let Some(plain) = inner_key_column(join) {
        return Some(plain);
    }
    let Source::Heap(heap) = &join.inner.source else { return None };
    let (Some(Step::Project(exprs)), filters) = join.inner.steps.split_last().map_or((None, &[][..]), |(last, rest)| (Some(last), rest)) else {
        return None;
    };
    let filters_only = filters.iter().all(|step| matches!(step, Step::Filter(_)));
    match exprs.as_slice() {
        [Expr::Column { index, .. }] if filters_only && Arena::int_row_type(join).is_some() => Some((heap, *heap.columns.get(*index)?)),
        _ => None,
    }
}

/// A build side that goes straight into dense slots made at *allocate*
/// ([`Buckets::dense_up_front`]): an int4 key column read from a heap (whole, or through
/// filters) whose zone map bounds the column's values and their number. Its table then
/// needs neither arenas nor batches: the 10M-row self-join's is a 1.2 MB bitmap, and the
/// extra slots for keys with several tuples are reserved in the budget but touched only
/// if such keys come.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DenseUpFront {
    lo: i64,
    hi: i64,
    values: usize,
}

impl DenseUpFront {
    /// For `join`, when its build side qualifies and the slots fit `space_allowed`.
    pub(crate) fn plan(join: &HashJoin, ctx: &ExecContext, space_allowed: usize) -> Option<DenseUpFront> {
        if !ctx.hash.dense_up_front || !slots_join(join) {
            return None;
        }
        let (heap, column) = key_heap_column(join)?;
        let map = ctx.pool.zone_maps().get(heap.rel, column)?;
        // The scan reads blocks 0..nblocks: the map must cover them all (a write since it
        // was built would have dropped it).
        if map.len() < heap.nblocks as usize {
            return None;
        }
        let (lo, hi) = map.bounds()?;
        let values = usize::try_from(map.values()).ok()?;
        let (_, _, bytes) = Buckets::dense_up_front_size(lo, hi, values)?;
        (bytes <= space_allowed).then_some(DenseUpFront { lo, hi, values })
    }
}

/// An inner row's keys: its key column, or the keys evaluated into `evaluated`.
#[inline]
fn key_slice<'a>(key_column: Option<usize>, row: &'a [Datum], evaluated: &'a [Datum]) -> &'a [Datum] {
    match key_column {
        Some(column) => std::slice::from_ref(&row[column]),
        None => evaluated,
    }
}
