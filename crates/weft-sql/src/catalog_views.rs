//! PostgreSQL's catalog views over weft's catalog: `pg_tables`, `pg_indexes`, `pg_class`,
//! `pg_namespace`, `information_schema.tables` and `information_schema.columns`; the
//! progress view `pg_stat_progress_create_index` over every session's running index build
//! (also named `weft_stat_progress_create_index`); and the
//! relation size functions (`pg_relation_size`, `pg_table_size`, `pg_indexes_size`,
//! `pg_total_relation_size`).
//!
//! A view is not stored: a reference to one in FROM is planned as a `VALUES` list built
//! from the statement's catalog snapshot, so it shows exactly the relations the statement
//! sees. Only user relations (schema `public`) are listed; PostgreSQL's own catalogs are not
//! relations in weft. Names resolve as in PostgreSQL, where `pg_catalog` is searched before
//! `public`: `pg_class` is the view even if a table of that name exists (then reachable as
//! `public.pg_class`), and `information_schema` must be named.
//!
//! Columns weft has no counterpart for keep PostgreSQL's value for a plain user table
//! (`hasrules` false, `is_insertable_into` YES, ...). weft has one database and no roles:
//! they are named as PostgreSQL's defaults, [`DATABASE_NAME`] and [`OWNER_NAME`].

use sqlparser::ast::{self, TableAlias, TableFactor};
use weft_access::{Catalog, IndexMeta, TableMeta};
use weft_common::typmod::TypeModifier;
use weft_common::{DataType, Datum, Error, Result, SqlState};
use weft_exec::expr::{Expr, ScalarFunction};
use weft_storage::{BufferPool, ForkNumber, RelFileLocator, PAGE_SIZE};

use crate::deparse::quote_identifier;
use crate::planner::PlanContext;

/// What `current_database()` and the views' catalog columns name weft's one database.
pub const DATABASE_NAME: &str = "postgres";
/// The owner of every relation and schema, and `current_user`: weft has no roles.
pub const OWNER_NAME: &str = "postgres";

/// `pg_namespace.oid` of the schemas, as in PostgreSQL (`public` is 2200 in every cluster).
use crate::pg_catalog::PUBLIC_OID;
/// `pg_am.oid` of heap and btree; `pg_authid.oid` of the bootstrap superuser.
const HEAP_AM_OID: i64 = 2;
const BTREE_AM_OID: i64 = 403;
const OWNER_OID: i64 = 10;
/// `pg_database.oid` of the `postgres` database in every PostgreSQL 15 cluster.
pub(crate) const DATABASE_OID: i64 = 5;

/// The catalog view `name` (`[schema.]view`) stands for, if it names one.
pub(crate) fn lookup(name: &ast::ObjectName) -> Option<View> {
    let parts: Vec<String> = name.0.iter().map(|p| p.as_ident().map(crate::bind::ident_name)).collect::<Option<_>>()?;
    let (schema, view) = match parts.as_slice() {
        [view] => ("pg_catalog", view.as_str()),
        [schema, view] => (schema.as_str(), view.as_str()),
        _ => return None,
    };
    Some(match (schema, view) {
        ("pg_catalog", "pg_tables") => View::PgTables,
        ("pg_catalog", "pg_indexes") => View::PgIndexes,
        ("pg_catalog", "pg_class") => View::PgClass,
        ("pg_catalog", "pg_namespace") => View::PgNamespace,
        ("pg_catalog", "pg_am") => View::PgAm,
        ("pg_catalog", "pg_index") => View::PgIndex,
        ("pg_catalog", "pg_stat_progress_create_index") => View::PgStatProgressCreateIndex,
        ("pg_catalog", "weft_stat_progress_create_index") => View::WeftStatProgressCreateIndex,
        ("information_schema", "tables") => View::InformationSchemaTables,
        ("information_schema", "columns") => View::InformationSchemaColumns,
        ("pg_catalog", "pg_attribute") => View::PgAttribute,
        ("pg_catalog", "pg_attrdef") => View::PgAttrdef,
        ("pg_catalog", "pg_type") => View::PgType,
        ("pg_catalog", "pg_collation") => View::PgCollation,
        ("pg_catalog", "pg_constraint") => View::PgConstraint,
        ("pg_catalog", "pg_sequence") => View::PgSequence,
        ("pg_catalog", "pg_depend") => View::PgDepend,
        ("pg_catalog", "pg_database") => View::PgDatabase,
        ("pg_catalog", "pg_roles") => View::PgRoles,
        ("pg_catalog", name) => View::Empty(EMPTY_VIEWS.iter().copied().find(|v| *v == name)?),
        _ => return None,
    })
}

