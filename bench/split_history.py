#!/usr/bin/env python3
"""Would `split` meet the history target? Claim + finish throughput with a finished
history against an empty table, for today's layout and for `split`, in plain SQL (the
cycles of bench/finalize_options.py: keep_sql, and split, whose finished jobs go to
send_jobs_finished, a child table of send_jobs). Four databases in one cluster:

  keep_empty, keep_history    today's layout; the history in send_jobs itself
  split_empty, split_history  split; the history in send_jobs_finished

Each history database holds --history finished jobs (10,000,000) with their events
(bench/lifecycle.py's fill); every database gets the same --backlog of due jobs once,
before the first run; runs interleave in a shuffled order within each repetition.
Reports jobs/s (median, range) and history/empty per layout. A prototype's measurement
(plain SQL sent by pgbench), not the extension's.

    python3 bench/split_history.py [--history 10000000] [--backlog 3000000]
                                   [--points 1x1,1x10,4x10] [--duration 15] [--reps 5]
"""

import argparse
import random
import statistics
import sys
import time

from finalize_options import CLAIMS, FINISH, FINISHED_TABLE, write_scripts
from lifecycle import add_backlog, fill_history, pgbench, psql, spread

DATABASES = ("keep_empty", "keep_history", "split_empty", "split_history")


def move_history_to_child(db):
    """The history filled into send_jobs, moved into send_jobs_finished, as the split
    design would have put it there."""
    psql(db, """WITH moved AS (DELETE FROM ONLY send_jobs WHERE status = 'sent' RETURNING *)
                INSERT INTO send_jobs_finished SELECT * FROM moved""")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--history", type=int, default=10_000_000)
    p.add_argument("--backlog", type=int, default=3_000_000)
    p.add_argument("--points", default="1x1,1x10,4x10", help="clients x batch, comma-separated")
    p.add_argument("--duration", type=int, default=15)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    rng = random.Random(a.seed)
    scripts = write_scripts({layout: CLAIMS[layout] + FINISH[layout] for layout in ("keep_sql", "split")},
                            "sendjobs-split-history.")
    started = time.monotonic()
    for db in DATABASES:
        psql("postgres", f"CREATE DATABASE {db}")
        psql(db, "CREATE EXTENSION sendjobs")
        if db.startswith("split"):
            psql(db, FINISHED_TABLE)
        if db.endswith("history"):
            fill_history(db, a.history)
            if db.startswith("split"):
                move_history_to_child(db)
        add_backlog(db, a.backlog)
        psql(db, "VACUUM (FREEZE, ANALYZE)")
        print(f"== {db} ready after {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    points = [tuple(map(int, pt.split("x"))) for pt in a.points.split(",")]
    results = {(pt, db): [] for pt in points for db in DATABASES}
    for rep in range(a.reps):
        for clients, batch in points:
            order = list(DATABASES)
            rng.shuffle(order)
            for db in order:
                script = scripts["split" if db.startswith("split") else "keep_sql"]
                tps = pgbench(db, script, clients, a.duration, {"batch": batch})
                results[((clients, batch), db)].append(tps * batch)
        print(f"== repetition {rep + 1} of {a.reps} done", file=sys.stderr, flush=True)
    print(f"Claim n + finish n as sent, plain SQL; {a.duration}-s runs x {a.reps}, interleaved; a backlog "
          f"of {a.backlog:,} due jobs before the first run; the history databases hold {a.history:,} "
          "finished jobs and their events (frozen). Autovacuum as the server is configured.\n")
    print("| clients | batch | keep: empty | keep: history | history/empty | split: empty | split: history "
          "| history/empty |")
    print("|---|---|---|---|---|---|---|---|")
    for pt in points:
        r = {db: results[(pt, db)] for db in DATABASES}
        m = {db: statistics.median(v) for db, v in r.items()}
        print(f"| {pt[0]} | {pt[1]} | {spread(r['keep_empty'])} | {spread(r['keep_history'])} | "
              f"{m['keep_history'] / m['keep_empty']:.2f} | {spread(r['split_empty'])} | "
              f"{spread(r['split_history'])} | {m['split_history'] / m['split_empty']:.2f} |")
    print("\nSizes after the runs (MB): " + "; ".join(
        f"{db}: " + psql(db, """SELECT string_agg(relname || ' ' || pg_relation_size(oid) / 1048576, ', '
                                        ORDER BY pg_relation_size(oid) DESC)
                                  FROM pg_class WHERE relname LIKE 'send_job%' AND relkind IN ('r', 'i')
                                   AND pg_relation_size(oid) > 10485760""", capture=True)
        for db in DATABASES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
