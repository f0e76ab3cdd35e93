//! More date/time functions, as PostgreSQL 15 computes them: `justify_*`, `make_interval`,
//! `date_bin`, `to_timestamp(float8)`, the time zone conversion behind `AT TIME ZONE`
//! (`timezone(zone, value)`), and `to_timestamp(text, format)` / `to_date(text, format)`.
//!
//! weft's session time zone is UTC, so the only zones a conversion can apply are UTC and
//! fixed offsets: an interval (`INTERVAL '+02:00'`, east of Greenwich) or a POSIX-style
//! offset string (`'+02'`, `'UTC+2'`, which POSIX counts *west* of Greenwich, as
//! PostgreSQL does). A named zone with rules (`Europe/Paris`) is "not supported", not
//! "not recognized".

use weft_common::timezone::{LiteralZone, TimeZone};
use weft_common::datetime::{self as dt, Interval, DAYS_PER_MONTH, USECS_PER_DAY, USECS_PER_HOUR, USECS_PER_MINUTE, USECS_PER_SEC};
use weft_common::{Datum, Error, Result, SqlState};

fn interval_out_of_range() -> Error {
    Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "interval out of range")
}

/// Whole 24-hour periods of the time moved into the days.
fn carry_days(iv: &Interval) -> Result<(i32, i64)> {
    let whole_days = iv.micros / USECS_PER_DAY;
    let days = i32::try_from(iv.days as i64 + whole_days).map_err(|_| interval_out_of_range())?;
    Ok((days, iv.micros - whole_days * USECS_PER_DAY))
}

/// Days and time given one sign, borrowing a day where they differ.
fn agree_days_and_time(days: i32, micros: i64) -> (i32, i64) {
    if days > 0 && micros < 0 {
        (days - 1, micros + USECS_PER_DAY)
    } else if days < 0 && micros > 0 {
        (days + 1, micros - USECS_PER_DAY)
    } else {
        (days, micros)
    }
}

/// `justify_hours`: whole 24-hour periods of the time become days, the signs made to agree.
pub(crate) fn justify_hours(iv: &Interval) -> Result<Interval> {
    let (days, micros) = carry_days(iv)?;
    let (days, micros) = agree_days_and_time(days, micros);
    Ok(Interval::new(iv.months, days, micros))
}

/// `justify_days`: whole 30-day periods become months, the signs made to agree.
pub(crate) fn justify_days(iv: &Interval) -> Result<Interval> {
    let per_month = DAYS_PER_MONTH as i32;
    let whole_months = iv.days / per_month;
    let mut days = iv.days - whole_months * per_month;
    let mut months = iv.months.checked_add(whole_months).ok_or_else(interval_out_of_range)?;
    if months > 0 && days < 0 {
        days += per_month;
        months -= 1;
    } else if months < 0 && days > 0 {
        days -= per_month;
        months += 1;
    }
    Ok(Interval::new(months, days, iv.micros))
}

/// `justify_interval`: both of the above, with one sign for the whole value.
pub(crate) fn justify_interval(iv: &Interval) -> Result<Interval> {
    let per_month = DAYS_PER_MONTH as i32;
    let (days, micros) = carry_days(iv)?;
    let whole_months = days / per_month;
    let mut days = days - whole_months * per_month;
    let mut months = iv.months.checked_add(whole_months).ok_or_else(interval_out_of_range)?;
    if months > 0 && (days < 0 || (days == 0 && micros < 0)) {
        days += per_month;
        months -= 1;
    } else if months < 0 && (days > 0 || (days == 0 && micros > 0)) {
        days -= per_month;
        months += 1;
    }
    let (days, micros) = agree_days_and_time(days, micros);
    Ok(Interval::new(months, days, micros))
}

/// `make_interval(years, months, weeks, days, hours, mins, secs)`.
pub(crate) fn make_interval(parts: [i32; 6], seconds: f64) -> Result<Interval> {
    let [years, months, weeks, days, hours, minutes] = parts.map(i64::from);
    if !seconds.is_finite() {
        return Err(interval_out_of_range());
    }
    let months = i32::try_from(years * 12 + months).map_err(|_| interval_out_of_range())?;
    let days = i32::try_from(weeks * 7 + days).map_err(|_| interval_out_of_range())?;
    let micros = (seconds * USECS_PER_SEC as f64).round_ties_even();
    if micros.abs() >= 9.2e18 {
        return Err(interval_out_of_range());
    }
    let micros = (hours * USECS_PER_HOUR)
        .checked_add(minutes * USECS_PER_MINUTE)
        .and_then(|t| t.checked_add(micros as i64))
        .ok_or_else(interval_out_of_range)?;
    Ok(Interval::new(months, days, micros))
}

