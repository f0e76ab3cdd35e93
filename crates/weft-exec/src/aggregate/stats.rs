//! The statistics aggregates' states: the variance family (`stddev`, `var_pop`, ...),
//! the bitwise aggregates and the two-argument regression aggregates (`corr`,
//! `regr_slope`, ...), with PostgreSQL 15's arithmetic so results match digit for digit.
//!
//! - Integers and numerics keep exact sums of x and x² (PostgreSQL's int128 and numeric
//!   states; Σx² in 256 bits, as x² of an int8 or of a numeric with many decimals passes
//!   `Numeric`'s 38 digits); the result is `(n·Σx² − (Σx)²) / (n·(n−1))` (or `/ n²`)
//!   divided at `select_div_scale`, and its square root taken at the same scale.
//! - float8 keeps (n, Σx, Σ(x − mean)²) updated by the Youngs-Cramer formulas (float.c's
//!   `float8_accum`), the regressions (n, Σx, Sxx, Σy, Syy, Sxy) likewise; two partial
//!   states combine by the generalized formulas PostgreSQL's parallel aggregation uses.
//!   Each update and combine does the same float operations in the same order as
//!   PostgreSQL, so a serial result is PostgreSQL's to the last bit.

use weft_common::numeric::Numeric;
use weft_common::{DataType, Datum, Error, Result, SqlState};

use crate::plan::AggregateFunction;

/// Which statistic a variance-family state finishes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spread {
    VarSamp,
    VarPop,
    StddevSamp,
    StddevPop,
}

impl Spread {
    pub(super) fn of(function: AggregateFunction) -> Option<Spread> {
        use AggregateFunction::*;
        Some(match function {
            Variance | VarSamp => Spread::VarSamp,
            VarPop => Spread::VarPop,
            Stddev | StddevSamp => Spread::StddevSamp,
            StddevPop => Spread::StddevPop,
            _ => return None,
        })
    }

    fn sample(self) -> bool {
        matches!(self, Spread::VarSamp | Spread::StddevSamp)
    }

    fn root(self) -> bool {
        matches!(self, Spread::StddevSamp | Spread::StddevPop)
    }

    /// Too few values for a result: none, or one for the sample forms.
    fn too_few(self, n: f64) -> bool {
        n == 0.0 || (self.sample() && n <= 1.0)
    }
}

fn float_overflow() -> Error {
    Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")
}

fn numeric_overflow() -> Error {
    Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
}

/// `a + b` for float sums, with float8 `+`'s overflow check (finite operands, infinite sum).
pub(super) fn float_add(a: f64, b: f64) -> Result<f64> {
    let sum = a + b;
    if sum.is_infinite() && a.is_finite() && b.is_finite() {
        return Err(float_overflow());
    }
    Ok(sum)
}

/// An unsigned 256-bit integer: the exact Σx² and the variance's numerator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct U256 {
    pub(super) high: u128,
    pub(super) low: u128,
}

impl U256 {
    const ZERO: U256 = U256 { high: 0, low: 0 };

    fn from_u128(low: u128) -> U256 {
        U256 { high: 0, low }
    }

    /// `a × b`, exactly.
    fn product(a: u128, b: u128) -> U256 {
        const LOW: u128 = u64::MAX as u128;
        let (a_high, a_low) = (a >> 64, a & LOW);
        let (b_high, b_low) = (b >> 64, b & LOW);
        let low_low = a_low * b_low;
        let low_high = a_low * b_high;
        let high_low = a_high * b_low;
        let middle = (low_low >> 64) + (low_high & LOW) + (high_low & LOW);
        let low = (low_low & LOW) | (middle << 64);
        let high = a_high * b_high + (low_high >> 64) + (high_low >> 64) + (middle >> 64);
        U256 { high, low }
    }

    fn checked_add(self, other: U256) -> Option<U256> {
        let (low, carry) = self.low.overflowing_add(other.low);
        let high = self.high.checked_add(other.high)?.checked_add(carry as u128)?;
        Some(U256 { high, low })
    }

    /// `self − other` for `self ≥ other`.
    fn minus(self, other: U256) -> U256 {
        let (low, borrow) = self.low.overflowing_sub(other.low);
        U256 { high: self.high - other.high - borrow as u128, low }
    }

    fn checked_mul(self, m: u128) -> Option<U256> {
        let low = U256::product(self.low, m);
        let high = U256::product(self.high, m);
        if high.high != 0 {
            return None;
        }
        low.checked_add(U256 { high: high.low, low: 0 })
    }

