#!/usr/bin/env bash
# The upgrade test: a database made by the previous release (tests/upgrade/previous-release),
# filled with jobs in every state, is upgraded to this release while a worker keeps
# claiming and finalizing, then checked; its catalog must equal a fresh install's. Then
# the SQL suites run with every CREATE EXTENSION going through the upgrade path.
#
#   bash tests/upgrade/upgrade.sh CURRENT_PACKAGE
#
# CURRENT_PACKAGE is this release built by `cargo pgrx package` (scripts/test.sh makes it);
# the previous release is built here from its commit (cached in target/upgrade-previous).
# Leaves this release installed, as it found it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
REPO=$PWD
source scripts/lib.sh

current_pkg=$(realpath "$1")
read -r prev_version prev_commit < <(grep -v '^#' tests/upgrade/previous-release)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
EXTDIR=$("$PG_CONFIG" --sharedir)/extension
log() { printf '== upgrade.sh: %s\n' "$*"; }

# --- the previous release, built from its commit ---------------------------------------
build=$REPO/target/upgrade-previous
prev_pkg=$build/package-$prev_version
if [ ! -f "$prev_pkg/$EXTDIR/sendjobs--$prev_version.sql" ]; then
  log "building release $prev_version from commit $prev_commit"
  if ! git cat-file -e "$prev_commit^{commit}" 2>/dev/null; then
    git fetch -q --unshallow 2>/dev/null || true   # a shallow clone lacks older commits
  fi
  rm -rf "$build/src" "$prev_pkg"
  mkdir -p "$build/src"
  git archive "$prev_commit" | tar -x -C "$build/src"
  (cd "$build/src" && CARGO_TARGET_DIR=$build/target package_extension "$prev_pkg" debug)
fi

# Whatever happens, leave this release installed (and its own install script in place).
restore() {
  local rc=$?
  install_package "$current_pkg"
  exit "$rc"
}
cleanup_on_exit restore

# --- a database at the previous release, upgraded while a worker runs -------------------
log "installing release $prev_version alone"
as_root rm -f "$EXTDIR"/sendjobs--*.sql
install_package "$prev_pkg"
SENDJOBS_UPGRADE_PACKAGE=$current_pkg SENDJOBS_VERSION=$version \
  /usr/bin/python3 tests/cluster.py run --name sendjobs-upgrade -- bash tests/upgrade/scenario.sh

# --- the suites, with CREATE EXTENSION going through the upgrade path --------------------
# Without an install script for this version, CREATE EXTENSION runs the previous one's
# and then the upgrade script: every suite then runs against an upgraded extension.
log "SQL suites on an extension created at $prev_version and upgraded to $version"
install_package "$current_pkg"
as_root rm -f "$EXTDIR/sendjobs--$version.sql"
bash scripts/test-sql.sh "upgraded from $prev_version"
