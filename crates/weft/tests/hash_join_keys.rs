//! Hash joins whose build side is one int4 key column (kept in open-addressing slots of
//! key and count, `Buckets::slots` in weft-exec) against a nested-loop oracle: an outer
//! side with more columns than its key (probed row by row) and a key-only one (probed as
//! bare values), every join type, with and without a join filter over the key, NULL keys,
//! duplicates and a hot key, one batch and many, in all three shapes; `count(*)` and
//! `count(column)` over outer joins (NULL-extended rows counted by the first, not the
//! second).

use super::oracle::{weft_lines, Rng};

use weft_sql::{Database, Session};

type Keys = Vec<Option<i32>>;

fn keys(rng: &mut Rng, rows: usize, distinct: u64, null_every: u64) -> Keys {
    (0..rows).map(|_| (rng.below(null_every) != 0).then(|| rng.below(distinct) as i32 - 50)).collect()
}

fn load(s: &mut Session, name: &str, columns: &str, rows: &[String]) {
    s.execute(&format!("DROP TABLE IF EXISTS {name}")).unwrap();
    s.execute(&format!("CREATE TABLE {name} ({columns})")).unwrap();
    for chunk in rows.chunks(1000) {
        s.execute(&format!("INSERT INTO {name} VALUES {}", chunk.join(", "))).unwrap();
    }
}

fn text(k: Option<i32>) -> String {
    k.map_or(String::new(), |k| k.to_string())
}

/// The join filter of the filtered queries.
fn passes(id: i32, k: i32) -> bool {
    (id + k).rem_euclid(3) != 0
}

/// `kind`'s rows over `l (id, k)` and `r (k)` by nested loops.
fn oracle(kind: &str, l: &[(i32, Option<i32>)], r: &[Option<i32>], filtered: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut r_matched = vec![false; r.len()];
    for &(id, lk) in l {
        let mut any = false;
        for (j, &rk) in r.iter().enumerate() {
            let hit = matches!((lk, rk), (Some(a), Some(b)) if a == b && (!filtered || passes(id, b)));
            if !hit {
                continue;
            }
            any = true;
            r_matched[j] = true;
            if matches!(kind, "inner" | "left" | "right" | "full") {
                out.push(format!("{id}|{}", text(rk)));
            }
        }
        match kind {
            "semi" if any => out.push(id.to_string()),
            "anti" if !any => out.push(id.to_string()),
            "left" | "full" if !any => out.push(format!("{id}|")),
            "not in" => {
                let keep = r.is_empty() || (lk.is_some() && r.iter().all(|k| k.is_some() && *k != lk));
                if keep {
                    out.push(id.to_string());
                }
            }
            _ => {}
        }
    }
    if matches!(kind, "right" | "full") {
        for (j, &rk) in r.iter().enumerate() {
            if !r_matched[j] {
                out.push(format!("|{}", text(rk)));
            }
        }
    }
    out.sort();
    out
}

fn query(kind: &str, filtered: bool) -> String {
    let filter = if filtered { " AND (l.id + r.k) % 3 <> 0" } else { "" };
    match kind {
        "inner" => format!("SELECT l.id, r.k FROM l JOIN r ON l.k = r.k{filter}"),
        "left" => format!("SELECT l.id, r.k FROM l LEFT JOIN r ON l.k = r.k{filter}"),
        "right" => format!("SELECT l.id, r.k FROM l RIGHT JOIN r ON l.k = r.k{filter}"),
        "full" => format!("SELECT l.id, r.k FROM l FULL JOIN r ON l.k = r.k{filter}"),
        "semi" => format!("SELECT l.id FROM l WHERE EXISTS (SELECT 1 FROM r WHERE r.k = l.k{filter})"),
        "anti" => format!("SELECT l.id FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.k = l.k{filter})"),
        "not in" => "SELECT l.id FROM l WHERE l.k NOT IN (SELECT k FROM r)".to_string(),
        other => unreachable!("{other}"),
    }
}

