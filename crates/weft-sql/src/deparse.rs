//! Bound expressions back to SQL text, as PostgreSQL's `ruleutils.c` prints them in
//! EXPLAIN (`deparse_expression` without pretty-printing):
//!
//! - every operator is parenthesized: `(a > 5)`, `((a + 1) * 2)`, `(NOT flag)`, `(- a)`;
//!   chains of `AND` / `OR` print flat: `((a > 1) AND (b < 2) AND (c = 3))`;
//! - a cast prints as `(x)::type`, its argument always in parentheses: `(a)::text`,
//!   `((a + 1))::bigint`;
//! - constants print as PostgreSQL's `get_const_expr` does: `int4` bare (`'-5'::integer`
//!   when negative), float-looking `numeric` bare, `bool` as `true`/`false`, everything else
//!   quoted and labelled: `'x'::text`, `'5'::bigint`, `'1.5'::double precision`,
//!   `NULL::integer`;
//! - a subexpression without column references or volatile functions is folded to the
//!   constant it evaluates to, as PostgreSQL's planner folds it before EXPLAIN sees it
//!   (`a > 2 + 3` prints `(a > 5)`); one whose evaluation fails is printed as written;
//! - a column prints as its name, quoted when PostgreSQL's `quote_identifier` would quote
//!   it, and qualified (`t.a`) when the caller asks for prefixes (several range-table
//!   entries, or VERBOSE).

use weft_common::{DataType, Datum};
use weft_exec::expr::{cast_datum, BinaryOp, EvalContext, Expr, ScalarFunction, UnaryOp};
use weft_exec::plan::AggregateCall;

/// A column of a node's input, as EXPLAIN names it.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnText {
    pub text: String,
    /// A plain column reference (PostgreSQL's `Var`). Where a parent refers to a computed
    /// column, PostgreSQL wraps it in parentheses (`Sort Key: ((a + 1))`); a `Var` is bare.
    pub is_var: bool,
}

impl ColumnText {
    pub fn var(text: impl Into<String>) -> ColumnText {
        ColumnText { text: text.into(), is_var: true }
    }

    pub fn expr(text: impl Into<String>) -> ColumnText {
        ColumnText { text: text.into(), is_var: false }
    }

    /// How a parent node refers to this column: bare when it is a column reference,
    /// otherwise the expression in parentheses.
    pub fn referenced(&self) -> String {
        if self.is_var {
            self.text.clone()
        } else {
            format!("({})", self.text)
        }
    }
}

/// `expr` as PostgreSQL's EXPLAIN prints it; `input` names the columns it reads.
pub fn deparse(expr: &Expr, input: &[ColumnText]) -> String {
    let mut out = String::new();
    write_expr(expr, input, &mut out);
    out
}

/// `count(*)`, `sum(a)`, `avg((a + 1))`, `percentile_cont('0.5'::double precision) WITHIN
/// GROUP (ORDER BY b)`.
pub fn aggregate_call(call: &AggregateCall, input: &[ColumnText]) -> String {
    let mut out = format!("{}(", call.function.name());
    if call.function.is_ordered_set() {
        for (i, direct) in call.direct.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_expr(direct, input, &mut out);
        }
        out.push_str(") WITHIN GROUP (");
    } else {
        if call.distinct {
            out.push_str("DISTINCT ");
        }
        match &call.arg {
            None => out.push('*'),
            Some(arg) => write_expr(arg, input, &mut out),
        }
        if let Some(arg2) = &call.arg2 {
            out.push_str(", ");
            write_expr(arg2, input, &mut out);
        }
    }
    for (i, key) in call.order_by.iter().enumerate() {
        out.push_str(if i == 0 { if call.function.is_ordered_set() { "ORDER BY " } else { " ORDER BY " } } else { ", " });
        // PostgreSQL's `get_rule_sortgroupclause` parenthesizes function calls (casts).
        let function_call = matches!(key.expr, Expr::Cast { .. } | Expr::Function { .. }) && !is_constant(&key.expr);
        if function_call {
            out.push('(');
        }
        write_expr(&key.expr, input, &mut out);
        if function_call {
            out.push(')');
        }
        match (key.descending, key.nulls_first) {
            (false, false) => {}
            (false, true) => out.push_str(" NULLS FIRST"),
            (true, true) => out.push_str(" DESC"),
            (true, false) => out.push_str(" DESC NULLS LAST"),
        }
    }
    out.push(')');
    if let Some(filter) = &call.filter {
        out.push_str(" FILTER (WHERE ");
        write_expr(filter, input, &mut out);
        out.push(')');
    }
    out
}

