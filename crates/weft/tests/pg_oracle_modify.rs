//! DELETE and UPDATE compared with PostgreSQL 15: random statements over a table with a
//! primary key, a unique index and plain indexes, the whole table compared after each
//! one, failing statements (unique and NOT NULL violations, bad input) failing alike and
//! changing nothing; index and index-only queries after the changes agree, the indexes
//! pass the checker, and everything survives reopening the data directory.

use super::oracle;

use oracle::{assert_same_error, compare_script, weft_lines, Rng};
use weft::postgres::PgCluster;
use weft_sql::{Database, Session};

const SETUP: &[&str] = &[
    "CREATE TABLE m (id int4 PRIMARY KEY, a int4, b int8 NOT NULL, c text, d float8)",
    "INSERT INTO m SELECT i, hashint4(i) % 50, i * 10, CASE WHEN i % 7 = 0 THEN NULL ELSE 'c' || (i % 90) END, i / 4.0 \
     FROM generate_series(1, 3000) i",
    "CREATE UNIQUE INDEX m_b ON m (b)",
    "CREATE INDEX m_a ON m (a)",
    "CREATE INDEX m_ca ON m (c, a DESC)",
    "CREATE TABLE side (x int4, y text)",
    "INSERT INTO side SELECT i * 3, 'c' || i FROM generate_series(1, 40) i",
    "INSERT INTO side VALUES (NULL, NULL)",
];

/// A random DELETE or UPDATE; some are meant to fail.
fn statement(rng: &mut Rng) -> String {
    let lo = rng.below(3200) as i64;
    let width = 1 + rng.below(300) as i64;
    let a = rng.below(55) as i64 - 3;
    let condition = match rng.below(9) {
        0 => format!("id BETWEEN {lo} AND {}", lo + width),
        1 => format!("a = {a}"),
        2 => format!("a < {a} AND id % 3 = {}", rng.below(3)),
        3 => format!("c = 'c{}'", rng.below(95)),
        4 => "c IS NULL AND id % 5 = 0".to_string(),
        5 => format!("id IN (SELECT x FROM side WHERE x < {})", rng.below(130)),
        6 => format!("c NOT IN (SELECT y FROM side WHERE x > {}) AND id < {lo}", rng.below(130)),
        7 => format!("d > {}.5 AND a IN ({}, {}, NULL)", lo / 4, a, a + 1),
        _ => format!("EXISTS (SELECT 1 FROM side WHERE x = {}) AND id > {lo}", rng.below(130)),
    };
    match rng.below(10) {
        0..=2 => format!("DELETE FROM m WHERE {condition}"),
        3 => format!("UPDATE m SET a = a + 1, c = upper(c) WHERE {condition}"),
        4 => format!("UPDATE m SET d = d * 2, c = NULL WHERE {condition}"),
        // Unique keys stay unique (each original value appears once, negated or not): the
        // order in which either system meets the rows, which differs after updates, cannot
        // decide the outcome. `order_dependent_unique_updates` covers that on fresh tables.
        5 => format!("UPDATE m SET b = -b WHERE {condition}"),
        6 => format!("UPDATE m SET id = -id, b = b WHERE {condition}"),
        7 => format!("UPDATE m x SET (a, c) = (x.a * 2, 'u' || x.id) WHERE {}", condition.replace("id ", "x.id ")),
        8 => format!("UPDATE m SET b = NULL WHERE {condition}"),
        _ => format!("UPDATE m SET a = (SELECT max(x) FROM side), d = 1 / (a - {a}) WHERE {condition}"),
    }
}

const CHECKS: &[&str] = &[
    "SELECT * FROM m ORDER BY id",
    "SELECT count(*), sum(a), sum(b), count(c), sum(d) FROM m",
    "SELECT id, b FROM m WHERE b BETWEEN 5000 AND 9000 ORDER BY b",
    "SELECT a, count(*) FROM m WHERE a < 10 GROUP BY a ORDER BY a",
    "SELECT c, a FROM m WHERE c = 'c10' ORDER BY c, a DESC, id",
    "SELECT id FROM m WHERE id > 2900 ORDER BY id DESC LIMIT 5",
    "SELECT b FROM m WHERE b > 29000 ORDER BY b",
];

fn compare_all(pg: &PgCluster, s: &mut Session, after: &str) {
    for sql in CHECKS {
        assert_eq!(weft_lines(s, sql).unwrap(), pg.query(sql).unwrap(), "{sql} after {after}");
    }
}

