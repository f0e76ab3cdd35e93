//! `weft bench sort`: the parallel tuplesort text's benchmark, on weft, PostgreSQL 15 and
//! (when `pip install duckdb` works) DuckDB, side by side in one run.
//!
//! # Set-up, once per system
//! - weft: a fresh data directory; `parallel_sort_test` built by the seed statement
//!   (`workload::create_parallel_sort_test`), as `bench load` does.
//! - PostgreSQL 15: a fresh throwaway cluster (`PgCluster`: `fsync=off`, `shared_buffers=128MB`,
//!   plus the `--set` settings both systems understand), the same statement (`hashint8` and
//!   `md5` are bit-exact, so the table is the same).
//! - DuckDB: no `hashint8`, so weft writes its table out (`COPY ... TO ... (FORMAT csv)`) and
//!   DuckDB loads that file into a database file in the bench's temporary directory: the same
//!   rows. A long-lived `python3` process (`bench_duckdb.py`, embedded; see `bench_duckdb`)
//!   holds the database and times each statement itself (`time.perf_counter`).
//!
//! # Workloads
//! (a) `CREATE TABLE sorted AS SELECT * FROM parallel_sort_test ORDER BY randint` (then
//! `DROP TABLE sorted`, untimed), (b) the same `ORDER BY padding1`, (c) `SELECT * FROM
//! parallel_sort_test ORDER BY randint LIMIT 10`, (d) the same `ORDER BY padding1`; each with
//! 1 and 2 participants and budgets of 1GB and 64MB:
//!
//! | | weft | PostgreSQL 15 | DuckDB |
//! |---|---|---|---|
//! | participants 1 / 2 | `max_parallel_workers_per_gather = 0 / 1` | `max_parallel_workers_per_gather = 0 / 1`, `parallel_leader_participation = on` | `SET threads = 1 / 2` |
//! | budget | `work_mem` (per participant) | `work_mem` (per participant) | `memory_limit` (`1GiB` / `64MiB`, the whole process) |
//! | strategy | each `--strategies` value of `parallel_sort_strategy` (2 participants only) | - | - |
//!
//! For each configuration the systems alternate run by run (weft's strategies, PostgreSQL,
//! DuckDB, then again), so that a machine getting slower or faster over time affects all alike;
//! we report medians over `--runs`.
//!
//! # Measurements
//! - **time**: wall time of the statement. weft: a clock around `Session::execute`; PostgreSQL:
//!   psql's `\timing` (includes one client round trip); DuckDB: `perf_counter` around
//!   `execute` + `fetchall`.
//! - **temp**: bytes written to temp files. weft: `SortReport::temp_bytes`; PostgreSQL: the
//!   change of `pg_stat_database.temp_bytes` around the statement (read after
//!   `pg_stat_force_next_flush()`); DuckDB: the *peak size* of its temp directory, sampled every
//!   3 ms (DuckDB keeps no count of bytes written).
//! - **sort mem**: the sort's own accounting, summed over participants (they run at the same
//!   time): a participant that sorted in memory counts its peak; one that spilled counts its
//!   budget, and the figure is then an upper bound, printed `≤`. weft: `SortReport::participants`;
//!   PostgreSQL: the `Sort Method: ... Memory: N kB` / `Disk:` lines of one extra
//!   `EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF)` execution per configuration in the first run
//!   (untimed; it also gives PostgreSQL's `Workers Launched`). DuckDB: n/a.
//! - **RSS Δ**: growth of the process's peak resident set during the statement over its
//!   resident set before (peak reset through `/proc/self/clear_refs`). weft and DuckDB (both
//!   in-process engines); n/a for PostgreSQL. A lower bound of what the statement used: memory
//!   the allocator kept resident from an earlier statement is reused without growing the
//!   resident set (weft's figure is often 0 after a bigger sort ran before).
//! - **serial fraction** (weft, 2 participants): the share of the sort's time during which only
//!   one participant worked,
//!
//!   ```text
//!   serial = (serial_run + serial_merge) / (run_phase + merge_phase)
//!   serial_run = max(run_phase - min over participants of elapsed,      -- sort report
//!                    pipeline.wall - pipeline.all_busy)                  -- SELECT only
//!                clipped to run_phase
//!   ```
//!
//!   `run_phase`, `merge_phase`, `serial_merge` (time within the merge during which only one
//!   participant worked) and each participant's `elapsed` (first row to run ready) come from
//!   `Session::last_sort_reports()`; the pipeline figures from `Session::last_pipeline_stats()`
//!   (time of the scan + run phase not every participant was busy), which only SELECT sets, so
//!   CREATE TABLE AS uses the sort report alone. With two participants "not every participant"
//!   is "only one". A sort that got one participant only is 100% serial.
//!
//! A statement that reports no sort (`last_sort_reports()` empty) prints n/a for weft's temp,
//! sort memory and serial fraction.
//!
//! # Correctness
//! All systems' `LIMIT 10` results must be equal, in every configuration: the key column in
//! the same order, and the rows as a multiset (ties may come in any order; when the 10th and
//! 11th keys tie, only the keys are compared). weft's rows must be in key order. Every
//! CREATE TABLE AS must give the same `count(*), sum(randint)` of `sorted`. A mismatch is
//! printed loudly and the command exits with status 1.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use weft::postgres::PgCluster;
use weft::workload;
use weft_sql::{Database, Session};
use weft_sort::{SortReport, SortSpace};

use crate::bench::{format_ms, format_ratio, median, median_f64};
use crate::bench_duckdb::{reply_lines, reply_time, sql_path, DuckDb};
use crate::cancel;

pub const STRATEGIES: [&str; 2] = ["partition", "leader_merge"];
const BUDGETS: [Budget; 2] = [
    Budget { name: "1GB", duckdb: "1GiB", bytes: 1 << 30 },
    Budget { name: "64MB", duckdb: "64MiB", bytes: 64 << 20 },
];
const PARTICIPANTS: [usize; 2] = [1, 2];
const LIMIT: usize = 10;

const DROP_SORTED: &str = "DROP TABLE IF EXISTS sorted";
const CHECK_SORTED: &str = "SELECT count(*), sum(randint) FROM sorted";
const PG_TEMP_BYTES: &str =
    "SELECT 'temp_bytes=' || temp_bytes FROM pg_stat_database WHERE datname = current_database()";

pub struct SortOptions {
    pub rows: u64,
    pub runs: usize,
    pub postgres: bool,
    pub duckdb: bool,
    /// `--set` start-up settings for weft (shared_buffers, work_mem, ... go to PostgreSQL too).
    pub settings: Vec<(String, String)>,
    /// `parallel_sort_strategy` values to run weft's 2-participant sorts with.
    pub strategies: Vec<String>,
}

