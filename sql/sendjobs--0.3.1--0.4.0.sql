-- sendjobs 0.3.1 -> 0.4.0: fair claims across queues (CHANGELOG.md; decisions 0019, 0020).
-- A claim from any queue serves the queues with due jobs in turn, each its share of the
-- batch, ordered jobs too: the library does it. In the catalog: sendjobs_claim's
-- comment, every C function rebound to this release's library, and below, under an
-- ACCESS EXCLUSIVE lock of send_jobs (with send_jobs_finished) taken first, so that no
-- weaker lock of the update's must wait to grow stronger (every statement on the queue
-- waits for the update's commit, reads too):
-- - a settings row for each queue that exists under a name a new queue may no longer
--   have: a character Unicode draws as nothing (src/machinery/queue_names.rs, decision 0018), so
--   that it goes on as before; read from send_jobs with send_jobs_finished once;
-- - ordered jobs that wait for their key (decision 0020): a column of send_jobs and of
--   send_jobs_finished (no row is rewritten: a constant default), the monitors' grant
--   of it, the ordered jobs' claim index by queue in claim order without the waiting
--   ones in place of the one in claim order, an index of the waiting ones, and one of
--   the pending jobs without a key by queue: each build reads send_jobs once.
\echo Use "ALTER EXTENSION sendjobs UPDATE TO '0.4.0'" to load this file. \quit

-- The queues named as a new queue may no longer be, since this release: the
-- default-ignorable code points that are not format characters
-- (src/machinery/queue_names.rs `IGNORABLE`, the same list).
LOCK TABLE @extschema@.send_jobs IN ACCESS EXCLUSIVE MODE;
INSERT INTO @extschema@.sendjobs_queues (queue)
SELECT DISTINCT job.queue
  FROM @extschema@.send_jobs AS job
 WHERE job.queue OPERATOR(pg_catalog.~) (
           '[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u2065\u3164\ufe00-\ufe0f\uffa0\ufff0-\ufff8'
           OPERATOR(pg_catalog.||) '\U000e0000\U000e0002-\U000e001f\U000e0080-\U000e0fff]')
ON CONFLICT (queue) DO NOTHING;

-- Ordered jobs that wait for their key (sql/schema.sql says why): the column, after the
-- finished table's own columns there as in a fresh install; the claim's index of the
-- ordered jobs by queue, and of the waiting ones, built under the same lock from the
-- pending jobs with a key (none waits yet: the first claims of ordered jobs mark them).
ALTER TABLE @extschema@.send_jobs ADD COLUMN waits_for_key boolean NOT NULL DEFAULT false;
DROP INDEX @extschema@.send_jobs_pending_keyed_idx;
CREATE INDEX send_jobs_pending_keyed_queue_idx
    ON @extschema@.send_jobs (queue, (pg_catalog.timezone(interval '0', next_attempt_at) OPERATOR(pg_catalog.-) pg_catalog.make_interval(mins => priority)), id)
    WHERE status OPERATOR(pg_catalog.=) 'pending' AND ordering_key IS NOT NULL AND NOT waits_for_key;
CREATE INDEX send_jobs_waits_for_key_idx
    ON @extschema@.send_jobs (ordering_key, id) WHERE waits_for_key;
CREATE INDEX send_jobs_pending_unkeyed_queue_idx
    ON @extschema@.send_jobs (queue, (pg_catalog.timezone(interval '0', next_attempt_at) OPERATOR(pg_catalog.-) pg_catalog.make_interval(mins => priority)), id)
    WHERE status OPERATOR(pg_catalog.=) 'pending' AND ordering_key IS NULL;
-- The monitor level reads every column of send_jobs but payload (sql/statements/
-- access_level.sql): the roles that held the whole level at 0.3.1 read the new column
-- too (docs/operations.md, "What an update changes in rights").
DO $$
DECLARE
    monitor pg_catalog.regrole;
