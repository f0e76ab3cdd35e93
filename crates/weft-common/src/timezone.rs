//! Time zones: the session's `TimeZone` setting, the zones named inside date/time literals
//! and `AT TIME ZONE`, and PostgreSQL's abbreviation table.
//!
//! Zone rules come from `chrono-tz` (the IANA database compiled in), so results do not
//! depend on the machine's `/usr/share/zoneinfo`. A `timestamptz` stays microseconds since
//! 2000-01-01 UTC; a zone only turns it into local time and back.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use chrono::{Offset, TimeZone as _};
use chrono_tz::{OffsetName, Tz};

use crate::datetime::{Interval, UNIX_EPOCH_DAYS, USECS_PER_DAY, USECS_PER_SEC};
use crate::{Error, Result, SqlState};

thread_local! {
    /// The running statement's session zone on this thread. The session sets it before
    /// each statement and `WorkerPool::run` hands it to its participants, so casts,
    /// operators and output functions — called from many places without a context, plan-
    /// time constant folding among them — read the statement's zone.
    static CURRENT: std::cell::RefCell<TimeZone> = std::cell::RefCell::new(TimeZone::utc());
}

/// Makes `zone` this thread's session zone (see `CURRENT`).
pub fn set_current(zone: TimeZone) {
    CURRENT.with(|c| *c.borrow_mut() = zone);
}

/// This thread's session zone.
pub fn current() -> TimeZone {
    CURRENT.with(|c| c.borrow().clone())
}

/// Runs `f` with this thread's session zone.
pub fn with_current<R>(f: impl FnOnce(&TimeZone) -> R) -> R {
    CURRENT.with(|c| f(&c.borrow()))
}

/// Runs `f` with `zone` as this thread's session zone, then restores the one before (for
/// printing a statement's rows on a thread that did not run it).
pub fn with_zone<R>(zone: &TimeZone, f: impl FnOnce() -> R) -> R {
    let before = CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), zone.clone()));
    let result = f();
    CURRENT.with(|c| *c.borrow_mut() = before);
    result
}

/// A timestamptz as PostgreSQL prints it in `zone` (`2024-07-01 08:00:00-04`).
pub fn format_timestamptz(t: i64, zone: &TimeZone) -> String {
    if !crate::datetime::timestamp_is_finite(t) {
        return crate::datetime::format_timestamp(t, false);
    }
    let offset = zone.offset_at(t);
    let local = t + offset as i64 * USECS_PER_SEC;
    crate::datetime::format_timestamp_offset(local, Some(offset))
}

/// `timestamptz + interval` (`timestamptz_pl_interval`): months and then days are added to
/// the local time of `zone` (so a day keeps the wall-clock time across a change of
/// offset), the rest to the instant.
pub fn timestamptz_add_interval(t: i64, iv: &Interval, zone: &TimeZone) -> Result<i64> {
    use crate::datetime::{timestamp_add_interval, timestamp_in_range, timestamp_is_finite, timestamp_out_of_range};
    if !timestamp_is_finite(t) {
        return Ok(t);
    }
    let mut t = t;
    for step in [Interval::new(iv.months, 0, 0), Interval::new(0, iv.days, 0)] {
        if step.months != 0 || step.days != 0 {
            let local = zone.to_local(t).ok_or_else(timestamp_out_of_range)?;
            let moved = timestamp_add_interval(local, &step)?;
            t = zone.from_local(moved).ok_or_else(timestamp_out_of_range)?;
        }
    }
    t = t.checked_add(iv.micros).ok_or_else(timestamp_out_of_range)?;
    if !timestamp_in_range(t) {
        return Err(timestamp_out_of_range());
    }
    Ok(t)
}

/// A zone's rule: a fixed offset or a zone of the IANA database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// Seconds east of Greenwich.
    Fixed(i32),
    Named(Tz),
}

/// A time zone with the name `SHOW TimeZone` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeZone {
    name: Arc<str>,
    rule: Rule,
    /// The abbreviation of a fixed zone (`to_char`'s `TZ`); empty for a bare offset.
    fixed_abbrev: Arc<str>,
}

