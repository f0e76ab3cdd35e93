//! Type modifiers compared with PostgreSQL 15: `numeric(p,s)`, `varchar(n)`, `char(n)` and
//! `smallint` in casts (values and output column names), INSERT ... VALUES / SELECT,
//! UPDATE, COPY FROM, ON CONFLICT DO UPDATE, column defaults and CREATE TABLE AS (the
//! declared types of the new table, as `format_type` prints them), with PostgreSQL's
//! errors: message, DETAIL and SQLSTATE.
//!
//! Known difference kept out of the scripts: `char(n)` is not blank-padded in weft, so a
//! `char(n)` value shorter than `n` prints without the trailing spaces PostgreSQL shows.

use super::oracle;

use oracle::{assert_same_error, compare_script, error_mismatches, lines};

const SETUP: &[&str] = &[
    "CREATE TABLE n (id int, x numeric(6,2), y numeric(4), z decimal(5,1), w numeric(3,-1))",
    "CREATE TABLE v (id int, a varchar(3), b character varying(3), c char(4), d character(2), f varchar, g char)",
    "CREATE TABLE s (id int, a smallint, b int2)",
    "CREATE TABLE src (id int, num numeric, txt text, big int8, dbl float8)",
    "INSERT INTO src VALUES (1, 3.14159, 'xyz', 100, 2.5), (2, 999.999, 'ok', 40000, -0.125), (3, -1.005, 'ab  ', -32768, 1e3)",
    "CREATE TABLE u (id int PRIMARY KEY, x numeric(4,1), s varchar(2))",
];

/// Casts: values, rounding half away from zero, padding to the scale, truncation of an
/// explicit cast to a shorter string, and smallint's range.
const CASTS: &[&str] = &[
    "SELECT 1::numeric(10,2), 3.5::float8::numeric(10,2), '1.005'::numeric(4,2), (-1.005)::numeric(4,2), 2.5::numeric(4), (-2.5)::numeric(4)",
    "SELECT 123::numeric(3,-1), 0.001::numeric(1,3), 999.994::numeric(5,2), 0.99::numeric(2,2), (-0.001)::numeric(5,2), 1::numeric(3)::text",
    "SELECT (1 + 2)::numeric(4,1), 7::int8::numeric(5,3), 2.675::float8::numeric(4,2), cast(12.345 as decimal(5,2)), numeric(5,2) '1.5'",
    "SELECT 'abc'::varchar(2), 'abc'::char(2), 'abc'::char, 'éèà'::varchar(2), 'ab'::varchar(5), 'abc'::character varying(2)::text, 'a  '::varchar(1)",
    "SELECT 5::smallint, 1.5::smallint, '12'::int2, 2.5::float8::smallint, (-32768)::smallint, 32767::int8::smallint, ' 7 '::smallint",
    "SELECT 1::int8::int, num::numeric(6,1), txt::varchar(2), big::numeric(7,1) FROM src ORDER BY id",
    "SELECT id, num::numeric(8,3) + 1 FROM src WHERE num::numeric(5,1) > 3 ORDER BY id",
    "SELECT max(num::numeric(5,1)), sum(dbl::numeric(6,2)), min(txt::varchar(1)) FROM src",
    "SELECT NULL::numeric(3,1), NULL::varchar(2), NULL::smallint",
];

/// Casts whose output column PostgreSQL names after the type (`FigureColname`).
const NAMED: &[&str] = &[
    "SELECT 1::numeric(10,2), 3.5::float8::numeric(10,2), 'abc'::varchar(2), 'abc'::char(2), 5::smallint, 1::int8::int, 1::real, (1 + 2)::numeric(4,1), 'a'::bpchar",
    "SELECT num::numeric(6,1), txt::varchar(2), (num)::text, CASE WHEN true THEN 1 END::numeric(3,1), 'x'::text::varchar(3) FROM src",
];

