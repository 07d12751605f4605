--- params: ids int8[], generations int8[], outcome text, now timestamptz, retry_at timestamptz, backoff_base_ms float8, backoff_max_ms float8, error text
--- columns: id, status, attempts, transaction_id, readers, capped_queue
-- sendjobs_finalize and sendjobs_finalize_batch (src/finalize.rs), in one statement:
-- the fenced finish of claims ($1[i], $2[i]), each fenced on its own, and per claim what
-- the caller and the business-row stamp need. A terminal result's row in
-- send_jobs_finished is its event (sql/schema.sql, send_job_events).
-- Two variants: batch (the claims unnested, joined to the table, results in input
-- order) and one (a batch of one, every sendjobs_finalize: the same statement without
-- the unnest, the join and the sort, which cost about as much as the finish itself for
-- a single row).
-- A retry with attempts left stays in send_jobs, pending again (retried); any other
-- result is terminal and moves the job to send_jobs_finished (leaving, finished;
-- sql/schema.sql says why). A retry past max_attempts becomes 'failed'. The two
-- predicates cannot both hold for a row, and the one that does not apply to $3 is a
-- one-time filter of its branch. The backoff is base * 2^(attempts - 1) capped at max,
-- computed in milliseconds (no interval overflow). A claim that did not apply has a
-- NULL status here; what its job is, and whether it was already finalized so, is looked
-- up afterwards in a snapshot of its own (finalize_unapplied.sql). A finished row
-- records the outcome that finished it ("outcome": how a repeat is recognised).
-- "readers": whether the outbox has consumers that asked to be woken (src/wakeup.rs); "capped_queue": the
-- job's queue when it has a cap on its jobs in flight and wake-ups on (sendjobs_notify),
-- whose workers a finish wakes (a place came free:
-- docs/decisions/0013-flow-control-in-the-claim.md). Those queues are read once per
-- statement (a hashed subplan of the few rows of sendjobs_queues).
WITH
--- variant batch
claim AS (
    SELECT * FROM ROWS FROM (pg_catalog.unnest($1::int8[]), pg_catalog.unnest($2::int8[]))
                  WITH ORDINALITY AS c(id, generation, ord)
),
--- end
retried AS (
    UPDATE ONLY @extschema@.send_jobs AS job
       SET status = 'pending',
           next_attempt_at = coalesce($5, $4 + pg_catalog.make_interval(secs =>
               least($7, $6 * pg_catalog.power(2::float8, least(job.attempts - 1, 40))) / 1000.0)),
           lease_expires_at = NULL,
           last_error = coalesce($8, job.last_error)
--- variant batch
      FROM claim
     WHERE job.id = claim.id AND job.status = 'in_flight' AND job.claim_generation = claim.generation
--- variant one
     WHERE job.id = ($1::int8[])[1] AND job.status = 'in_flight'
       AND job.claim_generation = ($2::int8[])[1]
--- end
       AND $3 = 'retry' AND job.attempts < job.max_attempts
 RETURNING job.id, job.status, job.attempts, job.transaction_id, job.queue
),
leaving AS (
    DELETE FROM ONLY @extschema@.send_jobs AS job
--- variant batch
     USING claim
     WHERE job.id = claim.id AND job.status = 'in_flight' AND job.claim_generation = claim.generation
--- variant one
     WHERE job.id = ($1::int8[])[1] AND job.status = 'in_flight'
       AND job.claim_generation = ($2::int8[])[1]
--- end
       AND ($3 <> 'retry' OR job.attempts >= job.max_attempts)
 RETURNING job.*
),
finished AS (
    INSERT INTO @extschema@.send_jobs_finished
           (id, queue, payload, transaction_id, idempotency_key, status, attempts,
            max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation,
            last_error, created_at, finished_at, redrive_of, ordering_key, priority, outcome)
    SELECT id, queue, payload, transaction_id, idempotency_key,
           CASE WHEN $3 = 'retry' THEN 'failed' ELSE $3 END, attempts,
           max_attempts, next_attempt_at, claimed_at, NULL, claim_generation,
           coalesce($8, last_error), created_at, $4, redrive_of, ordering_key, priority, $3
      FROM leaving
 RETURNING id, status, attempts, transaction_id, queue
),
done AS (
    SELECT id, status, attempts, transaction_id, queue FROM retried
    UNION ALL
    SELECT id, status, attempts, transaction_id, queue FROM finished
)
--- variant batch
SELECT claim.id, done.status, done.attempts, done.transaction_id,
--- variant one
SELECT ($1::int8[])[1] AS id, done.status, done.attempts, done.transaction_id,
--- variant batch, one
       EXISTS (SELECT FROM @extschema@.sendjobs_consumers WHERE wake) AS readers,
       CASE WHEN done.queue IN (SELECT capped.queue FROM @extschema@.sendjobs_queues AS capped
                                 WHERE capped.max_in_flight IS NOT NULL AND capped.notify)
            THEN done.queue END AS capped_queue
--- variant batch
  FROM claim LEFT JOIN done ON done.id = claim.id
 ORDER BY claim.ord
--- variant one
  FROM (SELECT) AS one LEFT JOIN done ON true
--- end
