//! Ordered iteration, `remove_prefix`, `verify`, statistics and teardown.
//!
//! # Iteration
//! A scan collects up to `SCAN_BATCH_ENTRIES` entries per pin, depth first in byte
//! order, with lock coupling as in lookups (each node's version is read before its
//! children, the parent validated after). On a failed validation it restarts from the
//! root, looking only for keys greater than the last one collected, so every entry is
//! reported once, in order, and was present when its leaf's parent was validated.
//! Entries go to the callback after the pin is dropped, so a slow callback never holds
//! back reclamation, and a callback may use the tree.
//!
//! # remove_prefix
//! Walk down to the subtree whose keys are exactly those starting with the prefix;
//! lock its parent (and grandparent if the parent must collapse or shrink), then lock
//! every node of the subtree top-down, waiting for writers that hold one (README rule
//! 6), collect its entries, unlink it, and unlock its nodes as obsolete. A writer that
//! changed a node of the subtree before it was locked is in the result; one that comes
//! later finds the node obsolete and restarts from the root.

use std::collections::HashSet;

use super::node::{
    depth_of, inline_value, key_byte, key_with_byte, lock_blocking, prefix_mask, read_lock, tag_of, validate,
    write_unlock_obsolete, Inner, Kind, NodeRef, Restart, LOCKED_BIT, NULL_REF, OBSOLETE_BIT, TAG_VALUE,
};
use super::sync::{AtomicU64, Ordering};
use super::tree::{Links, Retry};
use super::OlcArt;

/// Entries a scan collects per pin.
const SCAN_BATCH_ENTRIES: usize = 128;

/// Number of nodes of each kind in a tree (quiescent statistics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCounts {
    pub leaves: usize,
    /// Entries held inline in a last-level node's child word (no leaf).
    pub inline_values: usize,
    pub node4: usize,
    pub node16: usize,
    pub node48: usize,
    pub node256: usize,
}

enum Flow {
    Continue,
    Full,
}

struct Scan<'b> {
    prefix: u128,
    prefix_len: usize,
    /// Only keys greater than this are collected.
    after: Option<u128>,
    batch: &'b mut Vec<(u128, u64)>,
}

impl OlcArt {
    /// Calls `f` on every entry whose key starts with the first `prefix_len` bytes of
    /// `prefix`, in key order.
    pub(crate) fn scan(&self, prefix: u128, prefix_len: usize, f: &mut dyn FnMut(&[u8], u64)) {
        let mut after: Option<u128> = None;
        let mut batch: Vec<(u128, u64)> = Vec::with_capacity(SCAN_BATCH_ENTRIES);
        loop {
            let complete = {
                let _guard = self.pool.pin();
                loop {
                    let start = batch.last().map(|entry| entry.0).or(after);
                    let mut scan = Scan { prefix, prefix_len, after: start, batch: &mut batch };
                    if let Ok(complete) = self.scan_attempt(&mut scan) {
                        break complete;
                    }
                }
            };
            for &(key, value) in &batch {
                f(&key.to_be_bytes()[..self.key_len], value);
            }
            if let Some(&(key, _)) = batch.last() {
                after = Some(key);
            }
            batch.clear();
            if complete {
                return;
            }
        }
    }

    /// Ok(true): the scan reached the end; Ok(false): the batch is full.
    fn scan_attempt(&self, scan: &mut Scan<'_>) -> Result<bool, Restart> {
        let root_version = read_lock(&self.root_version)?;
        let root = self.root.load(Ordering::Acquire);
        let bounded = scan.after.is_some();
        match self.scan_node(root, &self.root_version, root_version, bounded, scan)? {
            Flow::Continue => Ok(true),
            Flow::Full => Ok(false),
        }
    }

