use weft_common::{DataType, Datum};

use super::*;
use crate::expr::{resolve_case, resolve_coalesce};

use BinaryOp::*;

#[test]
fn int4_arithmetic() {
    // select 7 / 2, -7 / 2, 7 % -2, -7 % 2, (-2147483647-1) % (-1)  =>  3|-3|1|-1|0
    assert_eq!(binop(Div, i4(7), i4(2)).unwrap(), "3");
    assert_eq!(binop(Div, i4(-7), i4(2)).unwrap(), "-3");
    assert_eq!(binop(Mod, i4(7), i4(-2)).unwrap(), "1");
    assert_eq!(binop(Mod, i4(-7), i4(2)).unwrap(), "-1");
    assert_eq!(binop(Mod, i4(i32::MIN), i4(-1)).unwrap(), "0");
    // select 2147483647 + 1  =>  ERROR:  22003: integer out of range
    assert_eq!(err(binop(Add, i4(i32::MAX), i4(1))), "22003: integer out of range");
    // select (-2147483647-1) / (-1)  =>  ERROR:  22003: integer out of range
    assert_eq!(err(binop(Div, i4(i32::MIN), i4(-1))), "22003: integer out of range");
    assert_eq!(err(binop(Mul, i4(65536), i4(65536))), "22003: integer out of range");
    // select 1 / 0; select 1 % 0  =>  ERROR:  22012: division by zero
    assert_eq!(err(binop(Div, i4(1), i4(0))), "22012: division by zero");
    assert_eq!(err(binop(Mod, i4(1), i4(0))), "22012: division by zero");
    // select -(-2147483647-1)  =>  ERROR:  22003: integer out of range
    assert_eq!(err(unop(UnaryOp::Neg, i4(i32::MIN))), "22003: integer out of range");
}

#[test]
fn int8_arithmetic_and_promotion() {
    // select 9223372036854775807 + 1  =>  ERROR:  22003: bigint out of range
    assert_eq!(err(binop(Add, i8(i64::MAX), i4(1))), "22003: bigint out of range");
    // select 2147483647::int8 * 2 + 1  =>  4294967295
    let product = resolve_binary(Mul, i8(2147483647), i4(2)).unwrap();
    assert_eq!(binop(Add, product, i4(1)).unwrap(), "4294967295");
    assert_eq!(resolve_binary(Add, i4(1), i8(1)).unwrap().data_type(), DataType::Int8);
    // select 7::int8 % 0  =>  ERROR:  22012: division by zero
    assert_eq!(err(binop(Mod, i8(7), i8(0))), "22012: division by zero");
    assert_eq!(binop(Mod, i8(i64::MIN), i8(-1)).unwrap(), "0");
    assert_eq!(err(binop(Div, i8(i64::MIN), i8(-1))), "22003: bigint out of range");
}

#[test]
fn float8_arithmetic() {
    // select 1.5::float8 * 2, 0.1::float8 + 0.2::float8, 1::float8 / 3
    //   =>  3|0.30000000000000004|0.3333333333333333
    assert_eq!(binop(Mul, f8(1.5), i4(2)).unwrap(), "3");
    assert_eq!(binop(Add, f8(0.1), f8(0.2)).unwrap(), "0.30000000000000004");
    assert_eq!(binop(Div, i4(1), f8(3.0)).unwrap(), "0.3333333333333333");
    // select 1e308::float8 * 10  =>  ERROR:  22003: value out of range: overflow
    assert_eq!(err(binop(Mul, f8(1e308), i4(10))), "22003: value out of range: overflow");
    // select 1e-308::float8 * 1e-308::float8  =>  ERROR:  22003: value out of range: underflow
    assert_eq!(err(binop(Mul, f8(1e-308), f8(1e-308))), "22003: value out of range: underflow");
    // select 1.0::float8 / 0, 0::float8 / 0  =>  ERROR:  22012: division by zero
    assert_eq!(err(binop(Div, f8(1.0), i4(0))), "22012: division by zero");
    assert_eq!(err(binop(Div, f8(0.0), f8(0.0))), "22012: division by zero");
    // select 'nan'::float8 / 0, 'nan'::float8 * 0, 'inf'::float8 + 1, 1::float8 / 'inf'
    //   =>  NaN|NaN|Infinity|0
    assert_eq!(binop(Div, f8(f64::NAN), i4(0)).unwrap(), "NaN");
    assert_eq!(binop(Mul, f8(f64::NAN), i4(0)).unwrap(), "NaN");
    assert_eq!(binop(Add, f8(f64::INFINITY), i4(1)).unwrap(), "Infinity");
    assert_eq!(binop(Div, f8(1.0), f8(f64::INFINITY)).unwrap(), "0");
    assert_eq!(unop(UnaryOp::Neg, f8(0.0)).unwrap(), "-0");
}

