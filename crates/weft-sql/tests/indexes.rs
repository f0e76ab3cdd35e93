//! B-tree indexes through SQL: builds in every configuration checked by the checker,
//! identical key order for both parallel strategies, UNIQUE at build and at insert,
//! maintenance by INSERT and COPY, TRUNCATE / DROP / REINDEX, reopening, temp files.

use std::path::Path;
use std::sync::Arc;

use weft_access::btree;
use weft_access::index_build::btree_desc;
use weft_sql::{Database, Datum, Session, SqlState};

fn open(dir: &Path) -> Arc<Database> {
    Database::open(dir, &[("shared_buffers".into(), "2MB".into())]).unwrap()
}

fn count(session: &mut Session, sql: &str) -> i64 {
    match session.execute(sql).unwrap().rows[0][0] {
        Datum::Int8(n) => n,
        ref other => panic!("{other:?}"),
    }
}

fn check(session: &mut Session, index: &str) {
    session
        .execute(&format!("SELECT weft_index_check('{index}', heapallindexed => true)"))
        .unwrap_or_else(|e| panic!("check of {index} failed: {e:?}"));
}

/// Every entry of an index, in index order.
fn entries(db: &Database, index: &str) -> Vec<Vec<u8>> {
    let catalog = db.catalog();
    let meta = &catalog.indexes[index];
    let desc = btree_desc(catalog.table(&meta.table).unwrap(), meta).unwrap();
    let mut out = Vec::new();
    btree::for_each_entry(db.buffer_pool(), meta.locator(), &desc, |_, entry| {
        out.push(entry.to_vec());
        Ok(())
    })
    .unwrap();
    out
}

fn temp_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir.join("tmp")).unwrap().next().is_none()
}

/// A table with duplicate-heavy ints, wide ints, floats with NaN and -0, text with long
/// common prefixes, and NULLs in every column.
fn load_mixed(session: &mut Session, rows: i64) {
    session.execute("CREATE TABLE m (a int, b bigint, c float8, d text, e bool)").unwrap();
    session
        .execute(&format!(
            "INSERT INTO m SELECT CASE WHEN i % 17 = 0 THEN NULL ELSE hashint4(i) % 50 END, \
             hashint8(i)::bigint * 1000, \
             CASE WHEN i % 13 = 0 THEN 'NaN'::float8 WHEN i % 11 = 0 THEN -0.0 WHEN i % 19 = 0 THEN NULL ELSE hashint4(i * 7) / 3.0 END, \
             CASE WHEN i % 23 = 0 THEN NULL ELSE 'prefix-prefix-' || md5((i % 500)::text) END, \
             CASE WHEN i % 29 = 0 THEN NULL ELSE i % 3 = 0 END \
             FROM generate_series(1, {rows}) i"
        ))
        .unwrap();
}

#[test]
fn builds_pass_the_checker_in_every_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    load_mixed(&mut s, 30000);
    let definitions = [
        "(a)",
        "(a DESC)",
        "(e DESC NULLS LAST)",
        "(b)",
        "(c DESC)",
        "(d)",
        "(d DESC NULLS LAST, a)",
        "(a NULLS FIRST, c, e)",
        "(e, b DESC)",
    ];
    for (n, columns) in definitions.iter().enumerate() {
        let mut orders: Vec<Vec<Vec<u8>>> = Vec::new();
        for workers in [0, 1, 3, 7] {
            for strategy in ["partition", "leader_merge"] {
                for (fillfactor, mem) in [(90, "64MB"), (10, "1MB"), (100, "1MB"), (50, "4MB")] {
                    s.execute(&format!("SET parallel_sort_strategy = '{strategy}'")).unwrap();
                    s.execute(&format!("SET maintenance_work_mem = '{mem}'")).unwrap();
                    s.execute(&format!("SET max_parallel_maintenance_workers = {workers}")).unwrap();
                    let name = format!("i{n}");
                    s.execute(&format!(
                        "CREATE INDEX {name} ON m {columns} WITH (parallel_workers = {workers}, fillfactor = {fillfactor})"
                    ))
                    .unwrap();
                    check(&mut s, &name);
                    let report = s.last_index_build().expect("a build report");
                    assert_eq!(report.tree.tuples, 30000, "{columns}");
                    if fillfactor == 90 || fillfactor == 100 {
                        orders.push(entries(&db, &name));
                    }
                    s.execute(&format!("DROP INDEX {name}")).unwrap();
                    assert!(temp_is_empty(dir.path()));
                }
            }
        }
        // Every configuration gives the same entries in the same order.
        assert!(orders.windows(2).all(|w| w[0] == w[1]), "key order differs for {columns}");
        assert_eq!(orders[0].len(), 30000);
    }
}

