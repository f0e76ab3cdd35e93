//! The catalog: tables, their columns and storage, and the transaction counters.
//!
//! It lives in memory as a `Catalog` value and on disk as one JSON file,
//! `<data_dir>/catalog.json`, replaced atomically (write a temp file, fsync it, rename it
//! over the old one, fsync the directory). Publishing the catalog is the commit point of
//! every statement: data files are made durable first, then the catalog names them.
//! Files that no catalog names are orphans of an interrupted statement and are removed
//! at start-up.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use weft_common::{DataType, Error, Result, SqlState};
use weft_storage::RelFileLocator;

use crate::snapshot::{Snapshot, Xid};
use crate::stats::TableStats;

pub const CATALOG_FILE_NAME: &str = "catalog.json";
/// PostgreSQL's default tablespace and a fixed database: one database per data directory.
pub const DEFAULT_SPC_OID: u32 = 1663;
pub const DEFAULT_DB_OID: u32 = 5;
/// Object ids below this are reserved, as PostgreSQL reserves its bootstrap range.
const FIRST_USER_OID: u32 = 16384;
const CATALOG_FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnMeta {
    pub name: String,
    pub data_type: DataType,
    pub not_null: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableMeta {
    pub oid: u32,
    pub name: String,
    pub columns: Vec<ColumnMeta>,
    /// The file holding the rows; TRUNCATE swaps in a new one, as PostgreSQL's relfilenode.
    pub rel_number: u32,
    /// Live rows as of the last commit that touched the table (planner estimate).
    pub row_count: u64,
    /// The `parallel_workers` storage parameter (`ALTER TABLE t SET (parallel_workers = n)`).
    #[serde(default)]
    pub parallel_workers: Option<u32>,
}

/// One key column of an index: which table column, in which order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexColumnMeta {
    /// Position of the column in its table.
    pub column: usize,
    pub descending: bool,
    /// PostgreSQL's default: NULLS FIRST for DESC, NULLS LAST for ASC.
    pub nulls_first: bool,
}

/// A B-tree index: its key columns, options and file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexMeta {
    pub oid: u32,
    pub name: String,
    /// The indexed table's name.
    pub table: String,
    pub columns: Vec<IndexColumnMeta>,
    pub unique: bool,
    /// Leaf fill factor in percent (10..=100), PostgreSQL's default 90.
    pub fillfactor: u8,
    /// The `parallel_workers` given in `WITH (...)`, kept for REINDEX.
    #[serde(default)]
    pub parallel_workers: Option<u32>,
    /// The file holding the tree; REINDEX and TRUNCATE swap in a new one.
    pub rel_number: u32,
}

impl IndexMeta {
    pub fn locator(&self) -> RelFileLocator {
        locator(self.rel_number)
    }
}

impl TableMeta {
    pub fn locator(&self) -> RelFileLocator {
        locator(self.rel_number)
    }

    pub fn column_types(&self) -> Vec<DataType> {
        self.columns.iter().map(|c| c.data_type).collect()
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

pub fn locator(rel_number: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: DEFAULT_SPC_OID, db_oid: DEFAULT_DB_OID, rel_number }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Catalog {
    pub format_version: u32,
    pub next_oid: u32,
    /// The xid the next writing statement gets. A crash can only interrupt the statement
    /// holding this xid, so start-up marks it aborted and moves past it.
    pub next_xid: Xid,
    pub committed_max: Xid,
    pub aborted: BTreeSet<Xid>,
    pub tables: BTreeMap<String, TableMeta>,
    /// Indexes by name (tables and indexes share one namespace, as in PostgreSQL).
    #[serde(default)]
    pub indexes: BTreeMap<String, IndexMeta>,
    /// Planner statistics by table oid, as the last `ANALYZE` of each table left them
    /// (`stats.rs`). Keyed by oid, not name: a table dropped and created again under the
    /// same name starts without statistics. Entries of dropped tables are pruned by the
    /// next ANALYZE.
    #[serde(default)]
    pub statistics: BTreeMap<u32, TableStats>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            format_version: CATALOG_FORMAT_VERSION,
            next_oid: FIRST_USER_OID,
            next_xid: 1,
            committed_max: 0,
            aborted: BTreeSet::new(),
            tables: BTreeMap::new(),
            indexes: BTreeMap::new(),
            statistics: BTreeMap::new(),
        }
    }
}

