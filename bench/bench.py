#!/usr/bin/python3
"""The sendjobs benchmark grid: E (the extension) vs S (its SQL sent by the client) vs
P (the same logic in PL/pgSQL) vs F (the floor: two single-row UPDATE transactions).

Run it through bench/run.sh, which starts it inside a throwaway cluster (tests/cluster.py);
this script connects to that server (--host/--port), loads the tables, runs pgbench over
the grid, and appends one CSV row per run to <results>/runs.csv (plus meta.json and the
generated SQL). bench/report.py turns those into BENCHMARKS.md and the plots.
"""

import argparse
import csv
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

try:
    import psycopg2
except ImportError:   # --dry-run and --help need no database; a run does (main() says so)
    psycopg2 = None

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
import sqlgen  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from cluster import PGBIN  # noqa: E402  (the major of SENDJOBS_PG, scripts/postgres-majors)
HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# The installed library of this release (docs/decisions/0001-a-library-per-release.md).
SO_PATH = "/usr/lib/postgresql/15/lib/sendjobs-{}.so".format(
    re.search(r'^version = "(.*)"$', (REPO / "Cargo.toml").read_text(), re.M).group(1))

# Arm -> schema of its tables. E1/P1 (optional) finalize with one function call per job
# instead of the batch function; they share the tables of E/P. M (optional) is a minimal
# SQL queue on its own copy of the table (bench/README.md, "M, a yardstick").
SCHEMA = {"E": "bench_e", "S": "bench_s", "P": "bench_p", "F": "bench_f",
          "E1": "bench_e", "P1": "bench_p", "M": "bench_m"}
# Arms that only run the retry cycle (no terminal 'sent' variant).
RETRY_ONLY = {"F", "M"}
MAX_ATTEMPTS = 2147483647          # retries never exhaust: the backlog never drains
LEASE = "5 minutes"
PAYLOAD = ('{"to": "partner-0001", "ref": "tx-requeued0", "kind": "payment.notify", '
           '"currency": "EUR", "amount_cents": 100}')
# Per-run fixed cost (VACUUM, CHECKPOINT, stats, connections), for the estimate only.
OVERHEAD_S = {10_000: 0.6, 1_000_000: 2.0}

RUN_FIELDS = [
    "phase", "variant", "backlog", "rep", "clients", "batch", "arm", "duration_s",
    "cycles", "jobs", "failed", "tps", "jobs_per_s", "lat_avg_ms", "claim_ms", "finalize_ms",
    "wal_bytes", "wal_per_cycle", "wal_per_job", "n_tup_upd", "n_tup_hot_upd", "hot_pct",
    "n_dead_tup", "n_live_tup", "table_bytes", "indexes_bytes", "total_bytes",
    "autovacuums", "autovacuums_any", "leftover_in_flight", "error", "started_at",
]


def log(msg):
    print(msg, flush=True)


