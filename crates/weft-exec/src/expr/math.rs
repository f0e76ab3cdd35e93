//! Numeric functions: `round`, `trunc`, `ceil`, `floor`, `sign`, `sqrt`, `power`, `mod`,
//! with PostgreSQL's rounding rules (numeric rounds half away from zero; float8 `round`
//! is `rint`, half to even) and its error codes; the float8 transcendental functions
//! (`exp`, `ln`, `log`, trigonometry) through the platform's libm, as PostgreSQL's are;
//! `gcd`, `lcm`, `div`, `width_bucket`, `scale`; the integer bitwise operators.

use weft_common::numeric::Numeric;
use weft_common::{Datum, Error, Result, SqlState};

use super::eval::{eval_binary, numeric_overflow};
use super::{BinaryOp, ScalarFunction as F};

const INVALID_ARGUMENT_FOR_POWER: SqlState = SqlState("2201F");

pub(super) fn call(func: F, args: &[Datum]) -> Result<Datum> {
    match (func, args) {
        (F::Round, [Datum::Numeric(n)]) => Ok(Datum::Numeric(n.round(0)?)),
        (F::Round, [Datum::Numeric(n), Datum::Int4(s)]) => Ok(Datum::Numeric(n.round(*s)?)),
        (F::Round, [Datum::Float8(x)]) => Ok(Datum::Float8(x.round_ties_even())),
        (F::Trunc, [Datum::Numeric(n)]) => Ok(Datum::Numeric(truncate(n, 0)?)),
        (F::Trunc, [Datum::Numeric(n), Datum::Int4(s)]) => Ok(Datum::Numeric(truncate(n, *s)?)),
        (F::Trunc, [Datum::Float8(x)]) => Ok(Datum::Float8(x.trunc())),
        (F::Ceil, [Datum::Numeric(n)]) => Ok(Datum::Numeric(toward_integer(n, true)?)),
        (F::Ceil, [Datum::Float8(x)]) => Ok(Datum::Float8(x.ceil())),
        (F::Floor, [Datum::Numeric(n)]) => Ok(Datum::Numeric(toward_integer(n, false)?)),
        (F::Floor, [Datum::Float8(x)]) => Ok(Datum::Float8(x.floor())),
        (F::Sign, [Datum::Numeric(n)]) => Ok(Datum::Numeric(n.sign())),
        (F::Sign, [Datum::Float8(x)]) => Ok(Datum::Float8(if x.is_nan() {
            f64::NAN
        } else if *x > 0.0 {
            1.0
        } else if *x < 0.0 {
            -1.0
        } else {
            0.0
        })),
        (F::Sqrt, [Datum::Float8(x)]) => {
            if *x < 0.0 {
                return Err(Error::new(SqlState("2201F"), "cannot take square root of a negative number"));
            }
            Ok(Datum::Float8(x.sqrt()))
        }
        (F::Power, [Datum::Float8(base), Datum::Float8(exponent)]) => power(*base, *exponent).map(Datum::Float8),
        (F::Power, [Datum::Numeric(base), Datum::Numeric(exponent)]) => numeric_power(base, exponent).map(Datum::Numeric),
        (F::Mod, [a, b]) => eval_binary(BinaryOp::Mod, a.clone(), b.clone()),
        (F::Exp, [Datum::Float8(x)]) => checked_float(x.exp(), x.is_finite()).map(Datum::Float8),
        (F::Ln | F::Log10, [Datum::Float8(x)]) => {
            if *x == 0.0 {
                return Err(Error::new(INVALID_ARGUMENT_FOR_LOGARITHM, "cannot take logarithm of zero"));
            }
            if *x < 0.0 {
                return Err(Error::new(INVALID_ARGUMENT_FOR_LOGARITHM, "cannot take logarithm of a negative number"));
            }
            Ok(Datum::Float8(if func == F::Ln { x.ln() } else { x.log10() }))
        }
        // Rust's `cbrt` is correctly rounded; the C library's, which PostgreSQL calls, may
        // be one unit in the last place off (PostgreSQL's `cbrt(27)` is 3.0000000000000004).
        (F::Cbrt, [Datum::Float8(x)]) => Ok(Datum::Float8(x.cbrt())),
        (F::Pi, []) => Ok(Datum::Float8(std::f64::consts::PI)),
        // PostgreSQL divides and multiplies by its RADIANS_PER_DEGREE constant.
        (F::Degrees, [Datum::Float8(x)]) => checked_float(x / RADIANS_PER_DEGREE, x.is_finite()).map(Datum::Float8),
        (F::Radians, [Datum::Float8(x)]) => checked_float(x * RADIANS_PER_DEGREE, x.is_finite()).map(Datum::Float8),
        (F::Sin | F::Cos | F::Tan | F::Cot, [Datum::Float8(x)]) => {
            if x.is_infinite() {
                return Err(Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "input is out of range"));
            }
            let result = match func {
                F::Sin => x.sin(),
                F::Cos => x.cos(),
                F::Tan => x.tan(),
                _ => 1.0 / x.tan(),
            };
            if result.is_infinite() && func == F::Tan {
                return Err(Error::out_of_range("double precision"));
            }
            Ok(Datum::Float8(result))
        }
        (F::Asin | F::Acos, [Datum::Float8(x)]) => {
            if !x.is_nan() && !(-1.0..=1.0).contains(x) {
                return Err(Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "input is out of range"));
            }
            Ok(Datum::Float8(if func == F::Asin { x.asin() } else { x.acos() }))
        }
        (F::Atan, [Datum::Float8(x)]) => Ok(Datum::Float8(x.atan())),
        (F::Atan2, [Datum::Float8(y), Datum::Float8(x)]) => Ok(Datum::Float8(y.atan2(*x))),
        (F::Gcd | F::Lcm, [Datum::Int4(a), Datum::Int4(b)]) => {
            let value = if func == F::Gcd { gcd(*a as i64, *b as i64) } else { lcm(*a as i64, *b as i64) };
            value.and_then(|v| i32::try_from(v).ok()).map(Datum::Int4).ok_or_else(|| Error::out_of_range("integer"))
        }
        (F::Gcd | F::Lcm, [Datum::Int8(a), Datum::Int8(b)]) => {
            let value = if func == F::Gcd { gcd(*a, *b) } else { lcm(*a, *b) };
            value.map(Datum::Int8).ok_or_else(|| Error::out_of_range("bigint"))
        }
        (F::Div, [Datum::Numeric(a), Datum::Numeric(b)]) => {
            // NaN and the infinities divide as `/` does (`div(Inf, 2)` is Infinity).
            if let Some(special) = Numeric::div_special(a, b) {
                return special.map(Datum::Numeric);
            }
            if b.is_zero() {
                return Err(Error::division_by_zero());
            }
            // The exact quotient truncated toward zero: both at one scale, then integers.
            let scale = a.scale.max(b.scale) as i32;
            let (x, y) = (a.round(scale)?, b.round(scale)?);
            Ok(Datum::Numeric(Numeric::new(x.mantissa / y.mantissa, 0)))
        }
        (F::WidthBucket, [Datum::Float8(operand), Datum::Float8(low), Datum::Float8(high), Datum::Int4(count)]) => {
            width_bucket(*operand, *low, *high, *count).map(Datum::Int4)
        }
        // NaN and the infinities have no scale.
        (F::Scale, [Datum::Numeric(n)]) if n.is_special() => Ok(Datum::Null),
        (F::Scale, [Datum::Numeric(n)]) => Ok(Datum::Int4(n.scale as i32)),
        (F::BitAnd | F::BitOr | F::BitXor, [Datum::Int4(a), Datum::Int4(b)]) => {
            Ok(Datum::Int4(bitwise(func, *a as i64, *b as i64) as i32))
        }
        (F::BitAnd | F::BitOr | F::BitXor, [Datum::Int8(a), Datum::Int8(b)]) => Ok(Datum::Int8(bitwise(func, *a, *b))),
        // C's shifts of PostgreSQL's int4shl/int8shl: the count is taken modulo the width.
        (F::ShiftLeft, [Datum::Int4(a), Datum::Int4(n)]) => Ok(Datum::Int4(a.wrapping_shl(*n as u32))),
        (F::ShiftRight, [Datum::Int4(a), Datum::Int4(n)]) => Ok(Datum::Int4(a.wrapping_shr(*n as u32))),
        (F::ShiftLeft, [Datum::Int8(a), Datum::Int4(n)]) => Ok(Datum::Int8(a.wrapping_shl(*n as u32))),
        (F::ShiftRight, [Datum::Int8(a), Datum::Int4(n)]) => Ok(Datum::Int8(a.wrapping_shr(*n as u32))),
        (F::BitNot, [Datum::Int4(a)]) => Ok(Datum::Int4(!a)),
        (F::BitNot, [Datum::Int8(a)]) => Ok(Datum::Int8(!a)),
        _ => Err(Error::internal(format!("{}() called with unresolved arguments {args:?}", func.name()))),
    }
}

