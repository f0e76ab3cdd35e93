//! `ALTER TABLE`, `ALTER INDEX ... RENAME` and `DROP INDEX CONCURRENTLY`.
//!
//! **Renames** change only the catalog. Everything that refers to a table, column, index
//! or constraint by name is updated in the same catalog version: indexes name their
//! table, foreign keys their referenced table and index, a serial column's sequence its
//! owning table and column; CHECK constraints, index expressions and partial-index
//! predicates are SQL text (bound again when used), so the text is parsed, its column
//! references renamed (`ast_walk::walk_mut`) and printed back, and the texts `\d` prints
//! are derived again. Column defaults cannot refer to columns, and `nextval('t_a_seq')`
//! names the sequence, which keeps its name as in PostgreSQL.
//!
//! **Column changes** (`ADD`, `DROP`, `ALTER ... TYPE`, `SET` / `DROP DEFAULT`, `SET` /
//! `DROP NOT NULL`) work on a copy of the table's metadata: every action of the statement
//! is applied to the copy in order, each recording how a new row is computed from an old
//! one (`RowPlan`: a column taken as is, or an expression — a default, a `USING`, a cast —
//! over the old row). When some action changes the stored rows (anything but defaults and
//! NOT NULL), the table is rewritten once at the end, as `VACUUM FULL` rewrites it: the
//! rows the statement sees are read from the old relation, turned into new rows and
//! written with their xmin into a new relation, whose indexes are then rebuilt; the old
//! files are dropped when the statement commits. Then NOT NULL and CHECK constraints are
//! checked against the rows (PostgreSQL's 23502 / 23514 messages). Nothing on disk
//! changes format, so a rolled-back or failed ALTER leaves only a file removed with it, and
//! readers that started before the commit keep reading the old relation through the
//! catalog they took (see "Dropped relations and running readers" in the README).
//!
//! PostgreSQL adds a column with a constant default without a rewrite (its "fast
//! default", kept in `pg_attribute.attmissingval`); weft rewrites — simpler, and the row
//! format needs no "missing" values.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{self, Statement, VisitorMut};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};
use weft_access::catalog::TableMeta;
use weft_common::parallel::CancelToken;
use weft_common::{Error, Result, SqlState};

use crate::api::QueryResult;
use crate::bind::{ident_name, object_name};
use crate::database::WriteTxn;
use crate::indexes::{add_key_constraints, option_integer, KeyConstraint};
use crate::session::Session;

/// What a statement read from its text is (sqlparser lacks these forms).
enum TextForm {
    /// `DROP INDEX CONCURRENTLY ...`: the statement without CONCURRENTLY.
    DropIndexConcurrently(String),
    /// `ALTER INDEX IF EXISTS ...`: the statement without IF EXISTS.
    AlterIndexIfExists(String),
}

/// The non-whitespace tokens of `sql` with their positions in the token list.
fn tokens(sql: &str) -> Option<Vec<Token>> {
    Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()
}

