//! Lookups, inserts and removals with optimistic lock coupling (Leis et al. 2016).
//!
//! Every operation runs as *attempts* inside one epoch pin. An attempt walks down
//! from the root slot, reading each node's version before its contents and
//! validating the parent's version after reading the child's (lock coupling), and
//! returns `Err(Retry::Restart)` when a validation or lock upgrade fails; the driver
//! then starts a new attempt from the root. Writers upgrade to write locks only on
//! the nodes they change, top-down, by compare-and-swap from the version they read,
//! so a writer never waits for a lock (README rules 4-5).

use super::node::{
    depth_of, first_difference, inline_value, inline_word, key_byte, key_with_byte, prefix_mask, read_lock, tag_of,
    try_upgrade, validate, write_unlock, write_unlock_obsolete, Inner, Kind, NodeRef, Restart, NULL_REF, TAG_LEAF,
    TAG_VALUE,
};
use super::sync::{AtomicU64, Ordering};
use super::{LastLevelHint, OlcArt, OutOfNodeMemory};

/// Reclaims one operation may wait for when node memory runs short, each of which freed
/// something: bounds the wait of an operation whose freed nodes other threads keep
/// taking.
const RECLAIMS_PER_OPERATION_MAX: usize = 64;

/// Why an attempt stopped without a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// A version changed under us: start again from the root.
    Restart,
    /// A size class was empty: unpin, reclaim, start again (or fail).
    NoMemory,
}

impl From<Restart> for Retry {
    fn from(_: Restart) -> Retry {
        Retry::Restart
    }
}

pub(crate) enum InsertOutcome {
    Inserted,
    /// The key was there with this value (for upsert: the value replaced).
    Present(u64),
}

/// Where a child word lives: the root slot or an inner node.
#[derive(Clone, Copy)]
pub(crate) enum Parent<'a> {
    Root,
    Node(Inner<'a>),
}

impl OlcArt {
    // -- the parent abstraction -------------------------------------------------

    pub(crate) fn version_word<'a>(&'a self, parent: Parent<'a>) -> &'a AtomicU64 {
        match parent {
            Parent::Root => &self.root_version,
            Parent::Node(inner) => &inner.header().version,
        }
    }

    /// Points `parent`'s child word for `byte` at `child` (caller holds the lock).
    pub(crate) fn set_child(&self, parent: Parent<'_>, byte: u8, child: NodeRef) {
        match parent {
            Parent::Root => self.root.store(child, Ordering::Release),
            Parent::Node(inner) => {
                let replaced = inner.replace(byte, child);
                debug_assert!(replaced, "set_child on an absent byte");
            }
        }
    }

    fn upgrade(&self, parent: Parent<'_>, version: u64) -> Result<(), Restart> {
        try_upgrade(self.version_word(parent), version)
    }

    fn unlock(&self, parent: Parent<'_>) {
        write_unlock(self.version_word(parent));
    }

    // -- the driver ----------------------------------------------------------------

    /// Runs attempts until one returns a result. `attempt(memory_short)`: after a
    /// `NoMemory`, the driver unpins, waits until what was retired is reclaimed (by
    /// this thread or another), and retries, for as long as some slot was freed since
    /// the failed attempt began (other threads may take what one reclaim freed before
    /// this one retries: with many threads churning on few cores, one reclaim is not
    /// enough), at most `RECLAIMS_PER_OPERATION_MAX` times;
    /// then it retries once with `memory_short = true` (removals skip shrinking), and
    /// after that it is `OutOfNodeMemory`.
    pub(crate) fn run<T>(&self, mut attempt: impl FnMut(bool) -> Result<T, Retry>) -> Result<T, OutOfNodeMemory> {
        let mut reclaims = 0;
        let mut memory_short = false;
        loop {
            let freed_before = self.pool.freed_total();
            let outcome = {
                let _guard = self.pool.pin();
                loop {
                    match attempt(memory_short) {
                        Err(Retry::Restart) => continue,
                        other => break other,
                    }
                }
            };
            match outcome {
                Ok(value) => return Ok(value),
                Err(Retry::Restart) => continue,
                Err(Retry::NoMemory) if reclaims < RECLAIMS_PER_OPERATION_MAX && self.pool.reclaim_blocking(freed_before) > 0 => {
                    reclaims += 1;
                }
                Err(Retry::NoMemory) if !memory_short => memory_short = true,
                Err(Retry::NoMemory) => return Err(OutOfNodeMemory),
            }
        }
    }

