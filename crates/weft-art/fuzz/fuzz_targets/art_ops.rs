//! Decodes the fuzzer's bytes into map operations, applies them to
//! `weft_art::art::Art` and to `BTreeMap`, compares every answer, and runs
//! `verify()` after each operation.
//!
//! Encoding: one opcode byte, then the operation's keys. A key is a header
//! byte (low 4 bits: length 0..=15; bit 4: bytes taken raw instead of mapped
//! onto the alphabet {0, 1, 'a', 255}; bit 5: a run of 24 'z' bytes in front,
//! longer than a node's inline prefix) followed by its bytes.

#![no_main]

use std::collections::BTreeMap;
use std::ops::Bound;

use libfuzzer_sys::fuzz_target;
use weft_art::art::Art;

/// Bounds the work per input: `verify()` after every operation is linear.
const OPS_MAX: usize = 4096;
const ALPHABET: [u8; 4] = [0, 1, b'a', 255];
const LONG_RUN_BYTES: usize = 24;

struct Input<'a> {
    bytes: &'a [u8],
}

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(first)
    }

    fn key(&mut self) -> Option<Vec<u8>> {
        let header = self.byte()?;
        let mut key = Vec::new();
        if header & 0x20 != 0 {
            key.resize(LONG_RUN_BYTES, b'z');
        }
        for _ in 0..(header & 0x0f) {
            let byte = self.byte()?;
            key.push(if header & 0x10 != 0 { byte } else { ALPHABET[usize::from(byte % 4)] });
        }
        Some(key)
    }

    fn bound(&mut self) -> Option<Bound<Vec<u8>>> {
        Some(match self.byte()? % 3 {
            0 => Bound::Unbounded,
            1 => Bound::Included(self.key()?),
            _ => Bound::Excluded(self.key()?),
        })
    }
}

fn within(key: &[u8], lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> bool {
    let above = match lower {
        Bound::Included(lo) => key >= lo.as_slice(),
        Bound::Excluded(lo) => key > lo.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match upper {
        Bound::Included(hi) => key <= hi.as_slice(),
        Bound::Excluded(hi) => key < hi.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

fn borrowed(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn pairs<'a>(iter: impl Iterator<Item = (&'a [u8], &'a u64)>) -> Vec<(Vec<u8>, u64)> {
    iter.map(|(k, v)| (k.to_vec(), *v)).collect()
}

fn model_pairs<'a>(iter: impl Iterator<Item = (&'a Vec<u8>, &'a u64)>) -> Vec<(Vec<u8>, u64)> {
    iter.map(|(k, v)| (k.clone(), *v)).collect()
}

/// Applies one decoded operation to both maps; `None` when the input ran out.
fn step(input: &mut Input, art: &mut Art<u64>, model: &mut BTreeMap<Vec<u8>, u64>, serial: u64) -> Option<()> {
    match input.byte()? % 10 {
        0..=2 => {
            let key = input.key()?;
            assert_eq!(art.insert(&key, serial), model.insert(key, serial));
        }
        3 | 4 => {
            let key = input.key()?;
            assert_eq!(art.remove(&key), model.remove(&key));
        }
        5 => {
            let key = input.key()?;
            assert_eq!(art.get(&key), model.get(&key));
        }
        6 => {
            let prefix = input.key()?;
            let doomed: Vec<Vec<u8>> = model.keys().filter(|k| k.starts_with(&prefix)).cloned().collect();
            for key in &doomed {
                model.remove(key);
            }
            assert_eq!(art.remove_prefix(&prefix), doomed.len());
        }
        7 => {
            let prefix = input.key()?;
            let expected = model_pairs(model.iter().filter(|(k, _)| k.starts_with(&prefix)));
            assert_eq!(pairs(art.prefix_iter(&prefix)), expected);
        }
        8 => {
            let start = input.key()?;
            assert_eq!(pairs(art.iter_from(&start)), model_pairs(model.range(start.clone()..)));
        }
        _ => {
            let (lower, upper) = (input.bound()?, input.bound()?);
            let expected = model_pairs(model.iter().filter(|(k, _)| within(k, &lower, &upper)));
            assert_eq!(pairs(art.range((borrowed(&lower), borrowed(&upper)))), expected);
        }
    }
    Some(())
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input { bytes: data };
    let mut art = Art::new();
    let mut model = BTreeMap::new();
    for serial in 0..OPS_MAX as u64 {
        if step(&mut input, &mut art, &mut model, serial).is_none() {
            break;
        }
        assert_eq!(art.len(), model.len());
        if let Err(e) = art.verify() {
            panic!("verify: {e}");
        }
    }
    assert_eq!(pairs(art.iter()), model_pairs(model.iter()));
});