/// `trunc(numeric, s)`: drop digits beyond `s` places after the point (before it when
/// negative), toward zero; more places than the value has pad with zeros, as `round`.
fn truncate(n: &Numeric, scale: i32) -> Result<Numeric> {
    if n.is_special() || scale >= n.scale as i32 {
        return n.round(scale);
    }
    let dropped = (n.scale as i32 - scale.max(0)) as u32;
    let kept = match 10i128.checked_pow(dropped) {
        Some(divisor) => n.mantissa / divisor,
        None => 0,
    };
    if scale >= 0 {
        return Ok(Numeric::new(kept, scale as u16));
    }
    let factor = 10i128.checked_pow(scale.unsigned_abs()).ok_or_else(numeric_overflow)?;
    let whole = kept / factor;
    Ok(Numeric::new(whole.checked_mul(factor).ok_or_else(numeric_overflow)?, 0))
}

/// `ceil` (`up`) or `floor` of a numeric: an integer, scale 0.
fn toward_integer(n: &Numeric, up: bool) -> Result<Numeric> {
    if n.is_special() {
        return Ok(*n);
    }
    let whole = truncate(n, 0)?;
    let exact = Numeric::new(whole.mantissa, 0).eq_value(n);
    let step = match (exact, up, n.mantissa > 0) {
        (true, _, _) => 0,
        (false, true, true) => 1,
        (false, false, false) => -1,
        _ => 0,
    };
    Ok(Numeric::new(whole.mantissa.checked_add(step).ok_or_else(numeric_overflow)?, 0))
}

