//! The catalog views (`pg_tables`, `pg_indexes`, `pg_class`, `pg_namespace`,
//! `information_schema.tables` / `.columns`), the relation size functions and
//! `pg_size_pretty`, compared with PostgreSQL 15 over the same schema: every row of a view
//! weft fills as PostgreSQL does, errors by message and SQLSTATE. Sizes differ between the
//! two systems (other page layouts), so they are compared through what must hold in both.

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE items (id int PRIMARY KEY, code text UNIQUE, price numeric(8,2) DEFAULT 9.5 NOT NULL, qty bigint, \
     ratio float8, label varchar(12) DEFAULT 'none', tag char(3), flag boolean DEFAULT true, small smallint, \
     made date, at timestamp, atz timestamptz, span interval, n numeric, \"Mixed Case\" int)",
    "INSERT INTO items SELECT i, md5(i::text), i / 4.0, i * 1000, i / 3.0, 'l' || i, 'abc', i % 2 = 0, i % 100, \
     date '2024-01-01' + i, timestamp '2024-01-01 00:00' + i * interval '1 hour', NULL, NULL, i, i \
     FROM generate_series(1, 3000) i",
    "CREATE INDEX items_qty_desc ON items (qty DESC NULLS LAST) INCLUDE (ratio) WITH (fillfactor = 70) WHERE qty > 10",
    "CREATE INDEX items_lower ON items (lower(code), id)",
    "CREATE UNIQUE INDEX \"Items Label\" ON items (label, \"Mixed Case\" NULLS FIRST)",
    "CREATE TABLE empty (a int, b text DEFAULT 'x', c timestamptz DEFAULT now(), d int DEFAULT -1, e float8 DEFAULT 1.5)",
    "CREATE TABLE refs (id int PRIMARY KEY, item int REFERENCES items (id))",
    "CREATE TABLE pg_class (shadowed int)",
];