impl Default for TimeZone {
    fn default() -> TimeZone {
        TimeZone::utc()
    }
}

/// Seconds since the Unix epoch that chrono can hold: PostgreSQL's timestamps reach
/// further, and the rules at the ends of chrono's range are the last ones anyway.
const CHRONO_MIN_SECS: i64 = -8_210_298_412_800;
const CHRONO_MAX_SECS: i64 = 8_210_266_876_799;

fn unix_secs(t_usecs: i64) -> i64 {
    (t_usecs.div_euclid(USECS_PER_SEC) + UNIX_EPOCH_DAYS * 86_400).clamp(CHRONO_MIN_SECS, CHRONO_MAX_SECS)
}

fn utc_naive(unix: i64) -> chrono::NaiveDateTime {
    chrono::DateTime::from_timestamp(unix, 0).expect("clamped into chrono's range").naive_utc()
}

/// The IANA zones by lower-case name (PostgreSQL looks zone names up ignoring case).
fn zones_by_name() -> &'static HashMap<String, Tz> {
    static ZONES: OnceLock<HashMap<String, Tz>> = OnceLock::new();
    ZONES.get_or_init(|| chrono_tz::TZ_VARIANTS.iter().map(|tz| (tz.name().to_ascii_lowercase(), *tz)).collect())
}

/// An IANA zone by name, ignoring case.
pub fn named_zone(name: &str) -> Option<TimeZone> {
    let tz = *zones_by_name().get(&name.to_ascii_lowercase())?;
    Some(TimeZone { name: tz.name().into(), rule: Rule::Named(tz), fixed_abbrev: "".into() })
}

fn invalid_setting(value: &str) -> Error {
    Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"TimeZone\": \"{value}\""))
}

/// `+05`, `-03:30`, `+05:45:10`: ISO output of an offset east of Greenwich.
pub fn format_offset(east: i32) -> String {
    let sign = if east < 0 { '-' } else { '+' };
    let a = east.unsigned_abs();
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{s:02}"),
    }
}

impl TimeZone {
    pub fn utc() -> TimeZone {
        TimeZone { name: "UTC".into(), rule: Rule::Named(Tz::UTC), fixed_abbrev: "".into() }
    }

    /// A fixed offset east of Greenwich named as PostgreSQL names a numeric or interval
    /// `SET TIME ZONE` (`<+05>-05`).
    pub fn fixed_numeric(east: i32) -> TimeZone {
        let label = format_offset(east);
        let posix = format_offset(-east);
        TimeZone { name: format!("<{label}>{posix}").into(), rule: Rule::Fixed(east), fixed_abbrev: label.into() }
    }

    /// The name `SHOW TimeZone` prints.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The zone's offset east of Greenwich, in seconds, at the instant `t` (a timestamptz).
    pub fn offset_at(&self, t: i64) -> i32 {
        match self.rule {
            Rule::Fixed(east) => east,
            Rule::Named(tz) => tz.offset_from_utc_datetime(&utc_naive(unix_secs(t))).fix().local_minus_utc(),
        }
    }

    /// The abbreviation in use at the instant `t` (`EDT`, `+0545`), as `to_char`'s `TZ`.
    pub fn abbrev_at(&self, t: i64) -> String {
        match self.rule {
            Rule::Fixed(_) => self.fixed_abbrev.to_string(),
            Rule::Named(tz) => {
                let offset = tz.offset_from_utc_datetime(&utc_naive(unix_secs(t)));
                // A zone without a letter abbreviation prints its offset, `+0545` (the
                // IANA database's `%z`; chrono-tz writes `+05:45`).
                match offset.abbreviation() {
                    Some(a) if !a.starts_with(['+', '-']) => a.to_string(),
                    _ => format_offset(offset.fix().local_minus_utc()).replace(':', ""),
                }
            }
        }
    }

