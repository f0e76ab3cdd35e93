//! date, timestamp, timestamptz, time and interval compared with PostgreSQL 15 (TimeZone
//! UTC in both): literals, casts and their output; ORDER BY (both directions, NULLS
//! FIRST/LAST, LIMIT) serial, parallel and spilling; GROUP BY, DISTINCT, joins on date
//! keys, B-tree indexes with ranges, min/max; arithmetic; extract, date_part, date_trunc,
//! age, to_char; and bad input refused with PostgreSQL's message and SQLSTATE.

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE ev (id int, d date, ts timestamp, tz timestamptz, iv interval, t time)",
    "INSERT INTO ev SELECT i, \
       CASE WHEN i % 53 = 0 THEN NULL ELSE date '2023-11-20' + (i * 7) % 500 END, \
       CASE WHEN i % 61 = 0 THEN NULL ELSE timestamp '2024-01-01 00:00' + (i % 3000) * interval '37 minutes 12.5 seconds' END, \
       CASE WHEN i % 67 = 0 THEN NULL ELSE timestamptz '2023-06-30 23:00+00' + (i % 2500) * interval '1 hour 1 minute' END, \
       CASE WHEN i % 71 = 0 THEN NULL ELSE (i % 40) * interval '1 day 3 hours' - (i % 7) * interval '1 mon' END, \
       CASE WHEN i % 73 = 0 THEN NULL ELSE time '00:00' + (i % 1440) * interval '1 minute' END \
     FROM generate_series(1, 20000) i",
    "INSERT INTO ev VALUES (20001, 'infinity', 'infinity', 'infinity', '1 mon', '24:00'), \
       (20002, '-infinity', '-infinity', '-infinity', '30 days', '00:00'), \
       (20003, '1999-12-31', '1999-12-31 23:59:59.999999', '1999-12-31 23:59:59.999999+00', '720 hours', '23:59:59.999999')",
    "CREATE TABLE days (d date, label text)",
    "INSERT INTO days SELECT date '2023-11-20' + i, 'day ' || i FROM generate_series(0, 600, 3) i",
    "CREATE TABLE evi (id int, d date, ts timestamp)",
    "INSERT INTO evi SELECT id, d, ts FROM ev",
    "CREATE INDEX evi_d ON evi (d)",
    "CREATE INDEX evi_ts ON evi (ts DESC)",
];

