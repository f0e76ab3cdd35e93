//! `COPY ... FROM STDIN`, `COPY ... TO STDOUT` and `\copy`, through weft's shell and
//! through psql connected to `weft serve`, against psql connected to PostgreSQL 15 running
//! the same script: the same rows loaded, the same output, the same errors (with their
//! CONTEXT lines), and psql reading the data lines of a COPY that failed before reading as
//! SQL, as it does against PostgreSQL.

use std::path::Path;

use crate::describe_psql::{as_weft_messages, assert_same_lines, both, cluster, psql, text};
use crate::server::Server;

/// The script, with `DIR` standing for a directory holding `in.csv`.
const SCRIPT: &str = "\
create table ct (a int, b text, c numeric(6,2));
copy ct from stdin;
1\tone\t1.5
2\t\\N\t\\N
3\ttab\\there\t-2
\\.
copy ct (a, b) from stdin with (format csv);
4,\"quoted, comma\"
5,
6,\"\"
\\.
copy ct from stdin with (format csv, header true);
a,b,c
7,\"multi
line\",3.25
\\.
select a, replace(replace(b, E'\\t', '<tab>'), E'\\n', '<nl>') as b, c from ct order by a;
copy ct to stdout;
copy ct to stdout with (format csv, header);
copy (select a, b from ct where a < 3 order by a) to stdout with csv;
copy ct from stdin;
8\teight\t1
x\tbad\t2
\\.
copy ct from stdin;
9\tnine
\\.
copy ct from stdin;
10\tten\t1\textra
\\.
copy ct from stdin with (format csv);
11,big,123456.789
\\.
select count(*) from ct;
copy nosuch from stdin;
select 'after the failed copy';
\\copy ct from 'DIR/in.csv' with (format csv)
\\copy ct to 'DIR/out.txt'
create table back (a int, b text, c numeric(6,2));
\\copy back from 'DIR/out.txt'
select count(*), sum(a), count(b), sum(c) from back;
\\copy (select count(*) from ct) to stdout
\\copy ct (a) from stdin
20
21
\\.
select a from ct where a >= 20 order by a;
\\copy ct from 'DIR/missing.csv'
\\copy ct
begin;
copy ct (a) from stdin;
30
\\.
rollback;
select count(*) from ct where a = 30;
";

fn script_in(dir: &Path) -> String {
    std::fs::write(dir.join("in.csv"), "12,from file,1.25\n13,,\n").unwrap();
    SCRIPT.replace("DIR", dir.to_str().unwrap())
}

#[test]
fn copy_through_the_shell_matches_psql() {
    let Some(cluster) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = script_in(dir.path());
    let (actual, expected) = both(&cluster, dir.path(), "copy.sql", &script, &[]);
    assert_same_lines(&text(&actual.stdout), &text(&expected.stdout), "stdout");
    assert_same_lines(&text(&actual.stderr), &as_weft_messages(&text(&expected.stderr)), "stderr");
}

#[test]
fn copy_over_the_wire_matches_postgresql() {
    let Some(cluster) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = script_in(dir.path());
    let path = dir.path().join("copy.sql");
    std::fs::write(&path, &script).unwrap();
    let path = path.to_str().unwrap();
    let expected = psql(&cluster, &["-f", path]);
    let server = Server::start(&dir.path().join("data"));
    let actual = std::process::Command::new("psql")
        .args(["-X", "-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "postgres", "-f", path])
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .expect("run psql");
    assert_same_lines(&text(&actual.stdout), &text(&expected.stdout), "stdout");
    assert_same_lines(&text(&actual.stderr), &text(&expected.stderr), "stderr");

    // psql -c with the data on its stdin.
    let mut child = std::process::Command::new("psql")
        .args(["-X", "-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "postgres", "-c", "copy back (a, b) from stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let rows: String = (1..=5000).map(|i| format!("{i}\trow {i}\n")).collect();
    child.stdin.take().unwrap().write_all(rows.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(text(&output.stdout), "COPY 5000\n");
    server.stop();
}
