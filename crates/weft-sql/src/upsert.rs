//! `INSERT ... ON CONFLICT (cols) | ON CONSTRAINT name DO UPDATE SET ... [WHERE ...]`.
//!
//! PostgreSQL inserts the proposed rows one at a time: a row whose keys an *arbiter* index
//! (the unique index over exactly the conflict target's columns, or the named constraint's)
//! already holds for a live row is not inserted; instead that existing row is updated with
//! the SET list, which sees it under the table's name (or alias) and the proposed row as
//! `EXCLUDED`, when the optional WHERE over both is true. A proposed row whose conflicting
//! row was inserted or updated by the same statement is an error (21000, "cannot affect
//! row a second time"), so every row changes at most once. NULLs in a key never conflict.
//!
//! weft decides the whole statement before writing anything, as DELETE and UPDATE do
//! (`modify.rs`), and gets the same answers:
//!
//! 1. *Propose*: the INSERT's source runs to completion (defaults and serial values are
//!    drawn for every proposed row, as PostgreSQL draws them before the conflict check).
//! 2. *Decide*, in proposal order: NOT NULL first (PostgreSQL checks constraints before
//!    looking for a conflict), then per arbiter the row's key is looked up among the keys
//!    this statement already wrote (a hit is the 21000 error) and in the index (a hit whose
//!    heap row is live, and not already replaced by this statement, is the conflict). The
//!    outcome is an insert, an update of that row (its new version's keys now count as
//!    written), or nothing (WHERE was not true).
//! 3. *Write*: the replaced rows get the statement's xid as xmax, and the inserted rows and
//!    new versions go through INSERT's path in decision order. Unique indexes other than
//!    the arbiters (and arbiters, for keys an update changed) are checked there as
//!    PostgreSQL checks each row when it writes it: `Replacements` records the step at which
//!    each old row was replaced, so a row replaced later still clashes with an earlier one.
//!
//! One difference remains: a statement that would fail with both 21000 and a unique
//! violation (23505) reports 21000, which the decide pass finds first, whatever the order
//! of the offending rows. The proposed rows and decisions are held in memory.

use std::collections::{HashMap, HashSet};

use sqlparser::ast;
use weft_access::btree::{BTree, BTreeDesc, TidWord};
use weft_access::catalog::{IndexMeta, TableMeta};
use weft_access::heap::{self, Tid};
use weft_access::index_build::{btree_desc, KeyProjector};
use weft_access::Snapshot;
use weft_common::parallel::CancelToken;
use weft_common::tuple::RowLayout;
use weft_common::{Datum, Error, Result, SqlState};
use weft_exec::expr::Expr;

use crate::api::QueryResult;
use crate::bind::{Scope, ScopeColumn};
use crate::database::WriteTxn;
use crate::indexes::{conflict_arbiters, Replacements};
use crate::modify::{bind_assignments, bind_condition, run_init_plans_of, write_rows};
use crate::planner::PlanContext;
use crate::returning::{aliased_table_reference, hidden_table_reference, statement_result, Returning};
use crate::session::Session;
use crate::statements::{
    exec_context, finish_context, insert_alias, insert_scope, insert_source_plan, insert_table_name, insert_target_for, run_query_plan,
    with_plan_context,
};

/// The name the proposed row goes by in SET and WHERE.
const EXCLUDED: &str = "excluded";

