//! Join planning, checked through EXPLAIN (COSTS OFF): which side is built, where
//! conditions go (scan filter, hash key, join filter, filter after the join), the order of
//! an island of inner joins, semi and anti joins from WHERE subqueries, and the parallel
//! shapes the settings ask for. Results are compared with PostgreSQL in
//! crates/weft/tests/pg_oracle_join.rs; here only the plans.

use weft_sql::{Database, Datum, Session};

fn plan(s: &mut Session, sql: &str) -> String {
    s.execute(&format!("EXPLAIN (COSTS OFF) {sql}"))
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .rows
        .into_iter()
        .map(|r| match &r[0] {
            Datum::Text(t) => t.trim_end().to_string(),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn database() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    for sql in [
        "CREATE TABLE big AS SELECT i AS a, i % 100 AS g, md5(i::text) AS b FROM generate_series(1, 50000) i",
        "CREATE TABLE small AS SELECT i AS a, md5(i::text) AS b FROM generate_series(1, 500) i",
        "CREATE TABLE tiny AS SELECT i AS a FROM generate_series(1, 20) i",
        "ANALYZE",
        "SET max_parallel_workers_per_gather = 0",
    ] {
        s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    (dir, s)
}

#[test]
fn the_smaller_side_is_built_and_outer_joins_flip() {
    let (_dir, mut s) = database();
    let expected = "Hash Join\n  Hash Cond: (big.a = small.a)\n  ->  Seq Scan on big\n  ->  Hash\n        ->  Seq Scan on small";
    assert_eq!(plan(&mut s, "SELECT * FROM small JOIN big USING (a)"), expected);
    assert_eq!(plan(&mut s, "SELECT * FROM big JOIN small USING (a)"), expected);
    // small LEFT JOIN big: big is probed, small (the preserved side) built: a right join.
    let left = plan(&mut s, "SELECT * FROM small LEFT JOIN big ON small.a = big.a");
    assert!(left.starts_with("Hash Right Join\n  Hash Cond: (big.a = small.a)\n  ->  Seq Scan on big"), "{left}");
    let right = plan(&mut s, "SELECT * FROM small RIGHT JOIN big ON small.a = big.a");
    assert!(right.starts_with("Hash Left Join\n  Hash Cond: (big.a = small.a)\n  ->  Seq Scan on big"), "{right}");
    let full = plan(&mut s, "SELECT * FROM small FULL JOIN big ON small.a = big.a");
    assert!(full.starts_with("Hash Full Join"), "{full}");
}

#[test]
fn conditions_go_as_low_as_they_are_valid() {
    let (_dir, mut s) = database();
    // WHERE on the preserved side filters its scan; on the nullable side it waits.
    let p = plan(&mut s, "SELECT * FROM big LEFT JOIN small ON big.a = small.a WHERE big.g = 3 AND small.b IS NULL");
    assert!(p.contains("Filter: (small.b IS NULL)\n  ->  Seq Scan on big\n        Filter: (g = 3)"), "{p}");
    // ON on the nullable side filters the build side; on the preserved side it is a join filter.
    let p = plan(&mut s, "SELECT * FROM big LEFT JOIN small ON big.a = small.a AND small.a > 5 AND big.g = 1");
    assert!(p.contains("Join Filter: (big.g = 1)"), "{p}");
    assert!(p.contains("->  Seq Scan on small\n              Filter: (a > 5)"), "{p}");
    // Inner joins: everything one-sided goes down; cross-side non-equalities are a join filter.
    let p = plan(&mut s, "SELECT * FROM big, small WHERE big.a = small.a AND small.a < 9 AND big.g < small.a");
    assert!(p.contains("Join Filter: (big.g < small.a)"), "{p}");
    assert!(p.contains("Filter: (a < 9)"), "{p}");
}

#[test]
fn islands_probe_the_largest_and_build_connected_smallest_first() {
    let (_dir, mut s) = database();
    let p = plan(&mut s, "SELECT count(*) FROM tiny, small, big WHERE big.a = small.a AND small.a = tiny.a");
    let lines: Vec<&str> = p.lines().collect();
    let scans: Vec<&str> = lines.iter().filter(|l| l.contains("Seq Scan")).map(|l| l.trim()).collect();
    assert_eq!(scans, ["->  Seq Scan on big", "->  Seq Scan on small", "->  Seq Scan on tiny"], "{p}");
    // No equality to what is joined: a cross join, on no keys.
    let p = plan(&mut s, "SELECT count(*) FROM tiny t1, tiny t2");
    assert!(p.contains("Hash Join") && !p.contains("Hash Cond"), "{p}");
}

#[test]
fn an_island_is_not_probed_from_the_largest_item_when_that_order_multiplies_rows() {
    let (_dir, mut s) = database();
    // Probed from b2 (largest, with b1), the only item connected to it is b1, on a key of
    // 100 values: 25M rows before tiny's 20 rows could cut them. From b1, tiny comes
    // first and b2 meets 20 rows.
    let sql = "SELECT count(*) FROM big b1 JOIN big b2 ON b1.g = b2.g JOIN tiny ON tiny.a = b1.a";
    let p = plan(&mut s, sql);
    let scans: Vec<&str> = p.lines().filter(|l| l.contains("Seq Scan")).map(|l| l.trim()).collect();
    assert_eq!(scans, ["->  Seq Scan on big b1", "->  Seq Scan on tiny", "->  Seq Scan on big b2"], "{p}");
    let rows = s.execute(sql).unwrap().rows;
    assert_eq!(rows, vec![vec![Datum::Int8(20 * 500)]]);
    // The last join's rows are the island's in any order, and do not count: from b2 the
    // 25M rows of b1 JOIN b2 pass to a join with small, from b1 only 50k rows (as
    // estimated) pass to b2.
    let p = plan(&mut s, "SELECT count(*) FROM small JOIN big b1 ON small.a = b1.g JOIN big b2 ON b1.g = b2.g");
    let scans: Vec<&str> = p.lines().filter(|l| l.contains("Seq Scan")).map(|l| l.trim()).collect();
    assert_eq!(scans, ["->  Seq Scan on big b1", "->  Seq Scan on small", "->  Seq Scan on big b2"], "{p}");
}

#[test]
fn subqueries_become_semi_and_anti_joins() {
    let (_dir, mut s) = database();
    let p = plan(&mut s, "SELECT * FROM big WHERE EXISTS (SELECT 1 FROM small WHERE small.a = big.a AND small.b > 'a')");
    assert!(p.starts_with("Hash Semi Join\n  Hash Cond: (big.a = small.a)"), "{p}");
    assert!(p.contains("Filter: (b > 'a'::text)"), "{p}");
    let p = plan(&mut s, "SELECT * FROM big WHERE a NOT IN (SELECT a FROM small)");
    assert!(p.starts_with("Hash Anti Join"), "{p}");
    let p = plan(&mut s, "SELECT * FROM big WHERE NOT EXISTS (SELECT 1 FROM small WHERE small.a = big.g AND small.b < big.b)");
    assert!(p.contains("Hash Anti Join") && p.contains("Join Filter: (small.b < big.b)"), "{p}");
    let p = plan(&mut s, "SELECT * FROM big WHERE a IN (SELECT max(a) FROM small GROUP BY a % 3)");
    assert!(p.contains("Hash Semi Join") && p.contains("Aggregate"), "{p}");
    // Correlated NOT IN needs the whole subquery per outer row: a subplan filter, as in
    // PostgreSQL.
    let p = plan(&mut s, "SELECT * FROM big WHERE a NOT IN (SELECT a FROM small WHERE small.b = big.b)");
    assert!(p.contains("Filter: (NOT (SubPlan 1))") && p.contains("SubPlan 1") && !p.contains("Anti Join"), "{p}");
}

#[test]
fn semi_and_anti_joins_filter_the_one_relation_they_read() {
    let (_dir, mut s) = database();
    // The anti join reads big only: it probes big's rows before the join with small, not
    // the join's rows (a fuzzer query ran it over millions of joined rows).
    let p = plan(&mut s, "SELECT count(*) FROM big JOIN small ON big.g = small.a % 100 WHERE NOT EXISTS (SELECT 1 FROM tiny WHERE tiny.a = big.a)");
    assert!(p.contains("->  Hash Anti Join\n") && p.contains("Hash Cond: (big.a = tiny.a)"), "{p}");
    assert!(p[..p.find("Hash Anti Join").unwrap()].contains("Hash Join"), "{p}");
    let p = plan(&mut s, "SELECT count(*) FROM big JOIN small ON big.g = small.a % 100 WHERE big.a IN (SELECT a FROM tiny)");
    assert!(p[..p.find("Hash Semi Join").unwrap()].contains("Hash Join"), "{p}");
    // Not below an outer join that NULL-extends the relation: WHERE sees the NULLs.
    let p = plan(&mut s, "SELECT count(*) FROM small LEFT JOIN big ON big.a = small.a WHERE big.g NOT IN (SELECT a FROM tiny)");
    assert!(p.starts_with("Aggregate\n  ->  Hash Anti Join"), "{p}");
}

#[test]
fn not_is_null_in_where_makes_an_outer_join_inner() {
    let (_dir, mut s) = database();
    // WHERE NOT (x IS NULL) rejects the NULL-extended rows as x IS NOT NULL does (a fuzzer
    // query kept three outer joins, and ran 12 s where PostgreSQL took 30 ms).
    for condition in ["big.g IS NOT NULL", "NOT (big.g IS NULL)"] {
        let p = plan(&mut s, &format!("SELECT count(*) FROM small LEFT JOIN big ON big.a = small.a WHERE {condition}"));
        assert!(p.contains("Hash Join") && !p.contains("Left Join") && !p.contains("Right Join"), "{condition}: {p}");
    }
    // Below another NOT it proves nothing: NOT NOT (x IS NULL) keeps the outer join.
    let p = plan(&mut s, "SELECT count(*) FROM small LEFT JOIN big ON big.a = small.a WHERE NOT NOT (big.g IS NULL)");
    assert!(p.contains("Left Join") || p.contains("Right Join"), "{p}");
}

#[test]
fn a_constant_outer_join_condition_filters_the_nullable_side() {
    let (_dir, mut s) = database();
    // `ON false` matched nothing by evaluating false for every pair (big × small); now
    // it empties the nullable side before the join, and every preserved row comes out
    // NULL-extended.
    let p = plan(&mut s, "SELECT count(*) FROM big LEFT JOIN small ON false");
    assert!(p.contains("Filter: false") && !p.contains("Join Filter"), "{p}");
    let p = plan(&mut s, "SELECT count(*) FROM small RIGHT JOIN big ON 1 = 2 AND small.a = big.a");
    assert!(p.contains("Filter: false") && !p.contains("Join Filter"), "{p}");
    for (sql, count) in [
        ("SELECT count(*), count(small.a) FROM big LEFT JOIN small ON false", "50000|0"),
        ("SELECT count(*), count(small.a) FROM small RIGHT JOIN big ON 1 = 2 AND small.a = big.a", "50000|0"),
        ("SELECT count(*), count(small.a) FROM big LEFT JOIN small ON 1 = 1 AND small.a = big.a", "50000|500"),
    ] {
        let result = s.execute(sql).unwrap();
        let row: Vec<String> = result.rows[0].iter().map(|d| d.to_pg_text().unwrap_or_default()).collect();
        assert_eq!(row.join("|"), count, "{sql}");
    }
}

#[test]
fn parallel_shapes_follow_the_settings() {
    let (_dir, mut s) = database();
    for sql in ["SET max_parallel_workers_per_gather = 2", "SET min_parallel_table_scan_size = 0", "SET parallel_hash_min_inner_rows = 1000"] {
        s.execute(sql).unwrap();
    }
    let q = "SELECT count(*) FROM big JOIN small USING (a)";
    // 500 build rows: below parallel_hash_min_inner_rows, every participant builds its copy.
    let p = plan(&mut s, q);
    assert!(p.contains("->  Hash Join") && p.contains("Parallel Seq Scan on big") && p.contains("->  Seq Scan on small"), "{p}");
    s.execute("SET parallel_hash_min_inner_rows = 0").unwrap();
    let p = plan(&mut s, q);
    assert!(p.contains("Parallel Hash Join") && p.contains("Parallel Hash\n") && p.contains("Parallel Seq Scan on small"), "{p}");
    // Right and full joins need the shared table; without parallel hash they run serially.
    s.execute("SET enable_parallel_hash = off").unwrap();
    let p = plan(&mut s, "SELECT count(*) FROM big FULL JOIN small USING (a)");
    assert!(!p.contains("Gather") && p.contains("Hash Full Join"), "{p}");
    let p = plan(&mut s, q);
    assert!(p.contains("Gather") && !p.contains("Parallel Hash"), "{p}");
}

#[test]
fn a_probe_pruned_by_a_zone_map_is_sized_by_the_blocks_it_reads() {
    let (_dir, mut s) = database();
    // big: 50k rows in key order (~450 blocks); small's keys 1..500 lie in its first few.
    s.execute("SET max_parallel_workers_per_gather = 2").unwrap();
    let q = "SELECT count(*) FROM big JOIN small USING (a)";
    // ANALYZE read big whole and left its zone maps: the probe is sized by them at once.
    let analyzed = plan(&mut s, q);
    assert!(!analyzed.contains("Gather") && analyzed.starts_with("Aggregate\n  ->  Hash Join"), "{analyzed}");
    // A write forgets the maps: the whole table counts again ...
    s.execute("INSERT INTO big VALUES (50001, 1, 'x')").unwrap();
    let before = plan(&mut s, q);
    assert!(before.contains("Gather") && before.contains("Parallel Hash Join"), "{before}");
    // ... until the first probe-side scan builds big's zone map on `a`.
    let count = s.execute(q).unwrap().rows;
    assert_eq!(count, vec![vec![Datum::Int8(500)]]);
    let after = plan(&mut s, q);
    assert!(!after.contains("Gather") && after.starts_with("Aggregate\n  ->  Hash Join"), "{after}");
    // A build side whose keys span the table reads every block: parallel again.
    let q = "SELECT count(*) FROM big b1 JOIN big b2 USING (a)";
    s.execute(q).unwrap();
    let wide = plan(&mut s, q);
    assert!(wide.contains("Gather"), "{wide}");
    // A write forgets the map: the full table counts again.
    s.execute("INSERT INTO big VALUES (1, 1, 'x')").unwrap();
    let written = plan(&mut s, "SELECT count(*) FROM big JOIN small USING (a)");
    assert!(written.contains("Gather"), "{written}");
}
