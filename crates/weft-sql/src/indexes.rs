//! Index statements: CREATE / DROP INDEX, REINDEX,
//! the index maintenance of writing statements, and `weft_index_check`.

use std::sync::Arc;

use parking_lot::Mutex;
use sqlparser::ast;
use weft_access::btree::{self, BTree, BTreeDesc, BTreeWriter, TidWord};
use weft_access::catalog::{IndexColumnMeta, IndexConstraint, IndexExpression, IndexMeta, TableMeta};
use weft_access::heap::{self, scan_own_rows, Tid};
use weft_access::index_build::{btree_desc, build_btree, unique_violation, BuildEnv, IndexBuildReport, KeyProjector};
use weft_access::{Catalog, Snapshot, Xid};
use weft_common::parallel::CancelToken;
use weft_common::progress::IndexBuildProgress;
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_sort::SortStrategy;
use weft_storage::{BlockNumber, ForkNumber, RelFileLocator};

use crate::api::{ColumnInfo, QueryResult};
use crate::bind::{ident_name, object_name};
use crate::database::{Database, WriteTxn};
use crate::session::Session;

/// PostgreSQL's default leaf fill factor of a B-tree.
pub const DEFAULT_FILLFACTOR: u8 = 90;
/// Each participant of a build needs this much of `maintenance_work_mem` (PostgreSQL's rule).
const MIN_BUDGET_PER_PARTICIPANT: usize = 32 * 1024 * 1024;
/// Index entries an INSERT checks and adds at a time.
const MAINTENANCE_BATCH: usize = 65536;

fn undefined_index(name: &str) -> Error {
    Error::new(SqlState::UNDEFINED_OBJECT, format!("index \"{name}\" does not exist"))
}

fn not_an_index(name: &str) -> Error {
    Error::new(SqlState::WRONG_OBJECT_TYPE, format!("\"{name}\" is not an index")).with_hint("Use DROP TABLE to remove a table.")
}

/// `WITH (...)` options of CREATE INDEX.
#[derive(Default)]
struct IndexOptions {
    fillfactor: Option<u8>,
    parallel_workers: Option<u32>,
}

pub(crate) fn option_integer(name: &str, value: &ast::Expr, min: i64, max: i64) -> Result<i64> {
    let text = match value {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.clone(),
            ast::Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    };
    let parsed: i64 = text.trim().parse().map_err(|_| {
        Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("invalid value for integer option \"{name}\": {text}"))
    })?;
    if !(min..=max).contains(&parsed) {
        return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("value {parsed} out of bounds for option \"{name}\""))
            .with_detail(format!("Valid values are between \"{min}\" and \"{max}\".")));
    }
    Ok(parsed)
}

/// `name = value` pairs of a `WITH (...)` or `SET (...)` list.
fn option_pairs(exprs: &[ast::Expr]) -> Result<Vec<(String, ast::Expr)>> {
    exprs
        .iter()
        .map(|e| match e {
            ast::Expr::BinaryOp { left, op: ast::BinaryOperator::Eq, right } => match left.as_ref() {
                ast::Expr::Identifier(i) => Ok((ident_name(i), (**right).clone())),
                other => Err(Error::syntax(format!("syntax error at or near \"{other}\""))),
            },
            other => Err(Error::syntax(format!("syntax error at or near \"{other}\""))),
        })
        .collect()
}

fn index_options(exprs: &[ast::Expr]) -> Result<IndexOptions> {
    let mut options = IndexOptions::default();
    for (name, value) in option_pairs(exprs)? {
        match name.as_str() {
            "fillfactor" => options.fillfactor = Some(option_integer(&name, &value, 10, 100)? as u8),
            "parallel_workers" => options.parallel_workers = Some(option_integer(&name, &value, 0, 1024)? as u32),
            "deduplicate_items" => {
                return Err(Error::not_supported("the B-tree option \"deduplicate_items\" is not supported yet"))
            }
            other => {
                return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("unrecognized parameter \"{other}\"")))
            }
        }
    }
    Ok(options)
}

/// PostgreSQL's generated name: `table_col1_col2_label`, then `..._label1`, `..._label2`,
/// ... (`label` is `idx` for CREATE INDEX, `key` for UNIQUE, `pkey` without columns,
/// `seq` for a serial column's sequence).
pub(crate) fn generated_name(catalog: &Catalog, table: &str, columns: &[String], label: &str) -> String {
    let base = if columns.is_empty() { format!("{table}_{label}") } else { format!("{table}_{}_{label}", columns.join("_")) };
    let mut name = base.clone();
    let mut n = 0;
    while catalog.relation_exists(&name) {
        n += 1;
        name = format!("{base}{n}");
    }
    name
}

