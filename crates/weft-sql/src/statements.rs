//! One function per statement kind: DDL, DML, queries, settings.

use sqlparser::ast::{self, ObjectType, Statement};
use weft_access::catalog::{ColumnMeta, IndexConstraint, SequenceMeta, TableMeta};
use weft_common::parallel::CancelToken;
use weft_common::tuple::RowLayout;
use weft_common::{Coercion, DataType, Datum, Error, Result, SqlState, TypeModifier};
use weft_exec::expr::{self as ex, Expr};
use weft_exec::plan::{Pipeline, Plan, ScanLabel, Source, Step};
use weft_exec::{execute as run_plan, execute_insert, ExecContext, InsertTarget};

use crate::api::{ColumnInfo, QueryResult};
use crate::bind::{coerce_to_modifier, ident_name, is_null_literal, object_name, sql_type_modified, Binder, Scope};
use crate::constraints::ConstraintDef;
use crate::database::{Database, WriteTxn};
use crate::settings::Settings;
use weft_exec::expr::EvalContext;
use crate::indexes::{add_key_constraints, KeyConstraint};
use crate::planner::{plan_query, PlanContext, PlannedQuery};
use crate::session::Session;

/// Run one statement; `copy` is the client's end of a COPY FROM STDIN / TO STDOUT.
pub fn execute(session: &mut Session, statement: &Statement, cancel: &CancelToken, copy: Option<&mut dyn crate::copy::CopyClient>) -> Result<QueryResult> {
    match statement {
        Statement::Query(query) => select(session, query, cancel),
        Statement::Prepare { name, data_types, statement: inner } => crate::prepared::prepare(session, name, data_types, inner),
        Statement::Execute { name, parameters, immediate: false, into, using, output: false, default: false, .. } if into.is_empty() && using.is_empty() => {
            let bound = crate::prepared::bound_statement(session, name.as_ref(), parameters)?;
            execute(session, &bound, cancel, copy)
        }
        Statement::Deallocate { name, .. } => crate::prepared::deallocate(session, name),
        Statement::Declare { stmts } => crate::cursors::declare(session, stmts, cancel),
        Statement::Fetch { name, direction, into, .. } => crate::cursors::fetch(session, name, direction, into.as_ref()),
        Statement::Close { cursor } => crate::cursors::close(session, cursor),
        Statement::Explain { statement: inner, analyze, verbose, format, options, query_plan: false, estimate: false, .. } => {
            let bound = match inner.as_ref() {
                Statement::Execute { name, parameters, .. } => Some(crate::prepared::bound_statement(session, name.as_ref(), parameters)?),
                _ => None,
            };
            let inner = bound.as_ref().unwrap_or(inner.as_ref());
            crate::explain::explain(session, inner, *analyze, *verbose, format.as_ref(), options.as_deref(), cancel)
        }
        Statement::CreateTable(create) => create_table(session, create, cancel),
        Statement::Drop { object_type: ObjectType::Table, if_exists, names, cascade, .. } => drop_tables(session, names, *if_exists, *cascade),
        Statement::Drop { object_type: ObjectType::View, if_exists, names, cascade, .. } => {
            crate::views::drop_views(session, names, *if_exists, *cascade)
        }
        Statement::CreateView(create) => crate::views::create_view(session, create),
        Statement::Drop { object_type: ObjectType::Index, if_exists, names, .. } => {
            crate::indexes::drop_indexes(session, names, *if_exists)
        }
        Statement::Drop { object_type: ObjectType::Sequence, if_exists, names, .. } => {
            crate::sequences::drop_sequences(session, names, *if_exists)
        }
        Statement::CreateSequence { temporary: false, if_not_exists, name, data_type, sequence_options, owned_by: None } => {
            crate::sequences::create_sequence(session, name, *if_not_exists, data_type.as_ref(), sequence_options)
        }
        Statement::CreateIndex(create) => crate::indexes::create_index(session, create, cancel),
        Statement::AlterTable(_) => crate::alter_table::alter_table(session, statement, cancel),
        Statement::AlterIndex { name, operation } => crate::alter_table::alter_index(session, name, operation, false),
        Statement::Analyze(analyze) => crate::analyze::analyze(session, analyze, cancel),
        Statement::Drop { object_type, .. } => Err(Error::not_supported(format!("DROP {object_type} is not supported yet"))),
        Statement::Truncate(t) => truncate(session, &t.table_names, matches!(t.cascade, Some(ast::CascadeOption::Cascade))),
        Statement::Insert(insert) => insert_into(session, insert, cancel),
        Statement::Delete(delete) => crate::modify::delete(session, delete, cancel),
        Statement::Update(update) => crate::modify::update(session, update, cancel),
        Statement::Set(set) => set_statement(session, set),
        Statement::ShowVariable { variable } => show(session, variable),
        Statement::Reset(reset) => {
            match &reset.reset {
                ast::Reset::ALL => {
                    session.settings.reset_all();
                    session.note_session_setting(None);
                }
                ast::Reset::ConfigurationParameter(name) => {
                    let name = object_name(name)?;
                    session.settings.reset(&name)?;
                    session.note_session_setting(Some(&name));
                }
                other => return Err(Error::not_supported(format!("RESET {other:?}"))),
            }
            Ok(QueryResult::command("RESET"))
        }
        Statement::Copy { source, to, target, options, legacy_options, .. } => {
            crate::copy::copy(session, source, *to, target, options, legacy_options, cancel, copy)
        }
        other => Err(Error::not_supported(format!("statement not supported: {}", first_words(&other.to_string())))),
    }
}

