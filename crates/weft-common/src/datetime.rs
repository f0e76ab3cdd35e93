//! Date and time values as PostgreSQL represents them, with their input and output
//! functions (DateStyle `ISO, MDY`, IntervalStyle `postgres`, TimeZone UTC).
//!
//! Representations (those of PostgreSQL, so ranges and rounding agree):
//! - `date`: days since 2000-01-01 in an `i32`; `i32::MIN` is `-infinity`, `i32::MAX`
//!   is `infinity`.
//! - `timestamp` / `timestamptz`: microseconds since 2000-01-01 00:00 in an `i64`
//!   (timestamptz: in UTC); `i64::MIN` / `i64::MAX` are the infinities.
//! - `time`: microseconds since midnight, `0..=86_400_000_000`.
//! - `interval`: months, days and microseconds kept apart, because a month and a day have
//!   no fixed length; comparison and hashing use PostgreSQL's linear span (a month is 30
//!   days, a day 24 hours), so `'1 mon'` equals `'30 days'`.
//!
//! Calendar arithmetic is the proleptic Gregorian calendar (as PostgreSQL's), through a
//! day count; years are astronomical inside (1 BC is year 0) and printed with `BC`.

use std::cmp::Ordering;

use crate::timezone::{literal_zone, LiteralZone, TimeZone};
use crate::{Error, Result, SqlState};

pub const USECS_PER_SEC: i64 = 1_000_000;
pub const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;
pub const USECS_PER_HOUR: i64 = 60 * USECS_PER_MINUTE;
pub const USECS_PER_DAY: i64 = 24 * USECS_PER_HOUR;
pub const DAYS_PER_MONTH: i64 = 30;

pub const DATE_NEG_INFINITY: i32 = i32::MIN;
pub const DATE_POS_INFINITY: i32 = i32::MAX;
pub const TS_NEG_INFINITY: i64 = i64::MIN;
pub const TS_POS_INFINITY: i64 = i64::MAX;

/// Days from 1970-01-01 to 2000-01-01 (the Unix epoch in PostgreSQL's day count is -10957).
pub const UNIX_EPOCH_DAYS: i64 = 10_957;

/// The first valid date, 4714-11-24 BC (Julian day 0), as a day count.
pub const MIN_DATE: i64 = -2_451_545;
/// One past the last valid date, 5874898-01-01.
pub const END_DATE: i64 = 2_147_483_494 - 2_451_545;
/// The first valid timestamp, 4714-11-24 00:00 BC.
pub const MIN_TIMESTAMP: i64 = -211_813_488_000_000_000;
/// One past the last valid timestamp, 294277-01-01 00:00.
pub const END_TIMESTAMP: i64 = 9_223_371_331_200_000_000;

/// An `interval` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    pub const fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval { months, days, micros }
    }

    /// The linear span PostgreSQL orders intervals by (`interval_cmp_value`).
    pub fn span(&self) -> i128 {
        (self.months as i128 * DAYS_PER_MONTH as i128 + self.days as i128) * USECS_PER_DAY as i128 + self.micros as i128
    }

    pub fn cmp_value(&self, other: &Interval) -> Ordering {
        self.span().cmp(&other.span())
    }

    pub fn checked_neg(&self) -> Result<Interval> {
        Ok(Interval {
            months: self.months.checked_neg().ok_or_else(interval_out_of_range)?,
            days: self.days.checked_neg().ok_or_else(interval_out_of_range)?,
            micros: self.micros.checked_neg().ok_or_else(interval_out_of_range)?,
        })
    }

    pub fn checked_add(&self, o: &Interval) -> Result<Interval> {
        Ok(Interval {
            months: self.months.checked_add(o.months).ok_or_else(interval_out_of_range)?,
            days: self.days.checked_add(o.days).ok_or_else(interval_out_of_range)?,
            micros: self.micros.checked_add(o.micros).ok_or_else(interval_out_of_range)?,
        })
    }

    pub fn checked_sub(&self, o: &Interval) -> Result<Interval> {
        self.checked_add(&o.checked_neg()?)
    }

    /// `interval * float8` (`interval_mul`): fractional months spill into days at 30 days
    /// a month, fractional days into time at 24 hours a day.
    pub fn mul_f64(&self, factor: f64) -> Result<Interval> {
        let months_f = self.months as f64 * factor;
        let days_f = self.days as f64 * factor;
        if months_f.is_nan() || !(i32::MIN as f64..=i32::MAX as f64).contains(&months_f) {
            return Err(interval_out_of_range());
        }
        if days_f.is_nan() || !(i32::MIN as f64..=i32::MAX as f64).contains(&days_f) {
            return Err(interval_out_of_range());
        }
        let months = months_f.trunc() as i32;
        let mut days = days_f.trunc() as i32;
        let round_us = |x: f64| (x * 1e6).round() / 1e6;
        let month_remainder_days = round_us((months_f - months as f64) * DAYS_PER_MONTH as f64);
        let mut sec_remainder =
            round_us((days_f - days as f64 + month_remainder_days - month_remainder_days.trunc()) * 86_400.0);
        if sec_remainder.abs() >= 86_400.0 {
            days = days.checked_add((sec_remainder / 86_400.0).trunc() as i32).ok_or_else(interval_out_of_range)?;
            sec_remainder -= (sec_remainder / 86_400.0).trunc() * 86_400.0;
        }
        days = days.checked_add(month_remainder_days.trunc() as i32).ok_or_else(interval_out_of_range)?;
        let micros_f = (self.micros as f64 * factor + sec_remainder * 1e6).round_ties_even();
        if micros_f.is_nan() || !(-9.223372036854775e18..9.223372036854775e18).contains(&micros_f) {
            return Err(interval_out_of_range());
        }
        Ok(Interval { months, days, micros: micros_f as i64 })
    }
}

pub fn interval_out_of_range() -> Error {
    Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "interval out of range")
}

