//! Exact decimal numbers: PostgreSQL's `numeric`, as far as weft needs it (results of
//! `sum(int8)`, `avg` of integers, decimal literals, casts to and from integers).
//!
//! # Representation
//!
//! A value is `mantissa × 10^-scale` with an `i128` mantissa and a `u16` scale. `scale` is
//! PostgreSQL's *display scale* (`dscale`): `1.50` is `(150, 2)` and prints with two digits
//! after the point, so trailing zeros are part of the value's identity as far as output goes.
//! That is why the derived `PartialEq`/`Hash` compare the *representation*; code that needs
//! SQL equality or ordering (`1.5 = 1.50`) uses [`Numeric::cmp_value`] / [`Numeric::eq_value`],
//! or hashes the [`Numeric::normalize`]d value.
//!
//! PostgreSQL stores base-10000 digits of arbitrary length; 38 decimal digits of `i128` cover
//! every sum of `int8` values and every average weft computes, at a fraction of the cost of a
//! digit vector. Anything that does not fit is reported as PostgreSQL reports a numeric too
//! large for its format: `value overflows numeric format` (22003). A bignum was considered and
//! rejected for now: it would make every `Datum::Numeric` a heap allocation.
//!
//! # Result scales (as in PostgreSQL's `numeric.c`)
//!
//! 1. `add`/`sub`: the larger of the two scales.
//! 2. `mul`: the sum of the scales.
//! 3. `div`: `select_div_scale` — enough digits for at least 16 significant digits
//!    (`NUMERIC_MIN_SIG_DIGITS`), estimated from the base-10000 weights and first digits of the
//!    operands, but no fewer than either input's scale, clamped to 0..=1000. So `3/2` is
//!    `1.5000000000000000` and `1/3` is `0.33333333333333333333`.
//! 4. Rounding (division, `round`, casts to integers) is half away from zero, computed from
//!    the exact quotient — never from a pre-rounded intermediate.
//!
//! # NaN and ±Infinity
//!
//! PostgreSQL's special values are encoded in the scale, so that `Numeric` keeps its size,
//! its `Copy` and its 18-byte tuple slot (tuples, spill files and accumulators store
//! `(mantissa, scale)` as they are):
//!
//! | value | mantissa | scale |
//! |---|---|---|
//! | `NaN` | 0 | `u16::MAX` ([`NAN_SCALE`]) |
//! | `Infinity` | 1 | `u16::MAX - 1` ([`INFINITY_SCALE`]) |
//! | `-Infinity` | -1 | `u16::MAX - 1` |
//!
//! Finite values never reach those scales: results past [`SCALE_MAX`] (PostgreSQL's
//! `NUMERIC_DSCALE_MAX`, 16383) are the overflow error. Each special value has exactly one
//! representation, so the derived `==`/`Hash` and [`Numeric::normalize`] stay correct.
//! The raw fields of a special value mean nothing as a number: code outside this module
//! asks [`Numeric::is_special`] (or matches [`Numeric::kind`]) before it reads them.
//!
//! As in PostgreSQL (and unlike IEEE floats), `NaN = NaN` and values order
//! `-Infinity` < every finite value < `Infinity` < `NaN`. Arithmetic follows `numeric.c`:
//! NaN in, NaN out; `Inf - Inf`, `Inf × 0`, `Inf / Inf` and `Inf % x` are NaN; `x / Inf` is 0;
//! dividing a non-NaN by zero is still `division by zero` (`NaN / 0` is NaN).

use std::cmp::Ordering;

use crate::{Error, Result, SqlState};

/// Minimum significant digits a division result gets (PostgreSQL's `NUMERIC_MIN_SIG_DIGITS`).
const NUMERIC_MIN_SIG_DIGITS: i32 = 16;
/// Decimal digits per base-10000 digit of PostgreSQL's representation (`DEC_DIGITS`).
const DEC_DIGITS: i32 = 4;
/// Largest display scale a division may choose (`NUMERIC_MAX_DISPLAY_SCALE`).
const NUMERIC_MAX_DISPLAY_SCALE: i32 = 1000;
/// Largest |scale| `round(x, s)` accepts before clamping (`NUMERIC_MAX_RESULT_SCALE`).
const NUMERIC_MAX_RESULT_SCALE: i32 = 2000;
/// Largest |exponent| accepted in `1e...` input (PostgreSQL's `NUMERIC_MAX_PRECISION`).
const NUMERIC_EXPONENT_MAX: i64 = 1000;
/// Most decimal digits a power of ten in `u128` may have: 10^38 < 2^128.
const POW10_EXPONENT_MAX: u32 = 38;
/// Largest scale of a finite value (PostgreSQL's `NUMERIC_DSCALE_MAX`); the scales above
/// it encode the special values.
pub const SCALE_MAX: u16 = 0x3FFF;
/// The scale that marks `NaN` (mantissa 0).
pub const NAN_SCALE: u16 = u16::MAX;
/// The scale that marks `±Infinity` (mantissa ±1 gives the sign).
pub const INFINITY_SCALE: u16 = u16::MAX - 1;

/// What a [`Numeric`] is, for code that treats the special values apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumericKind {
    Finite,
    NaN,
    Infinity,
    NegativeInfinity,
}

/// value = mantissa × 10^-scale.
///
/// Packed to 8-byte alignment: an `i128` alone would align `Numeric`, and with it every
/// `Datum`, to 16 bytes (48-byte datums instead of 32) — every row in every pipeline pays
/// for that. Fields are read and written by value, never by reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C, packed(8))]
pub struct Numeric {
    pub mantissa: i128,
    pub scale: u16,
}

impl std::fmt::Display for Numeric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind() {
            NumericKind::NaN => return f.write_str("NaN"),
            NumericKind::Infinity => return f.write_str("Infinity"),
            NumericKind::NegativeInfinity => return f.write_str("-Infinity"),
            NumericKind::Finite => {}
        }
        let negative = self.mantissa < 0;
        let digits = self.mantissa.unsigned_abs().to_string();
        let scale = self.scale as usize;
        let sign = if negative { "-" } else { "" };
        if scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let padded = if digits.len() <= scale { format!("{}{}", "0".repeat(scale + 1 - digits.len()), digits) } else { digits };
        let (int_part, frac_part) = padded.split_at(padded.len() - scale);
        write!(f, "{sign}{int_part}.{frac_part}")
    }
}

impl std::str::FromStr for Numeric {
    type Err = Error;
    fn from_str(s: &str) -> Result<Numeric> {
        Numeric::parse(s)
    }
}

fn overflow() -> Error {
    Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
}

/// 10^exponent, if it fits in `u128`.
fn pow10(exponent: u32) -> Option<u128> {
    if exponent > POW10_EXPONENT_MAX {
        return None;
    }
    Some(10u128.pow(exponent))
}

/// The full 256-bit product of two `u128`, as (high, low).
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    const LOW_MASK: u128 = u64::MAX as u128;
    let (a_high, a_low) = (a >> 64, a & LOW_MASK);
    let (b_high, b_low) = (b >> 64, b & LOW_MASK);
    let low_low = a_low * b_low;
    let low_high = a_low * b_high;
    let high_low = a_high * b_low;
    let high_high = a_high * b_high;
    let middle = (low_low >> 64) + (low_high & LOW_MASK) + (high_low & LOW_MASK);
    let low = (low_low & LOW_MASK) | (middle << 64);
    let high = high_high + (low_high >> 64) + (high_low >> 64) + (middle >> 64);
    (high, low)
}