fn first_words(sql: &str) -> String {
    sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The context a statement's plans run in. It also installs the statement's subplan
/// runner in the session's evaluation context (correlated subqueries run through it).
pub(crate) fn exec_context<'a>(session: &'a Session, cancel: &'a CancelToken) -> ExecContext<'a> {
    let settings = ExecSettings::of(&session.db, &session.settings);
    let runner = StatementRunner { db: session.db.clone(), settings: settings.clone(), cancel: cancel.clone() };
    session.eval.subplans().install(std::sync::Arc::new(runner));
    settings.context(&session.db, cancel, &session.eval)
}

/// What an execution context takes from the session's settings, read once per statement
/// (a subplan builds a context for every outer row).
#[derive(Clone)]
struct ExecSettings {
    leader_participates: bool,
    sort: weft_exec::SortSettings,
    hash: weft_exec::HashJoinSettings,
}

impl ExecSettings {
    fn of(db: &Database, settings: &Settings) -> ExecSettings {
        ExecSettings {
            leader_participates: settings.boolean("parallel_leader_participation"),
            sort: weft_exec::SortSettings {
                work_mem: settings.memory_bytes("work_mem"),
                strategy: weft_exec::SortStrategy::from_name(&settings.text("parallel_sort_strategy"))
                    .unwrap_or(weft_exec::SortStrategy::Partition),
                trace: settings.boolean("trace_sort"),
                temp_dir: db.data_dir.join("tmp"),
            },
            hash: weft_exec::HashJoinSettings {
                work_mem: settings.memory_bytes("work_mem"),
                hash_mem_multiplier: settings.real("hash_mem_multiplier"),
                attach_phases: settings.integer_list("weft_hash_attach_phases"),
                dense_up_front: settings.boolean("weft_hash_dense_up_front"),
            },
        }
    }

    fn context<'a>(&self, db: &'a Database, cancel: &'a CancelToken, eval: &'a EvalContext) -> ExecContext<'a> {
        ExecContext {
            pool: &db.pool,
            workers: &db.workers,
            cancel,
            eval,
            leader_participates: self.leader_participates,
            stats: Default::default(),
            sort: self.sort.clone(),
            notices: Default::default(),
            sort_reports: Default::default(),
            nodes: Default::default(),
            hash: self.hash.clone(),
            joins: Default::default(),
        }
    }
}

/// Runs a correlated subquery's plan for one outer row, in a context of its own (its
/// statistics and notices are not the statement's: EXPLAIN ANALYZE does not show them).
struct StatementRunner {
    db: std::sync::Arc<Database>,
    settings: ExecSettings,
    cancel: CancelToken,
}

impl ex::SubPlanRunner for StatementRunner {
    fn run(&self, plan: &Plan, eval: &EvalContext) -> Result<Vec<weft_exec::Row>> {
        run_plan(plan, &self.settings.context(&self.db, &self.cancel, eval))
    }

    fn try_run(&self, plan: &Plan, eval: &EvalContext) -> Result<Vec<weft_exec::Row>> {
        run_plan(plan, &self.settings.context(&self.db, &self.cancel.child(), eval))
    }

    fn run_until(&self, plan: &Plan, eval: &EvalContext, take: &mut (dyn FnMut(&[Datum]) -> Result<bool> + Send)) -> Result<()> {
        weft_exec::execute_until(plan, &self.settings.context(&self.db, &self.cancel, eval), take)
    }

    fn hash_memory(&self) -> usize {
        (self.settings.hash.work_mem as f64 * self.settings.hash.hash_mem_multiplier) as usize
    }
}

/// Hand what an execution recorded to the session: notices for the result, sort reports.
pub(crate) fn finish_context(session: &Session, ctx: &ExecContext) {
    session.pending_notices.lock().append(&mut ctx.notices.lock());
    *session.last_sort_reports.lock() = std::mem::take(&mut *ctx.sort_reports.lock());
}

pub(crate) fn plan(session: &Session, catalog: &weft_access::Catalog, query: &ast::Query) -> Result<PlannedQuery> {
    with_plan_context(session, catalog, |ctx| plan_query(query, ctx))
}

/// Plan a query whose rows are the statement's result (a SELECT, COPY of a query, CREATE
/// TABLE AS, a view): its `::regclass` items print names (`bind::regclass_output`).
pub(crate) fn plan_output(session: &Session, catalog: &weft_access::Catalog, query: &ast::Query) -> Result<PlannedQuery> {
    let mut planned = plan(session, catalog, query)?;
    crate::bind::regclass_output(&mut planned, catalog);
    Ok(planned)
}

/// Plan with a context over the catalog's current snapshot (one per statement: its init
/// plans are numbered from 1).
pub(crate) fn with_plan_context<R>(session: &Session, catalog: &weft_access::Catalog, f: impl FnOnce(&PlanContext) -> R) -> R {
    let snapshot = catalog.snapshot();
    let ctx = PlanContext {
        catalog,
        pool: &session.db.pool,
        snapshot: &snapshot,
        settings: &session.settings,
        eval: &session.eval,
        progress: &session.db.progress,
        init_plan_count: Default::default(),
        outer: None,
    };
    f(&ctx)
}

/// Run a plan's rows: its init plans (scalar subqueries) first, then the plan.
pub(crate) fn run_query_plan(plan: &Plan, ctx: &ExecContext) -> Result<Vec<weft_exec::Row>> {
    weft_exec::expr::run_init_plans(plan, ctx)?;
    run_plan(plan, ctx)
}

/// Run a query plan whose rows nobody reads (EXPLAIN ANALYZE); returns how many there were.
pub(crate) fn run_query_plan_discarding(plan: &Plan, ctx: &ExecContext) -> Result<u64> {
    weft_exec::expr::run_init_plans(plan, ctx)?;
    weft_exec::execute_discarding(plan, ctx)
}

/// Insert a plan's rows: its init plans first, then the plan.
fn run_insert_plan(plan: &Plan, ctx: &ExecContext, target: &InsertTarget) -> Result<u64> {
    weft_exec::expr::run_init_plans(plan, ctx)?;
    execute_insert(plan, ctx, target)
}

pub(crate) fn select(session: &mut Session, query: &ast::Query, cancel: &CancelToken) -> Result<QueryResult> {
    if let Some(outcome) = crate::indexes::try_index_check(session, query) {
        return outcome;
    }
    let catalog = session.catalog();
    let planned = plan_output(session, &catalog, query)?;
    // A streaming caller's sink takes the rows as the plan produces them; otherwise
    // they are collected into the result.
    let mut sink = session.row_sink.take();
    let mut rows = Vec::new();
    let ctx = exec_context(session, cancel);
    let outcome = match sink.as_mut() {
        Some(sink) => sink.columns(&planned.columns).and_then(|()| {
            weft_exec::expr::run_init_plans(&planned.plan, &ctx)?;
            weft_exec::execute_streaming(&planned.plan, &ctx, &mut |row| sink.row(row))
        }),
        None => run_query_plan(&planned.plan, &ctx).map(|collected| {
            rows = collected;
            rows.len() as u64
        }),
    };
    finish_context(session, &ctx);
    let count = outcome?;
    session.last_pipeline_stats = ctx.stats.into_inner();
    let result = QueryResult::rows(planned.columns, rows, format!("SELECT {count}"));
    Ok(QueryResult { streamed: sink.is_some(), ..result })
}

