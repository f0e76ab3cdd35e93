//! Node layouts of the sequential tree and the operations on one node: child
//! lookup, insertion with growth, removal with shrinking.
//!
//! A child pointer is `Node<V>`: a leaf or one of four inner kinds, each boxed,
//! so a child slot is a tag and a pointer (16 bytes; `Option<Node<V>>` uses the
//! tag's niche and is 16 bytes too). The paper packs the kind into the node
//! header behind an 8-byte pointer; the enum costs 8 more bytes per slot and
//! buys code without `unsafe`.
//!
//! Growth happens when a child is added to a full node (4 -> 16 -> 48 -> 256).
//! Shrinking happens when a removal leaves a node at or below its kind's
//! `*_SHRINK_AT` count, which is below the next smaller kind's capacity, so a
//! key that is inserted and removed over and over at a kind boundary does not
//! reallocate the node each time (hysteresis).

use std::mem;

/// Children a Node4 can hold.
pub const NODE4_CHILDREN_MAX: usize = 4;
/// Children a Node16 can hold.
pub const NODE16_CHILDREN_MAX: usize = 16;
/// Children a Node48 can hold.
pub const NODE48_CHILDREN_MAX: usize = 48;
/// Children a Node256 can hold.
pub const NODE256_CHILDREN_MAX: usize = 256;
/// A Node16 left with this many children becomes a Node4.
pub const NODE16_SHRINK_AT: usize = 3;
/// A Node48 left with this many children becomes a Node16.
pub const NODE48_SHRINK_AT: usize = 12;
/// A Node256 left with this many children becomes a Node48.
pub const NODE256_SHRINK_AT: usize = 37;
/// Prefix bytes stored inside the node; longer prefixes go to the heap.
pub const PREFIX_INLINE_BYTES_MAX: usize = 22;

// A shrunk node must fit its new kind with room to spare: that gap is the
// hysteresis.
const _: () = assert!(NODE16_SHRINK_AT < NODE4_CHILDREN_MAX);
const _: () = assert!(NODE48_SHRINK_AT < NODE16_CHILDREN_MAX);
const _: () = assert!(NODE256_SHRINK_AT < NODE48_CHILDREN_MAX);
// Growth from the next smaller kind gives one more child than its capacity,
// which must be above the shrink point.
const _: () = assert!(NODE4_CHILDREN_MAX + 1 > NODE16_SHRINK_AT);
const _: () = assert!(NODE16_CHILDREN_MAX + 1 > NODE48_SHRINK_AT);
const _: () = assert!(NODE48_CHILDREN_MAX + 1 > NODE256_SHRINK_AT);
// Node48 marks an empty index entry with a byte no slot number can take.
const _: () = assert!(NODE48_CHILDREN_MAX < NODE48_SLOT_EMPTY as usize);
// The inline bytes fill what the tag and a boxed slice take anyway.
const _: () = assert!(std::mem::size_of::<Prefix>() == 24);

const NODE48_SLOT_EMPTY: u8 = u8::MAX;

// Node sizes do not depend on `V` (leaves are boxed). Header: 24-byte prefix,
// 8-byte value-slot pointer, 2-byte count, padded to 40; a child slot is 16.
const _: () = assert!(std::mem::size_of::<Header<()>>() == 40);
const _: () = assert!(std::mem::size_of::<Option<Node<()>>>() == 16);
const _: () = assert!(std::mem::size_of::<Node4<()>>() == 112);
const _: () = assert!(std::mem::size_of::<Node16<()>>() == 312);
const _: () = assert!(std::mem::size_of::<Node48<()>>() == 1064);
const _: () = assert!(std::mem::size_of::<Node256<()>>() == 4136);

/// The kind of an inner node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Node4,
    Node16,
    Node48,
    Node256,
}

