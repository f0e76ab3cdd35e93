//! Date and time operators, casts and functions, as PostgreSQL 15 defines them.
//!
//! The values and their text forms live in `weft_common::datetime`; this module holds
//! what expressions do with them:
//!
//! 1. Implicit casts `date → timestamp → timestamptz` and `time → interval`, so a
//!    comparison across them runs in the later type (`date '2024-01-02' > timestamp ...`).
//! 2. Arithmetic (`resolve_arith`): `date ± int4 = date`, `date - date = int4`,
//!    `timestamp[tz] ± interval` (a date is read as a timestamp at midnight), `timestamp[tz]
//!    - timestamp[tz] = interval`, `interval ± interval`, `interval * / float8`, `date +
//!    time = timestamp`, `time ± interval = time`, `time - time = interval`.
//! 3. Functions: `now()` and its SQL spellings, `clock_timestamp()`, `extract` (numeric,
//!    PostgreSQL 14+) and `date_part` (float8), `date_trunc`, `age`, `make_date`,
//!    `make_timestamp`, `isfinite`, `to_char` with the common patterns; and, in
//!    `datetime_fns`, `localtime`, `justify_*`, `make_interval`, `date_bin`,
//!    `to_timestamp`, `to_date` and `timezone` (`AT TIME ZONE`). The session's time zone
//!    is UTC, so timestamptz fields are those of the UTC instant.

use weft_common::timezone as tz;
use weft_common::datetime::{
    self as dt, Interval, DATE_NEG_INFINITY, DATE_POS_INFINITY, TS_NEG_INFINITY, TS_POS_INFINITY, USECS_PER_DAY,
    USECS_PER_HOUR, USECS_PER_MINUTE, USECS_PER_SEC,
};
use weft_common::{DataType, Datum, Error, Numeric, Result, SqlState};

use super::datetime_fns as fns;
use super::functions::Signature;
use super::BinaryOp;

/// The place of a type in the implicit chain `date → timestamp → timestamptz`.
pub fn chain_rank(t: DataType) -> Option<u8> {
    match t {
        DataType::Date => Some(0),
        DataType::Timestamp => Some(1),
        DataType::TimestampTz => Some(2),
        _ => None,
    }
}

/// Implicit casts among the date/time types (rule 1).
pub fn implicit_cast(from: DataType, to: DataType) -> bool {
    match (chain_rank(from), chain_rank(to)) {
        (Some(f), Some(t)) => f < t,
        _ => matches!((from, to), (DataType::Time, DataType::Interval)),
    }
}

/// Explicit casts among the date/time types (text casts are everyone's).
pub fn explicit_cast(from: DataType, to: DataType) -> bool {
    use DataType::*;
    implicit_cast(from, to)
        || matches!(
            (from, to),
            (Timestamp | TimestampTz, Date) | (TimestampTz, Timestamp) | (Timestamp | TimestampTz | Interval, Time)
        )
}

pub fn is_datetime(t: DataType) -> bool {
    matches!(t, DataType::Date | DataType::Time | DataType::Timestamp | DataType::TimestampTz | DataType::Interval)
}

/// Reads `s` with the input function of a date/time type.
pub fn parse_text(s: &str, to: DataType) -> Result<Datum> {
    Ok(match to {
        DataType::Date => Datum::Date(dt::parse_date(s)?),
        DataType::Time => Datum::Time(dt::parse_time(s)?),
        DataType::Timestamp => Datum::Timestamp(dt::parse_timestamp(s, false)?),
        DataType::TimestampTz => Datum::TimestampTz(tz::with_current(|zone| dt::parse_timestamptz(s, zone))?),
        DataType::Interval => Datum::Interval(dt::parse_interval(s, None)?),
        other => return Err(Error::internal(format!("{} is not a date/time type", other.name()))),
    })
}

/// A cast between two date/time types; `None` when the pair is not one.
pub fn cast(value: &Datum, to: DataType) -> Option<Result<Datum>> {
    Some(match (value, to) {
        (Datum::Date(d), DataType::Timestamp) => dt::date_to_timestamp(*d).map(Datum::Timestamp),
        // Local time of the session's zone on the timestamp side of each cast.
        (Datum::Date(d), DataType::TimestampTz) => dt::date_to_timestamp(*d).and_then(local_to_tz).map(Datum::TimestampTz),
        (Datum::Timestamp(t), DataType::TimestampTz) => local_to_tz(*t).map(Datum::TimestampTz),
        (Datum::TimestampTz(t), DataType::Timestamp) => tz_to_local(*t).map(Datum::Timestamp),
        (Datum::TimestampTz(t), DataType::Date) => tz_to_local(*t).and_then(dt::timestamp_to_date).map(Datum::Date),
        (Datum::TimestampTz(t), DataType::Time) => {
            if dt::timestamp_is_finite(*t) {
                tz_to_local(*t).map(|l| Datum::Time(l.rem_euclid(USECS_PER_DAY)))
            } else {
                Ok(Datum::Null)
            }
        }
        (Datum::Timestamp(t), DataType::Date) => dt::timestamp_to_date(*t).map(Datum::Date),
        (Datum::Timestamp(t), DataType::Time) => {
            if dt::timestamp_is_finite(*t) {
                Ok(Datum::Time(t.rem_euclid(USECS_PER_DAY)))
            } else {
                Ok(Datum::Null)
            }
        }
        (Datum::Time(t), DataType::Interval) => Ok(Datum::Interval(Interval::new(0, 0, *t))),
        // interval_time: the time part, wrapped into one day.
        (Datum::Interval(iv), DataType::Time) => Ok(Datum::Time(iv.micros.rem_euclid(USECS_PER_DAY))),
        _ => return None,
    })
}

/// A timestamptz as local time of the session's zone (infinities stay).
pub fn tz_to_local(t: i64) -> Result<i64> {
    if !dt::timestamp_is_finite(t) {
        return Ok(t);
    }
    tz::with_current(|zone| zone.to_local(t)).filter(|l| dt::timestamp_in_range(*l)).ok_or_else(dt::timestamp_out_of_range)
}

/// Local time of the session's zone as a timestamptz (infinities stay).
pub fn local_to_tz(t: i64) -> Result<i64> {
    if !dt::timestamp_is_finite(t) {
        return Ok(t);
    }
    tz::with_current(|zone| zone.from_local(t)).filter(|u| dt::timestamp_in_range(*u)).ok_or_else(dt::timestamp_out_of_range)
}