fn already_exists(name: &str) -> Error {
    Error::new(SqlState::DUPLICATE_TABLE, format!("relation \"{name}\" already exists"))
}

fn create_table(session: &mut Session, create: &ast::CreateTable, cancel: &CancelToken) -> Result<QueryResult> {
    if create.external || create.or_replace {
        return Err(Error::not_supported("only plain CREATE TABLE is supported"));
    }
    if create.temporary && !matches!(create.on_commit, None | Some(ast::OnCommit::PreserveRows)) {
        return Err(Error::not_supported("ON COMMIT DELETE ROWS / DROP is not supported"));
    }
    let name = temp_table_name(&create.name, create.temporary)?;
    let mut notices = Vec::new();
    let tag = session.write(|txn| {
        if txn.catalog.relation_exists(&name) {
            if create.if_not_exists {
                notices.push(format!("NOTICE:  relation \"{name}\" already exists, skipping"));
                return Ok(if create.query.is_some() { "CREATE TABLE AS".to_string() } else { "CREATE TABLE".to_string() });
            }
            return Err(already_exists(&name));
        }
        match &create.query {
            Some(query) => {
                if !create.constraints.is_empty() {
                    return Err(Error::not_supported("constraints in CREATE TABLE AS are not supported"));
                }
                let tag = create_table_as(session, txn, &name, create, query, cancel)?;
                mark_temporary(session, txn, &name, create.temporary)?;
                Ok(tag)
            }
            None => {
                let (mut columns, mut keys, mut constraints, serials) = column_definitions(&create.columns)?;
                for constraint in &create.constraints {
                    match ConstraintDef::from_table_constraint(constraint)? {
                        Some(constraint) => constraints.push(constraint),
                        None => keys.push(KeyConstraint::from_table_constraint(constraint)?),
                    }
                }
                add_serial_sequences(txn, &name, &mut columns, &serials);
                add_table(session, txn, &name, columns)?;
                mark_temporary(session, txn, &name, create.temporary)?;
                add_key_constraints(session, txn, &name, &keys, cancel, &mut notices)?;
                crate::constraints::add_constraints(session, txn, &name, constraints, cancel)?;
                Ok("CREATE TABLE".to_string())
            }
        }
    })?;
    Ok(QueryResult::command_with_notices(tag, notices))
}

/// The name of a table being created: a temporary one lives in `pg_temp`, not `public`.
fn temp_table_name(name: &ast::ObjectName, temporary: bool) -> Result<String> {
    let qualified_public = name.0.len() == 2 && name.0[0].as_ident().is_some_and(|s| ident_name(s) == "public");
    if temporary && qualified_public {
        return Err(Error::new(SqlState::INVALID_TABLE_DEFINITION, "cannot create temporary relation in non-temporary schema"));
    }
    object_name(name)
}

/// Make `name` temporary and remember it in the session, which drops it when it ends.
fn mark_temporary(session: &Session, txn: &mut WriteTxn, name: &str, temporary: bool) -> Result<()> {
    if !temporary {
        return Ok(());
    }
    let table = txn.catalog.table_mut(name)?;
    table.temporary = true;
    session.temp_tables.lock().push((name.to_string(), table.oid));
    Ok(())
}

/// Drop the session's temporary tables and views that still exist (the session is ending).
pub(crate) fn drop_temp_tables(session: &mut Session) -> Result<()> {
    let tables = std::mem::take(&mut *session.temp_tables.lock());
    if tables.is_empty() {
        return Ok(());
    }
    session.write(|txn| {
        let names: Vec<String> =
            tables.iter().filter(|(name, oid)| txn.catalog.tables.get(name).is_some_and(|t| t.oid == *oid)).map(|(name, _)| name.clone()).collect();
        let views: Vec<String> =
            tables.iter().filter(|(name, oid)| txn.catalog.views.get(name).is_some_and(|v| v.oid == *oid)).map(|(name, _)| name.clone()).collect();
        crate::constraints::drop_references_to(txn, &names, true)?;
        let dropping: Vec<String> = names.iter().chain(&views).cloned().collect();
        crate::views::drop_dependent_views(txn, &dropping, true)?;
        for name in &names {
            remove_table(txn, name);
        }
        for name in &views {
            txn.catalog.views.remove(name);
        }
        Ok(())
    })
}

/// Take a table out of the catalog with its indexes and owned sequences; its files are
/// removed when the transaction commits.
fn remove_table(txn: &mut WriteTxn, name: &str) -> bool {
    let Some(table) = txn.catalog.tables.remove(name) else { return false };
    txn.drop_relation(table.locator());
    crate::indexes::drop_indexes_of(txn, name);
    txn.catalog.sequences.retain(|_, s| s.owned_by.as_ref().is_none_or(|(t, _)| t != name));
    true
}

