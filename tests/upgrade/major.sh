#!/usr/bin/env bash
# Moving a database to a new major keeps every job (docs/operations.md, "A new PostgreSQL
# major (pg_upgrade)"): a 15 cluster is filled with jobs in every state
# (tests/upgrade/major-populate.sql), then pg_upgrade --check and pg_upgrade move it to
# 18. On 18 everything sendjobs keeps must read the same as before
# (tests/upgrade/major-state.sql, a diff), and the work goes on with the generations of
# before (tests/upgrade/major-verify.sql).
#
#   bash tests/upgrade/major.sh PACKAGE_15
#
# The 15 is upstream's (scripts/postgres-majors, 15-upstream: Debian's 15.20 here cannot
# be upgraded to 18 at all), given this release's files from PACKAGE_15, the package built
# for 15 (scripts/test.sh makes it); 18 must have this release installed. Both clusters
# live in a fresh folder under /tmp, stopped and removed at the end, pass or fail.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/lib.sh
package_15=$(realpath "$1")
old=15-upstream
new=18
old_bin=$(major_prefix "$old")/bin
new_bin=$(major_prefix "$new")/bin
# This release's library and scripts, from the package built for 15, into upstream 15.
as_root install -m 755 "$package_15"/usr/lib/postgresql/15/lib/sendjobs-*.so "$("$old_bin/pg_config" --pkglibdir)/"
as_root install -m 644 "$package_15"/usr/share/postgresql/15/extension/sendjobs* "$("$old_bin/pg_config" --sharedir)/extension/"
log() { printf '== major.sh: %s\n' "$*"; }

WORK=$(make_workdir sendjobs-major)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
running=()   # "bindir datadir" of each cluster started and not yet stopped
cleanup() {
  local rc=$? cluster
  for cluster in "${running[@]}"; do
    [ -n "$cluster" ] || continue
    # shellcheck disable=SC2086  # two words: the bin folder and the data folder
    set -- $cluster
    as_owner "$1/pg_ctl" -D "$2" -m fast -w stop >/dev/null 2>&1 || true
  done
  if [ "$rc" -ne 0 ] && [ -f "$WORK/server.log" ]; then tail -n 20 "$WORK/server.log"; fi
  as_root rm -rf "$WORK"
  exit "$rc"
}
cleanup_on_exit cleanup
# initdb MAJOR DATADIR. 18's initdb turns data checksums on by default, and pg_upgrade
# needs both clusters alike: off on both.
init() {
  local flags=(-U postgres -A trust -E UTF8 --locale=C)
  [ "${1%%-*}" -ge 18 ] && flags+=(--no-data-checksums)
  as_owner "$(major_prefix "$1")/bin/initdb" -D "$2" "${flags[@]}" >/dev/null
}
start() {
  as_owner "$1/pg_ctl" -D "$2" -l "$WORK/server.log" -w -o "-p $port -k $WORK -c listen_addresses=''" start >/dev/null
  running+=("$1 $2")
}
stop() {
  as_owner "$1/pg_ctl" -D "$2" -m fast -w stop >/dev/null
  running=("${running[@]/"$1 $2"}")
}
psql_on() { local bin=$1; shift; "$bin/psql" -X -q -h "$WORK" -p "$port" -U postgres -v ON_ERROR_STOP=1 "$@"; }

log "PostgreSQL 15 (upstream): filling a database with jobs in every state"
init "$old" "$WORK/old"
start "$old_bin" "$WORK/old"
psql_on "$old_bin" -d postgres -c "CREATE DATABASE major"
psql_on "$old_bin" -d major -f tests/upgrade/major-populate.sql -o /dev/null
psql_on "$old_bin" -d major -f tests/upgrade/major-state.sql >"$WORK/before.txt"
stop "$old_bin" "$WORK/old"

log "pg_upgrade --check, then pg_upgrade, from 15 to $new"
init "$new" "$WORK/new"
as_owner "$new_bin/pg_upgrade" -b "$old_bin" -B "$new_bin" -d "$WORK/old" -D "$WORK/new" \
  -p "$port" -P "$port" --socketdir "$WORK" -U postgres --check >"$WORK/check.txt" \
  || { cat "$WORK/check.txt"; exit 1; }
as_owner "$new_bin/pg_upgrade" -b "$old_bin" -B "$new_bin" -d "$WORK/old" -D "$WORK/new" \
  -p "$port" -P "$port" --socketdir "$WORK" -U postgres >"$WORK/upgrade.txt" \
  || { cat "$WORK/upgrade.txt"; grep -h -B2 -A12 "ERROR" "$WORK"/new/pg_upgrade_output.d/*/log/*.log | head -60; exit 1; }

start "$new_bin" "$WORK/new"
psql_on "$new_bin" -d major -f tests/upgrade/major-state.sql >"$WORK/after.txt"
if ! diff -u "$WORK/before.txt" "$WORK/after.txt"; then
  echo "major.sh: what sendjobs keeps changed across pg_upgrade (- before, + after)" >&2
  exit 1
fi
log "PostgreSQL $new: every job, generation, event, key, link, guard, grant and setting as before ($(wc -l <"$WORK/before.txt") lines)"
psql_on "$new_bin" -d major -v major="$new" -f tests/upgrade/major-verify.sql -o /dev/null
log "PostgreSQL $new: the claims of before finalize with their generations; the work goes on"
psql_on "$new_bin" -d postgres -c "DROP DATABASE major" -c "DROP ROLE major_worker"
stop "$new_bin" "$WORK/new"
