//! `weft bench index`: the seed's CREATE INDEX (seeds/000) on weft and on PostgreSQL 15.
//!
//! Both systems build `parallel_sort_test` once; then, for every configuration — the key
//! (`randint`, `padding1`), `maintenance_work_mem` (1GB, 64MB) and 1 or 2 participants —
//! each run times one CREATE INDEX per system, alternating weft and PostgreSQL so that a
//! machine drifting over time affects both alike, and drops the index (untimed).
//!
//! weft: `CREATE INDEX i ON parallel_sort_test (col) WITH (parallel_workers = n)`, with
//! each `parallel_sort_strategy` asked for at 2 participants. PostgreSQL 15 rejects that
//! storage parameter on an index, so there: `ALTER TABLE ... SET (parallel_workers = n)`
//! and `max_parallel_maintenance_workers = n`.
//!
//! Reported per configuration (medians): time, the ratio PostgreSQL / weft (above 1: weft
//! is faster), index size (weft: the index file's size on disk, read through `\di+`'s
//! `Session::list_relations`; PostgreSQL: `pg_relation_size`), temp bytes written (weft:
//! the build's sort report; PostgreSQL: `pg_stat_database.temp_bytes` before and after),
//! and weft's serial fraction — the part of the build during which not every participant
//! worked (`IndexBuildReport::serial`, from `Session::last_index_build`).
//!
//! A weft build that fails (an error from the engine) is reported on its run line and the
//! benchmark goes on with the next configuration; the exit status is then 1. A failure of
//! the set-up (the table, the PostgreSQL cluster) ends it at once, also with 1.
//!
//! Defaults are small (100000 rows, 1 run: seconds); the figures in docs/PERFORMANCE.md
//! come from `weft bench index --rows 10000000 --runs 3 --set fsync=off` (PostgreSQL runs
//! with `fsync=off` too).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use weft::postgres::PgCluster;
use weft::workload;
use weft_sql::{Database, Session};

use crate::bench::{format_ms, median, median_f64};

pub struct IndexOptions {
    pub rows: u64,
    pub runs: usize,
    pub postgres: bool,
    /// `--set` start-up settings for weft (and the shared ones for PostgreSQL).
    pub settings: Vec<(String, String)>,
    /// weft's `parallel_sort_strategy` values for 2-participant builds.
    pub strategies: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Config {
    column: &'static str,
    memory: &'static str,
    participants: usize,
}

const COLUMNS: [&str; 2] = ["randint", "padding1"];
const MEMORY: [&str; 2] = ["1GB", "64MB"];
/// weft's page size (8 KiB, as PostgreSQL's).
const PAGE_BYTES: u64 = 8192;
/// The index every configuration builds and drops.
const INDEX: &str = "bench_idx";

#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    time: Duration,
    size: u64,
    temp: u64,
    serial_fraction: Option<f64>,
    /// weft: workers the build got (it may get fewer than asked); PostgreSQL: the workers asked.
    workers_launched: usize,
}

type Samples = BTreeMap<(Config, String), Vec<Sample>>;

pub fn index(options: &IndexOptions) -> i32 {
    match run(options) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("weft bench index: {message}");
            1
        }
    }
}