#[test]
fn numeric_arithmetic() {
    // select 1 + 1.5, 1.0 + 2.25, 3.0 * 1.5, 1.0 - 2.25  =>  2.5|3.25|4.50|-1.25
    assert_eq!(binop(Add, i4(1), num("1.5")).unwrap(), "2.5");
    assert_eq!(binop(Add, num("1.0"), num("2.25")).unwrap(), "3.25");
    assert_eq!(binop(Mul, num("3.0"), num("1.5")).unwrap(), "4.50");
    assert_eq!(binop(Sub, num("1.0"), num("2.25")).unwrap(), "-1.25");
    // select 10.5 % 3, -10.5 % 3, 10 % 3.00  =>  1.5|-1.5|1.00
    assert_eq!(binop(Mod, num("10.5"), i4(3)).unwrap(), "1.5");
    assert_eq!(binop(Mod, num("-10.5"), i4(3)).unwrap(), "-1.5");
    assert_eq!(binop(Mod, i4(10), num("3.00")).unwrap(), "1.00");
    // select 5.0 % 0, 5.0 / 0  =>  ERROR:  22012: division by zero
    assert_eq!(err(binop(Mod, num("5.0"), i4(0))), "22012: division by zero");
    assert_eq!(err(binop(Div, num("5.0"), i4(0))), "22012: division by zero");
    // select 1.5 + 1::float8  => 2.5 (double precision)
    let e = resolve_binary(Add, num("1.5"), f8(1.0)).unwrap();
    assert_eq!(e.data_type(), DataType::Float8);
    assert_eq!(show(eval(&e).unwrap()), "2.5");
}

#[test]
fn comparisons() {
    // select 1::int4 = 1::int8, 1 = 1.0, 1.0 = 1.0::float8  =>  t|t|t
    assert_eq!(binop(Eq, i4(1), i8(1)).unwrap(), "t");
    assert_eq!(binop(Eq, i4(1), num("1.0")).unwrap(), "t");
    assert_eq!(binop(Eq, num("1.0"), f8(1.0)).unwrap(), "t");
    // select 'nan'::float8 = 'nan'::float8, 'nan'::float8 > 'inf'::float8  =>  t|t
    assert_eq!(binop(Eq, f8(f64::NAN), f8(f64::NAN)).unwrap(), "t");
    assert_eq!(binop(Gt, f8(f64::NAN), f8(f64::INFINITY)).unwrap(), "t");
    // select -0.0::float8 = 0::float8  =>  t
    assert_eq!(binop(Eq, f8(-0.0), f8(0.0)).unwrap(), "t");
    // select 'B' < 'a' collate "C", 'é' > 'z'  =>  t|t
    assert_eq!(binop(Lt, text("B"), text("a")).unwrap(), "t");
    assert_eq!(binop(Gt, text("é"), text("z")).unwrap(), "t");
    assert_eq!(binop(NotEq, i4(1), i4(2)).unwrap(), "t");
    assert_eq!(binop(LtEq, i4(2), i4(2)).unwrap(), "t");
    assert_eq!(binop(GtEq, i4(1), i4(2)).unwrap(), "f");
    assert_eq!(binop(Lt, boolean(false), boolean(true)).unwrap(), "t");
    // select null = 1, pg_typeof(null + 1)  =>  |integer
    assert_eq!(binop(Eq, null(), i4(1)).unwrap(), "");
    assert_eq!(resolve_binary(Add, null(), i4(1)).unwrap().data_type(), DataType::Int4);
}

