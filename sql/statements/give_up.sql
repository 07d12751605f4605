--- params: ids int8[], now timestamptz
--- columns: id, transaction_id, ordering_key, queue
-- The jobs a claim returned with gave_up (claim.sql), still locked by it: each fails,
-- moves to send_jobs_finished with its event, and its key may stop (key_block.sql). The
-- fence repeats what the claim saw (decision 0014).
WITH leaving AS (
    DELETE FROM ONLY @extschema@.send_jobs AS job
     WHERE job.id = ANY ($1) AND job.status = 'in_flight'
       AND job.lease_expires_at <= $2 AND job.attempts >= job.max_attempts
 RETURNING job.*
)
INSERT INTO @extschema@.send_jobs_finished
       (id, queue, payload, transaction_id, idempotency_key, status, attempts,
        max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation,
        last_error, created_at, finished_at, redrive_of, ordering_key, priority)
SELECT id, queue, payload, transaction_id, idempotency_key, 'failed', attempts,
       max_attempts, next_attempt_at, claimed_at, NULL, claim_generation,
       pg_catalog.concat('sendjobs: gave up: the lease of attempt ', attempts,
           ' of ', max_attempts, ' expired', ' (last error: ' || last_error || ')'),
       created_at, $2, redrive_of, ordering_key, priority
  FROM leaving
RETURNING id, transaction_id, ordering_key, queue
