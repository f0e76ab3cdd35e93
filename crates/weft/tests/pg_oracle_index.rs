//! Index queries compared row by row with PostgreSQL 15: the same table (built from
//! `hashint4`, bit-exact in both) and the same indexes in both systems, a few hundred
//! random predicates and ORDER BY ... LIMIT queries with a total order, and unique
//! violations at build and at insert with PostgreSQL's message and detail. weft must plan
//! index scans for many of them (checked with EXPLAIN) and agree with PostgreSQL on all.

use super::oracle;

use oracle::{compare_script, weft_lines, Rng};
use weft_sql::Datum;

const SETUP: &[&str] = &[
    "CREATE TABLE x (id int4, a int4, b int8, c text, d float8)",
    "INSERT INTO x SELECT i, CASE WHEN i % 29 = 0 THEN NULL ELSE hashint4(i) % 500 END, \
     CASE WHEN i % 31 = 0 THEN NULL ELSE hashint4(i * 7)::int8 * 1000 END, \
     CASE WHEN i % 37 = 0 THEN NULL ELSE 'w' || (hashint4(i * 3) % 700) END, \
     CASE WHEN i % 41 = 0 THEN NULL ELSE (hashint4(i * 11) % 100000) / 8.0 END \
     FROM generate_series(1, 30000) i",
    "CREATE INDEX xa ON x (a)",
    "CREATE INDEX xb ON x (b DESC)",
    "CREATE INDEX xca ON x (c, a DESC NULLS LAST)",
    "CREATE INDEX xd ON x (d NULLS FIRST)",
    "CREATE UNIQUE INDEX xid ON x (id)",
    // Rows after the build: maintained by INSERT in both systems.
    "INSERT INTO x SELECT i, hashint4(i) % 500, i, 'w' || (i % 700), i / 4.0 FROM generate_series(30001, 31000) i",
];

fn query(rng: &mut Rng) -> String {
    let op = ["=", "<", "<=", ">", ">="][rng.below(5) as usize];
    let predicate = match rng.below(8) {
        0 => format!("a {op} {}", rng.below(1000) as i64 - 500),
        1 => format!("b {op} {}", (rng.below(4_000_000) as i64 - 2_000_000) * 1000),
        2 => format!("c {op} 'w{}'", rng.below(700)),
        3 => format!("d {op} {}", rng.below(12000) as i64 - 6000),
        4 => {
            let lo = rng.below(1000) as i64 - 500;
            format!("a BETWEEN {lo} AND {}", lo + rng.below(20) as i64)
        }
        5 => format!("a IN ({}, {}, {})", rng.below(1000) as i64 - 500, rng.below(1000) as i64 - 500, rng.below(10)),
        6 => format!("c = 'w{}' AND a {op} {}", rng.below(700), rng.below(1000) as i64 - 500),
        _ => format!("id {op} {}", rng.below(31000)),
    };
    let columns = ["id, a", "id, a, b, c, d", "id, c", "id, d"][rng.below(4) as usize];
    match rng.below(3) {
        0 => format!("SELECT {columns} FROM x WHERE {predicate} ORDER BY id"),
        1 => format!("SELECT count(*), min(id), max(id) FROM x WHERE {predicate}"),
        _ => {
            let order = ["a, id", "a DESC, id", "b DESC NULLS FIRST, id", "c, a DESC NULLS LAST, id", "d NULLS FIRST, id", "id DESC"]
                [rng.below(6) as usize];
            format!("SELECT {columns} FROM x WHERE {predicate} ORDER BY {order} LIMIT {}", 1 + rng.below(20))
        }
    }
}

