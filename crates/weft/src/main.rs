//! `weft`: a psql-like shell over an embedded weft database, plus `weft demo` and
//! `weft bench`. No engine logic lives here: statements go to `weft_sql::Session::execute`.
//!
//! ```text
//! weft [-D DIR] [-c SQL]... [-f FILE]... [-A] [-t] [-F SEP] [--csv] [-q]
//!      [-v NAME=VALUE]... [--set SETTING=VALUE]...
//! weft serve [-D DIR] [--listen ADDRESS] [--port PORT]
//! weft demo [--rows N]
//! weft bench load [--rows N] [--runs K] [--no-postgres]
//! weft bench sort [--rows N] [--runs K] [--no-postgres] [--no-duckdb] [--strategies S,S]
//! weft bench index [--rows N] [--runs K] [--no-postgres] [--strategies S,S]
//! weft bench join [--rows N] [--self-rows N] [--runs K] [--no-postgres] [--no-duckdb]
//! weft bench buffers [--runs K] [--seconds S] [--full] [--no-postgres]
//! ```
//!
//! Exit status, as psql's: 0 done (errors in a script without `ON_ERROR_STOP` do not count),
//! 1 a fatal start-up error (unopenable data directory, unreadable `-f` file) or a failed last
//! `-c`, 2 bad usage, 3 a script stopped by `ON_ERROR_STOP` (or by Ctrl-C).
#![forbid(unsafe_code)]

/// `println!` that ignores a closed stdout (`weft demo | head`) instead of panicking: a panic
/// would abort the clean-up of temporary data directories and PostgreSQL clusters.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

mod bench;
mod bench_buffers;
mod bench_duckdb;
mod bench_index;
mod bench_join;
mod bench_sort;
mod cancel;
mod copy_client;
mod demo;
mod meta;
mod output;
mod progress;
mod runner;
mod script;
mod server;
mod server_copy;
mod server_rows;
mod shell;

use std::io::IsTerminal;
use std::path::Path;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use output::{Format, OutputOptions};

/// mimalloc keeps freed memory for reuse instead of returning it to the kernel at once:
/// a sort's gigabyte of arena chunks is then not paid for in page faults by every
/// statement, and the many small allocations of result rows are cheaper.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use runner::Runner;
use script::ScriptEnd;

const EXIT_OK: i32 = 0;
const EXIT_FAILURE: i32 = 1;
const EXIT_USAGE: i32 = 2;
const EXIT_SCRIPT_STOPPED: i32 = 3;

#[derive(Parser, Debug)]
#[command(name = "weft", version, about = "weft, a PostgreSQL-flavoured parallel database engine: interactive shell")]
struct Cli {
    /// Data directory (created on first use)
    #[arg(short = 'D', long = "data-dir", value_name = "DIR", default_value = "weft-data")]
    data_dir: String,

    /// Run SQL (several statements separated by ";", or one backslash command); repeatable
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    command: Vec<String>,

    /// Run the SQL script FILE ("-" for standard input); repeatable
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    file: Vec<String>,

    /// Unaligned output
    #[arg(short = 'A', long = "no-align")]
    no_align: bool,

    /// Rows only: no header, no footer
    #[arg(short = 't', long = "tuples-only")]
    tuples_only: bool,

    /// Field separator for unaligned output
    #[arg(short = 'F', long = "field-separator", value_name = "SEP", default_value = "|")]
    field_separator: String,

    /// CSV output
    #[arg(long = "csv")]
    csv: bool,

    /// No command tags or informational messages
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,

    /// Set a shell variable, e.g. ON_ERROR_STOP=1
    #[arg(short = 'v', long = "variable", value_name = "NAME=VALUE")]
    variable: Vec<String>,

    /// Start-up setting of the engine, e.g. shared_buffers=256MB (overrides weft.conf)
    #[arg(long = "set", value_name = "NAME=VALUE", global = true)]
    set: Vec<String>,

