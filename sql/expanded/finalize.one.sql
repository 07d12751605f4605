-- sql/statements/finalize.sql, variant one, as the server runs it: written by
-- SENDJOBS_BLESS=1 from the source, which is the one to edit.
WITH
leaving AS (
    DELETE FROM ONLY @extschema@.send_jobs AS job
     WHERE job.id = ($1::int8[])[1] AND job.status = 'in_flight'
       AND job.claim_generation = ($2::int8[])[1]
       AND ($3 <> 'retry' OR job.attempts >= job.max_attempts)
 RETURNING job.*
),
done AS (
    INSERT INTO @extschema@.send_jobs_finished
           (id, queue, payload, transaction_id, idempotency_key, status, attempts,
            max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation,
            last_error, created_at, finished_at, redrive_of, ordering_key, priority, outcome)
    SELECT id, queue, payload, transaction_id, idempotency_key,
           CASE WHEN $3 = 'retry' THEN 'failed' ELSE $3 END, attempts,
           max_attempts, next_attempt_at, claimed_at, NULL, claim_generation,
           coalesce($8, last_error), created_at, $4, redrive_of, ordering_key, priority, $3
      FROM leaving
 RETURNING id, status, attempts, transaction_id, queue, ordering_key
)
SELECT done.id, done.status, done.attempts, done.transaction_id,
       EXISTS (SELECT FROM @extschema@.sendjobs_consumers WHERE wake) AS readers,
       done.queue, done.ordering_key
  FROM done