/// `INSERT ... ON CONFLICT target DO UPDATE SET ... [WHERE ...] [RETURNING ...]`.
pub(crate) fn insert_on_conflict_update(
    session: &mut Session,
    insert: &ast::Insert,
    target: Option<&ast::ConflictTarget>,
    action: &ast::DoUpdate,
    cancel: &CancelToken,
) -> Result<QueryResult> {
    let Some(target) = target else {
        return Err(Error::syntax("ON CONFLICT DO UPDATE requires inference specification or constraint name")
            .with_hint("For example, ON CONFLICT (column_name)."));
    };
    let table_name = insert_table_name(insert)?;
    let (changed, returning, returned) = session.write(|txn| {
        let table = txn.catalog.table(&table_name)?.clone();
        let plan = insert_source_plan(session, txn, &table, insert)?;
        let arbiters = conflict_arbiters(&txn.catalog, &table, Some(target))?;
        let target_scope = insert_scope(&table, insert);
        let alias = insert_alias(&table, insert);
        let (action, returning) = with_plan_context(session, &txn.catalog, |ctx| {
            let action = BoundAction::bind(session, cancel, &table, &target_scope, action, ctx)
                .map_err(|e| aliased_table_reference(e, &table.name, &alias))?;
            let returning = Returning::bind(insert.returning.as_ref(), &target_scope, ctx).map_err(|e| {
                let hint = format!("There is an entry for table \"{EXCLUDED}\", but it cannot be referenced from this part of the query.");
                aliased_table_reference(hidden_table_reference(e, EXCLUDED, hint), &table.name, &alias)
            })?;
            Ok::<_, Error>((action, returning))
        })?;
        let exec = exec_context(session, cancel);
        let outcome = run_query_plan(&plan, &exec);
        finish_context(session, &exec);
        let proposed = outcome?;
        let statement_exprs = action.exprs().chain(returning.iter().flat_map(|r| &r.exprs)).cloned().collect();
        run_init_plans_of(session, cancel, statement_exprs)?;
        let mut decider = Decider::new(session, txn, &table, &arbiters)?;
        let mut returned = Vec::new();
        for row in proposed {
            cancel.check()?;
            if let Some(written) = decider.decide(row, &action)? {
                if let Some(returning) = &returning {
                    returned.push(returning.project(written, &session.eval)?);
                }
            }
        }
        let changed = decider.write(txn, cancel)?;
        Ok((changed, returning, returned))
    })?;
    Ok(statement_result(returning, returned, format!("INSERT 0 {changed}")))
}

/// DO UPDATE's SET list and WHERE, over the existing row followed by the proposed one.
struct BoundAction {
    assignments: Vec<(usize, Expr)>,
    condition: Option<Expr>,
}

impl BoundAction {
    fn bind(
        session: &Session,
        cancel: &CancelToken,
        table: &TableMeta,
        target_scope: &Scope,
        action: &ast::DoUpdate,
        ctx: &PlanContext,
    ) -> Result<BoundAction> {
        let mut scope = target_scope.clone();
        scope.columns.extend(
            table.columns.iter().map(|c| ScopeColumn { table: Some(EXCLUDED.to_string()), name: c.name.clone(), data_type: c.data_type, type_modifier: c.type_modifier }),
        );
        let assignments = bind_assignments(table, &scope, ctx, &action.assignments)?;
        let condition = action.selection.as_ref().map(|c| bind_condition(session, cancel, &scope, ctx, c)).transpose()?;
        Ok(BoundAction { assignments, condition })
    }

    fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.assignments.iter().map(|(_, e)| e).chain(&self.condition)
    }
}

/// A key of an arbiter index, comparable by hashing: equal exactly when the index's
/// comparison says equal (numerics without trailing zeros, one zero and one NaN).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum KeyPart {
    Bool(bool),
    Integer(i64),
    Float(u64),
    Numeric(String),
    Text(String),
}

