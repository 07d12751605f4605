"""Faults on purpose, from outside the workers: the `Killer` that terminates worker
backends (pg_terminate_backend) when a worker's fault asks for it, the `Crasher` that
stops the server with `pg_ctl -m immediate` and restarts it, and the deliberately
broken variants (`BROKEN`, with what the checker must report for each in `EXPECTED`)
that prove the checker can fail. The faults a worker plays on itself (dying between
claim and finalize, pausing past its lease, a slow send) are in tests/soak/workers.py;
the failover itself is driven by the soak's main (tests/soak/soak.py).
"""

import os
import threading
import time

import psycopg2

from .records import stable_rng
from .workers import close_quietly, connect


# ----------------------------------------------------------------------------------
# terminating a worker's backend
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
# server crashes
# ----------------------------------------------------------------------------------


class Crasher(threading.Thread):
    """Stops the server with `pg_ctl -m immediate` every ~crash_every seconds, restarts it."""

    def __init__(self, ctx, cluster, cluster_lock):
        super().__init__(name="crasher", daemon=True)
        self.ctx = ctx
        self.cluster = cluster
        self.lock = cluster_lock
        self.rng = stable_rng(ctx.args.seed, "crasher")
        self.halt = threading.Event()
        self.downtime = 0.0
        self.error = None

    def run(self):
        a = self.ctx.args
        try:
            while not self.halt.wait(self.rng.uniform(0.6, 1.4) * a.crash_every):
                if self.halt.is_set() or not self.ctx.chaos.is_set():
                    break
                with self.lock:
                    t0 = time.monotonic()
                    self.cluster.stop("immediate")
                    self.ctx.record.count("fault_server_crash")
                    time.sleep(self.rng.uniform(0.2, 2.0))
                    self.cluster.start()
                    self.downtime += time.monotonic() - t0
        except Exception as e:  # the server did not come back: the run cannot go on
            self.error = e
            self.ctx.violations.unexpected_error("crasher")


# ----------------------------------------------------------------------------------
# deliberately broken variants (they prove that the checker can fail)
# ----------------------------------------------------------------------------------
# Each one leaves the extension alone: it puts a PL/pgSQL function with the same name and
# argument types in schema soak_broken, first in the workers' search_path (the checker
# does not use it), or does something to the database mid-run. BROKEN_CLAIM never gives
# a job up (0.1.0 had no give-up), so the claim variants about something else run without
# poison jobs (`no_poison`), which they would hand out forever.

BROKEN_FINALIZE = """
CREATE SCHEMA soak_broken;
CREATE FUNCTION soak_broken.sendjobs_finalize(p_id bigint, p_gen bigint, p_outcome text,
        p_error text DEFAULT NULL, p_retry_at timestamptz DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    j public.send_jobs;
    st text;
    t timestamptz := clock_timestamp();  -- finished_at and the event's created_at, as 0.2.0 has them
BEGIN
    SELECT * INTO j FROM public.send_jobs
     WHERE id = p_id AND status = 'in_flight' {generation_fence} FOR UPDATE;
    IF NOT FOUND THEN RETURN 'stale'; END IF;
    st := CASE WHEN p_outcome <> 'retry' THEN p_outcome
               WHEN j.attempts < j.max_attempts THEN 'pending' ELSE 'failed' END;
    IF st = 'pending' THEN
        UPDATE public.send_jobs
           SET status = st, next_attempt_at = coalesce(p_retry_at, clock_timestamp() + interval '200 ms'),
               lease_expires_at = NULL, last_error = coalesce(p_error, last_error)
         WHERE id = p_id;
    ELSE
        -- as 0.2.0 finishes a job: it moves to send_jobs_finished
        DELETE FROM ONLY public.send_jobs WHERE id = p_id;
        j.status := st;
        j.finished_at := t;
        j.lease_expires_at := NULL;
        j.last_error := coalesce(p_error, j.last_error);
        INSERT INTO public.send_jobs_finished SELECT (j).*;
    END IF;
    IF st IN ('sent', 'failed') {stamp_condition} THEN
        UPDATE public.transactions SET status = CASE st WHEN 'sent' THEN 'success' ELSE 'failed' END
         WHERE id = j.transaction_id;
    END IF;
    RETURN 'applied';
END $$;
"""

BROKEN_CLAIM = """
CREATE SCHEMA soak_broken;
CREATE FUNCTION soak_broken.sendjobs_claim(p_batch int DEFAULT 1, p_lease interval DEFAULT NULL,
        p_queue text DEFAULT NULL) RETURNS SETOF public.send_jobs
LANGUAGE plpgsql AS $$
DECLARE
    t timestamptz := clock_timestamp();
    l interval := coalesce(p_lease, interval '90 s');
BEGIN
    RETURN QUERY
    WITH picked AS MATERIALIZED (
        SELECT id FROM public.send_jobs
         WHERE (p_queue IS NULL OR queue = p_queue)
           AND ((status = 'pending' AND {due})
                OR (status = 'in_flight' AND {expired}))
         ORDER BY next_attempt_at, id
         LIMIT p_batch
         FOR UPDATE SKIP LOCKED)
    UPDATE public.send_jobs AS j
       SET status = 'in_flight', attempts = j.attempts + 1, claimed_at = t, lease_expires_at = t + l,
           claim_generation = {generation}
      FROM picked WHERE j.id = picked.id
    RETURNING j.*;
END $$;
"""