/// The columns of CREATE TABLE, the key constraints written on them, their CHECK and
/// REFERENCES constraints and the positions of serial columns.
#[allow(clippy::type_complexity)]
pub(crate) fn column_definitions(defs: &[ast::ColumnDef]) -> Result<(Vec<ColumnMeta>, Vec<KeyConstraint>, Vec<ConstraintDef>, Vec<usize>)> {
    let mut columns: Vec<ColumnMeta> = Vec::with_capacity(defs.len());
    let mut keys = Vec::new();
    let mut constraints = Vec::new();
    let mut serials = Vec::new();
    for def in defs {
        let name = ident_name(&def.name);
        if columns.iter().any(|c| c.name == name) {
            return Err(Error::new(SqlState::DUPLICATE_COLUMN, format!("column \"{name}\" specified more than once")));
        }
        // serial types: an integer column drawing its default from a sequence of its own.
        let serial = match &def.data_type {
            ast::DataType::Custom(type_name, _) => match type_name.to_string().to_ascii_lowercase().as_str() {
                "serial" | "serial4" => Some((DataType::Int4, None)),
                "smallserial" | "serial2" => Some((DataType::Int4, Some(TypeModifier::SmallInt))),
                "bigserial" | "serial8" => Some((DataType::Int8, None)),
                _ => None,
            },
            _ => None,
        };
        let (data_type, type_modifier) = match serial {
            Some(declared) => {
                serials.push(columns.len());
                declared
            }
            None => sql_type_modified(&def.data_type)?,
        };
        let mut not_null = serial.is_some();
        let mut default = None;
        for option in &def.options {
            match &option.option {
                ast::ColumnOption::NotNull => not_null = true,
                ast::ColumnOption::Null => not_null = false,
                ast::ColumnOption::Collation(c) => {
                    let c = c.to_string();
                    let plain = c.trim_matches('"');
                    if data_type != DataType::Text || !matches!(plain, "C" | "POSIX" | "default") {
                        return Err(Error::new(
                            SqlState::UNDEFINED_OBJECT,
                            format!("collation \"{plain}\" for encoding \"UTF8\" does not exist"),
                        ));
                    }
                }
                ast::ColumnOption::Default(expr) => default = Some(checked_default(expr, &name, data_type, type_modifier)?),
                ast::ColumnOption::PrimaryKey(_) => {
                    keys.push(KeyConstraint::for_column(IndexConstraint::PrimaryKey, option.name.as_ref().map(ident_name), &def.name))
                }
                ast::ColumnOption::Unique(c) => {
                    if matches!(c.nulls_distinct, ast::NullsDistinctOption::NotDistinct) {
                        return Err(Error::not_supported("UNIQUE NULLS NOT DISTINCT is not supported yet"));
                    }
                    keys.push(KeyConstraint::for_column(IndexConstraint::Unique, option.name.as_ref().map(ident_name), &def.name))
                }
                other => match ConstraintDef::from_column_option(option, &name)? {
                    Some(constraint) => constraints.push(constraint),
                    None => return Err(Error::not_supported(format!("column option {other} is not supported yet"))),
                },
            }
        }
        if serial.is_some() && default.is_some() {
            return Err(Error::syntax(format!(
                "multiple default values specified for column \"{name}\" of table"
            )));
        }
        columns.push(ColumnMeta { name, data_type, not_null, default, type_modifier });
    }
    Ok((columns, keys, constraints, serials))
}

/// A column's `DEFAULT` checked as PostgreSQL checks it when it is declared (CREATE TABLE,
/// ALTER TABLE ... ADD COLUMN / SET DEFAULT / TYPE): it must bind without columns and take
/// the column's type. Returns the text kept in the catalog.
pub(crate) fn checked_default(expr: &ast::Expr, name: &str, data_type: DataType, type_modifier: Option<TypeModifier>) -> Result<String> {
    let type_name = match type_modifier {
        Some(modifier) => modifier.base_type_name(),
        None => data_type.name(),
    };
    // Checked now, as PostgreSQL does: it must bind without columns and
    // take the column's type.
    let bound = Binder::new(&Scope::default()).bind(expr).map_err(|e| match e.sqlstate {
        SqlState::UNDEFINED_COLUMN => Error::new(SqlState::FEATURE_NOT_SUPPORTED, "cannot use column reference in DEFAULT expression"),
        _ => e,
    })?;
    let from = bound.data_type();
    let coerced = assignment_coerce(bound, data_type, type_modifier, name).map_err(|e| match e.sqlstate {
        SqlState::DATATYPE_MISMATCH => Error::new(
            SqlState::DATATYPE_MISMATCH,
            format!("column \"{name}\" is of type {type_name} but default expression is of type {}", from.name()),
        )
        .with_hint("You will need to rewrite or cast the expression."),
        _ => e,
    })?;
    // A quoted literal is read as the column's type now, as PostgreSQL does;
    // a length or precision is checked only when a row takes the default
    // (`smallint`, a type of its own in PostgreSQL, is read as one now).
    if matches!(expr, ast::Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_))) {
        let read = match &coerced {
            Expr::ApplyModifier { expr, modifier, .. } if *modifier != TypeModifier::SmallInt => expr.as_ref(),
            other => other,
        };
        read.eval(&[], &weft_exec::expr::EvalContext::default())?;
    }
    Ok(expr.to_string())
}

/// Give each serial column of the new table `name` its sequence (`table_column_seq`,
/// numbered on a clash) and the default `nextval('that_sequence')`.
pub(crate) fn add_serial_sequences(txn: &mut WriteTxn, name: &str, columns: &mut [ColumnMeta], serials: &[usize]) {
    for &i in serials {
        let column = &mut columns[i];
        let seq_name = crate::indexes::generated_name(&txn.catalog, name, std::slice::from_ref(&column.name), "seq");
        let max_value = match (column.data_type, column.type_modifier) {
            (_, Some(TypeModifier::SmallInt)) => i16::MAX as i64,
            (DataType::Int4, _) => i32::MAX as i64,
            _ => i64::MAX,
        };
        txn.catalog.sequences.insert(
            seq_name.clone(),
            SequenceMeta {
                name: seq_name.clone(),
                data_type: column.data_type,
                increment: 1,
                min_value: 1,
                max_value,
                start: 1,
                last_value: 1,
                is_called: false,
                owned_by: Some((name.to_string(), column.name.clone())),
            },
        );
        let quoted = crate::deparse::quote_identifier(&seq_name).replace('\'', "''");
        column.default = Some(format!("nextval('{quoted}')"));
    }
}

fn add_table(session: &Session, txn: &mut WriteTxn, name: &str, columns: Vec<ColumnMeta>) -> Result<TableMeta> {
    let rel = txn.create_relation(&session.db)?;
    let table = TableMeta { oid: rel.rel_number, name: name.to_string(), columns, rel_number: rel.rel_number, row_count: 0, parallel_workers: None, has_dead_rows: false, checks: Vec::new(), foreign_keys: Vec::new(), temporary: false };
    txn.catalog.tables.insert(name.to_string(), table.clone());
    Ok(table)
}

