#!/usr/bin/env bash
# The SQL-level test suites of sendjobs, against a throwaway cluster (tests/cluster.py):
#   - pg_regress            tests/pg_regress/sql/*.sql   -> tests/pg_regress/expected/*.out
#   - pg_isolation_regress  tests/isolation/specs/*.spec -> tests/isolation/expected/*.out
# The extension must already be installed into the PostgreSQL of SENDJOBS_PG (default 18,
# scripts/lib.sh; scripts/test.sh installs it). Exits non-zero when any test fails (regression.diffs is printed);
# SENDJOBS_SQLTEST_RESULTS=DIR keeps the actual output of failing tests, to review and bless;
# SENDJOBS_SQLTEST_ONLY=REGEX runs only the tests whose names match (grep -E).
#
#   bash scripts/test-sql.sh [LABEL]     LABEL names the run in its closing line
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh

# Without a cluster: start one, and run this script again inside it.
if [ -z "${SENDJOBS_CLUSTER_DIR:-}" ]; then
  exec /usr/bin/python3 tests/cluster.py run --name sendjobs-sqltest -- bash "$0" "$@"
fi
label=${1:-sql}

PGXS_TEST="$("$PG_CONFIG" --pkglibdir)/pgxs/src/test"
PG_REGRESS="$PGXS_TEST/regress/pg_regress"
PG_ISOLATION_REGRESS="$PGXS_TEST/isolation/pg_isolation_regress"

log() { printf '== test-sql.sh: %s\n' "$*"; }

for tool in "$PG_REGRESS" "$PG_ISOLATION_REGRESS"; do
  if [ ! -x "$tool" ]; then
    echo "test-sql.sh: $tool not found (bash scripts/setup.sh installs it)" >&2
    exit 2
  fi
done
if [ ! -f "$("$PG_CONFIG" --sharedir)/extension/sendjobs.control" ]; then
  echo "test-sql.sh: the sendjobs extension is not installed into PostgreSQL $SENDJOBS_PG" >&2
  exit 2
fi

# Outputs go to the cluster's folder, removed with it.
OUT="$SENDJOBS_CLUSTER_DIR/sqltest"
mkdir -p "$OUT"

# Test names: the files in a directory, sorted, without their extension (those matching
# SENDJOBS_SQLTEST_ONLY, when set).
names() {
  local dir=$1 ext=$2
  find "$dir" -maxdepth 1 -type f -name "*.$ext" -printf '%f\n' | sed "s/\.$ext\$//" | LC_ALL=C sort |
    grep -E "${SENDJOBS_SQLTEST_ONLY:-.}" || true
}

# A fresh database as pg_regress makes one for its own instance (its --use-existing mode
# makes none): template0, C locale, and the settings its expected output assumes.
create_database() {
  local db=$1
  PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d postgres \
    -c "DROP DATABASE IF EXISTS \"$db\"" \
    -c "CREATE DATABASE \"$db\" TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'" \
    -c "ALTER DATABASE \"$db\" SET lc_messages TO 'C'; ALTER DATABASE \"$db\" SET lc_monetary TO 'C';
        ALTER DATABASE \"$db\" SET lc_numeric TO 'C'; ALTER DATABASE \"$db\" SET lc_time TO 'C';
        ALTER DATABASE \"$db\" SET bytea_output TO 'hex';
        ALTER DATABASE \"$db\" SET timezone_abbreviations TO 'Default';"
}

failed=()

# run_suite SUITE RUNNER INPUTDIR TESTS...
run_suite() {
  local suite=$1 runner=$2 inputdir=$3
  shift 3
  local out="$OUT/$suite"
  mkdir -p "$out"
  create_database "sendjobs_$suite"
  log "$suite: $*"
  if "$runner" --use-existing --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" \
    --dbname="sendjobs_$suite" --inputdir="$inputdir" --outputdir="$out" \
    --bindir="$PGBIN" "$@"; then
    return 0
  fi
  failed+=("$suite")
  if [ -n "${SENDJOBS_SQLTEST_RESULTS:-}" ] && [ -d "$out/results" ]; then
    mkdir -p "$SENDJOBS_SQLTEST_RESULTS" && cp "$out"/results/*.out "$SENDJOBS_SQLTEST_RESULTS"/
  fi
  if [ -f "$out/regression.diffs" ]; then
    echo "---- $suite: regression.diffs"
    cat "$out/regression.diffs"
  fi
}

mapfile -t regress_tests < <(names tests/pg_regress/sql sql)
mapfile -t isolation_tests < <(names tests/isolation/specs spec)
if [ $((${#regress_tests[@]} + ${#isolation_tests[@]})) -eq 0 ] ||
   { [ -z "${SENDJOBS_SQLTEST_ONLY:-}" ] && { [ ${#regress_tests[@]} -eq 0 ] || [ ${#isolation_tests[@]} -eq 0 ]; }; }; then
  echo "test-sql.sh: no tests found in tests/pg_regress/sql or tests/isolation/specs" >&2
  exit 2
fi

[ ${#regress_tests[@]} -eq 0 ] || run_suite regress "$PG_REGRESS" tests/pg_regress "${regress_tests[@]}"
[ ${#isolation_tests[@]} -eq 0 ] || run_suite isolation "$PG_ISOLATION_REGRESS" tests/isolation "${isolation_tests[@]}"

if [ ${#failed[@]} -gt 0 ]; then
  log "$label: FAILED: ${failed[*]}"
  exit 1
fi
log "$label: all ${#regress_tests[@]} regress and ${#isolation_tests[@]} isolation tests passed"