/// Is `name` qualified by a schema weft knows only through its views? Such a name that
/// is not a view gets PostgreSQL's error for a missing relation, not "schema does not exist".
pub(crate) fn undefined_system_relation(name: &ast::ObjectName) -> Option<Error> {
    let parts: Vec<String> = name.0.iter().map(|p| p.as_ident().map(crate::bind::ident_name)).collect::<Option<_>>()?;
    match parts.as_slice() {
        [schema, relation] if schema == "pg_catalog" || schema == "information_schema" => {
            Some(Error::new(SqlState::UNDEFINED_TABLE, format!("relation \"{schema}.{relation}\" does not exist")))
        }
        _ => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    PgTables,
    PgIndexes,
    PgClass,
    PgNamespace,
    PgAm,
    PgIndex,
    PgStatProgressCreateIndex,
    WeftStatProgressCreateIndex,
    InformationSchemaTables,
    InformationSchemaColumns,
    PgAttribute,
    PgAttrdef,
    PgType,
    PgCollation,
    PgConstraint,
    PgSequence,
    PgDepend,
    PgDatabase,
    PgRoles,
    /// A catalog of objects weft does not have (`pg_catalog::empty_view_columns`).
    Empty(&'static str),
}

/// The catalogs that are empty in weft.
const EMPTY_VIEWS: [&str; 9] = [
    "pg_inherits",
    "pg_partitioned_table",
    "pg_policy",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_trigger",
    "pg_rewrite",
];

impl View {
    /// The name a reference without an alias is qualified by.
    fn name(self) -> &'static str {
        match self {
            View::PgTables => "pg_tables",
            View::PgIndexes => "pg_indexes",
            View::PgClass => "pg_class",
            View::PgNamespace => "pg_namespace",
            View::PgAm => "pg_am",
            View::PgIndex => "pg_index",
            View::PgStatProgressCreateIndex => "pg_stat_progress_create_index",
            View::WeftStatProgressCreateIndex => "weft_stat_progress_create_index",
            View::InformationSchemaTables => "tables",
            View::InformationSchemaColumns => "columns",
            View::PgAttribute => "pg_attribute",
            View::PgAttrdef => "pg_attrdef",
            View::PgType => "pg_type",
            View::PgCollation => "pg_collation",
            View::PgConstraint => "pg_constraint",
            View::PgSequence => "pg_sequence",
            View::PgDepend => "pg_depend",
            View::PgDatabase => "pg_database",
            View::PgRoles => "pg_roles",
            View::Empty(name) => name,
        }
    }
}

/// The view as a derived table: `(VALUES ...) AS alias(columns)`, its rows read from the
/// statement's catalog.
pub(crate) fn derived_table(view: View, alias: Option<&TableAlias>, ctx: &PlanContext) -> Result<TableFactor> {
    let (columns, rows) = match view {
        View::PgTables => pg_tables(ctx.catalog),
        View::PgIndexes => pg_indexes(ctx.catalog),
        View::PgClass => pg_class(ctx.catalog, ctx.pool)?,
        View::PgNamespace => pg_namespace(),
        View::PgAm => pg_am(),
        View::PgIndex => pg_index(ctx.catalog),
        View::PgStatProgressCreateIndex | View::WeftStatProgressCreateIndex => pg_stat_progress_create_index(ctx.progress),
        View::InformationSchemaTables => information_schema_tables(ctx.catalog),
        View::InformationSchemaColumns => information_schema_columns(ctx.catalog),
        View::PgAttribute => crate::pg_catalog::pg_attribute(ctx.catalog),
        View::PgAttrdef => crate::pg_catalog::pg_attrdef(ctx.catalog),
        View::PgType => crate::pg_catalog::pg_type(),
        View::PgCollation => crate::pg_catalog::pg_collation(),
        View::PgConstraint => crate::pg_catalog::pg_constraint(ctx.catalog),
        View::PgSequence => crate::pg_catalog::pg_sequence(ctx.catalog),
        View::PgDepend => crate::pg_catalog::pg_depend(ctx.catalog),
        View::PgDatabase => crate::pg_catalog::pg_database(),
        View::PgRoles => crate::pg_catalog::pg_roles(),
        View::Empty(name) => (crate::pg_catalog::empty_view_columns(name).unwrap_or_default(), Vec::new()),
    };
    let query = values_query(&columns, &rows)?;
    let alias = alias.cloned().unwrap_or_else(|| TableAlias { explicit: false, at: None, name: ast::Ident::new(view.name()), columns: Vec::new() });
    Ok(TableFactor::Derived { lateral: false, subquery: Box::new(query), alias: Some(alias), sample: None })
}

/// A column of a view: its name and the SQL type its values are cast to.
pub(crate) type Column = (&'static str, &'static str);

/// One value, as an SQL literal (`None`: NULL).
pub(crate) type Value = Option<String>;

pub(crate) fn text(value: &str) -> Value {
    Some(format!("'{}'", value.replace('\'', "''")))
}

pub(crate) fn number(value: impl std::fmt::Display) -> Value {
    Some(value.to_string())
}

pub(crate) fn boolean(value: bool) -> Value {
    Some(value.to_string())
}

/// `SELECT * FROM (VALUES (v::type, ...), ...) v(columns)`, or the typed empty relation.
fn values_query(columns: &[Column], rows: &[Vec<Value>]) -> Result<ast::Query> {
    let cast = |value: &Value, sql_type: &str| format!("{}::{sql_type}", value.as_deref().unwrap_or("NULL"));
    let sql = if rows.is_empty() {
        let items: Vec<String> = columns.iter().map(|(name, sql_type)| format!("{} AS {name}", cast(&None, sql_type))).collect();
        format!("SELECT {} WHERE false", items.join(", "))
    } else {
        let tuples: Vec<String> = rows
            .iter()
            .map(|row| {
                let values: Vec<String> = row.iter().zip(columns).map(|(value, (_, sql_type))| cast(value, sql_type)).collect();
                format!("({})", values.join(", "))
            })
            .collect();
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        format!("SELECT * FROM (VALUES {}) v({})", tuples.join(", "), names.join(", "))
    };
    match crate::parse::parse_statements(&sql)?.pop() {
        Some(ast::Statement::Query(query)) => Ok(*query),
        _ => Err(Error::internal("a catalog view did not parse as a query")),
    }
}

fn pg_tables(catalog: &Catalog) -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("schemaname", "text"),
        ("tablename", "text"),
        ("tableowner", "text"),
        ("tablespace", "text"),
        ("hasindexes", "boolean"),
        ("hasrules", "boolean"),
        ("hastriggers", "boolean"),
        ("rowsecurity", "boolean"),
    ];
    let rows = catalog
        .tables
        .values()
        .map(|t| {
            // Foreign keys are triggers in PostgreSQL, on both tables of the reference.
            let triggers = !t.foreign_keys.is_empty() || catalog.tables.values().any(|o| o.foreign_keys.iter().any(|f| f.ref_table == t.name));
            vec![
                text("public"),
                text(&t.name),
                text(OWNER_NAME),
                None,
                boolean(catalog.indexes_of(&t.name).next().is_some()),
                boolean(false),
                boolean(triggers),
                boolean(false),
            ]
        })
        .collect();
    (columns, rows)
}

