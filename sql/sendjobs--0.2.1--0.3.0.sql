-- sendjobs 0.2.1 -> 0.3.0: the outbox, one row per finished job, and its reader
-- (docs/decisions/0011-one-row-per-finished-job.md, docs/operations.md "Upgrading").
--  * A finished job's row in send_jobs_finished is its event: the table send_job_events
--    becomes a view of those rows, with the columns it had but its own id (an event is
--    its job: job_id); every event is kept as the row it already was.
--  * Each finished row records the transaction that finished it (event_xid): the
--    outbox's commit order. The rows finished before this update get this update's own.
--  * Consumers of the outbox (sendjobs_create_consumer, sendjobs_drop_consumer,
--    sendjobs_read_events) and the access level relay; sendjobs_purge keeps what a
--    consumer has not passed.
--  * Answers that say what happened: sendjobs_finalize_batch's new columns, the finished
--    row's outcome (docs/decisions/0012-answers-that-say-what-happened.md).
--  * Flow control per queue: sendjobs_pause, sendjobs_resume, sendjobs_limit,
--    sendjobs_queue_limits, and their settings in sendjobs_queues
--    (docs/decisions/0013-flow-control-in-the-claim.md); ordered keys: a job's
--    ordering_key (sendjobs_enqueue's new argument).
--  * What this release adds to a level goes to the roles that held the whole level of
--    0.2.1, and to no role granted part of one by hand; it refuses, changing nothing,
--    while send_job_events has what its view cannot keep (a trigger, row security, a
--    policy, ...; docs/decisions/0015-what-an-update-carries.md).
-- Locks: send_jobs_finished is rewritten by no statement here, but its new indexes are
-- built under a lock that holds finishes back for as long as the builds take.
\echo Use "ALTER EXTENSION sendjobs UPDATE TO '0.3.0'" to load this file. \quit

-- Every table this update changes, locked first, send_jobs (and with it
-- send_jobs_finished) before the others, in the order a worker's transaction first
-- touches them: the update waits for the transactions that hold them, and the ones that
-- come after wait for the update. Locked one by one as the statements below reach them,
-- a worker holding send_jobs and waiting for sendjobs_queues (its enqueue's wake-up
-- setting), locked by the update, which then waited for send_jobs, made a deadlock that
-- failed the update (the upgrade test, under its load).
LOCK TABLE @extschema@.send_jobs IN ACCESS EXCLUSIVE MODE;
LOCK TABLE @extschema@.send_job_events, @extschema@.sendjobs_queues
    IN ACCESS EXCLUSIVE MODE;

-- send_job_events becomes a view below, and what users put on the table would go with it,
-- silently: a view can hold no trigger, row security, policy, index or publication, and
-- its columns are not the table's (a monitor that a policy kept to its queues would read
-- every queue). So the update refuses, naming each, and changes nothing. SELECT granted
-- on the whole table is carried to the view (docs/decisions/0015-what-an-update-carries.md).
DO $$
DECLARE
    events pg_catalog.oid := '@extschema@.send_job_events'::pg_catalog.regclass::pg_catalog.oid;
    found pg_catalog.text;
BEGIN
    SELECT pg_catalog.string_agg(kept.what, ', ' ORDER BY kept.what) INTO found
      FROM (SELECT pg_catalog.format('trigger %I', t.tgname) AS what
              FROM pg_catalog.pg_trigger AS t
             WHERE t.tgrelid OPERATOR(pg_catalog.=) events AND NOT t.tgisinternal
            UNION ALL
            SELECT 'row-level security'
              FROM pg_catalog.pg_class AS c
             WHERE c.oid OPERATOR(pg_catalog.=) events AND (c.relrowsecurity OR c.relforcerowsecurity)
            UNION ALL
            SELECT pg_catalog.format('policy %I', p.polname)
              FROM pg_catalog.pg_policy AS p
             WHERE p.polrelid OPERATOR(pg_catalog.=) events
            UNION ALL
            SELECT pg_catalog.format('publication %I', pub.pubname)
              FROM pg_catalog.pg_publication_rel AS r
              JOIN pg_catalog.pg_publication AS pub ON pub.oid OPERATOR(pg_catalog.=) r.prpubid
             WHERE r.prrelid OPERATOR(pg_catalog.=) events
            UNION ALL
            SELECT pg_catalog.format('index %I', c.relname)
              FROM pg_catalog.pg_index AS i
              JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid
             WHERE i.indrelid OPERATOR(pg_catalog.=) events
               AND c.relname OPERATOR(pg_catalog.<>) ALL (ARRAY['send_job_events_pkey', 'send_job_events_one_per_job',
                   'send_job_events_created_at_idx', 'send_job_events_unsent_idx']::pg_catalog.name[])
            UNION ALL
            SELECT pg_catalog.format('rule %I', r.rulename)
              FROM pg_catalog.pg_rewrite AS r
             WHERE r.ev_class OPERATOR(pg_catalog.=) events
            UNION ALL
            -- Grants: of a column, and of anything but SELECT on the table.
            SELECT pg_catalog.format('%s (%I) granted to %s', acl.privilege_type, a.attname,
                       CASE WHEN acl.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                            ELSE acl.grantee::pg_catalog.regrole::pg_catalog.text END)
              FROM pg_catalog.pg_attribute AS a, LATERAL pg_catalog.aclexplode(a.attacl) AS acl
             WHERE a.attrelid OPERATOR(pg_catalog.=) events
            UNION ALL
            SELECT pg_catalog.format('%s granted to %s', acl.privilege_type,
                       CASE WHEN acl.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                            ELSE acl.grantee::pg_catalog.regrole::pg_catalog.text END)
              FROM pg_catalog.pg_class AS c, LATERAL pg_catalog.aclexplode(c.relacl) AS acl
             WHERE c.oid OPERATOR(pg_catalog.=) events
               AND acl.grantee OPERATOR(pg_catalog.<>) c.relowner
               AND acl.privilege_type OPERATOR(pg_catalog.<>) 'SELECT'::pg_catalog.text) AS kept;
    IF found IS NOT NULL THEN
        RAISE EXCEPTION 'sendjobs 0.3.0 makes the table send_job_events a view, which cannot keep what was added to it: %', found
              USING ERRCODE = '55000',
                    HINT = 'Nothing was changed. Drop these or revoke them, update again, then make what you need on the view or on send_jobs_finished, whose rows are the events.';
    END IF;
END $$;

