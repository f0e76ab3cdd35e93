//! VACUUM: dead row versions (DELETE, UPDATE, failed and rolled-back INSERTs) are gone
//! after it and nothing else changes — the rows, their physical order, every index (by
//! the checker and by index scans); index-only scans come back; concurrent readers see
//! the table as it was or as it is, never a mix, and never lose the relation they read
//! to a VACUUM, TRUNCATE or REINDEX that commits meanwhile; the statement's errors.

use super::common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::Rng;
use weft_sql::{Database, Datum, Session, SqlState};
use weft_storage::ForkNumber;

fn open(dir: &Path) -> Arc<Database> {
    Database::open(dir, &[("shared_buffers".into(), "2MB".into())]).unwrap()
}

fn rows(session: &mut Session, sql: &str) -> Vec<Vec<Datum>> {
    session.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}")).rows
}

fn count(session: &mut Session, sql: &str) -> i64 {
    match rows(session, sql)[0][0] {
        Datum::Int8(n) => n,
        ref other => panic!("{other:?}"),
    }
}

fn check_indexes(session: &mut Session, db: &Database, table: &str) {
    let names: Vec<String> = db.catalog().indexes_of(table).map(|i| i.name.clone()).collect();
    for name in names {
        session
            .execute(&format!("SELECT weft_index_check('{name}', heapallindexed => true)"))
            .unwrap_or_else(|e| panic!("check of {name} failed: {e:?}"));
    }
}

fn blocks(db: &Database, table: &str) -> u32 {
    let catalog = db.catalog();
    db.buffer_pool().nblocks(catalog.table(table).unwrap().locator(), ForkNumber::Main).unwrap()
}

