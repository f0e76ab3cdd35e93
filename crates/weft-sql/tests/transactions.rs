//! Transaction blocks against a model: random blocks of random INSERT / UPDATE / DELETE /
//! TRUNCATE / CREATE INDEX with savepoints, unique violations (which fail the block) and a
//! random end (COMMIT or ROLLBACK). After every statement the block sees the model's
//! in-block state and a second session sees the committed model only; after every block
//! the table, its index scans and index-only scans equal the committed model and every
//! index passes `weft_index_check(.., heapallindexed => true)`; after reopening, too.
//!
//! Also: two sessions (the write lock makes a second writer wait; `lock_timeout`), a
//! session dropped inside a block, and DDL rolled back with its files.

use std::collections::BTreeMap;
use std::sync::Arc;

use weft_sql::{Database, Datum, Session};

use super::common;

use common::Rng;

/// k → (v, s)
type Model = BTreeMap<i64, (i64, String)>;

fn text(d: &Datum) -> String {
    d.to_pg_text().unwrap_or_default()
}

fn rows(s: &mut Session, sql: &str) -> Vec<String> {
    let result = s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    result.rows.iter().map(|r| r.iter().map(text).collect::<Vec<_>>().join("|")).collect()
}

fn model_rows(model: &Model, filter: impl Fn(i64, i64) -> bool) -> Vec<String> {
    model.iter().filter(|(k, (v, _))| filter(**k, *v)).map(|(k, (v, s))| format!("{k}|{v}|{s}")).collect()
}

fn summary(model: &Model) -> String {
    let sum: i64 = model.values().map(|(v, _)| v).sum();
    if model.is_empty() {
        "0|".to_string()
    } else {
        format!("{}|{sum}", model.len())
    }
}

/// One random writing statement and what it does to the model (`Err(())`: it must fail
/// with a unique violation).
fn statement(rng: &mut Rng, model: &Model) -> (String, Result<Model, ()>) {
    let mut next = model.clone();
    let lo = rng.below(400) as i64;
    let hi = lo + rng.below(80) as i64;
    match rng.below(9) {
        0 | 1 => {
            let k = rng.below(450) as i64;
            let v = rng.below(1000) as i64;
            let sql = format!("INSERT INTO t VALUES ({k}, {v}, 's{k}')");
            if next.insert(k, (v, format!("s{k}"))).is_some() {
                return (sql, Err(()));
            }
            (sql, Ok(next))
        }
        2 => {
            // A shifted copy of a range: reads the table it writes (no loop, no re-reading).
            let shift = 500 + rng.below(3) as i64 * 500;
            let sql = format!("INSERT INTO t SELECT k + {shift}, v + 1, s FROM t WHERE k BETWEEN {lo} AND {hi}");
            for (k, (v, s)) in model.range(lo..=hi) {
                if next.insert(k + shift, (v + 1, s.clone())).is_some() {
                    return (sql, Err(()));
                }
            }
            (sql, Ok(next))
        }
        3 | 4 => {
            let add = rng.below(50) as i64 - 10;
            let sql = format!("UPDATE t SET v = v + {add} WHERE k BETWEEN {lo} AND {hi}");
            for (_, (v, _)) in next.range_mut(lo..=hi) {
                *v += add;
            }
            (sql, Ok(next))
        }
        5 => {
            // New keys are all at least 10000 and the moved ones below 500: only a key
            // already there clashes, whatever order the rows are met in.
            let lo = lo.min(499);
            let hi = hi.min(499);
            let sql = format!("UPDATE t SET k = k + 10000, s = s || 'm' WHERE k BETWEEN {lo} AND {hi}");
            let moved: Vec<(i64, (i64, String))> = model.range(lo..=hi).map(|(k, vs)| (*k, vs.clone())).collect();
            for (k, _) in &moved {
                next.remove(k);
            }
            for (k, (v, s)) in moved {
                if next.insert(k + 10000, (v, format!("{s}m"))).is_some() {
                    return (sql, Err(()));
                }
            }
            (sql, Ok(next))
        }
        6 | 7 => {
            let sql = format!("DELETE FROM t WHERE k BETWEEN {lo} AND {hi} OR v = {}", rng.below(1000));
            let v_gone = sql.rsplit("v = ").next().unwrap().parse::<i64>().unwrap();
            next.retain(|k, (v, _)| !((lo..=hi).contains(k) || *v == v_gone));
            (sql, Ok(next))
        }
        _ => {
            if rng.below(6) == 0 {
                next.clear();
                ("TRUNCATE t".to_string(), Ok(next))
            } else {
                let sql = format!("DELETE FROM t WHERE v % 7 = {}", rng.below(7));
                let r = sql.rsplit("= ").next().unwrap().parse::<i64>().unwrap();
                next.retain(|_, (v, _)| *v % 7 != r);
                (sql, Ok(next))
            }
        }
    }
}

