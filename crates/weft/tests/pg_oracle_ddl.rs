//! DDL on tables and indexes compared with PostgreSQL 15, statement by statement: each
//! statement either succeeds in both with the same rows or fails in both with the same
//! message, detail and hint. Covers CREATE / DROP INDEX CONCURRENTLY and REINDEX
//! CONCURRENTLY (and their refusal inside a transaction block), renames of tables,
//! columns, indexes and constraints (with the constraints, expression and partial indexes,
//! foreign keys and serial sequences that refer to them), and ALTER TABLE's column actions.

use super::oracle;

use oracle::compare_script;

/// CONCURRENTLY and renames.
const RENAMES: &[&str] = &[
    "CREATE TABLE ci (a int, b text)",
    "INSERT INTO ci SELECT g, 'v' || g FROM generate_series(1, 200) g",
    "CREATE INDEX CONCURRENTLY ci_a ON ci (a)",
    "CREATE UNIQUE INDEX CONCURRENTLY ci_b ON ci (b)",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS ci_a ON ci (a)",
    "CREATE INDEX CONCURRENTLY ci_bad ON nope (a)",
    "INSERT INTO ci VALUES (1, 'v1')",
    "SELECT count(*) FROM ci WHERE a = 7",
    "REINDEX INDEX CONCURRENTLY ci_a",
    "REINDEX TABLE CONCURRENTLY ci",
    "REINDEX TABLE CONCURRENTLY nope",
    "REINDEX INDEX CONCURRENTLY ci",
    "DROP INDEX CONCURRENTLY ci_a, ci_b",
    "DROP INDEX CONCURRENTLY ci_a CASCADE",
    "DROP INDEX CONCURRENTLY ci",
    "DROP INDEX CONCURRENTLY nope",
    "DROP INDEX CONCURRENTLY IF EXISTS nope",
    "DROP INDEX CONCURRENTLY ci_a",
    "DROP INDEX CONCURRENTLY IF EXISTS ci_b",
    "SELECT count(*) FROM ci WHERE a = 7",
    "CREATE TABLE rp (id serial PRIMARY KEY, code int UNIQUE, c text, n int CHECK (n > 0), CONSTRAINT n_small CHECK (n < 1000))",
    "CREATE UNIQUE INDEX rp_lower ON rp (lower(c)) WHERE n > 1",
    "CREATE INDEX rp_sum ON rp ((code + n))",
    "CREATE TABLE rc (x int REFERENCES rp (code), y int, CONSTRAINT rc_y CHECK (y <> 0))",
    "INSERT INTO rp (code, c, n) VALUES (10, 'A', 5), (20, 'b', 6), (30, 'c', 1)",
    "INSERT INTO rc VALUES (10, 1), (20, 2)",
    "ALTER TABLE rp RENAME TO ci",
    "ALTER TABLE nope RENAME TO x",
    "ALTER TABLE IF EXISTS nope RENAME TO x",
    "ALTER TABLE rp RENAME TO rq",
    "INSERT INTO rp VALUES (99, 99, 'z', 5)",
    "INSERT INTO rq (code, c, n) VALUES (40, 'D', 7)",
    "SELECT * FROM rq ORDER BY id",
    "INSERT INTO rq (code, c, n) VALUES (50, 'a', 7)",
    "INSERT INTO rq (code, c, n) VALUES (50, 'e', 0)",
    "INSERT INTO rc VALUES (41, 1)",
    "INSERT INTO rc VALUES (40, 1)",
    "DELETE FROM rq WHERE code = 40",
    "ALTER TABLE rq RENAME COLUMN zz TO q",
    "ALTER TABLE rq RENAME COLUMN code TO c",
    "ALTER TABLE rq RENAME COLUMN code TO k",
    "ALTER TABLE rq RENAME c TO \"Cc\"",
    "ALTER TABLE rq RENAME COLUMN n TO m",
    "SELECT id, k, \"Cc\", m FROM rq ORDER BY id",
    "SELECT code FROM rq",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (60, 'b', 8)",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (60, 'f', -1)",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (60, 'f', 1000)",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (10, 'g', 8)",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (61, 'B', 1)",
    "SELECT k + m FROM rq WHERE k + m = 16",
    "SELECT k FROM rq WHERE lower(\"Cc\") = 'b' AND m > 1",
    "UPDATE rq SET k = 11 WHERE k = 10",
    "ALTER TABLE rq RENAME CONSTRAINT nope TO x",
    "ALTER TABLE rq RENAME CONSTRAINT n_small TO rp_pkey",
    "ALTER TABLE rq RENAME CONSTRAINT rp_pkey TO ci",
    "ALTER TABLE rq RENAME CONSTRAINT n_small TO m_small",
    "ALTER TABLE rq RENAME CONSTRAINT rp_code_key TO rq_k_key",
    "ALTER TABLE rq RENAME CONSTRAINT rp_n_check TO m_positive",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (70, 'h', 2000)",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (70, 'h', -5)",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (10, 'h', 5)",
    "DELETE FROM rq WHERE k = 20",
    "ALTER INDEX nope RENAME TO x",
    "ALTER INDEX IF EXISTS nope RENAME TO x",
    "ALTER INDEX rp_lower RENAME TO rc",
    "ALTER INDEX rp_lower RENAME TO rq_lower",
    "ALTER TABLE rp_sum RENAME TO rq_sum",
    "ALTER INDEX rq_k_key RENAME TO rq_code",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (80, 'A', 2)",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (10, 'i', 5)",
    "INSERT INTO rc VALUES (12345, 1)",
    "ALTER TABLE rq RENAME CONSTRAINT rq_code TO rq_code2",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (10, 'i', 5)",
    "DROP INDEX rq_lower",
    "DROP INDEX rq_code2",
    "INSERT INTO rq (k, \"Cc\", m) VALUES (90, 'j', 5) RETURNING id, k",
    "ALTER TABLE rc RENAME TO rc2",
    "ALTER TABLE rc2 RENAME CONSTRAINT rc_y TO rc2_y",
    "INSERT INTO rc2 VALUES (10, 0)",
    "DROP TABLE rq CASCADE",
    "SELECT nextval('rp_id_seq')",
    "SELECT * FROM rc2 ORDER BY x",
];

