//! One-dimensional arrays (lower bound 1): the `ARRAY[...]` constructor, subscripts and
//! slices, `op ANY | ALL (array)`, the array functions and operators, and their
//! resolution. Behaviour follows PostgreSQL 15's `arrayfuncs.c` / `array_userfuncs.c`
//! restricted to one dimension:
//!
//! 1. Element equality (`array_position`, `array_remove`, `@>`) is the element type's
//!    `=` (`compare_datums`). `array_position`/`array_remove`/`array_replace` treat NULL
//!    as equal to NULL (IS NOT DISTINCT FROM); `@>`, `<@`, `&&` never match a NULL.
//! 2. A subscript outside `1..=n` is NULL; a slice is clamped to the array and is
//!    empty (`{}`) when nothing is left; a NULL subscript gives NULL.
//! 3. Functions are not all strict (`array_append(NULL, 1)` is `{1}`): each handles
//!    its NULL arguments as PostgreSQL's does.
//! 4. Functions about dimensions (`array_length(a, 1)`, `array_lower`, ...) are NULL for
//!    an empty array and for any dimension other than 1.

use std::cmp::Ordering;

use weft_common::types::{Array, ElemType};
use weft_common::{DataType, Datum, Error, Result, SqlState};

use super::compare::compare_datums;
use super::resolve::{can_coerce, coerce, common_type};
use super::{BinaryOp, Expr, ScalarFunction};

/// An array operation; its arguments are in `Expr::Function::args`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArrayFunction {
    /// `ARRAY[e1, ...]`: the arguments are the elements, already of the element type.
    Construct(ElemType),
    /// `a[i]`.
    Subscript,
    /// `a[lo:hi]`, `a[lo:]`, `a[:hi]`, `a[:]`: arguments are the array then the bounds
    /// that are written.
    Slice { lower: bool, upper: bool },
    /// `x op ANY (a)` / `x op ALL (a)`: arguments `x`, `a`.
    Any(BinaryOp),
    All(BinaryOp),
    Length,
    Cardinality,
    Lower,
    Upper,
    Ndims,
    Dims,
    ToString,
    StringToArray,
    /// The element type: `array_append(NULL, x)` builds an array of it.
    Append(ElemType),
    Prepend(ElemType),
    Cat,
    Position,
    Positions,
    Remove,
    Replace,
    Contains,
    ContainedBy,
    Overlap,
}

impl ArrayFunction {
    pub fn name(self) -> &'static str {
        match self {
            ArrayFunction::Construct(_) => "array",
            ArrayFunction::Subscript => "array_subscript",
            ArrayFunction::Slice { .. } => "array_slice",
            ArrayFunction::Any(_) => "any",
            ArrayFunction::All(_) => "all",
            ArrayFunction::Length => "array_length",
            ArrayFunction::Cardinality => "cardinality",
            ArrayFunction::Lower => "array_lower",
            ArrayFunction::Upper => "array_upper",
            ArrayFunction::Ndims => "array_ndims",
            ArrayFunction::Dims => "array_dims",
            ArrayFunction::ToString => "array_to_string",
            ArrayFunction::StringToArray => "string_to_array",
            ArrayFunction::Append(_) => "array_append",
            ArrayFunction::Prepend(_) => "array_prepend",
            ArrayFunction::Cat => "array_cat",
            ArrayFunction::Position => "array_position",
            ArrayFunction::Positions => "array_positions",
            ArrayFunction::Remove => "array_remove",
            ArrayFunction::Replace => "array_replace",
            ArrayFunction::Contains => "arraycontains",
            ArrayFunction::ContainedBy => "arraycontained",
            ArrayFunction::Overlap => "arrayoverlap",
        }
    }
}

fn new_array(elem: ElemType, items: Vec<Datum>) -> Datum {
    Datum::Array(Box::new(Array { elem, items }))
}

fn internal(f: ArrayFunction, args: &[Datum]) -> Error {
    Error::internal(format!("unresolved arguments for {}: {args:?}", f.name()))
}

