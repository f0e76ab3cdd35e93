//! The catalog: tables, their columns and storage, and the transaction counters.
//!
//! It lives in memory as a `Catalog` value and on disk in two slot files,
//! `<data_dir>/catalog.0` and `catalog.1`, written alternately. Each slot holds a
//! 32-byte header (magic, CRC-32C, format, publish sequence number, payload length)
//! and the catalog as JSON. Publishing overwrites the slot that does *not* hold the
//! catalog in force and syncs it once (`fdatasync`); loading takes the valid slot with
//! the higher sequence number. A publish interrupted by a crash leaves a slot whose
//! CRC fails, so the other one, the previous catalog, stays in force. Replacing one
//! file by rename cost a write, two fsyncs and a rename per statement (about 11 ms
//! here); a slot costs one `fdatasync`.
//!
//! Publishing the catalog is the commit point of every statement: data files are made
//! durable first, then the catalog names them. Files that no catalog names are orphans
//! of an interrupted statement and are removed at start-up. A data directory written
//! before the slots (one `catalog.json`) is read once and replaced by them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use weft_common::{DataType, Error, Result, SqlState, TypeModifier};
use weft_storage::RelFileLocator;

use crate::snapshot::{Snapshot, Xid, XidSet};
use crate::stats::TableStats;

/// The two slot files, written alternately (publish sequence number `n` goes to slot `n % 2`).
pub const CATALOG_SLOT_NAMES: [&str; 2] = ["catalog.0", "catalog.1"];
/// The single-file catalog of data directories written before the slots.
pub const LEGACY_CATALOG_FILE_NAME: &str = "catalog.json";
const SLOT_MAGIC: &[u8; 8] = b"weftcat\0";
/// magic (8) | CRC-32C of bytes 12.. (4) | format (4) | sequence (8) | payload length (8)
const SLOT_HEADER_BYTES: usize = 32;
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
    /// The `DEFAULT` expression as SQL text, bound again by each statement that uses it
    /// (so a volatile default such as `random()` is evaluated per row); none means NULL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// `numeric(6,2)`, `varchar(3)`, `char(4)`, `smallint`: what the declared type adds to
    /// `data_type` (`weft_common::typmod`); every store into the column applies it. Absent
    /// in data directories written before modifiers were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_modifier: Option<TypeModifier>,
}

impl ColumnMeta {
    /// The declared type as PostgreSQL's `format_type` prints it (`\d`).
    pub fn type_name(&self) -> String {
        match self.type_modifier {
            Some(modifier) => modifier.format_type(),
            None => self.data_type.name().to_string(),
        }
    }
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
    /// Set by the first DELETE or UPDATE that removes a row, cleared by TRUNCATE: index
    /// entries written by a build may then point to dead rows, so every entry is checked
    /// against the heap (no index-only scans, unique checks visit the heap).
    #[serde(default)]
    pub has_dead_rows: bool,
    /// CHECK constraints, in creation order (the order PostgreSQL tests them in is by name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckMeta>,
    /// FOREIGN KEY constraints of this table (the referencing side).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKeyMeta>,
    /// `CREATE TEMP TABLE`: dropped when its session ends, and at start-up if a process
    /// died with it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub temporary: bool,
}

/// A view: its query kept as SQL text, planned as a subquery wherever the view is named,
/// and the columns it had when created (names and types a `CREATE OR REPLACE` must keep).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewMeta {
    pub oid: u32,
    pub name: String,
    pub query: String,
    pub columns: Vec<ColumnMeta>,
    /// `CREATE TEMP VIEW`, or a view of a temporary table: dropped with its session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub temporary: bool,
}

/// A CHECK constraint: a boolean expression over the table's columns, kept as SQL text and
/// bound again by each statement that writes the table (as a column default is).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckMeta {
    pub name: String,
    pub expr: String,
}

/// A FOREIGN KEY: `columns` of this table reference `ref_columns` of `ref_table`, whose
/// unique index `ref_index` (a primary key or unique constraint) finds the referenced row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForeignKeyMeta {
    pub name: String,
    pub columns: Vec<usize>,
    pub ref_table: String,
    pub ref_columns: Vec<usize>,
    pub ref_index: String,
    pub on_delete: ReferentialAction,
    pub on_update: ReferentialAction,
}

/// What happens to referencing rows when their referenced row goes away.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReferentialAction {
    /// Fail at the end of the statement if a reference is left dangling (the default).
    NoAction,
    /// Fail if a referenced key is removed, even if the statement puts it back.
    Restrict,
    Cascade,
    SetNull,
    SetDefault,
}

