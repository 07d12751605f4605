--- params: id int8, now timestamptz
--- columns: id, freed_queue, ordering_key
-- sendjobs_cancel (src/verbs/cancel.rs): job $1, pending or in_flight, is cancelled and
-- moves to send_jobs_finished (its row is the event); its holder's finalize and heartbeat
-- get 'stale'. "freed_queue": a place came free (src/machinery/wakeup.rs); "ordering_key":
-- for src/flow/key_waits.rs.
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
