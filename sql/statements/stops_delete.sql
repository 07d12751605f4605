--- params: keys text[]
--- columns: none
-- sendjobs_purge (src/verbs/purge.rs): of the stops stops_lock.sql locked, those whose job
-- no longer holds its key, judged in a snapshot taken after the locks.
DELETE FROM @extschema@.sendjobs_blocked_keys AS blocked
 WHERE blocked.ordering_key = ANY ($1)
   AND NOT EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS stopping WHERE stopping.id = blocked.job_id)
   AND NOT EXISTS (SELECT FROM @extschema@.send_jobs_finished AS stopping
                    WHERE stopping.id = blocked.job_id AND stopping.status = 'failed')
