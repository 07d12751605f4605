#!/usr/bin/env bash
# The SQL-level test suites of sendjobs, each against its own throwaway PostgreSQL 15
# instance:
#   - pg_regress            test/sql/*.sql     -> test/expected/<name>.out
#   - pg_isolation_regress  test/specs/*.spec  -> test/expected/<name>.out
# The extension must already be installed into the system PostgreSQL 15 (the caller
# installs it, e.g. with `cargo pgrx install`). Everything runs in a fresh temporary
# directory that is removed at the end, pass or fail; no server is left running.
# Exits non-zero when any test fails (regression.diffs is printed).
#
#   bash scripts/test-sql.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh

PGXS_TEST=/usr/lib/postgresql/15/lib/pgxs/src/test
PG_REGRESS="$PGXS_TEST/regress/pg_regress"
PG_ISOLATION_REGRESS="$PGXS_TEST/isolation/pg_isolation_regress"

log() { printf '== test-sql.sh: %s\n' "$*"; }

for tool in "$PG_REGRESS" "$PG_ISOLATION_REGRESS" "$PGBIN/postgres" "$PGBIN/psql"; do
  if [ ! -x "$tool" ]; then
    echo "test-sql.sh: $tool not found (apt-get install postgresql-15 postgresql-server-dev-15)" >&2
    exit 2
  fi
done
if [ ! -f /usr/share/postgresql/15/extension/sendjobs.control ]; then
  echo "test-sql.sh: the sendjobs extension is not installed into PostgreSQL 15" >&2
  exit 2
fi

WORK="$(make_workdir sendjobs-sqltest)"

cleanup() {
  local rc=$?
  set +e
  # pg_regress stops its instance itself; this only matters when we were interrupted.
  for data in "$WORK"/tmp_check_*/data; do
    if [ -f "$data/postmaster.pid" ]; then
      as_owner "$PGBIN/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1
    fi
  done
  rm -rf "$WORK"
  exit "$rc"
}
cleanup_on_exit cleanup

cp -R test "$WORK/test"
if is_root; then
  chown -R postgres:postgres "$WORK"
fi

# Test names: the files in a directory, sorted, without their extension.
names() {
  local dir=$1 ext=$2
  find "$dir" -maxdepth 1 -type f -name "*.$ext" -printf '%f\n' | sed "s/\.$ext\$//" | LC_ALL=C sort
}

failed=()

# run_suite LABEL RUNNER TESTS...
run_suite() {
  local label=$1 runner=$2
  shift 2
  local out="$WORK/out_$label"
  as_owner mkdir -p "$out"
  log "$label: $* "
  if as_owner "$runner" \
    --temp-instance="$WORK/tmp_check_$label" \
    --inputdir="$WORK/test" \
    --outputdir="$out" \
    --bindir="$PGBIN" \
    --port="$(free_port)" \
    --no-locale \
    --encoding=UTF8 \
    "$@"; then
    return 0
  fi
  failed+=("$label")
  # To review and bless new output: SENDJOBS_SQLTEST_RESULTS=DIR keeps the actual results.
  if [ -n "${SENDJOBS_SQLTEST_RESULTS:-}" ] && [ -d "$out/results" ]; then
    mkdir -p "$SENDJOBS_SQLTEST_RESULTS" && cp "$out"/results/*.out "$SENDJOBS_SQLTEST_RESULTS"/
  fi
  if [ -f "$out/regression.diffs" ]; then
    echo "---- $label: regression.diffs"
    cat "$out/regression.diffs"
  fi
  local server_log="$WORK/tmp_check_$label/log/postmaster.log"
  if [ -f "$server_log" ]; then
    echo "---- $label: last lines of the server log"
    tail -n 40 "$server_log"
  fi
}

mapfile -t regress_tests < <(names test/sql sql)
mapfile -t isolation_tests < <(names test/specs spec)
if [ ${#regress_tests[@]} -eq 0 ] || [ ${#isolation_tests[@]} -eq 0 ]; then
  echo "test-sql.sh: no tests found in test/sql or test/specs" >&2
  exit 2
fi

run_suite regress "$PG_REGRESS" "${regress_tests[@]}"
run_suite isolation "$PG_ISOLATION_REGRESS" "${isolation_tests[@]}"

if [ ${#failed[@]} -gt 0 ]; then
  log "FAILED: ${failed[*]}"
  exit 1
fi
log "all ${#regress_tests[@]} regress and ${#isolation_tests[@]} isolation tests passed"