fn is_word(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

fn text_form(sql: &str) -> Option<TextForm> {
    let mut words = sql.split_whitespace().take(3).map(str::to_ascii_lowercase);
    let (first, second) = (words.next()?, words.next()?);
    if !matches!((first.as_str(), second.as_str()), ("drop", "index") | ("alter", "index")) {
        return None;
    }
    let tokens = tokens(sql)?;
    let significant: Vec<usize> =
        tokens.iter().enumerate().filter(|(_, t)| !matches!(t, Token::Whitespace(_))).map(|(i, _)| i).take(4).collect();
    let at = |k: usize| significant.get(k).map(|&i| &tokens[i]);
    let without = |skip: &[usize]| -> String {
        tokens.iter().enumerate().filter(|(i, _)| !skip.contains(i)).map(|(_, t)| t.to_string()).collect()
    };
    if first == "drop" && at(2).is_some_and(|t| is_word(t, "concurrently")) {
        return Some(TextForm::DropIndexConcurrently(without(&[significant[2]])));
    }
    if first == "alter" && at(2).is_some_and(|t| is_word(t, "if")) && at(3).is_some_and(|t| is_word(t, "exists")) {
        return Some(TextForm::AlterIndexIfExists(without(&[significant[2], significant[3]])));
    }
    None
}

/// Does `sql` need [`try_text_statement`]?
pub fn is_text_statement(sql: &str) -> bool {
    text_form(sql).is_some()
}

/// `DROP INDEX CONCURRENTLY` and `ALTER INDEX IF EXISTS`, which sqlparser does not read:
/// the words it lacks are taken out and the rest parsed. `None` when `sql` is neither.
pub fn try_text_statement(session: &mut Session, sql: &str) -> Option<Result<QueryResult>> {
    let form = text_form(sql)?;
    let (text, concurrently) = match &form {
        TextForm::DropIndexConcurrently(text) => (text, true),
        TextForm::AlterIndexIfExists(text) => (text, false),
    };
    let statements = match crate::parse::parse_statements(text) {
        Ok(statements) => statements,
        Err(e) => return Some(Err(e)),
    };
    let [statement] = statements.as_slice() else {
        return Some(Err(Error::not_supported("this statement must be sent on its own")));
    };
    Some(match (statement, concurrently) {
        (Statement::Drop { object_type: ast::ObjectType::Index, if_exists, names, cascade, .. }, true) => {
            drop_index_concurrently(session, names, *if_exists, *cascade)
        }
        (Statement::AlterIndex { name, operation }, false) => alter_index(session, name, operation, true),
        _ => Err(Error::syntax("syntax error")),
    })
}

/// `DROP INDEX CONCURRENTLY [IF EXISTS] name`: dropping an index never blocks weft's
/// readers, so this is DROP INDEX with PostgreSQL's restrictions.
fn drop_index_concurrently(session: &mut Session, names: &[ast::ObjectName], if_exists: bool, cascade: bool) -> Result<QueryResult> {
    if session.in_transaction_block() {
        return Err(Error::new(SqlState::ACTIVE_SQL_TRANSACTION, "DROP INDEX CONCURRENTLY cannot run inside a transaction block"));
    }
    if names.len() > 1 {
        return Err(Error::not_supported("DROP INDEX CONCURRENTLY does not support dropping multiple objects"));
    }
    if cascade {
        return Err(Error::not_supported("DROP INDEX CONCURRENTLY does not support CASCADE"));
    }
    crate::indexes::drop_indexes(session, names, if_exists)
}

/// `ALTER INDEX [IF EXISTS] name RENAME TO new`.
pub fn alter_index(session: &mut Session, name: &ast::ObjectName, operation: &ast::AlterIndexOperation, if_exists: bool) -> Result<QueryResult> {
    let name = object_name(name)?;
    let ast::AlterIndexOperation::RenameIndex { index_name } = operation;
    let new = object_name(index_name)?;
    let mut notices = Vec::new();
    session.write(|txn| {
        if !txn.catalog.relation_exists(&name) && if_exists {
            notices.push(format!("NOTICE:  relation \"{name}\" does not exist, skipping"));
            return Ok(());
        }
        rename_relation(session, txn, &name, &new)
    })?;
    Ok(QueryResult::command_with_notices("ALTER INDEX", notices))
}

/// `ALTER TABLE [IF EXISTS] name action, ...`.
pub fn alter_table(session: &mut Session, alter: &Statement, cancel: &CancelToken) -> Result<QueryResult> {
    let Statement::AlterTable(alter) = alter else { return Err(Error::internal("not an ALTER TABLE")) };
    let name = object_name(&alter.name)?;
    let renames = alter.operations.iter().filter(|op| is_rename(op)).count();
    if renames > 0 && alter.operations.len() > 1 {
        return Err(Error::syntax("syntax error at or near \",\""));
    }
    let mut notices = Vec::new();
    session.write(|txn| {
        if !txn.catalog.tables.contains_key(&name) {
            if !txn.catalog.relation_exists(&name) && alter.if_exists {
                notices.push(format!("NOTICE:  relation \"{name}\" does not exist, skipping"));
                return Ok(());
            }
            // PostgreSQL renames any relation through ALTER TABLE.
            if let [ast::AlterTableOperation::RenameTable { table_name }] = alter.operations.as_slice() {
                if txn.catalog.indexes.contains_key(&name) {
                    return rename_relation(session, txn, &name, &rename_target(table_name)?);
                }
            }
            if txn.catalog.relation_exists(&name) {
                return Err(Error::new(SqlState::WRONG_OBJECT_TYPE, format!("\"{name}\" is not a table")));
            }
            return Err(weft_access::catalog::undefined_table(&name));
        }
        if renames > 0 {
            return match &alter.operations[0] {
                ast::AlterTableOperation::RenameTable { table_name } => rename_relation(session, txn, &name, &rename_target(table_name)?),
                ast::AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                    rename_column(session, txn, &name, &ident_name(old_column_name), &ident_name(new_column_name))
                }
                ast::AlterTableOperation::RenameConstraint { old_name, new_name } => {
                    rename_constraint(session, txn, &name, &ident_name(old_name), &ident_name(new_name))
                }
                _ => Err(Error::internal("not a rename")),
            };
        }
        let mut columns = crate::alter_column::ColumnChanges::new(txn.catalog.table(&name)?.clone());
        for operation in &alter.operations {
            if columns.accepts(operation) {
                columns.apply(session, txn, operation, &mut notices)?;
                continue;
            }
            // Constraints and options act on the catalog at once: the column changes
            // before them are applied first.
            columns.finish(session, txn, cancel, &mut notices)?;
            other_operation(session, txn, &name, operation, cancel, &mut notices)?;
            columns = crate::alter_column::ColumnChanges::new(txn.catalog.table(&name)?.clone());
        }
        columns.finish(session, txn, cancel, &mut notices)
    })?;
    Ok(QueryResult::command_with_notices("ALTER TABLE", notices))
}

