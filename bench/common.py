"""What the benchmarks share (bench.py, report.py, peers.py, ab.py, lifecycle.py): the
PostgreSQL being measured and the library installed into it, connections and psql,
pgbench runs and their output, medians and ranges, and a run's results folder with the
facts every report opens with (command, commit, machine, server, library).

The scripts run inside a throwaway cluster (`tests/cluster.py run ... -- python3
bench/X.py`), which sets PGHOST, PGPORT, PGUSER and PGDATABASE: psql, pgbench and
psycopg2 all connect through those. Each script sets `sys.dont_write_bytecode` before
importing this module, so that no __pycache__ lands in the source tree.
"""

import datetime
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

try:
    import psycopg2  # Debian's python3-psycopg2: run the scripts with /usr/bin/python3
except ImportError:  # --help, --dry-run, --prepare-only and the reports need no database
    psycopg2 = None

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"  # one folder per run, git-ignored
sys.path.insert(0, str(REPO / "tests"))
from cluster import PGBIN  # noqa: E402  (the major of SENDJOBS_PG, scripts/postgres-majors)

PG_CONFIG = os.path.join(PGBIN, "pg_config")


def log(msg):
    print(msg, flush=True)


def parse_list(text):
    return [int(x) for x in str(text).split(",") if x.strip()]


def fmt_dur(s):
    s = int(s)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def sh(cmd):
    """A command's output, best effort (metadata only)."""
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"({e})"


# --------------------------------------------------------------------------------------
# The library under test


def pg_config(option):
    return subprocess.run([PG_CONFIG, option], check=True, capture_output=True, text=True).stdout.strip()


def library_path():
    """The library that CREATE EXTENSION sendjobs binds to in the major being measured: that
    of the installed control file's default_version (sendjobs-<version>.so since 0.2.1,
    docs/decisions/0001-a-library-per-release.md; sendjobs.so before), in its pkglibdir.
    Not the version in Cargo.toml: the tree may be ahead of what is installed."""
    control = Path(pg_config("--sharedir")) / "extension" / "sendjobs.control"
    m = re.search(r"^default_version\s*=\s*'([^']*)'", control.read_text(), re.M) if control.exists() else None
    libdir = Path(pg_config("--pkglibdir"))
    path = libdir / f"sendjobs-{m.group(1) if m else '?'}.so"
    return path if path.exists() or not (libdir / "sendjobs.so").exists() else libdir / "sendjobs.so"


def library_meta():
    path = library_path()
    if not path.exists():
        return {"path": str(path), "sha256": None, "mtime": None}
    return {
        "path": str(path),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16],
        "mtime": datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M:%S UTC"
        ),
    }


# --------------------------------------------------------------------------------------
# The database


class Db:
    """One autocommit connection to a database of the cluster the environment names."""

    def __init__(self, dbname, application_name="bench-driver"):
        if psycopg2 is None:
            raise SystemExit(
                f"bench: no psycopg2 in {sys.executable}: run it with /usr/bin/python3 "
                "(apt package python3-psycopg2), as the bench/*.sh scripts do"
            )
        self.conn = psycopg2.connect(dbname=dbname, application_name=application_name)
        self.conn.autocommit = True

    def exec(self, sql, params=None):
        with self.conn.cursor() as cur:
            cur.execute(sql, params)

    def rows(self, sql, params=None):
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def one(self, sql, params=None):
        return self.rows(sql, params)[0]

    def close(self):
        self.conn.close()


