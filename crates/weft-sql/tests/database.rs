//! The embedding API end to end: reopen, locking, corruption, cancellation, errors that
//! leave the session usable.

use std::time::Duration;

use weft_sql::{Database, Datum, SqlState};

fn count(session: &mut weft_sql::Session, sql: &str) -> i64 {
    match session.execute(sql).unwrap().rows[0][0] {
        Datum::Int8(n) => n,
        ref other => panic!("{other:?}"),
    }
}

#[test]
fn reopening_restores_tables_and_settings_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("weft.conf"), "shared_buffers = '1MB'\nwork_mem = '256kB'\n").unwrap();
    {
        let db = Database::open(dir.path(), &[]).unwrap();
        let mut s = db.session();
        s.execute("CREATE TABLE a (x int NOT NULL, y text)").unwrap();
        s.execute("INSERT INTO a SELECT i, md5(i::text) FROM generate_series(1, 20000) i").unwrap();
        s.execute("CREATE TABLE b AS SELECT x * 2 AS z FROM a WHERE x <= 10").unwrap();
        s.execute("CREATE TABLE gone (q int)").unwrap();
        s.execute("DROP TABLE gone").unwrap();
        assert_eq!(s.execute("SHOW work_mem").unwrap().rows[0][0], Datum::Text("256kB".into()));
    }
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    assert_eq!(count(&mut s, "SELECT count(*) FROM a"), 20000);
    assert_eq!(count(&mut s, "SELECT sum(z) FROM b"), 110);
    assert_eq!(s.execute("SELECT * FROM gone").unwrap_err().sqlstate, SqlState::UNDEFINED_TABLE);
    let names: Vec<String> = s.list_relations().into_iter().map(|r| r.name).collect();
    assert_eq!(names, vec!["a".to_string(), "b".to_string()]);
    let described = s.describe("a").unwrap();
    assert_eq!(described.columns[0], ("x".to_string(), "integer".to_string(), false));
    assert_eq!(s.execute("SHOW shared_buffers").unwrap().rows[0][0], Datum::Text("1MB".into()));
}

#[test]
fn a_data_directory_is_opened_by_one_database_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let second = Database::open(dir.path(), &[]);
    let err = second.err().expect("second open must fail");
    assert_eq!(err.sqlstate.0, "55006");
    drop(db);
    Database::open(dir.path(), &[]).unwrap();
}

#[test]
fn a_corrupted_page_is_an_error_naming_file_and_block() {
    let dir = tempfile::tempdir().unwrap();
    let file = {
        let db = Database::open(dir.path(), &[]).unwrap();
        let mut s = db.session();
        s.execute("CREATE TABLE c AS SELECT i FROM generate_series(1, 5000) i").unwrap();
        let rel = db.catalog().table("c").unwrap().rel_number;
        dir.path().join("base").join("5").join(rel.to_string())
    };
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[8192 + 4000] ^= 0x40; // a byte in block 1
    std::fs::write(&file, &bytes).unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    let err = s.execute("SELECT count(*) FROM c").unwrap_err();
    assert_eq!(err.sqlstate, SqlState::DATA_CORRUPTED);
    assert!(err.message.contains("block 1"), "{}", err.message);
    assert!(err.message.contains(&file.display().to_string()), "{}", err.message);
    // The session goes on.
    assert_eq!(count(&mut s, "SELECT count(*) FROM generate_series(1, 3) i"), 3);
}

#[test]
fn cancel_stops_a_running_statement_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[("max_worker_processes".into(), "4".into())]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE keep (x int)").unwrap();
    let handle = s.cancel_handle();
    let canceller = std::thread::spawn(move || {
        for _ in 0..200 {
            std::thread::sleep(Duration::from_millis(10));
            handle.cancel();
        }
    });
    let err = s
        .execute("CREATE TABLE big AS SELECT i, md5(i::text) FROM generate_series(1, 200000000) i")
        .unwrap_err();
    canceller.join().unwrap();
    assert_eq!(err.sqlstate, SqlState::QUERY_CANCELED);
    assert_eq!(s.execute("SELECT * FROM big").unwrap_err().sqlstate, SqlState::UNDEFINED_TABLE);
    assert_eq!(count(&mut s, "SELECT count(*) FROM keep"), 0);
    // No file of the cancelled table remains.
    let files: Vec<_> = std::fs::read_dir(dir.path().join("base").join("5")).unwrap().collect();
    assert_eq!(files.len(), 1, "{files:?}");
}

