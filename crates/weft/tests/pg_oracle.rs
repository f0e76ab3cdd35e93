//! The same tables built in weft and in PostgreSQL 15, the same queries run on both, every
//! row compared. Tables are built by the same SQL on both sides (the seed statement, and
//! data derived from `hashint4`/`md5`, which are bit-exact), so any difference is a bug.

use super::oracle;

use oracle::{error_mismatches, query_mismatches};

const SETUP: &[&str] = &[
    // The seed statement of ../shared/seeds/000, scaled from 1e9 to 2e4.
    "CREATE TABLE parallel_sort_test AS SELECT hashint8(i) randint, md5(i::text) collate \"C\" padding1, md5(i::text || '2') collate \"C\" padding2 FROM generate_series(0, 2e4::bigint) i",
    "CREATE TABLE t (id int, k int, v bigint, f float8, s text, b boolean)",
    "INSERT INTO t SELECT i, abs(hashint4(i)) % 7, hashint4(i * 3)::bigint * 1000, CASE WHEN i % 5 = 0 THEN NULL ELSE hashint4(i) / 1000.0::float8 END, CASE WHEN i % 11 = 0 THEN NULL ELSE substr(md5(i::text), 1, 1 + i % 9) END, i % 3 = 0 FROM generate_series(1, 3000) i",
    "INSERT INTO t VALUES (NULL, NULL, NULL, NULL, NULL, NULL), (0, 0, 9223372036854775807, 'NaN', '', true), (-1, 0, -9223372036854775808, '-Infinity', 'zz', false)",
    // Scalar subqueries in INSERT ... SELECT, INSERT ... VALUES and CREATE TABLE AS.
    "CREATE TABLE sq (a int, n numeric)",
    "INSERT INTO sq SELECT (SELECT max(id) FROM t), (SELECT sum(v) FROM t WHERE id < 10)",
    "INSERT INTO sq VALUES ((SELECT count(*) FROM t)::int, (SELECT NULL::numeric))",
    "INSERT INTO sq SELECT id + (SELECT min(id) FROM t), NULL::numeric FROM t WHERE id < 4",
    "CREATE TABLE sq2 AS SELECT id, (SELECT max(k) FROM t) mk, (SELECT s FROM t WHERE id = 7) s7 FROM t WHERE id < 6",
];

