"""The worker: claims jobs in batches, runs your async handler on each in a task of its own
under a timeout, heartbeats every half lease until the job is finalized (and cancels the
handler if the job is lost), finalizes each job as soon as its handler returns (results
that end within a few milliseconds of each other in one call), wakes on
NOTIFY sendjobs_wakeup, reconnects after a lost connection, and on stop() (or SIGTERM or
SIGINT) stops claiming, lets the running handlers finish, finalizes them and returns its
counters. If the database is away at the stop, or stops answering, no call outlives a
lease since the stop: a finalize is then given up (its job comes back after its lease).

What psycopg 3 is told here, and why (docs/workers/psycopg.md):
  * the lease is a datetime.timedelta, which psycopg sends as an interval (a bare int
    would go as a smallint, and sendjobs_claim(smallint, smallint, unknown) does not exist);
  * prepare_threshold=None: no named prepared statements, which PgBouncer 1.18 in
    transaction mode breaks;
  * autocommit: each call is its own transaction, as the functions expect, and no
    transaction stays open across a send;
  * nothing is SET on the connection (a SET leaks to the next client of a pooled
    connection): the lease goes with every call;
  * target_session_attrs=read-write, TCP keepalives and tcp_user_timeout, unless the
    connection string sets them (CONNECTION_DEFAULTS): after a failover a host list
    leads to the writable primary, and a peer that vanished is noticed by the kernel.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import signal
import socket
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, NamedTuple, Optional

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

log = logging.getLogger("sendjobs")

# Given to every connection unless its connection string sets them: libpq tries the hosts
# of a list in turn until one takes writes (after a failover, the new primary; a demoted
# one or a standby is passed over), and the kernel gives up a peer that stopped
# answering: keepalives after 5 s idle, every 2 s, 3 unanswered; data unacknowledged
# for 10 s (libpq 12 or later).
CONNECTION_DEFAULTS = {
    "target_session_attrs": "read-write",
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 10000,
}


@dataclass(frozen=True)
class Job:
    """A claimed job, as the handler gets it."""

    id: int
    generation: int  # the claim's fencing token (claim_generation)
    transaction_id: Optional[str]
    idempotency_key: Optional[str]
    payload: Any  # the job's jsonb, decoded


class Outcome(NamedTuple):
    """What a handler returns: sent, failed (for good) or retry, with the error."""

    kind: str
    error: Optional[str] = None


SENT = Outcome("sent")


def failed(error: str) -> Outcome:
    """Refused for good: the job fails now."""
    return Outcome("failed", error)


def retry(error: str) -> Outcome:
    """Try again after the server's backoff (failed once its attempts are used up)."""
    return Outcome("retry", error)


Handler = Callable[[Job], Awaitable["Outcome | tuple[str, Optional[str]]"]]


