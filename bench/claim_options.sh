#!/usr/bin/env bash
# What a claim that can be a HOT update would buy (bench/claim_options.py): today's
# functions, their work in plain SQL, and one ordered scan of one index of live jobs,
# interleaved in one throwaway cluster. Measures the extension installed (release build).
#
#   bash bench/claim_options.sh [--clients 1,4] [--batches 10,100] [--standing 0,2000] [--duration 5] [--reps 3]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
/usr/bin/python3 tests/cluster.py run --name sendjobs-claim-options \
  -c shared_buffers=256MB -c max_wal_size=8GB -c checkpoint_timeout=30min -c jit=off \
  -- /usr/bin/python3 bench/claim_options.py "$@"
