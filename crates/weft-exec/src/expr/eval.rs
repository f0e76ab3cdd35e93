//! Evaluation of a resolved [`Expr`] over one row.
//!
//! Rules (PostgreSQL's, for the operand types resolution leaves behind):
//!
//! 1. `AND`/`OR`/`NOT` use three-valued logic; `AND` stops at the first false, `OR` at
//!    the first true, so `false AND NULL` is false and `true OR NULL` is true.
//! 2. Every other operator and every function but `NULLIF`, `GREATEST` and `LEAST` is
//!    strict: a NULL operand gives NULL.
//! 3. int4/int8 arithmetic is checked: overflow is `integer out of range` /
//!    `bigint out of range` (22003), including `i32::MIN / -1`; division truncates
//!    toward zero; `x % 0` and `x / 0` are `division by zero` (22012); `i32::MIN % -1` is 0.
//! 4. float8 arithmetic follows `float.h`: a finite operation that yields ±∞ is
//!    `value out of range: overflow`, one that yields 0 from non-zero operands is
//!    `value out of range: underflow`; `x / 0` is division by zero unless `x` is NaN.
//! 5. `CASE` returns the result of the first condition that is true (not NULL);
//!    `COALESCE` the first non-NULL argument; neither evaluates what it does not return.

use std::borrow::Cow;
use std::cmp::Ordering;

use weft_common::{Coercion, DataType, Datum, Error, Numeric, Result, SqlState, TypeModifier};

use super::cast::cast_datum;
use super::functions::char_count_i32;
use super::compare::compare_datums;
use super::{BinaryOp, EvalContext, Expr, UnaryOp};

