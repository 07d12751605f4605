--- params: now timestamptz, batch int8, lease interval, queue text, generation_floor int8
--- columns: job, gave_up, id, claim_order, keyed, others
-- sendjobs_claim (src/claim.rs): take up to $2 due jobs under a lease, in one statement.
-- An expired lease on a job that has used all its attempts is not claimed: the job
-- gives up (invariant 8: its worker died, or its finalize could never apply, on every
-- attempt). Such rows stay locked and come back with gave_up (and no job); src/claim.rs
-- finishes them as failed (give_up.sql, under these row locks), claims again for the
-- places they took, then stamps their business rows. Giving up is rare, and a statement
-- that could also move rows to send_jobs_finished paid, on every claim, to set up that
-- DELETE and INSERT (its two table writes, the finished table's five indexes and its
-- CHECKs): a fifth of a claim of one job's instructions (callgrind; BENCHMARKS.md,
-- "Instructions per job").
-- A claim from any queue runs claim_shares.sql, each queue its share (decision 0019),
-- or, while one queue alone has pending jobs, only_queue: from any queue, in claim order,
-- as long as no other queue $4 has pending jobs (its last row says when one has, and
-- then it took no pending job); the other variants claim from queue $4 alone. Flow control
-- (docs/decisions/0013-flow-control-in-the-claim.md): src/claim.rs knows which queues
-- have any (paused, max_in_flight, rate: "limited"; src/flow.rs keeps the list, current
-- under the settings lock). Without any in $4, it runs one_queue, whose scans and plans
-- are what they were before flow control; other_queues when a change of the settings is
-- committing and the list may be stale (the settings of $4 are checked again in its
-- own snapshot), planned for the values; and limited_queue, from queue $4 with flow
-- control, whose settings row the caller holds locked and whose allowance it passes as
-- $2 (src/flow.rs). And ordered jobs (a job with an ordering key): only_queue,
-- one_queue and other_queues leave them to claim_keyed.sql, run after
-- a lock that makes such claims take turns (src/claim.rs); limited_queue takes them
-- itself, under its queue's lock, but for those that wait for their key (decision 0020).
--
-- Two index-ordered branches instead of one OR predicate (under ORDER BY ... LIMIT an OR
-- makes Postgres sort every eligible row): pending rows come from send_jobs_pending_idx
-- (or send_jobs_pending_queue_idx) already in claim order, expired leases from
-- send_jobs_lease_idx (few rows: only in_flight ones). Each branch stops after $2 rows it
-- could lock, so a batch of N reads about N index entries whatever the backlog. Postgres
-- allows no row locks under UNION, hence one CTE per branch; when both branches have
-- rows, up to $2 rows that lose the merge stay locked (not claimed) until the caller's
-- transaction ends. Every CTE is MATERIALIZED so the UPDATE touches exactly the rows the
-- LIMITs picked. An expired row keeps its place in the claim order, so reclaimed work is
-- not starved behind a pending backlog.
-- The claim order (claim_order) is the due time less the job's head start (priority, in
-- minutes), as a UTC timestamp: the expression of the pending indexes (sql/schema.sql),
-- written here as it is there, so the planner matches it; a job without priority is
-- ordered by its due time. "claim_order <= $1" is the index's bound (a due job's order is
-- at most its due time); "next_attempt_at <= $1" then drops the jobs whose head start
-- reaches before a due time still to come (heap rows the claim reads anyway).
-- "lease_expires_at IS NOT NULL" is implied by "<= $1" but not redundant: under the
-- generic plan "<= $1" is costed as a third of the table whatever the statistics say,
-- while the null test is costed from the share of rows that hold a lease; without it,
-- statistics taken while few jobs were in flight can make a sequential scan look as
-- cheap as the lease index (test: the_expired_branch_keeps_to_the_lease_index...).
-- "claimed_at < $1": a claim made at this instant is never reclaimed at this instant
-- (a lease of 0 expires at once), so the rounds src/claim.rs runs after jobs gave up
-- cannot take back, or give up on, what an earlier round of the same call claimed.
WITH
--- variant only_queue
-- Whether another queue than $4 has pending jobs: two descents of
-- send_jobs_pending_queue_idx, to the first entry after $4 and the last before it (as an
-- EXISTS, the generic plan read the whole table, expecting a third of it to match).
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
       -- queue $4's jobs without a key (send_jobs_pending_unkeyed_queue_idx: the ordered
       -- jobs of a queue of them are not read); one test, before the scan: queue $4 is
       -- the only one with pending jobs
       AND queue = $4
       AND job.ordering_key IS NULL
       AND NOT (SELECT others.exist FROM others)
--- variant one_queue
       AND queue = $4
       AND job.ordering_key IS NULL
--- variant other_queues
       AND queue = $4
       AND job.ordering_key IS NULL
       -- one test, before the scan, of the queue named (the list may be stale: src/flow.rs;
       -- a test on each row, as claim_shares.sql's checked makes, became on 15 a hash
       -- join over the queue's whole backlog, 999,960 entries for a claim of 10:
       -- src/tests/plans.rs)
       AND NOT EXISTS (SELECT FROM @extschema@.sendjobs_queues AS named
                        WHERE named.queue = $4
                          AND (named.paused OR named.max_in_flight IS NOT NULL OR named.rate IS NOT NULL))
--- variant limited_queue
       AND queue = $4
       -- An ordered job waits for every older unfinished job of its key, and for any of
       -- its key in flight (one of a younger id, enqueued by a transaction that committed
       -- first). The claims that test this take turns, so that each one's snapshot sees
       -- every such claim that committed: those of a queue with flow control on the
       -- queue's lock (this one), the others on a lock of their own (claim_keyed.sql).
       -- Jobs those found waiting are passed over here too (decision 0020).
       AND NOT job.waits_for_key
       -- A key stopped by a job that failed for good (sendjobs_blocked_keys, a queue that
       -- blocks its keys) hands out no job but that job's redrive, which goes before the
       -- key's older jobs, until it was sent or cancelled.
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
     -- in the order of send_jobs_pending_queue_idx (and of its part without ordered jobs,
     -- send_jobs_pending_unkeyed_queue_idx), queue first: the indexes that give it, so no
     -- plan reads the queue's backlog to sort it (a plan for the values did so after a
     -- burst, with statistics from before it: src/tests/plans.rs)
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
-- The rows are found again by the place their lock found them at (a TID scan: a row
-- this claim locked cannot move before its transaction ends): a probe of the primary key
-- per row cost a claim of 100 jobs a tenth of its instructions (callgrind; BENCHMARKS.md,
-- "Instructions per job"). A row that other transactions claimed and put back due again
-- between this statement's snapshot and its lock (a retry whose retry_at is before this
-- claim's instant: a retry at its own now() is after it, and fails the lock's recheck) is
-- locked in a version the snapshot does not see, which the TID scan then skips: that job
-- is not claimed by this call (nor by any other until this transaction ends), and the
-- claim comes back that much shorter (decision 0014, "Limits"; counting the rows picked
-- to catch it cost a claim of one job 6% of its instructions). Their claim order is the
-- row's own (the claim changes neither its due time nor its priority).
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
-- Another queue has pending jobs: this pass took none, and the caller serves the queues
-- in turn (claim_shares.sql).
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
