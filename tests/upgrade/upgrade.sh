#!/usr/bin/env bash
# The upgrade test: for each previous release (tests/upgrade/previous-release), a database
# made by it, filled with jobs in every state, is upgraded to this release while a worker
# keeps claiming and finalizing, then checked; its catalog must equal a fresh install's.
# Then the SQL suites run with every CREATE EXTENSION going through the whole upgrade path,
# from the oldest release.
#
#   bash tests/upgrade/upgrade.sh CURRENT_PACKAGE
#
# CURRENT_PACKAGE is this release built by `cargo pgrx package` (scripts/test.sh makes it);
# the previous releases are built here from their commits (cached in target/upgrade-previous).
# Leaves this release installed, as it found it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
REPO=$PWD
source scripts/lib.sh

current_pkg=$(realpath "$1")
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
EXTDIR=$("$PG_CONFIG" --sharedir)/extension
log() { printf '== upgrade.sh: %s\n' "$*"; }

# --- the previous releases, each built from its commit ---------------------------------
build=$REPO/target/upgrade-previous
previous=()
while read -r prev_version prev_commit; do
  prev_pkg=$build/package-$prev_version
  previous+=("$prev_version")
  [ -f "$prev_pkg/$EXTDIR/sendjobs--$prev_version.sql" ] && continue
  log "building release $prev_version from commit $prev_commit"
  if ! git cat-file -e "$prev_commit^{commit}" 2>/dev/null; then
    git fetch -q --unshallow 2>/dev/null || true   # a shallow clone lacks older commits
  fi
  rm -rf "$build/src-$prev_version" "$prev_pkg"
  mkdir -p "$build/src-$prev_version"
  git archive "$prev_commit" | tar -x -C "$build/src-$prev_version"
  (cd "$build/src-$prev_version" && CARGO_TARGET_DIR=$build/target package_extension "$prev_pkg" debug)
done < <(grep -v '^#' tests/upgrade/previous-release)

# Whatever happens, leave this release installed (and its own install script in place).
restore() {
  local rc=$?
  install_package "$current_pkg"
  exit "$rc"
}
cleanup_on_exit restore

# Installs release $1 alone: its files, and no other version's scripts (its library,
# sendjobs.so before 0.2.1, replaces an older release's).
# Releases before 0.2.1 wrote MODULE_PATHNAME into their install script, which their own
# control file named (`sendjobs`) and this release's names no more: filled in, so that a
# CREATE EXTENSION under this release's control file runs it as its own would have.
install_only() {
  as_root rm -f "$EXTDIR"/sendjobs--*.sql
  install_package "$build/package-$1"
  as_root sed -i "s/'MODULE_PATHNAME'/'sendjobs'/g" "$EXTDIR/sendjobs--$1.sql"
}

# --- a database at each previous release, upgraded while a worker runs ------------------
for prev_version in "${previous[@]}"; do
  log "installing release $prev_version alone"
  install_only "$prev_version"
  SENDJOBS_UPGRADE_PACKAGE=$current_pkg SENDJOBS_VERSION=$version \
    /usr/bin/python3 tests/cluster.py run --name sendjobs-upgrade -- bash tests/upgrade/scenario.sh
done

# --- the suites, with CREATE EXTENSION going through the upgrade path --------------------
# With the oldest release's install script and no other (this version's removed), CREATE
# EXTENSION runs it and then every upgrade script: every suite then runs against an
# extension upgraded along the whole path.
oldest=${previous[0]}
log "SQL suites on an extension created at $oldest and upgraded to $version"
install_only "$oldest"
install_package "$current_pkg"
as_root rm -f "$EXTDIR/sendjobs--$version.sql"
bash scripts/test-sql.sh "upgraded from $oldest"
