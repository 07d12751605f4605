-- sql/statements/claim_shares.sql, variant checked, as the server runs it: written by
-- SENDJOBS_BLESS=1 from the source, which is the one to edit.
WITH RECURSIVE
start AS (
    SELECT coalesce($4, (SELECT job.queue FROM ONLY @extschema@.send_jobs AS job
                          WHERE job.status = 'pending'
                          ORDER BY pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority), job.id
                          LIMIT 1)) AS queue,
           $4 IS NOT NULL AS after
),
walk AS (
    SELECT first.queue, first.head, first.head_id, first.wrapped, 1::int8 AS step
      FROM start CROSS JOIN LATERAL (
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) AS head, job.id AS head_id, false AS wrapped
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND job.queue = start.queue AND NOT start.after
             ORDER BY job.queue, 2, 3 LIMIT 1)
           UNION ALL
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority), job.id, false
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND job.queue > start.queue AND start.after
             ORDER BY job.queue, 2, 3 LIMIT 1)
           UNION ALL
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority), job.id, true
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND job.queue <= start.queue AND start.after
             ORDER BY job.queue, 2, 3 LIMIT 1)
           LIMIT 1) AS first
    UNION ALL
    SELECT next.queue, next.head, next.head_id, next.wrapped, walk.step + 1
      FROM walk CROSS JOIN start CROSS JOIN LATERAL (
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) AS head, job.id AS head_id, false AS wrapped
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND job.queue > walk.queue AND NOT walk.wrapped
             ORDER BY job.queue, 2, 3 LIMIT 1)
           UNION ALL
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority), job.id, true
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND job.queue <= start.queue AND NOT walk.wrapped
             ORDER BY job.queue, 2, 3 LIMIT 1)
           UNION ALL
           (SELECT job.queue, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority), job.id, true
              FROM ONLY @extschema@.send_jobs AS job
             WHERE job.status = 'pending' AND job.queue > walk.queue AND job.queue <= start.queue AND walk.wrapped
             ORDER BY job.queue, 2, 3 LIMIT 1)
           LIMIT 1) AS next
     WHERE NOT (next.queue = start.queue AND NOT start.after)
),
allow_none AS MATERIALIZED (
    SELECT settings.queue
      FROM @extschema@.sendjobs_queues AS settings
      LEFT JOIN (SELECT held.queue, pg_catalog.count(*) AS jobs
                   FROM ONLY @extschema@.send_jobs AS held
                  WHERE held.lease_expires_at > $1 AND held.lease_expires_at IS NOT NULL
                    AND held.queue = ANY ($6)
                  GROUP BY held.queue) AS held ON held.queue = settings.queue
     WHERE settings.queue = ANY ($6)
       AND (settings.paused
            OR settings.tokens + settings.rate * greatest(0, pg_catalog.date_part('epoch', $1 - settings.tokens_at)) < 1
            OR settings.max_in_flight <= coalesce(held.jobs, 0))
),
reached AS MATERIALIZED (
    SELECT walk.queue, walk.head, walk.head_id, walk.step FROM walk
     WHERE walk.head <= pg_catalog.timezone(interval '0', $1)
       AND walk.queue <> ALL ($5)
       AND NOT (walk.queue = ANY ($6) AND walk.queue IN (SELECT allow_none.queue FROM allow_none))
       AND (walk.queue = ANY ($6)
            OR NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS settings
                            WHERE settings.queue = walk.queue
                              AND (settings.paused OR settings.max_in_flight IS NOT NULL OR settings.rate IS NOT NULL)))
     LIMIT $2
),
turn AS MATERIALIZED (
    SELECT reached.queue, reached.head, reached.head_id, reached.step, reached.queue = ANY ($6) AS kept,
           $2 / counted.queues + (pg_catalog.row_number() OVER (ORDER BY reached.step) <= $2 % counted.queues)::int4 AS jobs
      FROM reached CROSS JOIN (SELECT pg_catalog.count(*) AS queues FROM reached) AS counted
),
shares AS MATERIALIZED (
    SELECT turn.queue, turn.head, turn.head_id, turn.jobs FROM turn WHERE NOT turn.kept
),
wanted AS MATERIALIZED (
    SELECT CASE WHEN EXISTS (SELECT FROM turn)
                THEN coalesce((SELECT pg_catalog.sum(shares.jobs) FROM shares), 0)::int8
                ELSE $2 END AS jobs
),
pending AS MATERIALIZED (
    SELECT share.queue, due.tid, due.id, due.claim_order
      FROM shares AS share
     CROSS JOIN LATERAL (
        SELECT ctid AS tid, id, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) AS claim_order
          FROM ONLY @extschema@.send_jobs AS job
         WHERE status = 'pending'
           AND (job.queue, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority), job.id) >= (share.queue, share.head, share.head_id)
           AND job.queue <= share.queue
           AND pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) <= pg_catalog.timezone(interval '0', $1)
           AND next_attempt_at <= $1
           AND job.ordering_key IS NULL
         ORDER BY job.queue, claim_order, id
         LIMIT share.jobs
           FOR UPDATE SKIP LOCKED) AS due
),
expired AS MATERIALIZED (
    SELECT ctid AS tid, id, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) AS claim_order, attempts >= max_attempts AS gave_up
      FROM ONLY @extschema@.send_jobs AS job
     WHERE status = 'in_flight' AND lease_expires_at <= $1
       AND lease_expires_at IS NOT NULL
       AND claimed_at < $1
       AND queue <> ALL ($6)
       AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS settings
                        WHERE settings.queue = job.queue
                          AND (settings.paused OR settings.max_in_flight IS NOT NULL OR settings.rate IS NOT NULL))
     ORDER BY claim_order, id
     LIMIT (SELECT wanted.jobs FROM wanted)
     FOR UPDATE SKIP LOCKED
),
picked AS MATERIALIZED (
    SELECT tid, id, claim_order, false AS gave_up FROM pending
    UNION ALL
    SELECT tid, id, claim_order, gave_up FROM expired
    ORDER BY claim_order, id
    LIMIT (SELECT wanted.jobs FROM wanted)
),
claimed AS (
    UPDATE ONLY @extschema@.send_jobs AS job
       SET status = 'in_flight',
           attempts = job.attempts + 1,
           claimed_at = $1,
           lease_expires_at = $1 + $3,
           claim_generation = GREATEST(job.claim_generation + 1, $7) -- unique across failovers: decision 0025
     WHERE job.ctid = ANY (ARRAY(SELECT tid FROM picked WHERE NOT gave_up))
 RETURNING job, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) AS claim_order, job.id, job.queue
)
SELECT job, false AS gave_up, id, claim_order, false AS keyed, queue, false AS short, NULL::int8 AS step, NULL::int8 AS share FROM claimed
UNION ALL
SELECT NULL, true, id, claim_order, false, NULL, false, NULL, NULL FROM picked WHERE gave_up
UNION ALL
SELECT NULL, NULL, NULL, NULL, false, turn.queue, false, turn.step, turn.jobs FROM turn
UNION ALL
SELECT NULL, NULL, NULL, NULL,
       EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS k
                WHERE k.status = 'pending' AND k.ordering_key IS NOT NULL AND NOT k.waits_for_key
                  AND k.queue = short.queue),
       short.queue, true, NULL, short.places_left
  FROM (SELECT share.queue,
               share.jobs - (SELECT pg_catalog.count(*) FROM pending WHERE pending.queue = share.queue) AS places_left
          FROM shares AS share) AS short
 WHERE short.places_left > 0
