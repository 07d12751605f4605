--- params: id int8, generation int8, now timestamptz, lease interval, capped bool
--- columns: id
-- sendjobs_heartbeat (src/finalize.rs): extend the lease of the claim ($1 id, $2 generation)
-- to $3 now + $4 lease, only while that claim is the current one of an in_flight job.
-- An expired lease of a queue with a cap on its jobs in flight is not extended: the cap's
-- count left it out (a claim may have taken its place), and reviving it would put the
-- queue over its cap (docs/decisions/0013-flow-control-in-the-claim.md); its finalize
-- still applies. The look-up runs only for a lease that has expired; $5 says the queue is
-- capped as committed now (under REPEATABLE READ this snapshot may not see the cap:
-- decision 0017).
UPDATE ONLY @extschema@.send_jobs AS job
   SET lease_expires_at = $3 + $4
 WHERE id = $1 AND status = 'in_flight' AND claim_generation = $2
   AND (job.lease_expires_at > $3
        OR NOT $5 AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS q
                                   WHERE q.queue = job.queue AND q.max_in_flight IS NOT NULL))
RETURNING id
