"""The threads that do a run's work, and what they share: connections that survive
crashes and failovers (`Target`, `connect`, `connect_until`), the `Context` every
thread of a run shares, how jobs are planned and enqueued (`plan_job`,
`enqueue_chunk`; some jobs are poison), the `Worker`s (claim / send / heartbeat /
finalize, with faults on purpose, and always failing on a poison job), the late
`Reconciler` that tries to flip finished business rows, and the soak's `Producer`.
Every call a worker makes is recorded (tests/soak/records.py) and writes its witness
row in its own transaction; the faults that come from outside a worker (backend
terminations, server crashes) are in tests/soak/faults.py; the soak's operator
(cancel, redrive, purge) is in tests/soak/lifecycle.py.
"""

import datetime as dt
import json
import threading
import time
import urllib.error
import urllib.request

import psycopg2
import psycopg2.extras

from .records import (
    CLAIM_SQL,
    FINALIZE_BATCH_WITNESS_SQL,
    FINALIZE_WITNESS_SQL,
    HEARTBEAT_WITNESS_SQL,
    LIMITED_QUEUE,
    ORDERING_KEYS,
    QUEUES,
    Record,
    Violations,
    stable_rng,
)


# ----------------------------------------------------------------------------------
# connections
# ----------------------------------------------------------------------------------


class Target:
    """Where the workers connect. Changes when a failover promotes the standby."""

    def __init__(self, host, port, user, dbname, password=None, read_write=False):
        self.host, self.port, self.user, self.dbname, self.password = host, port, user, dbname, password
        # Several hosts (Patroni's nodes): libpq takes the first that is a writable primary.
        self.read_write = read_write
        self.lock = threading.Lock()

    def set_port(self, port):
        with self.lock:
            self.port = port

    def params(self):
        with self.lock:
            params = dict(host=self.host, port=self.port, user=self.user, dbname=self.dbname, password=self.password)
        return dict(params, target_session_attrs="read-write") if self.read_write else params


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
    # The server shutting down (a switchover, a fast stop) may first fail the statement
    # on a live connection: a parallel worker of the query terminated (57P01).
    if getattr(exc, "pgcode", None) in ("57P01", "57P02", "57P03"):
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
# planning and enqueueing jobs
# ----------------------------------------------------------------------------------

ENQUEUE_SQL = """
WITH v AS MATERIALIZED (SELECT * FROM (VALUES %s) AS v(txn, amount, payload, queue, run_at, key, max_attempts,
                                                       ordering_key, priority)),
     t AS (INSERT INTO public.transactions (id, amount_cents)
           SELECT txn, amount FROM v ON CONFLICT (id) DO NOTHING)
SELECT v.key, sendjobs_enqueue(v.payload, v.queue, v.run_at, v.txn, v.key, v.max_attempts, v.ordering_key,
                               v.priority) FROM v"""
ENQUEUE_TEMPLATE = "(%s::text, %s::bigint, %s::jsonb, %s::text, %s::timestamptz, %s::text, %s::int, %s::text, %s::int)"


def plan_job(seed, i, now, poison_share=0.0):
    """Job number i, deterministic from the seed; `now` fixes its run_at once (a retried
    enqueue passes the same run_at, so the job's due time is known exactly). A share
    `poison_share` of the jobs are poison (see `poison_of`), with max_attempts 2 or 3."""
    r = stable_rng(seed, "job", i)
    txn = f"txn-{i:07d}"
    u = r.random()
    # ~10% an overdue backlog (scheduled an hour ago: the clock that bug 1 used),
    # ~5% scheduled a moment later, the rest due now (run_at NULL).
    run_in = -3600.0 if u < 0.10 else round(r.uniform(0.5, 3.0), 3) if u < 0.15 else None
    amount = r.randint(100, 500_000)
    payload = {"transaction_id": txn, "amount_cents": amount, "currency": "EUR"}
    max_attempts = 2 if r.random() < 0.12 else None
    # Its own stream, so that the rest of each plan is what it was before poison jobs.
    p = stable_rng(seed, "poison", i)
    poison = None
    if p.random() < poison_share:
        poison = "crash" if p.random() < 0.5 else "hang"
        payload["poison"] = poison
        max_attempts = p.choice((2, 3))
    # Its own stream too: every tenth job is the limited partner's, ordered by account;
    # a job in ten of the others has a head start in the claim order.
    f = stable_rng(seed, "flow", i)
    limited = i % 10 == 9
    ordering_key = f"acct-{f.randrange(ORDERING_KEYS)}" if limited else None
    priority = f.choice((5, 30)) if not limited and f.random() < 0.1 else 0
    return {
        "i": i,
        "txn": txn,
        "amount": amount,
        "queue": LIMITED_QUEUE if limited else QUEUES[i % 2],
        "ordering_key": ordering_key,
        "priority": priority,
        "run_at": None if run_in is None else dt.datetime.fromtimestamp(now + run_in, dt.timezone.utc),
        "max_attempts": max_attempts,
        "key": f"pay-{txn}",
        "poison": poison,
        "payload": json.dumps(payload),
    }


