//! The catalogs and functions psql's describe commands read (`\d NAME`, `\d`, `\ds`, `\l`,
//! `\dn`, `\d+`), over weft's catalog: `pg_attribute`, `pg_attrdef`, `pg_type`,
//! `pg_collation`, `pg_constraint`, `pg_sequence`, `pg_depend`, `pg_database`, `pg_roles`,
//! and, empty because weft has no such objects, `pg_inherits`, `pg_policy`,
//! `pg_statistic_ext`, `pg_publication*`, `pg_trigger`, `pg_rewrite`,
//! `pg_partitioned_table`; the functions `format_type`, `pg_get_expr`,
//! `pg_get_constraintdef`, `pg_get_indexdef`, the `regclass` / `regtype` / `regnamespace`
//! casts and their companions.
//!
//! As in `catalog_views`, a view is a `VALUES` list from the statement's catalog snapshot,
//! and a function of an oid is bound to a lookup over the objects of that snapshot.
//!
//! Oids: tables and indexes have theirs. Sequences, constraints and column defaults have
//! none in weft's catalog; theirs are derived from their names and what they belong to
//! (see [`derived_oid`]), above every relation oid, stable while the object keeps its name. Expressions (`adbin`, `indpred`, ...) are kept as their text: weft has
//! no node trees, so `pg_get_expr` returns its argument.

use weft_access::{Catalog, IndexConstraint, IndexMeta, TableMeta};
use weft_common::typmod::TypeModifier;
use weft_common::types::ElemType;
use weft_common::DataType;

use crate::catalog_views::{boolean, number, text, Column, Value};
use crate::deparse::quote_identifier;

pub(crate) const PG_CATALOG_OID: i64 = 11;
pub(crate) const PUBLIC_OID: i64 = 2200;
pub(crate) const OWNER_OID: i64 = 10;
/// `pg_database_owner`, PostgreSQL 15's owner of schema `public`.
pub(crate) const DATABASE_OWNER_OID: i64 = 6171;
pub(crate) const DATABASE_OWNER_NAME: &str = "pg_database_owner";
/// `pg_collation.oid` of the database's default collation.
const DEFAULT_COLLATION_OID: i64 = 100;
/// PostgreSQL's encoding number of UTF8.
pub(crate) const UTF8_ENCODING: i64 = 6;

/// PostgreSQL's own catalogs that weft shows as views, by their fixed oids (what
/// `'pg_catalog.pg_class'::regclass` is).
pub(crate) const SYSTEM_RELATIONS: [(&str, i64); 18] = [
    ("pg_type", 1247),
    ("pg_attribute", 1249),
    ("pg_proc", 1255),
    ("pg_class", 1259),
    ("pg_database", 1262),
    ("pg_am", 2601),
    ("pg_attrdef", 2604),
    ("pg_constraint", 2606),
    ("pg_depend", 2608),
    ("pg_description", 2609),
    ("pg_index", 2610),
    ("pg_inherits", 2611),
    ("pg_namespace", 2615),
    ("pg_rewrite", 2618),
    ("pg_trigger", 2620),
    ("pg_sequence", 2224),
    ("pg_policy", 3256),
    ("pg_collation", 3456),
];

/// One of weft's types as `pg_type` shows it.
pub(crate) struct PgType {
    pub oid: i64,
    pub typname: &'static str,
    /// `format_type(oid, -1)`.
    pub display: String,
    pub typlen: i64,
    pub collatable: bool,
    pub element: i64,
}

