--- params: id int8
--- columns: queue
-- sendjobs_heartbeat (src/finalize.rs), first: when job $1 is of a queue with a cap on its
-- jobs in flight, lock the queue's settings row FOR SHARE, so that the heartbeats and the
-- claims of that queue (FOR UPDATE: src/flow.rs) take turns. A claim then counts the jobs
-- in flight after every heartbeat that committed before its turn, and a heartbeat that
-- waited for a claim reads the clock again (src/finalize.rs): a lease that expired
-- meanwhile is not extended. Without it, a heartbeat that read the clock just before its
-- lease ended and committed after a claim had counted that lease out put the queue over
-- its cap (the soak: 5 of a cap of 4). Other queues: no row, no lock.
SELECT q.queue
  FROM @extschema@.sendjobs_queues AS q
  JOIN ONLY @extschema@.send_jobs AS job ON job.queue = q.queue
 WHERE job.id = $1 AND q.max_in_flight IS NOT NULL
   FOR SHARE OF q
