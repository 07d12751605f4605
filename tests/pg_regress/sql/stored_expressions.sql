-- The extension's stored expressions (CHECKs, column defaults, index expressions and
-- predicates, statistics, views, rules, triggers, policies, argument defaults) are immune
-- to planted objects. Their operators and functions are looked up once, by CREATE
-- EXTENSION or ALTER EXTENSION ... UPDATE, in the extension's schema after pg_catalog: an
-- operator or function there that matches better than pg_catalog's (>(float8, int4)
-- beats >(float8, float8), which needs a cast) is bound into the catalog, and runs in
-- every write of the functions, as the extension's owner, a superuser. So:
--   1. no object of the extension (a member, or what depends on one, recursively)
--      depends on an operator, function, type, collation or cast outside pg_catalog and
--      the extension;
--   2. the operators and functions the stored expressions call, read from their node
--      trees (pg_depend omits pinned objects), are planted in the extension's schema,
--      with the same names and argument types cast to theirs; each plant writes to a log
--      when it runs. With the extension installed again after them, 1. still holds, and
--      its functions, run over every table, run none.
-- Run on a fresh install and, by tests/upgrade/upgrade.sh, on one created at the oldest
-- release and updated along every update script (the plants then are in place before the
-- install and every update).

-- A database of its own, dropped at the end, for the plants.
\set regress_db :DBNAME
SET client_min_messages = warning;
DROP DATABASE IF EXISTS sendjobs_planted;
RESET client_min_messages;
CREATE DATABASE sendjobs_planted TEMPLATE template0;
\c sendjobs_planted
CREATE SCHEMA probe;

-- The extension's objects: its members, and whatever depends on one of them (constraints,
-- column defaults, indexes, statistics, rules, triggers, policies, row types, ...).
CREATE VIEW probe.own AS
WITH RECURSIVE own(classid, objid) AS (
    SELECT d.classid, d.objid
      FROM pg_depend AS d JOIN pg_extension AS e ON e.oid = d.refobjid
     WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'sendjobs'
    UNION
    SELECT d.classid, d.objid
      FROM pg_depend AS d JOIN own AS o ON d.refclassid = o.classid AND d.refobjid = o.objid
)
SELECT * FROM own;

-- 1. What those objects depend on outside pg_catalog and the extension.
CREATE VIEW probe.foreign_refs AS
SELECT DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid) AS object,
       pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid) AS depends_on
  FROM probe.own AS o
  JOIN pg_depend AS d ON d.classid = o.classid AND d.objid = o.objid
 WHERE d.refclassid IN ('pg_operator'::regclass, 'pg_proc'::regclass, 'pg_type'::regclass,
                        'pg_collation'::regclass, 'pg_cast'::regclass)
   AND (d.refclassid, d.refobjid) NOT IN (SELECT classid, objid FROM probe.own)
   AND CASE d.refclassid
         WHEN 'pg_operator'::regclass THEN (SELECT oprnamespace FROM pg_operator WHERE oid = d.refobjid)
         WHEN 'pg_proc'::regclass THEN (SELECT pronamespace FROM pg_proc WHERE oid = d.refobjid)
         WHEN 'pg_type'::regclass THEN (SELECT typnamespace FROM pg_type WHERE oid = d.refobjid)
         WHEN 'pg_collation'::regclass THEN (SELECT collnamespace FROM pg_collation WHERE oid = d.refobjid)
       END IS DISTINCT FROM 'pg_catalog'::regnamespace
   -- A cast has no schema: one made by initdb is pg_catalog's.
   AND NOT (d.refclassid = 'pg_cast'::regclass AND d.refobjid < 16384);

