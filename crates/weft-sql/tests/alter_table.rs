//! ALTER TABLE and ALTER INDEX beyond what the PostgreSQL oracle shows: ROLLBACK undoes
//! each action (rows, columns, names, indexes), a failed action changes nothing, the
//! results survive reopening the database, every index passes the checker after a
//! rewrite, a serial column's sequence keeps counting after its table is renamed, and
//! readers running while ALTERs commit see the table before or after, never broken.

#[allow(unused_imports)]
use super::common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use weft_sql::{Database, Datum, Session};

fn open(dir: &Path) -> Arc<Database> {
    Database::open(dir, &[("shared_buffers".into(), "2MB".into())]).unwrap()
}

fn rows(session: &mut Session, sql: &str) -> Vec<Vec<Datum>> {
    session.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}")).rows
}

fn text(session: &mut Session, sql: &str) -> Vec<String> {
    rows(session, sql).iter().map(|r| r.iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join("|")).collect()
}

fn check_indexes(session: &mut Session, db: &Database, table: &str) {
    let names: Vec<String> = db.catalog().indexes_of(table).map(|i| i.name.clone()).collect();
    for name in names {
        session
            .execute(&format!("SELECT weft_index_check('{name}', heapallindexed => true)"))
            .unwrap_or_else(|e| panic!("check of {name} failed: {e:?}"));
    }
}

fn setup(s: &mut Session) {
    for sql in [
        "CREATE TABLE t (id serial PRIMARY KEY, a int, b text, c int CHECK (c >= 0))",
        "CREATE INDEX t_lower ON t (lower(b)) WHERE a > 10",
        "CREATE INDEX t_ab ON t (a, b)",
        "INSERT INTO t (a, b, c) SELECT g % 50, 'B' || g, g FROM generate_series(1, 3000) g",
        "DELETE FROM t WHERE id % 7 = 0",
    ] {
        s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
}

/// What the table looks like, to compare before and after.
fn state(s: &mut Session) -> Vec<String> {
    let mut out = text(s, "SELECT * FROM t ORDER BY id");
    out.extend(text(s, "SELECT count(*) FROM t WHERE lower(b) = 'b123' AND a > 10"));
    let catalog = s.database().catalog();
    let mut names: Vec<String> = catalog.tables.keys().cloned().collect();
    names.extend(catalog.indexes.keys().cloned());
    names.extend(catalog.sequences.keys().cloned());
    for table in catalog.tables.values() {
        names.extend(table.columns.iter().map(|c| format!("{}.{}:{:?}:{}:{:?}", table.name, c.name, c.data_type, c.not_null, c.default)));
        names.extend(table.checks.iter().map(|c| format!("{}:{}", c.name, c.expr)));
    }
    out.extend(names);
    out
}

const ACTIONS: &[&str] = &[
    "ALTER TABLE t RENAME TO u",
    "ALTER TABLE t RENAME COLUMN b TO bb",
    "ALTER TABLE t RENAME CONSTRAINT t_pkey TO t_key",
    "ALTER INDEX t_lower RENAME TO t_lower2",
    "ALTER TABLE t ADD COLUMN d int DEFAULT 5 NOT NULL",
    "ALTER TABLE t ADD COLUMN e serial UNIQUE",
    "ALTER TABLE t DROP COLUMN b",
    "ALTER TABLE t DROP COLUMN a, ADD COLUMN z text DEFAULT 'z'",
    "ALTER TABLE t ALTER COLUMN a TYPE bigint",
    "ALTER TABLE t ALTER COLUMN b TYPE varchar(10) USING upper(b)",
    "ALTER TABLE t ALTER COLUMN a SET NOT NULL, ALTER COLUMN c SET DEFAULT 3",
    "ALTER TABLE t ALTER COLUMN c DROP NOT NULL, ALTER COLUMN id DROP DEFAULT",
    "CREATE INDEX CONCURRENTLY t_c ON t (c)",
];

#[test]
fn rollback_undoes_each_action() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let before = state(&mut s);
    for action in ACTIONS {
        if action.contains("CONCURRENTLY") {
            continue;
        }
        s.execute("BEGIN").unwrap();
        s.execute(action).unwrap_or_else(|e| panic!("{action}: {e:?}"));
        // The block can go on writing after it.
        let target = if action.contains("RENAME TO u") { "u" } else { "t" };
        let values = if action.contains("a SET NOT NULL") { "(id, a, c) VALUES (-1, 1, 1)" } else { "(id, c) VALUES (-1, 1)" };
        s.execute(&format!("INSERT INTO {target} {values}")).unwrap_or_else(|e| panic!("after {action}: {e:?}"));
        s.execute("ROLLBACK").unwrap();
        assert_eq!(state(&mut s), before, "after ROLLBACK of {action}");
        check_indexes(&mut s, &db, "t");
    }
    // A failing action changes nothing either.
    for action in [
        "ALTER TABLE t ALTER COLUMN b TYPE int USING length(b) - 3, ALTER COLUMN c SET NOT NULL, ADD CHECK (b > 0)",
        "ALTER TABLE t ADD COLUMN d int NOT NULL",
        "ALTER TABLE t ALTER COLUMN c TYPE int USING c - 100",
        "ALTER TABLE t ADD COLUMN d int DEFAULT 1 UNIQUE",
    ] {
        assert!(s.execute(action).is_err(), "{action}");
        assert_eq!(state(&mut s), before, "after failed {action}");
    }
}

