--- params: id int8, now timestamptz
--- columns: id, freed_queue, ordering_key
-- sendjobs_cancel (src/cancel.rs): job $1, when pending or in_flight, becomes cancelled
-- (terminal) and moves to send_jobs_finished, where its row is its 'cancelled' event
-- (sql/schema.sql); $2 now. A terminal job is left as it is. The holder of an in_flight job loses it: its
-- finalize and heartbeat are fenced on an in_flight row in send_jobs and now get 'stale'.
-- "freed_queue": the job's queue when it was in flight there: a place came free, and
-- src/cancel.rs wakes the queue's workers when it has a cap and wake-ups on (as a
-- finalize's: src/wakeup.rs). "ordering_key": the jobs that waited for this one may be
-- free now (src/key_waits.rs).
WITH leaving AS (
    DELETE FROM ONLY @extschema@.send_jobs
     WHERE id = $1 AND status IN ('pending', 'in_flight')
 RETURNING *
),
cancelled AS (
    INSERT INTO @extschema@.send_jobs_finished
           (id, queue, payload, transaction_id, idempotency_key, status, attempts,
            max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation,
            last_error, created_at, finished_at, redrive_of, ordering_key, priority)
    SELECT id, queue, payload, transaction_id, idempotency_key, 'cancelled', attempts,
           max_attempts, next_attempt_at, claimed_at, NULL, claim_generation,
           last_error, created_at, $2, redrive_of, ordering_key, priority
      FROM leaving
 RETURNING id
)
SELECT cancelled.id,
       CASE WHEN leaving.status = 'in_flight' THEN leaving.queue END AS freed_queue,
       leaving.ordering_key
  FROM cancelled JOIN leaving USING (id)