impl NodeKind {
    /// The child counts a node of this kind may hold once the tree is at rest.
    pub fn children_bounds(self) -> (usize, usize) {
        match self {
            NodeKind::Node4 => (1, NODE4_CHILDREN_MAX),
            NodeKind::Node16 => (NODE16_SHRINK_AT + 1, NODE16_CHILDREN_MAX),
            NodeKind::Node48 => (NODE48_SHRINK_AT + 1, NODE48_CHILDREN_MAX),
            NodeKind::Node256 => (NODE256_SHRINK_AT + 1, NODE256_CHILDREN_MAX),
        }
    }
}

/// A compressed path: the bytes every key below an inner node shares between
/// the node's parent byte and the node's own child byte. Stored in full
/// (pessimistic path compression), inline when short.
#[derive(Clone, Debug)]
pub enum Prefix {
    Inline { len: u8, bytes: [u8; PREFIX_INLINE_BYTES_MAX] },
    Heap(Box<[u8]>),
}

impl Default for Prefix {
    fn default() -> Self {
        Prefix::Inline { len: 0, bytes: [0; PREFIX_INLINE_BYTES_MAX] }
    }
}

impl Prefix {
    pub fn new(bytes: &[u8]) -> Prefix {
        if bytes.len() <= PREFIX_INLINE_BYTES_MAX {
            let mut inline = [0; PREFIX_INLINE_BYTES_MAX];
            inline[..bytes.len()].copy_from_slice(bytes);
            Prefix::Inline { len: bytes.len() as u8, bytes: inline }
        } else {
            Prefix::Heap(bytes.into())
        }
    }

    /// `head ++ [byte] ++ tail`: the prefix of a child that replaces its parent.
    pub fn joined(head: &[u8], byte: u8, tail: &[u8]) -> Prefix {
        let mut bytes = Vec::with_capacity(head.len() + 1 + tail.len());
        bytes.extend_from_slice(head);
        bytes.push(byte);
        bytes.extend_from_slice(tail);
        Prefix::new(&bytes)
    }

    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Prefix::Inline { len, bytes } => &bytes[..*len as usize],
            Prefix::Heap(bytes) => bytes,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Prefix::Inline { len, .. } => usize::from(*len),
            Prefix::Heap(bytes) => bytes.len(),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        match self {
            Prefix::Inline { .. } => 0,
            Prefix::Heap(bytes) => bytes.len(),
        }
    }
}

/// A key and its value. With lazy expansion a leaf can hang anywhere below
/// the point where its key becomes unique, so it keeps the whole key.
pub struct Leaf<V> {
    pub key: Box<[u8]>,
    pub value: V,
}

impl<V> Leaf<V> {
    pub fn boxed(key: &[u8], value: V) -> Box<Leaf<V>> {
        Box::new(Leaf { key: key.into(), value })
    }
}

/// A child slot's content.
pub enum Node<V> {
    Leaf(Box<Leaf<V>>),
    Inner(InnerNode<V>),
}

/// An inner node of one of the four kinds.
pub enum InnerNode<V> {
    N4(Box<Node4<V>>),
    N16(Box<Node16<V>>),
    N48(Box<Node48<V>>),
    N256(Box<Node256<V>>),
}

/// What every inner node kind carries.
pub struct Header<V> {
    pub prefix: Prefix,
    /// The key that ends exactly at this node (after its prefix), if any:
    /// the way a key that is a proper prefix of another key is stored.
    pub value: Option<Box<Leaf<V>>>,
    /// Number of children (the value slot is not counted).
    pub count: u16,
}

// Written out: a derive would demand `V: Default`.
impl<V> Default for Header<V> {
    fn default() -> Self {
        Header { prefix: Prefix::default(), value: None, count: 0 }
    }
}

pub struct Node4<V> {
    pub header: Header<V>,
    /// `keys[..count]` strictly increasing; `children[i]` belongs to `keys[i]`.
    pub keys: [u8; NODE4_CHILDREN_MAX],
    pub children: [Option<Node<V>>; NODE4_CHILDREN_MAX],
}