fn sorted(s: &mut Session, sql: &str) -> Vec<String> {
    let mut rows = weft_lines(s, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.sort();
    rows
}

const KINDS: [&str; 7] = ["inner", "left", "right", "full", "semi", "anti", "not in"];

fn shapes(workers: usize) -> Vec<(&'static str, Vec<String>)> {
    let parallel = vec![
        format!("SET max_parallel_workers_per_gather = {workers}"),
        format!("ALTER TABLE l SET (parallel_workers = {workers})"),
        format!("ALTER TABLE r SET (parallel_workers = {workers})"),
        format!("ALTER TABLE lk SET (parallel_workers = {workers})"),
    ];
    let mut aware = parallel.clone();
    aware.extend(["SET enable_parallel_hash = on".to_string(), "SET parallel_hash_min_inner_rows = 0".to_string()]);
    let mut oblivious = parallel;
    oblivious.push("SET enable_parallel_hash = off".to_string());
    vec![("serial", vec!["SET max_parallel_workers_per_gather = 0".to_string()]), ("oblivious", oblivious), ("aware", aware)]
}

#[test]
fn int4_key_only_build_sides_match_nested_loops() {
    let mut rng = Rng(0x510_75ee);
    let dir = tempfile::tempdir().unwrap();
    let settings = [("max_worker_processes".to_string(), "8".to_string())];
    let db = Database::open(dir.path(), &settings).unwrap_or_else(|e| panic!("open: {e:?}"));
    let mut s = db.session();
    for round in 0..2 {
        let lkeys = keys(&mut rng, 6000, 1500, 9);
        let l: Vec<(i32, Option<i32>)> = lkeys.iter().enumerate().map(|(i, &k)| (i as i32, k)).collect();
        let mut r = keys(&mut rng, 3000, 1200, 13);
        if round == 1 {
            // A hot key: most inner rows, processed in chunks under the tiny budget.
            for k in r.iter_mut().filter(|k| k.is_some()) {
                if rng.below(3) != 0 {
                    *k = Some(7);
                }
            }
            r.extend(std::iter::repeat_n(Some(7), 6000));
        }
        load(&mut s, "l", "id int4, k int4", &l.iter().map(|(id, k)| format!("({id}, {})", k.map_or("NULL".into(), |k| k.to_string()))).collect::<Vec<_>>());
        load(&mut s, "lk", "k int4", &lkeys.iter().map(|k| format!("({})", k.map_or("NULL".into(), |k| k.to_string()))).collect::<Vec<_>>());
        load(&mut s, "r", "k int4", &r.iter().map(|k| format!("({})", k.map_or("NULL".into(), |k| k.to_string()))).collect::<Vec<_>>());
        s.execute("ANALYZE").unwrap();
        let mut expected = Vec::new();
        for kind in KINDS {
            for filtered in [false, true] {
                if kind == "not in" && filtered {
                    continue;
                }
                expected.push((query(kind, filtered), oracle(kind, &l, &r, filtered)));
            }
        }
        // Key-only outer side (values probed without rows): the self-join's shape. The
        // inner key of a matched row is the outer key, NULL when unmatched.
        let lk: Vec<(i32, Option<i32>)> = lkeys.iter().map(|&k| (0, k)).collect();
        let key_rows = |kind: &str| -> Vec<String> {
            let mut rows = Vec::new();
            for &k in &lkeys {
                let n = r.iter().filter(|&&rk| k.is_some() && rk == k).count();
                match kind {
                    "inner" | "left" => rows.extend(std::iter::repeat_n(text(k), n)),
                    "semi" if n > 0 => rows.push(text(k)),
                    "anti" if n == 0 => rows.push(text(k)),
                    _ => {}
                }
                if kind == "left" && n == 0 {
                    rows.push(String::new());
                }
            }
            rows.sort();
            rows
        };
        let matched: usize = oracle("inner", &lk, &r, false).len();
        let left_rows = oracle("left", &l, &r, false);
        let left_nulls = left_rows.iter().filter(|row| row.ends_with('|')).count();
        let counts = [
            ("SELECT count(*) FROM lk JOIN r USING (k)", matched.to_string()),
            ("SELECT count(*) FROM l LEFT JOIN r ON l.k = r.k", left_rows.len().to_string()),
            ("SELECT count(r.k) FROM l LEFT JOIN r ON l.k = r.k", (left_rows.len() - left_nulls).to_string()),
            ("SELECT count(*), count(r.k) FROM l JOIN r ON l.k = r.k", format!("{0}|{0}", oracle("inner", &l, &r, false).len())),
            ("SELECT count(*) FROM lk WHERE EXISTS (SELECT 1 FROM r WHERE r.k = lk.k)", oracle("semi", &lk, &r, false).len().to_string()),
            ("SELECT count(*) FROM lk WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.k = lk.k)", oracle("anti", &lk, &r, false).len().to_string()),
        ];
        for workers in [1, 3] {
            for (shape, shape_settings) in shapes(workers) {
                for budget in [&["SET work_mem = '64MB'"][..], &["SET work_mem = '64kB'", "SET hash_mem_multiplier = 1"][..]] {
                    s.execute("RESET ALL").unwrap();
                    for set in shape_settings.iter().map(String::as_str).chain(budget.iter().copied()) {
                        s.execute(set).unwrap();
                    }
                    let context = format!("round {round}, {shape} with {workers} workers, {budget:?}");
                    for (sql, want) in &expected {
                        let got = sorted(&mut s, sql);
                        assert!(&got == want, "{context}: {sql}\n{} rows, expected {}", got.len(), want.len());
                    }
                    for kind in ["inner", "left", "semi", "anti"] {
                        let sql = match kind {
                            "inner" => "SELECT r.k FROM lk JOIN r USING (k)",
                            "left" => "SELECT r.k FROM lk LEFT JOIN r USING (k)",
                            "semi" => "SELECT lk.k FROM lk WHERE EXISTS (SELECT 1 FROM r WHERE r.k = lk.k)",
                            _ => "SELECT lk.k FROM lk WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.k = lk.k)",
                        };
                        let want = key_rows(kind);
                        let got = sorted(&mut s, sql);
                        assert!(got == want, "{context}: {sql}\n{} rows, expected {}", got.len(), want.len());
                    }
                    for (sql, want) in &counts {
                        assert_eq!(weft_lines(&mut s, sql).unwrap(), vec![want.clone()], "{context}: {sql}");
                    }
                }
            }
        }
    }
}
