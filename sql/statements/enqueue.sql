--- params: payload jsonb, queue text, next_attempt_at timestamptz, transaction_id text, idempotency_key text, max_attempts int4, id_sequence oid, ordering_key text, priority int2
--- columns: id
-- sendjobs_enqueue (src/enqueue.rs): add a job; nothing when its idempotency key is taken.
-- $7 is the ids' sequence, send_jobs_id_seq, as an oid; $8 the ordering key (or NULL);
-- $9 the priority (minutes of head start in the claim order).
-- Two variants. no_key: a plain insert. with_key: the key is inserted into send_job_keys
-- first, with the id the job will have (from $7), and the job only when
-- the key was new: keys are unique across send_jobs and send_jobs_finished, which one
-- unique index could not span (sql/schema.sql). ON CONFLICT waits for a transaction that
-- holds the same key and has not committed yet.
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
