//! The `weft` binary end to end: exit statuses, error prefixes, and output compared with what
//! psql prints for the same script against PostgreSQL 15.

use std::path::Path;
use std::process::{Command, Output};

use weft::postgres::PgCluster;

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

#[test]
fn bad_usage_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(weft(dir.path(), &["--no-such-option"]).status.code(), Some(2));
    assert_eq!(weft(dir.path(), &["--set", "shared_buffers", "-c", "select 1"]).status.code(), Some(2));
}

#[test]
fn unopenable_data_dir_exits_1() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let output = weft(&file.path().join("data"), &["-c", "select 1"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(text(&output.stderr).starts_with("weft: error: could not open data directory"));
}

#[test]
fn on_error_stop_stops_scripts_with_3() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("errors.sql");
    std::fs::write(&script, "select nope;\n\nselect\n  nope2;\n").unwrap();
    let script = script.to_str().unwrap();
    let data = dir.path().join("data");

    let output = weft(&data, &["-f", script]);
    assert_eq!(output.status.code(), Some(0), "errors in a script do not change the status");
    let stderr = text(&output.stderr);
    assert!(stderr.contains(&format!("weft:{script}:1: ERROR:  ")), "{stderr}");
    assert!(stderr.contains(&format!("weft:{script}:4: ERROR:  ")), "{stderr}");

    let output = weft(&data, &["-v", "ON_ERROR_STOP=1", "-f", script]);
    assert_eq!(output.status.code(), Some(3));
    assert!(!text(&output.stderr).contains(":4:"), "the script stopped at its first error");

    // A failed last -c is 1, as in psql.
    assert_eq!(weft(&data, &["-c", "select nope"]).status.code(), Some(1));
}

#[test]
fn meta_commands_in_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let output = weft(&dir.path().join("data"), &["-c", "\\echo hello", "-c", "\\nosuch"]);
    assert_eq!(text(&output.stdout), "hello\n");
    // psql adds "Try \? for help." only when interactive.
    assert_eq!(text(&output.stderr), "invalid command \\nosuch\n");
    assert_eq!(output.status.code(), Some(1));
}

/// The same script through weft and through psql against PostgreSQL 15 prints the same.
#[test]
fn output_matches_psql() {
    if !PgCluster::available() {
        eprintln!("skipping: PostgreSQL 15 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.sql");
    std::fs::write(
        &script,
        "select 1 as a, 'xx'::text as bb, null::int as c, 1.5::float8 as d;\n\
         create table t (a int not null, b text);\n\
         insert into t values (1, 'one'), (2, null), (30000, 'thirty thousand');\n\
         select * from t order by a;\n\
         select count(*), sum(a) from t;\n\
         select b from t where a > 100000;\n",
    )
    .unwrap();
    let script = script.to_str().unwrap();
    let cluster = PgCluster::start().expect("start PostgreSQL");
    for format in [&[][..], &["-A"], &["-t"], &["--csv"], &["-A", "-t", "-F", ","]] {
        let expected = cluster.psql_command().args(format).args(["-f", script]).output().unwrap();
        assert!(expected.status.success(), "{}", text(&expected.stderr));
        cluster.query("drop table t").unwrap();

        let data = dir.path().join(format!("data{}", format.join("")));
        let mut args: Vec<&str> = format.to_vec();
        args.extend(["-f", script]);
        let actual = weft(&data, &args);
        assert_eq!(text(&actual.stderr), "", "format {format:?}");
        assert_eq!(text(&actual.stdout), text(&expected.stdout), "format {format:?}");
    }
}

/// `\di`, `\d table` and `\d index` print indexes as psql 15 does (owner aside).
#[test]
fn meta_commands_list_and_describe_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let out = weft(
        dir.path(),
        &[
            "-c",
            "create table u2 (a int not null, b text, c float8)",
            "-c",
            "create index u2_a on u2 (a)",
            "-c",
            "create unique index u2_ab on u2 (a desc, b nulls first) with (fillfactor = 70)",
            "-c",
            "\\di",
            "-c",
            "\\d u2",
            "-c",
            "\\d u2_ab",
        ],
    );
    let stdout = text(&out.stdout);
    let expected = "           List of relations
 Schema | Name  | Type  | Owner | Table 
--------+-------+-------+-------+-------
 public | u2_a  | index | weft  | u2
 public | u2_ab | index | weft  | u2
(2 rows)

                     Table \"public.u2\"
 Column |       Type       | Collation | Nullable | Default 
--------+------------------+-----------+----------+---------
 a      | integer          |           | not null | 
 b      | text             |           |          | 
 c      | double precision |           |          | 
Indexes:
    \"u2_a\" btree (a)
    \"u2_ab\" UNIQUE, btree (a DESC, b NULLS FIRST) WITH (fillfactor='70')

         Index \"public.u2_ab\"
 Column |  Type   | Key? | Definition 
--------+---------+------+------------
 a      | integer | yes  | a
 b      | text    | yes  | b
unique, btree, for table \"public.u2\"

";
    assert!(stdout.ends_with(expected), "{stdout}");
}
