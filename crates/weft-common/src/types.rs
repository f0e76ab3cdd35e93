//! SQL data types and the in-memory value of one field (`Datum`).

use crate::datetime::{self, Interval};
use crate::numeric::Numeric;
use crate::{Error, Result, SqlState};

/// The SQL types weft stores. Names follow PostgreSQL's catalog (`int4`, not `integer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DataType {
    Bool,
    Int4,
    Int8,
    Float8,
    Numeric,
    Text,
    Date,
    Time,
    Timestamp,
    TimestampTz,
    Interval,
}

impl DataType {
    /// PostgreSQL's internal name, as `\d` prints it in `format_type` style.
    pub fn name(self) -> &'static str {
        match self {
            DataType::Bool => "boolean",
            DataType::Int4 => "integer",
            DataType::Int8 => "bigint",
            DataType::Float8 => "double precision",
            DataType::Numeric => "numeric",
            DataType::Text => "text",
            DataType::Date => "date",
            DataType::Time => "time without time zone",
            DataType::Timestamp => "timestamp without time zone",
            DataType::TimestampTz => "timestamp with time zone",
            DataType::Interval => "interval",
        }
    }

    /// Parse a type name as written in SQL (`int`, `int4`, `integer`, `bigint`, ...).
    pub fn from_sql_name(name: &str) -> Result<DataType> {
        let lower = name.trim().to_ascii_lowercase();
        Ok(match lower.as_str() {
            "bool" | "boolean" => DataType::Bool,
            "int" | "int4" | "integer" | "serial" | "serial4" | "smallint" | "int2" => DataType::Int4,
            "int8" | "bigint" | "bigserial" | "serial8" => DataType::Int8,
            "float8" | "double precision" | "float" | "double" | "real" | "float4" => DataType::Float8,
            "numeric" | "decimal" => DataType::Numeric,
            "text" | "varchar" | "character varying" | "char" | "character" | "bpchar" | "string" | "name" => {
                DataType::Text
            }
            "date" => DataType::Date,
            "time" | "time without time zone" => DataType::Time,
            "timestamp" | "timestamp without time zone" => DataType::Timestamp,
            "timestamptz" | "timestamp with time zone" => DataType::TimestampTz,
            "interval" => DataType::Interval,
            _ => {
                return Err(Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{name}\" does not exist")))
            }
        })
    }

    /// Width in the tuple format, or `None` for variable-length types.
    pub fn fixed_width(self) -> Option<usize> {
        match self {
            DataType::Bool => Some(1),
            DataType::Int4 | DataType::Date => Some(4),
            DataType::Int8 | DataType::Float8 | DataType::Time | DataType::Timestamp | DataType::TimestampTz => Some(8),
            DataType::Numeric => Some(18),
            DataType::Interval => Some(16),
            DataType::Text => None,
        }
    }

    pub fn is_numeric_family(self) -> bool {
        matches!(self, DataType::Int4 | DataType::Int8 | DataType::Float8 | DataType::Numeric)
    }
}

/// One field value in memory.
#[derive(Clone, Debug, PartialEq)]
#[repr(u64)]
pub enum Datum {
    Null,
    Bool(bool),
    Int4(i32),
    Int8(i64),
    Float8(f64),
    Numeric(Numeric),
    Text(String),
    /// Days since 2000-01-01 (`datetime`).
    Date(i32),
    /// Microseconds since midnight.
    Time(i64),
    /// Microseconds since 2000-01-01 00:00.
    Timestamp(i64),
    /// Microseconds since 2000-01-01 00:00 UTC.
    TimestampTz(i64),
    Interval(Interval),
}

impl Datum {
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    /// The type of a non-null value.
    pub fn data_type(&self) -> Option<DataType> {
        Some(match self {
            Datum::Null => return None,
            Datum::Bool(_) => DataType::Bool,
            Datum::Int4(_) => DataType::Int4,
            Datum::Int8(_) => DataType::Int8,
            Datum::Float8(_) => DataType::Float8,
            Datum::Numeric(_) => DataType::Numeric,
            Datum::Text(_) => DataType::Text,
            Datum::Date(_) => DataType::Date,
            Datum::Time(_) => DataType::Time,
            Datum::Timestamp(_) => DataType::Timestamp,
            Datum::TimestampTz(_) => DataType::TimestampTz,
            Datum::Interval(_) => DataType::Interval,
        })
    }

