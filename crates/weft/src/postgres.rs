//! A throwaway PostgreSQL 15 cluster, used as the other side of `weft bench` and as an oracle
//! in integration tests.
//!
//! `PgCluster::start` makes a temporary directory, runs `initdb` into it (trust
//! authentication, superuser `postgres`), and starts a postmaster with `pg_ctl` on a free TCP
//! port of 127.0.0.1, with its Unix socket in the same temporary directory so it never touches
//! the system's `/var/run/postgresql`. Dropping the value stops the server (`-m immediate`: the
//! data is thrown away anyway) and removes the directory, also when the caller bails out with an
//! error half-way.
//!
//! PostgreSQL refuses to run as root. When we are root, the directory is chowned to the
//! `postgres` user and `initdb` / `pg_ctl` run through `su postgres -s /bin/sh -c ...`; otherwise
//! they run directly. `psql` is a client and runs as whoever we are, over TCP.
//!
//! Statements are timed by psql itself (`\timing on` and its `Time: X ms` lines), so process
//! start-up and connection set-up are not counted, as they would be by a wall clock around psql.
//!
//! `query` does not start a psql: the oracle tests send thousands of statements, and a psql
//! process with its connection costs tens of milliseconds each. It keeps one driver connection
//! (the `postgres` crate) for the cluster's life and prints rows and errors as `psql -At` does.
//! After each call it rolls back and discards the session's state, so that every call starts
//! afresh, as each psql did.

use std::fmt;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// Where Debian puts the PostgreSQL 15 server binaries.
pub const PG_BIN_DIR: &str = "/usr/lib/postgresql/15/bin";

/// How many times `start` tries a new port when the one it picked was taken meanwhile.
const START_ATTEMPTS_MAX: usize = 3;

/// A failure to set up or talk to the cluster, with the tool's output.
#[derive(Debug, Clone)]
pub struct PgError {
    pub message: String,
    /// PostgreSQL's SQLSTATE, for an error the server raised in `query`.
    pub sqlstate: Option<String>,
}

impl PgError {
    fn new(message: impl Into<String>) -> PgError {
        PgError { message: message.into(), sqlstate: None }
    }
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PgError {}

pub type PgResult<T> = Result<T, PgError>;

/// What one psql run printed: the result lines (unaligned, tuples only) and, per statement,
/// the time psql measured.
#[derive(Debug, Clone, Default)]
pub struct PsqlOutput {
    pub lines: Vec<String>,
    pub timings: Vec<Duration>,
}

/// A running, throwaway PostgreSQL cluster. Stopped and deleted on drop.
pub struct PgCluster {
    /// Holds the data directory, the socket and the server log; removed on drop.
    root: tempfile::TempDir,
    port: u16,
    as_postgres_user: bool,
    running: bool,
    /// The connection `query` uses, opened by its first call.
    session: Mutex<Option<postgres::Client>>,
}

impl PgCluster {
    /// True when the PostgreSQL 15 server binaries are installed.
    pub fn available() -> bool {
        Path::new(PG_BIN_DIR).join("initdb").exists()
    }

    /// initdb and start a cluster with the bench defaults (`fsync=off`, `shared_buffers=128MB`).
    pub fn start() -> PgResult<PgCluster> {
        PgCluster::start_with(&[])
    }

