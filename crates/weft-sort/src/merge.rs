//! The k-way merge: a tournament tree of losers over sorted inputs.
//!
//! Leaves are inputs; each inner node remembers the loser of the match played there and
//! `tree[0]` the overall winner. Taking the winner's next tuple replays only the matches
//! on its path to the root: `log2(k)` comparisons per output tuple, against `2 log2(k)`
//! for a binary heap. Each input's current tuple carries its abbreviated key, so most
//! matches are one integer comparison. An exhausted input loses every match.

use std::cmp::Ordering;
use std::sync::Arc;

use weft_common::Result;

use crate::keys::SortKeys;
use crate::memrun::MemRunReader;
use crate::memtuples::{MemTuples, PREFETCH_AHEAD};
use crate::pairs::PairRunReader;
use crate::tape::RunReader;

/// One sorted input of a merge.
pub(crate) enum MergeInput<'a> {
    /// A sorted buffer, read through its pointer array (a sub-run being spilled).
    Sorted { buffer: &'a MemTuples, next: usize, current: Option<usize> },
    /// A range of a run laid out in memory.
    Memory(MemRunReader),
    /// A range of a run on tape.
    Tape(RunReader),
    /// A range of a run of pairs (`pairs.rs`), rebuilt into tuples as read.
    Pairs(PairRunReader),
}

impl<'a> MergeInput<'a> {
    pub fn sorted(buffer: &'a MemTuples) -> MergeInput<'a> {
        MergeInput::Sorted { buffer, next: 0, current: None }
    }

    #[inline]
    fn current(&self) -> Option<&[u8]> {
        match self {
            MergeInput::Sorted { buffer, current, .. } => current.map(|i| buffer.get(i)),
            MergeInput::Memory(reader) => reader.current(),
            MergeInput::Tape(reader) => reader.current(),
            MergeInput::Pairs(reader) => reader.current(),
        }
    }

    /// The current tuple's abbreviated key (a pair carries it; others compute it).
    #[inline]
    fn abbrev(&self, keys: &SortKeys) -> u64 {
        match self {
            MergeInput::Pairs(reader) => reader.current_abbrev(),
            other => keys.abbreviate(other.current().expect("not exhausted")),
        }
    }

    #[inline]
    fn advance(&mut self) -> Result<bool> {
        match self {
            MergeInput::Memory(reader) => Ok(reader.advance()),
            MergeInput::Sorted { buffer, next, current } => {
                if *next < buffer.len() {
                    buffer.prefetch(*next + PREFETCH_AHEAD);
                    *current = Some(*next);
                    *next += 1;
                    Ok(true)
                } else {
                    *current = None;
                    Ok(false)
                }
            }
            MergeInput::Tape(reader) => reader.advance(),
            MergeInput::Pairs(reader) => Ok(reader.advance()),
        }
    }
}

/// Merges its inputs into one ordered stream.
pub struct Merger<'a> {
    keys: Arc<SortKeys>,
    inputs: Vec<MergeInput<'a>>,
    /// Abbreviated key of each input's current tuple; `None` when exhausted.
    heads: Vec<Option<u64>>,
    tree: Vec<usize>,
    started: bool,
}

impl<'a> Merger<'a> {
    pub(crate) fn new(keys: Arc<SortKeys>, mut inputs: Vec<MergeInput<'a>>) -> Result<Merger<'a>> {
        let mut heads = Vec::with_capacity(inputs.len());
        for input in inputs.iter_mut() {
            heads.push(if input.advance()? { Some(input.abbrev(&keys)) } else { None });
        }
        let mut merger = Merger { keys, inputs, heads, tree: Vec::new(), started: false };
        merger.build();
        Ok(merger)
    }

    pub fn width(&self) -> usize {
        self.inputs.len()
    }

    /// Does input `a`'s current tuple go before input `b`'s?
    #[inline]
    fn before(&self, a: usize, b: usize) -> bool {
        match (self.heads[a], self.heads[b]) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(x), Some(y)) => match x.cmp(&y) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal => {
                    let ta = self.inputs[a].current().expect("not exhausted");
                    let tb = self.inputs[b].current().expect("not exhausted");
                    match self.keys.compare(ta, tb) {
                        Ordering::Less => true,
                        Ordering::Greater => false,
                        // Equal keys: the lower input first, a deterministic order.
                        Ordering::Equal => a < b,
                    }
                }
            },
        }
    }

    fn build(&mut self) {
        let k = self.inputs.len();
        self.tree = vec![0; k.max(1)];
        if k <= 1 {
            return;
        }
        // winners[node] for nodes 1..2k, leaves at k..2k.
        let mut winners = vec![0usize; 2 * k];
        for i in 0..k {
            winners[k + i] = i;
        }
        for node in (1..k).rev() {
            let (a, b) = (winners[2 * node], winners[2 * node + 1]);
            if self.before(a, b) {
                winners[node] = a;
                self.tree[node] = b;
            } else {
                winners[node] = b;
                self.tree[node] = a;
            }
        }
        self.tree[0] = winners[1];
    }

    /// The winner moved on: replay its path to the root.
    #[inline]
    fn replay(&mut self) {
        let k = self.inputs.len();
        let mut winner = self.tree[0];
        let mut node = (winner + k) / 2;
        while node >= 1 {
            let challenger = self.tree[node];
            if self.before(challenger, winner) {
                self.tree[node] = winner;
                winner = challenger;
            }
            node /= 2;
        }
        self.tree[0] = winner;
    }

    /// The next tuple in order, or `None` when every input is exhausted.
    #[inline]
    pub fn next(&mut self) -> Result<Option<&[u8]>> {
        if self.inputs.is_empty() {
            return Ok(None);
        }
        if self.started {
            // Advance the input whose tuple was returned last time.
            let winner = self.tree[0];
            let input = &mut self.inputs[winner];
            self.heads[winner] = if input.advance()? { Some(input.abbrev(&self.keys)) } else { None };
            if self.inputs.len() > 1 {
                self.replay();
            }
        }
        self.started = true;
        let winner = self.tree[0];
        Ok(match self.heads[winner] {
            Some(_) => self.inputs[winner].current(),
            None => None,
        })
    }
}
