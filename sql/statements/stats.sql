-- sendjobs_stats (src/stats.rs): one row per queue with unfinished jobs or events in the
-- last 5 minutes; $1 now. Each part reads only the index made for it, so the cost
-- follows the backlog's index entries, not the table (src/tests/plans.rs):
--   pending   send_jobs_pending_queue_idx: queue and next_attempt_at are in the index,
--             so an index-only scan where the visibility map allows;
--   held      send_jobs_lease_idx: exactly the in_flight rows (few);
--   finished  send_job_events_created_at_idx: the last 5 minutes of events.
-- The table-wide figures (dead tuples, what holds vacuum back) repeat on every row. They
-- are read as the extension's owner, who sees every backend in pg_stat_activity.
WITH pending AS (
    SELECT queue,
           pg_catalog.count(*) FILTER (WHERE next_attempt_at <= $1) AS ready,
           pg_catalog.count(*) FILTER (WHERE next_attempt_at > $1) AS scheduled,
           pg_catalog.min(next_attempt_at) AS oldest_due
      FROM @extschema@.send_jobs
     WHERE status = 'pending'
     GROUP BY queue
),
held AS (
    SELECT queue,
           pg_catalog.count(*) FILTER (WHERE lease_expires_at > $1) AS in_flight,
           pg_catalog.count(*) FILTER (WHERE lease_expires_at <= $1) AS expired,
           pg_catalog.count(*) FILTER (WHERE attempts >= max_attempts) AS at_last_attempt
      FROM @extschema@.send_jobs
     WHERE lease_expires_at IS NOT NULL
     GROUP BY queue
),
finished AS (
    -- Events staged before 0.2.0 have no queue: their job's (the sub-select runs for them alone).
    SELECT coalesce(event.queue, (SELECT job.queue FROM @extschema@.send_jobs AS job
                                    WHERE job.id = event.job_id)) AS queue,
           pg_catalog.count(*) FILTER (WHERE event.kind = 'sent') AS sent,
           pg_catalog.count(*) FILTER (WHERE event.kind = 'failed') AS failed,
           pg_catalog.count(*) FILTER (WHERE event.kind = 'cancelled') AS cancelled
      FROM @extschema@.send_job_events AS event
     WHERE event.created_at > $1 - interval '5 minutes'
     GROUP BY 1
),
vacuum AS (
    SELECT pg_catalog.pg_stat_get_dead_tuples('@extschema@.send_jobs'::pg_catalog.regclass) AS dead_tuples,
           (SELECT $1 - pg_catalog.min(xact_start) FROM pg_catalog.pg_stat_activity
             WHERE (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
               AND pid <> pg_catalog.pg_backend_pid()) AS oldest_xmin_age,
           greatest(
               (SELECT pg_catalog.max(greatest(pg_catalog.age(backend_xmin), pg_catalog.age(backend_xid)))
                  FROM pg_catalog.pg_stat_activity
                 WHERE pid <> pg_catalog.pg_backend_pid()),
               (SELECT pg_catalog.max(pg_catalog.age(transaction)) FROM pg_catalog.pg_prepared_xacts),
               (SELECT pg_catalog.max(greatest(pg_catalog.age(xmin), pg_catalog.age(catalog_xmin)))
                  FROM pg_catalog.pg_replication_slots))::int8 AS oldest_xmin_xids
)
SELECT q.queue,
       coalesce(p.ready, 0), coalesce(p.scheduled, 0),
       coalesce(h.in_flight, 0), coalesce(h.expired, 0),
       coalesce(h.at_last_attempt, 0),
       CASE WHEN p.oldest_due <= $1 THEN $1 - p.oldest_due END,
       coalesce(f.sent, 0), coalesce(f.failed, 0),
       coalesce(f.cancelled, 0),
       v.dead_tuples, v.oldest_xmin_age, v.oldest_xmin_xids
  FROM (SELECT queue FROM pending UNION SELECT queue FROM held UNION SELECT queue FROM finished) AS q
  LEFT JOIN pending AS p ON p.queue = q.queue
  LEFT JOIN held AS h ON h.queue = q.queue
  LEFT JOIN finished AS f ON f.queue = q.queue
 CROSS JOIN vacuum AS v
 ORDER BY q.queue
