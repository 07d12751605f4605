-- sendjobs 0.4.0 -> 0.5.0: a job's earlier attempts kept, the finished jobs read without
-- the unfinished ones, and a queue's failed jobs by an index of their own (CHANGELOG.md;
-- decisions 0021, 0022). A monitor read the finished jobs only through send_jobs, where
-- every read of them also scans send_jobs' own rows (its CHECK is a function call: the
-- planner cannot leave the table out). First a SHARE ROW EXCLUSIVE lock of send_jobs
-- with send_jobs_finished, so that no weaker lock of the update's must wait to grow
-- stronger (a finalize holds send_jobs and waits for send_jobs_finished): enqueues,
-- claims and finishes wait for the update, reads do not. Under it: the index
-- send_jobs_finished_failed_queue_idx, built from the history's failed jobs (one read of
-- send_jobs_finished); the table send_job_attempts and the trigger on send_jobs that
-- writes it; SELECT on send_jobs_finished's columns (payload excepted) and on
-- send_job_attempts for the roles that hold the whole monitor level, on send_job_attempts
-- for those that hold the admin level; the comments of sendjobs_queues' rate, burst and
-- tokens (jobs claimed, not claims); every C function rebound to this release's library.
\echo Use "ALTER EXTENSION sendjobs UPDATE TO '0.5.0'" to load this file. \quit

LOCK TABLE @extschema@.send_jobs IN SHARE ROW EXCLUSIVE MODE;

-- A queue's failed jobs by age (sql/schema.sql says why).
CREATE INDEX send_jobs_finished_failed_queue_idx
    ON @extschema@.send_jobs_finished (queue, finished_at, id) WHERE status OPERATOR(pg_catalog.=) 'failed';
COMMENT ON INDEX @extschema@.send_jobs_finished_failed_queue_idx IS 'A queue''s failed jobs by age: what an operator looks through to redrive (failed jobs only).';

-- A job's earlier attempts (sql/schema.sql says what and why): the table, the trigger
-- that writes it, and its place in pg_dump.
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
SELECT pg_catalog.pg_extension_config_dump('@extschema@.send_job_attempts', '');
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
    IF OLD.claim_generation > 20 THEN
        DELETE FROM @extschema@.send_job_attempts AS attempt
         WHERE attempt.job_id = OLD.id AND attempt.claim_generation <= OLD.claim_generation - 20;
    END IF;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION @extschema@.sendjobs_attempt_ended() FROM PUBLIC;
CREATE TRIGGER sendjobs_attempt_ended
    AFTER UPDATE ON @extschema@.send_jobs
    FOR EACH ROW
    WHEN (OLD.status OPERATOR(pg_catalog.=) 'in_flight'
          AND (NEW.status OPERATOR(pg_catalog.=) 'pending'
               OR NEW.claim_generation OPERATOR(pg_catalog.<>) OLD.claim_generation))
    EXECUTE FUNCTION @extschema@.sendjobs_attempt_ended();
COMMENT ON TABLE @extschema@.send_job_attempts IS
    'sendjobs: a job''s earlier attempts, each claim that ended without finishing it (retried by its worker, or claimed again after its lease expired); the latest 20 of a job, deleted with it by sendjobs_purge. The attempt that finished the job is its own row.';
COMMENT ON COLUMN @extschema@.send_job_attempts.job_id IS 'The job (send_jobs.id).';
COMMENT ON COLUMN @extschema@.send_job_attempts.claim_generation IS 'The claim that made the attempt: its fencing token.';
COMMENT ON COLUMN @extschema@.send_job_attempts.attempt IS 'Which attempt it was (the job''s attempts then, from 1).';
COMMENT ON COLUMN @extschema@.send_job_attempts.claimed_at IS 'When the claim took the job.';
COMMENT ON COLUMN @extschema@.send_job_attempts.ended_at IS 'When the attempt ended: its worker''s retry, or the expiry of its lease.';
COMMENT ON COLUMN @extschema@.send_job_attempts.ended IS 'How: retry (its worker finalized it so) or lease expired (another claim took the job).';
COMMENT ON COLUMN @extschema@.send_job_attempts.error IS 'The error its worker gave with the retry (what it wrote to last_error); NULL for a lease that expired.';
COMMENT ON FUNCTION @extschema@.sendjobs_attempt_ended() IS
    'Internal: the trigger sendjobs_attempt_ended, which writes an attempt that ended without finishing its job into send_job_attempts. Not part of the API.';
COMMENT ON TRIGGER sendjobs_attempt_ended ON @extschema@.send_jobs IS
    'sendjobs: an in_flight job retried, or claimed again after its lease expired, leaves the attempt that ended in send_job_attempts.';

-- The flow control's words say what is counted: jobs claimed (docs/reference.md,
-- sendjobs_limit: "From a partner's limits").
COMMENT ON COLUMN @extschema@.sendjobs_queues.rate IS 'The most of its jobs claimed a second, on average (sendjobs_limit), or NULL: each job claimed is one token, a job claimed again after its lease expired too.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.burst IS 'The most of its jobs claimed at once after a quiet time: the token bucket''s size. In any window of T seconds at most burst + rate x T are claimed.';
COMMENT ON COLUMN @extschema@.sendjobs_queues.tokens IS 'The token bucket: the jobs that may still be claimed at tokens_at (refilled at rate a second up to burst).';

-- The roles that held a whole level at 0.4.0 (sql/statements/access_level.sql) get what
-- 0.5.0 adds to it (docs/operations.md, "What an update changes in rights"): monitor,
-- send_jobs_finished's columns and send_job_attempts; admin, send_job_attempts. A role
-- given part of a level by hand gets nothing.
DO $$
DECLARE
    holder record;
