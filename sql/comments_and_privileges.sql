-- Loaded last (finalize), once every function exists: the catalog as documentation (what
-- \df+ and \d+ show for every object of sendjobs) and the privileges (no function is
-- for PUBLIC; sendjobs_grant gives the access levels). sql/sendjobs--0.1.0--0.2.0.sql
-- repeats these statements for databases created at 0.1.0; the upgrade test compares
-- the catalog of an upgraded database with a fresh one, comments and rights included.

-- Functions: the API.
COMMENT ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer, text, integer) IS
    'Adds a pending job and returns its id. Arguments: payload (required), queue (default ''default''), run_at (NULL: now), transaction_id (the linked business row), idempotency_key (a repeated key returns the existing job''s id and changes nothing), max_attempts (NULL: sendjobs.default_max_attempts), ordering_key (jobs that share one are claimed one at a time, in the order of their ids), priority (0 to 60: minutes of head start in the claim order).';
COMMENT ON FUNCTION @extschema@.sendjobs_enqueue_many(jsonb[], text[], timestamptz[], text[], text[], integer[], text[], integer[]) IS
    'Adds the jobs of payloads in one statement, each as sendjobs_enqueue adds one, and returns their ids in payloads'' order (a repeated idempotency key gives the existing job''s id). Every other array holds one value per job or one for all: queues (default {default}), run_at, transaction_ids, idempotency_keys, max_attempts, ordering_keys, priorities (default {0}); NULL where sendjobs_enqueue takes NULL. A bad job anywhere adds none.';
COMMENT ON FUNCTION @extschema@.sendjobs_claim(integer, interval, text) IS
    'Claims up to batch jobs (FOR UPDATE SKIP LOCKED): pending ones that are due and in_flight ones whose lease expired. From one queue, in claim order: next_attempt_at less the job''s priority (minutes of head start), oldest first. From any queue (queue NULL), the queues with due jobs in turn, each an even share of the batch, each in its claim order: one queue''s backlog never holds another''s due jobs (invariant 21). Each job becomes in_flight with attempts + 1, a lease of now + lease (NULL: sendjobs.default_lease) and claim_generation + 1 (more after a failover: invariant 2). Returns the rows as updated; keep id and claim_generation. An expired job that has used all max_attempts is not claimed: it gives up, failed with its event and its business row stamped, the reason in last_error.';
COMMENT ON FUNCTION @extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz) IS
    'Records the outcome (sent, failed or retry) of the claim (id, generation). Returns applied when that claim is the current one of an in_flight job, or when this claim was already finalized with this outcome (a repeat, say after a lost answer: nothing changes again); else stale and changes nothing. sent/failed are terminal: the job moves to send_jobs_finished, where its row is its event (send_job_events), and the linked business row is stamped, in the caller''s transaction. retry: pending again at retry_at or after a backoff; failed once attempts reach max_attempts.';
COMMENT ON FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz) IS
    'sendjobs_finalize for many claims (ids[i], generations[i]) in one statement, all with one outcome, each fenced on its own. Returns one row per claim in input order: id, applied or stale, the job''s status and attempts after the call (sent, failed, or pending: retried), and repeated (the claim had already been finalized so; nothing changed).';
COMMENT ON FUNCTION @extschema@.sendjobs_heartbeat(bigint, bigint, interval) IS
    'Extends the lease of the claim (id, generation) to now + lease (NULL: sendjobs.default_lease): applied while that claim is current; stale tells the worker it lost the job and must stop.';
COMMENT ON FUNCTION @extschema@.sendjobs_guard_terminal(regclass, name, text[], text[]) IS
    'Attaches the terminal guard to a business table (trigger zz_sendjobs_guard_terminal, BEFORE UPDATE FOR EACH ROW): a status column leaves a terminal value only through a declared exit (from:to). sendjobs.guard_action decides whether a refusal skips the row with a WARNING or fails with 23514.';
COMMENT ON FUNCTION @extschema@.sendjobs_guard_terminal_trigger() IS
    'The terminal guard''s trigger function, usable in CREATE TRIGGER ... BEFORE UPDATE ... FOR EACH ROW. Arguments (all optional): status column (status), terminal values as a text[] literal ({success,failed}), exits as from:to pairs ({failed:pending}).';
