//! The slotted page against a `Vec` model.

use proptest::prelude::*;
use weft_storage::page;
use weft_storage::{Page, PAGE_SIZE};

fn empty_page(special_size: usize) -> Box<Page> {
    let mut p: Box<Page> = Box::new([0u8; PAGE_SIZE]);
    page::init(&mut p, special_size);
    p
}

#[derive(Debug, Clone)]
enum Op {
    Add(Vec<u8>),
    Get(u16),
    Update(u16, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..1200, any::<u8>()).prop_map(|(len, seed)| Op::Add((0..len).map(|i| seed.wrapping_add(i as u8)).collect())),
        2 => (0u16..40).prop_map(Op::Get),
        1 => (0u16..40, any::<u8>()).prop_map(|(off, byte)| Op::Update(off, byte)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn items_round_trip_against_model(special_size in 0usize..64, ops in proptest::collection::vec(op(), 1..60)) {
        let mut p = empty_page(special_size);
        let mut model: Vec<Vec<u8>> = Vec::new();
        for op in ops {
            match op {
                Op::Add(item) => {
                    let before = page::free_space(&p);
                    let fits = !item.is_empty() && item.len() <= before;
                    match page::add_item(&mut p, &item) {
                        Some(off) => {
                            prop_assert!(fits);
                            model.push(item.clone());
                            prop_assert_eq!(off as usize, model.len());
                            // free_space shrinks by exactly the item and its line pointer.
                            let expected = (before + page::LINE_POINTER_SIZE)
                                .saturating_sub(item.len() + 2 * page::LINE_POINTER_SIZE);
                            prop_assert_eq!(page::free_space(&p), expected);
                        }
                        None => {
                            prop_assert!(!fits);
                            prop_assert_eq!(page::free_space(&p), before);
                        }
                    }
                }
                Op::Get(off) => {
                    let expected = (off >= 1).then(|| model.get(off as usize - 1)).flatten();
                    prop_assert_eq!(page::item(&p, off), expected.map(|v| v.as_slice()));
                }
                Op::Update(off, byte) => {
                    if let Some(bytes) = page::item_mut(&mut p, off) {
                        bytes.fill(byte);
                        model[off as usize - 1].fill(byte);
                    } else {
                        prop_assert!(off == 0 || off as usize > model.len());
                    }
                }
            }
            prop_assert_eq!(page::item_count(&p) as usize, model.len());
            prop_assert_eq!(page::special(&p).len(), special_size);
            prop_assert!(page::verify(&p).is_ok());
        }
        let listed: Vec<(u16, Vec<u8>)> = page::items(&p).map(|(off, b)| (off, b.to_vec())).collect();
        let expected: Vec<(u16, Vec<u8>)> = model.iter().enumerate().map(|(i, v)| (i as u16 + 1, v.clone())).collect();
        prop_assert_eq!(listed, expected);
        // Used bytes + free space account for the whole page.
        let used: usize = model.iter().map(|v| v.len() + page::LINE_POINTER_SIZE).sum();
        let free = page::free_space(&p);
        prop_assert!(page::HEADER_SIZE + used + special_size + free + page::LINE_POINTER_SIZE >= PAGE_SIZE);
        prop_assert!(page::HEADER_SIZE + used + special_size + free <= PAGE_SIZE);
    }

    #[test]
    fn checksum_detects_any_flipped_byte(
        items in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..10),
        blkno in any::<u32>(),
        at in 0usize..PAGE_SIZE,
        flip in 1u8..=255,
    ) {
        let mut p = empty_page(16);
        for item in &items {
            page::add_item(&mut p, item);
        }
        page::set_checksum(&mut p, blkno);
        prop_assert!(page::verify_checksum(&p, blkno));
        prop_assert!(!page::verify_checksum(&p, blkno.wrapping_add(1)));
        p[at] ^= flip;
        prop_assert!(!page::verify_checksum(&p, blkno));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 64), fill in any::<u8>(), off in any::<u16>()) {
        let mut p: Box<Page> = Box::new([fill; PAGE_SIZE]);
        p[..64].copy_from_slice(&bytes);
        let _ = page::item(&p, off);
        let _ = page::items(&p).count();
        let _ = page::free_space(&p);
        let _ = page::special(&p).len();
        let _ = page::verify(&p);
        let _ = page::add_item(&mut p, &bytes);
        let _ = page::item_mut(&mut p, off);
    }
}

#[test]
fn new_page_is_empty_and_verifies() {
    let mut p: Box<Page> = Box::new([0u8; PAGE_SIZE]);
    assert!(page::is_new(&p));
    assert_eq!(page::item_count(&p), 0);
    assert_eq!(page::item(&p, 1), None);
    assert_eq!(page::items(&p).count(), 0);
    assert_eq!(page::free_space(&p), 0);
    assert!(page::verify_checksum(&p, 7));
    assert_eq!(page::add_item(&mut p, b"x"), None, "a new page must be initialised first");
    page::init(&mut p, 0);
    assert!(!page::is_new(&p));
    assert_eq!(page::free_space(&p), page::MAX_ITEM_SIZE);
}

#[test]
fn max_item_fits_exactly() {
    let mut p = empty_page(0);
    let item = vec![0xab; page::MAX_ITEM_SIZE];
    assert_eq!(page::add_item(&mut p, &item), Some(1));
    assert_eq!(page::free_space(&p), 0);
    assert_eq!(page::item(&p, 1), Some(&item[..]));
    let mut p = empty_page(0);
    assert_eq!(page::add_item(&mut p, &vec![0; page::MAX_ITEM_SIZE + 1]), None);
}

#[test]
fn special_space_is_separate() {
    let mut p = empty_page(24);
    page::special_mut(&mut p).copy_from_slice(&[7u8; 24]);
    page::add_item(&mut p, &[1u8; 100]).unwrap();
    assert_eq!(page::special(&p), &[7u8; 24]);
    assert_eq!(page::item(&p, 1), Some(&[1u8; 100][..]));
    page::set_lsn(&mut p, 42);
    assert_eq!(page::lsn(&p), 42);
}

#[test]
fn checksum_detects_a_flip_at_every_position() {
    let mut p = empty_page(16);
    for i in 0..20u8 {
        page::add_item(&mut p, &vec![i; 1 + 37 * i as usize]).unwrap();
    }
    let blkno = 12345;
    page::set_checksum(&mut p, blkno);
    for at in 0..PAGE_SIZE {
        let flip = 1u8 << (at % 8);
        p[at] ^= flip;
        assert!(!page::verify_checksum(&p, blkno), "flip of bit {} at byte {at} not detected", at % 8);
        p[at] ^= flip;
    }
    assert!(page::verify_checksum(&p, blkno));
}