impl Expr {
    /// Evaluates the expression over `row` (the input columns by index).
    pub fn eval(&self, row: &[Datum], ctx: &EvalContext) -> Result<Datum> {
        match self {
            Expr::Column { index, .. } => row
                .get(*index)
                .cloned()
                .ok_or_else(|| Error::internal(format!("column {index} out of range for a row of {}", row.len()))),
            Expr::Literal { value, .. } => Ok(value.clone()),
            Expr::Cast { expr, to } => cast_datum(expr.eval(row, ctx)?, *to),
            Expr::ApplyModifier { expr, modifier, coercion } => eval_modifier(expr, *modifier, *coercion, row, ctx),
            Expr::Binary { op: BinaryOp::And, left, right, .. } => eval_and(left, right, row, ctx),
            Expr::Binary { op: BinaryOp::Or, left, right, .. } => eval_or(left, right, row, ctx),
            Expr::Binary { op, left, right, data_type } if int_arithmetic(self) => Ok(match int_arith(*op, left, right, *data_type, row, ctx)? {
                Some(v) if *data_type == DataType::Int4 => Datum::Int4(v as i32),
                Some(v) => Datum::Int8(v),
                None => Datum::Null,
            }),
            Expr::Binary { op, left, right, .. } if is_int(left.data_type()) && is_int(right.data_type()) && comparison(*op).is_some() => {
                // Integers compared as integers: no `Datum` built for an operand that is
                // itself arithmetic, no general comparison.
                let (left, right) = (left.eval_int(row, ctx)?, right.eval_int(row, ctx)?);
                Ok(match (left, right, comparison(*op)) {
                    (Some(a), Some(b), Some(ord)) => Datum::Bool(ord(a.cmp(&b))),
                    _ => Datum::Null,
                })
            }
            Expr::Binary { op, left, right, .. } => {
                // Operands borrowed where they are columns or literals: a text column is
                // compared in place, not cloned.
                // Both operands are evaluated before the NULL test, as PostgreSQL evaluates
                // a strict operator's arguments: `NULL + (i + i)` still raises the
                // overflow of `i + i`.
                let left = left.eval_borrowed(row, ctx)?;
                let right = right.eval_borrowed(row, ctx)?;
                if left.is_null() || right.is_null() {
                    return Ok(Datum::Null);
                }
                if let Some(ord) = comparison(*op) {
                    return Ok(Datum::Bool(ord(compare_datums(&left, &right))));
                }
                eval_binary(*op, left.into_owned(), right.into_owned())
            }
            Expr::Unary { op, expr, .. } => eval_unary(*op, expr.eval(row, ctx)?),
            Expr::IsNull { expr, negated } => Ok(Datum::Bool(expr.eval(row, ctx)?.is_null() != *negated)),
            Expr::Case { whens, otherwise, .. } => {
                for (condition, result) in whens {
                    if condition.eval(row, ctx)? == Datum::Bool(true) {
                        return result.eval(row, ctx);
                    }
                }
                match otherwise {
                    Some(otherwise) => otherwise.eval(row, ctx),
                    None => Ok(Datum::Null),
                }
            }
            Expr::Coalesce { args, .. } => {
                for arg in args {
                    let value = arg.eval(row, ctx)?;
                    if !value.is_null() {
                        return Ok(value);
                    }
                }
                Ok(Datum::Null)
            }
            Expr::Function { func, args, .. } if args.len() == 1 => {
                let value = args[0].eval_borrowed(row, ctx)?;
                func.call(std::slice::from_ref(&*value), ctx)
            }
            Expr::Function { func, args, .. } if args.len() == 2 && func.is_like() => {
                // The text and the pattern borrowed (a column, a constant), not cloned per row.
                let text = args[0].eval_borrowed(row, ctx)?;
                let pattern = args[1].eval_borrowed(row, ctx)?;
                match (&*text, &*pattern) {
                    (Datum::Text(text), Datum::Text(pattern)) => func.like(text, pattern, None),
                    (Datum::Null, _) | (_, Datum::Null) => Ok(Datum::Null),
                    _ => func.call(&[text.into_owned(), pattern.into_owned()], ctx),
                }
            }
            Expr::Function { func, args, .. } => {
                // Every argument is evaluated (its errors raised) before a strict
                // function's NULL test, as in PostgreSQL.
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    values.push(arg.eval(row, ctx)?);
                }
                if func.is_strict() && values.iter().any(Datum::is_null) {
                    return Ok(Datum::Null);
                }
                func.call(&values, ctx)
            }
            Expr::ScalarSubquery(init_plan) => init_plan.value().cloned(),
            Expr::SubPlan { subplan, args } => subplan.eval(args, row, ctx),
            Expr::Param { index, .. } => ctx.param(*index).cloned(),
        }
    }

    /// The value of an int4 or int8 expression as an `i64` (`None`: NULL). Arithmetic
    /// over integer columns and literals — the usual filter, `length(b) * 2 - length(b)
    /// = length(b)` — is computed on integers, with no `Datum` made and matched at
    /// every node; anything else is evaluated as usual.
    fn eval_int(&self, row: &[Datum], ctx: &EvalContext) -> Result<Option<i64>> {
        let value = match self {
            Expr::Column { index, .. } => row.get(*index),
            Expr::Literal { value, .. } => Some(value),
            Expr::Binary { op, left, right, data_type } if int_arithmetic(self) => return int_arith(*op, left, right, *data_type, row, ctx),
            Expr::Function { func, args, .. } if func.is_text_length() && args.len() == 1 => {
                return match &*args[0].eval_borrowed(row, ctx)? {
                    Datum::Text(text) => char_count_i32(text).map(|n| Some(n as i64)),
                    Datum::Null => Ok(None),
                    other => Err(Error::internal(format!("length() of {other:?}"))),
                };
            }
            _ => None,
        };
        match value {
            Some(Datum::Int4(v)) => Ok(Some(*v as i64)),
            Some(Datum::Int8(v)) => Ok(Some(*v)),
            Some(Datum::Null) => Ok(None),
            _ => match self.eval(row, ctx)? {
                Datum::Int4(v) => Ok(Some(v as i64)),
                Datum::Int8(v) => Ok(Some(v)),
                Datum::Null => Ok(None),
                other => Err(Error::internal(format!("an integer expression gave {other:?}"))),
            },
        }
    }

    /// [`Expr::eval`], borrowing the value from the row or the expression when it is a
    /// column or a literal.
    #[inline]
    pub fn eval_borrowed<'a>(&'a self, row: &'a [Datum], ctx: &EvalContext) -> Result<Cow<'a, Datum>> {
        match self {
            Expr::Column { index, .. } if *index < row.len() => Ok(Cow::Borrowed(&row[*index])),
            Expr::Literal { value, .. } => Ok(Cow::Borrowed(value)),
            other => other.eval(row, ctx).map(Cow::Owned),
        }
    }

    /// The type of the value `eval` returns (NULL included: a NULL has this type too).
    #[inline]
    pub fn data_type(&self) -> DataType {
        match self {
            Expr::Column { data_type, .. }
            | Expr::Literal { data_type, .. }
            | Expr::Binary { data_type, .. }
            | Expr::Unary { data_type, .. }
            | Expr::Case { data_type, .. }
            | Expr::Coalesce { data_type, .. }
            | Expr::Function { data_type, .. }
            | Expr::Param { data_type, .. } => *data_type,
            Expr::Cast { to, .. } => *to,
            Expr::ApplyModifier { modifier, .. } => modifier.storage_type(),
            Expr::IsNull { .. } => DataType::Bool,
            Expr::ScalarSubquery(init_plan) => init_plan.data_type,
            Expr::SubPlan { subplan, .. } => subplan.data_type,
        }
    }

    /// Whether this is an untyped `NULL` literal (PostgreSQL's `unknown`-typed NULL).
    pub fn is_null_literal(&self) -> bool {
        matches!(self, Expr::Literal { value: Datum::Null, .. })
    }
}

