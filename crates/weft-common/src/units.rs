//! Memory-sized settings as PostgreSQL's GUC machinery reads and shows them.
//!
//! # What
//!
//! `SET work_mem = '64MB'`, `maintenance_work_mem = 1GB` in a configuration file, or a bare
//! `4096` (meaning the setting's own unit: kB for `work_mem`, 8 kB blocks for
//! `shared_buffers`) all go through [`parse_memory`]; `SHOW` prints through
//! [`format_memory`]. The goal is that a user moving between PostgreSQL and weft sees the same
//! accepted inputs, the same rounding, the same error texts and the same `SHOW` output.
//!
//! # PostgreSQL's rules (guc.c `parse_int` / `convert_to_base_unit`), reproduced
//!
//! 1. The number is read as C's `strtol(.., 0)` would — so `0x100` is hexadecimal and `010`
//!    octal — and re-read as a `strtod` float when it stops at `.`, `e` or `E` or overflows.
//! 2. White space may separate number and unit; units are case-sensitive: `B`, `kB`, `MB`,
//!    `GB`, `TB` (1024-based). Anything else gets the HINT listing the valid units. Input with
//!    no number at all (`abc`, the empty string) gets no HINT.
//! 3. A fractional value is first rounded to a whole number of the next smaller unit
//!    (`1.5GB` is `1536MB`), then to a whole number of the setting's unit, both with C's
//!    `rint` (ties to even: `2.5` kB is 2 kB).
//! 4. The result in the setting's unit must fit in a C `int` ("Value exceeds integer range."),
//!    then in the setting's own min..max range.
//! 5. `SHOW` prints the largest unit that divides the value exactly (`4096kB` → `4MB`,
//!    `1536kB` stays), and `0` without a unit.
//!
//! Time settings (`statement_timeout`, `lock_timeout`, in milliseconds) follow the same rules
//! with the units `us`, `ms`, `s`, `min`, `h`, `d` ([`parse_duration_ms_in_range`],
//! [`format_duration_ms`]): `SET statement_timeout = '30s'` shows `30s`, `1500` shows
//! `1500ms`.
//!
//! Departure: PostgreSQL's `strtod` also reads hexadecimal floats (`0x1.8p1`); weft does not.
//! A value quoted as in SQL (`'64kB'`) is accepted and unquoted, so configuration-file and
//! SQL spellings both work.

use crate::{Error, Result, SqlState};

/// One kilobyte, the unit of `work_mem` and `maintenance_work_mem`.
pub const KILOBYTE_BYTES: usize = 1024;
/// One megabyte.
pub const MEGABYTE_BYTES: usize = 1024 * 1024;
/// One page (block), the unit of `shared_buffers`.
pub const BLOCK_BYTES: usize = 8192;

/// PostgreSQL's longest memory unit name (`MAX_UNIT_LEN`).
const UNIT_NAME_LENGTH_MAX: usize = 3;

