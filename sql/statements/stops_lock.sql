--- params: none
--- columns: ordering_key
-- sendjobs_purge (src/purge.rs), after its purge: the stops of ordering keys that their
-- job seems no longer to hold (sent, cancelled or purged), locked without waiting for one
-- being written. Only locked here: a stop that a failure rewrote after this statement's
-- snapshot is locked in its new version, and judged with the jobs as the snapshot saw
-- them, before that failure; stops_delete.sql judges them again in a snapshot taken once
-- the locks are held.
SELECT blocked.ordering_key FROM @extschema@.sendjobs_blocked_keys AS blocked
 WHERE NOT EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS stopping WHERE stopping.id = blocked.job_id)
   AND NOT EXISTS (SELECT FROM @extschema@.send_jobs_finished AS stopping
                    WHERE stopping.id = blocked.job_id AND stopping.status = 'failed')
   FOR UPDATE OF blocked SKIP LOCKED
