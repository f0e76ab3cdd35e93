//! `FETCH FIRST n ROWS WITH TIES` compared with PostgreSQL 15: ties on one and several
//! keys, DESC and NULLS FIRST, keys that are not in the select list, OFFSET, counts given
//! by subqueries, in subqueries and joins; serial, with parallel workers (whose key ranges
//! are merged apart, so a run of ties can cross from one range into the next) and with a
//! work_mem small enough that the sort spills. Rows among ties come in no defined order,
//! so each query's outer ORDER BY makes the order total.

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE w (id int, k int, g int, s text, f float8)",
    "INSERT INTO w SELECT i, CASE WHEN i % 97 = 0 THEN NULL ELSE (i * 7) % 40 END, i % 3, CASE WHEN i % 11 = 0 THEN NULL ELSE substr(md5(i::text), 1, 2) END, (i % 9) / 2.0 FROM generate_series(1, 30000) i",
    "CREATE TABLE e (id int, k int)",
];

const QUERIES: &[&str] = &[
    "SELECT * FROM (SELECT id, k FROM w ORDER BY k FETCH FIRST 5 ROWS WITH TIES) s ORDER BY id",
    "SELECT * FROM (SELECT id FROM w ORDER BY k FETCH FIRST 1000 ROWS WITH TIES) s ORDER BY id",
    "SELECT * FROM (SELECT id, k FROM w ORDER BY k DESC FETCH FIRST 2 ROWS WITH TIES) s ORDER BY id",
    "SELECT * FROM (SELECT id, k FROM w ORDER BY k DESC NULLS LAST FETCH FIRST 760 ROWS WITH TIES) s ORDER BY id",
    "SELECT * FROM (SELECT id, k FROM w ORDER BY k NULLS FIRST FETCH FIRST 300 ROWS WITH TIES) s ORDER BY id",
    "SELECT * FROM (SELECT id, k, g FROM w ORDER BY k, g DESC FETCH FIRST 10 ROWS WITH TIES) s ORDER BY id",
    "SELECT * FROM (SELECT id, s FROM w ORDER BY s, f FETCH NEXT 3 ROWS WITH TIES) s ORDER BY id",
    "SELECT * FROM (SELECT id FROM w ORDER BY k % 7, g FETCH FIRST 1 ROW WITH TIES) s ORDER BY id",
    // Which of the tied rows an OFFSET skips is not defined: only the keys are compared.
    "SELECT k, count(*) FROM (SELECT k FROM w ORDER BY k OFFSET 740 ROWS FETCH FIRST 20 ROWS WITH TIES) s GROUP BY k ORDER BY k",
    "SELECT k, count(*) FROM (SELECT k, g FROM w ORDER BY k, g OFFSET 1500 ROWS FETCH FIRST 1 ROW WITH TIES) s GROUP BY k ORDER BY k",
    "SELECT count(*), count(k) FROM (SELECT k FROM w ORDER BY k OFFSET 29990 ROWS FETCH FIRST 5 ROWS WITH TIES) s",
    "SELECT * FROM (SELECT id, k FROM w ORDER BY k OFFSET 40000 ROWS FETCH FIRST 5 ROWS WITH TIES) s ORDER BY id",
    "SELECT * FROM (SELECT id, k FROM w ORDER BY k FETCH FIRST 0 ROWS WITH TIES) s ORDER BY id",
    "SELECT * FROM (SELECT id, k FROM w ORDER BY f DESC, k FETCH FIRST 4 ROWS WITH TIES) s ORDER BY id",
    "SELECT count(*), count(DISTINCT k), min(k), max(k) FROM (SELECT k FROM w ORDER BY k FETCH FIRST 5000 ROWS WITH TIES) s",
    "SELECT k, count(*) FROM (SELECT id, k FROM w ORDER BY k FETCH FIRST 2000 ROWS WITH TIES) s GROUP BY k ORDER BY k",
    "SELECT * FROM (SELECT k, count(*) AS c FROM w GROUP BY k ORDER BY count(*) DESC FETCH FIRST 1 ROW WITH TIES) s ORDER BY k",
    "SELECT * FROM (SELECT g, count(*) FROM w GROUP BY g ORDER BY g FETCH FIRST 2 ROWS WITH TIES) s ORDER BY 1",
    "SELECT * FROM (SELECT w.id, e.k FROM w LEFT JOIN e ON w.id = e.id ORDER BY e.k FETCH FIRST 3 ROWS WITH TIES) s ORDER BY id LIMIT 5",
    "SELECT * FROM (SELECT id FROM e ORDER BY k FETCH FIRST 3 ROWS WITH TIES) s ORDER BY id",
    "SELECT * FROM (SELECT id, k FROM w WHERE id < 100 UNION ALL SELECT id, k FROM w WHERE id > 29900 ORDER BY k FETCH FIRST 6 ROWS WITH TIES) s ORDER BY id",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "SELECT id FROM w FETCH FIRST 2 ROWS WITH TIES",
    "SELECT id FROM w ORDER BY k FETCH FIRST NULL ROWS WITH TIES",
    "SELECT id FROM w ORDER BY k OFFSET -1 ROWS FETCH FIRST 1 ROWS WITH TIES",
];

#[test]
fn with_ties_matches_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    for strategy in ["partition", "leader_merge"] {
        session.execute(&format!("SET parallel_sort_strategy = {strategy}")).unwrap();
        mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES).into_iter().map(|m| format!("{strategy}: {m}")));
        session.execute("RESET ALL").unwrap();
    }
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}