/// A unit name and its size in the table's smallest unit (bytes; microseconds for time).
type UnitTable = [(&'static str, u64)];

const MEMORY_UNITS: [(&str, u64); 5] = [("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10), ("B", 1)];

const MEMORY_UNITS_HINT: &str = "Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".";

/// Time units in microseconds, largest first (PostgreSQL's table for millisecond settings).
const TIME_UNITS: [(&str, u64); 6] =
    [("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000), ("s", 1_000_000), ("ms", 1_000), ("us", 1)];

const TIME_UNITS_HINT: &str = "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".";

const MICROSECONDS_PER_MILLISECOND: u64 = 1_000;

fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// Parse a memory setting into bytes: a multiple of `default_unit_bytes`, between 0 and
/// `i32::MAX` units. `parameter` names the setting in error messages.
pub fn parse_memory(value: &str, default_unit_bytes: usize, parameter: &str) -> Result<usize> {
    parse_memory_in_range(value, default_unit_bytes, parameter, 0, i32::MAX as i64)
}

/// [`parse_memory`] with the setting's own bounds, in its unit (for `work_mem`, 64 ..
/// 2147483647 kB), reported as PostgreSQL does:
/// `-1 kB is outside the valid range for parameter "work_mem" (64 .. 2147483647)`.
pub fn parse_memory_in_range(
    value: &str,
    default_unit_bytes: usize,
    parameter: &str,
    min_units: i64,
    max_units: i64,
) -> Result<usize> {
    assert!(default_unit_bytes > 0, "a memory setting's unit must be at least one byte");
    let unit = MemoryOrTime::Memory(default_unit_bytes);
    let units = parse_setting(value, parameter, unit, min_units, max_units)?;
    usize::try_from(units)
        .ok()
        .and_then(|units| units.checked_mul(default_unit_bytes))
        .ok_or_else(|| invalid_value(unquote(value), parameter))
}

/// Parse a time setting whose unit is the millisecond (`statement_timeout`, `lock_timeout`):
/// a bare number is milliseconds, `30s`, `1.5min`, `500us` (rounded to 1 ms, ties to even)
/// convert; the result must lie in `min_ms ..= max_ms`, reported as PostgreSQL does:
/// `-1 ms is outside the valid range for parameter "statement_timeout" (0 .. 2147483647)`.
pub fn parse_duration_ms_in_range(value: &str, parameter: &str, min_ms: i64, max_ms: i64) -> Result<i64> {
    parse_setting(value, parameter, MemoryOrTime::Time, min_ms, max_ms)
}

/// The unit a setting is kept in: a memory setting's (in bytes), or the millisecond.
#[derive(Clone, Copy)]
enum MemoryOrTime {
    Memory(usize),
    Time,
}

/// A setting's value in its own unit, checked against `min ..= max` (both in that unit),
/// with PostgreSQL's error texts.
fn parse_setting(value: &str, parameter: &str, unit: MemoryOrTime, min: i64, max: i64) -> Result<i64> {
    let value = unquote(value);
    let (base_unit, table, hint, unit_label): (u64, &UnitTable, _, _) = match unit {
        MemoryOrTime::Memory(bytes) => (bytes as u64, &MEMORY_UNITS, MEMORY_UNITS_HINT, unit_name(bytes)),
        MemoryOrTime::Time => (MICROSECONDS_PER_MILLISECOND, &TIME_UNITS, TIME_UNITS_HINT, "ms".to_string()),
    };
    let number = parse_units(value, base_unit, table, hint).map_err(|hint| match hint {
        Some(hint) => invalid_value(value, parameter).with_hint(hint),
        None => invalid_value(value, parameter),
    })?;
    if number < min || number > max {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("{number} {unit_label} is outside the valid range for parameter \"{parameter}\" ({min} .. {max})"),
        ));
    }
    Ok(number)
}

fn invalid_value(value: &str, parameter: &str) -> Error {
    Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"{parameter}\": \"{value}\""))
}

/// A millisecond setting as `SHOW` prints it: the largest unit that divides it exactly
/// (`30s`, `1min`, `1500ms`), `0` for zero.
pub fn format_duration_ms(ms: i64) -> String {
    let units_ms: Vec<(&str, u64)> = TIME_UNITS
        .iter()
        .filter(|&&(_, us)| us >= MICROSECONDS_PER_MILLISECOND)
        .map(|&(name, us)| (name, us / MICROSECONDS_PER_MILLISECOND))
        .collect();
    let sign = if ms < 0 { "-" } else { "" };
    format!("{sign}{}", format_in_units(ms.unsigned_abs(), &units_ms, "ms"))
}

/// `amount` (in `units`' smallest unit) in the largest unit that divides it exactly, `0`
/// for zero; `fallback` names `amount`'s own unit, for when none of `units` divides it.
fn format_in_units(amount: u64, units: &UnitTable, fallback: &str) -> String {
    if amount == 0 {
        return "0".to_string();
    }
    match units.iter().find(|&&(_, size)| amount.is_multiple_of(size)) {
        Some(&(name, size)) => format!("{}{name}", amount / size),
        None => format!("{amount}{fallback}"),
    }
}

/// `'64kB'` → `64kB`: surrounding white space and one pair of single quotes go.
fn unquote(value: &str) -> &str {
    let trimmed = value.trim_matches(is_c_space);
    trimmed
        .strip_prefix('\'')
        .and_then(|inner| inner.strip_suffix('\''))
        .unwrap_or(value)
}

/// The setting's value in its own unit (`base_unit` in the table's smallest unit), or the
/// HINT to give (`None`: no hint).
fn parse_units(
    value: &str,
    base_unit: u64,
    units: &UnitTable,
    units_hint: &'static str,
) -> std::result::Result<i64, Option<&'static str>> {
    let (mut number, mut end, overflowed) = c_strtol(value);
    if overflowed || matches!(value.as_bytes().get(end), Some(b'.' | b'e' | b'E')) {
        (number, end) = c_strtod(value);
    }
    if end == 0 || !number.is_finite() {
        return Err(None);
    }
    let rest = value[end..].trim_start_matches(is_c_space);
    if !rest.is_empty() {
        number = convert_to_base_unit(number, rest, base_unit, units).ok_or(Some(units_hint))?;
    }
    let number = number.round_ties_even();
    if number > i32::MAX as f64 || number < i32::MIN as f64 {
        return Err(Some("Value exceeds integer range."));
    }
    Ok(number as i64)
}

/// `number` given in `unit_text` (a unit name of `units`, optionally followed by white
/// space), in units of `base_unit`, rounded to a whole number of the next smaller unit.
fn convert_to_base_unit(number: f64, unit_text: &str, base_unit: u64, units: &UnitTable) -> Option<f64> {
    let name_end = unit_text.find(is_c_space).unwrap_or(unit_text.len());
    let (name, trailing) = unit_text.split_at(name_end);
    if name.len() > UNIT_NAME_LENGTH_MAX || !trailing.trim_start_matches(is_c_space).is_empty() {
        return None;
    }
    let position = units.iter().position(|&(unit, _)| unit == name)?;
    let multiplier = units[position].1 as f64 / base_unit as f64;
    let converted = number * multiplier;
    Some(match units.get(position + 1) {
        Some(&(_, smaller)) => {
            let smaller_multiplier = smaller as f64 / base_unit as f64;
            (converted / smaller_multiplier).round_ties_even() * smaller_multiplier
        }
        None => converted,
    })
}

/// C's `strtol(s, &end, 0)` on a 64-bit `long`: (value, bytes consumed or 0 if none,
/// overflowed).
fn c_strtol(s: &str) -> (f64, usize, bool) {
    let bytes = s.as_bytes();
    let mut at = s.len() - s.trim_start_matches(is_c_space).len();
    let negative = bytes.get(at) == Some(&b'-');
    if matches!(bytes.get(at), Some(b'+' | b'-')) {
        at += 1;
    }
    let hex_prefix = bytes.get(at) == Some(&b'0')
        && matches!(bytes.get(at + 1), Some(b'x' | b'X'))
        && bytes.get(at + 2).is_some_and(|b| b.is_ascii_hexdigit());
    let radix: u32 = if hex_prefix {
        at += 2;
        16
    } else if bytes.get(at) == Some(&b'0') {
        8
    } else {
        10
    };
    let digits_start = at;
    let mut magnitude: u64 = 0;
    let mut overflowed = false;
    while let Some(digit) = bytes.get(at).and_then(|&b| (b as char).to_digit(radix)) {
        match magnitude.checked_mul(radix as u64).and_then(|m| m.checked_add(digit as u64)) {
            Some(m) => magnitude = m,
            None => overflowed = true,
        }
        at += 1;
    }
    if at == digits_start {
        return (0.0, 0, false);
    }
    let limit = if negative { 1u64 << 63 } else { i64::MAX as u64 };
    overflowed |= magnitude > limit;
    let value = if negative { -(magnitude as f64) } else { magnitude as f64 };
    (value, at, overflowed)
}

/// C's `strtod` for decimal input: (value, bytes consumed or 0 if none).
fn c_strtod(s: &str) -> (f64, usize) {
    let bytes = s.as_bytes();
    let start = s.len() - s.trim_start_matches(is_c_space).len();
    let mut at = start;
    if matches!(bytes.get(at), Some(b'+' | b'-')) {
        at += 1;
    }
    let count_digits = |from: usize| bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let integer_digits = count_digits(at);
    at += integer_digits;
    let mut fraction_digits = 0;
    if bytes.get(at) == Some(&b'.') {
        fraction_digits = count_digits(at + 1);
        if integer_digits + fraction_digits > 0 {
            at += 1 + fraction_digits;
        }
    }
    if integer_digits + fraction_digits == 0 {
        return (0.0, 0);
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        let mut exponent_at = at + 1;
        if matches!(bytes.get(exponent_at), Some(b'+' | b'-')) {
            exponent_at += 1;
        }
        let exponent_digits = count_digits(exponent_at);
        if exponent_digits > 0 {
            at = exponent_at + exponent_digits;
        }
    }
    match s[start..at].parse::<f64>() {
        Ok(value) => (value, at),
        Err(_) => (0.0, 0),
    }
}

/// How `SHOW` names a setting's unit in range errors: `kB`, `MB`, `8kB`, `B`.
fn unit_name(unit_bytes: usize) -> String {
    match unit_bytes {
        1 => "B".to_string(),
        KILOBYTE_BYTES => "kB".to_string(),
        MEGABYTE_BYTES => "MB".to_string(),
        _ if unit_bytes.is_multiple_of(KILOBYTE_BYTES) => format!("{}kB", unit_bytes / KILOBYTE_BYTES),
        _ => format!("{unit_bytes}B"),
    }
}

/// A memory size as `SHOW` prints it: the largest unit that divides it exactly (`4MB`,
/// `1536kB`), `0` for zero.
pub fn format_memory(bytes: usize) -> String {
    format_in_units(bytes as u64, &MEMORY_UNITS, "B")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work_mem(value: &str) -> Result<usize> {
        parse_memory_in_range(value, KILOBYTE_BYTES, "work_mem", 64, i32::MAX as i64)
    }

    fn shown(value: &str) -> String {
        format_memory(work_mem(value).unwrap())
    }

    #[test]
    fn accepted_values_match_postgres() {
        // SET work_mem = ...; SHOW work_mem on PostgreSQL 15.18.
        let cases = [
            ("64kB", "64kB"),
            (" 64kB ", "64kB"),
            ("'64kB'", "64kB"),
            ("  '64kB'  ", "64kB"),
            ("4MB", "4MB"),
            ("1GB", "1GB"),
            ("1TB", "1TB"),
            ("8192", "8MB"),
            ("1.5MB", "1536kB"),
            ("0x100", "256kB"),
            ("64 kB", "64kB"),
            ("1e3", "1000kB"),
            ("2047.9999MB", "2GB"),
            ("+64", "64kB"),
            ("1.5GB", "1536MB"),
            ("64.5", "64kB"),
            ("65.5", "66kB"),
            ("0.0625MB", "64kB"),
            ("100000 B", "98kB"),
            ("65536B", "64kB"),
            ("65537B", "64kB"),
            ("65.5kB", "66kB"),
        ];
        for (input, expected) in cases {
            assert_eq!(shown(input), expected, "SET work_mem = {input:?}");
        }
        assert_eq!(work_mem("4MB").unwrap(), 4 * MEGABYTE_BYTES);
        assert_eq!(parse_memory("128MB", BLOCK_BYTES, "shared_buffers").unwrap(), 128 * MEGABYTE_BYTES);
        assert_eq!(parse_memory("1000", BLOCK_BYTES, "shared_buffers").unwrap(), 1000 * BLOCK_BYTES);
        assert_eq!(parse_memory("010", KILOBYTE_BYTES, "work_mem").unwrap(), 8 * KILOBYTE_BYTES);
    }

    #[test]
    fn errors_match_postgres() {
        let no_hint = ["abc", "", "  ", "1e999"];
        for input in no_hint {
            let err = work_mem(input).unwrap_err();
            assert_eq!(err.sqlstate, SqlState::INVALID_PARAMETER_VALUE);
            assert_eq!(err.message, format!("invalid value for parameter \"work_mem\": \"{input}\""));
            assert_eq!(err.hint, None, "{input:?}");
        }
        for input in ["08kB", "64kb", "64kB x", "0x", "1e", "64 kilobytes"] {
            let err = work_mem(input).unwrap_err();
            assert_eq!(err.message, format!("invalid value for parameter \"work_mem\": \"{input}\""));
            assert_eq!(err.hint.as_deref(), Some(MEMORY_UNITS_HINT), "{input:?}");
        }
        let err = work_mem("'abc'").unwrap_err();
        assert_eq!(err.message, "invalid value for parameter \"work_mem\": \"abc\"");
        let err = work_mem("99999999TB").unwrap_err();
        assert_eq!(err.hint.as_deref(), Some("Value exceeds integer range."));
        let out_of_range = [
            ("010", "8 kB"),
            ("1.5", "2 kB"),
            ("2.5", "2 kB"),
            ("100B", "0 kB"),
            ("1025B", "1 kB"),
            ("-1", "-1 kB"),
        ];
        for (input, shown) in out_of_range {
            let err = work_mem(input).unwrap_err();
            assert_eq!(err.sqlstate, SqlState::INVALID_PARAMETER_VALUE);
            assert_eq!(err.message, format!("{shown} is outside the valid range for parameter \"work_mem\" (64 .. 2147483647)"));
        }
    }

    #[test]
    fn durations_match_postgres() {
        // PostgreSQL 15's SET statement_timeout = ...; SHOW statement_timeout.
        let shown = |value: &str| parse_duration_ms_in_range(value, "statement_timeout", 0, i32::MAX as i64).map(format_duration_ms);
        for (value, expected) in [
            ("30s", "30s"), ("1500", "1500ms"), ("1.5s", "1500ms"), ("1min", "1min"), ("90s", "90s"), ("2h", "2h"),
            ("1d", "1d"), ("0", "0"), ("100us", "0"), ("1500us", "2ms"), ("2.5", "2ms"), ("0.6", "1ms"),
            ("10 s", "10s"), ("'30s'", "30s"), ("60000", "1min"),
        ] {
            assert_eq!(shown(value).unwrap(), expected, "{value}");
        }
        let error = |value: &str| shown(value).unwrap_err();
        assert_eq!(error("lots").message, "invalid value for parameter \"statement_timeout\": \"lots\"");
        assert_eq!(error("lots").hint, None);
        assert_eq!(error("1S").hint.as_deref(), Some(TIME_UNITS_HINT));
        assert_eq!(error("-1").message, "-1 ms is outside the valid range for parameter \"statement_timeout\" (0 .. 2147483647)");
        assert_eq!(error("3000000000").hint.as_deref(), Some("Value exceeds integer range."));
    }

    #[test]
    fn show_prints_largest_exact_unit() {
        assert_eq!(format_memory(4096 * KILOBYTE_BYTES), "4MB");
        assert_eq!(format_memory(65536 * KILOBYTE_BYTES), "64MB");
        assert_eq!(format_memory(1536 * KILOBYTE_BYTES), "1536kB");
        assert_eq!(format_memory(16384 * BLOCK_BYTES), "128MB");
        assert_eq!(format_memory(BLOCK_BYTES), "8kB");
        assert_eq!(format_memory(1 << 40), "1TB");
        assert_eq!(format_memory(1000), "1000B");
        assert_eq!(format_memory(0), "0");
    }
}
