//! `weft bench join`: the parallel hash join text's threshold experiment (seeds/002) on
//! weft, PostgreSQL 15 and (when `pip install duckdb` works) DuckDB, side by side.
//!
//! Tables, built once in each system with the same SQL: `big` (`--rows`, default 1M) and
//! `small_N` for N in 5k, 10k, 20k, 50k, 100k, each with a unique integer `a` and a 60-byte
//! text `b` from `md5`, `repeat` and `substr` (DuckDB has them too; it only needs the
//! `generate_series` column named by an alias), then `ANALYZE` (weft, PostgreSQL). Before
//! timing, each DuckDB table's size and every 997th row are compared with weft's. Queries:
//! (a) `SELECT COUNT(*) FROM big JOIN small_N USING (a)` and (b) the same with `WHERE
//! length(small_N.b) * 2 - length(small_N.b) = length(small_N.b)`, each in the seed's three
//! shapes with 2 participants — serial, parallel-oblivious (`enable_parallel_hash = off`),
//! parallel-aware (weft: `parallel_hash_min_inner_rows = 0`; PostgreSQL:
//! `parallel_setup_cost = 0`, `parallel_tuple_cost = 0`) — and, for weft, the shape it
//! chooses itself ("auto"); all at work_mem 1GB. Then a self-join of `t` (`--self-rows`,
//! default 1M: the 10M takes `--self-rows 10000000`) in the same four shapes at
//! work_mem 2GB and 64MB.
//!
//! DuckDB has no oblivious/aware choice: it runs once per participant count, on the serial
//! row (`SET threads = 1`) and on the auto row (`SET threads = 2`), compared with weft's
//! serial and own choice; its `memory_limit` is work_mem (1GiB, 2GiB, 64MiB; for the whole
//! process, not per participant, as in bench sort). It runs in a long-lived python3 process
//! (`bench_duckdb`) on a database file, so that its tables can leave memory under 64MiB.
//!
//! Runs alternate the systems (weft, PostgreSQL, DuckDB, weft, ...); each run times one
//! execution after one untimed warm-up per configuration; medians are reported with the
//! ratios PostgreSQL / weft and DuckDB / weft (above 1: weft is faster). Every system's count
//! must equal weft's. The shape weft and PostgreSQL really ran is read from their EXPLAIN
//! and printed.
//!
//! Not done yet: a serial fraction per join.

use std::time::{Duration, Instant};

use weft::postgres::PgCluster;
use weft_sql::{Database, Session};

use crate::bench::{format_ms, format_ratio, median};
use crate::bench_duckdb::DuckDb;

pub struct JoinOptions {
    pub rows: u64,
    pub self_rows: u64,
    pub runs: usize,
    pub postgres: bool,
    pub duckdb: bool,
    pub settings: Vec<(String, String)>,
}

const SMALL_SIZES: [u64; 5] = [5_000, 10_000, 20_000, 50_000, 100_000];

/// The goal of the issue against DuckDB: weft's time at most this many times DuckDB's.
const DUCKDB_GOAL: f64 = 1.5;

/// A 60-byte text from `i`, the same in every system.
fn table_sql(name: &str, rows: u64) -> String {
    format!("CREATE TABLE {name} AS SELECT i AS a, substr(repeat(md5(i::text), 2), 1, 60) AS b FROM generate_series(1, {rows}) i")
}

/// `table_sql` for DuckDB, whose `generate_series` column is named `generate_series`: the
/// alias names it `i`.
fn duckdb_table_sql(name: &str, rows: u64) -> String {
    format!("CREATE TABLE {name} AS SELECT i AS a, substr(repeat(md5(i::text), 2), 1, 60) AS b FROM generate_series(1, {rows}) AS g(i)")
}

/// Queries whose answers must be the same in weft and DuckDB if a table is: its size and
/// every 997th row, `b` included.
fn table_check_sql(name: &str) -> [String; 2] {
    [
        format!("SELECT count(*), min(a), max(a), min(length(b)), max(length(b)) FROM {name}"),
        format!("SELECT a, b FROM {name} WHERE a % 997 = 1 ORDER BY a"),
    ]
}

/// One configuration: its label and the settings each system runs it under (`None`: the
/// system has no such shape).
struct Shape {
    label: &'static str,
    weft: &'static [&'static str],
    postgres: Option<&'static [&'static str]>,
    /// DuckDB's `threads`: it has one shape per participant count.
    duckdb_threads: Option<usize>,
}

