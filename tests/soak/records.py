"""The records of a run and what the checker reads: the harness's record of every call
(`Record`), the violations found (`Violations`), the schema of a run (business table,
guard, link, history, witness tables) with the SQL that writes the witness rows, and
`read_database`, which reads all of it back for the checker (tests/soak/checker.py).

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

* The witness tables (`harness.claims`, `harness.heartbeats`, `harness.finalizes`,
  and `harness.cancels` for the operator's cancels): each call writes one witness row
  *in the same transaction* as the call itself (the claim in the same statement), with
  the answer and the job's row as the call left it (a cancel's commit time is read
  back from the server: track_commit_timestamp). Postgres commits both or neither, so
  after a crash or a failover the surviving witness rows are exactly the calls whose
  effects survived -- including calls whose answer never reached their worker (a claim
  that committed just before the connection broke is invisible to the worker, not to
  the checker). The witness adds no locks on send_jobs and changes nothing the
  extension does.

The operator's other calls (sendjobs_redrive, sendjobs_purge) are recorded as calls
too, with their answers; what they did is in the database itself (a new job's
`redrive_of`, the jobs a purge left).

The checker then proves: every answer that came back is in the database (durability
across crashes and failover, invariant 14 of docs/contract.md); the witness history of
each job obeys invariants 1 to 8 (one live claim ... nothing lost, at most max_attempts
sends) and those of the lifecycle functions (giving up, cancel, redrive, purge: 8, 10 to
12); and the partner's record
agrees with that history (re-sends only after the previous holder's lease, as the
database recorded it at claim and heartbeat time, had ended; never more sends of a job
than its max_attempts). The partner lives in tests/soak/partner.py, the workers that
make the calls in tests/soak/workers.py, the operator in tests/soak/lifecycle.py.
"""

import collections
import datetime as dt
import hashlib
import itertools
import random
import threading
import time
import traceback

QUEUES = ("acme", "globex")
# A partner with limits (invariants 16-19 of docs/contract.md): its jobs carry ordering
# keys (one of ORDERING_KEYS accounts each), its queue a cap and a rate, and the
# operator pauses it now and then (tests/soak/lifecycle.py).
LIMITED_QUEUE = "initech"
LIMITS = {"max_in_flight": 4, "rate": 40.0, "burst": 8}
ORDERING_KEYS = 12
TERMINAL = ("sent", "failed", "cancelled")  # finished: the job never changes again
FINALIZED = ("sent", "failed")  # what an applied terminal finalize (or a give-up) leaves
TERMINAL_BUSINESS = ("success", "failed")
BUSINESS_OF = {"sent": "success", "failed": "failed"}  # a cancel stamps nothing
REDRIVE_STAMP = "pending"  # the link's on_redrive (its default)
# How sendjobs_claim words the last_error of a job that gave up (invariant 8).
GAVE_UP_PREFIX = "sendjobs: gave up: "
GAVE_UP = GAVE_UP_PREFIX + "the lease of attempt {n} of {n} expired"


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
            call = {
                "id": next(self._ids),
                "kind": kind,
                "worker": worker,
                "t0": time.time(),
                "result": None,
                "known": False,
                **fields,
            }
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
SELECT sendjobs_limit('{limited_queue}', {max_in_flight}, {rate}, {burst});

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
CREATE TABLE harness.cancels (
    id bigserial PRIMARY KEY, call_id bigint NOT NULL, job bigint, result text,
    status_after text, gen_after bigint, at timestamptz NOT NULL DEFAULT clock_timestamp());
-- What the relay (tests/soak/lifecycle.py) read from the outbox, written in the read's own
-- transaction: a row per event delivered, duplicates included.
CREATE TABLE harness.relayed (
    id bigserial PRIMARY KEY, job bigint NOT NULL, kind text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp());
""".format(limited_queue=LIMITED_QUEUE, **LIMITS)

# One read of the outbox for the relay and its witness rows, in one statement (the
# caller's transaction moves the position and keeps the witness together).
RELAY_SQL = """
WITH e AS MATERIALIZED (SELECT * FROM sendjobs_read_events('soak', %s)),
     w AS (INSERT INTO harness.relayed (job, kind) SELECT job_id, kind FROM e)