/// PostgreSQL's `quote_identifier`: bare when it is lower case letters, digits and
/// underscores, not starting with a digit, and not a reserved keyword.
pub fn quote_identifier(name: &str) -> String {
    let safe = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !RESERVED_KEYWORDS.contains(&name);
    if safe {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// PostgreSQL's reserved keywords (and the column-name-reserved ones a column is likely
/// to be called), which `quote_identifier` quotes.
const RESERVED_KEYWORDS: &[&str] = &[
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "between", "bigint", "bit",
    "boolean", "both", "case", "cast", "char", "character", "check", "coalesce", "collate", "column", "constraint",
    "create", "current_date", "current_role", "current_time", "current_timestamp", "current_user", "dec", "decimal",
    "default", "deferrable", "desc", "distinct", "do", "else", "end", "except", "exists", "extract", "false", "fetch",
    "float", "for", "foreign", "from", "grant", "greatest", "group", "grouping", "having", "in", "initially", "inout",
    "int", "integer", "intersect", "interval", "into", "lateral", "leading", "least", "limit", "localtime",
    "localtimestamp", "national", "nchar", "none", "not", "null", "nullif", "numeric", "offset", "on", "only", "or",
    "order", "out", "overlay", "placing", "position", "precision", "primary", "real", "references", "returning",
    "row", "select", "session_user", "setof", "smallint", "some", "substring", "symmetric", "table", "then", "time",
    "timestamp", "to", "trailing", "treat", "trim", "true", "union", "unique", "user", "using", "values", "varchar",
    "variadic", "when", "where", "window", "with", "xmlattributes", "xmlconcat", "xmlelement", "xmlexists",
    "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot", "xmlserialize", "xmltable",
];

/// A column name as EXPLAIN prints it, qualified by `qualifier` when given.
pub fn column_reference(qualifier: Option<&str>, name: &str) -> String {
    match qualifier {
        Some(q) => format!("{}.{}", quote_identifier(q), quote_identifier(name)),
        None => quote_identifier(name),
    }
}

fn function_name(func: ScalarFunction) -> &'static str {
    match func {
        // Expressions of PostgreSQL's grammar, printed in capitals.
        ScalarFunction::NullIf => "NULLIF",
        ScalarFunction::Greatest => "GREATEST",
        ScalarFunction::Least => "LEAST",
        _ => like_operator(func).unwrap_or_else(|| func.name()),
    }
}

fn like_operator(func: ScalarFunction) -> Option<&'static str> {
    match func {
        ScalarFunction::Like => Some("~~"),
        ScalarFunction::NotLike => Some("!~~"),
        ScalarFunction::ILike => Some("~~*"),
        ScalarFunction::NotILike => Some("!~~*"),
        ScalarFunction::RegexMatch => Some("~"),
        ScalarFunction::RegexIMatch => Some("~*"),
        ScalarFunction::RegexNotMatch => Some("!~"),
        ScalarFunction::RegexNotIMatch => Some("!~*"),
        ScalarFunction::BitAnd => Some("&"),
        ScalarFunction::BitOr => Some("|"),
        ScalarFunction::BitXor => Some("#"),
        ScalarFunction::ShiftLeft => Some("<<"),
        ScalarFunction::ShiftRight => Some(">>"),
        _ => None,
    }
}

fn operator(op: BinaryOp) -> &'static str {
    weft_exec::expr::resolve::binary_op_symbol(op)
}

/// A constant as PostgreSQL's `get_const_expr` prints it (with `showtype` 0).
pub fn constant(value: &Datum, data_type: DataType) -> String {
    let Some(text) = value.to_pg_text() else {
        return format!("NULL::{}", data_type.name());
    };
    match (value, data_type) {
        (Datum::Bool(b), _) => (if *b { "true" } else { "false" }).to_string(),
        (_, DataType::Int4) if !text.starts_with('-') => text,
        (_, DataType::Numeric) if text.starts_with(|c: char| c.is_ascii_digit()) && text.contains(['.', 'e', 'E']) => text,
        _ => format!("'{}'::{}", text.replace('\'', "''"), data_type.name()),
    }
}

