//! `weft demo`: the parallel tuplesort text's table, built, queried and indexed (its
//! CREATE INDEX), and the parallel hash join text's `big JOIN small`, in a temporary data
//! directory, then read again after closing and reopening the database (durability at a
//! glance). Each statement is echoed with the prompt, then its result and its time, as a
//! psql session with `\timing on` would show them.

use std::path::Path;

use weft::workload;
use weft_sql::Database;

use crate::output::OutputOptions;
use crate::runner::{Location, Outcome, Runner};

/// Run the demo; the exit status is 1 when a statement failed.
pub fn run(rows: u64, settings: &[(String, String)]) -> i32 {
    let temporary = match tempfile::Builder::new().prefix("weft-demo-").tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("weft: error: could not create a temporary directory: {error}");
            return 1;
        }
    };
    let data_dir = temporary.path().join("data");
    outln!("weft demo: parallel_sort_test with generate_series(0, {rows}) in {}\n", data_dir.display());

    let statements = [
        workload::create_parallel_sort_test(rows),
        workload::COUNT_AND_SUM.to_string(),
        "SELECT * FROM parallel_sort_test LIMIT 5".to_string(),
        "SELECT randint % 4 AS bucket, count(*), min(padding1), max(padding2)\n\
         FROM parallel_sort_test\n\
         GROUP BY randint % 4\n\
         HAVING count(*) > 1\n\
         ORDER BY bucket"
            .to_string(),
        // The text's CREATE INDEX, then a query that uses it and the checker.
        "CREATE INDEX parallel_idx ON parallel_sort_test (randint) WITH (parallel_workers = 1)".to_string(),
        "EXPLAIN SELECT * FROM parallel_sort_test WHERE randint = 42".to_string(),
        "SELECT randint, padding1 FROM parallel_sort_test ORDER BY randint LIMIT 3".to_string(),
        "SELECT weft_index_check('parallel_idx', heapallindexed => true)".to_string(),
        // The parallel hash join text's tables and query (a), with the plan weft chose.
        format!("CREATE TABLE big AS SELECT i AS a, substr(repeat(md5(i::text), 2), 1, 60) AS b FROM generate_series(1, {rows}) i"),
        "CREATE TABLE small AS SELECT i AS a, substr(repeat(md5(i::text), 2), 1, 60) AS b FROM generate_series(1, 20000) i".to_string(),
        "ANALYZE".to_string(),
        "EXPLAIN SELECT COUNT(*) FROM big JOIN small USING (a)".to_string(),
        "SELECT COUNT(*) FROM big JOIN small USING (a)".to_string(),
        "SELECT s.a, count(b.a) FROM small s LEFT JOIN big b ON b.a = s.a * 1000 WHERE s.a <= 5 GROUP BY s.a ORDER BY s.a".to_string(),
    ];
    let mut failures = match run_session(&data_dir, settings, &statements) {
        Ok(failures) => failures,
        Err(message) => {
            eprintln!("weft: error: {message}");
            return 1;
        }
    };

    outln!("-- the database is closed and opened again\n");
    let reopened = [workload::COUNT_AND_SUM.to_string(), "SELECT count(*) FROM parallel_sort_test WHERE randint < 0".to_string()];
    failures += match run_session(&data_dir, settings, &reopened) {
        Ok(failures) => failures,
        Err(message) => {
            eprintln!("weft: error: {message}");
            return 1;
        }
    };
    // `temporary` is removed here.
    if failures == 0 {
        0
    } else {
        eprintln!("weft demo: {failures} statement(s) failed");
        1
    }
}

/// Open the database, run the statements echoing each, close it. Returns the failure count.
fn run_session(data_dir: &Path, settings: &[(String, String)], statements: &[String]) -> Result<usize, String> {
    let database = Database::open(data_dir, settings)
        .map_err(|error| format!("could not open data directory \"{}\": {}", data_dir.display(), error.message))?;
    let mut runner = Runner::new(database.session(), OutputOptions::default());
    runner.timing = true;
    let mut failures = 0;
    for sql in statements {
        outln!("weft=> {};", sql.replace('\n', "\nweft-> "));
        if runner.execute(sql, Location::NONE) == Outcome::Failed {
            failures += 1;
        }
        outln!();
    }
    drop(runner);
    drop(database);
    Ok(failures)
}
