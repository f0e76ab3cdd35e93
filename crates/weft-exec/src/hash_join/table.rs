//! An in-memory hash table of a join's build side, built once before the probe by the
//! pipeline's participants, and probed by all of them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use weft_common::{Datum, Result};

use crate::execute::Sink;
use crate::expr::compare::GroupKey;
use crate::expr::EvalContext;
use crate::plan::{HashJoin, JoinType, Row};

/// The build side of one join, ready to probe.
pub(crate) struct JoinTable {
    rows: Vec<Row>,
    /// Key → indexes into `rows`; rows with a NULL key are kept only for outer joins.
    buckets: HashMap<GroupKey, Vec<u32>>,
    /// Right and full joins: which inner rows found a partner.
    matched: Vec<AtomicBool>,
    /// A NULL key was seen (NOT IN: then nothing qualifies).
    has_null_key: bool,
    /// Bytes the rows hold, roughly (EXPLAIN ANALYZE's `Memory Usage`).
    pub bytes: usize,
}

/// Rows a participant collected for the table, with their keys.
pub(crate) struct BuildSink<'j> {
    join: &'j HashJoin,
    eval: &'j EvalContext,
    parts: Mutex<Vec<Vec<(Option<GroupKey>, Row)>>>,
}

impl<'j> BuildSink<'j> {
    pub fn new(join: &'j HashJoin, eval: &'j EvalContext) -> BuildSink<'j> {
        BuildSink { join, eval, parts: Mutex::new(Vec::new()) }
    }

    pub fn into_table(self) -> JoinTable {
        let parts = self.parts.into_inner();
        let count: usize = parts.iter().map(Vec::len).sum();
        let mut rows = Vec::with_capacity(count);
        let mut buckets: HashMap<GroupKey, Vec<u32>> = HashMap::with_capacity(count);
        let mut has_null_key = false;
        let mut bytes = 0;
        for (key, row) in parts.into_iter().flatten() {
            bytes += row.iter().map(datum_bytes).sum::<usize>() + 16;
            let index = rows.len() as u32;
            rows.push(row);
            match key {
                Some(key) => buckets.entry(key).or_default().push(index),
                None => has_null_key = true,
            }
        }
        let matched = if self.join.join_type.emits_unmatched_inner() {
            (0..rows.len()).map(|_| AtomicBool::new(false)).collect()
        } else {
            Vec::new()
        };
        JoinTable { rows, buckets, matched, has_null_key, bytes }
    }
}

fn datum_bytes(d: &Datum) -> usize {
    match d {
        Datum::Text(t) => 24 + t.len(),
        _ => 16,
    }
}

impl Sink for BuildSink<'_> {
    type Local = Vec<(Option<GroupKey>, Row)>;

    fn local(&self) -> Result<Self::Local> {
        Ok(Vec::new())
    }

    fn push(&self, local: &mut Self::Local, row: &[Datum]) -> Result<bool> {
        let key = key_of(&self.join.inner_keys, row, self.eval)?;
        // A NULL-keyed inner row can only ever appear unmatched (right/full joins) or
        // decide NOT IN; other joins drop it here.
        if key.is_some() || self.join.join_type.emits_unmatched_inner() || self.join.null_aware {
            local.push((key, row.to_vec()));
        }
        Ok(true)
    }

    fn finish(&self, local: Self::Local) -> Result<()> {
        self.parts.lock().push(local);
        Ok(())
    }
}

/// The join key of a row; `None` when any part is NULL (it never matches).
fn key_of(exprs: &[crate::expr::Expr], row: &[Datum], eval: &EvalContext) -> Result<Option<GroupKey>> {
    let mut key = Vec::with_capacity(exprs.len());
    for e in exprs {
        let value = e.eval(row, eval)?;
        if value.is_null() {
            return Ok(None);
        }
        key.push(value);
    }
    Ok(Some(GroupKey(key)))
}

impl JoinTable {
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn buckets(&self) -> usize {
        self.buckets.len().next_power_of_two().max(1024)
    }

    /// Emit what `outer` produces against the table: joined rows, the outer row alone
    /// (semi/anti) or with NULLs (left/full), or nothing. `scratch` is reused for joined
    /// rows. Returns false when the sink asked to stop.
    pub fn probe(
        &self,
        join: &HashJoin,
        outer: &[Datum],
        eval: &EvalContext,
        scratch: &mut Row,
        emit: &mut dyn FnMut(&[Datum]) -> Result<bool>,
    ) -> Result<bool> {
        let key = key_of(&join.outer_keys, outer, eval)?;
        if join.null_aware {
            // NOT IN: any NULL inside means never true; a NULL outside is true only
            // against an empty subquery.
            if self.has_null_key {
                return Ok(true);
            }
            if key.is_none() {
                return if self.rows.is_empty() { emit(outer) } else { Ok(true) };
            }
        }
        let candidates: &[u32] = match &key {
            Some(key) => self.buckets.get(key).map(Vec::as_slice).unwrap_or(&[]),
            None => &[],
        };
        let mut any = false;
        for &index in candidates {
            let inner = &self.rows[index as usize];
            scratch.clear();
            scratch.extend_from_slice(outer);
            scratch.extend_from_slice(inner);
            if let Some(filter) = &join.filter {
                if !matches!(filter.eval(scratch, eval)?, Datum::Bool(true)) {
                    continue;
                }
            }
            any = true;
            match join.join_type {
                JoinType::Semi => return emit(outer),
                JoinType::Anti => return Ok(true),
                JoinType::Right | JoinType::Full => {
                    self.matched[index as usize].store(true, Ordering::Relaxed);
                }
                JoinType::Inner | JoinType::Left => {}
            }
            if !emit(scratch)? {
                return Ok(false);
            }
        }
        if !any && join.join_type.emits_unmatched_outer() {
            if join.join_type == JoinType::Anti {
                return emit(outer);
            }
            scratch.clear();
            scratch.extend_from_slice(outer);
            scratch.extend(std::iter::repeat_n(Datum::Null, join.inner_width));
            return emit(scratch);
        }
        Ok(true)
    }

    /// Right and full joins: every inner row no outer row matched, after NULLs for the
    /// outer columns.
    pub fn for_each_unmatched(&self, outer_width: usize, emit: &mut dyn FnMut(&[Datum]) -> Result<bool>) -> Result<()> {
        let mut row = Vec::new();
        for (inner, matched) in self.rows.iter().zip(&self.matched) {
            if matched.load(Ordering::Relaxed) {
                continue;
            }
            row.clear();
            row.extend(std::iter::repeat_n(Datum::Null, outer_width));
            row.extend_from_slice(inner);
            if !emit(&row)? {
                break;
            }
        }
        Ok(())
    }
}
