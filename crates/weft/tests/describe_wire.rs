//! psql's describe commands over the wire: psql 15 connected to `weft serve` sends its own
//! catalog queries (pg_class, pg_attribute, pg_attrdef, pg_constraint, pg_index,
//! pg_sequence, pg_depend, pg_database, format_type, pg_get_indexdef,
//! pg_get_constraintdef, regclass casts, ...) and must print what it prints against
//! PostgreSQL 15 for the same DDL. weft's shell prints `\d` itself (`describe_psql.rs`);
//! both read the same catalog functions.
//!
//! Known differences, kept out of the byte-for-byte comparison: `\l` lists weft's one
//! database (PostgreSQL also has template0 and template1), and the Size of `\dt+` (weft's
//! files against PostgreSQL's, with its TOAST relation).

use std::path::Path;
use std::process::Command;

use weft::postgres::PgCluster;

use crate::server::Server;

const SETUP: &str = "\
create table t (id serial primary key, a int not null default 5, b text default 'x', n numeric(10,2), \
v varchar(20) unique, c int check (c > 0), constraint t_ab check (a < 100));
create index t_ab_idx on t (a, b desc);
create unique index t_n on t (n desc nulls last);
create table r (k bigint primary key, tid int references t(id) on delete cascade, s smallint, ch char(3), \
constraint r_two unique (s, ch));
create index t_lower on t (lower(b)) where c > 0;
create sequence s1;
create table \"Mixed\" (\"Col\" int default -1, d date, ts timestamptz default now(), f float8);
";

/// The commands compared byte for byte.
const COMMANDS: &[&str] = &[
    "\\d",
    "\\dt",
    "\\di",
    "\\ds",
    "\\dn",
    "\\d t",
    "\\d r",
    "\\d \"Mixed\"",
    "\\d t_ab_idx",
    "\\d t_pkey",
    "\\d t_v_key",
    "\\d t_n",
    "\\d t_lower",
    "\\d r_two",
    "\\d s1",
    "\\d t_id_seq",
    "\\d t*",
    "\\d nosuch",
    "\\d+ t",
    "\\d+ r",
    "\\d+ t_ab_idx",
];

fn psql(port: u16, args: &[&str]) -> std::process::Output {
    Command::new("psql")
        .args(["-X", "-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres", "-d", "postgres"])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .expect("run psql")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn setup(port: u16) {
    let output = psql(port, &["-v", "ON_ERROR_STOP=1", "-q", "-c", SETUP]);
    assert!(output.status.success(), "setup: {}", text(&output.stderr));
}

fn start(dir: &Path) -> Option<(PgCluster, Server)> {
    if !PgCluster::available() {
        eprintln!("skipping: PostgreSQL 15 is not installed");
        return None;
    }
    let cluster = PgCluster::start().expect("start PostgreSQL");
    let server = Server::start(&dir.join("data"));
    setup(cluster.port());
    setup(server.port);
    Some((cluster, server))
}

#[test]
fn describe_commands_over_the_wire_match_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let Some((cluster, server)) = start(dir.path()) else { return };
    for command in COMMANDS {
        let expected = psql(cluster.port(), &["-c", command]);
        let actual = psql(server.port, &["-c", command]);
        assert_eq!(text(&actual.stderr), text(&expected.stderr), "stderr of {command}");
        assert_eq!(text(&actual.stdout), text(&expected.stdout), "stdout of {command}");
        assert_eq!(actual.status.code(), expected.status.code(), "status of {command}");
    }

    // `\l`: weft's one database is PostgreSQL's `postgres` line (no templates).
    let expected = text(&psql(cluster.port(), &["-A", "-c", "\\l"]).stdout);
    let actual = text(&psql(server.port, &["-A", "-c", "\\l"]).stdout);
    let lines: Vec<&str> = expected.lines().filter(|l| !l.starts_with("template") && !l.starts_with("postgres=CTc") && !l.starts_with('(')).collect();
    let mut wanted = lines.join("\n");
    wanted.push_str("\n(1 row)\n");
    assert_eq!(actual, wanted);

    // `\dt+`: all but the Size column.
    let mask = |output: String| -> String {
        output.lines().map(|line| line.split('|').enumerate().filter(|(i, _)| *i != 6).map(|(_, f)| f).collect::<Vec<_>>().join("|") + "\n").collect()
    };
    let expected = mask(text(&psql(cluster.port(), &["-A", "-c", "\\dt+"]).stdout));
    let actual = mask(text(&psql(server.port, &["-A", "-c", "\\dt+"]).stdout));
    assert_eq!(actual, expected);
    server.stop();
}