const QUERIES: &[&str] = &[
    "SELECT * FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname",
    "SELECT indexname, indexdef FROM pg_catalog.pg_indexes i WHERE i.tablename = 'items' ORDER BY 1",
    "SELECT * FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
    "SELECT tablename, hasindexes, hastriggers FROM pg_catalog.pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
    "SELECT * FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    "SELECT * FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
    "SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns c \
     WHERE c.table_name = 'items' AND c.data_type LIKE 'c%' ORDER BY ordinal_position",
    "SELECT table_name, count(*) FROM information_schema.columns WHERE table_schema = 'public' GROUP BY table_name ORDER BY 1",
    "SELECT relname, relkind, relnatts, relhasindex, relpersistence, relam = 403 AS is_btree FROM pg_class \
     WHERE relnamespace = 2200 ORDER BY relname",
    "SELECT c.relname, n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND c.relnamespace = 2200 ORDER BY 1",
    "SELECT oid, nspname FROM pg_namespace WHERE nspname IN ('public', 'pg_catalog', 'pg_toast') ORDER BY oid",
    "SELECT oid, amname, amtype FROM pg_catalog.pg_am ORDER BY oid",
    "SELECT c.relname, t.relname, i.indnatts, i.indnkeyatts, i.indisunique, i.indisprimary, i.indisvalid, am.amname      FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid JOIN pg_catalog.pg_class t ON t.oid = i.indrelid      JOIN pg_catalog.pg_am am ON am.oid = c.relam WHERE t.relnamespace = 2200 ORDER BY 1",
    "SELECT c.relname, pg_catalog.pg_get_userbyid(c.relowner), pg_catalog.pg_table_is_visible(c.oid) FROM pg_catalog.pg_class c      WHERE c.relname OPERATOR(pg_catalog.~) '^(it|em)' COLLATE pg_catalog.default AND c.relnamespace = 2200 ORDER BY 1",
    "SELECT pg_get_userbyid(NULL), pg_table_is_visible(NULL), 2 OPERATOR(pg_catalog.+) 3, 'ab' OPERATOR(pg_catalog.~~) 'a%'",
    "SELECT * FROM public.pg_class",
    "SELECT current_database(), current_user, current_schema()",
    // Sizes: what holds in both systems.
    "SELECT pg_relation_size('items') > 8192, pg_relation_size('empty'), pg_relation_size('EMPTY'), \
     pg_relation_size('public.empty'), pg_relation_size('empty', 'fsm'), pg_relation_size('empty', 'main'), \
     pg_relation_size('empty'::regclass), pg_relation_size(NULL)",
    "SELECT pg_total_relation_size('items') = pg_table_size('items') + pg_indexes_size('items'), \
     pg_indexes_size('items') > pg_relation_size('items_lower'), pg_indexes_size('items_lower'), \
     pg_relation_size('\"Items Label\"') = pg_table_size('\"Items Label\"')",
    "SELECT relname, pg_relation_size(oid) > 0, pg_total_relation_size(oid) >= pg_relation_size(oid) FROM pg_class \
     WHERE relnamespace = 2200 AND relkind IN ('r', 'i') ORDER BY 1",
    "SELECT pg_relation_size(0), pg_total_relation_size(NULL::int)",
    "SELECT pg_size_pretty(x) FROM (VALUES (0::bigint), (10239), (10240), (-10240), (10485247), (10485759), \
     (123456789), (1234567890123), (9223372036854775807), (-9223372036854775807), (NULL)) v(x)",
    "SELECT pg_size_pretty(1.5), pg_size_pretty(10239.6), pg_size_pretty(10240.9), pg_size_pretty(-20479.5 * 1024), \
     pg_size_pretty(123456789012345678901234567890), pg_size_pretty(2048 * 1024::bigint), pg_size_pretty(sum(x)) \
     FROM (VALUES (10000000000), (20000000000)) v(x)",
    "SELECT pg_size_pretty(pg_relation_size('empty'))",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT pg_relation_size('nosuch')",
    "SELECT pg_relation_size('public.nosuch')",
    "SELECT pg_relation_size('pg_catalog.nosuch')",
    "SELECT pg_relation_size('other.items')",
    "SELECT pg_relation_size('a.b.c.d')",
    "SELECT pg_relation_size('\"open')",
    "SELECT pg_relation_size('')",
    "SELECT pg_relation_size('items', 'bogus')",
    "SELECT pg_relation_size(1.5)",
    "SELECT pg_table_size('items', 'main')",
    "SELECT * FROM pg_catalog.nosuch",
    "SELECT * FROM information_schema.nosuch",
    "SELECT nosuch FROM pg_indexes",
];

#[test]
fn catalog_views_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}

/// A view shows the catalog its statement sees: DDL inside a transaction block is visible
/// to the block at once, and gone again after ROLLBACK.
#[test]
fn catalog_views_follow_the_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = weft_sql::Database::open(dir.path(), &[]).unwrap();
    let mut session = db.session();
    let names = |session: &mut weft_sql::Session| -> Vec<String> {
        oracle::lines(&session.execute("SELECT indexname FROM pg_indexes ORDER BY 1").unwrap())
    };
    session.execute("CREATE TABLE t (a int)").unwrap();
    session.execute("BEGIN").unwrap();
    session.execute("CREATE INDEX t_a ON t (a)").unwrap();
    assert_eq!(names(&mut session), ["t_a"]);
    assert_eq!(names(&mut db.session()), Vec::<String>::new(), "another session sees the uncommitted index");
    session.execute("ROLLBACK").unwrap();
    assert_eq!(names(&mut session), Vec::<String>::new());
    session.execute("INSERT INTO t SELECT generate_series(1, 5000)").unwrap();
    let size = |session: &mut weft_sql::Session, sql: &str| -> i64 { oracle::lines(&session.execute(sql).unwrap())[0].parse().unwrap() };
    let before = size(&mut session, "SELECT pg_relation_size('t')");
    assert!(before >= 5000 * 4, "{before} bytes for 5000 rows");
    session.execute("TRUNCATE t").unwrap();
    assert_eq!(size(&mut session, "SELECT pg_relation_size('t')"), 0);
}
