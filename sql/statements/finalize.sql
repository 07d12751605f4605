--- params: ids int8[], generations int8[], outcome text, now timestamptz, retry_at timestamptz, backoff_base_ms float8, backoff_max_ms float8, error text
--- columns: id, status, attempts, transaction_id, readers, queue, ordering_key
-- sendjobs_finalize and sendjobs_finalize_batch (src/finalize.rs), in one statement:
-- the fenced finish of claims ($1[i], $2[i]), each fenced on its own, and for each claim
-- it applied what the caller and the business-row stamp need (src/finalize.rs puts them
-- back in the call's order: a join and a sort here cost a finalize 3-4% of its
-- instructions). A terminal result's row in send_jobs_finished is its event
-- (sql/schema.sql, send_job_events).
-- Variants: batch (the claims unnested, joined to the table) and one (a batch of one,
-- every sendjobs_finalize: the same statement without the unnest and the join, which
-- cost about as much as the finish itself for a single row); each terminal (the job moves to send_jobs_finished, sql/schema.sql says
-- why) and, as batch_retry and one_retry, a retry with attempts left (the job stays in
-- send_jobs, pending again). A retry runs the retry variant,
-- then the terminal one with $3 'retry' for the claims it did not apply: a retry on its
-- last attempt becomes 'failed' there (src/finalize.rs). One statement with both
-- branches set both up on every run, taken or not (a DELETE, an INSERT and the finished
-- table's indexes; an UPDATE and send_jobs' eight indexes), which cost a finalize of one
-- job a tenth to a fifth of its instructions (callgrind; BENCHMARKS.md, "Instructions
-- per job"). The backoff is base * 2^(attempts - 1) capped at max,
-- computed in milliseconds (no interval overflow). A claim that did not apply has no
-- row here; what its job is, and whether it was already finalized so, is looked up
-- afterwards in a snapshot of its own (finalize_unapplied.sql). A finished row
-- records the outcome that finished it ("outcome": how a repeat is recognised).
-- "readers": whether the outbox has consumers that asked to be woken (src/wakeup.rs);
-- "queue": the job's, whose workers a finish wakes when it has a cap on its jobs in flight
-- and wake-ups on (a place came free: docs/decisions/0013-flow-control-in-the-claim.md),
-- which src/finalize.rs asks only of the queues with flow control; "ordering_key": a
-- failed job's key stops if its queue blocks its keys (key_block.sql).
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
