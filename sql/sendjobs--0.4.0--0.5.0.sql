-- sendjobs 0.4.0 -> 0.5.0: the finished jobs read without the unfinished ones, and a
-- queue's failed jobs by an index of their own (CHANGELOG.md; decision 0021). A monitor
-- read the finished jobs only through send_jobs, where every read of them also scans
-- send_jobs' own rows (its CHECK is a function call: the planner cannot leave the table
-- out): a sequential scan of every unfinished job for the console's hour chart and a
-- queue's failed jobs. In the catalog: SELECT on send_jobs_finished's columns (payload
-- excepted, as on send_jobs) for the roles that hold the whole monitor level; the index
-- send_jobs_finished_failed_queue_idx, built from the failed jobs of the history under a
-- SHARE lock of send_jobs_finished (finishing statements wait for the build: one read of
-- the history); every C function rebound to this release's library.
\echo Use "ALTER EXTENSION sendjobs UPDATE TO '0.5.0'" to load this file. \quit

-- A queue's failed jobs by age (sql/schema.sql says why).
CREATE INDEX send_jobs_finished_failed_queue_idx
    ON @extschema@.send_jobs_finished (queue, finished_at, id) WHERE status OPERATOR(pg_catalog.=) 'failed';
COMMENT ON INDEX @extschema@.send_jobs_finished_failed_queue_idx IS 'A queue''s failed jobs by age: what an operator looks through to redrive (failed jobs only).';

-- The roles that held the whole monitor level at 0.4.0 (sql/statements/access_level.sql)
-- read send_jobs_finished's columns too (docs/operations.md, "What an update changes in
-- rights").
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
            ('c', '@extschema@.send_jobs', 'priority'), ('c', '@extschema@.send_jobs', 'waits_for_key')
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
        EXECUTE pg_catalog.format('GRANT SELECT (id, queue, transaction_id, idempotency_key, status, attempts, '
                                  'max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation, '
                                  'last_error, created_at, finished_at, redrive_of, ordering_key, priority, '
                                  'waits_for_key) ON TABLE @extschema@.send_jobs_finished TO %s', monitor);
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