COMMENT ON FUNCTION @extschema@.sendjobs_link_transactions(regclass, name, name, text, text, text) IS
    'Declares the business table that send_jobs.transaction_id points at: an applied sent/failed finalize (or a job that gives up) then sets that row''s status column to on_sent/on_failed in the same transaction, and sendjobs_redrive to on_redrive, through any guard. Calling it again replaces the link.';
COMMENT ON FUNCTION @extschema@.sendjobs_unlink_transactions() IS
    'Removes the transaction link: finalizes stop stamping business rows.';
COMMENT ON FUNCTION @extschema@.sendjobs_grant(regrole, text) IS
    'Gives a role an access level: producer (enqueue, enqueue_many, cancel), worker (claim, heartbeat, finalize, finalize_batch, queue_limits), monitor (sendjobs_stats, sendjobs_queue_limits; read the queue without payloads, the outbox and its consumers), relay (sendjobs_read_events) or admin (every function, reading every table). No level may write the queue tables: the functions do, as the extension''s owner.';
COMMENT ON FUNCTION @extschema@.sendjobs_cancel(bigint) IS
    'Cancels a job: applied when it was pending or in_flight (now cancelled, terminal, with one cancelled event; its holder''s finalize and heartbeat get stale), stale when it had already finished. The business row is not stamped.';
COMMENT ON FUNCTION @extschema@.sendjobs_redrive(bigint[]) IS
    'Sends failed jobs again: each becomes a new pending job (same queue, payload, transaction_id, max_attempts; redrive_of naming it), the failed job kept as history. The linked business row is set to on_redrive through the guard. A job redriven before returns its first new job. Returns (id, new_id) per job; an unknown (P0002) or not failed (55000) id fails the whole call.';
COMMENT ON FUNCTION @extschema@.sendjobs_purge(interval, integer) IS
    'Deletes up to batch finished jobs (sent, failed, cancelled; each its own event) that finished more than older_than ago, but none a consumer of the outbox has not passed, and returns how many. Skips locked rows: safe from cron while workers run; call until it returns less than batch.';
COMMENT ON FUNCTION @extschema@.sendjobs_notify(text, boolean) IS
    'Turns wake-ups for a queue on or off: while on, a transaction that enqueues into it sends one NOTIFY sendjobs_wakeup, payload the queue name, at commit.';
COMMENT ON FUNCTION @extschema@.sendjobs_pause(text) IS
    'Pauses a queue: from the commit on, no claim hands out its jobs (jobs in flight finish as usual). sendjobs_resume ends it.';
COMMENT ON FUNCTION @extschema@.sendjobs_resume(text) IS
    'Resumes a paused queue, and wakes its workers at the commit (NOTIFY sendjobs_wakeup, payload the queue name).';
COMMENT ON FUNCTION @extschema@.sendjobs_limit(text, integer, double precision, integer) IS
    'Sets a queue''s limits, replacing its earlier ones, enforced by every claim: at most max_in_flight of its jobs under an unexpired lease at once; at most rate jobs claimed a second (from 1/86400, one a day, to 1,000,000) with bursts of burst (a token bucket on the database clock; burst defaults to one second''s worth). NULL: no such limit; sendjobs_limit(queue) lifts both. A claim beyond them gets fewer rows, not an error.';
COMMENT ON FUNCTION @extschema@.sendjobs_queue_limits(text) IS
    'The flow control of a queue (NULL: of every queue that has some): paused, max_in_flight and in_flight, rate, burst and tokens, and whether a claim would be limited now (limited: paused, max_in_flight or rate; NULL when not) and when that may lift by itself (retry_after). A worker whose claim came back short asks it to tell limited from empty.';
COMMENT ON FUNCTION @extschema@.sendjobs_block_keys(text, boolean) IS
    'Sets whether a job of the queue with an ordering key that fails for good (a failed finalize, a retry on its last attempt, a lease expired on its last attempt) stops the rest of its key: from the commit, no job of the key is claimed but the failed job''s redrive, which goes first, until that redrive was sent or cancelled, or sendjobs_unblock_key. Off by default: the next job of the key goes.';
