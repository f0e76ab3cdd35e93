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

/// `filter`'s top-level AND terms in the order PostgreSQL evaluates a qual list
/// (`order_qual_clauses`): cheapest per row first ([`qual_cost`]), equal costs in their
/// order, except that equalities come after the other terms (PostgreSQL's planner takes
/// them into equivalence classes and adds them back to the list last). Terms that run a
/// subquery per row go last. The order decides which error a row raises, if any.
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
    let mut terms = Vec::new();
    flatten(filter, &mut terms);
    let (others, equalities): (Vec<Expr>, Vec<Expr>) = terms.into_iter().partition(|e| !is_equivalence(e));
    let mut costed: Vec<(f64, Expr)> = others.into_iter().chain(equalities).map(|e| (qual_cost(&e), e)).collect();
    // Stable: ties keep their order.
    costed.sort_by(|a, b| a.0.total_cmp(&b.0));
    costed.into_iter().map(|(_, e)| e).reduce(and).expect("a term")
}

/// An equality PostgreSQL would take into an equivalence class: `=` between two
/// expressions, not both constant, neither volatile.
fn is_equivalence(e: &Expr) -> bool {
    let Expr::Binary { op: weft_exec::expr::BinaryOp::Eq, left, right, .. } = e else { return false };
    let mut columns = std::collections::BTreeSet::new();
    columns_used(e, &mut columns);
    !columns.is_empty() && !is_volatile(left) && !is_volatile(right)
}

/// A qual's cost per row in units of `cpu_operator_cost`, as PostgreSQL's
/// `cost_qual_eval` counts it: one per operator, function call and cast (two for a cast
/// to or from text, an output and an input function; none for a widening PostgreSQL's
/// cross-type operators do without), nothing for AND, OR, NOT, IS NULL,
/// CASE and COALESCE themselves; an IN list (`x = ANY (array)` there) half an equality
/// per element; constant parts nothing. A subquery run per row costs more than
/// anything else.
pub fn qual_cost(expr: &Expr) -> f64 {
    use weft_exec::expr::{BinaryOp, UnaryOp};
    if folds_to_constant(expr) {
        return 0.0;
    }
    match expr {
        Expr::Column { .. } | Expr::Literal { .. } | Expr::ScalarSubquery(_) | Expr::Param { .. } => 0.0,
        Expr::SubPlan { .. } => f64::INFINITY,
        Expr::Cast { expr, to } => {
            use weft_common::DataType as T;
            let cast = match (expr.data_type(), *to) {
                // Widenings PostgreSQL leaves to a cross-type operator: no cast runs.
                (T::Int4, T::Int8) | (T::Date, T::Timestamp | T::TimestampTz) | (T::Timestamp, T::TimestampTz) => 0.0,
                (T::Text, _) | (_, T::Text) => 2.0,
                _ => 1.0,
            };
            cast + qual_cost(expr)
        }
        Expr::ApplyModifier { expr, .. } => 1.0 + qual_cost(expr),
        Expr::Unary { op: UnaryOp::Not, expr, .. } | Expr::IsNull { expr, .. } => qual_cost(expr),
        Expr::Unary { expr, .. } => 1.0 + qual_cost(expr),
        Expr::Binary { op: BinaryOp::And | BinaryOp::Or, left, right, .. } => qual_cost(left) + qual_cost(right),
        Expr::Binary { left, right, .. } => 1.0 + qual_cost(left) + qual_cost(right),
        Expr::Case { whens, otherwise, .. } => {
            whens.iter().map(|(c, r)| qual_cost(c) + qual_cost(r)).sum::<f64>() + otherwise.as_deref().map_or(0.0, qual_cost)
        }
        // The IN list marker (`bind.rs`) over its OR of `x = item`: x once, then half an
        // equality and the item per element.
        // `op ANY | ALL (array)` is the same marker over an OR (AND) chain of `x op item`.
        Expr::Coalesce { args, .. } if args.len() == 1 => {
            let mut items = Vec::new();
            chain_leaves(&args[0], &mut items);
            match items.first() {
                Some(Expr::Binary { op, left, .. }) if !matches!(op, BinaryOp::And | BinaryOp::Or) => {
                    let per_item = |e: &Expr| match e {
                        Expr::Binary { op: item_op, right, .. } if item_op == op => 0.5 + qual_cost(right),
                        other => qual_cost(other),
                    };
                    qual_cost(left) + items.iter().map(|e| per_item(e)).sum::<f64>()
                }
                _ => qual_cost(&args[0]),
            }
        }
        Expr::Coalesce { args, .. } => args.iter().map(qual_cost).sum(),
        Expr::Function { args, .. } => {
            // A function's argument is cast by a call of its own, widenings included
            // (no cross-type operator takes it over), unless it folds to a constant.
            let arg_cost = |a: &Expr| match a {
                Expr::Cast { expr, .. } if !folds_to_constant(a) => {
                    (qual_cost(a) - qual_cost(expr)).max(1.0) + qual_cost(expr)
                }
                other => qual_cost(other),
            };
            1.0 + args.iter().map(arg_cost).sum::<f64>()
        }
    }
}

/// Constants fold before anything runs (`2 + 3` is 5): an expression reading no column
/// and calling nothing volatile costs nothing per row.
fn folds_to_constant(expr: &Expr) -> bool {
    let mut columns = std::collections::BTreeSet::new();
    columns_used(expr, &mut columns);
    columns.is_empty() && !is_volatile(expr)
}