fn pg_indexes(catalog: &Catalog) -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![("schemaname", "text"), ("tablename", "text"), ("indexname", "text"), ("tablespace", "text"), ("indexdef", "text")];
    let rows = catalog
        .indexes
        .values()
        .filter_map(|index| {
            let table = catalog.tables.get(&index.table)?;
            Some(vec![text("public"), text(&table.name), text(&index.name), None, text(&index_create_statement(table, index, false))])
        })
        .collect();
    (columns, rows)
}

/// `pg_get_indexdef`: `CREATE UNIQUE INDEX t_pkey ON public.t USING btree (id)`
/// (`pretty`: expressions without their redundant parentheses).
pub(crate) fn index_create_statement(table: &TableMeta, index: &IndexMeta, pretty: bool) -> String {
    format!(
        "CREATE {}INDEX {} ON public.{} USING {}",
        if index.unique { "UNIQUE " } else { "" },
        quote_identifier(&index.name),
        quote_identifier(&table.name),
        crate::session::index_method_definition(table, index, pretty)
    )
}

fn pg_class(catalog: &Catalog, pool: &BufferPool) -> Result<(Vec<Column>, Vec<Vec<Value>>)> {
    let columns = vec![
        ("oid", "bigint"),
        ("relname", "text"),
        ("relnamespace", "bigint"),
        ("relowner", "bigint"),
        ("relam", "bigint"),
        ("relfilenode", "bigint"),
        ("relpages", "integer"),
        ("reltuples", "double precision"),
        ("relhasindex", "boolean"),
        ("relisshared", "boolean"),
        ("relpersistence", "text"),
        ("relkind", "text"),
        ("relnatts", "smallint"),
        ("relchecks", "smallint"),
        // The columns psql's `\d` reads, after those above (kept in their order).
        ("reltype", "bigint"),
        ("reloftype", "bigint"),
        ("reltablespace", "bigint"),
        ("reltoastrelid", "bigint"),
        ("relhasrules", "boolean"),
        ("relhastriggers", "boolean"),
        ("relhassubclass", "boolean"),
        ("relrowsecurity", "boolean"),
        ("relforcerowsecurity", "boolean"),
        ("relispopulated", "boolean"),
        ("relreplident", "text"),
        ("relispartition", "boolean"),
        ("reloptions", "text[]"),
        ("relpartbound", "text"),
    ];
    // weft has no TOAST tables, tablespaces, typed tables, rules, row security or
    // partitions; a relation's row type has no oid of its own.
    let rest = |triggers: bool, replident: &str, options: &[(&str, String)]| -> Vec<Value> {
        let options: Vec<String> = options.iter().map(|(name, value)| format!("{name}={value}")).collect();
        let mut row = vec![number(0), number(0), number(0), number(0), boolean(false), boolean(triggers)];
        row.extend([boolean(false), boolean(false), boolean(false), boolean(true), text(replident), boolean(false)]);
        row.push(if options.is_empty() { None } else { text(&format!("{{{}}}", options.join(","))) });
        row.push(None);
        row
    };
    let mut rows = Vec::new();
    for table in catalog.tables.values() {
        rows.push(vec![
            number(table.oid),
            text(&table.name),
            number(PUBLIC_OID),
            number(OWNER_OID),
            number(HEAP_AM_OID),
            number(table.rel_number),
            number(pool.nblocks(table.locator(), ForkNumber::Main)?),
            number(table.row_count),
            boolean(catalog.indexes_of(&table.name).next().is_some()),
            boolean(false),
            text(if table.temporary { "t" } else { "p" }),
            text("r"),
            number(table.columns.len()),
            number(table.checks.len()),
        ]);
        // Foreign keys are triggers in PostgreSQL, on both tables of the reference.
        let triggers = !table.foreign_keys.is_empty() || catalog.tables.values().any(|o| o.foreign_keys.iter().any(|f| f.ref_table == table.name));
        let options: Vec<(&str, String)> = table.parallel_workers.map(|n| ("parallel_workers", n.to_string())).into_iter().collect();
        rows.last_mut().expect("pushed").extend(rest(triggers, "d", &options));
    }
    for index in catalog.indexes.values() {
        let Some(table) = catalog.tables.get(&index.table) else { continue };
        rows.push(vec![
            number(index.oid),
            text(&index.name),
            number(PUBLIC_OID),
            number(OWNER_OID),
            number(BTREE_AM_OID),
            number(index.rel_number),
            number(pool.nblocks(index.locator(), ForkNumber::Main)?),
            number(table.row_count),
            boolean(false),
            boolean(false),
            text("p"),
            text("i"),
            number(index.columns.len() + index.include.len()),
            number(0),
        ]);
        rows.last_mut().expect("pushed").extend(rest(false, "n", &crate::session::index_options(index)));
    }
    // A sequence's state is in the catalog: no file, no access method.
    for sequence in catalog.sequences.values() {
        let mut row = vec![number(crate::pg_catalog::sequence_oid(sequence)), text(&sequence.name), number(PUBLIC_OID), number(OWNER_OID), number(0), number(0), number(0)];
        row.extend([number(1), boolean(false), boolean(false), text("p"), text("S"), number(3), number(0)]);
        row.extend(rest(false, "n", &[]));
        rows.push(row);
    }
    // A view has no storage: no file, no access method, no tuples.
    for view in catalog.views.values() {
        let mut row = vec![number(view.oid), text(&view.name), number(PUBLIC_OID), number(OWNER_OID), number(0), number(0), number(0)];
        let persistence = if view.temporary { "t" } else { "p" };
        row.extend([number(-1), boolean(false), boolean(false), text(persistence), text("v"), number(view.columns.len()), number(0)]);
        row.extend(rest(false, "n", &[]));
        rows.push(row);
    }
    Ok((columns, rows))
}