pub(crate) fn insert_target_for(table: &TableMeta, xid: u64) -> InsertTarget {
    InsertTarget {
        rel: table.locator(),
        layout: RowLayout::new(&table.column_types()),
        xid,
        table_name: table.name.clone(),
        not_null: table
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.not_null)
            .map(|(i, c)| (i, c.name.clone()))
            .collect(),
        fill_last_page: true,
    }
}

fn create_table_as(
    session: &Session,
    txn: &mut WriteTxn,
    name: &str,
    create: &ast::CreateTable,
    query: &ast::Query,
    cancel: &CancelToken,
) -> Result<String> {
    let planned = plan_output(session, &txn.catalog, query)?;
    let renames: Vec<String> = create.columns.iter().map(|c| ident_name(&c.name)).collect();
    let columns = output_columns(&planned, &renames, "too many column names were specified")?;
    let table = add_table(session, txn, name, columns)?;
    let target = insert_target_for(&table, txn.xid);
    let ctx = exec_context(session, cancel);
    let outcome = run_insert_plan(&planned.plan, &ctx, &target);
    finish_context(session, &ctx);
    let inserted = outcome?;
    txn.catalog.table_mut(name)?.row_count = inserted;
    Ok(format!("SELECT {inserted}"))
}

/// The columns a query's output makes (CREATE TABLE AS, CREATE VIEW), the first renamed
/// by `renames`; `too_many` is the syntax error for more names than columns.
pub(crate) fn output_columns(planned: &PlannedQuery, renames: &[String], too_many: &str) -> Result<Vec<ColumnMeta>> {
    if renames.len() > planned.columns.len() {
        return Err(Error::syntax(too_many));
    }
    let mut columns: Vec<ColumnMeta> = Vec::with_capacity(planned.columns.len());
    for (i, col) in planned.columns.iter().enumerate() {
        let name = renames.get(i).cloned().unwrap_or_else(|| col.name.clone());
        if columns.iter().any(|c| c.name == name) {
            return Err(Error::new(SqlState::DUPLICATE_COLUMN, format!("column \"{name}\" specified more than once")));
        }
        columns.push(ColumnMeta { name, data_type: col.data_type, not_null: false, default: None, type_modifier: col.type_modifier });
    }
    Ok(columns)
}

fn drop_tables(session: &mut Session, names: &[ast::ObjectName], if_exists: bool, cascade: bool) -> Result<QueryResult> {
    let mut notices = Vec::new();
    session.write(|txn| {
        let existing: Vec<String> =
            names.iter().map(object_name).collect::<Result<Vec<_>>>()?.into_iter().filter(|n| txn.catalog.tables.contains_key(n)).collect();
        notices.extend(crate::constraints::drop_references_to(txn, &existing, cascade)?);
        notices.extend(crate::views::drop_dependent_views(txn, &existing, cascade)?);
        for name in names {
            let name = object_name(name)?;
            match remove_table(txn, &name) {
                true => {}
                false if txn.catalog.views.contains_key(&name) => {
                    return Err(Error::new(SqlState::WRONG_OBJECT_TYPE, format!("\"{name}\" is not a table"))
                        .with_hint("Use DROP VIEW to remove a view."))
                }
                false if txn.catalog.indexes.contains_key(&name) => {
                    return Err(Error::new(SqlState::WRONG_OBJECT_TYPE, format!("\"{name}\" is not a table"))
                        .with_hint("Use DROP INDEX to remove an index."))
                }
                false if if_exists => notices.push(format!("NOTICE:  table \"{name}\" does not exist, skipping")),
                false => {
                    return Err(Error::new(SqlState::UNDEFINED_TABLE, format!("table \"{name}\" does not exist")))
                }
            }
        }
        Ok(())
    })?;
    Ok(QueryResult::command_with_notices("DROP TABLE", notices))
}

fn truncate(session: &mut Session, targets: &[ast::TruncateTableTarget], cascade: bool) -> Result<QueryResult> {
    let db = session.db.clone();
    let mut notices = Vec::new();
    session.write(|txn| {
        let mut names: Vec<String> = targets.iter().map(|t| object_name(&t.name)).collect::<Result<_>>()?;
        for name in &names {
            txn.catalog.table(name)?;
        }
        if cascade {
            // The tables referencing a truncated table are truncated too, transitively.
            let mut at = 0;
            while at < names.len() {
                let children: Vec<String> =
                    crate::constraints::referenced_by(&txn.catalog, &names[at]).into_iter().map(|(child, _)| child.name.clone()).collect();
                for child in children {
                    if !names.contains(&child) {
                        notices.push(format!("NOTICE:  truncate cascades to table \"{child}\""));
                        names.push(child);
                    }
                }
                at += 1;
            }
        }
        crate::constraints::check_truncate(&txn.catalog, &names)?;
        for name in names {
            let old = txn.catalog.table(&name)?.locator();
            let new = txn.create_relation(&db)?;
            let table = txn.catalog.table_mut(&name)?;
            table.rel_number = new.rel_number;
            table.row_count = 0;
            table.has_dead_rows = false;
            let table = table.clone();
            txn.drop_relation(old);
            crate::indexes::truncate_indexes_of(&db, txn, &table)?;
        }
        Ok(())
    })?;
    Ok(QueryResult::command_with_notices("TRUNCATE TABLE", notices))
}

/// `DEFAULT` written as a value (INSERT's VALUES, UPDATE's SET).
pub(crate) fn is_default_keyword(value: &ast::Expr) -> bool {
    matches!(value, ast::Expr::Identifier(i) if i.value.eq_ignore_ascii_case("default") && i.quote_style.is_none())
}

/// The value a column takes when a statement gives none: its DEFAULT expression, bound
/// again from its text, or NULL.
pub(crate) fn column_default(ctx: &PlanContext, column: &ColumnMeta) -> Result<Expr> {
    let Some(text) = &column.default else { return Ok(Expr::Literal { value: Datum::Null, data_type: column.data_type }) };
    let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|e| Error::internal(format!("stored default of column \"{}\" does not parse: {e}", column.name)))?;
    let bound = Binder::new(&Scope::default()).planning(ctx).bind(&parsed)?;
    assign_to_column(bound, column)
}