#[test]
fn index_queries_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut s = db.session();
    for sql in SETUP {
        pg.query(sql).unwrap_or_else(|e| panic!("PostgreSQL: {sql}: {e}"));
        s.execute(sql).unwrap_or_else(|e| panic!("weft: {sql}: {e:?}"));
    }
    let mut rng = Rng(0x1234_5678_9abc);
    let mut indexed = 0;
    const QUERIES: usize = 250;
    let queries: Vec<String> = (0..QUERIES).map(|_| query(&mut rng)).collect();
    for sql in &queries {
        let plan = weft_lines(&mut s, &format!("EXPLAIN {sql}")).unwrap().join("\n");
        if plan.contains("Index") {
            indexed += 1;
        }
        let weft = weft_lines(&mut s, sql).unwrap_or_else(|e| panic!("weft: {sql}: {e}"));
        let postgres = pg.query(sql).unwrap_or_else(|e| panic!("PostgreSQL: {sql}: {e}"));
        assert_eq!(weft, postgres, "{sql}\nweft plan:\n{plan}");
    }
    assert!(indexed >= QUERIES / 3, "only {indexed} of {QUERIES} queries used an index");
    for index in ["xa", "xb", "xca", "xd", "xid"] {
        s.execute(&format!("SELECT weft_index_check('{index}', heapallindexed => true)")).unwrap();
    }
}

#[test]
fn unique_violations_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut s = db.session();
    let setup = [
        "CREATE TABLE u (a int4, b text)",
        "INSERT INTO u SELECT i, 'k' || i FROM generate_series(1, 2000) i",
        "INSERT INTO u VALUES (NULL, 'n'), (NULL, 'n'), (77, 'again')",
        // Many duplicates: which one PostgreSQL names depends on its sort's comparisons.
        "CREATE TABLE m (a int4, b int8, t text, f float8, flag bool)",
        "INSERT INTO m SELECT hashint4(i) % 300, i % 7, md5((i % 900)::text), (i % 11) / 4.0, i % 3 = 0 \
         FROM generate_series(1, 5000) i",
        "INSERT INTO m VALUES (NULL, NULL, NULL, '-0', NULL), (NULL, 1, 'x', 'NaN', true), (7, NULL, NULL, 0, false)",
        "CREATE TABLE z (f float8)",
        "INSERT INTO z VALUES ('-0'), (5), (0)",
    ];
    for sql in setup {
        pg.query(sql).unwrap();
        s.execute(sql).unwrap();
    }
    let failing = [
        "CREATE UNIQUE INDEX ua ON u (a)",
        "CREATE UNIQUE INDEX ub ON u (b)",
        "CREATE UNIQUE INDEX ma ON m (a)",
        "CREATE UNIQUE INDEX ma ON m (a DESC)",
        "CREATE UNIQUE INDEX mt ON m (t)",
        "CREATE UNIQUE INDEX mta ON m (t DESC NULLS LAST, a)",
        "CREATE UNIQUE INDEX mf ON m (f)",
        "CREATE UNIQUE INDEX mfa ON m (flag, a)",
        "CREATE UNIQUE INDEX mbf ON m (b, flag)",
        "CREATE UNIQUE INDEX zf ON z (f)",
    ];
    for sql in failing {
        let weft = s.execute(sql).unwrap_err();
        let postgres = pg.query(sql).unwrap_err().message;
        assert!(postgres.contains(&format!("ERROR:  {}", weft.message)), "{sql}: weft {weft:?}, PostgreSQL {postgres}");
        let detail = weft.detail.clone().unwrap_or_default();
        assert!(postgres.contains(&format!("DETAIL:  {detail}")), "{sql}: weft {weft:?}, PostgreSQL {postgres}");
        assert_eq!(weft.sqlstate.0, "23505");
    }
    // NULLs are distinct: the two (NULL, 'n') rows do not clash.
    for sql in ["CREATE UNIQUE INDEX uba ON u (b, a)"] {
        pg.query(sql).unwrap();
        s.execute(sql).unwrap();
    }
    let ok = ["CREATE TABLE v AS SELECT * FROM u WHERE a IS NULL OR a <> 77", "CREATE UNIQUE INDEX va ON v (a)"];
    for sql in ok {
        pg.query(sql).unwrap();
        s.execute(sql).unwrap();
    }
    for sql in ["INSERT INTO v VALUES (5, 'dup')", "INSERT INTO v VALUES (3000, 'x'), (3000, 'y')"] {
        let weft = s.execute(sql).unwrap_err();
        let postgres = pg.query(sql).unwrap_err().message;
        assert!(postgres.contains(&format!("ERROR:  {}", weft.message)), "{sql}: weft {weft:?}, PostgreSQL {postgres}");
        assert!(postgres.contains(&format!("DETAIL:  {}", weft.detail.clone().unwrap_or_default())), "{sql}: {postgres}");
    }
    let count = "SELECT count(*) FROM v";
    assert_eq!(weft_lines(&mut s, count).unwrap(), pg.query(count).unwrap());
    assert!(matches!(s.execute("SELECT count(*) FROM v WHERE a = 3000").unwrap().rows[0][0], Datum::Int8(0)));
}

