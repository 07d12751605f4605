-- sendjobs_enqueue: the job that already holds idempotency key $1.
SELECT id FROM @extschema@.send_jobs WHERE idempotency_key = $1
