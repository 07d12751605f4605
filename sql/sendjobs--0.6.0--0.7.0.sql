-- sendjobs 0.6.0 -> 0.7.0: a claim's generation stays unique across a failover
-- (CHANGELOG.md; docs/decisions/0025-a-fence-across-failovers.md). The claim statements
-- are the library's, so the new library carries that; the trigger that keeps a job's
-- earlier attempts now keeps its latest 20 by attempt number, since a generation can
-- jump by 2^32 at a failover. Every C function rebound to this release's library. No
-- table changes: nothing is locked but the trigger function's definition.
\echo Use "ALTER EXTENSION sendjobs UPDATE TO '0.7.0'" to load this file. \quit

CREATE OR REPLACE FUNCTION @extschema@.sendjobs_attempt_ended() RETURNS trigger
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

COMMENT ON COLUMN @extschema@.send_jobs.claim_generation IS
    'The fencing token: grows with every claim (by one; to a new timeline''s floor after a failover); finalize and heartbeat apply only with the current one.';
COMMENT ON COLUMN @extschema@.send_jobs_finished.claim_generation IS
    'The fencing token: grows with every claim (by one; to a new timeline''s floor after a failover); finalize and heartbeat apply only with the current one.';

COMMENT ON FUNCTION @extschema@.sendjobs_claim(integer, interval, text) IS
    'Claims up to batch jobs (FOR UPDATE SKIP LOCKED): pending ones that are due and in_flight ones whose lease expired. From one queue, in claim order: next_attempt_at less the job''s priority (minutes of head start), oldest first. From any queue (queue NULL), the queues with due jobs in turn, each an even share of the batch, each in its claim order: one queue''s backlog never holds another''s due jobs (invariant 21). Each job becomes in_flight with attempts + 1, a lease of now + lease (NULL: sendjobs.default_lease) and claim_generation + 1 (more after a failover: invariant 2). Returns the rows as updated; keep id and claim_generation. An expired job that has used all max_attempts is not claimed: it gives up, failed with its event and its business row stamped, the reason in last_error.';

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

