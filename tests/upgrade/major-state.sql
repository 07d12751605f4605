-- Everything of sendjobs in the database of tests/upgrade/major.sh, as text to compare
-- before and after pg_upgrade: jobs (every column but the payload's spacing), events,
-- keys, the link, the queues' settings, the business rows and their guard, the level's
-- privileges and the settings made per database and role.
\pset tuples_only on
\pset format unaligned
SELECT 'job ' || concat_ws(' | ', id, queue, payload, transaction_id, idempotency_key, status, attempts,
       max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation, last_error,
       created_at, finished_at, redrive_of, tableoid::regclass) FROM send_jobs ORDER BY id;
SELECT 'event ' || concat_ws(' | ', job_id, transaction_id, kind, claim_generation, created_at, queue, event_xid)
  FROM send_job_events ORDER BY job_id;
SELECT 'key ' || idempotency_key || ' ' || job_id FROM send_job_keys ORDER BY 1;
SELECT 'consumer ' || concat_ws(' | ', consumer, passed, batch, read_xid, read_id, created_at, read_at)
  FROM sendjobs_consumers ORDER BY consumer;
SELECT 'link ' || concat_ws(' | ', tbl, key_column, status_column, on_sent, on_failed, on_redrive, linked_by)
  FROM sendjobs_transaction_link;
SELECT 'queue ' || queue || ' ' || notify FROM sendjobs_queues ORDER BY queue;
SELECT 'business ' || id || ' ' || status FROM transactions ORDER BY id;
SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'transactions'::regclass AND NOT tgisinternal;
SELECT 'may ' || p.proname FROM pg_proc p
 WHERE p.proname LIKE 'sendjobs%' AND has_function_privilege('major_worker', p.oid, 'EXECUTE') ORDER BY 1;
SELECT 'setting ' || coalesce(r.rolname, '-') || ' ' || array_to_string(s.setconfig, ',')
  FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
  LEFT JOIN pg_roles r ON r.oid = s.setrole WHERE d.datname = 'major' ORDER BY 1;
SELECT 'sequence ' || last_value FROM send_jobs_id_seq;
