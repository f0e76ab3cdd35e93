//! Numeric functions: `round`, `trunc`, `ceil`, `floor`, `sign`, `sqrt`, `power`, `mod`,
//! with PostgreSQL's rounding rules (numeric rounds half away from zero; float8 `round`
//! is `rint`, half to even) and its error codes.

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
        (F::Sign, [Datum::Numeric(n)]) => Ok(Datum::Numeric(Numeric::from_i64(n.mantissa.signum() as i64))),
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
        (F::Mod, [a, b]) => eval_binary(BinaryOp::Mod, a.clone(), b.clone()),
        _ => Err(Error::internal(format!("{}() called with unresolved arguments {args:?}", func.name()))),
    }
}

/// `trunc(numeric, s)`: drop digits beyond `s` places after the point (before it when
/// negative), toward zero; more places than the value has pad with zeros, as `round`.
fn truncate(n: &Numeric, scale: i32) -> Result<Numeric> {
    if scale >= n.scale as i32 {
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
