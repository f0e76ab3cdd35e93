//! Index scans against sequential scans: random predicates (=, <, <=, >, >=, BETWEEN, IN,
//! NOT IN, IS [NOT] NULL, cross-type constants, conjunctions, with NULLs in the data) and
//! ORDER BY ... LIMIT over ASC, DESC, NULLS FIRST, multi-column and text indexes give the
//! same rows as the same query with index scans disabled, with and without ANALYZE
//! statistics; the plans do use the indexes, and their shapes follow the statistics; rows
//! of a failed INSERT never appear; EXPLAIN prints PostgreSQL's index lines.

use weft_sql::{Database, Datum, Session};

use super::common;

use common::Rng;

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Datum>> {
    s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}")).rows
}

fn plan(s: &mut Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN {sql}"))
        .into_iter()
        .map(|r| match &r[0] {
            Datum::Text(t) => t.clone(),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Rows in a canonical order, for comparing queries without ORDER BY.
fn sorted(mut r: Vec<Vec<Datum>>) -> Vec<String> {
    let mut out: Vec<String> = r.drain(..).map(|row| format!("{row:?}")).collect();
    out.sort();
    out
}

fn setup(s: &mut Session) {
    s.execute("CREATE TABLE r (a int, b bigint, c text, d float8)").unwrap();
    s.execute(
        "INSERT INTO r SELECT CASE WHEN i % 31 = 0 THEN NULL ELSE hashint4(i) % 2000 END, \
         CASE WHEN i % 37 = 0 THEN NULL ELSE i END, \
         CASE WHEN i % 41 = 0 THEN NULL ELSE 'v' || (hashint4(i * 3) % 300) END, \
         CASE WHEN i % 43 = 0 THEN NULL ELSE hashint4(i * 5) / 7.0 END \
         FROM generate_series(1, 40000) i",
    )
    .unwrap();
    s.execute("CREATE INDEX ra ON r (a)").unwrap();
    s.execute("CREATE INDEX rb ON r (b DESC)").unwrap();
    s.execute("CREATE INDEX rca ON r (c NULLS FIRST, a DESC)").unwrap();
    s.execute("CREATE INDEX rd ON r (d DESC NULLS LAST)").unwrap();
    // Rows added after the build: their entries need the heap check.
    s.execute("INSERT INTO r SELECT hashint4(i) % 2000, i, 'v' || (i % 300), i / 3.0 FROM generate_series(40001, 42000) i").unwrap();
}

fn predicate(rng: &mut Rng) -> String {
    let op = ["=", "<", "<=", ">", ">="][rng.below(5) as usize];
    match rng.below(17) {
        9 => format!("a IS NULL AND b {op} {}", rng.below(43000)),
        10 => format!("a IS NOT NULL AND a {op} {}", rng.below(2200) as i64 - 1100),
        // Cross-type constants: int4 against numeric, int8 and float8.
        11 => format!("a {op} {}.{}", rng.below(2200) as i64 - 1100, rng.below(10)),
        12 => format!("a {op} {}", [5_000_000_000i64, -5_000_000_000, 2_147_483_647, -2_147_483_648][rng.below(4) as usize]),
        13 => format!("a {op} {}::float8", (rng.below(4400) as f64 - 2200.0) / 2.0),
        14 => format!("c IN ('v{}', 'v{}', 'nope') AND a {op} {}", rng.below(300), rng.below(300), rng.below(2000) as i64 - 1000),
        15 => format!("a NOT IN ({}, {}) AND a BETWEEN {} AND {}", rng.below(100), rng.below(100), rng.below(50), 50 + rng.below(100)),
        16 => format!("d IS NULL OR d {op} 0"),
        0 => format!("a {op} {}", rng.below(2200) as i64 - 1100),
        1 => format!("{} {op} a", rng.below(2200) as i64 - 1100),
        2 => format!("b {op} {}", rng.below(43000)),
        3 => format!("c {op} 'v{}'", rng.below(300)),
        4 => format!("d {op} {}", (rng.below(600_000_000) as i64 - 300_000_000)),
        5 => {
            let lo = rng.below(2000) as i64 - 1000;
            format!("a BETWEEN {lo} AND {}", lo + rng.below(30) as i64)
        }
        6 => format!("a IN ({}, {}, {}, NULL)", rng.below(2000) as i64 - 1000, rng.below(2000) as i64 - 1000, rng.below(50)),
        7 => format!("c = 'v{}' AND a {op} {}", rng.below(300), rng.below(2000) as i64 - 1000),
        _ => format!("b BETWEEN {0} AND {1} AND a IS NOT NULL", rng.below(42000), rng.below(42000)),
    }
}

/// Run `n` random queries with and without index scans (with `force`, sequential scans
/// are disabled in the first run); returns how many used an index.
fn compare_random_queries(s: &mut Session, rng: &mut Rng, n: usize, force: bool) -> usize {
    let mut used_index = 0;
    for _ in 0..n {
        let p = predicate(rng);
        let select = ["*", "a", "b", "c, a", "count(*)", "a, d"][rng.below(6) as usize];
        let sql = format!("SELECT {select} FROM r WHERE {p}");
        s.execute("SET enable_indexscan = on; SET enable_indexonlyscan = on").unwrap();
        s.execute(if force { "SET enable_seqscan = off" } else { "SET enable_seqscan = on" }).unwrap();
        if plan(s, &sql).contains("Index") {
            used_index += 1;
        }
        let with_index = sorted(rows(s, &sql));
        s.execute("SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_seqscan = on").unwrap();
        assert!(!plan(s, &sql).contains("Index"));
        let without = sorted(rows(s, &sql));
        assert_eq!(with_index, without, "{sql}");
    }
    s.execute("SET enable_indexscan = on; SET enable_indexonlyscan = on").unwrap();
    used_index
}

#[test]
fn index_scans_return_what_sequential_scans_return() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    setup(&mut s);
    let mut rng = Rng(0xdead_beef_1234);
    // Without statistics (the planner probes the indexes), then with them.
    let used = compare_random_queries(&mut s, &mut rng, 300, false);
    assert!(used > 100, "only {used} of 300 queries used an index without statistics");
    s.execute("ANALYZE r").unwrap();
    let used = compare_random_queries(&mut s, &mut rng, 300, false);
    assert!(used > 100, "only {used} of 300 queries used an index with statistics");
    // Index plans wherever one applies, however unselective.
    let used = compare_random_queries(&mut s, &mut rng, 200, true);
    assert!(used > 150, "only {used} of 200 queries used an index with enable_seqscan off");
}

#[test]
fn order_by_limit_through_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    setup(&mut s);
    let queries = [
        "SELECT a, b FROM r ORDER BY a LIMIT 7",
        "SELECT a, b FROM r ORDER BY a DESC LIMIT 7",
        "SELECT a FROM r ORDER BY a DESC NULLS FIRST LIMIT 7",
        "SELECT d FROM r ORDER BY d NULLS FIRST LIMIT 4",
        "SELECT b FROM r ORDER BY b DESC LIMIT 5 OFFSET 3",
        "SELECT b FROM r ORDER BY b LIMIT 5",
        "SELECT c, a FROM r ORDER BY c NULLS FIRST, a DESC LIMIT 9",
        "SELECT c, a FROM r ORDER BY c DESC NULLS LAST, a LIMIT 9",
        "SELECT d FROM r ORDER BY d DESC NULLS LAST LIMIT 4",
        "SELECT a, b FROM r WHERE a > 100 ORDER BY a LIMIT 6",
        "SELECT a, b FROM r WHERE a BETWEEN 5 AND 9 ORDER BY a DESC",
        "SELECT a FROM r WHERE c = 'v7' ORDER BY c NULLS FIRST, a DESC",
    ];
    for sql in queries {
        s.execute("SET enable_indexscan = on; SET enable_indexonlyscan = on").unwrap();
        let shape = plan(&mut s, sql);
        assert!(shape.contains("Index") && !shape.contains("Sort"), "{sql}:\n{shape}");
        let with_index = rows(&mut s, sql);
        s.execute("SET enable_indexscan = off; SET enable_indexonlyscan = off").unwrap();
        let shape = plan(&mut s, sql);
        assert!(shape.contains("Sort"), "{sql}:\n{shape}");
        // Ties in the sort key may come in any order: compare the keys' sequence.
        let without = rows(&mut s, sql);
        assert_eq!(with_index.len(), without.len(), "{sql}");
        let key = |r: &Vec<Datum>| format!("{:?}", r[0]);
        assert_eq!(with_index.iter().map(key).collect::<Vec<_>>(), without.iter().map(key).collect::<Vec<_>>(), "{sql}");
    }
}

#[test]
fn plan_shapes_follow_selectivity() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    setup(&mut s);
    assert!(plan(&mut s, "SELECT * FROM r WHERE b = 77").starts_with("Index Scan using rb on r"));
    assert!(plan(&mut s, "SELECT b FROM r WHERE b < 50").starts_with("Index Only Scan Backward using rb on r") || plan(&mut s, "SELECT b FROM r WHERE b < 50").starts_with("Index Only Scan using rb on r"));
    assert!(plan(&mut s, "SELECT * FROM r WHERE b > 100").starts_with("Seq Scan on r"));
    let p = plan(&mut s, "SELECT * FROM r WHERE a = 5 AND d > 0");
    assert!(p.contains("Index Cond: (a = 5)") && p.contains("Filter: (d > '0'::double precision)") || p.contains("Filter: (d > "), "{p}");
}

