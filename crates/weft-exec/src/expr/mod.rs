//! Scalar expressions: the bound, typed tree the planner hands to operators, and its
//! evaluation over one input row.
//!
//! # Shape
//!
//! The binder turns SQL into an [`Expr`] through the resolvers in [`resolve`]
//! (`resolve_binary`, `resolve_unary`, `resolve_function`, `resolve_case`,
//! `resolve_coalesce`, `coerce`). They do PostgreSQL's operator and function
//! resolution for weft's six types, restricted to what those types need:
//!
//! 1. numeric promotion follows PostgreSQL's implicit casts: `int4 → int8 → numeric →
//!    float8`; an operator on two numeric-family types runs in the larger one, so every
//!    `Binary` node's operands have the same type after resolution;
//! 2. nothing is implicitly cast to or from `text`, `bool`, except that `||` casts a
//!    non-text side to text (PostgreSQL's `anynonarray || text`);
//! 3. an untyped `NULL` literal (`Expr::Literal { value: Datum::Null, .. }`) plays
//!    PostgreSQL's `unknown`: it takes the type the other operand or the parameter wants;
//! 4. errors carry PostgreSQL's SQLSTATE, message and hint (`42883` "operator does not
//!    exist", `42804` "argument of AND must be type boolean", ...).
//!
//! [`Expr::eval`] (in `eval.rs`) then trusts those invariants: it never converts between
//! types except in a `Cast` node, which calls [`cast::cast_datum`].
//!
//! # Why a tree walk
//!
//! Evaluation is a recursive walk over the tree, one row at a time. A vectorised or
//! compiled evaluator would be faster, but weft's operators are row-at-a-time, and a tree
//! walk keeps the rules (three-valued logic, lazy `CASE`/`COALESCE`, strict functions)
//! in one obvious place. Short-circuiting `AND`/`OR`, `CASE` and `COALESCE` evaluate their
//! operands lazily, so `CASE WHEN x = 0 THEN 0 ELSE 1 / x END` never divides by zero.
//!
//! # Departures from PostgreSQL
//!
//! - `numeric` is weft's fixed 128-bit decimal (38 significant digits); it has PostgreSQL
//!   15's `NaN` and `±Infinity` (see `weft_common::numeric`).
//! - `lower`/`upper` use Rust's Unicode case mapping, not a collation's (`upper('ß')` is
//!   `SS`; PostgreSQL in the C locale leaves `ß` alone).
//! - `random()` is xoshiro256++ seeded per session, not PostgreSQL's generator: the same
//!   `setseed` gives the same sequence in weft, not the same numbers as PostgreSQL.
//! - `setseed` returns `void` in PostgreSQL; here its result is `Datum::Null` of type
//!   `text`.
//! - text input of float8 does not accept C99 hexadecimal floats (`'0x10'`).
//! - string literals reach the resolvers typed `text`, so PostgreSQL's `unknown`-literal
//!   coercion (`hashint4('5')`) does not happen; only `NULL` literals are untyped.

use weft_common::{Coercion, DataType, Datum, TypeModifier};

pub mod array;
pub mod array_literal;
pub mod cast;
pub mod compare;
pub mod datetime;
mod datetime_fns;
mod eval;
pub mod functions;
pub mod like;
mod math;
mod regexp;
mod text;
mod to_char_number;
pub mod resolve;
mod sequence;
mod keyed_subplan;
mod subplan;
mod subquery;
#[cfg(test)]
mod tests;

pub(crate) use eval::comparison;
pub use cast::cast_datum;
pub use compare::{compare_datums, datum_hash, GroupKey};
pub use functions::EvalContext;
pub use sequence::{sequence_name, Sequences, SessionSequenceValues};
pub use subplan::{SubLinkKind, SubPlan, SubPlanRunner, SubPlanSlot};
pub use subquery::{run_init_plans, InitPlan};
pub use resolve::{
    can_coerce, coerce, common_type, resolve_binary, resolve_case, resolve_coalesce, resolve_function,
    resolve_unary,
};

