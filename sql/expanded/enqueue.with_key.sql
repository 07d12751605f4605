-- sql/statements/enqueue.sql, variant with_key, as the server runs it: written by
-- SENDJOBS_BLESS=1 from the source, which is the one to edit.
WITH key AS (
    INSERT INTO @extschema@.send_job_keys (idempotency_key, job_id)
    VALUES ($5, pg_catalog.nextval($7::pg_catalog.regclass))
    ON CONFLICT (idempotency_key) DO NOTHING
 RETURNING job_id
)
INSERT INTO @extschema@.send_jobs
       (id, payload, queue, next_attempt_at, transaction_id, idempotency_key, max_attempts, ordering_key, priority)
       OVERRIDING SYSTEM VALUE
SELECT key.job_id, $1, $2, $3, $4, $5, $6, $8, $9 FROM key
RETURNING id
