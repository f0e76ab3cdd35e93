//! ORDER BY against PostgreSQL 15, row by row: the acceptance tests of the sort.
//!
//! Two random tables (a seeded RNG; `small` loaded with INSERT ... VALUES batches, `big`
//! with COPY from a CSV file) with columns of every sortable type, built identically in
//! weft and in a throwaway PostgreSQL 15 cluster (`PgCluster`, C locale). Every query runs
//! in PostgreSQL (at the default `work_mem` and at `64kB`) and in weft under several
//! configurations: defaults, a tiny `work_mem` (external sort, many runs, multi-pass
//! merges), forced parallelism with each `parallel_sort_strategy`, and without the leader.
//!
//! PostgreSQL's sort is not stable, so rows that tie on the sort keys may come in any order:
//! [`check_order`] compares the sequence of sort-key values exactly and, per group of tied
//! keys, the multiset of whole rows; queries with a unique total order are compared row for
//! row. After every statement weft's `<data dir>/tmp` must be empty.
//!
//! The test skips (passes) when PostgreSQL 15 is not installed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use weft::postgres::PgCluster;
use weft_sql::{Database, Datum, Session};

/// One result row as text, `None` for NULL.
type Row = Vec<Option<String>>;

// ---------------------------------------------------------------------------------------
// The comparator.

/// A sort key visible in the output: its column, and whether it is a float8 (where `-0`
/// and `0` are equal keys that print differently).
#[derive(Clone, Copy, Debug)]
struct Key {
    col: usize,
    float: bool,
}

/// How a query's output order is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// The visible keys (see [`Key`]) order the rows up to ties; tied rows in any order.
    Keys,
    /// The query's order is total (it ends with a unique column): rows compared exactly.
    Total,
    /// Like `Keys`, under LIMIT/OFFSET: the first and the last group of tied keys may hold
    /// any of the tied rows, so only their keys are compared.
    TopN,
}

/// What the output of an ORDER BY query must look like, given PostgreSQL's `expected`.
#[derive(Clone, Debug)]
struct Order {
    keys: Vec<Key>,
    check: Check,
}

impl Order {
    /// `spec`: output column indexes of the sort keys, in order, separated by spaces; an `f`
    /// suffix marks a float8 key (`"0f 2"`).
    fn parse(spec: &str, check: Check) -> Order {
        let keys = spec
            .split_whitespace()
            .map(|k| {
                let float = k.ends_with('f');
                let col = k.trim_end_matches('f').parse().expect("key spec is a column index");
                Key { col, float }
            })
            .collect();
        Order { keys, check }
    }
}

fn show_field(f: &Option<String>) -> String {
    match f {
        None => "NULL".to_string(),
        Some(s) => format!("{s:?}"),
    }
}

fn show_row(row: &[Option<String>]) -> String {
    row.iter().map(show_field).collect::<Vec<_>>().join("|")
}

fn show_rows(rows: &[Row], max: usize) -> String {
    let mut out: Vec<String> = rows.iter().take(max).map(|r| show_row(r)).collect();
    if rows.len() > max {
        out.push(format!("... ({} rows)", rows.len()));
    }
    format!("[{}]", out.join(", "))
}

/// The sort key of a row as compared: float `-0` is the key `0` (they are equal in
/// PostgreSQL's btree order); NaN is the text `NaN` on both sides, equal to itself.
fn sort_key(row: &[Option<String>], keys: &[Key]) -> Vec<Option<String>> {
    keys.iter()
        .map(|k| match &row[k.col] {
            Some(s) if k.float && s == "-0" => Some("0".to_string()),
            other => other.clone(),
        })
        .collect()
}

/// `Ok` when `actual` is a correct output of an ORDER BY query whose PostgreSQL output is
/// `expected`; otherwise what differs, first difference first.
fn check_order(expected: &[Row], actual: &[Row], order: &Order) -> Result<(), String> {
    if expected.len() != actual.len() {
        let first = expected.iter().zip(actual).position(|(e, a)| e != a).unwrap_or(expected.len().min(actual.len()));
        return Err(format!(
            "row count: expected {}, got {}; first difference at row {first}: expected {}, got {}",
            expected.len(),
            actual.len(),
            expected.get(first).map(|r| show_row(r)).unwrap_or_else(|| "(end)".into()),
            actual.get(first).map(|r| show_row(r)).unwrap_or_else(|| "(end)".into()),
        ));
    }
    if order.check == Check::Total {
        return match expected.iter().zip(actual).position(|(e, a)| e != a) {
            None => Ok(()),
            Some(i) => Err(format!(
                "row {i} of {}: expected {}, got {}; expected around it {}, got {}",
                expected.len(),
                show_row(&expected[i]),
                show_row(&actual[i]),
                show_rows(&expected[i.saturating_sub(2)..(i + 3).min(expected.len())], 5),
                show_rows(&actual[i.saturating_sub(2)..(i + 3).min(actual.len())], 5),
            )),
        };
    }
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        if e.len() != a.len() {
            return Err(format!("row {i}: expected {} columns, got {}", e.len(), a.len()));
        }
        if sort_key(e, &order.keys) != sort_key(a, &order.keys) {
            return Err(format!(
                "row {i} of {}: expected sort key {}, got {} (rows: expected {}, got {})",
                expected.len(),
                show_row(&sort_key(e, &order.keys)),
                show_row(&sort_key(a, &order.keys)),
                show_row(e),
                show_row(a),
            ));
        }
    }
    let n = expected.len();
    let mut start = 0;
    while start < n {
        let key = sort_key(&expected[start], &order.keys);
        let mut end = start + 1;
        while end < n && sort_key(&expected[end], &order.keys) == key {
            end += 1;
        }
        let edge = order.check == Check::TopN && (start == 0 || end == n);
        if !edge {
            let mut e: Vec<&Row> = expected[start..end].iter().collect();
            let mut a: Vec<&Row> = actual[start..end].iter().collect();
            e.sort();
            a.sort();
            if e != a {
                let e: Vec<Row> = e.into_iter().cloned().collect();
                let a: Vec<Row> = a.into_iter().cloned().collect();
                return Err(format!(
                    "rows {start}..{end} tie on sort key {} but hold other rows: expected {}, got {}",
                    show_row(&key),
                    show_rows(&e, 6),
                    show_rows(&a, 6),
                ));
            }
        }
        start = end;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Random data.

/// splitmix64: small, seeded, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
}

/// A row of the test tables: `(id int4, a int4, b int8, f float8, flag bool, t text)`.
/// `f` is kept as the literal text both systems parse (`NaN`, `-0`, `1.5e3`, ...).
struct DataRow {
    id: i32,
    a: Option<i32>,
    b: Option<i64>,
    f: Option<String>,
    flag: Option<bool>,
    t: Option<String>,
}

