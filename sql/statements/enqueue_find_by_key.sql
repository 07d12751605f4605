--- params: idempotency_key text
--- columns: job_id, job_exists
-- sendjobs_enqueue: the job that already holds idempotency key $1, and whether it still
-- exists (in either table): a job deleted other than by sendjobs_purge leaves its key.
SELECT key.job_id, EXISTS (SELECT FROM @extschema@.send_jobs AS job WHERE job.id = key.job_id) AS job_exists
  FROM @extschema@.send_job_keys AS key
 WHERE key.idempotency_key = $1