#[test]
fn cancel_stops_a_keyless_anti_join() {
    // Each of the 18M rows of the first join probes all 6000 inner rows of the keyless
    // anti join (none matches): without a check in the probe itself the statement ignored
    // the cancel for minutes (serial and parallel).
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE t (a int)").unwrap();
    s.execute("INSERT INTO t SELECT i FROM generate_series(1, 6000) i").unwrap();
    s.execute("CREATE TABLE u (b int)").unwrap();
    s.execute("INSERT INTO u SELECT -i FROM generate_series(1, 6000) i").unwrap();
    for workers in ["0", "2"] {
        s.execute(&format!("SET max_parallel_workers_per_gather = {workers}")).unwrap();
        let handle = s.cancel_handle();
        let canceller = std::thread::spawn(move || {
            for _ in 0..50 {
                std::thread::sleep(Duration::from_millis(20));
                handle.cancel();
            }
        });
        let started = std::time::Instant::now();
        let err = s
            .execute("SELECT count(*) FROM t t1 JOIN t t2 ON t1.a <= t2.a WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.b > t2.a)")
            .unwrap_err();
        canceller.join().unwrap();
        assert_eq!(err.sqlstate, SqlState::QUERY_CANCELED);
        assert!(started.elapsed() < Duration::from_secs(20), "cancel took {:?}", started.elapsed());
    }
}

#[test]
fn cancel_stops_a_keyless_join_within_one_outer_row() {
    // Every outer row walks all 400k inner tuples of the join without keys (its filter
    // passes none): the cancel token was polled between outer rows only (64 of them, a
    // batch of 64 more waiting), seconds apart; it is polled along the walk now.
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE ka AS SELECT i AS x FROM generate_series(1, 400000) i").unwrap();
    s.execute("CREATE TABLE kb AS SELECT i AS y FROM generate_series(1, 400000) i").unwrap();
    for workers in ["0", "2"] {
        s.execute(&format!("SET max_parallel_workers_per_gather = {workers}")).unwrap();
        let handle = s.cancel_handle();
        let canceled_at = std::sync::Arc::new(std::sync::Mutex::new(None));
        let at = canceled_at.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            *at.lock().unwrap() = Some(std::time::Instant::now());
            handle.cancel();
        });
        let err = s.execute("SELECT count(*) FROM ka, kb WHERE ka.x + kb.y < 0").unwrap_err();
        let ended = std::time::Instant::now();
        canceller.join().unwrap();
        assert_eq!(err.sqlstate, SqlState::QUERY_CANCELED);
        let late = ended - canceled_at.lock().unwrap().expect("canceled");
        assert!(late < Duration::from_millis(1500), "the cancel took {late:?} (workers {workers})");
    }
}

#[test]
fn errors_leave_the_session_usable() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    for bad in ["SELEC 1", "SELECT * FROM nowhere", "SELECT 1/0", "INSERT INTO nowhere VALUES (1)", "SELECT 'x'::int", ""] {
        let _ = s.execute(bad);
    }
    let err = s.execute("SELEC 1").unwrap_err();
    assert_eq!(err.sqlstate, SqlState::SYNTAX_ERROR);
    assert_eq!(err.message, "syntax error at or near \"SELEC\"");
    assert_eq!(count(&mut s, "SELECT count(*) FROM generate_series(1, 10) i"), 10);
}

fn temp_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("tmp")).unwrap().map(|e| e.unwrap().path()).collect()
}

