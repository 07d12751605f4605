#!/usr/bin/env python3
"""The console's page times on a large database (docs/console.md, "Page times"); not
part of the default test run.

    python3 tests/cluster.py run --name console-timing -c shared_buffers=1GB -- \\
        /usr/bin/python3 tests/console/timing.py [--history 10000000] [--backlog 1000000] \
        [--queues 1000] [--last-hour 200000] [--runs 20]

Fills the cluster's database as its superuser (the table owner), by INSERT ... SELECT
generate_series straight into the tables: a history of finished jobs, 97% sent, 2%
failed, 1% cancelled, over --queues queues: the last --last-hour of them over the last
hour (one a few seconds old), ten to a transaction as batch finalizes write them, the
rest over the ten days before; a
pending backlog, a thousand jobs in flight, idempotency keys on the backlog, a few
redrives, a linked business table. Then prints the plan of every statement the console
runs (EXPLAIN ANALYZE, as the console's role) and fails if one reads send_jobs or
send_jobs_finished by a sequential scan; then starts the console (target/release or
target/debug, whichever is newer) and requests each page --runs times, reporting the
median and the range of its Server-Timing.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import psycopg2

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def connect(user=None):
    conn = psycopg2.connect(
        host=os.environ["PGHOST"],
        port=os.environ["PGPORT"],
        user=user or os.environ["PGUSER"],
        dbname=os.environ["PGDATABASE"],
    )
    conn.autocommit = True
    return conn


def run(cur, sql, *args):
    started = time.monotonic()
    cur.execute(sql, args or None)
    return time.monotonic() - started


def fill(cur, history, backlog, queues, recent):
    run(cur, "CREATE EXTENSION sendjobs")
    run(cur, "CREATE TABLE transactions (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending')")
    run(cur, "SELECT sendjobs_guard_terminal('transactions')")
    run(cur, "SELECT sendjobs_link_transactions('transactions', 'id', 'status')")
    run(cur, "CREATE ROLE console_admin LOGIN")
    run(cur, "SELECT sendjobs_grant('console_admin', 'monitor'), sendjobs_grant('console_admin', 'admin')")
    run(cur, "GRANT SELECT ON transactions TO console_admin")
    # The history: ids, creation and finish times grow together, from ten days and an hour
    # ago to an hour ago, then the last `recent` rows over the last hour. A finished row
    # records the transaction that finished it (event_xid), and sendjobs_stats finds its
    # 5-minute window and samples it by that: the last hour's rows are written ten to a
    # transaction, as batch finalizes write them, the rest in large INSERTs (a million
    # rows of one xid in the window would cost the stats a read of each).
    old = history - recent

    def insert(start, n):
        return run(
            cur,
            f"""
            INSERT INTO send_jobs_finished (queue, payload, transaction_id, status, attempts, max_attempts,
                next_attempt_at, claimed_at, claim_generation, last_error, created_at, finished_at, outcome)
            SELECT 'q' || (g / 100 % {queues}), '{{}}', 'tx-' || g,
                   CASE WHEN g % 100 < 97 THEN 'sent' WHEN g % 100 < 99 THEN 'failed' ELSE 'cancelled' END,
                   1, 5, t, t, 1,
                   CASE WHEN g % 100 BETWEEN 97 AND 98 THEN 'partner answered 503' END,
                   t, t + interval '2 seconds',
                   CASE WHEN g % 100 < 97 THEN 'sent' WHEN g % 100 < 99 THEN 'failed' END
              FROM generate_series({start + 1}, {start + n}) AS g,
                   LATERAL (SELECT CASE WHEN g <= {old}
                                        THEN now() - interval '1 hour' - interval '10 days' * (1 - g::float8 / {max(old, 1)})
                                        ELSE now() - interval '1 hour' * (1 - (g - {old})::float8 / {max(recent, 1)})
                                   END - interval '5 seconds' AS t) AS at""",
        )

    recent = min(recent, history)
    chunk = 1_000_000
    for start in range(0, history - recent, chunk):
        n = min(chunk, history - recent - start)
        took = insert(start, n)
        print(f"   history: {start + n:,} of {history:,} ({took:.0f} s)", flush=True)
    started = time.monotonic()
    for start in range(history - recent, history, 10):
        insert(start, min(10, history - start))
    print(
        f"   history: the last hour's {recent:,}, ten to a transaction ({time.monotonic() - started:.0f} s)", flush=True
    )
    # The backlog: pending, due over the last hour, with keys; then a thousand in flight.
    took = run(
        cur,
        f"""
        WITH jobs AS (
            INSERT INTO send_jobs (queue, payload, transaction_id, idempotency_key, next_attempt_at, created_at)
            SELECT 'q' || (g % {queues}), '{{}}', 'btx-' || g, 'key-' || g,
                   now() - interval '1 hour' * (1 - g::float8 / {backlog}),
                   now() - interval '1 hour' * (1 - g::float8 / {backlog})
              FROM generate_series(1, {backlog}) AS g
            RETURNING id, idempotency_key)
        INSERT INTO send_job_keys SELECT idempotency_key, id FROM jobs""",
    )
    print(f"   backlog: {backlog:,} pending ({took:.0f} s)", flush=True)
    run(cur, "SELECT count(*) FROM sendjobs_claim(1000, '1 hour')")
    run(cur, "INSERT INTO transactions SELECT 'tx-' || g FROM generate_series(1, 100000) AS g")
    # A few redrives of failed jobs of q7, one of them redriven twice over.
    cur.execute("SELECT id FROM send_jobs WHERE status = 'failed' AND queue = 'q7' ORDER BY finished_at DESC LIMIT 5")
    ids = [r[0] for r in cur.fetchall()]
    cur.execute("SELECT new_id FROM sendjobs_redrive(%s::bigint[])", (ids,))
    took = run(cur, "VACUUM ANALYZE")
    print(f"   vacuum analyze ({took:.0f} s)", flush=True)


def plans(cur, sample):
    """EXPLAIN ANALYZE of every statement of console/sql, as the console's role."""
    cur.execute("SET ROLE console_admin")
    cur.execute("SET search_path = pg_catalog, public")
    sql = lambda name: open(os.path.join(ROOT, "console", "sql", name)).read().replace("@extschema@", "public")
    cases = [
        ("stats.sql", ()),
        ("queue_limits.sql", (None,)),
        ("hour_chart.sql", ()),
        ("job.sql", (sample["finished"],)),
        ("job.sql", (sample["pending"],)),
        ("payload.sql", (sample["finished"],)),
        ("job_event.sql", (sample["finished"],)),
        ("redriven_as.sql", (sample["failed"],)),
        ("job_brief.sql", (sample["failed"],)),
        ("link.sql", ()),
        ("key_job.sql", ("key-500000",)),
        ("id_range.sql", ()),
        ("created_at_from.sql", (sample["finished"], "2020-01-01")),
        ("search.sql", (sample["high"], sample["high"] - 100000, None, None, None, None, None, 51)),
        ("search.sql", (sample["high"], sample["high"] - 100000, "q3", "failed", None, None, None, 51)),
        ("search.sql", (sample["high"], sample["high"] - 100000, None, None, "tx-42", None, None, 51)),
        ("failed.sql", ("q3", None, None, 51)),
        ("failed.sql", ("q3", sample["failed_at"], sample["failed"], 51)),
    ]
    seq = []
    for name, params in cases:
        # psycopg2 puts the parameters in as literals, like the console's bound values
        # of known types: the plan is the one the console's unnamed statements get. (A
        # statement without parameters is left as it is: link.sql has a $1 in a literal.)
        text = re.sub(r"\$(\d+)", "%s", sql(name)) if params else sql(name)
        ordered = [params[int(i) - 1] for i in re.findall(r"\$(\d+)", sql(name))] if params else []
        cur.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) " + text, ordered or None)
        plan = "\n".join(r[0] for r in cur.fetchall())
        print(f"--- {name} {params}\n{plan}\n", flush=True)
        if re.search(r"Seq Scan on (send_jobs|send_jobs_finished)\b", plan):
            seq.append(f"{name} {params}")
    cur.execute("RESET ROLE")
    return seq


