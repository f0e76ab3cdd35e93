//! The catalogs and functions psql's describe commands read (`pg_catalog.rs`): one oid per
//! object in every view, and the functions of an oid over the statement's catalog. The
//! whole commands are compared with PostgreSQL 15 through psql in weft's
//! `describe_wire.rs`.

use weft_sql::{Database, Datum, Session};

fn texts(session: &mut Session, sql: &str) -> Vec<Vec<Option<String>>> {
    let result = session.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    result
        .rows
        .into_iter()
        .map(|row| row.into_iter().map(|d: Datum| d.to_pg_text()).collect())
        .collect()
}

fn row(values: &[&str]) -> Vec<Option<String>> {
    values.iter().map(|v| if *v == "NULL" { None } else { Some(v.to_string()) }).collect()
}

#[test]
fn describe_catalogs_agree_on_oids_and_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), &[]).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE p (id serial PRIMARY KEY, n numeric(10,2) DEFAULT 1.5, v varchar(20) UNIQUE, c int CHECK (c > 0))").unwrap();
    s.execute("CREATE TABLE k (pid int REFERENCES p (id) ON DELETE CASCADE, s smallint)").unwrap();
    s.execute("CREATE INDEX p_nv ON p (n DESC, abs(c)) WHERE c > 1").unwrap();

    let columns = "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, \
                   (SELECT pg_get_expr(d.adbin, d.adrelid, true) FROM pg_attrdef d WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum) \
                   FROM pg_attribute a WHERE a.attrelid = 'p'::regclass AND a.attnum > 0 ORDER BY a.attnum";
    assert_eq!(
        texts(&mut s, columns),
        vec![
            row(&["id", "integer", "t", "nextval('p_id_seq'::regclass)"]),
            row(&["n", "numeric(10,2)", "f", "1.5"]),
            row(&["v", "character varying(20)", "f", "NULL"]),
            row(&["c", "integer", "f", "NULL"]),
        ]
    );
    let index = "SELECT pg_get_indexdef(i.indexrelid, 0, true), pg_get_indexdef(i.indexrelid, 2, true), pg_get_expr(i.indpred, i.indrelid, true), \
                 c.relname, c.relkind FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'p_nv'";
    assert_eq!(
        texts(&mut s, index),
        vec![row(&["CREATE INDEX p_nv ON public.p USING btree (n DESC, abs(c)) WHERE c > 1", "abs(c)", "c > 1", "p_nv", "i"])]
    );
    let constraints = "SELECT conname, contype, conrelid::regclass, pg_get_constraintdef(oid, true) \
                       FROM pg_constraint ORDER BY conname";
    assert_eq!(
        texts(&mut s, constraints),
        vec![
            row(&["k_pid_fkey", "f", "k", "FOREIGN KEY (pid) REFERENCES p(id) ON DELETE CASCADE"]),
            row(&["p_c_check", "c", "p", "CHECK (c > 0)"]),
            row(&["p_pkey", "p", "p", "PRIMARY KEY (id)"]),
            row(&["p_v_key", "u", "p", "UNIQUE (v)"]),
        ]
    );
    // A serial sequence: the same oid in pg_class, pg_sequence and pg_depend.
    let sequence = "SELECT c.relkind, format_type(q.seqtypid, NULL), d.refobjid::regclass, d.refobjsubid, d.deptype \
                    FROM pg_class c JOIN pg_sequence q ON q.seqrelid = c.oid JOIN pg_depend d ON d.objid = c.oid \
                    WHERE c.oid = 'p_id_seq'::regclass";
    assert_eq!(texts(&mut s, sequence), vec![row(&["S", "integer", "p", "1", "a"])]);
    // weft has no partitions, triggers, policies or comments.
    let nothing = "SELECT count(*) FROM pg_partition_ancestors('p') UNION ALL SELECT count(*) FROM pg_trigger \
                   UNION ALL SELECT count(*) FROM pg_policy UNION ALL SELECT count(*) FROM pg_inherits";
    assert_eq!(texts(&mut s, nothing), vec![row(&["0"]), row(&["0"]), row(&["0"]), row(&["0"])]);
    assert_eq!(
        texts(&mut s, "SELECT obj_description('p'::regclass, 'pg_class'), 23::regtype, 2200::regnamespace, 'pg_catalog.pg_class'::regclass"),
        // A regclass select item prints the relation's name, as PostgreSQL's output does.
        vec![row(&["NULL", "integer", "public", "pg_class"])]
    );
    assert_eq!(s.execute("SELECT 'nosuch'::regclass").unwrap_err().sqlstate.0, "42P01");
}
