#!/usr/bin/env python3
"""A throwaway Patroni cluster for the failover tests (issue 42): three PostgreSQL nodes
managed by Patroni over a three-member etcd cluster, all on 127.0.0.1, started and removed
by the test the way tests/cluster.py starts one server (its PGBIN, free_port, Workdir and
as_owner: Patroni, PostgreSQL and etcd run as `postgres`).

    with PatroniCluster(nodes=3, synchronous_mode=True) as pc:   # start() ... remove()
        psycopg2.connect(pc.dsn())            # libpq multi-host, target_session_attrs=read-write
        pc.switchover(); pc.kill_leader(); pc.freeze_leader(); pc.stop_etcd_member(i)

Packages: Debian's patroni (3.0.2), etcd-server (3.4.23) and faketime (scripts/setup.sh).

The DCS: Patroni's `etcd` section, etcd's v2 API (etcd runs with --enable-v2), not
`etcd3`. Both work with etcd 3.4, but 3.0.2's etcd3 code renews an expired leader key
with an unconditional put (fixed in Patroni 3.0.3, patroni/patroni#2689): a leader frozen
past the TTL, once resumed, takes the key back from the node that was promoted meanwhile,
which is then demoted and rewound: two primaries for about a second, and what the new one
acknowledged is gone (seen here; `--self-check --dcs etcd3` shows it). The v2 code renews
with compare-and-swap on its own name, so the resumed leader fails and demotes itself. In
both, etcd expires the key by its own clock, not by any node's.

Timings (Patroni's dynamic configuration; it needs loop_wait + 2 * retry_timeout <= ttl):
ttl 10 s (a frozen leader loses its key 10 s after its last renewal), loop_wait 1 s,
retry_timeout 4 s, primary_start_timeout 0 (a primary whose server crashed is failed over
at once to a healthy synchronous standby, rather than restarted in place), use_pg_rewind
on (with wal_log_hints), synchronous_mode on unless asked otherwise. etcd keeps its
default 100 ms heartbeat and 1 s election timeout.

The clock: each node's Patroni runs PostgreSQL from its own bin_dir, symbolic links to
PGBIN except `postgres`, a shell wrapper that preloads libfaketime (FAKETIME="+30s",
FAKETIME_DONT_RESET=1) with the offset held in the node's `clock-offset` file when that
file is not empty. Only that node's server and its backends see the offset; Patroni's
timers, etcd's TTLs and pg_ctl stay on the real clock. That matters: `pg_ctl start -w`
waits in vain for a server whose clock is behind (it takes the pid file's start time for a
stale one), but Patroni starts the server itself and uses pg_ctl only to promote. Patroni
does compare the pid file's start time with the process's when it adopts a server it did
not start (Patroni restarted, its server left running): with an offset it would refuse
it, so kill_patroni_and_postgres takes both down.

As a command: `python3 tests/failover/patroni.py --self-check` starts a cluster, enqueues
and claims a job through the multi-host string, puts one replica's clock 30 s ahead and
the other's 30 s behind, then measures a switchover (to the one ahead), a SIGKILL of the
primary's postmaster, a freeze of the primary past the TTL, and the loss and return of
etcd's leader, with writes through the multi-host string all along; prints a table, checks
that no acknowledged write was lost, and removes it all.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

try:
    import psycopg2
except ImportError:  # the pyenv python3 of a developer's shell: Debian's has psycopg2
    if __name__ == "__main__" and sys.executable != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    raise

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cluster import BASE_SETTINGS, IS_ROOT, PGBIN, Workdir, as_owner, free_port  # noqa: E402

LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
TIMINGS = {"ttl": 10, "loop_wait": 1, "retry_timeout": 4, "primary_start_timeout": 0}
# What every node's server needs on top of tests/cluster.py's BASE_SETTINGS: streaming
# replication, and wal_log_hints for pg_rewind. sendjobs itself needs no preloading.
REPLICATION_SETTINGS = {
    "wal_level": "replica",
    "max_wal_senders": "10",
    "max_replication_slots": "10",
    "hot_standby": "on",
    "wal_log_hints": "on",
    "wal_sender_timeout": "10s",
    "wal_receiver_timeout": "10s",
}


def _settings(pairs):
    """A dict of server settings from a dict or from `name=value` strings."""
    if isinstance(pairs, dict):
        return {k: str(v) for k, v in pairs.items()}
    return dict(p.split("=", 1) for p in pairs)


def _http(url, body=None, timeout=1.0):
    """(status, parsed JSON or text) of a GET, or of a POST when `body` is given."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def _wait(what, check, timeout, interval=0.05):
    """Polls `check` until it returns something true; returns that, or raises after timeout."""
    deadline = time.time() + timeout
    while True:
        try:
            got = check()
        except Exception:
            got = None
        if got:
            return got
        if time.time() > deadline:
            raise TimeoutError(f"patroni.py: no {what} after {timeout} s")
        time.sleep(interval)


