//! Index scans whose keys are parameters (finding H3 of the differential fuzzer): a
//! correlated subquery or a LATERAL item whose WHERE compares an index's leading column
//! with an outer column is run per outer row as an index scan whose key is evaluated
//! when the scan starts. Compared with PostgreSQL 15: correlated scalar subqueries,
//! EXISTS / NOT EXISTS that stay correlated, LATERAL with LIMIT; int4, int8, text and
//! float8 keys, int4 keys against int8 values beyond int4's range and the reverse; NULLs
//! on both sides; a two-column index with only its leading column bound; a DESC index;
//! ranges with parameter bounds. EXPLAIN shows the index scan with PostgreSQL's `Index
//! Cond: (k = a.x)`, and a 20000 × 20000 correlated subquery, which a sequential scan
//! per outer row would take minutes over, runs with the index as PostgreSQL's plan does.

use super::oracle;

use oracle::{mismatches_in_modes, weft_lines};

const SETUP: &[&str] = &[
    // Outer rows: keys of every type, some NULL, some int8 beyond int4's range.
    "CREATE TABLE o (id int, x4 int4, x8 int8, xt text, xf float8)",
    "INSERT INTO o SELECT i, CASE WHEN i % 11 = 0 THEN NULL ELSE i % 60 END, \
     CASE WHEN i % 13 = 0 THEN NULL WHEN i % 17 = 0 THEN 5000000000 + i WHEN i % 19 = 0 THEN -5000000000 - i ELSE i % 70 END, \
     CASE WHEN i % 7 = 0 THEN NULL ELSE 't' || (i % 40) END, CASE WHEN i % 9 = 0 THEN NULL ELSE (i % 50) / 2.0 END \
     FROM generate_series(1, 150) i",
    // Inner rows, some keys NULL.
    "CREATE TABLE b (k4 int4, k8 int8, kt text, kf float8, v int)",
    "INSERT INTO b SELECT CASE WHEN i % 23 = 0 THEN NULL ELSE i % 50 END, CASE WHEN i % 29 = 0 THEN NULL ELSE i % 55 END, \
     CASE WHEN i % 31 = 0 THEN NULL ELSE 't' || (i % 45) END, CASE WHEN i % 37 = 0 THEN NULL ELSE (i % 40) / 2.0 END, (i * 7919) % 1000 \
     FROM generate_series(1, 3000) i",
    "CREATE INDEX b_k4 ON b (k4)",
    "CREATE INDEX b_k8 ON b (k8)",
    "CREATE INDEX b_kt ON b (kt)",
    "CREATE INDEX b_kf ON b (kf)",
    // A two-column index (only its leading column bound) and a DESC one.
    "CREATE TABLE m (mk int4, mv int4, w text)",
    "INSERT INTO m SELECT CASE WHEN i % 41 = 0 THEN NULL ELSE i % 45 END, i % 97, 'w' || i FROM generate_series(1, 3000) i",
    "CREATE INDEX m_mk_mv ON m (mk, mv)",
    "CREATE TABLE d (dk int8, dv int4)",
    "INSERT INTO d SELECT CASE WHEN i % 43 = 0 THEN NULL ELSE i % 65 END, i FROM generate_series(1, 3000) i",
    "CREATE INDEX d_dk ON d (dk DESC NULLS LAST)",
];

