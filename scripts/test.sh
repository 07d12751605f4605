#!/usr/bin/env bash
# Runs every test of sendjobs, each against its own throwaway cluster, on every supported
# PostgreSQL major (scripts/postgres-majors: 15, 16, 17 and 18):
#   1. cargo fmt --check, and cargo clippy -D warnings for each major; ruff (format and
#      lint) over the Python, shellcheck over the shell; the reference's checks that need no
#      server (src/'s floors among them); the TypeScript package is built by setup.sh with
#      tsc in strict mode;
#   2. on each major but the default: the in-database pgrx tests with the model-based test
#      (cargo pgrx test), and the SQL suites (scripts/test-sql.sh: pg_regress, the attack
#      suite among them, and the isolation specs) on a fresh install;
#   3. on 15 also the upgrade test (tests/upgrade): databases of the earlier releases,
#      which were built for 15 only, upgraded while a worker runs, then the SQL suites on
#      an extension created through the upgrade path;
#   4. pg_upgrade of a 15 database with jobs in every state to 18 (tests/upgrade/major.sh);
#   5. on the default major (18) everything: the pgrx tests, the SQL suites, the SQL
#      reference's examples (tests/reference/check.py), the short chaos soak and the
#      failover soak (scripts/soak.sh), and the workers (workers/): the Python and
#      TypeScript ones, directly and through PgBouncer, and the Rust crate's tests; the
#      operator's console in headless chromium (tests/console/run.sh).
# Installs what is missing first (scripts/setup.sh). Works as root or as a sudo user.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

log=$(mktemp /tmp/sendjobs-test-log.XXXXXX)
pgrx_data=$(mktemp -u /tmp/sendjobs-pgrx-test.XXXXXX)   # created by the postgres user
cleanup() { rm -rf "$pgrx_data"-* "$log" 2>/dev/null || sudo rm -rf "$pgrx_data"-*; }
trap cleanup EXIT
default=$(default_major)
others=$(all_majors | grep -vx "$default" | tr '\n' ' ')
started=$SECONDS
took() { echo "== took $((SECONDS - started)) s so far"; }

echo "== format and lints =="
cargo fmt --check
target/lint-venv/bin/ruff format --check --quiet .   # ruff.toml
target/lint-venv/bin/ruff check --quiet .
git ls-files -z '*.sh' | xargs -0 shellcheck -x
python3 tests/reference/check.py --static   # the map, trails, paths, src/'s floors
for major in $(all_majors); do
  cargo clippy --all-targets --no-default-features --features "pg$major pg_test" -- -D warnings
done
cargo clippy -p sendjobs-client --all-targets --all-features -- -D warnings
cargo clippy -p sendjobs-console --all-targets -- -D warnings

# pgrx tests (each major's own cluster), then the extension as users install it (no test
# schema), as a package, installed by renames into that major's PostgreSQL.
pgrx_tests() {
  echo "== PostgreSQL $1: pgrx tests (cargo pgrx test pg$1) =="
  cargo pgrx test "pg$1" --runas postgres --pgdata "$pgrx_data-$1" 2>&1 | tee -a "$log"
  echo "== PostgreSQL $1: building and installing the extension package =="
  local package=target/test-package-$1
  rm -rf "$package"
  SENDJOBS_PG=$1 bash -c 'source scripts/lib.sh && package_extension "$0" debug && install_package "$0"' "$package"
}

for major in $others; do
  pgrx_tests "$major"
  if [ "$major" = 15 ]; then
    echo "== PostgreSQL 15: upgrade test (the earlier releases were built for 15 only) =="
    SENDJOBS_PG=15 bash tests/upgrade/upgrade.sh target/test-package-15 2>&1 | tee -a "$log"
  fi
  echo "== PostgreSQL $major: SQL regression tests and isolation specs =="
  SENDJOBS_PG=$major bash scripts/test-sql.sh "PostgreSQL $major, fresh install" 2>&1 | tee -a "$log"
  took
done

echo "== PostgreSQL $default (the default): everything =="
pgrx_tests "$default"
bash scripts/test-sql.sh "PostgreSQL $default, fresh install" 2>&1 | tee -a "$log"

echo "== pg_upgrade from 15 to $default (tests/upgrade/major.sh) =="
bash tests/upgrade/major.sh target/test-package-15 2>&1 | tee -a "$log"

