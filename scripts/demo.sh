#!/usr/bin/env bash
# The sendjobs demo, end to end: build and install the extension into PostgreSQL 18 (or
# the major of SENDJOBS_PG: scripts/postgres-majors), then run the demo (the package tests/soak/, as `python3 -m soak.demo`:
# workers, a stand-in partner, faults, invariant checks) against a throwaway cluster
# under /tmp that tests/cluster.py starts, and stops and removes whatever happened.
# Exits with the demo's exit code (0 = every invariant held).
#
#   bash scripts/demo.sh [demo options...]      e.g. --jobs 5000 --workers 12 --seed 7
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh

PYTHON=/usr/bin/python3 # Debian's python: it sees the apt package python3-psycopg2
export PYTHONPATH="$PWD/tests" # the package soak/ and cluster.py

log() { printf '\n== demo.sh: %s\n' "$*"; }

log "setup, then building and installing the extension into $("$PG_CONFIG" --version)"
install_extension

# Speed over durability for the demo (no crash here); commit times for the checker's
# ordering keys; PGHOST, PGPORT, PGUSER and PGDATABASE tell the demo where the cluster is.
log "running python3 -m soak.demo $* against a throwaway cluster"
rc=0
"$PYTHON" -B tests/cluster.py run --name sendjobs-demo \
  -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 \
  -c track_commit_timestamp=on -- "$PYTHON" -B -m soak.demo "$@" || rc=$?
log "to watch a database like this one in a browser (the demo's cluster is gone now):
   SENDJOBS_CONSOLE_TOKEN=\$(openssl rand -hex 24) \\
   SENDJOBS_CONSOLE_DATABASE_URL=\"host=/var/run/postgresql user=<a monitor role> dbname=<yours>\" \\
       cargo run -p sendjobs-console -- --listen 127.0.0.1:8090
   then open http://127.0.0.1:8090 (docs/console.md)"
exit "$rc"