/// Parse `--strategies partition,leader_merge`.
pub fn parse_strategies(text: &str) -> Result<Vec<String>, String> {
    let mut strategies = Vec::new();
    for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !STRATEGIES.contains(&name) {
            return Err(format!("unknown parallel_sort_strategy \"{name}\" (expected {})", STRATEGIES.join(", ")));
        }
        if !strategies.iter().any(|s| s == name) {
            strategies.push(name.to_string());
        }
    }
    if strategies.is_empty() {
        return Err("--strategies needs at least one strategy".to_string());
    }
    Ok(strategies)
}

#[derive(Clone, Copy, Debug)]
struct Budget {
    /// As `work_mem` takes it.
    name: &'static str,
    /// DuckDB's `memory_limit` (DuckDB reads `GB` as 10^9 bytes, `GiB` as 2^30).
    duckdb: &'static str,
    bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    CreateTableAs,
    Limit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Randint,
    Padding1,
}

impl Key {
    fn column(self) -> &'static str {
        match self {
            Key::Randint => "randint",
            Key::Padding1 => "padding1",
        }
    }

    /// Position of the key in a `SELECT *` row.
    fn field(self) -> usize {
        match self {
            Key::Randint => 0,
            Key::Padding1 => 1,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Workload {
    shape: Shape,
    key: Key,
}

const WORKLOADS: [Workload; 4] = [
    Workload { shape: Shape::CreateTableAs, key: Key::Randint },
    Workload { shape: Shape::CreateTableAs, key: Key::Padding1 },
    Workload { shape: Shape::Limit, key: Key::Randint },
    Workload { shape: Shape::Limit, key: Key::Padding1 },
];

impl Workload {
    fn sql(self) -> String {
        let column = self.key.column();
        match self.shape {
            Shape::CreateTableAs => format!("CREATE TABLE sorted AS SELECT * FROM parallel_sort_test ORDER BY {column}"),
            Shape::Limit => format!("SELECT * FROM parallel_sort_test ORDER BY {column} LIMIT {LIMIT}"),
        }
    }

    fn label(self) -> String {
        let column = self.key.column();
        match self.shape {
            Shape::CreateTableAs => format!("CREATE TABLE sorted AS SELECT * ... ORDER BY {column}"),
            Shape::Limit => format!("SELECT * ... ORDER BY {column} LIMIT {LIMIT}"),
        }
    }

    fn short(self) -> String {
        let column = self.key.column();
        match self.shape {
            Shape::CreateTableAs => format!("CTAS {column}"),
            Shape::Limit => format!("LIMIT {column}"),
        }
    }
}

/// Who ran a measurement. `Weft(Some(i))` is weft with `strategies[i]`; `Weft(None)` the
/// 1-participant sort, where the strategy has nothing to choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum System {
    Weft(Option<usize>),
    Postgres,
    DuckDb,
}

/// (workload, budget, participants, system), indices into the constants above.
type ConfigKey = (usize, usize, usize, System);

/// Memory figure: bytes, and whether it is an upper bound (a participant spilled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Memory {
    bytes: u64,
    upper_bound: bool,
}

/// One timed execution.
#[derive(Clone, Debug, Default)]
struct Measurement {
    time: Duration,
    temp_bytes: Option<u64>,
    sort_memory: Option<Memory>,
    rss_peak: Option<u64>,
    serial_fraction: Option<f64>,
    /// Participants that took part (weft: the sort's; PostgreSQL: 1 + workers launched).
    participants: Option<usize>,
}

/// The medians of a configuration's measurements.
#[derive(Clone, Debug, Default)]
struct Summary {
    time: Option<Duration>,
    temp_bytes: Option<u64>,
    sort_memory: Option<Memory>,
    rss_peak: Option<u64>,
    serial_fraction: Option<f64>,
    participants: Option<usize>,
}

impl Summary {
    fn of(samples: &[Measurement]) -> Summary {
        let times: Vec<Duration> = samples.iter().map(|m| m.time).collect();
        let memories: Vec<Memory> = samples.iter().filter_map(|m| m.sort_memory).collect();
        let sort_memory = {
            let mut sorted = memories.clone();
            sorted.sort_by_key(|m| m.bytes);
            sorted.get(sorted.len() / 2).copied()
        };
        Summary {
            time: median(&times),
            temp_bytes: median_u64(samples.iter().filter_map(|m| m.temp_bytes).collect()),
            sort_memory,
            rss_peak: median_u64(samples.iter().filter_map(|m| m.rss_peak).collect()),
            serial_fraction: median_f64(&samples.iter().filter_map(|m| m.serial_fraction).collect::<Vec<_>>()),
            participants: samples.iter().filter_map(|m| m.participants).min(),
        }
    }
}

/// What one execution answered, for the correctness check.
struct Answer {
    label: String,
    workload: usize,
    /// LIMIT: rows as `a|b|c`; CREATE TABLE AS: one `count|sum` line.
    lines: Vec<String>,
}

pub fn sort(options: &SortOptions) -> i32 {
    // Ctrl-C between statements must not exit the process before the temporary directories
    // and the PostgreSQL cluster are cleaned up: it is noticed between measurements instead.
    cancel::set_interactive(true);
    let code = match run(options) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("weft bench sort: {message}");
            1
        }
    };
    cancel::set_interactive(false);
    code
}

struct Bench<'a> {
    options: &'a SortOptions,
    samples: BTreeMap<ConfigKey, Vec<Measurement>>,
    answers: Vec<Answer>,
    /// Failed measurements: (configuration, run, message).
    failures: Vec<(ConfigKey, usize, String)>,
    /// The 10th and 11th key of each workload's order tie (in weft's table).
    boundary_tie: [bool; 4],
}