/// `a[i]` / `a[lo:hi]` positions are int4 in PostgreSQL; weft's int8 subscripts are
/// cast by the binder, so this only guards the conversion to an index.
fn position_of(d: &Datum) -> Option<i64> {
    match d {
        Datum::Int4(v) => Some(i64::from(*v)),
        Datum::Int8(v) => Some(*v),
        _ => None,
    }
}

fn int4_len(n: usize) -> Datum {
    Datum::Int4(i32::try_from(n).unwrap_or(i32::MAX))
}

/// Is `dim` the one dimension of a non-empty array?
fn first_dimension(a: &Array, dim: &Datum) -> bool {
    !a.items.is_empty() && matches!(dim, Datum::Int4(1))
}

/// Calls `f` on evaluated arguments (NULLs included: see rule 3).
pub fn call(f: ArrayFunction, args: &[Datum]) -> Result<Datum> {
    use ArrayFunction as A;
    let strict = !matches!(
        f,
        A::Construct(_) | A::Any(_) | A::All(_) | A::ToString | A::StringToArray | A::Append(_) | A::Prepend(_) | A::Cat | A::Position | A::Positions | A::Remove | A::Replace
    );
    if strict && args.iter().any(Datum::is_null) {
        return Ok(Datum::Null);
    }
    match (f, args) {
        (A::Construct(elem), items) => Ok(new_array(elem, items.to_vec())),
        (A::Subscript, [Datum::Array(a), i]) => {
            let Some(i) = position_of(i) else { return Err(internal(f, args)) };
            Ok(usize::try_from(i - 1).ok().and_then(|i| a.items.get(i)).cloned().unwrap_or(Datum::Null))
        }
        (A::Slice { lower, upper }, [Datum::Array(a), bounds @ ..]) => {
            let mut bounds = bounds.iter();
            let n = a.items.len() as i64;
            let lo = if lower { bounds.next().and_then(position_of).ok_or_else(|| internal(f, args))? } else { 1 };
            let hi = if upper { bounds.next().and_then(position_of).ok_or_else(|| internal(f, args))? } else { n };
            let (lo, hi) = (lo.max(1), hi.min(n));
            let items = if lo > hi { Vec::new() } else { a.items[(lo - 1) as usize..hi as usize].to_vec() };
            Ok(new_array(a.elem, items))
        }
        (A::Any(op) | A::All(op), [x, array]) => Ok(any_all(op, matches!(f, A::Any(_)), x, array)),
        (A::Length, [Datum::Array(a), dim]) | (A::Upper, [Datum::Array(a), dim]) => {
            Ok(if first_dimension(a, dim) { int4_len(a.items.len()) } else { Datum::Null })
        }
        (A::Lower, [Datum::Array(a), dim]) => Ok(if first_dimension(a, dim) { Datum::Int4(1) } else { Datum::Null }),
        (A::Cardinality, [Datum::Array(a)]) => Ok(int4_len(a.items.len())),
        (A::Ndims, [Datum::Array(a)]) => Ok(if a.items.is_empty() { Datum::Null } else { Datum::Int4(1) }),
        (A::Dims, [Datum::Array(a)]) => {
            Ok(if a.items.is_empty() { Datum::Null } else { Datum::Text(format!("[1:{}]", a.items.len())) })
        }
        (A::ToString, [array, sep, rest @ ..]) => {
            let (Datum::Array(a), Datum::Text(sep)) = (array, sep) else { return Ok(Datum::Null) };
            let null_text = match rest.first() {
                Some(Datum::Text(s)) => Some(s.as_str()),
                _ => None,
            };
            let mut out = String::new();
            let mut first = true;
            for item in &a.items {
                let text = match item.to_pg_text() {
                    Some(text) => text,
                    None => match null_text {
                        Some(s) => s.to_string(),
                        None => continue,
                    },
                };
                if !first {
                    out.push_str(sep);
                }
                first = false;
                out.push_str(&text);
            }
            Ok(Datum::Text(out))
        }
        (A::StringToArray, [s, sep, rest @ ..]) => {
            let Datum::Text(s) = s else { return Ok(Datum::Null) };
            let null_text = match rest.first() {
                Some(Datum::Text(n)) => Some(n.as_str()),
                _ => None,
            };
            let pieces: Vec<String> = match sep {
                _ if s.is_empty() => Vec::new(),
                Datum::Text(sep) if sep.is_empty() => vec![s.clone()],
                Datum::Text(sep) => s.split(sep.as_str()).map(str::to_string).collect(),
                // A NULL separator splits into characters.
                _ => s.chars().map(String::from).collect(),
            };
            let items = pieces
                .into_iter()
                .map(|p| if Some(p.as_str()) == null_text { Datum::Null } else { Datum::Text(p) })
                .collect();
            Ok(new_array(ElemType::Text, items))
        }
        (A::Append(elem), [array, x]) => match array {
            Datum::Array(a) => {
                let mut items = a.items.clone();
                items.push(x.clone());
                Ok(new_array(a.elem, items))
            }
            _ => Ok(new_array(elem, vec![x.clone()])),
        },
        (A::Prepend(elem), [x, array]) => match array {
            Datum::Array(a) => {
                let mut items = Vec::with_capacity(a.items.len() + 1);
                items.push(x.clone());
                items.extend(a.items.iter().cloned());
                Ok(new_array(a.elem, items))
            }
            _ => Ok(new_array(elem, vec![x.clone()])),
        },
        (A::Cat, [left, right]) => match (left, right) {
            (Datum::Null, other) | (other, Datum::Null) => Ok(other.clone()),
            (Datum::Array(l), Datum::Array(r)) => {
                let mut items = l.items.clone();
                items.extend(r.items.iter().cloned());
                Ok(new_array(l.elem, items))
            }
            _ => Err(internal(f, args)),
        },
        (A::Position | A::Positions, [array, x, rest @ ..]) => {
            let Datum::Array(a) = array else { return Ok(Datum::Null) };
            if f == A::Positions {
                let items = (0..a.items.len())
                    .filter(|&i| compare_datums(&a.items[i], x) == Ordering::Equal)
                    .map(|i| int4_len(i + 1))
                    .collect();
                return Ok(new_array(ElemType::Int4, items));
            }
            let start = match rest.first() {
                None => 1,
                Some(Datum::Int4(s)) => *s,
                Some(Datum::Null) => {
                    return Err(Error::new(SqlState("22004"), "initial position must not be null"));
                }
                Some(_) => return Err(internal(f, args)),
            };
            let skip = usize::try_from(i64::from(start) - 1).unwrap_or(0);
            Ok(a.items
                .iter()
                .enumerate()
                .skip(skip)
                .find(|(_, item)| compare_datums(item, x) == Ordering::Equal)
                .map_or(Datum::Null, |(i, _)| int4_len(i + 1)))
        }
        (A::Remove, [array, x]) => {
            let Datum::Array(a) = array else { return Ok(Datum::Null) };
            let items = a.items.iter().filter(|item| compare_datums(item, x) != Ordering::Equal).cloned().collect();
            Ok(new_array(a.elem, items))
        }
        (A::Replace, [array, from, to]) => {
            let Datum::Array(a) = array else { return Ok(Datum::Null) };
            let items = a
                .items
                .iter()
                .map(|item| if compare_datums(item, from) == Ordering::Equal { to.clone() } else { item.clone() })
                .collect();
            Ok(new_array(a.elem, items))
        }
        (A::Contains, [Datum::Array(a), Datum::Array(b)]) => Ok(Datum::Bool(contains_all(b, a))),
        (A::ContainedBy, [Datum::Array(a), Datum::Array(b)]) => Ok(Datum::Bool(contains_all(a, b))),
        (A::Overlap, [Datum::Array(a), Datum::Array(b)]) => Ok(Datum::Bool(
            a.items.iter().filter(|x| !x.is_null()).any(|x| b.items.iter().any(|y| !y.is_null() && compare_datums(x, y).is_eq())),
        )),
        _ => Err(internal(f, args)),
    }
}