const QUERIES: &[&str] = &[
    "SELECT count(*), sum(randint), min(randint), max(randint), avg(randint) FROM parallel_sort_test",
    "SELECT min(padding1), max(padding2), count(padding1) FROM parallel_sort_test",
    "SELECT randint, padding1, padding2 FROM parallel_sort_test WHERE randint % 1000 = 7",
    "SELECT substr(padding1, 1, 2) p, count(*), sum(randint), avg(randint) FROM parallel_sort_test GROUP BY 1 HAVING count(*) > 90",
    "SELECT k, count(*), count(v), count(f), count(s), sum(v), sum(id), avg(id), avg(f), min(f), max(f), min(s), max(s) FROM t GROUP BY k",
    "SELECT b, sum(k), avg(v) FROM t GROUP BY b",
    "SELECT sum(v), avg(v), sum(f), sum(id::bigint * 1000000000000) FROM t",
    // Plain columns only: the page-at-a-time raw aggregate path.
    "SELECT count(*), count(f), count(s), sum(k), sum(v), avg(k), min(k), max(v), sum(f), avg(f), min(f), max(f), min(id), max(id) FROM t",
    "SELECT id, v / 1000 + id, f * 2, -f, s || '-' || id, length(s), upper(s), coalesce(s, 'none') FROM t WHERE id % 97 = 1",
    "SELECT id, f, f::int8, f::int4 FROM t WHERE f IS NOT NULL AND id % 101 = 3 AND abs(f) < 1e9",
    "SELECT id, CASE WHEN f > 0 THEN 'pos' WHEN f < 0 THEN 'neg' ELSE 'other' END, CASE k WHEN 1 THEN 'one' WHEN 2 THEN 'two' END FROM t WHERE id < 40",
    "SELECT id, hashint4(id), hashint8(v), hashtext(s), md5(s) FROM t WHERE id % 53 = 0",
    "SELECT id, s < 'a', s >= '5', s IS NULL, (f > 0) AND b, (f > 0) OR b, NOT b FROM t WHERE id < 60",
    "SELECT id, id::text, v::text, f::text, b::text, (id * 7)::float8 / 3 FROM t WHERE id % 89 = 2",
    "SELECT k, x FROM (SELECT k, count(*) AS x FROM t WHERE b GROUP BY k) s WHERE x > 10",
    "SELECT count(*) FROM (SELECT id FROM t WHERE f BETWEEN -100000 AND 100000 AND k IN (1, 3, 5)) s",
    "SELECT id FROM t WHERE s IS NOT NULL ORDER BY s DESC, id LIMIT 10 OFFSET 3",
    "SELECT i, i * i, i::float8 / 7, 7 / i, i % 4 FROM generate_series(-20, 20, 3) i WHERE i <> 0",
    "SELECT 1e9::bigint, 2147483647::int8 + 1, 0.1::float8 + 0.2, 1e300::float8 * 10, 1.5::numeric * 3, 10::numeric / 4",
    "SELECT repeat('ab', 3), substr('hello', 0, 3), substr('hello', -1), abs(-7), abs(-7.5::float8), lower('ÀB'), length('日本語')",
    "SELECT avg(x), sum(x), avg(x::float8) FROM generate_series(1, 1000) x",
    "SELECT count(*), sum(i), avg(i) FROM generate_series(1, 100000) i WHERE i % 3 = 0",
    // LIKE / ILIKE.
    "SELECT id, s FROM t WHERE s LIKE 'a%' OR s LIKE '%f_' OR (s NOT LIKE '%0%' AND id < 200)",
    "SELECT id, s ILIKE 'A%', s LIKE '_b%', s LIKE '%' || substr(s, 2, 1) || '%', s NOT ILIKE '%E%' FROM t WHERE id < 150",
    "SELECT 'a' LIKE 'a\\', 'a%b' LIKE 'a#%b' ESCAPE '#', 'a_b' LIKE 'a\\_b', 'abc' LIKE 'a\\_c', 'héllo' ILIKE 'H_LLO', '' LIKE '%', '' LIKE '_', 'a\\' LIKE 'a\\' ESCAPE ''",
    "SELECT count(*) FROM parallel_sort_test WHERE padding1 LIKE '%ab%' AND padding2 NOT LIKE '_0%'",
    // DISTINCT.
    "SELECT id, f IS DISTINCT FROM v, s IS NOT DISTINCT FROM 'ab', NULL IS DISTINCT FROM f, k IS NOT DISTINCT FROM NULL FROM t WHERE id < 80",
    "SELECT count(*) FROM t x JOIN t y ON x.id = y.id + 1 WHERE x.s IS NOT DISTINCT FROM y.s",
    "SELECT k, bool_and(b), bool_or(b), every(f > 0), bool_or(s IS NULL) FROM t GROUP BY k",
    "SELECT bool_and(b), bool_or(b) FROM t WHERE id < 0",
    "SELECT DISTINCT k FROM t",
    "SELECT DISTINCT k, b FROM t WHERE id < 500",
    "SELECT DISTINCT f IS NULL, s IS NULL FROM t",
    "SELECT DISTINCT count(*) FROM t GROUP BY k",
    "SELECT DISTINCT substr(padding1, 1, 1) FROM parallel_sort_test ORDER BY 1",
    "SELECT k, count(DISTINCT s) FROM t GROUP BY k",
    "SELECT count(DISTINCT k), sum(DISTINCT k), avg(DISTINCT k), min(DISTINCT k) FROM t",
    "SELECT count(DISTINCT substr(padding1, 1, 2)) FROM parallel_sort_test",
    "SELECT k, count(DISTINCT f) FROM t GROUP BY k HAVING count(DISTINCT f) > 300",
    // UNION / INTERSECT / EXCEPT.
    "SELECT k FROM t UNION SELECT id FROM t WHERE id < 10",
    "SELECT k, s FROM t WHERE id < 100 UNION ALL SELECT id, s FROM t WHERE id > 2990",
    "SELECT k FROM t INTERSECT SELECT id % 4 FROM t",
    "SELECT k FROM t INTERSECT ALL SELECT id % 4 FROM t WHERE id < 30",
    "SELECT s FROM t WHERE id < 100 EXCEPT SELECT s FROM t WHERE id < 50",
    "SELECT k FROM t EXCEPT ALL SELECT k FROM t WHERE id < 2000",
    "SELECT id::bigint FROM t WHERE id < 5 UNION SELECT v FROM t WHERE id < 3 UNION SELECT 1.5",
    "SELECT f FROM t WHERE id < 20 UNION SELECT NULL::float8",
    "SELECT k, count(*) FROM (SELECT k FROM t UNION ALL SELECT k FROM t WHERE b) u GROUP BY k",
    "SELECT id FROM t WHERE id < 20 UNION SELECT id + 5 FROM t WHERE id < 20 ORDER BY 1 DESC LIMIT 4",
    // Quoted literals are PostgreSQL's unknown type: they take the other branches' type.
    "SELECT f FROM t WHERE id < 10 UNION SELECT 'NaN' UNION SELECT '-Infinity'",
    "SELECT 'x', id FROM t WHERE id < 3 UNION ALL SELECT s, k FROM t WHERE id < 5",
    "SELECT v FROM t WHERE id < 4 UNION SELECT '12'",
    "SELECT * FROM (VALUES (1.5::float8), ('NaN'), ('-0'), (NULL), ('Infinity')) v(x)",
    "SELECT * FROM (VALUES (1, 'a'), ('2', NULL), (NULL, 'c')) v(x, y)",
    "SELECT id, coalesce(f, 'NaN'), CASE WHEN id % 2 = 0 THEN f ELSE '-Infinity' END, coalesce(b, 'true') FROM t WHERE id < 12",
    // WITH.
    "WITH a AS (SELECT k, count(*) c FROM t GROUP BY k), b AS (SELECT * FROM a WHERE c > 400) SELECT k, c FROM b",
    "WITH x(n) AS (SELECT id FROM t WHERE id < 10) SELECT count(*), sum(n) FROM x",
    // Scalar subqueries (uncorrelated: PostgreSQL's InitPlans), and aggregates inside
    // them, which belong to the subquery and not to the query around it.
    "SELECT id, (SELECT max(v) FROM t) FROM t WHERE id < 5",
    "SELECT id, s FROM t WHERE id = (SELECT min(id) FROM t)",
    "SELECT id, s FROM t WHERE id = (SELECT min(id) FROM t WHERE id > 0)",
    "SELECT count(*) FROM t WHERE v < (SELECT avg(v) FROM t)",
    "SELECT k, count(*) FROM t GROUP BY k HAVING count(*) > (SELECT count(*) / 7 FROM t)",
    "SELECT k, (SELECT count(*) FROM t), count(*) + (SELECT max(k) FROM t) FROM t GROUP BY k",
    "SELECT id FROM t WHERE id < 30 ORDER BY abs(id - (SELECT avg(id) FROM t WHERE id < 30)), id",
    "SELECT id, CASE WHEN v > (SELECT avg(v) FROM t) THEN 'high' ELSE 'low' END FROM t WHERE id < 25",
    "SELECT (SELECT max(id) FROM t) - (SELECT min(id) FROM t) * 2, (SELECT count(*) FROM t) / 3.0",
    "SELECT (SELECT id FROM t WHERE id > 100000), (SELECT id FROM t WHERE id > 100000) IS NULL",
    "SELECT (SELECT f FROM t WHERE id = 5), (SELECT max(s) FROM t WHERE s IS NULL), (SELECT NULL)",
    "SELECT (SELECT max(id) FROM t WHERE id < (SELECT avg(id) FROM t)) + 1, (SELECT (SELECT 2) * 3)",
    "SELECT a.id, b.id FROM t a JOIN t b ON a.id = b.id + 1 WHERE a.id < (SELECT min(id) FROM t WHERE id > 0) + 5",
    "SELECT md5((SELECT max(s) FROM t)), length((SELECT min(s) FROM t WHERE s <> '')), round((SELECT avg(f) FROM t WHERE f > 0 AND f < 1e12)::numeric, 3)",
    "WITH m AS (SELECT (SELECT max(id) FROM t) x) SELECT x FROM m UNION ALL SELECT (SELECT min(id) FROM t)",
    "SELECT c FROM (SELECT count(*) c FROM t WHERE k = (SELECT max(k) FROM t)) s",
    "SELECT count(*) FROM parallel_sort_test WHERE randint > (SELECT avg(randint) FROM parallel_sort_test)",
    // Correlated scalar subqueries (PostgreSQL's SubPlans): run per outer row with the
    // outer columns as parameters; NULL for no row.
    "SELECT o.id, (SELECT count(*) FROM t i WHERE i.k = o.k AND i.id < o.id), (SELECT max(i.v) FROM t i WHERE i.k = o.k) FROM t o WHERE o.id < 40",
    "SELECT o.id, o.v FROM t o WHERE o.id < 150 AND o.v > (SELECT avg(i.v) FROM t i WHERE i.k = o.k)",
    "SELECT o.id, (SELECT i.s FROM t i WHERE i.id = o.id + 5000), (SELECT max(i.f) FROM t i WHERE i.id = o.id AND i.f > 1e20), (SELECT i.s FROM t i WHERE i.id = o.id) FROM t o WHERE o.id < 12",
    "SELECT o.id, (SELECT count(*) FROM t i WHERE i.k = o.k AND i.b = o.b AND i.id <= o.id) FROM t o WHERE o.id < 30",
    "SELECT o.id, CASE WHEN o.b THEN (SELECT min(i.s) FROM t i WHERE i.k = o.k AND i.id > o.id) ELSE 'no' END, CASE WHEN o.id < -5 THEN (SELECT i.id FROM t i WHERE i.k = o.k) ELSE 0 END FROM t o WHERE o.id < 30",
    "SELECT o.id, o.k FROM t o WHERE o.id < 25 ORDER BY (SELECT count(*) FROM t i WHERE i.k = o.k AND i.id < 100) DESC, o.id",
    "SELECT o.id, (SELECT count(*) FROM t i WHERE i.id = o.id), (SELECT count(*) FROM t i WHERE i.s = o.s) FROM t o WHERE o.id IS NULL OR o.id < 15",
    "SELECT o.id, (SELECT count(*) FROM t x JOIN t y ON x.id = y.id + 1 WHERE x.k = o.k AND y.id < 60) FROM t o WHERE o.id < 10",
    "SELECT a.id, b.id, (SELECT max(i.id) FROM t i WHERE i.k = a.k AND i.id < b.id + 10) FROM t a JOIN t b ON a.id = b.id + 1 WHERE a.id < 20",
    "SELECT o.id, (SELECT i.id + (SELECT count(*) FROM t j WHERE j.k = i.k AND j.id < 20) FROM t i WHERE i.id = o.id + 1) FROM t o WHERE o.id < 10",
    "SELECT o.k, count(*), (SELECT count(*) FROM t i WHERE i.k = o.k AND i.id < 100) FROM t o GROUP BY o.k HAVING (SELECT max(i.id) FROM t i WHERE i.k = o.k) > 0 ORDER BY (SELECT min(i.v) FROM t i WHERE i.k = o.k)",
    "SELECT o.id, (SELECT max(i.id) FROM t i WHERE i.k = o.k AND i.id < (SELECT min(id) FROM t WHERE id > 40)) FROM t o WHERE o.id < 10",
    "SELECT o.k, sum((SELECT count(*) FROM t i WHERE i.id = o.id + 1)) FROM t o WHERE o.id < 50 GROUP BY o.k",
    "SELECT x.id, (SELECT count(*) FROM t i WHERE i.k = x.m) FROM (SELECT id, k + 1 AS m FROM t WHERE id < 8) x",
    "SELECT * FROM sq",
    "SELECT * FROM sq2",
    // Numeric and text functions.
    "SELECT id, round(f), trunc(f), ceil(f), floor(f), sign(f), round(v::numeric / 7, 2), trunc(v::numeric / 7, 1), round(v::numeric, -3), mod(id, 7), mod(v, 1000), power(id % 10, 3), sqrt(abs(f)) FROM t WHERE id % 97 = 5",
    "SELECT id, ceil(v::numeric / 1000.5), floor(-v::numeric / 3), ceiling(id / 7.0), round(id / 4.0), trunc(-id / 3.0), sign(v::numeric), round(2.5::float8), round(-0.5) FROM t WHERE id % 113 = 6",
    "SELECT id, replace(s, 'a', 'XY'), strpos(s, 'b'), position('c' in s), left(s, 3), right(s, -2), btrim('  ' || s || ' '), ltrim(s, '0123'), rtrim(s, 'abc'), trim(both 'a' from s), reverse(s), lpad(s, 6, '*'), rpad(s, 4), split_part(s, 'a', 2), starts_with(s, 'a') FROM t WHERE id % 61 = 4",
];