/// (high·2^128 + low) / divisor and the remainder, when the quotient fits in `u128`
/// (that is, when `high < divisor`). Binary long division; the fast path is native.
fn div_wide(high: u128, low: u128, divisor: u128) -> Option<(u128, u128)> {
    debug_assert!(divisor != 0);
    if high == 0 {
        return Some((low / divisor, low % divisor));
    }
    if high >= divisor {
        return None;
    }
    let mut remainder = high;
    let mut quotient = 0u128;
    for bit in (0..128).rev() {
        let carry = remainder >> 127;
        remainder = (remainder << 1) | ((low >> bit) & 1);
        if carry == 1 || remainder >= divisor {
            remainder = remainder.wrapping_sub(divisor);
            quotient |= 1 << bit;
        }
    }
    Some((quotient, remainder))
}

/// round(numerator × 10^shift / divisor), half away from zero, on magnitudes.
fn div_scaled_rounded(numerator: u128, shift: u32, divisor: u128) -> Result<u128> {
    let mut quotient = numerator / divisor;
    let mut remainder = numerator % divisor;
    let mut digits_left = shift;
    while digits_left > 0 {
        let step = digits_left.min(POW10_EXPONENT_MAX);
        let factor = 10u128.pow(step);
        let (high, low) = mul_wide(remainder, factor);
        // remainder < divisor, so the partial quotient is below `factor` and fits.
        let (partial, next_remainder) = div_wide(high, low, divisor).ok_or_else(overflow)?;
        quotient = quotient.checked_mul(factor).and_then(|q| q.checked_add(partial)).ok_or_else(overflow)?;
        remainder = next_remainder;
        digits_left -= step;
    }
    if remainder >= divisor - remainder {
        quotient = quotient.checked_add(1).ok_or_else(overflow)?;
    }
    Ok(quotient)
}

/// A signed `i128` from a magnitude and a sign, or the numeric overflow error.
fn signed(magnitude: u128, negative: bool) -> Result<i128> {
    let value = i128::try_from(magnitude).map_err(|_| overflow())?;
    Ok(if negative { -value } else { value })
}

fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

impl Numeric {
    pub const ZERO: Numeric = Numeric { mantissa: 0, scale: 0 };
    pub const NAN: Numeric = Numeric { mantissa: 0, scale: NAN_SCALE };
    pub const INFINITY: Numeric = Numeric { mantissa: 1, scale: INFINITY_SCALE };
    pub const NEG_INFINITY: Numeric = Numeric { mantissa: -1, scale: INFINITY_SCALE };

    /// Finite, NaN or which infinity (module header: the encoding).
    pub fn kind(&self) -> NumericKind {
        match self.scale {
            NAN_SCALE => NumericKind::NaN,
            INFINITY_SCALE if self.mantissa < 0 => NumericKind::NegativeInfinity,
            INFINITY_SCALE => NumericKind::Infinity,
            _ => NumericKind::Finite,
        }
    }

    pub fn is_nan(&self) -> bool {
        self.scale == NAN_SCALE
    }

    /// `Infinity` or `-Infinity`.
    pub fn is_infinite(&self) -> bool {
        self.scale == INFINITY_SCALE
    }

    /// NaN or an infinity: the fields are not a number.
    pub fn is_special(&self) -> bool {
        self.scale > SCALE_MAX
    }

    pub fn is_finite(&self) -> bool {
        !self.is_special()
    }

    /// -1, 0 or 1 for finite values and infinities; 0 for NaN (check it first).
    fn signum(&self) -> i128 {
        if self.is_nan() {
            0
        } else {
            self.mantissa.signum()
        }
    }

    /// The infinity of the given sign.
    fn infinity(negative: bool) -> Numeric {
        if negative {
            Numeric::NEG_INFINITY
        } else {
            Numeric::INFINITY
        }
    }

    /// `mantissa × 10^-scale`.
    pub const fn new(mantissa: i128, scale: u16) -> Numeric {
        Numeric { mantissa, scale }
    }

    pub const fn from_i64(v: i64) -> Numeric {
        Numeric { mantissa: v as i128, scale: 0 }
    }

    pub const fn from_i128(v: i128) -> Numeric {
        Numeric { mantissa: v, scale: 0 }
    }

