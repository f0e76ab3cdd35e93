//! Type modifiers: what `numeric(6,2)`, `varchar(3)`, `char(4)` and `smallint` add to the
//! type weft stores the value in.
//!
//! # Why a modifier and not more types
//!
//! PostgreSQL keeps a column's `atttypmod` next to its type: `numeric(6,2)` is the type
//! `numeric` with modifier (6, 2), `varchar(3)` is `varchar` with length 3. weft does the same
//! with [`TypeModifier`], and also uses it for the PostgreSQL types it stores in a wider one:
//! `varchar` and `bpchar` values are `text`, a `smallint` is an `int4` whose range is checked.
//! [`DataType`] — the sort keys, tuple format and hashing of ~40 files — stays as it is; the
//! modifier only decides which values may be stored and how they are shown by `\d`.
//!
//! # Applying one (PostgreSQL's length-coercion functions)
//!
//! [`TypeModifier::apply`] is PostgreSQL's `numeric(numeric, int4)`, `varchar(varchar, int4,
//! bool)`, `bpchar(bpchar, int4, bool)` and `int4::int2` in one place:
//!
//! 1. `numeric(p, s)`: round half away from zero to `s` digits after the point (a negative `s`
//!    rounds left of it), then the rounded value must be below `10^(p - s)` in absolute value,
//!    else 22003 `numeric field overflow` with PostgreSQL's DETAIL. The result shows exactly
//!    `max(s, 0)` digits after the point (`1` → `1.00`).
//! 2. `varchar(n)` / `char(n)`: length in characters, not bytes. A longer value is cut to `n`
//!    characters by an explicit cast; stored into a column it is cut only when the excess is
//!    all spaces, else 22001 `value too long for type character varying(n)`.
//! 3. `smallint`: 22003 `smallint out of range` outside −32768..=32767.
//!
//! NULL passes through every modifier.
//!
//! # Departures
//! `char(n)` is not blank-padded: `'ab'::char(4)` is `ab`, not `ab  `, and trailing spaces
//! are significant in comparisons (PostgreSQL ignores them for `bpchar`).

use crate::numeric::Numeric;
use crate::{DataType, Datum, Error, Result, SqlState};

/// Largest precision `numeric(p, s)` accepts (PostgreSQL's `NUMERIC_MAX_PRECISION`).
pub const NUMERIC_PRECISION_MAX: i64 = 1000;
/// Smallest and largest scale `numeric(p, s)` accepts (`NUMERIC_MIN_SCALE` / `NUMERIC_MAX_SCALE`).
pub const NUMERIC_SCALE_MIN: i64 = -1000;
pub const NUMERIC_SCALE_MAX: i64 = 1000;
/// Largest length of `varchar(n)` / `char(n)` (PostgreSQL's `MaxAttrSize`, 10 MB).
pub const CHAR_LENGTH_MAX: i64 = 10 * 1024 * 1024;

/// A column's or cast's modifier of its stored type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum TypeModifier {
    /// `numeric(precision, scale)`; `numeric(p)` is scale 0. Stored as `numeric`.
    Numeric { precision: u16, scale: i16 },
    /// `character varying [(max_chars)]`. Stored as `text`.
    Varchar { max_chars: Option<u32> },
    /// `character [(max_chars)]` (`char` alone is `char(1)`; `bpchar` alone has no limit).
    /// Stored as `text`, not blank-padded.
    Char { max_chars: Option<u32> },
    /// `smallint` / `int2`, stored as `int4`.
    SmallInt,
}

/// Why a modifier is applied: an explicit cast truncates a long string silently, storing
/// into a column (assignment) refuses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Coercion {
    Explicit,
    Assignment,
}

