-- sendjobs_purge (src/purge.rs): delete up to $2 finished jobs whose event is older than
-- $3 at $1 (now), and with them their events and idempotency keys. Found through the
-- events, by send_job_events_created_at_idx: every finished job has exactly one event,
-- as old as its finished_at, so no event younger than the cutoff is deleted. Only
-- send_jobs_finished is read: the unfinished jobs are never touched. SKIP LOCKED: a job
-- that sendjobs_redrive holds stays.
WITH old AS MATERIALIZED (
    SELECT job.id FROM @extschema@.send_job_events AS event
      JOIN @extschema@.send_jobs_finished AS job ON job.id = event.job_id
     WHERE event.created_at < $1 - $3
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
SELECT pg_catalog.count(*) FROM gone
