-- sendjobs_enqueue against a 0.1.0 catalog: the 0.2.0 library between the install of its files and
-- ALTER EXTENSION sendjobs UPDATE (README: Upgrading). A 0.1.0 catalog has no
-- send_jobs_finished and no send_job_keys: finished jobs stay in send_jobs.
-- sendjobs_enqueue (src/enqueue.rs): add a job; nothing when its idempotency key is taken.
-- $1 payload, $2 queue, $3 next_attempt_at, $4 transaction_id, $5 idempotency_key,
-- $6 max_attempts. The conflict target names the partial index's predicate.
INSERT INTO @extschema@.send_jobs
       (payload, queue, next_attempt_at, transaction_id, idempotency_key, max_attempts)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id