#[test]
fn rows_of_a_failed_insert_never_show_through_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE f (a int NOT NULL, b int)").unwrap();
    s.execute("INSERT INTO f SELECT i, i FROM generate_series(1, 20000) i").unwrap();
    s.execute("CREATE INDEX fa ON f (a)").unwrap();
    s.execute("CREATE UNIQUE INDEX fb ON f (b)").unwrap();
    // Index maintenance adds the rows to `fa`, then finds a duplicate for `fb`: the
    // statement fails with entries in `fa` that point to its (invisible) rows.
    let err = s.execute("INSERT INTO f SELECT 100000 + i, i FROM generate_series(1, 3000) i").unwrap_err();
    assert_eq!(err.sqlstate, weft_sql::SqlState::UNIQUE_VIOLATION);
    for sql in ["SELECT count(*) FROM f WHERE a > 100000", "SELECT count(a) FROM f WHERE a > 100000 AND a < 200000"] {
        assert!(plan(&mut s, sql).contains("Index"), "{sql}");
        assert_eq!(rows(&mut s, sql)[0][0], Datum::Int8(0), "{sql}");
    }
    s.execute("SELECT weft_index_check('fa', heapallindexed => true)").unwrap();
}

fn explain_costs_off(s: &mut Session, sql: &str) -> String {
    plan(s, &format!("(COSTS OFF) {sql}"))
}

