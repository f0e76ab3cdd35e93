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
    first_difference, key_byte, read_lock, try_upgrade, validate, write_unlock, write_unlock_obsolete, Inner,
    Kind, NodeRef, Restart, NULL_REF,
};
use super::sync::{AtomicU64, Ordering};
use super::{OlcArt, OutOfNodeMemory};

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
    /// `NoMemory`, the driver unpins, reclaims what the grace period allows, and
    /// retries; a second `NoMemory` retries once with `memory_short = true` (removals
    /// then skip shrinking), a third is `OutOfNodeMemory`.
    pub(crate) fn run<T>(&self, mut attempt: impl FnMut(bool) -> Result<T, Retry>) -> Result<T, OutOfNodeMemory> {
        let mut reclaimed = false;
        let mut memory_short = false;
        loop {
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
                Err(Retry::NoMemory) if !reclaimed => {
                    reclaimed = true;
                    self.pool.reclaim_blocking();
                }
                Err(Retry::NoMemory) if !memory_short => memory_short = true,
                Err(Retry::NoMemory) => return Err(OutOfNodeMemory),
            }
        }
    }

    // -- lookup ------------------------------------------------------------------

    pub(crate) fn get_key(&self, key: u128) -> Option<u64> {
        let _guard = self.pool.pin();
        loop {
            if let Ok(found) = self.get_attempt(key) {
                return found;
            }
        }
    }

    /// No prefix comparisons on the way down: the leaf holds the whole key, and a key
    /// that leaves the path of its prefix ends at a leaf with another key.
    #[inline]
    fn get_attempt(&self, key: u128) -> Result<Option<u64>, Restart> {
        let pool = &*self.pool;
        let mut parent_word = &self.root_version;
        let mut parent_version = read_lock(parent_word)?;
        let mut node = self.root.load(Ordering::Acquire);
        loop {
            if node == NULL_REF {
                validate(parent_word, parent_version)?;
                return Ok(None);
            }
            match pool.inner(node) {
                None => {
                    let leaf = pool.leaf(node);
                    let leaf_key = leaf.key();
                    let value = leaf.value();
                    validate(parent_word, parent_version)?;
                    return Ok(if leaf_key == key { Some(value) } else { None });
                }
                Some(inner) => {
                    let header = inner.header();
                    let version = read_lock(&header.version)?;
                    validate(parent_word, parent_version)?;
                    node = inner.find(key_byte(key, header.depth()));
                    parent_word = &header.version;
                    parent_version = version;
                }
            }
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
            if child != NULL_REF {
                parent = Parent::Node(inner);
                parent_version = version;
                parent_byte = byte;
                node = child;
                continue;
            }
            if !inner.is_full() {
                try_upgrade(&header.version, version)?;
                let Ok(leaf) = pool.allocate_leaf(key, value) else {
                    write_unlock(&header.version);
                    return Err(Retry::NoMemory);
                };
                inner.insert(byte, leaf);
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
        let Ok(leaf) = pool.allocate_leaf(key, value) else {
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
        let Ok(leaf) = pool.allocate_leaf(key, value) else {
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
        let mut grand = Parent::Root;
        let mut grand_version = 0u64;
        let mut grand_byte = 0u8;
        let mut parent = Parent::Root;
        let mut parent_version = read_lock(&self.root_version)?;
        let mut parent_byte = 0u8;
        let mut parent_node = NULL_REF;
        let mut node = self.root.load(Ordering::Acquire);
        loop {
            if node == NULL_REF {
                validate(self.version_word(parent), parent_version)?;
                return Ok(None);
            }
            let Some(inner) = pool.inner(node) else {
                let leaf = pool.leaf(node);
                let current = leaf.value();
                if leaf.key() != key || expected.is_some_and(|expected| expected != current) {
                    validate(self.version_word(parent), parent_version)?;
                    return Ok(None);
                }
                let links = Links { grand, grand_version, grand_byte, parent, parent_version, parent_byte, parent_node };
                self.unlink(links, memory_short, &mut || {})?;
                pool.retire(node);
                return Ok(Some(current));
            };
            let header = inner.header();
            let version = read_lock(&header.version)?;
            validate(self.version_word(parent), parent_version)?;
            let byte = key_byte(key, header.depth());
            let child = inner.find(byte);
            if child == NULL_REF {
                validate(&header.version, version)?;
                return Ok(None);
            }
            (grand, grand_version, grand_byte) = (parent, parent_version, parent_byte);
            (parent, parent_version, parent_byte) = (Parent::Node(inner), version, byte);
            parent_node = node;
            node = child;
        }
    }

    /// Unlinks the child at `links.parent_byte` of `links.parent` (versions as read on
    /// the way down). Depending on the parent's fill this is an in-place removal, a
    /// collapse of a two-child Node4 into its other child (in the grandparent), or a
    /// shrink to the next smaller kind (in the grandparent). `on_locked` runs once every
    /// lock is held and every allocation made, just before the unlink.
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
        let collapse = remaining <= 1;
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
            let sibling = match inner.next_child(0) {
                Some((byte, child)) if byte != parent_byte => child,
                Some((byte, _)) => inner.next_child(byte as usize + 1).map_or(NULL_REF, |(_, child)| child),
                None => NULL_REF,
            };
            debug_assert!(sibling != NULL_REF, "a Node4 with fewer than two children");
            on_locked();
            sibling
        } else {
            let smaller_kind = Kind::fitting(remaining);
            let Ok(smaller) = pool.allocate_inner(smaller_kind, header.depth(), header.prefix()) else {
                write_unlock(&header.version);
                self.unlock(grand);
                return Err(Retry::NoMemory);
            };
            on_locked();
            if let Some(smaller_inner) = pool.inner(smaller) {
                inner.copy_children_into(smaller_inner, Some(parent_byte));
            }
            smaller
        };
        self.set_child(grand, grand_byte, replacement);
        write_unlock_obsolete(&header.version);
        self.unlock(grand);
        pool.retire(links.parent_node);
        Ok(())
    }
}

/// The two levels above a child being unlinked, with the versions read on the way down.
#[derive(Clone, Copy)]
pub(crate) struct Links<'a> {
    pub(crate) grand: Parent<'a>,
    pub(crate) grand_version: u64,
    pub(crate) grand_byte: u8,
    pub(crate) parent: Parent<'a>,
    pub(crate) parent_version: u64,
    pub(crate) parent_byte: u8,
    /// The node `parent` names (unused when `parent` is the root slot).
    pub(crate) parent_node: NodeRef,
}