/// One row per session building an index, with PostgreSQL 15's columns. weft takes no
/// locks to wait for and has no partitions: those counters are 0, as PostgreSQL shows
/// them for a plain CREATE INDEX.
fn pg_stat_progress_create_index(registry: &crate::session::ProgressRegistry) -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("pid", "integer"),
        ("datid", "bigint"),
        ("datname", "text"),
        ("relid", "bigint"),
        ("index_relid", "bigint"),
        ("command", "text"),
        ("phase", "text"),
        ("lockers_total", "bigint"),
        ("lockers_done", "bigint"),
        ("current_locker_pid", "bigint"),
        ("blocks_total", "bigint"),
        ("blocks_done", "bigint"),
        ("tuples_total", "bigint"),
        ("tuples_done", "bigint"),
        ("partitions_total", "bigint"),
        ("partitions_done", "bigint"),
    ];
    let rows = registry
        .running()
        .into_iter()
        .map(|(pid, build)| {
            let now = build.progress.snapshot();
            let mut row = vec![
                number(pid),
                number(DATABASE_OID),
                text(DATABASE_NAME),
                number(build.table_oid),
                number(build.index_oid),
                text(now.command),
                text(now.phase.name()),
            ];
            row.extend([0, 0, 0, now.blocks_total, now.blocks_done, now.tuples_total, now.tuples_done, 0, 0].map(number));
            row
        })
        .collect();
    (columns, rows)
}

/// The access methods of PostgreSQL 15 (weft builds heap tables and B-trees only).
fn pg_am() -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![("oid", "bigint"), ("amname", "text"), ("amhandler", "text"), ("amtype", "text")];
    let methods = [
        (HEAP_AM_OID, "heap", "heap_tableam_handler", "t"),
        (BTREE_AM_OID, "btree", "bthandler", "i"),
        (405, "hash", "hashhandler", "i"),
        (783, "gist", "gisthandler", "i"),
        (2742, "gin", "ginhandler", "i"),
        (4000, "spgist", "spghandler", "i"),
        (3580, "brin", "brinhandler", "i"),
    ];
    let rows = methods.iter().map(|(oid, name, handler, kind)| vec![number(oid), text(name), text(handler), text(kind)]).collect();
    (columns, rows)
}