#[test]
fn analyze_gathers_column_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE st (u int, few int, t text, n int)").unwrap();
    s.execute(
        "INSERT INTO st SELECT i, i % 5, 'x' || (i % 50), CASE WHEN i % 4 = 0 THEN NULL ELSE i END \
         FROM generate_series(1, 20000) i",
    )
    .unwrap();
    assert!(db.catalog().statistics.is_empty());
    assert_eq!(s.execute("ANALYZE st").unwrap().tag, "ANALYZE");
    let catalog = db.catalog();
    let table = catalog.table("st").unwrap();
    let stats = catalog.table_stats(table).expect("statistics after ANALYZE");
    assert_eq!(stats.rows, 20000);
    assert_eq!(stats.sample_rows, 20000);
    let [u, few, t, n] = &stats.columns[..] else { panic!("four columns") };
    // Unique, physically ordered: no MCVs, a full histogram, correlation 1.
    assert_eq!(u.n_distinct, -1.0);
    assert!(u.most_common_vals.is_empty());
    assert_eq!(u.histogram_bounds.len(), 101);
    assert!((u.correlation.unwrap() - 1.0).abs() < 1e-9);
    // Five values, all of them most common.
    assert_eq!(few.n_distinct, 5.0);
    assert_eq!(few.most_common_vals.len(), 5);
    assert!(few.histogram_bounds.is_empty());
    assert!(few.most_common_freqs.iter().all(|f| (f - 0.2).abs() < 1e-9));
    assert_eq!(t.n_distinct, 50.0);
    // 'x0' .. 'x49': two or three bytes and a one-byte length.
    assert!((t.avg_width - 3.8).abs() < 1e-9, "{}", t.avg_width);
    assert!((n.null_frac - 0.25).abs() < 1e-9);
    assert!((n.n_distinct + 0.75).abs() < 1e-9, "{}", n.n_distinct);
    // Errors as PostgreSQL's; a bare ANALYZE covers every table; statistics survive a reopen.
    let e = s.execute("ANALYZE st (nope)").unwrap_err();
    assert_eq!(e.message, "column \"nope\" of relation \"st\" does not exist");
    assert_eq!(s.execute("ANALYZE nope").unwrap_err().message, "relation \"nope\" does not exist");
    s.execute("CREATE TABLE other (x int)").unwrap();
    s.execute("ANALYZE").unwrap();
    assert_eq!(db.catalog().statistics.len(), 2);
    s.execute("DROP TABLE other").unwrap();
    s.execute("ANALYZE st (u, few)").unwrap();
    assert_eq!(db.catalog().statistics.len(), 1, "a dropped table's statistics go with the next ANALYZE");
    drop(s);
    drop(db);
    let db = Database::open(dir.path(), &[]).unwrap();
    let catalog = db.catalog();
    assert_eq!(catalog.table_stats(catalog.table("st").unwrap()).map(|s| s.columns.len()), Some(4));
}

