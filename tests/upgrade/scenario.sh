#!/usr/bin/env bash
# Inside the upgrade test's cluster (tests/upgrade/upgrade.sh runs this through
# tests/cluster.py, with the previous release installed): fill a database, start a
# worker, install this release's files, ALTER EXTENSION ... UPDATE, check everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/lib.sh
log() { printf '== scenario.sh: %s\n' "$*"; }
sql() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

"$PGBIN/createdb" upgrade
from=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$("$PG_CONFIG" --sharedir)/extension/sendjobs.control")
log "filling a database at release $from"
sql -d upgrade -f tests/upgrade/populate.sql -o /dev/null
# A role with the worker level of the previous release (0.1.0 had none): the update
# keeps what it may call, also where it makes a function again (sendjobs_finalize_batch).
if [ "$from" != 0.1.0 ]; then
  sql -d upgrade -c "CREATE ROLE upgrade_worker" -c "SELECT sendjobs_grant('upgrade_worker', 'worker')" \
      -c "CREATE ROLE upgrade_monitor" -c "SELECT sendjobs_grant('upgrade_monitor', 'monitor')" -o /dev/null
fi
# A second database whose user points a foreign key at send_jobs: the update refuses it.
"$PGBIN/createdb" referenced
sql -d referenced -c "CREATE EXTENSION sendjobs" \
    -c "CREATE TABLE receipts (job_id bigint REFERENCES send_jobs (id))" -o /dev/null

# The worker: 2 clients, a new connection per transaction, for 12 s; pgbench exits
# non-zero if any transaction fails (a finalize that is not applied divides by zero).
# A transaction that meets the update in a deadlock (40P01, below) is run again, as a
# worker would.
log "worker running; files of $SENDJOBS_VERSION installed at 3 s, ALTER EXTENSION at 6 s"
"$PGBIN/pgbench" -n -C -c 2 -T 12 --max-tries 5 -f tests/upgrade/load.sql upgrade >"$SENDJOBS_CLUSTER_DIR/pgbench.log" 2>&1 &
worker=$!
sleep 3
install_package "$SENDJOBS_UPGRADE_PACKAGE"
sql -d upgrade -f tests/upgrade/window.sql -o /dev/null
log "in the upgrade window, a role with no privilege gets 42501 and the old catalog's functions work"
# A session that lives through the update, from 0.1.0 (tests/upgrade/settings_across.py).
if [ "$from" = 0.1.0 ]; then
  sql -d upgrade -c "CREATE ROLE window_worker LOGIN"
  coproc across { /usr/bin/python3 tests/upgrade/settings_across.py 2>&1; }
  read -r line <&"${across[0]}"; log "a session of the window: $line"
fi
sleep 3
# The update locks send_jobs with send_jobs_finished, parent first; a worker's call that
# holds the finished table and waits for send_jobs can deadlock with it, and on the path
# from 0.3.0 the update holds 0.3.1's SHARE lock of both while it waits for more. As
# docs/operations.md tells users: with a short deadlock_timeout the update is the one
# that gives up (40P01, nothing changed), and it runs again.
for attempt in 1 2 3 4 5; do
  if out=$(sql -d upgrade -c "SET deadlock_timeout = '10ms'" -c "ALTER EXTENSION sendjobs UPDATE" 2>&1); then
    break
  elif [ "$attempt" -lt 5 ] && grep -q 'deadlock detected' <<<"$out"; then
    log "the update met a worker's call in a deadlock and gave up (attempt $attempt): running it again"
  else
    echo "$out" >&2; exit 1
  fi
done
if [ "$from" = 0.1.0 ]; then
  sql -d upgrade -c "SELECT sendjobs_grant('window_worker', 'worker')" -o /dev/null
  echo >&"${across[1]}"
  read -r line <&"${across[0]}" || true
  log "$line"
  # shellcheck disable=SC2154  # coproc sets across_PID
  wait "$across_PID" || { echo "$line" >&2; exit 1; }
  sql -d upgrade -c "DROP OWNED BY window_worker" -c "DROP ROLE window_worker"