/// The operand and result types of a date/time arithmetic operator (rule 2), or `None`
/// when `left op right` is not one. Operands are cast to the returned types.
pub fn resolve_arith(op: BinaryOp, left: DataType, right: DataType) -> Option<(DataType, DataType, DataType)> {
    use BinaryOp::*;
    use DataType::*;
    let ts_like = |t: DataType| matches!(t, Timestamp | TimestampTz);
    let numeric = |t: DataType| matches!(t, Int4 | Int8 | Numeric | Float8);
    Some(match (op, left, right) {
        (Add, Date, Int4) | (Sub, Date, Int4) => (Date, Int4, Date),
        (Add, Int4, Date) => (Int4, Date, Date),
        (Sub, Date, Date) => (Date, Date, Int4),
        (Add | Sub, Date, Interval) => (Timestamp, Interval, Timestamp),
        (Add, Interval, Date) => (Interval, Timestamp, Timestamp),
        (Add | Sub, t, Interval) if ts_like(t) => (t, Interval, t),
        (Add, Interval, t) if ts_like(t) => (Interval, t, t),
        (Sub, l, r) if chain_rank(l).is_some() && chain_rank(r).is_some() && (ts_like(l) || ts_like(r)) => {
            let t = if chain_rank(l) >= chain_rank(r) { l } else { r };
            (t, t, Interval)
        }
        (Add | Sub, Interval, Interval) => (Interval, Interval, Interval),
        (Add | Sub, Interval, Time) | (Add | Sub, Time, Time) if op == Sub || right == Interval => {
            if right == Time && left == Time {
                (Time, Time, Interval)
            } else {
                (Interval, Interval, Interval)
            }
        }
        (Add | Sub, Time, Interval) => (Time, Interval, Time),
        (Add, Interval, Time) => (Interval, Time, Time),
        (Add, Date, Time) => (Date, Time, Timestamp),
        (Add, Time, Date) => (Time, Date, Timestamp),
        (Mul | Div, Interval, n) if numeric(n) => (Interval, Float8, Interval),
        (Mul, n, Interval) if numeric(n) => (Float8, Interval, Interval),
        _ => return None,
    })
}

/// Evaluates a date/time arithmetic operator on two non-null values of the types
/// `resolve_arith` chose; `None` when the operands are not date/time ones.
pub fn eval_arith(op: BinaryOp, left: &Datum, right: &Datum) -> Option<Result<Datum>> {
    use BinaryOp::*;
    Some(match (op, left, right) {
        (Add, Datum::Date(d), Datum::Int4(n)) | (Add, Datum::Int4(n), Datum::Date(d)) => date_add_days(*d, *n as i64),
        (Sub, Datum::Date(d), Datum::Int4(n)) => date_add_days(*d, -(*n as i64)),
        (Sub, Datum::Date(a), Datum::Date(b)) => {
            if !dt::date_is_finite(*a) || !dt::date_is_finite(*b) {
                Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "cannot subtract infinite dates"))
            } else {
                Ok(Datum::Int4(a - b))
            }
        }
        (Add, Datum::Timestamp(t), Datum::Interval(iv)) | (Add, Datum::Interval(iv), Datum::Timestamp(t)) => {
            dt::timestamp_add_interval(*t, iv).map(Datum::Timestamp)
        }
        (Sub, Datum::Timestamp(t), Datum::Interval(iv)) => {
            iv.checked_neg().and_then(|n| dt::timestamp_add_interval(*t, &n)).map(Datum::Timestamp)
        }
        (Add, Datum::TimestampTz(t), Datum::Interval(iv)) | (Add, Datum::Interval(iv), Datum::TimestampTz(t)) => {
            tz::with_current(|zone| tz::timestamptz_add_interval(*t, iv, zone)).map(Datum::TimestampTz)
        }
        (Sub, Datum::TimestampTz(t), Datum::Interval(iv)) => {
            iv.checked_neg().and_then(|n| tz::with_current(|zone| tz::timestamptz_add_interval(*t, &n, zone))).map(Datum::TimestampTz)
        }
        (Sub, Datum::Timestamp(a), Datum::Timestamp(b)) | (Sub, Datum::TimestampTz(a), Datum::TimestampTz(b)) => {
            dt::timestamp_diff(*a, *b).map(Datum::Interval)
        }
        (Add, Datum::Interval(a), Datum::Interval(b)) => a.checked_add(b).map(Datum::Interval),
        (Sub, Datum::Interval(a), Datum::Interval(b)) => a.checked_sub(b).map(Datum::Interval),
        (Mul, Datum::Interval(iv), Datum::Float8(f)) | (Mul, Datum::Float8(f), Datum::Interval(iv)) => {
            iv.mul_f64(*f).map(Datum::Interval)
        }
        (Div, Datum::Interval(iv), Datum::Float8(f)) => {
            if *f == 0.0 {
                Err(Error::division_by_zero())
            } else {
                iv.mul_f64(1.0 / f).map(Datum::Interval)
            }
        }
        (Add, Datum::Date(d), Datum::Time(t)) | (Add, Datum::Time(t), Datum::Date(d)) => {
            dt::date_to_timestamp(*d).and_then(|ts| {
                if dt::timestamp_is_finite(ts) {
                    ts.checked_add(*t).filter(|v| dt::timestamp_in_range(*v)).ok_or_else(dt::timestamp_out_of_range)
                } else {
                    Ok(ts)
                }
            }).map(Datum::Timestamp)
        }
        (Add, Datum::Time(t), Datum::Interval(iv)) | (Add, Datum::Interval(iv), Datum::Time(t)) => {
            Ok(Datum::Time((t + iv.micros.rem_euclid(USECS_PER_DAY)).rem_euclid(USECS_PER_DAY)))
        }
        (Sub, Datum::Time(t), Datum::Interval(iv)) => {
            Ok(Datum::Time((t - iv.micros.rem_euclid(USECS_PER_DAY)).rem_euclid(USECS_PER_DAY)))
        }
        (Sub, Datum::Time(a), Datum::Time(b)) => Ok(Datum::Interval(Interval::new(0, 0, a - b))),
        _ => return None,
    })
}

fn date_add_days(d: i32, n: i64) -> Result<Datum> {
    if !dt::date_is_finite(d) {
        return Ok(Datum::Date(d));
    }
    let result = d as i64 + n;
    if !(dt::MIN_DATE..dt::END_DATE).contains(&result) {
        return Err(dt::date_out_of_range());
    }
    Ok(Datum::Date(result as i32))
}

