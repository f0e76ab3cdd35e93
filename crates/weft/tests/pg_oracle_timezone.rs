//! Session time zones compared with PostgreSQL 15: each query runs under several
//! `TimeZone` settings (named zones with daylight saving, half- and quarter-hour offsets,
//! Lord Howe's half-hour DST, a POSIX offset, a numeric one) in both systems, row by row,
//! across spring-forward and fall-back days; errors must match too.

use super::oracle;

const ZONES: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Asia/Kolkata",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "UTC+3",
    "-3.5",
];

const SETUP: &[&str] = &[
    "CREATE TABLE tzt (id int, tz timestamptz, ts timestamp, d date)",
    "INSERT INTO tzt VALUES \
       (1, '2024-03-10 06:59:59+00', '2024-03-10 02:30', '2024-03-10'), \
       (2, '2024-03-10 07:00:00+00', '2024-11-03 01:30', '2024-11-03'), \
       (3, '2024-11-03 05:30:00+00', '2024-03-31 02:30', '2024-03-31'), \
       (4, '2024-11-03 06:30:00+00', '2024-10-27 02:30', '2024-10-27'), \
       (5, '2024-04-06 15:15:00+00', '2024-04-07 01:45', '2024-04-07'), \
       (6, '2024-10-05 15:45:00+00', '2024-10-06 02:15', '2024-10-06'), \
       (7, '1999-12-31 23:59:59.5+00', '2000-01-01 00:00', '2000-01-01'), \
       (8, 'infinity', '-infinity', 'infinity'), \
       (9, NULL, NULL, NULL)",
    // Enough rows for parallel workers, who must print and convert in the same zone.
    "CREATE TABLE big AS SELECT i, timestamptz '2024-01-01 00:00+00' + i * interval '17 minutes' AS tz FROM generate_series(1, 200000) i",
];

