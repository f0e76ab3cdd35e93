//! ALTER TABLE's column actions: `ADD [COLUMN]`, `DROP [COLUMN]`, `ALTER [COLUMN] ...
//! TYPE`, `SET` / `DROP DEFAULT`, `SET` / `DROP NOT NULL` (the design is in the header of
//! `alter_table.rs`).
//!
//! Every action of one statement is applied to a copy of the table's metadata
//! (`ColumnChanges::table`), keeping for each of its columns where the value comes from
//! (`Source`): a column of the table as it was before the statement, possibly converted
//! (ALTER TYPE's `USING` or cast, bound over the old row), or an added column's default.
//! `finish` then rewrites the table once if any action changes the stored rows, moves the
//! indexes and foreign keys to the new column positions (dropping the indexes that used a
//! dropped column, as PostgreSQL does), rebuilds the indexes, and checks NOT NULL and the
//! CHECK constraints against the rows; constraints written on added columns come last.

use std::cell::Cell;
use std::collections::BTreeSet;

use sqlparser::ast;
use weft_access::catalog::{IndexConstraint, TableMeta};
use weft_access::heap::{self, HeapInserter};
use weft_common::parallel::CancelToken;
use weft_common::tuple::RowLayout;
use weft_common::{Datum, Error, Result, SqlState};
use weft_exec::expr::Expr;
use weft_storage::ForkNumber;

use crate::bind::{ident_name, Binder};
use crate::constraints::ConstraintDef;
use crate::database::WriteTxn;
use crate::indexes::KeyConstraint;
use crate::session::Session;

/// Where a column of the altered table takes its values from.
#[derive(Clone)]
enum Source {
    /// Column `n` of the table as it was, unchanged.
    Old(usize),
    /// ALTER TYPE of old column `n`: this expression over the old row.
    Converted(usize, Expr),
    /// An added column: its default, evaluated per row.
    Added,
}

/// The column actions of one ALTER TABLE, applied to a copy of the table's metadata.
pub(crate) struct ColumnChanges {
    /// The table before the statement's column actions.
    original: TableMeta,
    /// The table after the actions applied so far.
    table: TableMeta,
    sources: Vec<Source>,
    /// Some action changes the stored rows.
    rewrite: bool,
    /// Columns that must be checked for NULLs (SET NOT NULL, added NOT NULL columns).
    check_not_null: BTreeSet<String>,
    /// CHECK constraints must be validated again (a column changed type).
    check_constraints: bool,
    /// Key and other constraints written on added columns, added after the rewrite.
    keys: Vec<KeyConstraint>,
    constraints: Vec<ConstraintDef>,
    /// Sequences of added serial columns.
    serials: Vec<String>,
    /// Dropped with CASCADE.
    cascade: bool,
}

fn undefined_column(column: &str, table: &str) -> Error {
    Error::new(SqlState::UNDEFINED_COLUMN, format!("column \"{column}\" of relation \"{table}\" does not exist"))
}

impl ColumnChanges {
    pub(crate) fn new(table: TableMeta) -> Self {
        let sources = (0..table.columns.len()).map(Source::Old).collect();
        ColumnChanges {
            original: table.clone(),
            table,
            sources,
            rewrite: false,
            check_not_null: BTreeSet::new(),
            check_constraints: false,
            keys: Vec::new(),
            constraints: Vec::new(),
            serials: Vec::new(),
            cascade: false,
        }
    }

    pub(crate) fn accepts(&self, operation: &ast::AlterTableOperation) -> bool {
        matches!(
            operation,
            ast::AlterTableOperation::AddColumn { .. } | ast::AlterTableOperation::DropColumn { .. } | ast::AlterTableOperation::AlterColumn { .. }
        )
    }

    fn column(&self, name: &str) -> Result<usize> {
        self.table.column_index(name).ok_or_else(|| undefined_column(name, &self.table.name))
    }