pub fn date_out_of_range() -> Error {
    Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "date out of range")
}

pub fn timestamp_out_of_range() -> Error {
    Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range")
}

// ---------------------------------------------------------------------------------------
// Calendar

/// Days from 1970-01-01 of a proleptic Gregorian date (astronomical year).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month as i64 + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day as i64 - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + if month <= 2 { 1 } else { 0 };
    (year, month, day)
}

/// A date as PostgreSQL's day count (days since 2000-01-01).
pub fn date_from_ymd(year: i64, month: u32, day: u32) -> i64 {
    days_from_civil(year, month, day) - UNIX_EPOCH_DAYS
}

/// `(year, month, day)` of a PostgreSQL day count.
pub fn ymd_from_date(date: i64) -> (i64, u32, u32) {
    civil_from_days(date + UNIX_EPOCH_DAYS)
}

pub fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(year) => 29,
        _ => 28,
    }
}

/// Is `(year, month, day)` inside PostgreSQL's Julian range (from 4714-11-24 BC)?
fn julian_ok(year: i64, month: u32, day: u32) -> bool {
    let first = (-4713, 11, 24);
    (year, month, day) >= first && year <= 5_874_898
}

pub fn date_is_finite(d: i32) -> bool {
    d != DATE_NEG_INFINITY && d != DATE_POS_INFINITY
}

pub fn timestamp_is_finite(t: i64) -> bool {
    t != TS_NEG_INFINITY && t != TS_POS_INFINITY
}

pub fn timestamp_in_range(t: i64) -> bool {
    (MIN_TIMESTAMP..END_TIMESTAMP).contains(&t)
}

/// A date as a timestamp at midnight (`date2timestamp`).
pub fn date_to_timestamp(d: i32) -> Result<i64> {
    match d {
        DATE_NEG_INFINITY => Ok(TS_NEG_INFINITY),
        DATE_POS_INFINITY => Ok(TS_POS_INFINITY),
        d => {
            // PostgreSQL refuses dates past the timestamp range.
            let t = d as i64 * USECS_PER_DAY;
            if d as i64 >= END_TIMESTAMP / USECS_PER_DAY {
                return Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "date out of range for timestamp"));
            }
            Ok(t)
        }
    }
}

/// The date part of a timestamp (`timestamp_date`).
pub fn timestamp_to_date(t: i64) -> Result<i32> {
    match t {
        TS_NEG_INFINITY => Ok(DATE_NEG_INFINITY),
        TS_POS_INFINITY => Ok(DATE_POS_INFINITY),
        t => Ok(t.div_euclid(USECS_PER_DAY) as i32),
    }
}

/// The current time as a timestamp (microseconds since 2000-01-01 UTC).
pub fn now_timestamp() -> i64 {
    let since_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    since_unix - UNIX_EPOCH_DAYS * USECS_PER_DAY
}

/// Splits a finite timestamp into calendar fields.
pub struct Fields {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
    pub micros: i64,
}

pub fn timestamp_fields(t: i64) -> Fields {
    let date = t.div_euclid(USECS_PER_DAY);
    let time = t.rem_euclid(USECS_PER_DAY);
    let (year, month, day) = ymd_from_date(date);
    Fields {
        year,
        month,
        day,
        hour: time / USECS_PER_HOUR,
        minute: time / USECS_PER_MINUTE % 60,
        second: time / USECS_PER_SEC % 60,
        micros: time % USECS_PER_SEC,
    }
}

/// `timestamp + interval` (`timestamp_pl_interval`): months first (the day clamped to the
/// new month's length), then days, then time.
pub fn timestamp_add_interval(t: i64, iv: &Interval) -> Result<i64> {
    if !timestamp_is_finite(t) {
        return Ok(t);
    }
    let mut t = t;
    if iv.months != 0 {
        let f = timestamp_fields(t);
        let total = f.year * 12 + (f.month as i64 - 1) + iv.months as i64;
        let year = total.div_euclid(12);
        let month = (total.rem_euclid(12) + 1) as u32;
        let day = f.day.min(days_in_month(year, month));
        if !julian_ok(year, month, day) {
            return Err(timestamp_out_of_range());
        }
        let time = t.rem_euclid(USECS_PER_DAY);
        t = date_from_ymd(year, month, day)
            .checked_mul(USECS_PER_DAY)
            .and_then(|d| d.checked_add(time))
            .ok_or_else(timestamp_out_of_range)?;
    }
    if iv.days != 0 {
        let date = t.div_euclid(USECS_PER_DAY) + iv.days as i64;
        let time = t.rem_euclid(USECS_PER_DAY);
        if !(MIN_DATE..END_DATE).contains(&date) {
            return Err(timestamp_out_of_range());
        }
        t = date.checked_mul(USECS_PER_DAY).and_then(|d| d.checked_add(time)).ok_or_else(timestamp_out_of_range)?;
    }
    t = t.checked_add(iv.micros).ok_or_else(timestamp_out_of_range)?;
    if !timestamp_in_range(t) {
        return Err(timestamp_out_of_range());
    }
    Ok(t)
}

/// `timestamp - timestamp` (`timestamp_mi`): whole days and the rest as time.
pub fn timestamp_diff(a: i64, b: i64) -> Result<Interval> {
    if !timestamp_is_finite(a) || !timestamp_is_finite(b) {
        return Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "cannot subtract infinite timestamps"));
    }
    let span = a.checked_sub(b).ok_or_else(interval_out_of_range)?;
    // interval_justify_hours: whole days out of the time, both parts with one sign.
    let days = span / USECS_PER_DAY;
    let micros = span % USECS_PER_DAY;
    Ok(Interval { months: 0, days: i32::try_from(days).map_err(|_| interval_out_of_range())?, micros })
}

// ---------------------------------------------------------------------------------------
// Output

