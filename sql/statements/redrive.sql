--- params: ids int8[], now timestamptz
--- columns: id, new_id, created, transaction_id, queue
-- sendjobs_redrive (src/verbs/redrive.rs), second statement: each failed job of $1, locked
-- by redrive_lock.sql, sent again as a new job due at $2, redrive_of naming it (no
-- idempotency key: the failed job keeps its own). A job redriven before returns its
-- first new job. Jobs of $1 that are not failed have no row (src/verbs/redrive.rs).
WITH failed AS MATERIALIZED (
    SELECT id, queue, payload, transaction_id, max_attempts, ordering_key, priority FROM @extschema@.send_jobs_finished
     WHERE id = ANY ($1) AND status = 'failed'
),
earlier AS MATERIALIZED (
    SELECT id, redrive_of FROM @extschema@.send_jobs WHERE redrive_of = ANY ($1)
),
created AS (
    INSERT INTO @extschema@.send_jobs
           (queue, payload, transaction_id, max_attempts, next_attempt_at, redrive_of, ordering_key, priority)
    SELECT queue, payload, transaction_id, max_attempts, $2, id, ordering_key, priority FROM failed
     WHERE NOT EXISTS (SELECT FROM earlier WHERE earlier.redrive_of = failed.id)
     ORDER BY id
 RETURNING id, redrive_of
),
-- A failed job that stopped its key hands it to its new job.
handed AS (
    UPDATE @extschema@.sendjobs_blocked_keys AS blocked SET job_id = created.id
      FROM created
     WHERE blocked.job_id = created.redrive_of
)
SELECT failed.id, coalesce(created.id, earlier.id) AS new_id, created.id IS NOT NULL AS created,
       failed.transaction_id, failed.queue
  FROM failed
  LEFT JOIN created ON created.redrive_of = failed.id
  LEFT JOIN earlier ON earlier.redrive_of = failed.id
 ORDER BY failed.id
