//! `weft bench buffers`: the ART page table (`buffer_mapping = art`) against the partitioned
//! hash (`hash`), on the two workloads of the artbufmgr text (seeds/004), next to PostgreSQL 15.
//!
//! 1. **Select-only**, in the spirit of `pgbench -S`: a table shaped like `pgbench_accounts`
//!    (`aid`, `bid`, `abalance`, an 84-byte `filler`; 100,000 rows per unit of scale) with an
//!    index on `aid`, and 2 threads, each with its own `Session`, running `SELECT abalance FROM
//!    accounts WHERE aid = k` for random `k` for a fixed time. Twice: with `shared_buffers` a
//!    fifth of the table's size (every query misses on its heap page) and with a pool the table
//!    fits in. The data directory is built once and reopened for each run with the mapping and
//!    pool size under test. PostgreSQL: `pgbench -S -c 2 -j 2` on a cluster initialised at the
//!    same scale with the same `shared_buffers`.
//! 2. **DROP**: a pool of `shared_buffers` (1GB; and 8GB with `--full`) holding another table
//!    (`filler`, read into the pool by a scan), then the seed's `CREATE TABLE test_drop2 AS
//!    SELECT a, md5(a::text) FROM generate_series(1, 20000) AS a; DROP TABLE test_drop2;`
//!    (with a `SELECT count(*)` between them, so that the table's pages are in the pool in
//!    both systems: weft's CREATE TABLE AS writes around the pool), the DROP timed (`DROP_REPEATS` times per run, median), and `DROP TABLE` of 1,000 one-page
//!    tables in one statement. The hash mapping runs twice: as PostgreSQL 15 outside
//!    recovery (`weft_buffer_drop_lookup = off`, the default: a scan of every descriptor)
//!    and with the NBuffers/32 lookup shortcut PostgreSQL takes only in recovery (`on`). PostgreSQL:
//!    the same statements through psql's `\timing`, the filler loaded with `pg_prewarm`.
//!
//! Configurations alternate run by run (art, hash, hash with the shortcut, PostgreSQL, art,
//! ...) and medians are reported, with the ratios art/hash.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weft::postgres::PgCluster;
use weft_sql::Database;

use crate::bench::{format_ms, median, median_f64};

/// Timed DROPs of test_drop2 per run.
const DROP_REPEATS: usize = 5;
/// Tables dropped by one DROP statement.
const MANY_TABLES: usize = 1000;
/// Threads of the select-only workload (the 2 clients).
const SELECT_THREADS: usize = 2;

pub struct BuffersOptions {
    pub runs: usize,
    /// The sizes: select-only at scale 50 (5x a 128MB pool, and a 1GB pool), DROP at
    /// 1GB and 8GB with a 1GB filler.
    pub full: bool,
    /// Seconds each select-only measurement runs.
    pub seconds: f64,
    pub postgres: bool,
    /// `--set` start-up settings for weft (e.g. fsync=off).
    pub settings: Vec<(String, String)>,
}

struct Scale {
    /// pgbench scale: 100,000 accounts per unit.
    select_scale: u64,
    /// shared_buffers that the table fits in.
    fits_pool: &'static str,
    drop_pools: &'static [&'static str],
    /// Rows of the table that occupies the pool before the DROP tests.
    filler_rows: u64,
}

fn scale(full: bool) -> Scale {
    if full {
        Scale { select_scale: 50, fits_pool: "1GB", drop_pools: &["1GB", "8GB"], filler_rows: 12_000_000 }
    } else {
        Scale { select_scale: 5, fits_pool: "128MB", drop_pools: &["1GB"], filler_rows: 500_000 }
    }
}

/// The weft configurations compared: (label, buffer_mapping, weft_buffer_drop_lookup).
const MAPPINGS: [(&str, &str, &str); 3] = [("art", "art", "off"), ("hash", "hash", "off"), ("hash, lookup shortcut", "hash", "on")];

