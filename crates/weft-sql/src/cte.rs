//! `WITH` queries (common table expressions), non-recursive: each reference to a CTE
//! becomes a subquery in FROM with the CTE's body, as PostgreSQL 12+ inlines a CTE that
//! is not `MATERIALIZED` (weft inlines `MATERIALIZED` ones too: they have no side
//! effects, so only the plan differs).
//!
//! A CTE sees the CTEs written before it; the main query sees them all. A name defined
//! by a CTE hides a table of that name. A nested query's own `WITH` is inlined when that
//! query is planned, so an inner CTE of the same name wins inside it: the rewrite here
//! does not descend into queries that define the name again.

use std::ops::ControlFlow;

use sqlparser::ast::{self, TableAlias, TableFactor, VisitMut, VisitorMut};
use weft_common::{Error, Result, SqlState};

use crate::bind::{ident_name, object_name};

/// `query` with its `WITH` clause inlined (none left at the top level).
pub fn inline_with(query: &ast::Query) -> Result<ast::Query> {
    let Some(with) = &query.with else { return Ok(query.clone()) };
    if with.recursive {
        return Err(Error::not_supported("WITH RECURSIVE is not supported yet"));
    }
    let mut defined: Vec<(String, ast::Cte)> = Vec::with_capacity(with.cte_tables.len());
    for cte in &with.cte_tables {
        let name = ident_name(&cte.alias.name);
        if defined.iter().any(|(n, _)| *n == name) {
            return Err(Error::new(
                SqlState("42712"),
                format!("WITH query name \"{name}\" specified more than once"),
            ));
        }
        let mut cte = cte.clone();
        replace_references(&mut cte.query, &defined)?;
        defined.push((name, cte));
    }
    let mut body = query.clone();
    body.with = None;
    replace_references(&mut body, &defined)?;
    Ok(body)
}

fn replace_references(query: &mut ast::Query, ctes: &[(String, ast::Cte)]) -> Result<()> {
    if ctes.is_empty() {
        return Ok(());
    }
    let mut rewriter = Rewriter { ctes, hidden: Vec::new(), error: None };
    let _ = query.visit(&mut rewriter);
    match rewriter.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

struct Rewriter<'a> {
    ctes: &'a [(String, ast::Cte)],
    /// Per nested query being visited: the names its own `WITH` redefines.
    hidden: Vec<Vec<String>>,
    error: Option<Error>,
}

impl Rewriter<'_> {
    fn lookup(&self, name: &str) -> Option<&ast::Cte> {
        if self.hidden.iter().any(|names| names.iter().any(|n| n == name)) {
            return None;
        }
        self.ctes.iter().find(|(n, _)| n == name).map(|(_, cte)| cte)
    }
}

impl VisitorMut for Rewriter<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        let names = query
            .with
            .as_ref()
            .map(|w| w.cte_tables.iter().map(|c| ident_name(&c.alias.name)).collect())
            .unwrap_or_default();
        self.hidden.push(names);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut ast::Query) -> ControlFlow<()> {
        self.hidden.pop();
        ControlFlow::Continue(())
    }

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, alias, args: None, .. } = factor else { return ControlFlow::Continue(()) };
        if name.0.len() != 1 {
            return ControlFlow::Continue(());
        }
        let table = match object_name(name) {
            Ok(t) => t,
            Err(e) => {
                self.error = Some(e);
                return ControlFlow::Break(());
            }
        };
        let Some(cte) = self.lookup(&table) else { return ControlFlow::Continue(()) };
        // The reference's alias wins; its column list, else the CTE's, renames columns.
        let alias = match alias.take() {
            Some(a) if !a.columns.is_empty() => a,
            Some(a) => TableAlias { columns: cte.alias.columns.clone(), ..a },
            None => TableAlias { columns: cte.alias.columns.clone(), ..cte.alias.clone() },
        };
        *factor = TableFactor::Derived {
            lateral: false,
            subquery: cte.query.clone(),
            alias: Some(alias),
            sample: None,
        };
        ControlFlow::Continue(())
    }
}