/// Stores into declared columns, each statement in both systems in turn.
const SCRIPT: &[&str] = &[
    "INSERT INTO n VALUES (1, 1.234, 2.5, 3, 123), (2, 2, 1234.4, -0.05, -55)",
    "SELECT * FROM n ORDER BY id",
    "INSERT INTO n (id, x) VALUES (3, 10000)",
    "INSERT INTO n (id, y) VALUES (3, 99999.5)",
    "INSERT INTO n (id, w) VALUES (3, 9995)",
    "INSERT INTO n (id, x) VALUES (3, '-9999.994')",
    "INSERT INTO n (id, x) SELECT id + 10, num FROM src WHERE id <> 2",
    "INSERT INTO n (id, x) SELECT id + 10, num * 100 FROM src",
    "INSERT INTO n (id, x) VALUES (20, true)",
    "SELECT id, x FROM n ORDER BY id",
    "UPDATE n SET x = x * 1.0055 WHERE id = 1",
    "UPDATE n SET x = 10000 WHERE id = 1",
    "UPDATE n SET y = y / 3, z = z * 1.01",
    "SELECT * FROM n ORDER BY id",
    "INSERT INTO v (id, a, b, d, f, g) VALUES (1, 'abc  ', 'é€x', 'ab', 'long long', 'x')",
    "INSERT INTO v (id, a) VALUES (2, 'abcd')",
    "INSERT INTO v (id, b) VALUES (2, 'é€xy')",
    "INSERT INTO v (id, c) VALUES (2, 'abcde')",
    "INSERT INTO v (id, g) VALUES (2, 'ab')",
    "INSERT INTO v (id, g) VALUES (2, 'a ')",
    "INSERT INTO v (id, a) SELECT 3, txt FROM src WHERE id = 3",
    "INSERT INTO v (id, a) SELECT 4, txt || 'z' FROM src WHERE id = 3",
    "UPDATE v SET a = a || '!!' WHERE id = 1",
    "UPDATE v SET a = a || '  ' WHERE id = 1",
    "SELECT id, a, length(a), b, d, f, g FROM v ORDER BY id",
    "INSERT INTO s VALUES (1, 32767, -32768), (2, 1.5, '7'), (3, 2.5::float8, -2.5)",
    "INSERT INTO s VALUES (4, 32768, 1)",
    "INSERT INTO s (id, a) VALUES (4, '70000')",
    "INSERT INTO s (id, a) VALUES (4, -40000::int8)",
    "INSERT INTO s (id, a) SELECT id, big FROM src",
    "INSERT INTO s (id, a) SELECT id, big FROM src WHERE big < 1000",
    "UPDATE s SET b = b * 1000 WHERE id = 2",
    "UPDATE s SET b = b * 10000 WHERE id = 2",
    "SELECT * FROM s ORDER BY id",
    // Upserts: the inserted row and the SET values both go through the modifier.
    "INSERT INTO u VALUES (1, 1.25, 'a')",
    "INSERT INTO u VALUES (1, 2.25, 'b') ON CONFLICT (id) DO UPDATE SET x = excluded.x * 10, s = excluded.s || 'c'",
    "INSERT INTO u VALUES (1, 2.25, 'b') ON CONFLICT (id) DO UPDATE SET s = 'long'",
    "INSERT INTO u VALUES (1, 2.25, 'b') ON CONFLICT (id) DO UPDATE SET x = 1000",
    "INSERT INTO u VALUES (2, 1000, 'b') ON CONFLICT (id) DO NOTHING",
    "INSERT INTO u VALUES (2, 99.95, 'b ') ON CONFLICT (id) DO NOTHING",
    "SELECT * FROM u ORDER BY id",
    // Defaults: a length or precision is checked when a row takes the default.
    "CREATE TABLE d (a int, x numeric(5,2) DEFAULT 1.005, s varchar(2) DEFAULT 'abc')",
    "INSERT INTO d (a, x) VALUES (1, 2)",
    "INSERT INTO d (a, s) VALUES (1, 'ok')",
    "SELECT * FROM d",
    "CREATE TABLE d2 (a int, x numeric(2,1) DEFAULT '100', k smallint DEFAULT 5)",
    "INSERT INTO d2 (a) VALUES (1)",
    "CREATE TABLE d3 (a int, k smallint DEFAULT '99999')",
    // CREATE TABLE AS takes a cast's modifier and a declared column's.
    "CREATE TABLE c AS SELECT 1::numeric(5,2) AS x, 'ab'::varchar(5) AS y, 3::smallint AS z, 1.5::numeric AS w, 'qqq'::char(3) AS q",
    "SELECT * FROM c",
    "CREATE TABLE c2 AS SELECT * FROM n",
    "CREATE TABLE c3 AS SELECT x + 1 AS x1, coalesce(x, x) AS x2, CASE WHEN id > 0 THEN x END AS x3, x AS x4, a.y FROM n a",
    "CREATE TABLE c4 AS SELECT x FROM n UNION ALL SELECT x FROM n",
    "CREATE TABLE c5 AS SELECT x FROM n UNION ALL SELECT 1.5::numeric(7,3)",
    "INSERT INTO c VALUES (1000, 'abcdef', 1, 1, 'qqq')",
    "INSERT INTO c VALUES (999.999, 'abcde', 40000, 1, 'qqq')",
    "INSERT INTO c2 (x) VALUES (5.555)",
    "SELECT x FROM c2 ORDER BY x",
];

/// Tables whose declared column types must be PostgreSQL's (`format_type`).
const DECLARED: &[&str] = &["n", "v", "s", "u", "d", "c", "c2", "c3", "c4", "c5"];

