--- params: id int8
--- columns: queue
-- sendjobs_heartbeat (src/verbs/finalize.rs), first: job $1's queue, when capped, its
-- settings row locked FOR SHARE, so that its heartbeats and claims (FOR UPDATE) take turns
-- and a claim counts every committed heartbeat (decision 0013). Other queues: no row.
SELECT q.queue
  FROM @extschema@.sendjobs_queues AS q
  JOIN ONLY @extschema@.send_jobs AS job ON job.queue = q.queue
 WHERE job.id = $1 AND q.max_in_flight IS NOT NULL
   FOR SHARE OF q
