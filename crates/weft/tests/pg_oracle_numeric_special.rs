//! `numeric`'s special values `NaN`, `Infinity` and `-Infinity` compared with PostgreSQL 15,
//! row by row: input and output, their order (`-Infinity` < finite < `Infinity` < `NaN`,
//! `NaN = NaN`) in ORDER BY every way (serial, external at `work_mem = 64kB`, parallel with
//! each sort strategy), DISTINCT, GROUP BY, hash and merge joins, a B-tree index and its
//! range scans, aggregates (serial and parallel partial/combine), arithmetic, functions,
//! casts, `numeric(p,s)`, and the errors (message, DETAIL and SQLSTATE).
//!
//! The test skips (passes) when PostgreSQL 15 is not installed.

use super::oracle;

use oracle::{compare_script, error_mismatches, query_mismatches};

/// `nums`: 30000 rows, one in 13 of them NaN, +Inf, -Inf or NULL, the others finite with
/// scales 1, 3 and 4 (each value with one representation, so that DISTINCT and GROUP BY
/// print the same one as PostgreSQL); `small`: a few of each; `other`: a join partner with
/// some of the same values, `1.5` at another scale too.
const SETUP: &[&str] = &[
    "CREATE TABLE nums (id int, x numeric, pad text)",
    "INSERT INTO nums SELECT i, CASE i % 13 WHEN 0 THEN 'NaN' WHEN 1 THEN 'Infinity' WHEN 2 THEN '-Infinity' WHEN 3 THEN NULL \
     WHEN 4 THEN round(((i * 7919) % 1000 - 500)::numeric / 8, 3) + 0.0001 \
     WHEN 5 THEN round(((i * 31) % 200 - 100)::numeric / 3, 3) ELSE ((i::int8 * 104729) % 2000 - 1000)::numeric + 0.5 END, 'p' || (i % 97) FROM generate_series(1, 30000) i",
    "CREATE TABLE small (id int, x numeric)",
    "INSERT INTO small VALUES (1, 'NaN'), (2, 'Infinity'), (3, '-Infinity'), (4, NULL), (5, 1.5), (6, 2.50), (7, ' nan '), \
     (8, '-inf'), (9, '+inf'), (10, 0), (11, -0.001), (12, 9999999999999999), (13, -9999999999999999.5), (14, 'NAN')",
    "CREATE TABLE other (k numeric, label text)",
    "INSERT INTO other VALUES ('NaN', 'nan'), ('Infinity', 'pinf'), ('-Infinity', 'ninf'), (1.5, 'one and a half'), (1.500, 'again'), \
     (0.00, 'zero'), (NULL, 'null'), ('nan', 'nan again')",
    "CREATE TABLE indexed (id int, x numeric)",
    "INSERT INTO indexed SELECT id, x FROM nums",
    "CREATE INDEX indexed_x ON indexed (x)",
    "CREATE INDEX indexed_id ON indexed (id)",
    "ANALYZE nums",
    "ANALYZE indexed",
];