fn check_table(s: &mut Session, model: &Model, indexes: &[&str], context: &str) {
    assert_eq!(rows(s, "SELECT k, v, s FROM t ORDER BY k"), model_rows(model, |_, _| true), "{context}");
    s.execute("SET enable_seqscan = off").unwrap();
    let (lo, hi) = (100, 600);
    assert_eq!(
        rows(s, &format!("SELECT k, v, s FROM t WHERE v BETWEEN {lo} AND {hi} ORDER BY k")),
        model_rows(model, |_, v| (lo..=hi).contains(&v)),
        "index scan on v, {context}"
    );
    let keys: Vec<String> = model.range(50..=700).map(|(k, _)| k.to_string()).collect();
    assert_eq!(rows(s, "SELECT k FROM t WHERE k BETWEEN 50 AND 700 ORDER BY k"), keys, "index-only scan on k, {context}");
    s.execute("RESET enable_seqscan").unwrap();
    for index in indexes {
        s.execute(&format!("SELECT weft_index_check('{index}', heapallindexed => true)"))
            .unwrap_or_else(|e| panic!("{index} after {context}: {e:?}"));
    }
}

#[test]
fn random_blocks_match_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [("shared_buffers".to_string(), "1MB".to_string())];
    let mut committed = Model::new();
    let live: Vec<String>;
    {
        let db = Database::open(dir.path(), &settings).unwrap();
        let mut s = db.session();
        let mut other = db.session();
        s.execute("CREATE TABLE t (k int8 PRIMARY KEY, v int8 NOT NULL, s text)").unwrap();
        s.execute("CREATE INDEX t_v ON t (v)").unwrap();
        s.execute("INSERT INTO t SELECT i, i % 997, 's' || i FROM generate_series(0, 399, 2) i").unwrap();
        for k in (0..400).step_by(2) {
            committed.insert(k, (k % 997, format!("s{k}")));
        }
        let mut indexes = vec!["t_pkey", "t_v"];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for block in 0..250 {
            s.execute("BEGIN").unwrap();
            let mut current = committed.clone();
            let mut failed = false;
            // (name, model at the savepoint, indexes at the savepoint)
            let mut savepoints: Vec<(String, Model, Vec<&str>)> = Vec::new();
            let mut block_indexes = indexes.clone();
            for step in 0..1 + rng.below(7) {
                let context = format!("block {block} step {step}");
                match rng.below(12) {
                    0 if !failed => {
                        let name = format!("sp{}", rng.below(3));
                        s.execute(&format!("SAVEPOINT {name}")).unwrap();
                        savepoints.push((name, current.clone(), block_indexes.clone()));
                    }
                    1 if !savepoints.is_empty() => {
                        let at = rng.below(savepoints.len() as u64) as usize;
                        let name = savepoints[at].0.clone();
                        // The innermost savepoint of that name is the one rolled back to.
                        let at = savepoints.iter().rposition(|(n, _, _)| *n == name).unwrap();
                        s.execute(&format!("ROLLBACK TO SAVEPOINT {name}")).unwrap();
                        savepoints.truncate(at + 1);
                        current = savepoints[at].1.clone();
                        block_indexes = savepoints[at].2.clone();
                        failed = false;
                    }
                    2 if !failed && !block_indexes.contains(&"t_vk") => {
                        s.execute("CREATE INDEX t_vk ON t (v, k)").unwrap();
                        block_indexes.push("t_vk");
                    }
                    3 if !failed && block_indexes.contains(&"t_vk") => {
                        s.execute("DROP INDEX t_vk").unwrap();
                        block_indexes.retain(|i| *i != "t_vk");
                    }
                    _ => {
                        let (sql, outcome) = statement(&mut rng, &current);
                        let result = s.execute(&sql);
                        match (failed, outcome, result) {
                            (true, _, Err(e)) => assert_eq!(e.sqlstate.0, "25P02", "{sql}: {context}"),
                            (false, Ok(next), Ok(_)) => current = next,
                            (false, Err(()), Err(e)) => {
                                assert_eq!(e.sqlstate.0, "23505", "{sql}: {context}: {e:?}");
                                failed = true;
                            }
                            (_, expected, got) => panic!("{sql}: {context}: expected {expected:?}, got {got:?}"),
                        }
                    }
                }
                if !failed {
                    assert_eq!(rows(&mut s, "SELECT count(*), sum(v) FROM t"), vec![summary(&current)], "in block, {context}");
                }
                assert_eq!(rows(&mut other, "SELECT count(*), sum(v) FROM t"), vec![summary(&committed)], "other session, {context}");
            }
            let commit = rng.below(3) != 0;
            let tag = s.execute(if commit { "COMMIT" } else { "ROLLBACK" }).unwrap().tag;
            if commit && !failed {
                assert_eq!(tag, "COMMIT");
                committed = current;
                indexes = block_indexes;
            } else {
                assert_eq!(tag, "ROLLBACK");
            }
            check_table(&mut s, &committed, &indexes, &format!("block {block} ({tag})"));
            check_table(&mut other, &committed, &indexes, &format!("other session after block {block}"));
        }
        live = db.catalog().live_rel_numbers().into_iter().map(|n| n.to_string()).collect();
    }
    // Closed: the unlinker has removed the files of committed drops.
    let files: Vec<String> =
        std::fs::read_dir(dir.path().join("base/5")).unwrap().map(|f| f.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(files.len(), live.len(), "rolled-back DDL left no file behind: {files:?}, live {live:?}");
    let db = Database::open(dir.path(), &settings).unwrap();
    let mut s = db.session();
    check_table(&mut s, &committed, &["t_pkey", "t_v"], "reopen");
}

