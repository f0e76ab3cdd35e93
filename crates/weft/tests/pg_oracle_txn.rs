//! Transaction blocks compared with PostgreSQL 15, statement by statement: each script runs
//! in one psql session and in one weft session, and every statement must give the same
//! rows or command tag (BEGIN, COMMIT, ROLLBACK, INSERT 0 n, ...), the same error (message
//! and SQLSTATE: a unique violation inside a block, then 25P02 until ROLLBACK; COMMIT of a
//! failed block reporting ROLLBACK) and the same warnings (25001, 25P01). A fixed script
//! covers the rules one by one; random scripts mix blocks, savepoints, errors and DDL.

use super::oracle;

use oracle::{lines, Rng};
use weft::postgres::PgCluster;
use weft_sql::Session;

/// What psql printed for one statement: its stdout lines (rows or command tag) and its
/// stderr lines (errors and warnings, as `LEVEL:  SQLSTATE: message`).
struct PsqlStatement {
    stdout: Vec<String>,
    stderr: Vec<String>,
}

const MARKER: &str = "@@weft-oracle@@";

/// Run `script` in one psql session, errors not stopping it, with markers after each
/// statement on both streams so the output splits per statement.
fn psql_script(pg: &PgCluster, script: &[String]) -> Vec<PsqlStatement> {
    let mut command = pg.psql_command();
    command.args(["-v", "ON_ERROR_STOP=0", "-A", "-t", "-c", "\\set VERBOSITY verbose"]);
    for sql in script {
        command.args(["-c", sql, "-c", &format!("\\echo {MARKER}"), "-c", &format!("\\warn {MARKER}")]);
    }
    let output = command.output().expect("psql runs");
    let split = |bytes: &[u8]| -> Vec<Vec<String>> {
        let text = String::from_utf8_lossy(bytes);
        let mut segments = vec![Vec::new()];
        for line in text.lines() {
            if line == MARKER {
                segments.push(Vec::new());
            } else {
                segments.last_mut().unwrap().push(line.to_string());
            }
        }
        segments
    };
    let (stdout, stderr) = (split(&output.stdout), split(&output.stderr));
    assert!(stdout.len() > script.len() && stderr.len() > script.len(), "psql output: {}", String::from_utf8_lossy(&output.stderr));
    stdout.into_iter().zip(stderr).take(script.len()).map(|(stdout, stderr)| PsqlStatement { stdout, stderr }).collect()
}

/// `(SQLSTATE, message)` of psql's `LEVEL:  CODE: message` lines of one level.
fn messages(lines: &[String], level: &str) -> Vec<(String, String)> {
    let prefix = format!("{level}:  ");
    lines
        .iter()
        .filter_map(|line| line.strip_prefix(&prefix))
        .map(|rest| {
            let (code, message) = rest.split_once(": ").unwrap_or(("", rest));
            (code.to_string(), message.to_string())
        })
        .collect()
}

/// Run `script` in PostgreSQL and in `session`; panic at the first statement that differs.
/// Returns how many statements failed and how many warned (alike in both).
fn compare(pg: &PgCluster, session: &mut Session, script: &[String]) -> (usize, usize) {
    let expected = psql_script(pg, script);
    let (mut failed, mut warned) = (0, 0);
    for (i, (sql, postgres)) in script.iter().zip(&expected).enumerate() {
        let context = format!("statement {i}: {sql}\n  PostgreSQL: {:?} {:?}", postgres.stdout, postgres.stderr);
        let errors = messages(&postgres.stderr, "ERROR");
        let warnings: Vec<String> = messages(&postgres.stderr, "WARNING").into_iter().map(|(_, m)| format!("WARNING:  {m}")).collect();
        match session.execute(sql) {
            Ok(result) => {
                assert!(errors.is_empty(), "{context}\n  weft succeeded: {} {:?}", result.tag, lines(&result));
                let printed = if result.returns_rows { lines(&result) } else { vec![result.tag.clone()] };
                assert_eq!(printed, postgres.stdout, "{context}");
                let weft_warnings: Vec<String> = result.notices.iter().filter(|n| n.starts_with("WARNING:")).cloned().collect();
                assert_eq!(weft_warnings, warnings, "{context}");
                warned += !warnings.is_empty() as usize;
            }
            Err(e) => {
                let (code, message) = errors.first().unwrap_or_else(|| panic!("{context}\n  weft failed: {e:?}"));
                assert_eq!((e.sqlstate.0, e.message.as_str()), (code.as_str(), message.as_str()), "{context}");
                failed += 1;
            }
        }
    }
    (failed, warned)
}

