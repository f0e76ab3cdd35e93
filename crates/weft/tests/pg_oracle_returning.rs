//! RETURNING, UPDATE ... FROM, DELETE ... USING and INSERT ... ON CONFLICT DO UPDATE
//! compared with PostgreSQL 15: each statement's rows (RETURNING) or error, the tables
//! after every statement, errors by SQLSTATE, and the B-tree checker (heapallindexed)
//! on every index at the end of each script.

use super::oracle;

use oracle::{assert_same_error, error_mismatches, weft_lines};
use weft::postgres::PgCluster;
use weft_sql::Session;

/// Run each statement in both systems: the same rows (as sorted sets when `sorted`: the
/// order of an UPDATE's or DELETE's rows follows the physical order, which differs once
/// rows moved) or the same error; after each, every query of `tables` agrees.
fn compare(pg: &PgCluster, s: &mut Session, script: &[&str], tables: &[&str]) {
    for sql in script {
        let sorted = !sql.starts_with("INSERT");
        match (s.execute(sql), pg.query(sql)) {
            (Ok(weft), Ok(mut postgres)) => {
                let mut rows = oracle::lines(&weft);
                if sorted {
                    rows.sort();
                    postgres.sort();
                }
                assert_eq!(rows, postgres, "{sql}");
            }
            (Err(weft), Err(postgres)) => assert_same_error(sql, &weft, &postgres.message, true),
            (weft, postgres) => panic!("{sql}: weft {weft:?}, PostgreSQL {postgres:?}"),
        }
        for query in tables {
            assert_eq!(weft_lines(s, query).unwrap(), pg.query(query).unwrap(), "{query} after {sql}");
        }
    }
}

fn check_indexes(s: &mut Session, indexes: &[&str]) {
    for index in indexes {
        s.execute(&format!("SELECT weft_index_check('{index}', heapallindexed => true)")).unwrap();
    }
}