/// Input forms, output, comparisons and arithmetic.
const SCALARS: &[&str] = &[
    "SELECT ' nan '::numeric, 'inf'::numeric, '+inf'::numeric, '-INFINITY'::numeric, '-inf'::numeric, 'Infinity'::numeric, 'NaN'::numeric",
    "SELECT 'nan'::numeric = 'NaN'::numeric, 'nan'::numeric > 'inf'::numeric, 'inf'::numeric > 99999999999999999999999999999999999999, \
     '-inf'::numeric < -99999999999999999999, 'nan'::numeric <> 'nan'::numeric, 'inf'::numeric = 'inf'::numeric",
    "SELECT 'Infinity'::numeric + 1, 'Infinity'::numeric - 'Infinity', 'Infinity'::numeric * 0, 1 / 'Infinity'::numeric, \
     'inf'::numeric / 'inf', 'nan'::numeric + 1, 'nan'::numeric / 0",
    "SELECT 0 / 'Infinity'::numeric, (-1.5) / 'Infinity'::numeric, 'inf'::numeric * -2, '-inf'::numeric * '-inf', \
     '-inf'::numeric - 'inf', '-inf'::numeric + 5.5, -('inf'::numeric), -('nan'::numeric), 'inf'::numeric / -3",
    "SELECT 'NaN'::numeric % 0, 'inf'::numeric % 2, 5 % 'inf'::numeric, -5.5 % 'inf'::numeric, 5 % '-inf'::numeric, \
     'nan'::numeric % 'inf', mod('inf'::numeric, 3), mod(7.5, '-inf'::numeric)",
    "SELECT abs('-inf'::numeric), abs('nan'::numeric), sign('-inf'::numeric), sign('nan'::numeric), sign('inf'::numeric)",
    "SELECT ceil('inf'::numeric), floor('-inf'::numeric), round('inf'::numeric), round('nan'::numeric, 2), \
     trunc('-inf'::numeric, 1), trunc('nan'::numeric), ceil('nan'::numeric), round('-inf'::numeric, -2)",
    "SELECT power('inf'::numeric, 2), power('inf'::numeric, -1), power(2::numeric, 'inf'::numeric), \
     power(0.5::numeric, 'inf'::numeric), power('nan'::numeric, 0), power(1::numeric, 'nan'::numeric), power(2::numeric, 'nan'::numeric)",
    "SELECT power('-inf'::numeric, 3), power('-inf'::numeric, 2), power('-inf'::numeric, -3), power(-2::numeric, 'inf'::numeric), \
     power(-0.5::numeric, 'inf'::numeric), power(-1::numeric, 'inf'::numeric), power(0.5::numeric, '-inf'::numeric), 'inf'::numeric ^ 0",
    "SELECT sqrt('inf'::numeric), sqrt('nan'::numeric), exp('-inf'::numeric), exp('inf'::numeric), ln('inf'::numeric), log('inf'::numeric)",
    "SELECT div('inf'::numeric, 2), div(5::numeric, 'inf'::numeric), div('nan'::numeric, 0), div('-inf'::numeric, 'inf'::numeric)",
    "SELECT scale('nan'::numeric), scale('inf'::numeric), scale(1.50)",
    "SELECT width_bucket('inf'::numeric, 1, 10, 3), width_bucket('-inf'::numeric, 1, 10, 3), width_bucket(5.5, 1, 10, 3)",
    "SELECT greatest(1, 'nan'::numeric, 'inf'::numeric), least(1, 'nan'::numeric, '-inf'::numeric), \
     coalesce(NULL, 'inf'::numeric), nullif('nan'::numeric, 'NaN'::numeric)",
    "SELECT 'nan'::numeric IN (1, 'NaN'), 'inf'::numeric BETWEEN 0 AND 'NaN', 'nan'::numeric BETWEEN '-inf' AND 'inf'",
    "SELECT extract(epoch FROM 'infinity'::timestamp), extract(year FROM '-infinity'::date), date_part('epoch', '-infinity'::timestamptz)",
    "SELECT pg_size_pretty('nan'::numeric), pg_size_pretty('inf'::numeric), pg_size_pretty('-inf'::numeric)",
    // Casts both ways.
    "SELECT 'nan'::numeric::float8, 'inf'::numeric::float8, '-inf'::numeric::float8, 'nan'::float8::numeric, \
     '-inf'::float8::numeric, 'infinity'::float8::numeric, 1e15::float8::numeric > 0",
    "SELECT 'nan'::numeric::text, 'inf'::numeric::varchar, '-inf'::numeric::text || '!', 'NaN'::text::numeric, \
     CAST('Infinity' AS numeric)::text",
    "SELECT 'nan'::numeric(5,2), 'NaN'::numeric(3), 1.5::numeric(5,2)",
    "SELECT x, x::text, x::float8 FROM small ORDER BY id",
];