impl Catalog {
    /// Load the catalog of `data_dir`, or an empty one when the directory is new.
    pub fn load(data_dir: &Path) -> Result<Catalog> {
        let path = data_dir.join(CATALOG_FILE_NAME);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Catalog::default()),
            Err(e) => return Err(Error::io(format!("could not read file \"{}\"", path.display()), &e)),
        };
        let catalog: Catalog = serde_json::from_slice(&bytes).map_err(|e| {
            Error::new(SqlState::DATA_CORRUPTED, format!("catalog file \"{}\" is corrupt: {e}", path.display()))
        })?;
        if catalog.format_version != CATALOG_FORMAT_VERSION {
            return Err(Error::new(
                SqlState::DATA_CORRUPTED,
                format!("catalog format {} is not supported (expected {CATALOG_FORMAT_VERSION})", catalog.format_version),
            ));
        }
        Ok(catalog)
    }

    /// Make this catalog the durable one: the commit point.
    /// Replaces the catalog file atomically (write a temporary file, rename it over).
    /// `durable` fsyncs the file and the directory, so the new catalog survives a crash
    /// of the machine; without it (`fsync = off`) it survives a crash of the process only.
    pub fn publish(&self, data_dir: &Path, durable: bool) -> Result<()> {
        let path = data_dir.join(CATALOG_FILE_NAME);
        let tmp: PathBuf = data_dir.join(format!("{CATALOG_FILE_NAME}.tmp"));
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| Error::internal(format!("catalog encode: {e}")))?;
        let write = || -> std::io::Result<()> {
            let mut file = File::create(&tmp)?;
            file.write_all(&bytes)?;
            if durable {
                file.sync_all()?;
            }
            fs::rename(&tmp, &path)?;
            if durable {
                File::open(data_dir)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| Error::io(format!("could not write catalog file \"{}\"", path.display()), &e))
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot { committed_max: self.committed_max, aborted: Arc::new(self.aborted.clone()) }
    }

    pub fn allocate_oid(&mut self) -> u32 {
        let oid = self.next_oid;
        self.next_oid += 1;
        oid
    }

    pub fn table(&self, name: &str) -> Result<&TableMeta> {
        self.tables.get(name).ok_or_else(|| undefined_table(name))
    }

    pub fn table_mut(&mut self, name: &str) -> Result<&mut TableMeta> {
        self.tables.get_mut(name).ok_or_else(|| undefined_table(name))
    }

    /// Every relation file number the catalog owns (anything else on disk is an orphan).
    pub fn live_rel_numbers(&self) -> BTreeSet<u32> {
        self.tables.values().map(|t| t.rel_number).chain(self.indexes.values().map(|i| i.rel_number)).collect()
    }

    /// The indexes of `table`, by name.
    pub fn indexes_of<'a>(&'a self, table: &'a str) -> impl Iterator<Item = &'a IndexMeta> + 'a {
        self.indexes.values().filter(move |i| i.table == table)
    }

    /// The statistics of `table` from its last ANALYZE, if any.
    pub fn table_stats(&self, table: &TableMeta) -> Option<&TableStats> {
        self.statistics.get(&table.oid).filter(|s| s.columns.len() == table.columns.len())
    }

    /// Is `name` taken by a table or an index?
    pub fn relation_exists(&self, name: &str) -> bool {
        self.tables.contains_key(name) || self.indexes.contains_key(name)
    }
}

pub fn undefined_table(name: &str) -> Error {
    Error::new(SqlState::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::load(dir.path()).unwrap();
        let oid = catalog.allocate_oid();
        catalog.tables.insert(
            "t".into(),
            TableMeta {
                oid,
                name: "t".into(),
                columns: vec![ColumnMeta { name: "a".into(), data_type: DataType::Int8, not_null: false }],
                rel_number: oid,
                row_count: 3,
                parallel_workers: None,
            },
        );
        catalog.aborted.insert(7);
        catalog.publish(dir.path(), true).unwrap();
        let loaded = Catalog::load(dir.path()).unwrap();
        assert_eq!(loaded.tables, catalog.tables);
        assert_eq!(loaded.aborted, catalog.aborted);
        assert_eq!(loaded.next_oid, oid + 1);
        assert!(!dir.path().join("catalog.json.tmp").exists());
    }

    #[test]
    fn corrupt_catalog_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(CATALOG_FILE_NAME), b"{ not json").unwrap();
        let err = Catalog::load(dir.path()).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::DATA_CORRUPTED);
    }
}
