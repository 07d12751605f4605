-- sendjobs 0.1.0 -> 0.2.0.
--  * The catalog explains itself: every object gets its COMMENT.
--  * Access levels: PUBLIC executes no function; sendjobs_grant / sendjobs_revoke give
--    and take producer, worker, monitor and admin. The functions now write the queue
--    tables as the extension's owner (the library does that), so no level needs, or
--    gets, a privilege to write them.
--  * Ids are GENERATED ALWAYS.
--  * Lifecycle: a job whose lease expires on its last attempt gives up (failed);
--    sendjobs_cancel (status cancelled, a cancelled event), sendjobs_redrive
--    (send_jobs.redrive_of, the link's on_redrive), sendjobs_purge (events found by
--    age: a BRIN index), wake-ups (sendjobs_queues, sendjobs_notify) and sendjobs_stats
--    (send_job_events.queue, and send_job_events_unsent_idx). Events staged before the
--    update have no queue (NULL), but those of its last 10 minutes: filling all of them
--    would rewrite the outbox while the update holds its lock.
--  * send_jobs is vacuumed by churn, not by size, and its finished jobs move to
--    send_jobs_finished, the idempotency keys to send_job_keys (sql/schema.sql says why);
--    refused while a foreign key points at send_jobs.
--  * send_job_events.job_id loses its foreign key (its check cost every finalize a
--    second lock of the job row); sendjobs_purge deletes events itself.
-- The last part repeats the statements of sql/comments_and_privileges.sql, which a
-- fresh 0.2.0 install runs; tests/upgrade checks that both catalogs are equal.
\echo Use "ALTER EXTENSION sendjobs UPDATE TO '0.2.0'" to load this file. \quit

-- First, every C function of the extension moves to the newest release's library, the one
-- this script is installed with (docs/decisions/0001-a-library-per-release.md): the
-- statements below call some of them (the CHECK of send_jobs), and the 0.1.0 library,
-- loaded after the newer one in this backend, would fail to define its settings again.
-- As in sql/sendjobs--0.2.0--0.2.1.sql, which repeats it for databases at 0.2.0.
DO $$
DECLARE
    fn record;
    rebound text;
BEGIN
    FOR fn IN SELECT p.oid, p.probin
                FROM pg_catalog.pg_depend AS d
                JOIN pg_catalog.pg_proc AS p ON p.oid OPERATOR(pg_catalog.=) d.objid
                JOIN pg_catalog.pg_language AS l ON l.oid OPERATOR(pg_catalog.=) p.prolang
               WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
                 AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                 AND d.refobjid OPERATOR(pg_catalog.=) (SELECT e.oid FROM pg_catalog.pg_extension AS e
                                                         WHERE e.extname OPERATOR(pg_catalog.=) 'sendjobs'::pg_catalog.name)
                 AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
                 AND l.lanname OPERATOR(pg_catalog.=) 'c'::pg_catalog.name
                 AND p.probin OPERATOR(pg_catalog.<>) 'sendjobs-@CARGO_VERSION@'::pg_catalog.text
    LOOP
        -- pg_get_functiondef prints the library on a line of its own: AS 'library', symbol.
        rebound := pg_catalog.replace(pg_catalog.pg_get_functiondef(fn.oid),
                                      E'\nAS ' OPERATOR(pg_catalog.||) pg_catalog.quote_literal(fn.probin) OPERATOR(pg_catalog.||) ', ',
                                      E'\nAS ''sendjobs-@CARGO_VERSION@'', ');
        IF pg_catalog.strpos(rebound, E'\nAS ''sendjobs-@CARGO_VERSION@'', ') OPERATOR(pg_catalog.=) 0 THEN
            RAISE EXCEPTION 'sendjobs: cannot rebind function % to its new library', fn.oid::pg_catalog.regprocedure;
        END IF;
        EXECUTE rebound;
    END LOOP;
END $$;

