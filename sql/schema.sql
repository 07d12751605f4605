-- Tables and indexes of sendjobs. Loaded first (bootstrap); the functions come from Rust.
-- Every name is schema-qualified with @extschema@ so a caller's search_path cannot redirect us.

CREATE TABLE @extschema@.send_jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue            text        NOT NULL DEFAULT 'default',
    payload          jsonb       NOT NULL,
    transaction_id   text,
    idempotency_key  text,
    status           text        NOT NULL DEFAULT 'pending',
    attempts         int         NOT NULL DEFAULT 0,
    max_attempts     int         NOT NULL DEFAULT 5,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    claimed_at       timestamptz,
    lease_expires_at timestamptz,
    claim_generation bigint      NOT NULL DEFAULT 0,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    redrive_of       bigint,
    -- Jobs that share a key are claimed one at a time, in id order (sendjobs_enqueue's
    -- ordering_key; docs/decisions/0013-flow-control-in-the-claim.md).
    ordering_key     text,
    -- Minutes of head start in the claim order: a job is claimed as if it had been due
    -- this much earlier (sendjobs_enqueue's priority, 0 to 60;
    -- docs/decisions/0013-flow-control-in-the-claim.md, "Priorities").
    priority         smallint    NOT NULL DEFAULT 0
    -- CHECK send_jobs_live_check: sql/job_state.sql, once its function exists.
) WITH (
    fillfactor = 80,
    -- Vacuum by churn, not by size. Every claim leaves a dead entry where the claim order
    -- starts (send_jobs_pending_idx), and every later claim steps over it until a vacuum
    -- removes it; Postgres's defaults, which scale with the table, held such entries for
    -- minutes (decision 0006, "A finished history in `send_jobs` itself, before the split").
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 10000,
    vacuum_index_cleanup = on
);

COMMENT ON TABLE @extschema@.send_jobs IS
    'sendjobs: one row per outbound message; claim with sendjobs_claim, finish with sendjobs_finalize';

-- Claim, pending branch: index order is the claim order, so a batch of N reads about N entries.
-- The claim order is the due time less the head start (priority, in minutes), as a UTC
-- timestamp: every function in it is immutable, as an index needs (timestamptz minus an
-- interval is not: a day's length depends on the time zone). A job without priority is
-- where its due time puts it, as before priorities.
CREATE INDEX send_jobs_pending_idx
    ON @extschema@.send_jobs ((pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority)), id)
    WHERE status = 'pending';
-- The planner reads no statistics of a partial index's expressions: these are the claim
-- order's, so that a claim planned for its values knows how many jobs are due
-- (src/tests/plans.rs; decision 0013, "Notes from the statements"). Postgres records no
-- extension membership for a statistics object: it goes with its table (a dump leaves
-- both to CREATE EXTENSION; DROP EXTENSION drops it with the table).
CREATE STATISTICS @extschema@.send_jobs_claim_order_stats
    ON ((pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority)))
    FROM @extschema@.send_jobs;
-- Claim, pending branch with a queue filter.
CREATE INDEX send_jobs_pending_queue_idx
    ON @extschema@.send_jobs (queue, (pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority)), id)
    WHERE status = 'pending';
-- Claim, pending branch for one queue's jobs without an ordering key: the passes that
-- take those (claim.sql, claim_shares.sql) read no ordered job, so a queue of ordered
-- jobs costs them nothing (decision 0020). Written when a job without a key becomes
-- pending (an enqueue, a retry), not when it is claimed.
CREATE INDEX send_jobs_pending_unkeyed_queue_idx
    ON @extschema@.send_jobs (queue, (pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority)), id)
    WHERE status = 'pending' AND ordering_key IS NULL;
