//! The k-way merge: a tournament tree of losers over sorted inputs.
//!
//! Leaves are inputs; each inner node remembers the loser of the match played there and
//! `tree[0]` the overall winner. Taking the winner's next tuple replays only the matches
//! on its path to the root: `log2(k)` comparisons per output tuple, against `2 log2(k)`
//! for a binary heap. Each input's current tuple carries its abbreviated key, so most
//! matches are one integer comparison. An exhausted input loses every match.
//!
//! When every input is a run of pairs (`pairs.rs`) the pair *is* the tuple, so the tree
//! plays on the 128-bit (abbreviation, payload) values themselves (`PairMerger`): no
//! tuple is rebuilt to be compared, only the winner, once, into a fixed buffer.

use std::cmp::Ordering;
use std::sync::Arc;

use weft_common::Result;

use crate::keys::SortKeys;
use crate::memrun::MemRunReader;
use crate::memtuples::{MemTuples, SortTuple, PREFETCH_AHEAD};
use crate::pairs::{PackedPair, Packing, PairForm, PairRun, PairRunReader, PairStore};
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
            MergeInput::Tape(reader) if reader.pair_form().is_some() => reader.current_pair().abbrev,
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
pub struct Merger<'a>(MergerKind<'a>);

enum MergerKind<'a> {
    Tuples(TupleMerger<'a>),
    Pairs(PairMerger),
}

impl<'a> Merger<'a> {
    pub(crate) fn new(keys: Arc<SortKeys>, inputs: Vec<MergeInput<'a>>) -> Result<Merger<'a>> {
        let pair_input = |input: &MergeInput| match input {
            MergeInput::Pairs(_) => true,
            MergeInput::Tape(reader) => reader.pair_form().is_some(),
            _ => false,
        };
        Ok(Merger(if !inputs.is_empty() && inputs.iter().all(pair_input) {
            let sources = inputs
                .into_iter()
                .map(|input| match input {
                    MergeInput::Pairs(reader) => PairSource::Memory(reader.into_range()),
                    MergeInput::Tape(reader) => PairSource::Tape(reader),
                    _ => unreachable!("all inputs are pairs"),
                })
                .collect();
            MergerKind::Pairs(PairMerger::new(sources)?)
        } else {
            MergerKind::Tuples(TupleMerger::new(keys, inputs)?)
        }))
    }

    /// Some when the merge is of pairs (every input a run of pairs): its output can be
    /// read as pairs with [`next_pair`](Self::next_pair).
    pub(crate) fn pair_form(&self) -> Option<PairForm> {
        match &self.0 {
            MergerKind::Pairs(m) => Some(m.form),
            MergerKind::Tuples(_) => None,
        }
    }

    /// The next pair of a merge of pairs (see [`pair_form`](Self::pair_form)).
    #[inline]
    pub(crate) fn next_pair(&mut self) -> Result<Option<SortTuple>> {
        match &mut self.0 {
            MergerKind::Pairs(m) => m.next(),
            MergerKind::Tuples(_) => Err(weft_common::Error::internal("a merge of tuples read as pairs")),
        }
    }

    pub fn width(&self) -> usize {
        match &self.0 {
            MergerKind::Tuples(m) => m.inputs.len(),
            MergerKind::Pairs(m) => m.sources.len(),
        }
    }

    /// The next tuple in order, or `None` when every input is exhausted.
    #[inline]
    pub fn next(&mut self) -> Result<Option<&[u8]>> {
        match &mut self.0 {
            MergerKind::Tuples(m) => m.next(),
            MergerKind::Pairs(m) => m.next_tuple(),
        }
    }
}

/// The general merge: tuple bytes, abbreviations first, full comparison on ties.
struct TupleMerger<'a> {
    keys: Arc<SortKeys>,
    inputs: Vec<MergeInput<'a>>,
    /// Abbreviated key of each input's current tuple; `None` when exhausted.
    heads: Vec<Option<u64>>,
    tree: Vec<usize>,
    started: bool,
}

