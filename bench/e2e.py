#!/usr/bin/env python3
"""End to end: sendjobs' own workers and the peers' own client libraries, side by side.

Each arm is a driver program (bench/e2e/, protocol in bench/README.md, "End to end") that
adds jobs and runs a worker with a handler that does nothing, through the library it
measures. For each repetition the arms run in a shuffled order, each in a database made
for the run:

  drain   N jobs loaded (not timed), VACUUM ANALYZE, a CHECKPOINT, then the worker until its handler has
          run all N (sendjobs: until all N are finalized): jobs/s;
  steady  the worker idle, then RATE jobs a second for SECONDS, each enqueued in its own
          transaction with its time; enqueue-to-start of each, p50 and p99.

With each run, the CPU time of the driver (getrusage of the child) and of the server (every
process of the cluster, the reaped ones counted by the postmaster), per job. Prints and
writes bench/results/<name>/report.md, runs.csv and meta.json.

Run it inside a cluster with the drivers built: bash bench/e2e.sh [options] does.
"""

import argparse
import csv
import json
import os
import random
import resource
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402  (bench/common.py)
from common import Db, REPO, log, spread  # noqa: E402


CACHE = os.path.join(REPO, "target", "e2e-cache")
E2E = os.path.join(REPO, "bench", "e2e")
PYTHON = os.path.join(CACHE, "venv", "bin", "python")
NODE = ["node"]
# arm -> (language, driver command, what its database needs first)
ARMS = {
    "sendjobs-rust": ("rust", [os.path.join(REPO, "target", "e2e-rust", "release", "sendjobs-e2e-rust")], "sendjobs"),
    "sendjobs-python": ("python", [PYTHON, os.path.join(E2E, "sendjobs_py.py")], "sendjobs"),
    "sendjobs-node": ("node", NODE + [os.path.join(E2E, "sendjobs_node.mjs")], "sendjobs"),
    "procrastinate": ("python", [PYTHON, os.path.join(E2E, "procrastinate_py.py")], "driver"),
    "pgmq-python": ("python", [PYTHON, os.path.join(E2E, "pgmq_py.py")], "driver"),
    "pg-boss": ("node", NODE + [os.path.join(E2E, "pgboss.mjs")], "driver"),
    "graphile-worker": ("node", NODE + [os.path.join(E2E, "graphile.mjs")], "driver"),
}
FIELDS = [
    "rep",
    "kind",
    "arm",
    "jobs",
    "seconds",
    "jobs_s",
    "p50_ms",
    "p99_ms",
    "db_cpu_ms_per_1000",
    "client_cpu_ms_per_1000",
]


def server_cpu_seconds(postmaster):
    """CPU time of the cluster so far: the postmaster's own and its reaped children's, and
    every live child's."""
    tick = os.sysconf("SC_CLK_TCK")

    def stat(pid):
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()

    fields = stat(postmaster)
    total = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    for pid in os.listdir("/proc"):
        if pid.isdigit() and pid != str(postmaster):
            try:
                fields = stat(pid)
            except OSError:
                continue
            if fields[1] == str(postmaster):  # ppid
                total += int(fields[11]) + int(fields[12])
    return total / tick