fn run(options: &IndexOptions) -> Result<i32, String> {
    let runs = options.runs.max(1);
    let postgres = options.postgres && PgCluster::available();
    if options.postgres && !postgres {
        eprintln!("weft bench index: PostgreSQL 15 is not installed ({}); timing weft only", weft::postgres::PG_BIN_DIR);
    }
    outln!(
        "weft bench index: CREATE INDEX on parallel_sort_test with generate_series(0, {}), {runs} run(s) per configuration{}",
        options.rows,
        if postgres { ", alternating weft and PostgreSQL 15" } else { "" }
    );
    if postgres && !fsync_off(&options.settings) {
        outln!("note: weft runs with fsync=on and PostgreSQL with fsync=off; pass --set fsync=off to compare alike");
    }
    outln!();
    let workdir = tempfile::Builder::new()
        .prefix("weft-bench-index-")
        .tempdir()
        .map_err(|e| format!("could not create a temporary directory: {e}"))?;
    let database = Database::open(&workdir.path().join("data"), &options.settings).map_err(|e| e.to_psql_string())?;
    let mut session = database.session();
    let began = Instant::now();
    session.execute(&workload::create_parallel_sort_test(options.rows)).map_err(|e| e.to_psql_string())?;
    outln!("set-up: weft          parallel_sort_test built in {}", format_ms(Some(began.elapsed())));
    let cluster = if postgres {
        Some(crate::bench::postgres_with_seed_table(options.rows, &options.settings)?)
    } else {
        None
    };
    outln!();

    let mut samples: Samples = BTreeMap::new();
    let mut failures = 0;
    let configs: Vec<Config> = COLUMNS
        .iter()
        .flat_map(|&column| MEMORY.iter().flat_map(move |&memory| [1, 2].map(|participants| Config { column, memory, participants })))
        .collect();
    for run in 1..=runs {
        for &config in &configs {
            let strategies: Vec<&str> =
                if config.participants == 1 { vec![options.strategies[0].as_str()] } else { options.strategies.iter().map(String::as_str).collect() };
            for strategy in strategies {
                let label = if config.participants == 1 { "weft".to_string() } else { format!("weft {strategy}") };
                let line = format!("run {run}: {:<8} {:>4} {}p  {label:<22}", config.column, config.memory, config.participants);
                match weft_build(&mut session, config, strategy) {
                    Ok(sample) => {
                        samples.entry((config, label.clone())).or_default().push(sample);
                        let short = if sample.workers_launched + 1 < config.participants {
                            format!("  (only {} worker(s) launched)", sample.workers_launched)
                        } else {
                            String::new()
                        };
                        outln!("{line} {}{short}", format_ms(Some(sample.time)));
                    }
                    Err(message) => {
                        failures += 1;
                        outln!("{line} failed");
                        eprintln!("weft bench index: weft: {message}");
                    }
                }
            }
            if let Some(cluster) = &cluster {
                let sample = postgres_build(cluster, config)?;
                samples.entry((config, "PostgreSQL 15".to_string())).or_default().push(sample);
                outln!("run {run}: {:<8} {:>4} {}p  {:<22} {}", config.column, config.memory, config.participants, "PostgreSQL 15", format_ms(Some(sample.time)));
            }
        }
    }
    print_summary(&samples, &configs, options, runs);
    if failures > 0 {
        eprintln!("weft bench index: {failures} weft build(s) failed");
        return Ok(1);
    }
    Ok(0)
}

/// Whether `--set fsync=off` (or another false spelling) was given.
fn fsync_off(settings: &[(String, String)]) -> bool {
    settings.iter().any(|(name, value)| {
        name == "fsync" && matches!(value.trim().to_ascii_lowercase().as_str(), "off" | "false" | "0" | "no" | "f" | "n")
    })
}

fn weft_build(session: &mut Session, config: Config, strategy: &str) -> Result<Sample, String> {
    let setup = format!(
        "SET maintenance_work_mem = '{}'; SET parallel_sort_strategy = '{strategy}'; SET max_parallel_maintenance_workers = {}",
        config.memory,
        config.participants - 1
    );
    session.execute(&setup).map_err(|e| e.to_psql_string())?;
    let sql = format!("CREATE INDEX {INDEX} ON parallel_sort_test ({}) WITH (parallel_workers = {})", config.column, config.participants - 1);
    let began = Instant::now();
    let created = session.execute(&sql);
    let time = began.elapsed();
    if let Err(error) = created {
        // Whatever was left (nothing, if the engine keeps its promise) must not fail the next build.
        let _ = session.execute(&format!("DROP INDEX IF EXISTS {INDEX}"));
        return Err(format!("{sql}\n{}", error.to_psql_string()));
    }
    let report = session.last_index_build();
    let file_bytes = session.list_relations().into_iter().find(|r| r.name == INDEX).map(|r| r.size_bytes);
    session.execute(&format!("DROP INDEX {INDEX}")).map_err(|e| e.to_psql_string())?;
    let report = report.ok_or("CREATE INDEX left no build report (Session::last_index_build)")?;
    let total = report.total.as_secs_f64();
    Ok(Sample {
        time,
        size: file_bytes.unwrap_or(report.tree.total_blocks as u64 * PAGE_BYTES),
        temp: report.sort.temp_bytes,
        serial_fraction: (total > 0.0).then(|| report.serial.as_secs_f64() / total),
        workers_launched: report.workers_launched,
    })
}

