"""The example workers of workers/ (Python, TypeScript/Node) against the real extension,
once directly and once through PgBouncer in transaction mode.

Runs inside a throwaway cluster (scripts/test.sh: `tests/cluster.py run -- python3
tests/workers/check.py`). For each worker and each route, in a database of its own:

  * 300 jobs, each with a business transaction id, to the stand-in partner of the soak
    (tests/soak/partner.py: some transactions are refused for good, some fail a few
    times, some always), max_attempts 3 and a short retry backoff;
  * worker B (batch 1) takes the first job, whose send the partner holds for a second,
    and is stopped (SIGSTOP) while it sends: no heartbeat, its lease of 2 s expires;
  * worker A (batch 10) takes the rest, and B's job after its lease; while A sends a
    job the partner holds for 1.5 s, A's connection is killed (pg_terminate_backend
    directly; through the pooler, its admin console's KILL, then RESUME);
  * B is resumed once A has finished its job: B's late result must be refused (stale);
  * once every job is finished, both get SIGTERM and must exit 0 within 10 s;
  * directly, a worker idle with a one-minute poll must send a job enqueued into a
    queue with wake-ups on within 2 s (the NOTIFY, not the poll); and a worker of a queue
    limited to 20 claims a second must send 30 jobs within 15 s, with its poll at 30 s
    (it waits for the next token, not the poll), no second holding more than 21 claims;
    and one whose tokens come back before the worker asks the limits must send 40 jobs
    within 15 s (it claims again while its claims take jobs);
  * through the pooler, two workers (one sending, one idle) get SIGTERM while the pooler
    refuses their database: both must exit 0 within a lease and a few seconds; and the
    same through a proxy that stops forwarding (a server that no longer answers);
  * for each worker, the Rust crate's too (its examples/env_worker.rs), failovers:
    the wake-up connection's socket hung by a proxy (with a 30 s poll, a job enqueued then
    is sent, and wake-ups come again on a new connection, within 10 s); and a connection
    string whose first host is a standby of the cluster (pg_basebackup), the primary
    second: the worker's job is sent, through the primary; and a primary that turns
    read-only under the worker (its claims answer 25006) while a second cluster listed
    after it takes writes: the job enqueued there is sent.

Then, through the pooler, the Rust crate's tests that need neither LISTEN nor a worker
session of their own (workers/rust/tests/live.rs); and the crate's TLS test, with TLS
turned on in the cluster for it.

Asserted: every job finished (sent or failed) with exactly one event of its kind, and
counted once by the workers as what it became;
nothing sent twice under one generation; B's job sent by B, then by A under a new
generation; B counted a stale answer; A reconnected; the send that outlived A's
connection was finalized on the new one (its job needed one attempt); the jobs of its
batch were finalized before its send ended.

    python3 tests/workers/check.py [--workers python,node,rust] [--routes direct,pgbouncer]
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from cluster import Cluster, Workdir, as_owner, free_port, make_tls_files, IS_ROOT  # noqa: E402
from soak.partner import Partner  # noqa: E402
from under_patroni import under_patroni  # noqa: E402  (tests/workers/under_patroni.py)

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORKERS = {
    # the program of the package that python_package() installs into a venv
    "python": None,
    # the bin of the package that node_package() installs into a project
    "node": None,
    # the crate's example worker configured by the environment, which rust_program() builds
    "rust": None,
}
JOBS = 300
LEASE_SECONDS = 2


class PgBouncer:
    """Debian's PgBouncer in transaction mode, in front of the cluster, on a free port."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sendjobs-pgbouncer.")
        self.port = free_port()
        ini = os.path.join(self.dir, "pgbouncer.ini")
        with open(os.path.join(self.dir, "users.txt"), "w") as f:
            f.write('"postgres" ""\n')
        with open(ini, "w") as f:
            f.write(f"""[databases]
* = host={os.environ["PGHOST"]} port={os.environ["PGPORT"]}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {self.dir}/users.txt
admin_users = postgres
pool_mode = transaction
max_client_conn = 100
default_pool_size = 10
logfile = {self.dir}/pgbouncer.log
""")
        if IS_ROOT:
            subprocess.run(["chown", "-R", "postgres:postgres", self.dir], check=True)
        self.process = subprocess.Popen(as_owner(["/usr/sbin/pgbouncer", "--quiet", ini]))
        for _ in range(100):
            if subprocess.run(["pg_isready", "-q", "-h", "127.0.0.1", "-p", str(self.port)]).returncode == 0:
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("pgbouncer did not start")

    def admin(self, command, check=True):
        return subprocess.run(
            [
                "psql",
                "-X",
                "-q",
                "-At",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                "pgbouncer",
                "-c",
                command,
            ],
            check=check,
            capture_output=True,
            text=True,
        ).stdout

    def clients(self, database):
        """How many clients the pooler has for `database` (SHOW CLIENTS: type|user|database|...)."""
        return sum(line.split("|")[2] == database for line in self.admin("SHOW CLIENTS").splitlines())

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def wait_until(conn, query, within, what):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if conn.execute(query).fetchone()[0]:
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def fresh_database(name, *settings):
    """A new database `name` with the extension, `settings` set on it (not with SET: on a
    pooled connection that would leak); a connection to it, and its direct URL (both
    libpq and node-postgres read URLs)."""
    with psycopg.connect(dbname="postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
        for setting in settings:
            admin.execute(f"ALTER DATABASE {name} SET {setting}")
    db = psycopg.connect(dbname=name, autocommit=True)
    db.execute("CREATE EXTENSION sendjobs")
    return db, f"postgresql://postgres@/{name}?host={os.environ['PGHOST']}&port={os.environ['PGPORT']}"


def scenario(worker, route, partner, bouncer):
    name = f"workers_{worker}_{route}"
    db, direct = fresh_database(name, "sendjobs.retry_backoff_base = '100ms'")
    # Job 1 (B's) and job 50 (killed mid-send) are held by the partner for a while, and
    # belong to transactions the partner accepts at once.
    txns = []
    for g in range(1, JOBS + 1):
        txn, k = f"{name}-{g}", 0
        while g in (1, 50) and partner.temperament(txn)[0] != "ok":
            k += 1
            txn = f"{name}-{g}-{k}"
        txns.append(txn)
    payloads = [json.dumps({"delay": {1: 1.0, 50: 1.5}[g]} if g in (1, 50) else {}) for g in range(1, JOBS + 1)]
    db.execute(
        """SELECT sendjobs_enqueue(p::jsonb, 'q', transaction_id => t, max_attempts => 3)
                    FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS u(p, t, n) ORDER BY n""",
        (payloads, txns),
    )
    dsn = direct if route == "direct" else f"postgresql://postgres@127.0.0.1:{bouncer.port}/{name}"

    def start(tag, batch):
        env = dict(
            os.environ,
            DATABASE_URL=dsn,
            PARTNER_URL=partner.url,
            QUEUE="q",
            BATCH=str(batch),
            LEASE_SECONDS=str(LEASE_SECONDS),
            POLL_SECONDS="0.2",
            LISTEN="1" if route == "direct" else "0",
            WORKER_NAME=f"{name}-{tag}",
        )
        return subprocess.Popen(WORKERS[worker], env=env, stdout=subprocess.PIPE, text=True)

    b = start("b", 1)
    a = None
    try:
        wait_until(db, "SELECT count(*) = 1 FROM send_jobs WHERE id = 1 AND status = 'in_flight'", 15, "B's claim")
        time.sleep(0.3)  # B is inside its send now (the partner holds it for 1 s)
        b.send_signal(signal.SIGSTOP)
        a = start("a", 10)
        check_run(db, name, route, bouncer, partner, a, b)
    finally:
        # Pass or fail, no worker outlives its scenario (one left reconnecting would
        # keep the test's output pipe open for ever).
        for process in (a, b):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
                process.wait()
        db.close()


def check_run(db, name, route, bouncer, partner, a, b):
    try:
        wait_until(db, "SELECT status = 'in_flight' FROM send_jobs WHERE id = 50", 30, "A sending job 50")
        time.sleep(0.3)
        if route == "direct":
            killed = db.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
                (f"{name}-a",),
            ).fetchone()[0]
            assert killed >= 1, "A's connection was not found"
        else:
            bouncer.admin(f"KILL {name}")
            bouncer.admin(f"RESUME {name}")
        wait_until(
            db,
            "SELECT status <> 'in_flight' AND claim_generation = 2 FROM send_jobs WHERE id = 1",
            30,
            "A to finish B's job",
        )
    finally:
        b.send_signal(signal.SIGCONT)
    wait_until(db, "SELECT bool_and(status IN ('sent', 'failed')) FROM send_jobs", 90, "every job finished")
    counters = {}
    for tag, process in (("a", a), ("b", b)):
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=10)
        assert process.returncode == 0, f"worker {tag} exited with {process.returncode}"
        counters[tag] = json.loads(out.strip().splitlines()[-1])

    jobs = db.execute("""SELECT count(*), count(*) FILTER (WHERE e.kind = j.status), count(DISTINCT e.job_id),
                                count(*) FILTER (WHERE j.status = 'failed')
                           FROM send_jobs j LEFT JOIN send_job_events e ON e.job_id = j.id""").fetchone()
    assert jobs[:3] == (JOBS, JOBS, JOBS), f"jobs, events of their kind, jobs with an event: {jobs}"
    # The workers count each job once, as what its finalize made of it: a retry on the
    # last attempt is failed, not retried (the finalize's answer says so).
    counted = {k: counters["a"][k] + counters["b"][k] for k in ("sent", "failed")}
    assert counted == {"sent": JOBS - jobs[3], "failed": jobs[3]}, (
        f"the workers counted {counted}; the jobs are {JOBS - jobs[3]} sent and {jobs[3]} failed"
    )
    sends = [(r["job"], r["gen"]) for r in partner.requests if r["worker"].startswith(name)]
    twice = {s for s in sends if sends.count(s) > 1}
    assert not twice, f"sent twice under one generation: {sorted(twice)}"
    assert sorted(g for j, g in sends if j == 1)[:2] == [1, 2], "job 1: by B, then by A"
    assert counters["b"]["stale"] >= 1, f"B's late result was not refused: {counters['b']}"
    assert counters["a"]["reconnects"] >= 1, f"A did not reconnect: {counters['a']}"
    job_50 = db.execute("SELECT status, attempts FROM send_jobs WHERE id = 50").fetchone()
    assert job_50 == ("sent", 1) and [g for j, g in sends if j == 50] == [1], (
        f"job 50, cut mid-send, was not finalized on A's new connection: {job_50}"
    )
    # Each job is finalized when its send ends, not when its batch's last send does.
    early = db.execute("""SELECT count(*) FROM send_jobs j, send_jobs slow
                           WHERE slow.id = 50 AND j.id <> 50 AND j.claimed_at = slow.claimed_at
                             AND j.finished_at < slow.finished_at - interval '1 s'""").fetchone()[0]
    assert early >= 1, "no job of job 50's batch was finalized before job 50's send ended"
    print(
        f"   {name.split('_')[1]} {route}: {JOBS} jobs, {jobs[3]} failed for good, {len(sends)} sends; "
        f"A {counters['a']}; B {counters['b']}",
        flush=True,
    )