    // -- lookup ------------------------------------------------------------------

    /// Unpinned: a lookup's only defence against slot reuse is the second line of
    /// README rule 8 (monotonic versions, every value validated against a node that
    /// was still linked), which alone makes a reused slot cost a restart. The epoch
    /// pin's store and `SeqCst` fence were a third of a cached lookup's time.
    #[inline]
    pub(crate) fn get_key(&self, key: u128) -> Option<u64> {
        loop {
            if let Ok(found) = self.get_attempt(key, None) {
                return found;
            }
        }
    }

    /// `get_key` through a [`LastLevelHint`]: when the hint names the last-level node
    /// of the key's prefix and that node's version is still the one the hint saw, the
    /// node is still linked where it was (an unlink marks it obsolete, a reuse advances
    /// its version), so every key of the prefix is in it: read the child word and
    /// validate, as one step of a walk. Otherwise walk from the root, and leave a hint
    /// when the walk ends at an inline value.
    #[inline]
    pub(crate) fn get_key_hinted(&self, key: u128, hint: &mut LastLevelHint) -> Option<u64> {
        if hint.node != NULL_REF && key & prefix_mask(depth_of(hint.node)) == hint.prefix {
            if let Some(inner) = self.pool.inner(hint.node) {
                let version = &inner.header().version;
                if version.load(Ordering::Acquire) == hint.version {
                    let child = inner.find(key_byte(key, depth_of(hint.node)));
                    if validate(version, hint.version).is_ok() {
                        if child == NULL_REF {
                            return None;
                        }
                        if tag_of(child) == TAG_VALUE {
                            return Some(inline_value(child));
                        }
                    }
                }
            }
        }
        loop {
            if let Ok(found) = self.get_attempt(key, Some(&mut *hint)) {
                return found;
            }
        }
    }

    /// No prefix comparisons on the way down: the leaf holds the whole key, and a key
    /// that leaves the path of its prefix ends at a leaf with another key. Only an
    /// inline value (which has no key of its own) is checked against its node's prefix.
    #[inline]
    fn get_attempt(&self, key: u128, hint: Option<&mut LastLevelHint>) -> Result<Option<u64>, Restart> {
        let pool = &*self.pool;
        let mut parent_word = &self.root_version;
        let mut parent_version = read_lock(parent_word)?;
        let mut node = self.root.load(Ordering::Acquire);
        loop {
            if node == NULL_REF {
                validate(parent_word, parent_version)?;
                return Ok(None);
            }
            let Some(inner) = pool.inner(node) else {
                // The root slot or a node's word: a leaf (inline values are handled below).
                let leaf = pool.leaf(node);
                let leaf_key = leaf.key();
                let value = leaf.value();
                validate(parent_word, parent_version)?;
                return Ok(if leaf_key == key { Some(value) } else { None });
            };
            let header = inner.header();
            let version = read_lock(&header.version)?;
            validate(parent_word, parent_version)?;
            // From the word, not the header: the child word's load need not wait.
            let depth = depth_of(node);
            let child = inner.find(key_byte(key, depth));
            if tag_of(child) == TAG_VALUE {
                let prefix = header.prefix();
                validate(&header.version, version)?;
                let matches = (prefix ^ key) & prefix_mask(depth) == 0;
                if let (true, Some(hint)) = (matches, hint) {
                    *hint = LastLevelHint { node, version, prefix: key & prefix_mask(depth) };
                }
                return Ok(matches.then_some(inline_value(child)));
            }
            node = child;
            parent_word = &header.version;
            parent_version = version;
        }
    }

    // -- insert ------------------------------------------------------------------

    pub(crate) fn insert_key(&self, key: u128, value: u64, upsert: bool) -> Result<InsertOutcome, OutOfNodeMemory> {
        let outcome = self.run(|_| self.insert_attempt(key, value, upsert))?;
        if let InsertOutcome::Inserted = outcome {
            self.len.fetch_add(1, Ordering::Relaxed);
        }
        Ok(outcome)
    }

