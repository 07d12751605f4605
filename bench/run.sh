#!/usr/bin/env bash
# The sendjobs benchmark suite: E (the extension) vs S (the same SQL, client-prepared)
# vs P (the same logic in PL/pgSQL) vs F (the floor), with pgbench, on a throwaway
# PostgreSQL cluster of the major of SENDJOBS_PG, 18 by default (tests/cluster.py: created
# under /tmp, always removed).
#
#   bash bench/run.sh              # the full grid (about 55 minutes; run it on a quiet machine)
#   bash bench/run.sh --quick      # a tiny grid with 2-second runs (a few minutes), for development
#   bash bench/run.sh --help       # every option (durations, grid, arms, output paths)
#
# Writes BENCHMARKS.md (repo root), bench/plots/*.png and the raw data under
# bench/results/<full|quick>/ (runs.csv, meta.json, sql/). It first builds the extension
# with the release profile and installs it into that PostgreSQL (after
# scripts/setup.sh); SENDJOBS_SKIP_INSTALL=1 measures the one already installed.
# Options for this wrapper (everything else goes to bench/bench.py):
#   --report PATH    the report to write       (default: BENCHMARKS.md)
#   --plots DIR      where the PNGs go         (default: bench/plots)
#   --keep-going     write the report even if some runs failed or the grid was aborted
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO="$PWD"
source scripts/lib.sh
PYTHON=/usr/bin/python3 # Debian's python: it sees the apt packages python3-psycopg2 / -matplotlib

log() { printf '== run.sh: %s\n' "$*"; }

REPORT="$REPO/BENCHMARKS.md"
PLOTS="$REPO/bench/plots"
KEEP_GOING=0
MODE=full
BENCH_ARGS=()
RESULTS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --report) REPORT="$(realpath -m "$2")"; shift 2 ;;
    --plots) PLOTS="$(realpath -m "$2")"; shift 2 ;;
    --keep-going) KEEP_GOING=1; shift ;;
    --quick) MODE=quick; BENCH_ARGS+=("$1"); shift ;;
    --results) RESULTS="$(realpath -m "$2")"; shift 2 ;;
    -h|--help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      "$PYTHON" bench/bench.py --host x --port 0 --help | sed -n '/^options:/,$p'
      exit 0 ;;
    *) BENCH_ARGS+=("$1"); shift ;;
  esac
done
[ -n "$RESULTS" ] || RESULTS="$REPO/bench/results/$MODE"
COMMAND="bash bench/run.sh${BENCH_ARGS[*]:+ ${BENCH_ARGS[*]}}"

# --- what we need ------------------------------------------------------------------------
if [ "${SENDJOBS_SKIP_INSTALL:-0}" != 1 ]; then
  log "setup, then building (release) and installing the extension"
  install_extension >/dev/null
fi
need_apt=()
for pkg in postgresql-15 python3-psycopg2 python3-matplotlib; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing ${need_apt[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
for tool in "$PGBIN/postgres" "$PGBIN/pgbench" "$PGBIN/initdb" "$PGBIN/pg_ctl"; do
  [ -x "$tool" ] || { echo "run.sh: $tool not found" >&2; exit 2; }
done
if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/sendjobs.control" ]; then
  echo "run.sh: the sendjobs extension is not installed into PostgreSQL $SENDJOBS_PG (scripts/lib.sh install_extension)" >&2
  exit 2
fi
# Fail on a bad option before creating anything.
"$PYTHON" bench/bench.py --host x --port 0 --dry-run "${BENCH_ARGS[@]}" >/dev/null

# --- a throwaway cluster -----------------------------------------------------------------
# tests/cluster.py creates it, runs bench.py against it, then stops it and removes its
# folder, pass or fail (and prints the server log's last errors when bench.py failed).
# A signal that ends this script waits for that cleanup: bash runs these traps once its
# foreground child (cluster.py, which forwards the signal to bench.py) has exited.
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# The fixed settings (after cluster.py's own, which they override); the report lists them
# as the server reports them.
SETTINGS=(
  -c listen_addresses=127.0.0.1
  -c max_connections=50
  -c shared_buffers=256MB
  -c fsync=on
  -c synchronous_commit=on
  -c full_page_writes=on
  -c max_wal_size=8GB            # checkpoints come from the harness (one before each run)
  -c checkpoint_timeout=30min
  -c autovacuum=on               # defaults otherwise; the harness also VACUUMs before each run
  -c jit=off                     # no JIT compile noise in the per-run bookkeeping queries
  -c log_checkpoints=off
)
SETTINGS_TEXT="$(printf '%s ' "${SETTINGS[@]}" | sed 's/ -c / /g; s/^-c //; s/ $//')"

log "starting the benchmark cluster (tests/cluster.py)"
set +e
# bench.py's --host/--port come from cluster.py's PGHOST/PGPORT, expanded by the inner
# shell; the other arguments pass through unchanged as "$@".
"$PYTHON" tests/cluster.py run --name sendjobs-bench --stop-mode immediate "${SETTINGS[@]}" -- \
  bash -c 'exec "$0" bench/bench.py --host "$PGHOST" --port "$PGPORT" "$@"' \
  "$PYTHON" --results "$RESULTS" --command "$COMMAND" --settings "$SETTINGS_TEXT" "${BENCH_ARGS[@]}"
rc=$?
set -e
if [ "$rc" != 0 ] && [ "$KEEP_GOING" = 0 ]; then
  log "the benchmark failed (exit $rc); no report written (--keep-going writes one from the partial data)"
  exit "$rc"
fi
# The cluster is gone by now: the report reads the results folder only.
"$PYTHON" bench/report.py --results "$RESULTS" --report "$REPORT" --plots "$PLOTS"
exit "$rc"
