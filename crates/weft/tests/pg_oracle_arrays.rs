//! One-dimensional arrays compared with PostgreSQL 15: literals and their text output
//! (quoting, NULLs, empty arrays), array columns stored and read back, `ARRAY[...]` and
//! `ARRAY(SELECT ...)`, `array_agg` (plain, ORDER BY, DISTINCT; serial, parallel and at a
//! tiny work_mem), `unnest` in FROM and in the select list, `op ANY | ALL (array)`,
//! subscripts and slices, the array functions and operators, comparisons (ORDER BY,
//! GROUP BY, DISTINCT, joins on array columns), and PostgreSQL's errors.

use super::oracle;

use oracle::{compare_script, error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE arr (id int, a int[], t text[], f float8[], n numeric[], b bigint[])",
    "INSERT INTO arr VALUES \
     (1, '{1,2,3}', '{x,\"y z\"}', '{1.5,NaN}', '{1.0,2.50}', '{10,20}'), \
     (2, NULL, '{}', NULL, '{}', NULL), \
     (3, '{3,NULL}', NULL, '{-0,Infinity}', '{NULL}', '{3}'), \
     (4, '{}', '{\"\",NULL,\"NULL\",\"a\\\\b\",\"q\\\"q\",\"{}\",\"a,b\"}', '{}', NULL, '{}'), \
     (5, '{1,2,3}', '{x}', '{2}', '{1}', '{10,20,NULL}'), \
     (6, '{2,1}', '{b,a}', '{0.1}', '{3.14}', '{-1}')",
    "CREATE TABLE g (id int, k int, v int, s text)",
    "INSERT INTO g SELECT i, i % 7, CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 37) % 101 END, CASE WHEN i % 13 = 0 THEN NULL ELSE 's' || (i % 17) END FROM generate_series(1, 3000) i",
];

