//! EXISTS, IN, NOT IN and `op ANY | ALL` over subqueries where they are expressions —
//! under OR and NOT, in the select list, CASE, HAVING, join conditions, UPDATE and DELETE,
//! and a correlated NOT IN anywhere — compared with PostgreSQL 15 (the other top-level
//! WHERE forms become semi and anti joins and are covered by pg_oracle_join). Correlated and uncorrelated, NULLs on both sides, empty
//! subqueries, mixed types (the hashed and the row-by-row membership tests), each query
//! serial, with parallel workers forced, and at a tiny work_mem.

use super::oracle;

use oracle::{compare_script, error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE o (id int, k int, x bigint, s text, f float8)",
    "INSERT INTO o SELECT i, CASE WHEN i % 13 = 0 THEN NULL ELSE i % 17 END, CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 31) % 50 END, CASE WHEN i % 11 = 0 THEN NULL ELSE substr(md5(i::text), 1, 2) END, CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 9) / 2.0 END FROM generate_series(1, 600) i",
    "CREATE TABLE n (k int, y int, s text)",
    "INSERT INTO n SELECT CASE WHEN i % 10 = 0 THEN NULL ELSE i % 12 END, CASE WHEN i % 6 = 0 THEN NULL ELSE (i * 7) % 40 END, substr(md5((i * 3)::text), 1, 2) FROM generate_series(1, 90) i",
    "CREATE TABLE nn AS SELECT k, y FROM n WHERE k IS NOT NULL AND y IS NOT NULL",
    "CREATE TABLE e (k int, y int)",
];