const QUERIES: &[&str] = &[
    // Output in the session zone.
    "SELECT id, tz FROM tzt ORDER BY id",
    "SELECT '2024-07-01 12:00+00'::timestamptz, '2024-01-01 12:00+00'::timestamptz, 'epoch'::timestamptz",
    // Input: without a zone (session local, gaps and overlaps), with offsets, names and abbreviations.
    "SELECT '2024-03-10 02:30'::timestamptz, '2024-11-03 01:30'::timestamptz, '2024-03-31 02:30'::timestamptz, '2024-10-27 02:30'::timestamptz",
    "SELECT '2024-04-07 01:45'::timestamptz, '2024-10-06 02:15'::timestamptz, '2024-07-01'::timestamptz",
    "SELECT '2024-03-10 02:30 America/New_York'::timestamptz, '2024-11-03 01:30 America/New_York'::timestamptz, '2024-07-01 12:00 Europe/Berlin'::timestamptz",
    "SELECT '2024-07-01 12:00 EST'::timestamptz, '2024-07-01 12:00 PST'::timestamptz, '2024-07-01 12:00 CEST'::timestamptz, '2024-01-01 12:00 IST'::timestamptz",
    "SELECT '2024-07-01 12:00 asia/kathmandu'::timestamptz, '2024-07-01T12:00:00+05:45'::timestamptz, '2024-07-01 12:00 -03:30'::timestamptz",
    "SELECT '2024-07-01 12:00 Mars/Base'::timestamptz",
    // Casts.
    "SELECT id, tz::timestamp, tz::date, tz::time, tz::text FROM tzt ORDER BY id",
    "SELECT id, ts::timestamptz, d::timestamptz FROM tzt ORDER BY id",
    "SELECT CAST(TIMESTAMP '2024-03-10 02:30' AS timestamptz), CAST(DATE '2024-11-03' AS timestamptz)",
    // extract / date_part.
    "SELECT id, extract(hour FROM tz), extract(day FROM tz), extract(timezone FROM tz), extract(timezone_hour FROM tz), extract(timezone_minute FROM tz), extract(epoch FROM tz) FROM tzt ORDER BY id",
    "SELECT id, date_part('hour', tz), date_part('minute', tz), date_part('dow', tz), date_part('doy', tz) FROM tzt WHERE id < 8 ORDER BY id",
    // date_trunc, two and three arguments.
    "SELECT id, date_trunc('day', tz), date_trunc('hour', tz), date_trunc('month', tz), date_trunc('week', tz) FROM tzt ORDER BY id",
    "SELECT id, date_trunc('day', tz, 'Asia/Tokyo'), date_trunc('hour', tz, 'America/New_York'), date_trunc('year', tz, 'UTC') FROM tzt WHERE id < 8 ORDER BY id",
    // to_char with zone patterns.
    "SELECT id, to_char(tz, 'YYYY-MM-DD HH24:MI:SS TZ tz OF TZH:TZM') FROM tzt WHERE id < 8 ORDER BY id",
    // Arithmetic across changes of offset.
    "SELECT '2024-03-09 12:00 America/New_York'::timestamptz + interval '1 day', '2024-03-09 12:00 America/New_York'::timestamptz + interval '24 hours'",
    "SELECT '2024-11-02 12:00 America/New_York'::timestamptz + interval '1 day', '2024-10-10 12:00 America/New_York'::timestamptz + interval '1 mon'",
    "SELECT '2024-03-30 12:00 Europe/Berlin'::timestamptz + interval '1 day 1 hour', '2024-03-31 12:00 Europe/Berlin'::timestamptz - interval '1 day'",
    "SELECT id, tz + interval '1 day', tz - interval '1 mon', tz + interval '2 hours' FROM tzt ORDER BY id",
    "SELECT '2024-03-11 00:00+00'::timestamptz - '2024-03-10 00:00+00'::timestamptz",
    "SELECT g FROM generate_series('2024-03-08 12:00 America/New_York'::timestamptz, '2024-03-12 12:00 America/New_York'::timestamptz, interval '1 day') g",
    "SELECT g FROM generate_series('2024-10-25 00:00 Europe/Berlin'::timestamptz, '2024-10-29 00:00 Europe/Berlin'::timestamptz, '12 hours') g",
    "SELECT age('2024-03-11 00:00 America/New_York'::timestamptz, '2024-03-09 12:00 America/New_York'::timestamptz), age('2024-11-04 00:00+00'::timestamptz, '2024-10-01 00:00+00'::timestamptz)",
    // AT TIME ZONE / timezone(), both directions.
    "SELECT id, tz AT TIME ZONE 'America/New_York', tz AT TIME ZONE 'Asia/Kathmandu', tz AT TIME ZONE 'UTC', tz AT TIME ZONE 'EST', tz AT TIME ZONE INTERVAL '+05:30' FROM tzt ORDER BY id",
    "SELECT id, ts AT TIME ZONE 'America/New_York', ts AT TIME ZONE 'Europe/Berlin', timezone('Australia/Lord_Howe', ts), ts AT TIME ZONE 'UTC+3' FROM tzt ORDER BY id",
    "SELECT timezone('PST', TIMESTAMP '2024-07-01 12:00'), TIMESTAMP '2024-07-01 12:00' AT TIME ZONE 'cest', TIMESTAMPTZ '2024-07-01 12:00+00' AT TIME ZONE '+02'",
    "SELECT TIMESTAMPTZ '2024-07-01 12:00+00' AT TIME ZONE 'Mars/Base'",
    // Comparisons and grouping see instants, not local times.
    "SELECT count(*) FROM tzt WHERE tz >= '2024-03-10' AND tz < '2024-11-04'",
    "SELECT tz::date, count(*) FROM tzt GROUP BY 1 ORDER BY 1",
    "SELECT d, d = tz::date FROM tzt ORDER BY id",
    // now() and its local forms agree with each other in every zone.
    "SELECT localtimestamp = now()::timestamp, current_date = now()::date, 'today'::timestamptz = date_trunc('day', now()), localtime = now()::time",
    "SELECT to_timestamp('2024-03-10 12:00', 'YYYY-MM-DD HH24:MI'), make_timestamp(2024, 3, 10, 2, 30, 0)::timestamptz",
    "SELECT extract(epoch FROM TIMESTAMPTZ '2024-07-01 12:00+00'), date_part('epoch', '2024-07-01 12:00'::timestamptz)",
    // Parallel scans and aggregates.
    "SELECT count(DISTINCT tz::text), min(tz::timestamp), max(to_char(tz, 'YYYY-MM-DD HH24:MI TZ')), count(DISTINCT tz::date) FROM big",
    "SELECT tz::date, count(*) FROM big WHERE tz < '2024-01-08' GROUP BY 1 ORDER BY 1",
    "SELECT date_trunc('day', tz), count(*) FROM big WHERE tz BETWEEN '2024-03-29' AND '2024-04-02' GROUP BY 1 ORDER BY 1",
];

