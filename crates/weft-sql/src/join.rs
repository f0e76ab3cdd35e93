//! Joins: JOIN clauses, comma lists, and WHERE's `EXISTS` / `IN` subqueries, planned as
//! hash joins inside one pipeline.
//!
//! The FROM clause is first *analysed* ([`analyze_from`]): every table, subquery or
//! function in it becomes a relation whose columns sit at fixed places in the *raw row*
//! (all relations' columns, in FROM order), and the query's scope maps each visible column
//! to an expression over that row — a relation's column, or for `JOIN ... USING` the
//! merged column (the left one, the right one for RIGHT JOIN, `COALESCE` of both for FULL
//! JOIN). ON conditions are bound against the scope of their own join.
//!
//! Planning ([`plan_joins`]) then builds one pipeline, left-deep: the *probe* relation is
//! the pipeline's source and every other relation is the build side of a `Step::HashJoin`.
//! Inner joins (and comma lists) form *islands* whose order is free: the largest item is
//! probed, then the connected item with the fewest rows is joined next (an item with no
//! equality to what is joined is a cross join with no keys). Outer joins keep their sides;
//! when both are single relations the smaller one is built and LEFT becomes RIGHT (or the
//! reverse). A build side that itself holds joins is planned as its own pipeline and
//! materialized. Conditions go as low as they are valid: one relation's conditions filter
//! its scan (unless an outer join makes it nullable above them), `a = b` across the two
//! sides becomes a hash key, the rest a join filter or a filter after the join.
//! `EXISTS`, `IN`, `NOT EXISTS` and `NOT IN` at the top level of WHERE become semi and
//! anti joins after the FROM clause's joins; their correlated equalities become keys.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sqlparser::ast::{self, Spanned, TableFactor};
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_exec::expr::{self as ex, BinaryOp, Expr};
use weft_exec::plan::{HashJoin, HashJoinMode, JoinType, Pipeline, Plan, ScanLabel, Source, Step};

use crate::bind::{contains_aggregate, object_name, Binder, Scope, ScopeColumn};
use crate::exprutil::{columns_used, is_volatile, remap_columns, substitute_columns};
use crate::join_size::{join_rows, key_column, KeyDistinct};
use crate::planner::{choose_workers_reading, plan_query, plan_table_factor, prune_heap_columns, require_bool, From, PlanContext};

/// A relation whose size is unknown (a subquery) is planned as this many rows.
const UNKNOWN_ROWS: f64 = 1000.0;

/// One relation of a FROM clause.
struct Rel {
    source: Source,
    columns: Vec<ScopeColumn>,
    rows: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Inner,
    Left,
    Right,
    Full,
}

#[derive(Clone)]
enum Tree {
    Rel(usize),
    /// `on`: the join's conditions, conjuncts over the raw row.
    Join { kind: Kind, left: Box<Tree>, right: Box<Tree>, on: Vec<Expr> },
}

impl Tree {
    fn rels(&self, out: &mut BTreeSet<usize>) {
        match self {
            Tree::Rel(r) => {
                out.insert(*r);
            }
            Tree::Join { left, right, .. } => {
                left.rels(out);
                right.rels(out);
            }
        }
    }

    /// No outer join anywhere in the tree.
    fn is_inner_only(&self) -> bool {
        match self {
            Tree::Rel(_) => true,
            Tree::Join { kind, left, right, .. } => *kind == Kind::Inner && left.is_inner_only() && right.is_inner_only(),
        }
    }

    fn rel_set(&self) -> BTreeSet<usize> {
        let mut out = BTreeSet::new();
        self.rels(&mut out);
        out
    }
}

/// A subtree's columns as the query sees them: (scope column, value over the raw row).
#[derive(Default)]
struct Columns {
    visible: Vec<(ScopeColumn, Expr)>,
    qualified_only: Vec<(ScopeColumn, Expr)>,
}

impl Columns {
    fn scope(&self) -> Scope {
        Scope {
            columns: self.visible.iter().map(|(c, _)| c.clone()).collect(),
            qualified_only: self.qualified_only.iter().map(|(c, _)| c.clone()).collect(),
            outer: Vec::new(),
            outer_qualified_only: 0,
        }
    }

    /// Values of the scope's columns in index order (visible, then qualified-only).
    fn values(&self) -> Vec<Expr> {
        self.visible.iter().chain(&self.qualified_only).map(|(_, e)| e.clone()).collect()
    }
}

/// The FROM clause analysed: relations, how they are joined, and the scope it defines.
pub(crate) struct FromClause {
    rels: Vec<Rel>,
    /// Where each relation's columns start in the raw row.
    offsets: Vec<usize>,
    tree: Tree,
    pub scope: Scope,
    /// The value of each scope column (visible, then qualified-only) over the raw row.
    values: Vec<Expr>,
    /// Qualifiers whose `t.*` lists its columns in scope order (LATERAL subqueries pulled
    /// up), not in the order of the raw columns they read.
    in_scope_order: Vec<String>,
}

impl FromClause {
    fn raw_width(&self) -> usize {
        self.offsets.last().map(|o| o + self.rels.last().map(|r| r.columns.len()).unwrap_or(0)).unwrap_or(0)
    }

    /// The relation a raw column belongs to.
    fn rel_of(&self, raw: usize) -> usize {
        self.offsets.partition_point(|&o| o <= raw) - 1
    }

    /// Make every heap scan decode only the raw columns read above it (`needed`, the join
    /// tree's conditions, `conditions` over several relations) and those its own filter
    /// reads; returns, per relation, the raw columns its scan decodes and those its rows
    /// carry past the scan's filter, in order. Without outer joins a conjunct of
    /// `conditions` on one relation is applied by that relation's scan, so a column only
    /// it reads is decoded there and dropped after the filter (a build side's table does
    /// not carry it).
    fn prune_columns(&mut self, mut needed: BTreeSet<usize>, conditions: &[Expr]) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
        let mut scan_only = BTreeSet::new();
        let inner_only = self.tree.is_inner_only();
        for c in conditions {
            let target = if inner_only && self.rels_used(c).len() == 1 { &mut scan_only } else { &mut needed };
            columns_used(c, target);
        }
        collect_tree_columns(&self.tree, &mut needed);
        let mut decoded = Vec::with_capacity(self.rels.len());
        let mut produced = Vec::with_capacity(self.rels.len());
        for (rel, &offset) in self.rels.iter_mut().zip(&self.offsets) {
            let mine: Vec<usize> = (offset..offset + rel.columns.len()).collect();
            match &mut rel.source {
                Source::Heap(heap) => {
                    let decode: Vec<usize> = mine.iter().copied().filter(|c| needed.contains(c) || scan_only.contains(c)).collect();
                    heap.columns = decode.iter().map(|c| c - offset).collect();
                    produced.push(decode.iter().copied().filter(|c| needed.contains(c)).collect());
                    decoded.push(decode);
                }
                // A simple subquery is read as its table (see `scan`): its row then holds
                // only the columns read above.
                source if crate::pull_up::simple_subquery(source).is_some() => {
                    produced.push(mine.iter().copied().filter(|c| needed.contains(c)).collect());
                    decoded.push(mine);
                }
                _ => {
                    produced.push(mine.clone());
                    decoded.push(mine);
                }
            }
        }
        (decoded, produced)
    }

    /// A select list's expressions over this FROM clause, with `*` and `t.*` expanded to
    /// the columns they stand for (as `plan_select` expands them).
    pub(crate) fn select_items(&self, projection: &[ast::SelectItem]) -> Result<Vec<ast::Expr>> {
        let mut items = Vec::with_capacity(projection.len());
        for item in projection {
            match item {
                ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => items.push(e.clone()),
                ast::SelectItem::Wildcard(options) => {
                    let at = options.wildcard_token.0.span;
                    items.extend(self.scope.columns.iter().enumerate().map(|(i, c)| crate::bind::expanded_column(i, c, at)));
                }
                ast::SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                    let qualifier = object_name(name)?;
                    let matching = self.table_columns(&qualifier);
                    if matching.is_empty() {
                        let error = Error::new(SqlState::UNDEFINED_TABLE, format!("missing FROM-clause entry for table \"{qualifier}\""));
                        return Err(crate::error_cursor::place_at(error, name.span()));
                    }
                    items.extend(matching.into_iter().map(|(i, c)| crate::bind::expanded_column(i, c, name.span())));
                }
                other => return Err(Error::not_supported(format!("select item {other}"))),
            }
        }
        Ok(items)
    }

    /// The columns `qualifier.*` stands for, in the order of its table's columns: each side
    /// of a `JOIN ... USING` keeps its own copy of the key column, which `t.*` lists in
    /// its place (PostgreSQL does), though unqualified `*` shows only the merged column.
    ///
    /// A LATERAL subquery pulled up into the join tree (`in_scope_order`) has columns
    /// computed over its table's row (`FromBuilder::join_lateral_table`): they are listed
    /// in their order. Each column comes with its scope index.
    pub(crate) fn table_columns(&self, qualifier: &str) -> Vec<(usize, &ScopeColumn)> {
        let all = self.scope.columns.iter().chain(&self.scope.qualified_only);
        let in_scope_order = self.in_scope_order.iter().any(|q| q == qualifier);
        let mut matching: Vec<(usize, usize, &ScopeColumn)> = all
            .zip(&self.values)
            .enumerate()
            .filter(|(_, (c, _))| c.table.as_deref() == Some(qualifier))
            .map(|(i, (c, value))| match value {
                Expr::Column { index, .. } if !in_scope_order => (*index, i, c),
                _ => (self.raw_width() + i, i, c),
            })
            .collect();
        matching.sort_by_key(|(order, _, _)| *order);
        matching.into_iter().map(|(_, i, c)| (i, c)).collect()
    }

    /// The raw column's type.
    fn column_type(&self, raw: usize) -> DataType {
        let rel = self.rel_of(raw);
        self.rels[rel].columns[raw - self.offsets[rel]].data_type
    }

    /// The relations that `conditions` (conjuncts over the raw row) prove non-null.
    fn nonnullable_rels(&self, conditions: &[Expr]) -> BTreeSet<usize> {
        conditions.iter().flat_map(crate::exprutil::nonnullable_columns).map(|c| self.rel_of(c)).collect()
    }

    fn rels_used(&self, expr: &Expr) -> BTreeSet<usize> {
        let mut cols = BTreeSet::new();
        columns_used(expr, &mut cols);
        cols.into_iter().map(|c| self.rel_of(c)).collect()
    }
}

/// Does this SELECT need the join planner: several FROM items, a JOIN, or a subquery
/// condition in WHERE? A query without FROM has nothing to join its WHERE's subqueries
/// with: they are subplans of its one row's filter (see `planner.rs`).
pub(crate) fn needs_join_planning(select: &ast::Select) -> bool {
    if select.from.is_empty() {
        return false;
    }
    let joined = select.from.len() > 1
        || select.from.iter().any(|t| !t.joins.is_empty() || matches!(t.relation, TableFactor::NestedJoin { .. }));
    joined || split_where(select.selection.as_ref()).1.iter().next().is_some()
}

/// Analyse a FROM list.
pub(crate) fn analyze_from(from: &[ast::TableWithJoins], ctx: &PlanContext) -> Result<FromClause> {
    let mut analyzer = Analyzer { rels: Vec::new(), width: 0, offsets: Vec::new(), ctx };
    let mut tree: Option<(Tree, Columns)> = None;
    for item in from {
        let next = analyzer.table_with_joins(item)?;
        tree = Some(match tree {
            None => next,
            Some(left) => analyzer.join(left, next, Kind::Inner, &ast::JoinConstraint::None)?,
        });
    }
    let Some((tree, columns)) = tree else {
        return Err(Error::not_supported("EXISTS / IN subqueries in a query without FROM"));
    };
    Ok(FromClause { rels: analyzer.rels, offsets: analyzer.offsets, tree, scope: columns.scope(), values: columns.values(), in_scope_order: Vec::new() })
}