/// Does the expression read no column and call nothing volatile (so the planner would
/// have folded it to a constant)?
pub(crate) fn is_constant(expr: &Expr) -> bool {
    match expr {
        // Its value is known only once the statement runs (EXPLAIN prints `$n`).
        Expr::Column { .. } | Expr::ScalarSubquery(_) | Expr::SubPlan { .. } | Expr::Param { .. } => false,
        Expr::Literal { .. } => true,
        Expr::Cast { expr, .. } | Expr::ApplyModifier { expr, .. } | Expr::Unary { expr, .. } | Expr::IsNull { expr, .. } => {
            is_constant(expr)
        }
        Expr::Binary { left, right, .. } => is_constant(left) && is_constant(right),
        Expr::Case { whens, otherwise, .. } => {
            whens.iter().all(|(c, r)| is_constant(c) && is_constant(r)) && otherwise.as_deref().is_none_or(is_constant)
        }
        Expr::Coalesce { args, .. } => args.iter().all(is_constant),
        Expr::Function { func, args, .. } => !func.is_volatile() && args.iter().all(is_constant),
    }
}

fn write_expr(expr: &Expr, input: &[ColumnText], out: &mut String) {
    if !matches!(expr, Expr::Literal { .. }) && is_constant(expr) {
        // Folding never calls a volatile function, so a throwaway context will do.
        if let Ok(value) = expr.eval(&[], &EvalContext::with_seed(0)) {
            out.push_str(&constant(&value, expr.data_type()));
            return;
        }
    }
    match expr {
        Expr::Column { index, .. } => match input.get(*index) {
            Some(column) => out.push_str(&column.text),
            None => out.push_str(&format!("${}", index + 1)),
        },
        Expr::Literal { value, data_type } => out.push_str(&constant(value, *data_type)),
        // PostgreSQL 15 prints an InitPlan's result as its parameter.
        Expr::ScalarSubquery(init_plan) => out.push_str(&format!("${}", init_plan.param())),
        Expr::SubPlan { subplan, args } => {
            let hashed = if subplan.is_hashed(args) { "hashed " } else { "" };
            out.push_str(&format!("({hashed}SubPlan {})", subplan.number))
        }
        // PostgreSQL numbers a subplan's parameters across the statement; here they are
        // numbered within their subplan.
        Expr::Param { index, .. } => out.push_str(&format!("${index}")),
        Expr::Cast { expr, to } => {
            // A constant cast was folded above unless the cast fails; print it as written.
            if let Expr::Literal { value, .. } = expr.as_ref() {
                if let Ok(cast) = cast_datum(value.clone(), *to) {
                    out.push_str(&constant(&cast, *to));
                    return;
                }
            }
            out.push('(');
            write_expr(expr, input, out);
            out.push_str(")::");
            out.push_str(to.name());
        }
        // PostgreSQL's cast to `numeric(6,2)` is one node with the conversion below it.
        Expr::ApplyModifier { expr, modifier, .. } => {
            let inner = match expr.as_ref() {
                Expr::Cast { expr, .. } => expr.as_ref(),
                other => other,
            };
            out.push('(');
            write_expr(inner, input, out);
            out.push_str(")::");
            out.push_str(&modifier.format_type());
        }
        Expr::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), .. } => {
            let mut operands = Vec::new();
            flatten(expr, *op, &mut operands);
            out.push('(');
            for (i, operand) in operands.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                    out.push_str(operator(*op));
                    out.push(' ');
                }
                write_expr(operand, input, out);
            }
            out.push(')');
        }
        Expr::Binary { op, left, right, .. } => {
            out.push('(');
            write_expr(operand(left), input, out);
            out.push(' ');
            out.push_str(operator(*op));
            out.push(' ');
            write_expr(operand(right), input, out);
            out.push(')');
        }
        Expr::Unary { op: UnaryOp::Not, expr: inner, .. } if negate(inner).is_some() => {
            write_expr(&negate(inner).expect("checked"), input, out);
        }
        Expr::Unary { op, expr, .. } => {
            out.push_str(match op {
                UnaryOp::Neg => "(- ",
                UnaryOp::Not => "(NOT ",
            });
            write_expr(expr, input, out);
            out.push(')');
        }
        Expr::IsNull { expr, negated } => {
            out.push('(');
            write_expr(expr, input, out);
            out.push_str(if *negated { " IS NOT NULL)" } else { " IS NULL)" });
        }
        Expr::Case { whens, otherwise, .. } => {
            out.push_str("CASE");
            for (condition, result) in whens {
                out.push_str(" WHEN ");
                write_expr(condition, input, out);
                out.push_str(" THEN ");
                write_expr(result, input, out);
            }
            if let Some(otherwise) = otherwise {
                out.push_str(" ELSE ");
                write_expr(otherwise, input, out);
            }
            out.push_str(" END");
        }
        Expr::Coalesce { args, .. } if in_list_marker(args).is_some() => {
            let inner = in_list_marker(args).expect("checked");
            if !write_any_all(inner, input, out) {
                write_expr(inner, input, out);
            }
        }
        Expr::Coalesce { args, .. } => {
            out.push_str("COALESCE(");
            write_list(args, input, out);
            out.push(')');
        }
        Expr::Function { func, args, .. } if like_operator(*func).is_some() => {
            // PostgreSQL prints LIKE as its operator; an ESCAPE clause becomes like_escape().
            out.push('(');
            write_expr(&args[0], input, out);
            out.push(' ');
            out.push_str(like_operator(*func).expect("checked"));
            out.push(' ');
            if let [_, pattern, escape] = args.as_slice() {
                out.push_str("like_escape(");
                write_list(&[pattern.clone(), escape.clone()], input, out);
                out.push(')');
            } else {
                write_expr(&args[1], input, out);
            }
            out.push(')');
        }
        Expr::Function { func, args, .. } => {
            out.push_str(function_name(*func));
            out.push('(');
            write_list(args, input, out);
            out.push(')');
        }
    }
}

