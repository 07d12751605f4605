"""The three workers' programs through failovers of a Patroni cluster (issue 42).

A three-node Patroni cluster (tests/failover/patroni.py). Each worker (Python, Node.js,
Rust: the programs tests/workers/check.py installs) gets the cluster as users write it,
one URL over every node (postgresql://postgres@h:p1,h:p2,h:p3/db), its own queue with
wake-ups on, and a 30 s poll, so that a job sent within seconds of its enqueue was woken
for, not polled for. A producer enqueues a job into each queue every 0.2 s. Patroni then
switches over, and the primary's postmaster is killed (SIGKILL).

For each worker and failover: the time from Patroni's promotion until a connection of
the worker shows on the new primary (it found it), to its first claim there and to that
job's finish (the producer's jobs and the finishes commit only once Patroni has a
synchronous standby again), and the longest wait from enqueue to finish of the jobs
enqueued from 5 s after the promotion on (its wake-ups came back without a restart), on
the database's clock and the test's, which are one here. Every job whose enqueue was
acknowledged is sent; every worker exits 0 on SIGTERM.
"""

import os
import signal
import subprocess
import sys
import threading
import time

import psycopg2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "failover"))
from patroni import PatroniCluster  # noqa: E402  (tests/failover/patroni.py)

POLL_SECONDS = 30
SETTLED = 5.0  # seconds after a promotion from which every job must be woken for
REACHED_WITHIN = 10.0  # the bound asserted on finding the new primary (the target is 2 s)
WOKEN_WITHIN = 10.0  # a third of the poll: only a wake-up sends a job that soon


class Producer(threading.Thread):
    """A job into each queue every 0.2 s through the multi-host string; an enqueue whose
    answer did not come back is not counted (it may or may not have committed)."""

    def __init__(self, dsn, queues):
        super().__init__(daemon=True)
        self.dsn, self.queues = dsn, queues
        self.enqueued = {}  # job id -> (queue, time.time() when its commit was acknowledged)
        self.halt = threading.Event()

    def run(self):
        conn = None
        while not self.halt.is_set():
            try:
                if conn is None:
                    conn = psycopg2.connect(self.dsn, connect_timeout=2)
                    conn.autocommit = True
                with conn.cursor() as cur:
                    for queue in self.queues:
                        cur.execute("SELECT sendjobs_enqueue('{}', %s)", (queue,))
                        self.enqueued[cur.fetchone()[0]] = (queue, time.time())
            except psycopg2.Error:
                conn = None
            self.halt.wait(0.2)


def connected_to(pc, node, commands, promoted):
    """{worker: seconds from the promotion until a connection of it shows on `node`} (its
    first claim there also waits for the producer's jobs, whose commits wait for a
    synchronous standby); a worker not seen within REACHED_WITHIN is given that bound and
    a little more, and fails the assertion."""
    seen = {}
    deadline = time.monotonic() + REACHED_WITHIN
    while len(seen) < len(commands) and time.monotonic() < deadline:
        try:
            rows = pc.sql(node, "SELECT application_name FROM pg_stat_activity", dbname="postgres", timeout=1)
        except psycopg2.Error:
            rows = []
        for (name,) in rows:
            if name.startswith("patroni-") and name[len("patroni-") :] in commands:
                seen.setdefault(name[len("patroni-") :], time.time() - promoted)
        time.sleep(0.05)
    return {w: seen.get(w, REACHED_WITHIN + 1) for w in commands}