/// ORDER BY, DISTINCT, GROUP BY, joins, aggregates and window frames over the tables, run
/// serially, with forced parallel workers and with `work_mem = 64kB` (external sorts and
/// spilling hash aggregates).
const QUERIES: &[&str] = &[
    "SELECT x, id FROM nums ORDER BY x, id",
    "SELECT x, id FROM nums ORDER BY x DESC, id",
    "SELECT x, id FROM nums ORDER BY x NULLS FIRST, id",
    "SELECT x, id FROM nums ORDER BY x DESC NULLS LAST, id DESC",
    "SELECT x, id FROM nums ORDER BY x USING >, id LIMIT 100",
    "SELECT x, id FROM nums ORDER BY x, id LIMIT 20 OFFSET 26500",
    "SELECT pad, x, id FROM nums ORDER BY pad DESC, x NULLS FIRST, id",
    "SELECT x * 2 AS y, id FROM nums ORDER BY y DESC, id LIMIT 3000",
    "SELECT x, id FROM small ORDER BY x, id",
    "SELECT x, id FROM small ORDER BY x DESC NULLS LAST, id",
    "SELECT DISTINCT x FROM nums ORDER BY x",
    "SELECT DISTINCT x FROM small ORDER BY x DESC",
    "SELECT count(DISTINCT x) FROM nums",
    "SELECT x, count(*), min(id), max(id) FROM nums GROUP BY x ORDER BY x",
    "SELECT x, count(*) FROM small GROUP BY x ORDER BY x NULLS FIRST",
    "SELECT x, count(*) FROM nums WHERE x > 990 OR x < -990 OR x IS NULL GROUP BY x",
    "SELECT count(*), min(x), max(x) FROM nums",
    "SELECT id % 13, min(x), max(x), count(x) FROM nums GROUP BY 1 ORDER BY 1",
    "SELECT sum(x), avg(x), count(x) FROM nums",
    "SELECT id % 13, sum(x), avg(x) FROM nums GROUP BY 1 ORDER BY 1",
    "SELECT id % 13, sum(x), avg(x) FROM nums WHERE id % 13 NOT IN (0, 1, 2) OR id % 26 = 1 GROUP BY 1 ORDER BY 1",
    "SELECT sum(x), avg(x) FROM nums WHERE id % 13 <> 0",
    // Many groups, each mixing specials and finite values: at 64kB the hash aggregate
    // spills its sum/avg/variance states and combines them again.
    "SELECT id % 1000, sum(x), avg(x), stddev(x), max(x), count(x) FROM nums GROUP BY 1 ORDER BY 1",
    "SELECT id % 1000 AS k, sum(x) FROM nums WHERE id % 13 <> 0 GROUP BY 1 HAVING sum(x) > 0 ORDER BY 1",
    "SELECT sum(x), avg(x) FROM nums WHERE id % 13 NOT IN (0, 2)",
    "SELECT sum(x), avg(x), min(x), max(x) FROM nums WHERE id % 13 NOT IN (0, 1)",
    "SELECT id % 13, stddev(x), variance(x), var_pop(x), stddev_pop(x) FROM nums GROUP BY 1 ORDER BY 1",
    "SELECT stddev(x), var_samp(x) FROM small WHERE id IN (2, 5)",
    "SELECT stddev(x), variance(x), var_pop(x), stddev_pop(x) FROM small WHERE id = 2",
    "SELECT stddev(x), variance(x) FROM small WHERE id IN (1, 5)",
    "SELECT x::float8, count(*) FROM nums WHERE id % 13 < 3 GROUP BY 1 ORDER BY 1",
    "SELECT s.id, o.label FROM small s JOIN other o ON s.x = o.k ORDER BY s.id, o.label",
    "SELECT s.id, o.label FROM small s LEFT JOIN other o ON o.k = s.x ORDER BY s.id, o.label",
    "SELECT o.label, count(n.id) FROM other o LEFT JOIN nums n ON n.x = o.k GROUP BY o.label ORDER BY o.label",
    "SELECT count(*) FROM nums a JOIN small b ON a.x = b.x",
    "SELECT count(*) FROM small a JOIN small b ON a.x < b.x",
    "SELECT x FROM small WHERE x IN (SELECT k FROM other) ORDER BY id",
    "SELECT x FROM small EXCEPT SELECT k FROM other ORDER BY 1",
    "SELECT id, x, rank() OVER (ORDER BY x), row_number() OVER (ORDER BY x DESC, id) FROM small ORDER BY id",
    "SELECT id, x, sum(x) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM small ORDER BY id",
    "SELECT id, x, count(*) OVER (ORDER BY x RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM small ORDER BY id",
    "SELECT id, x, count(*) OVER (ORDER BY x RANGE BETWEEN 'Infinity' PRECEDING AND CURRENT ROW) FROM small ORDER BY id",
    "SELECT id, x, count(*) OVER (ORDER BY x DESC RANGE BETWEEN CURRENT ROW AND 'Infinity' FOLLOWING) FROM small ORDER BY id",
    "SELECT id, x + 1, x - x, x * x, x / 2, -x, abs(x), round(x, 1), trunc(x), ceil(x), floor(x), sign(x) FROM small ORDER BY id",
    "SELECT id, x::float8 FROM small WHERE x > 0 ORDER BY id",
];

