//! What the PostgreSQL oracle tests share: a small deterministic generator, weft's rows as
//! psql -At prints them, and the check that a statement failed alike in both systems.

#![allow(dead_code)]

use weft_sql::Session;

/// The same sequence of statements on every run.
#[allow(unused_imports)] // as `dead_code` above: not every test binary draws
pub use weft_common::XorShift64 as Rng;

/// Rows as psql -At prints them: fields joined by `|`, NULL as nothing.
/// timestamptz values print in the zone the statement ran in.
pub fn lines(result: &weft_sql::QueryResult) -> Vec<String> {
    weft_common::timezone::with_zone(&result.time_zone, || {
        result
            .rows
            .iter()
            .map(|row| row.iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join("|"))
            .collect()
    })
}

/// A statement's rows as [`lines`], or its error message.
pub fn weft_lines(session: &mut Session, sql: &str) -> Result<Vec<String>, String> {
    session.execute(sql).map(|result| lines(&result)).map_err(|e| e.message.clone())
}

/// Both failed with the same message and, where weft gives them and `with_details`, the
/// same detail and hint (`postgres` is psql's error output).
pub fn assert_same_error(sql: &str, weft: &weft_sql::Error, postgres: &str, with_details: bool) {
    assert!(postgres.contains(&format!("ERROR:  {}", weft.message)), "{sql}: weft {weft:?}, PostgreSQL {postgres}");
    if !with_details {
        return;
    }
    if let Some(detail) = &weft.detail {
        assert!(postgres.contains(&format!("DETAIL:  {detail}")), "{sql}: weft {weft:?}, PostgreSQL {postgres}");
    }
    if let Some(hint) = &weft.hint {
        assert!(postgres.contains(&format!("HINT:  {hint}")), "{sql}: weft {weft:?}, PostgreSQL {postgres}");
    }
}

/// A PostgreSQL 15 cluster and an empty weft database beside it, or `None` (after saying
/// so) when PostgreSQL is not installed.
pub fn start() -> Option<(weft::postgres::PgCluster, tempfile::TempDir, std::sync::Arc<weft_sql::Database>)> {
    if !weft::postgres::PgCluster::available() {
        eprintln!("PostgreSQL 15 is not installed: skipping");
        return None;
    }
    let pg = weft::postgres::PgCluster::start().expect("PostgreSQL starts");
    let dir = tempfile::tempdir().unwrap();
    let db = weft_sql::Database::open(dir.path(), &[]).unwrap();
    Some((pg, dir, db))
}

/// A PostgreSQL 15 cluster and a weft database (with four worker threads) beside it, both
/// after `setup`, or `None` (after saying so) when PostgreSQL is not installed.
pub fn start_with_setup(setup: &[&str]) -> Option<(weft::postgres::PgCluster, tempfile::TempDir, std::sync::Arc<weft_sql::Database>)> {
    if !weft::postgres::PgCluster::available() {
        eprintln!("PostgreSQL 15 is not installed: skipping the oracle comparison");
        return None;
    }
    let pg = weft::postgres::PgCluster::start().expect("PostgreSQL starts");
    let dir = tempfile::tempdir().unwrap();
    let db = weft_sql::Database::open(dir.path(), &[("max_worker_processes".into(), "4".into())]).unwrap();
    let mut session = db.session();
    for sql in setup {
        pg.query(sql).unwrap_or_else(|e| panic!("PostgreSQL setup {sql}: {e}"));
        session.execute(sql).unwrap_or_else(|e| panic!("weft setup {sql}: {e:?}"));
    }
    Some((pg, dir, db))
}

/// Run each statement in both systems: both succeed with the same rows, or both fail
/// alike (`with_details`: see [`assert_same_error`]).
pub fn compare_script(pg: &weft::postgres::PgCluster, session: &mut Session, script: &[&str], with_details: bool) {
    for sql in script {
        match (session.execute(sql), pg.query(sql)) {
            (Ok(weft), Ok(postgres)) => assert_eq!(lines(&weft), postgres, "{sql}"),
            (Err(weft), Err(postgres)) => assert_same_error(sql, &weft, &postgres.message, with_details),
            (weft, postgres) => panic!("{sql}: weft {weft:?}, PostgreSQL {postgres:?}"),
        }
    }
}

/// Rows equal field by field, where float fields may differ in the last digits: a parallel
/// sum adds in another order than PostgreSQL's serial one (both are correctly rounded
/// sums of the same numbers in different orders).
fn same_rows(expected: &[String], actual: &[String]) -> bool {
    expected.len() == actual.len()
        && expected.iter().zip(actual).all(|(e, a)| {
            let (ef, af): (Vec<&str>, Vec<&str>) = (e.split('|').collect(), a.split('|').collect());
            ef.len() == af.len() && ef.iter().zip(&af).all(|(x, y)| x == y || close_floats(x, y))
        })
}