/// The OR (or, negated, AND) chain a one-argument COALESCE marks as an IN list or an
/// `op ANY | ALL (array)` (`bind.rs`), or the one comparison of a one-element array.
fn in_list_marker(args: &[Expr]) -> Option<&Expr> {
    match args {
        [inner @ Expr::Binary { op: BinaryOp::Or | BinaryOp::And, .. }] => Some(inner),
        [inner @ Expr::Binary { op, .. }] if comparison_op(*op) => Some(inner),
        _ => None,
    }
}

fn comparison_op(op: BinaryOp) -> bool {
    matches!(op, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq)
}

/// An IN list as PostgreSQL prints its `ScalarArrayOpExpr`: `(a = ANY ('{1,2}'::integer[]))`,
/// or for NOT IN `(a <> ALL (...))`; `ARRAY[b, 1]` when some element is not a constant.
/// False (nothing written) when `chain` is not such a list.
fn write_any_all(chain: &Expr, input: &[ColumnText], out: &mut String) -> bool {
    let Expr::Binary { op: chain_op, .. } = chain else { return false };
    // A one-element array has no chain to tell ANY from ALL (both mean the same).
    let quantifier = match chain_op {
        BinaryOp::And => "ALL",
        _ => "ANY",
    };
    let mut items = Vec::new();
    match chain_op {
        BinaryOp::And | BinaryOp::Or => flatten(chain, *chain_op, &mut items),
        _ => items.push(chain),
    }
    let mut op = None;
    let mut left_text: Option<String> = None;
    let mut elements: Vec<&Expr> = Vec::with_capacity(items.len());
    for item in &items {
        let Expr::Binary { op: item_op, left, right, .. } = item else { return false };
        if !comparison_op(*item_op) || op.is_some_and(|o| o != *item_op) {
            return false;
        }
        op = Some(*item_op);
        let text = deparse(operand(left), input);
        if left_text.as_ref().is_some_and(|l| *l != text) {
            return false;
        }
        left_text = Some(text);
        elements.push(right);
    }
    let (Some(op), Some(left), Some(first)) = (op, left_text, elements.first()) else { return false };
    let element_type = first.data_type();
    if elements.iter().any(|e| e.data_type() != element_type) {
        return false;
    }
    out.push('(');
    out.push_str(&left);
    out.push(' ');
    out.push_str(operator(op));
    out.push(' ');
    out.push_str(quantifier);
    out.push_str(" (");
    let eval = EvalContext::with_seed(0);
    let values: Option<Vec<Datum>> =
        elements.iter().map(|e| if is_constant(e) { e.eval(&[], &eval).ok() } else { None }).collect();
    match values {
        Some(values) => {
            let literal: Vec<String> = values.iter().map(array_element).collect();
            let text = format!("{{{}}}", literal.join(","));
            out.push_str(&format!("'{}'::{}[]", text.replace('\'', "''"), element_type.name()));
        }
        None => {
            out.push_str("ARRAY[");
            for (i, e) in elements.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_expr(e, input, out);
            }
            out.push(']');
        }
    }
    out.push_str("))");
    true
}

