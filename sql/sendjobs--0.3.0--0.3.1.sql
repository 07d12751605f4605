-- sendjobs 0.3.0 -> 0.3.1: the security fixes of 0.3.0 (CHANGELOG.md; docs/operations.md
-- "Upgrading").
--  * The CHECK of sendjobs_queues resolves every operator in pg_catalog: 0.3.0's install
--    script bound `rate > 0` (float8 against int4) to an operator planted in the
--    extension's schema, which then ran as the extension's owner. A rate is at least one a
--    day (1/86400 a second): the update refuses a queue with a smaller one, naming it.
--  * Queue names are names (src/machinery/queue_names.rs): every queue that exists under a name a
--    new queue may no longer have gets a settings row with the defaults, which keeps the
--    name usable (enqueue, pause, limits) as before.
--  * Every C function to this release's library.
-- Locks: send_jobs (with send_jobs_finished) in SHARE mode while the queues' names are
-- read from it, so that no job of a new queue commits in between: enqueues, claims and
-- finalizes wait for the update, which reads both tables once.
\echo Use "ALTER EXTENSION sendjobs UPDATE TO '0.3.1'" to load this file. \quit

-- send_jobs before sendjobs_queues, in the order a worker's transaction touches them
-- (sql/sendjobs--0.2.1--0.3.0.sql says why).
LOCK TABLE @extschema@.send_jobs IN SHARE MODE;
LOCK TABLE @extschema@.sendjobs_queues IN ACCESS EXCLUSIVE MODE;

DO $$
DECLARE
    slow text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.to_json(q.queue)::pg_catalog.text, ', ' ORDER BY q.queue)
      INTO slow
      FROM @extschema@.sendjobs_queues AS q
     WHERE q.rate OPERATOR(pg_catalog.<) (1::float8 OPERATOR(pg_catalog./) 86400::float8);
    IF slow IS NOT NULL THEN
        RAISE EXCEPTION 'sendjobs: the rate of queue % is below one a day (1/86400 a second), which 0.3.1 refuses', slow
              USING ERRCODE = '22023',
                    HINT = 'Set a rate of at least 1/86400 with sendjobs_limit, or pause the queue (sendjobs_pause), then update again.';
    END IF;
END $$;

ALTER TABLE @extschema@.sendjobs_queues
    DROP CONSTRAINT sendjobs_queues_limits_check,
    ADD CONSTRAINT sendjobs_queues_limits_check CHECK (
        (max_in_flight IS NULL OR max_in_flight OPERATOR(pg_catalog.>=) 1)
        AND (rate IS NULL) OPERATOR(pg_catalog.=) (burst IS NULL)
        AND (rate IS NULL) OPERATOR(pg_catalog.=) (tokens IS NULL)
        AND (rate IS NULL) OPERATOR(pg_catalog.=) (tokens_at IS NULL)
        AND (rate IS NULL
             OR rate OPERATOR(pg_catalog.>=) (1::float8 OPERATOR(pg_catalog./) 86400::float8)
                AND rate OPERATOR(pg_catalog.<=) 1000000::float8
                AND burst OPERATOR(pg_catalog.>=) 1)
    );
COMMENT ON CONSTRAINT sendjobs_queues_limits_check ON @extschema@.sendjobs_queues IS 'Limits in range: a cap of at least 1, a rate from one a day (1/86400) to 1,000,000 jobs a second with a burst of at least 1 and its bucket.';

COMMENT ON FUNCTION @extschema@.sendjobs_limit(text, integer, double precision, integer) IS
    'Sets a queue''s limits, replacing its earlier ones, enforced by every claim: at most max_in_flight of its jobs under an unexpired lease at once; at most rate jobs claimed a second (from 1/86400, one a day, to 1,000,000) with bursts of burst (a token bucket on the database clock; burst defaults to one second''s worth). NULL: no such limit; sendjobs_limit(queue) lifts both. A claim beyond them gets fewer rows, not an error.';

-- The queues named as a new queue may no longer be (src/machinery/queue_names.rs
-- `name_problem`, the same characters): control characters, line and paragraph separators,
-- invisible format characters (Unicode category Cf), white space at either end.
INSERT INTO @extschema@.sendjobs_queues (queue)
SELECT DISTINCT job.queue
  FROM @extschema@.send_jobs AS job
 WHERE job.queue OPERATOR(pg_catalog.~) (
           '[\u0001-\u001f\u007f-\u009f\u2028\u2029\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891'
           OPERATOR(pg_catalog.||) '\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff'
           OPERATOR(pg_catalog.||) '\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3'
           OPERATOR(pg_catalog.||) '\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]'
           OPERATOR(pg_catalog.||) '|^[\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]'
           OPERATOR(pg_catalog.||) '|[\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]$')
ON CONFLICT (queue) DO NOTHING;

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