fn run(options: &SortOptions) -> Result<i32, String> {
    let runs = options.runs.max(1);
    let mut postgres = options.postgres;
    if postgres && !PgCluster::available() {
        eprintln!("weft bench sort: PostgreSQL 15 is not installed ({}); skipping it", weft::postgres::PG_BIN_DIR);
        postgres = false;
    }
    outln!(
        "weft bench sort: parallel_sort_test with generate_series(0, {}), {runs} run(s) per configuration, \
         weft strategies: {}\n",
        options.rows,
        options.strategies.join(", ")
    );
    let workdir = tempfile::Builder::new()
        .prefix("weft-bench-sort-")
        .tempdir()
        .map_err(|e| format!("could not create a temporary directory: {e}"))?;

    // weft.
    let database = Database::open(&workdir.path().join("data"), &options.settings).map_err(|e| e.to_psql_string())?;
    let mut session = database.session();
    let load = run_weft(&mut session, &workload::create_parallel_sort_test(options.rows))?;
    outln!("set-up: weft          parallel_sort_test built in {}", format_ms(Some(load)));
    let mut bench = Bench {
        options,
        samples: BTreeMap::new(),
        answers: Vec::new(),
        failures: Vec::new(),
        boundary_tie: [false; 4],
    };
    for (index, workload) in WORKLOADS.iter().enumerate() {
        bench.boundary_tie[index] = boundary_tie(&mut session, workload.key)?;
    }

    // PostgreSQL 15.
    let cluster = if postgres {
        Some(crate::bench::postgres_with_seed_table(options.rows, &options.settings)?)
    } else {
        None
    };

    // DuckDB.
    let mut duckdb = if options.duckdb {
        match duckdb_start(workdir.path(), &mut session) {
            Ok((duckdb, load)) => {
                outln!(
                    "set-up: DuckDB {:<7} parallel_sort_test loaded from weft's CSV in {}",
                    duckdb.version,
                    format_ms(Some(load))
                );
                Some(duckdb)
            }
            Err(why) => {
                eprintln!("weft bench sort: skipping DuckDB: {why}");
                None
            }
        }
    } else {
        None
    };
    outln!();

    let mut interrupted = false;
    'configurations: for (w, workload) in WORKLOADS.iter().enumerate() {
        for (b, budget) in BUDGETS.iter().enumerate() {
            for &participants in &PARTICIPANTS {
                for run in 1..=runs {
                    let strategies: Vec<Option<usize>> = if participants == 1 {
                        vec![None]
                    } else {
                        (0..options.strategies.len()).map(Some).collect()
                    };
                    for strategy in strategies {
                        let system = System::Weft(strategy);
                        let strategy_name = strategy.map(|i| options.strategies[i].as_str());
                        let outcome = weft_measure(&mut session, *workload, *budget, participants, strategy_name);
                        bench.record(run, (w, b, participants, system), outcome);
                        if cancel::take_interrupt() {
                            interrupted = true;
                            break 'configurations;
                        }
                    }
                    if let Some(cluster) = &cluster {
                        let outcome = postgres_measure(cluster, *workload, *budget, participants, run == 1);
                        bench.record(run, (w, b, participants, System::Postgres), outcome);
                    }
                    if let Some(driver) = duckdb.as_mut() {
                        let outcome = duckdb_measure(driver, *workload, *budget, participants);
                        let died = outcome.is_err() && !driver.alive();
                        bench.record(run, (w, b, participants, System::DuckDb), outcome);
                        if died {
                            eprintln!("weft bench sort: the DuckDB driver exited; going on without DuckDB");
                            duckdb = None;
                        }
                    }
                    if cancel::take_interrupt() {
                        interrupted = true;
                        break 'configurations;
                    }
                }
            }
        }
    }
    // Stop DuckDB before its directory goes.
    let duckdb_ran = duckdb.is_some() || bench.samples.keys().any(|k| k.3 == System::DuckDb);
    drop(duckdb);
    if interrupted {
        eprintln!("weft bench sort: interrupted; cleaning up");
        return Ok(130);
    }
    outln!();
    let mismatches = bench.check_answers();
    bench.print(runs, cluster.is_some(), duckdb_ran, &mismatches);
    drop(cluster);
    drop(session);
    drop(database);
    drop(workdir);
    // DuckDB running out of its memory_limit is a finding about DuckDB, not a failed benchmark.
    let fatal = bench.failures.iter().any(|(key, _, _)| key.3 != System::DuckDb);
    Ok(if mismatches.is_empty() && !fatal { 0 } else { 1 })
}

