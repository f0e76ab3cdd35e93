"""DuckDB's side of weft's benchmarks (`weft bench sort`, `weft bench join`): embedded in the
weft binary, written to the bench's temporary directory and run as
`python3 bench_duckdb.py DB_FILE TEMP_DIR`.

One long-lived process holds the DuckDB database open, as weft's session and PostgreSQL's
cluster stay up between runs. It reads one JSON request per line on stdin:

    {"setup": [sql...], "sql": sql, "fetch": bool, "after": [sql...]}

runs `setup`, then times `sql` (time.perf_counter, fetching its rows when `fetch`), then runs
`after` untimed, and answers one JSON line on stdout:

    {"ms": float, "rows": [[text...]] | null, "after": [[[text...]]...],
     "temp_peak": bytes | null, "rss_peak": bytes | null}

or {"error": text}. `temp_peak` is the largest size the temp directory reached while `sql`
ran (sampled every few milliseconds: DuckDB does not count bytes written to temp files);
`rss_peak` is the growth of the process's peak resident set over its resident set before
`sql` (the peak is reset through /proc/self/clear_refs first). Values are sent as text, as
psql prints them; NULL is the empty string.
"""

import json
import os
import sys
import threading
import time

import duckdb

SAMPLE_SECONDS = 0.003


def status_bytes(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def dir_bytes(path):
    total = 0
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                try:
                    if entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
                except OSError:
                    pass
    except OSError:
        pass
    return total


class TempSampler(threading.Thread):
    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.peak = dir_bytes(path)
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            self.peak = max(self.peak, dir_bytes(self.path))
            self.done.wait(SAMPLE_SECONDS)

    def stop(self):
        self.done.set()
        self.join()
        self.peak = max(self.peak, dir_bytes(self.path))
        return self.peak


def text(rows):
    return [["" if v is None else str(v) for v in row] for row in rows]


def main():
    db_file, temp_dir = sys.argv[1], sys.argv[2]
    # Answers go to a copy of stdout; anything DuckDB itself prints goes to stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def reply(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    con = duckdb.connect(db_file)
    con.execute("SET enable_progress_bar = false")
    con.execute("PRAGMA temp_directory = '%s'" % temp_dir.replace("'", "''"))
    reply({"ready": True, "version": duckdb.__version__})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
            for sql in request.get("setup", []):
                con.execute(sql)
            sampler = TempSampler(temp_dir)
            sampler.start()
            peak_reset = reset_peak_rss()
            rss_before = status_bytes("VmRSS")
            try:
                started = time.perf_counter()
                result = con.execute(request["sql"])
                rows = result.fetchall() if request.get("fetch") else None
                elapsed = time.perf_counter() - started
            finally:
                temp_peak = sampler.stop()
            rss_hwm = status_bytes("VmHWM") if peak_reset else None
            after = []
            for sql in request.get("after", []):
                result = con.execute(sql)
                try:
                    after.append(text(result.fetchall()))
                except Exception:  # a statement without a result set
                    after.append([])
            rss_peak = None
            if rss_hwm is not None and rss_before is not None:
                rss_peak = max(0, rss_hwm - rss_before)
            reply(
                {
                    "ms": elapsed * 1000.0,
                    "rows": None if rows is None else text(rows),
                    "after": after,
                    "temp_peak": temp_peak,
                    "rss_peak": rss_peak,
                }
            )
        except Exception as e:  # reported to weft, which goes on with the next request
            reply({"error": "%s: %s" % (type(e).__name__, e)})


if __name__ == "__main__":
    main()