fn push_year(out: &mut String, year: i64) -> bool {
    let bc = year <= 0;
    let shown = if bc { 1 - year } else { year };
    out.push_str(&format!("{shown:04}"));
    bc
}

fn push_fraction(out: &mut String, micros: i64) {
    if micros != 0 {
        let digits = format!("{:06}", micros);
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
}

pub fn format_date(d: i32) -> String {
    match d {
        DATE_NEG_INFINITY => "-infinity".into(),
        DATE_POS_INFINITY => "infinity".into(),
        d => {
            let (y, m, day) = ymd_from_date(d as i64);
            let mut out = String::with_capacity(16);
            let bc = push_year(&mut out, y);
            out.push_str(&format!("-{m:02}-{day:02}"));
            if bc {
                out.push_str(" BC");
            }
            out
        }
    }
}

/// A timestamp; `with_zone` adds the UTC offset `+00` (a timestamptz in a UTC session;
/// `timezone::format_timestamptz` prints one in any zone).
pub fn format_timestamp(t: i64, with_zone: bool) -> String {
    format_timestamp_offset(t, with_zone.then_some(0))
}

/// A local time, with its zone's `offset` (seconds east) after it when given.
pub fn format_timestamp_offset(t: i64, offset: Option<i32>) -> String {
    match t {
        TS_NEG_INFINITY => "-infinity".into(),
        TS_POS_INFINITY => "infinity".into(),
        t => {
            let f = timestamp_fields(t);
            let mut out = String::with_capacity(32);
            let bc = push_year(&mut out, f.year);
            out.push_str(&format!("-{:02}-{:02} {:02}:{:02}:{:02}", f.month, f.day, f.hour, f.minute, f.second));
            push_fraction(&mut out, f.micros);
            if let Some(offset) = offset {
                out.push_str(&crate::timezone::format_offset(offset));
            }
            if bc {
                out.push_str(" BC");
            }
            out
        }
    }
}

pub fn format_time(t: i64) -> String {
    let mut out = format!(
        "{:02}:{:02}:{:02}",
        t / USECS_PER_HOUR,
        t / USECS_PER_MINUTE % 60,
        t / USECS_PER_SEC % 60
    );
    push_fraction(&mut out, t % USECS_PER_SEC);
    out
}

/// IntervalStyle `postgres`: `1 year 2 mons 3 days 04:05:06.5`, each part signed; a
/// positive part after a negative one gets a `+`.
pub fn format_interval(iv: &Interval) -> String {
    let mut out = String::new();
    let mut previous_negative = false;
    let years = iv.months / 12;
    let months = iv.months % 12;
    for (value, unit) in [(years as i64, "year"), (months as i64, "mon"), (iv.days as i64, "day")] {
        if value == 0 {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        if previous_negative && value > 0 {
            out.push('+');
        }
        out.push_str(&format!("{value} {unit}{}", if value == 1 { "" } else { "s" }));
        previous_negative = value < 0;
    }
    if out.is_empty() || iv.micros != 0 {
        if !out.is_empty() {
            out.push(' ');
        }
        let negative = iv.micros < 0;
        let magnitude = iv.micros.unsigned_abs();
        if negative {
            out.push('-');
        } else if previous_negative {
            out.push('+');
        }
        let us = USECS_PER_SEC as u64;
        out.push_str(&format!(
            "{:02}:{:02}:{:02}",
            magnitude / (us * 3600),
            magnitude / (us * 60) % 60,
            magnitude / us % 60
        ));
        push_fraction(&mut out, (magnitude % us) as i64);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Input

/// Why a date/time string was refused: PostgreSQL's `DateTimeParseError` cases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// 22007 `invalid input syntax for type X: "..."`.
    BadFormat,
    /// 22008 `date/time field value out of range: "..."`.
    FieldOverflow,
    /// 22015 `interval field value out of range: "..."`.
    IntervalOverflow,
    /// 22009 `time zone displacement out of range: "..."`.
    ZoneOverflow,
    /// 0A000: a zone abbreviation whose offset depends on the date (`MSK`).
    ZoneUnsupported,
    /// 22023 `time zone "..." not recognized`: a word with a `/` that names no zone.
    UnknownZone(String),
}

pub fn parse_error(kind: ParseError, type_name: &str, input: &str) -> Error {
    match kind {
        ParseError::BadFormat => Error::new(
            SqlState("22007"),
            format!("invalid input syntax for type {type_name}: \"{input}\""),
        ),
        ParseError::FieldOverflow => {
            Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("date/time field value out of range: \"{input}\""))
        }
        ParseError::IntervalOverflow => {
            Error::new(SqlState("22015"), format!("interval field value out of range: \"{input}\""))
        }
        ParseError::ZoneOverflow => {
            Error::new(SqlState("22009"), format!("time zone displacement out of range: \"{input}\""))
        }
        ParseError::UnknownZone(word) => {
            Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("time zone \"{word}\" not recognized"))
        }
        ParseError::ZoneUnsupported => Error::not_supported(format!(
            "the time zone abbreviation in \"{input}\" is not supported yet: its offset depends on the date"
        )),
    }
}

/// What a date/time string says.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Parsed {
    Epoch,
    Infinity,
    NegInfinity,
    /// `now`: the current instant.
    Now,
    /// `today` / `tomorrow` / `yesterday`: midnight of that day (offset from today).
    Today(i64),
    Fields {
        /// `(year, month, day)` when a date was given.
        date: Option<(i64, u32, u32)>,
        /// Microseconds since midnight when a time was given.
        time: Option<i64>,
        /// The zone when one was given.
        zone: Option<LiteralZone>,
    },
}