/// The leaves of an OR chain, or of an AND chain when `e` is one.
fn chain_leaves<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    use weft_exec::expr::BinaryOp;
    fn go<'e>(e: &'e Expr, chain: BinaryOp, out: &mut Vec<&'e Expr>) {
        match e {
            Expr::Binary { op, left, right, .. } if *op == chain => {
                go(left, chain, out);
                go(right, chain, out);
            }
            other => out.push(other),
        }
    }
    match e {
        Expr::Binary { op: op @ (BinaryOp::Or | BinaryOp::And), .. } => go(e, *op, out),
        other => out.push(other),
    }
}

/// WHERE's conjuncts with those the planner can evaluate now folded, as PostgreSQL's
/// `eval_const_expressions` does: a true one is dropped, a false or NULL one makes the
/// whole condition `false` (`WHERE 1 = 2 AND ...`), which the executor then runs as a
/// One-Time Filter that reads nothing (`never_passes`). Only operators, casts and CASE
/// over literals fold here (no function: a prepared plan may outlive a stable one's
/// value); one that fails to evaluate is left to fail when the statement runs. Other
/// pseudoconstant conjuncts (init plans, parameters) stay, evaluated once per run.
pub fn fold_constant_conjuncts(filter: Expr) -> Option<Expr> {
    let foldable = |e: &Expr| {
        let mut calls = false;
        walk(e, &mut |n| calls |= matches!(n, Expr::Function { .. }));
        !calls && crate::deparse::is_constant(e)
    };
    let mut kept = Vec::new();
    for c in filter.conjuncts() {
        if foldable(c) {
            match c.eval(&[], &weft_exec::expr::EvalContext::with_seed(0)) {
                Ok(weft_common::Datum::Bool(true)) => continue,
                Ok(_) => return Some(Expr::Literal { value: weft_common::Datum::Bool(false), data_type: weft_common::DataType::Bool }),
                Err(_) => {}
            }
        }
        kept.push(c.clone());
    }
    kept.into_iter().reduce(and)
}

/// Does a filter of `steps` hold a constant false conjunct (a WHERE folded to false)?
/// Such a pipeline reads nothing (PostgreSQL's dummy plan), so it asks for no workers.
pub fn filtered_out(steps: &[weft_exec::plan::Step]) -> bool {
    steps.iter().any(|s| {
        matches!(s, weft_exec::plan::Step::Filter(f) if f.conjuncts().iter().any(|c| matches!(c, Expr::Literal { value: weft_common::Datum::Bool(false) | weft_common::Datum::Null, .. })))
    })
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
            // NOT (x IS NULL) is x IS NOT NULL (PostgreSQL's negate_clause rewrites it so
            // before reduce_outer_joins looks); otherwise NOT false is true, so below NOT
            // only strictness counts.
            Expr::Unary { op: UnaryOp::Not, expr, .. } => match expr.as_ref() {
                Expr::IsNull { expr: tested, negated: false } if top_level => go(tested, false),
                _ => go(expr, false),
            },
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

/// Conditions WHERE's conjuncts imply over no column: with `c = p` (a column and a
/// parameter or literal of its type), every other comparison `c op q` of that column with
/// a parameter or literal holds only if `p op q` does. Such a pseudoconstant gate is
/// evaluated once per run, so `x = $1 AND x < $1` reads nothing for any outer row, as
/// PostgreSQL's B-tree scan finds such keys contradictory before it reads the index.
/// Only parameters and literals: evaluating them cannot fail where the row-wise
/// conditions would not have been evaluated (an empty input).
pub fn implied_gates(conjuncts: &[Expr]) -> Vec<Expr> {
    use weft_exec::expr::BinaryOp;
    let is_value = |e: &Expr| matches!(e, Expr::Param { .. } | Expr::Literal { .. });
    // `column op value` (either way round), as (column, op, value).
    let comparison = |e: &Expr| -> Option<(usize, BinaryOp, Expr)> {
        let Expr::Binary { op, left, right, .. } = e else { return None };
        if !matches!(op, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq) {
            return None;
        }
        if left.data_type() != right.data_type() {
            return None;
        }
        match (left.as_ref(), right.as_ref()) {
            (Expr::Column { index, .. }, v) if is_value(v) => Some((*index, *op, v.clone())),
            (v, Expr::Column { index, .. }) if is_value(v) => Some((*index, op.commuted(), v.clone())),
            _ => None,
        }
    };
    let comparisons: Vec<(usize, BinaryOp, Expr)> = conjuncts.iter().filter_map(comparison).collect();
    let mut gates = Vec::new();
    for (i, (column, op, p)) in comparisons.iter().enumerate() {
        if *op != BinaryOp::Eq {
            continue;
        }
        for (j, (other, other_op, q)) in comparisons.iter().enumerate() {
            // Two literals are left to the scan (its constant ranges see the clash) and to
            // EXPLAIN as PostgreSQL shows them.
            let params = matches!(p, Expr::Param { .. }) || matches!(q, Expr::Param { .. });
            // The same equality twice (or the pair seen the other way) adds nothing.
            let repeated = *other_op == BinaryOp::Eq && (j < i || q == p);
            if i == j || other != column || repeated || !params {
                continue;
            }
            gates.push(Expr::Binary { op: *other_op, left: Box::new(p.clone()), right: Box::new(q.clone()), data_type: weft_common::DataType::Bool });
        }
    }
    gates
}
