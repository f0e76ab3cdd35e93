//! Small traversals over bound expressions used by the planner.

use std::collections::BTreeMap;

use weft_exec::expr::Expr;

/// Visit every node of `expr`, parents first.
pub fn walk(expr: &Expr, f: &mut impl FnMut(&Expr)) {
    f(expr);
    match expr {
        // A subquery's plan has its own columns: not this expression's.
        Expr::Column { .. } | Expr::Literal { .. } | Expr::ScalarSubquery(_) | Expr::Param { .. } => {}
        // Its arguments are over this expression's row.
        Expr::SubPlan { args, .. } => args.iter().for_each(|a| walk(a, f)),
        Expr::Cast { expr, .. } | Expr::ApplyModifier { expr, .. } | Expr::Unary { expr, .. } | Expr::IsNull { expr, .. } => walk(expr, f),
        Expr::Binary { left, right, .. } => {
            walk(left, f);
            walk(right, f);
        }
        Expr::Case { whens, otherwise, .. } => {
            for (c, r) in whens {
                walk(c, f);
                walk(r, f);
            }
            if let Some(o) = otherwise {
                walk(o, f);
            }
        }
        Expr::Coalesce { args, .. } | Expr::Function { args, .. } => args.iter().for_each(|a| walk(a, f)),
    }
}

/// Visit every node of `expr` mutably, parents first (a node `f` replaces is then walked
/// as it now is).
pub fn walk_mut(expr: &mut Expr, f: &mut impl FnMut(&mut Expr)) {
    f(expr);
    match expr {
        Expr::Column { .. } | Expr::Literal { .. } | Expr::ScalarSubquery(_) | Expr::Param { .. } => {}
        Expr::SubPlan { args, .. } => args.iter_mut().for_each(|a| walk_mut(a, f)),
        Expr::Cast { expr, .. } | Expr::ApplyModifier { expr, .. } | Expr::Unary { expr, .. } | Expr::IsNull { expr, .. } => walk_mut(expr, f),
        Expr::Binary { left, right, .. } => {
            walk_mut(left, f);
            walk_mut(right, f);
        }
        Expr::Case { whens, otherwise, .. } => {
            for (c, r) in whens {
                walk_mut(c, f);
                walk_mut(r, f);
            }
            if let Some(o) = otherwise {
                walk_mut(o, f);
            }
        }
        Expr::Coalesce { args, .. } | Expr::Function { args, .. } => args.iter_mut().for_each(|a| walk_mut(a, f)),
    }
}

/// Rewrite every column index in place.
pub fn remap_columns(expr: &mut Expr, map: &BTreeMap<usize, usize>) {
    walk_mut(expr, &mut |e| {
        if let Expr::Column { index, .. } = e {
            *index = map[index];
        }
    });
}

/// Replace every parameter `Param { index }` (of a subplan or LATERAL item) by
/// `values[index]`, the expression it stands for.
pub fn replace_params(expr: &mut Expr, values: &[Expr]) {
    walk_mut(expr, &mut |e| {
        if let Expr::Param { index, .. } = e {
            *e = values[*index].clone();
        }
    });
}

pub fn columns_used(expr: &Expr, out: &mut std::collections::BTreeSet<usize>) {
    walk(expr, &mut |e| {
        if let Expr::Column { index, .. } = e {
            out.insert(*index);
        }
    });
}

/// Volatile functions whose results depend on evaluation order: such expressions keep a
/// pipeline serial, as PostgreSQL marks random() parallel-restricted. A correlated
/// subquery (which runs a plan per row) and its parameters (known only while it runs,
/// never folded at plan time) count as volatile too.
pub fn is_volatile(expr: &Expr) -> bool {
    expr.runs_per_row() || {
        let mut param = false;
        walk(expr, &mut |e| param |= matches!(e, Expr::Param { .. }));
        param
    }
}