const QUERIES: &[&str] = &[
    // Literals, casts, output.
    "SELECT DATE '2024-03-05', TIMESTAMP '2024-03-05 10:11:12.345', '2024-03-05T10:11:12+02'::timestamptz, INTERVAL '1 day 2 hours'",
    "SELECT '2024-03-05'::date, '03/05/2024'::date, 'Mar 5, 2024'::date, '20240305'::date, 'epoch'::date, 'infinity'::date, '-infinity'::date",
    "SELECT '2024-03-05 10:11'::timestamp, '2024-03-05 10:11:12.1234567'::timestamp, '2024-03-05 10:11:12 -05:30'::timestamptz, 'epoch'::timestamptz",
    "SELECT '1 year 2 months'::interval, '-1 second'::interval, '1 day -2 hours'::interval, '-1 day +2 hours'::interval, '1.5 days'::interval, '1.5 months'::interval",
    "SELECT '3'::interval, INTERVAL '3' DAY, INTERVAL '1 year 5 days' YEAR, '2 weeks ago'::interval, 'P1Y2M3DT4H5M6S'::interval, '100:00:00'::interval, '@ 3 mins'::interval",
    "SELECT '0044-03-15 BC'::date, '2024-03-05 10:11:12'::date, '10:11:12.5'::time, '24:00'::time",
    "SELECT d::text, ts::date, tz::timestamp, d::timestamp, d::timestamptz, ts::time, iv::text FROM ev WHERE id IN (1, 2, 20001, 20002, 20003) ORDER BY id",
    "SELECT CAST('2024-02-29' AS date), CAST(TIMESTAMP '2024-02-29 12:00' AS timestamp with time zone), CAST(DATE '2024-02-29' AS timestamp without time zone)",
    // Comparisons, also across date and timestamp.
    "SELECT DATE '2024-03-05' = TIMESTAMP '2024-03-05', DATE '2024-03-05' < TIMESTAMP '2024-03-05 00:00:01', TIMESTAMP '2024-03-05' = TIMESTAMPTZ '2024-03-05 00:00+00', INTERVAL '1 mon' = INTERVAL '30 days', INTERVAL '1 day' = INTERVAL '24 hours', INTERVAL '1 day' > INTERVAL '23 hours'",
    "SELECT count(*) FROM ev WHERE d > '2024-06-01'",
    "SELECT count(*) FROM ev WHERE ts BETWEEN '2024-01-10' AND '2024-02-01 12:00'",
    "SELECT count(*) FROM ev WHERE d < ts",
    "SELECT count(*) FROM ev WHERE iv > '10 days'",
    // ORDER BY.
    "SELECT id, d FROM ev ORDER BY d, id LIMIT 20",
    "SELECT id, d FROM ev ORDER BY d DESC, id LIMIT 20",
    "SELECT id, d FROM ev ORDER BY d NULLS FIRST, id LIMIT 20",
    "SELECT id, d FROM ev ORDER BY d DESC NULLS LAST, id LIMIT 20",
    "SELECT id, ts FROM ev ORDER BY ts, id LIMIT 30",
    "SELECT id, ts FROM ev ORDER BY ts DESC, id LIMIT 30",
    "SELECT id, tz FROM ev ORDER BY tz DESC NULLS LAST, id LIMIT 30",
    "SELECT id, iv FROM ev ORDER BY iv, id LIMIT 30",
    "SELECT id, iv FROM ev ORDER BY iv DESC, id LIMIT 30",
    "SELECT id, t FROM ev ORDER BY t DESC, id LIMIT 10",
    "SELECT id, d, ts FROM ev ORDER BY d, ts DESC, id",
    "SELECT d FROM ev ORDER BY d",
    "SELECT iv, id FROM ev ORDER BY iv, id",
    // GROUP BY, DISTINCT, aggregates.
    "SELECT d, count(*) FROM ev GROUP BY d ORDER BY d",
    "SELECT iv, count(*) FROM ev GROUP BY iv ORDER BY iv",
    "SELECT date_trunc('month', ts) AS m, count(*), min(ts), max(ts) FROM ev GROUP BY 1 ORDER BY 1",
    "SELECT DISTINCT d FROM ev WHERE id < 500",
    "SELECT count(DISTINCT d), count(DISTINCT ts), count(DISTINCT iv), count(DISTINCT t) FROM ev",
    "SELECT min(d), max(d), min(ts), max(ts), min(tz), max(tz), min(iv), max(iv), min(t), max(t) FROM ev",
    "SELECT min(d), max(d) FROM ev WHERE id < 20000",
    // Joins on date keys.
    "SELECT count(*), count(days.label) FROM ev JOIN days ON ev.d = days.d",
    "SELECT days.d, count(ev.id) FROM days LEFT JOIN ev ON ev.d = days.d GROUP BY days.d ORDER BY days.d",
    "SELECT count(*) FROM ev e1 JOIN ev e2 ON e1.ts = e2.ts WHERE e1.id < 3000",
    "SELECT count(*) FROM days WHERE d IN (SELECT d FROM ev WHERE id % 2 = 0)",
    // Index scans.
    "SELECT id, d FROM evi WHERE d = '2024-01-15' ORDER BY id",
    "SELECT count(*) FROM evi WHERE d BETWEEN '2024-01-01' AND '2024-01-31'",
    "SELECT id, d FROM evi WHERE d < '2023-11-25' ORDER BY d, id",
    "SELECT id, ts FROM evi WHERE ts > '2024-03-15' ORDER BY ts DESC, id LIMIT 15",
    "SELECT id FROM evi WHERE ts >= DATE '2024-03-16' ORDER BY id",
    "SELECT count(*) FROM evi WHERE d IS NULL",
    // Arithmetic.
    "SELECT d + 1, d - 1, d - DATE '2024-01-01', d + INTERVAL '1 mon', d - INTERVAL '36 hours' FROM ev WHERE id IN (1, 7, 20003) ORDER BY id",
    "SELECT ts + iv, ts - iv, tz + iv, ts - TIMESTAMP '2024-01-01', tz - TIMESTAMPTZ '2023-01-01 00:00+00' FROM ev WHERE id IN (1, 2, 3, 500, 20003) ORDER BY id",
    "SELECT iv + INTERVAL '1 day', iv - INTERVAL '1 mon 1 day', iv * 2, iv * 1.5, iv / 3, -iv, 2 * iv FROM ev WHERE id IN (1, 2, 3, 33, 20003) ORDER BY id",
    "SELECT DATE '2024-01-31' + INTERVAL '1 month', TIMESTAMP '2024-02-29 10:00' + INTERVAL '1 year', DATE '2024-03-05' + TIME '10:11', TIME '10:00' + INTERVAL '15 hours', TIME '10:00' - TIME '12:30'",
    "SELECT INTERVAL '1 mon' * 0.5, INTERVAL '1 day' / 7, INTERVAL '1 year' * 1.01, INTERVAL '-1 day 3 hours' * -2.5",
    // Functions.
    "SELECT id, extract(year FROM d), extract(month FROM d), extract(day FROM d), extract(dow FROM d), extract(doy FROM d), extract(quarter FROM d), extract(week FROM d), extract(isodow FROM d), extract(epoch FROM d) FROM ev WHERE id < 40 ORDER BY id",
    "SELECT id, extract(hour FROM ts), extract(minute FROM ts), extract(second FROM ts), extract(epoch FROM ts), extract(milliseconds FROM ts), extract(microseconds FROM ts), extract(century FROM ts), extract(decade FROM ts), extract(isoyear FROM ts) FROM ev WHERE id < 40 ORDER BY id",
    "SELECT id, date_part('year', ts), date_part('second', ts), date_part('epoch', ts), date_part('dow', tz), date_part('epoch', iv), date_part('day', iv), date_part('hour', iv) FROM ev WHERE id < 40 ORDER BY id",
    "SELECT id, extract(epoch FROM iv), extract(month FROM iv), extract(year FROM iv), extract(second FROM iv), extract(hour FROM t), extract(epoch FROM t) FROM ev WHERE id < 40 ORDER BY id",
    "SELECT date_trunc('year', ts), date_trunc('quarter', ts), date_trunc('week', ts), date_trunc('day', ts), date_trunc('hour', ts), date_trunc('minute', ts), date_trunc('second', ts), date_trunc('decade', ts), date_trunc('century', ts) FROM ev WHERE id IN (1, 17, 400, 20001, 20003) ORDER BY id",
    "SELECT date_trunc('month', tz), date_trunc('hour', iv), date_trunc('year', iv), date_trunc('day', d) FROM ev WHERE id IN (1, 17, 400, 20003) ORDER BY id",
    "SELECT age(TIMESTAMP '2024-03-05', TIMESTAMP '2020-12-31 10:00'), age(TIMESTAMP '2020-12-31', TIMESTAMP '2024-03-05 10:00'), age(TIMESTAMP '2024-03-31', TIMESTAMP '2024-02-29')",
    "SELECT make_date(2024, 2, 29), make_timestamp(2024, 3, 5, 10, 11, 12.5), isfinite(DATE 'infinity'), isfinite(TIMESTAMP '2024-01-01'), isfinite(INTERVAL '1 day')",
    "SELECT to_char(ts, 'YYYY-MM-DD HH24:MI:SS'), to_char(ts, 'DD Mon YYYY HH12:MI AM'), to_char(ts, 'FMMonth FMDD, YYYY Dy'), to_char(tz, 'YYYY-MM-DD\"T\"HH24:MI:SS.MS') FROM ev WHERE id IN (1, 2, 3, 1000) ORDER BY id",
    "SELECT TIMESTAMP '2024-03-05 10:11:12.999999' + INTERVAL '1 microsecond', TIMESTAMP '2024-03-05 10:00' - DATE '2024-03-04', DATE '2024-03-05' - TIMESTAMP '2024-03-04 12:00'",
    "SELECT INTERVAL '1 day 25 hours', INTERVAL '-1 year -2 mons +3 days -04:05:06.789', '1 year 2 mons 3 days 04:05:06.789'::interval * 0.3",
    "SELECT extract(epoch FROM INTERVAL '1 year 1 mon 1 day 1 hour'), date_part('epoch', INTERVAL '1 year 1 mon'), age(TIMESTAMP '2024-01-31', TIMESTAMP '2023-02-28')",
    "SELECT '2024-3-5'::date, ' 2024-03-05 '::date, 'March 5 2024'::date, '5 Mar 2024'::date, '2024-03-05 BC'::date, '1/2/03'::date",
    "SELECT '2024-03-05 10:11:12Z'::timestamptz, '2024-03-05 10:11:12.5+05:30'::timestamptz, '2024-03-05 10:11:12 UTC'::timestamptz, '2024-03-05 24:00:00'::timestamp, '2024-03-05 10:11:60'::timestamp",
    "SELECT 'allballs'::time, '10:11:12.1234567'::time, '2024-03-05 10:11:12'::time, '1 week 2 days'::interval, '1.25 hours'::interval, '-1.5 years'::interval",
    "SELECT now() = current_timestamp, current_date = now()::date, localtimestamp <= clock_timestamp()::timestamp, now() > '2024-01-01'",
    "SELECT pg_typeof(g), g FROM generate_series(DATE '2024-02-27', DATE '2024-03-02', '1 day') g",
    "SELECT pg_typeof(g), g FROM generate_series('2024-01-01', '2024-01-02', INTERVAL '5 hours') g",
    "SELECT g FROM generate_series(TIMESTAMP '2024-01-31', '2024-06-01', '1 month') g",
    "SELECT g FROM generate_series(TIMESTAMP '2024-01-03 12:00', '2024-01-01', '-7 hours 30 minutes') g",
    "SELECT generate_series(TIMESTAMPTZ '2024-03-05 10:00+02', '2024-03-05 12:00', '45 minutes')",
    "SELECT g FROM generate_series(TIMESTAMP '2024-01-01', NULL, '1 day') g",
    "SELECT count(*), min(g), max(g) FROM generate_series(TIMESTAMP '2024-01-01', '2024-12-31 23:59', '1 minute') g",
    "SELECT d::date, count(*) FROM generate_series(TIMESTAMP '2024-02-27', '2024-03-02', '6 hours') d GROUP BY 1 ORDER BY 1",
    "SELECT g::date, count(ev.id) FROM generate_series(TIMESTAMP '2023-11-20', '2023-12-20', '1 day') g LEFT JOIN ev ON ev.d = g::date GROUP BY 1 ORDER BY 1",
    "SELECT x.n, g FROM (VALUES (1), (3)) x(n), LATERAL generate_series(TIMESTAMP '2024-01-01' + x.n * INTERVAL '1 day', '2024-01-05', '1 day') g ORDER BY 1, 2",
    "SELECT ts AT TIME ZONE 'UTC', ts AT TIME ZONE '+02', ts AT TIME ZONE 'UTC-5:30', ts AT TIME ZONE INTERVAL '-03:00', tz AT TIME ZONE 'utc', tz AT TIME ZONE '-01', d AT TIME ZONE 'GMT' FROM ev WHERE id < 40 ORDER BY id",
    "SELECT id, date_bin('15 minutes', ts, TIMESTAMP '2000-01-01'), date_bin(INTERVAL '1 day 2 hours', tz, TIMESTAMPTZ '2024-01-01 00:07+00') FROM ev WHERE id % 97 = 1 ORDER BY id",
    "SELECT date_bin('10 minutes', TIMESTAMP '1999-12-31 23:55', TIMESTAMP '2000-01-01'), date_bin('1 hour', TIMESTAMP 'infinity', TIMESTAMP '2000-01-01')",
    "SELECT iv, justify_hours(iv), justify_days(iv), justify_interval(iv) FROM ev WHERE id % 89 = 3 ORDER BY id",
    "SELECT justify_days('35 days'), justify_interval('1 mon -1 hour'), justify_hours('-25 hours'), justify_interval('-1 mon 35 days 25:00')",
    "SELECT make_interval(1, 2, 3, 4, 5, 6, 7.5), make_interval(days => 3, hours => 2), make_interval(), make_interval(secs => 1.25), make_interval(1, days => 2), make_date(year => 2024, month => 2, day => 29)",
    "SELECT to_timestamp(0), to_timestamp(1.5), to_timestamp(-86400.25), to_timestamp('2024-01-05 10:11:12', 'YYYY-MM-DD HH24:MI:SS'), to_timestamp('2024-01-05 10:11 PM', 'YYYY-MM-DD HH:MI AM')",
    "SELECT to_date('05 Jan 2024', 'DD Mon YYYY'), to_date('20240229', 'YYYYMMDD'), to_date('March 3, 24', 'Month DD, YY'), to_date('2024 060', 'YYYY DDD'), to_timestamp('12.3', 'SS.MS'), to_timestamp('15:12:02.020.001230', 'HH24:MI:SS.MS.US')",
    "SELECT to_date(to_char(ts, 'YYYY-MM-DD'), 'YYYY-MM-DD') = ts::date, to_timestamp(to_char(ts, 'DD Mon YYYY HH24:MI:SS'), 'DD Mon YYYY HH24:MI:SS')::timestamp = date_trunc('second', ts) FROM ev WHERE id % 101 = 5 ORDER BY id",
    "SELECT pg_typeof(localtime), localtime = now()::time",
    "SELECT pg_typeof(id), pg_typeof(d), pg_typeof(ts), pg_typeof(tz), pg_typeof(iv), pg_typeof(t), pg_typeof('x'), pg_typeof(NULL), pg_typeof(id::bigint + 1) FROM ev LIMIT 1",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT 'x'::date",
    "SELECT '2024-13-01'::date",
    "SELECT '2024-02-30'::date",
    "SELECT '2024-03-05 25:00'::timestamp",
    "SELECT 'garbage'::timestamp",
    "SELECT 'garbage'::timestamptz",
    "SELECT '1 fortnight'::interval",
    "SELECT '10:61'::time",
    "SELECT DATE '5874898-01-01'",
    "SELECT DATE 'infinity' - DATE '2024-01-01'",
    "SELECT TIMESTAMP 'infinity' - TIMESTAMP '2024-01-01'",
    "SELECT DATE '2024-01-01' + 2147483647",
    "SELECT extract(hour FROM DATE '2024-01-01')",
    "SELECT extract(foo FROM TIMESTAMP '2024-01-01')",
    "SELECT date_trunc('foo', TIMESTAMP '2024-01-01')",
    "SELECT date_part('timezone', TIMESTAMP '2024-01-01')",
    "SELECT make_date(2024, 2, 30)",
    "SELECT DATE '2024-01-01' * 2",
    "SELECT TIMESTAMP '2024-01-01' + DATE '2024-01-01'",
    "SELECT INTERVAL '1 day' / 0",
    "SELECT '1 day 1 day'::interval",
    "SELECT '1 hour 01:00:00'::interval",
    "SELECT '294277-01-01'::timestamp",
    "SELECT ''::date",
    "SELECT '2024-03-05 10:11:12+16'::timestamptz",
    "SELECT TIMESTAMP '2024-01-01' AT TIME ZONE 'Mars/Base'",
    "SELECT TIMESTAMP '2024-01-01' AT TIME ZONE INTERVAL '1 day'",
    "SELECT date_bin('1 month', TIMESTAMP '2024-01-01', TIMESTAMP '2000-01-01')",
    "SELECT date_bin('0 minutes', TIMESTAMP '2024-01-01', TIMESTAMP '2000-01-01')",
    "SELECT date_bin('1 minute', TIMESTAMP '2024-01-01', TIMESTAMP '-infinity')",
    "SELECT make_interval(foo => 1)",
    "SELECT to_timestamp('NaN'::float8)",
    "SELECT to_date('2024-13-05', 'YYYY-MM-DD')",
    "SELECT to_date('2024x01', 'YYYY-MM')",
    "SELECT to_timestamp('13:00 AM', 'HH:MI AM')",
    "SELECT * FROM generate_series(TIMESTAMP '2024-01-01', '2024-01-02', '0 days')",
    "SELECT * FROM generate_series(TIMESTAMPTZ '2024-01-01', '2024-01-02', '1 mon -30 days')",
    "SELECT * FROM generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-01-02')",
    "SELECT * FROM generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-01-02', 1)",
    "SELECT * FROM generate_series(TIMESTAMP '2024-01-01', '2024-01-02'::text, '1 day')",
];