    fn checked_mul_pow10(mut self, mut exponent: u32) -> Option<U256> {
        while exponent > 0 {
            let step = exponent.min(38);
            self = self.checked_mul(10u128.pow(step))?;
            exponent -= step;
        }
        Some(self)
    }

    /// The quotient and remainder of `self / divisor` (`divisor` ≠ 0).
    fn div_rem(self, divisor: u128) -> (U256, u128) {
        let (quotient_high, mut remainder) = (self.high / divisor, self.high % divisor);
        // Binary long division of (remainder, low): its quotient fits 128 bits.
        let mut quotient_low = 0u128;
        for bit in (0..128).rev() {
            let carry = remainder >> 127;
            remainder = (remainder << 1) | ((self.low >> bit) & 1);
            if carry == 1 || remainder >= divisor {
                remainder = remainder.wrapping_sub(divisor);
                quotient_low |= 1 << bit;
            }
        }
        (U256 { high: quotient_high, low: quotient_low }, remainder)
    }

    /// √self rounded to the nearest integer (never a tie: (2r + 1)² = 4·self has an odd
    /// left side). The root of a 256-bit number fits 128 bits.
    fn rounded_sqrt(self) -> u128 {
        // The largest r with r² ≤ self, bit by bit from the top.
        let mut root = 0u128;
        for bit in (0..128).rev() {
            let candidate = root | (1 << bit);
            if U256::product(candidate, candidate) <= self {
                root = candidate;
            }
        }
        // Round up when self ≥ (r + ½)², that is self − r² > r (integers).
        let excess = self.minus(U256::product(root, root));
        if excess > U256::from_u128(root) {
            root.saturating_add(1)
        } else {
            root
        }
    }

    /// The number of decimal digits (1 for zero).
    fn digits(self) -> u32 {
        if self.high == 0 {
            return self.low.checked_ilog10().unwrap_or(0) + 1;
        }
        // 2^256 < 10^78: the quotient fits 128 bits.
        38 + self.div_rem(10u128.pow(38)).0.digits()
    }

    /// `self / 10^exponent`, truncated.
    fn shift_right_decimal(mut self, mut exponent: u32) -> U256 {
        while exponent > 0 {
            let step = exponent.min(38);
            self = self.div_rem(10u128.pow(step)).0;
            exponent -= step;
        }
        self
    }

    /// PostgreSQL's base-10000 weight and first digit of `self × 10^-scale` (non-zero).
    fn weight_and_first_digit(self, scale: u16) -> (i32, u128) {
        let digits = self.digits() as i32;
        let leading_exponent = digits - 1 - scale as i32;
        let weight = leading_exponent.div_euclid(4);
        let width = leading_exponent - weight * 4 + 1;
        let first = if digits >= width {
            self.shift_right_decimal((digits - width) as u32).low
        } else {
            self.low * 10u128.pow((width - digits) as u32)
        };
        (weight, first)
    }
}

/// The exact moments of integer or numeric values: count, Σx, Σx². A numeric Σx keeps the
/// largest input scale and Σx² twice it (each x² is exact), as PostgreSQL's sums do.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ExactMoments {
    pub(super) n: i64,
    pub(super) sum: Numeric,
    /// Σx² of the finite values, `sum_sq × 10^-sum_sq_scale`.
    pub(super) sum_sq: U256,
    pub(super) sum_sq_scale: u16,
}

impl ExactMoments {
    pub(super) const EMPTY: ExactMoments = ExactMoments { n: 0, sum: Numeric::ZERO, sum_sq: U256::ZERO, sum_sq_scale: 0 };

    pub(super) fn add(&mut self, x: Numeric) -> Result<()> {
        self.sum = self.sum.add(&x)?;
        if !x.is_special() {
            let magnitude = x.mantissa.unsigned_abs();
            self.add_squares(U256::product(magnitude, magnitude), x.scale.checked_mul(2).ok_or_else(numeric_overflow)?)?;
        }
        self.n += 1;
        Ok(())
    }

    /// Add `squares × 10^-scale` to Σx², at the larger of the two scales.
    fn add_squares(&mut self, squares: U256, scale: u16) -> Result<()> {
        let target = self.sum_sq_scale.max(scale);
        let ours = self.sum_sq.checked_mul_pow10(u32::from(target - self.sum_sq_scale));
        let theirs = squares.checked_mul_pow10(u32::from(target - scale));
        self.sum_sq = ours.zip(theirs).and_then(|(a, b)| a.checked_add(b)).ok_or_else(numeric_overflow)?;
        self.sum_sq_scale = target;
        Ok(())
    }

