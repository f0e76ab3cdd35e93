#![doc = include_str!("../README.md")]
// `unsafe` lives only in named modules with a safety contract and
// `#[allow(unsafe_code)]` (today: `memhint` and `buffer::frames`).
#![deny(unsafe_code)]

pub mod bulk_write;
pub mod buffer;
pub mod mapping;
pub mod memhint;
pub mod page;
pub mod smgr;
mod sync;
pub mod zone_map;

pub use buffer::{
    Buffer, BufferAccessStrategy, BufferMappingKind, BufferPool, BufferPoolConfig, BufferPoolStats, NewPageWrites, NumberedPages,
    PageReadGuard, PageWriteGuard, READ_BATCH_BLOCKS_MAX,
};
pub use mapping::{ArtMapping, BufferMapping, PartitionedHashMapping};
pub use smgr::StorageManager;

/// Size of every page, in bytes (PostgreSQL's `BLCKSZ`).
pub const PAGE_SIZE: usize = 8192;

/// Index of a page within one fork of a relation.
pub type BlockNumber = u32;

/// 1-based index of a line pointer on a page; 0 is never a valid item.
pub type OffsetNumber = u16;

/// One page of memory.
pub type Page = [u8; PAGE_SIZE];

/// The tablespace every relation lives in: only the default one exists, so
/// `spc_oid` does not take part in file paths.
pub const DEFAULT_TABLESPACE_OID: u32 = 1663;

/// Names the storage of one relation (PostgreSQL's `RelFileLocator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelFileLocator {
    pub spc_oid: u32,
    pub db_oid: u32,
    pub rel_number: u32,
}

impl RelFileLocator {
    pub const fn new(spc_oid: u32, db_oid: u32, rel_number: u32) -> RelFileLocator {
        RelFileLocator { spc_oid, db_oid, rel_number }
    }
}

/// Each relation is stored as up to four forks, one file each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ForkNumber {
    Main = 0,
    Fsm = 1,
    VisibilityMap = 2,
    Init = 3,
}

impl ForkNumber {
    /// Every fork, in fork-number order.
    pub const ALL: [ForkNumber; 4] = [ForkNumber::Main, ForkNumber::Fsm, ForkNumber::VisibilityMap, ForkNumber::Init];

    /// The file-name suffix PostgreSQL uses for this fork (`""` for main).
    pub fn file_suffix(self) -> &'static str {
        match self {
            ForkNumber::Main => "",
            ForkNumber::Fsm => "_fsm",
            ForkNumber::VisibilityMap => "_vm",
            ForkNumber::Init => "_init",
        }
    }
}

/// Identifies one page: relation, fork and block (PostgreSQL's `BufferTag`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferTag {
    pub rel: RelFileLocator,
    pub fork: ForkNumber,
    pub block: BlockNumber,
}

impl BufferTag {
    pub const fn new(rel: RelFileLocator, fork: ForkNumber, block: BlockNumber) -> BufferTag {
        BufferTag { rel, fork, block }
    }
}
