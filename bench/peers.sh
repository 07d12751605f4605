#!/usr/bin/env bash
# sendjobs against pgmq and pg-boss, side by side in one throwaway cluster (bench/peers.py;
# method in bench/README.md, section "The peers"). Measures the sendjobs extension that is
# installed (build and install it first: bash bench/run.sh or scripts/test.sh do; bash
# bench/run.sh --peers runs this after its grid). Installs what is missing (apt:
# python3-psycopg2, nodejs, npm), fetches the peers at their pinned versions into
# target/peers-cache/ (git-ignored), then runs the grid. Writes bench/results/<name>/
# (report.md, runs.csv, meta.json).
#
#   bash bench/peers.sh [peers.py options: --quick --duration 10 --reps 3 --clients 1,4,8
#                        --batches 1,10,100 --backlogs 10000,1000000 --name NAME]
#   bash bench/peers.sh --waits ...   # and what the backends wait for (pg_stat_activity)
#   bash bench/peers.sh --instructions [--batches 1,10,100 --reps 3 --backlogs 10000]
#                                     # instructions per job of each arm (callgrind)
#   bash bench/peers.sh --help      # every option
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
case " $* " in
  *" -h "*|*" --help "*) exec /usr/bin/python3 bench/peers.py --help ;;
esac

need_apt=()
dpkg-query -W -f='${Status}' python3-psycopg2 2>/dev/null | grep -q 'install ok installed' || need_apt+=(python3-psycopg2)
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== peers.sh: installing ${need_apt[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
for tool in "$PGBIN/postgres" "$PGBIN/pgbench" "$PGBIN/psql"; do
  [ -x "$tool" ] || { echo "peers.sh: $tool not found (scripts/setup.sh installs PostgreSQL $SENDJOBS_PG)" >&2; exit 2; }
done
if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/sendjobs.control" ]; then
  echo "peers.sh: the sendjobs extension is not installed into PostgreSQL $SENDJOBS_PG; build and install it" \
       "first (bash bench/run.sh, or scripts/lib.sh's install_extension)" >&2
  exit 2
fi

/usr/bin/python3 bench/peers.py --prepare-only
# --instructions: the server runs under callgrind, which writes each backend's counts to
# a folder of its own (scripts/lib.sh), without autovacuum and parallel workers (which
# would do their work among the runs).
under=()
case " $* " in
  *" --instructions "*)
    counts=$(callgrind_folder peers)
    # shellcheck disable=SC2016  # expanded when the trap runs
    cleanup_on_exit 'rm -rf "$counts"'
    under=(--callgrind "$counts" -c autovacuum=off -c max_parallel_maintenance_workers=0
           -c max_parallel_workers_per_gather=0)
    set -- "$@" --callgrind-dir "$counts" ;;
esac
/usr/bin/python3 tests/cluster.py run --name sendjobs-peers "${under[@]}" \
  -c shared_buffers=256MB -c max_wal_size=8GB -c checkpoint_timeout=30min -c jit=off \
  -- /usr/bin/python3 bench/peers.py "$@"