impl Bench<'_> {
    fn system_label(&self, system: System) -> String {
        match system {
            System::Weft(None) => "weft".to_string(),
            System::Weft(Some(i)) => format!("weft {}", self.options.strategies[i]),
            System::Postgres => "PostgreSQL 15".to_string(),
            System::DuckDb => "DuckDB".to_string(),
        }
    }

    fn config_label(&self, key: ConfigKey) -> String {
        let (w, b, participants, system) = key;
        format!("{} work_mem={} participants={} {}", WORKLOADS[w].short(), BUDGETS[b].name, participants, self.system_label(system))
    }

    fn record(&mut self, run: usize, key: ConfigKey, outcome: Result<(Measurement, Vec<String>), String>) {
        let label = self.config_label(key);
        match outcome {
            Ok((measurement, lines)) => {
                let (w, _, requested, system) = key;
                let serial = match system {
                    System::Weft(_) => format!("  serial {:>6}", format_serial(measurement.serial_fraction, requested)),
                    _ => String::new(),
                };
                outln!(
                    "run {run}  {label:<58} {:>11}  temp {:>9}  sort mem {:>10}  RSS Δ {:>9}{serial}{}",
                    format_ms(Some(measurement.time)),
                    format_bytes(measurement.temp_bytes),
                    format_memory(measurement.sort_memory),
                    format_bytes(measurement.rss_peak),
                    match measurement.participants {
                        Some(n) if n != requested => format!("  ({n} participant(s) took part)"),
                        _ => String::new(),
                    }
                );
                self.answers.push(Answer { label: format!("run {run} {label}"), workload: w, lines });
                self.samples.entry(key).or_default().push(measurement);
            }
            Err(message) => {
                eprintln!("run {run}  {label}: FAILED: {message}");
                self.failures.push((key, run, message));
            }
        }
    }

    /// Compare every answer with the first of its workload; check weft's key order.
    fn check_answers(&self) -> Vec<String> {
        let mut mismatches = Vec::new();
        for (w, workload) in WORKLOADS.iter().enumerate() {
            let answers: Vec<&Answer> = self.answers.iter().filter(|a| a.workload == w).collect();
            let Some(reference) = answers.first() else { continue };
            let canonical = |lines: &[String]| match workload.shape {
                Shape::CreateTableAs => lines.to_vec(),
                Shape::Limit => canonical_rows(lines, workload.key, self.boundary_tie[w]),
            };
            let expected = canonical(&reference.lines);
            if workload.shape == Shape::Limit && reference.lines.len() != LIMIT {
                mismatches.push(format!(
                    "{}: {} rows, expected {LIMIT}: {:?}",
                    reference.label,
                    reference.lines.len(),
                    reference.lines
                ));
            }
            for answer in &answers {
                if workload.shape == Shape::Limit && answer.label.contains(" weft") && !in_key_order(&answer.lines, workload.key)
                {
                    mismatches.push(format!("{}: rows not in {} order: {:?}", answer.label, workload.key.column(), answer.lines));
                }
                if canonical(&answer.lines) != expected {
                    mismatches.push(format!(
                        "{}: answered {:?}\n    but {} answered {:?}",
                        answer.label, answer.lines, reference.label, reference.lines
                    ));
                }
            }
        }
        mismatches
    }

    /// The median time, or why there is none (`out of memory`, `failed`).
    fn time_cell(&self, key: ConfigKey) -> String {
        match self.summary(key).and_then(|s| s.time) {
            Some(time) => format_ms(Some(time)),
            None => match self.failures.iter().find(|(k, _, _)| *k == key) {
                Some((_, _, message)) if message.contains("Out of Memory") => "out of memory".to_string(),
                Some(_) => "failed".to_string(),
                None => "-".to_string(),
            },
        }
    }

    fn summary(&self, key: ConfigKey) -> Option<Summary> {
        self.samples.get(&key).map(|s| Summary::of(s))
    }

    /// weft's summary that PostgreSQL and DuckDB are compared with: the 1-participant sort,
    /// or the first `--strategies` value.
    fn weft_reference(&self, w: usize, b: usize, participants: usize) -> Option<Summary> {
        let strategy = if participants == 1 { None } else { Some(0) };
        self.summary((w, b, participants, System::Weft(strategy)))
    }

    fn weft_systems(&self, participants: usize) -> Vec<System> {
        if participants == 1 {
            vec![System::Weft(None)]
        } else {
            (0..self.options.strategies.len()).map(|i| System::Weft(Some(i))).collect()
        }
    }

    fn print(&self, runs: usize, postgres: bool, duckdb: bool, mismatches: &[String]) {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        outln!(
            "medians of {runs} run(s); parallel_sort_test = generate_series(0, {}); {cores} core(s)\n\
             vs weft: this system's time / weft's (for 2 participants, weft {}); speedup: weft's \
             1-participant time / this one's",
            self.options.rows,
            self.options.strategies[0]
        );
        let mut others = Vec::new();
        if postgres {
            others.push(System::Postgres);
        }
        if duckdb {
            others.push(System::DuckDb);
        }
        for (w, workload) in WORKLOADS.iter().enumerate() {
            outln!("\n{}", workload.label());
            outln!(
                "{:<9} {:>3}  {:<18} {:>12} {:>10} {:>11} {:>10} {:>7} {:>8} {:>8}",
                "work_mem",
                "P",
                "system",
                "time",
                "temp",
                "sort mem",
                "RSS Δ",
                "serial",
                "vs weft",
                "speedup"
            );
            for (b, budget) in BUDGETS.iter().enumerate() {
                for &participants in &PARTICIPANTS {
                    let reference = self.weft_reference(w, b, participants);
                    let serial_time = self.weft_reference(w, b, 1).and_then(|s| s.time);
                    let mut systems = self.weft_systems(participants);
                    systems.extend(&others);
                    for system in systems {
                        let Some(summary) = self.summary((w, b, participants, system)) else {
                            let cell = self.time_cell((w, b, participants, system));
                            outln!("{:<9} {participants:>3}  {:<18} {cell:>12}", budget.name, self.system_label(system));
                            continue;
                        };
                        let is_weft = matches!(system, System::Weft(_));
                        let vs_weft = if is_weft { String::new() } else { format_ratio(summary.time, reference.as_ref().and_then(|r| r.time)) };
                        let speedup = if is_weft && participants > 1 { format_ratio(serial_time, summary.time) } else { String::new() };
                        let temp = match system {
                            System::DuckDb => summary.temp_bytes.map(|b| format!("{} pk", format_bytes(Some(b)))).unwrap_or("n/a".into()),
                            _ => format_bytes(summary.temp_bytes),
                        };
                        let took_part = match summary.participants {
                            Some(n) if n != participants => format!("  ({n} took part)"),
                            _ => String::new(),
                        };
                        outln!(
                            "{:<9} {participants:>3}  {:<18} {:>12} {:>10} {:>11} {:>10} {:>7} {:>8} {:>8}{took_part}",
                            budget.name,
                            self.system_label(system),
                            format_ms(summary.time),
                            temp,
                            format_memory(summary.sort_memory),
                            format_bytes(summary.rss_peak),
                            if is_weft { format_serial(summary.serial_fraction, participants) } else { "".into() },
                            vs_weft,
                            speedup
                        );
                    }
                }
            }
        }
        outln!(
            "\n(N took part): the participants that actually worked, when fewer than asked for \
             (PostgreSQL: its planner chose fewer workers; from EXPLAIN ANALYZE in run 1)."
        );
        if duckdb {
            outln!("DuckDB's temp is the peak size of its temp directory (\"pk\"), not bytes written.");
        }

        outln!();
        let goals = self.goals(postgres, duckdb);
        outln!("Goals of the parallel tuplesort issue:");
        for line in &goals {
            outln!("  {line}");
        }
        if !self.failures.is_empty() {
            eprintln!("\nweft bench sort: {} MEASUREMENT(S) FAILED:", self.failures.len());
            for (key, run, message) in &self.failures {
                eprintln!("  run {run} {}: {}", self.config_label(*key), message.lines().next().unwrap_or(""));
            }
        }
        if mismatches.is_empty() {
            outln!(
                "\nresults match: every LIMIT {LIMIT} answer and every CREATE TABLE AS count/sum agree across systems and configurations ({} answers)",
                self.answers.len()
            );
        } else {
            eprintln!("\nweft bench sort: RESULTS DIFFER ({} mismatch(es)):", mismatches.len());
            for mismatch in mismatches {
                eprintln!("  MISMATCH {mismatch}");
            }
        }

        outln!("\nMarkdown for docs/PERFORMANCE.md:\n");
        let mut header = "| workload | work_mem | participants | weft strategy | weft | temp | sort mem | serial fraction |".to_string();
        let mut rule = "|---|---|---:|---|---:|---:|---:|---:|".to_string();
        if postgres {
            header.push_str(" PostgreSQL 15 | PG temp | PostgreSQL / weft |");
            rule.push_str("---:|---:|---:|");
        }
        if duckdb {
            header.push_str(" DuckDB | DuckDB / weft |");
            rule.push_str("---:|---:|");
        }
        outln!("{header}\n{rule}");
        for (w, workload) in WORKLOADS.iter().enumerate() {
            for (b, budget) in BUDGETS.iter().enumerate() {
                for &participants in &PARTICIPANTS {
                    let pg = self.summary((w, b, participants, System::Postgres));
                    let duck = self.summary((w, b, participants, System::DuckDb));
                    for system in self.weft_systems(participants) {
                        let weft = self.summary((w, b, participants, system)).unwrap_or_default();
                        let strategy = match system {
                            System::Weft(Some(i)) => format!("`{}`", self.options.strategies[i]),
                            _ => "-".into(),
                        };
                        let mut line = format!(
                            "| `{}` | {} | {participants} | {strategy} | {} | {} | {} | {} |",
                            workload.label(),
                            budget.name,
                            self.time_cell((w, b, participants, system)),
                            format_bytes(weft.temp_bytes),
                            format_memory(weft.sort_memory),
                            format_serial(weft.serial_fraction, participants)
                        );
                        if postgres {
                            let pg_time = pg.as_ref().and_then(|s| s.time);
                            let took_part = match pg.as_ref().and_then(|s| s.participants) {
                                Some(n) if n != participants => format!(" ({n} took part)"),
                                _ => String::new(),
                            };
                            line.push_str(&format!(
                                " {}{took_part} | {} | {} |",
                                self.time_cell((w, b, participants, System::Postgres)),
                                format_bytes(pg.as_ref().and_then(|s| s.temp_bytes)),
                                format_ratio(pg_time, weft.time)
                            ));
                        }
                        if duckdb {
                            let duck_time = duck.as_ref().and_then(|s| s.time);
                            line.push_str(&format!(
                                " {} | {} |",
                                self.time_cell((w, b, participants, System::DuckDb)),
                                format_ratio(duck_time, weft.time)
                            ));
                        }
                        outln!("{line}");
                    }
                }
            }
        }
        outln!(
            "\nMedians of {runs} run(s), systems alternating run by run, on {cores} core(s); `work_mem` per \
             participant (DuckDB: `memory_limit` for the whole process, `threads` = participants). \
             PostgreSQL 15 with fsync=off, `max_parallel_workers_per_gather` = participants - 1. \
             Serial fraction: share of the sort's time (run + merge phase) during which one participant worked."
        );
        outln!();
        for line in &goals {
            outln!("- {line}");
        }
    }

    /// The issue's five goals, each with its worst case.
    fn goals(&self, postgres: bool, duckdb: bool) -> Vec<String> {
        let mut lines = Vec::new();
        let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
        // (ratio, where) pairs → the worst by `worse`.
        let worst = |items: Vec<(f64, String)>, smallest: bool| -> Option<(f64, String)> {
            items.into_iter().reduce(|a, b| if (b.0 < a.0) == smallest { b } else { a })
        };
        let time_of = |key: ConfigKey| self.summary(key).and_then(|s| s.time).map(|t| t.as_secs_f64());
        let weft_configs = || {
            let mut configs = Vec::new();
            for w in 0..WORKLOADS.len() {
                for b in 0..BUDGETS.len() {
                    for &p in &PARTICIPANTS {
                        for system in self.weft_systems(p) {
                            configs.push((w, b, p, system));
                        }
                    }
                }
            }
            configs
        };
        let place = |key: ConfigKey| {
            let (w, b, p, system) = key;
            format!("{}, {}, {p} participant(s), {}", WORKLOADS[w].short(), BUDGETS[b].name, self.system_label(system))
        };
        for (other, name, target) in [(System::Postgres, "PostgreSQL", 5.0), (System::DuckDb, "DuckDB", 1.0)] {
            if (other == System::Postgres && !postgres) || (other == System::DuckDb && !duckdb) {
                lines.push(format!("at least {target}x faster than {name}: not measured"));
                continue;
            }
            let ratios: Vec<(f64, String)> = weft_configs()
                .into_iter()
                .filter_map(|key| {
                    let (w, b, p, _) = key;
                    Some((time_of((w, b, p, other))? / time_of(key)?, place(key)))
                })
                .collect();
            lines.push(match worst(ratios, true) {
                Some((ratio, at)) => format!(
                    "{name} / weft at least {target:.1}x at equal participants: {} (lowest {ratio:.2}x: {at})",
                    verdict(ratio >= target)
                ),
                None => format!("{name} / weft at least {target:.1}x: n/a"),
            });
        }
        let speedups: Vec<(f64, String)> = weft_configs()
            .into_iter()
            .filter(|k| k.2 == 2)
            .filter_map(|key| {
                let (w, b, _, _) = key;
                Some((time_of((w, b, 1, System::Weft(None)))? / time_of(key)?, place(key)))
            })
            .collect();
        lines.push(match worst(speedups, true) {
            Some((s, at)) => format!("2-participant speedup at least 1.8x: {} (lowest {s:.2}x: {at})", verdict(s >= 1.8)),
            None => "2-participant speedup at least 1.8x: n/a".into(),
        });
        match self.options.strategies.iter().position(|s| s == "partition") {
            Some(i) => {
                let fractions: Vec<(f64, String)> = weft_configs()
                    .into_iter()
                    .filter(|k| k.3 == System::Weft(Some(i)))
                    .filter_map(|key| Some((self.summary(key)?.serial_fraction?, place(key))))
                    .collect();
                lines.push(match worst(fractions, false) {
                    Some((f, at)) => format!(
                        "serial fraction at most 10% with the partition strategy: {} (highest {:.1}%: {at})",
                        verdict(f <= 0.10),
                        f * 100.0
                    ),
                    None => "serial fraction at most 10% with the partition strategy: n/a (no sort reports)".into(),
                });
            }
            None => lines.push("serial fraction at most 10% with the partition strategy: not measured".into()),
        }
        let slowdowns: Vec<(f64, String)> = weft_configs()
            .into_iter()
            .filter(|k| k.1 == 1)
            .filter_map(|key| {
                let (w, _, p, system) = key;
                Some((time_of(key)? / time_of((w, 0, p, system))?, place(key)))
            })
            .collect();
        lines.push(match worst(slowdowns, false) {
            Some((r, at)) => format!(
                "64MB no more than 1.5x slower than 1GB: {} (highest {r:.2}x: {at})",
                verdict(r <= 1.5)
            ),
            None => "64MB no more than 1.5x slower than 1GB: n/a".into(),
        });
        lines
    }
}