/// Every type weft has, with PostgreSQL's oids: the stored types, the ones a modifier
/// makes of them (`int2`, `varchar`, `bpchar`) and the arrays.
pub(crate) fn types() -> Vec<PgType> {
    let scalars = [
        DataType::Bool,
        DataType::Int4,
        DataType::Int8,
        DataType::Float8,
        DataType::Numeric,
        DataType::Text,
        DataType::Date,
        DataType::Time,
        DataType::Timestamp,
        DataType::TimestampTz,
        DataType::Interval,
    ];
    let mut out: Vec<PgType> = Vec::new();
    let mut push = |data_type: DataType, modifier: Option<TypeModifier>| {
        let element = data_type.element().map_or(0, |e| type_oid(e, None));
        out.push(PgType {
            oid: type_oid(data_type, modifier),
            typname: match modifier {
                Some(TypeModifier::SmallInt) => "int2",
                Some(TypeModifier::Varchar { .. }) => "varchar",
                Some(TypeModifier::Char { .. }) => "bpchar",
                _ => crate::bind::pg_type_short_name(data_type),
            },
            display: modifier.map_or_else(|| data_type.name().to_string(), |m| m.format_type()),
            typlen: match (data_type, modifier) {
                (_, Some(TypeModifier::SmallInt)) => 2,
                (DataType::Bool, _) => 1,
                (DataType::Int4 | DataType::Date, _) => 4,
                (DataType::Int8 | DataType::Float8 | DataType::Time | DataType::Timestamp | DataType::TimestampTz, _) => 8,
                (DataType::Interval, _) => 16,
                _ => -1,
            },
            collatable: data_type == DataType::Text || data_type == DataType::Array(ElemType::Text),
            element,
        });
    };
    for t in scalars {
        push(t, None);
    }
    push(DataType::Int4, Some(TypeModifier::SmallInt));
    push(DataType::Text, Some(TypeModifier::Varchar { max_chars: None }));
    push(DataType::Text, Some(TypeModifier::Char { max_chars: None }));
    for t in scalars {
        if let Some(array) = t.array_of() {
            push(array, None);
        }
    }
    out
}

/// `pg_type.oid` of a column's type.
pub(crate) fn type_oid(data_type: DataType, modifier: Option<TypeModifier>) -> i64 {
    match (data_type, modifier) {
        (_, Some(TypeModifier::SmallInt)) => 21,
        (_, Some(TypeModifier::Varchar { .. })) => 1043,
        (_, Some(TypeModifier::Char { .. })) => 1042,
        (DataType::Bool, _) => 16,
        (DataType::Int4, _) => 23,
        (DataType::Int8, _) => 20,
        (DataType::Float8, _) => 701,
        (DataType::Numeric, _) => 1700,
        (DataType::Text, _) => 25,
        (DataType::Date, _) => 1082,
        (DataType::Time, _) => 1083,
        (DataType::Timestamp, _) => 1114,
        (DataType::TimestampTz, _) => 1184,
        (DataType::Interval, _) => 1186,
        (DataType::Array(elem), _) => match elem {
            ElemType::Bool => 1000,
            ElemType::Int4 => 1007,
            ElemType::Int8 => 1016,
            ElemType::Float8 => 1022,
            ElemType::Numeric => 1231,
            ElemType::Text => 1009,
            ElemType::Date => 1182,
            ElemType::Time => 1183,
            ElemType::Timestamp => 1115,
            ElemType::TimestampTz => 1185,
            ElemType::Interval => 1187,
        },
    }
}

/// `atttypmod`: PostgreSQL's encoding of a modifier (`-1` for none).
pub(crate) fn typmod(modifier: Option<TypeModifier>) -> i64 {
    // PostgreSQL's typmods count the 4-byte varlena header.
    const HEADER: i64 = 4;
    match modifier {
        Some(TypeModifier::Numeric { precision, scale }) => ((i64::from(precision) << 16) | (i64::from(scale) & 0x7ff)) + HEADER,
        Some(TypeModifier::Varchar { max_chars: Some(n) } | TypeModifier::Char { max_chars: Some(n) }) => i64::from(n) + HEADER,
        _ => -1,
    }
}

