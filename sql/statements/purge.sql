--- params: cutoff timestamptz, batch int8
--- columns: deleted
-- sendjobs_purge (src/purge.rs): delete up to $2 finished jobs whose event is older than
-- the cutoff $1 (never later than now: src/purge.rs), and with them their events and
-- idempotency keys. Found through the events, by send_job_events_created_at_idx: every
-- finished job has exactly one event, as old as its finished_at, so no event younger than
-- the cutoff is deleted. Only send_jobs_finished is read: the unfinished jobs are never
-- touched. SKIP LOCKED: a job that sendjobs_redrive holds stays. A redriven job's new job
-- stays while the failed job is kept: it is the redrive's record that the failed job was
-- sent again, and without it a later sendjobs_redrive of the failed job would send it a
-- second time (tests/isolation/specs/race11-redrive-across-purge.spec). The failed job is
-- older, so a purge reaches it first, unless a redrive holds it.
WITH old AS MATERIALIZED (
    SELECT job.id FROM @extschema@.send_job_events AS event
      JOIN @extschema@.send_jobs_finished AS job ON job.id = event.job_id
     WHERE event.created_at < $1
       AND NOT EXISTS (SELECT FROM @extschema@.send_jobs_finished AS original
                        WHERE original.id = job.redrive_of)
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
events AS (
    DELETE FROM @extschema@.send_job_events AS event USING gone WHERE event.job_id = gone.id
)
SELECT pg_catalog.count(*) AS deleted FROM gone
