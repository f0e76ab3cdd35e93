//! EXPLAIN ANALYZE end to end: the plan is run, and what it prints agrees with what the
//! query returns — serially and with forced parallelism.

use weft_sql::{DataType, Database, Datum, Session};

const ROWS: i64 = 30_000;

fn forced_parallelism() -> Vec<(String, String)> {
    vec![
        ("max_worker_processes".into(), "8".into()),
        ("min_parallel_table_scan_size".into(), "0".into()),
        ("max_parallel_workers_per_gather".into(), "3".into()),
    ]
}

fn setup(startup: &[(String, String)]) -> (tempfile::TempDir, std::sync::Arc<Database>, Session) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), startup).unwrap();
    let mut s = db.session();
    s.execute(&format!(
        "CREATE TABLE t AS SELECT hashint8(i) AS k, md5(i::text) AS pad, i FROM generate_series(1, {ROWS}::bigint) i"
    ))
    .unwrap();
    (dir, db, s)
}

fn explain(s: &mut Session, sql: &str) -> Vec<String> {
    let result = s.execute(sql).unwrap();
    assert_eq!(result.tag, "EXPLAIN");
    assert_eq!(result.columns.len(), 1);
    assert_eq!(result.columns[0].name, "QUERY PLAN");
    assert_eq!(result.columns[0].data_type, DataType::Text);
    result
        .rows
        .iter()
        .map(|r| match &r[0] {
            Datum::Text(line) => line.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn count(s: &mut Session, sql: &str) -> f64 {
    match s.execute(sql).unwrap().rows[0][0] {
        Datum::Int8(n) => n as f64,
        ref other => panic!("{other:?}"),
    }
}

/// The value after `key=` in a line (`rows=12`, `loops=3`).
fn field(line: &str, key: &str) -> Option<f64> {
    let at = line.rfind(&format!(" {key}=")).or_else(|| line.rfind(&format!("({key}=")))?;
    let rest = &line[at + key.len() + 2..];
    let end = rest.find([' ', ')']).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// (rows, loops) of a node's `(actual ...)` part.
fn actual(line: &str) -> (f64, f64) {
    let at = line.find("(actual ").unwrap_or_else(|| panic!("no actual figures in {line:?}"));
    let part = &line[at..];
    (field(part, "rows").unwrap(), field(part, "loops").unwrap())
}

fn node<'a>(lines: &'a [String], name: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.trim_start().trim_start_matches("->").trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no {name} node in\n{}", lines.join("\n")))
}

fn check_summary(lines: &[String]) {
    let n = lines.len();
    for (line, label) in [(&lines[n - 2], "Planning Time: "), (&lines[n - 1], "Execution Time: ")] {
        let value = line.strip_prefix(label).and_then(|v| v.strip_suffix(" ms")).unwrap_or_else(|| panic!("{line:?}"));
        assert!(value.parse::<f64>().unwrap() >= 0.0);
    }
}

fn order_by_reports_the_sort_and_the_real_row_count(startup: &[(String, String)], parallel: bool) {
    let (_dir, _db, mut s) = setup(startup);
    let expected = count(&mut s, "SELECT count(*) FROM t WHERE i % 3 <> 0");
    let lines = explain(&mut s, "EXPLAIN ANALYZE SELECT k, pad FROM t WHERE i % 3 <> 0 ORDER BY k, pad");
    let text = lines.join("\n");

    // The top node returned every row, exactly.
    let top = &lines[0];
    assert!(top.starts_with(if parallel { "Gather Merge  (cost=" } else { "Sort  (cost=" }), "{text}");
    assert_eq!(actual(top), (expected, 1.0), "{text}");
    assert!(top.contains("(actual time="), "{text}");

    assert!(lines.iter().any(|l| l.trim_start() == "Sort Key: k, pad"), "{text}");
    let method = lines.iter().find(|l| l.trim_start().starts_with("Sort Method: ")).unwrap_or_else(|| panic!("{text}"));
    assert!(method.contains("quicksort") || method.contains("external merge"), "{text}");

    // The scan's rows summed over its loops are the rows that passed the filter, and the
    // rows it removed are the rest of the table.
    let scan = node(&lines, if parallel { "Parallel Seq Scan on t" } else { "Seq Scan on t" });
    let (rows, loops) = actual(scan);
    assert!((rows * loops - expected).abs() <= loops, "{rows} x {loops} vs {expected}\n{text}");
    let removed: f64 = lines
        .iter()
        .find_map(|l| l.trim_start().strip_prefix("Rows Removed by Filter: "))
        .unwrap_or_else(|| panic!("{text}"))
        .parse()
        .unwrap();
    assert!((removed * loops - (ROWS as f64 - expected)).abs() <= loops, "{text}");

    if parallel {
        let launched = lines
            .iter()
            .find_map(|l| l.trim_start().strip_prefix("Workers Launched: "))
            .unwrap_or_else(|| panic!("{text}"))
            .parse::<usize>()
            .unwrap();
        assert!(text.contains("Workers Planned: "), "{text}");
        // Each launched worker sorted its share and says how.
        let worker_lines = lines.iter().filter(|l| l.trim_start().starts_with("Worker ") && l.contains("Sort Method: ")).count();
        assert_eq!(worker_lines, launched, "{text}");
        assert_eq!(loops as usize, launched + 1, "{text}");
    }
    check_summary(&lines);

    // A sort that does not fit work_mem says it went to disk.
    s.execute("SET work_mem = '64kB'").unwrap();
    let lines = explain(&mut s, "EXPLAIN ANALYZE SELECT k, pad FROM t ORDER BY pad");
    assert_eq!(actual(&lines[0]).0, ROWS as f64, "{}", lines.join("\n"));
    assert!(lines.iter().any(|l| l.contains("Sort Method: external merge  Disk: ")), "{}", lines.join("\n"));
}

#[test]
fn explain_analyze_order_by_serial() {
    order_by_reports_the_sort_and_the_real_row_count(&[], false);
}

#[test]
fn explain_analyze_order_by_parallel() {
    order_by_reports_the_sort_and_the_real_row_count(&forced_parallelism(), true);
}

#[test]
fn explain_analyze_limit_aggregate_and_subquery_rows() {
    for (startup, parallel) in [(vec![], false), (forced_parallelism(), true)] {
        let (_dir, _db, mut s) = setup(&startup);
        let lines = explain(&mut s, "EXPLAIN ANALYZE SELECT k FROM t ORDER BY k DESC LIMIT 7");
        let text = lines.join("\n");
        assert!(lines[0].starts_with("Limit  (cost="), "{text}");
        assert_eq!(actual(&lines[0]), (7.0, 1.0), "{text}");
        assert!(text.contains("Sort Method: top-N heapsort"), "{text}");

        let groups = count(&mut s, "SELECT count(*) FROM (SELECT i % 13 AS g FROM t GROUP BY 1) x");
        let lines = explain(&mut s, "EXPLAIN ANALYZE SELECT i % 13, count(*) FROM t GROUP BY 1");
        let text = lines.join("\n");
        let top = if parallel { "Finalize HashAggregate" } else { "HashAggregate" };
        assert!(lines[0].starts_with(top), "{text}");
        assert_eq!(actual(&lines[0]), (groups, 1.0), "{text}");
        if parallel {
            // The Gather collected every participant's partial groups: each group at least
            // once, at most once per participant (a participant may find no rows at all).
            let (rows, loops) = actual(node(&lines, "Partial HashAggregate"));
            let (gathered, _) = actual(node(&lines, "Gather"));
            assert!(gathered >= groups && gathered <= groups * loops, "{text}");
            assert!((rows * loops - gathered).abs() <= loops, "{text}");
        }

        let lines = explain(&mut s, "EXPLAIN (ANALYZE, TIMING OFF) SELECT count(*) FROM (SELECT k FROM t WHERE i <= 100 OFFSET 0) s WHERE k > 0");
        let text = lines.join("\n");
        let expected = count(&mut s, "SELECT count(*) FROM t WHERE i <= 100 AND k > 0");
        assert!(!text.contains("actual time="), "{text}");
        let (rows, loops) = actual(node(&lines, "Subquery Scan on s"));
        assert_eq!(rows * loops, expected, "{text}");
    }
}

/// A LIMIT right above a LATERAL nested loop stops the loop once it has the rows wanted
/// (offset + limit), as PostgreSQL stops pulling: the loop used to produce (and hold) all
/// of its rows first, which for a big LATERAL join meant gigabytes under a LIMIT 5.
#[test]
fn explain_analyze_limit_stops_a_lateral_nested_loop() {
    let (_dir, _db, mut s) = setup(&[]);
    let sql = "SELECT a.i, b.j FROM (SELECT i FROM t WHERE i <= 1000) a, \
               LATERAL (SELECT j FROM generate_series(a.i, a.i + 9) j) b LIMIT 15 OFFSET 2";
    let lines = explain(&mut s, &format!("EXPLAIN ANALYZE {sql}"));
    let text = lines.join("\n");
    assert_eq!(actual(&lines[0]), (15.0, 1.0), "{text}");
    assert_eq!(actual(node(&lines, "Nested Loop")), (17.0, 1.0), "{text}");
    let rows = s.execute(sql).unwrap().rows;
    assert_eq!(rows.len(), 15);
    for row in &rows {
        let (Datum::Int8(i), Datum::Int8(j)) = (&row[0], &row[1]) else { panic!("{row:?}") };
        assert!(*j >= *i && *j <= *i + 9, "{row:?}");
    }
    // A filter between the LIMIT and the loop: the loop runs to its end, the answer is right.
    let rows = s
        .execute("SELECT b.j FROM (SELECT i FROM t WHERE i <= 1000) a, LATERAL (SELECT j FROM generate_series(a.i, a.i + 9) j) b WHERE b.j % 7 = 0 LIMIT 4")
        .unwrap()
        .rows;
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| matches!(r[0], Datum::Int8(j) if j % 7 == 0)), "{rows:?}");
}

#[test]
fn estimates_come_from_the_catalog_and_costs_off_drops_them() {
    let (_dir, _db, mut s) = setup(&[]);
    let lines = explain(&mut s, "EXPLAIN SELECT * FROM t");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(field(&lines[0], "rows"), Some(ROWS as f64), "{lines:?}");
    // int4 + text (measured md5: 32 characters) + int8.
    let width = field(&lines[0], "width").unwrap();
    assert!((40.0..=50.0).contains(&width), "{lines:?}");

    // Estimates follow the table: twice the rows, about twice the cost.
    let cost = |line: &str| -> (f64, f64) {
        let at = line.find("(cost=").unwrap() + 6;
        let end = line[at..].find(' ').unwrap() + at;
        let (a, b) = line[at..end].split_once("..").unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    };
    let before = cost(&lines[0]).1;
    s.execute("INSERT INTO t SELECT * FROM t").unwrap();
    let after = explain(&mut s, "EXPLAIN SELECT * FROM t");
    assert_eq!(field(&after[0], "rows"), Some(2.0 * ROWS as f64), "{after:?}");
    let grown = cost(&after[0]).1 / before;
    assert!((1.8..2.2).contains(&grown), "{before} -> {after:?}");

    // A filter's selectivity and a parent's cost above its child's.
    let lines = explain(&mut s, "EXPLAIN SELECT pad FROM t WHERE k = 5 ORDER BY pad");
    assert!(lines[0].starts_with("Sort  (cost="), "{lines:?}");
    let scan = node(&lines, "Seq Scan on t");
    assert_eq!(field(scan, "rows"), Some((2.0 * ROWS as f64 * 0.005).round()), "{lines:?}");
    assert!(cost(&lines[0]).0 >= cost(scan).1, "{lines:?}");

    let lines = explain(&mut s, "EXPLAIN (COSTS OFF) SELECT pad FROM t WHERE k = 5 ORDER BY pad");
    assert_eq!(lines, vec!["Sort", "  Sort Key: pad", "  ->  Seq Scan on t", "        Filter: (k = 5)"]);
}
