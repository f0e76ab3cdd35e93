//! INSERT ... ON CONFLICT DO UPDATE checked against a `BTreeMap` model that applies the
//! proposed rows one at a time, as PostgreSQL does: random batches (new keys, existing
//! keys, NULLs in a unique column, a WHERE that skips some rows, a key proposed twice),
//! compared after each batch by the command tag, the RETURNING rows, the whole table and
//! the B-tree checker; a failing batch must change nothing.

use std::collections::BTreeMap;

use proptest::prelude::*;
use weft_sql::{Datum, Session, SqlState};

/// The model: k → (u, n), where u is UNIQUE (NULLs allowed) and n counts updates.
type Model = BTreeMap<i32, (Option<i32>, i32)>;

/// One proposed row: (k, u).
type Proposed = (i32, Option<i32>);

/// What the statement must do: Ok((rows changed, RETURNING rows)) or the SQLSTATE.
fn apply(model: &mut Model, batch: &[Proposed], with_where: bool) -> Result<(usize, Vec<String>), SqlState> {
    // The arbiter is k and SET never changes k. A proposed row whose key this statement
    // already inserted or updated is 21000, as in PostgreSQL; a row that WHERE left alone
    // was not affected, so proposing its key again is not. weft reports 21000 before any
    // 23505 of the same statement (see upsert.rs): look for it first.
    if run(model, batch, with_where, false)?.is_none() {
        return Err(SqlState::CARDINALITY_VIOLATION);
    }
    let (next, returned) = run(model, batch, with_where, true)?.expect("no key affected twice");
    *model = next;
    Ok((returned.len(), returned))
}

/// Apply `batch` in order to a copy of `model`; `None` when a key would be affected twice.
/// With `unique`, a duplicate `u` is the statement's 23505.
fn run(model: &Model, batch: &[Proposed], with_where: bool, unique: bool) -> Result<Option<(Model, Vec<String>)>, SqlState> {
    let mut next = model.clone();
    let mut affected = std::collections::HashSet::new();
    let mut returned = Vec::new();
    for &(k, u) in batch {
        let row = match next.get(&k).copied() {
            None => (u, 0),
            _ if affected.contains(&k) => return Ok(None),
            // WHERE kv.u IS DISTINCT FROM EXCLUDED.u: an unchanged u leaves the row alone.
            Some((old_u, _)) if with_where && old_u == u => continue,
            Some((_, n)) => (u, n + 1),
        };
        if unique && row.0.is_some() && next.iter().any(|(other, (other_u, _))| *other != k && *other_u == row.0) {
            return Err(SqlState::UNIQUE_VIOLATION);
        }
        affected.insert(k);
        next.insert(k, row);
        returned.push(line(k, row));
    }
    Ok(Some((next, returned)))
}

fn line(k: i32, (u, n): (Option<i32>, i32)) -> String {
    format!("{k}|{}|{n}", u.map(|u| u.to_string()).unwrap_or_default())
}

fn statement(batch: &[Proposed], with_where: bool) -> String {
    let values: Vec<String> =
        batch.iter().map(|(k, u)| format!("({k}, {}, 0)", u.map(|u| u.to_string()).unwrap_or_else(|| "NULL".into()))).collect();
    let condition = if with_where { " WHERE kv.u IS DISTINCT FROM EXCLUDED.u" } else { "" };
    format!(
        "INSERT INTO kv VALUES {} ON CONFLICT (k) DO UPDATE SET u = EXCLUDED.u, n = kv.n + 1{condition} RETURNING k, u, n",
        values.join(", ")
    )
}

fn lines(rows: &[Vec<Datum>]) -> Vec<String> {
    rows.iter().map(|r| r.iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join("|")).collect()
}

fn check(session: &mut Session, model: &Model) {
    let table = session.execute("SELECT k, u, n FROM kv ORDER BY k").unwrap();
    let expected: Vec<String> = model.iter().map(|(&k, &row)| line(k, row)).collect();
    assert_eq!(lines(&table.rows), expected);
    for index in ["kv_pkey", "kv_u_key"] {
        session.execute(&format!("SELECT weft_index_check('{index}', heapallindexed => true)")).unwrap();
    }
}

fn proposed_row() -> impl Strategy<Value = Proposed> {
    (0..24i32, prop_oneof![3 => (0..30i32).prop_map(Some), 1 => Just(None)])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn upsert_batches_match_the_model(batches in prop::collection::vec((prop::collection::vec(proposed_row(), 1..8), any::<bool>()), 1..12)) {
        let dir = tempfile::tempdir().unwrap();
        let db = weft_sql::Database::open(dir.path(), &[]).unwrap();
        let mut session = db.session();
        session.execute("CREATE TABLE kv (k int4 PRIMARY KEY, u int4 UNIQUE, n int4 NOT NULL)").unwrap();
        let mut model = Model::new();
        for (batch, with_where) in &batches {
            let sql = statement(batch, *with_where);
            match (apply(&mut model, batch, *with_where), session.execute(&sql)) {
                (Ok((changed, returned)), Ok(result)) => {
                    prop_assert_eq!(result.tag, format!("INSERT 0 {changed}"), "{}", sql);
                    prop_assert_eq!(lines(&result.rows), returned, "{}", sql);
                }
                (Err(state), Err(error)) => prop_assert_eq!(error.sqlstate, state, "{}: {:?}", sql, error),
                (expected, actual) => prop_assert!(false, "{}: model {:?}, weft {:?}", sql, expected, actual),
            }
            check(&mut session, &model);
        }
    }
}