/// The FROM clause of `UPDATE ... FROM` / `DELETE ... USING`: the target relation, already
/// planned (`target`), then the listed items, joined as a comma list (so the target's
/// columns come first in the scope).
pub(crate) fn analyze_from_with_target(target: From, from: &[ast::TableWithJoins], ctx: &PlanContext) -> Result<FromClause> {
    let mut analyzer = Analyzer { rels: Vec::new(), width: 0, offsets: Vec::new(), ctx };
    let mut tree = analyzer.add_rel(target)?;
    for item in from {
        let next = analyzer.table_with_joins(item)?;
        tree = analyzer.join(tree, next, Kind::Inner, &ast::JoinConstraint::None)?;
    }
    let (tree, columns) = tree;
    Ok(FromClause { rels: analyzer.rels, offsets: analyzer.offsets, tree, scope: columns.scope(), values: columns.values(), in_scope_order: Vec::new() })
}

/// A piece of a FROM clause for [`FromBuilder`]: an item of the comma list, or a JOIN
/// clause applying to everything before it.
pub(crate) enum Piece {
    Item(ast::TableWithJoins),
    Join(ast::Join),
}

/// A FROM clause analysed piece by piece, left to right: the part of a FROM clause
/// around its LATERAL items (`lateral.rs`), which may join a LATERAL subquery's table
/// into the tree ([`FromBuilder::join_lateral_table`]) or start over from the rows of a
/// nested loop ([`FromBuilder::add_from`]).
pub(crate) struct FromBuilder<'c, 'a> {
    analyzer: Analyzer<'c, 'a>,
    tree: Option<(Tree, Columns)>,
    in_scope_order: Vec<String>,
}

impl<'c, 'a> FromBuilder<'c, 'a> {
    pub(crate) fn new(ctx: &'c PlanContext<'a>) -> Self {
        FromBuilder { analyzer: Analyzer { rels: Vec::new(), width: 0, offsets: Vec::new(), ctx }, tree: None, in_scope_order: Vec::new() }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tree.is_none()
    }

    /// A relation planned already, as the first one (the output of a LATERAL loop).
    pub(crate) fn add_from(&mut self, planned: From) -> Result<()> {
        if self.tree.is_some() {
            return Err(Error::internal("a planned relation after the start of a FROM clause"));
        }
        self.tree = Some(self.analyzer.add_rel(planned)?);
        Ok(())
    }

    pub(crate) fn add(&mut self, piece: &Piece) -> Result<()> {
        let next = match (self.tree.take(), piece) {
            (None, Piece::Item(item)) => self.analyzer.table_with_joins(item)?,
            (Some(left), Piece::Item(item)) => {
                let next = self.analyzer.table_with_joins(item)?;
                self.analyzer.join(left, next, Kind::Inner, &ast::JoinConstraint::None)?
            }
            (Some(left), Piece::Join(join)) => self.analyzer.join_one(left, join)?,
            (None, Piece::Join(_)) => return Err(Error::internal("a JOIN clause with nothing to its left")),
        };
        self.tree = Some(next);
        Ok(())
    }

    /// The scope of what was added so far (visible columns, then qualified-only ones).
    pub(crate) fn scope(&self) -> Scope {
        self.tree.as_ref().map(|(_, columns)| columns.scope()).unwrap_or_else(|| Scope::new(Vec::new()))
    }

    /// The one relation added, with nothing joined to it.
    pub(crate) fn single(&self) -> Option<From> {
        match (&self.tree, self.analyzer.rels.as_slice()) {
            (Some((Tree::Rel(0), columns)), [rel]) => Some(From { source: rel.source.clone(), scope: columns.scope() }),
            _ => None,
        }
    }

    /// Join what was added so far (the left) with a table read by a LATERAL subquery that
    /// was pulled up (`lateral.rs`): `conditions` and `outputs` are over the left's scope
    /// columns followed by the table's columns; the scope becomes the left's visible
    /// columns, `item` (whose values are `outputs`), then the left's qualified-only ones,
    /// as a LATERAL loop's.
    pub(crate) fn join_lateral_table(&mut self, table: From, left_join: bool, conditions: Vec<Expr>, item: Vec<ScopeColumn>, outputs: Vec<Expr>) -> Result<()> {
        let Some((left_tree, left_columns)) = self.tree.take() else { return Err(Error::internal("a LATERAL join with nothing to its left")) };
        let (right_tree, table_columns) = self.analyzer.add_rel(table)?;
        let values: Vec<Expr> = left_columns.values().into_iter().chain(table_columns.values()).collect();
        let on = conditions.iter().map(|c| substitute_columns(c, &values)).collect();
        let mut columns = Columns { visible: left_columns.visible, qualified_only: left_columns.qualified_only };
        self.in_scope_order.extend(item.first().and_then(|c| c.table.clone()));
        let item: Vec<(ScopeColumn, Expr)> = item.into_iter().zip(outputs.iter().map(|e| substitute_columns(e, &values))).collect();
        columns.visible.extend(item);
        let kind = if left_join { Kind::Left } else { Kind::Inner };
        self.tree = Some((Tree::Join { kind, left: Box::new(left_tree), right: Box::new(right_tree), on }, columns));
        Ok(())
    }

    /// Join what was added so far (the left) with the FROM clause of a LATERAL subquery
    /// that was pulled up (`sub`, analysed on its own): `conditions` and `outputs` are
    /// over `sub`'s scope columns followed by the left's; the scope becomes the left's
    /// visible columns, `item` (whose values are `outputs`), then the left's
    /// qualified-only ones, as a LATERAL loop's.
    pub(crate) fn join_lateral_from(&mut self, sub: FromBuilder, left_join: bool, conditions: Vec<Expr>, item: Vec<ScopeColumn>, outputs: Vec<Expr>) -> Result<()> {
        let (Some((left_tree, left_columns)), Some((sub_tree, sub_columns))) = (self.tree.take(), sub.tree) else {
            return Err(Error::internal("a LATERAL join with nothing on a side"));
        };
        // The subquery's relations follow the left's in the raw row.
        let (rel_base, width_base) = (self.analyzer.rels.len(), self.analyzer.width);
        for (rel, offset) in sub.analyzer.rels.into_iter().zip(sub.analyzer.offsets) {
            self.analyzer.rels.push(rel);
            self.analyzer.offsets.push(offset + width_base);
        }
        self.analyzer.width += sub.analyzer.width;
        let sub_tree = shift_tree(sub_tree, rel_base, width_base);
        let values: Vec<Expr> = sub_columns.values().iter().map(|v| shift_columns(v, width_base)).chain(left_columns.values()).collect();
        let on = conditions.iter().map(|c| substitute_columns(c, &values)).collect();
        let mut columns = Columns { visible: left_columns.visible, qualified_only: left_columns.qualified_only };
        self.in_scope_order.extend(item.first().and_then(|c| c.table.clone()));
        columns.visible.extend(item.into_iter().zip(outputs.iter().map(|e| substitute_columns(e, &values))));
        let kind = if left_join { Kind::Left } else { Kind::Inner };
        self.tree = Some((Tree::Join { kind, left: Box::new(left_tree), right: Box::new(sub_tree), on }, columns));
        Ok(())
    }

    /// Only inner joins (and comma lists) of plain relations.
    pub(crate) fn is_inner_only(&self) -> bool {
        self.tree.as_ref().is_some_and(|(tree, _)| tree.is_inner_only())
    }

    pub(crate) fn finish(self) -> Result<FromClause> {
        let Some((tree, columns)) = self.tree else { return Err(Error::internal("an empty FROM clause")) };
        let analyzer = self.analyzer;
        Ok(FromClause { rels: analyzer.rels, offsets: analyzer.offsets, tree, scope: columns.scope(), values: columns.values(), in_scope_order: self.in_scope_order })
    }
}

struct Analyzer<'c, 'a> {
    rels: Vec<Rel>,
    offsets: Vec<usize>,
    width: usize,
    ctx: &'c PlanContext<'a>,
}

impl Analyzer<'_, '_> {
    fn table_with_joins(&mut self, item: &ast::TableWithJoins) -> Result<(Tree, Columns)> {
        let mut left = self.factor(&item.relation)?;
        for join in &item.joins {
            left = self.join_one(left, join)?;
        }
        Ok(left)
    }

    /// `left` joined by one JOIN clause.
    fn join_one(&mut self, left: (Tree, Columns), join: &ast::Join) -> Result<(Tree, Columns)> {
        {
            let right = self.factor(&join.relation)?;
            use ast::JoinOperator as J;
            let (kind, constraint) = match &join.join_operator {
                J::Join(c) | J::Inner(c) => (Kind::Inner, c),
                J::Left(c) | J::LeftOuter(c) => (Kind::Left, c),
                J::Right(c) | J::RightOuter(c) => (Kind::Right, c),
                J::FullOuter(c) => (Kind::Full, c),
                J::CrossJoin(c) => (Kind::Inner, c),
                other => return Err(Error::not_supported(format!("join type not supported: {other:?}"))),
            };
            if matches!(constraint, ast::JoinConstraint::None) && !matches!(join.join_operator, J::CrossJoin(_)) {
                return Err(Error::syntax("syntax error at or near end of JOIN: a JOIN needs ON, USING or NATURAL"));
            }
            self.join(left, right, kind, constraint)
        }
    }

    fn factor(&mut self, factor: &TableFactor) -> Result<(Tree, Columns)> {
        if let TableFactor::NestedJoin { table_with_joins, alias } = factor {
            if alias.is_some() {
                return Err(Error::not_supported("an alias on a parenthesized join"));
            }
            return self.table_with_joins(table_with_joins);
        }
        let planned = plan_table_factor(factor, self.ctx)?;
        self.add_rel(planned)
    }

    fn add_rel(&mut self, planned: From) -> Result<(Tree, Columns)> {
        if let Some(name) = planned.scope.columns.first().and_then(|c| c.table.clone()) {
            let taken = self.rels.iter().any(|r| r.columns.first().and_then(|c| c.table.as_deref()) == Some(name.as_str()));
            if taken {
                return Err(Error::new(SqlState::DUPLICATE_ALIAS, format!("table name \"{name}\" specified more than once")));
            }
        }
        let rows = estimated_rows(&planned.source, self.ctx);
        let index = self.rels.len();
        let offset = self.width;
        let mut columns = Columns::default();
        for (i, col) in planned.scope.columns.iter().enumerate() {
            columns.visible.push((col.clone(), Expr::Column { index: offset + i, data_type: col.data_type }));
        }
        // A relation built before a LATERAL item (`lateral.rs`) carries the key columns a
        // JOIN ... USING merged after its visible ones: they stay in its row (the columns
        // of what follows start after them) and stay reachable as `t.key`.
        let visible = planned.scope.columns.len();
        for (i, col) in planned.scope.qualified_only.iter().enumerate() {
            columns.qualified_only.push((col.clone(), Expr::Column { index: offset + visible + i, data_type: col.data_type }));
        }
        let mut rel_columns = planned.scope.columns;
        rel_columns.extend(planned.scope.qualified_only);
        self.width += rel_columns.len();
        self.offsets.push(offset);
        self.rels.push(Rel { source: planned.source, columns: rel_columns, rows });
        Ok((Tree::Rel(index), columns))
    }

