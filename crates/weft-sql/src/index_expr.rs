//! Expression and partial indexes: binding an index's expressions and predicate over its
//! table's columns (kept as SQL text in `IndexMeta`, bound again when used, as CHECK
//! constraints are), PostgreSQL's refusals, the text PostgreSQL prints for them, and the
//! `IndexRowMap` that turns a table row into the row an index takes its keys from.

use std::sync::Arc;

use sqlparser::ast;
use weft_access::catalog::{IndexMeta, TableMeta};
use weft_access::index_build::IndexRowMap;
use weft_common::tuple::RowLayout;
use weft_common::{Datum, Error, Result, SqlState};
use weft_exec::expr::{EvalContext, Expr};

use crate::bind::{contains_aggregate, Binder};

/// Where an expression of CREATE INDEX stands: PostgreSQL words its errors by it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexClause {
    Expression,
    Predicate,
}

impl IndexClause {
    fn noun(self) -> &'static str {
        match self {
            IndexClause::Expression => "index expression",
            IndexClause::Predicate => "index predicate",
        }
    }
}

/// Functions PostgreSQL marks STABLE or VOLATILE, refused in an index before binding
/// (some of them are not functions weft binds at all).
const NOT_IMMUTABLE: &[&str] = &[
    "random",
    "setseed",
    "nextval",
    "currval",
    "setval",
    "lastval",
    "now",
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "timeofday",
    "current_timestamp",
    "current_date",
    "current_time",
    "localtime",
    "localtimestamp",
    "current_setting",
    "pg_backend_pid",
    "gen_random_uuid",
];

fn not_immutable(clause: IndexClause) -> Error {
    Error::new(SqlState("42P17"), format!("functions in {} must be marked IMMUTABLE", clause.noun()))
}

/// Bind an index expression or predicate over `table`'s columns with PostgreSQL's checks.
pub(crate) fn bind_index_expr(table: &TableMeta, expr: &ast::Expr, clause: IndexClause) -> Result<Expr> {
    let mut subquery = false;
    let mut stable = false;
    let _ = crate::ast_walk::expressions(expr, |e| {
        match e {
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => subquery = true,
            ast::Expr::Function(f) => {
                let name = f.name.to_string().to_lowercase();
                let last = name.rsplit('.').next().unwrap_or(&name);
                stable |= NOT_IMMUTABLE.contains(&last);
            }
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    if subquery {
        return Err(Error::not_supported(format!("cannot use subquery in {}", clause.noun())));
    }
    if contains_aggregate(expr) {
        let what = match clause {
            IndexClause::Expression => "index expressions",
            IndexClause::Predicate => "index predicates",
        };
        return Err(Error::new(SqlState::GROUPING_ERROR, format!("aggregate functions are not allowed in {what}")));
    }
    if crate::window::contains_window(expr) {
        let what = match clause {
            IndexClause::Expression => "index expressions",
            IndexClause::Predicate => "index predicates",
        };
        return Err(Error::new(SqlState("42P20"), format!("window functions are not allowed in {what}")));
    }
    if stable {
        return Err(not_immutable(clause));
    }
    let scope = crate::modify::table_scope(table, &table.name);
    let bound = Binder::new(&scope).bind(expr)?;
    if crate::exprutil::is_volatile(&bound) {
        return Err(not_immutable(clause));
    }
    match clause {
        IndexClause::Expression => Ok(bound),
        IndexClause::Predicate => crate::planner::require_bool(bound, "WHERE"),
    }
}

/// Parse stored SQL text and bind it again.
pub(crate) fn rebind(table: &TableMeta, index: &str, text: &str, clause: IndexClause) -> Result<Expr> {
    let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|e| Error::internal(format!("stored {} of index \"{index}\" does not parse: {e}", clause.noun())))?;
    bind_index_expr(table, &parsed, clause)
}

/// A bound expression as PostgreSQL prints it over `table`'s columns.
pub(crate) fn display(table: &TableMeta, expr: &Expr) -> String {
    let columns: Vec<crate::deparse::ColumnText> =
        table.columns.iter().map(|c| crate::deparse::ColumnText::var(crate::deparse::quote_identifier(&c.name))).collect();
    crate::deparse::deparse(expr, &columns)
}

/// A predicate as psql's `\d` prints it (`pg_get_indexdef` pretty): AND / OR chains
/// without parentheses around their comparisons.
pub(crate) fn predicate_display(table: &TableMeta, expr: &Expr) -> String {
    use weft_exec::expr::BinaryOp;
    match expr {
        Expr::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), left, right, .. } => {
            let part = |e: &Expr| match e {
                Expr::Binary { op: inner @ (BinaryOp::And | BinaryOp::Or), .. } if inner != op => {
                    format!("({})", predicate_display(table, e))
                }
                _ => predicate_display(table, e),
            };
            let word = if *op == BinaryOp::And { "AND" } else { "OR" };
            format!("{} {word} {}", part(left), part(right))
        }
        _ => strip_parens(&display(table, expr)).to_string(),
    }
}