fn month_by_name(word: &str) -> Option<u32> {
    const NAMES: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    const FULL: [&str; 12] = [
        "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
        "december",
    ];
    let w = word.trim_end_matches('.');
    NAMES.iter().position(|n| *n == w).or_else(|| FULL.iter().position(|n| *n == w)).map(|i| i as u32 + 1)
        .or_else(|| (w == "sept").then_some(9))
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn number(s: &str) -> std::result::Result<i64, ParseError> {
    if !all_digits(s) {
        return Err(ParseError::BadFormat);
    }
    s.parse::<i64>().map_err(|_| ParseError::FieldOverflow)
}

/// A two-digit year as PostgreSQL reads it in a date written with one: 70..99 are 19xx.
fn adjust_two_digit_year(text: &str, year: i64) -> i64 {
    if text.len() <= 2 {
        if year < 70 { year + 2000 } else { year + 1900 }
    } else {
        year
    }
}

/// Reads the date of a `Y-M-D`, `M-D-Y`, `M/D/Y`, `YYYYMMDD`, `Mon D Y` or `D Mon Y`
/// token (the last two arrive split into words: see `parse_datetime`).
fn parse_date_token(token: &str) -> std::result::Result<(i64, u32, u32), ParseError> {
    if all_digits(token) {
        if token.len() == 8 {
            return Ok((number(&token[..4])?, number(&token[4..6])? as u32, number(&token[6..])? as u32));
        }
        if token.len() == 6 {
            let year = number(&token[..2])?;
            return Ok((adjust_two_digit_year(&token[..2], year), number(&token[2..4])? as u32, number(&token[4..])? as u32));
        }
        return Err(ParseError::BadFormat);
    }
    let separator = if token.contains('-') { '-' } else if token.contains('/') { '/' } else if token.contains('.') { '.' } else {
        return Err(ParseError::BadFormat);
    };
    let parts: Vec<&str> = token.split(separator).collect();
    if parts.len() != 3 {
        return Err(ParseError::BadFormat);
    }
    // A month name anywhere among the fields.
    if let Some(pos) = parts.iter().position(|p| month_by_name(p).is_some()) {
        let month = month_by_name(parts[pos]).unwrap_or(1);
        let rest: Vec<&str> = parts.iter().enumerate().filter(|(i, _)| *i != pos).map(|(_, p)| *p).collect();
        let (a, b) = (rest[0], rest[1]);
        let (year_text, day_text) = if a.len() >= 3 { (a, b) } else { (b, a) };
        let year = adjust_two_digit_year(year_text, number(year_text)?);
        return Ok((year, month, number(day_text)? as u32));
    }
    if parts[0].len() >= 3 {
        let year = number(parts[0])?;
        return Ok((year, number(parts[1])? as u32, number(parts[2])? as u32));
    }
    // DateStyle MDY.
    let year = adjust_two_digit_year(parts[2], number(parts[2])?);
    Ok((year, number(parts[0])? as u32, number(parts[1])? as u32))
}

/// `H:M[:S[.frac]]`.
fn parse_time_token(token: &str) -> std::result::Result<i64, ParseError> {
    let parts: Vec<&str> = token.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(ParseError::BadFormat);
    }
    let hour = number(parts[0])?;
    let minute = number(parts[1])?;
    let (second, micros) = match parts.get(2) {
        None => (0, 0),
        Some(s) => {
            let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
            let second = number(whole)?;
            if !frac.is_empty() && !all_digits(frac) {
                return Err(ParseError::BadFormat);
            }
            // Round to microseconds, as PostgreSQL does.
            let mut micros = 0i64;
            for (i, b) in frac.bytes().take(7).enumerate() {
                let digit = (b - b'0') as i64;
                if i < 6 {
                    micros = micros * 10 + digit;
                } else if digit >= 5 {
                    micros += 1;
                }
            }
            for _ in frac.len()..6 {
                micros *= 10;
            }
            (second, micros)
        }
    };
    if hour > 24 || minute > 59 || second > 60 || (hour == 24 && (minute > 0 || second > 0 || micros > 0)) {
        return Err(ParseError::FieldOverflow);
    }
    Ok(hour * USECS_PER_HOUR + minute * USECS_PER_MINUTE + second * USECS_PER_SEC + micros)
}

/// `+HH`, `+HH:MM`, `+HHMM`, `+HH:MM:SS` (sign included) → seconds east of UTC.
fn parse_zone_offset(token: &str) -> std::result::Result<i64, ParseError> {
    let (sign, body) = match token.as_bytes().first() {
        Some(b'+') => (1, &token[1..]),
        Some(b'-') => (-1, &token[1..]),
        _ => return Err(ParseError::BadFormat),
    };
    let (h, m, s) = if body.contains(':') {
        let parts: Vec<&str> = body.split(':').collect();
        match parts.as_slice() {
            [h, m] => (number(h)?, number(m)?, 0),
            [h, m, s] => (number(h)?, number(m)?, number(s)?),
            _ => return Err(ParseError::BadFormat),
        }
    } else {
        match body.len() {
            1 | 2 => (number(body)?, 0, 0),
            3 | 4 => (number(&body[..body.len() - 2])?, number(&body[body.len() - 2..])?, 0),
            5 | 6 => (number(&body[..body.len() - 4])?, number(&body[body.len() - 4..body.len() - 2])?, number(&body[body.len() - 2..])?),
            _ => return Err(ParseError::BadFormat),
        }
    };
    if m > 59 || s > 59 {
        return Err(ParseError::FieldOverflow);
    }
    if h > 15 {
        return Err(ParseError::ZoneOverflow);
    }
    Ok(sign * (h * 3600 + m * 60 + s))
}

