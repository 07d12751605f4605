-- sendjobs_grant and sendjobs_revoke (src/access.rs): what access level $1 holds, one
-- privilege a row, as the text between GRANT and TO. No level writes the queue tables:
-- the functions do that as the extension's owner (src/spi_plans.rs).
SELECT level.privilege
  FROM (VALUES
    ('producer', 'EXECUTE ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer)'),
    ('worker',   'EXECUTE ON FUNCTION @extschema@.sendjobs_claim(integer, interval, text)'),
    ('worker',   'EXECUTE ON FUNCTION @extschema@.sendjobs_heartbeat(bigint, bigint, interval)'),
    ('worker',   'EXECUTE ON FUNCTION @extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz)'),
    ('worker',   'EXECUTE ON FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)'),
    -- monitor: read the queue and the outbox, payloads excluded
    ('monitor',  'SELECT (id, queue, transaction_id, idempotency_key, status, attempts, max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation, last_error, created_at, finished_at) ON TABLE @extschema@.send_jobs'),
    ('monitor',  'SELECT ON TABLE @extschema@.send_job_events'),
    -- admin: every function, and reading every table
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_claim(integer, interval, text)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_heartbeat(bigint, bigint, interval)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_guard_terminal(regclass, name, text[], text[])'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_guard_terminal_trigger()'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_link_transactions(regclass, name, name, text, text)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_unlink_transactions()'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_grant(regrole, text)'),
    ('admin',    'EXECUTE ON FUNCTION @extschema@.sendjobs_revoke(regrole, text)'),
    ('admin',    'SELECT ON TABLE @extschema@.send_jobs, @extschema@.send_job_events, @extschema@.sendjobs_transaction_link')
  ) AS level (name, privilege)
 WHERE level.name = $1