/// Another session never sees a block's uncommitted rows or tables; its writers wait for
/// the block (the write lock), give up after `lock_timeout`, and go on once it commits.
#[test]
fn two_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut a = db.session();
    let mut b = db.session();
    a.execute("CREATE TABLE t (k int PRIMARY KEY)").unwrap();
    a.execute("INSERT INTO t VALUES (1)").unwrap();
    a.execute("BEGIN").unwrap();
    assert!(a.in_transaction_block());
    // Before its first write the block holds nothing: b writes freely.
    b.execute("INSERT INTO t VALUES (2)").unwrap();
    assert_eq!(rows(&mut a, "SELECT count(*) FROM t"), vec!["2"], "READ COMMITTED: a new snapshot per statement");
    a.execute("INSERT INTO t VALUES (3)").unwrap();
    a.execute("CREATE TABLE u AS SELECT 1 AS x").unwrap();
    assert_eq!(rows(&mut a, "SELECT count(*) FROM t"), vec!["3"]);
    assert_eq!(rows(&mut b, "SELECT count(*) FROM t"), vec!["2"]);
    assert_eq!(rows(&mut b, "SELECT k FROM t WHERE k = 3"), Vec::<String>::new());
    assert_eq!(b.execute("SELECT * FROM u").unwrap_err().sqlstate.0, "42P01");
    b.execute("SET lock_timeout = 100").unwrap();
    let err = b.execute("INSERT INTO t VALUES (4)").unwrap_err();
    assert_eq!((err.sqlstate.0, err.message.as_str()), ("55P03", "canceling statement due to lock timeout"));
    b.execute("RESET lock_timeout").unwrap();
    // A writer waits for the block, then runs against what it committed.
    let waiter = {
        let db = db.clone();
        std::thread::spawn(move || {
            let mut b = db.session();
            b.execute("INSERT INTO t SELECT k + 100 FROM t").map(|r| r.tag)
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!waiter.is_finished(), "the second writer waits for the block");
    a.execute("COMMIT").unwrap();
    assert_eq!(waiter.join().unwrap().unwrap(), "INSERT 0 3");
    assert_eq!(rows(&mut b, "SELECT count(*) FROM t"), vec!["6"]);
    assert_eq!(rows(&mut b, "SELECT x FROM u"), vec!["1"]);
    // A cancel reaches a writer waiting for the lock.
    a.execute("BEGIN").unwrap();
    a.execute("DELETE FROM t").unwrap();
    let cancel = b.cancel_handle();
    let canceler = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        cancel.cancel();
    });
    assert_eq!(b.execute("DELETE FROM t WHERE k = 1").unwrap_err().sqlstate.0, "57014");
    canceler.join().unwrap();
    a.execute("ROLLBACK").unwrap();
    assert_eq!(rows(&mut b, "SELECT count(*) FROM t"), vec!["6"]);
}

/// A session dropped inside a block (a closed connection) rolls it back and frees the
/// write lock; so does a failed block's COMMIT.
#[test]
fn dropped_session_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let db: Arc<Database> = Database::open(dir.path(), &[]).unwrap();
    let mut a = db.session();
    a.execute("CREATE TABLE t (k int)").unwrap();
    a.execute("BEGIN; INSERT INTO t VALUES (1); CREATE TABLE gone (x int)").unwrap();
    drop(a);
    let mut b = db.session();
    b.execute("SET lock_timeout = 1000").unwrap();
    b.execute("INSERT INTO t VALUES (2)").unwrap();
    assert_eq!(rows(&mut b, "SELECT k FROM t"), vec!["2"]);
    assert_eq!(b.execute("SELECT * FROM gone").unwrap_err().sqlstate.0, "42P01");
    let files = std::fs::read_dir(dir.path().join("base/5")).unwrap().count();
    assert_eq!(files, 1, "the dropped block's table file is removed");
    drop(b);
    drop(db);
}