#[test]
fn datetime_matches_postgresql() {
    if !weft::postgres::PgCluster::available() {
        eprintln!("PostgreSQL 15 is not installed: skipping the oracle comparison");
        return;
    }
    // Both systems print timestamptz in UTC.
    let pg = weft::postgres::PgCluster::start_with(&[("TimeZone", "UTC"), ("DateStyle", "ISO")]).expect("PostgreSQL starts");
    let dir = tempfile::tempdir().unwrap();
    let db = weft_sql::Database::open(dir.path(), &[("max_worker_processes".into(), "4".into())]).unwrap();
    let mut session = db.session();
    for sql in SETUP {
        pg.query(sql).unwrap_or_else(|e| panic!("PostgreSQL setup {sql}: {e}"));
        session.execute(sql).unwrap_or_else(|e| panic!("weft setup {sql}: {e:?}"));
    }
    pg.query("ANALYZE").unwrap();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}

#[test]
fn stored_values_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let rows = |db: &std::sync::Arc<weft_sql::Database>| {
        let mut session = db.session();
        oracle::weft_lines(&mut session, "SELECT * FROM k ORDER BY d").unwrap()
    };
    let before = {
        let db = weft_sql::Database::open(dir.path(), &[]).unwrap();
        let mut session = db.session();
        for sql in [
            "CREATE TABLE k (d date, ts timestamp, tz timestamptz, iv interval, t time)",
            "INSERT INTO k VALUES ('2024-03-05', '2024-03-05 10:11:12.5', '2024-03-05 10:11:12+02', '1 year 2 mons -3 days 04:05:06', '13:14'), \
               ('infinity', '-infinity', 'infinity', '-1 days', '00:00'), (NULL, NULL, NULL, NULL, NULL)",
            "CREATE INDEX k_d ON k (d)",
        ] {
            session.execute(sql).unwrap();
        }
        rows(&db)
    };
    assert_eq!(
        before,
        [
            "2024-03-05|2024-03-05 10:11:12.5|2024-03-05 08:11:12+00|1 year 2 mons -3 days +04:05:06|13:14:00",
            "infinity|-infinity|infinity|-1 days|00:00:00",
            "||||",
        ]
    );
    let db = weft_sql::Database::open(dir.path(), &[]).unwrap();
    assert_eq!(rows(&db), before);
    let mut session = db.session();
    assert_eq!(oracle::weft_lines(&mut session, "SELECT d FROM k WHERE d = '2024-03-05'").unwrap(), ["2024-03-05"]);
}
