//! Window functions compared with PostgreSQL 15: every ranking, offset and aggregate
//! window function, partitions with NULL keys, peers, DESC / NULLS FIRST orderings, ROWS,
//! RANGE (with and without offsets) and GROUPS frames, named windows, windows over
//! grouped rows, in expressions, under ORDER BY and inside subqueries, and PostgreSQL's
//! errors. Every query runs three times: serial, with parallel workers forced, and with a
//! `work_mem` small enough that the sorts below the window nodes spill.
//!
//! Where a window's ORDER BY leaves ties, a function that depends on the order among
//! peers (row_number, lag, a ROWS frame) is ordered by `id` as well, which is unique, so
//! both systems must give the same value.

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE w (id int, g int, v int, big bigint, f float8, n numeric, s text, b boolean)",
    "INSERT INTO w SELECT i, CASE WHEN i % 13 = 0 THEN NULL ELSE abs(hashint4(i)) % 5 END, CASE WHEN i % 7 = 0 THEN NULL ELSE abs(hashint4(i * 7)) % 20 - 5 END, hashint4(i * 3)::bigint * 100000, CASE WHEN i % 9 = 0 THEN NULL ELSE (abs(hashint4(i * 5)) % 1000) / 8.0::float8 END, CASE WHEN i % 6 = 0 THEN NULL ELSE (abs(hashint4(i * 11)) % 10000) / 100.0 END, CASE WHEN i % 11 = 0 THEN NULL ELSE substr(md5(i::text), 1, 1 + i % 4) END, i % 3 = 0 FROM generate_series(1, 400) i",
    "INSERT INTO w VALUES (401, 1, NULL, NULL, 'NaN', NULL, NULL, NULL), (402, 1, 2147483647, 9223372036854775807, 'Infinity', 12.345, 'zz', true), (403, 1, -2147483648, -9223372036854775808, '-Infinity', -0.5, '', false)",
    // Many rows in one partition, for the sorts that spill under a small work_mem.
    "CREATE TABLE big AS SELECT i, i % 3 AS p, abs(hashint4(i)) % 1000 AS x, md5(i::text) AS m FROM generate_series(1, 30000) i",
    "CREATE TABLE e (id int, v int)",
];

