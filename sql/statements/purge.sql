--- params: cutoff timestamptz, batch int8
--- columns: deleted
-- sendjobs_purge (src/purge.rs): delete up to $2 finished jobs (each its own event) that
-- finished before the cutoff $1 (never later than now: src/purge.rs), and with them their
-- idempotency keys and earlier attempts. Found by age through send_jobs_finished_finished_at_idx. Only
-- send_jobs_finished is read: the unfinished jobs are never touched. SKIP LOCKED: a job
-- that sendjobs_redrive holds stays. A redriven job's new job stays while the failed job
-- is kept: it is the redrive's record that the failed job was sent again, and without it
-- a later sendjobs_redrive of the failed job would send it a second time
-- (tests/isolation/specs/race11-redrive-across-purge.spec). The failed job is older, so
-- a purge reaches it first, unless a redrive holds it. An event that a consumer of the
-- outbox has not passed yet stays (it is not visible in the consumer's passed snapshot):
-- docs/decisions/0011-one-row-per-finished-job.md. A failed job that stops its ordering
-- key (sendjobs_blocked_keys) stays while it does (the stops that no job holds any more go
-- afterwards: stops_lock.sql).
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