    fn join(&mut self, left: (Tree, Columns), right: (Tree, Columns), kind: Kind, constraint: &ast::JoinConstraint) -> Result<(Tree, Columns)> {
        let (left_tree, left_cols) = left;
        let (right_tree, right_cols) = right;
        let mut on = Vec::new();
        let mut columns = Columns::default();
        let using: Vec<String> = match constraint {
            ast::JoinConstraint::Using(names) => names.iter().map(object_name).collect::<Result<_>>()?,
            ast::JoinConstraint::Natural => left_cols
                .visible
                .iter()
                .map(|(c, _)| c.name.clone())
                .filter(|name| right_cols.visible.iter().any(|(c, _)| &c.name == name))
                .collect(),
            _ => Vec::new(),
        };
        let mut used_left = BTreeSet::new();
        let mut used_right = BTreeSet::new();
        for name in &using {
            let l = find_using_column(&left_cols, name, "left")?;
            let r = find_using_column(&right_cols, name, "right")?;
            if !used_left.insert(l) || !used_right.insert(r) {
                return Err(Error::new(
                    SqlState::DUPLICATE_COLUMN,
                    format!("column name \"{name}\" appears more than once in USING clause"),
                ));
            }
            let (lcol, lexpr) = &left_cols.visible[l];
            let (_, rexpr) = &right_cols.visible[r];
            let data_type = ex::common_type(&[lexpr.data_type(), rexpr.data_type()], "JOIN/USING")?;
            let lkey = ex::coerce(lexpr.clone(), data_type, false)?;
            let rkey = ex::coerce(rexpr.clone(), data_type, false)?;
            on.push(Expr::Binary { op: BinaryOp::Eq, left: Box::new(lkey.clone()), right: Box::new(rkey.clone()), data_type: DataType::Bool });
            let merged = match kind {
                Kind::Inner | Kind::Left => lkey,
                Kind::Right => rkey,
                Kind::Full => Expr::Coalesce { args: vec![lkey, rkey], data_type },
            };
            let type_modifier = lcol.type_modifier.filter(|_| data_type == lexpr.data_type());
            columns.visible.push((ScopeColumn { table: None, name: lcol.name.clone(), data_type, type_modifier }, merged));
        }
        for (i, col) in left_cols.visible.iter().enumerate() {
            if used_left.contains(&i) { columns.qualified_only.push(col.clone()) } else { columns.visible.push(col.clone()) }
        }
        for (i, col) in right_cols.visible.iter().enumerate() {
            if used_right.contains(&i) { columns.qualified_only.push(col.clone()) } else { columns.visible.push(col.clone()) }
        }
        columns.qualified_only.extend(left_cols.qualified_only.iter().cloned());
        columns.qualified_only.extend(right_cols.qualified_only.iter().cloned());
        if let ast::JoinConstraint::On(condition) = constraint {
            crate::srf::refuse_in_clause(Some(condition), "JOIN conditions")?;
            if contains_aggregate(condition) {
                return Err(Error::new(SqlState::GROUPING_ERROR, "aggregate functions are not allowed in JOIN conditions"));
            }
            // ON sees the columns of its two sides only.
            let mut sides = Columns::default();
            sides.visible.extend(left_cols.visible.iter().chain(&right_cols.visible).cloned());
            sides.qualified_only.extend(left_cols.qualified_only.iter().chain(&right_cols.qualified_only).cloned());
            let bound = require_bool(Binder::new(&sides.scope()).planning(self.ctx).bind(condition)?, "JOIN/ON")?;
            let bound = substitute_columns(&bound, &sides.values());
            // Constant conjuncts fold as WHERE's do: `ON 1 = 0` is `ON false`, which
            // empties an outer join's nullable side and makes a FULL JOIN an append.
            let folded = crate::exprutil::fold_constant_conjuncts(bound);
            on.extend(folded.iter().flat_map(|f| f.conjuncts()).cloned());
        }
        Ok((Tree::Join { kind, left: Box::new(left_tree), right: Box::new(right_tree), on }, columns))
    }
}

fn find_using_column(side: &Columns, name: &str, which: &str) -> Result<usize> {
    let mut found = side.visible.iter().enumerate().filter(|(_, (c, _))| c.name == name).map(|(i, _)| i);
    let first = found.next().ok_or_else(|| {
        Error::new(SqlState::UNDEFINED_COLUMN, format!("column \"{name}\" specified in USING clause does not exist in {which} table"))
    })?;
    if found.next().is_some() {
        return Err(Error::new(
            SqlState::AMBIGUOUS_COLUMN,
            format!("common column name \"{name}\" appears more than once in {which} table"),
        ));
    }
    Ok(first)
}

fn estimated_rows(source: &Source, ctx: &PlanContext) -> f64 {
    match source {
        Source::Heap(heap) => match ctx.catalog.tables.get(&heap.table_name) {
            Some(meta) if meta.row_count > 0 => meta.row_count as f64,
            _ => (heap.nblocks as f64 * 50.0).max(1.0),
        },
        Source::Index(index) => index.estimated_rows,
        Source::Series { start, stop, step, .. } => (((*stop as f64 - *start as f64) / *step as f64).floor() + 1.0).max(0.0),
        Source::Values(rows) => rows.len() as f64,
        Source::Single => 1.0,
        Source::Subquery { .. } => match crate::pull_up::simple_subquery(source) {
            Some((table, filter, _)) => estimated_rows(table, ctx) * if filter.is_some() { 0.5 } else { 1.0 },
            None => UNKNOWN_ROWS,
        },
        Source::SeriesExprs { .. } | Source::WorkTable { .. } => UNKNOWN_ROWS,
        Source::Unnest { .. } => 10.0,
    }
}

/// WHERE's top-level conjuncts, split into plain ones and subquery conditions.
pub(crate) fn split_where(selection: Option<&ast::Expr>) -> (Vec<ast::Expr>, Vec<SubqueryCondition>) {
    let mut plain = Vec::new();
    let mut subqueries = Vec::new();
    fn go(e: &ast::Expr, plain: &mut Vec<ast::Expr>, subqueries: &mut Vec<SubqueryCondition>) {
        match e {
            ast::Expr::BinaryOp { left, op: ast::BinaryOperator::And, right } => {
                go(left, plain, subqueries);
                go(right, plain, subqueries);
            }
            // Parentheses around a conjunction are no grouping (PostgreSQL's parser drops
            // them): `WHERE (a AND b)` splits as `WHERE a AND b` does.
            ast::Expr::Nested(inner)
                if is_subquery_condition(inner) || matches!(inner.as_ref(), ast::Expr::BinaryOp { op: ast::BinaryOperator::And, .. }) =>
            {
                go(inner, plain, subqueries)
            }
            ast::Expr::Exists { subquery, negated } => {
                subqueries.push(SubqueryCondition { outer: None, subquery: subquery.as_ref().clone(), negated: *negated })
            }
            ast::Expr::UnaryOp { op: ast::UnaryOperator::Not, expr } if is_subquery_condition(expr) => {
                let mut inner = Vec::new();
                go(expr, plain, &mut inner);
                for mut condition in inner {
                    condition.negated = !condition.negated;
                    subqueries.push(condition);
                }
            }
            ast::Expr::InSubquery { expr, subquery, negated } => subqueries.push(SubqueryCondition {
                outer: Some(expr.as_ref().clone()),
                subquery: subquery.as_ref().clone(),
                negated: *negated,
            }),
            other => match quantified_in(other) {
                Some((outer, subquery, negated)) => {
                    subqueries.push(SubqueryCondition { outer: Some(outer.clone()), subquery: subquery.clone(), negated })
                }
                None => plain.push(other.clone()),
            },
        }
    }
    if let Some(e) = selection {
        go(e, &mut plain, &mut subqueries);
    }
    (plain, subqueries)
}

/// Subquery conditions that stay per-row subplans rather than semi or anti joins go back
/// to the plain conditions, where the binder makes them subplans:
/// - a `NOT IN` whose subquery reads the query's columns (its NULL rule needs the
///   subquery's rows for each outer row), and a row `(a, b) NOT IN` (a field's NULL need
///   not make the row unknown, which the null-aware anti join, one key, does not model);
/// - an uncorrelated `EXISTS` or `NOT EXISTS` (an init plan, then a One-Time Filter);
/// - an `EXISTS` or `IN` whose subquery is not a plain SELECT (aggregates, GROUP BY,
///   DISTINCT, LIMIT, ...) and reads the query's columns: such a subquery is joined as a
///   relation planned on its own, which it cannot be; so is a plain SELECT whose FROM
///   items read the query's columns (a derived table, a LATERAL item).
///
/// Correlation is found by planning the subquery on its own: an unknown name means it
/// reads the query around it.
pub(crate) fn keep_correlated_subplans(mut plain: Vec<ast::Expr>, subqueries: Vec<SubqueryCondition>, ctx: &PlanContext) -> (Vec<ast::Expr>, Vec<SubqueryCondition>) {
    let mut kept = Vec::with_capacity(subqueries.len());
    let correlated = |condition: &SubqueryCondition| {
        let standalone = ctx.nested(None);
        matches!(crate::planner::plan_query(&condition.subquery, &standalone), Err(e) if crate::subplan::is_unresolved(&e))
    };
    // Whether the subquery's FROM items themselves read the query's columns (a derived
    // table `(SELECT t.a) s`): a join plans them on their own, which they cannot be.
    let from_correlated = |condition: &SubqueryCondition| {
        let ast::SetExpr::Select(select) = condition.subquery.body.as_ref() else { return false };
        let standalone = ctx.nested(None);
        matches!(analyze_from(&select.from, &standalone), Err(e) if crate::subplan::is_unresolved(&e))
    };
    for condition in subqueries {
        let per_row = match condition.outer.as_ref() {
            Some(outer) if condition.negated => crate::bind::row_items(outer).len() > 1 || correlated(&condition),
            // An uncorrelated [NOT] EXISTS is no join: an init plan whose value gates the
            // whole query once (PostgreSQL's One-Time Filter), so a false one runs nothing.
            None if !correlated(&condition) => true,
            _ => correlated(&condition) && (!is_plain_select(&condition.subquery) || from_correlated(&condition)),
        };
        if !per_row {
            kept.push(condition);
            continue;
        }
        plain.push(condition.into_expr());
    }
    (plain, kept)
}

/// Whether `query` is one SELECT over a FROM clause, without aggregates, GROUP BY,
/// HAVING, DISTINCT, LIMIT or a WITH clause: a semi join reads its relations directly.
fn is_plain_select(query: &ast::Query) -> bool {
    let ast::SetExpr::Select(select) = query.body.as_ref() else { return false };
    query.with.is_none()
        && query.limit_clause.is_none()
        && query.fetch.is_none()
        && select.distinct.is_none()
        && !select.from.is_empty()
        && select.having.is_none()
        && matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        && !select.projection.iter().any(|item| match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => contains_aggregate(e),
            _ => false,
        })
}

fn is_subquery_condition(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => true,
        ast::Expr::Nested(inner) => is_subquery_condition(inner),
        other => quantified_in(other).is_some(),
    }
}

