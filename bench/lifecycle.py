#!/usr/bin/env python3
"""The lifecycle benchmark: what history, wake-ups and the stats cost, each against a
baseline measured in the same run, interleaved.

Three measurements, in one throwaway cluster (bench/lifecycle.sh runs this inside
tests/cluster.py):

  history  Claim + finalize ('sent': every job finishes, with its event) in two
           databases that differ only in history: `empty`, and `history`, which holds
           --history finished jobs with their events (10,000,000 by default). Both get the
           same backlog once, before the first run (--backlog, enough for every run);
           runs alternate in a shuffled order within each repetition. Reports jobs/s
           (median, range) and history/empty, and the table and index sizes.
  notify   Enqueue throughput into a queue with wake-ups on and one with them off (same
           database, runs interleaved), one job per transaction and 10 per transaction.
  stats    sendjobs_stats() on a --stats-backlog pending backlog (1,000,000) and
           --stats-events jobs finished in the last 5 minutes, beside the history: the
           time of each of --stats-calls calls (median, p95, max), the error of its
           estimates against exact counts, and the plan of one (EXPLAIN ANALYZE of the
           statement it runs).

Each section is printed as soon as it is measured and added to
bench/results/<name>/report.md; runs.csv holds one row per pgbench run, stats.csv the
time of each sendjobs_stats() call, sql/ the scripts that ran.

    python3 bench/lifecycle.py [--history 10000000] [--duration 5] [--reps 5]
"""

import argparse
import csv
import random
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402  (bench/common.py)
from common import REPO, psql, spread  # noqa: E402

CYCLE = {
    1: """SELECT id, claim_generation AS generation FROM sendjobs_claim(1, '1 minute') \\gset
SELECT sendjobs_finalize(:id, :generation, 'sent');
""",
    "batch": """SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations
  FROM sendjobs_claim(:batch, '1 minute') \\gset
SELECT count(*) FROM sendjobs_finalize_batch(:ids::int8[], :generations::int8[], 'sent');
""",
}

ENQUEUE = {
    1: "SELECT sendjobs_enqueue('{}', :queue);\n",
    10: "SELECT count(sendjobs_enqueue('{}', :queue)) FROM generate_series(1, 10);\n",
}


class Runs:
    """runs.csv of the run's folder: one row per pgbench run."""

    def __init__(self, folder):
        self.file = open(folder / "runs.csv", "w", newline="")
        self.out = csv.writer(self.file)
        self.out.writerow(["section", "rep", "clients", "per_txn", "arm", "jobs_s"])

    def pgbench(self, section, rep, db, script, clients, per_txn, arm, duration, variables):
        """jobs/s of one run (pgbench's tps x jobs per transaction), recorded."""
        jobs_s = common.pgbench(db, script, clients, duration, variables, check=True)["tps"] * per_txn
        self.out.writerow([section, rep + 1, clients, per_txn, arm, round(jobs_s, 1)])
        self.file.flush()
        return jobs_s


def write_scripts(folder):
    return {
        (kind, key): common.write_script(folder, f"{kind}-{key}.sql", text)
        for kind, texts in (("cycle", CYCLE), ("enqueue", ENQUEUE))
        for key, text in texts.items()
    }


def sizes(db):
    rows = psql(
        db,
        """
        SELECT c.relname, pg_size_pretty(pg_relation_size(c.oid)), pg_relation_size(c.oid)
          FROM pg_class c
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i')
           AND (c.relname LIKE 'send_job%' OR c.relname LIKE 'sendjobs_%')
         ORDER BY pg_relation_size(c.oid) DESC""",
        capture=True,
    )
    return [line.split("|") for line in rows.splitlines()]


def fill_history(db, count):
    """`count` jobs that finished two days ago, with their events, as a finished history
    looks after months of work (the ids come first, as old work has the low ids). They
    go where finished jobs go, send_jobs_finished."""
    step = 1_000_000
    for start in range(0, count, step):
        n = min(step, count - start)
        psql(
            db,
            f"""
            WITH jobs AS (
                INSERT INTO send_jobs_finished (payload, queue, status, attempts, claim_generation,
                                                next_attempt_at, claimed_at, finished_at, created_at)
                SELECT jsonb_build_object('n', g), 'default', 'sent', 1, 1,
                       now() - interval '2 days', now() - interval '2 days',
                       now() - interval '2 days', now() - interval '2 days'
                  FROM generate_series(1, {n}) g
                RETURNING id, queue, finished_at)
            INSERT INTO send_job_events (job_id, kind, claim_generation, created_at, queue)
            SELECT id, 'sent', 1, finished_at, queue FROM jobs""",
        )
        print(f"   history: {start + n:,} of {count:,}", flush=True)
    for table in common.queue_tables(db):
        psql(db, f"VACUUM ANALYZE {table}")


