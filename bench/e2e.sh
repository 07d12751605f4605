#!/usr/bin/env bash
# End to end (bench/e2e.py; method in bench/README.md, "End to end"): sendjobs' Rust,
# Python and Node.js workers and the peers' own libraries (procrastinate, pgmq's Python
# client, pg-boss, graphile-worker), each draining a backlog and serving a steady stream
# with a handler that does nothing, interleaved in one throwaway cluster on PostgreSQL 18.
# Builds and installs this tree's extension (release; SENDJOBS_SKIP_INSTALL=1 measures the
# one installed), builds the drivers, and installs the peers at pinned versions into
# target/e2e-cache/ (git-ignored; never committed). Writes bench/results/<name>/.
#
#   bash bench/e2e.sh [e2e.py options: --arms A,B --jobs 100000 --rate 200 --seconds 10
#                      --reps 3 --kinds drain,steady --name NAME]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
case " $* " in
  *" -h "*|*" --help "*) exec /usr/bin/python3 bench/e2e.py --help ;;
esac
[ -n "${SENDJOBS_SKIP_INSTALL:-}" ] || install_extension >/dev/null
export PATH="$HOME/.cargo/bin:$PATH"
cache=$PWD/target/e2e-cache
mkdir -p "$cache/npm"

echo "== e2e.sh: the Rust driver (release), the Node.js package, the peers"
CARGO_TARGET_DIR=$PWD/target/e2e-rust cargo build -q --release --manifest-path bench/e2e/rust/Cargo.toml
tarball=$(cd workers/node && npm pack --silent --pack-destination "$cache" | tail -n 1)   # builds it first
[ -f "$cache/npm/package.json" ] || echo '{ "name": "sendjobs-e2e", "private": true }' > "$cache/npm/package.json"
(cd "$cache/npm" && npm install --no-audit --no-fund --loglevel=error "$cache/$tarball" \
   pg@8.23.1 pg-boss@12.38.0 graphile-worker@0.17.3)
[ -x "$cache/venv/bin/python" ] || /usr/bin/python3 -m venv "$cache/venv"
rm -rf "$cache/python-source" && cp -r workers/python "$cache/python-source"
"$cache/venv/bin/pip" install -q --disable-pip-version-check "psycopg[binary]==3.3.9" procrastinate==3.10.0 \
  pgmq==1.1.4 "$cache/python-source"

/usr/bin/python3 tests/cluster.py run --name sendjobs-e2e \
  -c shared_buffers=256MB -c max_wal_size=8GB -c checkpoint_timeout=30min -c jit=off -c max_connections=300 \
  -- /usr/bin/python3 bench/e2e.py "$@"
