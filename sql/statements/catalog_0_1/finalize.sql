-- sendjobs_finalize against a 0.1.0 catalog: the 0.2.0 library between the install of its files and
-- ALTER EXTENSION sendjobs UPDATE (README: Upgrading). A 0.1.0 catalog has no
-- send_jobs_finished and no send_job_keys: finished jobs stay in send_jobs.
-- sendjobs_finalize and sendjobs_finalize_batch (src/finalize.rs), in one statement:
-- the fenced update of claims ($1[i], $2[i]), each fenced on its own, the event of each
-- terminal result, and per claim what the caller and the business-row stamp need.
-- $1 ids (int8[]), $2 generations (int8[]), $3 outcome (text), $4 now (timestamptz),
-- $5 retry_at (timestamptz), $6 backoff base ms (float8), $7 backoff max ms (float8),
-- $8 error (text).
-- Two variants: batch (the claims unnested, joined to the table, results in input
-- order) and one (a batch of one, every sendjobs_finalize: the same update without the
-- unnest, the join and the sort, which cost about as much as the update itself for a
-- single row).
-- A retry past max_attempts becomes 'failed'. The backoff is base * 2^(attempts - 1)
-- capped at max, computed in milliseconds (no interval overflow). Whether a job that did
-- not apply exists at all ("known") is only looked up for the claims that did not apply.
WITH
--- variant batch
claim AS (
    SELECT * FROM ROWS FROM (pg_catalog.unnest($1::int8[]), pg_catalog.unnest($2::int8[]))
                  WITH ORDINALITY AS c(id, generation, ord)
),
--- end
done AS (
    UPDATE @extschema@.send_jobs AS job
       SET status = CASE WHEN $3 <> 'retry' THEN $3
                         WHEN job.attempts < job.max_attempts THEN 'pending'
                         ELSE 'failed' END,
           next_attempt_at = CASE
               WHEN $3 = 'retry' AND job.attempts < job.max_attempts
               THEN coalesce($5, $4 + pg_catalog.make_interval(secs =>
                        least($7, $6 * pg_catalog.power(2::float8, least(job.attempts - 1, 40))) / 1000.0))
               ELSE job.next_attempt_at END,
           finished_at = CASE WHEN $3 = 'retry' AND job.attempts < job.max_attempts
                              THEN NULL ELSE $4 END,
           lease_expires_at = NULL,
           last_error = coalesce($8, job.last_error)
--- variant batch
      FROM claim
     WHERE job.id = claim.id AND job.status = 'in_flight' AND job.claim_generation = claim.generation
--- variant one
     WHERE job.id = ($1::int8[])[1] AND job.status = 'in_flight'
       AND job.claim_generation = ($2::int8[])[1]
--- end
 RETURNING job.id, job.status, job.transaction_id, job.claim_generation, job.queue
),
event AS (
    INSERT INTO @extschema@.send_job_events (job_id, transaction_id, kind, claim_generation, created_at
                                            )
    SELECT id, transaction_id, status, claim_generation, $4
      FROM done
     WHERE status IN ('sent', 'failed')
)
--- variant batch
SELECT claim.id, done.status, done.transaction_id,
       CASE WHEN done.id IS NOT NULL THEN true
            ELSE EXISTS (SELECT FROM @extschema@.send_jobs known WHERE known.id = claim.id) END
  FROM claim LEFT JOIN done ON done.id = claim.id
 ORDER BY claim.ord
--- variant one
SELECT ($1::int8[])[1], done.status, done.transaction_id,
       CASE WHEN done.id IS NOT NULL THEN true
            ELSE EXISTS (SELECT FROM @extschema@.send_jobs known WHERE known.id = ($1::int8[])[1]) END
  FROM (SELECT) AS one LEFT JOIN done ON true
--- end
