#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod catalog;
pub mod heap;
pub mod snapshot;

pub use catalog::{Catalog, ColumnMeta, IndexColumnMeta, IndexMeta, TableMeta};
pub use heap::{HeapInserter, HeapScanCursor, Tid};
pub use snapshot::{Snapshot, Xid};