/// Unary minus of an interval.
pub fn negate(value: &Datum) -> Option<Result<Datum>> {
    match value {
        Datum::Interval(iv) => Some(iv.checked_neg().map(Datum::Interval)),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Functions

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DateTimeFunction {
    /// `now()`, `current_timestamp`, `transaction_timestamp()`, `statement_timestamp()`.
    Now,
    ClockTimestamp,
    CurrentDate,
    LocalTimestamp,
    /// `extract(field FROM x)`: numeric.
    Extract,
    /// `date_part('field', x)`: float8.
    DatePart,
    DateTrunc,
    Age,
    MakeDate,
    MakeTimestamp,
    IsFinite,
    ToChar,
    /// `localtime`: the time of day of `now()`.
    LocalTime,
    JustifyHours,
    JustifyDays,
    JustifyInterval,
    MakeInterval,
    DateBin,
    /// `to_timestamp(float8)` and `to_timestamp(text, text)`.
    ToTimestamp,
    ToDate,
    /// `timezone(zone, value)`: `value AT TIME ZONE zone`.
    TimeZone,
}

impl DateTimeFunction {
    pub fn name(self) -> &'static str {
        match self {
            DateTimeFunction::Now => "now",
            DateTimeFunction::ClockTimestamp => "clock_timestamp",
            DateTimeFunction::CurrentDate => "current_date",
            DateTimeFunction::LocalTimestamp => "localtimestamp",
            DateTimeFunction::Extract => "extract",
            DateTimeFunction::DatePart => "date_part",
            DateTimeFunction::DateTrunc => "date_trunc",
            DateTimeFunction::Age => "age",
            DateTimeFunction::MakeDate => "make_date",
            DateTimeFunction::MakeTimestamp => "make_timestamp",
            DateTimeFunction::IsFinite => "isfinite",
            DateTimeFunction::ToChar => "to_char",
            DateTimeFunction::LocalTime => "localtime",
            DateTimeFunction::JustifyHours => "justify_hours",
            DateTimeFunction::JustifyDays => "justify_days",
            DateTimeFunction::JustifyInterval => "justify_interval",
            DateTimeFunction::MakeInterval => "make_interval",
            DateTimeFunction::DateBin => "date_bin",
            DateTimeFunction::ToTimestamp => "to_timestamp",
            DateTimeFunction::ToDate => "to_date",
            DateTimeFunction::TimeZone => "timezone",
        }
    }

    /// `clock_timestamp()` changes during a statement; the others are fixed for it.
    pub fn is_volatile(self) -> bool {
        matches!(self, DateTimeFunction::ClockTimestamp)
    }
}

/// The overloads of the date/time functions, by lowercase SQL name.
pub fn signatures(name: &str) -> &'static [Signature] {
    use super::ScalarFunction::DateTime as D;
    use DataType::*;
    use DateTimeFunction as F;
    const fn sig(func: DateTimeFunction, args: &'static [DataType], result: DataType) -> Signature {
        Signature { func: D(func), args, result }
    }
    const NOW: &[Signature] = &[sig(F::Now, &[], TimestampTz)];
    const CLOCK: &[Signature] = &[sig(F::ClockTimestamp, &[], TimestampTz)];
    const CURRENT_DATE: &[Signature] = &[sig(F::CurrentDate, &[], Date)];
    const LOCALTIMESTAMP: &[Signature] = &[sig(F::LocalTimestamp, &[], Timestamp)];
    const EXTRACT: &[Signature] = &[
        sig(F::Extract, &[Text, Date], Numeric),
        sig(F::Extract, &[Text, Time], Numeric),
        sig(F::Extract, &[Text, Timestamp], Numeric),
        sig(F::Extract, &[Text, TimestampTz], Numeric),
        sig(F::Extract, &[Text, Interval], Numeric),
    ];
    const DATE_PART: &[Signature] = &[
        sig(F::DatePart, &[Text, Time], Float8),
        sig(F::DatePart, &[Text, Timestamp], Float8),
        sig(F::DatePart, &[Text, TimestampTz], Float8),
        sig(F::DatePart, &[Text, Interval], Float8),
    ];
    const DATE_TRUNC: &[Signature] = &[
        sig(F::DateTrunc, &[Text, Timestamp], Timestamp),
        sig(F::DateTrunc, &[Text, TimestampTz], TimestampTz),
        sig(F::DateTrunc, &[Text, TimestampTz, Text], TimestampTz),
        sig(F::DateTrunc, &[Text, Interval], Interval),
    ];
    const AGE: &[Signature] = &[
        sig(F::Age, &[Timestamp, Timestamp], Interval),
        sig(F::Age, &[TimestampTz, TimestampTz], Interval),
        sig(F::Age, &[Timestamp], Interval),
        sig(F::Age, &[TimestampTz], Interval),
    ];
    const MAKE_DATE: &[Signature] = &[sig(F::MakeDate, &[Int4, Int4, Int4], Date)];
    const MAKE_TIMESTAMP: &[Signature] = &[sig(F::MakeTimestamp, &[Int4, Int4, Int4, Int4, Int4, Float8], Timestamp)];
    const IS_FINITE: &[Signature] = &[
        sig(F::IsFinite, &[Date], Bool),
        sig(F::IsFinite, &[Timestamp], Bool),
        sig(F::IsFinite, &[TimestampTz], Bool),
        sig(F::IsFinite, &[Interval], Bool),
    ];
    const TO_CHAR: &[Signature] = &[
        sig(F::ToChar, &[Timestamp, Text], Text),
        sig(F::ToChar, &[TimestampTz, Text], Text),
        sig(F::ToChar, &[Interval, Text], Text),
        sig(F::ToChar, &[Int4, Text], Text),
        sig(F::ToChar, &[Int8, Text], Text),
        sig(F::ToChar, &[Numeric, Text], Text),
        sig(F::ToChar, &[Float8, Text], Text),
    ];
    const LOCALTIME: &[Signature] = &[sig(F::LocalTime, &[], Time)];
    const JUSTIFY_HOURS: &[Signature] = &[sig(F::JustifyHours, &[Interval], Interval)];
    const JUSTIFY_DAYS: &[Signature] = &[sig(F::JustifyDays, &[Interval], Interval)];
    const JUSTIFY_INTERVAL: &[Signature] = &[sig(F::JustifyInterval, &[Interval], Interval)];
    // Every argument has a default (0): the shorter forms are PostgreSQL's defaults.
    const MAKE_INTERVAL: &[Signature] = &[
        sig(F::MakeInterval, &[], Interval),
        sig(F::MakeInterval, &[Int4], Interval),
        sig(F::MakeInterval, &[Int4, Int4], Interval),
        sig(F::MakeInterval, &[Int4, Int4, Int4], Interval),
        sig(F::MakeInterval, &[Int4, Int4, Int4, Int4], Interval),
        sig(F::MakeInterval, &[Int4, Int4, Int4, Int4, Int4], Interval),
        sig(F::MakeInterval, &[Int4, Int4, Int4, Int4, Int4, Int4], Interval),
        sig(F::MakeInterval, &[Int4, Int4, Int4, Int4, Int4, Int4, Float8], Interval),
    ];
    const DATE_BIN: &[Signature] =
        &[sig(F::DateBin, &[Interval, Timestamp, Timestamp], Timestamp), sig(F::DateBin, &[Interval, TimestampTz, TimestampTz], TimestampTz)];
    const TO_TIMESTAMP: &[Signature] = &[sig(F::ToTimestamp, &[Float8], TimestampTz), sig(F::ToTimestamp, &[Text, Text], TimestampTz)];
    const TO_DATE: &[Signature] = &[sig(F::ToDate, &[Text, Text], Date)];
    // The timestamptz forms first: a date argument resolves to them, as in PostgreSQL.
    const TIMEZONE: &[Signature] = &[
        sig(F::TimeZone, &[Text, TimestampTz], Timestamp),
        sig(F::TimeZone, &[Text, Timestamp], TimestampTz),
        sig(F::TimeZone, &[Interval, TimestampTz], Timestamp),
        sig(F::TimeZone, &[Interval, Timestamp], TimestampTz),
    ];
    match name {
        "localtime" => LOCALTIME,
        "justify_hours" => JUSTIFY_HOURS,
        "justify_days" => JUSTIFY_DAYS,
        "justify_interval" => JUSTIFY_INTERVAL,
        "make_interval" => MAKE_INTERVAL,
        "date_bin" => DATE_BIN,
        "to_timestamp" => TO_TIMESTAMP,
        "to_date" => TO_DATE,
        "timezone" => TIMEZONE,
        "now" | "current_timestamp" | "transaction_timestamp" | "statement_timestamp" => NOW,
        "clock_timestamp" => CLOCK,
        "current_date" => CURRENT_DATE,
        "localtimestamp" => LOCALTIMESTAMP,
        "extract" => EXTRACT,
        "date_part" => DATE_PART,
        "date_trunc" => DATE_TRUNC,
        "age" => AGE,
        "make_date" => MAKE_DATE,
        "make_timestamp" => MAKE_TIMESTAMP,
        "isfinite" => IS_FINITE,
        "to_char" => TO_CHAR,
        _ => &[],
    }
}

