//! Views compared with PostgreSQL 15, statement by statement: each statement succeeds in
//! both with the same rows, or fails in both with the same message, detail and hint.
//! Covers views over tables, views, joins, aggregates, CTEs and set operations; column
//! lists and aliases; an index reached through a view; CREATE OR REPLACE's rules; DROP's
//! dependency checks and CASCADE; and the wrong-object-type errors of DROP.

use super::oracle;

use oracle::compare_script;

const SETUP: &[&str] = &[
    "CREATE TABLE vt (a int PRIMARY KEY, b text, c float8)",
    "INSERT INTO vt SELECT g, 'b' || (g % 7), g / 3.0 FROM generate_series(1, 500) g",
    "CREATE TABLE vu (k int, name text)",
    "INSERT INTO vu SELECT g % 40, 'n' || g FROM generate_series(1, 120) g",
    "INSERT INTO vu VALUES (NULL, 'none')",
];

const SCRIPT: &[&str] = &[
    "CREATE VIEW v_big AS SELECT a, b, c FROM vt WHERE a > 450",
    "SELECT * FROM v_big ORDER BY a",
    "SELECT count(*), min(b), max(c) FROM v_big",
    "SELECT x.a FROM v_big x WHERE x.b = 'b3' ORDER BY 1 DESC",
    "SELECT * FROM v_big AS r (p, q) WHERE p < 455 ORDER BY p",
    "SELECT * FROM v_big WHERE a = 470",
    "CREATE VIEW v_names (key, label) AS SELECT k, name FROM vu WHERE k IS NOT NULL",
    "SELECT key, count(*) FROM v_names GROUP BY key ORDER BY key LIMIT 5",
    "SELECT v.a, n.label FROM v_big v JOIN v_names n ON n.key = v.a - 440 ORDER BY v.a, n.label",
    "SELECT a FROM v_big WHERE a NOT IN (SELECT key FROM v_names) ORDER BY a LIMIT 4",
    "SELECT a FROM vt WHERE EXISTS (SELECT 1 FROM v_names WHERE key = vt.a) ORDER BY a DESC LIMIT 3",
    "CREATE VIEW v_agg AS SELECT b, count(*) AS n, sum(c) AS total FROM vt GROUP BY b",
    "SELECT * FROM v_agg ORDER BY b",
    "CREATE VIEW v_nested AS SELECT b, n FROM v_agg WHERE n > 71",
    "SELECT * FROM v_nested ORDER BY b",
    "CREATE VIEW v_cte AS WITH w AS (SELECT a FROM vt WHERE a % 100 = 0) SELECT a, a * 2 AS twice FROM w",
    "SELECT * FROM v_cte ORDER BY a",
    "CREATE VIEW v_union AS SELECT a AS x FROM vt WHERE a < 3 UNION ALL SELECT k FROM vu WHERE k > 38",
    "SELECT * FROM v_union ORDER BY x",
    "CREATE VIEW v_sorted AS SELECT a, b FROM vt ORDER BY c DESC LIMIT 3",
    "SELECT * FROM v_sorted",
    "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    "SELECT relname, relkind, relpersistence FROM pg_class WHERE relname ~ '^v(_|t|u)' ORDER BY relname",
    // Errors of creation.
    "CREATE VIEW v_big AS SELECT 1",
    "CREATE VIEW vt AS SELECT 1",
    "CREATE VIEW v_bad (p, q) AS SELECT 1",
    "CREATE VIEW v_dup (p, p) AS SELECT 1, 2",
    "CREATE VIEW v_dup AS SELECT 1 AS p, 2 AS p",
    "CREATE VIEW v_none AS SELECT * FROM nope",
    "CREATE VIEW IF NOT EXISTS v_big AS SELECT 1",
    // CREATE OR REPLACE keeps the columns' names and types, and may add columns.
    "CREATE OR REPLACE VIEW v_big AS SELECT a, b, c, a + 1 AS d FROM vt WHERE a > 495",
    "SELECT * FROM v_big ORDER BY a",
    "CREATE OR REPLACE VIEW v_big AS SELECT a, b FROM vt",
    "CREATE OR REPLACE VIEW v_big AS SELECT a, b AS bb, c, a + 1 AS d FROM vt",
    "CREATE OR REPLACE VIEW v_big AS SELECT a, b, c, 'x'::text AS d FROM vt",
    "CREATE OR REPLACE VIEW v_fresh AS SELECT 42 AS answer",
    // `*` is the columns at creation: one added later is not in the view.
    "CREATE TABLE vw (p int, q text)",
    "INSERT INTO vw VALUES (1, 'one'), (2, 'two')",
    "CREATE VIEW v_star AS SELECT * FROM vw",
    "ALTER TABLE vw ADD COLUMN r int DEFAULT 7",
    "SELECT * FROM v_star ORDER BY p",
    "SELECT s.* FROM v_star s WHERE q = 'two'",
    "DROP TABLE vw CASCADE",
    "SELECT * FROM v_fresh",
    // DROP and its dependencies.
    "DROP TABLE v_big",
    "DROP VIEW vt",
    "DROP VIEW nope",
    "DROP VIEW IF EXISTS nope",
    "DROP VIEW v_agg",
    "DROP TABLE vu",
    "DROP VIEW v_nested",
    "DROP VIEW v_agg",
    "SELECT * FROM v_agg",
    "DROP VIEW v_fresh, v_sorted",
    "DROP VIEW v_names CASCADE",
    "DROP VIEW v_big",
    "DROP TABLE vt CASCADE",
    "SELECT count(*) FROM pg_class WHERE relkind = 'v' AND relname ~ '^v_'",
    "DROP TABLE vu",
];