/// A type modifier over its input. A `smallint` cast's input is the value cast to `int8`,
/// or the text itself (so `99999.5` and `'40000'` reach the range check whole); errors then
/// name the type the user wrote, as PostgreSQL's `int2` input and casts do.
fn eval_modifier(expr: &Expr, modifier: TypeModifier, coercion: Coercion, row: &[Datum], ctx: &EvalContext) -> Result<Datum> {
    if modifier != TypeModifier::SmallInt {
        return modifier.apply(expr.eval(row, ctx)?, coercion);
    }
    let value = match expr.eval(row, ctx) {
        Ok(Datum::Text(text)) => return super::cast::small_int_from_text(&text),
        Ok(value) => value,
        Err(error) if error.sqlstate == SqlState::NUMERIC_VALUE_OUT_OF_RANGE && error.message == "bigint out of range" => {
            return Err(Error::out_of_range("smallint"));
        }
        // numeric NaN or ±Infinity to int8: `cannot convert NaN to bigint` names smallint.
        Err(error) if error.sqlstate == SqlState::FEATURE_NOT_SUPPORTED && error.message.ends_with(" to bigint") => {
            let message = format!("{} to smallint", error.message.trim_end_matches(" to bigint"));
            return Err(Error::not_supported(message));
        }
        Err(error) => return Err(error),
    };
    modifier.apply(value, coercion)
}

fn eval_and(left: &Expr, right: &Expr, row: &[Datum], ctx: &EvalContext) -> Result<Datum> {
    let l = left.eval(row, ctx)?;
    if l == Datum::Bool(false) {
        return Ok(l);
    }
    let r = right.eval(row, ctx)?;
    Ok(match (l, r) {
        (_, Datum::Bool(false)) => Datum::Bool(false),
        (Datum::Bool(true), Datum::Bool(true)) => Datum::Bool(true),
        _ => Datum::Null,
    })
}

fn eval_or(left: &Expr, right: &Expr, row: &[Datum], ctx: &EvalContext) -> Result<Datum> {
    let l = left.eval(row, ctx)?;
    if l == Datum::Bool(true) {
        return Ok(l);
    }
    let r = right.eval(row, ctx)?;
    Ok(match (l, r) {
        (_, Datum::Bool(true)) => Datum::Bool(true),
        (Datum::Bool(false), Datum::Bool(false)) => Datum::Bool(false),
        _ => Datum::Null,
    })
}

/// A comparison operator as a test of the operands' order; `None` for other operators.
/// An int4 or int8 type?
#[inline]
fn is_int(data_type: DataType) -> bool {
    matches!(data_type, DataType::Int4 | DataType::Int8)
}

