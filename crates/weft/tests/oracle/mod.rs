//! What the PostgreSQL oracle tests share: a small deterministic generator, weft's rows as
//! psql -At prints them, and the check that a statement failed alike in both systems.

#![allow(dead_code)]

use weft_sql::Session;

/// xorshift64: the same sequence of statements on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Rows as psql -At prints them: fields joined by `|`, NULL as nothing.
pub fn lines(result: &weft_sql::QueryResult) -> Vec<String> {
    result
        .rows
        .iter()
        .map(|row| row.iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join("|"))
        .collect()
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