pub struct Node16<V> {
    pub header: Header<V>,
    /// As in Node4; searched with one 16-lane compare.
    pub keys: [u8; NODE16_CHILDREN_MAX],
    pub children: [Option<Node<V>>; NODE16_CHILDREN_MAX],
}

pub struct Node48<V> {
    pub header: Header<V>,
    /// `index[byte]` is the slot of that byte's child, or `NODE48_SLOT_EMPTY`.
    pub index: [u8; 256],
    pub children: [Option<Node<V>>; NODE48_CHILDREN_MAX],
}

pub struct Node256<V> {
    pub header: Header<V>,
    pub children: [Option<Node<V>>; NODE256_CHILDREN_MAX],
}

fn empty_slots<V, const N: usize>() -> [Option<Node<V>>; N] {
    std::array::from_fn(|_| None)
}

/// Number of the first `count` keys below `byte`: the insert position in a
/// sorted Node4/Node16.
#[inline]
fn lanes_below(keys: &[u8], count: usize, byte: u8) -> usize {
    keys[..count].iter().filter(|&&key| key < byte).count()
}

/// Position of `byte` among the sorted `keys[..count]`.
#[inline]
fn position4(keys: &[u8; NODE4_CHILDREN_MAX], count: usize, byte: u8) -> Option<usize> {
    keys[..count].iter().position(|&key| key == byte)
}

/// Position of `byte` among `keys[..count]` of a Node16: one 16-lane compare
/// done as SIMD within a register on a `u128`. XOR with the broadcast byte
/// zeroes the matching lane; `((x & 0x7f..) + 0x7f..) | x` sets the high bit
/// of every non-zero lane without carries crossing lanes, so the inverted
/// high bits mark exactly the matching lanes. A plain loop over the 16 lanes
/// was tried first: on the baseline x86-64 target the compiler turned it into
/// a long unpack/shift sequence, not a compare and a movemask.
#[inline]
fn position16(keys: &[u8; NODE16_CHILDREN_MAX], count: usize, byte: u8) -> Option<usize> {
    const LOW_BITS: u128 = u128::from_le_bytes([0x7f; 16]);
    const LANE_ONES: u128 = u128::from_le_bytes([0x01; 16]);
    let x = u128::from_le_bytes(*keys) ^ (u128::from(byte) * LANE_ONES);
    let matching_lanes = !(((x & LOW_BITS) + LOW_BITS) | x | LOW_BITS);
    // Lanes at or past `count` hold stale bytes; keys are unique, so a live
    // match is always the lowest one.
    let lane = (matching_lanes.trailing_zeros() / 8) as usize;
    (lane < count).then_some(lane)
}

/// Inserts `(byte, child)` at its sorted place in a Node4/Node16 that has room.
fn sorted_insert<V>(keys: &mut [u8], children: &mut [Option<Node<V>>], count: usize, byte: u8, child: Node<V>) {
    debug_assert!(count < keys.len());
    let at = lanes_below(keys, count, byte);
    for i in (at..count).rev() {
        keys[i + 1] = keys[i];
        children[i + 1] = children[i].take();
    }
    keys[at] = byte;
    children[at] = Some(child);
}

/// Removes the child at `at` from a Node4/Node16, closing the gap.
fn sorted_remove<V>(keys: &mut [u8], children: &mut [Option<Node<V>>], count: usize, at: usize) -> Option<Node<V>> {
    let child = children[at].take();
    for i in at + 1..count {
        keys[i - 1] = keys[i];
        children[i - 1] = children[i].take();
    }
    child
}

impl<V> InnerNode<V> {
    pub fn new4(prefix: Prefix) -> InnerNode<V> {
        InnerNode::N4(Box::new(Node4 {
            header: Header { prefix, value: None, count: 0 },
            keys: [0; NODE4_CHILDREN_MAX],
            children: empty_slots(),
        }))
    }

