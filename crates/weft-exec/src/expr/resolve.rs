//! Operator and function resolution: from untyped SQL shapes to a typed [`Expr`] whose
//! operands already have the operator's input types.
//!
//! This is PostgreSQL's `parse_oper.c`/`parse_func.c`/`parse_coerce.c` cut down to
//! weft's six types, where the candidate sets are small enough to state as rules:
//!
//! 1. Implicit casts: `int4 → int8 → numeric → float8` (and the transitive ones). Every
//!    other conversion needs an explicit `CAST`; explicit casts exist between all numeric
//!    types, between `int4` and `bool`, and from/to `text` for every type.
//! 2. Arithmetic and comparison on two numeric-family types run in the larger type
//!    (the later in rule 1's chain); both operands are cast to it. There is no float8 `%`.
//! 3. Comparison needs both sides in one family: numeric, text or bool.
//!    `text = integer` is `operator does not exist` (42883).
//! 4. `||` needs at least one text side; the other side is cast to text.
//! 5. An untyped NULL literal takes the type the other side (or the parameter) wants.
//!    Two untyped NULLs: comparison and `||` treat both as text; arithmetic is
//!    ambiguous (`operator is not unique: unknown + unknown`, 42725), as in PostgreSQL.
//! 6. A function call picks, among the overloads whose arguments are all implicitly
//!    castable, the one with most exact type matches; ties (only possible with NULL
//!    arguments) go to the overload taking float8, PostgreSQL's preferred numeric type.

use weft_common::{DataType, Datum, Error, Result, SqlState};

use super::cast::cannot_cast;
use super::functions::{signatures, Signature};
use super::{BinaryOp, Expr, ScalarFunction, UnaryOp};

const OPERATOR_HINT: &str = "No operator matches the given name and argument types. You might need to add explicit type casts.";
const FUNCTION_HINT: &str = "No function matches the given name and argument types. You might need to add explicit type casts.";

/// The position of a numeric-family type in the implicit-cast chain.
fn numeric_rank(t: DataType) -> Option<u8> {
    match t {
        DataType::Int4 => Some(0),
        DataType::Int8 => Some(1),
        DataType::Numeric => Some(2),
        DataType::Float8 => Some(3),
        _ => None,
    }
}

/// Whether PostgreSQL casts `from` to `to` implicitly (`explicit = false`) or allows
/// `CAST(from AS to)` (`explicit = true`).
pub fn can_coerce(from: DataType, to: DataType, explicit: bool) -> bool {
    if from == to {
        return true;
    }
    if super::datetime::implicit_cast(from, to) || (explicit && super::datetime::explicit_cast(from, to)) {
        return true;
    }
    // An array casts to another array type element by element (`array_map`).
    if let (DataType::Array(f), DataType::Array(t)) = (from, to) {
        return can_coerce(f.data_type(), t.data_type(), explicit);
    }
    match (numeric_rank(from), numeric_rank(to)) {
        (Some(f), Some(t)) => explicit || f < t,
        _ => {
            explicit
                && (from == DataType::Text
                    || to == DataType::Text
                    || matches!((from, to), (DataType::Int4, DataType::Bool) | (DataType::Bool, DataType::Int4)))
        }
    }
}

/// Casts `expr` to `to`: nothing if it already has that type; an untyped NULL literal
/// is retyped (implicitly) or wrapped in a `Cast` (explicitly, so that `NULL::int4`
/// keeps its type); otherwise a `Cast` node if the cast is allowed, else
/// `cannot cast type X to Y` (42846).
pub fn coerce(expr: Expr, to: DataType, explicit: bool) -> Result<Expr> {
    if expr.is_null_literal() && !explicit {
        return Ok(Expr::Literal { value: Datum::Null, data_type: to });
    }
    let from = expr.data_type();
    if from == to && !expr.is_null_literal() {
        return Ok(expr);
    }
    if expr.is_null_literal() || can_coerce(from, to, explicit) {
        // A quoted literal is read as its type now, as PostgreSQL reads it while parsing:
        // `WHERE a = 'zz'` fails even on an empty table, and points at the literal.
        if let Expr::Literal { value: value @ Datum::Text(_), .. } = expr {
            return Ok(Expr::Literal { value: super::cast::cast_datum(value, to)?, data_type: to });
        }
        return Ok(Expr::Cast { expr: Box::new(expr), to });
    }
    Err(cannot_cast(from, to))
}