/// Each query and what weft's EXPLAIN of it must show (its index and `Index Cond`).
const QUERIES: &[(&str, &[&str])] = &[
    // Correlated scalar subqueries over each key type.
    ("SELECT o.id, (SELECT max(v) FROM b WHERE b.k4 = o.x4) FROM o ORDER BY o.id", &["Index Scan using b_k4 on b", "Index Cond: (k4 = o.x4)"]),
    ("SELECT o.id, (SELECT count(*) FROM b WHERE b.k8 = o.x8) FROM o ORDER BY o.id", &["using b_k8 on b", "Index Cond: (k8 = o.x8)"]),
    ("SELECT o.id, (SELECT count(*) FROM b WHERE b.kt = o.xt) FROM o ORDER BY o.id", &["using b_kt on b", "Index Cond: (kt = o.xt)"]),
    ("SELECT o.id, (SELECT sum(v) FROM b WHERE b.kf = o.xf) FROM o ORDER BY o.id", &["using b_kf on b", "Index Cond: (kf = o.xf)"]),
    // Cross-type: an int4 key against int8 values (some beyond int4), an int8 key against int4.
    ("SELECT o.id, (SELECT count(*) FROM b WHERE b.k4 = o.x8) FROM o ORDER BY o.id", &["using b_k4 on b"]),
    ("SELECT o.id, (SELECT count(*) FROM b WHERE b.k8 = o.x4) FROM o ORDER BY o.id", &["using b_k8 on b"]),
    ("SELECT o.id, (SELECT count(*) FROM b WHERE b.k4 < o.x8) FROM o ORDER BY o.id", &["using b_k4 on b"]),
    ("SELECT o.id, (SELECT count(*) FROM b WHERE b.k4 >= o.x8) FROM o ORDER BY o.id", &["using b_k4 on b"]),
    // An expression over the parameter, a constant condition beside it, a filter after it.
    ("SELECT o.id, (SELECT count(*) FROM b WHERE b.k4 = o.x4 + 1 AND b.v > 500) FROM o ORDER BY o.id", &["Index Cond: (k4 = (o.x4 + 1))"]),
    ("SELECT o.id, (SELECT max(v) FROM b WHERE b.k4 = o.x4 AND b.k4 < 30) FROM o ORDER BY o.id", &["using b_k4 on b"]),
    // Ranges bounded by parameters (and a constant).
    ("SELECT o.id, (SELECT count(*) FROM b WHERE b.k4 > o.x4 AND b.k4 <= o.x4 + 2) FROM o ORDER BY o.id", &["using b_k4 on b"]),
    ("SELECT o.id, (SELECT count(*) FROM b WHERE b.k4 > o.x4 AND b.k4 < 10) FROM o ORDER BY o.id", &["using b_k4 on b"]),
    ("SELECT o.id, (SELECT min(kt) FROM b WHERE b.kt >= o.xt AND b.kt < o.xt || '5') FROM o ORDER BY o.id", &["using b_kt on b"]),
    // EXISTS / NOT EXISTS that stay correlated (under OR, in the select list).
    ("SELECT o.id FROM o WHERE EXISTS (SELECT 1 FROM b WHERE b.k4 = o.x4 AND b.v < 20) OR o.id < 3 ORDER BY o.id", &["using b_k4 on b"]),
    ("SELECT o.id, NOT EXISTS (SELECT 1 FROM b WHERE b.k8 = o.x8 AND b.v > 990) FROM o ORDER BY o.id", &["using b_k8 on b"]),
    ("SELECT o.id, EXISTS (SELECT 1 FROM b WHERE b.kt = o.xt AND b.v = 7) FROM o ORDER BY o.id", &["using b_kt on b"]),
    // LATERAL with LIMIT, and LEFT JOIN LATERAL with outer rows nothing matches.
    ("SELECT o.id, s.v FROM o, LATERAL (SELECT v FROM b WHERE b.k4 = o.x4 ORDER BY v DESC LIMIT 2) s ORDER BY 1, 2", &["Index Cond: (k4 = o.x4)"]),
    ("SELECT o.id, s.v FROM o LEFT JOIN LATERAL (SELECT v FROM b WHERE b.k8 = o.x8 ORDER BY v LIMIT 1) s ON true ORDER BY 1, 2", &["Index Cond: (k8 = o.x8)"]),
    ("SELECT o.id, s.c FROM o, LATERAL (SELECT count(*) AS c FROM b WHERE b.kf = o.xf) s ORDER BY 1", &["using b_kf on b"]),
    // The two-column index: leading column bound, order on the second, a condition on it.
    ("SELECT o.id, s.mv FROM o, LATERAL (SELECT mv FROM m WHERE m.mk = o.x4 ORDER BY mv LIMIT 3) s ORDER BY 1, 2", &["using m_mk_mv on m", "Index Cond: (mk = o.x4)"]),
    ("SELECT o.id, (SELECT count(*) FROM m WHERE m.mk = o.x4 AND m.mv > 50) FROM o ORDER BY o.id", &["using m_mk_mv on m"]),
    ("SELECT o.id, (SELECT max(w) FROM m WHERE m.mk = o.x8) FROM o ORDER BY o.id", &["using m_mk_mv on m"]),
    // The DESC index: equality, a range, and an order in both directions.
    ("SELECT o.id, (SELECT sum(dv) FROM d WHERE d.dk = o.x4) FROM o ORDER BY o.id", &["using d_dk on d", "Index Cond: (dk = o.x4)"]),
    ("SELECT o.id, (SELECT count(*) FROM d WHERE d.dk < o.x8 AND d.dk >= o.x8 - 3) FROM o ORDER BY o.id", &["using d_dk on d"]),
    ("SELECT o.id, s.dk FROM o, LATERAL (SELECT dk FROM d WHERE d.dk <= o.x4 ORDER BY dk DESC LIMIT 2) s ORDER BY 1, 2", &["d_dk on d"]),
];