/// `x = ANY (subquery)` (or SOME) is `x IN (subquery)`, and `x <> ALL (subquery)` is
/// `x NOT IN (subquery)`, NULLs included: (outer, subquery, negated).
fn quantified_in(e: &ast::Expr) -> Option<(&ast::Expr, &ast::Query, bool)> {
    let (left, right, negated) = match e {
        ast::Expr::AnyOp { left, compare_op: ast::BinaryOperator::Eq, right, .. } => (left, right, false),
        ast::Expr::AllOp { left, compare_op: ast::BinaryOperator::NotEq, right } => (left, right, true),
        _ => return None,
    };
    match right.as_ref() {
        ast::Expr::Subquery(query) => Some((left.as_ref(), query.as_ref(), negated)),
        _ => None,
    }
}

/// `[NOT] EXISTS (subquery)` or `outer [NOT] IN (subquery)` at the top level of WHERE.
#[derive(Clone, Debug)]
pub(crate) struct SubqueryCondition {
    outer: Option<ast::Expr>,
    subquery: ast::Query,
    negated: bool,
}

impl SubqueryCondition {
    /// The condition as the WHERE expression it was: a subplan where it is bound.
    pub(crate) fn into_expr(self) -> ast::Expr {
        let subquery = Box::new(self.subquery);
        match self.outer {
            Some(outer) => ast::Expr::InSubquery { expr: Box::new(outer), subquery, negated: self.negated },
            None => ast::Expr::Exists { subquery, negated: self.negated },
        }
    }
}

/// The join pipeline of a query: its source and steps, whose last step projects the scope
/// columns the query uses, in increasing scope order.
pub(crate) struct JoinedInput {
    pub source: Source,
    pub steps: Vec<Step>,
    pub workers: usize,
    /// Scope column → position in the pipeline's output row.
    pub positions: BTreeMap<usize, usize>,
}

/// Rows of one side while planning: a source, its steps, and which relations' columns the
/// row holds, in order.
struct Partial {
    source: Source,
    steps: Vec<Step>,
    rels: Vec<usize>,
    rows: f64,
    /// Does the pipeline hold a join?
    joined: bool,
}

struct Planner<'c, 'a> {
    from: &'c FromClause,
    /// For each relation: the raw columns its scan decodes, and those its row carries
    /// past the scan's filter, in order.
    decoded: Vec<Vec<usize>>,
    produced: Vec<Vec<usize>>,
    ctx: &'c PlanContext<'a>,
    /// Semi and anti joins applied to one relation's scan (see `plan_joins`).
    pushed: BTreeMap<usize, Vec<SemiJoin>>,
}

/// Plan the FROM clause's joins, WHERE (`filter`, over the scope) and its subquery
/// conditions; `used` are the scope columns the rest of the query reads.
pub(crate) fn plan_joins(
    from: FromClause,
    filter: Option<Expr>,
    subqueries: &[SubqueryCondition],
    used: &BTreeSet<usize>,
    serial: bool,
    ctx: &PlanContext,
) -> Result<JoinedInput> {
    let mut from = from;
    let raw_where: Vec<Expr> = match &filter {
        Some(f) => substitute_columns(f, &from.values).conjuncts().into_iter().cloned().collect(),
        None => Vec::new(),
    };
    // Subquery conditions, bound now so their outer references count as used columns.
    let mut semis = Vec::with_capacity(subqueries.len());
    for condition in subqueries {
        semis.push(SemiJoin::bind(condition, &from, ctx)?);
    }
    let outputs: Vec<Expr> = used.iter().map(|&i| from.values[i].clone()).collect();
    // WHERE's conditions, and the keys of its IN / EXISTS semi joins (a NULL key matches
    // nothing), reject NULL-extended rows of the relations they read.
    let mut nonnullable = from.nonnullable_rels(&raw_where);
    for semi in semis.iter().filter(|s| s.join_type == JoinType::Semi) {
        let keys: Vec<Expr> = semi.keys.iter().map(|(outer, _)| outer.clone()).collect();
        nonnullable.extend(from.nonnullable_rels(&keys));
    }
    let mut tree = std::mem::replace(&mut from.tree, Tree::Rel(0));
    reduce_outer_joins(&mut tree, &nonnullable, &from);
    from.tree = tree;

    // Which raw columns each relation must produce.
    let mut needed = BTreeSet::new();
    for e in &outputs {
        columns_used(e, &mut needed);
    }
    for semi in &semis {
        semi.outer_columns(&mut needed);
    }
    let (decoded, produced) = from.prune_columns(needed, &raw_where);
    // A semi or anti join reading one relation that no outer join NULL-extends filters
    // that relation's rows before the other joins (as PostgreSQL places it), not their
    // product: `a JOIN b ... WHERE NOT EXISTS (... a.x ...)` probes a's rows only.
    let nullable = nullable_rels(&from.tree);
    let mut pushed: BTreeMap<usize, Vec<SemiJoin>> = BTreeMap::new();
    let mut top = Vec::new();
    for semi in semis {
        let mut columns = BTreeSet::new();
        semi.outer_columns(&mut columns);
        let rels: BTreeSet<usize> = columns.iter().map(|&c| from.rel_of(c)).collect();
        match rels.iter().next() {
            Some(&r) if rels.len() == 1 && !nullable.contains(&r) && from.rels.len() > 1 => pushed.entry(r).or_default().push(semi),
            _ => top.push(semi),
        }
    }
    // Pseudoconstant conditions gate the whole join, evaluated once (PostgreSQL's
    // One-Time Filter on a Result above it): when false, nothing under it runs.
    let (gates, raw_where): (Vec<Expr>, Vec<Expr>) = raw_where.into_iter().partition(Expr::is_pseudoconstant);
    let mut planner = Planner { from: &from, decoded, produced, ctx, pushed };
    let mut partial = planner.plan_tree(&from.tree, raw_where)?;
    for semi in top {
        planner.add_semi_join(&mut partial, semi)?;
    }
    partial.steps.extend(and_all(gates).map(Step::Filter));
    let positions_raw = planner.positions(&partial.rels);
    let mut projection = Vec::with_capacity(outputs.len());
    for mut e in outputs {
        remap_columns(&mut e, &positions_raw);
        projection.push(e);
    }
    let volatile = projection.iter().any(is_volatile) || partial.steps.iter().any(step_is_volatile);
    partial.steps.push(Step::Project(projection));
    let workers = parallel_workers(&partial.source, &mut partial.steps, volatile || serial, ctx);
    let positions = used.iter().enumerate().map(|(pos, &i)| (i, pos)).collect();
    Ok(JoinedInput { source: partial.source, steps: partial.steps, workers, positions })
}

/// A literal `false` or NULL: a conjunct no row passes.
fn is_false_or_null(e: &Expr) -> bool {
    matches!(e, Expr::Literal { value: Datum::Bool(false) | Datum::Null, .. })
}

fn step_is_volatile(step: &Step) -> bool {
    match step {
        Step::Filter(e) => is_volatile(e),
        Step::Project(es) => es.iter().any(is_volatile),
        Step::HashJoin(join) => {
            join.filter.iter().chain(&join.outer_keys).chain(&join.inner_keys).any(is_volatile)
                || join.inner.steps.iter().any(step_is_volatile)
        }
    }
}

/// Workers for a pipeline holding joins, and each join's shape.
fn parallel_workers(source: &Source, steps: &mut [Step], serial: bool, ctx: &PlanContext) -> usize {
    let rule = ShapeRule::new(ctx);
    let mut workers = if serial || crate::exprutil::filtered_out(steps) { 0 } else { join_pipeline_workers(source, steps, ctx) };
    // Right and full joins need one shared table to know every inner row's matches.
    let unmatched_inner = steps.iter().any(|s| matches!(s, Step::HashJoin(j) if j.join_type.emits_unmatched_inner()));
    if unmatched_inner && !rule.parallel_hash {
        workers = 0;
    }
    set_modes(steps, workers, &rule);
    workers
}

/// Blocks of table a join pipeline reads (its probe scan's, after a zone map, and its
/// build scans') from which it runs in parallel. weft's participants are threads of a
/// pool, not processes: measured on 1M rows joined with 200-100k, two participants were
/// slower up to a 1k-row build side (28 blocks read) and 1.2-2x faster from 5k (134 blocks).
const JOIN_PARALLEL_MIN_BLOCKS: u64 = 64;

/// Workers for a pipeline holding joins: by the size of its probe scan as for any scan
/// (PostgreSQL's rule, `min_parallel_table_scan_size`), but with one at least once it
/// reads [`JOIN_PARALLEL_MIN_BLOCKS`] in all (a probe pruned by a zone map reads little).
fn join_pipeline_workers(source: &Source, steps: &[Step], ctx: &PlanContext) -> usize {
    let Source::Heap(heap) = source else { return choose_workers_reading(source, None, ctx) };
    let probe = zone_pruned_blocks(source, steps, ctx).unwrap_or(heap.nblocks as u64);
    let build: u64 = steps
        .iter()
        .filter_map(|step| match step {
            Step::HashJoin(join) => match &join.inner.source {
                Source::Heap(inner) => Some(inner.nblocks as u64),
                _ => None,
            },
            _ => None,
        })
        .sum();
    let by_size = choose_workers_reading(source, Some(probe), ctx);
    let max = ctx.settings.integer("max_parallel_workers_per_gather").max(0) as usize;
    if by_size == 0 && probe + build >= JOIN_PARALLEL_MIN_BLOCKS && !has_parallel_workers_option(heap, ctx) {
        1.min(max)
    } else {
        by_size
    }
}

/// Has the table a `parallel_workers` storage parameter (which then decides alone)?
fn has_parallel_workers_option(heap: &weft_exec::plan::HeapSource, ctx: &PlanContext) -> bool {
    ctx.catalog.tables.get(&heap.table_name).is_some_and(|t| t.parallel_workers.is_some())
}

/// The blocks a pipeline's scan will read when its first step is a hash join that prunes
/// the scan by a zone map of the probe key (see `execute::zone_map_key`): those whose key
/// range meets the build side's, taken from the build key column's statistics. `None`
/// when no zone map applies or the range is unknown; the scan then reads every block.
fn zone_pruned_blocks(source: &Source, steps: &[Step], ctx: &PlanContext) -> Option<u64> {
    let (Source::Heap(heap), Some(Step::HashJoin(join))) = (source, steps.first()) else { return None };
    if !matches!(join.join_type, JoinType::Inner | JoinType::Semi | JoinType::Right) || join.null_aware {
        return None;
    }
    let zone_map = ctx.pool.zone_maps().get(heap.rel, heap.columns[join.outer_key_column()?])?;
    let (lo, hi) = build_key_bounds(join, ctx)?;
    let outside_map = (heap.nblocks as usize).saturating_sub(zone_map.len());
    Some((zone_map.blocks_meeting(lo, hi) + outside_map) as u64)
}

