"""What scripts/demo.py and scripts/soak.py share: workers, a stand-in partner, the
record of every call, and the invariant checker (written once, used by both).

How a run is recorded, and why it stays true across crashes and failovers
--------------------------------------------------------------------------
Three records are kept, and the checker compares them:

* The partner's record (`Partner.requests`): every HTTP send it received -- job id,
  claim generation, the instant it arrived (this process's clock, which is the
  database server's clock: both are local), the answer. It lives in this process,
  outside the database, so it survives server crashes and failovers.

* The harness's record (`Record.calls`): every database call a worker made and what
  came back. A call whose answer never reached the worker (the backend was
  terminated, the server crashed, the connection broke) is recorded as *unknown*:
  it may or may not have committed. Only an answer that came back counts as
  evidence: a finalize is `applied` only when the call returned `applied`.

* The witness tables (`harness.claims`, `harness.heartbeats`, `harness.finalizes`):
  each worker call writes one witness row *in the same transaction* as the call
  itself (the claim in the same statement), with the answer and the job's row as
  the call left it. Postgres commits both or neither, so after a crash or a failover
  the surviving witness rows are exactly the calls whose effects survived -- including
  calls whose answer never reached their worker (a claim that committed just before
  the connection broke is invisible to the worker, not to the checker). The witness
  adds no locks on send_jobs and changes nothing the extension does.

The checker then proves: every answer that came back is in the database (durability
across crashes and failover); the witness history of each job obeys the seven
invariants of CONTRACT.md; and the partner's record agrees with that history
(re-sends only after the previous holder's lease, as the database recorded it at
claim and heartbeat time, had ended).

Only psycopg2 (Debian: python3-psycopg2) and the standard library are used.
"""

import collections
import datetime as dt
import hashlib
import http.server
import itertools
import json
import random
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
    sys.exit("needs psycopg2: apt-get install python3-psycopg2 and run /usr/bin/python3")

QUEUES = ("acme", "globex")
TERMINAL = ("sent", "failed")
TERMINAL_BUSINESS = ("success", "failed")
BUSINESS_OF = {"sent": "success", "failed": "failed"}


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
    if value is None:
        return "-"
    if isinstance(value, float):
        value = dt.datetime.fromtimestamp(value, dt.timezone.utc)
    return value.astimezone(dt.timezone.utc).strftime("%H:%M:%S.%f")


class Violations:
    """Invariant violations grouped by check name, plus unexpected errors."""

    MAX_PRINTED_UNEXPECTED = 3

    def __init__(self):
        self.lock = threading.Lock()
        self.items = collections.defaultdict(list)
        self.unexpected = []

    def add(self, check, detail):
        with self.lock:
            self.items[check].append(detail)

    def total(self):
        return sum(len(v) for v in self.items.values())

    def unexpected_error(self, where):
        text = f"{where}: {traceback.format_exc().strip()}"
        with self.lock:
            self.unexpected.append(text)
            n = len(self.unexpected)
        if n <= self.MAX_PRINTED_UNEXPECTED:
            print(f"!! unexpected error in {where}:\n{text}", flush=True)
        elif n == self.MAX_PRINTED_UNEXPECTED + 1:
            print("!! (further unexpected errors are counted, not printed)", flush=True)

    def fold_unexpected(self):
        for text in self.unexpected:
            lines = text.splitlines()
            self.add("unexpected error", f"{lines[0]} ... {lines[-1]}")
        self.unexpected = []

    def report(self, limit=5):
        out = []
        for check, details in sorted(self.items.items()):
            out.append(f"   {check}: {len(details)}")
            for d in details[:limit]:
                out.append(f"      - {d}")
            if len(details) > limit:
                out.append(f"      - ... and {len(details) - limit} more")
        return out


# ----------------------------------------------------------------------------------
# connections
# ----------------------------------------------------------------------------------

class Target:
    """Where the workers connect. Changes when a failover promotes the standby."""

    def __init__(self, host, port, user, dbname, password=None):
        self.host, self.port, self.user, self.dbname, self.password = host, port, user, dbname, password
        self.lock = threading.Lock()

    def set_port(self, port):
        with self.lock:
            self.port = port

    def params(self):
        with self.lock:
            return dict(host=self.host, port=self.port, user=self.user, dbname=self.dbname,
                        password=self.password)


def connect(target, name, settings=(), timeout=5):
    conn = psycopg2.connect(application_name=name[:63], connect_timeout=timeout, **target.params())
    conn.autocommit = True  # every call is its own transaction unless we say BEGIN
    # settings: (name, SQL value) pairs, the value already quoted where it must be
    stmts = ["SET TimeZone = 'UTC'"] + [f"SET {k} = {v}" for k, v in settings]
    with conn.cursor() as cur:
        cur.execute("; ".join(stmts))
    return conn


def connection_lost(conn, exc):
    """True when `exc` broke the connection (terminated backend, crash, shutdown, refused);
    False when the server answered with an error on a live connection (a real error)."""
    if isinstance(exc, psycopg2.InterfaceError):
        return True
    return conn is None or conn.closed != 0


def close_quietly(conn):
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass


class Stopped(Exception):
    """The run is over: a thread stops waiting for the database."""


def connect_until(ctx, name, settings=(), give_up=None):
    """Connects, retrying while the server is down (crash, restart, failover)."""
    delay = 0.05
    while True:
        if ctx.stop.is_set() and give_up is None:
            raise Stopped()
        try:
            return connect(ctx.target, name, settings)
        except psycopg2.Error:
            ctx.record.count("connect_failures")
            if give_up is not None and time.monotonic() > give_up:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


# ----------------------------------------------------------------------------------
# the stand-in partner
# ----------------------------------------------------------------------------------

class Partner:
    """An HTTP server on 127.0.0.1 that plays the partner: it records every request and
    fails some on purpose. Each business transaction has a fixed temperament (seeded):
      ok        200 always
      flaky     500 for its first k requests (k = 1..3), then 200
      down      500 always (the job ends `failed` through retries and max_attempts)
      rejected  422 always (the worker finalizes `failed` at once)
    A request may ask for a slow answer (header X-Delay) to exercise heartbeats.
    The record (`requests`) is this process's memory: it survives database crashes.
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

            def log_message(self, *a):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/send"
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
# the harness's record
# ----------------------------------------------------------------------------------

class Record:
    """Every worker call and what came back (None = unknown), plus counters."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []
        self.counters = collections.Counter()
        self._ids = itertools.count(1)

    def new_call(self, kind, worker, **fields):
        with self.lock:
            call = {"id": next(self._ids), "kind": kind, "worker": worker, "t0": time.time(),
                    "result": None, "known": False, **fields}
            self.calls.append(call)
        return call

    def count(self, name, n=1):
        with self.lock:
            self.counters[name] += n


# ----------------------------------------------------------------------------------
# schema: business table, guard, link, history, witness tables
# ----------------------------------------------------------------------------------

SETUP_SQL = """
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP SCHEMA IF EXISTS harness CASCADE;
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

-- Witness tables: one row per worker call, written in the call's own transaction.
-- No constraints on purpose: the checker, not a unique index, must notice a repeat.
CREATE SCHEMA harness;
CREATE TABLE harness.claims (
    id bigserial PRIMARY KEY, call_id bigint NOT NULL, job bigint, gen bigint,
    claimed_at timestamptz, lease_end timestamptz, worker text);
CREATE TABLE harness.heartbeats (
    id bigserial PRIMARY KEY, call_id bigint NOT NULL, job bigint, gen bigint, result text,
    status_after text, gen_after bigint, lease_end timestamptz,
    at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE harness.finalizes (
    id bigserial PRIMARY KEY, call_id bigint NOT NULL, job bigint, gen bigint, outcome text,
    result text, status_after text, gen_after bigint, next_at timestamptz, attempts int,
    max_attempts int, txn_start timestamptz NOT NULL DEFAULT now(),
    at timestamptz NOT NULL DEFAULT clock_timestamp());
"""

# The claim and its witness in one statement (one transaction). `c` is referenced twice,
# so it is materialized: sendjobs_claim runs once.
CLAIM_SQL = """
WITH c AS MATERIALIZED (SELECT * FROM sendjobs_claim(%s::int, %s::interval, %s::text)),
     w AS (INSERT INTO harness.claims (call_id, job, gen, claimed_at, lease_end, worker)
           SELECT %s, id, claim_generation, claimed_at, lease_expires_at, %s FROM c)
SELECT id, claim_generation, lease_expires_at, claimed_at, payload, transaction_id,
       idempotency_key, attempts, max_attempts
  FROM c ORDER BY next_attempt_at, id"""

HEARTBEAT_WITNESS_SQL = """
INSERT INTO harness.heartbeats (call_id, job, gen, result, status_after, gen_after, lease_end)
SELECT %s, %s, %s, %s, status, claim_generation, lease_expires_at FROM public.send_jobs WHERE id = %s
RETURNING lease_end"""