-- Claim, expired-lease branch: in_flight rows are few (workers x batch), found by expiry.
-- The predicate is "has a lease" (the same rows as status = 'in_flight', by the CHECK
-- above), not the status: a finalize or heartbeat, fenced on status = 'in_flight', must
-- probe the primary key, not scan this index, whose size the statistics rarely know.
CREATE INDEX send_jobs_lease_idx
    ON @extschema@.send_jobs (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
-- Ordered keys: the claim skips a job of a key while an older unfinished job of that
-- key exists, or one of the key is in flight; each is one probe of one of these (only
-- jobs with a key have entries in these three, so the others' claims and finalizes never
-- write to them).
CREATE INDEX send_jobs_ordering_key_idx
    ON @extschema@.send_jobs (ordering_key, id) WHERE ordering_key IS NOT NULL;
CREATE INDEX send_jobs_ordering_key_held_idx
    ON @extschema@.send_jobs (ordering_key) WHERE ordering_key IS NOT NULL AND lease_expires_at IS NOT NULL;
-- (The ordered jobs' own claim index comes after send_jobs_finished, with the column it
-- leaves out: waits_for_key, below.)
-- A failed job is redriven at most once (sendjobs_redrive, whose lock on the failed row
-- keeps it so across this table and send_jobs_finished; this index stands behind it for
-- the unfinished redrives). Partial: only redriven jobs have an entry, so the claim and
-- the finalize never write to it.
CREATE UNIQUE INDEX send_jobs_redrive_of_idx
    ON @extschema@.send_jobs (redrive_of) WHERE redrive_of IS NOT NULL;

-- Finished jobs (sent, failed, cancelled) leave send_jobs itself for this child table,
-- in the statement that finishes them: a DELETE from send_jobs and an INSERT here.
-- SELECT ... FROM send_jobs reads both tables, so every reader still sees every job with
-- its status; the statements on live jobs read ONLY send_jobs. Why: a vacuum with index
-- cleanup reads the whole of every index of its table, and send_jobs needs one every few
-- seconds (its claims leave dead entries where the claim order starts, above); with the
-- history in send_jobs, each such vacuum read the history's primary key too (decision
-- 0006).
-- A CHECK on each table keeps each row in its table (a statement that finished a job in
-- place fails) and its columns in agreement with its status: sql/job_state.sql.
CREATE TABLE @extschema@.send_jobs_finished (
    -- The transaction that finished the job: where the row stands in the outbox's
    -- commit order (sendjobs_read_events reads the rows that became visible between two
    -- snapshots, by this column: docs/decisions/0011-one-row-per-finished-job.md).
    event_xid xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id(),
    -- The outcome of the finalize that finished the job ('sent', 'failed', or 'retry' on
    -- its last attempt), NULL when none did (it gave up, or was cancelled): how a
    -- finalize made again after its answer was lost is told from a stale one
    -- (docs/decisions/0012-answers-that-say-what-happened.md). Written by the functions
    -- only, so no CHECK (each CHECK costs every finishing statement its planning).
    outcome text,
    CONSTRAINT send_jobs_finished_pkey PRIMARY KEY (id)
) INHERITS (@extschema@.send_jobs);
-- The move gives each job its id; the default is for a direct insert of history (a
-- migration, a test), from the ids' own sequence.
ALTER TABLE @extschema@.send_jobs_finished
    ALTER COLUMN id SET DEFAULT pg_catalog.nextval('@extschema@.send_jobs_id_seq');
-- sendjobs_redrive looks here for an earlier redrive of a failed job (in send_jobs too).
CREATE UNIQUE INDEX send_jobs_finished_redrive_of_idx
    ON @extschema@.send_jobs_finished (redrive_of) WHERE redrive_of IS NOT NULL;
-- The outbox in its reading order: the events' reader pages through a batch by it, and
-- sendjobs_stats finds the last 5 minutes' events by it. A B-tree: a reader that fell
-- behind must find its place without reading what it already passed, also within one
-- transaction's events (the history an update from 0.2.x gives one xid): hence the id.
CREATE INDEX send_jobs_finished_event_xid_idx
    ON @extschema@.send_jobs_finished (event_xid, id);
-- Purge finds finished jobs by age. BRIN: jobs finish in time order, and a BRIN index
-- costs an insert almost nothing (the range being filled has no summary yet), where a
-- B-tree would add an entry per job. autosummarize: autovacuum summarizes each range as
-- soon as it is full, rather than at the table's next vacuum; until then a range is read
-- by every scan.
CREATE INDEX send_jobs_finished_finished_at_idx
    ON @extschema@.send_jobs_finished USING brin (finished_at) WITH (autosummarize = on);
-- The failed and cancelled jobs by age, for the 5-minute counts of sendjobs_stats: a
-- B-tree holding only them (rare, unless a partner is down), so they are counted exactly
-- among any number of sent ones. A sent job, the common one, writes no entry here.
CREATE INDEX send_jobs_finished_unsent_idx
    ON @extschema@.send_jobs_finished (finished_at) WHERE status <> 'sent';
-- A queue's failed jobs, most recent first: what an operator redrives (the console's
-- queue page). The index above has no queue: with a thousand queues a quiet queue's
-- failures were one in a thousand of its entries. Failed jobs only: a sent or cancelled
-- job writes no entry here (decision 0021).
CREATE INDEX send_jobs_finished_failed_queue_idx
    ON @extschema@.send_jobs_finished (queue, finished_at, id) WHERE status OPERATOR(pg_catalog.=) 'failed';