/// One element of an array literal as PostgreSQL's `array_out` writes it: quoted when
/// empty, `NULL`-like, or holding a delimiter, brace, quote, backslash or white space.
fn array_element(value: &Datum) -> String {
    let Some(text) = value.to_pg_text() else { return "NULL".to_string() };
    let needs_quotes = text.is_empty()
        || text.eq_ignore_ascii_case("null")
        || text.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_ascii_whitespace());
    if needs_quotes {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text
    }
}

/// `NOT expr` the way PostgreSQL's planner simplifies it (`negate_clause`): a comparison
/// becomes its negator (`NOT (a <> 3)` is `(a = 3)`), `NOT NOT x` is `x`, `IS NULL` and
/// `IS NOT NULL` swap, and `NOT` moves inside `AND` / `OR` by De Morgan's laws. `None`
/// when `NOT` stays.
pub fn negate(expr: &Expr) -> Option<Expr> {
    let negator = |op| match op {
        BinaryOp::Eq => Some(BinaryOp::NotEq),
        BinaryOp::NotEq => Some(BinaryOp::Eq),
        BinaryOp::Lt => Some(BinaryOp::GtEq),
        BinaryOp::GtEq => Some(BinaryOp::Lt),
        BinaryOp::Gt => Some(BinaryOp::LtEq),
        BinaryOp::LtEq => Some(BinaryOp::Gt),
        _ => None,
    };
    let not = |e: &Expr| negate(e).unwrap_or_else(|| Expr::Unary { op: UnaryOp::Not, expr: Box::new(e.clone()), data_type: DataType::Bool });
    match expr {
        Expr::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), left, right, data_type } => Some(Expr::Binary {
            op: if *op == BinaryOp::And { BinaryOp::Or } else { BinaryOp::And },
            left: Box::new(not(left)),
            right: Box::new(not(right)),
            data_type: *data_type,
        }),
        Expr::Binary { op, left, right, data_type } => {
            negator(*op).map(|op| Expr::Binary { op, left: left.clone(), right: right.clone(), data_type: *data_type })
        }
        Expr::Unary { op: UnaryOp::Not, expr, .. } => Some(expr.as_ref().clone()),
        Expr::Function { func, args, data_type } => {
            let negated = match func {
                ScalarFunction::Like => ScalarFunction::NotLike,
                ScalarFunction::NotLike => ScalarFunction::Like,
                ScalarFunction::ILike => ScalarFunction::NotILike,
                ScalarFunction::NotILike => ScalarFunction::ILike,
                ScalarFunction::RegexMatch => ScalarFunction::RegexNotMatch,
                ScalarFunction::RegexNotMatch => ScalarFunction::RegexMatch,
                ScalarFunction::RegexIMatch => ScalarFunction::RegexNotIMatch,
                ScalarFunction::RegexNotIMatch => ScalarFunction::RegexIMatch,
                _ => return None,
            };
            Some(Expr::Function { func: negated, args: args.clone(), data_type: *data_type })
        }
        Expr::IsNull { expr, negated } => Some(Expr::IsNull { expr: expr.clone(), negated: !negated }),
        // NOT IN: the list's marker stays around the negated chain.
        Expr::Coalesce { args, data_type } if in_list_marker(args).is_some() => {
            Some(Expr::Coalesce { args: vec![not(&args[0])], data_type: *data_type })
        }
        _ => None,
    }
}

