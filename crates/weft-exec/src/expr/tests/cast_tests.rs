use weft_common::{DataType, Datum, Numeric};

use super::*;
use crate::expr::cast::{float8_to_int4, parse_bool, parse_float8};
use crate::expr::cast_datum;

use DataType::{Bool, Float8, Int4, Int8, Text};

fn cast_text(s: &str, to: DataType) -> Result<String> {
    Ok(show(cast_datum(Datum::Text(s.to_string()), to)?))
}

fn cast(d: Datum, to: DataType) -> Result<String> {
    Ok(show(cast_datum(d, to)?))
}

#[test]
fn text_to_integers() {
    // select ' 12 '::int4, '+12'::int4, '-2147483648'::int4  =>  12|12|-2147483648
    assert_eq!(cast_text(" 12 ", Int4).unwrap(), "12");
    assert_eq!(cast_text("+12", Int4).unwrap(), "12");
    assert_eq!(cast_text("-2147483648", Int4).unwrap(), "-2147483648");
    assert_eq!(cast_text("\t-9223372036854775808\n", Int8).unwrap(), "-9223372036854775808");
    // select 'abc'::int4, ''::int4, '12.5'::int4, '1_000'::int4, 'x'::int8
    assert_eq!(err(cast_text("abc", Int4)), "22P02: invalid input syntax for type integer: \"abc\"");
    assert_eq!(err(cast_text("", Int4)), "22P02: invalid input syntax for type integer: \"\"");
    assert_eq!(err(cast_text("12.5", Int4)), "22P02: invalid input syntax for type integer: \"12.5\"");
    assert_eq!(err(cast_text("1_000", Int4)), "22P02: invalid input syntax for type integer: \"1_000\"");
    assert_eq!(err(cast_text("- 1", Int4)), "22P02: invalid input syntax for type integer: \"- 1\"");
    assert_eq!(err(cast_text("x", Int8)), "22P02: invalid input syntax for type bigint: \"x\"");
    // select '99999999999'::int4, '99999999999999999999'::int8
    assert_eq!(err(cast_text("99999999999", Int4)), "22003: value \"99999999999\" is out of range for type integer");
    assert_eq!(
        err(cast_text("99999999999999999999", Int8)),
        "22003: value \"99999999999999999999\" is out of range for type bigint"
    );
    assert_eq!(err(cast_text("2147483648", Int4)), "22003: value \"2147483648\" is out of range for type integer");
}

#[test]
fn text_to_float8() {
    // select ' NaN '::float8, 'Infinity'::float8, '-inf'::float8, '1e5'::float8, ' -1.5E-3 '::float8,
    //        'infinity'::float8, '+inf'::float8, '1.'::float8, '.5'::float8, '1e-310'::float8, '-0'::float8
    //   =>  NaN|Infinity|-Infinity|100000|-0.0015|Infinity|Infinity|1|0.5|1e-310|-0
    let cases = [
        (" NaN ", "NaN"),
        ("Infinity", "Infinity"),
        ("-inf", "-Infinity"),
        ("1e5", "100000"),
        (" -1.5E-3 ", "-0.0015"),
        ("infinity", "Infinity"),
        ("+inf", "Infinity"),
        ("INF", "Infinity"),
        ("nAn", "NaN"),
        ("1.", "1"),
        (".5", "0.5"),
        ("1e-310", "1e-310"),
        ("-0", "-0"),
        // select '1.e5'::float8, '+.5'::float8, '5e+3'::float8, '-.5e-2'::float8, '-nan'::float8,
        //        '+nan'::float8, '+Infinity'::float8, '1E5'::float8, '4.9e-324'::float8
        //   =>  100000|0.5|5000|-0.005|NaN|NaN|Infinity|100000|5e-324
        ("1.e5", "100000"),
        ("+.5", "0.5"),
        ("5e+3", "5000"),
        ("-.5e-2", "-0.005"),
        ("-nan", "NaN"),
        ("+nan", "NaN"),
        ("+Infinity", "Infinity"),
        ("1E5", "100000"),
        ("4.9e-324", "5e-324"),
    ];
    for (input, want) in cases {
        assert_eq!(cast_text(input, Float8).unwrap(), want, "{input:?}");
    }
    // select 'x'::float8, '  '::float8, 'infinit'::float8  =>  ERROR:  22P02: invalid input syntax ...
    for bad in ["x", "  ", "infinit", "1e", "--1", "1_0", "1.5.2", "0x", ".", "e5", "1e5.5", "1e+"] {
        assert_eq!(
            err(cast_text(bad, Float8)),
            format!("22P02: invalid input syntax for type double precision: \"{bad}\""),
        );
    }
    // select '1e400'::float8, '1e-400'::float8  =>  ERROR:  22003: "1e400" is out of range for type double precision
    assert_eq!(err(cast_text("1e400", Float8)), "22003: \"1e400\" is out of range for type double precision");
    assert_eq!(err(cast_text("1e-400", Float8)), "22003: \"1e-400\" is out of range for type double precision");
    assert_eq!(err(cast_text("2e-324", Float8)), "22003: \"2e-324\" is out of range for type double precision");
    assert_eq!(parse_float8("0e-400").unwrap(), 0.0);
}

