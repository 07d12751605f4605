#!/usr/bin/env bash
# Installs what building and testing sendjobs needs on Debian 12, skipping what is present.
# Safe to run again and again; used by scripts/demo.sh, scripts/test.sh and .ci/run.
set -euo pipefail

PGRX_VERSION=0.18.0
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

need_apt=()
for pkg in postgresql-15 postgresql-server-dev-15 libclang-dev clang sudo pkg-config python3-psycopg2; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

# Debian starts a cluster on port 5432 when it installs the server; we never use it.
export PATH="$HOME/.cargo/bin:$PATH"
if ! cargo pgrx --version 2>/dev/null | grep -q " $PGRX_VERSION"; then
  echo "setup: installing cargo-pgrx $PGRX_VERSION (a few minutes)"
  cargo install cargo-pgrx --version "=$PGRX_VERSION" --locked
fi

if ! grep -q "pg15" "$HOME/.pgrx/config.toml" 2>/dev/null; then
  cargo pgrx init --pg15 "$PG_CONFIG"
fi