-- Finished jobs will leave send_jobs for send_jobs_finished (below): a foreign key that
-- points at send_jobs would see them deleted (and, with ON DELETE CASCADE or SET NULL,
-- act on it). Refuse the update, before it changes anything, and say what to do.
DO $$
DECLARE
    referencing text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.format('%s (%s)', conrelid::pg_catalog.regclass, conname), ', ')
      INTO referencing
      FROM pg_catalog.pg_constraint
     WHERE contype OPERATOR(pg_catalog.=) 'f'::pg_catalog."char"
       AND confrelid OPERATOR(pg_catalog.=) '@extschema@.send_jobs'::pg_catalog.regclass::pg_catalog.oid
       AND conrelid OPERATOR(pg_catalog.<>) '@extschema@.send_job_events'::pg_catalog.regclass::pg_catalog.oid;  -- ours: dropped below
    IF referencing IS NOT NULL THEN
        RAISE EXCEPTION 'sendjobs 0.2.0 moves finished jobs out of send_jobs, which foreign keys reference: %', referencing
              USING ERRCODE = '55000',
                    HINT = 'Drop those foreign keys (a job''s row moves to send_jobs_finished when it finishes), then update.';
    END IF;
END $$;

ALTER TABLE @extschema@.send_jobs ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE @extschema@.send_job_events ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE @extschema@.send_jobs SET (autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 10000, vacuum_index_cleanup = on);