    pub(super) fn merge(&mut self, other: &ExactMoments) -> Result<()> {
        self.sum = self.sum.add(&other.sum)?;
        self.add_squares(other.sum_sq, other.sum_sq_scale)?;
        self.n += other.n;
        Ok(())
    }

    /// PostgreSQL's `numeric_stddev_internal`: the numerator `n·Σx² − (Σx)²` is exact (its
    /// scale is twice Σx's), a non-positive one gives 0, else it is divided by `n(n−1)` or
    /// `n²` at `select_div_scale` and the root taken at that scale.
    pub(super) fn finish(&self, spread: Spread) -> Result<Datum> {
        if spread.too_few(self.n as f64) {
            return Ok(Datum::Null);
        }
        // As float8's: any NaN or infinite input makes the spread NaN.
        if self.sum.is_special() {
            return Ok(Datum::Numeric(Numeric::NAN));
        }
        // n·Σx² − (Σx)², exactly, at the larger scale.
        let sum = self.sum.mantissa.unsigned_abs();
        let sum_squared_scale = self.sum.scale.checked_mul(2).ok_or_else(numeric_overflow)?;
        let scale = self.sum_sq_scale.max(sum_squared_scale);
        let terms = self.sum_sq.checked_mul(self.n as u128).and_then(|t| t.checked_mul_pow10(u32::from(scale - self.sum_sq_scale)));
        let sum_squared = U256::product(sum, sum).checked_mul_pow10(u32::from(scale - sum_squared_scale));
        let (terms, sum_squared) = terms.zip(sum_squared).ok_or_else(numeric_overflow)?;
        if terms <= sum_squared {
            return Ok(Datum::Numeric(Numeric::ZERO));
        }
        let numerator = terms.minus(sum_squared);
        let pairs = if spread.sample() { self.n.checked_mul(self.n - 1) } else { self.n.checked_mul(self.n) };
        let denominator = pairs.ok_or_else(numeric_overflow)? as u128;
        // numeric's select_div_scale, then the quotient rounded half away from zero.
        let (numerator_weight, numerator_first) = numerator.weight_and_first_digit(scale);
        let (denominator_weight, denominator_first) = U256::from_u128(denominator).weight_and_first_digit(0);
        let mut quotient_weight = numerator_weight - denominator_weight;
        if numerator_first <= denominator_first {
            quotient_weight -= 1;
        }
        let result_scale = (16 - quotient_weight * 4).max(i32::from(scale)).clamp(0, 1000) as u16;
        let shifted = numerator.checked_mul_pow10(u32::from(result_scale.saturating_sub(scale))).ok_or_else(numeric_overflow)?;
        let (mut quotient, remainder) = shifted.div_rem(denominator);
        if remainder >= denominator - remainder {
            quotient = quotient.checked_add(U256::from_u128(1)).ok_or_else(numeric_overflow)?;
        }
        // The root is taken from the exact quotient: a variance past numeric's 38 digits
        // (PostgreSQL's has no limit) still has a root that fits.
        let mantissa = if spread.root() {
            // √(q·10^-s) at scale s is √(q·10^s), rounded.
            let radicand = quotient.checked_mul_pow10(u32::from(result_scale)).ok_or_else(numeric_overflow)?;
            radicand.rounded_sqrt()
        } else if quotient.high == 0 {
            quotient.low
        } else {
            return Err(numeric_overflow());
        };
        if mantissa > i128::MAX as u128 {
            return Err(numeric_overflow());
        }
        Ok(Datum::Numeric(Numeric { mantissa: mantissa as i128, scale: result_scale }))
    }
}

/// float8's (n, Σx, Sxx = Σ(x − mean)²), PostgreSQL's `float8_accum` state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct FloatMoments {
    pub(super) n: f64,
    pub(super) sx: f64,
    pub(super) sxx: f64,
}

