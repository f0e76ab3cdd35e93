//! Property tests against trivially correct models: i128 arithmetic for checked integer
//! arithmetic, and a total order's laws for `compare_datums`/`GroupKey`.

use std::cmp::Ordering;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use proptest::prelude::*;
use weft_common::{DataType, Datum, Numeric};

use crate::expr::eval::{eval_binary, int4_arith, int8_arith};
use crate::expr::{cast_datum, compare_datums, resolve_binary, resolve_function, EvalContext, Expr, GroupKey};

use super::BinaryOp;

const ARITH_OPS: [BinaryOp; 5] = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod];

/// The exact result, `None` for division by zero. Rust's `/` and `%` on i128 truncate
/// toward zero like SQL's.
fn model(op: BinaryOp, a: i128, b: i128) -> Option<i128> {
    match op {
        BinaryOp::Add => Some(a + b),
        BinaryOp::Sub => Some(a - b),
        BinaryOp::Mul => Some(a * b),
        BinaryOp::Div => (b != 0).then(|| a / b),
        BinaryOp::Mod => (b != 0).then(|| a % b),
        _ => unreachable!(),
    }
}

fn edgy_i32() -> impl Strategy<Value = i32> {
    prop_oneof![any::<i32>(), -3i32..=3, Just(i32::MIN), Just(i32::MAX), Just(i32::MIN + 1), Just(-1)]
}

fn edgy_i64() -> impl Strategy<Value = i64> {
    prop_oneof![any::<i64>(), -3i64..=3, Just(i64::MIN), Just(i64::MAX), any::<i32>().prop_map(i64::from)]
}

fn hash_of<T: Hash>(v: &T) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

/// Values of one type drawn so that equal-but-different representations are common.
fn datum_of(t: u8) -> BoxedStrategy<Datum> {
    match t {
        0 => any::<bool>().prop_map(Datum::Bool).boxed(),
        1 => (-3i32..3).prop_map(Datum::Int4).boxed(),
        2 => prop_oneof![
            Just(f64::NAN),
            Just(-f64::NAN),
            Just(0.0),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            (-2i32..2).prop_map(f64::from),
            any::<f64>(),
        ]
        .prop_map(Datum::Float8)
        .boxed(),
        3 => (-30i128..30, 0u16..4).prop_map(|(mantissa, scale)| Datum::Numeric(Numeric { mantissa, scale })).boxed(),
        _ => "[ab]{0,2}".prop_map(Datum::Text).boxed(),
    }
}

/// A value equal to `d` under SQL comparison, in another representation where the type
/// has one: `-0` for `0`, a negative NaN for NaN, `1.50` for `1.5`.
fn twin(d: &Datum) -> Datum {
    match d {
        Datum::Float8(v) if *v == 0.0 => Datum::Float8(-v),
        Datum::Float8(v) if v.is_nan() => Datum::Float8(-v),
        Datum::Numeric(n) => Datum::Numeric(Numeric { mantissa: n.mantissa * 10, scale: n.scale + 1 }),
        other => other.clone(),
    }
}

/// Two values of one type, equal (but differently represented) a third of the time.
fn datum_pair(t: u8) -> impl Strategy<Value = (Datum, Datum)> {
    (datum_of(t), datum_of(t), 0u8..3).prop_map(|(a, b, pick)| if pick == 0 { (a.clone(), twin(&a)) } else { (a, b) })
}