#[test]
fn three_valued_logic() {
    let cases = [
        (And, boolean(false), null(), "f"),
        (And, null(), boolean(false), "f"),
        (And, boolean(true), null(), ""),
        (And, boolean(true), boolean(true), "t"),
        (Or, boolean(true), null(), "t"),
        (Or, null(), boolean(true), "t"),
        (Or, boolean(false), null(), ""),
        (Or, boolean(false), boolean(false), "f"),
    ];
    for (op, l, r, want) in cases {
        assert_eq!(binop(op, l.clone(), r.clone()).unwrap(), want, "{op:?} {l:?} {r:?}");
    }
    // select not null  =>  (null)
    assert_eq!(unop(UnaryOp::Not, null()).unwrap(), "");
    assert_eq!(unop(UnaryOp::Not, boolean(true)).unwrap(), "f");
    // Short circuit: false AND (1/0 = 1) is false, no error.
    let boom = resolve_binary(Eq, resolve_binary(Div, i4(1), i4(0)).unwrap(), i4(1)).unwrap();
    assert_eq!(eval(&resolve_binary(And, boolean(false), boom.clone()).unwrap()).unwrap(), Datum::Bool(false));
    assert_eq!(eval(&resolve_binary(Or, boolean(true), boom).unwrap()).unwrap(), Datum::Bool(true));
}

#[test]
fn concat() {
    // select 'a' || 1, 1 || 'a', 'a' || null, 'a'::text || 1.5::float8, true || 'x'::text
    //   =>  a1|1a||a1.5|truex
    assert_eq!(binop(Concat, text("a"), i4(1)).unwrap(), "a1");
    assert_eq!(binop(Concat, i4(1), text("a")).unwrap(), "1a");
    assert_eq!(binop(Concat, text("a"), null()).unwrap(), "");
    assert_eq!(binop(Concat, text("a"), f8(1.5)).unwrap(), "a1.5");
    assert_eq!(binop(Concat, boolean(true), text("x")).unwrap(), "truex");
    // select null || null, pg_typeof(null || null)  =>  |text
    assert_eq!(resolve_binary(Concat, null(), null()).unwrap().data_type(), DataType::Text);
    assert_eq!(binop(Concat, text("ab"), text("cd")).unwrap(), "abcd");
}

#[test]
fn case_and_coalesce_are_lazy() {
    let boom = || resolve_binary(Div, i4(1), i4(0)).unwrap();
    let cond = |b: Option<bool>| match b {
        Some(b) => boolean(b),
        None => null(),
    };
    // CASE WHEN NULL THEN 1/0 WHEN true THEN 2 ELSE 1/0 END  =>  2
    let e = resolve_case(vec![(cond(None), boom()), (cond(Some(true)), i4(2))], Some(boom())).unwrap();
    assert_eq!(show(eval(&e).unwrap()), "2");
    // CASE WHEN false THEN 1 END  =>  (null)
    let e = resolve_case(vec![(cond(Some(false)), i4(1))], None).unwrap();
    assert_eq!(eval(&e).unwrap(), Datum::Null);
    // select case when true then 1 else 2::int8 end  =>  1 (bigint)
    let e = resolve_case(vec![(cond(Some(true)), i4(1))], Some(i8(2))).unwrap();
    assert_eq!(e.data_type(), DataType::Int8);
    assert_eq!(eval(&e).unwrap(), Datum::Int8(1));
    // select coalesce(null, 1, 1/0)  =>  1
    let e = resolve_coalesce(vec![null(), i4(1), boom()]).unwrap();
    assert_eq!(eval(&e).unwrap(), Datum::Int4(1));
    // select coalesce(1, 2.5), pg_typeof(...)  =>  1|numeric
    let e = resolve_coalesce(vec![i4(1), num("2.5")]).unwrap();
    assert_eq!(e.data_type(), DataType::Numeric);
    assert_eq!(show(eval(&e).unwrap()), "1");
    // select coalesce(null, null), pg_typeof(...)  =>  |text
    let e = resolve_coalesce(vec![null(), null()]).unwrap();
    assert_eq!(e.data_type(), DataType::Text);
    assert_eq!(eval(&e).unwrap(), Datum::Null);
}

#[test]
fn columns_and_is_null() {
    let row = [Datum::Int4(5), Datum::Null];
    let ctx = EvalContext::with_seed(1);
    let c0 = Expr::Column { index: 0, data_type: DataType::Int4 };
    let c1 = Expr::Column { index: 1, data_type: DataType::Int4 };
    let sum = resolve_binary(Add, c0.clone(), c1.clone()).unwrap();
    assert_eq!(sum.eval(&row, &ctx).unwrap(), Datum::Null);
    let is_null = Expr::IsNull { expr: Box::new(c1), negated: false };
    assert_eq!(is_null.eval(&row, &ctx).unwrap(), Datum::Bool(true));
    assert_eq!(is_null.data_type(), DataType::Bool);
    let out_of_range = Expr::Column { index: 9, data_type: DataType::Int4 };
    assert_eq!(out_of_range.eval(&row, &ctx).unwrap_err().sqlstate.0, "XX000");
}