pub fn buffers(options: &BuffersOptions) -> i32 {
    let runs = options.runs.max(1);
    let mut postgres = options.postgres;
    if postgres && !PgCluster::available() {
        eprintln!("weft bench: PostgreSQL 15 is not installed ({}); timing weft only", weft::postgres::PG_BIN_DIR);
        postgres = false;
    }
    let scale = scale(options.full);
    match select_only(options, &scale, runs, postgres) {
        Ok(()) => {}
        Err(message) => {
            eprintln!("weft bench buffers: select-only failed: {message}");
            return 1;
        }
    }
    match drops(options, &scale, runs, postgres) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("weft bench buffers: DROP failed: {message}");
            1
        }
    }
}

fn weft_settings(options: &BuffersOptions, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut settings = options.settings.clone();
    settings.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
    settings
}

fn exec(session: &mut weft_sql::Session, sql: &str) -> Result<weft_sql::QueryResult, String> {
    session.execute(sql).map_err(|e| format!("{sql}: {} [{}]", e.message, e.sqlstate.0))
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

// -- select-only ---------------------------------------------------------------------------

fn select_only(options: &BuffersOptions, scale: &Scale, runs: usize, postgres: bool) -> Result<(), String> {
    let accounts = scale.select_scale * 100_000;
    outln!("weft bench buffers: select-only, accounts of {accounts} rows (scale {}), {SELECT_THREADS} threads, {:.0} s per measurement, {runs} run(s)\n", scale.select_scale, options.seconds);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    {
        let db = Database::open(dir.path(), &weft_settings(options, &[])).map_err(|e| e.message.clone())?;
        let mut s = db.session();
        exec(&mut s, &format!("CREATE TABLE accounts AS SELECT a AS aid, (a - 1) / 100000 + 1 AS bid, 0 AS abalance, repeat(' ', 84) AS filler FROM generate_series(1, {accounts}) AS a"))?;
        exec(&mut s, "CREATE INDEX accounts_pkey ON accounts (aid)")?;
        exec(&mut s, "ANALYZE accounts")?;
    }
    let table_bytes = dir_bytes(&dir.path().join("base"));
    let small_pool_kb = (table_bytes / 5 / 1024).max(1024);
    let pools = [(format!("{small_pool_kb}kB"), "pool = table/5"), (scale.fits_pool.to_string(), "table fits")];
    outln!("table and index: {:.0} MB on disk; pools: {} ({}), {} ({})\n", table_bytes as f64 / 1e6, pools[0].0, pools[0].1, pools[1].0, pools[1].1);
    // (pool index, config) -> ops/s per run
    let mut weft_ops: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); 2]; 2];
    let mut pg_tps: Vec<Vec<f64>> = vec![Vec::new(); 2];
    for run in 1..=runs {
        for (p, (pool, _)) in pools.iter().enumerate() {
            for (m, mapping) in ["art", "hash"].iter().enumerate() {
                let ops = select_run(options, dir.path(), pool, mapping, accounts)?;
                outln!("run {run}: {mapping:>4}, shared_buffers {pool:>9}: {ops:>9.0} selects/s");
                weft_ops[p][m].push(ops);
            }
            if postgres {
                match pgbench_run(pool, scale.select_scale, options.seconds) {
                    Ok(tps) => {
                        outln!("run {run}: PostgreSQL 15 pgbench -S, shared_buffers {pool:>9}: {tps:>9.0} tps");
                        pg_tps[p].push(tps);
                    }
                    Err(message) => outln!("run {run}: PostgreSQL 15 pgbench -S failed: {message}"),
                }
            }
        }
    }
    outln!("\n| shared_buffers | art selects/s | hash selects/s | art/hash | PostgreSQL 15 pgbench -S tps |");
    outln!("|---|---|---|---|---|");
    for (p, (pool, what)) in pools.iter().enumerate() {
        let art = median_f64(&weft_ops[p][0]);
        let hash = median_f64(&weft_ops[p][1]);
        let ratio = match (art, hash) {
            (Some(a), Some(h)) if h > 0.0 => format!("{:.2}", a / h),
            _ => "-".into(),
        };
        let pg = median_f64(&pg_tps[p]).map(|t| format!("{t:.0}")).unwrap_or_else(|| "-".into());
        outln!("| {pool} ({what}) | {:.0} | {:.0} | {ratio} | {pg} |", art.unwrap_or(0.0), hash.unwrap_or(0.0));
    }
    outln!();
    Ok(())
}