/// An index on one int4 column is sorted as 16-byte pairs; at 1MB of
/// `maintenance_work_mem` every participant spills them to tape as runs of pairs, which
/// merge passes and the final merge read back as pairs. The trees pass the checker, hold
/// the same entries in the same order in every configuration, and answer index scans
/// like the table does.
#[test]
fn int4_builds_whose_pairs_spill_to_tape_pass_the_checker() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    let rows = 150_000;
    s.execute("CREATE TABLE p (a int, b int)").unwrap();
    s.execute(&format!(
        "INSERT INTO p SELECT CASE WHEN i % 31 = 0 THEN NULL ELSE hashint4(i) % 20000 END, i FROM generate_series(1, {rows}) i"
    ))
    .unwrap();
    s.execute("SET maintenance_work_mem = '1MB'").unwrap();
    let mut orders: Vec<Vec<Vec<u8>>> = Vec::new();
    for columns in ["(a)", "(a DESC NULLS LAST)"] {
        for workers in [0, 1, 3] {
            for strategy in ["partition", "leader_merge"] {
                s.execute(&format!("SET parallel_sort_strategy = '{strategy}'")).unwrap();
                s.execute(&format!("CREATE INDEX pa ON p {columns} WITH (parallel_workers = {workers})")).unwrap();
                check(&mut s, "pa");
                let report = s.last_index_build().expect("a build report");
                assert_eq!(report.tree.tuples, rows as u64);
                assert_eq!(report.sort.method, weft_sort::report::SortMethod::ExternalMerge, "{columns} {workers} {strategy}");
                if columns == "(a)" {
                    orders.push(entries(&db, "pa"));
                }
                s.execute("DROP INDEX pa").unwrap();
                assert!(temp_is_empty(dir.path()));
            }
        }
    }
    assert!(orders.windows(2).all(|w| w[0] == w[1]), "key order differs between configurations");
    // Index scans against the table's answers.
    s.execute("CREATE INDEX pa ON p (a)").unwrap();
    s.execute("SET enable_seqscan = off").unwrap();
    let by_index = count(&mut s, "SELECT count(*) FROM p WHERE a BETWEEN 100 AND 5000");
    s.execute("RESET enable_seqscan").unwrap();
    s.execute("DROP INDEX pa").unwrap();
    assert_eq!(by_index, count(&mut s, "SELECT count(*) FROM p WHERE a BETWEEN 100 AND 5000"));
    assert!(by_index > 0);
}

