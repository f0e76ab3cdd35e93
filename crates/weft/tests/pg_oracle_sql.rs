//! SQL features compared with PostgreSQL 15: conditional expressions (NULLIF, GREATEST,
//! LEAST), aggregate FILTER and ORDER BY, string_agg, SELECT DISTINCT ON. Every query runs three times: serial,
//! with parallel workers forced, and with a `work_mem` small enough that the hash
//! aggregates spill (their partial states go through temp files and are combined).

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE t (id int, k int, v bigint, f float8, s text, b boolean)",
    "INSERT INTO t SELECT i, abs(hashint4(i)) % 7, hashint4(i * 3)::bigint * 1000, CASE WHEN i % 5 = 0 THEN NULL ELSE hashint4(i) / 1000.0::float8 END, CASE WHEN i % 11 = 0 THEN NULL ELSE substr(md5(i::text), 1, 1 + i % 9) END, i % 3 = 0 FROM generate_series(1, 3000) i",
    "INSERT INTO t VALUES (NULL, NULL, NULL, NULL, NULL, NULL), (0, 0, 9223372036854775807, 'NaN', '', true), (-1, 0, -9223372036854775808, '-Infinity', 'zz', false)",
    // Many groups, so that a small work_mem spills.
    "CREATE TABLE g AS SELECT i, i % 4000 AS grp, md5(i::text) AS m, i % 3 = 0 AS flag FROM generate_series(1, 24000) i",
];

