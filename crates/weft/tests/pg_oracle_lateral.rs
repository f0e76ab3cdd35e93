//! LATERAL compared with PostgreSQL 15: subqueries reading earlier FROM items (top-N per
//! group, per-row aggregates), `CROSS JOIN LATERAL`, `JOIN LATERAL ... ON`, `LEFT JOIN
//! LATERAL` with outer rows nothing matches, NULLs in the columns read, functions in
//! FROM reading earlier columns (`generate_series(1, t.n)`), LATERAL items followed by
//! further joins, WHERE conditions and aggregates over the result; and PostgreSQL's
//! errors for references a FROM item may not make.

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE g (id int, k int, n int, s text)",
    "INSERT INTO g SELECT i, i % 7, CASE WHEN i % 9 = 0 THEN NULL ELSE i % 5 END, CASE WHEN i % 4 = 0 THEN NULL ELSE 'g' || i END FROM generate_series(1, 60) i",
    "CREATE TABLE v (g_id int, k int, x int, t text)",
    "INSERT INTO v SELECT i % 50, i % 7, (i * 37) % 101, CASE WHEN i % 6 = 0 THEN NULL ELSE substr(md5(i::text), 1, 3) END FROM generate_series(1, 3000) i",
    "INSERT INTO v VALUES (NULL, NULL, 5, 'nul'), (3, 2, NULL, 'nx')",
    "CREATE TABLE c (k int, label text)",
    "INSERT INTO c SELECT i, 'c' || i FROM generate_series(0, 4) i",
];

