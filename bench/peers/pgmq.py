"""pgmq for bench/peers.py: its published Rust crate, fetched at run time (never committed).

The crate embeds pgmq's SQL (`src/install/embedded/sql/pgmq.sql`, the init script of its
SQL-only install, at the version its `pgmq.control` names) and carries the client
`PGMQueueExt` (`src/pg_ext/mod.rs`), whose methods send one statement each. The bench
takes, by the method's name, the statement its client sends:

  read     `read_batch_with_cxn`     (queue, visibility timeout in seconds, n messages)
  delete   `delete_batch_with_cxn`   (queue, msg_id array)
  archive  `archive_batch_with_cxn`  (queue, msg_id array)

and stops if one of them is missing or takes other parameters.
"""

import glob
import hashlib
import json
import os
import re
import tarfile
import urllib.request

CRATE = "pgmq"
VERSION = "0.33.7"
SHA256 = "50eb534c14338bf3c0048606af7ea9fbf32f674debe392f9267eeeddf0582d1d"
QUEUE = "bench"
METHODS = {
    # method of PGMQueueExt -> the parameters it binds, in order
    "read": ("read_batch_with_cxn", ["queue", "vt", "batch"]),
    "delete": ("delete_batch_with_cxn", ["queue", "ids"]),
    "archive": ("archive_batch_with_cxn", ["queue", "ids"]),
}


def crate_url():
    """The download address the way cargo builds it, from the `dl` of the crates.io index
    configuration that cargo keeps on this machine (PGMQ_CRATE_DL overrides it)."""
    dl = os.environ.get("PGMQ_CRATE_DL")
    if not dl:
        home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
        for cfg in sorted(glob.glob(os.path.join(home, "registry", "index", "index.crates.io-*", "config.json"))):
            with open(cfg) as f:
                dl = json.load(f).get("dl")
            if dl:
                break
    if not dl:
        raise SystemExit(
            "peers: no crates.io index configuration from cargo on this machine "
            "(run scripts/setup.sh once), or set PGMQ_CRATE_DL"
        )
    if any(m in dl for m in ("{crate}", "{version}", "{prefix}", "{lowerprefix}", "{sha256-checksum}")):
        return dl.replace("{crate}", CRATE).replace("{version}", VERSION).replace("{sha256-checksum}", SHA256)
    return f"{dl.rstrip('/')}/{CRATE}/{VERSION}/download"


def fetch(cache):
    """Downloads the crate once into `cache`, checks its sha256, extracts it. Returns the
    extracted folder."""
    os.makedirs(cache, exist_ok=True)
    root = os.path.join(cache, f"{CRATE}-{VERSION}")
    archive = root + ".crate"
    if not os.path.exists(archive):
        req = urllib.request.Request(crate_url(), headers={"User-Agent": "sendjobs-bench"})
        with urllib.request.urlopen(req, timeout=120) as r:
            data = r.read()
        with open(archive + ".part", "wb") as f:
            f.write(data)
        os.replace(archive + ".part", archive)
    with open(archive, "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    if got != SHA256:
        os.remove(archive)
        raise SystemExit(f"peers: {archive}: sha256 {got}, expected {SHA256}; removed it")
    marker = os.path.join(root, ".extracted")
    if not os.path.exists(marker):
        with tarfile.open(archive, "r:gz") as t:
            for m in t.getmembers():  # the crate's own folder only
                if (
                    not (m.name == f"{CRATE}-{VERSION}" or m.name.startswith(f"{CRATE}-{VERSION}/"))
                    or not (m.isfile() or m.isdir())
                    or ".." in m.name.split("/")
                ):
                    raise SystemExit(f"peers: unexpected member {m.name!r} in {archive}")
            t.extractall(cache)
        open(marker, "w").close()
    return root


def sql_version(root):
    with open(os.path.join(root, "src", "install", "embedded", "pgmq.control")) as f:
        return re.search(r"default_version\s*=\s*'([^']+)'", f.read()).group(1)


def install_script(root):
    return os.path.join(root, "src", "install", "embedded", "sql", "pgmq.sql")


def client_statements(root):
    """{op: (statement text, [parameter names])} from PGMQueueExt's methods."""
    path = os.path.join(root, "src", "pg_ext", "mod.rs")
    with open(path) as f:
        src = f.read()
    out = {}
    for op, (method, params) in METHODS.items():
        m = re.search(r"pub async fn " + re.escape(method) + r"\b", src)
        if not m:
            raise SystemExit(f"peers: pgmq {VERSION}: no method {method} in {path}")
        body = src[m.end() :]
        body = body[: body.find("\n    pub ")]  # up to the next method
        q = re.search(r'sqlx::query\(\s*(?:r#"(.*?)"#|"((?:[^"\\]|\\.)*)")', body, re.S)
        if not q:
            raise SystemExit(f"peers: pgmq {VERSION}: no sqlx::query in {method}")
        text = q.group(1) if q.group(1) is not None else q.group(2)
        nparams = len(set(re.findall(r"\$(\d+)", text)))
        binds = len(re.findall(r"\.bind\(", body))
        if op == "read":  # bound in read_batch_common: queue, vt, qty
            binds = 3 if "read_batch_common(query, queue_name, vt, qty" in body else -1
        if nparams != len(params) or binds != len(params):
            raise SystemExit(
                f"peers: pgmq {VERSION}: {method} takes {nparams} parameters "
                f"({binds} bound), expected {len(params)}: {text}"
            )
        out[op] = (text, params)
    return out


def pgbench_text(text, params, values):
    """The client's statement with $n replaced by pgbench variables (values[name] is the
    variable's name) so that `pgbench -M prepared` binds them as parameters again."""

    def sub(m):
        return ":" + values[params[int(m.group(1)) - 1]]

    return re.sub(r"\$(\d+)", sub, text)
