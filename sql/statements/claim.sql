--- params: now timestamptz, batch int8, lease interval, queue text, generation_floor int8
--- columns: job, gave_up, id, claim_order, keyed, others
-- sendjobs_claim (src/verbs/claim.rs): take up to $2 due jobs under a lease, in claim
-- order: pending jobs and expired leases from two index-ordered branches, each limited and
-- locked, then merged (decision 0003). Variants, from queue $4 (decision 0013):
-- one_queue, a queue without flow control; other_queues, the same while a settings
-- change may be committing (the list src/flow/limited.rs keeps may be stale);
-- limited_queue, a queue with flow control, its settings row locked by the caller, $2 its
-- allowance; only_queue, a claim from any queue while $4 alone has pending jobs (decision
-- 0019). Ordered jobs are claim_keyed.sql's, but in limited_queue (decision 0020). A job
-- whose last lease expired is not claimed: it comes back with gave_up, still locked, for
-- give_up.sql (invariant 8; decision 0014). claim_order is the pending indexes'
-- expression (sql/schema.sql); "lease_expires_at IS NOT NULL" keeps the generic plan on
-- the lease index; "claimed_at < $1" keeps a later round of this call off what an earlier
-- round claimed (decision 0003, "Notes from the statements").
WITH
--- variant only_queue
-- Whether a queue other than $4 has pending jobs: two descents of
-- send_jobs_pending_queue_idx, on either side of $4 (decision 0019).
others AS MATERIALIZED (
    SELECT (SELECT other.queue FROM ONLY @extschema@.send_jobs AS other
             WHERE other.status = 'pending' AND other.queue > $4
             ORDER BY other.queue LIMIT 1) IS NOT NULL
        OR (SELECT other.queue FROM ONLY @extschema@.send_jobs AS other
             WHERE other.status = 'pending' AND other.queue < $4
             ORDER BY other.queue DESC LIMIT 1) IS NOT NULL AS exist
),
--- end
pending AS MATERIALIZED (
    SELECT ctid AS tid, id, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) AS claim_order
      FROM ONLY @extschema@.send_jobs AS job
     WHERE status = 'pending'
       AND pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) <= pg_catalog.timezone(interval '0', $1)
       AND next_attempt_at <= $1
--- variant only_queue
       -- $4's jobs without a key (send_jobs_pending_unkeyed_queue_idx), while $4 alone
       -- has pending jobs
       AND queue = $4
       AND job.ordering_key IS NULL
       AND NOT (SELECT others.exist FROM others)
--- variant one_queue
       AND queue = $4
       AND job.ordering_key IS NULL
--- variant other_queues
       AND queue = $4
       AND job.ordering_key IS NULL
       -- one test of $4's settings before the scan, not one per row (decision 0013)
       AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS named
                        WHERE named.queue = $4
                          AND (named.paused OR named.max_in_flight IS NOT NULL OR named.rate IS NOT NULL))
--- variant limited_queue
       AND queue = $4
       -- an ordered job waits for its key's older and in-flight jobs; the claims that
       -- test it take turns, here on the queue's lock (decision 0020)
       AND NOT job.waits_for_key
       -- a key stopped by a failed job hands out only that job's redrive
       AND (job.ordering_key IS NULL
            OR (NOT EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS older
                             WHERE older.ordering_key = job.ordering_key AND older.id < job.id)
                OR EXISTS (SELECT FROM @extschema@.sendjobs_blocked_keys AS blocked
                            WHERE blocked.ordering_key = job.ordering_key AND blocked.job_id = job.id))
               AND NOT EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS held
                                WHERE held.ordering_key = job.ordering_key
                                  AND held.lease_expires_at IS NOT NULL)
               AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_blocked_keys AS blocked
                                WHERE blocked.ordering_key = job.ordering_key AND blocked.job_id <> job.id
                                  AND (EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS stopping
                                                WHERE stopping.id = blocked.job_id)
                                       OR EXISTS (SELECT FROM @extschema@.send_jobs_finished AS stopping
                                                   WHERE stopping.id = blocked.job_id AND stopping.status = 'failed'))))
--- end
     -- queue first, the order of the queue indexes: no plan sorts the backlog
     -- (src/tests/plans.rs)
     ORDER BY job.queue, claim_order, id
--- end
     LIMIT $2
     FOR UPDATE SKIP LOCKED
),
expired AS MATERIALIZED (
    SELECT ctid AS tid, id, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) AS claim_order, attempts >= max_attempts AS gave_up
      FROM ONLY @extschema@.send_jobs AS job
     WHERE status = 'in_flight' AND lease_expires_at <= $1
       AND lease_expires_at IS NOT NULL
       AND claimed_at < $1
--- variant one_queue
       AND queue = $4
--- variant other_queues
       AND queue = $4
       AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS named
                        WHERE named.queue = $4
                          AND (named.paused OR named.max_in_flight IS NOT NULL OR named.rate IS NOT NULL))
--- variant limited_queue
       AND queue = $4
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
-- The rows are found again by their TID: a row this claim locked cannot move. A row
-- claimed and put back due between this snapshot and the lock is skipped (decision
-- 0014, "The decisions" and "Limits").
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
-- The last row says what this pass left to another: pending ordered jobs that may be free
-- (one probe of send_jobs_pending_keyed_queue_idx).
--- variant only_queue
UNION ALL
SELECT NULL, NULL, NULL, NULL, true, false
 WHERE EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS k
                WHERE k.status = 'pending' AND k.ordering_key IS NOT NULL AND NOT k.waits_for_key)
-- Another queue has pending jobs: this pass took none (claim_shares.sql serves them).
UNION ALL
SELECT NULL, NULL, NULL, NULL, false, true
 WHERE (SELECT others.exist FROM others)
--- variant one_queue, other_queues
UNION ALL
SELECT NULL, NULL, NULL, NULL, true, false
 WHERE EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS k
                WHERE k.status = 'pending' AND k.ordering_key IS NOT NULL AND NOT k.waits_for_key
                  AND k.queue = $4)
--- end