    /// `bounded`: keys of this subtree may be `<= scan.after`.
    fn scan_node(
        &self,
        node: NodeRef,
        parent_word: &AtomicU64,
        parent_version: u64,
        bounded: bool,
        scan: &mut Scan<'_>,
    ) -> Result<Flow, Restart> {
        if node == NULL_REF {
            validate(parent_word, parent_version)?;
            return Ok(Flow::Continue);
        }
        let Some(inner) = self.pool.inner(node) else {
            let leaf = self.pool.leaf(node);
            let key = leaf.key();
            let value = leaf.value();
            validate(parent_word, parent_version)?;
            let in_prefix = (key ^ scan.prefix) & prefix_mask(scan.prefix_len) == 0;
            let in_range = scan.after.is_none_or(|after| key > after);
            if in_prefix && in_range {
                scan.batch.push((key, value));
                if scan.batch.len() >= SCAN_BATCH_ENTRIES {
                    return Ok(Flow::Full);
                }
            }
            return Ok(Flow::Continue);
        };
        let header = inner.header();
        let version = read_lock(&header.version)?;
        validate(parent_word, parent_version)?;
        let depth = header.depth();
        let node_prefix = header.prefix();
        let shared = depth.min(scan.prefix_len);
        if (node_prefix ^ scan.prefix) & prefix_mask(shared) != 0 {
            return Ok(Flow::Continue);
        }
        let after = scan.after.unwrap_or(0);
        let mut bounded = bounded;
        if bounded {
            let after_prefix = after & prefix_mask(depth);
            if node_prefix < after_prefix {
                return Ok(Flow::Continue);
            }
            bounded = node_prefix == after_prefix;
        }
        let mut from = if bounded { key_byte(after, depth) as usize } else { 0 };
        let mut last = 255usize;
        if depth < scan.prefix_len {
            let wanted = key_byte(scan.prefix, depth) as usize;
            from = from.max(wanted);
            last = wanted;
        }
        while let Some((byte, child)) = inner.next_child(from) {
            if byte as usize > last {
                break;
            }
            from = byte as usize + 1;
            if tag_of(child) == TAG_VALUE {
                validate(&header.version, version)?;
                let key = key_with_byte(node_prefix, depth, byte);
                if scan.after.is_none_or(|after| key > after) {
                    scan.batch.push((key, inline_value(child)));
                    if scan.batch.len() >= SCAN_BATCH_ENTRIES {
                        return Ok(Flow::Full);
                    }
                }
                continue;
            }
            let child_bounded = bounded && byte == key_byte(after, depth);
            if let Flow::Full = self.scan_node(child, &header.version, version, child_bounded, scan)? {
                return Ok(Flow::Full);
            }
        }
        validate(&header.version, version)?;
        Ok(Flow::Continue)
    }

    // -- remove_prefix -------------------------------------------------------------

    pub(crate) fn remove_prefix_key(&self, prefix: u128, prefix_len: usize) -> Vec<(u128, u64)> {
        if prefix_len == self.key_len {
            // One key; the only prefix whose subtree can be an inline value.
            return self.remove_key(prefix, None).map(|value| vec![(prefix, value)]).unwrap_or_default();
        }
        let removed = self
            .run(|memory_short| self.remove_prefix_attempt(prefix, prefix_len, memory_short))
            .unwrap_or_default();
        self.len.fetch_sub(removed.len(), Ordering::Relaxed);
        removed
    }

    fn remove_prefix_attempt(&self, prefix: u128, prefix_len: usize, memory_short: bool) -> Result<Vec<(u128, u64)>, Retry> {
        let pool = &*self.pool;
        let mut links = Links::at_root(read_lock(&self.root_version)?);
        let mut node = self.root.load(Ordering::Acquire);
        loop {
            if node == NULL_REF {
                validate(self.version_word(links.parent), links.parent_version)?;
                return Ok(Vec::new());
            }
            let covered = match pool.inner(node) {
                None => {
                    // A leaf: an inline value is reached only with a full-length prefix,
                    // which `remove_prefix_key` hands to `remove_key`.
                    let Some((key, _)) = self.entry(links.parent, links.parent_byte, node) else {
                        return Err(Retry::Restart);
                    };
                    (key ^ prefix) & prefix_mask(prefix_len) == 0
                }
                Some(inner) => {
                    let header = inner.header();
                    let version = read_lock(&header.version)?;
                    validate(self.version_word(links.parent), links.parent_version)?;
                    let depth = header.depth();
                    let shared = depth.min(prefix_len);
                    if (header.prefix() ^ prefix) & prefix_mask(shared) != 0 {
                        false
                    } else if depth >= prefix_len {
                        true
                    } else {
                        let byte = key_byte(prefix, depth);
                        let child = inner.find(byte);
                        if child == NULL_REF {
                            validate(&header.version, version)?;
                            return Ok(Vec::new());
                        }
                        links = links.down(inner, version, byte, node);
                        node = child;
                        continue;
                    }
                }
            };
            if !covered {
                validate(self.version_word(links.parent), links.parent_version)?;
                return Ok(Vec::new());
            }
            return self.detach_subtree(links, node, memory_short);
        }
    }

