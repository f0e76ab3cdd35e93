//! ORDER BY ... LIMIT on an integer column skips the blocks whose zone map says they
//! cannot beat the rows the bounded sort keeps. Every answer is compared with the same
//! ORDER BY without LIMIT (an unbounded sort, which prunes nothing) cut to the same rows,
//! before and after the zone map exists, after writes that must make the scan forget it,
//! serial and parallel; and the pruning is checked to happen (the scan's actual rows).
//! Also: a bounded sort on text whose abbreviated keys are abandoned midway.

use weft_sql::{Database, Session};

fn rows(s: &mut Session, sql: &str) -> Vec<String> {
    s.execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .rows
        .iter()
        .map(|row| row.iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join("|"))
        .collect()
}

/// The bounded query's rows against the unbounded query's rows `offset..offset + limit`.
fn check(s: &mut Session, order_by: &str, limit: usize, offset: usize) {
    let bounded = rows(s, &format!("SELECT * FROM t ORDER BY {order_by} LIMIT {limit} OFFSET {offset}"));
    let all = rows(s, &format!("SELECT * FROM t ORDER BY {order_by}"));
    let expected: Vec<String> = all.into_iter().skip(offset).take(limit).collect();
    assert_eq!(bounded, expected, "ORDER BY {order_by} LIMIT {limit} OFFSET {offset}");
}

/// Rows the top-N query's scan returned, from EXPLAIN ANALYZE.
fn scanned_rows(s: &mut Session, sql: &str) -> u64 {
    let plan = rows(s, &format!("EXPLAIN ANALYZE {sql}"));
    let scan = plan.iter().find(|l| l.contains("Seq Scan")).unwrap_or_else(|| panic!("no scan in {plan:?}"));
    let after = scan.split("actual time=").nth(1).expect("actual figures");
    let rows = after.split("rows=").nth(1).expect("rows").split_whitespace().next().unwrap();
    rows.parse().unwrap()
}

const QUERIES: &[(&str, usize, usize)] = &[
    ("a, c", 10, 0),
    ("a, c", 7, 30),
    ("a DESC NULLS LAST, c", 10, 0),
    ("a DESC NULLS LAST, c", 1, 5),
    ("b, c", 25, 0),
    ("b DESC NULLS LAST, c", 3, 0),
    // Text: pruned by 8-byte prefixes; `d` has long common prefixes and NULLs.
    ("c", 10, 0),
    ("c DESC NULLS LAST", 4, 3),
    ("d, c", 6, 0),
    ("d DESC NULLS LAST, c", 6, 2),
    // Not prunable (NULLs first): answered the ordinary way.
    ("a DESC, c", 10, 0),
    ("a NULLS FIRST, c", 10, 0),
    ("d DESC, c", 5, 0),
];

#[test]
fn bounded_sorts_skip_blocks_and_answer_like_full_sorts() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    // `a` rises with the row number, with noise, NULLs and duplicates: blocks hold narrow
    // ranges, as a table loaded in order does. `b` (int8) is random: nothing to prune.
    // `c` is random text, `d` rising text whose first 8 bytes are all alike.
    s.execute(
        "CREATE TABLE t AS SELECT CASE WHEN i % 97 = 0 THEN NULL ELSE (i / 10 + hashint4(i) % 50)::int END AS a, \
         hashint8(i)::bigint * 1000 AS b, md5(i::text) AS c, \
         CASE WHEN i % 89 = 0 THEN NULL ELSE 'prefix__' || lpad((i / 7)::text, 6, '0') END AS d FROM generate_series(1, 60000) i",
    )
    .unwrap();
    for workers in [0, 2] {
        s.execute(&format!("SET max_parallel_workers_per_gather = {workers}")).unwrap();
        // The first pass builds the zone maps, the second uses them.
        for _ in 0..2 {
            for &(order_by, limit, offset) in QUERIES {
                check(&mut s, order_by, limit, offset);
            }
        }
    }
    s.execute("SET max_parallel_workers_per_gather = 0").unwrap();
    let query = "SELECT * FROM t ORDER BY a LIMIT 10";
    rows(&mut s, query);
    let scanned = scanned_rows(&mut s, query);
    assert!(scanned < 6000, "the scan should skip most blocks, read {scanned} rows of 60000");
    let query = "SELECT * FROM t ORDER BY c LIMIT 10";
    rows(&mut s, query);
    let scanned = scanned_rows(&mut s, query);
    assert!(scanned < 20000, "the scan should skip most blocks by text prefix, read {scanned} rows of 60000");

    // Writes make the scan forget the map: new smallest values must be found.
    s.execute("INSERT INTO t VALUES (-1000, -5, 'new', 'a'), (-1001, 9223372036854775807, 'newer', 'prefix__'), (NULL, NULL, 'null', NULL)").unwrap();
    s.execute("DELETE FROM t WHERE a BETWEEN 0 AND 3").unwrap();
    s.execute("UPDATE t SET a = -5000 WHERE c = (SELECT max(c) FROM t)").unwrap();
    // The scan that builds the map again passes over pages by the ranges it measures.
    let scanned = scanned_rows(&mut s, "SELECT * FROM t ORDER BY a LIMIT 10");
    assert!(scanned < 6000, "the building scan should pass over most pages, read {scanned} rows of 60000");
    for _ in 0..2 {
        for &(order_by, limit, offset) in QUERIES {
            check(&mut s, order_by, limit, offset);
        }
    }
    assert_eq!(rows(&mut s, "SELECT a FROM t ORDER BY a LIMIT 3"), vec!["-5000", "-1001", "-1000"]);
}

/// Text keys sharing their first 8 bytes make the sort abandon abbreviated keys after
/// 10000 rows; the rows kept before that must still compete on their full keys (they
/// were evicted first, whatever their key, when they kept their old abbreviations).
#[test]
fn a_bounded_sort_keeps_its_best_rows_when_abbreviations_are_abandoned() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("SET max_parallel_workers_per_gather = 0").unwrap();
    s.execute("CREATE TABLE c AS SELECT 'customer_' || lpad(i::text, 8, '0') AS k FROM generate_series(1, 30000) i").unwrap();
    let want = |from: u32| (from..from + 5).map(|i| format!("customer_{i:08}")).collect::<Vec<_>>();
    assert_eq!(rows(&mut s, "SELECT k FROM c ORDER BY k LIMIT 5"), want(1));
    s.execute("CREATE TABLE d AS SELECT k FROM c ORDER BY k DESC").unwrap();
    let descending: Vec<String> = (29996..=30000).rev().map(|i| format!("customer_{i:08}")).collect();
    assert_eq!(rows(&mut s, "SELECT k FROM d ORDER BY k DESC LIMIT 5"), descending);
    assert_eq!(rows(&mut s, "SELECT k FROM d ORDER BY k LIMIT 5"), want(1));
}