    /// A finite zero (NaN's mantissa is 0 too, but NaN is not zero).
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0 && self.is_finite()
    }

    /// `abs(self)`: NaN stays NaN, both infinities become `Infinity`.
    pub fn abs(&self) -> Result<Numeric> {
        if self.is_special() {
            return Ok(if self.is_nan() { *self } else { Numeric::INFINITY });
        }
        Ok(Numeric { mantissa: self.mantissa.checked_abs().ok_or_else(overflow)?, scale: self.scale })
    }

    /// SQL `sign(numeric)`: -1, 0 or 1 (scale 0); NaN for NaN, ±1 for the infinities.
    pub fn sign(&self) -> Numeric {
        if self.is_nan() {
            return Numeric::NAN;
        }
        Numeric::from_i128(self.mantissa.signum())
    }

    /// Parse `numeric` input as PostgreSQL 15 does: surrounding white space, an optional
    /// sign, digits with at most one decimal point, an optional exponent (`1e9`, `1.5E-3`).
    /// The scale is the number of digits after the point minus the exponent, at least 0.
    /// `NaN`, `Infinity` and `inf` in any case; the infinities may be signed, NaN may not.
    pub fn parse(input: &str) -> Result<Numeric> {
        let syntax_error =
            || Error::new(SqlState::INVALID_TEXT_REPRESENTATION, format!("invalid input syntax for type numeric: \"{input}\""));
        let text = input.trim_matches(is_c_space);
        let (negative, unsigned) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        if text.eq_ignore_ascii_case("nan") {
            return Ok(Numeric::NAN);
        }
        if ["infinity", "inf"].iter().any(|special| unsigned.eq_ignore_ascii_case(special)) {
            return Ok(Numeric::infinity(negative));
        }
        let bytes = unsigned.as_bytes();
        let mut at = 0;
        let mut magnitude: u128 = 0;
        let (mut digit_count, mut fraction_digits, mut seen_point) = (0usize, 0i64, false);
        while at < bytes.len() {
            match bytes[at] {
                digit @ b'0'..=b'9' => {
                    magnitude = magnitude
                        .checked_mul(10)
                        .and_then(|m| m.checked_add((digit - b'0') as u128))
                        .ok_or_else(overflow)?;
                    digit_count += 1;
                    fraction_digits += seen_point as i64;
                }
                b'.' if !seen_point => seen_point = true,
                _ => break,
            }
            at += 1;
        }
        if digit_count == 0 {
            return Err(syntax_error());
        }
        let mut exponent: i64 = 0;
        if at < bytes.len() && (bytes[at] == b'e' || bytes[at] == b'E') {
            let rest = &unsigned[at + 1..];
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(syntax_error());
            }
            exponent = digits.parse::<i64>().unwrap_or(i64::MAX).min(NUMERIC_EXPONENT_MAX + 1);
            if rest.starts_with('-') {
                exponent = -exponent;
            }
            if exponent.abs() > NUMERIC_EXPONENT_MAX {
                return Err(syntax_error());
            }
            at = bytes.len();
        }
        if at != bytes.len() {
            return Err(syntax_error());
        }
        let scale = fraction_digits - exponent;
        if scale < 0 {
            let factor = pow10(scale.unsigned_abs() as u32).ok_or_else(overflow);
            magnitude = if magnitude == 0 { 0 } else { magnitude.checked_mul(factor?).ok_or_else(overflow)? };
        }
        let scale = u16::try_from(scale.max(0)).ok().filter(|s| *s <= SCALE_MAX).ok_or_else(overflow)?;
        Ok(Numeric { mantissa: signed(magnitude, negative)?, scale })
    }

    /// The same value with `scale` ≥ `self.scale` (trailing zeros appended).
    fn with_larger_scale(&self, scale: u16) -> Result<Numeric> {
        debug_assert!(scale >= self.scale);
        if self.mantissa == 0 {
            return Ok(Numeric { mantissa: 0, scale });
        }
        let factor = pow10((scale - self.scale) as u32).ok_or_else(overflow)?;
        let factor = i128::try_from(factor).map_err(|_| overflow())?;
        let mantissa = self.mantissa.checked_mul(factor).ok_or_else(overflow)?;
        Ok(Numeric { mantissa, scale })
    }

    fn aligned(&self, other: &Numeric) -> Result<(i128, i128, u16)> {
        let scale = self.scale.max(other.scale);
        Ok((self.with_larger_scale(scale)?.mantissa, other.with_larger_scale(scale)?.mantissa, scale))
    }

    /// `self + other`; result scale is the larger scale. NaN if either is NaN or for
    /// `Infinity + -Infinity`; otherwise an infinite operand wins.
    pub fn add(&self, other: &Numeric) -> Result<Numeric> {
        if self.is_special() || other.is_special() {
            return Ok(Self::add_special(self, other));
        }
        let (a, b, scale) = self.aligned(other)?;
        Ok(Numeric { mantissa: a.checked_add(b).ok_or_else(overflow)?, scale })
    }

    /// The sum when at least one operand is special.
    fn add_special(a: &Numeric, b: &Numeric) -> Numeric {
        match (a.kind(), b.kind()) {
            (NumericKind::NaN, _) | (_, NumericKind::NaN) => Numeric::NAN,
            (NumericKind::Infinity, NumericKind::NegativeInfinity) | (NumericKind::NegativeInfinity, NumericKind::Infinity) => {
                Numeric::NAN
            }
            (NumericKind::Finite, _) => *b,
            _ => *a,
        }
    }

    /// `self - other`; result scale is the larger scale. Specials as `self + (-other)`.
    pub fn sub(&self, other: &Numeric) -> Result<Numeric> {
        if self.is_special() || other.is_special() {
            return Ok(Self::add_special(self, &other.neg()?));
        }
        let (a, b, scale) = self.aligned(other)?;
        Ok(Numeric { mantissa: a.checked_sub(b).ok_or_else(overflow)?, scale })
    }

    /// `self * other`; result scale is the sum of the scales.
    /// NaN in, NaN out; an infinity times zero is NaN, times anything else an infinity.
    pub fn mul(&self, other: &Numeric) -> Result<Numeric> {
        if self.is_special() || other.is_special() {
            if self.is_nan() || other.is_nan() || self.is_zero() || other.is_zero() {
                return Ok(Numeric::NAN);
            }
            return Ok(Numeric::infinity((self.signum() < 0) != (other.signum() < 0)));
        }
        let scale = self.scale.checked_add(other.scale).filter(|s| *s <= SCALE_MAX).ok_or_else(overflow)?;
        Ok(Numeric { mantissa: self.mantissa.checked_mul(other.mantissa).ok_or_else(overflow)?, scale })
    }

    /// `-self`.
    pub fn neg(&self) -> Result<Numeric> {
        if self.is_special() {
            // -NaN is NaN; the infinities' mantissa is their sign.
            return Ok(if self.is_nan() { *self } else { Numeric::infinity(self.mantissa > 0) });
        }
        Ok(Numeric { mantissa: self.mantissa.checked_neg().ok_or_else(overflow)?, scale: self.scale })
    }

    /// `self / other` at the scale PostgreSQL's `select_div_scale` picks, rounded half away
    /// from zero. Division by zero is error 22012, except `NaN / 0`, which is NaN.
    pub fn div(&self, other: &Numeric) -> Result<Numeric> {
        if let Some(special) = Self::div_special(self, other) {
            return special;
        }
        if other.is_zero() {
            return Err(Error::division_by_zero());
        }
        let scale = self.select_div_scale(other);
        // quotient mantissa = self.m × 10^(scale - self.scale + other.scale) / other.m
        let shift = scale as u32 + other.scale as u32 - self.scale as u32;
        let magnitude = div_scaled_rounded(self.mantissa.unsigned_abs(), shift, other.mantissa.unsigned_abs())?;
        let negative = (self.mantissa < 0) != (other.mantissa < 0);
        Ok(Numeric { mantissa: signed(magnitude, negative)?, scale })
    }

    /// `numeric_div`'s (and `numeric_div_trunc`'s) special cases, `None` when both are finite:
    /// NaN wins (even over a zero divisor), `±Inf / 0` is division by zero, `Inf / Inf` is
    /// NaN, `Inf / x` an infinity and `x / Inf` zero.
    pub fn div_special(a: &Numeric, b: &Numeric) -> Option<Result<Numeric>> {
        if a.is_finite() && b.is_finite() {
            return None;
        }
        if a.is_nan() || b.is_nan() {
            return Some(Ok(Numeric::NAN));
        }
        if b.is_zero() {
            return Some(Err(Error::division_by_zero()));
        }
        Some(Ok(match (a.is_infinite(), b.is_infinite()) {
            (true, true) => Numeric::NAN,
            (true, false) => Numeric::infinity((a.signum() < 0) != (b.signum() < 0)),
            _ => Numeric::ZERO,
        }))
    }

    /// `numeric_mod`'s special cases, `None` when both are finite: NaN wins (even over a
    /// zero divisor), `±Inf % 0` is division by zero, `±Inf % x` is NaN, `x % ±Inf` is x.
    pub fn mod_special(a: &Numeric, b: &Numeric) -> Option<Result<Numeric>> {
        if a.is_finite() && b.is_finite() {
            return None;
        }
        if a.is_nan() || b.is_nan() {
            return Some(Ok(Numeric::NAN));
        }
        if a.is_infinite() {
            return Some(if b.is_zero() { Err(Error::division_by_zero()) } else { Ok(Numeric::NAN) });
        }
        Some(Ok(*a))
    }

    /// The weight (power of 10000) and value of the first non-zero base-10000 digit, as
    /// PostgreSQL's representation would hold them; (0, 0) for zero.
    fn base10000_weight_and_first_digit(&self) -> (i32, u128) {
        let magnitude = self.mantissa.unsigned_abs();
        if magnitude == 0 {
            return (0, 0);
        }
        let digits = magnitude.ilog10() as i32 + 1;
        let leading_exponent = digits - 1 - self.scale as i32; // |v| in [10^e, 10^(e+1))
        let weight = leading_exponent.div_euclid(DEC_DIGITS);
        let first_digit_width = leading_exponent - weight * DEC_DIGITS + 1; // 1..=4
        let first_digit = if digits >= first_digit_width {
            magnitude / 10u128.pow((digits - first_digit_width) as u32)
        } else {
            magnitude * 10u128.pow((first_digit_width - digits) as u32)
        };
        debug_assert!((1..10_000).contains(&first_digit));
        (weight, first_digit)
    }

    /// PostgreSQL's `select_div_scale`: at least 16 significant digits, no fewer digits than
    /// either input shows, at most 1000.
    fn select_div_scale(&self, other: &Numeric) -> u16 {
        let (weight1, first_digit1) = self.base10000_weight_and_first_digit();
        let (weight2, first_digit2) = other.base10000_weight_and_first_digit();
        let mut quotient_weight = weight1 - weight2;
        if first_digit1 <= first_digit2 {
            quotient_weight -= 1;
        }
        let scale = (NUMERIC_MIN_SIG_DIGITS - quotient_weight * DEC_DIGITS)
            .max(self.scale as i32)
            .max(other.scale as i32)
            .clamp(0, NUMERIC_MAX_DISPLAY_SCALE);
        scale as u16
    }

    /// The magnitude rounded (half away from zero) to `scale` digits after the point, for a
    /// scale at most `self.scale`.
    fn rounded_magnitude(&self, scale: u16) -> u128 {
        debug_assert!(scale <= self.scale);
        let magnitude = self.mantissa.unsigned_abs();
        let Some(divisor) = pow10((self.scale - scale) as u32) else {
            // |mantissa| ≤ 2^127 < 10^39 / 2: everything rounds to zero.
            return 0;
        };
        let (quotient, remainder) = (magnitude / divisor, magnitude % divisor);
        quotient + (remainder >= divisor - remainder) as u128
    }

    /// SQL `round(numeric, int)`: round half away from zero to `scale` digits after the point
    /// (a negative scale rounds left of it). The result shows `max(scale, 0)` digits, padding
    /// with zeros when `scale` exceeds the current scale, as PostgreSQL does.
    pub fn round(&self, scale: i32) -> Result<Numeric> {
        if self.is_special() {
            return Ok(*self);
        }
        let scale = scale.clamp(-NUMERIC_MAX_RESULT_SCALE, NUMERIC_MAX_RESULT_SCALE);
        if scale >= self.scale as i32 {
            return self.with_larger_scale(u16::try_from(scale).map_err(|_| overflow())?);
        }
        let negative = self.mantissa < 0;
        if scale >= 0 {
            let magnitude = self.rounded_magnitude(scale as u16);
            return Ok(Numeric { mantissa: signed(magnitude, negative)?, scale: scale as u16 });
        }
        // Round to a multiple of 10^|scale|: count in units of 10^|scale|, then scale back.
        let shift = scale.unsigned_abs();
        let Some(units_scale) = self.scale.checked_add(shift as u16) else {
            return Ok(Numeric::ZERO);
        };
        let units = Numeric { mantissa: self.mantissa, scale: units_scale }.rounded_magnitude(0);
        if units == 0 {
            return Ok(Numeric::ZERO);
        }
        let magnitude = pow10(shift).and_then(|factor| units.checked_mul(factor)).ok_or_else(overflow)?;
        Ok(Numeric { mantissa: signed(magnitude, negative)?, scale: 0 })
    }

    /// The same value with trailing fractional zeros removed (`1.500` → `1.5`, `0.00` → `0`):
    /// equal values have equal normalized representations, so this is what to hash.
    pub fn normalize(&self) -> Numeric {
        if self.is_special() {
            return *self;
        }
        let (mut mantissa, mut scale) = (self.mantissa, self.scale);
        if mantissa == 0 {
            return Numeric::ZERO;
        }
        while scale > 0 && mantissa % 10 == 0 {
            mantissa /= 10;
            scale -= 1;
        }
        Numeric { mantissa, scale }
    }

    /// Compare values, not representations: `1.5` equals `1.50`. As PostgreSQL orders
    /// numerics: `-Infinity` < finite values < `Infinity` < `NaN`, and `NaN = NaN`.
    pub fn cmp_value(&self, other: &Numeric) -> Ordering {
        if self.is_special() || other.is_special() {
            let rank = |n: &Numeric| match n.kind() {
                NumericKind::NegativeInfinity => 0,
                NumericKind::Finite => 1,
                NumericKind::Infinity => 2,
                NumericKind::NaN => 3,
            };
            return rank(self).cmp(&rank(other));
        }
        let (sign1, sign2) = (self.mantissa.signum(), other.mantissa.signum());
        if sign1 != sign2 || sign1 == 0 {
            return sign1.cmp(&sign2);
        }
        let magnitudes = Self::cmp_magnitude(self, other);
        if sign1 > 0 {
            magnitudes
        } else {
            magnitudes.reverse()
        }
    }

    /// Compare |a| and |b|, both non-zero.
    fn cmp_magnitude(a: &Numeric, b: &Numeric) -> Ordering {
        if a.scale > b.scale {
            return Self::cmp_magnitude(b, a).reverse();
        }
        let (magnitude_a, magnitude_b) = (a.mantissa.unsigned_abs(), b.mantissa.unsigned_abs());
        // Bring a to b's scale. If that overflows u128, |a| ≥ 10^38·... exceeds any |b| ≤ 2^127.
        match pow10((b.scale - a.scale) as u32).and_then(|factor| magnitude_a.checked_mul(factor)) {
            Some(scaled_a) => scaled_a.cmp(&magnitude_b),
            None => Ordering::Greater,
        }
    }

    /// `self = other` as SQL compares numerics.
    pub fn eq_value(&self, other: &Numeric) -> bool {
        self.cmp_value(other) == Ordering::Equal
    }

    /// `self ^ exponent` for an integer `exponent`, at PostgreSQL 15's scale for integer
    /// powers: 16 digits after the point, or the base's scale if larger. Computed exactly,
    /// then rounded half away from zero; a result whose exact form does not fit is the
    /// numeric overflow error.
    pub fn power_int(&self, exponent: i64) -> Result<Numeric> {
        if self.is_special() {
            return Self::power_special(self, &Numeric::from_i64(exponent)).unwrap_or_else(|| Ok(Numeric::NAN));
        }
        if self.mantissa == 0 && exponent < 0 {
            return Err(Error::new(SqlState("2201F"), "zero raised to a negative power is undefined"));
        }
        let rscale = NUMERIC_MIN_SIG_DIGITS.max(self.scale as i32).min(NUMERIC_MAX_DISPLAY_SCALE);
        if exponent == 0 {
            return Numeric::from_i64(1).with_larger_scale(rscale as u16);
        }
        let mut exact = Numeric::from_i64(1);
        // Trailing zeros only widen the exact product; the result scale is chosen above.
        let mut base = self.normalize();
        let mut remaining = exponent.unsigned_abs();
        while remaining > 0 {
            if remaining & 1 == 1 {
                exact = exact.mul(&base)?;
            }
            remaining >>= 1;
            if remaining > 0 {
                base = base.mul(&base)?;
            }
        }
        if exponent > 0 {
            return exact.round(rscale);
        }
        let shift = rscale as u32 + exact.scale as u32;
        let magnitude = div_scaled_rounded(1, shift, exact.mantissa.unsigned_abs())?;
        Ok(Numeric { mantissa: signed(magnitude, exact.mantissa < 0)?, scale: rscale as u16 })
    }

    /// `numeric_power`'s special cases (POSIX `pow`'s rules), `None` when both are finite.
    /// `NaN ^ 0` and `1 ^ NaN` are 1, other NaN inputs NaN; `x ^ ±Inf` goes by whether |x|
    /// is below, at or above 1; `Inf ^ y` by the sign of y; `-Inf ^ y` needs a whole y and
    /// takes its parity for the sign. Special results have scale 0 (PostgreSQL's constants).
    pub fn power_special(base: &Numeric, exponent: &Numeric) -> Option<Result<Numeric>> {
        if base.is_finite() && exponent.is_finite() {
            return None;
        }
        let one = Numeric::from_i64(1);
        if base.is_nan() {
            return Some(Ok(if exponent.is_zero() { one } else { Numeric::NAN }));
        }
        if exponent.is_nan() {
            return Some(Ok(if base.eq_value(&one) { one } else { Numeric::NAN }));
        }
        let zero_to_negative = || Err(Error::new(SqlState("2201F"), "zero raised to a negative power is undefined"));
        if exponent.is_infinite() {
            let magnitude = if base.is_infinite() {
                Ordering::Greater
            } else if base.is_zero() {
                Ordering::Less
            } else {
                Self::cmp_magnitude(base, &one)
            };
            let positive = exponent.mantissa > 0;
            return Some(match magnitude {
                Ordering::Equal => Ok(one),
                _ if base.is_zero() && !positive => zero_to_negative(),
                // |x| < 1 shrinks toward 0 and |x| > 1 grows, or the other way for -Inf.
                Ordering::Less if positive => Ok(Numeric::ZERO),
                Ordering::Less => Ok(Numeric::INFINITY),
                _ if positive => Ok(Numeric::INFINITY),
                _ => Ok(Numeric::ZERO),
            });
        }
        let exponent_sign = exponent.signum();
        if base.mantissa > 0 {
            return Some(Ok(match exponent_sign {
                0 => one,
                1 => Numeric::INFINITY,
                _ => Numeric::ZERO,
            }));
        }
        // -Infinity: only whole exponents have a real result; odd ones keep the sign.
        let Some(whole) = exponent.to_exact_integer() else {
            return Some(Err(Error::new(
                SqlState("2201F"),
                "a negative number raised to a non-integer power yields a complex result",
            )));
        };
        Some(Ok(match exponent_sign {
            0 => one,
            1 => Numeric::infinity(whole % 2 != 0),
            _ => Numeric::ZERO,
        }))
    }

    /// The value as an integer, if it is a whole number that fits in `i128`.
    fn to_exact_integer(&self) -> Option<i128> {
        if self.is_special() {
            return None;
        }
        let divisor = pow10(self.scale as u32).and_then(|d| i128::try_from(d).ok());
        match divisor {
            Some(divisor) if self.mantissa % divisor == 0 => Some(self.mantissa / divisor),
            Some(_) => None,
            // A scale past 38 digits: only zero is whole.
            None => (self.mantissa == 0).then_some(0),
        }
    }

    /// Whether the value is a whole number, and which (if it fits in `i64`).
    pub fn to_exact_i64(&self) -> Option<i64> {
        if self.is_special() {
            return None;
        }
        let divisor = pow10(self.scale as u32)? as i128;
        if self.mantissa % divisor != 0 {
            return None;
        }
        i64::try_from(self.mantissa / divisor).ok()
    }

    /// The nearest `f64`, as PostgreSQL's `numeric::float8` (which goes through the text form).
    pub fn to_f64(&self) -> f64 {
        match self.kind() {
            NumericKind::NaN => return f64::NAN,
            NumericKind::Infinity => return f64::INFINITY,
            NumericKind::NegativeInfinity => return f64::NEG_INFINITY,
            NumericKind::Finite => {}
        }
        const EXACT_INTEGER_MAX: u128 = 1 << 53;
        const EXACT_POWER_OF_TEN_MAX: u16 = 22;
        let magnitude = self.mantissa.unsigned_abs();
        if magnitude <= EXACT_INTEGER_MAX && self.scale <= EXACT_POWER_OF_TEN_MAX {
            // Both operands are exact in f64, so one correctly rounded division is exact too.
            return self.mantissa as f64 / 10f64.powi(self.scale as i32);
        }
        self.to_string().parse::<f64>().unwrap_or(f64::NAN)
    }

    fn rounded_integer(&self) -> Option<i128> {
        let magnitude = self.rounded_magnitude(0);
        signed(magnitude, self.mantissa < 0).ok()
    }

    /// The error of casting NaN or an infinity to an integer type (0A000 in PostgreSQL 15).
    fn special_to_integer(&self, type_name: &str) -> Error {
        let what = if self.is_nan() { "NaN" } else { "infinity" };
        Error::not_supported(format!("cannot convert {what} to {type_name}"))
    }

    /// `numeric::int8`: round half away from zero; out of range is "bigint out of range".
    pub fn to_i64_rounded(&self) -> Result<i64> {
        if self.is_special() {
            return Err(self.special_to_integer("bigint"));
        }
        self.rounded_integer().and_then(|v| i64::try_from(v).ok()).ok_or_else(|| Error::out_of_range("bigint"))
    }

    /// `numeric::int4`: round half away from zero; out of range is "integer out of range".
    pub fn to_i32_rounded(&self) -> Result<i32> {
        if self.is_special() {
            return Err(self.special_to_integer("integer"));
        }
        self.rounded_integer().and_then(|v| i32::try_from(v).ok()).ok_or_else(|| Error::out_of_range("integer"))
    }

    /// The square root rounded half up to `scale` digits after the point, computed exactly
    /// (as PostgreSQL's `sqrt_var` at a given result scale: the variance aggregates' stddev).
    /// A negative value is 2201F.
    pub fn sqrt(&self, scale: u16) -> Result<Numeric> {
        if self.mantissa < 0 {
            return Err(Error::new(SqlState("2201F"), "cannot take square root of a negative number"));
        }
        if self.is_special() {
            return Ok(*self); // NaN or Infinity
        }
        // One digit past `scale`, truncated, then rounded: the truncated root decides the
        // rounding as the exact one would (it is below it, and equal when exact).
        let digits = 2 * (scale as i64 + 1) - self.scale as i64;
        let mut radicand = Wide { high: 0, low: self.mantissa.unsigned_abs() };
        if digits >= 0 {
            for _ in 0..digits {
                match radicand.times_ten() {
                    Some(r) => radicand = r,
                    None => return self.sqrt_without_extra_digit(scale),
                }
            }
        } else {
            // floor(sqrt(floor(x))) = floor(sqrt(x)): dropping digits below the last
            // one the root needs changes nothing.
            let dropped = (-digits) as u32;
            radicand.low = match pow10(dropped) {
                Some(divisor) => radicand.low / divisor,
                None => 0,
            };
        }
        let Some(truncated) = radicand.isqrt() else { return self.sqrt_without_extra_digit(scale) };
        let magnitude = truncated / 10 + u128::from(truncated % 10 >= 5);
        Ok(Numeric { mantissa: signed(magnitude, false)?, scale })
    }

    /// [`Numeric::sqrt`] when the radicand with one more digit passes 256 bits (a root of
    /// 38 digits): the root r at `scale`, truncated, is rounded up when x ≥ (r + ½)², that
    /// is 4x ≥ (2r + 1)², the same rounding as the extra digit's.
    fn sqrt_without_extra_digit(&self, scale: u16) -> Result<Numeric> {
        let digits = 2 * scale as i64 - self.scale as i64;
        if digits < 0 {
            return Err(overflow());
        }
        let mut radicand = Wide { high: 0, low: self.mantissa.unsigned_abs() };
        for _ in 0..digits {
            radicand = radicand.times_ten().ok_or_else(overflow)?;
        }
        let root = radicand.isqrt().ok_or_else(overflow)?;
        let odd = root.checked_mul(2).and_then(|r| r.checked_add(1)).ok_or_else(overflow)?;
        let (high, low) = mul_wide(odd, odd);
        // isqrt succeeded: the radicand is below 2^254, so 4x fits.
        let quadruple = Wide { high: (radicand.high << 2) | (radicand.low >> 126), low: radicand.low << 2 };
        let magnitude = root + u128::from(quadruple >= Wide { high, low });
        Ok(Numeric { mantissa: signed(magnitude, false)?, scale })
    }
}