/// The instant `now()` returns: read from the clock at its first use in a statement and
/// kept until the session starts the next one ([`reset`](Self::reset)), so every call
/// of one statement — in any participant — sees the same value, as PostgreSQL's
/// statement and transaction timestamps do. Shared by clones of one `EvalContext`.
#[derive(Clone, Debug, Default)]
pub struct StatementClock(std::sync::Arc<std::sync::atomic::AtomicI64>);

impl StatementClock {
    const UNSET: i64 = i64::MIN;

    pub fn reset(&self) {
        self.0.store(Self::UNSET, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn now(&self) -> i64 {
        use std::sync::atomic::Ordering;
        let current = self.0.load(Ordering::Relaxed);
        // A fresh clock holds 0 (Default); both it and UNSET mean "not read yet".
        if current != Self::UNSET && current != 0 {
            return current;
        }
        let now = dt::now_timestamp();
        match self.0.compare_exchange(current, now, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => now,
            Err(other) => other,
        }
    }
}

/// Calls a date/time function on non-null arguments of its signature's types.
pub fn call(func: DateTimeFunction, args: &[Datum], clock: &StatementClock) -> Result<Datum> {
    use DateTimeFunction as F;
    match (func, args) {
        (F::Now, []) => Ok(Datum::TimestampTz(clock.now())),
        (F::ClockTimestamp, []) => Ok(Datum::TimestampTz(dt::now_timestamp())),
        (F::CurrentDate, []) => Ok(Datum::Date(tz_to_local(clock.now())?.div_euclid(USECS_PER_DAY) as i32)),
        (F::LocalTimestamp, []) => Ok(Datum::Timestamp(tz_to_local(clock.now())?)),
        (F::Extract, [Datum::Text(field), value]) => match part(field, value)? {
            None => Ok(Datum::Null),
            Some(p) => p.numeric().map(Datum::Numeric),
        },
        (F::DatePart, [Datum::Text(field), value]) => Ok(match part(field, value)? {
            None => Datum::Null,
            Some(p) => Datum::Float8(p.float()),
        }),
        (F::DateTrunc, [Datum::Text(unit), value]) => date_trunc(unit, value, None),
        (F::DateTrunc, [Datum::Text(unit), value, Datum::Text(zone)]) => date_trunc(unit, value, Some(&fns::zone_named(zone)?)),
        (F::Age, [a, b]) => age(local_of(a)?, local_of(b)?),
        (F::Age, [a]) => {
            // age(x) is measured from midnight today (local, for a timestamptz).
            let today = tz_to_local(clock.now())?.div_euclid(USECS_PER_DAY) * USECS_PER_DAY;
            age(today, local_of(a)?)
        }
        (F::MakeDate, [Datum::Int4(y), Datum::Int4(m), Datum::Int4(d)]) => make_date(*y, *m, *d).map(Datum::Date),
        (F::MakeTimestamp, [Datum::Int4(y), Datum::Int4(mo), Datum::Int4(d), Datum::Int4(h), Datum::Int4(mi), Datum::Float8(s)]) => {
            make_timestamp(*y, *mo, *d, *h, *mi, *s).map(Datum::Timestamp)
        }
        (F::IsFinite, [v]) => Ok(Datum::Bool(match v {
            Datum::Date(d) => dt::date_is_finite(*d),
            Datum::Timestamp(t) | Datum::TimestampTz(t) => dt::timestamp_is_finite(*t),
            _ => true,
        })),
        (F::ToChar, [value @ (Datum::Int4(_) | Datum::Int8(_) | Datum::Numeric(_) | Datum::Float8(_)), Datum::Text(format)]) => {
            super::to_char_number::to_char_number(value, format)
        }
        (F::ToChar, [value, Datum::Text(format)]) => to_char(value, format),
        (F::LocalTime, []) => Ok(Datum::Time(tz_to_local(clock.now())?.rem_euclid(USECS_PER_DAY))),
        (F::JustifyHours, [Datum::Interval(iv)]) => fns::justify_hours(iv).map(Datum::Interval),
        (F::JustifyDays, [Datum::Interval(iv)]) => fns::justify_days(iv).map(Datum::Interval),
        (F::JustifyInterval, [Datum::Interval(iv)]) => fns::justify_interval(iv).map(Datum::Interval),
        (F::MakeInterval, parts) => {
            let mut fields = [0i32; 6];
            for (field, part) in fields.iter_mut().zip(parts) {
                if let Datum::Int4(v) = part {
                    *field = *v;
                }
            }
            let seconds = match parts.get(6) {
                Some(Datum::Float8(s)) => *s,
                _ => 0.0,
            };
            fns::make_interval(fields, seconds).map(Datum::Interval)
        }
        (F::DateBin, [Datum::Interval(stride), Datum::Timestamp(source), Datum::Timestamp(origin)]) => {
            fns::date_bin(stride, *source, *origin).map(Datum::Timestamp)
        }
        (F::DateBin, [Datum::Interval(stride), Datum::TimestampTz(source), Datum::TimestampTz(origin)]) => {
            fns::date_bin(stride, *source, *origin).map(Datum::TimestampTz)
        }
        (F::ToTimestamp, [Datum::Float8(seconds)]) => fns::to_timestamp_from_epoch(*seconds).map(Datum::TimestampTz),
        (F::ToTimestamp, [Datum::Text(input), Datum::Text(format)]) => {
            // The fields are local time of the session's zone.
            fns::to_timestamp_formatted(input, format, true).and_then(local_to_tz).map(Datum::TimestampTz)
        }
        (F::ToDate, [Datum::Text(input), Datum::Text(format)]) => {
            fns::to_timestamp_formatted(input, format, false).map(|d| Datum::Date(d as i32))
        }
        (F::TimeZone, [zone, value]) => fns::timezone(zone, value),
        _ => Err(Error::internal(format!("{}() called with unresolved arguments {args:?}", func.name()))),
    }
}

/// A timestamp, or a timestamptz as local time of the session's zone (`timestamptz_age`).
fn local_of(d: &Datum) -> Result<i64> {
    match d {
        Datum::TimestampTz(t) => tz_to_local(*t),
        other => Ok(timestamp_of(other)),
    }
}

fn timestamp_of(d: &Datum) -> i64 {
    match d {
        Datum::Timestamp(t) | Datum::TimestampTz(t) => *t,
        _ => 0,
    }
}

/// The fields `extract`, `date_part` and `date_trunc` name (PostgreSQL's `DecodeUnits` /
/// `DecodeSpecial` words, plurals and abbreviations included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    Dow,
    IsoDow,
    Doy,
    Epoch,
    IsoYear,
    Julian,
    Timezone,
    TimezoneHour,
    TimezoneMinute,
}

fn field_by_name(word: &str) -> Option<Field> {
    use Field::*;
    if let Some(unit) = dt::IntervalUnit::from_word(word) {
        return Some(match unit {
            dt::IntervalUnit::Microsecond => Microseconds,
            dt::IntervalUnit::Millisecond => Milliseconds,
            dt::IntervalUnit::Second => Second,
            dt::IntervalUnit::Minute => Minute,
            dt::IntervalUnit::Hour => Hour,
            dt::IntervalUnit::Day => Day,
            dt::IntervalUnit::Week => Week,
            dt::IntervalUnit::Month => Month,
            dt::IntervalUnit::Year => Year,
            dt::IntervalUnit::Decade => Decade,
            dt::IntervalUnit::Century => Century,
            dt::IntervalUnit::Millennium => Millennium,
        });
    }
    Some(match word {
        "quarter" | "qtr" => Quarter,
        "dow" => Dow,
        "isodow" => IsoDow,
        "doy" => Doy,
        "epoch" => Epoch,
        "isoyear" => IsoYear,
        "julian" | "j" | "jd" => Julian,
        "timezone" => Timezone,
        "timezone_h" | "timezone_hour" => TimezoneHour,
        "timezone_m" | "timezone_minute" => TimezoneMinute,
        _ => return None,
    })
}

/// A field's value: an integer, or a fixed-point number with the float8 PostgreSQL's
/// `date_part` computes for it (by its own formula, so the last bit agrees).
enum Part {
    Int(i64),
    Fixed { value: i128, scale: u16, float: f64 },
    /// ±Infinity: monotonic fields of an infinite timestamp.
    Infinite(bool),
}

impl Part {
    fn numeric(&self) -> Result<Numeric> {
        match self {
            Part::Int(v) => Ok(Numeric::from_i64(*v)),
            Part::Fixed { value, scale, .. } => Ok(Numeric { mantissa: *value, scale: *scale }),
            Part::Infinite(positive) => Ok(if *positive { Numeric::INFINITY } else { Numeric::NEG_INFINITY }),
        }
    }

