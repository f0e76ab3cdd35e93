//! The ordered-set aggregates (`percentile_cont`, `percentile_disc`, `mode`) and the
//! hypothetical-set aggregates (`rank`, `dense_rank`, `percent_rank`, `cume_dist` WITHIN
//! GROUP) compared with PostgreSQL 15: over int4, int8, numeric, float8, text, interval
//! and boolean keys with NULLs and duplicates, ASC/DESC and NULLS FIRST/LAST, grouped and
//! not, with FILTER, HAVING, ORDER BY on them, ROLLUP, in subqueries, on no row, with
//! direct arguments read from group keys — serial, with parallel workers and at a tiny
//! work_mem (spilled partial states) — and PostgreSQL's errors for misuse.
//!
//! Results are picked so that ties cannot make them differ: mode's keys compare equal
//! only when they are the same value, and percentile_disc of text or numeric never lands
//! on two values that compare equal but print differently.

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE os (id int, k int, a int, b bigint, n numeric, f float8, s text, iv interval)",
    "INSERT INTO os SELECT i, i % 7, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 40 - 10 END, CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 7919) % 1000 - 300 END, CASE WHEN i % 17 = 0 THEN NULL ELSE (i % 23) * 0.25 - 2 END, CASE WHEN i % 19 = 0 THEN NULL ELSE (i % 9) / 4.0 - 1 END, CASE WHEN i % 5 = 0 THEN NULL ELSE 'v' || (i % 37) END, CASE WHEN i % 7 = 3 THEN NULL ELSE (i % 10) * interval '1 day' + (i % 5) * interval '1 hour' END FROM generate_series(1, 3000) i",
    "ANALYZE os",
];