fi
# (From 0.1.0 only: that update moves the finished jobs out of send_jobs; later ones move none.)
if [ "$from" != 0.1.0 ]; then
  sql -d referenced -c "ALTER EXTENSION sendjobs UPDATE"
elif sql -d referenced -c "ALTER EXTENSION sendjobs UPDATE" 2>"$SENDJOBS_CLUSTER_DIR/referenced.err" \
   || ! grep -q 'foreign keys reference: receipts (receipts_job_id_fkey)' "$SENDJOBS_CLUSTER_DIR/referenced.err" \
   || [ "$(sql -d referenced -Atc "SELECT extversion FROM pg_extension WHERE extname = 'sendjobs'")" = "$SENDJOBS_VERSION" ]; then
  cat "$SENDJOBS_CLUSTER_DIR/referenced.err"
  echo "upgrade: a foreign key to send_jobs did not stop the update" >&2
  exit 1
fi
[ "$from" = 0.1.0 ] && log "a foreign key to send_jobs stops the update: $(grep -o 'foreign keys reference: .*' "$SENDJOBS_CLUSTER_DIR/referenced.err")"
# A call that waited for the update's lock runs its old library's statement, prepared
# for the old catalog, on the new one, and can fail once (docs/operations.md, Upgrading):
# a claim, from every release before 0.3.0 (42804: the update adds columns to send_jobs,
# and Postgres checks a set-returning function's rows against the row type its caller's
# query was parsed with); and from 0.1.0 also a finalize (23514: 0.1.0 finishes a job in
# place) and an enqueue (42P10: its ON CONFLICT index is gone). pgbench aborts that
# client; any other error, or a failed transaction, still fails the test. (A finish of
# 0.2.x that waited for the update to 0.3.0 still writes its event into send_job_events,
# now a view whose trigger ignores it: it completes, sql/schema.sql.)
if [ "$from" = 0.1.0 ]; then
  known='function return row and query-specified return row do not match|violates check constraint "send_jobs_live_check"|there is no unique or exclusion constraint matching the ON CONFLICT specification'
else
  known='aborted in command 1 query 0: ERROR:  function return row and query-specified return row do not match'
fi
if ! wait "$worker"; then
  log_file=$SENDJOBS_CLUSTER_DIR/pgbench.log
  aborted=$(grep -c 'aborted in command' "$log_file" || true)
  raced=$(grep 'aborted in command' "$log_file" | grep -cE "$known" || true)
  if [ "$aborted" -eq 0 ] || [ "$aborted" -ne "$raced" ] \
     || grep -qE '^number of failed transactions: [1-9]' "$log_file"; then
    cat "$log_file"
    echo "upgrade: the worker failed during the upgrade" >&2
    exit 1
  fi
  log "$raced worker client(s) stopped by a call that waited for the update's lock (the known errors of an update from $from)"
fi
grep -E '^number of (transactions actually processed|failed transactions)' "$SENDJOBS_CLUSTER_DIR/pgbench.log" || true

log "checking the upgraded database"
sql -d upgrade -v version="$SENDJOBS_VERSION" -f tests/upgrade/verify.sql -o /dev/null
if [ "$from" != 0.1.0 ]; then
  sql -d upgrade -o /dev/null -c "SELECT sendjobs_enqueue('{}', 'upgrade_worker')" -c "SET ROLE upgrade_worker" \
      -c "DO \$\$ BEGIN
            IF (SELECT bool_and(result = 'applied') FROM sendjobs_finalize_batch(
                    ARRAY(SELECT id FROM sendjobs_claim(1, queue => 'upgrade_worker')), ARRAY[1], 'sent')) IS NOT TRUE THEN
              RAISE EXCEPTION 'the worker level''s sendjobs_finalize_batch did not apply';
            END IF;
          END \$\$"
  log "a role given the worker level before the update may still call sendjobs_finalize_batch"
fi