    fn insert_attempt(&self, key: u128, value: u64, upsert: bool) -> Result<InsertOutcome, Retry> {
        let pool = &*self.pool;
        let mut parent = Parent::Root;
        let mut parent_version = read_lock(&self.root_version)?;
        let mut parent_byte = 0u8;
        let mut node = self.root.load(Ordering::Acquire);
        loop {
            if node == NULL_REF {
                // Only the root slot is ever empty (README rule 2).
                self.upgrade(parent, parent_version)?;
                let Ok(leaf) = pool.allocate_leaf(key, value) else {
                    self.unlock(parent);
                    return Err(Retry::NoMemory);
                };
                self.set_child(parent, parent_byte, leaf);
                self.unlock(parent);
                return Ok(InsertOutcome::Inserted);
            }
            let Some(inner) = pool.inner(node) else {
                return self.insert_at_leaf(parent, parent_version, parent_byte, node, key, value, upsert);
            };
            let header = inner.header();
            let version = read_lock(&header.version)?;
            validate(self.version_word(parent), parent_version)?;
            let depth = header.depth();
            let prefix = header.prefix();
            let differ = first_difference(prefix, key);
            if differ < depth {
                // The key leaves the node's compressed path: a new Node4 above it.
                self.upgrade(parent, parent_version)?;
                return self.link_branch(parent, parent_byte, differ, key, value, prefix, node);
            }
            let byte = key_byte(key, depth);
            let child = inner.find(byte);
            if tag_of(child) == TAG_VALUE {
                // Prefix and byte matched at the last level: this is the key.
                return self.insert_at_inline(inner, version, byte, child, key, value, upsert);
            }
            if child != NULL_REF {
                parent = Parent::Node(inner);
                parent_version = version;
                parent_byte = byte;
                node = child;
                continue;
            }
            if !inner.is_full() {
                try_upgrade(&header.version, version)?;
                let Ok(word) = self.new_entry(key, value, depth) else {
                    write_unlock(&header.version);
                    return Err(Retry::NoMemory);
                };
                inner.insert(byte, word);
                write_unlock(&header.version);
                return Ok(InsertOutcome::Inserted);
            }
            self.upgrade(parent, parent_version)?;
            if try_upgrade(&header.version, version).is_err() {
                self.unlock(parent);
                return Err(Retry::Restart);
            }
            return self.grow(parent, parent_byte, node, inner, byte, key, value);
        }
    }

    /// A child word for a new entry whose byte sits at `depth`: the value inline when
    /// `depth` is the last byte and the value fits, else a fresh leaf.
    fn new_entry(&self, key: u128, value: u64, depth: usize) -> Result<NodeRef, super::OutOfNodeMemory> {
        match inline_word(value) {
            Some(word) if depth + 1 == self.key_len => Ok(word),
            _ => self.pool.allocate_leaf(key, value),
        }
    }

    /// The walk found `key` as an inline value in `inner` (version `version`).
    #[allow(clippy::too_many_arguments)]
    fn insert_at_inline(
        &self,
        inner: Inner<'_>,
        version: u64,
        byte: u8,
        word: NodeRef,
        key: u128,
        value: u64,
        upsert: bool,
    ) -> Result<InsertOutcome, Retry> {
        let header = inner.header();
        let existing = inline_value(word);
        if !upsert {
            validate(&header.version, version)?;
            return Ok(InsertOutcome::Present(existing));
        }
        try_upgrade(&header.version, version)?;
        let Ok(replacement) = self.new_entry(key, value, header.depth()) else {
            write_unlock(&header.version);
            return Err(Retry::NoMemory);
        };
        inner.replace(byte, replacement);
        write_unlock(&header.version);
        Ok(InsertOutcome::Present(existing))
    }

    /// The walk ended at a leaf in `parent`'s word for `parent_byte`.
    #[allow(clippy::too_many_arguments)]
    fn insert_at_leaf(
        &self,
        parent: Parent<'_>,
        parent_version: u64,
        parent_byte: u8,
        node: NodeRef,
        key: u128,
        value: u64,
        upsert: bool,
    ) -> Result<InsertOutcome, Retry> {
        let leaf = self.pool.leaf(node);
        let leaf_key = leaf.key();
        if leaf_key == key {
            if !upsert {
                let existing = leaf.value();
                validate(self.version_word(parent), parent_version)?;
                return Ok(InsertOutcome::Present(existing));
            }
            // A leaf's value changes only under its parent's lock (README rule 7).
            self.upgrade(parent, parent_version)?;
            let old = leaf.value();
            leaf.value.store(value, Ordering::Release);
            self.unlock(parent);
            return Ok(InsertOutcome::Present(old));
        }
        self.upgrade(parent, parent_version)?;
        let depth = first_difference(leaf_key, key);
        self.link_branch(parent, parent_byte, depth, key, value, leaf_key, node)
    }

