//! Index scans against sequential scans: random predicates (=, <, <=, >, >=, BETWEEN, IN,
//! conjunctions, with NULLs in the data) and ORDER BY ... LIMIT over ASC, DESC, NULLS
//! FIRST, multi-column and text indexes give the same rows as the same query with index
//! scans disabled; the plans do use the indexes; rows of a failed INSERT never appear.

use weft_sql::{Database, Datum, Session};

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Datum>> {
    s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}")).rows
}

fn plan(s: &mut Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN {sql}"))
        .into_iter()
        .map(|r| match &r[0] {
            Datum::Text(t) => t.clone(),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Rows in a canonical order, for comparing queries without ORDER BY.
fn sorted(mut r: Vec<Vec<Datum>>) -> Vec<String> {
    let mut out: Vec<String> = r.drain(..).map(|row| format!("{row:?}")).collect();
    out.sort();
    out
}

fn setup(s: &mut Session) {
    s.execute("CREATE TABLE r (a int, b bigint, c text, d float8)").unwrap();
    s.execute(
        "INSERT INTO r SELECT CASE WHEN i % 31 = 0 THEN NULL ELSE hashint4(i) % 2000 END, \
         CASE WHEN i % 37 = 0 THEN NULL ELSE i END, \
         CASE WHEN i % 41 = 0 THEN NULL ELSE 'v' || (hashint4(i * 3) % 300) END, \
         CASE WHEN i % 43 = 0 THEN NULL ELSE hashint4(i * 5) / 7.0 END \
         FROM generate_series(1, 40000) i",
    )
    .unwrap();
    s.execute("CREATE INDEX ra ON r (a)").unwrap();
    s.execute("CREATE INDEX rb ON r (b DESC)").unwrap();
    s.execute("CREATE INDEX rca ON r (c NULLS FIRST, a DESC)").unwrap();
    s.execute("CREATE INDEX rd ON r (d DESC NULLS LAST)").unwrap();
    // Rows added after the build: their entries need the heap check.
    s.execute("INSERT INTO r SELECT hashint4(i) % 2000, i, 'v' || (i % 300), i / 3.0 FROM generate_series(40001, 42000) i").unwrap();
}

fn predicate(rng: &mut Rng) -> String {
    let op = ["=", "<", "<=", ">", ">="][rng.below(5) as usize];
    match rng.below(9) {
        0 => format!("a {op} {}", rng.below(2200) as i64 - 1100),
        1 => format!("{} {op} a", rng.below(2200) as i64 - 1100),
        2 => format!("b {op} {}", rng.below(43000)),
        3 => format!("c {op} 'v{}'", rng.below(300)),
        4 => format!("d {op} {}", (rng.below(600_000_000) as i64 - 300_000_000)),
        5 => {
            let lo = rng.below(2000) as i64 - 1000;
            format!("a BETWEEN {lo} AND {}", lo + rng.below(30) as i64)
        }
        6 => format!("a IN ({}, {}, {}, NULL)", rng.below(2000) as i64 - 1000, rng.below(2000) as i64 - 1000, rng.below(50)),
        7 => format!("c = 'v{}' AND a {op} {}", rng.below(300), rng.below(2000) as i64 - 1000),
        _ => format!("b BETWEEN {0} AND {1} AND a IS NOT NULL", rng.below(42000), rng.below(42000)),
    }
}

#[test]
fn index_scans_return_what_sequential_scans_return() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    setup(&mut s);
    let mut rng = Rng(0xdead_beef_1234);
    let mut used_index = 0;
    for _ in 0..300 {
        let p = predicate(&mut rng);
        let select = ["*", "a", "b", "c, a", "count(*)", "a, d"][rng.below(6) as usize];
        let sql = format!("SELECT {select} FROM r WHERE {p}");
        s.execute("SET enable_indexscan = on; SET enable_indexonlyscan = on; SET enable_seqscan = on").unwrap();
        if plan(&mut s, &sql).contains("Index") {
            used_index += 1;
        }
        let with_index = sorted(rows(&mut s, &sql));
        s.execute("SET enable_indexscan = off; SET enable_indexonlyscan = off").unwrap();
        assert!(!plan(&mut s, &sql).contains("Index"));
        let without = sorted(rows(&mut s, &sql));
        assert_eq!(with_index, without, "{sql}");
    }
    assert!(used_index > 100, "only {used_index} of 300 queries used an index");
}

#[test]
fn order_by_limit_through_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    setup(&mut s);
    let queries = [
        "SELECT a, b FROM r ORDER BY a LIMIT 7",
        "SELECT a, b FROM r ORDER BY a DESC LIMIT 7",
        "SELECT a FROM r ORDER BY a DESC NULLS FIRST LIMIT 7",
        "SELECT d FROM r ORDER BY d NULLS FIRST LIMIT 4",
        "SELECT b FROM r ORDER BY b DESC LIMIT 5 OFFSET 3",
        "SELECT b FROM r ORDER BY b LIMIT 5",
        "SELECT c, a FROM r ORDER BY c NULLS FIRST, a DESC LIMIT 9",
        "SELECT c, a FROM r ORDER BY c DESC NULLS LAST, a LIMIT 9",
        "SELECT d FROM r ORDER BY d DESC NULLS LAST LIMIT 4",
        "SELECT a, b FROM r WHERE a > 100 ORDER BY a LIMIT 6",
        "SELECT a, b FROM r WHERE a BETWEEN 5 AND 9 ORDER BY a DESC",
        "SELECT a FROM r WHERE c = 'v7' ORDER BY c NULLS FIRST, a DESC",
    ];
    for sql in queries {
        s.execute("SET enable_indexscan = on; SET enable_indexonlyscan = on").unwrap();
        let shape = plan(&mut s, sql);
        assert!(shape.contains("Index") && !shape.contains("Sort"), "{sql}:\n{shape}");
        let with_index = rows(&mut s, sql);
        s.execute("SET enable_indexscan = off; SET enable_indexonlyscan = off").unwrap();
        let shape = plan(&mut s, sql);
        assert!(shape.contains("Sort"), "{sql}:\n{shape}");
        // Ties in the sort key may come in any order: compare the keys' sequence.
        let without = rows(&mut s, sql);
        assert_eq!(with_index.len(), without.len(), "{sql}");
        let key = |r: &Vec<Datum>| format!("{:?}", r[0]);
        assert_eq!(with_index.iter().map(key).collect::<Vec<_>>(), without.iter().map(key).collect::<Vec<_>>(), "{sql}");
    }
}

#[test]
fn plan_shapes_follow_selectivity() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    setup(&mut s);
    assert!(plan(&mut s, "SELECT * FROM r WHERE b = 77").starts_with("Index Scan using rb on r"));
    assert!(plan(&mut s, "SELECT b FROM r WHERE b < 50").starts_with("Index Only Scan Backward using rb on r") || plan(&mut s, "SELECT b FROM r WHERE b < 50").starts_with("Index Only Scan using rb on r"));
    assert!(plan(&mut s, "SELECT * FROM r WHERE b > 100").starts_with("Seq Scan on r"));
    let p = plan(&mut s, "SELECT * FROM r WHERE a = 5 AND d > 0");
    assert!(p.contains("Index Cond: (a = 5)") && p.contains("Filter: (d > '0'::double precision)") || p.contains("Filter: (d > "), "{p}");
}

#[test]
fn rows_of_a_failed_insert_never_show_through_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE f (a int NOT NULL, b int)").unwrap();
    s.execute("INSERT INTO f SELECT i, i FROM generate_series(1, 20000) i").unwrap();
    s.execute("CREATE INDEX fa ON f (a)").unwrap();
    s.execute("CREATE UNIQUE INDEX fb ON f (b)").unwrap();
    // Index maintenance adds the rows to `fa`, then finds a duplicate for `fb`: the
    // statement fails with entries in `fa` that point to its (invisible) rows.
    let err = s.execute("INSERT INTO f SELECT 100000 + i, i FROM generate_series(1, 3000) i").unwrap_err();
    assert_eq!(err.sqlstate, weft_sql::SqlState::UNIQUE_VIOLATION);
    for sql in ["SELECT count(*) FROM f WHERE a > 100000", "SELECT count(a) FROM f WHERE a > 100000 AND a < 200000"] {
        assert!(plan(&mut s, sql).contains("Index"), "{sql}");
        assert_eq!(rows(&mut s, sql)[0][0], Datum::Int8(0), "{sql}");
    }
    s.execute("SELECT weft_index_check('fa', heapallindexed => true)").unwrap();
}