fn parse_datetime(input: &str) -> std::result::Result<Parsed, ParseError> {
    let lower = input.trim().to_ascii_lowercase();
    match lower.as_str() {
        "epoch" => return Ok(Parsed::Epoch),
        "infinity" | "+infinity" => return Ok(Parsed::Infinity),
        "-infinity" => return Ok(Parsed::NegInfinity),
        "now" => return Ok(Parsed::Now),
        "today" => return Ok(Parsed::Today(0)),
        "tomorrow" => return Ok(Parsed::Today(1)),
        "yesterday" => return Ok(Parsed::Today(-1)),
        "" => return Err(ParseError::BadFormat),
        _ => {}
    }
    // Words: split on whitespace and commas; a `T` between date and time is a space.
    let mut words: Vec<String> = Vec::new();
    for w in lower.split(|c: char| c.is_ascii_whitespace() || c == ',') {
        if w.is_empty() {
            continue;
        }
        match w.find('t') {
            Some(pos) if pos > 0 && w[..pos].bytes().all(|b| b.is_ascii_digit() || b == b'-') && w[pos + 1..].starts_with(|c: char| c.is_ascii_digit()) => {
                words.push(w[..pos].to_string());
                words.push(w[pos + 1..].to_string());
            }
            _ => words.push(w.to_string()),
        }
    }
    let mut date = None;
    let mut time = None;
    let mut zone = None;
    let mut bc = None;
    // Loose date pieces (`Mar 5 2024`, `5 March 2024`): month name and numbers.
    let mut month_word = None;
    let mut loose_numbers: Vec<String> = Vec::new();
    for word in &words {
        let w = word.as_str();
        if w == "bc" || w == "ad" {
            if bc.is_some() {
                return Err(ParseError::BadFormat);
            }
            bc = Some(w == "bc");
        } else if w == "z" || w == "utc" || w == "gmt" || w == "zulu" {
            zone = Some(LiteralZone::Offset(0));
        } else if (w.starts_with('+') || w.starts_with('-')) && time.is_some() {
            zone = Some(LiteralZone::Offset(parse_zone_offset(w)?));
        } else if w.starts_with(|c: char| c.is_ascii_alphabetic()) && month_by_name(w).is_none() && w != "allballs" {
            // A zone abbreviation (`EST`) or name (`America/New_York`).
            match literal_zone(w) {
                Ok(Some(z)) if zone.is_none() => zone = Some(z),
                // PostgreSQL reads a word with a `/` as a zone name.
                Ok(None) if w.contains('/') => return Err(ParseError::UnknownZone(w.to_string())),
                Ok(_) => return Err(ParseError::BadFormat),
                Err(_) => return Err(ParseError::ZoneUnsupported),
            }
        } else if w.contains(':') {
            if time.is_some() {
                return Err(ParseError::BadFormat);
            }
            // A zone may be glued to the time: `10:11:12+02`, `10:11z`.
            let split = w.find(['+', '-']);
            let (t, z) = match split {
                Some(pos) => (&w[..pos], Some(&w[pos..])),
                None => match w.strip_suffix('z') {
                    Some(t) => (t, Some("+0")),
                    None => (w, None),
                },
            };
            time = Some(parse_time_token(t)?);
            if let Some(z) = z {
                zone = Some(LiteralZone::Offset(parse_zone_offset(z)?));
            }
        } else if month_by_name(w).is_some() && !w.contains(['-', '/']) {
            if month_word.is_some() || date.is_some() {
                return Err(ParseError::BadFormat);
            }
            month_word = month_by_name(w);
        } else if all_digits(w) && (date.is_none() || month_word.is_some()) && (month_word.is_some() || loose_numbers.len() < 2) && w.len() != 8 && w.len() != 6 {
            loose_numbers.push(w.to_string());
        } else if date.is_none() && !all_digits(w) || (date.is_none() && (w.len() == 8 || w.len() == 6)) {
            if matches!(w, "allballs") {
                time = Some(0);
                continue;
            }
            date = Some(parse_date_token(w)?);
        } else {
            return Err(ParseError::BadFormat);
        }
    }
    if let Some(month) = month_word {
        if date.is_some() || loose_numbers.len() != 2 {
            return Err(ParseError::BadFormat);
        }
        let (a, b) = (&loose_numbers[0], &loose_numbers[1]);
        let (year_text, day_text) = if a.len() >= 3 { (a, b) } else { (b, a) };
        let year = adjust_two_digit_year(year_text, number(year_text)?);
        date = Some((year, month, number(day_text)? as u32));
    } else if !loose_numbers.is_empty() {
        return Err(ParseError::BadFormat);
    }
    if let Some((year, month, day)) = date.as_mut() {
        if *year == 0 && bc.is_some() {
            return Err(ParseError::FieldOverflow);
        }
        if bc == Some(true) {
            *year = 1 - *year;
        } else if *year == 0 {
            // Year 0 does not exist without an era.
            return Err(ParseError::FieldOverflow);
        }
        if *month < 1 || *month > 12 || *day < 1 || *day > days_in_month(*year, *month) {
            return Err(ParseError::FieldOverflow);
        }
    } else if bc.is_some() {
        return Err(ParseError::BadFormat);
    }
    Ok(Parsed::Fields { date, time, zone })
}

/// Today in the session's zone.
fn today_date() -> i64 {
    let now = now_timestamp();
    crate::timezone::with_current(|zone| zone.to_local(now)).unwrap_or(now).div_euclid(USECS_PER_DAY)
}

/// `date_in`.
pub fn parse_date(input: &str) -> Result<i32> {
    let err = |k| parse_error(k, "date", input);
    match parse_datetime(input).map_err(err)? {
        Parsed::Epoch => Ok(-(UNIX_EPOCH_DAYS as i32)),
        Parsed::Infinity => Ok(DATE_POS_INFINITY),
        Parsed::NegInfinity => Ok(DATE_NEG_INFINITY),
        Parsed::Now => Ok(today_date() as i32),
        Parsed::Today(offset) => Ok((today_date() + offset) as i32),
        Parsed::Fields { date: Some((y, m, d)), .. } => {
            if !julian_ok(y, m, d) {
                return Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("date out of range: \"{input}\"")));
            }
            let days = date_from_ymd(y, m, d);
            if !(MIN_DATE..END_DATE).contains(&days) {
                return Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("date out of range: \"{input}\"")));
            }
            Ok(days as i32)
        }
        Parsed::Fields { date: None, .. } => Err(err(ParseError::BadFormat)),
    }
}