/// Is every element of `inner` an element of `outer` (`array_contain_compare` with
/// `matchall`): a NULL in `inner` matches nothing.
fn contains_all(inner: &Array, outer: &Array) -> bool {
    inner.items.iter().all(|x| !x.is_null() && outer.items.iter().any(|y| !y.is_null() && compare_datums(x, y).is_eq()))
}

/// `x op ANY | ALL (array)` with PostgreSQL's NULL rules (`ExecEvalScalarArrayOp`).
fn any_all(op: BinaryOp, any: bool, x: &Datum, array: &Datum) -> Datum {
    let Datum::Array(a) = array else { return Datum::Null };
    if a.items.is_empty() {
        return Datum::Bool(!any);
    }
    if x.is_null() {
        return Datum::Null;
    }
    let test = |ord: Ordering| match op {
        BinaryOp::Eq => ord.is_eq(),
        BinaryOp::NotEq => ord.is_ne(),
        BinaryOp::Lt => ord.is_lt(),
        BinaryOp::LtEq => ord.is_le(),
        BinaryOp::Gt => ord.is_gt(),
        _ => ord.is_ge(),
    };
    let mut saw_null = false;
    for item in &a.items {
        if item.is_null() {
            saw_null = true;
            continue;
        }
        if test(compare_datums(x, item)) == any {
            return Datum::Bool(any);
        }
    }
    if saw_null {
        Datum::Null
    } else {
        Datum::Bool(!any)
    }
}

