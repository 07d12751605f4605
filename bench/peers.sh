#!/usr/bin/env bash
# sendjobs against pgmq and pg-boss, side by side in one throwaway cluster (bench/peers.py;
# method in bench/README.md, section "Peers"). Measures the sendjobs extension that is
# installed (build and install it first: bash bench/run.sh or scripts/test.sh do).
# Installs what is missing (apt: python3-psycopg2, nodejs, npm), fetches the peers at their
# pinned versions into target/peers-cache/ (git-ignored), then runs the grid.
#
#   bash bench/peers.sh [peers.py options: --duration 10 --reps 3 --clients 1,4,8
#                        --batches 1,10,100 --backlogs 10000,1000000 --report PATH]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh

need_apt=()
for pkg in postgresql-15 python3-psycopg2; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need_apt+=("$pkg")
done
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== peers.sh: installing ${need_apt[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/sendjobs.control" ]; then
  echo "peers.sh: the sendjobs extension is not installed; build and install it first" \
       "(bash bench/run.sh, or scripts/setup.sh then cargo pgrx install --release)" >&2
  exit 2
fi

/usr/bin/python3 bench/peers.py --prepare-only
/usr/bin/python3 tests/cluster.py run --name sendjobs-peers \
  -c shared_buffers=256MB -c max_wal_size=8GB -c checkpoint_timeout=30min -c jit=off \
  -- /usr/bin/python3 bench/peers.py "$@"