    fn float(&self) -> f64 {
        match self {
            Part::Int(v) => *v as f64,
            Part::Fixed { float, .. } => *float,
            Part::Infinite(positive) => if *positive { f64::INFINITY } else { f64::NEG_INFINITY },
        }
    }
}

fn type_name_of(value: &Datum) -> &'static str {
    value.data_type().map(DataType::name).unwrap_or("unknown")
}

fn unit_not_supported(unit: &str, value: &Datum) -> Error {
    Error::new(SqlState::FEATURE_NOT_SUPPORTED, format!("unit \"{unit}\" not supported for type {}", type_name_of(value)))
}

fn unit_not_recognized(unit: &str, value: &Datum) -> Error {
    Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("unit \"{unit}\" not recognized for type {}", type_name_of(value)))
}

/// ISO 8601 day of week, Monday 1 .. Sunday 7, of a day count (2000-01-01 was a Saturday).
fn iso_dow(date: i64) -> i64 {
    (date + 5).rem_euclid(7) + 1
}

/// `(ISO year, ISO week)` of a day count: the week's Thursday decides the year.
fn iso_week(date: i64) -> (i64, i64) {
    let thursday = date - (iso_dow(date) - 1) + 3;
    let (year, _, _) = dt::ymd_from_date(thursday);
    let first = dt::date_from_ymd(year, 1, 1);
    (year, (thursday - first) / 7 + 1)
}

/// The calendar fields every type with a date shares.
fn date_field(field: Field, date: i64) -> Option<i64> {
    let (year, month, day) = dt::ymd_from_date(date);
    Some(match field {
        Field::Day => day as i64,
        Field::Month => month as i64,
        Field::Quarter => (month as i64 - 1) / 3 + 1,
        Field::Week => iso_week(date).1,
        // Displayed years: 1 BC is -1.
        Field::Year => if year > 0 { year } else { year - 1 },
        Field::Decade => if year >= 0 { year / 10 } else { -((8 - (year - 1)) / 10) },
        Field::Century => if year > 0 { (year + 99) / 100 } else { -((99 - (year - 1)) / 100) },
        Field::Millennium => if year > 0 { (year + 999) / 1000 } else { -((999 - (year - 1)) / 1000) },
        Field::Dow => iso_dow(date) % 7,
        Field::IsoDow => iso_dow(date),
        Field::Doy => date - dt::date_from_ymd(year, 1, 1) + 1,
        Field::IsoYear => {
            let y = iso_week(date).0;
            if y > 0 { y } else { y - 1 }
        }
        Field::Julian => date + 2_451_545,
        _ => return None,
    })
}

fn is_monotonic(field: Field) -> bool {
    matches!(field, Field::Year | Field::Decade | Field::Century | Field::Millennium | Field::Julian | Field::IsoYear | Field::Epoch)
}

/// Seconds with their fraction: numeric scale 6, float `sec + fsec / 1e6`.
/// A time of day's or an interval's time part as (hours, minutes, seconds, microseconds).
fn clock_fields(micros: i64) -> (i64, i64, i64, i64) {
    (micros / USECS_PER_HOUR, micros / USECS_PER_MINUTE % 60, micros / USECS_PER_SEC % 60, micros % USECS_PER_SEC)
}

fn seconds_part(second: i64, micros: i64) -> Part {
    Part::Fixed { value: (second * USECS_PER_SEC + micros) as i128, scale: 6, float: second as f64 + micros as f64 / 1_000_000.0 }
}

fn millis_part(second: i64, micros: i64) -> Part {
    Part::Fixed {
        value: ((second * USECS_PER_SEC + micros) / 1) as i128,
        scale: 3,
        float: (second * 1000) as f64 + micros as f64 / 1000.0,
    }
}