def _children(pid):
    """The pids of `pid`'s descendants, read from /proc."""
    parents = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parents.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(d))
            except (OSError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _signal(pids, sig):
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def _kill_tree(proc):
    """SIGKILL to everything under `proc` (a sudo, when we are root), then to `proc` if
    it is still there once its child is gone; reaps it."""
    if proc and proc.poll() is None:
        _signal(_children(proc.pid), signal.SIGKILL)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _mkdir(path):
    os.makedirs(path, exist_ok=True)
    if IS_ROOT:
        shutil.chown(path, "postgres", "postgres")
    return path


class Node:
    """One Patroni member: its ports, folder, configuration and Patroni process."""

    def __init__(self, root, i):
        self.name = f"node{i}"
        self.dir = os.path.join(root, self.name)
        self.data = os.path.join(self.dir, "data")
        self.bin = os.path.join(self.dir, "bin")
        self.config = os.path.join(self.dir, "patroni.yml")
        self.log = os.path.join(self.dir, "patroni.log")
        self.offset_file = os.path.join(self.dir, "clock-offset")
        self.port, self.rest_port = free_port(), free_port()
        self.api = f"http://127.0.0.1:{self.rest_port}"
        self.proc = None
        self.settings = {}  # Patroni's configuration, written to self.config

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                pid = int(f.readline())
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError):
            return None


class EtcdMember:
    def __init__(self, root, i):
        self.name = f"etcd{i}"
        self.dir = os.path.join(root, self.name)
        self.log = self.dir + ".log"
        self.client_port, self.peer_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.client_port}"
        self.proc = None


class Probe:
    """Writes through a connection string in the background, a fresh connection and an
    INSERT every `interval` s, each attempt in a thread of its own so that one hung on a
    frozen server does not stop the others. Each attempt records when it started, the
    port of the server that took it and how it ended: 'acked', 'local' (the commit's wait
    for the synchronous standby was cancelled after `cancel_after` s: the client got a
    WARNING, and a success, for a commit only the primary has) or an error."""

    def __init__(self, dsn, interval=0.1, cancel_after=5.0, max_in_flight=60):
        self.dsn, self.interval, self.cancel_after, self.max_in_flight = dsn, interval, cancel_after, max_in_flight
        self.attempts, self.lock, self.stopping = [], threading.Lock(), threading.Event()
        self.in_flight = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join()

    def _loop(self):
        while not self.stopping.is_set():
            if self.in_flight < self.max_in_flight:
                with self.lock:
                    self.in_flight += 1
                threading.Thread(target=self._attempt, daemon=True).start()
            self.stopping.wait(self.interval)

    def _attempt(self):
        a = {"start": time.time(), "port": None, "end": None, "outcome": None, "token": uuid.uuid4().hex}
        timer = None
        try:
            conn = psycopg2.connect(self.dsn, connect_timeout=2)
            try:
                conn.autocommit = True
                timer = threading.Timer(self.cancel_after, conn.cancel)
                timer.daemon = True
                timer.start()
                with conn.cursor() as cur:
                    cur.execute(
                        "INSERT INTO failover_probe (port, token) VALUES (inet_server_port(), %s) RETURNING port",
                        (a["token"],),
                    )
                    a["port"] = cur.fetchone()[0]
                cancelled = any("canceling wait for synchronous replication" in n for n in conn.notices)
                a["outcome"] = "local" if cancelled else "acked"
            finally:
                conn.close()
        except Exception as e:
            a["outcome"] = f"error: {str(e).strip().splitlines()[0][:80] if str(e).strip() else type(e).__name__}"
        finally:
            if timer:
                timer.cancel()
            a["end"] = time.time()
            with self.lock:
                self.attempts.append(a)
                self.in_flight -= 1

    def lost(self, tokens):
        """The acknowledged attempts whose row is not among `tokens` (those the table holds)."""
        with self.lock:
            return [a for a in self.attempts if a["outcome"] == "acked" and a["token"] not in tokens]

    def acked(self, since=0.0, port=None):
        with self.lock:
            return sorted(
                (a for a in self.attempts if a["outcome"] == "acked" and a["start"] >= since)
                if port is None
                else (
                    a for a in self.attempts if a["outcome"] == "acked" and a["start"] >= since and a["port"] == port
                ),
                key=lambda a: a["end"],
            )