fn close_floats(x: &str, y: &str) -> bool {
    let is_float = |s: &str| s.contains(['.', 'e']) && s.parse::<f64>().is_ok();
    if !is_float(x) || !is_float(y) {
        return false;
    }
    let (a, b): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

/// The SQLSTATE of PostgreSQL's error for `sql`.
fn pg_sqlstate(pg: &weft::postgres::PgCluster, sql: &str) -> Option<String> {
    pg.query(sql).err()?.sqlstate
}

/// Each query run in both systems: the rows that differ (in order when the query has an
/// ORDER BY, else as sorted sets), or weft's error, one entry per query that disagrees.
pub fn query_mismatches(pg: &weft::postgres::PgCluster, session: &mut Session, queries: &[&str]) -> Vec<String> {
    let mut mismatches = Vec::new();
    for sql in queries {
        let expected = pg.query(sql).unwrap_or_else(|e| panic!("PostgreSQL {sql}: {e}"));
        let actual = match weft_lines(session, sql) {
            Ok(lines) => lines,
            Err(e) => {
                mismatches.push(format!("{sql}\n  weft failed: {e}"));
                continue;
            }
        };
        let (mut e, mut a) = (expected, actual);
        if !has_top_level_order_by(sql) {
            e.sort();
            a.sort();
        }
        if !same_rows(&e, &a) {
            let diff: Vec<String> = e
                .iter()
                .zip(a.iter())
                .filter(|(x, y)| x != y)
                .take(3)
                .map(|(x, y)| format!("  pg:   {x}\n  weft: {y}"))
                .collect();
            mismatches.push(format!("{sql}\n  rows pg={} weft={}\n{}", e.len(), a.len(), diff.join("\n")));
        }
    }
    mismatches
}

/// The settings the SQL oracle tests run their queries under, in turn: serial, with
/// parallel workers forced, and with a `work_mem` small enough that sorts and hash
/// aggregates spill.
pub const MODES: [&[&str]; 3] = [
    &["SET max_parallel_workers_per_gather = 0"],
    &["SET max_parallel_workers_per_gather = 3", "SET min_parallel_table_scan_size = 0"],
    &["SET work_mem = '64kB'"],
];

/// [`query_mismatches`] under each of [`MODES`], each entry prefixed by its settings.
pub fn mismatches_in_modes(pg: &weft::postgres::PgCluster, session: &mut Session, queries: &[&str]) -> Vec<String> {
    let mut mismatches = Vec::new();
    for settings in MODES {
        for sql in settings {
            session.execute(sql).unwrap();
        }
        mismatches.extend(query_mismatches(pg, session, queries).into_iter().map(|m| format!("{settings:?}: {m}")));
    }
    mismatches
}

/// Statements both systems must refuse with the same message; those of `with_sqlstate`
/// with the same SQLSTATE too. One entry per statement that disagrees.
pub fn error_mismatches(pg: &weft::postgres::PgCluster, session: &mut Session, errors: &[&str], with_sqlstate: &[&str]) -> Vec<String> {
    let mut mismatches = Vec::new();
    for sql in with_sqlstate {
        let pg_state = pg_sqlstate(pg, sql).unwrap_or_else(|| panic!("PostgreSQL accepted {sql} or gave no SQLSTATE"));
        match session.execute(sql) {
            Ok(_) => mismatches.push(format!("{sql}\n  weft succeeded, PostgreSQL failed with {pg_state}")),
            Err(e) if e.sqlstate.0 != pg_state => {
                mismatches.push(format!("{sql}\n  pg:   {pg_state}\n  weft: {} {}", e.sqlstate.0, e.message))
            }
            Err(_) => {}
        }
    }
    for sql in errors.iter().chain(with_sqlstate) {
        let pg_error = match pg.query(sql) {
            Ok(rows) => panic!("PostgreSQL accepted {sql}: {rows:?}"),
            Err(e) => e.message,
        };
        match session.execute(sql) {
            Ok(_) => mismatches.push(format!("{sql}\n  weft succeeded, PostgreSQL said {pg_error}")),
            Err(e) => {
                if !pg_error.contains(&format!("ERROR:  {}", e.message)) {
                    mismatches.push(format!("{sql}\n  pg:   {pg_error}\n  weft: ERROR:  {}", e.message));
                }
            }
        }
    }
    mismatches
}

/// Does the statement order its rows (an ORDER BY outside parentheses, not one inside an
/// aggregate call or a subquery)?
fn has_top_level_order_by(sql: &str) -> bool {
    let mut depth = 0i32;
    for (i, c) in sql.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            'O' if depth == 0 && sql[i..].starts_with("ORDER BY") => return true,
            _ => {}
        }
    }
    false
}