/// [`assignment_coerce`] into a catalog column, with its type modifier.
pub(crate) fn assign_to_column(expr: Expr, column: &ColumnMeta) -> Result<Expr> {
    assignment_coerce(expr, column.data_type, column.type_modifier, &column.name)
}

/// PostgreSQL's assignment coercion of a value into a column of type `to`.
/// With a type modifier (`numeric(6,2)`, `varchar(3)`, `smallint`) the value is then
/// rounded, checked or refused by it (`Coercion::Assignment`: a long string is an error).
pub(crate) fn assignment_coerce(expr: Expr, to: DataType, modifier: Option<TypeModifier>, column: &str) -> Result<Expr> {
    let from = expr.data_type();
    if is_null_literal(&expr) {
        return Ok(Expr::Literal { value: Datum::Null, data_type: to });
    }
    let string_literal = matches!(expr, Expr::Literal { value: Datum::Text(_), .. });
    if from == to || string_literal || (from.is_numeric_family() && to.is_numeric_family()) || to == DataType::Text {
        return match modifier {
            Some(modifier) => coerce_to_modifier(expr, modifier, Coercion::Assignment),
            None if from == to => Ok(expr),
            None => ex::coerce(expr, to, true),
        };
    }
    let type_name = match modifier {
        Some(modifier) => modifier.base_type_name(),
        None => to.name(),
    };
    Err(Error::new(
        SqlState::DATATYPE_MISMATCH,
        format!("column \"{column}\" is of type {type_name} but expression is of type {}", from.name()),
    )
    .with_hint("You will need to rewrite or cast the expression."))
}

/// Target column indexes of an INSERT / COPY column list (all columns when empty).
pub(crate) fn target_columns(table: &TableMeta, names: &[String]) -> Result<Vec<usize>> {
    if names.is_empty() {
        return Ok((0..table.columns.len()).collect());
    }
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let name = name.clone();
        let index = table.column_index(&name).ok_or_else(|| {
            Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column \"{name}\" of relation \"{}\" does not exist", table.name),
            )
        })?;
        if out.contains(&index) {
            return Err(Error::new(SqlState::DUPLICATE_COLUMN, format!("column \"{name}\" specified more than once")));
        }
        out.push(index);
    }
    Ok(out)
}

fn insert_into(session: &mut Session, insert: &ast::Insert, cancel: &CancelToken) -> Result<QueryResult> {
    let on_conflict = match &insert.on {
        None => None,
        Some(ast::OnInsert::OnConflict(ast::OnConflict { conflict_target, action: ast::OnConflictAction::DoNothing })) => {
            Some(conflict_target.as_ref())
        }
        Some(ast::OnInsert::OnConflict(ast::OnConflict { conflict_target, action: ast::OnConflictAction::DoUpdate(update) })) => {
            return crate::upsert::insert_on_conflict_update(session, insert, conflict_target.as_ref(), update, cancel)
        }
        Some(other) => return Err(Error::not_supported(format!("INSERT ... {other}"))),
    };
    let table_name = insert_table_name(insert)?;
    let (inserted, returning, returned) = session.write(|txn| {
        let table = txn.catalog.table(&table_name)?.clone();
        let plan = insert_source_plan(session, txn, &table, insert)?;
        let returning = with_plan_context(session, &txn.catalog, |ctx| {
            crate::returning::Returning::bind(insert.returning.as_ref(), &insert_scope(&table, insert), ctx)
                .map_err(|e| crate::returning::aliased_table_reference(e, &table.name, &insert_alias(&table, insert)))
        })?;
        let fill_last_page = !plan.reads_relation(table.locator());
        let (inserted, first_block) = insert_rows(session, txn, &table, &plan, fill_last_page, cancel)?;
        let arbiters = on_conflict.map(|target| crate::indexes::conflict_arbiters(&txn.catalog, &table, target)).transpose()?;
        let skipped = maintain_indexes(session, txn, &table, first_block, &Default::default(), arbiters.as_deref(), cancel)?;
        let inserted = inserted - skipped.len() as u64;
        txn.catalog.table_mut(&table_name)?.row_count += inserted;
        let returned = match &returning {
            Some(returning) => inserted_rows_returned(session, txn, &table, first_block, &skipped, returning, cancel)?,
            None => Vec::new(),
        };
        Ok((inserted, returning, returned))
    })?;
    Ok(crate::returning::statement_result(returning, returned, format!("INSERT 0 {inserted}")))
}

/// The table an INSERT names.
pub(crate) fn insert_table_name(insert: &ast::Insert) -> Result<String> {
    match &insert.table {
        ast::TableObject::TableName(name) => object_name(name),
        other => Err(Error::not_supported(format!("INSERT INTO {other}"))),
    }
}

/// The name an INSERT's target goes by: its alias (`INSERT INTO t AS x`) or its name.
pub(crate) fn insert_alias(table: &TableMeta, insert: &ast::Insert) -> String {
    insert.table_alias.as_ref().map_or_else(|| table.name.clone(), |a| ident_name(&a.alias))
}

/// The columns of an INSERT's target table under its name or alias.
pub(crate) fn insert_scope(table: &TableMeta, insert: &ast::Insert) -> Scope {
    let qualifier = insert_alias(table, insert);
    Scope::new(
        table
            .columns
            .iter()
            .map(|c| crate::bind::ScopeColumn {
                table: Some(qualifier.clone()),
                name: c.name.clone(),
                data_type: c.data_type,
                type_modifier: c.type_modifier,
            })
            .collect(),
    )
}

/// The plan whose rows an INSERT proposes: full table rows from its VALUES, SELECT or
/// DEFAULT VALUES.
pub(crate) fn insert_source_plan(session: &Session, txn: &WriteTxn, table: &TableMeta, insert: &ast::Insert) -> Result<Plan> {
    let names = insert.columns.iter().map(object_name).collect::<Result<Vec<_>>>()?;
    let targets = target_columns(table, &names)?;
    match insert.source.as_ref() {
        Some(source) => insert_plan(session, &txn.catalog, table, &targets, !names.is_empty(), source),
        // INSERT ... DEFAULT VALUES: one row of defaults.
        None => with_plan_context(session, &txn.catalog, |ctx| {
            let row = table.columns.iter().map(|c| column_default(ctx, c)).collect::<Result<Vec<_>>>()?;
            Ok(Plan::Pipeline(Pipeline { source: Source::Values(vec![row]), steps: Vec::new(), workers: 0 }))
        }),
    }
}

