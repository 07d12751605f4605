#!/usr/bin/env python3
"""sendjobs and its peers pgmq and pg-boss, side by side in one cluster.

Each peer has its own database: `sendjobs` (CREATE EXTENSION sendjobs, as installed),
`pgmq` (the SQL of pgmq's published crate, its SQL-only install), `pgboss` (the schema
pg-boss's npm package builds with getConstructionPlans, and a queue its client creates).
The peers' code is fetched at run time into a cache under target/ at pinned versions and
hashes (bench/peers/pgmq.py, bench/peers/pgboss.py), never into the repository. Arms:

  sendjobs      sendjobs_claim(n, lease), then sendjobs_finalize (n = 1) or
                sendjobs_finalize_batch (n > 1) with outcome 'sent'
  pgmq-delete   the statements pgmq's client (PGMQueueExt) sends: read n with a visibility
                timeout, then delete by msg_id array
  pgmq-archive  read as above, then archive by msg_id array
  pg-boss       the statements pg-boss's client sends: fetch(queue, { batchSize: n }), then
                complete(queue, jobs) as its worker settles them

One pgbench transaction (-M prepared) = claim n, then complete them: two statements, each
in its own transaction (autocommit), as each client sends them. For each backlog, for each
repetition, for each grid point, the arms run one after the other in a shuffled order.
Before every run the peer's queue is brought to `backlog + what the run will consume`
waiting jobs (finished rows deleted, new jobs added or the newest removed), vacuumed and
checkpointed; a run whose queue fell below the backlog is run again with more. Prints and
writes bench/results/<name>/report.md, one CSV row per run (runs.csv) and meta.json.

Run it inside a cluster: bash bench/peers.sh [options] does (tests/cluster.py run ... --
python3 bench/peers.py ...), and bash bench/run.sh --peers after the grid.
`--enqueue SIZES` measures adding jobs instead: N jobs in one statement, through one
sendjobs_enqueue per job, one sendjobs_enqueue_many, a plain INSERT into send_jobs (the
table's floor) and pgmq's send_batch (the arms
interleaved, each repetition in a shuffled order, the queues emptied between runs).
`--prepare-only` fetches the peers and exits; `--report-only DIR` rebuilds a run's report
from its runs.csv and meta.json. `--waits` adds what the backends waited for during each
run (pg_stat_activity, sampled); `--instructions` counts, instead of timing, the
instructions per job of one client's backend (the server under callgrind:
bench/peers.sh starts it so).
"""

import argparse
import csv
import datetime
import json
import os
import random
import statistics
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402  (bench/common.py)
from common import Db, REPO, fmt_dur, log, psql_file, spread, wait_quiet  # noqa: E402

sys.path.insert(0, str(common.HERE / "peers"))
import pgboss  # noqa: E402  (bench/peers/pgboss.py)
import pgmq  # noqa: E402  (bench/peers/pgmq.py)

CACHE = os.path.join(REPO, "target", "peers-cache")
ARMS = ["sendjobs", "pgmq-delete", "pgmq-archive", "pg-boss"]
PEER_OF = {"sendjobs": "sendjobs", "pgmq-delete": "pgmq", "pgmq-archive": "pgmq", "pg-boss": "pgboss"}
LEASE_S = 30  # sendjobs' lease and pgmq's visibility timeout (pg-boss: the queue's expiry)
FOOT_POINT = (1, 10)  # (clients, batch) of the footprint table
APP = "peers-driver"  # the driver's application_name
# The payload of every job in every peer: bench/bench.py's, about 100 bytes of JSON.
PAYLOAD = (
    "jsonb_build_object('to', 'partner-' || lpad(mod(i, 500)::text, 4, '0'), "
    "'ref', 'tx-' || lpad(i::text, 10, '0'), 'kind', 'payment.notify', 'currency', 'EUR', "
    "'amount_cents', mod(i * 37, 100000))"
)


# The arms each report sets sendjobs beside (sendjobs/arm), those of a run that has them.
def compared_arms(arms):
    return [x for x in ("pgmq-delete", "pgmq-archive", "pg-boss") if x in arms and "sendjobs" in arms]


# --waits: what a sample of a backend was doing (pg_stat_activity's wait event; the names
# of 15 and of 17 on differ in case: WALSync, WalSync).
WAITS = ["cpu", "wal_flush", "row_locks", "buffers", "other"]
FIELDS = [
    "backlog",
    "rep",
    "clients",
    "batch",
    "arm",
    "attempt",
    "valid",
    "duration_s",
    "start_pending",
    "end_pending",
    "jobs",
    "cycles",
    "tps",
    "jobs_s",
    "failed",
    "error",
    "claim_ms",
    "complete_ms",
    "wal_bytes",
    "n_tup_ins",
    "n_tup_upd",
    "n_tup_hot_upd",
    "n_tup_del",
    "n_dead_tup_delta",
    "table_bytes_before",
    "index_bytes_before",
    "table_bytes",
    "index_bytes",
    "rows_after",
    "autovacuums",
    "prep_s",
    "t",
    "wait_samples",
] + [f"wait_{kind}" for kind in WAITS]


# --------------------------------------------------------------------------------------
# The peers: each knows its database, how to fill and empty its queue, and its scripts