-- 2. The operators and functions the stored expressions of those objects call, from
-- their node trees (":opno N", ":funcid N", ...): pinned ones included.
CREATE VIEW probe.called AS
WITH trees(classid, objid, tree) AS (
              SELECT 'pg_constraint'::regclass, oid, conbin FROM pg_constraint
    UNION ALL SELECT 'pg_attrdef'::regclass, oid, adbin FROM pg_attrdef
    UNION ALL SELECT 'pg_class'::regclass, indexrelid, indexprs FROM pg_index
    UNION ALL SELECT 'pg_class'::regclass, indexrelid, indpred FROM pg_index
    UNION ALL SELECT 'pg_statistic_ext'::regclass, oid, stxexprs FROM pg_statistic_ext
    UNION ALL SELECT 'pg_rewrite'::regclass, oid, ev_action FROM pg_rewrite
    UNION ALL SELECT 'pg_rewrite'::regclass, oid, ev_qual FROM pg_rewrite
    UNION ALL SELECT 'pg_trigger'::regclass, oid, tgqual FROM pg_trigger
    UNION ALL SELECT 'pg_policy'::regclass, oid, polqual FROM pg_policy
    UNION ALL SELECT 'pg_policy'::regclass, oid, polwithcheck FROM pg_policy
    UNION ALL SELECT 'pg_proc'::regclass, oid, proargdefaults FROM pg_proc
    UNION ALL SELECT 'pg_proc'::regclass, oid, prosqlbody FROM pg_proc
    UNION ALL SELECT 'pg_type'::regclass, oid, typdefaultbin FROM pg_type
)
SELECT DISTINCT CASE m[1] WHEN 'opno' THEN 'pg_operator'::regclass ELSE 'pg_proc'::regclass END AS classid,
       m[2]::oid AS objid
  FROM trees AS t
  JOIN probe.own AS o USING (classid, objid),
       regexp_matches(t.tree::text, ':(opno|funcid|aggfnoid|winfnoid) (\d+)', 'g') AS m;

CREATE EXTENSION sendjobs;
SELECT * FROM probe.foreign_refs;

-- The plants, from what the extension's expressions call. Each operator and function
-- gets an overload under its name, in the extension's schema, for its own argument types
-- and for each one argument type replaced by one implicitly cast to it (a function with
-- the same argument names, the same ones defaulted; none that the extension creates
-- itself). One replaced argument is enough: a call that needed a cast for an argument
-- has a plant that matches that argument exactly and the others as well as before, and
-- Postgres takes the candidate with the most exact matches.
CREATE TABLE probe.variants AS
SELECT casttarget AS declared, castsource AS given
  FROM pg_cast WHERE castcontext = 'i' AND castsource <> casttarget;
CREATE TABLE probe.callee AS
SELECT c.classid, c.objid,
       coalesce(p.proname, o.oprname) AS name,
       coalesce(p.prorettype, o.oprresult) AS result,
       coalesce(string_to_array(p.proargtypes::text, ' ')::oid[],
                array_remove(ARRAY[o.oprleft, o.oprright], 0::oid)) AS args,
       p.proargnames AS argnames, coalesce(p.pronargdefaults, 0) AS ndefaults,
       o.oprleft = 0 AS prefix,
       (SELECT extnamespace FROM pg_extension WHERE extname = 'sendjobs') AS schema,
       (c.classid, c.objid) IN (SELECT classid, objid FROM probe.own) AS own
  FROM probe.called AS c
  LEFT JOIN pg_proc AS p ON c.classid = 'pg_proc'::regclass AND p.oid = c.objid
  LEFT JOIN pg_operator AS o ON c.classid = 'pg_operator'::regclass AND o.oid = c.objid;
CREATE TABLE probe.plant AS
SELECT row_number() OVER (ORDER BY f.classid, f.objid, t.types) AS n, f.*, t.types
  FROM probe.callee AS f,
       LATERAL (SELECT f.args AS types
                UNION
                SELECT f.args[:i - 1] || v.given || f.args[i + 1:]
                  FROM generate_subscripts(f.args, 1) AS i
                  JOIN probe.variants AS v ON v.declared = f.args[i]) AS t
 WHERE NOT (f.own AND t.types = f.args);

DROP EXTENSION sendjobs;
CREATE TABLE probe.fired (what text);
DO $$
DECLARE
    p record;
    body text;
    params text;
