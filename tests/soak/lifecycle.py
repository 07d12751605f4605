"""The soak's operator and its history: what an admin does to the queue while workers
run (release 0.2.0's lifecycle functions), every call recorded like a worker's.

* `seed_finished_jobs`, before the run: finished jobs inserted directly (as the
  superuser the soak connects as), each its own event -- old ones (finished a day
  ago), which the purge must delete, and recent ones (created a day ago, finished ten
  minutes ago), which it must keep: the purge goes by the event's age, not the job's.
* `Operator`, a thread during the chaos phase:
    cancel   a random pending or in-flight job (now and then a finished one: `stale`),
             with a witness row in the cancel's own transaction (harness.cancels);
    redrive  a failed job or two (now and then one redriven before: the same new job
             must come back; or a job that is not failed: 55000, nothing changes);
    purge    sendjobs_purge('1 hour', 500), again and again, while the workers run;
    pause    the limited partner's queue for about a second, then resume it: the call
             records when its pause had surely committed (its answer came back) and
             when the first resume was sent, between which no claim may take its jobs.
             A pause whose answer was lost, or a resume that failed, is resumed again
             until one comes back (at the latest when the chaos phase ends).
The checker (tests/soak/checker.py) proves what each of them must and must not do.
"""

import threading
import time

import psycopg2

from .records import CANCEL_WITNESS_SQL, LIMITED_QUEUE, QUEUES, RELAY_SQL, stable_rng
from .workers import Stopped, close_quietly, connect_until, connection_lost

# ----------------------------------------------------------------------------------
# finished jobs from before the run
# ----------------------------------------------------------------------------------

# Finished jobs (each its own event); `finished` is how long ago each job finished. No
# transaction_id: no business row, and the operator leaves them alone.
SEED_SQL = """
INSERT INTO public.send_jobs_finished (queue, payload, status, attempts, max_attempts, claim_generation,
                                  claimed_at, next_attempt_at, created_at, finished_at, last_error)
    SELECT (%s::text[])[1 + i %% 2], jsonb_build_object('seeded', i), s.status,
           s.tries, 5, s.tries, CASE WHEN s.tries > 0 THEN now() - interval '1 day' END,
           now() - interval '1 day', now() - interval '1 day' - interval '1 minute',
           now() - %s::interval - i * interval '1 ms',
           CASE s.status WHEN 'failed' THEN 'partner answered HTTP 422' END
      FROM generate_series(1, %s) AS i,
           LATERAL (SELECT (ARRAY['sent', 'failed', 'cancelled'])[1 + i %% 3] AS status,
                           CASE WHEN i %% 3 = 2 THEN 0 ELSE 1 END AS tries) AS s
RETURNING id"""

PURGE_OLDER_THAN = "1 hour"
PURGE_BATCH = 500


def seed_finished_jobs(conn, old, recent):
    """Inserts `old` jobs finished a day ago and `recent` ones finished ten minutes ago
    (both created a day ago); returns their ids: (old ids, recent ids)."""
    ids = {}
    with conn.cursor() as cur:
        for name, n, finished in (("old", old, "1 day"), ("recent", recent, "10 minutes")):
            cur.execute(SEED_SQL, (list(QUEUES), finished, n))
            ids[name] = {r[0] for r in cur.fetchall()}
    return ids["old"], ids["recent"]


# ----------------------------------------------------------------------------------
# the operator
# ----------------------------------------------------------------------------------

# What a cancel aims at, by share: held jobs, waiting ones, and finished ones (`stale`).
CANCEL_TARGETS = (("in_flight", 0.45), ("pending", 0.40), ("sent", 0.15))

# A random job of the run (seeded jobs have no transaction_id) in a given status.
PICK_SQL = """
SELECT id FROM public.send_jobs WHERE status = %s AND transaction_id IS NOT NULL
 ORDER BY random() LIMIT %s"""
PICK_UNREDRIVEN_SQL = """
SELECT id FROM public.send_jobs AS j WHERE status = 'failed' AND transaction_id IS NOT NULL
   AND NOT EXISTS (SELECT FROM public.send_jobs AS n WHERE n.redrive_of = j.id)
 ORDER BY random() LIMIT %s"""


