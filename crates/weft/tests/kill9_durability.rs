//! Durability under `kill -9`: a statement that reported success survives the process
//! being killed right after; a statement interrupted by the kill leaves no half-visible
//! table and no orphan file once the database is opened again.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use weft_sql::{Database, Datum};

fn weft_shell(dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("-D")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weft starts")
}

fn count(dir: &Path, sql: &str) -> i64 {
    let db = Database::open(dir, &[]).expect("reopen");
    let mut session = db.session();
    match session.execute(sql).expect("query runs").rows[0][0] {
        Datum::Int8(n) => n,
        ref other => panic!("count returned {other:?}"),
    }
}

/// Relation files on disk that the catalog does not name.
fn orphan_files(dir: &Path) -> Vec<String> {
    let catalog = weft_access::catalog::Catalog::load(dir).expect("catalog loads");
    let live: BTreeSet<String> = catalog.live_rel_numbers().iter().map(|n| n.to_string()).collect();
    let mut orphans = Vec::new();
    for db_dir in std::fs::read_dir(dir.join("base")).expect("base exists") {
        for file in std::fs::read_dir(db_dir.unwrap().path()).unwrap() {
            let name = file.unwrap().file_name().to_string_lossy().to_string();
            if !live.contains(name.split('_').next().unwrap()) {
                orphans.push(name);
            }
        }
    }
    orphans
}

#[test]
fn reported_success_survives_kill9() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = weft_shell(dir.path());
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "CREATE TABLE t (a int, b text);").unwrap();
    writeln!(stdin, "INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 5000) i;").unwrap();
    stdin.flush().unwrap();
    // Wait for the INSERT's command tag, then kill at once.
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "weft exited early");
        if line.starts_with("INSERT 0 5000") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(count(dir.path(), "SELECT count(*) FROM t"), 5000);
    assert!(orphan_files(dir.path()).is_empty());
}

#[test]
fn interrupted_statements_leave_nothing_visible() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), &[]).unwrap();
        let mut s = db.session();
        s.execute("CREATE TABLE base AS SELECT i FROM generate_series(1, 1000) i").unwrap();
    }
    // Kill a long CREATE TABLE AS and a long INSERT ... SELECT at several points.
    for (round, delay_ms) in [50u64, 150, 400].into_iter().enumerate() {
        for sql in [
            format!("CREATE TABLE big{round} AS SELECT i, md5(i::text) m FROM generate_series(1, 3000000) i;"),
            "INSERT INTO base SELECT i FROM generate_series(1, 3000000) i;".to_string(),
        ] {
            let mut child = weft_shell(dir.path());
            let mut stdin = child.stdin.take().unwrap();
            writeln!(stdin, "{sql}").unwrap();
            stdin.flush().unwrap();
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(delay_ms) {
                std::thread::sleep(Duration::from_millis(5));
            }
            child.kill().ok();
            child.wait().unwrap();
            drop(stdin);
            let db = Database::open(dir.path(), &[]).unwrap();
            let mut s = db.session();
            let base = match s.execute("SELECT count(*) FROM base").unwrap().rows[0][0] {
                Datum::Int8(n) => n,
                _ => unreachable!(),
            };
            // Either the whole INSERT is visible (it finished before the kill) or none of it.
            assert_eq!((base - 1000) % 3_000_000, 0, "base has {base} rows: a partial INSERT is visible");
            match s.execute(&format!("SELECT count(*) FROM big{round}")) {
                Ok(r) => assert_eq!(r.rows[0][0], Datum::Int8(3_000_000)),
                Err(e) => assert_eq!(e.sqlstate.0, "42P01"),
            }
            drop(s);
            drop(db);
            assert!(orphan_files(dir.path()).is_empty(), "orphans: {:?}", orphan_files(dir.path()));
        }
    }
}