-- Ordered jobs that wait behind an earlier job of their key: a claim that found such a job
-- not free (an older job of its key unfinished, one of its key in flight, its key
-- stopped) sets this, and the claims of ordered jobs pass over it from then on, until a
-- job of its key finishes or goes back to pending, or its key is let go: each of those
-- clears it on the first waiting job of the key and on the job that stops the key. So a
-- long line under one key is read once, not by every claim
-- (docs/decisions/0020-ordered-jobs-in-turn-a-line-read-once.md). Added after
-- send_jobs_finished, as the update from 0.3.1 adds it: the finished table's columns
-- come in the same order either way. Always false in send_jobs_finished.
ALTER TABLE @extschema@.send_jobs ADD COLUMN waits_for_key boolean NOT NULL DEFAULT false;
-- Ordered jobs that may be free, by queue in claim order: the claims' passes for them
-- (claim_keyed.sql), and the other passes' probe for
-- whether there are any (send_jobs_pending_queue_idx would read a queue's whole backlog
-- for it, as plans made without statistics did: src/tests/plans.rs). Only ordered jobs
-- that do not wait have entries.
CREATE INDEX send_jobs_pending_keyed_queue_idx
    ON @extschema@.send_jobs (queue, (pg_catalog.timezone(interval '0', next_attempt_at) - pg_catalog.make_interval(mins => priority)), id)
    WHERE status = 'pending' AND ordering_key IS NOT NULL AND NOT waits_for_key;
-- The waiting jobs of a key, oldest first: what a finish of one of its jobs clears
-- (key_waits_clear.sql). Only waiting jobs have entries.
CREATE INDEX send_jobs_waits_for_key_idx
    ON @extschema@.send_jobs (ordering_key, id) WHERE waits_for_key;

COMMENT ON TABLE @extschema@.send_jobs_finished IS
    'sendjobs: the finished jobs (sent, failed, cancelled), moved here from send_jobs when they finish; read them through send_jobs';

-- Idempotency keys, unique across send_jobs and send_jobs_finished (a unique index
-- cannot span two tables): sendjobs_enqueue inserts the key here first, with the id its
-- job will have, and creates the job only when the key was new. sendjobs_purge deletes a
-- purged job's key.
CREATE TABLE @extschema@.send_job_keys (
    idempotency_key text   PRIMARY KEY,
    job_id          bigint NOT NULL
);