class Operator(threading.Thread):
    """Cancels, redrives and purges while ctx.chaos is set, on its own connection (it
    reconnects through crashes and failovers). Each call is in ctx.record.calls: kind
    `cancel` (job), `redrive` (ids; result {id: new_id}, or `not_failed` for the 55000
    it was meant to get) or `purge` (result: rows deleted); unknown when the answer
    never came back."""

    def __init__(self, ctx, cancel_every=1.0, redrive_every=2.0, purge_every=0.5, pause_every=6.0):
        super().__init__(name="operator", daemon=True)
        self.ctx = ctx
        self.rng = stable_rng(ctx.args.seed, "operator")
        self.every = {"cancel": cancel_every, "redrive": redrive_every, "purge": purge_every, "pause": pause_every}
        self.conn = None
        self.redriven = {}  # failed job -> its new job, from redrives that came back
        self.paused_call = None  # the pause call whose queue is not known to be resumed
        self.done = threading.Event()

    def run(self):
        due = {k: time.monotonic() + self.rng.uniform(0, v) for k, v in self.every.items()}
        try:
            while not self.ctx.stop.is_set() and self.ctx.chaos.is_set():
                time.sleep(0.05)
                if self.paused_call is not None:
                    self.act("resume")
                    continue
                for action, at in due.items():
                    if time.monotonic() >= at:
                        due[action] = time.monotonic() + self.rng.uniform(0.5, 1.5) * self.every[action]
                        self.act(action)
            # The drain needs the partner's queue open.
            while self.paused_call is not None and not self.ctx.stop.is_set():
                self.act("resume")
                time.sleep(0.1)
        except Stopped:
            pass
        finally:
            close_quietly(self.conn)
            self.done.set()

    def act(self, action):
        """One operator call; a broken connection makes it unknown, and is mended."""
        try:
            if self.conn is None or self.conn.closed:
                self.conn = connect_until(self.ctx, "soak operator")
            getattr(self, action)()
        except psycopg2.Error as e:
            if not connection_lost(self.conn, e):
                self.ctx.violations.unexpected_error(f"operator {action}")
            close_quietly(self.conn)
            self.conn = None

    def pick(self, sql, *params):
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return [r[0] for r in cur.fetchall()]

    def call(self, kind, fn, **fields):
        """Records the call, runs fn(cursor) -> result, and records the answer; a lost
        connection leaves the call unknown."""
        call = self.ctx.record.new_call(kind, "operator", **fields)
        try:
            with self.conn.cursor() as cur:
                result = fn(cur, call)
        except psycopg2.Error as e:
            call["error"] = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            call["t1"] = time.time()
            if not connection_lost(self.conn, e):
                try:
                    with self.conn.cursor() as cur:
                        cur.execute("ROLLBACK")  # the cancel's own BEGIN is unknown to psycopg2 (autocommit)
                except psycopg2.Error:
                    pass
                if kind == "redrive" and e.pgcode == "55000" and fields.get("expect") == "not_failed":
                    call.update(known=True, result="not_failed")
                    return call
                call.update(known=True, result="error")
            self.ctx.record.count(f"{kind}_unknown" if not call["known"] else f"{kind}_error")
            raise
        call.update(known=True, t1=time.time(), result=result)
        return call

    # -- the calls ----------------------------------------------------------------------

    def cancel(self):
        r, status = self.rng.random(), CANCEL_TARGETS[-1][0]
        for status, share in CANCEL_TARGETS:  # noqa: B007 (the status the loop stops at is the pick)
            if r < share:
                break
            r -= share
        ids = self.pick(PICK_SQL, status, 1)
        if not ids:
            return

        def cancel_with_witness(cur, call):
            cur.execute("BEGIN; SELECT sendjobs_cancel(%s::bigint)", (ids[0],))
            result = cur.fetchone()[0]
            cur.execute(CANCEL_WITNESS_SQL, (call["id"], ids[0], result, ids[0]))
            cur.execute("COMMIT")
            return result

        call = self.call("cancel", cancel_with_witness, job=ids[0], aimed_at=status)
        self.ctx.record.count(f"cancel_{call['result']}")

    def redrive(self):
        u = self.rng.random()
        if u < 0.15:  # not failed: the whole call must fail with 55000
            ids, expect = self.pick(PICK_SQL, "sent", 1), "not_failed"
        elif u < 0.35 and self.redriven:  # again: the first new job must come back
            ids, expect = [self.rng.choice(sorted(self.redriven))], "again"
        else:
            ids, expect = self.pick(PICK_UNREDRIVEN_SQL, self.rng.choice((1, 2))), "new"
        if not ids:
            return

        def redrive(cur, call):
            cur.execute("SELECT id, new_id FROM sendjobs_redrive(%s::bigint[])", (ids,))
            return dict(cur.fetchall())

        call = self.call("redrive", redrive, ids=ids, expect=expect)
        if isinstance(call["result"], dict):
            self.redriven.update(call["result"])
        self.ctx.record.count(f"redrive_{expect}")

    def pause(self):
        call = self.ctx.record.new_call("pause", "operator", queue=LIMITED_QUEUE)
        self.paused_call = call  # resumed below, or by run() if this fails
        try:
            with self.conn.cursor() as cur:
                cur.execute("SELECT sendjobs_pause(%s)", (LIMITED_QUEUE,))
        except psycopg2.Error as e:
            call["error"] = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            self.ctx.record.count("pause_unknown")
            raise
        call.update(known=True, result="paused", paused_by=time.time())
        time.sleep(self.rng.uniform(0.5, 1.5))
        self.resume()

    def resume(self):
        call = self.paused_call
        call.setdefault("resume_sent", time.time())
        with self.conn.cursor() as cur:
            cur.execute("SELECT sendjobs_resume(%s)", (LIMITED_QUEUE,))
        call["t1"] = time.time()
        self.paused_call = None
        self.ctx.record.count("paused")

    def purge(self):
        def purge(cur, call):
            cur.execute("SELECT sendjobs_purge(%s::interval, %s)", (PURGE_OLDER_THAN, PURGE_BATCH))
            return cur.fetchone()[0]

        call = self.call("purge", purge)
        self.ctx.record.count("purged", call["result"])


