-- sendjobs_redrive (src/redrive.rs): each failed job among $1 (int8[]) is sent again as a
-- new job, due at $2: same queue, payload, transaction_id and max_attempts, no
-- idempotency key (the failed job, kept as history, keeps its own), redrive_of naming
-- the failed job. A job already redriven keeps its first new job (the unique index on
-- redrive_of), which is returned again. The failed rows are locked, so a concurrent
-- redrive or purge of the same job waits.
-- Rows: the failed job, its new job (NULL when another transaction created it after
-- this statement's snapshot), whether this statement created it, the transaction_id and
-- the queue. Jobs of $1 that are not failed have no row: src/redrive.rs says why.
WITH failed AS MATERIALIZED (
    SELECT id, queue, payload, transaction_id, max_attempts FROM @extschema@.send_jobs
     WHERE id = ANY ($1) AND status = 'failed'
     ORDER BY id
       FOR UPDATE
),
created AS (
    INSERT INTO @extschema@.send_jobs
           (queue, payload, transaction_id, max_attempts, next_attempt_at, redrive_of)
    SELECT queue, payload, transaction_id, max_attempts, $2, id FROM failed ORDER BY id
        ON CONFLICT (redrive_of) WHERE redrive_of IS NOT NULL DO NOTHING
 RETURNING id, redrive_of
)
SELECT failed.id, coalesce(created.id, earlier.id), created.id IS NOT NULL,
       failed.transaction_id, failed.queue
  FROM failed
  LEFT JOIN created ON created.redrive_of = failed.id
  LEFT JOIN @extschema@.send_jobs AS earlier
         ON earlier.redrive_of = failed.id AND created.id IS NULL
 ORDER BY failed.id
