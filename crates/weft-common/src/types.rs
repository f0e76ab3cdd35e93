//! SQL data types and the in-memory value of one field (`Datum`).

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
            _ => {
                return Err(Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{name}\" does not exist")))
            }
        })
    }

    /// Width in the tuple format, or `None` for variable-length types.
    pub fn fixed_width(self) -> Option<usize> {
        match self {
            DataType::Bool => Some(1),
            DataType::Int4 => Some(4),
            DataType::Int8 | DataType::Float8 => Some(8),
            DataType::Numeric => Some(18),
            DataType::Text => None,
        }
    }

    pub fn is_numeric_family(self) -> bool {
        matches!(self, DataType::Int4 | DataType::Int8 | DataType::Float8 | DataType::Numeric)
    }
}

/// One field value in memory.
#[derive(Clone, Debug, PartialEq)]
pub enum Datum {
    Null,
    Bool(bool),
    Int4(i32),
    Int8(i64),
    Float8(f64),
    Numeric(Numeric),
    Text(String),
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
    let sci = format!("{v:e}");
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