    #[command(subcommand)]
    subcommand: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build the parallel_sort_test table in a temporary database and query it
    Demo {
        /// generate_series(0, ROWS): the table gets ROWS + 1 rows
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
    },
    /// Serve the database over the PostgreSQL wire protocol (psql, drivers) until SIGINT/SIGTERM
    Serve {
        /// Data directory (created on first use) [default: the -D before `serve`, weft-data]
        #[arg(short = 'D', long = "data-dir", value_name = "DIR")]
        data_dir: Option<String>,
        /// Address to listen on
        #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1")]
        listen: String,
        /// TCP port (0: any free port, printed in the `listening on` line)
        #[arg(long, default_value_t = 5432)]
        port: u16,
    },
    /// Benchmarks, run on weft and on a throwaway PostgreSQL 15 cluster
    Bench {
        #[command(subcommand)]
        workload: BenchWorkload,
    },
}

/// What every benchmark takes: the seed table's scale, the runs, and whether to run
/// PostgreSQL beside weft. The defaults depend on the workload (`BenchScale::resolve`).
#[derive(clap::Args, Debug)]
struct BenchScale {
    /// generate_series(0, ROWS) [default: 10000000; bench index: 100000]
    #[arg(long)]
    rows: Option<u64>,
    /// Runs per configuration, the systems alternating run by run [default: 3; bench index: 1]
    #[arg(long)]
    runs: Option<usize>,
    /// Leave PostgreSQL out
    #[arg(long = "no-postgres")]
    no_postgres: bool,
}

/// `bench load` and `bench sort`: the seed's scale.
const BENCH_ROWS: u64 = 10_000_000;
const BENCH_RUNS: usize = 3;
/// `bench index`: a quick look by default (seconds); the figures in docs/PERFORMANCE.md come
/// from `--rows 10000000 --runs 3`.
const BENCH_INDEX_ROWS: u64 = 100_000;
const BENCH_INDEX_RUNS: usize = 1;

impl BenchScale {
    /// (rows, runs) with the workload's defaults for what was not given.
    fn resolve(&self, rows: u64, runs: usize) -> (u64, usize) {
        (self.rows.unwrap_or(rows), self.runs.unwrap_or(runs))
    }
}

#[derive(Subcommand, Debug)]
enum BenchWorkload {
    /// CREATE TABLE parallel_sort_test AS ..., then count(*)/sum() scans with 1 and 2 participants
    Load {
        #[command(flatten)]
        scale: BenchScale,
    },
    /// ORDER BY into CREATE TABLE AS and ORDER BY ... LIMIT on parallel_sort_test: 1 and 2
    /// participants, work_mem 1GB and 64MB, next to PostgreSQL 15 and DuckDB
    Sort {
        #[command(flatten)]
        scale: BenchScale,
        /// Leave DuckDB out (otherwise installed with pip when missing)
        #[arg(long = "no-duckdb")]
        no_duckdb: bool,
        /// parallel_sort_strategy values for weft's 2-participant sorts, comma-separated
        #[arg(long, value_name = "S,S", default_value = "partition,leader_merge")]
        strategies: String,
    },
    /// The parallel hash join text's big JOIN small_N (5k..100k) queries in the serial,
    /// parallel-oblivious and parallel-aware shapes, and a self-join at work_mem 2GB and
    /// 64MB, next to PostgreSQL 15 and DuckDB (defaults: big 1M rows, self-join 1M rows, 3 runs)
    Join {
        /// Rows of `big` [default: 1000000]
        #[arg(long)]
        rows: Option<u64>,
        /// Rows of the self-joined table [default: 1000000; the issue's figure: 10000000]
        #[arg(long = "self-rows")]
        self_rows: Option<u64>,
        /// Runs per configuration, the systems alternating run by run [default: 3]
        #[arg(long)]
        runs: Option<usize>,
        /// Leave PostgreSQL out
        #[arg(long = "no-postgres")]
        no_postgres: bool,
        /// Leave DuckDB out (otherwise installed with pip when missing)
        #[arg(long = "no-duckdb")]
        no_duckdb: bool,
    },
    /// buffer_mapping = art vs hash (seeds/004): pgbench -S-like point selects with 2 threads
    /// (pool a fifth of the table, and a pool it fits in), and the DROP of test_drop2 and of
    /// 1,000 tables in one statement with a full pool, next to PostgreSQL 15 (defaults: scale
    /// 5, DROP at 1GB, 3 runs; the issue's sizes: --full)
    Buffers {
        /// Runs per configuration, alternating art, hash, PostgreSQL [default: 3]
        #[arg(long)]
        runs: Option<usize>,
        /// Seconds of each select-only measurement [default: 5]
        #[arg(long)]
        seconds: Option<f64>,
        /// The issue's sizes: scale 50 at 128MB and 1GB, DROP at 1GB and 8GB
        #[arg(long)]
        full: bool,
        /// Leave PostgreSQL out
        #[arg(long = "no-postgres")]
        no_postgres: bool,
    },
    /// CREATE INDEX on parallel_sort_test (randint) and (padding1): 1 and 2 participants,
    /// maintenance_work_mem 1GB and 64MB, next to PostgreSQL 15 (defaults: 100000 rows, 1
    /// run; the real measurement: --rows 10000000 --runs 3 --set fsync=off)
    Index {
        #[command(flatten)]
        scale: BenchScale,
        /// parallel_sort_strategy values for weft's 2-participant builds, comma-separated
        #[arg(long, value_name = "S,S", default_value = "partition,leader_merge")]
        strategies: String,
    },
}