impl KeyPart {
    /// `None` for NULL, which never conflicts.
    fn of(datum: &Datum) -> Option<KeyPart> {
        Some(match datum {
            Datum::Null => return None,
            Datum::Bool(b) => KeyPart::Bool(*b),
            Datum::Int4(v) => KeyPart::Integer(*v as i64),
            Datum::Int8(v) => KeyPart::Integer(*v),
            Datum::Float8(v) if *v == 0.0 => KeyPart::Float(0.0f64.to_bits()),
            Datum::Float8(v) if v.is_nan() => KeyPart::Float(f64::NAN.to_bits()),
            Datum::Float8(v) => KeyPart::Float(v.to_bits()),
            Datum::Numeric(n) => {
                let text = n.to_string();
                let trimmed = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
                KeyPart::Numeric(trimmed.to_string())
            }
            Datum::Text(s) => KeyPart::Text(s.clone()),
            Datum::Date(v) => KeyPart::Integer(*v as i64),
            Datum::Time(v) | Datum::Timestamp(v) | Datum::TimestampTz(v) => KeyPart::Integer(*v),
            // Equal intervals (`1 mon` = `30 days`) are one key, as in the B-tree.
            Datum::Interval(iv) => KeyPart::Numeric(iv.span().to_string()),
            // Arrays cannot be index keys (`indexes.rs`); their text is a fallback.
            Datum::Array(_) => KeyPart::Text(datum.to_pg_text().unwrap_or_default()),
        })
    }
}

/// One arbiter index: how to look a row up in it, and the keys the statement wrote.
struct Arbiter {
    index: IndexMeta,
    desc: BTreeDesc,
    projector: KeyProjector,
    written: HashSet<Vec<KeyPart>>,
}

impl Arbiter {
    /// The arbiter's entry for the encoded row (with a dummy TID) and its key, none when a
    /// partial index's predicate rejects the row; the key is None when a part is NULL.
    fn entry(&self, encoded: &[u8]) -> Result<Option<(Vec<u8>, Option<Vec<KeyPart>>)>> {
        let mut entry = Vec::with_capacity(32);
        if !self.projector.project(encoded, TidWord::new(Tid { block: 0, offset: 0 }, false), &mut entry)? {
            return Ok(None);
        }
        let key = self.desc.key_datums(&entry)?.iter().map(KeyPart::of).collect();
        Ok(Some((entry, key)))
    }
}

/// What the statement does, decided row by row before anything is written.
struct Decider<'s> {
    session: &'s Session,
    xid: weft_access::Xid,
    snapshot: Snapshot,
    table: TableMeta,
    layout: RowLayout,
    arbiters: Vec<Arbiter>,
    not_null: weft_exec::InsertTarget,
    /// Rows to write (inserted rows and new versions), in decision order.
    writes: Vec<Vec<Datum>>,
    /// Existing rows replaced so far, and the decision step (index in `writes`) of each.
    replaced: HashMap<Tid, usize>,
}