#[test]
fn text_to_bool() {
    // select 'tr'::bool, 'Y'::bool, ' on '::bool, 'of'::bool, '1'::bool, '0'::bool, 'n'::bool  =>  t|t|t|f|t|f|f
    let cases = [
        ("tr", true),
        ("Y", true),
        (" on ", true),
        ("of", false),
        ("1", true),
        ("0", false),
        ("n", false),
        ("TRUE", true),
        ("false", false),
        ("yes", true),
        ("no", false),
        ("off", false),
        ("t", true),
        ("F", false),
    ];
    for (input, want) in cases {
        assert_eq!(parse_bool(input).unwrap(), want, "{input:?}");
    }
    // select 'o'::bool, 'x'::bool  =>  ERROR:  22P02: invalid input syntax for type boolean: "o"
    for bad in ["o", "x", "", "truee", "10", "onn", "of f"] {
        assert_eq!(err(cast_text(bad, Bool)), format!("22P02: invalid input syntax for type boolean: \"{bad}\""));
    }
}

#[test]
fn text_to_numeric() {
    // select '  1.50 '::numeric, '-0.00'::numeric  =>  1.50|0.00
    assert_eq!(cast_text("  1.50 ", DataType::Numeric).unwrap(), "1.50");
    // select 'abc'::numeric  =>  ERROR:  22P02: invalid input syntax for type numeric: "abc"
    assert_eq!(err(cast_text("abc", DataType::Numeric)), "22P02: invalid input syntax for type numeric: \"abc\"");
}