fn postgres_build(cluster: &PgCluster, config: Config) -> Result<Sample, String> {
    let pg = |e: weft::postgres::PgError| format!("PostgreSQL: {e}");
    let temp_bytes = || -> Result<u64, String> {
        let line = cluster.query_one("SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()").map_err(pg)?;
        line.trim().parse().map_err(|_| format!("PostgreSQL: temp_bytes {line:?}"))
    };
    let workers = config.participants - 1;
    let before = temp_bytes()?;
    let setup = [
        format!("SET maintenance_work_mem = '{}'", config.memory),
        format!("SET max_parallel_maintenance_workers = {workers}"),
        format!("ALTER TABLE parallel_sort_test SET (parallel_workers = {workers})"),
    ];
    let create = format!("CREATE INDEX {INDEX} ON parallel_sort_test ({})", config.column);
    let size = format!("SELECT pg_relation_size('{INDEX}')");
    let drop = format!("DROP INDEX {INDEX}");
    let mut statements: Vec<&str> = setup.iter().map(String::as_str).collect();
    statements.push(&create);
    statements.push(&size);
    statements.push(&drop);
    statements.push("SELECT pg_stat_force_next_flush()");
    let output = cluster.run(&statements).map_err(pg)?;
    let time = *output.timings.get(setup.len()).ok_or("PostgreSQL: no timing for CREATE INDEX")?;
    let size = output.lines.iter().find_map(|l| l.trim().parse::<u64>().ok()).unwrap_or(0);
    let after = temp_bytes()?;
    Ok(Sample { time, size, temp: after.saturating_sub(before), serial_fraction: None, workers_launched: workers })
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn print_summary(samples: &Samples, configs: &[Config], options: &IndexOptions, runs: usize) {
    let med = |key: &(Config, String)| -> Option<(Duration, u64, u64, Option<f64>)> {
        let s = samples.get(key)?;
        let time = median(&s.iter().map(|x| x.time).collect::<Vec<_>>())?;
        let mut sizes: Vec<u64> = s.iter().map(|x| x.size).collect();
        sizes.sort_unstable();
        let mut temps: Vec<u64> = s.iter().map(|x| x.temp).collect();
        temps.sort_unstable();
        let serial = median_f64(&s.iter().filter_map(|x| x.serial_fraction).collect::<Vec<_>>());
        Some((time, sizes[sizes.len() / 2], temps[temps.len() / 2], serial))
    };
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    outln!(
        "\nMedians of {runs} run(s), generate_series(0, {}), {cores} core(s); ratio = PostgreSQL time / weft time \
         (above 1: weft is faster). Markdown for docs/PERFORMANCE.md:\n",
        options.rows
    );
    outln!("| key | maintenance_work_mem | participants | system | time | ratio | index size | temp written | serial fraction |");
    outln!("|---|---|---|---|---|---|---|---|---|");
    for config in configs {
        let pg = med(&(*config, "PostgreSQL 15".to_string()));
        let systems: Vec<&String> = samples.keys().filter(|(c, _)| c == config).map(|(_, s)| s).collect();
        for system in systems {
            let Some((time, size, temp, serial)) = med(&(*config, system.clone())) else { continue };
            let ratio = match (&pg, system.as_str()) {
                (Some((pg_time, ..)), s) if s != "PostgreSQL 15" => format!("{:.2}x", pg_time.as_secs_f64() / time.as_secs_f64()),
                _ => String::new(),
            };
            outln!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                config.column,
                config.memory,
                config.participants,
                system,
                format_ms(Some(time)),
                ratio,
                mb(size),
                mb(temp),
                serial.map_or(String::new(), |f| format!("{:.1}%", f * 100.0))
            );
        }
    }
    outln!("\n2-participant speedups (1-participant median / 2-participant median):\n");
    for column in COLUMNS {
        for memory in MEMORY {
            let one = Config { column, memory, participants: 1 };
            let two = Config { column, memory, participants: 2 };
            for system in samples.keys().filter(|(c, _)| *c == two).map(|(_, s)| s.clone()).collect::<Vec<_>>() {
                let serial_label = if system.starts_with("weft") { "weft".to_string() } else { system.clone() };
                if let (Some(a), Some(b)) = (med(&(one, serial_label)), med(&(two, system.clone()))) {
                    outln!("- {column} {memory} {system}: {:.2}x", a.0.as_secs_f64() / b.0.as_secs_f64());
                }
            }
        }
    }
}