class SendJobs:
    db = "sendjobs"

    def setup(self, admin, run_dir, batches):
        admin.exec("CREATE DATABASE sendjobs")
        self.c = Db(self.db, APP)
        self.c.exec("CREATE EXTENSION sendjobs")
        self.version = self.c.one("SELECT extversion FROM pg_extension WHERE extname = 'sendjobs'")[0]
        self.tables = common.queue_tables(self.db)  # where its jobs and events go
        return {"version": self.version, "tables": self.tables}

    def add(self, n):
        # Rows as sendjobs_enqueue(payload) makes them (the column defaults: queue 'default',
        # due now, max_attempts 5), in one INSERT as bench/bench.py loads them.
        self.c.exec(f"INSERT INTO send_jobs (payload) SELECT {PAYLOAD} FROM generate_series(1, %s) AS i", (n,))

    def pending(self):
        return self.c.one("SELECT count(*) FROM send_jobs WHERE status = 'pending'")[0]

    def trim(self, n):
        self.c.exec(
            "DELETE FROM send_jobs WHERE id IN (SELECT id FROM send_jobs WHERE status = 'pending' "
            "ORDER BY id DESC LIMIT %s)",
            (n,),
        )

    def cleanup(self):
        """Removes what the last run finished (and any claim it left open)."""
        self.c.exec(common.CLEAR_FINISHED)

    def rows(self):
        return self.c.one("SELECT count(*) FROM send_jobs")[0]

    def done(self, arm, before):
        return self.c.one("SELECT count(*) FROM send_jobs WHERE status = 'sent'")[0]

    def script(self, arm, batch):
        if batch == 1:
            return (
                f"SELECT id, claim_generation AS generation FROM sendjobs_claim(:batch, '{LEASE_S} seconds') \\gset\n"
                "SELECT sendjobs_finalize(:id, :generation, 'sent');\n"
            )
        return (
            "SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations\n"
            f"  FROM sendjobs_claim(:batch, '{LEASE_S} seconds') \\gset\n"
            "SELECT id, result FROM sendjobs_finalize_batch(:ids::int8[], :generations::int8[], 'sent');\n"
        )


class Pgmq:
    db = "pgmq"
    q = f"pgmq.q_{pgmq.QUEUE}"
    a = f"pgmq.a_{pgmq.QUEUE}"
    tables = [q, a]

    def setup(self, admin, run_dir, batches):
        root = pgmq.fetch(CACHE)
        admin.exec("CREATE DATABASE pgmq")
        # The crate's SQL-only install of a fresh database runs its init script pgmq.sql
        # (install_sql_from_embedded); the bookkeeping table it adds is left out.
        psql_file(self.db, pgmq.install_script(root), single_transaction=True)
        self.c = Db(self.db, APP)
        self.c.exec("SELECT pgmq.create(%s)", (pgmq.QUEUE,))
        self.stmts = pgmq.client_statements(root)
        return {
            "crate": f"{pgmq.CRATE} {pgmq.VERSION}",
            "sha256": pgmq.SHA256,
            "sql_version": pgmq.sql_version(root),
            "statements": {k: f"PGMQueueExt::{pgmq.METHODS[k][0]} (src/pg_ext/mod.rs)" for k in self.stmts},
        }

    def add(self, n):
        # pgmq's own send_batch, in chunks
        for lo in range(1, n + 1, 200_000):
            hi = min(n, lo + 199_999)
            self.c.exec(
                f"SELECT count(*) FROM pgmq.send_batch(%s, ARRAY(SELECT {PAYLOAD} FROM generate_series(%s, %s) AS i))",
                (pgmq.QUEUE, lo, hi),
            )

    def pending(self):
        return self.c.one(f"SELECT count(*) FROM {self.q} WHERE vt <= clock_timestamp()")[0]

    def trim(self, n):
        self.c.exec(
            f"DELETE FROM {self.q} WHERE msg_id IN (SELECT msg_id FROM {self.q} ORDER BY msg_id DESC LIMIT %s)", (n,)
        )

    def cleanup(self):
        self.c.exec(f"TRUNCATE {self.a}")
        self.c.exec(f"DELETE FROM {self.q} WHERE read_ct > 0")  # read and never deleted

    def rows(self):
        return self.c.one(f"SELECT (SELECT count(*) FROM {self.q}) + (SELECT count(*) FROM {self.a})")[0]

    def done(self, arm, before):
        if arm == "pgmq-archive":
            return self.c.one(f"SELECT count(*) FROM {self.a}")[0]
        return before - self.c.one(f"SELECT count(*) FROM {self.q}")[0]

    def script(self, arm, batch):
        names = {"queue": "queue", "vt": "vt", "batch": "batch", "ids": "ids"}
        read = pgmq.pgbench_text(*self.stmts["read"], names)
        ack = pgmq.pgbench_text(*self.stmts["delete" if arm == "pgmq-delete" else "archive"], names)
        return f"SELECT array_agg(msg_id) AS ids FROM (\n{read}\n) AS r \\gset\n{ack};\n"


class PgBoss:
    db = "pgboss"
    tables = ["pgboss.job_common"]  # the queue's table (capture checks it)

    def setup(self, admin, run_dir, batches):
        root, deps = pgboss.fetch(CACHE)
        admin.exec("CREATE DATABASE pgboss")
        path = os.path.join(run_dir, "pgboss_schema.sql")
        with open(path, "w") as f:
            f.write(pgboss.schema_sql(root))
        psql_file(self.db, path, single_transaction=False)  # it has its own BEGIN/COMMIT
        self.cap = pgboss.capture(root, dict(os.environ, PGDATABASE=self.db), batches)
        table = self.cap["queue"]["table"]
        if f"pgboss.{table}" != self.tables[0]:
            raise SystemExit(f"peers: pg-boss put the queue in {table}")
        self.c = Db(self.db, APP)
        self.c.exec("DELETE FROM pgboss.job_common")  # the capture's jobs
        self.insert = pgboss.insert_sql(self.cap)
        with open(os.path.join(run_dir, "pgboss_capture.json"), "w") as f:
            json.dump(self.cap, f, indent=1)
        return {
            "package": f"{pgboss.PACKAGE} {pgboss.VERSION}",
            "integrity": pgboss.INTEGRITY,
            "schema_version": self.cap["version"],
            "node": pgboss.node_version(),
            "pg (node driver)": deps.get("pg"),
            "queue": self.cap["queue"],
        }

    def add(self, n):
        # pg-boss's own insert (plans.insertJobs), the jobs as one JSON array per chunk
        for lo in range(1, n + 1, 50_000):
            hi = min(n, lo + 49_999)
            jobs = self.c.one(
                f"SELECT json_agg(json_build_object('data', {PAYLOAD}))::text FROM generate_series(%s, %s) AS i",
                (lo, hi),
            )[0]
            with self.c.conn.cursor() as cur:
                cur.execute(self.insert.replace("%", "%%").replace("$1", "%s"), (jobs,))

    def pending(self):
        return self.c.one(
            "SELECT count(*) FROM pgboss.job_common WHERE name = %s AND state < 'active'", (pgboss.QUEUE,)
        )[0]

    def trim(self, n):
        self.c.exec(
            "DELETE FROM pgboss.job_common WHERE name = %s AND id IN (SELECT id FROM pgboss.job_common "
            "WHERE name = %s AND state < 'active' ORDER BY created_on DESC LIMIT %s)",
            (pgboss.QUEUE, pgboss.QUEUE, n),
        )

    def cleanup(self):
        self.c.exec("DELETE FROM pgboss.job_common WHERE state >= 'active'")

    def rows(self):
        return self.c.one("SELECT count(*) FROM pgboss.job_common")[0]

    def done(self, arm, before):
        return self.c.one("SELECT count(*) FROM pgboss.job_common WHERE state = 'completed'")[0]

    def script(self, arm, batch):
        return pgboss.fetch_script_text(self.cap, batch) + pgboss.complete_script_text(self.cap, batch)


