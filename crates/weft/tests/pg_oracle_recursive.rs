//! `WITH RECURSIVE` compared with PostgreSQL 15: counting, tree walks over a parent/child
//! table (depth, paths), graph reachability with UNION (cycles end because rows seen
//! before are dropped) and with UNION ALL bounded by depth, Fibonacci in bigint, several
//! CTEs of which some are recursive, the recursive CTE joined to other tables, read in a
//! subquery and twice, a LIMIT ending an endless recursion; and PostgreSQL's errors for
//! ill-formed recursion.

use super::oracle;

use oracle::{error_mismatches, mismatches_in_modes};

const SETUP: &[&str] = &[
    "CREATE TABLE tree (id int, parent int, name text)",
    "INSERT INTO tree SELECT i, CASE WHEN i = 1 THEN NULL ELSE i / 3 + (i % 2) END, 'n' || i FROM generate_series(1, 200) i",
    "INSERT INTO tree VALUES (500, NULL, 'root2'), (501, 500, NULL), (502, 501, 'leaf')",
    "CREATE TABLE edges (src int, dst int)",
    "INSERT INTO edges SELECT i, (i * 7) % 40 FROM generate_series(0, 39) i",
    "INSERT INTO edges SELECT i, (i + 1) % 40 FROM generate_series(0, 39, 3) i",
    "INSERT INTO edges VALUES (100, 101), (101, 102), (102, 100), (103, NULL)",
    "CREATE TABLE info (node int, tag text)",
    "INSERT INTO info SELECT i, 'tag' || (i % 4) FROM generate_series(0, 120) i",
];

