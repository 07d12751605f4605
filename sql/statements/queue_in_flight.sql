--- params: queue text, now timestamptz
--- columns: in_flight
-- sendjobs_claim (src/flow/allowance.rs), under the queue's lock: queue $1's unexpired
-- leases at $2, in a statement of its own so its snapshot follows the lock.
SELECT count(*) AS in_flight FROM ONLY @extschema@.send_jobs
 WHERE lease_expires_at > $2 AND lease_expires_at IS NOT NULL AND queue = $1