    /// With `parent` locked: replaces its word for `parent_byte` (now `other`, whose
    /// keys start with `other_key`) by a new Node4 at `depth` holding `other` and a new
    /// leaf for `key`. Unlocks `parent`.
    #[allow(clippy::too_many_arguments)]
    fn link_branch(
        &self,
        parent: Parent<'_>,
        parent_byte: u8,
        depth: usize,
        key: u128,
        value: u64,
        other_key: u128,
        other: NodeRef,
    ) -> Result<InsertOutcome, Retry> {
        let pool = &*self.pool;
        let Ok(branch) = pool.allocate_inner(Kind::N4, depth, key) else {
            self.unlock(parent);
            return Err(Retry::NoMemory);
        };
        let Ok(leaf) = self.new_entry(key, value, depth) else {
            pool.free_now(branch);
            self.unlock(parent);
            return Err(Retry::NoMemory);
        };
        if let Some(inner) = pool.inner(branch) {
            inner.insert(key_byte(other_key, depth), other);
            inner.insert(key_byte(key, depth), leaf);
        }
        self.set_child(parent, parent_byte, branch);
        self.unlock(parent);
        Ok(InsertOutcome::Inserted)
    }

    /// With `parent` and the full `node` locked: replaces `node` by a copy of the next
    /// larger kind plus a leaf for `key` at `byte`; `node` becomes obsolete and is
    /// retired. Unlocks both.
    #[allow(clippy::too_many_arguments)]
    fn grow(
        &self,
        parent: Parent<'_>,
        parent_byte: u8,
        node: NodeRef,
        inner: Inner<'_>,
        byte: u8,
        key: u128,
        value: u64,
    ) -> Result<InsertOutcome, Retry> {
        let pool = &*self.pool;
        let header = inner.header();
        let unlock_both = || {
            write_unlock(&header.version);
            self.unlock(parent);
        };
        let Some(larger_kind) = inner.kind().larger() else {
            // A Node256 is never full when a child is missing; a torn read got us here.
            unlock_both();
            return Err(Retry::Restart);
        };
        let Ok(larger) = pool.allocate_inner(larger_kind, header.depth(), header.prefix()) else {
            unlock_both();
            return Err(Retry::NoMemory);
        };
        let Ok(leaf) = self.new_entry(key, value, header.depth()) else {
            pool.free_now(larger);
            unlock_both();
            return Err(Retry::NoMemory);
        };
        if let Some(larger_inner) = pool.inner(larger) {
            inner.copy_children_into(larger_inner, None);
            larger_inner.insert(byte, leaf);
        }
        self.set_child(parent, parent_byte, larger);
        write_unlock_obsolete(&header.version);
        self.unlock(parent);
        pool.retire(node);
        Ok(InsertOutcome::Inserted)
    }

    // -- remove ------------------------------------------------------------------

    /// Removes `key` (if `expected` is given, only when it maps to that value).
    pub(crate) fn remove_key(&self, key: u128, expected: Option<u64>) -> Option<u64> {
        let removed = self.run(|memory_short| self.remove_attempt(key, expected, memory_short)).ok().flatten();
        if removed.is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        removed
    }

