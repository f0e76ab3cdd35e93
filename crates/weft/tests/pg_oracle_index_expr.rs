//! Expression and partial indexes compared with PostgreSQL 15, statement by statement:
//! builds, unique violations at build and at insert (messages and details), queries that
//! the indexes serve, UPDATEs moving rows into and out of a partial index, upserts with
//! expression and partial unique indexes as arbiters, and the errors of bad definitions.

use super::oracle;

use oracle::compare_script;

const SCRIPT: &[&str] = &[
    "CREATE TABLE u (id int PRIMARY KEY, name text, email text, a int, b int, v int)",
    "INSERT INTO u SELECT g, 'Name' || g, 'User' || g || '@Example.com', g % 10, g % 7, CASE WHEN g % 3 = 0 THEN NULL ELSE g END FROM generate_series(1, 300) g",
    "CREATE INDEX ON u (lower(name))",
    "CREATE INDEX ON u ((a + b))",
    "CREATE INDEX ON u ((name || email))",
    "CREATE INDEX ON u (a, lower(email))",
    "CREATE UNIQUE INDEX ON u (lower(email))",
    "CREATE INDEX u_part ON u (a) WHERE v IS NOT NULL",
    "CREATE UNIQUE INDEX u_upart ON u (b) WHERE v > 295",
    "SELECT id, name FROM u WHERE lower(name) = 'name42'",
    "SELECT id FROM u WHERE lower(name) > 'name295' ORDER BY id",
    "SELECT lower(name) FROM u ORDER BY lower(name) LIMIT 5",
    "SELECT id, a + b FROM u WHERE a + b = 15 ORDER BY id",
    "SELECT count(*) FROM u WHERE a + b BETWEEN 3 AND 5",
    "SELECT id FROM u WHERE a = 3 AND lower(email) = 'user13@example.com'",
    "SELECT count(*) FROM u WHERE a = 4 AND v IS NOT NULL",
    "SELECT count(*) FROM u WHERE a = 4 AND v > 100",
    "SELECT id FROM u WHERE b = 2 AND v > 295",
    "INSERT INTO u VALUES (1001, 'X', 'USER42@example.COM', 1, 1, 1)",
    "INSERT INTO u VALUES (1002, 'X', NULL, 1, 1, 1), (1003, 'Y', NULL, 1, 1, 1)",
    "INSERT INTO u VALUES (1004, 'Z', 'z@z', 0, 5, 500)",
    "INSERT INTO u VALUES (1005, 'Z', 'z2@z', 0, 5, 5), (1006, 'Z', 'z3@z', 0, 5, NULL)",
    "UPDATE u SET v = 400 WHERE id = 1005",
    "UPDATE u SET v = 1 WHERE id = 1004",
    "UPDATE u SET v = 400 WHERE id = 1005",
    "UPDATE u SET email = 'user7@EXAMPLE.com' WHERE id = 8",
    "UPDATE u SET email = upper(email) WHERE id < 10",
    "SELECT id, email FROM u WHERE lower(email) = 'user7@example.com'",
    "UPDATE u SET v = NULL WHERE id BETWEEN 10 AND 20",
    "SELECT count(*) FROM u WHERE v IS NOT NULL AND a = 1",
    "UPDATE u SET v = id WHERE id BETWEEN 10 AND 20",
    "SELECT count(*) FROM u WHERE v IS NOT NULL AND a = 1",
    "INSERT INTO u VALUES (1010, 'w', 'USER50@example.com', 0, 0, 0) ON CONFLICT DO NOTHING",
    "INSERT INTO u VALUES (1011, 'w', 'user51@example.com', 0, 6, 999) ON CONFLICT DO NOTHING",
    "INSERT INTO u VALUES (1012, 'w', 'new@x', 0, 6, 999) ON CONFLICT DO NOTHING",
    "INSERT INTO u VALUES (1013, 'w', 'new2@x', 0, 6, 999) ON CONFLICT (b) DO NOTHING",
    "INSERT INTO u VALUES (50, 'w', 'zz@x', 0, 6, 1) ON CONFLICT (id) DO UPDATE SET email = 'user60@example.com'",
    "INSERT INTO u VALUES (50, 'w', 'zz@x', 0, 6, 1) ON CONFLICT (id) DO UPDATE SET email = 'fresh@example.com', v = 999",
    "INSERT INTO u VALUES (51, 'w', 'zz@x', 0, 1, 1) ON CONFLICT (id) DO UPDATE SET v = 999",
    "SELECT id, email, b, v FROM u WHERE v > 295 ORDER BY id",
    "CREATE UNIQUE INDEX u_bad ON u ((a % 3))",
    "CREATE UNIQUE INDEX u_bad ON u (a) WHERE id IN (290, 300, 31)",
    "CREATE UNIQUE INDEX u_ok ON u (a) WHERE id < 10",
    "INSERT INTO u VALUES (5000, 'q', 'q@q', 1, 1, 1)",
    "INSERT INTO u VALUES (5, 'q', 'q@q', 1, 1, 1)",
    "CREATE INDEX ON u (random())",
    "CREATE INDEX ON u ((a + random()::int))",
    "CREATE INDEX ON u (name) WHERE v",
    "CREATE INDEX ON u (name) WHERE (SELECT true)",
    "CREATE INDEX ON u ((count(*)))",
    "CREATE INDEX ON u (name) WHERE count(*) > 1",
    "CREATE INDEX ON u (nosuch(name))",
    "CREATE INDEX ON u ((nosuch + 1))",
    "CREATE INDEX ON u (name) WHERE nosuch > 1",
    "SELECT count(*) FROM u WHERE lower(name) LIKE 'name1%'",
    "DELETE FROM u WHERE lower(name) = 'name100'",
    "SELECT count(*) FROM u WHERE a + b > 10",
    // INCLUDE columns: payload for index-only scans, outside uniqueness.
    "CREATE TABLE w (k int, t text, f float8, n numeric)",
    "INSERT INTO w SELECT g, 'text' || g, g / 4.0, g * 1.5 FROM generate_series(1, 500) g",
    "CREATE INDEX ON w (k) INCLUDE (t, f)",
    "CREATE UNIQUE INDEX w_uk ON w (k) INCLUDE (n)",
    "SELECT k, t, f FROM w WHERE k BETWEEN 10 AND 14 ORDER BY k",
    "SELECT t FROM w WHERE k = 77",
    "SELECT k, f FROM w ORDER BY k DESC LIMIT 3",
    "INSERT INTO w VALUES (5, 'dup', 0, 0)",
    "INSERT INTO w VALUES (5, 'dup', 0, 0) ON CONFLICT (k) DO UPDATE SET t = 'updated', n = 9.5",
    "SELECT k, t, f, n FROM w WHERE k = 5",
    "UPDATE w SET t = 'changed' WHERE k < 3",
    "SELECT k, t FROM w WHERE k <= 4 ORDER BY k",
    "CREATE INDEX ON w (k) INCLUDE (nosuch)",
];

#[test]
fn expression_and_partial_indexes_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start() else { return };
    let mut session = db.session();
    compare_script(&pg, &mut session, SCRIPT, true);
    // Every index still agrees with the heap.
    for index in ["u_lower_idx", "u_expr_idx", "u_expr_idx1", "u_a_lower_idx", "u_lower_idx1", "u_part", "u_upart", "u_ok", "w_k_t_f_idx", "w_uk"] {
        session
            .execute(&format!("SELECT weft_index_check('{index}', heapallindexed => true)"))
            .unwrap_or_else(|e| panic!("{index}: {e:?}"));
    }
}