const QUERIES: &[&str] = &[
    // Counting.
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (VALUES (1) UNION ALL SELECT n + 1 FROM r WHERE n < 100) SELECT sum(n), count(*), max(n) FROM r",
    "WITH RECURSIVE r(n, sq) AS (SELECT 1, 1 UNION ALL SELECT n + 1, (n + 1) * (n + 1) FROM r WHERE n < 10) SELECT * FROM r ORDER BY n DESC",
    "WITH RECURSIVE r AS (SELECT 1 AS n UNION SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n % 5 + 1 FROM r) SELECT * FROM r ORDER BY n",
    "WITH RECURSIVE r(n) AS (SELECT 0::bigint UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r",
    // Fibonacci in bigint.
    "WITH RECURSIVE fib(i, a, b) AS (SELECT 1, 0::bigint, 1::bigint UNION ALL SELECT i + 1, b, a + b FROM fib WHERE i < 90) SELECT i, a FROM fib ORDER BY i",
    // Tree walks.
    "WITH RECURSIVE sub(id, depth) AS (SELECT id, 0 FROM tree WHERE id = 2 UNION ALL SELECT t.id, s.depth + 1 FROM tree t JOIN sub s ON t.parent = s.id) SELECT * FROM sub ORDER BY id",
    "WITH RECURSIVE up(id, parent, name) AS (SELECT id, parent, name FROM tree WHERE id = 187 UNION ALL SELECT t.id, t.parent, t.name FROM up JOIN tree t ON t.id = up.parent) SELECT * FROM up",
    "WITH RECURSIVE p(id, path) AS (SELECT id, name FROM tree WHERE parent IS NULL UNION ALL SELECT t.id, p.path || '/' || coalesce(t.name, '?') FROM p, tree t WHERE t.parent = p.id AND t.id < 40) SELECT * FROM p ORDER BY id",
    "WITH RECURSIVE d(id, depth) AS (SELECT id, 0 FROM tree WHERE parent IS NULL UNION ALL SELECT t.id, d.depth + 1 FROM d JOIN tree t ON t.parent = d.id) SELECT depth, count(*) FROM d GROUP BY depth ORDER BY depth",
    // Graph reachability: UNION drops rows seen before, so cycles end.
    "WITH RECURSIVE reach(node) AS (SELECT 1 UNION SELECT e.dst FROM reach r JOIN edges e ON e.src = r.node) SELECT * FROM reach ORDER BY node",
    "WITH RECURSIVE reach(node) AS (SELECT 100 UNION SELECT e.dst FROM reach JOIN edges e ON e.src = reach.node) SELECT count(*) FROM reach",
    "WITH RECURSIVE reach(node) AS (SELECT 103 UNION SELECT e.dst FROM reach JOIN edges e ON e.src = reach.node) SELECT * FROM reach ORDER BY node NULLS FIRST",
    "WITH RECURSIVE walk(node, steps) AS (SELECT 0, 0 UNION ALL SELECT e.dst, w.steps + 1 FROM walk w JOIN edges e ON e.src = w.node WHERE w.steps < 6) SELECT steps, count(*), count(DISTINCT node) FROM walk GROUP BY steps ORDER BY steps",
    "WITH RECURSIVE reach(node) AS (SELECT 2 UNION SELECT e.dst FROM edges e, reach r WHERE e.src = r.node) SELECT r.node, i.tag FROM reach r LEFT JOIN info i ON i.node = r.node ORDER BY 1",
    // Several CTEs, some recursive.
    "WITH RECURSIVE base AS (SELECT id FROM tree WHERE id IN (3, 4)), sub(id) AS (SELECT id FROM base UNION ALL SELECT t.id FROM tree t JOIN sub ON t.parent = sub.id), counted AS (SELECT count(*) AS c FROM sub) SELECT * FROM counted",
    "WITH RECURSIVE a(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM a WHERE n < 4), b(m) AS (SELECT n * 10 FROM a UNION ALL SELECT m + 1 FROM b WHERE m % 10 < 2) SELECT * FROM b ORDER BY m",
    "WITH RECURSIVE x(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM x WHERE n < 3), y(n) AS (SELECT 10 UNION ALL SELECT n + 10 FROM y WHERE n < 30) SELECT * FROM x, y ORDER BY 1, 2",
    // The CTE joined to other tables, in a subquery, and read twice.
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 20) SELECT r.n, i.tag FROM r JOIN info i ON i.node = r.n * 5 ORDER BY 1",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 2 FROM r WHERE n < 30) SELECT count(*) FROM info WHERE node IN (SELECT n FROM r)",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 4) SELECT a.n, b.n FROM r a, r b WHERE a.n < b.n ORDER BY 1, 2",
    "SELECT * FROM (WITH RECURSIVE r(n) AS (SELECT 5 UNION ALL SELECT n - 1 FROM r WHERE n > 0) SELECT n FROM r) s WHERE n % 2 = 1 ORDER BY n",
    "SELECT i.node, (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT sum(n) FROM r) FROM info i WHERE i.node < 3 ORDER BY 1",
    // A LIMIT ends an endless recursion.
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT * FROM r LIMIT 10",
    // A CTE of WITH RECURSIVE that does not name itself is an ordinary one.
    "WITH RECURSIVE plain AS (SELECT id FROM tree WHERE id < 4) SELECT * FROM plain ORDER BY id",
];

const ERRORS_WITH_SQLSTATE: &[&str] = &[
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1::bigint FROM r WHERE n < 5) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT n FROM r UNION ALL SELECT 1) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT (SELECT n + 1 FROM r)) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n FROM tree WHERE id IN (SELECT n FROM r)) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT count(*) FROM r) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT r.n FROM tree LEFT JOIN r ON true) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT r.n FROM r FULL JOIN tree ON true) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT r.n + 1 FROM r, r r2) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 INTERSECT SELECT n + 1 FROM r) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r ORDER BY 1) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r LIMIT 3) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n, n FROM r) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT 'x'::text FROM r) SELECT * FROM r",
];

#[test]
fn recursive_queries_match_postgresql() {
    let Some((pg, _dir, db)) = oracle::start_with_setup(SETUP) else { return };
    let mut session = db.session();
    let mut mismatches = error_mismatches(&pg, &mut session, &[], ERRORS_WITH_SQLSTATE);
    mismatches.extend(mismatches_in_modes(&pg, &mut session, QUERIES));
    assert!(mismatches.is_empty(), "{} mismatches:\n{}", mismatches.len(), mismatches.join("\n\n"));
}