/// A copy of `expr` with every `Column { index }` replaced by `values[index]`.
pub fn substitute_columns(expr: &Expr, values: &[Expr]) -> Expr {
    let recurse = |e: &Expr| Box::new(substitute_columns(e, values));
    match expr {
        Expr::Column { index, .. } => values[*index].clone(),
        Expr::Literal { .. } | Expr::ScalarSubquery(_) | Expr::Param { .. } => expr.clone(),
        Expr::SubPlan { subplan, args } => {
            Expr::SubPlan { subplan: subplan.clone(), args: args.iter().map(|a| substitute_columns(a, values)).collect() }
        }
        Expr::Cast { expr, to } => Expr::Cast { expr: recurse(expr), to: *to },
        Expr::ApplyModifier { expr, modifier, coercion } => {
            Expr::ApplyModifier { expr: recurse(expr), modifier: *modifier, coercion: *coercion }
        }
        Expr::Unary { op, expr, data_type } => Expr::Unary { op: *op, expr: recurse(expr), data_type: *data_type },
        Expr::IsNull { expr, negated } => Expr::IsNull { expr: recurse(expr), negated: *negated },
        Expr::Binary { op, left, right, data_type } => {
            Expr::Binary { op: *op, left: recurse(left), right: recurse(right), data_type: *data_type }
        }
        Expr::Case { whens, otherwise, data_type } => Expr::Case {
            whens: whens.iter().map(|(c, r)| (substitute_columns(c, values), substitute_columns(r, values))).collect(),
            otherwise: otherwise.as_ref().map(|o| recurse(o)),
            data_type: *data_type,
        },
        Expr::Coalesce { args, data_type } => {
            Expr::Coalesce { args: args.iter().map(|a| substitute_columns(a, values)).collect(), data_type: *data_type }
        }
        Expr::Function { func, args, data_type } => {
            Expr::Function { func: *func, args: args.iter().map(|a| substitute_columns(a, values)).collect(), data_type: *data_type }
        }
    }
}

/// `filter`'s top-level AND terms reordered as PostgreSQL orders a qual list by cost
/// (`order_qual_clauses`): terms that run a subquery per row after the others, so that a
/// cheap term turning a row away spares the subquery. The order is otherwise kept.
pub fn order_quals(filter: Expr) -> Expr {
    use weft_exec::expr::BinaryOp;
    fn flatten(e: Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::Binary { op: BinaryOp::And, left, right, .. } => {
                flatten(*left, out);
                flatten(*right, out);
            }
            other => out.push(other),
        }
    }
    let runs_subquery = |e: &Expr| {
        let mut found = false;
        walk(e, &mut |n| found |= matches!(n, Expr::SubPlan { .. }));
        found
    };
    let mut terms = Vec::new();
    flatten(filter, &mut terms);
    if !terms.iter().any(runs_subquery) {
        return terms.into_iter().reduce(and).expect("a term");
    }
    let (cheap, costly): (Vec<Expr>, Vec<Expr>) = terms.into_iter().partition(|e| !runs_subquery(e));
    cheap.into_iter().chain(costly).reduce(and).expect("a term")
}

pub fn and(left: Expr, right: Expr) -> Expr {
    Expr::Binary { op: weft_exec::expr::BinaryOp::And, left: Box::new(left), right: Box::new(right), data_type: weft_common::DataType::Bool }
}

/// Input columns that `qual` proves non-null wherever it passes (is true): a row with NULL
/// in any of them makes it NULL or false. This is PostgreSQL's `find_nonnullable_rels` over
/// columns: strict operators and casts pass NULL through, `IS NOT NULL` rejects it, AND
/// at the top level proves what any arm proves, OR (and AND below the top) only what
/// every arm proves; `x op ANY (subquery)` at the top level proves `x`'s. Functions,
/// CASE and COALESCE prove nothing.
pub fn nonnullable_columns(qual: &Expr) -> std::collections::BTreeSet<usize> {
    fn go(e: &Expr, top_level: bool) -> std::collections::BTreeSet<usize> {
        use weft_exec::expr::{BinaryOp, UnaryOp};
        match e {
            Expr::Column { index, .. } => [*index].into(),
            Expr::Binary { op: BinaryOp::And, left, right, .. } if top_level => {
                let mut out = go(left, true);
                out.extend(go(right, true));
                out
            }
            Expr::Binary { op: BinaryOp::And | BinaryOp::Or, left, right, .. } => {
                let (l, r) = (go(left, top_level), go(right, top_level));
                l.intersection(&r).copied().collect()
            }
            Expr::Binary { left, right, .. } => {
                let mut out = go(left, false);
                out.extend(go(right, false));
                out
            }
            // NOT false is true: below NOT only strictness counts.
            Expr::Unary { op: UnaryOp::Not, expr, .. } => go(expr, false),
            Expr::Unary { expr, .. } | Expr::Cast { expr, .. } | Expr::ApplyModifier { expr, .. } => go(expr, false),
            Expr::IsNull { expr, negated: true } if top_level => go(expr, false),
            // A one-argument COALESCE is the identity (it marks an IN list).
            Expr::Coalesce { args, .. } if args.len() == 1 => go(&args[0], top_level),
            // `x op ANY (subquery)` is NULL or false for a NULL `x` (its last argument),
            // never true; not below NOT (false there is true) nor for ALL (true when empty).
            Expr::SubPlan { subplan, args } if top_level => match subplan.kind {
                weft_exec::expr::SubLinkKind::Quantified { all: false, width: 1, .. } => args.last().map(|x| go(x, false)).unwrap_or_default(),
                _ => Default::default(),
            },
            _ => Default::default(),
        }
    }
    go(qual, true)
}
