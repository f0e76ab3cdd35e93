//! `weft bench join`: the parallel hash join text's threshold experiment (seeds/002) on
//! weft and on PostgreSQL 15, side by side.
//!
//! Tables, built once in each system with the same SQL: `big` (`--rows`, default 1M) and
//! `small_N` for N in 5k, 10k, 20k, 50k, 100k, each with a unique integer `a` and a 60-byte
//! text `b`; then `ANALYZE`. Queries: (a) `SELECT COUNT(*) FROM big JOIN small_N USING (a)`
//! and (b) the same with `WHERE length(small_N.b) * 2 - length(small_N.b) =
//! length(small_N.b)`, each in the seed's three shapes with 2 participants — serial,
//! parallel-oblivious (`enable_parallel_hash = off`), parallel-aware (weft:
//! `parallel_hash_min_inner_rows = 0`; PostgreSQL: `parallel_setup_cost = 0`,
//! `parallel_tuple_cost = 0`) — and, for weft, the shape it chooses itself ("auto"). Then a
//! self-join of `t` (`--self-rows`, default 1M: the 10M takes `--self-rows
//! 10000000`) with 1 and 2 participants at work_mem 2GB and 64MB.
//!
//! Runs alternate the systems (weft, PostgreSQL, weft, ...); each run times one execution
//! after one untimed warm-up per configuration; medians are reported with the ratio
//! PostgreSQL / weft (above 1: weft is faster). Both systems' counts must agree. The shape
//! each system really ran is read from its EXPLAIN and printed.
//!
//! Not done yet: the DuckDB column (bench sort has one), and a serial fraction per join.

use std::time::{Duration, Instant};

use weft::postgres::PgCluster;
use weft_sql::{Database, Session};

use crate::bench::{format_ms, format_ratio, median};

pub struct JoinOptions {
    pub rows: u64,
    pub self_rows: u64,
    pub runs: usize,
    pub postgres: bool,
    pub settings: Vec<(String, String)>,
}

const SMALL_SIZES: [u64; 5] = [5_000, 10_000, 20_000, 50_000, 100_000];

/// A 60-byte text from `i`, the same in both systems.
fn table_sql(name: &str, rows: u64) -> String {
    format!("CREATE TABLE {name} AS SELECT i AS a, substr(repeat(md5(i::text), 2), 1, 60) AS b FROM generate_series(1, {rows}) i")
}

/// One configuration: its label and the settings each system runs it under (`None`: the
/// system has no such shape).
struct Shape {
    label: &'static str,
    weft: &'static [&'static str],
    postgres: Option<&'static [&'static str]>,
}

const SHAPES: [Shape; 4] = [
    Shape {
        label: "serial",
        weft: &["SET max_parallel_workers_per_gather = 0"],
        postgres: Some(&["SET max_parallel_workers_per_gather = 0"]),
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
    },
    Shape { label: "auto", weft: &["SET max_parallel_workers_per_gather = 1"], postgres: None },
];

struct Case {
    name: String,
    query: String,
    /// Settings for both systems before the shape's.
    common: Vec<String>,
    shape: &'static Shape,
}

#[derive(Default)]
struct Samples {
    weft: Vec<Duration>,
    postgres: Vec<Duration>,
    weft_plan: String,
    postgres_plan: String,
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
    outln!(
        "weft bench join: big {} rows, small 5k..100k, self-join {} rows, {runs} run(s){}",
        options.rows,
        options.self_rows,
        if postgres { ", alternating weft and PostgreSQL 15" } else { "" }
    );
    let workdir = tempfile::Builder::new().prefix("weft-bench-join-").tempdir().map_err(|e| e.to_string())?;
    let db = Database::open(&workdir.path().join("data"), &options.settings).map_err(|e| e.message)?;
    let mut s = db.session();
    let pg = if postgres { Some(PgCluster::start().map_err(|e| e.to_string())?) } else { None };
    let mut setup = vec![table_sql("big", options.rows), table_sql("t", options.self_rows)];
    setup.extend(SMALL_SIZES.iter().map(|n| table_sql(&format!("small_{n}"), *n)));
    setup.push("ANALYZE".to_string());
    for sql in &setup {
        s.execute(sql).map_err(|e| format!("weft: {sql}: {}", e.message))?;
        if let Some(pg) = &pg {
            pg.query(sql).map_err(|e| format!("PostgreSQL: {sql}: {e}"))?;
        }
    }

