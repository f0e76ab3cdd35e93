//! `\d`, `\dt`, `\di`, `\dti`, `\d NAME` and their `+` forms print what psql 15 prints for
//! the same tables and indexes: the same script runs through `weft -f` and through `psql -f`
//! against PostgreSQL 15, connected as a role named `weft` so that the Owner column agrees.
//!
//! Known differences, kept out of the scripts: the Size of `+` listings (PostgreSQL counts a
//! table's TOAST relation, and its B-tree of an empty table is a lone metapage), masked in
//! `verbose_listings_match_psql_but_sizes`; and an index created `WITH (fillfactor = 90)`,
//! which PostgreSQL shows and weft does not (its catalog keeps the number, not whether it
//! was given).

use std::path::Path;
use std::process::{Command, Output};

use weft::postgres::PgCluster;

const ROLE: &str = "weft";

const SETUP: &str = "\
create table u2 (a int not null, b text, c float8);
create table \"Mixed\" (\"Col A\" int, b int8, d bool, n numeric);
create table empty_t (x int);
create table t_select (\"select\" int, y text);
insert into u2 values (1, 'one', 1.5), (2, null, null);
create index u2_a on u2 (a);
create unique index u2_ab on u2 (a desc, b nulls first) with (fillfactor = 70);
create index u2_c on u2 (c desc nulls last, b);
create index \"Idx Upper\" on \"Mixed\" (\"Col A\", b desc);
create index m_b on \"Mixed\" (b asc nulls first);
create index m_n on \"Mixed\" (n desc nulls first, d nulls last);
create index ts_sel on t_select (\"select\");
create table keyed (k int primary key, v text unique, w int8, constraint keyed_vw unique (w, v));
create table ex (a int, b int, name text, v int);
create index on ex (lower(name));
create index on ex ((a + b), name desc);
create unique index ex_part on ex (a) where v is not null and b > 3;
create index ex_inc on ex (a) include (name, v);
create table sq (id serial, b bigserial, c int);
create table defs (s text default 'x', v varchar(5) default 'ab', n numeric(6,2) default 1.5 not null, t timestamptz default now(), i int default -1);
create view u2_v as select a, b || 'x' as bx, c from u2 where a > 1;
";

/// Meta-commands whose output carries no sizes.
const DESCRIBE: &str = "\
\\d
\\dt
\\di
\\dti
\\dit
\\d u2
\\d \"Mixed\"
\\d empty_t
\\d t_select
\\d u2_a
\\d u2_ab
\\d u2_c
\\d \"Idx Upper\"
\\d m_n
\\d ts_sel
\\d keyed
\\d keyed_pkey
\\d keyed_v_key
\\d ex
\\d defs
\\d sq
\\ds
\\dts
\\d sq_id_seq
\\d u2_v
\\dv
\\d sq_b_seq
\\d ex_lower_idx
\\d ex_expr_name_idx
\\d ex_part
\\d ex_inc
\\d U2_A
\\d u2*
\\d ?2
\\d u2_a\"b\"
\\d public.u2_a
\\d *.u2_c
\\di u2_a*
\\dt \"Mix*\"
\\dt \"Mixed\"
\\dt public.
\\di *upper*
\\di *Upper*
\\d u2_a extra
\\di u2_a u2_c
\\d+ u2
\\d+ \"Mixed\"
\\d+ u2_ab
\\d+ u2_a
\\d+ m_n
\\d \"Nope\"
\\d nosuch
\\di nosuch
\\dt nosuch
\\dt other.u2
\\d a.b.c
\\d a.b.c.d
";

pub(crate) fn weft(data_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("-D")
        .arg(data_dir)
        .args(args)
        .env("HOME", data_dir)
        .output()
        .expect("run weft")
}

/// psql connected as `weft` (the later `-U` wins over the harness's `-U postgres`).
pub(crate) fn psql(cluster: &PgCluster, args: &[&str]) -> Output {
    let mut command = cluster.psql_command();
    // The harness sets ON_ERROR_STOP; weft's run does not, and the scripts hold errors.
    command.args(["-U", ROLE, "-v", "ON_ERROR_STOP=0"]).args(args);
    command.output().expect("run psql")
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A cluster with the `weft` role, or `None` when PostgreSQL 15 is not installed.
pub(crate) fn cluster() -> Option<PgCluster> {
    if !PgCluster::available() {
        eprintln!("skipping: PostgreSQL 15 is not installed");
        return None;
    }
    let cluster = PgCluster::start().expect("start PostgreSQL");
    cluster.query(&format!("CREATE ROLE {ROLE} SUPERUSER LOGIN")).expect("create the role");
    Some(cluster)
}

/// Run `script` through weft (in `data`) and through psql; return (weft, psql) outputs.
pub(crate) fn both(cluster: &PgCluster, dir: &Path, name: &str, script: &str, format: &[&str]) -> (Output, Output) {
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    let path = path.to_str().unwrap();
    let mut args = format.to_vec();
    args.extend(["-f", path]);
    let expected = psql(cluster, &args);
    let actual = weft(&dir.join("data"), &args);
    (actual, expected)
}

/// psql's `psql:FILE:LINE: ` prefix is weft's `weft:FILE:LINE: `.
pub(crate) fn as_weft_messages(stderr: &str) -> String {
    stderr.lines().map(|line| format!("{}\n", line.strip_prefix("psql:").map_or(line.to_string(), |rest| format!("weft:{rest}")))).collect()
}

pub(crate) fn assert_same_lines(actual: &str, expected: &str, what: &str) {
    if actual == expected {
        return;
    }
    let a: Vec<&str> = actual.lines().collect();
    let e: Vec<&str> = expected.lines().collect();
    let first = a.iter().zip(&e).position(|(x, y)| x != y).unwrap_or(a.len().min(e.len()));
    let context = |lines: &[&str]| lines[first.saturating_sub(3)..(first + 8).min(lines.len())].join("\n");
    panic!(
        "{what} differs at line {}:\n--- weft\n{}\n--- psql\n{}\n=== weft, all:\n{actual}",
        first + 1,
        context(&a),
        context(&e)
    );
}

#[test]
fn describe_and_list_match_psql() {
    let Some(cluster) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = format!("{SETUP}{DESCRIBE}");
    let (actual, expected) = both(&cluster, dir.path(), "describe.sql", &script, &[]);
    assert_same_lines(&text(&actual.stdout), &text(&expected.stdout), "stdout");
    assert_same_lines(&text(&actual.stderr), &as_weft_messages(&text(&expected.stderr)), "stderr");
    assert_eq!(actual.status.code(), expected.status.code());

    // The same listings in the other output formats (the data directory is reused: no SETUP).
    let listings = "\\dti\n\\d u2\n\\d+ u2_ab\n";
    for format in [&["-A"][..], &["-t"], &["--csv"], &["-A", "-t", "-F", ","]] {
        let (actual, expected) = both(&cluster, dir.path(), "formats.sql", listings, format);
        assert_same_lines(&text(&actual.stdout), &text(&expected.stdout), &format!("stdout {format:?}"));
        assert_eq!(text(&actual.stderr), "", "{format:?}");
    }
}

/// `-c` and `-q`: no `error: ` prefix, no "Try \? for help.", psql's exit statuses
/// (`\d` of nothing fails, `\dt` of nothing does not), and under `-q` no message at all
/// (and an empty table for a listing).
#[test]
fn messages_and_statuses_match_psql() {
    let Some(cluster) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let setup = "create table u2 (a int not null); create index u2_a on u2 (a)";
    assert!(weft(&data, &["-c", setup]).status.success());
    assert!(psql(&cluster, &["-c", setup]).status.success());
    let cases: &[&[&str]] = &[
        &["-c", "\\d nosuch"],
        &["-c", "\\dt nosuch"],
        &["-c", "\\di nosuch"],
        &["-c", "\\d u2_a"],
        &["-c", "\\d u2_a extra"],
        &["-c", "\\nosuch"],
        &["-q", "-c", "\\d nosuch"],
        &["-q", "-c", "\\dt nosuch"],
        &["-q", "-c", "\\di"],
        &["-c", "\\d a.b.c"],
    ];
    for args in cases {
        let expected = psql(&cluster, args);
        let actual = weft(&data, args);
        assert_eq!(text(&actual.stdout), text(&expected.stdout), "stdout of {args:?}");
        assert_eq!(text(&actual.stderr), text(&expected.stderr), "stderr of {args:?}");
        assert_eq!(actual.status.code(), expected.status.code(), "status of {args:?}");
    }
}

/// `\dt+`, `\di+`, `\d+`, `\dti+` in unaligned form (no widths to depend on sizes): all but
/// the Size field as psql prints it, and weft's sizes are the files' sizes.
#[test]
fn verbose_listings_match_psql_but_sizes() {
    let Some(cluster) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = format!("{SETUP}\\dt+\n\\di+\n\\d+\n\\dti+ u2*\n\\di+ nosuch\n");
    let (actual, expected) = both(&cluster, dir.path(), "verbose.sql", &script, &["-A"]);
    let mask = |output: &str| -> String {
        output
            .lines()
            .map(|line| {
                let fields: Vec<String> = line
                    .split('|')
                    .map(|f| {
                        let size = f.split_once(' ').is_some_and(|(n, unit)| {
                            n.parse::<u64>().is_ok() && ["bytes", "kB", "MB", "GB"].contains(&unit)
                        });
                        if size { "SIZE".to_string() } else { f.to_string() }
                    })
                    .collect();
                format!("{}\n", fields.join("|"))
            })
            .collect()
    };
    assert_same_lines(&mask(&text(&actual.stdout)), &mask(&text(&expected.stdout)), "stdout");
    assert_same_lines(&text(&actual.stderr), &as_weft_messages(&text(&expected.stderr)), "stderr");

    // weft's Size is the file's: a 20000-row index is far more than an empty one.
    let data = dir.path().join("data");
    let fill = "insert into empty_t select i from generate_series(1, 20000) i; create index e_x on empty_t (x)";
    assert!(weft(&data, &["-c", fill]).status.success());
    let listed = text(&weft(&data, &["-A", "-t", "-c", "\\di+ e_x", "-c", "\\dt+ empty_t"]).stdout);
    let sizes: Vec<&str> = listed.lines().map(|l| l.split('|').nth_back(1).unwrap_or("")).collect();
    assert_eq!(sizes.len(), 2, "{listed}");
    for size in sizes {
        assert!(size.ends_with(" kB") || size.ends_with(" MB"), "{listed}");
    }
}

/// Errors found while reading a statement point into it as psql shows PostgreSQL's: the
/// `LINE n:` line, cut around the place when long, and the caret (the protocol's position
/// field, which the wire server sends too). The statements end their lines, `;` included,
/// which psql sends and so does weft's shell: `select 1 +;` fails at or near ";".
#[test]
fn error_positions_match_psql() {
    let Some(cluster) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = "\
create table et (a int, b text);
select x from et;
select a from nosuch;
select a,
     zz from et;
select foo(1);
select 'abc'::int;
select 1 + 'x';
select a from et where b = 1;
select a from et where a = 'zz';
selec 1;
select cast('q' as date);
select * from et join et e2 on true order by nonexist;
select aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, cccccccccccccccc from et;
select a, b, cccccccccccccccccccccccccccccccccccccccccccccccccccccccccc, dddddddddddddddddddddd, e from et;
select et.q from et;
select a, b from et e1, et e2;
select sum(b) from et;
select count(*) from et where exists (select nosuch);
select * from et where a in (select a, b from et);
select 'é' || x;
select 1/0;
select a from et group by b;
select 1 +;
select a from et where b ~ '(';
select a from et where b similar to '(';
";
    let (actual, expected) = both(&cluster, dir.path(), "positions.sql", script, &[]);
    assert_same_lines(&text(&actual.stderr), &as_weft_messages(&text(&expected.stderr)), "stderr");
    assert_same_lines(&text(&actual.stdout), &text(&expected.stdout), "stdout");
}