    /// A timestamptz as the local time (a timestamp) of this zone.
    pub fn to_local(&self, t: i64) -> Option<i64> {
        t.checked_add(self.offset_at(t) as i64 * USECS_PER_SEC)
    }

    /// The offset that local time `local` (a timestamp) has in this zone. A time that a
    /// change of offset skipped or repeated takes the smaller of the two offsets, the
    /// later instant, as PostgreSQL resolves it (02:30 on a spring-forward day in New York
    /// reads as 02:30 EST = 03:30 EDT; 01:30 on a fall-back day as 01:30 EST).
    pub fn offset_of_local(&self, local: i64) -> i32 {
        let tz = match self.rule {
            Rule::Fixed(east) => return east,
            Rule::Named(tz) => tz,
        };
        let as_utc = unix_secs(local);
        let at = |unix: i64| tz.offset_from_utc_datetime(&utc_naive(unix.clamp(CHRONO_MIN_SECS, CHRONO_MAX_SECS))).fix().local_minus_utc();
        // The offsets around this wall-clock time: no zone changes offset twice in two days.
        let before = at(as_utc - 86_400);
        let after = at(as_utc + 86_400);
        let fits = |o: i32| at(as_utc - o as i64) == o;
        match (fits(before), fits(after)) {
            (true, false) => before,
            (false, true) => after,
            _ => before.min(after),
        }
    }

    /// A local time (timestamp) of this zone as a timestamptz.
    pub fn from_local(&self, local: i64) -> Option<i64> {
        local.checked_sub(self.offset_of_local(local) as i64 * USECS_PER_SEC)
    }
}

/// `SET TimeZone` / `SET TIME ZONE`'s value → the zone, as PostgreSQL's `check_timezone`
/// reads it: `INTERVAL '…'` (an offset east), a number of hours east, an IANA zone name
/// (any case), or a POSIX zone with a fixed offset west (`UTC+3`, `EST5`, `-05:00`).
pub fn parse_setting(value: &str, interval: impl Fn(&str) -> Result<Interval>) -> Result<TimeZone> {
    let trimmed = value.trim();
    let lower = trimmed.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("interval") {
        // `INTERVAL '+02:00' HOUR TO MINUTE`: the quoted part; the field words add nothing
        // an offset of hours and minutes needs.
        let quoted = rest.trim_start();
        let text = quoted.strip_prefix('\'').and_then(|q| q.split_once('\'')).map(|(t, _)| t).ok_or_else(|| invalid_setting(value))?;
        let iv = interval(text)?;
        if iv.months != 0 {
            return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, "invalid interval value for time zone: month not allowed"));
        }
        if iv.days != 0 {
            return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, "invalid interval value for time zone: day not allowed"));
        }
        return fixed_east_seconds(iv.micros / USECS_PER_SEC, value);
    }
    if let Ok(hours) = trimmed.parse::<f64>() {
        if hours.is_finite() {
            return fixed_east_seconds((hours * 3600.0).round() as i64, value);
        }
    }
    if let Some(zone) = named_zone(trimmed) {
        return Ok(zone);
    }
    match parse_posix_fixed(trimmed) {
        Some(PosixZone::Fixed { abbrev, east }) => {
            let name = format!("{}{}", abbrev.to_ascii_uppercase(), &trimmed[abbrev.len()..]);
            Ok(TimeZone { name: name.into(), rule: Rule::Fixed(east), fixed_abbrev: abbrev.to_ascii_uppercase().into() })
        }
        Some(PosixZone::WithRules) => Err(Error::not_supported(format!(
            "time zone \"{trimmed}\" is not supported yet: a POSIX zone with daylight-saving rules"
        ))),
        None => Err(invalid_setting(value)),
    }
}