/// The smallest and largest value of a join's one integer build key, from the statistics
/// of the table column it reads (through the build side's filters and projections).
fn build_key_bounds(join: &HashJoin, ctx: &PlanContext) -> Option<(i64, i64)> {
    let [Expr::Column { index, .. }] = join.inner_keys.as_slice() else { return None };
    let Source::Heap(heap) = &join.inner.source else { return None };
    let mut column = *index;
    for step in join.inner.steps.iter().rev() {
        match step {
            Step::Filter(_) => {}
            Step::Project(exprs) => match exprs.get(column)? {
                Expr::Column { index, .. } => column = *index,
                _ => return None,
            },
            Step::HashJoin(_) => return None,
        }
    }
    let meta = ctx.catalog.tables.get(&heap.table_name)?;
    let stats = crate::selectivity::usable_stats(ctx.catalog, meta)?.columns.get(*heap.columns.get(column)?)?;
    let mut bounds: Option<(i64, i64)> = None;
    for value in stats.histogram_bounds.iter().chain(&stats.most_common_vals) {
        let v = match value.0 {
            Datum::Int4(v) => v as i64,
            Datum::Int8(v) => v,
            _ => return None,
        };
        bounds = Some(bounds.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
    }
    bounds
}

/// How a parallel join's shape is chosen: `enable_parallel_hash`, and the build-side size
/// from which one shared table pays (`parallel_hash_min_inner_rows`: the seed measured
/// PostgreSQL's break-even near 20k rows with 2 participants; weft's shared table costs
/// two barrier waits and won from 5k rows, so by default every parallel join is aware —
/// an estimate of the build side, often wrong, then decides nothing).
struct ShapeRule {
    parallel_hash: bool,
    min_inner_rows: f64,
}

impl ShapeRule {
    fn new(ctx: &PlanContext) -> ShapeRule {
        ShapeRule {
            parallel_hash: ctx.settings.boolean("enable_parallel_hash"),
            min_inner_rows: ctx.settings.integer("parallel_hash_min_inner_rows") as f64,
        }
    }
}

/// Choose each join's shape once the pipeline's workers are known.
fn set_modes(steps: &mut [Step], workers: usize, rule: &ShapeRule) {
    for step in steps {
        if let Step::HashJoin(join) = step {
            join.mode = if workers == 0 {
                HashJoinMode::Serial
            } else if join.join_type.emits_unmatched_inner()
                || (rule.parallel_hash
                    && (join.estimated_inner_rows >= rule.min_inner_rows
                        // A materialized or index-scanned build side is better read once.
                        || matches!(join.inner.source, Source::Subquery { .. } | Source::Index(_))))
            {
                HashJoinMode::ParallelAware
            } else {
                HashJoinMode::ParallelOblivious
            };
        }
    }
}

/// PostgreSQL's `reduce_outer_joins`: an outer join whose nullable side's NULL-extended
/// rows a condition above rejects (`nonnullable`: the relations the conditions above prove
/// non-null) is an inner join (a full join a left or right one), and is planned as such —
/// freely ordered, with those conditions pushed down to the scans. An inner join's ON
/// conditions reject on both sides; a left join's reject only within its nullable side.
fn reduce_outer_joins(tree: &mut Tree, nonnullable: &BTreeSet<usize>, from: &FromClause) {
    let Tree::Join { kind, left, right, on } = tree else { return };
    let left_forced = !nonnullable.is_disjoint(&left.rel_set());
    let right_forced = !nonnullable.is_disjoint(&right.rel_set());
    *kind = match (*kind, left_forced, right_forced) {
        (Kind::Left, _, true) | (Kind::Right, true, _) | (Kind::Full, true, true) => Kind::Inner,
        (Kind::Full, true, false) => Kind::Left,
        (Kind::Full, false, true) => Kind::Right,
        (unchanged, _, _) => unchanged,
    };
    let mut with_on = from.nonnullable_rels(on);
    with_on.extend(nonnullable);
    let (to_left, to_right) = match *kind {
        Kind::Inner => (with_on.clone(), with_on),
        Kind::Left => (nonnullable.clone(), with_on),
        Kind::Right => (with_on, nonnullable.clone()),
        Kind::Full => (BTreeSet::new(), BTreeSet::new()),
    };
    reduce_outer_joins(left, &to_left, from);
    reduce_outer_joins(right, &to_right, from);
}

/// The relations on the nullable side of an outer join in `tree`.
fn nullable_rels(tree: &Tree) -> BTreeSet<usize> {
    let Tree::Join { kind, left, right, .. } = tree else { return BTreeSet::new() };
    let mut out = nullable_rels(left);
    out.extend(nullable_rels(right));
    match kind {
        Kind::Inner => {}
        Kind::Left => out.extend(right.rel_set()),
        Kind::Right => out.extend(left.rel_set()),
        Kind::Full => {
            out.extend(left.rel_set());
            out.extend(right.rel_set());
        }
    }
    out
}

fn collect_tree_columns(tree: &Tree, out: &mut BTreeSet<usize>) {
    if let Tree::Join { left, right, on, .. } = tree {
        for e in on {
            columns_used(e, out);
        }
        collect_tree_columns(left, out);
        collect_tree_columns(right, out);
    }
}

impl Planner<'_, '_> {
    /// Raw column → position in a row holding `rels`' columns in that order.
    fn positions(&self, rels: &[usize]) -> BTreeMap<usize, usize> {
        let mut map = BTreeMap::new();
        let mut pos = 0;
        for &r in rels {
            for &c in &self.produced[r] {
                map.insert(c, pos);
                pos += 1;
            }
        }
        map
    }

    fn width(&self, rels: &[usize]) -> usize {
        rels.iter().map(|&r| self.produced[r].len()).sum()
    }

    /// Plan a subtree; `extra` are conditions (over the raw row, on this subtree's
    /// relations only) to apply to its result.
    fn plan_tree(&mut self, tree: &Tree, extra: Vec<Expr>) -> Result<Partial> {
        match tree {
            Tree::Rel(r) => self.scan(*r, extra),
            Tree::Join { kind: Kind::Inner, .. } => {
                let mut items = Vec::new();
                let mut conditions = extra;
                flatten_inner(tree, &mut items, &mut conditions);
                if let Some(pulled_up) = self.outer_join_above_island(&items, &conditions) {
                    return self.plan_tree(&pulled_up, conditions);
                }
                self.plan_island(items, conditions)
            }
            Tree::Join { kind, left, right, on } => self.plan_outer(*kind, left, right, on, extra),
        }
    }

    fn scan(&mut self, r: usize, conditions: Vec<Expr>) -> Result<Partial> {
        let rel = &self.from.rels[r];
        let selectivity = self.selectivity_on(r, &conditions);
        let mut source = rel.source.clone();
        let positions: BTreeMap<usize, usize> = self.decoded[r].iter().enumerate().map(|(pos, &c)| (c, pos)).collect();
        let mut filter: Option<Expr> = None;
        for mut c in conditions {
            remap_columns(&mut c, &positions);
            filter = Some(match filter {
                None => c,
                Some(f) => Expr::Binary { op: BinaryOp::And, left: Box::new(f), right: Box::new(c), data_type: DataType::Bool },
            });
        }
        // Columns only the filter read are dropped after it.
        let mut project: Option<Vec<Expr>> = (self.decoded[r] != self.produced[r])
            .then(|| self.produced[r].iter().map(|&c| Expr::Column { index: positions[&c], data_type: self.from.column_type(c) }).collect());
        if crate::pull_up::simple_subquery(&source).is_some() {
            let mut exprs = project.take().unwrap_or_else(|| {
                self.decoded[r].iter().map(|&c| Expr::Column { index: positions[&c], data_type: self.from.column_type(c) }).collect()
            });
            crate::pull_up::pull_up_simple_subquery(&mut source, &mut filter, exprs.iter_mut().collect());
            prune_heap_columns(&mut source, exprs.iter_mut().chain(filter.as_mut()).collect());
            project = Some(exprs);
        }
        crate::access_path::choose_index_scan(&mut source, &mut filter, self.ctx);
        let rows = match &source {
            Source::Index(index) => index.estimated_rows,
            _ => rel.rows * selectivity,
        };
        let mut steps: Vec<Step> = filter.map(Step::Filter).into_iter().collect();
        steps.extend(project.map(Step::Project));
        let mut partial = Partial { source, steps, rels: vec![r], rows: rows.max(1.0), joined: false };
        for semi in self.pushed.remove(&r).unwrap_or_default() {
            self.add_semi_join(&mut partial, semi)?;
        }
        Ok(partial)
    }

    /// An island of inner joins holding `A LEFT JOIN B` among its items, where none of
    /// the island's `conditions` reads B, rewritten as `(island with A) LEFT JOIN B`:
    /// `(A ⟕ B) ⋈ C = (A ⋈ C) ⟕ B` when the join with C does not read B (PostgreSQL's
    /// outer-join identity 1). The inner joins then filter A before the left join
    /// multiplies it: a left join that matches many rows of B per row of A no longer
    /// runs over rows the island's other joins throw away.
    fn outer_join_above_island(&self, items: &[&Tree], conditions: &[Expr]) -> Option<Tree> {
        let read: BTreeSet<usize> = conditions.iter().flat_map(|c| self.from.rels_used(c)).collect();
        let (position, preserved, nullable, on) = items.iter().enumerate().find_map(|(i, item)| match item {
            Tree::Join { kind: Kind::Left, left, right, on } => Some((i, left, right, on)),
            Tree::Join { kind: Kind::Right, left, right, on } => Some((i, right, left, on)),
            _ => None,
        }.filter(|(_, _, nullable, _)| nullable.rel_set().is_disjoint(&read)))?;
        let island = items
            .iter()
            .enumerate()
            .map(|(i, item)| if i == position { (**preserved).clone() } else { (*item).clone() })
            .reduce(|left, right| Tree::Join { kind: Kind::Inner, left: Box::new(left), right: Box::new(right), on: Vec::new() })?;
        Some(Tree::Join { kind: Kind::Left, left: Box::new(island), right: nullable.clone(), on: on.clone() })
    }

    /// Inner joins among `items`, in the order the greedy rule picks.
    fn plan_island(&mut self, items: Vec<&Tree>, conditions: Vec<Expr>) -> Result<Partial> {
        let item_rels: Vec<BTreeSet<usize>> = items.iter().map(|t| t.rel_set()).collect();
        let item_of = |rels: &BTreeSet<usize>| -> BTreeSet<usize> {
            rels.iter().filter_map(|r| item_rels.iter().position(|s| s.contains(r))).collect()
        };
        // Conditions on one item go to it; the others wait for their items to be joined.
        let mut own: Vec<Vec<Expr>> = vec![Vec::new(); items.len()];
        let mut pending: Vec<(BTreeSet<usize>, Expr)> = Vec::new();
        for c in conditions {
            let touched = item_of(&self.from.rels_used(&c));
            match touched.len() {
                0 => own[0].push(c),
                1 => own[*touched.iter().next().unwrap()].push(c),
                _ => pending.push((touched, c)),
            }
        }
        let sizes: Vec<f64> = items.iter().zip(&own).map(|(t, own)| self.item_rows(t, own)).collect();
        // Distinct values of the columns the pending equalities compare, looked up once.
        let mut distinct: HashMap<usize, Option<f64>> = HashMap::new();
        for (_, c) in &pending {
            if let Expr::Binary { op: BinaryOp::Eq, left, right, .. } = c {
                for side in [left, right] {
                    if let Some((raw, _)) = key_column(side) {
                        distinct.entry(raw).or_insert_with(|| self.column_distinct(side));
                    }
                }
            }
        }
        // The item with the most rows is the probe, unless the order it starts costs
        // more than twice another's: the joins it is connected to may multiply the rows
        // before a selective item can be joined (a 60k-row self-join on a key of 3 values,
        // joined to the one row that a filter left of a third table only after).
        let largest = (0..items.len()).max_by(|&a, &b| sizes[a].total_cmp(&sizes[b])).unwrap_or(0);
        let first = if items.len() < 3 {
            largest
        } else {
            let island = IslandEstimates { item_rels: &item_rels, sizes: &sizes, distinct: &distinct };
            let costs: Vec<f64> = (0..items.len()).map(|first| self.island_order_rows(&island, &pending, first)).collect();
            let cheapest = (0..items.len()).min_by(|&a, &b| costs[a].total_cmp(&costs[b]).then(sizes[b].total_cmp(&sizes[a]))).unwrap_or(largest);
            if costs[cheapest] * 2.0 < costs[largest] { cheapest } else { largest }
        };
        let mut joined: BTreeSet<usize> = BTreeSet::from([first]);
        let mut partial = self.plan_tree(items[first], std::mem::take(&mut own[first]))?;
        while joined.len() < items.len() {
            let partial_rels: BTreeSet<usize> = partial.rels.iter().copied().collect();
            let island = IslandEstimates { item_rels: &item_rels, sizes: &sizes, distinct: &distinct };
            let (next, _) = self.next_island_item(&island, &pending, &joined, &partial_rels, partial.rows);
            joined.insert(next);
            let (ready, waiting): (Vec<_>, Vec<_>) = pending.into_iter().partition(|(t, _)| t.iter().all(|x| joined.contains(x)));
            pending = waiting;
            let build = self.plan_tree(items[next], std::mem::take(&mut own[next]))?;
            let conditions: Vec<Expr> = ready.into_iter().map(|(_, c)| c).collect();
            partial = self.hash_join(partial, build, JoinType::Inner, conditions, Vec::new())?;
        }
        Ok(partial)
    }

    /// The next item of an island to join after `joined` (whose relations are
    /// `joined_rels`, estimated at `rows`): among those an equality connects to the joined
    /// ones (all remaining when none is), the one whose join keeps the fewest rows, then
    /// the smallest; with the rows that join keeps.
    fn next_island_item(
        &self,
        island: &IslandEstimates,
        pending: &[(BTreeSet<usize>, Expr)],
        joined: &BTreeSet<usize>,
        joined_rels: &BTreeSet<usize>,
        rows: f64,
    ) -> (usize, f64) {
        let pending_of = |i: usize| pending.iter().filter(move |(t, _)| t.contains(&i) && t.iter().all(|x| *x == i || joined.contains(x)));
        let remaining: Vec<usize> = (0..island.sizes.len()).filter(|i| !joined.contains(i)).collect();
        let pool: Vec<usize> = match remaining.iter().copied().filter(|&i| pending_of(i).any(|(_, c)| is_equality(c))).collect::<Vec<_>>() {
            v if v.is_empty() => remaining,
            v => v,
        };
        let key_distinct = |key: &Expr| key_column(key).and_then(|(raw, _)| island.distinct.get(&raw).copied().flatten());
        let result_rows = |i: usize| {
            let keys: Vec<KeyDistinct> = pending_of(i)
                .filter_map(|(_, c)| self.key_pair(c, joined_rels, &island.item_rels[i]).ok().flatten())
                .map(|(o, i)| KeyDistinct { outer: key_distinct(&o), inner: key_distinct(&i) })
                .collect();
            join_rows(JoinType::Inner, rows, island.sizes[i], &keys, false)
        };
        pool.iter()
            .map(|&i| (result_rows(i), island.sizes[i], i))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)))
            .map(|(rows, _, i)| (i, rows))
            .expect("an item remains")
    }

    /// The rows the island's order starting at `first` builds and passes from one join
    /// to the next, as estimated: what that order costs. The last join's rows are the
    /// island's, whatever the order, and left out.
    fn island_order_rows(&self, island: &IslandEstimates, pending: &[(BTreeSet<usize>, Expr)], first: usize) -> f64 {
        let mut joined = BTreeSet::from([first]);
        let mut joined_rels = island.item_rels[first].clone();
        let (mut rows, mut total) = (island.sizes[first], 0.0);
        while joined.len() < island.sizes.len() {
            let (next, result) = self.next_island_item(island, pending, &joined, &joined_rels, rows);
            joined.insert(next);
            joined_rels.extend(island.item_rels[next].iter().copied());
            total += island.sizes[next];
            if joined.len() < island.sizes.len() {
                total += result;
            }
            rows = result;
        }
        total
    }

    /// Rows of an island item after its own conditions.
    fn item_rows(&self, item: &Tree, own: &[Expr]) -> f64 {
        match item {
            Tree::Rel(r) => (self.from.rels[*r].rows * self.selectivity_on(*r, own)).max(1.0),
            other => self.estimate(other),
        }
    }

    /// The fraction of relation `r`'s rows that `conditions` (over the raw row, reading
    /// only `r`) keep: from the table's statistics for a table, a half otherwise.
    fn selectivity_on(&self, r: usize, conditions: &[Expr]) -> f64 {
        if conditions.is_empty() {
            return 1.0;
        }
        let Some(rel) = self.rel_stats(r) else { return crate::selectivity::DEFAULT_SEL };
        let offset = self.from.offsets[r];
        let local: Vec<Expr> = conditions.iter().map(|c| shift_columns(c, offset.wrapping_neg())).collect();
        crate::selectivity::clauselist_selectivity(&local.iter().collect::<Vec<_>>(), &rel)
    }

    /// The statistics of the table relation `r` scans, over its own row, when it is a
    /// plain table.
    fn rel_stats(&self, r: usize) -> Option<crate::selectivity::RelStats<'_>> {
        let rel = &self.from.rels[r];
        let Source::Heap(heap) = &rel.source else { return None };
        let meta = self.ctx.catalog.tables.get(&heap.table_name)?;
        let columns: Vec<usize> = (0..rel.columns.len()).collect();
        Some(crate::selectivity::RelStats::for_table(self.ctx.catalog, meta, &columns))
    }

    /// The distinct values of a join key's two sides (over the raw row).
    fn key_distinct(&self, outer: &Expr, inner: &Expr) -> KeyDistinct {
        KeyDistinct { outer: self.column_distinct(outer), inner: self.column_distinct(inner) }
    }

    /// The distinct values of a join key (over the raw row), when it is a table's column
    /// (a cast of one keeps its distinct values).
    fn column_distinct(&self, key: &Expr) -> Option<f64> {
        let (raw, data_type) = key_column(key)?;
        let r = self.from.rel_of(raw);
        self.rel_stats(r)?.distinct(raw - self.from.offsets[r], data_type)
    }

    fn estimate(&self, tree: &Tree) -> f64 {
        match tree {
            Tree::Rel(r) => self.from.rels[*r].rows,
            Tree::Join { left, right, .. } => self.estimate(left).max(self.estimate(right)),
        }
    }

    /// PostgreSQL's outer-join identity 3: `A ⟕ (B ⟕ C ON Pbc) ON Pab` is `(A ⟕ B ON Pab)
    /// ⟕ C ON Pbc` when Pab reads nothing of C and Pbc rejects a NULL-extended row of B.
    /// Joined first, B ⟕ C holds every pair of B and C, also those no row of A matches:
    /// on a key with few values far more rows than the result (a self-join on a column of
    /// 41 values, 393k rows, was then probed with a key of 2 values). Rewritten, every row
    /// between the joins is a row of the result or its NULL-extended part, for one more
    /// probe per row at most; weft takes it without costing both, as for
    /// [`Self::outer_join_above_island`].
    fn left_join_above_left_join(&self, kind: Kind, left: &Tree, right: &Tree, on: &[Expr]) -> Option<Tree> {
        let (a, nullable) = match kind {
            Kind::Left => (left, right),
            Kind::Right => (right, left),
            _ => return None,
        };
        let Tree::Join { kind: inner_kind, left: inner_left, right: inner_right, on: inner_on } = nullable else { return None };
        let (b, c) = match inner_kind {
            Kind::Left => (inner_left, inner_right),
            Kind::Right => (inner_right, inner_left),
            _ => return None,
        };
        let c_rels = c.rel_set();
        if on.iter().any(|p| !self.from.rels_used(p).is_disjoint(&c_rels)) || self.from.nonnullable_rels(inner_on).is_disjoint(&b.rel_set()) {
            return None;
        }
        let ab = Tree::Join { kind: Kind::Left, left: Box::new(a.clone()), right: b.clone(), on: on.to_vec() };
        Some(Tree::Join { kind: Kind::Left, left: Box::new(ab), right: c.clone(), on: inner_on.clone() })
    }

    fn plan_outer(&mut self, kind: Kind, left: &Tree, right: &Tree, on: &[Expr], extra: Vec<Expr>) -> Result<Partial> {
        if let Some(rewritten) = self.left_join_above_left_join(kind, left, right, on) {
            return self.plan_tree(&rewritten, extra);
        }
        let left_rels = left.rel_set();
        let right_rels = right.rel_set();
        let mut left_own = Vec::new();
        let mut right_own = Vec::new();
        let mut join_conditions = Vec::new();
        for c in on {
            let rels = self.from.rels_used(c);
            let only_left = !rels.is_empty() && rels.is_subset(&left_rels);
            let only_right = !rels.is_empty() && rels.is_subset(&right_rels);
            // A constant condition (`ON false`, `ON 1 = 2 AND ...`) decides every match
            // alike: filtering the nullable side with it leaves no pair to evaluate.
            let constant = rels.is_empty() && !is_volatile(c);
            // A condition on the nullable side only filters that side's rows before the
            // join; on the preserved side it can only decide matches.
            match kind {
                Kind::Left if only_right || constant => right_own.push(c.clone()),
                Kind::Right if only_left || constant => left_own.push(c.clone()),
                _ => join_conditions.push(c.clone()),
            }
        }
        // Conditions over the result that read only the preserved side filter that side
        // first: a preserved row they reject would have been rejected after the join too.
        let mut after = Vec::new();
        for c in extra {
            let rels = self.from.rels_used(&c);
            match kind {
                Kind::Left if !rels.is_empty() && rels.is_subset(&left_rels) => left_own.push(c),
                Kind::Right if !rels.is_empty() && rels.is_subset(&right_rels) => right_own.push(c),
                _ => after.push(c),
            }
        }
        if kind == Kind::Full {
            if join_conditions.iter().any(is_false_or_null) {
                return self.full_join_matching_nothing(left, right, after);
            }
            self.check_full_join_keys(&join_conditions, &left_rels, &right_rels)?;
        }
        let left_simple = matches!(left, Tree::Rel(_));
        let right_simple = matches!(right, Tree::Rel(_));
        let probe_left = match (left_simple, right_simple) {
            (true, true) => self.item_rows(left, &left_own) >= self.item_rows(right, &right_own),
            (false, true) => true,
            (true, false) => false,
            (false, false) => true,
        };
        let left_partial = self.plan_tree(left, left_own)?;
        let right_partial = self.plan_tree(right, right_own)?;
        let (probe, build, join_type) = match (kind, probe_left) {
            (Kind::Left, true) | (Kind::Right, false) => {
                let (p, b) = if probe_left { (left_partial, right_partial) } else { (right_partial, left_partial) };
                (p, b, JoinType::Left)
            }
            (Kind::Left, false) | (Kind::Right, true) => {
                let (p, b) = if probe_left { (left_partial, right_partial) } else { (right_partial, left_partial) };
                (p, b, JoinType::Right)
            }
            (Kind::Full, true) => (left_partial, right_partial, JoinType::Full),
            (Kind::Full, false) => (right_partial, left_partial, JoinType::Full),
            (Kind::Inner, _) => return Err(Error::internal("inner join planned as an outer join")),
        };
        self.hash_join(probe, build, join_type, join_conditions, after)
    }

    /// `left FULL JOIN right` on a condition that a conjunct makes false or NULL (`ON
    /// false`, `ON 1 = 0`, `ON NULL`, folded when bound): no pair matches, so the result
    /// is each side's rows NULL-extended, an append of the two sides rather than a keyless
    /// join testing every pair. (A LEFT or RIGHT join filters its nullable side with such
    /// a condition, which then reads nothing; `after` filters the result.)
    fn full_join_matching_nothing(&mut self, left: &Tree, right: &Tree, after: Vec<Expr>) -> Result<Partial> {
        let left = self.plan_tree(left, Vec::new())?;
        let right = self.plan_tree(right, Vec::new())?;
        let types = |rels: &[usize]| -> Vec<DataType> {
            rels.iter().flat_map(|&r| self.produced[r].iter().map(|&c| self.from.column_type(c))).collect()
        };
        let (left_types, right_types) = (types(&left.rels), types(&right.rels));
        let own = |types: &[DataType]| types.iter().enumerate().map(|(index, &data_type)| Expr::Column { index, data_type }).collect::<Vec<_>>();
        let nulls = |types: &[DataType]| types.iter().map(|&data_type| Expr::Literal { value: Datum::Null, data_type }).collect::<Vec<_>>();
        let side = |partial: Partial, row: Vec<Expr>| {
            let mut steps = partial.steps;
            steps.push(Step::Project(row));
            let serial = steps.iter().any(step_is_volatile);
            let workers = parallel_workers(&partial.source, &mut steps, serial, self.ctx);
            Plan::Pipeline(Pipeline { source: partial.source, steps, workers })
        };
        let rows = left.rows + right.rows;
        let rels: Vec<usize> = left.rels.iter().chain(&right.rels).copied().collect();
        let inputs = vec![
            side(left, own(&left_types).into_iter().chain(nulls(&right_types)).collect()),
            side(right, nulls(&left_types).into_iter().chain(own(&right_types)).collect()),
        ];
        let append = Plan::SetOp(weft_exec::plan::SetOpPlan { op: weft_exec::plan::SetOperator::Append, all: true, inputs });
        let positions = self.positions(&rels);
        let mut steps = Vec::new();
        for mut c in after {
            remap_columns(&mut c, &positions);
            steps.push(Step::Filter(c));
        }
        // EXPLAIN names the appended columns as the relations' own.
        let (from, produced) = (self.from, &self.produced);
        let columns = rels.iter().flat_map(|&r| produced[r].iter().map(move |&c| from.rels[r].columns[c - from.offsets[r]].name.clone())).collect();
        let source = Source::Subquery { plan: Box::new(append), label: ScanLabel { alias: None, columns } };
        Ok(Partial { source, steps, rels, rows: rows.max(1.0), joined: true })
    }

    /// `probe JOIN build` on `conditions` (over the raw row); `after` filters the result.
    fn hash_join(&mut self, probe: Partial, build: Partial, join_type: JoinType, conditions: Vec<Expr>, after: Vec<Expr>) -> Result<Partial> {
        let probe_rels: BTreeSet<usize> = probe.rels.iter().copied().collect();
        let build_rels: BTreeSet<usize> = build.rels.iter().copied().collect();
        let probe_pos = self.positions(&probe.rels);
        let build_pos = self.positions(&build.rels);
        let mut all_rels = probe.rels.clone();
        all_rels.extend(&build.rels);
        let joined_pos = self.positions(&all_rels);
        let mut outer_keys = Vec::new();
        let mut inner_keys = Vec::new();
        let mut filters = Vec::new();
        let mut outer_mcvs = Vec::new();
        let mut distinct = Vec::new();
        for c in conditions {
            if let Some((mut o, mut i)) = self.key_pair(&c, &probe_rels, &build_rels)? {
                outer_mcvs = if outer_keys.is_empty() { self.outer_mcvs(&o) } else { Vec::new() };
                distinct.push(self.key_distinct(&o, &i));
                remap_columns(&mut o, &probe_pos);
                remap_columns(&mut i, &build_pos);
                outer_keys.push(o);
                inner_keys.push(i);
            } else {
                let mut c = c;
                remap_columns(&mut c, &joined_pos);
                filters.push(c);
            }
        }
        let rows = join_rows(join_type, probe.rows, build.rows, &distinct, !filters.is_empty());
        let estimated_inner_rows = build.rows;
        let join = HashJoin {
            join_type,
            mode: HashJoinMode::Serial,
            inner: self.build_pipeline(build),
            outer_keys,
            inner_keys,
            filter: and_all(filters),
            null_aware: false,
            outer_width: self.width(&probe.rels),
            inner_width: self.width(&all_rels) - self.width(&probe.rels),
            estimated_inner_rows,
            estimated_inner_width: 0,
            outer_mcvs,
        };
        self.push_join(probe, join, all_rels, rows, after)
    }

    /// The most common values of an outer key (over the raw row) and their frequencies,
    /// most common first: when it is a plain column of a table with usable statistics
    /// (the hash join keeps the inner tuples of these keys in memory: skew buckets).
    fn outer_mcvs(&self, key: &Expr) -> Vec<(Datum, f64)> {
        let Expr::Column { index: raw, .. } = key else { return Vec::new() };
        let rel = self.from.rel_of(*raw);
        let Source::Heap(heap) = &self.from.rels[rel].source else { return Vec::new() };
        let Some(meta) = self.ctx.catalog.tables.get(&heap.table_name) else { return Vec::new() };
        let Some(stats) = crate::selectivity::usable_stats(self.ctx.catalog, meta) else { return Vec::new() };
        let Some(column) = stats.columns.get(raw - self.from.offsets[rel]) else { return Vec::new() };
        column.most_common_vals.iter().zip(&column.most_common_freqs).map(|(v, &f)| (v.0.clone(), f)).collect()
    }

    fn push_join(&mut self, probe: Partial, join: HashJoin, rels: Vec<usize>, rows: f64, after: Vec<Expr>) -> Result<Partial> {
        let Partial { source, mut steps, .. } = probe;
        steps.push(Step::HashJoin(Box::new(join)));
        let positions = self.positions(&rels);
        for mut c in after {
            remap_columns(&mut c, &positions);
            steps.push(Step::Filter(c));
        }
        Ok(Partial { source, steps, rels, rows: rows.max(1.0), joined: true })
    }

    /// The build side as a pipeline: as it is, or materialized when it holds joins.
    fn build_pipeline(&self, build: Partial) -> Pipeline {
        if !build.joined {
            return Pipeline { source: build.source, steps: build.steps, workers: 0 };
        }
        let mut steps = build.steps;
        let serial = steps.iter().any(step_is_volatile);
        let workers = parallel_workers(&build.source, &mut steps, serial, self.ctx);
        let plan = Plan::Pipeline(Pipeline { source: build.source, steps, workers });
        Pipeline { source: Source::Subquery { plan: Box::new(plan), label: ScanLabel::default() }, steps: Vec::new(), workers: 0 }
    }

    /// `a = b` with `a` over the probe's relations and `b` over the build's (either way
    /// round), both cast to their common type.
    fn key_pair(&self, c: &Expr, probe: &BTreeSet<usize>, build: &BTreeSet<usize>) -> Result<Option<(Expr, Expr)>> {
        let Expr::Binary { op: BinaryOp::Eq, left, right, .. } = c else { return Ok(None) };
        let l = self.from.rels_used(left);
        let r = self.from.rels_used(right);
        let side = |rels: &BTreeSet<usize>, of: &BTreeSet<usize>| !rels.is_empty() && rels.is_subset(of);
        let (o, i) = if side(&l, probe) && side(&r, build) {
            (left.as_ref(), right.as_ref())
        } else if side(&r, probe) && side(&l, build) {
            (right.as_ref(), left.as_ref())
        } else {
            return Ok(None);
        };
        key_types(o.clone(), i.clone()).map(Some)
    }

    /// PostgreSQL runs a FULL JOIN only as a hash or merge join, so conditions that read
    /// columns but hold no equality between the two sides are refused; constant ones
    /// (`ON true`, `ON false`) are not join conditions to it.
    fn check_full_join_keys(&self, conditions: &[Expr], left: &BTreeSet<usize>, right: &BTreeSet<usize>) -> Result<()> {
        let reads_columns = conditions.iter().any(|c| !self.from.rels_used(c).is_empty());
        // A constant false conjunct makes the whole condition false, as PostgreSQL folds it
        // (`ON false AND a.x = 1`): nothing to key on.
        let always_false = conditions.iter().any(|c| matches!(c, Expr::Literal { value: Datum::Bool(false), .. }));
        if !reads_columns || always_false {
            return Ok(());
        }
        // A hash join needs one hashable key; a merge join, that every condition be a key.
        let mut all_keys = true;
        for c in conditions {
            if self.key_pair(c, left, right)?.is_some() {
                if hashable_equality(c) {
                    return Ok(());
                }
            } else if !self.from.rels_used(c).is_empty() {
                // (A constant is no join condition: PostgreSQL folds it away.)
                all_keys = false;
            }
        }
        if all_keys {
            return Ok(());
        }
        Err(Error::not_supported("FULL JOIN is only supported with merge-joinable or hash-joinable join conditions"))
    }

    fn add_semi_join(&mut self, partial: &mut Partial, semi: SemiJoin) -> Result<()> {
        let probe_pos = self.positions(&partial.rels);
        let outer_width = self.width(&partial.rels);
        let SemiJoin { build, keys, filter, join_type, null_aware, inner_positions, inner_width, rows } = semi;
        let mut outer_keys = Vec::new();
        let mut inner_keys = Vec::new();
        let outer_mcvs = if keys.len() == 1 { self.outer_mcvs(&keys[0].0) } else { Vec::new() };
        for (mut o, mut i) in keys {
            remap_columns(&mut o, &probe_pos);
            remap_columns(&mut i, &inner_positions);
            outer_keys.push(o);
            inner_keys.push(i);
        }
        let filter = filter.map(|mut f| {
            // Outer columns by the probe row, inner ones after them.
            let mut map = probe_pos.clone();
            for (raw, pos) in &inner_positions {
                map.insert(*raw, outer_width + pos);
            }
            remap_columns(&mut f, &map);
            f
        });
        let join = HashJoin {
            join_type,
            mode: HashJoinMode::Serial,
            inner: build,
            outer_keys,
            inner_keys,
            filter,
            null_aware,
            outer_width,
            inner_width,
            estimated_inner_rows: rows,
            estimated_inner_width: 0,
            outer_mcvs,
        };
        partial.steps.push(Step::HashJoin(Box::new(join)));
        partial.joined = true;
        Ok(())
    }
}