# --------------------------------------------------------------------------------------
# One run


def snapshot(c, tables):
    st = c.one(
        """
        SELECT pg_current_wal_lsn()::text,
               coalesce(sum(n_tup_ins), 0)::bigint, coalesce(sum(n_tup_upd), 0)::bigint,
               coalesce(sum(n_tup_hot_upd), 0)::bigint, coalesce(sum(n_tup_del), 0)::bigint,
               coalesce(sum(n_dead_tup), 0)::bigint,
               coalesce(sum(pg_table_size(relid)), 0)::bigint,
               coalesce(sum(pg_indexes_size(relid)), 0)::bigint
          FROM pg_stat_user_tables WHERE relid = ANY(%s::regclass[])""",
        (tables,),
    )
    av = c.one("SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0)::bigint FROM pg_stat_user_tables")[0]
    keys = ["lsn", "ins", "upd", "hot", "del", "dead", "table_bytes", "index_bytes"]
    return dict(zip(keys, st), av=av)


def run_pgbench(db, script, clients, batch, duration):
    r = common.pgbench(db, script, clients, duration, latencies=True, variables=script_variables(batch))
    # the first statement is the claim; the complete is the last one
    lat = [ms for ms, _text in r["statements"]]
    r["claim_ms"] = lat[0] if lat else None
    r["complete_ms"] = lat[-1] if len(lat) > 1 else None
    return r


def script_variables(batch):
    """The pgbench variables every arm's script reads (bench/peers/pgmq.py names them)."""
    return {"batch": batch, "queue": pgmq.QUEUE, "vt": LEASE_S}


def prepare_queue(peer, target):
    """Finished rows out, then exactly `target` waiting jobs, vacuumed, checkpointed."""
    t0 = time.time()
    peer.cleanup()
    have = peer.pending()
    if have < target:
        peer.add(target - have)
    elif have > target:
        peer.trim(have - target)
    for t in peer.tables:
        peer.c.exec(f"VACUUM (ANALYZE) {t}")
    # This backend's own counts (the deletes and inserts above) are flushed now, when it
    # goes idle after this call, not a second later into the run's numbers.
    peer.c.exec("SELECT pg_stat_force_next_flush()")
    wait_quiet(peer.c)
    peer.c.exec("CHECKPOINT")
    return time.time() - t0


def sampling_pgbench(peer, every_s, call, active_only=True):
    """Runs call() while a thread samples, every `every_s` seconds (and the time of the
    sample's query), the pgbench backends in the peer's database (those running a
    statement, unless not active_only) on the driver's connection, which the caller
    leaves alone meanwhile: returns call()'s result and the samples, (pid,
    wait_event_type, wait_event) each."""
    samples, failed, running = [], [], threading.Event()

    def watch():
        try:
            while running.is_set():
                samples.extend(
                    peer.c.rows(
                        "SELECT pid, wait_event_type, wait_event FROM pg_stat_activity "
                        "WHERE datname = current_database() AND application_name = 'pgbench' "
                        "AND (state = 'active' OR NOT %s)",
                        (active_only,),
                    )
                )
                time.sleep(every_s)
        except Exception as e:  # handed to the caller's thread below
            failed.append(e)

    running.set()
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = call()
    finally:
        running.clear()
        watcher.join()
    if failed:
        raise SystemExit(f"peers: sampling pg_stat_activity failed: {failed[0]}")
    return result, samples


def wait_kind(event_type, event):
    if event_type is None:
        return "cpu"  # running, or ready to run: no wait event
    kind = f"{event_type}:{event}".lower()
    if kind in ("lwlock:walwrite", "io:walsync", "io:walwrite"):
        return "wal_flush"
    if kind in ("lock:transactionid", "lock:tuple"):
        return "row_locks"
    if kind.startswith("lwlock:buffer") or kind == "ipc:bufferio":
        return "buffers"
    return "other"


def one_run(peer, arm, script, backlog, clients, batch, duration, target, waits=False):
    prep_s = prepare_queue(peer, target)
    start_pending = peer.pending()
    rows_before = peer.rows() if arm == "pgmq-delete" else 0
    before = snapshot(peer.c, peer.tables)
    t = time.time()
    if waits:
        r, samples = sampling_pgbench(peer, 0.01, lambda: run_pgbench(peer.db, script, clients, batch, duration))
    else:
        r, samples = run_pgbench(peer.db, script, clients, batch, duration), []
    wait_quiet(peer.c)
    after = snapshot(peer.c, peer.tables)
    jobs = peer.done(arm, rows_before)
    end_pending = peer.pending()
    wal = peer.c.one("SELECT pg_wal_lsn_diff(%s, %s)::bigint", (after["lsn"], before["lsn"]))[0]
    per_cycle = jobs / r["cycles"] if r["cycles"] else 0
    row = {
        "backlog": backlog,
        "clients": clients,
        "batch": batch,
        "arm": arm,
        "duration_s": duration,
        "start_pending": start_pending,
        "end_pending": end_pending,
        "jobs": jobs,
        "cycles": r["cycles"],
        "tps": round(r["tps"], 2),
        "jobs_s": round(r["tps"] * per_cycle, 1),
        "failed": r["failed"],
        "error": r["error"],
        "claim_ms": r["claim_ms"],
        "complete_ms": r["complete_ms"],
        "wal_bytes": wal,
        "n_tup_ins": after["ins"] - before["ins"],
        "n_tup_upd": after["upd"] - before["upd"],
        "n_tup_hot_upd": after["hot"] - before["hot"],
        "n_tup_del": after["del"] - before["del"],
        "n_dead_tup_delta": after["dead"] - before["dead"],
        "table_bytes_before": before["table_bytes"],
        "index_bytes_before": before["index_bytes"],
        "table_bytes": after["table_bytes"],
        "index_bytes": after["index_bytes"],
        "rows_after": peer.rows(),
        "autovacuums": after["av"] - before["av"],
        "prep_s": round(prep_s, 1),
        "t": datetime.datetime.now().strftime("%H:%M:%S"),
    }
    row["wait_samples"] = len(samples)
    for kind in WAITS:
        share = sum(wait_kind(s[1], s[2]) == kind for s in samples) / len(samples) if samples else None
        row[f"wait_{kind}"] = round(share, 4) if share is not None else ""
    row["valid"] = int(not row["error"] and end_pending >= backlog)
    return row, time.time() - t