-- A job's earlier attempts: each claim of it that ended without finishing it, one row —
-- retried by its worker (with the worker's error), or taken by another claim after its
-- lease expired — written by the trigger sendjobs_attempt_ended (below) from the job's
-- row as it was, in the statement that ended the attempt. The attempt that finished the
-- job is the job's own row. The latest 20 claims of a job are kept; sendjobs_purge
-- deletes them with their job. A job sent at its first attempt writes nothing here
-- (docs/decisions/0022-a-jobs-earlier-attempts.md).
CREATE TABLE @extschema@.send_job_attempts (
    job_id           bigint      NOT NULL,
    claim_generation bigint      NOT NULL,
    attempt          integer     NOT NULL,
    claimed_at       timestamptz NOT NULL,
    ended_at         timestamptz NOT NULL,
    ended            text        NOT NULL,
    error            text,
    PRIMARY KEY (job_id, claim_generation)
);

CREATE FUNCTION @extschema@.sendjobs_attempt_ended() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- Its worker's retry (the job back to pending, with the error), else another claim of
    -- the job whose lease expired: the trigger's WHEN lets only those two through.
    INSERT INTO @extschema@.send_job_attempts
           (job_id, claim_generation, attempt, claimed_at, ended_at, ended, error)
    VALUES (OLD.id, OLD.claim_generation, OLD.attempts, OLD.claimed_at,
            CASE WHEN NEW.status = 'pending' THEN clock_timestamp() ELSE OLD.lease_expires_at END,
            CASE WHEN NEW.status = 'pending' THEN 'retry' ELSE 'lease expired' END,
            CASE WHEN NEW.status = 'pending' THEN NEW.last_error END)
    ON CONFLICT DO NOTHING;
    IF OLD.attempts > 20 THEN
        DELETE FROM @extschema@.send_job_attempts AS attempt
         WHERE attempt.job_id = OLD.id AND attempt.attempt <= OLD.attempts - 20;
    END IF;
    RETURN NULL;
END $$;

REVOKE ALL ON FUNCTION @extschema@.sendjobs_attempt_ended() FROM PUBLIC;

-- Only the updates that end an attempt without finishing the job fire it: a claim of a
-- pending job, a heartbeat or a finish (which moves the row: a DELETE) do not.
CREATE TRIGGER sendjobs_attempt_ended
    AFTER UPDATE ON @extschema@.send_jobs
    FOR EACH ROW
    WHEN (OLD.status OPERATOR(pg_catalog.=) 'in_flight'
          AND (NEW.status OPERATOR(pg_catalog.=) 'pending'
               OR NEW.claim_generation OPERATOR(pg_catalog.<>) OLD.claim_generation))
    EXECUTE FUNCTION @extschema@.sendjobs_attempt_ended();

-- The outbox: one event per finished job, which is the finished row itself (one row to
-- write per job, not two: docs/decisions/0011-one-row-per-finished-job.md). Readers that
-- relay events use sendjobs_read_events, in commit order; this view is for looking.
CREATE VIEW @extschema@.send_job_events AS
SELECT job.id AS job_id, job.transaction_id, job.status AS kind, job.claim_generation,
       job.finished_at AS created_at, job.queue, job.event_xid
  FROM @extschema@.send_jobs_finished AS job;

COMMENT ON VIEW @extschema@.send_job_events IS
    'sendjobs outbox: exactly one row per finished job (sent, failed or cancelled), written in the transaction that finished it; relay it with sendjobs_read_events';

-- Releases before 0.3.0 wrote each event as a row of its own, into a table of this name,
-- and their statements still do so when they are planned again after the update to 0.3.0
-- (a finalize, cancel or claim that waited for the update's lock), and delete from it in
-- sendjobs_purge. The finished row is the event now: such writes are ignored, and such a
-- call completes as it would have (tests/upgrade: the worker runs through the update).
CREATE FUNCTION @extschema@.sendjobs_events_are_finished_rows() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN NULL;
END $$;

REVOKE ALL ON FUNCTION @extschema@.sendjobs_events_are_finished_rows() FROM PUBLIC;

CREATE TRIGGER sendjobs_events_are_finished_rows
    INSTEAD OF INSERT OR UPDATE OR DELETE ON @extschema@.send_job_events
    FOR EACH ROW EXECUTE FUNCTION @extschema@.sendjobs_events_are_finished_rows();

-- The outbox's readers (sendjobs_create_consumer): each reads every event once, in
-- commit order, from its own position. A position is two snapshots, no lock and no open
-- transaction: a reader that falls behind holds back neither the queue nor vacuum.
CREATE TABLE @extschema@.sendjobs_consumers (
    consumer   text        PRIMARY KEY,
    -- Every event visible in this snapshot has been read.
    passed     pg_snapshot NOT NULL,
    -- The batch being read, when one is open: the events visible in it and not in
    -- passed, in (event_xid, job id) order, read up to (read_xid, read_id).
    batch      pg_snapshot,
    read_xid   xid8,
    read_id    bigint,
    created_at timestamptz NOT NULL,
    read_at    timestamptz,
    -- The role whose members may read it (sendjobs_read_events also needs the relay
    -- level); NULL: any role with the relay level. An oid, not a dependency: a dropped
    -- role leaves it readable by superusers only.
    reader     oid,
    -- Whether a finish sends the outbox's wake-up at commit for it
    -- (src/machinery/wakeup.rs): only when some consumer asked (a NOTIFY takes a
    -- cluster-wide lock at commit).
    wake       boolean     NOT NULL DEFAULT false,
    CONSTRAINT sendjobs_consumers_read_check
        CHECK ((read_xid IS NULL) = (read_id IS NULL) AND (batch IS NOT NULL OR read_xid IS NULL))
);
-- Not dumped (pg_extension_config_dump): a position is made of this cluster's transaction
-- ids, which mean nothing in the cluster a dump is restored into. pg_upgrade keeps them.

-- The business table that send_jobs.transaction_id points at (at most one row).
CREATE TABLE @extschema@.sendjobs_transaction_link (
    singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    tbl           regclass NOT NULL,
    key_column    name     NOT NULL,
    status_column name     NOT NULL,
    on_sent       text     NOT NULL,
    on_failed     text     NOT NULL,
    on_redrive    text     NOT NULL,
    -- Who linked it: the stamps run as this role (src/verbs/link.rs).
    linked_by     regrole  NOT NULL
);

-- Per-queue settings (sendjobs_notify; the flow control of sendjobs_pause, sendjobs_resume
-- and sendjobs_limit: docs/decisions/0013-flow-control-in-the-claim.md). A queue without
-- a row has every default: no wake-ups, no limit.
CREATE TABLE @extschema@.sendjobs_queues (
    queue         text    PRIMARY KEY,
    notify        boolean NOT NULL DEFAULT false,
    paused        boolean NOT NULL DEFAULT false,
    max_in_flight integer,
    rate          float8,
    burst         integer,
    -- The rate's token bucket: tokens left at tokens_at (the claims' clock), refilled at
    -- rate a second up to burst by the next claim that reads it.
    tokens        float8,
    tokens_at     timestamptz,
    -- Whether a job of an ordering key that fails for good stops the rest of its key
    -- (sendjobs_block_keys; sendjobs_blocked_keys holds the stopped keys).
    block_keys    boolean NOT NULL DEFAULT false,
    -- Every operator qualified and every constant of its column's type: CREATE EXTENSION
    -- resolves a stored expression on the extension's schema, where `rate > 0` (float8
    -- against int4, which pg_catalog has no operator for) bound an operator planted there
    -- (0.3.0; tests/pg_regress/sql/stored_expressions.sql). A rate is one a day to
    -- 1,000,000 a second (src/flow/settings.rs).
    CONSTRAINT sendjobs_queues_limits_check CHECK (
        (max_in_flight IS NULL OR max_in_flight OPERATOR(pg_catalog.>=) 1)
        AND (rate IS NULL) OPERATOR(pg_catalog.=) (burst IS NULL)
        AND (rate IS NULL) OPERATOR(pg_catalog.=) (tokens IS NULL)
        AND (rate IS NULL) OPERATOR(pg_catalog.=) (tokens_at IS NULL)
        AND (rate IS NULL
             OR rate OPERATOR(pg_catalog.>=) (1::float8 OPERATOR(pg_catalog./) 86400::float8)
                AND rate OPERATOR(pg_catalog.<=) 1000000::float8
                AND burst OPERATOR(pg_catalog.>=) 1)
    )
);