def wakeup(worker, partner):
    """Idle with a one-minute poll, a worker takes a job within 2 s of its enqueue: the
    NOTIFY woke it, not the poll (directly only: a pooler in transaction mode keeps no
    LISTEN)."""
    name = f"workers_{worker}_wakeup"
    db, dsn = fresh_database(name)
    db.execute("SELECT sendjobs_notify('q', true)")
    env = dict(
        os.environ,
        DATABASE_URL=dsn,
        PARTNER_URL=partner.url,
        QUEUE="q",
        POLL_SECONDS="60",
        LISTEN="1",
        WORKER_NAME=name,
    )
    process = subprocess.Popen(WORKERS[worker], env=env, stdout=subprocess.PIPE, text=True)
    try:
        wait_until(
            db,
            f"SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = '{name}' "
            "AND query = 'LISTEN sendjobs_wakeup'",
            15,
            "the worker's LISTEN",
        )
        time.sleep(0.5)  # its first claims found nothing: it waits out its poll
        enqueued = time.monotonic()
        db.execute("SELECT sendjobs_enqueue('{}', 'q')")
        wait_until(db, "SELECT bool_and(status = 'sent') FROM send_jobs", 2, "the woken worker's send")
        elapsed = time.monotonic() - enqueued
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=10)
        counters = json.loads(out.strip().splitlines()[-1])
        assert counters["wakeups"] >= 1, f"no wake-up counted: {counters}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        db.close()
    print(f"   {worker} wakeup: sent {elapsed:.2f} s after its enqueue; {counters}", flush=True)


