//! CHECK and FOREIGN KEY constraints: their definition (`CREATE TABLE`, `ALTER TABLE ...
//! ADD | DROP CONSTRAINT`), their enforcement, and what they forbid of DROP and TRUNCATE.
//!
//! Both are enforced after a statement wrote its rows and before it commits, so a
//! violation aborts the whole statement and nothing of it becomes visible:
//! - CHECK: the rows the statement wrote (its xid inserted them and they are still live
//!   for it) are read back and each constraint, bound again from its text, must not be
//!   false (NULL passes), in name order as PostgreSQL tests them. This runs before the
//!   index pass, so a row breaking a CHECK and a unique key reports the CHECK, as in
//!   PostgreSQL, which checks each row before inserting it.
//! - FOREIGN KEY, referencing side, after the index pass (PostgreSQL checks at the end of
//!   the statement): each new row whose key columns are all non-NULL (MATCH SIMPLE) must
//!   find a row live for the writer through the referenced table's unique index.
//! - Referenced side, after a DELETE or UPDATE: the keys of the rows it removed — less
//!   those a live row still holds, for NO ACTION — must not be held by a referencing row.
//!   `ON DELETE CASCADE` deletes such rows, `ON UPDATE CASCADE` gives them the new key,
//!   `SET NULL` / `SET DEFAULT` write new versions of them; all go through the same checks,
//!   so chains of references cascade.
//!
//! Not supported (0A000 when declared): MATCH FULL / PARTIAL, DEFERRABLE, NOT VALID.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sqlparser::ast;
use weft_access::btree::{BTree, TidWord};
use weft_access::index_build::btree_desc;
use weft_access::{heap, CheckMeta, ForeignKeyMeta, ReferentialAction, Snapshot, TableMeta, Tid};
use weft_common::tuple::RowLayout;
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_exec::expr::{compare_datums, Expr};
use weft_common::parallel::CancelToken;
use weft_storage::{BlockNumber, ForkNumber};

use crate::bind::{contains_aggregate, ident_name, object_name, Binder};
use crate::database::WriteTxn;
use crate::indexes::Replacements;
use crate::session::Session;
use crate::statements::with_plan_context;

/// A CHECK or FOREIGN KEY as declared, before it is resolved against the catalog.
pub(crate) enum ConstraintDef {
    Check {
        name: Option<String>,
        expr: ast::Expr,
    },
    ForeignKey {
        name: Option<String>,
        columns: Vec<String>,
        ref_table: String,
        /// Empty: the referenced table's primary key.
        ref_columns: Vec<String>,
        on_delete: ReferentialAction,
        on_update: ReferentialAction,
    },
}

impl ConstraintDef {
    /// A column's `CHECK (...)` or `REFERENCES t [(c)]`; `None` for other options.
    pub(crate) fn from_column_option(option: &ast::ColumnOptionDef, column: &str) -> Result<Option<ConstraintDef>> {
        let option_name = option.name.as_ref().map(ident_name);
        match &option.option {
            ast::ColumnOption::Check(check) => Ok(Some(ConstraintDef::check(check, option_name)?)),
            ast::ColumnOption::ForeignKey(fk) => {
                let mut def = ConstraintDef::foreign_key(fk, option_name)?;
                if let ConstraintDef::ForeignKey { columns, .. } = &mut def {
                    *columns = vec![column.to_string()];
                }
                Ok(Some(def))
            }
            _ => Ok(None),
        }
    }

    /// A table constraint that is a CHECK or a FOREIGN KEY; `None` for other kinds.
    pub(crate) fn from_table_constraint(constraint: &ast::TableConstraint) -> Result<Option<ConstraintDef>> {
        match constraint {
            ast::TableConstraint::Check(check) => Ok(Some(ConstraintDef::check(check, None)?)),
            ast::TableConstraint::ForeignKey(fk) => Ok(Some(ConstraintDef::foreign_key(fk, None)?)),
            _ => Ok(None),
        }
    }

    fn check(check: &ast::CheckConstraint, option_name: Option<String>) -> Result<ConstraintDef> {
        if check.no_inherit || check.enforced == Some(false) {
            return Err(Error::not_supported("CHECK ... NO INHERIT and NOT ENFORCED are not supported"));
        }
        let name = check.name.as_ref().map(ident_name).or(option_name);
        Ok(ConstraintDef::Check { name, expr: (*check.expr).clone() })
    }

    fn foreign_key(fk: &ast::ForeignKeyConstraint, option_name: Option<String>) -> Result<ConstraintDef> {
        if fk.match_kind.is_some_and(|m| !matches!(m, ast::ConstraintReferenceMatchKind::Simple)) {
            return Err(Error::not_supported("MATCH FULL and MATCH PARTIAL foreign keys are not supported"));
        }
        if fk.characteristics.as_ref().is_some_and(|c| c.deferrable == Some(true) || c.initially.is_some()) {
            return Err(Error::not_supported("DEFERRABLE foreign keys are not supported"));
        }
        let on_update = action(fk.on_update.as_ref());
        Ok(ConstraintDef::ForeignKey {
            name: fk.name.as_ref().map(ident_name).or(option_name),
            columns: fk.columns.iter().map(ident_name).collect(),
            ref_table: object_name(&fk.foreign_table)?,
            ref_columns: fk.referred_columns.iter().map(ident_name).collect(),
            on_delete: action(fk.on_delete.as_ref()),
            on_update,
        })
    }
}