#[test]
fn unique_violations_at_build_and_at_insert() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE u (a int, b text)").unwrap();
    s.execute("INSERT INTO u SELECT i, 'x' || i FROM generate_series(1, 5000) i").unwrap();
    s.execute("INSERT INTO u VALUES (5, 'dup'), (NULL, 'n1'), (NULL, 'n2')").unwrap();
    for workers in [0, 1, 3] {
        for strategy in ["partition", "leader_merge"] {
            s.execute(&format!("SET parallel_sort_strategy = '{strategy}'")).unwrap();
            let err = s
                .execute(&format!("CREATE UNIQUE INDEX ua ON u (a) WITH (parallel_workers = {workers})"))
                .unwrap_err();
            assert_eq!(err.sqlstate, SqlState::UNIQUE_VIOLATION);
            assert_eq!(err.message, "could not create unique index \"ua\"");
            assert_eq!(err.detail.as_deref(), Some("Key (a)=(5) is duplicated."));
            assert!(temp_is_empty(dir.path()));
        }
    }
    // The failed builds left nothing: the name is free and no file remains named.
    assert!(db.catalog().indexes.is_empty());
    s.execute("DELETE FROM u WHERE b = 'dup'").ok();
    s.execute("CREATE TABLE u2 AS SELECT * FROM u WHERE b <> 'dup' OR b IS NULL").unwrap();
    // NULLs are distinct.
    s.execute("CREATE UNIQUE INDEX ua ON u2 (a)").unwrap();
    s.execute("CREATE UNIQUE INDEX ub ON u2 (a, b)").unwrap();
    check(&mut s, "ua");
    s.execute("INSERT INTO u2 VALUES (NULL, 'n3')").unwrap();

    let before = count(&mut s, "SELECT count(*) FROM u2");
    let err = s.execute("INSERT INTO u2 VALUES (6000, 'new'), (77, 'dup')").unwrap_err();
    assert_eq!(err.sqlstate, SqlState::UNIQUE_VIOLATION);
    assert_eq!(err.message, "duplicate key value violates unique constraint \"ua\"");
    assert_eq!(err.detail.as_deref(), Some("Key (a)=(77) already exists."));
    // Duplicates within one statement.
    let err = s.execute("INSERT INTO u2 VALUES (7001, 'p'), (7001, 'q')").unwrap_err();
    assert_eq!(err.detail.as_deref(), Some("Key (a)=(7001) already exists."));
    assert_eq!(count(&mut s, "SELECT count(*) FROM u2"), before);
    assert_eq!(count(&mut s, "SELECT count(*) FROM u2 WHERE a = 6000"), 0);
    check(&mut s, "ua");
    check(&mut s, "ub");
    // The keys of failed statements are free again.
    s.execute("INSERT INTO u2 VALUES (6000, 'new'), (7001, 'p')").unwrap();
    check(&mut s, "ua");
    assert_eq!(count(&mut s, "SELECT count(*) FROM u2"), before + 2);
}

#[test]
fn inserts_maintain_every_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (a int, b text, c float8)").unwrap();
    s.execute("INSERT INTO t SELECT i, md5(i::text), i / 7.0 FROM generate_series(1, 2000) i").unwrap();
    s.execute("CREATE INDEX ta ON t (a)").unwrap();
    s.execute("CREATE INDEX tb ON t (b DESC) WITH (fillfactor = 100)").unwrap();
    s.execute("CREATE UNIQUE INDEX tac ON t (a, c)").unwrap();
    // Enough rows, in random order, to split leaves and internal pages and grow the root.
    s.execute("INSERT INTO t SELECT hashint4(i) % 100000, repeat(md5(i::text), 3), i FROM generate_series(1, 20000) i")
        .unwrap();
    for i in 0..50 {
        s.execute(&format!("INSERT INTO t VALUES ({i}, 'single {i}', {i}.5)")).unwrap();
    }
    let copy_file = dir.path().join("rows.csv");
    std::fs::write(&copy_file, (0..3000).map(|i| format!("{},copied {i},{}\n", -i, i)).collect::<String>()).unwrap();
    s.execute(&format!("COPY t FROM '{}' WITH (FORMAT csv)", copy_file.display())).unwrap();
    for index in ["ta", "tb", "tac"] {
        check(&mut s, index);
    }
    assert_eq!(entries(&db, "ta").len() as i64, count(&mut s, "SELECT count(*) FROM t"));
    // A failing statement leaves entries that no one sees.
    let err = s.execute("INSERT INTO t SELECT i, 'x', 1.0 / (i - 100) FROM generate_series(1, 200) i").unwrap_err();
    assert_eq!(err.sqlstate, SqlState::DIVISION_BY_ZERO);
    for index in ["ta", "tb", "tac"] {
        check(&mut s, index);
    }
    // Reopening keeps everything.
    drop(s);
    drop(db);
    let db = open(dir.path());
    let mut s = db.session();
    for index in ["ta", "tb", "tac"] {
        check(&mut s, index);
    }
    s.execute("TRUNCATE t").unwrap();
    for index in ["ta", "tb", "tac"] {
        check(&mut s, index);
        assert!(entries(&db, index).is_empty());
    }
    s.execute("INSERT INTO t VALUES (1, 'one', 1)").unwrap();
    check(&mut s, "tac");
    s.execute("REINDEX TABLE t").unwrap();
    s.execute("REINDEX INDEX tb").unwrap();
    check(&mut s, "tb");
    s.execute("DROP TABLE t").unwrap();
    assert!(db.catalog().indexes.is_empty());
}

