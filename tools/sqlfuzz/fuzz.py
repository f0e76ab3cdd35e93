#!/usr/bin/env python3
"""Differential SQL fuzzer: weft vs PostgreSQL 15.

Creates the same random tables in both systems, generates random queries from a seed,
runs each on both under varied settings and reports differences (results, errors,
crashes/hangs).  See README.md next to this file.
"""
import argparse
import atexit
import collections
import decimal
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import psycopg

PGBIN = "/usr/lib/postgresql/15/bin"
STMT_TIMEOUT = 12.0

# ----------------------------------------------------------------------------------------
# servers


class Servers:
    def __init__(self, weft_bin, pg_port, weft_port, keep, reuse_pg):
        self.weft_src = weft_bin
        self.pg_port = pg_port
        self.weft_port = weft_port
        self.keep = keep
        self.reuse_pg = reuse_pg
        self.tmp = tempfile.mkdtemp(prefix="sqlfuzz-")
        os.chmod(self.tmp, 0o755)
        self.weft_bin = os.path.join(self.tmp, "weft")
        shutil.copy2(weft_bin, self.weft_bin)
        self.weft_data = os.path.join(self.tmp, "weftdata")
        self.pg_dir = os.path.join(self.tmp, "pg")
        self.weft_proc = None
        self.pg_started = False

    def _as_pg(self, cmd):
        if os.geteuid() == 0:
            return ["su", "postgres", "-c", cmd]
        return ["sh", "-c", cmd]

    def start_pg(self):
        if self.reuse_pg:
            try:
                psycopg.connect(self.pg_dsn(), autocommit=True).close()
                return
            except Exception:
                pass
        os.makedirs(self.pg_dir)
        if os.geteuid() == 0:
            shutil.chown(self.pg_dir, "postgres")
        d = os.path.join(self.pg_dir, "data")
        subprocess.run(self._as_pg(f"{PGBIN}/initdb -D {d} -U postgres --no-sync -E UTF8 --locale=C -A trust >/dev/null 2>&1"), check=True)
        opts = f"-p {self.pg_port} -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c max_worker_processes=8 -c max_parallel_workers=8"
        subprocess.run(self._as_pg(f"{PGBIN}/pg_ctl -D {d} -l {self.pg_dir}/log -o '{opts}' -w start >/dev/null"), check=True)
        self.pg_started = True

    def stop_pg(self):
        if self.pg_started:
            d = os.path.join(self.pg_dir, "data")
            subprocess.run(self._as_pg(f"{PGBIN}/pg_ctl -D {d} -m immediate -w stop >/dev/null 2>&1"))
            self.pg_started = False

    def start_weft(self):
        self.weft_log = open(os.path.join(self.tmp, "weft.log"), "ab")
        self.weft_proc = subprocess.Popen(
            [self.weft_bin, "serve", "-D", self.weft_data, "--port", str(self.weft_port)],
            stdout=self.weft_log, stderr=subprocess.STDOUT, start_new_session=True)
        for _ in range(200):
            try:
                psycopg.connect(self.weft_dsn(), autocommit=True, connect_timeout=2).close()
                return
            except Exception:
                if self.weft_proc.poll() is not None:
                    raise RuntimeError("weft serve exited at start-up")
                time.sleep(0.05)
        raise RuntimeError("weft serve did not come up")

    def stop_weft(self):
        p = self.weft_proc
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except Exception:
                p.kill()
            p.wait()
        self.weft_proc = None

    def weft_alive(self):
        return self.weft_proc is not None and self.weft_proc.poll() is None

    def restart_weft(self):
        self.stop_weft()
        self.start_weft()

    def pg_dsn(self):
        return f"host=127.0.0.1 port={self.pg_port} user=postgres dbname=postgres"

    def weft_dsn(self):
        return f"host=127.0.0.1 port={self.weft_port} user=postgres dbname=postgres"

    def cleanup(self):
        self.stop_weft()
        self.stop_pg()
        if not self.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            print(f"kept data in {self.tmp}", file=sys.stderr)


class Conn:
    """A connection that runs one statement with a client-side timeout and returns
    ('rows', colnames, typeoids, rows-as-text) | ('ok', tag) | ('err', sqlstate, msg) |
    ('hang',) | ('dead', msg)."""

    def __init__(self, dsn, name):
        self.dsn = dsn
        self.name = name
        self.c = None
        self.connect()

    def connect(self):
        if self.c is not None:
            try:
                self.c.close()
            except Exception:
                pass
        self.c = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)

    def _run(self, sql, box):
        try:
            cur = self.c.cursor()
            cur.execute(sql, prepare=False)
            res = cur.pgresult
            if cur.description is None:
                box.append(("ok", cur.statusmessage))
                return
            nf = res.nfields
            names = [res.fname(i).decode() for i in range(nf)]
            types = [res.ftype(i) for i in range(nf)]
            rows = []
            for r in range(res.ntuples):
                rows.append(tuple(None if res.get_value(r, i) is None else res.get_value(r, i).decode() for i in range(nf)))
            box.append(("rows", names, types, rows))
        except psycopg.OperationalError as e:
            if self.c.closed or self.c.broken:
                box.append(("dead", str(e).strip()))
            else:
                box.append(("err", getattr(e, "sqlstate", None), str(e).strip().splitlines()[0] if str(e).strip() else ""))
        except psycopg.Error as e:
            box.append(("err", e.sqlstate, str(e).strip().splitlines()[0] if str(e).strip() else ""))
        except Exception as e:  # decoding etc.
            box.append(("err", "PYERR", repr(e)))

    def run(self, sql, timeout=STMT_TIMEOUT):
        box = []
        t = threading.Thread(target=self._run, args=(sql, box), daemon=True)
        t.start()
        t.join(timeout)
        if t.is_alive():
            try:
                self.c.cancel()
            except Exception:
                pass
            t.join(5)
            if t.is_alive() or not box:
                return ("hang", "cancel did not stop it")
            return ("hang", "canceled: " + str(box[0][1:3]))
        return box[0]


# ----------------------------------------------------------------------------------------
# data


TYPES = {
    "i": "int4", "l": "int8", "f": "float8", "n": "numeric", "s": "text", "b": "bool",
    "d": "date", "t": "timestamp",
}
NUMERIC_KINDS = ("i", "l", "f", "n")
COMPAT = {"i": "iln", "l": "iln", "n": "iln", "f": "fi", "s": "s", "b": "b", "d": "dt", "t": "dt"}


def compatible(rng, a, b):
    """Same kind, or (sometimes) a cross-type comparison PostgreSQL allows."""
    return a == b or (b in COMPAT[a] and rng.random() < 0.3)

TEXT_POOL = ["a", "b", "ab", "abc", "B", "A", "", " a", "a ", "zz", "x_y", "x%y", "Ab", "ba",
             "hello", "hello world", "\u00e9t\u00e9", "10", "9", "-1", "a,b", "q'q"]


def lit(kind, v):
    if v is None:
        return "NULL"
    if kind in ("i", "l"):
        return str(v)
    if kind == "f":
        return f"'{v}'::float8"
    if kind == "n":
        return f"'{v}'::numeric" if v in ("NaN",) else str(v)
    if kind == "s":
        return "'" + v.replace("'", "''") + "'"
    if kind == "b":
        return "true" if v else "false"
    if kind == "d":
        return f"'{v}'::date"
    if kind == "t":
        return f"'{v}'::timestamp"
    raise ValueError(kind)


class Column:
    def __init__(self, name, kind, null_frac, domain):
        self.name = name
        self.kind = kind
        self.null_frac = null_frac
        self.domain = domain  # int range size

    @property
    def typ(self):
        return TYPES[self.kind]


