#!/usr/bin/env bash
# Runs every test of sendjobs: the in-database pgrx tests (incl. the model-based test),
# the SQL regression tests and the isolation specs (scripts/test-sql.sh), and the short
# chaos and failover soaks (scripts/soak.sh), each against its own throwaway cluster.
# Installs what is missing first (scripts/setup.sh). Works as root or as a sudo user.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config

log=$(mktemp /tmp/sendjobs-test-log.XXXXXX)
pgrx_data=$(mktemp -u /tmp/sendjobs-pgrx-test.XXXXXX)   # created by the postgres user
cleanup() { rm -rf "$pgrx_data" "$log" 2>/dev/null || sudo rm -rf "$pgrx_data"; }
trap cleanup EXIT

sudo_flag=()
[ "$(id -u)" = 0 ] || sudo_flag=(--sudo)

echo "== pgrx tests (cargo pgrx test) =="
cargo pgrx test pg15 --runas postgres --pgdata "$pgrx_data" 2>&1 | tee -a "$log"

echo "== installing the extension (no test schema) =="
cargo pgrx install "${sudo_flag[@]}" --pg-config "$PG_CONFIG" >/dev/null

echo "== SQL regression tests and isolation specs =="
bash scripts/test-sql.sh 2>&1 | tee -a "$log"

echo "== chaos soak (short) and failover soak =="
SENDJOBS_SKIP_INSTALL=1 bash scripts/soak.sh --short
SENDJOBS_SKIP_INSTALL=1 bash scripts/soak.sh --failover

# One closing line for the whole run: tests that passed across the suites (each soak
# counts as one test; a failing soak has already stopped the script).
pgrx_passed=$(grep -oE 'test result: ok\. [0-9]+ passed' "$log" | awk '{s += $4} END {print s + 0}')
sql_passed=$(sed -nE 's/.*all ([0-9]+) regress and ([0-9]+) isolation tests passed.*/\1 \2/p' "$log" | awk '{print $1 + $2}')
echo "sendjobs: $((pgrx_passed + sql_passed + 2)) passed, 0 failed"