#[test]
fn index_ddl_errors_read_like_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE t (a int, b text)").unwrap();
    let err = |s: &mut Session, sql: &str| s.execute(sql).unwrap_err();
    let e = err(&mut s, "CREATE INDEX ON nope (a)");
    assert_eq!((e.sqlstate, e.message.as_str()), (SqlState::UNDEFINED_TABLE, "relation \"nope\" does not exist"));
    let e = err(&mut s, "CREATE INDEX ON t (zz)");
    assert_eq!((e.sqlstate, e.message.as_str()), (SqlState::UNDEFINED_COLUMN, "column \"zz\" does not exist"));
    let e = err(&mut s, "CREATE INDEX i ON t (a) WITH (fillfactor = 5)");
    assert_eq!(e.message, "value 5 out of bounds for option \"fillfactor\"");
    assert_eq!(e.detail.as_deref(), Some("Valid values are between \"10\" and \"100\"."));
    let e = err(&mut s, "CREATE INDEX i ON t (a) WITH (bogus = 1)");
    assert_eq!(e.message, "unrecognized parameter \"bogus\"");
    s.execute("CREATE INDEX ON t (a)").unwrap();
    s.execute("CREATE INDEX ON t (a)").unwrap();
    let names: Vec<String> = db.catalog().indexes.keys().cloned().collect();
    assert_eq!(names, vec!["t_a_idx".to_string(), "t_a_idx1".to_string()]);
    let e = err(&mut s, "CREATE INDEX t_a_idx ON t (b)");
    assert_eq!((e.sqlstate, e.message.as_str()), (SqlState::DUPLICATE_TABLE, "relation \"t_a_idx\" already exists"));
    let r = s.execute("CREATE INDEX IF NOT EXISTS t_a_idx ON t (b)").unwrap();
    assert_eq!(r.notices, vec!["NOTICE:  relation \"t_a_idx\" already exists, skipping".to_string()]);
    let e = err(&mut s, "DROP INDEX nope");
    assert_eq!(e.message, "index \"nope\" does not exist");
    let r = s.execute("DROP INDEX IF EXISTS nope").unwrap();
    assert_eq!(r.notices, vec!["NOTICE:  index \"nope\" does not exist, skipping".to_string()]);
    assert_eq!(err(&mut s, "DROP INDEX t").message, "\"t\" is not an index");
    assert_eq!(err(&mut s, "DROP TABLE t_a_idx").message, "\"t_a_idx\" is not a table");
    assert_eq!(err(&mut s, "REINDEX INDEX nope").message, "relation \"nope\" does not exist");
    assert_eq!(err(&mut s, "DROP INDEX t").hint.as_deref(), Some("Use DROP TABLE to remove a table."));
    let e = err(&mut s, "CREATE INDEX g ON t USING gin (b)");
    assert_eq!(e.sqlstate, SqlState::FEATURE_NOT_SUPPORTED);
    s.execute("ALTER TABLE t SET (parallel_workers = 1)").unwrap();
    s.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')").unwrap();
    assert_eq!(s.execute("ANALYZE t").unwrap().tag, "ANALYZE");
    assert_eq!(db.catalog().table("t").unwrap().row_count, 2);
    assert_eq!(err(&mut s, "ANALYZE nope").message, "relation \"nope\" does not exist");
    assert_eq!(db.catalog().table("t").unwrap().parallel_workers, Some(1));
    s.execute("DROP INDEX t_a_idx, t_a_idx1").unwrap();
    assert!(db.catalog().indexes.is_empty());
}