    pub fn kind(&self) -> NodeKind {
        match self {
            InnerNode::N4(_) => NodeKind::Node4,
            InnerNode::N16(_) => NodeKind::Node16,
            InnerNode::N48(_) => NodeKind::Node48,
            InnerNode::N256(_) => NodeKind::Node256,
        }
    }

    #[inline]
    pub fn header(&self) -> &Header<V> {
        match self {
            InnerNode::N4(n) => &n.header,
            InnerNode::N16(n) => &n.header,
            InnerNode::N48(n) => &n.header,
            InnerNode::N256(n) => &n.header,
        }
    }

    #[inline]
    pub fn header_mut(&mut self) -> &mut Header<V> {
        match self {
            InnerNode::N4(n) => &mut n.header,
            InnerNode::N16(n) => &mut n.header,
            InnerNode::N48(n) => &mut n.header,
            InnerNode::N256(n) => &mut n.header,
        }
    }

    #[inline]
    pub fn child_count(&self) -> usize {
        usize::from(self.header().count)
    }

    /// Bytes of this node's own allocation plus its heap prefix.
    pub fn memory_bytes(&self) -> usize {
        let own = match self {
            InnerNode::N4(_) => mem::size_of::<Node4<V>>(),
            InnerNode::N16(_) => mem::size_of::<Node16<V>>(),
            InnerNode::N48(_) => mem::size_of::<Node48<V>>(),
            InnerNode::N256(_) => mem::size_of::<Node256<V>>(),
        };
        own + self.header().prefix.heap_bytes()
    }

    #[inline]
    pub fn find_child(&self, byte: u8) -> Option<&Node<V>> {
        match self {
            InnerNode::N4(n) => {
                let at = position4(&n.keys, usize::from(n.header.count), byte)?;
                n.children[at].as_ref()
            }
            InnerNode::N16(n) => {
                let at = position16(&n.keys, usize::from(n.header.count), byte)?;
                n.children[at].as_ref()
            }
            InnerNode::N48(n) => {
                let slot = n.index[usize::from(byte)];
                if slot == NODE48_SLOT_EMPTY {
                    return None;
                }
                n.children[usize::from(slot)].as_ref()
            }
            InnerNode::N256(n) => n.children[usize::from(byte)].as_ref(),
        }
    }

    #[inline]
    pub fn find_child_mut(&mut self, byte: u8) -> Option<&mut Node<V>> {
        match self {
            InnerNode::N4(n) => {
                let at = position4(&n.keys, usize::from(n.header.count), byte)?;
                n.children[at].as_mut()
            }
            InnerNode::N16(n) => {
                let at = position16(&n.keys, usize::from(n.header.count), byte)?;
                n.children[at].as_mut()
            }
            InnerNode::N48(n) => {
                let slot = n.index[usize::from(byte)];
                if slot == NODE48_SLOT_EMPTY {
                    return None;
                }
                n.children[usize::from(slot)].as_mut()
            }
            InnerNode::N256(n) => n.children[usize::from(byte)].as_mut(),
        }
    }

    /// Adds a child under `byte`, which must not have one yet; a full node is
    /// first replaced by the next larger kind.
    pub fn add_child(&mut self, byte: u8, child: Node<V>) {
        debug_assert!(self.find_child(byte).is_none());
        if self.is_full() {
            self.grow();
        }
        let count = self.child_count();
        match self {
            InnerNode::N4(n) => sorted_insert(&mut n.keys, &mut n.children, count, byte, child),
            InnerNode::N16(n) => sorted_insert(&mut n.keys, &mut n.children, count, byte, child),
            InnerNode::N48(n) => {
                // Slots are not kept dense: removal just clears one, so the
                // first free slot is found by a scan of at most 48.
                let slot = n.children.iter().position(Option::is_none).expect("Node48 with a free slot");
                n.children[slot] = Some(child);
                n.index[usize::from(byte)] = slot as u8;
            }
            InnerNode::N256(n) => n.children[usize::from(byte)] = Some(child),
        }
        self.header_mut().count += 1;
    }

