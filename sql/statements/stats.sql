--- params: now timestamptz, send_jobs oid
--- columns: queue, ready, scheduled, in_flight, expired, at_last_attempt, oldest_ready_age, sent_5m, failed_5m, cancelled_5m, estimated, dead_tuples, oldest_xmin_age, oldest_xmin_xids, paused, max_in_flight, rate, tokens
-- sendjobs_stats (src/stats.rs): one row per queue with unfinished jobs or events in the
-- last 5 minutes; $1 now, $2 send_jobs (its oid). Its cost is bounded whatever the
-- backlog and the throughput (docs/decisions/0010-stats-exact-up-to-10000.md; the plan is checked by
-- src/tests/plans.rs). Counts are exact
-- up to 10,000; above, they may be estimated from a sample:
--   * A sample: 2,048 ids (1,024 event_xids for events) drawn at random, one in each of
--     as many equal slices of the ids that can hold what is counted, each looked up by
--     an index. A count is then hits x slice width; its error is about 1/sqrt(hits).
--     Counting 1,000,000 index entries exactly takes about 100 ms on a 2-core machine,
--     the sample about 10 ms.
--   * Ready and scheduled jobs, per queue: up to 1,001 entries of the pending index (in
--     claim order, on each side of $1) are counted. Past 1,000, the sample runs, and a count it puts above 30,000 from at
--     least 64 hits is taken from it (for a count of 10,000 or less, 64 hits would be
--     three times the hits expected at the least: that does not happen by chance). Any
--     other is counted up to 10,001 entries: exact up to 10,000, the sample's above.
--   * The events of the last 5 minutes: counted one by one while there are at most
--     10,000; else the failed and cancelled ones through their own index (exact up to
--     10,000), the sent ones (and more failed or cancelled) from a sample.
--   * The queue's in-flight jobs are few (workers x batch) and always counted, through
--     send_jobs_lease_idx.
-- Every job counted as ready, scheduled or held is unfinished: only send_jobs itself is
-- read for them (ONLY); the events are read from send_jobs_finished by its indexes.
-- The table-wide figures (send_jobs' own dead tuples, what holds vacuum back) repeat on
-- every row. They are read as the extension's owner, who sees every backend in
-- pg_stat_activity.
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
    -- Per queue and range of the claim order (ahead: up to $1, behind: after it), up to
    -- 1,001 entries in index order, their count, how many are due (all of the ahead range
    -- but a job whose head start reaches before a due time still to come: claim.sql; none
    -- of the behind range), the lowest id among them (where the sample's slices start).
    -- Each range is bounded on one side only, by $1, in a branch of its own (the other
    -- branch's one-time filter is false): with both bounds unknown to the generic plan,
    -- the planner took a range for 0.5% of a queue's rows, chose a bitmap scan of the
    -- whole range and a sort over the index order, and with 1,000,000 pending jobs in 10
    -- queues the stats took 790 ms instead of 60 (src/tests/plans.rs).
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
    -- Only when a count passed 1,000: the ids from the lowest one seen by such a count
    -- to the highest id. A pending job of such a queue with a lower id (created before,
    -- due after the first 1,001 of its state) is outside the slices: the sample leaves
    -- it out.
    SELECT low, (high - low) / 2048.0 AS width
      FROM (SELECT pg_catalog.min(low_id) FILTER (WHERE n > 1000) AS low,
                   (SELECT pg_catalog.max(id) + 1 FROM ONLY @extschema@.send_jobs) AS high
              FROM pending_cells) AS bounds
     WHERE low IS NOT NULL
),
pending_sampled AS (
    -- Each sampled job counted in its cell (ready: ahead of $1 in claim order, as the
    -- cells are cut) and by whether it is due: a cell ahead of $1 holds the due jobs and
    -- those whose head start reaches before a due time still to come; a cell after it,
    -- scheduled jobs only.
    SELECT job.queue, job.ahead AS ready, pg_catalog.count(*) AS hits,
           pg_catalog.count(*) * pg_catalog.max(r.width) AS estimate,
           pg_catalog.count(*) FILTER (WHERE job.due) * pg_catalog.max(r.width) AS due_estimate
      FROM pending_slices AS r
     CROSS JOIN LATERAL (SELECT r.low + pg_catalog.floor((slice + pg_catalog.random()) * r.width)::int8 AS id
                           FROM pg_catalog.generate_series(0, 2047) AS slice) AS sampled
     -- One probe of the primary key per sampled id, whatever the table's size. OFFSET 0
     -- keeps the planner from making the probes a hash join, which reads send_jobs whole:
     -- it did so once send_jobs held only the unfinished jobs (48,000 in the plan test).
     CROSS JOIN LATERAL (SELECT job.queue, job.next_attempt_at <= $1 AS due,
                                pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) <= pg_catalog.timezone(interval '0', $1) AS ahead
                           FROM ONLY @extschema@.send_jobs AS job
                          WHERE job.id = sampled.id AND job.status = 'pending'
                         OFFSET 0) AS job
     GROUP BY 1, 2
),
pending_counted AS (
    -- The cells past 1,000 the sample does not put clearly above 10,000: up to 10,001
    -- (each range in a branch of its own, as pending_cells says why).
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
    -- Exact up to 10,000 entries: the due ones are ready, the others scheduled. Past that,
    -- the cell's estimate from the sample, split into due and not due; the cell's total
    -- never below the 10,001 counted (a cell after $1 holds scheduled jobs only).
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
-- Events: the finished jobs of send_jobs_finished (each its own event), found by the
-- transaction that finished them (event_xid), whose order is the order they finished in,
-- give or take transactions that ran at the same time (or one that took its xid long
-- before it finished a job: its events can be missed by the window).
event_search (low, high) AS (
    -- Where the window starts among the event_xids (as int8: an xid8 with its epoch),
    -- found by halving (about 25 probes of send_jobs_finished_event_xid_idx). It ends
    -- with the first event_xid of the window at low or just after it.
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
    -- The window's events, up to 10,001, in event_xid order, read from
    -- send_jobs_finished_event_xid_idx from the window's first xid on: the bound is a
    -- value computed once (not a join, which the planner turned into a filter over the
    -- whole index), and the ORDER BY keeps the index's order (without it, the generic
    -- plan took a third of the history for the window and a sequential scan for the
    -- quickest way to 10,001 of them). Either way it read 10,000,000 finished jobs for
    -- the 3,235 at their end: 900-2,800 ms (the console's page timings,
    -- tests/console/timing.py).
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
    -- More: the failed and cancelled ones, up to 10,001, through the index that holds
    -- only them...
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
    -- ... and a sample for the rest: 1,024 event_xids drawn one in each of as many equal
    -- slices of the window's, each looked up in send_jobs_finished_event_xid_idx. An xid
    -- finishes any number of jobs (a batch finalize: up to its batch; a claim's xid:
    -- none), so an estimate is the jobs found x slice width. Slices narrower than one xid
    -- draw the same xid again: it is looked up once and counted for each of them.
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
     -- OFFSET 0: one probe of the index per sampled xid, never a join that reads the
     -- history whole (pending_sampled says why).
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
       -- A job due at -infinity (enqueued before 0.2.1 refused it) is as old as the
       -- earliest timestamp there is: subtracting -infinity fails (22008), and one such
       -- job made every call fail (tests/pg_regress/sql/stats.sql).
       CASE WHEN p.oldest_due <= $1
            THEN $1 - greatest(p.oldest_due, '4714-11-24 00:00:00+00 BC'::pg_catalog.timestamptz) END
           AS oldest_ready_age,
       coalesce(f.sent, 0) AS sent_5m, coalesce(f.failed, 0) AS failed_5m,
       coalesce(f.cancelled, 0) AS cancelled_5m,
       coalesce(p.estimated, false) OR NOT coalesce(w.exact, true) AS estimated,
       v.dead_tuples, v.oldest_xmin_age, v.oldest_xmin_xids,
       -- Flow control (src/flow.rs): the cap's use is in_flight; the bucket's tokens as
       -- the next claim would find them (refilled since its last claim).
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