impl FloatMoments {
    pub(super) fn add(&mut self, x: f64) -> Result<()> {
        let (old_n, old_sx) = (self.n, self.sx);
        self.n += 1.0;
        self.sx += x;
        if old_n > 0.0 {
            let deviation = x * self.n - self.sx;
            self.sxx += deviation * deviation / (self.n * old_n);
            // Infinite sums from finite inputs overflowed; an infinite input makes the
            // spread undefined (NaN), never infinite.
            if self.sx.is_infinite() || self.sxx.is_infinite() {
                if old_sx.is_finite() && x.is_finite() {
                    return Err(float_overflow());
                }
                self.sxx = f64::NAN;
            }
        } else if !x.is_finite() {
            // A first Inf or NaN alone would otherwise show a spread of 0.
            self.sxx = f64::NAN;
        }
        Ok(())
    }

    pub(super) fn merge(&mut self, other: &FloatMoments) -> Result<()> {
        if other.n == 0.0 {
            return Ok(());
        }
        if self.n == 0.0 {
            *self = *other;
            return Ok(());
        }
        let n = self.n + other.n;
        let sx = float_add(self.sx, other.sx)?;
        let gap = self.sx / self.n - other.sx / other.n;
        let sxx = self.sxx + other.sxx + self.n * other.n * gap * gap / n;
        if sxx.is_infinite() && self.sxx.is_finite() && other.sxx.is_finite() {
            return Err(float_overflow());
        }
        *self = FloatMoments { n, sx, sxx };
        Ok(())
    }

    /// avg(float8): Σx / n, NULL without rows (`float8_avg`).
    pub(super) fn mean(&self) -> Datum {
        if self.n == 0.0 {
            return Datum::Null;
        }
        Datum::Float8(self.sx / self.n)
    }

    pub(super) fn finish(&self, spread: Spread) -> Datum {
        if spread.too_few(self.n) {
            return Datum::Null;
        }
        let variance = self.sxx / if spread.sample() { self.n - 1.0 } else { self.n };
        Datum::Float8(if spread.root() { variance.sqrt() } else { variance })
    }
}

/// What a regression state finishes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegrOutput {
    Corr,
    CovarPop,
    CovarSamp,
    Count,
    AvgX,
    AvgY,
    Slope,
    Intercept,
    R2,
    Sxx,
    Syy,
    Sxy,
}

impl RegrOutput {
    pub(super) fn of(function: AggregateFunction) -> Option<RegrOutput> {
        use AggregateFunction as F;
        Some(match function {
            F::Corr => RegrOutput::Corr,
            F::CovarPop => RegrOutput::CovarPop,
            F::CovarSamp => RegrOutput::CovarSamp,
            F::RegrCount => RegrOutput::Count,
            F::RegrAvgX => RegrOutput::AvgX,
            F::RegrAvgY => RegrOutput::AvgY,
            F::RegrSlope => RegrOutput::Slope,
            F::RegrIntercept => RegrOutput::Intercept,
            F::RegrR2 => RegrOutput::R2,
            F::RegrSxx => RegrOutput::Sxx,
            F::RegrSyy => RegrOutput::Syy,
            F::RegrSxy => RegrOutput::Sxy,
            _ => return None,
        })
    }
}

/// PostgreSQL's `float8_regr_accum` state: n, Σx, Sxx, Σy, Syy, Sxy (x is the second
/// argument).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct RegrMoments {
    pub(super) n: f64,
    pub(super) sx: f64,
    pub(super) sxx: f64,
    pub(super) sy: f64,
    pub(super) syy: f64,
    pub(super) sxy: f64,
}

impl RegrMoments {
    pub(super) fn add(&mut self, y: f64, x: f64) -> Result<()> {
        let (old_n, old_sx, old_sy) = (self.n, self.sx, self.sy);
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        if old_n > 0.0 {
            let dx = x * self.n - self.sx;
            let dy = y * self.n - self.sy;
            // One reciprocal multiplied in, not three divisions: PostgreSQL's rounding.
            let scale = 1.0 / (self.n * old_n);
            self.sxx += dx * dx * scale;
            self.syy += dy * dy * scale;
            self.sxy += dx * dy * scale;
            if [self.sx, self.sxx, self.sy, self.syy, self.sxy].iter().any(|v| v.is_infinite()) {
                let x_finite = old_sx.is_finite() && x.is_finite();
                let y_finite = old_sy.is_finite() && y.is_finite();
                if ((self.sx.is_infinite() || self.sxx.is_infinite()) && x_finite)
                    || ((self.sy.is_infinite() || self.syy.is_infinite()) && y_finite)
                    || (self.sxy.is_infinite() && x_finite && y_finite)
                {
                    return Err(float_overflow());
                }
                for v in [&mut self.sxx, &mut self.syy, &mut self.sxy] {
                    if v.is_infinite() {
                        *v = f64::NAN;
                    }
                }
            }
        } else {
            if !x.is_finite() {
                (self.sxx, self.sxy) = (f64::NAN, f64::NAN);
            }
            if !y.is_finite() {
                (self.syy, self.sxy) = (f64::NAN, f64::NAN);
            }
        }
        Ok(())
    }