fn action(action: Option<&ast::ReferentialAction>) -> ReferentialAction {
    match action {
        None | Some(ast::ReferentialAction::NoAction) => ReferentialAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => ReferentialAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => ReferentialAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => ReferentialAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => ReferentialAction::SetDefault,
    }
}

/// Add `defs` to the table `table_name` (in the catalog, with its keys): CHECKs first, then
/// FOREIGN KEYs, each validated against the rows already in the table.
pub(crate) fn add_constraints(session: &Session, txn: &mut WriteTxn, table_name: &str, defs: Vec<ConstraintDef>, cancel: &CancelToken) -> Result<()> {
    let (checks, keys): (Vec<_>, Vec<_>) = defs.into_iter().partition(|d| matches!(d, ConstraintDef::Check { .. }));
    let checks_before = txn.catalog.table(table_name)?.checks.len();
    for def in checks.into_iter().chain(keys) {
        let table = txn.catalog.table(table_name)?.clone();
        match def {
            ConstraintDef::Check { name, expr } => {
                let bound = bind_check(&table, &expr)?;
                if let Some(twice) = name.as_ref().filter(|n| table.checks[checks_before..].iter().any(|c| &c.name == *n)) {
                    return Err(Error::new(SqlState::DUPLICATE_OBJECT, format!("check constraint \"{twice}\" already exists")));
                }
                let name = match name {
                    Some(name) => unused_name(txn, &table, name, false)?,
                    None => {
                        // Named after the one column it reads, wherever it was written, as
                        // in PostgreSQL (`c int CHECK (c > a)` is `t_check`).
                        let mut used = BTreeSet::new();
                        crate::exprutil::columns_used(&bound, &mut used);
                        let column = (used.len() == 1).then(|| table.columns[*used.first().expect("one")].name.clone());
                        let base = match column {
                            Some(column) => format!("{table_name}_{column}_check"),
                            None => format!("{table_name}_check"),
                        };
                        unused_name(txn, &table, base, true)?
                    }
                };
                let check = CheckMeta { name, expr: expr.to_string() };
                validate_check(session, txn, &table, &check, &bound, cancel)?;
                txn.catalog.table_mut(table_name)?.checks.push(check);
            }
            ConstraintDef::ForeignKey { name, columns, ref_table, ref_columns, on_delete, on_update } => {
                let fk = resolve_foreign_key(txn, &table, name, &columns, &ref_table, &ref_columns, on_delete, on_update)?;
                let keys = referencing_keys(session, txn, &table, &fk, 0, false, cancel)?;
                let mut refs = References::new(session, txn);
                keys.iter().try_for_each(|values| refs.require_referenced(&table, &fk, values))?;
                txn.catalog.table_mut(table_name)?.foreign_keys.push(fk);
            }
        }
    }
    Ok(())
}

/// `ALTER TABLE ... DROP CONSTRAINT name` of a CHECK or FOREIGN KEY; false if the table
/// has no such constraint.
pub(crate) fn drop_constraint(txn: &mut WriteTxn, table_name: &str, name: &str) -> Result<bool> {
    let table = txn.catalog.table_mut(table_name)?;
    let before = table.checks.len() + table.foreign_keys.len();
    table.checks.retain(|c| c.name != name);
    table.foreign_keys.retain(|f| f.name != name);
    Ok(table.checks.len() + table.foreign_keys.len() != before)
}

/// A constraint name of `table` that is free: `name` itself when `numbered` is false (else
/// 42710), or `name`, `name1`, `name2`, ... as PostgreSQL numbers generated names.
fn unused_name(txn: &WriteTxn, table: &TableMeta, name: String, numbered: bool) -> Result<String> {
    let taken = |candidate: &str| {
        table.checks.iter().any(|c| c.name == candidate)
            || table.foreign_keys.iter().any(|f| f.name == candidate)
            || txn.catalog.indexes_of(&table.name).any(|i| i.constraint.is_some() && i.name == candidate)
    };
    if !taken(&name) {
        return Ok(name);
    }
    if !numbered {
        return Err(Error::new(
            SqlState::DUPLICATE_OBJECT,
            format!("constraint \"{name}\" for relation \"{}\" already exists", table.name),
        ));
    }
    Ok((1..).map(|n| format!("{name}{n}")).find(|c| !taken(c)).expect("some number is free"))
}