    fn remove_attempt(&self, key: u128, expected: Option<u64>, memory_short: bool) -> Result<Option<u64>, Retry> {
        let pool = &*self.pool;
        let mut links = Links::at_root(read_lock(&self.root_version)?);
        let mut node = self.root.load(Ordering::Acquire);
        loop {
            if node == NULL_REF {
                validate(self.version_word(links.parent), links.parent_version)?;
                return Ok(None);
            }
            let Some(inner) = pool.inner(node) else {
                let Some((entry_key, current)) = self.entry(links.parent, links.parent_byte, node) else {
                    return Err(Retry::Restart);
                };
                if entry_key != key || expected.is_some_and(|expected| expected != current) {
                    validate(self.version_word(links.parent), links.parent_version)?;
                    return Ok(None);
                }
                self.unlink(links, memory_short, &mut || {})?;
                if tag_of(node) == TAG_LEAF {
                    pool.retire(node);
                }
                return Ok(Some(current));
            };
            let header = inner.header();
            let version = read_lock(&header.version)?;
            validate(self.version_word(links.parent), links.parent_version)?;
            let byte = key_byte(key, header.depth());
            let child = inner.find(byte);
            if child == NULL_REF {
                validate(&header.version, version)?;
                return Ok(None);
            }
            links = links.down(inner, version, byte, node);
            node = child;
        }
    }

    /// The key and value of the entry `node` (a leaf, or an inline value in `parent`'s
    /// word for `byte`); `None` for anything else (a torn read: restart).
    pub(crate) fn entry(&self, parent: Parent<'_>, byte: u8, node: NodeRef) -> Option<(u128, u64)> {
        match tag_of(node) {
            TAG_LEAF => {
                let leaf = self.pool.leaf(node);
                Some((leaf.key(), leaf.value()))
            }
            TAG_VALUE => match parent {
                Parent::Node(inner) => {
                    let header = inner.header();
                    Some((key_with_byte(header.prefix(), header.depth(), byte), inline_value(node)))
                }
                Parent::Root => None,
            },
            _ => None,
        }
    }

    /// Unlinks the child at `links.parent_byte` of `links.parent` (versions as read on
    /// the way down). Depending on the parent's fill this is an in-place removal, a
    /// collapse of a one-child-left node into its other child (in the grandparent), or a
    /// shrink to the smallest kind that fits (in the grandparent). `on_locked` runs once
    /// every lock is held and every allocation made, just before the unlink.
    /// The caller retires the unlinked child.
    pub(crate) fn unlink(&self, links: Links<'_>, memory_short: bool, on_locked: &mut dyn FnMut()) -> Result<(), Retry> {
        let Links { grand, grand_version, grand_byte, parent, parent_version, parent_byte, .. } = links;
        let Parent::Node(inner) = parent else {
            self.upgrade(parent, parent_version)?;
            on_locked();
            self.root.store(NULL_REF, Ordering::Release);
            self.unlock(parent);
            return Ok(());
        };
        let header = inner.header();
        let kind = inner.kind();
        let remaining = inner.count().saturating_sub(1);
        if remaining == 0 {
            return self.unlink_emptied(links, memory_short, on_locked);
        }
        let collapse = remaining == 1;
        let shrink = !collapse && remaining <= kind.shrink_at() && !memory_short;
        if !collapse && !shrink {
            try_upgrade(&header.version, parent_version)?;
            if remaining <= kind.shrink_at() {
                self.shrinks_skipped.fetch_add(1, Ordering::Relaxed);
            }
            on_locked();
            inner.remove(parent_byte);
            write_unlock(&header.version);
            return Ok(());
        }
        self.upgrade(grand, grand_version)?;
        if try_upgrade(&header.version, parent_version).is_err() {
            self.unlock(grand);
            return Err(Retry::Restart);
        }
        let pool = &*self.pool;
        let replacement = if collapse {
            match self.collapse_target(inner, parent_byte) {
                Ok(sibling) => sibling,
                Err(_) if memory_short => {
                    // No leaf for an inline sibling: leave a one-child node (README rule 3).
                    self.unlock(grand);
                    self.shrinks_skipped.fetch_add(1, Ordering::Relaxed);
                    on_locked();
                    inner.remove(parent_byte);
                    write_unlock(&header.version);
                    return Ok(());
                }
                Err(_) => {
                    write_unlock(&header.version);
                    self.unlock(grand);
                    return Err(Retry::NoMemory);
                }
            }
        } else {
            let Ok(smaller) = pool.allocate_inner(Kind::fitting(remaining), header.depth(), header.prefix()) else {
                write_unlock(&header.version);
                self.unlock(grand);
                return Err(Retry::NoMemory);
            };
            if let Some(smaller_inner) = pool.inner(smaller) {
                inner.copy_children_into(smaller_inner, Some(parent_byte));
            }
            smaller
        };
        on_locked();
        self.set_child(grand, grand_byte, replacement);
        write_unlock_obsolete(&header.version);
        self.unlock(grand);
        pool.retire(links.parent_node);
        Ok(())
    }