/// The type `CASE`, `COALESCE`, `VALUES` or `UNION` branches resolve to
/// (`select_common_type`); `context` names the construct in the error
/// (`CASE types integer and text cannot be matched`, 42804). PostgreSQL checks a
/// `CASE`'s `ELSE` branch first, so pass its type first to get the same message.
/// No types at all (every branch an untyped NULL) resolve to text.
pub fn common_type(types: &[DataType], context: &str) -> Result<DataType> {
    let Some((&first, rest)) = types.split_first() else {
        return Ok(DataType::Text);
    };
    let mut chosen = first;
    for &next in rest {
        if next == chosen {
            continue;
        }
        match (numeric_rank(chosen), numeric_rank(next)) {
            (Some(c), Some(n)) => {
                if n > c {
                    chosen = next;
                }
            }
            _ if super::datetime::implicit_cast(chosen, next) => chosen = next,
            _ if super::datetime::implicit_cast(next, chosen) => {}
            _ => {
                return Err(Error::new(
                    SqlState::DATATYPE_MISMATCH,
                    format!("{context} types {} and {} cannot be matched", chosen.name(), next.name()),
                ))
            }
        }
    }
    Ok(chosen)
}

/// Resolves the branches of a `CASE`/`COALESCE`: their common type (untyped NULLs do
/// not take part) and each branch implicitly cast to it.
fn unify(branches: Vec<Expr>, context: &str) -> Result<(Vec<Expr>, DataType)> {
    let types: Vec<DataType> = branches.iter().filter(|e| !e.is_null_literal()).map(Expr::data_type).collect();
    let data_type = common_type(&types, context)?;
    let branches = branches.into_iter().map(|e| coerce(e, data_type, false)).collect::<Result<_>>()?;
    Ok((branches, data_type))
}

/// `CASE WHEN c THEN r ... [ELSE e] END` (the binder rewrites `CASE x WHEN v` to
/// `x = v` conditions first): conditions must be boolean
/// (`argument of CASE/WHEN must be type boolean, not type integer`, 42804), results get
/// their common type.
pub fn resolve_case(whens: Vec<(Expr, Expr)>, otherwise: Option<Expr>) -> Result<Expr> {
    let mut conditions = Vec::with_capacity(whens.len());
    // PostgreSQL resolves the ELSE branch first: it leads the list.
    let mut results = Vec::with_capacity(whens.len() + 1);
    let has_else = otherwise.is_some();
    results.extend(otherwise);
    for (condition, result) in whens {
        conditions.push(require_bool(condition, "CASE/WHEN")?);
        results.push(result);
    }
    let (mut results, data_type) = unify(results, "CASE")?;
    let otherwise = if has_else { Some(Box::new(results.remove(0))) } else { None };
    let whens = conditions.into_iter().zip(results).collect();
    Ok(Expr::Case { whens, otherwise, data_type })
}

/// `COALESCE(a, b, ...)`: arguments get their common type.
pub fn resolve_coalesce(args: Vec<Expr>) -> Result<Expr> {
    if args.is_empty() {
        return Err(Error::syntax("COALESCE needs at least one argument"));
    }
    let (args, data_type) = unify(args, "COALESCE")?;
    Ok(Expr::Coalesce { args, data_type })
}

/// `argument of AND must be type boolean, not type integer` (42804); untyped NULL
/// becomes a boolean NULL.
fn require_bool(expr: Expr, construct: &str) -> Result<Expr> {
    if expr.is_null_literal() {
        return Ok(Expr::Literal { value: Datum::Null, data_type: DataType::Bool });
    }
    let t = expr.data_type();
    if t != DataType::Bool {
        return Err(Error::new(
            SqlState::DATATYPE_MISMATCH,
            format!("argument of {construct} must be type boolean, not type {}", t.name()),
        ));
    }
    Ok(expr)
}

/// The operator as SQL spells it, for error messages.
pub fn binary_op_symbol(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "+",
        BinaryOp::Sub => "-",
        BinaryOp::Mul => "*",
        BinaryOp::Div => "/",
        BinaryOp::Mod => "%",
        BinaryOp::Eq => "=",
        BinaryOp::NotEq => "<>",
        BinaryOp::Lt => "<",
        BinaryOp::LtEq => "<=",
        BinaryOp::Gt => ">",
        BinaryOp::GtEq => ">=",
        BinaryOp::And => "AND",
        BinaryOp::Or => "OR",
        BinaryOp::Concat => "||",
    }
}

/// A type name for messages, `unknown` for an untyped NULL.
fn type_label(e: &Expr) -> &'static str {
    if e.is_null_literal() {
        "unknown"
    } else {
        e.data_type().name()
    }
}

