#!/usr/bin/env bash
# The console's browser test (docs/console.md): builds sendjobs-console once, then in a
# throwaway cluster (tests/cluster.py) loads tests/console/workload.sql, starts three
# consoles (monitor+admin with the token, monitor-only with the token, monitor+admin
# without a token) and runs tests/console/browser.mjs in headless Debian chromium. The
# consoles and the cluster are stopped, pass or fail. With --screenshots it writes a
# screenshot of each page to docs/console/ (otherwise into the cluster's folder, removed).
# Needs the extension installed into the PostgreSQL of SENDJOBS_PG (scripts/test.sh has
# installed it by the time it runs this).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" != "--inside" ]; then
  if [ "${1:-}" = "--screenshots" ]; then export SCREENSHOTS=$PWD/docs/console; fi
  export PATH="$HOME/.cargo/bin:$PATH"
  cargo build -q -p sendjobs-console
  if [ ! -d tests/console/node_modules ] || [ tests/console/package-lock.json -nt tests/console/node_modules ]; then
    (cd tests/console && npm ci --no-audit --no-fund --loglevel=error)
  fi
  exec python3 tests/cluster.py run --name sendjobs-console --tls -- bash tests/console/run.sh --inside
fi

psql -q -X -v ON_ERROR_STOP=1 -f tests/console/workload.sql > /dev/null
target=${CARGO_TARGET_DIR:-target}
logs=$SENDJOBS_CLUSTER_DIR
export SENDJOBS_CONSOLE_TOKEN=console-test-token-$RANDOM$RANDOM$RANDOM
pids=()
stop() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop EXIT
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start() {  # variable name role token-or-empty [option ...]: starts a console, sets $variable to its URL
  local p; p=$(port)
  SENDJOBS_CONSOLE_TOKEN=$4 SENDJOBS_CONSOLE_DATABASE_URL=${CONNINFO-host=$PGHOST port=$PGPORT user=$3 dbname=$PGDATABASE} \
    "$target/debug/sendjobs-console" --listen "127.0.0.1:$p" "${@:5}" > "$logs/$2.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do
    if curl -sf -o /dev/null "http://127.0.0.1:$p/queues"; then printf -v "$1" 'http://127.0.0.1:%s' "$p"; return; fi
    sleep 0.1
  done
  echo "console $2 did not start:" >&2; cat "$logs/$2.log" >&2; exit 1
}
start CONSOLE_ADMIN admin console_admin "$SENDJOBS_CONSOLE_TOKEN"
start CONSOLE_MONITOR monitor console_monitor "$SENDJOBS_CONSOLE_TOKEN"
# Few connections, a short time for a request's head and a short life: the tests of
# half-sent requests and of a connection kept alive by a request every quarter second.
start CONSOLE_NOTOKEN notoken console_admin "" --max-connections 16 --header-timeout 3 --connection-lifetime 4
export CONSOLE_ADMIN CONSOLE_MONITOR CONSOLE_NOTOKEN SCREENSHOTS=${SCREENSHOTS:-$SENDJOBS_CLUSTER_DIR/screenshots}
status=0
node tests/console/browser.mjs || status=$?
# The action log: every action, with who and what, on the console's stderr; and no line
# of it written by a name (the queue `forged\n... operator=bob ...`, paused by
# test-operator, would have written a line of bob's).
if [ $status = 0 ]; then
  for want in 'operator=test-operator action="redrive" queues=["acme"]' 'operator=test-operator action="cancel"' \
              'operator=test-operator action="pause" queue="initech"' \
              'operator=test-operator action="pause" queue="forged\n2026-01-01' 'action refused'; do
    if ! grep -qF "$want" "$logs/admin.log"; then
      echo "FAILED: the action log has no line with: $want" >&2; status=1
    fi
  done
  if grep -F 'operator=bob' "$logs/admin.log" | grep -vF 'operator=test-operator'; then
    echo "FAILED: a queue's name wrote a line of its own into the action log" >&2; status=1
  fi
fi
if [ $status != 0 ]; then
  echo "== the admin console's log:" >&2; tail -30 "$logs/admin.log" >&2
  exit $status
fi
echo "   ok: the action log names the operator, the action and its ids, and no name writes a line"

