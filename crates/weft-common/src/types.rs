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
    /// A one-dimensional array (lower bound 1) of a scalar type. The element type is a
    /// separate enum so that `DataType` stays `Copy` and arrays of arrays cannot be named.
    Array(ElemType),
}

/// The element type of an array: every scalar `DataType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ElemType {
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

impl ElemType {
    /// Every element type, in declaration order (`elem as u8` indexes it).
    pub const ALL: [ElemType; 11] = [
        ElemType::Bool,
        ElemType::Int4,
        ElemType::Int8,
        ElemType::Float8,
        ElemType::Numeric,
        ElemType::Text,
        ElemType::Date,
        ElemType::Time,
        ElemType::Timestamp,
        ElemType::TimestampTz,
        ElemType::Interval,
    ];

    pub fn from_u8(tag: u8) -> Option<ElemType> {
        ElemType::ALL.get(usize::from(tag)).copied()
    }

    pub fn data_type(self) -> DataType {
        match self {
            ElemType::Bool => DataType::Bool,
            ElemType::Int4 => DataType::Int4,
            ElemType::Int8 => DataType::Int8,
            ElemType::Float8 => DataType::Float8,
            ElemType::Numeric => DataType::Numeric,
            ElemType::Text => DataType::Text,
            ElemType::Date => DataType::Date,
            ElemType::Time => DataType::Time,
            ElemType::Timestamp => DataType::Timestamp,
            ElemType::TimestampTz => DataType::TimestampTz,
            ElemType::Interval => DataType::Interval,
        }
    }
}

impl DataType {
    /// The array type whose elements are `self`; `None` for an array (weft's arrays have
    /// scalar elements only).
    pub fn array_of(self) -> Option<DataType> {
        Some(DataType::Array(match self {
            DataType::Bool => ElemType::Bool,
            DataType::Int4 => ElemType::Int4,
            DataType::Int8 => ElemType::Int8,
            DataType::Float8 => ElemType::Float8,
            DataType::Numeric => ElemType::Numeric,
            DataType::Text => ElemType::Text,
            DataType::Date => ElemType::Date,
            DataType::Time => ElemType::Time,
            DataType::Timestamp => ElemType::Timestamp,
            DataType::TimestampTz => ElemType::TimestampTz,
            DataType::Interval => ElemType::Interval,
            DataType::Array(_) => return None,
        }))
    }

    /// The element type of an array type.
    pub fn element(self) -> Option<DataType> {
        match self {
            DataType::Array(elem) => Some(elem.data_type()),
            _ => None,
        }
    }

    pub fn is_array(self) -> bool {
        matches!(self, DataType::Array(_))
    }

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
            DataType::Array(elem) => match elem {
                ElemType::Bool => "boolean[]",
                ElemType::Int4 => "integer[]",
                ElemType::Int8 => "bigint[]",
                ElemType::Float8 => "double precision[]",
                ElemType::Numeric => "numeric[]",
                ElemType::Text => "text[]",
                ElemType::Date => "date[]",
                ElemType::Time => "time without time zone[]",
                ElemType::Timestamp => "timestamp without time zone[]",
                ElemType::TimestampTz => "timestamp with time zone[]",
                ElemType::Interval => "interval[]",
            },
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
            _ if lower.ends_with("[]") => {
                return DataType::from_sql_name(&lower[..lower.len() - 2])?.array_of().ok_or_else(|| {
                    Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{name}\" does not exist"))
                })
            }
            _ if lower.starts_with('_') => {
                return DataType::from_sql_name(&lower[1..])?.array_of().ok_or_else(|| {
                    Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{name}\" does not exist"))
                })
            }
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
            DataType::Text | DataType::Array(_) => None,
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
    /// A one-dimensional array with lower bound 1 (boxed: a `Datum` stays 32 bytes).
    Array(Box<Array>),
}

/// The value of an array: its element type (an empty array still has one) and its
/// elements, each a datum of that type or `Datum::Null`.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub elem: ElemType,
    pub items: Vec<Datum>,
}

