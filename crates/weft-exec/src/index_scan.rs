//! Index scans: entries of a B-tree range in order, each turned into the pipeline's row —
//! from the heap row it points to (checked against the snapshot), or, for an index-only
//! scan, from the entry itself when it was written by the build (visible to every snapshot
//! that sees the index) and from the heap otherwise.

use weft_access::btree::BTree;
use weft_access::heap;
use weft_common::{Datum, Result};

use crate::execute::ExecContext;
use crate::plan::IndexSource;

/// Entries between two cancellation checks.
const CANCEL_CHECK_ENTRIES: u64 = 1024;

pub(crate) fn run(source: &IndexSource, ctx: &ExecContext, mut emit: impl FnMut(&[Datum]) -> Result<bool>) -> Result<()> {
    let table = &source.heap;
    let tree = BTree::open(ctx.pool, source.index_rel, &source.desc);
    // For index-only rows: where each produced column sits among the keys.
    let key_of_column: Vec<Option<usize>> =
        table.columns.iter().map(|c| source.key_columns.iter().position(|k| k == c)).collect();
    let mut row: Vec<Datum> = Vec::with_capacity(table.columns.len());
    let mut seen = 0u64;
    for (lower, upper) in &source.ranges {
        let mut scan = tree.scan(lower.clone(), upper.clone(), source.direction)?;
        while let Some(entry) = scan.next()? {
            seen += 1;
            if seen.is_multiple_of(CANCEL_CHECK_ENTRIES) {
                ctx.cancel.check()?;
            }
            let word = source.desc.tid_word(entry);
            row.clear();
            if source.index_only && !word.needs_heap_check() {
                let keys = source.desc.key_datums(entry)?;
                row.extend(key_of_column.iter().map(|k| k.map_or(Datum::Null, |k| keys[k].clone())));
            } else {
                let fetched = heap::fetch(ctx.pool, table.rel, word.tid(), |xmin, tuple| {
                    if !table.snapshot.is_visible(xmin) {
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