fn key_types(o: Expr, i: Expr) -> Result<(Expr, Expr)> {
    let data_type = ex::common_type(&[o.data_type(), i.data_type()], "JOIN")?;
    Ok((ex::coerce(o, data_type, false)?, ex::coerce(i, data_type, false)?))
}

fn is_equality(e: &Expr) -> bool {
    matches!(e, Expr::Binary { op: BinaryOp::Eq, .. })
}

/// Could PostgreSQL hash this equality? Not its cross-type date / timestamp / timestamptz
/// operators (`ts = d`, the binder's widening cast looked through), which only merge.
fn hashable_equality(c: &Expr) -> bool {
    let Expr::Binary { op: BinaryOp::Eq, left, right, .. } = c else { return false };
    let datetime = |t: DataType| matches!(t, DataType::Date | DataType::Timestamp | DataType::TimestampTz);
    let written = |e: &Expr| match e {
        Expr::Cast { expr, to } if datetime(*to) && datetime(expr.data_type()) => expr.data_type(),
        other => other.data_type(),
    };
    let (l, r) = (written(left), written(right));
    !(l != r && datetime(l) && datetime(r))
}

fn and_all(conditions: Vec<Expr>) -> Option<Expr> {
    conditions.into_iter().reduce(|a, b| Expr::Binary { op: BinaryOp::And, left: Box::new(a), right: Box::new(b), data_type: DataType::Bool }).map(crate::exprutil::order_quals)
}