/// The (type oid, typmod) → `format_type` name pairs a lookup needs: every modifier the
/// catalog's columns carry. Types without a modifier are in [`types`].
pub(crate) fn modified_types(catalog: &Catalog) -> Vec<(i64, i64, String)> {
    let mut out: Vec<(i64, i64, String)> = Vec::new();
    for column in catalog.tables.values().flat_map(|t| t.columns.iter()) {
        if let Some(modifier) = column.type_modifier {
            let key = (type_oid(column.data_type, Some(modifier)), typmod(Some(modifier)));
            if key.1 != -1 && !out.iter().any(|(o, m, _)| (*o, *m) == key) {
                out.push((key.0, key.1, modifier.format_type()));
            }
        }
    }
    out
}

/// A column of an index as `pg_attribute` and `\d INDEX` show it.
pub(crate) struct IndexAttribute {
    pub name: String,
    pub data_type: DataType,
    pub modifier: Option<TypeModifier>,
    /// `pg_get_indexdef(index, n, true)`: the column or expression, without ordering.
    pub definition: String,
    pub key: bool,
}

/// The key columns of `index`, then its INCLUDE columns. An expression's column is named
/// as PostgreSQL names it: the function's name (`lower`) or `expr`, numbered on a clash.
pub(crate) fn index_attributes(table: &TableMeta, index: &IndexMeta) -> Vec<IndexAttribute> {
    let mut expression_names: Vec<String> = Vec::new();
    let mut out: Vec<IndexAttribute> = index
        .columns
        .iter()
        .map(|c| match index.expression_of(table, c.column) {
            Some(e) => {
                let base = match e.display.split_once('(') {
                    Some((f, _)) if !f.is_empty() && f.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_') => f.to_string(),
                    _ => "expr".to_string(),
                };
                let mut name = base.clone();
                let mut n = 0;
                while expression_names.contains(&name) || table.column_index(&name).is_some() {
                    n += 1;
                    name = format!("{base}{n}");
                }
                expression_names.push(name.clone());
                IndexAttribute { name, data_type: e.data_type, modifier: None, definition: e.display.clone(), key: true }
            }
            None => {
                let col = &table.columns[c.column];
                IndexAttribute {
                    name: col.name.clone(),
                    data_type: col.data_type,
                    modifier: col.type_modifier,
                    definition: quote_identifier(&col.name),
                    key: true,
                }
            }
        })
        .collect();
    for &c in &index.include {
        let col = &table.columns[c];
        out.push(IndexAttribute {
            name: col.name.clone(),
            data_type: col.data_type,
            modifier: col.type_modifier,
            definition: quote_identifier(&col.name),
            key: false,
        });
    }
    out
}

/// A table constraint as `pg_constraint` shows it.
pub(crate) struct Constraint<'a> {
    pub oid: i64,
    pub name: String,
    /// `p`, `u`, `c` or `f`.
    pub kind: char,
    pub table: &'a TableMeta,
    pub index_oid: i64,
    pub referenced_oid: i64,
    /// `pg_get_constraintdef`.
    pub definition: String,
    pub keys: Vec<usize>,
    pub referenced_keys: Vec<usize>,
}

/// Oids for what weft's catalog keeps without one: above every relation oid (which count
/// up from 16384), derived from the owner's oid and the object's name. An index-backed
/// constraint takes its index's oid in the upper half.
fn derived_oid(owner: u32, name: &str, salt: u8) -> i64 {
    // FNV-1a: stable across releases, unlike std's hasher.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in owner.to_le_bytes().into_iter().chain([salt]).chain(name.bytes()) {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    (3 << 30) + i64::from(hash % (1 << 29))
}

/// `pg_class.oid` of a sequence.
pub(crate) fn sequence_oid(sequence: &weft_access::catalog::SequenceMeta) -> i64 {
    derived_oid(0, &sequence.name, b'S')
}

/// `pg_constraint.oid` of the constraint an index enforces.
fn index_constraint_oid(index: &IndexMeta) -> i64 {
    (1 << 31) + i64::from(index.oid)
}