#[test]
fn delete_and_update_match_postgresql() {
    let Some((pg, dir, db)) = oracle::start() else { return };
    let mut s = db.session();
    for sql in SETUP {
        pg.query(sql).unwrap();
        s.execute(sql).unwrap();
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut succeeded, mut failed) = (0, 0);
    for _ in 0..120 {
        let sql = statement(&mut rng);
        match (s.execute(&sql), pg.query(&sql)) {
            (Ok(weft), Ok(_)) => {
                succeeded += 1;
                assert!(weft.tag.starts_with("DELETE ") || weft.tag.starts_with("UPDATE "), "{sql}: {}", weft.tag);
            }
            // The detail names the first failing row, which depends on the physical order.
            (Err(weft), Err(postgres)) => {
                failed += 1;
                assert_same_error(&sql, &weft, &postgres.message, false);
            }
            (weft, postgres) => panic!("{sql}: weft {weft:?}, PostgreSQL {postgres:?}"),
        }
        compare_all(&pg, &mut s, &sql);
    }
    assert!(succeeded > 40 && failed > 5, "{succeeded} statements succeeded, {failed} failed");
    // Builds after the changes index only the live rows.
    for sql in ["CREATE INDEX m_d ON m (d)", "CREATE INDEX m_a2 ON m (a) WITH (parallel_workers = 2)", "REINDEX INDEX m_b"] {
        s.execute(sql).unwrap();
    }
    for index in ["m_pkey", "m_b", "m_a", "m_ca", "m_d", "m_a2"] {
        s.execute(&format!("SELECT weft_index_check('{index}', heapallindexed => true)")).unwrap();
    }
    let by_d = "SELECT id, d FROM m WHERE d BETWEEN 100 AND 300 ORDER BY d, id";
    assert_eq!(weft_lines(&mut s, by_d).unwrap(), pg.query(by_d).unwrap());
    // Statistics make the planner pick index and index-only scans; the answers stay.
    pg.query("ANALYZE m").unwrap();
    s.execute("ANALYZE m").unwrap();
    compare_all(&pg, &mut s, "ANALYZE");
    drop(s);
    drop(db);
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    compare_all(&pg, &mut s, "reopening");
    let sql = "DELETE FROM m";
    assert_eq!(s.execute(sql).unwrap().tag, format!("DELETE {}", pg.query("SELECT count(*) FROM m").unwrap()[0]));
    pg.query(sql).unwrap();
    compare_all(&pg, &mut s, sql);
}

/// On tables whose rows are in the same physical order in both systems, statements whose
/// outcome depends on that order (PostgreSQL checks a unique key as it replaces each row)
/// and the rows named in error details agree exactly.
#[test]
fn order_dependent_unique_updates() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut s = db.session();
    let script = [
        "CREATE TABLE o (k int4 PRIMARY KEY, v text NOT NULL, w int8 UNIQUE)",
        "INSERT INTO o SELECT i, 'v' || i, i FROM generate_series(1, 200) i",
        "UPDATE o SET k = k + 1",
        "UPDATE o SET k = k - 1 WHERE k > 100",
        "UPDATE o SET w = w + 1 WHERE k < 50",
        "UPDATE o SET w = 1000 + k, k = 1000 - k",
        "UPDATE o SET v = NULL WHERE k > 10",
        "UPDATE o SET w = 7 WHERE k IN (3, 4)",
        "UPDATE o SET k = 'x'",
        "UPDATE o SET nope = 1",
        "UPDATE o SET k = 1, k = 2",
        "DELETE FROM o WHERE k",
        "DELETE FROM o WHERE k IN (SELECT k, v FROM o)",
        "DELETE FROM o WHERE k % 3 = 0",
        "INSERT INTO o VALUES (999, 'x', 1199)",
        "INSERT INTO o VALUES (3, 'x', 5000)",
    ];
    for sql in script {
        compare_script(&pg, &mut s, &[sql], true);
        let all = "SELECT * FROM o ORDER BY k";
        assert_eq!(weft_lines(&mut s, all).unwrap(), pg.query(all).unwrap(), "after {sql}");
    }
}