const SHAPES: [Shape; 4] = [
    Shape {
        label: "serial",
        weft: &["SET max_parallel_workers_per_gather = 0"],
        postgres: Some(&["SET max_parallel_workers_per_gather = 0"]),
        duckdb_threads: Some(1),
    },
    Shape {
        label: "oblivious",
        weft: &["SET max_parallel_workers_per_gather = 1", "SET min_parallel_table_scan_size = 0", "SET enable_parallel_hash = off"],
        postgres: Some(&[
            "SET max_parallel_workers_per_gather = 1",
            "SET min_parallel_table_scan_size = 0",
            "SET parallel_setup_cost = 0",
            "SET parallel_tuple_cost = 0",
            "SET enable_parallel_hash = off",
        ]),
        duckdb_threads: None,
    },
    Shape {
        label: "aware",
        weft: &[
            "SET max_parallel_workers_per_gather = 1",
            "SET min_parallel_table_scan_size = 0",
            "SET enable_parallel_hash = on",
            "SET parallel_hash_min_inner_rows = 0",
        ],
        postgres: Some(&[
            "SET max_parallel_workers_per_gather = 1",
            "SET min_parallel_table_scan_size = 0",
            "SET parallel_setup_cost = 0",
            "SET parallel_tuple_cost = 0",
            "SET enable_parallel_hash = on",
        ]),
        duckdb_threads: None,
    },
    Shape { label: "auto", weft: &["SET max_parallel_workers_per_gather = 1"], postgres: None, duckdb_threads: Some(2) },
];

/// A memory budget: weft's and PostgreSQL's `work_mem`, DuckDB's `memory_limit` (DuckDB
/// reads `GB` as 10^9 bytes, `GiB` as 2^30).
#[derive(Clone, Copy)]
struct Budget {
    work_mem: &'static str,
    duckdb: &'static str,
}

const JOIN_BUDGET: Budget = Budget { work_mem: "1GB", duckdb: "1GiB" };
const SELF_JOIN_BUDGETS: [Budget; 2] = [Budget { work_mem: "2GB", duckdb: "2GiB" }, Budget { work_mem: "64MB", duckdb: "64MiB" }];

struct Case {
    name: String,
    query: String,
    budget: Budget,
    shape: &'static Shape,
}

impl Case {
    /// Settings for weft and PostgreSQL before the shape's.
    fn common(&self) -> Vec<String> {
        vec![format!("SET work_mem = '{}'", self.budget.work_mem)]
    }

    /// DuckDB's settings, when it runs this case.
    fn duckdb_settings(&self) -> Option<Vec<String>> {
        let threads = self.shape.duckdb_threads?;
        Some(vec![format!("SET threads = {threads}"), format!("SET memory_limit = '{}'", self.budget.duckdb)])
    }
}

#[derive(Default)]
struct Samples {
    weft: Vec<Duration>,
    postgres: Vec<Duration>,
    duckdb: Vec<Duration>,
    weft_plan: String,
    postgres_plan: String,
    /// Why DuckDB has no time for this case (its statement failed).
    duckdb_failure: Option<String>,
}

pub fn join(options: &JoinOptions) -> i32 {
    match run(options) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("weft bench join: {message}");
            1
        }
    }
}