/// One query under one zone in both systems: the same rows, or the same error.
fn compare(pg: &weft::postgres::PgCluster, session: &mut weft_sql::Session, zone: &str, sql: &str) -> Option<String> {
    let set = format!("SET TimeZone = '{zone}'");
    session.execute(&set).unwrap_or_else(|e| panic!("weft {set}: {e:?}"));
    let weft = session.execute(sql);
    let postgres = pg.run(&[&set, sql]).map(|out| out.lines);
    match (weft, postgres) {
        (Ok(w), Ok(p)) => {
            let w = oracle::lines(&w);
            (w != p).then(|| format!("[{zone}] {sql}\n  weft:       {w:?}\n  PostgreSQL: {p:?}"))
        }
        (Err(w), Err(p)) => {
            (!p.message.contains(&format!("ERROR:  {}", w.message))).then(|| format!("[{zone}] {sql}\n  weft: {w:?}\n  PostgreSQL: {}", p.message))
        }
        (w, p) => Some(format!("[{zone}] {sql}\n  weft: {w:?}\n  PostgreSQL: {p:?}")),
    }
}

#[test]
fn time_zones_match_postgres() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = Vec::new();
    for zone in ZONES {
        for sql in QUERIES {
            mismatches.extend(compare(&pg, &mut session, zone, sql));
        }
    }
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n"));
}

/// `SET TIME ZONE` in its forms and `SHOW TimeZone`, and names PostgreSQL refuses.
#[test]
fn set_and_show_time_zone_match_postgres() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut session = db.session();
    let forms = [
        "SET TIME ZONE 'America/New_York'",
        "SET TIME ZONE 'europe/berlin'",
        "SET TimeZone = 'UTC'",
        "SET TimeZone = 'utc+3'",
        "SET TIME ZONE '-05:00'",
        "SET TIME ZONE 5",
        "SET TIME ZONE -3.5",
        "SET TIME ZONE INTERVAL '+02:00' HOUR TO MINUTE",
        "SET TimeZone = 'US/Eastern'",
        "SET TimeZone = 'EST5EDT'",
        "SET TimeZone = 'Asia/Kathmandu'",
        "SET TimeZone = 'Mars/Base'",
        "SET TimeZone = 'Z'",
        "SET TimeZone = 'foo'",
    ];
    let mut mismatches = Vec::new();
    for set in forms {
        let weft = session.execute(set).and_then(|_| session.execute("SHOW TimeZone")).map(|r| oracle::lines(&r));
        let postgres = pg.run(&[set, "SHOW TimeZone"]).map(|out| out.lines);
        match (weft, postgres) {
            (Ok(w), Ok(p)) if w == p => {}
            (Err(w), Err(p)) if p.message.contains(&format!("ERROR:  {}", w.message)) && w.sqlstate.0 == "22023" => {}
            (w, p) => mismatches.push(format!("{set}: weft {w:?}, PostgreSQL {p:?}")),
        }
        mismatches.extend(compare(&pg, &mut session, "America/New_York", "SELECT '2024-07-01 12:00+00'::timestamptz"));
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