def parse_list(text):
    return [int(x) for x in text.split(",") if x.strip()]


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench/run.sh", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="tiny grid, short runs (development; not for publishing)")
    ap.add_argument("--full", action="store_true", help="the full grid (the default)")
    ap.add_argument("--duration", type=float, help="seconds per pgbench run (full 10, quick 2)")
    ap.add_argument("--reps", type=int, help="runs per grid point; the report takes medians (full 3, quick 1)")
    ap.add_argument("--clients", help="comma list (full 1,4,8; quick 1,4)")
    ap.add_argument("--batches", help="comma list (full 1,10,100; quick 1,100)")
    ap.add_argument("--backlogs", help="comma list of backlog sizes (full and quick 10000,1000000)")
    ap.add_argument("--arms", default="E,S,P,F,M",
                    help="arms, in interleaving order: E,S,P,F,M (M a minimal SQL queue; + E1,P1)")
    ap.add_argument("--sent-clients", help="clients of the terminal 'sent' variant (full 4, quick 4)")
    ap.add_argument("--sent-batches", help="batches of the 'sent' variant (full 1,10,100; quick 10)")
    ap.add_argument("--no-sent", action="store_true", help="skip the terminal 'sent' variant")
    ap.add_argument("--warmup", type=float,
                    help="seconds of unrecorded pgbench per arm after each data load (full 3, quick 1)")
    ap.add_argument("--no-vacuum", action="store_true",
                    help="do not VACUUM the arm's table before and after each run (autovacuum only)")
    ap.add_argument("--sustained", type=float,
                    help=f"seconds of each sustained run (E, {SUSTAINED_CLIENTS} clients, batch "
                         f"{SUSTAINED_BATCH}, {SUSTAINED_BACKLOG} jobs, no VACUUM between intervals) per "
                         "autovacuum_naptime; 0 skips them (full 120, quick 20)")
    ap.add_argument("--naptimes", default="60,10",
                    help="autovacuum_naptime values (seconds) of the sustained runs")
    ap.add_argument("--results", help="directory for runs.csv/meta.json (default bench/results/<mode>)")
    ap.add_argument("--host", required=True, help=argparse.SUPPRESS)
    ap.add_argument("--port", required=True, help=argparse.SUPPRESS)
    ap.add_argument("--user", default="postgres", help=argparse.SUPPRESS)
    ap.add_argument("--command", default="", help=argparse.SUPPRESS)
    ap.add_argument("--settings", default="", help=argparse.SUPPRESS)
    ap.add_argument("--dry-run", action="store_true", help="print the plan and the estimate only")
    a = ap.parse_args(argv)
    mode = "quick" if a.quick else "full"
    d = {"quick": dict(duration=2.0, warmup=1.0, reps=1, clients="1,4", batches="1,100",
                       backlogs="10000,1000000", sent_clients="4", sent_batches="10", sustained=20.0),
         "full": dict(duration=10.0, warmup=3.0, reps=3, clients="1,4,8", batches="1,10,100",
                      backlogs="10000,1000000", sent_clients="4", sent_batches="1,10,100",
                      sustained=120.0)}[mode]
    a.mode = mode
    a.duration = a.duration or d["duration"]
    a.warmup = d["warmup"] if a.warmup is None else a.warmup
    a.reps = a.reps or d["reps"]
    a.clients = parse_list(a.clients or d["clients"])
    a.batches = parse_list(a.batches or d["batches"])
    a.backlogs = parse_list(a.backlogs or d["backlogs"])
    a.sent_clients = parse_list(a.sent_clients or d["sent_clients"])
    a.sent_batches = parse_list(a.sent_batches or d["sent_batches"])
    a.sustained = d["sustained"] if a.sustained is None else a.sustained
    a.naptimes = parse_list(a.naptimes)
    a.arms = [x.strip() for x in a.arms.split(",") if x.strip()]
    for arm in a.arms:
        if arm not in SCHEMA:
            ap.error(f"unknown arm {arm!r} (E, S, P, F, E1, P1, M)")
    a.results = Path(a.results) if a.results else HERE / "results" / mode
    return a


# --------------------------------------------------------------------------------------
# The database


class Db:
    def __init__(self, args, dbname):
        self.args = args
        self.dbname = dbname
        self.conn = psycopg2.connect(host=args.host, port=args.port, user=args.user,
                                     dbname=dbname, application_name="bench-driver")
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


def tables_of(arm, variant):
    s = SCHEMA[arm]
    t = [f"{s}.send_jobs"]
    if variant == "sent":
        t.append(f"{s}.send_job_events")
    return t


