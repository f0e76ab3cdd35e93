//! `weft bench load`: the parallel tuplesort text's set-up (seeds/000) on weft and on
//! PostgreSQL 15, side by side.
//!
//! Each run builds `parallel_sort_test` from scratch in each system — a fresh weft data
//! directory, a fresh PostgreSQL cluster — alternating weft, PostgreSQL, weft, ... so that a
//! machine getting slower or faster over time (thermal limits, a noisy neighbour) affects both
//! sides alike. After the load, `SELECT count(*), sum(randint)` is timed:
//!
//! | weft | PostgreSQL |
//! |---|---|
//! | 1 participant (`max_parallel_workers_per_gather = 0`) | `max_parallel_workers_per_gather = 0` |
//! | 2 participants (`max_parallel_workers_per_gather = 1`) | defaults (leader + up to 2 workers) |
//!
//! one untimed warm-up, then `QUERY_REPEATS` timed executions per configuration and run. We
//! report medians (robust to one slow outlier), the ratio PostgreSQL time / weft time (above 1:
//! weft is faster) and weft's 2-participant speedup, then the same as a Markdown table for
//! `docs/PERFORMANCE.md`. Both systems must give the same count and sum — `hashint8` is
//! bit-exact — and a difference is reported.
//!
//! weft is timed by a wall clock around `Session::execute`; PostgreSQL by psql's `\timing`,
//! which includes one client round trip (microseconds, next to the statements timed here).

use std::time::{Duration, Instant};

use weft::postgres::PgCluster;
use weft::workload;
use weft_sql::{Database, Session};

/// Timed executions of each query configuration per run.
const QUERY_REPEATS: usize = 3;

pub struct LoadOptions {
    pub rows: u64,
    pub runs: usize,
    pub postgres: bool,
    /// `--set` start-up settings for weft.
    pub settings: Vec<(String, String)>,
}

/// Every measurement of one system.
#[derive(Default)]
struct Samples {
    load: Vec<Duration>,
    scan_serial: Vec<Duration>,
    scan_parallel: Vec<Duration>,
    /// weft only: serial fraction of the 2-participant scan (time not all participants
    /// were working / wall time of the scan pipeline), and the workers it launched.
    serial_fraction: Vec<f64>,
    workers_launched: Vec<usize>,
    /// `count|sum` as psql -At prints it, from the last run.
    answer: Option<String>,
}

const WEFT_SERIAL: &str = "SET max_parallel_workers_per_gather = 0";
const WEFT_PARALLEL: &str = "SET max_parallel_workers_per_gather = 1";
const PG_SERIAL: &str = "SET max_parallel_workers_per_gather = 0";

pub fn load(options: &LoadOptions) -> i32 {
    let runs = options.runs.max(1);
    let mut postgres = options.postgres;
    if postgres && !PgCluster::available() {
        eprintln!("weft bench: PostgreSQL 15 is not installed ({}); timing weft only", weft::postgres::PG_BIN_DIR);
        postgres = false;
    }
    outln!(
        "weft bench load: CREATE TABLE parallel_sort_test AS ... generate_series(0, {}), {runs} run(s){}\n",
        options.rows,
        if postgres { ", alternating weft and PostgreSQL 15" } else { "" }
    );
    let mut weft_samples = Samples::default();
    let mut pg_samples = Samples::default();
    for run in 1..=runs {
        if let Err(message) = weft_run(options, &mut weft_samples) {
            eprintln!("weft bench: weft run {run} failed: {message}");
            return 1;
        }
        print_run(run, "weft", &weft_samples);
        if postgres {
            if let Err(message) = postgres_run(options.rows, &shared_settings(options), &mut pg_samples) {
                eprintln!("weft bench: PostgreSQL run {run} failed: {message}");
                return 1;
            }
            print_run(run, "PostgreSQL", &pg_samples);
        }
    }
    outln!();
    let pg = postgres.then_some(&pg_samples);
    print_summary(options.rows, runs, &weft_samples, pg);
    match (&weft_samples.answer, pg.and_then(|p| p.answer.as_ref())) {
        (Some(w), Some(p)) if w != p => {
            eprintln!("weft bench: RESULTS DIFFER: weft {w}, PostgreSQL {p}");
            1
        }
        _ => 0,
    }
}