/// Every table constraint: primary keys and UNIQUE constraints (by their indexes), CHECK
/// and FOREIGN KEY constraints.
pub(crate) fn constraints(catalog: &Catalog) -> Vec<Constraint<'_>> {
    let mut out = Vec::new();
    for table in catalog.tables.values() {
        for index in catalog.indexes_of(&table.name) {
            let Some(kind) = index.constraint else { continue };
            let (kind, word) = match kind {
                IndexConstraint::PrimaryKey => ('p', "PRIMARY KEY"),
                IndexConstraint::Unique => ('u', "UNIQUE"),
            };
            let keys: Vec<usize> = index.columns.iter().map(|c| c.column).collect();
            let names = |cols: &[usize]| cols.iter().map(|&c| quote_identifier(&table.columns[c].name)).collect::<Vec<_>>().join(", ");
            let mut definition = format!("{word} ({})", names(&keys));
            if !index.include.is_empty() {
                definition.push_str(&format!(" INCLUDE ({})", names(&index.include)));
            }
            out.push(Constraint {
                oid: index_constraint_oid(index),
                name: index.name.clone(),
                kind,
                table,
                index_oid: i64::from(index.oid),
                referenced_oid: 0,
                definition,
                keys,
                referenced_keys: Vec::new(),
            });
        }
        for check in &table.checks {
            out.push(Constraint {
                oid: derived_oid(table.oid, &check.name, b'c'),
                name: check.name.clone(),
                kind: 'c',
                table,
                index_oid: 0,
                referenced_oid: 0,
                definition: format!("CHECK ({})", crate::constraints::check_text(table, check)),
                keys: Vec::new(),
                referenced_keys: Vec::new(),
            });
        }
        for fk in &table.foreign_keys {
            out.push(Constraint {
                oid: derived_oid(table.oid, &fk.name, b'f'),
                name: fk.name.clone(),
                kind: 'f',
                table,
                index_oid: catalog.indexes.get(&fk.ref_index).map_or(0, |i| i64::from(i.oid)),
                referenced_oid: catalog.tables.get(&fk.ref_table).map_or(0, |t| i64::from(t.oid)),
                definition: crate::constraints::foreign_key_text(catalog, table, fk),
                keys: fk.columns.clone(),
                referenced_keys: fk.ref_columns.clone(),
            });
        }
    }
    out
}

/// Every relation's oid and name (`regclass` output), PostgreSQL's catalogs included.
pub(crate) fn relation_names(catalog: &Catalog) -> Vec<(i64, String)> {
    let mut out: Vec<(i64, String)> = catalog.tables.values().map(|t| (i64::from(t.oid), quote_identifier(&t.name))).collect();
    out.extend(catalog.indexes.values().map(|i| (i64::from(i.oid), quote_identifier(&i.name))));
    out.extend(catalog.sequences.values().map(|s| (sequence_oid(s), quote_identifier(&s.name))));
    out.extend(SYSTEM_RELATIONS.iter().map(|(name, oid)| (*oid, name.to_string())));
    out
}

/// `regclass` input of a relation name: its oid, if there is such a relation.
pub(crate) fn relation_oid(catalog: &Catalog, schema: Option<&str>, name: &str) -> Option<i64> {
    let user = || {
        catalog
            .tables
            .get(name)
            .map(|t| t.oid)
            .or_else(|| catalog.indexes.get(name).map(|i| i.oid))
            .map(i64::from)
            .or_else(|| catalog.sequences.get(name).map(sequence_oid))
    };
    let system = || SYSTEM_RELATIONS.iter().find(|(n, _)| *n == name).map(|(_, oid)| *oid);
    match schema {
        None => system().or_else(user),
        Some("pg_catalog") => system(),
        Some("public") => user(),
        Some(_) => None,
    }
}