BEGIN
    FOR monitor IN
        WITH level (kind, object, col) AS (VALUES
            ('f', '@extschema@.sendjobs_stats()', ''),
            ('f', '@extschema@.sendjobs_queue_limits(text)', ''),
            ('t', '@extschema@.send_job_events', ''),
            ('t', '@extschema@.sendjobs_queues', ''),
            ('t', '@extschema@.sendjobs_consumers', ''),
            ('t', '@extschema@.sendjobs_blocked_keys', ''),
            ('c', '@extschema@.send_jobs', 'id'), ('c', '@extschema@.send_jobs', 'queue'),
            ('c', '@extschema@.send_jobs', 'transaction_id'), ('c', '@extschema@.send_jobs', 'idempotency_key'),
            ('c', '@extschema@.send_jobs', 'status'), ('c', '@extschema@.send_jobs', 'attempts'),
            ('c', '@extschema@.send_jobs', 'max_attempts'), ('c', '@extschema@.send_jobs', 'next_attempt_at'),
            ('c', '@extschema@.send_jobs', 'claimed_at'), ('c', '@extschema@.send_jobs', 'lease_expires_at'),
            ('c', '@extschema@.send_jobs', 'claim_generation'), ('c', '@extschema@.send_jobs', 'last_error'),
            ('c', '@extschema@.send_jobs', 'created_at'), ('c', '@extschema@.send_jobs', 'finished_at'),
            ('c', '@extschema@.send_jobs', 'redrive_of'), ('c', '@extschema@.send_jobs', 'ordering_key'),
            ('c', '@extschema@.send_jobs', 'priority')
        ),
        wanted AS (
            SELECT level.kind, level.col,
                   CASE WHEN level.kind OPERATOR(pg_catalog.=) 'f'
                        THEN level.object::pg_catalog.regprocedure::pg_catalog.oid
                        ELSE level.object::pg_catalog.regclass::pg_catalog.oid END AS object
              FROM level
        ),
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
        )
        SELECT r.oid::pg_catalog.regrole
          FROM pg_catalog.pg_roles AS r
         WHERE NOT EXISTS (
               SELECT FROM wanted
                WHERE NOT EXISTS (
                      SELECT FROM granted
                       WHERE granted.grantee OPERATOR(pg_catalog.=) r.oid
                         AND granted.kind OPERATOR(pg_catalog.=) wanted.kind
                         AND granted.object OPERATOR(pg_catalog.=) wanted.object
                         AND granted.col OPERATOR(pg_catalog.=) wanted.col
                         AND granted.privilege_type OPERATOR(pg_catalog.=)
                             CASE WHEN wanted.kind OPERATOR(pg_catalog.=) 'f' THEN 'EXECUTE' ELSE 'SELECT' END))
    LOOP
        EXECUTE pg_catalog.format('GRANT SELECT (waits_for_key) ON TABLE @extschema@.send_jobs TO %s', monitor);
    END LOOP;
END $$;
-- Postgres recorded those grants as the extension's initial privileges of the column, as
-- it records every GRANT of an extension script; they are the users' grants, which pg_dump
-- must dump, and a fresh install has none for the column (sendjobs--0.2.1--0.3.0.sql says
-- more; the upgrade test compares the two catalogs).
DELETE FROM pg_catalog.pg_init_privs AS ip
 USING pg_catalog.pg_attribute AS a
 WHERE ip.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
   AND ip.objoid OPERATOR(pg_catalog.=) '@extschema@.send_jobs'::pg_catalog.regclass::pg_catalog.oid
   AND ip.privtype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
   AND a.attrelid OPERATOR(pg_catalog.=) ip.objoid
   AND a.attnum OPERATOR(pg_catalog.=) ip.objsubid
   AND a.attname OPERATOR(pg_catalog.=) 'waits_for_key'::pg_catalog.name;
COMMENT ON INDEX @extschema@.send_jobs_pending_unkeyed_queue_idx IS 'The claim''s pending branch for one queue''s jobs without an ordering key, in claim order (pending jobs without a key only).';
COMMENT ON COLUMN @extschema@.send_jobs.waits_for_key IS 'True while the job is known to wait behind an earlier job of its ordering key (a claim found it not free): the claims pass over it until a job of its key finishes or goes back to pending, or its key is let go. Always false without a key, and once finished.';
COMMENT ON COLUMN @extschema@.send_jobs_finished.waits_for_key IS 'True while the job is known to wait behind an earlier job of its ordering key (a claim found it not free): the claims pass over it until a job of its key finishes or goes back to pending, or its key is let go. Always false without a key, and once finished.';
COMMENT ON INDEX @extschema@.send_jobs_pending_keyed_queue_idx IS 'Ordered jobs that may be free, by queue in claim order: the claims'' passes for them (pending jobs with a key that do not wait for it only).';
COMMENT ON INDEX @extschema@.send_jobs_waits_for_key_idx IS 'The jobs that wait for their key, by key, oldest first: what a finish of a job of the key clears (waiting jobs only).';

COMMENT ON FUNCTION @extschema@.sendjobs_claim(integer, interval, text) IS
    'Claims up to batch jobs (FOR UPDATE SKIP LOCKED): pending ones that are due and in_flight ones whose lease expired. From one queue, in claim order: next_attempt_at less the job''s priority (minutes of head start), oldest first. From any queue (queue NULL), the queues with due jobs in turn, each an even share of the batch, each in its claim order: one queue''s backlog never holds another''s due jobs (invariant 21). Each job becomes in_flight with attempts + 1, a lease of now + lease (NULL: sendjobs.default_lease) and claim_generation + 1. Returns the rows as updated; keep id and claim_generation. An expired job that has used all max_attempts is not claimed: it gives up, failed with its event and its business row stamped, the reason in last_error.';

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