/// PostgreSQL-order comparison of two arrays (`array_cmp`): element by element, a NULL
/// element after every value and equal to NULL, then the shorter array first.
pub fn compare_arrays(a: &Array, b: &Array) -> Ordering {
    weft_common::types::compare_arrays(a, b)
}

fn function(f: ArrayFunction, args: Vec<Expr>, data_type: DataType) -> Expr {
    Expr::Function { func: ScalarFunction::Array(f), args, data_type }
}

fn undefined_function(name: &str, args: &[Expr]) -> Error {
    let list = args.iter().map(type_label).collect::<Vec<_>>().join(", ");
    Error::new(SqlState::UNDEFINED_FUNCTION, format!("function {name}({list}) does not exist")).with_hint(
        "No function matches the given name and argument types. You might need to add explicit type casts.",
    )
}

fn type_label(e: &Expr) -> &'static str {
    if e.is_null_literal() {
        "unknown"
    } else {
        e.data_type().name()
    }
}

/// A string literal or NULL: PostgreSQL's `unknown`, which takes the type wanted.
fn is_untyped(e: &Expr) -> bool {
    e.is_null_literal() || matches!(e, Expr::Literal { value: Datum::Text(_), data_type: DataType::Text })
}

/// `e` as an array of `elem` (an untyped literal is read as one).
fn as_array(e: Expr, array_type: DataType) -> Result<Expr> {
    let explicit = is_untyped(&e);
    coerce(e, array_type, explicit)
}

/// `e` as an element of `elem`.
fn as_element(e: Expr, elem: DataType, name: &str, all: &[Expr]) -> Result<Expr> {
    if is_untyped(&e) {
        return coerce(e, elem, true);
    }
    if can_coerce(e.data_type(), elem, false) {
        return coerce(e, elem, false);
    }
    Err(undefined_function(name, all))
}

