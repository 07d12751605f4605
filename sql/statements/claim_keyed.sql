--- params: now timestamptz, lease interval, queues text[], places int8[], generation_floor int8
--- columns: job, id, claim_order, queue, places_left
-- Ordered jobs for sendjobs_claim (src/verbs/claim.rs): up to $4[i] jobs of queue $3[i],
-- the places the claim's other pass left, after the turn of such claims
-- (src/flow/turns.rs), so this snapshot sees every committed claim of an ordered job. A job
-- is free when its key has no older unfinished job and none in flight, and is not stopped
-- but by it (a stopped key hands out only its failed job's redrive). The jobs a scan passed
-- over were not free: they wait for their key (waits_for_key) until key_waits_clear.sql
-- (decision 0020). Expired leases, the claim order, the TID scan: claim.sql's.
WITH
shares AS MATERIALIZED (
    SELECT share.queue, share.jobs, head.claim_order AS head, head.id AS head_id
      FROM ROWS FROM (pg_catalog.unnest($3::text[]), pg_catalog.unnest($4::int8[])) AS share(queue, jobs)
     CROSS JOIN LATERAL (
        SELECT pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) AS claim_order, job.id
          FROM ONLY @extschema@.send_jobs AS job
         WHERE job.status = 'pending' AND job.ordering_key IS NOT NULL AND NOT job.waits_for_key
           AND job.queue = share.queue
         ORDER BY job.queue, 1, job.id
         LIMIT 1) AS head
     -- the settings as this snapshot has them (the caller's list may be stale)
     WHERE NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS settings
                        WHERE settings.queue = share.queue
                          AND (settings.paused OR settings.max_in_flight IS NOT NULL OR settings.rate IS NOT NULL))
),
pending AS MATERIALIZED (
    SELECT share.queue, due.tid, due.id, due.claim_order
      FROM shares AS share
     CROSS JOIN LATERAL (
        SELECT ctid AS tid, id, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) AS claim_order
          FROM ONLY @extschema@.send_jobs AS job
         WHERE status = 'pending' AND job.ordering_key IS NOT NULL AND NOT job.waits_for_key
           AND (job.queue, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority), job.id) >= (share.queue, share.head, share.head_id)
           AND job.queue <= share.queue
           AND pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) <= pg_catalog.timezone(interval '0', $1)
           AND next_attempt_at <= $1
           -- free
           AND (NOT EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS older
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
                                               WHERE stopping.id = blocked.job_id AND stopping.status = 'failed')))
         ORDER BY job.queue, claim_order, id
         LIMIT share.jobs
           FOR UPDATE SKIP LOCKED) AS due
),
-- How far each queue's scan read, and the places it left.
stretch AS MATERIALIZED (
    SELECT share.queue, share.head, share.head_id, share.jobs - taken.jobs AS places_left,
           coalesce(last.claim_order, 'infinity') AS last_order,
           coalesce(last.id, 9223372036854775807) AS last_id
      FROM shares AS share
     CROSS JOIN LATERAL (SELECT pg_catalog.count(*) AS jobs FROM pending WHERE pending.queue = share.queue) AS taken
      LEFT JOIN LATERAL (
           SELECT pending.claim_order, pending.id FROM pending
            WHERE pending.queue = share.queue AND taken.jobs >= share.jobs
            ORDER BY pending.claim_order DESC, pending.id DESC LIMIT 1) AS last ON true
),
-- The jobs passed over in that stretch: the same test, not free.
passed AS MATERIALIZED (
    SELECT line.tid
      FROM stretch CROSS JOIN LATERAL (
        SELECT ctid AS tid
          FROM ONLY @extschema@.send_jobs AS job
         WHERE status = 'pending' AND job.ordering_key IS NOT NULL AND NOT job.waits_for_key
           AND (job.queue, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority), job.id) >= (stretch.queue, stretch.head, stretch.head_id)
           AND (job.queue, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority), job.id) <= (stretch.queue, stretch.last_order, stretch.last_id)
           AND pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority) <= pg_catalog.timezone(interval '0', $1)
           AND next_attempt_at <= $1
           AND job.id <> ALL (ARRAY(SELECT pending.id FROM pending))
           AND NOT ((NOT EXISTS (SELECT FROM ONLY @extschema@.send_jobs AS older
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
         ORDER BY job.queue, pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority), job.id
           FOR UPDATE SKIP LOCKED) AS line
),
waiting AS (
    UPDATE ONLY @extschema@.send_jobs AS job
       SET waits_for_key = true
     WHERE job.ctid = ANY (ARRAY(SELECT passed.tid FROM passed))
),
claimed AS (
    UPDATE ONLY @extschema@.send_jobs AS job
       SET status = 'in_flight',
           attempts = job.attempts + 1,
           claimed_at = $1,
           lease_expires_at = $1 + $2,
           claim_generation = GREATEST(job.claim_generation + 1, $5) -- unique across failovers: decision 0025
     WHERE job.ctid = ANY (ARRAY(SELECT pending.tid FROM pending))
 RETURNING job, pg_catalog.timezone(interval '0', job.next_attempt_at) - pg_catalog.make_interval(mins => job.priority) AS claim_order, job.id, job.queue
)
SELECT job, id, claim_order, queue, NULL::int8 AS places_left FROM claimed
UNION ALL
-- Each queue given with the places it left (a queue without ordered jobs that may be free,
-- or with flow control in this snapshot, left all of them).
SELECT NULL, NULL, NULL, given.queue, coalesce(stretch.places_left, given.jobs)
  FROM ROWS FROM (pg_catalog.unnest($3::text[]), pg_catalog.unnest($4::int8[])) AS given(queue, jobs)
  LEFT JOIN stretch ON stretch.queue = given.queue