BEGIN
    FOR holder IN
        WITH level (name, kind, object, col) AS (VALUES
            ('monitor', 'f', '@extschema@.sendjobs_stats()', ''),
            ('monitor', 'f', '@extschema@.sendjobs_queue_limits(text)', ''),
            ('monitor', 't', '@extschema@.send_job_events', ''),
            ('monitor', 't', '@extschema@.sendjobs_queues', ''),
            ('monitor', 't', '@extschema@.sendjobs_consumers', ''),
            ('monitor', 't', '@extschema@.sendjobs_blocked_keys', ''),
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
            ('monitor', 'c', '@extschema@.send_jobs', 'ordering_key'),
            ('monitor', 'c', '@extschema@.send_jobs', 'priority'),
            ('monitor', 'c', '@extschema@.send_jobs', 'waits_for_key'),
            ('admin', 'f', '@extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer, text, integer)', ''),
            ('admin', 'f', '@extschema@.sendjobs_claim(integer, interval, text)', ''),
            ('admin', 'f', '@extschema@.sendjobs_heartbeat(bigint, bigint, interval)', ''),
            ('admin', 'f', '@extschema@.sendjobs_finalize(bigint, bigint, text, text, timestamptz)', ''),
            ('admin', 'f', '@extschema@.sendjobs_finalize_batch(bigint[], bigint[], text, text, timestamptz)', ''),
            ('admin', 'f', '@extschema@.sendjobs_guard_terminal(regclass, name, text[], text[])', ''),
            ('admin', 'f', '@extschema@.sendjobs_guard_terminal_trigger()', ''),
            ('admin', 'f', '@extschema@.sendjobs_link_transactions(regclass, name, name, text, text, text)', ''),
            ('admin', 'f', '@extschema@.sendjobs_unlink_transactions()', ''),
            ('admin', 'f', '@extschema@.sendjobs_grant(regrole, text)', ''),
            ('admin', 'f', '@extschema@.sendjobs_revoke(regrole, text)', ''),
            ('admin', 'f', '@extschema@.sendjobs_cancel(bigint)', ''),
            ('admin', 'f', '@extschema@.sendjobs_redrive(bigint[])', ''),
            ('admin', 'f', '@extschema@.sendjobs_purge(interval, integer)', ''),
            ('admin', 'f', '@extschema@.sendjobs_notify(text, boolean)', ''),
            ('admin', 'f', '@extschema@.sendjobs_stats()', ''),
            ('admin', 'f', '@extschema@.sendjobs_pause(text)', ''),
            ('admin', 'f', '@extschema@.sendjobs_resume(text)', ''),
            ('admin', 'f', '@extschema@.sendjobs_limit(text, integer, double precision, integer)', ''),
            ('admin', 'f', '@extschema@.sendjobs_block_keys(text, boolean)', ''),
            ('admin', 'f', '@extschema@.sendjobs_unblock_key(text)', ''),
            ('admin', 'f', '@extschema@.sendjobs_queue_limits(text)', ''),
            ('admin', 'f', '@extschema@.sendjobs_create_consumer(text, boolean, regrole, boolean)', ''),
            ('admin', 'f', '@extschema@.sendjobs_drop_consumer(text)', ''),
            ('admin', 'f', '@extschema@.sendjobs_read_events(text, integer)', ''),
            ('admin', 't', '@extschema@.send_jobs', ''),
            ('admin', 't', '@extschema@.send_job_events', ''),
            ('admin', 't', '@extschema@.sendjobs_transaction_link', ''),
            ('admin', 't', '@extschema@.sendjobs_queues', ''),
            ('admin', 't', '@extschema@.send_jobs_finished', ''),
            ('admin', 't', '@extschema@.send_job_keys', ''),
            ('admin', 't', '@extschema@.sendjobs_consumers', ''),
            ('admin', 't', '@extschema@.sendjobs_blocked_keys', '')
        ),
        wanted AS (
            SELECT level.name, level.kind, level.col,
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
        SELECT levels.name AS level, r.oid::pg_catalog.regrole AS role
          FROM (SELECT DISTINCT name FROM level) AS levels, pg_catalog.pg_roles AS r
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
    LOOP
        IF holder.level OPERATOR(pg_catalog.=) 'monitor' THEN
            EXECUTE pg_catalog.format('GRANT SELECT (id, queue, transaction_id, idempotency_key, status, attempts, '
                                      'max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation, '
                                      'last_error, created_at, finished_at, redrive_of, ordering_key, priority, '
                                      'waits_for_key) ON TABLE @extschema@.send_jobs_finished TO %s', holder.role);
        END IF;
        EXECUTE pg_catalog.format('GRANT SELECT ON TABLE @extschema@.send_job_attempts TO %s', holder.role);
    END LOOP;
END $$;
-- Postgres recorded those grants as the extension's initial privileges of the columns,
-- as it records every GRANT of an extension script; they are the users' grants, which
-- pg_dump must dump, and a fresh install has none (sendjobs--0.2.1--0.3.0.sql says more;
-- the upgrade test compares the two catalogs).
DELETE FROM pg_catalog.pg_init_privs AS ip
 WHERE ip.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
   AND ip.objoid OPERATOR(pg_catalog.=) '@extschema@.send_jobs_finished'::pg_catalog.regclass::pg_catalog.oid
   AND ip.objsubid OPERATOR(pg_catalog.<>) 0
   AND ip.privtype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char";
-- Likewise send_job_attempts', which a fresh install grants nothing: it has no row there.
DELETE FROM pg_catalog.pg_init_privs AS ip
 WHERE ip.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
   AND ip.objoid OPERATOR(pg_catalog.=) '@extschema@.send_job_attempts'::pg_catalog.regclass::pg_catalog.oid
   AND ip.privtype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char";

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