fn no_operator(op: &str, left: &Expr, right: &Expr) -> Error {
    Error::new(
        SqlState::UNDEFINED_FUNCTION,
        format!("operator does not exist: {} {op} {}", type_label(left), type_label(right)),
    )
    .with_hint(OPERATOR_HINT)
}

fn ambiguous_operator(description: String) -> Error {
    Error::new(SqlState("42725"), format!("operator is not unique: {description}"))
        .with_hint("Could not choose a best candidate operator. You might need to add explicit type casts.")
}

/// Resolves `left op right` (rules 2–5 of the module comment).
pub fn resolve_binary(op: BinaryOp, left: Expr, right: Expr) -> Result<Expr> {
    use BinaryOp::*;
    let binary = |left: Expr, right: Expr, data_type| Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
        data_type,
    };
    match op {
        And | Or => {
            let construct = if op == And { "AND" } else { "OR" };
            let left = require_bool(left, construct)?;
            let right = require_bool(right, construct)?;
            Ok(binary(left, right, DataType::Bool))
        }
        Concat => {
            let (left, right) = match super::array::resolve_concat(left, right) {
                Ok(resolved) => return resolved,
                Err(operands) => operands,
            };
            let text_side = |e: &Expr| e.is_null_literal() || e.data_type() == DataType::Text;
            if !text_side(&left) && !text_side(&right) {
                return Err(no_operator("||", &left, &right));
            }
            let left = coerce(left, DataType::Text, true)?;
            let right = coerce(right, DataType::Text, true)?;
            Ok(binary(unwrap_null_cast(left), unwrap_null_cast(right), DataType::Text))
        }
        Eq | NotEq | Lt | LtEq | Gt | GtEq => {
            let operand = operand_type(op, &left, &right)?;
            Ok(binary(coerce(left, operand, false)?, coerce(right, operand, false)?, DataType::Bool))
        }
        Add | Sub | Mul | Div | Mod if !left.is_null_literal() && !right.is_null_literal() && (super::datetime::is_datetime(left.data_type()) || super::datetime::is_datetime(right.data_type())) => {
            let Some((l, r, result)) = super::datetime::resolve_arith(op, left.data_type(), right.data_type()) else {
                return Err(no_operator(binary_op_symbol(op), &left, &right));
            };
            Ok(binary(coerce(left, l, false)?, coerce(right, r, false)?, result))
        }
        Add | Sub | Mul | Div | Mod => {
            let operand = operand_type(op, &left, &right)?;
            let arithmetic = numeric_rank(operand).is_some() && !(op == Mod && operand == DataType::Float8);
            if !arithmetic {
                return Err(no_operator(binary_op_symbol(op), &left, &right));
            }
            Ok(binary(coerce(left, operand, false)?, coerce(right, operand, false)?, operand))
        }
    }
}

/// A text-cast untyped NULL is just a text NULL.
fn unwrap_null_cast(e: Expr) -> Expr {
    match e {
        Expr::Cast { expr, to } if expr.is_null_literal() => Expr::Literal { value: Datum::Null, data_type: to },
        other => other,
    }
}

/// The common input type of a comparison or arithmetic operator.
fn operand_type(op: BinaryOp, left: &Expr, right: &Expr) -> Result<DataType> {
    let symbol = binary_op_symbol(op);
    match (left.is_null_literal(), right.is_null_literal()) {
        (true, true) => {
            if matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod) {
                return Err(ambiguous_operator(format!("unknown {symbol} unknown")));
            }
            Ok(DataType::Text)
        }
        (true, false) => Ok(right.data_type()),
        (false, true) => Ok(left.data_type()),
        (false, false) => {
            let (l, r) = (left.data_type(), right.data_type());
            if l == r {
                return Ok(l);
            }
            match (numeric_rank(l), numeric_rank(r)) {
                (Some(a), Some(b)) => Ok(if a >= b { l } else { r }),
                _ if super::datetime::implicit_cast(l, r) => Ok(r),
                _ if super::datetime::implicit_cast(r, l) => Ok(l),
                _ => Err(no_operator(symbol, left, right)),
            }
        }
    }
}

/// Resolves `-expr` (numeric types) and `NOT expr` (boolean).
pub fn resolve_unary(op: UnaryOp, expr: Expr) -> Result<Expr> {
    match op {
        UnaryOp::Not => {
            let expr = require_bool(expr, "NOT")?;
            Ok(Expr::Unary { op, expr: Box::new(expr), data_type: DataType::Bool })
        }
        UnaryOp::Neg => {
            if expr.is_null_literal() {
                return Err(ambiguous_operator("- unknown".to_string()));
            }
            let data_type = expr.data_type();
            if numeric_rank(data_type).is_none() && data_type != DataType::Interval {
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!("operator does not exist: - {}", data_type.name()),
                )
                .with_hint(OPERATOR_HINT));
            }
            Ok(Expr::Unary { op, expr: Box::new(expr), data_type })
        }
    }
}