/// An operator's operand as PostgreSQL would have it: PostgreSQL has cross-type integer
/// operators (`int48gt`, `int48pl`, ...), so where weft's binder widened an int4 operand
/// to int8 PostgreSQL has no cast to print.
fn operand(expr: &Expr) -> &Expr {
    match expr {
        Expr::Cast { expr: inner, to: DataType::Int8 } if inner.data_type() == DataType::Int4 => inner,
        other => other,
    }
}

fn write_list(args: &[Expr], input: &[ColumnText], out: &mut String) {
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(arg, input, out);
    }
}

fn flatten<'e>(expr: &'e Expr, op: BinaryOp, out: &mut Vec<&'e Expr>) {
    match expr {
        Expr::Binary { op: o, left, right, .. } if *o == op => {
            flatten(left, op, out);
            flatten(right, op, out);
        }
        other => out.push(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_common::DataType::{Bool, Float8, Int4, Int8, Numeric, Text};
    use weft_exec::plan::AggregateFunction;

    fn col(index: usize, data_type: DataType) -> Expr {
        Expr::Column { index, data_type }
    }

    fn lit(value: Datum, data_type: DataType) -> Expr {
        Expr::Literal { value, data_type }
    }

    fn bin(op: BinaryOp, left: Expr, right: Expr) -> Expr {
        let data_type = if matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod) {
            left.data_type()
        } else {
            Bool
        };
        Expr::Binary { op, left: Box::new(left), right: Box::new(right), data_type }
    }

    fn names() -> Vec<ColumnText> {
        vec![ColumnText::var("a"), ColumnText::var("b"), ColumnText::var("Mixed Case"), ColumnText::expr("(a + 1)")]
    }

    #[test]
    fn operators_are_parenthesized_as_postgres_does() {
        let e = bin(BinaryOp::Gt, col(0, Int4), lit(Datum::Int4(5), Int4));
        assert_eq!(deparse(&e, &names()), "(a > 5)");
        let e = bin(BinaryOp::Mul, bin(BinaryOp::Add, col(0, Int4), lit(Datum::Int4(1), Int4)), lit(Datum::Int4(2), Int4));
        assert_eq!(deparse(&e, &names()), "((a + 1) * 2)");
        let and = bin(
            BinaryOp::And,
            bin(BinaryOp::And, bin(BinaryOp::Gt, col(0, Int4), lit(Datum::Int4(1), Int4)), bin(BinaryOp::Lt, col(1, Int4), lit(Datum::Int4(2), Int4))),
            bin(BinaryOp::NotEq, col(0, Int4), col(1, Int4)),
        );
        assert_eq!(deparse(&and, &names()), "((a > 1) AND (b < 2) AND (a <> b))");
        let not = Expr::Unary { op: UnaryOp::Not, expr: Box::new(col(0, Bool)), data_type: Bool };
        assert_eq!(deparse(&not, &names()), "(NOT a)");
        let neg = Expr::Unary { op: UnaryOp::Neg, expr: Box::new(col(0, Int4)), data_type: Int4 };
        assert_eq!(deparse(&neg, &names()), "(- a)");
        let is_null = Expr::IsNull { expr: Box::new(col(1, Int4)), negated: true };
        assert_eq!(deparse(&is_null, &names()), "(b IS NOT NULL)");
        // NOT as PostgreSQL's planner simplifies it.
        let not = |e: Expr| Expr::Unary { op: UnaryOp::Not, expr: Box::new(e), data_type: Bool };
        assert_eq!(deparse(&not(bin(BinaryOp::NotEq, col(0, Int4), col(1, Int4))), &names()), "(a = b)");
        assert_eq!(deparse(&not(is_null.clone()), &names()), "(b IS NULL)");
        let either = bin(BinaryOp::Or, bin(BinaryOp::Lt, col(0, Int4), col(1, Int4)), col(4, Bool));
        let mut input = names();
        input.push(ColumnText::var("flag"));
        assert_eq!(deparse(&not(either), &input), "((a >= b) AND (NOT flag))");
    }

    #[test]
    fn casts_functions_and_constants() {
        let md5 = Expr::Function {
            func: ScalarFunction::Md5,
            args: vec![Expr::Cast { expr: Box::new(col(0, Int4)), to: Text }],
            data_type: Text,
        };
        assert_eq!(deparse(&md5, &names()), "md5((a)::text)");
        let eq = bin(BinaryOp::Eq, md5, lit(Datum::Text("it's".into()), Text));
        assert_eq!(deparse(&eq, &names()), "(md5((a)::text) = 'it''s'::text)");
        let cast_expr = Expr::Cast { expr: Box::new(bin(BinaryOp::Add, col(0, Int4), lit(Datum::Int4(1), Int4))), to: Int8 };
        assert_eq!(deparse(&cast_expr, &names()), "((a + 1))::bigint");
        assert_eq!(constant(&Datum::Int4(-5), Int4), "'-5'::integer");
        assert_eq!(constant(&Datum::Int8(5), Int8), "'5'::bigint");
        assert_eq!(constant(&Datum::Float8(1.5), Float8), "'1.5'::double precision");
        assert_eq!(constant(&Datum::Bool(true), Bool), "true");
        assert_eq!(constant(&Datum::Null, Int4), "NULL::integer");
        let numeric: Datum = cast_datum(Datum::Text("1.50".into()), Numeric).unwrap();
        assert_eq!(constant(&numeric, Numeric), "1.50");
        assert_eq!(constant(&cast_datum(Datum::Int4(7), Numeric).unwrap(), Numeric), "'7'::numeric");
        // int4 widened to int8 for an operator: PostgreSQL's cross-type operator needs no cast.
        let e = bin(BinaryOp::Gt, Expr::Cast { expr: Box::new(col(0, Int4)), to: Int8 }, lit(Datum::Int8(5_000_000_000), Int8));
        assert_eq!(deparse(&e, &names()), "(a > '5000000000'::bigint)");
        let e = bin(BinaryOp::Gt, col(0, Int8), Expr::Cast { expr: Box::new(lit(Datum::Int4(10), Int4)), to: Int8 });
        assert_eq!(deparse(&e, &names()), "(a > 10)");
        // ... but a function's argument keeps its cast, as PostgreSQL shows it.
        let f = Expr::Function { func: ScalarFunction::HashInt8, args: vec![Expr::Cast { expr: Box::new(col(0, Int4)), to: Int8 }], data_type: Int4 };
        assert_eq!(deparse(&f, &names()), "hashint8((a)::bigint)");
    }

    #[test]
    fn constant_subexpressions_are_folded() {
        let e = bin(BinaryOp::Gt, col(0, Int4), bin(BinaryOp::Add, lit(Datum::Int4(2), Int4), lit(Datum::Int4(3), Int4)));
        assert_eq!(deparse(&e, &names()), "(a > 5)");
        let neg = Expr::Unary { op: UnaryOp::Neg, expr: Box::new(lit(Datum::Int4(3), Int4)), data_type: Int4 };
        assert_eq!(deparse(&bin(BinaryOp::Lt, col(0, Int4), neg), &names()), "(a < '-3'::integer)");
        // Folding that fails keeps the expression.
        let div = bin(BinaryOp::Div, lit(Datum::Int4(1), Int4), lit(Datum::Int4(0), Int4));
        assert_eq!(deparse(&div, &names()), "(1 / 0)");
        let random = Expr::Function { func: ScalarFunction::Random, args: vec![], data_type: Float8 };
        assert_eq!(deparse(&random, &names()), "random()");
    }

    #[test]
    fn columns_case_and_coalesce() {
        let e = Expr::Case {
            whens: vec![(bin(BinaryOp::Gt, col(0, Int4), lit(Datum::Int4(1), Int4)), lit(Datum::Text("x".into()), Text))],
            otherwise: Some(Box::new(col(2, Text))),
            data_type: Text,
        };
        let mut input = names();
        input[2] = ColumnText::var(quote_identifier("Mixed Case"));
        assert_eq!(deparse(&e, &input), "CASE WHEN (a > 1) THEN 'x'::text ELSE \"Mixed Case\" END");
        let c = Expr::Coalesce { args: vec![col(1, Int4), lit(Datum::Int4(0), Int4)], data_type: Int4 };
        assert_eq!(deparse(&c, &input), "COALESCE(b, 0)");
        assert_eq!(input[3].referenced(), "((a + 1))");
        assert_eq!(ColumnText::var("a").referenced(), "a");
        assert_eq!(column_reference(Some("t"), "order"), "t.\"order\"");
        assert_eq!(quote_identifier("randint"), "randint");
        assert_eq!(quote_identifier("*VALUES*"), "\"*VALUES*\"");
        let sum = AggregateCall::new(AggregateFunction::Sum, Some(bin(BinaryOp::Add, col(0, Int4), lit(Datum::Int4(1), Int4))), Int8);
        assert_eq!(aggregate_call(&sum, &input), "sum((a + 1))");
        let count = AggregateCall::new(AggregateFunction::CountStar, None, Int8);
        assert_eq!(aggregate_call(&count, &input), "count(*)");
        // As PostgreSQL's EXPLAIN VERBOSE prints them.
        let filtered = AggregateCall { filter: Some(bin(BinaryOp::Gt, col(0, Int4), lit(Datum::Int4(1), Int4))), ..count };
        assert_eq!(aggregate_call(&filtered, &input), "count(*) FILTER (WHERE (a > 1))");
        let mut joined = AggregateCall::new(AggregateFunction::StringAgg, Some(col(2, Text)), Text);
        joined.arg2 = Some(lit(Datum::Text(",".into()), Text));
        let key = |descending, nulls_first| weft_exec::plan::AggregateOrderKey { expr: col(0, Int4), descending, nulls_first };
        joined.order_by = vec![key(true, false), key(false, false)];
        assert_eq!(aggregate_call(&joined, &input), "string_agg(\"Mixed Case\", ','::text ORDER BY a DESC NULLS LAST, a)");
        // A regression's implicit casts to float8 show, as in PostgreSQL.
        let float = |e: Expr| Expr::Cast { expr: Box::new(e), to: Float8 };
        let mut slope = AggregateCall::new(AggregateFunction::RegrSlope, Some(float(col(0, Int4))), Float8);
        slope.arg2 = Some(float(col(1, Int8)));
        let input2 = [ColumnText::var("a"), ColumnText::var("b")];
        assert_eq!(aggregate_call(&slope, &input2), "regr_slope((a)::double precision, (b)::double precision)");
        let stddev = AggregateCall::new(AggregateFunction::Stddev, Some(col(0, Int4)), Numeric);
        assert_eq!(aggregate_call(&stddev, &input), "stddev(a)");
        // Ordered-set calls: direct arguments, then WITHIN GROUP; a cast key in parentheses.
        let mut percentile = AggregateCall::new(AggregateFunction::PercentileCont, Some(float(col(0, Int4))), Float8);
        percentile.direct = vec![lit(Datum::Float8(0.5), Float8)];
        percentile.order_by = vec![weft_exec::plan::AggregateOrderKey { expr: float(col(0, Int4)), descending: true, nulls_first: true }];
        assert_eq!(
            aggregate_call(&percentile, &input2),
            "percentile_cont('0.5'::double precision) WITHIN GROUP (ORDER BY ((a)::double precision) DESC)"
        );
        let mut mode = AggregateCall::new(AggregateFunction::Mode, Some(col(1, Int8)), Int8);
        mode.order_by = vec![weft_exec::plan::AggregateOrderKey { expr: col(1, Int8), descending: false, nulls_first: true }];
        mode.filter = Some(bin(BinaryOp::Gt, col(0, Int4), lit(Datum::Int4(1), Int4)));
        assert_eq!(aggregate_call(&mode, &input2), "mode() WITHIN GROUP (ORDER BY b NULLS FIRST) FILTER (WHERE (a > 1))");
        let nullif = Expr::Function { func: ScalarFunction::NullIf, args: vec![col(0, Int4), lit(Datum::Int4(0), Int4)], data_type: Int4 };
        assert_eq!(deparse(&nullif, &input), "NULLIF(a, 0)");
    }
}