fn weft_run(options: &LoadOptions, samples: &mut Samples) -> Result<(), String> {
    let temporary = tempfile::Builder::new()
        .prefix("weft-bench-")
        .tempdir()
        .map_err(|e| format!("could not create a temporary directory: {e}"))?;
    let data_dir = temporary.path().join("data");
    let database = Database::open(&data_dir, &options.settings).map_err(|e| e.to_psql_string())?;
    let mut session = database.session();
    samples.load.push(timed(&mut session, &workload::create_parallel_sort_test(options.rows))?);
    for (setup, target) in [(WEFT_SERIAL, &mut samples.scan_serial), (WEFT_PARALLEL, &mut samples.scan_parallel)] {
        timed(&mut session, setup)?;
        timed(&mut session, workload::COUNT_AND_SUM)?;
        for _ in 0..QUERY_REPEATS {
            target.push(timed(&mut session, workload::COUNT_AND_SUM)?);
            if setup == WEFT_PARALLEL {
                if let Some(stats) = session.last_pipeline_stats().last() {
                    samples.serial_fraction.push(stats.serial_fraction());
                    samples.workers_launched.push(stats.workers_launched);
                }
            }
        }
    }
    let result = session.execute(workload::COUNT_AND_SUM).map_err(|e| e.to_psql_string())?;
    samples.answer = result.rows.first().map(|row| {
        row.iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join("|")
    });
    drop(session);
    drop(database);
    Ok(())
    // `temporary` is removed here.
}

pub(crate) fn timed(session: &mut Session, sql: &str) -> Result<Duration, String> {
    let started = Instant::now();
    session.execute(sql).map_err(|e| format!("{sql}\n{}", e.to_psql_string()))?;
    Ok(started.elapsed())
}

/// Settings both systems understand alike, passed to PostgreSQL too so that a comparison
/// at, say, `--set shared_buffers=2GB` runs both with the same buffer pool.
fn shared_settings(options: &LoadOptions) -> Vec<(String, String)> {
    shared_settings_of(&options.settings)
}

/// The `--set` settings that are passed to PostgreSQL as well (see `shared_settings`).
/// A throwaway PostgreSQL 15 cluster with weft's shared settings, holding the seed table
/// (built and VACUUM ANALYZEd, the build time printed).
pub(crate) fn postgres_with_seed_table(rows: u64, settings: &[(String, String)]) -> Result<PgCluster, String> {
    let settings = shared_settings_of(settings);
    let settings: Vec<(&str, &str)> = settings.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let cluster = PgCluster::start_with(&settings).map_err(|e| format!("PostgreSQL: {e}"))?;
    let load = cluster
        .time_statement(&[], &workload::create_parallel_sort_test(rows), 1)
        .map_err(|e| format!("PostgreSQL: {e}"))?;
    cluster.run(&["VACUUM ANALYZE parallel_sort_test"]).map_err(|e| format!("PostgreSQL: {e}"))?;
    outln!("set-up: PostgreSQL 15 parallel_sort_test built in {} (then VACUUM ANALYZE)", format_ms(load.first().copied()));
    Ok(cluster)
}

pub(crate) fn shared_settings_of(settings: &[(String, String)]) -> Vec<(String, String)> {
    settings
        .iter()
        .filter(|(name, _)| matches!(name.as_str(), "shared_buffers" | "work_mem" | "maintenance_work_mem"))
        .cloned()
        .collect()
}

fn postgres_run(rows: u64, settings: &[(String, String)], samples: &mut Samples) -> Result<(), String> {
    let settings: Vec<(&str, &str)> = settings.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let cluster = PgCluster::start_with(&settings).map_err(|e| e.to_string())?;
    let load = cluster.time_statement(&[], &workload::create_parallel_sort_test(rows), 1).map_err(|e| e.to_string())?;
    samples.load.extend(load);
    let warm_up_and_repeat = |setup: &[&str]| -> Result<Vec<Duration>, String> {
        let times = cluster.time_statement(setup, workload::COUNT_AND_SUM, QUERY_REPEATS + 1).map_err(|e| e.to_string())?;
        Ok(times[1..].to_vec())
    };
    samples.scan_serial.extend(warm_up_and_repeat(&[PG_SERIAL])?);
    samples.scan_parallel.extend(warm_up_and_repeat(&[])?);
    samples.answer = Some(cluster.query_one(workload::COUNT_AND_SUM).map_err(|e| e.to_string())?);
    Ok(())
    // `cluster` is stopped and removed here, also on the error paths above.
}

fn print_run(run: usize, system: &str, samples: &Samples) {
    let last = |v: &[Duration], n: usize| v[v.len().saturating_sub(n)..].to_vec();
    outln!(
        "run {run} {system:<10}  load {:>10}   scan serial {:>9}   scan parallel {:>9}",
        format_ms(samples.load.last().copied()),
        format_ms(median(&last(&samples.scan_serial, QUERY_REPEATS))),
        format_ms(median(&last(&samples.scan_parallel, QUERY_REPEATS))),
    );
}