echo "== the SQL reference (docs/reference.md: every example run, nothing missing) =="
python3 tests/cluster.py run --name sendjobs-reference -- /usr/bin/python3 tests/reference/check.py 2>&1 | tee -a "$log"

echo "== a finalize whose answer was lost, made again (tests/answers/lost_answer.py) =="
python3 tests/cluster.py run --name sendjobs-answers -- /usr/bin/python3 tests/answers/lost_answer.py 2>&1 | tee -a "$log"

echo "== chaos soak (short) and failover soak =="
SENDJOBS_SKIP_INSTALL=1 bash scripts/soak.sh --short
SENDJOBS_SKIP_INSTALL=1 bash scripts/soak.sh --failover
took

echo "== failover under Patroni: a switchover, a SIGKILL, a freeze, etcd's members lost (tests/soak/failovers.py) =="
SENDJOBS_SKIP_INSTALL=1 bash scripts/soak.sh patroni
echo "== a switchover to a server whose clock is 30 s behind (tests/failover/clock_step.py) =="
/usr/bin/python3 tests/failover/clock_step.py --offsets=-30 2>&1 | tee -a "$log"
took

echo "== failover: the fence across an asynchronous promotion (tests/failover/async_promotion.py) =="
/usr/bin/python3 tests/failover/async_promotion.py 2>&1 | tee -a "$log"

# The Rust worker's tests need a server: built first, then run against a throwaway
# cluster (its own database per test) with the package installed above, and some of them
# again through PgBouncer by tests/workers/check.py.
cargo test -p sendjobs-client --all-features --no-run

# The example workers in Python and TypeScript, directly and through PgBouncer.
echo "== the Python and TypeScript workers, and the Rust one through PgBouncer and over TLS (tests/workers/check.py) =="
python3 tests/cluster.py run --name sendjobs-workers -- /usr/bin/python3 tests/workers/check.py 2>&1 | tee -a "$log"

echo "== the Rust worker (workers/rust/) =="
# shellcheck disable=SC2016  # $PGHOST and $PGPORT are the cluster's, set for the inner shell
python3 tests/cluster.py run --name sendjobs-worker -- bash -c \
  'SENDJOBS_WORKER_TEST_DSN="host=$PGHOST port=$PGPORT user=$PGUSER" cargo test -p sendjobs-client --all-features -- --include-ignored --skip a_worker_connects_over_tls --skip a_tls_worker_refuses_a_server_without_tls' \
  2>&1 | tee -a "$log"

# The operator's console (console/) in headless chromium, against the package installed above.
echo "== the operator's console in a browser (tests/console/run.sh) =="
bash tests/console/run.sh 2>&1 | tee -a "$log"
took

# One closing line for the whole run: tests that passed across the suites and majors (the
# upgrade scenarios and each soak count as one test; a failing one has already stopped
# the script).
pgrx_passed=$(grep -oE 'test result: ok\. [0-9]+ passed' "$log" | awk '{s += $4} END {print s + 0}')
sql_passed=$(sed -nE 's/.*all ([0-9]+) regress and ([0-9]+) isolation tests passed.*/\1 \2/p' "$log" | awk '{s += $1 + $2} END {print s + 0}')
workers_passed=$(grep -cE '^   (python|node) (direct|pgbouncer|wakeup|rate|package|client):' "$log" || true)
rust_pooled=$(sed -nE 's/^   rust pgbouncer: ([0-9]+) of .*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
reference_passed=$(grep -cE '^reference: [0-9]+ examples checked, 0 failures' "$log" || true)
answers_passed=$(sed -nE 's/^lost_answer: ([0-9]+) cases passed/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
console_passed=$(grep -c '^console: the browser test passed' "$log" || true)
failover_passed=$(grep -cE '^async promotion to timeline|^clock_step: every lease|^   (python|node|rust) under Patroni' "$log" || true)
upgrades_passed=$(grep -cE 'the restored database keeps every job|the claims of before finalize with their generations' "$log" || true)
echo "sendjobs: $((pgrx_passed + sql_passed + workers_passed + rust_pooled + reference_passed + answers_passed + upgrades_passed + console_passed + failover_passed + 2)) passed, 0 failed"