-- The ordering keys stopped by a job that failed for good in a queue that blocks its keys
-- (sendjobs_block_keys; docs/decisions/0013-flow-control-in-the-claim.md, "A terminal
-- failure"): no job of the key is claimed but job_id, while job_id is unfinished or
-- failed. A redrive of job_id makes its new job job_id (it goes first); once job_id was
-- sent or cancelled, or sendjobs_unblock_key removed the row, the rest of the key goes.
-- One row a key, written only when a job of a key fails for good: claims of jobs without
-- a key never read it, and those with one probe its primary key.
CREATE TABLE @extschema@.sendjobs_blocked_keys (
    ordering_key text        PRIMARY KEY,
    job_id       bigint      NOT NULL,
    queue        text        NOT NULL,
    blocked_at   timestamptz NOT NULL
);

-- Keep user rows across pg_dump / restore.
SELECT pg_catalog.pg_extension_config_dump('@extschema@.send_jobs', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.sendjobs_transaction_link', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.send_jobs_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.sendjobs_queues', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.send_jobs_finished', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.send_job_keys', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.sendjobs_blocked_keys', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.send_job_attempts', '');

-- A dropped business table takes its link with it: otherwise every terminal finalize of
-- a job with a transaction_id would fail against a table that no longer exists.
-- SECURITY DEFINER (with a pinned search_path): it fires for every role's DROP, and a
-- role without rights on the link table must still be able to drop its own tables.
CREATE FUNCTION @extschema@.sendjobs_forget_dropped_link() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- Also fires while DROP EXTENSION sendjobs removes the link table itself.
    IF pg_catalog.to_regclass('@extschema@.sendjobs_transaction_link') IS NOT NULL THEN
        DELETE FROM @extschema@.sendjobs_transaction_link
         WHERE tbl::oid IN (SELECT objid FROM pg_catalog.pg_event_trigger_dropped_objects()
                             WHERE classid = 'pg_catalog.pg_class'::regclass AND objsubid = 0);
    END IF;
END $$;

REVOKE ALL ON FUNCTION @extschema@.sendjobs_forget_dropped_link() FROM PUBLIC;

CREATE EVENT TRIGGER sendjobs_forget_dropped_link ON sql_drop
    EXECUTE FUNCTION @extschema@.sendjobs_forget_dropped_link();