def drain_limited_queue(worker, partner, kind, rate, jobs, what):
    """`jobs` jobs of a queue limited to `rate` a second in bursts of 1, drained by a worker
    asking for 5 at a time with a 30 s poll and no wake-ups, within 15 s (`what` names
    them in the failure). Returns the seconds it took, the worker's counters, and the most
    jobs claimed within one second."""
    name = f"workers_{worker}_{kind}"
    db, dsn = fresh_database(name)
    db.execute("SELECT sendjobs_limit('q', rate => %s, burst => 1)", (rate,))
    db.execute("SELECT sendjobs_enqueue('{}', 'q') FROM generate_series(1, %s)", (jobs,))
    env = dict(
        os.environ,
        DATABASE_URL=dsn,
        PARTNER_URL=partner.url,
        QUEUE="q",
        BATCH="5",
        POLL_SECONDS="30",
        LISTEN="0",
        WORKER_NAME=name,
    )
    started = time.monotonic()
    process = subprocess.Popen(WORKERS[worker], env=env, stdout=subprocess.PIPE, text=True)
    try:
        wait_until(db, "SELECT bool_and(status = 'sent') FROM send_jobs", 15, what)
        elapsed = time.monotonic() - started
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=10)
        counters = json.loads(out.strip().splitlines()[-1])
        busiest = db.execute("""SELECT max(n) FROM (SELECT count(*) OVER (ORDER BY claimed_at
                                    RANGE BETWEEN CURRENT ROW AND interval '1 second' FOLLOWING) AS n
                                  FROM send_jobs) AS w""").fetchone()[0]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        db.close()
    return elapsed, counters, busiest


def rate_limited(worker, partner):
    """A queue limited to 20 claims a second in bursts of 1: after each short claim the
    worker asks the queue's limits and waits for the next token, not the poll, so 30 jobs
    take about 1.5 s; and no second of claims holds more than the rate allows (20 + the
    burst)."""
    elapsed, counters, busiest = drain_limited_queue(
        worker, partner, "rate", 20, 30, "the rate-limited jobs (a worker that waits its poll takes minutes)"
    )
    assert counters["limited"] >= 1, f"no limited claim counted: {counters}"
    assert busiest <= 21, f"{busiest} claims within one second, over 20 a second + 1"
    print(
        f"   {worker} rate: 30 jobs in {elapsed:.2f} s at 20 a second, at most {busiest} claims "
        f"in a second; {counters}",
        flush=True,
    )


def token_back_before_limits(worker, partner):
    """A queue whose tokens come faster than any round trip (100,000 a second, bursts of
    1): a token is always back by the time the worker asks the limits after a short claim,
    so they say "not limiting" every time; it must claim again at once while its claims
    take jobs. It waited its poll after the second such claim (2 jobs every 30 s), which a
    loaded machine met at 20 a second."""
    elapsed, _, _ = drain_limited_queue(
        worker,
        partner,
        "refill",
        100000,
        40,
        "40 jobs of a queue whose tokens come back at once (2 a poll: 10 minutes)",
    )
    print(
        f"   {worker} refill: 40 jobs in {elapsed:.2f} s, each claim's token back before the limits were asked",
        flush=True,
    )