/// The zone a `TimeZone` setting holds (a name `parse_setting` produced, `<+05>-05` for a
/// numeric zone included); UTC for anything else.
pub fn from_setting_name(name: &str) -> TimeZone {
    if let Some(rest) = name.strip_prefix('<') {
        if let Some((_, posix)) = rest.split_once('>') {
            if let Some(PosixZone::Fixed { east, .. }) = parse_posix_fixed(posix) {
                return TimeZone::fixed_numeric(east);
            }
        }
    }
    parse_setting(name, |_| Err(invalid_setting(name))).unwrap_or_default()
}

fn fixed_east_seconds(east: i64, value: &str) -> Result<TimeZone> {
    // PostgreSQL's limit for a zone's offset (`TZDISP_LIMIT`: 15:59:59).
    if east.abs() >= 16 * 3600 {
        return Err(invalid_setting(value));
    }
    Ok(TimeZone::fixed_numeric(east as i32))
}

enum PosixZone<'a> {
    Fixed { abbrev: &'a str, east: i32 },
    WithRules,
}

/// A POSIX TZ string: an alphabetic abbreviation (three letters or more) or none, then an
/// offset west of Greenwich `[+-]hh[:mm[:ss]]`; anything after it is a daylight-saving
/// part, which weft does not read.
fn parse_posix_fixed(text: &str) -> Option<PosixZone<'_>> {
    let abbrev_len = text.bytes().take_while(u8::is_ascii_alphabetic).count();
    if abbrev_len != 0 && abbrev_len < 3 {
        return None;
    }
    let (abbrev, rest) = text.split_at(abbrev_len);
    let (sign, body) = match rest.as_bytes().first() {
        Some(b'+') => (1, &rest[1..]),
        Some(b'-') => (-1, &rest[1..]),
        Some(c) if c.is_ascii_digit() => (1, rest),
        _ => return None,
    };
    let offset_len = body.bytes().take_while(|b| b.is_ascii_digit() || *b == b':').count();
    let (offset, tail) = body.split_at(offset_len);
    let mut parts = offset.split(':');
    let mut seconds = 0i64;
    for (i, scale) in [3600, 60, 1].into_iter().enumerate() {
        match parts.next() {
            Some(p) if !p.is_empty() && p.len() <= 2 || (i == 0 && !p.is_empty() && p.len() <= 3) => {
                let v: i64 = p.parse().ok()?;
                if i > 0 && v > 59 {
                    return None;
                }
                seconds += v * scale;
            }
            Some(_) => return None,
            None => break,
        }
    }
    if parts.next().is_some() || seconds > 24 * 3600 + 59 * 60 {
        return None;
    }
    if !tail.is_empty() {
        return tail.starts_with(|c: char| c.is_ascii_alphabetic()).then_some(PosixZone::WithRules);
    }
    Some(PosixZone::Fixed { abbrev, east: -(sign * seconds) as i32 })
}

/// A zone named in a date/time literal or in `AT TIME ZONE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiteralZone {
    /// A fixed abbreviation of PostgreSQL's `Default` set, seconds east.
    Offset(i64),
    Zone(TimeZone),
}

/// A word of a date/time literal as a zone: one of PostgreSQL's abbreviations (its
/// `Default` set, which wins over a zone of the same name, as in PostgreSQL) or an IANA
/// zone name. `Ok(None)`: not a zone.
pub fn literal_zone(word: &str) -> Result<Option<LiteralZone>> {
    let upper = word.to_ascii_uppercase();
    if let Ok(i) = ABBREVIATIONS.binary_search_by(|(name, _)| (*name).cmp(upper.as_str())) {
        return Ok(Some(LiteralZone::Offset(ABBREVIATIONS[i].1 as i64)));
    }
    if DYNAMIC_ABBREVIATIONS.contains(&upper.as_str()) {
        return Err(Error::not_supported(format!(
            "time zone abbreviation \"{word}\" is not supported yet: its offset depends on the date"
        )));
    }
    Ok(named_zone(word).map(LiteralZone::Zone))
}