/// One row per index: the columns psql and most tools read.
fn pg_index(catalog: &Catalog) -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("indexrelid", "bigint"),
        ("indrelid", "bigint"),
        ("indnatts", "smallint"),
        ("indnkeyatts", "smallint"),
        ("indisunique", "boolean"),
        ("indisprimary", "boolean"),
        ("indisexclusion", "boolean"),
        ("indimmediate", "boolean"),
        ("indisclustered", "boolean"),
        ("indisvalid", "boolean"),
        ("indisready", "boolean"),
        ("indislive", "boolean"),
        ("indisreplident", "boolean"),
        ("indnullsnotdistinct", "boolean"),
        ("indcheckxmin", "boolean"),
        ("indpred", "text"),
    ];
    let mut rows = Vec::new();
    for index in catalog.indexes.values() {
        let Some(table) = catalog.tables.get(&index.table) else { continue };
        let primary = matches!(index.constraint, Some(weft_access::catalog::IndexConstraint::PrimaryKey));
        rows.push(vec![
            number(index.oid),
            number(table.oid),
            number(index.columns.len() + index.include.len()),
            number(index.columns.len()),
            boolean(index.unique),
            boolean(primary),
            boolean(false),
            boolean(true),
            boolean(index.clustered),
            boolean(true),
            boolean(true),
            boolean(true),
            boolean(false),
            boolean(false),
            boolean(false),
            index.predicate_display.as_deref().and_then(text),
        ]);
    }
    (columns, rows)
}

fn pg_namespace() -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![("oid", "bigint"), ("nspname", "text"), ("nspowner", "bigint")];
    let rows = crate::pg_catalog::NAMESPACES.iter().map(|(oid, name, owner)| vec![number(oid), text(name), number(owner)]).collect();
    (columns, rows)
}

fn information_schema_tables(catalog: &Catalog) -> (Vec<Column>, Vec<Vec<Value>>) {
    let columns = vec![
        ("table_catalog", "text"),
        ("table_schema", "text"),
        ("table_name", "text"),
        ("table_type", "text"),
        ("self_referencing_column_name", "text"),
        ("reference_generation", "text"),
        ("user_defined_type_catalog", "text"),
        ("user_defined_type_schema", "text"),
        ("user_defined_type_name", "text"),
        ("is_insertable_into", "text"),
        ("is_typed", "text"),
        ("commit_action", "text"),
    ];
    let rows = catalog
        .tables
        .values()
        .map(|t| {
            vec![text(DATABASE_NAME), text("public"), text(&t.name), text("BASE TABLE"), None, None, None, None, None, text("YES"), text("NO"), None]
        })
        .chain(catalog.views.values().map(|v| {
            vec![text(DATABASE_NAME), text("public"), text(&v.name), text("VIEW"), None, None, None, None, None, text("NO"), text("NO"), None]
        }))
        .collect();
    (columns, rows)
}

/// The 44 columns of PostgreSQL 15's `information_schema.columns`, in its order.
const INFORMATION_SCHEMA_COLUMNS: [Column; 44] = [
    ("table_catalog", "text"),
    ("table_schema", "text"),
    ("table_name", "text"),
    ("column_name", "text"),
    ("ordinal_position", "integer"),
    ("column_default", "text"),
    ("is_nullable", "text"),
    ("data_type", "text"),
    ("character_maximum_length", "integer"),
    ("character_octet_length", "integer"),
    ("numeric_precision", "integer"),
    ("numeric_precision_radix", "integer"),
    ("numeric_scale", "integer"),
    ("datetime_precision", "integer"),
    ("interval_type", "text"),
    ("interval_precision", "integer"),
    ("character_set_catalog", "text"),
    ("character_set_schema", "text"),
    ("character_set_name", "text"),
    ("collation_catalog", "text"),
    ("collation_schema", "text"),
    ("collation_name", "text"),
    ("domain_catalog", "text"),
    ("domain_schema", "text"),
    ("domain_name", "text"),
    ("udt_catalog", "text"),
    ("udt_schema", "text"),
    ("udt_name", "text"),
    ("scope_catalog", "text"),
    ("scope_schema", "text"),
    ("scope_name", "text"),
    ("maximum_cardinality", "integer"),
    ("dtd_identifier", "text"),
    ("is_self_referencing", "text"),
    ("is_identity", "text"),
    ("identity_generation", "text"),
    ("identity_start", "text"),
    ("identity_increment", "text"),
    ("identity_maximum", "text"),
    ("identity_minimum", "text"),
    ("identity_cycle", "text"),
    ("is_generated", "text"),
    ("generation_expression", "text"),
    ("is_updatable", "text"),
];

fn information_schema_columns(catalog: &Catalog) -> (Vec<Column>, Vec<Vec<Value>>) {
    let mut rows = Vec::new();
    for table in catalog.tables.values() {
        for (i, column) in table.columns.iter().enumerate() {
            let facts = TypeFacts::of(column.data_type, column.type_modifier);
            let ordinal = i + 1;
            let default = column.default.as_deref().map(|d| default_text(d, column.type_modifier));
            let mut row = vec![
                text(DATABASE_NAME),
                text("public"),
                text(&table.name),
                text(&column.name),
                number(ordinal),
                default.as_deref().and_then(text),
                text(if column.not_null { "NO" } else { "YES" }),
                text(facts.data_type),
                facts.character_maximum_length.and_then(number),
                facts.character_octet_length.and_then(number),
                facts.numeric_precision.and_then(number),
                facts.numeric_precision_radix.and_then(number),
                facts.numeric_scale.and_then(number),
                facts.datetime_precision.and_then(number),
            ];
            // interval_type .. domain_name: nothing for weft's types.
            row.extend(std::iter::repeat_n(None, 11));
            row.extend([text(DATABASE_NAME), text("pg_catalog"), text(facts.udt_name)]);
            // scope_* and maximum_cardinality.
            row.extend(std::iter::repeat_n(None, 4));
            row.extend([number(ordinal), text("NO"), text("NO")]);
            // identity_generation .. identity_minimum.
            row.extend(std::iter::repeat_n(None, 5));
            row.extend([text("NO"), text("NEVER"), None, text("YES")]);
            debug_assert_eq!(row.len(), INFORMATION_SCHEMA_COLUMNS.len());
            rows.push(row);
        }
    }
    (INFORMATION_SCHEMA_COLUMNS.to_vec(), rows)
}

