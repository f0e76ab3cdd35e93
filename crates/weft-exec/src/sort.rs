//! ORDER BY: a pipeline feeding `weft-sort`, one participant sort per pipeline participant.

use std::path::PathBuf;

use weft_common::Result;
use weft_sort::SortStrategy;

use crate::execute::{execute, ExecContext};
use crate::expr::compare::compare_datums;
use crate::plan::{Row, SortKey, SortPlan};

/// The session's settings that shape a sort.
#[derive(Clone, Debug)]
pub struct SortSettings {
    /// Budget of each participant (`work_mem`).
    pub work_mem: usize,
    pub strategy: SortStrategy,
    /// `trace_sort`: LOG lines describing each sort's phases.
    pub trace: bool,
    /// Where temp files go (`<data directory>/tmp`).
    pub temp_dir: PathBuf,
}

pub(crate) fn execute_sort(sort: &SortPlan, ctx: &ExecContext) -> Result<Vec<Row>> {
    let mut rows = execute(&sort.input, ctx)?;
    rows.sort_by(|a, b| compare_rows(a, b, &sort.keys));
    if let Some(bound) = sort.bound {
        rows.truncate(bound.min(usize::MAX as u64) as usize);
    }
    for row in &mut rows {
        row.truncate(sort.output_width);
    }
    Ok(rows)
}

fn compare_rows(a: &Row, b: &Row, keys: &[SortKey]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for key in keys {
        let (x, y) = (&a[key.column], &b[key.column]);
        let ordering = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => if key.nulls_first { Ordering::Less } else { Ordering::Greater },
            (false, true) => if key.nulls_first { Ordering::Greater } else { Ordering::Less },
            (false, false) => {
                let o = compare_datums(x, y);
                if key.descending { o.reverse() } else { o }
            }
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}