/// `AT TIME ZONE` / `timezone(zone, ...)`'s zone text (PostgreSQL's `timestamptz_zone`):
/// an abbreviation, an IANA name, or a POSIX zone with a fixed offset. `Ok(None)`: none of
/// these (the caller's error).
pub fn zone_for_at_time_zone(text: &str) -> Result<Option<TimeZone>> {
    if let Some(z) = literal_zone(text)? {
        return Ok(Some(match z {
            LiteralZone::Offset(east) => TimeZone::fixed_numeric(east as i32),
            LiteralZone::Zone(zone) => zone,
        }));
    }
    match parse_posix_fixed(text) {
        Some(PosixZone::Fixed { abbrev, east }) => {
            Ok(Some(TimeZone { name: text.into(), rule: Rule::Fixed(east), fixed_abbrev: abbrev.to_ascii_uppercase().into() }))
        }
        Some(PosixZone::WithRules) => Err(Error::not_supported(format!(
            "time zone \"{text}\" is not supported yet: a POSIX zone with daylight-saving rules"
        ))),
        None => Ok(None),
    }
}

/// The local midnight starting `date`'s day (a date → timestamptz cast).
pub fn date_start(zone: &TimeZone, date: i64) -> Option<i64> {
    zone.from_local(date.checked_mul(USECS_PER_DAY)?)
}

/// PostgreSQL 15's `Default` abbreviations with a fixed offset (seconds east), from
/// `SELECT abbrev, extract(epoch FROM utc_offset) FROM pg_timezone_abbrevs` on a
/// PostgreSQL 15 server, less the ones defined by a zone (below). Sorted by name.
const ABBREVIATIONS: &[(&str, i32)] = &[
    ("ACDT", 37800), ("ACSST", 37800), ("ACST", 34200), ("ACT", -18000), ("ACWST", 31500), ("ADT", -10800),
    ("AEDT", 39600), ("AESST", 39600), ("AEST", 36000), ("AFT", 16200), ("AKDT", -28800), ("AKST", -32400),
    ("ALMST", 25200), ("ALMT", 21600), ("AMT", -14400), ("AST", -14400), ("AWSST", 32400), ("AWST", 28800),
    ("AZOST", 0), ("AZOT", -3600), ("BDST", 7200), ("BDT", 21600), ("BNT", 28800), ("BORT", 28800), ("BOT", -14400),
    ("BRA", -10800), ("BRST", -7200), ("BRT", -10800), ("BST", 3600), ("BTT", 21600), ("CADT", 37800), ("CAST", 34200),
    ("CCT", 28800), ("CDT", -18000), ("CEST", 7200), ("CET", 3600), ("CETDST", 7200), ("CHADT", 49500),
    ("CHAST", 45900), ("CHUT", 36000), ("CLST", -10800), ("COT", -18000), ("CST", -21600), ("CXT", 25200),
    ("DDUT", 36000), ("EAT", 10800), ("EDT", -14400), ("EEST", 10800), ("EET", 7200), ("EETDST", 10800), ("EGST", 0),
    ("EGT", -3600), ("EST", -18000), ("FET", 10800), ("FJST", 46800), ("FJT", 43200), ("FNST", -3600), ("FNT", -7200),
    ("GALT", -21600), ("GAMT", -32400), ("GFT", -10800), ("GILT", 43200), ("GMT", 0), ("HKT", 28800), ("HST", -36000),
    ("ICT", 25200), ("IDT", 10800), ("IRT", 12600), ("IST", 7200), ("JAYT", 32400), ("JST", 32400), ("KDT", 36000),
    ("KGST", 21600), ("KST", 32400), ("LHST", 37800), ("LIGT", 36000), ("MART", -34200), ("MDT", -21600),
    ("MEST", 7200), ("MESZ", 7200), ("MET", 3600), ("METDST", 7200), ("MEZ", 3600), ("MHT", 43200), ("MMT", 23400),
    ("MPT", 36000), ("MSD", 14400), ("MST", -25200), ("MUST", 18000), ("MUT", 14400), ("MVT", 18000), ("MYT", 28800),
    ("NDT", -9000), ("NFT", -12600), ("NPT", 20700), ("NST", -12600), ("NZDT", 46800), ("NZST", 43200), ("NZT", 43200),
    ("PDT", -25200), ("PET", -18000), ("PGT", 36000), ("PHT", 28800), ("PKST", 21600), ("PKT", 18000),
    ("PMDT", -7200), ("PMST", -10800), ("PONT", 39600), ("PST", -28800), ("PWT", 32400), ("PYST", -10800),
    ("RET", 14400), ("SADT", 37800), ("SAST", 7200), ("SCT", 14400), ("TAHT", -36000), ("TFT", 18000), ("TJT", 18000),
    ("TOT", 46800), ("TRUT", 36000), ("TVT", 43200), ("UCT", 0), ("ULAST", 32400), ("UT", 0), ("UTC", 0),
    ("UYST", -7200), ("UYT", -10800), ("UZST", 21600), ("UZT", 18000), ("VUT", 39600), ("WADT", 28800),
    ("WAKT", 43200), ("WAST", 25200), ("WAT", 3600), ("WDT", 32400), ("WET", 0), ("WETDST", 3600), ("WFT", 43200),
    ("WGST", -7200), ("WGT", -10800), ("XJT", 21600), ("YAPT", 36000), ("YEKST", 21600), ("Z", 0), ("ZULU", 0),
];