    /// With `inner` locked and about to lose the child at `removed`: the word that
    /// replaces `inner` in its parent — its other child, or for an inline value (which
    /// cannot live above the last level) a fresh leaf holding it.
    fn collapse_target(&self, inner: Inner<'_>, removed: u8) -> Result<NodeRef, super::OutOfNodeMemory> {
        let (byte, sibling) = match inner.next_child(0) {
            Some((byte, child)) if byte != removed => (byte, child),
            Some((byte, _)) => inner.next_child(byte as usize + 1).unwrap_or((0, NULL_REF)),
            None => (0, NULL_REF),
        };
        debug_assert!(sibling != NULL_REF, "collapse of a node without a second child");
        if tag_of(sibling) != TAG_VALUE {
            return Ok(sibling);
        }
        let header = inner.header();
        self.pool.allocate_leaf(key_with_byte(header.prefix(), header.depth(), byte), inline_value(sibling))
    }

    /// The parent keeps no child (only a one-child node left by a removal that found no
    /// memory for a leaf): lock it, unlink it from its own parent, make it obsolete.
    fn unlink_emptied(&self, links: Links<'_>, memory_short: bool, on_locked: &mut dyn FnMut()) -> Result<(), Retry> {
        let Parent::Node(inner) = links.parent else {
            return Err(Retry::Restart);
        };
        let header = inner.header();
        try_upgrade(&header.version, links.parent_version)?;
        match self.unlink(links.up(), memory_short, on_locked) {
            Ok(()) => {
                write_unlock_obsolete(&header.version);
                self.pool.retire(links.parent_node);
                Ok(())
            }
            Err(error) => {
                write_unlock(&header.version);
                Err(error)
            }
        }
    }
}

/// The three levels above a child being unlinked, with the versions read on the way
/// down (the third only for `unlink_emptied`).
#[derive(Clone, Copy)]
pub(crate) struct Links<'a> {
    pub(crate) great: Parent<'a>,
    pub(crate) great_version: u64,
    pub(crate) great_byte: u8,
    pub(crate) grand: Parent<'a>,
    pub(crate) grand_version: u64,
    pub(crate) grand_byte: u8,
    /// The node `grand` names (unused when `grand` is the root slot).
    pub(crate) grand_node: NodeRef,
    pub(crate) parent: Parent<'a>,
    pub(crate) parent_version: u64,
    pub(crate) parent_byte: u8,
    /// The node `parent` names (unused when `parent` is the root slot).
    pub(crate) parent_node: NodeRef,
}

impl<'a> Links<'a> {
    /// Links of the root slot's child (`root_version` as read).
    pub(crate) fn at_root(root_version: u64) -> Links<'a> {
        Links {
            great: Parent::Root,
            great_version: 0,
            great_byte: 0,
            grand: Parent::Root,
            grand_version: 0,
            grand_byte: 0,
            grand_node: NULL_REF,
            parent: Parent::Root,
            parent_version: root_version,
            parent_byte: 0,
            parent_node: NULL_REF,
        }
    }

    /// One level down: `inner` (node `node`, version `version`) becomes the parent and
    /// the child at `byte` the one to unlink.
    pub(crate) fn down(self, inner: Inner<'a>, version: u64, byte: u8, node: NodeRef) -> Links<'a> {
        Links {
            great: self.grand,
            great_version: self.grand_version,
            great_byte: self.grand_byte,
            grand: self.parent,
            grand_version: self.parent_version,
            grand_byte: self.parent_byte,
            grand_node: self.parent_node,
            parent: Parent::Node(inner),
            parent_version: version,
            parent_byte: byte,
            parent_node: node,
        }
    }

    /// One level up: the parent becomes the child to unlink.
    fn up(self) -> Links<'a> {
        Links {
            great: Parent::Root,
            great_version: 0,
            great_byte: 0,
            grand: self.great,
            grand_version: self.great_version,
            grand_byte: self.great_byte,
            grand_node: NULL_REF,
            parent: self.grand,
            parent_version: self.grand_version,
            parent_byte: self.grand_byte,
            parent_node: self.grand_node,
        }
    }
}