impl ReferentialAction {
    /// As `\d` prints it after `ON DELETE` / `ON UPDATE`; `None` for the default.
    pub fn sql(self) -> Option<&'static str> {
        match self {
            ReferentialAction::NoAction => None,
            ReferentialAction::Restrict => Some("RESTRICT"),
            ReferentialAction::Cascade => Some("CASCADE"),
            ReferentialAction::SetNull => Some("SET NULL"),
            ReferentialAction::SetDefault => Some("SET DEFAULT"),
        }
    }
}

/// One key column of an index: which table column, in which order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexColumnMeta {
    /// Position of the column in its table.
    pub column: usize,
    pub descending: bool,
    /// PostgreSQL's default: NULLS FIRST for DESC, NULLS LAST for ASC.
    pub nulls_first: bool,
    /// A non-default operator class named at creation (`text_pattern_ops`): weft's text
    /// order is byte order, which is what the pattern classes compare by, so it orders
    /// like the default one and is kept only to be shown (`pg_get_indexdef`, `\d`).
    #[serde(default)]
    pub opclass: Option<String>,
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
    /// The table constraint this index enforces (named like the index, as in
    /// PostgreSQL), if it was made by `PRIMARY KEY` or `UNIQUE` rather than CREATE INDEX.
    #[serde(default)]
    pub constraint: Option<IndexConstraint>,
    /// The expressions of the expression columns, in order: a key column whose `column`
    /// is the table's column count plus k holds `expressions[k]` (the "index row" is the
    /// table's row followed by these values).
    #[serde(default)]
    pub expressions: Vec<IndexExpression>,
    /// A partial index's predicate as SQL text, bound again over the table's columns:
    /// only the rows it accepts have entries.
    #[serde(default)]
    pub predicate: Option<String>,
    /// The predicate as PostgreSQL prints it (`\d`, `pg_get_indexdef`).
    #[serde(default)]
    pub predicate_display: Option<String>,
    /// `INCLUDE (...)`: table columns stored in the leaf entries after the keys, neither
    /// ordered nor compared.
    #[serde(default)]
    pub include: Vec<usize>,
    /// The index the table was last clustered on (`CLUSTER t USING i`): a later `CLUSTER t`
    /// uses it again. At most one index of a table.
    #[serde(default)]
    pub clustered: bool,
}

/// One expression column of an index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexExpression {
    /// The expression as written, bound again over the table's columns.
    pub text: String,
    /// As PostgreSQL prints it in the index's definition (`lower(name)`, `(a + b)`).
    pub display: String,
    pub data_type: DataType,
}

/// A sequence: `CREATE SEQUENCE`, or the one a serial column owns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SequenceMeta {
    pub name: String,
    /// `integer` or `bigint`: bounds the default maximum.
    pub data_type: DataType,
    pub increment: i64,
    pub min_value: i64,
    pub max_value: i64,
    pub start: i64,
    /// The last value handed out (`start` before the first `nextval`, with `is_called` false).
    pub last_value: i64,
    pub is_called: bool,
    /// `(table, column)` of the serial column whose default draws from it: the sequence
    /// is dropped with the table.
    #[serde(default)]
    pub owned_by: Option<(String, String)>,
}

/// The kind of table constraint an index enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexConstraint {
    PrimaryKey,
    Unique,
}

impl IndexMeta {
    pub fn locator(&self) -> RelFileLocator {
        locator(self.rel_number)
    }

    /// An index over plain table columns with no predicate: what foreign keys and the
    /// code that reads keys straight from table rows can use.
    pub fn is_plain(&self) -> bool {
        self.expressions.is_empty() && self.predicate.is_none()
    }

    /// Has expression columns or a predicate: table rows must go through the index row
    /// (`TableMeta` columns, then the expressions' values) and the predicate first.
    pub fn needs_index_row(&self) -> bool {
        !self.is_plain()
    }

    /// The expression of key column `column` (a position in the index row), if it is one.
    pub fn expression_of(&self, table: &TableMeta, column: usize) -> Option<&IndexExpression> {
        column.checked_sub(table.columns.len()).and_then(|k| self.expressions.get(k))
    }

    /// The type of position `column` of the index row.
    pub fn column_type(&self, table: &TableMeta, column: usize) -> DataType {
        match self.expression_of(table, column) {
            Some(e) => e.data_type,
            None => table.columns[column].data_type,
        }
    }

    /// The types of the index row: the table's columns, then the expressions'.
    pub fn row_types(&self, table: &TableMeta) -> Vec<DataType> {
        let mut types = table.column_types();
        types.extend(self.expressions.iter().map(|e| e.data_type));
        types
    }