const QUERIES: &[&str] = &[
    // Ranking.
    "SELECT id, row_number() OVER (ORDER BY id) FROM w",
    "SELECT id, g, row_number() OVER (PARTITION BY g ORDER BY id), rank() OVER (PARTITION BY g ORDER BY v), dense_rank() OVER (PARTITION BY g ORDER BY v) FROM w",
    "SELECT id, percent_rank() OVER (PARTITION BY g ORDER BY v), cume_dist() OVER (PARTITION BY g ORDER BY v) FROM w",
    "SELECT id, rank() OVER (ORDER BY v DESC), rank() OVER (ORDER BY v NULLS FIRST), dense_rank() OVER (ORDER BY v DESC NULLS LAST), rank() OVER (ORDER BY s, b) FROM w",
    "SELECT id, ntile(4) OVER (ORDER BY id), ntile(7) OVER (PARTITION BY g ORDER BY id), ntile(1000) OVER (PARTITION BY g ORDER BY id), ntile(NULL) OVER (ORDER BY id) FROM w",
    "SELECT id, rank() OVER (), dense_rank() OVER (), percent_rank() OVER (), cume_dist() OVER (), row_number() OVER (PARTITION BY id) FROM w",
    "SELECT id, rank() OVER (ORDER BY f), dense_rank() OVER (ORDER BY n DESC), rank() OVER (ORDER BY big) FROM w",
    // Offsets.
    "SELECT id, lag(v) OVER (ORDER BY id), lead(v) OVER (ORDER BY id), lag(v, 2) OVER (ORDER BY id), lead(s, 3, 'none') OVER (PARTITION BY g ORDER BY id) FROM w",
    "SELECT id, lag(v, 1, 0) OVER (PARTITION BY g ORDER BY id), lead(v, -1) OVER (ORDER BY id), lag(v, 0) OVER (ORDER BY id), lag(v, NULL) OVER (ORDER BY id), lag(f, 1, 1.5) OVER (ORDER BY id) FROM w",
    "SELECT id, lag(v, 1, 2.5) OVER (ORDER BY id), lead(n, 2, 0) OVER (ORDER BY id), lag(id, g) OVER (ORDER BY id), lead(b) OVER (ORDER BY id) FROM w",
    "SELECT id, first_value(v) OVER (PARTITION BY g ORDER BY id), last_value(v) OVER (PARTITION BY g ORDER BY id), nth_value(v, 3) OVER (PARTITION BY g ORDER BY id) FROM w",
    "SELECT id, first_value(s) OVER (ORDER BY v, id), last_value(s) OVER (ORDER BY v), nth_value(id, 2) OVER (ORDER BY v ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM w",
    "SELECT id, last_value(id) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), first_value(id) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING) FROM w",
    "SELECT id, nth_value(v, g + 1) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING), nth_value(v, 1) OVER w1, first_value(v) OVER w1 FROM w WINDOW w1 AS (ORDER BY id ROWS 2 PRECEDING)",
    // Aggregates with the default frame (peers share values) and without ORDER BY.
    "SELECT id, count(*) OVER (PARTITION BY g), count(v) OVER (PARTITION BY g), sum(v) OVER (PARTITION BY g), avg(v) OVER (PARTITION BY g), min(s) OVER (PARTITION BY g), max(f) OVER (PARTITION BY g) FROM w",
    "SELECT id, count(*) OVER (ORDER BY v), sum(v) OVER (ORDER BY v), avg(f) OVER (ORDER BY v), sum(n) OVER (ORDER BY v), sum(big) OVER (ORDER BY v), avg(big) OVER (ORDER BY v), min(v) OVER (ORDER BY v DESC) FROM w",
    "SELECT id, sum(v) OVER (PARTITION BY g ORDER BY s), avg(n) OVER (PARTITION BY b ORDER BY g NULLS FIRST), bool_and(b) OVER (PARTITION BY g ORDER BY v), bool_or(b) OVER (ORDER BY v), string_agg(s, ',') OVER (PARTITION BY g ORDER BY id) FROM w",
    "SELECT id, count(*) FILTER (WHERE b) OVER (ORDER BY id), sum(v) FILTER (WHERE v > 3) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING) FROM w",
    "SELECT id, sum(f) OVER (ORDER BY id), avg(f) OVER (PARTITION BY g ORDER BY id), sum(f) OVER (ORDER BY f) FROM w",
    // ROWS frames.
    "SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING), count(v) OVER (ORDER BY id ROWS 3 PRECEDING), avg(v) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING) FROM w",
    "SELECT id, min(v) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 3 PRECEDING AND CURRENT ROW), max(s) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING), sum(n) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 4 PRECEDING AND 1 PRECEDING) FROM w",
    "SELECT id, sum(v) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING), sum(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), count(*) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM w",
    "SELECT id, sum(f) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING), avg(f) OVER (ORDER BY id ROWS BETWEEN 5 PRECEDING AND CURRENT ROW), sum(big) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM w",
    "SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN 1000 PRECEDING AND 1000 FOLLOWING), sum(v) OVER (ORDER BY id ROWS BETWEEN 0 PRECEDING AND 0 FOLLOWING), count(*) OVER (ORDER BY id ROWS BETWEEN 9223372036854775807 PRECEDING AND 9223372036854775807 FOLLOWING) FROM w",
    "SELECT id, string_agg(s, '-') OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), bool_and(b) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM w",
    // RANGE frames: peers, UNBOUNDED, offsets on int, bigint, float8 and numeric keys.
    "SELECT id, sum(id) OVER (ORDER BY v RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), count(*) OVER (ORDER BY v RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), sum(id) OVER (ORDER BY v RANGE CURRENT ROW) FROM w",
    "SELECT id, sum(id) OVER (ORDER BY v RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING), count(*) OVER (ORDER BY v DESC RANGE BETWEEN 1 PRECEDING AND CURRENT ROW), sum(id) OVER (ORDER BY v NULLS FIRST RANGE BETWEEN 3 FOLLOWING AND 5 FOLLOWING) FROM w",
    "SELECT id, sum(id) OVER (PARTITION BY g ORDER BY v DESC NULLS LAST RANGE BETWEEN 5 PRECEDING AND 1 PRECEDING), min(id) OVER (PARTITION BY g ORDER BY v RANGE BETWEEN 1 PRECEDING AND UNBOUNDED FOLLOWING) FROM w",
    "SELECT id, count(*) OVER (ORDER BY f RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING), sum(id) OVER (ORDER BY f DESC RANGE BETWEEN 'Infinity' PRECEDING AND 0.5 FOLLOWING), count(*) OVER (ORDER BY f RANGE BETWEEN CURRENT ROW AND 'Infinity' FOLLOWING) FROM w",
    "SELECT id, count(*) OVER (ORDER BY n RANGE BETWEEN 1.5 PRECEDING AND 2 FOLLOWING), sum(id) OVER (ORDER BY big RANGE BETWEEN 100000000 PRECEDING AND CURRENT ROW), sum(id) OVER (ORDER BY v RANGE BETWEEN 2147483647 PRECEDING AND 4294967296 FOLLOWING) FROM w",
    "SELECT id, sum(v) OVER (ORDER BY id ROWS 1.5 PRECEDING), count(*) OVER (ORDER BY id GROUPS BETWEEN '1' PRECEDING AND 2.5 FOLLOWING) FROM w",
    "SELECT id, count(*) OVER (ORDER BY v RANGE 3 PRECEDING), max(id) OVER (ORDER BY v RANGE BETWEEN CURRENT ROW AND 0 FOLLOWING) FROM w",
    // GROUPS frames.
    "SELECT id, sum(id) OVER (ORDER BY v GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING), count(*) OVER (PARTITION BY g ORDER BY s GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING), sum(id) OVER (ORDER BY v DESC GROUPS BETWEEN 2 PRECEDING AND 1 PRECEDING) FROM w",
    "SELECT id, count(*) OVER (ORDER BY b GROUPS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), first_value(id) OVER (ORDER BY v, id GROUPS BETWEEN 1 FOLLOWING AND 3 FOLLOWING), count(*) OVER (ORDER BY g GROUPS 1 PRECEDING), max(id) OVER (ORDER BY g GROUPS BETWEEN 2 PRECEDING AND 1 FOLLOWING) FROM w",
    // Named windows.
    "SELECT id, sum(v) OVER w1, row_number() OVER w1, rank() OVER (w0 ORDER BY v), count(*) OVER w0 FROM w WINDOW w0 AS (PARTITION BY g), w1 AS (w0 ORDER BY id)",
    "SELECT id, sum(v) OVER (w1 ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), avg(v) OVER (w1 RANGE UNBOUNDED PRECEDING) FROM w WINDOW w1 AS (PARTITION BY b ORDER BY id), w2 AS (ORDER BY s)",
    // Grouped queries.
    "SELECT g, sum(v), rank() OVER (ORDER BY sum(v)), sum(sum(v)) OVER (), count(*) OVER () FROM w GROUP BY g",
    "SELECT g, b, count(*), row_number() OVER (PARTITION BY b ORDER BY count(*) DESC, g), lag(g) OVER (PARTITION BY b ORDER BY g), avg(sum(v)) OVER (PARTITION BY b) FROM w GROUP BY g, b",
    "SELECT g, max(v)::bigint - min(v) AS spread, dense_rank() OVER (ORDER BY max(v)::bigint - min(v) DESC) FROM w GROUP BY g HAVING count(*) > 10",
    "SELECT sum(v), row_number() OVER (), sum(count(*)) OVER () FROM w",
    "SELECT g % 2, sum(count(*)) OVER (ORDER BY g % 2) FROM w GROUP BY g % 2",
    // Expressions, ORDER BY on window values, LIMIT, DISTINCT.
    "SELECT id, row_number() OVER (ORDER BY id) * 2, v::bigint - lag(v) OVER (ORDER BY id), CASE WHEN rank() OVER (PARTITION BY g ORDER BY v) = 1 THEN 'top' END FROM w",
    "SELECT id, v, rank() OVER (ORDER BY v DESC) AS r FROM w ORDER BY r, id",
    "SELECT id, sum(v) OVER (PARTITION BY g) FROM w ORDER BY sum(v) OVER (PARTITION BY g) DESC NULLS LAST, id LIMIT 20",
    "SELECT id FROM w ORDER BY row_number() OVER (ORDER BY s DESC, id) LIMIT 15",
    "SELECT DISTINCT g, count(*) OVER (PARTITION BY g) FROM w",
    "SELECT DISTINCT ON (g) g, id, row_number() OVER (PARTITION BY g ORDER BY id DESC) FROM w ORDER BY g, id",
    // Subqueries.
    "SELECT * FROM (SELECT id, g, row_number() OVER (PARTITION BY g ORDER BY v DESC NULLS LAST, id) AS rn FROM w) s WHERE rn <= 3",
    "SELECT g, count(*) FROM (SELECT g, rank() OVER (PARTITION BY g ORDER BY s) AS r FROM w) s WHERE r = 1 GROUP BY g",
    "SELECT s.id, s.c, t.v FROM (SELECT id, count(*) OVER (PARTITION BY b) AS c FROM w) s JOIN w t ON t.id = s.id WHERE s.id < 30",
    "SELECT id, (SELECT count(*) FROM w w2 WHERE w2.g = w.g), sum(v) OVER (PARTITION BY g) FROM w",
    "WITH r AS (SELECT id, lag(id) OVER (ORDER BY id) AS prev FROM w) SELECT count(*), sum(id - prev) FROM r",
    "SELECT id, sum(v) OVER (ORDER BY id) FROM w WHERE g = 2 AND v > 0",
    "SELECT a.id, row_number() OVER (ORDER BY a.id), sum(b.v) OVER (PARTITION BY a.g ORDER BY a.id) FROM w a JOIN w b ON a.id = b.id + 1",
    // Several windows: sorts shared and not.
    "SELECT id, row_number() OVER (PARTITION BY g ORDER BY id), sum(v) OVER (PARTITION BY g), rank() OVER (ORDER BY s DESC), lead(id) OVER (PARTITION BY g, b ORDER BY id), count(*) OVER () FROM w",
    // Empty input, constants.
    "SELECT id, row_number() OVER (), sum(v) OVER (ORDER BY id) FROM e",
    "SELECT row_number() OVER (), rank() OVER (ORDER BY 1), sum(3) OVER (), lag(1) OVER ()",
    "SELECT count(*) OVER () FROM w WHERE false",
    "SELECT id, sum(v) OVER (PARTITION BY 1 ORDER BY 2) FROM w",
    // Large partitions: the sort below spills under a small work_mem.
    "SELECT p, count(*), sum(rn), max(r), sum(s) FROM (SELECT p, row_number() OVER (PARTITION BY p ORDER BY x, i) AS rn, rank() OVER (ORDER BY m) AS r, sum(x) OVER (PARTITION BY p ORDER BY i ROWS BETWEEN 10 PRECEDING AND 10 FOLLOWING) AS s FROM big) q GROUP BY p",
    "SELECT i, lag(m) OVER (ORDER BY m), ntile(10) OVER (ORDER BY x, i), percent_rank() OVER (PARTITION BY p ORDER BY x) FROM big WHERE i % 100 = 0",
    "SELECT x, count(*) OVER (ORDER BY x RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING), min(i) OVER (PARTITION BY x % 10 ORDER BY i ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) FROM big WHERE i < 3000",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT id FROM w WHERE row_number() OVER () > 1",
    "SELECT g FROM w GROUP BY g, row_number() OVER ()",
    "SELECT g FROM w GROUP BY g HAVING rank() OVER () > 1",
    "SELECT sum(row_number() OVER ()) FROM w",
    "SELECT row_number() OVER (ORDER BY rank() OVER ()) FROM w",
    "SELECT lag(rank() OVER ()) OVER () FROM w",
    "SELECT row_number() FROM w",
    "SELECT sum(v) OVER nosuch FROM w",
    "SELECT sum(v) OVER (nosuch ORDER BY id) FROM w",
    "SELECT sum(v) OVER w1 FROM w WINDOW w1 AS (ORDER BY id), w1 AS (ORDER BY v)",
    "SELECT sum(v) OVER (w1 PARTITION BY g) FROM w WINDOW w1 AS (ORDER BY id)",
    "SELECT sum(v) OVER (w1 ORDER BY g) FROM w WINDOW w1 AS (ORDER BY id)",
    "SELECT sum(v) OVER (w1) FROM w WINDOW w1 AS (ORDER BY id ROWS 1 PRECEDING)",
    "SELECT sum(DISTINCT v) OVER () FROM w",
    "SELECT string_agg(s, ',' ORDER BY s) OVER () FROM w",
    "SELECT row_number() FILTER (WHERE b) OVER () FROM w",
    "SELECT lower(s) OVER () FROM w",
    "SELECT ntile(0) OVER () FROM w",
    "SELECT ntile(-3) OVER (ORDER BY id) FROM w",
    "SELECT nth_value(v, 0) OVER () FROM w",
    "SELECT ntile(2::bigint) OVER () FROM w",
    "SELECT ntile(1.5) OVER () FROM w",
    "SELECT lag(v, 1::bigint) OVER () FROM w",
    "SELECT lag(v, 1, 'x') OVER () FROM w",
    "SELECT rank(v) OVER () FROM w",
    "SELECT sum(v) OVER (ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM w",
    "SELECT sum(v) OVER (ROWS BETWEEN CURRENT ROW AND UNBOUNDED PRECEDING) FROM w",
    "SELECT sum(v) OVER (ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM w",
    "SELECT sum(v) OVER (ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM w",
    "SELECT sum(v) OVER (ROWS 1 FOLLOWING) FROM w",
    "SELECT sum(v) OVER (ROWS UNBOUNDED FOLLOWING) FROM w",
    "SELECT sum(v) OVER (ORDER BY id ROWS -1 PRECEDING) FROM w",
    "SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND NULL FOLLOWING) FROM w",
    "SELECT sum(v) OVER (ORDER BY id ROWS v PRECEDING) FROM w",
    "SELECT sum(v) OVER (ORDER BY id GROUPS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM w",
    "SELECT sum(v) OVER (GROUPS 1 PRECEDING) FROM w",
    "SELECT sum(v) OVER (RANGE 1 PRECEDING) FROM w",
    "SELECT sum(v) OVER (ORDER BY id, v RANGE 1 PRECEDING) FROM w",
    "SELECT sum(v) OVER (ORDER BY s RANGE 1 PRECEDING) FROM w",
    "SELECT sum(v) OVER (ORDER BY v RANGE 1.5 PRECEDING) FROM w",
    "SELECT sum(v) OVER (ORDER BY v RANGE -1 PRECEDING) FROM w",
    "SELECT sum(v) OVER (ORDER BY f RANGE 'NaN' PRECEDING) FROM w",
    "SELECT sum(v) OVER (ORDER BY n RANGE BETWEEN CURRENT ROW AND -2 FOLLOWING) FROM w",
    "SELECT sum(v) OVER (PARTITION BY row_number() OVER ()) FROM w",
];

#[test]
fn window_functions_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}