// ---------------------------------------------------------------------------------------------
// weft

fn run_weft(session: &mut Session, sql: &str) -> Result<Duration, String> {
    let handle = session.cancel_handle();
    let started = Instant::now();
    cancel::while_running(handle, || session.execute(sql)).map_err(|e| format!("{sql}\n{}", e.to_psql_string()))?;
    Ok(started.elapsed())
}

fn weft_rows(session: &mut Session, sql: &str) -> Result<Vec<String>, String> {
    let result = session.execute(sql).map_err(|e| format!("{sql}\n{}", e.to_psql_string()))?;
    Ok(result
        .rows
        .iter()
        .map(|row| row.iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join("|"))
        .collect())
}

/// Do the 10th and 11th keys of `ORDER BY key` tie? Then LIMIT 10 may legitimately differ
/// beyond the key column.
fn boundary_tie(session: &mut Session, key: Key) -> Result<bool, String> {
    let column = key.column();
    let keys = weft_rows(session, &format!("SELECT {column} FROM parallel_sort_test ORDER BY {column} LIMIT {}", LIMIT + 1))?;
    Ok(keys.len() > LIMIT && keys[LIMIT - 1] == keys[LIMIT])
}

fn weft_measure(
    session: &mut Session,
    workload: Workload,
    budget: Budget,
    participants: usize,
    strategy: Option<&str>,
) -> Result<(Measurement, Vec<String>), String> {
    run_weft(session, &format!("SET max_parallel_workers_per_gather = {}", participants - 1))?;
    run_weft(session, &format!("SET work_mem = '{}'", budget.name))?;
    if let Some(strategy) = strategy {
        run_weft(session, &format!("SET parallel_sort_strategy = '{strategy}'"))?;
    }
    if workload.shape == Shape::CreateTableAs {
        run_weft(session, DROP_SORTED)?;
    }
    let sql = workload.sql();
    let rss = PeakRss::start();
    let handle = session.cancel_handle();
    let started = Instant::now();
    let result = cancel::while_running(handle, || session.execute(&sql));
    let time = started.elapsed();
    let rss_peak = rss.growth();
    let result = result.map_err(|e| e.to_psql_string())?;
    let reports = session.last_sort_reports();
    let pipeline = match workload.shape {
        Shape::Limit => session.last_pipeline_stats().first().cloned(),
        // Only SELECT sets the pipeline statistics: after CREATE TABLE AS they are stale.
        Shape::CreateTableAs => None,
    };
    let sorts: Vec<SortFigures> = reports.iter().map(SortFigures::of).collect();
    let took_part = reports
        .first()
        .map(|r| r.participants.len())
        .or_else(|| pipeline.as_ref().map(|p| p.workers_launched + 1));
    let measurement = Measurement {
        time,
        temp_bytes: (!reports.is_empty()).then(|| reports.iter().map(|r| r.temp_bytes).sum()),
        sort_memory: sort_memory(&sorts, budget.bytes),
        rss_peak,
        serial_fraction: sort_serial_fraction(&sorts, pipeline.as_ref().map(|p| p.wall.saturating_sub(p.all_busy))),
        participants: took_part,
    };
    let lines = match workload.shape {
        Shape::Limit => result
            .rows
            .iter()
            .map(|row| row.iter().map(|d| d.to_pg_text().unwrap_or_default()).collect::<Vec<_>>().join("|"))
            .collect(),
        Shape::CreateTableAs => {
            let check = weft_rows(session, CHECK_SORTED)?;
            run_weft(session, DROP_SORTED)?;
            check
        }
    };
    Ok((measurement, lines))
}