/// The plan shapes the statistics lead to: a selective equality uses the index, a
/// range over most of the table does not, the index answers alone where it can, and an
/// ORDER BY ... LIMIT reads the index in order.
#[test]
fn plan_shapes_after_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE p (id int NOT NULL, a int, skew int, t text)").unwrap();
    s.execute(
        "INSERT INTO p SELECT i, hashint4(i) % 10000, CASE WHEN i % 10 = 0 THEN i ELSE 1 END, md5(i::text) \
         FROM generate_series(1, 100000) i",
    )
    .unwrap();
    s.execute("CREATE UNIQUE INDEX p_id ON p (id)").unwrap();
    s.execute("CREATE INDEX p_a ON p (a)").unwrap();
    s.execute("CREATE INDEX p_skew ON p (skew)").unwrap();
    s.execute("CREATE INDEX p_t ON p (t DESC)").unwrap();
    s.execute("ANALYZE p").unwrap();
    s.execute("SET max_parallel_workers_per_gather = 0").unwrap();
    let shape = |s: &mut Session, sql: &str| explain_costs_off(s, sql);
    assert_eq!(shape(&mut s, "SELECT * FROM p WHERE a = 42"), "Index Scan using p_a on p\n  Index Cond: (a = 42)");
    assert_eq!(shape(&mut s, "SELECT * FROM p WHERE a > -9000"), "Seq Scan on p\n  Filter: (a > '-9000'::integer)");
    assert_eq!(shape(&mut s, "SELECT a FROM p WHERE a < -9990"), "Index Only Scan using p_a on p\n  Index Cond: (a < '-9990'::integer)");
    assert_eq!(shape(&mut s, "SELECT * FROM p ORDER BY a LIMIT 5"), "Limit\n  ->  Index Scan using p_a on p");
    assert_eq!(shape(&mut s, "SELECT id FROM p ORDER BY id DESC LIMIT 5"), "Limit\n  ->  Index Only Scan Backward using p_id on p");
    // The MCV makes `skew = 1` (90 % of rows) a sequential scan, a rare value an index scan.
    assert_eq!(shape(&mut s, "SELECT * FROM p WHERE skew = 1"), "Seq Scan on p\n  Filter: (skew = 1)");
    assert_eq!(shape(&mut s, "SELECT * FROM p WHERE skew = 20"), "Index Scan using p_skew on p\n  Index Cond: (skew = 20)");
    // A DESC index: `t > x` is its upper end.
    assert_eq!(shape(&mut s, "SELECT t FROM p WHERE t > 'fff'"), "Index Only Scan using p_t on p\n  Index Cond: (t > 'fff'::text)");
    assert_eq!(
        shape(&mut s, "SELECT * FROM p WHERE a BETWEEN 5 AND 7 AND t < 'c'"),
        "Index Scan using p_a on p\n  Index Cond: ((a >= 5) AND (a <= 7))\n  Filter: (t < 'c'::text)"
    );
    assert_eq!(
        shape(&mut s, "SELECT * FROM p WHERE a IN (1, 2, 3)"),
        "Index Scan using p_a on p\n  Index Cond: (a = ANY ('{1,2,3}'::integer[]))"
    );
    // The estimates: one row for a unique equality, about the MCV frequency for skew.
    let one = plan(&mut s, "SELECT * FROM p WHERE id = 77");
    assert!(one.starts_with("Index Scan using p_id on p") && one.contains(" rows=1 "), "{one}");
    // (The sample is 30000 of the 100000 rows.)
    let skew = plan(&mut s, "SELECT * FROM p WHERE skew = 1");
    let estimate: f64 = skew.split(" rows=").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    assert!((88_000.0..92_000.0).contains(&estimate), "{skew}");
    // enable_* settings steer as in PostgreSQL.
    s.execute("SET enable_indexonlyscan = off").unwrap();
    assert_eq!(shape(&mut s, "SELECT a FROM p WHERE a < -9990"), "Index Scan using p_a on p\n  Index Cond: (a < '-9990'::integer)");
    s.execute("SET enable_indexscan = off").unwrap();
    assert_eq!(shape(&mut s, "SELECT * FROM p WHERE a = 42"), "Seq Scan on p\n  Filter: (a = 42)");
    s.execute("RESET enable_indexscan; RESET enable_indexonlyscan; SET enable_seqscan = off").unwrap();
    assert_eq!(shape(&mut s, "SELECT * FROM p WHERE a > -9000"), "Index Scan using p_a on p\n  Index Cond: (a > '-9000'::integer)");
}