# TLS to PostgreSQL as libpq's sslmode asks (src/tls.rs; the cluster's certificate names
# 127.0.0.1 only), the connection string from a file, and the cookies behind HTTPS.
tcp="host=127.0.0.1 port=$PGPORT user=console_monitor dbname=$PGDATABASE"
export HOME=$SENDJOBS_CLUSTER_DIR  # no ~/.postgresql/root.crt of the machine's
encrypted() {  # application_name: all of that console's connections use TLS
  [ "$(psql -AtX -c "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
                     WHERE a.application_name = '$1'")" = t ] || { echo "FAILED: $1 is not over TLS" >&2; exit 1; }
}
refused() {  # what-the-error-says [option ...]: the console, given SENDJOBS_CONSOLE_DATABASE_URL, must not start
  local out
  out=$(timeout 20 "$target/debug/sendjobs-console" --listen 127.0.0.1:0 "${@:2}" 2>&1) || true
  grep -qF "$1" <<<"$out" || { echo "FAILED: expected \"$1\" from ${SENDJOBS_CONSOLE_DATABASE_URL:-}, the console said: $out" >&2; exit 1; }
}
CONNINFO="$tcp application_name=tls-require sslmode=require" start TLS_REQUIRE tls-require "" ""
encrypted tls-require
# Over a Unix socket there is no TLS: sslmode is not asked for there, as libpq has it.
CONNINFO="host=$PGHOST port=$PGPORT user=console_monitor dbname=$PGDATABASE sslmode=require" start UNIX_REQUIRE unix-require "" ""
CONNINFO="host=localhost ${tcp#host=127.0.0.1} application_name=tls-verify-ca sslmode=verify-ca sslrootcert=$SENDJOBS_CLUSTER_CA" \
  start TLS_CA tls-verify-ca "" ""
encrypted tls-verify-ca
printf '%s\n' "$tcp application_name=tls-verify-full sslmode=verify-full sslrootcert=$SENDJOBS_CLUSTER_CA" > "$logs/database-url"
CONNINFO="" start TLS_FULL tls-verify-full "" "" --database-url-file "$logs/database-url" --secure-cookies
encrypted tls-verify-full
curl -s -o /dev/null -D "$logs/secure-headers" "$TLS_FULL/queues"
grep -qiE '^set-cookie: __Host-sjc_csrf=[0-9a-f]+; Path=/; HttpOnly; SameSite=Strict; Secure' "$logs/secure-headers" \
  || { echo "FAILED: --secure-cookies set no Secure __Host- cookie:" >&2; cat "$logs/secure-headers" >&2; exit 1; }
SENDJOBS_CONSOLE_DATABASE_URL="host=localhost ${tcp#host=127.0.0.1} sslmode=verify-full sslrootcert=$SENDJOBS_CLUSTER_CA" \
  refused "certificate verify failed"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=another CA" -keyout "$logs/other.key" \
  -out "$logs/other.crt" 2> /dev/null
SENDJOBS_CONSOLE_DATABASE_URL="$tcp sslmode=verify-ca sslrootcert=$logs/other.crt" \
  refused "certificate verify failed"
SENDJOBS_CONSOLE_DATABASE_URL="$tcp sslmode=verify-full" refused "needs the CA's certificate"
SENDJOBS_CONSOLE_DATABASE_URL="$tcp" refused "given twice" --database-url-file "$logs/database-url"
(unset SENDJOBS_CONSOLE_DATABASE_URL; refused "no connection string")
echo "   ok: over TLS with sslmode require, verify-ca and verify-full (the URL from a file), a Unix socket with require; refused a host" \
     "name the certificate does not hold, a foreign CA, verify-full without a CA; Secure __Host- cookies"

# The systemd unit of docs/console.md, as systemd reads it (an unknown or misspelt key is
# a warning there, a failure here); the binary it names is this build's.
if command -v systemd-analyze > /dev/null; then
  sed "s#/usr/local/bin/sendjobs-console#$(realpath "$target")/debug/sendjobs-console#" docs/console/sendjobs-console.service \
    > "$logs/sendjobs-console.service"
  out=$(systemd-analyze verify "$logs/sendjobs-console.service" 2>&1) || true
  [ -z "$out" ] || { echo "FAILED: systemd-analyze verify docs/console/sendjobs-console.service: $out" >&2; exit 1; }
  echo "   ok: systemd reads docs/console/sendjobs-console.service without a warning"
else
  echo "   skipped: no systemd-analyze here to read docs/console/sendjobs-console.service"
fi
echo "console: the browser test passed"
