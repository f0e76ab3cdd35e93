//! Helpers shared by the buffer-pool test files.
#![allow(dead_code)] // each test file uses its own subset

use std::sync::Arc;

pub use weft_storage::BufferMappingKind;
use weft_storage::{BufferPool, BufferPoolConfig, RelFileLocator, StorageManager, PAGE_SIZE};

/// Every page table the pool can use: each test of the pool runs once per mapping.
pub const MAPPINGS: [BufferMappingKind; 2] = [BufferMappingKind::Hash, BufferMappingKind::Art];

pub fn rel(n: u32) -> RelFileLocator {
    RelFileLocator::new(1663, 5, 16384 + n)
}

pub fn pool_with(smgr: &Arc<StorageManager>, frames: usize, mapping: BufferMappingKind) -> Arc<BufferPool> {
    BufferPool::new(smgr.clone(), BufferPoolConfig { shared_buffers_bytes: frames * PAGE_SIZE, mapping })
}

/// For each named `fn name(kind: BufferMappingKind)`, a module `name` with one
/// `#[test]` per mapping (`name::hash`, `name::art`), so a failure names its mapping.
macro_rules! both_mappings {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn hash() {
                    super::$name(weft_storage::BufferMappingKind::Hash)
                }

                #[test]
                fn art() {
                    super::$name(weft_storage::BufferMappingKind::Art)
                }
            }
        )*
    };
}

/// A small deterministic generator, so a failing run can be replayed from its seed.
pub struct Xorshift(pub u64);

impl Xorshift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