/// Reopens the data directory with `mapping` and `pool`, warms the pool with one pass of
/// point reads, then runs the threads for the configured time; selects per second.
fn select_run(options: &BuffersOptions, dir: &Path, pool: &str, mapping: &str, accounts: u64) -> Result<f64, String> {
    let settings = weft_settings(options, &[("buffer_mapping", mapping), ("shared_buffers", pool)]);
    let db = Database::open(dir, &settings).map_err(|e| e.message.clone())?;
    {
        let mut s = db.session();
        exec(&mut s, "SET max_parallel_workers_per_gather = 0")?;
        exec(&mut s, "SELECT count(*) FROM accounts")?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let failure: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..SELECT_THREADS {
            let (db, stop, total, failure) = (db.clone(), stop.clone(), total.clone(), failure.clone());
            scope.spawn(move || {
                let mut s = db.session();
                let mut rng = weft_common::XorShift64(0x9e37_79b9_7f4a_7c15_u64 ^ ((t as u64 + 1) << 17));
                let mut done = 0;
                while !stop.load(Ordering::Relaxed) {
                    let aid = rng.next_u64() % accounts + 1;
                    match s.execute(&format!("SELECT abalance FROM accounts WHERE aid = {aid}")) {
                        Ok(r) if r.rows.len() == 1 => done += 1,
                        Ok(r) => {
                            *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("aid {aid}: {} rows", r.rows.len()));
                            break;
                        }
                        Err(e) => {
                            *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.message.clone());
                            break;
                        }
                    }
                }
                total.fetch_add(done, Ordering::Relaxed);
            });
        }
        std::thread::sleep(Duration::from_secs_f64(options.seconds));
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(message) = failure.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(message);
    }
    Ok(total.load(Ordering::Relaxed) as f64 / elapsed)
}

fn pgbench_run(pool: &str, scale: u64, seconds: f64) -> Result<f64, String> {
    let pgbench = Path::new(weft::postgres::PG_BIN_DIR).join("pgbench");
    if !pgbench.exists() {
        return Err("pgbench is not installed".into());
    }
    let cluster = PgCluster::start_with(&[("shared_buffers", pool)]).map_err(|e| e.to_string())?;
    let run = |args: &[&str]| -> Result<String, String> {
        let output = std::process::Command::new(&pgbench)
            .args(["-h", "127.0.0.1", "-p", &cluster.port().to_string(), "-U", "postgres"])
            .args(args)
            .arg("postgres")
            .output()
            .map_err(|e| e.to_string())?;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    };
    run(&["-i", "-q", "-s", &scale.to_string()])?;
    let secs = (seconds.ceil() as u64).max(1).to_string();
    let out = run(&["-S", "-n", "-c", "2", "-j", "2", "-T", &secs, "--random-seed=2"])?;
    out.lines()
        .find_map(|line| line.strip_prefix("tps = ").and_then(|rest| rest.split_whitespace().next()?.parse().ok()))
        .ok_or_else(|| format!("no tps line in pgbench output: {out}"))
}

// -- DROP ---------------------------------------------------------------------------------

#[derive(Default, Clone)]
struct DropSamples {
    /// Median DROP TABLE test_drop2 of each run (the statement).
    small: Vec<Duration>,
    /// DROP of MANY_TABLES tables in one statement, per run.
    many: Vec<Duration>,
    /// weft only: the part of those spent forgetting buffers (`BufferPoolStats::invalidation_ns`).
    small_buffers: Vec<Duration>,
    many_buffers: Vec<Duration>,
}

/// One run's figures: (statement, buffer part) for test_drop2 and for the many tables.
struct DropRun {
    small: Duration,
    small_buffers: Duration,
    many: Duration,
    many_buffers: Duration,
}

fn many_names() -> String {
    (1..=MANY_TABLES).map(|i| format!("s_{i}")).collect::<Vec<_>>().join(", ")
}

