#!/usr/bin/env bash
# The sendjobs benchmark: E (the extension) against F (the floor) and M (a minimal SQL
# queue), with pgbench, on a throwaway PostgreSQL cluster of the major of SENDJOBS_PG, 18
# by default (tests/cluster.py: created under /tmp, always removed); with --peers, then
# the same grid against pgmq and pg-boss (bench/peers.sh).
#
#   bash bench/run.sh              # the full grid (about 35 minutes; run it on a quiet machine)
#   bash bench/run.sh --peers      # the grid, then the peers (about 2 h more)
#   bash bench/run.sh --quick      # a tiny grid with 2-second runs (a few minutes), for development
#   bash bench/run.sh --help       # every option (durations, grid, arms)
#
# Writes bench/results/<name>/ (git-ignored): report.md, the plots, runs.csv, meta.json,
# sustained.csv and sql/; with --peers the peers' run in its peers/ folder. It first
# builds the extension with the release profile and installs it into that PostgreSQL
# (after scripts/setup.sh); SENDJOBS_SKIP_INSTALL=1 measures the one already installed.
# Options for this wrapper (everything else goes to bench/bench.py):
#   --name NAME      the run's folder under bench/results/ (default: full-<UTC date-time>,
#                    quick-<UTC date-time> with --quick)
#   --peers          then run bench/peers.sh with the grid options given here (--quick,
#                    --duration, --reps, --clients, --batches, --backlogs, --warmup)
#   --keep-going     write the report even if some runs failed or the grid was aborted
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
PYTHON=/usr/bin/python3 # Debian's python: it sees the apt packages python3-psycopg2 / -matplotlib

log() { printf '== run.sh: %s\n' "$*"; }

KEEP_GOING=0
PEERS=0
MODE=full
NAME=""
BENCH_ARGS=()
GRID_ARGS=()   # the options bench.py and peers.py share (common.add_grid_arguments)
while [ $# -gt 0 ]; do
  case "$1" in
    --name) NAME="$2"; shift 2 ;;
    --peers) PEERS=1; shift ;;
    --keep-going) KEEP_GOING=1; shift ;;
    --quick) MODE=quick; BENCH_ARGS+=("$1"); GRID_ARGS+=("$1"); shift ;;
    --duration|--reps|--clients|--batches|--backlogs|--backlog|--warmup)
      BENCH_ARGS+=("$1" "$2"); GRID_ARGS+=("$1" "$2"); shift 2 ;;
    -h|--help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      "$PYTHON" bench/bench.py --help | sed -n '/^options:/,$p'
      exit 0 ;;
    *) BENCH_ARGS+=("$1"); shift ;;
  esac
done
[ -n "$NAME" ] || NAME="$MODE-$(date -u +%Y%m%d-%H%M%S)"
RESULTS="$PWD/bench/results/$NAME"
COMMAND="bash bench/run.sh${BENCH_ARGS[*]:+ ${BENCH_ARGS[*]}}"

# --- what we need ------------------------------------------------------------------------
if [ "${SENDJOBS_SKIP_INSTALL:-0}" != 1 ]; then
  log "setup, then building (release) and installing the extension"
  install_extension >/dev/null
fi
need_apt=()
for pkg in python3-psycopg2 python3-matplotlib; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing ${need_apt[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
for tool in "$PGBIN/postgres" "$PGBIN/pgbench" "$PGBIN/initdb" "$PGBIN/pg_ctl"; do
  [ -x "$tool" ] || { echo "run.sh: $tool not found (scripts/setup.sh installs PostgreSQL $SENDJOBS_PG)" >&2; exit 2; }
done
if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/sendjobs.control" ]; then
  echo "run.sh: the sendjobs extension is not installed into PostgreSQL $SENDJOBS_PG (scripts/lib.sh install_extension)" >&2
  exit 2
fi
# Fail on a bad option before creating anything.
"$PYTHON" bench/bench.py --dry-run "${BENCH_ARGS[@]}" >/dev/null

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

log "starting the benchmark cluster (tests/cluster.py); results in bench/results/$NAME"
set +e
"$PYTHON" tests/cluster.py run --name sendjobs-bench --stop-mode immediate "${SETTINGS[@]}" -- \
  "$PYTHON" bench/bench.py --name "$NAME" --command "$COMMAND" --settings "$SETTINGS_TEXT" "${BENCH_ARGS[@]}"
rc=$?
set -e
if [ "$rc" != 0 ] && [ "$KEEP_GOING" = 0 ]; then
  log "the benchmark failed (exit $rc); no report written (--keep-going writes one from the partial data)"
  exit "$rc"
fi
# The cluster is gone by now: the report reads the results folder only.
"$PYTHON" bench/report.py "$RESULTS"
[ "$rc" = 0 ] || exit "$rc"

if [ "$PEERS" = 1 ]; then
  log "the peers (bash bench/peers.sh), the same grid; results in bench/results/$NAME/peers"
  bash bench/peers.sh --name "$NAME/peers" \
    --command "bash bench/run.sh${BENCH_ARGS[*]:+ ${BENCH_ARGS[*]}} --peers" "${GRID_ARGS[@]}"
fi
log "wrote bench/results/$NAME/"
