//! Unit tests of the structural cases; the model tests against `BTreeMap`
//! are in `tests/art_model.rs`.

use super::*;

fn keys_of<V>(art: &Art<V>) -> Vec<Vec<u8>> {
    art.iter().map(|(k, _)| k.to_vec()).collect()
}

#[test]
fn empty_tree() {
    let mut art: Art<u32> = Art::new();
    assert!(art.is_empty());
    assert_eq!(art.get(b""), None);
    assert_eq!(art.remove(b"x"), None);
    assert_eq!(art.remove_prefix(b""), 0);
    assert_eq!(art.iter().count(), 0);
    assert_eq!(art.memory_bytes(), 0);
    art.verify().unwrap();
}

#[test]
fn empty_key_and_prefix_keys() {
    let mut art = Art::new();
    for (i, key) in [&b"abc"[..], b"", b"ab", b"a", b"abcd", b"abd"].iter().enumerate() {
        assert_eq!(art.insert(key, i), None);
        art.verify().unwrap();
    }
    assert_eq!(keys_of(&art), vec![b"".to_vec(), b"a".to_vec(), b"ab".to_vec(), b"abc".to_vec(), b"abcd".to_vec(), b"abd".to_vec()]);
    assert_eq!(art.get(b""), Some(&1));
    assert_eq!(art.get(b"ab"), Some(&2));
    assert_eq!(art.get(b"abce"), None);
    assert_eq!(art.insert(b"", 10), Some(1));
    assert_eq!(art.stats().value_slots, 4); // "", "a", "ab", "abc"
    for key in [&b"a"[..], b"", b"abc", b"ab", b"abcd"] {
        assert!(art.remove(key).is_some());
        art.verify().unwrap();
    }
    assert_eq!(keys_of(&art), vec![b"abd".to_vec()]);
    // One key left: the root is that leaf, no inner node survives.
    assert_eq!(art.stats().inner_nodes(), 0);
}

#[test]
fn long_prefix_split_and_merge() {
    let mut art = Art::new();
    let long = vec![b'x'; 40];
    let mut a = long.clone();
    a.push(1);
    let mut b = long.clone();
    b.push(2);
    art.insert(&a, 1);
    art.insert(&b, 2);
    art.verify().unwrap();
    // The 40-byte shared path lives on the heap in the root's prefix.
    assert!(art.stats().memory_bytes >= 40);
    // Split that prefix in the middle (inline above, heap below) ...
    let mut c = vec![b'x'; 10];
    c.push(b'y');
    art.insert(&c, 3);
    art.verify().unwrap();
    assert_eq!(art.stats().node4, 2);
    // ... and merge it back when the branch goes away.
    assert_eq!(art.remove(&c), Some(3));
    art.verify().unwrap();
    assert_eq!(art.stats().node4, 1);
    assert_eq!(art.get(&a), Some(&1));
    assert_eq!(art.get(&long), None);
    assert_eq!(art.get(&[b'x'; 39]), None);
}

fn kind_counts<V>(art: &Art<V>) -> [usize; 4] {
    let s = art.stats();
    [s.node4, s.node16, s.node48, s.node256]
}

#[test]
fn grows_and_shrinks_through_every_kind_with_hysteresis() {
    let mut art = Art::new();
    art.insert(b"", 0usize);
    for byte in 0..=255u8 {
        art.insert(&[byte], usize::from(byte) + 1);
        art.verify().unwrap();
        let expected = match usize::from(byte) + 1 {
            1..=4 => [1, 0, 0, 0],
            5..=16 => [0, 1, 0, 0],
            17..=48 => [0, 0, 1, 0],
            _ => [0, 0, 0, 1],
        };
        assert_eq!(kind_counts(&art), expected, "after {} children", usize::from(byte) + 1);
    }
    for byte in (0..=255u8).rev() {
        art.remove(&[byte]);
        art.verify().unwrap();
        let children = usize::from(byte);
        let expected = match children {
            0 => [0, 0, 0, 0],
            1..=NODE16_SHRINK_AT => [1, 0, 0, 0],
            4..=NODE48_SHRINK_AT => [0, 1, 0, 0],
            13..=NODE256_SHRINK_AT => [0, 0, 1, 0],
            _ => [0, 0, 0, 1],
        };
        assert_eq!(kind_counts(&art), expected, "after removal down to {children} children");
    }
    assert_eq!(art.len(), 1);
    assert_eq!(art.get(b""), Some(&0));
}

#[test]
fn kind_boundary_does_not_thrash() {
    let mut art = Art::new();
    for byte in 0..17u8 {
        art.insert(&[9, byte], ());
    }
    assert_eq!(kind_counts(&art), [0, 0, 1, 0]);
    // Dropping to 16 children keeps the Node48; so does coming back to 17.
    art.remove(&[9, 16]);
    assert_eq!(kind_counts(&art), [0, 0, 1, 0]);
    art.insert(&[9, 16], ());
    assert_eq!(kind_counts(&art), [0, 0, 1, 0]);
    art.verify().unwrap();
}

#[test]
fn remove_prefix_unlinks_and_frees_subtree() {
    let mut art = Art::new();
    art.insert(b"keep", 0u64);
    let base = art.memory_bytes();
    for i in 0..1000u32 {
        let mut key = b"rel7/".to_vec();
        key.extend_from_slice(&i.to_be_bytes());
        art.insert(&key, u64::from(i));
    }
    art.insert(b"rel8", 1);
    art.verify().unwrap();
    assert_eq!(art.remove_prefix(b"rel7/"), 1000);
    art.verify().unwrap();
    assert_eq!(keys_of(&art), vec![b"keep".to_vec(), b"rel8".to_vec()]);
    assert_eq!(art.remove_prefix(b"rel"), 1);
    art.verify().unwrap();
    assert_eq!(art.memory_bytes(), base);
    assert_eq!(art.remove_prefix(b""), 1);
    assert!(art.is_empty());
}

#[test]
fn range_and_prefix_iteration() {
    let mut art = Art::new();
    for i in 0..600u32 {
        art.insert(&(i * 7).to_be_bytes(), i);
    }
    let from: Vec<u32> = art.iter_from(&100u32.to_be_bytes()).map(|(_, v)| *v).take(3).collect();
    assert_eq!(from, vec![15, 16, 17]);
    let lo = 700u32.to_be_bytes();
    let hi = 721u32.to_be_bytes();
    let inclusive: Vec<u32> = art.range(&lo[..]..=&hi[..]).map(|(_, v)| *v).collect();
    assert_eq!(inclusive, vec![100, 101, 102, 103]);
    let exclusive: Vec<u32> =
        art.range((Bound::Excluded(&lo[..]), Bound::Excluded(&hi[..]))).map(|(_, v)| *v).collect();
    assert_eq!(exclusive, vec![101, 102]);
    let prefixed = art.prefix_iter(&[0, 0, 0x10]).count();
    assert_eq!(prefixed, (0..600u32).filter(|i| (i * 7) >> 8 == 0x10).count());
    assert_eq!(art.prefix_iter(&[1]).count(), 0);
}

#[test]
fn get_mut_updates_in_place() {
    let mut art = Art::new();
    art.insert(b"a", 1);
    art.insert(b"ab", 2);
    *art.get_mut(b"ab").unwrap() += 40;
    *art.get_mut(b"a").unwrap() += 10;
    assert_eq!(art.get_mut(b"abc"), None);
    assert_eq!(art.get(b"ab"), Some(&42));
    assert_eq!(art.get(b"a"), Some(&11));
}