CREATE FUNCTION @extschema@.sendjobs_grant(
	"role" regrole,
	"access" TEXT
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_grant_wrapper';

CREATE FUNCTION @extschema@.sendjobs_revoke(
	"role" regrole,
	"access" TEXT
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_revoke_wrapper';

-- Lifecycle.
ALTER TABLE @extschema@.send_jobs ADD COLUMN redrive_of bigint;
CREATE UNIQUE INDEX send_jobs_redrive_of_idx
    ON @extschema@.send_jobs (redrive_of) WHERE redrive_of IS NOT NULL;
ALTER TABLE @extschema@.send_job_events DROP CONSTRAINT send_job_events_kind_check;
ALTER TABLE @extschema@.send_job_events ADD CONSTRAINT send_job_events_kind_check
    CHECK (kind IN ('sent', 'failed', 'cancelled'));
ALTER TABLE @extschema@.send_job_events ADD COLUMN queue text;
ALTER TABLE @extschema@.send_job_events DROP CONSTRAINT send_job_events_job_id_fkey;
CREATE INDEX send_job_events_created_at_idx
    ON @extschema@.send_job_events USING brin (created_at) WITH (autosummarize = on);
CREATE INDEX send_job_events_unsent_idx
    ON @extschema@.send_job_events (created_at) WHERE kind <> 'sent';
-- The events of the last minutes get their job's queue, so that sendjobs_stats counts
-- them for it (it counts only events with a queue). Found through the BRIN index just
-- built; the update's lock on the outbox is held while this runs.
UPDATE @extschema@.send_job_events AS event
   SET queue = job.queue
  FROM @extschema@.send_jobs AS job
 WHERE job.id = event.job_id
   AND event.created_at > pg_catalog.now() - interval '10 minutes';
ALTER TABLE @extschema@.sendjobs_transaction_link ADD COLUMN on_redrive text NOT NULL DEFAULT 'pending';
ALTER TABLE @extschema@.sendjobs_transaction_link ALTER COLUMN on_redrive DROP DEFAULT;
CREATE TABLE @extschema@.sendjobs_queues (
    queue  text    PRIMARY KEY,
    notify boolean NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('@extschema@.sendjobs_queues', '');
COMMENT ON TABLE @extschema@.send_job_events IS
    'sendjobs outbox: exactly one row per finished job (sent, failed or cancelled), staged in the transaction that finished it';

-- Finished jobs move to send_jobs_finished (sql/schema.sql says why): the finished
-- rows of 0.1.0 move once, here, under the update's lock (a rewrite of the history: its
-- time grows with it). Idempotency keys move to send_job_keys, unique across both tables.
CREATE TABLE @extschema@.send_jobs_finished (
    CONSTRAINT send_jobs_finished_pkey PRIMARY KEY (id),
    CONSTRAINT send_jobs_finished_check CHECK (status IN ('sent', 'failed', 'cancelled'))
) INHERITS (@extschema@.send_jobs);
-- The move gives each job its id; the default is for a direct insert of history (a
-- migration, a test), from the ids' own sequence.
ALTER TABLE @extschema@.send_jobs_finished
    ALTER COLUMN id SET DEFAULT pg_catalog.nextval('@extschema@.send_jobs_id_seq');
WITH leaving AS (
    DELETE FROM ONLY @extschema@.send_jobs WHERE status IN ('sent', 'failed', 'cancelled')
 RETURNING *
)
INSERT INTO @extschema@.send_jobs_finished SELECT * FROM leaving;
ALTER TABLE ONLY @extschema@.send_jobs ADD CONSTRAINT send_jobs_live_check
    CHECK (status IN ('pending', 'in_flight')) NO INHERIT;
CREATE UNIQUE INDEX send_jobs_finished_redrive_of_idx
    ON @extschema@.send_jobs_finished (redrive_of) WHERE redrive_of IS NOT NULL;
COMMENT ON TABLE @extschema@.send_jobs_finished IS
    'sendjobs: the finished jobs (sent, failed, cancelled), moved here from send_jobs when they finish; read them through send_jobs';
CREATE TABLE @extschema@.send_job_keys (
    idempotency_key text   PRIMARY KEY,
    job_id          bigint NOT NULL
);
INSERT INTO @extschema@.send_job_keys (idempotency_key, job_id)
SELECT idempotency_key, id FROM @extschema@.send_jobs WHERE idempotency_key IS NOT NULL;
DROP INDEX @extschema@.send_jobs_idempotency_key_idx;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.send_jobs_finished', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.send_job_keys', '');


DROP FUNCTION @extschema@.sendjobs_link_transactions(regclass, name, name, text, text);
CREATE FUNCTION @extschema@.sendjobs_link_transactions(
	"tbl" regclass,
	"key_column" name DEFAULT 'id',
	"status_column" name DEFAULT 'status',
	"on_sent" TEXT DEFAULT 'success',
	"on_failed" TEXT DEFAULT 'failed',
	"on_redrive" TEXT DEFAULT 'pending'
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_link_transactions_wrapper';

CREATE FUNCTION @extschema@.sendjobs_cancel(
	"id" bigint
) RETURNS TEXT
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_cancel_wrapper';

CREATE FUNCTION @extschema@.sendjobs_redrive(
	"ids" bigint[]
) RETURNS TABLE (
	"id" bigint,
	"new_id" bigint
)
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_redrive_wrapper';

CREATE FUNCTION @extschema@.sendjobs_purge(
	"older_than" interval,
	"batch" INT DEFAULT 1000
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_purge_wrapper';

CREATE FUNCTION @extschema@.sendjobs_notify(
	"queue" TEXT,
	"enabled" bool
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_notify_wrapper';

CREATE FUNCTION @extschema@.sendjobs_stats() RETURNS TABLE (
	"queue" TEXT,
	"ready" bigint,
	"scheduled" bigint,
	"in_flight" bigint,
	"expired" bigint,
	"at_last_attempt" bigint,
	"oldest_ready_age" interval,
	"sent_5m" bigint,
	"failed_5m" bigint,
	"cancelled_5m" bigint,
	"estimated" bool,
	"dead_tuples" bigint,
	"oldest_xmin_age" interval,
	"oldest_xmin_xids" bigint
)
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_stats_wrapper';

-- Functions: the API.
COMMENT ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer) IS
    'Adds a pending job and returns its id. Arguments: payload (required), queue (default ''default''), run_at (NULL: now), transaction_id (the linked business row), idempotency_key (a repeated key returns the existing job''s id and changes nothing), max_attempts (NULL: sendjobs.default_max_attempts).';
COMMENT ON FUNCTION @extschema@.sendjobs_claim(integer, interval, text) IS
    'Claims up to batch jobs in one statement (FOR UPDATE SKIP LOCKED): pending ones that are due and in_flight ones whose lease expired, oldest next_attempt_at first. Each becomes in_flight with attempts + 1, a lease of now + lease (NULL: sendjobs.default_lease) and claim_generation + 1. Returns the rows as updated; keep id and claim_generation. queue NULL means any queue. An expired job that has used all max_attempts is not claimed: it gives up, failed with its event and its business row stamped, the reason in last_error.';
COMMENT ON FUNCTION @extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz) IS
    'Records the outcome (sent, failed or retry) of the claim (id, generation). Returns applied when that claim is the current one of an in_flight job, else stale and changes nothing. sent/failed are terminal: one send_job_events row and the linked business row stamped, in the caller''s transaction. retry: pending again at retry_at or after a backoff; failed once attempts reach max_attempts.';
COMMENT ON FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz) IS
    'sendjobs_finalize for many claims (ids[i], generations[i]) in one statement, all with one outcome, each fenced on its own. Returns one row per claim in input order: id and applied or stale.';
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
    'Gives a role an access level: producer (enqueue, cancel), worker (claim, heartbeat, finalize, finalize_batch), monitor (sendjobs_stats; read the queue without payloads, and the outbox) or admin (every function, reading every table). No level may write the queue tables: the functions do, as the extension''s owner.';
COMMENT ON FUNCTION @extschema@.sendjobs_cancel(bigint) IS
    'Cancels a job: applied when it was pending or in_flight (now cancelled, terminal, with one cancelled event; its holder''s finalize and heartbeat get stale), stale when it had already finished. The business row is not stamped.';
COMMENT ON FUNCTION @extschema@.sendjobs_redrive(bigint[]) IS
    'Sends failed jobs again: each becomes a new pending job (same queue, payload, transaction_id, max_attempts; redrive_of naming it), the failed job kept as history. The linked business row is set to on_redrive through the guard. A job redriven before returns its first new job. Returns (id, new_id) per job; an unknown (P0002) or not failed (55000) id fails the whole call.';
COMMENT ON FUNCTION @extschema@.sendjobs_purge(interval, integer) IS
    'Deletes up to batch finished jobs (sent, failed, cancelled) whose event is older than older_than, with their events, and returns how many. Skips locked rows: safe from cron while workers run; call until it returns less than batch.';
COMMENT ON FUNCTION @extschema@.sendjobs_notify(text, boolean) IS
    'Turns wake-ups for a queue on or off: while on, a transaction that enqueues into it sends one NOTIFY sendjobs_wakeup, payload the queue name, at commit.';
COMMENT ON FUNCTION @extschema@.sendjobs_stats() IS
    'One row per queue with unfinished jobs or events in the last 5 minutes: ready, scheduled, in_flight, expired (awaiting reclaim), at_last_attempt (in flight on their last attempt), oldest_ready_age, sent/failed/cancelled in the last 5 minutes, estimated (ready, scheduled and the 5-minute counts are exact up to 10,000, estimated from a sample above); and on every row send_jobs'' dead tuples and the oldest transaction holding back vacuum (age, and xmin age in transactions).';
COMMENT ON FUNCTION @extschema@.sendjobs_revoke(regrole, text) IS
    'Takes an access level from a role (the privileges it shares with another level go too: grant that level again).';

-- Functions: internal helpers, not for callers.
COMMENT ON FUNCTION @extschema@.sendjobs_job_state_is_valid(text, integer, integer, bigint, timestamptz, timestamptz, timestamptz) IS
    'Internal: the row rule of send_jobs, called by its CHECK send_jobs_state_check (a lease exactly while in_flight, finished_at exactly when terminal, counters in range). Not part of the API.';
COMMENT ON FUNCTION @extschema@.sendjobs_forget_dropped_link() IS
    'Internal: the event trigger sendjobs_forget_dropped_link, which removes the transaction link when its table is dropped. Not part of the API.';
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
COMMENT ON COLUMN @extschema@.send_jobs.next_attempt_at IS 'When the job is due; also its place in the claim order (an expired lease keeps it).';
COMMENT ON COLUMN @extschema@.send_jobs.claimed_at IS 'When the last claim was made (database clock).';
COMMENT ON COLUMN @extschema@.send_jobs.lease_expires_at IS 'End of the current claim''s lease, exactly while in_flight; after it the job can be claimed again.';
COMMENT ON COLUMN @extschema@.send_jobs.claim_generation IS 'The fencing token: grows by one with every claim; finalize and heartbeat apply only with the current one.';
COMMENT ON COLUMN @extschema@.send_jobs.last_error IS 'The error of the last failed or retry finalize that gave one, or why the job gave up.';
COMMENT ON COLUMN @extschema@.send_jobs.created_at IS 'When the job was enqueued.';
COMMENT ON COLUMN @extschema@.send_jobs.finished_at IS 'When the job became terminal; NULL until then.';
COMMENT ON COLUMN @extschema@.send_jobs.redrive_of IS 'The failed job this one sends again (sendjobs_redrive), or NULL.';
COMMENT ON CONSTRAINT send_jobs_state_check ON @extschema@.send_jobs IS
    'The row rule (sendjobs_job_state_is_valid): known status, a lease and claim time exactly while in_flight, finished_at exactly when terminal, counters in range.';
COMMENT ON INDEX @extschema@.send_jobs_pending_idx IS 'The claim''s pending branch, in claim order (any queue).';
COMMENT ON INDEX @extschema@.send_jobs_pending_queue_idx IS 'The claim''s pending branch for one queue, in claim order.';
COMMENT ON INDEX @extschema@.send_jobs_lease_idx IS 'The claim''s expired-lease branch: exactly the in_flight rows, by lease end.';
COMMENT ON INDEX @extschema@.send_jobs_redrive_of_idx IS 'A failed job is redriven at most once (partial: only redriven jobs have an entry).';
COMMENT ON CONSTRAINT send_jobs_live_check ON @extschema@.send_jobs IS
    'send_jobs itself holds only unfinished jobs (pending, in_flight); a finished job is in send_jobs_finished. Not inherited.';

-- send_jobs_finished: its columns are send_jobs'', and say what they say there.
COMMENT ON CONSTRAINT send_jobs_finished_check ON @extschema@.send_jobs_finished IS
    'Only finished jobs (sent, failed, cancelled).';
COMMENT ON INDEX @extschema@.send_jobs_finished_redrive_of_idx IS 'A failed job is redriven at most once: the redrives that finished (partial).';
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


-- send_job_events
COMMENT ON COLUMN @extschema@.send_job_events.id IS 'The event''s id, in staging order.';
COMMENT ON COLUMN @extschema@.send_job_events.job_id IS 'The finished job; unique (one event per job).';
COMMENT ON COLUMN @extschema@.send_job_events.transaction_id IS 'The job''s transaction_id when it finished.';
COMMENT ON COLUMN @extschema@.send_job_events.kind IS 'sent, failed or cancelled: how the job finished.';
COMMENT ON COLUMN @extschema@.send_job_events.claim_generation IS 'The job''s claim_generation when it finished (for sent and failed: the claim whose finalize applied, or whose lease expired on the last attempt).';
COMMENT ON COLUMN @extschema@.send_job_events.created_at IS 'When the job finished (database clock): its finished_at.';
COMMENT ON COLUMN @extschema@.send_job_events.queue IS 'The job''s queue (NULL for events staged before 0.2.0, but those of the update''s last 10 minutes).';
COMMENT ON INDEX @extschema@.send_job_events_created_at_idx IS 'Events by age (BRIN): what sendjobs_purge deletes.';
COMMENT ON INDEX @extschema@.send_job_events_unsent_idx IS 'Failed and cancelled events by age: their exact 5-minute counts in sendjobs_stats.';

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

-- sendjobs_queues
COMMENT ON TABLE @extschema@.sendjobs_queues IS
    'sendjobs: per-queue settings (written by sendjobs_notify); a queue without a row has the defaults.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.queue IS 'The queue.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.notify IS 'Whether an enqueue into it sends NOTIFY sendjobs_wakeup (once per transaction).';

-- Privileges: EXECUTE is the only thing a caller needs, and PUBLIC has it on nothing.
REVOKE ALL ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer) FROM PUBLIC;
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
REVOKE ALL ON FUNCTION @extschema@.sendjobs_job_state_is_valid(text, integer, integer, bigint, timestamptz, timestamptz, timestamptz) FROM PUBLIC;
