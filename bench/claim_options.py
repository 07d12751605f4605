#!/usr/bin/env python3
"""What a claim that could be a HOT update would buy: the cycle (claim n, finish the n
jobs as sent) in three arms, each in its own database, runs interleaved.

  today      sendjobs_claim and sendjobs_finalize_batch, as they are.
  today_sql  the same work in plain SQL, on the same indexes: the claim's two
             index-ordered branches (pending rows by send_jobs_pending_idx, expired leases
             by send_jobs_lease_idx) merged, then a fenced UPDATE and the event. The
             yardstick of one_scan.
  one_scan   one index of live jobs, send_jobs_live_idx (next_attempt_at, id) WHERE
             finished_at IS NULL, in place of the two pending indexes and the lease
             index; the claim is one ordered scan of it that takes a row pending, or in
             flight with an expired lease, and steps over the rows in flight (the heap
             says which). No column of any index changes at a claim, so the claim can be
             a HOT update: no new index entry, no dead one where the claim order starts.
             The contract's order is kept (an expired lease keeps its place by
             next_attempt_at). The cost: every claim steps over the jobs in flight ahead
             of the first due one.

Each point also runs with --standing jobs held in flight under an hour's lease at the
front of the queue (as slow sends hold them), which every one_scan claim steps over.
Reports jobs/s (median, range), the ratios to today_sql, WAL bytes per job, and the share
of HOT updates. Plain SQL arms are sent by pgbench as prepared statements: a ceiling for
the design, not an implementation (no per-claim results, no stamps).

    python3 bench/claim_options.py [--clients 1,4] [--batches 10,100] [--standing 0,2000]
                                   [--duration 5] [--reps 3]
"""

import argparse
import random
import statistics
import sys

from finalize_options import FINISH as FINALIZE_OPTIONS_FINISH, grid_arguments, top_up, write_scripts
from lifecycle import pgbench, psql, spread  # bench/lifecycle.py: the same helpers

ARMS = ("today", "today_sql", "one_scan")

UPDATE_CLAIMED = """claimed AS (
    UPDATE send_jobs AS job
       SET status = 'in_flight', attempts = job.attempts + 1, claimed_at = now(),
           lease_expires_at = now() + interval '60 seconds', claim_generation = job.claim_generation + 1
      FROM picked WHERE job.id = picked.id
    RETURNING job.*)
SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations FROM claimed \\gset
"""
FINISH = FINALIZE_OPTIONS_FINISH["keep_sql"]  # the plain finish of bench/finalize_options.py
SCRIPTS = {
    "today": """SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations
  FROM sendjobs_claim(:batch, '60 seconds') \\gset
SELECT count(*) FROM sendjobs_finalize_batch(:ids::int8[], :generations::int8[], 'sent');
""",
    "today_sql": """WITH pending AS MATERIALIZED (
    SELECT id, next_attempt_at FROM send_jobs
     WHERE status = 'pending' AND next_attempt_at <= now()
     ORDER BY next_attempt_at, id LIMIT :batch FOR UPDATE SKIP LOCKED),
expired AS MATERIALIZED (
    SELECT id, next_attempt_at FROM send_jobs
     WHERE status = 'in_flight' AND lease_expires_at <= now() AND lease_expires_at IS NOT NULL
     ORDER BY next_attempt_at, id LIMIT :batch FOR UPDATE SKIP LOCKED),
picked AS MATERIALIZED (
    SELECT id, next_attempt_at FROM pending UNION ALL SELECT id, next_attempt_at FROM expired
    ORDER BY next_attempt_at, id LIMIT :batch),
""" + UPDATE_CLAIMED + FINISH,
    "one_scan": """WITH picked AS MATERIALIZED (
    SELECT id FROM send_jobs
     WHERE finished_at IS NULL AND next_attempt_at <= now()
       AND (status = 'pending' OR lease_expires_at <= now())
     ORDER BY next_attempt_at, id LIMIT :batch FOR UPDATE SKIP LOCKED),
""" + UPDATE_CLAIMED + FINISH,
}
ONE_SCAN_INDEXES = """
DROP INDEX send_jobs_pending_idx, send_jobs_pending_queue_idx, send_jobs_lease_idx;
CREATE INDEX send_jobs_live_idx ON send_jobs (next_attempt_at, id) WHERE finished_at IS NULL;
"""


