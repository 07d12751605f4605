-- The queues page's chart: jobs finished per minute over the last hour, by queue, sent
-- and not sent (failed, cancelled). The finished rows only (the status list excludes
-- ONLY send_jobs by its NO INHERIT CHECK), found by the BRIN index on finished_at: its
-- cost grows with the hour's events (docs/console.md, "Page times").
SELECT queue,
       floor(extract(epoch FROM now() - finished_at) / 60)::int AS minutes_ago,
       count(*) FILTER (WHERE status = 'sent') AS sent,
       count(*) FILTER (WHERE status = 'failed') AS failed
  FROM @extschema@.send_jobs
 WHERE status IN ('sent', 'failed', 'cancelled')
   AND finished_at >= now() - interval '1 hour'
 GROUP BY 1, 2