/// RETURNING of an INSERT: its rows as stored (defaults filled in), read back from the
/// blocks it wrote in the order it wrote them, without those ON CONFLICT skipped.
fn inserted_rows_returned(
    session: &Session,
    txn: &WriteTxn,
    table: &TableMeta,
    first_block: weft_storage::BlockNumber,
    skipped: &[weft_access::Tid],
    returning: &crate::returning::Returning,
    cancel: &CancelToken,
) -> Result<Vec<Vec<Datum>>> {
    crate::modify::run_init_plans_of(session, cancel, returning.exprs.clone())?;
    let pool = &session.db.pool;
    let layout = RowLayout::new(&table.column_types());
    let end = pool.nblocks(table.locator(), weft_storage::ForkNumber::Main)?;
    let mut rows = Vec::new();
    let mut row = Vec::with_capacity(table.columns.len());
    weft_access::heap::scan_own_rows(pool, table.locator(), first_block..end, txn.xid, |tid, tuple| {
        if skipped.binary_search(&tid).is_err() {
            row.clear();
            layout.decode_into(tuple, &mut row)?;
            rows.push(returning.project(&row, &session.eval)?);
        }
        Ok(())
    })?;
    Ok(rows)
}

/// Write the rows of `plan` (full table rows) into `table`'s heap; their count and the
/// first block written, from which index maintenance reads them back.
pub(crate) fn insert_rows(
    session: &Session,
    txn: &mut WriteTxn,
    table: &TableMeta,
    plan: &Plan,
    fill_last_page: bool,
    cancel: &CancelToken,
) -> Result<(u64, weft_storage::BlockNumber)> {
    let mut target = insert_target_for(table, txn.xid);
    target.fill_last_page = fill_last_page;
    let first_block = first_block_written(session, table)?;
    let ctx = exec_context(session, cancel);
    let outcome = run_insert_plan(plan, &ctx, &target);
    finish_context(session, &ctx);
    let inserted = outcome?;
    txn.touch(table.locator());
    Ok((inserted, first_block))
}

/// The first block an insert into `table` may write (it starts by filling the last page).
pub(crate) fn first_block_written(session: &Session, table: &TableMeta) -> Result<weft_storage::BlockNumber> {
    Ok(session.db.pool.nblocks(table.locator(), weft_storage::ForkNumber::Main)?.saturating_sub(1))
}

/// After rows were inserted: add their entries to the table's indexes (`replaced`: see
/// [`crate::indexes::maintain_indexes`]).
pub(crate) fn maintain_indexes(
    session: &Session,
    txn: &mut WriteTxn,
    table: &TableMeta,
    first_block: weft_storage::BlockNumber,
    replaced: &crate::indexes::Replacements,
    arbiters: Option<&[String]>,
    cancel: &CancelToken,
) -> Result<Vec<weft_access::Tid>> {
    let indexes: Vec<_> = txn.catalog.indexes_of(&table.name).map(|i| i.locator()).collect();
    crate::constraints::check_new_rows(session, txn, table, first_block, cancel)?;
    let skipped = crate::indexes::maintain_indexes(&session.db, txn, table, first_block, replaced, arbiters, cancel)?;
    for rel in indexes {
        txn.touch(rel);
    }
    crate::constraints::check_new_references(session, txn, table, first_block, cancel)?;
    Ok(skipped)
}

/// The plan whose rows are full table rows for an INSERT. `targets` are the columns named
/// (`columns_named`), or else all of the table's: then, as in PostgreSQL, a source with
/// fewer columns fills the first ones and the rest take their defaults.
pub(crate) fn insert_plan(
    session: &Session,
    catalog: &weft_access::Catalog,
    table: &TableMeta,
    targets: &[usize],
    columns_named: bool,
    source: &ast::Query,
) -> Result<Plan> {
    let fewer = |width: usize| if columns_named || width > targets.len() { targets } else { &targets[..width] };
    let arity_error = |values: usize| {
        if values > targets.len() {
            Error::syntax("INSERT has more expressions than target columns")
        } else {
            Error::syntax("INSERT has more target columns than expressions")
        }
    };
    // VALUES binds each value against its column's type, so quoted strings and NULLs
    // take the column's type as in PostgreSQL.
    if let (ast::SetExpr::Values(values), None, None) = (source.body.as_ref(), &source.order_by, &source.limit_clause) {
        let width = values.rows.first().map_or(0, |row| row.len());
        if values.rows.iter().any(|row| row.len() != width) {
            return Err(Error::syntax("VALUES lists must all be the same length"));
        }
        let targets = fewer(width);
        return with_plan_context(session, catalog, |ctx| {
            let scope = Scope::default();
            let mut rows = Vec::with_capacity(values.rows.len());
            for row in &values.rows {
                if row.len() != targets.len() {
                    return Err(arity_error(row.len()));
                }
                let mut full: Vec<Expr> = table.columns.iter().map(|c| column_default(ctx, c)).collect::<Result<_>>()?;
                for (value, &column) in row.iter().zip(targets) {
                    let meta = &table.columns[column];
                    if is_default_keyword(value) {
                        continue;
                    }
                    let bound = Binder::new(&scope).planning(ctx).bind(value)?;
                    full[column] = assign_to_column(bound, meta)?;
                }
                rows.push(full);
            }
            Ok(Plan::Pipeline(Pipeline { source: Source::Values(rows), steps: Vec::new(), workers: 0 }))
        });
    }
    let select_width = match source.body.as_ref() {
        ast::SetExpr::Select(select) => select.projection.len(),
        _ => targets.len(),
    };
    let typed_source = type_unknown_outputs(source, table, fewer(select_width));
    let planned = plan(session, catalog, typed_source.as_ref().unwrap_or(source))?;
    let targets = fewer(planned.columns.len());
    if planned.columns.len() != targets.len() {
        return Err(arity_error(planned.columns.len()));
    }
    let mut projection: Vec<Expr> =
        with_plan_context(session, catalog, |ctx| table.columns.iter().map(|c| column_default(ctx, c)).collect::<Result<_>>())?;
    for (index, (&column, info)) in targets.iter().zip(&planned.columns).enumerate() {
        let meta = &table.columns[column];
        let input = Expr::Column { index, data_type: info.data_type };
        projection[column] = assign_to_column(input, meta)?;
    }
    // PostgreSQL's name for the SELECT of an INSERT, should it show as a subquery scan.
    let label = ScanLabel { alias: Some("*SELECT*".to_string()), columns: planned.columns.iter().map(|c| c.name.clone()).collect() };
    // A volatile default (nextval, random) runs in one process, in the rows' order.
    let mut plan = planned.plan;
    if let Plan::Pipeline(pipeline) = &mut plan {
        if projection.iter().any(crate::exprutil::is_volatile) {
            pipeline.workers = 0;
        }
    }
    Ok(append_step(plan, Step::Project(projection), label))
}

