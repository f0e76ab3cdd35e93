//! `verify()` (the invariants of README.md "Sequential tree", checked over the
//! whole tree) and the statistics walk.

use super::node::{InnerNode, Node, NodeKind, Prefix, PREFIX_INLINE_BYTES_MAX};
use super::Art;

/// Node counts by kind and memory, from one walk over the tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    pub leaves: usize,
    pub node4: usize,
    pub node16: usize,
    pub node48: usize,
    pub node256: usize,
    /// Inner nodes holding a key that ends at them.
    pub value_slots: usize,
    /// Inner nodes on the longest root-to-leaf path.
    pub inner_depth_max: usize,
    /// Bytes of node allocations: inner nodes, heap prefixes, leaves and
    /// their key bytes (not what the values own on the heap).
    pub memory_bytes: usize,
}

impl NodeStats {
    pub fn inner_nodes(&self) -> usize {
        self.node4 + self.node16 + self.node48 + self.node256
    }

    pub(crate) fn collect<V>(root: Option<&Node<V>>) -> NodeStats {
        let mut stats = NodeStats::default();
        if let Some(root) = root {
            stats.add(root, 0);
        }
        stats
    }

    fn add_leaf<V>(&mut self, key_len: usize) {
        self.leaves += 1;
        self.memory_bytes += std::mem::size_of::<super::node::Leaf<V>>() + key_len;
    }

    fn add<V>(&mut self, node: &Node<V>, inner_depth: usize) {
        let inner = match node {
            Node::Leaf(leaf) => {
                self.add_leaf::<V>(leaf.key.len());
                self.inner_depth_max = self.inner_depth_max.max(inner_depth);
                return;
            }
            Node::Inner(inner) => inner,
        };
        match inner.kind() {
            NodeKind::Node4 => self.node4 += 1,
            NodeKind::Node16 => self.node16 += 1,
            NodeKind::Node48 => self.node48 += 1,
            NodeKind::Node256 => self.node256 += 1,
        }
        self.memory_bytes += inner.memory_bytes();
        let inner_depth = inner_depth + 1;
        self.inner_depth_max = self.inner_depth_max.max(inner_depth);
        if let Some(leaf) = &inner.header().value {
            self.value_slots += 1;
            self.add_leaf::<V>(leaf.key.len());
        }
        let mut cursor = 0;
        while let Some((_, next, child)) = inner.child_at_or_after(cursor) {
            self.add(child, inner_depth);
            cursor = next;
        }
    }
}

impl<V> Art<V> {
    /// Checks every structural invariant and returns the first violation.
    /// Walks the whole tree: for tests and debugging.
    pub fn verify(&self) -> Result<(), String> {
        let mut keys = 0;
        if let Some(root) = &self.root {
            verify_node(root, &mut Vec::new(), &mut keys)?;
        }
        if keys != self.len {
            return Err(format!("len() is {} but the tree holds {keys} keys", self.len));
        }
        let mut previous: Option<&[u8]> = None;
        let mut iterated = 0;
        for (key, _) in self.iter() {
            if let Some(previous) = previous {
                if previous >= key {
                    return Err(format!("iteration yields {previous:?} before {key:?}"));
                }
            }
            previous = Some(key);
            iterated += 1;
        }
        if iterated != self.len {
            return Err(format!("iteration yields {iterated} keys, len() is {}", self.len));
        }
        Ok(())
    }
}

/// `path` is the key bytes leading to `node` (parent prefixes and child bytes).
fn verify_node<V>(node: &Node<V>, path: &mut Vec<u8>, keys: &mut usize) -> Result<(), String> {
    let inner = match node {
        Node::Leaf(leaf) => {
            if !leaf.key.starts_with(path) {
                return Err(format!("leaf {:?} below path {path:?}", leaf.key));
            }
            *keys += 1;
            return Ok(());
        }
        Node::Inner(inner) => inner,
    };
    let path_len = path.len();
    verify_header(inner, path)?;
    if inner.header().value.is_some() {
        *keys += 1;
    }
    let mut cursor = 0;
    let mut previous: Option<u8> = None;
    while let Some((byte, next, child)) = inner.child_at_or_after(cursor) {
        if previous.is_some_and(|p| p >= byte) {
            return Err(format!("children of {path:?} out of order at byte {byte}"));
        }
        previous = Some(byte);
        path.push(byte);
        verify_node(child, path, keys)?;
        path.pop();
        cursor = next;
    }
    path.truncate(path_len);
    Ok(())
}

/// Checks one inner node and extends `path` by its prefix.
fn verify_header<V>(inner: &InnerNode<V>, path: &mut Vec<u8>) -> Result<(), String> {
    let header = inner.header();
    let at = path.clone();
    inner.verify_layout().map_err(|e| format!("node at {at:?}: {e}"))?;
    let prefix = header.prefix.as_slice();
    let inline = matches!(header.prefix, Prefix::Inline { .. });
    if inline != (prefix.len() <= PREFIX_INLINE_BYTES_MAX) {
        return Err(format!("node at {at:?}: prefix of {} bytes stored inline={inline}", prefix.len()));
    }
    path.extend_from_slice(prefix);
    if let Some(leaf) = &header.value {
        if *leaf.key != path[..] {
            return Err(format!("value slot of path {path:?} holds key {:?}", leaf.key));
        }
    }
    let keys_here = inner.child_count() + usize::from(header.value.is_some());
    if keys_here < 2 {
        return Err(format!("node at {at:?} branches {keys_here} way(s): path compression broken"));
    }
    Ok(())
}
