-- sendjobs 0.5.0 -> 0.6.0: sendjobs_enqueue_many, many jobs in one statement (CHANGELOG.md;
-- docs/decisions/0023-enqueue-many.md). The function with its comment and rights: the
-- roles that held the whole producer or admin level at 0.5.0 may run it; every C
-- function rebound to this release's library. No table changes: nothing is locked.
\echo Use "ALTER EXTENSION sendjobs UPDATE TO '0.6.0'" to load this file. \quit

CREATE FUNCTION @extschema@."sendjobs_enqueue_many"(
	"payloads" jsonb[],
	"queues" TEXT[] DEFAULT '{default}',
	"run_at" timestamp with time zone[] DEFAULT NULL,
	"transaction_ids" TEXT[] DEFAULT NULL,
	"idempotency_keys" TEXT[] DEFAULT NULL,
	"max_attempts" INT[] DEFAULT NULL,
	"ordering_keys" TEXT[] DEFAULT NULL,
	"priorities" INT[] DEFAULT '{0}'
) RETURNS bigint[]
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'sendjobs-@CARGO_VERSION@', 'sendjobs_enqueue_many_wrapper';
REVOKE ALL ON FUNCTION @extschema@.sendjobs_enqueue_many(jsonb[], text[], timestamptz[], text[], text[], integer[], text[], integer[]) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.sendjobs_enqueue_many(jsonb[], text[], timestamptz[], text[], text[], integer[], text[], integer[]) IS
    'Adds the jobs of payloads in one statement, each as sendjobs_enqueue adds one, and returns their ids in payloads'' order (a repeated idempotency key gives the existing job''s id). Every other array holds one value per job or one for all: queues (default {default}), run_at, transaction_ids, idempotency_keys, max_attempts, ordering_keys, priorities (default {0}); NULL where sendjobs_enqueue takes NULL. A bad job anywhere adds none.';
COMMENT ON FUNCTION @extschema@.sendjobs_grant(regrole, text) IS
    'Gives a role an access level: producer (enqueue, enqueue_many, cancel), worker (claim, heartbeat, finalize, finalize_batch, queue_limits), monitor (sendjobs_stats, sendjobs_queue_limits; read the queue without payloads, the outbox and its consumers), relay (sendjobs_read_events) or admin (every function, reading every table). No level may write the queue tables: the functions do, as the extension''s owner.';

-- The roles that held a whole level at 0.5.0 (sql/statements/access_level.sql) get what
-- 0.6.0 adds to it (docs/operations.md, "What an update changes in rights"): producer and
-- admin, sendjobs_enqueue_many. A role given part of a level by hand gets nothing.
DO $$
DECLARE
    holder record;
BEGIN
    FOR holder IN
        WITH level (name, kind, object, col) AS (VALUES
            ('producer', 'f', '@extschema@.sendjobs_enqueue(jsonb, text, timestamptz, text, text, integer, text, integer)', ''),
            ('producer', 'f', '@extschema@.sendjobs_cancel(bigint)', ''),
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
            ('admin', 't', '@extschema@.sendjobs_blocked_keys', ''),
            ('admin', 't', '@extschema@.send_job_attempts', '')
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
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.sendjobs_enqueue_many(jsonb[], text[], timestamptz[], text[], text[], integer[], text[], integer[]) TO %s', holder.role);
    END LOOP;
END $$;
-- Postgres recorded those grants as the function's initial privileges, as it records every
-- GRANT of an extension script; they are the users' grants, which pg_dump must dump. A
-- fresh install's are the owner's alone (sendjobs--0.2.1--0.3.0.sql says more; the
-- upgrade test compares the two catalogs).
UPDATE pg_catalog.pg_init_privs AS ip
   SET initprivs = ARRAY(SELECT item FROM pg_catalog.unnest(ip.initprivs) AS item
                          WHERE EXISTS (SELECT FROM pg_catalog.aclexplode(ARRAY[item]) AS acl
                                         WHERE acl.grantee OPERATOR(pg_catalog.=) acl.grantor))
 WHERE ip.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
   AND ip.objoid OPERATOR(pg_catalog.=) '@extschema@.sendjobs_enqueue_many(jsonb[], text[], timestamptz[], text[], text[], integer[], text[], integer[])'::pg_catalog.regprocedure::pg_catalog.oid
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