/// The items and conditions of an island of inner joins (outer joins are items).
fn flatten_inner<'t>(tree: &'t Tree, items: &mut Vec<&'t Tree>, conditions: &mut Vec<Expr>) {
    match tree {
        Tree::Join { kind: Kind::Inner, left, right, on } => {
            flatten_inner(left, items, conditions);
            flatten_inner(right, items, conditions);
            conditions.extend(on.iter().cloned());
        }
        other => items.push(other),
    }
}

/// What [`Planner::plan_island`] estimates of an island's items: each one's relations,
/// its rows after its own conditions, and the distinct values of the columns the pending
/// equalities compare.
struct IslandEstimates<'e> {
    item_rels: &'e [BTreeSet<usize>],
    sizes: &'e [f64],
    distinct: &'e HashMap<usize, Option<f64>>,
}

/// A subquery condition bound and planned: the build side and how it matches.
struct SemiJoin {
    build: Pipeline,
    /// (outer key over the outer raw row, inner key over the subquery's raw row).
    keys: Vec<(Expr, Expr)>,
    /// Conditions over both: outer raw columns as they are, inner ones shifted by the outer
    /// raw width (see `SemiJoin::bind`).
    filter: Option<Expr>,
    join_type: JoinType,
    null_aware: bool,
    /// Shifted inner raw column → position in the build side's row.
    inner_positions: BTreeMap<usize, usize>,
    inner_width: usize,
    rows: f64,
}