const QUERIES: &[&str] = &[
    // Top-N per group.
    "SELECT g.id, s.x FROM g, LATERAL (SELECT x FROM v WHERE v.g_id = g.id ORDER BY x DESC LIMIT 2) s ORDER BY g.id, s.x",
    "SELECT g.id, s.x, s.t FROM g CROSS JOIN LATERAL (SELECT x, t FROM v WHERE v.g_id = g.id AND v.x IS NOT NULL ORDER BY x, t LIMIT 3) s WHERE g.id < 20 ORDER BY 1, 2, 3",
    "SELECT g.id, s.x FROM g LEFT JOIN LATERAL (SELECT x FROM v WHERE v.g_id = g.id ORDER BY x LIMIT 1) s ON true ORDER BY g.id",
    // Per-row aggregates.
    "SELECT g.id, s.c, s.m FROM g, LATERAL (SELECT count(*) AS c, max(x) AS m FROM v WHERE v.g_id = g.id) s ORDER BY g.id",
    "SELECT g.id, s.* FROM g, LATERAL (SELECT count(*), sum(x), avg(x) FROM v WHERE v.k = g.k AND v.x < g.id) s ORDER BY g.id",
    "SELECT count(*), sum(s.c) FROM g, LATERAL (SELECT count(*) AS c FROM v WHERE v.g_id = g.n) s",
    // LEFT JOIN LATERAL with empty matches, and an ON condition.
    "SELECT g.id, s.x FROM g LEFT JOIN LATERAL (SELECT x FROM v WHERE v.g_id = g.id + 45) s ON true ORDER BY g.id, s.x",
    "SELECT g.id, s.x FROM g LEFT JOIN LATERAL (SELECT x FROM v WHERE v.g_id = g.id) s ON s.x > 90 ORDER BY g.id, s.x",
    "SELECT g.id, s.x FROM g JOIN LATERAL (SELECT x FROM v WHERE v.g_id = g.id) s ON s.x > 95 ORDER BY g.id, s.x",
    "SELECT g.id, s.t FROM g JOIN LATERAL (SELECT t FROM v WHERE v.k = g.k ORDER BY t NULLS FIRST LIMIT 1) s ON true ORDER BY g.id",
    // NULLs in the columns the LATERAL item reads.
    "SELECT g.id, g.n, s.c FROM g, LATERAL (SELECT count(*) AS c FROM v WHERE v.k = g.n) s WHERE g.n IS NULL ORDER BY g.id",
    "SELECT g.id, s.s2 FROM g, LATERAL (SELECT g.s || '!' AS s2) s ORDER BY g.id",
    "SELECT g.id, s.y FROM g, LATERAL (SELECT coalesce(g.n, -1) * 10 AS y) s WHERE s.y < 20 ORDER BY g.id",
    // Functions in FROM reading earlier columns.
    "SELECT g.id, gs FROM g, generate_series(1, g.n) gs ORDER BY g.id, gs",
    "SELECT g.id, x FROM g CROSS JOIN generate_series(g.k, g.k + 2, 2) AS x WHERE g.id BETWEEN 10 AND 20 ORDER BY 1, 2",
    "SELECT count(*), sum(gs) FROM g, generate_series(g.id, 100) gs",
    "SELECT g.id, gs FROM g, generate_series(g.n, 3) gs WHERE g.id < 15 ORDER BY 1, 2",
    // The same with the (optional) LATERAL keyword.
    "SELECT g.id, gs FROM g, LATERAL generate_series(1, g.n) gs ORDER BY g.id, gs",
    "SELECT g.id, x FROM g CROSS JOIN LATERAL generate_series(g.k, g.k + 2, 2) AS x WHERE g.id BETWEEN 10 AND 20 ORDER BY 1, 2",
    "SELECT g.id, s.y FROM g LEFT JOIN LATERAL generate_series(1, g.n) AS s(y) ON s.y > 2 WHERE g.id < 12 ORDER BY 1, 2",
    "SELECT count(*), sum(gs) FROM g, lateral generate_series(g.id, 60) gs WHERE g.k = 3",
    // Joins before and after a LATERAL item.
    "SELECT g.id, c.label, s.x FROM g JOIN c ON c.k = g.n, LATERAL (SELECT max(x) AS x FROM v WHERE v.k = c.k AND v.g_id = g.id) s ORDER BY 1",
    "SELECT g.id, s.x, c.label FROM g, LATERAL (SELECT x, k FROM v WHERE v.g_id = g.id ORDER BY x LIMIT 1) s JOIN c ON c.k = s.k ORDER BY 1",
    "SELECT g.id, s.m, t.m2 FROM g, LATERAL (SELECT max(x) AS m FROM v WHERE v.g_id = g.id) s, LATERAL (SELECT s.m + g.id AS m2) t WHERE g.id % 10 = 1 ORDER BY 1",
    "SELECT a.id, b.id, s.c FROM g a JOIN g b ON a.id = b.id + 1, LATERAL (SELECT count(*) AS c FROM v WHERE v.g_id IN (a.id, b.id)) s WHERE a.id < 10 ORDER BY 1",
    // WHERE conditions on the relation before the item filter it before the item runs
    // (also through an outer join there), but not when a RIGHT JOIN follows: a condition
    // true of NULL (`g.id IS NULL`) would then keep rows the join NULL-extended.
    "SELECT a.id, b.id, s.x FROM g a RIGHT JOIN g b ON a.id = b.n AND b.id IS NULL LEFT JOIN LATERAL (SELECT x FROM v WHERE v.g_id = a.id ORDER BY x LIMIT 1) s ON true WHERE b.k = 3 AND least(b.id, b.n) <> 2 ORDER BY 2",
    "SELECT g.id, s.x FROM g LEFT JOIN LATERAL (SELECT x FROM v WHERE v.g_id = g.id ORDER BY x DESC LIMIT 2) s ON true WHERE (g.k = 2 OR g.s IS NULL) AND coalesce(s.x, 0) < 95 AND g.id > 3 ORDER BY 1, 2",
    "SELECT g.id, s.x, c.k FROM g CROSS JOIN LATERAL (SELECT max(x) AS x FROM v WHERE v.g_id = g.id) s RIGHT JOIN c ON c.k = g.n WHERE g.id IS NULL OR g.id < 5 ORDER BY 3, 1",
    "SELECT g.id, s.x, c.k FROM c LEFT JOIN g ON c.k = g.n CROSS JOIN LATERAL (SELECT max(x) AS x FROM v WHERE v.g_id = g.id) s WHERE g.id IS NULL OR g.id < 5 ORDER BY 3, 1",
    // Subqueries that only filter and project one table: joined as that table.
    "SELECT g.id, s.x, s.t FROM g CROSS JOIN LATERAL (SELECT x, t FROM v WHERE v.g_id = g.id AND v.x > 50) s ORDER BY 1, 2, 3",
    "SELECT g.id, s.y FROM g, LATERAL (SELECT x * 2 + 1 AS y FROM v WHERE v.k = g.k AND v.g_id < g.id) s WHERE g.id < 30 ORDER BY 1, 2",
    "SELECT g.id, s.x FROM g LEFT JOIN LATERAL (SELECT x FROM v WHERE v.g_id = g.id + 40) s ON s.x > 30 ORDER BY 1, 2",
    "SELECT g.id, s.x, s.one FROM g LEFT JOIN LATERAL (SELECT x, 1 AS one FROM v WHERE v.g_id = g.id + 45) s ON true ORDER BY 1, 2",
    "SELECT g.id, s.gx FROM g, LATERAL (SELECT g.id + v.x AS gx FROM v WHERE v.g_id = g.id) s WHERE g.id < 6 ORDER BY 1, 2",
    "SELECT g.id, s.x FROM g, LATERAL (SELECT g.x FROM v g WHERE g.g_id = 7) s WHERE g.id < 3 ORDER BY 1, 2",
    "SELECT g.id, s.t FROM g, LATERAL (SELECT t FROM v WHERE v.t = g.s OR v.k = g.n AND v.x < 3) s ORDER BY 1, 2",
    "SELECT count(*), count(s.x), sum(s.x) FROM g LEFT JOIN LATERAL (SELECT x FROM v WHERE v.k = g.n AND v.x IS NOT NULL) s ON s.x < g.id",
    "SELECT g.id, s.r FROM g, LATERAL (SELECT x AS r FROM v WHERE v.g_id = g.id AND random() < 2) s WHERE g.id = 9 ORDER BY 2",
    // Under LEFT JOIN, expression columns (also reading the left) are NULL for unmatched rows.
    "SELECT g.id, s.* FROM g LEFT JOIN LATERAL (SELECT x + g.n AS w, 1 AS one, t || 'x' AS tx, x FROM v WHERE v.g_id = g.id + 44) s ON true ORDER BY 1, 2, 3, 4, 5",
    "SELECT g.id, s.* FROM g LEFT JOIN LATERAL (SELECT coalesce(x, -1) AS w, 'c' AS c FROM v WHERE v.g_id = g.id + 44) s ON s.w > 20 ORDER BY 1, 2, 3",
    "SELECT g.id, s.seven FROM g LEFT JOIN LATERAL (SELECT 7 AS seven FROM v WHERE v.g_id = g.id + 45 OR v.g_id IS NULL) s ON true ORDER BY 1, 2",
    "SELECT count(*), count(s.one), sum(s.w) FROM g LEFT JOIN LATERAL (SELECT 1 AS one, x - g.id AS w FROM v WHERE v.k = g.n AND v.t IS NOT NULL) s ON s.w < 0",
    // Grouping and ordering over the joined rows.
    "SELECT g.k, count(*), sum(s.x) FROM g, LATERAL (SELECT x FROM v WHERE v.g_id = g.id ORDER BY x DESC LIMIT 2) s GROUP BY g.k ORDER BY g.k",
    "SELECT DISTINCT s.k FROM g, LATERAL (SELECT k FROM v WHERE v.g_id = g.id LIMIT 1) s ORDER BY 1",
    "SELECT g.id FROM g WHERE EXISTS (SELECT 1 FROM v WHERE v.g_id = g.id) AND g.id IN (SELECT s.i FROM generate_series(1, 10) s(i)) ORDER BY 1",
    // A LATERAL subquery that reads nothing of its left.
    "SELECT count(*) FROM c, LATERAL (SELECT k FROM c c2 WHERE c2.k < 3) s",
    // RIGHT JOIN LATERAL reading nothing of its left is an ordinary join.
    "SELECT c.k, s.k FROM c RIGHT JOIN LATERAL (SELECT k FROM c WHERE k > 2) s ON s.k = c.k ORDER BY 2",
    // WHERE conditions on the columns left of a LATERAL item filter before it runs.
    "SELECT g.id, s.x FROM g LEFT JOIN LATERAL (SELECT x FROM v WHERE v.g_id = g.id ORDER BY x LIMIT 1) s ON true WHERE g.n IS NULL ORDER BY g.id",
    "SELECT g.id, s.x FROM g LEFT JOIN LATERAL (SELECT x FROM v WHERE v.g_id = g.id ORDER BY x LIMIT 1) s ON true WHERE g.id = 7 OR s.x IS NULL ORDER BY g.id",
    "SELECT g.id, c.label, s.c FROM g LEFT JOIN c ON c.k = g.n, LATERAL (SELECT count(*) AS c FROM v WHERE v.g_id = g.id) s WHERE c.label IS NULL AND g.id > 30 ORDER BY 1",
    "SELECT g.id, c.label, s.c FROM g LEFT JOIN LATERAL (SELECT count(*) AS c FROM v WHERE v.g_id = g.id) s ON true FULL JOIN c ON c.k = s.c - 60 WHERE g.id IS NULL OR g.id < 3 ORDER BY 1, 2",
    "SELECT g.id, c.label, s.c FROM g, LATERAL (SELECT count(*) AS c FROM v WHERE v.g_id = g.id) s, g g2 RIGHT JOIN c ON c.k = g2.n WHERE g2.s IS NULL AND g.id = 5 ORDER BY 1, 2",
    "SELECT g.id, s.x FROM g, LATERAL (SELECT max(x) AS x FROM v WHERE v.g_id = g.id) s WHERE g.id < 5 AND g.id + s.x > 100 AND random() < 2 ORDER BY 1",
    "SELECT g.id, s.x FROM g, LATERAL (SELECT max(x) AS x FROM v WHERE v.g_id = g.id) s WHERE g.k IN (SELECT k FROM c WHERE k < 2) AND g.id = (SELECT max(k) FROM c) * 3 ORDER BY 1",
    "SELECT g.id, (SELECT count(*) FROM c, LATERAL (SELECT c.k + 1 AS k1) s WHERE c.k = g.k AND s.k1 > 1) FROM g WHERE g.id < 12 ORDER BY 1",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT * FROM g, (SELECT x FROM v WHERE v.g_id = g.id) s",
    "SELECT * FROM g RIGHT JOIN LATERAL (SELECT x FROM v WHERE v.g_id = g.id) s ON true",
    "SELECT * FROM g FULL JOIN LATERAL (SELECT x FROM v WHERE v.g_id = g.id) s ON true",
    "SELECT * FROM g, generate_series(1, g.id, 0) gs",
];

