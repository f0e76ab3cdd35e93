//! `WITH` queries (common table expressions): each reference to a non-recursive CTE
//! becomes a subquery in FROM with the CTE's body, as PostgreSQL 12+ inlines a CTE that
//! is not `MATERIALIZED` (weft inlines `MATERIALIZED` ones too: they have no side
//! effects, so only the plan differs).
//!
//! `WITH RECURSIVE`: a CTE whose body names itself is recursive. Its references become
//! a table name no identifier can spell (a NUL, then the CTE's number in a registry
//! that lives while the query is planned: [`CteRegistration`]); planning such a name
//! ([`plan_recursive_reference`]) checks PostgreSQL's rules (the body is `non-recursive
//! term UNION [ALL] recursive term`, the self-reference appears once in the recursive
//! term, not in a subquery or on the nullable side of an outer join, no aggregate there),
//! plans the non-recursive term, then the recursive term with the self-reference read
//! as the working table (`Source::WorkTable`), and makes a `Plan::RecursiveUnion` of
//! them. Each reference plans its own copy (the result is the same: no volatile
//! functions are evaluated differently in practice, and the rows are computed anew).
//!
//! A CTE sees the CTEs written before it; the main query sees them all. A name defined
//! by a CTE hides a table of that name. A nested query's own `WITH` is inlined when that
//! query is planned, so an inner CTE of the same name wins inside it: the rewrite here
//! does not descend into queries that define the name again.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};

use sqlparser::ast::{self, SetExpr, TableAlias, TableFactor, VisitorMut};
use weft_common::{DataType, Error, Result, SqlState};
use weft_exec::expr::{self as ex};
use weft_exec::plan::{Plan, RecursiveUnionPlan, ScanLabel, Source};

use crate::bind::{ident_name, object_name, Scope, ScopeColumn};
use crate::planner::{From, PlanContext};

/// What a reference to a recursive CTE is renamed to, before its number.
const RECURSIVE_MARKER: &str = "\u{0}recursive ";

/// A recursive CTE, while the query defining it is planned.
struct RecursiveCte {
    id: usize,
    name: String,
    columns: Vec<String>,
    query: ast::Query,
}

/// A recursive term being planned: its self-reference reads this working table.
struct WorkTable {
    name: String,
    id: usize,
    columns: Vec<String>,
    types: Vec<DataType>,
}

thread_local! {
    static RECURSIVE: RefCell<Vec<RecursiveCte>> = const { RefCell::new(Vec::new()) };
    static WORK_TABLES: RefCell<Vec<WorkTable>> = const { RefCell::new(Vec::new()) };
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// The recursive CTEs a `WITH RECURSIVE` registered: forgotten when this is dropped.
#[derive(Default)]
pub struct CteRegistration(Vec<usize>);

impl Drop for CteRegistration {
    fn drop(&mut self) {
        let ids = std::mem::take(&mut self.0);
        let _ = RECURSIVE.try_with(|r| r.borrow_mut().retain(|c| !ids.contains(&c.id)));
    }
}

enum Definition {
    Inline(ast::Cte),
    Recursive { id: usize, alias: TableAlias },
}

/// `query` with its `WITH` clause inlined (none left at the top level), and the
/// registration of its recursive CTEs, which must live while the result is planned.
pub fn inline_with(query: &ast::Query) -> Result<(ast::Query, CteRegistration)> {
    let mut registration = CteRegistration::default();
    let Some(with) = &query.with else { return Ok((query.clone(), registration)) };
    let mut defined: Vec<(String, Definition)> = Vec::with_capacity(with.cte_tables.len());
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
        if with.recursive && references(&cte.query, &name) {
            let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
            let columns = cte.alias.columns.iter().map(|c| ident_name(&c.name)).collect();
            RECURSIVE.with(|r| r.borrow_mut().push(RecursiveCte { id, name: name.clone(), columns, query: *cte.query.clone() }));
            registration.0.push(id);
            defined.push((name, Definition::Recursive { id, alias: TableAlias { columns: Vec::new(), ..cte.alias.clone() } }));
        } else {
            defined.push((name, Definition::Inline(cte)));
        }
    }
    let mut body = query.clone();
    body.with = None;
    replace_references(&mut body, &defined)?;
    Ok((body, registration))
}

