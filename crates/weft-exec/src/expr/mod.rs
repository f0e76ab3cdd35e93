//! Scalar expressions: the bound, typed tree the planner hands to operators, and its
//! evaluation over one input row.

use weft_common::{DataType, Datum};

/// A bound scalar expression. Every node's type is known at bind time; the binder
/// inserts `Cast` nodes so operands of a `Binary` already have the operator's input types.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// The value of input column `index`.
    Column { index: usize, data_type: DataType },
    /// A constant; `Datum::Null` carries its type here.
    Literal { value: Datum, data_type: DataType },
    Cast { expr: Box<Expr>, to: DataType },
    Binary { op: BinaryOp, left: Box<Expr>, right: Box<Expr>, data_type: DataType },
    Unary { op: UnaryOp, expr: Box<Expr>, data_type: DataType },
    IsNull { expr: Box<Expr>, negated: bool },
    /// `CASE [operand] WHEN .. THEN .. ELSE .. END`; with an operand, each `when` is
    /// compared for equality with it (binder rewrites to plain boolean conditions).
    Case { whens: Vec<(Expr, Expr)>, otherwise: Option<Box<Expr>>, data_type: DataType },
    Coalesce { args: Vec<Expr>, data_type: DataType },
    Function { func: ScalarFunction, args: Vec<Expr>, data_type: DataType },
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarFunction {
    Md5,
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
}
