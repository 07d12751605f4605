#!/usr/bin/env python3
"""The sendjobs demo: many workers, a flaky partner, faults on purpose, then proof.

Against a database where the extension can be created (scripts/demo.sh makes a
throwaway cluster), this script:

  * creates the extension, a business table `transactions` guarded by
    sendjobs_guard_terminal and linked with sendjobs_link_transactions, and a history
    table filled by a plain PL/pgSQL AFTER UPDATE trigger;
  * enqueues --jobs send jobs (one per business row, each with an idempotency key;
    some overdue, some scheduled a little later, some with a small max_attempts);
  * starts a stand-in partner (an HTTP server on 127.0.0.1) that records every request
    and fails some on purpose (500 = try again, 422 = rejected for good);
  * runs --workers concurrent workers (sendjobs_claim / sendjobs_heartbeat /
    sendjobs_finalize), some of which die between claim and finalize, stall past their
    lease, or send slowly while heartbeating;
  * runs a "late reconciler" that keeps trying to flip finished business rows between
    success and failed (the guard must refuse);
  * stops when every job is terminal and checks the invariants of CONTRACT.md against
    the partner's record, the workers' claim log and the database.

Exit status: 0 all invariants held, 1 invariant violations, 2 the run did not finish
(timeout or crash). Only psycopg2 and the standard library are used.
"""

import argparse
import collections
import datetime as dt
import hashlib
import http.server
import json
import os
import random
import socket
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request

try:
    import psycopg2
    import psycopg2.extras
except ImportError:  # pragma: no cover
    sys.exit("demo.py needs psycopg2: apt-get install python3-psycopg2 and run /usr/bin/python3")

QUEUES = ("acme", "globex")
TERMINAL_BUSINESS = ("success", "failed")


# ----------------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------------