# ----------------------------------------------------------------------------------
# the relay
# ----------------------------------------------------------------------------------


class Relay(threading.Thread):
    """Reads the outbox as consumer `soak` (created after the seeding: the seeded jobs
    are history it has passed) while the run goes on, through crashes and failovers, each
    read and its witness rows (harness.relayed) in one transaction; `drain()` reads the
    rest once everything has stopped. The checker (check_relay) proves that every event
    of the run was read exactly once: a read cut by a crash before its commit is read
    again, never twice."""

    def __init__(self, ctx, every=0.2, batch=50):
        super().__init__(name="relay", daemon=True)
        self.ctx, self.every, self.batch = ctx, every, batch
        self.conn = None
        self.done = threading.Event()

    @staticmethod
    def create_consumer(conn):
        with conn.cursor() as cur:
            cur.execute("SELECT sendjobs_create_consumer('soak', wake => true)")

    def read_once(self, give_up=None):
        """One read and its witness, committed; the number of events read."""
        if self.conn is None or self.conn.closed:
            self.conn = connect_until(self.ctx, "soak relay", give_up=give_up)
            self.conn.autocommit = False
        with self.conn.cursor() as cur:
            cur.execute(RELAY_SQL, (self.batch,))
            n = cur.fetchone()[0]
        self.conn.commit()
        self.ctx.record.count("relayed", n)
        return n

    def run(self):
        try:
            while not self.ctx.stop.is_set():
                try:
                    if self.read_once() < self.batch:
                        time.sleep(self.every)
                except psycopg2.Error as e:
                    if not connection_lost(self.conn, e):
                        self.ctx.violations.unexpected_error("relay read")
                    close_quietly(self.conn)
                    self.conn = None
        except Stopped:
            pass
        finally:
            close_quietly(self.conn)
            self.conn = None
            self.done.set()

    def drain(self):
        """Reads until the outbox has nothing more for the relay (after the run)."""
        give_up = time.monotonic() + 60
        try:
            while self.read_once(give_up) == self.batch:
                pass
        finally:
            close_quietly(self.conn)
            self.conn = None
