use weft_common::DataType;

use super::*;
use crate::expr::{can_coerce, coerce, common_type, resolve_case, resolve_coalesce};

use BinaryOp::*;
use DataType::{Bool, Float8, Int4, Int8, Numeric, Text};

fn hint<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.expect_err("expected an error").hint.clone().unwrap_or_default()
}

#[test]
fn numeric_promotion() {
    // select pg_typeof(1 + 1.5), pg_typeof(1::int8 + 1.5::float8), pg_typeof(1.5 + 1.5::float8)
    //   =>  numeric|double precision|double precision
    let cases = [
        (i4(1), i4(1), Int4),
        (i4(1), i8(1), Int8),
        (i8(1), i4(1), Int8),
        (i4(1), num("1.5"), Numeric),
        (i8(1), f8(1.5), Float8),
        (num("1.5"), f8(1.5), Float8),
        (i4(1), f8(1.5), Float8),
    ];
    for (l, r, want) in cases {
        let e = resolve_binary(Add, l, r).unwrap();
        assert_eq!(e.data_type(), want);
        let Expr::Binary { left, right, .. } = e else { panic!() };
        assert_eq!((left.data_type(), right.data_type()), (want, want));
    }
    assert_eq!(resolve_binary(Lt, i4(1), f8(1.0)).unwrap().data_type(), Bool);
}

#[test]
fn operator_errors() {
    // select 'a'::text = 1  =>  ERROR:  42883: operator does not exist: text = integer
    let r = resolve_binary(Eq, text("a"), i4(1));
    assert_eq!(hint(r.clone()), "No operator matches the given name and argument types. You might need to add explicit type casts.");
    assert_eq!(err(r), "42883: operator does not exist: text = integer");
    // select 'a'::text < 1.5  =>  ERROR:  42883: operator does not exist: text < numeric
    assert_eq!(err(resolve_binary(Lt, text("a"), num("1.5"))), "42883: operator does not exist: text < numeric");
    assert_eq!(err(resolve_binary(NotEq, text("a"), i4(1))), "42883: operator does not exist: text <> integer");
    // select 1 = true  =>  ERROR:  42883: operator does not exist: integer = boolean
    assert_eq!(err(resolve_binary(Eq, i4(1), boolean(true))), "42883: operator does not exist: integer = boolean");
    // select 5.5::float8 % 2  =>  ERROR:  42883: operator does not exist: double precision % integer
    assert_eq!(
        err(resolve_binary(Mod, f8(5.5), i4(2))),
        "42883: operator does not exist: double precision % integer"
    );
    // select 5 % 2.5::float8  =>  ERROR:  42883: operator does not exist: integer % double precision
    assert_eq!(
        err(resolve_binary(Mod, i4(5), f8(2.5))),
        "42883: operator does not exist: integer % double precision"
    );
    assert_eq!(err(resolve_binary(Add, text("a"), text("b"))), "42883: operator does not exist: text + text");
    // select 1 || 2  =>  ERROR:  42883: operator does not exist: integer || integer
    assert_eq!(err(resolve_binary(Concat, i4(1), i4(2))), "42883: operator does not exist: integer || integer");
    // select 1 and true  =>  ERROR:  42804: argument of AND must be type boolean, not type integer
    assert_eq!(
        err(resolve_binary(And, i4(1), boolean(true))),
        "42804: argument of AND must be type boolean, not type integer"
    );
    assert_eq!(err(resolve_binary(Or, boolean(true), text("x"))), "42804: argument of OR must be type boolean, not type text");
    // select not 1  =>  ERROR:  42804: argument of NOT must be type boolean, not type integer
    assert_eq!(
        err(resolve_unary(UnaryOp::Not, i4(1))),
        "42804: argument of NOT must be type boolean, not type integer"
    );
    // select null + null  =>  ERROR:  42725: operator is not unique: unknown + unknown
    assert_eq!(err(resolve_binary(Add, null(), null())), "42725: operator is not unique: unknown + unknown");
    // select -null  =>  ERROR:  42725: operator is not unique: - unknown
    assert_eq!(err(resolve_unary(UnaryOp::Neg, null())), "42725: operator is not unique: - unknown");
    assert_eq!(err(resolve_unary(UnaryOp::Neg, text("a"))), "42883: operator does not exist: - text");
}