/// The array type two arguments agree on (`anyarray`, `anyelement` resolution): the
/// element types' common type, each argument cast to it.
fn common_array(name: &str, args: &[Expr], arrays: &[usize], elements: &[usize]) -> Result<DataType> {
    let mut types = Vec::new();
    for &i in arrays {
        if is_untyped(&args[i]) {
            continue;
        }
        match args[i].data_type() {
            DataType::Array(elem) => types.push(elem.data_type()),
            _ => return Err(undefined_function(name, args)),
        }
    }
    for &i in elements {
        if is_untyped(&args[i]) {
            continue;
        }
        match args[i].data_type() {
            t if t.is_array() => return Err(undefined_function(name, args)),
            t => types.push(t),
        }
    }
    if types.is_empty() {
        return Err(Error::new(SqlState("42804"), "could not determine polymorphic type because input has type unknown"));
    }
    // PostgreSQL wants identical element types; weft lets the numeric promotions of
    // rule 1 (`resolve.rs`) through, which PostgreSQL would reach by implicit casts of
    // the non-array arguments only.
    let elem = common_type(&types, "ARRAY").map_err(|_| undefined_function(name, args))?;
    elem.array_of().ok_or_else(|| undefined_function(name, args))
}

/// Resolves a call of an array function, or hands `args` back when `name` is not one.
pub fn resolve_function(name: &str, args: Vec<Expr>) -> std::result::Result<Result<Expr>, Vec<Expr>> {
    use ArrayFunction as A;
    let f = match name {
        "array_length" => A::Length,
        "cardinality" => A::Cardinality,
        "array_lower" => A::Lower,
        "array_upper" => A::Upper,
        "array_ndims" => A::Ndims,
        "array_dims" => A::Dims,
        "array_to_string" => A::ToString,
        "string_to_array" => A::StringToArray,
        "array_append" => A::Append(ElemType::Int4),
        "array_prepend" => A::Prepend(ElemType::Int4),
        "array_cat" => A::Cat,
        "array_position" => A::Position,
        "array_positions" => A::Positions,
        "array_remove" => A::Remove,
        "array_replace" => A::Replace,
        _ => return Err(args),
    };
    Ok(resolve(f, name, args))
}

fn resolve(f: ArrayFunction, name: &str, args: Vec<Expr>) -> Result<Expr> {
    use ArrayFunction as A;
    let is_array = |e: &Expr| !is_untyped(e) && e.data_type().is_array();
    let arity_ok = match f {
        A::Cardinality | A::Ndims | A::Dims => args.len() == 1,
        A::Length | A::Lower | A::Upper | A::Append(_) | A::Prepend(_) | A::Cat | A::Positions | A::Remove => args.len() == 2,
        A::ToString | A::StringToArray | A::Position => args.len() == 2 || args.len() == 3,
        A::Replace => args.len() == 3,
        _ => false,
    };
    if !arity_ok {
        return Err(undefined_function(name, &args));
    }
    match f {
        A::Cardinality | A::Ndims | A::Dims | A::Length | A::Lower | A::Upper => {
            if !is_array(&args[0]) {
                return Err(undefined_function(name, &args));
            }
            let mut args = args;
            if args.len() == 2 {
                let dim = args.pop().expect("two arguments");
                if !is_untyped(&dim) && !can_coerce(dim.data_type(), DataType::Int4, false) || dim.data_type() == DataType::Int8 && !is_untyped(&dim) {
                    return Err(undefined_function(name, &[args[0].clone(), dim]));
                }
                args.push(coerce(dim, DataType::Int4, true)?);
            }
            let result = if f == A::Dims { DataType::Text } else { DataType::Int4 };
            Ok(function(f, args, result))
        }
        A::ToString => {
            if !is_array(&args[0]) {
                return Err(undefined_function(name, &args));
            }
            let mut out = vec![args[0].clone()];
            for a in &args[1..] {
                if !is_untyped(a) && a.data_type() != DataType::Text {
                    return Err(undefined_function(name, &args));
                }
                out.push(coerce(a.clone(), DataType::Text, true)?);
            }
            Ok(function(f, out, DataType::Text))
        }
        A::StringToArray => {
            let mut out = Vec::new();
            for a in &args {
                if !is_untyped(a) && a.data_type() != DataType::Text {
                    return Err(undefined_function(name, &args));
                }
                out.push(coerce(a.clone(), DataType::Text, true)?);
            }
            Ok(function(f, out, DataType::Array(ElemType::Text)))
        }
        A::Append(_) | A::Prepend(_) | A::Position | A::Positions | A::Remove | A::Replace => {
            let (array_at, element_at): (usize, &[usize]) = match f {
                A::Prepend(_) => (1, &[0]),
                A::Replace => (0, &[1, 2]),
                _ => (0, &[1]),
            };
            let array_type = common_array(name, &args, &[array_at], element_at)?;
            let elem = array_type.element().expect("an array type");
            let mut out = Vec::with_capacity(args.len());
            for (i, a) in args.iter().enumerate() {
                out.push(if i == array_at {
                    as_array(a.clone(), array_type)?
                } else if element_at.contains(&i) {
                    as_element(a.clone(), elem, name, &args)?
                } else {
                    // array_position's start.
                    if !is_untyped(a) && a.data_type() != DataType::Int4 {
                        return Err(undefined_function(name, &args));
                    }
                    coerce(a.clone(), DataType::Int4, true)?
                });
            }
            let DataType::Array(elem_type) = array_type else { return Err(Error::internal("array type expected")) };
            let f = match f {
                A::Append(_) => A::Append(elem_type),
                A::Prepend(_) => A::Prepend(elem_type),
                other => other,
            };
            let result = match f {
                A::Position => DataType::Int4,
                A::Positions => DataType::Array(ElemType::Int4),
                _ => array_type,
            };
            Ok(function(f, out, result))
        }
        A::Cat => {
            let array_type = common_array(name, &args, &[0, 1], &[])?;
            let out = args.into_iter().map(|a| as_array(a, array_type)).collect::<Result<Vec<_>>>()?;
            Ok(function(f, out, array_type))
        }
        _ => Err(undefined_function(name, &args)),
    }
}