/// INSERT ... SELECT whose select list holds NULLs or quoted strings: PostgreSQL gives
/// those outputs (of unknown type) their target column's type, where a SELECT on its own
/// would make them text. The source with such outputs cast to the columns' types (without
/// modifiers: the store applies those, as an assignment), or `None` if nothing changes.
fn type_unknown_outputs(source: &ast::Query, table: &TableMeta, targets: &[usize]) -> Option<ast::Query> {
    let ast::SetExpr::Select(select) = source.body.as_ref() else { return None };
    let unknown = |e: &ast::Expr| {
        matches!(e, ast::Expr::Value(v) if matches!(v.value, ast::Value::Null | ast::Value::SingleQuotedString(_)))
    };
    let outputs: Vec<&ast::Expr> = select
        .projection
        .iter()
        .map(|item| match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
            _ => None,
        })
        .collect::<Option<_>>()?;
    if outputs.len() != targets.len() || !outputs.iter().any(|e| unknown(e)) {
        return None;
    }
    let mut typed = source.clone();
    let ast::SetExpr::Select(select) = typed.body.as_mut() else { return None };
    for (item, &column) in select.projection.iter_mut().zip(targets) {
        let (ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. }) = item else { continue };
        if !unknown(e) {
            continue;
        }
        let data_type = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
            .try_with_sql(table.columns[column].data_type.name())
            .and_then(|mut parser| parser.parse_data_type())
            .ok()?;
        *e = ast::Expr::Cast { kind: ast::CastKind::DoubleColon, expr: Box::new(e.clone()), data_type, format: None };
    }
    Some(typed)
}

/// Add a final row step to a plan (`label` names the subquery scan it may need).
pub(crate) fn append_step(plan: Plan, step: Step, label: ScanLabel) -> Plan {
    match plan {
        Plan::Pipeline(mut pipeline) => {
            pipeline.steps.push(step);
            Plan::Pipeline(pipeline)
        }
        Plan::Aggregate { input, group_by, aggregates, mut output } => {
            output.push(step);
            Plan::Aggregate { input, group_by, aggregates, output }
        }
        other => Plan::Pipeline(Pipeline { source: Source::Subquery { plan: Box::new(other), label }, steps: vec![step], workers: 0 }),
    }
}

/// `SET [SESSION | LOCAL] name = value | DEFAULT`, `SET [LOCAL] TIME ZONE value`. Inside a
/// transaction block a SET is undone by ROLLBACK and a SET LOCAL lasts until the block
/// ends; outside one, SET LOCAL warns and has no effect, as in PostgreSQL.
fn set_statement(session: &mut Session, set: &ast::Set) -> Result<QueryResult> {
    let (name, value, local) = match set {
        ast::Set::SingleAssignment { scope, variable, values, .. } => {
            let value = match values.as_slice() {
                [ast::Expr::Identifier(i)] if i.value.eq_ignore_ascii_case("default") && i.quote_style.is_none() => None,
                [single] => Some(setting_value_text(single)?),
                many => Some(many.iter().map(setting_value_text).collect::<Result<Vec<_>>>()?.join(", ")),
            };
            (object_name(variable)?, value, matches!(scope, Some(ast::ContextModifier::Local)))
        }
        ast::Set::SetTimeZone { local, value } => ("TimeZone".to_string(), Some(setting_value_text(value)?), *local),
        other => return Err(Error::not_supported(format!("{other}"))),
    };
    let apply = |settings: &mut Settings| match &value {
        None => settings.reset(&name),
        Some(value) => settings.set(&name, value),
    };
    if local && !session.in_transaction_block() {
        apply(&mut session.settings.clone())?;
        let mut result = QueryResult::command("SET");
        result.notices.push("WARNING:  SET LOCAL can only be used in transaction blocks".to_string());
        return Ok(result);
    }
    apply(&mut session.settings)?;
    if !local {
        session.note_session_setting(Some(&name));
    }
    Ok(QueryResult::command("SET"))
}

fn setting_value_text(expr: &ast::Expr) -> Result<String> {
    Ok(match expr {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            ast::Value::Number(n, _) => n.clone(),
            ast::Value::Boolean(b) => if *b { "on".into() } else { "off".into() },
            other => other.to_string(),
        },
        ast::Expr::Identifier(i) => i.value.clone(),
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => format!("-{}", setting_value_text(expr)?),
        other => other.to_string(),
    })
}

fn show(session: &mut Session, variable: &[ast::Ident]) -> Result<QueryResult> {
    let name = variable.iter().map(|i| i.value.clone()).collect::<Vec<_>>().join(" ");
    if name.eq_ignore_ascii_case("all") {
        let columns = ["name", "setting", "description"]
            .iter()
            .map(|n| ColumnInfo { name: n.to_string(), data_type: DataType::Text, type_modifier: None })
            .collect();
        let rows = session
            .settings
            .all()
            .into_iter()
            .map(|(n, v, d)| vec![Datum::Text(n), Datum::Text(v), Datum::Text(d)])
            .collect::<Vec<_>>();
        let tag = format!("SHOW {}", rows.len());
        return Ok(QueryResult::rows(columns, rows, tag));
    }
    let value = session.settings.show(&name)?;
    let column = ColumnInfo { name: name.to_lowercase(), data_type: DataType::Text, type_modifier: None };
    Ok(QueryResult::rows(vec![column], vec![vec![Datum::Text(value)]], "SHOW"))
}