/// Index scans: equality and ranges with specials at the ends, both directions, with the
/// sequential scan disabled so the B-tree answers.
const INDEX_QUERIES: &[&str] = &[
    "SELECT x, id FROM indexed WHERE x = 'NaN' ORDER BY id LIMIT 50",
    "SELECT count(*) FROM indexed WHERE x = 'NaN'",
    "SELECT count(*) FROM indexed WHERE x = 'Infinity'",
    "SELECT count(*) FROM indexed WHERE x = '-Infinity'",
    "SELECT x, id FROM indexed WHERE x > 995 ORDER BY x, id",
    "SELECT x, id FROM indexed WHERE x >= 'Infinity' ORDER BY x DESC, id",
    "SELECT x, id FROM indexed WHERE x < -995 ORDER BY x, id",
    "SELECT x, id FROM indexed WHERE x <= '-Infinity' ORDER BY id LIMIT 10",
    "SELECT count(*) FROM indexed WHERE x > 'Infinity'",
    "SELECT count(*) FROM indexed WHERE x < 'NaN'",
    "SELECT count(*) FROM indexed WHERE x BETWEEN '-Infinity' AND -999",
    "SELECT count(*) FROM indexed WHERE x > 999 AND x < 'NaN'",
    "SELECT x FROM indexed WHERE x > 990 ORDER BY x DESC LIMIT 30",
    "SELECT x, id FROM indexed ORDER BY x, id LIMIT 10",
    "SELECT x FROM indexed ORDER BY x DESC LIMIT 5",
    "SELECT x FROM indexed ORDER BY x NULLS FIRST LIMIT 5",
    "SELECT min(x), max(x) FROM indexed",
    "SELECT count(*) FROM indexed WHERE x IN ('NaN', 'Infinity', 1.5)",
    "SELECT count(*) FROM indexed WHERE x > 1000::int4",
    "SELECT count(*) FROM indexed WHERE x < -1000::int8",
    // An int4 key against special numeric bounds: NaN and Infinity above every integer.
    "SELECT count(*) FROM indexed WHERE id < 'NaN'::numeric",
    "SELECT count(*) FROM indexed WHERE id > 'Infinity'::numeric",
    "SELECT count(*) FROM indexed WHERE id >= '-Infinity'::numeric AND id < 20.5",
    "SELECT id FROM indexed WHERE id = 'NaN'::numeric",
    "SELECT id FROM indexed WHERE id BETWEEN 29990.5 AND 'Infinity'::numeric ORDER BY id DESC",
];

/// Statements that change data: specials stored, updated and read back through the index.
const SCRIPT: &[&str] = &[
    "CREATE TABLE typed (id int, a numeric(5,2), b numeric)",
    "INSERT INTO typed VALUES (1, 'NaN', 'inf'), (2, 1.005, '-Infinity'), (3, NULL, 'nan')",
    "INSERT INTO typed VALUES (4, 'Infinity', 0)",
    "INSERT INTO typed (id, a) SELECT 5, '-inf'::numeric",
    "UPDATE typed SET a = b WHERE id = 1",
    "UPDATE typed SET b = b * -1",
    "SELECT * FROM typed ORDER BY id",
    "INSERT INTO indexed VALUES (-1, 'NaN'), (-2, '-inf'), (-3, 1e20)",
    "DELETE FROM indexed WHERE x = 'Infinity' AND id > 29000",
    "SELECT count(*), min(x), max(x) FROM indexed WHERE x = 'NaN' OR x = 'Infinity' OR x = '-Infinity'",
    "SELECT id, x FROM indexed WHERE x > 999 ORDER BY x, id",
    "CREATE TABLE uniq (x numeric PRIMARY KEY)",
    "INSERT INTO uniq VALUES ('NaN'), ('inf'), ('-inf'), (1)",
    "INSERT INTO uniq VALUES ('nan')",
    "INSERT INTO uniq VALUES ('Infinity')",
    "INSERT INTO uniq VALUES (1.0) ON CONFLICT (x) DO NOTHING",
    "INSERT INTO uniq VALUES ('NaN') ON CONFLICT (x) DO NOTHING",
    "SELECT * FROM uniq ORDER BY x",
    "SELECT * FROM uniq WHERE x > 0 ORDER BY x DESC",
];