#[test]
fn numeric_type_conversions() {
    // select 2.5::float8::int4, 3.5::float8::int4, -2.5::float8::int4  =>  2|4|-2
    assert_eq!(cast(Datum::Float8(2.5), Int4).unwrap(), "2");
    assert_eq!(cast(Datum::Float8(3.5), Int4).unwrap(), "4");
    assert_eq!(cast(Datum::Float8(-2.5), Int4).unwrap(), "-2");
    assert_eq!(cast(Datum::Float8(-2.5), Int8).unwrap(), "-2");
    assert_eq!(cast(Datum::Float8(2147483647.4), Int4).unwrap(), "2147483647");
    // select 2147483647.5::float8::int4, 'nan'::float8::int4  =>  ERROR:  22003: integer out of range
    assert_eq!(err(cast(Datum::Float8(2147483647.5), Int4)), "22003: integer out of range");
    assert_eq!(err(float8_to_int4(f64::NAN)), "22003: integer out of range");
    // select 9223372036854775807::float8::int8  =>  ERROR:  22003: bigint out of range
    assert_eq!(err(cast(Datum::Float8(9223372036854775807.0), Int8)), "22003: bigint out of range");
    assert_eq!(cast(Datum::Float8(-9223372036854775808.0), Int8).unwrap(), "-9223372036854775808");
    // select 2.5::int4, -2.5::int4, 3.5::int4, 2.5::numeric::int8  =>  3|-3|4|3
    let n = |s: &str| Datum::Numeric(Numeric::parse(s).unwrap());
    assert_eq!(cast(n("2.5"), Int4).unwrap(), "3");
    assert_eq!(cast(n("-2.5"), Int4).unwrap(), "-3");
    assert_eq!(cast(n("3.5"), Int4).unwrap(), "4");
    assert_eq!(cast(n("2.5"), Int8).unwrap(), "3");
    // select 1e10::numeric::int4  =>  ERROR:  22003: integer out of range
    assert_eq!(err(cast(n("10000000000"), Int4)), "22003: integer out of range");
    // select 3000000000::int8::int4  =>  ERROR:  22003: integer out of range
    assert_eq!(err(cast(Datum::Int8(3_000_000_000), Int4)), "22003: integer out of range");
    assert_eq!(cast(Datum::Int8(-5), Int4).unwrap(), "-5");
    // select 123.456::float8::numeric, 0.1::float8::numeric, (-1.5e-7)::float8::numeric,
    //        1e15::float8::numeric, 123456789012345678::float8::numeric, 1.23456789012345678::float8::numeric,
    //        1e20::float8::numeric, 1.23456789012345e-5::float8::numeric
    let cases = [
        (123.456, "123.456"),
        (0.1, "0.1"),
        (-1.5e-7, "-0.00000015"),
        (1e15, "1000000000000000"),
        (123456789012345678.0, "123456789012346000"),
        (1.234_567_890_123_456_7, "1.23456789012346"),
        (1e20, "100000000000000000000"),
        (1.23456789012345e-5, "0.0000123456789012345"),
        (0.0, "0"),
    ];
    for (v, want) in cases {
        assert_eq!(cast(Datum::Float8(v), DataType::Numeric).unwrap(), want, "{v}");
    }
    // select 'nan'::float8::numeric, '-inf'::float8::numeric  =>  NaN | -Infinity
    assert_eq!(cast(Datum::Float8(f64::NAN), DataType::Numeric).unwrap(), "NaN");
    assert_eq!(cast(Datum::Float8(f64::NEG_INFINITY), DataType::Numeric).unwrap(), "-Infinity");
    assert_eq!(cast(n("1.5"), Float8).unwrap(), "1.5");
    assert_eq!(cast(Datum::Int4(7), DataType::Numeric).unwrap(), "7");
    // select (1::int8 << 53)::float8  =>  9.007199254740992e+15
    assert_eq!(cast(Datum::Int8(1 << 53), Float8).unwrap(), "9.007199254740992e+15");
}

#[test]
fn bool_and_text_conversions() {
    // select 1::bool, 0::bool, 5::bool, true::int4, false::int4  =>  t|f|t|1|0
    assert_eq!(cast(Datum::Int4(1), Bool).unwrap(), "t");
    assert_eq!(cast(Datum::Int4(0), Bool).unwrap(), "f");
    assert_eq!(cast(Datum::Int4(5), Bool).unwrap(), "t");
    assert_eq!(cast(Datum::Bool(true), Int4).unwrap(), "1");
    assert_eq!(cast(Datum::Bool(false), Int4).unwrap(), "0");
    // select true::text, 1.5::float8::text, 1e20::float8::text, (-0.0::float8)::text  =>  true|1.5|1e+20|-0
    assert_eq!(cast(Datum::Bool(true), Text).unwrap(), "true");
    assert_eq!(cast(Datum::Float8(1.5), Text).unwrap(), "1.5");
    assert_eq!(cast(Datum::Float8(1e20), Text).unwrap(), "1e+20");
    assert_eq!(cast(Datum::Float8(-0.0), Text).unwrap(), "-0");
    assert_eq!(cast(Datum::Int8(i64::MIN), Text).unwrap(), "-9223372036854775808");
    // Casts PostgreSQL does not have are errors at run time too.
    assert_eq!(err(cast(Datum::Bool(true), Int8)), "42846: cannot cast type boolean to bigint");
    assert_eq!(cast_datum(Datum::Null, Int4).unwrap(), Datum::Null);
}