fn print_summary(rows: u64, runs: usize, weft: &Samples, pg: Option<&Samples>) {
    let pg_median = |pick: fn(&Samples) -> &Vec<Duration>| pg.and_then(|p| median(pick(p)));
    let lines = [
        ("CREATE TABLE parallel_sort_test AS", median(&weft.load), pg_median(|p| &p.load)),
        ("count(*), sum(): 1 participant (PG: no workers)", median(&weft.scan_serial), pg_median(|p| &p.scan_serial)),
        ("count(*), sum(): 2 participants (PG: defaults)", median(&weft.scan_parallel), pg_median(|p| &p.scan_parallel)),
    ];
    outln!("medians of {runs} run(s); queries {QUERY_REPEATS}x per run after a warm-up");
    outln!("{:<50} {:>12} {:>15} {:>16}", "", "weft", "PostgreSQL 15", "PostgreSQL/weft");
    for (label, w, p) in &lines {
        outln!("{label:<50} {:>12} {:>15} {:>16}", format_ms(*w), format_ms(*p), format_ratio(*p, *w));
    }
    let speedup = format_ratio(median(&weft.scan_serial), median(&weft.scan_parallel));
    outln!("weft 2-participant speedup (1 participant / 2 participants): {speedup}");
    let serial_fraction = median_f64(&weft.serial_fraction);
    let launched = weft.workers_launched.iter().min().copied().unwrap_or(0);
    outln!(
        "weft 2-participant scan: serial fraction {} (workers launched: {launched})",
        serial_fraction.map(|f| format!("{:.1}%", f * 100.0)).unwrap_or_else(|| "-".into())
    );
    match (&weft.answer, pg.and_then(|p| p.answer.as_ref())) {
        (Some(w), Some(p)) if w == p => outln!("results match: count|sum = {w}"),
        (Some(w), None) => outln!("weft: count|sum = {w}"),
        _ => {}
    }

    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    outln!("\nMarkdown for docs/PERFORMANCE.md:\n");
    outln!("| `parallel_sort_test`, generate_series(0, {rows}) | weft | PostgreSQL 15 | PostgreSQL / weft |");
    outln!("|---|---:|---:|---:|");
    let markdown_labels = [
        "`CREATE TABLE parallel_sort_test AS ...`",
        "`SELECT count(*), sum(randint)`, 1 participant (PostgreSQL: `max_parallel_workers_per_gather = 0`)",
        "`SELECT count(*), sum(randint)`, 2 participants (PostgreSQL: default settings)",
    ];
    for (label, (_, w, p)) in markdown_labels.iter().zip(&lines) {
        outln!("| {label} | {} | {} | {} |", format_ms(*w), format_ms(*p), format_ratio(*p, *w));
    }
    outln!(
        "\nMedians of {runs} run(s) (queries: {QUERY_REPEATS} timed executions per run after one warm-up) on {cores} \
         core(s). weft 2-participant speedup: {speedup}; serial fraction of the 2-participant scan: {}. \
         PostgreSQL 15 ran with fsync=off and shared_buffers as weft's.",
        serial_fraction.map(|f| format!("{:.1}%", f * 100.0)).unwrap_or_else(|| "-".into())
    );
}

pub(crate) fn median_f64(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    Some(sorted[sorted.len() / 2])
}

pub(crate) fn median(samples: &[Duration]) -> Option<Duration> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort();
    let middle = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 { sorted[middle] } else { (sorted[middle - 1] + sorted[middle]) / 2 })
}

pub(crate) fn format_ms(duration: Option<Duration>) -> String {
    match duration {
        Some(d) => format!("{:.1} ms", d.as_secs_f64() * 1000.0),
        None => "-".to_string(),
    }
}

/// `numerator / denominator`, as `1.85x`.
pub(crate) fn format_ratio(numerator: Option<Duration>, denominator: Option<Duration>) -> String {
    match (numerator, denominator) {
        (Some(n), Some(d)) if !d.is_zero() => format!("{:.2}x", n.as_secs_f64() / d.as_secs_f64()),
        _ => "-".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|&v| Duration::from_millis(v)).collect()
    }

    #[test]
    fn medians() {
        assert_eq!(median(&ms(&[30, 10, 20])), Some(Duration::from_millis(20)));
        assert_eq!(median(&ms(&[40, 10, 20, 30])), Some(Duration::from_millis(25)));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn ratios() {
        let some = |v| Some(Duration::from_millis(v));
        assert_eq!(format_ratio(some(300), some(100)), "3.00x");
        assert_eq!(format_ratio(None, some(100)), "-");
        assert_eq!(format_ms(some(1500)), "1500.0 ms");
    }
}
