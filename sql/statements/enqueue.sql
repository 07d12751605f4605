--- params: payload jsonb, queue text, next_attempt_at timestamptz, transaction_id text, idempotency_key text, max_attempts int4, id_sequence oid, ordering_key text, priority int2
--- columns: id
-- sendjobs_enqueue (src/verbs/enqueue.rs): add a job; nothing when its idempotency key is
-- taken. $7 is send_jobs_id_seq's oid. Variant with_key inserts the key into
-- send_job_keys first (keys are unique across both tables: sql/schema.sql), then the job.
--- variant with_key
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
--- variant no_key
INSERT INTO @extschema@.send_jobs
       (payload, queue, next_attempt_at, transaction_id, idempotency_key, max_attempts, ordering_key, priority)
VALUES ($1, $2, $3, $4, $5, $6, $8, $9)
RETURNING id
--- end
