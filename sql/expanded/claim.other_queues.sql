-- sql/statements/claim.sql, variant other_queues, as the server runs it: written by
-- SENDJOBS_BLESS=1 from the source, which is the one to edit.
WITH
pending AS MATERIALIZED (
    SELECT ctid AS tid, id, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) AS claim_order
      FROM ONLY @extschema@.send_jobs AS job
     WHERE status = 'pending'
       AND pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) <= pg_catalog.timezone(interval '0', $1)
       AND next_attempt_at <= $1
       AND queue = $4
       AND job.ordering_key IS NULL
       AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS named
                        WHERE named.queue = $4
                          AND (named.paused OR named.max_in_flight IS NOT NULL OR named.rate IS NOT NULL))
     ORDER BY job.queue, claim_order, id
     LIMIT $2
     FOR UPDATE SKIP LOCKED
),
expired AS MATERIALIZED (
    SELECT ctid AS tid, id, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) AS claim_order, attempts >= max_attempts AS gave_up
      FROM ONLY @extschema@.send_jobs AS job
     WHERE status = 'in_flight' AND lease_expires_at <= $1
       AND lease_expires_at IS NOT NULL
       AND claimed_at < $1
       AND queue = $4
       AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS named
                        WHERE named.queue = $4
                          AND (named.paused OR named.max_in_flight IS NOT NULL OR named.rate IS NOT NULL))
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
           claim_generation = GREATEST(job.claim_generation + 1, $5) -- unique across failovers: decision 0025
     WHERE job.ctid = ANY (ARRAY(SELECT tid FROM picked WHERE NOT gave_up))
 RETURNING job, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) AS claim_order, job.id
)
SELECT job, false AS gave_up, id, claim_order, false AS keyed, false AS others FROM claimed
UNION ALL
SELECT NULL, true, id, claim_order, false, false FROM picked WHERE gave_up
UNION ALL
SELECT NULL, NULL, NULL, NULL, true, false
 WHERE EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS k
                WHERE k.status = 'pending' AND k.ordering_key IS NOT NULL AND NOT k.waits_for_key
                  AND k.queue = $4)