    /// Each key column as PostgreSQL names it in a key's description: the column's name,
    /// or the expression (in parentheses unless it reads as a function call).
    pub fn key_names(&self, table: &TableMeta) -> Vec<String> {
        self.columns
            .iter()
            .map(|c| match self.expression_of(table, c.column) {
                Some(e) => e.display.clone(),
                None => table.columns[c.column].name.clone(),
            })
            .collect()
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
    /// The xid the next writing statement gets. A crash can only interrupt the writer
    /// holding this xid and, in a transaction block, the xids after it up to
    /// `xid_reserved`: start-up marks them aborted and moves past them.
    pub next_xid: Xid,
    /// Every xid a running transaction block may have stamped is below this (or is
    /// `next_xid`): a block that needs an xid past it publishes the committed catalog with
    /// a higher one first. 0 in catalogs written before blocks.
    #[serde(default)]
    pub xid_reserved: Xid,
    pub committed_max: Xid,
    pub aborted: XidSet,
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
    /// Sequences by name (the relation namespace again). Their values move outside any
    /// transaction (`weft_exec::expr::Sequences`); each commit writes back the current ones.
    #[serde(default)]
    pub sequences: BTreeMap<String, SequenceMeta>,
    /// Views by name (the relation namespace again).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub views: BTreeMap<String, ViewMeta>,
    /// The sequence number of the slot this catalog was loaded from or last published
    /// to (0: none yet). Not stored in the payload: the slot header carries it.
    #[serde(skip)]
    published_seq: u64,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            format_version: CATALOG_FORMAT_VERSION,
            next_oid: FIRST_USER_OID,
            next_xid: 1,
            xid_reserved: 0,
            committed_max: 0,
            aborted: XidSet::default(),
            tables: BTreeMap::new(),
            indexes: BTreeMap::new(),
            statistics: BTreeMap::new(),
            sequences: BTreeMap::new(),
            views: BTreeMap::new(),
            published_seq: 0,
        }
    }
}