/// ADD / DROP / ALTER COLUMN, alone and several in one statement.
const COLUMNS: &[&str] = &[
    "CREATE TABLE cp (id int PRIMARY KEY, a int, b text, c int, CHECK (c > a))",
    "CREATE TABLE cc (pid int REFERENCES cp)",
    "INSERT INTO cp VALUES (1, 1, 'x', 5), (2, NULL, 'yy', 3), (3, 4, 'zzz', 9)",
    "INSERT INTO cc VALUES (1), (3)",
    "ALTER TABLE cp DROP COLUMN id",
    "ALTER TABLE cp DROP COLUMN nope",
    "ALTER TABLE cp DROP COLUMN IF EXISTS nope",
    "ALTER TABLE nope ADD COLUMN x int",
    "ALTER TABLE IF EXISTS nope ADD COLUMN x int",
    "ALTER TABLE cp ADD COLUMN a int",
    "ALTER TABLE cp ADD COLUMN IF NOT EXISTS a int",
    "ALTER TABLE cp ADD COLUMN d int NOT NULL",
    "ALTER TABLE cp ADD COLUMN d int DEFAULT 7 NOT NULL, ADD COLUMN e serial",
    "SELECT * FROM cp ORDER BY id",
    "ALTER TABLE cp ADD COLUMN f text",
    "SELECT id, f FROM cp ORDER BY id",
    "ALTER TABLE cp ALTER COLUMN a SET NOT NULL",
    "ALTER TABLE cp ALTER COLUMN b TYPE int",
    "ALTER TABLE cp ALTER COLUMN b TYPE int USING length(b)",
    "SELECT id, b, b + 1 FROM cp ORDER BY id",
    "ALTER TABLE cp ALTER COLUMN b TYPE int USING b || 'z'",
    "ALTER TABLE cp ALTER COLUMN b SET DATA TYPE varchar(1)",
    "ALTER TABLE cp ALTER COLUMN b TYPE numeric(5,2)",
    "SELECT id, b FROM cp ORDER BY id",
    "ALTER TABLE cp ALTER COLUMN nope TYPE int",
    "ALTER TABLE cp ALTER COLUMN id DROP NOT NULL",
    "ALTER TABLE cp ALTER COLUMN d SET DEFAULT 'x'",
    "ALTER TABLE cp ALTER COLUMN d SET DEFAULT a",
    "ALTER TABLE cp ALTER COLUMN d SET DEFAULT 42",
    "ALTER TABLE cp ALTER d TYPE text",
    "INSERT INTO cp (id, a, c) VALUES (4, 1, 2)",
    "SELECT id, d, e FROM cp ORDER BY id",
    "ALTER TABLE cp ALTER COLUMN c SET DATA TYPE bigint",
    "INSERT INTO cp (id, a, c) VALUES (5, 10, 2)",
    "ALTER TABLE cp ALTER COLUMN c TYPE int USING c - 10",
    "ALTER TABLE cp ALTER COLUMN d DROP DEFAULT",
    "INSERT INTO cp (id, a, c) VALUES (5, 1, 2)",
    "ALTER TABLE cp ALTER COLUMN d DROP NOT NULL",
    "INSERT INTO cp (id, a, c) VALUES (5, 1, 2)",
    "ALTER TABLE cp ALTER COLUMN a SET NOT NULL",
    "UPDATE cp SET a = 0 WHERE a IS NULL",
    "ALTER TABLE cp ALTER COLUMN a SET NOT NULL",
    "INSERT INTO cp (id, c) VALUES (6, 2)",
    "ALTER TABLE cp DROP COLUMN a",
    "SELECT * FROM cp ORDER BY id",
    "INSERT INTO cp (id, c) VALUES (6, -100)",
    "ALTER TABLE cp DROP COLUMN id CASCADE",
    "INSERT INTO cc VALUES (999)",
    "SELECT * FROM cp ORDER BY e",
    "ALTER TABLE cp ADD COLUMN g int CHECK (g > 0) DEFAULT 0",
    "ALTER TABLE cp ADD COLUMN g int UNIQUE DEFAULT 1",
    "ALTER TABLE cp ADD COLUMN g int UNIQUE, ADD COLUMN h int DEFAULT 3 CHECK (h > 2)",
    "INSERT INTO cp (c, g) VALUES (1, 1), (1, 1)",
    "INSERT INTO cp (c, g, h) VALUES (1, 2, 2)",
    "ALTER TABLE cp ADD COLUMN k int PRIMARY KEY",
    "ALTER TABLE cp ADD COLUMN k serial PRIMARY KEY",
    "SELECT k, e, h FROM cp ORDER BY k",
    "INSERT INTO cp (c, g) VALUES (1, 3) RETURNING k, e",
    "ALTER TABLE cp ALTER COLUMN k DROP NOT NULL",
    "CREATE TABLE ix (a int, b text, c int)",
    "INSERT INTO ix SELECT g, 't' || g, g % 10 FROM generate_series(1, 500) g",
    "CREATE INDEX ix_b ON ix (lower(b)) WHERE c > 5",
    "CREATE INDEX ix_ac ON ix (a, c)",
    "CREATE UNIQUE INDEX ix_a ON ix (a)",
    "ALTER TABLE ix ALTER COLUMN a TYPE bigint, ALTER COLUMN c TYPE numeric",
    "SELECT a, b, c FROM ix WHERE a = 77",
    "SELECT count(*) FROM ix WHERE lower(b) = 't77' AND c > 5",
    "SELECT count(*) FROM ix WHERE c = 6",
    "ALTER TABLE ix ALTER COLUMN a TYPE int USING CASE WHEN a = 2 THEN 1 ELSE a END",
    "SELECT count(*) FROM ix WHERE a = 77",
    "ALTER TABLE ix DROP COLUMN c",
    "INSERT INTO ix VALUES (1000, 'T5')",
    "SELECT * FROM ix WHERE a >= 499 ORDER BY a",
    "ALTER TABLE ix DROP COLUMN a, ADD COLUMN z int DEFAULT 1",
    "SELECT count(*), sum(z) FROM ix",
    "ALTER TABLE ix ALTER COLUMN b TYPE int USING length(b), ALTER COLUMN b SET NOT NULL, ADD COLUMN w int DEFAULT 2 NOT NULL",
    "SELECT sum(b), sum(w) FROM ix",
    "ALTER TABLE ix ALTER COLUMN w TYPE text USING 'w' || w, ALTER COLUMN b SET DEFAULT 9",
    "INSERT INTO ix (z) VALUES (5)",
    "SELECT b, z, w FROM ix WHERE z = 5",
];