BROKEN_HEARTBEAT = """
CREATE SCHEMA soak_broken;
CREATE FUNCTION soak_broken.sendjobs_heartbeat(p_id bigint, p_gen bigint, p_lease interval DEFAULT NULL)
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    -- the bug: any in_flight row, whoever holds it now
    UPDATE public.send_jobs SET lease_expires_at = clock_timestamp() + coalesce(p_lease, interval '90 s')
     WHERE id = p_id AND status = 'in_flight';
    RETURN CASE WHEN FOUND THEN 'applied' ELSE 'stale' END;
END $$;
"""

BROKEN_SPURIOUS_STALE = """
CREATE SCHEMA soak_broken;
CREATE FUNCTION soak_broken.sendjobs_finalize(p_id bigint, p_gen bigint, p_outcome text,
        p_error text DEFAULT NULL, p_retry_at timestamptz DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF random() < 0.1 THEN RETURN 'stale'; END IF;  -- the bug: refuses the current claim
    RETURN public.sendjobs_finalize(p_id, p_gen, p_outcome, p_error, p_retry_at);
END $$;
"""

BROKEN = {
    "finalize-ignores-generation": dict(
        doc="sendjobs_finalize that applies to any in_flight row, whatever the generation",
        sql=BROKEN_FINALIZE.format(generation_fence="", stamp_condition=""),
    ),
    "finalize-no-stamp-at-max-attempts": dict(
        doc="sendjobs_finalize (fenced) that forgets the business row's stamp when a retry hits max_attempts",
        sql=BROKEN_FINALIZE.format(
            generation_fence="AND claim_generation = p_gen", stamp_condition="AND p_outcome <> 'retry'"
        ),
    ),
    "claim-wrong-clock": dict(
        doc="sendjobs_claim that judges a stuck job by its scheduled time (docs/contract.md, bug 1)",
        sql=BROKEN_CLAIM.format(
            due="next_attempt_at <= t", expired="next_attempt_at + l <= t", generation="j.claim_generation + 1"
        ),
        no_poison=True,
    ),
    "claim-ignores-schedule": dict(
        doc="sendjobs_claim that takes pending jobs before their next_attempt_at",
        sql=BROKEN_CLAIM.format(due="true", expired="lease_expires_at <= t", generation="j.claim_generation + 1"),
        no_poison=True,
    ),
    "claim-reuses-generation": dict(
        doc="sendjobs_claim that does not increment claim_generation when it takes an expired lease",
        sql=BROKEN_CLAIM.format(
            due="next_attempt_at <= t",
            expired="lease_expires_at <= t",
            generation="CASE WHEN j.status = 'pending' THEN j.claim_generation + 1 ELSE j.claim_generation END",
        ),
        no_poison=True,
    ),
    "claim-never-gives-up": dict(
        doc="sendjobs_claim that hands an expired lease out again whatever the attempts (0.1.0's claim):"
        " poison jobs are sent forever",
        sql=BROKEN_CLAIM.format(
            due="next_attempt_at <= t", expired="lease_expires_at <= t", generation="j.claim_generation + 1"
        ),
    ),
    "finalize-spurious-stale": dict(
        doc="sendjobs_finalize that now and then answers 'stale' to the current claim (a fence too strict)",
        sql=BROKEN_SPURIOUS_STALE,
    ),
    "heartbeat-ignores-generation": dict(
        doc="sendjobs_heartbeat that extends any in_flight row, whoever holds it", sql=BROKEN_HEARTBEAT
    ),
    "drop-guard": dict(
        doc="DROP TRIGGER zz_sendjobs_guard_terminal on the business table mid-run",
        midrun="DROP TRIGGER zz_sendjobs_guard_terminal ON public.transactions",
    ),
    "delete-jobs": dict(
        doc="a rogue session deletes a few pending jobs mid-run",
        midrun="DELETE FROM public.send_jobs WHERE id IN"
        " (SELECT id FROM public.send_jobs WHERE status = 'pending' ORDER BY id LIMIT 3)",
    ),
    "async-standby": dict(
        doc="--failover with an asynchronous standby that is cut off mid-run: acknowledged commits are lost",
        failover_only=True,
    ),
}

# What the checker must report for each variant (at least one of these checks);
# --prove-checker runs every variant and fails if one of them goes unnoticed.
EXPECTED = {
    "finalize-ignores-generation": ["finalize applied with an old generation"],
    "finalize-no-stamp-at-max-attempts": ["business row does not match its job"],
    "claim-wrong-clock": ["two claims with overlapping unexpired leases"],
    "claim-ignores-schedule": ["claimed before it was due"],
    "finalize-spurious-stale": ["finalize refused while holding the job"],
    "claim-reuses-generation": ["claim generations not raised once per claim"],
    "claim-never-gives-up": [
        "claimed more than max_attempts times",
        "partner got more sends of a job than its max_attempts",
    ],
    "heartbeat-ignores-generation": ["heartbeat applied with an old generation"],
    "drop-guard": ["history shows a move between success and failed"],
    "delete-jobs": ["job lost"],
    "async-standby": ["a finalize that returned applied is lost"],
}


# ----------------------------------------------------------------------------------
# what the broken variants do mid-run
# ----------------------------------------------------------------------------------


def detach_standby(standby):
    """Cuts the standby off its primary (async-standby variant): an empty primary_conninfo
    stops the WAL receiver at the next reload; the asynchronous primary goes on committing."""
    auto = os.path.join(standby.data, "postgresql.auto.conf")
    with open(auto, "a") as f:
        f.write("\nprimary_conninfo = ''\n")
    standby.reload()


def run_sql_retrying(ctx, sql):
    """Runs a mid-run variant's SQL from a rogue session; False when it could not (the
    server was down): the soak's main tries again on its next round."""
    try:
        conn = connect(ctx.target, "soak rogue", timeout=2)
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
        finally:
            conn.close()
        return True
    except psycopg2.Error:
        return False