def poison_of(payload):
    """A poison job's kind, from its payload (a redriven copy keeps it), or None:
    crash  its worker sends it, then dies (every time)
    hang   its worker sends it, then hangs on it past its lease; it finalizes only once
           the claim is lost (re-claimed, given up or cancelled), so never applies."""
    return payload.get("poison") if isinstance(payload, dict) else None


def enqueue_chunk(conn, plans):
    """Inserts the business rows and enqueues the jobs in one statement; returns {key: id}."""
    with conn.cursor() as cur:
        rows = psycopg2.extras.execute_values(
            cur,
            ENQUEUE_SQL,
            [
                (
                    p["txn"],
                    p["amount"],
                    p["payload"],
                    p["queue"],
                    p["run_at"],
                    p["key"],
                    p["max_attempts"],
                    p["ordering_key"],
                    p["priority"],
                )
                for p in plans
            ],
            template=ENQUEUE_TEMPLATE,
            page_size=len(plans) + 1,
            fetch=True,
        )
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
        self.stop = threading.Event()  # the run is over
        self.chaos = threading.Event()  # set while worker faults are injected
        self.killer = None  # a Killer when backends are terminated on purpose
        self.plans = {}  # key -> planned job
        self.enqueued = {}  # key -> id, from enqueue calls that came back
        self.enqueue_lock = threading.Lock()
        # Finished jobs seeded before the run (tests/soak/lifecycle.py): old ones the
        # purge must delete, recent ones (an old job that finished lately) it must keep.
        self.seeded_old = set()
        self.seeded_recent = set()

    def note_enqueued(self, got):
        with self.enqueue_lock:
            for key, jid in got.items():
                old = self.enqueued.get(key)
                if old is not None and old != jid:
                    self.violations.add("idempotency key created a second job", f"{key}: first {old}, again {jid}")
                self.enqueued.setdefault(key, jid)


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

    A poison job (`poison_of` its payload) fails its worker on every attempt, whatever
    the faults: `crash` sends it and dies (the rest of the batch is abandoned, as with
    `kill`); `hang` sends it and puts it aside, unfinalized, and finalizes it (after a
    heartbeat) only once its claim is lost -- a finalize that can never apply.
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
        # Every third worker claims from any queue; of the others, those of idx 1 mod 4 the
        # limited partner's by name.
        self.queue = None if idx % 3 == 0 else LIMITED_QUEUE if idx % 4 == 1 else QUEUES[idx % 2]
        self.lease = lease
        self.lease_sql = f"{lease} seconds"
        self.hung = []  # poison jobs this worker hangs on: (job, outcome, error), not finalized yet
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
            # The call's own BEGIN is unknown to psycopg2 (autocommit), whose rollback()
            # would send nothing and leave the connection in the aborted transaction.
            with self.conn.cursor() as cur:
                cur.execute("ROLLBACK")
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
        call = self.ctx.record.new_call("claim", self.wname, queue=self.queue)
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
        return [
            {
                "job": jid,
                "gen": gen,
                "lease_end": lease_end,
                "claimed_at": claimed_at,
                "payload": payload,
                "txn": txn,
                "key": key,
                "attempts": attempts,
                "max_attempts": max_attempts,
                "t_local": t_local,
            }
            for (jid, gen, lease_end, claimed_at, payload, txn, key, attempts, max_attempts) in rows
        ]

    def heartbeat(self, job):
        """Extends the lease. Returns 'applied' or raises LostLease (stale or unknown)."""
        for _attempt in range(2):
            self._ensure()
            call = self.ctx.record.new_call("heartbeat", self.wname, job=job["job"], gen=job["gen"])
            try:
                with self.conn.cursor() as cur:
                    cur.execute(
                        "BEGIN; SELECT sendjobs_heartbeat(%s::bigint, %s::bigint, %s::interval)",
                        (job["job"], job["gen"], self.lease_sql),
                    )
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
                    raise LostLease() from None
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
        call = self.ctx.record.new_call(
            "finalize", self.wname, job=job["job"], gen=job["gen"], outcome=outcome, late=late
        )
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
                cur.execute(
                    "BEGIN; SELECT sendjobs_finalize(%s::bigint, %s::bigint, %s::text, %s::text, " + retry_expr + ")",
                    [job["job"], job["gen"], outcome, error] + params,
                )
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
        calls = [
            self.ctx.record.new_call(
                "finalize", self.wname, job=j["job"], gen=j["gen"], outcome=outcome, late=late, batch=len(jobs)
            )
            for j in jobs
        ]
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
                cur.execute(
                    "BEGIN; SELECT id, result FROM sendjobs_finalize_batch(%s::bigint[], %s::bigint[], "
                    "%s::text, %s::text, " + retry_expr + ")",
                    [ids, gens, outcome, error] + params,
                )
                results = dict(cur.fetchall())
                cur.execute(
                    FINALIZE_BATCH_WITNESS_SQL,
                    (outcome, [c["id"] for c in calls], ids, gens, [results.get(i) for i in ids]),
                )
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
        body = json.dumps(
            {
                "job_id": job["job"],
                "claim_generation": job["gen"],
                "transaction_id": job["txn"],
                "payload": job["payload"],
            }
        ).encode()
        req = urllib.request.Request(
            self.ctx.partner_url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Idempotency-Key": job["key"] or "",
                "X-Worker": self.wname,
                "X-Delay": str(delay),
            },
        )
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
            table += [
                ("term_claim", a.p_term_claim),
                ("term_send", a.p_term_send),
                ("term_finalize", a.p_term_finalize),
            ]
        r = self.rng.random()
        for kind, p in table:
            if r < p:
                if kind in ("term_claim", "term_finalize") and self.rng.random() < 0.5:
                    kind += "_precommit"
                return kind
            r -= p
        return None

    def one_batch(self):
        self.wake_from_hangs()
        fault = self.pick_fault()
        jobs = self.claim(fault if fault and fault.startswith("term_claim") else None)
        if not jobs:
            self.ctx.record.count("empty_claims")
            time.sleep(0.05)
            return
        self.ctx.record.count("batches")
        special = self.rng.randrange(len(jobs))  # the job the fault hits
        die_after_send = self.rng.random() < 0.6  # a kill after sending it, or before
        done = []  # batch mode: (job, outcome, error, fault) to finalize together at the end
        paused_at = -1
        for i, job in enumerate(jobs):
            poison = poison_of(job["payload"])
            if poison:
                if self.play_poison(job, poison):
                    return self.die(len(jobs) - i, "poison", counter="poison_crash")
                continue
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
        while that newer claim still holds it (the race of bug 2 in docs/contract.md)."""
        deadline = time.monotonic() + self.lease + self.rng.uniform(0.3, self.args.pause_extra)
        if self.rng.random() < 0.5 and self.conn is not None:
            time.sleep(self.lease)  # the lease began at the claim: it has expired by now
            while time.monotonic() < deadline:
                try:
                    with self.conn.cursor() as cur:
                        cur.execute(
                            "SELECT status, claim_generation FROM public.send_jobs WHERE id = %s", (job["job"],)
                        )
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

    def play_poison(self, job, poison):
        """Sends a poison job, then fails on it: True when the worker must now die
        (`crash`); a `hang` job is put aside until its claim is lost."""
        code, err = self.post(job)
        if poison == "crash":
            return True
        outcome = "sent" if code == 200 else "failed" if code == 422 else "retry"
        self.hung.append((job, outcome, err if outcome != "sent" else None))
        self.ctx.record.count("poison_hang")
        return False

    def wake_from_hangs(self):
        """The hung poison jobs whose claim is lost (re-claimed, given up, cancelled):
        the worker wakes up, heartbeats and finalizes each -- both must answer `stale`
        (the checker sees it in the witness rows). The others stay hung."""
        for hung in list(self.hung):
            job, outcome, err = hung
            if self.still_holds(job):
                continue
            self.hung.remove(hung)
            self.ctx.record.count("poison_woken")
            try:
                self.heartbeat(job)
            except LostLease:
                pass
            self.finalize_until_known(job, outcome, err)

    def still_holds(self, job):
        """The job is still in_flight under this claim (its lease may have expired).
        When the database cannot say (connection lost), it is taken as still held."""
        try:
            self._ensure()
            with self.conn.cursor() as cur:
                cur.execute(
                    "SELECT status = 'in_flight' AND claim_generation = %s FROM public.send_jobs WHERE id = %s",
                    (job["gen"], job["job"]),
                )
                row = cur.fetchone()
        except psycopg2.Error:
            close_quietly(self.conn)
            self.conn = None
            return True
        return bool(row and row[0])

    def die(self, dropped, when, counter="fault_kill"):
        """Crash between claim and finalize: the connection goes, the batch is lost
        (its hung poison jobs with it)."""
        self.ctx.record.count(counter)
        self.ctx.record.count(f"kill_{when}")
        self.ctx.record.count("jobs_dropped_by_kill", dropped)
        close_quietly(self.conn)
        self.conn = None
        self.hung = []
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
                cur.execute(
                    "SELECT transaction_id, new_status FROM transaction_history"
                    " WHERE new_status IN ('success', 'failed') ORDER BY id DESC LIMIT 20"
                )
            else:  # ... or any finished one
                cur.execute(
                    "SELECT id, status FROM transactions WHERE status IN ('success', 'failed')"
                    " AND id LIKE 'txn-%' ORDER BY id DESC LIMIT 50"
                )
            rows = cur.fetchall()
            if not rows:
                return
            txn, status = self.rng.choice(rows)
            target = "failed" if status == "success" else "success"
            del conn.notices[:]
            # RETURNING: only this UPDATE's own effect counts. A redrive may move the row
            # (failed -> pending -> its new job's outcome) between the read and the flip.
            cur.execute(
                "UPDATE transactions SET status = %s, updated_at = now()"
                " WHERE id = %s AND status = %s RETURNING status",
                (target, txn, status),
            )
            flipped = cur.fetchone()
            rowcount = cur.rowcount
            warnings = [n for n in conn.notices if "WARNING" in n]
            cur.execute("SELECT status FROM transactions WHERE id = %s", (txn,))
            after = cur.fetchone()[0]
        self.ctx.record.count("guard_attempts")
        if flipped is not None and flipped[0] != status:
            self.ctx.violations.add(
                "guard let a terminal business row flip", f"{txn}: {status} -> {flipped[0]} (rowcount {rowcount})"
            )
        elif after == status or warnings:
            self.ctx.record.count("guard_refusals")
            if rowcount == 0:
                self.ctx.record.count("guard_refusals_rowcount0")
            if warnings:
                self.ctx.record.count("guard_warnings")
                self.sample_warning = self.sample_warning or warnings[0].strip()
        else:
            self.ctx.record.count("guard_flips_overtaken")  # the row had moved on (a redrive)


# ----------------------------------------------------------------------------------
# the producer (the soak's; the demo enqueues every job up front)
# ----------------------------------------------------------------------------------


class Producer(threading.Thread):
    """Keeps at most --backlog jobs open; enqueues in chunks until the chaos phase ends.
    A chunk whose answer never came back is enqueued again with the same keys."""

    def __init__(self, ctx, first_index):
        super().__init__(name="producer", daemon=True)
        self.ctx = ctx
        self.next_index = first_index
        self.conn = None
        self.done = threading.Event()

    def run(self):
        a = self.ctx.args
        try:
            while not self.ctx.stop.is_set() and self.ctx.chaos.is_set():
                try:
                    if self.conn is None or self.conn.closed:
                        self.conn = connect_until(self.ctx, "soak producer")
                    with self.conn.cursor() as cur:
                        cur.execute(
                            "SELECT (SELECT count(*) FROM public.send_jobs WHERE status = 'pending')"
                            "     + (SELECT count(*) FROM public.send_jobs WHERE status = 'in_flight')"
                        )
                        open_ = cur.fetchone()[0]
                    if open_ >= a.backlog:
                        time.sleep(0.2)
                        continue
                    self.enqueue_next(a.chunk)
                except Stopped:
                    break
                except psycopg2.Error as e:
                    if not connection_lost(self.conn, e):
                        self.ctx.violations.unexpected_error("producer")
                    close_quietly(self.conn)
                    self.conn = None
                    time.sleep(0.1)
        finally:
            close_quietly(self.conn)
            self.done.set()

    def enqueue_next(self, n):
        now = time.time()
        share = getattr(self.ctx.args, "p_poison", 0.0)
        plans = [plan_job(self.ctx.args.seed, i, now, share) for i in range(self.next_index, self.next_index + n)]
        for p in plans:
            self.ctx.plans[p["key"]] = p
        while True:
            # Recorded for the ordering-key check: a job is compared with a younger one of
            # its key only once its chunk's answer came back (it had committed by then).
            call = self.ctx.record.new_call("enqueue", "producer", jobs=len(plans))
            try:
                if self.conn is None or self.conn.closed:
                    self.conn = connect_until(self.ctx, "soak producer", give_up=time.monotonic() + 600)
                got = enqueue_chunk(self.conn, plans)
                call.update(known=True, t1=time.time(), result=got)
                break
            except psycopg2.Error as e:
                if not connection_lost(self.conn, e):
                    raise
                self.ctx.record.count("enqueue_unknown")  # same keys again: idempotent
                close_quietly(self.conn)
                self.conn = None
                time.sleep(0.1)
        self.ctx.note_enqueued(got)
        self.next_index += n
