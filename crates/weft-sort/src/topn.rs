//! Bounded sort for ORDER BY ... LIMIT n: a heap of the best `n` tuples seen so far
//! whose root is the worst of them, so each new tuple costs one comparison with the root
//! unless it belongs in the result.

use std::cmp::Ordering;

use crate::keys::SortKeys;
use crate::memtuples::MemTuples;

pub(crate) struct TopN {
    bound: usize,
    /// Max-heap in sort order: `heap[0]` is the last of the kept tuples.
    heap: Vec<(u64, Vec<u8>)>,
    bytes: usize,
}

impl TopN {
    pub fn new(bound: usize) -> TopN {
        TopN { bound, heap: Vec::new(), bytes: 0 }
    }

    /// The abbreviation of the worst tuple kept, once `bound` are kept: only a tuple whose
    /// abbreviation is at most this can still enter.
    pub fn worst_kept_abbrev(&self) -> Option<u64> {
        (self.bound > 0 && self.heap.len() >= self.bound).then(|| self.heap[0].0)
    }

    pub fn bytes(&self) -> usize {
        self.bytes + self.heap.capacity() * std::mem::size_of::<(u64, Vec<u8>)>()
    }

    fn order(keys: &SortKeys, a: &(u64, Vec<u8>), b: &(u64, Vec<u8>)) -> Ordering {
        a.0.cmp(&b.0).then_with(|| keys.compare(&a.1, &b.1))
    }

    pub fn push(&mut self, keys: &SortKeys, tuple: &[u8], abbrev: u64) {
        if self.bound == 0 {
            return;
        }
        if self.heap.len() < self.bound {
            self.bytes += tuple.len();
            self.heap.push((abbrev, tuple.to_vec()));
            self.sift_up(keys, self.heap.len() - 1);
            return;
        }
        let root = &self.heap[0];
        let better = match abbrev.cmp(&root.0) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => keys.compare(tuple, &root.1) == Ordering::Less,
        };
        if better {
            let root = &mut self.heap[0];
            self.bytes = self.bytes - root.1.len() + tuple.len();
            root.0 = abbrev;
            root.1.clear();
            root.1.extend_from_slice(tuple);
            self.sift_down(keys, 0);
        }
    }

    fn sift_up(&mut self, keys: &SortKeys, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if Self::order(keys, &self.heap[i], &self.heap[parent]) == Ordering::Greater {
                self.heap.swap(i, parent);
                i = parent;
            } else {
                break;
            }
        }
    }

    fn sift_down(&mut self, keys: &SortKeys, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut largest = i;
            if l < n && Self::order(keys, &self.heap[l], &self.heap[largest]) == Ordering::Greater {
                largest = l;
            }
            if r < n && Self::order(keys, &self.heap[r], &self.heap[largest]) == Ordering::Greater {
                largest = r;
            }
            if largest == i {
                return;
            }
            self.heap.swap(i, largest);
            i = largest;
        }
    }

    /// Abbreviations were abandoned: every kept tuple's becomes 0, like those of the
    /// tuples still to come, and the heap is rebuilt by full comparison. (A kept tuple
    /// keeping its real abbreviation would rank behind every later one and be evicted
    /// first, whatever its key.)
    pub fn forget_abbreviations(&mut self, keys: &SortKeys) {
        for entry in &mut self.heap {
            entry.0 = 0;
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(keys, i);
        }
    }

    /// The kept tuples, in order, as an in-memory run.
    pub fn into_sorted(mut self, keys: &SortKeys) -> MemTuples {
        self.heap.sort_unstable_by(|a, b| Self::order(keys, a, b));
        let mut out = MemTuples::new(self.bytes, false);
        for (abbrev, tuple) in &self.heap {
            out.push(tuple, *abbrev);
        }
        out
    }

    /// Give up on bounding (the kept tuples outgrew the budget): hand them over.
    pub fn into_tuples(self) -> impl Iterator<Item = (u64, Vec<u8>)> {
        self.heap.into_iter()
    }
}