def add_backlog(db, count):
    """`count` due jobs, by direct INSERT (the bench's own setup, not what it measures)."""
    psql(
        db,
        f"INSERT INTO send_jobs (payload, next_attempt_at) "
        f"SELECT '{{}}', now() - interval '1 hour' FROM generate_series(1, {count})",
    )


def history_runs(a, scripts, rng, runs, measure=True):
    """The history measurement; with measure=False, only the `history` database it fills
    (the stats measurement runs beside that history)."""
    for db in ("empty", "history"):
        psql("postgres", f"CREATE DATABASE {db}")
        psql(db, "CREATE EXTENSION sendjobs")
    print(f"== filling {a.history:,} finished jobs into `history`", flush=True)
    started = time.monotonic()
    fill_history("history", a.history)
    print(f"   done in {time.monotonic() - started:.0f} s", flush=True)
    if not measure:
        return []
    points = [(c, b) for c in map(int, a.clients.split(",")) for b in map(int, a.batches.split(","))]
    results = {(pt, db): [] for pt in points for db in ("empty", "history")}
    # One backlog for every run, added before the first: nothing is deleted between runs,
    # so the only difference between the arms is the finished history (and what it costs
    # autovacuum, which runs as configured in both).
    for db in ("empty", "history"):
        add_backlog(db, a.backlog)
        psql(db, "VACUUM (FREEZE, ANALYZE)")
        if a.vacuum_between_reps:
            for table in common.queue_tables(db):
                psql(db, f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
    for rep in range(a.reps):
        if a.vacuum_between_reps:
            for db in ("empty", "history"):
                psql(db, "VACUUM " + ", ".join(common.queue_tables(db)))
        for clients, batch in points:
            arms = ["empty", "history"]
            rng.shuffle(arms)
            for db in arms:
                script = scripts[("cycle", 1 if batch == 1 else "batch")]
                results[((clients, batch), db)].append(
                    runs.pgbench("history", rep, db, script, clients, batch, db, a.duration, {"batch": batch})
                )
        print(f"== history: repetition {rep + 1} of {a.reps} done", flush=True)
    lines = [
        f"Claim + finalize ('sent'), {a.duration}-s runs x {a.reps}, interleaved; "
        f"a backlog of {a.backlog:,} due jobs before the first run, none added or deleted "
        f"between runs; `history` holds {a.history:,} finished jobs and their events "
        f"(frozen)."
        + (
            " Autovacuum off for the queue tables; VACUUM of both before each repetition, outside the timed runs."
            if a.vacuum_between_reps
            else " Autovacuum as configured."
        ),
        "",
        "| clients | batch | empty: jobs/s (median, range) | history: jobs/s (median, range) | history/empty |",
        "|---|---|---|---|---|",
    ]
    for clients, batch in points:
        e, h = results[((clients, batch), "empty")], results[((clients, batch), "history")]
        lines.append(
            f"| {clients} | {batch} | {spread(e)} | {spread(h)} | {statistics.median(h) / statistics.median(e):.3f} |"
        )
    lines += ["", "Sizes in `history` after the runs:", "", "| relation | size |", "|---|---|"]
    lines += [f"| {name} | {pretty} |" for name, pretty, _ in sizes("history")]
    return lines


def notify_runs(a, scripts, rng, runs):
    psql("postgres", "CREATE DATABASE wakeup")
    psql("wakeup", "CREATE EXTENSION sendjobs")
    psql("wakeup", "SELECT sendjobs_notify('on', true), sendjobs_notify('off', false)")
    points = [(c, n) for c in map(int, a.clients.split(",")) for n in (1, 10)]
    results = {(pt, q): [] for pt in points for q in ("on", "off")}
    for rep in range(a.reps):
        for clients, per_txn in points:
            queues = ["on", "off"]
            rng.shuffle(queues)
            for queue in queues:
                results[((clients, per_txn), queue)].append(
                    runs.pgbench(
                        "notify",
                        rep,
                        "wakeup",
                        scripts[("enqueue", per_txn)],
                        clients,
                        per_txn,
                        f"notify {queue}",
                        a.duration,
                        {"queue": queue},
                    )
                )
            psql("wakeup", "TRUNCATE send_jobs CASCADE")
        print(f"== notify: repetition {rep + 1} of {a.reps} done", flush=True)
    lines = [
        f"Enqueue, {a.duration}-s runs x {a.reps}, interleaved; no session listens.",
        "",
        "| clients | jobs per transaction | notify off: jobs/s | notify on: jobs/s | on/off |",
        "|---|---|---|---|---|",
    ]
    for clients, per_txn in points:
        off, on = results[((clients, per_txn), "off")], results[((clients, per_txn), "on")]
        lines.append(
            f"| {clients} | {per_txn} | {spread(off)} | {spread(on)} | "
            f"{statistics.median(on) / statistics.median(off):.3f} |"
        )
    return lines


EXACT_STATS = """
    WITH pending AS (
        SELECT queue, count(*) FILTER (WHERE next_attempt_at <= clock_timestamp()) AS ready,
               count(*) FILTER (WHERE next_attempt_at > clock_timestamp()) AS scheduled
          FROM send_jobs WHERE status = 'pending' GROUP BY queue),
    events AS (
        SELECT queue, count(*) FILTER (WHERE kind = 'sent') AS sent_5m,
               count(*) FILTER (WHERE kind = 'failed') AS failed_5m
          FROM send_job_events WHERE created_at > clock_timestamp() - interval '5 minutes'
         GROUP BY queue)
    SELECT queue, p.ready, p.scheduled, e.sent_5m, e.failed_5m
      FROM pending p FULL JOIN events e USING (queue)"""
ESTIMATED_COLUMNS = ("ready", "scheduled", "sent_5m", "failed_5m")


def stats_runs(a, folder):
    """sendjobs_stats beside the history: a --stats-backlog pending backlog in 4 queues
    (a third of it due, the rest due over the next hours), 200 jobs in flight, and
    --stats-events jobs finished over the last 5 minutes (1 in 50 failed). Each call is
    timed by the client and followed by an exact count of the same figures (read within
    a second of it), so that the estimates' error is measured too."""
    db = "history"
    psql(db, "DELETE FROM ONLY send_jobs WHERE status = 'pending'")
    psql(
        db,
        f"INSERT INTO send_jobs (payload, queue, next_attempt_at) "
        f"SELECT '{{}}', 'q' || (g % 4), now() - interval '1 hour' + g * interval '10 ms' "
        f"  FROM generate_series(1, {a.stats_backlog}) g",
    )
    psql(db, "SELECT count(*) FROM sendjobs_claim(200, '1 hour')")
    events = a.stats_events
    # Since 0.3.0 a finished row records the transaction that finished it (event_xid), and
    # sendjobs_stats finds the window and samples it by that: one INSERT would give all of
    # them one xid, which no queue does. As workers finish them: 10 jobs a transaction,
    # every other xid a claim's.
    has_xid = (
        psql(
            db,
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'send_jobs_finished'::regclass"
            " AND attname = 'event_xid'",
            capture=True,
        ).strip()
        == "1"
    )
    xid_column, xid_value = (
        (", event_xid", ", ((SELECT pg_current_xact_id()::text::int8) + 2 * (g / 10))::text::xid8")
        if has_xid
        else ("", "")
    )
    psql(
        db,
        f"""
        WITH jobs AS (
            INSERT INTO send_jobs_finished (payload, queue, status, attempts, claim_generation,
                                            next_attempt_at, claimed_at, finished_at{xid_column})
            SELECT '{{}}', 'q' || (g % 4), CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'sent' END,
                   1, 1, now(), now(), now() - ({events} - g) * interval '300 s' / {events}{xid_value}
              FROM generate_series(1, {events}) g
            RETURNING id, queue, status, finished_at)
        INSERT INTO send_job_events (job_id, kind, claim_generation, created_at, queue)
        SELECT id, status, 1, finished_at, queue FROM jobs ORDER BY id""",
    )
    for table in common.queue_tables(db):
        psql(db, f"VACUUM ANALYZE {table}")
    conn = common.Db(db).conn
    times, errors, estimated = [], {c: [] for c in ESTIMATED_COLUMNS}, 0
    with conn.cursor() as cur:
        for _ in range(a.stats_calls):
            started = time.perf_counter()
            cur.execute(f"SELECT queue, estimated, {', '.join(ESTIMATED_COLUMNS)} FROM sendjobs_stats()")
            got = cur.fetchall()
            times.append((time.perf_counter() - started) * 1000)
            cur.execute(EXACT_STATS)
            exact = {r[0]: r[1:] for r in cur.fetchall()}
            for queue, flagged, *values in got:
                estimated += bool(flagged)
                for column, value, truth in zip(ESTIMATED_COLUMNS, values, exact.get(queue, ())):
                    if truth:
                        errors[column].append(abs(value - truth) / truth)
    conn.close()
    with open(folder / "stats.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["call", "ms"])
        out.writerows([i + 1, round(ms, 3)] for i, ms in enumerate(times))
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    text = "\n".join(
        line
        for line in (REPO / "sql" / "statements" / "stats.sql").read_text().splitlines()
        if not line.lstrip().startswith("--")
    )
    # The plan the function runs: the statement prepared with its parameter, generic plan,
    # no parallel workers, as src/machinery/spi_plans.rs runs it (pasting clock_timestamp()
    # in for $1 would make the BRIN index unusable: volatile); $2 is send_jobs' oid.
    statement = text.replace("@extschema@", "public")
    try:
        plan = psql(
            db,
            f"PREPARE stats_probe(timestamptz, oid) AS {statement};\n"
            "SET plan_cache_mode = force_generic_plan;\n"
            "SET max_parallel_workers_per_gather = 0;\n"
            "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) "
            "EXECUTE stats_probe(clock_timestamp(), 'send_jobs'::regclass)",
            capture=True,
        )
    except subprocess.CalledProcessError as e:  # the tree is not what is installed
        plan = (
            f"no plan: this tree's sql/statements/stats.sql does not run against the installed "
            f"extension ({e.stderr.strip()})"
        )
    error_lines = ["| column | median error | p95 error | max error |", "|---|---|---|---|"]
    for column in ESTIMATED_COLUMNS:
        e = sorted(errors[column])
        if e:
            q95 = e[min(len(e) - 1, int(round(0.95 * (len(e) - 1))))]
            error_lines.append(f"| {column} | {statistics.median(e):.1%} | {q95:.1%} | {e[-1]:.1%} |")
    return (
        [
            f"sendjobs_stats() with {a.stats_backlog:,} pending jobs (4 queues), 200 in flight, "
            f"{events:,} jobs finished in the last 5 minutes (2% failed) and {a.history:,} "
            f"finished long ago, after VACUUM ANALYZE; {a.stats_calls} calls, each timed by the "
            f"client (round trip included): median {statistics.median(times):.1f} ms, "
            f"p95 {p95:.1f} ms, max {times[-1]:.1f} ms. Rows flagged `estimated`: {estimated} "
            f"of {a.stats_calls * 4}.",
            "",
            "Error of each figure against an exact count read right after the call (over "
            "every call and queue; the window slides and jobs fall due in between, by less "
            "than 0.1%):",
            "",
        ]
        + error_lines
        + ["", "```", plan, "```"]
    )


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--history", type=int, default=10_000_000)
    p.add_argument(
        "--backlog", type=int, default=2_000_000, help="due jobs added once, enough for every run of the grid"
    )
    p.add_argument("--clients", default="1,4")
    p.add_argument("--batches", default="1,10")
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--stats-backlog", type=int, default=1_000_000)
    p.add_argument("--stats-calls", type=int, default=30)
    p.add_argument(
        "--stats-events", type=int, default=300_000, help="jobs finished over the last 5 minutes (1,000 jobs/s)"
    )
    p.add_argument("--only", default="history,notify,stats")
    p.add_argument(
        "--vacuum-between-reps",
        action="store_true",
        help="autovacuum off for the queue tables, VACUUM before each repetition "
        "(outside the timed runs): the hot path alone, without vacuum's share",
    )
    p.add_argument("--seed", type=int, default=1)
    common.add_name_argument(p, "lifecycle")
    p.add_argument("--command", default="bash bench/lifecycle.sh " + " ".join(argv), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    rng = random.Random(a.seed)
    folder = common.results_dir("lifecycle", a.name)
    meta = common.run_meta(a.command)
    common.write_meta(folder, meta)
    scripts = write_scripts(folder)
    runs = Runs(folder)
    only = a.only.split(",")
    report = folder / "report.md"
    report.write_text("\n".join(["# The lifecycle benchmark", ""] + common.header_lines(meta) + ["", ""]))

    def section(title, lines):  # printed and written as soon as it is measured
        text = "\n".join([f"## {title}", ""] + lines + ["", ""])
        print(text, flush=True)
        with open(report, "a") as f:
            f.write(text)

    if "history" in only:
        section("Throughput with a finished history", history_runs(a, scripts, rng, runs))
    elif "stats" in only:
        history_runs(a, scripts, rng, runs, measure=False)
    if "notify" in only:
        section("Enqueue with wake-ups on and off", notify_runs(a, scripts, rng, runs))
    if "stats" in only:
        section("sendjobs_stats", stats_runs(a, folder))
    runs.file.close()
    print(f"== lifecycle: written to {folder}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
