--- params: key text
--- columns: stopped
-- sendjobs_unblock_key (src/flow/blocked_keys.rs): key $1's stop goes; whether it stopped
-- anything (its job unfinished or failed).
DELETE FROM @extschema@.sendjobs_blocked_keys AS blocked WHERE blocked.ordering_key = $1
RETURNING EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS stopping WHERE stopping.id = blocked.job_id)
       OR EXISTS (SELECT FROM @extschema@.send_jobs_finished AS stopping
                   WHERE stopping.id = blocked.job_id AND stopping.status = 'failed') AS stopped
