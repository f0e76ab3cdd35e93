//! The sequential adaptive radix tree (Leis, Kemper, Neumann, "The Adaptive
//! Radix Tree: ARTful Indexing for Main-Memory Databases", ICDE 2013).
//!
//! A radix tree over byte-string keys whose inner nodes come in four sizes
//! (Node4, Node16, Node48, Node256) chosen by how many children a node has,
//! so that sparse levels stay small and dense levels get direct indexing.
//! Two further techniques from the paper keep the height down:
//!
//! - *Path compression*: a chain of one-child nodes is folded into the
//!   `prefix` of the node below it. The prefix is stored in full
//!   (pessimistic), inline up to [`PREFIX_INLINE_BYTES_MAX`] bytes and on
//!   the heap beyond, so a lookup never has to consult a leaf to learn what
//!   a prefix was. The paper's hybrid (store 8 bytes, skip the rest and check
//!   the leaf) would make splits and merges read a leaf to recover the
//!   skipped bytes; with inline storage for the common short prefixes the
//!   full prefix costs nothing on lookups and removes that case.
//! - *Lazy expansion*: below the point where a key becomes unique there are
//!   no nodes, just a leaf holding the whole key.
//!
//! Keys are arbitrary byte strings, so one key can be a proper prefix of
//! another (no terminator byte is reserved). Such a key ends at an inner node
//! and is kept in that node's value slot; it sorts before every key below.
//!
//! Node16 is searched with a 16-lane compare done as SIMD within a register
//! on a `u128` (branch-free, portable); the whole module is safe Rust. The concurrent tree in [`crate::olc`] is separate: this one is for
//! single-threaded use, tests and as the model the concurrent one is
//! compared with.

mod iter;
mod node;
mod ops;
mod verify;

#[cfg(test)]
mod tests;

use std::ops::{Bound, RangeBounds};

pub use iter::Iter;
pub use node::{
    NodeKind, NODE16_CHILDREN_MAX, NODE16_SHRINK_AT, NODE256_CHILDREN_MAX, NODE256_SHRINK_AT, NODE48_CHILDREN_MAX,
    NODE48_SHRINK_AT, NODE4_CHILDREN_MAX, PREFIX_INLINE_BYTES_MAX,
};
pub use verify::NodeStats;

use node::{count_keys, Leaf, Node};
use ops::Coverage;

/// An ordered map from byte strings to `V`, stored as an adaptive radix tree.
pub struct Art<V> {
    root: Option<Node<V>>,
    len: usize,
}

impl<V> Default for Art<V> {
    fn default() -> Self {
        Art::new()
    }
}

impl<V> Art<V> {
    pub fn new() -> Art<V> {
        Art { root: None, len: 0 }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, key: &[u8]) -> Option<&V> {
        let mut node = self.root.as_ref()?;
        let mut depth = 0;
        loop {
            let inner = match node {
                Node::Leaf(leaf) => return (*leaf.key == *key).then_some(&leaf.value),
                Node::Inner(inner) => inner,
            };
            let header = inner.header();
            let prefix = header.prefix.as_slice();
            if !key[depth..].starts_with(prefix) {
                return None;
            }
            depth += prefix.len();
            if depth == key.len() {
                return header.value.as_ref().map(|leaf| &leaf.value);
            }
            node = inner.find_child(key[depth])?;
            depth += 1;
        }
    }

    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let mut node = self.root.as_mut()?;
        let mut depth = 0;
        loop {
            let inner = match node {
                Node::Leaf(leaf) => return (*leaf.key == *key).then_some(&mut leaf.value),
                Node::Inner(inner) => inner,
            };
            let prefix_len = inner.header().prefix.len();
            if !key[depth..].starts_with(inner.header().prefix.as_slice()) {
                return None;
            }
            depth += prefix_len;
            if depth == key.len() {
                return inner.header_mut().value.as_mut().map(|leaf| &mut leaf.value);
            }
            node = inner.find_child_mut(key[depth])?;
            depth += 1;
        }
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces; returns the value that was replaced.
    pub fn insert(&mut self, key: &[u8], value: V) -> Option<V> {
        let replaced = match &mut self.root {
            None => {
                self.root = Some(Node::Leaf(Leaf::boxed(key, value)));
                None
            }
            Some(root) => ops::insert(root, key, 0, value),
        };
        if replaced.is_none() {
            self.len += 1;
        }
        replaced
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        let removed = match self.root.as_mut()? {
            Node::Leaf(leaf) if *leaf.key == *key => match self.root.take() {
                Some(Node::Leaf(leaf)) => Some(leaf.value),
                _ => unreachable!("the root was this leaf"),
            },
            Node::Leaf(_) => None,
            root => ops::remove(root, key, 0),
        };
        if removed.is_some() {
            self.len -= 1;
        }
        removed
    }