    /// Removes and returns the child under `byte`; shrinks the node if that
    /// leaves it at its kind's shrink point.
    pub fn remove_child(&mut self, byte: u8) -> Option<Node<V>> {
        let count = self.child_count();
        let child = match self {
            InnerNode::N4(n) => {
                let at = position4(&n.keys, count, byte)?;
                sorted_remove(&mut n.keys, &mut n.children, count, at)
            }
            InnerNode::N16(n) => {
                let at = position16(&n.keys, count, byte)?;
                sorted_remove(&mut n.keys, &mut n.children, count, at)
            }
            InnerNode::N48(n) => {
                let slot = mem::replace(&mut n.index[usize::from(byte)], NODE48_SLOT_EMPTY);
                if slot == NODE48_SLOT_EMPTY {
                    return None;
                }
                n.children[usize::from(slot)].take()
            }
            InnerNode::N256(n) => n.children[usize::from(byte)].take(),
        };
        let child = child?;
        self.header_mut().count -= 1;
        self.shrink_if_sparse();
        Some(child)
    }

    /// Removes the one child of a node that has exactly one.
    pub fn take_only_child(&mut self) -> (u8, Node<V>) {
        debug_assert_eq!(self.child_count(), 1);
        let (byte, _, _) = self.child_at_or_after(0).expect("a node with one child");
        let child = self.remove_child(byte).expect("the child just found");
        (byte, child)
    }

    /// The first child at or after `cursor`, with its byte and the cursor of
    /// the child after it. A cursor is a slot index for Node4/Node16 and a key
    /// byte (0..=256) for Node48/Node256; either way cursor 0 is the start.
    pub fn child_at_or_after(&self, cursor: u16) -> Option<(u8, u16, &Node<V>)> {
        let start = usize::from(cursor);
        match self {
            InnerNode::N4(n) => {
                let child = n.children[..usize::from(n.header.count)].get(start)?.as_ref()?;
                Some((n.keys[start], cursor + 1, child))
            }
            InnerNode::N16(n) => {
                let child = n.children[..usize::from(n.header.count)].get(start)?.as_ref()?;
                Some((n.keys[start], cursor + 1, child))
            }
            InnerNode::N48(n) => {
                let byte = (start..256).find(|&b| n.index[b] != NODE48_SLOT_EMPTY)?;
                let child = n.children[usize::from(n.index[byte])].as_ref()?;
                Some((byte as u8, byte as u16 + 1, child))
            }
            InnerNode::N256(n) => {
                let byte = (start..256).find(|&b| n.children[b].is_some())?;
                Some((byte as u8, byte as u16 + 1, n.children[byte].as_ref()?))
            }
        }
    }

    /// The cursor of the first child whose byte is above `byte`.
    pub fn cursor_after(&self, byte: u8) -> u16 {
        match self {
            InnerNode::N4(n) => (lanes_below(&n.keys, usize::from(n.header.count), byte)
                + usize::from(position4(&n.keys, usize::from(n.header.count), byte).is_some()))
                as u16,
            InnerNode::N16(n) => (lanes_below(&n.keys, usize::from(n.header.count), byte)
                + usize::from(position16(&n.keys, usize::from(n.header.count), byte).is_some()))
                as u16,
            InnerNode::N48(_) | InnerNode::N256(_) => u16::from(byte) + 1,
        }
    }

    fn is_full(&self) -> bool {
        let capacity = match self.kind() {
            NodeKind::Node4 => NODE4_CHILDREN_MAX,
            NodeKind::Node16 => NODE16_CHILDREN_MAX,
            NodeKind::Node48 => NODE48_CHILDREN_MAX,
            NodeKind::Node256 => NODE256_CHILDREN_MAX,
        };
        self.child_count() == capacity
    }

