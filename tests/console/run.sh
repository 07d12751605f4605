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
  exec python3 tests/cluster.py run --name sendjobs-console -- bash tests/console/run.sh --inside
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
  SENDJOBS_CONSOLE_TOKEN=$4 "$target/debug/sendjobs-console" --listen "127.0.0.1:$p" "${@:5}" \
    --database-url "host=$PGHOST port=$PGPORT user=$3 dbname=$PGDATABASE" > "$logs/$2.log" 2>&1 &
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
echo "console: the browser test passed"
