--- params: ids int8[], now timestamptz
--- columns: id, new_id, created, transaction_id, queue
-- sendjobs_redrive (src/redrive.rs), second statement: each failed job among $1,
-- locked by redrive_lock.sql in this transaction, is sent again as a new job due at $2:
-- same queue, payload, transaction_id, max_attempts, ordering key and priority, no idempotency key (the failed
-- job, kept as history, keeps its own), redrive_of naming the failed job. A job already
-- redriven (its new job in either table) keeps its first new job, which is returned
-- again. The unique indexes on redrive_of (one per table) stand behind the lock.
-- Rows: the failed job, its new job, whether this statement created it, the
-- transaction_id and the queue. Jobs of $1 that are not failed have no row:
-- src/redrive.rs says why.
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
-- A failed job that stopped its ordering key hands the key to its new job, which goes
-- first (sendjobs_blocked_keys, claim.sql).
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