COMMENT ON FUNCTION @extschema@.sendjobs_unblock_key(text) IS
    'Lets an ordering key stopped by a failed job (sendjobs_block_keys) go on: its next job is claimed as if the failure had not blocked. Returns whether the key was stopped.';
COMMENT ON FUNCTION @extschema@.sendjobs_stats() IS
    'One row per queue with unfinished jobs or events in the last 5 minutes: ready, scheduled, in_flight, expired (awaiting reclaim), at_last_attempt (in flight on their last attempt), oldest_ready_age, sent/failed/cancelled in the last 5 minutes, estimated (ready, scheduled and the 5-minute counts are exact up to 10,000, estimated from a sample above); and on every row send_jobs'' dead tuples and the oldest transaction holding back vacuum (age, and xmin age in transactions); and the queue''s flow control: paused, max_in_flight (its use: in_flight), rate and the tokens of its bucket now (sendjobs_limit).';
COMMENT ON FUNCTION @extschema@.sendjobs_create_consumer(text, boolean, regrole, boolean) IS
    'Creates a consumer of the outbox: it reads, with sendjobs_read_events, every event not yet committed when it is created, its own transaction''s included (from_start: every event still kept, too). reader: only that role''s members may read it (NULL: any role with the relay level). wake: a finish then sends the outbox''s wake-up at its commit. sendjobs_purge keeps an event until every consumer has passed it.';
COMMENT ON FUNCTION @extschema@.sendjobs_drop_consumer(text) IS
    'Drops a consumer of the outbox: sendjobs_purge no longer keeps events for it.';
COMMENT ON FUNCTION @extschema@.sendjobs_read_events(text, integer) IS
    'Reads up to max events of the outbox for a consumer, the next after its position, and moves the position past them in the caller''s transaction (a rollback reads them again). Every event once per consumer, in batches that follow commit order (what had committed when a batch was taken is in it or an earlier one), each batch in (transaction, job id) order. Fewer than max rows: caught up.';
COMMENT ON FUNCTION @extschema@.sendjobs_revoke(regrole, text) IS
    'Takes an access level from a role (the privileges it shares with another level go too: grant that level again).';

-- Functions: internal helpers, not for callers.
COMMENT ON FUNCTION @extschema@.sendjobs_job_state_is_valid(text, integer, integer, bigint, timestamptz, timestamptz, timestamptz, boolean) IS
    'Internal: the row rule of send_jobs (live) and send_jobs_finished (not live), called by their CHECKs send_jobs_live_check and send_jobs_finished_check (a status of the row''s table, a lease exactly while in_flight, finished_at exactly when terminal, counters in range). Not part of the API.';
COMMENT ON FUNCTION @extschema@.sendjobs_forget_dropped_link() IS
    'Internal: the event trigger sendjobs_forget_dropped_link, which removes the transaction link when its table is dropped. Not part of the API.';
COMMENT ON FUNCTION @extschema@.sendjobs_events_are_finished_rows() IS
    'Internal: the trigger of the view send_job_events, which ignores writes to it (what releases before 0.3.0 ran: the finished row is the event). Not part of the API.';
COMMENT ON TRIGGER sendjobs_events_are_finished_rows ON @extschema@.send_job_events IS
    'sendjobs: writes to the view of the events are ignored (a finished job''s row is its event).';
COMMENT ON FUNCTION @extschema@.sendjobs_attempt_ended() IS
    'Internal: the trigger sendjobs_attempt_ended, which writes an attempt that ended without finishing its job into send_job_attempts. Not part of the API.';
COMMENT ON TRIGGER sendjobs_attempt_ended ON @extschema@.send_jobs IS
    'sendjobs: an in_flight job retried, or claimed again after its lease expired, leaves the attempt that ended in send_job_attempts.';
COMMENT ON EVENT TRIGGER sendjobs_forget_dropped_link IS
    'sendjobs: removes the transaction link when the linked table is dropped.';