#[test]
fn explain_analyze_counts_heap_fetches() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE h (a int, b int)").unwrap();
    s.execute("INSERT INTO h SELECT i, i FROM generate_series(1, 50000) i").unwrap();
    s.execute("CREATE INDEX ha ON h (a)").unwrap();
    // Entries after the build carry the heap-check bit.
    s.execute("INSERT INTO h SELECT i, i FROM generate_series(1, 30) i").unwrap();
    s.execute("SET max_parallel_workers_per_gather = 0").unwrap();
    let out = plan(&mut s, "(ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a FROM h WHERE a < 21");
    assert_eq!(
        out,
        "Index Only Scan using ha on h (actual rows=40 loops=1)\n  Index Cond: (a < 21)\n  Heap Fetches: 20"
    );
    let out = plan(&mut s, "(ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM h WHERE a < 21 AND b > 10");
    assert_eq!(
        out,
        "Index Scan using ha on h (actual rows=20 loops=1)\n  Index Cond: (a < 21)\n  Filter: (b > 10)\n  Rows Removed by Filter: 20"
    );
}

/// A statement that fails half way (a NOT NULL violation after many rows) leaves rows in
/// the heap that no snapshot sees; an index built or maintained afterwards must not show them.
#[test]
fn rows_of_a_statement_failing_half_way_stay_invisible() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE nn (a int NOT NULL, b int)").unwrap();
    s.execute("INSERT INTO nn SELECT i, i FROM generate_series(1, 20000) i").unwrap();
    s.execute("CREATE INDEX nn_a ON nn (a)").unwrap();
    s.execute("CREATE INDEX nn_b ON nn (b)").unwrap();
    let err = s
        .execute("INSERT INTO nn SELECT CASE WHEN i = 15000 THEN NULL ELSE 100000 + i END, i FROM generate_series(1, 20000) i")
        .unwrap_err();
    assert_eq!(err.sqlstate, weft_sql::SqlState::NOT_NULL_VIOLATION);
    s.execute("INSERT INTO nn VALUES (100001, -1)").unwrap();
    for analyzed in [false, true] {
        for (sql, expected) in [
            ("SELECT count(*) FROM nn WHERE a > 100000", 1),
            ("SELECT count(a) FROM nn WHERE a BETWEEN 100000 AND 200000", 1),
            ("SELECT count(*) FROM nn WHERE b < 1", 1),
            ("SELECT count(*) FROM nn WHERE b BETWEEN 14001 AND 14140", 140),
        ] {
            for force in ["SET enable_seqscan = off", "SET enable_seqscan = on"] {
                s.execute(force).unwrap();
                assert_eq!(rows(&mut s, sql)[0][0], Datum::Int8(expected), "{sql} ({force}, analyzed: {analyzed})");
            }
            assert!(plan(&mut s, sql).contains("Index"), "{sql}");
        }
        let through_index = rows(&mut s, "SELECT a, b FROM nn WHERE a > 99999 ORDER BY a LIMIT 3");
        assert_eq!(through_index, vec![vec![Datum::Int4(100001), Datum::Int4(-1)]]);
        s.execute("RESET enable_seqscan; ANALYZE nn").unwrap();
    }
    s.execute("SELECT weft_index_check('nn_a', heapallindexed => true)").unwrap();
}