#[test]
fn actions_commit_survive_reopen_and_pass_the_checker() {
    let dir = tempfile::tempdir().unwrap();
    let expected;
    {
        let db = open(dir.path());
        let mut s = db.session();
        setup(&mut s);
        for action in ACTIONS {
            let action = action.replace("RENAME TO u", "RENAME TO t2");
            s.execute(&action).unwrap_or_else(|e| panic!("{action}: {e:?}"));
            let table = if db.catalog().tables.contains_key("t2") { "t2" } else { "t" };
            check_indexes(&mut s, &db, table);
            if table == "t2" {
                s.execute("ALTER TABLE t2 RENAME TO t").unwrap();
            }
            if action.contains("RENAME COLUMN b TO bb") {
                s.execute("ALTER TABLE t RENAME bb TO b").unwrap();
            }
            if action.contains("DROP COLUMN b") && !action.contains("DROP COLUMN a") {
                s.execute("ALTER TABLE t ADD COLUMN b text").unwrap();
                s.execute("UPDATE t SET b = 'B' || id").unwrap();
            }
            if action.contains("DROP COLUMN a") {
                s.execute("ALTER TABLE t ADD COLUMN a int").unwrap();
                s.execute("UPDATE t SET a = id % 50").unwrap();
            }
        }
        // The serial column keeps counting, under its new names too.
        s.execute("ALTER TABLE t ALTER COLUMN id SET DEFAULT nextval('t_id_seq')").unwrap();
        s.execute("ALTER TABLE t RENAME TO renamed").unwrap();
        s.execute("ALTER TABLE renamed RENAME id TO ident").unwrap();
        s.execute("INSERT INTO renamed (a, b, c) VALUES (1, 'new', 1)").unwrap();
        assert_eq!(text(&mut s, "SELECT ident FROM renamed WHERE b = 'new'"), vec!["3001"]);
        check_indexes(&mut s, &db, "renamed");
        expected = text(&mut s, "SELECT * FROM renamed ORDER BY ident");
        assert!(expected.len() > 2000);
    }
    let db = open(dir.path());
    let mut s = db.session();
    assert_eq!(text(&mut s, "SELECT * FROM renamed ORDER BY ident"), expected);
    check_indexes(&mut s, &db, "renamed");
    s.execute("INSERT INTO renamed (a, b) VALUES (1, 'newer')").unwrap();
    assert_eq!(text(&mut s, "SELECT ident, c, d FROM renamed WHERE b = 'newer'"), vec!["3002|3|5"]);
    assert_eq!(text(&mut s, "SELECT count(*) = count(DISTINCT e) FROM renamed"), vec!["t"]);
    // Dropping the table takes the sequences its serial columns own.
    s.execute("DROP TABLE renamed").unwrap();
    assert!(db.catalog().sequences.is_empty(), "{:?}", db.catalog().sequences.keys().collect::<Vec<_>>());
}

#[test]
fn readers_see_the_table_before_or_after_an_alter() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (id int, v int, pad text)").unwrap();
    s.execute("CREATE INDEX t_v ON t (v)").unwrap();
    s.execute("INSERT INTO t SELECT i, 1, 'x' FROM generate_series(1, 4000) i").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // More readers than cores, through the heap and through the index.
    let readers: Vec<_> = (0..4)
        .map(|r| {
            let db = db.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut s = db.session();
                if r % 2 == 0 {
                    s.execute("SET enable_seqscan = off").unwrap();
                }
                let mut seen = 0;
                while !stop.load(Ordering::Relaxed) {
                    let got = rows(&mut s, "SELECT count(*), min(v), max(v) FROM t WHERE v >= 1");
                    assert_eq!(got[0][0], Datum::Int8(4000), "reader {r}");
                    assert_eq!(got[0][1], got[0][2], "reader {r}");
                    seen += 1;
                }
                seen
            })
        })
        .collect();
    for round in 1..=12 {
        let v = round + 1;
        match round % 4 {
            0 => s.execute(&format!("ALTER TABLE t ALTER COLUMN v TYPE bigint USING v + 1, ADD COLUMN r{round} int DEFAULT {round}")).unwrap(),
            1 => s.execute(&format!("ALTER TABLE t DROP COLUMN pad, ALTER COLUMN v TYPE int USING {v}, ADD COLUMN pad text DEFAULT 'p'")).unwrap(),
            2 => {
                s.execute("BEGIN").unwrap();
                s.execute("ALTER TABLE t ALTER COLUMN v TYPE int USING v + 1").unwrap();
                s.execute("ALTER TABLE t ALTER COLUMN v SET NOT NULL").unwrap();
                s.execute("COMMIT").unwrap()
            }
            _ => {
                s.execute("BEGIN").unwrap();
                s.execute("ALTER TABLE t ALTER COLUMN v TYPE int USING v * 100").unwrap();
                s.execute("ROLLBACK").unwrap()
            }
        };
        check_indexes(&mut s, &db, "t");
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.join().expect("reader panicked") > 0);
    }
    assert_eq!(text(&mut s, "SELECT count(*), count(DISTINCT v) FROM t"), vec!["4000|1"]);
}
