-- sendjobs_grant and sendjobs_revoke (src/access.rs): what access level $1 holds, one
-- privilege a row, as the text between GRANT and TO. No level writes the queue tables:
-- the functions do that as the extension's owner (src/spi_plans.rs).
SELECT level.privilege
  FROM (VALUES
    ('producer', 'EXECUTE ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer)'),
    ('producer', 'EXECUTE ON FUNCTION @extschema@.sendjobs_cancel(bigint)'),
    ('worker',   'EXECUTE ON FUNCTION @extschema@.sendjobs_claim(integer, interval, text)'),
    ('worker',   'EXECUTE ON FUNCTION @extschema@.sendjobs_heartbeat(bigint, bigint, interval)'),
    ('worker',   'EXECUTE ON FUNCTION @extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz)'),
    ('worker',   'EXECUTE ON FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)'),
    -- monitor: the stats, and reading the queue and the outbox, payloads excluded
    ('monitor',  'EXECUTE ON FUNCTION @extschema@.sendjobs_stats()'),
    ('monitor',  'SELECT (id, queue, transaction_id, idempotency_key, status, attempts, max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation, last_error, created_at, finished_at, redrive_of) ON TABLE @extschema@.send_jobs'),
    ('monitor',  'SELECT ON TABLE @extschema@.send_job_events, @extschema@.sendjobs_queues'),
    -- admin: every function, and reading every table
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_claim(integer, interval, text)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_heartbeat(bigint, bigint, interval)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_guard_terminal(regclass, name, text[], text[])'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_guard_terminal_trigger()'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_link_transactions(regclass, name, name, text, text, text)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_unlink_transactions()'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_grant(regrole, text)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_revoke(regrole, text)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_cancel(bigint)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_redrive(bigint[])'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_purge(interval, integer)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_notify(text, boolean)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_stats()'),
    ('admin',    'SELECT ON TABLE @extschema@.send_jobs, @extschema@.send_job_events, @extschema@.sendjobs_transaction_link, @extschema@.sendjobs_queues, @extschema@.send_jobs_finished, @extschema@.send_job_keys')
  ) AS level (name, privilege)
 WHERE level.name = $1