#[test]
fn views_match_postgres() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    compare_script(&pg, &mut session, SCRIPT, true);
}

/// A view or derived table that only filters and projects one table is read as that
/// table (PostgreSQL's subquery pull-up): a condition above it reaches the table's index.
#[test]
fn simple_views_are_pulled_up() {
    const QUERIES: &[&str] = &[
        "SELECT * FROM v_filtered WHERE a = 470",
        "SELECT a, twice FROM v_filtered WHERE a BETWEEN 470 AND 475 ORDER BY a DESC",
        "SELECT count(*), sum(twice) FROM v_filtered WHERE a < 460",
        "SELECT b, count(*) FROM v_filtered WHERE a > 490 GROUP BY b ORDER BY b",
        "SELECT * FROM (SELECT a, b FROM vt WHERE b = 'b3') s WHERE a < 30 ORDER BY a",
        "SELECT * FROM (SELECT a AS x, c * 2 AS y FROM (SELECT a, c FROM vt WHERE a % 2 = 0) i) o WHERE x = 42 OR y < 3 ORDER BY x",
        "SELECT x FROM (SELECT a + 1 AS x FROM vt) s WHERE x = 10",
        "SELECT * FROM (SELECT a, random() < 2 AS r FROM vt) s WHERE a = 3",
        "SELECT * FROM (SELECT a, b FROM vt ORDER BY a LIMIT 5) s WHERE a > 2",
        "SELECT * FROM (SELECT DISTINCT b FROM vt) s WHERE b > 'b4' ORDER BY b",
        "SELECT a, (SELECT count(*) FROM vu WHERE k = s.a) FROM (SELECT a FROM vt WHERE a < 5) s ORDER BY a",
    ];
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let view = "CREATE VIEW v_filtered AS SELECT a, b, a * 2 AS twice FROM vt WHERE a > 450";
    pg.query(view).unwrap();
    session.execute(view).unwrap();
    let mismatches = oracle::query_mismatches(&pg, &mut session, QUERIES);
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    let plan = oracle::lines(&session.execute("EXPLAIN SELECT * FROM v_filtered WHERE a = 470").unwrap()).join("\n");
    assert!(plan.contains("Index Scan using vt_pkey on vt") && !plan.contains("Subquery Scan"), "{plan}");
}

/// A view lives in the catalog: it is there after reopening, and a view is not a table to
/// write into.
#[test]
fn views_survive_reopening_and_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = weft_sql::Database::open(dir.path(), &[]).unwrap();
        let mut session = db.session();
        for sql in ["CREATE TABLE t (a int)", "INSERT INTO t VALUES (1), (2), (3)", "CREATE VIEW odd AS SELECT a FROM t WHERE a % 2 = 1"] {
            session.execute(sql).unwrap();
        }
        for sql in ["INSERT INTO odd VALUES (5)", "UPDATE odd SET a = 0", "DELETE FROM odd", "CREATE INDEX ON odd (a)", "TRUNCATE odd"] {
            let error = session.execute(sql).unwrap_err();
            assert_eq!((error.sqlstate.0, error.message.as_str()), ("42809", "\"odd\" is a view"), "{sql}");
        }
    }
    let db = weft_sql::Database::open(dir.path(), &[]).unwrap();
    let mut session = db.session();
    let result = session.execute("SELECT a FROM odd ORDER BY a").unwrap();
    assert_eq!(oracle::lines(&result), ["1", "3"]);
}