-- send_jobs
COMMENT ON COLUMN @extschema@.send_jobs.id IS 'The job''s id, returned by sendjobs_enqueue.';
COMMENT ON COLUMN @extschema@.send_jobs.queue IS 'The partner or channel; sendjobs_claim can take from one queue only.';
COMMENT ON COLUMN @extschema@.send_jobs.payload IS 'What to send, as the producer gave it.';
COMMENT ON COLUMN @extschema@.send_jobs.transaction_id IS 'Key of the business row this send belongs to (see sendjobs_link_transactions), or NULL.';
COMMENT ON COLUMN @extschema@.send_jobs.idempotency_key IS 'Unique when set: enqueueing a key again returns the existing job.';
COMMENT ON COLUMN @extschema@.send_jobs.status IS 'pending, in_flight, sent, failed or cancelled (the last three are terminal).';
COMMENT ON COLUMN @extschema@.send_jobs.attempts IS 'Claims so far; each claim adds one.';
COMMENT ON COLUMN @extschema@.send_jobs.max_attempts IS 'The most claims the job gets: a retry finalize at attempts >= max_attempts fails the job, and so does an expired lease there (the next claim gives up on it).';
COMMENT ON COLUMN @extschema@.send_jobs.next_attempt_at IS 'When the job is due; less its priority, its place in the claim order (an expired lease keeps it).';
COMMENT ON COLUMN @extschema@.send_jobs.claimed_at IS 'When the last claim was made (database clock).';
COMMENT ON COLUMN @extschema@.send_jobs.lease_expires_at IS 'End of the current claim''s lease, exactly while in_flight; after it the job can be claimed again.';
COMMENT ON COLUMN @extschema@.send_jobs.claim_generation IS 'The fencing token: grows with every claim (by one; to a new timeline''s floor after a failover); finalize and heartbeat apply only with the current one.';
COMMENT ON COLUMN @extschema@.send_jobs.last_error IS 'The error of the last failed or retry finalize that gave one, or why the job gave up.';
COMMENT ON COLUMN @extschema@.send_jobs.created_at IS 'When the job was enqueued.';
COMMENT ON COLUMN @extschema@.send_jobs.finished_at IS 'When the job became terminal; NULL until then.';
COMMENT ON COLUMN @extschema@.send_jobs.redrive_of IS 'The failed job this one sends again (sendjobs_redrive), or NULL.';
COMMENT ON COLUMN @extschema@.send_jobs.ordering_key IS 'Jobs that share it are claimed one at a time, in id order: a job waits while an older unfinished job of its key exists, or one of its key is in flight (sendjobs_enqueue), or NULL.';
COMMENT ON COLUMN @extschema@.send_jobs.waits_for_key IS 'True while the job is known to wait behind an earlier job of its ordering key (a claim found it not free): the claims pass over it until a job of its key finishes or goes back to pending, or its key is let go. Always false without a key, and once finished.';
COMMENT ON COLUMN @extschema@.send_jobs.priority IS 'Minutes of head start in the claim order: the job is claimed as if it had been due this much earlier (sendjobs_enqueue), 0 by default.';
COMMENT ON INDEX @extschema@.send_jobs_pending_idx IS 'The claim''s pending branch, in claim order (any queue).';
COMMENT ON STATISTICS @extschema@.send_jobs_claim_order_stats IS 'The claim order''s statistics (the planner reads none of a partial index''s expressions).';
COMMENT ON INDEX @extschema@.send_jobs_pending_queue_idx IS 'The claim''s pending branch for one queue, in claim order.';
COMMENT ON INDEX @extschema@.send_jobs_pending_unkeyed_queue_idx IS 'The claim''s pending branch for one queue''s jobs without an ordering key, in claim order (pending jobs without a key only).';
COMMENT ON INDEX @extschema@.send_jobs_lease_idx IS 'The claim''s expired-lease branch: exactly the in_flight rows, by lease end.';
COMMENT ON INDEX @extschema@.send_jobs_ordering_key_idx IS 'Ordered keys: an older unfinished job of the key (jobs with a key only).';
COMMENT ON INDEX @extschema@.send_jobs_ordering_key_held_idx IS 'Ordered keys: a job of the key in flight (jobs with a key and a lease only).';
COMMENT ON INDEX @extschema@.send_jobs_pending_keyed_queue_idx IS 'Ordered jobs that may be free, by queue in claim order: the claims'' passes for them (pending jobs with a key that do not wait for it only).';
COMMENT ON INDEX @extschema@.send_jobs_waits_for_key_idx IS 'The jobs that wait for their key, by key, oldest first: what a finish of a job of the key clears (waiting jobs only).';
COMMENT ON INDEX @extschema@.send_jobs_redrive_of_idx IS 'A failed job is redriven at most once (partial: only redriven jobs have an entry).';
COMMENT ON CONSTRAINT send_jobs_live_check ON @extschema@.send_jobs IS
    'The row rule (sendjobs_job_state_is_valid): send_jobs itself holds only unfinished jobs (pending, in_flight; a finished job is in send_jobs_finished), a lease and claim time exactly while in_flight, never finished_at, counters in range. Not inherited.';