const INVALID_ARGUMENT_FOR_LOGARITHM: SqlState = SqlState("2201E");
const INVALID_ARGUMENT_FOR_WIDTH_BUCKET: SqlState = SqlState("2201G");
/// PostgreSQL's `RADIANS_PER_DEGREE`, the constant its `degrees` and `radians` use.
const RADIANS_PER_DEGREE: f64 = 0.017_453_292_519_943_295;

/// A float8 result with PostgreSQL's overflow and underflow checks (`finite_input`:
/// infinities in are allowed out).
fn checked_float(result: f64, finite_input: bool) -> Result<f64> {
    if result.is_infinite() && finite_input {
        return Err(Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow"));
    }
    Ok(result)
}

fn bitwise(func: F, a: i64, b: i64) -> i64 {
    match func {
        F::BitAnd => a & b,
        F::BitOr => a | b,
        _ => a ^ b,
    }
}

/// The non-negative greatest common divisor; `None` when it is 2^63 (`gcd(i64::MIN, 0)`).
fn gcd(a: i64, b: i64) -> Option<i64> {
    let (mut x, mut y) = (a.unsigned_abs(), b.unsigned_abs());
    while y != 0 {
        (x, y) = (y, x % y);
    }
    i64::try_from(x).ok()
}

/// The non-negative least common multiple; 0 when either is 0; `None` on overflow.
fn lcm(a: i64, b: i64) -> Option<i64> {
    if a == 0 || b == 0 {
        return Some(0);
    }
    let divisor = gcd(a, b)?;
    (a / divisor).checked_mul(b)?.checked_abs()
}

/// `width_bucket(operand, low, high, count)` for float8, as PostgreSQL 15 computes it.
fn width_bucket(operand: f64, low: f64, high: f64, count: i32) -> Result<i32> {
    if count <= 0 {
        return Err(Error::new(INVALID_ARGUMENT_FOR_WIDTH_BUCKET, "count must be greater than zero"));
    }
    if operand.is_nan() || low.is_nan() || high.is_nan() {
        return Err(Error::new(
            INVALID_ARGUMENT_FOR_WIDTH_BUCKET,
            "operand, lower bound, and upper bound cannot be NaN",
        ));
    }
    if low.is_infinite() || high.is_infinite() {
        return Err(Error::new(INVALID_ARGUMENT_FOR_WIDTH_BUCKET, "lower and upper bounds must be finite"));
    }
    let past_end = || count.checked_add(1).ok_or_else(|| Error::out_of_range("integer"));
    let bucket = |fraction: f64| ((count as f64 * fraction) + 1.0) as i32;
    if low < high {
        if operand < low {
            Ok(0)
        } else if operand >= high {
            past_end()
        } else {
            Ok(bucket((operand - low) / (high - low)))
        }
    } else if low > high {
        if operand > low {
            Ok(0)
        } else if operand <= high {
            past_end()
        } else {
            Ok(bucket((low - operand) / (low - high)))
        }
    } else {
        Err(Error::new(INVALID_ARGUMENT_FOR_WIDTH_BUCKET, "lower bound cannot equal upper bound"))
    }
}

/// `numeric ^ numeric`: exact for whole-number exponents; a fractional exponent needs
/// arbitrary-precision logarithms, which weft's numeric does not have yet.
fn numeric_power(base: &Numeric, exponent: &Numeric) -> Result<Numeric> {
    if let Some(special) = Numeric::power_special(base, exponent) {
        return special;
    }
    match exponent.to_exact_i64() {
        Some(e) if i32::try_from(e).is_ok() => base.power_int(e),
        Some(_) => Err(Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")),
        None if base.mantissa < 0 => Err(Error::new(
            INVALID_ARGUMENT_FOR_POWER,
            "a negative number raised to a non-integer power yields a complex result",
        )),
        None if base.is_zero() => Ok(Numeric::new(0, 16)),
        None => Err(Error::not_supported("numeric raised to a fractional power is not supported yet")
            .with_hint("Cast either argument to double precision.")),
    }
}

/// `power(float8, float8)` with PostgreSQL's domain errors and overflow checks.
fn power(base: f64, exponent: f64) -> Result<f64> {
    if base == 0.0 && exponent < 0.0 {
        return Err(Error::new(INVALID_ARGUMENT_FOR_POWER, "zero raised to a negative power is undefined"));
    }
    if base < 0.0 && exponent.fract() != 0.0 && exponent.is_finite() {
        return Err(Error::new(
            INVALID_ARGUMENT_FOR_POWER,
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let result = base.powf(exponent);
    if result.is_infinite() && base.is_finite() && exponent.is_finite() {
        return Err(Error::out_of_range("double precision"));
    }
    if result == 0.0 && base != 0.0 && base.is_finite() && exponent.is_finite() {
        return Err(Error::new(SqlState("22003"), "value out of range: underflow"));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> Numeric {
        Numeric::parse(s).unwrap()
    }

    #[test]
    fn numeric_truncation_and_integer_rounding() {
        assert_eq!(truncate(&num("2.567"), 2).unwrap().to_string(), "2.56");
        assert_eq!(truncate(&num("-2.567"), 1).unwrap().to_string(), "-2.5");
        assert_eq!(truncate(&num("1299.9"), -2).unwrap().to_string(), "1200");
        assert_eq!(truncate(&num("2.5"), 3).unwrap().to_string(), "2.500");
        assert_eq!(toward_integer(&num("2.1"), true).unwrap().to_string(), "3");
        assert_eq!(toward_integer(&num("-2.1"), true).unwrap().to_string(), "-2");
        assert_eq!(toward_integer(&num("-2.1"), false).unwrap().to_string(), "-3");
        assert_eq!(toward_integer(&num("4.000"), false).unwrap().to_string(), "4");
    }

    #[test]
    fn power_domain_errors() {
        assert!(power(0.0, -1.0).is_err());
        assert!(power(-8.0, 0.5).is_err());
        assert_eq!(power(-2.0, 3.0).unwrap(), -8.0);
        assert!(power(10.0, 400.0).is_err());
    }
}
