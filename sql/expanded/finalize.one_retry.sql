-- sql/statements/finalize.sql, variant one_retry, as the server runs it: written by
-- SENDJOBS_BLESS=1 from the source, which is the one to edit.
WITH
done AS (
    UPDATE ONLY @extschema@.send_jobs AS job
       SET status = 'pending',
           next_attempt_at = coalesce($5, $4 + pg_catalog.make_interval(secs =>
               least($7, $6 * pg_catalog.power(2::float8, least(job.attempts - 1, 40))) / 1000.0)),
           lease_expires_at = NULL,
           last_error = coalesce($8, job.last_error)
     WHERE job.id = ($1::int8[])[1] AND job.status = 'in_flight'
       AND job.claim_generation = ($2::int8[])[1]
       AND job.attempts < job.max_attempts
 RETURNING job.id, job.status, job.attempts, job.transaction_id, job.queue, job.ordering_key
)
SELECT done.id, done.status, done.attempts, done.transaction_id,
       NULL::boolean AS readers,
       done.queue, done.ordering_key
  FROM done