    pub(crate) fn apply(&mut self, _session: &Session, txn: &mut WriteTxn, operation: &ast::AlterTableOperation, notices: &mut Vec<String>) -> Result<()> {
        match operation {
            ast::AlterTableOperation::AddColumn { if_not_exists, column_def, column_position: None, .. } => {
                self.add_column(txn, column_def, *if_not_exists, notices)
            }
            ast::AlterTableOperation::DropColumn { column_names, if_exists, drop_behavior, .. } => {
                self.cascade |= matches!(drop_behavior, Some(ast::DropBehavior::Cascade));
                for name in column_names {
                    let name = ident_name(name);
                    match self.table.column_index(&name) {
                        Some(column) => {
                            self.table.columns.remove(column);
                            self.sources.remove(column);
                            self.rewrite = true;
                        }
                        None if *if_exists => notices.push(format!(
                            "NOTICE:  column \"{name}\" of relation \"{}\" does not exist, skipping",
                            self.table.name
                        )),
                        None => return Err(undefined_column(&name, &self.table.name)),
                    }
                }
                Ok(())
            }
            ast::AlterTableOperation::AlterColumn { column_name, op } => self.alter_column(txn, &ident_name(column_name), op),
            other => Err(Error::not_supported(format!("ALTER TABLE ... {other} is not supported yet"))),
        }
    }