#[test]
fn parameterized_index_scans_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    // Small tables: keep the sequential scan out so that the index paths run.
    session.execute("SET enable_seqscan = off").unwrap();
    let mut mismatches = Vec::new();
    for (query, wanted) in QUERIES {
        let plan = weft_lines(&mut session, &format!("EXPLAIN (COSTS OFF) {query}")).unwrap().join("\n");
        for w in *wanted {
            if !plan.contains(w) {
                mismatches.push(format!("{query}\n  the plan lacks {w:?}:\n{plan}"));
            }
        }
    }
    let queries: Vec<&str> = QUERIES.iter().map(|(q, _)| *q).collect();
    mismatches.extend(mismatches_in_modes(&pg, &mut session, &queries));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}

/// The fuzzer's case at 20000 × 20000 rows without ANALYZE: the subplan's scan of `b` is
/// an index scan, so each outer row reads a few entries.
#[test]
fn large_correlated_subquery_uses_the_index() {
    let setup = [
        "CREATE TABLE a (x int, y int)",
        "CREATE TABLE bb (k int, v int)",
        "INSERT INTO a SELECT i, (i * 37) % 20011 FROM generate_series(1, 20000) i",
        "INSERT INTO bb SELECT (i * 7) % 20000, (i * 13) % 20021 FROM generate_series(1, 20000) i",
        "CREATE INDEX bb_k ON bb (k)",
    ];
    let Some((pg, _dir, db)) = oracle::start_with_setup(&setup) else { return };
    let mut session = db.session();
    let scalar = "SELECT count(*) FROM a WHERE a.y > (SELECT max(v) FROM bb WHERE bb.k = a.x)";
    let lateral = "SELECT count(*), sum(s.v) FROM a, LATERAL (SELECT v FROM bb WHERE bb.k = a.x ORDER BY v LIMIT 1) s";
    let explain = |session: &mut weft_sql::Session, q: &str| weft_lines(session, &format!("EXPLAIN (COSTS OFF) {q}")).unwrap().join("\n");
    // (weft prints a SubPlan under the query's root, PostgreSQL under the node using it.)
    let scalar_plan = explain(&mut session, scalar);
    assert!(scalar_plan.contains("Index Scan using bb_k on bb\n") && scalar_plan.contains("Index Cond: (k = a.x)"), "{scalar_plan}");
    let lateral_plan = explain(&mut session, lateral);
    assert!(lateral_plan.contains("Index Scan using bb_k on bb") && lateral_plan.contains("Index Cond: (k = a.x)"), "{lateral_plan}");
    let mismatches = oracle::query_mismatches(&pg, &mut session, &[scalar, lateral]);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
}