impl Array {
    /// PostgreSQL's `array_out`: `{1,2,NULL}`; an element is double-quoted when it is
    /// empty, is `NULL` in any case, or holds a brace, comma, double quote, backslash or white
    /// space, with double quotes and backslashes escaped by a backslash.
    pub fn to_pg_text(&self) -> String {
        let mut out = String::from("{");
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match item.to_pg_text() {
                None => out.push_str("NULL"),
                Some(text) => {
                    let needs_quotes = text.is_empty()
                        || text.eq_ignore_ascii_case("null")
                        || text.chars().any(|c| {
                            matches!(c, '{' | '}' | ',' | '"' | '\\' | ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
                        });
                    if needs_quotes {
                        out.push('"');
                        for c in text.chars() {
                            if c == '"' || c == '\\' {
                                out.push('\\');
                            }
                            out.push(c);
                        }
                        out.push('"');
                    } else {
                        out.push_str(&text);
                    }
                }
            }
        }
        out.push('}');
        out
    }
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
            Datum::Array(a) => DataType::Array(a.elem),
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
            Datum::TimestampTz(t) => crate::timezone::with_current(|zone| crate::timezone::format_timestamptz(*t, zone)),
            Datum::Interval(iv) => datetime::format_interval(iv),
            Datum::Array(a) => a.to_pg_text(),
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

/// PostgreSQL's order of two arrays of one element type (`array_cmp`): element by
/// element, a NULL element after every value and equal to NULL, then the shorter first.
/// Elements compare as their type's btree order (float8's NaN last, numeric and interval
/// by value, text bytewise: the C collation).
pub fn compare_arrays(a: &Array, b: &Array) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for (x, y) in a.items.iter().zip(&b.items) {
        let ord = match (x, y) {
            (Datum::Null, Datum::Null) => Ordering::Equal,
            (Datum::Null, _) => Ordering::Greater,
            (_, Datum::Null) => Ordering::Less,
            (Datum::Bool(x), Datum::Bool(y)) => x.cmp(y),
            (Datum::Int4(x), Datum::Int4(y)) | (Datum::Date(x), Datum::Date(y)) => x.cmp(y),
            (Datum::Int8(x), Datum::Int8(y))
            | (Datum::Time(x), Datum::Time(y))
            | (Datum::Timestamp(x), Datum::Timestamp(y))
            | (Datum::TimestampTz(x), Datum::TimestampTz(y)) => x.cmp(y),
            (Datum::Float8(x), Datum::Float8(y)) => compare_float8(*x, *y),
            (Datum::Numeric(x), Datum::Numeric(y)) => x.cmp_value(y),
            (Datum::Text(x), Datum::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Datum::Interval(x), Datum::Interval(y)) => x.cmp_value(y),
            // Elements of one array type never differ in type.
            _ => Ordering::Equal,
        };
        if ord.is_ne() {
            return ord;
        }
    }
    a.items.len().cmp(&b.items.len())
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

#[cfg(test)]
mod array_tests {
    use super::*;

    fn text_array(items: &[Option<&str>]) -> Datum {
        let items = items.iter().map(|i| i.map_or(Datum::Null, |s| Datum::Text(s.to_string()))).collect();
        Datum::Array(Box::new(Array { elem: ElemType::Text, items }))
    }

    #[test]
    fn array_out_quotes_as_postgres_does() {
        // select array['a b', 'x"y', '', null, 'NULL', 'null', 'a\b', '{', 'a,b', 'plain']::text[];
        let a = text_array(&[
            Some("a b"),
            Some("x\"y"),
            Some(""),
            None,
            Some("NULL"),
            Some("null"),
            Some("a\\b"),
            Some("{"),
            Some("a,b"),
            Some("plain"),
            Some("é"),
        ]);
        assert_eq!(
            a.to_pg_text().unwrap(),
            r#"{"a b","x\"y","",NULL,"NULL","null","a\\b","{","a,b",plain,é}"#
        );
        assert_eq!(text_array(&[]).to_pg_text().unwrap(), "{}");
        let ints = Datum::Array(Box::new(Array { elem: ElemType::Int4, items: vec![Datum::Int4(1), Datum::Null, Datum::Int4(-3)] }));
        assert_eq!(ints.to_pg_text().unwrap(), "{1,NULL,-3}");
        assert_eq!(DataType::from_sql_name("int[]").unwrap(), DataType::Array(ElemType::Int4));
        assert_eq!(DataType::from_sql_name("_text").unwrap(), DataType::Array(ElemType::Text));
        assert!(DataType::from_sql_name("int[][]").is_err());
        assert_eq!(DataType::Array(ElemType::Int4).name(), "integer[]");
        assert_eq!(std::mem::size_of::<Datum>(), 32);
    }
}