/// The schemas: (oid, name, owner).
pub(crate) const NAMESPACES: [(i64, &str, i64); 4] = [
    (99, "pg_toast", OWNER_OID),
    (PG_CATALOG_OID, "pg_catalog", OWNER_OID),
    (PUBLIC_OID, "public", DATABASE_OWNER_OID),
    (13207, "information_schema", OWNER_OID),
];

/// psql's Storage of a column type (`pg_type.typstorage`): `p`lain for fixed-width types,
/// `m`ain for numeric, e`x`tended for text and arrays.
pub(crate) fn storage_code(data_type: DataType) -> &'static str {
    match data_type {
        DataType::Numeric => "m",
        DataType::Text | DataType::Array(_) => "x",
        _ => "p",
    }
}

fn collation_of(data_type: DataType) -> i64 {
    if data_type == DataType::Text || data_type == DataType::Array(ElemType::Text) {
        DEFAULT_COLLATION_OID
    } else {
        0
    }
}

pub(crate) fn pg_attribute(catalog: &Catalog) -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("attrelid", "bigint"),
        ("attname", "text"),
        ("atttypid", "bigint"),
        ("attstattarget", "integer"),
        ("attlen", "smallint"),
        ("attnum", "smallint"),
        ("attndims", "integer"),
        ("atttypmod", "integer"),
        ("attnotnull", "boolean"),
        ("atthasdef", "boolean"),
        ("atthasmissing", "boolean"),
        ("attidentity", "text"),
        ("attgenerated", "text"),
        ("attisdropped", "boolean"),
        ("attislocal", "boolean"),
        ("attinhcount", "integer"),
        ("attcollation", "bigint"),
        ("attstorage", "text"),
        ("attcompression", "text"),
    ];
    let type_length = |oid: i64| types().into_iter().find(|t| t.oid == oid).map_or(-1, |t| t.typlen);
    let mut rows = Vec::new();
    let mut push = |relation: u32, name: &str, attnum: usize, data_type: DataType, modifier: Option<TypeModifier>, not_null: bool, has_default: bool| {
        let oid = type_oid(data_type, modifier);
        rows.push(vec![
            number(relation),
            text(name),
            number(oid),
            number(-1),
            number(type_length(oid)),
            number(attnum),
            number(i32::from(data_type.is_array())),
            number(typmod(modifier)),
            boolean(not_null),
            boolean(has_default),
            boolean(false),
            text(""),
            text(""),
            boolean(false),
            boolean(true),
            number(0),
            number(collation_of(data_type)),
            text(storage_code(data_type)),
            text(""),
        ]);
    };
    for table in catalog.tables.values() {
        for (i, c) in table.columns.iter().enumerate() {
            push(table.oid, &c.name, i + 1, c.data_type, c.type_modifier, c.not_null, c.default.is_some());
        }
    }
    for index in catalog.indexes.values() {
        let Some(table) = catalog.tables.get(&index.table) else { continue };
        for (i, a) in index_attributes(table, index).iter().enumerate() {
            push(index.oid, &a.name, i + 1, a.data_type, a.modifier, false, false);
        }
    }
    (columns, rows)
}

pub(crate) fn pg_attrdef(catalog: &Catalog) -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![("oid", "bigint"), ("adrelid", "bigint"), ("adnum", "smallint"), ("adbin", "text")];
    let mut rows = Vec::new();
    for table in catalog.tables.values() {
        for (i, c) in table.columns.iter().enumerate() {
            let Some(default) = c.default.as_deref() else { continue };
            rows.push(vec![
                number(derived_oid(table.oid, &c.name, b'd')),
                number(table.oid),
                number(i + 1),
                text(&crate::catalog_views::default_text(default, c.type_modifier)),
            ]);
        }
    }
    (columns, rows)
}