/// A column default as PostgreSQL prints it (`pg_get_expr`, psql's `\d`): bound again and
/// deparsed, so `'a'` reads `'a'::text` (`'a'::character varying` in a varchar column,
/// where PostgreSQL stores it coerced); the text as stored if it does not bind. Binding
/// folds constants: `'a' || 'b'` reads `'ab'::text`, where PostgreSQL keeps the expression.
pub(crate) fn default_text(stored: &str, modifier: Option<TypeModifier>) -> String {
    let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(stored)
        .and_then(|mut parser| parser.parse_expr());
    let Ok(parsed) = parsed else { return stored.to_string() };
    // A call without arguments (`now()`, `CURRENT_DATE`) is folded by binding; PostgreSQL
    // prints the call.
    if let ast::Expr::Function(call) = &parsed {
        match &call.args {
            ast::FunctionArguments::None => return call.name.to_string().to_uppercase(),
            ast::FunctionArguments::List(list) if list.args.is_empty() => return format!("{}()", call.name.to_string().to_lowercase()),
            _ => {}
        }
    }
    let scope = crate::bind::Scope::default();
    match crate::bind::Binder::new(&scope).bind(&parsed) {
        // A sequence is named through a regclass constant in PostgreSQL.
        Ok(Expr::Function { func: ScalarFunction::NextVal, args, .. }) => match args.as_slice() {
            [Expr::Literal { value: Datum::Text(sequence), .. }] => format!("nextval('{}'::regclass)", sequence.replace('\'', "''")),
            _ => stored.to_string(),
        },
        Ok(bound) => {
            let text = crate::deparse::deparse(&bound, &[]);
            let character_type = match modifier {
                Some(TypeModifier::Varchar { .. }) => "character varying",
                Some(TypeModifier::Char { .. }) => "bpchar",
                _ => return text,
            };
            match text.strip_suffix("::text") {
                Some(literal) if literal.starts_with('\'') && literal.ends_with('\'') => format!("{literal}::{character_type}"),
                _ => text,
            }
        }
        Err(_) => stored.to_string(),
    }
}

/// What `information_schema.columns` says of a column's type.
#[derive(Default)]
struct TypeFacts {
    data_type: &'static str,
    udt_name: &'static str,
    character_maximum_length: Option<u32>,
    character_octet_length: Option<u32>,
    numeric_precision: Option<u32>,
    numeric_precision_radix: Option<u32>,
    numeric_scale: Option<u32>,
    datetime_precision: Option<u32>,
}

impl TypeFacts {
    fn of(data_type: DataType, modifier: Option<TypeModifier>) -> TypeFacts {
        // PostgreSQL's largest field, in bytes, for a character type without a length.
        const UNBOUNDED_OCTETS: u32 = 1 << 30;
        let binary = |bits: u32| TypeFacts {
            numeric_precision: Some(bits),
            numeric_precision_radix: Some(2),
            numeric_scale: Some(0),
            ..TypeFacts::default()
        };
        let datetime = || TypeFacts { datetime_precision: Some(if data_type == DataType::Date { 0 } else { 6 }), ..TypeFacts::default() };
        let facts = match (data_type, modifier) {
            (_, Some(TypeModifier::SmallInt)) => TypeFacts { data_type: "smallint", udt_name: "int2", ..binary(16) },
            (DataType::Int4, _) => TypeFacts { data_type: "integer", udt_name: "int4", ..binary(32) },
            (DataType::Int8, _) => TypeFacts { data_type: "bigint", udt_name: "int8", ..binary(64) },
            (DataType::Float8, _) => TypeFacts { numeric_scale: None, data_type: "double precision", udt_name: "float8", ..binary(53) },
            (DataType::Numeric, Some(TypeModifier::Numeric { precision, scale })) => TypeFacts {
                numeric_precision: Some(u32::from(precision)),
                numeric_precision_radix: Some(10),
                numeric_scale: u32::try_from(scale).ok(),
                ..TypeFacts::default()
            },
            (DataType::Numeric, _) => TypeFacts { numeric_precision_radix: Some(10), ..TypeFacts::default() },
            (DataType::Text, Some(TypeModifier::Varchar { max_chars })) => TypeFacts {
                data_type: "character varying",
                udt_name: "varchar",
                character_maximum_length: max_chars,
                character_octet_length: Some(max_chars.map_or(UNBOUNDED_OCTETS, |n| n * 4)),
                ..TypeFacts::default()
            },
            (DataType::Text, Some(TypeModifier::Char { max_chars })) => TypeFacts {
                data_type: "character",
                udt_name: "bpchar",
                character_maximum_length: max_chars,
                character_octet_length: Some(max_chars.map_or(UNBOUNDED_OCTETS, |n| n * 4)),
                ..TypeFacts::default()
            },
            (DataType::Text, _) => TypeFacts { character_octet_length: Some(UNBOUNDED_OCTETS), ..TypeFacts::default() },
            (DataType::Bool, _) => TypeFacts::default(),
            (DataType::Array(_), _) => TypeFacts { data_type: "ARRAY", udt_name: crate::bind::pg_type_short_name(data_type), ..TypeFacts::default() },
            (DataType::Date | DataType::Time | DataType::Timestamp | DataType::TimestampTz | DataType::Interval, _) => datetime(),
        };
        TypeFacts {
            data_type: if facts.data_type.is_empty() { data_type.name() } else { facts.data_type },
            udt_name: if facts.udt_name.is_empty() { crate::bind::pg_type_short_name(data_type) } else { facts.udt_name },
            ..facts
        }
    }
}

