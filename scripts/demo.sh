#!/usr/bin/env bash
# The sendjobs demo, end to end: build and install the extension into the system
# PostgreSQL 15, start a throwaway cluster under /tmp, run scripts/demo.py against it
# (workers, a stand-in partner, faults, invariant checks), then stop and remove the
# cluster whatever happened. Exits with demo.py's exit code (0 = every invariant held).
#
#   bash scripts/demo.sh [demo.py options...]      e.g. --jobs 5000 --workers 12 --seed 7
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh

PYTHON=/usr/bin/python3 # Debian's python: it sees the apt package python3-psycopg2

log() { printf '\n== demo.sh: %s\n' "$*"; }

log "setup, then building and installing the extension into $("$PG_CONFIG" --version)"
install_extension

# --- a throwaway cluster -------------------------------------------------------------
WORK="$(make_workdir sendjobs-demo)"
DATA="$WORK/data"
PGLOG="$WORK/postgres.log"

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
  rm -rf "$WORK"
  exit "$rc"
}
cleanup_on_exit cleanup

log "initdb in $DATA"
as_owner "$PGBIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null

PORT="$(free_port)"
log "starting PostgreSQL on 127.0.0.1:$PORT (socket dir $WORK)"
as_owner "$PGBIN/pg_ctl" -D "$DATA" -l "$PGLOG" -w -t 60 start \
  -o "-p $PORT -k $WORK -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
  >/dev/null

log "running scripts/demo.py $*"
set +e
"$PYTHON" scripts/demo.py --host 127.0.0.1 --port "$PORT" --user postgres --dbname postgres "$@"
rc=$?
set -e
exit "$rc"
