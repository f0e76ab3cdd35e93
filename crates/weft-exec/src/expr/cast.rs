//! Run-time casts between weft's types, with PostgreSQL's input functions, output
//! functions and conversion rules.
//!
//! Which casts exist is decided at resolution (`resolve::can_coerce`); this module
//! performs them. The rules, each taken from the PostgreSQL function named:
//!
//! 1. text → int4/int8 (`pg_strtoint32/64`, PostgreSQL 15): optional surrounding
//!    whitespace and sign, then decimal digits only (no `_`, no hex). An overflow is
//!    reported as soon as the digits exceed the range, before trailing junk is seen.
//! 2. text → float8 (`float8in`): `strtod` syntax plus `NaN`, `Infinity`, `inf`, signed,
//!    case-insensitive; a finite literal that rounds to ±∞ or to 0 is out of range.
//! 3. text → bool (`parse_bool_with_len`): any case-insensitive prefix of `true`,
//!    `false`, `yes`, `no`; `on`, `of`, `off`; exactly `1` or `0`.
//! 4. float8 → int (`dtoi4`/`dtoi8`): `rint` (half to even), then a range check; NaN is
//!    out of range. numeric → int rounds half away from zero (`numeric_int4`).
//! 5. float8 → numeric (`float8_numeric`): through `%.15g` text, so 15 significant
//!    digits survive.
//! 6. bool → text is `true`/`false` (`booltext`), unlike bool output (`t`/`f`); every
//!    other type → text is its output function.

use weft_common::types::format_float8;
use weft_common::{Coercion, DataType, Datum, Error, Numeric, Result, SqlState, TypeModifier};

/// Converts `value` to type `to` exactly as PostgreSQL's cast would. NULL stays NULL.
pub fn cast_datum(value: Datum, to: DataType) -> Result<Datum> {
    let from = match value.data_type() {
        None => return Ok(Datum::Null),
        Some(from) if from == to => return Ok(value),
        Some(from) => from,
    };
    if let Some(result) = super::datetime::cast(&value, to) {
        return result;
    }
    match (value, to) {
        (Datum::Text(s), _) => parse_text(&s, to),
        (Datum::Array(a), DataType::Array(elem)) => {
            let items = a.items.into_iter().map(|item| cast_datum(item, elem.data_type())).collect::<Result<Vec<_>>>()?;
            Ok(Datum::Array(Box::new(weft_common::types::Array { elem, items })))
        }
        (Datum::Bool(b), DataType::Text) => Ok(Datum::Text((if b { "true" } else { "false" }).to_string())),
        (v, DataType::Text) => Ok(Datum::Text(v.to_pg_text().unwrap_or_default())),
        (Datum::Bool(b), DataType::Int4) => Ok(Datum::Int4(b as i32)),
        (Datum::Int4(v), DataType::Bool) => Ok(Datum::Bool(v != 0)),
        (Datum::Int4(v), DataType::Int8) => Ok(Datum::Int8(v as i64)),
        (Datum::Int4(v), DataType::Float8) => Ok(Datum::Float8(v as f64)),
        (Datum::Int4(v), DataType::Numeric) => Ok(Datum::Numeric(Numeric::from_i64(v as i64))),
        (Datum::Int8(v), DataType::Int4) => i32::try_from(v).map(Datum::Int4).map_err(|_| Error::out_of_range("integer")),
        (Datum::Int8(v), DataType::Float8) => Ok(Datum::Float8(v as f64)),
        (Datum::Int8(v), DataType::Numeric) => Ok(Datum::Numeric(Numeric::from_i64(v))),
        (Datum::Float8(v), DataType::Int4) => float8_to_int4(v).map(Datum::Int4),
        (Datum::Float8(v), DataType::Int8) => float8_to_int8(v).map(Datum::Int8),
        (Datum::Float8(v), DataType::Numeric) => float8_to_numeric(v).map(Datum::Numeric),
        (Datum::Numeric(n), DataType::Int4) => n.to_i32_rounded().map(Datum::Int4),
        (Datum::Numeric(n), DataType::Int8) => n.to_i64_rounded().map(Datum::Int8),
        (Datum::Numeric(n), DataType::Float8) => Ok(Datum::Float8(n.to_f64())),
        _ => Err(cannot_cast(from, to)),
    }
}

