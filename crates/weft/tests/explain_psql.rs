//! EXPLAIN through the `weft` binary prints what psql prints for PostgreSQL 15's plan of
//! the same query: with COSTS OFF, node names, tree layout, keys and filters agree byte
//! for byte wherever the two planners choose the same plan (serial plans, and parallel
//! ones with PostgreSQL's parallel costs zeroed so that it parallelizes a small table
//! as weft does with `min_parallel_table_scan_size = 0`).

use std::path::Path;
use std::process::Command;

use weft::postgres::PgCluster;

const SETUP: &str = "create table e (a int not null, b text, c bigint);\n\
    insert into e select i, md5(i::text), i * 10 from generate_series(1, 2000) i;\n";

const QUERIES: &str = "set max_parallel_workers_per_gather = 0;\n\
    explain (costs off) select a from e where a > 5;\n\
    explain (costs off) select a, b from e where a > 5 and c < 100 order by b desc, a + 1 nulls first limit 3;\n\
    explain (costs off) select a from e where md5(a::text) = 'x' or c is null or not (a <> 3);\n\
    explain (costs off) select a from e where not (a < 3 or a > 10);\n\
    explain (costs off) select a from e where c > 2 + 3 and a < 5000000000;\n\
    explain (costs off) select a from e where a::numeric > 1.5 and b || 'x' = 'y' and hashint8(a) > 0;\n\
    explain (costs off) select count(*), sum(c) from e;\n\
    explain (costs off) select a % 10 as k, count(*) from e group by 1 having count(*) > 3 order by count(*) desc;\n\
    explain (costs off) select x from e as t(x) where x = 1;\n\
    explain (costs off) select g from generate_series(1, 10) g where g % 2 = 0;\n\
    explain (costs off) values (1, 'one'), (2, 'two');\n\
    explain (costs off) select 1;\n\
    explain (verbose, costs off) select t.a + 1, b from e t where t.a = 7;\n\
    explain (costs off) insert into e select * from e where a < 3;\n\
    explain (costs off) insert into e values (1, 'x', 2);\n\
    explain (costs off) select md5(a::text) from e order by 1 limit 3;\n\
    explain (costs off) select a from e where a > 10 order by a desc nulls last, b nulls first;\n\
    explain (costs off) select * from e limit 10 offset 5;\n\
    explain select 1;\n\
    explain (costs off) select a from e where 1 = 2 and a > 5;\n\
    explain (costs off) select count(*) from e where 1 = 2;\n\
    explain (costs off) select e1.a from e e1 join e e2 on e1.a = e2.a where 1 = 2;\n\
    explain (costs off) select a from e where exists (select 1 from e e2 where e2.c < 0);\n\
    explain (costs off) select a from e where not exists (select 1 from e e2 where e2.c < 0) and a > 5;\n\
    explain (costs off) select count(*) from e where a > 5 and exists (select 1 from e e3 where e3.c < 0);\n\
    explain (costs off) select exists (select 1 from e where c < 0);\n\
    explain select a from e where 1 = 2;\n\
    set min_parallel_table_scan_size = 0;\n\
    set max_parallel_workers_per_gather = 2;\n\
    explain (costs off) select a from e where a > 5;\n\
    explain (costs off) select a from e order by a limit 10;\n\
    explain (costs off) select count(*) from e;\n\
    explain (analyze, costs off, timing off, summary off) select a from e where a % 3 = 0;\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `Workers Launched` line depends on free workers; the rest must agree.
fn without_launched(output: &str) -> String {
    output.lines().filter(|l| !l.contains("Workers Launched:")).collect::<Vec<_>>().join("\n")
}

#[test]
fn explain_output_matches_psql() {
    if !PgCluster::available() {
        eprintln!("skipping: PostgreSQL 15 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, contents: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        path.to_str().unwrap().to_string()
    };
    let setup = write("setup.sql", SETUP);
    let queries = write("queries.sql", QUERIES);

    let cluster = PgCluster::start().expect("start PostgreSQL");
    let expected = cluster
        .psql_command()
        .args(["-q", "-f", &setup, "-c", "analyze e", "-c", "set parallel_setup_cost = 0", "-c", "set parallel_tuple_cost = 0"])
        .args(["-f", &queries])
        .output()
        .unwrap();
    assert!(expected.status.success(), "{}", text(&expected.stderr));

    let data: &Path = &dir.path().join("data");
    let actual = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("-D")
        .arg(data)
        .args(["--set", "max_worker_processes=4", "-q", "-f", &setup, "-f", &queries])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert_eq!(text(&actual.stderr), "");
    let (expected, actual) = (text(&expected.stdout), text(&actual.stdout));
    // `EXPLAIN SELECT 1` is the one plan with costs: both cost models agree on it.
    assert!(actual.contains(" Result  (cost=0.00..0.01 rows=1 width=4)\n"), "{actual}");
    assert_eq!(without_launched(&actual), without_launched(&expected));
}