/// `extract` / `date_part` of `value`; `None` is NULL.
fn part(unit_text: &str, value: &Datum) -> Result<Option<Part>> {
    let unit = unit_text.to_ascii_lowercase();
    let field = field_by_name(&unit).ok_or_else(|| unit_not_recognized(&unit, value))?;
    match value {
        Datum::Date(d) => {
            if !dt::date_is_finite(*d) {
                return Ok(if is_monotonic(field) { Some(Part::Infinite(*d == DATE_POS_INFINITY)) } else { None });
            }
            if field == Field::Epoch {
                return Ok(Some(Part::Int((*d as i64 + dt::UNIX_EPOCH_DAYS) * 86_400)));
            }
            date_field(field, *d as i64).map(|v| Some(Part::Int(v))).ok_or_else(|| unit_not_supported(&unit, value))
        }
        Datum::Timestamp(t) | Datum::TimestampTz(t) => {
            let with_zone = matches!(value, Datum::TimestampTz(_));
            if matches!(field, Field::Timezone | Field::TimezoneHour | Field::TimezoneMinute) {
                if !with_zone {
                    return Err(unit_not_supported(&unit, value));
                }
                if !dt::timestamp_is_finite(*t) {
                    return Ok(None);
                }
                // Seconds east; hour and minute keep its sign (truncating division).
                let offset = tz::with_current(|zone| zone.offset_at(*t)) as i64;
                return Ok(Some(Part::Int(match field {
                    Field::Timezone => offset,
                    Field::TimezoneHour => offset / 3600,
                    _ => offset / 60 % 60,
                })));
            }
            if !dt::timestamp_is_finite(*t) {
                return Ok(if is_monotonic(field) { Some(Part::Infinite(*t == TS_POS_INFINITY)) } else { None });
            }
            let utc = *t;
            // The fields of a timestamptz are those of its local time; its epoch is not.
            let t = &if with_zone { tz_to_local(*t)? } else { *t };
            let f = dt::timestamp_fields(*t);
            let date = t.div_euclid(USECS_PER_DAY);
            Ok(Some(match field {
                Field::Microseconds => Part::Int(f.second * USECS_PER_SEC + f.micros),
                Field::Milliseconds => millis_part(f.second, f.micros),
                Field::Second => seconds_part(f.second, f.micros),
                Field::Minute => Part::Int(f.minute),
                Field::Hour => Part::Int(f.hour),
                Field::Epoch => {
                    let since = utc as i128 + dt::UNIX_EPOCH_DAYS as i128 * USECS_PER_DAY as i128;
                    Part::Fixed { value: since, scale: 6, float: since as f64 / 1_000_000.0 }
                }
                Field::Julian => {
                    let time = t.rem_euclid(USECS_PER_DAY);
                    let jd = date + 2_451_545;
                    // numeric: julian day plus the fraction of the day.
                    Part::Fixed {
                        value: jd as i128 * 1_000_000_000_000 + (time as i128 * 1_000_000_000_000) / USECS_PER_DAY as i128,
                        scale: 12,
                        float: jd as f64 + time as f64 / USECS_PER_DAY as f64,
                    }
                }
                other => match date_field(other, date) {
                    Some(v) => Part::Int(v),
                    None => return Err(unit_not_supported(&unit, value)),
                },
            }))
        }
        Datum::Time(t) => {
            let (hour, minute, second, micros) = clock_fields(*t);
            Ok(Some(match field {
                Field::Microseconds => Part::Int(second * USECS_PER_SEC + micros),
                Field::Milliseconds => millis_part(second, micros),
                Field::Second => seconds_part(second, micros),
                Field::Minute => Part::Int(minute),
                Field::Hour => Part::Int(hour),
                Field::Epoch => Part::Fixed { value: *t as i128, scale: 6, float: *t as f64 / 1_000_000.0 },
                _ => return Err(unit_not_supported(&unit, value)),
            }))
        }
        Datum::Interval(iv) => {
            let years = iv.months as i64 / 12;
            let months = iv.months as i64 % 12;
            let time = iv.micros;
            let (hour, minute, second, micros) = clock_fields(time);
            Ok(Some(match field {
                Field::Microseconds => Part::Int(second * USECS_PER_SEC + micros),
                Field::Milliseconds => millis_part(second, micros),
                Field::Second => seconds_part(second, micros),
                Field::Minute => Part::Int(minute),
                Field::Hour => Part::Int(hour),
                Field::Day => Part::Int(iv.days as i64),
                Field::Month => Part::Int(months),
                Field::Quarter => Part::Int(months / 3 + 1),
                Field::Year => Part::Int(years),
                Field::Decade => Part::Int(years / 10),
                Field::Century => Part::Int(years / 100),
                Field::Millennium => Part::Int(years / 1000),
                Field::Epoch => {
                    // 365.25 days a year, 30 a month, as PostgreSQL.
                    let secs4 = (1461 * years + 120 * months + 4 * iv.days as i64) as i128 * (86_400 / 4);
                    let value = time as i128 + secs4 * USECS_PER_SEC as i128;
                    let float = time as f64 / 1_000_000.0
                        + (365.25 * 86_400.0) * years as f64
                        + (30.0 * 86_400.0) * months as f64
                        + 86_400.0 * iv.days as f64;
                    Part::Fixed { value, scale: 6, float }
                }
                _ => return Err(unit_not_supported(&unit, value)),
            }))
        }
        other => Err(Error::internal(format!("extract from {other:?}"))),
    }
}

/// `date_trunc(unit, x [, zone])`: a timestamptz is truncated in its local time of `zone`
/// (the session's by default).
fn date_trunc(unit_text: &str, value: &Datum, zone: Option<&tz::TimeZone>) -> Result<Datum> {
    let unit = unit_text.to_ascii_lowercase();
    let field = field_by_name(&unit).ok_or_else(|| unit_not_recognized(&unit, value))?;
    match value {
        Datum::Timestamp(t) | Datum::TimestampTz(t) => {
            let wrap = |v: i64| if matches!(value, Datum::Timestamp(_)) { Datum::Timestamp(v) } else { Datum::TimestampTz(v) };
            if !dt::timestamp_is_finite(*t) {
                return Ok(wrap(*t));
            }
            let zone = match value {
                Datum::TimestampTz(_) => Some(zone.cloned().unwrap_or_else(tz::current)),
                _ => None,
            };
            let offset = zone.as_ref().map_or(0, |z| z.offset_at(*t)) as i64 * USECS_PER_SEC;
            let t = &t.checked_add(offset).ok_or_else(dt::timestamp_out_of_range)?;
            let f = dt::timestamp_fields(*t);
            let date = t.div_euclid(USECS_PER_DAY);
            let time = t.rem_euclid(USECS_PER_DAY);
            let at = |y: i64, m: u32, d: u32| dt::date_from_ymd(y, m, d) * USECS_PER_DAY;
            let y = f.year;
            let result = match field {
                Field::Millennium => at(if y > 0 { (y + 999) / 1000 * 1000 - 999 } else { -((999 - (y - 1)) / 1000) * 1000 + 1 }, 1, 1),
                Field::Century => at(if y > 0 { (y + 99) / 100 * 100 - 99 } else { -((99 - (y - 1)) / 100) * 100 + 1 }, 1, 1),
                Field::Decade => at(if y > 0 { y / 10 * 10 } else { -((8 - (y - 1)) / 10) * 10 }, 1, 1),
                Field::Year => at(y, 1, 1),
                Field::Quarter => at(y, (f.month - 1) / 3 * 3 + 1, 1),
                Field::Month => at(y, f.month, 1),
                Field::Week => (date - (iso_dow(date) - 1)) * USECS_PER_DAY,
                Field::Day => date * USECS_PER_DAY,
                Field::Hour => date * USECS_PER_DAY + time / USECS_PER_HOUR * USECS_PER_HOUR,
                Field::Minute => date * USECS_PER_DAY + time / USECS_PER_MINUTE * USECS_PER_MINUTE,
                Field::Second => date * USECS_PER_DAY + time / USECS_PER_SEC * USECS_PER_SEC,
                Field::Milliseconds => date * USECS_PER_DAY + time / 1000 * 1000,
                Field::Microseconds => *t,
                _ => return Err(unit_not_supported(&unit, value)),
            };
            // Back to an instant: a day or longer starts at that local time's own offset,
            // a shorter unit keeps the instant's (PostgreSQL's `timestamptz_trunc`).
            let result = match &zone {
                None => result,
                Some(z) if matches!(field, Field::Hour | Field::Minute | Field::Second | Field::Milliseconds | Field::Microseconds) => {
                    result - offset
                }
                Some(z) => z.from_local(result).ok_or_else(dt::timestamp_out_of_range)?,
            };
            if !dt::timestamp_in_range(result) {
                return Err(dt::timestamp_out_of_range());
            }
            Ok(wrap(result))
        }
        Datum::Interval(iv) => {
            let mut years = iv.months / 12;
            let mut months = iv.months % 12;
            let mut days = iv.days;
            let mut time = iv.micros;
            let keep = |unit: i64, time: i64| time / unit * unit;
            match field {
                Field::Millennium | Field::Century | Field::Decade | Field::Year => {
                    let per = match field {
                        Field::Millennium => 1000,
                        Field::Century => 100,
                        Field::Decade => 10,
                        _ => 1,
                    };
                    years = years / per * per;
                    months = 0;
                    days = 0;
                    time = 0;
                }
                Field::Quarter => {
                    months = months / 3 * 3;
                    days = 0;
                    time = 0;
                }
                Field::Month => {
                    days = 0;
                    time = 0;
                }
                Field::Day => time = 0,
                Field::Hour => time = keep(USECS_PER_HOUR, time),
                Field::Minute => time = keep(USECS_PER_MINUTE, time),
                Field::Second => time = keep(USECS_PER_SEC, time),
                Field::Milliseconds => time = keep(1000, time),
                Field::Microseconds => {}
                Field::Week => {
                    return Err(Error::new(
                        SqlState::FEATURE_NOT_SUPPORTED,
                        format!("interval units \"{unit}\" not supported because months usually have fractional weeks"),
                    ))
                }
                _ => {
                    return Err(Error::new(SqlState::FEATURE_NOT_SUPPORTED, format!("interval units \"{unit}\" not supported")))
                }
            }
            Ok(Datum::Interval(Interval::new(years * 12 + months, days, time)))
        }
        other => Err(Error::internal(format!("date_trunc of {other:?}"))),
    }
}

