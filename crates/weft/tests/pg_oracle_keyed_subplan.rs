//! Correlated subqueries over one table that weft runs once and keeps by their
//! correlation keys (equalities and at most one inequality with the outer row), compared
//! with PostgreSQL 15, which runs them per outer row. Under the oracle's modes the
//! subquery's table fits the hash budget (kept by key) or not (`work_mem = 64kB`: per
//! row), so both paths give the rows PostgreSQL gives: EXISTS, NOT EXISTS, IN, NOT IN,
//! ANY / ALL and scalar subqueries under OR, in the select list and in CASE; NULL keys
//! and NULL outer values; NaN and -0 in float keys; numerics of different scales;
//! casts of the outer value; a key that is an expression; LIMIT / OFFSET in the subquery;
//! aggregating subqueries (with GROUP BY, HAVING, DISTINCT, FILTER and ORDER BY in the
//! aggregate), whose keys with no rows get the aggregate over no rows.

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE ko (id int, k int, d int, s text, f float8, n numeric, b bigint)",
    "INSERT INTO ko SELECT i, CASE WHEN i % 17 = 0 THEN NULL ELSE i % 40 END, CASE WHEN i % 23 = 0 THEN NULL ELSE (i * 7) % 1000 END, CASE WHEN i % 11 = 0 THEN NULL ELSE 's' || (i % 30) END, CASE i % 13 WHEN 0 THEN 'NaN' WHEN 1 THEN '-0' WHEN 2 THEN NULL ELSE (i % 6) / 2.0 END, CASE WHEN i % 19 = 0 THEN NULL ELSE round((i % 8) / 4.0, 2) END, i % 45 FROM generate_series(1, 300) i",
    "CREATE TABLE ki (k int, d int, x int, s text, f float8, n numeric)",
    "INSERT INTO ki SELECT CASE WHEN i % 29 = 0 THEN NULL ELSE i % 45 END, CASE WHEN i % 31 = 0 THEN NULL ELSE (i * 13) % 1000 END, i % 9, CASE WHEN i % 7 = 0 THEN NULL ELSE 's' || (i % 40) END, CASE i % 11 WHEN 0 THEN 'NaN' WHEN 1 THEN '0' WHEN 2 THEN NULL ELSE (i % 5) / 2.0 END, CASE WHEN i % 23 = 0 THEN NULL ELSE round((i % 6) / 2.0, i % 3) END FROM generate_series(1, 6000) i",
];