/// `date_bin(stride, source, origin)`: the start of the stride-wide bin, counted from
/// `origin`, that holds `source`. An infinite source is returned as it is.
pub(crate) fn date_bin(stride: &Interval, source: i64, origin: i64) -> Result<i64> {
    if !dt::timestamp_is_finite(source) {
        return Ok(source);
    }
    if !dt::timestamp_is_finite(origin) {
        return Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "origin out of range"));
    }
    if stride.months != 0 {
        return Err(Error::not_supported("timestamps cannot be binned into intervals containing months or years"));
    }
    let stride = (stride.days as i64).checked_mul(USECS_PER_DAY).and_then(|d| d.checked_add(stride.micros)).ok_or_else(interval_out_of_range)?;
    if stride <= 0 {
        return Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "stride must be greater than zero"));
    }
    let offset = source.checked_sub(origin).ok_or_else(interval_out_of_range)?;
    let bin = origin + (offset - offset.rem_euclid(stride));
    if !dt::timestamp_in_range(bin) {
        return Err(dt::timestamp_out_of_range());
    }
    Ok(bin)
}

/// `to_timestamp(seconds since 1970-01-01 UTC)`.
pub(crate) fn to_timestamp_from_epoch(seconds: f64) -> Result<i64> {
    if seconds.is_nan() {
        return Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp cannot be NaN"));
    }
    if seconds.is_infinite() {
        return Ok(if seconds > 0.0 { dt::TS_POS_INFINITY } else { dt::TS_NEG_INFINITY });
    }
    let out_of_range = || Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("timestamp out of range: \"{}\"", format_g(seconds)));
    let unix_epoch = (dt::UNIX_EPOCH_DAYS * USECS_PER_DAY) as f64;
    let micros = (seconds * USECS_PER_SEC as f64).round_ties_even() - unix_epoch;
    if !(dt::MIN_TIMESTAMP as f64..dt::END_TIMESTAMP as f64).contains(&micros) {
        return Err(out_of_range());
    }
    Ok(micros as i64)
}

/// `%g` of a float, as PostgreSQL's error message prints it.
fn format_g(value: f64) -> String {
    let text = format!("{value:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-5..6).contains(&exponent) {
        let rounded = format!("{value:.6}");
        rounded.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        let mantissa: f64 = mantissa.parse().unwrap_or(0.0);
        let mantissa = format!("{mantissa:.5}");
        format!("{}e{}{:02}", mantissa.trim_end_matches('0').trim_end_matches('.'), if exponent < 0 { '-' } else { '+' }, exponent.abs())
    }
}

/// A time zone written as text (PostgreSQL's `timestamptz_zone`): an abbreviation of the
/// `Default` set, an IANA zone name, or a POSIX zone with a fixed offset (west of Greenwich).
pub(crate) fn zone_named(zone: &str) -> Result<TimeZone> {
    let trimmed = zone.trim();
    if let Some(z) = weft_common::timezone::literal_zone(trimmed)? {
        return Ok(match z {
            LiteralZone::Offset(east) => TimeZone::fixed_numeric(east as i32),
            LiteralZone::Zone(z) => z,
        });
    }
    let lower = trimmed.to_ascii_lowercase();
    // POSIX: `[UTC|GMT]±hh[:mm[:ss]]`, counted west of Greenwich.
    let spec = lower.strip_prefix("utc").or_else(|| lower.strip_prefix("gmt")).unwrap_or(&lower);
    if let Some(west) = posix_offset(spec) {
        return Ok(TimeZone::fixed_numeric(-west as i32));
    }
    if let Some(z) = weft_common::timezone::zone_for_at_time_zone(trimmed)? {
        return Ok(z);
    }
    Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("time zone \"{zone}\" not recognized")))
}