/// Statements PostgreSQL refuses inside a transaction block, with the block's statements
/// before them.
const NOT_IN_BLOCK: &[&str] = &[
    "CREATE INDEX CONCURRENTLY blk_a ON blk (a)",
    "DROP INDEX CONCURRENTLY blk_i",
    "DROP INDEX CONCURRENTLY IF EXISTS nope",
    "REINDEX INDEX CONCURRENTLY blk_i",
    "REINDEX TABLE CONCURRENTLY blk",
];

#[test]
fn renames_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut session = db.session();
    compare_script(&pg, &mut session, RENAMES, true);
}

#[test]
fn concurrently_is_refused_in_a_block() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut session = db.session();
    compare_script(&pg, &mut session, &["CREATE TABLE blk (a int)", "CREATE INDEX blk_i ON blk (a)"], true);
    for sql in NOT_IN_BLOCK {
        session.execute("BEGIN").unwrap();
        let weft = session.execute(sql).expect_err(sql);
        session.execute("ROLLBACK").unwrap();
        let postgres = pg.query(&format!("BEGIN; {sql}")).expect_err(sql);
        oracle::assert_same_error(sql, &weft, &postgres.message, true);
        assert_eq!(weft.sqlstate.0, "25001", "{sql}");
    }
    // Outside a block they run, and the index is usable.
    compare_script(
        &pg,
        &mut session,
        &["INSERT INTO blk SELECT generate_series(1, 100)", "REINDEX INDEX CONCURRENTLY blk_i", "SELECT count(*) FROM blk WHERE a = 5"],
        true,
    );
}

#[test]
fn column_actions_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut session = db.session();
    compare_script(&pg, &mut session, COLUMNS, true);
}