/// `sql` with index plans preferred (sequential scans off) gives the rows it gives with
/// index scans off; returns the index plan.
fn same_rows_with_and_without_indexes(s: &mut Session, sql: &str, analyzed: bool) -> String {
    s.execute("SET enable_seqscan = off; SET enable_indexscan = on; SET enable_indexonlyscan = on").unwrap();
    let shape = plan(s, sql);
    let with_index = sorted(rows(s, sql));
    s.execute("SET enable_seqscan = on; SET enable_indexscan = off; SET enable_indexonlyscan = off").unwrap();
    let without = sorted(rows(s, sql));
    assert_eq!(with_index, without, "{sql} (analyzed: {analyzed})\n{shape}");
    shape
}

#[test]
fn booleans_cross_types_and_null_tests_use_the_index_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE x (i int, f bool, k bigint)").unwrap();
    s.execute(
        "INSERT INTO x SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE g - 2500 END, \
         CASE WHEN g % 5 = 0 THEN NULL ELSE g % 50 = 0 END, g::int8 * 3000000000 \
         FROM generate_series(1, 5000) g",
    )
    .unwrap();
    s.execute("CREATE INDEX x_i ON x (i DESC NULLS LAST)").unwrap();
    s.execute("CREATE INDEX x_f ON x (f)").unwrap();
    s.execute("CREATE INDEX x_k ON x (k)").unwrap();
    let queries = [
        "SELECT i FROM x WHERE i < 2.5",
        "SELECT i FROM x WHERE i <= -2.5",
        "SELECT i FROM x WHERE i > 2.5 AND i < 7.000",
        "SELECT i FROM x WHERE i = 2.5",
        "SELECT i FROM x WHERE i = 3.0",
        "SELECT i FROM x WHERE i < 5000000000",
        "SELECT i FROM x WHERE i > 5000000000",
        "SELECT i FROM x WHERE i >= -5000000000",
        "SELECT i FROM x WHERE i < 'NaN'::float8",
        "SELECT i FROM x WHERE i >= 'Infinity'::float8",
        "SELECT i FROM x WHERE i > -3.5::float8 AND i <= 4::float8",
        "SELECT i FROM x WHERE i IS NULL",
        "SELECT i FROM x WHERE i IS NOT NULL AND i > 2490",
        "SELECT i FROM x WHERE i IN (1, 2.5, 7, NULL, 5000000000)",
        "SELECT i FROM x WHERE i = NULL",
        "SELECT i, f FROM x WHERE f",
        "SELECT i, f FROM x WHERE NOT f AND i > 2400",
        "SELECT i, f FROM x WHERE f IS NULL AND i < -2400",
        "SELECT i, f FROM x WHERE f = true",
        "SELECT k FROM x WHERE k = 3000000000",
        "SELECT k FROM x WHERE k < 9000000000.5",
        "SELECT k FROM x WHERE k > 1.5e13",
        "SELECT i FROM x WHERE -i > 2490",
        "SELECT i FROM x WHERE i + 0 = 5",
    ];
    for analyzed in [false, true] {
        for sql in queries {
            same_rows_with_and_without_indexes(&mut s, sql, analyzed);
        }
        s.execute("ANALYZE x").unwrap();
    }
    s.execute("SET enable_seqscan = off; SET enable_indexscan = on").unwrap();
    assert!(plan(&mut s, "SELECT i FROM x WHERE i < 2.5").contains("Index Cond: ((i)::numeric < 2.5)"));
    assert!(plan(&mut s, "SELECT i FROM x WHERE i IS NULL").contains("Index Cond: (i IS NULL)"));
}