const RULES: &[&str] = &[
    "CREATE TABLE acct (id int PRIMARY KEY, owner text NOT NULL, balance int)",
    "CREATE INDEX acct_owner ON acct (owner)",
    "INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 50)",
    // A committed block.
    "BEGIN",
    "INSERT INTO acct VALUES (3, 'cy', 10)",
    "UPDATE acct SET balance = balance - 30 WHERE id = 1",
    "UPDATE acct SET balance = balance + 30 WHERE id = 2",
    "SELECT * FROM acct ORDER BY id",
    "COMMIT",
    "SELECT * FROM acct ORDER BY id",
    // A rolled-back block: rows, deletes and index entries go.
    "BEGIN",
    "DELETE FROM acct WHERE id = 3",
    "INSERT INTO acct VALUES (4, 'dan', 1)",
    "SELECT id, owner FROM acct WHERE owner = 'dan'",
    "ROLLBACK",
    "SELECT * FROM acct ORDER BY id",
    "SELECT id FROM acct WHERE owner = 'dan'",
    // A unique violation fails the block; COMMIT rolls back.
    "BEGIN",
    "INSERT INTO acct VALUES (5, 'eve', 5)",
    "INSERT INTO acct VALUES (1, 'dup', 0)",
    "SELECT * FROM acct",
    "INSERT INTO acct VALUES (6, 'f', 6)",
    "SHOW work_mem",
    "SAVEPOINT s",
    "RELEASE s",
    "COMMIT",
    "SELECT * FROM acct ORDER BY id",
    // Warnings outside and inside blocks.
    "COMMIT",
    "ROLLBACK",
    "END",
    "ABORT",
    "BEGIN",
    "BEGIN",
    "START TRANSACTION",
    "END",
    // A statement does not see its own writes.
    "START TRANSACTION",
    "INSERT INTO acct SELECT id + 100, owner, balance FROM acct",
    "INSERT INTO acct SELECT id + 1000, owner, balance FROM acct",
    "UPDATE acct SET balance = balance * 2 WHERE id > 100",
    "SELECT count(*), sum(balance) FROM acct",
    "ABORT",
    "SELECT count(*), sum(balance) FROM acct",
    // Other errors fail the block too; ROLLBACK ends it.
    "BEGIN",
    "SELECT 1 / 0",
    "SELECT 1",
    "ROLLBACK",
    "BEGIN",
    "INSERT INTO acct VALUES (NULL, 'x', 1)",
    "ROLLBACK",
    "BEGIN",
    "SELECT * FROM nonexistent",
    "COMMIT",
    // Savepoints.
    "BEGIN",
    "INSERT INTO acct VALUES (7, 'g', 7)",
    "SAVEPOINT a",
    "INSERT INTO acct VALUES (8, 'h', 8)",
    "SAVEPOINT b",
    "DELETE FROM acct WHERE id = 7",
    "ROLLBACK TO SAVEPOINT b",
    "SELECT id FROM acct ORDER BY id",
    "INSERT INTO acct VALUES (8, 'x', 0)",
    "SELECT 1",
    "ROLLBACK TO a",
    "SELECT id FROM acct ORDER BY id",
    "SAVEPOINT a",
    "UPDATE acct SET owner = 'twice'",
    "ROLLBACK TO a",
    "SELECT count(*) FROM acct WHERE owner = 'twice'",
    "RELEASE a",
    "SELECT count(*) FROM acct WHERE owner = 'twice'",
    "RELEASE a",
    "ROLLBACK TO a",
    "COMMIT",
    "SELECT id FROM acct ORDER BY id",
    "SAVEPOINT x",
    "RELEASE x",
    "ROLLBACK TO x",
    // DDL inside blocks.
    "BEGIN",
    "CREATE TABLE tmp1 (a int)",
    "INSERT INTO tmp1 VALUES (1), (2)",
    "CREATE UNIQUE INDEX tmp1_a ON tmp1 (a)",
    "SELECT a FROM tmp1 WHERE a = 2",
    "INSERT INTO tmp1 VALUES (2)",
    "ROLLBACK",
    "SELECT * FROM tmp1",
    "BEGIN",
    "TRUNCATE acct",
    "DROP INDEX acct_owner",
    "SELECT count(*) FROM acct",
    "ROLLBACK",
    "SELECT count(*) FROM acct WHERE owner = 'ann'",
    "BEGIN",
    "DROP TABLE acct",
    "SELECT * FROM acct",
    "ROLLBACK",
    "SELECT count(*) FROM acct",
    "BEGIN",
    "CREATE TABLE items (id serial PRIMARY KEY, name text)",
    "INSERT INTO items (name) VALUES ('a'), ('b')",
    "CREATE INDEX items_name ON items (name)",
    "SAVEPOINT s",
    "DROP TABLE items",
    "ROLLBACK TO s",
    "COMMIT",
    "SELECT * FROM items WHERE name = 'b'",
    // Settings.
    "SET work_mem = '2MB'",
    "BEGIN",
    "SET work_mem = '3MB'",
    "SET LOCAL enable_seqscan = off",
    "SHOW enable_seqscan",
    "ROLLBACK",
    "SHOW work_mem",
    "SHOW enable_seqscan",
    "BEGIN",
    "SET work_mem = '3MB'",
    "SAVEPOINT s",
    "SET work_mem = '5MB'",
    "ROLLBACK TO s",
    "SHOW work_mem",
    "SET LOCAL enable_seqscan = off",
    "COMMIT",
    "SHOW work_mem",
    "SHOW enable_seqscan",
    "SET LOCAL work_mem = '1MB'",
    "SHOW work_mem",
];

