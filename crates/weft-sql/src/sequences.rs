//! CREATE SEQUENCE and DROP SEQUENCE. Serial columns make theirs in `statements.rs`;
//! the values move at run time in `weft_exec::expr::Sequences`.

use sqlparser::ast;
use weft_access::catalog::SequenceMeta;
use weft_common::{DataType, Error, Result, SqlState};

use crate::api::QueryResult;
use crate::bind::{object_name, sql_type};
use crate::session::Session;

/// An option's integer value (`INCREMENT BY -2`, `START 10`).
fn option_value(expr: &ast::Expr) -> Result<i64> {
    let (negative, inner) = match expr {
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => (true, expr.as_ref()),
        other => (false, other),
    };
    let ast::Expr::Value(value) = inner else { return Err(Error::syntax(format!("syntax error at or near \"{expr}\""))) };
    let ast::Value::Number(text, _) = &value.value else {
        return Err(Error::syntax(format!("syntax error at or near \"{expr}\"")));
    };
    let v: i64 = text
        .parse()
        .map_err(|_| Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, format!("value \"{text}\" is out of range for type bigint")))?;
    Ok(if negative { -v } else { v })
}

/// `CREATE SEQUENCE [IF NOT EXISTS] name [AS type] [INCREMENT [BY] n] [MINVALUE n | NO
/// MINVALUE] [MAXVALUE n | NO MAXVALUE] [START [WITH] n] [CACHE n] [NO CYCLE]`, with
/// PostgreSQL's defaults and checks.
pub fn create_sequence(
    session: &mut Session,
    name: &ast::ObjectName,
    if_not_exists: bool,
    data_type: Option<&ast::DataType>,
    options: &[ast::SequenceOptions],
) -> Result<QueryResult> {
    let name = object_name(name)?;
    let data_type = match data_type.map(sql_type).transpose()? {
        None => DataType::Int8,
        Some(t @ (DataType::Int4 | DataType::Int8)) => t,
        Some(_) => {
            return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, "sequence type must be smallint, integer, or bigint"))
        }
    };
    let type_max = if data_type == DataType::Int4 { i32::MAX as i64 } else { i64::MAX };
    let type_min = if data_type == DataType::Int4 { i32::MIN as i64 } else { i64::MIN };
    let (mut increment, mut min, mut max, mut start) = (1i64, None, None, None);
    for option in options {
        match option {
            ast::SequenceOptions::IncrementBy(e, _) => increment = option_value(e)?,
            ast::SequenceOptions::MinValue(e) => min = e.as_ref().map(option_value).transpose()?,
            ast::SequenceOptions::MaxValue(e) => max = e.as_ref().map(option_value).transpose()?,
            ast::SequenceOptions::StartWith(e, _) => start = Some(option_value(e)?),
            ast::SequenceOptions::Cache(_) | ast::SequenceOptions::Cycle(false) => {}
            ast::SequenceOptions::Cycle(true) => return Err(Error::not_supported("CYCLE sequences are not supported yet")),
        }
    }
    if increment == 0 {
        return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, "INCREMENT must not be zero"));
    }
    let min_value = min.unwrap_or(if increment > 0 { 1 } else { type_min });
    let max_value = max.unwrap_or(if increment > 0 { type_max } else { -1 });
    for (label, v) in [("MINVALUE", min_value), ("MAXVALUE", max_value)] {
        if v < type_min || v > type_max {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!("{label} ({v}) is out of range for sequence data type {}", data_type.name()),
            ));
        }
    }
    if min_value >= max_value {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("MINVALUE ({min_value}) must be less than MAXVALUE ({max_value})"),
        ));
    }
    let start = start.unwrap_or(if increment > 0 { min_value } else { max_value });
    if start < min_value {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("START value ({start}) cannot be less than MINVALUE ({min_value})"),
        ));
    }
    if start > max_value {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("START value ({start}) cannot be greater than MAXVALUE ({max_value})"),
        ));
    }
    let mut notices = Vec::new();
    session.write(|txn| {
        if txn.catalog.relation_exists(&name) {
            if if_not_exists {
                notices.push(format!("NOTICE:  relation \"{name}\" already exists, skipping"));
                return Ok(());
            }
            return Err(Error::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists")));
        }
        let sequence = SequenceMeta {
            name: name.clone(),
            data_type,
            increment,
            min_value,
            max_value,
            start,
            last_value: start,
            is_called: false,
            owned_by: None,
        };
        txn.catalog.sequences.insert(name.clone(), sequence);
        Ok(())
    })?;
    Ok(QueryResult::command_with_notices("CREATE SEQUENCE", notices))
}

/// `DROP SEQUENCE [IF EXISTS] a, b`. A serial column's sequence goes only with its table.
pub fn drop_sequences(session: &mut Session, names: &[ast::ObjectName], if_exists: bool) -> Result<QueryResult> {
    let mut notices = Vec::new();
    session.write(|txn| {
        for name in names {
            let name = object_name(name)?;
            match txn.catalog.sequences.get(&name) {
                Some(SequenceMeta { owned_by: Some((table, column)), .. }) => {
                    return Err(Error::new(
                        SqlState::DEPENDENT_OBJECTS_STILL_EXIST,
                        format!("cannot drop sequence {name} because other objects depend on it"),
                    )
                    .with_detail(format!("default value for column {column} of table {table} depends on sequence {name}"))
                    .with_hint("Use DROP ... CASCADE to drop the dependent objects too."))
                }
                Some(_) => {
                    txn.catalog.sequences.remove(&name);
                }
                None if txn.catalog.relation_exists(&name) => {
                    return Err(Error::new(SqlState::WRONG_OBJECT_TYPE, format!("\"{name}\" is not a sequence"))
                        .with_hint("Use DROP TABLE to remove a table."));
                }
                None if if_exists => notices.push(format!("NOTICE:  sequence \"{name}\" does not exist, skipping")),
                None => {
                    return Err(Error::new(SqlState::UNDEFINED_TABLE, format!("sequence \"{name}\" does not exist")))
                }
            }
        }
        Ok(())
    })?;
    Ok(QueryResult::command_with_notices("DROP SEQUENCE", notices))
}