def stop_while_cut_off(worker, partner, kind, url, connected, cut, restore, settle):
    """SIGTERM while the worker is cut off from its database (`cut(name)`, then `settle`
    seconds): a worker sending a job gives up its finalize once a lease has passed, an
    idle one gives up its claim, and both exit 0 within a lease and a few seconds. The
    job stays in flight, to come back after its lease."""
    name = f"workers_{worker}_{kind}"
    db, _ = fresh_database(name)
    # A send of 4 s: it is still running when the workers are cut off, whatever the time
    # they took to start.
    db.execute("""SELECT sendjobs_enqueue('{"delay": 4.0}', 'q')""")
    processes = {}
    try:
        for tag, queue in (("sending", "q"), ("idle", "nothing")):
            env = dict(
                os.environ,
                DATABASE_URL=url(name),
                PARTNER_URL=partner.url,
                QUEUE=queue,
                LEASE_SECONDS=str(LEASE_SECONDS),
                CONNECT_TIMEOUT_SECONDS="2",
                POLL_SECONDS="0.2",
                LISTEN="0",
                WORKER_NAME=f"{name}-{tag}",
            )
            processes[tag] = subprocess.Popen(WORKERS[worker], env=env, stdout=subprocess.PIPE, text=True)
        wait_until(db, "SELECT status = 'in_flight' FROM send_jobs", 15, "the job's claim")
        # Both connected (a first connection that fails ends a worker at once), and
        # claiming in a loop (the idle one every 0.2 s).
        deadline = time.monotonic() + 15
        while connected(name) < 2:
            assert time.monotonic() < deadline, "the workers did not connect"
            time.sleep(0.05)
        time.sleep(0.3)
        cut(name)
        time.sleep(settle)
        for process in processes.values():
            process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        for tag, process in processes.items():
            out, _ = process.communicate(timeout=LEASE_SECONDS + 5)
            assert process.returncode == 0, f"{tag} worker exited with {process.returncode}"
            json.loads(out.strip().splitlines()[-1])
        elapsed = time.monotonic() - signalled
        job = db.execute("SELECT status, attempts FROM send_jobs").fetchone()
        assert job == ("in_flight", 1), f"the job whose finalize was given up: {job}"
        assert elapsed < LEASE_SECONDS + 5, f"the workers took {elapsed:.1f} s to stop"
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        restore(name)
        db.close()
    print(f"   {worker} {kind}: both workers exited {elapsed:.1f} s after SIGTERM", flush=True)


def stop_while_away(worker, partner, bouncer):
    """Cut off by the pooler: it refuses the database and has dropped its connections
    (the idle worker is retrying its claim at the signal)."""
    stop_while_cut_off(
        worker,
        partner,
        "away",
        lambda name: f"postgresql://postgres@127.0.0.1:{bouncer.port}/{name}",
        connected=bouncer.clients,
        cut=lambda name: (bouncer.admin(f"DISABLE {name}"), bouncer.admin(f"KILL {name}")),
        restore=lambda name: (
            bouncer.admin(f"RESUME {name}", check=False),
            bouncer.admin(f"ENABLE {name}", check=False),
        ),
        settle=0.5,
    )


class FrozenProxy:
    """A TCP proxy to the cluster that can stop forwarding without closing anything: a
    server that stopped answering (a partition, a hung host), as no refusal or reset
    shows it. `frozen` holds every connection; `freeze(client_port)` one: the one whose
    backend sees it coming from that port (pg_stat_activity.client_port), the proxy's own
    end of it."""

    def __init__(self):
        self.frozen = threading.Event()
        self.by_port = {}  # the port of the proxy's end of each connection to the server: its Event
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
                server = socket.create_connection(("127.0.0.1", int(os.environ["PGPORT"])))
            except OSError:
                return
            held = self.by_port[server.getsockname()[1]] = threading.Event()
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self.pipe, args=(src, dst, held), daemon=True).start()

    def freeze(self, client_port):
        self.by_port[client_port].set()

    def pipe(self, src, dst, held):
        try:
            while data := src.recv(65536):
                while self.frozen.is_set() or held.is_set():  # hold it: never forward, never close
                    time.sleep(0.05)
                dst.sendall(data)
        except OSError:
            pass

    def close(self):
        self.listener.close()


def stop_while_frozen(worker, partner):
    """Cut off by silence: a proxy that stops forwarding (the idle worker's claim, and
    then the sending worker's heartbeat and finalize, wait for an answer)."""
    proxy = FrozenProxy()
    try:

        def connected(name):
            with psycopg.connect(dbname=name, autocommit=True) as db:
                return db.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE %s", (f"{name}-%",)
                ).fetchone()[0]

        stop_while_cut_off(
            worker,
            partner,
            "frozen",
            lambda name: f"postgresql://postgres@127.0.0.1:{proxy.port}/{name}",
            connected=connected,
            cut=lambda name: proxy.frozen.set(),
            restore=lambda name: None,
            settle=1.2,
        )
    finally:
        proxy.close()