fn is_rename(operation: &ast::AlterTableOperation) -> bool {
    matches!(
        operation,
        ast::AlterTableOperation::RenameTable { .. }
            | ast::AlterTableOperation::RenameColumn { .. }
            | ast::AlterTableOperation::RenameConstraint { .. }
    )
}

fn rename_target(kind: &ast::RenameTableNameKind) -> Result<String> {
    match kind {
        ast::RenameTableNameKind::To(name) => object_name(name),
        ast::RenameTableNameKind::As(name) => Err(Error::syntax(format!("syntax error at or near \"AS\" ({name})"))),
    }
}

/// SET (options), ADD / DROP CONSTRAINT: what ALTER TABLE did before columns could change.
fn other_operation(
    session: &Session,
    txn: &mut WriteTxn,
    name: &str,
    operation: &ast::AlterTableOperation,
    cancel: &CancelToken,
    notices: &mut Vec<String>,
) -> Result<()> {
    match operation {
        ast::AlterTableOperation::SetOptionsParens { options } => {
            for option in options {
                let ast::SqlOption::KeyValue { key, value } = option else {
                    return Err(Error::not_supported(format!("ALTER TABLE option {option}")));
                };
                let key = ident_name(key);
                match key.as_str() {
                    "parallel_workers" => {
                        let n = option_integer(&key, value, 0, 1024)? as u32;
                        txn.catalog.table_mut(name)?.parallel_workers = Some(n);
                    }
                    other => return Err(Error::not_supported(format!("the table option \"{other}\" is not supported yet"))),
                }
            }
        }
        ast::AlterTableOperation::AddConstraint { constraint, not_valid: false } => {
            match crate::constraints::ConstraintDef::from_table_constraint(constraint)? {
                Some(constraint) => crate::constraints::add_constraints(session, txn, name, vec![constraint], cancel)?,
                None => {
                    let constraint = KeyConstraint::from_table_constraint(constraint)?;
                    add_key_constraints(session, txn, name, &[constraint], cancel, notices)?;
                }
            }
        }
        ast::AlterTableOperation::DropConstraint { if_exists, name: constraint, drop_behavior } => {
            drop_constraint(txn, name, &ident_name(constraint), *if_exists, matches!(drop_behavior, Some(ast::DropBehavior::Cascade)), notices)?;
        }
        other => return Err(Error::not_supported(format!("ALTER TABLE ... {other} is not supported yet"))),
    }
    Ok(())
}