pub(crate) fn pg_type() -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("oid", "bigint"),
        ("typname", "text"),
        ("typnamespace", "bigint"),
        ("typowner", "bigint"),
        ("typlen", "smallint"),
        ("typtype", "text"),
        ("typelem", "bigint"),
        ("typnotnull", "boolean"),
        ("typbasetype", "bigint"),
        ("typtypmod", "integer"),
        ("typcollation", "bigint"),
    ];
    let rows = types()
        .into_iter()
        .map(|t| {
            vec![
                number(t.oid),
                text(t.typname),
                number(PG_CATALOG_OID),
                number(OWNER_OID),
                number(t.typlen),
                text("b"),
                number(t.element),
                boolean(false),
                number(0),
                number(-1),
                number(if t.collatable { DEFAULT_COLLATION_OID } else { 0 }),
            ]
        })
        .collect();
    (columns, rows)
}

/// The collations weft's text compares by: bytewise, which is what all three are.
pub(crate) fn pg_collation() -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![("oid", "bigint"), ("collname", "text"), ("collnamespace", "bigint"), ("collowner", "bigint"), ("collprovider", "text")];
    let rows = [(DEFAULT_COLLATION_OID, "default", "d"), (950, "C", "c"), (951, "POSIX", "c")]
        .into_iter()
        .map(|(oid, name, provider)| vec![number(oid), text(name), number(PG_CATALOG_OID), number(OWNER_OID), text(provider)])
        .collect();
    (columns, rows)
}

fn int_array(values: &[usize]) -> Value {
    let items: Vec<String> = values.iter().map(|v| (v + 1).to_string()).collect();
    text(&format!("{{{}}}", items.join(",")))
}

pub(crate) fn pg_constraint(catalog: &Catalog) -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("oid", "bigint"),
        ("conname", "text"),
        ("connamespace", "bigint"),
        ("contype", "text"),
        ("condeferrable", "boolean"),
        ("condeferred", "boolean"),
        ("convalidated", "boolean"),
        ("conrelid", "bigint"),
        ("contypid", "bigint"),
        ("conindid", "bigint"),
        ("conparentid", "bigint"),
        ("confrelid", "bigint"),
        ("conislocal", "boolean"),
        ("coninhcount", "integer"),
        ("connoinherit", "boolean"),
        ("conkey", "integer[]"),
        ("confkey", "integer[]"),
    ];
    let rows = constraints(catalog)
        .into_iter()
        .map(|c| {
            vec![
                number(c.oid),
                text(&c.name),
                number(PUBLIC_OID),
                text(&c.kind.to_string()),
                boolean(false),
                boolean(false),
                boolean(true),
                number(c.table.oid),
                number(0),
                number(c.index_oid),
                number(0),
                number(c.referenced_oid),
                boolean(true),
                number(0),
                boolean(false),
                if c.keys.is_empty() { None } else { int_array(&c.keys) },
                if c.referenced_keys.is_empty() { None } else { int_array(&c.referenced_keys) },
            ]
        })
        .collect();
    (columns, rows)
}

/// weft's sequences neither cycle nor cache.
pub(crate) fn pg_sequence(catalog: &Catalog) -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("seqrelid", "bigint"),
        ("seqtypid", "bigint"),
        ("seqstart", "bigint"),
        ("seqincrement", "bigint"),
        ("seqmax", "bigint"),
        ("seqmin", "bigint"),
        ("seqcache", "bigint"),
        ("seqcycle", "boolean"),
    ];
    let rows = catalog
        .sequences
        .values()
        .map(|s| {
            vec![
                number(sequence_oid(s)),
                number(type_oid(s.data_type, None)),
                number(s.start),
                number(s.increment),
                number(s.max_value),
                number(s.min_value),
                number(1),
                boolean(false),
            ]
        })
        .collect();
    (columns, rows)
}