# --------------------------------------------------------------------------------------
# The plan


def prior_rate(batch):
    """A generous guess of jobs/s (any arm, any clients) before a run at this point was
    measured: it sizes the first top-up; a run that still falls below the backlog is run
    again with more."""
    return {1: 8000, 10: 35000, 100: 100000}.get(batch, 8000 * batch**0.55)


# For the runtime estimate only: jobs/s of a 2-core machine when quiet (bench/bench.py's
# E at 1-8 clients, averaged), and how fast each peer's queue is refilled and emptied.
EXPECTED_RATE = {1: 4000, 10: 20000, 100: 55000}
FILL_RATE = {"sendjobs": 40_000, "pgmq": 70_000, "pgboss": 20_000}
EMPTY_RATE = 150_000


def estimate_seconds(args):
    """Runs x (duration + preparation: the run's consumption added back and its finished
    rows deleted, VACUUM, CHECKPOINT) plus the loads."""
    runs = total = 0
    for backlog in args.backlogs:
        fixed = 1.5 + 3.0 * backlog / 1_000_000
        for b in args.batches:
            consumed = EXPECTED_RATE.get(b, 4000 * b**0.6) * args.duration
            for arm in args.arms:
                peer = PEER_OF[arm]
                prep = consumed / FILL_RATE[peer] + (consumed / EMPTY_RATE if arm != "pgmq-delete" else 0)
                n = args.reps * len(args.clients)
                runs += n
                total += n * (args.duration + fixed + prep + 0.5)
        for peer in {PEER_OF[x] for x in args.arms}:
            total += (backlog + prior_rate(10) * args.duration) / FILL_RATE[peer]
    return total + 30, runs


