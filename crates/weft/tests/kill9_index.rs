//! `kill -9` during CREATE INDEX: the table stays intact, and after a restart no half
//! index is visible and no orphan file remains. An index whose CREATE reported success
//! survives the kill and passes the checker.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use weft_sql::{Database, Datum};

fn weft_shell(dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("-D")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("weft starts")
}

/// Relation files on disk that neither a table nor an index of the catalog names.
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
fn killing_create_index_leaves_no_half_index() {
    let dir = tempfile::tempdir().unwrap();
    const ROWS: i64 = 2_000_000;
    {
        let db = Database::open(dir.path(), &[]).unwrap();
        let mut s = db.session();
        s.execute(&format!("CREATE TABLE t AS SELECT hashint4(i) a, md5(i::text) b FROM generate_series(1, {ROWS}) i"))
            .unwrap();
    }
    let mut finished = 0;
    for (round, delay_ms) in [30u64, 120, 300, 700, 5000].into_iter().enumerate() {
        let mut child = weft_shell(dir.path());
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "SET maintenance_work_mem = '16MB';").unwrap();
        writeln!(stdin, "CREATE INDEX i{round} ON t (b) WITH (parallel_workers = 1);").unwrap();
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
        assert_eq!(s.execute("SELECT count(*) FROM t").unwrap().rows[0][0], Datum::Int8(ROWS));
        let name = format!("i{round}");
        if db.catalog().indexes.contains_key(&name) {
            finished += 1;
            s.execute(&format!("SELECT weft_index_check('{name}', heapallindexed => true)")).unwrap();
        }
        assert!(std::fs::read_dir(dir.path().join("tmp")).unwrap().next().is_none(), "temp files remain");
        drop(s);
        drop(db);
        assert!(orphan_files(dir.path()).is_empty(), "orphans: {:?}", orphan_files(dir.path()));
    }
    // The early kills interrupted a build (if every build finished in 30 ms, the test
    // proved nothing about interruption).
    assert!(finished < 5, "no build was interrupted");
}