/// `text` without one pair of parentheses around all of it.
pub(crate) fn strip_parens(text: &str) -> &str {
    match text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        Some(inner) if balanced(inner) => inner,
        _ => text,
    }
}

fn balanced(text: &str) -> bool {
    let mut depth = 0i32;
    for c in text.chars() {
        depth += match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        };
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

/// An index column's expression as `pg_get_indexdef` prints it: a function call as is,
/// anything else in parentheses.
pub(crate) fn column_display(table: &TableMeta, expr: &Expr) -> String {
    let text = display(table, expr);
    if matches!(expr, Expr::Function { .. } | Expr::Coalesce { .. }) || strip_parens(&text) != text {
        text
    } else {
        format!("({text})")
    }
}

/// The name PostgreSQL derives an index column's part of a generated index name from.
pub(crate) fn name_part(expr: &ast::Expr) -> String {
    match crate::bind::column_name(expr).as_str() {
        "?column?" => "expr".to_string(),
        name => name.to_string(),
    }
}

/// The bound expressions and predicate of an index.
pub(crate) struct BoundIndex {
    pub expressions: Vec<Expr>,
    pub predicate: Option<Expr>,
}

pub(crate) fn bind_index(table: &TableMeta, index: &IndexMeta) -> Result<BoundIndex> {
    let expressions = index
        .expressions
        .iter()
        .map(|e| rebind(table, &index.name, &e.text, IndexClause::Expression))
        .collect::<Result<Vec<_>>>()?;
    let predicate = index.predicate.as_deref().map(|p| rebind(table, &index.name, p, IndexClause::Predicate)).transpose()?;
    Ok(BoundIndex { expressions, predicate })
}

/// Table rows to index rows for one expression or partial index.
struct IndexRow {
    table: RowLayout,
    index: RowLayout,
    bound: BoundIndex,
    eval: EvalContext,
}

impl IndexRow {
    /// The index row of a decoded table row; None when the predicate rejects it.
    fn values(&self, row: &[Datum]) -> Result<Option<Vec<Datum>>> {
        if let Some(predicate) = &self.bound.predicate {
            if !matches!(predicate.eval(row, &self.eval)?, Datum::Bool(true)) {
                return Ok(None);
            }
        }
        let mut values = Vec::with_capacity(row.len() + self.bound.expressions.len());
        values.extend_from_slice(row);
        for expr in &self.bound.expressions {
            values.push(expr.eval(row, &self.eval)?);
        }
        Ok(Some(values))
    }
}

impl IndexRowMap for IndexRow {
    fn map(&self, row: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let decoded = self.table.decode(row)?;
        match self.values(&decoded)? {
            None => Ok(false),
            Some(values) => {
                self.index.encode(&values, out)?;
                Ok(true)
            }
        }
    }
}

/// The row map of `index`, None for a plain index.
pub(crate) fn row_map(table: &TableMeta, index: &IndexMeta) -> Result<Option<Arc<dyn IndexRowMap>>> {
    if index.is_plain() {
        return Ok(None);
    }
    let bound = bind_index(table, index)?;
    for (expr, meta) in bound.expressions.iter().zip(&index.expressions) {
        if expr.data_type() != meta.data_type {
            return Err(Error::new(
                SqlState::INDEX_CORRUPTED,
                format!("expression {} of index \"{}\" no longer has type {}", meta.display, index.name, meta.data_type.name()),
            ));
        }
    }
    Ok(Some(Arc::new(IndexRow {
        table: RowLayout::new(&table.column_types()),
        index: RowLayout::new(&index.row_types(table)),
        bound,
        eval: EvalContext::new(),
    })))
}