def console(target):
    dsn = (
        f"host={os.environ['PGHOST']} port={os.environ['PGPORT']} user=console_admin dbname={os.environ['PGDATABASE']}"
    )
    env = dict(os.environ, SENDJOBS_CONSOLE_TOKEN="timing-token-0123456789", SENDJOBS_CONSOLE_DATABASE_URL=dsn)
    proc = subprocess.Popen(
        [target, "--listen", "127.0.0.1:18090"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(100):
        try:
            urllib.request.urlopen("http://127.0.0.1:18090/assets/console.css")
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the console did not start")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None


def server_time(path):
    opener = urllib.request.build_opener(NoRedirect)
    try:
        response = opener.open("http://127.0.0.1:18090" + path)
    except urllib.error.HTTPError as err:  # a redirect (the key look-up) answers 303
        response = err
    response.read()
    return float(re.search(r"dur=([0-9.]+)", response.headers["server-timing"]).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--history", type=int, default=10_000_000)
    parser.add_argument("--backlog", type=int, default=1_000_000)
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--last-hour", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=20)
    a = parser.parse_args()
    cur = connect().cursor()
    print(
        f"== filling {a.history:,} finished jobs ({a.last_hour:,} in the last hour) and a backlog of "
        f"{a.backlog:,}, over {a.queues:,} queues",
        flush=True,
    )
    started = time.monotonic()
    fill(cur, a.history, a.backlog, a.queues, a.last_hour)
    print(f"   filled in {time.monotonic() - started:.0f} s", flush=True)
    cur.execute("SELECT max(id) FROM send_jobs")
    high = cur.fetchone()[0]
    cur.execute(
        "SELECT id, finished_at::text FROM send_jobs WHERE status = 'failed' AND queue = 'q7' AND redrive_of IS NULL"
        " AND id IN (SELECT redrive_of FROM send_jobs WHERE redrive_of IS NOT NULL) LIMIT 1"
    )
    failed, failed_at = cur.fetchone()
    cur.execute("SELECT min(id) FROM ONLY send_jobs WHERE status = 'pending'")
    pending = cur.fetchone()[0]
    sample = {
        "high": high + 1,
        "finished": a.history // 2,
        "pending": pending,
        "failed": failed,
        "failed_at": failed_at,
    }
    print("== plans", flush=True)
    seq = plans(cur, sample)
    target = max(
        (os.path.join(ROOT, "target", p, "sendjobs-console") for p in ("release", "debug")),
        key=lambda p: os.path.getmtime(p) if os.path.exists(p) else 0,
    )
    cur.execute("SELECT created_at::text FROM send_jobs WHERE id = %s", (a.history // 2,))
    middle = cur.fetchone()[0][:19].replace(" ", "+")
    cur.execute("SELECT (created_at + interval '10 minutes')::text FROM send_jobs WHERE id = %s", (a.history // 2,))
    later = cur.fetchone()[0][:19].replace(" ", "+")
    cur.execute(
        "SELECT id, finished_at::text FROM send_jobs_finished WHERE status = 'failed' AND queue = 'q3'"
        " AND finished_at < now() - interval '5 days' ORDER BY finished_at DESC, id DESC LIMIT 1"
    )
    older_id, older_at = cur.fetchone()
    pages = [
        ("queues", "/queues"),
        ("queues (live refresh)", "/queues/live"),
        ("queue q3 with its failed jobs", "/queue?name=q3"),
        (
            "queue q3, its failed jobs 5 days back",
            f"/queue?name=q3&after_at={urllib.parse.quote(older_at)}&after_id={older_id}",
        ),
        ("search: newest jobs", "/jobs"),
        ("search: failed", "/jobs?status=failed"),
        ("search: queue q3, pending", "/jobs?queue=q3&status=pending"),
        ("search: transaction id (unindexed: one window)", "/jobs?transaction_id=tx-42"),
        ("search: a 10-minute range 5 days back", f"/jobs?from={middle}&to={later}"),
        ("search: older page", f"/jobs?before={high - 5_000_000}"),
        ("search: idempotency key (redirect)", "/jobs?idempotency_key=key-500000"),
        ("job: finished, linked, redriven", f"/jobs/{failed}"),
        ("job: pending", f"/jobs/{pending}"),
    ]
    print(f"== page times: {a.runs} requests each after 2 warm-ups, {os.path.relpath(target, ROOT)}", flush=True)
    proc = console(target)
    worst = 0.0
    try:
        # The queues' figures, read once for every page in the background (figures.rs):
        # what each read took, as the page says, over a minute of reads.
        reads = []
        for _ in range(a.runs):
            page = urllib.request.urlopen("http://127.0.0.1:18090/queues").read().decode()
            reads.append(float(re.search(r"read \d+ s ago, in (\d+) ms", page).group(1)))
            time.sleep(3)
        print(
            f"   {'the shared read of the figures (background)':48} median {statistics.median(reads):7.1f} ms  "
            f"range {min(reads):6.1f} – {max(reads):6.1f} ms",
            flush=True,
        )
        for name, path in pages:
            for _ in range(2):
                server_time(path)
            times = [server_time(path) for _ in range(a.runs)]
            worst = max(worst, statistics.median(times))
            print(
                f"   {name:48} median {statistics.median(times):7.1f} ms  range {min(times):6.1f} – {max(times):6.1f} ms",
                flush=True,
            )
    finally:
        proc.terminate()
        proc.wait()
    if seq:
        print("FAILED: a sequential scan of send_jobs or send_jobs_finished in: " + "; ".join(seq))
        sys.exit(1)
    print(f"== no statement reads send_jobs or send_jobs_finished sequentially; the slowest median: {worst:.1f} ms")


if __name__ == "__main__":
    main()