impl<'a> TupleMerger<'a> {
    fn new(keys: Arc<SortKeys>, mut inputs: Vec<MergeInput<'a>>) -> Result<TupleMerger<'a>> {
        let mut heads = Vec::with_capacity(inputs.len());
        for input in inputs.iter_mut() {
            heads.push(if input.advance()? { Some(input.abbrev(&keys)) } else { None });
        }
        let mut merger = TupleMerger { keys, inputs, heads, tree: Vec::new(), started: false };
        merger.tree = loser_tree(merger.inputs.len(), |a, b| merger.before(a, b));
        Ok(merger)
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

    #[inline]
    fn next(&mut self) -> Result<Option<&[u8]>> {
        if self.inputs.is_empty() {
            return Ok(None);
        }
        if self.started {
            // Advance the input whose tuple was returned last time.
            let winner = self.tree[0];
            let input = &mut self.inputs[winner];
            self.heads[winner] = if input.advance()? { Some(input.abbrev(&self.keys)) } else { None };
            if self.inputs.len() > 1 {
                let mut tree = std::mem::take(&mut self.tree);
                replay(&mut tree, self.inputs.len(), |a, b| self.before(a, b));
                self.tree = tree;
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

/// A tree of losers over `k` inputs: `tree[0]` is the overall winner and `tree[node]` the
/// loser of the match at inner node `node` (leaves are `k..2k`, not stored).
fn loser_tree(k: usize, before: impl Fn(usize, usize) -> bool) -> Vec<usize> {
    let mut tree = vec![0; k.max(1)];
    if k <= 1 {
        return tree;
    }
    let mut winners = vec![0usize; 2 * k];
    for i in 0..k {
        winners[k + i] = i;
    }
    for node in (1..k).rev() {
        let (a, b) = (winners[2 * node], winners[2 * node + 1]);
        let (winner, loser) = if before(a, b) { (a, b) } else { (b, a) };
        winners[node] = winner;
        tree[node] = loser;
    }
    tree[0] = winners[1];
    tree
}

/// The winner moved on: replay its path to the root.
#[inline]
fn replay(tree: &mut [usize], k: usize, before: impl Fn(usize, usize) -> bool) {
    let mut winner = tree[0];
    let mut node = (winner + k) / 2;
    while node >= 1 {
        let challenger = tree[node];
        if before(challenger, winner) {
            tree[node] = winner;
            winner = challenger;
        }
        node /= 2;
    }
    tree[0] = winner;
}

/// A range of a run of pairs: its pairs `next..end`.
pub(crate) struct PairRange {
    pub run: Arc<PairRun>,
    pub next: usize,
    pub end: usize,
}

/// Where a merge of pairs reads one input: a run of pairs in memory or on tape.
enum PairSource {
    Memory(PairRange),
    Tape(RunReader),
}

impl PairSource {
    #[inline(always)]
    fn next_pair(&mut self) -> Result<Option<SortTuple>> {
        match self {
            PairSource::Memory(range) => Ok((range.next < range.end).then(|| {
                range.next += 1;
                range.run.get(range.next - 1)
            })),
            PairSource::Tape(reader) => reader.advance_pair(),
        }
    }

    /// How this input's pairs are packed, if they are.
    fn packing(&self) -> Option<Packing> {
        match self {
            PairSource::Memory(range) => match &range.run.store {
                PairStore::Packed(_, packing) => Some(*packing),
                PairStore::Wide(_) => None,
            },
            PairSource::Tape(reader) => reader.packing(),
        }
    }

    /// The next packed pair's value, of an input whose pairs are packed.
    #[inline(always)]
    fn next_packed(&mut self) -> Result<Option<u64>> {
        match self {
            PairSource::Memory(range) => {
                let PairStore::Packed(pairs, _) = &range.run.store else { unreachable!("a packed input") };
                Ok((range.next < range.end).then(|| {
                    range.next += 1;
                    pairs[range.next - 1].0
                }))
            }
            PairSource::Tape(reader) => reader.advance_packed(),
        }
    }
}

/// The merge of runs of pairs, played on the pairs' 128-bit values: a pair's value orders
/// like its tuple, and equal values are equal tuples, so no tie needs breaking.
struct PairMerger {
    form: PairForm,
    sources: Vec<PairSource>,
    /// The current pair of each input, as one value (`u128::MAX` also when exhausted),
    /// and as a pair. When every input is packed, `packing` is theirs and a head is the
    /// packed value itself (below `u128::MAX`, so an exhausted input always loses and
    /// `current` and `live` go unused): the tree compares packed values and only the
    /// winner is unpacked.
    heads: Vec<u128>,
    packing: Option<Packing>,
    current: Vec<SortTuple>,
    live: Vec<bool>,
    tree: Vec<usize>,
    started: bool,
    tuple: [u8; PairForm::MAX_TUPLE_LEN],
    /// Two inputs, both in memory (each participant's one run, a range of it per key
    /// range): merged a block at a time into `block` by a loop over the two arrays,
    /// without the tree, and handed out from there (`block[block_at..]`).
    two_in_memory: bool,
    block: Vec<SortTuple>,
    block_at: usize,
}

/// How many pairs a merge of two in-memory inputs merges at a time.
const PAIR_MERGE_BLOCK: usize = 2048;

/// Merge the fronts of two sorted arrays into `block` (emptied first) until it holds
/// [`PAIR_MERGE_BLOCK`] pairs or both are used up; returns how many pairs of each it
/// took. `left_first` says whether a left pair goes before a right one (equal values
/// are equal tuples: either may go first); `wide_*` give a pair's 16-byte form.
#[inline]
fn merge_block<L: Copy, R: Copy>(
    left: &[L],
    right: &[R],
    left_first: impl Fn(&L, &R) -> bool,
    wide_left: impl Fn(&L) -> SortTuple,
    wide_right: impl Fn(&R) -> SortTuple,
    block: &mut Vec<SortTuple>,
) -> (usize, usize) {
    block.clear();
    let (mut i, mut j) = (0, 0);
    while block.len() < PAIR_MERGE_BLOCK && i < left.len() && j < right.len() {
        let take_left = left_first(&left[i], &right[j]);
        block.push(if take_left { wide_left(&left[i]) } else { wide_right(&right[j]) });
        i += take_left as usize;
        j += !take_left as usize;
    }
    // One input used up: the block is filled from the other.
    let room = PAIR_MERGE_BLOCK - block.len();
    if i == left.len() {
        let rest = &right[j..(j + room).min(right.len())];
        block.extend(rest.iter().map(&wide_right));
        j += rest.len();
    } else if j == right.len() {
        let rest = &left[i..(i + room).min(left.len())];
        block.extend(rest.iter().map(&wide_left));
        i += rest.len();
    }
    (i, j)
}

impl PairMerger {
    fn new(mut sources: Vec<PairSource>) -> Result<PairMerger> {
        let form = match &sources[0] {
            PairSource::Memory(range) => range.run.form,
            PairSource::Tape(reader) => reader.pair_form().expect("a run of pairs"),
        };
        if let [PairSource::Memory(_), PairSource::Memory(_)] = sources.as_slice() {
            return Ok(PairMerger {
                form,
                sources,
                heads: Vec::new(),
                packing: None,
                current: Vec::new(),
                live: Vec::new(),
                tree: Vec::new(),
                started: false,
                tuple: [0; PairForm::MAX_TUPLE_LEN],
                two_in_memory: true,
                block: Vec::with_capacity(PAIR_MERGE_BLOCK),
                block_at: 0,
            });
        }
        let packings: Option<Vec<Packing>> = sources.iter().map(PairSource::packing).collect();
        let packing = packings.and_then(|p| p.first().copied());
        let (mut heads, mut current, mut live) = (Vec::new(), Vec::new(), Vec::new());
        for source in sources.iter_mut() {
            if packing.is_some() {
                heads.push(source.next_packed()?.map_or(u128::MAX, u128::from));
                continue;
            }
            let pair = source.next_pair()?;
            heads.push(pair.map_or(u128::MAX, value));
            current.push(pair.unwrap_or(SortTuple::new(0, 0)));
            live.push(pair.is_some());
        }
        let mut merger = PairMerger {
            form,
            sources,
            heads,
            packing,
            current,
            live,
            tree: Vec::new(),
            started: false,
            tuple: [0; PairForm::MAX_TUPLE_LEN],
            two_in_memory: false,
            block: Vec::new(),
            block_at: 0,
        };
        let k = merger.sources.len();
        merger.tree = match merger.packing {
            Some(_) => loser_tree(k, |a, b| merger.heads[a] < merger.heads[b]),
            None => loser_tree(k, |a, b| merger.before(a, b)),
        };
        Ok(merger)
    }

    /// Does input `a`'s current pair go before input `b`'s? An exhausted input never does.
    #[inline(always)]
    fn before(&self, a: usize, b: usize) -> bool {
        let (x, y) = (self.heads[a], self.heads[b]);
        // Equal values: only `u128::MAX` needs care, the value of an exhausted input too.
        x < y || (x == y && self.live[a] && !self.live[b])
    }

    /// Merge the next block of two in-memory inputs into `block`; empty when both are
    /// exhausted.
    fn merge_two_in_memory(&mut self) {
        self.block.clear();
        self.block_at = 0;
        let [PairSource::Memory(a), PairSource::Memory(b)] = self.sources.as_mut_slice() else {
            unreachable!("two inputs in memory");
        };
        let block = &mut self.block;
        let (i, j) = match (&a.run.store, &b.run.store) {
            (PairStore::Wide(x), PairStore::Wide(y)) => {
                merge_block(&x[a.next..a.end], &y[b.next..b.end], |p, q| value(*p) <= value(*q), |p| *p, |q| *q, block)
            }
            // Packed pairs compare as they are; only what is handed out is unpacked.
            (PairStore::Packed(x, px), PairStore::Packed(y, py)) => {
                merge_block(&x[a.next..a.end], &y[b.next..b.end], |p, q| p <= q, |p| px.unpack(*p), |q| py.unpack(*q), block)
            }
            (PairStore::Packed(x, px), PairStore::Wide(y)) => {
                merge_block(&x[a.next..a.end], &y[b.next..b.end], |p, q| value(px.unpack(*p)) <= value(*q), |p| px.unpack(*p), |q| *q, block)
            }
            (PairStore::Wide(x), PairStore::Packed(y, py)) => {
                merge_block(&x[a.next..a.end], &y[b.next..b.end], |p, q| value(*p) <= value(py.unpack(*q)), |p| *p, |q| py.unpack(*q), block)
            }
        };
        a.next += i;
        b.next += j;
    }

    #[inline]
    fn next(&mut self) -> Result<Option<SortTuple>> {
        if self.two_in_memory {
            if self.block_at == self.block.len() {
                self.merge_two_in_memory();
            }
            let pair = self.block.get(self.block_at).copied();
            self.block_at += pair.is_some() as usize;
            return Ok(pair);
        }
        if let Some(packing) = self.packing {
            return self.next_packed(packing);
        }
        let k = self.sources.len();
        if self.started {
            let winner = self.tree[0];
            match self.sources[winner].next_pair()? {
                Some(pair) => {
                    self.heads[winner] = value(pair);
                    self.current[winner] = pair;
                }
                None => {
                    self.heads[winner] = u128::MAX;
                    self.live[winner] = false;
                }
            }
            if k > 1 {
                let mut tree = std::mem::take(&mut self.tree);
                replay(&mut tree, k, |a, b| self.before(a, b));
                self.tree = tree;
            }
        }
        self.started = true;
        let winner = self.tree[0];
        Ok(self.live[winner].then(|| self.current[winner]))
    }

    /// [`next`](Self::next) when every input is packed.
    #[inline]
    fn next_packed(&mut self, packing: Packing) -> Result<Option<SortTuple>> {
        let k = self.sources.len();
        if self.started {
            let winner = self.tree[0];
            self.heads[winner] = self.sources[winner].next_packed()?.map_or(u128::MAX, u128::from);
            if k > 1 {
                let mut tree = std::mem::take(&mut self.tree);
                let heads = &self.heads;
                replay(&mut tree, k, |a, b| heads[a] < heads[b]);
                self.tree = tree;
            }
        }
        self.started = true;
        let head = self.heads[self.tree[0]];
        Ok((head != u128::MAX).then(|| packing.unpack(PackedPair(head as u64))))
    }

    #[inline]
    fn next_tuple(&mut self) -> Result<Option<&[u8]>> {
        let Some(pair) = self.next()? else { return Ok(None) };
        let len = self.form.tuple_len();
        self.form.write_tuple(pair, &mut self.tuple[..len]);
        Ok(Some(&self.tuple[..len]))
    }
}

/// A pair as one value ordered like its tuple.
#[inline(always)]
fn value(pair: SortTuple) -> u128 {
    (pair.abbrev as u128) << 64 | pair.payload() as u128
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::SortColumn;
    use weft_common::tuple::RowLayout;
    use weft_common::DataType;

    /// A pair whose value is `u128::MAX` (a NULL key sorted last and the largest payload)
    /// equals the value an exhausted input reports: it must still come out, once.
    #[test]
    fn a_pair_of_the_largest_value_is_not_taken_for_an_exhausted_input() {
        let layout = RowLayout::new(&[DataType::Int4, DataType::Int8]);
        let keys = Arc::new(SortKeys::new(layout, &[SortColumn::new(0, false), SortColumn::new(1, false)]).unwrap());
        let form = keys.pair_form().expect("pair form");
        let run = |pairs: Vec<SortTuple>| Arc::new(PairRun::wide(form, pairs));
        let largest = SortTuple::new(u64::MAX, u64::MAX);
        let runs = [run(vec![SortTuple::new(5, 1)]), run(vec![SortTuple::new(3, 1), largest]), run(vec![])];
        let inputs = runs.iter().map(|r| MergeInput::Pairs(PairRunReader::new(r.clone(), 0, r.len()))).collect();
        let mut merger = Merger::new(keys.clone(), inputs).unwrap();
        let mut out = Vec::new();
        while let Some(tuple) = merger.next().unwrap() {
            out.push(tuple.to_vec());
        }
        let expected: Vec<Vec<u8>> = [SortTuple::new(3, 1), SortTuple::new(5, 1), largest]
            .into_iter()
            .map(|p| {
                let mut t = Vec::new();
                form.rebuild(p, &mut t);
                t
            })
            .collect();
        assert_eq!(out, expected);
    }

    proptest::proptest! {
        /// Two in-memory inputs are merged a block at a time (`merge_two_in_memory`);
        /// three by the tree. Ranges of runs (a key range's part), runs longer than a
        /// block, one input exhausted long before the other, duplicates and the largest
        /// value: the pairs of every range, sorted, each once.
        #[test]
        fn merges_of_in_memory_pair_runs_give_every_pair_in_order(
            runs in proptest::collection::vec(
                proptest::collection::vec((proptest::prop_oneof![0u64..50, proptest::prelude::any::<u64>(), proptest::strategy::Just(u64::MAX)], 0u64..4), 0..5000),
                1..4,
            ),
            cuts in proptest::collection::vec((0usize..5000, 0usize..5000), 3),
        ) {
            let layout = RowLayout::new(&[DataType::Int4, DataType::Int8]);
            let keys = Arc::new(SortKeys::new(layout, &[SortColumn::new(0, false), SortColumn::new(1, false)]).unwrap());
            let form = keys.pair_form().expect("pair form");
            let mut expected = Vec::new();
            let mut inputs = Vec::new();
            for (pairs, (a, b)) in runs.iter().zip(&cuts) {
                let mut pairs: Vec<SortTuple> = pairs.iter().map(|&(k, p)| SortTuple::new(k, p)).collect();
                pairs.sort_by_key(|p| value(*p));
                let (start, end) = (a.min(b).min(&pairs.len()).to_owned(), a.max(b).min(&pairs.len()).to_owned());
                expected.extend_from_slice(&pairs[start..end]);
                inputs.push(MergeInput::Pairs(PairRunReader::new(Arc::new(PairRun::wide(form, pairs)), start, end)));
            }
            expected.sort_by_key(|p| value(*p));
            let mut merger = Merger::new(keys, inputs).unwrap();
            let mut got = Vec::new();
            while let Some(pair) = merger.next_pair().unwrap() {
                got.push(pair);
            }
            proptest::prop_assert_eq!(got.len(), expected.len());
            proptest::prop_assert!(got.iter().zip(&expected).all(|(a, b)| value(*a) == value(*b)));
        }
    }
}