class Worker:
    """A worker of one queue (or of every queue, in turn, with queue=None). `handler` is an
    async function of a Job that returns an Outcome; one that raises is retried."""

    def __init__(
        self,
        dsn: str,
        handler: Handler,
        *,
        queue: Optional[str] = None,
        batch: int = 10,
        lease: datetime.timedelta = datetime.timedelta(seconds=30),
        send_timeout: float = 60.0,
        poll: float = 5.0,
        listen: bool = True,
        schema: str = "public",
        name: str = "sendjobs-worker-py",
        connect_timeout: int = 10,
        finish_window: float = 0.005,
        listen_check: float = 2.0,
        listen_check_timeout: float = 3.0,
    ):
        if not isinstance(lease, datetime.timedelta):
            raise TypeError("lease must be a datetime.timedelta, not %r" % type(lease).__name__)
        self.dsn, self.send, self.queue, self.batch = dsn, handler, queue, batch
        self.lease, self.poll, self.listen, self.name = lease, poll, listen, name
        self.claimed_empty = False  # the last claim, made again at once, took nothing
        self.send_timeout, self.connect_timeout = send_timeout, connect_timeout
        # The wake-up connection is asked a trivial query this often (0: never), and given
        # up when it does not answer within the timeout (a socket that hangs, not closes).
        self.listen_check, self.listen_check_timeout = listen_check, listen_check_timeout
        # Results that end within this of the first waiting one are finalized in one call
        # (at most a batch, and never longer than a tenth of the lease).
        self.finish_window = min(finish_window, lease.total_seconds() / 10)
        self.finishing: list[tuple[Job, str, Optional[str], asyncio.Future[None]]] = []
        self.finishing_full = asyncio.Event()  # a batch waits, or no handler runs: no need to wait
        self.running = 0  # jobs claimed whose result is not known yet
        self.completer: Optional[asyncio.Task[None]] = None
        fn = lambda f: sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(f))  # noqa: E731
        self.sql_claim = sql.SQL(
            "SELECT id, claim_generation, transaction_id, idempotency_key, payload FROM {}(%s, %s, %s)"
        ).format(fn("sendjobs_claim"))
        self.sql_heartbeat = sql.SQL("SELECT {}(%s, %s, %s)").format(fn("sendjobs_heartbeat"))
        # After a short claim of its queue: limited (and until when) or empty.
        self.sql_limits = sql.SQL("SELECT limited, extract(epoch FROM retry_after) FROM {}(%s)").format(
            fn("sendjobs_queue_limits")
        )
        # Results of one outcome (and error) together, answered in their order, each with
        # its job's status: a retry on the last attempt is applied and fails the job, and
        # counts as failed (docs/reference.md).
        self.sql_finalize = sql.SQL("SELECT result, status FROM {}(%s::int8[], %s::int8[], %s, %s)").format(
            fn("sendjobs_finalize_batch")
        )
        self.conn = None
        self.connecting = asyncio.Lock()
        self.stopping = asyncio.Event()
        self.stopped_at = None  # the loop's time of the signal
        self.wakeup = asyncio.Event()
        self.counters = dict.fromkeys(
            [
                "claimed",
                "sent",
                "failed",
                "retried",
                "stale",
                "heartbeats",
                "wakeups",
                "limited",
                "reconnects",
                "errors",
            ],
            0,
        )

    # -- the connection ---------------------------------------------------------------

    async def connect(self):
        given = conninfo_to_dict(self.dsn)
        conn = await psycopg.AsyncConnection.connect(
            self.dsn,
            autocommit=True,
            prepare_threshold=None,
            application_name=self.name,
            connect_timeout=self.connect_timeout,
            **{k: v for k, v in CONNECTION_DEFAULTS.items() if k not in given},
        )
        # The server's WARNINGs (the terminal guard refusing a stamp) would go unseen.
        conn.add_notice_handler(lambda d: log.warning("server %s: %s", d.severity, d.message_primary))
        return conn

    async def call(self, query, params, *, claim=False):
        """Runs one statement; after a lost connection, again on a new one. Every call but
        the claim is fenced by id and generation, so making it twice changes nothing the
        first did not; a claim whose answer was lost leaves its jobs to their lease (an
        attempt each). Once the worker is stopping, a claim is not made again, and no call
        outlives a lease since the signal: its job's lease has expired by then anyway,
        and a database that is away, or stops answering, must not keep the worker."""
        delay = 0.1
        loop = asyncio.get_running_loop()
        while True:
            conn = self.conn
            try:
                if conn is None:
                    conn = await self.until_deadline(self.reconnect())
                return await self.until_deadline(self.execute(conn, query, params))
            except psycopg.Error as e:
                if not connection_lost(conn, e):
                    raise
                if conn is not None and self.conn is conn:  # not replaced by another task yet
                    self.conn = None
                    self.counters["reconnects"] += 1
                    await conn.close()
                if self.stopping.is_set() and (claim or loop.time() >= self.stop_deadline()):
                    raise
                log.warning("connection lost (%s); again in %.1f s", e, delay)
                if self.stopping.is_set():
                    await asyncio.sleep(min(delay, self.stop_deadline() - loop.time()))
                else:
                    try:  # a signal ends the wait, and a claim with it
                        await asyncio.wait_for(self.stopping.wait(), delay)
                        if claim:
                            raise e
                    except asyncio.TimeoutError:
                        pass
                delay = min(delay * 2, 5.0)

    @staticmethod
    async def execute(conn, query, params):
        async with conn.cursor() as cur:
            await cur.execute(query, params)
            return await cur.fetchall()

    def stop_deadline(self):
        """The loop's time after which a stopping worker waits for no call."""
        if self.stopped_at is None:  # stopped by setting the event, not by stop()
            self.stopped_at = asyncio.get_running_loop().time()
        return self.stopped_at + self.lease.total_seconds()

    async def until_deadline(self, coro):
        """Awaits `coro`; once the worker is stopping, only until its deadline, then gives
        it up as a lost connection (a server that stopped answering, a partition)."""
        task = asyncio.ensure_future(coro)
        if not self.stopping.is_set():
            stopped = asyncio.ensure_future(self.stopping.wait())
            await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
        if task.done():
            return task.result()
        try:
            return await asyncio.wait_for(task, max(0.0, self.stop_deadline() - asyncio.get_running_loop().time()))
        except asyncio.TimeoutError:
            raise psycopg.OperationalError("no answer within a lease of the stop: given up") from None

    async def reconnect(self):
        """One new connection, however many tasks found the old one gone."""
        async with self.connecting:
            if self.conn is None:
                self.conn = await self.connect()
            return self.conn

    async def listen_for_wakeups(self):
        """A connection of its own for LISTEN: notifications arrive on it between calls.
        Asked `SELECT 1` every listen_check seconds: one that does not answer within
        listen_check_timeout (a socket that hangs rather than closes: a partition, a
        frozen server) is hung up. Once the connection is lost the worker claims at once,
        then at its poll interval, while this one connects again."""
        while not self.stopping.is_set():
            try:
                async with await self.connect() as conn:
                    # Those that arrive while the check's answer is read.
                    conn.add_notify_handler(lambda note: self.woken(note.payload))
                    await conn.execute("LISTEN sendjobs_wakeup")
                    self.wakeup.set()  # anything enqueued while we were not listening
                    await self.wait_for_wakeups(conn)
            except psycopg.Error as e:
                log.warning("wake-up connection lost (%s); polling until it is back", e)
            self.wakeup.set()  # a wake-up may be lost: claim now, then at the poll interval
            try:
                await asyncio.wait_for(self.stopping.wait(), 1.0)
            except asyncio.TimeoutError:
                pass

    def woken(self, payload: str) -> None:
        if self.queue is None or payload == self.queue:
            self.counters["wakeups"] += 1
            self.wakeup.set()

    async def wait_for_wakeups(self, conn):
        """Reads the notifications as they arrive (libpq's own calls on the socket, not
        conn.notifies(), whose wait would have to be cancelled for each check), and checks
        the connection every listen_check seconds; returns never: an error ends it."""
        loop = asyncio.get_running_loop()
        readable = asyncio.Event()
        next_check = loop.time() + self.listen_check
        while True:
            loop.add_reader(conn.fileno(), readable.set)
            try:
                timeout = max(0.0, next_check - loop.time()) if self.listen_check > 0 else None
                await asyncio.wait_for(readable.wait(), timeout)
            except asyncio.TimeoutError:
                pass
            finally:
                loop.remove_reader(conn.fileno())
            if readable.is_set():
                readable.clear()
                conn.pgconn.consume_input()  # raises once the server has closed it
                while (note := conn.pgconn.notifies()) is not None:
                    self.woken(note.extra.decode(conn.info.encoding))
            if self.listen_check > 0 and loop.time() >= next_check:
                await self.check_listening(conn)
                next_check = loop.time() + self.listen_check

    async def check_listening(self, conn):
        """SELECT 1 within listen_check_timeout, or the connection is hung up: its socket
        shut down, so that whatever waits on it (this check) ends at once."""
        check = asyncio.ensure_future(conn.execute("SELECT 1"))
        done, _ = await asyncio.wait({check}, timeout=self.listen_check_timeout)
        if not done:
            with socket.socket(fileno=os.dup(conn.fileno())) as sock:
                sock.shutdown(socket.SHUT_RDWR)
            done, _ = await asyncio.wait({check}, timeout=1.0)
            if done:
                check.exception()  # retrieved: it is the one raised below
            else:
                check.cancel()
            raise psycopg.OperationalError(f"no answer to a check within {self.listen_check_timeout:g} s: hung up")
        check.result()

    # -- one job ----------------------------------------------------------------------

    async def run_batch(self, jobs: list[Job]) -> None:
        """The jobs of one claim: each handler in a task of its own under the send timeout,
        every half lease a heartbeat of each one still running (a stale answer cancels it
        and drops its job), and each result handed to the completer as it comes (a result
        that waited for the rest of the batch could outlive its lease)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.send_timeout
        half_lease = self.lease.total_seconds() / 2
        next_beat = started + half_lease
        sends = {asyncio.ensure_future(self.send(job)): job for job in jobs}
        pending = set(sends)
        finalized = []
        while pending:
            done, pending = await asyncio.wait(
                pending, timeout=max(0.0, min(next_beat, deadline) - loop.time()), return_when=asyncio.FIRST_COMPLETED
            )
            for send in done:
                try:
                    kind, error = send.result()
                except Exception as e:  # a send that raises is retried
                    kind, error = "retry", f"send raised {e!r}"
                finalized.append(self.hand_over(sends[send], kind, error))
            if not pending or loop.time() < min(next_beat, deadline):
                continue
            if loop.time() >= deadline:
                for send in pending:
                    send.cancel()
                    finalized.append(
                        self.hand_over(sends[send], "retry", f"send timed out after {self.send_timeout:g} s")
                    )
                break
            next_beat += half_lease
            for send in list(pending):
                job = sends[send]
                try:
                    [(answer,)] = await self.call(self.sql_heartbeat, (job.id, job.generation, self.lease))
                except psycopg.Error as e:  # not a lost connection: try again at the next beat
                    log.warning("heartbeat of job %s failed: %s", job.id, e)
                    self.counters["errors"] += 1
                    continue
                if answer == "stale" and not send.done():  # lease expired, another worker holds it; or cancelled
                    send.cancel()
                    pending.discard(send)
                    self.counters["stale"] += 1
                    self.job_left()
                elif answer != "stale":
                    self.counters["heartbeats"] += 1
        await asyncio.gather(*finalized)

    # -- finishing: results that end close together go in one call ---------------------

    def hand_over(self, job: Job, kind: str, error: Optional[str]) -> asyncio.Future[None]:
        """Hands a result to the completer: done once it is finalized (or given up)."""
        done = asyncio.get_running_loop().create_future()
        self.finishing.append((job, kind, error, done))
        self.job_left()
        if self.completer is None or self.completer.done():
            self.completer = asyncio.create_task(self.complete())
        return done

    def job_left(self) -> None:
        """A job of the batch has its result (or was dropped): what waits is finalized at once
        when a batch waits or no job still runs."""
        self.running -= 1
        if self.finishing and (len(self.finishing) >= self.batch or self.running == 0):
            self.finishing_full.set()

    async def complete(self) -> None:
        """Finalizes what is waiting, one call per outcome, once the window since the first
        result has passed, a batch waits or no handler runs (no result can come sooner than
        the next claim, which waits for these); again while results came in meanwhile."""
        while self.finishing:
            if len(self.finishing) < self.batch and self.running > 0:
                try:
                    await asyncio.wait_for(self.finishing_full.wait(), self.finish_window)
                except asyncio.TimeoutError:
                    pass
            self.finishing_full.clear()
            waiting, self.finishing = self.finishing[: self.batch], self.finishing[self.batch :]
            if len(self.finishing) >= self.batch:
                self.finishing_full.set()
            groups: dict[tuple[str, Optional[str]], list[Any]] = {}
            for item in waiting:
                groups.setdefault((item[1], item[2]), []).append(item)
            for (kind, error), items in groups.items():
                await self.finalize_together(kind, error, items)

    async def finalize_together(self, kind: str, error: Optional[str], items: list[Any]) -> None:
        try:
            rows = await self.call(
                self.sql_finalize, ([job.id for job, *_ in items], [job.generation for job, *_ in items], kind, error)
            )
        except psycopg.Error as e:
            if len(items) > 1:  # one job's refusal must not hold the others: one by one
                log.warning("finalize of %d jobs failed, one by one now: %s", len(items), e)
                for item in items:
                    await self.finalize_together(kind, error, [item])
                return
            # The guard refusing the stamp (23514 in error mode), a conflict: the job stays
            # in flight and comes back after its lease (it gives up after its attempts).
            log.warning("finalize of job %s failed: %s", items[0][0].id, e)
            self.counters["errors"] += 1
            items[0][3].set_result(None)
            return
        for (_job, _, _, done), (answer, status) in zip(items, rows):
            # Applied (a repeat of a call whose answer was lost too): what the job became.
            key = {"sent": "sent", "failed": "failed", "pending": "retried"}[status] if answer == "applied" else "stale"
            self.counters[key] += 1
            done.set_result(None)

    # -- the loop ---------------------------------------------------------------------

    def stop(self) -> None:
        """No more claims: the running handlers finish and are finalized, then run() returns."""
        if not self.stopping.is_set():
            self.stopped_at = asyncio.get_running_loop().time()
            self.stopping.set()

    async def run(self, handle_signals: bool = True) -> dict[str, int]:
        """Runs until stop() (or, with handle_signals, SIGTERM or SIGINT); returns the
        counters: claimed, sent, failed, retried, stale, heartbeats, wakeups, limited,
        reconnects, errors."""
        loop = asyncio.get_running_loop()
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
        self.conn = await self.connect()  # the first connection fails fast (a wrong password)
        listener = asyncio.create_task(self.listen_for_wakeups()) if self.listen else None
        while not self.stopping.is_set():
            self.wakeup.clear()
            try:
                rows = await self.call(self.sql_claim, (self.batch, self.lease, self.queue), claim=True)
            except psycopg.Error as e:
                if self.stopping.is_set():  # first: a refused reconnect must not fail a clean stop
                    break
                if is_permanent(e):  # a bad argument, a missing grant: waiting will not mend it
                    raise
                log.warning("claim failed (%s); again in %g s", e, self.poll)
                self.counters["errors"] += 1
                rows = []
            jobs = [Job(*row) for row in rows]
            self.counters["claimed"] += len(jobs)
            self.running += len(jobs)
            if jobs:
                self.claimed_empty = False
            # A signal now stops the claims, not these sends: they finish, and are finalized.
            await self.run_batch(jobs)
            if len(jobs) < self.batch:
                waits = [asyncio.create_task(e.wait()) for e in (self.wakeup, self.stopping)]
                await asyncio.wait(waits, timeout=await self.idle_wait(len(jobs)), return_when=asyncio.FIRST_COMPLETED)
                for w in waits:
                    w.cancel()
        if listener:
            listener.cancel()
        if self.conn is not None:
            await self.conn.close()
        return self.counters

    async def idle_wait(self, got):
        """How long to wait after a claim of `got` jobs, short of the batch (a wake-up ends
        it sooner): the poll interval, or less when the queue's rate limits it and its next
        token comes sooner (sendjobs_queue_limits' retry_after). A pause or a reached cap
        waits for the poll or a wake-up (a resume sends one). A queue with flow control
        that no longer limits is claimed again at once if the claim took jobs (a token came
        since: a rate-limited queue is claimed at its rate, however slow the round trip);
        a claim that took none waits, so an empty queue is not claimed in a loop."""
        if self.queue is None:
            return self.poll
        try:
            rows = await self.call(self.sql_limits, (self.queue,), claim=True)  # given up at a stop
        except psycopg.Error as e:  # not a lost connection: the poll interval, as before
            log.warning("queue limits of %s unknown (%s)", self.queue, e)
            return self.poll
        if not rows:  # no flow control: the queue is empty
            return self.poll
        limited, retry_after = rows[0]
        if limited is None:
            # Empty, or a token came back since the claim. A claim that took jobs is made
            # again; one that took none is made again once (the token may have come back
            # after it found none), and the queue is empty if that one takes none either.
            claim_again = got > 0 or not self.claimed_empty
            self.claimed_empty = claim_again and got == 0
            return 0 if claim_again else self.poll
        self.claimed_empty = False
        self.counters["limited"] += 1
        return self.poll if retry_after is None else min(self.poll, max(0.005, float(retry_after)))


def connection_lost(conn, e):
    """The connection is gone (closed, or the server ended the session), or its server no
    longer takes writes (25006): make the call again on a new one. Any other error (a
    timeout, a conflict, bad input) is the caller's."""
    state = e.sqlstate or ""
    return (
        conn is None
        or conn.closed
        or isinstance(e, psycopg.OperationalError)
        and not state
        or state.startswith("08")
        or state in ("57P01", "57P02", "57P03")
        # A demoted primary, or a standby, after a failover: a new connection finds the
        # writable one (target_session_attrs=read-write).
        or state == "25006"
    )


def is_permanent(e):
    """Bad input (22), authorization (28), names and grants (42): the same call will fail
    again. Not 42804: a claim parsed before ALTER EXTENSION ... UPDATE fails with it once."""
    state = e.sqlstate or ""
    return state[:2] in ("22", "28", "42") and state != "42804"