/// `left || right` when either side is an array: `array_cat`, `array_append` or
/// `array_prepend`; the operands back when neither side is an array.
pub fn resolve_concat(left: Expr, right: Expr) -> std::result::Result<Result<Expr>, (Expr, Expr)> {
    let is_array = |e: &Expr| !is_untyped(e) && e.data_type().is_array();
    let (l, r) = (is_array(&left), is_array(&right));
    if !l && !r {
        return Err((left, right));
    }
    let no_operator = operator_error("||", &left, &right);
    let args = vec![left, right];
    Ok(if l && r {
        resolve(ArrayFunction::Cat, "array_cat", args).map_err(|_| no_operator)
    } else if l {
        // An untyped `'{...}'` on the other side is an array, as PostgreSQL resolves it.
        if matches!(&args[1], Expr::Literal { value: Datum::Text(t), data_type: DataType::Text } if t.trim_start().starts_with('{'))
            && args[0].data_type() != DataType::Array(ElemType::Text)
        {
            resolve(ArrayFunction::Cat, "array_cat", args)
        } else {
            resolve(ArrayFunction::Append(ElemType::Int4), "array_append", args)
        }
    } else if matches!(&args[0], Expr::Literal { value: Datum::Text(t), data_type: DataType::Text } if t.trim_start().starts_with('{'))
        && args[1].data_type() != DataType::Array(ElemType::Text)
    {
        resolve(ArrayFunction::Cat, "array_cat", args)
    } else {
        resolve(ArrayFunction::Prepend(ElemType::Int4), "array_prepend", args)
    })
}

fn operator_error(op: &str, left: &Expr, right: &Expr) -> Error {
    Error::new(SqlState::UNDEFINED_FUNCTION, format!("operator does not exist: {} {op} {}", type_label(left), type_label(right)))
        .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}