/// The dependencies between relations weft knows of: a serial column's sequence on the
/// column (`a`uto, what `\d SEQUENCE`'s "Owned by" reads) and an index on its columns.
pub(crate) fn pg_depend(catalog: &Catalog) -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("classid", "bigint"),
        ("objid", "bigint"),
        ("objsubid", "integer"),
        ("refclassid", "bigint"),
        ("refobjid", "bigint"),
        ("refobjsubid", "integer"),
        ("deptype", "text"),
    ];
    const PG_CLASS: i64 = 1259;
    let mut rows = Vec::new();
    for sequence in catalog.sequences.values() {
        let Some((table, column)) = &sequence.owned_by else { continue };
        let Some(table) = catalog.tables.get(table) else { continue };
        let Some(attnum) = table.column_index(column) else { continue };
        rows.push(vec![number(PG_CLASS), number(crate::pg_catalog::sequence_oid(sequence)), number(0), number(PG_CLASS), number(table.oid), number(attnum + 1), text("a")]);
    }
    for index in catalog.indexes.values() {
        let Some(table) = catalog.tables.get(&index.table) else { continue };
        for c in &index.columns {
            // An expression's dependencies are on the columns it reads; weft records none.
            if index.expression_of(table, c.column).is_none() {
                rows.push(vec![number(PG_CLASS), number(index.oid), number(0), number(PG_CLASS), number(table.oid), number(c.column + 1), text("a")]);
            }
        }
    }
    (columns, rows)
}

/// weft's one database. Its text compares bytewise: collation and ctype `C`.
pub(crate) fn pg_database() -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("oid", "bigint"),
        ("datname", "text"),
        ("datdba", "bigint"),
        ("encoding", "integer"),
        ("datlocprovider", "text"),
        ("datistemplate", "boolean"),
        ("datallowconn", "boolean"),
        ("datconnlimit", "integer"),
        ("datcollate", "text"),
        ("datctype", "text"),
        ("daticulocale", "text"),
        ("datacl", "text[]"),
    ];
    let rows = vec![vec![
        number(crate::catalog_views::DATABASE_OID),
        text(crate::catalog_views::DATABASE_NAME),
        number(OWNER_OID),
        number(UTF8_ENCODING),
        text("c"),
        boolean(false),
        boolean(true),
        number(-1),
        text("C"),
        text("C"),
        None,
        None,
    ]];
    (columns, rows)
}

/// weft's one role, and PostgreSQL 15's owner of schema `public`.
pub(crate) fn pg_roles() -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("oid", "bigint"),
        ("rolname", "text"),
        ("rolsuper", "boolean"),
        ("rolinherit", "boolean"),
        ("rolcreaterole", "boolean"),
        ("rolcreatedb", "boolean"),
        ("rolcanlogin", "boolean"),
        ("rolconnlimit", "integer"),
    ];
    let rows = vec![
        vec![number(OWNER_OID), text(crate::catalog_views::OWNER_NAME), boolean(true), boolean(true), boolean(true), boolean(true), boolean(true), number(-1)],
        vec![number(DATABASE_OWNER_OID), text(DATABASE_OWNER_NAME), boolean(false), boolean(true), boolean(false), boolean(false), boolean(false), number(-1)],
    ];
    (columns, rows)
}