    fn add_column(&mut self, txn: &mut WriteTxn, def: &ast::ColumnDef, if_not_exists: bool, notices: &mut Vec<String>) -> Result<()> {
        let name = ident_name(&def.name);
        if self.table.column_index(&name).is_some() {
            let message = format!("column \"{name}\" of relation \"{}\" already exists", self.table.name);
            if if_not_exists {
                notices.push(format!("NOTICE:  {message}, skipping"));
                return Ok(());
            }
            return Err(Error::new(SqlState::DUPLICATE_COLUMN, message));
        }
        if self.table.columns.len() >= 1600 {
            return Err(Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "tables can have at most 1600 columns"));
        }
        let (mut columns, keys, constraints, serials) = crate::statements::column_definitions(std::slice::from_ref(def))?;
        let table_name = self.table.name.clone();
        crate::statements::add_serial_sequences(txn, &table_name, &mut columns, &serials);
        if !serials.is_empty() {
            // nextval() of the new sequence while the rows are written.
            self.serials.extend(txn.catalog.sequences.iter().filter(|(_, s)| s.owned_by == Some((table_name.clone(), name.clone()))).map(|(n, _)| n.clone()));
        }
        let column = columns.pop().ok_or_else(|| Error::internal("no column defined"))?;
        if column.not_null {
            self.check_not_null.insert(column.name.clone());
        }
        self.table.columns.push(column);
        self.sources.push(Source::Added);
        self.keys.extend(keys);
        self.constraints.extend(constraints);
        self.rewrite = true;
        Ok(())
    }

    fn alter_column(&mut self, txn: &mut WriteTxn, name: &str, op: &ast::AlterColumnOperation) -> Result<()> {
        let column = self.column(name)?;
        match op {
            ast::AlterColumnOperation::SetDefault { value } => {
                let meta = &self.table.columns[column];
                self.table.columns[column].default =
                    Some(crate::statements::checked_default(value, &meta.name, meta.data_type, meta.type_modifier)?);
            }
            ast::AlterColumnOperation::DropDefault => self.table.columns[column].default = None,
            ast::AlterColumnOperation::SetNotNull => {
                if !self.table.columns[column].not_null {
                    self.table.columns[column].not_null = true;
                    self.check_not_null.insert(name.to_string());
                }
            }
            ast::AlterColumnOperation::DropNotNull => {
                if let Source::Old(old) = self.sources[column] {
                    let in_primary_key = txn
                        .catalog
                        .indexes_of(&self.original.name)
                        .any(|i| i.constraint == Some(IndexConstraint::PrimaryKey) && i.columns.iter().any(|c| c.column == old));
                    if in_primary_key {
                        return Err(Error::new(SqlState("42P16"), format!("column \"{name}\" is in a primary key")));
                    }
                }
                self.table.columns[column].not_null = false;
                self.check_not_null.remove(name);
            }
            ast::AlterColumnOperation::SetDataType { data_type, using, .. } => self.set_type(txn, column, data_type, using.as_ref())?,
            other => return Err(Error::not_supported(format!("ALTER COLUMN ... {other} is not supported yet"))),
        }
        Ok(())
    }

    /// `ALTER [COLUMN] c [SET DATA] TYPE t [USING e]`: the column's values are converted
    /// by `e` (by default the column itself) with an assignment cast, as PostgreSQL does.
    fn set_type(&mut self, txn: &WriteTxn, column: usize, data_type: &ast::DataType, using: Option<&ast::Expr>) -> Result<()> {
        let name = self.table.columns[column].name.clone();
        let old = match self.sources[column] {
            Source::Old(old) => old,
            _ => return Err(Error::not_supported(format!("changing the type of column \"{name}\" twice, or of a column added by the same statement, is not supported yet"))),
        };
        let in_foreign_key = self.original.foreign_keys.iter().any(|fk| fk.columns.contains(&old))
            || txn.catalog.tables.values().any(|t| t.foreign_keys.iter().any(|fk| fk.ref_table == self.original.name && fk.ref_columns.contains(&old)));
        if in_foreign_key {
            return Err(Error::not_supported(format!("changing the type of column \"{name}\", used by a foreign key, is not supported yet")));
        }
        let (to, modifier) = crate::bind::sql_type_modified(data_type)?;
        let scope = crate::modify::table_scope(&self.original, &self.original.name);
        let source = match using {
            Some(expr) => {
                if crate::bind::contains_subquery(expr) {
                    return Err(Error::not_supported("cannot use subquery in transform expression"));
                }
                if crate::bind::contains_aggregate(expr) {
                    return Err(Error::new(SqlState::GROUPING_ERROR, "aggregate functions are not allowed in transform expressions"));
                }
                Binder::new(&scope).bind(expr)?
            }
            None => Binder::new(&scope).bind(&ast::Expr::Identifier(ast::Ident::new(self.original.columns[old].name.clone())))?,
        };
        // The message names the type without its modifier, the hint with it.
        let type_name = modifier.map_or_else(|| to.name(), |m| m.base_type_name());
        let full_name = modifier.map_or_else(|| to.name().to_string(), |m| m.format_type());
        let converted = crate::statements::assignment_coerce(source, to, modifier, &name).map_err(|e| match e.sqlstate {
            SqlState::DATATYPE_MISMATCH if using.is_some() => Error::new(
                SqlState::DATATYPE_MISMATCH,
                format!("result of USING clause for column \"{name}\" cannot be cast automatically to type {type_name}"),
            )
            .with_hint("You might need to add an explicit cast."),
            SqlState::DATATYPE_MISMATCH => Error::new(
                SqlState::DATATYPE_MISMATCH,
                format!("column \"{name}\" cannot be cast automatically to type {type_name}"),
            )
            .with_hint(format!("You might need to specify \"USING {}::{full_name}\".", crate::deparse::quote_identifier(&name))),
            _ => e,
        })?;
        let meta = &mut self.table.columns[column];
        meta.data_type = to;
        meta.type_modifier = modifier;
        if let Some(default) = meta.default.clone() {
            let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
                .try_with_sql(&default)
                .and_then(|mut parser| parser.parse_expr())
                .map_err(|e| Error::internal(format!("stored default does not parse: {e}")))?;
            crate::statements::checked_default(&parsed, &name, to, modifier).map_err(|e| match e.sqlstate {
                SqlState::DATATYPE_MISMATCH => Error::new(
                    SqlState::DATATYPE_MISMATCH,
                    format!("default for column \"{name}\" cannot be cast automatically to type {type_name}"),
                ),
                _ => e,
            })?;
        }
        self.sources[column] = Source::Converted(old, converted);
        self.rewrite = true;
        self.check_constraints = true;
        Ok(())
    }

    /// Apply the actions: rewrite, move and rebuild the indexes, check the rows, add the
    /// constraints of added columns. Leaves `self` with nothing to do.
    pub(crate) fn finish(&mut self, session: &Session, txn: &mut WriteTxn, cancel: &CancelToken, notices: &mut Vec<String>) -> Result<()> {
        let name = self.original.name.clone();
        if self.table == self.original && self.keys.is_empty() && self.constraints.is_empty() && !self.rewrite {
            return Ok(());
        }
        if self.table.columns.is_empty() {
            return Err(Error::not_supported("a table without columns is not supported yet"));
        }
        // Old column → new position (none: dropped).
        let mut position: Vec<Option<usize>> = vec![None; self.original.columns.len()];
        for (new, source) in self.sources.iter().enumerate() {
            if let Source::Old(old) | Source::Converted(old, _) = source {
                position[*old] = Some(new);
            }
        }
        self.drop_dependents(txn, &position, notices)?;
        let old_ncols = self.original.columns.len();
        let new_ncols = self.table.columns.len();
        let remap = |c: usize| if c >= old_ncols { Some(c - old_ncols + new_ncols) } else { position[c] };
        // Indexes and foreign keys follow their columns.
        for index in txn.catalog.indexes.values_mut().filter(|i| i.table == name) {
            for column in &mut index.columns {
                column.column = remap(column.column).ok_or_else(|| Error::internal("index column dropped"))?;
            }
            for column in &mut index.include {
                *column = remap(*column).ok_or_else(|| Error::internal("index column dropped"))?;
            }
        }
        for fk in &mut self.table.foreign_keys {
            for column in &mut fk.columns {
                *column = position[*column].ok_or_else(|| Error::internal("foreign key column dropped"))?;
            }
            if fk.ref_table == name {
                for column in &mut fk.ref_columns {
                    *column = position[*column].ok_or_else(|| Error::internal("referenced column dropped"))?;
                }
            }
        }
        for table in txn.catalog.tables.values_mut().filter(|t| t.name != name) {
            for fk in table.foreign_keys.iter_mut().filter(|fk| fk.ref_table == name) {
                for column in &mut fk.ref_columns {
                    *column = position[*column].ok_or_else(|| Error::internal("referenced column dropped"))?;
                }
            }
        }
        let rewrite = self.rewrite;
        if rewrite {
            self.rewrite_rows(session, txn, cancel)?;
        }
        *txn.catalog.table_mut(&name)? = self.table.clone();
        let table = self.table.clone();
        for index in txn.catalog.indexes.values_mut().filter(|i| i.table == name) {
            for expression in &mut index.expressions {
                let bound = crate::index_expr::rebind(&table, &index.name, &expression.text, crate::index_expr::IndexClause::Expression)?;
                expression.data_type = bound.data_type();
            }
        }
        crate::alter_table::refresh_index_texts(txn, &table)?;
        if rewrite {
            crate::indexes::rebuild_indexes_of(session, txn, &name, "ALTER TABLE", cancel, notices)?;
        }
        self.check_rows(session, txn, cancel)?;
        let keys = std::mem::take(&mut self.keys);
        crate::indexes::add_key_constraints(session, txn, &name, &keys, cancel, notices)?;
        crate::constraints::add_constraints(session, txn, &name, std::mem::take(&mut self.constraints), cancel)?;
        *self = ColumnChanges::new(txn.catalog.table(&name)?.clone());
        Ok(())
    }

    /// What goes with dropped columns: the indexes that use one (refused, without CASCADE,
    /// when another table's foreign key needs the index), this table's CHECKs and foreign
    /// keys over one, and sequences owned by one.
    fn drop_dependents(&mut self, txn: &mut WriteTxn, position: &[Option<usize>], notices: &mut Vec<String>) -> Result<()> {
        let name = self.original.name.clone();
        let dropped: Vec<usize> = (0..position.len()).filter(|&c| position[c].is_none()).collect();
        if dropped.is_empty() {
            return Ok(());
        }
        let mut indexes = BTreeSet::new();
        for &column in &dropped {
            indexes.extend(crate::alter_table::indexes_using(txn, &self.original, column)?);
        }
        for index in &indexes {
            let dependents: Vec<(String, String)> =
                crate::constraints::using_index(&txn.catalog, index).into_iter().map(|(t, fk)| (t.name.clone(), fk.name.clone())).collect();
            for (child, fk) in dependents.iter().filter(|(child, _)| *child != name) {
                if !self.cascade {
                    let column = &self.original.columns[dropped[0]].name;
                    return Err(Error::new(
                        SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
                        format!("cannot drop column {column} of table {name} because other objects depend on it"),
                    )
                    .with_detail(format!("constraint {fk} on table {child} depends on column {column} of table {name}"))
                    .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
                }
                crate::constraints::drop_constraint(txn, child, fk)?;
                notices.push(format!("NOTICE:  drop cascades to constraint {fk} on table {child}"));
            }
        }
        for index in &indexes {
            if let Some(meta) = txn.catalog.indexes.remove(index) {
                txn.drop_relation(meta.locator());
            }
        }
        let original = self.original.clone();
        self.table.checks.retain(|check| {
            let Ok(bound) = crate::constraints::bound_check(&original, check) else { return true };
            let mut used = BTreeSet::new();
            crate::exprutil::columns_used(&bound, &mut used);
            !dropped.iter().any(|c| used.contains(c))
        });
        self.table.foreign_keys.retain(|fk| {
            !fk.columns.iter().any(|c| dropped.contains(c)) && !(fk.ref_table == name && fk.ref_columns.iter().any(|c| dropped.contains(c)))
        });
        let dropped_names: Vec<&String> = dropped.iter().map(|&c| &original.columns[c].name).collect();
        txn.catalog.sequences.retain(|_, s| !s.owned_by.as_ref().is_some_and(|(t, c)| *t == name && dropped_names.contains(&c)));
        Ok(())
    }

    /// Write the table's rows, as the statement sees them, into a new relation in their
    /// new form, keeping each row's xmin (as VACUUM FULL does): the rows are as visible
    /// as before to every later snapshot, and the old relation stays for readers that
    /// started earlier until the commit retires it.
    fn rewrite_rows(&mut self, session: &Session, txn: &mut WriteTxn, cancel: &CancelToken) -> Result<()> {
        let db = &session.db;
        let old_rel = self.original.locator();
        let new_rel = txn.create_relation(db)?;
        let old_layout = RowLayout::new(&self.original.column_types());
        let new_layout = RowLayout::new(&self.table.column_types());
        let defaults: Vec<Option<Expr>> = crate::statements::with_plan_context(session, &txn.catalog, |ctx| {
            self.table
                .columns
                .iter()
                .zip(&self.sources)
                .map(|(column, source)| match source {
                    Source::Added => crate::statements::column_default(ctx, column).map(Some),
                    _ => Ok(None),
                })
                .collect::<Result<Vec<_>>>()
        })?;
        if !self.serials.is_empty() {
            db.sequences.add_created(&txn.catalog.sequences);
        }
        let snapshot = txn.catalog.snapshot();
        let blocks = db.pool.nblocks(old_rel, ForkNumber::Main)?;
        let mut inserter = HeapInserter::new(&db.pool, new_rel, 0);
        let xmin: Cell<weft_access::Xid> = Cell::new(0);
        let mut old_row: Vec<Datum> = Vec::with_capacity(old_layout.len());
        let mut new_row: Vec<Datum> = Vec::with_capacity(new_layout.len());
        let mut rows = 0u64;
        heap::scan_rows_where(
            &db.pool,
            old_rel,
            0..blocks,
            |header| {
                xmin.set(header.xmin);
                header.live_for(&snapshot, None)
            },
            |_, tuple| {
                rows += 1;
                if rows % 4096 == 0 {
                    cancel.check()?;
                }
                old_row.clear();
                old_layout.decode_into(tuple, &mut old_row)?;
                new_row.clear();
                for (source, default) in self.sources.iter().zip(&defaults) {
                    new_row.push(match source {
                        Source::Old(c) => old_row[*c].clone(),
                        Source::Converted(_, expr) => expr.eval(&old_row, &session.eval)?,
                        Source::Added => default.as_ref().expect("an added column has a default").eval(&[], &session.eval)?,
                    });
                }
                let scratch = inserter.scratch();
                scratch[..4].copy_from_slice(&(xmin.get() as u32).to_le_bytes());
                new_layout.encode(&new_row, scratch)?;
                inserter.insert_scratch()
            },
        )?;
        inserter.finish()?;
        txn.touch(new_rel);
        txn.drop_relation(old_rel);
        self.table.rel_number = new_rel.rel_number;
        self.table.row_count = rows;
        self.table.has_dead_rows = false;
        // Statistics name columns by position.
        txn.catalog.statistics.remove(&self.original.oid);
        Ok(())
    }

    /// NOT NULL over the columns that need it, then (after a type change) every CHECK.
    fn check_rows(&self, session: &Session, txn: &WriteTxn, cancel: &CancelToken) -> Result<()> {
        let table = txn.catalog.table(&self.table.name)?;
        let columns: Vec<usize> = table.columns.iter().enumerate().filter(|(_, c)| c.not_null && self.check_not_null.contains(&c.name)).map(|(i, _)| i).collect();
        let checks: Vec<(String, Expr)> = if self.check_constraints {
            table.checks.iter().map(|c| Ok((c.name.clone(), crate::constraints::bound_check(table, c)?))).collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        if columns.is_empty() && checks.is_empty() {
            return Ok(());
        }
        crate::constraints::for_each_live_row(session, txn, table, cancel, |_, row| {
            if let Some(&c) = columns.iter().find(|&&c| row[c].is_null()) {
                return Err(Error::new(
                    SqlState::NOT_NULL_VIOLATION,
                    format!("column \"{}\" of relation \"{}\" contains null values", table.columns[c].name, table.name),
                ));
            }
            for (name, check) in &checks {
                if matches!(check.eval(row, &session.eval)?, Datum::Bool(false)) {
                    return Err(Error::new(
                        SqlState::CHECK_VIOLATION,
                        format!("check constraint \"{name}\" of relation \"{}\" is violated by some row", table.name),
                    ));
                }
            }
            Ok(())
        })
    }
}