/// More predicate forms (IS [NOT] NULL, NOT IN, IN on text, cross-type constants, several
/// conditions on one index) after ANALYZE in both systems, so that weft plans from its
/// statistics; results must agree row by row, and many queries must use an index.
fn analyzed_query(rng: &mut Rng) -> String {
    let op = ["=", "<", "<=", ">", ">="][rng.below(5) as usize];
    let predicate = match rng.below(12) {
        0 => format!("a {op} {}", rng.below(1000) as i64 - 500),
        1 => format!("a IS NULL AND id {op} {}", rng.below(31000)),
        2 => format!("c IS NOT NULL AND c {op} 'w{}'", rng.below(700)),
        3 => format!("a NOT IN ({}, {}) AND a BETWEEN {} AND {}", rng.below(30), rng.below(30), rng.below(20), 20 + rng.below(30)),
        4 => format!("c IN ('w{}', 'w{}', 'nope') AND a {op} {}", rng.below(700), rng.below(700), rng.below(1000) as i64 - 500),
        5 => format!("a {op} {}.5", rng.below(1000) as i64 - 500),
        6 => format!("a {op} {}", [5_000_000_000i64, -5_000_000_000][rng.below(2) as usize]),
        7 => format!("d {op} {} AND d IS NOT NULL", rng.below(12000) as i64 - 6000),
        8 => format!("b BETWEEN {} AND {}", (rng.below(4_000_000) as i64 - 2_000_000) * 1000, (rng.below(4_000_000) as i64 - 2_000_000) * 1000),
        9 => format!("id IN ({}, {}, {}) OR id {op} {}", rng.below(31000), rng.below(31000), rng.below(31000), rng.below(100)),
        10 => format!("c = 'w{}' AND a IS NULL", rng.below(700)),
        _ => format!("id {op} {} AND a < {}", rng.below(31000), rng.below(500)),
    };
    let columns = ["id, a", "id, a, b, c, d", "id, c", "id, d"][rng.below(4) as usize];
    match rng.below(3) {
        0 => format!("SELECT {columns} FROM x WHERE {predicate} ORDER BY id"),
        1 => format!("SELECT count(*), min(id), max(id) FROM x WHERE {predicate}"),
        _ => {
            let order = ["a, id", "a DESC, id", "b DESC NULLS FIRST, id", "c, a DESC NULLS LAST, id", "d NULLS FIRST, id", "id DESC"]
                [rng.below(6) as usize];
            format!("SELECT {columns} FROM x WHERE {predicate} ORDER BY {order} LIMIT {}", 1 + rng.below(20))
        }
    }
}

#[test]
fn index_queries_match_postgresql_after_analyze() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut s = db.session();
    for sql in SETUP.iter().chain(&["ANALYZE x"]) {
        pg.query(sql).unwrap_or_else(|e| panic!("PostgreSQL: {sql}: {e}"));
        s.execute(sql).unwrap_or_else(|e| panic!("weft: {sql}: {e:?}"));
    }
    let mut rng = Rng(0x0bad_cafe_f00d);
    let mut indexed = 0;
    const QUERIES: usize = 300;
    for _ in 0..QUERIES {
        let sql = analyzed_query(&mut rng);
        let plan = weft_lines(&mut s, &format!("EXPLAIN {sql}")).unwrap().join("\n");
        if plan.contains("Index") {
            indexed += 1;
        }
        let weft = weft_lines(&mut s, &sql).unwrap_or_else(|e| panic!("weft: {sql}: {e}"));
        let postgres = pg.query(&sql).unwrap_or_else(|e| panic!("PostgreSQL: {sql}: {e}"));
        assert_eq!(weft, postgres, "{sql}\nweft plan:\n{plan}");
    }
    assert!(indexed >= QUERIES / 3, "only {indexed} of {QUERIES} queries used an index");
}