def psql(db, sql, capture=False):
    """Runs SQL (several statements allowed) in database `db`, stopping at the first error."""
    out = subprocess.run(
        [f"{PGBIN}/psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() if capture else None


def psql_file(db, path, single_transaction=False):
    cmd = [f"{PGBIN}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db, "-f", str(path)]
    if single_transaction:
        cmd.insert(1, "-1")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


# Where a finished job goes depends on the installed version: 0.2.x moves its row to
# send_jobs_finished (a child of send_jobs) and writes its event to the table
# send_job_events; from 0.3.0 the finished row is the event, send_job_events a view of them.
QUEUE_TABLES = ("send_jobs", "send_jobs_finished", "send_job_events")

# Finished jobs and their events removed, whichever the layout (DELETE FROM send_jobs
# reaches its child table too).
CLEAR_FINISHED = """
    DO $$BEGIN
        IF (SELECT relkind FROM pg_class WHERE oid = to_regclass('send_job_events')) = 'r' THEN
            TRUNCATE send_job_events;
        END IF;
    END$$;
    DELETE FROM send_jobs WHERE status <> 'pending';
"""


def queue_tables(db, schema="public"):
    """The tables of QUEUE_TABLES that database `db` has in `schema` (not the views),
    schema-qualified."""
    names = ",".join(f"'{t}'" for t in QUEUE_TABLES)
    out = psql(
        db,
        f"SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c "
        f"JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{schema}' "
        f"AND c.relkind = 'r' AND c.relname IN ({names}) "
        f"ORDER BY array_position(ARRAY[{names}], c.relname::text)",
        capture=True,
    )
    return out.splitlines()


def wait_quiet(db, autovacuum=True, limit_s=60):
    """Until no pgbench backend (and, with autovacuum, no autovacuum worker) is left in
    this database, bounded; then a moment for exiting backends to flush their table
    statistics. `db` is a Db."""
    t0 = time.time()
    what = "application_name = 'pgbench'" + (" OR backend_type = 'autovacuum worker'" if autovacuum else "")
    while time.time() - t0 < limit_s:
        if db.one(f"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND ({what})")[0] == 0:
            break
        time.sleep(0.05)
    time.sleep(0.3)


# --------------------------------------------------------------------------------------
# pgbench


def parse_pgbench(out):
    """cycles (transactions processed), failed, tps, lat_avg_ms and, with -r, statements:
    [(ms, command text)] in script order."""
    r = {}
    m = re.search(r"number of transactions actually processed: (\d+)", out)
    r["cycles"] = int(m.group(1)) if m else 0
    m = re.search(r"number of failed transactions: (\d+)", out)
    r["failed"] = int(m.group(1)) if m else 0
    m = re.search(r"latency average = ([\d.]+) ms", out)
    r["lat_avg_ms"] = float(m.group(1)) if m else None
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
    r["tps"] = float(m.group(1)) if m else 0.0
    # "  <latency>  <failures>  <command text>" after the heading
    r["statements"] = []
    sect = out.split("statement latencies in milliseconds", 1)
    if len(sect) == 2:
        for line in sect[1].splitlines()[1:]:
            m = re.match(r"\s+([\d.]+)\s+(?:\d+\s+)?(.*)$", line)
            if m:
                r["statements"].append((float(m.group(1)), m.group(2)))
    return r


def pgbench(db, script, clients, duration, variables=(), latencies=False, progress=0, check=False, transactions=None):
    """One `pgbench -n -M prepared` run of `script` in database `db` (-j: as many threads as
    clients, at most one per core), for `duration` seconds, or `transactions` per client
    (-t; `duration` then only bounds the wait). Returns parse_pgbench()'s figures,
    `progress` [(s, tps)] of the -P intervals, and `error` ("" when the run went through:
    exit 0, no client aborted, no transaction failed); check=True stops on an error
    instead."""
    length = ["-t", str(transactions)] if transactions else ["-T", str(max(1, int(round(duration))))]
    cmd = [
        f"{PGBIN}/pgbench",
        "-n",
        "-M",
        "prepared",
        *(["-r"] if latencies else []),
        *(["-P", str(progress)] if progress else []),
        "-c",
        str(clients),
        "-j",
        str(min(clients, os.cpu_count() or 1)),
        *length,
    ]
    for name, value in dict(variables).items():
        cmd += ["-D", f"{name}={value}"]
    cmd += ["-f", str(script), db]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 120)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, rc = "pgbench timed out", -1
    r = parse_pgbench(out)
    # "progress: 10.0 s, 2150.3 tps, lat ..." on stderr, one line per -P interval
    r["progress"] = [
        (float(m.group(1)), float(m.group(2)))
        for m in re.finditer(r"^progress: ([\d.]+) s, ([\d.]+) tps", err or "", re.M)
    ]
    r["error"] = ""
    if rc != 0 or "aborted" in err or r["failed"]:
        first = [ln for ln in err.splitlines() if "error" in ln.lower() or "abort" in ln.lower()][:2]
        r["error"] = (" | ".join(first) or f"pgbench exit {rc}")[:300]
    if check and r["error"]:
        raise SystemExit(f"bench: pgbench {script} in {db} failed: {r['error']}")
    return r


# --------------------------------------------------------------------------------------
# Instructions: a server under valgrind's callgrind (tests/cluster.py run --callgrind DIR)


def callgrind_output(folder, pid, limit_s=60):
    """The path of process `pid`'s counts in `folder`, written whole: callgrind writes
    them as the process exits, so once it is gone."""
    path = Path(folder) / f"cg.{pid}"
    deadline = time.time() + limit_s
    while Path(f"/proc/{pid}").exists() or not (path.exists() and path.stat().st_size > 0):
        if time.time() > deadline:
            raise SystemExit(f"bench: no callgrind output {path} after {limit_s} s")
        time.sleep(0.1)
    return path


def callgrind_counts(path, parts=None):
    """(all, {part: inclusive}) instructions of one process's callgrind output; `parts`
    names, for each part, the functions whose inclusive counts it sums."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    total = int(re.search(r"^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", out, re.M).group(1).replace(",", ""))
    counts = {}
    for part, names in (parts or {}).items():
        counts[part] = sum(
            int(m.group(1).replace(",", ""))
            for name in names
            for m in re.finditer(r"^\s*([\d,]+) \([^)]*\)\s+\S+:" + re.escape(name) + r" \[", out, re.M)
        )
    return total, counts


# --------------------------------------------------------------------------------------
# Statistics


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values, digits=0):
    """`median (min-max)` of a run's repetitions, as every report prints them."""
    values = [float(v) for v in values]
    return f"{statistics.median(values):,.{digits}f} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


# --------------------------------------------------------------------------------------
# The grid that bench.py (the extension against the floor) and peers.py (against pgmq
# and pg-boss) share, full and --quick


GRID = {
    "full": dict(duration=10.0, reps=3, clients="1,4,8", batches="1,10,100", backlogs="10000,1000000", warmup=3.0),
    "quick": dict(duration=2.0, reps=1, clients="1,4", batches="1,100", backlogs="10000,1000000", warmup=1.0),
}


def add_grid_arguments(parser):
    f, q = GRID["full"], GRID["quick"]
    parser.add_argument("--quick", action="store_true", help="tiny grid, short runs (development; not for curating)")
    parser.add_argument(
        "--duration", type=float, help=f"seconds per pgbench run (full {f['duration']:g}, quick {q['duration']:g})"
    )
    parser.add_argument(
        "--reps", type=int, help=f"runs per grid point; the report takes medians (full {f['reps']}, quick {q['reps']})"
    )
    parser.add_argument("--clients", help=f"comma list (full {f['clients']}; quick {q['clients']})")
    parser.add_argument("--batches", help=f"comma list of jobs per claim (full {f['batches']}; quick {q['batches']})")
    parser.add_argument(
        "--backlogs",
        "--backlog",
        dest="backlogs",
        help=f"comma list of waiting jobs (full {f['backlogs']}; quick {q['backlogs']})",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        help=f"unrecorded seconds per arm after each data load (full {f['warmup']:g}, quick {q['warmup']:g})",
    )


def resolve_grid(a):
    """Fills the grid arguments left out from GRID; sets a.mode."""
    a.mode = "quick" if a.quick else "full"
    d = GRID[a.mode]
    a.duration = a.duration or d["duration"]
    a.reps = a.reps or d["reps"]
    a.warmup = d["warmup"] if a.warmup is None else a.warmup
    a.clients = parse_list(a.clients or d["clients"])
    a.batches = parse_list(a.batches or d["batches"])
    a.backlogs = parse_list(a.backlogs or d["backlogs"])
    return a


# --------------------------------------------------------------------------------------
# A run's results folder


def add_name_argument(parser, kind):
    parser.add_argument("--name", help=f"the run's folder under bench/results/ (default: {kind}-<UTC date and time>)")


def results_dir(kind, name=None):
    """bench/results/<name> (default <kind>-<UTC date and time>), created."""
    name = name or f"{kind}-{datetime.datetime.now(datetime.timezone.utc):%Y%m%d-%H%M%S}"
    path = RESULTS / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_script(folder, name, text):
    """A pgbench script (or SQL) of the run, kept in its folder's sql/: what ran."""
    path = Path(folder) / "sql" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def git_dirty():
    """The paths under src/, sql/, workers/ and the build files that differ from the commit."""
    out = subprocess.run(
        [
            "git",
            "-C",
            str(REPO),
            "status",
            "--porcelain",
            "--",
            "src",
            "sql",
            "workers",
            "Cargo.toml",
            "sendjobs.control",
        ],
        capture_output=True,
        text=True,
    ).stdout
    return [line[3:] for line in out.splitlines() if len(line) > 3]


def run_meta(command):
    """The facts a report of this run must carry to be curated: the command, the commit,
    the machine, the server and the library measured. Needs the cluster (the server's
    version)."""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    db = Db("postgres")
    pg_version = db.one("SELECT version()")[0]
    db.close()
    return {
        "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "git_rev": sh(f"git -C {REPO} rev-parse --short HEAD"),
        "git_dirty": git_dirty(),
        "host": platform.node(),
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "kernel": sh("uname -sr"),
        "loadavg_start": sh("cat /proc/loadavg"),
        "pg_version": pg_version,
        "pgbench": sh(f"{PGBIN}/pgbench --version"),
        "library": library_meta(),
    }


def write_report(folder, text, kind):
    """Writes a run's report to FOLDER/report.md and prints it; the exit status."""
    path = Path(folder) / "report.md"
    path.write_text(text)
    print("\n" + text, flush=True)
    log(f"== {kind}: report written to {path}")
    return 0


def write_meta(folder, meta):
    (Path(folder) / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def read_meta(folder):
    path = Path(folder) / "meta.json"
    return json.loads(path.read_text()) if path.exists() else {}


def header_lines(meta):
    """The lines every report opens with (markdown list items)."""
    dirty = meta.get("git_dirty") or []
    lib = meta.get("library") or {}
    return [
        f"- command: `{meta.get('command', '?')}`",
        f"- date: {meta.get('date', '?')}"
        + (f"; elapsed {fmt_dur(meta['elapsed_s'])}" if meta.get("elapsed_s") is not None else ""),
        f"- git rev: `{meta.get('git_rev', '?')}`"
        + (
            f" **with uncommitted changes** in {', '.join('`' + d + '`' for d in dirty)}"
            if dirty
            else " (clean src/, sql/, workers/)"
        ),
        f"- machine: {meta.get('host', '?')}, {meta.get('cpu', '?')}, {meta.get('nproc', '?')} cores; "
        f"{meta.get('kernel', '?')}; load average at start `{meta.get('loadavg_start', '?')}`",
        f"- server: {str(meta.get('pg_version', '?')).split(' on ')[0]}",
        f"- library: `{lib.get('path', '?')}` "
        + (f"sha256 `{lib['sha256']}…`, installed {lib.get('mtime')}" if lib.get("sha256") else "(not found)"),
    ]