    /// Locks the whole subtree at `node` under its locked parent, collects it, unlinks
    /// it, and retires its nodes.
    fn detach_subtree(&self, links: Links<'_>, node: NodeRef, memory_short: bool) -> Result<Vec<(u128, u64)>, Retry> {
        let mut locked: Vec<NodeRef> = Vec::new();
        let mut leaves: Vec<NodeRef> = Vec::new();
        let mut entries: Vec<(u128, u64)> = Vec::new();
        self.unlink(links, memory_short, &mut || self.lock_subtree(node, &mut locked, &mut leaves, &mut entries))?;
        for &inner_node in &locked {
            if let Some(inner) = self.pool.inner(inner_node) {
                write_unlock_obsolete(&inner.header().version);
            }
        }
        for &retired in locked.iter().chain(leaves.iter()) {
            self.pool.retire(retired);
        }
        Ok(entries)
    }

    /// Write-locks every inner node below (and at) `node`, top-down, waiting for any
    /// writer holding one; collects the leaves in key order. Called with the subtree's
    /// parent locked, so no node of it can be replaced meanwhile.
    fn lock_subtree(&self, node: NodeRef, locked: &mut Vec<NodeRef>, leaves: &mut Vec<NodeRef>, entries: &mut Vec<(u128, u64)>) {
        let Some(inner) = self.pool.inner(node) else {
            let leaf = self.pool.leaf(node);
            entries.push((leaf.key(), leaf.value()));
            leaves.push(node);
            return;
        };
        let obtained = lock_blocking(&inner.header().version);
        debug_assert!(obtained, "a node below a locked parent is obsolete");
        if !obtained {
            return;
        }
        locked.push(node);
        let header = inner.header();
        let mut from = 0usize;
        while let Some((byte, child)) = inner.next_child(from) {
            if tag_of(child) == TAG_VALUE {
                entries.push((key_with_byte(header.prefix(), header.depth(), byte), inline_value(child)));
            } else {
                self.lock_subtree(child, locked, leaves, entries);
            }
            from = byte as usize + 1;
        }
    }

    // -- verify, statistics, teardown -------------------------------------------------

    pub(crate) fn verify_tree(&self) -> Result<(), String> {
        let _guard = self.pool.pin();
        let root_version = self.root_version.load(Ordering::Acquire);
        if root_version & (LOCKED_BIT | OBSOLETE_BIT) != 0 {
            return Err(format!("root slot version {root_version:#x} locked or obsolete"));
        }
        let mut check = Verify {
            tree: self,
            leaves: 0,
            last_key: None,
            seen: HashSet::new(),
            relaxed_fill: self.shrinks_skipped.load(Ordering::Relaxed) > 0,
        };
        check.node(self.root.load(Ordering::Acquire), 0, 0)?;
        if check.leaves != self.len() {
            return Err(format!("len() is {} but the tree holds {} entries", self.len(), check.leaves));
        }
        Ok(())
    }

    /// Nodes of each kind (quiescent use).
    pub fn node_counts(&self) -> NodeCounts {
        let _guard = self.pool.pin();
        let mut counts = NodeCounts::default();
        let mut stack = vec![self.root.load(Ordering::Acquire)];
        while let Some(node) = stack.pop() {
            if node == NULL_REF {
                continue;
            }
            if tag_of(node) == TAG_VALUE {
                counts.inline_values += 1;
                continue;
            }
            let Some(inner) = self.pool.inner(node) else {
                counts.leaves += 1;
                continue;
            };
            match inner.kind() {
                Kind::N4 => counts.node4 += 1,
                Kind::N16 => counts.node16 += 1,
                Kind::N48 => counts.node48 += 1,
                Kind::N256 => counts.node256 += 1,
            }
            let mut from = 0usize;
            while let Some((byte, child)) = inner.next_child(from) {
                stack.push(child);
                from = byte as usize + 1;
            }
        }
        counts
    }

