"""pg-boss for bench/peers.py: its npm package, installed at run time into a cache folder
(never committed), asked for its SQL by bench/peers/pgboss.mjs:

  schema    `getConstructionPlans('pgboss')` (exported by the package): the schema SQL
  capture   a pg-boss client (no maintenance, no cron) creates the queue, then the bench
            records the statements it sends for `fetch(queue, { batchSize: n })`
            (plans.fetchNextJob) and for `complete(queue, jobs)` with the fetched jobs, as
            its worker settles them (plans.completeJobs, fenced by id:retry_count), with
            their parameters, and for `insert(queue, jobs)` (plans.insertJobs), which loads
            the backlog.
"""

import json
import os
import re
import shutil
import subprocess

PACKAGE = "pg-boss"
VERSION = "12.38.0"
# npm's dist.integrity of pg-boss-12.38.0.tgz; npm checks the tarball against it and
# records it in package-lock.json, which we compare with this.
INTEGRITY = "sha512-felA3fyPSJwWk5cb/VwAgnudCAzWEdgBjjf+eukXm8pExlwkhjdBbOMukMyG5s8uZHO6fZZZcaIaTa3oKpfSCg=="
QUEUE = "bench"
HERE = os.path.dirname(os.path.abspath(__file__))
HELPER = os.path.join(HERE, "pgboss.mjs")
MIN_NODE = 20  # the package says >= 22.12; its SQL builders and client run on 20 (checked here)


def node_version():
    out = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout
    return out.strip()


def fetch(cache):
    """`npm install pg-boss@VERSION` into cache/pg-boss-VERSION once; checks the integrity.
    Returns the folder and the versions of what npm installed with it."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise SystemExit("peers: node and npm are needed (bench/peers.sh installs them)")
    major = int(re.match(r"v(\d+)", node_version()).group(1))
    if major < MIN_NODE:
        raise SystemExit(f"peers: node {node_version()} is too old for pg-boss {VERSION}")
    root = os.path.join(cache, f"{PACKAGE}-{VERSION}")
    lock = os.path.join(root, "package-lock.json")
    pkg = os.path.join(root, "node_modules", PACKAGE, "package.json")
    ok = False
    if os.path.exists(pkg) and os.path.exists(lock):
        with open(pkg) as f:
            ok = json.load(f).get("version") == VERSION
    if not ok:
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                root,
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--loglevel=error",
                f"{PACKAGE}@{VERSION}",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    with open(lock) as f:
        packages = json.load(f)["packages"]
    got = packages.get(f"node_modules/{PACKAGE}", {})
    if got.get("version") != VERSION or got.get("integrity") != INTEGRITY:
        raise SystemExit(
            f"peers: {root}: {PACKAGE} {got.get('version')} with integrity "
            f"{got.get('integrity')}, expected {VERSION} {INTEGRITY}"
        )
    deps = {
        k[len("node_modules/") :]: v.get("version")
        for k, v in packages.items()
        if k.startswith("node_modules/") and k != f"node_modules/{PACKAGE}"
    }
    return root, deps


def schema_sql(root):
    return subprocess.run(["node", HELPER, root, "schema"], capture_output=True, text=True, check=True).stdout


def capture(root, env, batches):
    """Runs the client against the database in env (PGDATABASE): creates the queue and
    records insert, fetch and complete. Returns the helper's JSON."""
    p = subprocess.run(
        ["node", HELPER, root, "capture", QUEUE, ",".join(map(str, batches))], capture_output=True, text=True, env=env
    )
    if p.returncode != 0:
        raise SystemExit(f"peers: pg-boss capture failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout)


def _no_blank_lines(text):
    # pg-boss leaves whitespace-only lines where optional clauses are empty; pgbench reads
    # one SQL command over several lines, so they go (whitespace only: the same statement).
    return "\n".join(line for line in text.splitlines() if line.strip())


def fetch_script_text(cap, batch):
    """The fetch as the client sends it (no parameters: the queue's name and the batch are
    literals in the text), inside a CTE that hands pgbench the ids and the id:retry_count
    pairs the worker's complete passes back (attemptPairs)."""
    f = cap["fetch"][str(batch)]
    if f["values"]:
        raise SystemExit(f"peers: pg-boss fetch({batch}) has parameters {f['values']}")
    return (
        "WITH fetched AS (\n" + _no_blank_lines(f["text"]) + "\n)\n"
        "SELECT array_agg(id) AS ids, array_agg(id::text || ':' || \"retryCount\"::text) AS pairs\n"
        "  FROM fetched \\gset\n"
    )


def complete_script_text(cap, batch):
    """The complete as the client sends it: $1 the queue's name, $2 the ids, $3 the output
    (null: the worker's handler returned nothing), $4 the id:retry_count pairs. pgbench
    cannot bind a NULL, so $3 becomes NULL::jsonb."""
    c = cap["complete"][str(batch)]
    v = c["values"]
    if len(v) != 4 or v[0] != QUEUE or v[2] is not None or len(v[1]) != batch or len(v[3]) != batch:
        raise SystemExit(f"peers: pg-boss complete({batch}) parameters differ: {v}")
    names = {1: ":queue", 2: ":ids", 4: ":pairs"}

    def sub(m):
        n = int(m.group(1))
        if n == 3:
            if m.group(2) != "::jsonb":
                raise SystemExit("peers: pg-boss complete: $3 is not ::jsonb")
            return "NULL::jsonb"
        return names[n] + (m.group(2) or "")

    text = re.sub(r"\$(\d+)(::[a-z\[\]]+)?", sub, _no_blank_lines(c["text"]))
    return text + ";\n"


def insert_sql(cap):
    """The client's insert (plans.insertJobs): one parameter, the jobs as a JSON array."""
    i = cap["insert"]
    if len(i["values"]) != 1 or set(re.findall(r"\$(\d+)", i["text"])) != {"1"}:
        raise SystemExit("peers: pg-boss insert takes other parameters than one JSON array")
    return i["text"]