#[test]
fn transaction_rules_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut session = db.session();
    let script: Vec<String> = RULES.iter().map(|s| s.to_string()).collect();
    let (failed, warned) = compare(&pg, &mut session, &script);
    assert_eq!((failed, warned), (19, 7), "errors and warnings compared");
}

/// A random statement inside or outside a block over `m`; some fail.
fn random_statement(rng: &mut Rng) -> String {
    let id = rng.below(60) as i64;
    let lo = rng.below(60) as i64;
    let hi = lo + rng.below(15) as i64;
    match rng.below(14) {
        0 | 1 => format!("INSERT INTO m VALUES ({id}, {}, 'v{}')", rng.below(20), rng.below(5)),
        2 => format!("INSERT INTO m SELECT id + 100, a, c FROM m WHERE id BETWEEN {lo} AND {hi}"),
        3 => format!("UPDATE m SET a = a + 1, c = c || 'u' WHERE id BETWEEN {lo} AND {hi}"),
        4 => format!("UPDATE m SET id = id + 1000 WHERE id BETWEEN {lo} AND {hi} AND id < 100"),
        5 => format!("DELETE FROM m WHERE id BETWEEN {lo} AND {hi}"),
        6 => format!("DELETE FROM m WHERE a = {}", rng.below(20)),
        7 => "SELECT id, a, c FROM m ORDER BY id".to_string(),
        8 => format!("SELECT count(*), sum(a) FROM m WHERE a < {}", rng.below(20)),
        9 => format!("SELECT id FROM m WHERE a = {} ORDER BY id", rng.below(20)),
        10 => format!("UPDATE m SET a = 10 / (a - {}) WHERE id = {id}", rng.below(20)),
        11 => format!("SAVEPOINT p{}", rng.below(2)),
        12 => format!("ROLLBACK TO SAVEPOINT p{}", rng.below(2)),
        _ => format!("RELEASE SAVEPOINT p{}", rng.below(2)),
    }
}

#[test]
fn random_blocks_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut session = db.session();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut script: Vec<String> = vec![
        "CREATE TABLE m (id int PRIMARY KEY, a int NOT NULL, c text)".into(),
        "CREATE INDEX m_a ON m (a)".into(),
        "INSERT INTO m SELECT i, i % 20, 'v' || (i % 5) FROM generate_series(0, 58, 2) i".into(),
    ];
    for _ in 0..60 {
        let in_block = rng.below(5) != 0;
        if in_block {
            script.push(["BEGIN", "START TRANSACTION", "BEGIN WORK"][rng.below(3) as usize].into());
        }
        for _ in 0..1 + rng.below(6) {
            script.push(random_statement(&mut rng));
        }
        if in_block {
            script.push(["COMMIT", "END", "ROLLBACK", "ABORT", "COMMIT", "ROLLBACK"][rng.below(6) as usize].into());
        }
        script.push("SELECT id, a, c FROM m ORDER BY id".into());
    }
    let (failed, _) = compare(&pg, &mut session, &script);
    assert!(failed > 20, "only {failed} errors compared");
    session.execute("SELECT weft_index_check('m_pkey', heapallindexed => true)").unwrap();
    session.execute("SELECT weft_index_check('m_a', heapallindexed => true)").unwrap();
}