/// `left op right`, an [`int_arithmetic`] node, on `i64`s (`None`: NULL). Both operands
/// first (their errors raised), then the NULL test: a strict operator, as in PostgreSQL.
fn int_arith(op: BinaryOp, left: &Expr, right: &Expr, data_type: DataType, row: &[Datum], ctx: &EvalContext) -> Result<Option<i64>> {
    let (left, right) = (left.eval_int(row, ctx)?, right.eval_int(row, ctx)?);
    let (Some(a), Some(b)) = (left, right) else { return Ok(None) };
    match data_type {
        DataType::Int4 => int4_arith(op, a as i32, b as i32).map(|v| Some(v as i64)),
        _ => int8_arith(op, a, b).map(Some),
    }
}

/// `+ - * / %` of two integers of the result's own type (int4 or int8): what
/// [`Expr::eval_int`] computes without `Datum`s. (Not `date - date`, whose result is an
/// int4 of operands that are not.)
#[inline]
fn int_arithmetic(expr: &Expr) -> bool {
    match expr {
        Expr::Binary { op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod, left, right, data_type } => {
            is_int(*data_type) && left.data_type() == *data_type && right.data_type() == *data_type
        }
        _ => false,
    }
}

pub(crate) fn comparison(op: BinaryOp) -> Option<fn(Ordering) -> bool> {
    use BinaryOp::*;
    Some(match op {
        Eq => Ordering::is_eq,
        NotEq => Ordering::is_ne,
        Lt => Ordering::is_lt,
        LtEq => Ordering::is_le,
        Gt => Ordering::is_gt,
        GtEq => Ordering::is_ge,
        _ => return None,
    })
}

/// A strict binary operator on two non-null operands of the operator's input type.
pub fn eval_binary(op: BinaryOp, left: Datum, right: Datum) -> Result<Datum> {
    use BinaryOp::*;
    if let Some(ord) = comparison(op) {
        return Ok(Datum::Bool(ord(compare_datums(&left, &right))));
    }
    match op {
        Eq | NotEq | Lt | LtEq | Gt | GtEq => Err(Error::internal("a comparison past its own path")),
        Concat => {
            let mut text = left.to_pg_text().unwrap_or_default();
            text.push_str(&right.to_pg_text().unwrap_or_default());
            Ok(Datum::Text(text))
        }
        Add | Sub | Mul | Div | Mod => match (left, right) {
            (l, r) if l.data_type().is_some_and(super::datetime::is_datetime) || r.data_type().is_some_and(super::datetime::is_datetime) => {
                super::datetime::eval_arith(op, &l, &r)
                    .unwrap_or_else(|| Err(Error::internal(format!("unresolved operands for {op:?}: {l:?}, {r:?}"))))
            }
            (Datum::Int4(a), Datum::Int4(b)) => int4_arith(op, a, b).map(Datum::Int4),
            (Datum::Int8(a), Datum::Int8(b)) => int8_arith(op, a, b).map(Datum::Int8),
            (Datum::Float8(a), Datum::Float8(b)) => float8_arith(op, a, b).map(Datum::Float8),
            (Datum::Numeric(a), Datum::Numeric(b)) => numeric_arith(op, &a, &b).map(Datum::Numeric),
            (l, r) => Err(Error::internal(format!("unresolved operands for {op:?}: {l:?}, {r:?}"))),
        },
        And | Or => Err(Error::internal("AND/OR reached eval_binary")),
    }
}

/// Checked int4 arithmetic (`int4pl`, `int4div`, `int4mod`, ...).
pub fn int4_arith(op: BinaryOp, a: i32, b: i32) -> Result<i32> {
    if matches!(op, BinaryOp::Div | BinaryOp::Mod) && b == 0 {
        return Err(Error::division_by_zero());
    }
    let result = match op {
        BinaryOp::Add => a.checked_add(b),
        BinaryOp::Sub => a.checked_sub(b),
        BinaryOp::Mul => a.checked_mul(b),
        BinaryOp::Div => a.checked_div(b),
        BinaryOp::Mod => Some(a.checked_rem(b).unwrap_or(0)), // i32::MIN % -1 = 0
        _ => return Err(Error::internal(format!("{op:?} is not arithmetic"))),
    };
    result.ok_or_else(|| Error::out_of_range("integer"))
}