impl TypeModifier {
    /// `numeric(precision, scale)` from the numbers written in SQL, checked as PostgreSQL's
    /// `numerictypmodin` checks them.
    pub fn numeric(precision: i64, scale: i64) -> Result<TypeModifier> {
        if !(1..=NUMERIC_PRECISION_MAX).contains(&precision) {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!("NUMERIC precision {precision} must be between 1 and {NUMERIC_PRECISION_MAX}"),
            ));
        }
        if !(NUMERIC_SCALE_MIN..=NUMERIC_SCALE_MAX).contains(&scale) {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!("NUMERIC scale {scale} must be between {NUMERIC_SCALE_MIN} and {NUMERIC_SCALE_MAX}"),
            ));
        }
        Ok(TypeModifier::Numeric { precision: precision as u16, scale: scale as i16 })
    }

    /// A length for `varchar(n)` / `char(n)`, checked as `anychar_typmodin` does; `type_name`
    /// is `varchar` or `bpchar`, as PostgreSQL names it in the message.
    pub fn char_length(length: i64, type_name: &str) -> Result<u32> {
        if length < 1 {
            return Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, format!("length for type {type_name} must be at least 1")));
        }
        if length > CHAR_LENGTH_MAX {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!("length for type {type_name} cannot exceed {CHAR_LENGTH_MAX}"),
            ));
        }
        Ok(length as u32)
    }

    /// The type values with this modifier are stored in.
    pub fn storage_type(self) -> DataType {
        match self {
            TypeModifier::Numeric { .. } => DataType::Numeric,
            TypeModifier::Varchar { .. } | TypeModifier::Char { .. } => DataType::Text,
            TypeModifier::SmallInt => DataType::Int4,
        }
    }

    /// The type's name as PostgreSQL's `format_type` prints it (`\d`): `numeric(6,2)`,
    /// `character varying(3)`, `character(4)`, `bpchar`, `smallint`.
    pub fn format_type(self) -> String {
        match self {
            TypeModifier::Numeric { precision, scale } => format!("numeric({precision},{scale})"),
            TypeModifier::Varchar { max_chars: Some(n) } => format!("character varying({n})"),
            TypeModifier::Varchar { max_chars: None } => "character varying".to_string(),
            TypeModifier::Char { max_chars: Some(n) } => format!("character({n})"),
            TypeModifier::Char { max_chars: None } => "bpchar".to_string(),
            TypeModifier::SmallInt => "smallint".to_string(),
        }
    }

    /// The type's name without its modifier, as PostgreSQL's `format_type_be` prints it in
    /// messages (`column "x" is of type numeric but expression is of type boolean`).
    pub fn base_type_name(self) -> &'static str {
        match self {
            TypeModifier::Numeric { .. } => "numeric",
            TypeModifier::Varchar { .. } => "character varying",
            TypeModifier::Char { .. } => "bpchar",
            TypeModifier::SmallInt => "smallint",
        }
    }

    /// The type's internal name (`pg_type.typname`), which names the output column of a
    /// cast to it: `numeric`, `varchar`, `bpchar`, `int2`.
    pub fn type_name(self) -> &'static str {
        match self {
            TypeModifier::Numeric { .. } => "numeric",
            TypeModifier::Varchar { .. } => "varchar",
            TypeModifier::Char { .. } => "bpchar",
            TypeModifier::SmallInt => "int2",
        }
    }

    /// Coerce `value` to the modifier (module header): `value` is of [`Self::storage_type`],
    /// or for `smallint` also `int8`. The result is of the storage type.
    pub fn apply(self, value: Datum, coercion: Coercion) -> Result<Datum> {
        match (self, value) {
            (_, Datum::Null) => Ok(Datum::Null),
            (TypeModifier::Numeric { precision, scale }, Datum::Numeric(n)) => {
                Ok(Datum::Numeric(apply_numeric(n, precision, scale)?))
            }
            (TypeModifier::Varchar { max_chars } | TypeModifier::Char { max_chars }, Datum::Text(s)) => match max_chars {
                None => Ok(Datum::Text(s)),
                Some(n) => Ok(Datum::Text(apply_length(self, s, n, coercion)?)),
            },
            (TypeModifier::SmallInt, Datum::Int4(v)) => small_int(v as i64),
            (TypeModifier::SmallInt, Datum::Int8(v)) => small_int(v),
            (modifier, value) => Err(Error::internal(format!(
                "type modifier {} applied to a value of type {:?}",
                modifier.format_type(),
                value.data_type()
            ))),
        }
    }
}