fn plan(session: &mut Session, sql: &str) -> String {
    rows(session, &format!("EXPLAIN (COSTS OFF) {sql}"))
        .iter()
        .map(|r| match &r[0] {
            Datum::Text(line) => line.clone(),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What every query below must answer alike before and after VACUUM.
const QUERIES: &[&str] = &[
    "SELECT * FROM t",
    "SELECT * FROM t ORDER BY id",
    "SELECT id, v FROM t WHERE v BETWEEN 100 AND 300 ORDER BY v, id",
    "SELECT count(*), sum(v), min(s), max(s) FROM t",
    "SELECT s, count(*) FROM t GROUP BY s ORDER BY s",
];

/// The first query whose answers differ, said briefly (the answers are long).
fn assert_same(before: &[Vec<Vec<Datum>>], after: &[Vec<Vec<Datum>>], what: &str) {
    for ((query, b), a) in QUERIES.iter().zip(before).zip(after) {
        if a != b {
            let at = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            panic!("{what}: {query}: {} rows before, {} after; first difference at row {at}: {:?} vs {:?}", b.len(), a.len(), b.get(at), a.get(at));
        }
    }
}

fn answers(session: &mut Session) -> Vec<Vec<Vec<Datum>>> {
    // Serial, so that `SELECT * FROM t` returns the rows in physical order.
    session.execute("SET max_parallel_workers_per_gather = 0").unwrap();
    let out = QUERIES.iter().map(|q| rows(session, q)).collect();
    session.execute("RESET max_parallel_workers_per_gather").unwrap();
    out
}

#[test]
fn vacuum_removes_dead_versions_and_changes_nothing_else() {
    for seed in 1..=4u64 {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let mut s = db.session();
        s.execute("CREATE TABLE t (id int PRIMARY KEY, v int, s text)").unwrap();
        s.execute("CREATE INDEX t_v ON t (v)").unwrap();
        s.execute("CREATE INDEX t_s_part ON t (s) WHERE v % 2 = 0").unwrap();
        s.execute("INSERT INTO t SELECT i, i % 500, md5((i % 97)::text) FROM generate_series(1, 3000) i").unwrap();
        let mut rng = Rng(seed * 0x9E37_79B9);
        let mut next_id = 3001;
        for _ in 0..40 {
            let lo = rng.below(3000) as i64;
            match rng.below(6) {
                0 => {
                    s.execute(&format!("DELETE FROM t WHERE id BETWEEN {lo} AND {}", lo + rng.below(200) as i64)).unwrap();
                }
                1 => {
                    s.execute(&format!("UPDATE t SET v = v + 1, s = s || 'u' WHERE id % 7 = {}", lo % 7)).unwrap();
                }
                2 => {
                    // Fails on the primary key after inserting some rows: they stay, dead.
                    let err = s
                        .execute(&format!("INSERT INTO t SELECT i, i, 'x' FROM generate_series({next_id}, {}) i UNION ALL SELECT {next_id}, 0, 'dup'", next_id + 50))
                        .unwrap_err();
                    assert_eq!(err.sqlstate, SqlState::UNIQUE_VIOLATION);
                }
                3 => {
                    s.execute("BEGIN").unwrap();
                    s.execute(&format!("INSERT INTO t SELECT i, i % 500, 'r' FROM generate_series({next_id}, {}) i", next_id + 80)).unwrap();
                    s.execute(&format!("DELETE FROM t WHERE id < {}", lo / 4)).unwrap();
                    s.execute("ROLLBACK").unwrap();
                }
                _ => {
                    s.execute(&format!("INSERT INTO t SELECT i, i % 500, md5(i::text) FROM generate_series({next_id}, {}) i", next_id + 60)).unwrap();
                    next_id += 61;
                }
            }
            if rng.below(8) == 0 {
                let before = answers(&mut s);
                s.execute("VACUUM t").unwrap();
                assert_same(&before, &answers(&mut s), &format!("seed {seed}: an intermediate VACUUM"));
            }
        }
        // A third of the rows goes: the table must shrink.
        s.execute("DELETE FROM t WHERE id % 3 = 0").unwrap();
        let before = answers(&mut s);
        let blocks_before = blocks(&db, "t");
        let result = s.execute("VACUUM (VERBOSE) t").unwrap();
        let live = before[3][0][0].clone();
        let Datum::Int8(live) = live else { panic!("{live:?}") };
        assert!(
            result.notices.iter().any(|n| n.contains(&format!("removable, {live} nonremovable"))),
            "seed {seed}: {:?}",
            result.notices
        );
        assert_same(&before, &answers(&mut s), &format!("seed {seed}: VACUUM"));
        check_indexes(&mut s, &db, "t");
        assert!(blocks(&db, "t") < blocks_before, "seed {seed}: {} -> {} blocks", blocks_before, blocks(&db, "t"));
        // Every tuple left is live: a second VACUUM finds nothing to remove and leaves
        // the relation as it is.
        let rel = db.catalog().table("t").unwrap().rel_number;
        let again = s.execute("VACUUM VERBOSE t").unwrap();
        assert!(again.notices.iter().any(|n| n.contains("found 0 removable")), "{:?}", again.notices);
        assert_eq!(db.catalog().table("t").unwrap().rel_number, rel);
        // The same answers through the indexes.
        s.execute("SET enable_seqscan = off").unwrap();
        assert!(
            rows(&mut s, "SELECT id, v FROM t WHERE v BETWEEN 100 AND 300 ORDER BY v, id") == before[2],
            "seed {seed}: index scan after VACUUM"
        );
        // Reopened, the vacuumed table is the one in force.
        drop(s);
        drop(db);
        let db = open(dir.path());
        let mut s = db.session();
        assert_same(&before, &answers(&mut s), &format!("seed {seed}: after reopening"));
        check_indexes(&mut s, &db, "t");
    }
}

#[test]
fn index_only_scans_come_back_after_vacuum() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (id int, v int)").unwrap();
    s.execute("INSERT INTO t SELECT i, i FROM generate_series(1, 20000) i").unwrap();
    s.execute("CREATE INDEX t_id ON t (id)").unwrap();
    s.execute("ANALYZE t").unwrap();
    let query = "SELECT id FROM t WHERE id BETWEEN 100 AND 120";
    assert!(plan(&mut s, query).contains("Index Only Scan"), "{}", plan(&mut s, query));
    s.execute("DELETE FROM t WHERE id % 2 = 0").unwrap();
    assert!(!plan(&mut s, query).contains("Index Only Scan"), "{}", plan(&mut s, query));
    s.execute("VACUUM ANALYZE t").unwrap();
    assert!(plan(&mut s, query).contains("Index Only Scan"), "{}", plan(&mut s, query));
    let ids: Vec<Vec<Datum>> = (101..=119).step_by(2).map(|i| vec![Datum::Int4(i)]).collect();
    assert_eq!(rows(&mut s, &format!("{query} ORDER BY id")), ids);
    assert_eq!(count(&mut s, "SELECT count(*) FROM t"), 10000);
}

#[test]
fn readers_see_the_table_before_or_after_never_a_mix() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (id int, v int)").unwrap();
    s.execute("CREATE INDEX t_v ON t (v)").unwrap();
    s.execute("INSERT INTO t SELECT i, 1 FROM generate_series(1, 4000) i").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // More readers than cores, each reading through the heap and through the index.
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let db = db.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut s = db.session();
                if r == 0 {
                    s.execute("SET enable_seqscan = off").unwrap();
                }
                let mut seen = 0;
                while !stop.load(Ordering::Relaxed) {
                    // Every round moves all rows to the next v and then vacuums: a
                    // statement sees one round's rows, 4000 of them, all with one v.
                    let got = rows(&mut s, "SELECT count(*), min(v), max(v) FROM t WHERE v >= 1");
                    assert_eq!(got[0][0], Datum::Int8(4000), "reader {r}");
                    assert_eq!(got[0][1], got[0][2], "reader {r}");
                    seen += 1;
                }
                seen
            })
        })
        .collect();
    // Each round replaces the table's or the index's relation in its own way; the old
    // one must stay readable for the statements that started before.
    for round in 1..=15 {
        let v = round + 1;
        match round % 3 {
            0 => {
                s.execute("BEGIN").unwrap();
                s.execute("TRUNCATE t").unwrap();
                s.execute(&format!("INSERT INTO t SELECT i, {v} FROM generate_series(1, 4000) i")).unwrap();
                s.execute("COMMIT").unwrap();
                s.execute("REINDEX TABLE t").unwrap();
            }
            1 => {
                s.execute(&format!("UPDATE t SET v = {v}")).unwrap();
                s.execute("VACUUM FULL t").unwrap();
            }
            _ => {
                s.execute(&format!("UPDATE t SET v = {v}")).unwrap();
                s.execute("VACUUM t").unwrap();
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.join().unwrap() > 0);
    }
    check_indexes(&mut s, &db, "t");
}

