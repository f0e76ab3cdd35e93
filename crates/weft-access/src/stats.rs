//! Planner statistics of a table, as `ANALYZE` leaves them (PostgreSQL's `pg_statistic`
//! and `pg_class.reltuples`, reduced to what weft's planner reads).
//!
//! They live in the catalog (`Catalog::statistics`, keyed by the table's oid, so a dropped
//! table's statistics are never read by a new table of the same name) and are published
//! with it. Values are kept as typed [`Datum`]s in memory and as small tagged JSON values
//! on disk (`{"i4": 5}`, `{"f8": "NaN"}`, `{"t": "abc"}`): float8 goes through its text
//! form so NaN and infinities survive JSON.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use weft_common::numeric::Numeric;
use weft_common::types::format_float8;
use weft_common::Datum;

/// What ANALYZE found about a table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableStats {
    /// Live rows when the table was analyzed (its `row_count` then).
    pub rows: u64,
    /// Rows in the sample the column statistics were computed from (all of them for a
    /// table of at most `ANALYZE_SAMPLE_ROWS` rows).
    pub sample_rows: u64,
    /// Heap pages when analyzed.
    pub pages: u32,
    /// One entry per table column, in column order.
    pub columns: Vec<ColumnStats>,
    /// Per index name: what a sample of its entries showed.
    #[serde(default)]
    pub indexes: BTreeMap<String, IndexStats>,
}

/// One column's statistics (`pg_stats`' columns of the same names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnStats {
    /// Fraction of rows whose value is NULL.
    pub null_frac: f64,
    /// Average width in bytes of the non-null values.
    pub avg_width: f64,
    /// PostgreSQL's convention: > 0 is a number of distinct non-null values; < 0 is minus
    /// that number divided by the table's rows (it grows with the table); 0 is unknown.
    pub n_distinct: f64,
    /// Most common values, most common first, and the fraction of all rows (NULLs
    /// included in the denominator) each one makes up.
    pub most_common_vals: Vec<StatValue>,
    pub most_common_freqs: Vec<f64>,
    /// Equi-depth histogram bounds over the non-null values not in the MCV list, in
    /// ascending order (at least two when present).
    pub histogram_bounds: Vec<StatValue>,
    /// Correlation between the physical order of rows and the ascending order of the
    /// column's values (-1..1); `None` with fewer than two non-null values.
    pub correlation: Option<f64>,
}

/// What a sample of an index's entries showed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexStats {
    /// Fraction of the sampled entries added after the build (their heap row must be
    /// visited to check visibility, even by an index-only scan).
    pub heap_check_frac: f64,
    /// Entries sampled.
    pub sampled: u64,
}

impl ColumnStats {
    /// The number of distinct non-null values in a table of `rows` rows.
    pub fn distinct_values(&self, rows: f64) -> Option<f64> {
        if self.n_distinct > 0.0 {
            Some(self.n_distinct)
        } else if self.n_distinct < 0.0 {
            Some((-self.n_distinct * rows).max(1.0))
        } else {
            None
        }
    }
}

/// A statistics value: a non-null [`Datum`] that serializes as a small tagged object.
#[derive(Clone, Debug, PartialEq)]
pub struct StatValue(pub Datum);

#[derive(Serialize, Deserialize)]
enum Tagged {
    #[serde(rename = "b")]
    Bool(bool),
    #[serde(rename = "i4")]
    Int4(i32),
    #[serde(rename = "i8")]
    Int8(i64),
    #[serde(rename = "f8")]
    Float8(String),
    #[serde(rename = "n")]
    Numeric(String),
    #[serde(rename = "t")]
    Text(String),
    #[serde(rename = "null")]
    Null,
    #[serde(rename = "date")]
    Date(i32),
    #[serde(rename = "time")]
    Time(i64),
    #[serde(rename = "ts")]
    Timestamp(i64),
    #[serde(rename = "tstz")]
    TimestampTz(i64),
    /// months, days, microseconds.
    #[serde(rename = "iv")]
    Interval(i32, i32, i64),
}

impl Serialize for StatValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tagged = match &self.0 {
            Datum::Null => Tagged::Null,
            Datum::Bool(b) => Tagged::Bool(*b),
            Datum::Int4(v) => Tagged::Int4(*v),
            Datum::Int8(v) => Tagged::Int8(*v),
            Datum::Float8(v) => Tagged::Float8(format_float8(*v)),
            Datum::Numeric(n) => Tagged::Numeric(n.to_string()),
            Datum::Text(s) => Tagged::Text(s.clone()),
            Datum::Date(v) => Tagged::Date(*v),
            Datum::Time(v) => Tagged::Time(*v),
            Datum::Timestamp(v) => Tagged::Timestamp(*v),
            Datum::TimestampTz(v) => Tagged::TimestampTz(*v),
            Datum::Interval(iv) => Tagged::Interval(iv.months, iv.days, iv.micros),
            // ANALYZE keeps no statistics of array columns (weft-sql `analyze.rs`).
            Datum::Array(_) => Tagged::Null,
        };
        tagged.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StatValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(StatValue(match Tagged::deserialize(deserializer)? {
            Tagged::Null => Datum::Null,
            Tagged::Bool(b) => Datum::Bool(b),
            Tagged::Int4(v) => Datum::Int4(v),
            Tagged::Int8(v) => Datum::Int8(v),
            Tagged::Float8(s) => Datum::Float8(parse_float8(&s).ok_or_else(|| D::Error::custom(format!("bad float8 {s:?}")))?),
            Tagged::Numeric(s) => Datum::Numeric(Numeric::parse(&s).map_err(|e| D::Error::custom(&e.message))?),
            Tagged::Text(s) => Datum::Text(s),
            Tagged::Date(v) => Datum::Date(v),
            Tagged::Time(v) => Datum::Time(v),
            Tagged::Timestamp(v) => Datum::Timestamp(v),
            Tagged::TimestampTz(v) => Datum::TimestampTz(v),
            Tagged::Interval(m, d, us) => Datum::Interval(weft_common::datetime::Interval::new(m, d, us)),
        }))
    }
}

fn parse_float8(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        other => other.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_json() {
        let values = vec![
            StatValue(Datum::Bool(true)),
            StatValue(Datum::Int4(-7)),
            StatValue(Datum::Int8(i64::MIN)),
            StatValue(Datum::Float8(f64::INFINITY)),
            StatValue(Datum::Float8(-0.1)),
            StatValue(Datum::Float8(1e300)),
            StatValue(Datum::Numeric(Numeric::parse("12.340").unwrap())),
            StatValue(Datum::Text("a\"b".into())),
        ];
        let json = serde_json::to_string(&values).unwrap();
        let back: Vec<StatValue> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, values);
        let nan: StatValue = serde_json::from_str(&serde_json::to_string(&StatValue(Datum::Float8(f64::NAN))).unwrap()).unwrap();
        assert!(matches!(nan.0, Datum::Float8(v) if v.is_nan()));
    }

    #[test]
    fn distinct_values_follow_postgres_convention() {
        let mut c = ColumnStats {
            null_frac: 0.0,
            avg_width: 4.0,
            n_distinct: -0.5,
            most_common_vals: vec![],
            most_common_freqs: vec![],
            histogram_bounds: vec![],
            correlation: None,
        };
        assert_eq!(c.distinct_values(1000.0), Some(500.0));
        c.n_distinct = 42.0;
        assert_eq!(c.distinct_values(1000.0), Some(42.0));
        c.n_distinct = 0.0;
        assert_eq!(c.distinct_values(1000.0), None);
    }
}