/// What the bench reads from one `SortReport`, in plain figures (so that the arithmetic
/// below does not follow every change of the report's shape).
#[derive(Clone, Debug, PartialEq)]
struct SortFigures {
    run_phase: Duration,
    merge_phase: Duration,
    serial_merge: Duration,
    /// Per participant: first row to run ready, and its memory peak (`None`: it spilled).
    participants: Vec<(Duration, Option<u64>)>,
}

impl SortFigures {
    fn of(report: &SortReport) -> SortFigures {
        SortFigures {
            run_phase: report.run_phase,
            merge_phase: report.merge_phase,
            serial_merge: report.serial_merge,
            participants: report
                .participants
                .iter()
                .map(|p| (p.elapsed, (p.space == SortSpace::Memory).then_some(p.space_bytes)))
                .collect(),
        }
    }
}

/// The sort's memory, summed over participants (they hold it at the same time); a
/// participant that spilled counts its budget, and the figure is an upper bound. The largest
/// over the statement's sorts. `None` without a sort report.
fn sort_memory(sorts: &[SortFigures], budget: u64) -> Option<Memory> {
    sorts
        .iter()
        .map(|sort| {
            let mut memory = Memory { bytes: 0, upper_bound: false };
            for (_, peak) in &sort.participants {
                match peak {
                    Some(bytes) => memory.bytes += bytes,
                    None => {
                        memory.bytes += budget;
                        memory.upper_bound = true;
                    }
                }
            }
            memory
        })
        .max_by_key(|m| m.bytes)
}

/// The share of the sort's time (run phase + merge phase) during which only one participant
/// worked; see the module documentation for the formula. `pipeline_serial` is the scan + run
/// pipeline's `wall - all_busy`, when the statement set it (SELECT).
fn sort_serial_fraction(sorts: &[SortFigures], pipeline_serial: Option<Duration>) -> Option<f64> {
    let sort = sorts.first()?;
    let total = sort.run_phase + sort.merge_phase;
    if total.is_zero() {
        return None;
    }
    if sort.participants.len() <= 1 {
        return Some(1.0);
    }
    let first_done = sort.participants.iter().map(|(elapsed, _)| *elapsed).min().unwrap_or_default();
    let mut serial_run = sort.run_phase.saturating_sub(first_done);
    if let Some(pipeline_serial) = pipeline_serial {
        serial_run = serial_run.max(pipeline_serial);
    }
    let serial_run = serial_run.min(sort.run_phase);
    let serial_merge = sort.serial_merge.min(sort.merge_phase);
    Some((serial_run + serial_merge).as_secs_f64() / total.as_secs_f64())
}

/// Growth of this process's peak resident set over a span: `/proc/self/clear_refs` resets
/// the peak (`VmHWM`) to the current resident set.
struct PeakRss {
    before: Option<u64>,
}

impl PeakRss {
    fn start() -> PeakRss {
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        PeakRss { before: if reset { proc_status_bytes("VmRSS") } else { None } }
    }

    fn growth(&self) -> Option<u64> {
        let before = self.before?;
        Some(proc_status_bytes("VmHWM")?.saturating_sub(before))
    }
}

fn proc_status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kb: u64 = line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