#[test]
fn vacuum_errors_and_forms() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (a int, b text)").unwrap();
    s.execute("CREATE INDEX t_a ON t (a)").unwrap();
    s.execute("INSERT INTO t SELECT i, i::text FROM generate_series(1, 100) i").unwrap();
    for ok in [
        "VACUUM",
        "vacuum;",
        "VACUUM t",
        "VACUUM FULL t",
        "VACUUM FULL FREEZE VERBOSE ANALYZE t",
        "VACUUM ANALYZE t (a, b)",
        "VACUUM (ANALYZE, VERBOSE) t (a)",
        "VACUUM (FULL false, FREEZE, DISABLE_PAGE_SKIPPING, SKIP_LOCKED, INDEX_CLEANUP auto, PROCESS_TOAST, TRUNCATE off, PARALLEL 2) t, public.t",
    ] {
        s.execute(ok).unwrap_or_else(|e| panic!("{ok}: {e:?}"));
    }
    let warned = s.execute("VACUUM t_a").unwrap();
    assert_eq!(warned.notices, vec!["WARNING:  skipping \"t_a\" --- cannot vacuum non-tables or special system tables".to_string()]);
    for (sql, state, message) in [
        ("VACUUM nosuch", SqlState::UNDEFINED_TABLE, "relation \"nosuch\" does not exist"),
        ("VACUUM ANALYZE t (nosuch)", SqlState::UNDEFINED_COLUMN, "column \"nosuch\" of relation \"t\" does not exist"),
        ("VACUUM t (a)", SqlState::FEATURE_NOT_SUPPORTED, "ANALYZE option must be specified when a column list is provided"),
        ("VACUUM (bogus) t", SqlState::SYNTAX_ERROR, "unrecognized VACUUM option \"bogus\""),
        ("VACUUM (FULL, PARALLEL 2) t", SqlState::FEATURE_NOT_SUPPORTED, "VACUUM FULL cannot be performed in parallel"),
    ] {
        let err = s.execute(sql).unwrap_err();
        assert_eq!((err.sqlstate, err.message.as_str()), (state, message), "{sql}");
    }
    s.execute("BEGIN").unwrap();
    s.execute("DELETE FROM t WHERE a < 50").unwrap();
    let err = s.execute("VACUUM t").unwrap_err();
    assert_eq!(err.sqlstate, SqlState::ACTIVE_SQL_TRANSACTION);
    assert_eq!(err.message, "VACUUM cannot run inside a transaction block");
    assert_eq!(s.execute("SELECT 1").unwrap_err().sqlstate, SqlState::IN_FAILED_SQL_TRANSACTION);
    s.execute("ROLLBACK").unwrap();
    assert_eq!(count(&mut s, "SELECT count(*) FROM t"), 100);
}