/// Does `node` name the table `name` (unqualified) anywhere, nested queries included?
fn references<V: ast::Visit>(node: &V, name: &str) -> bool {
    let found = crate::ast_walk::relations(node, |relation| {
        if relation.0.len() == 1 && object_name(relation).is_ok_and(|n| n == name) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    found.is_break()
}

fn replace_references(query: &mut ast::Query, ctes: &[(String, Definition)]) -> Result<()> {
    if ctes.is_empty() {
        return Ok(());
    }
    let mut rewriter = Rewriter { ctes, hidden: Vec::new(), error: None };
    let _ = crate::ast_walk::walk_mut(query, &mut rewriter);
    match rewriter.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

struct Rewriter<'a> {
    ctes: &'a [(String, Definition)],
    /// Per nested query being visited: the names its own `WITH` redefines.
    hidden: Vec<Vec<String>>,
    error: Option<Error>,
}

impl Rewriter<'_> {
    fn lookup(&self, name: &str) -> Option<&Definition> {
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
        let cte = match self.lookup(&table) {
            None => return ControlFlow::Continue(()),
            Some(Definition::Inline(cte)) => cte,
            Some(Definition::Recursive { id, alias: cte_alias }) => {
                // Planned by `plan_recursive_reference`; the alias keeps the reference's.
                let TableFactor::Table { name: table_name, alias, .. } = factor else { unreachable!("matched above") };
                *table_name = ast::ObjectName::from(vec![ast::Ident::with_quote('"', format!("{RECURSIVE_MARKER}{id}"))]);
                if alias.is_none() {
                    *alias = Some(cte_alias.clone());
                }
                return ControlFlow::Continue(());
            }
        };
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

fn invalid_recursion(message: String) -> Error {
    Error::new(SqlState("42P19"), message)
}

/// The number of the recursive CTE a table name stands for, if it is such a reference.
pub(crate) fn recursive_reference_id(table_name: &str) -> Option<usize> {
    table_name.strip_prefix(RECURSIVE_MARKER).and_then(|n| n.parse().ok())
}

/// The working table a recursive term being planned reads under `name`.
pub(crate) fn work_table_source(name: &str, alias: Option<&TableAlias>) -> Option<From> {
    WORK_TABLES.with(|w| {
        let tables = w.borrow();
        let table = tables.iter().rev().find(|t| t.name == name)?;
        let qualifier = alias.map(|a| ident_name(&a.name)).unwrap_or_else(|| name.to_string());
        let renames: Vec<String> = alias.map(|a| a.columns.iter().map(|c| ident_name(&c.name)).collect()).unwrap_or_default();
        let columns: Vec<String> = table.columns.iter().enumerate().map(|(i, c)| renames.get(i).cloned().unwrap_or_else(|| c.clone())).collect();
        let scope = Scope::new(
            columns
                .iter()
                .zip(&table.types)
                .map(|(c, &t)| ScopeColumn { table: Some(qualifier.clone()), name: c.clone(), data_type: t, type_modifier: None })
                .collect(),
        );
        let label = ScanLabel { alias: Some(qualifier), columns };
        Some(From { source: Source::WorkTable { id: table.id, rows: Default::default(), types: table.types.clone(), label }, scope })
    })
}

/// Removes the working table pushed for a recursive term when planning it ends.
struct WorkTableGuard;

impl Drop for WorkTableGuard {
    fn drop(&mut self) {
        let _ = WORK_TABLES.try_with(|w| w.borrow_mut().pop());
    }
}

/// Plan a reference to the recursive CTE number `id` (`alias`: the reference's).
pub(crate) fn plan_recursive_reference(id: usize, alias: Option<&TableAlias>, ctx: &PlanContext) -> Result<From> {
    let found = RECURSIVE.with(|r| r.borrow().iter().find(|c| c.id == id).map(|c| (c.name.clone(), c.columns.clone(), c.query.clone())));
    let Some((name, cte_columns, query)) = found else {
        return Err(Error::internal("a recursive CTE planned outside its query"));
    };
    if query.order_by.is_some() {
        return Err(Error::not_supported("ORDER BY in a recursive query is not implemented"));
    }
    match &query.limit_clause {
        Some(ast::LimitClause::LimitOffset { offset: Some(_), limit: None, .. }) => {
            return Err(Error::not_supported("OFFSET in a recursive query is not implemented"))
        }
        Some(_) => return Err(Error::not_supported("LIMIT in a recursive query is not implemented")),
        None if query.fetch.is_some() => return Err(Error::not_supported("LIMIT in a recursive query is not implemented")),
        None => {}
    }
    if !query.locks.is_empty() {
        return Err(Error::not_supported("FOR UPDATE/SHARE in a recursive query is not implemented"));
    }
    if query.with.is_some() {
        return Err(Error::not_supported("WITH inside a recursive query is not supported"));
    }
    let SetExpr::SetOperation { op: ast::SetOperator::Union, set_quantifier, left, right } = query.body.as_ref() else {
        return Err(invalid_recursion(format!(
            "recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term"
        )));
    };
    let distinct = match set_quantifier {
        ast::SetQuantifier::All => false,
        ast::SetQuantifier::Distinct | ast::SetQuantifier::None => true,
        _ => return Err(Error::not_supported("UNION BY NAME is not supported")),
    };
    if references(left.as_ref(), &name) {
        return Err(invalid_recursion(format!("recursive reference to query \"{name}\" must not appear within its non-recursive term")));
    }
    check_recursive_term(right, &name)?;
    let first = crate::planner::plan_body(left, &[], ctx)?;
    if cte_columns.len() > first.columns.len() {
        return Err(Error::new(
            SqlState::INVALID_COLUMN_REFERENCE,
            format!("WITH query \"{name}\" has {} columns available but {} columns specified", first.columns.len(), cte_columns.len()),
        ));
    }
    let columns: Vec<String> =
        first.columns.iter().enumerate().map(|(i, c)| cte_columns.get(i).cloned().unwrap_or_else(|| c.name.clone())).collect();
    let types: Vec<DataType> = first.columns.iter().map(|c| c.data_type).collect();
    let work_id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let rest = {
        WORK_TABLES.with(|w| w.borrow_mut().push(WorkTable { name: name.clone(), id: work_id, columns: columns.clone(), types: types.clone() }));
        let _guard = WorkTableGuard;
        crate::planner::plan_body(right, &[], ctx)?
    };
    if rest.columns.len() != first.columns.len() {
        return Err(Error::new(SqlState::SYNTAX_ERROR, "each UNION query must have the same number of columns"));
    }
    let unknown = crate::setop::unknown_columns(&rest);
    for (i, (&t, r)) in types.iter().zip(&rest.columns).enumerate() {
        if unknown[i] || r.data_type == t {
            continue;
        }
        let overall = ex::common_type(&[t, r.data_type], "UNION")?;
        if overall != t {
            return Err(Error::new(
                SqlState::DATATYPE_MISMATCH,
                format!(
                    "recursive query \"{name}\" column {} has type {} in non-recursive term but type {} overall",
                    i + 1,
                    t.name(),
                    overall.name()
                ),
            )
            .with_hint("Cast the output of the non-recursive term to the correct type."));
        }
    }
    let recursive = crate::setop::cast_to(rest, &types, &unknown)?;
    let plan = Plan::RecursiveUnion(RecursiveUnionPlan {
        id: work_id,
        name: name.clone(),
        non_recursive: Box::new(first.plan),
        recursive: Box::new(recursive),
        distinct,
        stop_after: None,
    });
    let qualifier = alias.map(|a| ident_name(&a.name)).unwrap_or_else(|| name.clone());
    let renames: Vec<String> = alias.map(|a| a.columns.iter().map(|c| ident_name(&c.name)).collect()).unwrap_or_default();
    let shown: Vec<String> = columns.iter().enumerate().map(|(i, c)| renames.get(i).cloned().unwrap_or_else(|| c.clone())).collect();
    let scope = Scope::new(
        shown
            .iter()
            .zip(&types)
            .map(|(c, &t)| ScopeColumn { table: Some(qualifier.clone()), name: c.clone(), data_type: t, type_modifier: None })
            .collect(),
    );
    let label = ScanLabel { alias: Some(qualifier), columns: shown };
    Ok(From { source: Source::Subquery { plan: Box::new(plan), label }, scope })
}

/// PostgreSQL's rules for where the recursive term may name its query (`checkWellFormedRecursion`).
fn check_recursive_term(term: &SetExpr, name: &str) -> Result<()> {
    match term {
        SetExpr::Query(query) => {
            if query.order_by.is_some() && references(query.as_ref(), name) {
                return Err(Error::not_supported("ORDER BY in a recursive query is not implemented"));
            }
            check_recursive_term(&query.body, name)
        }
        SetExpr::SetOperation { op, left, right, .. } => {
            let what = match op {
                ast::SetOperator::Union => None,
                ast::SetOperator::Intersect => Some("INTERSECT"),
                _ => Some("EXCEPT"),
            };
            if let Some(what) = what {
                if references(term, name) {
                    return Err(invalid_recursion(format!("recursive reference to query \"{name}\" must not appear within {what}")));
                }
            }
            check_recursive_term(left, name)?;
            check_recursive_term(right, name)
        }
        SetExpr::Select(select) => check_select(select, name),
        _ => Ok(()),
    }
}

fn check_select(select: &ast::Select, name: &str) -> Result<()> {
    let direct = |factor: &TableFactor| matches!(factor, TableFactor::Table { name: n, args: None, .. } if n.0.len() == 1 && object_name(n).is_ok_and(|n| n == name));
    let mut count = 0;
    // (factor, on the nullable side of an outer join)
    fn factors<'f>(item: &'f ast::TableWithJoins, nullable: bool, out: &mut Vec<(&'f TableFactor, bool)>) {
        let mut left_nullable = nullable;
        let mut pieces: Vec<(&'f TableFactor, bool)> = Vec::new();
        nested(&item.relation, nullable, &mut pieces);
        for join in &item.joins {
            use ast::JoinOperator as J;
            let (left_null, right_null) = match &join.join_operator {
                J::Left(_) | J::LeftOuter(_) => (false, true),
                J::Right(_) | J::RightOuter(_) => (true, false),
                J::FullOuter(_) => (true, true),
                _ => (false, false),
            };
            if left_null {
                pieces.iter_mut().for_each(|p| p.1 = true);
                left_nullable = true;
            }
            nested(&join.relation, nullable || right_null, &mut pieces);
        }
        let _ = left_nullable;
        out.extend(pieces);
    }
    fn nested<'f>(factor: &'f TableFactor, nullable: bool, out: &mut Vec<(&'f TableFactor, bool)>) {
        match factor {
            TableFactor::NestedJoin { table_with_joins, .. } => factors(table_with_joins, nullable, out),
            other => out.push((other, nullable)),
        }
    }
    let mut all = Vec::new();
    for item in &select.from {
        factors(item, false, &mut all);
    }
    for (factor, nullable) in all {
        if direct(factor) {
            if nullable {
                return Err(invalid_recursion(format!("recursive reference to query \"{name}\" must not appear within an outer join")));
            }
            count += 1;
            if count > 1 {
                return Err(invalid_recursion(format!("recursive reference to query \"{name}\" must not appear more than once")));
            }
        } else if references(factor, name) {
            return Err(invalid_recursion(format!("recursive reference to query \"{name}\" must not appear within a subquery")));
        }
    }
    // Subqueries in expressions (select list, WHERE, GROUP BY, HAVING, ON).
    let in_expressions = select.projection.iter().any(|item| references(item, name))
        || select.selection.as_ref().is_some_and(|e| references(e, name))
        || select.having.as_ref().is_some_and(|e| references(e, name))
        || references(&select.group_by, name);
    if in_expressions {
        return Err(invalid_recursion(format!("recursive reference to query \"{name}\" must not appear within a subquery")));
    }
    // ON conditions of the joins may hold subqueries too.
    for item in &select.from {
        for join in &item.joins {
            if let Some(ast::JoinConstraint::On(on)) = join_constraint(&join.join_operator) {
                if references(on, name) {
                    return Err(invalid_recursion(format!("recursive reference to query \"{name}\" must not appear within a subquery")));
                }
            }
        }
    }
    if count == 1 {
        let aggregate = select.projection.iter().any(|item| match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => crate::bind::contains_aggregate(e),
            _ => false,
        }) || select.having.as_ref().is_some_and(crate::bind::contains_aggregate);
        if aggregate {
            return Err(invalid_recursion("aggregate functions are not allowed in a recursive query's recursive term".to_string()));
        }
    }
    Ok(())
}

fn join_constraint(op: &ast::JoinOperator) -> Option<&ast::JoinConstraint> {
    use ast::JoinOperator as J;
    match op {
        J::Join(c) | J::Inner(c) | J::Left(c) | J::LeftOuter(c) | J::Right(c) | J::RightOuter(c) | J::FullOuter(c) | J::CrossJoin(c) => Some(c),
        _ => None,
    }
}