def stand(db, standing):
    """`standing` jobs in flight under an hour's lease, ahead of every due job."""
    psql(db, f"INSERT INTO send_jobs (payload, next_attempt_at) "
             f"SELECT '{{\"n\": 1}}', now() - interval '1 day' FROM generate_series(1, {standing})")
    psql(db, f"""UPDATE send_jobs SET status = 'in_flight', attempts = 1, claimed_at = now(),
                        lease_expires_at = now() + interval '1 hour', claim_generation = 1
                  WHERE next_attempt_at < now() - interval '12 hours'""")


def hot_share(db):
    return psql(db, "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'send_jobs'",
                capture=True).split("|")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    grid_arguments(p)
    p.add_argument("--standing", default="0,2000")
    a = p.parse_args(argv)
    rng = random.Random(a.seed)
    scripts = write_scripts(SCRIPTS, "sendjobs-claim-options.")
    standings = [int(s) for s in a.standing.split(",")]
    db = {}
    for standing in standings:
        for arm in ARMS:
            db[(standing, arm)] = f"{arm}_{standing}"
            psql("postgres", f"CREATE DATABASE {arm}_{standing}")
            psql(db[(standing, arm)], "CREATE EXTENSION sendjobs")
            if arm == "one_scan":
                psql(db[(standing, arm)], ONE_SCAN_INDEXES)
            stand(db[(standing, arm)], standing)
    points = [(s, c, b) for s in standings for c in map(int, a.clients.split(","))
              for b in map(int, a.batches.split(","))]
    jobs_s = {(pt, arm): [] for pt in points for arm in ARMS}
    wal = {(pt, arm): [] for pt in points for arm in ARMS}
    hot = {(pt, arm): [] for pt in points for arm in ARMS}
    for rep in range(a.reps):
        for standing, clients, batch in points:
            arms = list(ARMS)
            rng.shuffle(arms)
            for arm in arms:
                name = db[(standing, arm)]
                top_up(name, a.backlog)
                before = psql(name, "SELECT pg_current_wal_lsn()", capture=True)
                upd0, hot0 = map(int, hot_share(name))
                tps = pgbench(name, scripts[arm], clients, a.duration, {"batch": batch})
                written = int(psql(name, f"SELECT pg_current_wal_lsn() - '{before}'::pg_lsn", capture=True))
                psql(name, "SELECT pg_stat_force_next_flush()")
                upd1, hot1 = map(int, hot_share(name))
                jobs = tps * batch
                pt = (standing, clients, batch)
                jobs_s[(pt, arm)].append(jobs)
                wal[(pt, arm)].append(written / (jobs * a.duration))
                hot[(pt, arm)].append((hot1 - hot0) / max(1, upd1 - upd0))
        print(f"== claim options: repetition {rep + 1} of {a.reps} done", file=sys.stderr, flush=True)
    print(f"Claim n, then finish the n jobs as sent; {a.duration}-s runs x {a.reps}, arms interleaved "
          f"in a shuffled order, each in its own database with at least {a.backlog:,} due jobs before "
          "every run. WAL per job: the cluster's WAL during the run over the jobs finished. HOT: the "
          "share of send_jobs' updates that were HOT.\n")
    print("| in flight ahead | clients | batch | today: jobs/s | today_sql | one_scan | today/today_sql "
          "| one_scan/today_sql | WAL B/job today_sql | one_scan | HOT today_sql | one_scan |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for pt in points:
        med = {arm: statistics.median(jobs_s[(pt, arm)]) for arm in ARMS}
        print(f"| {pt[0]:,} | {pt[1]} | {pt[2]} | {spread(jobs_s[(pt, 'today')])} | "
              f"{spread(jobs_s[(pt, 'today_sql')])} | {spread(jobs_s[(pt, 'one_scan')])} | "
              f"{med['today'] / med['today_sql']:.2f} | {med['one_scan'] / med['today_sql']:.2f} | "
              f"{statistics.median(wal[(pt, 'today_sql')]):,.0f} | {statistics.median(wal[(pt, 'one_scan')]):,.0f} | "
              f"{statistics.median(hot[(pt, 'today_sql')]):.0%} | {statistics.median(hot[(pt, 'one_scan')]):.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
