--- params: cutoff timestamptz, batch int8
--- columns: deleted
-- sendjobs_purge (src/verbs/purge.rs): delete up to $2 finished jobs that finished before
-- $1, with their idempotency keys and earlier attempts, found by age through
-- send_jobs_finished_finished_at_idx (SKIP LOCKED: a job a redrive holds stays). Also
-- kept: a redrive's new job while the failed job is (race11-redrive-across-purge.spec),
-- an event a consumer has not passed (decision 0011), a failed job that stops its key.
WITH old AS MATERIALIZED (
    SELECT job.id FROM @extschema@.send_jobs_finished AS job
     WHERE job.finished_at < $1
       AND NOT EXISTS (SELECT FROM @extschema@.send_jobs_finished AS original
                        WHERE original.id = job.redrive_of)
       AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_consumers AS reader
                        WHERE NOT pg_catalog.pg_visible_in_snapshot(job.event_xid, reader.passed))
       AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_blocked_keys AS blocked
                        WHERE blocked.job_id = job.id AND job.status = 'failed')
     LIMIT $2
       FOR UPDATE OF job SKIP LOCKED
),
gone AS (
    DELETE FROM @extschema@.send_jobs_finished AS job USING old WHERE job.id = old.id
 RETURNING job.id, job.idempotency_key
),
keys AS (
    DELETE FROM @extschema@.send_job_keys AS key USING gone
     WHERE key.idempotency_key = gone.idempotency_key AND key.job_id = gone.id
),
attempts AS (
    DELETE FROM @extschema@.send_job_attempts AS attempt USING gone WHERE attempt.job_id = gone.id
)
SELECT pg_catalog.count(*) AS deleted FROM gone
