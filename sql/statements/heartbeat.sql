--- params: id int8, generation int8, now timestamptz, lease interval
--- columns: id
-- sendjobs_heartbeat (src/finalize.rs): extend the lease of the claim ($1 id, $2 generation)
-- to $3 now + $4 lease, only while that claim is the current one of an in_flight job.
UPDATE ONLY @extschema@.send_jobs
   SET lease_expires_at = $3 + $4
 WHERE id = $1 AND status = 'in_flight' AND claim_generation = $2
RETURNING id
