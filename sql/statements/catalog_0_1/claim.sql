-- sendjobs_claim against a 0.1.0 catalog: the 0.2.0 library between the install of its files and
-- ALTER EXTENSION sendjobs UPDATE (README: Upgrading). A 0.1.0 catalog has no
-- send_jobs_finished and no send_job_keys: finished jobs stay in send_jobs.
-- sendjobs_claim (src/claim.rs): take up to $2 due jobs under a lease, in one statement.
-- $1 now (timestamptz), $2 batch (int8), $3 lease (interval), $4 queue (text).
-- An expired lease on a job that has used all its attempts is not claimed: the job
-- gives up, finished as failed with its event (invariant 8: its worker died, or its
-- finalize could never apply, on every attempt). Such rows come back with gave_up, and
-- src/claim.rs stamps their business rows and claims again for the places they took.
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
    SELECT id, next_attempt_at FROM @extschema@.send_jobs
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
    SELECT id, next_attempt_at, attempts >= max_attempts AS gave_up FROM @extschema@.send_jobs
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
    UPDATE @extschema@.send_jobs AS job
       SET status = CASE WHEN picked.gave_up THEN 'failed' ELSE 'in_flight' END,
           attempts = job.attempts + CASE WHEN picked.gave_up THEN 0 ELSE 1 END,
           claimed_at = CASE WHEN picked.gave_up THEN job.claimed_at ELSE $1 END,
           lease_expires_at = CASE WHEN picked.gave_up THEN NULL ELSE $1 + $3 END,
           claim_generation = job.claim_generation + CASE WHEN picked.gave_up THEN 0 ELSE 1 END,
           finished_at = CASE WHEN picked.gave_up THEN $1 END,
           last_error = CASE WHEN picked.gave_up
               THEN pg_catalog.concat('sendjobs: gave up: the lease of attempt ', job.attempts,
                        ' of ', job.max_attempts, ' expired', ' (last error: ' || job.last_error || ')')
               ELSE job.last_error END
      FROM picked
     WHERE job.id = picked.id
 RETURNING job, picked.gave_up, job.transaction_id, job.next_attempt_at, job.id
),
gave_up AS (
    INSERT INTO @extschema@.send_job_events (job_id, transaction_id, kind, claim_generation, created_at
                                            )
    SELECT (job).id, (job).transaction_id, 'failed', (job).claim_generation, $1
      FROM claimed
     WHERE claimed.gave_up
)
SELECT job, gave_up, id, transaction_id FROM claimed ORDER BY next_attempt_at, id
