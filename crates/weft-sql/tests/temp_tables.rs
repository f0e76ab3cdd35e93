//! Temporary tables and views: usable like others while their session lives, gone when it
//! ends (files included). `kill9_durability` in the weft crate covers a process that dies
//! with them.

use weft_sql::{Database, Datum, Session};

fn relation_names(session: &mut Session) -> Vec<String> {
    session.list_relations().into_iter().map(|r| r.name).collect()
}

/// Relation files under `base/<database>/`.
fn relation_files(dir: &std::path::Path) -> usize {
    let Ok(databases) = std::fs::read_dir(dir.join("base")) else { return 0 };
    databases.map(|d| std::fs::read_dir(d.unwrap().path()).map_or(0, |files| files.count())).sum()
}

#[test]
fn temporary_tables_end_with_their_session() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut keeper = db.session();
    keeper.execute("CREATE TABLE kept (a int)").unwrap();
    let files_before = relation_files(dir.path());
    {
        let mut s = db.session();
        s.execute("CREATE TEMP TABLE scratch (a int PRIMARY KEY, b text)").unwrap();
        s.execute("INSERT INTO scratch SELECT g, 'x' || g FROM generate_series(1, 1000) g").unwrap();
        s.execute("CREATE TEMPORARY TABLE derived AS SELECT a * 2 AS d FROM scratch WHERE a <= 10").unwrap();
        s.execute("CREATE TEMP VIEW small AS SELECT * FROM scratch WHERE a < 5").unwrap();
        // A view of a temporary table is temporary itself.
        let view = s.execute("CREATE VIEW of_temp AS SELECT d FROM derived").unwrap();
        assert_eq!(view.notices, ["NOTICE:  view \"of_temp\" will be a temporary view"]);
        s.execute("CREATE VIEW of_kept AS SELECT a FROM kept").unwrap();
        assert_eq!(s.execute("SELECT count(*) FROM pg_temp.scratch WHERE b LIKE 'x1%'").unwrap().rows[0][0], Datum::Int8(112));
        assert_eq!(s.execute("SELECT sum(d) FROM of_temp").unwrap().rows[0][0], Datum::Int8(110));
        assert_eq!(s.execute("SELECT count(*) FROM small").unwrap().rows[0][0], Datum::Int8(4));
        let persistence = s
            .execute("SELECT relname, relpersistence FROM pg_class WHERE relname IN ('scratch', 'derived', 'small', 'of_temp', 'of_kept', 'kept') ORDER BY relname")
            .unwrap();
        let persistence: Vec<String> = persistence.rows.iter().map(|r| format!("{:?}", r)).collect();
        assert_eq!(persistence.len(), 6, "{persistence:?}");
        assert!(persistence.iter().filter(|r| r.contains("\"t\"")).count() == 4, "{persistence:?}");
        let error = s.execute("CREATE TEMP TABLE public.nowhere (a int)").unwrap_err();
        assert_eq!(error.sqlstate.0, "42P16");
        assert!(relation_files(dir.path()) > files_before);
    }
    // The session is gone: so are its temporary relations and their files.
    let names = relation_names(&mut keeper);
    assert!(names.contains(&"kept".to_string()) && names.contains(&"of_kept".to_string()), "{names:?}");
    for gone in ["scratch", "derived", "small", "of_temp"] {
        assert!(!names.contains(&gone.to_string()), "{gone} survived its session: {names:?}");
        assert_eq!(keeper.execute(&format!("SELECT * FROM {gone}")).unwrap_err().sqlstate.0, "42P01");
    }
    // The name is free again.
    keeper.execute("CREATE TEMP TABLE scratch (z int)").unwrap();
    keeper.execute("DROP TABLE scratch").unwrap();
    drop(keeper);
    drop(db);
    let db = Database::open(dir.path(), &[]).unwrap();
    db.session().execute("SELECT 1").unwrap();
    assert_eq!(relation_files(dir.path()), files_before);
}