#[test]
fn string_functions() {
    // select md5('abc'), md5(''), md5('héllo')
    assert_eq!(call("md5", vec![text("abc")]).unwrap(), "900150983cd24fb0d6963f7d28e17f72");
    assert_eq!(call("md5", vec![text("")]).unwrap(), "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(call("MD5", vec![text("héllo")]).unwrap(), "be50e8478cf24ff3595bc7307fb91b50");
    // select length('héllo'), length(''), length('日本語')  =>  5|0|3
    assert_eq!(call("length", vec![text("héllo")]).unwrap(), "5");
    assert_eq!(call("length", vec![text("")]).unwrap(), "0");
    assert_eq!(call("length", vec![text("日本語")]).unwrap(), "3");
    // In a database with LC_CTYPE=C (weft's only collation), PostgreSQL changes the case of
    // ASCII letters only: select lower('ÀÉÎ Hello'), upper('àéî hello')  =>  ÀÉÎ hello|àéî HELLO
    assert_eq!(call("lower", vec![text("ÀÉÎ Hello")]).unwrap(), "ÀÉÎ hello");
    assert_eq!(call("upper", vec![text("àéî hello")]).unwrap(), "àéî HELLO");
    // select repeat('ab', 3), repeat('', 5), repeat('x', 0), repeat('ab', -1)  =>  ababab|||
    assert_eq!(call("repeat", vec![text("ab"), i4(3)]).unwrap(), "ababab");
    assert_eq!(call("repeat", vec![text(""), i4(5)]).unwrap(), "");
    assert_eq!(call("repeat", vec![text("x"), i4(0)]).unwrap(), "");
    assert_eq!(call("repeat", vec![text("ab"), i4(-1)]).unwrap(), "");
    // select repeat('ab', 536870910)  =>  ERROR:  54000: requested length too large
    assert_eq!(err(call("repeat", vec![text("ab"), i4(536870910)])), "54000: requested length too large");
    assert_eq!(err(call("repeat", vec![text("abc"), i4(i32::MAX)])), "54000: requested length too large");
}

#[test]
fn substr_matches_postgres() {
    // select substr('hello', 2), substr('hello', 2, 3), substr('hello', -1, 3), substr('hello', 0, 2),
    //        substr('日本語です', 2, 2), substr('hello', 2147483647, 5), substr('hello', 3, 2147483647)
    //   =>  ello|ell|h|h|本語||llo
    let cases: [(&str, i32, Option<i32>, &str); 10] = [
        ("hello", 2, None, "ello"),
        ("hello", 2, Some(3), "ell"),
        ("hello", -1, Some(3), "h"),
        ("hello", 0, Some(2), "h"),
        ("日本語です", 2, Some(2), "本語"),
        ("hello", i32::MAX, Some(5), ""),
        ("hello", 3, Some(i32::MAX), "llo"),
        // select substr('hello', 0), substr('hello', 2, 0), substr('hello', 10), substr('hello', -5, 3)
        //   =>  hello|||
        ("hello", 0, None, "hello"),
        ("hello", 2, Some(0), ""),
        ("hello", -5, Some(3), ""),
    ];
    for (s, start, len, want) in cases {
        let mut args = vec![text(s), i4(start)];
        args.extend(len.map(i4));
        assert_eq!(call("substr", args).unwrap(), want, "substr({s}, {start}, {len:?})");
    }
    assert_eq!(call("substring", vec![text("hello"), i4(10)]).unwrap(), "");
    // select substr('hello', i32::MIN, i32::MAX)  =>  (empty)
    assert_eq!(call("substr", vec![text("hello"), i4(i32::MIN), i4(i32::MAX)]).unwrap(), "");
    // select substr('hello', 2, -1)  =>  ERROR:  22011: negative substring length not allowed
    assert_eq!(
        err(call("substr", vec![text("hello"), i4(2), i4(-1)])),
        "22011: negative substring length not allowed"
    );
    // select substr(null, 1)  =>  (null)
    assert_eq!(call("substr", vec![null(), i4(1)]).unwrap(), "");
}

#[test]
fn hash_functions() {
    // select hashint4(1), hashint8(1), hashtext('abc'), hashint4(0), hashint4(-1), hashint8(0),
    //        hashint8(5000000000), hashtext(''), hashtext('weft')
    assert_eq!(call("hashint4", vec![i4(1)]).unwrap(), "-1905060026");
    assert_eq!(call("hashint8", vec![i8(1)]).unwrap(), "-1905060026");
    assert_eq!(call("hashtext", vec![text("abc")]).unwrap(), "-785388649");
    assert_eq!(call("hashint4", vec![i4(0)]).unwrap(), "-272711505");
    assert_eq!(call("hashint4", vec![i4(-1)]).unwrap(), "385747274");
    assert_eq!(call("hashint8", vec![i8(0)]).unwrap(), "-272711505");
    assert_eq!(call("hashint8", vec![i8(5_000_000_000)]).unwrap(), "-694934712");
    assert_eq!(call("hashtext", vec![text("")]).unwrap(), "-1477818771");
    assert_eq!(call("hashtext", vec![text("weft")]).unwrap(), "1563039319");
    // hashint8(int4 column) casts to int8: select hashint8(1::int4)  =>  -1905060026
    let e = resolve_function("hashint8", vec![i4(1)]).unwrap();
    assert!(matches!(&e, Expr::Function { args, .. } if matches!(args[0], Expr::Cast { to: DataType::Int8, .. })));
    assert_eq!(show(eval(&e).unwrap()), "-1905060026");
}

#[test]
fn abs_function() {
    // select abs(-1.5::float8), abs(-2.50), abs(-5), abs(-5::int8), abs(null)  =>  1.5|2.50|5|5|
    assert_eq!(call("abs", vec![f8(-1.5)]).unwrap(), "1.5");
    assert_eq!(call("abs", vec![num("-2.50")]).unwrap(), "2.50");
    assert_eq!(call("abs", vec![i4(-5)]).unwrap(), "5");
    assert_eq!(call("abs", vec![i8(-5)]).unwrap(), "5");
    assert_eq!(call("abs", vec![null()]).unwrap(), "");
    assert_eq!(resolve_function("abs", vec![i8(-5)]).unwrap().data_type(), DataType::Int8);
    // select abs(-2147483648)  =>  ERROR:  22003: integer out of range
    assert_eq!(err(call("abs", vec![i4(i32::MIN)])), "22003: integer out of range");
    assert_eq!(err(call("abs", vec![i8(i64::MIN)])), "22003: bigint out of range");
}

#[test]
fn random_and_setseed() {
    let ctx = EvalContext::new();
    let random = resolve_function("random", vec![]).unwrap();
    assert_eq!(random.data_type(), DataType::Float8);
    let setseed = resolve_function("setseed", vec![num("0.5")]).unwrap();
    assert_eq!(setseed.data_type(), DataType::Text);
    assert_eq!(setseed.eval(&[], &ctx).unwrap(), Datum::Null);
    let first: Vec<Datum> = (0..5).map(|_| random.eval(&[], &ctx).unwrap()).collect();
    for d in &first {
        let Datum::Float8(v) = d else { panic!("random() gave {d:?}") };
        assert!((0.0..1.0).contains(v));
    }
    // A clone shares the sequence: reseed through the clone, replay on the original.
    let shared = ctx.clone();
    setseed.eval(&[], &shared).unwrap();
    let again: Vec<Datum> = (0..5).map(|_| random.eval(&[], &ctx).unwrap()).collect();
    assert_eq!(first, again);
    assert_ne!(first[0], first[1]);
    // select setseed(2)  =>  ERROR:  22023: setseed parameter 2 is out of allowed range [-1,1]
    let bad = resolve_function("setseed", vec![i4(2)]).unwrap();
    assert_eq!(err(bad.eval(&[], &ctx)), "22023: setseed parameter 2 is out of allowed range [-1,1]");
    assert!(ctx.set_seed(-1.0).is_ok() && ctx.set_seed(1.0).is_ok());
    assert!(ctx.set_seed(f64::NAN).is_err());
    // Strict: setseed(NULL) is NULL and does not reseed.
    let null_seed = resolve_function("setseed", vec![null()]).unwrap();
    assert_eq!(null_seed.eval(&[], &ctx).unwrap(), Datum::Null);
}
