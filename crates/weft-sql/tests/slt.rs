//! Runs every `tests/slt/*.slt` file, each in its own fresh database, three times: once
//! with default settings, once with settings that force the parallel paths on small data
//! (DuckDB's `verify_parallelism`), and once with the ART page table on a small pool, so
//! that its eviction, drop and truncate paths run under every statement.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use weft_sql::{Database, Datum, Error, Session};

struct Weft {
    session: Session,
    _db: Arc<Database>,
}

#[derive(Debug)]
struct SltError(Error);

impl std::fmt::Display for SltError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} [{}]", self.0.message, self.0.sqlstate.0)
    }
}

impl std::error::Error for SltError {}

fn render(d: &Datum) -> String {
    match d.to_pg_text() {
        None => "NULL".to_string(),
        Some(s) if s.is_empty() => "(empty)".to_string(),
        Some(s) => s,
    }
}

impl sqllogictest::DB for Weft {
    type Error = SltError;
    type ColumnType = sqllogictest::DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<sqllogictest::DBOutput<Self::ColumnType>, SltError> {
        let result = self.session.execute(sql).map_err(SltError)?;
        if result.returns_rows {
            Ok(sqllogictest::DBOutput::Rows {
                types: vec![sqllogictest::DefaultColumnType::Any; result.columns.len()],
                rows: result.rows.iter().map(|r| r.iter().map(render).collect()).collect(),
            })
        } else {
            let count = result.tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
            Ok(sqllogictest::DBOutput::StatementComplete(count))
        }
    }
}

fn slt_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/slt exists")
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    files
}

fn run_all(startup: &[(String, String)]) {
    let mut failures = Vec::new();
    for file in slt_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), startup).unwrap();
        let mut runner = sqllogictest::Runner::new(|| {
            let db = db.clone();
            async move { Ok(Weft { session: db.session(), _db: db }) }
        });
        runner.with_column_validator(sqllogictest::default_column_validator);
        if let Err(e) = runner.run_file(&file) {
            failures.push(format!("{}: {}", file.display(), e.display(false)));
        }
    }
    assert!(failures.is_empty(), "{} slt failures:\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn slt_default_settings() {
    run_all(&[]);
}

#[test]
fn slt_forced_parallelism() {
    run_all(&[
        ("shared_buffers".into(), "1MB".into()),
        ("max_worker_processes".into(), "8".into()),
        ("min_parallel_table_scan_size".into(), "0".into()),
        ("max_parallel_workers_per_gather".into(), "4".into()),
    ]);
}

/// The default mapping is the ART; the whole suite also runs on the hash mapping.
#[test]
fn slt_hash_buffer_mapping() {
    run_all(&[
        ("buffer_mapping".into(), "hash".into()),
        ("shared_buffers".into(), "1MB".into()),
        ("max_worker_processes".into(), "4".into()),
        ("min_parallel_table_scan_size".into(), "0".into()),
    ]);
}

/// `--set buffer_mapping=art` reaches the pool: SHOW reports it, the pool uses the ART,
/// and a DROP of several tables in one statement (one multi-relation drop) and a
/// TRUNCATE forget exactly their pages.
#[test]
fn buffer_mapping_art_reaches_the_pool() {
    for mapping in ["art", "hash"] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(
            dir.path(),
            &[("buffer_mapping".into(), mapping.into()), ("shared_buffers".into(), "2MB".into())],
        )
        .unwrap();
        let mut s = db.session();
        let show = s.execute("SHOW buffer_mapping").unwrap();
        assert_eq!(show.rows[0][0], Datum::Text(mapping.into()));
        assert_eq!(db.buffer_pool().mapping_name(), mapping);
        let err = s.execute("SET buffer_mapping = 'hash'").unwrap_err();
        assert_eq!(err.sqlstate.0, "55P02", "{}", err.message);
        for t in 0..5 {
            s.execute(&format!("CREATE TABLE t{t} AS SELECT a, md5(a::text) FROM generate_series(1, {}) AS a", 500 * (t + 1)))
                .unwrap();
        }
        s.execute("CREATE TABLE keep AS SELECT a FROM generate_series(1, 3000) AS a").unwrap();
        s.execute("SELECT count(*) FROM t0, t1 WHERE t0.a = t1.a").unwrap();
        s.execute("DROP TABLE t0, t1, t2").unwrap();
        s.execute("TRUNCATE t3").unwrap();
        let pool = db.buffer_pool();
        pool.check_invariants(true).unwrap();
        let rows = s.execute("SELECT count(*), sum(a) FROM keep").unwrap();
        assert_eq!(rows.rows[0][0].to_pg_text().unwrap(), "3000");
        assert_eq!(rows.rows[0][1].to_pg_text().unwrap(), "4501500");
        let rows = s.execute("SELECT count(*) FROM t3").unwrap();
        assert_eq!(rows.rows[0][0].to_pg_text().unwrap(), "0");
        let rows = s.execute("SELECT count(*) FROM t4").unwrap();
        assert_eq!(rows.rows[0][0].to_pg_text().unwrap(), "2500");
        assert!(s.execute("SELECT * FROM t1").is_err());
        s.execute("DROP TABLE t3, t4, keep").unwrap();
        pool.check_invariants(true).unwrap();
    }
}
