//! Forms weft once refused, compared with PostgreSQL 15: `BETWEEN SYMMETRIC`, `GROUP BY
//! ()`, `op ANY | ALL` over `ARRAY[...]` and array literals (also as an index condition),
//! LIMIT / OFFSET given by expressions and scalar subqueries, and generate_series in a
//! select list. NULLs, empty tables and
//! PostgreSQL's errors (by SQLSTATE and message) included; each query serial, with
//! parallel workers forced, and at a tiny work_mem.

use super::oracle;

use oracle::{error_mismatches, lines, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE t (id int, a int, b int, x bigint, s text, n numeric, f float8, flag bool)",
    "INSERT INTO t SELECT i, CASE WHEN i % 9 = 0 THEN NULL ELSE i % 13 END, CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 5) % 11 END, (i * 31) % 50, CASE WHEN i % 10 = 0 THEN NULL ELSE substr(md5(i::text), 1, 1) END, CASE WHEN i % 8 = 0 THEN NULL ELSE (i % 6) / 4.0 END, (i % 5) / 2.0, CASE WHEN i % 6 = 0 THEN NULL ELSE i % 3 = 0 END FROM generate_series(1, 400) i",
    "CREATE TABLE e (id int, a int)",
    "CREATE TABLE ix (id int, k int, v text)",
    "INSERT INTO ix SELECT i, CASE WHEN i % 50 = 0 THEN NULL ELSE i % 700 END, md5(i::text) FROM generate_series(1, 20000) i",
    "CREATE INDEX ix_k ON ix (k)",
    "ANALYZE ix",
];

