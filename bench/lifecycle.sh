#!/usr/bin/env bash
# The lifecycle benchmark (bench/lifecycle.py): throughput with and without 10,000,000
# finished jobs, enqueue with wake-ups on and off, and sendjobs_stats on a 1,000,000-job
# backlog, in one throwaway cluster. Builds and installs this tree (release profile)
# first; SENDJOBS_SKIP_INSTALL=1 measures the one installed. Writes
# bench/results/<name>/ (report.md, runs.csv, stats.csv, meta.json, sql/).
#
#   bash bench/lifecycle.sh [lifecycle.py options: --history N --duration S --reps N --name NAME]
#   bash bench/lifecycle.sh --help      # every option
#
# SENDJOBS_SERVER_SETTINGS adds server settings, e.g. "autovacuum_naptime=10s".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
case " $* " in
  *" -h "*|*" --help "*) exec /usr/bin/python3 bench/lifecycle.py --help ;;
esac
if [ -z "${SENDJOBS_SKIP_INSTALL:-}" ]; then
  echo "== lifecycle.sh: building and installing this tree (release profile)"
  install_extension >/dev/null
fi
settings=()
for setting in ${SENDJOBS_SERVER_SETTINGS:-}; do settings+=(-c "$setting"); done
/usr/bin/python3 tests/cluster.py run --name sendjobs-lifecycle \
  -c shared_buffers=512MB -c max_wal_size=8GB -c checkpoint_timeout=30min -c jit=off "${settings[@]}" \
  -- /usr/bin/python3 bench/lifecycle.py "$@"