fn small_int(v: i64) -> Result<Datum> {
    match i16::try_from(v) {
        Ok(v) => Ok(Datum::Int4(v as i32)),
        Err(_) => Err(Error::out_of_range("smallint")),
    }
}

/// PostgreSQL's `apply_typmod`: round to `scale`, then check the integer digits.
/// NaN fits any `numeric(p,s)`; an infinity fits none.
fn apply_numeric(n: Numeric, precision: u16, scale: i16) -> Result<Numeric> {
    if n.is_nan() {
        return Ok(n);
    }
    if n.is_infinite() {
        return Err(Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow")
            .with_detail(format!("A field with precision {precision}, scale {scale} cannot hold an infinite value.")));
    }
    let rounded = n.round(scale as i32)?;
    let magnitude = rounded.mantissa.unsigned_abs();
    if magnitude == 0 {
        return Ok(rounded);
    }
    // |rounded| = magnitude × 10^-rounded.scale must be < 10^(precision - scale),
    // that is magnitude < 10^(precision - scale + rounded.scale).
    let integer_digits_max = precision as i32 - scale as i32;
    let digits = magnitude.ilog10() as i32 + 1;
    if digits <= integer_digits_max + rounded.scale as i32 {
        return Ok(rounded);
    }
    // PostgreSQL shows 10^0 as 1.
    let bound = if integer_digits_max == 0 { "1".to_string() } else { format!("10^{integer_digits_max}") };
    Err(Error::new(SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow").with_detail(format!(
        "A field with precision {precision}, scale {scale} must round to an absolute value less than {bound}."
    )))
}