def wait_for_row(conn, query, params, within, what):
    """The first row of `query` once it has one, within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        row = conn.execute(query, params).fetchone()
        if row:
            return row
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def worker_env(name, dsn, partner, **settings):
    return dict(os.environ, DATABASE_URL=dsn, PARTNER_URL=partner.url, WORKER_NAME=name, **settings)


def stopped(process, what):
    """SIGTERM: the worker must exit 0 within 10 s; its counters."""
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=10)
    assert process.returncode == 0, f"{what}: the worker exited with {process.returncode}"
    return json.loads(out.strip().splitlines()[-1])


def hung_listen(worker, partner):
    """The wake-up connection's socket hangs rather than closes: every connection of the
    worker goes through a FrozenProxy, which freezes only the one that LISTENs (found by its
    backend's client_port: the Rust crate's one connection, which also claims). With a
    30 s poll, a job enqueued at the freeze must be sent within 10 s (the check gave the
    connection up, and the worker claimed at once), a new connection must LISTEN within
    10 s of the freeze, and a job enqueued then must be sent within 2 s (woken, not
    polled)."""
    name = f"workers_{worker}_hung"
    db, _ = fresh_database(name)
    db.execute("SELECT sendjobs_notify('q', true)")
    proxy = FrozenProxy()
    dsn = f"postgresql://postgres@127.0.0.1:{proxy.port}/{name}"
    env = worker_env(name, dsn, partner, QUEUE="q", POLL_SECONDS="30", LISTEN="1")
    # The connection that has run its LISTEN: its last statement is the LISTEN or the
    # check, which the claims' connection runs neither of; for the Rust crate, its one
    # connection once it runs anything but the read-write check that comes before.
    listening = "SELECT pid, client_port FROM pg_stat_activity WHERE application_name = %s AND state = 'idle' AND " + (
        "query NOT IN ('', 'SHOW transaction_read_only')"
        if worker == "rust"
        else "query IN ('LISTEN sendjobs_wakeup', 'SELECT 1')"
    )
    process = subprocess.Popen(WORKERS[worker], env=env, stdout=subprocess.PIPE, text=True)
    try:
        pid, port = wait_for_row(db, listening, (name,), 15, "the worker's LISTEN")
        proxy.freeze(port)
        frozen_at = time.monotonic()
        db.execute("SELECT sendjobs_enqueue('{}', 'q')")
        wait_until(
            db,
            "SELECT bool_and(status = 'sent') FROM send_jobs",
            10,
            "the job enqueued at the freeze (its wake-up is held; the poll is 30 s): the worker "
            "did not give up its hung wake-up connection and claim",
        )
        claimed_after = time.monotonic() - frozen_at
        wait_for_row(
            db,
            listening + " AND pid <> %s",
            (name, pid),
            max(0.1, 10 - claimed_after),
            "a new wake-up connection within 10 s of the freeze",
        )
        listening_after = time.monotonic() - frozen_at
        enqueued = time.monotonic()
        db.execute("SELECT sendjobs_enqueue('{}', 'q')")
        wait_until(db, "SELECT bool_and(status = 'sent') FROM send_jobs", 2, "a wake-up on the new connection")
        woken_after = time.monotonic() - enqueued
        counters = stopped(process, "hung LISTEN")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        proxy.close()
        db.close()
    print(
        f"   {worker} hung LISTEN: the job enqueued at the freeze sent after {claimed_after:.2f} s, listening "
        f"again after {listening_after:.2f} s, then a job sent {woken_after:.2f} s after its enqueue; {counters}",
        flush=True,
    )


def make_standby():
    """A standby of the cluster (pg_basebackup, streaming), with the database
    `workers_readonly` and the extension in it: the read-only host of read_only_first."""
    db, _ = fresh_database("workers_readonly")
    db.close()
    workdir = Workdir("sendjobs-standby")
    standby = Cluster(workdir.path, name="standby")
    try:
        standby.basebackup(types.SimpleNamespace(port=int(os.environ["PGPORT"])))
        standby.start()
    except Exception:
        standby.shutdown_quietly("immediate")
        workdir.remove()
        raise
    return standby, workdir


def read_only_first(worker, partner, standby):
    """After a failover a host list may name a standby, or a demoted primary, first: the
    worker's connection string names the standby, then the primary (libpq's form for the
    Python and Rust workers, a URL with both hosts for the Node.js one). Its job, enqueued
    on the primary, must be sent within 10 s, and no connection of it stays on the
    standby."""
    name = f"workers_{worker}_readonly"
    db = psycopg.connect(dbname="workers_readonly", autocommit=True)
    ro = psycopg.connect(host="127.0.0.1", port=standby.port, dbname="workers_readonly", autocommit=True)
    primary = os.environ["PGPORT"]
    if worker == "node":
        dsn = f"postgresql://postgres@127.0.0.1:{standby.port},127.0.0.1:{primary}/workers_readonly"
    else:
        dsn = f"host=127.0.0.1,127.0.0.1 port={standby.port},{primary} dbname=workers_readonly user=postgres"
    queue = f"ro_{worker}"
    [(job,)] = db.execute("SELECT sendjobs_enqueue('{}', %s)", (queue,)).fetchall()
    started = time.monotonic()
    env = worker_env(name, dsn, partner, QUEUE=queue, POLL_SECONDS="0.2", LISTEN="1")
    process = subprocess.Popen(WORKERS[worker], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert ro.execute("SELECT pg_is_in_recovery()").fetchone()[0], "the standby is not in recovery"
        wait_until(
            db,
            f"SELECT status = 'sent' FROM send_jobs WHERE id = {job}",
            10,
            "the job, by a worker whose first host is a standby",
        )
        elapsed = time.monotonic() - started
        on_primary = db.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,))
        assert on_primary.fetchone()[0] >= 1, "the worker has no connection to the primary"
        wait_until(
            ro,
            f"SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = '{name}'",
            2,
            "the worker's connections to the standby to end",
        )
        counters = stopped(process, "read-only host first")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        db.close()
        ro.close()
    print(
        f"   {worker} read-only host first: its job sent {elapsed:.2f} s after its start, through the "
        f"second host; {counters}",
        flush=True,
    )


def make_new_primary():
    """A second cluster, writable, with the database `workers_demoted` and the extension
    (as the cluster has too): the new primary of demoted_primary."""
    db, _ = fresh_database("workers_demoted")
    db.close()
    workdir = Workdir("sendjobs-new-primary")
    cluster = Cluster(workdir.path, name="new-primary")
    try:
        cluster.initdb()
        cluster.start()
        with psycopg.connect(host="127.0.0.1", port=cluster.port, dbname="postgres", autocommit=True) as admin:
            admin.execute("CREATE DATABASE workers_demoted")
        with psycopg.connect(host="127.0.0.1", port=cluster.port, dbname="workers_demoted", autocommit=True) as new:
            new.execute("CREATE EXTENSION sendjobs")
    except Exception:
        cluster.shutdown_quietly("immediate")
        workdir.remove()
        raise
    return cluster, workdir


def demoted_primary(worker, partner, new_primary):
    """A primary demoted under a worker's connection: the worker's connection string
    names the cluster, then `new_primary`; once it is claiming on the cluster, the cluster
    turns read-only for every session (default_transaction_read_only, reloaded: its claims
    now fail with 25006, as on a primary demoted to a standby) and a job is enqueued on
    the new primary. It must be sent within 10 s: the worker took 25006 for a lost
    connection, and its new one passed over the read-only host."""
    name = f"workers_{worker}_demoted"
    old = psycopg.connect(dbname="workers_demoted", autocommit=True)
    new = psycopg.connect(host="127.0.0.1", port=new_primary.port, dbname="workers_demoted", autocommit=True)
    ports = (os.environ["PGPORT"], new_primary.port)
    if worker == "node":
        dsn = "postgresql://postgres@127.0.0.1:{},127.0.0.1:{}/workers_demoted".format(*ports)
    else:
        dsn = "host=127.0.0.1,127.0.0.1 port={},{} dbname=workers_demoted user=postgres".format(*ports)
    queue = f"dm_{worker}"
    env = worker_env(name, dsn, partner, QUEUE=queue, POLL_SECONDS="0.2", LISTEN="1")
    process = subprocess.Popen(WORKERS[worker], env=env, stdout=subprocess.PIPE, text=True)
    try:
        # Claiming on the old primary: its claims' connection has run a claim, or asked the
        # queue's limits after one, there.
        wait_for_row(
            old,
            "SELECT 1 FROM pg_stat_activity WHERE application_name = %s "
            "AND (query LIKE '%%sendjobs_claim%%' OR query LIKE '%%sendjobs_queue_limits%%')",
            (name,),
            15,
            "the worker's claims on the old primary",
        )
        old.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        old.execute("SELECT pg_reload_conf()")
        demoted = time.monotonic()
        [(job,)] = new.execute("SELECT sendjobs_enqueue('{}', %s)", (queue,)).fetchall()
        wait_until(
            new,
            f"SELECT status = 'sent' FROM send_jobs WHERE id = {job}",
            10,
            "the job on the new primary, by a worker whose old primary answers read-only errors",
        )
        elapsed = time.monotonic() - demoted
        counters = stopped(process, "demoted primary")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        old.execute("ALTER SYSTEM RESET default_transaction_read_only")
        old.execute("SELECT pg_reload_conf()")
        old.close()
        new.close()
    print(
        f"   {worker} demoted primary: its job sent on the new primary {elapsed:.2f} s after the old one "
        f"turned read-only; {counters}",
        flush=True,
    )


# The Rust crate's tests that need neither LISTEN nor a worker's session by name (the
# others wait for a wake-up, or find the worker's backend waiting on a lock by its
# application_name); their killed connection is the pooler's KILL.
RUST_POOLER_SAFE = [
    "every_job_is_finished_once_through_a_killed_connection_and_a_stall",
    "a_lost_job_stops_its_send",
    "shutdown_finishes_or_abandons_running_sends",
    "a_refused_claim_is_an_error_with_its_sqlstate",
]


def rust_through_pooler(bouncer):
    """sendjobs-client's own tests, the worker connected through the pooler (built by
    scripts/test.sh before this runs)."""
    env = dict(
        os.environ,
        SENDJOBS_WORKER_TEST_DSN=f"host={os.environ['PGHOST']} port={os.environ['PGPORT']} user=postgres",
        SENDJOBS_WORKER_TEST_POOLER=f"host=127.0.0.1 port={bouncer.port} user=postgres",
        SENDJOBS_WORKER_TEST_POOLER_ADMIN=f"host=127.0.0.1 port={bouncer.port} user=postgres dbname=pgbouncer",
    )
    out = subprocess.run(
        [
            "cargo",
            "test",
            "-q",
            "-p",
            "sendjobs-client",
            "--all-features",
            "--test",
            "live",
            "--",
            "--include-ignored",
            "--exact",
            *RUST_POOLER_SAFE,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    passed = re.search(r"test result: ok\. (\d+) passed", out.stdout)
    assert out.returncode == 0 and passed and int(passed.group(1)) == len(RUST_POOLER_SAFE), (
        f"sendjobs-client through PgBouncer:\n{out.stdout}{out.stderr}"
    )
    print(
        f"   rust pgbouncer: {passed.group(1)} of sendjobs-client's tests passed through the pooler "
        f"({', '.join(RUST_POOLER_SAFE)})",
        flush=True,
    )


def rust_over_tls():
    """sendjobs-client over TLS: first a worker with a connector must refuse the cluster
    without TLS; then the cluster gets a server certificate signed by a CA made here
    (openssl), ssl on by a reload, and the crate's TLS test connects to it over TCP. Then
    TLS is turned off again."""
    outer = tempfile.mkdtemp(prefix="sendjobs-tls.")
    os.chmod(outer, 0o755)  # the server (postgres, when we are root) reads the files below
    folder = os.path.join(outer, "tls")
    settings = make_tls_files(folder, names="IP:127.0.0.1, DNS:localhost")
    env = dict(
        os.environ,
        SENDJOBS_WORKER_TEST_DSN=f"host={os.environ['PGHOST']} port={os.environ['PGPORT']} user=postgres",
        SENDJOBS_WORKER_TEST_TLS_CA=f"{folder}/ca.crt",
        SENDJOBS_WORKER_TEST_TLS_DSN=f"host=127.0.0.1 port={os.environ['PGPORT']} user=postgres",
    )

    def crate_test(name):
        out = subprocess.run(
            [
                "cargo",
                "test",
                "-q",
                "-p",
                "sendjobs-client",
                "--all-features",
                "--test",
                "live",
                "--",
                "--include-ignored",
                "--exact",
                name,
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0 and "1 passed" in out.stdout, f"sendjobs-client, {name}:\n{out.stdout}{out.stderr}"

    crate_test("a_tls_worker_refuses_a_server_without_tls")  # TLS is still off here
    with psycopg.connect(dbname="postgres", autocommit=True) as admin:
        for name, value in settings.items():
            admin.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        admin.execute("SELECT pg_reload_conf()")
        time.sleep(0.5)
        try:
            crate_test("a_worker_connects_over_tls")
        finally:
            for name in settings:
                admin.execute(f"ALTER SYSTEM RESET {name}")
            admin.execute("SELECT pg_reload_conf()")
            shutil.rmtree(outer, ignore_errors=True)
    print(
        "   rust tls: sendjobs-client refused a server without TLS; with TLS on, it connected with "
        "its CA, and was refused without it",
        flush=True,
    )


def readme_example_sends(language, command, cwd, printed):
    """A package README's example, run as it is there in a database of its own with the
    table it writes to: its job must be sent, and its worker must exit 0 on SIGTERM having
    printed `printed`."""
    db, url = fresh_database(f"workers_{language}_readme")
    db.execute("CREATE TABLE payments (id text PRIMARY KEY, amount int NOT NULL)")
    run = subprocess.Popen(
        command,
        cwd=cwd,
        env={**os.environ, "DATABASE_URL": url},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(
            db,
            "SELECT count(*) = 1 FROM send_jobs_finished WHERE status = 'sent' AND transaction_id = 'p-1'",
            15,
            "the README example's job sent",
        )
        run.send_signal(signal.SIGTERM)
        output, _ = run.communicate(timeout=10)
    finally:
        run.kill()
    assert run.returncode == 0 and printed in output, f"the README example (exit {run.returncode}):\n{output}"
    db.close()


def python_package(venv):
    """The Python package as a user installs it: `pip install ./workers/python` into a venv
    (which sees Debian's psycopg), then, with that venv's interpreter, the producer's checks
    (tests/workers/python_client.py) and the README's example as it is there (its job sent
    by its worker, which exits 0 on SIGTERM). The worker scenarios run the venv's
    sendjobs-worker."""
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], check=True)
    # From a copy: pip's build writes build/ and *.egg-info/ beside the sources.
    source = shutil.copytree(os.path.join(ROOT, "workers", "python"), os.path.join(venv, "source"))
    out = subprocess.run(
        [os.path.join(venv, "bin", "pip"), "install", "-q", "--disable-pip-version-check", source],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, f"pip install ./workers/python failed:\n{out.stdout}{out.stderr}"
    WORKERS["python"] = [os.path.join(venv, "bin", "sendjobs-worker")]
    python = os.path.join(venv, "bin", "python")
    payments = "CREATE TABLE payments (id text PRIMARY KEY, amount int NOT NULL)"

    db, url = fresh_database("workers_python_client", "track_functions = 'all'")
    db.execute(payments)
    subprocess.run(
        [python, os.path.join(ROOT, "tests", "workers", "python_client.py")],
        env={**os.environ, "DATABASE_URL": url},
        check=True,
    )
    db.close()

    with open(os.path.join(ROOT, "workers", "python", "README.md")) as f:
        example = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
    readme_example_sends("python", [python, "-c", example], None, "sending {'to': 'acme', 'amount': 10}")
    print(
        "   python package: installed by pip into a venv; its README example sent its job and stopped on SIGTERM",
        flush=True,
    )


def node_package(project):
    """The Node.js package as a user installs it: `npm pack` of workers/node, installed with
    npm into a project of its own; there the producer's checks (tests/workers/node_client.mjs,
    as ESM), a require() of it (CommonJS), the README's example type-checked strictly (as
    TypeScript, by the package's own compiler) and run as it is there (its job sent by its
    worker, which exits 0 on SIGTERM). The worker scenarios run the project's
    sendjobs-worker."""
    node_dir = os.path.join(ROOT, "workers", "node")
    os.makedirs(project)
    quiet = ["--no-audit", "--no-fund", "--loglevel=error"]
    packed = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", project, *quiet], cwd=node_dir, capture_output=True, text=True
    )
    assert packed.returncode == 0, f"npm pack failed:\n{packed.stdout}{packed.stderr}"
    tarball = packed.stdout.strip().splitlines()[-1]
    with open(os.path.join(project, "package.json"), "w") as f:
        json.dump({"name": "sendjobs-check", "private": True}, f)
    out = subprocess.run(
        ["npm", "install", "--prefer-offline", *quiet, f"./{tarball}"], cwd=project, capture_output=True, text=True
    )
    assert out.returncode == 0, f"npm install of the packed package failed:\n{out.stdout}{out.stderr}"
    WORKERS["node"] = [os.path.join(project, "node_modules", ".bin", "sendjobs-worker")]
    payments = "CREATE TABLE payments (id text PRIMARY KEY, amount int NOT NULL)"

    db, url = fresh_database("workers_node_client", "track_functions = 'all'")
    db.execute(payments)
    shutil.copy(os.path.join(ROOT, "tests", "workers", "node_client.mjs"), project)
    subprocess.run(["node", "node_client.mjs"], cwd=project, env={**os.environ, "DATABASE_URL": url}, check=True)
    required = subprocess.run(
        [
            "node",
            "-e",
            "const s = require('sendjobs'); "
            "if (typeof s.enqueue !== 'function' || typeof s.Worker !== 'function') process.exit(1)",
        ],
        cwd=project,
    )
    assert required.returncode == 0, "require('sendjobs') has no enqueue or Worker"
    db.close()

    with open(os.path.join(node_dir, "README.md")) as f:
        example = re.search(r"```js\n(.*?)```", f.read(), re.S).group(1)
    for name in ("example.mjs", "example.mts"):
        with open(os.path.join(project, name), "w") as f:
            f.write(example)
    typed = subprocess.run(
        [
            os.path.join(node_dir, "node_modules", ".bin", "tsc"),
            "--noEmit",
            "--strict",
            "--module",
            "nodenext",
            "--target",
            "es2022",
            "--types",
            "node",
            "--typeRoots",
            f"{project}/node_modules/@types,{node_dir}/node_modules/@types",
            "example.mts",
        ],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert typed.returncode == 0, f"the README example does not type-check:\n{typed.stdout}{typed.stderr}"
    readme_example_sends("node", ["node", "example.mjs"], project, "sending { to: 'acme', amount: 10 }")
    print(
        "   node package: packed, installed by npm, required as CommonJS; its README example type-checked "
        "and sent its job, and stopped on SIGTERM",
        flush=True,
    )


def rust_program():
    """The Rust crate's env_worker example (workers/rust/examples): the crate's worker
    configured as the other two programs are, each job sent at once. Only the failover
    checks run it: the crate's own tests cover the rest (workers/rust/tests/live.rs)."""
    subprocess.run(["cargo", "build", "-q", "-p", "sendjobs-client", "--example", "env_worker"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    WORKERS["rust"] = [os.path.join(target, "debug", "examples", "env_worker")]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", default="python,node,rust")
    p.add_argument("--routes", default="direct,pgbouncer")
    p.add_argument("--skip-patroni", action="store_true", help="not the failovers under Patroni (under_patroni.py)")
    a = p.parse_args(argv)
    partner = Partner(seed=7)
    partner.start()
    bouncer = PgBouncer() if "pgbouncer" in a.routes else None
    venv = tempfile.mkdtemp(prefix="sendjobs-venv.")
    project = tempfile.mkdtemp(prefix="sendjobs-npm.")
    workers = a.workers.split(",")
    standby = new_primary = None
    try:
        if "python" in workers:
            python_package(venv)
        if "node" in workers:
            node_package(os.path.join(project, "app"))
        if "rust" in workers:
            rust_program()
        standby = make_standby()
        new_primary = make_new_primary()
        for worker in workers:
            if worker != "rust":
                for route in a.routes.split(","):
                    scenario(worker, route, partner, bouncer)
                wakeup(worker, partner)
                rate_limited(worker, partner)
                token_back_before_limits(worker, partner)
                if bouncer:
                    stop_while_away(worker, partner, bouncer)
                stop_while_frozen(worker, partner)
            hung_listen(worker, partner)
            read_only_first(worker, partner, standby[0])
            demoted_primary(worker, partner, new_primary[0])
        if not a.skip_patroni:
            under_patroni({w: WORKERS[w] for w in workers}, partner)
        if bouncer:
            rust_through_pooler(bouncer)
        rust_over_tls()
    finally:
        for cluster, workdir in filter(None, (standby, new_primary)):
            cluster.shutdown_quietly("immediate")
            workdir.remove()
        if bouncer:
            bouncer.stop()
        partner.stop()
        shutil.rmtree(venv, ignore_errors=True)
        shutil.rmtree(project, ignore_errors=True)
    print("workers: every check passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