const QUERIES: &[&str] = &[
    // Equalities and one inequality under OR (a SubPlan, not a semi join).
    "SELECT count(*) FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ki.k = ko.k AND ki.d < ko.d AND ki.x > 3)",
    "SELECT id FROM ko WHERE ko.id < 5 OR NOT EXISTS (SELECT 1 FROM ki WHERE ki.k = ko.k AND ki.d >= ko.d) ORDER BY 1",
    "SELECT count(*) FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ki.d < ko.d - 900)",
    "SELECT id FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ko.d <= ki.d - 990 AND ki.x = 2) ORDER BY 1",
    "SELECT id FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ki.d > ko.d + 985) ORDER BY 1",
    "SELECT count(*) FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ki.k = ko.k AND ki.s = ko.s)",
    "SELECT count(*) FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ki.k + 1 = ko.k AND ki.x = ko.id % 9)",
    // Floats with NaN and -0, numerics of different scales, a cast of the outer value.
    "SELECT id, f FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ki.f = ko.f AND ki.k = ko.k) ORDER BY 1",
    "SELECT id FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ki.f > ko.f) ORDER BY 1",
    "SELECT id FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ki.n = ko.n AND ki.x = 1) ORDER BY 1",
    "SELECT id FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ki.k = ko.b AND ki.x = 4) ORDER BY 1",
    "SELECT id FROM ko WHERE ko.id < 0 OR EXISTS (SELECT 1 FROM ki WHERE ki.k::bigint = ko.b AND ki.x = 4) ORDER BY 1",
    // IN, NOT IN, ANY and ALL with a correlation.
    "SELECT count(*), sum(CASE WHEN ko.d IN (SELECT ki.x * 100 FROM ki WHERE ki.k = ko.k) THEN 1 ELSE 0 END) FROM ko",
    "SELECT id, ko.d NOT IN (SELECT ki.d FROM ki WHERE ki.k = ko.k AND ki.x = 1) FROM ko ORDER BY 1",
    "SELECT id, ko.s = ANY (SELECT ki.s FROM ki WHERE ki.s >= ko.s AND ki.k = ko.k) FROM ko ORDER BY 1",
    "SELECT id, ko.d > ALL (SELECT ki.d FROM ki WHERE ki.k = ko.k AND ki.x > 7) FROM ko ORDER BY 1",
    "SELECT id, ko.d < ANY (SELECT ki.d FROM ki WHERE ki.k = ko.k AND ki.d < ko.d + 50) FROM ko ORDER BY 1",
    // Scalar subqueries (NULL when nothing matches), with LIMIT / OFFSET.
    "SELECT id, (SELECT ki.x FROM ki WHERE ki.k = ko.k + 1000 AND ki.d >= ko.d) FROM ko ORDER BY 1",
    "SELECT id, (SELECT ki.x FROM ki WHERE ki.k = ko.k AND ki.d = ko.d) FROM ko ORDER BY 1",
    "SELECT id, (SELECT 1 FROM ki WHERE ki.k = ko.k LIMIT 1), (SELECT count(*) FROM (SELECT 1 FROM ki WHERE ki.k = ko.k OFFSET 140) s) FROM ko ORDER BY 1",
    "SELECT id, CASE WHEN EXISTS (SELECT 1 FROM ki WHERE ki.k = ko.k AND ki.d BETWEEN ko.d AND ko.d + 20) THEN 'y' ELSE 'n' END FROM ko ORDER BY 1",
    // Aggregating subqueries, grouped by the keys first: a key no row has gets the
    // aggregate over no rows (count 0, max NULL, no row under GROUP BY or a false HAVING).
    "SELECT id, (SELECT max(ki.d) FROM ki WHERE ki.k = ko.k), (SELECT count(*) FROM ki WHERE ki.k = ko.k + 20 AND ki.x > 2) FROM ko ORDER BY 1",
    "SELECT id, (SELECT sum(ki.x) + count(ki.s) FROM ki WHERE ki.s = ko.s AND ki.k = ko.k HAVING count(*) > 1) FROM ko ORDER BY 1",
    "SELECT id, (SELECT string_agg(DISTINCT ki.s, ',' ORDER BY ki.s) FROM ki WHERE ki.f = ko.f AND ki.x = 3) FROM ko ORDER BY 1",
    "SELECT id, (SELECT avg(ki.n) FROM ki WHERE ki.n = ko.n), (SELECT count(*) FILTER (WHERE ki.x > 4) FROM ki WHERE ki.k::bigint = ko.b) FROM ko ORDER BY 1",
    "SELECT id FROM ko WHERE ko.d > (SELECT avg(ki.d) FROM ki WHERE ki.k = ko.k) OR ko.id < 3 ORDER BY 1",
    "SELECT id FROM ko WHERE ko.id < 0 OR ko.d IN (SELECT max(ki.d) FROM ki WHERE ki.k = ko.k GROUP BY ki.s) ORDER BY 1",
    "SELECT id, EXISTS (SELECT ki.s FROM ki WHERE ki.k = ko.k GROUP BY ki.s HAVING count(*) > 17) FROM ko ORDER BY 1",
    "SELECT id, (SELECT max(ki.d) FROM ki WHERE ki.k = ko.k LIMIT 1 OFFSET 0), (SELECT count(*) FROM ki WHERE ki.k = ko.k OFFSET 1) FROM ko ORDER BY 1",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    // A grouped aggregate with more than one row for some outer row.
    "SELECT id, (SELECT count(*) FROM ki WHERE ki.k = ko.k GROUP BY ki.s) FROM ko",
    // More than one row for some outer row.
    "SELECT id, (SELECT ki.x FROM ki WHERE ki.k = ko.k AND ki.d < ko.d) FROM ko",
];

#[test]
fn correlated_subqueries_kept_by_key_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}
