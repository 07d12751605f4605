#!/usr/bin/env bash
# Runs every test of sendjobs, each against its own throwaway cluster:
#   1. cargo fmt --check and cargo clippy -D warnings;
#   2. the in-database pgrx tests, with the model-based test (cargo pgrx test);
#   3. the upgrade test (tests/upgrade): a database of the previous release, upgraded
#      while a worker runs, then the SQL suites on an extension created through the
#      upgrade path;
#   4. the SQL suites on a fresh install (scripts/test-sql.sh: pg_regress and isolation),
#      and the SQL reference's examples (tests/reference/check.py);
#   5. the short chaos soak and the failover soak (scripts/soak.sh);
#   6. the workers (workers/): the Python and TypeScript ones, directly and through
#      PgBouncer; the Rust crate's tests; each against a throwaway cluster.
# Installs what is missing first (scripts/setup.sh). Works as root or as a sudo user.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

log=$(mktemp /tmp/sendjobs-test-log.XXXXXX)
pgrx_data=$(mktemp -u /tmp/sendjobs-pgrx-test.XXXXXX)   # created by the postgres user
cleanup() { rm -rf "$pgrx_data" "$log" 2>/dev/null || sudo rm -rf "$pgrx_data"; }
trap cleanup EXIT

echo "== format and lints =="
cargo fmt --check
cargo clippy --all-targets --features "pg15 pg_test" -- -D warnings
cargo clippy -p sendjobs-worker --all-targets -- -D warnings

echo "== pgrx tests (cargo pgrx test) =="
cargo pgrx test pg15 --runas postgres --pgdata "$pgrx_data" 2>&1 | tee -a "$log"

# The extension as users install it (no test schema), as a package: the upgrade test
# installs it by renames while a server runs.
echo "== building the extension package =="
package=target/test-package
rm -rf "$package"
package_extension "$package" debug
install_package "$package"

echo "== upgrade test =="
bash tests/upgrade/upgrade.sh "$package" 2>&1 | tee -a "$log"

echo "== SQL regression tests and isolation specs =="
bash scripts/test-sql.sh "fresh install" 2>&1 | tee -a "$log"

echo "== the SQL reference (docs/reference.md: every example run, nothing missing) =="
python3 tests/cluster.py run --name sendjobs-reference -- /usr/bin/python3 tests/reference/check.py 2>&1 | tee -a "$log"

echo "== chaos soak (short) and failover soak =="
SENDJOBS_SKIP_INSTALL=1 bash scripts/soak.sh --short
SENDJOBS_SKIP_INSTALL=1 bash scripts/soak.sh --failover

# The Rust worker's tests need a server: built first, then run against a throwaway
# cluster (its own database per test) with the package installed above, and some of them
# again through PgBouncer by tests/workers/check.py.
cargo test -p sendjobs-worker --no-run

# The example workers in Python and TypeScript, directly and through PgBouncer.
echo "== the Python and TypeScript workers, and the Rust one through PgBouncer and over TLS (tests/workers/check.py) =="
python3 tests/cluster.py run --name sendjobs-workers -- /usr/bin/python3 tests/workers/check.py 2>&1 | tee -a "$log"

echo "== the Rust worker (workers/rust/) =="
python3 tests/cluster.py run --name sendjobs-worker -- bash -c \
  'SENDJOBS_WORKER_TEST_DSN="host=$PGHOST port=$PGPORT user=$PGUSER" cargo test -p sendjobs-worker -- --include-ignored --skip a_worker_connects_over_tls --skip a_tls_worker_refuses_a_server_without_tls' \
  2>&1 | tee -a "$log"

# One closing line for the whole run: tests that passed across the suites (the upgrade
# scenario and each soak count as one test; a failing one has already stopped the script).
pgrx_passed=$(grep -oE 'test result: ok\. [0-9]+ passed' "$log" | awk '{s += $4} END {print s + 0}')
sql_passed=$(sed -nE 's/.*all ([0-9]+) regress and ([0-9]+) isolation tests passed.*/\1 \2/p' "$log" | awk '{s += $1 + $2} END {print s + 0}')
workers_passed=$(grep -cE '^   (python|node) (direct|pgbouncer|wakeup):' "$log" || true)
rust_pooled=$(sed -nE 's/^   rust pgbouncer: ([0-9]+) of .*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
reference_passed=$(grep -cE '^reference: [0-9]+ examples checked, 0 failures' "$log" || true)
echo "sendjobs: $((pgrx_passed + sql_passed + workers_passed + rust_pooled + reference_passed + 3)) passed, 0 failed"