#[test]
fn function_errors() {
    // select md5(1)  =>  ERROR:  42883: function md5(integer) does not exist
    let r = resolve_function("md5", vec![i4(1)]);
    assert_eq!(hint(r.clone()), "No function matches the given name and argument types. You might need to add explicit type casts.");
    assert_eq!(err(r), "42883: function md5(integer) does not exist");
    // select foo(1)  =>  ERROR:  42883: function foo(integer) does not exist
    assert_eq!(err(resolve_function("foo", vec![i4(1)])), "42883: function foo(integer) does not exist");
    // select length(1)  =>  ERROR:  42883: function length(integer) does not exist
    assert_eq!(err(resolve_function("length", vec![i4(1)])), "42883: function length(integer) does not exist");
    assert_eq!(err(resolve_function("hashint4", vec![i8(1)])), "42883: function hashint4(bigint) does not exist");
    assert_eq!(err(resolve_function("abs", vec![text("x")])), "42883: function abs(text) does not exist");
    assert_eq!(
        err(resolve_function("repeat", vec![text("x"), i4(1), i4(2)])),
        "42883: function repeat(text, integer, integer) does not exist"
    );
    assert_eq!(err(resolve_function("random", vec![null()])), "42883: function random(unknown) does not exist");
    // select abs(null)  =>  (null): float8 is the preferred candidate
    assert_eq!(resolve_function("abs", vec![null()]).unwrap().data_type(), Float8);
    // select setseed(1) / setseed(0.5): int and numeric cast implicitly to float8
    assert!(resolve_function("setseed", vec![i4(1)]).is_ok());
    assert!(resolve_function("setseed", vec![num("0.5")]).is_ok());
}

#[test]
fn common_types() {
    assert_eq!(common_type(&[Int4, Int8, Int4], "CASE").unwrap(), Int8);
    assert_eq!(common_type(&[Int4, Numeric], "CASE").unwrap(), Numeric);
    assert_eq!(common_type(&[Float8, Numeric, Int4], "UNION").unwrap(), Float8);
    assert_eq!(common_type(&[Text, Text], "VALUES").unwrap(), Text);
    assert_eq!(common_type(&[], "VALUES").unwrap(), Text);
    assert_eq!(err(common_type(&[Int4, Text], "CASE")), "42804: CASE types integer and text cannot be matched");
    assert_eq!(err(common_type(&[Bool, Int4], "UNION")), "42804: UNION types boolean and integer cannot be matched");
    // select case when true then 1 else 'a'::text end
    //   =>  ERROR:  42804: CASE types text and integer cannot be matched  (ELSE is checked first)
    let r = resolve_case(vec![(boolean(true), i4(1))], Some(text("a")));
    assert_eq!(err(r), "42804: CASE types text and integer cannot be matched");
    // select coalesce(1, 'a'::text)  =>  ERROR:  42804: COALESCE types integer and text cannot be matched
    assert_eq!(
        err(resolve_coalesce(vec![i4(1), text("a")])),
        "42804: COALESCE types integer and text cannot be matched"
    );
    assert_eq!(
        err(resolve_case(vec![(i4(1), i4(1))], None)),
        "42804: argument of CASE/WHEN must be type boolean, not type integer"
    );
    // CASE WHEN c THEN NULL ELSE 1 END is integer.
    assert_eq!(resolve_case(vec![(boolean(true), null())], Some(i4(1))).unwrap().data_type(), Int4);
}

#[test]
fn coercion_rules() {
    let all = [Bool, Int4, Int8, Float8, Numeric, Text];
    for from in all {
        for to in all {
            let implicit = from == to
                || matches!(
                    (from, to),
                    (Int4, Int8 | Numeric | Float8) | (Int8, Numeric | Float8) | (Numeric, Float8)
                );
            assert_eq!(can_coerce(from, to, false), implicit, "{from:?} -> {to:?} implicit");
        }
    }
    // select true::int8; select 1.5::float8::bool  =>  ERROR:  42846: cannot cast type ...
    assert!(!can_coerce(Bool, Int8, true));
    assert_eq!(err(coerce(boolean(true), Int8, true)), "42846: cannot cast type boolean to bigint");
    assert_eq!(err(coerce(f8(1.5), Bool, true)), "42846: cannot cast type double precision to boolean");
    assert_eq!(err(coerce(text("1"), Int4, false)), "42846: cannot cast type text to integer");
    assert!(can_coerce(Bool, Int4, true) && can_coerce(Int4, Bool, true));
    assert!(can_coerce(Float8, Int4, true) && can_coerce(Text, Numeric, true) && can_coerce(Bool, Text, true));
    // An explicit cast of NULL keeps its type; an implicit one retypes the literal.
    let typed_null = coerce(null(), Int4, true).unwrap();
    assert_eq!(typed_null.data_type(), Int4);
    assert!(!typed_null.is_null_literal());
    assert_eq!(coerce(null(), Int8, false).unwrap(), Expr::Literal { value: weft_common::Datum::Null, data_type: Int8 });
    assert_eq!(coerce(i4(1), Int4, false).unwrap(), i4(1));
}