    /// Removes every key that starts with `prefix` and returns how many there
    /// were. The subtree holding them is unlinked from its parent in one step
    /// and then freed; only the nodes on the path to it are touched.
    pub fn remove_prefix(&mut self, prefix: &[u8]) -> usize {
        let Some(root) = self.root.as_mut() else { return 0 };
        let removed = match ops::coverage(root, prefix, 0) {
            Coverage::Disjoint => 0,
            Coverage::Descend(depth) => ops::remove_prefix(root, prefix, depth),
            Coverage::All => self.root.take().map_or(0, |root| count_keys(&root)),
        };
        self.len -= removed;
        removed
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.root = None;
        self.len = 0;
    }

    /// All `(key, value)` pairs in key order.
    pub fn iter(&self) -> Iter<'_, V> {
        Iter::subtree(self.root.as_ref())
    }

    /// Pairs with key `>= start`, in key order.
    pub fn iter_from(&self, start: &[u8]) -> Iter<'_, V> {
        Iter::bounded(self.root.as_ref(), Bound::Included(start), Bound::Unbounded)
    }

    /// Pairs whose key lies in `range`, in key order. An empty or inverted
    /// range yields nothing (where `BTreeMap::range` would panic on an
    /// inverted one).
    /// `range` is over `&[u8]`: `art.range(&lo[..]..&hi[..])`, `..=`, or a
    /// `(Bound<&[u8]>, Bound<&[u8]>)` pair.
    pub fn range<'k, R: RangeBounds<&'k [u8]>>(&self, range: R) -> Iter<'_, V> {
        let lower = match range.start_bound() {
            Bound::Included(k) => Bound::Included(*k),
            Bound::Excluded(k) => Bound::Excluded(*k),
            Bound::Unbounded => Bound::Unbounded,
        };
        let upper = match range.end_bound() {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Iter::bounded(self.root.as_ref(), lower, upper)
    }

    /// Pairs whose key starts with `prefix`, in key order: the walk starts at
    /// the one subtree that holds them.
    pub fn prefix_iter(&self, prefix: &[u8]) -> Iter<'_, V> {
        let mut node = self.root.as_ref();
        let mut depth = 0;
        while let Some(current) = node {
            match ops::coverage(current, prefix, depth) {
                Coverage::All => break,
                Coverage::Disjoint => node = None,
                Coverage::Descend(below) => {
                    node = match current {
                        Node::Inner(inner) => inner.find_child(prefix[below]),
                        Node::Leaf(_) => unreachable!("coverage descends only into inner nodes"),
                    };
                    depth = below + 1;
                }
            }
        }
        Iter::subtree(node)
    }

    /// Bytes held by the tree's nodes and leaves (keys included, what the
    /// values own on the heap excluded). Walks the tree.
    pub fn memory_bytes(&self) -> usize {
        self.stats().memory_bytes
    }

    /// Node counts by kind; walks the tree.
    pub fn stats(&self) -> NodeStats {
        NodeStats::collect(self.root.as_ref())
    }
}

impl<'a, V> IntoIterator for &'a Art<V> {
    type Item = (&'a [u8], &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Iter<'a, V> {
        self.iter()
    }
}

impl<V: std::fmt::Debug> std::fmt::Debug for Art<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}
