--- params: key text
--- columns: job_id
-- sendjobs_unblock_key (src/flow.rs): ordering key $1 goes on past the job that stopped
-- it; the job's id, when the key was stopped.
DELETE FROM @extschema@.sendjobs_blocked_keys WHERE ordering_key = $1
RETURNING job_id
