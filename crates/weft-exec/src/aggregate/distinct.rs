//! `f(DISTINCT x)` as an accumulator: each group keeps the set of distinct non-NULL values
//! it has seen, and `f` runs over them, in ascending order, only when the group finishes.
//!
//! The values, not a running `f`, are the partial state: two participants (or a spilled
//! state and a live one) may have seen the same value, so only the union of their sets
//! can be combined. Equality is the grouping equality (`1.0 = 1.00`, `-0 = 0`, NaN =
//! NaN); of equal values the first one seen is kept. Feeding the values in ascending
//! order gives the results PostgreSQL's sort-based DISTINCT gives: string_agg's order,
//! and the order of float additions.
//!
//! The set's memory is counted in the state's heap bytes, so a grouped aggregate spills
//! groups as their sets grow; a set of one group is not split, so a single group's set
//! (an ungrouped `count(DISTINCT x)` next to a plain call) is held in memory whole.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use weft_common::{Datum, Result};

use super::table::datum_heap;
use super::Accumulator;
use crate::expr::compare::{compare_datums, datum_hash};

/// One value under grouping equality.
#[derive(Clone, Debug)]
pub(crate) struct DistinctValue(pub(super) Datum);

impl PartialEq for DistinctValue {
    fn eq(&self, other: &DistinctValue) -> bool {
        compare_datums(&self.0, &other.0).is_eq()
    }
}

impl Eq for DistinctValue {}

impl Hash for DistinctValue {
    fn hash<H: Hasher>(&self, h: &mut H) {
        datum_hash(&self.0, h);
    }
}

/// The state of one `f(DISTINCT x)` in one group.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DistinctValues {
    pub(super) values: HashSet<DistinctValue>,
    /// string_agg's delimiter (a constant: the binder refuses one that reads the row),
    /// taken from the first value's row.
    pub(super) delimiter: Option<String>,
    /// The state of `f` before any value: what the values are fed to when finishing.
    pub(super) empty: Box<Accumulator>,
    /// Heap bytes of `values`.
    pub(super) bytes: usize,
}

/// Bytes one value takes in the set besides its text: the slot and the table's control
/// byte, at the table's usual load.
const VALUE_OVERHEAD: usize = size_of::<DistinctValue>() * 8 / 7 + 1;

impl DistinctValues {
    pub(super) fn new(empty: Accumulator) -> DistinctValues {
        DistinctValues { values: HashSet::new(), delimiter: None, empty: Box::new(empty), bytes: 0 }
    }

    /// Add a non-NULL value. Returns the change in heap bytes.
    pub(super) fn insert(&mut self, value: Datum) -> isize {
        let bytes = VALUE_OVERHEAD + datum_heap(&value);
        if self.values.insert(DistinctValue(value)) {
            self.bytes += bytes;
            bytes as isize
        } else {
            0
        }
    }

    /// A string_agg value with its row's delimiter.
    pub(super) fn insert_text(&mut self, value: String, delimiter: Option<String>) -> isize {
        if self.delimiter.is_none() {
            self.delimiter = delimiter;
        }
        self.insert(Datum::Text(value))
    }

    /// Fold another partial state of the same group in. Returns the change in heap bytes.
    pub(super) fn merge(&mut self, other: DistinctValues) -> isize {
        if self.delimiter.is_none() {
            self.delimiter = other.delimiter;
        }
        let before = self.bytes;
        for DistinctValue(value) in other.values {
            self.insert(value);
        }
        (self.bytes - before) as isize
    }

    /// `f` over the values in ascending order.
    pub(super) fn finish(self) -> Result<Datum> {
        let mut values: Vec<Datum> = self.values.into_iter().map(|v| v.0).collect();
        values.sort_by(compare_datums);
        let mut state = *self.empty;
        // string_agg takes its delimiter, and each key of an ORDER BY (which a DISTINCT
        // call may only write over its argument) is the value itself.
        let string_agg_keys = match &state {
            Accumulator::StringAgg(_) => Some(0),
            Accumulator::StringAggSorted(sorted) => Some(sorted.order.len()),
            _ => None,
        };
        for value in values {
            match (string_agg_keys, value) {
                (Some(keys), Datum::Text(text)) => {
                    let keys = vec![Datum::Text(text.clone()); keys];
                    state.update_string_agg(text, self.delimiter.clone(), keys)?;
                }
                (Some(_), _) => {}
                (None, value) if matches!(state, Accumulator::ArrayAgg(_)) => {
                    let keys = match &state {
                        Accumulator::ArrayAgg(values) => vec![value.clone(); values.order.len()],
                        _ => Vec::new(),
                    };
                    state.update_array_agg(value, keys)?;
                }
                (None, value) => {
                    state.update_owned(value)?;
                }
            }
        }
        state.finish()
    }
}