const QUERIES: &[&str] = &[
    // NULLIF, GREATEST, LEAST.
    "SELECT id, nullif(k, 3), nullif(s, ''), nullif(f, 0), nullif(b, true), nullif(v, id) FROM t WHERE id < 40 OR id IS NULL",
    "SELECT nullif(1, 1.0), nullif(1, 2.2), nullif(NULL, 1), nullif(2, NULL), nullif('a', 'a'), nullif('a', 'b'), nullif(2.0::float8, 2)",
    "SELECT id, greatest(id, k, 5), least(id, k, 5), greatest(f, -1), least(s, 'b'), greatest(b, false), least(v, id, k) FROM t WHERE id < 40 OR id IS NULL",
    "SELECT greatest(NULL, NULL, 1), least(1, 2.5, -1::bigint), least('x', NULL), greatest(3), greatest(1.5::float8, 2), least(NULL::int, NULL)",
    "SELECT k, count(*) FROM t WHERE greatest(id, 100) = 100 AND nullif(k, 0) IS NOT NULL GROUP BY k",
    "SELECT greatest(k, 2) AS gk, count(*) FROM t GROUP BY greatest(k, 2)",
    // FILTER on every aggregate, grouped, ungrouped (the raw path), in HAVING.
    "SELECT k, count(*) FILTER (WHERE b), count(s) FILTER (WHERE id > 100), sum(v) FILTER (WHERE f > 0), avg(id) FILTER (WHERE s LIKE 'a%'), min(s) FILTER (WHERE k > 2), max(f) FILTER (WHERE f < 1e6), bool_and(b) FILTER (WHERE id % 2 = 0), bool_or(b) FILTER (WHERE id < 10), every(f > 0) FILTER (WHERE NOT b) FROM t GROUP BY k",
    "SELECT count(*) FILTER (WHERE b), sum(id) FILTER (WHERE NULL), count(*) FILTER (WHERE id < 0), sum(k) FILTER (WHERE k IS NULL), count(*), sum(v) FILTER (WHERE v > 0), avg(f) FILTER (WHERE f BETWEEN -1e6 AND 1e6) FROM t",
    "SELECT k FROM t GROUP BY k HAVING count(*) FILTER (WHERE b) > 140",
    "SELECT k, count(DISTINCT s) FILTER (WHERE b), max(DISTINCT s) FILTER (WHERE b) FROM t GROUP BY k",
    "SELECT count(DISTINCT k) FILTER (WHERE id > 2000), sum(DISTINCT k) FILTER (WHERE id > 2000) FROM t",
    "SELECT grp % 10, count(*) FILTER (WHERE flag), min(m) FILTER (WHERE i > 100), sum(i) FILTER (WHERE m < '4') FROM g GROUP BY 1",
    "SELECT grp, count(*) FILTER (WHERE flag), max(m) FILTER (WHERE NOT flag) FROM g GROUP BY grp",
    // DISTINCT calls mixed with plain ones, or over different arguments: a set of
    // distinct values per group and call (spilled with the groups at the small work_mem).
    "SELECT count(DISTINCT s), max(id), count(*), sum(DISTINCT k), avg(DISTINCT v), count(DISTINCT f), sum(DISTINCT f) FROM t",
    "SELECT k, count(DISTINCT s), count(DISTINCT b), sum(v), min(DISTINCT f), avg(id) FROM t GROUP BY k",
    "SELECT b, string_agg(DISTINCT s, ',') FILTER (WHERE id < 200), count(DISTINCT k) FILTER (WHERE id % 2 = 0), count(id) FROM t GROUP BY b",
    "SELECT k, string_agg(DISTINCT substr(s, 1, 1), '' ORDER BY substr(s, 1, 1) DESC), max(s) FROM t GROUP BY k HAVING count(DISTINCT id % 5) = 5",
    "SELECT count(DISTINCT s), sum(k) FROM t WHERE id < 0",
    "SELECT k, count(DISTINCT s), sum(k) FROM t WHERE id < 0 GROUP BY k",
    "SELECT grp % 97, count(DISTINCT m), count(DISTINCT i % 7), sum(i), string_agg(DISTINCT substr(m, 1, 2), ',') FROM g GROUP BY 1",
    "SELECT grp, count(DISTINCT m), max(i), count(DISTINCT flag) FROM g GROUP BY grp",
    "SELECT count(DISTINCT m), count(DISTINCT grp), sum(DISTINCT i % 100), max(m) FROM g",
    // string_agg.
    "SELECT k, string_agg(s, ',' ORDER BY s), string_agg(s, '' ORDER BY id DESC), string_agg(s, NULL ORDER BY s DESC NULLS FIRST, id) FROM t WHERE id < 300 GROUP BY k",
    "SELECT string_agg(s, ', ' ORDER BY id) FILTER (WHERE id % 7 = 0) FROM t WHERE id < 200",
    "SELECT string_agg(s, k::text ORDER BY id) FROM t WHERE id < 50",
    "SELECT string_agg(s, ','), string_agg(NULL, ','), string_agg(s, ',') FILTER (WHERE false) FROM t WHERE id = 5",
    "SELECT string_agg(s, ',') FROM t WHERE id < 0",
    "SELECT k, string_agg(DISTINCT s, '|' ORDER BY s), string_agg(DISTINCT s, '|' ORDER BY s DESC) FROM t WHERE id < 500 GROUP BY k",
    "SELECT k, length(string_agg(s, ',')), length(string_agg(s, '') FILTER (WHERE b)) FROM t GROUP BY k",
    "SELECT k, string_agg(s, ',' ORDER BY f NULLS FIRST, id) FROM t WHERE id < 100 GROUP BY k HAVING string_agg(s, '') LIKE '%a%'",
    "SELECT grp, string_agg(m, ',' ORDER BY i DESC), count(*) FROM g GROUP BY grp",
    "SELECT grp % 7, length(string_agg(m, '-')), string_agg(substr(m, 1, 1), '' ORDER BY i) FILTER (WHERE i < 3000) FROM g GROUP BY 1",
    "SELECT length(string_agg(m, '')), string_agg(m, ',' ORDER BY m) FILTER (WHERE i < 20) FROM g",
    // SELECT DISTINCT ON.
    "SELECT DISTINCT ON (k) k, id, s FROM t ORDER BY k, id",
    "SELECT DISTINCT ON (k) k, id FROM t ORDER BY k, id DESC",
    "SELECT DISTINCT ON (k, b) k, b, id FROM t ORDER BY b, k DESC, id",
    "SELECT DISTINCT ON (k) id FROM t ORDER BY k, f DESC NULLS LAST, id",
    "SELECT DISTINCT ON (1) k, id FROM t ORDER BY 1, 2",
    "SELECT DISTINCT ON (t.k) k, id AS x FROM t ORDER BY k, x",
    "SELECT DISTINCT ON (s IS NULL) s IS NULL, id FROM t ORDER BY s IS NULL, id DESC",
    "SELECT DISTINCT ON (k) k FROM t",
    "SELECT DISTINCT ON (k, k) k, b FROM t ORDER BY k, b DESC",
    "SELECT count(*), sum(id) FROM (SELECT DISTINCT ON (k) k, id FROM t ORDER BY k, id) s",
    "SELECT DISTINCT ON (k) k, count(*) FROM t GROUP BY k, b ORDER BY k, count(*) DESC, b",
    "SELECT DISTINCT ON (k) k, id FROM t WHERE id > 5 ORDER BY k, id LIMIT 3 OFFSET 1",
    "SELECT DISTINCT ON (grp % 100) grp % 100, i, m FROM g ORDER BY grp % 100, i DESC",
    "SELECT DISTINCT ON (a.k) a.k, b.id FROM t a JOIN t b ON a.id = b.id + 1 ORDER BY a.k, b.id",
    "SELECT k, id FROM (SELECT DISTINCT ON (k) k, id FROM t ORDER BY k, id DESC) d ORDER BY id",
    "(SELECT DISTINCT ON (k) k, id FROM t ORDER BY k, id) UNION ALL SELECT -5, -5",
    // Row comparisons: pairwise, the first unequal pair deciding, NULLs as PostgreSQL's.
    "SELECT id, (k, b) = (1, true), (k, b) <> (1, true), (k, id) < (3, 100), (k, id) <= (3, 100), (k, s) > (3, 'b'), (k, f, s) >= (3, 0, 'a') FROM t WHERE id < 120 OR id IS NULL",
    "SELECT count(*) FROM t WHERE (k, id) > (4, 2000) AND ROW(k, b) <> ROW(5, false)",
    "SELECT id FROM t WHERE (k, id % 3) IN ((1, 0), (2, 1), (NULL, 2)) AND id < 300",
    "SELECT id FROM t WHERE (k, id) NOT IN ((1, 5), (0, 0)) AND id < 60",
    "SELECT (1, NULL) < (2, 0), (1, NULL) = (1, 2), (NULL, 1) <> (NULL, 2), (1, 2, 3) >= (1, 2, NULL), ROW(1, 'a') < ROW(1, 'b')",
    // LIMIT 0 never runs its input: PostgreSQL evaluates nothing, so raises none of the
    // errors the rows would (v holds -9223372036854775808, whose negation overflows).
    "SELECT -v FROM t LIMIT 0",
    "SELECT -v, id FROM t ORDER BY 1 LIMIT 0",
    "SELECT DISTINCT -v FROM t ORDER BY 1 LIMIT 0 OFFSET 3",
    "SELECT id FROM t WHERE 1 / (v + 9223372036854775807 + 1) > 0 LIMIT 0",
    "SELECT k, sum(-v) FROM t GROUP BY k LIMIT 0",
];