def main(argv):
    p = argparse.ArgumentParser(
        prog="bench/peers.sh",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    common.add_grid_arguments(p)  # the grid of bench/bench.py; the backlog stays throughout
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma list (default {','.join(ARMS)})")
    p.add_argument("--seed", type=int, default=1, help="the arms' order at each grid point")
    common.add_name_argument(p, "peers")
    p.add_argument("--command", default="bash bench/peers.sh " + " ".join(argv), help=argparse.SUPPRESS)
    p.add_argument("--prepare-only", action="store_true", help="fetch the peers into the cache, exit")
    p.add_argument("--report-only", metavar="DIR", help="rebuild the report of a run's folder, exit")
    p.add_argument(
        "--waits",
        action="store_true",
        help="sample what the arms' backends wait for, every 10 ms of each run "
        "(pg_stat_activity; the sampling takes some of the machine's CPU)",
    )
    p.add_argument(
        "--instructions",
        action="store_true",
        help="count the instructions per job of each arm's backend, one client (callgrind; "
        "bench/peers.sh starts the server so; --clients, --duration and --warmup are "
        "ignored; --backlogs defaults to 10000)",
    )
    p.add_argument(
        "--cycles",
        type=int,
        default=1000,
        help="with --instructions: jobs a run does more than its twin (default 1000; at least 20 cycles)",
    )
    p.add_argument("--callgrind-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--enqueue",
        metavar="SIZES",
        default=None,
        help="measure enqueues instead: jobs per statement, a comma list (e.g. 1000,100000); --reps repetitions",
    )
    a = p.parse_args(argv)
    if a.instructions and not a.backlogs:
        a.backlogs = "10000"  # loading 1,000,000 jobs under callgrind takes minutes
    a = common.resolve_grid(a)
    a.arms = [x for x in a.arms.split(",") if x]
    bad = set(a.arms) - set(ARMS)
    if bad:
        p.error(f"unknown arms {sorted(bad)}; known: {ARMS}")

    if a.prepare_only:
        root = pgmq.fetch(CACHE)
        log(f"== peers: pgmq crate {pgmq.VERSION} (sha256 ok, SQL {pgmq.sql_version(root)}) in {root}")
        root, _ = pgboss.fetch(CACHE)
        log(f"== peers: pg-boss {pgboss.VERSION} (integrity ok) in {root}")
        return 0
    if a.report_only:
        with open(os.path.join(a.report_only, "runs.csv")) as f:
            rows = list(csv.DictReader(f))
        meta = common.read_meta(a.report_only)
        text = (instructions_report if meta["grid"].get("instructions") else report_text)(meta, rows)
        return common.write_report(a.report_only, text, "peers")
    if a.enqueue:
        return enqueue_main(a, [int(n) for n in common.parse_list(a.enqueue)])
    if a.instructions and not a.callgrind_dir:
        p.error("--instructions needs the server under callgrind: run it through bench/peers.sh")
    if a.instructions and a.waits:
        p.error("--waits samples timed runs; --instructions has none")

    if a.instructions:
        nruns, est = 2 * len(a.backlogs) * a.reps * len(a.batches) * len(a.arms), 0
        log(
            f"== peers: {nruns} runs of 1 client under callgrind ({len(a.backlogs)} backlogs x "
            f"{a.reps} reps x {len(a.batches)} batches x {len(a.arms)} arms, each twice)"
        )
    else:
        est, nruns = estimate_seconds(a)
        log(
            f"== peers: {nruns} runs of {a.duration:g} s ({len(a.backlogs)} backlogs x {a.reps} reps x "
            f"{len(a.clients)} clients x {len(a.batches)} batches x {len(a.arms)} arms); "
            f"estimated {fmt_dur(est)}"
        )
    results = common.results_dir("peers", a.name)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = os.path.join(CACHE, f"run-{stamp}")  # the scripts hold the peers' SQL: not in the repo
    os.makedirs(run_dir, exist_ok=True)
    csv_path = results / "runs.csv"

    t_start = time.time()
    admin = Db("postgres", APP)
    peers = {}
    meta = common.run_meta(a.command)
    meta["peers"] = {}
    for arm in a.arms:
        name = PEER_OF[arm]
        if name not in peers:
            peers[name] = {"sendjobs": SendJobs, "pgmq": Pgmq, "pgboss": PgBoss}[name]()
            meta["peers"][name] = peers[name].setup(admin, run_dir, sorted(set(a.batches) | {10}))
            log(f"== peers: {name}: {meta['peers'][name]}")
    scripts = {}
    for arm in a.arms:
        for batch in sorted(set(a.batches) | {10}):
            path = os.path.join(run_dir, f"{arm}_b{batch}.sql")
            with open(path, "w") as f:
                f.write(peers[PEER_OF[arm]].script(arm, batch))
            scripts[(arm, batch)] = path
    settings = admin.rows(
        "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s) ORDER BY 1",
        (
            [
                "shared_buffers",
                "max_connections",
                "fsync",
                "synchronous_commit",
                "full_page_writes",
                "max_wal_size",
                "checkpoint_timeout",
                "autovacuum",
                "autovacuum_naptime",
                "jit",
                "work_mem",
            ],
        ),
    )
    meta.update(
        {
            "settings": [f"{n} = {v}" for n, v in settings],
            "grid": {
                "clients": a.clients,
                "batches": a.batches,
                "backlogs": a.backlogs,
                "arms": a.arms,
                "duration_s": a.duration,
                "reps": a.reps,
                "warmup_s": a.warmup,
                "seed": a.seed,
                "lease_s": LEASE_S,
                "instructions": a.instructions,
                "cycles": a.cycles,
            },
            "scripts_dir": run_dir,
            "estimate_s": round(est),
        }
    )
    common.write_meta(results, meta)  # rewritten at the end; --report-only reads it
    if a.instructions:
        rows = count_instructions(a, peers, scripts, csv_path)
        meta["elapsed_s"] = round(time.time() - t_start)
        common.write_meta(results, meta)
        return common.write_report(results, instructions_report(meta, rows), "peers")
    with open(csv_path, "w", newline="") as f:
        csv.DictWriter(f, FIELDS).writeheader()

    def record(row):
        with open(csv_path, "a", newline="") as f:
            csv.DictWriter(f, FIELDS).writerow(row)
        rows.append(row)

    rows = []
    # jobs/s measured so far per (clients, batch), any arm and backlog: sizes the next top-ups
    seen = {}
    rng = random.Random(a.seed)
    points = [(c, b) for b in a.batches for c in a.clients]  # headroom grows along the list
    done_runs = 0
    for backlog in a.backlogs:
        log(f"== peers: backlog {backlog:,}: loading and warming up")
        for arm in a.arms:
            if a.warmup > 0:
                peer = peers[PEER_OF[arm]]
                prepare_queue(peer, backlog + int(prior_rate(10) * a.warmup * 1.5))
                r = run_pgbench(peer.db, scripts[(arm, 10)], 1, 10, a.warmup)
                if r["error"]:
                    raise SystemExit(f"peers: warm-up of {arm} failed: {r['error']}")
        for rep in range(a.reps):
            for clients, batch in points:
                arms = list(a.arms)
                rng.shuffle(arms)
                # Every arm of this point starts from the same queue: the backlog plus 1.3 times
                # what the fastest arm consumed here before (a generous guess at first).
                rate = seen.get((clients, batch)) or prior_rate(batch)
                for arm in arms:
                    peer = peers[PEER_OF[arm]]
                    guess, row = rate, None
                    for attempt in (1, 2, 3):
                        if row:  # ran low: again, from what it did (it may have run dry)
                            guess = max(guess, row["jobs_s"], row["jobs"] / a.duration)
                        headroom = int(guess * a.duration * (1.3, 2.0, 3.0)[attempt - 1]) + 2 * clients * batch + 1000
                        row, _ = one_run(
                            peer,
                            arm,
                            scripts[(arm, batch)],
                            backlog,
                            clients,
                            batch,
                            a.duration,
                            backlog + headroom,
                            a.waits,
                        )
                        row.update(rep=rep + 1, attempt=attempt)
                        record(row)
                        seen[(clients, batch)] = max(seen.get((clients, batch), 0), row["jobs_s"])
                        done_runs += 1
                        low = row["end_pending"] < backlog  # (an empty claim also fails pgbench)
                        flag = (
                            ""
                            if row["valid"]
                            else (
                                f"  BELOW BACKLOG (ended with {row['end_pending']:,} waiting): again"
                                if low
                                else f"  ERROR {row['error']}"
                            )
                        )
                        log(
                            f"   [{done_runs}] backlog {backlog:,} rep {rep + 1} c{clients} b{batch} "
                            f"{arm:<13} {row['jobs_s']:>10,.0f} jobs/s  ({row['jobs']:,} jobs, "
                            f"prep {row['prep_s']:.1f} s){flag}"
                        )
                        if row["valid"] or not low:
                            break
                    if not row["valid"]:
                        raise SystemExit(
                            f"peers: {arm} failed: {row['error'] or 'the queue ran low'} "
                            f"(script {scripts[(arm, batch)]})"
                        )
            log(
                f"== peers: backlog {backlog:,}: repetition {rep + 1} of {a.reps} done "
                f"({fmt_dur(time.time() - t_start)} so far)"
            )
    meta["elapsed_s"] = round(time.time() - t_start)
    common.write_meta(results, meta)
    for peer in peers.values():
        peer.c.close()
    admin.close()
    return common.write_report(results, report_text(meta, rows), "peers")


# --------------------------------------------------------------------------------------
# Adding jobs (--enqueue)

# Each arm adds `n` jobs of PAYLOAD (i = 1 ... n) in one statement, in its own transaction.
ENQUEUE_ARMS = {
    "sendjobs-each": (
        "sendjobs",
        f"SELECT count(sendjobs_enqueue({PAYLOAD}, 'bench')) FROM generate_series(1, %(n)s) AS i",
    ),
    "sendjobs-many": (
        "sendjobs",
        f"SELECT cardinality(sendjobs_enqueue_many(ARRAY(SELECT {PAYLOAD} "
        "FROM generate_series(1, %(n)s) AS i), '{bench}'))",
    ),
    # the floor: the same rows by a plain INSERT into the table, no function
    "send_jobs-insert": (
        "sendjobs",
        f"WITH added AS (INSERT INTO send_jobs (payload, queue) SELECT {PAYLOAD}, 'bench' "
        "FROM generate_series(1, %(n)s) AS i RETURNING id) SELECT count(*) FROM added",
    ),
    "pgmq-send_batch": (
        "pgmq",
        f"SELECT count(*) FROM pgmq.send_batch('{pgmq.QUEUE}', ARRAY(SELECT {PAYLOAD} "
        "FROM generate_series(1, %(n)s) AS i))",
    ),
}
ENQUEUE_EMPTY = {"sendjobs": "TRUNCATE send_jobs, send_job_keys", "pgmq": f"TRUNCATE {Pgmq.q}"}


def enqueue_main(a, sizes):
    results = common.results_dir("peers", a.name)
    meta = common.run_meta(a.command)
    admin = Db("postgres", APP)
    peers = {"sendjobs": SendJobs(), "pgmq": Pgmq()}
    meta["peers"] = {name: peer.setup(admin, None, []) for name, peer in peers.items()}
    meta["grid"] = {"enqueue": sizes, "reps": a.reps, "seed": a.seed}
    rng, rows = random.Random(a.seed), []
    for n in sizes:
        for rep in range(a.reps):
            arms = list(ENQUEUE_ARMS)
            rng.shuffle(arms)
            for arm in arms:
                peer_name, sql = ENQUEUE_ARMS[arm]
                peer = peers[peer_name]
                peer.c.exec(ENQUEUE_EMPTY[peer_name])
                peer.c.exec("CHECKPOINT")
                started = time.perf_counter()
                added = peer.c.one(sql, {"n": n})[0]
                seconds = time.perf_counter() - started
                if added != n:
                    raise SystemExit(f"peers: {arm} added {added} jobs of {n}")
                rows.append({"n": n, "rep": rep + 1, "arm": arm, "jobs_s": n / seconds})
                log(f"   n {n:,} rep {rep + 1} {arm:<16} {n / seconds:>10,.0f} jobs/s")
    for peer in peers.values():
        peer.c.close()
    admin.close()
    with open(results / "runs.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, ["n", "rep", "arm", "jobs_s"])
        writer.writeheader()
        writer.writerows(rows)
    common.write_meta(results, meta)
    lines = (
        ["# Adding jobs: sendjobs and pgmq (bench/peers.sh --enqueue)", ""]
        + common.header_lines(meta)
        + [
            "",
            f"One client; each run adds n jobs in one statement and its commit; {a.reps} repetitions, "
            "the arms in a shuffled order each time, every queue emptied and a CHECKPOINT before each run.",
            "",
            "| n | " + " | ".join(ENQUEUE_ARMS) + " | many / each | many / insert | many / pgmq |",
            "|---|" + "---|" * (len(ENQUEUE_ARMS) + 3),
        ]
    )
    for n in sizes:
        rates = {arm: [r["jobs_s"] for r in rows if r["n"] == n and r["arm"] == arm] for arm in ENQUEUE_ARMS}

        # the ratios of each repetition's runs, which ran side by side
        def by_rep(arm, n=n):
            return [
                r["jobs_s"]
                for r in sorted((r for r in rows if r["n"] == n and r["arm"] == arm), key=lambda r: r["rep"])
            ]

        many_each = [m / e for m, e in zip(by_rep("sendjobs-many"), by_rep("sendjobs-each"))]
        many_insert = [m / q for m, q in zip(by_rep("sendjobs-many"), by_rep("send_jobs-insert"))]
        many_pgmq = [m / q for m, q in zip(by_rep("sendjobs-many"), by_rep("pgmq-send_batch"))]
        ratio = lambda v: f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
        lines.append(
            f"| {n:,} | "
            + " | ".join(spread(rates[arm]) for arm in ENQUEUE_ARMS)
            + f" | {ratio(many_each)} | {ratio(many_insert)} | {ratio(many_pgmq)} |"
        )
    lines.append("")
    lines.append("jobs/s, median (min-max); ratios of the runs of one repetition, median (min-max).")
    return common.write_report(results, "\n".join(lines) + "\n", "peers")


# --------------------------------------------------------------------------------------
# Instructions per job (--instructions)


INSTRUCTION_FIELDS = ["backlog", "rep", "batch", "arm", "cycles", "instructions_per_job"]


def count_instructions(a, peers, scripts, csv_path):
    """For each backlog, repetition and batch, each arm in a shuffled order: the
    instructions per job of one pgbench client's backend running the arm's script, the
    difference between a run of 10 + cycles transactions and one of 10 before it (the
    connection's start, the plans' making and the first cycles cancel out), both on one
    queue prepared for the two. (Prepared again between them, pgmq's counts moved by a
    factor of 3 from one measurement to the next, sendjobs' by 1%.) Writes and returns
    one row per measurement."""
    rows = []
    rng = random.Random(a.seed)
    with open(csv_path, "w", newline="") as f:
        out = csv.DictWriter(f, INSTRUCTION_FIELDS)
        out.writeheader()
        for backlog in a.backlogs:
            for rep in range(a.reps):
                for batch in a.batches:
                    cycles = max(20, a.cycles // batch)
                    arms = list(a.arms)
                    rng.shuffle(arms)
                    for arm in arms:
                        peer = peers[PEER_OF[arm]]
                        prepare_queue(peer, backlog + (20 + cycles) * batch + 1000)
                        rows_before = peer.rows() if arm == "pgmq-delete" else 0
                        counts = [
                            backend_instructions(a.callgrind_dir, peer, scripts[(arm, batch)], batch, n)
                            for n in (10, 10 + cycles)
                        ]
                        jobs = peer.done(arm, rows_before)
                        if jobs != (20 + cycles) * batch:
                            raise SystemExit(
                                f"peers: {arm} finished {jobs} jobs in {20 + cycles} transactions of batch {batch}"
                            )
                        row = {
                            "backlog": backlog,
                            "rep": rep + 1,
                            "batch": batch,
                            "arm": arm,
                            "cycles": cycles,
                            "instructions_per_job": round((counts[1] - counts[0]) / (cycles * batch)),
                        }
                        out.writerow(row)
                        f.flush()
                        rows.append(row)
                        log(
                            f"   backlog {backlog:,} rep {rep + 1} b{batch} {arm:<13} "
                            f"{row['instructions_per_job']:>10,} instructions a job"
                        )
    return rows


def backend_instructions(folder, peer, script, batch, transactions):
    """The instructions of the backend of one pgbench client that ran `transactions` of
    `script`."""
    # The client's backend is the one of pgbench's connections that lives through the
    # run (pgbench opens another first, to look at the server); each writes its counts
    # when it exits, after pgbench did.
    _, samples = sampling_pgbench(
        peer,
        0.05,
        lambda: common.pgbench(
            peer.db,
            script,
            1,
            600 + 2 * transactions,
            transactions=transactions,
            check=True,
            variables=script_variables(batch),
        ),
        active_only=False,
    )
    if not samples:
        raise SystemExit("peers: pgbench's backend was not seen in pg_stat_activity")
    counts = []
    for pid in {s[0] for s in samples}:
        path = common.callgrind_output(folder, pid)
        counts.append(common.callgrind_counts(path)[0])
        path.unlink()  # a later process given the same pid writes its own
    return max(counts)


def instructions_report(meta, rows):
    g = meta["grid"]
    arms = g["arms"]
    peers = compared_arms(arms)
    out = ["# sendjobs, pgmq and pg-boss side by side: instructions per job (callgrind)", ""]
    out.extend(common.header_lines(meta))
    out += [
        "",
        "One cluster (`tests/cluster.py`) under valgrind's callgrind, without autovacuum and "
        "parallel workers, one database per peer; for each batch the arms in a shuffled order, each "
        "on a queue prepared once: one pgbench client (`-M prepared`, the arm's script of the "
        "throughput runs) for 10 transactions, then another for 10 + "
        f"{g['cycles']}/batch (at least 20 more); the difference of their backends' instructions "
        "over the jobs of the extra transactions. Counted, not timed: the "
        "machine's other work does not move it; the commit's WAL flush, which a client waits for, "
        "and the other processes are not in it. Method: bench/README.md, section 'The peers'.",
        "",
        "Settings: " + ", ".join(meta["settings"]) + ".",
        "",
    ]
    for backlog in g["backlogs"]:
        out.append(f"## Instructions per job, backlog {backlog:,}: median (min-max) of {g['reps']}\n")
        out.append("| batch | " + " | ".join(arms) + " |" + "".join(f" sendjobs/{x} |" for x in peers))
        out.append("|---|" + "---|" * (len(arms) + len(peers)))
        for b in g["batches"]:
            med, cells = {}, []
            for arm in arms:
                v = [
                    int(r["instructions_per_job"])
                    for r in rows
                    if (int(r["backlog"]), int(r["batch"]), r["arm"]) == (backlog, b, arm)
                ]
                if v:
                    med[arm] = statistics.median(v)
                    cells.append(spread(v))
                else:
                    cells.append("-")
            rat = [f"{med['sendjobs'] / med[x]:.2f}" if med.get("sendjobs") and med.get(x) else "-" for x in peers]
            out.append(f"| {b} | " + " | ".join(cells) + " |" + "".join(f" {x} |" for x in rat))
        out.append("")
    out.append("sendjobs/peer above 1: sendjobs runs more instructions a job than the peer.")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------
# The report


def report_text(meta, rows):
    num = (
        "backlog",
        "rep",
        "clients",
        "batch",
        "attempt",
        "valid",
        "jobs",
        "wal_bytes",
        "n_tup_upd",
        "n_tup_del",
        "n_tup_ins",
        "n_tup_hot_upd",
        "n_dead_tup_delta",
        "table_bytes",
        "index_bytes",
        "table_bytes_before",
        "index_bytes_before",
        "rows_after",
        "autovacuums",
    )
    for r in rows:
        for k in num:
            r[k] = int(r[k])
        r["wait_samples"] = int(r.get("wait_samples") or 0)  # runs.csv before --waits has none
        r["jobs_s"] = float(r["jobs_s"])
    good = [r for r in rows if r["valid"]]
    g = meta["grid"]
    arms = g["arms"]
    out = []
    w = out.append
    w("# sendjobs, pgmq and pg-boss side by side\n")
    out.extend(common.header_lines(meta))
    w("")
    w(
        "One cluster (`tests/cluster.py`), one database per peer, the arms interleaved in a shuffled "
        f"order at every grid point; {g['duration_s']} s per run, {g['reps']} repetitions; "
        "`pgbench -n -M prepared`, one transaction = claim n jobs, then complete them (two "
        "statements, each in its own transaction, as each client sends them). Every run starts "
        "with `backlog + what it will consume` waiting jobs (vacuumed, after a CHECKPOINT) and ends "
        'with at least `backlog`. Method: bench/README.md, section "The peers".\n'
    )
    w("Settings: " + ", ".join(meta["settings"]) + ".\n")
    w("## Versions\n")
    pe = meta["peers"]
    if "sendjobs" in pe:
        w(f"- sendjobs {pe['sendjobs']['version']} (installed extension).")
    if "pgmq" in pe:
        m = pe["pgmq"]
        w(
            f"- pgmq: crate {m['crate']} (sha256 `{m['sha256']}`), its embedded SQL {m['sql_version']} "
            "installed as plain SQL; statements: "
            + "; ".join(f"{k} from `{v}`" for k, v in m["statements"].items())
            + "."
        )
    if "pgboss" in pe:
        m = pe["pgboss"]
        w(
            f"- pg-boss: npm {m['package']} (`{m['integrity']}`), schema version {m['schema_version']} "
            f"from `getConstructionPlans`, queue `{m['queue']['name']}` ({m['queue']['policy']}, table "
            f"`{m['queue']['table']}`); statements recorded from its client (node {m['node']}, "
            f"pg {m['pg (node driver)']}): fetch = `plans.fetchNextJob`, complete = `plans.completeJobs` "
            "(fenced, as its worker settles)."
        )
    w("")
    bad = [r for r in rows if not r["valid"]]
    for backlog in g["backlogs"]:
        w(f"## Throughput, backlog {backlog:,}: jobs/s, median (min-max) of {g['reps']}\n")
        head = "| clients | batch | waiting at start | " + " | ".join(arms) + " |"
        ratios = compared_arms(arms)
        head += "".join(f" sendjobs/{x} |" for x in ratios)
        w(head)
        w("|---|---|---|" + "---|" * (len(arms) + len(ratios)))
        for b in g["batches"]:
            for c in g["clients"]:
                med = {}
                cells = []
                for arm in arms:
                    v = [
                        r["jobs_s"]
                        for r in good
                        if (r["backlog"], r["clients"], r["batch"], r["arm"]) == (backlog, c, b, arm)
                    ]
                    if v:
                        med[arm] = statistics.median(v)
                        cells.append(f"{med[arm]:,.0f} ({min(v):,.0f}-{max(v):,.0f})")
                    else:
                        cells.append("-")
                rat = [f"{med['sendjobs'] / med[x]:.2f}" if med.get("sendjobs") and med.get(x) else "-" for x in ratios]
                sp = [
                    int(r["start_pending"]) for r in good if (r["backlog"], r["clients"], r["batch"]) == (backlog, c, b)
                ]
                start = f"{min(sp):,}-{max(sp):,}" if sp else "-"
                w(f"| {c} | {b} | {start} | " + " | ".join(cells) + " |" + "".join(f" {x} |" for x in rat))
        w("")
    fc, fb = FOOT_POINT
    if fc in g["clients"] and fb in g["batches"]:
        w(f"## Footprint at {fc} client, batch {fb}: per job done, median of {g['reps']}\n")
        w(
            "WAL = `pg_current_wal_lsn()` difference around the run; dead tuples = the increase of "
            "`n_dead_tup` (and `n_tup_upd + n_tup_del`, each of which leaves one) summed over the "
            "peer's tables; growth = the increase of `pg_table_size` (heap, TOAST, maps) and "
            "`pg_indexes_size` during the run; sizes after = the tables as the run left them "
            "(waiting jobs plus the run's finished rows, of which the next run's preparation "
            "deletes the finished ones).\n"
        )
        w(
            "| backlog | arm | WAL B/job | dead tuples/job | upd+del/job | table growth B/job | "
            "index growth B/job | table MB after | indexes MB after | rows after | tables |"
        )
        w("|---|---|---|---|---|---|---|---|---|---|---|")
        sendjobs_tables = pe.get("sendjobs", {}).get("tables") or ["send_jobs", "send_job_events"]
        tabs = {
            "sendjobs": ", ".join(t.split(".")[-1] for t in sendjobs_tables),
            "pgmq-delete": "q_bench, a_bench",
            "pgmq-archive": "q_bench, a_bench",
            "pg-boss": "job_common",
        }
        for backlog in g["backlogs"]:
            for arm in arms:
                rs = [
                    r
                    for r in good
                    if (r["backlog"], r["clients"], r["batch"], r["arm"]) == (backlog, fc, fb, arm) and r["jobs"] > 0
                ]
                if not rs:
                    continue

                def med(f, rs=rs):
                    return statistics.median(f(r) for r in rs)

                w(
                    f"| {backlog:,} | {arm} | {med(lambda r: r['wal_bytes'] / r['jobs']):,.0f} | "
                    f"{med(lambda r: r['n_dead_tup_delta'] / r['jobs']):.2f} | "
                    f"{med(lambda r: (r['n_tup_upd'] + r['n_tup_del']) / r['jobs']):.2f} | "
                    f"{med(lambda r: (r['table_bytes'] - r['table_bytes_before']) / r['jobs']):,.0f} | "
                    f"{med(lambda r: (r['index_bytes'] - r['index_bytes_before']) / r['jobs']):,.0f} | "
                    f"{med(lambda r: r['table_bytes']) / 1e6:,.1f} | {med(lambda r: r['index_bytes']) / 1e6:,.1f} | "
                    f"{med(lambda r: r['rows_after']):,.0f} | {tabs.get(arm, '')} |"
                )
        w("")
    if any(r.get("wait_samples") for r in good):
        w(f"## What the backends waited for (--waits): share of the samples, median of {g['reps']}\n")
        w(
            "Every 10 ms of a run, each pgbench backend running a statement "
            "(`pg_stat_activity`): on the CPU (no wait event: running or ready to run), waiting "
            "for the WAL to be flushed at commit (`WALWrite` lock, `WALSync`, `WALWrite`), for a "
            "row lock (`transactionid`, `tuple`), for a buffer (its content or mapping lock, its "
            "I/O), or for anything else.\n"
        )
        w("| backlog | clients | batch | arm | samples | CPU | WAL flush | row locks | buffers | other |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for backlog in g["backlogs"]:
            for b in g["batches"]:
                for c in g["clients"]:
                    for arm in arms:
                        rs = [
                            r
                            for r in good
                            if (r["backlog"], r["clients"], r["batch"], r["arm"]) == (backlog, c, b, arm)
                            and r.get("wait_samples")
                        ]
                        if rs:
                            shares = [f"{statistics.median(float(r[f'wait_{k}']) for r in rs):.0%}" for k in WAITS]
                            samples = statistics.median(int(r["wait_samples"]) for r in rs)
                            w(f"| {backlog:,} | {c} | {b} | {arm} | {samples:,.0f} | " + " | ".join(shares) + " |")
        w("")
    av = sum(1 for r in good if r["autovacuums"])
    w("## Notes\n")
    w(
        f"- {len(good)} valid runs; {len(bad)} run(s) repeated because the queue fell below the backlog "
        "or failed"
        + (
            ": "
            + "; ".join(
                f"{r['arm']} backlog {r['backlog']:,} c{r['clients']} b{r['batch']} "
                f"rep {r['rep']} ({r['error'] or 'ended with %s waiting' % r['end_pending']})"
                for r in bad
            )
            if bad
            else ""
        )
        + "."
    )
    w(f"- Runs during which an autovacuum or autoanalyze completed in the peer's database: {av}.")
    w(
        f"- Scripts that ran (they hold the peers' SQL, so they stay out of the repository): "
        f"`{meta['scripts_dir']}`; raw data beside this report: `runs.csv` (one row per run), `meta.json`."
    )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