pub fn create_index(session: &mut Session, create: &ast::CreateIndex, cancel: &CancelToken) -> Result<QueryResult> {
    // weft's build never blocks readers, so CONCURRENTLY builds as usual; like
    // PostgreSQL it refuses to run inside a transaction block.
    if create.concurrently && session.in_transaction_block() {
        return Err(Error::new(SqlState::ACTIVE_SQL_TRANSACTION, "CREATE INDEX CONCURRENTLY cannot run inside a transaction block"));
    }
    if let Some(using) = &create.using {
        check_access_method(&using.to_string())?;
    }
    if create.nulls_distinct == Some(false) {
        return Err(Error::not_supported("NULLS NOT DISTINCT is not supported yet"));
    }
    let options = index_options(&create.with)?;
    let table_name = object_name(&create.table_name)?;
    let mut notices = Vec::new();
    let mut report = None;
    session.write(|txn| {
        let table = txn.catalog.table(&table_name)?.clone();
        let IndexKeys { columns, mut names, expressions } = index_columns(&table, &create.columns, true, |name| {
            Error::new(SqlState::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist"))
        })?;
        let include = include_columns(&table, &create.include)?;
        // PostgreSQL's generated name counts the INCLUDE columns too.
        names.extend(include.iter().map(|&c| table.columns[c].name.clone()));
        if columns.len() + include.len() > 32 {
            return Err(Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "cannot use more than 32 columns in an index"));
        }
        let (predicate, predicate_display) = match &create.predicate {
            None => (None, None),
            Some(pred) => {
                let bound = crate::index_expr::bind_index_expr(&table, pred, crate::index_expr::IndexClause::Predicate)?;
                (Some(pred.to_string()), Some(crate::index_expr::predicate_display(&table, &bound)))
            }
        };
        let name = match &create.name {
            Some(name) => object_name(name)?,
            None => generated_name(&txn.catalog, &table_name, &names, "idx"),
        };
        if txn.catalog.relation_exists(&name) {
            if create.if_not_exists {
                notices.push(format!("NOTICE:  relation \"{name}\" already exists, skipping"));
                return Ok(());
            }
            return Err(Error::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
        }
        let new = NewIndex { name, columns, unique: create.unique, constraint: None, options, expressions, predicate, predicate_display, include };
        let command = if create.concurrently { "CREATE INDEX CONCURRENTLY" } else { "CREATE INDEX" };
        report = Some(add_index(session, txn, &table, new, command, cancel, &mut notices)?);
        Ok(())
    })?;
    session.note_index_build(report);
    Ok(QueryResult::command_with_notices("CREATE INDEX", notices))
}

/// `USING method`: only btree exists; PostgreSQL's other methods are "not supported".
fn check_access_method(method: &str) -> Result<()> {
    let method = method.to_lowercase();
    match method.as_str() {
        "btree" => Ok(()),
        "gin" | "hash" | "gist" | "spgist" | "brin" => Err(Error::not_supported(format!("access method \"{method}\" is not supported yet"))),
        _ => Err(Error::new(SqlState::UNDEFINED_OBJECT, format!("access method \"{method}\" does not exist"))),
    }
}

/// The key columns of an index: their metadata, the names a generated index name is made
/// of, and the expressions of expression columns.
struct IndexKeys {
    columns: Vec<IndexColumnMeta>,
    names: Vec<String>,
    expressions: Vec<IndexExpression>,
}

/// The key columns of an index on `table`; `missing` makes the error for a name that is
/// not a column (CREATE INDEX and key constraints word it differently). Expressions only
/// when `expressions` (CREATE INDEX): each becomes index row position `columns + k`.
fn index_columns(
    table: &TableMeta,
    items: &[ast::IndexColumn],
    expressions_allowed: bool,
    missing: impl Fn(&str) -> Error,
) -> Result<IndexKeys> {
    let mut columns = Vec::with_capacity(items.len());
    let mut names = Vec::with_capacity(items.len());
    let mut expressions: Vec<IndexExpression> = Vec::new();
    for item in items {
        let mut expr = &item.column.expr;
        while let ast::Expr::Nested(inner) = expr {
            expr = inner;
        }
        let (column, data_type, name) = match expr {
            ast::Expr::Identifier(ident) => {
                let name = ident_name(ident);
                let column = table.column_index(&name).ok_or_else(|| missing(&name))?;
                (column, table.columns[column].data_type, name)
            }
            _ if !expressions_allowed => return Err(Error::syntax(format!("syntax error at or near \"{expr}\""))),
            _ => {
                let bound = crate::index_expr::bind_index_expr(table, expr, crate::index_expr::IndexClause::Expression)?;
                let data_type = bound.data_type();
                let column = table.columns.len() + expressions.len();
                expressions.push(IndexExpression {
                    text: expr.to_string(),
                    display: crate::index_expr::column_display(table, &bound),
                    data_type,
                });
                (column, data_type, crate::index_expr::name_part(expr))
            }
        };
        if data_type.is_array() {
            return Err(Error::not_supported("indexes on array columns are not supported"));
        }
        if !btree::indexable(data_type) {
            return Err(Error::new(
                SqlState::UNDEFINED_OBJECT,
                format!("data type {} has no default operator class for access method \"btree\"", data_type.name()),
            ));
        }
        let opclass = match &item.operator_class {
            Some(name) => operator_class(&name.to_string(), data_type)?,
            None => None,
        };
        let descending = matches!(item.column.options.sort, Some(ast::OrderBySort::Desc));
        let nulls_first = item.column.options.nulls_first.unwrap_or(descending);
        columns.push(IndexColumnMeta { column, descending, nulls_first, opclass });
        names.push(name);
    }
    if columns.len() > 32 {
        return Err(Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "cannot use more than 32 columns in an index"));
    }
    Ok(IndexKeys { columns, names, expressions })
}

/// A B-tree operator class named for a key of type `data_type`: `None` for the type's
/// default class (it need not be shown), the name for a pattern class. weft compares
/// text by its bytes, as the pattern classes do, so every accepted class orders alike.
fn operator_class(name: &str, data_type: DataType) -> Result<Option<String>> {
    let lower = name.to_lowercase();
    let accepts: &[DataType] = match lower.as_str() {
        // weft keeps smallint as integer.
        "int2_ops" | "int4_ops" => &[DataType::Int4],
        "int8_ops" => &[DataType::Int8],
        "float4_ops" | "float8_ops" => &[DataType::Float8],
        "numeric_ops" => &[DataType::Numeric],
        "bool_ops" => &[DataType::Bool],
        "text_ops" | "varchar_ops" | "bpchar_ops" | "text_pattern_ops" | "varchar_pattern_ops" | "bpchar_pattern_ops" => &[DataType::Text],
        "date_ops" => &[DataType::Date],
        "time_ops" => &[DataType::Time],
        "timestamp_ops" => &[DataType::Timestamp],
        "timestamptz_ops" => &[DataType::TimestampTz],
        "interval_ops" => &[DataType::Interval],
        _ => {
            return Err(Error::new(
                SqlState::UNDEFINED_OBJECT,
                format!("operator class \"{name}\" does not exist for access method \"btree\""),
            ))
        }
    };
    if !accepts.contains(&data_type) {
        return Err(Error::new(
            SqlState::DATATYPE_MISMATCH,
            format!("operator class \"{lower}\" does not accept data type {}", data_type.name()),
        ));
    }
    Ok(lower.ends_with("_pattern_ops").then_some(lower))
}