impl<'s> Decider<'s> {
    fn new(session: &'s Session, txn: &WriteTxn, table: &TableMeta, arbiter_names: &[String]) -> Result<Decider<'s>> {
        let mut arbiters = Vec::with_capacity(arbiter_names.len());
        for index in txn.catalog.indexes_of(&table.name).filter(|i| arbiter_names.contains(&i.name)) {
            let desc = btree_desc(table, index)?;
            let projector = KeyProjector::with_map(table, index, &desc, crate::index_expr::row_map(table, index)?);
            arbiters.push(Arbiter { index: index.clone(), desc, projector, written: HashSet::new() });
        }
        arbiters.sort_by_key(|a| a.index.oid);
        Ok(Decider {
            session,
            xid: txn.xid,
            snapshot: txn.catalog.snapshot(),
            table: table.clone(),
            layout: RowLayout::new(&table.column_types()),
            arbiters,
            not_null: insert_target_for(table, txn.xid),
            writes: Vec::new(),
            replaced: HashMap::new(),
        })
    }

    /// Decide the fate of one proposed row; the row written (inserted, or the new version
    /// of the row it updated), or `None` when WHERE left the conflicting row alone.
    fn decide(&mut self, proposed: Vec<Datum>, action: &BoundAction) -> Result<Option<&Vec<Datum>>> {
        self.not_null.check_not_null(&proposed)?;
        let Some((tid, existing)) = self.conflict(&proposed)? else {
            self.remember_keys(&proposed)?;
            self.writes.push(proposed);
            return Ok(self.writes.last());
        };
        let eval = &self.session.eval;
        let mut both = existing;
        let width = both.len();
        both.extend(proposed);
        if let Some(condition) = &action.condition {
            if !matches!(condition.eval(&both, eval)?, Datum::Bool(true)) {
                return Ok(None);
            }
        }
        let mut new_row = both[..width].to_vec();
        for (column, expr) in &action.assignments {
            new_row[*column] = expr.eval(&both, eval)?;
        }
        self.remember_keys(&new_row)?;
        self.replaced.insert(tid, self.writes.len());
        self.writes.push(new_row);
        Ok(self.writes.last())
    }

    fn remember_keys(&mut self, row: &[Datum]) -> Result<()> {
        let mut encoded = Vec::new();
        self.layout.encode(row, &mut encoded)?;
        for arbiter in &mut self.arbiters {
            if let Some((_, Some(key))) = arbiter.entry(&encoded)? {
                arbiter.written.insert(key);
            }
        }
        Ok(())
    }

    /// The live row (TID and values) whose keys in an arbiter equal the proposed row's, in
    /// arbiter order; the 21000 error when that row is one this statement wrote.
    fn conflict(&self, proposed: &[Datum]) -> Result<Option<(Tid, Vec<Datum>)>> {
        let pool = &self.session.db.pool;
        let mut encoded = Vec::new();
        self.layout.encode(proposed, &mut encoded)?;
        for arbiter in &self.arbiters {
            let Some((entry, Some(key))) = arbiter.entry(&encoded)? else { continue };
            if arbiter.written.contains(&key) {
                return Err(Error::new(SqlState::CARDINALITY_VIOLATION, "ON CONFLICT DO UPDATE command cannot affect row a second time")
                    .with_hint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values."));
            }
            let tree = BTree::open(pool, arbiter.index.locator(), &arbiter.desc);
            let mut found = None;
            tree.visit_equal(&entry, |existing| {
                if !arbiter.desc.keys_equal_not_null(existing, &entry) {
                    return Ok(true);
                }
                let tid = arbiter.desc.tid_word(existing).tid();
                if self.replaced.contains_key(&tid) {
                    return Ok(true);
                }
                let row = heap::fetch(pool, self.table.locator(), tid, |header, row| {
                    header.live_for(&self.snapshot, Some(self.xid)).then(|| self.layout.decode(row)).transpose()
                })?;
                found = row.flatten().map(|row| (tid, row));
                Ok(found.is_none())
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// Write the decisions: xmax on the replaced rows, then the inserted rows and new
    /// versions in decision order. The number of rows inserted or updated.
    fn write(self, txn: &mut WriteTxn, cancel: &CancelToken) -> Result<u64> {
        if self.writes.is_empty() {
            return Ok(0);
        }
        let mut table = self.table;
        let mut old: Vec<Tid> = self.replaced.keys().copied().collect();
        old.sort_unstable();
        if !old.is_empty() {
            heap::set_xmax(&self.session.db.pool, table.locator(), &old, txn.xid)?;
            table.has_dead_rows = true;
        }
        let inserted = (self.writes.len() - old.len()) as u64;
        // Each replaced row's new version, for the foreign keys referencing the table.
        let new_versions: Vec<Vec<Datum>> = if crate::constraints::is_referenced(&txn.catalog, &table.name) {
            old.iter().map(|tid| self.writes[self.replaced[tid]].clone()).collect()
        } else {
            Vec::new()
        };
        let replacements = Replacements::at_steps((0..self.writes.len()).collect(), self.replaced.into_iter().collect());
        // The catalog's copy first: the writes read it (its dead rows flag) for index checks.
        table.row_count += inserted;
        *txn.catalog.table_mut(&table.name)? = table.clone();
        let written = write_rows(self.session, txn, &table, self.writes, &replacements, cancel)?;
        crate::constraints::check_removed_rows(self.session, txn, &table, &old, crate::constraints::Removal::Update(&new_versions), cancel)?;
        Ok(written)
    }
}