/// The value of a function without arguments that describes the session:
/// `current_database()`, `current_user`, `current_schema()`.
pub(crate) fn session_value(name: &str) -> Option<&'static str> {
    Some(match name {
        "current_database" => DATABASE_NAME,
        "current_user" | "session_user" | "user" | "current_role" => OWNER_NAME,
        "current_schema" => "public",
        _ => return None,
    })
}

/// The value of psql's catalog functions of one oid, for any relation: `pg_get_userbyid`
/// (weft's one role) and `pg_table_is_visible` (every relation is in `public`).
pub(crate) fn oid_function_value(name: &str) -> Option<Datum> {
    Some(match name {
        "pg_table_is_visible" => Datum::Bool(true),
        _ => return None,
    })
}

/// Is `fork` the main fork? The others (`fsm`, `vm`, `init`) are valid names but empty in
/// weft.
pub(crate) fn is_main_fork(fork: &str) -> Result<bool> {
    match fork {
        "main" => Ok(true),
        "fsm" | "vm" | "init" => Ok(false),
        _ => Err(Error::new(SqlState::INVALID_PARAMETER_VALUE, "invalid fork name")
            .with_hint("Valid fork names are \"main\", \"fsm\", \"vm\", and \"init\".")),
    }
}

/// The relation size functions of PostgreSQL (`pg_relation_size` and friends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SizeFunction {
    /// The main fork of a table or an index.
    Relation,
    /// A table without its indexes (weft has no TOAST, free space or visibility map forks).
    Table,
    /// The indexes of a table.
    Indexes,
    /// A table with its indexes.
    TotalRelation,
}

impl SizeFunction {
    pub(crate) fn by_name(name: &str) -> Option<SizeFunction> {
        Some(match name {
            "pg_relation_size" => SizeFunction::Relation,
            "pg_table_size" => SizeFunction::Table,
            "pg_indexes_size" => SizeFunction::Indexes,
            "pg_total_relation_size" => SizeFunction::TotalRelation,
            _ => return None,
        })
    }

    /// Bytes of the relation named `name` (as `regclass` input reads it: `t`, `public.t`,
    /// `"T"`), or PostgreSQL's error for a relation that does not exist.
    pub(crate) fn bytes_by_name(self, name: &str, catalog: &Catalog, pool: &BufferPool) -> Result<i64> {
        let (schema, relation) = regclass_name(name)?;
        let found = match schema.as_deref() {
            None | Some("public") => self.bytes(&relation, catalog, pool)?,
            // weft's own catalogs are not relations.
            _ => None,
        };
        found.ok_or_else(|| {
            let qualified = schema.map_or(relation.clone(), |s| format!("{s}.{relation}"));
            Error::new(SqlState::UNDEFINED_TABLE, format!("relation \"{qualified}\" does not exist"))
        })
    }

    /// Every relation's size by oid, for a call whose argument is not a constant (NULL for
    /// an oid that is no relation, as in PostgreSQL).
    pub(crate) fn bytes_by_oid(self, catalog: &Catalog, pool: &BufferPool) -> Result<Vec<(i64, i64)>> {
        let names = catalog.tables.values().map(|t| (i64::from(t.oid), &t.name)).chain(catalog.indexes.values().map(|i| (i64::from(i.oid), &i.name)));
        let sequences = catalog.sequences.values().map(|s| (crate::pg_catalog::sequence_oid(s), &s.name));
        let mut sizes = Vec::new();
        for (oid, name) in names.chain(sequences) {
            if let Some(bytes) = self.bytes(name, catalog, pool)? {
                sizes.push((oid, bytes));
            }
        }
        Ok(sizes)
    }

    /// Bytes of the table or index `name`, or `None` if there is none of that name.
    fn bytes(self, name: &str, catalog: &Catalog, pool: &BufferPool) -> Result<Option<i64>> {
        let main = |rel: RelFileLocator| -> Result<i64> { Ok(i64::from(pool.nblocks(rel, ForkNumber::Main)?) * PAGE_SIZE as i64) };
        let indexes = |table: &str| -> Result<i64> { catalog.indexes_of(table).map(|i| main(i.locator())).sum() };
        if let Some(table) = catalog.tables.get(name) {
            return Ok(Some(match self {
                SizeFunction::Relation | SizeFunction::Table => main(table.locator())?,
                SizeFunction::Indexes => indexes(&table.name)?,
                SizeFunction::TotalRelation => main(table.locator())? + indexes(&table.name)?,
            }));
        }
        if let Some(index) = catalog.indexes.get(name) {
            // An index has no indexes of its own.
            return Ok(Some(if self == SizeFunction::Indexes { 0 } else { main(index.locator())? }));
        }
        // A sequence's state is kept in the catalog: it has no file.
        if catalog.sequences.contains_key(name) {
            return Ok(Some(0));
        }
        Ok(None)
    }
}