const QUERIES: &[&str] = &[
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a), percentile_disc(0.5) WITHIN GROUP (ORDER BY s), mode() WITHIN GROUP (ORDER BY s) FROM os",
    "SELECT k, percentile_cont(0.25) WITHIN GROUP (ORDER BY f), percentile_cont(0.9) WITHIN GROUP (ORDER BY n DESC), percentile_disc(0.1) WITHIN GROUP (ORDER BY b), mode() WITHIN GROUP (ORDER BY a DESC) FROM os GROUP BY k ORDER BY k",
    "SELECT percentile_cont(0.3) WITHIN GROUP (ORDER BY iv), percentile_disc(0.3) WITHIN GROUP (ORDER BY iv DESC), percentile_cont(0.123456789) WITHIN GROUP (ORDER BY b) FROM os",
    "SELECT k, percentile_cont(0.77) WITHIN GROUP (ORDER BY iv DESC), percentile_disc(0.77) WITHIN GROUP (ORDER BY s DESC NULLS FIRST) FROM os GROUP BY k ORDER BY k",
    "SELECT rank(5) WITHIN GROUP (ORDER BY a), dense_rank(5) WITHIN GROUP (ORDER BY a), percent_rank(5) WITHIN GROUP (ORDER BY a), cume_dist(5) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT k, rank(5, 'v3') WITHIN GROUP (ORDER BY a DESC NULLS LAST, s), dense_rank(null, 1.5) WITHIN GROUP (ORDER BY a NULLS FIRST, n), percent_rank(null) WITHIN GROUP (ORDER BY s DESC), cume_dist(0.5) WITHIN GROUP (ORDER BY f NULLS FIRST) FROM os GROUP BY k ORDER BY k",
    "SELECT k, rank(k) WITHIN GROUP (ORDER BY a), percentile_cont(k / 10.0) WITHIN GROUP (ORDER BY f), percentile_disc(k / 7.0) WITHIN GROUP (ORDER BY b DESC) FROM os GROUP BY k ORDER BY k",
    "SELECT k, rank(k, k) WITHIN GROUP (ORDER BY a, b), percent_rank(k + 0.5) WITHIN GROUP (ORDER BY n DESC), cume_dist(k) WITHIN GROUP (ORDER BY f) FROM os GROUP BY k ORDER BY k",
    "SELECT id % 500 AS g, percentile_cont(0.5) WITHIN GROUP (ORDER BY f), percentile_disc(0.5) WITHIN GROUP (ORDER BY s DESC), mode() WITHIN GROUP (ORDER BY a), rank(0) WITHIN GROUP (ORDER BY b), dense_rank('v1') WITHIN GROUP (ORDER BY s NULLS FIRST) FROM os GROUP BY 1",
    "SELECT k, percentile_cont(0.5) WITHIN GROUP (ORDER BY a) FILTER (WHERE id % 3 = 0), mode() WITHIN GROUP (ORDER BY s) FILTER (WHERE a > 0), cume_dist(0) WITHIN GROUP (ORDER BY b DESC) FILTER (WHERE n IS NOT NULL) FROM os GROUP BY k HAVING percentile_disc(0.5) WITHIN GROUP (ORDER BY a) > 8 ORDER BY percentile_cont(0.75) WITHIN GROUP (ORDER BY f), k",
    "SELECT k, count(*), sum(a), percentile_disc(0.5) WITHIN GROUP (ORDER BY a), string_agg(s, ',' ORDER BY s) FILTER (WHERE id < 40), stddev(a) FROM os GROUP BY k ORDER BY k",
    "SELECT (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (1), (2), (3), (4)) v(x)), k FROM os GROUP BY k ORDER BY k",
    "SELECT k, (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY o.a) FROM os o WHERE o.k = os.k) FROM os GROUP BY k ORDER BY k",
    "SELECT * FROM (SELECT k, mode() WITHIN GROUP (ORDER BY a) AS m FROM os GROUP BY k) sub WHERE m > 0 ORDER BY k",
    "SELECT id FROM os WHERE a > (SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY a) FROM os) ORDER BY id LIMIT 5",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a), mode() WITHIN GROUP (ORDER BY a), rank(3) WITHIN GROUP (ORDER BY a), dense_rank(3) WITHIN GROUP (ORDER BY a), percent_rank(3) WITHIN GROUP (ORDER BY a), cume_dist(3) WITHIN GROUP (ORDER BY a) FROM os WHERE id < 0",
    "SELECT k, percentile_cont(0.5) WITHIN GROUP (ORDER BY a), percentile_cont(0.5) WITHIN GROUP (ORDER BY a) FILTER (WHERE false), rank(3) WITHIN GROUP (ORDER BY a) FILTER (WHERE false) FROM os GROUP BY k ORDER BY k",
    "SELECT k, percentile_cont(0.5) WITHIN GROUP (ORDER BY a), rank(3) WITHIN GROUP (ORDER BY a) FROM os GROUP BY ROLLUP (k) ORDER BY k",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a) + 1, 2 * mode() WITHIN GROUP (ORDER BY b) FROM os",
    "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY id > 1500), mode() WITHIN GROUP (ORDER BY id % 3 = 0), rank(true) WITHIN GROUP (ORDER BY id % 4 = 0) FROM os",
    "SELECT k, percentile_disc(0.0) WITHIN GROUP (ORDER BY n), percentile_disc(1.0) WITHIN GROUP (ORDER BY n), percentile_cont(0.0) WITHIN GROUP (ORDER BY n), percentile_cont(1) WITHIN GROUP (ORDER BY n) FROM os GROUP BY k ORDER BY k",
    "SELECT percentile_cont(null) WITHIN GROUP (ORDER BY n), percentile_disc(null::float8) WITHIN GROUP (ORDER BY s), percentile_cont('0.25') WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM (VALUES ('Infinity'::float8), ('-Infinity'), (1)) v(x)",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY x) FROM (VALUES ('NaN'::float8), ('NaN'), (1), (1), (2)) v(x)",
    "SELECT percentile_cont(0.4) WITHIN GROUP (ORDER BY x) FROM (VALUES ('1 mon'::interval), ('1 day'), ('3 hours')) v(x)",
    "SELECT rank(2) WITHIN GROUP (ORDER BY x), dense_rank(2) WITHIN GROUP (ORDER BY x), percent_rank(2) WITHIN GROUP (ORDER BY x), cume_dist(2) WITHIN GROUP (ORDER BY x), rank(null::int) WITHIN GROUP (ORDER BY x NULLS FIRST) FROM (VALUES (1), (2), (NULL), (2)) v(x)",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s) FROM os",
    "SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT percentile_cont(-0.5) WITHIN GROUP (ORDER BY a) FROM os WHERE false",
    "SELECT percentile_cont('NaN'::float8) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT percentile_disc(1e300) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT k, percentile_disc(k / 5.0) WITHIN GROUP (ORDER BY a) FROM os GROUP BY k",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a) OVER () FROM os",
    "SELECT rank(1) WITHIN GROUP (ORDER BY a) OVER () FROM os",
    "SELECT stddev(a) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT sum() WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT string_agg(s) WITHIN GROUP (ORDER BY s) FROM os",
    "SELECT count(*) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT corr(f) WITHIN GROUP (ORDER BY f) FROM os",
    "SELECT abs(a) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT mode() FROM os",
    "SELECT mode(a) FROM os",
    "SELECT mode(a) OVER () FROM os",
    "SELECT percentile_cont(0.5) FROM os",
    "SELECT percentile_cont(0.5) OVER () FROM os",
    "SELECT rank(1) FROM os",
    "SELECT rank(1 ORDER BY a) FROM os",
    "SELECT rank() FROM os",
    "SELECT percentile_cont(DISTINCT 0.5) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT rank(DISTINCT 1) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT percentile_cont(0.5 ORDER BY a) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a), a FROM os",
    "SELECT percentile_cont(a) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT k, percentile_cont(a / 10.0) WITHIN GROUP (ORDER BY a) FROM os GROUP BY k",
    "SELECT k FROM os GROUP BY k HAVING percentile_cont(a) WITHIN GROUP (ORDER BY a) > 0",
    "SELECT percentile_cont(0.5, 0.2) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a, b) FROM os",
    "SELECT mode() WITHIN GROUP (ORDER BY a, f) FROM os",
    "SELECT mode(1) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT rank(1, 2) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT rank() WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT rank('x'::text) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT rank(1) WITHIN GROUP (ORDER BY s) FROM os",
    "SELECT rank('x') WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT percentile_cont(true) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT percentile_cont('x') WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT percentile_disc('0.5') WITHIN GROUP (ORDER BY s) FROM os",
    "SELECT percentile_cont(null) WITHIN GROUP (ORDER BY iv) FROM os",
    "SELECT a FROM os WHERE percentile_cont(0.5) WITHIN GROUP (ORDER BY a) > 1",
    "SELECT count(*) FROM os GROUP BY percentile_cont(0.5) WITHIN GROUP (ORDER BY a)",
    "SELECT percentile_cont(sum(a)) WITHIN GROUP (ORDER BY a) FROM os",
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY sum(a)) FROM os",
    "SELECT mode() WITHIN GROUP (ORDER BY a) FILTER (WHERE sum(a) > 1) FROM os",
    "SELECT percentile_cont(rank() OVER ()) WITHIN GROUP (ORDER BY a) FROM os",
];

#[test]
fn ordered_set_aggregates_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}

/// EXPLAIN VERBOSE prints the calls as PostgreSQL's ruleutils does: direct arguments,
/// WITHIN GROUP, implicit casts of the keys in parentheses, FILTER.
#[test]
fn ordered_set_calls_deparse_as_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let sql = "EXPLAIN VERBOSE SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a), percentile_disc(0.5) WITHIN GROUP (ORDER BY s DESC), mode() WITHIN GROUP (ORDER BY s NULLS FIRST), rank(1, 2) WITHIN GROUP (ORDER BY a, f DESC) FILTER (WHERE a > 0), cume_dist(1.5) WITHIN GROUP (ORDER BY a DESC NULLS LAST) FROM os";
    let output = |lines: Vec<String>| lines.into_iter().find(|l| l.trim_start().starts_with("Output: percentile_cont"));
    let weft = output(oracle::weft_lines(&mut session, sql).unwrap());
    let postgres = output(pg.query(sql).unwrap());
    assert!(postgres.is_some(), "PostgreSQL printed no aggregate output line");
    assert_eq!(weft, postgres);
}
