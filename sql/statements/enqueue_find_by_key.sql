-- sendjobs_enqueue: the job that already holds idempotency key $1.
SELECT job_id FROM @extschema@.send_job_keys WHERE idempotency_key = $1