def create_database(args, statements, dbname, backlog, arms, sql_dir):
    admin = Db(args, "postgres")
    admin.exec(f"DROP DATABASE IF EXISTS {dbname}")
    admin.exec(f"CREATE DATABASE {dbname}")
    admin.close()
    db = Db(args, dbname)
    t0 = time.time()
    db.exec("CREATE SCHEMA bench_e")
    db.exec("CREATE EXTENSION sendjobs SCHEMA bench_e")
    copies = sorted({SCHEMA[a] for a in arms} - {"bench_e"})
    for schema in copies:
        with db.conn.cursor() as cur:
            ddl, triggers = sqlgen.copy_tables_sql(cur, "bench_e", schema)
        if triggers:
            log(f"== bench: WARNING: the extension's tables have triggers that the copies lack: {triggers}")
        (sql_dir / f"schema_{schema}.sql").write_text(ddl)
        db.exec(ddl)
    if "bench_p" in copies:
        pfun = sqlgen.p_functions(statements, "bench_p")
        (sql_dir / "p_functions.sql").write_text(pfun)
        db.exec(pfun)
    # The backlog: all due, in id order, about 100 bytes of JSON each, retries unlimited.
    db.exec(f"""
        INSERT INTO bench_e.send_jobs (queue, payload, max_attempts, next_attempt_at, created_at)
        SELECT 'default',
               jsonb_build_object('to', 'partner-' || lpad(mod(i, 500)::text, 4, '0'),
                                  'ref', 'tx-' || lpad(i::text, 10, '0'),
                                  'kind', 'payment.notify', 'currency', 'EUR',
                                  'amount_cents', mod(i * 37, 100000)),
               {MAX_ATTEMPTS},
               now() - interval '1 day' + i * interval '1 millisecond',
               now() - interval '1 day'
          FROM generate_series(1, %s) AS i""", (backlog,))
    for schema in copies:
        db.exec(f"INSERT INTO {schema}.send_jobs OVERRIDING SYSTEM VALUE SELECT * FROM bench_e.send_jobs")
        db.exec(f"SELECT setval(pg_get_serial_sequence('{schema}.send_jobs', 'id'), %s)", (backlog,))
    # A fresh backend from here on: (1) the exiting one flushes its table statistics (the
    # inserts) now - flushed after the VACUUM below, they would make autovacuum and
    # autoanalyze run over the million-row tables during the first measured runs, and an
    # ANALYZE's snapshot holds back the xmin horizon, so dead index entries at the head of
    # the queue could not be removed or killed; (2) CREATE EXTENSION loaded sendjobs.so
    # into that backend, and a reinstalled .so crashes the backends that mapped it.
    db.close()
    time.sleep(0.5)
    db = Db(args, dbname)
    for schema in ["bench_e"] + copies:
        db.exec(f"VACUUM (FREEZE, ANALYZE) {schema}.send_jobs")
    db.exec("CHECKPOINT")
    payload_bytes = db.one("SELECT avg(octet_length(payload::text))::int, "
                           "avg(pg_column_size(payload))::int FROM bench_e.send_jobs")
    return db, time.time() - t0, payload_bytes


def wait_for_autovacuum(db, limit_s=60):
    """Waits (bounded) until no autovacuum worker runs in this database: an autoanalyze
    started by the previous arm's churn would hold back the xmin horizon during the next
    arm's run. Returns the seconds waited."""
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if db.one("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' "
                  "AND datname = current_database()")[0] == 0:
            break
        time.sleep(0.2)
    return time.time() - t0


def table_stats(db, arm, variant):
    s = SCHEMA[arm]
    t = f"{s}.send_jobs"
    gen_col = "attempts" if arm == "F" else "claim_generation"
    st = db.one(f"""
        SELECT pg_current_wal_lsn()::text, n_tup_upd, n_tup_hot_upd, n_dead_tup, n_live_tup,
               autovacuum_count, pg_relation_size(relid), pg_indexes_size(relid),
               pg_total_relation_size(relid)
          FROM pg_stat_user_tables WHERE relid = '{t}'::regclass""")
    agg = db.one(f"SELECT coalesce(sum({gen_col}), 0)::bigint, "
                 f"count(*) FILTER (WHERE status = 'in_flight') FROM {t}")
    keys = ["lsn", "n_tup_upd", "n_tup_hot_upd", "n_dead_tup", "n_live_tup", "autovacuums",
            "table_bytes", "indexes_bytes", "total_bytes"]
    out = dict(zip(keys, st))
    # Autovacuum and autoanalyze runs of any table here, whichever arm's: a worker takes
    # CPU from the arm that is running, so it is recorded with that arm's run.
    out["autovacuums_any"] = db.one(
        "SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0)::bigint "
        "FROM pg_stat_user_tables")[0]
    out["gen_sum"], out["in_flight"] = agg
    if variant == "sent":
        ev = db.one(f"SELECT pg_total_relation_size('{s}.send_job_events'::regclass)")
        out["total_bytes"] += ev[0]
    return out