-- The row rule becomes one CHECK per table (sendjobs_job_state_is_valid with the table's
-- kind as an eighth argument, src/guards/job_state.rs): the three CHECKs go first, with the
-- function of seven arguments. Made again, once the tables have their new columns,
-- further down.
ALTER TABLE @extschema@.send_jobs DROP CONSTRAINT send_jobs_state_check,
                                  DROP CONSTRAINT send_jobs_live_check;
ALTER TABLE @extschema@.send_jobs_finished DROP CONSTRAINT IF EXISTS send_jobs_state_check,
                                           DROP CONSTRAINT send_jobs_finished_check;
DROP FUNCTION @extschema@.sendjobs_job_state_is_valid(text, integer, integer, bigint, timestamptz, timestamptz, timestamptz);

-- Every C function of the extension, rebound to this release's library: its definition
-- as Postgres prints it (schema-qualified, with its defaults and attributes), with the
-- library's name replaced, run again as CREATE OR REPLACE (the function keeps its oid,
-- its privileges and its comment; triggers and the CHECK that call it follow).
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

-- The new functions, as the install script makes them (pgrx writes it from
-- src/verbs/outbox.rs).
CREATE FUNCTION @extschema@."sendjobs_create_consumer"(
	"consumer" pg_catalog.text,
	"from_start" pg_catalog.bool DEFAULT false,
	"reader" regrole DEFAULT NULL,
	"wake" pg_catalog.bool DEFAULT false
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_create_consumer_wrapper';
CREATE FUNCTION @extschema@."sendjobs_drop_consumer"(
	"consumer" pg_catalog.text
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_drop_consumer_wrapper';
CREATE FUNCTION @extschema@."sendjobs_read_events"(
	"consumer" pg_catalog.text,
	"max" pg_catalog.int4 DEFAULT 1000
) RETURNS TABLE (
	"job_id" pg_catalog.int8,
	"transaction_id" pg_catalog.text,
	"kind" pg_catalog.text,
	"claim_generation" pg_catalog.int8,
	"created_at" pg_catalog.timestamptz,
	"queue" pg_catalog.text
)
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_read_events_wrapper';
REVOKE ALL ON FUNCTION @extschema@.sendjobs_create_consumer(text, boolean, regrole, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_drop_consumer(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_read_events(text, integer) FROM PUBLIC;

-- Flow control: the settings of each queue (a queue keeps its wake-up setting), and the
-- functions that set and show them (granted with the outbox's, below, to the roles that
-- held a whole level).
ALTER TABLE @extschema@.sendjobs_queues
    ALTER COLUMN notify SET DEFAULT false,
    ADD COLUMN paused        boolean NOT NULL DEFAULT false,
    ADD COLUMN max_in_flight integer,
    ADD COLUMN rate          float8,
    ADD COLUMN burst         integer,
    ADD COLUMN tokens        float8,
    ADD COLUMN tokens_at     timestamptz,
    ADD COLUMN block_keys    boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT sendjobs_queues_limits_check CHECK (
        (max_in_flight IS NULL OR max_in_flight OPERATOR(pg_catalog.>=) 1)
        AND (rate IS NULL) OPERATOR(pg_catalog.=) (burst IS NULL)
        AND (rate IS NULL) OPERATOR(pg_catalog.=) (tokens IS NULL)
        AND (rate IS NULL) OPERATOR(pg_catalog.=) (tokens_at IS NULL)
        AND (rate IS NULL OR rate OPERATOR(pg_catalog.>) 0::pg_catalog.float8
             AND rate OPERATOR(pg_catalog.<=) 1000000::pg_catalog.float8
             AND burst OPERATOR(pg_catalog.>=) 1)
    );
CREATE FUNCTION @extschema@."sendjobs_pause"(
	"queue" TEXT
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_pause_wrapper';
CREATE FUNCTION @extschema@."sendjobs_resume"(
	"queue" TEXT
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_resume_wrapper';
CREATE FUNCTION @extschema@."sendjobs_limit"(
	"queue" TEXT,
	"max_in_flight" INT DEFAULT NULL,
	"rate" double precision DEFAULT NULL,
	"burst" INT DEFAULT NULL
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_limit_wrapper';
CREATE FUNCTION @extschema@."sendjobs_queue_limits"(
	"queue" TEXT DEFAULT NULL
) RETURNS TABLE (
	"queue" TEXT,
	"paused" bool,
	"max_in_flight" INT,
	"in_flight" bigint,
	"rate" double precision,
	"burst" INT,
	"tokens" double precision,
	"limited" TEXT,
	"retry_after" interval
)
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_queue_limits_wrapper';
REVOKE ALL ON FUNCTION @extschema@.sendjobs_pause(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_resume(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_limit(text, integer, double precision, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_queue_limits(text) FROM PUBLIC;
-- A key stopped by a failure, in a queue that blocks its keys (sql/schema.sql).
CREATE TABLE @extschema@.sendjobs_blocked_keys (
    ordering_key text        PRIMARY KEY,
    job_id       bigint      NOT NULL,
    queue        text        NOT NULL,
    blocked_at   timestamptz NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('@extschema@.sendjobs_blocked_keys', '');
CREATE FUNCTION @extschema@."sendjobs_block_keys"(
	"queue" TEXT,
	"block" bool
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_block_keys_wrapper';
CREATE FUNCTION @extschema@."sendjobs_unblock_key"(
	"ordering_key" TEXT
) RETURNS bool
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_unblock_key_wrapper';
REVOKE ALL ON FUNCTION @extschema@.sendjobs_block_keys(text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_unblock_key(text) FROM PUBLIC;

-- Two functions answer with more columns: sendjobs_finalize_batch (what the job became,
-- its attempts, whether the call was a repeat: decision 0012) and sendjobs_stats (each
-- queue's flow control: decision 0013). A new result type, so each is made again, and
-- the roles that could call it (worker and admin; monitor and admin) may call the new
-- one. A caller that names the columns it reads is unaffected; a statement that prepared
-- SELECT * before the update fails once re-planned with the new columns (0A000).
DO $$
DECLARE
    batch_callers pg_catalog.regrole[];
    stats_callers pg_catalog.regrole[];
    caller pg_catalog.regrole;
BEGIN
    -- The roles granted EXECUTE directly (as sendjobs_grant does), not their members.
    SELECT pg_catalog.array_agg(DISTINCT acl.grantee::pg_catalog.regrole)
             FILTER (WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)'::pg_catalog.regprocedure::pg_catalog.oid),
           pg_catalog.array_agg(DISTINCT acl.grantee::pg_catalog.regrole)
             FILTER (WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.sendjobs_stats()'::pg_catalog.regprocedure::pg_catalog.oid)
      INTO batch_callers, stats_callers
      FROM pg_catalog.pg_proc AS p,
           LATERAL pg_catalog.aclexplode(p.proacl) AS acl
     WHERE p.oid OPERATOR(pg_catalog.=) ANY (ARRAY[
               '@extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)'::pg_catalog.regprocedure,
               '@extschema@.sendjobs_stats()'::pg_catalog.regprocedure]::pg_catalog.oid[])
       AND acl.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'::pg_catalog.text
       AND acl.grantee OPERATOR(pg_catalog.<>) p.proowner
       AND acl.grantee OPERATOR(pg_catalog.<>) 0::pg_catalog.oid;
    DROP FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz);
    DROP FUNCTION @extschema@.sendjobs_stats();
    CREATE FUNCTION @extschema@."sendjobs_finalize_batch"(
        "ids" bigint[],
        "generations" bigint[],
        "outcome" TEXT,
        "error" TEXT DEFAULT NULL,
        "retry_at" timestamp with time zone DEFAULT NULL
    ) RETURNS TABLE (
        "id" bigint,
        "result" TEXT,
        "status" TEXT,
        "attempts" INT,
        "repeated" bool
    )
    VOLATILE PARALLEL UNSAFE
    LANGUAGE c
    AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_finalize_batch_wrapper';
    CREATE FUNCTION @extschema@."sendjobs_stats"() RETURNS TABLE (
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
        "oldest_xmin_xids" bigint,
        "paused" bool,
        "max_in_flight" INT,
        "rate" double precision,
        "tokens" double precision
    )
    STRICT VOLATILE PARALLEL UNSAFE
    LANGUAGE c
    AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_stats_wrapper';
    REVOKE ALL ON FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz) FROM PUBLIC;
    REVOKE ALL ON FUNCTION @extschema@.sendjobs_stats() FROM PUBLIC;
    FOREACH caller IN ARRAY coalesce(batch_callers, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz) TO %s',
                                  caller);
    END LOOP;
    FOREACH caller IN ARRAY coalesce(stats_callers, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.sendjobs_stats() TO %s', caller);
    END LOOP;
END $$;

-- Ordered keys. The column is added to send_jobs, and so to send_jobs_finished, before
-- the finished rows get columns of their own (event_xid, outcome): the finished table's
-- columns then come in the order a fresh install has. No row is rewritten (a NULL
-- column); the indexes are on send_jobs alone, and only jobs with a key have entries.
ALTER TABLE @extschema@.send_jobs ADD COLUMN ordering_key text;
-- Priorities, the same way: a column with a constant default (no row is rewritten), and
-- the claim's pending indexes made again in the claim order it now has (the due time
-- less the head start: sql/schema.sql). Their builds read send_jobs' pending jobs once
-- each, under the update's lock.
ALTER TABLE @extschema@.send_jobs ADD COLUMN priority smallint NOT NULL DEFAULT 0;
DROP INDEX @extschema@.send_jobs_pending_idx;
DROP INDEX @extschema@.send_jobs_pending_queue_idx;
CREATE INDEX send_jobs_pending_idx
    ON @extschema@.send_jobs ((pg_catalog.timezone(interval '0', next_attempt_at) OPERATOR(pg_catalog.-) pg_catalog.make_interval(mins => priority)), id)
    WHERE status OPERATOR(pg_catalog.=) 'pending';
CREATE INDEX send_jobs_pending_queue_idx
    ON @extschema@.send_jobs (queue, (pg_catalog.timezone(interval '0', next_attempt_at) OPERATOR(pg_catalog.-) pg_catalog.make_interval(mins => priority)), id)
    WHERE status OPERATOR(pg_catalog.=) 'pending';
CREATE STATISTICS @extschema@.send_jobs_claim_order_stats
    ON ((pg_catalog.timezone(interval '0', next_attempt_at) OPERATOR(pg_catalog.-) pg_catalog.make_interval(mins => priority)))
    FROM @extschema@.send_jobs;
CREATE INDEX send_jobs_ordering_key_idx
    ON @extschema@.send_jobs (ordering_key, id) WHERE ordering_key IS NOT NULL;
CREATE INDEX send_jobs_ordering_key_held_idx
    ON @extschema@.send_jobs (ordering_key) WHERE ordering_key IS NOT NULL AND lease_expires_at IS NOT NULL;
CREATE INDEX send_jobs_pending_keyed_idx
    ON @extschema@.send_jobs ((pg_catalog.timezone(interval '0', next_attempt_at) OPERATOR(pg_catalog.-) pg_catalog.make_interval(mins => priority)), id)
    WHERE status OPERATOR(pg_catalog.=) 'pending' AND ordering_key IS NOT NULL;
-- sendjobs_enqueue takes the key and the priority as a seventh and an eighth argument (a
-- call with six finds the new function, the key NULL, the priority 0): made again, the
-- roles that could call it (producer, admin, or granted it by hand) may call the new one.
DO $$
DECLARE
    producers pg_catalog.regrole[];
    role pg_catalog.regrole;
BEGIN
    SELECT pg_catalog.array_agg(DISTINCT acl.grantee::pg_catalog.regrole) INTO producers
      FROM pg_catalog.pg_proc AS p,
           LATERAL pg_catalog.aclexplode(p.proacl) AS acl
     WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer)'::pg_catalog.regprocedure::pg_catalog.oid
       AND acl.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'::pg_catalog.text
       AND acl.grantee OPERATOR(pg_catalog.<>) p.proowner
       AND acl.grantee OPERATOR(pg_catalog.<>) 0::pg_catalog.oid;
    DROP FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer);
    CREATE FUNCTION @extschema@."sendjobs_enqueue"(
        "payload" jsonb,
        "queue" TEXT DEFAULT 'default',
        "run_at" timestamp with time zone DEFAULT NULL,
        "transaction_id" TEXT DEFAULT NULL,
        "idempotency_key" TEXT DEFAULT NULL,
        "max_attempts" INT DEFAULT NULL,
        "ordering_key" TEXT DEFAULT NULL,
        "priority" INT DEFAULT 0
    ) RETURNS bigint
    VOLATILE PARALLEL UNSAFE
    LANGUAGE c
    AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_enqueue_wrapper';
    REVOKE ALL ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer, text, integer) FROM PUBLIC;
    FOREACH role IN ARRAY coalesce(producers, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer, text, integer) TO %s',
                                  role);
    END LOOP;
END $$;

DO $$
BEGIN
    EXECUTE pg_catalog.format(
        'ALTER TABLE @extschema@.send_jobs_finished ADD COLUMN event_xid pg_catalog.xid8 NOT NULL DEFAULT %L::pg_catalog.xid8',
        pg_catalog.pg_current_xact_id());
END $$;
ALTER TABLE @extschema@.send_jobs_finished
    ALTER COLUMN event_xid SET DEFAULT pg_catalog.pg_current_xact_id();
-- How each job finished from now on (NULL for the rows finished before: a finalize made
-- again for one of those is told as a repeat only when it was sent; decision 0012).
ALTER TABLE @extschema@.send_jobs_finished ADD COLUMN outcome text;
CREATE INDEX send_jobs_finished_event_xid_idx
    ON @extschema@.send_jobs_finished (event_xid, id);
CREATE INDEX send_jobs_finished_finished_at_idx
    ON @extschema@.send_jobs_finished USING brin (finished_at) WITH (autosummarize = on);
CREATE INDEX send_jobs_finished_unsent_idx
    ON @extschema@.send_jobs_finished (finished_at) WHERE status OPERATOR(pg_catalog.<>) 'sent';

-- Every event is its job's finished row already (one event per finished job, of the
-- job's kind, generation, transaction and time): the table of copies goes, a view of the
-- finished rows takes its name. Its SELECTs go to the view as they were (nothing else on
-- the table is left: the block after the locks refused the rest).
--
-- And what this release adds to a level goes to the roles that held that whole level of
-- 0.2.1: each of its privileges granted to the role itself, as sendjobs_grant grants them
-- (0.2.1's sql/statements/access_level.sql, below; sendjobs_enqueue, sendjobs_stats and
-- sendjobs_finalize_batch were made again above with their grants). A role granted part
-- of a level by hand keeps what it had and gets nothing new (docs/operations.md, "What an
-- update changes in rights"). The relay level is new: no role held it.
DO $$
DECLARE
    readers pg_catalog.text[];
    workers pg_catalog.regrole[];
    monitors pg_catalog.regrole[];
    admins pg_catalog.regrole[];
    reader pg_catalog.text;
    role pg_catalog.regrole;
BEGIN
    -- The roles granted SELECT on the table (PUBLIC too), each with its grant option.
    SELECT pg_catalog.array_agg(DISTINCT pg_catalog.concat(
               CASE WHEN acl.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                    ELSE acl.grantee::pg_catalog.regrole::pg_catalog.text END,
               CASE WHEN acl.is_grantable THEN ' WITH GRANT OPTION' END))
      INTO readers
      FROM pg_catalog.pg_class AS c,
           LATERAL pg_catalog.aclexplode(c.relacl) AS acl
     WHERE c.oid OPERATOR(pg_catalog.=) '@extschema@.send_job_events'::pg_catalog.regclass::pg_catalog.oid
       AND acl.privilege_type OPERATOR(pg_catalog.=) 'SELECT'::pg_catalog.text
       AND acl.grantee OPERATOR(pg_catalog.<>) c.relowner;

    -- The levels of 0.2.1 (f: EXECUTE on a function, t: SELECT on a table, c: SELECT on
    -- a column of send_jobs), and each one's holders.
    WITH level (name, kind, object, col) AS (VALUES
        ('worker',  'f', '@extschema@.sendjobs_claim(integer, interval, text)', ''),
        ('worker',  'f', '@extschema@.sendjobs_heartbeat(bigint, bigint, interval)', ''),
        ('worker',  'f', '@extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz)', ''),
        ('worker',  'f', '@extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)', ''),
        ('monitor', 'f', '@extschema@.sendjobs_stats()', ''),
        ('monitor', 't', '@extschema@.send_job_events', ''),
        ('monitor', 't', '@extschema@.sendjobs_queues', ''),
        ('monitor', 'c', '@extschema@.send_jobs', 'id'),
        ('monitor', 'c', '@extschema@.send_jobs', 'queue'),
        ('monitor', 'c', '@extschema@.send_jobs', 'transaction_id'),
        ('monitor', 'c', '@extschema@.send_jobs', 'idempotency_key'),
        ('monitor', 'c', '@extschema@.send_jobs', 'status'),
        ('monitor', 'c', '@extschema@.send_jobs', 'attempts'),
        ('monitor', 'c', '@extschema@.send_jobs', 'max_attempts'),
        ('monitor', 'c', '@extschema@.send_jobs', 'next_attempt_at'),
        ('monitor', 'c', '@extschema@.send_jobs', 'claimed_at'),
        ('monitor', 'c', '@extschema@.send_jobs', 'lease_expires_at'),
        ('monitor', 'c', '@extschema@.send_jobs', 'claim_generation'),
        ('monitor', 'c', '@extschema@.send_jobs', 'last_error'),
        ('monitor', 'c', '@extschema@.send_jobs', 'created_at'),
        ('monitor', 'c', '@extschema@.send_jobs', 'finished_at'),
        ('monitor', 'c', '@extschema@.send_jobs', 'redrive_of'),
        ('admin',   'f', '@extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer, text, integer)', ''),
        ('admin',   'f', '@extschema@.sendjobs_claim(integer, interval, text)', ''),
        ('admin',   'f', '@extschema@.sendjobs_heartbeat(bigint, bigint, interval)', ''),
        ('admin',   'f', '@extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz)', ''),
        ('admin',   'f', '@extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)', ''),
        ('admin',   'f', '@extschema@.sendjobs_guard_terminal(regclass, name, text[], text[])', ''),
        ('admin',   'f', '@extschema@.sendjobs_guard_terminal_trigger()', ''),
        ('admin',   'f', '@extschema@.sendjobs_link_transactions(regclass, name, name, text, text, text)', ''),
        ('admin',   'f', '@extschema@.sendjobs_unlink_transactions()', ''),
        ('admin',   'f', '@extschema@.sendjobs_grant(regrole, text)', ''),
        ('admin',   'f', '@extschema@.sendjobs_revoke(regrole, text)', ''),
        ('admin',   'f', '@extschema@.sendjobs_cancel(bigint)', ''),
        ('admin',   'f', '@extschema@.sendjobs_redrive(bigint[])', ''),
        ('admin',   'f', '@extschema@.sendjobs_purge(interval, integer)', ''),
        ('admin',   'f', '@extschema@.sendjobs_notify(text, boolean)', ''),
        ('admin',   'f', '@extschema@.sendjobs_stats()', ''),
        ('admin',   't', '@extschema@.send_jobs', ''),
        ('admin',   't', '@extschema@.send_job_events', ''),
        ('admin',   't', '@extschema@.sendjobs_transaction_link', ''),
        ('admin',   't', '@extschema@.sendjobs_queues', ''),
        ('admin',   't', '@extschema@.send_jobs_finished', ''),
        ('admin',   't', '@extschema@.send_job_keys', '')
    ),
    wanted AS (
        SELECT level.name, level.kind, level.col,
               CASE WHEN level.kind OPERATOR(pg_catalog.=) 'f'
                    THEN level.object::pg_catalog.regprocedure::pg_catalog.oid
                    ELSE level.object::pg_catalog.regclass::pg_catalog.oid END AS object
          FROM level
    ),
    -- Every privilege granted on those objects, but their owner's own.
    granted AS (
        SELECT 'f'::pg_catalog.text AS kind, p.oid AS object, ''::pg_catalog.name AS col, acl.grantee, acl.privilege_type
          FROM pg_catalog.pg_proc AS p, LATERAL pg_catalog.aclexplode(p.proacl) AS acl
         WHERE acl.grantee OPERATOR(pg_catalog.<>) p.proowner
        UNION ALL
        SELECT 't', c.oid, '', acl.grantee, acl.privilege_type
          FROM pg_catalog.pg_class AS c, LATERAL pg_catalog.aclexplode(c.relacl) AS acl
         WHERE acl.grantee OPERATOR(pg_catalog.<>) c.relowner
        UNION ALL
        SELECT 'c', a.attrelid, a.attname, acl.grantee, acl.privilege_type
          FROM pg_catalog.pg_attribute AS a, LATERAL pg_catalog.aclexplode(a.attacl) AS acl
    ),
    holder AS (
        SELECT levels.name, r.oid::pg_catalog.regrole AS role
          FROM (SELECT DISTINCT wanted.name FROM wanted) AS levels, pg_catalog.pg_roles AS r
         WHERE NOT EXISTS (
               SELECT FROM wanted
                WHERE wanted.name OPERATOR(pg_catalog.=) levels.name
                  AND NOT EXISTS (
                      SELECT FROM granted
                       WHERE granted.grantee OPERATOR(pg_catalog.=) r.oid
                         AND granted.kind OPERATOR(pg_catalog.=) wanted.kind
                         AND granted.object OPERATOR(pg_catalog.=) wanted.object
                         AND granted.col OPERATOR(pg_catalog.=) wanted.col
                         AND granted.privilege_type OPERATOR(pg_catalog.=)
                             CASE WHEN wanted.kind OPERATOR(pg_catalog.=) 'f' THEN 'EXECUTE' ELSE 'SELECT' END))
    )
    SELECT pg_catalog.array_agg(holder.role) FILTER (WHERE holder.name OPERATOR(pg_catalog.=) 'worker'),
           pg_catalog.array_agg(holder.role) FILTER (WHERE holder.name OPERATOR(pg_catalog.=) 'monitor'),
           pg_catalog.array_agg(holder.role) FILTER (WHERE holder.name OPERATOR(pg_catalog.=) 'admin')
      INTO workers, monitors, admins
      FROM holder;

    -- Out of the extension first, which takes it and its ids' sequence out of the
    -- extension's dumped configuration too (a DROP alone would leave their oids there).
    ALTER EXTENSION sendjobs DROP SEQUENCE @extschema@.send_job_events_id_seq;
    ALTER EXTENSION sendjobs DROP TABLE @extschema@.send_job_events;
    DROP TABLE @extschema@.send_job_events;
    CREATE VIEW @extschema@.send_job_events AS
    SELECT job.id AS job_id, job.transaction_id, job.status AS kind, job.claim_generation,
           job.finished_at AS created_at, job.queue, job.event_xid
      FROM @extschema@.send_jobs_finished AS job;

    -- Its body as the install script writes it (the upgrade test compares the two).
    CREATE FUNCTION @extschema@.sendjobs_events_are_finished_rows() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $body$
BEGIN
    RETURN NULL;
END $body$;
    REVOKE ALL ON FUNCTION @extschema@.sendjobs_events_are_finished_rows() FROM PUBLIC;
    CREATE TRIGGER sendjobs_events_are_finished_rows
        INSTEAD OF INSERT OR UPDATE OR DELETE ON @extschema@.send_job_events
        FOR EACH ROW EXECUTE FUNCTION @extschema@.sendjobs_events_are_finished_rows();

    CREATE TABLE @extschema@.sendjobs_consumers (
        consumer   text        PRIMARY KEY,
        passed     pg_catalog.pg_snapshot NOT NULL,
        batch      pg_catalog.pg_snapshot,
        read_xid   pg_catalog.xid8,
        read_id    bigint,
        created_at timestamptz NOT NULL,
        read_at    timestamptz,
        reader     oid,
        wake       boolean     NOT NULL DEFAULT false,
        CONSTRAINT sendjobs_consumers_read_check
            CHECK ((read_xid IS NULL) OPERATOR(pg_catalog.=) (read_id IS NULL)
                   AND (batch IS NOT NULL OR read_xid IS NULL))
    );

    FOREACH reader IN ARRAY coalesce(readers, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT SELECT ON TABLE @extschema@.send_job_events TO %s', reader);
    END LOOP;
    -- What this release adds to each level (sql/statements/access_level.sql).
    FOREACH role IN ARRAY coalesce(workers OPERATOR(pg_catalog.||) monitors OPERATOR(pg_catalog.||) admins, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.sendjobs_queue_limits(text) TO %s', role);
    END LOOP;
    FOREACH role IN ARRAY coalesce(monitors, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT SELECT (ordering_key, priority) ON TABLE @extschema@.send_jobs TO %s', role);
    END LOOP;
    FOREACH role IN ARRAY coalesce(monitors OPERATOR(pg_catalog.||) admins, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT SELECT ON TABLE @extschema@.sendjobs_consumers, @extschema@.sendjobs_blocked_keys TO %s', role);
    END LOOP;
    FOREACH role IN ARRAY coalesce(admins, '{}') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.sendjobs_pause(text), @extschema@.sendjobs_resume(text), @extschema@.sendjobs_limit(text, integer, double precision, integer), @extschema@.sendjobs_block_keys(text, boolean), @extschema@.sendjobs_unblock_key(text), @extschema@.sendjobs_create_consumer(text, boolean, regrole, boolean), @extschema@.sendjobs_drop_consumer(text), @extschema@.sendjobs_read_events(text, integer) TO %s',
                                  role);
    END LOOP;
END $$;

-- The comments of what is new or changed (as sql/comments_and_privileges.sql and
-- sql/schema.sql give them to a fresh install; the upgrade test compares the two).
COMMENT ON FUNCTION @extschema@.sendjobs_events_are_finished_rows() IS
    'Internal: the trigger of the view send_job_events, which ignores writes to it (what releases before 0.3.0 ran: the finished row is the event). Not part of the API.';
COMMENT ON TRIGGER sendjobs_events_are_finished_rows ON @extschema@.send_job_events IS
    'sendjobs: writes to the view of the events are ignored (a finished job''s row is its event).';
COMMENT ON VIEW @extschema@.send_job_events IS
    'sendjobs outbox: exactly one row per finished job (sent, failed or cancelled), written in the transaction that finished it; relay it with sendjobs_read_events';
COMMENT ON FUNCTION @extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz) IS
    'Records the outcome (sent, failed or retry) of the claim (id, generation). Returns applied when that claim is the current one of an in_flight job, or when this claim was already finalized with this outcome (a repeat, say after a lost answer: nothing changes again); else stale and changes nothing. sent/failed are terminal: the job moves to send_jobs_finished, where its row is its event (send_job_events), and the linked business row is stamped, in the caller''s transaction. retry: pending again at retry_at or after a backoff; failed once attempts reach max_attempts.';
COMMENT ON FUNCTION @extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz) IS
    'sendjobs_finalize for many claims (ids[i], generations[i]) in one statement, all with one outcome, each fenced on its own. Returns one row per claim in input order: id, applied or stale, the job''s status and attempts after the call (sent, failed, or pending: retried), and repeated (the claim had already been finalized so; nothing changed).';
-- The row rule, one CHECK per table: each validates the table's rows once (a read of
-- send_jobs and of its history, under the update's lock).
CREATE FUNCTION @extschema@."sendjobs_job_state_is_valid"(
	"status" TEXT,
	"attempts" INT,
	"max_attempts" INT,
	"claim_generation" bigint,
	"claimed_at" timestamp with time zone,
	"lease_expires_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"live" bool
) RETURNS bool
IMMUTABLE PARALLEL SAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'job_state_is_valid_wrapper';
REVOKE ALL ON FUNCTION @extschema@.sendjobs_job_state_is_valid(text, integer, integer, bigint, timestamptz, timestamptz, timestamptz, boolean) FROM PUBLIC;
ALTER TABLE ONLY @extschema@.send_jobs ADD CONSTRAINT send_jobs_live_check
    CHECK (@extschema@.sendjobs_job_state_is_valid(status, attempts, max_attempts,
               claim_generation, claimed_at, lease_expires_at, finished_at, true)) NO INHERIT;
ALTER TABLE @extschema@.send_jobs_finished ADD CONSTRAINT send_jobs_finished_check
    CHECK (status OPERATOR(pg_catalog.=) ANY (ARRAY['sent', 'failed', 'cancelled'])
           AND @extschema@.sendjobs_job_state_is_valid(status, attempts, max_attempts,
               claim_generation, claimed_at, lease_expires_at, finished_at, false));
COMMENT ON FUNCTION @extschema@.sendjobs_job_state_is_valid(text, integer, integer, bigint, timestamptz, timestamptz, timestamptz, boolean) IS
    'Internal: the row rule of send_jobs (live) and send_jobs_finished (not live), called by their CHECKs send_jobs_live_check and send_jobs_finished_check (a status of the row''s table, a lease exactly while in_flight, finished_at exactly when terminal, counters in range). Not part of the API.';
COMMENT ON CONSTRAINT send_jobs_live_check ON @extschema@.send_jobs IS
    'The row rule (sendjobs_job_state_is_valid): send_jobs itself holds only unfinished jobs (pending, in_flight; a finished job is in send_jobs_finished), a lease and claim time exactly while in_flight, never finished_at, counters in range. Not inherited.';
COMMENT ON CONSTRAINT send_jobs_finished_check ON @extschema@.send_jobs_finished IS
    'The row rule (sendjobs_job_state_is_valid): only finished jobs (sent, failed, cancelled), with finished_at and no lease, counters in range.';
COMMENT ON FUNCTION @extschema@.sendjobs_pause(text) IS
    'Pauses a queue: from the commit on, no claim hands out its jobs (jobs in flight finish as usual). sendjobs_resume ends it.';
COMMENT ON FUNCTION @extschema@.sendjobs_resume(text) IS
    'Resumes a paused queue, and wakes its workers at the commit (NOTIFY sendjobs_wakeup, payload the queue name).';
COMMENT ON FUNCTION @extschema@.sendjobs_limit(text, integer, double precision, integer) IS
    'Sets a queue''s limits, replacing its earlier ones, enforced by every claim: at most max_in_flight of its jobs under an unexpired lease at once; at most rate claims a second with bursts of burst (a token bucket on the database clock; burst defaults to one second''s worth). NULL: no such limit; sendjobs_limit(queue) lifts both. A claim beyond them gets fewer rows, not an error.';
COMMENT ON FUNCTION @extschema@.sendjobs_queue_limits(text) IS
    'The flow control of a queue (NULL: of every queue that has some): paused, max_in_flight and in_flight, rate, burst and tokens, and whether a claim would be limited now (limited: paused, max_in_flight or rate; NULL when not) and when that may lift by itself (retry_after). A worker whose claim came back short asks it to tell limited from empty.';
COMMENT ON TABLE @extschema@.sendjobs_queues IS
    'sendjobs: per-queue settings (written by sendjobs_notify, sendjobs_pause, sendjobs_resume, sendjobs_limit and sendjobs_block_keys); a queue without a row has the defaults: no wake-ups, no limit, keys that go on past a failure.';
COMMENT ON FUNCTION @extschema@.sendjobs_block_keys(text, boolean) IS
    'Sets whether a job of the queue with an ordering key that fails for good (a failed finalize, a retry on its last attempt, a lease expired on its last attempt) stops the rest of its key: from the commit, no job of the key is claimed but the failed job''s redrive, which goes first, until that redrive was sent or cancelled, or sendjobs_unblock_key. Off by default: the next job of the key goes.';
COMMENT ON FUNCTION @extschema@.sendjobs_unblock_key(text) IS
    'Lets an ordering key stopped by a failed job (sendjobs_block_keys) go on: its next job is claimed as if the failure had not blocked. Returns whether the key was stopped.';

-- sendjobs_blocked_keys
COMMENT ON TABLE @extschema@.sendjobs_blocked_keys IS
    'sendjobs: the ordering keys stopped by a job that failed for good in a queue that blocks its keys (sendjobs_block_keys); no job of the key is claimed but job_id while job_id is unfinished or failed. sendjobs_unblock_key removes a row; sendjobs_purge the rows whose job no longer stops its key.';
COMMENT ON COLUMN @extschema@.sendjobs_blocked_keys.ordering_key IS 'The ordering key stopped.';
COMMENT ON COLUMN @extschema@.sendjobs_blocked_keys.job_id IS 'The job that stops it and alone may be claimed: the failed job, then its redrive (sendjobs_redrive hands it over).';
COMMENT ON COLUMN @extschema@.sendjobs_blocked_keys.queue IS 'The queue of the job that failed.';
COMMENT ON COLUMN @extschema@.sendjobs_blocked_keys.blocked_at IS 'When the key was stopped (the failure''s clock).';
COMMENT ON COLUMN @extschema@.sendjobs_queues.block_keys IS 'Whether a job with an ordering key that fails for good stops the rest of its key (sendjobs_block_keys).';
COMMENT ON COLUMN @extschema@.sendjobs_queues.paused IS 'Whether claims hand out none of its jobs (sendjobs_pause, sendjobs_resume).';
COMMENT ON COLUMN @extschema@.sendjobs_queues.max_in_flight IS 'The most of its jobs under an unexpired lease at once (sendjobs_limit), or NULL.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.rate IS 'The most claims of its jobs a second, on average (sendjobs_limit), or NULL.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.burst IS 'The most claims at once the rate allows after a quiet time: the token bucket''s size.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.tokens IS 'The token bucket: the claims left at tokens_at (refilled at rate a second up to burst).';
COMMENT ON COLUMN @extschema@.sendjobs_queues.tokens_at IS 'When tokens was counted (the claims'' clock).';
COMMENT ON CONSTRAINT sendjobs_queues_limits_check ON @extschema@.sendjobs_queues IS 'Limits in range: a cap of at least 1, a rate above 0 (at most 1,000,000 a second) with a burst of at least 1 and its bucket.';
COMMENT ON FUNCTION @extschema@.sendjobs_stats() IS
    'One row per queue with unfinished jobs or events in the last 5 minutes: ready, scheduled, in_flight, expired (awaiting reclaim), at_last_attempt (in flight on their last attempt), oldest_ready_age, sent/failed/cancelled in the last 5 minutes, estimated (ready, scheduled and the 5-minute counts are exact up to 10,000, estimated from a sample above); and on every row send_jobs'' dead tuples and the oldest transaction holding back vacuum (age, and xmin age in transactions); and the queue''s flow control: paused, max_in_flight (its use: in_flight), rate and the tokens of its bucket now (sendjobs_limit).';
COMMENT ON FUNCTION @extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer, text, integer) IS
    'Adds a pending job and returns its id. Arguments: payload (required), queue (default ''default''), run_at (NULL: now), transaction_id (the linked business row), idempotency_key (a repeated key returns the existing job''s id and changes nothing), max_attempts (NULL: sendjobs.default_max_attempts), ordering_key (jobs that share one are claimed one at a time, in the order of their ids), priority (0 to 60: minutes of head start in the claim order).';
COMMENT ON COLUMN @extschema@.send_jobs.ordering_key IS 'Jobs that share it are claimed one at a time, in id order: a job waits while an older unfinished job of its key exists, or one of its key is in flight (sendjobs_enqueue), or NULL.';
COMMENT ON COLUMN @extschema@.send_jobs_finished.ordering_key IS 'Jobs that share it are claimed one at a time, in id order: a job waits while an older unfinished job of its key exists, or one of its key is in flight (sendjobs_enqueue), or NULL.';
COMMENT ON INDEX @extschema@.send_jobs_ordering_key_idx IS 'Ordered keys: an older unfinished job of the key (jobs with a key only).';
COMMENT ON INDEX @extschema@.send_jobs_ordering_key_held_idx IS 'Ordered keys: a job of the key in flight (jobs with a key and a lease only).';
COMMENT ON FUNCTION @extschema@.sendjobs_claim(integer, interval, text) IS
    'Claims up to batch jobs in one statement (FOR UPDATE SKIP LOCKED): pending ones that are due and in_flight ones whose lease expired, in claim order: next_attempt_at less the job''s priority (minutes of head start), oldest first. Each becomes in_flight with attempts + 1, a lease of now + lease (NULL: sendjobs.default_lease) and claim_generation + 1. Returns the rows as updated; keep id and claim_generation. queue NULL means any queue. An expired job that has used all max_attempts is not claimed: it gives up, failed with its event and its business row stamped, the reason in last_error.';
COMMENT ON COLUMN @extschema@.send_jobs.priority IS 'Minutes of head start in the claim order: the job is claimed as if it had been due this much earlier (sendjobs_enqueue), 0 by default.';
COMMENT ON COLUMN @extschema@.send_jobs_finished.priority IS 'Minutes of head start in the claim order: the job is claimed as if it had been due this much earlier (sendjobs_enqueue), 0 by default.';
COMMENT ON COLUMN @extschema@.send_jobs.next_attempt_at IS 'When the job is due; less its priority, its place in the claim order (an expired lease keeps it).';
COMMENT ON COLUMN @extschema@.send_jobs_finished.next_attempt_at IS 'When the job is due; less its priority, its place in the claim order (an expired lease keeps it).';
COMMENT ON INDEX @extschema@.send_jobs_pending_idx IS 'The claim''s pending branch, in claim order (any queue).';
COMMENT ON STATISTICS @extschema@.send_jobs_claim_order_stats IS 'The claim order''s statistics (the planner reads none of a partial index''s expressions).';
COMMENT ON INDEX @extschema@.send_jobs_pending_queue_idx IS 'The claim''s pending branch for one queue, in claim order.';
COMMENT ON INDEX @extschema@.send_jobs_pending_keyed_idx IS 'Ordered jobs in claim order: the claim''s pass for them (pending jobs with a key only).';
COMMENT ON FUNCTION @extschema@.sendjobs_grant(regrole, text) IS
    'Gives a role an access level: producer (enqueue, cancel), worker (claim, heartbeat, finalize, finalize_batch, queue_limits), monitor (sendjobs_stats, sendjobs_queue_limits; read the queue without payloads, the outbox and its consumers), relay (sendjobs_read_events) or admin (every function, reading every table). No level may write the queue tables: the functions do, as the extension''s owner.';
COMMENT ON FUNCTION @extschema@.sendjobs_purge(interval, integer) IS
    'Deletes up to batch finished jobs (sent, failed, cancelled; each its own event) that finished more than older_than ago, but none a consumer of the outbox has not passed, and returns how many. Skips locked rows: safe from cron while workers run; call until it returns less than batch.';
COMMENT ON FUNCTION @extschema@.sendjobs_create_consumer(text, boolean, regrole, boolean) IS
    'Creates a consumer of the outbox: it reads, with sendjobs_read_events, every event not yet committed when it is created, its own transaction''s included (from_start: every event still kept, too). reader: only that role''s members may read it (NULL: any role with the relay level). wake: a finish then sends the outbox''s wake-up at its commit. sendjobs_purge keeps an event until every consumer has passed it.';
COMMENT ON FUNCTION @extschema@.sendjobs_drop_consumer(text) IS
    'Drops a consumer of the outbox: sendjobs_purge no longer keeps events for it.';
COMMENT ON FUNCTION @extschema@.sendjobs_read_events(text, integer) IS
    'Reads up to max events of the outbox for a consumer, the next after its position, and moves the position past them in the caller''s transaction (a rollback reads them again). Every event once per consumer, in batches that follow commit order (what had committed when a batch was taken is in it or an earlier one), each batch in (transaction, job id) order. Fewer than max rows: caught up.';
COMMENT ON INDEX @extschema@.send_jobs_finished_event_xid_idx IS 'The outbox in its reading order: sendjobs_read_events pages through a batch by it; sendjobs_stats finds the last 5 minutes by it.';
COMMENT ON INDEX @extschema@.send_jobs_finished_finished_at_idx IS 'Finished jobs by age (BRIN): what sendjobs_purge deletes.';
COMMENT ON INDEX @extschema@.send_jobs_finished_unsent_idx IS 'Failed and cancelled jobs by age: their exact 5-minute counts in sendjobs_stats.';
COMMENT ON COLUMN @extschema@.send_job_events.job_id IS 'The finished job (one event per job: the event is the job''s row in send_jobs_finished).';
COMMENT ON COLUMN @extschema@.send_job_events.transaction_id IS 'The job''s transaction_id.';
COMMENT ON COLUMN @extschema@.send_job_events.kind IS 'sent, failed or cancelled: how the job finished.';
COMMENT ON COLUMN @extschema@.send_job_events.claim_generation IS 'The job''s claim_generation when it finished (for sent and failed: the claim whose finalize applied, or whose lease expired on the last attempt).';
COMMENT ON COLUMN @extschema@.send_job_events.created_at IS 'When the job finished (database clock): its finished_at.';
COMMENT ON COLUMN @extschema@.send_job_events.queue IS 'The job''s queue.';
COMMENT ON COLUMN @extschema@.send_job_events.event_xid IS 'The transaction that finished the job: the outbox''s batches are read in its order (sendjobs_read_events).';
COMMENT ON COLUMN @extschema@.send_jobs_finished.outcome IS 'The outcome of the finalize that finished the job (sent, failed, or retry on its last attempt); NULL when no finalize did (it gave up, or was cancelled), and for a job that finished before 0.3.0.';
COMMENT ON COLUMN @extschema@.send_jobs_finished.event_xid IS 'The transaction that finished the job: the outbox''s batches are read in its order (sendjobs_read_events).';
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

-- The grants carried above (to the roles of the access levels) were made in this script,
-- so Postgres recorded them as the extension's own initial privileges, as it records
-- every GRANT of an extension script. They are the users' grants: pg_dump must dump them
-- (it dumps only what differs from the initial privileges, so a restore would have lost
-- them), and a role dropped later must leave nothing behind (on 15 and 16 its oid stayed
-- in pg_init_privs, and the dump's REVOKE of it failed the restore). So the initial
-- privileges are set back to what a fresh install's are: the owner's, and PUBLIC's where
-- the install script left them (the upgrade test compares the two).
WITH kept AS (
    SELECT ip.classoid, ip.objoid, ip.objsubid,
           (SELECT pg_catalog.array_agg(item)
              FROM pg_catalog.unnest(ip.initprivs) AS item
             WHERE NOT EXISTS (
                   SELECT FROM pg_catalog.aclexplode(ARRAY[item]) AS acl
                    WHERE acl.grantee OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
                      AND acl.grantee OPERATOR(pg_catalog.<>) acl.grantor)) AS initprivs,
           CASE WHEN ip.objsubid OPERATOR(pg_catalog.<>) 0 THEN NULL
                WHEN ip.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                THEN (SELECT pg_catalog.acldefault(CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'S'::pg_catalog."char"
                                                        THEN 's'::pg_catalog."char" ELSE 'r'::pg_catalog."char" END,
                                                   c.relowner)
                        FROM pg_catalog.pg_class AS c WHERE c.oid OPERATOR(pg_catalog.=) ip.objoid)
                WHEN ip.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
                THEN (SELECT pg_catalog.acldefault('f'::pg_catalog."char", p.proowner)
                        FROM pg_catalog.pg_proc AS p WHERE p.oid OPERATOR(pg_catalog.=) ip.objoid)
           END AS default_privileges
      FROM pg_catalog.pg_init_privs AS ip
     WHERE ip.privtype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
       AND EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                    WHERE d.classid OPERATOR(pg_catalog.=) ip.classoid
                      AND d.objid OPERATOR(pg_catalog.=) ip.objoid
                      AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                      AND d.refobjid OPERATOR(pg_catalog.=) (SELECT e.oid FROM pg_catalog.pg_extension AS e
                                                              WHERE e.extname OPERATOR(pg_catalog.=) 'sendjobs'::pg_catalog.name)
                      AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")
),
-- A row left with nothing, or with the privileges the object has by default, goes: a
-- fresh install has none for it (a column's rights hold no owner's entry: the monitors'
-- SELECT on ordering_key left nothing; the outbox's view and the consumers' table were
-- granted nothing by a fresh install, so their owner's rights are the default).
emptied AS (
    DELETE FROM pg_catalog.pg_init_privs AS ip
     USING kept
     WHERE ip.classoid OPERATOR(pg_catalog.=) kept.classoid
       AND ip.objoid OPERATOR(pg_catalog.=) kept.objoid
       AND ip.objsubid OPERATOR(pg_catalog.=) kept.objsubid
       AND ip.privtype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
       AND (kept.initprivs IS NULL
            OR kept.initprivs OPERATOR(pg_catalog.=) kept.default_privileges)
)
UPDATE pg_catalog.pg_init_privs AS ip
   SET initprivs = kept.initprivs
  FROM kept
 WHERE ip.classoid OPERATOR(pg_catalog.=) kept.classoid
   AND ip.objoid OPERATOR(pg_catalog.=) kept.objoid
   AND ip.objsubid OPERATOR(pg_catalog.=) kept.objsubid
   AND ip.privtype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
   AND kept.initprivs IS NOT NULL
   AND (kept.default_privileges IS NULL
        OR NOT kept.initprivs OPERATOR(pg_catalog.=) kept.default_privileges);
