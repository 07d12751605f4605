#!/usr/bin/env python3
"""What a different finalize would buy: the cycle (sendjobs_claim, then finish the
batch as sent) with three ways to finish, each in its own database, runs interleaved.

  keep    sendjobs_finalize_batch, as it is: the job row stays in send_jobs (status
          sent) and its event is staged in send_job_events.
  move    what a contract change would do (the performance issue's question): the
          fenced DELETE of the job row, and one event row that carries the job's
          history (payload, attempts, times, last error) into an outbox with the same
          indexes as send_job_events. Plain SQL, sent by the client: a ceiling for that
          design, not an implementation (no business-row stamp, no per-claim results).
  delete  the fenced DELETE alone, no event: pgmq's read+delete does this work.
  keep_sql  keep's work in plain SQL, with a plain claim (pending rows only, the same
          index order): the yardstick of split.
  split   the contract kept, finished jobs out of send_jobs' own indexes: the fenced
          DELETE FROM ONLY send_jobs, the job row inserted into send_jobs_finished (a
          child table, INHERITS send_jobs, so that SELECT ... FROM send_jobs still shows
          it), and the same event as keep. The claim of keep_sql, FROM ONLY send_jobs.
          Plain SQL, like move: what the hot path of that design would cost.

Reports jobs/s (median, range) and WAL bytes per job per arm, and move/keep, at each
point. bench/finalize_options.sh runs it in a throwaway cluster.

    python3 bench/finalize_options.py [--clients 1,4] [--batches 10,100] [--duration 5] [--reps 3]
"""

import argparse
import os
import random
import statistics
import sys
import tempfile

from lifecycle import pgbench, psql, spread  # bench/lifecycle.py: the same helpers
ARMS = ("keep", "move", "delete", "keep_sql", "split")
CLAIM = ("SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations\n"
         "  FROM sendjobs_claim(:batch, '60 seconds') \\gset\n")
# keep_sql and split: the claim's pending branch and its update, in plain SQL. ONLY: in
# split, send_jobs has a child, which the claim must not read.
PLAIN_CLAIM = """WITH picked AS MATERIALIZED (
    SELECT id FROM ONLY send_jobs
     WHERE status = 'pending' AND next_attempt_at <= now()
     ORDER BY next_attempt_at, id LIMIT :batch FOR UPDATE SKIP LOCKED),
claimed AS (
    UPDATE ONLY send_jobs AS job
       SET status = 'in_flight', attempts = job.attempts + 1, claimed_at = now(),
           lease_expires_at = now() + interval '60 seconds', claim_generation = job.claim_generation + 1
      FROM picked WHERE job.id = picked.id
    RETURNING job.*)
SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations FROM claimed \\gset
"""
CLAIMS = {"keep_sql": PLAIN_CLAIM, "split": PLAIN_CLAIM}
FINISH = {
    "keep": "SELECT count(*) FROM sendjobs_finalize_batch(:ids::int8[], :generations::int8[], 'sent');\n",
    "move": """WITH claim AS (
    SELECT * FROM unnest(:ids::int8[], :generations::int8[]) AS c(id, generation)),
done AS (
    DELETE FROM send_jobs AS job USING claim
     WHERE job.id = claim.id AND job.status = 'in_flight' AND job.claim_generation = claim.generation
    RETURNING job.*)
INSERT INTO moved_events (job_id, transaction_id, kind, claim_generation, created_at, queue, payload,
                          attempts, max_attempts, job_created_at, claimed_at, last_error, idempotency_key)
SELECT id, transaction_id, 'sent', claim_generation, now(), queue, payload, attempts, max_attempts,
       created_at, claimed_at, last_error, idempotency_key
  FROM done;
""",
    "keep_sql": """WITH claim AS (
    SELECT * FROM unnest(:ids::int8[], :generations::int8[]) AS c(id, generation)),
done AS (
    UPDATE send_jobs AS job
       SET status = 'sent', finished_at = now(), lease_expires_at = NULL
      FROM claim
     WHERE job.id = claim.id AND job.status = 'in_flight' AND job.claim_generation = claim.generation
    RETURNING job.id, job.transaction_id, job.claim_generation, job.queue)
INSERT INTO send_job_events (job_id, transaction_id, kind, claim_generation, created_at, queue)
SELECT id, transaction_id, 'sent', claim_generation, now(), queue FROM done;
""",
    "split": """WITH claim AS (
    SELECT * FROM unnest(:ids::int8[], :generations::int8[]) AS c(id, generation)),
done AS (
    DELETE FROM ONLY send_jobs AS job USING claim
     WHERE job.id = claim.id AND job.status = 'in_flight' AND job.claim_generation = claim.generation
    RETURNING job.*),
kept AS (
    INSERT INTO send_jobs_finished (id, queue, payload, transaction_id, idempotency_key, status, attempts,
                                    max_attempts, next_attempt_at, claimed_at, lease_expires_at,
                                    claim_generation, last_error, created_at, finished_at, redrive_of)
    SELECT id, queue, payload, transaction_id, idempotency_key, 'sent', attempts, max_attempts,
           next_attempt_at, claimed_at, NULL, claim_generation, last_error, created_at, now(), redrive_of
      FROM done)
INSERT INTO send_job_events (job_id, transaction_id, kind, claim_generation, created_at, queue)
SELECT id, transaction_id, 'sent', claim_generation, now(), queue FROM done;
""",
    "delete": """DELETE FROM send_jobs AS job
 USING unnest(:ids::int8[], :generations::int8[]) AS claim(id, generation)
 WHERE job.id = claim.id AND job.status = 'in_flight' AND job.claim_generation = claim.generation;
""",
}
# The outbox of the `move` arm: send_job_events' columns and indexes, plus the job's.
MOVED_EVENTS = """
CREATE TABLE moved_events (LIKE send_job_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS
                           INCLUDING INDEXES INCLUDING IDENTITY);
ALTER TABLE moved_events ADD COLUMN payload jsonb, ADD COLUMN attempts int,
    ADD COLUMN max_attempts int, ADD COLUMN job_created_at timestamptz,
    ADD COLUMN claimed_at timestamptz, ADD COLUMN last_error text, ADD COLUMN idempotency_key text;
"""
# The child of the split arm: every column and CHECK of send_jobs (inherited), its own
# primary key; no partial index (it holds finished jobs only).
FINISHED_TABLE = """
CREATE TABLE send_jobs_finished () INHERITS (send_jobs);
ALTER TABLE send_jobs_finished ADD PRIMARY KEY (id);
"""