/// A relation name as `regclass` input reads it: `[[database.]schema.]name`, each part
/// folded to lower case unless double-quoted. The schema is `public`, `pg_catalog` or absent.
pub(crate) fn regclass_name(input: &str) -> Result<(Option<String>, String)> {
    let invalid = || Error::new(SqlState::INVALID_NAME, "invalid name syntax");
    let mut parts = Vec::new();
    let mut rest = input.trim();
    loop {
        let part;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                if c != '"' {
                    value.push(c);
                } else if quoted[i + 1..].starts_with('"') {
                    value.push('"');
                    chars.next();
                } else {
                    end = Some(i + 1);
                    break;
                }
            }
            let end = end.ok_or_else(invalid)?;
            part = value;
            rest = quoted[end..].trim_start();
        } else {
            let end = rest.find('.').unwrap_or(rest.len());
            let word = rest[..end].trim();
            if word.is_empty() {
                return Err(invalid());
            }
            part = word.to_lowercase();
            rest = &rest[end..];
        }
        parts.push(part);
        match rest.strip_prefix('.') {
            Some(after) => rest = after.trim_start(),
            None if rest.is_empty() => break,
            None => return Err(invalid()),
        }
    }
    let (schema, name) = match parts.as_slice() {
        [name] => return Ok((None, name.clone())),
        [schema, name] => (schema, name),
        [database, schema, name] if database == DATABASE_NAME => (schema, name),
        [_, _, _] => {
            return Err(Error::new(SqlState::FEATURE_NOT_SUPPORTED, format!("cross-database references are not implemented: {input}")))
        }
        _ => return Err(Error::new(SqlState::SYNTAX_ERROR, format!("improper relation name (too many dotted names): {input}"))),
    };
    if schema != "public" && schema != "pg_catalog" {
        return Err(Error::new(SqlState::INVALID_SCHEMA_NAME, format!("schema \"{schema}\" does not exist")));
    }
    Ok((Some(schema.clone()), name.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regclass_names() {
        let name = |input: &str| regclass_name(input).map_err(|e| e.message.clone());
        assert_eq!(name("T"), Ok((None, "t".to_string())));
        assert_eq!(name(" public . Tab "), Ok((Some("public".to_string()), "tab".to_string())));
        assert_eq!(name("\"My \"\"T\"\"\""), Ok((None, "My \"T\"".to_string())));
        assert_eq!(name("other.t"), Err("schema \"other\" does not exist".to_string()));
        assert_eq!(name("a.b.c.d"), Err("improper relation name (too many dotted names): a.b.c.d".to_string()));
        assert_eq!(name("\"open"), Err("invalid name syntax".to_string()));
        assert_eq!(name(""), Err("invalid name syntax".to_string()));
    }

    /// A build published by one session is a row of the view in every session, with the
    /// builder's pid and the relations' oids, and leaves the view when its guard drops.
    #[test]
    fn progress_view_shows_every_sessions_build() {
        use weft_common::progress::{CreateIndexPhase, IndexBuildProgress};
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Database::open(dir.path(), &[]).unwrap();
        let builder = db.session();
        let mut watcher = db.session();
        assert_ne!(builder.backend_pid(), watcher.backend_pid());
        let query = "SELECT pid, datname, relid, index_relid, command, phase, blocks_total, blocks_done, tuples_total, \
                     lockers_total FROM pg_stat_progress_create_index";
        assert!(watcher.execute(query).unwrap().rows.is_empty());

        let progress = std::sync::Arc::new(IndexBuildProgress::new("CREATE INDEX", "i", "t"));
        progress.set_phase(CreateIndexPhase::ScanningTable, 40, 0);
        progress.add_blocks_done(15);
        let guard = builder.progress.publish(progress.clone(), 16_400, 16_403);
        let rows = watcher.execute(query).unwrap().rows;
        let expected = vec![
            Datum::Int4(builder.backend_pid()),
            Datum::Text("postgres".into()),
            Datum::Int8(16_400),
            Datum::Int8(16_403),
            Datum::Text("CREATE INDEX".into()),
            Datum::Text("building index: scanning table".into()),
            Datum::Int8(40),
            Datum::Int8(15),
            Datum::Int8(0),
            Datum::Int8(0),
        ];
        assert_eq!(rows, vec![expected]);
        let pid = watcher.execute("SELECT pid FROM weft_stat_progress_create_index WHERE pid <> pg_backend_pid()").unwrap().rows;
        assert_eq!(pid, vec![vec![Datum::Int4(builder.backend_pid())]]);
        drop(guard);
        assert!(watcher.execute(query).unwrap().rows.is_empty());
    }
}