    /// Returns every node to the pool at once (no other thread can reach the tree).
    pub(crate) fn free_all(&mut self) {
        let mut stack = vec![self.root.swap(NULL_REF, Ordering::AcqRel)];
        while let Some(node) = stack.pop() {
            if node == NULL_REF {
                continue;
            }
            if let Some(inner) = self.pool.inner(node) {
                let mut from = 0usize;
                while let Some((byte, child)) = inner.next_child(from) {
                    stack.push(child);
                    from = byte as usize + 1;
                }
            }
            self.pool.free_now(node);
        }
        self.len.store(0, Ordering::Relaxed);
    }
}

struct Verify<'t> {
    tree: &'t OlcArt,
    leaves: usize,
    last_key: Option<u128>,
    seen: HashSet<NodeRef>,
    /// A removal skipped a shrink for lack of memory: fill minimums are not enforced.
    relaxed_fill: bool,
}

impl Verify<'_> {
    /// `path`: the key bytes `0..path_len` fixed by the ancestors.
    fn node(&mut self, node: NodeRef, path: u128, path_len: usize) -> Result<(), String> {
        if node == NULL_REF {
            return if path_len == 0 { Ok(()) } else { Err("an inner node has a null child".into()) };
        }
        if !self.seen.insert(node) {
            return Err(format!("node {node:#x} reached twice"));
        }
        let key_len = self.tree.key_len;
        let Some(inner) = self.tree.pool.inner(node) else {
            let key = self.tree.pool.leaf(node).key();
            if (key ^ path) & prefix_mask(path_len) != 0 {
                return Err(format!("leaf {key:#x} off its path {path:#x}/{path_len}"));
            }
            if key & !prefix_mask(key_len) != 0 {
                return Err(format!("leaf {key:#x} longer than {key_len} bytes"));
            }
            return self.entry(key);
        };
        if depth_of(node) != inner.header().depth() {
            return Err(format!("word {node:#x} carries depth {} but the node has {}", depth_of(node), inner.header().depth()));
        }
        self.inner(inner, path, path_len)
    }

    /// An entry (leaf or inline value) with `key`, in key order.
    fn entry(&mut self, key: u128) -> Result<(), String> {
        if self.last_key.is_some_and(|last| last >= key) {
            return Err(format!("entry {key:#x} out of order"));
        }
        self.last_key = Some(key);
        self.leaves += 1;
        Ok(())
    }

    fn inner(&mut self, inner: Inner<'_>, path: u128, path_len: usize) -> Result<(), String> {
        let header = inner.header();
        let kind = inner.kind();
        let version = header.version.load(Ordering::Acquire);
        if version & (LOCKED_BIT | OBSOLETE_BIT) != 0 {
            return Err(format!("{kind:?} version {version:#x} locked or obsolete"));
        }
        let depth = header.depth();
        let prefix = header.prefix();
        if depth < path_len || depth >= self.tree.key_len {
            return Err(format!("{kind:?} depth {depth} outside {path_len}..{}", self.tree.key_len));
        }
        if (prefix ^ path) & prefix_mask(path_len) != 0 || prefix & !prefix_mask(depth) != 0 {
            return Err(format!("{kind:?} prefix {prefix:#x}/{depth} disagrees with path {path:#x}/{path_len}"));
        }
        let count = inner.count();
        let minimum = if self.relaxed_fill { 1 } else { kind.children_min() };
        if count < minimum || count > kind.capacity() {
            return Err(format!("{kind:?} at depth {depth} has {count} children"));
        }
        inner.check_layout()?;
        let mut from = 0usize;
        let mut children = 0usize;
        while let Some((byte, child)) = inner.next_child(from) {
            children += 1;
            let child_path = key_with_byte(prefix, depth, byte);
            from = byte as usize + 1;
            if tag_of(child) == TAG_VALUE {
                if depth + 1 != self.tree.key_len {
                    return Err(format!("inline value under a {kind:?} at depth {depth}, not the last byte"));
                }
                self.entry(child_path)?;
                continue;
            }
            self.node(child, child_path, depth + 1)?;
        }
        if children != count {
            return Err(format!("{kind:?} count {count} but {children} children"));
        }
        Ok(())
    }
}