/// `cannot cast type boolean to bigint` (42846).
pub fn cannot_cast(from: DataType, to: DataType) -> Error {
    Error::new(SqlState::CANNOT_COERCE, format!("cannot cast type {} to {}", from.name(), to.name()))
}

/// Parses `s` with the input function of `to`.
pub fn parse_text(s: &str, to: DataType) -> Result<Datum> {
    Ok(match to {
        DataType::Text => Datum::Text(s.to_string()),
        DataType::Bool => Datum::Bool(parse_bool(s)?),
        DataType::Int4 => Datum::Int4(parse_int(s, i32::MIN as i128, i32::MAX as i128, "integer")? as i32),
        DataType::Int8 => Datum::Int8(parse_int(s, i64::MIN as i128, i64::MAX as i128, "bigint")? as i64),
        DataType::Float8 => Datum::Float8(parse_float8(s)?),
        DataType::Numeric => Datum::Numeric(Numeric::parse(s)?),
        DataType::Date | DataType::Time | DataType::Timestamp | DataType::TimestampTz | DataType::Interval => {
            super::datetime::parse_text(s, to)?
        }
        DataType::Array(elem) => super::array_literal::parse_array(s, elem)?,
    })
}

fn invalid_syntax(type_name: &str, input: &str) -> Error {
    Error::new(SqlState::INVALID_TEXT_REPRESENTATION, format!("invalid input syntax for type {type_name}: \"{input}\""))
}

/// C's `isspace` in the C locale, which PostgreSQL's input functions skip.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{0b}' | '\u{0c}')
}

/// `pg_strtoint32`/`pg_strtoint64`: whitespace, sign, digits, whitespace.
fn parse_int(s: &str, min: i128, max: i128, type_name: &str) -> Result<i128> {
    let body = s.trim_start_matches(is_c_space);
    let (negative, digits) = match body.as_bytes().first() {
        Some(b'-') => (true, &body[1..]),
        Some(b'+') => (false, &body[1..]),
        _ => (false, body),
    };
    let digit_count = digits.bytes().take_while(u8::is_ascii_digit).count();
    if digit_count == 0 {
        return Err(invalid_syntax(type_name, s));
    }
    let mut magnitude: i128 = 0;
    for b in digits[..digit_count].bytes() {
        magnitude = magnitude * 10 + i128::from(b - b'0');
        let value = if negative { -magnitude } else { magnitude };
        if value < min || value > max {
            return Err(Error::new(
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                format!("value \"{s}\" is out of range for type {type_name}"),
            ));
        }
    }
    if !digits[digit_count..].chars().all(is_c_space) {
        return Err(invalid_syntax(type_name, s));
    }
    Ok(if negative { -magnitude } else { magnitude })
}

/// `float8in`.
pub fn parse_float8(s: &str) -> Result<f64> {
    const TYPE_NAME: &str = "double precision";
    let leading = s.len() - s.trim_start_matches(is_c_space).len();
    let number = s.trim_matches(is_c_space);
    if number.is_empty() {
        return Err(invalid_syntax(TYPE_NAME, s));
    }
    let unsigned = number.trim_start_matches(['+', '-']);
    if unsigned.len() + 1 < number.len() {
        return Err(invalid_syntax(TYPE_NAME, s));
    }
    let lower = unsigned.to_ascii_lowercase();
    let is_special = matches!(lower.as_str(), "nan" | "inf" | "infinity");
    // Rust's parser also accepts these words, but only `strtod`'s decimal syntax may
    // otherwise follow: digits, one point, an exponent.
    let decimal_ok = unsigned.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if !is_special && !decimal_ok {
        return Err(invalid_syntax(TYPE_NAME, s));
    }
    let value: f64 = number.parse().map_err(|_| invalid_syntax(TYPE_NAME, s))?;
    if !is_special {
        let mantissa = unsigned.split(['e', 'E']).next().unwrap_or("");
        let nonzero = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
        if value.is_infinite() || (value == 0.0 && nonzero) {
            let shown = &s[..leading + number.len()];
            return Err(Error::new(
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                format!("\"{shown}\" is out of range for type {TYPE_NAME}"),
            ));
        }
    }
    Ok(value)
}