fn postgres_setup(budget: Budget, participants: usize) -> Vec<String> {
    vec![
        format!("SET max_parallel_workers_per_gather = {}", participants - 1),
        format!("SET work_mem = '{}'", budget.name),
        "SET parallel_leader_participation = on".to_string(),
    ]
}

fn postgres_measure(
    cluster: &PgCluster,
    workload: Workload,
    budget: Budget,
    participants: usize,
    explain: bool,
) -> Result<(Measurement, Vec<String>), String> {
    let setup = postgres_setup(budget, participants);
    let sql = workload.sql();
    let mut statements: Vec<String> = setup.clone();
    if workload.shape == Shape::CreateTableAs {
        statements.push(DROP_SORTED.to_string());
    }
    statements.push(PG_TEMP_BYTES.to_string());
    let timed_index = statements.len();
    statements.push(sql.clone());
    if workload.shape == Shape::CreateTableAs {
        statements.push("SELECT 'check=' || count(*) || '|' || sum(randint) FROM sorted".to_string());
        statements.push(DROP_SORTED.to_string());
    }
    // Flush this backend's statistics now, not up to a second later, then read them again.
    statements.push("SELECT pg_stat_force_next_flush()".to_string());
    statements.push(PG_TEMP_BYTES.to_string());
    let refs: Vec<&str> = statements.iter().map(String::as_str).collect();
    let output = cluster.run(&refs).map_err(|e| e.to_string())?;
    if output.timings.len() != statements.len() {
        return Err(format!("expected {} timings from psql, got {}", statements.len(), output.timings.len()));
    }
    let mut temp = Vec::new();
    let mut lines = Vec::new();
    for line in output.lines.iter().filter(|l| !l.is_empty()) {
        if let Some(bytes) = line.strip_prefix("temp_bytes=") {
            temp.push(bytes.parse::<u64>().map_err(|e| format!("temp_bytes {bytes:?}: {e}"))?);
        } else if let Some(check) = line.strip_prefix("check=") {
            lines.push(check.to_string());
        } else {
            lines.push(line.clone());
        }
    }
    let temp_bytes = match temp.as_slice() {
        [before, after] => Some(after.saturating_sub(*before)),
        _ => None,
    };
    let mut measurement = Measurement { time: output.timings[timed_index], temp_bytes, ..Measurement::default() };
    if explain {
        let (memory, took_part) = postgres_explain(cluster, &setup, workload, budget)?;
        measurement.sort_memory = memory;
        measurement.participants = Some(took_part);
    }
    Ok((measurement, lines))
}

/// One untimed `EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF)`: the sorts' memory and the
/// participants that took part.
fn postgres_explain(
    cluster: &PgCluster,
    setup: &[String],
    workload: Workload,
    budget: Budget,
) -> Result<(Option<Memory>, usize), String> {
    let mut statements: Vec<String> = setup.to_vec();
    let explain = format!("EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) {}", workload.sql());
    statements.push(explain);
    if workload.shape == Shape::CreateTableAs {
        statements.push(DROP_SORTED.to_string());
    }
    let refs: Vec<&str> = statements.iter().map(String::as_str).collect();
    let output = cluster.run(&refs).map_err(|e| e.to_string())?;
    Ok(parse_explain(&output.lines, budget.bytes))
}

/// From EXPLAIN ANALYZE text: the sum of the `Sort Method: ... Memory: N kB` figures (a
/// `Disk:` participant counts its budget and makes the sum an upper bound), and 1 + workers
/// launched.
fn parse_explain(lines: &[String], budget: u64) -> (Option<Memory>, usize) {
    let mut memory: Option<Memory> = None;
    let mut workers = 0;
    for line in lines {
        if let Some(at) = line.find("Sort Method: ") {
            let rest = &line[at..];
            let entry = memory.get_or_insert(Memory { bytes: 0, upper_bound: false });
            if let Some(kb) = rest.split("Memory: ").nth(1).and_then(|s| s.split("kB").next()).and_then(|s| s.trim().parse::<u64>().ok()) {
                entry.bytes += kb * 1024;
            } else if rest.contains("Disk: ") {
                entry.bytes += budget;
                entry.upper_bound = true;
            }
        }
        if let Some(n) = line.trim().strip_prefix("Workers Launched: ").and_then(|n| n.trim().parse::<usize>().ok()) {
            workers += n;
        }
    }
    (memory, 1 + workers)
}

// ---------------------------------------------------------------------------------------------
// DuckDB

/// Start DuckDB (`bench_duckdb`) in `workdir/duckdb` and load weft's `parallel_sort_test`
/// into it through a CSV file: DuckDB has no `hashint8` to build the same table itself.
fn duckdb_start(workdir: &Path, session: &mut Session) -> Result<(DuckDb, Duration), String> {
    let mut duckdb = DuckDb::start(&workdir.join("duckdb"))?;
    let csv = workdir.join("parallel_sort_test.csv");
    run_weft(session, &format!("COPY parallel_sort_test TO '{}' WITH (FORMAT csv)", sql_path(&csv)))?;
    let started = Instant::now();
    let loaded = duckdb.request(&serde_json::json!({
        "setup": ["CREATE TABLE parallel_sort_test (randint INTEGER, padding1 VARCHAR, padding2 VARCHAR)"],
        "sql": format!("COPY parallel_sort_test FROM '{}' (FORMAT csv, HEADER false)", sql_path(&csv)),
        "after": ["CHECKPOINT"],
    }));
    let load = started.elapsed();
    let _ = std::fs::remove_file(&csv);
    loaded?;
    Ok((duckdb, load))
}

fn duckdb_measure(
    duckdb: &mut DuckDb,
    workload: Workload,
    budget: Budget,
    participants: usize,
) -> Result<(Measurement, Vec<String>), String> {
    let mut setup = vec![format!("SET threads = {participants}"), format!("SET memory_limit = '{}'", budget.duckdb)];
    let mut after = Vec::new();
    if workload.shape == Shape::CreateTableAs {
        setup.push(DROP_SORTED.to_string());
        after.push(CHECK_SORTED.to_string());
        after.push(DROP_SORTED.to_string());
    }
    let reply = duckdb.request(&serde_json::json!({
        "setup": setup,
        "sql": workload.sql(),
        "fetch": workload.shape == Shape::Limit,
        "after": after,
    }))?;
    let lines = match workload.shape {
        Shape::Limit => reply_lines(&reply["rows"]),
        Shape::CreateTableAs => reply_lines(&reply["after"][0]),
    };
    let measurement = Measurement {
        time: reply_time(&reply)?,
        temp_bytes: reply.get("temp_peak").and_then(|v| v.as_u64()),
        rss_peak: reply.get("rss_peak").and_then(|v| v.as_u64()),
        ..Measurement::default()
    };
    Ok((measurement, lines))
}