const ERRORS: &[&str] = &[
    "SELECT bool_and(id) FROM t",
    "SELECT 2147483647 + 1",
    "SELECT 1 / 0",
    "SELECT (-9223372036854775808)::bigint - 1",
    "SELECT 'abc'::int",
    "SELECT nosuch FROM t",
    "SELECT * FROM nosuch",
    "SELECT k, v FROM t GROUP BY k",
    "SELECT md5(1)",
    "SELECT min(b) FROM t",
    "SELECT 'a' + 1",
    "INSERT INTO t (id) VALUES ('x')",
    "SELECT 'ab' LIKE 'a\\'",
    "SELECT 'a' LIKE 'a' ESCAPE 'xy'",
    "SELECT 1 UNION SELECT true",
    "SELECT 1, 2 UNION SELECT 1",
    "SELECT k FROM t INTERSECT SELECT k, id FROM t",
    "SELECT DISTINCT k FROM t ORDER BY id",
    "SELECT sqrt(-1)",
    "SELECT power(0, -1)",
    "SELECT split_part('a', ',', 0)",
    "WITH a AS (SELECT 1), a AS (SELECT 2) SELECT * FROM a",
    "SELECT 1 UNION ALL SELECT 'z'",
    "SELECT * FROM (VALUES (1), ('q')) v(x)",
    // A correlated subquery returning two rows for some outer row.
    "SELECT o.id, (SELECT i.id FROM t i WHERE i.k = o.k) FROM t o WHERE o.id < 5",
    "SELECT o.id FROM t o WHERE o.id < 5 AND o.id = (SELECT i.id FROM t i WHERE i.k = o.k AND i.id >= o.id)",
    "SELECT o.k, (SELECT count(*) FROM t i WHERE i.id = o.id) FROM t o GROUP BY o.k",
];

/// Errors compared by SQLSTATE as well as by message.
const ERRORS_WITH_SQLSTATE: &[&str] = &[
    // A scalar subquery with two columns (42601), with more than one row (21000).
    "SELECT (SELECT id, k FROM t)",
    "SELECT id FROM t WHERE id = (SELECT id FROM t)",
    "SELECT (SELECT id FROM t WHERE id < 3) + 1",
];

#[test]
fn weft_and_postgres_agree() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    // Force the parallel paths on these small tables, so they are compared too.
    session.execute("SET min_parallel_table_scan_size = 0").unwrap();
    let mut mismatches = query_mismatches(&pg, &mut session, QUERIES);
    mismatches.extend(error_mismatches(&pg, &mut session, ERRORS, ERRORS_WITH_SQLSTATE));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}
