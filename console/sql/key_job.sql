-- The job holding an idempotency key (send_job_keys' primary key), when the role may read it.
SELECT job_id FROM @extschema@.send_job_keys WHERE idempotency_key = $1