/// `left @> right`, `left <@ right`, `left && right`.
pub fn resolve_set_operator(op: &str, left: Expr, right: Expr) -> Result<Expr> {
    let f = match op {
        "@>" => ArrayFunction::Contains,
        "<@" => ArrayFunction::ContainedBy,
        _ => ArrayFunction::Overlap,
    };
    let no_operator = operator_error(op, &left, &right);
    let args = vec![left, right];
    let is_array = |e: &Expr| !is_untyped(e) && e.data_type().is_array();
    if !args.iter().any(is_array) || args.iter().any(|a| !is_untyped(a) && !a.data_type().is_array()) {
        return Err(no_operator);
    }
    let array_type = common_array(op, &args, &[0, 1], &[]).map_err(|_| no_operator)?;
    let args = args.into_iter().map(|a| as_array(a, array_type)).collect::<Result<Vec<_>>>()?;
    Ok(function(f, args, DataType::Bool))
}

/// `x op ANY | ALL (array)` over an array expression: `x` and the elements compared in
/// their common type.
pub fn resolve_any_all(op: BinaryOp, all: bool, left: Expr, array: Expr) -> Result<Expr> {
    let symbol = super::resolve::binary_op_symbol(op);
    let array_type = if is_untyped(&array) {
        let elem = if left.is_null_literal() { DataType::Text } else { left.data_type() };
        elem.array_of().ok_or_else(|| Error::new(SqlState::WRONG_OBJECT_TYPE, "op ANY/ALL (array) requires array on right side"))?
    } else {
        array.data_type()
    };
    let Some(elem) = array_type.element() else {
        return Err(Error::new(SqlState::WRONG_OBJECT_TYPE, "op ANY/ALL (array) requires array on right side"));
    };
    let operand = if left.is_null_literal() {
        elem
    } else {
        common_type(&[left.data_type(), elem], "ANY").map_err(|_| {
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("operator does not exist: {} {symbol} {}", type_label(&left), elem.name()),
            )
            .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
        })?
    };
    let operand_array = operand.array_of().ok_or_else(|| Error::internal("array of array"))?;
    let left = coerce(left, operand, false)?;
    let array = if is_untyped(&array) { coerce(array, operand_array, true)? } else { coerce(array, operand_array, false)? };
    let f = if all { ArrayFunction::All(op) } else { ArrayFunction::Any(op) };
    Ok(function(f, vec![left, array], DataType::Bool))
}

/// `ARRAY[...]` over already typed elements (the binder unifies them).
pub fn construct(elem: DataType, items: Vec<Expr>) -> Result<Expr> {
    let array_type = elem.array_of().ok_or_else(|| Error::not_supported("multidimensional arrays are not supported"))?;
    let DataType::Array(elem) = array_type else { unreachable!("array_of gives an array") };
    Ok(function(ArrayFunction::Construct(elem), items, array_type))
}

/// `a[i]` or `a[lo:hi]`.
pub fn subscript(array: Expr, lower: Option<Expr>, upper: Option<Expr>, slice: bool) -> Result<Expr> {
    let array_type = array.data_type();
    let Some(elem) = array_type.element().filter(|_| !array.is_null_literal()) else {
        return Err(Error::new(
            SqlState::DATATYPE_MISMATCH,
            format!("cannot subscript type {} because it does not support subscripting", type_label(&array)),
        ));
    };
    let index = |e: Expr| -> Result<Expr> {
        if !is_untyped(&e) && !can_coerce(e.data_type(), DataType::Int4, false) && e.data_type() != DataType::Int8 {
            return Err(Error::new(SqlState::DATATYPE_MISMATCH, "array subscript must have type integer"));
        }
        coerce(e, DataType::Int4, true)
    };
    if !slice {
        let i = lower.ok_or_else(|| Error::internal("subscript without an index"))?;
        return Ok(function(ArrayFunction::Subscript, vec![array, index(i)?], elem));
    }
    let f = ArrayFunction::Slice { lower: lower.is_some(), upper: upper.is_some() };
    let mut args = vec![array];
    if let Some(l) = lower {
        args.push(index(l)?);
    }
    if let Some(u) = upper {
        args.push(index(u)?);
    }
    Ok(function(f, args, array_type))
}