impl Catalog {
    /// Load the catalog of `data_dir` (the valid slot with the higher sequence number),
    /// or an empty one when the directory is new.
    pub fn load(data_dir: &Path) -> Result<Catalog> {
        let mut newest: Option<(u64, Catalog)> = None;
        let mut corrupt: Option<Error> = None;
        let mut slots_exist = false;
        for name in CATALOG_SLOT_NAMES {
            let path = data_dir.join(name);
            let bytes = match fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(format!("could not read file \"{}\"", path.display()), &e)),
            };
            slots_exist = true;
            match decode_slot(&bytes) {
                Ok((seq, payload)) => {
                    if newest.as_ref().is_none_or(|(best, _)| seq > *best) {
                        let mut catalog = decode_catalog(payload, &path)?;
                        catalog.published_seq = seq;
                        newest = Some((seq, catalog));
                    }
                }
                // A torn write of the last publish, or damage: the other slot may be fine.
                Err(why) => corrupt = Some(Error::new(SqlState::DATA_CORRUPTED, format!("catalog file \"{}\" is corrupt: {why}", path.display()))),
            }
        }
        if let Some((_, catalog)) = newest {
            return Ok(catalog);
        }
        if let Some(error) = corrupt {
            return Err(error);
        }
        debug_assert!(!slots_exist);
        let legacy = data_dir.join(LEGACY_CATALOG_FILE_NAME);
        match fs::read(&legacy) {
            Ok(bytes) => decode_catalog(&bytes, &legacy),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Catalog::default()),
            Err(e) => Err(Error::io(format!("could not read file \"{}\"", legacy.display()), &e)),
        }
    }

    /// Make this catalog the durable one: the commit point. Writes the slot not in force
    /// with the next sequence number; `durable` syncs it (and the directory when the slot
    /// file is new), so the new catalog survives a crash of the machine; without it
    /// (`fsync = off`) it survives a crash of the process only.
    pub fn publish(&mut self, data_dir: &Path, durable: bool) -> Result<()> {
        let seq = self.published_seq + 1;
        let path = data_dir.join(CATALOG_SLOT_NAMES[(seq % 2) as usize]);
        let payload = serde_json::to_vec(self).map_err(|e| Error::internal(format!("catalog encode: {e}")))?;
        let bytes = encode_slot(seq, &payload);
        let write = || -> std::io::Result<()> {
            let created = !path.exists();
            let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
            file.write_all_at(&bytes, 0)?;
            if durable {
                file.sync_data()?;
                if created {
                    File::open(data_dir)?.sync_all()?;
                }
            }
            Ok(())
        };
        write().map_err(|e| Error::io(format!("could not write catalog file \"{}\"", path.display()), &e))?;
        self.published_seq = seq;
        // The first publish after reading a legacy catalog.json replaces it.
        if seq == 1 {
            let _ = fs::remove_file(data_dir.join(LEGACY_CATALOG_FILE_NAME));
        }
        Ok(())
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot { committed_max: self.committed_max, aborted: Arc::new(self.aborted.clone()) }
    }

    /// The xids a writer may have stamped without committing when the process stopped:
    /// `next_xid`, and up to `xid_reserved` for a transaction block.
    pub fn in_flight_xids(&self) -> std::ops::Range<Xid> {
        self.next_xid..self.xid_reserved.max(self.next_xid + 1)
    }

    /// Publish next with the sequence number after `other`'s: a catalog that was copied
    /// from the committed one, which was published again meanwhile (a transaction block
    /// reserving xids), must not overwrite the slot in force.
    pub fn follow_publishes_of(&mut self, other: &Catalog) {
        self.published_seq = self.published_seq.max(other.published_seq);
    }

    pub fn allocate_oid(&mut self) -> u32 {
        let oid = self.next_oid;
        self.next_oid += 1;
        oid
    }

    pub fn table(&self, name: &str) -> Result<&TableMeta> {
        self.tables.get(name).ok_or_else(|| self.not_a_table(name))
    }

    pub fn table_mut(&mut self, name: &str) -> Result<&mut TableMeta> {
        if !self.tables.contains_key(name) {
            return Err(self.not_a_table(name));
        }
        Ok(self.tables.get_mut(name).expect("checked"))
    }

    /// The error for a table name that names no table: a view is read-only here.
    fn not_a_table(&self, name: &str) -> Error {
        if self.views.contains_key(name) {
            return Error::new(SqlState::WRONG_OBJECT_TYPE, format!("\"{name}\" is a view"))
                .with_detail("Views can only be read: this statement needs a table.");
        }
        undefined_table(name)
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

    /// Forget the temporary tables and views a dead process left, with the tables'
    /// indexes, owned sequences and foreign keys pointing at them; their files become
    /// orphans. True if there were any.
    pub fn forget_temporary_tables(&mut self) -> bool {
        let temporary: BTreeSet<String> = self.tables.values().filter(|t| t.temporary).map(|t| t.name.clone()).collect();
        if temporary.is_empty() && !self.views.values().any(|v| v.temporary) {
            return false;
        }
        self.tables.retain(|name, _| !temporary.contains(name));
        self.views.retain(|_, v| !v.temporary);
        self.indexes.retain(|_, i| !temporary.contains(&i.table));
        self.sequences.retain(|_, s| s.owned_by.as_ref().is_none_or(|(t, _)| !temporary.contains(t)));
        for table in self.tables.values_mut() {
            table.foreign_keys.retain(|fk| !temporary.contains(&fk.ref_table));
        }
        true
    }

    /// Is `name` taken by a table or an index?
    pub fn relation_exists(&self, name: &str) -> bool {
        self.tables.contains_key(name) || self.indexes.contains_key(name) || self.sequences.contains_key(name) || self.views.contains_key(name)
    }
}