def under_patroni(commands, partner):
    """`commands`: {worker name: its program}."""
    with PatroniCluster(dbname="workers") as pc:
        url = "postgresql://postgres@" + ",".join(f"127.0.0.1:{n.port}" for n in pc.nodes) + "/workers"
        queues = {w: f"patroni_{w}" for w in commands}
        for queue in queues.values():
            pc.sql(pc.leader(), f"SELECT sendjobs_notify('{queue}', true)")
        processes = {
            w: subprocess.Popen(
                cmd,
                env=dict(
                    os.environ,
                    DATABASE_URL=url,
                    PARTNER_URL=partner.url,
                    QUEUE=queues[w],
                    POLL_SECONDS=str(POLL_SECONDS),
                    LISTEN="1",
                    LEASE_SECONDS="5",
                    CONNECT_TIMEOUT_SECONDS="2",
                    WORKER_NAME=f"patroni-{w}",
                ),
                stdout=subprocess.PIPE,
                text=True,
            )
            for w, cmd in commands.items()
        }
        producer = Producer(pc.dsn(), list(queues.values()))
        try:
            producer.start()

            def finished():
                """{job id: (queue, finished_at as epoch seconds)} of the jobs sent so far
                (the Rust example finalizes without a partner, so the database says it)."""
                rows = pc.sql(
                    pc.leader(),
                    "SELECT id, queue, extract(epoch FROM finished_at)::float8,"
                    " extract(epoch FROM claimed_at)::float8 FROM send_jobs_finished WHERE status = 'sent'",
                )
                return {j: (q, t, c) for j, q, t, c in rows}

            def sends(sent):
                """{worker: how many of its jobs are in `sent`}."""
                return {w: sum(q == queues[w] for q, _, _ in sent.values()) for w in commands}

            deadline = time.monotonic() + 60
            while not all(sends(finished()).values()):
                if time.monotonic() > deadline:
                    for process in processes.values():
                        process.terminate()
                    said = {w: p.communicate(timeout=20)[0].strip()[-300:] for w, p in processes.items()}
                    raise AssertionError(
                        f"a worker sent nothing before the failovers: {len(producer.enqueued)} enqueued, "
                        f"sends {sends(finished())}, the workers said {said}"
                    )
                time.sleep(0.1)
            failovers = []
            for kind, fault in (("switchover", pc.switchover), ("kill", pc.kill_leader)):
                r = fault()
                failovers.append((kind, r["promoted"], connected_to(pc, r["new"], commands, r["promoted"])))
                pc.wait_healthy(timeout=120)
                time.sleep(SETTLED + 3)  # jobs enqueued after the worker settled, to be woken for
            producer.halt.set()
            producer.join(10)
            deadline = time.monotonic() + 60
            while True:
                sent = finished()
                missing = [j for j in producer.enqueued if j not in sent]
                if not missing:
                    break
                assert time.monotonic() < deadline, f"{len(missing)} acknowledged jobs never sent: {missing[:10]}"
                time.sleep(0.2)
            for w, process in processes.items():
                process.send_signal(signal.SIGTERM)
                process.communicate(timeout=20)
                assert process.returncode == 0, f"the {w} worker exited with {process.returncode}"
        finally:
            producer.halt.set()
            for process in processes.values():
                if process.poll() is None:
                    process.kill()
                    process.wait()

    for kind, promoted, connected in failovers:
        for w in commands:
            reached = min(c for q, _, c in sent.values() if q == queues[w] and c >= promoted) - promoted
            done = min(t for q, t, _ in sent.values() if q == queues[w] and t >= promoted) - promoted
            waits = [
                sent[j][1] - t
                for j, (queue, t) in producer.enqueued.items()
                if queue == queues[w] and promoted + SETTLED <= t
            ]
            line = (
                f"   {w} under Patroni, {kind}: connected to the new primary {connected[w]:.2f} s after the promotion;"
                f" its first claim after {reached:.2f} s, finished after {done:.2f} s; "
                f"those enqueued {SETTLED:.0f} s after it, within {max(waits):.2f} s of their enqueue "
                f"({len(waits)} jobs, poll {POLL_SECONDS} s)"
            )
            print(line, flush=True)
            assert connected[w] <= REACHED_WITHIN, f"{w} found the new primary {connected[w]:.1f} s after the {kind}"
            assert max(waits) <= WOKEN_WITHIN, f"{w}'s wake-ups did not come back after the {kind}: {max(waits):.1f} s"
