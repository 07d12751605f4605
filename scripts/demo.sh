#!/usr/bin/env bash
# The sendjobs demo, end to end: build and install the extension into the system
# PostgreSQL 15, start a throwaway cluster under /tmp, run scripts/demo.py against it
# (workers, a stand-in partner, faults, invariant checks), then stop and remove the
# cluster whatever happened. Exits with demo.py's exit code (0 = every invariant held).
#
#   bash scripts/demo.sh [demo.py options...]      e.g. --jobs 5000 --workers 12 --seed 7
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"

PGBIN=/usr/lib/postgresql/15/bin
PG_CONFIG="$PGBIN/pg_config"
PYTHON=/usr/bin/python3 # Debian's python: it sees the apt package python3-psycopg2

log() { printf '\n== demo.sh: %s\n' "$*"; }
is_root() { [ "$(id -u)" = 0 ]; }

log "setup (apt packages, cargo-pgrx)"
bash scripts/setup.sh

log "building and installing the extension into $("$PG_CONFIG" --version)"
if is_root; then
  cargo pgrx install --release --pg-config "$PG_CONFIG"
else
  cargo pgrx install --release --sudo --pg-config "$PG_CONFIG"
fi

# --- a throwaway cluster -------------------------------------------------------------
DEMO_DIR="$(mktemp -d /tmp/sendjobs-demo.XXXXXX)"
DATA="$DEMO_DIR/data"
PGLOG="$DEMO_DIR/postgres.log"

# Runs a command as the owner of the cluster: postgres when we are root (the server
# refuses to run as root), ourselves otherwise. From $DEMO_DIR, so that postgres is not
# left in a directory it may not enter.
as_owner() {
  if is_root; then
    (cd "$DEMO_DIR" && sudo -u postgres -- "$@")
  else
    (cd "$DEMO_DIR" && "$@")
  fi
}

cleanup() {
  local rc=$?
  set +e
  if [ -f "$DATA/postmaster.pid" ]; then
    log "stopping the demo cluster"
    as_owner "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
  fi
  if [ "$rc" != 0 ] && [ -f "$PGLOG" ]; then
    echo "-- server log, last errors ($PGLOG):"
    grep -E 'ERROR|FATAL|PANIC|terminated by signal' "$PGLOG" | tail -n 20 | cut -c 1-300
  fi
  rm -rf "$DEMO_DIR"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if is_root; then
  chown postgres:postgres "$DEMO_DIR"
fi

log "initdb in $DATA"
as_owner "$PGBIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null

# A free TCP port: bind port 0 and read back what the kernel chose.
PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"

log "starting PostgreSQL on 127.0.0.1:$PORT (socket dir $DEMO_DIR)"
as_owner "$PGBIN/pg_ctl" -D "$DATA" -l "$PGLOG" -w -t 60 start \
  -o "-p $PORT -k $DEMO_DIR -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
  >/dev/null

log "running scripts/demo.py $*"
set +e
"$PYTHON" scripts/demo.py --host 127.0.0.1 --port "$PORT" --user postgres --dbname postgres "$@"
rc=$?
set -e
exit "$rc"