/// Serial columns and sequences: the values handed out, their order through INSERT ...
/// SELECT, currval/setval, bounds and errors, and dropping with the table, as PostgreSQL.
#[test]
fn sequences_and_serial_match_postgresql() {
    let Some((pg, dir, db)) = oracle::start() else { return };
    let mut s = db.session();
    let script = [
        "CREATE TABLE sr (id serial PRIMARY KEY, big bigserial, name text)",
        "INSERT INTO sr (name) VALUES ('a'), ('b')",
        "INSERT INTO sr (name) SELECT 'n' || i FROM generate_series(1, 3000) i",
        "SELECT * FROM sr ORDER BY id LIMIT 5",
        "SELECT count(*), min(id), max(id), sum(big) FROM sr",
        "SELECT id, name FROM sr WHERE name = 'n2999'",
        "INSERT INTO sr VALUES (DEFAULT, 5, 'explicit')",
        "INSERT INTO sr (id, name) VALUES (3004, 'clash')",
        "INSERT INTO sr (name) VALUES ('after clash')",
        // Each PostgreSQL query runs in a session of its own: currval follows a nextval of
        // the same statement.
        "SELECT nextval('sr_id_seq'), currval('sr_id_seq'), currval('public.sr_id_seq')",
        "SELECT setval('sr_id_seq', 9000)",
        "INSERT INTO sr (name) VALUES ('after setval') ",
        "SELECT setval('sr_id_seq', 10, false)",
        "SELECT nextval('sr_id_seq'), nextval('sr_id_seq')",
        "SELECT * FROM sr WHERE id > 3002 ORDER BY id",
        "CREATE SEQUENCE s1",
        "CREATE SEQUENCE s2 INCREMENT BY 5 START WITH 100",
        "CREATE SEQUENCE s3 AS integer MAXVALUE 3",
        "CREATE SEQUENCE s4 INCREMENT -1",
        "CREATE SEQUENCE s1",
        "CREATE SEQUENCE IF NOT EXISTS s1",
        "CREATE SEQUENCE bad START 0",
        "CREATE SEQUENCE bad2 INCREMENT 0",
        "SELECT currval('s1')",
        "SELECT nextval('s1'), nextval('s1'), nextval('s2'), nextval('s2'), nextval('s4'), nextval('s4')",
        "SELECT nextval('s1'), currval('s1')",
        "SELECT nextval('s3'), nextval('s3'), nextval('s3')",
        "SELECT nextval('s3')",
        "SELECT setval('s3', 7)",
        "SELECT nextval('nosuch')",
        "SELECT nextval('S1')",
        "DROP SEQUENCE sr_id_seq",
        "DROP SEQUENCE s1, s2",
        "DROP SEQUENCE s1",
        "DROP SEQUENCE IF EXISTS s1",
        "DROP SEQUENCE sr",
        "CREATE TABLE sr2 (sr_id_seq int)",
        "DROP TABLE sr",
        "CREATE TABLE sr_id_seq (x int)",
        "CREATE TABLE sr (id serial, v int)",
        "INSERT INTO sr (v) VALUES (1), (2)",
        "SELECT * FROM sr ORDER BY id",
        "SELECT nextval('s3')",
    ];
    compare_script(&pg, &mut s, &script, false);
    // The values survive reopening, and none is handed out twice.
    drop(s);
    drop(db);
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    for sql in ["SELECT nextval('s4')", "INSERT INTO sr (v) VALUES (3)", "SELECT * FROM sr ORDER BY id"] {
        assert_eq!(weft_lines(&mut s, sql).unwrap(), pg.query(sql).unwrap(), "{sql}");
    }
}

/// INSERT ... ON CONFLICT DO NOTHING, with and without a target, against committed rows
/// and among the statement's own rows (the first one wins), with several unique indexes.
#[test]
fn on_conflict_do_nothing_matches_postgresql() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut s = db.session();
    let script = [
        "CREATE TABLE oc (k int4 PRIMARY KEY, u text UNIQUE, v int8)",
        "INSERT INTO oc SELECT i, 'u' || i, i FROM generate_series(1, 100) i",
        "INSERT INTO oc VALUES (5, 'new5', 0) ON CONFLICT DO NOTHING",
        "INSERT INTO oc VALUES (500, 'u7', 0) ON CONFLICT DO NOTHING",
        "INSERT INTO oc VALUES (501, 'u7', 0) ON CONFLICT (k) DO NOTHING",
        "INSERT INTO oc VALUES (7, 'x', 0) ON CONFLICT (u) DO NOTHING",
        "INSERT INTO oc VALUES (502, 'u8', 0) ON CONFLICT ON CONSTRAINT oc_u_key DO NOTHING",
        "INSERT INTO oc VALUES (503, 'z', 0) ON CONFLICT (v) DO NOTHING",
        "INSERT INTO oc VALUES (503, 'z', 0) ON CONFLICT ON CONSTRAINT nosuch DO NOTHING",
        "INSERT INTO oc SELECT i % 150 + 1, 'w' || (i % 120), i FROM generate_series(1, 400) i ON CONFLICT DO NOTHING",
        "INSERT INTO oc SELECT i, 'y' || i, i FROM generate_series(140, 160) i ON CONFLICT (k) DO NOTHING",
        "INSERT INTO oc VALUES (NULL, 'n', 1) ON CONFLICT DO NOTHING",
        "INSERT INTO oc VALUES (900, NULL, 1), (901, NULL, 2) ON CONFLICT DO NOTHING",
        "SELECT count(*), sum(k), sum(v) FROM oc",
        "SELECT * FROM oc ORDER BY k",
        "SELECT k FROM oc WHERE u = 'w5'",
    ];
    // psql -At prints no command tags: the counts are compared through the table.
    compare_script(&pg, &mut s, &script, true);
    for index in ["oc_pkey", "oc_u_key"] {
        s.execute(&format!("SELECT weft_index_check('{index}', heapallindexed => true)")).unwrap();
    }
    let tag = s.execute("INSERT INTO oc VALUES (1, 'q', 1), (2000, 'q2', 1), (2000, 'q3', 1) ON CONFLICT DO NOTHING").unwrap().tag;
    assert_eq!(tag, "INSERT 0 1");
}