impl SemiJoin {
    fn outer_columns(&self, out: &mut BTreeSet<usize>) {
        for (o, _) in &self.keys {
            columns_used(o, out);
        }
        if let Some(f) = &self.filter {
            let mut cols = BTreeSet::new();
            columns_used(f, &mut cols);
            // Inner columns are shifted past every outer one.
            out.extend(cols.into_iter().filter(|c| self.inner_positions.get(c).is_none()));
        }
    }

    fn bind(condition: &SubqueryCondition, outer: &FromClause, ctx: &PlanContext) -> Result<SemiJoin> {
        let join_type = if condition.negated { JoinType::Anti } else { JoinType::Semi };
        let query = &condition.subquery;
        if !is_plain_select(query) {
            return Self::bind_materialized(condition, outer, join_type, ctx);
        }
        let ast::SetExpr::Select(select) = query.body.as_ref() else {
            return Err(Error::internal("a plain subquery that is not a SELECT"));
        };
        let sub = analyze_from(&select.from, ctx)?;
        // The subquery's columns first, the outer query's after them; raw columns of the
        // subquery are shifted past the outer raw row so both live in one index space.
        let shift = outer.raw_width();
        let mut scope = sub.scope.clone();
        scope.outer = outer.scope.columns.iter().chain(&outer.scope.qualified_only).cloned().collect();
        scope.outer_qualified_only = outer.scope.qualified_only.len();
        let mut values: Vec<Expr> = sub.values.iter().map(|v| shift_columns(v, shift)).collect();
        values.extend(outer.values.iter().cloned());
        let (plain, nested) = split_where(select.selection.as_ref());
        if !nested.is_empty() {
            return Err(Error::not_supported("EXISTS / IN inside a subquery's WHERE"));
        }
        let mut conjuncts = Vec::new();
        for e in &plain {
            if contains_aggregate(e) {
                return Err(Error::new(SqlState::GROUPING_ERROR, "aggregate functions are not allowed in WHERE"));
            }
            let bound = require_bool(Binder::new(&scope).planning(ctx).bind(e)?, "WHERE")?;
            let bound = substitute_columns(&bound, &values);
            conjuncts.extend(bound.conjuncts().into_iter().cloned());
        }
        let mut keys = Vec::new();
        let mut in_pairs = Vec::new();
        if let Some(outer_expr) = &condition.outer {
            let items = sub.select_items(&select.projection)?;
            let outer_items = crate::bind::row_items(outer_expr);
            check_in_width(items.len(), outer_items.len(), outer_expr)?;
            let outer_scope = outer.scope.clone();
            for (outer_item, item) in outer_items.into_iter().zip(&items) {
                let o = substitute_columns(&Binder::new(&outer_scope).planning(ctx).bind(outer_item)?, &outer.values);
                let i = substitute_columns(&Binder::new(&scope).planning(ctx).bind(item)?, &values);
                in_pairs.push(in_key_types(o, i)?);
            }
        }
        let is_inner = |e: &Expr| {
            let mut cols = BTreeSet::new();
            columns_used(e, &mut cols);
            cols.iter().all(|&c| c >= shift)
        };
        let is_outer = |e: &Expr| {
            let mut cols = BTreeSet::new();
            columns_used(e, &mut cols);
            cols.iter().all(|&c| c < shift)
        };
        let mut own = Vec::new();
        let mut filters = Vec::new();
        let mut correlated = false;
        // An IN item is a key when it reads the subquery's columns only; an item reading
        // the outer query's is a comparison in the join filter.
        for (o, i) in in_pairs {
            if is_inner(&i) {
                keys.push((o, i));
            } else {
                correlated = true;
                filters.push(Expr::Binary { op: BinaryOp::Eq, left: Box::new(o), right: Box::new(i), data_type: DataType::Bool });
            }
        }
        for c in conjuncts {
            if is_inner(&c) {
                own.push(shift_columns(&c, 0usize.wrapping_sub(shift)));
                continue;
            }
            correlated = true;
            if let Expr::Binary { op: BinaryOp::Eq, left, right, .. } = &c {
                let (l, r) = (left.as_ref(), right.as_ref());
                let pair = if is_outer(l) && is_inner(r) && !is_outer(r) {
                    Some((l.clone(), r.clone()))
                } else if is_outer(r) && is_inner(l) && !is_outer(l) {
                    Some((r.clone(), l.clone()))
                } else {
                    None
                };
                if let Some((o, i)) = pair {
                    keys.push(key_types(o, i)?);
                    continue;
                }
            }
            filters.push(c);
        }
        let null_aware = condition.negated && condition.outer.is_some();
        if null_aware && correlated {
            return Err(Error::not_supported("NOT IN with a correlated subquery"));
        }
        // The subquery's relations produce what its keys, filters and conditions read.
        let mut needed = BTreeSet::new();
        for (_, i) in &keys {
            columns_used(i, &mut needed);
        }
        for f in &filters {
            columns_used(f, &mut needed);
        }
        let needed: BTreeSet<usize> = needed.into_iter().filter(|&c| c >= shift).map(|c| c - shift).collect();
        let mut sub = sub;
        let (decoded, produced) = sub.prune_columns(needed, &own);
        let mut planner = Planner { from: &sub, decoded, produced, ctx, pushed: BTreeMap::new() };
        let partial = planner.plan_tree(&sub.tree, own)?;
        let rows = partial.rows;
        let positions = planner.positions(&partial.rels);
        let inner_width = planner.width(&partial.rels);
        let build = planner.build_pipeline(partial);
        let inner_positions = positions.into_iter().map(|(raw, pos)| (raw + shift, pos)).collect();
        Ok(SemiJoin { build, keys, filter: and_all(filters), join_type, null_aware, inner_positions, inner_width, rows })
    }

    /// `x IN (subquery)` whose subquery is not a plain SELECT (aggregates, LIMIT, ...):
    /// planned on its own and read as a one-column relation.
    fn bind_materialized(condition: &SubqueryCondition, outer: &FromClause, join_type: JoinType, ctx: &PlanContext) -> Result<SemiJoin> {
        let planned = plan_query(&condition.subquery, ctx)?;
        let Some(outer_expr) = &condition.outer else {
            // EXISTS over a complex subquery: true when it returns a row, a join on no keys.
            let width = planned.columns.len();
            let build = Pipeline { source: Source::Subquery { plan: Box::new(planned.plan), label: ScanLabel::default() }, steps: Vec::new(), workers: 0 };
            return Ok(SemiJoin { build, keys: Vec::new(), filter: None, join_type, null_aware: false, inner_positions: BTreeMap::new(), inner_width: width, rows: UNKNOWN_ROWS });
        };
        let outer_items = crate::bind::row_items(outer_expr);
        check_in_width(planned.columns.len(), outer_items.len(), outer_expr)?;
        let shift = outer.raw_width();
        let outer_scope = outer.scope.clone();
        let mut keys = Vec::with_capacity(outer_items.len());
        for (n, outer_item) in outer_items.into_iter().enumerate() {
            let o = substitute_columns(&Binder::new(&outer_scope).planning(ctx).bind(outer_item)?, &outer.values);
            let i = Expr::Column { index: shift + n, data_type: planned.columns[n].data_type };
            keys.push(in_key_types(o, i)?);
        }
        let width = keys.len();
        let build = Pipeline { source: Source::Subquery { plan: Box::new(planned.plan), label: ScanLabel::default() }, steps: Vec::new(), workers: 0 };
        Ok(SemiJoin {
            build,
            keys,
            filter: None,
            join_type,
            null_aware: condition.negated,
            inner_positions: (0..width).map(|n| (shift + n, n)).collect(),
            inner_width: width,
            rows: UNKNOWN_ROWS,
        })
    }
}

/// PostgreSQL's errors for an IN whose subquery's width is not its left-hand side's
/// (`lhs`), pointed at the IN.
fn check_in_width(subquery_columns: usize, lhs_width: usize, lhs: &ast::Expr) -> Result<()> {
    let error = match subquery_columns.cmp(&lhs_width) {
        std::cmp::Ordering::Greater => Error::new(SqlState::SYNTAX_ERROR, "subquery has too many columns"),
        std::cmp::Ordering::Less => Error::new(SqlState::SYNTAX_ERROR, "subquery has too few columns"),
        std::cmp::Ordering::Equal => return Ok(()),
    };
    Err(crate::error_cursor::place_after(error, lhs.span()))
}

/// `x IN (SELECT y ...)`: the comparison's types, as `x = y` would have them.
fn in_key_types(o: Expr, i: Expr) -> Result<(Expr, Expr)> {
    if crate::bind::is_null_literal(&o) {
        let t = i.data_type();
        return Ok((Expr::Literal { value: Datum::Null, data_type: t }, i));
    }
    let (o_type, i_type) = (o.data_type(), i.data_type());
    key_types(o, i).map_err(|_| {
        Error::new(
            SqlState::UNDEFINED_FUNCTION,
            format!("operator does not exist: {} = {}", o_type.name(), i_type.name()),
        )
        .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.")
    })
}

/// `tree` with its relations numbered from `rels` on and its conditions' raw columns
/// moved by `columns`.
fn shift_tree(tree: Tree, rels: usize, columns: usize) -> Tree {
    match tree {
        Tree::Rel(r) => Tree::Rel(r + rels),
        Tree::Join { kind, left, right, on } => Tree::Join {
            kind,
            left: Box::new(shift_tree(*left, rels, columns)),
            right: Box::new(shift_tree(*right, rels, columns)),
            on: on.iter().map(|c| shift_columns(c, columns)).collect(),
        },
    }
}

/// Add `by` (wrapping) to every column index.
fn shift_columns(e: &Expr, by: usize) -> Expr {
    let mut cols = BTreeSet::new();
    columns_used(e, &mut cols);
    let map: BTreeMap<usize, usize> = cols.into_iter().map(|c| (c, c.wrapping_add(by))).collect();
    let mut out = e.clone();
    remap_columns(&mut out, &map);
    out
}