    /// Replaces a full node by the next larger kind, moving header and children.
    fn grow(&mut self) {
        let count = self.child_count();
        let grown = match self {
            InnerNode::N4(n) => {
                let mut keys = [0; NODE16_CHILDREN_MAX];
                keys[..count].copy_from_slice(&n.keys[..count]);
                let mut children = empty_slots();
                for (to, from) in children.iter_mut().zip(n.children.iter_mut()) {
                    *to = from.take();
                }
                InnerNode::N16(Box::new(Node16 { header: mem::take(&mut n.header), keys, children }))
            }
            InnerNode::N16(n) => {
                let mut index = [NODE48_SLOT_EMPTY; 256];
                let mut children = empty_slots();
                for slot in 0..count {
                    index[usize::from(n.keys[slot])] = slot as u8;
                    children[slot] = n.children[slot].take();
                }
                InnerNode::N48(Box::new(Node48 { header: mem::take(&mut n.header), index, children }))
            }
            InnerNode::N48(n) => {
                let mut children = empty_slots();
                for (byte, &slot) in n.index.iter().enumerate() {
                    if slot != NODE48_SLOT_EMPTY {
                        children[byte] = n.children[usize::from(slot)].take();
                    }
                }
                InnerNode::N256(Box::new(Node256 { header: mem::take(&mut n.header), children }))
            }
            InnerNode::N256(_) => unreachable!("a Node256 is never full when a child is added"),
        };
        *self = grown;
    }

    /// Replaces a node that has dropped to its kind's shrink point by the next
    /// smaller kind.
    fn shrink_if_sparse(&mut self) {
        let count = self.child_count();
        let shrunk = match self {
            InnerNode::N16(n) if count == NODE16_SHRINK_AT => {
                let mut keys = [0; NODE4_CHILDREN_MAX];
                keys[..count].copy_from_slice(&n.keys[..count]);
                let mut children = empty_slots();
                for (to, from) in children.iter_mut().zip(n.children.iter_mut()) {
                    *to = from.take();
                }
                InnerNode::N4(Box::new(Node4 { header: mem::take(&mut n.header), keys, children }))
            }
            InnerNode::N48(n) if count == NODE48_SHRINK_AT => {
                let mut keys = [0; NODE16_CHILDREN_MAX];
                let mut children = empty_slots();
                let mut to = 0;
                for (byte, &slot) in n.index.iter().enumerate() {
                    if slot != NODE48_SLOT_EMPTY {
                        keys[to] = byte as u8;
                        children[to] = n.children[usize::from(slot)].take();
                        to += 1;
                    }
                }
                InnerNode::N16(Box::new(Node16 { header: mem::take(&mut n.header), keys, children }))
            }
            InnerNode::N256(n) if count == NODE256_SHRINK_AT => {
                let mut index = [NODE48_SLOT_EMPTY; 256];
                let mut children = empty_slots();
                let mut to = 0;
                for (byte, slot) in n.children.iter_mut().enumerate() {
                    if let Some(child) = slot.take() {
                        index[byte] = to as u8;
                        children[to] = Some(child);
                        to += 1;
                    }
                }
                InnerNode::N48(Box::new(Node48 { header: mem::take(&mut n.header), index, children }))
            }
            _ => return,
        };
        *self = shrunk;
    }

