#!/usr/bin/env bash
# What a different finalize would buy (bench/finalize_options.py): keep (today), move
# (delete the job row, its history in the event) and delete (no event), interleaved in
# one throwaway cluster. Measures the extension installed (release build: bench/run.sh
# or scripts/lib.sh's install_extension).
#
#   bash bench/finalize_options.sh [--clients 1,4] [--batches 10,100] [--duration 5] [--reps 3]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
/usr/bin/python3 tests/cluster.py run --name sendjobs-finalize-options \
  -c shared_buffers=256MB -c max_wal_size=8GB -c checkpoint_timeout=30min -c jit=off \
  -- /usr/bin/python3 bench/finalize_options.py "$@"