/// Plan shapes against PostgreSQL's, with statistics in both and PostgreSQL's bitmap
/// scans (which weft does not have) turned off: the same choice among Seq Scan, Index
/// Scan, Index Only Scan (forward or backward) and sorts, and the same Index Cond and
/// Filter text. The queries are chosen far from the break-even points, so that the two
/// cost models (and PostgreSQL's random sample) agree.
#[test]
fn index_plan_shapes_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut s = db.session();
    let setup = [
        "CREATE TABLE p (id int NOT NULL, a int, skew int, t text, f float8)",
        "INSERT INTO p SELECT i, hashint4(i) % 10000, CASE WHEN i % 10 = 0 THEN i ELSE 1 END, md5(i::text), i / 3.0 \
         FROM generate_series(1, 100000) i",
        "CREATE UNIQUE INDEX p_id ON p (id)",
        "CREATE INDEX p_a ON p (a)",
        "CREATE INDEX p_skew ON p (skew)",
        "CREATE INDEX p_t ON p (t DESC)",
        "CREATE INDEX p_f_a ON p (f, a)",
    ];
    for sql in setup {
        pg.query(sql).unwrap_or_else(|e| panic!("PostgreSQL: {sql}: {e}"));
        s.execute(sql).unwrap_or_else(|e| panic!("weft: {sql}: {e:?}"));
    }
    // PostgreSQL's index-only scans need the visibility map; weft's build entries need no
    // heap visit.
    pg.query("VACUUM ANALYZE p").unwrap();
    s.execute("ANALYZE p").unwrap();
    s.execute("SET max_parallel_workers_per_gather = 0").unwrap();
    let queries = [
        "SELECT * FROM p WHERE id = 77",
        "SELECT * FROM p WHERE a = 42",
        "SELECT * FROM p WHERE a > -9000",
        "SELECT a FROM p WHERE a < -9990",
        "SELECT * FROM p ORDER BY a LIMIT 5",
        "SELECT id FROM p ORDER BY id DESC LIMIT 5",
        "SELECT * FROM p WHERE skew = 1",
        "SELECT * FROM p WHERE skew = 20",
        "SELECT t FROM p WHERE t > 'fff'",
        "SELECT * FROM p WHERE a BETWEEN 5 AND 7 AND t < 'c'",
        "SELECT * FROM p WHERE a IN (1, 2, 3)",
        "SELECT * FROM p WHERE id < 50",
        "SELECT * FROM p WHERE id > 500",
        "SELECT * FROM p WHERE id BETWEEN 100 AND 20000",
        "SELECT f, a FROM p WHERE f < 10 AND a > 0",
        "SELECT * FROM p WHERE f = 5 ORDER BY a",
        "SELECT * FROM p WHERE t = 'abc'",
        "SELECT count(*) FROM p WHERE a < 0",
        "SELECT * FROM p WHERE a < 0 ORDER BY a LIMIT 10",
        "SELECT * FROM p ORDER BY t DESC LIMIT 3",
        "SELECT * FROM p ORDER BY t LIMIT 3",
        "SELECT * FROM p ORDER BY id",
        "SELECT id FROM p WHERE id IN (3, 5, 7)",
        "SELECT * FROM p WHERE a IS NULL",
        "SELECT id, skew FROM p WHERE skew = 1 ORDER BY id LIMIT 3",
    ];
    for query in queries {
        let sql = format!("EXPLAIN (COSTS OFF) {query}");
        let weft = weft_lines(&mut s, &sql).unwrap().join("\n");
        let postgres = pg
            .query(&format!("SET max_parallel_workers_per_gather = 0; SET enable_bitmapscan = off; {sql}"))
            .unwrap_or_else(|e| panic!("PostgreSQL: {sql}: {e}"))
            .join("\n");
        assert_eq!(weft, postgres, "{query}");
    }
}

