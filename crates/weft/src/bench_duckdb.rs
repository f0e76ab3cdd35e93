//! DuckDB as a third system in weft's benchmarks (`bench sort`, `bench join`).
//!
//! DuckDB is an in-process engine with a Python package, so a long-lived `python3` process
//! (`bench_duckdb.py`, embedded in the binary) holds one database file open and times each
//! statement itself (`time.perf_counter`). weft talks to it in JSON lines: a request
//! `{"setup": [sql...], "sql": sql, "fetch": bool, "after": [sql...]}`, an answer
//! `{"ms": ..., "rows": ..., "after": ..., "temp_peak": ..., "rss_peak": ...}` or
//! `{"error": ...}` (the driver's docstring has the details).
//!
//! DuckDB is installed with pip when missing (`ensure_duckdb`); a bench that cannot have it
//! prints why and goes on without it.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The driver, written into the DuckDB directory at run time.
const DRIVER: &str = include_str!("bench_duckdb.py");

/// The long-lived DuckDB driver process. Dropping it closes its stdin (it then exits) and,
/// if it does not exit within a few seconds, kills it.
pub struct DuckDb {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The duckdb package's version, as the driver reported it.
    pub version: String,
}

impl DuckDb {
    /// Make DuckDB importable (pip) and start the driver on a database file `dir/bench.duckdb`,
    /// with its temp files in `dir/tmp`. `dir` is created; it must outlive the driver.
    pub fn start(dir: &Path) -> Result<DuckDb, String> {
        ensure_duckdb()?;
        std::fs::create_dir_all(dir.join("tmp")).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        let driver = dir.join("bench_duckdb.py");
        std::fs::write(&driver, DRIVER).map_err(|e| format!("could not write {}: {e}", driver.display()))?;
        let mut child = Command::new("python3")
            .arg(&driver)
            .arg(dir.join("bench.duckdb"))
            .arg(dir.join("tmp"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("could not start python3: {e}"))?;
        let stdin = child.stdin.take();
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("python3 was started without a pipe for its stdout".to_string());
        };
        let mut duckdb = DuckDb { child, stdin, stdout: BufReader::new(stdout), version: String::new() };
        let hello = duckdb.read_reply()?;
        duckdb.version = hello.get("version").and_then(|v| v.as_str()).unwrap_or("?").to_string();
        Ok(duckdb)
    }

    /// Is the driver process still running? (After a failed request: did it die, or did
    /// only the statement fail?)
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn read_reply(&mut self) -> Result<serde_json::Value, String> {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).map_err(|e| format!("reading from the DuckDB driver: {e}"))?;
        if n == 0 {
            return Err("the DuckDB driver exited".to_string());
        }
        let reply: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("bad answer from the DuckDB driver ({e}): {line}"))?;
        if let Some(error) = reply.get("error").and_then(|e| e.as_str()) {
            return Err(format!("DuckDB: {error}"));
        }
        Ok(reply)
    }

    /// Send one request and wait for its answer (an `{"error": ...}` answer is an `Err`).
    pub fn request(&mut self, request: &serde_json::Value) -> Result<serde_json::Value, String> {
        let stdin = self.stdin.as_mut().ok_or("the DuckDB driver is closed")?;
        writeln!(stdin, "{request}").and_then(|()| stdin.flush()).map_err(|e| format!("writing to the DuckDB driver: {e}"))?;
        self.read_reply()
    }

    /// Run statements that return no rows (table set-up, `SET`s), one by one.
    pub fn execute(&mut self, statements: &[String]) -> Result<(), String> {
        // The driver's `setup` runs without fetching: a statement without a result set
        // cannot be fetched from. `SELECT 1` fills the request's required `sql`.
        self.request(&serde_json::json!({ "setup": statements, "sql": "SELECT 1", "fetch": false }))?;
        Ok(())
    }

    /// Run `setup`, then the query `sql`: its rows as `a|b|c` lines and its time.
    pub fn query(&mut self, setup: &[String], sql: &str) -> Result<(Vec<String>, Duration), String> {
        let reply = self.request(&serde_json::json!({ "setup": setup, "sql": sql, "fetch": true }))?;
        Ok((reply_lines(&reply["rows"]), reply_time(&reply)?))
    }
}

impl Drop for DuckDb {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The time the driver measured for a request's `sql`.
pub fn reply_time(reply: &serde_json::Value) -> Result<Duration, String> {
    let ms = reply.get("ms").and_then(|v| v.as_f64()).ok_or("DuckDB driver: no time")?;
    Ok(Duration::from_secs_f64(ms.max(0.0) / 1000.0))
}

/// Rows of an answer (`[[text...]...]`) as `a|b|c` lines, as psql prints them with `-A`.
pub fn reply_lines(rows: &serde_json::Value) -> Vec<String> {
    rows.as_array()
        .map(|rows| {
            rows.iter()
                .map(|row| {
                    row.as_array()
                        .map(|fields| fields.iter().map(|f| f.as_str().unwrap_or("")).collect::<Vec<_>>().join("|"))
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn python_imports_duckdb() -> bool {
    Command::new("python3")
        .args(["-c", "import duckdb"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `import duckdb`, or `pip install duckdb` (then with `--break-system-packages`, for a
/// system Python that refuses), or the reason it cannot be had.
pub fn ensure_duckdb() -> Result<(), String> {
    if python_imports_duckdb() {
        return Ok(());
    }
    let mut last = String::from("python3 is not installed");
    for extra in [&[][..], &["--break-system-packages"][..]] {
        outln!("set-up: DuckDB: python3 -m pip install {}duckdb", extra.iter().map(|e| format!("{e} ")).collect::<String>());
        let output = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .args(extra)
            .arg("duckdb")
            .stdin(Stdio::null())
            .output();
        match output {
            Ok(output) => {
                if output.status.success() && python_imports_duckdb() {
                    return Ok(());
                }
                let stderr = String::from_utf8_lossy(&output.stderr);
                let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
                last = format!("pip install duckdb failed ({}): {}", output.status, tail.into_iter().rev().collect::<Vec<_>>().join(" / "));
            }
            Err(e) => last = format!("could not run python3 -m pip: {e}"),
        }
    }
    Err(last)
}

/// A path inside a single-quoted SQL string literal.
pub fn sql_path(path: &Path) -> String {
    path.display().to_string().replace('\'', "''")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse() {
        let reply: serde_json::Value = serde_json::json!({"ms": 12.5, "rows": [["1", "x"], ["2", ""]]});
        assert_eq!(reply_lines(&reply["rows"]), vec!["1|x", "2|"]);
        assert_eq!(reply_lines(&serde_json::Value::Null), Vec::<String>::new());
        assert_eq!(reply_time(&reply), Ok(Duration::from_micros(12_500)));
        assert!(reply_time(&serde_json::json!({})).is_err());
        assert_eq!(sql_path(Path::new("/tmp/it's")), "/tmp/it''s");
    }
}