-- send_jobs_finished: its columns are send_jobs'', and say what they say there.
COMMENT ON CONSTRAINT send_jobs_finished_check ON @extschema@.send_jobs_finished IS
    'The row rule (sendjobs_job_state_is_valid): only finished jobs (sent, failed, cancelled), with finished_at and no lease, counters in range.';
COMMENT ON INDEX @extschema@.send_jobs_finished_redrive_of_idx IS 'A failed job is redriven at most once: the redrives that finished (partial).';
COMMENT ON INDEX @extschema@.send_jobs_finished_event_xid_idx IS 'The outbox in its reading order: sendjobs_read_events pages through a batch by it; sendjobs_stats finds the last 5 minutes by it.';
COMMENT ON INDEX @extschema@.send_jobs_finished_finished_at_idx IS 'Finished jobs by age (BRIN): what sendjobs_purge deletes.';
COMMENT ON INDEX @extschema@.send_jobs_finished_unsent_idx IS 'Failed and cancelled jobs by age: their exact 5-minute counts in sendjobs_stats.';
COMMENT ON INDEX @extschema@.send_jobs_finished_failed_queue_idx IS 'A queue''s failed jobs by age: what an operator looks through to redrive (failed jobs only).';
DO $$
DECLARE
    col record;
BEGIN
    FOR col IN SELECT a.attname, pg_catalog.col_description(a.attrelid, a.attnum) AS text
                 FROM pg_catalog.pg_attribute AS a
                WHERE a.attrelid OPERATOR(pg_catalog.=) '@extschema@.send_jobs'::pg_catalog.regclass::pg_catalog.oid
                  AND a.attnum OPERATOR(pg_catalog.>) 0::pg_catalog.int2 AND NOT a.attisdropped
    LOOP
        EXECUTE pg_catalog.format('COMMENT ON COLUMN @extschema@.send_jobs_finished.%I IS %L',
                                  col.attname, col.text);
    END LOOP;
END $$;

-- send_job_keys
COMMENT ON TABLE @extschema@.send_job_keys IS
    'sendjobs: the idempotency keys in use, unique across send_jobs and send_jobs_finished (written by sendjobs_enqueue, deleted by sendjobs_purge).';
COMMENT ON COLUMN @extschema@.send_job_keys.idempotency_key IS 'The key, as send_jobs.idempotency_key holds it.';
COMMENT ON COLUMN @extschema@.send_job_keys.job_id IS 'The job that holds it.';

-- send_job_events, the view of the finished rows as events
COMMENT ON COLUMN @extschema@.send_job_events.job_id IS 'The finished job (one event per job: the event is the job''s row in send_jobs_finished).';
COMMENT ON COLUMN @extschema@.send_job_events.transaction_id IS 'The job''s transaction_id.';
COMMENT ON COLUMN @extschema@.send_job_events.kind IS 'sent, failed or cancelled: how the job finished.';
COMMENT ON COLUMN @extschema@.send_job_events.claim_generation IS 'The job''s claim_generation when it finished (for sent and failed: the claim whose finalize applied, or whose lease expired on the last attempt).';
COMMENT ON COLUMN @extschema@.send_job_events.created_at IS 'When the job finished (database clock): its finished_at.';
COMMENT ON COLUMN @extschema@.send_job_events.queue IS 'The job''s queue.';
COMMENT ON COLUMN @extschema@.send_job_events.event_xid IS 'The transaction that finished the job: the outbox''s batches are read in its order (sendjobs_read_events).';
COMMENT ON COLUMN @extschema@.send_jobs_finished.outcome IS 'The outcome of the finalize that finished the job (sent, failed, or retry on its last attempt); NULL when no finalize did (it gave up, or was cancelled), and for a job that finished before 0.3.0.';
COMMENT ON COLUMN @extschema@.send_jobs_finished.event_xid IS 'The transaction that finished the job: the outbox''s batches are read in its order (sendjobs_read_events).';