fn run(options: &JoinOptions) -> Result<i32, String> {
    let runs = options.runs.max(1);
    let postgres = options.postgres && PgCluster::available();
    let others = match (postgres, options.duckdb) {
        (true, true) => ", alternating weft, PostgreSQL 15 and DuckDB",
        (true, false) => ", alternating weft and PostgreSQL 15",
        (false, true) => ", alternating weft and DuckDB",
        (false, false) => "",
    };
    outln!(
        "weft bench join: big {} rows, small 5k..100k, self-join {} rows, {runs} run(s){others}",
        options.rows,
        options.self_rows,
    );
    let workdir = tempfile::Builder::new().prefix("weft-bench-join-").tempdir().map_err(|e| e.to_string())?;
    let db = Database::open(&workdir.path().join("data"), &options.settings).map_err(|e| e.message.clone())?;
    let mut s = db.session();
    let pg = if postgres { Some(PgCluster::start().map_err(|e| e.to_string())?) } else { None };
    let mut tables = vec![("big".to_string(), options.rows), ("t".to_string(), options.self_rows)];
    tables.extend(SMALL_SIZES.iter().map(|n| (format!("small_{n}"), *n)));
    let mut setup: Vec<String> = tables.iter().map(|(name, rows)| table_sql(name, *rows)).collect();
    setup.push("ANALYZE".to_string());
    for sql in &setup {
        s.execute(sql).map_err(|e| format!("weft: {sql}: {}", e.message))?;
        if let Some(pg) = &pg {
            pg.query(sql).map_err(|e| format!("PostgreSQL: {sql}: {e}"))?;
        }
    }
    // Declared after `workdir`, so that it stops before its directory goes.
    let mut duck = if options.duckdb {
        match duckdb_start(workdir.path(), &mut s, &tables) {
            Ok((duck, built)) => {
                outln!("set-up: DuckDB {}: tables built and checked against weft's in {}", duck.version, format_ms(Some(built)));
                Some(duck)
            }
            Err(why) => {
                eprintln!("weft bench join: skipping DuckDB: {why}");
                None
            }
        }
    } else {
        None
    };
    let duckdb_ran = duck.is_some();

    let mut cases = Vec::new();
    for n in SMALL_SIZES {
        let small = format!("small_{n}");
        let a = format!("SELECT COUNT(*) FROM big JOIN {small} USING (a)");
        let b = format!("{a} WHERE length({small}.b) * 2 - length({small}.b) = length({small}.b)");
        for (q, query) in [("a", a), ("b", b)] {
            for shape in &SHAPES {
                cases.push(Case { name: format!("({q}) {n} rows"), query: query.clone(), budget: JOIN_BUDGET, shape });
            }
        }
    }
    for budget in SELF_JOIN_BUDGETS {
        for shape in &SHAPES {
            cases.push(Case {
                name: format!("self-join {}", budget.work_mem),
                query: "SELECT COUNT(*) FROM t t1 JOIN t t2 USING (a)".into(),
                budget,
                shape,
            });
        }
    }

    let mut failures = 0;
    let mut samples: Vec<Samples> = cases.iter().map(|_| Samples::default()).collect();
    for (case, sample) in cases.iter().zip(samples.iter_mut()) {
        let mut settings: Vec<String> = case.common();
        settings.extend(case.shape.weft.iter().map(|s| s.to_string()));
        s.execute("RESET ALL").map_err(|e| e.message.clone())?;
        for set in &settings {
            s.execute(set).map_err(|e| e.message.clone())?;
        }
        sample.weft_plan = plan_shape(&explain_weft(&mut s, &case.query));
        let weft_answer = weft_count(&mut s, &case.query)?; // warm-up
        let pg_settings: Option<Vec<String>> = case.shape.postgres.map(|p| case.common().into_iter().chain(p.iter().map(|s| s.to_string())).collect());
        if let (Some(pg), Some(pg_settings)) = (&pg, &pg_settings) {
            let mut statements: Vec<&str> = pg_settings.iter().map(String::as_str).collect();
            let explain = format!("EXPLAIN (COSTS OFF) {}", case.query);
            statements.push(&explain);
            let output = pg.run(&statements).map_err(|e| e.to_string())?;
            sample.postgres_plan = plan_shape(&output.lines.join("\n"));
            let answer = pg.run(&[&case.query]).map_err(|e| e.to_string())?.lines.join("");
            if answer != weft_answer {
                outln!("MISMATCH {}: weft {weft_answer}, PostgreSQL {answer}", case.name);
                failures += 1;
            }
        }
        let duckdb_settings = case.duckdb_settings();
        if let (Some(driver), Some(duckdb_settings)) = (duck.as_mut(), &duckdb_settings) {
            // Warm-up, and the answer to check.
            match driver.query(duckdb_settings, &case.query) {
                Ok((lines, _)) => {
                    let answer = lines.join("");
                    if answer != weft_answer {
                        outln!("MISMATCH {}: weft {weft_answer}, DuckDB {answer}", case.name);
                        failures += 1;
                    }
                }
                Err(why) => duckdb_failed(&mut duck, case, sample, why),
            }
        }
        for _ in 0..runs {
            let began = Instant::now();
            weft_count(&mut s, &case.query)?;
            sample.weft.push(began.elapsed());
            if let (Some(pg), Some(pg_settings)) = (&pg, &pg_settings) {
                let setup: Vec<&str> = pg_settings.iter().map(String::as_str).collect();
                let times = pg.time_statement(&setup, &case.query, 1).map_err(|e| e.to_string())?;
                sample.postgres.extend(times);
            }
            if sample.duckdb_failure.is_some() {
                continue;
            }
            if let (Some(driver), Some(duckdb_settings)) = (duck.as_mut(), &duckdb_settings) {
                match driver.query(duckdb_settings, &case.query) {
                    Ok((_, time)) => sample.duckdb.push(time),
                    Err(why) => duckdb_failed(&mut duck, case, sample, why),
                }
            }
        }
    }
    drop(duck);

    outln!();
    let mut header = "| case | shape | weft | weft plan | PostgreSQL 15 | PostgreSQL plan | PostgreSQL / weft |".to_string();
    let mut rule = "|---|---|---:|---|---:|---|---:|".to_string();
    if duckdb_ran {
        header.push_str(" DuckDB | DuckDB / weft |");
        rule.push_str("---:|---:|");
    }
    outln!("{header}\n{rule}");
    for (case, sample) in cases.iter().zip(&samples) {
        let (w, p, d) = (median(&sample.weft), median(&sample.postgres), median(&sample.duckdb));
        let mut line = format!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            case.name,
            case.shape.label,
            format_ms(w),
            sample.weft_plan,
            format_ms(p),
            if sample.postgres_plan.is_empty() { "-" } else { &sample.postgres_plan },
            if p.is_some() { format_ratio(p, w) } else { "-".into() }
        );
        if duckdb_ran {
            let time = match (&sample.duckdb_failure, d) {
                (Some(_), _) => "failed".to_string(),
                (None, d) => format_ms(d),
            };
            line.push_str(&format!(" {time} | {} |", format_ratio(d, w)));
        }
        outln!("{line}");
    }
    if duckdb_ran {
        outln!(
            "\nDuckDB: `threads` = 1 on the serial rows, 2 on the auto rows (it has no oblivious/aware choice); \
             `memory_limit` = work_mem, for the whole process."
        );
    }
    // The goal: weft's own choice within 10% of the best of its three shapes.
    outln!();
    for group in cases.chunks(SHAPES.len()).zip(samples.chunks(SHAPES.len())) {
        let (cases, samples) = group;
        if cases.len() < SHAPES.len() || cases[3].shape.label != "auto" {
            continue;
        }
        let best = samples[..3].iter().filter_map(|s| median(&s.weft)).min();
        if let (Some(best), Some(auto)) = (best, median(&samples[3].weft)) {
            outln!("{}: weft's choice ({}) at {:.2}x the best shape", cases[0].name, samples[3].weft_plan, auto.as_secs_f64() / best.as_secs_f64());
        }
    }
    if duckdb_ran {
        outln!();
        outln!("{}", duckdb_goal(&cases, &samples));
    }
    Ok(if failures == 0 { 0 } else { 1 })
}