/// UPDATE and DELETE killed at several points are all or nothing after restart (the rows
/// they stamped keep their xmax of an aborted xid, the new versions are invisible), the
/// primary key still matches the heap, and one that reported success survives the kill.
#[test]
fn interrupted_update_and_delete_are_all_or_nothing() {
    const ROWS: i64 = 400_000;
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), &[]).unwrap();
        let mut s = db.session();
        s.execute("CREATE TABLE u (a int PRIMARY KEY, b int8)").unwrap();
        s.execute(&format!("INSERT INTO u SELECT i, 0 FROM generate_series(1, {ROWS}) i")).unwrap();
    }
    let sum_and_count = |dir: &Path| {
        let db = Database::open(dir, &[]).unwrap();
        let mut s = db.session();
        s.execute("SELECT weft_index_check('u_pkey', heapallindexed => true)").unwrap();
        let row = s.execute("SELECT sum(b), count(*) FROM u").unwrap().rows[0].clone();
        let count = match row[1] {
            Datum::Int8(n) => n,
            _ => unreachable!(),
        };
        (row[0].to_pg_text().unwrap_or_default().parse::<i64>().unwrap_or(0), count)
    };
    for delay_ms in [30u64, 120, 300] {
        for sql in ["UPDATE u SET b = b + 1;", "DELETE FROM u WHERE a % 2 = 0;"] {
            let (sum_before, count_before) = sum_and_count(dir.path());
            let mut child = weft_shell(dir.path());
            let mut stdin = child.stdin.take().unwrap();
            writeln!(stdin, "{sql}").unwrap();
            stdin.flush().unwrap();
            std::thread::sleep(Duration::from_millis(delay_ms));
            child.kill().ok();
            child.wait().unwrap();
            drop(stdin);
            let (sum, count) = sum_and_count(dir.path());
            if sql.starts_with("UPDATE") {
                assert_eq!(count, count_before);
                assert!(sum == sum_before || sum == sum_before + count_before, "{sql} after {delay_ms} ms: sum {sum_before} -> {sum}");
            } else {
                assert!(count == count_before || count == count_before / 2, "{sql} after {delay_ms} ms: {count_before} -> {count} rows");
            }
            assert!(orphan_files(dir.path()).is_empty());
        }
    }
    // A DELETE that reported success survives a kill right after it.
    let (_, count_before) = sum_and_count(dir.path());
    let mut child = weft_shell(dir.path());
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "DELETE FROM u WHERE a <= 1000;").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    let deleted = loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "weft exited early");
        if let Some(n) = line.trim().strip_prefix("DELETE ") {
            break n.parse::<i64>().unwrap();
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(deleted > 0);
    assert_eq!(sum_and_count(dir.path()).1, count_before - deleted);
}

/// Temporary tables and views of a killed process: forgotten when the database is next
/// opened, their files with them.
#[test]
fn temporary_relations_of_a_killed_process_are_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = weft_shell(dir.path());
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "CREATE TABLE kept (a int);").unwrap();
    writeln!(stdin, "CREATE TEMP TABLE lost (a serial PRIMARY KEY, b int REFERENCES lost (a));").unwrap();
    writeln!(stdin, "INSERT INTO lost (b) SELECT NULL FROM generate_series(1, 3000);").unwrap();
    writeln!(stdin, "CREATE TEMP VIEW lost_view AS SELECT * FROM kept;").unwrap();
    writeln!(stdin, "CREATE VIEW kept_view AS SELECT * FROM kept;").unwrap();
    stdin.flush().unwrap();
    // Both views created: everything before them is in the catalog.
    let mut line = String::new();
    let mut views = 0;
    while views < 2 {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "weft exited early");
        views += usize::from(line.starts_with("CREATE VIEW"));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let session = db.session();
    let names: Vec<String> = session.list_relations().into_iter().map(|r| r.name).collect();
    assert_eq!(names, ["kept", "kept_view"]);
    drop(session);
    drop(db);
    assert!(orphan_files(dir.path()).is_empty(), "{:?}", orphan_files(dir.path()));
}