def fresh_database(arm, admin):
    name = "e2e_" + arm.replace("-", "_")
    admin.exec(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    admin.exec(f"CREATE DATABASE {name}")
    needs = ARMS[arm][2]
    if needs == "sendjobs":
        db = Db(name)
        db.exec("CREATE EXTENSION sendjobs")
        db.exec("SELECT sendjobs_notify('bench', true)")  # wake-ups are a queue's choice, off by default
        db.close()
    host, port = os.environ["PGHOST"], os.environ["PGPORT"]
    user = os.environ.get("PGUSER", "postgres")
    return name, f"postgresql://{user}@/{name}?host={host}&port={port}"


def driver(arm, url, *args, timeout=900):
    """Runs the arm's driver; its JSON line, and its CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "DATABASE_URL": url, "E2E_NODE_MODULES": os.path.join(CACHE, "npm", "node_modules")}
    out = subprocess.run(
        ARMS[arm][1] + [str(a) for a in args], env=env, capture_output=True, text=True, timeout=timeout
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(
            f"e2e: {arm} {' '.join(map(str, args))} failed ({out.returncode}):\n{out.stdout[-3000:]}"
            f"\n{out.stderr[-3000:]}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out.stdout.strip().splitlines()[-1]), cpu


def one_run(arm, kind, a, admin, postmaster):
    name, url = fresh_database(arm, admin)
    if ARMS[arm][2] == "driver":
        driver(arm, url, "setup")
    if kind == "drain":
        driver(arm, url, "load", a.jobs)
        db = Db(name)
        db.exec("VACUUM ANALYZE")  # as autovacuum would have after a load: every arm alike
        db.close()
        admin.exec("CHECKPOINT")
        args = ("drain", a.jobs)
    else:
        admin.exec("CHECKPOINT")
        args = ("steady", a.rate, a.seconds)
    time.sleep(0.5)
    db_before = server_cpu_seconds(postmaster)
    result, client_cpu = driver(arm, url, *args)
    time.sleep(0.3)  # the driver's backends exit and are reaped
    db_cpu = server_cpu_seconds(postmaster) - db_before
    admin.exec(f"DROP DATABASE {name} WITH (FORCE)")
    jobs = result["jobs"]
    row = {
        "kind": kind,
        "arm": arm,
        "jobs": jobs,
        "seconds": "",
        "jobs_s": "",
        "p50_ms": "",
        "p99_ms": "",
        "db_cpu_ms_per_1000": round(db_cpu * 1e6 / jobs, 1),
        "client_cpu_ms_per_1000": round(client_cpu * 1e6 / jobs, 1),
    }
    if kind == "drain":
        row.update(seconds=round(result["seconds"], 3), jobs_s=round(jobs / result["seconds"], 1))
    else:
        lat = sorted(result["latencies_ms"])
        row.update(p50_ms=round(lat[len(lat) // 2], 2), p99_ms=round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 2))
    return row


def report(meta, rows):
    lines = ["# End to end: sendjobs' workers and the peers' libraries (bench/e2e.sh)", ""]
    lines += common.header_lines(meta)
    g = meta["grid"]
    lines += [
        "",
        f"Each run in a database of its own, the arms in a shuffled order in each of {g['reps']} "
        "repetitions; a handler that does nothing. Drain: "
        f"{g['jobs']:,} jobs loaded first, then the worker until it has run them all. Steady: {g['rate']} jobs "
        f"a second for {g['seconds']} s, each enqueued in its own transaction; enqueue-to-start. CPU per "
        "1,000 jobs: the server's (every process of the cluster) and the driver's. Median (min-max). "
        'Each library\'s settings: bench/README.md, "End to end".',
        "",
        "| arm | language | drain jobs/s | drain DB CPU ms/1000 | drain client CPU ms/1000 "
        "| steady p50 ms | steady p99 ms | steady DB CPU ms/1000 | steady client CPU ms/1000 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arm in meta["grid"]["arms"]:
        drain = [r for r in rows if r["arm"] == arm and r["kind"] == "drain"]
        steady = [r for r in rows if r["arm"] == arm and r["kind"] == "steady"]
        cell = lambda rs, key, digits=0: spread([r[key] for r in rs], digits) if rs else "—"  # noqa: E731
        lines.append(
            f"| {arm} | {ARMS[arm][0]} | {cell(drain, 'jobs_s')} | {cell(drain, 'db_cpu_ms_per_1000')} "
            f"| {cell(drain, 'client_cpu_ms_per_1000')} | {cell(steady, 'p50_ms', 1)} "
            f"| {cell(steady, 'p99_ms', 1)} | {cell(steady, 'db_cpu_ms_per_1000')} "
            f"| {cell(steady, 'client_cpu_ms_per_1000')} |"
        )
    lines.append("")
    return "\n".join(lines) + "\n"


def main(argv):
    p = argparse.ArgumentParser(
        prog="bench/e2e.sh",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma list (default {','.join(ARMS)})")
    p.add_argument("--jobs", type=int, default=100_000, help="jobs drained (default 100000)")
    p.add_argument("--rate", type=int, default=200, help="jobs a second of the steady stream (default 200)")
    p.add_argument("--seconds", type=int, default=10, help="how long the steady stream runs (default 10)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--kinds", default="drain,steady")
    p.add_argument("--seed", type=int, default=1)
    common.add_name_argument(p, "e2e")
    p.add_argument("--command", default="bash bench/e2e.sh " + " ".join(argv), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    arms = [x for x in a.arms.split(",") if x]
    unknown = set(arms) - set(ARMS)
    if unknown:
        p.error(f"unknown arms {sorted(unknown)}; known: {list(ARMS)}")
    results = common.results_dir("e2e", a.name)
    meta = common.run_meta(a.command)
    meta["grid"] = {
        "arms": arms,
        "jobs": a.jobs,
        "rate": a.rate,
        "seconds": a.seconds,
        "reps": a.reps,
        "kinds": a.kinds,
        "seed": a.seed,
    }
    admin = Db("postgres")
    postmaster = int(open(f"/proc/{admin.one('SELECT pg_backend_pid()')[0]}/stat").read().rsplit(")", 1)[1].split()[1])
    rng, rows = random.Random(a.seed), []
    for rep in range(a.reps):
        for kind in a.kinds.split(","):
            order = list(arms)
            rng.shuffle(order)
            for arm in order:
                row = one_run(arm, kind, a, admin, postmaster)
                row["rep"] = rep + 1
                rows.append(row)
                log(
                    f"   rep {rep + 1} {kind:<6} {arm:<16} "
                    + (
                        f"{row['jobs_s']:>10,.0f} jobs/s"
                        if kind == "drain"
                        else f"p50 {row['p50_ms']:>8} ms  p99 {row['p99_ms']:>8} ms"
                    )
                    + f"  DB {row['db_cpu_ms_per_1000']} ms/1000  client {row['client_cpu_ms_per_1000']} ms/1000"
                )
    admin.close()
    with open(results / "runs.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    common.write_meta(results, meta)
    return common.write_report(results, report(meta, rows), "e2e")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