def grid_arguments(p):
    """The options of an interleaved grid of short runs, shared by the prototype benches."""
    p.add_argument("--clients", default="1,4")
    p.add_argument("--batches", default="10,100")
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--backlog", type=int, default=300_000)
    p.add_argument("--seed", type=int, default=1)


def write_scripts(texts, prefix):
    """Each arm's pgbench script, written to a new folder: {arm: path}."""
    folder = tempfile.mkdtemp(prefix=prefix)
    paths = {}
    for arm, text in texts.items():
        paths[arm] = os.path.join(folder, f"{arm}.sql")
        with open(paths[arm], "w") as f:
            f.write(text)
    return paths


def top_up(db, backlog):
    """At least `backlog` due jobs before a run (outside the timed part)."""
    missing = backlog - int(psql(db, "SELECT count(*) FROM ONLY send_jobs WHERE status = 'pending'", capture=True))
    if missing > 0:
        psql(db, f"INSERT INTO send_jobs (payload) SELECT '{{\"n\": 1}}' FROM generate_series(1, {missing})")
    psql(db, "VACUUM send_jobs")
    psql(db, "CHECKPOINT")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    grid_arguments(p)
    a = p.parse_args(argv)
    rng = random.Random(a.seed)
    scripts = write_scripts({arm: CLAIMS.get(arm, CLAIM) + FINISH[arm] for arm in ARMS},
                            "sendjobs-finalize-options.")
    for arm in ARMS:
        psql("postgres", f"CREATE DATABASE {arm}")
        psql(arm, "CREATE EXTENSION sendjobs")
    psql("move", MOVED_EVENTS)
    psql("split", FINISHED_TABLE)
    points = [(c, b) for c in map(int, a.clients.split(",")) for b in map(int, a.batches.split(","))]
    jobs_s = {(pt, arm): [] for pt in points for arm in ARMS}
    wal = {(pt, arm): [] for pt in points for arm in ARMS}
    for rep in range(a.reps):
        for clients, batch in points:
            arms = list(ARMS)
            rng.shuffle(arms)
            for arm in arms:
                top_up(arm, a.backlog)
                before = psql(arm, "SELECT pg_current_wal_lsn()", capture=True)
                tps = pgbench(arm, scripts[arm], clients, a.duration, {"batch": batch})
                written = int(psql(arm, f"SELECT pg_current_wal_lsn() - '{before}'::pg_lsn", capture=True))
                jobs = tps * batch
                jobs_s[((clients, batch), arm)].append(jobs)
                wal[((clients, batch), arm)].append(written / (jobs * a.duration))
        print(f"== finalize options: repetition {rep + 1} of {a.reps} done", file=sys.stderr, flush=True)
    print(f"Claim n (sendjobs_claim), then finish the n jobs as sent; {a.duration}-s runs x {a.reps}, "
          f"arms interleaved in a shuffled order, each in its own database with at least "
          f"{a.backlog:,} due jobs before every run. WAL per job is the database cluster's WAL "
          "during the run over the jobs it finished.\n")
    print("| clients | batch | " + " | ".join(f"{arm}: jobs/s" for arm in ARMS) + " | "
          + " | ".join(f"{arm}/keep" for arm in ARMS[1:]) + " | split/keep_sql | "
          + " | ".join(f"WAL B/job {arm}" for arm in ARMS) + " |")
    print("|" + "---|" * (2 + 2 * len(ARMS) + len(ARMS)))
    for pt in points:
        med = {arm: statistics.median(jobs_s[(pt, arm)]) for arm in ARMS}
        print(f"| {pt[0]} | {pt[1]} | " + " | ".join(spread(jobs_s[(pt, arm)]) for arm in ARMS) + " | "
              + " | ".join(f"{med[arm] / med['keep']:.2f}" for arm in ARMS[1:])
              + f" | {med['split'] / med['keep_sql']:.2f} | "
              + " | ".join(f"{statistics.median(wal[(pt, arm)]):,.0f}" for arm in ARMS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