const QUERIES: &[&str] = &[
    // BETWEEN SYMMETRIC: bounds in either order, NULL bounds and operands, NOT, ASYMMETRIC.
    "SELECT id, a BETWEEN SYMMETRIC 9 AND 3, a NOT BETWEEN SYMMETRIC 9 AND 3, a BETWEEN ASYMMETRIC 9 AND 3, a NOT BETWEEN ASYMMETRIC 3 AND 9 FROM t",
    "SELECT id, a BETWEEN SYMMETRIC b AND 6, a NOT BETWEEN SYMMETRIC 6 AND b, x BETWEEN SYMMETRIC a AND b FROM t",
    "SELECT id FROM t WHERE a BETWEEN SYMMETRIC 10 AND 4 AND s NOT BETWEEN SYMMETRIC 'c' AND 'a'",
    "SELECT id FROM t WHERE n BETWEEN SYMMETRIC 1 AND 0.5 OR f NOT BETWEEN SYMMETRIC 2 AND 1",
    "SELECT 5 BETWEEN SYMMETRIC 9 AND 1, 5 BETWEEN SYMMETRIC NULL AND 1, 0 BETWEEN SYMMETRIC NULL AND 1, 0 NOT BETWEEN SYMMETRIC NULL AND 1, NULL::int BETWEEN SYMMETRIC 1 AND 2",
    "SELECT a, count(*) FROM t GROUP BY a HAVING count(*) BETWEEN SYMMETRIC 40 AND 25",
    "SELECT id, (a BETWEEN SYMMETRIC 8 AND 2) BETWEEN SYMMETRIC flag AND true FROM t WHERE id < 40",
    "SELECT id, CASE WHEN a BETWEEN SYMMETRIC b AND 3 THEN 'in' ELSE 'out' END FROM t WHERE a BETWEEN SYMMETRIC (SELECT max(b) FROM t) AND 2",
    // GROUP BY (): one group, also over no rows; with keys it changes nothing.
    "SELECT count(*) FROM e GROUP BY ()",
    "SELECT count(*), sum(a), max(s) FROM t GROUP BY ()",
    "SELECT count(*), sum(id) FROM e GROUP BY ()",
    "SELECT 1 FROM e GROUP BY ()",
    "SELECT count(*) FROM t GROUP BY () HAVING count(*) > 1000",
    "SELECT count(*) FROM t WHERE a > 100 GROUP BY () HAVING count(*) = 0",
    "SELECT a, count(*) FROM t GROUP BY a, ()",
    "SELECT a, b, count(*) FROM t GROUP BY (), a, (), b",
    "SELECT count(DISTINCT a) FROM t GROUP BY ()",
    // = ANY / <> ALL / other operators over literals and ARRAY[...].
    "SELECT id FROM t WHERE a = ANY ('{1,2,3}')",
    "SELECT id FROM t WHERE a = ANY ('{1,2,3}'::int[]) OR b = ANY (ARRAY[4, 5])",
    "SELECT id, a = ANY ('{2,NULL}'), a <> ALL ('{2,NULL}'), a <> ALL ('{2,3}'), a = ANY ('{}'::int[]), a <> ALL ('{}'::int[]) FROM t",
    "SELECT id, a < ANY ('{3,8}'), a <= ALL ('{3,8}'), a > ANY (ARRAY[b, 6]), a >= ALL (ARRAY[b, NULL]), b = SOME (ARRAY[a, a + 1]) FROM t",
    "SELECT id FROM t WHERE x = ANY ('{1,2,30}'::bigint[]) OR x = ANY ('{40,41}'::int4[]) OR x = ANY ('{7,8}'::integer[]) OR x = ANY ('{9}'::int8[])",
    "SELECT id FROM t WHERE n = ANY ('{0.5,1.25}'::numeric[]) AND f <> ALL ('{0,1.5}'::float8[])",
    "SELECT id FROM t WHERE s = ANY ('{a,b,\"c\"}') OR s = ANY ('{d,NULL}'::text[]) OR s = ANY (ARRAY['e', 'f'])",
    "SELECT id FROM t WHERE flag = ANY ('{t}'::bool[]) AND a <> ALL (ARRAY[1, 2.5])",
    "SELECT id, a = ANY (NULL::int[]), a = ANY (NULL), NULL::int = ANY ('{}'), NULL::int = ALL ('{}'), NULL::int = ANY ('{1}') FROM t WHERE id < 20",
    "SELECT id FROM t WHERE a = ANY ('{{1,2},{3,4}}') OR b = ANY ('[0:1]={7,8}')",
    "SELECT id FROM t WHERE a = ANY ('  { 1 , 2 }  ') OR a = ANY (ARRAY['3', 4]) OR a = ANY (ARRAY[]::int[])",
    "SELECT id FROM t WHERE NOT (a = ANY ('{1,2,3}')) AND NOT (b <> ALL ('{1,2}'))",
    "SELECT a, count(*) FROM t WHERE a = ANY ('{1,5,9,NULL}') GROUP BY a HAVING count(*) = ANY ('{30,31,29}')",
    "SELECT id FROM t WHERE a = ANY (ARRAY[(SELECT min(b) FROM t), (SELECT max(b) FROM t)])",
    "SELECT 1 = ANY ('{1,2}'), 3 <> ALL ('{1,2}'), 'x' = ANY ('{1,2}'), 'a b' = ANY ('{\"a b\",c}'), 3000000000 = ANY ('{1,3000000000}'), 2 = ANY ('{1.5,2}'::numeric[])",
    "SELECT e.id FROM e WHERE a = ANY ('{1,2}')",
    // LIMIT / OFFSET: expressions and scalar subqueries, NULL, empty tables.
    "SELECT id FROM t ORDER BY id LIMIT 1 + 1",
    "SELECT id FROM t ORDER BY id LIMIT NULL OFFSET 395",
    "SELECT id FROM t ORDER BY id LIMIT 3 OFFSET NULL",
    "SELECT id FROM t ORDER BY id LIMIT (SELECT 2)",
    "SELECT id FROM t ORDER BY id LIMIT (SELECT 3) OFFSET (SELECT 7)",
    "SELECT id FROM t ORDER BY id DESC LIMIT (SELECT max(a) FROM t) OFFSET (SELECT count(*) FROM e)",
    "SELECT id FROM t ORDER BY id LIMIT (SELECT NULL::int) OFFSET (SELECT 390)",
    "SELECT id FROM t ORDER BY id LIMIT (SELECT a FROM e) OFFSET 398",
    "SELECT id FROM t ORDER BY id LIMIT (SELECT 0)",
    "SELECT id FROM t ORDER BY id LIMIT '2' OFFSET 2.5",
    "SELECT id FROM t ORDER BY id LIMIT (SELECT 1.5) OFFSET (SELECT 1.4::float8)",
    "SELECT a, count(*) FROM t GROUP BY a ORDER BY a LIMIT (SELECT 4) OFFSET 2",
    "SELECT id FROM e ORDER BY id LIMIT (SELECT 1)",
    "SELECT id, (SELECT count(*) FROM (SELECT 1 FROM t t2 ORDER BY id LIMIT t.a) s) FROM t WHERE id < 30 ORDER BY id",
    // generate_series in the select list, with bounds that read no column.
    "SELECT generate_series(1, 5)",
    "SELECT generate_series(1, 10, 3) * 2, 'x', generate_series(1, 10, 3)",
    "SELECT id, generate_series(1, 2) AS k FROM t WHERE id < 5",
    "SELECT DISTINCT generate_series(1, 3) FROM t",
    "SELECT generate_series(5, 1, -2) g ORDER BY 1",
    "SELECT s, generate_series(1, 2) FROM (SELECT DISTINCT s FROM t) d ORDER BY 1, 2",
    "SELECT count(*) FROM (SELECT generate_series(1, 3) FROM t) s",
    "SELECT generate_series(1, NULL::int)",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT 1 = ANY ('{1,x}')",
    "SELECT id FROM t WHERE a = ANY ('{1,2')",
    "SELECT id FROM t WHERE a = ANY ('1,2')",
    "SELECT id FROM t WHERE a = ANY ('{1,2}}')",
    "SELECT id FROM t WHERE a = ANY ('{{1,2},{3}}')",
    "SELECT id FROM t WHERE a = ANY ('{1.5,2}')",
    "SELECT id FROM t WHERE a = ANY ('{1,2}'::text[])",
    "SELECT id FROM t WHERE a = ANY (ARRAY['1', '2'])",
    "SELECT id FROM t WHERE a = ANY (ARRAY[1, 'x'::text])",
    "SELECT id FROM t WHERE a = ANY (ARRAY[])",
    "SELECT id FROM t WHERE a = ANY (b)",
    "SELECT id FROM t WHERE a = ANY ('{1,2}'::text)",
    "SELECT id FROM t WHERE flag = ANY ('{yes,maybe}')",
    "SELECT id FROM t ORDER BY id LIMIT -1",
    "SELECT id FROM t ORDER BY id OFFSET -1",
    "SELECT id FROM t ORDER BY id LIMIT (SELECT -1)",
    "SELECT id FROM t ORDER BY id OFFSET (SELECT -2)",
    "SELECT id FROM t ORDER BY id LIMIT (SELECT a FROM t)",
    "SELECT id FROM t ORDER BY id LIMIT true",
    "SELECT id FROM t ORDER BY id LIMIT (SELECT 'x'::text)",
    "SELECT a FROM t GROUP BY ()",
    "SELECT id FROM t WHERE a BETWEEN SYMMETRIC 1 FROM t",
];

