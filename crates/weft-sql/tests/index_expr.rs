//! Expression and partial indexes: the planner uses them (EXPLAIN shapes, as PostgreSQL
//! prints them), queries through them return what sequential scans return, and the
//! checker (with heapallindexed) passes after random inserts, updates, deletes and
//! upserts that move rows into and out of partial indexes, and after a reopen.

use std::path::Path;
use std::sync::Arc;

use weft_sql::{Database, Datum, Session};

use super::common;

use common::Rng;

fn open(dir: &Path) -> Arc<Database> {
    Database::open(dir, &[]).unwrap()
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Datum>> {
    s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}")).rows
}

fn plan(s: &mut Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN (COSTS OFF) {sql}"))
        .into_iter()
        .map(|r| match &r[0] {
            Datum::Text(t) => t.clone(),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn sorted(r: Vec<Vec<Datum>>) -> Vec<String> {
    let mut out: Vec<String> = r.into_iter().map(|row| format!("{row:?}")).collect();
    out.sort();
    out
}

fn check(s: &mut Session, index: &str) {
    s.execute(&format!("SELECT weft_index_check('{index}', heapallindexed => true)")).unwrap_or_else(|e| panic!("{index}: {e:?}"));
}

fn setup(s: &mut Session) {
    s.execute("CREATE TABLE p (id int, name text, a int, b int, v int)").unwrap();
    s.execute(
        "INSERT INTO p SELECT i, 'Name' || (i % 5000), i % 100, i % 7, CASE WHEN i % 50 = 0 THEN i END FROM generate_series(1, 20000) i",
    )
    .unwrap();
    s.execute("CREATE INDEX ON p (lower(name))").unwrap();
    s.execute("CREATE INDEX ON p ((a + b))").unwrap();
    s.execute("CREATE INDEX pv ON p (a) WHERE v IS NOT NULL").unwrap();
    s.execute("CREATE INDEX pr ON p (b) WHERE a > 90").unwrap();
}

#[test]
fn the_planner_uses_expression_and_partial_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    setup(&mut s);
    let lower = plan(&mut s, "SELECT id FROM p WHERE lower(name) = 'name42'");
    assert!(lower.contains("Index Scan using p_lower_idx on p"), "{lower}");
    assert!(lower.contains("Index Cond: (lower(name) = 'name42'::text)"), "{lower}");
    let sum = plan(&mut s, "SELECT id FROM p WHERE a + b = 15");
    assert!(sum.contains("using p_expr_idx on p") && sum.contains("Index Cond: ((a + b) = 15)"), "{sum}");
    let ordered = plan(&mut s, "SELECT id, name FROM p ORDER BY lower(name) LIMIT 5");
    assert!(ordered.contains("Index Scan using p_lower_idx on p") && !ordered.contains("Sort"), "{ordered}");
    let partial = plan(&mut s, "SELECT id FROM p WHERE a = 3 AND v IS NOT NULL");
    assert!(partial.contains("using pv on p") && partial.contains("Index Cond: (a = 3)") && !partial.contains("Filter"), "{partial}");
    // A strict comparison on v implies v IS NOT NULL; it stays as the filter.
    let implied = plan(&mut s, "SELECT id FROM p WHERE a = 3 AND v > 100");
    assert!(implied.contains("using pv on p") && implied.contains("Filter: (v > 100)"), "{implied}");
    // Without the predicate's condition the partial index cannot serve the query.
    let not_implied = plan(&mut s, "SELECT id FROM p WHERE a = 3");
    assert!(!not_implied.contains("using pv"), "{not_implied}");
    // Range implication: a > 95 implies a > 90.
    let range = plan(&mut s, "SELECT id FROM p WHERE b = 2 AND a > 95");
    assert!(range.contains("using pr on p"), "{range}");
    let below = plan(&mut s, "SELECT id FROM p WHERE b = 2 AND a > 50");
    assert!(!below.contains("using pr"), "{below}");
    // The same rows as without index scans.
    let queries = [
        "SELECT id FROM p WHERE lower(name) = 'name42'",
        "SELECT id FROM p WHERE lower(name) BETWEEN 'name10' AND 'name11'",
        "SELECT id FROM p WHERE a + b = 15",
        "SELECT id FROM p WHERE a + b > 100",
        "SELECT id FROM p WHERE a = 50 AND v IS NOT NULL",
        "SELECT id FROM p WHERE a = 50 AND v > 100",
        "SELECT id FROM p WHERE b = 2 AND a > 95",
    ];
    for q in queries {
        let with = sorted(rows(&mut s, q));
        s.execute("SET enable_indexscan = off").unwrap();
        let without = sorted(rows(&mut s, q));
        s.execute("SET enable_indexscan = on").unwrap();
        assert_eq!(with, without, "{q}");
        assert!(!with.is_empty(), "{q}");
    }
    let first = rows(&mut s, "SELECT lower(name) FROM p ORDER BY lower(name) LIMIT 3");
    assert_eq!(first, vec![vec![Datum::Text("name0".into())]; 3]);
}

#[test]
fn random_writes_keep_expression_and_partial_indexes_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE m (id int PRIMARY KEY, name text, a int, v int)").unwrap();
    s.execute("CREATE INDEX m_low ON m (lower(name))").unwrap();
    s.execute("CREATE INDEX m_sum ON m ((a + id), name)").unwrap();
    s.execute("CREATE INDEX m_part ON m (a) WHERE v IS NOT NULL").unwrap();
    s.execute("CREATE UNIQUE INDEX m_uniq ON m (lower(name)) WHERE v > 50").unwrap();
    let indexes = ["m_low", "m_sum", "m_part", "m_uniq", "m_pkey"];
    let mut rng = Rng(0x5eed_1d0_2024);
    // The model: id → (name, a, v).
    let mut model: std::collections::BTreeMap<i64, (String, i64, Option<i64>)> = Default::default();
    for step in 0..300 {
        let id = rng.below(200) as i64;
        let name = format!("N{}", rng.below(60));
        let a = rng.below(20) as i64;
        let v = if rng.below(3) == 0 { None } else { Some(rng.below(100) as i64) };
        let v_sql = v.map_or("NULL".to_string(), |v| v.to_string());
        // Would the row clash in m_uniq with another row?
        let clashes = |model: &std::collections::BTreeMap<i64, (String, i64, Option<i64>)>, id: i64, name: &str, v: Option<i64>| {
            v.is_some_and(|v| v > 50)
                && model.iter().any(|(other, (n, _, ov))| *other != id && n.to_lowercase() == name.to_lowercase() && ov.is_some_and(|x| x > 50))
        };
        let sql;
        let ok;
        match rng.below(4) {
            0 => {
                sql = format!("INSERT INTO m VALUES ({id}, '{name}', {a}, {v_sql})");
                ok = !model.contains_key(&id) && !clashes(&model, id, &name, v);
                if ok {
                    model.insert(id, (name.clone(), a, v));
                }
            }
            1 => {
                sql = format!("UPDATE m SET v = {v_sql}, name = '{name}' WHERE id = {id}");
                ok = !model.contains_key(&id) || !clashes(&model, id, &name, v);
                if ok {
                    if let Some(row) = model.get_mut(&id) {
                        row.0 = name.clone();
                        row.2 = v;
                    }
                }
            }
            2 => {
                sql = format!("DELETE FROM m WHERE id = {id}");
                ok = true;
                model.remove(&id);
            }
            _ => {
                sql = format!("INSERT INTO m VALUES ({id}, '{name}', {a}, {v_sql}) ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a");
                ok = model.contains_key(&id) || !clashes(&model, id, &name, v);
                if ok {
                    match model.get_mut(&id) {
                        Some(row) => row.1 = a,
                        None => {
                            model.insert(id, (name.clone(), a, v));
                        }
                    }
                }
            }
        }
        match s.execute(&sql) {
            Ok(_) => assert!(ok, "step {step}: {sql} succeeded"),
            Err(e) => {
                assert!(!ok, "step {step}: {sql}: {e:?}");
                assert_eq!(e.sqlstate.0, "23505", "{sql}: {e:?}");
            }
        }
        if step % 50 == 49 {
            for index in indexes {
                check(&mut s, index);
            }
        }
    }
    let expected = model.values().filter(|(_, _, v)| v.is_some()).count() as i64;
    let counted = rows(&mut s, "SELECT count(*) FROM m WHERE v IS NOT NULL AND a >= 0");
    assert_eq!(counted, vec![vec![Datum::Int8(expected)]]);
    drop(s);
    drop(db);
    let db = open(dir.path());
    let mut s = db.session();
    for index in indexes {
        check(&mut s, index);
    }
    let again = rows(&mut s, "SELECT count(*) FROM m WHERE v IS NOT NULL AND a >= 0");
    assert_eq!(again, vec![vec![Datum::Int8(expected)]]);
}

#[test]
fn copy_maintains_expression_and_partial_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE c (k int, t text)").unwrap();
    s.execute("CREATE UNIQUE INDEX c_low ON c (lower(t)) WHERE k > 0").unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "1,Abc\n-1,abc\n2,Def\n").unwrap();
    s.execute(&format!("COPY c FROM '{}' WITH (FORMAT csv)", file.display())).unwrap();
    check(&mut s, "c_low");
    std::fs::write(&file, "3,ABC\n").unwrap();
    let err = s.execute(&format!("COPY c FROM '{}' WITH (FORMAT csv)", file.display())).unwrap_err();
    assert_eq!(err.sqlstate.0, "23505");
    assert_eq!(err.detail.as_deref(), Some("Key (lower(t))=(abc) already exists."));
    check(&mut s, "c_low");
}

