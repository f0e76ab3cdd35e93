//! Views: `CREATE [OR REPLACE] [TEMP] VIEW`, `DROP VIEW`, and the reading of a view as the
//! subquery it stands for.
//!
//! A view keeps its query as SQL text (`ViewMeta::query`) with the columns it had when it
//! was created. Wherever a FROM item names it, the query is parsed again and planned as a
//! derived table under the view's name, so it sees the tables as they are now. What a view
//! reads is found by walking that text: DROP TABLE / DROP VIEW of something a view reads
//! is 2BP01, or with CASCADE drops the view too. Views are read-only: writing statements
//! get "is a view" (42809) from the catalog.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{self, Statement, TableAlias, TableAliasColumnDef, TableFactor};
use weft_access::catalog::{ColumnMeta, ViewMeta};
use weft_common::{Error, Result, SqlState};

use crate::api::QueryResult;
use crate::bind::{ident_name, object_name};
use crate::deparse::quote_identifier;
use crate::database::WriteTxn;
use crate::planner::{From, PlanContext};
use crate::session::Session;

/// Views within views deeper than this are taken for a cycle (a view replaced to read a
/// view that reads it).
const MAX_VIEW_DEPTH: usize = 64;

thread_local! {
    static VIEW_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Plan a FROM item naming `view`: its query as a derived table called by the item's alias,
/// else by the view's name, with the view's column names.
pub(crate) fn plan_view(view: &ViewMeta, alias: Option<&TableAlias>, ctx: &PlanContext) -> Result<From> {
    let depth = VIEW_DEPTH.with(|d| d.get());
    if depth >= MAX_VIEW_DEPTH {
        return Err(Error::new(SqlState("42P17"), format!("infinite recursion detected in rules for relation \"{}\"", view.name)));
    }
    let query = parse_view_query(view)?;
    let from = plan_query_as(view, query.clone(), alias, depth, ctx)?;
    if from.scope.columns.len() <= view.columns.len() {
        return Ok(from);
    }
    // A `*` that now finds more columns (added to a table since): the view keeps the
    // columns it was created with, as PostgreSQL's expands `*` at creation.
    let select_list = view.columns.iter().map(|c| quote_identifier(&c.name)).collect::<Vec<_>>().join(", ");
    let wrapped = format!("SELECT {select_list} FROM ({query}) AS {}", quote_identifier(&view.name));
    plan_query_as(view, parse_query(&wrapped, &view.name)?, alias, depth, ctx)
}

/// Plan `query` as a derived table standing for `view`.
fn plan_query_as(view: &ViewMeta, query: ast::Query, alias: Option<&TableAlias>, depth: usize, ctx: &PlanContext) -> Result<From> {
    // The reference's column aliases rename the first columns; the view's names the rest.
    let given: Vec<TableAliasColumnDef> = alias.map(|a| a.columns.clone()).unwrap_or_default();
    let columns = view
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| given.get(i).cloned().unwrap_or_else(|| TableAliasColumnDef { name: ast::Ident::with_quote('"', &c.name), data_type: None }))
        .collect();
    let alias = TableAlias {
        explicit: alias.is_some_and(|a| a.explicit),
        at: None,
        name: alias.map(|a| a.name.clone()).unwrap_or_else(|| ast::Ident::with_quote('"', &view.name)),
        columns,
    };
    let factor = TableFactor::Derived { lateral: false, subquery: Box::new(query), alias: Some(alias), sample: None };
    VIEW_DEPTH.with(|d| d.set(depth + 1));
    let planned = crate::planner::plan_table_factor(&factor, ctx);
    VIEW_DEPTH.with(|d| d.set(depth));
    planned
}

fn parse_view_query(view: &ViewMeta) -> Result<ast::Query> {
    parse_query(&view.query, &view.name)
}

fn parse_query(sql: &str, view: &str) -> Result<ast::Query> {
    match crate::parse::parse_statements(sql)?.pop() {
        Some(Statement::Query(query)) => Ok(*query),
        _ => Err(Error::internal(format!("view \"{view}\" does not hold a query"))),
    }
}

/// The relations a view's query names (tables, views, and any CTE names, which only make
/// the dependency check stricter).
fn reads(view: &ViewMeta) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    if let Ok(query) = parse_view_query(view) {
        let _ = crate::ast_walk::relations(&query, |name| {
            if let Ok(name) = object_name(name) {
                names.insert(name);
            }
            ControlFlow::Continue(())
        });
    }
    names
}