    /// Like `start`, with extra `-c name=value` server settings.
    pub fn start_with(settings: &[(&str, &str)]) -> PgResult<PgCluster> {
        if !PgCluster::available() {
            return Err(PgError::new(format!("PostgreSQL 15 is not installed ({PG_BIN_DIR}/initdb is missing)")));
        }
        let root = tempfile::Builder::new()
            .prefix("weft-pg-")
            .tempdir()
            .map_err(|e| PgError::new(format!("could not create a temporary directory: {e}")))?;
        let as_postgres_user = is_root();
        let mut cluster = PgCluster { root, port: 0, as_postgres_user, running: false, session: Mutex::new(None) };
        if as_postgres_user {
            chown_to_postgres(cluster.root.path())?;
        }
        cluster.initdb()?;
        let mut last_error = PgError::new("the server did not start");
        for _ in 0..START_ATTEMPTS_MAX {
            cluster.port = free_port()?;
            match cluster.pg_ctl_start(settings) {
                Ok(()) => {
                    cluster.running = true;
                    return Ok(cluster);
                }
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn data_dir(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// A `postgresql://` URL for drivers.
    pub fn url(&self) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// A psql command connected to the cluster, with `-X` and `ON_ERROR_STOP`; add the output
    /// options and `-c`/`-f` yourself.
    pub fn psql_command(&self) -> Command {
        let mut command = Command::new("psql");
        command
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres", "-d", "postgres"])
            .args(["-X", "-v", "ON_ERROR_STOP=1"])
            .env("PGCONNECT_TIMEOUT", "10")
            .env_remove("PGPASSWORD")
            .env_remove("PGSERVICE")
            .stdin(Stdio::null());
        command
    }

    /// Run one statement (or several, `;`-separated) as a new session would; return its rows
    /// as psql's `-At` prints them (`|` between fields, NULL as nothing). A failure's message
    /// holds psql's `ERROR:  ...` lines, with `DETAIL:` and `HINT:` where PostgreSQL gave them.
    /// psql meta-commands (`\copy`, `\d`) need [`PgCluster::run`].
    pub fn query(&self, sql: &str) -> PgResult<Vec<String>> {
        let mut session = self.session.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if session.is_none() {
            let client = postgres::Config::new()
                .host("127.0.0.1")
                .port(self.port)
                .user("postgres")
                .dbname("postgres")
                .connect(postgres::NoTls)
                .map_err(|e| PgError::new(format!("could not connect to PostgreSQL on port {}: {e}", self.port)))?;
            *session = Some(client);
        }
        let client = session.as_mut().expect("connected above");
        let result = client.simple_query(sql);
        // What a psql's disconnect did: end an open or failed transaction, forget settings.
        if client.simple_query("ROLLBACK").and_then(|_| client.simple_query("DISCARD ALL")).is_err() {
            *session = None;
        }
        match result {
            Ok(messages) => Ok(messages
                .iter()
                .filter_map(|message| match message {
                    postgres::SimpleQueryMessage::Row(row) => {
                        Some((0..row.len()).map(|i| row.get(i).unwrap_or("")).collect::<Vec<_>>().join("|"))
                    }
                    _ => None,
                })
                .collect()),
            Err(e) => match e.as_db_error() {
                Some(db) => Err(PgError { message: psql_error_text(db), sqlstate: Some(db.code().code().to_string()) }),
                None => {
                    // The connection broke: the next call opens a new one.
                    *session = None;
                    Err(PgError::new(format!("PostgreSQL: {e}")))
                }
            },
        }
    }

    /// Run one statement and return its single output line (e.g. one value).
    pub fn query_one(&self, sql: &str) -> PgResult<String> {
        let lines = self.query(sql)?;
        match lines.as_slice() {
            [line] => Ok(line.clone()),
            _ => Err(PgError::new(format!("expected one line from {sql:?}, got {lines:?}"))),
        }
    }

    /// Run statements in order in one session (so `SET` carries over) with `\timing on`;
    /// return the rows and one duration per statement, as psql measured it.
    pub fn run(&self, statements: &[&str]) -> PgResult<PsqlOutput> {
        let mut command = self.psql_command();
        command.args(["-q", "-A", "-t", "-c", "\\timing on"]);
        for statement in statements {
            command.args(["-c", statement]);
        }
        let output = run_output(&mut command, "psql")?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let mut result = PsqlOutput::default();
        for line in stdout.lines() {
            match parse_timing_line(line) {
                Some(duration) => result.timings.push(duration),
                None => result.lines.push(line.to_string()),
            }
        }
        Ok(result)
    }

    /// Run one statement `repeats` times after `setup` in one session; return each time.
    pub fn time_statement(&self, setup: &[&str], sql: &str, repeats: usize) -> PgResult<Vec<Duration>> {
        let mut statements: Vec<&str> = setup.to_vec();
        statements.extend(std::iter::repeat_n(sql, repeats));
        let output = self.run(&statements)?;
        if output.timings.len() != statements.len() {
            return Err(PgError::new(format!(
                "expected {} timings from psql, got {}",
                statements.len(),
                output.timings.len()
            )));
        }
        Ok(output.timings[setup.len()..].to_vec())
    }

    fn initdb(&self) -> PgResult<()> {
        let data = self.data_dir();
        let args = [
            format!("{PG_BIN_DIR}/initdb"),
            "-D".to_string(),
            data.display().to_string(),
            "-A".to_string(),
            "trust".to_string(),
            "-U".to_string(),
            "postgres".to_string(),
            "--no-sync".to_string(),
            "-E".to_string(),
            "UTF8".to_string(),
            "--locale=C".to_string(),
        ];
        run_output(&mut self.server_command(&args), "initdb").map(|_| ())
    }

    fn pg_ctl_start(&self, settings: &[(&str, &str)]) -> PgResult<()> {
        let socket_dir = self.root.path().display().to_string();
        let mut options = format!(
            "-p {} -k {socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=128MB",
            self.port
        );
        for (name, value) in settings {
            options.push_str(&format!(" -c {name}={value}"));
        }
        let log = self.root.path().join("server.log");
        let args = [
            format!("{PG_BIN_DIR}/pg_ctl"),
            "-D".to_string(),
            self.data_dir().display().to_string(),
            "-l".to_string(),
            log.display().to_string(),
            "-w".to_string(),
            "-t".to_string(),
            "60".to_string(),
            "-o".to_string(),
            options,
            "start".to_string(),
        ];
        run_output(&mut self.server_command(&args), "pg_ctl start").map(|_| ()).map_err(|e| {
            let log_text = std::fs::read_to_string(&log).unwrap_or_default();
            PgError::new(format!("{e}\nserver log:\n{log_text}"))
        })
    }

    fn pg_ctl_stop(&self) -> PgResult<()> {
        let args = [
            format!("{PG_BIN_DIR}/pg_ctl"),
            "-D".to_string(),
            self.data_dir().display().to_string(),
            "-m".to_string(),
            "immediate".to_string(),
            "-w".to_string(),
            "stop".to_string(),
        ];
        run_output(&mut self.server_command(&args), "pg_ctl stop").map(|_| ())
    }

    /// A command for a server binary: through `su postgres` when we are root.
    fn server_command(&self, args: &[String]) -> Command {
        let mut command = if self.as_postgres_user {
            let line = args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ");
            let mut c = Command::new("su");
            c.args(["postgres", "-s", "/bin/sh", "-c", &line]);
            c
        } else {
            let mut c = Command::new(&args[0]);
            c.args(&args[1..]);
            c
        };
        // The postgres user may not be able to enter our working directory.
        command.current_dir(self.root.path()).stdin(Stdio::null());
        command
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        if self.running {
            if let Err(e) = self.pg_ctl_stop() {
                eprintln!("warning: could not stop the PostgreSQL cluster: {e}");
            }
            self.running = false;
        }
        // `root` (a TempDir) is removed after this.
    }
}

/// Parse psql's `Time: 12.345 ms` (maybe followed by ` (00:01.234)`).
pub fn parse_timing_line(line: &str) -> Option<Duration> {
    let rest = line.strip_prefix("Time: ")?;
    let ms_text = rest.split(" ms").next()?;
    let ms: f64 = ms_text.trim().parse().ok()?;
    Some(Duration::from_secs_f64(ms / 1000.0))
}

/// An error as psql prints it (without the `LINE n:` excerpt).
fn psql_error_text(error: &postgres::error::DbError) -> String {
    let mut text = format!("{}:  {}\n", error.severity(), error.message());
    if let Some(detail) = error.detail() {
        text.push_str(&format!("DETAIL:  {detail}\n"));
    }
    if let Some(hint) = error.hint() {
        text.push_str(&format!("HINT:  {hint}\n"));
    }
    text
}

fn run_output(command: &mut Command, what: &str) -> PgResult<Output> {
    let output = command.output().map_err(|e| PgError::new(format!("could not run {what}: {e}")))?;
    if !output.status.success() {
        return Err(PgError::new(format!(
            "{what} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(output)
}

fn is_root() -> bool {
    // `geteuid` would need `unsafe`, which this crate forbids; `id -u` answers the same.
    match Command::new("id").arg("-u").output() {
        Ok(out) => String::from_utf8_lossy(&out.stdout).trim() == "0",
        Err(_) => false,
    }
}

fn chown_to_postgres(path: &Path) -> PgResult<()> {
    let mut command = Command::new("chown");
    command.args(["postgres:postgres", &path.display().to_string()]);
    run_output(&mut command, "chown").map(|_| ())
}

fn free_port() -> PgResult<u16> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| PgError::new(format!("could not find a free port: {e}")))?;
    let port = listener.local_addr().map_err(|e| PgError::new(format!("could not find a free port: {e}")))?.port();
    Ok(port)
}

fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_lines() {
        assert_eq!(parse_timing_line("Time: 12.500 ms"), Some(Duration::from_micros(12_500)));
        assert_eq!(parse_timing_line("Time: 1234.000 ms (00:01.234)"), Some(Duration::from_millis(1234)));
        assert_eq!(parse_timing_line("12"), None);
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
