--- params: now timestamptz, send_jobs oid
--- columns: queue, ready, scheduled, in_flight, expired, at_last_attempt, oldest_ready_age, sent_5m, failed_5m, cancelled_5m, estimated, dead_tuples, oldest_xmin_age, oldest_xmin_xids, paused, max_in_flight, rate, tokens
-- sendjobs_stats (src/verbs/stats.rs): one row per queue with unfinished jobs or events in
-- the last 5 minutes; $1 now, $2 send_jobs' oid. Its cost is bounded whatever the backlog:
-- each count is exact up to 10,000 and may be estimated from a sample above, one id
-- drawn in each of as many equal slices, a count being hits x slice width (decision
-- 0010; the rules: docs/reference.md, sendjobs_stats; the plan: src/tests/plans.rs).
-- Unfinished jobs are read from send_jobs alone (ONLY), events from send_jobs_finished
-- by its indexes, the jobs in flight through send_jobs_lease_idx (few). The table-wide
-- figures repeat on every row, read as the extension's owner.
WITH RECURSIVE pending_queues AS (
    -- A skip scan: one descent of the pending index per queue.
    SELECT pg_catalog.min(queue) AS queue FROM ONLY @extschema@.send_jobs WHERE status = 'pending'
    UNION ALL
    SELECT (SELECT pg_catalog.min(job.queue) FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND job.queue > seen.queue)
      FROM pending_queues AS seen
     WHERE seen.queue IS NOT NULL
),
pending_cells AS (
    -- Per queue and side of $1 in claim order (ahead: the due jobs, and those whose head
    -- start reaches before a due time still to come; behind: scheduled), up to 1,001
    -- entries: their count, the due ones, the lowest id. Each side in a branch of its
    -- own, bounded by $1 alone, so the generic plan keeps the index order (decision 0010).
    SELECT q.queue, state.ready, first.n, first.n_due, first.low_id, first.oldest_due
      FROM pending_queues AS q
     CROSS JOIN (VALUES (true), (false)) AS state(ready)
     CROSS JOIN LATERAL (
           SELECT pg_catalog.count(*) AS n, pg_catalog.count(*) FILTER (WHERE entry.due) AS n_due,
                  pg_catalog.min(entry.id) AS low_id,
                  pg_catalog.min(entry.next_attempt_at) FILTER (WHERE entry.due) AS oldest_due
             FROM ((SELECT job.id, job.next_attempt_at, job.next_attempt_at <= $1 AS due
                      FROM ONLY @extschema@.send_jobs AS job
                     WHERE state.ready AND job.status = 'pending' AND job.queue = q.queue
                       AND pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) <= pg_catalog.timezone(interval '0', $1)
                     ORDER BY pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) LIMIT 1001)
                   UNION ALL
                   (SELECT job.id, job.next_attempt_at, false
                      FROM ONLY @extschema@.send_jobs AS job
                     WHERE NOT state.ready AND job.status = 'pending' AND job.queue = q.queue
                       AND pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) > pg_catalog.timezone(interval '0', $1)
                     ORDER BY pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) LIMIT 1001)) AS entry) AS first
     WHERE q.queue IS NOT NULL
),
pending_slices AS (
    -- Only when a count passed 1,000: the ids from the lowest such a count saw to the
    -- highest (an older pending job due after its state's first 1,001 is left out).
    SELECT low, (high - low) / 2048.0 AS width
      FROM (SELECT pg_catalog.min(low_id) FILTER (WHERE n > 1000) AS low,
                   (SELECT pg_catalog.max(id) + 1 FROM ONLY @extschema@.send_jobs) AS high
              FROM pending_cells) AS bounds
     WHERE low IS NOT NULL
),
pending_sampled AS (
    -- Each sampled job counted in its cell, and by whether it is due.
    SELECT job.queue, job.ahead AS ready, pg_catalog.count(*) AS hits,
           pg_catalog.count(*) * pg_catalog.max(r.width) AS estimate,
           pg_catalog.count(*) FILTER (WHERE job.due) * pg_catalog.max(r.width) AS due_estimate
      FROM pending_slices AS r
     CROSS JOIN LATERAL (SELECT r.low + pg_catalog.floor((slice + pg_catalog.random()) * r.width)::int8 AS id
                           FROM pg_catalog.generate_series(0, 2047) AS slice) AS sampled
     -- OFFSET 0: one probe of the primary key per sampled id, never a hash join that
     -- reads send_jobs whole (decision 0010)
     CROSS JOIN LATERAL (SELECT job.queue, job.next_attempt_at <= $1 AS due,
                                pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) <= pg_catalog.timezone(interval '0', $1) AS ahead
                           FROM ONLY @extschema@.send_jobs AS job
                          WHERE job.id = sampled.id AND job.status = 'pending'
                         OFFSET 0) AS job
     GROUP BY 1, 2
),
pending_counted AS (
    -- The cells past 1,000 the sample does not put clearly above 10,000: up to 10,001.
    SELECT c.queue, c.ready, counted.n, counted.n_due
      FROM pending_cells AS c
      LEFT JOIN pending_sampled AS s ON s.queue = c.queue AND s.ready = c.ready
     CROSS JOIN LATERAL (
           SELECT pg_catalog.count(*) AS n, pg_catalog.count(*) FILTER (WHERE entry.due) AS n_due
             FROM ((SELECT job.next_attempt_at <= $1 AS due FROM ONLY @extschema@.send_jobs AS job
                     WHERE c.ready AND job.status = 'pending' AND job.queue = c.queue
                       AND pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) <= pg_catalog.timezone(interval '0', $1)
                     ORDER BY pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) LIMIT 10001)
                   UNION ALL
                   (SELECT false FROM ONLY @extschema@.send_jobs AS job
                     WHERE NOT c.ready AND job.status = 'pending' AND job.queue = c.queue
                       AND pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) > pg_catalog.timezone(interval '0', $1)
                     ORDER BY pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) LIMIT 10001)) AS entry) AS counted
     WHERE c.n > 1000 AND NOT (coalesce(s.hits, 0) >= 64 AND s.estimate > 30000)
),
pending_cell_counts AS (
    -- Exact up to 10,000; past that, the sample's estimate, never below the 10,001
    -- counted.
    SELECT c.queue, c.oldest_due, counts.ready, counts.scheduled,
           c.n > 1000 AND coalesce(k.n, 10001) > 10000 AS estimated
      FROM pending_cells AS c
      LEFT JOIN pending_counted AS k ON k.queue = c.queue AND k.ready = c.ready
      LEFT JOIN pending_sampled AS s ON s.queue = c.queue AND s.ready = c.ready
     CROSS JOIN LATERAL (
           SELECT pg_catalog.round(coalesce(s.due_estimate, 0))::int8 AS due,
                  pg_catalog.round(coalesce(s.estimate - s.due_estimate, 0))::int8 AS undue) AS e
     CROSS JOIN LATERAL (
           SELECT CASE WHEN c.n <= 1000 THEN c.n_due
                       WHEN k.n <= 10000 THEN k.n_due
                       WHEN c.ready THEN greatest(10001 - e.undue, e.due)
                       ELSE 0 END AS ready,
                  CASE WHEN c.n <= 1000 THEN c.n - c.n_due
                       WHEN k.n <= 10000 THEN k.n - k.n_due
                       WHEN c.ready THEN e.undue
                       ELSE greatest(10001, e.undue) END AS scheduled) AS counts
),
pending AS (
    SELECT queue,
           pg_catalog.sum(ready)::int8 AS ready,
           pg_catalog.sum(scheduled)::int8 AS scheduled,
           pg_catalog.bool_or(estimated) AS estimated,
           pg_catalog.min(oldest_due) AS oldest_due
      FROM pending_cell_counts
     GROUP BY queue
),
held AS (
    SELECT queue,
           pg_catalog.count(*) FILTER (WHERE lease_expires_at > $1) AS in_flight,
           pg_catalog.count(*) FILTER (WHERE lease_expires_at <= $1) AS expired,
           pg_catalog.count(*) FILTER (WHERE attempts >= max_attempts) AS at_last_attempt
      FROM ONLY @extschema@.send_jobs
     WHERE lease_expires_at IS NOT NULL
     GROUP BY queue
),
-- Events: send_jobs_finished's rows, in the order of the transactions that finished
-- them (event_xid), give or take transactions that ran at the same time.
event_search (low, high) AS (
    -- Where the 5-minute window starts among the event_xids (as int8), found by halving.
    SELECT (SELECT job.event_xid::text::int8 FROM @extschema@.send_jobs_finished AS job
             ORDER BY job.event_xid LIMIT 1),
           (SELECT job.event_xid::text::int8 + 1 FROM @extschema@.send_jobs_finished AS job
             ORDER BY job.event_xid DESC LIMIT 1)
    UNION ALL
    SELECT CASE WHEN probe.recent THEN s.low ELSE half.mid END,
           CASE WHEN probe.recent THEN half.mid ELSE s.high END
      FROM event_search AS s
     CROSS JOIN LATERAL (SELECT (s.low + s.high) / 2 AS mid) AS half
     CROSS JOIN LATERAL (SELECT job.finished_at > $1 - interval '5 minutes' AS recent
                           FROM @extschema@.send_jobs_finished AS job
                          WHERE job.event_xid >= half.mid::text::xid8
                          ORDER BY job.event_xid LIMIT 1) AS probe
     WHERE s.high - s.low > 1
),
event_window AS (
    -- The event_xids the window's events can have.
    SELECT low AS first_xid, high - 1 AS last_xid
      FROM (SELECT s.low, (SELECT job.event_xid::text::int8 + 1 FROM @extschema@.send_jobs_finished AS job
                            ORDER BY job.event_xid DESC LIMIT 1) AS high
              FROM event_search AS s WHERE s.high - s.low <= 1 LIMIT 1) AS found
),
window_recent AS MATERIALIZED (
    -- The window's events, up to 10,001, read from send_jobs_finished_event_xid_idx from
    -- a bound computed once, in index order (decision 0010).
    SELECT job.queue, job.status
      FROM @extschema@.send_jobs_finished AS job
     WHERE job.event_xid >= (SELECT w.first_xid FROM event_window AS w)::text::xid8
       AND job.finished_at > $1 - interval '5 minutes'
     ORDER BY job.event_xid, job.id
     LIMIT 10001
),
window_total AS (
    SELECT pg_catalog.count(*) <= 10000 AS exact FROM window_recent
),
events_counted AS (
    -- At most 10,000: every event of the window, counted.
    SELECT job.queue,
           pg_catalog.count(*) FILTER (WHERE job.status = 'sent') AS sent,
           pg_catalog.count(*) FILTER (WHERE job.status = 'failed') AS failed,
           pg_catalog.count(*) FILTER (WHERE job.status = 'cancelled') AS cancelled
      FROM window_recent AS job
     WHERE (SELECT exact FROM window_total)
     GROUP BY job.queue
),
unsent_recent AS MATERIALIZED (
    -- Else the failed and cancelled ones, up to 10,001, through their own index...
    SELECT job.queue, job.status
      FROM @extschema@.send_jobs_finished AS job
     WHERE NOT (SELECT exact FROM window_total)
       AND job.finished_at > $1 - interval '5 minutes' AND job.status <> 'sent'
     LIMIT 10001
),
unsent_total AS (
    SELECT pg_catalog.count(*) AS n FROM unsent_recent
),
unsent_counted AS (
    SELECT queue,
           pg_catalog.count(*) FILTER (WHERE status = 'failed') AS failed,
           pg_catalog.count(*) FILTER (WHERE status = 'cancelled') AS cancelled
      FROM unsent_recent
     WHERE (SELECT n FROM unsent_total) <= 10000
     GROUP BY queue
),
events_sampled AS (
    -- ... and a sample for the rest: one event_xid in each of 1,024 slices of the window.
    -- An xid finishes any number of jobs; one drawn by several slices is looked up once.
    SELECT job.queue,
           pg_catalog.sum(sampled.slices) FILTER (WHERE job.status = 'sent') * pg_catalog.max(w.width) AS sent,
           pg_catalog.sum(sampled.slices) FILTER (WHERE job.status = 'failed') * pg_catalog.max(w.width) AS failed,
           pg_catalog.sum(sampled.slices) FILTER (WHERE job.status = 'cancelled') * pg_catalog.max(w.width) AS cancelled
      FROM (SELECT first_xid AS low, (last_xid + 1 - first_xid) / 1024.0 AS width
              FROM event_window WHERE NOT (SELECT exact FROM window_total)) AS w
     CROSS JOIN LATERAL (SELECT drawn.xid, pg_catalog.count(*) AS slices
                           FROM (SELECT (w.low + pg_catalog.floor((slice + pg_catalog.random()) * w.width)::int8)::text::xid8 AS xid
                                   FROM pg_catalog.generate_series(0, 1023) AS slice) AS drawn
                          GROUP BY drawn.xid) AS sampled
     -- OFFSET 0: one probe of the index per sampled xid (pending_sampled says why)
     CROSS JOIN LATERAL (SELECT job.queue, job.status FROM @extschema@.send_jobs_finished AS job
                          WHERE job.event_xid = sampled.xid
                            AND job.finished_at > $1 - interval '5 minutes'
                         OFFSET 0) AS job
     GROUP BY job.queue
),
finished AS (
    SELECT q.queue,
           CASE WHEN w.exact THEN c.sent ELSE pg_catalog.round(s.sent)::int8 END AS sent,
           CASE WHEN w.exact THEN c.failed
                WHEN u.n <= 10000 THEN coalesce(uc.failed, 0)
                ELSE pg_catalog.round(s.failed)::int8 END AS failed,
           CASE WHEN w.exact THEN c.cancelled
                WHEN u.n <= 10000 THEN coalesce(uc.cancelled, 0)
                ELSE pg_catalog.round(s.cancelled)::int8 END AS cancelled
      FROM (SELECT queue FROM events_counted UNION SELECT queue FROM unsent_counted
            UNION SELECT queue FROM events_sampled) AS q
     CROSS JOIN window_total AS w
     CROSS JOIN unsent_total AS u
      LEFT JOIN events_counted AS c ON c.queue = q.queue
      LEFT JOIN unsent_counted AS uc ON uc.queue = q.queue
      LEFT JOIN events_sampled AS s ON s.queue = q.queue
),
vacuum AS (
    SELECT pg_catalog.pg_stat_get_dead_tuples($2) AS dead_tuples,
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
       coalesce(p.ready, 0) AS ready, coalesce(p.scheduled, 0) AS scheduled,
       coalesce(h.in_flight, 0) AS in_flight, coalesce(h.expired, 0) AS expired,
       coalesce(h.at_last_attempt, 0) AS at_last_attempt,
       -- a job due at -infinity (before 0.2.1) is as old as the earliest timestamp
       -- (tests/pg_regress/sql/stats.sql)
       CASE WHEN p.oldest_due <= $1
            THEN $1 - greatest(p.oldest_due, '4714-11-24 00:00:00+00 BC'::pg_catalog.timestamptz) END
           AS oldest_ready_age,
       coalesce(f.sent, 0) AS sent_5m, coalesce(f.failed, 0) AS failed_5m,
       coalesce(f.cancelled, 0) AS cancelled_5m,
       coalesce(p.estimated, false) OR NOT coalesce(w.exact, true) AS estimated,
       v.dead_tuples, v.oldest_xmin_age, v.oldest_xmin_xids,
       -- flow control (src/flow/allowance.rs): the tokens as the next claim would find them
       coalesce(s.paused, false) AS paused, s.max_in_flight, s.rate,
       least(s.burst, s.tokens + s.rate * greatest(0, pg_catalog.date_part('epoch', $1 - s.tokens_at))) AS tokens
  FROM (SELECT queue FROM pending UNION SELECT queue FROM held UNION SELECT queue FROM finished) AS q
  LEFT JOIN @extschema@.sendjobs_queues AS s ON s.queue = q.queue
  LEFT JOIN pending AS p ON p.queue = q.queue
  LEFT JOIN held AS h ON h.queue = q.queue
  LEFT JOIN finished AS f ON f.queue = q.queue
 CROSS JOIN window_total AS w
 CROSS JOIN vacuum AS v
 ORDER BY q.queue
