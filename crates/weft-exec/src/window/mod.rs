//! Window functions: PostgreSQL's `WindowAgg` node.
//!
//! # Algorithm
//!
//! The planner puts a Sort on the partition keys then the window's ORDER BY keys below
//! the node (or a window node below it that already left the rows in such an order), so
//! a partition is a run of consecutive rows. The node reads its input one row at a time
//! ([`crate::sort::for_each_sorted_row`], straight from the sort's merge), buffers the
//! rows of the current partition, and when the partition ends:
//!
//! 1. finds its peer groups and, if a function reads frames, every row's frame
//!    (`frame.rs`);
//! 2. computes each function's value for every row (`functions.rs`);
//! 3. appends the values to the rows, applies the node's output steps, and emits them.
//!
//! ```text
//!   sorted input ──▶ [ rows of partition p ] ──(partition ends)──▶ peers, frames
//!                                                             └──▶ f1..fk per row ──▶ output steps ──▶ out
//! ```
//!
//! # Memory
//!
//! The node holds one partition at a time (the input rows of the next one are not read
//! before it is done), and one value per row per function. A partition must fit in
//! memory: weft does not spill a partition to disk (PostgreSQL keeps it in a tuplestore
//! that does). A `PARTITION BY` the data has few distinct values of, or none, therefore
//! holds its largest partition, which with no PARTITION BY is the whole input. The sort
//! below spills under `work_mem` as any sort does. The node's output is collected like
//! every plan node's (`execute` returns the rows).
//!
//! # Not supported
//!
//! `EXCLUDE` (the SQL parser does not read it yet), `DISTINCT` and `ORDER BY` inside a
//! window aggregate (PostgreSQL neither), `IGNORE NULLS`.

mod frame;
mod functions;
#[cfg(test)]
mod tests;

use std::ops::Range;
use std::time::Instant;

use weft_common::{Datum, Result};

use crate::execute::{execute, node_id, ExecContext, NodeStats, StepBuffers};
use crate::plan::{Plan, Row, WindowPlan};

pub use functions::window_result_type;

use self::frame::{same_keys, FrameSpec, Peers};
use self::functions::{evaluate, uses_frame, Partition};

/// Rows between two cancel checks.
const CANCEL_CHECK_ROWS: usize = 4096;

/// Run a window node: its rows, with the function values appended and `output` applied.
pub(crate) fn execute_window(window: &WindowPlan, ctx: &ExecContext) -> Result<Vec<Row>> {
    let frame = FrameSpec::new(&window.frame, &window.order_by, ctx.eval)?;
    let mut node = WindowNode { window, frame, ctx, partition: Vec::new(), out: Vec::new(), buffers: StepBuffers::new(), seen: 0 };
    match window.input.as_ref() {
        Plan::Sort(sort) => {
            crate::execute::sort_node_run(&window.input, ctx, || {
                let mut rows = 0u64;
                crate::sort::for_each_sorted_row(sort, ctx, crate::sort::RowWindow::ALL, |row| {
                    rows += 1;
                    node.push(row)?;
                    Ok(true)
                })?;
                Ok(((), rows))
            })?;
        }
        other => {
            for row in execute(other, ctx)? {
                node.push(row)?;
            }
        }
    }
    node.finish_partition()?;
    Ok(node.out)
}

/// The state of a running window node.
struct WindowNode<'a> {
    window: &'a WindowPlan,
    frame: FrameSpec,
    ctx: &'a ExecContext<'a>,
    /// The rows of the current partition.
    partition: Vec<Row>,
    out: Vec<Row>,
    buffers: StepBuffers,
    /// Input rows so far (for cancel checks).
    seen: usize,
}

impl WindowNode<'_> {
    fn push(&mut self, row: Row) -> Result<()> {
        self.seen += 1;
        if self.seen % CANCEL_CHECK_ROWS == 0 {
            self.ctx.cancel.check()?;
        }
        let keys = self.window.partition_by.iter().copied();
        if self.partition.last().is_some_and(|last| !same_keys(last, &row, keys)) {
            self.finish_partition()?;
        }
        self.partition.push(row);
        Ok(())
    }

    /// Compute the partition's values and emit its rows.
    fn finish_partition(&mut self) -> Result<()> {
        if self.partition.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.partition);
        let peers = Peers::new(&rows, &self.window.order_by);
        let frames: Vec<Range<usize>> = if self.window.functions.iter().any(uses_frame) {
            (0..rows.len()).map(|i| self.frame.bounds(&rows, &peers, i)).collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let part = Partition { rows: &rows, peers: &peers, frames: &frames, eval: self.ctx.eval };
        let values: Vec<Vec<Datum>> = self.window.functions.iter().map(|f| evaluate(f, &part)).collect::<Result<_>>()?;
        let mut columns: Vec<std::vec::IntoIter<Datum>> = values.into_iter().map(Vec::into_iter).collect();
        for mut row in rows {
            debug_assert_eq!(row.len(), self.window.input_width);
            row.extend(columns.iter_mut().map(|c| c.next().unwrap_or(Datum::Null)));
            if self.window.output.is_empty() {
                self.out.push(row);
                continue;
            }
            let out = &mut self.out;
            self.buffers.process(&row, &self.window.output, self.ctx.eval, |kept| {
                out.push(kept.to_vec());
                Ok(true)
            })?;
        }
        Ok(())
    }
}

/// Record the run of a window node (EXPLAIN ANALYZE).
pub(crate) fn record(plan: &Plan, ctx: &ExecContext, began: Instant, rows: usize) {
    ctx.nodes.lock().push(NodeStats { node: node_id(plan), rows: rows as u64, elapsed: began.elapsed(), ..NodeStats::default() });
}
