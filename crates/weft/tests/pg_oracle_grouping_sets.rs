//! GROUP BY GROUPING SETS, ROLLUP, CUBE and GROUPING() compared with PostgreSQL 15: over a
//! table whose grouping columns hold NULLs (so real NULLs meet the NULLs of columns a set
//! does not group), with aggregates (DISTINCT, FILTER, ORDER BY inside the call), HAVING,
//! ORDER BY, LIMIT, window functions over the grouped rows, empty input, duplicate and
//! nested sets; serial, with parallel workers and at a tiny work_mem; and PostgreSQL's
//! errors. Queries without ORDER BY are compared as multisets.

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE g (id int, a int, b text, c int, d numeric, e float8)",
    "INSERT INTO g SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE i % 4 END, CASE WHEN i % 11 = 0 THEN NULL ELSE chr(97 + i % 3) END, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 5 END, CASE WHEN i % 19 = 0 THEN NULL ELSE (i % 17) / 4.0 END, (i % 9) / 2.0 FROM generate_series(1, 1000) i",
];

const QUERIES: &[&str] = &[
    "SELECT a, b, count(*), sum(c), avg(d), min(e), max(b) FROM g GROUP BY GROUPING SETS ((a, b), (a), ())",
    "SELECT a, b, grouping(a, b), count(*) FROM g GROUP BY ROLLUP (a, b) ORDER BY 3, a, b",
    "SELECT a, b, grouping(a), grouping(b), grouping(b, a), count(*) FROM g GROUP BY CUBE (a, b) ORDER BY 5, a, b",
    "SELECT a, b, c, grouping(a, b, c), count(*), sum(d) FROM g GROUP BY ROLLUP ((a, b), c) ORDER BY 4, a, b, c",
    "SELECT a, b, c, grouping(a, b, c), count(*) FROM g GROUP BY a, ROLLUP (b, c) ORDER BY 4, a, b, c",
    "SELECT a, b, c, grouping(a, b, c), count(*) FROM g GROUP BY CUBE (a), ROLLUP (b, c) ORDER BY 4, a, b, c",
    "SELECT count(*), sum(c), grouping(a) FROM g GROUP BY GROUPING SETS ((), (a), ())",
    "SELECT a, count(*) FROM g GROUP BY GROUPING SETS (a, a, ())",
    "SELECT a, b, count(*) FROM g GROUP BY GROUPING SETS (a, ROLLUP (b), CUBE (a, b))",
    "SELECT count(*) FROM g GROUP BY ()",
    "SELECT a, b, count(*), grouping(a, b) FROM g WHERE id < 0 GROUP BY ROLLUP (a, b)",
    "SELECT a, count(*), sum(c) FROM g WHERE id < 0 GROUP BY GROUPING SETS ((), (), a)",
    "SELECT a, b, count(DISTINCT c), sum(DISTINCT c), count(*) FILTER (WHERE c > 1), string_agg(DISTINCT b, ',' ORDER BY b) FROM g GROUP BY ROLLUP (a, b)",
    "SELECT a, count(DISTINCT b) FROM g GROUP BY CUBE (a)",
    "SELECT a, string_agg(b, '' ORDER BY id) FILTER (WHERE id % 50 = 0) FROM g GROUP BY ROLLUP (a)",
    "SELECT a, b, count(*) FROM g GROUP BY ROLLUP (a, b) HAVING count(*) > 40",
    "SELECT a, b, count(*) FROM g GROUP BY CUBE (a, b) HAVING grouping(a, b) <> 1 AND sum(c) > 100",
    "SELECT a, b, count(*) FROM g GROUP BY CUBE (a, b) ORDER BY grouping(a, b) DESC, a, b",
    "SELECT a, b, count(*) FROM g GROUP BY ROLLUP (a, b) ORDER BY count(*) DESC, grouping(a, b), a, b LIMIT 5",
    "SELECT a, b, count(*) FROM g GROUP BY ROLLUP (a, b) ORDER BY a NULLS FIRST, b NULLS FIRST, grouping(a, b), 3 LIMIT 7 OFFSET 3",
    "SELECT a, b, count(*), rank() OVER (PARTITION BY grouping(a, b) ORDER BY count(*) DESC, a, b), sum(count(*)) OVER (PARTITION BY a) FROM g GROUP BY ROLLUP (a, b)",
    "SELECT CASE WHEN grouping(a) = 1 THEN 'all' ELSE coalesce(a::text, 'null') END AS label, count(*) FROM g GROUP BY ROLLUP (a) ORDER BY 1",
    "SELECT coalesce(a, -1), a IS NULL, count(*) FROM g GROUP BY ROLLUP (a)",
    "SELECT a + 1, count(*) FROM g GROUP BY ROLLUP (a + 1)",
    "SELECT a % 2 AS parity, b, count(*) FROM g GROUP BY ROLLUP (parity, b)",
    "SELECT a, b, count(*) FROM g GROUP BY ROLLUP (1, 2)",
    "SELECT g.a, b, grouping(a), grouping(g.a), count(*) FROM g GROUP BY ROLLUP (a, g.b)",
    "SELECT a, grouping(a), count(*) FROM g GROUP BY a ORDER BY a",
    "SELECT grouping(a, b), count(*) FROM g GROUP BY a, b",
    "SELECT DISTINCT a, grouping(a) FROM g GROUP BY ROLLUP (a, b) ORDER BY 1, 2",
    "SELECT a, avg(e), min(d), max(d), sum(e) FROM g GROUP BY CUBE (a)",
    "SELECT x.a, y.b, count(*) FROM g x JOIN g y ON x.id = y.id + 1 GROUP BY ROLLUP (x.a, y.b)",
    "SELECT a, (SELECT max(c) FROM g h WHERE h.a = g.a) AS m, count(*) FROM g GROUP BY ROLLUP (a)",
    "SELECT a, b, c, count(*) FROM g GROUP BY GROUPING SETS ((a, b), (b, c), (a, c), a, c, ())",
    "SELECT b, c, count(*) FROM g GROUP BY CUBE (b, c), GROUPING SETS ((), b)",
    "SELECT a, count(*) FROM g GROUP BY a, () ORDER BY a",
    "SELECT id % 100 AS k, count(*), sum(c) FROM g GROUP BY ROLLUP (id % 100)",
    "SELECT grouping(a), count(*) FROM g GROUP BY GROUPING SETS ((), a) HAVING grouping(a) = 1",
    "SELECT count(*) FROM (SELECT a, b, count(*) FROM g GROUP BY CUBE (a, b)) s",
    "SELECT a, b, count(*) FROM g WHERE c > 2 GROUP BY GROUPING SETS (CUBE (a, b), ROLLUP (b))",
    "SELECT a, sum(c) FROM g GROUP BY ROLLUP (a) ORDER BY sum(c) DESC NULLS LAST, grouping(a), a",
    "SELECT a, grouping(a), count(*), row_number() OVER (ORDER BY grouping(a), a), sum(grouping(a)) OVER () FROM g GROUP BY ROLLUP (a)",
    "SELECT a, b, grouping(a, b) * 10 + count(*) % 7 AS mix, lag(count(*)) OVER (PARTITION BY grouping(a, b) ORDER BY a, b) FROM g GROUP BY CUBE (a, b)",
    "WITH s AS (SELECT a, b, c FROM g WHERE id % 3 = 0) SELECT a, b, count(*), sum(c) FROM s GROUP BY ROLLUP (a, b)",
    "SELECT s.a, count(*) FROM (SELECT a FROM g WHERE id > 500) s GROUP BY CUBE (s.a)",
    "SELECT x.a, count(*), sum(y.c) FROM g x LEFT JOIN g y ON y.id = x.id * 2 GROUP BY GROUPING SETS ((x.a), ()) HAVING count(*) > 10",
    "SELECT b, a, grouping(b), grouping(a), count(*) FROM g GROUP BY GROUPING SETS ((b), (a), (a, b)) ORDER BY grouping(b), grouping(a), b, a",
    "SELECT count(*), grouping(a) FROM g WHERE a IS NULL GROUP BY ROLLUP (a)",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT grouping(a) FROM g",
    "SELECT grouping(a), count(*) FROM g",
    "SELECT grouping(a) FROM g GROUP BY b",
    "SELECT grouping(a) FROM g GROUP BY ROLLUP (a + 1)",
    "SELECT a FROM g WHERE grouping(a) = 0 GROUP BY a",
    "SELECT sum(grouping(a)) FROM g GROUP BY a",
    "SELECT a FROM g GROUP BY grouping(a)",
    "SELECT a, b FROM g GROUP BY ROLLUP (a)",
    "SELECT a, c, count(*) FROM g GROUP BY CUBE (a, b)",
    "SELECT a FROM g GROUP BY ROLLUP (a) HAVING b = 'a'",
    "SELECT a FROM g GROUP BY ROLLUP (a) ORDER BY b",
    "SELECT 1 FROM g GROUP BY CUBE (a, b, c, d, e, id, a + 1, a + 2, a + 3, a + 4, a + 5, a + 6, a + 7)",
    "SELECT grouping(a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a) FROM g GROUP BY a",
    "SELECT 1 FROM g GROUP BY ROLLUP (sum(a))",
    "SELECT a, b FROM g GROUP BY GROUPING SETS ((a), (b)) ORDER BY c",
    "SELECT grouping(c) FROM g GROUP BY GROUPING SETS ((a), (b))",
];

#[test]
fn grouping_sets_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}