def gen_value(rng, col):
    if rng.random() < col.null_frac:
        return None
    k = col.kind
    dom = col.domain
    if k == "i":
        r = rng.random()
        if r < 0.01:
            return rng.choice([2147483647, -2147483648])
        return rng.randint(-dom // 4, dom)
    if k == "l":
        r = rng.random()
        if r < 0.02:
            return rng.choice([9223372036854775807, -9223372036854775808, 10**12])
        return rng.randint(-dom // 4, dom) * rng.choice([1, 1, 1, 1000003])
    if k == "f":
        r = rng.random()
        if r < 0.02:
            return rng.choice(["NaN", "Infinity", "-Infinity", "-0", "1e300", "1e-300"])
        if r < 0.5:
            return str(rng.randint(-dom // 4, dom) / 4)
        return repr(round(rng.uniform(-dom, dom), rng.randint(0, 6)))
    if k == "n":
        r = rng.random()
        if r < 0.01:
            return "NaN"
        scale = rng.choice([0, 0, 1, 2, 2, 5])
        v = decimal.Decimal(rng.randint(-dom * 10, dom * 100)).scaleb(-scale)
        return str(v)
    if k == "s":
        if rng.random() < 0.7:
            return rng.choice(TEXT_POOL[: max(3, min(len(TEXT_POOL), dom // 2))])
        return "".join(rng.choice("abcAB xy") for _ in range(rng.randint(0, 6)))
    if k == "b":
        return rng.random() < 0.5
    if k == "d":
        base = 738000  # ordinal
        import datetime
        return (datetime.date.fromordinal(base) + datetime.timedelta(days=rng.randint(-dom, dom))).isoformat()
    if k == "t":
        import datetime
        base = datetime.datetime(2021, 3, 14, 12, 0, 0)
        return (base + datetime.timedelta(seconds=rng.randint(-dom, dom) * rng.choice([1, 60, 3600, 86400]))).isoformat(sep=" ")
    raise ValueError(k)


class Table:
    def __init__(self, name, cols, has_id):
        self.name = name
        self.cols = cols  # list[Column]; if has_id the first is id int4 unique not null
        self.has_id = has_id
        self.rows = []
        self.indexes = []  # sql strings
        self.gen_sql = None  # big tables: INSERT ... SELECT FROM generate_series (rows not kept)
        self.n = 0

    def create_sql(self):
        cs = ", ".join(f"{c.name} {c.typ}" + (" NOT NULL" if (self.has_id and c.name == "id") else "") for c in self.cols)
        return f"CREATE TABLE {self.name} ({cs})"

    def insert_sqls(self, rows=None, batch=400):
        if rows is None and self.gen_sql:
            return [self.gen_sql]
        rows = self.rows if rows is None else rows
        out = []
        for i in range(0, len(rows), batch):
            vals = ", ".join("(" + ", ".join(lit(c.kind, v) for c, v in zip(self.cols, r)) + ")" for r in rows[i:i + batch])
            out.append(f"INSERT INTO {self.name} VALUES {vals}")
        return out

    def col(self, name):
        for c in self.cols:
            if c.name == name:
                return c
        return None


COLNAME_POOL = [("i1", "i"), ("i2", "i"), ("l1", "l"), ("f1", "f"), ("n1", "n"), ("s1", "s"), ("s2", "s"),
                ("b1", "b"), ("d1", "d"), ("ts1", "t"), ("i3", "i"), ("n2", "n")]


def gen_table(rng, name):
    has_id = rng.random() < 0.6
    cols = []
    if has_id:
        cols.append(Column("id", "i", 0.0, 0))
    k = rng.randint(2, 7)
    picked = rng.sample(COLNAME_POOL, k)
    if not any(p[0] == "i1" for p in picked):
        picked[0] = ("i1", "i")
    seen = set()
    for nm, kind in picked:
        if nm in seen:
            continue
        seen.add(nm)
        cols.append(Column(nm, kind, rng.choice([0.0, 0.0, 0.05, 0.2, 0.5]), rng.choice([3, 10, 30, 100, 1000, 100000])))
    t = Table(name, cols, has_id)
    n = rng.choice([0, 1, 2, 5, 10, 30, 100, 300, 1000, 2000, 4000])
    if rng.random() < 0.12:
        n = rng.choice([10000, 30000, 60000])
        exprs = []
        for c in cols:
            m = rng.choice([3, 7, 97, 997, 50000])
            nul = rng.choice([0, 0, 5, 11, 29])
            if c.name == "id":
                e = "i"
            elif c.kind == "i":
                e = f"(i * 7919) % {m}"
            elif c.kind == "l":
                e = f"((i::int8 * 104729) % {m}) * 1000003"
            elif c.kind == "f":
                e = f"(((i * 31) % {m}) / 8.0)::float8"
            elif c.kind == "n":
                e = f"((i * 37) % {m})::numeric / {rng.choice([1, 4, 100])}"
            elif c.kind == "s":
                e = rng.choice([f"'k' || ((i * 13) % {m})::text", f"substr(md5((i % {m})::text), 1, {rng.randint(1, 8)})"])
            elif c.kind == "b":
                e = f"(i % 3 = 0)"
            elif c.kind == "d":
                e = f"'2020-01-01'::date + (i * 7) % {m}"
            else:
                e = f"'2020-01-01'::timestamp + ((i * 7) % {m}) * interval '1 minute'"
            if nul and c.name != "id":
                e = f"CASE WHEN i % {nul} = 0 THEN NULL ELSE {e} END"
            exprs.append(e)
        t.gen_sql = f"INSERT INTO {name} SELECT {', '.join(exprs)} FROM generate_series(1, {n}) i"
        n = 0
        t.n = int(t.gen_sql.rsplit(", ", 1)[1].split(")")[0])
    t.n = t.n or n
    ids = rng.sample(range(1, n * 3 + 10), n) if has_id else None
    for r in range(n):
        row = []
        for c in cols:
            if c.name == "id":
                row.append(ids[r])
            else:
                row.append(gen_value(rng, c))
        t.rows.append(tuple(row))
    # indexes
    for j in range(rng.choice([0, 1, 1, 2, 3])):
        ncols = rng.choice([1, 1, 2, 2, 3])
        icols = rng.sample(t.cols, min(ncols, len(t.cols)))
        parts = []
        for c in icols:
            p = c.name
            if rng.random() < 0.3:
                p += " DESC"
            if rng.random() < 0.25:
                p += rng.choice([" NULLS FIRST", " NULLS LAST"])
            parts.append(p)
        uniq = ""
        if has_id and icols[0].name == "id":
            uniq = "UNIQUE "
        t.indexes.append(f"CREATE {uniq}INDEX {name}_ix{j} ON {name} ({', '.join(parts)})")
    if has_id and rng.random() < 0.5 and not any(ix.startswith("CREATE UNIQUE") for ix in t.indexes):
        t.indexes.append(f"CREATE UNIQUE INDEX {name}_uid ON {name} (id{rng.choice(['', ' DESC'])})")
    return t


# ----------------------------------------------------------------------------------------
# query generation


class Scope:
    """Columns visible in a FROM clause: list of (qualifier, column-name, kind, unique)."""

    def __init__(self, items):
        self.items = items

    def of_kind(self, kinds):
        return [it for it in self.items if it[2] in kinds]


def qcol(it):
    return f"{it[0]}.{it[1]}" if it[0] else it[1]


class Gen:
    def __init__(self, rng, tables):
        self.rng = rng
        self.tables = tables
        self.alias_n = 0

    def alias(self):
        self.alias_n += 1
        return f"x{self.alias_n}"

    def pick_table(self):
        return self.rng.choice(self.tables)

    # --- literals -----------------------------------------------------------------------
    def literal(self, kind):
        r = self.rng
        if kind == "i":
            return str(r.randint(-5, 40))
        if kind == "l":
            return str(r.randint(-5, 40))
        if kind == "f":
            return r.choice(["0.5", "1.25", "-2.5", "3", "10.0", "100.75"]) + "::float8"
        if kind == "n":
            return r.choice(["0", "1.5", "-2.25", "10", "3.00", "42.125", "100"])
        if kind == "s":
            return lit("s", r.choice(TEXT_POOL))
        if kind == "b":
            return r.choice(["true", "false"])
        if kind == "d":
            return lit("d", gen_value(r, Column("x", "d", 0, 30)))
        if kind == "t":
            return lit("t", gen_value(r, Column("x", "t", 0, 30)))

    # --- expressions --------------------------------------------------------------------
    def expr(self, scope, kind, depth=0):
        """Returns an SQL expression of the given kind."""
        r = self.rng
        cands = scope.of_kind([kind])
        if depth > 2 or r.random() < 0.55:
            if cands and r.random() < 0.85:
                return qcol(r.choice(cands))
            return self.literal(kind)
        sub = lambda k=kind: self.expr(scope, k, depth + 1)
        if kind == "i":
            return r.choice([
                lambda: f"({sub()} + {sub()})",
                lambda: f"({sub()} - {r.randint(1, 5)})",
                lambda: f"({sub()} * {r.randint(-3, 3)})",
                lambda: f"abs({sub()})",
                lambda: f"mod({sub()}, {r.choice([2, 3, 7, -4])})",
                lambda: f"({sub()} / {r.choice([2, 3, -5])})",
                lambda: f"length({self.expr(scope, 's', depth + 1)})",
                lambda: f"coalesce({sub()}, {self.literal('i')})",
                lambda: f"nullif({sub()}, {self.literal('i')})",
                lambda: f"CASE WHEN {self.pred(scope, depth + 1)} THEN {sub()} ELSE {sub()} END",
                lambda: f"greatest({sub()}, {sub()})",
                lambda: f"least({sub()}, {sub()})",
                lambda: f"{self.expr(scope, 'n', depth + 1)}::int4",
                lambda: f"extract(day from {self.expr(scope, 'd', depth + 1)})::int4",
                lambda: f"strpos({self.expr(scope, 's', depth + 1)}, 'a')",
                lambda: f"sign({sub()})::int4",
            ])()
        if kind == "l":
            return r.choice([
                lambda: f"({sub()} + {sub()})",
                lambda: f"({self.expr(scope, 'i', depth + 1)}::int8 * 1000)",
                lambda: f"coalesce({sub()}, 0)",
                lambda: f"abs({sub()})",
                lambda: f"({sub()} % 7)",
            ])()
        if kind == "f":
            return r.choice([
                lambda: f"({sub()} * 1.5)",
                lambda: f"({sub()} + {self.expr(scope, 'i', depth + 1)})",
                lambda: f"{self.expr(scope, 'i', depth + 1)}::float8",
                lambda: f"{self.expr(scope, 'n', depth + 1)}::float8",
                lambda: f"abs({sub()})",
                lambda: f"floor({sub()})",
                lambda: f"round({sub()})",
                lambda: f"coalesce({sub()}, -1)",
            ])()
        if kind == "n":
            return r.choice([
                lambda: f"({sub()} + {sub()})",
                lambda: f"({sub()} * {self.literal('n')})",
                lambda: f"round({sub()}, {r.randint(0, 3)})",
                lambda: f"trunc({sub()}, {r.randint(0, 2)})",
                lambda: f"{self.expr(scope, 'i', depth + 1)}::numeric",
                lambda: f"abs({sub()})",
                lambda: f"ceil({sub()})",
                lambda: f"coalesce({sub()}, 0.5)",
                lambda: f"({sub()} / {r.choice(['3', '7', '0.5', '-2'])})",
                lambda: f"{sub()}::numeric(12,2)",
            ])()
        if kind == "s":
            return r.choice([
                lambda: f"lower({sub()})",
                lambda: f"upper({sub()})",
                lambda: f"({sub()} || {sub()})",
                lambda: f"substr({sub()}, {r.randint(1, 3)}, {r.randint(0, 3)})",
                lambda: f"coalesce({sub()}, 'null')",
                lambda: f"{self.expr(scope, r.choice(['i', 'n', 'b', 'd']), depth + 1)}::text",
                lambda: f"trim({sub()})",
                lambda: f"lpad({sub()}, {r.randint(0, 6)}, '*')",
                lambda: f"replace({sub()}, 'a', 'A')",
                lambda: f"left({sub()}, {r.randint(-2, 3)})",
                lambda: f"reverse({sub()})",
                lambda: f"split_part({sub()}, ' ', 1)",
                lambda: f"CASE WHEN {self.pred(scope, depth + 1)} THEN {sub()} END",
            ])()
        if kind == "b":
            return f"({self.pred(scope, depth + 1)})"
        if kind == "d":
            return r.choice([
                lambda: f"({sub()} + {r.randint(-40, 40)})",
                lambda: f"date_trunc('month', {sub()})::date",
                lambda: f"coalesce({sub()}, '2020-02-29'::date)",
                lambda: f"{self.expr(scope, 't', depth + 1)}::date",
            ])()
        if kind == "t":
            return r.choice([
                lambda: f"({sub()} + interval '{r.randint(-5, 5)} days {r.randint(0, 23)} hours')",
                lambda: f"date_trunc('{r.choice(['hour', 'day', 'month', 'year'])}', {sub()})",
                lambda: f"{self.expr(scope, 'd', depth + 1)}::timestamp",
                lambda: f"coalesce({sub()}, '2000-01-01 00:00:00'::timestamp)",
            ])()
        raise ValueError(kind)

    def any_kind(self, scope):
        kinds = list({it[2] for it in scope.items})
        return self.rng.choice(kinds) if kinds else "i"

    def pred(self, scope, depth=0, allow_sub=True):
        r = self.rng
        if depth > 2:
            return self.simple_pred(scope, depth)
        x = r.random()
        if x < 0.45:
            return self.simple_pred(scope, depth)
        if x < 0.60:
            return f"({self.pred(scope, depth + 1, allow_sub)} AND {self.pred(scope, depth + 1, allow_sub)})"
        if x < 0.72:
            return f"({self.pred(scope, depth + 1, allow_sub)} OR {self.pred(scope, depth + 1, allow_sub)})"
        if x < 0.78:
            return f"NOT ({self.pred(scope, depth + 1, allow_sub)})"
        if x < 0.92 and allow_sub:
            return self.subquery_pred(scope, depth)
        return self.simple_pred(scope, depth)

    def simple_pred(self, scope, depth=0):
        r = self.rng
        k = self.any_kind(scope)
        cands = scope.of_kind([k])
        e = qcol(r.choice(cands)) if cands and r.random() < 0.8 else self.expr(scope, k, depth + 1)
        x = r.random()
        if k == "b" and x < 0.3:
            return r.choice([e, f"NOT {e}", f"{e} IS TRUE", f"{e} IS NOT FALSE", f"{e} IS UNKNOWN"])
        if x < 0.40:
            op = r.choice(["=", "=", "<", "<=", ">", ">=", "<>"])
            rhs = self.literal(k) if r.random() < 0.6 else self.expr(scope, k, depth + 1)
            return f"{e} {op} {rhs}"
        if x < 0.52:
            lo, hi = sorted([self.literal(k), self.literal(k)]) if k in ("s",) else (self.literal(k), self.literal(k))
            return f"{e} {r.choice(['BETWEEN', 'NOT BETWEEN', 'BETWEEN SYMMETRIC'])} {lo} AND {hi}"
        if x < 0.65:
            items = [self.literal(k) for _ in range(r.randint(1, 5))]
            if r.random() < 0.2:
                items.append("NULL")
            return f"{e} {r.choice(['IN', 'IN', 'NOT IN'])} ({', '.join(items)})"
        if x < 0.78:
            return f"{e} IS {r.choice(['', 'NOT '])}NULL"
        if x < 0.85 and k == "s":
            pat = r.choice(['a%', '%b', '_', '%', 'A_', '%a%', 'x\\_y'])
            return f"{e} {r.choice(['LIKE', 'NOT LIKE', 'ILIKE'])} '{pat}'"
        if x < 0.92:
            return f"{e} IS {r.choice(['', 'NOT '])}DISTINCT FROM {self.literal(k)}"
        return f"{e} = {self.literal(k)}"

    def subquery_pred(self, scope, depth):
        r = self.rng
        t = self.pick_table()
        a = self.alias()
        inner = Scope([(a, c.name, c.kind, c.name == "id") for c in t.cols])
        both = Scope(scope.items + inner.items)
        corr = r.random() < 0.6
        conds = []
        if corr:
            # correlate on a shared kind
            pairs = [(o, i) for o in scope.items for i in inner.items if compatible(r, o[2], i[2])]
            if pairs:
                o, i = r.choice(pairs)
                conds.append(f"{qcol(i)} {r.choice(['=', '=', '=', '<', '<>'])} {qcol(o)}")
        if r.random() < 0.5:
            conds.append(self.pred(inner, depth + 2, allow_sub=False))
        where = (" WHERE " + " AND ".join(conds)) if conds else ""
        x = r.random()
        if x < 0.45:
            return f"{r.choice(['', 'NOT '])}EXISTS (SELECT 1 FROM {t.name} {a}{where})"
        # IN / NOT IN: pick a kind shared by both
        kinds = list({it[2] for it in scope.items} & {c.kind for c in t.cols})
        if not kinds:
            return f"EXISTS (SELECT 1 FROM {t.name} {a}{where})"
        k = r.choice(kinds)
        icol = qcol(r.choice(inner.of_kind([k])))
        ocands = scope.of_kind([k])
        oexp = qcol(r.choice(ocands))
        if x < 0.75:
            return f"{oexp} {r.choice(['IN', 'NOT IN'])} (SELECT {icol} FROM {t.name} {a}{where})"
        if x < 0.85:
            # row IN: two keys
            k2s = list({it[2] for it in scope.items} & {c.kind for c in t.cols})
            k2 = r.choice(k2s)
            icol2 = qcol(r.choice(inner.of_kind([k2])))
            oexp2 = qcol(r.choice(scope.of_kind([k2])))
            return f"({oexp}, {oexp2}) {r.choice(['IN', 'NOT IN'])} (SELECT {icol}, {icol2} FROM {t.name} {a}{where})"
        op = r.choice(["=", "<", ">=", "<>"])
        q = r.choice(["ANY", "ALL"])
        return f"{oexp} {op} {q} (SELECT {icol} FROM {t.name} {a}{where})"

    # --- FROM clauses -------------------------------------------------------------------
    def from_clause(self, max_tables=4):
        """Returns (sql, scope, unique_quals) where scope lists visible columns."""
        r = self.rng
        n = r.choice([1, 1, 1, 2, 2, 2, 3, 3, 4][: 9 if max_tables >= 4 else 6])
        n = min(n, max_tables)
        t = self.pick_table()
        a = self.alias()
        sql = f"{t.name} {a}"
        items = [(a, c.name, c.kind, c.name == "id") for c in t.cols]
        comma = r.random() < 0.15
        for j in range(1, n):
            t2 = self.pick_table()
            a2 = self.alias()
            items2 = [(a2, c.name, c.kind, c.name == "id") for c in t2.cols]
            if comma:
                sql += f", {t2.name} {a2}"
                items = items + items2
                continue
            jt = r.choice(["JOIN", "JOIN", "LEFT JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "CROSS JOIN", "USING", "NATURAL", "LATERAL"])
            if jt == "CROSS JOIN":
                if t2.n * max(1, t.n) > 200000:
                    jt = "JOIN"
                else:
                    sql += f" CROSS JOIN {t2.name} {a2}"
                    items = items + items2
                    continue
            if jt in ("USING", "NATURAL"):
                # join on shared column names: only where both sides are plain tables (j==1)
                shared = [c.name for c in t2.cols if any(it[1] == c.name and it[2] == c.kind for it in items)]
                if j == 1 and shared:
                    kind = r.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
                    if jt == "NATURAL":
                        names1 = {c.name for c in t.cols}
                        common = [c.name for c in t2.cols if c.name in names1]
                        ok = all(t.col(nm).kind == t2.col(nm).kind for nm in common)
                        if ok and common:
                            sql += f" NATURAL {kind} {t2.name} {a2}"
                            # merged columns: unqualified
                            items = [it for it in items if it[1] not in common] + \
                                    [it for it in items2 if it[1] not in common] + \
                                    [(None, nm, t.col(nm).kind, False) for nm in common]
                            continue
                    us = r.sample(shared, r.randint(1, min(2, len(shared))))
                    sql += f" {kind} {t2.name} {a2} USING ({', '.join(us)})"
                    items = [it for it in items if it[1] not in us] + \
                            [it for it in items2 if it[1] not in us] + \
                            [(None, nm, t2.col(nm).kind, False) for nm in us]
                    continue
                jt = "JOIN"
            if jt == "LATERAL":
                inner_scope = Scope(items2)
                cond = self.join_cond(Scope(items), Scope(items2))
                lim = f" ORDER BY {', '.join(qcol(it) for it in items2)} LIMIT {r.randint(1, 3)}" if r.random() < 0.5 else ""
                sub_a = self.alias()
                cols = r.sample(items2, min(len(items2), r.randint(1, 3)))
                sel = ", ".join(f"{qcol(c)} AS {c[1]}" for c in cols)
                ljt = r.choice(["CROSS JOIN LATERAL", "LEFT JOIN LATERAL"])
                on = " ON true" if ljt.startswith("LEFT") else ""
                sql += f" {ljt} (SELECT {sel} FROM {t2.name} {a2} WHERE {cond}{lim}) {sub_a}{on}"
                items = items + [(sub_a, c[1], c[2], False) for c in cols]
                continue
            cond = self.join_cond(Scope(items), Scope(items2))
            sql += f" {jt} {t2.name} {a2} ON {cond}"
            items = items + items2
        return sql, Scope(items), comma

    def join_cond(self, left, right):
        r = self.rng
        pairs = [(o, i) for o in left.items for i in right.items if compatible(r, o[2], i[2])]
        conds = []
        if pairs and r.random() < 0.95:
            for _ in range(r.choice([1, 1, 1, 2])):
                o, i = r.choice(pairs)
                conds.append(f"{qcol(o)} = {qcol(i)}")
        if r.random() < 0.35 or not conds:
            both = Scope(left.items + right.items)
            extra = self.simple_pred(both) if r.random() < 0.5 else None
            if extra is None:
                if pairs:
                    o, i = r.choice(pairs)
                    extra = f"{qcol(o)} {r.choice(['<', '<=', '<>', '>'])} {qcol(i)}"
                else:
                    extra = self.simple_pred(right)
            conds.append(extra)
        return " AND ".join(conds)

    # --- queries ------------------------------------------------------------------------
    def select_list(self, scope, n):
        r = self.rng
        out = []
        for i in range(n):
            if r.random() < 0.08 and scope.items:
                out.append((self.scalar_subquery(scope), "n", False))
            elif r.random() < 0.6 and scope.items:
                it = r.choice(scope.items)
                out.append((qcol(it), it[2], it[3]))
            else:
                k = self.any_kind(scope) if r.random() < 0.7 else r.choice(list(TYPES))
                out.append((self.expr(scope, k), k, False))
        return out

    def scalar_subquery(self, scope):
        r = self.rng
        t = self.pick_table()
        a = self.alias()
        inner = Scope([(a, c.name, c.kind, c.name == "id") for c in t.cols])
        pairs = [(o, i) for o in scope.items for i in inner.items if compatible(r, o[2], i[2])]
        conds = []
        if pairs and r.random() < 0.8:
            o, i = r.choice(pairs)
            conds.append(f"{qcol(i)} {r.choice(['=', '=', '<', '>='])} {qcol(o)}")
        if r.random() < 0.4:
            conds.append(self.simple_pred(inner))
        w = (" WHERE " + " AND ".join(conds)) if conds else ""
        it = r.choice(inner.items)
        agg = r.choice(["count(*)", f"count({qcol(it)})", f"max({qcol(it)})", f"min({qcol(it)})"])
        if it[2] in NUMERIC_KINDS and r.random() < 0.3:
            agg = f"sum({qcol(it)})"
        if r.random() < 0.15:
            # a non-aggregate scalar subquery with a unique answer: ORDER BY all columns LIMIT 1
            return f"(SELECT {qcol(it)} FROM {t.name} {a}{w} ORDER BY {', '.join(qcol(x) for x in inner.items)} LIMIT 1)"
        return f"(SELECT {agg} FROM {t.name} {a}{w})"

    def order_items(self, outs, total):
        """ORDER BY over output columns by position or alias; if total, every output column."""
        r = self.rng
        idx = list(range(len(outs)))
        if total:
            r.shuffle(idx)
        else:
            idx = r.sample(idx, r.randint(1, len(idx)))
        parts = []
        for i in idx:
            use_expr = r.random() < 0.3 and "." in outs[i][0] and not outs[i][0].startswith("(SELECT")
            ref = r.choice([str(i + 1), f"c{i}", outs[i][0] if use_expr else f"c{i}"])
            d = r.choice(["", " ASC", " DESC"])
            nf = r.choice(["", "", " NULLS FIRST", " NULLS LAST"])
            parts.append(ref + d + nf)
        return parts, idx

    def q_simple(self):
        """SELECT ... FROM ... WHERE ... [ORDER BY ...] [LIMIT/OFFSET]"""
        r = self.rng
        frm, scope, comma = self.from_clause()
        outs = self.select_list(scope, r.randint(1, 5))
        where = ""
        if comma or r.random() < 0.75:
            conds = []
            if comma:
                # join conditions for comma joins
                quals = sorted({it[0] for it in scope.items if it[0]})
                for a1, a2 in zip(quals, quals[1:]):
                    l = Scope([it for it in scope.items if it[0] == a1])
                    rr = Scope([it for it in scope.items if it[0] == a2])
                    conds.append(self.join_cond(l, rr))
            if r.random() < 0.85:
                conds.append(self.pred(scope))
            if conds:
                where = " WHERE " + " AND ".join(conds)
        distinct = r.random() < 0.12
        sel = ", ".join(f"{e} AS c{i}" for i, (e, k, u) in enumerate(outs))
        sql = f"SELECT {'DISTINCT ' if distinct else ''}{sel} FROM {frm}{where}"
        return self.finish_order(sql, outs, distinct, scope=None if distinct else scope)

    def finish_order(self, sql, outs, distinct=False, allow_expr_order=True, scope=None):
        r = self.rng
        mode = ("none", None)
        x = r.random()
        if x < 0.55:
            total = r.random() < 0.6
            parts, idx = self.order_items(outs, total)
            if total and scope is not None and r.random() < 0.35:
                # expressions over the input first, then every output column: still total on the output
                k = self.any_kind(scope)
                parts = [self.expr(scope, k) + r.choice(["", " DESC", " NULLS FIRST", " DESC NULLS LAST"])] + parts
            if distinct:
                parts = [p if not p.startswith(tuple("(")) else p for p in parts]
            sql += " ORDER BY " + ", ".join(parts)
            if total:
                mode = ("total", None)
            else:
                mode = ("keys", idx)
            lim = r.random()
            if lim < 0.35:
                sql += f" LIMIT {r.choice([0, 1, 2, 3, 5, 10, 50, 100])}"
                if r.random() < 0.3:
                    sql += f" OFFSET {r.choice([0, 1, 2, 7, 40])}"
            elif lim < 0.45:
                sql += f" OFFSET {r.choice([1, 2, 7, 40])}"
            elif lim < 0.6:
                sql += f" FETCH FIRST {r.choice([1, 2, 3, 10])} ROWS {r.choice(['ONLY', 'WITH TIES'])}"
                if "WITH TIES" in sql and mode[0] == "keys":
                    mode = ("keys_ties", idx)
        elif x < 0.62 and allow_expr_order and not distinct:
            # order by an expression not in the output: compare as a multiset
            sql += f" ORDER BY {r.randint(1, len(outs))} DESC"
            mode = ("keys", [0]) if False else ("none", None)
        return sql, mode

    def q_group(self):
        r = self.rng
        frm, scope, comma = self.from_clause(max_tables=3)
        where = ""
        if comma:
            quals = sorted({it[0] for it in scope.items if it[0]})
            conds = []
            for a1, a2 in zip(quals, quals[1:]):
                conds.append(self.join_cond(Scope([it for it in scope.items if it[0] == a1]), Scope([it for it in scope.items if it[0] == a2])))
            where = " WHERE " + " AND ".join(conds)
        elif r.random() < 0.5:
            where = " WHERE " + self.pred(scope)
        ng = r.choice([0, 1, 1, 2, 2, 3])
        keys = []
        for _ in range(ng):
            if r.random() < 0.75:
                it = r.choice(scope.items)
                keys.append((qcol(it), it[2]))
            else:
                k = self.any_kind(scope)
                e = self.expr(scope, k)
                if not any(qcol(it) in e for it in scope.items):
                    it = r.choice(scope.items)
                    e, k = qcol(it), it[2]
                keys.append((e, k))
        aggs = [self.agg(scope) for _ in range(r.randint(1, 4))]
        outs = [(e, k, False) for e, k in keys] + aggs
        sel = ", ".join(f"{e} AS c{i}" for i, (e, k, u) in enumerate(outs))
        sql = f"SELECT {sel} FROM {frm}{where}"
        if keys:
            gb = ", ".join(e for e, k in keys) if r.random() < 0.7 else ", ".join(str(i + 1) for i in range(len(keys)))
            if r.random() < 0.08 and len(keys) >= 1:
                gb = r.choice(["ROLLUP", "CUBE"]) + f" ({', '.join(e for e, k in keys)})"
            sql += f" GROUP BY {gb}"
        if r.random() < 0.3:
            a = self.agg(scope, numeric_only=True)
            sql += f" HAVING {a[0]} {r.choice(['>', '<', '>=', '<>'])} {r.randint(0, 5)}"
        return self.finish_order(sql, outs)

    def agg(self, scope, numeric_only=False):
        r = self.rng
        nums = scope.of_kind(NUMERIC_KINDS)
        if numeric_only or r.random() < 0.2:
            if r.random() < 0.5 or not nums:
                return ("count(*)", "l", False)
            c = qcol(r.choice(nums))
            return (f"{r.choice(['sum', 'count', 'max', 'min'])}({c})", "n", False)
        choices = []
        if nums:
            c = r.choice(nums)
            fx = r.random() < 0.2
            filt = f" FILTER (WHERE {self.simple_pred(scope)})" if fx else ""
            choices += [
                (f"sum({qcol(c)}){filt}", "n", False),
                (f"avg({qcol(c)}){filt}", "n", False),
                (f"min({qcol(c)})", c[2], False),
                (f"max({qcol(c)})", c[2], False),
                (f"count(DISTINCT {qcol(c)})", "l", False),
                (f"sum(DISTINCT {qcol(c)})", "n", False),
                (f"stddev({qcol(c)})", "n", False),
                (f"var_pop({qcol(c)})", "n", False),
            ]
        it = r.choice(scope.items)
        choices += [
            ("count(*)", "l", False),
            (f"count({qcol(it)})", "l", False),
            (f"min({qcol(it)})", it[2], False) if it[2] != "b" else (f"bool_and({qcol(it)})", "b", False),
            (f"max({qcol(it)})", it[2], False) if it[2] != "b" else (f"bool_or({qcol(it)})", "b", False),
            (f"string_agg({qcol(it)}::text, ',' ORDER BY {qcol(it)}::text{r.choice(['', ' DESC'])})", "s", False),
            (f"count(DISTINCT {qcol(it)})", "l", False),
        ]
        bools = scope.of_kind(["b"])
        if bools:
            b = qcol(r.choice(bools))
            choices.append((f"{r.choice(['bool_and', 'bool_or', 'every'])}({b})", "b", False))
        texts = scope.of_kind(["s"])
        if texts:
            t = qcol(r.choice(texts))
            choices.append((f"string_agg(DISTINCT {t}, '|')", "s", False) if False else (f"string_agg({t}, '|' ORDER BY {t} NULLS FIRST)", "s", False))
            choices.append((f"max({t})", "s", False))
        return r.choice(choices)

    def q_window(self):
        r = self.rng
        t = self.pick_table()
        a = self.alias()
        scope = Scope([(a, c.name, c.kind, c.name == "id") for c in t.cols])
        where = f" WHERE {self.pred(scope)}" if r.random() < 0.4 else ""
        # deterministic windows: order by all columns of the table (rows identical => same results)
        allcols = [qcol(it) for it in scope.items]
        pcol = qcol(r.choice(scope.items))
        part = f"PARTITION BY {pcol} " if r.random() < 0.6 else ""
        ordk = list(allcols)
        r.shuffle(ordk)
        ordk = [o + r.choice(["", " DESC", " NULLS FIRST", " DESC NULLS LAST"]) for o in ordk]
        nums = scope.of_kind(["i", "l", "n"])
        fns = ["row_number()", "rank()", "dense_rank()", "count(*)", "ntile(3)", "percent_rank()", "cume_dist()"]
        if nums:
            c = qcol(r.choice(nums))
            fns += [f"sum({c})", f"min({c})", f"max({c})", f"lag({c})", f"lead({c}, 2)", f"first_value({c})", f"last_value({c})", f"avg({c})"]
        frames = ["", "", " ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING", " ROWS UNBOUNDED PRECEDING", " RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING", " ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING"]
        # rank-ish with partial order (peers give deterministic results)
        outs = [(qcol(it), it[2], False) for it in scope.items]
        wins = []
        for i in range(r.randint(1, 3)):
            f = r.choice(fns)
            if r.random() < 0.3 and f in ("rank()", "dense_rank()", "count(*)", "percent_rank()", "cume_dist()"):
                ok = ", ".join(r.sample(ordk, 1))
                fr = ""
            else:
                ok = ", ".join(ordk)
                fr = r.choice(frames) if not f.startswith(("rank", "dense", "row_number", "ntile", "lag", "lead", "percent", "cume")) else ""
            wins.append((f"{f} OVER ({part}ORDER BY {ok}{fr})", "n", False))
        outs += wins
        sel = ", ".join(f"{e} AS c{i}" for i, (e, k, u) in enumerate(outs))
        sql = f"SELECT {sel} FROM {t.name} {a}{where}"
        return self.finish_order(sql, outs, allow_expr_order=False)

    def q_setop(self):
        r = self.rng
        n = r.randint(1, 3)
        kinds = [r.choice(list(TYPES)) for _ in range(n)]

        def side():
            t = self.pick_table()
            a = self.alias()
            scope = Scope([(a, c.name, c.kind, c.name == "id") for c in t.cols])
            es = [self.expr(scope, k) for k in kinds]
            w = f" WHERE {self.pred(scope)}" if r.random() < 0.6 else ""
            return f"SELECT {', '.join(es)} FROM {t.name} {a}{w}"
        op = r.choice(["UNION", "UNION ALL", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"])
        s1, s2 = side(), side()
        sql = f"SELECT * FROM (({s1}) {op} ({s2})) u(" + ", ".join(f"c{i}" for i in range(n)) + ")"
        outs = [(f"c{i}", k, False) for i, k in enumerate(kinds)]
        return self.finish_order(sql, outs, allow_expr_order=False)

    def q_distinct_on(self):
        r = self.rng
        t = self.pick_table()
        a = self.alias()
        scope = Scope([(a, c.name, c.kind, c.name == "id") for c in t.cols])
        k = r.choice(scope.items)
        rest = [it for it in scope.items if it is not k or r.random() < 0.1]
        r.shuffle(rest)
        ords = [qcol(k) + r.choice(["", " DESC", " NULLS FIRST"])] + [qcol(it) + r.choice(["", " DESC"]) for it in rest]
        outs = [(qcol(it), it[2], False) for it in scope.items]
        sel = ", ".join(f"{e} AS c{i}" for i, (e, kk, u) in enumerate(outs))
        where = f" WHERE {self.pred(scope)}" if r.random() < 0.4 else ""
        lim = f" LIMIT {r.randint(0, 20)}" if r.random() < 0.3 else ""
        return (f"SELECT DISTINCT ON ({qcol(k)}) {sel} FROM {t.name} {a}{where} ORDER BY {', '.join(ords)}{lim}", ("total", None))

    def q_index(self):
        """Predicates on the leading index column(s), with ORDER BY ... LIMIT."""
        r = self.rng
        tabs = [t for t in self.tables if t.indexes]
        if not tabs:
            return self.q_simple()
        t = r.choice(tabs)
        ix = r.choice(t.indexes)
        icols = [p.strip().split()[0] for p in ix[ix.index("(") + 1: ix.rindex(")")].split(",")]
        a = self.alias()
        scope = Scope([(a, c.name, c.kind, c.name == "id") for c in t.cols])
        conds = []
        for j, cn in enumerate(icols):
            if j > 0 and r.random() < 0.4:
                break
            c = t.col(cn)
            e = f"{a}.{cn}"
            x = r.random()
            vals = [v for v in (rw[t.cols.index(c)] for rw in t.rows[:200]) if v is not None]
            def L():
                if vals and r.random() < 0.7:
                    return lit(c.kind, r.choice(vals))
                return self.literal(c.kind)
            if x < 0.3:
                conds.append(f"{e} = {L()}")
            elif x < 0.5:
                conds.append(f"{e} {r.choice(['<', '<=', '>', '>='])} {L()}")
            elif x < 0.62:
                conds.append(f"{e} BETWEEN {L()} AND {L()}")
            elif x < 0.74:
                conds.append(f"{e} IN ({', '.join(L() for _ in range(r.randint(1, 4)))})")
            elif x < 0.82:
                conds.append(f"{e} IS {r.choice(['', 'NOT '])}NULL")
            elif x < 0.9:
                conds.append(f"({e} = {L()} OR {e} {r.choice(['<', '>'])} {L()})")
            else:
                conds.append(f"{e} > {L()} AND {e} < {L()}")
        if r.random() < 0.3:
            conds.append(self.simple_pred(scope))
        outs = [(qcol(it), it[2], it[3]) for it in scope.items] if r.random() < 0.5 else \
            [(f"{a}.{cn}", t.col(cn).kind, False) for cn in icols] + [(qcol(it), it[2], it[3]) for it in r.sample(scope.items, 1)]
        sel = ", ".join(f"{e} AS c{i}" for i, (e, k, u) in enumerate(outs))
        sql = f"SELECT {sel} FROM {t.name} {a}" + (f" WHERE {' AND '.join(conds)}" if conds else "")
        if r.random() < 0.6:
            # order by index columns (index order or reversed), + LIMIT
            pos = {e: i for i, (e, k, u) in enumerate(outs)}
            ob = []
            rev = r.random() < 0.5
            idx = []
            for p in ix[ix.index("(") + 1: ix.rindex(")")].split(","):
                toks = p.split()
                cn = toks[0]
                desc = "DESC" in toks
                if rev:
                    desc = not desc
                nulls = ""
                if "NULLS" in toks:
                    nf = toks[toks.index("NULLS") + 1]
                    if rev:
                        nf = "LAST" if nf == "FIRST" else "FIRST"
                    nulls = f" NULLS {nf}"
                ob.append(f"{a}.{cn}{' DESC' if desc else ''}{nulls}")
                if f"{a}.{cn}" in pos:
                    idx.append(pos[f"{a}.{cn}"])
            # complete the order with all output columns -> total
            total = r.random() < 0.6
            if total:
                ob += [str(i + 1) for i in range(len(outs))]
            sql += " ORDER BY " + ", ".join(ob)
            if r.random() < 0.7:
                sql += f" LIMIT {r.choice([1, 2, 5, 10, 100])}"
            if total:
                return sql, ("total", None)
            if len(idx) == len(ob):
                return sql, ("keys", idx)
            if "LIMIT" in sql:
                return sql, ("count", None)
            return sql, ("none", None)
        return self.finish_order(sql, outs)

    def q_cte(self):
        r = self.rng
        inner, mode = self.q_simple() if r.random() < 0.6 else self.q_group()
        # wrap: the inner query's ORDER BY/LIMIT inside a CTE or subquery
        ncols = inner.count(" AS c")
        cols = [f"c{i}" for i in range(ncols)]
        # outer predicates on inner columns are type-agnostic: use IS NOT NULL / ordering
        outer_where = ""
        if r.random() < 0.4:
            outer_where = f" WHERE {r.choice(cols)} IS NOT NULL"
        if mode[0] in ("keys", "keys_ties") and "LIMIT" in inner or "FETCH" in inner and mode[0] != "total":
            mode2 = ("count", None)
        elif mode[0] == "total" or "LIMIT" not in inner and "FETCH" not in inner and "OFFSET" not in inner:
            mode2 = ("none", None)
        else:
            mode2 = ("count", None)
        if mode2[0] == "count":
            # Which rows a LIMIT under a partial order keeps is plan-dependent, and so is
            # how many of them pass an outer filter: only the count without one is checked.
            outer_where = ""
        ob = ""
        if r.random() < 0.6:
            ob = " ORDER BY " + ", ".join(f"{c}{r.choice(['', ' DESC'])}{r.choice(['', ' NULLS FIRST'])}" for c in cols)
            if mode2[0] == "none":
                mode2 = ("total", None)
        if r.random() < 0.5:
            sql = f"WITH w AS ({inner}) SELECT * FROM w{outer_where}{ob}"
        else:
            sql = f"SELECT * FROM ({inner}) s{outer_where}{ob}"
        if mode2[0] == "count" and ob:
            mode2 = ("count", None)
        return sql, mode2

    def q_join_window(self):
        """Window functions over a join, ordered by every visible column (deterministic)."""
        r = self.rng
        frm, scope, comma = self.from_clause(max_tables=2)
        if comma:
            return self.q_simple()
        allc = [qcol(it) for it in scope.items]
        r.shuffle(allc)
        part = f"PARTITION BY {qcol(r.choice(scope.items))} " if r.random() < 0.5 else ""
        nums = scope.of_kind(["i", "l", "n"])
        fn = r.choice(["row_number()", "rank()", "count(*)"] + ([f"sum({qcol(r.choice(nums))})", f"lag({qcol(r.choice(nums))})"] if nums else []))
        outs = [(qcol(it), it[2], False) for it in r.sample(scope.items, min(len(scope.items), 3))]
        outs.append((f"{fn} OVER ({part}ORDER BY {', '.join(allc)})", "n", False))
        sel = ", ".join(f"{e} AS c{i}" for i, (e, k, u) in enumerate(outs))
        where = f" WHERE {self.pred(scope, allow_sub=False)}" if r.random() < 0.4 else ""
        # without all columns in the output, rows are not unique: compare as multiset / key sequence
        return self.finish_order(f"SELECT {sel} FROM {frm}{where}", outs, allow_expr_order=False)

    def q_agg_join(self):
        """An aggregated derived table joined back to a table."""
        r = self.rng
        t1, t2 = self.pick_table(), self.pick_table()
        a1, a2, s = self.alias(), self.alias(), self.alias()
        sc1 = Scope([(a1, c.name, c.kind, False) for c in t1.cols])
        k = r.choice(sc1.items)
        agg = self.agg(sc1)
        inner = f"SELECT {qcol(k)} AS k, {agg[0]} AS v, count(*) AS n FROM {t1.name} {a1} GROUP BY {qcol(k)}"
        if r.random() < 0.3:
            inner += " HAVING count(*) > 1"
        cands = [c for c in t2.cols if compatible(r, c.kind, k[2])]
        if not cands:
            return self.q_group()
        c2 = r.choice(cands)
        jt = r.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
        outs = [(f"{s}.k", k[2], False), (f"{s}.v", agg[1], False), (f"{s}.n", "l", False)] + \
               [(f"{a2}.{c.name}", c.kind, False) for c in r.sample(t2.cols, min(2, len(t2.cols)))]
        sel = ", ".join(f"{e} AS c{i}" for i, (e, kk, u) in enumerate(outs))
        sql = f"SELECT {sel} FROM ({inner}) {s} {jt} {t2.name} {a2} ON {s}.k = {a2}.{c2.name}"
        return self.finish_order(sql, outs)

    # --- join-focused queries -------------------------------------------------------
    def join_key_expr(self, it, kind_to=None):
        """A join key: the column, or (sometimes) an expression or cast over it."""
        r = self.rng
        c = qcol(it)
        x = r.random()
        if x < 0.75:
            return c
        if it[2] in ("i", "l") and x < 0.85:
            return r.choice([f"({c} + 0)", f"{c}::int8", f"{c}::numeric", f"abs({c})"])
        if x < 0.92:
            return f"coalesce({c}, {self.literal(it[2])})"
        return c

    def rich_join_cond(self, left, right):
        """ON conditions: 0-2 equi keys (expressions, cross-type), one-side filters, non-equi and OR terms."""
        r = self.rng
        pairs = [(o, i) for o in left.items for i in right.items if compatible(r, o[2], i[2])]
        conds = []
        x = r.random()
        if pairs and x < 0.93:
            for _ in range(r.choice([1, 1, 1, 2, 2])):
                o, i = r.choice(pairs)
                op = "=" if r.random() < 0.9 else "IS NOT DISTINCT FROM"
                conds.append(f"{self.join_key_expr(o)} {op} {self.join_key_expr(i)}")
        elif x < 0.96:
            conds.append(r.choice(["true", "false"]))
        for _ in range(r.choice([0, 0, 0, 1, 1, 2])):
            y = r.random()
            if y < 0.35:
                conds.append(self.simple_pred(right))
            elif y < 0.55:
                conds.append(self.simple_pred(left))
            elif y < 0.75 and pairs:
                o, i = r.choice(pairs)
                conds.append(f"{qcol(o)} {r.choice(['<', '<=', '<>', '>'])} {qcol(i)}")
            else:
                both = Scope(left.items + right.items)
                conds.append(f"({self.simple_pred(both)} OR {self.simple_pred(both)})")
        if not conds:
            conds.append("true")
        return " AND ".join(conds)

    def q_join(self):
        """Two- or three-table joins of every type (inner, outer, semi, anti, NOT IN with NULLs),
        with rich ON conditions; row outputs for small inputs, aggregates for big ones."""
        r = self.rng
        n = r.choice([2, 2, 2, 3, 3])
        ts = [self.pick_table() for _ in range(n)]
        als = [self.alias() for _ in range(n)]
        scopes = [Scope([(a, c.name, c.kind, c.name == "id") for c in t.cols]) for t, a in zip(ts, als)]
        kinds = ["JOIN", "LEFT JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "FULL JOIN"]
        j1 = r.choice(kinds)
        frm = f"{ts[0].name} {als[0]} {j1} {ts[1].name} {als[1]} ON {self.rich_join_cond(scopes[0], scopes[1])}"
        items = scopes[0].items + scopes[1].items
        size = max(1, ts[0].n) * max(1, ts[1].n)
        if n == 3:
            j2 = r.choice(kinds)
            if r.random() < 0.3:
                # nested on the right: a JOIN (b JOIN c ON ..) ON ..
                inner = f"({ts[1].name} {als[1]} {r.choice(kinds)} {ts[2].name} {als[2]} ON {self.rich_join_cond(scopes[1], scopes[2])})"
                frm = f"{ts[0].name} {als[0]} {j1} {inner} ON {self.rich_join_cond(scopes[0], Scope(scopes[1].items + scopes[2].items))}"
            else:
                frm = f"{frm} {j2} {ts[2].name} {als[2]} ON {self.rich_join_cond(Scope(items), scopes[2])}"
            items = items + scopes[2].items
            size *= max(1, ts[2].n)
        scope = Scope(items)
        conds = []
        # semi / anti joins against another table
        for _ in range(r.choice([0, 0, 1, 1, 2])):
            t = self.pick_table()
            a = self.alias()
            inner = Scope([(a, c.name, c.kind, c.name == "id") for c in t.cols])
            pairs = [(o, i) for o in scope.items for i in inner.items if compatible(r, o[2], i[2])]
            if not pairs:
                continue
            o, i = r.choice(pairs)
            extra = f" AND {self.simple_pred(inner)}" if r.random() < 0.4 else ""
            y = r.random()
            if y < 0.4:
                neg = r.choice(["", "NOT "])
                more = f" AND {qcol(i)} {r.choice(['<', '<>'])} {qcol(o)}" if r.random() < 0.2 else ""
                conds.append(f"{neg}EXISTS (SELECT 1 FROM {t.name} {a} WHERE {qcol(i)} = {qcol(o)}{more}{extra})")
            else:
                neg = r.choice(["", "NOT ", "NOT "])
                nul = f" UNION ALL SELECT NULL" if r.random() < 0.15 else ""
                w = f" WHERE {self.simple_pred(inner)}" if extra else ""
                conds.append(f"{qcol(o)} {neg}IN (SELECT {qcol(i)} FROM {t.name} {a}{w}{nul})")
        if r.random() < 0.35:
            # a filter on a NULL-extended side (IS NULL: the anti-join idiom)
            it = r.choice(scope.items)
            conds.append(r.choice([f"{qcol(it)} IS NULL", f"{qcol(it)} IS NOT NULL", self.simple_pred(scope)]))
        where = (" WHERE " + " AND ".join(conds)) if conds else ""
        if size > 300000 or r.random() < 0.3:
            g = r.choice(scope.items)
            outs = [(qcol(g), g[2], False), ("count(*)", "l", False)]
            for it in r.sample(scope.items, min(2, len(scope.items))):
                outs.append((f"count({qcol(it)})", "l", False))
            sel = ", ".join(f"{e} AS c{i}" for i, (e, k, u) in enumerate(outs))
            return self.finish_order(f"SELECT {sel} FROM {frm}{where} GROUP BY 1", outs)
        picked = r.sample(scope.items, min(len(scope.items), r.randint(2, 6)))
        outs = [(qcol(it), it[2], False) for it in picked]
        sel = ", ".join(f"{e} AS c{i}" for i, (e, k, u) in enumerate(outs))
        return self.finish_order(f"SELECT {sel} FROM {frm}{where}", outs)

    def query(self):
        r = self.rng
        x = r.random()
        if x < 0.20:
            return self.q_join()
        x = r.random()
        if x < 0.06:
            return self.q_join_window()
        if x < 0.12:
            return self.q_agg_join()
        x = r.random()
        if x < 0.30:
            return self.q_simple()
        if x < 0.45:
            return self.q_index()
        if x < 0.62:
            return self.q_group()
        if x < 0.70:
            return self.q_window()
        if x < 0.78:
            return self.q_setop()
        if x < 0.83:
            return self.q_distinct_on()
        return self.q_cte()


# ----------------------------------------------------------------------------------------
# comparison


FLOATY_AGGS = ("avg(", "stddev(", "var_pop(", "sum(")


def norm_val(v):
    """Normalise a text value for order-key comparison (numbers by value)."""
    if v is None:
        return None
    try:
        d = decimal.Decimal(v)
        if d.is_nan():
            return "NaN"
        return d.normalize() if d.is_finite() else str(d)
    except Exception:
        return v


def near_equal_text(a, b):
    """True when a and b are floats that differ only in the last digits."""
    try:
        fa, fb = float(a), float(b)
    except Exception:
        return False
    if fa == fb:
        return True
    return abs(fa - fb) <= 1e-9 * max(abs(fa), abs(fb))


def rows_near_equal(ra, rb, types=None):
    if len(ra) != len(rb):
        return False
    for x, y in zip(ra, rb):
        if len(x) != len(y):
            return False
        for j, (a, b) in enumerate(zip(x, y)):
            if a == b:
                continue
            if a is None or b is None:
                return False
            if types is not None and types[j] != 701:
                # numerics equal by value but printed with another scale are not float noise
                return False
            if not near_equal_text(a, b):
                return False
    return True


def compare(mode, pr, wr, types=None):
    """Returns None if equal, 'near' for float near-miss, else a description."""
    kind, idx = mode
    if len(pr) != len(wr):
        return f"row count differs: pg {len(pr)} weft {len(wr)}"
    if kind == "total":
        if pr == wr:
            return None
        # numerics equal by value but printed differently can tie
        if [tuple(map(norm_val, r)) for r in pr] == [tuple(map(norm_val, r)) for r in wr] and \
                collections.Counter(pr) == collections.Counter(wr):
            return None
        if collections.Counter(pr) == collections.Counter(wr):
            return "same rows, different order"
        if collections.Counter(tuple(map(norm_val, r)) for r in pr) == collections.Counter(tuple(map(norm_val, r)) for r in wr):
            return "numeric scale differs (equal values)"
        if rows_near_equal(sorted(pr, key=repr), sorted(wr, key=repr), types) or rows_near_equal(pr, wr, types):
            return "near"
        return "rows differ"
    if kind == "keys_ties":
        c = compare(("keys", idx), pr, wr, types)
        return c if c is not None else compare(("none", None), pr, wr, types)
    if kind in ("keys", "keys_ties"):
        kp = [tuple(norm_val(r[i]) for i in idx) for r in pr]
        kw = [tuple(norm_val(r[i]) for i in idx) for r in wr]
        if kp != kw:
            if rows_near_equal([tuple(r[i] for i in idx) for r in pr], [tuple(r[i] for i in idx) for r in wr], [types[i] for i in idx] if types else None):
                return "near"
            return "order-key sequence differs"
        return None  # the rest of each row is not determined under LIMIT; without LIMIT check multiset below
    if kind == "count":
        return None
    if collections.Counter(pr) == collections.Counter(wr):
        return None
    if rows_near_equal(sorted(pr, key=repr), sorted(wr, key=repr), types):
        return "near"
    if collections.Counter(tuple(map(norm_val, r)) for r in pr) == collections.Counter(tuple(map(norm_val, r)) for r in wr):
        return "numeric scale differs (equal values)"
    return "rows differ"


# ----------------------------------------------------------------------------------------
# settings


def setting_combos(rng, weft_settings):
    """Random settings for one run: list of (name, value, where) where in {'both','pg','weft'}."""
    s = []
    s.append(("work_mem", rng.choice(["64kB", "64kB", "4MB", "DEFAULT", "256kB"]), "both"))
    s.append(("max_parallel_workers_per_gather", rng.choice(["0", "2", "2", "4"]), "both"))
    if rng.random() < 0.7:
        s.append(("min_parallel_table_scan_size", "0", "both"))
        s.append(("parallel_setup_cost", "0", "pg"))
        s.append(("parallel_tuple_cost", "0", "pg"))
    for g in ["enable_hashjoin", "enable_mergejoin", "enable_nestloop", "enable_seqscan", "enable_indexscan", "enable_indexonlyscan", "enable_parallel_hash"]:
        if rng.random() < 0.15:
            s.append((g, "off", "both"))
    if rng.random() < 0.3:
        s.append(("hash_mem_multiplier", rng.choice(["1", "1.0"]), "both"))
    s.append(("parallel_sort_strategy", rng.choice(["partition", "leader_merge"]), "weft"))
    if rng.random() < 0.3:
        s.append(("parallel_hash_min_inner_rows", rng.choice(["0", "1000000"]), "weft"))
    out = []
    for name, val, where in s:
        if where == "both" and name not in weft_settings:
            where = "pg"
        if where == "weft" and name not in weft_settings:
            continue
        out.append((name, val, where))
    return out


# ----------------------------------------------------------------------------------------
# main loop


class Fuzzer:
    def __init__(self, args):
        self.args = args
        self.srv = Servers(args.weft, args.pg_port, args.weft_port, args.keep, args.reuse_pg)
        self.findings = []
        self.unsupported = collections.Counter()
        self.unsupported_example = {}
        self.stats = collections.Counter()
        self.out = open(args.out, "a") if args.out else None
        self.jsonl = open(args.cases, "a") if args.cases else None

    def log(self, *a):
        print(*a, file=sys.stderr, flush=True)

    def connect(self):
        self.pg = Conn(self.srv.pg_dsn(), "pg")
        self.w = Conn(self.srv.weft_dsn(), "weft")
        sa = self.w.run("SHOW ALL")
        self.weft_settings = {r[0] for r in sa[3]} if sa[0] == "rows" else set()

    def weft_recover(self, why):
        self.log(f"!! weft {why}; restarting")
        self.srv.restart_weft()
        self.w = Conn(self.srv.weft_dsn(), "weft")

    def both(self, sql, settings=()):
        pr = self.pg.run(sql)
        wr = self.w.run(sql)
        return pr, wr

    def apply_settings(self, settings):
        self.pg.run("RESET ALL")
        self.pg.run("SET statement_timeout = '8s'")
        self.pg.run("SET jit = off")
        r = self.w.run("RESET ALL")
        if r[0] in ("hang", "dead"):
            return r
        for name, val, where in settings:
            stmt = f"SET {name} = {val}" if val == "DEFAULT" else f"SET {name} = '{val}'"
            if where in ("both", "pg"):
                self.pg.run(stmt)
            if where in ("both", "weft"):
                r = self.w.run(stmt)
                if r[0] in ("hang", "dead"):
                    return r
        return None

    def setup_sql(self, tables):
        out = []
        for t in tables:
            out.append(f"DROP TABLE IF EXISTS {t.name}")
            out.append(t.create_sql())
            out += t.insert_sqls()
            out += t.indexes
            out += t.extra_sql
            out.append(f"ANALYZE {t.name}")
        return out

    def setup(self, tables):
        self.pg.run("SET statement_timeout = 0")
        self.pg.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        for s in self.setup_sql(tables):
            pr, wr = self.both(s)
            if pr[0] == "err" or wr[0] not in ("ok",):
                if wr[0] in ("hang", "dead") or not self.srv.weft_alive():
                    self.record("crash", "setup", s, [], pr, wr, ("none", None), tables=[])
                    self.weft_recover("died in setup")
                    return False
                if pr[0] != wr[0] or (pr[0] == "err" and pr[1] != wr[1]):
                    self.record("setup-diff", "setup", s, [], pr, wr, ("none", None), tables=[])
        return True

    def record(self, cls, shape, sql, settings, pr, wr, mode, tables, detail=""):
        if pr[0] == "rows" and wr[0] == "rows":
            cp, cw = collections.Counter(pr[3]), collections.Counter(wr[3])
            op, ow = list((cp - cw).elements())[:6], list((cw - cp).elements())[:6]
            if op or ow:
                fmt = lambda rs: "; ".join("(" + ", ".join("NULL" if v is None else v for v in r) + ")" for r in rs)
                detail += f" | only in pg: {fmt(op)} | only in weft: {fmt(ow)}"
        f = dict(cls=cls, shape=shape, sql=sql, settings=settings, pg=summ(pr), weft=summ(wr), mode=mode,
                 detail=detail, seed=self.cur_seed,
                 tables=[t.name for t in tables])
        self.findings.append(f)
        self.stats["finding:" + cls] += 1
        self.log(f"[{cls}] {detail} :: {sql[:300]}")
        if self.out:
            self.out.write(f"\n### {cls} ({shape}) seed {self.cur_seed}: {detail}\n")
            self.out.write("settings: " + "; ".join(f"SET {n}='{v}' ({w})" for n, v, w in settings) + "\n")
            self.out.write("```sql\n" + sql + ";\n```\n")
            self.out.write(f"pg:   {f['pg']}\nweft: {f['weft']}\n")
            self.out.flush()
        if self.jsonl:
            f2 = dict(f)
            f2["setup"] = []
            for t in self.current_tables:
                if t.name in sql:
                    f2["setup"].append(dict(name=t.name, create=t.create_sql(), kinds=[c.kind for c in t.cols], gen=t.gen_sql,
                                            rows=t.rows, indexes=t.indexes, extra=t.extra_sql))
            self.jsonl.write(json.dumps(f2, default=str) + "\n")
            self.jsonl.flush()

    def run_query(self, sql, mode, shape, tables):
        settings = setting_combos(self.rng, self.weft_settings)
        d = self.apply_settings(settings)
        if d is not None:
            self.record("crash", shape, "SET ...", settings, ("ok",), d, mode, tables, "weft died on SET")
            self.weft_recover("died on SET")
            return
        self.stats["queries"] += 1
        t0 = time.time()
        pr = self.pg.run(sql)
        pt = time.time() - t0
        if pr[0] == "err" and pr[1] == "57014":
            self.stats["pg_timeout"] += 1
            return
        t0 = time.time()
        wr = self.w.run(sql)
        wt = time.time() - t0
        if pr[0] == "hang":
            self.stats["pg_timeout"] += 1
            self.pg.connect()
            if wr[0] in ("hang", "dead"):
                self.weft_recover("timeout (pg timed out too)")
            return
        if wr[0] in ("hang", "dead") or not self.srv.weft_alive():
            cls = "hang" if wr[0] == "hang" else "crash"
            if cls == "hang" and pt > 1.0:
                cls = "slow"
            if self.srv.weft_alive() and wr[0] == "hang":
                # the server may still be alive; did the cancel work?
                pass
            self.record(cls, shape, sql, settings, pr, wr, mode, tables, f"weft {cls} after {wt:.1f}s (pg {pt:.2f}s) {wr[1:] if len(wr) > 1 else ''}")
            self.weft_recover(cls)
            # tables persist in weft's data dir, but reload to be safe from partial state
            return
        if pr[0] == "err" and wr[0] == "err":
            if pr[1] != wr[1]:
                if wr[1] == "0A000":
                    self.unsup(wr, sql)
                else:
                    self.record("sqlstate", shape, sql, settings, pr, wr, mode, tables, f"pg {pr[1]} weft {wr[1]}")
            else:
                self.stats["both_err"] += 1
            return
        if pr[0] == "err":
            self.record("pg-error-only", shape, sql, settings, pr, wr, mode, tables, f"pg {pr[1]}: {pr[2]}")
            return
        if wr[0] == "err":
            if wr[1] == "0A000":
                self.unsup(wr, sql)
                return
            self.record("weft-error-only", shape, sql, settings, pr, wr, mode, tables, f"weft {wr[1]}: {wr[2]}")
            return
        if pr[0] == "ok" or wr[0] == "ok":
            if pr[:2] != wr[:2]:
                self.record("tag", shape, sql, settings, pr, wr, mode, tables, "command result differs")
            return
        if len(pr[1]) != len(wr[1]):
            self.record("columns", shape, sql, settings, pr, wr, mode, tables, "column count differs")
            return
        c = compare(mode, pr[3], wr[3], pr[2])
        if c is None and mode[0] in ("keys", "keys_ties") and "LIMIT" not in sql.rsplit(")", 1)[-1] and "FETCH" not in sql.rsplit(")", 1)[-1] and "OFFSET" not in sql.rsplit(")", 1)[-1]:
            c = compare(("none", None), pr[3], wr[3], pr[2])
        if c == "near":
            self.stats["near_miss"] += 1
            self.record("near-miss", shape, sql, settings, pr, wr, mode, tables, "float last digits")
        elif c is not None and c.startswith("numeric scale"):
            self.record("numeric-scale", shape, sql, settings, pr, wr, mode, tables, c)
        elif c is not None:
            self.record("result", shape, sql, settings, pr, wr, mode, tables, c)
        else:
            self.stats["ok"] += 1
            if pr[2] != wr[2]:
                self.stats["typeoid_diff"] += 1
                self.record("type", shape, sql, settings, pr, wr, mode, tables,
                            f"result type oids differ: pg {pr[2]} weft {wr[2]}")

    def unsup(self, wr, sql=""):
        m = re.sub(r"\bx\d+\.", "x.", wr[2][:160])
        self.unsupported[m] += 1
        if m not in self.unsupported_example or len(sql) < len(self.unsupported_example[m]):
            self.unsupported_example[m] = sql
        self.stats["unsupported"] += 1

    def dml_round(self, tables, g):
        """INSERT/UPDATE/DELETE ... RETURNING then compare table contents."""
        r = self.rng
        cand = [t for t in tables if not t.gen_sql]
        if not cand:
            return True
        t = r.choice(cand)
        a = t.name
        # unqualified outer references inside subqueries hit a known weft bug (42703): qualify mostly
        q = None if r.random() < 0.2 else t.name
        scope = Scope([(q, c.name, c.kind, c.name == "id") for c in t.cols])
        x = r.random()
        ret = ""
        if r.random() < 0.6:
            ret = " RETURNING " + ", ".join(c.name for c in t.cols)
        noid = [c for c in t.cols if c.name != "id"]
        if x < 0.35:
            rows = []
            maxid = max([rw[0] for rw in t.rows] + [0]) if t.has_id else 0
            for j in range(r.randint(1, 20)):
                row = []
                for c in t.cols:
                    row.append(maxid + 1 + j if c.name == "id" else gen_value(r, c))
                rows.append(tuple(row))
            if r.random() < 0.3:
                src = r.choice(tables)
                cols = []
                sscope = Scope([(None, c.name, c.kind, False) for c in src.cols])
                for c in t.cols:
                    if c.name == "id":
                        cols.append(f"{maxid + 1000} + row_number() over ()" if False else None)
                if t.has_id:
                    sql = None
                else:
                    exprs = [g.expr(sscope, c.kind) for c in t.cols]
                    sql = f"INSERT INTO {a} SELECT {', '.join(exprs)} FROM {src.name} WHERE {g.pred(sscope, allow_sub=False)}{ret}"
                if sql is None:
                    sql = t.insert_sqls(rows)[0] + ret
            else:
                sql = t.insert_sqls(rows)[0] + ret
        elif x < 0.7 and noid:
            c = r.choice(noid)
            sets = [f"{c.name} = {g.expr(scope, c.kind)}"]
            if r.random() < 0.3 and len(noid) > 1:
                c2 = r.choice([cc for cc in noid if cc is not c])
                sets.append(f"{c2.name} = {g.expr(scope, c2.kind)}")
            sql = f"UPDATE {a} SET {', '.join(sets)} WHERE {g.pred(scope)}{ret}"
        else:
            sql = f"DELETE FROM {a} WHERE {g.pred(scope)}{ret}"
        pr, wr = self.both(sql)
        self.stats["dml"] += 1
        t.extra_sql.append(sql)
        if wr[0] in ("hang", "dead") or not self.srv.weft_alive():
            self.record("crash", "dml", sql, [], pr, wr, ("none", None), [t], "weft died on DML")
            self.weft_recover("died on DML")
            return False
        bad = False
        if pr[0] != wr[0] or (pr[0] == "err" and pr[1] != wr[1]):
            if not (wr[0] == "err" and wr[1] == "0A000"):
                self.record("dml", "dml", sql, [], pr, wr, ("none", None), [t], "DML outcome differs")
            else:
                self.unsup(wr, sql)
                return False  # tables diverged (weft refused the statement): rebuild
            bad = True
        elif pr[0] == "rows":
            c = compare(("none", None), pr[3], wr[3])
            if c and c != "near":
                self.record("dml", "dml", sql, [], pr, wr, ("none", None), [t], "RETURNING differs: " + c)
        # compare contents
        q = f"SELECT * FROM {a}"
        pr2, wr2 = self.both(q)
        if pr2[0] == "rows" and wr2[0] == "rows":
            c = compare(("none", None), pr2[3], wr2[3])
            if c and c != "near":
                self.record("dml", "dml", sql, [], pr2, wr2, ("none", None), [t], "table contents differ after DML: " + c)
                bad = True
        if bad:
            return False  # tables diverged: the caller rebuilds the round
        # sync python rows with PG's contents (for later generators and repro)
        if pr2[0] == "rows":
            t.rows = [tuple(parse_back(c.kind, v) for c, v in zip(t.cols, rw)) for rw in pr2[3]]
            t.extra_sql = []
        # sometimes add an index after DML, then query with it
        if r.random() < 0.4:
            cols = r.sample(t.cols, min(len(t.cols), r.randint(1, 2)))
            nm = f"{a}_dx{self.stats['dml']}"
            ix = f"CREATE INDEX {nm} ON {a} ({', '.join(c.name + r.choice(['', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST']) for c in cols)})"
            pr, wr = self.both(ix)
            if pr[0] == "ok" and wr[0] == "ok":
                t.indexes.append(ix)
            elif pr[0] != wr[0]:
                self.record("dml", "dml", ix, [], pr, wr, ("none", None), [t], "CREATE INDEX outcome differs")
            chk = self.w.run(f"SELECT weft_index_check('{nm}', heapallindexed => true)")
            if chk[0] == "err":
                self.record("index-check", "dml", ix, [], ("ok",), chk, ("none", None), [t], "weft_index_check failed after DML")
        return True

    def round(self, seed):
        self.cur_seed = seed
        self.rng = random.Random(seed)
        ntab = self.rng.randint(2, 5)
        tables = [gen_table(self.rng, f"t{j}") for j in range(ntab)]
        for t in tables:
            t.extra_sql = []
        self.current_tables = tables
        if not self.setup(tables):
            return
        g = Gen(self.rng, tables)
        for qn in range(self.args.queries):
            if self.rng.random() < 0.06:
                if not self.dml_round(tables, g):
                    for t in tables:
                        t.extra_sql = []
                    # rebuild from python state (which reflects PG) in both
                    self.setup(tables)
                continue
            gen = g.query()
            sql, mode = gen
            used = [t for t in tables if f"{t.name} " in sql]
            self.run_query(sql, mode, "q", used)
            if self.rng.random() < 0.15:
                # the same query under another setting combination
                self.run_query(sql, mode, "q", used)
        self.log(f"seed {seed} done: {dict(self.stats)}")

    def main(self):
        self.srv.start_pg()
        self.srv.start_weft()
        self.connect()
        for i in range(self.args.rounds):
            self.round(self.args.seed + i)
        self.summary()

    def summary(self):
        s = sys.stdout
        print(f"\n== stats: {dict(self.stats)}", file=s)
        byc = collections.Counter(f["cls"] for f in self.findings)
        print(f"== findings by class: {dict(byc)}", file=s)
        if self.unsupported:
            print("== weft 0A000 (not supported) messages:", file=s)
            for m, n in self.unsupported.most_common():
                print(f"  {n:5d}  {m}\n         e.g. {self.unsupported_example.get(m, '')[:400]}", file=s)
        if self.out:
            self.out.write("\n## 0A000 counts\n")
            for m, n in self.unsupported.most_common():
                self.out.write(f"- {n} x {m}\n  e.g. `{self.unsupported_example.get(m, '')}`\n")
            self.out.write(f"\n## stats {dict(self.stats)}\n")
            self.out.flush()


def parse_back(kind, v):
    if v is None:
        return None
    if kind in ("i", "l"):
        return int(v)
    if kind == "b":
        return v == "t"
    return v


def summ(r):
    if r[0] == "rows":
        rows = r[3]
        s = "; ".join("(" + ", ".join("NULL" if v is None else v for v in row) + ")" for row in rows[:12])
        return f"{len(rows)} rows: {s}{' ...' if len(rows) > 12 else ''}"
    return " ".join(str(x) for x in r)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--weft", default="/tmp/weft-bin/weft")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--out", default=None, help="append findings (markdown) to this file")
    ap.add_argument("--cases", default=None, help="append findings with their tables (JSON lines) for reduce.py")
    ap.add_argument("--pg-port", type=int, default=5599)
    ap.add_argument("--weft-port", type=int, default=5598)
    ap.add_argument("--reuse-pg", action="store_true", help="use a PostgreSQL already listening on --pg-port")
    args = ap.parse_args()
    f = Fuzzer(args)

    def on_signal(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    atexit.register(f.srv.cleanup)
    try:
        f.main()
    except KeyboardInterrupt:
        f.summary()
        print("interrupted", file=sys.stderr)
    finally:
        f.srv.cleanup()


if __name__ == "__main__":
    main()