def wait_for_pgbench_gone(db):
    for _ in range(200):
        if db.one("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                  "AND application_name = 'pgbench'")[0] == 0:
            break
        time.sleep(0.05)
    time.sleep(0.2)   # exiting backends flush their table statistics


# --------------------------------------------------------------------------------------
# pgbench


def parse_pgbench(out):
    r = {}
    m = re.search(r"number of transactions actually processed: (\d+)", out)
    r["cycles"] = int(m.group(1)) if m else 0
    m = re.search(r"number of failed transactions: (\d+)", out)
    r["failed"] = int(m.group(1)) if m else 0
    m = re.search(r"latency average = ([\d.]+) ms", out)
    r["lat_avg_ms"] = float(m.group(1)) if m else None
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
    r["tps"] = float(m.group(1)) if m else 0.0
    # statement latencies, in command order: "  <latency>  <failures>  <command text>"
    lat = []
    sect = out.split("statement latencies in milliseconds", 1)
    if len(sect) == 2:
        for line in sect[1].splitlines()[1:]:
            m = re.match(r"\s+([\d.]+)\s+(?:\d+\s+)?(.*)$", line)
            if m:
                lat.append((float(m.group(1)), m.group(2)))
    r["statements"] = lat
    return r


def run_pgbench(args, dbname, script_path, clients, batch, backlog, variant, duration, progress=0):
    cmd = [f"{PGBIN}/pgbench", "-h", args.host, "-p", str(args.port), "-U", args.user,
           "-n", "-M", "prepared", "-r", *(["-P", str(progress)] if progress else []),
           "-c", str(clients), "-j", str(min(clients, os.cpu_count() or 1)),
           "-T", str(int(round(duration))) if duration >= 1 else "1",
           "-f", str(script_path),
           "-D", f"batch={batch}", "-D", f"lease={LEASE}",
           "-D", f"outcome={'retry' if variant == 'retry' else 'sent'}",
           "-D", "backoff_base=10000", "-D", "backoff_max=3600000",
           "-D", f"backlog={backlog}", "-D", f"payload={PAYLOAD}",
           dbname]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 120)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), \
            "pgbench timed out", -1
    r = parse_pgbench(out)
    # "progress: 10.0 s, 2150.3 tps, lat ..." on stderr, one line per -P interval.
    r["progress"] = [(float(m.group(1)), float(m.group(2)))
                     for m in re.finditer(r"^progress: ([\d.]+) s, ([\d.]+) tps", err or "", re.M)]
    r["error"] = ""
    if rc != 0 or "aborted" in err:
        first = [l for l in err.splitlines() if "error" in l.lower()][:2]
        r["error"] = (" | ".join(first) or f"pgbench exit {rc}")[:300]
    return r


# --------------------------------------------------------------------------------------
# The plan


def build_plan(args):
    """[(phase, variant, backlog, rep, clients, batch, arm)], in execution order."""
    plan = []
    main_arms = args.arms
    for backlog in args.backlogs:
        for rep in range(args.reps):
            k = rep % len(main_arms)
            arms = main_arms[k:] + main_arms[:k]         # rotate the order every rep
            for clients in args.clients:
                for bi, batch in enumerate(args.batches):
                    for arm in arms:
                        if arm == "F":
                            if bi == 0:   # F does not depend on the batch: once per clients
                                plan.append(("main", "retry", backlog, rep, clients, 1, "F"))
                            continue
                        plan.append(("main", "retry", backlog, rep, clients, batch, arm))
    if not args.no_sent:
        backlog = args.backlogs[0]
        sent_arms = [a for a in main_arms if a not in RETRY_ONLY]
        for rep in range(args.reps):
            k = rep % len(sent_arms)
            arms = sent_arms[k:] + sent_arms[:k]
            for clients in args.sent_clients:
                for batch in args.sent_batches:
                    for arm in arms:
                        plan.append(("sent", "sent", backlog, rep, clients, batch, arm))
    return plan


def estimate_seconds(args, plan):
    # about 12 s per million-row table copy on the development machine
    load = sum(1 + b / 1_000_000 * 12 * (1 + len({SCHEMA[a] for a in args.arms} - {"bench_e"}))
               for b in args.backlogs)
    if not args.no_sent:
        load += 1 + args.backlogs[0] / 1_000_000 * 12 * 3
    arms_fn = len(args.arms)
    load += (len(args.backlogs) * arms_fn + (0 if args.no_sent else arms_fn)) * (args.warmup + 0.5)
    per = sum(args.duration + 0.3 + OVERHEAD_S.get(p[2], 0.6 + p[2] / 1_000_000 * 1.4) for p in plan)
    sustained = len(args.naptimes) * (args.sustained + 5) + 3 if args.sustained > 0 else 0
    return load + per + sustained