/// `timestamp_in` (`with_zone`: `timestamptz_in` in a UTC session).
pub fn parse_timestamp(input: &str, with_zone: bool) -> Result<i64> {
    parse_timestamp_in(input, with_zone.then(TimeZone::utc).as_ref())
}

/// `timestamptz_in`: a literal without a zone is local time of the session's `zone`.
pub fn parse_timestamptz(input: &str, zone: &TimeZone) -> Result<i64> {
    parse_timestamp_in(input, Some(zone))
}

/// `timestamp_in`, or `timestamptz_in` when the session's zone is given.
fn parse_timestamp_in(input: &str, session_zone: Option<&TimeZone>) -> Result<i64> {
    let with_zone = session_zone.is_some();
    let type_name = if with_zone { "timestamp with time zone" } else { "timestamp" };
    let err = |k| parse_error(k, type_name, input);
    match parse_datetime(input).map_err(err)? {
        Parsed::Epoch => Ok(-UNIX_EPOCH_DAYS * USECS_PER_DAY),
        Parsed::Infinity => Ok(TS_POS_INFINITY),
        Parsed::NegInfinity => Ok(TS_NEG_INFINITY),
        // `now` and `today` are the session zone's: local time for a timestamp.
        Parsed::Now => {
            let now = now_timestamp();
            Ok(if with_zone { now } else { crate::timezone::with_current(|zone| zone.to_local(now)).unwrap_or(now) })
        }
        Parsed::Today(offset) => {
            let local = (today_date() + offset) * USECS_PER_DAY;
            Ok(match session_zone {
                Some(zone) => zone.from_local(local).unwrap_or(local),
                None => local,
            })
        }
        Parsed::Fields { date: Some((y, m, d)), time, zone } => {
            let out_of_range =
                || Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("timestamp out of range: \"{input}\""));
            if !julian_ok(y, m, d) {
                return Err(out_of_range());
            }
            let days = date_from_ymd(y, m, d);
            let local = days
                .checked_mul(USECS_PER_DAY)
                .and_then(|v| v.checked_add(time.unwrap_or(0)))
                .ok_or_else(out_of_range)?;
            // timestamp (without time zone) ignores a zone, as PostgreSQL does.
            let t = match (session_zone, zone) {
                (None, _) => local,
                (Some(_), Some(LiteralZone::Offset(offset))) => local.checked_sub(offset * USECS_PER_SEC).ok_or_else(out_of_range)?,
                (Some(_), Some(LiteralZone::Zone(zone))) => zone.from_local(local).ok_or_else(out_of_range)?,
                (Some(session), None) => session.from_local(local).ok_or_else(out_of_range)?,
            };
            if !timestamp_in_range(t) {
                return Err(out_of_range());
            }
            Ok(t)
        }
        Parsed::Fields { date: None, .. } => Err(err(ParseError::BadFormat)),
    }
}

/// `time_in`: a time of day; a date before it is read and ignored.
pub fn parse_time(input: &str) -> Result<i64> {
    let err = |k| parse_error(k, "time without time zone", input);
    match parse_datetime(input).map_err(err)? {
        Parsed::Now => Ok(now_timestamp().rem_euclid(USECS_PER_DAY)),
        Parsed::Fields { time: Some(t), .. } => Ok(t),
        _ => Err(err(ParseError::BadFormat)),
    }
}

/// The units an interval string or `INTERVAL '…' unit` may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalUnit {
    Microsecond,
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
    Decade,
    Century,
    Millennium,
}

impl IntervalUnit {
    pub fn from_word(word: &str) -> Option<IntervalUnit> {
        use IntervalUnit::*;
        Some(match word {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" | "microsecon" => Microsecond,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" | "millisecon" => Millisecond,
            "second" | "seconds" | "s" | "sec" | "secs" => Second,
            "minute" | "minutes" | "m" | "min" | "mins" => Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => Hour,
            "day" | "days" | "d" => Day,
            "week" | "weeks" | "w" => Week,
            "month" | "months" | "mon" | "mons" => Month,
            "year" | "years" | "y" | "yr" | "yrs" => Year,
            "decade" | "decades" | "dec" | "decs" => Decade,
            "century" | "centuries" | "c" | "cent" => Century,
            "millennium" | "millennia" | "mil" | "mils" | "millenniums" => Millennium,
            _ => return None,
        })
    }
}

/// Adds `value` (possibly fractional) of `unit` to `acc`, spilling fractions downwards as
/// PostgreSQL does (a fraction of a month is 30-day days, of a day 24-hour time).
fn add_interval_part(acc: &mut (i64, i64, f64), unit: IntervalUnit, value: f64) {
    use IntervalUnit::*;
    let (months, days, micros) = acc;
    let spill_months = |months: &mut i64, days: &mut i64, micros: &mut f64, m: f64| {
        let whole = m.trunc();
        *months += whole as i64;
        let frac_days = (m - whole) * DAYS_PER_MONTH as f64;
        let whole_days = frac_days.trunc();
        *days += whole_days as i64;
        *micros += (frac_days - whole_days) * USECS_PER_DAY as f64;
    };
    match unit {
        Microsecond => *micros += value,
        Millisecond => *micros += value * 1000.0,
        Second => *micros += value * USECS_PER_SEC as f64,
        Minute => *micros += value * USECS_PER_MINUTE as f64,
        Hour => *micros += value * USECS_PER_HOUR as f64,
        Day | Week => {
            let d = if unit == Week { value * 7.0 } else { value };
            let whole = d.trunc();
            *days += whole as i64;
            *micros += (d - whole) * USECS_PER_DAY as f64;
        }
        Month => spill_months(months, days, micros, value),
        // Fractions of years become whole months only (PostgreSQL truncates the rest).
        Year | Decade | Century | Millennium => {
            let factor = match unit {
                Year => 12.0,
                Decade => 120.0,
                Century => 1200.0,
                _ => 12000.0,
            };
            *months += (value * factor).trunc() as i64;
        }
    }
}