#[test]
fn a_cancelled_build_leaves_no_index_and_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut s = db.session();
    s.execute("CREATE TABLE big AS SELECT hashint4(i) AS a FROM generate_series(1, 300000) i").unwrap();
    s.execute("SET maintenance_work_mem = '1MB'").unwrap();
    let handle = s.cancel_handle();
    let canceller = std::thread::spawn(move || {
        for _ in 0..200 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            handle.cancel();
        }
    });
    let outcome = s.execute("CREATE INDEX bi ON big (a) WITH (parallel_workers = 2)");
    canceller.join().unwrap();
    if let Err(e) = outcome {
        assert_eq!(e.sqlstate, SqlState::QUERY_CANCELED);
        assert!(db.catalog().indexes.is_empty());
    } else {
        check(&mut s, "bi");
    }
    assert!(temp_is_empty(dir.path()));
    let files = db.catalog().live_rel_numbers().len();
    assert_eq!(files, db.catalog().tables.len() + db.catalog().indexes.len());
}

/// A running CREATE INDEX is a row of `pg_stat_progress_create_index` in another session:
/// the builder's pid, the table's oid, one of PostgreSQL's phase names. The watcher polls
/// until it sees the build, then cancels it; a build that ended before it was seen is
/// tried again on a table twice the size.
#[test]
fn another_session_sees_a_running_build_in_the_progress_view() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut builder = db.session();
    let mut watcher = db.session();
    builder.execute("CREATE TABLE p (k text)").unwrap();
    let table_oid = match &watcher.execute("SELECT oid FROM pg_class WHERE relname = 'p'").unwrap().rows[0][0] {
        Datum::Int8(oid) => *oid,
        other => panic!("{other:?}"),
    };
    let builder_pid = builder.backend_pid();
    let mut rows_loaded = 0;
    let mut batch = 200_000;
    for _attempt in 0..6 {
        builder
            .execute(&format!("INSERT INTO p SELECT md5(i::text) FROM generate_series({}, {}) i", rows_loaded + 1, rows_loaded + batch))
            .unwrap();
        rows_loaded += batch;
        batch = rows_loaded;
        let cancel = builder.cancel_handle();
        let build = std::thread::spawn(move || {
            let result = builder.execute("CREATE INDEX p_k ON p (k) WITH (parallel_workers = 0)");
            (builder, result)
        });
        let mut seen = None;
        while seen.is_none() && !build.is_finished() {
            let rows = watcher.execute("SELECT pid, relid, command, phase FROM pg_stat_progress_create_index").unwrap().rows;
            seen = rows.into_iter().next();
        }
        if seen.is_some() {
            cancel.cancel();
        }
        let (returned, result) = build.join().unwrap();
        builder = returned;
        match seen {
            Some(row) => {
                assert_eq!(row[0], Datum::Int4(builder_pid));
                assert_eq!(row[1], Datum::Int8(table_oid));
                assert_eq!(row[2], Datum::Text("CREATE INDEX".into()));
                let phases = ["initializing", "building index: scanning table", "building index: sorting live tuples", "building index: loading tuples in tree"];
                assert!(matches!(&row[3], Datum::Text(p) if phases.contains(&p.as_str())), "{row:?}");
                // Cancelled, or finished between the last look and the cancel.
                if let Err(e) = result {
                    assert_eq!(e.sqlstate, SqlState::QUERY_CANCELED);
                }
                assert!(watcher.execute("SELECT * FROM pg_stat_progress_create_index").unwrap().rows.is_empty());
                return;
            }
            None => {
                result.unwrap();
                builder.execute("DROP INDEX p_k").unwrap();
            }
        }
    }
    panic!("no build of up to {rows_loaded} rows lasted long enough to be seen");
}
