#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod catalog;
pub mod heap;
pub mod index_build;
pub mod nbtree;
/// The B-tree access method (PostgreSQL's directory for it is `nbtree`).
pub use nbtree as btree;
pub mod snapshot;
pub mod stats;

pub use catalog::{
    Catalog, CheckMeta, ColumnMeta, ForeignKeyMeta, IndexColumnMeta, IndexConstraint, IndexMeta, ReferentialAction, SequenceMeta, TableMeta,
};
pub use heap::{HeapInserter, HeapScanCursor, Tid};
pub use snapshot::{Snapshot, Xid, XidSet};
