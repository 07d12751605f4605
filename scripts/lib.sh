# shellcheck shell=bash
# Shell helpers shared by the shell scripts that install the extension or run a
# throwaway PostgreSQL cluster themselves (scripts/, tests/upgrade/, bench/run.sh; the
# Python ones use tests/cluster.py). Source it from the repository root:
# `source scripts/lib.sh`. Each caller writes its own cleanup function; these only
# cover what every one of them needs the same way.

# The PostgreSQL major the scripts run on: SENDJOBS_PG, else the default of
# scripts/postgres-majors (18); its prefix is there too (15 is Debian's own).
_majors="$(dirname "${BASH_SOURCE[0]}")/postgres-majors"
all_majors() { awk '!/^#/ && $1 ~ /^[0-9]+$/ {print $1}' "$_majors"; }
default_major() { awk '$1 == "default" {print $2}' "$_majors"; }
major_prefix() { awk -v major="$1" '!/^#/ && $1 == major {print $4}' "$_majors"; }
SENDJOBS_PG=${SENDJOBS_PG:-$(default_major)}
PG_PREFIX=$(major_prefix "$SENDJOBS_PG")
if [ -z "$PG_PREFIX" ]; then
  echo "lib.sh: PostgreSQL $SENDJOBS_PG is not one of scripts/postgres-majors ($(all_majors | tr '\n' ' '))" >&2
  exit 2
fi
export SENDJOBS_PG
PGBIN="$PG_PREFIX/bin"
PG_CONFIG="$PGBIN/pg_config"

is_root() { [ "$(id -u)" = 0 ]; }
as_root() { if is_root; then "$@"; else sudo "$@"; fi; }

# Runs the function named $1 (the caller's cleanup: stop the cluster, remove the folder)
# when the script ends, also when a signal ends it: bash skips the EXIT trap when a
# signal kills it, so these signals become exits. A reader that goes away (`| head`)
# raises SIGPIPE at the next line we print; the cleanup's own lines then go to /dev/null
# instead of raising it again.
cleanup_on_exit() {
  # shellcheck disable=SC2064  # the handler's text is the caller's, expanded now on purpose
  trap "$1" EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exec >/dev/null; exit 141' PIPE
  trap 'exit 143' TERM
}

# A fresh folder under /tmp for the counts of a server under valgrind's callgrind
# (tests/cluster.py run --callgrind FOLDER: each process writes its own when it exits),
# writable by the server's user; installs valgrind from Debian's package if it is missing.
# Prints its path.
callgrind_folder() {
  if ! command -v valgrind >/dev/null; then
    { as_root apt-get update -qq &&
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind; } >&2 || return 1
  fi
  local dir
  dir="$(mktemp -d "/tmp/sendjobs-$1-callgrind.XXXXXX")" || return 1
  chmod 1777 "$dir"
  echo "$dir"
}

# A fresh folder under /tmp for clusters and logs, owned by the user the clusters run as.
# Prints its path; the caller sets WORK to it (as_owner runs commands from there).
make_workdir() {
  local dir
  dir="$(mktemp -d "/tmp/$1.XXXXXX")"
  if is_root; then
    chown postgres:postgres "$dir"
  fi
  printf '%s\n' "$dir"
}

# Runs a command as the owner of the clusters: postgres when we are root (the server
# refuses to run as root), ourselves otherwise; from $WORK, a folder that user may enter.
as_owner() {
  if is_root; then
    (cd "$WORK" && sudo -u postgres -- "$@")
  else
    (cd "$WORK" && "$@")
  fi
}

# apt packages, the PostgreSQL majors and cargo-pgrx (scripts/setup.sh), then the
# extension built with the release profile and installed into the PostgreSQL of
# SENDJOBS_PG (by renames: see install_package).
install_extension() {
  bash scripts/setup.sh
  rm -rf target/release-package
  package_extension target/release-package release
  install_package target/release-package
}

# Builds the extension into a package folder (cargo pgrx package): the files of
# `cargo pgrx install`, under OUTDIR/usr/..., without installing them. PROFILE: debug or
# release.
package_extension() {
  local outdir=$1 profile=$2 flags=()
  [ "$profile" = debug ] && flags=(--debug)
  export PATH="$HOME/.cargo/bin:$PATH"
  cargo pgrx package "${flags[@]}" --pg-config "$PG_CONFIG" --out-dir "$outdir" >/dev/null
}

# Installs a package folder into the PostgreSQL it was built for, each file by a rename: a
# server that has the old library loaded keeps running it (overwriting a loaded .so in
# place crashes those backends), and new backends load the new one.
install_package() {
  local pkg=$1 file dest mode
  while IFS= read -r file; do
    dest=${file#"$pkg"}
    mode=644
    [[ $dest == *.so ]] && mode=755
    as_root install -D -m "$mode" "$file" "$dest.sendjobs-new"
    as_root mv -f "$dest.sendjobs-new" "$dest"
  done < <(find "$pkg" -type f)
}
