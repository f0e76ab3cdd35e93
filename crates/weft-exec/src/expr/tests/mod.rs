//! Tests of expression resolution and evaluation. Expected values were produced by
//! running the same SQL on PostgreSQL 15 (`psql -At`, so NULL shows as an empty string);
//! the query is quoted next to each group.

mod cast_tests;
mod eval_tests;
mod prop_tests;
mod resolve_tests;

use weft_common::{DataType, Datum, Error, Numeric, Result};

use super::{resolve_binary, resolve_function, resolve_unary, BinaryOp, EvalContext, Expr, UnaryOp};

pub fn lit(value: Datum) -> Expr {
    let data_type = value.data_type().unwrap_or(DataType::Text);
    Expr::Literal { value, data_type }
}

/// An untyped `NULL` literal, as the binder produces it.
pub fn null() -> Expr {
    Expr::Literal { value: Datum::Null, data_type: DataType::Text }
}

pub fn i4(v: i32) -> Expr {
    lit(Datum::Int4(v))
}

pub fn i8(v: i64) -> Expr {
    lit(Datum::Int8(v))
}

pub fn f8(v: f64) -> Expr {
    lit(Datum::Float8(v))
}

pub fn text(s: &str) -> Expr {
    lit(Datum::Text(s.to_string()))
}

pub fn boolean(b: bool) -> Expr {
    lit(Datum::Bool(b))
}

pub fn num(s: &str) -> Expr {
    lit(Datum::Numeric(Numeric::parse(s).expect("test numeric literal")))
}

pub fn eval(e: &Expr) -> Result<Datum> {
    e.eval(&[], &EvalContext::with_seed(7))
}

/// What `psql -At` prints for a value: NULL is empty.
pub fn show(d: Datum) -> String {
    d.to_pg_text().unwrap_or_default()
}

/// Resolves and evaluates `left op right`, shown as psql would.
pub fn binop(op: BinaryOp, left: Expr, right: Expr) -> Result<String> {
    Ok(show(eval(&resolve_binary(op, left, right)?)?))
}

pub fn unop(op: UnaryOp, e: Expr) -> Result<String> {
    Ok(show(eval(&resolve_unary(op, e)?)?))
}

pub fn call(name: &str, args: Vec<Expr>) -> Result<String> {
    Ok(show(eval(&resolve_function(name, args)?)?))
}

/// `SQLSTATE: message`, the way `psql -v VERBOSITY=verbose` starts its error line.
pub fn err<T: std::fmt::Debug>(r: Result<T>) -> String {
    let e: Error = r.expect_err("expected an error");
    format!("{}: {}", e.sqlstate.0, e.message)
}
