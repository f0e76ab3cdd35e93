//! The statistics aggregates compared with PostgreSQL 15: the variance family over int4,
//! int8, numeric (exact) and float8 (Youngs-Cramer), bit_and/bit_or/bit_xor, and the
//! two-argument regression aggregates; grouped and not, with FILTER and DISTINCT, as
//! window functions, on no row and one row, serial, with parallel workers and at a tiny
//! work_mem (spilled partial states); and PostgreSQL's errors for wrong argument types.
//!
//! Float results of a parallel or spilled aggregate combine partial states in another
//! order than PostgreSQL's, so their last digits may differ: the harness compares floats
//! to 1e-12 relative; serial results are PostgreSQL's algorithm and digits. Numeric
//! inputs mostly have scale 2 here: weft's numeric holds 38 digits, and `var_pop` of values
//! with 20 decimals shows 40, which fits only for a spread below about 1.7 (PostgreSQL's
//! numeric has no such limit; the sums behind it are exact in 256 bits).

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE g (id int, k int, a int, b bigint, n numeric, f float8, y float8)",
    "INSERT INTO g SELECT i, i % 7, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 40 - 10 END, CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 7919) % 1000 - 300 END, CASE WHEN i % 17 = 0 THEN NULL ELSE (i % 23) * 0.25 - 2 END, CASE WHEN i % 19 = 0 THEN NULL ELSE (i % 9) / 3.0 - 1 END, CASE WHEN i % 5 = 0 THEN NULL ELSE round((sin(i) * 10)::numeric, 3)::float8 END FROM generate_series(1, 3000) i",
    "ANALYZE g",
];