const TEST_DROP2: &str = "CREATE TABLE test_drop2 AS SELECT a, md5(a::text) FROM generate_series(1, 20000) AS a";

fn drops(options: &BuffersOptions, scale: &Scale, runs: usize, postgres: bool) -> Result<(), String> {
    outln!("weft bench buffers: DROP with a full pool (filler of {} rows), {runs} run(s), test_drop2 dropped {DROP_REPEATS}x per run\n", scale.filler_rows);
    for &pool in scale.drop_pools {
        let mut weft: Vec<DropSamples> = vec![DropSamples::default(); MAPPINGS.len()];
        let mut pg = DropSamples::default();
        for run in 1..=runs {
            for (m, (label, mapping, lookup)) in MAPPINGS.iter().enumerate() {
                let settings = weft_settings(options, &[("buffer_mapping", mapping), ("weft_buffer_drop_lookup", lookup), ("shared_buffers", pool)]);
                let r = weft_drop_run(&settings, scale.filler_rows)?;
                outln!(
                    "run {run}: {label:>15}, shared_buffers {pool}: DROP test_drop2 {} (buffers {}), DROP {MANY_TABLES} tables {} (buffers {})",
                    format_ms(Some(r.small)),
                    format_us(Some(r.small_buffers)),
                    format_ms(Some(r.many)),
                    format_us(Some(r.many_buffers))
                );
                weft[m].small.push(r.small);
                weft[m].many.push(r.many);
                weft[m].small_buffers.push(r.small_buffers);
                weft[m].many_buffers.push(r.many_buffers);
            }
            if postgres && pool == "1GB" {
                match pg_drop_run(pool, scale.filler_rows) {
                    Ok((small, many)) => {
                        outln!("run {run}: {:>15}, shared_buffers {pool}: DROP test_drop2 {}, DROP {MANY_TABLES} tables {}", "PostgreSQL 15", format_ms(Some(small)), format_ms(Some(many)));
                        pg.small.push(small);
                        pg.many.push(many);
                    }
                    Err(message) => outln!("run {run}: PostgreSQL 15 failed: {message}"),
                }
            }
        }
        outln!("\nshared_buffers = {pool}:\n");
        outln!("| system | DROP TABLE test_drop2 | its buffer invalidation | hash/this (invalidation) | DROP TABLE of {MANY_TABLES} tables | its buffer invalidation | hash/this (invalidation) |");
        outln!("|---|---|---|---|---|---|---|");
        let hash_small = median(&weft[1].small_buffers);
        let hash_many = median(&weft[1].many_buffers);
        let ratio = |base: Option<Duration>, this: Option<Duration>| match (base, this) {
            (Some(b), Some(t)) if t > Duration::ZERO => format!("{:.1}x", b.as_secs_f64() / t.as_secs_f64()),
            _ => "-".into(),
        };
        let mut rows: Vec<(String, &DropSamples)> = MAPPINGS.iter().zip(&weft).map(|((label, _, _), s)| (format!("weft {label}"), s)).collect();
        if !pg.small.is_empty() {
            rows.push(("PostgreSQL 15".into(), &pg));
        }
        for (label, samples) in rows {
            let (small, many) = (median(&samples.small), median(&samples.many));
            let (small_buffers, many_buffers) = (median(&samples.small_buffers), median(&samples.many_buffers));
            outln!(
                "| {label} | {} | {} | {} | {} | {} | {} |",
                format_ms(small),
                format_us(small_buffers),
                ratio(hash_small, small_buffers),
                format_ms(many),
                format_us(many_buffers),
                ratio(hash_many, many_buffers)
            );
        }
        outln!(
            "\nweft's statement times include publishing the catalog (one write and, unless \
             fsync = off, one fdatasync of a catalog slot); the buffer invalidation is the pool's \
             share (drop_relations_buffers). PostgreSQL's times are psql's \\timing of the statement.\n"
        );
    }
    Ok(())
}