/// `age(a, b)`: `a - b` in years, months and days, borrowing from the larger fields as
/// PostgreSQL's `timestamp_age` does.
fn age(a: i64, b: i64) -> Result<Datum> {
    if !dt::timestamp_is_finite(a) || !dt::timestamp_is_finite(b) {
        return Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "cannot subtract infinite timestamps"));
    }
    let (f1, f2) = (dt::timestamp_fields(a), dt::timestamp_fields(b));
    let mut micros = f1.micros - f2.micros;
    let mut sec = f1.second - f2.second;
    let mut min = f1.minute - f2.minute;
    let mut hour = f1.hour - f2.hour;
    let mut mday = f1.day as i64 - f2.day as i64;
    let mut mon = f1.month as i64 - f2.month as i64;
    let mut year = f1.year - f2.year;
    // Work on a non-negative difference; flip back at the end.
    let flip = a < b;
    if flip {
        micros = -micros;
        sec = -sec;
        min = -min;
        hour = -hour;
        mday = -mday;
        mon = -mon;
        year = -year;
    }
    while micros < 0 {
        micros += USECS_PER_SEC;
        sec -= 1;
    }
    while sec < 0 {
        sec += 60;
        min -= 1;
    }
    while min < 0 {
        min += 60;
        hour -= 1;
    }
    while hour < 0 {
        hour += 24;
        mday -= 1;
    }
    while mday < 0 {
        let (y, m) = if flip { (f1.year, f1.month) } else { (f2.year, f2.month) };
        mday += dt::days_in_month(y, m) as i64;
        mon -= 1;
    }
    while mon < 0 {
        mon += 12;
        year -= 1;
    }
    let sign = if flip { -1 } else { 1 };
    let months = i32::try_from(sign * (year * 12 + mon)).map_err(|_| dt::interval_out_of_range())?;
    let days = (sign * mday) as i32;
    let time = sign * (hour * USECS_PER_HOUR + min * USECS_PER_MINUTE + sec * USECS_PER_SEC + micros);
    Ok(Datum::Interval(Interval::new(months, days, time)))
}

fn make_date(year: i32, month: i32, day: i32) -> Result<i32> {
    let field_overflow = || {
        Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("date field value out of range: {year}-{month:02}-{day:02}"))
    };
    if year == 0 {
        return Err(field_overflow());
    }
    // Negative years are BC.
    let y = if year < 0 { year as i64 + 1 } else { year as i64 };
    if !(1..=12).contains(&month) || day < 1 || day as u32 > dt::days_in_month(y, month as u32) {
        return Err(field_overflow());
    }
    let d = dt::date_from_ymd(y, month as u32, day as u32);
    if !(dt::MIN_DATE..dt::END_DATE).contains(&d) {
        return Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("date out of range: {year}-{month:02}-{day:02}")));
    }
    Ok(d as i32)
}

fn make_timestamp(year: i32, month: i32, day: i32, hour: i32, minute: i32, second: f64) -> Result<i64> {
    let date = make_date(year, month, day).map_err(|_| {
        Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("date field value out of range: {year}-{month:02}-{day:02}"))
    })?;
    if !(0..=24).contains(&hour) || !(0..=59).contains(&minute) || !(0.0..=60.0).contains(&second) || second.is_nan() {
        return Err(Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            format!("time field value out of range: {hour}:{minute:02}:{:02}", second),
        ));
    }
    let micros = (second * 1e6).round_ties_even() as i64;
    let t = date as i64 * USECS_PER_DAY + hour as i64 * USECS_PER_HOUR + minute as i64 * USECS_PER_MINUTE + micros;
    if !dt::timestamp_in_range(t) {
        return Err(dt::timestamp_out_of_range());
    }
    Ok(t)
}