def fmt_dur(s):
    s = int(s)
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


# --------------------------------------------------------------------------------------
# Metadata for the report


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:   # noqa: BLE001 - metadata is best effort
        return f"({e})"


def machine_meta(args, statements):
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    so = Path(SO_PATH)
    so_meta = {}
    if so.exists():
        so_meta = {"path": SO_PATH, "sha256": hashlib.sha256(so.read_bytes()).hexdigest()[:16],
                   "mtime": datetime.datetime.fromtimestamp(so.stat().st_mtime, datetime.timezone.utc)
                   .strftime("%Y-%m-%d %H:%M:%S UTC")}
    dirty = sh(f"git -C {REPO} status --porcelain -- src sql Cargo.toml sendjobs.control")
    db = Db(args, "postgres")
    names = ["shared_buffers", "max_connections", "fsync", "synchronous_commit", "full_page_writes",
             "wal_level", "max_wal_size", "checkpoint_timeout", "autovacuum", "jit",
             "work_mem", "effective_io_concurrency", "huge_pages", "wal_compression"]
    settings = db.rows("SELECT name, current_setting(name), '' FROM pg_settings WHERE name = ANY(%s) "
                       "ORDER BY name", (names,))
    version = db.one("SELECT version()")[0]
    db.close()
    return {
        "mode": args.mode,
        "command": args.command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "git_rev": sh(f"git -C {REPO} rev-parse --short HEAD"),
        "git_dirty": dirty.splitlines(),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "free_h": sh("free -h"),
        "loadavg_start": sh("cat /proc/loadavg"),
        "kernel": sh("uname -sr"),
        "pg_version": version,
        "pgbench": sh(f"{PGBIN}/pgbench --version"),
        "settings": [f"{n} = {s}{(' ' + u) if u else ''}" for n, s, u in settings],
        "settings_cli": args.settings,
        "so": so_meta,
        "statements_in_so": sqlgen.check_against_so(REPO, SO_PATH),
        "statement_files_s_p": sqlgen.files_of(statements),
        "grid": {"duration_s": args.duration, "reps": args.reps, "clients": args.clients,
                 "batches": args.batches, "backlogs": args.backlogs, "arms": args.arms,
                 "sent": None if args.no_sent else {"clients": args.sent_clients,
                                                    "batches": args.sent_batches,
                                                    "backlog": args.backlogs[0]},
                 "vacuum_before_each_run": not args.no_vacuum, "lease": LEASE,
                 "warmup_s": args.warmup},
    }


# --------------------------------------------------------------------------------------


