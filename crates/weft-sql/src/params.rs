//! Bind parameters (`$1`, `$2`, ...) for the wire protocol's extended queries.
//!
//! weft's SQL layer has no parameter nodes: a statement with parameters is parsed, each
//! `$n` is replaced in the AST by a string literal of the parameter's text (untyped, as
//! PostgreSQL's `unknown`, which the binder coerces by context) or by NULL, wrapped in a
//! cast when the client declared the parameter's type, and the statement is run as the
//! SQL text the rewritten AST prints. A statement without parameters runs as written.
//!
//! Parameter types are found as PostgreSQL finds the simple cases: a declared type, else
//! the type of a cast written on the parameter (`$1::int`), bigint for LIMIT / OFFSET, the
//! target column of an `INSERT ... VALUES` row or of `UPDATE ... SET`, or the column a
//! parameter is compared with (`col = $1`, `IN`, `BETWEEN`); anything else is text.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Expr, Statement, Value, VisitorMut};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use weft_common::{DataType, Error, Result, SqlState};

use crate::api::{ColumnInfo, QueryResult};
use crate::session::Session;

/// The `$n` of a placeholder token, if it is one (1-based).
fn placeholder_index(value: &Value) -> Option<usize> {
    match value {
        Value::Placeholder(text) => text.strip_prefix('$')?.parse().ok().filter(|n| *n > 0),
        _ => None,
    }
}

fn placeholder_of(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Value(value) => placeholder_index(&value.value),
        Expr::Nested(inner) => placeholder_of(inner),
        _ => None,
    }
}

/// A column's name as written (`a`, `t.a`: `a`).
fn column_of(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(ident) => Some(crate::bind::ident_name(ident)),
        Expr::CompoundIdentifier(idents) => idents.last().map(crate::bind::ident_name),
        Expr::Nested(inner) => column_of(inner),
        _ => None,
    }
}

/// Finds the highest `$n`, the types casts give parameters, and the columns parameters are
/// compared with or assigned to.
#[derive(Default)]
struct Scan {
    count: usize,
    cast_types: Vec<Option<DataType>>,
    /// (parameter, column name): `col = $1`, `col IN ($1)`, `col BETWEEN $1 AND $2`, `SET col = $1`.
    columns: Vec<(usize, String)>,
    /// LIMIT / OFFSET parameters: bigint.
    counts: Vec<usize>,
}

impl Scan {
    fn pair(&mut self, column: &Expr, parameter: &Expr) {
        if let (Some(column), Some(n)) = (column_of(column), placeholder_of(parameter)) {
            self.columns.push((n, column));
        }
    }

    fn set_type(&mut self, n: usize, data_type: DataType) {
        if self.cast_types.len() < n {
            self.cast_types.resize(n, None);
        }
        self.cast_types[n - 1].get_or_insert(data_type);
    }
}