SELECT count(*) FROM e"""

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

CANCEL_WITNESS_SQL = """
INSERT INTO harness.cancels (call_id, job, result, status_after, gen_after)
SELECT %s, %s, %s, status, claim_generation FROM public.send_jobs WHERE id = %s"""


# ----------------------------------------------------------------------------------
# reading the database back, for the checker
# ----------------------------------------------------------------------------------


def read_database(conn):
    """Everything the checker needs from the database, as plain dicts."""
    db = {}
    with conn.cursor() as cur:
        cur.execute(
            "SELECT id, status, claim_generation, attempts, max_attempts, transaction_id,"
            "       idempotency_key, next_attempt_at, lease_expires_at, finished_at, last_error,"
            "       redrive_of, queue, payload, ordering_key, created_at FROM public.send_jobs"
        )
        db["jobs"] = {
            r[0]: dict(
                zip(
                    (
                        "id",
                        "status",
                        "gen",
                        "attempts",
                        "max_attempts",
                        "txn",
                        "key",
                        "next_at",
                        "lease_end",
                        "finished_at",
                        "last_error",
                        "redrive_of",
                        "queue",
                        "payload",
                        "ordering_key",
                        "created_at",
                    ),
                    r,
                )
            )
            for r in cur.fetchall()
        }
        cur.execute(
            "SELECT job_id, transaction_id, kind, claim_generation, created_at, queue,"
            "       event_xid::text::bigint FROM public.send_job_events"
        )
        db["events"] = collections.defaultdict(list)
        for job_id, txn, kind, gen, created_at, queue, xid in cur.fetchall():
            db["events"][job_id].append(
                {"txn": txn, "kind": kind, "gen": gen, "at": created_at, "queue": queue, "xid": xid}
            )
        cur.execute("SELECT id, status FROM public.transactions")
        db["business"] = dict(cur.fetchall())
        cur.execute("SELECT transaction_id, old_status, new_status FROM public.transaction_history ORDER BY id")
        db["history"] = collections.defaultdict(list)
        for txn, old, new in cur.fetchall():
            db["history"][txn].append((old, new))
        # A claim's commit time too (the ordering keys' check: tests/soak/checker.py).
        cur.execute(
            "SELECT call_id, job, gen, claimed_at, lease_end, worker,"
            "       CASE WHEN current_setting('track_commit_timestamp')::bool"
            "            THEN pg_xact_commit_timestamp(xmin) END"
            "  FROM harness.claims ORDER BY id"
        )
        db["claims"] = [
            dict(zip(("call", "job", "gen", "claimed_at", "lease_end", "worker", "committed_at"), r))
            for r in cur.fetchall()
        ]
        cur.execute(
            "SELECT call_id, job, gen, result, status_after, gen_after, lease_end, at"
            "  FROM harness.heartbeats ORDER BY id"
        )
        db["heartbeats"] = [
            dict(zip(("call", "job", "gen", "result", "status", "post_gen", "lease_end", "at"), r))
            for r in cur.fetchall()
        ]
        cur.execute(
            "SELECT call_id, job, gen, outcome, result, status_after, gen_after, next_at, attempts,"
            "       max_attempts, txn_start, at FROM harness.finalizes ORDER BY id"
        )
        db["finalizes"] = [
            dict(
                zip(
                    (
                        "call",
                        "job",
                        "gen",
                        "outcome",
                        "result",
                        "status",
                        "post_gen",
                        "next_at",
                        "attempts",
                        "max_attempts",
                        "txn_start",
                        "at",
                    ),
                    r,
                )
            )
            for r in cur.fetchall()
        ]
        cur.execute("SELECT job FROM harness.relayed ORDER BY id")
        db["relayed"] = [r[0] for r in cur.fetchall()]
        # A cancel's commit time, as the server recorded it (NULL where the setting is off).
        cur.execute(
            "SELECT call_id, job, result, status_after, gen_after, at,"
            "       CASE WHEN current_setting('track_commit_timestamp')::bool"
            "            THEN pg_xact_commit_timestamp(xmin) END"
            "  FROM harness.cancels ORDER BY id"
        )
        db["cancels"] = [
            dict(zip(("call", "job", "result", "status", "post_gen", "at", "committed_at"), r)) for r in cur.fetchall()
        ]
        db["stats"] = read_stats(cur)
    return db


STATS_COLUMNS = (
    "ready",
    "scheduled",
    "in_flight",
    "expired",
    "at_last_attempt",
    "sent_5m",
    "failed_5m",
    "cancelled_5m",
)


def read_stats(cur):
    """sendjobs_stats() per queue, between two clock readings: the `now` it judges by lies
    between `before` and `after`."""
    cur.execute("SELECT clock_timestamp()")
    before = cur.fetchone()[0]
    cur.execute(f"SELECT queue, {', '.join(STATS_COLUMNS)} FROM sendjobs_stats()")
    rows = {r[0]: dict(zip(STATS_COLUMNS, r[1:])) for r in cur.fetchall()}
    cur.execute("SELECT clock_timestamp()")
    return {"before": before, "after": cur.fetchone()[0], "rows": rows}