def main(argv):
    args = parse_args(argv)
    statements = sqlgen.read_statements(REPO)
    plan = build_plan(args)
    est = estimate_seconds(args, plan)
    log(f"== bench: mode {args.mode}: {len(plan)} runs of {args.duration:g} s, "
        f"{args.reps} rep(s); estimated {fmt_dur(est)}")
    if args.dry_run:
        for p in plan:
            log("   " + " ".join(map(str, p)))
        return 0
    if psycopg2 is None:
        raise SystemExit(f"bench: no psycopg2 in {sys.executable}: run it with /usr/bin/python3 "
                         "(apt package python3-psycopg2), as bench/run.sh does")

    args.results.mkdir(parents=True, exist_ok=True)
    sql_dir = args.results / "sql"
    sql_dir.mkdir(exist_ok=True)
    for name, text in statements.items():   # the text S and P derive their SQL from
        (sql_dir / f"statement_{name}.sql").write_text(text.strip() + "\n")
    meta = machine_meta(args, statements)
    meta["estimate_s"] = round(est)
    meta["runs_planned"] = len(plan)
    meta["results_dir"] = str(args.results)
    (args.results / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    so_stamp = so_fingerprint()
    in_so = meta["statements_in_so"]
    log(f"== bench: statement files in {SO_PATH}, byte for byte: "
        + ", ".join(f"{k} {'yes' if v else 'NO' if v is False else '?'}" for k, v in in_so.items()))
    missing = [k for k, v in meta["statements_in_so"].items() if v is False]
    if missing:
        used = [k for k in missing if k in meta["statement_files_s_p"]]
        log(f"== bench: WARNING: {', '.join(f'{sqlgen.STATEMENT_DIR}/{k}' for k in missing)} "
            f"not in the installed {SO_PATH} byte for byte: "
            + ("S/P do not run the same text as E" if used else
               "the .so was not built from these statement files (S/P's are in it)")
            + " (rebuild/reinstall, or check out the matching source)")

    csv_path = args.results / "runs.csv"
    with open(csv_path, "w", newline="") as f:
        csv.DictWriter(f, RUN_FIELDS).writeheader()

    # Scripts: one file per (arm, variant, batch-independent) - batch is a -D variable.
    scripts = {}
    for variant in ("retry", "sent"):
        for arm in args.arms:
            if arm in RETRY_ONLY and variant == "sent":
                continue
            if arm == "F":
                text = sqlgen.script_f(SCHEMA[arm])
            elif arm == "M":   # one script per batch (a literal LIMIT), 10 for the warm-up
                for batch in sorted(set(args.batches) | {10}):
                    path = sql_dir / f"pgbench_M_{variant}_b{batch}.sql"
                    path.write_text(sqlgen.script_m(SCHEMA[arm], batch))
                    scripts[(arm, variant, batch)] = path
                continue
            elif arm == "S":
                text = sqlgen.script_s(statements, SCHEMA[arm], variant)
            else:
                text = sqlgen.script_fn(SCHEMA[arm], variant, single=arm.endswith("1"))
            path = sql_dir / f"pgbench_{arm}_{variant}.sql"
            path.write_text(text)
            scripts[(arm, variant)] = path

    try:
        current, db = run_plan(args, plan, scripts, statements, sql_dir, csv_path, meta, so_stamp)
    except psycopg2.OperationalError as e:
        log(f"== bench: ABORTED: lost the connection to the server ({str(e).strip()}). "
            "Did someone reinstall sendjobs.so while the benchmark ran? (That crashes the backends "
            "that loaded it.) Partial results are in " + str(args.results))
        return 3
    except SoChanged as e:
        log(f"== bench: ABORTED: {e}. Partial results are in {args.results}")
        return 3
    if db:
        db.close()
        admin = Db(args, "postgres")
        admin.exec(f"DROP DATABASE IF EXISTS {current}")
        admin.close()
    if args.sustained > 0 and "E" in args.arms:
        meta["sustained"] = run_sustained(args, statements, scripts, sql_dir)
    meta["elapsed_s"] = round(time.time() - meta["_t_start"])
    del meta["_t_start"]
    meta["loadavg_end"] = sh("cat /proc/loadavg")
    (args.results / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"== bench: {len(plan)} runs in {fmt_dur(meta['elapsed_s'])}; results in {args.results}")
    return 0


SUSTAINED_CLIENTS, SUSTAINED_BATCH, SUSTAINED_BACKLOG = 4, 10, 10_000


def run_sustained(args, statements, scripts, sql_dir):
    """E for args.sustained seconds without a VACUUM in between, once per autovacuum_naptime:
    how throughput holds up while dead index entries pile up at the head of the claim order
    until autovacuum removes them. Writes sustained.csv (one row per pgbench -P interval)."""
    dbname = "bench_sustained"
    db, _secs, _payload = create_database(args, statements, dbname, SUSTAINED_BACKLOG, ["E"], sql_dir)
    summary = []
    path = args.results / "sustained.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["naptime_s", "t_s", "cycles_per_s"])
        for naptime in args.naptimes:
            db.exec(f"ALTER SYSTEM SET autovacuum_naptime = '{int(naptime)}s'")
            db.exec("SELECT pg_reload_conf()")
            wait_for_autovacuum(db)
            db.exec(f"VACUUM (ANALYZE) {SCHEMA['E']}.send_jobs")
            db.exec("CHECKPOINT")
            before = table_stats(db, "E", "retry")
            r = run_pgbench(args, dbname, script_for(scripts, "E", "retry", SUSTAINED_BATCH),
                            SUSTAINED_CLIENTS, SUSTAINED_BATCH, SUSTAINED_BACKLOG, "retry",
                            args.sustained, progress=10 if args.sustained >= 40 else 2)
            wait_for_pgbench_gone(db)
            after = table_stats(db, "E", "retry")
            db.exec(f"UPDATE {SCHEMA['E']}.send_jobs SET status = 'pending', lease_expires_at = NULL "
                    "WHERE status = 'in_flight'")
            for t, tps in r["progress"]:
                out.writerow([naptime, t, tps])
            jobs = after["gen_sum"] - before["gen_sum"]
            row = {"naptime_s": naptime, "seconds": args.sustained, "clients": SUSTAINED_CLIENTS,
                   "batch": SUSTAINED_BATCH, "backlog": SUSTAINED_BACKLOG, "cycles_per_s": round(r["tps"], 1),
                   "jobs_per_s": round(r["tps"] * jobs / r["cycles"], 1) if r["cycles"] else 0.0,
                   "first_interval": r["progress"][0][1] if r["progress"] else None,
                   "min_interval": min((tps for _t, tps in r["progress"]), default=None),
                   "autovacuums": after["autovacuums"] - before["autovacuums"], "error": r["error"],
                   "interval_s": r["progress"][0][0] if r["progress"] else None,
                   "intervals": [round(tps) for _t, tps in r["progress"]]}
            summary.append(row)
            log(f"== bench: sustained, autovacuum_naptime {naptime} s: {row['cycles_per_s']:.0f} cycles/s "
                f"(intervals: {' '.join(f'{tps:.0f}' for _t, tps in r['progress'])}), "
                f"{row['autovacuums']} autovacuums")
    db.exec("ALTER SYSTEM RESET autovacuum_naptime")
    db.exec("SELECT pg_reload_conf()")
    db.close()
    admin = Db(args, "postgres")
    admin.exec(f"DROP DATABASE IF EXISTS {dbname}")
    admin.close()
    return summary


def script_for(scripts, arm, variant, batch):
    """The pgbench script of an arm: one per variant, or one per batch (M)."""
    return scripts.get((arm, variant, batch)) or scripts[(arm, variant)]


class SoChanged(Exception):
    pass


def so_fingerprint():
    try:
        st = os.stat(SO_PATH)
        return (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        return None


def run_plan(args, plan, scripts, statements, sql_dir, csv_path, meta, so_stamp):
    t_start = meta["_t_start"] = time.time()
    db = None
    current = None
    meta["load"] = []
    done = 0
    for phase, variant, backlog, rep, clients, batch, arm in plan:
        if so_fingerprint() != so_stamp:
            raise SoChanged(f"{SO_PATH} was replaced during the benchmark: E would not be the "
                            "extension measured so far")
        dbname = f"bench_{'sent_' if phase == 'sent' else ''}{backlog}"
        if current != dbname:
            if db:
                db.close()
                admin = Db(args, "postgres")
                admin.exec(f"DROP DATABASE IF EXISTS {current}")   # free the disk and the cache
                admin.close()
            arms_here = [a for a in args.arms if not (phase == "sent" and a in RETRY_ONLY)]
            log(f"== bench: loading {dbname}: {backlog} jobs x {len({SCHEMA[a] for a in arms_here})} tables")
            db, secs, payload = create_database(args, statements, dbname, backlog, arms_here, sql_dir)
            meta["load"].append({"db": dbname, "seconds": round(secs, 1)})
            meta["payload_text_bytes"], meta["payload_jsonb_bytes"] = payload
            log(f"   loaded in {secs:.1f} s (payload {payload[0]} bytes as text, {payload[1]} as jsonb)")
            current = dbname
            # Warm-up, not recorded: caches, the .so, the write-back of the load settle.
            if args.warmup > 0:
                for warm_arm in arms_here:
                    r = run_pgbench(args, dbname, script_for(scripts, warm_arm, variant, 10), 1, 10, backlog,
                                    variant, args.warmup)
                    if r["error"]:
                        log(f"   warm-up of {warm_arm} failed: {r['error']}")
                    wait_for_pgbench_gone(db)
                    db.exec(f"UPDATE {SCHEMA[warm_arm]}.send_jobs SET status = 'pending', "
                            "lease_expires_at = NULL WHERE status = 'in_flight'")
        waited = wait_for_autovacuum(db)
        if waited > 1:
            log(f"   (waited {waited:.0f} s for autovacuum to finish before the run)")
        if not args.no_vacuum:
            for t in tables_of(arm, variant):
                db.exec(f"VACUUM (ANALYZE) {t}")
        db.exec("CHECKPOINT")
        before = table_stats(db, arm, variant)
        started = datetime.datetime.now().strftime("%H:%M:%S")
        r = run_pgbench(args, dbname, script_for(scripts, arm, variant, batch), clients, batch, backlog,
                        variant, args.duration)
        wait_for_pgbench_gone(db)
        after = table_stats(db, arm, variant)
        left = after["in_flight"]
        if left:   # pgbench stopped between a claim and its finalize: put them back
            db.exec(f"UPDATE {SCHEMA[arm]}.send_jobs SET status = 'pending', lease_expires_at = NULL "
                    "WHERE status = 'in_flight'")
        if not args.no_vacuum:
            # Tidy up now, outside the timed window: otherwise the dead tuples this run left
            # wake autovacuum during a later run, which then shares the CPU with it.
            for t in tables_of(arm, variant):
                db.exec(f"VACUUM (ANALYZE) {t}")
        wal = int(db.one("SELECT pg_wal_lsn_diff(%s, %s)", (after["lsn"], before["lsn"]))[0])
        cycles = r["cycles"]
        jobs = cycles if arm == "F" else after["gen_sum"] - before["gen_sum"]
        jobs_per_s = r["tps"] * (jobs / cycles) if cycles else 0.0
        sql_lat = [lat for lat, text in r["statements"] if not text.startswith("\\")]
        claim_ms = None if arm == "F" or not sql_lat else sql_lat[0]
        fin_ms = None if arm == "F" or not sql_lat else round(sum(sql_lat[1:]), 3)
        upd = after["n_tup_upd"] - before["n_tup_upd"]
        hot = after["n_tup_hot_upd"] - before["n_tup_hot_upd"]
        row = {
            "phase": phase, "variant": variant, "backlog": backlog, "rep": rep,
            "clients": clients, "batch": batch, "arm": arm, "duration_s": args.duration,
            "cycles": cycles, "jobs": jobs, "failed": r["failed"], "tps": round(r["tps"], 2),
            "jobs_per_s": round(jobs_per_s, 1), "lat_avg_ms": r["lat_avg_ms"],
            "claim_ms": claim_ms, "finalize_ms": fin_ms, "wal_bytes": wal,
            "wal_per_cycle": round(wal / cycles) if cycles else None,
            "wal_per_job": round(wal / jobs) if jobs else None,
            "n_tup_upd": upd, "n_tup_hot_upd": hot,
            "hot_pct": round(100.0 * hot / upd, 1) if upd else None,
            "n_dead_tup": after["n_dead_tup"], "n_live_tup": after["n_live_tup"],
            "table_bytes": after["table_bytes"], "indexes_bytes": after["indexes_bytes"],
            "total_bytes": after["total_bytes"],
            "autovacuums": after["autovacuums"] - before["autovacuums"],
            "autovacuums_any": after["autovacuums_any"] - before["autovacuums_any"],
            "leftover_in_flight": left, "error": r["error"], "started_at": started,
        }
        with open(csv_path, "a", newline="") as f:
            csv.DictWriter(f, RUN_FIELDS).writerow(row)
        done += 1
        elapsed = time.time() - t_start
        eta = elapsed / done * (len(plan) - done)
        extra = f" claim {claim_ms:.3f} ms" if claim_ms is not None else ""
        err = f"  ERROR: {r['error']}" if r["error"] else ""
        log(f"[{done:3d}/{len(plan)}] {variant:5s} backlog {backlog:>7d} rep {rep} c={clients} "
            f"b={batch:<3d} {arm:2s} {jobs_per_s:9.0f} jobs/s  {r['tps']:8.0f} cycles/s{extra}"
            f"  (eta {fmt_dur(eta)}){err}")
    return current, db


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