const QUERIES: &[&str] = &[
    // Literals and output.
    "SELECT '{1,2,3}'::int[], '{}'::int[], '{NULL,1}'::integer[], '{1,2}'::int4[], ' { 1 , 2 } '::int[]",
    "SELECT '{a,\"b c\",\"\",NULL,\"NULL\",null,\"x\\\"y\",\"a\\\\b\"}'::text[]",
    "SELECT '{t,f,NULL}'::bool[], '{1.50,-2}'::numeric[], '{1e300,-0,NaN,-Infinity}'::float8[], '{9000000000}'::bigint[]",
    "SELECT '{2020-01-02,infinity}'::date[], '{\"2020-01-02 03:04:05\"}'::timestamp[], '{12:30}'::time[], '{\"1 day 2 hours\"}'::interval[]",
    "SELECT '{\"2020-01-02 03:04:05+02\"}'::timestamptz[]",
    "SELECT ARRAY[1, 2, NULL], ARRAY['a', 'b c', ''], ARRAY[1, 2.5], ARRAY[1, 2::bigint], ARRAY[]::int[], ARRAY[NULL]::text[], ARRAY[1.5::float8, 2]",
    "SELECT ARRAY['{', '}', ',', ' ', 'a\"b', 'x\\y', 'null', 'NULLS']",
    "SELECT ARRAY[true, NULL], ARRAY[date '2020-01-01'], ARRAY[interval '1 day', NULL]",
    "SELECT NULL::int[], ARRAY[1,2]::text[], ARRAY['1','2']::int[], '{1,2}'::int[]::bigint[], ARRAY[1.6, 2.4]::int[]",
    "SELECT (ARRAY[1,2,3])::text, ('{1,2}'::int[])::text || 'x', pg_typeof(ARRAY[1]), pg_typeof(ARRAY['a']), pg_typeof('{1}'::bigint[]), pg_typeof(ARRAY[1.5])",
    "SELECT pg_typeof(ARRAY[now()]), pg_typeof(ARRAY[1.5::float8]), pg_typeof(ARRAY[true]), pg_typeof(ARRAY[date '2020-01-01'])",
    // Columns.
    "SELECT * FROM arr ORDER BY id",
    "SELECT id, a IS NULL, t IS NULL, cardinality(a), cardinality(t) FROM arr ORDER BY id",
    // Subscripts and slices.
    "SELECT id, a[1], a[2], a[3], a[0], a[-1], a[4], t[1], t[2], n[2], b[3] FROM arr ORDER BY id",
    "SELECT id, a[1:2], a[2:], a[:1], a[2:1], a[0:10], a[:], t[2:3] FROM arr ORDER BY id",
    "SELECT (ARRAY[1,2,3])[2], (ARRAY[1,2,3])[NULL::int], (ARRAY[1,2,3])[1:NULL], ('{a,b}'::text[])[2]",
    // ANY / ALL.
    "SELECT id, 1 = ANY(a), 3 = ANY(a), 4 = ANY(a), 4 <> ALL(a), 3 <> ALL(a), 2 < ANY(a), 0 < ALL(a), NULL::int = ANY(a) FROM arr ORDER BY id",
    "SELECT id FROM arr WHERE 2 = ANY(a) ORDER BY id",
    "SELECT id FROM arr WHERE 'x' = ANY(t) ORDER BY id",
    "SELECT id FROM arr WHERE id = ANY(ARRAY[1, 3, NULL]) ORDER BY id",
    "SELECT id FROM arr WHERE NOT (id <> ALL('{2,4}'::int[])) ORDER BY id",
    "SELECT 1 = ANY('{}'::int[]), 1 = ALL('{}'::int[]), NULL::int = ANY('{}'::int[]), 1 = ANY(NULL::int[]), 1 = ANY('{2,NULL}'::int[]), 1 <> ALL('{2,NULL}'::int[]), 1.5 = ANY(ARRAY[1, 2]), 2::bigint = ANY(ARRAY[1, 2])",
    "SELECT id, b[1] = ANY(a), id = ANY(b) FROM arr ORDER BY id",
    // Functions.
    "SELECT id, array_length(a, 1), array_length(a, 2), array_lower(a, 1), array_upper(a, 1), array_ndims(a), array_dims(a), cardinality(a) FROM arr ORDER BY id",
    "SELECT id, array_to_string(a, ','), array_to_string(a, '-', '*'), array_to_string(t, '|'), array_to_string(t, '|', 'N'), array_to_string(f, ';') FROM arr ORDER BY id",
    "SELECT string_to_array('a,b,,c', ','), string_to_array('a,b,,c', ',', ''), string_to_array('abc', NULL), string_to_array('abc', ''), string_to_array('', ','), string_to_array(NULL, ','), string_to_array('a-x-b', '-x-')",
    "SELECT id, array_append(a, 9), array_prepend(0, a), array_cat(a, ARRAY[7]), array_cat(a, a), array_append(t, 'z'), array_append(a, NULL) FROM arr ORDER BY id",
    "SELECT id, a || 5, 5 || a, a || a, a || ARRAY[NULL::int], t || 'w'::text, b || 1, a || '{8,9}' FROM arr ORDER BY id",
    "SELECT array_append(NULL::int[], 1), array_prepend(1, NULL::int[]), array_cat(NULL::int[], ARRAY[1]), array_cat(ARRAY[1], NULL), array_cat(NULL::int[], NULL::int[])",
    "SELECT id, array_position(a, 2), array_position(a, NULL), array_position(a, 1, 2), array_positions(a, 1), array_remove(a, 1), array_remove(a, NULL), array_replace(a, 1, 10), array_replace(a, NULL, 0) FROM arr ORDER BY id",
    "SELECT id, a @> ARRAY[1], a <@ ARRAY[1,2,3,4], a && ARRAY[2,9], a @> '{}', ARRAY[NULL::int] <@ a, a && a FROM arr ORDER BY id",
    "SELECT id, t @> ARRAY['x'], t && '{a,x}' FROM arr ORDER BY id",
    "SELECT array_position(ARRAY['a','b','a'], 'a', 2), array_positions(ARRAY[NULL, 1, NULL]::int[], NULL), array_remove(ARRAY[1.0, 1.00, 2], 1)",
    // Comparison, ordering, grouping.
    "SELECT id, a = ARRAY[1,2,3], a <> '{2,1}', a < ARRAY[2], a >= ARRAY[1,2], a = a FROM arr ORDER BY id",
    "SELECT ARRAY[1,NULL] = ARRAY[1,NULL], ARRAY[1,NULL] > ARRAY[1,2], ARRAY[1] < ARRAY[1,0], ARRAY[]::int[] < ARRAY[1], ARRAY[2] > ARRAY[1,5], ARRAY[1.0] = ARRAY[1.00]",
    "SELECT id, a FROM arr ORDER BY a, id",
    "SELECT id, a FROM arr ORDER BY a DESC NULLS LAST, id",
    "SELECT id, t FROM arr ORDER BY t NULLS FIRST, id",
    "SELECT a, count(*) FROM arr GROUP BY a ORDER BY a",
    "SELECT DISTINCT a FROM arr ORDER BY a",
    "SELECT DISTINCT b FROM arr",
    "SELECT x.id, y.id FROM arr x JOIN arr y ON x.a = y.a ORDER BY 1, 2",
    "SELECT max(id), min(id) FROM arr GROUP BY t ORDER BY 1",
    // Constructors over columns, subqueries.
    "SELECT id, ARRAY[id, id * 2], ARRAY[a[1], b[1]], ARRAY[t[1]] FROM arr ORDER BY id",
    "SELECT ARRAY(SELECT id FROM arr ORDER BY id DESC), ARRAY(SELECT t[1] FROM arr ORDER BY id), ARRAY(SELECT 1 WHERE false)",
    "SELECT id, ARRAY(SELECT v FROM g WHERE g.k = arr.id ORDER BY v LIMIT 4) FROM arr ORDER BY id",
    // array_agg.
    "SELECT array_agg(id ORDER BY id) FROM arr",
    "SELECT k, array_agg(v ORDER BY v), array_agg(v ORDER BY v DESC NULLS LAST), array_agg(DISTINCT v) FROM g WHERE id < 200 GROUP BY k ORDER BY k",
    "SELECT k, array_agg(s ORDER BY id) FILTER (WHERE id % 2 = 0), array_agg(DISTINCT s ORDER BY s) FROM g WHERE id < 300 GROUP BY k ORDER BY k",
    "SELECT k, cardinality(array_agg(v)), array_length(array_agg(DISTINCT v), 1) FROM g GROUP BY k ORDER BY k",
    "SELECT array_agg(id) FROM arr WHERE false",
    "SELECT k, (array_agg(id ORDER BY v, id))[1:3] FROM g GROUP BY k ORDER BY k",
    // unnest.
    "SELECT * FROM unnest(ARRAY[1,2,NULL])",
    "SELECT * FROM unnest('{a,\"b c\"}'::text[]) AS u(x)",
    "SELECT u, n FROM unnest(ARRAY[10,20,30]) WITH ORDINALITY AS x(u, n)",
    "SELECT arr.id, u FROM arr, unnest(arr.a) u ORDER BY 1, 2",
    "SELECT arr.id, u.x, u.o FROM arr, unnest(arr.t) WITH ORDINALITY AS u(x, o) ORDER BY 1, 3",
    "SELECT unnest(ARRAY[1,2,3])",
    "SELECT id, unnest(a) FROM arr ORDER BY 1, 2",
    "SELECT id, unnest(t) AS x FROM arr WHERE id < 5 ORDER BY 1, 2",
    // A set-returning item that is a grouping key: groups over its values.
    "SELECT unnest(t) AS tag, count(*), min(id) FROM arr GROUP BY tag ORDER BY 1",
    "SELECT unnest(a), count(DISTINCT id) FROM arr GROUP BY 1 HAVING count(*) > 1 ORDER BY 2 DESC, 1",
    "SELECT upper(unnest(t)) AS u, count(*) FROM arr GROUP BY unnest(t) ORDER BY 1",
    "SELECT sum(u), count(*) FROM arr, unnest(a) u",
    "SELECT u, count(*) FROM arr, unnest(a) u GROUP BY u ORDER BY u",
    // Round trips through tables.
    "SELECT count(*) FROM arr WHERE a = '{1,2,3}'",
    "SELECT id FROM arr WHERE a IS NOT NULL AND cardinality(a) = 0",
];