/// `-c` and `-f` in the order given.
enum Action {
    Command(String),
    File(String),
}

fn main() {
    let code = real_main();
    // Everything (the database included) has been dropped by now.
    std::process::exit(code);
}

fn real_main() -> i32 {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    let settings = match parse_assignments(&cli.set, "--set") {
        Ok(settings) => settings,
        Err(message) => return usage_error(&message),
    };
    // The server handles its own signals: no Ctrl-C handler of the shell's.
    if let Some(Command::Serve { data_dir, listen, port }) = &cli.subcommand {
        let data_dir = data_dir.clone().unwrap_or_else(|| cli.data_dir.clone());
        return server::run(&server::ServeOptions { data_dir, listen: listen.clone(), port: *port, settings });
    }
    cancel::install();
    match &cli.subcommand {
        Some(Command::Demo { rows }) => return demo::run(*rows, &settings),
        Some(Command::Bench { workload: BenchWorkload::Load { scale } }) => {
            let (rows, runs) = scale.resolve(BENCH_ROWS, BENCH_RUNS);
            let options = bench::LoadOptions { rows, runs, postgres: !scale.no_postgres, settings };
            return bench::load(&options);
        }
        Some(Command::Bench { workload: BenchWorkload::Sort { scale, no_duckdb, strategies } }) => {
            let strategies = match bench_sort::parse_strategies(strategies) {
                Ok(strategies) => strategies,
                Err(message) => return usage_error(&message),
            };
            let (rows, runs) = scale.resolve(BENCH_ROWS, BENCH_RUNS);
            let options = bench_sort::SortOptions {
                rows,
                runs,
                postgres: !scale.no_postgres,
                duckdb: !no_duckdb,
                settings,
                strategies,
            };
            return bench_sort::sort(&options);
        }
        Some(Command::Bench { workload: BenchWorkload::Index { scale, strategies } }) => {
            let strategies = match bench_sort::parse_strategies(strategies) {
                Ok(strategies) => strategies,
                Err(message) => return usage_error(&message),
            };
            let (rows, runs) = scale.resolve(BENCH_INDEX_ROWS, BENCH_INDEX_RUNS);
            let options = bench_index::IndexOptions {
                rows,
                runs,
                postgres: !scale.no_postgres,
                settings,
                strategies,
            };
            return bench_index::index(&options);
        }
        Some(Command::Bench { workload: BenchWorkload::Join { rows, self_rows, runs, no_postgres, no_duckdb } }) => {
            let options = bench_join::JoinOptions {
                rows: rows.unwrap_or(1_000_000),
                self_rows: self_rows.unwrap_or(1_000_000),
                runs: runs.unwrap_or(3),
                postgres: !no_postgres,
                duckdb: !no_duckdb,
                settings,
            };
            return bench_join::join(&options);
        }
        Some(Command::Bench { workload: BenchWorkload::Buffers { runs, seconds, full, no_postgres } }) => {
            let options = bench_buffers::BuffersOptions {
                runs: runs.unwrap_or(3),
                full: *full,
                seconds: seconds.unwrap_or(5.0).max(0.1),
                postgres: !no_postgres,
                settings,
            };
            return bench_buffers::buffers(&options);
        }
        Some(Command::Serve { .. }) | None => {}
    }
    let variables = match parse_variables(&cli.variable) {
        Ok(variables) => variables,
        Err(message) => return usage_error(&message),
    };
    let actions = ordered_actions(&matches, &cli);

    let database = match weft_sql::Database::open(Path::new(&cli.data_dir), &settings) {
        Ok(database) => database,
        Err(error) => {
            eprintln!("weft: error: could not open data directory \"{}\": {}", cli.data_dir, error.message);
            return EXIT_FAILURE;
        }
    };
    let mut runner = Runner::new(database.session(), output_options(&cli));
    runner.variables.extend(variables);

    if actions.is_empty() {
        if std::io::stdin().is_terminal() {
            return match shell::run(&mut runner, &cli.data_dir) {
                Ok(()) => EXIT_OK,
                Err(message) => {
                    eprintln!("weft: error: {message}");
                    EXIT_FAILURE
                }
            };
        }
        return match script::run_lines(&mut runner, std::io::stdin().lock(), None) {
            ScriptEnd::Stopped => EXIT_SCRIPT_STOPPED,
            ScriptEnd::Finished { .. } | ScriptEnd::Quit => EXIT_OK,
        };
    }
    run_actions(&mut runner, &actions)
}

