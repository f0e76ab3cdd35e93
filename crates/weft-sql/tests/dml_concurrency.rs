//! Readers running while DELETE and UPDATE commit see each statement whole or not at all:
//! every writing statement below keeps the table's row count and sum unchanged (a transfer
//! between two rows; a delete and re-insert of the same rows), so any reader that sees
//! another count or sum saw a half-applied statement. More readers than cores, through
//! sequential, index and index-only scans, with a small pool so pages are evicted and
//! reread, and failed statements (unique violations) in between.

use std::sync::atomic::{AtomicBool, Ordering};

use weft_sql::{Database, Datum};

const ROWS: i64 = 2000;

fn ints(session: &mut weft_sql::Session, sql: &str) -> Vec<i64> {
    let result = session.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    result.rows[0]
        .iter()
        .map(|d| match d {
            Datum::Int8(n) => *n,
            Datum::Int4(n) => *n as i64,
            Datum::Numeric(n) => n.to_string().parse().unwrap(),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn readers_see_whole_statements() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [("shared_buffers".to_string(), "1MB".to_string())];
    let db = Database::open(dir.path(), &settings).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE acct (id int4 PRIMARY KEY, bal int8 NOT NULL, pad text)").unwrap();
    s.execute(&format!("INSERT INTO acct SELECT i, 100, repeat('x', 200) FROM generate_series(1, {ROWS}) i")).unwrap();
    s.execute("CREATE INDEX acct_bal ON acct (bal)").unwrap();
    let total = 100 * ROWS;
    let done = AtomicBool::new(false);
    let checks = [
        "SELECT count(*), sum(bal) FROM acct",
        "SELECT count(*), sum(bal) FROM acct WHERE id BETWEEN 1 AND 100000",
        "SELECT count(*), sum(bal) FROM acct WHERE bal > -1000000",
    ];
    std::thread::scope(|scope| {
        for reader in 0..4 {
            let db = db.clone();
            let done = &done;
            scope.spawn(move || {
                let mut s = db.session();
                let mut reads = 0;
                while !done.load(Ordering::Relaxed) || reads < 20 {
                    let sql = checks[(reader + reads) % checks.len()];
                    assert_eq!(ints(&mut s, sql), vec![ROWS, total], "{sql}");
                    reads += 1;
                }
            });
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as i64 + 1
        };
        for round in 0..60 {
            let (a, b) = (next(ROWS as u64), next(ROWS as u64));
            let amount = next(50);
            let sql = match round % 4 {
                0 | 1 => format!(
                    "UPDATE acct SET bal = CASE WHEN id = {a} THEN bal - {amount} ELSE bal + {amount} END \
                     WHERE id IN ({a}, {b}) AND {a} <> {b}"
                ),
                2 => format!("UPDATE acct SET id = id + {ROWS} WHERE id BETWEEN {a} AND {a} + 30"),
                _ => format!("UPDATE acct SET id = id - {ROWS} WHERE id > {ROWS}"),
            };
            s.execute(&sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
            // Usually fails on a clash with a row it has not replaced yet; either way the
            // readers' count and sum hold and the keys stay unique.
            let _ = s.execute(&format!("UPDATE acct SET id = id + 1 WHERE id BETWEEN {a} AND {a} + 5"));
        }
        done.store(true, Ordering::Relaxed);
    });
    assert_eq!(ints(&mut s, "SELECT count(*), sum(bal) FROM acct"), vec![ROWS, total]);
    assert_eq!(ints(&mut s, "SELECT count(DISTINCT id) FROM acct"), vec![ROWS]);
    s.execute("SELECT weft_index_check('acct_pkey', heapallindexed => true)").unwrap();
    s.execute("SELECT weft_index_check('acct_bal', heapallindexed => true)").unwrap();
}