/// The length check of `varchar(n)` / `char(n)`, counting characters.
fn apply_length(modifier: TypeModifier, s: String, max_chars: u32, coercion: Coercion) -> Result<String> {
    let max_chars = max_chars as usize;
    // The byte offset of character number max_chars, if the string is longer.
    let Some((cut, _)) = s.char_indices().nth(max_chars) else { return Ok(s) };
    if coercion == Coercion::Assignment && !s[cut..].chars().all(|c| c == ' ') {
        return Err(Error::new(
            SqlState::STRING_DATA_RIGHT_TRUNCATION,
            format!("value too long for type {}", modifier.format_type()),
        ));
    }
    let mut s = s;
    s.truncate(cut);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(precision: i64, scale: i64, input: &str) -> Result<String> {
        let modifier = TypeModifier::numeric(precision, scale)?;
        let value = modifier.apply(Datum::Numeric(Numeric::parse(input)?), Coercion::Assignment)?;
        Ok(value.to_pg_text().unwrap_or_default())
    }

    fn detail(result: Result<String>) -> String {
        let error = result.expect_err("expected an error");
        assert_eq!(error.sqlstate, SqlState::NUMERIC_VALUE_OUT_OF_RANGE);
        assert_eq!(error.message, "numeric field overflow");
        error.detail.clone().unwrap_or_default()
    }

    #[test]
    fn numeric_rounds_half_away_from_zero_and_pads() {
        // select 1::numeric(10,2), '1.005'::numeric(4,2), -1.005::numeric(4,2),
        //   1.234::numeric(6,2), 2.5::numeric(4), -2.5::numeric(4), 123::numeric(3,-1), 0.001::numeric(1,3)
        //  => 1.00 | 1.01 | -1.01 | 1.23 | 3 | -3 | 120 | 0.001
        assert_eq!(numeric(10, 2, "1").unwrap(), "1.00");
        assert_eq!(numeric(4, 2, "1.005").unwrap(), "1.01");
        assert_eq!(numeric(4, 2, "-1.005").unwrap(), "-1.01");
        assert_eq!(numeric(6, 2, "1.234").unwrap(), "1.23");
        assert_eq!(numeric(4, 0, "2.5").unwrap(), "3");
        assert_eq!(numeric(4, 0, "-2.5").unwrap(), "-3");
        assert_eq!(numeric(3, -1, "123").unwrap(), "120");
        assert_eq!(numeric(1, 3, "0.001").unwrap(), "0.001");
        assert_eq!(numeric(5, 2, "0").unwrap(), "0.00");
        assert_eq!(numeric(5, 2, "-0.001").unwrap(), "0.00");
    }

    #[test]
    fn numeric_special_values() {
        // select 'nan'::numeric(5,2) => NaN; 'inf'::numeric(5,2), '-inf'::numeric(3) => ERROR 22003
        //   DETAIL: A field with precision 5, scale 2 cannot hold an infinite value.
        assert_eq!(numeric(5, 2, "nan").unwrap(), "NaN");
        assert_eq!(detail(numeric(5, 2, "inf")), "A field with precision 5, scale 2 cannot hold an infinite value.");
        assert_eq!(detail(numeric(3, 0, "-inf")), "A field with precision 3, scale 0 cannot hold an infinite value.");
    }

    #[test]
    fn numeric_overflow_boundaries() {
        // select 999.994::numeric(5,2) => 999.99; 999.995::numeric(5,2) => ERROR 22003
        //   DETAIL: A field with precision 5, scale 2 must round to an absolute value less than 10^3.
        assert_eq!(numeric(5, 2, "999.994").unwrap(), "999.99");
        assert_eq!(numeric(5, 2, "-999.994").unwrap(), "-999.99");
        let less_than_1000 = "A field with precision 5, scale 2 must round to an absolute value less than 10^3.";
        assert_eq!(detail(numeric(5, 2, "999.995")), less_than_1000);
        assert_eq!(detail(numeric(5, 2, "-999.995")), less_than_1000);
        assert_eq!(detail(numeric(5, 2, "1234.5")), less_than_1000);
        // select 1::numeric(3,5) => DETAIL ... less than 10^-2.
        assert_eq!(detail(numeric(3, 5, "1")), "A field with precision 3, scale 5 must round to an absolute value less than 10^-2.");
        // select 1::numeric(2,2) => DETAIL ... less than 1.  0.99::numeric(2,2) => 0.99
        assert_eq!(detail(numeric(2, 2, "1")), "A field with precision 2, scale 2 must round to an absolute value less than 1.");
        assert_eq!(numeric(2, 2, "0.99").unwrap(), "0.99");
        assert_eq!(detail(numeric(2, 2, "0.995")), "A field with precision 2, scale 2 must round to an absolute value less than 1.");
        // 38 digits fit; precision above what i128 holds is no problem for small values.
        assert_eq!(numeric(1000, 0, "12345678901234567890123456789012345678").unwrap(), "12345678901234567890123456789012345678");
    }

    #[test]
    fn numeric_modifier_limits() {
        // select 1::numeric(0) / 1::numeric(1001) / 1::numeric(3,1001) => 22023
        for (precision, scale, message) in [
            (0, 0, "NUMERIC precision 0 must be between 1 and 1000"),
            (1001, 0, "NUMERIC precision 1001 must be between 1 and 1000"),
            (3, 1001, "NUMERIC scale 1001 must be between -1000 and 1000"),
            (3, -1001, "NUMERIC scale -1001 must be between -1000 and 1000"),
        ] {
            let error = TypeModifier::numeric(precision, scale).unwrap_err();
            assert_eq!((error.sqlstate, error.message.as_str()), (SqlState::INVALID_PARAMETER_VALUE, message));
        }
        assert_eq!(TypeModifier::char_length(0, "varchar").unwrap_err().message, "length for type varchar must be at least 1");
        assert_eq!(
            TypeModifier::char_length(10_485_761, "varchar").unwrap_err().message,
            "length for type varchar cannot exceed 10485760"
        );
    }

    fn text(modifier: TypeModifier, input: &str, coercion: Coercion) -> Result<String> {
        Ok(modifier.apply(Datum::Text(input.to_string()), coercion)?.to_pg_text().unwrap_or_default())
    }

    #[test]
    fn lengths_count_characters() {
        let varchar3 = TypeModifier::Varchar { max_chars: Some(3) };
        let char2 = TypeModifier::Char { max_chars: Some(2) };
        // insert into v(b) values ('é€x') fits varchar(3); select 'éèà'::varchar(2) => éè
        assert_eq!(text(varchar3, "é€x", Coercion::Assignment).unwrap(), "é€x");
        assert_eq!(text(TypeModifier::Varchar { max_chars: Some(2) }, "éèà", Coercion::Explicit).unwrap(), "éè");
        // 'abc'::varchar(2) => ab; 'abc'::char(2) => ab
        assert_eq!(text(TypeModifier::Varchar { max_chars: Some(2) }, "abc", Coercion::Explicit).unwrap(), "ab");
        assert_eq!(text(char2, "abc", Coercion::Explicit).unwrap(), "ab");
        // insert 'abc  ' into varchar(3) => abc; 'abcd' => 22001
        assert_eq!(text(varchar3, "abc  ", Coercion::Assignment).unwrap(), "abc");
        let error = text(varchar3, "abcd", Coercion::Assignment).unwrap_err();
        assert_eq!(error.sqlstate, SqlState::STRING_DATA_RIGHT_TRUNCATION);
        assert_eq!(error.message, "value too long for type character varying(3)");
        let error = text(varchar3, "ab€ d", Coercion::Assignment).unwrap_err();
        assert_eq!(error.message, "value too long for type character varying(3)");
        let error = text(char2, "abc", Coercion::Assignment).unwrap_err();
        assert_eq!(error.message, "value too long for type character(2)");
        // Exactly the length, and no limit.
        assert_eq!(text(char2, "€€", Coercion::Assignment).unwrap(), "€€");
        assert_eq!(text(TypeModifier::Varchar { max_chars: None }, "long text", Coercion::Assignment).unwrap(), "long text");
    }

    #[test]
    fn small_int_range() {
        assert_eq!(TypeModifier::SmallInt.apply(Datum::Int4(32767), Coercion::Assignment).unwrap(), Datum::Int4(32767));
        assert_eq!(TypeModifier::SmallInt.apply(Datum::Int8(-32768), Coercion::Explicit).unwrap(), Datum::Int4(-32768));
        for v in [32768i64, -32769, i64::MAX] {
            let error = TypeModifier::SmallInt.apply(Datum::Int8(v), Coercion::Assignment).unwrap_err();
            assert_eq!((error.sqlstate, error.message.as_str()), (SqlState::NUMERIC_VALUE_OUT_OF_RANGE, "smallint out of range"));
        }
        assert_eq!(TypeModifier::SmallInt.apply(Datum::Null, Coercion::Assignment).unwrap(), Datum::Null);
    }

    #[test]
    fn format_type_names() {
        assert_eq!(TypeModifier::numeric(6, 2).unwrap().format_type(), "numeric(6,2)");
        assert_eq!(TypeModifier::Varchar { max_chars: Some(3) }.format_type(), "character varying(3)");
        assert_eq!(TypeModifier::Varchar { max_chars: None }.format_type(), "character varying");
        assert_eq!(TypeModifier::Char { max_chars: Some(4) }.format_type(), "character(4)");
        assert_eq!(TypeModifier::SmallInt.format_type(), "smallint");
    }
}