/// A bound scalar expression. Every node's type is known at bind time; the binder
/// inserts `Cast` nodes so operands of a `Binary` already have the operator's input types.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// The value of input column `index`.
    Column { index: usize, data_type: DataType },
    /// A constant; `Datum::Null` carries its type here.
    Literal { value: Datum, data_type: DataType },
    Cast { expr: Box<Expr>, to: DataType },
    /// A type modifier applied to a value of its storage type (or `int8` for `smallint`):
    /// a cast to `numeric(6,2)` / `varchar(3)` / `smallint`, or a store into a column so
    /// declared (`weft_common::typmod`). Its type is the modifier's storage type.
    ApplyModifier { expr: Box<Expr>, modifier: TypeModifier, coercion: Coercion },
    Binary { op: BinaryOp, left: Box<Expr>, right: Box<Expr>, data_type: DataType },
    Unary { op: UnaryOp, expr: Box<Expr>, data_type: DataType },
    IsNull { expr: Box<Expr>, negated: bool },
    /// `CASE [operand] WHEN .. THEN .. ELSE .. END`; with an operand, each `when` is
    /// compared for equality with it (binder rewrites to plain boolean conditions).
    Case { whens: Vec<(Expr, Expr)>, otherwise: Option<Box<Expr>>, data_type: DataType },
    Coalesce { args: Vec<Expr>, data_type: DataType },
    Function { func: ScalarFunction, args: Vec<Expr>, data_type: DataType },
    /// An uncorrelated `(SELECT ...)`: the value its init plan computed before the
    /// statement's plan started (`subquery.rs`).
    ScalarSubquery(std::sync::Arc<InitPlan>),
    /// A correlated `(SELECT ...)`, run for each row with `args` (over this row) as its
    /// parameters, or an EXISTS / ANY / ALL / IN over a subquery (`subplan.rs`).
    SubPlan { subplan: std::sync::Arc<SubPlan>, args: Vec<Expr> },
    /// Inside a subplan's plan: the value of outer reference `index`.
    Param { index: usize, data_type: DataType },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    /// `||` on text.
    Concat,
}

impl BinaryOp {
    /// The comparison with its operands swapped (`a < b` is `b > a`); any other
    /// operator as it is.
    pub fn commuted(self) -> BinaryOp {
        match self {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            other => other,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarFunction {
    Md5,
    /// `pg_size_pretty(bigint | numeric)`.
    PgSizePretty,
    /// `pg_backend_pid()`: the session's number (`EvalContext::with_backend_pid`).
    PgBackendPid,
    HashInt4,
    HashInt8,
    HashText,
    Length,
    Lower,
    Upper,
    Repeat,
    Substr,
    Abs,
    Random,
    SetSeed,
    NextVal,
    CurrVal,
    SetVal,
    /// `text LIKE pattern [ESCAPE e]` (`~~`), and its negation `NOT LIKE` (`!~~`).
    Like,
    NotLike,
    /// `ILIKE` (`~~*`) and `NOT ILIKE` (`!~~*`).
    ILike,
    NotILike,
    Round,
    Trunc,
    Ceil,
    Floor,
    Sign,
    Sqrt,
    Power,
    Mod,
    Replace,
    StrPos,
    Left,
    Right,
    BTrim,
    LTrim,
    RTrim,
    Reverse,
    LPad,
    RPad,
    SplitPart,
    StartsWith,
    /// `NULLIF(a, b)`: NULL when `a = b`, else `a`. Both arguments are in the input type of
    /// the `=` the binder resolved, which is the result's type too (PostgreSQL: `NULLIF(1,
    /// 2.2)` is numeric).
    NullIf,
    /// `GREATEST(...)` / `LEAST(...)`: the largest / smallest non-NULL argument, all of one
    /// type (PostgreSQL's MinMaxExpr).
    Greatest,
    Least,
    /// Regular expressions (`regex.rs`): `~`, `~*`, `!~`, `!~*`, `SIMILAR TO`, and the
    /// `regexp_*` functions; `SubstringPattern` is `substring(text FROM pattern)`.
    RegexMatch,
    RegexIMatch,
    RegexNotMatch,
    RegexNotIMatch,
    SimilarTo,
    NotSimilarTo,
    RegexpReplace,
    RegexpCount,
    RegexpLike,
    RegexpSubstr,
    SubstringPattern,
    /// More text functions (`text.rs`).
    Initcap,
    OctetLength,
    BitLength,
    Chr,
    Ascii,
    Translate,
    ToHex,
    QuoteIdent,
    QuoteLiteral,
    Overlay,
    /// Functions of any number of arguments of any type, read through their output
    /// text (`variadic "any"` in PostgreSQL's catalog); not strict.
    Concat,
    ConcatWs,
    Format,
    NumNulls,
    NumNonNulls,
    QuoteNullable,
    /// More numeric functions (`math.rs`).
    Exp,
    Ln,
    Log10,
    Cbrt,
    Pi,
    Degrees,
    Radians,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Atan2,
    Gcd,
    Lcm,
    Div,
    WidthBucket,
    Scale,
    /// Bitwise operators on integers: `&`, `|`, `#`, `<<`, `>>`, and prefix `~`.
    BitAnd,
    BitOr,
    BitXor,
    ShiftLeft,
    ShiftRight,
    BitNot,
    /// A date/time function (`datetime.rs`).
    DateTime(datetime::DateTimeFunction),
    /// An array function, operator or constructor (`array.rs`); handles its own NULLs.
    Array(array::ArrayFunction),
}