// ---------------------------------------------------------------------------------------------
// Comparison and formatting

/// A LIMIT answer in a form that is equal across correct systems: the keys in order, then
/// (unless the 10th key ties with the 11th) the rows sorted, since rows with equal keys may
/// come in any order.
fn canonical_rows(lines: &[String], key: Key, boundary_tie: bool) -> Vec<String> {
    let mut canonical: Vec<String> = lines.iter().map(|l| l.split('|').nth(key.field()).unwrap_or("").to_string()).collect();
    if !boundary_tie {
        let mut rows = lines.to_vec();
        rows.sort();
        canonical.push("--".to_string());
        canonical.extend(rows);
    }
    canonical
}

/// Are the rows in ascending key order (randint as a number, padding1 bytewise: C collation)?
fn in_key_order(lines: &[String], key: Key) -> bool {
    let keys: Vec<&str> = lines.iter().map(|l| l.split('|').nth(key.field()).unwrap_or("")).collect();
    keys.windows(2).all(|pair| match key {
        Key::Randint => match (pair[0].parse::<i64>(), pair[1].parse::<i64>()) {
            (Ok(a), Ok(b)) => a <= b,
            _ => false,
        },
        Key::Padding1 => pair[0].as_bytes() <= pair[1].as_bytes(),
    })
}

fn median_u64(mut values: Vec<u64>) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    Some(values[values.len() / 2])
}

/// `12.3 MB`, in PostgreSQL's 1024-based units.
fn format_bytes(bytes: Option<u64>) -> String {
    let Some(bytes) = bytes else { return "n/a".to_string() };
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

fn format_memory(memory: Option<Memory>) -> String {
    match memory {
        None => "n/a".to_string(),
        Some(m) => format!("{}{}", if m.upper_bound { "≤" } else { "" }, format_bytes(Some(m.bytes))),
    }
}

/// A serial fraction; "-" for a 1-participant configuration, where it means nothing.
fn format_serial(fraction: Option<f64>, participants: usize) -> String {
    if participants <= 1 {
        return "-".to_string();
    }
    match fraction {
        Some(f) => format!("{:.1}%", f * 100.0),
        None => "n/a".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_parse() {
        assert_eq!(parse_strategies("partition,leader_merge").unwrap(), vec!["partition", "leader_merge"]);
        assert_eq!(parse_strategies(" leader_merge ").unwrap(), vec!["leader_merge"]);
        assert!(parse_strategies("quick").is_err());
        assert!(parse_strategies("").is_err());
    }

    #[test]
    fn explain_figures() {
        let lines: Vec<String> = [
            "Gather Merge (actual rows=10 loops=1)",
            "  Workers Planned: 1",
            "  Workers Launched: 1",
            "  ->  Sort (actual rows=10 loops=2)",
            "        Sort Method: top-N heapsort  Memory: 26kB",
            "        Worker 0:  Sort Method: top-N heapsort  Memory: 25kB",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (memory, participants) = parse_explain(&lines, 1 << 30);
        assert_eq!(memory, Some(Memory { bytes: 51 * 1024, upper_bound: false }));
        assert_eq!(participants, 2);
        let disk = vec!["  Sort Method: external merge  Disk: 5000kB".to_string()];
        assert_eq!(parse_explain(&disk, 64 << 20), (Some(Memory { bytes: 64 << 20, upper_bound: true }), 1));
        assert_eq!(parse_explain(&[], 1), (None, 1));
    }

    #[test]
    fn answers_compare_modulo_ties() {
        let a = vec!["1|x|p".to_string(), "1|y|q".to_string(), "2|z|r".to_string()];
        let b = vec!["1|y|q".to_string(), "1|x|p".to_string(), "2|z|r".to_string()];
        assert_eq!(canonical_rows(&a, Key::Randint, false), canonical_rows(&b, Key::Randint, false));
        let c = vec!["1|x|p".to_string(), "1|y|q".to_string(), "2|w|r".to_string()];
        assert_ne!(canonical_rows(&a, Key::Randint, false), canonical_rows(&c, Key::Randint, false));
        assert_eq!(canonical_rows(&a, Key::Randint, true), canonical_rows(&c, Key::Randint, true));
        assert!(in_key_order(&a, Key::Randint));
        assert!(!in_key_order(&["-1|b|".to_string(), "-2|a|".to_string()], Key::Randint));
        assert!(in_key_order(&["9|a|".to_string(), "1|b|".to_string()], Key::Padding1));
    }

    #[test]
    fn serial_fraction_formula() {
        let ms = Duration::from_millis;
        let sort = SortFigures {
            run_phase: ms(100),
            merge_phase: ms(100),
            serial_merge: ms(10),
            participants: vec![(ms(90), Some(100)), (ms(80), Some(100))],
        };
        // run: 100 - 80 = 20 ms with one participant; merge: 10 ms; of 200 ms.
        let f = sort_serial_fraction(std::slice::from_ref(&sort), None).unwrap();
        assert!((f - 0.15).abs() < 1e-9, "{f}");
        // The pipeline saw 30 ms with one participant: the larger estimate wins.
        let f = sort_serial_fraction(std::slice::from_ref(&sort), Some(ms(30))).unwrap();
        assert!((f - 0.20).abs() < 1e-9, "{f}");
        assert_eq!(sort_memory(std::slice::from_ref(&sort), 1 << 20), Some(Memory { bytes: 200, upper_bound: false }));
        let spilled = SortFigures { participants: vec![(ms(90), Some(100)), (ms(80), None)], ..sort.clone() };
        assert_eq!(sort_memory(&[spilled], 1 << 20), Some(Memory { bytes: 100 + (1 << 20), upper_bound: true }));
        let single = SortFigures { participants: vec![(ms(90), Some(100))], ..sort };
        assert_eq!(sort_serial_fraction(&[single], None), Some(1.0));
        assert_eq!(sort_serial_fraction(&[], None), None);
        assert_eq!(sort_memory(&[], 1), None);
    }

    #[test]
    fn byte_formatting() {
        assert_eq!(format_bytes(None), "n/a");
        assert_eq!(format_bytes(Some(512)), "512 B");
        assert_eq!(format_bytes(Some(64 << 20)), "64.0 MB");
        assert_eq!(format_memory(Some(Memory { bytes: 1 << 30, upper_bound: true })), "≤1.0 GB");
        assert_eq!(median_u64(vec![3, 1, 2]), Some(2));
    }
}