    /// The value as PostgreSQL's output function prints it; `None` for NULL.
    pub fn to_pg_text(&self) -> Option<String> {
        Some(match self {
            Datum::Null => return None,
            Datum::Bool(b) => (if *b { "t" } else { "f" }).to_string(),
            Datum::Int4(v) => v.to_string(),
            Datum::Int8(v) => v.to_string(),
            Datum::Float8(v) => format_float8(*v),
            Datum::Numeric(n) => n.to_string(),
            Datum::Text(s) => s.clone(),
            Datum::Date(d) => datetime::format_date(*d),
            Datum::Time(t) => datetime::format_time(*t),
            Datum::Timestamp(t) => datetime::format_timestamp(*t, false),
            Datum::TimestampTz(t) => datetime::format_timestamp(*t, true),
            Datum::Interval(iv) => datetime::format_interval(iv),
        })
    }
}

/// float8 output as PostgreSQL 12+ prints it with the default `extra_float_digits = 1`:
/// the shortest digits that round-trip, in fixed notation when the decimal exponent
/// is in [-4, 15), otherwise in `%e` style with a signed two-digit-minimum exponent.
pub fn format_float8(v: f64) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Rust's `{:e}` yields the shortest round-trip digits: "-1.2345e17".
    let sci = shortest_digits(v);
    let (mantissa, exponent) = sci.split_once('e').expect("LowerExp always has an exponent");
    let exponent: i32 = exponent.parse().expect("LowerExp exponent is an integer");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::with_capacity(24);
    out.push_str(sign);
    if (-4..15).contains(&exponent) {
        if exponent < 0 {
            out.push_str("0.");
            for _ in 0..(-exponent - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        } else {
            let int_len = exponent as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                for _ in digits.len()..int_len {
                    out.push('0');
                }
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        let abs = exponent.unsigned_abs();
        if abs < 10 {
            out.push('0');
        }
        out.push_str(&abs.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn float8_output_avoids_rounding_edges_as_postgres_does() {
        // Printed by PostgreSQL 15 (extra_float_digits = 1).
        for (input, pg) in [
            ("-1.13233158e20", "-1.1323315800000001e+20"),
            ("5.2510796800000004e+22", "5.2510796800000004e+22"),
            ("1e20", "1e+20"),
            ("1.5e15", "1.5e+15"),
            ("123456789012345678", "1.2345678901234568e+17"),
            ("0.1", "0.1"),
            ("3.14159", "3.14159"),
            ("566663119741467.2", "566663119741467.2"),
            ("-17638639659163.062", "-17638639659163.062"),
        ] {
            assert_eq!(super::format_float8(input.parse().unwrap()), pg, "{input}");
        }
    }

    use super::*;

    #[test]
    fn float8_output_matches_postgres() {
        let cases = [
            (1.0, "1"),
            (0.1, "0.1"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (1e21, "1e+21"),
            (1e15, "1e+15"),
            (1e14, "100000000000000"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (-2.5, "-2.5"),
            (1.0 / 3.0, "0.3333333333333333"),
            (1e-100, "1e-100"),
            (f64::MAX, "1.7976931348623157e+308"),
        ];
        for (v, s) in cases {
            assert_eq!(format_float8(v), s, "{v}");
        }
        assert_eq!(format_float8(-0.0), "-0");
        assert_eq!(format_float8(f64::NAN), "NaN");
        assert_eq!(format_float8(f64::NEG_INFINITY), "-Infinity");
    }
}

/// The shortest `{:e}` digits that read back as `v` and lie strictly inside its rounding
/// interval. Rust's shortest form may sit exactly on the interval's edge (a decimal that is
/// the midpoint between `v` and a neighbour, read back as `v` by round-half-even);
/// PostgreSQL's Ryu does not accept edges, so there it prints more digits
/// (`-1.13233158e20` reads back to a double PostgreSQL prints as `-1.1323315800000001e+20`).
fn shortest_digits(v: f64) -> String {
    let shortest = format!("{v:e}");
    if !is_rounding_edge(v, &shortest) {
        return tie_to_even(v, shortest);
    }
    let digits = shortest.split('e').next().unwrap_or("").bytes().filter(u8::is_ascii_digit).count();
    for after_point in digits..=16 {
        let candidate = format!("{v:.after_point$e}");
        if candidate.parse::<f64>() == Ok(v) && !is_rounding_edge(v, &candidate) {
            // Drop trailing zeros of the mantissa, as the shortest form has none.
            let (mantissa, exponent) = candidate.split_once('e').expect("LowerExp has an exponent");
            let mantissa = if mantissa.contains('.') { mantissa.trim_end_matches('0').trim_end_matches('.') } else { mantissa };
            return format!("{mantissa}e{exponent}");
        }
    }
    format!("{v:.16e}")
}

/// When `v` lies exactly halfway between the shortest digits and their neighbour with the
/// same number of digits, PostgreSQL's Ryu takes the even last digit; Rust's may not.
fn tie_to_even(v: f64, text: String) -> String {
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let Some((mantissa, exponent)) = unsigned.split_once('e') else { return text };
    let Ok(exp10) = exponent.parse::<i32>() else { return text };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let Ok(d) = digits.parse::<u128>() else { return text };
    if d % 2 == 0 {
        return text;
    }
    let k = exp10 - (digits.len() as i32 - 1);
    let bits = v.abs().to_bits();
    let (biased, fraction) = ((bits >> 52) as i32, bits & ((1 << 52) - 1));
    let (m, e) = if biased == 0 { (fraction, -1074) } else { (fraction | (1 << 52), biased - 1075) };
    // v = (2d ± 1) * 10^k / 2 exactly: halfway to d ± 1.
    let other = if exact_equal(m as u128, e + 1, 2 * d - 1, k) {
        d - 1
    } else if exact_equal(m as u128, e + 1, 2 * d + 1, k) {
        d + 1
    } else {
        return text;
    };
    let other = other.to_string();
    if other.len() != digits.len() {
        return text;
    }
    let trimmed = other.trim_end_matches('0');
    let trimmed = if trimmed.is_empty() { "0" } else { trimmed };
    let (first, rest) = trimmed.split_at(1);
    if rest.is_empty() {
        format!("{sign}{first}e{exp10}")
    } else {
        format!("{sign}{first}.{rest}e{exp10}")
    }
}

/// Is the decimal `text` (as `{:e}` prints it) exactly the midpoint between `v` and one of
/// its neighbours? Decided in exact integer arithmetic; `false` when that overflows.
fn is_rounding_edge(v: f64, text: &str) -> bool {
    let Some((mantissa, exponent)) = text.trim_start_matches('-').split_once('e') else { return false };
    let Ok(mut k) = exponent.parse::<i32>() else { return false };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let Ok(d) = format!("{int_part}{frac_part}").parse::<u128>() else { return false };
    k -= frac_part.len() as i32;
    // |v| = m * 2^e.
    let bits = v.abs().to_bits();
    let (biased, fraction) = ((bits >> 52) as i32, bits & ((1 << 52) - 1));
    let (m, e) = if biased == 0 { (fraction, -1074) } else { (fraction | (1 << 52), biased - 1075) };
    let mut midpoints = vec![(2 * m as u128 + 1, e - 1), (2 * m as u128 - 1, e - 1)];
    if m == 1 << 52 && biased > 1 {
        // Just above a power of two the lower neighbour is half an ulp away.
        midpoints.push((4 * m as u128 - 1, e - 2));
    }
    midpoints.into_iter().any(|(a, b)| exact_equal(a, b, d, k))
}

/// a * 2^b == d * 10^k, in u128 arithmetic (false on overflow).
fn exact_equal(a: u128, b: i32, d: u128, k: i32) -> bool {
    let (shift2, shift10) = ((-b).max(0) as u32, (-k).max(0) as u32);
    let pow10 = |n: u32| 10u128.checked_pow(n);
    let left = pow10(shift10).and_then(|p| a.checked_mul(p)).and_then(|x| shl(x, (b + shift2 as i32) as u32));
    let right = pow10((k + shift10 as i32) as u32).and_then(|p| d.checked_mul(p)).and_then(|x| shl(x, shift2));
    matches!((left, right), (Some(l), Some(r)) if l == r)
}

fn shl(x: u128, n: u32) -> Option<u128> {
    if n >= 128 || (x != 0 && x.leading_zeros() < n) {
        return None;
    }
    Some(x << n)
}

/// PostgreSQL's float8 order (`float8_cmp_internal`): NaN is larger than every other
/// value and equal to itself; `-0 = 0`.
pub fn compare_float8(a: f64, b: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}