/// `boolin`/`parse_bool_with_len`.
pub fn parse_bool(s: &str) -> Result<bool> {
    let word = s.trim_matches(is_c_space).to_ascii_lowercase();
    let is_prefix_of = |full: &str, min_len: usize| word.len() >= min_len && full.starts_with(word.as_str());
    let parsed = match word.as_bytes().first() {
        Some(b't') if is_prefix_of("true", 1) => Some(true),
        Some(b'f') if is_prefix_of("false", 1) => Some(false),
        Some(b'y') if is_prefix_of("yes", 1) => Some(true),
        Some(b'n') if is_prefix_of("no", 1) => Some(false),
        Some(b'o') if is_prefix_of("on", 2) => Some(true),
        Some(b'o') if is_prefix_of("off", 2) => Some(false),
        Some(b'1') if word.len() == 1 => Some(true),
        Some(b'0') if word.len() == 1 => Some(false),
        _ => None,
    };
    parsed.ok_or_else(|| invalid_syntax("boolean", s))
}

/// `dtoi4`: round half to even, then require `-2^31 <= v < 2^31`.
pub fn float8_to_int4(v: f64) -> Result<i32> {
    let rounded = v.round_ties_even();
    if rounded.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&rounded) {
        return Err(Error::out_of_range("integer"));
    }
    Ok(rounded as i32)
}

/// `dtoi8`: round half to even, then require `-2^63 <= v < 2^63`.
pub fn float8_to_int8(v: f64) -> Result<i64> {
    let rounded = v.round_ties_even();
    if rounded.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&rounded) {
        return Err(Error::out_of_range("bigint"));
    }
    Ok(rounded as i64)
}

/// `float8_numeric`: the value printed with 15 significant digits (`%.15g`), read back
/// as numeric. NaN and the infinities map to numeric's own.
pub fn float8_to_numeric(v: f64) -> Result<Numeric> {
    if v.is_nan() {
        return Ok(Numeric::NAN);
    }
    if v.is_infinite() {
        return Ok(if v > 0.0 { Numeric::INFINITY } else { Numeric::NEG_INFINITY });
    }
    Numeric::parse(&float8_to_decimal_15(v))
}

/// `v` rounded to 15 significant digits, trailing zeros dropped, in plain positional
/// notation (no exponent): what `%.15g` prints, with the exponent applied.
fn float8_to_decimal_15(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let sci = format!("{:.14e}", v.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let point = exponent + 1; // digits before the decimal point
    let mut out = String::with_capacity(digits.len() + 24);
    if v < 0.0 {
        out.push('-');
    }
    let len = digits.len() as i64;
    if point >= len {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', (point - len) as usize));
    } else if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(digits);
    } else {
        out.push_str(&digits[..point as usize]);
        out.push('.');
        out.push_str(&digits[point as usize..]);
    }
    out
}

/// float8 text output (`float8out` with `extra_float_digits = 1`).
pub fn float8_to_text(v: f64) -> String {
    format_float8(v)
}

/// A text field read as a type with a modifier (COPY FROM): the type's input function with
/// the modifier, as PostgreSQL's `numeric_in` / `varchar_input` / `int2in` take it — a long
/// string is refused unless the excess is spaces.
pub fn cast_text_to_modifier(text: String, modifier: TypeModifier) -> Result<Datum> {
    match modifier {
        TypeModifier::SmallInt => small_int_from_text(&text),
        _ => modifier.apply(cast_datum(Datum::Text(text), modifier.storage_type())?, Coercion::Assignment),
    }
}

/// PostgreSQL's `int2in`, through `int8`'s reader.
pub(crate) fn small_int_from_text(text: &str) -> Result<Datum> {
    let out_of_range = || Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, format!("value \"{text}\" is out of range for type smallint"));
    match cast_datum(Datum::Text(text.to_string()), DataType::Int8) {
        Ok(value) => TypeModifier::SmallInt.apply(value, Coercion::Assignment).map_err(|_| out_of_range()),
        Err(error) if error.sqlstate == SqlState::NUMERIC_VALUE_OUT_OF_RANGE => Err(out_of_range()),
        Err(mut error) => {
            error.message = error.message.replacen("type bigint", "type smallint", 1);
            Err(error)
        }
    }
}