BEGIN
    FOR p IN SELECT * FROM probe.plant ORDER BY n LOOP
        body := format('$f$BEGIN INSERT INTO probe.fired VALUES (%L); RETURN NULL; END$f$',
                       format('%s(%s)', p.name, (SELECT string_agg(t::regtype::text, ', ') FROM unnest(p.types) AS t)));
        SELECT coalesce(string_agg(concat_ws(' ', quote_ident(nullif(p.argnames[i], '')), p.types[i]::regtype,
                                             CASE WHEN i > cardinality(p.types) - p.ndefaults THEN 'DEFAULT NULL' END),
                                   ', ' ORDER BY i), '')
          INTO params FROM generate_subscripts(p.types, 1) AS i;
        IF p.classid = 'pg_proc'::regclass THEN
            EXECUTE format('CREATE FUNCTION %I.%I(%s) RETURNS %s LANGUAGE plpgsql AS %s',
                           p.schema::regnamespace, p.name, params, p.result::regtype, body);
        ELSE
            EXECUTE format('CREATE FUNCTION probe.op_%s(%s) RETURNS %s LANGUAGE plpgsql AS %s',
                           p.n, params, p.result::regtype, body);
            EXECUTE format('CREATE OPERATOR %I.%s (FUNCTION = probe.op_%s, %s)',
                           p.schema::regnamespace, p.name, p.n,
                           CASE WHEN p.prefix THEN format('RIGHTARG = %s', p.types[1]::regtype)
                                ELSE format('LEFTARG = %s, RIGHTARG = %s', p.types[1]::regtype, p.types[2]::regtype) END);
        END IF;
    END LOOP;
END $$;
-- Planted: an overload of every operator and function of pg_catalog called, among them
-- >=(float8, int4), for the CHECK of sendjobs_queues (its rate).
SELECT bool_and(own OR (classid, objid) IN (SELECT classid, objid FROM probe.plant)) AS each_one_planted,
       (SELECT count(*) FROM probe.plant
         WHERE name = '>=' AND types = ARRAY['float8'::regtype, 'int4'::regtype]::oid[]) AS float8_ge_int4
  FROM probe.callee;

CREATE EXTENSION sendjobs;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'sendjobs') AS at_this_release
  FROM pg_extension WHERE extname = 'sendjobs';
-- Still nothing outside pg_catalog and the extension.
SELECT * FROM probe.foreign_refs;
-- None ran while installing.
SELECT what FROM probe.fired ORDER BY what;

-- Every table written through the functions, every column default and CHECK and index
-- with it: enqueue (with an ordering key, a priority, an idempotency key), claim, finalize
-- each way, heartbeat, cancel, redrive, purge, the queues' settings (a rate and a burst),
-- the transaction link, a consumer of the outbox.
SET search_path = pg_catalog, pg_temp;
CREATE TABLE probe.orders (id text PRIMARY KEY, status text NOT NULL);
INSERT INTO probe.orders VALUES ('o1', 'new'), ('o2', 'new');
SELECT public.sendjobs_link_transactions('probe.orders', 'id', 'status', 'sent', 'failed', 'new');
SELECT public.sendjobs_create_consumer('relay', wake => true);
SELECT public.sendjobs_notify('q', true);
SELECT public.sendjobs_limit('q', max_in_flight => 10, rate => 5, burst => 3);
SELECT public.sendjobs_block_keys('q', true);
SELECT public.sendjobs_enqueue('{}', 'q', transaction_id => 'o1', idempotency_key => 'k1',
                               ordering_key => 'a', priority => 5) AS job_1;
SELECT public.sendjobs_enqueue('{}', 'q', transaction_id => 'o2') AS job_2;
SELECT public.sendjobs_enqueue('{}', 'q') AS job_3;
SELECT id, claim_generation FROM public.sendjobs_claim(3, queue => 'q') ORDER BY id;
SELECT public.sendjobs_heartbeat(1, 1);
SELECT public.sendjobs_finalize(1, 1, 'sent');
SELECT * FROM public.sendjobs_finalize_batch(ARRAY[2], ARRAY[1], 'failed', 'down');
SELECT public.sendjobs_finalize(3, 1, 'retry', retry_at => now());
SELECT public.sendjobs_cancel(3);
SELECT * FROM public.sendjobs_redrive(ARRAY[2]);
SELECT public.sendjobs_pause('q');
SELECT public.sendjobs_resume('q');
SELECT public.sendjobs_limit('q');
SELECT count(*) AS events FROM public.sendjobs_read_events('relay');
SELECT public.sendjobs_purge('0 seconds') >= 0 AS purged;
SELECT count(*) > 0 AS stats FROM public.sendjobs_stats();
SELECT public.sendjobs_unlink_transactions();
SELECT public.sendjobs_drop_consumer('relay');
-- None ran.
SELECT what FROM probe.fired ORDER BY what;

\c :regress_db
DROP DATABASE sendjobs_planted;