/// Run `-c`/`-f` in order, with psql's exit status rules: the status is that of the last
/// action (a `-c` that failed, or a file that could not be read, is 1); under `ON_ERROR_STOP`
/// a failed action ends the run.
fn run_actions(runner: &mut Runner, actions: &[Action]) -> i32 {
    let mut status = EXIT_OK;
    for action in actions {
        let end = match action {
            Action::Command(text) => script::run_command(runner, text),
            Action::File(path) => script::run_file(runner, path).unwrap_or_else(|error| {
                eprintln!("weft: error: {path}: {error}");
                ScriptEnd::Finished { last_failed: true }
            }),
        };
        match end {
            ScriptEnd::Quit => return EXIT_OK,
            ScriptEnd::Stopped => return EXIT_SCRIPT_STOPPED,
            ScriptEnd::Finished { last_failed: false } => status = EXIT_OK,
            ScriptEnd::Finished { last_failed: true } => {
                status = EXIT_FAILURE;
                if runner.on_error_stop() {
                    return status;
                }
            }
        }
    }
    status
}

fn ordered_actions(matches: &clap::ArgMatches, cli: &Cli) -> Vec<Action> {
    let mut indexed: Vec<(usize, Action)> = Vec::new();
    if let Some(indices) = matches.indices_of("command") {
        indexed.extend(indices.zip(&cli.command).map(|(i, text)| (i, Action::Command(text.clone()))));
    }
    if let Some(indices) = matches.indices_of("file") {
        indexed.extend(indices.zip(&cli.file).map(|(i, path)| (i, Action::File(path.clone()))));
    }
    indexed.sort_by_key(|(index, _)| *index);
    indexed.into_iter().map(|(_, action)| action).collect()
}

fn output_options(cli: &Cli) -> OutputOptions {
    let format = if cli.csv {
        Format::Csv
    } else if cli.no_align {
        Format::Unaligned
    } else {
        Format::Aligned
    };
    OutputOptions {
        format,
        tuples_only: cli.tuples_only,
        field_separator: cli.field_separator.clone(),
        quiet: cli.quiet,
    }
}

/// `NAME=VALUE` pairs; a missing `=` is a usage error.
fn parse_assignments(items: &[String], option: &str) -> Result<Vec<(String, String)>, String> {
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_string(), value.to_string())),
            _ => Err(format!("{option} expects NAME=VALUE, got \"{item}\"")),
        })
        .collect()
}

/// `-v NAME=VALUE`; as in psql, `-v NAME` alone sets NAME to the empty string.
fn parse_variables(items: &[String]) -> Result<Vec<(String, String)>, String> {
    items
        .iter()
        .map(|item| {
            let (name, value) = item.split_once('=').unwrap_or((item.as_str(), ""));
            if name.is_empty() {
                return Err(format!("-v expects NAME=VALUE, got \"{item}\""));
            }
            Ok((name.to_string(), value.to_string()))
        })
        .collect()
}

fn usage_error(message: &str) -> i32 {
    eprintln!("weft: error: {message}");
    eprintln!("Try \"weft --help\" for more information.");
    EXIT_USAGE
}