fn group_row() -> impl Strategy<Value = Vec<Datum>> {
    (0u8..5).prop_flat_map(|t| {
        prop::collection::vec(prop_oneof![4 => datum_of(t), 1 => Just(Datum::Null)], 0..3)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn int4_arithmetic_matches_i128(a in edgy_i32(), b in edgy_i32(), op_index in 0usize..5) {
        let op = ARITH_OPS[op_index];
        let got = int4_arith(op, a, b);
        match model(op, i128::from(a), i128::from(b)) {
            None => prop_assert_eq!(got.unwrap_err().sqlstate.0, "22012"),
            Some(exact) if i32::try_from(exact).is_ok() => prop_assert_eq!(i128::from(got.unwrap()), exact),
            Some(_) => {
                let e = got.unwrap_err();
                prop_assert_eq!((e.sqlstate.0, e.message.as_str()), ("22003", "integer out of range"));
            }
        }
    }

    #[test]
    fn int8_arithmetic_matches_i128(a in edgy_i64(), b in edgy_i64(), op_index in 0usize..5) {
        let op = ARITH_OPS[op_index];
        let got = int8_arith(op, a, b);
        match model(op, i128::from(a), i128::from(b)) {
            None => prop_assert_eq!(got.unwrap_err().sqlstate.0, "22012"),
            Some(exact) if i64::try_from(exact).is_ok() => prop_assert_eq!(i128::from(got.unwrap()), exact),
            Some(_) => {
                let e = got.unwrap_err();
                prop_assert_eq!((e.sqlstate.0, e.message.as_str()), ("22003", "bigint out of range"));
            }
        }
    }

    /// Antisymmetry, transitivity and totality of `compare_datums` on one type, and
    /// agreement of `GroupKey` equality and hashing with it.
    #[test]
    fn compare_is_a_total_order_consistent_with_group_key(
        ((a, b), c) in (0u8..5).prop_flat_map(|t| (datum_pair(t), datum_of(t)))
    ) {
        let ab = compare_datums(&a, &b);
        prop_assert_eq!(ab, compare_datums(&b, &a).reverse());
        prop_assert_eq!(compare_datums(&a, &a), Ordering::Equal);
        let bc = compare_datums(&b, &c);
        if ab != Ordering::Greater && bc != Ordering::Greater {
            prop_assert_ne!(compare_datums(&a, &c), Ordering::Greater);
        }
        if ab == Ordering::Equal && bc == Ordering::Equal {
            prop_assert_eq!(compare_datums(&a, &c), Ordering::Equal);
        }
        let (ka, kb) = (GroupKey(vec![a.clone()]), GroupKey(vec![b.clone()]));
        prop_assert_eq!(ka == kb, ab == Ordering::Equal);
        if ka == kb {
            prop_assert_eq!(hash_of(&ka), hash_of(&kb));
        }
        prop_assert_eq!(ka.cmp(&kb), ab);
    }

    #[test]
    fn group_keys_hash_consistently(a in group_row(), b in group_row(), twin_row in any::<bool>()) {
        let b = if twin_row { a.iter().map(twin).collect() } else { b };
        let (ka, kb) = (GroupKey(a), GroupKey(b));
        if ka == kb {
            prop_assert_eq!(hash_of(&ka), hash_of(&kb));
            prop_assert_eq!(ka.cmp(&kb), Ordering::Equal);
        } else {
            prop_assert_ne!(ka.cmp(&kb), Ordering::Equal);
        }
    }

    #[test]
    fn int_text_round_trip(v in edgy_i64(), w in edgy_i32()) {
        let text = cast_datum(Datum::Int8(v), DataType::Text).unwrap();
        prop_assert_eq!(cast_datum(text, DataType::Int8).unwrap(), Datum::Int8(v));
        let text = cast_datum(Datum::Int4(w), DataType::Text).unwrap();
        prop_assert_eq!(cast_datum(text, DataType::Int4).unwrap(), Datum::Int4(w));
    }

    /// Shortest round-trip output: every float8 (NaN aside) reads back bit for bit.
    #[test]
    fn float_text_round_trip(v in any::<f64>()) {
        let text = cast_datum(Datum::Float8(v), DataType::Text).unwrap();
        let Datum::Float8(back) = cast_datum(text.clone(), DataType::Float8).unwrap() else {
            panic!("not a float8")
        };
        if v.is_nan() {
            prop_assert!(back.is_nan());
        } else {
            prop_assert_eq!(back.to_bits(), v.to_bits(), "{:?}", text);
        }
    }

    #[test]
    fn bool_text_round_trip(v in any::<bool>()) {
        let text = cast_datum(Datum::Bool(v), DataType::Text).unwrap();
        prop_assert_eq!(cast_datum(text, DataType::Bool).unwrap(), Datum::Bool(v));
        let output = Datum::Text(Datum::Bool(v).to_pg_text().unwrap());
        prop_assert_eq!(cast_datum(output, DataType::Bool).unwrap(), Datum::Bool(v));
    }

    /// Integer arithmetic and comparisons (`Expr::eval_int`, no `Datum` per node) give
    /// what the general path gives — `eval_binary` on each node's operand values — values,
    /// NULLs and errors alike, over int4 and int8 columns (mixed: the resolver's casts),
    /// literals and `length()` of ASCII and other text (NULLs: the columns').
    #[test]
    fn integer_expressions_match_the_general_path(
        row in (edgy_i32(), edgy_i32(), edgy_i64(), 0u8..4, "[a-zé]{0,12}"),
        nulls in 0u8..16,
        ops in prop::collection::vec(0usize..11, 3),
        leaves in prop::collection::vec(0usize..5, 4),
    ) {
        let (a, b, c, text_len_seed, text) = row;
        let row = vec![
            if nulls & 1 != 0 { Datum::Null } else { Datum::Int4(a) },
            if nulls & 2 != 0 { Datum::Null } else { Datum::Int4(b) },
            if nulls & 4 != 0 { Datum::Null } else { Datum::Int8(c) },
            if nulls & 8 != 0 { Datum::Null } else { Datum::Text(text) },
        ];
        let column = |index: usize, data_type| Expr::Column { index, data_type };
        let leaf = |i: usize| match i {
            0 => column(0, DataType::Int4),
            1 => column(1, DataType::Int4),
            2 => column(2, DataType::Int8),
            3 => resolve_function("length", vec![column(3, DataType::Text)]).unwrap(),
            _ => Expr::Literal { value: Datum::Int4(i32::from(text_len_seed) - 1), data_type: DataType::Int4 },
        };
        const OPS: [BinaryOp; 11] = [
            BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod,
            BinaryOp::Eq, BinaryOp::NotEq, BinaryOp::Lt, BinaryOp::LtEq, BinaryOp::Gt, BinaryOp::GtEq,
        ];
        // ((x op0 y) op1 z) op2 w, each op arithmetic or, at the top, a comparison.
        let arith = |i: usize| OPS[i % 5];
        let inner = resolve_binary(arith(ops[0]), leaf(leaves[0]), leaf(leaves[1])).unwrap();
        let middle = resolve_binary(arith(ops[1]), inner, leaf(leaves[2])).unwrap();
        let top = resolve_binary(OPS[ops[2]], middle, leaf(leaves[3])).unwrap();
        let ctx = EvalContext::with_seed(7);
        fn general(e: &Expr, row: &[Datum], ctx: &EvalContext) -> weft_common::Result<Datum> {
            match e {
                Expr::Binary { op, left, right, .. } => {
                    let (l, r) = (general(left, row, ctx)?, general(right, row, ctx)?);
                    if l.is_null() || r.is_null() { Ok(Datum::Null) } else { eval_binary(*op, l, r) }
                }
                Expr::Cast { expr, to } => cast_datum(general(expr, row, ctx)?, *to),
                other => other.eval(row, ctx),
            }
        }
        let (got, want) = (top.eval(&row, &ctx), general(&top, &row, &ctx));
        match (got, want) {
            (Ok(got), Ok(want)) => prop_assert_eq!(got, want, "{:?}", top),
            (Err(got), Err(want)) => prop_assert_eq!(got.sqlstate.0, want.sqlstate.0, "{:?}", top),
            (got, want) => prop_assert!(false, "{:?}: {:?} against {:?}", top, got, want),
        }
    }
}
