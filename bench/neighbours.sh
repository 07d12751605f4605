#!/usr/bin/env bash
# The noisy-neighbour benchmark (bench/neighbours.py): queue b's wait while queue a has a
# burst, workers claiming from any queue, in one throwaway cluster. Builds and installs
# this tree (release profile) first; SENDJOBS_SKIP_INSTALL=1 measures the one installed.
# Writes bench/results/<name>/ (report.md, meta.json).
#
#   bash bench/neighbours.sh [neighbours.py options: --burst N --reps N --scenarios ...]
#   bash bench/neighbours.sh --help      # every option
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
case " $* " in
  *" -h "*|*" --help "*) exec /usr/bin/python3 bench/neighbours.py --help ;;
esac
if [ -z "${SENDJOBS_SKIP_INSTALL:-}" ]; then
  echo "== neighbours.sh: building and installing this tree (release profile)"
  install_extension >/dev/null
fi
/usr/bin/python3 tests/cluster.py run --name sendjobs-neighbours \
  -c shared_buffers=512MB -c max_wal_size=8GB -c jit=off \
  -- /usr/bin/python3 bench/neighbours.py "$@"
