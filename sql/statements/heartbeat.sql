--- params: id int8, generation int8, now timestamptz, lease interval, capped bool
--- columns: id
-- sendjobs_heartbeat (src/verbs/finalize.rs): extend the lease of claim ($1, $2) to $3 + $4
-- while it is the current one. An expired lease of a capped queue is not revived, as it
-- may have lost its place (decision 0013); $5: the queue is capped as committed now
-- (decision 0017).
UPDATE ONLY @extschema@.send_jobs AS job
   SET lease_expires_at = $3 + $4
 WHERE id = $1 AND status = 'in_flight' AND claim_generation = $2
   AND (job.lease_expires_at > $3
        OR NOT $5 AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS q
                                   WHERE q.queue = job.queue AND q.max_in_flight IS NOT NULL))
RETURNING id