/// An unsigned 256-bit integer, high·2^128 + low: square roots of numerics rescaled past
/// 38 digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Wide {
    high: u128,
    low: u128,
}

impl Wide {
    fn times_ten(self) -> Option<Wide> {
        let (carry, low) = mul_wide(self.low, 10);
        let high = self.high.checked_mul(10)?.checked_add(carry)?;
        Some(Wide { high, low })
    }

    /// floor(sqrt(self)), by Newton's iteration from above; `None` past 2^254 (whose
    /// iterates would not fit).
    fn isqrt(self) -> Option<u128> {
        if self.high == 0 {
            return Some(self.low.isqrt());
        }
        let bits = 256 - self.high.leading_zeros();
        if bits > 254 {
            return None;
        }
        let mut x: u128 = 1 << bits.div_ceil(2); // ≥ sqrt(self), which is < 2^bits
        loop {
            // x ≥ sqrt(self), so self / x ≤ x fits.
            let (quotient, _) = div_wide(self.high, self.low, x)?;
            let next = (x + quotient) / 2;
            if next >= x {
                return Some(x);
            }
            x = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Numeric {
        Numeric::parse(s).unwrap()
    }

    #[test]
    fn square_roots_are_rounded_at_the_scale_asked() {
        let root = |v: &str, scale: u16| n(v).sqrt(scale).unwrap().to_string();
        assert_eq!(root("0.50000000000000000000", 20), "0.70710678118654752440");
        assert_eq!(root("2", 0), "1");
        assert_eq!(root("0.25", 0), "1"); // 0.5 exactly: half up
        assert_eq!(root("0.25", 1), "0.5");
        assert_eq!(root("0", 3), "0.000");
        assert_eq!(root("16", 2), "4.00");
        assert_eq!(root("1234.5678", 2), "35.14");
        assert_eq!(root("0.0000000000000000000000000000012345", 40), "0.0000000000000011110805551354051124500444");
        // A radicand past 128 bits: 10^30 at 20 digits needs 10^72.
        assert_eq!(root("1000000000000000000000000000000", 20), "1000000000000000.00000000000000000000");
        assert_eq!(root("99999999999999999999999999999999999998", 0), "10000000000000000000");
        // Roots of 38 digits, whose extra digit would pass 256 bits (PostgreSQL 15's sqrt).
        assert_eq!(root("0.0000250000000000000000000000000000000000", 40), "0.0050000000000000000000000000000000000000");
        assert_eq!(root("2.0000000000000000000000000000000000000", 37), "1.4142135623730950488016887242096980786");
        assert_eq!(root("0.0000000000000000000000000000000000000000", 40), "0.0000000000000000000000000000000000000000");
        assert_eq!(n("-1").sqrt(2).unwrap_err().sqlstate, SqlState("2201F"));
    }

    fn quotient(a: &str, b: &str) -> String {
        n(a).div(&n(b)).unwrap().to_string()
    }

    #[test]
    fn division_matches_postgres() {
        // select 3::numeric/2, 1::numeric/3, ... on PostgreSQL 15.18.
        let cases: [(&str, &str, &str); 15] = [
            ("3", "2", "1.5000000000000000"),
            ("1", "3", "0.33333333333333333333"),
            ("10", "4", "2.5000000000000000"),
            ("100000000", "3", "33333333.333333333333"),
            ("2", "3", "0.66666666666666666667"),
            ("1", "7", "0.14285714285714285714"),
            ("-7", "2", "-3.5000000000000000"),
            ("1", "1000000", "0.000001000000000000000000"),
            ("123456789012345678", "7", "17636684144620811"),
            ("1", "100000000000000000000", "0.0000000000000000000100000000000000000000"),
            ("0.001", "3", "0.00033333333333333333"),
            ("1.5", "0.5", "3.0000000000000000"),
            ("-1", "3", "-0.33333333333333333333"),
            ("0", "5", "0.00000000000000000000"),
            ("5", "0.0001", "50000.000000000000"),
        ];
        for (a, b, expected) in cases {
            assert_eq!(quotient(a, b), expected, "{a} / {b}");
        }
    }

    #[test]
    fn averages_match_postgres() {
        // select avg(x) from (values (1),(2)) v(x)  =>  1.5000000000000000
        assert_eq!(Numeric::from_i64(3).div(&Numeric::from_i64(2)).unwrap().to_string(), "1.5000000000000000");
        // select avg(x) from generate_series(1,10) x  =>  5.5000000000000000
        assert_eq!(Numeric::from_i128(55).div(&Numeric::from_i64(10)).unwrap().to_string(), "5.5000000000000000");
        // select avg(x) from (values (1.25),(2.5),(3.125)) v(x)  =>  2.2916666666666667
        let sum = n("1.25").add(&n("2.5")).unwrap().add(&n("3.125")).unwrap();
        assert_eq!(sum.div(&Numeric::from_i64(3)).unwrap().to_string(), "2.2916666666666667");
    }

    #[test]
    fn division_errors() {
        let err = n("1").div(&n("0.00")).unwrap_err();
        assert_eq!((err.sqlstate, err.message.as_str()), (SqlState::DIVISION_BY_ZERO, "division by zero"));
        let err = Numeric::from_i128(i128::MAX).div(&n("0.1")).unwrap_err();
        assert_eq!((err.sqlstate, err.message.as_str()), (SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format"));
    }

    #[test]
    fn wide_division_matches_postgres() {
        // Quotients whose intermediate exceeds 128 bits, on PostgreSQL 15.18.
        let max = "170141183460469231731687303715884105727";
        let cases: [(&str, &str, &str); 7] = [
            (max, max, "1.00000000000000000000"),
            (max, "3", "56713727820156410577229101238628035242"),
            ("12345678901234567890", "98765432109876543210.5", "0.12499999886093750001"),
            ("9999", "10000", "0.99990000000000000000"),
            ("10000", "9999", "1.0001000100010001"),
            ("0.5", "0.25", "2.0000000000000000"),
            ("123.456", "0.001", "123456.000000000000"),
        ];
        for (a, b, expected) in cases {
            assert_eq!(quotient(a, b), expected, "{a} / {b}");
        }
    }

    #[test]
    fn arithmetic_matches_postgres() {
        // select 1.5 + 2.25, 1.5 - 2.25, 1.5 * 2.25, -1.50 * 3
        assert_eq!(n("1.5").add(&n("2.25")).unwrap().to_string(), "3.75");
        assert_eq!(n("1.5").sub(&n("2.25")).unwrap().to_string(), "-0.75");
        assert_eq!(n("1.5").mul(&n("2.25")).unwrap().to_string(), "3.375");
        assert_eq!(n("-1.50").mul(&n("3")).unwrap().to_string(), "-4.50");
        let err = Numeric::from_i128(i128::MAX).add(&n("1")).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::NUMERIC_VALUE_OUT_OF_RANGE);
        assert!(Numeric::from_i128(i128::MAX / 2).mul(&n("3")).is_err());
    }

    #[test]
    fn parse_matches_postgres() {
        // select '1e9'::numeric, '1.5E-3'::numeric, ' 7 '::numeric, '-1.50'::numeric, '+.5'::numeric,
        //        '5.'::numeric, '1e-0'::numeric, '00012.3400'::numeric
        let cases = [
            ("12", "12"),
            ("1e9", "1000000000"),
            ("1.5E-3", "0.0015"),
            (" 7 ", "7"),
            ("-1.50", "-1.50"),
            ("+.5", "0.5"),
            ("5.", "5"),
            ("1e-0", "1"),
            ("00012.3400", "12.3400"),
            ("1.50e1", "15.0"),
        ];
        for (input, expected) in cases {
            assert_eq!(n(input).to_string(), expected, "{input:?}");
        }
        for bad in ["x", "", ".", "1e", "1.2.3", "- 1", "1e+", "1 2", "e5", "1e1001"] {
            let err = Numeric::parse(bad).unwrap_err();
            assert_eq!(err.sqlstate, SqlState::INVALID_TEXT_REPRESENTATION, "{bad:?}");
            assert_eq!(err.message, format!("invalid input syntax for type numeric: \"{bad}\""));
        }
        assert_eq!(Numeric::parse("1e100").unwrap_err().sqlstate, SqlState::NUMERIC_VALUE_OUT_OF_RANGE);
        assert_eq!(Numeric::parse("0e100").unwrap().to_string(), "0");
    }

    #[test]
    fn rounding_matches_postgres() {
        // select round(2.5), round(-2.5), round(1.2345, 2), round(-1.235, 2), round(1.5::numeric, 0)
        assert_eq!(n("2.5").round(0).unwrap().to_string(), "3");
        assert_eq!(n("-2.5").round(0).unwrap().to_string(), "-3");
        assert_eq!(n("1.2345").round(2).unwrap().to_string(), "1.23");
        assert_eq!(n("-1.235").round(2).unwrap().to_string(), "-1.24");
        assert_eq!(n("1.5").round(3).unwrap().to_string(), "1.500");
        assert_eq!(n("1250.5").round(-2).unwrap().to_string(), "1300");
        assert_eq!(n("-1249").round(-2).unwrap().to_string(), "-1200");
        assert_eq!(n("49").round(-3).unwrap().to_string(), "0");
    }

    #[test]
    fn integer_casts_match_postgres() {
        // select 2.5::numeric::int8, (-2.5)::numeric::int8, 2.4999::numeric::int4,
        //        9223372036854775807.4::numeric::int8
        assert_eq!(n("2.5").to_i64_rounded().unwrap(), 3);
        assert_eq!(n("-2.5").to_i64_rounded().unwrap(), -3);
        assert_eq!(n("2.4999").to_i32_rounded().unwrap(), 2);
        assert_eq!(n("9223372036854775807.4").to_i64_rounded().unwrap(), i64::MAX);
        let err = n("9223372036854775807.5").to_i64_rounded().unwrap_err();
        assert_eq!((err.sqlstate, err.message.as_str()), (SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "bigint out of range"));
        let err = n("2147483647.5").to_i32_rounded().unwrap_err();
        assert_eq!(err.message, "integer out of range");
    }

    #[test]
    fn value_comparison_ignores_scale() {
        assert!(n("1.5").eq_value(&n("1.50")));
        assert_ne!(n("1.5"), n("1.50"));
        assert_eq!(n("1.50").normalize(), n("1.5"));
        assert_eq!(n("0.000").normalize(), Numeric::ZERO);
        assert_eq!(n("-2").cmp_value(&n("1")), Ordering::Less);
        assert_eq!(n("-2.5").cmp_value(&n("-2.49")), Ordering::Less);
        assert_eq!(n("0.1").cmp_value(&n("0.0999999999999999999999999999999999999")), Ordering::Greater);
        let huge = Numeric::from_i128(i128::MAX);
        let tiny = Numeric::new(1, 60);
        assert_eq!(huge.cmp_value(&tiny), Ordering::Greater);
        assert_eq!(tiny.cmp_value(&huge), Ordering::Less);
        assert_eq!(n("0").cmp_value(&n("-0.00")), Ordering::Equal);
    }

    #[test]
    fn to_f64_is_correctly_rounded() {
        assert_eq!(n("1.5").to_f64(), 1.5);
        assert_eq!(n("0.1").to_f64(), 0.1);
        assert_eq!(n("-0.33333333333333333333").to_f64(), -1.0 / 3.0);
        assert_eq!(Numeric::from_i128(i128::MAX).to_f64(), i128::MAX as f64);
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            /// Division agrees with an f64 model to within the last digit of the result scale,
            /// and `(a / b)` rounded is the nearest multiple of 10^-scale.
            #[test]
            fn division_is_nearest(a in -1_000_000_000i64..1_000_000_000, b in 1i64..1_000_000, a_scale in 0u16..4) {
                let dividend = Numeric::new(a as i128, a_scale);
                let divisor = Numeric::from_i64(b);
                let q = dividend.div(&divisor).unwrap();
                // |q·b − a| ≤ b/2 units of the last place, exactly, in i128.
                let exact = dividend.with_larger_scale(q.scale).unwrap();
                let error = (q.mantissa * b as i128 - exact.mantissa).abs();
                prop_assert!(2 * error <= b as i128);
            }

            #[test]
            fn cmp_value_matches_f64(a in any::<i64>(), sa in 0u16..6, b in any::<i64>(), sb in 0u16..6) {
                let (x, y) = (Numeric::new(a as i128, sa), Numeric::new(b as i128, sb));
                // Compare exactly by cross-multiplying in i128.
                let lhs = a as i128 * 10i128.pow(sb as u32);
                let rhs = b as i128 * 10i128.pow(sa as u32);
                prop_assert_eq!(x.cmp_value(&y), lhs.cmp(&rhs));
            }

            /// Specials sit at the ends of the order whatever the finite value, and the
            /// order agrees with `to_f64`'s (the sort's abbreviated keys rely on that).
            #[test]
            fn specials_bound_every_finite_value(m in any::<i128>(), scale in 0u16..=SCALE_MAX) {
                let v = Numeric::new(m, scale);
                prop_assert_eq!(Numeric::NEG_INFINITY.cmp_value(&v), Ordering::Less);
                prop_assert_eq!(Numeric::INFINITY.cmp_value(&v), Ordering::Greater);
                prop_assert_eq!(Numeric::NAN.cmp_value(&v), Ordering::Greater);
                prop_assert_eq!(v.cmp_value(&Numeric::NAN), Ordering::Less);
                prop_assert!(v.to_f64().is_finite());
                prop_assert_eq!(v.add(&Numeric::INFINITY).unwrap(), Numeric::INFINITY);
                prop_assert_eq!(v.sub(&Numeric::INFINITY).unwrap(), Numeric::NEG_INFINITY);
                prop_assert_eq!(v.mul(&Numeric::NAN).unwrap(), Numeric::NAN);
                prop_assert_eq!(v.div(&Numeric::NEG_INFINITY).unwrap(), Numeric::ZERO);
            }

            #[test]
            fn parse_display_round_trip(m in any::<i64>(), scale in 0u16..20) {
                let v = Numeric::new(m as i128, scale);
                prop_assert_eq!(Numeric::parse(&v.to_string()).unwrap(), v);
            }
        }
    }

    #[test]
    fn special_values_parse_and_print_as_postgres() {
        // select ' nan '::numeric, 'inf'::numeric, '+inf'::numeric, '-INFINITY'::numeric, '-inf'::numeric
        //   => NaN | Infinity | Infinity | -Infinity | -Infinity
        let cases = [
            (" nan ", "NaN"),
            ("NaN", "NaN"),
            ("inf", "Infinity"),
            ("+inf", "Infinity"),
            ("Infinity", "Infinity"),
            ("\tINFINITY\n", "Infinity"),
            ("-INFINITY", "-Infinity"),
            ("-inf", "-Infinity"),
        ];
        for (input, expected) in cases {
            assert_eq!(n(input).to_string(), expected, "{input:?}");
            assert_eq!(Numeric::parse(expected).unwrap(), n(input), "{input:?} round trip");
        }
        assert!(n("nan").is_nan() && !n("nan").is_infinite() && n("nan").is_special());
        assert!(n("-inf").is_infinite() && !n("-inf").is_nan() && !n("-inf").is_finite());
        assert_eq!(n("-inf").kind(), NumericKind::NegativeInfinity);
        assert!(!Numeric::NAN.is_zero());
        // select '+nan'::numeric, '-nan'::numeric, 'infinit'::numeric: all 22P02.
        for bad in ["+nan", "-nan", "infinit", "in f", "nan1", "--inf", "+-inf"] {
            let err = Numeric::parse(bad).unwrap_err();
            assert_eq!(err.sqlstate, SqlState::INVALID_TEXT_REPRESENTATION, "{bad:?}");
        }
    }

    #[test]
    fn special_values_order_as_postgres() {
        // -Infinity < finite < Infinity < NaN, and NaN = NaN (numeric's rule, not IEEE's).
        let ordered = ["-inf", "-170141183460469231731687303715884105727", "-1.5", "0", "1e-100", "170141183460469231731687303715884105727", "inf", "nan"];
        for (i, a) in ordered.iter().enumerate() {
            for (j, b) in ordered.iter().enumerate() {
                assert_eq!(n(a).cmp_value(&n(b)), i.cmp(&j), "{a} vs {b}");
            }
        }
        assert!(n("NaN").eq_value(&n("nan")));
        assert_eq!(n("nan").normalize(), Numeric::NAN);
        assert_eq!(n("-inf").normalize(), Numeric::NEG_INFINITY);
        assert_eq!(n("nan").to_f64().to_bits(), f64::NAN.to_bits());
        assert_eq!(n("-inf").to_f64(), f64::NEG_INFINITY);
    }

    #[test]
    fn special_arithmetic_matches_postgres() {
        let show = |r: Result<Numeric>| r.map(|v| v.to_string()).unwrap_or_else(|e| format!("{}: {}", e.sqlstate.0, e.message));
        let (inf, ninf, nan) = (Numeric::INFINITY, Numeric::NEG_INFINITY, Numeric::NAN);
        // select 'inf'::numeric + 1, 'inf' - 'inf', 'inf' * 0, 1 / 'inf', 'inf' / 'inf', 'nan' + 1
        //   => Infinity | NaN | NaN | 0 | NaN | NaN
        assert_eq!(show(inf.add(&n("1"))), "Infinity");
        assert_eq!(show(inf.sub(&inf)), "NaN");
        assert_eq!(show(inf.add(&ninf)), "NaN");
        assert_eq!(show(ninf.sub(&inf)), "-Infinity");
        assert_eq!(show(inf.mul(&n("0.00"))), "NaN");
        assert_eq!(show(n("1.5").div(&inf)), "0");
        assert_eq!(show(inf.div(&inf)), "NaN");
        assert_eq!(show(nan.add(&n("1"))), "NaN");
        // select 'inf'::numeric * -2, '-inf'::numeric * '-inf', -('inf'::numeric)  =>  -Infinity | Infinity | -Infinity
        assert_eq!(show(inf.mul(&n("-2"))), "-Infinity");
        assert_eq!(show(ninf.mul(&ninf)), "Infinity");
        assert_eq!(show(inf.neg()), "-Infinity");
        assert_eq!(show(nan.neg()), "NaN");
        // select 'nan'::numeric / 0  =>  NaN;  'inf'::numeric / 0, '-inf'::numeric / 0  =>  division by zero
        assert_eq!(show(nan.div(&n("0"))), "NaN");
        assert_eq!(show(inf.div(&n("0"))), "22012: division by zero");
        assert_eq!(show(ninf.div(&n("0"))), "22012: division by zero");
        assert_eq!(show(ninf.div(&n("-3"))), "Infinity");
        // select 'nan'::numeric % 0, 'inf'::numeric % 2, 5 % 'inf'::numeric, -5.5 % '-inf'::numeric
        //   => NaN | NaN | 5 | -5.5;  'inf'::numeric % 0  =>  division by zero
        let rem = |a: &Numeric, b: &Numeric| Numeric::mod_special(a, b).expect("special");
        assert_eq!(show(rem(&nan, &n("0"))), "NaN");
        assert_eq!(show(rem(&inf, &n("2"))), "NaN");
        assert_eq!(show(rem(&n("5"), &inf)), "5");
        assert_eq!(show(rem(&n("-5.5"), &ninf)), "-5.5");
        assert_eq!(show(rem(&inf, &n("0"))), "22012: division by zero");
        // round, abs, sign keep or map the specials.
        assert_eq!(show(inf.round(2)), "Infinity");
        assert_eq!(show(nan.round(-1)), "NaN");
        assert_eq!(show(ninf.abs()), "Infinity");
        assert_eq!(ninf.sign().to_string(), "-1");
        assert_eq!(nan.sign().to_string(), "NaN");
        // select 'nan'::numeric::int4, 'inf'::numeric::int8  =>  0A000 cannot convert ...
        assert_eq!(show(nan.to_i32_rounded().map(|v| n(&v.to_string()))), "0A000: cannot convert NaN to integer");
        assert_eq!(show(inf.to_i64_rounded().map(|v| n(&v.to_string()))), "0A000: cannot convert infinity to bigint");
        assert_eq!(show(ninf.sqrt(2)), "2201F: cannot take square root of a negative number");
        // Finite results that would need a scale in the special range overflow instead.
        assert_eq!(show(Numeric::new(0, 10_000).mul(&Numeric::new(0, 10_000))), "22003: value overflows numeric format");
    }

    #[test]
    fn special_powers_match_postgres() {
        let power = |b: &str, e: &str| {
            let (b, e) = (n(b), n(e));
            Numeric::power_special(&b, &e).expect("special").map(|v| v.to_string()).unwrap_or_else(|e| e.message.clone())
        };
        // select power('inf'::numeric, 2), power('inf'::numeric, -1), power(2::numeric, 'inf'::numeric),
        //   power(0.5::numeric, 'inf'::numeric), power('nan'::numeric, 0), power(1::numeric, 'nan'::numeric)
        //   => Infinity | 0 | Infinity | 0 | 1 | 1
        assert_eq!(power("inf", "2"), "Infinity");
        assert_eq!(power("inf", "-1"), "0");
        assert_eq!(power("2", "inf"), "Infinity");
        assert_eq!(power("0.5", "inf"), "0");
        assert_eq!(power("nan", "0"), "1");
        assert_eq!(power("1", "nan"), "1");
        assert_eq!(power("2", "nan"), "NaN");
        // select power('-inf'::numeric, 3), power('-inf'::numeric, 2), power(-2::numeric, 'inf'),
        //   power(-0.5::numeric, 'inf'), power(-1::numeric, 'inf')  =>  -Infinity | Infinity | Infinity | 0 | 1
        assert_eq!(power("-inf", "3"), "-Infinity");
        assert_eq!(power("-inf", "2"), "Infinity");
        assert_eq!(power("-2", "inf"), "Infinity");
        assert_eq!(power("-0.5", "inf"), "0");
        assert_eq!(power("-1", "inf"), "1");
        assert_eq!(power("-inf", "0.5"), "a negative number raised to a non-integer power yields a complex result");
        assert_eq!(power("0", "-inf"), "zero raised to a negative power is undefined");
    }

    #[test]
    fn integer_powers_match_postgres() {
        let power = |b: &str, e: i64| n(b).power_int(e).unwrap().to_string();
        assert_eq!(power("2", 3), "8.0000000000000000");
        assert_eq!(power("2.0", 3), "8.0000000000000000");
        assert_eq!(power("1.5", 2), "2.2500000000000000");
        assert_eq!(power("10", 3), "1000.0000000000000000");
        assert_eq!(power("10", 20), "100000000000000000000.0000000000000000");
        assert_eq!(power("2", -1), "0.5000000000000000");
        assert_eq!(power("2", -3), "0.1250000000000000");
        assert_eq!(power("3", -1), "0.3333333333333333");
        assert_eq!(power("-3", 3), "-27.0000000000000000");
        assert_eq!(power("7", 0), "1.0000000000000000");
        assert_eq!(power("0", 0), "1.0000000000000000");
        assert!(n("0").power_int(-1).is_err());
    }
}