const SCRIPT: &[&str] = &[
    "CREATE TABLE r (id int, a int[], s text[])",
    "INSERT INTO r VALUES (1, ARRAY[1,2], ARRAY['a b']), (2, '{}', '{}'), (3, NULL, NULL), (4, '{NULL}', '{NULL,\"NULL\"}')",
    "INSERT INTO r SELECT 10 + id, a || id, s || 'z'::text FROM r",
    "UPDATE r SET a = array_append(a, 0) WHERE id = 1",
    "SELECT * FROM r ORDER BY id",
    "CREATE TABLE r2 AS SELECT id, a FROM r WHERE id > 2",
    "SELECT * FROM r2 ORDER BY id",
    "DELETE FROM r WHERE a @> ARRAY[0]",
    "SELECT id, a, s FROM r ORDER BY a, id",
    "SELECT k, array_agg(id ORDER BY id) FROM (SELECT id, id % 3 AS k FROM r) q GROUP BY k ORDER BY k",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT '{1,2'::int[]",
    "SELECT '{1,a}'::int[]",
    "SELECT '1,2'::int[]",
    "SELECT '{1,2}}'::int[]",
    "SELECT ARRAY[]",
    "SELECT ARRAY[1, 'a']",
    "SELECT ARRAY[1, true]",
    "SELECT 1 = ANY(1)",
    "SELECT 'a' = ANY(ARRAY[1,2])",
    "SELECT ARRAY[1] = ARRAY['a']",
    "SELECT ARRAY[1,2] || ARRAY['a']",
    "SELECT array_length(1, 1)",
    "SELECT cardinality('a'::text)",
    "SELECT (1)[1]",
    "SELECT ARRAY[1] @> ARRAY['a']",
    "SELECT array_position(ARRAY[1], 1, NULL)",
    "SELECT '{\"a\"}'::int[]",
];

/// Not supported by weft: PostgreSQL would accept them, weft refuses with 0A000.
const NOT_SUPPORTED: &[&str] = &[
    "SELECT '{{1,2},{3,4}}'::int[]",
    "SELECT ARRAY[[1,2],[3,4]]",
    "SELECT '[0:1]={1,2}'::int[]",
    "SELECT array_agg(ARRAY[1,2])",
];

#[test]
fn arrays_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    for sql in NOT_SUPPORTED {
        match session.execute(sql) {
            Err(e) if e.sqlstate.0 == "0A000" => {}
            other => mismatches.push(format!("{sql}\n  expected 0A000, weft gave {other:?}")),
        }
    }
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
    compare_script(&pg, &mut session, SCRIPT, true);
}