/// The table columns of `INCLUDE (...)`: stored in the entries, never compared, so of
/// any type.
fn include_columns(table: &TableMeta, items: &[ast::Ident]) -> Result<Vec<usize>> {
    items
        .iter()
        .map(|ident| {
            let name = ident_name(ident);
            table
                .column_index(&name)
                .ok_or_else(|| Error::new(SqlState::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist")))
        })
        .collect()
}

/// An index about to be created: what CREATE INDEX and key constraints decide.
struct NewIndex {
    name: String,
    columns: Vec<IndexColumnMeta>,
    unique: bool,
    constraint: Option<IndexConstraint>,
    options: IndexOptions,
    expressions: Vec<IndexExpression>,
    predicate: Option<String>,
    predicate_display: Option<String>,
    include: Vec<usize>,
}

/// Create the index file, build it from the table's committed rows and enter it in the
/// catalog (within the caller's write transaction).
fn add_index(
    session: &Session,
    txn: &mut WriteTxn,
    table: &TableMeta,
    new: NewIndex,
    command: &'static str,
    cancel: &CancelToken,
    notices: &mut Vec<String>,
) -> Result<IndexBuildReport> {
    let rel = txn.create_relation(&session.db)?;
    let index = IndexMeta {
        oid: rel.rel_number,
        name: new.name,
        table: table.name.clone(),
        columns: new.columns,
        unique: new.unique,
        fillfactor: new.options.fillfactor.unwrap_or(DEFAULT_FILLFACTOR),
        parallel_workers: new.options.parallel_workers,
        rel_number: rel.rel_number,
        constraint: new.constraint,
        expressions: new.expressions,
        predicate: new.predicate,
        predicate_display: new.predicate_display,
        include: new.include,
        clustered: false,
    };
    let report = build(session, txn, table, &index, rel, command, cancel, notices)?;
    txn.catalog.indexes.insert(index.name.clone(), index);
    Ok(report)
}

/// A `PRIMARY KEY` or `UNIQUE` constraint of CREATE TABLE or ALTER TABLE ... ADD.
pub(crate) struct KeyConstraint {
    pub kind: IndexConstraint,
    pub name: Option<String>,
    pub columns: Vec<ast::IndexColumn>,
}

impl KeyConstraint {
    /// The key constraint a table constraint declares; other kinds are not supported.
    pub(crate) fn from_table_constraint(constraint: &ast::TableConstraint) -> Result<Self> {
        let (kind, name, columns, include, index_type) = match constraint {
            ast::TableConstraint::PrimaryKey(c) => (IndexConstraint::PrimaryKey, &c.name, &c.columns, &c.include, &c.index_type),
            ast::TableConstraint::Unique(c) => {
                if matches!(c.nulls_distinct, ast::NullsDistinctOption::NotDistinct) {
                    return Err(Error::not_supported("UNIQUE NULLS NOT DISTINCT is not supported yet"));
                }
                (IndexConstraint::Unique, &c.name, &c.columns, &c.include, &c.index_type)
            }
            ast::TableConstraint::Check(_) => return Err(Error::not_supported("CHECK constraints are not supported yet")),
            ast::TableConstraint::ForeignKey(_) => return Err(Error::not_supported("FOREIGN KEY constraints are not supported yet")),
            other => return Err(Error::not_supported(format!("the table constraint {other} is not supported"))),
        };
        if !include.is_empty() {
            return Err(Error::not_supported("INCLUDE is not supported yet"));
        }
        if let Some(method) = index_type {
            check_access_method(&method.to_string())?;
        }
        Ok(KeyConstraint { kind, name: name.as_ref().map(ident_name), columns: columns.clone() })
    }

    /// A column's own `PRIMARY KEY` or `UNIQUE`: a key of that one column.
    pub(crate) fn for_column(kind: IndexConstraint, name: Option<String>, column: &ast::Ident) -> Self {
        let item = ast::IndexColumn {
            column: ast::OrderByExpr {
                expr: ast::Expr::Identifier(column.clone()),
                options: ast::OrderByOptions { sort: None, nulls_first: None },
                with_fill: None,
            },
            operator_class: None,
        };
        KeyConstraint { kind, name, columns: vec![item] }
    }
}

/// Create the indexes of `constraints` on `table` (already in the catalog), as PostgreSQL
/// does: the primary key first, a UNIQUE over the same columns as an earlier key folded
/// into it, primary key columns made NOT NULL (failing if a row holds a NULL there), and
/// unnamed indexes named `table_pkey` or `table_col_key`.
pub(crate) fn add_key_constraints(
    session: &Session,
    txn: &mut WriteTxn,
    table_name: &str,
    constraints: &[KeyConstraint],
    cancel: &CancelToken,
    notices: &mut Vec<String>,
) -> Result<()> {
    let existing_primary = txn.catalog.indexes_of(table_name).any(|i| i.constraint == Some(IndexConstraint::PrimaryKey));
    let primaries = constraints.iter().filter(|c| c.kind == IndexConstraint::PrimaryKey).count();
    if primaries > 1 || (primaries == 1 && existing_primary) {
        return Err(Error::new(
            SqlState::INVALID_TABLE_DEFINITION,
            format!("multiple primary keys for table \"{table_name}\" are not allowed"),
        ));
    }
    let ordered = constraints.iter().filter(|c| c.kind == IndexConstraint::PrimaryKey).chain(constraints.iter().filter(|c| c.kind == IndexConstraint::Unique));
    let mut made: Vec<Vec<IndexColumnMeta>> = Vec::new();
    for constraint in ordered {
        let table = txn.catalog.table(table_name)?.clone();
        let IndexKeys { columns, names, .. } = index_columns(&table, &constraint.columns, false, |name| {
            Error::new(SqlState::UNDEFINED_COLUMN, format!("column \"{name}\" named in key does not exist"))
        })?;
        if let Some(twice) = names.iter().enumerate().find(|(i, n)| names[..*i].contains(n)).map(|(_, n)| n) {
            let kind = if constraint.kind == IndexConstraint::PrimaryKey { "primary key" } else { "unique" };
            return Err(Error::new(
                SqlState::DUPLICATE_COLUMN,
                format!("column \"{twice}\" appears twice in {kind} constraint"),
            ));
        }
        if constraint.name.is_none() && made.contains(&columns) {
            continue;
        }
        if constraint.kind == IndexConstraint::PrimaryKey {
            require_not_null(session, txn, &table, &columns)?;
        }
        let name = match &constraint.name {
            Some(name) => name.clone(),
            None if constraint.kind == IndexConstraint::PrimaryKey => generated_name(&txn.catalog, table_name, &[], "pkey"),
            None => generated_name(&txn.catalog, table_name, &names, "key"),
        };
        if txn.catalog.relation_exists(&name) {
            return Err(Error::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
        }
        let table = txn.catalog.table(table_name)?.clone();
        made.push(columns.clone());
        let new = NewIndex {
            name,
            columns,
            unique: true,
            constraint: Some(constraint.kind),
            options: IndexOptions::default(),
            expressions: Vec::new(),
            predicate: None,
            predicate_display: None,
            include: Vec::new(),
        };
        add_index(session, txn, &table, new, "CREATE INDEX", cancel, notices)?;
    }
    Ok(())
}

/// Mark primary key columns NOT NULL, first checking that no committed row holds a NULL in
/// them (PostgreSQL's error names the first such column).
fn require_not_null(session: &Session, txn: &mut WriteTxn, table: &TableMeta, columns: &[IndexColumnMeta]) -> Result<()> {
    let nullable: Vec<usize> = columns.iter().map(|c| c.column).filter(|&c| !table.columns[c].not_null).collect();
    if nullable.is_empty() {
        return Ok(());
    }
    let layout = weft_common::tuple::RowLayout::new(&table.column_types());
    let snapshot = txn.catalog.snapshot();
    let pool = &session.db.pool;
    let blocks = pool.nblocks(table.locator(), ForkNumber::Main)?;
    let mut null_in: Option<usize> = None;
    heap::scan_blocks_with_tids(pool, table.locator(), 0..blocks, None, &snapshot, |_, row| {
        if let Some(&column) = nullable.iter().find(|&&c| layout.is_null(row, c)) {
            null_in = Some(null_in.map_or(column, |c| c.min(column)));
        }
        Ok(true)
    })?;
    if let Some(column) = null_in {
        return Err(Error::new(
            SqlState::NOT_NULL_VIOLATION,
            format!("column \"{}\" of relation \"{}\" contains null values", table.columns[column].name, table.name),
        ));
    }
    let meta = txn.catalog.table_mut(&table.name)?;
    for column in nullable {
        meta.columns[column].not_null = true;
    }
    Ok(())
}

/// Participants of a build besides the leader: the index's or the table's
/// `parallel_workers` when set, else PostgreSQL's estimate from the table's size; then
/// fewer until each participant has 32MB of `maintenance_work_mem`, and at most
/// `max_parallel_maintenance_workers`.
fn build_workers(session: &Session, table: &TableMeta, index: &IndexMeta, heap_blocks: BlockNumber) -> usize {
    let cap = session.settings.integer("max_parallel_maintenance_workers").max(0) as usize;
    if let Some(n) = index.parallel_workers.or(table.parallel_workers) {
        return (n as usize).min(cap);
    }
    let threshold_blocks = (session.settings.memory_bytes("min_parallel_table_scan_size") / weft_storage::PAGE_SIZE).max(1) as u64;
    let mut workers = 0usize;
    let mut threshold = threshold_blocks;
    if heap_blocks as u64 >= threshold {
        workers = 1;
        while heap_blocks as u64 >= threshold.saturating_mul(3) {
            workers += 1;
            threshold = threshold.saturating_mul(3);
        }
    }
    let budget = session.settings.memory_bytes("maintenance_work_mem");
    while workers > 0 && budget / (workers + 1) < MIN_BUDGET_PER_PARTICIPANT {
        workers -= 1;
    }
    workers.min(cap)
}

/// Build `index` into its empty file `rel` from the committed rows of `table`.
#[allow(clippy::too_many_arguments)]
fn build(
    session: &Session,
    txn: &mut WriteTxn,
    table: &TableMeta,
    index: &IndexMeta,
    rel: RelFileLocator,
    command: &'static str,
    cancel: &CancelToken,
    notices: &mut Vec<String>,
) -> Result<IndexBuildReport> {
    let db = &session.db;
    let heap_blocks = db.pool.nblocks(table.locator(), ForkNumber::Main)?;
    let progress = Arc::new(IndexBuildProgress::new(command, &index.name, &table.name));
    let _published = session.progress.publish(progress.clone(), table.oid, index.oid);
    let trace_lines: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let trace: Option<weft_sort::TraceFn> = session.settings.boolean("trace_sort").then(|| {
        let lines = trace_lines.clone();
        Arc::new(move |line: String| lines.lock().push(format!("LOG:  {line}"))) as weft_sort::TraceFn
    });
    let env = BuildEnv {
        pool: &db.pool,
        workers: &db.workers,
        workers_requested: build_workers(session, table, index, heap_blocks),
        leader_participates: session.settings.boolean("parallel_leader_participation"),
        cancel,
        budget: session.settings.memory_bytes("maintenance_work_mem"),
        strategy: SortStrategy::from_name(&session.settings.text("parallel_sort_strategy")).unwrap_or(SortStrategy::Partition),
        temp_dir: db.data_dir.join("tmp"),
        trace: trace.clone(),
        progress: &progress,
        row_map: crate::index_expr::row_map(table, index)?,
    };
    let snapshot = txn.catalog.snapshot();
    let outcome = build_btree(&env, table, index, rel, &snapshot);
    if let (Some(trace), Ok(report)) = (&trace, &outcome) {
        trace(format!(
            "{command} \"{}\": {} tuples, {} participants, {} levels, {} leaf and {} internal pages; scan+sort {:.3} s, load {:.3} s, total {:.3} s ({:.3} s serial)",
            index.name,
            report.tree.tuples,
            report.workers_launched + 1,
            report.tree.levels,
            report.tree.leaf_pages,
            report.tree.internal_pages,
            report.scan_sort.as_secs_f64(),
            report.load.as_secs_f64(),
            report.total.as_secs_f64(),
            report.serial.as_secs_f64(),
        ));
    }
    notices.append(&mut trace_lines.lock());
    txn.touch(rel);
    outcome
}

/// Write an empty B-tree into the new, empty file `rel`.
fn write_empty(db: &Database, rel: RelFileLocator, desc: &BTreeDesc) -> Result<()> {
    BTreeWriter::new(&db.pool, rel, desc)?.finish().map(|_| ())
}

pub fn drop_indexes(session: &mut Session, names: &[ast::ObjectName], if_exists: bool) -> Result<QueryResult> {
    let mut notices = Vec::new();
    session.write(|txn| {
        for name in names {
            let name = object_name(name)?;
            if let Some(index) = txn.catalog.indexes.get(&name).filter(|i| i.constraint.is_some()) {
                let table = &index.table;
                return Err(Error::new(
                    SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
                    format!("cannot drop index {name} because constraint {name} on table {table} requires it"),
                )
                .with_hint(format!("You can drop constraint {name} on table {table} instead.")));
            }
            if let Some((child, fk)) = crate::constraints::using_index(&txn.catalog, &name).first() {
                return Err(Error::new(
                    SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
                    format!("cannot drop index {name} because other objects depend on it"),
                )
                .with_detail(format!("constraint {} on table {} depends on index {name}", fk.name, child.name))
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
            }
            match txn.catalog.indexes.remove(&name) {
                Some(index) => txn.drop_relation(index.locator()),
                None if txn.catalog.tables.contains_key(&name) => return Err(not_an_index(&name)),
                None if if_exists => notices.push(format!("NOTICE:  index \"{name}\" does not exist, skipping")),
                None => return Err(undefined_index(&name)),
            }
        }
        Ok(())
    })?;
    Ok(QueryResult::command_with_notices("DROP INDEX", notices))
}

/// DROP TABLE and TRUNCATE: what happens to the table's indexes.
pub(crate) fn drop_indexes_of(txn: &mut WriteTxn, table: &str) {
    let names: Vec<String> = txn.catalog.indexes_of(table).map(|i| i.name.clone()).collect();
    for name in names {
        if let Some(index) = txn.catalog.indexes.remove(&name) {
            txn.drop_relation(index.locator());
        }
    }
}

/// TRUNCATE: every index of `table` gets a new, empty file.
pub(crate) fn truncate_indexes_of(db: &Database, txn: &mut WriteTxn, table: &TableMeta) -> Result<()> {
    let indexes: Vec<IndexMeta> = txn.catalog.indexes_of(&table.name).cloned().collect();
    for index in indexes {
        let rel = txn.create_relation(db)?;
        write_empty(db, rel, &btree_desc(table, &index)?)?;
        txn.drop_relation(index.locator());
        txn.catalog.indexes.get_mut(&index.name).expect("listed above").rel_number = rel.rel_number;
    }
    Ok(())
}

/// Is `sql` a REINDEX statement (which sqlparser does not know)?
pub fn is_reindex(sql: &str) -> bool {
    sql.split_whitespace().next().is_some_and(|w| w.eq_ignore_ascii_case("reindex"))
}

/// `REINDEX [ (VERBOSE) ] { INDEX | TABLE } name`, read from the statement's text.
/// `None` when `sql` is not a REINDEX.
pub fn try_reindex(session: &mut Session, sql: &str, cancel: &CancelToken) -> Option<Result<QueryResult>> {
    let text = sql.trim().trim_end_matches(';').trim();
    let words: Vec<&str> = text.split_whitespace().collect();
    if !words.first().is_some_and(|w| w.eq_ignore_ascii_case("reindex")) {
        return None;
    }
    let mut rest = &words[1..];
    if rest.first().is_some_and(|w| w.starts_with('(')) {
        let close = rest.iter().position(|w| w.ends_with(')'))?;
        rest = &rest[close + 1..];
    }
    let (kind, rest) = match rest.split_first() {
        Some((kind, rest)) => (kind.to_lowercase(), rest),
        None => return Some(Err(Error::syntax("syntax error at end of input"))),
    };
    let concurrently = rest.first().is_some_and(|w| w.eq_ignore_ascii_case("concurrently"));
    let rest = if concurrently { &rest[1..] } else { rest };
    if concurrently && session.in_transaction_block() {
        return Some(Err(Error::new(SqlState::ACTIVE_SQL_TRANSACTION, "REINDEX CONCURRENTLY cannot run inside a transaction block")));
    }
    let name = match rest {
        [name] => name.trim_matches('"').to_string(),
        [] => return Some(Err(Error::syntax("syntax error at end of input"))),
        [_, extra, ..] => return Some(Err(Error::syntax(format!("syntax error at or near \"{extra}\"")))),
    };
    let name = if rest[0].starts_with('"') { name } else { name.to_lowercase() };
    Some(match kind.as_str() {
        "index" => reindex(session, Some(&name), None, concurrently, cancel),
        "table" => reindex(session, None, Some(&name), concurrently, cancel),
        "system" if concurrently => Err(Error::not_supported("cannot reindex system catalogs concurrently")),
        "schema" | "database" | "system" => Err(Error::not_supported(format!("REINDEX {} is not supported yet", kind.to_uppercase()))),
        other => Err(Error::syntax(format!("syntax error at or near \"{other}\""))),
    })
}

fn reindex(session: &mut Session, index: Option<&str>, table: Option<&str>, concurrently: bool, cancel: &CancelToken) -> Result<QueryResult> {
    let mut notices = Vec::new();
    let mut last = None;
    session.write(|txn| {
        let names: Vec<String> = match (index, table) {
            (Some(name), _) => {
                if !txn.catalog.indexes.contains_key(name) {
                    return Err(if txn.catalog.tables.contains_key(name) {
                        Error::new(SqlState::WRONG_OBJECT_TYPE, format!("\"{name}\" is not an index"))
                    } else {
                        weft_access::catalog::undefined_table(name)
                    });
                }
                vec![name.to_string()]
            }
            (None, Some(table)) => {
                txn.catalog.table(table)?;
                let names: Vec<String> = txn.catalog.indexes_of(table).map(|i| i.name.clone()).collect();
                if names.is_empty() {
                    notices.push(if concurrently {
                        format!("NOTICE:  table \"{table}\" has no indexes that can be reindexed concurrently")
                    } else {
                        format!("NOTICE:  table \"{table}\" has no indexes to reindex")
                    });
                }
                names
            }
            (None, None) => Vec::new(),
        };
        for name in names {
            let command = if concurrently { "REINDEX CONCURRENTLY" } else { "REINDEX" };
            last = Some(rebuild_index(session, txn, &name, command, cancel, &mut notices)?);
        }
        Ok(())
    })?;
    session.note_index_build(last);
    Ok(QueryResult::command_with_notices("REINDEX", notices))
}

/// Build index `name` anew into a new relation (REINDEX; VACUUM after rewriting its
/// table); the old relation is dropped when the transaction commits.
fn rebuild_index(
    session: &Session,
    txn: &mut WriteTxn,
    name: &str,
    command: &'static str,
    cancel: &CancelToken,
    notices: &mut Vec<String>,
) -> Result<IndexBuildReport> {
    let index = txn.catalog.indexes[name].clone();
    let table = txn.catalog.table(&index.table)?.clone();
    let rel = txn.create_relation(&session.db)?;
    let report = build(session, txn, &table, &index, rel, command, cancel, notices)?;
    txn.drop_relation(index.locator());
    txn.catalog.indexes.get_mut(name).expect("cloned above").rel_number = rel.rel_number;
    Ok(report)
}

/// Rebuild every index of table `table`; the last build's report, if there was one.
pub(crate) fn rebuild_indexes_of(
    session: &Session,
    txn: &mut WriteTxn,
    table: &str,
    command: &'static str,
    cancel: &CancelToken,
    notices: &mut Vec<String>,
) -> Result<Option<IndexBuildReport>> {
    let names: Vec<String> = txn.catalog.indexes_of(table).map(|i| i.name.clone()).collect();
    let mut last = None;
    for name in names {
        last = Some(rebuild_index(session, txn, &name, command, cancel, notices)?);
    }
    Ok(last)
}

/// The index maintenance pass of an INSERT or COPY that wrote rows with `txn.xid` into
/// `table` from block `first_block` on: every new row gets an entry in every index of
/// the table. Unique keys are checked for a whole batch before any of its entries is
/// added, against the committed entries and the statement's own earlier rows.
///
/// For an UPDATE (or an upsert), `replaced` says when the statement deleted each old row
/// relative to its new rows. PostgreSQL replaces rows one at a time and checks each new
/// row at once, so an old row it has not reached yet still clashes; the check here does
/// the same: a row this statement deleted clashes with a new row written before it was
/// deleted.
///
/// Returns the rows ON CONFLICT DO NOTHING skipped.
pub(crate) fn maintain_indexes(
    db: &Database,
    txn: &WriteTxn,
    table: &TableMeta,
    first_block: BlockNumber,
    replaced: &Replacements,
    arbiters: Option<&[String]>,
    cancel: &CancelToken,
) -> Result<Vec<Tid>> {
    let mut indexes: Vec<IndexMeta> = txn.catalog.indexes_of(&table.name).cloned().collect();
    if indexes.is_empty() {
        return Ok(Vec::new());
    }
    // In creation order, as PostgreSQL checks them: it decides which violation is reported.
    indexes.sort_by_key(|i| i.oid);
    let pool = &db.pool;
    let heap_rel = table.locator();
    let end = pool.nblocks(heap_rel, ForkNumber::Main)?;
    let snapshot = txn.catalog.snapshot();
    let maintained: Vec<(IndexMeta, BTreeDesc, KeyProjector)> = indexes
        .into_iter()
        .map(|index| {
            let desc = btree_desc(table, &index)?;
            let projector = KeyProjector::with_map(table, &index, &desc, crate::index_expr::row_map(table, &index)?);
            Ok((index, desc, projector))
        })
        .collect::<Result<_>>()?;
    let mut rows: Vec<(Tid, Vec<u8>)> = Vec::new();
    let mut flushed = 0usize;
    // Rows ON CONFLICT DO NOTHING skips: given the statement's xmax once the scan of its
    // own rows (which holds page locks) is over. They never get index entries.
    let mut skipped: Vec<Tid> = Vec::new();
    let mut flush = |rows: &mut Vec<(Tid, Vec<u8>)>| -> Result<()> {
        cancel.check()?;
        let base = flushed;
        flushed += rows.len();
        if let Some(arbiters) = arbiters {
            let arbiter_indexes: Vec<_> = maintained.iter().filter(|(index, _, _)| arbiters.contains(&index.name)).collect();
            let conflicting = conflicting_rows(db, txn.xid, &snapshot, table, &arbiter_indexes, rows)?;
            let mut i = 0;
            rows.retain(|(tid, _)| {
                let keep = !conflicting[i];
                i += 1;
                if !keep {
                    skipped.push(*tid);
                }
                keep
            });
        }
        // The new row's position among all the statement's new rows.
        let position_of = |new: Tid| rows.binary_search_by_key(&new, |(tid, _)| *tid).ok().map(|i| base + i);
        for (index, desc, projector) in &maintained {
            let mut entries: Vec<Vec<u8>> = Vec::with_capacity(rows.len());
            for (tid, row) in rows.iter() {
                let mut entry = Vec::with_capacity(32);
                if projector.project(row, TidWord::new(*tid, true), &mut entry)? {
                    entries.push(entry);
                }
            }
            entries.sort_by(|a, b| desc.compare(a, b));
            let tree = BTree::open(pool, index.locator(), desc);
            if index.unique {
                check_unique(db, txn.xid, &snapshot, table, index, desc, &tree, &entries, &|new, old| {
                    position_of(new).is_some_and(|position| replaced.deleted_after(position, old))
                })?;
            }
            for entry in &entries {
                tree.insert(entry)?;
            }
        }
        rows.clear();
        Ok(())
    };
    scan_own_rows(pool, heap_rel, first_block..end, txn.xid, |tid, row| {
        rows.push((tid, row.to_vec()));
        if rows.len() >= MAINTENANCE_BATCH {
            flush(&mut rows)?;
        }
        Ok(())
    })?;
    flush(&mut rows)?;
    heap::set_xmax(pool, heap_rel, &skipped, txn.xid)?;
    Ok(skipped)
}

/// When a writing statement deleted the old rows it replaces, relative to the new rows it
/// wrote: PostgreSQL does both one row at a time, and a new row's unique keys are checked
/// against the rows live at that moment.
#[derive(Default)]
pub(crate) struct Replacements {
    /// The step at which each new row was written, in the order they were written.
    new_row_steps: Vec<usize>,
    /// The rows deleted, sorted by TID, each with the step that deleted it.
    deleted: Vec<(Tid, usize)>,
}

impl Replacements {
    /// UPDATE: the i-th new row replaces `tids[i]` (sorted: the order the scan met them),
    /// both at step i.
    pub fn in_order(tids: &[Tid]) -> Replacements {
        debug_assert!(tids.windows(2).all(|w| w[0] < w[1]));
        Replacements { new_row_steps: (0..tids.len()).collect(), deleted: tids.iter().copied().zip(0..).collect() }
    }

    /// Upsert: each new row's step, and each deleted row's step.
    pub fn at_steps(new_row_steps: Vec<usize>, mut deleted: Vec<(Tid, usize)>) -> Replacements {
        deleted.sort_unstable();
        Replacements { new_row_steps, deleted }
    }

    /// Was `old` deleted after the statement wrote its new row number `new_row`?
    fn deleted_after(&self, new_row: usize, old: Tid) -> bool {
        let Some(&written) = self.new_row_steps.get(new_row) else { return false };
        self.deleted.binary_search_by_key(&old, |(tid, _)| *tid).is_ok_and(|i| self.deleted[i].1 > written)
    }
}

/// The arbiter indexes of `ON CONFLICT [target] DO NOTHING`: every unique index without a
/// target; the unique index over exactly the target's columns; the constraint named.
pub(crate) fn conflict_arbiters(catalog: &Catalog, table: &TableMeta, target: Option<&ast::ConflictTarget>) -> Result<Vec<String>> {
    let unique = catalog.indexes_of(&table.name).filter(|i| i.unique);
    match target {
        None => Ok(unique.map(|i| i.name.clone()).collect()),
        Some(ast::ConflictTarget::Columns(names)) => {
            let mut wanted = Vec::with_capacity(names.len());
            for name in names {
                let name = ident_name(name);
                let column = table
                    .column_index(&name)
                    .ok_or_else(|| Error::new(SqlState::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist")))?;
                wanted.push(column);
            }
            wanted.sort_unstable();
            wanted.dedup();
            // A partial or expression index is inferred only from a target naming its
            // expressions and implying its predicate, which weft does not parse.
            let arbiters: Vec<String> = unique
                .filter(|i| i.is_plain())
                .filter(|i| {
                    let mut columns: Vec<usize> = i.columns.iter().map(|c| c.column).collect();
                    columns.sort_unstable();
                    columns.dedup();
                    columns == wanted
                })
                .map(|i| i.name.clone())
                .collect();
            if arbiters.is_empty() {
                return Err(Error::new(
                    SqlState::INVALID_COLUMN_REFERENCE,
                    "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                ));
            }
            Ok(arbiters)
        }
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let name = object_name(name)?;
            match catalog.indexes.get(&name) {
                Some(index) if index.table == table.name && index.constraint.is_some() => Ok(vec![name]),
                _ => Err(Error::new(
                    SqlState::UNDEFINED_OBJECT,
                    format!("constraint \"{name}\" for table \"{}\" does not exist", table.name),
                )),
            }
        }
    }
}

/// ON CONFLICT DO NOTHING: which of `rows` (new rows in the order they were inserted) to
/// skip. As PostgreSQL inserts them one by one, a row is skipped when an arbiter index
/// already holds its keys: from a live row, or from an earlier new row that was kept.
fn conflicting_rows(
    db: &Database,
    xid: Xid,
    snapshot: &Snapshot,
    table: &TableMeta,
    arbiters: &[&(IndexMeta, BTreeDesc, KeyProjector)],
    rows: &[(Tid, Vec<u8>)],
) -> Result<Vec<bool>> {
    let mut skip = vec![false; rows.len()];
    // Per arbiter, each row's group of equal keys among the new rows (none with a NULL key).
    let mut groups: Vec<Vec<Option<usize>>> = Vec::with_capacity(arbiters.len());
    for (index, desc, projector) in arbiters {
        let mut entries: Vec<(Vec<u8>, usize)> = Vec::with_capacity(rows.len());
        for (i, (tid, row)) in rows.iter().enumerate() {
            let mut entry = Vec::with_capacity(32);
            if projector.project(row, TidWord::new(*tid, true), &mut entry)? {
                entries.push((entry, i));
            }
        }
        let tree = BTree::open(&db.pool, index.locator(), desc);
        for (entry, i) in &entries {
            let mut clash = false;
            tree.visit_equal(entry, |existing| {
                if !desc.keys_equal_not_null(existing, entry) {
                    return Ok(true);
                }
                clash = entry_clashes(db, xid, snapshot, table, desc.tid_word(existing), &|_| false)?;
                Ok(!clash)
            })?;
            skip[*i] |= clash;
        }
        entries.sort_by(|a, b| desc.compare(&a.0, &b.0));
        let mut group_of = vec![None; rows.len()];
        let mut group = 0;
        for (k, (entry, i)) in entries.iter().enumerate() {
            if k > 0 && !desc.keys_equal_not_null(&entries[k - 1].0, entry) {
                group += 1;
            }
            if desc.keys_equal_not_null(entry, entry) {
                group_of[*i] = Some(group);
            }
        }
        groups.push(group_of);
    }
    // In insertion order, a row is kept unless an earlier kept row took one of its groups.
    let mut taken: Vec<std::collections::HashSet<usize>> = vec![Default::default(); arbiters.len()];
    for i in 0..rows.len() {
        if skip[i] {
            continue;
        }
        if groups.iter().zip(&taken).any(|(group_of, taken)| group_of[i].is_some_and(|g| taken.contains(&g))) {
            skip[i] = true;
            continue;
        }
        for (group_of, taken) in groups.iter().zip(taken.iter_mut()) {
            if let Some(g) = group_of[i] {
                taken.insert(g);
            }
        }
    }
    Ok(skip)
}

/// Fail if an entry of `sorted` repeats the keys of another new entry or of a live entry
/// already in the tree (committed, or this statement's own).
#[allow(clippy::too_many_arguments)]
fn check_unique(
    db: &Database,
    xid: Xid,
    snapshot: &Snapshot,
    table: &TableMeta,
    index: &IndexMeta,
    desc: &BTreeDesc,
    tree: &BTree,
    sorted: &[Vec<u8>],
    deleted_after: &dyn Fn(Tid, Tid) -> bool,
) -> Result<()> {
    for pair in sorted.windows(2) {
        if desc.keys_equal_not_null(&pair[0], &pair[1]) {
            return Err(unique_violation(desc, table, index, &pair[1], false));
        }
    }
    for entry in sorted {
        let mut clash = false;
        tree.visit_equal(entry, |existing| {
            if !desc.keys_equal_not_null(existing, entry) {
                return Ok(true);
            }
            let new = desc.tid_word(entry).tid();
            clash = entry_clashes(db, xid, snapshot, table, desc.tid_word(existing), &|old| deleted_after(new, old))?;
            Ok(!clash)
        })?;
        if clash {
            return Err(unique_violation(desc, table, index, entry, false));
        }
    }
    Ok(())
}

/// Does an existing index entry with equal keys clash with a new row of the writer `xid`?
/// It does if its row exists for the writer (entries added by the build do, unless rows
/// were deleted since; others are checked in the heap), or if the writer deleted that row
/// after writing the new row (`deleted_after`).
pub(crate) fn entry_clashes(
    db: &Database,
    xid: Xid,
    snapshot: &Snapshot,
    table: &TableMeta,
    word: TidWord,
    deleted_after: &dyn Fn(Tid) -> bool,
) -> Result<bool> {
    if !word.needs_heap_check() && !table.has_dead_rows {
        return Ok(true);
    }
    let header = heap::fetch(&db.pool, table.locator(), word.tid(), |header, _| Ok(header))?;
    Ok(header.is_some_and(|header| {
        header.live_for(snapshot, Some(xid))
            || (header.xmax == xid && header.live_for(snapshot, None) && deleted_after(word.tid()))
    }))
}

/// `SELECT weft_index_check('name' [, heapallindexed => true])`, recognised by the
/// statement dispatcher. amcheck's checks of the structure, then with heapallindexed:
/// every entry points to a live heap row whose keys it holds, and every live row has
/// an entry (counted: entries point to distinct rows, so equal counts mean all).
pub fn try_index_check(session: &Session, query: &ast::Query) -> Option<Result<QueryResult>> {
    let ast::SetExpr::Select(select) = query.body.as_ref() else { return None };
    if !select.from.is_empty() || select.projection.len() != 1 || select.selection.is_some() {
        return None;
    }
    let (ast::SelectItem::UnnamedExpr(ast::Expr::Function(f)) | ast::SelectItem::ExprWithAlias { expr: ast::Expr::Function(f), .. }) =
        &select.projection[0]
    else {
        return None;
    };
    if !f.name.to_string().eq_ignore_ascii_case("weft_index_check") {
        return None;
    }
    Some(run_index_check(session, f))
}

fn run_index_check(session: &Session, f: &ast::Function) -> Result<QueryResult> {
    let usage = || {
        Error::new(SqlState::UNDEFINED_FUNCTION, "function weft_index_check does not exist")
            .with_hint("Call weft_index_check('index name') or weft_index_check('index name', heapallindexed => true).")
    };
    let ast::FunctionArguments::List(list) = &f.args else { return Err(usage()) };
    let mut name = None;
    let mut heapallindexed = false;
    for (i, arg) in list.args.iter().enumerate() {
        let (label, expr) = match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => (None, e),
            ast::FunctionArg::Named { name, arg: ast::FunctionArgExpr::Expr(e), .. } => (Some(ident_name(name)), e),
            ast::FunctionArg::ExprNamed { name: ast::Expr::Identifier(name), arg: ast::FunctionArgExpr::Expr(e), .. } => {
                (Some(ident_name(name)), e)
            }
            _ => return Err(usage()),
        };
        let value = match expr {
            ast::Expr::Value(v) => v.value.clone(),
            _ => return Err(usage()),
        };
        match (label.as_deref(), i, value) {
            (None, 0, ast::Value::SingleQuotedString(s)) => name = Some(s),
            (None | Some("heapallindexed"), 1, ast::Value::Boolean(b)) | (Some("heapallindexed"), _, ast::Value::Boolean(b)) => {
                heapallindexed = b
            }
            _ => return Err(usage()),
        }
    }
    let name = name.ok_or_else(usage)?;
    let catalog = session.catalog();
    let index = catalog.indexes.get(&name).ok_or_else(|| {
        // The argument is a regclass, as amcheck's: an unknown name is not a relation.
        if catalog.tables.contains_key(&name) {
            not_an_index(&name)
        } else {
            Error::new(SqlState::UNDEFINED_TABLE, format!("relation \"{name}\" does not exist"))
        }
    })?;
    let table = catalog.table(&index.table)?;
    let desc = btree_desc(table, index)?;
    let pool = &session.db.pool;
    let summary = btree::check(pool, index.locator(), &desc, &index.name)?;
    if heapallindexed {
        check_heap_all_indexed(session, &catalog, table, index, &desc, summary.entries)?;
    }
    let column = ColumnInfo { name: "weft_index_check".into(), data_type: weft_common::DataType::Text, type_modifier: None };
    Ok(QueryResult::rows(vec![column], vec![vec![Datum::Null]], "SELECT 1"))
}

fn check_heap_all_indexed(session: &Session, catalog: &Catalog, table: &TableMeta, index: &IndexMeta, desc: &BTreeDesc, _entries: u64) -> Result<()> {
    let pool = &session.db.pool;
    let snapshot = catalog.snapshot();
    let projector = KeyProjector::with_map(table, index, desc, crate::index_expr::row_map(table, index)?);
    let heap_rel = table.locator();
    let mut live_entries = 0u64;
    let mut expected = Vec::with_capacity(64);
    btree::for_each_entry(pool, index.locator(), desc, |block, entry| {
        let word = desc.tid_word(entry);
        let tid = word.tid();
        let fetched = heap::fetch(pool, heap_rel, tid, |header, row| {
            expected.clear();
            let indexed = projector.project(row, word, &mut expected)?;
            Ok((header, indexed && expected == entry))
        })?;
        let corrupt = |what: &str| {
            Error::new(SqlState::INDEX_CORRUPTED, format!("index \"{}\" block {block}: entry for ({},{}) {what}", index.name, tid.block, tid.offset))
        };
        match fetched {
            None => return Err(corrupt("points to no heap tuple")),
            Some((_, false)) => return Err(corrupt("does not match the keys (or predicate) of its heap tuple")),
            Some((header, true)) => {
                if header.live_for(&snapshot, None) {
                    live_entries += 1;
                } else if !word.needs_heap_check() && !table.has_dead_rows {
                    return Err(corrupt("points to a heap tuple that is not visible"));
                }
            }
        }
        Ok(())
    })?;
    let mut live_rows = 0u64;
    let nblocks = pool.nblocks(heap_rel, ForkNumber::Main)?;
    let mut scratch = Vec::with_capacity(64);
    heap::scan_blocks_with_tids(pool, heap_rel, 0..nblocks, None, &snapshot, |tid, row| {
        // A partial index holds the rows its predicate accepts.
        scratch.clear();
        if !projector.maps_rows() || projector.project(row, TidWord::new(tid, false), &mut scratch)? {
            live_rows += 1;
        }
        Ok(true)
    })?;
    if live_rows != live_entries {
        return Err(Error::new(
            SqlState::INDEX_CORRUPTED,
            format!("heap of table \"{}\" has {live_rows} live tuples but index \"{}\" has entries for {live_entries}", table.name, index.name),
        ));
    }
    Ok(())
}