/// Errors compared by SQLSTATE and message.
const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT 1234.5::numeric(5,2)",
    "SELECT 999.995::numeric(5,2)",
    "SELECT 1::numeric(3,5)",
    "SELECT 1::numeric(2,2)",
    "SELECT 99999::smallint",
    "SELECT ' 40000 '::smallint",
    "SELECT 1e10::smallint",
    "SELECT 'x'::smallint",
    "SELECT 1::numeric(0)",
    "SELECT 1::numeric(1001)",
    "SELECT 1::numeric(3,1001)",
    "SELECT 1::numeric(3,-1001)",
    "SELECT 'a'::varchar(0)",
    "SELECT 'a'::char(0)",
    "SELECT 'a'::varchar(10485761)",
    "SELECT 1::int4(3)",
    "SELECT 1::int2(3)",
    "SELECT 'a'::text(3)",
    "SELECT big::smallint FROM src",
    "SELECT num::numeric(4,2) FROM src",
    "INSERT INTO v (id, a) VALUES (9, 'abcd')",
    "INSERT INTO n (id, x) VALUES (9, 10000)",
    "INSERT INTO s (id, a) VALUES (9, 32768)",
    "CREATE TABLE bad (x numeric(0))",
    "CREATE TABLE bad (x varchar(0))",
];

#[test]
fn type_modifiers_match_postgresql() {
    let Some((pg, dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    for sql in CASTS {
        let expected = pg.query(sql).unwrap_or_else(|e| panic!("PostgreSQL {sql}: {e}"));
        match session.execute(sql) {
            Ok(result) if lines(&result) == expected => {}
            Ok(result) => mismatches.push(format!("{sql}\n  pg:   {expected:?}\n  weft: {:?}", lines(&result))),
            Err(e) => mismatches.push(format!("{sql}\n  weft failed: {e:?}")),
        }
    }
    for sql in NAMED {
        let expected = column_names(&pg, sql);
        let actual: Vec<String> = session.execute(sql).unwrap().columns.iter().map(|c| c.name.clone()).collect();
        if actual != expected {
            mismatches.push(format!("{sql}\n  pg:   {expected:?}\n  weft: {actual:?}"));
        }
    }
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));

    compare_script(&pg, &mut session, SCRIPT, true);
    for sql in copy_script(dir.path()) {
        match (session.execute(&sql), pg.query(&sql)) {
            (Ok(weft), Ok(postgres)) => assert_eq!(lines(&weft), postgres, "{sql}"),
            (Err(weft), Err(postgres)) => {
                // PostgreSQL's CONTEXT line (`COPY v, line 1, column b: ...`) is the error's
                // context.
                assert!(weft.context.as_deref().is_some_and(|c| c.starts_with("COPY ")), "{sql}: a COPY error names its line");
                assert_same_error(&sql, &weft, &postgres.message, true);
            }
            (weft, postgres) => panic!("{sql}: weft {weft:?}, PostgreSQL {postgres:?}"),
        }
    }
    for table in DECLARED {
        let expected = pg
            .query(&format!(
                "SELECT attname || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute \
                 WHERE attrelid = '{table}'::regclass AND attnum > 0 ORDER BY attnum"
            ))
            .unwrap();
        let description = session.describe(table).unwrap();
        let actual: Vec<String> = description.columns.iter().map(|(name, type_name, _)| format!("{name} {type_name}")).collect();
        assert_eq!(actual, expected, "declared types of {table}");
    }
}

/// COPY FROM files both servers read: rounding, all-space excess, and a refused field of
/// each kind (message and DETAIL; PostgreSQL's CONTEXT line is not compared).
fn copy_script(dir: &std::path::Path) -> Vec<String> {
    let files = [
        ("ok.txt", "21\t1.234\t1\t1\t-5\n22\t2\t1234.4\t-0.05\t\\N\n"),
        ("overflow.txt", "23\t1234.5\t1\t1\t1\n"),
        ("too_long.txt", "5\tabc  \tabcd\n"),
        ("spaces.txt", "6\tabc   \tab \n"),
        ("small.txt", "5\t40000\t1\n"),
    ];
    for (name, contents) in files {
        std::fs::write(dir.join(name), contents).unwrap();
    }
    let path = |name: &str| dir.join(name).display().to_string();
    vec![
        format!("COPY n (id, x, y, z, w) FROM '{}'", path("ok.txt")),
        format!("COPY n (id, x, y, z, w) FROM '{}'", path("overflow.txt")),
        format!("COPY v (id, a, b) FROM '{}'", path("too_long.txt")),
        format!("COPY v (id, a, b) FROM '{}'", path("spaces.txt")),
        format!("COPY s (id, a, b) FROM '{}'", path("small.txt")),
        "SELECT * FROM n WHERE id > 20 ORDER BY id".to_string(),
        "SELECT id, a, b, length(a) FROM v WHERE id > 4 ORDER BY id".to_string(),
    ]
}

/// The output column names PostgreSQL gives `sql` (psql's header in unaligned mode).
fn column_names(pg: &weft::postgres::PgCluster, sql: &str) -> Vec<String> {
    let output = pg.psql_command().args(["-A", "-c", sql]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout.lines().next().unwrap_or_default().split('|').map(str::to_string).collect()
}