pub(crate) fn create_view(session: &mut Session, create: &ast::CreateView) -> Result<QueryResult> {
    if create.materialized {
        return Err(Error::not_supported("CREATE MATERIALIZED VIEW is not supported"));
    }
    if create.or_alter || create.to.is_some() || create.params.is_some() {
        return Err(Error::not_supported("this form of CREATE VIEW is not supported"));
    }
    if !matches!(create.options, ast::CreateTableOptions::None) {
        return Err(Error::not_supported("CREATE VIEW ... WITH (options) is not supported"));
    }
    if create.if_not_exists {
        // PostgreSQL 15's grammar has no IF NOT EXISTS for views.
        return Err(Error::syntax("syntax error at or near \"NOT\""));
    }
    let name = object_name(&create.name)?;
    let mut notices = Vec::new();
    session.write(|txn| {
        let replacing = match txn.catalog.views.get(&name) {
            Some(old) if create.or_replace => Some(old.clone()),
            None if !txn.catalog.relation_exists(&name) => None,
            Some(_) | None => {
                return Err(Error::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
            }
        };
        let planned = crate::statements::plan_output(session, &txn.catalog, &create.query)?;
        let renames: Vec<String> = create.columns.iter().map(|c| ident_name(&c.name)).collect();
        let columns = crate::statements::output_columns(&planned, &renames, "CREATE VIEW specifies more column names than columns")?;
        if let Some(old) = &replacing {
            check_replacement(old, &columns)?;
        }
        let mut view = ViewMeta {
            oid: replacing.as_ref().map_or_else(|| txn.catalog.allocate_oid(), |old| old.oid),
            name: name.clone(),
            query: create.query.to_string(),
            columns,
            temporary: create.temporary,
        };
        // A view of a temporary relation lives only as long as it.
        let reads_temporary = reads(&view).iter().any(|r| {
            txn.catalog.tables.get(r).is_some_and(|t| t.temporary) || txn.catalog.views.get(r).is_some_and(|v| v.temporary)
        });
        if reads_temporary && !view.temporary {
            view.temporary = true;
            notices.push(format!("NOTICE:  view \"{name}\" will be a temporary view"));
        }
        if view.temporary {
            session.temp_tables.lock().push((name.clone(), view.oid));
        }
        txn.catalog.views.insert(name.clone(), view);
        Ok(())
    })?;
    Ok(QueryResult::command_with_notices("CREATE VIEW", notices))
}

/// CREATE OR REPLACE VIEW keeps the old columns, in order, with their names and types;
/// it may add columns after them.
fn check_replacement(old: &ViewMeta, new: &[ColumnMeta]) -> Result<()> {
    if new.len() < old.columns.len() {
        return Err(Error::new(SqlState::INVALID_TABLE_DEFINITION, "cannot drop columns from view"));
    }
    for (was, now) in old.columns.iter().zip(new) {
        if was.name != now.name {
            return Err(Error::new(
                SqlState::INVALID_TABLE_DEFINITION,
                format!("cannot change name of view column \"{}\" to \"{}\"", was.name, now.name),
            )
            .with_hint("Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead."));
        }
        if (was.data_type, was.type_modifier) != (now.data_type, now.type_modifier) {
            let type_name = |c: &ColumnMeta| c.type_modifier.map_or_else(|| c.data_type.name().to_string(), |m| m.format_type());
            let (old_type, new_type) = (type_name(was), type_name(now));
            return Err(Error::new(
                SqlState::INVALID_TABLE_DEFINITION,
                format!("cannot change data type of view column \"{}\" from {old_type} to {new_type}", was.name),
            ));
        }
    }
    Ok(())
}

pub(crate) fn drop_views(session: &mut Session, names: &[ast::ObjectName], if_exists: bool, cascade: bool) -> Result<QueryResult> {
    let mut notices = Vec::new();
    session.write(|txn| {
        let mut dropping = Vec::new();
        for name in names {
            let name = object_name(name)?;
            if txn.catalog.views.contains_key(&name) {
                dropping.push(name);
            } else if txn.catalog.relation_exists(&name) {
                let hint = match () {
                    _ if txn.catalog.tables.contains_key(&name) => "Use DROP TABLE to remove a table.",
                    _ if txn.catalog.indexes.contains_key(&name) => "Use DROP INDEX to remove an index.",
                    _ => "Use DROP SEQUENCE to remove a sequence.",
                };
                return Err(Error::new(SqlState::WRONG_OBJECT_TYPE, format!("\"{name}\" is not a view")).with_hint(hint));
            } else if if_exists {
                notices.push(format!("NOTICE:  view \"{name}\" does not exist, skipping"));
            } else {
                return Err(Error::new(SqlState::UNDEFINED_TABLE, format!("view \"{name}\" does not exist")));
            }
        }
        notices.extend(drop_dependent_views(txn, &dropping, cascade)?);
        for name in &dropping {
            txn.catalog.views.remove(name);
        }
        Ok(())
    })?;
    Ok(QueryResult::command_with_notices("DROP VIEW", notices))
}

/// Before `dropping` (tables or views) go: the views that read them, directly or through
/// other views, are 2BP01, or with CASCADE are dropped (returned as notices).
pub(crate) fn drop_dependent_views(txn: &mut WriteTxn, dropping: &[String], cascade: bool) -> Result<Vec<String>> {
    let kind = |catalog: &weft_access::Catalog, name: &str| if catalog.views.contains_key(name) { "view" } else { "table" };
    let mut gone: BTreeSet<String> = dropping.iter().cloned().collect();
    // (dependent view, what it reads), in the order they are found.
    let mut dependents: Vec<(String, String)> = Vec::new();
    loop {
        let found: Vec<(String, String)> = txn
            .catalog
            .views
            .values()
            .filter(|v| !gone.contains(&v.name))
            .filter_map(|v| reads(v).into_iter().find(|r| gone.contains(r)).map(|r| (v.name.clone(), r)))
            .collect();
        if found.is_empty() {
            break;
        }
        for (view, read) in found {
            gone.insert(view.clone());
            dependents.push((view, read));
        }
    }
    if dependents.is_empty() {
        return Ok(Vec::new());
    }
    if !cascade {
        let lines: Vec<String> =
            dependents.iter().map(|(view, read)| format!("view {view} depends on {} {read}", kind(&txn.catalog, read))).collect();
        let first = &dependents[0].1;
        return Err(Error::new(
            SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
            format!("cannot drop {} {first} because other objects depend on it", kind(&txn.catalog, first)),
        )
        .with_detail(lines.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    for (view, _) in &dependents {
        txn.catalog.views.remove(view);
    }
    Ok(dependents.iter().map(|(view, _)| format!("NOTICE:  drop cascades to view {view}")).collect())
}
