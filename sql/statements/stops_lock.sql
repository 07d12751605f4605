--- params: none
--- columns: ordering_key
-- sendjobs_purge (src/verbs/purge.rs), after its purge: lock, without waiting, the stops
-- whose job seems no longer to hold its key; stops_delete.sql judges them again in a
-- snapshot taken once the locks are held (a failure may have rewritten one since this snapshot).
SELECT blocked.ordering_key FROM @extschema@.sendjobs_blocked_keys AS blocked
 WHERE NOT EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS stopping WHERE stopping.id = blocked.job_id)
   AND NOT EXISTS (SELECT FROM @extschema@.send_jobs_finished AS stopping
                    WHERE stopping.id = blocked.job_id AND stopping.status = 'failed')
   FOR UPDATE OF blocked SKIP LOCKED
