--- params: now timestamptz, places int8, cursor text, skip text[]
--- columns: queue
-- The queues a claim from any queue serves next (src/fair_share.rs; decision 0019):
-- up to $2 queues with a due job, in name order from the one after $3 (this backend's
-- last), round to the first again and back to $3; without a cursor, from the queue of the
-- oldest due job. A queue in $4 is passed over (paused, or left by this claim). Each step
-- is one descent of send_jobs_pending_queue_idx to the next queue's first job, its head:
-- the walk reads as many entries as the queues it passes, whatever their backlogs.
WITH RECURSIVE
start AS (
    SELECT coalesce($3, (SELECT job.queue FROM ONLY @extschema@.send_jobs AS job
                          WHERE job.status = 'pending'
                          ORDER BY pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority), job.id
                          LIMIT 1)) AS queue,
           $3 IS NOT NULL AS after
),
walk AS (
    SELECT first.queue, first.head, first.wrapped
      FROM start CROSS JOIN LATERAL (
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) AS head, false AS wrapped
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND job.queue = start.queue AND NOT start.after
             ORDER BY job.queue, 2 LIMIT 1)
           UNION ALL
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority), false
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND job.queue > start.queue
             ORDER BY job.queue, 2 LIMIT 1)
           UNION ALL
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority), true
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending'
             ORDER BY job.queue, 2 LIMIT 1)
           LIMIT 1) AS first
     WHERE NOT (first.wrapped AND (first.queue > start.queue OR (first.queue = start.queue AND NOT start.after)))
    UNION ALL
    SELECT next.queue, next.head, next.wrapped
      FROM walk CROSS JOIN start CROSS JOIN LATERAL (
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) AS head, walk.wrapped
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND job.queue > walk.queue
             ORDER BY job.queue, 2 LIMIT 1)
           UNION ALL
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority), true
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND NOT walk.wrapped
             ORDER BY job.queue, 2 LIMIT 1)
           LIMIT 1) AS next
     WHERE NOT (next.wrapped AND (next.queue > start.queue OR (next.queue = start.queue AND NOT start.after)))
)
SELECT queue FROM walk
 WHERE head <= pg_catalog.timezone(interval '0', $1)
   AND queue <> ALL ($4)
 LIMIT $2