    pub(super) fn merge(&mut self, other: &RegrMoments) -> Result<()> {
        if other.n == 0.0 {
            return Ok(());
        }
        if self.n == 0.0 {
            *self = *other;
            return Ok(());
        }
        let (a, b) = (*self, *other);
        let n = a.n + b.n;
        let checked = |v: f64, parts: [f64; 2]| {
            if v.is_infinite() && parts.iter().all(|p| p.is_finite()) { Err(float_overflow()) } else { Ok(v) }
        };
        let sx = float_add(a.sx, b.sx)?;
        let gap_x = a.sx / a.n - b.sx / b.n;
        let sxx = checked(a.sxx + b.sxx + a.n * b.n * gap_x * gap_x / n, [a.sxx, b.sxx])?;
        let sy = float_add(a.sy, b.sy)?;
        let gap_y = a.sy / a.n - b.sy / b.n;
        let syy = checked(a.syy + b.syy + a.n * b.n * gap_y * gap_y / n, [a.syy, b.syy])?;
        let sxy = checked(a.sxy + b.sxy + a.n * b.n * gap_x * gap_y / n, [a.sxy, b.sxy])?;
        *self = RegrMoments { n, sx, sxx, sy, syy, sxy };
        Ok(())
    }

    pub(super) fn finish(&self, output: RegrOutput) -> Datum {
        let RegrMoments { n, sx, sxx, sy, syy, sxy } = *self;
        if output == RegrOutput::Count {
            return Datum::Int8(n as i64);
        }
        if n < 1.0 || (output == RegrOutput::CovarSamp && n < 2.0) {
            return Datum::Null;
        }
        let value = match output {
            RegrOutput::Sxx => sxx,
            RegrOutput::Syy => syy,
            RegrOutput::Sxy => sxy,
            RegrOutput::AvgX => sx / n,
            RegrOutput::AvgY => sy / n,
            RegrOutput::CovarPop => sxy / n,
            RegrOutput::CovarSamp => sxy / (n - 1.0),
            // Undefined for a vertical line (Sxx = 0), and for a horizontal one in corr.
            RegrOutput::Corr if sxx == 0.0 || syy == 0.0 => return Datum::Null,
            RegrOutput::Corr => sxy / (sxx * syy).sqrt(),
            RegrOutput::Slope | RegrOutput::Intercept | RegrOutput::R2 if sxx == 0.0 => return Datum::Null,
            RegrOutput::R2 if syy == 0.0 => 1.0,
            RegrOutput::R2 => (sxy * sxy) / (sxx * syy),
            RegrOutput::Slope => sxy / sxx,
            RegrOutput::Intercept => (sy - sx * sxy / sxx) / n,
            RegrOutput::Count => unreachable!("handled above"),
        };
        Datum::Float8(value)
    }
}

/// `bit_and`, `bit_or`, `bit_xor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BitOp {
    And,
    Or,
    Xor,
}

impl BitOp {
    pub(super) fn of(function: AggregateFunction) -> Option<BitOp> {
        Some(match function {
            AggregateFunction::BitAnd => BitOp::And,
            AggregateFunction::BitOr => BitOp::Or,
            AggregateFunction::BitXor => BitOp::Xor,
            _ => return None,
        })
    }

    pub(super) fn apply(self, a: i64, b: i64) -> i64 {
        match self {
            BitOp::And => a & b,
            BitOp::Or => a | b,
            BitOp::Xor => a ^ b,
        }
    }
}

/// A bitwise aggregate's result: NULL over no value, else of the input's type.
pub(super) fn bits_result(value: Option<i64>, result: DataType) -> Datum {
    match (value, result) {
        (None, _) => Datum::Null,
        // An int4 input's bits stay within 32 (sign-extended) under AND, OR and XOR.
        (Some(v), DataType::Int4) => Datum::Int4(v as i32),
        (Some(v), _) => Datum::Int8(v),
    }
}