/// Conditions on index columns after the bounded one (checked on each entry's bytes when
/// the value is fixed for the scan, on decoded keys otherwise), with constants of the
/// key's type and of others, NULL, either operand order, and outer-row parameters of a
/// LATERAL item: the rows of a sequential scan.
#[test]
fn conditions_on_later_key_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE k (a int, b bigint, c text, d float8, e date, n numeric)").unwrap();
    s.execute(
        "INSERT INTO k SELECT g % 50, CASE WHEN g % 7 = 0 THEN NULL ELSE (g * 7919) % 1000 END, \
         CASE WHEN g % 11 = 0 THEN NULL ELSE 'w' || (g * 31) % 97 END, \
         CASE WHEN g % 13 = 0 THEN NULL WHEN g % 101 = 0 THEN 'NaN'::float8 WHEN g % 103 = 0 THEN -0.0::float8 \
              ELSE ((g * 17) % 400) / 4.0 END, \
         CASE WHEN g % 17 = 0 THEN NULL ELSE DATE '2020-01-01' + (g * 13) % 900 END, \
         CASE WHEN g % 19 = 0 THEN NULL ELSE ((g * 3) % 500) / 8.0 END \
         FROM generate_series(1, 6000) g",
    )
    .unwrap();
    s.execute("CREATE INDEX k_all ON k (a, b, c, d, e, n)").unwrap();
    s.execute("CREATE TABLE o (x int, y bigint, z text)").unwrap();
    s.execute("INSERT INTO o SELECT g % 60 - 5, (g * 37) % 1100 - 50, 'w' || g % 120 FROM generate_series(1, 80) g").unwrap();
    s.execute("INSERT INTO o VALUES (NULL, NULL, NULL)").unwrap();
    let queries = [
        "SELECT a, b FROM k WHERE a > 40 AND b = 300",
        "SELECT a, b FROM k WHERE a < 10 AND b < 200::int4",
        "SELECT a, b FROM k WHERE a > 5 AND 500 <= b",
        "SELECT a, b FROM k WHERE a >= 0 AND b <> 17 AND b > 990",
        "SELECT a, b FROM k WHERE a >= 0 AND b = NULL",
        "SELECT a, b FROM k WHERE a >= 0 AND b > 500.5",
        "SELECT * FROM k WHERE a >= 20 AND c = 'w5'",
        "SELECT a, c FROM k WHERE a < 30 AND c > 'w90' AND c <= 'w95'",
        "SELECT a, c FROM k WHERE a < 30 AND 'w1' >= c",
        "SELECT a, d FROM k WHERE a > 10 AND d > 99.0",
        "SELECT a, d FROM k WHERE a > 10 AND d = 'NaN'",
        "SELECT a, d FROM k WHERE a > 10 AND d = 0",
        "SELECT a, d FROM k WHERE a > 10 AND d < 1",
        "SELECT a, e FROM k WHERE a > 25 AND e >= DATE '2022-01-01'",
        "SELECT a, e FROM k WHERE a > 25 AND e < '2020-02-01'",
        "SELECT a, n FROM k WHERE a > 25 AND n > 60",
        "SELECT a, n FROM k WHERE a > 25 AND n = 12.5 AND b > 100",
        "SELECT a, b, c FROM k WHERE a BETWEEN 3 AND 9 AND b + 0 > 100 AND c < 'w50'",
        "SELECT o.x, s.b FROM o, LATERAL (SELECT b FROM k WHERE k.a > 3 AND k.b = o.x * 20) s",
        "SELECT o.y, s.a FROM o, LATERAL (SELECT a FROM k WHERE k.a >= 0 AND k.b = o.y ORDER BY a LIMIT 2) s",
        "SELECT o.z, s.c FROM o LEFT JOIN LATERAL (SELECT c FROM k WHERE k.a < 45 AND k.c = o.z LIMIT 1) s ON true",
        "SELECT o.x, s.n FROM o, LATERAL (SELECT count(*) AS n FROM k WHERE k.a > 1 AND k.b > o.y AND k.d < o.x) s",
        "SELECT o.x, (SELECT count(*) FROM k WHERE k.a > 0 AND k.b < o.x::int8 * 15) FROM o",
    ];
    for analyzed in [false, true] {
        for sql in queries {
            let shape = same_rows_with_and_without_indexes(&mut s, sql, analyzed);
            assert!(shape.contains("k_all"), "{sql}\n{shape}");
        }
        s.execute("ANALYZE k").unwrap();
    }
}