#[test]
fn a_cancelled_external_sort_removes_its_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[("max_worker_processes".into(), "4".into())]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE t AS SELECT hashint8(i) r, md5(i::text) p FROM generate_series(1, 300000) i").unwrap();
    s.execute("SET work_mem = '64kB'").unwrap();
    s.execute("SET max_parallel_workers_per_gather = 3").unwrap();
    s.execute("SET min_parallel_table_scan_size = 0").unwrap();
    let handle = s.cancel_handle();
    // Cancel repeatedly until the statement has surely started and been stopped.
    let canceller = std::thread::spawn(move || {
        for _ in 0..100 {
            std::thread::sleep(Duration::from_millis(5));
            handle.cancel();
        }
    });
    let outcome = s.execute("SELECT count(*) FROM (SELECT * FROM t ORDER BY p) s");
    canceller.join().unwrap();
    // The statement may have finished before the first cancel on a fast machine; either
    // way nothing may be left in tmp/.
    if let Err(err) = outcome {
        assert_eq!(err.sqlstate, SqlState::QUERY_CANCELED);
    }
    assert!(temp_files(dir.path()).is_empty(), "{:?}", temp_files(dir.path()));
    // The session goes on, and a completed external sort also cleans up.
    assert_eq!(count(&mut s, "SELECT count(*) FROM (SELECT * FROM t ORDER BY p DESC) s"), 300000);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn a_failing_sort_participant_stops_the_sort_and_removes_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[("max_worker_processes".into(), "4".into())]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE t AS SELECT i FROM generate_series(1, 400000) i").unwrap();
    s.execute("SET work_mem = '64kB'").unwrap();
    s.execute("SET max_parallel_workers_per_gather = 3").unwrap();
    s.execute("SET min_parallel_table_scan_size = 0").unwrap();
    // One row fails late in the scan, after runs have been written.
    let err = s.execute("SELECT i, 1 / (i - 399999) FROM t ORDER BY 2").unwrap_err();
    assert_eq!(err.sqlstate, SqlState::DIVISION_BY_ZERO);
    assert!(temp_files(dir.path()).is_empty(), "{:?}", temp_files(dir.path()));
    assert_eq!(count(&mut s, "SELECT count(*) FROM t"), 400000);
}

/// Files of dropped and truncated relations are removed after the statement, off its
/// path; all of them are gone once the database is closed, and none that is still named.
#[test]
fn dropped_files_are_removed_by_close() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base").join("5");
    let files = || -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(&base).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    };
    {
        let db = Database::open(dir.path(), &[]).unwrap();
        let mut s = db.session();
        s.execute("CREATE TABLE keep AS SELECT i FROM generate_series(1, 1000) i").unwrap();
        let kept = files();
        for i in 0..20 {
            s.execute(&format!("CREATE TABLE gone_{i} AS SELECT i, md5(i::text) FROM generate_series(1, 5000) i")).unwrap();
        }
        s.execute("TRUNCATE keep").unwrap();
        s.execute("INSERT INTO keep SELECT i FROM generate_series(1, 10) i").unwrap();
        let names: Vec<String> = (0..20).map(|i| format!("gone_{i}")).collect();
        s.execute(&format!("DROP TABLE {}", names.join(", "))).unwrap();
        assert_eq!(count(&mut s, "SELECT count(*) FROM keep"), 10);
        drop(s);
        drop(db);
        // keep's new file only: its old one (TRUNCATE) and the 20 dropped tables' are gone.
        let left = files();
        assert_eq!(left.len(), 1, "{left:?}");
        assert_ne!(left, kept);
    }
    let db = Database::open(dir.path(), &[]).unwrap();
    assert_eq!(count(&mut db.session(), "SELECT count(*) FROM keep"), 10);
}

/// Result columns are named as PostgreSQL names them: a function call after the function,
/// schema-qualified or not (`pg_catalog.upper(x)` is `upper`).
#[test]
fn function_columns_are_named_after_the_function() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE t (a int)").unwrap();
    let names = |s: &mut weft_sql::Session, sql: &str| -> Vec<String> {
        s.execute(sql).unwrap().columns.iter().map(|c| c.name.clone()).collect()
    };
    assert_eq!(names(&mut s, "SELECT pg_catalog.upper('a'), lower('B'), pg_catalog.generate_series(1, 2)"), ["upper", "lower", "generate_series"]);
    // psql's `\d` asks for a table's partition ancestors in a select list: none in weft.
    let result = s.execute("SELECT pg_catalog.pg_partition_ancestors('t')").unwrap();
    assert_eq!(result.columns[0].name, "pg_partition_ancestors");
    assert!(result.rows.is_empty());
    assert_eq!(count(&mut s, "SELECT count(*) FROM (SELECT pg_partition_ancestors('t') UNION ALL VALUES (1::bigint)) u"), 1);
}
