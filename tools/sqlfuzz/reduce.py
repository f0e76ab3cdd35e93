#!/usr/bin/env python3
"""Shrink a fuzzer finding (a line of fuzz.py --cases JSONL) to a small replayable script.

  reduce.py CASES.jsonl N [--pg-dsn ...] [--weft-dsn ...]

Needs a PostgreSQL and a weft server that the caller runs (scratch databases: the tables
of the case are dropped and recreated).  Reduces the settings, the indexes and the rows
of each table (delta debugging) while PostgreSQL and weft still disagree in the same way,
then prints CREATE / INSERT / CREATE INDEX / SET statements and the query.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz  # noqa: E402


def outcome_sig(pr, wr, mode, types_hint=None):
    def cls(r):
        if r[0] == "err":
            return "err:" + str(r[1])
        return r[0]
    a, b = cls(pr), cls(wr)
    if a != b:
        return (a, b)
    if a == "rows":
        if len(pr[1]) != len(wr[1]):
            return ("cols",)
        c = fuzz.compare(tuple(mode), pr[3], wr[3], pr[2])
        if c is None or c == "near":
            return None
        return ("rows",)
    if a == "ok" and pr[1] != wr[1]:
        return ("tag",)
    return None


class Reducer:
    def __init__(self, case, pg_dsn, weft_dsn):
        self.case = case
        self.pg = fuzz.Conn(pg_dsn, "pg")
        self.w = fuzz.Conn(weft_dsn, "weft")
        self.tables = []
        for t in case["setup"]:
            self.tables.append(dict(t))
        self.settings = [tuple(s) for s in case["settings"]]
        self.sql = case["sql"]
        self.mode = case["mode"]

    def table_sql(self, t, rows):
        kinds = t["kinds"]
        out = [f"DROP TABLE IF EXISTS {t['name']}", t["create"]]
        cols = [fuzz.Column("c", k, 0, 0) for k in kinds]
        tt = fuzz.Table(t["name"], cols, False)
        out += tt.insert_sqls(rows)
        out += t["indexes"]
        out += [f"ANALYZE {t['name']}"]
        return out

    def load(self, rows_by_table, indexes_by_table=None):
        for t in self.tables:
            tt = dict(t)
            if indexes_by_table is not None:
                tt["indexes"] = indexes_by_table[t["name"]]
            for s in self.table_sql(tt, rows_by_table[t["name"]]):
                self.pg.run(s)
                r = self.w.run(s)
                if r[0] in ("hang", "dead"):
                    raise SystemExit("weft died while loading: " + s[:200])

    def check(self, rows_by_table, settings, indexes_by_table=None, sql=None):
        self.load(rows_by_table, indexes_by_table)
        self.pg.run("RESET ALL")
        self.w.run("RESET ALL")
        for name, val, where in settings:
            stmt = f"SET {name} = {val}" if val == "DEFAULT" else f"SET {name} = '{val}'"
            if where in ("both", "pg"):
                self.pg.run(stmt)
            if where in ("both", "weft"):
                self.w.run(stmt)
        pr = self.pg.run(sql or self.sql)
        wr = self.w.run(sql or self.sql)
        if wr[0] in ("hang", "dead"):
            return ("weft-" + wr[0],), pr, wr
        return outcome_sig(pr, wr, self.mode), pr, wr

    def run(self):
        rows = {}
        for t in self.tables:
            if t.get("rows"):
                rows[t["name"]] = [tuple(r) for r in t["rows"]]
            else:
                rows[t["name"]] = []
        # generated (big) tables: fetch rows from PG after loading with their generator
        for t in self.tables:
            if not t.get("rows") and t.get("gen"):
                self.pg.run(f"DROP TABLE IF EXISTS {t['name']}")
                self.pg.run(t["create"])
                self.pg.run(t["gen"])
                r = self.pg.run(f"SELECT * FROM {t['name']}")
                rows[t["name"]] = [tuple(fuzz.parse_back(k, v) for k, v in zip(t["kinds"], row)) for row in r[3]]
        idx = {t["name"]: list(t["indexes"]) for t in self.tables}
        sig, pr, wr = self.check(rows, self.settings, idx)
        if sig is None:
            print("-- does not reproduce", file=sys.stderr)
            return False
        print(f"-- signature {sig}", file=sys.stderr)
        target = sig
        # settings
        settings = list(self.settings)
        i = 0
        while i < len(settings):
            trial = settings[:i] + settings[i + 1:]
            if self.check(rows, trial, idx)[0] == target:
                settings = trial
            else:
                i += 1
        # indexes
        for name in idx:
            j = 0
            while j < len(idx[name]):
                trial = dict(idx)
                trial[name] = idx[name][:j] + idx[name][j + 1:]
                if self.check(rows, settings, trial)[0] == target:
                    idx = trial
                else:
                    j += 1
        # rows: ddmin per table
        for name in rows:
            cur = rows[name]
            n = 2
            while len(cur) >= 1:
                chunk = max(1, len(cur) // n)
                removed = False
                for s in range(0, len(cur), chunk):
                    trial_rows = cur[:s] + cur[s + chunk:]
                    trial = dict(rows)
                    trial[name] = trial_rows
                    if self.check(trial, settings, idx)[0] == target:
                        cur = trial_rows
                        rows = trial
                        n = max(n - 1, 2)
                        removed = True
                        break
                if not removed:
                    if chunk == 1:
                        break
                    n = min(len(cur), n * 2)
            print(f"-- {name}: {len(cur)} rows", file=sys.stderr)
        sig, pr, wr = self.check(rows, settings, idx)
        for t in self.tables:
            tt = dict(t)
            tt["indexes"] = idx[t["name"]]
            for s in self.table_sql(tt, rows[t["name"]]):
                if not s.startswith("ANALYZE"):
                    print(s + ";")
        for name, val, where in settings:
            print(f"SET {name} = '{val}';  -- {where}")
        print(self.sql + ";")
        print(f"-- pg:   {fuzz.summ(pr)}")
        print(f"-- weft: {fuzz.summ(wr)}")
        return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases")
    ap.add_argument("n", type=int, help="line number (0-based) of the case")
    ap.add_argument("--pg-dsn", default="host=127.0.0.1 port=5599 user=postgres dbname=postgres")
    ap.add_argument("--weft-dsn", default="host=127.0.0.1 port=5598 user=postgres dbname=postgres")
    a = ap.parse_args()
    with open(a.cases) as f:
        lines = f.readlines()
    case = json.loads(lines[a.n])
    Reducer(case, a.pg_dsn, a.weft_dsn).run()


if __name__ == "__main__":
    main()