/// Refused alike, with the same message (and SQLSTATE for the second list).
const ERRORS: &[&str] = &["SELECT '+nan'::numeric", "SELECT '-nan'::numeric", "SELECT 'infinit'::numeric"];
const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT 'Infinity'::numeric / 0",
    "SELECT '-Infinity'::numeric / 0.000",
    "SELECT 'inf'::numeric % 0",
    "SELECT div('inf'::numeric, 0)",
    "SELECT 1 / 0::numeric",
    "SELECT 'nan'::numeric::int4",
    "SELECT 'nan'::numeric::int8",
    "SELECT 'inf'::numeric::int8",
    "SELECT '-inf'::numeric::int4",
    "SELECT 'nan'::numeric::int2",
    "SELECT '-inf'::numeric::smallint",
    "SELECT x::int4 FROM small ORDER BY id",
    "SELECT sqrt('-inf'::numeric)",
    "SELECT ln('-inf'::numeric)",
    "SELECT power('-inf'::numeric, 0.5)",
    "SELECT power(0::numeric, '-inf'::numeric)",
    "SELECT width_bucket('nan'::numeric, 1, 10, 3)",
    "SELECT width_bucket(5::numeric, 1, 'inf'::numeric, 3)",
    "SELECT 'inf'::numeric(5,2)",
    "SELECT '-inf'::numeric(3)",
    "SELECT sum(x::int8) FROM nums",
    "SELECT id, x, count(*) OVER (ORDER BY x RANGE BETWEEN 'NaN' PRECEDING AND CURRENT ROW) FROM small",
    "SELECT id, x, count(*) OVER (ORDER BY x RANGE BETWEEN '-Infinity' PRECEDING AND CURRENT ROW) FROM small",
];

/// Settings the ORDER BY queries run under in weft: the sort goes external and parallel.
const SORT_MODES: &[&[&str]] = &[
    &["SET work_mem = '64kB'", "SET max_parallel_workers_per_gather = 0"],
    &["SET work_mem = '64kB'", "SET max_parallel_workers_per_gather = 4", "SET min_parallel_table_scan_size = 0"],
    &["SET max_parallel_workers_per_gather = 4", "SET min_parallel_table_scan_size = 0", "SET parallel_sort_strategy = 'partition'"],
    &["SET max_parallel_workers_per_gather = 4", "SET min_parallel_table_scan_size = 0", "SET parallel_sort_strategy = 'leader_merge'"],
    &[
        "SET max_parallel_workers_per_gather = 4",
        "SET min_parallel_table_scan_size = 0",
        "SET parallel_sort_strategy = 'leader_merge'",
        "SET parallel_leader_participation = off",
        "SET work_mem = '64kB'",
    ],
];

#[test]
fn numeric_special_values_match_postgres() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = query_mismatches(&pg, &mut session, SCALARS);
    mismatches.extend(oracle::mismatches_in_modes(&pg, &mut session, QUERIES));
    for settings in SORT_MODES {
        for sql in *settings {
            session.execute(sql).unwrap();
        }
        let sorts: Vec<&str> = QUERIES.iter().copied().filter(|q| q.contains("ORDER BY")).collect();
        mismatches.extend(query_mismatches(&pg, &mut session, &sorts).into_iter().map(|m| format!("{settings:?}: {m}")));
        session.execute("RESET ALL").unwrap();
    }
    session.execute("SET enable_seqscan = off").unwrap();
    let plan = session.execute("EXPLAIN SELECT x, id FROM indexed WHERE x > 995 ORDER BY x, id").unwrap();
    assert!(oracle::lines(&plan).join("\n").contains("indexed_x"), "the range query uses the index: {:?}", oracle::lines(&plan));
    // PostgreSQL's answers do not depend on its plan: it runs them with its defaults.
    mismatches.extend(query_mismatches(&pg, &mut session, INDEX_QUERIES).into_iter().map(|m| format!("index scans: {m}")));
    session.execute("RESET ALL").unwrap();
    mismatches.extend(error_mismatches(&pg, &mut session, ERRORS, ERRORS_WITH_SQLSTATE));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n"));
    compare_script(&pg, &mut session, SCRIPT, true);
}