const QUERIES: &[&str] = &[
    "SELECT k, stddev(a), stddev_samp(b), stddev_pop(n), variance(f), var_samp(a), var_pop(b), var_pop(n), variance(n) FROM g GROUP BY k ORDER BY k",
    "SELECT stddev(a), stddev_pop(a), var_samp(b), var_pop(b), stddev(n), var_pop(n), stddev(f), stddev_pop(f), var_samp(f), var_pop(f) FROM g",
    "SELECT id % 500 AS g, stddev(a), var_pop(n), stddev(f), var_samp(b), bit_xor(b), bit_and(a), bit_or(b) FROM g GROUP BY 1",
    "SELECT k, bit_and(a), bit_or(a), bit_xor(a), bit_and(b), bit_or(b), bit_xor(b) FROM g GROUP BY k ORDER BY k",
    "SELECT bit_and(a), bit_or(a), bit_xor(a), bit_and(b + 1000), bit_or(b), bit_xor(b) FROM g",
    "SELECT k, corr(y, f), covar_pop(y, f), covar_samp(y, f), regr_count(y, f), regr_avgx(y, f), regr_avgy(y, f), regr_slope(y, f), regr_intercept(y, f), regr_r2(y, f), regr_sxx(y, f), regr_syy(y, f), regr_sxy(y, f) FROM g GROUP BY k ORDER BY k",
    "SELECT corr(a, b), covar_pop(a, n), regr_slope(b, a), regr_count(a, n), regr_avgx(n, a), regr_sxy(f, a) FROM g",
    // Spilled partial states combine in another order than PostgreSQL's spilled tuples,
    // so the last digits may differ, and a sum of squares of equal values may be 0 in one
    // and 1e-16 in the other: rounded.
    "SELECT id % 500 AS g, regr_count(y, f), round(regr_sxx(y, f)::numeric, 9), round(regr_avgy(y, f)::numeric, 9), round(covar_pop(y, a)::numeric, 9) FROM g GROUP BY 1",
    "SELECT k, stddev(a) FILTER (WHERE id % 3 = 0), var_pop(n) FILTER (WHERE f > 0), bit_or(b) FILTER (WHERE a > 5), regr_slope(y, f) FILTER (WHERE id < 2000) FROM g GROUP BY k ORDER BY k",
    "SELECT k, stddev(DISTINCT a), var_pop(DISTINCT n), bit_xor(DISTINCT b), variance(DISTINCT f), count(*) FROM g GROUP BY k ORDER BY k",
    "SELECT stddev(DISTINCT a), var_samp(DISTINCT b) FROM g",
    "SELECT k, stddev(a), variance(n) FROM g WHERE id <= k GROUP BY k ORDER BY k",
    "SELECT stddev(a), stddev_pop(a), var_samp(n), var_pop(f), bit_and(a), corr(y, f), regr_count(y, f), regr_r2(y, f) FROM g WHERE id < 0",
    "SELECT stddev(a), stddev_pop(a), var_samp(n), var_pop(f), corr(y, f), covar_samp(y, f), regr_count(y, f) FROM g WHERE id = 5",
    "SELECT k, stddev(a) FROM g GROUP BY k HAVING stddev(a) > 11.56 ORDER BY k",
    "SELECT id, stddev(a) OVER (PARTITION BY k ORDER BY id), var_pop(n) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING), bit_or(a) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM g WHERE id <= 300 ORDER BY id",
    "SELECT id, variance(f) OVER (ORDER BY id ROWS BETWEEN 4 PRECEDING AND CURRENT ROW), regr_slope(y, f) OVER (PARTITION BY k), corr(y, f) OVER (ORDER BY id ROWS BETWEEN 5 PRECEDING AND 5 FOLLOWING), regr_count(y, f) OVER (ORDER BY id) FROM g WHERE id <= 200 ORDER BY id",
    "SELECT id, stddev(a) FILTER (WHERE a > 0) OVER (PARTITION BY k ORDER BY id) FROM g WHERE id <= 100 ORDER BY id",
    "SELECT var_pop(x), stddev(x), stddev_pop(x) FROM (VALUES (1), (1), (1)) v(x)",
    "SELECT variance(x), stddev(x) FROM (VALUES (1.5), (2.25), (-3.125), (NULL)) v(x)",
    "SELECT stddev(x), var_pop(x) FROM (VALUES ('Infinity'::float8), (1)) v(x)",
    "SELECT stddev(x), var_pop(x) FROM (VALUES ('NaN'::float8), (1), (2)) v(x)",
    "SELECT corr(y, x), regr_slope(y, x), regr_r2(y, x), regr_intercept(y, x) FROM (VALUES (1.0, 2.0), (3.0, 2.0)) v(y, x)",
    "SELECT corr(y, x), regr_slope(y, x), regr_r2(y, x) FROM (VALUES (2.0, 1.0), (2.0, 3.0)) v(y, x)",
    "SELECT regr_sxx(y, x), regr_syy(y, x), regr_sxy(y, x) FROM (VALUES ('Infinity'::float8, 1::float8), (1, 2)) v(y, x)",
    "SELECT bit_and(x), bit_or(x), bit_xor(x) FROM (VALUES (-2147483648), (2147483647), (-1)) v(x)",
    "SELECT bit_and(x), bit_or(x), bit_xor(x) FROM (VALUES (-9223372036854775807::bigint), (9223372036854775807), (5)) v(x)",
    "SELECT stddev(x) FROM (VALUES (123456789012::bigint), (-98765432109), (5)) v(x)",
    "SELECT var_samp(x), stddev(x) FROM (VALUES (0.001), (0.002), (0.0035)) v(x)",
    "SELECT stddev(x) FROM generate_series(1, 1000) x",
    // Squares past 38 digits: int8 extremes, and numerics with 20 decimals whose spread is
    // 0 or small (Σx² is summed exactly; only the result must fit weft's numeric).
    "SELECT k, stddev(x), var_pop(x), var_samp(x), stddev_pop(x) FROM (SELECT id % 3 AS k, CASE WHEN id % 2 = 0 THEN 9223372036854775807 - id ELSE -9223372036854775807 + id END::bigint AS x FROM g) s GROUP BY k ORDER BY k",
    "SELECT n / 4 AS q, var_pop(n / 4), stddev(n / 4), var_samp(n / 4) FROM g GROUP BY 1 ORDER BY 1",
    "SELECT k, var_samp(n / 1000), stddev(n / 1000), var_pop(n / 1000) FROM g GROUP BY k ORDER BY k",
    "SELECT k, stddev(n / 100), stddev_pop(n / 100), var_samp(n / 100) FROM g GROUP BY k ORDER BY k",
    "SELECT sqrt(0.0000250000000000000000000000000000000000), sqrt(0.00027000000000000000000000000000000001)",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT stddev(s) FROM (VALUES ('a'::text)) v(s)",
    "SELECT variance(true)",
    "SELECT bit_and(n) FROM g",
    "SELECT bit_or(f) FROM g",
    "SELECT bit_xor('x'::text)",
    "SELECT corr(a) FROM g",
    "SELECT regr_slope(a, 'x'::text) FROM g",
    "SELECT covar_pop(true, 1.0)",
    "SELECT stddev(a, b) FROM g",
    "SELECT var_pop(f) FROM (VALUES (1e308::float8), (-1e308::float8)) v(f)",
    "SELECT stddev(stddev(a)) FROM g",
];

#[test]
fn statistics_aggregates_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}