/// Resolves `expr [NOT] [I]LIKE pattern [ESCAPE escape]` on text operands (PostgreSQL's
/// `~~`, `!~~`, `~~*`, `!~~*`); other operand types have no such operator.
pub fn resolve_like(expr: Expr, pattern: Expr, escape: Option<Expr>, negated: bool, case_insensitive: bool) -> Result<Expr> {
    let func = match (case_insensitive, negated) {
        (false, false) => ScalarFunction::Like,
        (false, true) => ScalarFunction::NotLike,
        (true, false) => ScalarFunction::ILike,
        (true, true) => ScalarFunction::NotILike,
    };
    let symbol = match func {
        ScalarFunction::Like => "~~",
        ScalarFunction::NotLike => "!~~",
        ScalarFunction::ILike => "~~*",
        _ => "!~~*",
    };
    let is_text = |e: &Expr| e.is_null_literal() || e.data_type() == DataType::Text;
    if !is_text(&expr) || !is_text(&pattern) {
        return Err(no_operator(symbol, &expr, &pattern));
    }
    let mut args = vec![coerce(expr, DataType::Text, false)?, coerce(pattern, DataType::Text, false)?];
    if let Some(escape) = escape {
        if !is_text(&escape) {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function like_escape(text, {}) does not exist", type_label(&escape)),
            )
            .with_hint(FUNCTION_HINT));
        }
        args.push(coerce(escape, DataType::Text, false)?);
    }
    Ok(Expr::Function { func, args, data_type: DataType::Bool })
}

/// Resolves a call of the built-in function `name` (any case) on `args` (rule 6),
/// inserting implicit casts. Unknown names and unmatched argument types are
/// `function md5(integer) does not exist` (42883) with PostgreSQL's hint.
pub fn resolve_function(name: &str, args: Vec<Expr>) -> Result<Expr> {
    let lower = name.to_lowercase();
    let args = match super::array::resolve_function(&lower, args) {
        Ok(resolved) => return resolved,
        Err(args) => args,
    };
    // A quoted literal is read by a date/time parameter's input function, as PostgreSQL
    // reads an `unknown` constant (`date_bin('15 minutes', ...)`).
    let read_as_datetime =
        |a: &Expr, p: DataType| super::datetime::is_datetime(p) && matches!(a, Expr::Literal { value: Datum::Text(_), .. });
    let candidates: Vec<&Signature> = signatures(&lower)
        .iter()
        .filter(|s| {
            s.args.len() == args.len()
                && s.args.iter().zip(&args).all(|(&p, a)| a.is_null_literal() || can_coerce(a.data_type(), p, false) || read_as_datetime(a, p))
        })
        .collect();
    let score = |s: &Signature| {
        let exact = s.args.iter().zip(&args).filter(|(&p, a)| !a.is_null_literal() && a.data_type() == p).count();
        // float8 is PostgreSQL's preferred type of the numeric category: among overloads
        // that need a conversion, the one converting to it wins (`round(2)` is float8).
        let preferred = s
            .args
            .iter()
            .zip(&args)
            .filter(|(&p, a)| {
                // timestamptz is the preferred type of the date/time category.
                matches!(p, DataType::Float8 | DataType::TimestampTz) && (a.is_null_literal() || a.data_type() != p)
            })
            .count();
        (exact, preferred)
    };
    let best = candidates.iter().map(|s| score(s)).max();
    let winners: Vec<&&Signature> = candidates.iter().filter(|s| Some(score(s)) == best).collect();
    let arg_list = args.iter().map(type_label).collect::<Vec<_>>().join(", ");
    let signature = match winners.as_slice() {
        [one] => **one,
        [] => {
            return Err(Error::new(SqlState::UNDEFINED_FUNCTION, format!("function {lower}({arg_list}) does not exist"))
                .with_hint(FUNCTION_HINT))
        }
        _ => {
            return Err(Error::new(SqlState("42725"), format!("function {lower}({arg_list}) is not unique"))
                .with_hint("Could not choose a best candidate function. You might need to add explicit type casts."))
        }
    };
    let args = args
        .into_iter()
        .zip(signature.args)
        .map(|(a, &p)| {
            let literal = read_as_datetime(&a, p);
            coerce(a, p, literal)
        })
        .collect::<Result<_>>()?;
    Ok(Expr::Function { func: signature.func, args, data_type: signature.result })
}