/// `to_char(timestamp | interval, format)` with the common template patterns: `YYYY`,
/// `YY`, `MM`, `DD`, `DDD`, `D`, `ID`, `HH24`, `HH12`, `HH`, `MI`, `SS`, `MS`, `US`, `AM`/`PM`,
/// `Mon`/`MON`/`mon`, `Month`, `Dy`, `Day`, `Q`, `WW`, `IW`, `TZ`, double-quoted text, and
/// the `FM` prefix. Other characters are copied.
fn to_char(value: &Datum, format: &str) -> Result<Datum> {
    const MONTHS: [&str; 12] =
        ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
    const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
    let (t, interval) = match value {
        Datum::Timestamp(t) | Datum::TimestampTz(t) => {
            if !dt::timestamp_is_finite(*t) {
                return Ok(Datum::Null);
            }
            (*t, None)
        }
        Datum::Interval(iv) => (0, Some(*iv)),
        other => return Err(Error::internal(format!("to_char of {other:?}"))),
    };
    // A timestamptz prints its local time, its zone's abbreviation and offset.
    let (t, zone_abbrev, zone_offset) = match value {
        Datum::TimestampTz(utc) => {
            let (abbrev, offset) = tz::with_current(|zone| (zone.abbrev_at(*utc), zone.offset_at(*utc)));
            (tz_to_local(t)?, Some(abbrev), Some(offset))
        }
        _ => (t, None, None),
    };
    let f = dt::timestamp_fields(t);
    let date = t.div_euclid(USECS_PER_DAY);
    // An interval's fields: years, months, days and the time as they are stored.
    let (year, month, day, hour, minute, second, micros) = match interval {
        Some(iv) => {
            let time = iv.micros;
            (
                iv.months as i64 / 12,
                iv.months as i64 % 12,
                iv.days as i64,
                time / USECS_PER_HOUR,
                time / USECS_PER_MINUTE % 60,
                time / USECS_PER_SEC % 60,
                time % USECS_PER_SEC,
            )
        }
        None => (if f.year > 0 { f.year } else { 1 - f.year }, f.month as i64, f.day as i64, f.hour, f.minute, f.second, f.micros),
    };
    let mut out = String::new();
    let chars: Vec<char> = format.chars().collect();
    let mut i = 0;
    let starts = |i: usize, pat: &str| -> bool {
        let p: Vec<char> = pat.chars().collect();
        chars.len() >= i + p.len() && chars[i..i + p.len()].iter().zip(&p).all(|(a, b)| a == b)
    };
    let starts_ci = |i: usize, pat: &str| -> bool {
        let p: Vec<char> = pat.chars().collect();
        chars.len() >= i + p.len() && chars[i..i + p.len()].iter().zip(&p).all(|(a, b)| a.eq_ignore_ascii_case(b))
    };
    let case_word = |word: &str, pattern_first: char, pattern_second: char| -> String {
        if pattern_first.is_ascii_lowercase() {
            word.to_ascii_lowercase()
        } else if pattern_second.is_ascii_uppercase() {
            word.to_ascii_uppercase()
        } else {
            word.to_string()
        }
    };
    while i < chars.len() {
        let mut fill_mode = false;
        if starts_ci(i, "FM") {
            fill_mode = true;
            i += 2;
        }
        let num = |v: i64, width: usize| if fill_mode { v.to_string() } else { format!("{v:0width$}") };
        let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
        if i >= chars.len() {
            break;
        }
        if chars[i] == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    i += 1;
                }
                out.push(chars[i]);
                i += 1;
            }
            i += 1;
        } else if starts_ci(i, "YYYY") {
            out.push_str(&num(year, 4));
            i += 4;
        } else if starts_ci(i, "YYY") {
            out.push_str(&num(year % 1000, 3));
            i += 3;
        } else if starts_ci(i, "YY") {
            out.push_str(&num(year % 100, 2));
            i += 2;
        } else if starts_ci(i, "HH24") {
            out.push_str(&num(hour, 2));
            i += 4;
        } else if starts_ci(i, "HH12") {
            out.push_str(&num(hour12, 2));
            i += 4;
        } else if starts_ci(i, "HH") {
            out.push_str(&num(hour12, 2));
            i += 2;
        } else if starts_ci(i, "MI") {
            out.push_str(&num(minute, 2));
            i += 2;
        } else if starts_ci(i, "MS") {
            out.push_str(&num(micros / 1000, 3));
            i += 2;
        } else if starts_ci(i, "US") {
            out.push_str(&num(micros, 6));
            i += 2;
        } else if starts_ci(i, "SS") {
            out.push_str(&num(second, 2));
            i += 2;
        } else if starts_ci(i, "AM") || starts_ci(i, "PM") {
            let word = if hour >= 12 { "PM" } else { "AM" };
            out.push_str(&case_word(word, chars[i], chars[i + 1]));
            i += 2;
        } else if starts_ci(i, "A.M.") || starts_ci(i, "P.M.") {
            let word = if hour >= 12 { "P.M." } else { "A.M." };
            out.push_str(&if chars[i].is_ascii_lowercase() { word.to_ascii_lowercase() } else { word.to_string() });
            i += 4;
        } else if starts_ci(i, "MONTH") {
            let name = MONTHS[(month.max(1) - 1) as usize];
            let word = case_word(name, chars[i], chars[i + 1]);
            out.push_str(&if fill_mode { word } else { format!("{word:<9}") });
            i += 5;
        } else if starts_ci(i, "MON") {
            let name = &MONTHS[(month.max(1) - 1) as usize][..3];
            out.push_str(&case_word(name, chars[i], chars[i + 1]));
            i += 3;
        } else if starts_ci(i, "MM") {
            out.push_str(&num(month, 2));
            i += 2;
        } else if starts_ci(i, "DAY") {
            let name = DAYS[(iso_dow(date) % 7) as usize];
            let word = case_word(name, chars[i], chars[i + 1]);
            out.push_str(&if fill_mode { word } else { format!("{word:<9}") });
            i += 3;
        } else if starts_ci(i, "DY") {
            let name = &DAYS[(iso_dow(date) % 7) as usize][..3];
            out.push_str(&case_word(name, chars[i], chars[i + 1]));
            i += 2;
        } else if starts_ci(i, "DDD") {
            out.push_str(&num(date_field(Field::Doy, date).unwrap_or(0), 3));
            i += 3;
        } else if starts_ci(i, "DD") {
            out.push_str(&num(day, 2));
            i += 2;
        } else if starts_ci(i, "ID") {
            out.push_str(&iso_dow(date).to_string());
            i += 2;
        } else if starts_ci(i, "IW") {
            out.push_str(&num(iso_week(date).1, 2));
            i += 2;
        } else if starts_ci(i, "WW") {
            out.push_str(&num((date_field(Field::Doy, date).unwrap_or(1) - 1) / 7 + 1, 2));
            i += 2;
        } else if starts_ci(i, "D") {
            out.push_str(&(iso_dow(date) % 7 + 1).to_string());
            i += 1;
        } else if starts_ci(i, "Q") {
            out.push_str(&((month - 1) / 3 + 1).to_string());
            i += 1;
        } else if starts(i, "TZH") || starts(i, "tzh") {
            let east = zone_offset.unwrap_or(0);
            out.push_str(&format!("{}{:02}", if east < 0 { '-' } else { '+' }, east.abs() / 3600));
            i += 3;
        } else if starts(i, "TZM") || starts(i, "tzm") {
            out.push_str(&format!("{:02}", zone_offset.unwrap_or(0).abs() / 60 % 60));
            i += 3;
        } else if starts(i, "TZ") || starts(i, "tz") {
            if let Some(abbrev) = &zone_abbrev {
                out.push_str(&if chars[i] == 'T' { abbrev.to_ascii_uppercase() } else { abbrev.to_ascii_lowercase() });
            }
            i += 2;
        } else if starts(i, "OF") || starts(i, "of") {
            let east = zone_offset.unwrap_or(0);
            out.push_str(&format!("{}{:02}", if east < 0 { '-' } else { '+' }, east.abs() / 3600));
            if east.abs() / 60 % 60 != 0 {
                out.push_str(&format!(":{:02}", east.abs() / 60 % 60));
            }
            i += 2;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    Ok(Datum::Text(out))
}

/// The bound of an index scan or a cast constant in a date/time type, for callers that
/// hold a datum of another date/time type (`date` vs `timestamp` comparisons).
pub fn infinity_for(t: DataType, positive: bool) -> Option<Datum> {
    Some(match t {
        DataType::Date => Datum::Date(if positive { DATE_POS_INFINITY } else { DATE_NEG_INFINITY }),
        DataType::Timestamp => Datum::Timestamp(if positive { TS_POS_INFINITY } else { TS_NEG_INFINITY }),
        DataType::TimestampTz => Datum::TimestampTz(if positive { TS_POS_INFINITY } else { TS_NEG_INFINITY }),
        _ => return None,
    })
}