/// EXPLAIN of seq scans (no index on `t`, so the shape is PostgreSQL's too): the filters
/// print as PostgreSQL prints them.
const EXPLAINED: &[&str] = &[
    "EXPLAIN (COSTS OFF) SELECT id FROM t WHERE a BETWEEN SYMMETRIC 9 AND 3",
    "EXPLAIN (COSTS OFF) SELECT id FROM t WHERE a NOT BETWEEN SYMMETRIC 9 AND b",
    "EXPLAIN (COSTS OFF) SELECT id FROM t WHERE a = ANY ('{1,2,3}')",
    "EXPLAIN (COSTS OFF) SELECT id FROM t WHERE x <> ALL ('{5,6}'::bigint[])",
    "EXPLAIN (COSTS OFF) SELECT id FROM t WHERE b < ANY (ARRAY[a, 3])",
    "EXPLAIN (COSTS OFF) SELECT id FROM t WHERE a >= ALL ('{1,NULL}') AND s = ANY ('{a,b}')",
];

/// `= ANY` on the indexed column, each also as an IN list where one can be written.
const INDEXED: &[&str] = &[
    "SELECT id, k FROM ix WHERE k = ANY ('{3,77,650,NULL,5000}')",
    "SELECT id FROM ix WHERE k = ANY (ARRAY[1, 2, 699]) AND id > 5000",
    "SELECT id FROM ix WHERE k = ANY ('{42}'::int[])",
    "SELECT id FROM ix WHERE k = ANY ('{12,13}'::bigint[])",
    "SELECT count(*) FROM ix WHERE k = ANY ('{}'::int[])",
    "SELECT count(*) FROM ix WHERE k = ANY (NULL::int[])",
    "SELECT id FROM ix WHERE k IN (3, 77, 650)",
];

#[test]
fn sql_gaps_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    mismatches.extend(mismatches_in_modes(&pg, &mut session, INDEXED));
    session.execute("RESET ALL").unwrap();
    for sql in EXPLAINED {
        let expected = pg.query(sql).unwrap_or_else(|e| panic!("PostgreSQL {sql}: {e}"));
        match session.execute(sql) {
            Ok(result) if lines(&result) == expected => {}
            Ok(result) => mismatches.push(format!("{sql}\n  pg:   {expected:?}\n  weft: {:?}", lines(&result))),
            Err(e) => mismatches.push(format!("{sql}\n  weft failed: {e:?}")),
        }
    }
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}

/// `= ANY (constant array)` is an index condition, as an IN list is, and gives the rows a
/// sequential scan gives.
#[test]
fn any_over_a_constant_array_uses_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = weft_sql::Database::open(dir.path(), &[]).unwrap();
    let mut session = db.session();
    for sql in &SETUP[3..] {
        session.execute(sql).unwrap();
    }
    for sql in INDEXED {
        let plan = lines(&session.execute(&format!("EXPLAIN {sql}")).unwrap()).join("\n");
        let count_only = sql.contains("'{}'") || sql.contains("NULL::int[]");
        if !count_only {
            assert!(plan.contains("Index Cond: (k = ANY ('{"), "{sql}:\n{plan}");
        }
        let mut with_index = lines(&session.execute(sql).unwrap());
        session.execute("SET enable_indexscan = off").unwrap();
        let plan = lines(&session.execute(&format!("EXPLAIN {sql}")).unwrap()).join("\n");
        assert!(!plan.contains("Index"), "{sql}:\n{plan}");
        let mut without = lines(&session.execute(sql).unwrap());
        session.execute("RESET enable_indexscan").unwrap();
        with_index.sort();
        without.sort();
        assert_eq!(with_index, without, "{sql}");
        assert!(count_only || !with_index.is_empty(), "{sql} found nothing");
    }
}
