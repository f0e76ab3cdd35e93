//! `kill -9` inside an open transaction block: nothing the block wrote is visible after
//! restart — not its rows (some of whose pages reached the disk through eviction), not its
//! table — and the xids it used are never handed out again, so later commits cannot make
//! its rows visible. The block runs more statements than one xid reservation covers.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use weft_sql::{Database, Datum};

fn count(session: &mut weft_sql::Session, sql: &str) -> i64 {
    match session.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}")).rows[0][0] {
        Datum::Int8(n) => n,
        ref other => panic!("{sql} returned {other:?}"),
    }
}

fn relation_files(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("base/5")).map(|d| d.count()).unwrap_or(0)
}

/// Statements of the killed block (more than the 1024 xids a block reserves at a time).
const BLOCK_INSERTS: i64 = 1500;
/// Autocommit statements after the restart: enough to pass every xid the block used.
const LATER_INSERTS: i64 = 1600;

#[test]
fn killed_block_leaves_nothing_visible() {
    let dir = tempfile::tempdir().unwrap();
    // A small pool, so that the block's pages are evicted to disk before the kill.
    std::fs::write(dir.path().join("weft.conf"), "shared_buffers = 128kB\nfsync = off\n").unwrap();
    {
        let db = Database::open(dir.path(), &[]).unwrap();
        let mut s = db.session();
        s.execute("CREATE TABLE t (k int8 PRIMARY KEY, pad text)").unwrap();
        s.execute("INSERT INTO t SELECT i, repeat('c', 300) FROM generate_series(1, 1000) i").unwrap();
    }
    let files_before = relation_files(dir.path());

    let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("-D")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("weft starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut script = String::from("BEGIN;\n");
    for i in 0..BLOCK_INSERTS {
        script.push_str(&format!("INSERT INTO t VALUES ({}, repeat('b', 500));\n", 100_000 + i));
    }
    script.push_str("INSERT INTO t SELECT k + 200000, pad FROM t;\n");
    script.push_str("UPDATE t SET pad = 'updated' WHERE k <= 500;\n");
    script.push_str("DELETE FROM t WHERE k > 500 AND k <= 1000;\n");
    script.push_str("CREATE TABLE side AS SELECT i FROM generate_series(1, 10000) i;\n");
    script.push_str("SELECT 'block is open' AS marker;\n");
    stdin.write_all(script.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "weft exited early");
        if line.contains("block is open") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let db = Database::open(dir.path(), &[]).unwrap();
    // Start-up aborted the block's xids, reserved past the first 1024, as one range.
    let catalog = weft_access::catalog::Catalog::load(dir.path()).unwrap();
    let longest = catalog.aborted.ranges().map(|r| r.end - r.start).max().unwrap_or(0);
    assert!(longest > BLOCK_INSERTS as u64, "aborted at start-up: {:?}", catalog.aborted);
    let mut s = db.session();
    assert_eq!(count(&mut s, "SELECT count(*) FROM t"), 1000);
    assert_eq!(count(&mut s, "SELECT count(*) FROM t WHERE pad = 'updated'"), 0);
    assert_eq!(s.execute("SELECT * FROM side").unwrap_err().sqlstate.0, "42P01");
    assert_eq!(relation_files(dir.path()), files_before, "the block's table file is an orphan, removed at start-up");
    // Later commits use xids past the block's: its rows stay invisible.
    for i in 0..LATER_INSERTS {
        s.execute(&format!("INSERT INTO t VALUES ({}, 'later')", 300_000 + i)).unwrap();
    }
    assert_eq!(count(&mut s, "SELECT count(*) FROM t"), 1000 + LATER_INSERTS);
    assert_eq!(count(&mut s, "SELECT count(*) FROM t WHERE k >= 100000 AND k < 300000"), 0);
    s.execute("SET enable_seqscan = off").unwrap();
    assert_eq!(count(&mut s, "SELECT count(*) FROM t WHERE k BETWEEN 100000 AND 299999"), 0);
    s.execute("SELECT weft_index_check('t_pkey', heapallindexed => true)").unwrap();
    drop(s);
    drop(db);
    // And once more after another restart.
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    assert_eq!(count(&mut s, "SELECT count(*) FROM t"), 1000 + LATER_INSERTS);
}
