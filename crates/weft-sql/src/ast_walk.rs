//! Walks over sqlparser's AST, all through one visitor type.
//!
//! `Visit::visit` is generic over the visitor, so every visitor type — and every closure
//! handed to `ast::visit_expressions` — compiles its own copy of the walk over the whole
//! AST (thousands of functions). With a dozen walks that was two thirds of this crate's
//! machine code and most of its compile time. Here every walk goes through [`Dyn`] or
//! [`DynMut`], which forward each callback to a `dyn` visitor: the AST walk is compiled
//! once for reading and once for rewriting, and a visitor costs only its own callbacks.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, GroupByExpr, Ident, ObjectName, OrderBy, OrderByExpr, Query, Select, Statement, TableFactor, ValueWithSpan, Visit,
    VisitMut, Visitor, VisitorMut,
};

/// Forwards every callback to the visitor it holds.
struct Dyn<'a>(&'a mut dyn Visitor<Break = ()>);

/// [`Dyn`] for walks that rewrite.
struct DynMut<'a>(&'a mut dyn VisitorMut<Break = ()>);

/// One forwarding method per callback: `(pre, post, node type)` for each kind of node,
/// taking the node by shared or by exclusive reference.
macro_rules! forward {
    (shared: $(($pre:ident, $post:ident, $node:ty)),+ $(,)?) => {
        $(
            fn $pre(&mut self, node: &$node) -> ControlFlow<()> {
                self.0.$pre(node)
            }
            fn $post(&mut self, node: &$node) -> ControlFlow<()> {
                self.0.$post(node)
            }
        )+
    };
    (exclusive: $(($pre:ident, $post:ident, $node:ty)),+ $(,)?) => {
        $(
            fn $pre(&mut self, node: &mut $node) -> ControlFlow<()> {
                self.0.$pre(node)
            }
            fn $post(&mut self, node: &mut $node) -> ControlFlow<()> {
                self.0.$post(node)
            }
        )+
    };
}

macro_rules! forward_all {
    ($access:ident) => {
        forward!($access:
            (pre_visit_query, post_visit_query, Query),
            (pre_visit_select, post_visit_select, Select),
            (pre_visit_relation, post_visit_relation, ObjectName),
            (pre_visit_table_factor, post_visit_table_factor, TableFactor),
            (pre_visit_expr, post_visit_expr, Expr),
            (pre_visit_statement, post_visit_statement, Statement),
            (pre_visit_value, post_visit_value, ValueWithSpan),
            (pre_visit_ident, post_visit_ident, Ident),
            (pre_visit_order_by, post_visit_order_by, OrderBy),
            (pre_visit_order_by_expr, post_visit_order_by_expr, OrderByExpr),
            (pre_visit_group_by, post_visit_group_by, GroupByExpr),
        );
    };
}

impl Visitor for Dyn<'_> {
    type Break = ();
    forward_all!(shared);
}

impl VisitorMut for DynMut<'_> {
    type Break = ();
    forward_all!(exclusive);
}

/// Walk `node` with `visitor`.
pub(crate) fn walk<N: Visit + ?Sized>(node: &N, visitor: &mut dyn Visitor<Break = ()>) -> ControlFlow<()> {
    node.visit(&mut Dyn(visitor))
}

/// Walk `node` with `visitor`, which may rewrite it.
pub(crate) fn walk_mut<N: VisitMut + ?Sized>(node: &mut N, visitor: &mut dyn VisitorMut<Break = ()>) -> ControlFlow<()> {
    node.visit(&mut DynMut(visitor))
}

/// Every expression of `node`, outer ones first (sqlparser's `visit_expressions`).
pub(crate) fn expressions<N: Visit + ?Sized>(node: &N, mut each: impl FnMut(&Expr) -> ControlFlow<()>) -> ControlFlow<()> {
    struct Expressions<'a>(&'a mut dyn FnMut(&Expr) -> ControlFlow<()>);
    impl Visitor for Expressions<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            (self.0)(expr)
        }
    }
    walk(node, &mut Expressions(&mut each))
}

/// Every table name `node` reads from (sqlparser's `visit_relations`).
pub(crate) fn relations<N: Visit + ?Sized>(node: &N, mut each: impl FnMut(&ObjectName) -> ControlFlow<()>) -> ControlFlow<()> {
    struct Relations<'a>(&'a mut dyn FnMut(&ObjectName) -> ControlFlow<()>);
    impl Visitor for Relations<'_> {
        type Break = ();
        fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
            (self.0)(relation)
        }
    }
    walk(node, &mut Relations(&mut each))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    #[test]
    fn walks_reach_nested_queries() {
        let statements =
            Parser::parse_sql(&PostgreSqlDialect {}, "SELECT a + 1 FROM t WHERE b IN (SELECT c FROM u) ORDER BY (SELECT 2)").unwrap();
        let mut idents = Vec::new();
        let _ = expressions(&statements, |e| {
            if let Expr::Identifier(i) = e {
                idents.push(i.value.clone());
            }
            ControlFlow::Continue(())
        });
        assert_eq!(idents, ["a", "b", "c"]);
        let mut tables = Vec::new();
        let _ = relations(&statements, |r| {
            tables.push(r.to_string());
            ControlFlow::Continue(())
        });
        assert_eq!(tables, ["t", "u"]);
        let stopped = expressions(&statements, |_| ControlFlow::Break(()));
        assert!(stopped.is_break());
    }
}
