#!/usr/bin/env python3
"""A/B of two builds of the extension, interleaved in one cluster.

Database `arm_a` loads build A's library (its folder first in `dynamic_library_path`, set
for that database alone) and creates the extension at A's version; `arm_b` loads the
installed library at B's version (the default). Each run is a pgbench of the same
claim + finalize cycle (batch 1: sendjobs_finalize; larger: sendjobs_finalize_batch;
every job retried at once, so the backlog stays constant), and the runs alternate
between the arms in a shuffled order within each repetition. Prints per grid point the
jobs/s of both arms (median and range over the repetitions) and B/A.

Run it inside a cluster (bench/ab.sh does: tests/cluster.py run ... -- python3 bench/ab.py):

    python3 bench/ab.py --a-lib DIR --a-version 0.1.0 [--duration 5] [--reps 3]
"""

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from cluster import PGBIN  # noqa: E402  (the major of SENDJOBS_PG, scripts/postgres-majors)

CYCLE = {
    # batch 1: the single finalize, as a worker finishing one job calls it
    ("one", "retry"): """SELECT id, claim_generation AS generation FROM sendjobs_claim(1, '1 minute') \\gset
SELECT sendjobs_finalize(:id, :generation, 'retry', NULL, now());
""",
    ("batch", "retry"): """SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations
  FROM sendjobs_claim(:batch, '1 minute') \\gset
SELECT count(*) FROM sendjobs_finalize_batch(:ids::int8[], :generations::int8[], 'retry', NULL, now());
""",
    # 'sent': every job finishes, with its event (the backlog is topped up before each run)
    ("one", "sent"): """SELECT id, claim_generation AS generation FROM sendjobs_claim(1, '1 minute') \\gset
SELECT sendjobs_finalize(:id, :generation, 'sent');
""",
    ("batch", "sent"): """SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations
  FROM sendjobs_claim(:batch, '1 minute') \\gset
SELECT count(*) FROM sendjobs_finalize_batch(:ids::int8[], :generations::int8[], 'sent');
""",
}


def psql(db, sql):
    subprocess.run([f"{PGBIN}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                   check=True, stdout=subprocess.DEVNULL)


def prepare(db, version, lib_dir, backlog):
    psql("postgres", f"CREATE DATABASE {db}")
    if lib_dir:
        psql("postgres", f"ALTER DATABASE {db} SET dynamic_library_path = '{lib_dir}:$libdir'")
    psql(db, f"CREATE EXTENSION sendjobs VERSION '{version}'")
    top_up(db, backlog)


def top_up(db, backlog):
    """Finished jobs and their events go; pending jobs are added up to `backlog`."""
    psql(db, "TRUNCATE send_job_events")
    psql(db, "DELETE FROM send_jobs WHERE status <> 'pending'")
    psql(db, f"INSERT INTO send_jobs (payload, max_attempts, next_attempt_at) "
             f"SELECT '{{}}', 1000000000, now() - interval '1 hour' "
             f"  FROM generate_series(1, {backlog} - (SELECT count(*) FROM send_jobs))")
    psql(db, "VACUUM ANALYZE")


def scalar(db, sql):
    return subprocess.run([f"{PGBIN}/psql", "-X", "-Atq", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                          check=True, capture_output=True, text=True).stdout.strip()


def run(db, script, clients, batch, duration):
    """(jobs/s, WAL bytes per job) of one pgbench run; the WAL is the whole cluster's
    during the run (the other arm is idle then)."""
    before = scalar(db, "SELECT pg_current_wal_insert_lsn()")
    out = subprocess.run(
        [f"{PGBIN}/pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", str(clients),
         "-T", str(duration), "-D", f"batch={batch}", "-f", script, db],
        check=True, capture_output=True, text=True).stdout
    wal = int(scalar(db, f"SELECT pg_current_wal_insert_lsn() - '{before}'::pg_lsn"))
    tps = float(re.search(r"tps = ([0-9.]+)", out).group(1))
    cycles = int(re.search(r"number of transactions actually processed: ([0-9]+)", out).group(1))
    return tps * batch, wal / max(1, cycles * batch)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a-lib", required=True, help="folder holding build A's library (sendjobs.so, or sendjobs-<version>.so)")
    p.add_argument("--a-version", required=True)
    p.add_argument("--b-version", default=None, help="default: the installed default version")
    p.add_argument("--backlog", type=int, default=10000)
    p.add_argument("--clients", default="1,4,8")
    p.add_argument("--batches", default="1,10,100")
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--outcome", choices=["retry", "sent"], default="retry",
                   help="retry: jobs go back to pending (a constant backlog); sent: every job "
                        "finishes with its event, and the backlog is topped up before each run")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    b_version = a.b_version or subprocess.run(
        [f"{PGBIN}/psql", "-X", "-Atc",
         "SELECT default_version FROM pg_available_extensions WHERE name = 'sendjobs'", "postgres"],
        capture_output=True, text=True, check=True).stdout.strip()
    prepare("arm_a", a.a_version, a.a_lib, a.backlog)
    prepare("arm_b", b_version, None, a.backlog)
    scripts = {}
    tmp = tempfile.mkdtemp(prefix="sendjobs-ab.")
    for (name, outcome), text in CYCLE.items():
        if outcome == a.outcome:
            scripts[name] = os.path.join(tmp, f"{name}.sql")
            with open(scripts[name], "w") as f:
                f.write(text)
    points = [(c, b) for c in map(int, a.clients.split(",")) for b in map(int, a.batches.split(","))]
    results = {(pt, arm): [] for pt in points for arm in ("arm_a", "arm_b")}
    wal = {(pt, arm): [] for pt in points for arm in ("arm_a", "arm_b")}
    rng = random.Random(a.seed)
    for rep in range(a.reps):
        for clients, batch in points:
            arms = ["arm_a", "arm_b"]
            rng.shuffle(arms)
            for arm in arms:
                script = scripts["one" if batch == 1 else "batch"]
                jobs_s, wal_per_job = run(arm, script, clients, batch, a.duration)
                results[((clients, batch), arm)].append(jobs_s)
                wal[((clients, batch), arm)].append(wal_per_job)
                # the next run starts from the same footing
                if a.outcome == "sent":
                    top_up(arm, a.backlog)
                else:
                    psql(arm, "VACUUM send_jobs")
        print(f"== repetition {rep + 1} of {a.reps} done", flush=True)
    print(f"\nA = {a.a_version} from {a.a_lib}, B = {b_version} installed; outcome {a.outcome}; {a.backlog} jobs, "
          f"{a.duration} s runs, {a.reps} repetitions, interleaved\n")
    print("| clients | batch | A jobs/s (median, range) | B jobs/s (median, range) | B/A "
          "| A WAL B/job | B WAL B/job |")
    print("|---|---|---|---|---|---|---|")
    for clients, batch in points:
        ra, rb = results[((clients, batch), "arm_a")], results[((clients, batch), "arm_b")]
        ma, mb = statistics.median(ra), statistics.median(rb)
        wa, wb = statistics.median(wal[((clients, batch), "arm_a")]), statistics.median(wal[((clients, batch), "arm_b")])
        print(f"| {clients} | {batch} | {ma:,.0f} ({min(ra):,.0f}-{max(ra):,.0f}) | "
              f"{mb:,.0f} ({min(rb):,.0f}-{max(rb):,.0f}) | {mb / ma:.3f} | {wa:,.0f} | {wb:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