/// `±hh[:mm[:ss]]` or `±hhmm` (the sign optional) as seconds.
fn posix_offset(spec: &str) -> Option<i64> {
    let (sign, digits) = match spec.as_bytes().first()? {
        b'-' => (-1, &spec[1..]),
        b'+' => (1, &spec[1..]),
        _ => (1, spec),
    };
    let fields: Vec<&str> = digits.split(':').collect();
    if fields.iter().any(|f| f.is_empty() || f.len() > 2 && fields.len() > 1 || !f.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let number = |s: &str| s.parse::<i64>().ok();
    let (hours, minutes, seconds) = match fields.as_slice() {
        [hhmm] if hhmm.len() > 2 => (number(&hhmm[..hhmm.len() - 2])?, number(&hhmm[hhmm.len() - 2..])?, 0),
        [h] => (number(h)?, 0, 0),
        [h, m] => (number(h)?, number(m)?, 0),
        [h, m, s] => (number(h)?, number(m)?, number(s)?),
        _ => return None,
    };
    if hours > 15 * 24 || minutes > 59 || seconds > 59 {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60 + seconds))
}

/// `timezone(zone, value)`, the function behind `value AT TIME ZONE zone`: a `timestamp`
/// read as local time in `zone` becomes a `timestamptz`; a `timestamptz` becomes the local
/// `timestamp` in `zone`.
pub(crate) fn timezone(zone: &Datum, value: &Datum) -> Result<Datum> {
    let zone = match zone {
        Datum::Text(text) => zone_named(text)?,
        Datum::Interval(iv) => {
            if iv.months != 0 || iv.days != 0 {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("interval time zone \"{}\" must not include months or days", dt::format_interval(iv)),
                ));
            }
            TimeZone::fixed_numeric((iv.micros / USECS_PER_SEC) as i32)
        }
        other => return Err(Error::internal(format!("timezone() with zone {other:?}"))),
    };
    let (t, to_instant) = match value {
        Datum::Timestamp(local) => (*local, true),
        Datum::TimestampTz(instant) => (*instant, false),
        other => return Err(Error::internal(format!("timezone() of {other:?}"))),
    };
    if !dt::timestamp_is_finite(t) {
        return Ok(if to_instant { Datum::TimestampTz(t) } else { Datum::Timestamp(t) });
    }
    let converted = if to_instant { zone.from_local(t) } else { zone.to_local(t) };
    let converted = converted.filter(|&s| dt::timestamp_in_range(s)).ok_or_else(dt::timestamp_out_of_range)?;
    Ok(if to_instant { Datum::TimestampTz(converted) } else { Datum::Timestamp(converted) })
}

const MONTH_NAMES: [&str; 12] =
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
const DAY_NAMES: [&str; 7] = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];

/// A template pattern of `to_timestamp` / `to_date`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pattern {
    Year4,
    Year2,
    Month,
    MonthName,
    MonthAbbreviation,
    DayName,
    DayAbbreviation,
    DayOfMonth,
    DayOfYear,
    Hour24,
    Hour12,
    Minute,
    Second,
    Millisecond,
    Microsecond,
    Meridiem,
    MeridiemDots,
}

impl Pattern {
    /// Patterns by the text that names them, longest first so `HH24` wins over `HH`.
    const NAMES: &'static [(&'static str, Pattern)] = &[
        ("A.M.", Pattern::MeridiemDots),
        ("P.M.", Pattern::MeridiemDots),
        ("MONTH", Pattern::MonthName),
        ("YYYY", Pattern::Year4),
        ("HH24", Pattern::Hour24),
        ("HH12", Pattern::Hour12),
        ("DDD", Pattern::DayOfYear),
        ("MON", Pattern::MonthAbbreviation),
        ("DAY", Pattern::DayName),
        ("YY", Pattern::Year2),
        ("MM", Pattern::Month),
        ("DD", Pattern::DayOfMonth),
        ("DY", Pattern::DayAbbreviation),
        ("HH", Pattern::Hour12),
        ("MI", Pattern::Minute),
        ("SS", Pattern::Second),
        ("MS", Pattern::Millisecond),
        ("US", Pattern::Microsecond),
        ("AM", Pattern::Meridiem),
        ("PM", Pattern::Meridiem),
    ];

    /// How many digits a numeric field reads at most.
    fn width(self) -> usize {
        match self {
            Pattern::Year4 => 4,
            Pattern::DayOfYear | Pattern::Millisecond => 3,
            Pattern::Microsecond => 6,
            _ => 2,
        }
    }
}

