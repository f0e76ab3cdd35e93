//! The structural operations: insert (leaf split, prefix split, growth),
//! remove (shrink, collapse into the parent's slot) and prefix removal.
//!
//! Each works on `&mut Node<V>`, the parent's child slot, so that a node can
//! replace itself (a leaf becomes a Node4, a Node4 with one child becomes that
//! child) without the parent knowing. Recursion depth is the number of inner
//! nodes on the path, at most the key length plus one.

use std::mem;

use super::node::{count_keys, InnerNode, Leaf, Node, Prefix};

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Puts `leaf` below `inner`, whose path (prefix included) is `leaf.key[..depth]`.
fn attach<V>(inner: &mut InnerNode<V>, leaf: Box<Leaf<V>>, depth: usize) {
    if leaf.key.len() == depth {
        debug_assert!(inner.header().value.is_none());
        inner.header_mut().value = Some(leaf);
    } else {
        let byte = leaf.key[depth];
        inner.add_child(byte, Node::Leaf(leaf));
    }
}

/// Replaces `*slot` by a new Node4 with `prefix` and returns the old content.
fn push_down<V>(slot: &mut Node<V>, prefix: Prefix) -> Node<V> {
    mem::replace(slot, Node::Inner(InnerNode::new4(prefix)))
}

fn as_inner<V>(slot: &mut Node<V>) -> &mut InnerNode<V> {
    match slot {
        Node::Inner(inner) => inner,
        Node::Leaf(_) => unreachable!("push_down just made this an inner node"),
    }
}

/// Inserts `key` into the subtree in `slot`, which sits at `depth` (the
/// subtree's keys share `key[..depth]`). Returns the replaced value.
pub fn insert<V>(slot: &mut Node<V>, key: &[u8], depth: usize, value: V) -> Option<V> {
    match slot {
        Node::Leaf(leaf) => {
            if *leaf.key == *key {
                return Some(mem::replace(&mut leaf.value, value));
            }
            // Lazy expansion ends here: the two keys get a Node4 at the first
            // byte where they differ (or where the shorter one ends).
            let split = depth + common_prefix_len(&leaf.key[depth..], &key[depth..]);
            let old = push_down(slot, Prefix::new(&key[depth..split]));
            let Node::Leaf(old_leaf) = old else { unreachable!("slot held a leaf") };
            let inner = as_inner(slot);
            attach(inner, old_leaf, split);
            attach(inner, Leaf::boxed(key, value), split);
            None
        }
        Node::Inner(inner) => {
            let prefix = inner.header().prefix.as_slice();
            let matched = common_prefix_len(prefix, &key[depth..]);
            if matched < prefix.len() {
                // The key leaves the compressed path: split the path with a
                // Node4 holding the shared part; the old node keeps the rest.
                let upper = Prefix::new(&prefix[..matched]);
                let byte = prefix[matched];
                let lower = Prefix::new(&prefix[matched + 1..]);
                inner.header_mut().prefix = lower;
                let old = push_down(slot, upper);
                let inner = as_inner(slot);
                inner.add_child(byte, old);
                attach(inner, Leaf::boxed(key, value), depth + matched);
                return None;
            }
            let depth = depth + prefix.len();
            if depth == key.len() {
                let header = inner.header_mut();
                return match &mut header.value {
                    Some(leaf) => Some(mem::replace(&mut leaf.value, value)),
                    None => {
                        header.value = Some(Leaf::boxed(key, value));
                        None
                    }
                };
            }
            let byte = key[depth];
            match inner.find_child_mut(byte) {
                Some(child) => insert(child, key, depth + 1, value),
                None => {
                    inner.add_child(byte, Node::Leaf(Leaf::boxed(key, value)));
                    None
                }
            }
        }
    }
}

/// Restores the path-compression rule in `slot` after something below it was
/// removed: an inner node left with only its value becomes that leaf, one
/// left with one child and no value is replaced by the child (whose prefix
/// absorbs the node's prefix and the child's byte).
fn collapse<V>(slot: &mut Node<V>) {
    let Node::Inner(inner) = slot else { return };
    let children = inner.child_count();
    let has_value = inner.header().value.is_some();
    if children == 0 {
        debug_assert!(has_value, "an inner node lost its last key");
        if let Some(leaf) = inner.header_mut().value.take() {
            *slot = Node::Leaf(leaf);
        }
    } else if children == 1 && !has_value {
        let (byte, child) = inner.take_only_child();
        let head = mem::take(&mut inner.header_mut().prefix);
        *slot = match child {
            Node::Leaf(leaf) => Node::Leaf(leaf),
            Node::Inner(mut below) => {
                let header = below.header_mut();
                header.prefix = Prefix::joined(head.as_slice(), byte, header.prefix.as_slice());
                Node::Inner(below)
            }
        };
    }
}

/// Removes `key` from the inner node in `slot` at `depth`. A leaf in `slot`
/// itself is the caller's business (it holds the slot).
pub fn remove<V>(slot: &mut Node<V>, key: &[u8], depth: usize) -> Option<V> {
    let Node::Inner(inner) = slot else { return None };
    let prefix = inner.header().prefix.as_slice();
    if !key[depth..].starts_with(prefix) {
        return None;
    }
    let depth = depth + prefix.len();
    let removed = if depth == key.len() {
        inner.header_mut().value.take()?.value
    } else {
        let byte = key[depth];
        let child = inner.find_child_mut(byte)?;
        match child {
            Node::Inner(_) => return remove(child, key, depth + 1),
            Node::Leaf(leaf) if *leaf.key != *key => return None,
            Node::Leaf(_) => match inner.remove_child(byte) {
                Some(Node::Leaf(leaf)) => leaf.value,
                _ => unreachable!("the leaf just found"),
            },
        }
    };
    collapse(slot);
    Some(removed)
}

/// How the keys below a node relate to a prefix, given that the node's path
/// up to `depth` equals `prefix[..depth]`.
pub enum Coverage {
    /// Every key below starts with the prefix.
    All,
    /// No key below starts with the prefix.
    Disjoint,
    /// The node's own prefix matched; the query continues at this depth,
    /// which is below `prefix.len()`.
    Descend(usize),
}

pub fn coverage<V>(node: &Node<V>, prefix: &[u8], depth: usize) -> Coverage {
    match node {
        Node::Leaf(leaf) if leaf.key.starts_with(prefix) => Coverage::All,
        Node::Leaf(_) => Coverage::Disjoint,
        Node::Inner(inner) => {
            let own = inner.header().prefix.as_slice();
            let rest = &prefix[depth..];
            let matched = common_prefix_len(own, rest);
            if matched == rest.len() {
                Coverage::All
            } else if matched < own.len() {
                Coverage::Disjoint
            } else {
                Coverage::Descend(depth + own.len())
            }
        }
    }
}

/// Removes every key starting with `prefix` below the inner node in `slot`,
/// for which `coverage` said `Descend(depth)`. The covered subtree is
/// unlinked from its parent in one step and dropped; returns its key count.
pub fn remove_prefix<V>(slot: &mut Node<V>, prefix: &[u8], depth: usize) -> usize {
    let Node::Inner(inner) = slot else { return 0 };
    let byte = prefix[depth];
    let Some(child) = inner.find_child_mut(byte) else { return 0 };
    let removed = match coverage(child, prefix, depth + 1) {
        Coverage::Disjoint => return 0,
        Coverage::Descend(below) => return remove_prefix(child, prefix, below),
        Coverage::All => {
            let subtree = inner.remove_child(byte).expect("the child just found");
            count_keys(&subtree)
        }
    };
    collapse(slot);
    removed
}
