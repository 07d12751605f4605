# Shell helpers shared by the scripts that run a throwaway PostgreSQL cluster
# (scripts/demo.sh, soak.sh, test-sql.sh, bench/run.sh). Source it from the repository
# root: `source scripts/lib.sh`. Each caller writes its own cleanup function; these only
# cover what every one of them needs the same way.

PGBIN=/usr/lib/postgresql/15/bin
PG_CONFIG="$PGBIN/pg_config"

is_root() { [ "$(id -u)" = 0 ]; }
as_root() { if is_root; then "$@"; else sudo "$@"; fi; }

# Runs the function named $1 (the caller's cleanup: stop the cluster, remove the folder)
# when the script ends, also when a signal ends it: bash skips the EXIT trap when a
# signal kills it, so these signals become exits. A reader that goes away (`| head`)
# raises SIGPIPE at the next line we print; the cleanup's own lines then go to /dev/null
# instead of raising it again.
cleanup_on_exit() {
  trap "$1" EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exec >/dev/null; exit 141' PIPE
  trap 'exit 143' TERM
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

# A TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# apt packages and cargo-pgrx (scripts/setup.sh), then the extension built with the
# release profile and installed into the system PostgreSQL 15.
install_extension() {
  bash scripts/setup.sh
  export PATH="$HOME/.cargo/bin:$PATH"
  local sudo_flag=()
  is_root || sudo_flag=(--sudo)
  cargo pgrx install --release "${sudo_flag[@]}" --pg-config "$PG_CONFIG"
}