/// `ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name [CASCADE]`.
fn drop_constraint(txn: &mut WriteTxn, name: &str, constraint: &str, if_exists: bool, cascade: bool, notices: &mut Vec<String>) -> Result<()> {
    let found = txn.catalog.indexes.get(constraint).is_some_and(|i| i.table == name && i.constraint.is_some());
    let dependents: Vec<(String, String)> = if found {
        crate::constraints::using_index(&txn.catalog, constraint).into_iter().map(|(t, fk)| (t.name.clone(), fk.name.clone())).collect()
    } else {
        Vec::new()
    };
    if let Some((child, fk)) = dependents.first() {
        if !cascade {
            return Err(Error::new(
                SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
                format!("cannot drop constraint {constraint} on table {name} because other objects depend on it"),
            )
            .with_detail(format!("constraint {fk} on table {child} depends on index {constraint}"))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
        }
        for (child, fk) in &dependents {
            crate::constraints::drop_constraint(txn, child, fk)?;
            notices.push(format!("NOTICE:  drop cascades to constraint {fk} on table {child}"));
        }
    }
    if !found && crate::constraints::drop_constraint(txn, name, constraint)? {
        return Ok(());
    }
    if found {
        let index = txn.catalog.indexes.remove(constraint).expect("found above");
        txn.drop_relation(index.locator());
    } else if if_exists {
        notices.push(format!("NOTICE:  constraint \"{constraint}\" of relation \"{name}\" does not exist, skipping"));
    } else {
        return Err(Error::new(SqlState::UNDEFINED_OBJECT, format!("constraint \"{constraint}\" of relation \"{name}\" does not exist")));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Renames

fn duplicate_relation(name: &str) -> Error {
    Error::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists"))
}

/// Rename table or index `old` to `new` (ALTER TABLE / ALTER INDEX ... RENAME TO, which
/// PostgreSQL lets rename either kind).
fn rename_relation(session: &Session, txn: &mut WriteTxn, old: &str, new: &str) -> Result<()> {
    if !txn.catalog.relation_exists(old) {
        return Err(weft_access::catalog::undefined_table(old));
    }
    if txn.catalog.relation_exists(new) {
        return Err(duplicate_relation(new));
    }
    if txn.catalog.indexes.contains_key(old) {
        rename_index(txn, old, new);
        return Ok(());
    }
    if !txn.catalog.tables.contains_key(old) {
        return Err(Error::not_supported("renaming a sequence is not supported yet"));
    }
    let rename = Rename::Table { old: old.to_string(), new: new.to_string() };
    let mut table = txn.catalog.tables.remove(old).expect("checked above");
    table.name = new.to_string();
    for check in &mut table.checks {
        check.expr = rename.in_text(&check.expr)?;
    }
    txn.catalog.tables.insert(new.to_string(), table);
    for index in txn.catalog.indexes.values_mut().filter(|i| i.table == old) {
        index.table = new.to_string();
        for expression in &mut index.expressions {
            expression.text = rename.in_text(&expression.text)?;
        }
        if let Some(predicate) = &mut index.predicate {
            *predicate = rename.in_text(predicate)?;
        }
    }
    for table in txn.catalog.tables.values_mut() {
        for fk in table.foreign_keys.iter_mut().filter(|fk| fk.ref_table == old) {
            fk.ref_table = new.to_string();
        }
    }
    rename_sequence_owners(session, txn, |table, column| (table == old).then(|| (new.to_string(), column.to_string())));
    Ok(())
}

/// Sequences owned by a renamed table or column follow it, in the catalog and in the
/// running values (which must still match when the commit records them).
fn rename_sequence_owners(session: &Session, txn: &mut WriteTxn, rename: impl Fn(&str, &str) -> Option<(String, String)>) {
    for (name, sequence) in txn.catalog.sequences.iter_mut() {
        let Some((table, column)) = &sequence.owned_by else { continue };
        if let Some(owner) = rename(table, column) {
            sequence.owned_by = Some(owner);
            session.db.sequences.set_owner(name, sequence.owned_by.clone());
        }
    }
}

/// Rename index `old` (checked to exist, `new` free); a key constraint's name is its index's.
fn rename_index(txn: &mut WriteTxn, old: &str, new: &str) {
    let mut index = txn.catalog.indexes.remove(old).expect("checked by the caller");
    index.name = new.to_string();
    txn.catalog.indexes.insert(new.to_string(), index);
    for table in txn.catalog.tables.values_mut() {
        for fk in table.foreign_keys.iter_mut().filter(|fk| fk.ref_index == old) {
            fk.ref_index = new.to_string();
        }
    }
}

/// `ALTER TABLE t RENAME [COLUMN] old TO new`.
fn rename_column(session: &Session, txn: &mut WriteTxn, table_name: &str, old: &str, new: &str) -> Result<()> {
    let table = txn.catalog.table(table_name)?;
    let column = table
        .column_index(old)
        .ok_or_else(|| Error::new(SqlState::UNDEFINED_COLUMN, format!("column \"{old}\" does not exist")))?;
    if table.column_index(new).is_some() {
        return Err(Error::new(SqlState::DUPLICATE_COLUMN, format!("column \"{new}\" of relation \"{table_name}\" already exists")));
    }
    let rename = Rename::Column { table: table_name.to_string(), old: old.to_string(), new: new.to_string() };
    let meta = txn.catalog.table_mut(table_name)?;
    meta.columns[column].name = new.to_string();
    for check in &mut meta.checks {
        check.expr = rename.in_text(&check.expr)?;
    }
    let table = meta.clone();
    for index in txn.catalog.indexes.values_mut().filter(|i| i.table == table_name) {
        for expression in &mut index.expressions {
            expression.text = rename.in_text(&expression.text)?;
        }
        if let Some(predicate) = &mut index.predicate {
            *predicate = rename.in_text(predicate)?;
        }
    }
    refresh_index_texts(txn, &table)?;
    rename_sequence_owners(session, txn, |owner, c| (owner == table_name && c == old).then(|| (owner.to_string(), new.to_string())));
    Ok(())
}

/// The texts `\d` prints for the expressions and predicates of `table`'s indexes, derived
/// again from the stored SQL (after a column was renamed or changed type).
pub(crate) fn refresh_index_texts(txn: &mut WriteTxn, table: &TableMeta) -> Result<()> {
    use crate::index_expr::{column_display, predicate_display, rebind, IndexClause};
    for index in txn.catalog.indexes.values_mut().filter(|i| i.table == table.name) {
        for expression in &mut index.expressions {
            let bound = rebind(table, &index.name, &expression.text, IndexClause::Expression)?;
            expression.display = column_display(table, &bound);
        }
        if let Some(predicate) = &index.predicate {
            let bound = rebind(table, &index.name, predicate, IndexClause::Predicate)?;
            index.predicate_display = Some(predicate_display(table, &bound));
        }
    }
    Ok(())
}

/// `ALTER TABLE t RENAME CONSTRAINT old TO new`: a CHECK, a FOREIGN KEY, or a key
/// constraint (whose index is renamed with it, as in PostgreSQL).
fn rename_constraint(session: &Session, txn: &mut WriteTxn, table_name: &str, old: &str, new: &str) -> Result<()> {
    let _ = session;
    let table = txn.catalog.table(table_name)?;
    let is_key = |name: &str| txn.catalog.indexes.get(name).is_some_and(|i| i.table == table_name && i.constraint.is_some());
    let exists = |name: &str| table.checks.iter().any(|c| c.name == name) || table.foreign_keys.iter().any(|f| f.name == name) || is_key(name);
    if !exists(old) {
        return Err(Error::new(SqlState::UNDEFINED_OBJECT, format!("constraint \"{old}\" for table \"{table_name}\" does not exist")));
    }
    if exists(new) {
        return Err(Error::new(SqlState::DUPLICATE_OBJECT, format!("constraint \"{new}\" for relation \"{table_name}\" already exists")));
    }
    if is_key(old) {
        if txn.catalog.relation_exists(new) {
            return Err(duplicate_relation(new));
        }
        rename_index(txn, old, new);
        return Ok(());
    }
    let meta = txn.catalog.table_mut(table_name)?;
    for check in meta.checks.iter_mut().filter(|c| c.name == old) {
        check.name = new.to_string();
    }
    for fk in meta.foreign_keys.iter_mut().filter(|f| f.name == old) {
        fk.name = new.to_string();
    }
    Ok(())
}

/// A rename that stored SQL text must follow.
pub(crate) enum Rename {
    /// Qualified references `old.column` become `new.column`.
    Table { old: String, new: String },
    /// References to column `old` of `table` (bare or qualified) become `new`.
    Column { table: String, old: String, new: String },
}

impl Rename {
    /// `text`, an expression kept as SQL, with the references renamed.
    pub(crate) fn in_text(&self, text: &str) -> Result<String> {
        let mut expr = sqlparser::parser::Parser::new(&PostgreSqlDialect {})
            .try_with_sql(text)
            .and_then(|mut parser| parser.parse_expr())
            .map_err(|e| Error::internal(format!("stored expression \"{text}\" does not parse: {e}")))?;
        let _ = crate::ast_walk::walk_mut(&mut expr, &mut Renamer { rename: self });
        Ok(expr.to_string())
    }
}

/// An identifier for `name` that reads back as `name`.
fn identifier(name: &str) -> ast::Ident {
    if crate::deparse::quote_identifier(name).starts_with('"') {
        ast::Ident::with_quote('"', name)
    } else {
        ast::Ident::new(name)
    }
}

struct Renamer<'a> {
    rename: &'a Rename,
}

impl VisitorMut for Renamer<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        match (expr, self.rename) {
            (ast::Expr::Identifier(ident), Rename::Column { old, new, .. }) if ident_name(ident) == *old => *ident = identifier(new),
            (ast::Expr::CompoundIdentifier(parts), Rename::Column { table, old, new }) => {
                if let [qualifier, column] = parts.as_mut_slice() {
                    if ident_name(qualifier) == *table && ident_name(column) == *old {
                        *column = identifier(new);
                    }
                }
            }
            (ast::Expr::CompoundIdentifier(parts), Rename::Table { old, new }) => {
                if let [qualifier, _] = parts.as_mut_slice() {
                    if ident_name(qualifier) == *old {
                        *qualifier = identifier(new);
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// The names of the indexes of `table` that use column `column`.
pub(crate) fn indexes_using(txn: &WriteTxn, table: &TableMeta, column: usize) -> Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    for index in txn.catalog.indexes_of(&table.name) {
        let mut used: BTreeSet<usize> = index.columns.iter().map(|c| c.column).filter(|&c| c < table.columns.len()).collect();
        used.extend(index.include.iter().copied());
        for expression in &index.expressions {
            let bound = crate::index_expr::rebind(table, &index.name, &expression.text, crate::index_expr::IndexClause::Expression)?;
            crate::exprutil::columns_used(&bound, &mut used);
        }
        if let Some(predicate) = &index.predicate {
            let bound = crate::index_expr::rebind(table, &index.name, predicate, crate::index_expr::IndexClause::Predicate)?;
            crate::exprutil::columns_used(&bound, &mut used);
        }
        if used.contains(&column) {
            names.insert(index.name.clone());
        }
    }
    Ok(names)
}
