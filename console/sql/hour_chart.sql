-- The queues page's chart: jobs finished per minute over the last hour, by queue, sent
-- and failed. The finished jobs' own table (a read through send_jobs would scan every
-- unfinished job too), found by its BRIN index on finished_at: its cost grows with the
-- hour's events (docs/console.md, "Page times"); read once for every page (figures.rs).
SELECT queue,
       pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.now() - finished_at) / 60)::int AS minutes_ago,
       count(*) FILTER (WHERE status = 'sent') AS sent,
       count(*) FILTER (WHERE status = 'failed') AS failed
  FROM @extschema@.send_jobs_finished
 WHERE finished_at >= pg_catalog.now() - interval '1 hour'
   AND status IN ('sent', 'failed')
 GROUP BY 1, 2