    let mut cases = Vec::new();
    for n in SMALL_SIZES {
        let small = format!("small_{n}");
        let a = format!("SELECT COUNT(*) FROM big JOIN {small} USING (a)");
        let b = format!("{a} WHERE length({small}.b) * 2 - length({small}.b) = length({small}.b)");
        for (q, query) in [("a", a), ("b", b)] {
            for shape in &SHAPES {
                cases.push(Case { name: format!("({q}) {n} rows"), query: query.clone(), common: vec!["SET work_mem = '1GB'".into()], shape });
            }
        }
    }
    for memory in ["2GB", "64MB"] {
        for shape in &SHAPES[..3] {
            cases.push(Case {
                name: format!("self-join {memory}"),
                query: "SELECT COUNT(*) FROM t t1 JOIN t t2 USING (a)".into(),
                common: vec![format!("SET work_mem = '{memory}'")],
                shape,
            });
        }
    }

    let mut failures = 0;
    let mut samples: Vec<Samples> = cases.iter().map(|_| Samples::default()).collect();
    for (case, sample) in cases.iter().zip(samples.iter_mut()) {
        let mut settings: Vec<String> = case.common.clone();
        settings.extend(case.shape.weft.iter().map(|s| s.to_string()));
        s.execute("RESET ALL").map_err(|e| e.message)?;
        for set in &settings {
            s.execute(set).map_err(|e| e.message)?;
        }
        sample.weft_plan = plan_shape(&explain_weft(&mut s, &case.query));
        let weft_answer = weft_count(&mut s, &case.query)?; // warm-up
        let pg_settings: Option<Vec<String>> = case.shape.postgres.map(|p| case.common.iter().cloned().chain(p.iter().map(|s| s.to_string())).collect());
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
        for _ in 0..runs {
            let began = Instant::now();
            weft_count(&mut s, &case.query)?;
            sample.weft.push(began.elapsed());
            if let (Some(pg), Some(pg_settings)) = (&pg, &pg_settings) {
                let setup: Vec<&str> = pg_settings.iter().map(String::as_str).collect();
                let times = pg.time_statement(&setup, &case.query, 1).map_err(|e| e.to_string())?;
                sample.postgres.extend(times);
            }
        }
    }

    outln!();
    outln!("| case | shape | weft | weft plan | PostgreSQL 15 | PostgreSQL plan | PostgreSQL / weft |");
    outln!("|---|---|---:|---|---:|---|---:|");
    for (case, sample) in cases.iter().zip(&samples) {
        let (w, p) = (median(&sample.weft), median(&sample.postgres));
        outln!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            case.name,
            case.shape.label,
            format_ms(w),
            sample.weft_plan,
            format_ms(p),
            if sample.postgres_plan.is_empty() { "-" } else { &sample.postgres_plan },
            if p.is_some() { format_ratio(p, w) } else { "-".into() }
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
    Ok(if failures == 0 { 0 } else { 1 })
}

fn weft_count(s: &mut Session, sql: &str) -> Result<String, String> {
    let result = s.execute(sql).map_err(|e| format!("weft: {sql}: {}", e.message))?;
    Ok(result.rows.iter().flat_map(|r| r.iter().map(|d| d.to_pg_text().unwrap_or_default())).collect::<Vec<_>>().join(""))
}

fn explain_weft(s: &mut Session, sql: &str) -> String {
    match s.execute(&format!("EXPLAIN (COSTS OFF) {sql}")) {
        Ok(result) => result.rows.iter().flat_map(|r| r.iter().map(|d| d.to_pg_text().unwrap_or_default())).collect::<Vec<_>>().join("\n"),
        Err(e) => e.message,
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
