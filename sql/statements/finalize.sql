--- params: ids int8[], generations int8[], outcome text, now timestamptz, retry_at timestamptz, backoff_base_ms float8, backoff_max_ms float8, error text
--- columns: id, status, attempts, transaction_id, readers, queue, ordering_key
-- sendjobs_finalize and sendjobs_finalize_batch (src/verbs/finalize.rs): the finish of
-- claims ($1[i], $2[i]), each fenced on its own, and for each claim it applied what the
-- caller and the business-row stamp need, in no order (src/verbs/finalize.rs orders them).
-- Variants: batch and one (a batch of one, without the unnest and the join); each terminal
-- (the job moves to send_jobs_finished, where its row is its event) or, as batch_retry and
-- one_retry, a retry with attempts left. A retry runs its retry variant, then the
-- terminal one with $3 'retry' for the claims it did not apply: a retry on its last
-- attempt becomes 'failed' (decision 0014). The backoff, base * 2^(attempts - 1) capped
-- at max, is computed in milliseconds. A claim not applied is looked up afterwards by
-- finalize_unapplied.sql. "readers": consumers to wake (src/machinery/wakeup.rs); "queue":
-- whose workers a freed place may wake (decision 0013); "ordering_key": for key_block.sql.
WITH
--- variant batch, batch_retry
claim AS (
    SELECT * FROM ROWS FROM (pg_catalog.unnest($1::int8[]), pg_catalog.unnest($2::int8[]))
                  AS c(id, generation)
),
--- variant batch_retry, one_retry
done AS (
    UPDATE ONLY @extschema@.send_jobs AS job
       SET status = 'pending',
           next_attempt_at = coalesce($5, $4 + pg_catalog.make_interval(secs =>
               least($7, $6 * pg_catalog.power(2::float8, least(job.attempts - 1, 40))) / 1000.0)),
           lease_expires_at = NULL,
           last_error = coalesce($8, job.last_error)
--- variant batch_retry
      FROM claim
     WHERE job.id = claim.id AND job.status = 'in_flight' AND job.claim_generation = claim.generation
--- variant one_retry
     WHERE job.id = ($1::int8[])[1] AND job.status = 'in_flight'
       AND job.claim_generation = ($2::int8[])[1]
--- variant batch_retry, one_retry
       AND job.attempts < job.max_attempts
 RETURNING job.id, job.status, job.attempts, job.transaction_id, job.queue, job.ordering_key
)
--- variant batch, one
leaving AS (
    DELETE FROM ONLY @extschema@.send_jobs AS job
--- variant batch
     USING claim
     WHERE job.id = claim.id AND job.status = 'in_flight' AND job.claim_generation = claim.generation
--- variant one
     WHERE job.id = ($1::int8[])[1] AND job.status = 'in_flight'
       AND job.claim_generation = ($2::int8[])[1]
--- variant batch, one
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
--- end
SELECT done.id, done.status, done.attempts, done.transaction_id,
--- variant batch, one
       EXISTS (SELECT FROM @extschema@.sendjobs_consumers WHERE wake) AS readers,
--- variant batch_retry, one_retry
       NULL::boolean AS readers,
--- end
       done.queue, done.ordering_key
  FROM done
