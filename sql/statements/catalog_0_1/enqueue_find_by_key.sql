-- sendjobs_enqueue against a 0.1.0 catalog: the 0.2.0 library between the install of its files and
-- ALTER EXTENSION sendjobs UPDATE (README: Upgrading). A 0.1.0 catalog has no
-- send_jobs_finished and no send_job_keys: finished jobs stay in send_jobs.
-- sendjobs_enqueue: the job that already holds idempotency key $1, and true (it exists:
-- it is the row found), as the 0.2.0 statement answers.
SELECT id, true FROM @extschema@.send_jobs WHERE idempotency_key = $1