/// A CHECK expression bound over the table's columns, with PostgreSQL's refusals.
fn bind_check(table: &TableMeta, expr: &ast::Expr) -> Result<Expr> {
    if crate::bind::contains_subquery(expr) {
        return Err(Error::not_supported("cannot use subquery in check constraint"));
    }
    if contains_aggregate(expr) {
        return Err(Error::new(SqlState::GROUPING_ERROR, "aggregate functions are not allowed in check constraints"));
    }
    if crate::window::contains_window(expr) {
        return Err(Error::new(SqlState("42P20"), "window functions are not allowed in check constraints"));
    }
    let scope = crate::modify::table_scope(table, &table.name);
    crate::planner::require_bool(Binder::new(&scope).bind(expr)?, "CHECK")
}

/// A stored CHECK bound again (its text was checked when it was added).
pub(crate) fn bound_check(table: &TableMeta, check: &CheckMeta) -> Result<Expr> {
    let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(&check.expr)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|e| Error::internal(format!("stored check constraint \"{}\" does not parse: {e}", check.name)))?;
    bind_check(table, &parsed)
}

/// `ALTER TABLE ... ADD CHECK`: the rows already there must pass.
fn validate_check(session: &Session, txn: &WriteTxn, table: &TableMeta, check: &CheckMeta, bound: &Expr, cancel: &CancelToken) -> Result<()> {
    for_each_live_row(session, txn, table, cancel, |_, row| {
        if matches!(bound.eval(row, &session.eval)?, Datum::Bool(false)) {
            return Err(Error::new(
                SqlState::CHECK_VIOLATION,
                format!("check constraint \"{}\" of relation \"{}\" is violated by some row", check.name, table.name),
            ));
        }
        Ok(())
    })
}

/// The CHECK constraints of `table` over the rows the statement wrote from `first_block` on.
pub(crate) fn check_new_rows(session: &Session, txn: &WriteTxn, table: &TableMeta, first_block: BlockNumber, cancel: &CancelToken) -> Result<()> {
    if table.checks.is_empty() {
        return Ok(());
    }
    let mut checks: Vec<&CheckMeta> = table.checks.iter().collect();
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    let bound: Vec<(&CheckMeta, Expr)> = checks.into_iter().map(|c| Ok((c, bound_check(table, c)?))).collect::<Result<_>>()?;
    for_each_new_row(session, txn, table, first_block, cancel, |_, row| {
        for (check, expr) in &bound {
            if matches!(expr.eval(row, &session.eval)?, Datum::Bool(false)) {
                return Err(Error::new(
                    SqlState::CHECK_VIOLATION,
                    format!("new row for relation \"{}\" violates check constraint \"{}\"", table.name, check.name),
                )
                .with_detail(format!("Failing row contains ({}).", weft_exec::failing_row(row))));
            }
        }
        Ok(())
    })
}

/// The FOREIGN KEYs of `table` over the rows the statement wrote from `first_block` on.
pub(crate) fn check_new_references(session: &Session, txn: &WriteTxn, table: &TableMeta, first_block: BlockNumber, cancel: &CancelToken) -> Result<()> {
    if table.foreign_keys.is_empty() {
        return Ok(());
    }
    for fk in &table.foreign_keys {
        let keys = referencing_keys(session, txn, table, fk, first_block, true, cancel)?;
        let mut refs = References::new(session, txn);
        keys.iter().try_for_each(|values| refs.require_referenced(table, fk, values))?;
    }
    Ok(())
}

/// The values of `fk`'s key columns in the rows of `table` that have no NULL there, in
/// physical order: the rows the statement wrote from `first_block` on (`only_new`), or all
/// live ones. Collected before any lookup, so that no page of `table` is locked while
/// the referenced table (perhaps `table` itself) is read.
fn referencing_keys(session: &Session, txn: &WriteTxn, table: &TableMeta, fk: &ForeignKeyMeta, first_block: BlockNumber, only_new: bool, cancel: &CancelToken) -> Result<Vec<Vec<Datum>>> {
    let mut keys = Vec::new();
    let mut collect = |_, row: &[Datum]| {
        if !key_values(fk, row).any(Datum::is_null) {
            keys.push(key_values(fk, row).cloned().collect());
        }
        Ok(())
    };
    if only_new {
        for_each_new_row(session, txn, table, first_block, cancel, &mut collect)?;
    } else {
        for_each_live_row(session, txn, table, cancel, &mut collect)?;
    }
    Ok(keys)
}

/// Why referenced rows went away: the referencing side's `ON DELETE` or `ON UPDATE` applies.
#[derive(Clone, Copy)]
pub(crate) enum Removal<'a> {
    Delete,
    /// The new versions, in the order of the removed rows.
    Update(&'a [Vec<Datum>]),
}

/// Is `table` referenced by a foreign key (so its removed rows must be checked)?
pub(crate) fn is_referenced(catalog: &weft_access::Catalog, table: &str) -> bool {
    !referenced_by(catalog, table).is_empty()
}

/// A removed key of a foreign key, and for ON UPDATE CASCADE the key that replaced it.
struct LostKey {
    old: Vec<Datum>,
    new: Option<Vec<Datum>>,
}