/// `interval_in` for IntervalStyle postgres input: `[@] n unit [n unit ...] [[+|-]H:M[:S]]
/// [ago]`, a bare number (seconds, or `default_unit`), ISO 8601 `P1Y2M3DT4H5M6S`, and the
/// SQL standard's `Y-M` year-month literal.
pub fn parse_interval(input: &str, default_unit: Option<IntervalUnit>) -> Result<Interval> {
    let err = |k| parse_error(k, "interval", input);
    let lower = input.trim().to_ascii_lowercase();
    if lower.is_empty() {
        return Err(err(ParseError::BadFormat));
    }
    if let Some(iso) = lower.strip_prefix('p') {
        return parse_iso_interval(iso).map_err(err).and_then(|acc| finish_interval(acc, input));
    }
    let body = lower.strip_prefix('@').unwrap_or(&lower);
    let mut tokens: Vec<&str> = body.split_ascii_whitespace().collect();
    let mut negate_all = false;
    if tokens.last() == Some(&"ago") {
        negate_all = true;
        tokens.pop();
    }
    if tokens.is_empty() {
        return Err(err(ParseError::BadFormat));
    }
    let mut acc = (0i64, 0i64, 0f64);
    let mut i = 0;
    let mut seen_time = false;
    // Each unit may be given once; a `H:M:S` part counts as hours to microseconds
    // (PostgreSQL's field mask).
    let mut seen_units: u32 = 0;
    const TIME_UNITS: u32 = (1 << IntervalUnit::Hour as u32)
        | (1 << IntervalUnit::Minute as u32)
        | (1 << IntervalUnit::Second as u32)
        | (1 << IntervalUnit::Millisecond as u32)
        | (1 << IntervalUnit::Microsecond as u32);
    while i < tokens.len() {
        let token = tokens[i];
        // A number glued to its unit: `5d`, `10min`.
        let numeric_len = token
            .char_indices()
            .take_while(|(j, c)| c.is_ascii_digit() || *c == '.' || (*j == 0 && (*c == '+' || *c == '-')))
            .count();
        if token.contains(':') {
            if seen_time || seen_units & TIME_UNITS != 0 {
                return Err(err(ParseError::BadFormat));
            }
            seen_time = true;
            seen_units |= TIME_UNITS;
            let (negative, t) = match token.as_bytes()[0] {
                b'-' => (true, &token[1..]),
                b'+' => (false, &token[1..]),
                _ => (false, token),
            };
            let parts: Vec<&str> = t.split(':').collect();
            if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
                return Err(err(ParseError::BadFormat));
            }
            let hours: f64 = parts[0].parse().map_err(|_| err(ParseError::BadFormat))?;
            let minutes: f64 = parts[1].parse().map_err(|_| err(ParseError::BadFormat))?;
            let seconds: f64 = match parts.get(2) {
                Some(s) => s.parse().map_err(|_| err(ParseError::BadFormat))?,
                None => 0.0,
            };
            if !all_digits(parts[0]) || !all_digits(parts[1]) || minutes > 59.0 || seconds >= 60.0 {
                return Err(err(if all_digits(parts[0]) && all_digits(parts[1]) { ParseError::FieldOverflow } else { ParseError::BadFormat }));
            }
            let total = hours * USECS_PER_HOUR as f64 + minutes * USECS_PER_MINUTE as f64 + seconds * USECS_PER_SEC as f64;
            acc.2 += if negative { -total } else { total };
            i += 1;
            continue;
        }
        if numeric_len == 0 {
            return Err(err(ParseError::BadFormat));
        }
        let (num_text, glued_unit) = token.split_at(numeric_len);
        // `1-2`: years and months (SQL standard).
        if glued_unit.starts_with('-') && glued_unit.len() > 1 && all_digits(&glued_unit[1..]) && all_digits(num_text.trim_start_matches(['+', '-'])) {
            let years: i64 = num_text.parse().map_err(|_| err(ParseError::BadFormat))?;
            let months: i64 = glued_unit[1..].parse().map_err(|_| err(ParseError::BadFormat))?;
            let sign = if num_text.starts_with('-') { -1 } else { 1 };
            if months > 11 {
                return Err(err(ParseError::FieldOverflow));
            }
            acc.0 += years * 12 + sign * months;
            i += 1;
            continue;
        }
        let value: f64 = num_text.parse().map_err(|_| err(ParseError::BadFormat))?;
        if !value.is_finite() {
            return Err(err(ParseError::BadFormat));
        }
        let unit_word = if !glued_unit.is_empty() {
            Some(glued_unit.to_string())
        } else if let Some(next) = tokens.get(i + 1).filter(|n| IntervalUnit::from_word(n).is_some()) {
            i += 1;
            Some(next.to_string())
        } else {
            None
        };
        let unit = match unit_word {
            Some(word) => IntervalUnit::from_word(&word).ok_or_else(|| err(ParseError::BadFormat))?,
            // A bare number: seconds, unless the type's unit says otherwise; only last.
            None if i + 1 == tokens.len() => default_unit.unwrap_or(IntervalUnit::Second),
            None => return Err(err(ParseError::BadFormat)),
        };
        if seen_units & (1 << unit as u32) != 0 {
            return Err(err(ParseError::BadFormat));
        }
        seen_units |= 1 << unit as u32;
        add_interval_part(&mut acc, unit, value);
        i += 1;
    }
    if negate_all {
        acc = (-acc.0, -acc.1, -acc.2);
    }
    finish_interval(acc, input)
}

