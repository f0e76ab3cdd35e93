//! Ordered iteration: a depth-first walk with an explicit stack of inner
//! nodes and a per-node cursor.
//!
//! Key order falls out of the node layout: a node's value slot holds the key
//! that ends at the node, which sorts before every key that continues below
//! it, and children are visited in byte order. Leaves keep their whole key,
//! so the iterator hands out borrowed keys and allocates only its stack.
//!
//! A seek (for `range` and `iter_from`) descends along the start key once and
//! leaves behind, for each node on the way, a cursor just past the byte it
//! followed; the walk then resumes from the deepest such node upwards.

use std::ops::Bound;

use super::node::{InnerNode, Node};

struct Frame<'a, V> {
    node: &'a InnerNode<V>,
    cursor: u16,
}

/// Iterator over `(key, &value)` in key order; see [`super::Art::iter`].
pub struct Iter<'a, V> {
    stack: Vec<Frame<'a, V>>,
    /// A subtree to enter before resuming the stack: its value slot and all
    /// its keys come next.
    pending: Option<&'a Node<V>>,
    upper: Bound<Vec<u8>>,
}

impl<'a, V> Iter<'a, V> {
    /// All keys of the subtree `root` (nothing if `None`).
    pub(crate) fn subtree(root: Option<&'a Node<V>>) -> Iter<'a, V> {
        Iter { stack: Vec::new(), pending: root, upper: Bound::Unbounded }
    }

    /// Keys of `root` within `lower`/`upper`, in order.
    pub(crate) fn bounded(root: Option<&'a Node<V>>, lower: Bound<&[u8]>, upper: Bound<Vec<u8>>) -> Iter<'a, V> {
        let mut iter = Iter { stack: Vec::new(), pending: None, upper };
        let Some(root) = root else { return iter };
        match lower {
            Bound::Unbounded => iter.pending = Some(root),
            Bound::Included(start) => iter.seek(root, start, true),
            Bound::Excluded(start) => iter.seek(root, start, false),
        }
        iter
    }

    /// Positions the walk on the first key `>= start` (`> start` unless
    /// `inclusive`).
    fn seek(&mut self, mut node: &'a Node<V>, start: &[u8], inclusive: bool) {
        let mut depth = 0;
        loop {
            let inner = match node {
                Node::Leaf(leaf) => {
                    let after = if inclusive { *leaf.key >= *start } else { *leaf.key > *start };
                    if after {
                        self.pending = Some(node);
                    }
                    return;
                }
                Node::Inner(inner) => inner,
            };
            let prefix = inner.header().prefix.as_slice();
            let rest = &start[depth..];
            let matched = prefix.iter().zip(rest).take_while(|(a, b)| a == b).count();
            if matched < prefix.len() {
                // Start ends inside the prefix, or the prefix byte is larger:
                // the whole subtree follows start. Otherwise it precedes it.
                if matched == rest.len() || prefix[matched] > rest[matched] {
                    self.pending = Some(node);
                }
                return;
            }
            depth += prefix.len();
            if depth == start.len() {
                if inclusive {
                    self.pending = Some(node);
                } else {
                    // Skip the value slot (it holds start itself), keep the children.
                    self.stack.push(Frame { node: inner, cursor: 0 });
                }
                return;
            }
            // The value slot's key is a proper prefix of start: skipped.
            let byte = start[depth];
            self.stack.push(Frame { node: inner, cursor: inner.cursor_after(byte) });
            match inner.find_child(byte) {
                Some(child) => {
                    node = child;
                    depth += 1;
                }
                None => return,
            }
        }
    }

    fn within_upper(&self, key: &[u8]) -> bool {
        match &self.upper {
            Bound::Unbounded => true,
            Bound::Included(end) => key <= end.as_slice(),
            Bound::Excluded(end) => key < end.as_slice(),
        }
    }

    fn finish(&mut self) {
        self.stack.clear();
        self.pending = None;
    }
}

// Once exhausted (stack and pending both empty) `next` keeps returning `None`.
impl<V> std::iter::FusedIterator for Iter<'_, V> {}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a [u8], &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(node) = self.pending.take() {
                let leaf = match node {
                    Node::Leaf(leaf) => Some(leaf),
                    Node::Inner(inner) => {
                        self.stack.push(Frame { node: inner, cursor: 0 });
                        inner.header().value.as_ref()
                    }
                };
                if let Some(leaf) = leaf {
                    if !self.within_upper(&leaf.key) {
                        self.finish();
                        return None;
                    }
                    return Some((&leaf.key, &leaf.value));
                }
                continue;
            }
            let top = self.stack.last_mut()?;
            match top.node.child_at_or_after(top.cursor) {
                Some((_, next, child)) => {
                    top.cursor = next;
                    self.pending = Some(child);
                }
                None => {
                    self.stack.pop();
                }
            }
        }
    }
}