enum Token {
    Field(Pattern, &'static str),
    /// A character to match: a separator, or quoted text.
    Literal(char),
    Space,
}

fn tokenize(format: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = format.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    'outer: while at < chars.len() {
        let rest: String = chars[at..].iter().collect::<String>();
        let upper = rest.to_ascii_uppercase();
        for prefix in ["FM", "FX", "TM"] {
            if upper.starts_with(prefix) {
                at += 2;
                continue 'outer;
            }
        }
        for (name, pattern) in Pattern::NAMES {
            if upper.starts_with(name) {
                tokens.push(Token::Field(*pattern, name));
                at += name.chars().count();
                continue 'outer;
            }
        }
        match chars[at] {
            '"' => {
                at += 1;
                while at < chars.len() && chars[at] != '"' {
                    let c = if chars[at] == '\\' && at + 1 < chars.len() { at += 1; chars[at] } else { chars[at] };
                    tokens.push(Token::Literal(c));
                    at += 1;
                }
                at += 1;
            }
            c if c.is_whitespace() => {
                tokens.push(Token::Space);
                at += 1;
            }
            c if c.is_ascii_alphabetic() => {
                // A letter that starts no pattern PostgreSQL knows weft does not read yet
                // (`Y,YYY`, `IYYY`, `J`, `TZH`, ...); PostgreSQL would treat it as a literal.
                let known = ["D", "Y", "I", "J", "W", "Q", "C", "B", "T", "R", "S", "F", "E"].iter().any(|p| upper.starts_with(p));
                if known {
                    return Err(Error::not_supported(format!("template pattern \"{}\" of to_timestamp / to_date is not supported yet", rest.chars().take(4).collect::<String>())));
                }
                tokens.push(Token::Literal(c));
                at += 1;
            }
            c => {
                tokens.push(Token::Literal(c));
                at += 1;
            }
        }
    }
    Ok(tokens)
}

#[derive(Default)]
struct Parsed {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    day_of_year: Option<i64>,
    hour: Option<i64>,
    twelve_hour: bool,
    pm: Option<bool>,
    minute: i64,
    second: i64,
    micros: i64,
}

fn invalid_value(value: &str, pattern: &str, detail: &str) -> Error {
    Error::new(SqlState::INVALID_DATETIME_FORMAT, format!("invalid value \"{value}\" for \"{pattern}\"")).with_detail(detail)
}