/// PRIMARY KEY and UNIQUE constraints, written on a column, on the table, named and
/// unnamed, and added or dropped by ALTER TABLE: each statement succeeds or fails as in
/// PostgreSQL (same message, detail and hint), and the indexes made have PostgreSQL's names.
#[test]
fn key_constraints_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut s = db.session();
    let script = [
        "CREATE TABLE k (a int4 PRIMARY KEY, b text UNIQUE, c int8 NOT NULL, UNIQUE (c, b))",
        "INSERT INTO k SELECT i, 'b' || i, i % 7 FROM generate_series(1, 500) i",
        "INSERT INTO k VALUES (1, 'new', 1)",
        "INSERT INTO k VALUES (1000, 'b3', 1)",
        "INSERT INTO k VALUES (NULL, 'n', 3)",
        "INSERT INTO k VALUES (1001, NULL, 3), (1002, NULL, 3)",
        "INSERT INTO k VALUES (1003, 'x', 5), (1004, 'x', 6)",
        "CREATE TABLE k2 (a int4, b int4, CONSTRAINT k2_pk PRIMARY KEY (a, b), PRIMARY KEY (b))",
        "CREATE TABLE k2 (a int4, b int4, CONSTRAINT k2_pk PRIMARY KEY (a, b), UNIQUE (b, a), UNIQUE (a, b))",
        "INSERT INTO k2 VALUES (1, 1), (1, 2), (2, 1)",
        "INSERT INTO k2 VALUES (2, 1)",
        "DROP INDEX k_pkey",
        "DROP INDEX k2_pk",
        "ALTER TABLE k2 DROP CONSTRAINT k2_pk",
        "ALTER TABLE k2 DROP CONSTRAINT k2_pk",
        "ALTER TABLE k2 DROP CONSTRAINT IF EXISTS k2_pk",
        "ALTER TABLE k2 ADD PRIMARY KEY (a)",
        "ALTER TABLE k2 ADD CONSTRAINT k2_b UNIQUE (b)",
        "CREATE TABLE k3 (a int4, b int4)",
        "INSERT INTO k3 VALUES (1, NULL), (2, 2)",
        "ALTER TABLE k3 ADD PRIMARY KEY (b)",
        "ALTER TABLE k3 ADD PRIMARY KEY (a)",
        "ALTER TABLE k3 ADD PRIMARY KEY (a)",
        "ALTER TABLE k3 ADD UNIQUE (a, b)",
        "INSERT INTO k3 VALUES (NULL, 3)",
        "INSERT INTO k3 VALUES (3, NULL), (4, NULL)",
        "INSERT INTO k3 VALUES (3, 9)",
        "CREATE TABLE k4 (a int4, PRIMARY KEY (a, a))",
        "CREATE TABLE k4 (a int4, PRIMARY KEY (z))",
        "CREATE TABLE k4 (a int4 UNIQUE, b int4 CONSTRAINT k4_named UNIQUE, c int4, UNIQUE (a, b), UNIQUE (b, c))",
        "CREATE TABLE k5 (k4_a_key int4 UNIQUE)",
        "CREATE TABLE k4_a_key (x int4)",
        "TRUNCATE k",
        "INSERT INTO k VALUES (1, 'b1', 1), (2, 'b2', 1)",
        "INSERT INTO k VALUES (2, 'b9', 1)",
    ];
    compare_script(&pg, &mut s, &script, true);
    for sql in [
        "SELECT * FROM k ORDER BY a",
        "SELECT * FROM k2 ORDER BY a, b",
        "SELECT * FROM k3 ORDER BY a, b",
        "SELECT count(*) FROM k WHERE a = 2",
    ] {
        assert_eq!(weft_lines(&mut s, sql).unwrap(), pg.query(sql).unwrap(), "{sql}");
    }
    let pg_indexes = pg.query("SELECT indexname FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1").unwrap();
    let mut weft_indexes: Vec<String> = db.catalog().indexes.keys().cloned().collect();
    weft_indexes.sort();
    assert_eq!(weft_indexes, pg_indexes);
    for index in &weft_indexes {
        s.execute(&format!("SELECT weft_index_check('{index}', heapallindexed => true)")).unwrap();
    }
}