def stable_rng(*parts):
    """A random.Random seeded from the parts, independent of PYTHONHASHSEED."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def ts(value):
    """A timestamptz (datetime) as epoch seconds."""
    return value.timestamp()


def fmt_ts(value):
    return value.astimezone(dt.timezone.utc).strftime("%H:%M:%S.%f") if value else "-"


class Violations:
    """Collects invariant violations, grouped by check name."""

    def __init__(self):
        self.lock = threading.Lock()
        self.items = collections.defaultdict(list)

    def add(self, check, detail):
        with self.lock:
            self.items[check].append(detail)

    def total(self):
        return sum(len(v) for v in self.items.values())


VIOLATIONS = Violations()
UNEXPECTED = []  # unexpected exceptions (tracebacks), reported as violations too
UNEXPECTED_LOCK = threading.Lock()


MAX_UNEXPECTED = 25  # more than this and the run is abandoned


def unexpected(where):
    text = f"{where}: {traceback.format_exc().strip()}"
    with UNEXPECTED_LOCK:
        UNEXPECTED.append(text)
        n = len(UNEXPECTED)
    if n <= 3:
        print(f"!! unexpected error in {where}:\n{text}", flush=True)
    elif n == 4:
        print("!! (further unexpected errors are counted, not printed)", flush=True)


def connect(args, name):
    conn = psycopg2.connect(
        host=args.host, port=args.port, user=args.user, dbname=args.dbname,
        password=args.password, application_name=name, connect_timeout=10,
    )
    conn.autocommit = True  # every call is its own transaction unless we say BEGIN
    with conn.cursor() as cur:
        cur.execute("SET TimeZone = 'UTC'")
        # Short retry backoff for the retries that leave retry_at NULL (defaults: 10 s / 1 h).
        cur.execute("SET sendjobs.retry_backoff_base = %s", (f"{args.backoff_ms}ms",))
        cur.execute("SET sendjobs.retry_backoff_max = %s", (f"{4 * args.backoff_ms}ms",))
    return conn


# ----------------------------------------------------------------------------------
# the stand-in partner
# ----------------------------------------------------------------------------------

class Partner:
    """An HTTP server that plays the partner: it records every request and fails some.

    Each business transaction has a fixed temperament, chosen from the seed:
      ok        200 always
      flaky     500 for its first k requests (k = 1..3), then 200
      down      500 always (the job ends `failed` through retries and max_attempts)
      rejected  422 always (the worker finalizes `failed` at once)
    A request may ask for a slow answer (header X-Delay) to exercise heartbeats.
    """

    def __init__(self, seed):
        self.seed = seed
        self.lock = threading.Lock()
        self.requests = []  # dicts: job, gen, worker, key, t, code
        self.per_txn = collections.Counter()
        partner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server naming)
                t = time.time()
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                code = partner.decide(body, t, self.headers)
                delay = float(self.headers.get("X-Delay") or 0)
                if delay > 0:
                    time.sleep(delay)
                reply = json.dumps({"ok": code == 200, "code": code}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *a):  # keep the demo's output readable
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="partner", daemon=True)

    def temperament(self, txn):
        r = stable_rng(self.seed, "partner", txn)
        u = r.random()
        if u < 0.04:
            return ("rejected", 0)
        if u < 0.09:
            return ("down", 0)
        if u < 0.25:
            return ("flaky", r.randint(1, 3))
        return ("ok", 0)

    def decide(self, body, t, headers):
        txn = body.get("transaction_id")
        kind, k = self.temperament(txn)
        with self.lock:
            self.per_txn[txn] += 1
            n = self.per_txn[txn]
            if kind == "rejected":
                code = 422
            elif kind == "down":
                code = 500
            elif kind == "flaky" and n <= k:
                code = 500
            else:
                code = 200
            self.requests.append({
                "job": int(body.get("job_id")), "gen": int(body.get("claim_generation")),
                "worker": headers.get("X-Worker"), "key": headers.get("Idempotency-Key"),
                "t": t, "code": code,
            })
        return code

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


# ----------------------------------------------------------------------------------
# the shared record the workers write (the "claims log" and friends)
# ----------------------------------------------------------------------------------

class Record:
    def __init__(self):
        self.lock = threading.Lock()
        self.claims = []        # job, gen, claimed_at, lease_end, worker, attempts, max_attempts
        self.finalizes = []     # job, gen, outcome, result, post status/gen/next/attempts, worker, late
        self.heartbeats = []    # job, gen, result, lease_end (when applied), worker
        self.counters = collections.Counter()

    def add(self, kind, item):
        with self.lock:
            getattr(self, kind).append(item)

    def count(self, name, n=1):
        with self.lock:
            self.counters[name] += n


# ----------------------------------------------------------------------------------
# workers
# ----------------------------------------------------------------------------------

class LostLease(Exception):
    """A heartbeat said `stale`: someone else holds the job now; stop working on it."""


class Worker(threading.Thread):
    def __init__(self, idx, args, partner_url, record, stop):
        super().__init__(name=f"worker-{idx}", daemon=True)
        self.idx = idx
        self.args = args
        self.url = partner_url
        self.record = record
        self.stop_event = stop
        self.rng = stable_rng(args.seed, "worker", idx)
        self.incarnation = 0
        self.conn = None
        # Most workers take any queue; some serve one partner only.
        self.queue = None if idx % 3 == 0 else QUEUES[idx % 2]
        self.lease = args.lease_seconds
        self.lease_sql = f"{self.lease} seconds"

    @property
    def wname(self):
        return f"w{self.idx}.{self.incarnation}"

    def reconnect(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = connect(self.args, f"sendjobs-demo {self.wname}")

    # -- DB calls ---------------------------------------------------------------------

    def claim(self):
        with self.conn.cursor() as cur:
            cur.execute(
                "SELECT id, claim_generation, lease_expires_at, claimed_at, payload,"
                "       transaction_id, idempotency_key, attempts, max_attempts"
                "  FROM sendjobs_claim(%s, %s::interval, %s)",
                (self.args.batch, self.lease_sql, self.queue),
            )
            rows = cur.fetchall()
        t_local = time.monotonic()
        jobs = []
        for (jid, gen, lease_end, claimed_at, payload, txn, key, attempts, max_attempts) in rows:
            job = {
                "job": jid, "gen": gen, "lease_end": lease_end, "claimed_at": claimed_at,
                "payload": payload, "txn": txn, "key": key, "attempts": attempts,
                "max_attempts": max_attempts, "worker": self.wname, "t_local": t_local,
            }
            self.record.add("claims", {k: job[k] for k in (
                "job", "gen", "claimed_at", "lease_end", "worker", "attempts", "max_attempts")})
            jobs.append(job)
        return jobs

    def heartbeat(self, job):
        """Extends the lease; reads the new expiry back in the same transaction."""
        with self.conn.cursor() as cur:
            cur.execute("BEGIN")
            try:
                cur.execute("SELECT sendjobs_heartbeat(%s, %s, %s::interval)",
                            (job["job"], job["gen"], self.lease_sql))
                result = cur.fetchone()[0]
                cur.execute("SELECT status, claim_generation, lease_expires_at FROM send_jobs WHERE id = %s",
                            (job["job"],))
                status, gen, lease_end = cur.fetchone()
                cur.execute("COMMIT")
            except Exception:
                cur.execute("ROLLBACK")
                raise
        self.record.count(f"heartbeat_{result}")
        self.record.add("heartbeats", {
            "job": job["job"], "gen": job["gen"], "result": result, "worker": self.wname,
            "lease_end": lease_end if result == "applied" else None,
        })
        if result == "applied":
            if status != "in_flight" or gen != job["gen"]:
                VIOLATIONS.add("heartbeat applied without holding the job",
                               f"job {job['job']} gen {job['gen']}: row is {status} gen {gen}")
            job["lease_end"] = lease_end
            job["t_local"] = time.monotonic()
        elif result == "stale":
            if status == "in_flight" and gen == job["gen"]:
                VIOLATIONS.add("heartbeat refused while holding the job",
                               f"job {job['job']} gen {job['gen']} is still in_flight at that generation")
            raise LostLease()
        else:
            VIOLATIONS.add("heartbeat returned an unknown value", f"job {job['job']}: {result!r}")
            raise LostLease()

    def finalize(self, job, outcome, error=None, late=False):
        """Finalizes; reads the row back in the same transaction to check what happened."""
        with self.conn.cursor() as cur:
            cur.execute("BEGIN")
            try:
                cur.execute("SELECT now()")
                txn_now = cur.fetchone()[0]
                if outcome == "retry" and self.rng.random() < 0.5:
                    # Retry soon, at a time computed by the database's clock.
                    delay = round(self.rng.uniform(0.1, 0.4), 3)
                    cur.execute(
                        "SELECT sendjobs_finalize(%s, %s, 'retry', %s, clock_timestamp() + %s::interval)",
                        (job["job"], job["gen"], error, f"{delay} seconds"))
                    retry_mode = "retry_at"
                elif outcome == "retry":
                    # No retry_at: the backoff GUCs decide (set short for the demo).
                    cur.execute("SELECT sendjobs_finalize(%s, %s, 'retry', %s)",
                                (job["job"], job["gen"], error))
                    retry_mode = "backoff"
                else:
                    cur.execute("SELECT sendjobs_finalize(%s, %s, %s, %s)",
                                (job["job"], job["gen"], outcome, error))
                    retry_mode = None
                result = cur.fetchone()[0]
                cur.execute(
                    "SELECT status, claim_generation, next_attempt_at, attempts, max_attempts"
                    "  FROM send_jobs WHERE id = %s", (job["job"],))
                status, gen, next_at, attempts, max_attempts = cur.fetchone()
                cur.execute("COMMIT")
            except Exception:
                cur.execute("ROLLBACK")
                raise
        self.record.count(f"finalize_{outcome}_{result}")
        if retry_mode and result == "applied":
            self.record.count(f"retry_{retry_mode}")
        self.record.add("finalizes", {
            "job": job["job"], "gen": job["gen"], "outcome": outcome, "result": result,
            "status": status, "post_gen": gen, "next_at": next_at, "attempts": attempts,
            "max_attempts": max_attempts, "worker": self.wname, "late": late, "txn_now": txn_now,
        })
        where = f"job {job['job']} gen {job['gen']} {outcome}"
        if result == "applied":
            if gen != job["gen"]:
                VIOLATIONS.add("finalize applied with an old generation", f"{where}: row is at gen {gen}")
            expected = {"sent": ("sent",), "failed": ("failed",),
                        "retry": ("failed",) if attempts >= max_attempts else ("pending",)}[outcome]
            if status not in expected:
                VIOLATIONS.add("finalize applied but the row says otherwise",
                               f"{where}: status {status}, attempts {attempts}/{max_attempts}")
            if outcome == "retry" and status == "pending" and not next_at > txn_now:
                VIOLATIONS.add("retry scheduled in the past",
                               f"{where}: next_attempt_at {next_at} <= transaction start {txn_now}")
        elif result == "stale":
            if status == "in_flight" and gen == job["gen"]:
                VIOLATIONS.add("finalize refused while holding the job",
                               f"{where}: row still in_flight at that generation")
        else:
            VIOLATIONS.add("finalize returned an unknown value", f"{where}: {result!r}")
        return result

    # -- the partner ------------------------------------------------------------------

    def post(self, job, delay=0.0):
        body = json.dumps({
            "job_id": job["job"], "claim_generation": job["gen"],
            "transaction_id": job["txn"], "payload": job["payload"],
        }).encode()
        req = urllib.request.Request(self.url, data=body, method="POST", headers={
            "Content-Type": "application/json", "Idempotency-Key": job["key"] or "",
            "X-Worker": self.wname, "X-Delay": str(delay),
        })
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, ""
        except urllib.error.HTTPError as e:
            return e.code, f"partner answered HTTP {e.code}"
        except (urllib.error.URLError, OSError) as e:
            return None, f"partner unreachable: {e}"

    def post_with_heartbeats(self, job, delay):
        """A slow send: heartbeat every lease/3 while it runs; give up on `stale`."""
        out = {}
        t = threading.Thread(target=lambda: out.update(r=self.post(job, delay)), daemon=True)
        t.start()
        while True:
            t.join(timeout=self.lease / 3.0)
            if not t.is_alive():
                return out["r"]
            self.heartbeat(job)  # raises LostLease on stale

    # -- the loop ---------------------------------------------------------------------

    def run(self):
        try:
            self.reconnect()
        except Exception:
            unexpected(f"{self.name} connect")
            return
        while not self.stop_event.is_set():
            try:
                self.one_batch()
            except Exception:
                unexpected(self.wname)
                self.record.count("worker_errors")
                time.sleep(0.2)
                try:
                    self.reconnect()
                except Exception:
                    unexpected(f"{self.wname} reconnect")
                    time.sleep(1)
        try:
            self.conn.close()
        except Exception:
            pass

    def one_batch(self):
        jobs = self.claim()
        if not jobs:
            self.record.count("empty_claims")
            time.sleep(0.05)
            return
        self.record.count("batches")
        r = self.rng.random()
        a = self.args
        mode = ("die" if r < a.p_die else
                "stall" if r < a.p_die + a.p_stall else
                "slow" if r < a.p_die + a.p_stall + a.p_slow else "normal")
        special = self.rng.randrange(len(jobs))      # the job the fault hits
        die_after_send = self.rng.random() < 0.6     # die after sending it, or before

        for i, job in enumerate(jobs):
            if mode == "die" and i == special and not die_after_send:
                return self.die(len(jobs) - i)
            try:
                # A careful worker does not start a send on a lease that is half gone:
                # it heartbeats first (local monotonic time, only a hint; the DB decides).
                if time.monotonic() - job["t_local"] > self.lease * 0.5:
                    self.heartbeat(job)
                if mode == "slow" and i == special:
                    self.record.count("slow_sends")
                    code, err = self.post_with_heartbeats(job, delay=self.lease * 1.6)
                else:
                    code, err = self.post(job)
            except LostLease:
                self.record.count("dropped_after_stale_heartbeat")
                continue
            if mode == "die" and i == special:
                return self.die(len(jobs) - i)
            late = False
            if mode == "stall" and i == special:
                # Sent, then stuck (GC pause, swapped out, ...) well past the lease.
                self.record.count("stalls")
                time.sleep(self.lease + self.args.stall_extra)
                late = True
            if code == 200:
                result = self.finalize(job, "sent", late=late)
            elif code == 422:
                result = self.finalize(job, "failed", err, late=late)
            else:
                result = self.finalize(job, "retry", err, late=late)
            if late:
                self.record.count(f"late_finalize_{result}")

    def die(self, dropped):
        """Crash between claim and finalize: the connection goes, the batch is lost."""
        self.record.count("deaths")
        self.record.count("jobs_dropped_by_death", dropped)
        try:
            self.conn.close()
        except Exception:
            pass
        self.conn = None
        self.incarnation += 1
        time.sleep(self.rng.uniform(0.0, 0.2))
        self.reconnect()  # a fresh worker takes its place


# ----------------------------------------------------------------------------------
# the late reconciler
# ----------------------------------------------------------------------------------

class Reconciler(threading.Thread):
    """Now and then tries to flip a finished business row success <-> failed."""

    def __init__(self, args, stop, record):
        super().__init__(name="reconciler", daemon=True)
        self.args = args
        self.stop_event = stop
        self.record = record
        self.rng = stable_rng(args.seed, "reconciler")
        self.sample_warning = None

    def run(self):
        try:
            conn = connect(self.args, "sendjobs-demo reconciler")
        except Exception:
            unexpected("reconciler connect")
            return
        try:
            while not self.stop_event.is_set():
                time.sleep(self.rng.uniform(0.01, 0.05))
                try:
                    self.attempt(conn)
                except Exception:
                    unexpected("reconciler")
                    time.sleep(0.5)
        finally:
            conn.close()

    def attempt(self, conn):
        with conn.cursor() as cur:
            if self.rng.random() < 0.5:  # one that has just finished ...
                cur.execute("SELECT transaction_id, new_status FROM transaction_history"
                            " WHERE new_status IN ('success', 'failed') ORDER BY id DESC LIMIT 20")
            else:  # ... or any finished one
                cur.execute("SELECT id, status FROM transactions WHERE status IN ('success', 'failed')"
                            " AND id LIKE 'txn-%' ORDER BY random() LIMIT 1")
            rows = cur.fetchall()
            if not rows:
                return
            txn, status = self.rng.choice(rows)
            target = "failed" if status == "success" else "success"
            del conn.notices[:]
            cur.execute("UPDATE transactions SET status = %s, updated_at = now()"
                        " WHERE id = %s AND status = %s", (target, txn, status))
            rowcount = cur.rowcount
            warnings = [n for n in conn.notices if "WARNING" in n]
            cur.execute("SELECT status FROM transactions WHERE id = %s", (txn,))
            after = cur.fetchone()[0]
        self.record.count("guard_attempts")
        if after == status:
            self.record.count("guard_refusals")
            if rowcount == 0:
                self.record.count("guard_refusals_rowcount0")
            if warnings:
                self.record.count("guard_warnings")
                self.sample_warning = self.sample_warning or warnings[0].strip()
        else:
            VIOLATIONS.add("guard let a terminal business row flip",
                           f"{txn}: {status} -> {after} (rowcount {rowcount})")


# ----------------------------------------------------------------------------------
# setup, enqueue
# ----------------------------------------------------------------------------------

SETUP_SQL = """
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP TABLE IF EXISTS transaction_history, transactions CASCADE;
DROP FUNCTION IF EXISTS record_transaction_history();