/// After a DELETE or UPDATE of `table` removed the rows at `removed` (their old versions,
/// now deleted by the writer): the foreign keys referencing `table` must not be left
/// dangling; their ON DELETE / ON UPDATE actions run. The actions of all foreign keys of
/// one referencing table are gathered before any runs, so a row that references two
/// removed keys gets one new version with both set, as PostgreSQL's actions leave it.
pub(crate) fn check_removed_rows(session: &Session, txn: &mut WriteTxn, table: &TableMeta, removed: &[Tid], kind: Removal, cancel: &CancelToken) -> Result<()> {
    let mut referencing: BTreeMap<String, Vec<ForeignKeyMeta>> = BTreeMap::new();
    for (child, fk) in referenced_by(&txn.catalog, &table.name) {
        referencing.entry(child.name.clone()).or_default().push(fk.clone());
    }
    if referencing.is_empty() || removed.is_empty() {
        return Ok(());
    }
    let layout = RowLayout::new(&table.column_types());
    // (old version, new version) of each removed row.
    let mut pairs: Vec<(Vec<Datum>, Option<&Vec<Datum>>)> = Vec::with_capacity(removed.len());
    for (i, &tid) in removed.iter().enumerate() {
        if let Some(row) = heap::fetch(&session.db.pool, table.locator(), tid, |_, row| layout.decode(row))? {
            let new = match kind {
                Removal::Delete => None,
                Removal::Update(new_rows) => new_rows.get(i),
            };
            pairs.push((row, new));
        }
    }
    for (child_name, fks) in referencing {
        // Per foreign key: its rule here and the keys it lost, sorted by the old key.
        let mut lost: Vec<(ForeignKeyMeta, ReferentialAction, Vec<LostKey>, Vec<DataType>)> = Vec::new();
        for fk in fks {
            let rule = if matches!(kind, Removal::Delete) { fk.on_delete } else { fk.on_update };
            let keys = removed_keys(session, txn, table, &fk, rule, &pairs)?;
            if !keys.is_empty() {
                let types = fk.ref_columns.iter().map(|&c| table.columns[c].data_type).collect();
                lost.push((fk, rule, keys, types));
            }
        }
        if lost.is_empty() {
            continue;
        }
        let child = txn.catalog.table(&child_name)?.clone();
        let mut deleted: BTreeSet<Tid> = BTreeSet::new();
        let mut changed: BTreeMap<Tid, Vec<Datum>> = BTreeMap::new();
        for_each_live_row(session, txn, &child, cancel, |tid, row| {
            for (fk, rule, keys, types) in &lost {
                let Some(key) = referenced_key(key_values(fk, row), types) else { continue };
                let Ok(at) = keys.binary_search_by(|k| compare_keys(&k.old, &key)) else { continue };
                let still_referenced = || {
                    Error::new(
                        SqlState::FOREIGN_KEY_VIOLATION,
                        format!("update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"", table.name, fk.name, child.name),
                    )
                    .with_detail(format!("Key {} is still referenced from table \"{}\".", key_text(table, &fk.ref_columns, &key), child.name))
                };
                match (rule, &keys[at].new) {
                    (ReferentialAction::NoAction | ReferentialAction::Restrict, _) => return Err(still_referenced()),
                    (ReferentialAction::Cascade, None) => {
                        deleted.insert(tid);
                    }
                    (ReferentialAction::Cascade, Some(new_key)) => {
                        let new_row = changed.entry(tid).or_insert_with(|| row.to_vec());
                        for (&c, value) in fk.columns.iter().zip(new_key) {
                            new_row[c] = in_column_type(value, child.columns[c].data_type)?;
                        }
                    }
                    (ReferentialAction::SetNull | ReferentialAction::SetDefault, _) => {
                        let new_row = changed.entry(tid).or_insert_with(|| row.to_vec());
                        for &c in &fk.columns {
                            new_row[c] = if *rule == ReferentialAction::SetNull { Datum::Null } else { column_default_value(session, txn, &child, c)? };
                        }
                        // A default that is the removed key itself still references it
                        // (PostgreSQL then fails as NO ACTION does).
                        let default_key = referenced_key(key_values(fk, new_row), types);
                        if default_key.is_some_and(|d| keys.binary_search_by(|k| compare_keys(&k.old, &d)).is_ok()) {
                            return Err(still_referenced());
                        }
                    }
                }
            }
            Ok(())
        })?;
        changed.retain(|tid, _| !deleted.contains(tid));
        if deleted.is_empty() && changed.is_empty() {
            continue;
        }
        let all: Vec<Tid> = deleted.iter().chain(changed.keys()).copied().collect::<BTreeSet<_>>().into_iter().collect();
        heap::set_xmax(&session.db.pool, child.locator(), &all, txn.xid)?;
        txn.touch(child.locator());
        let mut updated = child.clone();
        updated.has_dead_rows = true;
        updated.row_count = updated.row_count.saturating_sub(deleted.len() as u64);
        *txn.catalog.table_mut(&child.name)? = updated.clone();
        let deleted: Vec<Tid> = deleted.into_iter().collect();
        check_removed_rows(session, txn, &updated, &deleted, Removal::Delete, cancel)?;
        if !changed.is_empty() {
            let (tids, rows): (Vec<Tid>, Vec<Vec<Datum>>) = changed.into_iter().unzip();
            let updated = txn.catalog.table(&child.name)?.clone();
            crate::modify::write_rows(session, txn, &updated, rows.clone(), &Replacements::in_order(&tids), cancel)?;
            check_removed_rows(session, txn, &updated, &tids, Removal::Update(&rows), cancel)?;
        }
    }
    Ok(())
}

/// The keys of `fk` that the removed rows (`pairs`: old and, for an UPDATE, new version)
/// of `table` gave up, sorted by the old key and distinct, none with a NULL. An UPDATE
/// gives up only keys it changed (PostgreSQL's triggers fire on a changed key); under NO
/// ACTION a key some row live for the writer still holds is not given up either.
fn removed_keys(
    session: &Session,
    txn: &WriteTxn,
    table: &TableMeta,
    fk: &ForeignKeyMeta,
    rule: ReferentialAction,
    pairs: &[(Vec<Datum>, Option<&Vec<Datum>>)],
) -> Result<Vec<LostKey>> {
    let key_of = |row: &[Datum]| fk.ref_columns.iter().map(|&c| row[c].clone()).collect::<Vec<_>>();
    let mut keys: Vec<LostKey> = Vec::new();
    for (old, new) in pairs {
        let old_key = key_of(old);
        let new_key = new.map(|row| key_of(row));
        if old_key.iter().any(Datum::is_null) || new_key.as_ref().is_some_and(|n| compare_keys(n, &old_key).is_eq() && !n.iter().any(Datum::is_null)) {
            continue;
        }
        keys.push(LostKey { old: old_key, new: new_key });
    }
    keys.sort_by(|a, b| compare_keys(&a.old, &b.old));
    keys.dedup_by(|a, b| compare_keys(&a.old, &b.old).is_eq());
    if rule != ReferentialAction::NoAction {
        return Ok(keys);
    }
    let mut refs = References::new(session, txn);
    let mut kept = Vec::with_capacity(keys.len());
    for key in keys {
        if !refs.key_exists(table, fk, &key.old)? {
            kept.push(key);
        }
    }
    Ok(kept)
}

/// A referenced key's value in a referencing column's type (int4 and int8 mix).
fn in_column_type(value: &Datum, to: DataType) -> Result<Datum> {
    Ok(match (value, to) {
        (Datum::Int4(v), DataType::Int8) => Datum::Int8(*v as i64),
        (Datum::Int8(v), DataType::Int4) => {
            Datum::Int4(i32::try_from(*v).map_err(|_| Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range"))?)
        }
        (value, _) => value.clone(),
    })
}

/// The value of column `c`'s DEFAULT (NULL without one), for ON DELETE SET DEFAULT.
fn column_default_value(session: &Session, txn: &WriteTxn, table: &TableMeta, c: usize) -> Result<Datum> {
    with_plan_context(session, &txn.catalog, |ctx| crate::statements::column_default(ctx, &table.columns[c])?.eval(&[], &session.eval))
}

/// Rows' keys compared as the unique index compares them (no NULLs in them).
fn compare_keys(a: &[Datum], b: &[Datum]) -> std::cmp::Ordering {
    a.iter().zip(b).map(|(x, y)| compare_datums(x, y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
}

/// The key that `values` (a row's values of the key columns of a foreign key) reference,
/// in the referenced columns' `types`; `None` when one is NULL (MATCH SIMPLE: no
/// reference). A value that cannot exist in the referenced type (an int8 beyond int4's
/// range) becomes NULL, which no referenced row holds.
fn referenced_key<'v>(values: impl Iterator<Item = &'v Datum>, types: &[DataType]) -> Option<Vec<Datum>> {
    values
        .zip(types)
        .map(|(value, &to)| match (value, to) {
            (Datum::Null, _) => None,
            (Datum::Int8(v), DataType::Int4) => Some(i32::try_from(*v).map(Datum::Int4).unwrap_or(Datum::Null)),
            (Datum::Int4(v), DataType::Int8) => Some(Datum::Int8(*v as i64)),
            (value, _) => Some(value.clone()),
        })
        .collect::<Option<Vec<_>>>()
}

/// The values of `fk`'s key columns in `row`.
fn key_values<'r>(fk: &'r ForeignKeyMeta, row: &'r [Datum]) -> impl Iterator<Item = &'r Datum> + 'r {
    fk.columns.iter().map(move |&c| &row[c])
}

/// `(a, b)=(1, 2)` as PostgreSQL's foreign key errors print a key.
fn key_text(table: &TableMeta, columns: &[usize], key: &[Datum]) -> String {
    let names: Vec<&str> = columns.iter().map(|&c| table.columns[c].name.as_str()).collect();
    let values: Vec<String> = key.iter().map(|d| d.to_pg_text().unwrap_or_else(|| "null".into())).collect();
    format!("({})=({})", names.join(", "), values.join(", "))
}

/// Lookups of referenced keys, through the referenced tables' unique indexes, remembered
/// per key (a load of many rows references few parents many times).
struct References<'a> {
    session: &'a Session,
    xid: weft_access::Xid,
    snapshot: Snapshot,
    catalog: &'a weft_access::Catalog,
    known: HashMap<(String, Vec<u8>), bool>,
    /// Each referenced index's descriptor, built once.
    descs: HashMap<String, weft_access::btree::BTreeDesc>,
}

impl<'a> References<'a> {
    fn new(session: &'a Session, txn: &'a WriteTxn) -> References<'a> {
        References { session, xid: txn.xid, snapshot: txn.catalog.snapshot(), catalog: &txn.catalog, known: HashMap::new(), descs: HashMap::new() }
    }

    /// Fail as PostgreSQL does unless the row of `child` is NULL in a key column of `fk`
    /// or finds its referenced row.
    /// `values` are the row's values of the key columns.
    fn require_referenced(&mut self, child: &TableMeta, fk: &ForeignKeyMeta, values: &[Datum]) -> Result<()> {
        let referenced = self.catalog.table(&fk.ref_table)?;
        let types: Vec<DataType> = fk.ref_columns.iter().map(|&c| referenced.columns[c].data_type).collect();
        let present = match referenced_key(values.iter(), &types) {
            None => true,
            Some(key) if key.iter().any(Datum::is_null) => false,
            Some(key) => self.key_exists(referenced, fk, &key)?,
        };
        if present {
            return Ok(());
        }
        let shown = values.to_vec();
        Err(Error::new(
            SqlState::FOREIGN_KEY_VIOLATION,
            format!("insert or update on table \"{}\" violates foreign key constraint \"{}\"", child.name, fk.name),
        )
        .with_detail(format!("Key {} is not present in table \"{}\".", key_text(child, &fk.columns, &shown), fk.ref_table)))
    }

    /// Does a row live for the writer hold `key` in the referenced columns of `fk`?
    fn key_exists(&mut self, referenced: &TableMeta, fk: &ForeignKeyMeta, key: &[Datum]) -> Result<bool> {
        let index = self.catalog.indexes.get(&fk.ref_index).ok_or_else(|| Error::internal(format!("index \"{}\" of a foreign key is gone", fk.ref_index)))?;
        if !self.descs.contains_key(&index.name) {
            self.descs.insert(index.name.clone(), btree_desc(referenced, index)?);
        }
        let desc = &self.descs[&index.name];
        // The key in the index's column order.
        let values: Vec<Datum> = index
            .columns
            .iter()
            .map(|ic| fk.ref_columns.iter().position(|&c| c == ic.column).map(|j| key[j].clone()).ok_or_else(|| Error::internal("a foreign key's index does not match it")))
            .collect::<Result<_>>()?;
        let mut entry = Vec::with_capacity(32);
        desc.encode(&values, TidWord(0), &mut entry)?;
        let cache_key = (index.name.clone(), entry);
        if let Some(&known) = self.known.get(&cache_key) {
            return Ok(known);
        }
        let entry = &cache_key.1;
        let tree = BTree::open(&self.session.db.pool, index.locator(), desc);
        let mut found = false;
        tree.visit_equal(entry, |existing| {
            if !desc.keys_equal_not_null(existing, entry) {
                return Ok(true);
            }
            found = crate::indexes::entry_clashes(&self.session.db, self.xid, &self.snapshot, referenced, desc.tid_word(existing), &|_| false)?;
            Ok(!found)
        })?;
        self.known.insert(cache_key, found);
        Ok(found)
    }
}

/// Resolve a FOREIGN KEY of `table` against the catalog, with PostgreSQL's errors.
#[allow(clippy::too_many_arguments)]
fn resolve_foreign_key(
    txn: &WriteTxn,
    table: &TableMeta,
    name: Option<String>,
    columns: &[String],
    ref_table: &str,
    ref_columns: &[String],
    on_delete: ReferentialAction,
    on_update: ReferentialAction,
) -> Result<ForeignKeyMeta> {
    let referenced = txn.catalog.table(ref_table)?.clone();
    let column_of = |t: &TableMeta, name: &str| {
        t.column_index(name).ok_or_else(|| {
            Error::new(SqlState::UNDEFINED_COLUMN, format!("column \"{name}\" referenced in foreign key constraint does not exist"))
        })
    };
    let own: Vec<usize> = columns.iter().map(|c| column_of(table, c)).collect::<Result<_>>()?;
    let key_error = |message: String| Error::new(SqlState("42830"), message);
    let theirs: Vec<usize> = if ref_columns.is_empty() {
        let primary = txn.catalog.indexes_of(ref_table).find(|i| i.constraint == Some(weft_access::IndexConstraint::PrimaryKey));
        match primary {
            Some(index) => index.columns.iter().map(|c| c.column).collect(),
            None => return Err(key_error(format!("there is no primary key for referenced table \"{ref_table}\""))),
        }
    } else {
        ref_columns.iter().map(|c| column_of(&referenced, c)).collect::<Result<_>>()?
    };
    if own.len() != theirs.len() {
        return Err(key_error("number of referencing and referenced columns for foreign key disagree".into()));
    }
    let wanted: BTreeSet<usize> = theirs.iter().copied().collect();
    let index = txn
        .catalog
        .indexes_of(ref_table)
        .filter(|i| i.unique && i.is_plain() && i.columns.len() == theirs.len() && i.columns.iter().map(|c| c.column).collect::<BTreeSet<_>>() == wanted)
        .min_by_key(|i| (i.constraint != Some(weft_access::IndexConstraint::PrimaryKey), i.oid))
        .ok_or_else(|| key_error(format!("there is no unique constraint matching given keys for referenced table \"{ref_table}\"")))?;
    let names: Vec<String> = own.iter().map(|&c| table.columns[c].name.clone()).collect();
    let name = match name {
        Some(name) => unused_name(txn, table, name, false)?,
        None => unused_name(txn, table, format!("{}_{}_fkey", table.name, names.join("_")), true)?,
    };
    for (&mine, &other) in own.iter().zip(&theirs) {
        let (a, b) = (table.columns[mine].data_type, referenced.columns[other].data_type);
        let integers = |t: DataType| matches!(t, DataType::Int4 | DataType::Int8);
        if a != b && !(integers(a) && integers(b)) {
            return Err(Error::new(SqlState::DATATYPE_MISMATCH, format!("foreign key constraint \"{name}\" cannot be implemented")).with_detail(format!(
                "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
                table.columns[mine].name,
                referenced.columns[other].name,
                a.name(),
                b.name()
            )));
        }
    }
    Ok(ForeignKeyMeta { name, columns: own, ref_table: ref_table.to_string(), ref_columns: theirs, ref_index: index.name.clone(), on_delete, on_update })
}

/// Visit the rows of `table` live for the writer, decoded, with their TIDs.
pub(crate) fn for_each_live_row(session: &Session, txn: &WriteTxn, table: &TableMeta, cancel: &CancelToken, visit: impl FnMut(Tid, &[Datum]) -> Result<()>) -> Result<()> {
    let snapshot = txn.catalog.snapshot();
    let xid = txn.xid;
    for_each_row_where(session, table, 0, |h| h.live_for(&snapshot, Some(xid)), cancel, visit)
}

/// Visit the rows the statement wrote into `table` from `first_block` on and still sees.
fn for_each_new_row(session: &Session, txn: &WriteTxn, table: &TableMeta, first_block: BlockNumber, cancel: &CancelToken, visit: impl FnMut(Tid, &[Datum]) -> Result<()>) -> Result<()> {
    let xid = txn.xid;
    for_each_row_where(session, table, first_block, |h| h.xmin == xid && h.xmax != xid, cancel, visit)
}

fn for_each_row_where(
    session: &Session,
    table: &TableMeta,
    first_block: BlockNumber,
    keep: impl Fn(heap::TupleHeader) -> bool,
    cancel: &CancelToken,
    mut visit: impl FnMut(Tid, &[Datum]) -> Result<()>,
) -> Result<()> {
    let pool = &session.db.pool;
    let layout = RowLayout::new(&table.column_types());
    let end = pool.nblocks(table.locator(), ForkNumber::Main)?;
    let mut row = Vec::with_capacity(table.columns.len());
    let mut seen = 0u64;
    heap::scan_rows_where(pool, table.locator(), first_block..end, keep, |tid, tuple| {
        seen += 1;
        if seen % 4096 == 0 {
            cancel.check()?;
        }
        row.clear();
        layout.decode_into(tuple, &mut row)?;
        visit(tid, &row)
    })
}

/// The foreign keys of other tables that reference `table`, by referencing table.
pub(crate) fn referenced_by<'c>(catalog: &'c weft_access::Catalog, table: &str) -> Vec<(&'c TableMeta, &'c ForeignKeyMeta)> {
    catalog.tables.values().flat_map(|t| t.foreign_keys.iter().filter(move |fk| fk.ref_table == table).map(move |fk| (t, fk))).collect()
}

