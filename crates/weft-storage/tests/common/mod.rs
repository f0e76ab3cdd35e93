//! Helpers shared by the buffer-pool test files.
#![allow(dead_code)] // each test file uses its own subset

use std::sync::Arc;

use weft_storage::{BufferMappingKind, BufferPool, BufferPoolConfig, RelFileLocator, StorageManager, PAGE_SIZE};

pub fn rel(n: u32) -> RelFileLocator {
    RelFileLocator::new(1663, 5, 16384 + n)
}

pub fn pool_with(smgr: &Arc<StorageManager>, frames: usize) -> Arc<BufferPool> {
    BufferPool::new(
        smgr.clone(),
        BufferPoolConfig { shared_buffers_bytes: frames * PAGE_SIZE, mapping: BufferMappingKind::Hash },
    )
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