const TABLE_COLUMNS: &str = "(id int4, a int4, b int8, f float8, flag bool, t text)";

/// Values of `b` stay within this bound, except for a few extremes, so that `a + b` can be
/// computed without overflow where the queries filter on it.
const B_SAFE: i64 = 4_000_000_000_000_000_000;

fn gen_text(rng: &mut Rng) -> Option<String> {
    const ASCII: &[char] =
        &['a', 'A', 'b', 'B', 'z', 'Z', '0', '9', ' ', '_', '~', '-', '.', ',', '\'', '"', '\\', '|', '!'];
    const MULTI: &[&str] = &["é", "è", "日", "本", "語", "ß", "Ω", "😀", "ü", "a", "Z", " ", "ǅ", "\u{7f}"];
    const FIXED: &[&str] = &["B", "a", "ab", "A", "b", "Ba", "aB", "a ", " a", "~", "0", "10", "9"];
    const SPLIT: &[&str] = &["é", "è", "ê", "e", "日", "😀", "E", ""];
    // Up to `max` random letters and digits.
    let alnum = |rng: &mut Rng, max: u64| -> String {
        let len = rng.below(max + 1);
        (0..len).map(|_| *rng.pick(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") as char).collect()
    };
    Some(match rng.below(20) {
        0 => return None,
        1 => String::new(),
        2 => (0..rng.range(1, 6)).map(|_| *rng.pick(ASCII)).collect(),
        // A common prefix longer than 8 bytes: 8-byte abbreviated keys tie.
        3 | 4 => format!("common_prefix_{}", alnum(rng, 3)),
        // Equal first 8 bytes, differing (or ending) after them.
        5 => format!("abcdefgh{}", rng.pick(&["", "a", "B", "é", " ", "abcdefgh", "\u{1}", "~"])),
        6 => (0..rng.range(1, 5)).map(|_| *rng.pick(MULTI)).collect(),
        // 7 ASCII bytes, then a multi-byte character across the 8-byte boundary.
        7 => format!("aaaaaaa{}{}", rng.pick(SPLIT), alnum(rng, 2)),
        // Long values sharing a long prefix.
        8 if rng.below(4) == 0 => {
            let ch = *rng.pick(&["x", "é", "y"]);
            format!("{}{}", ch.repeat(rng.range(50, 700) as usize), alnum(rng, 2))
        }
        8 | 9 => rng.pick(FIXED).to_string(),
        10 => rng.range(-50, 50).to_string(),
        _ => alnum(rng, 13),
    })
}


fn gen_float(rng: &mut Rng) -> Option<String> {
    Some(match rng.below(12) {
        0 => return None,
        1 | 2 => rng.pick(&["NaN", "-0", "0", "Infinity", "-Infinity", "-0", "NaN"]).to_string(),
        3 | 4 => rng.pick(&["1.5", "-2.25", "0.1", "1e-5", "100", "-1", "3", "1e300", "-1e-300"]).to_string(),
        5 => format!("{:e}", rng.range(-1000, 1000) as f64 / 8.0),
        x => loop {
            let v = if x < 9 {
                rng.range(-999_999_999, 999_999_999) as f64 * 10f64.powi(rng.range(-30, 30) as i32)
            } else {
                f64::from_bits(rng.next())
            };
            // Finite, normal, and far enough from overflow that `f * 2 + a` is finite.
            if v.is_normal() && v.abs() < 1e300 {
                break format!("{v:e}");
            }
        },
    })
}

fn gen_rows(n: usize, seed: u64) -> Vec<DataRow> {
    let mut rng = Rng(seed);
    (1..=n as i32)
        .map(|id| DataRow {
            id,
            a: match rng.below(10) {
                0 => None,
                1 => Some(*rng.pick(&[i32::MIN, i32::MAX, 0, -1, 1, i32::MIN + 1])),
                2..=5 => Some(rng.range(-5, 5) as i32),
                _ => Some(rng.next() as i32),
            },
            b: match rng.below(10) {
                0 => None,
                1 => Some(*rng.pick(&[i64::MIN, i64::MAX, 0, -1, i32::MIN as i64 - 1, (1 << 53) + 1, i64::MIN + 1])),
                2..=4 => Some(rng.range(-3, 3)),
                _ => Some((rng.next() as i64 >> rng.below(40)) % B_SAFE),
            },
            f: gen_float(&mut rng),
            flag: match rng.below(8) {
                0 => None,
                x => Some(x % 2 == 0),
            },
            t: gen_text(&mut rng),
        })
        .collect()
}

fn sql_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn values_tuple(r: &DataRow) -> String {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "NULL".to_string());
    format!(
        "({}, {}, {}, {}, {}, {})",
        r.id,
        opt(r.a.map(|v| v.to_string())),
        opt(r.b.map(|v| v.to_string())),
        opt(r.f.as_deref().map(sql_literal)),
        opt(r.flag.map(|v| v.to_string())),
        opt(r.t.as_deref().map(sql_literal)),
    )
}

/// A CSV line in PostgreSQL's CSV format: NULL is an unquoted empty field, text is always
/// quoted (so the empty string is `""`).
fn csv_line(r: &DataRow) -> String {
    let opt = |v: Option<String>| v.unwrap_or_default();
    format!(
        "{},{},{},{},{},{}\n",
        r.id,
        opt(r.a.map(|v| v.to_string())),
        opt(r.b.map(|v| v.to_string())),
        opt(r.f.clone()),
        opt(r.flag.map(|v| v.to_string())),
        opt(r.t.as_deref().map(|t| format!("\"{}\"", t.replace('"', "\"\"")))),
    )
}

// ---------------------------------------------------------------------------------------
// Both systems.

fn datum_text(d: &Datum) -> Option<String> {
    d.to_pg_text()
}

fn weft_rows(session: &mut Session, sql: &str) -> Result<Vec<Row>, String> {
    session
        .execute(sql)
        .map(|r| r.rows.iter().map(|row| row.iter().map(datum_text).collect()).collect())
        .map_err(|e| e.message.clone())
}

/// Temp files left in weft's `<data dir>/tmp`.
fn temp_files(data_dir: &Path) -> Vec<String> {
    match std::fs::read_dir(data_dir.join("tmp")) {
        Ok(entries) => entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(e) => vec![format!("(tmp/ unreadable: {e})")],
    }
}

const FIELD_SEP: &str = "\u{1f}";
const NULL_MARK: &str = "\u{2}NULL\u{2}";
const CASE_MARK: &str = "\u{3}case ";

/// Run `statements` (each may hold several `;`-separated statements; the last one's rows
/// are kept) in one psql session after `settings`; one result per statement. Fails on the
/// first error. Empty lines are skipped: psql prints a row as an empty line only when it is
/// a single empty text field, and no query here selects a lone text column.
fn pg_batch(pg: &PgCluster, settings: &[&str], statements: &[String]) -> Vec<Vec<Row>> {
    let mut command = pg.psql_command();
    command.env("PGCLIENTENCODING", "UTF8");
    command.args(["-q", "-A", "-t", "-F", FIELD_SEP, "-P", &format!("null={NULL_MARK}")]);
    for s in settings {
        command.args(["-c", s]);
    }
    for (i, sql) in statements.iter().enumerate() {
        command.args(["-c", &format!("\\echo {CASE_MARK}{i}")]);
        command.args(["-c", sql]);
    }
    let output = command.output().expect("psql runs");
    assert!(output.status.success(), "psql failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).expect("psql prints UTF-8");
    let mut results: Vec<Vec<Row>> = Vec::new();
    for line in stdout.split('\n') {
        if let Some(index) = line.strip_prefix(CASE_MARK) {
            assert_eq!(index.parse::<usize>().unwrap(), results.len(), "psql output out of step");
            results.push(Vec::new());
        } else if !line.is_empty() {
            let row = line.split(FIELD_SEP).map(|f| if f == NULL_MARK { None } else { Some(f.to_string()) }).collect();
            results.last_mut().expect("rows after a case mark").push(row);
        }
    }
    assert_eq!(results.len(), statements.len(), "psql printed every case");
    results
}

fn pg_error(pg: &PgCluster, sql: &str) -> String {
    match pg.query(sql) {
        Ok(rows) => panic!("PostgreSQL accepted {sql}: {rows:?}"),
        Err(e) => {
            e.message.lines().find_map(|l| l.trim().strip_prefix("ERROR:  ").map(str::to_string)).unwrap_or(e.message)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Configurations and queries.

/// A weft configuration: a name, SET statements, and whether PostgreSQL's side runs with
/// `work_mem = '64kB'` too.
struct Config {
    name: &'static str,
    sets: &'static [&'static str],
    small_work_mem: bool,
}

const PARALLEL: [&str; 2] = ["SET max_parallel_workers_per_gather = 4", "SET min_parallel_table_scan_size = 0"];

const CONFIGS: &[Config] = &[
    Config { name: "defaults", sets: &[], small_work_mem: false },
    Config { name: "work_mem=64kB", sets: &["SET work_mem = '64kB'"], small_work_mem: true },
    Config {
        name: "parallel partition",
        sets: &[PARALLEL[0], PARALLEL[1], "SET parallel_sort_strategy = 'partition'"],
        small_work_mem: false,
    },
    Config {
        name: "parallel leader_merge",
        sets: &[PARALLEL[0], PARALLEL[1], "SET parallel_sort_strategy = 'leader_merge'"],
        small_work_mem: false,
    },
    Config {
        name: "parallel partition work_mem=64kB",
        sets: &[PARALLEL[0], PARALLEL[1], "SET parallel_sort_strategy = 'partition'", "SET work_mem = '64kB'"],
        small_work_mem: true,
    },
    Config {
        name: "parallel leader_merge work_mem=64kB",
        sets: &[PARALLEL[0], PARALLEL[1], "SET parallel_sort_strategy = 'leader_merge'", "SET work_mem = '64kB'"],
        small_work_mem: true,
    },
    Config {
        name: "parallel partition no leader work_mem=64kB",
        sets: &[PARALLEL[0], PARALLEL[1], "SET parallel_leader_participation = off", "SET work_mem = '64kB'"],
        small_work_mem: true,
    },
    Config {
        name: "parallel leader_merge no leader trace_sort",
        sets: &[
            PARALLEL[0],
            PARALLEL[1],
            "SET parallel_sort_strategy = 'leader_merge'",
            "SET parallel_leader_participation = off",
            "SET trace_sort = on",
        ],
        small_work_mem: false,
    },
];

use Check::{Keys, TopN, Total};

/// (SQL with `{t}` for the table name, sort-key spec for [`Order::parse`], check).
/// Statements before the last `;` are set-up (CREATE TABLE AS, INSERT ... SELECT) whose
/// effect the last statement reads.
const CASES: &[(&str, &str, Check)] = &[
    // Every type, both directions, both NULL placements.
    ("SELECT * FROM {t} ORDER BY id", "", Total),
    ("SELECT * FROM {t} ORDER BY id DESC", "", Total),
    ("SELECT a, id FROM {t} ORDER BY a", "0", Keys),
    ("SELECT a, id FROM {t} ORDER BY a DESC", "0", Keys),
    ("SELECT a, id FROM {t} ORDER BY a NULLS FIRST", "0", Keys),
    ("SELECT a, id FROM {t} ORDER BY a DESC NULLS LAST", "0", Keys),
    // (int4 or bool, int8) sorted by both: the sort's pair form, spilled as runs of pairs
    // at 64kB; a NULL `b` makes a participant leave pair form midway.
    ("SELECT a, b FROM {t} ORDER BY a, b", "", Total),
    ("SELECT a, b FROM {t} ORDER BY a DESC NULLS LAST, b", "", Total),
    ("SELECT flag, b FROM {t} ORDER BY flag NULLS FIRST, b", "", Total),
    ("SELECT a, b FROM {t} WHERE b IS NOT NULL ORDER BY a, b", "", Total),
    ("SELECT b, id FROM {t} ORDER BY b", "0", Keys),
    ("SELECT b, id FROM {t} ORDER BY b DESC", "0", Keys),
    ("SELECT b, id FROM {t} ORDER BY b ASC NULLS FIRST", "0", Keys),
    ("SELECT f, id FROM {t} ORDER BY f", "0f", Keys),
    ("SELECT f, id FROM {t} ORDER BY f DESC", "0f", Keys),
    ("SELECT f, id FROM {t} ORDER BY f NULLS FIRST", "0f", Keys),
    ("SELECT f, id FROM {t} ORDER BY f DESC NULLS LAST", "0f", Keys),
    ("SELECT flag, id FROM {t} ORDER BY flag", "0", Keys),
    ("SELECT flag, id FROM {t} ORDER BY flag DESC", "0", Keys),
    ("SELECT flag, id FROM {t} ORDER BY flag NULLS FIRST", "0", Keys),
    ("SELECT t, id FROM {t} ORDER BY t", "0", Keys),
    ("SELECT t, id FROM {t} ORDER BY t DESC", "0", Keys),
    ("SELECT t, id FROM {t} ORDER BY t NULLS FIRST", "0", Keys),
    ("SELECT t, id, a FROM {t} ORDER BY t DESC NULLS LAST", "0", Keys),
    ("SELECT t, f, flag FROM {t} ORDER BY t ASC", "0", Keys),
    // Multi-column keys, mixed directions.
    ("SELECT flag, a, t, id FROM {t} ORDER BY flag, a DESC, t NULLS FIRST", "0 1 2", Keys),
    ("SELECT t, f, b FROM {t} ORDER BY t DESC, f ASC NULLS FIRST, b", "0 1f 2", Keys),
    ("SELECT f, flag, t, id FROM {t} ORDER BY f DESC NULLS LAST, flag, t DESC", "0f 1 2", Keys),
    ("SELECT a % 3, f, id FROM {t} ORDER BY 1 DESC, 2 NULLS FIRST, 3", "", Total),
    ("SELECT * FROM {t} ORDER BY flag DESC, t, f DESC, b, a, id", "", Total),
    ("SELECT b, a, id FROM {t} ORDER BY b DESC NULLS LAST, a NULLS FIRST, id DESC", "", Total),
    // Expressions.
    (
        "SELECT a + b AS s, id FROM {t} WHERE b > -4000000000000000000 AND b < 4000000000000000000 ORDER BY a + b",
        "0",
        Keys,
    ),
    (
        "SELECT a + b AS s, id FROM {t} WHERE b > -4000000000000000000 AND b < 4000000000000000000 ORDER BY s DESC, id",
        "",
        Total,
    ),
    ("SELECT length(t), t, id FROM {t} ORDER BY length(t) DESC, t", "0 1", Keys),
    ("SELECT id, t FROM {t} ORDER BY length(t), id", "", Total),
    ("SELECT md5(t), id FROM {t} ORDER BY md5(t)", "0", Keys),
    ("SELECT id, t FROM {t} ORDER BY md5(t) DESC, id", "", Total),
    ("SELECT f * 2 + a, id FROM {t} ORDER BY 1", "0f", Keys),
    ("SELECT -f AS neg, f, id FROM {t} ORDER BY neg NULLS FIRST, id", "", Total),
    ("SELECT upper(t) AS u, id FROM {t} ORDER BY u, id", "", Total),
    ("SELECT a::text AS s, id FROM {t} ORDER BY s DESC, id", "", Total),
    ("SELECT (b % 1000000000000)::float8 / 3 AS x, id FROM {t} ORDER BY x, id", "", Total),
    ("SELECT t || '!' AS x, id FROM {t} ORDER BY 1, 2", "", Total),
    ("SELECT coalesce(t, 'zzz') AS x, id FROM {t} ORDER BY x", "0", Keys),
    ("SELECT abs(a % 10) AS m, flag, id FROM {t} ORDER BY m, flag DESC", "0 1", Keys),
    // Output names and positions; a column not in the select list.
    ("SELECT id, a AS x, t FROM {t} ORDER BY x DESC, id", "", Total),
    ("SELECT id, a AS x, t FROM {t} ORDER BY 2 DESC, 1", "", Total),
    ("SELECT id, a AS b, b AS a FROM {t} ORDER BY a, id", "", Total),
    ("SELECT t AS \"Name\", id FROM {t} ORDER BY \"Name\" DESC, id", "", Total),
    ("SELECT id, t FROM {t} ORDER BY a, id", "", Total),
    ("SELECT t, flag FROM {t} ORDER BY b DESC, id", "", Total),
    ("SELECT id FROM {t} ORDER BY f, t, id", "", Total),
    ("SELECT id, a FROM {t} ORDER BY {t}.f DESC NULLS LAST, {t}.id", "", Total),
    // LIMIT / OFFSET.
    ("SELECT a, id FROM {t} ORDER BY a LIMIT 0", "0", Keys),
    ("SELECT a, id FROM {t} ORDER BY a, id OFFSET 1000000", "", Total),
    ("SELECT a, id FROM {t} ORDER BY a, id LIMIT 1000000", "", Total),
    ("SELECT t, id FROM {t} ORDER BY t DESC, id LIMIT 25 OFFSET 100", "", Total),
    ("SELECT f, id FROM {t} ORDER BY f DESC LIMIT 37", "0f", TopN),
    ("SELECT flag, a FROM {t} ORDER BY flag LIMIT 10 OFFSET 5", "0", TopN),
    ("SELECT t, a FROM {t} ORDER BY t NULLS FIRST LIMIT 300", "0", TopN),
    ("SELECT t, id FROM {t} ORDER BY t NULLS FIRST, id OFFSET 2990", "", Total),
    ("SELECT id FROM {t} ORDER BY id DESC LIMIT 1", "", Total),
    // A bounded sort whose first key is a table column turns rows away by that column
    // before decoding them (int4, int8, text; NULLs first or last; after filters and
    // projections that move the column).
    ("SELECT id, a FROM {t} ORDER BY a DESC, id LIMIT 11", "", Total),
    ("SELECT id FROM {t} ORDER BY a NULLS FIRST, id LIMIT 9 OFFSET 3", "", Total),
    ("SELECT id, b FROM {t} WHERE id % 3 <> 1 ORDER BY b DESC NULLS LAST, id LIMIT 17", "", Total),
    ("SELECT id FROM {t} ORDER BY b, id LIMIT 5", "", Total),
    ("SELECT id, t FROM {t} WHERE a IS NOT NULL ORDER BY t, id LIMIT 23", "", Total),
    ("SELECT id FROM {t} ORDER BY t DESC, id LIMIT 40", "", Total),
    ("SELECT * FROM {t} ORDER BY f, id LIMIT 5000 OFFSET 2", "", Total),
    ("SELECT b, id FROM {t} ORDER BY b LIMIT NULL", "0", Keys),
    ("SELECT t, b, id FROM {t} ORDER BY t DESC, b LIMIT ALL OFFSET 7", "0 1", TopN),
    // USING < / >, FETCH FIRST.
    ("SELECT b, id FROM {t} ORDER BY b USING <, id", "", Total),
    ("SELECT f, t, id FROM {t} ORDER BY f USING >, t USING < NULLS FIRST, id", "", Total),
    ("SELECT a, id FROM {t} ORDER BY a USING > NULLS LAST, id USING >", "", Total),
    ("SELECT t, id FROM {t} ORDER BY t DESC, id FETCH FIRST 15 ROWS ONLY", "", Total),
    ("SELECT f, id FROM {t} ORDER BY f, id OFFSET 10 ROWS FETCH NEXT 1 ROW ONLY", "", Total),
    ("SELECT flag, id FROM {t} ORDER BY flag NULLS FIRST, id DESC FETCH FIRST ROW ONLY", "", Total),
    // Numeric LIMIT / OFFSET values are rounded; one name for the same expression twice.
    ("SELECT id, t FROM {t} ORDER BY id LIMIT 2.5 OFFSET 1.5", "", Total),
    ("SELECT id, t FROM {t} ORDER BY t DESC, id LIMIT 4.4::float8", "", Total),
    ("SELECT id AS x, id AS x, a FROM {t} ORDER BY x DESC", "", Total),
    // Items after `*`, and ORDER BY repeating them or naming positions past the `*`.
    ("SELECT *, a % 5 FROM {t} ORDER BY a % 5 DESC, id", "", Total),
    ("SELECT *, -f FROM {t} ORDER BY 7, id DESC", "", Total),
    ("SELECT {t}.*, length(t) FROM {t} ORDER BY length(t) NULLS FIRST, 1", "", Total),
    // Quoted literals take the float8 type of the other rows (PostgreSQL's unknown).
    ("SELECT f, id FROM {t} WHERE id < 40 UNION ALL SELECT 'NaN', 0 UNION ALL SELECT '-Infinity', -1 ORDER BY 1, 2", "", Total),
    // Subqueries in FROM.
    ("SELECT s.a, s.id, s.t FROM (SELECT a, id, t FROM {t} ORDER BY t, id LIMIT 100) s ORDER BY a DESC, id", "", Total),
    ("SELECT x, y FROM (SELECT f AS x, id AS y FROM {t} ORDER BY f DESC, id LIMIT 500) s ORDER BY y", "", Total),
    ("SELECT count(*), sum(id), min(id), max(id) FROM (SELECT id FROM {t} ORDER BY b, id LIMIT 777 OFFSET 3) s", "", Total),
    (
        "SELECT * FROM (SELECT * FROM (SELECT id, t FROM {t} ORDER BY id DESC LIMIT 300) a ORDER BY t, id LIMIT 50) b ORDER BY id",
        "",
        Total,
    ),
    ("SELECT s.t, s.n FROM (SELECT t, count(*) AS n FROM {t} GROUP BY t) s ORDER BY n DESC, t LIMIT 40", "", Total),
    // A subquery that is a whole sort streams its rows into the query above it, which may
    // stop reading early; its order is the one the outer rows come in.
    ("SELECT count(*), sum(id), min(t), max(t) FROM (SELECT id, t FROM {t} ORDER BY t, id) s", "", Total),
    ("SELECT id, t FROM (SELECT id, t FROM {t} ORDER BY t DESC, id) s LIMIT 30", "", Total),
    ("SELECT s.id, s.f FROM (SELECT id, f FROM {t} ORDER BY f NULLS FIRST, id) s WHERE s.id % 7 = 3 LIMIT 25 OFFSET 2", "", Total),
    ("SELECT a, count(*), min(id) FROM (SELECT a, id FROM {t} ORDER BY id DESC) s GROUP BY a ORDER BY a", "", Total),
    // Columns of such a subquery that the query above never reads come out NULL, not
    // decoded: read by a filter only, by a projection only, by grouping, by a join.
    ("SELECT count(*), sum(b) FROM (SELECT * FROM {t} ORDER BY t, id) s WHERE s.f > 0", "", Total),
    ("SELECT s.a % 1000, s.id FROM (SELECT t, a, id, flag FROM {t} ORDER BY t DESC, id) s WHERE s.flag LIMIT 40", "", Total),
    ("SELECT a % 3 AS g, max(t), count(flag) FROM (SELECT * FROM {t} ORDER BY b DESC, id) s GROUP BY a % 3 ORDER BY g", "", Total),
    ("SELECT count(*), sum(u.b) FROM (SELECT * FROM {t} ORDER BY f, id) s JOIN {t} u ON u.id = s.id WHERE u.t = s.t", "", Total),
    // LIMIT / OFFSET over such a subquery stream too (rows before the window counted,
    // not decoded), with the columns the query above never reads left NULL.
    ("SELECT count(*), sum(s.a), min(s.id) FROM (SELECT * FROM {t} ORDER BY t DESC, id OFFSET 7) s", "", Total),
    ("SELECT s.id, s.f FROM (SELECT * FROM {t} ORDER BY f NULLS FIRST, id LIMIT 2000 OFFSET 13) s WHERE s.id % 5 = 1", "", Total),
    ("SELECT count(*), max(s.t) FROM (SELECT t, id FROM {t} ORDER BY a, id LIMIT 100000 OFFSET 2999) s", "", Total),
    ("SELECT s.id FROM (SELECT id, b FROM {t} ORDER BY b DESC, id OFFSET 1000000) s", "", Total),
    ("SELECT g, count(*) FROM (SELECT a % 3 AS g, t FROM {t} ORDER BY t, id LIMIT 1500 OFFSET 1) s GROUP BY g ORDER BY g", "", Total),
    // WHERE filters leaving no row or one.
    ("SELECT * FROM {t} WHERE id < 0 ORDER BY t", "", Total),
    ("SELECT * FROM {t} WHERE id = 17 ORDER BY f DESC, t", "", Total),
    ("SELECT t, a, id FROM {t} WHERE flag ORDER BY t, a", "0 1", Keys),
    ("SELECT f, id FROM {t} WHERE f >= 'Infinity' ORDER BY f DESC, id", "", Total),
    ("SELECT f, t, id FROM {t} WHERE f = 0 ORDER BY f, t", "0f 1", Keys),
    // GROUP BY + ORDER BY an aggregate.
    ("SELECT a % 7 AS k, count(*), min(t), max(f) FROM {t} GROUP BY 1 ORDER BY 2 DESC, 1", "", Total),
    ("SELECT flag, sum(b), count(*) FROM {t} GROUP BY flag ORDER BY sum(b) DESC NULLS LAST", "1", Keys),
    ("SELECT t, count(*) FROM {t} GROUP BY t ORDER BY count(*) DESC, t LIMIT 20", "", Total),
    ("SELECT b % 5 AS k, max(t), min(a) FROM {t} GROUP BY 1 ORDER BY max(t) DESC NULLS LAST, k", "", Total),
    ("SELECT length(t) AS len, count(*) FROM {t} GROUP BY length(t) ORDER BY len NULLS FIRST", "", Total),
    ("SELECT a % 4 AS k, count(*) FROM {t} GROUP BY 1 ORDER BY min(f) NULLS FIRST, k", "", Total),
    ("SELECT flag, max(f), min(f) FROM {t} GROUP BY flag ORDER BY max(f) DESC, min(f)", "1f 2f", Keys),
    // CREATE TABLE AS / INSERT ... SELECT with ORDER BY, read back.
    (
        "DROP TABLE IF EXISTS sorted_{t}; CREATE TABLE sorted_{t} AS SELECT id, t, f, a FROM {t} ORDER BY t DESC, id; \
         SELECT * FROM sorted_{t} ORDER BY f, id",
        "",
        Total,
    ),
    (
        "DROP TABLE IF EXISTS top_{t}; CREATE TABLE top_{t} AS SELECT id, b, flag FROM {t} ORDER BY b DESC NULLS LAST, id LIMIT 321; \
         SELECT * FROM top_{t} ORDER BY flag, b, id",
        "",
        Total,
    ),
    (
        "DROP TABLE IF EXISTS ins_{t}; CREATE TABLE ins_{t} (id int4, t text); \
         INSERT INTO ins_{t} SELECT id, t FROM {t} ORDER BY t, id LIMIT 1000; SELECT * FROM ins_{t} ORDER BY id",
        "",
        Total,
    ),
    (
        "DROP TABLE IF EXISTS all_{t}; CREATE TABLE all_{t} AS SELECT * FROM {t} ORDER BY t DESC, f, id; \
         SELECT * FROM all_{t} ORDER BY id",
        "",
        Total,
    ),
    (
        "DROP TABLE IF EXISTS hid_{t}; CREATE TABLE hid_{t} AS SELECT id, flag FROM {t} ORDER BY f DESC, id LIMIT 2000; \
         SELECT * FROM hid_{t} ORDER BY id",
        "",
        Total,
    ),
    (
        "DROP TABLE IF EXISTS ins2_{t}; CREATE TABLE ins2_{t} (id int4, a int4, b int8, f float8, flag bool, t text); \
         INSERT INTO ins2_{t} SELECT * FROM {t} ORDER BY b, id; SELECT * FROM ins2_{t} ORDER BY id",
        "",
        Total,
    ),
    // Every row ties on the first key.
    ("SELECT id, t FROM {t} ORDER BY id * 0, t DESC, id", "", Total),
    ("SELECT b IS NULL AS n, a, id FROM {t} ORDER BY 1, 2 DESC", "0 1", Keys),
    // Not from a table (run once, with the first table).
    // Tuples larger than a 64kB work_mem.
    (
        "SELECT i, length(t), md5(t) FROM (SELECT i, repeat(md5(i::text), 1 + (i % 7) * 400) AS t \
         FROM generate_series(1, 200) i) s ORDER BY t DESC, i",
        "",
        Total,
    ),
    ("SELECT x FROM generate_series(1, 30000) x ORDER BY x % 1000 DESC, x LIMIT 50", "", Total),
    ("SELECT x, x % 7 FROM generate_series(-5000, 5000) x ORDER BY 2, 1 DESC", "", Total),
    (
        "SELECT x, y FROM (VALUES (1.5::float8, 1), ('NaN', 2), ('-Infinity', 3), ('-0', 4), (0, 5), (NULL, 6), \
         ('Infinity', 7), (-1e308, 8), ('1e-300', 9)) v(x, y) ORDER BY x DESC, y",
        "",
        Total,
    ),
    ("SELECT x, length(x) FROM (VALUES ('b'), ('B'), ('a'), (''), (NULL), ('é')) v(x) ORDER BY x USING >", "", Total),
];

struct Table {
    name: &'static str,
    rows: usize,
    seed: u64,
    copy: bool,
}

const TABLES: &[Table] = &[
    Table { name: "small", rows: 3_000, seed: 0x5EED_0001, copy: false },
    Table { name: "big", rows: 50_000, seed: 0x5EED_0002, copy: true },
];

/// `WEFT_SORT_SEED=n` varies the random tables (for exploring; failures name the seed).
fn seed_offset() -> u64 {
    std::env::var("WEFT_SORT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// Create and fill `table` on both sides: INSERT ... VALUES batches or COPY from a CSV file.
fn load(table: &Table, pg: &PgCluster, session: &mut Session, scratch: &Path) {
    let rows = gen_rows(table.rows, table.seed.wrapping_add(seed_offset()));
    let create = format!("CREATE TABLE {} {TABLE_COLUMNS}", table.name);
    pg.query(&create).unwrap_or_else(|e| panic!("PostgreSQL: {create}: {e}"));
    session.execute(&create).unwrap_or_else(|e| panic!("weft: {create}: {e:?}"));
    if table.copy {
        let path = scratch.join(format!("{}.csv", table.name));
        let text: String = rows.iter().map(csv_line).collect();
        std::fs::write(&path, text).unwrap();
        let path = path.display().to_string();
        pg.run(&[&format!("\\copy {} FROM '{path}' WITH (FORMAT csv)", table.name)])
            .unwrap_or_else(|e| panic!("PostgreSQL \\copy: {e}"));
        let copy = format!("COPY {} FROM '{path}' WITH (FORMAT csv)", table.name);
        session.execute(&copy).unwrap_or_else(|e| panic!("weft: {copy}: {e:?}"));
    } else {
        for batch in rows.chunks(500) {
            let values: Vec<String> = batch.iter().map(values_tuple).collect();
            let insert = format!("INSERT INTO {} VALUES {}", table.name, values.join(", "));
            pg.query(&insert).unwrap_or_else(|e| panic!("PostgreSQL INSERT: {e}"));
            session.execute(&insert).unwrap_or_else(|e| panic!("weft INSERT: {e:?}"));
        }
    }
}

fn open_weft(dir: &Path) -> std::sync::Arc<Database> {
    Database::open(dir, &[("max_worker_processes".into(), "4".into())]).unwrap()
}

fn configured_session(db: &std::sync::Arc<Database>, config: &Config) -> Session {
    let mut session = db.session();
    for set in config.sets {
        session.execute(set).unwrap_or_else(|e| panic!("weft: {set}: {e:?}"));
    }
    session
}

/// The configurations do what they are meant to: on `big`, a tiny `work_mem` makes an
/// external sort with a multi-pass merge, forced parallelism gives the sort several
/// participants with the configured strategy, and `trace_sort` logs.
fn check_coverage(session: &mut Session, config: &Config) -> Result<(), String> {
    let sql = "SELECT * FROM big ORDER BY t, id";
    let result = session.execute(sql).map_err(|e| format!("{sql}: {}", e.message))?;
    let reports = session.last_sort_reports();
    let [report] = reports.as_slice() else {
        return Err(format!("{sql}: expected one sort report, got {}", reports.len()));
    };
    let set = |text: &str| config.sets.iter().any(|s| s.contains(text));
    let mut problems = Vec::new();
    if config.small_work_mem {
        if report.method.name() != "external merge" || report.temp_bytes == 0 {
            problems.push(format!(
                "expected an external sort, got {} ({} temp bytes)",
                report.explain_line(),
                report.temp_bytes
            ));
        }
        if report.merge_passes == 0 {
            problems.push("expected a multi-pass merge (a pass before the final merge), got none".to_string());
        }
    }
    if set("max_parallel_workers_per_gather") {
        if report.participants.len() < 2 {
            problems.push(format!("expected a parallel sort, got {} participant(s)", report.participants.len()));
        }
        let strategy = if set("leader_merge") { "leader_merge" } else { "partition" };
        if report.strategy.name() != strategy {
            problems.push(format!("expected strategy {strategy}, got {}", report.strategy.name()));
        }
    }
    if set("trace_sort = on") && !result.notices.iter().any(|n| n.starts_with("LOG:")) {
        problems.push(format!("trace_sort is on but the sort logged nothing: {:?}", result.notices));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{sql}: {}", problems.join("; ")))
    }
}

fn report(mismatches: &[String], what: &str) {
    const SHOWN: usize = 40;
    if mismatches.is_empty() {
        return;
    }
    let mut text = format!("{} {what} (WEFT_SORT_SEED={}):\n", mismatches.len(), seed_offset());
    for m in mismatches.iter().take(SHOWN) {
        let _ = writeln!(text, "{m}\n");
    }
    if mismatches.len() > SHOWN {
        let _ = writeln!(text, "... and {} more", mismatches.len() - SHOWN);
    }
    panic!("{text}");
}

// One test per table, so that the two run side by side.
#[test]
fn order_by_matches_postgres_small() {
    order_by_matches_postgres(&TABLES[0]);
}

#[test]
fn order_by_matches_postgres_big() {
    order_by_matches_postgres(&TABLES[1]);
}

/// Every case over `table` (and the cases naming no table, with the first table), in
/// every configuration, against PostgreSQL's answer.
fn order_by_matches_postgres(table: &Table) {
    if !PgCluster::available() {
        eprintln!("PostgreSQL 15 is not installed: skipping the ORDER BY oracle comparison");
        return;
    }
    let started = Instant::now();
    let pg = PgCluster::start().expect("PostgreSQL starts");
    let dir = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let db = open_weft(dir.path());
    let mut loader = db.session();
    load(table, &pg, &mut loader, scratch.path());
    eprintln!("loaded in {:?}", started.elapsed());

    let mut mismatches = Vec::new();
    {
        let cases: Vec<(String, Order)> = CASES
            .iter()
            .filter(|(sql, _, _)| sql.contains("{t}") || table.name == TABLES[0].name)
            .map(|(sql, keys, check)| (sql.replace("{t}", table.name), Order::parse(keys, *check)))
            .collect();
        let sqls: Vec<String> = cases.iter().map(|(sql, _)| sql.clone()).collect();
        for small_work_mem in [false, true] {
            let pg_settings: &[&str] = if small_work_mem { &["SET work_mem = '64kB'"] } else { &[] };
            let expected = pg_batch(&pg, pg_settings, &sqls);
            for config in CONFIGS.iter().filter(|c| c.small_work_mem == small_work_mem) {
                let mut session = configured_session(&db, config);
                for ((sql, order), expected) in cases.iter().zip(&expected) {
                    let outcome = weft_rows(&mut session, sql);
                    let leftovers = temp_files(dir.path());
                    if !leftovers.is_empty() {
                        mismatches.push(format!("[{}] {sql}\n  temp files left in tmp/: {leftovers:?}", config.name));
                    }
                    let problem = match outcome {
                        Err(e) => Some(format!("weft failed: {e}")),
                        Ok(actual) => check_order(expected, &actual, order).err(),
                    };
                    if let Some(problem) = problem {
                        mismatches.push(format!("[{}] {sql}\n  {problem}", config.name));
                    }
                }
                if table.name == "big" {
                    if let Err(problem) = check_coverage(&mut session, config) {
                        mismatches.push(format!("[{}] coverage: {problem}", config.name));
                    }
                }
            }
        }
        eprintln!("{} done after {:?}", table.name, started.elapsed());
    }
    report(&mismatches, "ORDER BY mismatches between weft and PostgreSQL 15");
}

/// Statements that fail: the same error as PostgreSQL's, under every configuration, and no
/// temp file left behind (also when the error comes in the middle of feeding a sort).
#[test]
fn order_by_errors_match_postgres() {
    if !PgCluster::available() {
        eprintln!("PostgreSQL 15 is not installed: skipping the ORDER BY error comparison");
        return;
    }
    let pg = PgCluster::start().expect("PostgreSQL starts");
    let dir = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let db = open_weft(dir.path());
    let table = &TABLES[0];
    load(table, &pg, &mut db.session(), scratch.path());
    let n = table.rows;
    // Rejected while planning: once, at the default settings.
    let plan_errors = [
        "SELECT id, t FROM small ORDER BY 5",
        "SELECT id FROM small ORDER BY 0",
        "SELECT id, t FROM small ORDER BY 3 DESC",
        "SELECT id FROM small ORDER BY nosuch",
        "SELECT a AS x FROM small ORDER BY x + 1",
        "SELECT a, count(*) FROM small GROUP BY a ORDER BY b",
        "SELECT id FROM small ORDER BY id LIMIT -1",
        "SELECT id FROM small ORDER BY id OFFSET -1",
        "SELECT id FROM small ORDER BY 1.5",
        "SELECT id FROM small ORDER BY 'abc'",
        "SELECT f FROM small ORDER BY f COLLATE \"C\"",
        "SELECT id FROM small ORDER BY id USING <=",
        "SELECT id AS x, a AS x FROM small ORDER BY x",
        "SELECT small.a, s2.a FROM small JOIN small s2 USING (id) ORDER BY a",
        "SELECT id FROM small ORDER BY id LIMIT 1 FETCH FIRST 1 ROW ONLY",
    ];
    // Raised while the sort is being fed (after most rows went in): under every
    // configuration, since each must clean up its runs and temp files.
    let run_errors = [
        "SELECT id, t FROM small ORDER BY a + 1".to_string(),
        format!("SELECT id, t, f FROM small ORDER BY t, 1 / (id - {})", n - 10),
        format!("SELECT id, t, f FROM small ORDER BY f DESC, 1 / (id - {}) LIMIT 10", n - 10),
        format!("CREATE TABLE never AS SELECT id, t FROM small ORDER BY t, 1 / (id - {})", n - 10),
    ];
    let mut mismatches = Vec::new();
    for config in CONFIGS {
        let mut session = configured_session(&db, config);
        let statements: Vec<String> = if config.sets.is_empty() {
            plan_errors.iter().map(|s| s.to_string()).chain(run_errors.iter().cloned()).collect()
        } else {
            run_errors.to_vec()
        };
        for sql in &statements {
            let expected = pg_error(&pg, sql);
            match session.execute(sql) {
                Ok(r) => mismatches.push(format!(
                    "[{}] {sql}\n  weft succeeded ({} rows), PostgreSQL said: ERROR:  {expected}",
                    config.name,
                    r.rows.len()
                )),
                Err(e) if e.message != expected => mismatches.push(format!(
                    "[{}] {sql}\n  pg:   ERROR:  {expected}\n  weft: ERROR:  {}",
                    config.name, e.message
                )),
                Err(_) => {}
            }
            let leftovers = temp_files(dir.path());
            if !leftovers.is_empty() {
                mismatches.push(format!("[{}] {sql}\n  temp files left in tmp/: {leftovers:?}", config.name));
            }
        }
        // The failed CREATE TABLE AS left no table.
        if let Ok(r) = session.execute("SELECT count(*) FROM never") {
            mismatches.push(format!("[{}] failed CREATE TABLE AS left a table never: {:?}", config.name, r.rows));
        }
    }
    report(&mismatches, "ORDER BY error mismatches");
}

// ---------------------------------------------------------------------------------------
// The comparator itself.

fn rows(text: &[&str]) -> Vec<Row> {
    text.iter()
        .map(|line| line.split('|').map(|f| if f == "NULL" { None } else { Some(f.to_string()) }).collect())
        .collect()
}

#[test]
fn comparator_rejects_wrong_orders() {
    let keys = |spec: &str| Order::parse(spec, Keys);
    let expected = rows(&["1|a", "1|b", "2|c", "NaN|d", "NaN|e", "NULL|f"]);
    // Ties in another order are fine; everything else is not.
    let ties_swapped = rows(&["1|b", "1|a", "2|c", "NaN|e", "NaN|d", "NULL|f"]);
    assert!(check_order(&expected, &expected, &keys("0f")).is_ok());
    assert!(check_order(&expected, &ties_swapped, &keys("0f")).is_ok());
    let keys_swapped = rows(&["1|a", "2|c", "1|b", "NaN|d", "NaN|e", "NULL|f"]);
    assert!(check_order(&expected, &keys_swapped, &keys("0f")).is_err());
    let nulls_first = rows(&["NULL|f", "1|a", "1|b", "2|c", "NaN|d", "NaN|e"]);
    assert!(check_order(&expected, &nulls_first, &keys("0f")).is_err());
    let wrong_row_in_tie = rows(&["1|a", "1|a", "2|c", "NaN|d", "NaN|e", "NULL|f"]);
    assert!(check_order(&expected, &wrong_row_in_tie, &keys("0f")).is_err());
    let rows_moved_across_ties = rows(&["1|a", "1|d", "2|c", "NaN|b", "NaN|e", "NULL|f"]);
    assert!(check_order(&expected, &rows_moved_across_ties, &keys("0f")).is_err());
    assert!(check_order(&expected, &expected[..5], &keys("0f")).is_err());
    assert!(check_order(&expected[..5], &expected, &keys("0f")).is_err());
    // A total order compares rows exactly.
    assert!(check_order(&expected, &ties_swapped, &Order::parse("", Total)).is_err());
    // -0 and 0 are one float key (they may come in either order), but not one text key.
    let zeros = rows(&["-1|x", "-0|a", "0|b", "-0|c", "1|y"]);
    let zeros_swapped = rows(&["-1|x", "0|b", "-0|c", "-0|a", "1|y"]);
    assert!(check_order(&zeros, &zeros_swapped, &keys("0f")).is_ok());
    assert!(check_order(&zeros, &zeros_swapped, &keys("0")).is_err());
    let zero_row_changed = rows(&["-1|x", "0|a", "0|b", "-0|c", "1|y"]);
    assert!(check_order(&zeros, &zero_row_changed, &keys("0f")).is_err());
    // Multi-column keys: the second key orders within the first.
    let two = rows(&["1|a|x", "1|b|y", "2|a|z"]);
    assert!(check_order(&two, &rows(&["1|b|y", "1|a|x", "2|a|z"]), &keys("0 1")).is_err());
    assert!(check_order(&two, &rows(&["1|b|y", "1|a|x", "2|a|z"]), &keys("0")).is_ok());
    // Under LIMIT, the first and last tie groups may hold any tied rows; inner ones not.
    let top = rows(&["1|a", "2|b", "2|c", "3|d"]);
    assert!(check_order(&top, &rows(&["1|q", "2|b", "2|c", "3|r"]), &Order::parse("0", TopN)).is_ok());
    assert!(check_order(&top, &rows(&["1|q", "2|b", "2|x", "3|r"]), &Order::parse("0", TopN)).is_err());
    assert!(check_order(&top, &rows(&["1|q", "2|b", "2|c", "4|d"]), &Order::parse("0", TopN)).is_err());
}

#[test]
fn data_covers_the_edge_cases() {
    let rows = gen_rows(3_000, TABLES[0].seed);
    let texts: Vec<&str> = rows.iter().filter_map(|r| r.t.as_deref()).collect();
    let floats: Vec<&str> = rows.iter().filter_map(|r| r.f.as_deref()).collect();
    for special in ["NaN", "-0", "0", "Infinity", "-Infinity"] {
        assert!(floats.contains(&special), "no {special}");
    }
    assert!(texts.contains(&""));
    assert!(texts.iter().any(|t| t.len() > 8 && !t.is_ascii()));
    assert!(texts.iter().any(|t| t.starts_with("common_prefix_") && t.len() > 14));
    assert!(texts.iter().any(|t| t.len() > 300));
    assert!(texts.iter().any(|t| t.contains(['"', ',', '\''])));
    let mut counts = BTreeMap::new();
    for r in &rows {
        *counts.entry((r.a.is_none(), r.b.is_none(), r.f.is_none(), r.flag.is_none(), r.t.is_none())).or_insert(0) += 1;
    }
    assert!(rows.iter().any(|r| r.a.is_none()) && rows.iter().any(|r| r.b.is_none()));
    assert!(rows.iter().any(|r| r.flag.is_none()) && rows.iter().any(|r| r.t.is_none()));
    assert!(rows.iter().any(|r| r.a == Some(i32::MIN)) && rows.iter().any(|r| r.b == Some(i64::MAX)));
    assert!(counts.len() > 8);
}
