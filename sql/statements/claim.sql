--- params: now timestamptz, batch int8, lease interval, queue text
--- columns: job, gave_up, id, transaction_id, next_attempt_at
-- sendjobs_claim (src/claim.rs): take up to $2 due jobs under a lease, in one statement.
-- An expired lease on a job that has used all its attempts is not claimed: the job
-- gives up, finished as failed with its event (invariant 8: its worker died, or its
-- finalize could never apply, on every attempt); it moves to send_jobs_finished. Such rows
-- come back with gave_up (and no job), and src/claim.rs stamps their business rows and
-- claims again for the places they took.
-- Two variants: any_queue ($4 is NULL) and one_queue; each keeps its own index under a
-- generic plan, which one statement with "($4 IS NULL OR queue = $4)" would not.
--
-- Two index-ordered branches instead of one OR predicate (under ORDER BY ... LIMIT an OR
-- makes Postgres sort every eligible row): pending rows come from send_jobs_pending_idx
-- (or send_jobs_pending_queue_idx) already in claim order, expired leases from
-- send_jobs_lease_idx (few rows: only in_flight ones). Each branch stops after $2 rows it
-- could lock, so a batch of N reads about N index entries whatever the backlog. Postgres
-- allows no row locks under UNION, hence one CTE per branch; when both branches have
-- rows, up to $2 rows that lose the merge stay locked (not claimed) until the caller's
-- transaction ends. Every CTE is MATERIALIZED so the UPDATE touches exactly the rows the
-- LIMITs picked. An expired row keeps its place by next_attempt_at, so reclaimed work is
-- not starved behind a pending backlog.
-- "lease_expires_at IS NOT NULL" is implied by "<= $1" but not redundant: under the
-- generic plan "<= $1" is costed as a third of the table whatever the statistics say,
-- while the null test is costed from the share of rows that hold a lease; without it,
-- statistics taken while few jobs were in flight can make a sequential scan look as
-- cheap as the lease index (test: the_expired_branch_keeps_to_the_lease_index...).
-- "claimed_at < $1": a claim made at this instant is never reclaimed at this instant
-- (a lease of 0 expires at once), so the rounds src/claim.rs runs after jobs gave up
-- cannot take back, or give up on, what an earlier round of the same call claimed.
WITH pending AS MATERIALIZED (
    SELECT id, next_attempt_at FROM ONLY @extschema@.send_jobs
     WHERE status = 'pending' AND next_attempt_at <= $1
--- variant any_queue
       AND $4::text IS NULL
--- variant one_queue
       AND queue = $4
--- end
     ORDER BY next_attempt_at, id
     LIMIT $2
     FOR UPDATE SKIP LOCKED
),
expired AS MATERIALIZED (
    SELECT id, next_attempt_at, attempts >= max_attempts AS gave_up FROM ONLY @extschema@.send_jobs
     WHERE status = 'in_flight' AND lease_expires_at <= $1
       AND lease_expires_at IS NOT NULL
       AND claimed_at < $1
--- variant any_queue
       AND $4::text IS NULL
--- variant one_queue
       AND queue = $4
--- end
     ORDER BY next_attempt_at, id
     LIMIT $2
     FOR UPDATE SKIP LOCKED
),
picked AS MATERIALIZED (
    SELECT id, next_attempt_at, false AS gave_up FROM pending
    UNION ALL
    SELECT id, next_attempt_at, gave_up FROM expired
    ORDER BY next_attempt_at, id
    LIMIT $2
),
claimed AS (
    UPDATE ONLY @extschema@.send_jobs AS job
       SET status = 'in_flight',
           attempts = job.attempts + 1,
           claimed_at = $1,
           lease_expires_at = $1 + $3,
           claim_generation = job.claim_generation + 1
      FROM picked
     WHERE job.id = picked.id AND NOT picked.gave_up
 RETURNING job, job.next_attempt_at, job.id, job.transaction_id
),
-- The jobs that gave up leave send_jobs for send_jobs_finished, failed (sql/schema.sql).
leaving AS (
    DELETE FROM ONLY @extschema@.send_jobs AS job
     USING picked
     WHERE job.id = picked.id AND picked.gave_up
 RETURNING job.*
),
gave_up AS (
    -- The finished row is its event too (sql/schema.sql, send_job_events).
    INSERT INTO @extschema@.send_jobs_finished
           (id, queue, payload, transaction_id, idempotency_key, status, attempts,
            max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation,
            last_error, created_at, finished_at, redrive_of)
    SELECT id, queue, payload, transaction_id, idempotency_key, 'failed', attempts,
           max_attempts, next_attempt_at, claimed_at, NULL, claim_generation,
           pg_catalog.concat('sendjobs: gave up: the lease of attempt ', attempts,
               ' of ', max_attempts, ' expired', ' (last error: ' || last_error || ')'),
           created_at, $1, redrive_of
      FROM leaving
 RETURNING id, transaction_id, next_attempt_at
)
SELECT job, false AS gave_up, id, transaction_id, next_attempt_at FROM claimed
UNION ALL
SELECT NULL, true, id, transaction_id, next_attempt_at FROM gave_up
ORDER BY next_attempt_at, id
