--- params: queue text, now timestamptz
--- columns: in_flight
-- sendjobs_claim (src/flow.rs), under the queue's lock: how many jobs of queue $1 hold an
-- unexpired lease at $2 (an expired one does not count: the claim may take it again). In
-- its own statement, so that in READ COMMITTED its snapshot is taken after the lock: it
-- sees every claim of the queue that committed before this one got the lock. Read from
-- the lease index: only jobs in flight have an entry.
SELECT count(*) AS in_flight FROM ONLY @extschema@.send_jobs
 WHERE lease_expires_at > $2 AND lease_expires_at IS NOT NULL AND queue = $1