const QUERIES: &[&str] = &[
    // Under OR and NOT, uncorrelated (hashed where both sides are one type).
    "SELECT id, k FROM o WHERE x > 45 OR k IN (SELECT k FROM n WHERE y < 10)",
    "SELECT id FROM o WHERE x > 45 OR k NOT IN (SELECT k FROM n)",
    "SELECT id FROM o WHERE x > 45 OR k NOT IN (SELECT k FROM nn)",
    "SELECT id FROM o WHERE NOT (k IN (SELECT k FROM nn) OR x IN (SELECT y FROM nn))",
    "SELECT id FROM o WHERE s < 'b' OR s IN (SELECT s FROM n WHERE k > 5)",
    "SELECT id FROM o WHERE k > 14 OR x IN (SELECT y FROM e) OR NOT EXISTS (SELECT 1 FROM e)",
    // Mixed types: int4 against int8, float8 against int (row by row).
    "SELECT id FROM o WHERE x IN (SELECT k FROM n) OR f IN (SELECT y FROM n)",
    "SELECT id FROM o WHERE id < 30 AND (k = ANY (SELECT x FROM o WHERE id > 590) OR f NOT IN (SELECT k FROM nn))",
    // Correlated, under OR.
    "SELECT id FROM o WHERE x > 45 OR EXISTS (SELECT 1 FROM n WHERE n.k = o.k AND n.y > o.x)",
    "SELECT id FROM o WHERE k IS NULL OR o.x NOT IN (SELECT y FROM n WHERE n.k = o.k)",
    "SELECT id FROM o WHERE NOT EXISTS (SELECT 1 FROM n WHERE n.k = o.k) OR s IN (SELECT s FROM n WHERE n.y = o.x)",
    // Correlated NOT IN at the top level of WHERE (not an anti join: a subplan filter).
    "SELECT id FROM o WHERE k NOT IN (SELECT k FROM n WHERE n.y > o.x)",
    "SELECT id FROM o WHERE x NOT IN (SELECT y FROM n WHERE n.k = o.k) AND id < 300",
    "SELECT id FROM o WHERE NOT (s IN (SELECT s FROM n WHERE n.k = o.k)) AND x <> ALL (SELECT y FROM nn WHERE nn.k = o.k)",
    // Correlated EXISTS / IN at the top level of WHERE whose subquery aggregates, groups,
    // is DISTINCT or has a LIMIT: subplan filters, not joins with a relation planned alone.
    "SELECT id FROM o WHERE x IN (SELECT max(y) FROM n WHERE n.k = o.k GROUP BY s)",
    "SELECT id FROM o WHERE x IN (SELECT max(y) FROM n WHERE n.k = o.k) AND id < 400",
    "SELECT id FROM o WHERE EXISTS (SELECT max(y) FROM n WHERE n.k = o.k GROUP BY y HAVING count(*) > 1)",
    "SELECT id FROM o WHERE NOT EXISTS (SELECT count(*) FROM n WHERE n.y = o.x HAVING count(*) > 1)",
    "SELECT id FROM o WHERE x = ANY (SELECT y FROM n WHERE n.k = o.k GROUP BY y)",
    "SELECT id FROM o WHERE x IN (SELECT DISTINCT y FROM n WHERE n.k = o.k) AND s IN (SELECT s FROM n WHERE n.y < o.x ORDER BY s LIMIT 3)",
    // Select-list subplans under ORDER BY ... LIMIT run after the sort, for the rows kept.
    "SELECT id, (SELECT max(y) FROM n WHERE n.k = o.k), x FROM o ORDER BY x DESC NULLS LAST, id LIMIT 7 OFFSET 3",
    "SELECT s, EXISTS (SELECT 1 FROM n WHERE n.y = o.x) AS e, id FROM o ORDER BY e, id LIMIT 5",
    "SELECT id, (SELECT count(*) FROM n WHERE n.y < o.x) + id FROM o WHERE k > 3 ORDER BY s DESC, id FETCH FIRST 4 ROWS ONLY",
    // Rows: (a, b) [NOT] IN (SELECT x, y ...), a semi join on two keys at the top level,
    // a subplan elsewhere and for NOT IN (a NULL field need not make the row unknown).
    "SELECT id FROM o WHERE (k, x) IN (SELECT k, y FROM n)",
    "SELECT id FROM o WHERE (k, s) IN (SELECT k, s FROM n WHERE y > 5) AND id > 100",
    "SELECT id FROM o WHERE (k, x) IN (SELECT k, max(y) FROM n GROUP BY k)",
    "SELECT id FROM o WHERE (k, x) NOT IN (SELECT k, y FROM n)",
    "SELECT id FROM o WHERE (k, x) NOT IN (SELECT k, y FROM nn)",
    "SELECT id, (k, x) IN (SELECT k, y FROM n), (k, 3) NOT IN (SELECT k, y FROM nn), (x, k) <> ALL (SELECT y, k FROM n WHERE n.s < o.s) FROM o WHERE id < 90",
    "SELECT id FROM o WHERE x > 45 OR (k, x) IN (SELECT k, y FROM n WHERE n.s > o.s)",
    // In the select list and CASE.
    "SELECT id, k IN (SELECT k FROM n), k NOT IN (SELECT k FROM nn), EXISTS (SELECT 1 FROM n WHERE n.k = o.k), NOT EXISTS (SELECT 1 FROM e) FROM o WHERE id < 60",
    "SELECT id, x > ALL (SELECT y FROM n WHERE n.k = o.k), x < ANY (SELECT y FROM n WHERE n.k = o.k), x = SOME (SELECT y FROM nn), x <> ALL (SELECT y FROM n), x >= ALL (SELECT y FROM e) FROM o WHERE id < 80",
    "SELECT id, CASE WHEN EXISTS (SELECT 1 FROM n WHERE n.y = o.x) THEN 'hit' WHEN k IN (SELECT y FROM n) THEN 'k' ELSE 'none' END FROM o WHERE id < 100",
    "SELECT '3' IN (SELECT k FROM n), 1.0 IN (SELECT k FROM n), NULL::int IN (SELECT k FROM e), NULL::int NOT IN (SELECT k FROM e), NULL::int IN (SELECT k FROM nn), 5 > ALL (SELECT k FROM e)",
    // Grouped: in the select list and HAVING.
    "SELECT k, count(*), k IN (SELECT y FROM n) FROM o GROUP BY k",
    "SELECT k, count(*) FROM o GROUP BY k HAVING k IN (SELECT k FROM n WHERE y > 20) OR count(*) > 36",
    "SELECT k, bool_or(x IN (SELECT y FROM nn)), count(*) FILTER (WHERE EXISTS (SELECT 1 FROM n WHERE n.y = o.x)) FROM o GROUP BY k",
    "SELECT k, EXISTS (SELECT 1 FROM n WHERE n.k = o.k AND n.y > 30) FROM o GROUP BY k",
    // Grouped by an expression holding a subquery: the same expression is that key.
    "SELECT k IN (SELECT y FROM n), count(*) FROM o GROUP BY 1",
    "SELECT EXISTS (SELECT 1 FROM n WHERE n.y = o.x), count(*), sum(id) FROM o GROUP BY EXISTS (SELECT 1 FROM n WHERE n.y = o.x)",
    "SELECT x NOT IN (SELECT y FROM n WHERE n.k = o.k) AS m, count(*) FROM o GROUP BY m HAVING (x NOT IN (SELECT y FROM n WHERE n.k = o.k)) IS NOT NULL",
    "SELECT (x <> ALL (SELECT y FROM nn WHERE nn.k = o.k)) AS c0, sum(x) FROM o GROUP BY (x <> ALL (SELECT y FROM nn WHERE nn.k = o.k)) ORDER BY 1",
    "SELECT CASE WHEN k IN (SELECT y FROM n) THEN 'in' ELSE 'out' END, count(*) FROM o GROUP BY 1",
    "SELECT (SELECT max(y) FROM n WHERE n.k = o.k), count(*) FROM o GROUP BY 1",
    "SELECT k IN (SELECT y FROM n) AS m, count(*) FROM o GROUP BY ROLLUP (m)",
    // In join conditions and over joins.
    "SELECT o.id, n.y FROM o LEFT JOIN n ON o.k = n.k AND n.y IN (SELECT y FROM nn WHERE k < 6) WHERE o.id < 120",
    "SELECT count(*), sum(o.id) FROM o JOIN n ON o.k = n.k WHERE o.x > 40 OR n.s IN (SELECT s FROM o WHERE id < 50)",
    // Nested, and in a subquery in FROM.
    "SELECT id FROM o WHERE x > 45 OR k IN (SELECT k FROM n WHERE y IN (SELECT x FROM o WHERE id < 40) OR s > 'e')",
    "SELECT count(*) FROM (SELECT id, k IN (SELECT k FROM nn) AS member FROM o) t WHERE member",
    "SELECT id, (SELECT count(*) FROM n WHERE n.k = o.k AND (n.y > 30 OR n.s IN (SELECT s FROM o WHERE id < 10))) FROM o WHERE id < 50",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT k IN (SELECT k, y FROM n) FROM o",
    "SELECT k FROM o WHERE x > 5 OR k IN (SELECT s FROM n)",
    "SELECT k > ANY (SELECT nosuch FROM n) FROM o",
    "SELECT id FROM o WHERE (k, x) IN (SELECT k FROM n)",
    "SELECT id FROM o WHERE (k) IN (SELECT k, y FROM n)",
    "SELECT id FROM o WHERE (k, x) NOT IN (SELECT k FROM n)",
    "SELECT (k, x) IN (SELECT k, y, s FROM n) FROM o",
    // A subquery that is not the grouped one reads an ungrouped column.
    "SELECT k IN (SELECT y FROM n), count(*) FROM o GROUP BY k IN (SELECT k FROM n)",
];