/// Start DuckDB in `workdir/duckdb`, build `tables` there with weft's SQL and check them
/// against weft's: the time it took.
fn duckdb_start(workdir: &std::path::Path, s: &mut Session, tables: &[(String, u64)]) -> Result<(DuckDb, Duration), String> {
    let mut duck = DuckDb::start(&workdir.join("duckdb"))?;
    let began = Instant::now();
    let mut build: Vec<String> = tables.iter().map(|(name, rows)| duckdb_table_sql(name, *rows)).collect();
    // Into the database file, so that DuckDB can evict the tables under a small memory_limit.
    build.push("CHECKPOINT".to_string());
    duck.execute(&build)?;
    for (name, _) in tables {
        for sql in table_check_sql(name) {
            let weft = weft_lines(s, &sql)?;
            let (duckdb, _) = duck.query(&[], &sql)?;
            if weft != duckdb {
                let first = weft.iter().zip(&duckdb).find(|(w, d)| w != d);
                return Err(format!(
                    "DuckDB's {name} differs from weft's ({sql}: weft {} row(s), DuckDB {}; first difference: {first:?})",
                    weft.len(),
                    duckdb.len()
                ));
            }
        }
    }
    Ok((duck, began.elapsed()))
}

/// A DuckDB statement failed: the case gets no DuckDB time (running out of its
/// memory_limit is a finding about DuckDB, not a failed benchmark); a driver that died is
/// dropped and the bench goes on without DuckDB.
fn duckdb_failed(duck: &mut Option<DuckDb>, case: &Case, sample: &mut Samples, why: String) {
    eprintln!("weft bench join: DuckDB, {} {}: {why}", case.name, case.shape.label);
    sample.duckdb_failure = Some(why);
    if let Some(driver) = duck.as_mut() {
        if !driver.alive() {
            eprintln!("weft bench join: the DuckDB driver exited; going on without DuckDB");
            *duck = None;
        }
    }
}

