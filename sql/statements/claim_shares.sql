--- params: now timestamptz, places int8, lease interval, cursor text, skip text[], limited text[], generation_floor int8
--- columns: job, gave_up, id, claim_order, keyed, queue, short, step, share
-- sendjobs_claim from any queue (src/claim.rs, src/fair_share.rs; decision 0019), in one
-- statement: the turn of the queues, then each queue's share.
-- The walk (start, walk, reached): up to $2 queues with a due job, in name order from the
-- one after $4 (this backend's last), round to the first again and back to $4; without a
-- cursor, from the queue of the oldest pending job. A queue in $5 is passed over (paused,
-- or left by this claim), and so is a limited one whose settings allow none. Each step
-- is one descent of send_jobs_pending_queue_idx to the next queue's first job, its head:
-- the walk reads as many entries as the queues it passes, whatever their backlogs. The walk is lazy: the LIMIT of reached stops it.
-- The shares: $2 split evenly among the queues reached, the odd places to the first
-- reached; a limited queue's ($6: every queue with flow control) is kept for its own
-- pass under its lock (src/claim.rs), and the others' are claimed here, each in its
-- queue's claim order (a LATERAL per queue), with the expired leases of every queue but
-- the limited ones, as claim.sql takes them. With no queue reached, up to $2 expired
-- leases alone. The rest is claim.sql's: read its header for the claim order, the
-- expired branch, the TID scan and the jobs that give up. Ordered jobs are left to
-- claim_keyed.sql: a queue short of its share says how many places it left and whether
-- it has ordered jobs that may be free, which src/claim.rs then claims in those places.
-- Variant exact: the caller holds the settings lock, and $6 is every queue with flow
-- control. Variant checked: a change of the settings may be committing, and each queue
-- reached and each expired lease is checked against the settings in this statement's
-- snapshot (as claim.sql's other_queues checks its queue).
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
     -- a session's first queue ends its first turn (the cursor's queue ends every other)
     WHERE NOT (next.queue = start.queue AND NOT start.after)
),
-- The limited queues whose settings allow none in this snapshot (paused, out of tokens,
-- at their cap): their lock and count under it would give nothing, and cost the claim a
-- statement or two for each such queue (decision 0019). Found once a claim, when the
-- walk first passes a limited queue: their settings rows joined to their jobs in flight,
-- counted in one read of the leases (few: workers x batch); a count per queue read every
-- lease again for each, and a look-up of each queue's count in the counts, all of them.
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
            OR settings.tokens + settings.rate * pg_catalog.date_part('epoch', $1 - settings.tokens_at) < 1
            OR settings.max_in_flight <= coalesce(held.jobs, 0))
),
reached AS MATERIALIZED (
    SELECT walk.queue, walk.head, walk.head_id, walk.step FROM walk
     WHERE walk.head <= pg_catalog.timezone(interval '0', $1)
       AND walk.queue <> ALL ($5)
       -- nor a limited queue that allows none
       AND NOT (walk.queue = ANY ($6) AND walk.queue IN (SELECT allow_none.queue FROM allow_none))
--- variant exact
--- variant checked
       -- nor a queue with flow control in this snapshot that the list $6 leaves out: a
       -- test a queue, before its scan (a test of each row in the share's scan became,
       -- after ANALYZE, a hash anti-join over every due job, sorted)
       AND (walk.queue = ANY ($6)
            OR NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS settings
                            WHERE settings.queue = walk.queue
                              AND (settings.paused OR settings.max_in_flight IS NOT NULL OR settings.rate IS NOT NULL)))
--- end
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
-- The places this statement fills: the shares it claims, or with no queue reached, $2.
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
           -- from the head the walk found: the entries before it (jobs claimed since
           -- the last vacuum) are read once a claim, by the walk (decision 0019). A
           -- range, not "=": estimated from statistics that knew one queue (or none
           -- of a burst), "=" made the plan read another index through other queues'
           -- backlogs.
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
--- variant checked
       AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS settings
                        WHERE settings.queue = job.queue
                          AND (settings.paused OR settings.max_in_flight IS NOT NULL OR settings.rate IS NOT NULL))
--- end
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
-- Each queue reached, in the order of the walk, with its share.
UNION ALL
SELECT NULL, NULL, NULL, NULL, false, turn.queue, false, turn.step, turn.jobs FROM turn
-- The queues that had fewer jobs to lock than their share (empty, or their rows locked by
-- other claims), with the places each left and whether it has ordered jobs that may be
-- free (one probe of send_jobs_pending_keyed_queue_idx): src/claim.rs claims its ordered
-- jobs in those places, and passes over it for the rest of this claim when they do not
-- fill them. (A queue whose rows lost the merge with expired leases is not short: it is
-- reached again.)
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