fn finish_interval(acc: (i64, i64, f64), input: &str) -> Result<Interval> {
    let overflow = || parse_error(ParseError::IntervalOverflow, "interval", input);
    let months = i32::try_from(acc.0).map_err(|_| overflow())?;
    let days = i32::try_from(acc.1).map_err(|_| overflow())?;
    let micros = acc.2.round();
    if !(-9.2e18..9.2e18).contains(&micros) {
        return Err(overflow());
    }
    Ok(Interval { months, days, micros: micros as i64 })
}

/// `P[nY][nM][nW][nD][T[nH][nM][nS]]` after the `P`.
fn parse_iso_interval(s: &str) -> std::result::Result<(i64, i64, f64), ParseError> {
    let mut acc = (0i64, 0i64, 0f64);
    let mut in_time = false;
    let mut rest = s;
    if rest.is_empty() {
        return Err(ParseError::BadFormat);
    }
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('t') {
            in_time = true;
            rest = r;
            continue;
        }
        let len = rest.char_indices().take_while(|(j, c)| c.is_ascii_digit() || *c == '.' || (*j == 0 && *c == '-')).count();
        if len == 0 || len >= rest.len() {
            return Err(ParseError::BadFormat);
        }
        let value: f64 = rest[..len].parse().map_err(|_| ParseError::BadFormat)?;
        let unit = match (&rest[len..len + 1], in_time) {
            ("y", false) => IntervalUnit::Year,
            ("m", false) => IntervalUnit::Month,
            ("w", false) => IntervalUnit::Week,
            ("d", false) => IntervalUnit::Day,
            ("h", true) => IntervalUnit::Hour,
            ("m", true) => IntervalUnit::Minute,
            ("s", true) => IntervalUnit::Second,
            _ => return Err(ParseError::BadFormat),
        };
        add_interval_part(&mut acc, unit, value);
        rest = &rest[len + 1..];
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_dates() {
        assert_eq!(date_from_ymd(2000, 1, 1), 0);
        assert_eq!(date_from_ymd(1970, 1, 1), -10957);
        assert_eq!(format_date(parse_date("2024-03-05").unwrap()), "2024-03-05");
        assert_eq!(format_date(parse_date("epoch").unwrap()), "1970-01-01");
        assert_eq!(format_date(parse_date("03/05/2024").unwrap()), "2024-03-05");
        assert_eq!(format_date(parse_date("Mar 5, 2024").unwrap()), "2024-03-05");
        assert_eq!(format_date(parse_date("20240305").unwrap()), "2024-03-05");
        assert_eq!(format_date(parse_date("0044-03-15 BC").unwrap()), "0044-03-15 BC");
        assert_eq!(format_date(MIN_DATE as i32), "4714-11-24 BC");
        assert!(parse_date("2024-02-30").is_err());
        assert_eq!(parse_date("x").unwrap_err().sqlstate, SqlState("22007"));
        assert_eq!(parse_date("2024-13-01").unwrap_err().sqlstate, SqlState::DATETIME_FIELD_OVERFLOW);
    }

    #[test]
    fn known_timestamps() {
        let t = parse_timestamp("2024-03-05 10:11:12.345", false).unwrap();
        assert_eq!(format_timestamp(t, false), "2024-03-05 10:11:12.345");
        let t = parse_timestamp("2024-03-05T10:11:12+02", true).unwrap();
        assert_eq!(format_timestamp(t, true), "2024-03-05 08:11:12+00");
        let t = parse_timestamp("2024-03-05 10:11:12-05:30", true).unwrap();
        assert_eq!(format_timestamp(t, true), "2024-03-05 15:41:12+00");
        assert_eq!(format_timestamp(parse_timestamp("epoch", false).unwrap(), false), "1970-01-01 00:00:00");
    }

    #[test]
    fn known_intervals() {
        let f = |s: &str| format_interval(&parse_interval(s, None).unwrap());
        assert_eq!(f("1 day 2 hours"), "1 day 02:00:00");
        assert_eq!(f("1 year 2 months"), "1 year 2 mons");
        assert_eq!(f("-1 second"), "-00:00:01");
        assert_eq!(f("-1 day +2 hours"), "-1 days +02:00:00");
        assert_eq!(f("1.5 days"), "1 day 12:00:00");
        assert_eq!(f("1.5 months"), "1 mon 15 days");
        assert_eq!(f("3"), "00:00:03");
        assert_eq!(f("1 day ago"), "-1 days");
        assert_eq!(f("P1Y2M3DT4H5M6S"), "1 year 2 mons 3 days 04:05:06");
        assert_eq!(f("0"), "00:00:00");
        assert_eq!(f("1-2"), "1 year 2 mons");
        assert_eq!(f("100:00:00"), "100:00:00");
    }

    proptest! {
        #[test]
        fn date_round_trip(d in MIN_DATE..END_DATE) {
            let text = format_date(d as i32);
            prop_assert_eq!(parse_date(&text).unwrap(), d as i32);
        }

        #[test]
        fn timestamp_round_trip(t in MIN_TIMESTAMP..END_TIMESTAMP) {
            let text = format_timestamp(t, false);
            prop_assert_eq!(parse_timestamp(&text, false).unwrap(), t);
            let text = format_timestamp(t, true);
            prop_assert_eq!(parse_timestamp(&text, true).unwrap(), t);
        }

        #[test]
        fn interval_round_trip(months in -100000i32..100000, days in -100000i32..100000, micros in -(1i64<<50)..(1i64<<50)) {
            let iv = Interval::new(months, days, micros);
            let text = format_interval(&iv);
            prop_assert_eq!(parse_interval(&text, None).unwrap(), iv);
        }

        #[test]
        fn civil_round_trip(days in -3_000_000i64..3_000_000) {
            let (y, m, d) = civil_from_days(days);
            prop_assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