FINALIZE_WITNESS_SQL = """
INSERT INTO harness.finalizes (call_id, job, gen, outcome, result, status_after, gen_after,
                               next_at, attempts, max_attempts)
SELECT %s, %s, %s, %s, %s, status, claim_generation, next_attempt_at, attempts, max_attempts
  FROM public.send_jobs WHERE id = %s
RETURNING status_after, gen_after, next_at, attempts, max_attempts"""

FINALIZE_BATCH_WITNESS_SQL = """
INSERT INTO harness.finalizes (call_id, job, gen, outcome, result, status_after, gen_after,
                               next_at, attempts, max_attempts)
SELECT v.call_id, v.job, v.gen, %s, v.result, j.status, j.claim_generation, j.next_attempt_at,
       j.attempts, j.max_attempts
  FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::text[]) AS v(call_id, job, gen, result)
  JOIN public.send_jobs AS j ON j.id = v.job
RETURNING job, status_after, gen_after, next_at, attempts, max_attempts"""

ENQUEUE_SQL = """
WITH v AS MATERIALIZED (SELECT * FROM (VALUES %s) AS v(txn, amount, payload, queue, run_at, key, max_attempts)),
     t AS (INSERT INTO public.transactions (id, amount_cents)
           SELECT txn, amount FROM v ON CONFLICT (id) DO NOTHING)
SELECT v.key, sendjobs_enqueue(v.payload, v.queue, v.run_at, v.txn, v.key, v.max_attempts) FROM v"""
ENQUEUE_TEMPLATE = "(%s::text, %s::bigint, %s::jsonb, %s::text, %s::timestamptz, %s::text, %s::int)"


def plan_job(seed, i, now):
    """Job number i, deterministic from the seed; `now` fixes its run_at once (a retried
    enqueue passes the same run_at, so the job's due time is known exactly)."""
    r = stable_rng(seed, "job", i)
    txn = f"txn-{i:07d}"
    u = r.random()
    # ~10% an overdue backlog (scheduled an hour ago: the clock that bug 1 used),
    # ~5% scheduled a moment later, the rest due now (run_at NULL).
    run_in = -3600.0 if u < 0.10 else round(r.uniform(0.5, 3.0), 3) if u < 0.15 else None
    amount = r.randint(100, 500_000)
    return {
        "i": i, "txn": txn, "amount": amount, "queue": QUEUES[i % 2],
        "run_at": None if run_in is None else dt.datetime.fromtimestamp(now + run_in, dt.timezone.utc),
        "max_attempts": 2 if r.random() < 0.12 else None, "key": f"pay-{txn}",
        "payload": json.dumps({"transaction_id": txn, "amount_cents": amount, "currency": "EUR"}),
    }


def enqueue_chunk(conn, plans):
    """Inserts the business rows and enqueues the jobs in one statement; returns {key: id}."""
    with conn.cursor() as cur:
        rows = psycopg2.extras.execute_values(
            cur, ENQUEUE_SQL,
            [(p["txn"], p["amount"], p["payload"], p["queue"], p["run_at"], p["key"], p["max_attempts"])
             for p in plans],
            template=ENQUEUE_TEMPLATE, page_size=len(plans) + 1, fetch=True)
    return dict(rows)


# ----------------------------------------------------------------------------------
# the shared context of a run
# ----------------------------------------------------------------------------------

class Context:
    """What every thread of a run shares."""

    def __init__(self, args, target, partner_url, worker_settings=()):
        self.args = args
        self.target = target
        self.partner_url = partner_url
        self.worker_settings = list(worker_settings)
        self.record = Record()
        self.violations = Violations()
        self.stop = threading.Event()     # the run is over
        self.chaos = threading.Event()    # set while worker faults are injected
        self.killer = None                # a Killer when backends are terminated on purpose
        self.plans = {}                   # key -> planned job
        self.enqueued = {}                # key -> id, from enqueue calls that came back
        self.enqueue_lock = threading.Lock()

    def note_enqueued(self, got):
        with self.enqueue_lock:
            for key, jid in got.items():
                old = self.enqueued.get(key)
                if old is not None and old != jid:
                    self.violations.add("idempotency key created a second job",
                                        f"{key}: first {old}, again {jid}")
                self.enqueued.setdefault(key, jid)


# ----------------------------------------------------------------------------------
# the fault injector's hand: terminating a worker's backend
# ----------------------------------------------------------------------------------