/// A fresh database with `settings`; the filler table read into the pool; test_drop2
/// created and dropped DROP_REPEATS times (median DROP), then MANY_TABLES tables dropped in
/// one statement.
fn weft_drop_run(settings: &[(String, String)], filler_rows: u64) -> Result<DropRun, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let db = Database::open(dir.path(), settings).map_err(|e| e.message.clone())?;
    let mut s = db.session();
    exec(&mut s, &format!("CREATE TABLE filler AS SELECT a, md5(a::text) FROM generate_series(1, {filler_rows}) AS a"))?;
    exec(&mut s, "SET max_parallel_workers_per_gather = 0")?;
    exec(&mut s, "SELECT count(*) FROM filler")?;
    let invalidation = || Duration::from_nanos(db.buffer_pool().stats().invalidation_ns);
    let (mut times, mut buffer_times) = (Vec::new(), Vec::new());
    for _ in 0..DROP_REPEATS {
        exec(&mut s, TEST_DROP2)?;
        // CREATE TABLE AS writes its pages around the pool; read them in, as PostgreSQL's
        // CREATE TABLE AS leaves them in its buffers.
        exec(&mut s, "SELECT count(*) FROM test_drop2")?;
        let (start, before) = (Instant::now(), invalidation());
        exec(&mut s, "DROP TABLE test_drop2")?;
        times.push(start.elapsed());
        buffer_times.push(invalidation() - before);
    }
    for i in 1..=MANY_TABLES {
        exec(&mut s, &format!("CREATE TABLE s_{i} AS SELECT a FROM generate_series(1, 10) AS a"))?;
        exec(&mut s, &format!("SELECT count(*) FROM s_{i}"))?;
    }
    let sql = format!("DROP TABLE {}", many_names());
    let (start, before) = (Instant::now(), invalidation());
    exec(&mut s, &sql)?;
    let many = start.elapsed();
    let many_buffers = invalidation() - before;
    Ok(DropRun {
        small: median(&times).unwrap_or_default(),
        small_buffers: median(&buffer_times).unwrap_or_default(),
        many,
        many_buffers,
    })
}

fn format_us(duration: Option<Duration>) -> String {
    match duration {
        Some(d) => format!("{:.0} µs", d.as_secs_f64() * 1e6),
        None => "-".into(),
    }
}

fn pg_drop_run(pool: &str, filler_rows: u64) -> Result<(Duration, Duration), String> {
    let cluster = PgCluster::start_with(&[("shared_buffers", pool)]).map_err(|e| e.to_string())?;
    let filler = format!("CREATE TABLE filler AS SELECT a, md5(a::text) FROM generate_series(1, {filler_rows}) AS a");
    cluster.run(&[&filler, "CREATE EXTENSION pg_prewarm", "SELECT pg_prewarm('filler')"]).map_err(|e| e.to_string())?;
    let mut statements: Vec<String> = Vec::new();
    for _ in 0..DROP_REPEATS {
        statements.push(TEST_DROP2.into());
        statements.push("SELECT count(*) FROM test_drop2".into());
        statements.push("DROP TABLE test_drop2".into());
    }
    let refs: Vec<&str> = statements.iter().map(String::as_str).collect();
    let output = cluster.run(&refs).map_err(|e| e.to_string())?;
    if output.timings.len() != refs.len() {
        return Err(format!("expected {} timings, got {}", refs.len(), output.timings.len()));
    }
    let drops: Vec<Duration> = output.timings.iter().skip(2).step_by(3).copied().collect();
    let creates: Vec<String> = (1..=MANY_TABLES)
        .flat_map(|i| {
            [format!("CREATE TABLE s_{i} AS SELECT a FROM generate_series(1, 10) AS a"), format!("SELECT count(*) FROM s_{i}")]
        })
        .collect();
    let mut statements: Vec<&str> = creates.iter().map(String::as_str).collect();
    let drop_many = format!("DROP TABLE {}", many_names());
    statements.push(&drop_many);
    let output = cluster.run(&statements).map_err(|e| e.to_string())?;
    let many = *output.timings.last().ok_or("no timing for the DROP of many tables")?;
    Ok((median(&drops).unwrap_or_default(), many))
}
