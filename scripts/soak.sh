#!/usr/bin/env bash
# The sendjobs chaos soak, end to end: build and install the extension into PostgreSQL 18
# or the major of SENDJOBS_PG (like demo.sh), then run the soak (the package tests/soak/, as
# `python3 -m soak.soak`) in a fresh folder under /tmp, where it makes its own cluster(s)
# with tests/cluster.py, injects faults (backend terminations during claim, send and
# finalize; worker kills and pauses; `pg_ctl -m immediate` crashes; or a failover to a
# synchronous standby) and checks the invariants of docs/contract.md at the end. Every
# cluster is stopped and the folder removed, pass or fail. Exits with the soak's code
# (0 = every invariant held, 1 = violations, 2 = did not finish / missed its targets).
#
#   bash scripts/soak.sh --short            about a minute; part of the test command
#   bash scripts/soak.sh --long             >= 100,000 jobs, 1,000 faults, 10 server crashes
#   bash scripts/soak.sh --failover         primary + synchronous standby, promoted mid-run
#   bash scripts/soak.sh patroni            three nodes under Patroni: each kind of failover once
#   bash scripts/soak.sh patroni-long       the same, 20 of each kind (docs/operations.md)
#   bash scripts/soak.sh --break VARIANT    a deliberately broken variant (must fail)
#   bash scripts/soak.sh --prove-checker    every broken variant; passes if each one is caught
#   bash scripts/soak.sh NAME               one soak by name: short, long, failover,
#                                           prove-checker, or a broken variant's name
#
# Options: any of the soak's (bash scripts/soak.sh --help), plus
#   --result-file FILE        also write the output to FILE, headed by date, command, machine
# Environment:
#   SENDJOBS_SKIP_INSTALL=1   use the extension already installed (no setup.sh, no cargo)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh

PYTHON=/usr/bin/python3 # Debian's python: it sees the apt package python3-psycopg2
export PYTHONPATH="$PWD/tests" # the package soak/ and cluster.py

log() { printf '== soak.sh: %s\n' "$*"; }

result_file=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --result-file) result_file="$2"; shift 2 ;;
    --result-file=*) result_file="${1#*=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done

if [ "${SENDJOBS_SKIP_INSTALL:-0}" = 1 ]; then
  log "SENDJOBS_SKIP_INSTALL=1: using the installed extension"
else
  log "setup, then building and installing the extension into $("$PG_CONFIG" --version)"
  install_extension
fi
if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/sendjobs.control" ]; then
  echo "soak.sh: the sendjobs extension is not installed into PostgreSQL $SENDJOBS_PG" >&2
  exit 2
fi

WORK="$(make_workdir sendjobs-soak)"

child=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local rc=$?
  set +e
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null   # the soak stops its clusters itself ...
    wait "$child" 2>/dev/null
  fi
  # ... and whatever is still running under $WORK is stopped here.
  while IFS= read -r pidfile; do
    as_owner "$PGBIN/pg_ctl" -D "$(dirname "$pidfile")" -m immediate -w stop >/dev/null 2>&1
  done < <(find "$WORK" -name postmaster.pid 2>/dev/null)
  rm -rf "$WORK"
  exit "$rc"
}
cleanup_on_exit cleanup

cmd=("$PYTHON" -B -u -m soak.soak --workdir "$WORK" "${args[@]}")
log "running python3 -m soak.soak ${args[*]}"
set +e
if [ -n "$result_file" ]; then
  {
    echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "command:  ${SENDJOBS_SKIP_INSTALL:+SENDJOBS_SKIP_INSTALL=$SENDJOBS_SKIP_INSTALL }bash scripts/soak.sh ${args[*]}"
    echo "git rev:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$( [ -n "$(git status --porcelain -- scripts tests/soak tests/cluster.py 2>/dev/null)" ] && echo " (+ uncommitted changes in scripts/ or tests/)")"
    echo "machine:  nproc = $(nproc); $(uname -srm)"
    free -h | sed 's/^/          /'
    echo
  } >"$result_file"
  "${cmd[@]}" > >(tee -a "$result_file") 2>&1 &
else
  "${cmd[@]}" &
fi
child=$!
wait "$child"
rc=$?
child=""
set -e
if [ -n "$result_file" ]; then
  sleep 0.5 # let tee flush
  echo "exit status: $rc" >>"$result_file"
fi
exit "$rc"