    /// Checks the layout rules of this node's kind (not its subtree).
    pub fn verify_layout(&self) -> Result<(), String> {
        let count = self.child_count();
        let (low, high) = self.kind().children_bounds();
        if count < low || count > high {
            return Err(format!("{:?} with {count} children, allowed {low}..={high}", self.kind()));
        }
        match self {
            InnerNode::N4(n) => verify_sorted(&n.keys, &n.children, count),
            InnerNode::N16(n) => verify_sorted(&n.keys, &n.children, count),
            InnerNode::N48(n) => {
                let mut used = [false; NODE48_CHILDREN_MAX];
                for (byte, &slot) in n.index.iter().enumerate() {
                    if slot == NODE48_SLOT_EMPTY {
                        continue;
                    }
                    let slot = usize::from(slot);
                    if slot >= NODE48_CHILDREN_MAX || mem::replace(&mut used[slot], true) {
                        return Err(format!("Node48 byte {byte} points at bad or shared slot {slot}"));
                    }
                    if n.children[slot].is_none() {
                        return Err(format!("Node48 byte {byte} points at empty slot {slot}"));
                    }
                }
                let indexed = used.iter().filter(|&&u| u).count();
                let filled = n.children.iter().filter(|c| c.is_some()).count();
                if indexed != count || filled != count {
                    return Err(format!("Node48 count {count}, {indexed} indexed, {filled} slots filled"));
                }
                Ok(())
            }
            InnerNode::N256(n) => {
                let filled = n.children.iter().filter(|c| c.is_some()).count();
                if filled != count {
                    return Err(format!("Node256 count {count}, {filled} children"));
                }
                Ok(())
            }
        }
    }
}

fn verify_sorted<V>(keys: &[u8], children: &[Option<Node<V>>], count: usize) -> Result<(), String> {
    if keys[..count].windows(2).any(|pair| pair[0] >= pair[1]) {
        return Err(format!("keys {:?} not strictly increasing", &keys[..count]));
    }
    if children[..count].iter().any(Option::is_none) || children[count..].iter().any(Option::is_some) {
        return Err(format!("children not exactly the first {count} slots"));
    }
    Ok(())
}

/// Number of keys stored in a subtree.
pub fn count_keys<V>(node: &Node<V>) -> usize {
    match node {
        Node::Leaf(_) => 1,
        Node::Inner(inner) => {
            let mut keys = usize::from(inner.header().value.is_some());
            let mut cursor = 0;
            while let Some((_, next, child)) = inner.child_at_or_after(cursor) {
                keys += count_keys(child);
                cursor = next;
            }
            keys
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node16_lane_search_respects_count() {
        let mut keys = [0u8; NODE16_CHILDREN_MAX];
        for (i, k) in keys.iter_mut().enumerate() {
            *k = (i as u8) * 3;
        }
        assert_eq!(position16(&keys, 16, 45), Some(15));
        assert_eq!(position16(&keys, 16, 0), Some(0));
        assert_eq!(position16(&keys, 16, 24), Some(8));
        keys[3] = 0x80;
        keys[4] = 0x7f;
        keys[5] = 0xff;
        assert_eq!(position16(&keys, 16, 0x80), Some(3));
        assert_eq!(position16(&keys, 16, 0x7f), Some(4));
        assert_eq!(position16(&keys, 16, 0xff), Some(5));
        assert_eq!(position16(&keys, 5, 0xff), None);
        // Every byte against every lane.
        for lane in 0..16 {
            for byte in 0..=255u8 {
                let mut probe = [byte.wrapping_add(1); NODE16_CHILDREN_MAX];
                probe[lane] = byte;
                assert_eq!(position16(&probe, 16, byte), Some(lane));
                assert_eq!(position16(&probe, lane, byte), None);
            }
        }
        assert_eq!(position16(&keys, 15, 45), None);
        assert_eq!(position16(&keys, 16, 44), None);
        assert_eq!(position16(&keys, 0, 0), None);
        assert_eq!(lanes_below(&keys, 16, 7), 3);
    }

    #[test]
    fn prefix_inline_and_heap() {
        let short = Prefix::new(b"abc");
        assert!(matches!(short, Prefix::Inline { .. }));
        assert_eq!(short.as_slice(), b"abc");
        let long = Prefix::new(&[7u8; PREFIX_INLINE_BYTES_MAX + 1]);
        assert!(matches!(long, Prefix::Heap(_)));
        assert_eq!(long.heap_bytes(), PREFIX_INLINE_BYTES_MAX + 1);
        assert_eq!(Prefix::joined(b"ab", b'c', b"de").as_slice(), b"abcde");
    }
}
