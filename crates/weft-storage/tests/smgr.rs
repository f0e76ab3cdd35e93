//! The storage manager on a real directory.

use std::os::unix::fs::FileExt;

use weft_common::SqlState;
use weft_storage::page;
use weft_storage::{ForkNumber, Page, RelFileLocator, StorageManager, DEFAULT_TABLESPACE_OID, PAGE_SIZE};

const REL: RelFileLocator = RelFileLocator::new(DEFAULT_TABLESPACE_OID, 5, 16384);

fn stamped_page(stamp: u64, blkno: u32) -> Box<Page> {
    let mut p: Box<Page> = Box::new([0u8; PAGE_SIZE]);
    page::init(&mut p, 0);
    page::add_item(&mut p, &stamp.to_le_bytes()).unwrap();
    page::set_checksum(&mut p, blkno);
    p
}

#[test]
fn create_write_read_truncate_unlink() {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    assert!(!smgr.exists(REL, ForkNumber::Main));
    smgr.create(REL, ForkNumber::Main).unwrap();
    smgr.create(REL, ForkNumber::VisibilityMap).unwrap();
    assert!(smgr.create(REL, ForkNumber::Main).is_err(), "create of an existing file must fail");
    assert!(smgr.exists(REL, ForkNumber::Main));
    assert_eq!(smgr.file_path(REL, ForkNumber::Main), dir.path().join("base/5/16384"));
    assert_eq!(smgr.file_path(REL, ForkNumber::Fsm), dir.path().join("base/5/16384_fsm"));
    assert_eq!(smgr.nblocks(REL, ForkNumber::Main).unwrap(), 0);

    for block in [0u32, 1, 4] {
        smgr.write_block(REL, ForkNumber::Main, block, &stamped_page(block as u64 + 100, block)).unwrap();
    }
    assert_eq!(smgr.nblocks(REL, ForkNumber::Main).unwrap(), 5);
    let mut buf: Box<Page> = Box::new([0xffu8; PAGE_SIZE]);
    smgr.read_block(REL, ForkNumber::Main, 4, &mut buf).unwrap();
    assert_eq!(page::item(&buf, 1), Some(&104u64.to_le_bytes()[..]));
    // A hole and a block past the end both read as new pages.
    smgr.read_block(REL, ForkNumber::Main, 2, &mut buf).unwrap();
    assert!(page::is_new(&buf));
    buf.fill(0xff);
    smgr.read_block(REL, ForkNumber::Main, 1000, &mut buf).unwrap();
    assert!(page::is_new(&buf));

    smgr.truncate(REL, ForkNumber::Main, 1).unwrap();
    assert_eq!(smgr.nblocks(REL, ForkNumber::Main).unwrap(), 1);
    smgr.read_block(REL, ForkNumber::Main, 1, &mut buf).unwrap();
    assert!(page::is_new(&buf));
    smgr.sync(REL).unwrap();

    let listed = smgr.list_relation_files().unwrap();
    assert_eq!(
        listed.iter().map(|(r, f, _)| (*r, *f)).collect::<Vec<_>>(),
        vec![(REL, ForkNumber::Main), (REL, ForkNumber::VisibilityMap)]
    );
    smgr.unlink(REL).unwrap();
    smgr.unlink(REL).unwrap();
    assert!(!smgr.exists(REL, ForkNumber::Main));
    assert!(smgr.list_relation_files().unwrap().is_empty());
    let err = smgr.nblocks(REL, ForkNumber::Main).unwrap_err();
    assert_eq!(err.sqlstate, SqlState::UNDEFINED_FILE);
    // Data survives reopening.
    smgr.create(REL, ForkNumber::Main).unwrap();
    smgr.write_block(REL, ForkNumber::Main, 0, &stamped_page(9, 0)).unwrap();
    drop(smgr);
    let smgr = StorageManager::open(dir.path()).unwrap();
    smgr.read_block(REL, ForkNumber::Main, 0, &mut buf).unwrap();
    assert_eq!(page::item(&buf, 1), Some(&9u64.to_le_bytes()[..]));
}

#[test]
fn corruption_is_an_error_naming_file_and_block() {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    smgr.create(REL, ForkNumber::Main).unwrap();
    for block in 0..3u32 {
        smgr.write_block(REL, ForkNumber::Main, block, &stamped_page(block as u64, block)).unwrap();
    }
    let path = smgr.file_path(REL, ForkNumber::Main);
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    let at = 2 * PAGE_SIZE as u64 + 5000;
    let mut byte = [0u8; 1];
    file.read_exact_at(&mut byte, at).unwrap();
    file.write_all_at(&[byte[0] ^ 0x10], at).unwrap();

    let mut buf: Box<Page> = Box::new([0u8; PAGE_SIZE]);
    smgr.read_block(REL, ForkNumber::Main, 1, &mut buf).unwrap();
    let err = smgr.read_block(REL, ForkNumber::Main, 2, &mut buf).unwrap_err();
    assert_eq!(err.sqlstate, SqlState::DATA_CORRUPTED);
    assert_eq!(err.message, format!("invalid page in block 2 of relation {}", path.display()));

    // A page written to the wrong block fails too.
    smgr.write_block(REL, ForkNumber::Main, 1, &stamped_page(0, 0)).unwrap();
    assert!(smgr.read_block(REL, ForkNumber::Main, 1, &mut buf).is_err());
}

#[test]
fn many_threads_share_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    smgr.create(REL, ForkNumber::Main).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let smgr = &smgr;
            s.spawn(move || {
                for i in 0..16u32 {
                    let block = i * 4 + t;
                    smgr.write_block(REL, ForkNumber::Main, block, &stamped_page(block as u64, block)).unwrap();
                    let mut buf: Box<Page> = Box::new([0u8; PAGE_SIZE]);
                    smgr.read_block(REL, ForkNumber::Main, block, &mut buf).unwrap();
                    assert_eq!(page::item(&buf, 1), Some(&(block as u64).to_le_bytes()[..]));
                }
            });
        }
    });
    assert_eq!(smgr.nblocks(REL, ForkNumber::Main).unwrap(), 64);
}

/// A vectored write of consecutive blocks lands each page at its own block, after a hole
/// too, and the pages read back verify.
#[test]
fn write_blocks_places_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    smgr.create(REL, ForkNumber::Main).unwrap();
    for (first, count) in [(0u32, 1usize), (1, 300), (310, 5)] {
        let pages: Vec<Box<Page>> = (0..count).map(|i| stamped_page(first as u64 + i as u64 + 7, first + i as u32)).collect();
        smgr.write_blocks(REL, ForkNumber::Main, first, &pages).unwrap();
    }
    smgr.write_blocks(REL, ForkNumber::Main, 400, &[]).unwrap();
    assert_eq!(smgr.nblocks(REL, ForkNumber::Main).unwrap(), 315);
    let mut buf: Box<Page> = Box::new([0u8; PAGE_SIZE]);
    for block in 0..315u32 {
        smgr.read_block(REL, ForkNumber::Main, block, &mut buf).unwrap();
        if (301..310).contains(&block) {
            assert!(page::is_new(&buf), "block {block} is in the hole");
        } else {
            assert!(page::verify_checksum(&buf, block), "block {block}");
            assert_eq!(page::item(&buf, 1), Some(&(block as u64 + 7).to_le_bytes()[..]), "block {block}");
        }
    }
}