/// Data-modifying statements whose conditions hold such subqueries, correlated or not.
const SCRIPT: &[&str] = &[
    "CREATE TABLE m AS SELECT * FROM o WHERE id <= 200",
    "UPDATE m SET x = -x WHERE k IN (SELECT k FROM nn) OR x IS NULL",
    "SELECT count(*), sum(x) FROM m",
    "UPDATE m SET s = 'zz' WHERE x < -40 OR EXISTS (SELECT 1 FROM n WHERE n.k = m.k AND n.y = 3)",
    "SELECT count(*) FROM m WHERE s = 'zz'",
    "DELETE FROM m WHERE x > 40 OR NOT EXISTS (SELECT 1 FROM n WHERE n.k = m.k)",
    "SELECT count(*), sum(id) FROM m",
    "DELETE FROM m WHERE k NOT IN (SELECT y FROM n WHERE n.k = m.k) OR k IS NULL",
    "SELECT count(*), sum(id) FROM m",
    "DELETE FROM m WHERE (k, x) IN (SELECT k, -y FROM n)",
    "SELECT count(*), sum(id) FROM m",
    "DROP TABLE m",
];

#[test]
fn subqueries_in_expressions_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
    session.execute("RESET ALL").unwrap();
    compare_script(&pg, &mut session, SCRIPT, false);
}