fn encode_slot(seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(SLOT_HEADER_BYTES + payload.len());
    bytes.extend_from_slice(SLOT_MAGIC);
    bytes.extend_from_slice(&[0; 4]); // CRC, below
    bytes.extend_from_slice(&CATALOG_FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&seq.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(payload);
    let crc = weft_storage::page::crc32c(&bytes[12..]);
    bytes[8..12].copy_from_slice(&crc.to_le_bytes());
    bytes
}

/// The sequence number and payload of a slot file, or why it is not valid. Bytes past
/// the payload are the tail of a longer catalog published earlier into the same slot.
fn decode_slot(bytes: &[u8]) -> std::result::Result<(u64, &[u8]), String> {
    if bytes.len() < SLOT_HEADER_BYTES || &bytes[..8] != SLOT_MAGIC {
        return Err("no catalog header".into());
    }
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    let format = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"));
    let (seq, len) = (word(16), word(24));
    let end = usize::try_from(len).ok().and_then(|len| len.checked_add(SLOT_HEADER_BYTES)).filter(|&end| end <= bytes.len());
    let Some(end) = end else { return Err(format!("payload of {len} bytes past the end of the file")) };
    if weft_storage::page::crc32c(&bytes[12..end]) != crc {
        return Err("checksum mismatch (an interrupted write)".into());
    }
    if format != CATALOG_FORMAT_VERSION {
        return Err(format!("catalog format {format} is not supported (expected {CATALOG_FORMAT_VERSION})"));
    }
    Ok((seq, &bytes[SLOT_HEADER_BYTES..end]))
}

fn decode_catalog(payload: &[u8], path: &Path) -> Result<Catalog> {
    let catalog: Catalog = serde_json::from_slice(payload).map_err(|e| {
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

pub fn undefined_table(name: &str) -> Error {
    Error::new(SqlState::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_table(catalog: &mut Catalog, name: &str) {
        let oid = catalog.allocate_oid();
        catalog.tables.insert(
            name.into(),
            TableMeta {
                oid,
                name: name.into(),
                columns: vec![ColumnMeta { name: "a".into(), data_type: DataType::Int8, not_null: false, default: None, type_modifier: None }],
                rel_number: oid,
                row_count: 3,
                parallel_workers: None,
                has_dead_rows: false,
                checks: Vec::new(),
                foreign_keys: Vec::new(),
                temporary: false,
            },
        );
    }

    #[test]
    fn publish_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::load(dir.path()).unwrap();
        one_table(&mut catalog, "t");
        catalog.aborted.insert(7);
        catalog.publish(dir.path(), true).unwrap();
        let loaded = Catalog::load(dir.path()).unwrap();
        assert_eq!(loaded.tables, catalog.tables);
        assert_eq!(loaded.aborted, catalog.aborted);
        assert_eq!(loaded.next_oid, catalog.next_oid);
        assert_eq!(loaded.published_seq, 1);
    }

    /// Publishes alternate between the slots; the newest valid one wins, also when the
    /// newest was torn (its CRC fails) or is shorter than what the slot held before.
    #[test]
    fn slots_alternate_and_a_torn_write_keeps_the_previous_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::load(dir.path()).unwrap();
        for i in 0..5 {
            one_table(&mut catalog, &format!("t{i}"));
            catalog.publish(dir.path(), false).unwrap();
            let loaded = Catalog::load(dir.path()).unwrap();
            assert_eq!(loaded.tables.len(), i + 1);
            assert_eq!(loaded.published_seq, i as u64 + 1);
        }
        // Shorter than the slot's old contents: the stale tail is ignored.
        catalog.tables.clear();
        catalog.publish(dir.path(), false).unwrap(); // seq 6 -> catalog.0
        assert!(Catalog::load(dir.path()).unwrap().tables.is_empty());
        // Tear the newest slot: the previous catalog (seq 5, five tables) comes back,
        // and the next publish goes over the torn slot, not over the good one.
        let newest = dir.path().join(CATALOG_SLOT_NAMES[0]);
        let mut bytes = fs::read(&newest).unwrap();
        bytes[SLOT_HEADER_BYTES + 10] ^= 0xff; // inside the new payload, not the stale tail
        fs::write(&newest, &bytes).unwrap();
        let mut back = Catalog::load(dir.path()).unwrap();
        assert_eq!((back.tables.len(), back.published_seq), (5, 5));
        one_table(&mut back, "after");
        back.publish(dir.path(), false).unwrap();
        let loaded = Catalog::load(dir.path()).unwrap();
        assert_eq!((loaded.tables.len(), loaded.published_seq), (6, 6));
        assert!(decode_slot(&fs::read(dir.path().join(CATALOG_SLOT_NAMES[1])).unwrap()).is_ok());
    }

    #[test]
    fn corrupt_catalog_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(CATALOG_SLOT_NAMES[0]), b"weftcat\0 truncated").unwrap();
        let err = Catalog::load(dir.path()).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::DATA_CORRUPTED);
        assert!(err.message.contains("catalog.0"), "{}", err.message);
    }

    /// A data directory from before the slots: read, then replaced by the first publish.
    #[test]
    fn legacy_catalog_json_is_read_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = Catalog::default();
        one_table(&mut old, "legacy");
        fs::write(dir.path().join(LEGACY_CATALOG_FILE_NAME), serde_json::to_vec_pretty(&old).unwrap()).unwrap();
        let mut catalog = Catalog::load(dir.path()).unwrap();
        assert!(catalog.tables.contains_key("legacy"));
        catalog.publish(dir.path(), true).unwrap();
        assert!(!dir.path().join(LEGACY_CATALOG_FILE_NAME).exists());
        assert!(Catalog::load(dir.path()).unwrap().tables.contains_key("legacy"));
        fs::write(dir.path().join(LEGACY_CATALOG_FILE_NAME), b"{ not json").unwrap();
        assert!(Catalog::load(dir.path()).unwrap().tables.contains_key("legacy"), "slots take precedence");
    }
}