impl VisitorMut for Scan {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        if let Some(ast::LimitClause::LimitOffset { limit, offset, .. }) = &query.limit_clause {
            self.counts.extend(limit.iter().chain(offset.iter().map(|o| &o.value)).filter_map(placeholder_of));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_statement(&mut self, statement: &mut Statement) -> ControlFlow<()> {
        if let Statement::Update(update) = statement {
            for assignment in &update.assignments {
                if let (ast::AssignmentTarget::ColumnName(name), Some(n)) = (&assignment.target, placeholder_of(&assignment.value)) {
                    if let Some(column) = name.0.last().and_then(|part| part.as_ident()) {
                        self.columns.push((n, crate::bind::ident_name(column)));
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::BinaryOp { left, right, .. } => {
                self.pair(left, right);
                self.pair(right, left);
            }
            Expr::InList { expr: column, list, .. } => list.iter().for_each(|item| self.pair(column, item)),
            Expr::Between { expr: column, low, high, .. } => {
                self.pair(column, low);
                self.pair(column, high);
            }
            _ => {}
        }
        if let Expr::Value(value) = expr {
            if let Some(n) = placeholder_index(&value.value) {
                self.count = self.count.max(n);
            }
        }
        if let Expr::Cast { expr: inner, data_type, .. } = expr {
            if let (Some(n), Ok(data_type)) = (placeholder_of(inner), crate::bind::sql_type(data_type)) {
                self.set_type(n, data_type);
            }
        }
        ControlFlow::Continue(())
    }
}

/// Replaces each `$n` by its parameter.
struct Substitute<'a> {
    replacements: &'a [Expr],
    missing: Option<usize>,
}

impl VisitorMut for Substitute<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Value(value) = expr {
            if let Some(n) = placeholder_index(&value.value) {
                match self.replacements.get(n - 1) {
                    Some(replacement) => *expr = replacement.clone(),
                    None => {
                        self.missing = Some(n);
                        return ControlFlow::Break(());
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Put `replacements[n - 1]` in place of each `$n` of `statement`.
pub(crate) fn substitute_parameters(statement: &mut Statement, replacements: &[Expr]) -> Result<()> {
    let mut substitute = Substitute { replacements, missing: None };
    let _ = crate::ast_walk::walk_mut(statement, &mut substitute);
    match substitute.missing {
        Some(n) => Err(Error::new(SqlState("42P02"), format!("there is no parameter ${n}"))),
        None => Ok(()),
    }
}

/// The highest `$n` in `statement` (0 for none).
pub(crate) fn highest_parameter(statement: &Statement) -> usize {
    let mut scan = Scan::default();
    let _ = crate::ast_walk::walk_mut(&mut statement.clone(), &mut scan);
    scan.count
}

/// The SQL expression a parameter becomes: `'text'`, NULL, or either cast to its type.
fn parameter_expr(value: Option<&str>, data_type: Option<DataType>) -> Result<Expr> {
    let literal = match value {
        Some(text) => format!("'{}'", text.replace('\'', "''")),
        None => "NULL".to_string(),
    };
    let text = match data_type {
        Some(data_type) => format!("CAST({literal} AS {})", data_type.name()),
        None => literal,
    };
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&text)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|e| Error::internal(format!("could not build parameter expression: {e}")))
}

/// One statement, as the extended protocol allows (PostgreSQL: 42601).
fn single_statement(sql: &str) -> Result<Statement> {
    let mut statements = crate::parse::parse_statements(sql)?;
    match statements.len() {
        1 => Ok(statements.remove(0)),
        0 => Err(Error::syntax("empty statement")),
        _ => Err(Error::new(SqlState::SYNTAX_ERROR, "cannot insert multiple commands into a prepared statement")),
    }
}

impl Session {
    /// The parameters of a statement about to be prepared: one entry per `$n` up to the
    /// highest used, with the type found for it (`None`: text/unknown). Text that does not
    /// parse yet holds no `$` (REINDEX, VACUUM) has none; its errors come when it runs.
    /// A statement that does not parse fails an open transaction block, as in PostgreSQL.
    pub fn parameter_types(&mut self, sql: &str) -> Result<Vec<Option<DataType>>> {
        let mut statement = match single_statement(sql) {
            Ok(statement) => statement,
            Err(_) if !sql.contains('$') => return Ok(Vec::new()),
            Err(e) => {
                self.fail_block();
                return Err(e);
            }
        };
        let mut scan = Scan::default();
        let _ = crate::ast_walk::walk_mut(&mut statement, &mut scan);
        for n in std::mem::take(&mut scan.counts) {
            scan.set_type(n, DataType::Int8);
        }
        let mut types = std::mem::take(&mut scan.cast_types);
        types.resize(scan.count, None);
        if let Statement::Insert(insert) = &statement {
            self.insert_parameter_types(insert, &mut types);
        }
        self.column_parameter_types(&statement, &scan.columns, &mut types);
        Ok(types)
    }

    /// A parameter compared with or assigned to a column takes the column's type when every
    /// table the statement names that has such a column agrees on it. A guess (the binder
    /// still coerces the untyped literal by context): it only tells the client how to send.
    fn column_parameter_types(&self, statement: &Statement, columns: &[(usize, String)], types: &mut [Option<DataType>]) {
        if columns.is_empty() {
            return;
        }
        let catalog = self.catalog();
        let mut tables = Vec::new();
        let _ = crate::ast_walk::relations(statement, |name| {
            if let Some(table) = crate::bind::object_name(name).ok().and_then(|name| catalog.tables.get(&name)) {
                tables.push(table);
            }
            ControlFlow::Continue(())
        });
        for (n, column) in columns {
            let Some(slot @ None) = types.get_mut(n - 1) else { continue };
            let mut found = tables.iter().filter_map(|t| t.column_index(column).map(|i| t.columns[i].data_type));
            if let Some(first) = found.next() {
                if found.all(|t| t == first) {
                    *slot = Some(first);
                }
            }
        }
    }

    /// `INSERT INTO t (cols) VALUES ($1, ...)`: a bare parameter takes its column's type.
    fn insert_parameter_types(&self, insert: &ast::Insert, types: &mut [Option<DataType>]) {
        let Some(ast::SetExpr::Values(values)) = insert.source.as_ref().map(|q| q.body.as_ref()) else { return };
        let Ok(name) = crate::statements::insert_table_name(insert) else { return };
        let catalog = self.catalog();
        let Some(table) = catalog.tables.get(&name) else { return };
        let Ok(names) = insert.columns.iter().map(crate::bind::object_name).collect::<Result<Vec<_>>>() else { return };
        let Ok(targets) = crate::statements::target_columns(table, &names) else { return };
        for row in &values.rows {
            for (expr, &column) in row.iter().zip(&targets) {
                if let Some(n) = placeholder_of(expr) {
                    if let Some(slot) = types.get_mut(n - 1) {
                        slot.get_or_insert(table.columns[column].data_type);
                    }
                }
            }
        }
    }

    /// Run one statement with its parameters' texts (`None`: NULL). See the module header.
    pub fn execute_with_params(&mut self, sql: &str, params: &[Option<String>]) -> Result<QueryResult> {
        self.execute_with_typed_params(sql, params, &[])
    }

    /// [`Session::execute_with_params`] with the types the client declared, by parameter
    /// (`None`, or none given: untyped): each such parameter is cast to its type.
    pub fn execute_with_typed_params(&mut self, sql: &str, params: &[Option<String>], types: &[Option<DataType>]) -> Result<QueryResult> {
        match self.substituted(sql, params, types) {
            // An error's place in the rewritten text is no place in the client's.
            Ok(Some(text)) => self.execute(&text).map_err(|mut e| {
                e.cursor = None;
                e
            }),
            Ok(None) => self.execute(sql),
            Err(e) => {
                self.fail_block();
                Err(e)
            }
        }
    }

    /// The SQL text with the parameters in place; `None` when it has no parameters (it then
    /// runs as written, also when sqlparser cannot read it: REINDEX, VACUUM).
    fn substituted(&self, sql: &str, params: &[Option<String>], types: &[Option<DataType>]) -> Result<Option<String>> {
        if params.is_empty() && !sql.contains('$') {
            return Ok(None);
        }
        let mut statement = match single_statement(sql) {
            Ok(statement) => statement,
            Err(_) if params.is_empty() => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut scan = Scan::default();
        let _ = crate::ast_walk::walk_mut(&mut statement, &mut scan);
        if scan.count == 0 && params.is_empty() {
            return Ok(None);
        }
        if scan.count > params.len() {
            return Err(Error::new(SqlState("08P01"), format!("bind message supplies {} parameters, but prepared statement requires {}", params.len(), scan.count)));
        }
        let replacements = params
            .iter()
            .enumerate()
            .map(|(i, value)| parameter_expr(value.as_deref(), types.get(i).copied().flatten()))
            .collect::<Result<Vec<_>>>()?;
        substitute_parameters(&mut statement, &replacements)?;
        Ok(Some(statement.to_string()))
    }

    /// The result columns a statement would return, without running it: `Some` for a query
    /// (planned with the parameters given, `None` ones as NULL), SHOW, EXPLAIN, an
    /// INSERT / UPDATE / DELETE with RETURNING; `None` for a statement that returns no rows
    /// (or whose RETURNING columns are not found before running it: UPDATE ... FROM,
    /// DELETE ... USING).
    /// An error (the statement does not plan) fails an open block, as PostgreSQL's analysis
    /// at Parse does.
    pub fn describe_with_params(&mut self, sql: &str, params: &[Option<String>], types: &[Option<DataType>]) -> Result<Option<Vec<ColumnInfo>>> {
        let outcome = self.describe_substituted(sql, params, types);
        if outcome.is_err() {
            self.fail_block();
        }
        outcome
    }

    fn describe_substituted(&self, sql: &str, params: &[Option<String>], types: &[Option<DataType>]) -> Result<Option<Vec<ColumnInfo>>> {
        // Planning folds constants, in the session's zone.
        weft_common::timezone::set_current(self.time_zone());
        let text = self.substituted(sql, params, types)?;
        let rewritten = text.is_some();
        self.describe_text(text.as_deref().unwrap_or(sql)).map_err(|mut e| {
            if rewritten {
                e.cursor = None;
                e
            } else {
                e.located_in(sql)
            }
        })
    }

    fn describe_text(&self, sql: &str) -> Result<Option<Vec<ColumnInfo>>> {
        let Ok(statement) = single_statement(sql) else { return Ok(None) };
        let text_column = |name: &str| ColumnInfo { name: name.to_string(), data_type: DataType::Text, type_modifier: None };
        Ok(match &statement {
            Statement::Query(query) => Some(crate::statements::plan_output(self, &self.catalog(), query)?.columns),
            Statement::Explain { .. } => Some(vec![text_column("QUERY PLAN")]),
            Statement::ShowVariable { variable } => {
                let name = variable.iter().map(|i| i.value.clone()).collect::<Vec<_>>().join(" ");
                if name.eq_ignore_ascii_case("all") {
                    Some(["name", "setting", "description"].iter().map(|n| text_column(n)).collect())
                } else {
                    Some(vec![text_column(&name.to_lowercase())])
                }
            }
            Statement::Insert(insert) if insert.returning.is_some() => {
                let catalog = self.catalog();
                let name = crate::statements::insert_table_name(insert)?;
                let Some(table) = catalog.tables.get(&name) else { return Ok(None) };
                let scope = crate::statements::insert_scope(table, insert);
                self.returning_columns(insert.returning.as_ref(), &scope)?
            }
            Statement::Update(update) if update.returning.is_some() && update.from.is_none() => {
                self.target_returning_columns(&update.table, update.returning.as_ref())?
            }
            Statement::Delete(delete) if delete.returning.is_some() && delete.using.is_none() => {
                let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) = &delete.from;
                match from.as_slice() {
                    [target] => self.target_returning_columns(target, delete.returning.as_ref())?,
                    _ => None,
                }
            }
            _ => None,
        })
    }

    fn returning_columns(&self, items: Option<&Vec<ast::SelectItem>>, scope: &crate::bind::Scope) -> Result<Option<Vec<ColumnInfo>>> {
        let catalog = self.catalog();
        let returning = crate::statements::with_plan_context(self, &catalog, |ctx| crate::returning::Returning::bind(items, scope, ctx))?;
        Ok(returning.map(|r| r.columns))
    }

    /// RETURNING of an UPDATE / DELETE of one table without FROM / USING: over its columns.
    fn target_returning_columns(&self, target: &ast::TableWithJoins, items: Option<&Vec<ast::SelectItem>>) -> Result<Option<Vec<ColumnInfo>>> {
        let ast::TableFactor::Table { name, alias, args: None, .. } = &target.relation else { return Ok(None) };
        if !target.joins.is_empty() {
            return Ok(None);
        }
        let name = crate::bind::object_name(name)?;
        let alias = alias.as_ref().map_or_else(|| name.clone(), |a| crate::bind::ident_name(&a.name));
        let catalog = self.catalog();
        let Some(table) = catalog.tables.get(&name) else { return Ok(None) };
        self.returning_columns(items, &crate::modify::table_scope(table, &alias))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_become_literals() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path(), &[]).unwrap();
        let mut session = db.session();
        let result = session.execute_with_params("SELECT $1::int + 1, $2 || 'b', $3 IS NULL", &[Some("41".into()), Some("a'".into()), None]).unwrap();
        let row: Vec<_> = result.rows[0].iter().map(|d| d.to_pg_text()).collect();
        assert_eq!(row, [Some("42".into()), Some("a'b".into()), Some("t".into())]);
        assert_eq!(session.parameter_types("SELECT $2::bigint, $1").unwrap(), [None, Some(DataType::Int8)]);
        session.execute("CREATE TABLE t (a int, b text, c float8)").unwrap();
        let types = session.parameter_types("SELECT * FROM t AS x WHERE x.a = $1 AND $2 < c OR b IN ($3) LIMIT $4").unwrap();
        assert_eq!(types, [Some(DataType::Int4), Some(DataType::Float8), Some(DataType::Text), Some(DataType::Int8)]);
        let types = session.parameter_types("UPDATE t SET c = $1 WHERE a BETWEEN $2 AND $3").unwrap();
        assert_eq!(types, [Some(DataType::Float8), Some(DataType::Int4), Some(DataType::Int4)]);
        let err = session.execute_with_params("SELECT $2", &[Some("1".into())]).unwrap_err();
        assert_eq!(err.sqlstate, SqlState("08P01"));
    }
}