-- sendjobs_consumers
COMMENT ON TABLE @extschema@.sendjobs_consumers IS
    'sendjobs: the consumers of the outbox and their positions (sendjobs_create_consumer, sendjobs_read_events); not dumped: a position is made of this cluster''s transaction ids.';
COMMENT ON COLUMN @extschema@.sendjobs_consumers.consumer IS 'The consumer''s name.';
COMMENT ON COLUMN @extschema@.sendjobs_consumers.passed IS 'Every event visible in this snapshot has been read.';
COMMENT ON COLUMN @extschema@.sendjobs_consumers.batch IS 'The batch being read (the events visible in it and not in passed), or NULL between batches.';
COMMENT ON COLUMN @extschema@.sendjobs_consumers.read_xid IS 'In the batch, the event_xid of the last event read.';
COMMENT ON COLUMN @extschema@.sendjobs_consumers.read_id IS 'In the batch, the job id of the last event read.';
COMMENT ON COLUMN @extschema@.sendjobs_consumers.created_at IS 'When the consumer was created (database clock).';
COMMENT ON COLUMN @extschema@.sendjobs_consumers.reader IS 'The role (oid) whose members may read the consumer; NULL: any role with the relay level.';
COMMENT ON COLUMN @extschema@.sendjobs_consumers.wake IS 'Whether a finish sends the outbox''s wake-up for this consumer.';
COMMENT ON COLUMN @extschema@.sendjobs_consumers.read_at IS 'When it last read (database clock).';
COMMENT ON CONSTRAINT sendjobs_consumers_read_check ON @extschema@.sendjobs_consumers IS 'A read position (read_xid, read_id) is whole, and only inside a batch.';

-- sendjobs_transaction_link
COMMENT ON TABLE @extschema@.sendjobs_transaction_link IS
    'sendjobs: the business table applied terminal finalizes stamp (at most one row; written by sendjobs_link_transactions).';
COMMENT ON COLUMN @extschema@.sendjobs_transaction_link.singleton IS 'Always true: there is at most one link.';
COMMENT ON COLUMN @extschema@.sendjobs_transaction_link.tbl IS 'The business table.';
COMMENT ON COLUMN @extschema@.sendjobs_transaction_link.key_column IS 'Its column that send_jobs.transaction_id matches.';
COMMENT ON COLUMN @extschema@.sendjobs_transaction_link.status_column IS 'Its status column, set by applied terminal finalizes.';
COMMENT ON COLUMN @extschema@.sendjobs_transaction_link.on_sent IS 'The status a sent job gives its business row.';
COMMENT ON COLUMN @extschema@.sendjobs_transaction_link.on_failed IS 'The status a failed job gives its business row.';
COMMENT ON COLUMN @extschema@.sendjobs_transaction_link.on_redrive IS 'The status sendjobs_redrive gives the business row of a job it sends again.';
COMMENT ON COLUMN @extschema@.sendjobs_transaction_link.linked_by IS 'The role that linked the table: the stamps run as it, restricted, whoever finalizes (for a link made before 0.2.1, the table''s owner).';

-- sendjobs_queues
COMMENT ON TABLE @extschema@.sendjobs_queues IS
    'sendjobs: per-queue settings (written by sendjobs_notify, sendjobs_pause, sendjobs_resume, sendjobs_limit and sendjobs_block_keys); a queue without a row has the defaults: no wake-ups, no limit, keys that go on past a failure.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.queue IS 'The queue.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.notify IS 'Whether an enqueue into it sends NOTIFY sendjobs_wakeup (once per transaction).';
