//! The PostgreSQL harness starts a cluster, answers a query and cleans up after itself.

use weft::postgres::PgCluster;

#[test]
fn cluster_answers_md5() {
    if !PgCluster::available() {
        eprintln!("skipping: PostgreSQL 15 is not installed");
        return;
    }
    let cluster = PgCluster::start().expect("start PostgreSQL");
    assert_eq!(cluster.query_one("select md5('a')").unwrap(), "0cc175b9c0f1b6a831c399e269772661");

    let timings = cluster.time_statement(&["SET max_parallel_workers_per_gather = 0"], "select 1", 2).unwrap();
    assert_eq!(timings.len(), 2);

    let error = cluster.query("select * from no_such_table").unwrap_err();
    assert!(error.message.contains("no_such_table"), "{error}");

    let data_dir = cluster.data_dir();
    assert!(data_dir.exists());
    drop(cluster);
    assert!(!data_dir.exists(), "the cluster directory is removed on drop");
}