class Killer:
    """Terminates worker backends with pg_terminate_backend, from its own connection."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.lock = threading.Lock()
        self.conn = None

    def terminate(self, pid, kind):
        """Terminates `pid` and waits until it is gone; counts the fault if it landed."""
        with self.lock:
            for _ in range(2):
                try:
                    if self.conn is None or self.conn.closed:
                        self.conn = connect(self.ctx.target, "soak killer", timeout=2)
                    with self.conn.cursor() as cur:
                        cur.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
                        ok = cur.fetchone()[0]
                    self.ctx.record.count(f"fault_{kind}" if ok else f"fault_{kind}_missed")
                    return ok
                except psycopg2.Error:
                    close_quietly(self.conn)
                    self.conn = None
            self.ctx.record.count(f"fault_{kind}_missed")
            return False

    def terminate_later(self, pid, delay, kind):
        t = threading.Timer(delay, self.terminate, (pid, kind))
        t.daemon = True
        t.start()

    def close(self):
        with self.lock:
            close_quietly(self.conn)
            self.conn = None


# ----------------------------------------------------------------------------------
# workers
# ----------------------------------------------------------------------------------

class LostLease(Exception):
    """A heartbeat said `stale` (or could not be made): stop working on the job."""


class ConnectionGone(Exception):
    """The worker's connection broke during a call; the call's outcome is unknown."""


class CallFailed(Exception):
    """The server answered a call with an error (already reported as unexpected)."""


class Worker(threading.Thread):
    """Claims batches, sends each job to the partner, finalizes; faults on purpose.

    Faults per batch (probabilities in args, each hitting one job of the batch):
      kill          the worker dies between claim and finalize (before or after sending)
      pause         sent, then stuck past the lease; finalizes late
      slow          a slow send, heartbeated every lease/3
      term_claim    its backend is terminated during the claim (at a random instant
                    around the statement, or inside the claim's transaction before COMMIT)
      term_send     its backend is terminated while it is sending
      term_finalize its backend is terminated during the finalize (at a random instant
                    around the transaction, or after the finalize ran, before COMMIT)
    The term_* faults only while ctx.chaos is set; the others always (the demo's mode).
    After a broken connection a worker reconnects (waiting out crashes and failovers),
    retries an unknown finalize with the same outcome, heartbeats before it sends on a
    lease that is half gone, and goes on with its batch.
    """

    def __init__(self, ctx, idx, lease):
        super().__init__(name=f"worker-{idx}", daemon=True)
        self.ctx = ctx
        self.args = ctx.args
        self.idx = idx
        self.rng = stable_rng(self.args.seed, "worker", idx)
        self.incarnation = 0
        self.conn = None
        self.pid = None
        self.queue = None if idx % 3 == 0 else QUEUES[idx % 2]
        self.lease = lease
        self.lease_sql = f"{lease} seconds"
        self.ema = {"claim": 0.003, "finalize": 0.004}
        # Some workers finalize a whole batch in one call (sendjobs_finalize_batch).
        share = getattr(self.args, "finalize_batch_share", 0.0)
        self.batch_finalize = share > 0 and stable_rng(self.args.seed, "batch-mode", idx).random() < share

    @property
    def wname(self):
        return f"w{self.idx}.{self.incarnation}"

    def reconnect(self):
        close_quietly(self.conn)
        self.conn = None
        self.conn = connect_until(self.ctx, f"sendjobs-harness {self.wname}", self.ctx.worker_settings)
        self.pid = self.conn.get_backend_pid()

    def _failed(self, call, exc):
        call["error"] = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        call["t1"] = time.time()
        if connection_lost(self.conn, exc):
            self.ctx.record.count(f"{call['kind']}_unknown")
            self.ctx.record.count("connections_lost")
            close_quietly(self.conn)
            self.conn = None
            raise ConnectionGone() from exc
        # A real error on a live connection: nothing of the call committed.
        self.ctx.violations.unexpected_error(f"{self.wname} {call['kind']}")
        try:
            self.conn.rollback()
        except Exception:
            close_quietly(self.conn)
            self.conn = None
        call["known"] = True
        call["result"] = "error"
        raise CallFailed() from exc

    def _ensure(self):
        if self.conn is None or self.conn.closed:
            self.reconnect()

    # -- DB calls ---------------------------------------------------------------------

    def claim(self, fault):
        self._ensure()
        call = self.ctx.record.new_call("claim", self.wname)
        precommit = fault == "term_claim_precommit"
        t0 = time.monotonic()
        try:
            with self.conn.cursor() as cur:
                if fault == "term_claim":
                    self.ctx.killer.terminate_later(self.pid, self.rng.uniform(0, 1.5 * self.ema["claim"]), fault)
                if precommit:
                    cur.execute("BEGIN")
                cur.execute(CLAIM_SQL, (self.args.batch, self.lease_sql, self.queue, call["id"], self.wname))
                rows = cur.fetchall()
                if precommit:
                    self.ctx.killer.terminate(self.pid, fault)
                    cur.execute("COMMIT")
        except psycopg2.Error as e:
            self._failed(call, e)
        self.ema["claim"] = 0.8 * self.ema["claim"] + 0.2 * (time.monotonic() - t0)
        t_local = time.monotonic()
        call.update(known=True, t1=time.time(), result=[(r[0], r[1], r[2]) for r in rows])
        return [{
            "job": jid, "gen": gen, "lease_end": lease_end, "claimed_at": claimed_at, "payload": payload,
            "txn": txn, "key": key, "attempts": attempts, "max_attempts": max_attempts, "t_local": t_local,
        } for (jid, gen, lease_end, claimed_at, payload, txn, key, attempts, max_attempts) in rows]

    def heartbeat(self, job):
        """Extends the lease. Returns 'applied' or raises LostLease (stale or unknown)."""
        for attempt in range(2):
            self._ensure()
            call = self.ctx.record.new_call("heartbeat", self.wname, job=job["job"], gen=job["gen"])
            try:
                with self.conn.cursor() as cur:
                    cur.execute("BEGIN; SELECT sendjobs_heartbeat(%s::bigint, %s::bigint, %s::interval)",
                                (job["job"], job["gen"], self.lease_sql))
                    result = cur.fetchone()[0]
                    cur.execute(HEARTBEAT_WITNESS_SQL, (call["id"], job["job"], job["gen"], result, job["job"]))
                    lease_end = cur.fetchone()[0]
                    cur.execute("COMMIT")
            except psycopg2.Error as e:
                try:
                    self._failed(call, e)
                except ConnectionGone:
                    continue  # unknown: reconnect and ask again
                except CallFailed:
                    raise LostLease()
            call.update(known=True, t1=time.time(), result=result, lease_end=lease_end)
            self.ctx.record.count(f"heartbeat_{result}")
            if result == "applied":
                job["lease_end"] = lease_end
                job["t_local"] = time.monotonic()
                return result
            raise LostLease()
        self.ctx.record.count("dropped_after_unknown_heartbeat")
        raise LostLease()

    def finalize(self, job, outcome, error=None, fault=None, late=False):
        """One finalize call and its witness in one transaction. Returns the result, or
        None when the answer never came back (unknown)."""
        self._ensure()
        call = self.ctx.record.new_call("finalize", self.wname, job=job["job"], gen=job["gen"],
                                        outcome=outcome, late=late)
        retry_expr, params = "NULL::timestamptz", []
        if outcome == "retry" and self.rng.random() < 0.5:
            # Retry soon, at a time computed by the database's clock.
            retry_expr = "clock_timestamp() + %s::interval"
            params = [f"{round(self.rng.uniform(0.1, 0.4), 3)} seconds"]
            call["retry_mode"] = "retry_at"
        elif outcome == "retry":
            call["retry_mode"] = "backoff"  # the backoff GUCs decide (set short by connect)
        t0 = time.monotonic()
        try:
            with self.conn.cursor() as cur:
                if fault == "term_finalize":
                    self.ctx.killer.terminate_later(self.pid, self.rng.uniform(0, 1.5 * self.ema["finalize"]), fault)
                cur.execute("BEGIN; SELECT sendjobs_finalize(%s::bigint, %s::bigint, %s::text, %s::text, "
                            + retry_expr + ")", [job["job"], job["gen"], outcome, error] + params)
                result = cur.fetchone()[0]
                cur.execute(FINALIZE_WITNESS_SQL, (call["id"], job["job"], job["gen"], outcome, result, job["job"]))
                post = cur.fetchone()
                if fault == "term_finalize_precommit":
                    self.ctx.killer.terminate(self.pid, fault)
                cur.execute("COMMIT")
        except psycopg2.Error as e:
            try:
                self._failed(call, e)
            except ConnectionGone:
                return None
            except CallFailed:
                return "error"
        self.ema["finalize"] = 0.8 * self.ema["finalize"] + 0.2 * (time.monotonic() - t0)
        call.update(known=True, t1=time.time(), result=result, post=post)
        self.ctx.record.count(f"finalize_{result}")
        if late:
            self.ctx.record.count(f"late_finalize_{result}")
        if result == "applied" and call.get("retry_mode"):
            self.ctx.record.count(f"retry_{call['retry_mode']}")
        return result

    def finalize_until_known(self, job, outcome, error=None, fault=None, late=False):
        """A worker that lost its connection finalizes again with the same outcome: if the
        first call had committed, the second one answers `stale` and changes nothing."""
        result = self.finalize(job, outcome, error, fault, late)
        tries = 0
        while result is None and tries < 20:
            tries += 1
            self.ctx.record.count("finalize_retried_after_unknown")
            try:
                self.reconnect()
            except Stopped:
                return None
            result = self.finalize(job, outcome, error, None, late)
        return result

    def finalize_group(self, jobs, outcome, error=None, fault=None, late=False):
        """sendjobs_finalize_batch for jobs that share one outcome, with one witness row
        per job, in one transaction. Each job gets its own call record. Returns
        {job id: result}, or None when the answer never came back (unknown)."""
        self._ensure()
        calls = [self.ctx.record.new_call("finalize", self.wname, job=j["job"], gen=j["gen"], outcome=outcome,
                                          late=late, batch=len(jobs)) for j in jobs]
        retry_expr, params, mode = "NULL::timestamptz", [], None
        if outcome == "retry" and self.rng.random() < 0.5:
            retry_expr = "clock_timestamp() + %s::interval"
            params = [f"{round(self.rng.uniform(0.1, 0.4), 3)} seconds"]
            mode = "retry_at"
        elif outcome == "retry":
            mode = "backoff"
        ids, gens = [j["job"] for j in jobs], [j["gen"] for j in jobs]
        t0 = time.monotonic()
        try:
            with self.conn.cursor() as cur:
                if fault == "term_finalize":
                    self.ctx.killer.terminate_later(self.pid, self.rng.uniform(0, 1.5 * self.ema["finalize"]), fault)
                cur.execute("BEGIN; SELECT id, result FROM sendjobs_finalize_batch(%s::bigint[], %s::bigint[], "
                            "%s::text, %s::text, " + retry_expr + ")", [ids, gens, outcome, error] + params)
                results = dict(cur.fetchall())
                cur.execute(FINALIZE_BATCH_WITNESS_SQL, (outcome, [c["id"] for c in calls], ids, gens,
                                                         [results.get(i) for i in ids]))
                posts = {r[0]: r[1:] for r in cur.fetchall()}
                if fault == "term_finalize_precommit":
                    self.ctx.killer.terminate(self.pid, fault)
                cur.execute("COMMIT")
        except psycopg2.Error as e:
            for c in calls[1:]:
                c["error"] = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            try:
                self._failed(calls[0], e)
            except ConnectionGone:
                return None
            except CallFailed:
                for c in calls:
                    c.update(known=True, result="error")
                return {i: "error" for i in ids}
        self.ema["finalize"] = 0.8 * self.ema["finalize"] + 0.2 * (time.monotonic() - t0)
        self.ctx.record.count("finalize_batch_calls")
        for c in calls:
            result = results.get(c["job"])
            c.update(known=True, t1=time.time(), result=result, post=posts.get(c["job"]))
            if mode:
                c["retry_mode"] = mode
            self.ctx.record.count(f"finalize_{result}")
            if late:
                self.ctx.record.count(f"late_finalize_{result}")
            if result == "applied" and mode:
                self.ctx.record.count(f"retry_{mode}")
        return results

    def finalize_group_until_known(self, jobs, outcome, error=None, fault=None, late=False):
        result = self.finalize_group(jobs, outcome, error, fault, late)
        tries = 0
        while result is None and tries < 20:
            tries += 1
            self.ctx.record.count("finalize_retried_after_unknown", len(jobs))
            try:
                self.reconnect()
            except Stopped:
                return None
            result = self.finalize_group(jobs, outcome, error, None, late)
        return result

    # -- the partner ------------------------------------------------------------------

    def post(self, job, delay=0.0):
        body = json.dumps({
            "job_id": job["job"], "claim_generation": job["gen"],
            "transaction_id": job["txn"], "payload": job["payload"],
        }).encode()
        req = urllib.request.Request(self.ctx.partner_url, data=body, method="POST", headers={
            "Content-Type": "application/json", "Idempotency-Key": job["key"] or "",
            "X-Worker": self.wname, "X-Delay": str(delay),
        })
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, None
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
            while not self.ctx.stop.is_set():
                try:
                    self.one_batch()
                except (ConnectionGone, CallFailed, LostLease):
                    time.sleep(0.01)
                except Stopped:
                    break
                except Exception:
                    self.ctx.violations.unexpected_error(self.wname)
                    close_quietly(self.conn)
                    self.conn = None
                    time.sleep(0.2)
        except Stopped:
            pass
        finally:
            close_quietly(self.conn)

    def pick_fault(self):
        a = self.args
        chaos = self.ctx.chaos.is_set()
        table = [("kill", a.p_kill), ("pause", a.p_pause), ("slow", a.p_slow)]
        if chaos and self.ctx.killer is not None:
            table += [("term_claim", a.p_term_claim), ("term_send", a.p_term_send),
                      ("term_finalize", a.p_term_finalize)]
        r = self.rng.random()
        for kind, p in table:
            if r < p:
                if kind in ("term_claim", "term_finalize") and self.rng.random() < 0.5:
                    kind += "_precommit"
                return kind
            r -= p
        return None

    def one_batch(self):
        fault = self.pick_fault()
        jobs = self.claim(fault if fault and fault.startswith("term_claim") else None)
        if not jobs:
            self.ctx.record.count("empty_claims")
            time.sleep(0.05)
            return
        self.ctx.record.count("batches")
        special = self.rng.randrange(len(jobs))   # the job the fault hits
        die_after_send = self.rng.random() < 0.6  # a kill after sending it, or before
        done = []  # batch mode: (job, outcome, error, fault) to finalize together at the end
        paused_at = -1
        for i, job in enumerate(jobs):
            f = fault if i == special else None
            if f == "kill" and not die_after_send:
                return self.die(len(jobs) - i, "before_send")
            try:
                # A careful worker does not start a send on a lease that is half gone: it
                # heartbeats first (local monotonic time, only a hint; the DB decides).
                if time.monotonic() - job["t_local"] > self.lease * 0.5:
                    self.heartbeat(job)
                if f == "slow":
                    self.ctx.record.count("slow_sends")
                    code, err = self.post_with_heartbeats(job, delay=self.lease * 1.6)
                else:
                    if f == "term_send" and self.conn is not None:
                        self.ctx.killer.terminate_later(self.pid, 0.0, f)
                    code, err = self.post(job)
            except LostLease:
                self.ctx.record.count("dropped_after_stale_heartbeat")
                continue
            except ConnectionGone:
                self.ctx.record.count("dropped_after_unknown_heartbeat")
                continue
            if f == "kill":
                return self.die(len(jobs) - i, "after_send")
            late = False
            if f == "pause":
                # Sent, then stuck (GC pause, swapped out, ...) well past the lease.
                self.ctx.record.count("fault_pause")
                self.pause(job)
                late = True
                paused_at = i
            if code == 200:
                outcome = "sent"
            elif code == 422:
                outcome = "failed"
            else:
                outcome = "retry"
            fin_fault = f if f in ("term_finalize", "term_finalize_precommit") else None
            if self.batch_finalize:
                done.append((job, outcome, err if outcome != "sent" else None, fin_fault, i))
                continue
            self.finalize_until_known(job, outcome, err if outcome != "sent" else None, fin_fault, late)
        if done:
            # One sendjobs_finalize_batch call per (outcome, error); jobs sent before a
            # pause are finalized late.
            groups = {}
            for job, outcome, err, fin_fault, i in done:
                g = groups.setdefault((outcome, err), {"jobs": [], "fault": None, "late": False})
                g["jobs"].append(job)
                g["fault"] = g["fault"] or fin_fault
                g["late"] = g["late"] or i <= paused_at
            for (outcome, err), g in groups.items():
                self.finalize_group_until_known(g["jobs"], outcome, err, g["fault"], g["late"])

    def pause(self, job):
        """Stuck past the lease, then finalizes late. Half the time the injector picks the
        worst moment to wake the worker: just after another worker has reclaimed the job,
        while that newer claim still holds it (the race of bug 2 in CONTRACT.md)."""
        deadline = time.monotonic() + self.lease + self.rng.uniform(0.3, self.args.pause_extra)
        if self.rng.random() < 0.5 and self.conn is not None:
            time.sleep(self.lease)  # the lease began at the claim: it has expired by now
            while time.monotonic() < deadline:
                try:
                    with self.conn.cursor() as cur:
                        cur.execute("SELECT status, claim_generation FROM public.send_jobs WHERE id = %s",
                                    (job["job"],))
                        status, gen = cur.fetchone()
                except psycopg2.Error:
                    close_quietly(self.conn)
                    self.conn = None
                    break
                if gen > job["gen"]:
                    if status == "in_flight":
                        self.ctx.record.count("pause_woken_while_reclaimed")
                    return
                time.sleep(0.003)
        time.sleep(max(0.0, deadline - time.monotonic()))

    def die(self, dropped, when):
        """Crash between claim and finalize: the connection goes, the batch is lost."""
        self.ctx.record.count("fault_kill")
        self.ctx.record.count(f"kill_{when}")
        self.ctx.record.count("jobs_dropped_by_kill", dropped)
        close_quietly(self.conn)
        self.conn = None
        self.incarnation += 1
        time.sleep(self.rng.uniform(0.0, 0.2))
        self.reconnect()  # a fresh worker takes its place


# ----------------------------------------------------------------------------------
# the late reconciler
# ----------------------------------------------------------------------------------

class Reconciler(threading.Thread):
    """Now and then tries to flip a finished business row success <-> failed."""

    def __init__(self, ctx):
        super().__init__(name="reconciler", daemon=True)
        self.ctx = ctx
        self.rng = stable_rng(ctx.args.seed, "reconciler")
        self.sample_warning = None
        self.conn = None

    def run(self):
        try:
            while not self.ctx.stop.is_set():
                time.sleep(self.rng.uniform(0.01, 0.05))
                try:
                    if self.conn is None or self.conn.closed:
                        self.conn = connect_until(self.ctx, "sendjobs-harness reconciler")
                    self.attempt(self.conn)
                except Stopped:
                    break
                except psycopg2.Error as e:
                    if not connection_lost(self.conn, e):
                        self.ctx.violations.unexpected_error("reconciler")
                    close_quietly(self.conn)
                    self.conn = None
                    time.sleep(0.1)
        finally:
            close_quietly(self.conn)

    def attempt(self, conn):
        with conn.cursor() as cur:
            if self.rng.random() < 0.5:  # one that has just finished ...
                cur.execute("SELECT transaction_id, new_status FROM transaction_history"
                            " WHERE new_status IN ('success', 'failed') ORDER BY id DESC LIMIT 20")
            else:  # ... or any finished one
                cur.execute("SELECT id, status FROM transactions WHERE status IN ('success', 'failed')"
                            " AND id LIKE 'txn-%' ORDER BY id DESC LIMIT 50")
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
        self.ctx.record.count("guard_attempts")
        if after == status:
            self.ctx.record.count("guard_refusals")
            if rowcount == 0:
                self.ctx.record.count("guard_refusals_rowcount0")
            if warnings:
                self.ctx.record.count("guard_warnings")
                self.sample_warning = self.sample_warning or warnings[0].strip()
        else:
            self.ctx.violations.add("guard let a terminal business row flip",
                                    f"{txn}: {status} -> {after} (rowcount {rowcount})")


# ----------------------------------------------------------------------------------
# the checker
# ----------------------------------------------------------------------------------

def read_database(conn):
    """Everything the checker needs from the database, as plain dicts."""
    db = {}
    with conn.cursor() as cur:
        cur.execute("SELECT id, status, claim_generation, attempts, max_attempts, transaction_id,"
                    "       idempotency_key, next_attempt_at, lease_expires_at FROM public.send_jobs")
        db["jobs"] = {r[0]: dict(zip(("id", "status", "gen", "attempts", "max_attempts", "txn", "key",
                                      "next_at", "lease_end"), r)) for r in cur.fetchall()}
        cur.execute("SELECT job_id, transaction_id, kind, claim_generation FROM public.send_job_events")
        db["events"] = collections.defaultdict(list)
        for job_id, txn, kind, gen in cur.fetchall():
            db["events"][job_id].append({"txn": txn, "kind": kind, "gen": gen})
        cur.execute("SELECT id, status FROM public.transactions")
        db["business"] = dict(cur.fetchall())
        cur.execute("SELECT transaction_id, old_status, new_status FROM public.transaction_history ORDER BY id")
        db["history"] = collections.defaultdict(list)
        for txn, old, new in cur.fetchall():
            db["history"][txn].append((old, new))
        cur.execute("SELECT call_id, job, gen, claimed_at, lease_end, worker FROM harness.claims ORDER BY id")
        db["claims"] = [dict(zip(("call", "job", "gen", "claimed_at", "lease_end", "worker"), r))
                        for r in cur.fetchall()]
        cur.execute("SELECT call_id, job, gen, result, status_after, gen_after, lease_end, at"
                    "  FROM harness.heartbeats ORDER BY id")
        db["heartbeats"] = [dict(zip(("call", "job", "gen", "result", "status", "post_gen", "lease_end", "at"), r))
                            for r in cur.fetchall()]
        cur.execute("SELECT call_id, job, gen, outcome, result, status_after, gen_after, next_at, attempts,"
                    "       max_attempts, txn_start, at FROM harness.finalizes ORDER BY id")
        db["finalizes"] = [dict(zip(("call", "job", "gen", "outcome", "result", "status", "post_gen", "next_at",
                                     "attempts", "max_attempts", "txn_start", "at"), r)) for r in cur.fetchall()]
    return db


def check_everything(ctx, db, partner_requests, stats, require_terminal=True):
    """Checks the seven invariants of CONTRACT.md, and that every answer that came back
    is in the database, against the three records. Fills `stats`; adds violations."""
    V = ctx.violations
    rec = ctx.record
    jobs, events = db["jobs"], db["events"]

    # ================= durability: every answer that came back is in the database ======
    w_claims_by_call = collections.defaultdict(list)
    for c in db["claims"]:
        w_claims_by_call[c["call"]].append(c)
    w_hb_by_call = {h["call"]: h for h in db["heartbeats"]}
    w_fin_by_call = {f["call"]: f for f in db["finalizes"]}
    calls = {c["id"]: c for c in rec.calls}
    stats.update({f"{k}_{w}": 0 for k in ("claim", "heartbeat", "finalize")
                  for w in ("calls", "known", "unknown", "unknown_committed", "unknown_not_committed")})
    stats["finalize_stale"] = stats["finalize_applied"] = stats["claims_invisible"] = 0
    stats["finalize_batched"] = sum(1 for c in rec.calls if c["kind"] == "finalize" and c.get("batch"))
    for call in rec.calls:
        kind = call["kind"]
        stats[f"{kind}_calls"] += 1
        if kind == "claim":
            got = w_claims_by_call.get(call["id"], [])
            if call["known"] and call["result"] != "error":
                stats["claim_known"] += 1
                seen = sorted((j, g, le) for j, g, le in call["result"])
                have = sorted((c["job"], c["gen"], c["lease_end"]) for c in got)
                if seen != have:
                    V.add("a claim that came back is not in the database (lost commit)",
                          f"call {call['id']} ({call['worker']}): returned {[(j, g) for j, g, _ in seen]}, "
                          f"database has {[(j, g) for j, g, _ in have]}")
            elif not call["known"]:
                stats["claim_unknown"] += 1
                stats["claim_unknown_committed" if got else "claim_unknown_not_committed"] += 1
                stats["claims_invisible"] += len(got)
        else:
            w = (w_hb_by_call if kind == "heartbeat" else w_fin_by_call).get(call["id"])
            if call["known"] and call["result"] != "error":
                stats[f"{kind}_known"] += 1
                if kind == "finalize":
                    stats[f"finalize_{call['result']}"] += 1
                if w is None or w["result"] != call["result"]:
                    V.add(f"a {kind} answer that came back is not in the database (lost commit)",
                          f"call {call['id']} job {call['job']} gen {call['gen']}: returned {call['result']!r}, "
                          f"database has {w and w['result']!r}")
            elif not call["known"]:
                stats[f"{kind}_unknown"] += 1
                stats[f"{kind}_unknown_committed" if w else f"{kind}_unknown_not_committed"] += 1
    for table, by_call in (("claims", w_claims_by_call), ("heartbeats", w_hb_by_call),
                           ("finalizes", w_fin_by_call)):
        for cid in by_call:
            if cid not in calls:
                V.add("a witness row for a call nobody made", f"harness.{table} call {cid}")

    # ================= 7. no job lost ==================================================
    by_key = collections.defaultdict(list)
    for j in jobs.values():
        by_key[j["key"]].append(j["id"])
    for key, jid in ctx.enqueued.items():
        if jid not in jobs:
            V.add("job lost", f"job {jid} ({key}) was enqueued (the id came back) and is gone")
        elif jobs[jid]["key"] != key:
            V.add("job lost", f"job {jid} has key {jobs[jid]['key']}, enqueued as {key}")
    for key, ids in by_key.items():
        if key is not None and len(ids) > 1:
            V.add("idempotency key created a second job", f"{key}: jobs {ids}")
    stats["enqueued_unknown_found"] = sum(1 for k in ctx.plans if k not in ctx.enqueued and k in by_key)
    not_terminal = [j for j in jobs.values() if j["status"] not in TERMINAL]
    stats["not_terminal"] = len(not_terminal)
    if require_terminal:
        for j in not_terminal[:10]:
            V.add("job not terminal at the end", f"job {j['id']} is {j['status']}")
        if len(not_terminal) > 10:
            V.add("job not terminal at the end", f"... and {len(not_terminal) - 10} more")
    for j in not_terminal:
        if j["status"] not in ("pending", "in_flight"):
            V.add("job neither terminal nor claimable", f"job {j['id']} is {j['status']}")

    # ================= witness history per job =========================================
    claims = collections.defaultdict(list)
    for c in db["claims"]:
        claims[c["job"]].append(c)
    hbs = collections.defaultdict(list)
    for h in db["heartbeats"]:
        hbs[(h["job"], h["gen"])].append(h)
    fins = collections.defaultdict(list)
    for f in db["finalizes"]:
        fins[(f["job"], f["gen"])].append(f)

    def released(job_id, gen):
        """The applied finalize that released claim (job, gen), if any."""
        ap = [f for f in fins.get((job_id, gen), []) if f["result"] == "applied"]
        return ap[0] if ap else None

    def held_until(job_id, gen, claim):
        """When the claim stopped holding the job: the retry time if its holder released it
        with an applied retry; else its lease end (heartbeats included) as the DB recorded it."""
        f = released(job_id, gen)
        if f and f["outcome"] == "retry" and f["status"] == "pending":
            return "retry", ts(f["next_at"])
        end = ts(claim["lease_end"]) if claim and claim["lease_end"] else 0.0
        for h in hbs.get((job_id, gen), []):
            if h["result"] == "applied" and h["lease_end"] is not None:
                end = max(end, ts(h["lease_end"]))
        return "expiry", end

    # -- 2. generations: every claim increments once; the final generation counts them ----
    stats["claims"] = len(db["claims"])
    stats["reclaims_after_expiry"] = stats["reclaims_after_retry"] = 0
    reclaim_delays = []
    due = {p["key"]: p["run_at"] for p in ctx.plans.values()}
    for jid, j in jobs.items():
        cs = sorted(claims.get(jid, []), key=lambda c: (c["gen"], c["claimed_at"]))
        gens = [c["gen"] for c in cs]
        if gens != list(range(1, len(gens) + 1)):
            V.add("claim generations not 1, 2, 3, ... (one increment per claim)", f"job {jid}: {gens[:12]}")
        if j["gen"] != len(cs) or j["attempts"] != len(cs):
            V.add("final claim_generation/attempts differ from the number of claims",
                  f"job {jid}: gen {j['gen']}, attempts {j['attempts']}, claims witnessed {len(cs)}")
        run_at = due.get(j["key"])
        if cs and run_at is not None and cs[0]["claimed_at"] < run_at:
            V.add("claimed before it was due",
                  f"job {jid}: claimed {fmt_ts(cs[0]['claimed_at'])}, due {fmt_ts(run_at)}")
        # -- 1. one unexpired claim at a time ---------------------------------------------
        for prev, nxt in zip(cs, cs[1:]):
            if nxt["claimed_at"] < prev["claimed_at"]:
                V.add("generation grew while claimed_at went back",
                      f"job {jid}: gen {prev['gen']} at {fmt_ts(prev['claimed_at'])}, "
                      f"gen {nxt['gen']} at {fmt_ts(nxt['claimed_at'])}")
            f = released(jid, prev["gen"])
            if f and f["status"] in TERMINAL:
                V.add("claimed again after a terminal finalize", f"job {jid}: gen {prev['gen']} -> {nxt['gen']}")
                continue
            how, until = held_until(jid, prev["gen"], prev)
            if ts(nxt["claimed_at"]) < until and how == "retry":
                V.add("claimed before it was due",
                      f"job {jid}: gen {prev['gen']} released by a retry due {fmt_ts(until)}, "
                      f"gen {nxt['gen']} ({nxt['worker']}) claimed at {fmt_ts(nxt['claimed_at'])}")
            elif ts(nxt["claimed_at"]) < until:
                V.add("two claims with overlapping unexpired leases",
                      f"job {jid}: gen {prev['gen']} ({prev['worker']}) held until {fmt_ts(until)} ({how}), "
                      f"gen {nxt['gen']} ({nxt['worker']}) claimed at {fmt_ts(nxt['claimed_at'])}")
            if how == "expiry":
                stats["reclaims_after_expiry"] += 1
                reclaim_delays.append(ts(nxt["claimed_at"]) - until)
            else:
                stats["reclaims_after_retry"] += 1
    stats["max_reclaim_delay"] = max(reclaim_delays) if reclaim_delays else 0.0

    claim_of = {(c["job"], c["gen"]): c for c in db["claims"]}
    next_claim = {}
    for jid, cs in claims.items():
        for c in cs:
            g = c["gen"]
            if (jid, g + 1) in claim_of:
                next_claim[(jid, g)] = claim_of[(jid, g + 1)]

    # -- 3. a finalize or heartbeat applies only with the current generation of an in_flight row
    terminal_finalizes = collections.defaultdict(list)
    for f in db["finalizes"]:
        where = f"job {f['job']} gen {f['gen']} {f['outcome']} (call {f['call']})"
        if f["result"] == "applied":
            if f["post_gen"] != f["gen"]:
                V.add("finalize applied with an old generation", f"{where}: the row is at gen {f['post_gen']}")
            nc = next_claim.get((f["job"], f["gen"]))
            if nc is not None and ts(nc["claimed_at"]) <= ts(f["at"]):
                V.add("finalize applied after its claim was superseded",
                      f"{where}: applied at {fmt_ts(f['at'])}, gen {nc['gen']} claimed at {fmt_ts(nc['claimed_at'])}")
            expected = {"sent": ("sent",), "failed": ("failed",),
                        "retry": ("failed",) if (f["attempts"] or 0) >= (f["max_attempts"] or 0) else ("pending",)}
            if f["status"] not in expected.get(f["outcome"], ()):
                V.add("finalize applied but the row says otherwise",
                      f"{where}: status {f['status']}, attempts {f['attempts']}/{f['max_attempts']}")
            if f["status"] in TERMINAL:
                terminal_finalizes[f["job"]].append(f)
            if len([x for x in fins[(f["job"], f["gen"])] if x["result"] == "applied"]) > 1:
                V.add("two applied finalizes for one claim", where)
        elif f["result"] == "stale":
            if f["status"] == "in_flight" and f["post_gen"] == f["gen"]:
                V.add("finalize refused while holding the job", f"{where}: row still in_flight at that generation")
        else:
            V.add("finalize returned an unknown value", f"{where}: {f['result']!r}")
    for h in db["heartbeats"]:
        where = f"job {h['job']} gen {h['gen']} (call {h['call']})"
        if h["result"] == "applied":
            if h["post_gen"] != h["gen"] or h["status"] != "in_flight":
                V.add("heartbeat applied with an old generation",
                      f"{where}: the row is {h['status']} at gen {h['post_gen']}")
        elif h["result"] == "stale":
            if h["status"] == "in_flight" and h["post_gen"] == h["gen"]:
                V.add("heartbeat refused while holding the job", f"{where}: row still in_flight at that generation")
        else:
            V.add("heartbeat returned an unknown value", f"{where}: {h['result']!r}")

    # -- 4. a terminal job never changes again; exactly one event, from its last claim ----
    for jid, j in jobs.items():
        evs = events.get(jid, [])
        tf = terminal_finalizes.get(jid, [])
        if len(tf) > 1:
            V.add("job finalized to a terminal state twice",
                  f"job {jid}: {[(f['gen'], f['outcome'], f['status']) for f in tf]}")
        if j["status"] in TERMINAL:
            if len(evs) != 1:
                V.add("terminal job without exactly one event", f"job {jid} ({j['status']}): {len(evs)} events")
            else:
                e = evs[0]
                if e["kind"] != j["status"]:
                    V.add("event kind differs from job status", f"job {jid}: status {j['status']}, event {e['kind']}")
                if e["gen"] != j["gen"]:
                    V.add("event generation differs from the final claim_generation",
                          f"job {jid}: job gen {j['gen']}, event gen {e['gen']}")
                if e["txn"] != j["txn"]:
                    V.add("event transaction_id differs", f"job {jid}: {j['txn']} vs {e['txn']}")
            if not tf or tf[-1]["gen"] != j["gen"] or tf[-1]["status"] != j["status"]:
                V.add("terminal job not finished by an applied finalize of its last claim",
                      f"job {jid} ({j['status']}, gen {j['gen']}): applied terminal finalizes "
                      f"{[(f['gen'], f['status']) for f in tf]}")
        else:
            if evs:
                V.add("event for a job that is not terminal", f"job {jid} ({j['status']}): {len(evs)} events")
            if tf:
                V.add("terminal finalize applied but the job is not terminal",
                      f"job {jid} is {j['status']}: {[(f['gen'], f['status']) for f in tf]}")

    # every applied terminal finalize that came back is reflected in its job and its event
    for call in rec.calls:
        if call["kind"] == "finalize" and call["known"] and call["result"] == "applied":
            post = call.get("post")
            if post and post[0] in TERMINAL:
                j = jobs.get(call["job"])
                evs = events.get(call["job"], [])
                if not j or j["status"] != post[0] or j["gen"] != call["gen"] or \
                        [e["gen"] for e in evs] != [call["gen"]]:
                    V.add("a finalize that returned applied is lost",
                          f"job {call['job']} gen {call['gen']} -> {post[0]}: now "
                          f"{j and (j['status'], j['gen'])}, events {[(e['kind'], e['gen']) for e in evs]}")

    # -- 5. a guarded business row never moves between terminal values ------------------
    business, history = db["business"], db["history"]
    for jid, j in jobs.items():
        if j["status"] in TERMINAL and j["txn"] is not None:
            if business.get(j["txn"]) != BUSINESS_OF[j["status"]]:
                V.add("business row does not match its job",
                      f"{j['txn']}: job {jid} {j['status']}, row {business.get(j['txn'])}")
            h = history.get(j["txn"], [])
            if h != [("pending", BUSINESS_OF[j["status"]])]:
                V.add("business row history is not exactly pending -> final", f"{j['txn']}: {h}")
    for txn, moves in history.items():
        for old, new in moves:
            if old in TERMINAL_BUSINESS and new in TERMINAL_BUSINESS and old != new:
                V.add("history shows a move between success and failed", f"{txn}: {old} -> {new}")

    # -- 6. the partner's record: re-sends only after the previous holder lost the job ----
    sends = collections.defaultdict(list)
    for r in partner_requests:
        sends[r["job"]].append(r)
    stats.update(resent_jobs=0, resends=0, resends_after_retry=0, resends_after_expiry=0,
                 duplicate_deliveries=0, sends_after_own_lease=0)
    for jid, rs in sends.items():
        # Generations arrive in increasing order, unless a worker sends after its own lease
        # ended (a zombie: the extension cannot stop the send, only fence its finalize).
        by_time = sorted(rs, key=lambda r: r["t"])
        top = None
        for b in by_time:
            if top is not None and b["gen"] < top["gen"]:
                cb = claim_of.get((jid, b["gen"]))
                _, until_b = held_until(jid, b["gen"], cb) if cb else ("expiry", 0.0)
                if b["t"] <= until_b:
                    V.add("partner saw a generation go backwards while its lease was running",
                          f"job {jid}: gen {top['gen']} sent at {fmt_ts(top['t'])}, then gen {b['gen']} "
                          f"at {fmt_ts(b['t'])} (its lease ran until {fmt_ts(until_b)})")
                else:
                    stats["zombie_sends"] = stats.get("zombie_sends", 0) + 1
            if top is None or b["gen"] > top["gen"]:
                top = b
        rs = sorted(rs, key=lambda r: (r["gen"], r["t"]))
        for r in rs:
            c = claim_of.get((jid, r["gen"]))
            if c is None:
                V.add("partner got a send for a claim the database does not have",
                      f"job {jid} gen {r['gen']} sent at {fmt_ts(r['t'])}")
                continue
            if r["t"] + 0.001 < ts(c["claimed_at"]):
                V.add("send before its claim", f"job {jid} gen {r['gen']}")
            how, until = held_until(jid, r["gen"], c)
            if how == "expiry" and r["t"] > until:
                stats["sends_after_own_lease"] += 1  # worker behaviour, shown for information
        for a, b in zip(rs, rs[1:]):
            if a["gen"] == b["gen"]:
                V.add("two sends under one generation", f"job {jid} gen {a['gen']} ({a['worker']}, {b['worker']})")
        if len(rs) > 1:
            stats["resent_jobs"] += 1
        oks = [r for r in rs if r["code"] == 200]
        if len(oks) > 1:
            stats["duplicate_deliveries"] += len(oks) - 1
        for prev, nxt in zip(rs, rs[1:]):
            stats["resends"] += 1
            cp = claim_of.get((jid, prev["gen"]))
            cn = claim_of.get((jid, nxt["gen"]))
            if not cp or not cn or prev["gen"] == nxt["gen"]:
                continue
            how, until = held_until(jid, prev["gen"], cp)
            stats[f"resends_after_{how}"] += 1
            # The new holder's claim, and the re-send itself, come only after the previous
            # sender lost the job (lease ended) or gave it back (applied retry).
            if ts(cn["claimed_at"]) < until or nxt["t"] < until:
                V.add("re-send before the previous holder's lease expired (or its retry was due)",
                      f"job {jid}: gen {prev['gen']} held until {fmt_ts(until)} ({how}); gen {nxt['gen']} "
                      f"claimed {fmt_ts(cn['claimed_at'])}, sent at {fmt_ts(nxt['t'])}")
        j = jobs.get(jid)
        if j and j["status"] == "sent" and not any(r["gen"] == j["gen"] and r["code"] == 200 for r in rs):
            V.add("job sent without a successful send under its final claim", f"job {jid} gen {j['gen']}")
    for jid, j in jobs.items():
        if j["status"] == "sent" and jid not in sends:
            V.add("job sent but the partner never heard of it", f"job {jid}")

    # -- counts -------------------------------------------------------------------------------
    stats["jobs"] = len(jobs)
    stats["sent"] = sum(1 for j in jobs.values() if j["status"] == "sent")
    stats["failed"] = sum(1 for j in jobs.values() if j["status"] == "failed")
    stats["events"] = sum(len(v) for v in events.values())
    stats["partner_requests"] = len(partner_requests)
    stats["partner_codes"] = collections.Counter(r["code"] for r in partner_requests)
    stats["stale_finalizes"] = sum(1 for f in db["finalizes"] if f["result"] == "stale")
    stats["late_stale"] = sum(1 for c in rec.calls if c["kind"] == "finalize" and c.get("late")
                              and c["result"] == "stale")
    stats["failed_direct"] = sum(1 for f in db["finalizes"] if f["result"] == "applied" and f["outcome"] == "failed")
    stats["failed_by_max_attempts"] = sum(1 for f in db["finalizes"] if f["result"] == "applied"
                                          and f["outcome"] == "retry" and f["status"] == "failed")
    return stats


def summary_lines(ctx, stats):
    """The lines both the demo and the soak print about a checked run."""
    c = ctx.record.counters
    codes = stats.get("partner_codes", {})
    g = lambda k: stats.get(k, 0)  # noqa: E731
    return [
        ("jobs", f"{g('jobs')}  (sent {g('sent')}, failed {g('failed')}: 422 -> 'failed' {g('failed_direct')},"
                 f" retry -> failed at max_attempts {g('failed_by_max_attempts')})"),
        ("events (outbox rows)", f"{g('events')}"),
        ("claims", f"{g('claims')} witnessed  (re-claimed after lease expiry {g('reclaims_after_expiry')},"
                   f" after retry {g('reclaims_after_retry')}; committed but never seen by their worker"
                   f" {g('claims_invisible')}; longest wait past an expired lease {g('max_reclaim_delay'):.3f} s)"),
        ("sends (partner requests)", f"{g('partner_requests')}  (200: {codes.get(200, 0)},"
                                     f" 500: {codes.get(500, 0)}, 422: {codes.get(422, 0)})"),
        ("re-sends", f"{g('resends')} on {g('resent_jobs')} jobs  (after partner error + retry:"
                     f" {g('resends_after_retry')}, after a lease expiry: {g('resends_after_expiry')};"
                     f" each checked: claimed and sent at/after the previous holder's lease end or retry time)"),
        ("duplicate deliveries", f"{g('duplicate_deliveries')}  (a 2nd+ HTTP 200 for one job: at-least-once,"
                                 f" each after a lease expiry)"),
        ("finalizes", f"{g('finalize_calls')} (by sendjobs_finalize_batch: {g('finalize_batched')} in"
                      f" {c['finalize_batch_calls']} calls): applied {g('finalize_applied')}, stale {g('finalize_stale')},"
                      f" unknown {g('finalize_unknown')} (committed {g('finalize_unknown_committed')},"
                      f" not committed {g('finalize_unknown_not_committed')})"),
        ("stale finalizes refused", f"{g('stale_finalizes')}  (late finalizes after a pause:"
                                    f" stale {c['late_finalize_stale']}, applied {c['late_finalize_applied']};"
                                    f" woken while a newer claim held the job {c['pause_woken_while_reclaimed']})"),
        ("heartbeats", f"applied {c['heartbeat_applied']}, stale {c['heartbeat_stale']},"
                       f" unknown {g('heartbeat_unknown')}  (slow sends {c['slow_sends']};"
                       f" jobs dropped after a stale heartbeat {c['dropped_after_stale_heartbeat']})"),
        ("retries", f"with retry_at {c['retry_retry_at']}, with backoff (retry_at NULL) {c['retry_backoff']}"),
        ("sends after own lease", f"{g('sends_after_own_lease')}  (information: a send that started after its"
                                  f" claim's lease end)"),
        ("guard refusals", f"{c['guard_refusals']} of {c['guard_attempts']} flips tried  "
                           f"(rowcount 0: {c['guard_refusals_rowcount0']}, with WARNING: {c['guard_warnings']})"),
    ]


def print_table(lines):
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"   {k:<{width}}  {v}")


# ----------------------------------------------------------------------------------
# the checker's own test: every check must be seen to fail
# ----------------------------------------------------------------------------------

def _first(items, what):
    for x in items:
        return x
    raise LookupError(f"no {what} in this run to mutate")


def _mutations():
    """(check name, what the mutation does, function(db, sends, calls, plans, enqueued)).
    Each function corrupts one fact of a clean run's records, as the bug the check
    exists for would have; the check must then report it."""
    def jobs_with(db, pred):
        return (j for j in sorted(db["jobs"].values(), key=lambda j: j["id"]) if pred(j))

    def claims_of(db, jid):
        return sorted((c for c in db["claims"] if c["job"] == jid), key=lambda c: c["gen"])

    def applied(db, pred):
        return (f for f in db["finalizes"] if f["result"] == "applied" and pred(f))

    def sends_of(sends, jid):
        return sorted((r for r in sends if r["job"] == jid), key=lambda r: r["gen"])

    def known(calls, kind, pred=lambda c: True):
        return (c for c in calls if c["kind"] == kind and c["known"] and c["result"] not in (None, "error")
                and pred(c))

    def reclaimed_after_expiry(db):
        fins = {(f["job"], f["gen"]) for f in db["finalizes"] if f["result"] == "applied"}
        for j in jobs_with(db, lambda j: j["gen"] >= 2):
            cs = claims_of(db, j["id"])
            if len(cs) >= 2 and (j["id"], cs[0]["gen"]) not in fins:
                return j, cs
        raise LookupError("no re-claim after a lease expiry")

    def terminal_finalize(db, jid):
        return _first(applied(db, lambda f: f["job"] == jid and f["status"] in TERMINAL), "terminal finalize")

    M = []

    def m(check, doc):
        def deco(fn):
            M.append((check, doc, fn))
            return fn
        return deco

    @m("a claim that came back is not in the database (lost commit)", "drop the witness row of a returned claim")
    def _(db, sends, calls, plans, enq):
        c = _first(known(calls, "claim", lambda c: c["result"]), "returned claim")
        db["claims"] = [w for w in db["claims"] if not (w["call"] == c["id"] and w["job"] == c["result"][0][0])]

    @m("a heartbeat answer that came back is not in the database (lost commit)", "drop a returned heartbeat's witness")
    def _(db, sends, calls, plans, enq):
        c = _first(known(calls, "heartbeat"), "returned heartbeat")
        db["heartbeats"] = [w for w in db["heartbeats"] if w["call"] != c["id"]]

    @m("a finalize answer that came back is not in the database (lost commit)", "flip a returned finalize's witness")
    def _(db, sends, calls, plans, enq):
        c = _first(known(calls, "finalize"), "returned finalize")
        w = _first((w for w in db["finalizes"] if w["call"] == c["id"]), "witness")
        w["result"] = "stale" if w["result"] == "applied" else "applied"

    @m("a witness row for a call nobody made", "add a witness row with an unknown call id")
    def _(db, sends, calls, plans, enq):
        db["heartbeats"].append(dict(db["heartbeats"][0] if db["heartbeats"] else {}, call=10 ** 12, job=-1, gen=1,
                                     result="stale", status="sent", post_gen=1, lease_end=None))

    @m("job lost", "remove an enqueued job")
    def _(db, sends, calls, plans, enq):
        del db["jobs"][_first(jobs_with(db, lambda j: True), "job")["id"]]

    @m("idempotency key created a second job", "a second job with an existing key")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["key"]), "job")
        db["jobs"][10 ** 12] = dict(j, id=10 ** 12)

    @m("job not terminal at the end", "a job left pending")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")["status"] = "pending"

    @m("job neither terminal nor claimable", "a job in a status no claim takes")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, lambda j: True), "job")["status"] = "cancelled"

    @m("claim generations not 1, 2, 3, ... (one increment per claim)", "a claim generation skips one")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["gen"] >= 2), "re-claimed job")
        claims_of(db, j["id"])[-1]["gen"] += 1

    @m("final claim_generation/attempts differ from the number of claims", "attempts one too many")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, lambda j: True), "job")["attempts"] += 1

    @m("claimed before it was due", "the first claim one second before run_at")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: plans.get(j["key"]) and plans[j["key"]]["run_at"]), "scheduled job")
        claims_of(db, j["id"])[0]["claimed_at"] = plans[j["key"]]["run_at"] - dt.timedelta(seconds=1)

    @m("generation grew while claimed_at went back", "the second claim dated before the first")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["gen"] >= 2), "re-claimed job")
        cs = claims_of(db, j["id"])
        cs[1]["claimed_at"] = cs[0]["claimed_at"] - dt.timedelta(seconds=1)

    @m("claimed again after a terminal finalize", "a retry that released a claim becomes `sent`")
    def _(db, sends, calls, plans, enq):
        f = _first(applied(db, lambda f: f["outcome"] == "retry" and f["status"] == "pending"), "applied retry")
        f["status"] = "sent"

    @m("two claims with overlapping unexpired leases", "a re-claim half a second before the lease end")
    def _(db, sends, calls, plans, enq):
        j, cs = reclaimed_after_expiry(db)
        cs[1]["claimed_at"] = cs[0]["lease_end"] - dt.timedelta(seconds=0.5)

    @m("finalize applied with an old generation", "an applied finalize left the row at a newer generation")
    def _(db, sends, calls, plans, enq):
        _first(applied(db, lambda f: True), "applied finalize")["post_gen"] += 1

    @m("finalize applied after its claim was superseded", "an applied retry dated after the next claim")
    def _(db, sends, calls, plans, enq):
        for f in applied(db, lambda f: f["outcome"] == "retry" and f["status"] == "pending"):
            nxt = [c for c in db["claims"] if c["job"] == f["job"] and c["gen"] == f["gen"] + 1]
            if nxt:
                f["at"] = nxt[0]["claimed_at"] + dt.timedelta(seconds=1)
                return
        raise LookupError("no retry followed by a claim")

    @m("finalize applied but the row says otherwise", "an applied `sent` left the row `failed`")
    def _(db, sends, calls, plans, enq):
        _first(applied(db, lambda f: f["outcome"] == "sent"), "applied sent")["status"] = "failed"

    @m("two applied finalizes for one claim", "a second applied finalize for one claim")
    def _(db, sends, calls, plans, enq):
        f = _first(applied(db, lambda f: f["status"] in TERMINAL), "terminal finalize")
        db["finalizes"].append(dict(f, call=f["call"]))

    @m("finalize refused while holding the job", "a `stale` answer while the row was in_flight at that generation")
    def _(db, sends, calls, plans, enq):
        f = _first((f for f in db["finalizes"] if f["result"] == "stale"), "stale finalize")
        f.update(status="in_flight", post_gen=f["gen"])

    @m("finalize returned an unknown value", "a finalize answer that is neither applied nor stale")
    def _(db, sends, calls, plans, enq):
        db["finalizes"][0]["result"] = "maybe"

    @m("heartbeat applied with an old generation", "an applied heartbeat left the row at a newer generation")
    def _(db, sends, calls, plans, enq):
        _first((h for h in db["heartbeats"] if h["result"] == "applied"), "applied heartbeat")["post_gen"] += 1

    @m("heartbeat refused while holding the job", "a `stale` heartbeat while the row was in_flight at that generation")
    def _(db, sends, calls, plans, enq):
        h = _first((h for h in db["heartbeats"] if h["result"] == "stale"), "stale heartbeat")
        h.update(status="in_flight", post_gen=h["gen"])

    @m("heartbeat returned an unknown value", "a heartbeat answer that is neither applied nor stale")
    def _(db, sends, calls, plans, enq):
        db["heartbeats"][0]["result"] = "maybe"

    @m("job finalized to a terminal state twice", "an earlier claim of a finished job also finalized `failed`")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] in TERMINAL and j["gen"] >= 2), "re-claimed finished job")
        f = terminal_finalize(db, j["id"])
        db["finalizes"].append(dict(f, gen=1, post_gen=1, status="failed", outcome="failed"))

    @m("terminal job without exactly one event", "a second event for a job")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")
        db["events"][j["id"]].append(dict(db["events"][j["id"]][0]))

    @m("event kind differs from job status", "an event of the other kind")
    def _(db, sends, calls, plans, enq):
        e = db["events"][_first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")["id"]][0]
        e["kind"] = "failed"

    @m("event generation differs from the final claim_generation", "an event with an older generation")
    def _(db, sends, calls, plans, enq):
        db["events"][_first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")["id"]][0]["gen"] -= 1

    @m("event transaction_id differs", "an event for another business row")
    def _(db, sends, calls, plans, enq):
        db["events"][_first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")["id"]][0]["txn"] = "x"

    @m("terminal job not finished by an applied finalize of its last claim", "drop the job's terminal finalize")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")
        f = terminal_finalize(db, j["id"])
        db["finalizes"] = [x for x in db["finalizes"] if x is not f]

    @m("event for a job that is not terminal", "a finished job's row back in_flight (event kept)")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")["status"] = "in_flight"

    @m("terminal finalize applied but the job is not terminal", "a finished job's row back to pending")
    def _(db, sends, calls, plans, enq):
        _first(jobs_with(db, lambda j: j["status"] in TERMINAL), "terminal job")["status"] = "pending"

    @m("a finalize that returned applied is lost", "the event of a job whose finalize came back applied is gone")
    def _(db, sends, calls, plans, enq):
        c = _first(known(calls, "finalize", lambda c: c["result"] == "applied" and c.get("post")
                         and c["post"][0] in TERMINAL), "applied terminal finalize")
        db["events"][c["job"]] = []

    @m("business row does not match its job", "a sent job's business row still pending")
    def _(db, sends, calls, plans, enq):
        db["business"][_first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")["txn"]] = "pending"

    @m("business row history is not exactly pending -> final", "the stamp recorded twice")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")
        db["history"][j["txn"]].append(("pending", "success"))

    @m("history shows a move between success and failed", "a success -> failed move in the history")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")
        db["history"][j["txn"]].append(("success", "failed"))

    @m("partner saw a generation go backwards while its lease was running",
       "a newer generation's send arrives before an older one")
    def _(db, sends, calls, plans, enq):
        for j in jobs_with(db, lambda j: j["gen"] >= 2):
            rs = sends_of(sends, j["id"])
            if len(rs) >= 2 and rs[0]["gen"] < rs[1]["gen"]:
                rs[1]["t"] = rs[0]["t"] - 0.001
                return
        raise LookupError("no job sent twice")

    @m("partner got a send for a claim the database does not have", "a send under a generation nobody claimed")
    def _(db, sends, calls, plans, enq):
        sends.append(dict(sends[0], gen=10 ** 6))

    @m("send before its claim", "a send dated a second before its claim")
    def _(db, sends, calls, plans, enq):
        r = sends[0]
        c = _first((c for c in db["claims"] if c["job"] == r["job"] and c["gen"] == r["gen"]), "claim")
        r["t"] = ts(c["claimed_at"]) - 1.0

    @m("two sends under one generation", "the same (job, generation) sent twice")
    def _(db, sends, calls, plans, enq):
        sends.append(dict(sends[0], t=sends[0]["t"] + 0.0001))

    @m("re-send before the previous holder's lease expired (or its retry was due)",
       "a re-send dated at the previous send")
    def _(db, sends, calls, plans, enq):
        for j in jobs_with(db, lambda j: j["gen"] >= 2):
            rs = sends_of(sends, j["id"])
            if len(rs) >= 2 and rs[0]["gen"] < rs[1]["gen"]:
                rs[1]["t"] = rs[0]["t"] + 0.0001
                return
        raise LookupError("no job sent twice")

    @m("job sent without a successful send under its final claim", "the final send answered 500")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")
        for r in sends:
            if r["job"] == j["id"] and r["gen"] == j["gen"]:
                r["code"] = 500

    @m("job sent but the partner never heard of it", "the partner's record of a sent job is gone")
    def _(db, sends, calls, plans, enq):
        j = _first(jobs_with(db, lambda j: j["status"] == "sent"), "sent job")
        sends[:] = [r for r in sends if r["job"] != j["id"]]

    return M


class _Snapshot:
    """A stand-in for a run's Context, on copies of its records."""

    def __init__(self, ctx, calls, plans, enqueued):
        self.violations = Violations()
        self.record = Record()
        self.record.calls = calls
        self.plans = plans
        self.enqueued = enqueued


def checker_self_test(ctx, db, sends):
    """Runs the checker once per mutation of a clean run's records. Returns a list of
    (check, what was mutated, checks reported, caught?)."""
    import copy
    out = []
    for check, doc, fn in _mutations():
        db2, sends2 = copy.deepcopy(db), copy.deepcopy(sends)
        calls2 = copy.deepcopy(ctx.record.calls)
        snap = _Snapshot(ctx, calls2, ctx.plans, dict(ctx.enqueued))
        try:
            fn(db2, sends2, calls2, snap.plans, snap.enqueued)
        except LookupError as e:
            out.append((check, doc, [f"(not run: {e})"], False))
            continue
        check_everything(snap, db2, sends2, {}, require_terminal=True)
        reported = sorted(snap.violations.items)
        out.append((check, doc, reported, check in reported))
    return out