#[test]
fn lateral_matches_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}

/// The LATERAL item runs only for the rows WHERE keeps: a condition on the table to its
/// left filters that table's scan below the nested loop, and its index is used.
#[test]
fn where_conditions_filter_before_a_lateral_item() {
    let dir = tempfile::tempdir().unwrap();
    let db = weft_sql::Database::open(dir.path(), &[]).unwrap();
    let mut session = db.session();
    let setup = [
        "CREATE TABLE big (id int, k int)",
        "INSERT INTO big SELECT i, i % 100 FROM generate_series(1, 50000) i",
        "CREATE INDEX big_id ON big (id)",
        "CREATE TABLE small (k int, x int)",
        "INSERT INTO small SELECT i % 100, i FROM generate_series(1, 1000) i",
        "ANALYZE",
    ];
    for sql in setup {
        session.execute(sql).unwrap();
    }
    let sql = "EXPLAIN SELECT big.id, s.c FROM big, LATERAL (SELECT count(*) AS c FROM small WHERE small.k = big.k) s WHERE big.id = 7";
    let plan = oracle::lines(&session.execute(sql).unwrap()).join("\n");
    let nested_loop = plan.find("Nested Loop").expect("a nested loop");
    let scan = plan.find("Index Scan using big_id on big").unwrap_or_else(|| panic!("{plan}"));
    assert!(scan > nested_loop, "{plan}");
    // A LATERAL subquery filtering one table by the left's columns is a hash join.
    let sql = "EXPLAIN SELECT big.id, s.x FROM big, LATERAL (SELECT x FROM small WHERE small.k = big.k) s";
    let plan = oracle::lines(&session.execute(sql).unwrap()).join("\n");
    assert!(plan.contains("Hash Cond:") && !plan.contains("Nested Loop"), "{plan}");
    // Under LEFT JOIN too, with expression columns computed only for matched rows.
    let sql = "EXPLAIN SELECT big.id, s.y FROM big LEFT JOIN LATERAL (SELECT x * 2 + big.id AS y FROM small WHERE small.k = big.k) s ON true";
    let plan = oracle::lines(&session.execute(sql).unwrap()).join("\n");
    assert!(plan.contains("Hash Cond:") && !plan.contains("Nested Loop"), "{plan}");
    // `big, LATERAL s FULL JOIN small` joins s and small per row of big: not supported,
    // rather than the rows of `(big, s) FULL JOIN small`.
    let error = session.execute("SELECT * FROM big, LATERAL (SELECT big.k AS j) s FULL JOIN small ON small.k = s.j").unwrap_err();
    assert_eq!(error.sqlstate.0, "0A000", "{error:?}");
}