CREATE EXTENSION sendjobs SCHEMA public;

CREATE TABLE transactions (
    id           text PRIMARY KEY,
    amount_cents bigint NOT NULL,
    status       text NOT NULL DEFAULT 'pending',
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE transaction_history (
    id             bigserial PRIMARY KEY,
    transaction_id text NOT NULL,
    old_status     text,
    new_status     text,
    changed_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    changed_by     text DEFAULT current_setting('application_name')
);

-- An ordinary audit trigger: it also fires when sendjobs_finalize stamps a row.
CREATE FUNCTION record_transaction_history() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status THEN
        INSERT INTO transaction_history (transaction_id, old_status, new_status)
        VALUES (NEW.id, OLD.status, NEW.status);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER transactions_history AFTER UPDATE ON transactions
    FOR EACH ROW EXECUTE FUNCTION record_transaction_history();

SELECT sendjobs_guard_terminal('transactions');
SELECT sendjobs_link_transactions('transactions', 'id', 'status');
"""


def plan_jobs(args):
    """The jobs to enqueue, deterministic from the seed."""
    r = stable_rng(args.seed, "jobs")
    plan = []
    for i in range(args.jobs):
        txn = f"txn-{i:06d}"
        u = r.random()
        # ~10% an overdue backlog (scheduled an hour ago: the clock that bug 1 used),
        # ~5% scheduled a moment later, the rest due now.
        run_in = -3600.0 if u < 0.10 else round(r.uniform(0.5, 3.0), 3) if u < 0.15 else None
        plan.append({
            "txn": txn,
            "amount": r.randint(100, 500_000),
            "queue": QUEUES[i % 2],
            "run_in": run_in,
            "max_attempts": 2 if r.random() < 0.12 else None,
            "key": f"pay-{txn}",
        })
    return plan


def setup_and_enqueue(args, conn, plan):
    with conn.cursor() as cur:
        cur.execute(SETUP_SQL)
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'sendjobs'")
        version = cur.fetchone()[0]
        print(f"   extension sendjobs {version} created; transactions guarded and linked")
        psycopg2.extras.execute_values(
            cur, "INSERT INTO transactions (id, amount_cents) VALUES %s",
            [(p["txn"], p["amount"]) for p in plan], page_size=1000)
        t0 = time.monotonic()
        ids = psycopg2.extras.execute_values(
            cur,
            "SELECT v.txn, sendjobs_enqueue(v.payload, v.queue,"
            "       CASE WHEN v.run_in IS NULL THEN NULL"
            "            ELSE clock_timestamp() + make_interval(secs => v.run_in) END,"
            "       v.txn, v.key, v.max_attempts)"
            "  FROM (VALUES %s) AS v(payload, queue, run_in, txn, key, max_attempts)",
            [(json.dumps({"transaction_id": p["txn"], "amount_cents": p["amount"], "currency": "EUR"}),
              p["queue"], p["run_in"], p["txn"], p["key"], p["max_attempts"]) for p in plan],
            template="(%s::jsonb, %s::text, %s::float8, %s::text, %s::text, %s::int)",
            page_size=1000, fetch=True)
        job_of_txn = dict(ids)
        print(f"   enqueued {len(job_of_txn)} jobs in {time.monotonic() - t0:.2f} s")

        # Idempotency: enqueueing the same keys again (with another payload) creates nothing.
        again = plan[: min(50, len(plan))]
        for p in again:
            cur.execute("SELECT sendjobs_enqueue(%s::jsonb, %s, NULL, %s, %s)",
                        (json.dumps({"duplicate": True}), p["queue"], p["txn"], p["key"]))
            jid = cur.fetchone()[0]
            if jid != job_of_txn[p["txn"]]:
                VIOLATIONS.add("idempotency key created a second job",
                               f"{p['key']}: first {job_of_txn[p['txn']]}, again {jid}")
        cur.execute("SELECT count(*), count(*) FILTER (WHERE payload ? 'duplicate') FROM send_jobs")
        n, dup = cur.fetchone()
        if n != len(plan) or dup:
            VIOLATIONS.add("idempotency key created a second job",
                           f"{n} jobs for {len(plan)} keys, {dup} with the duplicate payload")
        print(f"   re-enqueued {len(again)} idempotency keys: still {n} jobs")

        cur.execute("SELECT id, transaction_id, next_attempt_at, max_attempts FROM send_jobs")
        initial = {r[0]: {"txn": r[1], "next_at": r[2], "max_attempts": r[3]} for r in cur.fetchall()}
    return initial


# ----------------------------------------------------------------------------------
# guard demonstrations (after the run)
# ----------------------------------------------------------------------------------

def guard_demo(args, notes):
    conn = connect(args, "sendjobs-demo guard")
    cur = conn.cursor()
    try:
        cur.execute("SELECT id FROM transactions WHERE status = 'success' AND id LIKE 'txn-%' ORDER BY id LIMIT 1")
        row = cur.fetchone()
        if row:
            txn = row[0]
            # Same-value updates pass.
            del conn.notices[:]
            cur.execute("UPDATE transactions SET status = 'success', updated_at = now() WHERE id = %s", (txn,))
            ok = cur.rowcount == 1 and not [n for n in conn.notices if "WARNING" in n]
            notes.append(f"same-value update success -> success on {txn}: "
                         f"{'passes' if ok else 'NOT passed'} (rowcount {cur.rowcount})")
            if not ok:
                VIOLATIONS.add("guard refused a same-value update", f"{txn}: rowcount {cur.rowcount}")
            # guard_action = error: the statement fails.
            cur.execute("SET sendjobs.guard_action = 'error'")
            try:
                cur.execute("UPDATE transactions SET status = 'failed' WHERE id = %s", (txn,))
                VIOLATIONS.add("guard_action=error did not raise", f"{txn}: rowcount {cur.rowcount}")
                notes.append("guard_action=error: NO error raised")
            except psycopg2.Error as e:
                notes.append(f"guard_action=error: success -> failed fails with SQLSTATE {e.pgcode}: "
                             f"{(e.pgerror or '').strip().splitlines()[0]}")
            cur.execute("RESET sendjobs.guard_action")
            cur.execute("SELECT status FROM transactions WHERE id = %s", (txn,))
            if cur.fetchone()[0] != "success":
                VIOLATIONS.add("guard let a terminal business row flip", f"{txn} (guard_action=error)")

        # The declared exit failed -> pending is allowed (on a row that no job points at).
        cur.execute("INSERT INTO transactions (id, amount_cents, status) VALUES ('exit-demo', 1, 'failed')")
        steps = []
        for target in ("pending", "success", "failed"):
            del conn.notices[:]
            cur.execute("UPDATE transactions SET status = %s WHERE id = 'exit-demo'", (target,))
            cur.execute("SELECT status FROM transactions WHERE id = 'exit-demo'")
            steps.append((target, cur.fetchone()[0]))
        expect = [("pending", "pending"), ("success", "success"), ("failed", "success")]
        notes.append("exit demo on 'exit-demo': failed -> pending (allowed), pending -> success (allowed),"
                     " success -> failed (refused): " + ("as expected" if steps == expect else f"GOT {steps}"))
        if steps != expect:
            VIOLATIONS.add("guard exits not honoured", f"exit-demo steps {steps}, expected {expect}")
    finally:
        cur.close()
        conn.close()


# ----------------------------------------------------------------------------------
# the checks
# ----------------------------------------------------------------------------------

def check_everything(args, conn, initial, record, partner, stats):
    V = VIOLATIONS
    with conn.cursor() as cur:
        cur.execute("SELECT id, status, claim_generation, attempts, max_attempts, transaction_id,"
                    "       finished_at, lease_expires_at FROM send_jobs")
        jobs = {r[0]: dict(zip(("id", "status", "gen", "attempts", "max_attempts", "txn",
                                "finished_at", "lease_end"), r)) for r in cur.fetchall()}
        cur.execute("SELECT job_id, transaction_id, kind, claim_generation FROM send_job_events")
        events = collections.defaultdict(list)
        for job_id, txn, kind, gen in cur.fetchall():
            events[job_id].append({"txn": txn, "kind": kind, "gen": gen})
        cur.execute("SELECT id, status FROM transactions")
        business = dict(cur.fetchall())
        cur.execute("SELECT transaction_id, old_status, new_status FROM transaction_history ORDER BY id")
        history = collections.defaultdict(list)
        for txn, old, new in cur.fetchall():
            history[txn].append((old, new))

    # -- 7. nothing lost, and the run finished: every job terminal -----------------------
    missing = set(initial) - set(jobs)
    for jid in sorted(missing)[:10]:
        V.add("job lost", f"job {jid} vanished")
    not_terminal = [j for j in jobs.values() if j["status"] not in ("sent", "failed")]
    for j in not_terminal[:10]:
        V.add("job not terminal at the end", f"job {j['id']} is {j['status']}")
    if len(not_terminal) > 10:
        V.add("job not terminal at the end", f"... and {len(not_terminal) - 10} more")

    # -- 4. exactly one event per terminal job, matching kind and final generation ---------
    for jid, j in jobs.items():
        evs = events.get(jid, [])
        if j["status"] in ("sent", "failed"):
            if len(evs) != 1:
                V.add("terminal job without exactly one event", f"job {jid} ({j['status']}): {len(evs)} events")
                continue
            e = evs[0]
            if e["kind"] != j["status"]:
                V.add("event kind differs from job status", f"job {jid}: status {j['status']}, event {e['kind']}")
            if e["gen"] != j["gen"]:
                V.add("event generation differs from the final claim_generation",
                      f"job {jid}: job gen {j['gen']}, event gen {e['gen']}")
            if e["txn"] != j["txn"]:
                V.add("event transaction_id differs", f"job {jid}: {j['txn']} vs {e['txn']}")
        elif evs:
            V.add("event for a job that is not terminal", f"job {jid} ({j['status']}): {len(evs)} events")

    # -- business rows follow their jobs; 5. history never moves between terminal values ---
    want = {"sent": "success", "failed": "failed"}
    for jid, j in jobs.items():
        if j["status"] in want and business.get(j["txn"]) != want[j["status"]]:
            V.add("business row does not match its job",
                  f"{j['txn']}: job {jid} {j['status']}, row {business.get(j['txn'])}")
        if j["status"] in want:
            h = history.get(j["txn"], [])
            if h != [("pending", want[j["status"]])]:
                V.add("business row history is not exactly pending -> final", f"{j['txn']}: {h}")
    for txn, moves in history.items():
        for old, new in moves:
            if old in TERMINAL_BUSINESS and new in TERMINAL_BUSINESS and old != new:
                V.add("history shows a move between success and failed", f"{txn}: {old} -> {new}")

    # -- the claims log: 2. generations, 1. one unexpired lease at a time -------------------
    claims = collections.defaultdict(list)
    for c in record.claims:
        claims[c["job"]].append(c)
    fin = {}
    for f in record.finalizes:
        key = (f["job"], f["gen"])
        if key in fin:
            V.add("two finalizes for one claim (demo bug)", f"job {f['job']} gen {f['gen']}")
        fin[key] = f
    hb_lease = {}
    for h in record.heartbeats:
        if h["result"] == "applied":
            key = (h["job"], h["gen"])
            hb_lease[key] = max(hb_lease.get(key, h["lease_end"]), h["lease_end"])

    def held_until(job_id, gen, claim):
        """When the claim stopped holding the job: its lease end (heartbeats included),
        or the retry time if its holder released it with an applied retry."""
        f = fin.get((job_id, gen))
        if f and f["result"] == "applied" and f["outcome"] == "retry" and f["status"] == "pending":
            return "retry", f["next_at"]
        end = claim["lease_end"]
        if (job_id, gen) in hb_lease:
            end = max(end, hb_lease[(job_id, gen)])
        return "expiry", end

    reclaim_delays = []
    stats["claims"] = len(record.claims)
    stats["reclaims_after_expiry"] = 0
    stats["reclaims_after_retry"] = 0
    for jid, cs in claims.items():
        cs.sort(key=lambda c: c["gen"])
        gens = [c["gen"] for c in cs]
        if gens != list(range(1, len(gens) + 1)):
            V.add("claim generations not 1, 2, 3, ... (one increment per claim)", f"job {jid}: {gens}")
        j = jobs.get(jid)
        if j and (j["gen"] != len(cs) or j["attempts"] != len(cs)):
            V.add("claim_generation/attempts differ from the number of claims",
                  f"job {jid}: gen {j['gen']}, attempts {j['attempts']}, claims seen {len(cs)}")
        first = initial.get(jid)
        if first and cs and cs[0]["claimed_at"] < first["next_at"]:
            V.add("claimed before it was due",
                  f"job {jid}: claimed {fmt_ts(cs[0]['claimed_at'])}, due {fmt_ts(first['next_at'])}")
        for prev, nxt in zip(cs, cs[1:]):
            if nxt["claimed_at"] < prev["claimed_at"]:
                V.add("generation grew while claimed_at went back",
                      f"job {jid}: gen {prev['gen']} at {fmt_ts(prev['claimed_at'])}, "
                      f"gen {nxt['gen']} at {fmt_ts(nxt['claimed_at'])}")
            f = fin.get((jid, prev["gen"]))
            if f and f["result"] == "applied" and f["status"] in ("sent", "failed"):
                V.add("claimed again after a terminal finalize", f"job {jid}: gen {prev['gen']} -> {nxt['gen']}")
                continue
            how, until = held_until(jid, prev["gen"], prev)
            if nxt["claimed_at"] < until:
                V.add("two claims with overlapping unexpired leases",
                      f"job {jid}: gen {prev['gen']} ({prev['worker']}) held until {fmt_ts(until)} ({how}), "
                      f"gen {nxt['gen']} ({nxt['worker']}) claimed at {fmt_ts(nxt['claimed_at'])}")
            if how == "expiry":
                stats["reclaims_after_expiry"] += 1
                reclaim_delays.append(ts(nxt["claimed_at"]) - ts(until))
            else:
                stats["reclaims_after_retry"] += 1
        # the last claim is the one that finished the job
        if j and j["status"] in ("sent", "failed") and cs:
            f = fin.get((jid, cs[-1]["gen"]))
            if not f or f["result"] != "applied" or f["status"] != j["status"]:
                V.add("terminal job not finished by an applied finalize of its last claim",
                      f"job {jid} ({j['status']}) gen {cs[-1]['gen']}: finalize {f and (f['outcome'], f['result'])}")
    for jid, j in jobs.items():
        if j["gen"] > 0 and jid not in claims:
            V.add("claim_generation/attempts differ from the number of claims", f"job {jid}: gen {j['gen']}, no claim seen")
    stats["max_reclaim_delay"] = max(reclaim_delays) if reclaim_delays else 0.0

    # -- 3. stale answers only when the caller really lost the job -------------------------
    stats["stale_finalizes"] = 0
    for f in record.finalizes:
        last_gen = len(claims.get(f["job"], []))
        if f["result"] == "stale":
            stats["stale_finalizes"] += 1
            if f["gen"] >= last_gen:
                V.add("finalize refused although nobody reclaimed",
                      f"job {f['job']} gen {f['gen']} ({f['worker']}); last claim gen {last_gen}")
        elif f["outcome"] in ("sent", "failed") and f["gen"] != last_gen:
            V.add("terminal finalize applied to a claim that was later reclaimed",
                  f"job {f['job']} gen {f['gen']}; last claim gen {last_gen}")
    for h in record.heartbeats:
        if h["result"] == "stale" and h["gen"] >= len(claims.get(h["job"], [])):
            V.add("heartbeat refused although nobody reclaimed", f"job {h['job']} gen {h['gen']}")

    # -- the partner's record: 6. re-sends only after the previous holder lost the job ------
    sends = collections.defaultdict(list)
    for r in partner.requests:
        sends[r["job"]].append(r)
    by_gen = {(c["job"], c["gen"]): c for c in record.claims}
    stats["resent_jobs"] = 0
    stats["resends"] = 0
    stats["resends_after_retry"] = 0
    stats["resends_after_expiry"] = 0
    stats["duplicate_deliveries"] = 0
    stats["sends_after_own_lease"] = 0
    for jid, rs in sends.items():
        rs.sort(key=lambda r: (r["gen"], r["t"]))
        for r in rs:
            c = by_gen.get((jid, r["gen"]))
            if c is None:
                V.add("partner got a send for a claim nobody made", f"job {jid} gen {r['gen']}")
                continue
            if r["t"] + 0.001 < ts(c["claimed_at"]):
                V.add("send before its claim", f"job {jid} gen {r['gen']}")
            how, until = held_until(jid, r["gen"], c)
            if how == "expiry" and r["t"] > ts(until):
                stats["sends_after_own_lease"] += 1  # worker behaviour, shown for information
        if len({r["gen"] for r in rs}) != len(rs):
            V.add("two sends under one claim (demo bug)", f"job {jid}: {[r['gen'] for r in rs]}")
        if len(rs) > 1:
            stats["resent_jobs"] += 1
        oks = [r for r in rs if r["code"] == 200]
        if len(oks) > 1:
            stats["duplicate_deliveries"] += len(oks) - 1
        for prev, nxt in zip(rs, rs[1:]):
            stats["resends"] += 1
            cp, cn = by_gen.get((jid, prev["gen"])), by_gen.get((jid, nxt["gen"]))
            if not cp or not cn:
                continue
            how, until = held_until(jid, prev["gen"], cp)
            stats[f"resends_after_{how}"] += 1
            # The new holder's claim, and the re-send itself, come only after the previous
            # sender lost the job (lease expired) or gave it back (applied retry).
            if cn["claimed_at"] < until or nxt["t"] + 0.001 < ts(until):
                V.add("re-send before the previous holder's lease expired",
                      f"job {jid}: gen {prev['gen']} held until {fmt_ts(until)} ({how}); gen {nxt['gen']} "
                      f"claimed {fmt_ts(cn['claimed_at'])}, sent at {nxt['t']:.6f}")
        j = jobs.get(jid)
        if j and j["status"] == "sent" and not any(r["gen"] == j["gen"] and r["code"] == 200 for r in rs):
            V.add("job sent without a successful send under its final claim", f"job {jid} gen {j['gen']}")
    for jid, j in jobs.items():
        if j["status"] == "sent" and jid not in sends:
            V.add("job sent but the partner never heard of it", f"job {jid}")

    # -- retry -> failed path -----------------------------------------------------------
    stats["failed_direct"] = sum(1 for f in record.finalizes
                                 if f["result"] == "applied" and f["outcome"] == "failed")
    stats["failed_by_max_attempts"] = sum(1 for f in record.finalizes
                                          if f["result"] == "applied" and f["outcome"] == "retry"
                                          and f["status"] == "failed")
    stats["jobs"] = len(jobs)
    stats["sent"] = sum(1 for j in jobs.values() if j["status"] == "sent")
    stats["failed"] = sum(1 for j in jobs.values() if j["status"] == "failed")
    stats["events"] = sum(len(v) for v in events.values())
    stats["partner_requests"] = len(partner.requests)
    stats["partner_codes"] = collections.Counter(r["code"] for r in partner.requests)


# ----------------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------------

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5432)
    p.add_argument("--user", default="postgres")
    p.add_argument("--password", default=os.environ.get("PGPASSWORD"))
    p.add_argument("--dbname", default="postgres")
    p.add_argument("--jobs", type=int, default=3000, help="send jobs to enqueue")
    p.add_argument("--workers", type=int, default=8, help="concurrent workers")
    p.add_argument("--batch", type=int, default=10, help="jobs per sendjobs_claim call")
    p.add_argument("--lease-seconds", type=float, default=2.0, help="lease each claim asks for")
    p.add_argument("--seed", type=int, default=42, help="seed of every random choice")
    p.add_argument("--timeout", type=float, default=150.0, help="give up after this many seconds of work")
    p.add_argument("--p-die", type=float, default=0.05, help="share of batches whose worker dies")
    p.add_argument("--p-stall", type=float, default=0.05, help="share of batches whose worker stalls past the lease")
    p.add_argument("--p-slow", type=float, default=0.03, help="share of batches with a slow, heartbeated send")
    p.add_argument("--stall-extra", type=float, default=1.0, help="a stall lasts lease + this many seconds")
    p.add_argument("--backoff-ms", type=int, default=150, help="sendjobs.retry_backoff_base for the workers")
    a = p.parse_args()
    if a.jobs < 1 or a.workers < 1 or a.batch < 1 or a.lease_seconds <= 0:
        p.error("--jobs, --workers, --batch must be >= 1 and --lease-seconds > 0")
    return a


def main():
    args = parse_args()
    t_start = time.monotonic()
    print(f"== sendjobs demo: {args.jobs} jobs, {args.workers} workers, batch {args.batch}, "
          f"lease {args.lease_seconds:g} s, seed {args.seed}", flush=True)
    print(f"   faults per batch: die {args.p_die:.0%}, stall {args.p_stall:.0%}, slow send {args.p_slow:.0%}")

    conn = connect(args, "sendjobs-demo main")
    print("-- setup")
    plan = plan_jobs(args)
    initial = setup_and_enqueue(args, conn, plan)

    partner = Partner(args.seed)
    partner.start()
    url = f"http://127.0.0.1:{partner.port}/send"
    print(f"   partner listening on {url}")

    record = Record()
    stop = threading.Event()
    workers = [Worker(i, args, url, record, stop) for i in range(args.workers)]
    reconciler = Reconciler(args, stop, record)
    print("-- run")
    t_run = time.monotonic()
    for w in workers:
        w.start()
    reconciler.start()

    finished = False
    last_print = 0.0
    while True:
        time.sleep(0.25)
        elapsed = time.monotonic() - t_run
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT count(*) FILTER (WHERE status NOT IN ('sent', 'failed')),"
                            "       count(*) FILTER (WHERE status = 'sent'),"
                            "       count(*) FILTER (WHERE status = 'failed'),"
                            "       count(*) FILTER (WHERE status = 'in_flight') FROM send_jobs")
                open_, sent, failed, in_flight = cur.fetchone()
        except psycopg2.Error:
            unexpected("progress poll")
            print("!! lost the database connection: giving up", flush=True)
            break
        if open_ == 0:
            finished = True
        if finished or elapsed - last_print >= 3.0:
            last_print = elapsed
            c = record.counters
            print(f"   t={elapsed:5.1f}s  terminal {sent + failed}/{args.jobs} (sent {sent}, failed {failed}),"
                  f" in_flight {in_flight}; deaths {c['deaths']}, stalls {c['stalls']},"
                  f" stale finalizes {sum(v for k, v in c.items() if k.startswith('finalize_') and k.endswith('_stale'))},"
                  f" guard refusals {c['guard_refusals']}", flush=True)
        if finished:
            break
        if elapsed > args.timeout:
            print(f"!! timeout: {open_} jobs still not terminal after {args.timeout:g} s", flush=True)
            break
        if not any(w.is_alive() for w in workers):
            print("!! every worker has exited", flush=True)
            break
        if len(UNEXPECTED) > MAX_UNEXPECTED:
            print(f"!! more than {MAX_UNEXPECTED} unexpected errors: giving up", flush=True)
            break
    run_seconds = time.monotonic() - t_run

    stop.set()
    for w in workers + [reconciler]:
        w.join(timeout=args.lease_seconds * 3 + args.stall_extra + 35)
    stuck = [w.name for w in workers + [reconciler] if w.is_alive()]
    if stuck:
        print(f"!! threads still running: {stuck}")
    partner.stop()

    print("-- guard demonstrations")
    notes = []
    try:
        guard_demo(args, notes)
    except Exception:
        unexpected("guard demo")
    for n in notes:
        print(f"   {n}")

    print("-- checks")
    stats = {}
    try:
        conn.close()
        conn = connect(args, "sendjobs-demo checks")
        check_everything(args, conn, initial, record, partner, stats)
        conn.close()
    except Exception:
        unexpected("checks")
    for text in UNEXPECTED:
        lines_ = text.splitlines()
        VIOLATIONS.add("unexpected error", f"{lines_[0]} ... {lines_[-1]}")

    c = record.counters
    codes = stats.get("partner_codes", {})
    g = lambda k: stats.get(k, 0)  # noqa: E731
    lines = [
        ("jobs", f"{g('jobs')}"),
        ("  sent", f"{g('sent')}"),
        ("  failed", f"{g('failed')}  (422 -> 'failed': {g('failed_direct')},"
                     f" retry -> failed at max_attempts: {g('failed_by_max_attempts')})"),
        ("events (outbox rows)", f"{g('events')}"),
        ("claims", f"{g('claims')}  (re-claimed after lease expiry: {g('reclaims_after_expiry')},"
                   f" after retry: {g('reclaims_after_retry')}; longest wait past an expired lease"
                   f" {g('max_reclaim_delay'):.3f} s)"),
        ("sends (partner requests)", f"{g('partner_requests')}  (200: {codes.get(200, 0)},"
                                     f" 500: {codes.get(500, 0)}, 422: {codes.get(422, 0)})"),
        ("re-sends", f"{g('resends')} on {g('resent_jobs')} jobs  (after partner error + retry:"
                     f" {g('resends_after_retry')}, after a lease expiry: {g('resends_after_expiry')};"
                     f" every one checked: claimed and sent at/after the previous holder's lease end"
                     f" or retry time)"),
        ("duplicate deliveries", f"{g('duplicate_deliveries')}  (a 2nd+ HTTP 200 for one job: at-least-once,"
                                 f" each after a lease expiry)"),
        ("stale finalizes refused", f"{g('stale_finalizes')}  (late finalizes after a stall: "
                                    f"stale {c['late_finalize_stale']}, applied {c['late_finalize_applied']})"),
        ("heartbeats", f"applied {c['heartbeat_applied']}, stale {c['heartbeat_stale']}"
                       f"  (slow sends {c['slow_sends']}; jobs dropped after a stale heartbeat"
                       f" {c['dropped_after_stale_heartbeat']})"),
        ("retries", f"with retry_at {c['retry_retry_at']}, with backoff (retry_at NULL) {c['retry_backoff']}"),
        ("sends after own lease", f"{g('sends_after_own_lease')}  (information: a send that started after its"
                                  f" claim's lease end; the worker then finalizes stale or late)"),
        ("worker deaths", f"{c['deaths']}  (claimed jobs dropped: {c['jobs_dropped_by_death']})"),
        ("stalls", f"{c['stalls']}"),
        ("guard refusals", f"{c['guard_refusals']} of {c['guard_attempts']} flips tried  "
                           f"(rowcount 0: {c['guard_refusals_rowcount0']}, with WARNING: {c['guard_warnings']})"),
        ("run time", f"{run_seconds:.1f} s of work, {time.monotonic() - t_start:.1f} s in all"),
        ("invariant violations", f"{VIOLATIONS.total()}"),
    ]
    if reconciler.sample_warning:
        print(f"   a guard WARNING: {reconciler.sample_warning}")
    print("== summary")
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"   {k:<{width}}  {v}")
    if VIOLATIONS.total():
        print("== invariant violations")
        for check, details in sorted(VIOLATIONS.items.items()):
            print(f"   {check}: {len(details)}")
            for d in details[:5]:
                print(f"      - {d}")
            if len(details) > 5:
                print(f"      - ... and {len(details) - 5} more")
    if not finished:
        print("== RESULT: the run did not finish")
        return 2
    if VIOLATIONS.total():
        print("== RESULT: FAILED, invariants violated")
        return 1
    print("== RESULT: OK, every invariant held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
