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