/// DROP TABLE of `dropping` (all the statement drops): foreign keys of other tables that
/// reference them are 2BP01, or with CASCADE are dropped (returned as notices).
pub(crate) fn drop_references_to(txn: &mut WriteTxn, dropping: &[String], cascade: bool) -> Result<Vec<String>> {
    let mut dependents: Vec<(String, String, String)> = Vec::new();
    for name in dropping {
        for (child, fk) in referenced_by(&txn.catalog, name) {
            if !dropping.contains(&child.name) {
                dependents.push((child.name.clone(), fk.name.clone(), name.clone()));
            }
        }
    }
    if dependents.is_empty() {
        return Ok(Vec::new());
    }
    let lines: Vec<String> = dependents.iter().map(|(child, fk, table)| format!("constraint {fk} on table {child} depends on table {table}")).collect();
    if !cascade {
        let first = &dependents[0].2;
        return Err(Error::new(SqlState::DEPENDENT_OBJECTS_STILL_EXIST, format!("cannot drop table {first} because other objects depend on it"))
            .with_detail(lines.join("\n"))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    for (child, fk, _) in &dependents {
        drop_constraint(txn, child, fk)?;
    }
    Ok(dependents.iter().map(|(child, fk, _)| format!("NOTICE:  drop cascades to constraint {fk} on table {child}")).collect())
}

/// Foreign keys that find their rows through `index`.
pub(crate) fn using_index<'c>(catalog: &'c weft_access::Catalog, index: &str) -> Vec<(&'c TableMeta, &'c ForeignKeyMeta)> {
    catalog.tables.values().flat_map(|t| t.foreign_keys.iter().filter(move |fk| fk.ref_index == index).map(move |fk| (t, fk))).collect()
}

/// TRUNCATE of `targets`: a table referenced from a table not truncated with it is 0A000.
pub(crate) fn check_truncate(catalog: &weft_access::Catalog, targets: &[String]) -> Result<()> {
    for name in targets {
        if let Some((child, _)) = referenced_by(catalog, name).into_iter().find(|(child, _)| !targets.contains(&child.name)) {
            return Err(Error::not_supported("cannot truncate a table referenced in a foreign key constraint")
                .with_detail(format!("Table \"{}\" references \"{name}\".", child.name))
                .with_hint(format!("Truncate table \"{}\" at the same time, or use TRUNCATE ... CASCADE.", child.name)));
        }
    }
    Ok(())
}

/// `\d` footer sections of `table`: "Check constraints:", "Foreign-key constraints:" and
/// "Referenced by:", as psql prints them.
pub(crate) fn describe(catalog: &weft_access::Catalog, table: &TableMeta) -> Vec<String> {
    let mut footer = Vec::new();
    if !table.checks.is_empty() {
        footer.push("Check constraints:".to_string());
        let mut checks: Vec<&CheckMeta> = table.checks.iter().collect();
        checks.sort_by(|a, b| a.name.cmp(&b.name));
        for check in checks {
            footer.push(format!("    \"{}\" CHECK ({})", check.name, check_text(table, check)));
        }
    }
    if !table.foreign_keys.is_empty() {
        footer.push("Foreign-key constraints:".to_string());
        let mut keys: Vec<&ForeignKeyMeta> = table.foreign_keys.iter().collect();
        keys.sort_by(|a, b| a.name.cmp(&b.name));
        for fk in keys {
            footer.push(format!("    \"{}\" {}", fk.name, foreign_key_text(catalog, table, fk)));
        }
    }
    let mut referencing = referenced_by(catalog, &table.name);
    if !referencing.is_empty() {
        referencing.sort_by(|a, b| (&a.0.name, &a.1.name).cmp(&(&b.0.name, &b.1.name)));
        footer.push("Referenced by:".to_string());
        for (child, fk) in referencing {
            footer.push(format!("    TABLE \"{}\" CONSTRAINT \"{}\" {}", child.name, fk.name, foreign_key_text(catalog, child, fk)));
        }
    }
    footer
}

/// A CHECK's expression as PostgreSQL prints it (the outer parentheses belong to `CHECK (...)`).
pub(crate) fn check_text(table: &TableMeta, check: &CheckMeta) -> String {
    let Ok(bound) = bound_check(table, check) else { return check.expr.clone() };
    let columns: Vec<crate::deparse::ColumnText> = table.columns.iter().map(|c| crate::deparse::ColumnText::var(crate::deparse::quote_identifier(&c.name))).collect();
    let text = crate::deparse::deparse(&bound, &columns);
    crate::index_expr::strip_parens(&text).to_string()
}

/// `FOREIGN KEY (a) REFERENCES p(id) ON DELETE CASCADE`.
pub(crate) fn foreign_key_text(catalog: &weft_access::Catalog, table: &TableMeta, fk: &ForeignKeyMeta) -> String {
    let quote = |t: &TableMeta, cols: &[usize]| cols.iter().map(|&c| crate::deparse::quote_identifier(&t.columns[c].name)).collect::<Vec<_>>().join(", ");
    let referenced = catalog.tables.get(&fk.ref_table);
    let theirs = referenced.map(|r| quote(r, &fk.ref_columns)).unwrap_or_default();
    let mut text = format!("FOREIGN KEY ({}) REFERENCES {}({})", quote(table, &fk.columns), crate::deparse::quote_identifier(&fk.ref_table), theirs);
    if let Some(rule) = fk.on_update.sql() {
        text.push_str(&format!(" ON UPDATE {rule}"));
    }
    if let Some(rule) = fk.on_delete.sql() {
        text.push_str(&format!(" ON DELETE {rule}"));
    }
    text
}