/// Each statement fails in both systems with the same message and SQLSTATE.
fn same_sqlstates(pg: &PgCluster, s: &mut Session, statements: &[&str]) {
    let mismatches = error_mismatches(pg, s, &[], statements);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn returning_matches_postgresql() {
    let setup = ["CREATE TABLE r (id serial PRIMARY KEY, a int4 DEFAULT 7, b text UNIQUE, c float8)"];
    let Some((pg, _dir, db)) = oracle::start_with_setup(&setup) else { return };
    let mut s = db.session();
    let script = [
        "INSERT INTO r (a, b, c) VALUES (1, 'x', 1.5), (2, 'y', NULL) RETURNING *",
        "INSERT INTO r (b) VALUES ('z') RETURNING id, a, b AS bee, a + id, c IS NULL, r.*",
        "INSERT INTO r DEFAULT VALUES RETURNING id, a",
        "INSERT INTO r AS q (b, c) SELECT 'g' || i, i / 2.0 FROM generate_series(1, 5) i ORDER BY i DESC RETURNING q.id, q.b, upper(b)",
        "INSERT INTO r (id, b) VALUES (DEFAULT, 'w'), (100, 'v') RETURNING id",
        "INSERT INTO r (b) VALUES ('x') ON CONFLICT DO NOTHING RETURNING *",
        "INSERT INTO r (b) VALUES ('x'), ('new'), ('new') ON CONFLICT (b) DO NOTHING RETURNING b",
        "INSERT INTO r (b) VALUES ('x') RETURNING id",
        "INSERT INTO r (b) VALUES ('k') RETURNING count(*)",
        "INSERT INTO r (b) VALUES ('k') RETURNING nope",
        "INSERT INTO r (b) VALUES ('k') RETURNING s.*",
        "UPDATE r SET a = a * 10, c = 0 WHERE id <= 3 RETURNING id, a, c, b",
        "UPDATE r SET b = b || '!' WHERE b LIKE 'g%' RETURNING *",
        "UPDATE r x SET a = x.id WHERE x.id > 99 RETURNING x.*, x.a - 1 AS before",
        "UPDATE r SET a = 0 WHERE false RETURNING *",
        "UPDATE r SET b = 'x' WHERE id = 2 RETURNING *",
        "UPDATE r SET a = 1 RETURNING sum(a)",
        "DELETE FROM r WHERE a >= 10 RETURNING b, id",
        "DELETE FROM r WHERE id IN (SELECT max(id) FROM r) RETURNING *, (SELECT count(*) FROM r)",
        "DELETE FROM r WHERE id < 0 RETURNING *",
    ];
    compare(&pg, &mut s, &script, &["SELECT * FROM r ORDER BY id"]);
    check_indexes(&mut s, &["r_pkey", "r_b_key"]);
    // The command tag follows the rows, as psql prints them.
    let result = s.execute("INSERT INTO r (b) VALUES ('t1'), ('t2') RETURNING b").unwrap();
    assert_eq!((result.tag.as_str(), result.rows.len(), result.returns_rows), ("INSERT 0 2", 2, true));
    assert_eq!(result.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["b"]);
    let result = s.execute("DELETE FROM r WHERE b LIKE 't_' RETURNING id").unwrap();
    assert_eq!((result.tag.as_str(), result.rows.len()), ("DELETE 2", 2));
}

#[test]
fn update_from_and_delete_using_match_postgresql() {
    let setup = [
        "CREATE TABLE t (id int4 PRIMARY KEY, a int4, b text UNIQUE)",
        "INSERT INTO t SELECT i, i % 10, 'b' || i FROM generate_series(1, 200) i",
        "CREATE INDEX t_a ON t (a)",
        "CREATE TABLE s (x int4, y text)",
        "INSERT INTO s SELECT i * 3, 's' || i FROM generate_series(1, 40) i",
        "INSERT INTO s VALUES (NULL, 'null')",
        "CREATE TABLE w (x int4 PRIMARY KEY, z int4)",
        "INSERT INTO w SELECT i * 3, i FROM generate_series(1, 20) i",
    ];
    let Some((pg, _dir, db)) = oracle::start_with_setup(&setup) else { return };
    let mut s = db.session();
    let tables = ["SELECT * FROM t ORDER BY id", "SELECT * FROM s ORDER BY x, y"];
    let script = [
        "UPDATE t SET b = s.y FROM s WHERE t.id = s.x",
        "UPDATE t SET a = t.a + w.z FROM s JOIN w ON s.x = w.x WHERE t.id = s.x + 1 RETURNING t.id, t.a, s.y, w.z",
        "UPDATE t AS tt SET a = -tt.a FROM w, s WHERE tt.id = w.x AND s.x = w.x * 2 AND tt.id > 30 RETURNING *",
        // Several joined rows per target row: updated once (the value does not depend on which).
        "UPDATE t SET a = a + 100 FROM s WHERE t.id % 7 = s.x % 7 AND t.id < 20 RETURNING t.id, t.a",
        "UPDATE t SET a = sub.n FROM (SELECT x, count(*) AS n FROM s GROUP BY x) sub WHERE t.id = sub.x + 2 RETURNING t.*",
        "UPDATE t SET a = 0 FROM s WHERE t.id = s.x AND s.y = 'none'",
        "UPDATE t SET a = 1 FROM s LEFT JOIN w ON s.x = w.x WHERE t.id = s.x AND w.z IS NULL RETURNING t.id, s.y",
        // A duplicate unique key: nothing changes.
        "UPDATE t SET b = 'same' FROM s WHERE t.id = s.x",
        "UPDATE t SET b = s.y FROM s WHERE t.id = s.x + 100",
        "UPDATE t SET b = s.y FROM s WHERE t.id = s.x + 1",
        "DELETE FROM t USING s WHERE t.id = s.x + 2 AND s.x < 30 RETURNING t.id, s.y",
        "DELETE FROM t USING s, w WHERE t.id = s.x AND s.x = w.x AND w.z > 15 RETURNING *",
        "DELETE FROM t x USING s WHERE x.a = length(s.y) RETURNING x.id",
        "DELETE FROM t USING s WHERE s.x IS NULL AND t.id = 1",
        "DELETE FROM t USING t",
        "DELETE FROM t x USING s WHERE t.id = s.x",
        "UPDATE t AS x SET a = t.a",
        "UPDATE t SET a = 1 FROM t",
        "UPDATE t SET a = x FROM s WHERE id = x + 2",
        "UPDATE t SET a = y FROM s WHERE id = x",
        "UPDATE t SET a = 1 FROM s WHERE t.id = q.x",
        "DELETE FROM t USING s WHERE id = nope",
    ];
    compare(&pg, &mut s, &script, &tables);
    check_indexes(&mut s, &["t_pkey", "t_b_key", "t_a"]);
    same_sqlstates(
        &pg,
        &mut s,
        &[
            "UPDATE t SET b = 'dup' FROM s WHERE t.id = s.x",
            "UPDATE t SET a = 1 FROM t",
            "UPDATE t SET a = s.y FROM s WHERE t.id = s.x",
            "DELETE FROM t USING s WHERE t.id = s.x ORDER BY t.id",
            "DELETE FROM t USING s WHERE t.id = s.x LIMIT 1",
        ],
    );
}

#[test]
fn on_conflict_do_update_matches_postgresql() {
    let setup = [
        "CREATE TABLE up (k int4 PRIMARY KEY, v int4, u text UNIQUE, n int4 NOT NULL DEFAULT 0)",
        "INSERT INTO up SELECT i, i * 10, 'u' || i, 0 FROM generate_series(1, 50) i",
        "CREATE TABLE sq (id serial PRIMARY KEY, a int4, b int4, label text, UNIQUE (a, b))",
        "INSERT INTO sq (a, b, label) VALUES (1, 1, 'one'), (1, 2, 'two'), (NULL, 1, 'n')",
    ];
    let Some((pg, _dir, db)) = oracle::start_with_setup(&setup) else { return };
    let mut s = db.session();
    let tables = ["SELECT * FROM up ORDER BY k", "SELECT * FROM sq ORDER BY id"];
    let script = [
        // Conflicts with existing rows and new rows; EXCLUDED and the table's name.
        "INSERT INTO up VALUES (1, 5, 'x1', 0), (100, 6, 'u100', 0) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v + up.v, n = up.n + 1 RETURNING *",
        "INSERT INTO up AS o VALUES (2, 7, 'u2', 0), (3, 8, 'x3', 0) ON CONFLICT (u) DO UPDATE SET v = o.v - EXCLUDED.v RETURNING o.k, o.v, o.u",
        "INSERT INTO up VALUES (4, 1, 'a', 0), (5, 1, 'b', 0), (101, 1, 'c', 0) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v WHERE up.v > 45 RETURNING k, v",
        "INSERT INTO up VALUES (6, 0, 'six', 0) ON CONFLICT ON CONSTRAINT up_pkey DO UPDATE SET u = EXCLUDED.u || up.u RETURNING u",
        "INSERT INTO up SELECT i, i, 'sel' || i, 0 FROM generate_series(45, 55) i ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v * 2, n = up.n + 1",
        "INSERT INTO up VALUES (7, 0, 'q', 0) ON CONFLICT (k) DO UPDATE SET k = 700 RETURNING *",
        "INSERT INTO up VALUES (7, 0, 'u8', 0) ON CONFLICT (k) DO UPDATE SET v = -1 RETURNING *",
        "INSERT INTO up VALUES (8, DEFAULT, 'r', 0) ON CONFLICT (k) DO UPDATE SET v = DEFAULT, n = DEFAULT RETURNING *",
        // A row proposed twice, and a key an earlier row of the statement wrote.
        "INSERT INTO up VALUES (9, 1, 'd1', 0), (9, 2, 'd2', 0) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
        "INSERT INTO up VALUES (200, 1, 'e1', 0), (200, 2, 'e2', 0) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
        "INSERT INTO up VALUES (10, 1, 'f', 0), (10, 2, 'g', 0) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v WHERE false",
        // Unique violations of another index: nothing changes.
        "INSERT INTO up VALUES (11, 0, 'u12', 0) ON CONFLICT (k) DO UPDATE SET u = EXCLUDED.u",
        "INSERT INTO up VALUES (300, 0, 'u13', 0) ON CONFLICT (k) DO UPDATE SET v = 0",
        "INSERT INTO up VALUES (12, 0, 'z', 0), (13, 0, 'u12', 0) ON CONFLICT (k) DO UPDATE SET u = EXCLUDED.u",
        "INSERT INTO up VALUES (14, 0, 'u15', 0), (15, 0, 'fresh', 0) ON CONFLICT (k) DO UPDATE SET u = EXCLUDED.u RETURNING k, u",
        "INSERT INTO up VALUES (16, NULL, 'x', NULL) ON CONFLICT (k) DO UPDATE SET v = 1",
        // NULLs never conflict; a composite key; a serial column.
        "INSERT INTO sq (a, b, label) VALUES (NULL, 1, 'n2'), (1, NULL, 'n3'), (1, 1, 'again') ON CONFLICT (a, b) DO UPDATE SET label = sq.label || '+' || EXCLUDED.label RETURNING *",
        "INSERT INTO sq (a, b, label) VALUES (2, 2, 'new'), (1, 2, 'upd') ON CONFLICT (b, a) DO UPDATE SET label = EXCLUDED.label, id = EXCLUDED.id RETURNING *",
        "INSERT INTO sq (a, b, label) VALUES (3, 3, 'c') ON CONFLICT ON CONSTRAINT sq_a_b_key DO UPDATE SET label = 'no' RETURNING id, label",
        // Errors.
        "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT (v) DO UPDATE SET v = 1",
        "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT DO UPDATE SET v = 1",
        "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT ON CONSTRAINT nosuch DO UPDATE SET v = 1",
        "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT (k) DO UPDATE SET v = v + 1",
        "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT (k) DO UPDATE SET v = 1 RETURNING excluded.v",
        "INSERT INTO up AS o VALUES (1, 1, 'x', 0) ON CONFLICT (k) DO UPDATE SET v = up.v",
        "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT (k) DO UPDATE SET nope = 1",
        "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT (k) DO UPDATE SET v = 1 WHERE EXCLUDED.u",
        "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT (nope) DO UPDATE SET v = 1",
    ];
    compare(&pg, &mut s, &script, &tables);
    check_indexes(&mut s, &["up_pkey", "up_u_key", "sq_pkey", "sq_a_b_key"]);
    same_sqlstates(
        &pg,
        &mut s,
        &[
            "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT (v) DO UPDATE SET v = 1",
            "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT DO UPDATE SET v = 1",
            "INSERT INTO up VALUES (1, 1, 'x', 0), (1, 2, 'y', 0) ON CONFLICT (k) DO UPDATE SET v = 1",
            "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT (k) DO UPDATE SET u = 'u20'",
            "INSERT INTO up VALUES (1, 1, 'x', 0) ON CONFLICT (k) DO UPDATE SET v = v",
        ],
    );
    // The command tag counts inserted and updated rows, not those WHERE left alone.
    let tag = s.execute("INSERT INTO up VALUES (1, 0, 'u1', 0), (2, 0, 'u2', 0), (400, 0, 'u400', 0) ON CONFLICT (k) DO UPDATE SET n = 9 WHERE up.k = 1").unwrap().tag;
    assert_eq!(tag, "INSERT 0 2");
}