#[test]
fn bad_index_definitions_read_like_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE e (a int, t text)").unwrap();
    for (sql, state, message) in [
        ("CREATE INDEX ON e (random())", "42P17", "functions in index expression must be marked IMMUTABLE"),
        ("CREATE INDEX ON e (a) WHERE random() > 0.5", "42P17", "functions in index predicate must be marked IMMUTABLE"),
        ("CREATE INDEX ON e (a) WHERE a", "42804", "argument of WHERE must be type boolean, not type integer"),
        ("CREATE INDEX ON e (a) WHERE (SELECT true)", "0A000", "cannot use subquery in index predicate"),
        ("CREATE INDEX ON e ((count(*)))", "42803", "aggregate functions are not allowed in index expressions"),
        ("CREATE INDEX ON e (a) INCLUDE (nosuch)", "42703", "column \"nosuch\" does not exist"),
        ("CREATE UNIQUE INDEX ON e (a) NULLS NOT DISTINCT", "0A000", "NULLS NOT DISTINCT is not supported yet"),
    ] {
        let err = s.execute(sql).unwrap_err();
        assert_eq!((err.sqlstate.0, err.message.as_str()), (state, message), "{sql}");
    }
}

#[test]
fn include_columns_serve_index_only_scans() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE w (k int, t text, f float8, z int)").unwrap();
    s.execute("INSERT INTO w SELECT g, 'text' || g, g / 4.0, g FROM generate_series(1, 20000) g").unwrap();
    s.execute("CREATE UNIQUE INDEX w_k ON w (k) INCLUDE (t, f)").unwrap();
    let only = plan(&mut s, "SELECT k, t, f FROM w WHERE k BETWEEN 10 AND 20");
    assert!(only.contains("Index Only Scan using w_k on w"), "{only}");
    let heap = plan(&mut s, "SELECT k, z FROM w WHERE k BETWEEN 10 AND 20");
    assert!(heap.contains("Index Scan using w_k on w"), "{heap}");
    let got = rows(&mut s, "SELECT k, t, f FROM w WHERE k BETWEEN 10 AND 11 ORDER BY k");
    assert_eq!(
        got,
        vec![
            vec![Datum::Int4(10), Datum::Text("text10".into()), Datum::Float8(2.5)],
            vec![Datum::Int4(11), Datum::Text("text11".into()), Datum::Float8(2.75)],
        ]
    );
    // INCLUDE columns take no part in uniqueness.
    let err = s.execute("INSERT INTO w VALUES (10, 'other', 0, 0)").unwrap_err();
    assert_eq!(err.detail.as_deref(), Some("Key (k)=(10) already exists."));
    s.execute("INSERT INTO w VALUES (20001, 'text10', 2.5, 0)").unwrap();
    s.execute("UPDATE w SET t = 'new' WHERE k < 100").unwrap();
    check(&mut s, "w_k");
    let got = rows(&mut s, "SELECT t FROM w WHERE k = 50");
    assert_eq!(got, vec![vec![Datum::Text("new".into())]]);
    drop(s);
    drop(db);
    let db = open(dir.path());
    let mut s = db.session();
    check(&mut s, "w_k");
    let got = rows(&mut s, "SELECT t, f FROM w WHERE k = 20001");
    assert_eq!(got, vec![vec![Datum::Text("text10".into()), Datum::Float8(2.5)]]);
}
