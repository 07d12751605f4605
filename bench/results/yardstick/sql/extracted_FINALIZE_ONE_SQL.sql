WITH 
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
         WHERE job.id = ($1::int8[])[1] AND job.status = 'in_flight'
           AND job.claim_generation = ($2::int8[])[1]
     RETURNING job.id, job.status, job.transaction_id, job.claim_generation
    ),
    event AS (
        INSERT INTO @extschema@.send_job_events (job_id, transaction_id, kind, claim_generation, created_at)
        SELECT id, transaction_id, status, claim_generation, $4
          FROM done
         WHERE status IN ('sent', 'failed')
    )
    SELECT ($1::int8[])[1], done.status, done.transaction_id,
           CASE WHEN done.id IS NOT NULL THEN true
                ELSE EXISTS (SELECT FROM @extschema@.send_jobs known WHERE known.id = ($1::int8[])[1]) END
      FROM (SELECT) AS one LEFT JOIN done ON true