/// The columns of the catalogs weft has no objects for (no inheritance, partitions, row
/// security policies, extended statistics, publications, triggers or rules): they are
/// empty, with the columns psql reads.
pub(crate) fn empty_view_columns(name: &str) -> Option<Vec<Column>> {
    Some(match name {
        "pg_inherits" => vec![("inhrelid", "bigint"), ("inhparent", "bigint"), ("inhseqno", "integer"), ("inhdetachpending", "boolean")],
        "pg_partitioned_table" => vec![("partrelid", "bigint"), ("partstrat", "text"), ("partnatts", "smallint"), ("partdefid", "bigint")],
        "pg_policy" => vec![
            ("oid", "bigint"),
            ("polname", "text"),
            ("polrelid", "bigint"),
            ("polcmd", "text"),
            ("polpermissive", "boolean"),
            ("polroles", "bigint[]"),
            ("polqual", "text"),
            ("polwithcheck", "text"),
        ],
        "pg_statistic_ext" => vec![
            ("oid", "bigint"),
            ("stxrelid", "bigint"),
            ("stxname", "text"),
            ("stxnamespace", "bigint"),
            ("stxowner", "bigint"),
            ("stxstattarget", "integer"),
            ("stxkeys", "integer[]"),
            ("stxkind", "text[]"),
            ("stxexprs", "text"),
        ],
        "pg_publication" => vec![
            ("oid", "bigint"),
            ("pubname", "text"),
            ("pubowner", "bigint"),
            ("puballtables", "boolean"),
            ("pubinsert", "boolean"),
            ("pubupdate", "boolean"),
            ("pubdelete", "boolean"),
            ("pubtruncate", "boolean"),
            ("pubviaroot", "boolean"),
        ],
        "pg_publication_namespace" => vec![("oid", "bigint"), ("pnpubid", "bigint"), ("pnnspid", "bigint")],
        "pg_publication_rel" => vec![("oid", "bigint"), ("prpubid", "bigint"), ("prrelid", "bigint"), ("prqual", "text"), ("prattrs", "integer[]")],
        "pg_trigger" => vec![
            ("oid", "bigint"),
            ("tgrelid", "bigint"),
            ("tgparentid", "bigint"),
            ("tgname", "text"),
            ("tgfoid", "bigint"),
            ("tgtype", "smallint"),
            ("tgenabled", "text"),
            ("tgisinternal", "boolean"),
            ("tgconstrrelid", "bigint"),
            ("tgconstrindid", "bigint"),
            ("tgconstraint", "bigint"),
            ("tgdeferrable", "boolean"),
            ("tginitdeferred", "boolean"),
            ("tgnargs", "smallint"),
        ],
        "pg_rewrite" => vec![
            ("oid", "bigint"),
            ("rulename", "text"),
            ("ev_class", "bigint"),
            ("ev_type", "text"),
            ("ev_enabled", "text"),
            ("is_instead", "boolean"),
            ("ev_qual", "text"),
            ("ev_action", "text"),
        ],
        _ => return None,
    })
}

/// The lookups bound for a call of a catalog function on an oid: `(key, value)` pairs.
pub(crate) fn constraint_definitions(catalog: &Catalog) -> Vec<(i64, String)> {
    constraints(catalog).into_iter().map(|c| (c.oid, c.definition)).collect()
}

/// `pg_get_indexdef(index, column, pretty)`: `(index oid, column, text)`; column 0 is the
/// whole `CREATE INDEX` statement.
pub(crate) fn index_definitions(catalog: &Catalog, pretty: bool) -> Vec<(i64, i64, String)> {
    let mut out = Vec::new();
    for index in catalog.indexes.values() {
        let Some(table) = catalog.tables.get(&index.table) else { continue };
        out.push((i64::from(index.oid), 0, crate::catalog_views::index_create_statement(table, index, pretty)));
        for (i, a) in index_attributes(table, index).into_iter().enumerate() {
            out.push((i64::from(index.oid), i as i64 + 1, a.definition));
        }
    }
    out
}

/// `regtype` output and `format_type(oid, NULL)` of every type.
pub(crate) fn type_names() -> Vec<(i64, String)> {
    types().into_iter().map(|t| (t.oid, t.display)).collect()
}

/// `regnamespace` output.
pub(crate) fn namespace_names() -> Vec<(i64, String)> {
    NAMESPACES.iter().map(|(oid, name, _)| (*oid, name.to_string())).collect()
}

/// `pg_relation_is_publishable`: ordinary tables are.
pub(crate) fn table_oids(catalog: &Catalog) -> Vec<i64> {
    catalog.tables.values().map(|t| i64::from(t.oid)).collect()
}
