//! Binding of the date/time syntax sqlparser gives its own nodes: type names (`timestamp
//! [without | with time zone]`, `time`, `interval`) and `INTERVAL '…' [unit]` literals.

use sqlparser::ast;
use weft_common::datetime::{self as dt, Interval, IntervalUnit};
use weft_common::{DataType, Datum, Error, Result, TypeModifier};
use weft_exec::expr::Expr;

/// A date/time type name → weft's type. Precisions below microseconds and interval
/// field restrictions change values, and are not supported yet.
pub fn sql_type(data_type: &ast::DataType) -> Result<(DataType, Option<TypeModifier>)> {
    use ast::DataType as T;
    use ast::TimezoneInfo as Z;
    let precision_ok = |p: &Option<u64>, name: &str| match p {
        Some(p) if *p < 6 => Err(Error::not_supported(format!("{name}({p}) is not supported yet"))),
        _ => Ok(()),
    };
    match data_type {
        T::Date => Ok((DataType::Date, None)),
        T::Timestamp(p, Z::None | Z::WithoutTimeZone) => {
            precision_ok(p, "timestamp")?;
            Ok((DataType::Timestamp, None))
        }
        T::Timestamp(p, _) => {
            precision_ok(p, "timestamptz")?;
            Ok((DataType::TimestampTz, None))
        }
        T::Time(p, Z::None | Z::WithoutTimeZone) => {
            precision_ok(p, "time")?;
            Ok((DataType::Time, None))
        }
        T::Time(..) => Err(Error::not_supported("type time with time zone is not supported yet")),
        T::Interval { fields: None, precision } => {
            precision_ok(precision, "interval")?;
            Ok((DataType::Interval, None))
        }
        T::Interval { .. } => Err(Error::not_supported("interval field restrictions are not supported yet")),
        other => Err(Error::internal(format!("{other} is not a date/time type"))),
    }
}

fn unit_of(field: &ast::DateTimeField) -> Option<IntervalUnit> {
    IntervalUnit::from_word(&field.to_string().to_ascii_lowercase())
}

/// `INTERVAL '…'` and `INTERVAL '…' unit`: a bare number counts in the unit, and the
/// fields below it are dropped (PostgreSQL's `AdjustIntervalForTypmod`).
pub fn interval_literal(interval: &ast::Interval, bind: impl FnOnce(&ast::Expr) -> Result<Expr>) -> Result<Expr> {
    if interval.last_field.is_some() || interval.leading_precision.is_some() || interval.fractional_seconds_precision.is_some() {
        return Err(Error::not_supported("interval field restrictions are not supported yet"));
    }
    let text = match interval.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            _ => None.ok_or_else(|| Error::syntax(format!("syntax error at or near \"{}\"", v)))?,
        },
        other => {
            // `INTERVAL (expr)`: a cast of the value.
            let bound = bind(other)?;
            return weft_exec::expr::coerce(bound, DataType::Interval, true);
        }
    };
    let unit = match &interval.leading_field {
        None => None,
        Some(field) => {
            Some(unit_of(field).ok_or_else(|| Error::not_supported(format!("INTERVAL ... {field} is not supported yet")))?)
        }
    };
    let mut value = dt::parse_interval(&text, unit)?;
    if let Some(unit) = unit {
        value = restrict(value, unit);
    }
    Ok(Expr::Literal { value: Datum::Interval(value), data_type: DataType::Interval })
}

/// Drops the fields below `unit`.
fn restrict(iv: Interval, unit: IntervalUnit) -> Interval {
    use IntervalUnit::*;
    let keep = |per: i64| iv.micros / per * per;
    match unit {
        Year | Decade | Century | Millennium => Interval::new(iv.months / 12 * 12, 0, 0),
        Month => Interval::new(iv.months, 0, 0),
        Day | Week => Interval::new(iv.months, iv.days, 0),
        Hour => Interval::new(iv.months, iv.days, keep(dt::USECS_PER_HOUR)),
        Minute => Interval::new(iv.months, iv.days, keep(dt::USECS_PER_MINUTE)),
        Second | Millisecond | Microsecond => iv,
    }
}

/// `SET TimeZone` / `SET TIME ZONE`: the zone's name as `SHOW` prints it (see
/// `weft_common::timezone::parse_setting`); `LOCAL` and `DEFAULT` are weft's default, UTC.
pub fn time_zone_setting(value: &str) -> Result<String> {
    let plain = value.trim_matches('\'');
    if plain.eq_ignore_ascii_case("local") || plain.eq_ignore_ascii_case("default") {
        return Ok("UTC".into());
    }
    let zone = weft_common::timezone::parse_setting(plain, |text| dt::parse_interval(text, None))?;
    Ok(zone.name().to_string())
}

/// `SET DateStyle`: output is ISO and input reads month before day, PostgreSQL's default;
/// other styles are refused rather than ignored.
pub fn date_style_setting(value: &str) -> Result<String> {
    let parts: Vec<String> = value.split(',').map(|p| p.trim().trim_matches('\'').to_ascii_lowercase()).collect();
    if parts.iter().all(|p| matches!(p.as_str(), "iso" | "mdy" | "us" | "noneuropean" | "default")) {
        return Ok("ISO, MDY".into());
    }
    Err(Error::not_supported(format!("DateStyle \"{value}\" is not supported yet: weft uses ISO, MDY")))
}
