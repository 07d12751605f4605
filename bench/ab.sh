#!/usr/bin/env bash
# A/B of two release builds, interleaved in one throwaway cluster (bench/ab.py): A is the
# previous release (tests/upgrade/previous-release, built here from its commit), or any
# commit given as SENDJOBS_AB_COMMIT; B is this tree. Both are built with the release
# profile; B is installed, A's library goes to a folder of its own that only A's database
# loads from. When A has B's version, A is built as version <version>-a<commit> (its
# Cargo.toml says so: its library and install script are named for it, and its catalog
# check accepts it), at which A's database creates the extension. Writes
# bench/results/<name>/ (report.md, runs.csv, meta.json, sql/).
#
#   bash bench/ab.sh [ab.py options: --clients 1,4,8 --batches 1,10,100 --duration 5 --reps 3
#                     --outcome retry|sent --name NAME]
#   bash bench/ab.sh --help                        # every option
#   SENDJOBS_AB_COMMIT=HEAD bash bench/ab.sh ...   # the last commit against the work tree
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD
source scripts/lib.sh
case " $* " in
  *" -h "*|*" --help "*) exec /usr/bin/python3 bench/ab.py --a-lib - --a-version - --help ;;
esac
# The newest of the releases listed (oldest first).
read -r a_version a_commit < <(grep -v '^#' tests/upgrade/previous-release | tail -n 1)
if [ -n "${SENDJOBS_AB_COMMIT:-}" ]; then
  a_commit=$(git rev-parse --short "$SENDJOBS_AB_COMMIT")
  a_version=$(git show "$a_commit:Cargo.toml" | sed -n 's/^version = "\(.*\)"/\1/p' | head -1)
fi
b_version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
EXTDIR=$("$PG_CONFIG" --sharedir)/extension
a_as=$a_version
[ "$a_version" = "$b_version" ] && a_as="$a_version-a$a_commit"

build=$REPO/target/ab-previous
a_pkg=$build/package-$a_as
if [ ! -f "$a_pkg/$EXTDIR/sendjobs--$a_as.sql" ]; then
  echo "== ab.sh: building $a_as (release profile) from commit $a_commit"
  rm -rf "$build/src" "$a_pkg"
  mkdir -p "$build/src"
  git archive "$a_commit" | tar -x -C "$build/src"
  sed -i "0,/^version = .*/s//version = \"$a_as\"/" "$build/src/Cargo.toml"
  (cd "$build/src" && CARGO_TARGET_DIR=$build/target package_extension "$a_pkg" release)
fi
echo "== ab.sh: building and installing this tree (release profile)"
install_extension >/dev/null

lib=$(mktemp -d /tmp/sendjobs-ab-lib.XXXXXX)
cleanup() {
  rm -rf "$lib"
  if [ "$a_as" != "$a_version" ]; then as_root rm -f "$EXTDIR/sendjobs--$a_as.sql"; fi
}
trap cleanup EXIT
chmod 755 "$lib"
# Build A's library: sendjobs.so before 0.2.1, sendjobs-<version>.so since
# (docs/decisions/0001-a-library-per-release.md); its folder comes first in arm A's
# dynamic_library_path. Before 0.2.1 its install script says MODULE_PATHNAME, which only
# its own control file named: filled in here.
cp "$a_pkg/$("$PG_CONFIG" --pkglibdir)"/sendjobs*.so "$lib/"
as_root install -m 644 "$a_pkg/$EXTDIR/sendjobs--$a_as.sql" "$EXTDIR/sendjobs--$a_as.sql"
as_root sed -i "s/'MODULE_PATHNAME'/'sendjobs'/g" "$EXTDIR/sendjobs--$a_as.sql"
# --instructions: the server runs under callgrind, which writes each backend's counts to
# a folder of its own (scripts/lib.sh).
callgrind=()
given="$*"
case " $* " in
  *" --instructions "*)
    counts=$(callgrind_folder ab)
    callgrind=(--callgrind "$counts")
    trap 'cleanup; rm -rf "$counts"' EXIT
    set -- "$@" --callgrind-dir "$counts" ;;
esac
/usr/bin/python3 tests/cluster.py run --name sendjobs-ab "${callgrind[@]}" \
  -c shared_buffers=256MB -c max_wal_size=8GB -c checkpoint_timeout=30min -c jit=off \
  -- /usr/bin/python3 bench/ab.py --a-lib "$lib" --a-version "$a_as" --b-version "$b_version" \
     --command "SENDJOBS_AB_COMMIT=$a_commit bash bench/ab.sh $given" "$@"
