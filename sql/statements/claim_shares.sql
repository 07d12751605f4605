--- params: now timestamptz, batch int8, lease interval, queues text[], shares int8[], limited text[]
--- columns: job, gave_up, id, claim_order, keyed, queue, short
-- sendjobs_claim from any queue (src/claim.rs, decision 0019): up to $5[i] due jobs of
-- queue $4[i] each, the queues the walk of queue_turns.sql chose, $2 in all; and the
-- expired leases of every queue but the limited ones ($6), as claim.sql takes them. The
-- rest is claim.sql's: read its header for the claim order, the expired branch, the TID
-- scan and the jobs that give up. Ordered jobs are left to claim.sql's keyed variant
-- (the last row says whether there are any).
-- Variant exact: the caller holds the settings lock, and $6 is every queue with flow
-- control. Variant checked: a change of the settings may be committing, and each row is
-- checked against the settings in this statement's snapshot (claim.sql, other_queues).
WITH
shares AS MATERIALIZED (
    SELECT share.queue, share.jobs
      FROM ROWS FROM (pg_catalog.unnest($4), pg_catalog.unnest($5)) AS share(queue, jobs)
),
pending AS MATERIALIZED (
    SELECT share.queue, due.tid, due.id, due.claim_order
      FROM shares AS share
     CROSS JOIN LATERAL (
        SELECT ctid AS tid, id, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) AS claim_order
          FROM ONLY @extschema@.send_jobs AS job
         WHERE status = 'pending'
           AND job.queue = share.queue
           AND pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) <= pg_catalog.timezone(interval '0', $1)
           AND next_attempt_at <= $1
           AND job.ordering_key IS NULL
--- variant exact
--- variant checked
           AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS settings
                            WHERE settings.queue = job.queue
                              AND (settings.paused OR settings.max_in_flight IS NOT NULL OR settings.rate IS NOT NULL))
--- end
         ORDER BY claim_order, id
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
     LIMIT $2
     FOR UPDATE SKIP LOCKED
),
picked AS MATERIALIZED (
    SELECT tid, id, claim_order, false AS gave_up FROM pending
    UNION ALL
    SELECT tid, id, claim_order, gave_up FROM expired
    ORDER BY claim_order, id
    LIMIT $2
),
claimed AS (
    UPDATE ONLY @extschema@.send_jobs AS job
       SET status = 'in_flight',
           attempts = job.attempts + 1,
           claimed_at = $1,
           lease_expires_at = $1 + $3,
           claim_generation = job.claim_generation + 1
     WHERE job.ctid = ANY (ARRAY(SELECT tid FROM picked WHERE NOT gave_up))
 RETURNING job, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) AS claim_order, job.id, job.queue
)
SELECT job, false AS gave_up, id, claim_order, false AS keyed, queue, false AS short FROM claimed
UNION ALL
SELECT NULL, true, id, claim_order, false, NULL, false FROM picked WHERE gave_up
-- The queues that had fewer jobs to lock than their share (empty, or their rows locked by
-- other claims): src/claim.rs passes over them for the rest of this claim. (A queue whose
-- rows lost the merge with expired leases is not short: it is reached again.)
UNION ALL
SELECT NULL, NULL, NULL, NULL, false, share.queue, true FROM shares AS share
 WHERE share.jobs > (SELECT pg_catalog.count(*) FROM pending WHERE pending.queue = share.queue)
UNION ALL
SELECT NULL, NULL, NULL, NULL, true, NULL, false
 WHERE EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS k
                WHERE k.status = 'pending' AND k.ordering_key IS NOT NULL)