/// Checked int8 arithmetic (`int8pl`, `int8div`, `int8mod`, ...).
pub fn int8_arith(op: BinaryOp, a: i64, b: i64) -> Result<i64> {
    if matches!(op, BinaryOp::Div | BinaryOp::Mod) && b == 0 {
        return Err(Error::division_by_zero());
    }
    let result = match op {
        BinaryOp::Add => a.checked_add(b),
        BinaryOp::Sub => a.checked_sub(b),
        BinaryOp::Mul => a.checked_mul(b),
        BinaryOp::Div => a.checked_div(b),
        BinaryOp::Mod => Some(a.checked_rem(b).unwrap_or(0)),
        _ => return Err(Error::internal(format!("{op:?} is not arithmetic"))),
    };
    result.ok_or_else(|| Error::out_of_range("bigint"))
}

fn float_overflow() -> Error {
    Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")
}

fn float_underflow() -> Error {
    Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: underflow")
}

/// float8 arithmetic with PostgreSQL's overflow/underflow checks (`float8_pl`, ...).
/// There is no float8 `%`; resolution rejects it.
pub fn float8_arith(op: BinaryOp, a: f64, b: f64) -> Result<f64> {
    let result = match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => {
            let r = a * b;
            if r == 0.0 && a != 0.0 && b != 0.0 {
                return Err(float_underflow());
            }
            r
        }
        BinaryOp::Div => {
            if b == 0.0 && !a.is_nan() {
                return Err(Error::division_by_zero());
            }
            let r = a / b;
            if r.is_infinite() && !a.is_infinite() {
                return Err(float_overflow());
            }
            if r == 0.0 && a != 0.0 && !b.is_infinite() {
                return Err(float_underflow());
            }
            return Ok(r);
        }
        _ => return Err(Error::internal(format!("no float8 operator for {op:?}"))),
    };
    if result.is_infinite() && a.is_finite() && b.is_finite() {
        return Err(float_overflow());
    }
    Ok(result)
}

/// `value overflows numeric format` (22003).
pub fn numeric_overflow() -> Error {
    Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
}

fn numeric_arith(op: BinaryOp, a: &Numeric, b: &Numeric) -> Result<Numeric> {
    match op {
        BinaryOp::Add => a.add(b),
        BinaryOp::Sub => a.sub(b),
        BinaryOp::Mul => a.mul(b),
        BinaryOp::Div => a.div(b),
        BinaryOp::Mod => numeric_mod(a, b),
        _ => Err(Error::internal(format!("{op:?} is not arithmetic"))),
    }
}

/// `numeric % numeric`: the remainder of truncating division, with the sign of the
/// dividend and the larger of the two scales (`10.5 % 3 = 1.5`). NaN and the infinities as
/// `Numeric::mod_special` says.
pub fn numeric_mod(a: &Numeric, b: &Numeric) -> Result<Numeric> {
    if let Some(special) = Numeric::mod_special(a, b) {
        return special;
    }
    let scale = a.scale.max(b.scale);
    let align = |n: &Numeric| -> Result<i128> {
        10i128
            .checked_pow(u32::from(scale - n.scale))
            .and_then(|factor| n.mantissa.checked_mul(factor))
            .ok_or_else(numeric_overflow)
    };
    let divisor = align(b)?;
    if divisor == 0 {
        return Err(Error::division_by_zero());
    }
    let dividend = align(a)?;
    Ok(Numeric { mantissa: dividend.checked_rem(divisor).unwrap_or(0), scale })
}

fn eval_unary(op: UnaryOp, value: Datum) -> Result<Datum> {
    match (op, value) {
        (_, Datum::Null) => Ok(Datum::Null),
        (UnaryOp::Not, Datum::Bool(b)) => Ok(Datum::Bool(!b)),
        (UnaryOp::Neg, Datum::Int4(v)) => v.checked_neg().map(Datum::Int4).ok_or_else(|| Error::out_of_range("integer")),
        (UnaryOp::Neg, Datum::Int8(v)) => v.checked_neg().map(Datum::Int8).ok_or_else(|| Error::out_of_range("bigint")),
        (UnaryOp::Neg, Datum::Float8(v)) => Ok(Datum::Float8(-v)),
        (UnaryOp::Neg, Datum::Numeric(n)) => n.neg().map(Datum::Numeric),
        (UnaryOp::Neg, Datum::Interval(iv)) => iv.checked_neg().map(Datum::Interval),
        (op, v) => Err(Error::internal(format!("unresolved operand for {op:?}: {v:?}"))),
    }
}
