//! The CREATE INDEX progress bar: drawn on a terminal with PostgreSQL's phase names and
//! cleared before the result is printed; never drawn when stderr is a pipe.
//!
//! The terminal is util-linux `script`'s pseudo-terminal; the test is skipped where
//! `script` is missing, and passes without judging when the build was too quick to show a
//! bar (under 0.8 s; it is drawn after 0.5 s).

use std::path::Path;
use std::process::{Command, Output, Stdio};

const ROWS: u64 = 2_000_000;

fn weft(data_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("-D")
        .arg(data_dir)
        .args(args)
        .env("HOME", data_dir)
        .output()
        .expect("run weft")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn create_table(data: &Path) {
    let sql = format!("create table t as select md5(i::text) collate \"C\" padding1 from generate_series(0, {ROWS}) i");
    let output = weft(data, &["-c", &sql]);
    assert!(output.status.success(), "{}", text(&output.stderr));
}

const CREATE: &str = "create index i on t (padding1) with (parallel_workers = 0)";

/// The `Time: ...` line's milliseconds.
fn timing_ms(output: &str) -> f64 {
    let line = output.lines().find_map(|l| l.trim().strip_prefix("Time: ")).expect("a Time: line");
    line.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn no_bar_when_stderr_is_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    create_table(&data);
    let output = weft(&data, &["-c", CREATE]);
    assert_eq!(text(&output.stdout), "CREATE INDEX\n");
    assert_eq!(text(&output.stderr), "", "nothing but the result, however long the build");
}

#[test]
fn bar_on_a_terminal_shows_phases_and_is_cleared() {
    let has_script = Command::new("script").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !has_script {
        eprintln!("skipping: util-linux script is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    create_table(&data);
    let command = format!("{} -D {} -c '\\timing on' -c '{CREATE}'", env!("CARGO_BIN_EXE_weft"), data.display());
    // script gives weft a terminal for stdin, stdout and stderr, and copies what it shows.
    let output = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .stdin(Stdio::null())
        .env("HOME", dir.path())
        .env("COLUMNS", "100")
        .output()
        .expect("run script");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let shown = text(&output.stdout);
    assert!(shown.contains("CREATE INDEX"), "{shown}");
    // The bar appears after half a second; which phase it first shows depends on the
    // machine's speed, so any of PostgreSQL's build phases with its unit will do.
    if timing_ms(&shown) < 800.0 {
        eprintln!("the build took under 0.8 s: too quick to expect a bar");
        return;
    }
    let phases = [("scanning table", "blocks"), ("sorting live tuples", "tuples"), ("loading tuples in tree", "tuples")];
    let shown_phase = phases.iter().any(|(phase, unit)| {
        shown.match_indices(&format!("building index: {phase} [")).any(|(at, _)| {
            let line = shown[at..].split(['\r', '\n']).next().unwrap();
            line.ends_with(&format!(" {unit}, index \"i\""))
        })
    });
    assert!(shown_phase, "{shown:?}");
    // The bar is gone (line cleared: ESC [2K) before the command tag is printed.
    let tag = shown.find("CREATE INDEX").unwrap();
    let last_bar = shown.rfind("building index: ").unwrap();
    assert!(last_bar < tag, "{shown:?}");
    assert!(shown[last_bar..tag].contains("\u{1b}[2K"), "{shown:?}");
}