log "comparing its catalog with a fresh install's"
"$PGBIN/createdb" fresh
sql -d fresh -c "CREATE EXTENSION sendjobs"
# The same grant as the upgraded database's role has (both then show it in their ACLs;
# only the upgraded one would also show it in its initial privileges, were it there).
if [ "$from" != 0.1.0 ]; then
  sql -d fresh -o /dev/null -c "SELECT sendjobs_grant('upgrade_worker', 'worker')" \
      -c "SELECT sendjobs_grant('upgrade_monitor', 'monitor')"
fi
sql -d upgrade -f tests/upgrade/catalog.sql >"$SENDJOBS_CLUSTER_DIR/upgraded.txt"
sql -d fresh -f tests/upgrade/catalog.sql >"$SENDJOBS_CLUSTER_DIR/fresh.txt"
if ! diff -u "$SENDJOBS_CLUSTER_DIR/fresh.txt" "$SENDJOBS_CLUSTER_DIR/upgraded.txt"; then
  echo "upgrade: the upgraded catalog differs from a fresh install's (- fresh, + upgraded)" >&2
  exit 1
fi
log "the upgraded catalog equals a fresh install's ($(wc -l <"$SENDJOBS_CLUSTER_DIR/fresh.txt") lines)"

# pg_dump / pg_restore of the busy database: every job keeps its state, generation and
# lease, every event stays, and new ids continue after the old ones.
log "dump and restore"
"$PGBIN/pg_dump" -Fc -f "$SENDJOBS_CLUSTER_DIR/upgrade.dump" upgrade
"$PGBIN/createdb" restored
"$PGBIN/pg_restore" --exit-on-error -d restored "$SENDJOBS_CLUSTER_DIR/upgrade.dump"
for q in "SELECT string_agg(concat_ws(':', id, status, attempts, claim_generation, claimed_at,
                lease_expires_at, next_attempt_at, finished_at, idempotency_key), ',' ORDER BY id) FROM send_jobs" \
         "SELECT string_agg(e::text, ',' ORDER BY job_id) FROM send_job_events e" \
         "SELECT string_agg(t::text, ',' ORDER BY id) FROM transactions t"; do
  if [ "$(sql -d upgrade -Atc "$q")" != "$(sql -d restored -Atc "$q")" ]; then
    echo "upgrade: the restored database differs: $q" >&2
    exit 1
  fi
done
sql -d restored -Atc "SELECT CASE WHEN sendjobs_enqueue('{}') > max(id) THEN 'new ids continue' END
                        FROM send_jobs" | grep -qx 'new ids continue' \
  || { echo "upgrade: a restored queue reuses ids" >&2; exit 1; }
log "the restored database keeps every job, generation and event"
# The grants the update carried are the users' (not the extension's initial privileges):
# the dump keeps them, and the role can be dropped without a trace in the catalog.
if [ "$from" != 0.1.0 ]; then
  sql -d restored -Atc "SELECT has_function_privilege('upgrade_worker',
                          'sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)', 'EXECUTE')" \
    | grep -qx t || { echo "upgrade: the restore lost the worker level's grant on sendjobs_finalize_batch" >&2; exit 1; }
  sql -d restored -Atc "SELECT has_column_privilege('upgrade_monitor', 'send_jobs', 'ordering_key', 'SELECT')" \
    | grep -qx t || { echo "upgrade: the restore lost the monitor level's new column" >&2; exit 1; }
  for db in upgrade restored fresh; do
    sql -d "$db" -o /dev/null -c "DROP OWNED BY upgrade_worker, upgrade_monitor"
  done
  sql -d upgrade -o /dev/null -c "DROP ROLE upgrade_worker, upgrade_monitor"
  log "the dump keeps the grants the update carried"
fi

# An update changes no one's rights but as docs/operations.md says ("What an update changes
# in rights"), step by step from this release; and, from a release before 0.3.0, what users
# put on the table send_job_events, which 0.3.0 makes a view, stops it, named, with nothing
# changed.
log "rights before and after each update of the path from $from"
/usr/bin/python3 tests/upgrade/rights.py "$from"
case "$from" in
  0.1.* | 0.2.*) /usr/bin/python3 tests/upgrade/events_kept.py "$from" ;;
esac
