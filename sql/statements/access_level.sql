--- params: level text
--- columns: privilege
-- sendjobs_grant and sendjobs_revoke (src/verbs/access.rs): the privileges access level $1
-- holds, as the text between GRANT and TO; no level writes the tables (decision 0005).
-- `{schema}` is put in by src/verbs/access.rs, quoted: `@extschema@` inside a literal would
-- not be.
SELECT level.privilege
  FROM (VALUES
    ('producer', 'EXECUTE ON FUNCTION {schema}.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer, text, integer)'),
    ('producer', 'EXECUTE ON FUNCTION {schema}.sendjobs_enqueue_many(jsonb[], text[], timestamptz[], text[], text[], integer[], text[], integer[])'),
    ('producer', 'EXECUTE ON FUNCTION {schema}.sendjobs_cancel(bigint)'),
    ('worker',   'EXECUTE ON FUNCTION {schema}.sendjobs_claim(integer, interval, text)'),
    ('worker',   'EXECUTE ON FUNCTION {schema}.sendjobs_heartbeat(bigint, bigint, interval)'),
    ('worker',   'EXECUTE ON FUNCTION {schema}.sendjobs_finalize(bigint, bigint, text, text, timestamptz)'),
    ('worker',   'EXECUTE ON FUNCTION {schema}.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)'),
    ('worker',   'EXECUTE ON FUNCTION {schema}.sendjobs_queue_limits(text)'),
    -- monitor: the stats, and reading the queue and the outbox, payloads excluded
    ('monitor',  'EXECUTE ON FUNCTION {schema}.sendjobs_stats()'),
    ('monitor',  'EXECUTE ON FUNCTION {schema}.sendjobs_queue_limits(text)'),
    ('monitor',  'SELECT (id, queue, transaction_id, idempotency_key, status, attempts, max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation, last_error, created_at, finished_at, redrive_of, ordering_key, priority, waits_for_key) ON TABLE {schema}.send_jobs'),
    -- the finished jobs' table too: a read of them need not scan send_jobs
    ('monitor',  'SELECT (id, queue, transaction_id, idempotency_key, status, attempts, max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation, last_error, created_at, finished_at, redrive_of, ordering_key, priority, waits_for_key) ON TABLE {schema}.send_jobs_finished'),
    ('monitor',  'SELECT ON TABLE {schema}.send_job_events, {schema}.sendjobs_queues, {schema}.sendjobs_consumers, {schema}.sendjobs_blocked_keys, {schema}.send_job_attempts'),
    -- relay: reading the outbox for a consumer (which moves its position)
    ('relay',    'EXECUTE ON FUNCTION {schema}.sendjobs_read_events(text, integer)'),
    -- admin: every function, and reading every table
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer, text, integer)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_enqueue_many(jsonb[], text[], timestamptz[], text[], text[], integer[], text[], integer[])'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_claim(integer, interval, text)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_heartbeat(bigint, bigint, interval)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_finalize(bigint, bigint, text, text, timestamptz)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_guard_terminal(regclass, name, text[], text[])'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_guard_terminal_trigger()'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_link_transactions(regclass, name, name, text, text, text)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_unlink_transactions()'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_grant(regrole, text)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_revoke(regrole, text)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_cancel(bigint)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_redrive(bigint[])'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_purge(interval, integer)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_notify(text, boolean)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_stats()'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_pause(text)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_resume(text)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_limit(text, integer, double precision, integer)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_block_keys(text, boolean)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_unblock_key(text)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_queue_limits(text)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_create_consumer(text, boolean, regrole, boolean)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_drop_consumer(text)'),
    ('admin',    'EXECUTE ON FUNCTION {schema}.sendjobs_read_events(text, integer)'),
    ('admin',    'SELECT ON TABLE {schema}.send_jobs, {schema}.send_job_events, {schema}.sendjobs_transaction_link, {schema}.sendjobs_queues, {schema}.send_jobs_finished, {schema}.send_job_keys, {schema}.sendjobs_consumers, {schema}.sendjobs_blocked_keys, {schema}.send_job_attempts')
  ) AS level (name, privilege)
 WHERE level.name = $1
