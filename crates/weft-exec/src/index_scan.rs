//! Index scans: entries of B-tree ranges in index order (the ranges first to last, or
//! last to first and each one backward), each turned into the pipeline's row — from the
//! heap row it points to, checked against the snapshot, or, for an index-only scan, from
//! the entry itself when it was written by the build (visible to every snapshot that sees
//! the index) and from the heap otherwise (an entry added by INSERT carries the
//! "check the heap" bit: its statement may have failed or not be visible yet).
//!
//! Conditions on index columns that the ranges do not bound (`key_filter`) are checked
//! on the entry's keys before the heap row is fetched. The pipeline's filter checks the
//! rest of the WHERE; the ranges themselves are exact (NULLs excluded by their bounds), so
//! the conjuncts they implement are not evaluated again.

use std::sync::atomic::{AtomicU64, Ordering};

use weft_access::btree::{BTree, ScanDirection};
use weft_access::heap;
use weft_common::{Datum, Result};

use crate::execute::ExecContext;
use crate::plan::IndexSource;

/// Entries between two cancellation checks.
const CANCEL_CHECK_ENTRIES: u64 = 1024;

/// Run the scan, handing each visible row to `emit` until it returns false; the heap
/// visits of an index-only scan are added to `heap_fetches`.
pub(crate) fn run(
    source: &IndexSource,
    ctx: &ExecContext,
    heap_fetches: &AtomicU64,
    emit: impl FnMut(&[Datum]) -> Result<bool>,
) -> Result<()> {
    let mut fetches = 0u64;
    let outcome = scan(source, ctx, &mut fetches, emit);
    heap_fetches.fetch_add(fetches, Ordering::Relaxed);
    outcome
}

fn scan(source: &IndexSource, ctx: &ExecContext, fetches: &mut u64, mut emit: impl FnMut(&[Datum]) -> Result<bool>) -> Result<()> {
    let table = &source.heap;
    let tree = BTree::open(ctx.pool, source.index_rel, &source.desc);
    // For index-only rows: where each produced column sits among the keys (and INCLUDE
    // columns, which `key_columns` lists after them).
    let key_of_column: Vec<Option<usize>> =
        table.columns.iter().map(|c| source.key_columns.iter().position(|k| k == c)).collect();
    let mut row: Vec<Datum> = Vec::with_capacity(table.columns.len());
    let mut seen = 0u64;
    let ranges: Box<dyn Iterator<Item = _>> = match source.direction {
        ScanDirection::Forward => Box::new(source.ranges.iter()),
        ScanDirection::Backward => Box::new(source.ranges.iter().rev()),
    };
    for (lower, upper) in ranges {
        ctx.cancel.check()?;
        let mut scan = tree.scan(lower.clone(), upper.clone(), source.direction)?;
        while let Some(entry) = scan.next()? {
            seen += 1;
            if seen.is_multiple_of(CANCEL_CHECK_ENTRIES) {
                ctx.cancel.check()?;
            }
            let word = source.desc.tid_word(entry);
            row.clear();
            let keys = if source.key_filter.is_some() || (source.index_only && !word.needs_heap_check()) {
                Some(source.desc.entry_datums(entry)?)
            } else {
                None
            };
            if let (Some(check), Some(keys)) = (&source.key_filter, &keys) {
                if !matches!(check.eval(keys, ctx.eval)?, Datum::Bool(true)) {
                    continue;
                }
            }
            if let (true, false, Some(keys)) = (source.index_only, word.needs_heap_check(), &keys) {
                row.extend(key_of_column.iter().map(|k| k.map_or(Datum::Null, |k| keys[k].clone())));
            } else {
                if source.index_only {
                    *fetches += 1;
                }
                let fetched = heap::fetch(ctx.pool, table.rel, word.tid(), |header, tuple| {
                    if !header.live_for(&table.snapshot, None) {
                        return Ok(false);
                    }
                    for &col in &table.columns {
                        row.push(table.layout.get(tuple, col)?);
                    }
                    Ok(true)
                })?;
                if fetched != Some(true) {
                    continue;
                }
            }
            if !emit(&row)? {
                return Ok(());
            }
        }
    }
    Ok(())
}
