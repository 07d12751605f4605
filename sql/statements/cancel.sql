-- sendjobs_cancel (src/cancel.rs): job $1, when pending or in_flight, becomes cancelled
-- (terminal) with its 'cancelled' event; $2 now. A terminal job is left as it is. The
-- holder of an in_flight job loses it: its finalize and heartbeat are fenced on
-- status = 'in_flight' and now get 'stale'.
WITH cancelled AS (
    UPDATE @extschema@.send_jobs
       SET status = 'cancelled', finished_at = $2, lease_expires_at = NULL
     WHERE id = $1 AND status IN ('pending', 'in_flight')
 RETURNING id, transaction_id, claim_generation, queue
),
event AS (
    INSERT INTO @extschema@.send_job_events (job_id, transaction_id, kind, claim_generation, created_at, queue)
    SELECT id, transaction_id, 'cancelled', claim_generation, $2, queue FROM cancelled
)
SELECT id FROM cancelled
