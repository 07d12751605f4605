--- params: key text
--- columns: stopped
-- sendjobs_unblock_key (src/flow.rs): ordering key $1 goes on past the job that stopped
-- it; whether the key was stopped (its stop's job unfinished or failed: a stop whose job
-- was sent or cancelled stopped nothing any more, and goes too).
DELETE FROM @extschema@.sendjobs_blocked_keys AS blocked WHERE blocked.ordering_key = $1
RETURNING EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS stopping WHERE stopping.id = blocked.job_id)
       OR EXISTS (SELECT FROM @extschema@.send_jobs_finished AS stopping
                   WHERE stopping.id = blocked.job_id AND stopping.status = 'failed') AS stopped
