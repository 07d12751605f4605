#!/usr/bin/env bash
# Would the split design meet the history target (bench/split_history.py)? Today's
# layout and split, each with and without a finished history, in plain SQL, interleaved
# in one throwaway cluster with the settings of bench/lifecycle.sh and
# autovacuum_naptime 10 s (as the README recommends for a busy queue).
#
#   bash bench/split_history.sh [--history 10000000] [--backlog 3000000] [--points 1x1,1x10,4x10] [--duration 15] [--reps 5]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
/usr/bin/python3 tests/cluster.py run --name sendjobs-split-history \
  -c shared_buffers=512MB -c max_wal_size=8GB -c checkpoint_timeout=30min -c jit=off -c autovacuum_naptime=10s \
  -- /usr/bin/python3 bench/split_history.py "$@"
