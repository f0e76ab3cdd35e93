//! SQL-level prepared statements: `PREPARE name [(types)] AS statement`,
//! `EXECUTE name [(arguments)]` (also under EXPLAIN) and `DEALLOCATE [PREPARE] name | ALL`.
//!
//! A prepared statement is kept per session as its parsed statement, checked when it is
//! prepared (a query or RETURNING is planned, with NULL for each parameter, so a missing
//! table or column is an error then, as in PostgreSQL). EXECUTE puts each argument
//! expression in place of its `$n` — cast to the declared type when PREPARE gave one — and
//! runs the result; it is planned afresh each time (PostgreSQL's custom plans).
//! The statements live until DEALLOCATE or the session's end; a rollback keeps them.
//! The wire protocol's named statements are kept apart, by the server.

use sqlparser::ast::{self, Expr, Statement};
use weft_common::{Error, Result, SqlState};

use crate::api::QueryResult;
use crate::bind::ident_name;
use crate::session::Session;

/// A statement PREPARE kept.
#[derive(Clone)]
pub(crate) struct Prepared {
    statement: Statement,
    /// The declared parameter types, as written (`numeric(6,2)` keeps its modifier).
    types: Vec<ast::DataType>,
    /// How many arguments EXECUTE must give: the declared types, or the highest `$n`.
    parameters: usize,
}

fn does_not_exist(name: &str) -> Error {
    Error::new(SqlState("26000"), format!("prepared statement \"{name}\" does not exist"))
}

pub(crate) fn prepare(session: &mut Session, name: &ast::Ident, types: &[ast::DataType], statement: &Statement) -> Result<QueryResult> {
    let name = ident_name(name);
    if session.prepared.contains_key(&name) {
        return Err(Error::new(SqlState("42P05"), format!("prepared statement \"{name}\" already exists")));
    }
    let declared = types.iter().map(|t| Ok(Some(crate::bind::sql_type(t)?))).collect::<Result<Vec<_>>>()?;
    if !matches!(statement, Statement::Query(_) | Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)) {
        return Err(Error::syntax(format!("syntax error at or near \"{}\"", statement.to_string().split_whitespace().next().unwrap_or(""))));
    }
    let parameters = crate::params::highest_parameter(statement).max(types.len());
    // Checked now with every parameter NULL (of its declared type).
    let nulls: Vec<Option<String>> = vec![None; parameters];
    session.describe_with_params(&statement.to_string(), &nulls, &declared)?;
    session.prepared.insert(name, Prepared { statement: statement.clone(), types: types.to_vec(), parameters });
    Ok(QueryResult::command("PREPARE"))
}

/// The statement `EXECUTE name (arguments)` runs: the prepared one with the arguments in
/// place of its parameters.
pub(crate) fn bound_statement(session: &Session, name: Option<&ast::ObjectName>, arguments: &[Expr]) -> Result<Statement> {
    let name = match name {
        Some(name) => crate::bind::object_name(name)?,
        None => return Err(Error::syntax("syntax error at or near \"EXECUTE\"")),
    };
    let prepared = session.prepared.get(&name).ok_or_else(|| does_not_exist(&name))?;
    if arguments.len() != prepared.parameters {
        return Err(Error::syntax(format!("wrong number of parameters for prepared statement \"{name}\""))
            .with_detail(format!("Expected {} parameters but got {}.", prepared.parameters, arguments.len())));
    }
    let replacements: Vec<Expr> = arguments
        .iter()
        .enumerate()
        .map(|(i, argument)| {
            let argument = Expr::Nested(Box::new(argument.clone()));
            match prepared.types.get(i) {
                Some(data_type) => Expr::Cast { kind: ast::CastKind::Cast, expr: Box::new(argument), data_type: data_type.clone(), format: None },
                None => argument,
            }
        })
        .collect();
    let mut statement = prepared.statement.clone();
    crate::params::substitute_parameters(&mut statement, &replacements)?;
    Ok(statement)
}

pub(crate) fn deallocate(session: &mut Session, name: &ast::Ident) -> Result<QueryResult> {
    // sqlparser reads `DEALLOCATE ALL` as a statement named "ALL"; a quoted "ALL" is a name.
    if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") {
        session.prepared.clear();
        return Ok(QueryResult::command("DEALLOCATE ALL"));
    }
    let name = ident_name(name);
    match session.prepared.remove(&name) {
        Some(_) => Ok(QueryResult::command("DEALLOCATE")),
        None => Err(does_not_exist(&name)),
    }
}