/// The goal: weft within `DUCKDB_GOAL`x of DuckDB, on every row DuckDB ran.
fn duckdb_goal(cases: &[Case], samples: &[Samples]) -> String {
    let worst = cases
        .iter()
        .zip(samples)
        .filter_map(|(case, sample)| {
            let ratio = median(&sample.weft)?.as_secs_f64() / median(&sample.duckdb)?.as_secs_f64();
            Some((ratio, format!("{} {}", case.name, case.shape.label)))
        })
        .reduce(|a, b| if b.0 > a.0 { b } else { a });
    match worst {
        Some((ratio, at)) => format!(
            "weft within {DUCKDB_GOAL}x of DuckDB (weft / DuckDB at most {DUCKDB_GOAL}): {} (highest {ratio:.2}x: {at})",
            if ratio <= DUCKDB_GOAL { "met" } else { "NOT met" }
        ),
        None => format!("weft within {DUCKDB_GOAL}x of DuckDB: n/a (no DuckDB time)"),
    }
}

/// Rows as `a|b|c` lines, as psql and the DuckDB driver give them.
fn weft_lines(s: &mut Session, sql: &str) -> Result<Vec<String>, String> {
    let result = s.execute(sql).map_err(|e| format!("weft: {sql}: {}", e.message))?;
    Ok(result.rows.iter().map(|r| r.iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join("|")).collect())
}

fn weft_count(s: &mut Session, sql: &str) -> Result<String, String> {
    let result = s.execute(sql).map_err(|e| format!("weft: {sql}: {}", e.message))?;
    Ok(result.rows.iter().flat_map(|r| r.iter().map(|d| d.to_pg_text().unwrap_or_default())).collect::<Vec<_>>().join(""))
}

fn explain_weft(s: &mut Session, sql: &str) -> String {
    match s.execute(&format!("EXPLAIN (COSTS OFF) {sql}")) {
        Ok(result) => result.rows.iter().flat_map(|r| r.iter().map(|d| d.to_pg_text().unwrap_or_default())).collect::<Vec<_>>().join("\n"),
        Err(e) => e.message.clone(),
    }
}

/// "serial", "oblivious" or "aware" from a plan's text.
fn plan_shape(plan: &str) -> String {
    let parallel = plan.contains("Gather");
    if plan.contains("Parallel Hash Join") {
        "aware".into()
    } else if parallel && plan.contains("Hash Join") {
        "oblivious".into()
    } else if plan.contains("Hash Join") {
        "serial".into()
    } else {
        plan.lines().find(|l| l.contains("Join")).map(|l| l.trim().trim_start_matches("->").trim().to_string()).unwrap_or_else(|| "?".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(shape: usize, budget: Budget) -> Case {
        Case { name: "self-join".into(), query: String::new(), budget, shape: &SHAPES[shape] }
    }

    #[test]
    fn duckdb_runs_once_per_participant_count() {
        let settings = |c: &Case| c.duckdb_settings();
        assert_eq!(settings(&case(0, JOIN_BUDGET)), Some(vec!["SET threads = 1".to_string(), "SET memory_limit = '1GiB'".to_string()]));
        assert_eq!(settings(&case(1, JOIN_BUDGET)), None);
        assert_eq!(settings(&case(2, JOIN_BUDGET)), None);
        assert_eq!(
            settings(&case(3, SELF_JOIN_BUDGETS[1])),
            Some(vec!["SET threads = 2".to_string(), "SET memory_limit = '64MiB'".to_string()])
        );
        assert_eq!(case(3, SELF_JOIN_BUDGETS[1]).common(), vec!["SET work_mem = '64MB'".to_string()]);
    }

    #[test]
    fn duckdb_goal_names_the_worst_row() {
        let ms = Duration::from_millis;
        let cases = [case(0, JOIN_BUDGET), case(3, JOIN_BUDGET)];
        let mut samples = [Samples::default(), Samples::default()];
        assert!(duckdb_goal(&cases, &samples).ends_with("n/a (no DuckDB time)"));
        samples[0].weft = vec![ms(12)];
        samples[0].duckdb = vec![ms(10)];
        samples[1].weft = vec![ms(30)];
        samples[1].duckdb = vec![ms(10)];
        assert_eq!(duckdb_goal(&cases, &samples[..1]), "weft within 1.5x of DuckDB (weft / DuckDB at most 1.5): met (highest 1.20x: self-join serial)");
        assert!(duckdb_goal(&cases, &samples).contains("NOT met (highest 3.00x: self-join auto)"));
    }

    #[test]
    fn plan_shapes() {
        assert_eq!(plan_shape("Gather\n  ->  Parallel Hash Join"), "aware");
        assert_eq!(plan_shape("Gather\n  ->  Hash Join"), "oblivious");
        assert_eq!(plan_shape("Aggregate\n  ->  Hash Join"), "serial");
    }
}