/// The `Default` abbreviations PostgreSQL defines through a zone (`MSK Europe/Moscow`):
/// their offset depends on the date, which weft does not model yet.
const DYNAMIC_ABBREVIATIONS: &[&str] = &[
    "AMST", "ANAST", "ANAT", "ARST", "ART", "AZST", "AZT", "CKT", "CLT", "DAVT", "EASST", "EAST", "FKST", "FKT", "GEST",
    "GET", "GYT", "IOT", "IRKST", "IRKT", "KGT", "KOST", "KRAST", "KRAT", "LHDT", "LINT", "LKT", "MAGST", "MAGT", "MAWT",
    "MSK", "NOVST", "NOVT", "NUT", "OMSST", "OMST", "PETST", "PETT", "PYT", "SGT", "TKT", "TMT", "ULAT", "VET", "VLAST",
    "VLAT", "VOLT", "YAKST", "YAKT", "YEKT",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviations_sorted() {
        assert!(ABBREVIATIONS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(ABBREVIATIONS.len() + DYNAMIC_ABBREVIATIONS.len(), 195);
    }

    fn iv(_: &str) -> Result<Interval> {
        Ok(Interval::new(0, 0, 0))
    }

    #[test]
    fn settings() {
        assert_eq!(parse_setting("america/new_york", iv).unwrap().name(), "America/New_York");
        assert_eq!(parse_setting("5", iv).unwrap().name(), "<+05>-05");
        assert_eq!(parse_setting("-3.5", iv).unwrap().name(), "<-03:30>+03:30");
        assert_eq!(parse_setting("utc+3", iv).unwrap().name(), "UTC+3");
        assert_eq!(parse_setting("utc+3", iv).unwrap().offset_at(0), -3 * 3600);
        assert_eq!(parse_setting("-05:00", iv).unwrap().offset_at(0), 5 * 3600);
        assert!(parse_setting("Mars/Base", iv).is_err());
        assert!(parse_setting("Z", iv).is_err());
    }

    #[test]
    fn dst_gaps_and_overlaps() {
        let ny = named_zone("America/New_York").unwrap();
        let local = |s: &str| crate::datetime::parse_timestamp(s, false).unwrap();
        // Spring forward: 02:30 does not exist, read as EST.
        assert_eq!(ny.offset_of_local(local("2024-03-10 02:30")), -5 * 3600);
        assert_eq!(ny.offset_of_local(local("2024-03-10 03:30")), -4 * 3600);
        // Fall back: 01:30 happens twice, read as EST.
        assert_eq!(ny.offset_of_local(local("2024-11-03 01:30")), -5 * 3600);
        assert_eq!(ny.offset_of_local(local("2024-11-03 00:30")), -4 * 3600);
    }
}