/// Read `input` by `format` into fields (PostgreSQL's `do_to_timestamp` without FX: a
/// separator or space in the format skips any separators or spaces in the input).
fn parse_fields(input: &str, format: &str) -> Result<Parsed> {
    let tokens = tokenize(format)?;
    let chars: Vec<char> = input.chars().collect();
    let mut at = 0;
    let mut parsed = Parsed::default();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::Space => {
                while at < chars.len() && chars[at].is_whitespace() {
                    at += 1;
                }
            }
            Token::Literal(c) => {
                if at < chars.len() && (chars[at] == *c || (!c.is_alphanumeric() && !chars[at].is_alphanumeric())) {
                    at += 1;
                }
            }
            Token::Field(pattern, name) => {
                while at < chars.len() && chars[at].is_whitespace() {
                    at += 1;
                }
                let rest: String = chars[at..].iter().collect();
                match pattern {
                    Pattern::MonthName | Pattern::MonthAbbreviation => {
                        let lower = rest.to_ascii_lowercase();
                        let found = MONTH_NAMES.iter().enumerate().find_map(|(m, full)| {
                            let word = if *pattern == Pattern::MonthName { full } else { &full[..3] };
                            lower.starts_with(word).then_some((m, word.len()))
                        });
                        let (month, len) = found.ok_or_else(|| {
                            invalid_value(&rest.chars().take(3).collect::<String>(), name, "The given value did not match any of the allowed values for this field.")
                        })?;
                        parsed.month = Some(month as i64 + 1);
                        at += len;
                    }
                    Pattern::DayName | Pattern::DayAbbreviation => {
                        let lower = rest.to_ascii_lowercase();
                        let len = DAY_NAMES.iter().find_map(|full| {
                            let word = if *pattern == Pattern::DayName { full } else { &full[..3] };
                            lower.starts_with(word).then_some(word.len())
                        });
                        at += len.ok_or_else(|| {
                            invalid_value(&rest.chars().take(3).collect::<String>(), name, "The given value did not match any of the allowed values for this field.")
                        })?;
                    }
                    Pattern::Meridiem | Pattern::MeridiemDots => {
                        let lower = rest.to_ascii_lowercase();
                        let words: &[(&str, bool)] = if *pattern == Pattern::Meridiem { &[("am", false), ("pm", true)] } else { &[("a.m.", false), ("p.m.", true)] };
                        let (word, pm) = words.iter().find(|(w, _)| lower.starts_with(w)).ok_or_else(|| {
                            invalid_value(&rest.chars().take(2).collect::<String>(), name, "The given value did not match any of the allowed values for this field.")
                        })?;
                        parsed.pm = Some(*pm);
                        at += word.len();
                    }
                    numeric => {
                        // Without a separator before the next field, read at most the
                        // field's width; otherwise every digit up to the separator.
                        let next_is_field = matches!(tokens.get(i + 1), Some(Token::Field(..)));
                        let limit = if next_is_field || *numeric != Pattern::Year4 { numeric.width() } else { usize::MAX };
                        let negative = *numeric == Pattern::Year4 && chars.get(at) == Some(&'-');
                        let start = at + negative as usize;
                        let digits: String = chars[start..].iter().take_while(|c| c.is_ascii_digit()).take(limit).collect();
                        if digits.is_empty() {
                            let shown: String = chars[at..].iter().take(numeric.width()).collect();
                            if shown.is_empty() {
                                return Err(Error::new(SqlState::INVALID_DATETIME_FORMAT, format!("source string too short for \"{name}\" formatting field"))
                                    .with_detail(format!("Field requires {} characters, but only 0 remain.", numeric.width()))
                                    .with_hint("If your source string is not fixed-width, try using the \"FM\" modifier."));
                            }
                            return Err(invalid_value(&shown, name, "Value must be an integer."));
                        }
                        at = start + digits.len();
                        let value: i64 = digits.parse().map_err(|_| invalid_value(&digits, name, "Value must be in the range -2147483648 to 2147483647."))?;
                        let value = if negative { -value } else { value };
                        // Fractional fields count from the point: `SS.MS` of `12.3` is 300 ms.
                        let fraction = |width: u32| value * 10i64.pow(width.saturating_sub(digits.len() as u32));
                        match numeric {
                            Pattern::Year4 => parsed.year = Some(value),
                            Pattern::Year2 => {
                                // PostgreSQL's rule for two-digit years: the one nearest 2020.
                                parsed.year = Some(if value < 70 { 2000 + value } else if value < 100 { 1900 + value } else { value });
                            }
                            Pattern::Month => parsed.month = Some(value),
                            Pattern::DayOfMonth => parsed.day = Some(value),
                            Pattern::DayOfYear => parsed.day_of_year = Some(value),
                            Pattern::Hour24 => parsed.hour = Some(value),
                            Pattern::Hour12 => {
                                parsed.hour = Some(value);
                                parsed.twelve_hour = true;
                            }
                            Pattern::Minute => parsed.minute = value,
                            Pattern::Second => parsed.second = value,
                            Pattern::Millisecond => parsed.micros += fraction(3) * 1000,
                            Pattern::Microsecond => parsed.micros += fraction(6),
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    Ok(parsed)
}

/// `to_timestamp(text, format)` (`with_time` true) or `to_date(text, format)`: the
/// instant as a timestamp in UTC, or the date.
pub(crate) fn to_timestamp_formatted(input: &str, format: &str, with_time: bool) -> Result<i64> {
    let p = parse_fields(input, format)?;
    let out_of_range = || Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("date/time field value out of range: \"{input}\""));
    let mut hour = p.hour.unwrap_or(0);
    if p.twelve_hour || p.pm.is_some() {
        if p.twelve_hour && !(1..=12).contains(&hour) {
            return Err(Error::new(SqlState::INVALID_DATETIME_FORMAT, format!("hour \"{hour}\" is invalid for the 12-hour clock"))
                .with_hint("Use the 24-hour clock, or give an hour between 1 and 12."));
        }
        match p.pm {
            Some(true) if hour < 12 => hour += 12,
            Some(false) if hour == 12 => hour = 0,
            _ => {}
        }
    }
    // Negative years are BC (-1 is 1 BC, astronomical year 0); without a year field the
    // date falls in 1 BC, as PostgreSQL's does.
    let year = match p.year {
        None => 0,
        Some(y) if y < 0 => y + 1,
        Some(y) => y,
    };
    let date = match (p.day_of_year, p.month, p.day) {
        (Some(doy), None, None) => {
            if !(1..=if dt::is_leap(year) { 366 } else { 365 }).contains(&doy) {
                return Err(out_of_range());
            }
            dt::date_from_ymd(year, 1, 1) + doy - 1
        }
        (_, month, day) => {
            let (month, day) = (month.unwrap_or(1), day.unwrap_or(1));
            if !(1..=12).contains(&month) || day < 1 || day > dt::days_in_month(year, month as u32) as i64 {
                return Err(out_of_range());
            }
            dt::date_from_ymd(year, month as u32, day as u32)
        }
    };
    if !(dt::MIN_DATE..dt::END_DATE).contains(&date) {
        return Err(Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("date out of range: \"{input}\"")));
    }
    if !with_time {
        return Ok(date);
    }
    if !(0..=24).contains(&hour) || !(0..60).contains(&p.minute) || !(0..=60).contains(&p.second) {
        return Err(out_of_range());
    }
    let t = date * USECS_PER_DAY + hour * USECS_PER_HOUR + p.minute * USECS_PER_MINUTE + p.second * USECS_PER_SEC + p.micros;
    if !dt::timestamp_in_range(t) {
        return Err(dt::timestamp_out_of_range());
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> i64 {
        dt::parse_timestamp(s, false).unwrap()
    }

    #[test]
    fn justify_like_postgresql() {
        let iv = |s: &str| dt::parse_interval(s, None).unwrap();
        let show = |r: Result<Interval>| dt::format_interval(&r.unwrap());
        assert_eq!(show(justify_days(&iv("35 days"))), "1 mon 5 days");
        assert_eq!(show(justify_interval(&iv("1 mon -1 hour"))), "29 days 23:00:00");
        assert_eq!(show(justify_hours(&iv("-25 hours"))), "-1 days -01:00:00");
        assert_eq!(show(justify_interval(&iv("-1 mon 35 days 25:00"))), "6 days 01:00:00");
    }

    #[test]
    fn date_bin_rounds_down_before_the_origin_too() {
        let stride = Interval::new(0, 0, 15 * USECS_PER_MINUTE);
        assert_eq!(date_bin(&stride, ts("1999-12-31 23:50"), ts("2000-01-01")).unwrap(), ts("1999-12-31 23:45"));
        assert_eq!(date_bin(&stride, ts("2024-01-01 10:07"), ts("2000-01-01")).unwrap(), ts("2024-01-01 10:00"));
        assert!(date_bin(&Interval::new(1, 0, 0), 0, 0).is_err());
    }

    #[test]
    fn fixed_offsets_count_west_in_posix_text_and_east_in_intervals() {
        let local = Datum::Timestamp(ts("2024-01-01 10:00"));
        let at = |zone: Datum| timezone(&zone, &local).unwrap();
        assert_eq!(at(Datum::Text("+02".into())), Datum::TimestampTz(ts("2024-01-01 12:00")));
        assert_eq!(at(Datum::Text("UTC+2".into())), Datum::TimestampTz(ts("2024-01-01 12:00")));
        assert_eq!(at(Datum::Interval(Interval::new(0, 0, 2 * USECS_PER_HOUR))), Datum::TimestampTz(ts("2024-01-01 08:00")));
        assert_eq!(at(Datum::Text("utc".into())), Datum::TimestampTz(ts("2024-01-01 10:00")));
        assert_eq!(timezone(&Datum::Text("Mars/Base".into()), &local).unwrap_err().sqlstate, SqlState::INVALID_PARAMETER_VALUE);
    }

    #[test]
    fn formatted_input() {
        assert_eq!(to_timestamp_formatted("2024-01-05 10:11:12", "YYYY-MM-DD HH24:MI:SS", true).unwrap(), ts("2024-01-05 10:11:12"));
        assert_eq!(to_timestamp_formatted("2024-01-05 10:11 PM", "YYYY-MM-DD HH:MI AM", true).unwrap(), ts("2024-01-05 22:11"));
        assert_eq!(to_timestamp_formatted("05 Jan 2024", "DD Mon YYYY", false).unwrap(), dt::parse_date("2024-01-05").unwrap() as i64);
        assert_eq!(to_timestamp_formatted("20240105", "YYYYMMDD", false).unwrap(), dt::parse_date("2024-01-05").unwrap() as i64);
        assert_eq!(to_timestamp_formatted("2024-13-05", "YYYY-MM-DD", false).unwrap_err().sqlstate, SqlState::DATETIME_FIELD_OVERFLOW);
        assert_eq!(to_timestamp_formatted("2024x01", "YYYY-MM", false).unwrap_err().message, "invalid value \"x0\" for \"MM\"");
    }
}