COMMENT ON COLUMN @extschema@.sendjobs_queues.paused IS 'Whether claims hand out none of its jobs (sendjobs_pause, sendjobs_resume).';
COMMENT ON COLUMN @extschema@.sendjobs_queues.max_in_flight IS 'The most of its jobs under an unexpired lease at once (sendjobs_limit), or NULL.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.rate IS 'The most of its jobs claimed a second, on average (sendjobs_limit), or NULL: each job claimed is one token, a job claimed again after its lease expired too.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.burst IS 'The most of its jobs claimed at once after a quiet time: the token bucket''s size. In any window of T seconds at most burst + rate x T are claimed.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.tokens IS 'The token bucket: the jobs that may still be claimed at tokens_at (refilled at rate a second up to burst).';
COMMENT ON COLUMN @extschema@.sendjobs_queues.tokens_at IS 'When tokens was counted (the claims'' clock).';
COMMENT ON COLUMN @extschema@.sendjobs_queues.block_keys IS 'Whether a job with an ordering key that fails for good stops the rest of its key (sendjobs_block_keys).';
COMMENT ON CONSTRAINT sendjobs_queues_limits_check ON @extschema@.sendjobs_queues IS 'Limits in range: a cap of at least 1, a rate from one a day (1/86400) to 1,000,000 jobs a second with a burst of at least 1 and its bucket.';

-- send_job_attempts
COMMENT ON TABLE @extschema@.send_job_attempts IS
    'sendjobs: a job''s earlier attempts, each claim that ended without finishing it (retried by its worker, or claimed again after its lease expired); the latest 20 of a job, deleted with it by sendjobs_purge. The attempt that finished the job is its own row.';
COMMENT ON COLUMN @extschema@.send_job_attempts.job_id IS 'The job (send_jobs.id).';
COMMENT ON COLUMN @extschema@.send_job_attempts.claim_generation IS 'The claim that made the attempt: its fencing token.';
COMMENT ON COLUMN @extschema@.send_job_attempts.attempt IS 'Which attempt it was (the job''s attempts then, from 1).';
COMMENT ON COLUMN @extschema@.send_job_attempts.claimed_at IS 'When the claim took the job.';
COMMENT ON COLUMN @extschema@.send_job_attempts.ended_at IS 'When the attempt ended: its worker''s retry, or the expiry of its lease.';
COMMENT ON COLUMN @extschema@.send_job_attempts.ended IS 'How: retry (its worker finalized it so) or lease expired (another claim took the job).';
COMMENT ON COLUMN @extschema@.send_job_attempts.error IS 'The error its worker gave with the retry (what it wrote to last_error); NULL for a lease that expired.';

-- sendjobs_blocked_keys
COMMENT ON TABLE @extschema@.sendjobs_blocked_keys IS
    'sendjobs: the ordering keys stopped by a job that failed for good in a queue that blocks its keys (sendjobs_block_keys); no job of the key is claimed but job_id while job_id is unfinished or failed. sendjobs_unblock_key removes a row; sendjobs_purge the rows whose job no longer stops its key.';
COMMENT ON COLUMN @extschema@.sendjobs_blocked_keys.ordering_key IS 'The ordering key stopped.';
COMMENT ON COLUMN @extschema@.sendjobs_blocked_keys.job_id IS 'The job that stops it and alone may be claimed: the failed job, then its redrive (sendjobs_redrive hands it over).';
COMMENT ON COLUMN @extschema@.sendjobs_blocked_keys.queue IS 'The queue of the job that failed.';
COMMENT ON COLUMN @extschema@.sendjobs_blocked_keys.blocked_at IS 'When the key was stopped (the failure''s clock).';

-- Privileges: EXECUTE is the only thing a caller needs, and PUBLIC has it on nothing.
REVOKE ALL ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_enqueue_many(jsonb[], text[], timestamptz[], text[], text[], integer[], text[], integer[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_claim(integer, interval, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_heartbeat(bigint, bigint, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_guard_terminal(regclass, name, text[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_guard_terminal_trigger() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_link_transactions(regclass, name, name, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_unlink_transactions() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_grant(regrole, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_revoke(regrole, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_cancel(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_redrive(bigint[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_purge(interval, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_notify(text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_stats() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_pause(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_resume(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_limit(text, integer, double precision, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_queue_limits(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_block_keys(text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_unblock_key(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_create_consumer(text, boolean, regrole, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_drop_consumer(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_read_events(text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_job_state_is_valid(text, integer, integer, bigint, timestamptz, timestamptz, timestamptz, boolean) FROM PUBLIC;