const ERRORS: &[&str] = &[
    "SELECT string_agg(s) FROM t",
    "SELECT greatest(1, 'a')",
    "SELECT nullif(1, 'a')",
    "SELECT nullif(s, 1) FROM t",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT string_agg(id, ',') FROM t",
    "SELECT string_agg(s, 1) FROM t",
    "SELECT count(*) FILTER (WHERE id) FROM t",
    "SELECT sum(id) FILTER (WHERE count(*) > 1) FROM t",
    "SELECT lower(s) FILTER (WHERE b) FROM t",
    "SELECT length(string_agg(s, '')) FILTER (WHERE b) FROM t",
    "SELECT string_agg(DISTINCT s, ',' ORDER BY id) FROM t",
    "SELECT greatest(1, s) FROM t",
    "SELECT least(b, 1) FROM t",
    "SELECT k, count(*) FILTER (WHERE s = 'a') FROM t",
    "SELECT DISTINCT ON (k) k, id FROM t ORDER BY id",
    "SELECT DISTINCT ON (k) k, id FROM t ORDER BY id, k",
    "SELECT DISTINCT ON (k, b) k FROM t ORDER BY k, id",
    "SELECT DISTINCT ON (5) k FROM t",
    "SELECT (k, id) = (1, 2, 3) FROM t",
    "SELECT (k, id) < k FROM t",
    "SELECT s = (k, id) FROM t",
];

#[test]
fn sql_features_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, ERRORS, ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}