class PatroniCluster:
    """Three (`nodes`) PostgreSQL servers under Patroni over `etcd_members` etcd members, on
    127.0.0.1. `workdir`: a folder to work in (a Workdir made and removed here when None).
    `pg_settings`: server settings (dict or `name=value` strings) over BASE_SETTINGS and
    REPLICATION_SETTINGS. `dbname`: the database made at start with sendjobs in it."""

    def __init__(
        self,
        workdir=None,
        nodes=3,
        synchronous_mode=True,
        pg_settings=(),
        etcd_members=3,
        dbname="sendjobs",
        scope="sendjobs",
        timings=None,
        dcs="etcd",
    ):
        self._own_workdir = Workdir("sendjobs-patroni") if workdir is None else None
        self.path = self._own_workdir.path if workdir is None else getattr(workdir, "path", workdir)
        self.synchronous_mode = synchronous_mode
        self.dcs = dcs
        self.dbname, self.scope = dbname, scope
        self.timings = dict(TIMINGS, **(timings or {}))
        base = {k: v for k, v in _settings(BASE_SETTINGS).items() if k != "listen_addresses"}
        self.pg_settings = {**base, **REPLICATION_SETTINGS, **_settings(pg_settings)}
        self.etcd = [EtcdMember(self.path, i) for i in range(etcd_members)]
        self.nodes = [Node(self.path, i) for i in range(nodes)]

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self):
        try:
            self.start()
        except BaseException as e:
            if not isinstance(e, (SystemExit, KeyboardInterrupt)):
                self.print_logs()
            self.remove()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and not issubclass(exc_type, (SystemExit, KeyboardInterrupt)):
            self.print_logs()
        self.remove()

    def print_logs(self, lines=25, file=sys.stderr):
        """The last `lines` lines of every node's Patroni log (its server's log is there too)."""
        for n in self.nodes:
            try:
                with open(n.log, errors="replace") as f:
                    tail = f.readlines()[-lines:]
            except OSError:
                tail = []
            print(f"-- {n.log}:", *[ln.rstrip()[:300] for ln in tail], sep="\n", file=file)

    def start(self, timeout=120):
        """etcd's members, then the nodes; returns once a leader is elected, every replica
        streams, a synchronous standby is listed (with synchronous_mode) and `dbname`
        holds the sendjobs extension and the probe table."""
        for m in self.etcd:
            _mkdir(m.dir)
            self.start_etcd_member(m, wait=False)
        _wait("etcd quorum", lambda: all(_http(m.url + "/health")[1].get("health") == "true" for m in self.etcd), 30)
        for n in self.nodes:
            self._prepare_node(n)
        for n in self.nodes:
            self.start_node(n)
        leader = self.wait_healthy(timeout)
        self.sql(leader, f"CREATE DATABASE {self.dbname}", dbname="postgres")
        self.sql(
            leader,
            "CREATE EXTENSION sendjobs; CREATE TABLE failover_probe (id bigserial PRIMARY KEY, "
            "port int NOT NULL, token text, at timestamptz NOT NULL DEFAULT clock_timestamp())",
        )
        # Every replica has the database before anyone connects: libpq goes on to the next
        # host of a multi-host string after "the database system is starting up" (57P03),
        # but gives up at "database does not exist" or "too many clients" (libpq 15, 18).
        self.wait_replayed(leader)
        return self

    def wait_replayed(self, leader=None, timeout=30):
        """Waits until every other node has replayed the leader's WAL up to now."""
        leader = leader or self.leader()
        query = "SELECT count(*) FROM pg_stat_replication WHERE replay_lsn >= '{}'::pg_lsn".format(
            self.sql(leader, "SELECT pg_current_wal_lsn()")[0][0]
        )
        _wait("replicas caught up", lambda: self.sql(leader, query)[0][0] >= len(self.nodes) - 1, timeout)

    def remove(self):
        """Stops everything, pass or fail (Patroni first, so that it restarts nothing), and
        removes the data: the whole folder when it is ours."""
        for n in self.nodes:
            self.kill_patroni_and_postgres(n)
        for m in self.etcd:
            self.stop_etcd_member(m)
        # Whatever else still runs from our folder (a pg_basebackup, a pg_rewind, a server
        # started while Patroni died), and its children; never ourselves or our callers,
        # whose command lines may name the folder too.
        spare, pid = set(), os.getpid()
        while pid > 1:
            spare.add(pid)
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        for _ in range(3):
            strays = []
            for d in os.listdir("/proc"):
                try:
                    with open(f"/proc/{d}/cmdline", "rb") as f:
                        if d.isdigit() and int(d) not in spare and self.path.encode() in f.read():
                            strays.append(int(d))
                except OSError:
                    pass
            if not strays:
                break
            _signal([c for p in strays for c in _children(p)] + strays, signal.SIGKILL)
            time.sleep(0.2)
        if self._own_workdir:
            self._own_workdir.remove()
        else:
            for x in self.nodes + self.etcd:
                shutil.rmtree(x.dir, ignore_errors=True)

    # -- etcd --------------------------------------------------------------------------

    def _etcd(self, m):
        return m if isinstance(m, EtcdMember) else self.etcd[m]

    def start_etcd_member(self, i, wait=True):
        m = self._etcd(i)
        peers = ",".join(f"{x.name}=http://127.0.0.1:{x.peer_port}" for x in self.etcd)
        cmd = [
            "/usr/bin/etcd",
            f"--name={m.name}",
            f"--data-dir={m.dir}",
            f"--listen-client-urls={m.url}",
            f"--advertise-client-urls={m.url}",
            f"--listen-peer-urls=http://127.0.0.1:{m.peer_port}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{m.peer_port}",
            f"--initial-cluster={peers}",
            f"--initial-cluster-token={self.scope}-{os.path.basename(self.path)}",
            "--initial-cluster-state=new",  # ignored once the data folder holds a member
            "--logger=zap",
            "--enable-v2=true",  # Patroni's `etcd` section (the v2 API): see the top
        ]
        with open(m.log, "ab") as log:
            m.proc = subprocess.Popen(as_owner(cmd), stdout=log, stderr=log, start_new_session=True)
        if wait:
            _wait(f"{m.name} healthy", lambda: _http(m.url + "/health")[1].get("health") == "true", 30)

    def stop_etcd_member(self, i):
        """SIGKILL to the member (a crash, not a goodbye to its peers)."""
        _kill_tree(self._etcd(i).proc)

    def etcd_leader(self):
        """The index of etcd's leader, as the running members see it (None when none)."""
        ids, leader = {}, None
        for i, m in enumerate(self.etcd):
            if m.proc and m.proc.poll() is None:
                try:
                    st = _http(m.url + "/v3/maintenance/status", body={})[1]
                    ids[st["header"]["member_id"]] = i
                    leader = st.get("leader") or leader
                except Exception:
                    pass
        return ids.get(leader)

    # -- nodes -------------------------------------------------------------------------

    def node(self, n):
        """A Node from a Node, an index or a member name."""
        if isinstance(n, Node):
            return n
        return self.nodes[n] if isinstance(n, int) else next(x for x in self.nodes if x.name == n)

    def _prepare_node(self, n):
        _mkdir(n.dir)
        _mkdir(n.bin)
        for f in os.listdir(PGBIN):
            if f != "postgres" and not os.path.lexists(os.path.join(n.bin, f)):
                os.symlink(os.path.join(PGBIN, f), os.path.join(n.bin, f))
        with open(os.path.join(n.bin, "postgres"), "w") as f:
            f.write(
                "#!/bin/sh\n"
                "# This node's server: under libfaketime when its clock-offset file holds an offset.\n"
                f'offset=$(cat {n.offset_file} 2>/dev/null)\nif [ -n "$offset" ]; then\n'
                f'  export LD_PRELOAD={LIBFAKETIME} FAKETIME="$offset" FAKETIME_DONT_RESET=1\nfi\n'
                f'exec {PGBIN}/postgres "$@"\n'
            )
        os.chmod(os.path.join(n.bin, "postgres"), 0o755)
        open(n.offset_file, "w").close()
        dcs = dict(
            self.timings,
            synchronous_mode=self.synchronous_mode,
            maximum_lag_on_failover=16 * 1024 * 1024,
            postgresql={"use_pg_rewind": True, "use_slots": True, "parameters": self.pg_settings},
        )
        config = {
            "scope": self.scope,
            "name": n.name,
            "log": {"level": "INFO", "format": "%(asctime)s %(levelname)s: %(message)s"},
            "restapi": {"listen": f"127.0.0.1:{n.rest_port}", "connect_address": f"127.0.0.1:{n.rest_port}"},
            self.dcs: {"hosts": [f"127.0.0.1:{m.client_port}" for m in self.etcd], "protocol": "http"},
            "bootstrap": {"dcs": dcs, "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}, "no-sync"]},
            "postgresql": {
                "listen": f"127.0.0.1:{n.port}",
                "connect_address": f"127.0.0.1:{n.port}",
                "data_dir": n.data,
                "bin_dir": n.bin,
                "pgpass": os.path.join(n.dir, "pgpass"),
                "authentication": {"superuser": {"username": "postgres"}, "replication": {"username": "postgres"}},
                "parameters": {"unix_socket_directories": n.dir},
                "pg_hba": [
                    "local all all trust",
                    "host all all 127.0.0.1/32 trust",
                    "host replication all 127.0.0.1/32 trust",
                ],
            },
        }
        n.settings = config
        self._write_config(n)

    def _write_config(self, n):
        with open(n.config, "w") as f:
            json.dump(n.settings, f, indent=1)  # JSON is YAML

    def set_tags(self, n, **tags):
        """Sets Patroni tags of node `n` (nofailover, nosync, ...; None removes one) in its
        configuration and has its Patroni reload it."""
        n = self.node(n)
        merged = dict(n.settings.get("tags", {}), **tags)
        n.settings["tags"] = {k: v for k, v in merged.items() if v is not None}
        self._write_config(n)
        status, body = _http(n.api + "/reload", body={}, timeout=5)
        if status not in (200, 202):
            raise RuntimeError(f"patroni.py: reload of {n.name} refused ({status}): {body}")

    def make_sync_standby(self, n, timeout=30):
        """Has Patroni choose node `n` as the synchronous standby (the only node it fails or
        switches over to in synchronous_mode): `nosync` on every other replica until it
        does, then off again (Patroni keeps a healthy synchronous standby)."""
        n = self.node(n)
        if any(m["name"] == n.name and m["role"] == "sync_standby" for m in self.members()):
            return
        others = [x for x in self.nodes if x is not n]
        for x in others:
            self.set_tags(x, nosync=True)
        try:
            _wait(
                f"{n.name} as synchronous standby",
                lambda: any(m["name"] == n.name and m["role"] == "sync_standby" for m in self.members()),
                timeout,
            )
        finally:
            for x in others:
                self.set_tags(x, nosync=None)

    def start_node(self, n):
        """Starts the node's Patroni (which starts, or adopts, its server)."""
        n = self.node(n)
        # The server's own libpq for its walreceiver (tests/cluster.py, Cluster.start).
        env = ["env", f"LD_LIBRARY_PATH={os.path.join(os.path.dirname(PGBIN), 'lib')}"]
        with open(n.log, "ab") as log:
            n.proc = subprocess.Popen(
                as_owner(env + ["/usr/bin/patroni", n.config]),
                stdout=log,
                stderr=log,
                start_new_session=True,
                cwd=n.dir,
            )

    def kill_patroni_and_postgres(self, n):
        """SIGKILL to the node's Patroni, then to its server and every backend (a machine
        gone). start_node brings it back."""
        n = self.node(n)
        _kill_tree(n.proc)
        pid = n.postmaster_pid()
        if pid:
            _signal([pid] + _children(pid), signal.SIGKILL)
            _wait(f"{n.name}'s server gone", lambda: n.postmaster_pid() is None, 10)

    def sql(self, n, query, dbname=None, timeout=10):
        """Runs `query` on node `n` (autocommit) and returns its rows, if any."""
        n = self.node(n)
        conn = psycopg2.connect(
            host="127.0.0.1", port=n.port, user="postgres", dbname=dbname or self.dbname, connect_timeout=2
        )
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f"SET statement_timeout = '{int(timeout * 1000)}'")
                cur.execute(query)
                return cur.fetchall() if cur.description else None
        finally:
            conn.close()

    def dsn(self, dbname=None):
        """libpq's multi-host string over every node, for a writable primary."""
        hosts = ",".join("127.0.0.1" for _ in self.nodes)
        ports = ",".join(str(n.port) for n in self.nodes)
        return f"host={hosts} port={ports} user=postgres dbname={dbname or self.dbname} target_session_attrs=read-write"

    def node_dsn(self, n, dbname=None):
        return f"host=127.0.0.1 port={self.node(n).port} user=postgres dbname={dbname or self.dbname}"

    # -- state -------------------------------------------------------------------------

    def members(self):
        """Patroni's GET /cluster, from the first node that answers: a list of dicts with
        name, role ('leader', 'sync_standby', 'replica'), state, host, port, timeline, lag."""
        for n in self.nodes:
            if n.proc and n.proc.poll() is None:
                try:
                    return _http(n.api + "/cluster")[1]["members"]
                except Exception:
                    pass
        return []

    def leader(self):
        """The leader's member name, or None."""
        return next((m["name"] for m in self.members() if m["role"] == "leader"), None)

    def is_primary(self, n):
        """Patroni's own health check (GET /primary: 200 when this node holds the leader
        lock), with a short timeout since the check queries a server that may be frozen."""
        try:
            return _http(self.node(n).api + "/primary", timeout=0.5)[0] == 200
        except Exception:
            return False

    def wait_for_leader(self, not_in=(), timeout=60, old_pids=None):
        """Waits until a node not in `not_in` (names) says it is the primary (Patroni's
        GET /primary) and its server runs; `old_pids` ({name: postmaster pid}) counts a
        node only once its server is a new one. Returns the node's name and the time
        (time.time()) it was first seen so."""
        not_in = {self.node(x).name for x in not_in}
        old_pids = old_pids or {}

        def found():
            for n in self.nodes:
                if n.name in not_in or not (n.proc and n.proc.poll() is None):
                    continue
                pid = n.postmaster_pid()
                if pid and pid != old_pids.get(n.name) and self.is_primary(n):
                    return n.name
            return None

        name = _wait("new leader", found, timeout, interval=0.05)
        return name, time.time()

    def wait_healthy(self, timeout=90):
        """Waits until there is a leader, every other node streams from it, and (with
        synchronous_mode) Patroni lists a synchronous standby; returns the leader's name."""

        def healthy():
            ms = self.members()
            leader = next((m for m in ms if m["role"] == "leader" and m["state"] == "running"), None)
            if not leader or len(ms) < len(self.nodes) or any(m["state"] != "running" for m in ms):
                return None
            if self.synchronous_mode and not any(m["role"] == "sync_standby" for m in ms):
                return None
            streaming = self.sql(
                leader["name"], "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'", "postgres"
            )
            return leader["name"] if streaming[0][0] >= len(self.nodes) - 1 else None

        try:
            return _wait("healthy cluster", healthy, timeout, interval=0.2)
        except TimeoutError as e:
            raise TimeoutError(f"{e}; members: {self.members()}") from None

    def patronictl(self, *args):
        p = subprocess.run(
            as_owner(["/usr/bin/patronictl", "-c", self.nodes[0].config, *args]),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if p.returncode != 0:
            raise RuntimeError(f"patronictl {' '.join(args)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
        return p.stdout

    # -- faults ------------------------------------------------------------------------

    def switchover(self, candidate=None):
        """A planned switchover (patronictl switchover --force) to `candidate`, by default
        the synchronous standby (the only one Patroni accepts in synchronous_mode). Returns
        {old, new, t0, promoted}: times are time.time()."""
        old = self.leader()
        if candidate is None:
            ms = self.members()
            pick = [m["name"] for m in ms if m["role"] == "sync_standby"] or [
                m["name"] for m in ms if m["role"] == "replica"
            ]
            candidate = pick[0]
        candidate = self.node(candidate).name
        if self.synchronous_mode:
            self.make_sync_standby(candidate)
        t0 = time.time()
        ctl = subprocess.Popen(
            as_owner(["/usr/bin/patronictl", "-c", self.nodes[0].config, "switchover", "--force"])
            + ["--leader", old, "--candidate", candidate, self.scope],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            new, promoted = self.wait_for_leader(not_in=[old], timeout=30)
        finally:
            out = ctl.communicate(timeout=60)[0]
        if ctl.returncode != 0:
            raise RuntimeError(f"patronictl switchover failed ({ctl.returncode}):\n{out}")
        return {"old": old, "new": new, "t0": t0, "promoted": promoted}

    def kill_leader(self, timeout=60):
        """SIGKILL to the leader's postmaster only (its backends then exit; its Patroni
        lives on), then waits for a primary again: another node, or this one with a new
        server. Returns {old, pid, t0, new, promoted}."""
        old = self.node(self.leader())
        pid = old.postmaster_pid()
        t0 = time.time()
        os.kill(pid, signal.SIGKILL)
        new, promoted = self.wait_for_leader(old_pids={old.name: pid}, timeout=timeout)
        return {"old": old.name, "pid": pid, "t0": t0, "new": new, "promoted": promoted}

    def freeze_leader(self, seconds=0, timeout=60):
        """SIGSTOP to the leader's postmaster and every backend (its Patroni runs on; its
        leader key lapses after the TTL); waits until another node is the primary and at
        least `seconds` have passed since the SIGSTOP, then SIGCONT. Two sessions held on
        the old leader send a write during the freeze (a COMMIT of an open transaction, an
        INSERT in autocommit), and fresh connections write to it every 50 ms after the
        SIGCONT, until one of the two primaries is demoted. Returns {old, new, t0 (the
        SIGSTOP), promoted, t_cont, demoted (the time one of them stopped being a writable
        primary), loser (the one demoted: `old` unless the old leader took its key back;
        `new` is then the other), held: {"commit"/"insert": (outcome, time, token)},
        old_writes: the fresh writes' attempts (as Probe records them)}."""
        old = self.node(self.leader())
        # Two sessions a worker might hold: a transaction open across the freeze, whose
        # COMMIT is sent during it, and an idle session that sends an INSERT during it.
        held = [psycopg2.connect(self.node_dsn(old), connect_timeout=2) for _ in range(2)]
        held[1].autocommit = True
        tokens = [f"held-{kind}-{uuid.uuid4().hex}" for kind in ("commit", "insert")]
        insert = "INSERT INTO failover_probe (port, token) VALUES (inet_server_port(), %s)"
        with held[0].cursor() as cur:  # psycopg2 opens the transaction
            cur.execute(insert, (tokens[0],))
        held_result = {}

        def send(i, conn):
            try:
                if i == 0:
                    conn.commit()
                else:
                    with conn.cursor() as cur:
                        cur.execute(insert, (tokens[1],))
                cancelled = any("synchronous replication" in x for x in conn.notices)
                outcome = "local" if cancelled else "acked"
            except Exception as e:
                outcome = f"error: {str(e).strip().splitlines()[0][:80]}"
            held_result[("commit", "insert")[i]] = (outcome, time.time(), tokens[i])

        pid = old.postmaster_pid()
        t0 = time.time()
        os.kill(pid, signal.SIGSTOP)
        frozen = _children(pid)
        _signal(frozen, signal.SIGSTOP)
        senders = [threading.Thread(target=send, args=(i, c), daemon=True) for i, c in enumerate(held)]
        for t in senders:
            t.start()  # what they send waits in the socket for the frozen backends
        new, promoted = self.wait_for_leader(not_in=[old.name], timeout=timeout)
        if time.time() < t0 + seconds:
            time.sleep(t0 + seconds - time.time())  # the freeze's asked-for length, not a wait for state
        new = self.node(new)

        def writable(n):
            try:
                return self.is_primary(n) or not self.sql(n, "SELECT pg_is_in_recovery()", timeout=1)[0][0]
            except psycopg2.Error:
                return False  # down, or starting: Patroni stopped it to rejoin as a replica

        with Probe(self.node_dsn(old), interval=0.05, cancel_after=30) as probe:
            t_cont = time.time()
            _signal([pid] + frozen, signal.SIGCONT)
            loser = _wait(
                "one primary again",
                lambda: next((n.name for n in (old, new) if not writable(n)), None),
                timeout,
                interval=0.02,
            )
            t_demoted = time.time()
            for t in senders:
                t.join(timeout)
        for c in held:
            c.close()
        return {
            "old": old.name,
            "new": new.name if loser == old.name else old.name,
            "t0": t0,
            "promoted": promoted,
            "t_cont": t_cont,
            "demoted": t_demoted,
            "loser": loser,
            "held": held_result,
            "old_writes": probe.attempts,
        }

    def start_node_with_clock_offset(self, n, seconds, timeout=60):
        """Restarts node `n`'s server (Patroni's POST /restart) under libfaketime, its clock
        `seconds` ahead (negative: behind) from now on, also across later restarts and
        promotions; 0 takes the offset away. Returns the offset its now() shows."""
        n = self.node(n)
        with open(n.offset_file, "w") as f:
            f.write(f"{seconds:+d}s" if seconds else "")
        status, body = _http(n.api + "/restart", body={}, timeout=timeout)
        if status != 200:
            raise RuntimeError(f"patroni.py: restart of {n.name} refused ({status}): {body}")
        self.wait_healthy(timeout)
        return self.clock_offset(n)

    def clock_offset(self, n):
        """now() on node `n`'s server minus our clock, in seconds."""
        before = time.time()
        got = self.sql(n, "SELECT extract(epoch FROM now())::float8", dbname="postgres")[0][0]
        return got - (before + time.time()) / 2


# ----------------------------------------------------------------------------------
# the self-check
# ----------------------------------------------------------------------------------


def _measure(pc, probe, fault, name):
    """Runs `fault()` (which returns at least {t0, old, new, promoted}), waits for the
    cluster to heal, and returns a row of the table."""
    info = fault()
    t0 = info["t0"]
    new_port = pc.node(info["new"]).port
    first = _wait("a write acknowledged by the new primary", lambda: probe.acked(since=t0, port=new_port), 60)[0]
    leader = pc.wait_healthy(120)
    acks = [a["end"] for a in probe.acked(since=t0 - 2)]
    gap = max((b - a for a, b in zip(acks, acks[1:]) if b >= t0), default=0.0)
    return dict(
        info,
        fault=name,
        to_promoted=None if info["promoted"] is None else info["promoted"] - t0,
        to_write=first["end"] - t0,
        gap=gap,
        healed=time.time() - t0,
        leader_after=leader,
    )


def self_check(synchronous_mode=True, dcs="etcd"):
    began = time.time()
    rows, notes = [], []
    with PatroniCluster(synchronous_mode=synchronous_mode, dcs=dcs) as pc:
        print(f"synchronous_mode {synchronous_mode}, Patroni's DCS section: {dcs}")
        print(f"cluster up in {time.time() - began:.1f} s: {pc.path}", flush=True)
        for m in pc.members():
            print(f"  {m['name']} {m['role']} {m['state']} port {m.get('port')} timeline {m.get('timeline')}")
        conn = psycopg2.connect(pc.dsn(), connect_timeout=2)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT sendjobs_enqueue('{}'::jsonb, 'q')")
            job = cur.fetchone()[0]
            cur.execute("SELECT id, claim_generation FROM sendjobs_claim(1, '30 seconds')")
            claimed = cur.fetchall()
        conn.close()
        assert claimed and claimed[0][0] == job, f"claimed {claimed}, enqueued {job}"
        print(f"job {job} enqueued and claimed through the multi-host string: {claimed}")

        ms = pc.members()
        skewed = next(m["name"] for m in ms if m["role"] in ("sync_standby", "replica"))
        behind = next(m["name"] for m in ms if m["role"] in ("sync_standby", "replica") and m["name"] != skewed)
        for node, seconds in ((skewed, 30), (behind, -30)):
            offset = pc.start_node_with_clock_offset(node, seconds)
            notes.append(
                f"clock: {node} restarted under libfaketime {seconds:+d}s: now() - our clock = {offset:+.2f} s"
            )
            print(notes[-1], flush=True)
            assert abs(offset - seconds) < 1, offset

        with Probe(pc.dsn()) as probe:
            rows.append(_measure(pc, probe, lambda: pc.switchover(skewed), "switchover (to the +30 s node)"))
            after = pc.clock_offset(rows[-1]["new"])
            notes.append(f"clock: the new primary {rows[-1]['new']}'s now() - our clock = {after:+.2f} s")
            rows.append(_measure(pc, probe, pc.kill_leader, "SIGKILL of the primary's postmaster"))
            r = _measure(pc, probe, pc.freeze_leader, "SIGSTOP of the primary past the TTL")
            rows.append(r)
            outcomes = {}
            for a in r["old_writes"]:
                outcomes[a["outcome"]] = outcomes.get(a["outcome"], 0) + 1
            notes.append(
                f"freeze: SIGCONT {r['t_cont'] - r['t0']:.1f} s after SIGSTOP; {r['loser']} demoted "
                f"{r['demoted'] - r['t_cont']:.2f} s after SIGCONT; sent to {r['old']} during the freeze: "
                + "; ".join(f"{k}: {v[0]} at SIGCONT{v[1] - r['t_cont']:+.2f} s" for k, v in r["held"].items())
                + f"; fresh writes to {r['old']} after SIGCONT: {outcomes}"
            )
            acked_old = [a for a in r["old_writes"] if a["outcome"] == "acked"]
            if acked_old:
                notes.append(f"freeze: {len(acked_old)} writes acknowledged by {r['old']} after SIGCONT")

            def etcd_leader_lost():
                i = pc.etcd_leader()
                old = pc.leader()
                t0 = time.time()
                pc.stop_etcd_member(i)
                new_i = _wait("a new etcd leader", lambda: [x for x in [pc.etcd_leader()] if x not in (None, i)], 30)
                notes.append(f"etcd: leader etcd{i} killed, etcd{new_i[0]} leads {time.time() - t0:.2f} s later")
                pc.start_etcd_member(i)
                return {"old": old, "t0": t0, "new": pc.wait_for_leader()[0], "promoted": None}

            rows.append(_measure(pc, probe, etcd_leader_lost, "etcd's leader killed, then restarted"))
        tokens = {t for (t,) in pc.sql(pc.leader(), "SELECT token FROM failover_probe")}
        local = [a for a in probe.attempts if a["outcome"] == "local"]
        lost = probe.lost(tokens) + [a for a in r["old_writes"] if a["outcome"] == "acked" and a["token"] not in tokens]
        lost += [v for v in r["held"].values() if v[0] == "acked" and v[2] not in tokens]
        notes.append(
            f"probe: {len(probe.attempts)} writes through the multi-host string, {len(probe.acked())} acknowledged, "
            f"{len(local)} committed only locally (sync wait cancelled), {len(lost)} acknowledged and lost"
        )

        print(f"\n{'fault':40} {'old':6} {'new':6} {'promoted':>9} {'writable':>9} {'max gap':>8} {'healed':>7}")
        for r in rows:
            print(
                f"{r['fault']:40} {r['old']:6} {r['new']:6} "
                f"{'-' if r['to_promoted'] is None else format(r['to_promoted'], '.2f'):>8}s {r['to_write']:8.2f}s "
                f"{r['gap']:7.2f}s {r['healed']:6.1f}s"
            )
        print("(promoted: fault to Patroni's /primary saying so; writable: to the first INSERT acknowledged by the")
        print(" new primary through the multi-host string; max gap: longest time between two acknowledged writes;")
        print(" healed: to every replica streaming again and a synchronous standby listed)\n")
        print(*notes, sep="\n")
        # Without synchronous replication a failover may lose acknowledged writes: counted, not failed.
        assert not lost or not synchronous_mode, f"acknowledged writes lost: {lost[:5]}"
    print(f"\nself-check passed in {time.time() - began:.1f} s (removed everything)")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="A throwaway Patroni cluster; --self-check tries it.")
    p.add_argument("--self-check", action="store_true", required=True)
    p.add_argument("--async", dest="asynchronous", action="store_true", help="synchronous_mode off")
    p.add_argument("--dcs", default="etcd", choices=("etcd", "etcd3"), help="Patroni's DCS section (see the top)")
    a = p.parse_args()
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lambda signum, _frame: sys.exit(128 + signum))
    sys.exit(self_check(not a.asynchronous, a.dcs))
