-- Security: the guarantees hold for every role and every search_path.
--   1. Access levels: PUBLIC executes nothing; producer, worker, monitor and admin hold
--      exactly their functions, and no level may write the queue tables.
--   2. The functions work for those roles all the same (they write as the extension's
--      owner), and every direct write a role could try is refused, changing nothing.
--   3. Functions and operators planted on a search_path never run in our statements.
--   4. Hostile identifiers are quoted, never pasted.
--   5. Settings: limits are not the worker's to raise; bad names and values fail.
--   6. A renamed extension schema does not break open sessions.

-- Start afresh, whatever an earlier test may have left behind.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP SCHEMA IF EXISTS planted, shop, q, q2 CASCADE;
DROP TABLE IF EXISTS "odd ""table""; DROP TABLE x; --";
DO $$ DECLARE r text; BEGIN
  FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'sj\_%' LOOP
    EXECUTE format('DROP OWNED BY %I; DROP ROLE %I', r, r);
  END LOOP;
END $$;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never

CREATE ROLE sj_producer;
CREATE ROLE sj_worker;
CREATE ROLE sj_monitor;
CREATE ROLE sj_admin;
CREATE ROLE sj_nobody;
SELECT sendjobs_grant('sj_producer', 'producer');
SELECT sendjobs_grant('sj_worker', 'worker');
SELECT sendjobs_grant('sj_monitor', 'monitor');
SELECT sendjobs_grant('sj_admin', 'admin');
-- Bad input: an unknown level (22023), NULLs (22004), a role that does not exist (42704).
SELECT sendjobs_grant('sj_worker', 'superworker');
SELECT sendjobs_grant('sj_worker', NULL);
SELECT sendjobs_grant(NULL, 'worker');
SELECT sendjobs_grant('sj_no_such_role', 'worker');

-------------------------------------------------------------------------------------
-- 1. Access levels
-------------------------------------------------------------------------------------

CREATE VIEW sendjobs_objects AS
SELECT d.classid, d.objid FROM pg_depend d
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sendjobs');

-- The functions each role may execute (sj_nobody stands for PUBLIC: none).
SELECT r.rolname, string_agg(p.proname, ', ' ORDER BY p.proname) AS may_execute
  FROM pg_roles r
  CROSS JOIN sendjobs_objects o JOIN pg_proc p ON o.classid = 'pg_proc'::regclass AND p.oid = o.objid
 WHERE r.rolname LIKE 'sj\_%' AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
 GROUP BY r.rolname ORDER BY r.rolname;
SELECT count(*) AS public_may_execute
  FROM sendjobs_objects o JOIN pg_proc p ON o.classid = 'pg_proc'::regclass AND p.oid = o.objid
 WHERE has_function_privilege('sj_nobody', p.oid, 'EXECUTE');

-- A revoke takes a level back, and a grant gives it again.
SELECT sendjobs_revoke('sj_worker', 'worker');
SELECT count(*) AS worker_may_execute
  FROM sendjobs_objects o JOIN pg_proc p ON o.classid = 'pg_proc'::regclass AND p.oid = o.objid
 WHERE has_function_privilege('sj_worker', p.oid, 'EXECUTE');
SELECT sendjobs_revoke('sj_worker', 'nonsense');   -- 22023
-- The USAGE on the schema that the grant gave stays: it lets the role call nothing, and
-- the schema's owner cannot tell it from one granted for other reasons (the extension
-- often lives in public).
SELECT count(*) AS worker_usage_grants
  FROM pg_namespace n, aclexplode(n.nspacl) a
 WHERE n.nspname = 'public' AND a.grantee = 'sj_worker'::regrole AND a.privilege_type = 'USAGE';
SELECT sendjobs_grant('sj_worker', 'worker');

-- The table privileges each role holds: reading only, and payloads only for admin.
SELECT r.rolname, c.relname, priv
  FROM pg_roles r
  CROSS JOIN sendjobs_objects o JOIN pg_class c ON o.classid = 'pg_class'::regclass AND c.oid = o.objid
  CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS priv
 WHERE r.rolname LIKE 'sj\_%' AND c.relkind IN ('r', 'v')
   AND (has_table_privilege(r.oid, c.oid, priv)
        OR (priv IN ('SELECT', 'INSERT', 'UPDATE', 'REFERENCES')
            AND has_any_column_privilege(r.oid, c.oid, priv)))
 ORDER BY 1, 2, 3;
SELECT has_column_privilege('sj_monitor', 'send_jobs', 'status', 'SELECT') AS monitor_reads_status,
       has_column_privilege('sj_monitor', 'send_jobs', 'payload', 'SELECT') AS monitor_reads_payload;

-------------------------------------------------------------------------------------
-- 2. The functions work without table privileges; direct writes do not
-------------------------------------------------------------------------------------

CREATE SCHEMA shop;
CREATE TABLE shop.payments (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
GRANT USAGE ON SCHEMA shop TO sj_worker;
GRANT SELECT, UPDATE ON shop.payments TO sj_worker;
SELECT sendjobs_guard_terminal('shop.payments');
SELECT sendjobs_link_transactions('shop.payments');
INSERT INTO shop.payments VALUES ('p1'), ('p2');

SET ROLE sj_producer;
SELECT sendjobs_enqueue('{"n": 1}', transaction_id => 'p1') AS job_1;
SELECT sendjobs_enqueue('{"n": 2}', transaction_id => 'p2') AS job_2;
SELECT * FROM sendjobs_claim(1);                               -- 42501: not a worker
SELECT * FROM sendjobs_redrive(ARRAY[1]);                      -- 42501: not an admin
RESET ROLE;
SET ROLE sj_worker;
SELECT id, claim_generation FROM sendjobs_claim(1, '1 minute');
SELECT sendjobs_heartbeat(1, 1, '2 minutes');
SELECT sendjobs_finalize(1, 1, 'sent');                        -- stamps shop.payments as its linker
SELECT sendjobs_enqueue('{}');                                 -- 42501: not a producer
SELECT sendjobs_cancel(2);                                     -- 42501: not a producer
RESET ROLE;
SET ROLE sj_monitor;
SELECT id, status, claim_generation FROM send_jobs ORDER BY id;
SELECT payload FROM send_jobs;                                 -- 42501: payloads excluded
SELECT payload FROM send_jobs_finished;                        -- 42501: nor those of finished jobs
SELECT id, status FROM send_jobs_finished ORDER BY id;          -- the finished jobs' own table
SELECT job_id, kind, claim_generation FROM send_job_events;
SELECT queue, ready, in_flight, sent_5m, cancelled_5m FROM sendjobs_stats();
SELECT sendjobs_purge('0 seconds');                            -- 42501: not an admin
SELECT sendjobs_notify('default', true);                       -- 42501: not an admin
RESET ROLE;
SELECT id, status FROM shop.payments ORDER BY id;

-- Linking needs the linker's own rights on what the stamp writes: workers stamp with
-- theirs, so an admin that may not touch a table must not make them write it. Before
-- 0.2.1, an admin without a privilege on shop.hr_users linked it with on_sent => 'fired'
-- and the next applied finalize of a job for that user set its status.
CREATE TABLE shop.hr_users (id text PRIMARY KEY, status text NOT NULL DEFAULT 'employed');
GRANT SELECT, UPDATE ON shop.hr_users TO sj_worker;
GRANT USAGE ON SCHEMA shop TO sj_admin;
SET ROLE sj_admin;
SELECT sendjobs_link_transactions('shop.hr_users', 'id', 'status', on_sent => 'fired');  -- 42501
RESET ROLE;
GRANT UPDATE (status) ON shop.hr_users TO sj_admin;
SET ROLE sj_admin;
SELECT sendjobs_link_transactions('shop.hr_users', 'id', 'status', on_sent => 'fired');  -- 42501: no SELECT on the key
RESET ROLE;
REVOKE UPDATE (status) ON shop.hr_users FROM sj_admin;
GRANT SELECT (id) ON shop.hr_users TO sj_admin;
SET ROLE sj_admin;
SELECT sendjobs_link_transactions('shop.hr_users', 'id', 'status', on_sent => 'fired');  -- 42501: no UPDATE on the status
RESET ROLE;
GRANT UPDATE (status) ON shop.hr_users TO sj_admin;
SET ROLE sj_admin;
SELECT sendjobs_link_transactions('shop.hr_users', 'id', 'status', on_sent => 'fired');  -- may: it holds both
SELECT tbl, linked_by FROM sendjobs_transaction_link;
RESET ROLE;
-- The stamp runs as the role that linked the table (restricted, with the search_path of
-- the table's schema and types), whoever finalizes: the linked table's code (its
-- triggers here) runs with the linker's rights, never with a worker's (or a superuser's
-- who finalizes), and workers need no privilege on the table. Before 0.2.1 it ran as the
-- finalizing worker, with the worker's search_path: a table's owner who linked it ran its
-- code as every worker.
REVOKE ALL ON shop.hr_users FROM sj_worker;
CREATE TABLE shop.stamped_by (who name);
GRANT INSERT ON shop.stamped_by TO sj_admin;
CREATE FUNCTION shop.record_stamper() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO shop.stamped_by VALUES (current_user);
    RETURN NEW;
END $$;
CREATE TRIGGER record_stamper BEFORE UPDATE ON shop.hr_users
    FOR EACH ROW EXECUTE FUNCTION shop.record_stamper();
INSERT INTO shop.hr_users VALUES ('u-1');
SET ROLE sj_producer;
SELECT sendjobs_enqueue('{}', 'hr', transaction_id => 'u-1') > 0 AS enqueued;
RESET ROLE;
SET ROLE sj_worker;
SELECT sendjobs_finalize(id, claim_generation, 'sent') FROM sendjobs_claim(1, '1 minute', 'hr');
RESET ROLE;
SELECT who FROM shop.stamped_by;
SELECT id, status FROM shop.hr_users;
-- A superuser's finalize stamps as the linker too.
SELECT sendjobs_enqueue('{}', 'hr', transaction_id => 'u-1') > 0 AS enqueued;
SELECT sendjobs_finalize(id, claim_generation, 'failed') FROM sendjobs_claim(1, '1 minute', 'hr');
SELECT who FROM shop.stamped_by;
-- A link whose role was dropped: its stamp fails (42704, with a hint to link again) and
-- the finalize changes nothing, as does an enqueue for a linked row; linking again mends
-- it.
CREATE ROLE sj_linker;
GRANT USAGE ON SCHEMA shop TO sj_linker;
GRANT SELECT, UPDATE ON shop.hr_users TO sj_linker;
SELECT sendjobs_grant('sj_linker', 'admin');
SET ROLE sj_linker;
SELECT sendjobs_link_transactions('shop.hr_users');
RESET ROLE;
SELECT sendjobs_enqueue('{}', 'hr', transaction_id => 'u-1') AS hr_job \gset
SELECT claim_generation FROM sendjobs_claim(1, '1 minute', 'hr');
SET client_min_messages = warning;
DROP OWNED BY sj_linker;
DROP ROLE sj_linker;
RESET client_min_messages;
SELECT sendjobs_finalize(:hr_job, 1, 'sent');                  -- 42704
SELECT sendjobs_enqueue('{}', 'hr', transaction_id => 'u-1');  -- 42704
SELECT status, claim_generation FROM send_jobs WHERE id = :hr_job;
SELECT sendjobs_link_transactions('shop.hr_users');
SELECT sendjobs_finalize(:hr_job, 1, 'sent');
DROP TABLE shop.stamped_by;
DROP FUNCTION shop.record_stamper() CASCADE;
SELECT sendjobs_link_transactions('shop.payments');
DROP TABLE shop.hr_users;
REVOKE USAGE ON SCHEMA shop FROM sj_admin;

-- Every direct write a producer, worker, monitor or admin could try: refused (42501),
-- and nothing changes. Job 2 is in flight under generation 1 while they try.
SELECT id, claim_generation FROM sendjobs_claim(1, '1 hour');
CREATE FUNCTION pg_temp.queue_state() RETURNS text LANGUAGE sql AS $$
    SELECT md5(concat_ws('|',
        (SELECT string_agg(j::text, ';' ORDER BY id) FROM send_jobs j),
        (SELECT string_agg(e::text, ';' ORDER BY job_id) FROM send_job_events e),
        (SELECT string_agg(l::text, ';') FROM sendjobs_transaction_link l),
        (SELECT string_agg(q::text, ';') FROM sendjobs_queues q),
        (SELECT string_agg(k::text, ';' ORDER BY k) FROM send_job_keys k)))
$$;
CREATE FUNCTION pg_temp.sqlstate_as(who text, statement text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SET LOCAL ROLE %I', who);
    EXECUTE statement;
    RESET ROLE;
    RETURN '00000';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;  -- the block's subtransaction is gone, and the role with it
END $$;
CREATE TABLE before AS SELECT pg_temp.queue_state() AS state;
SELECT who, attack, pg_temp.sqlstate_as(who, attack) AS sqlstate
  FROM unnest(ARRAY['sj_producer', 'sj_worker', 'sj_monitor', 'sj_admin']) AS who
 CROSS JOIN unnest(ARRAY[
    -- finish a job another worker holds (its holder would get stale, no event, no stamp)
    $a$UPDATE send_jobs SET status = 'sent', lease_expires_at = NULL, finished_at = now() WHERE id = 2$a$,
    -- roll a generation back, so that a superseded claim's finalize applies
    $a$UPDATE send_jobs SET claim_generation = claim_generation - 1 WHERE id = 2$a$,
    -- revive a finished job
    $a$UPDATE send_jobs SET status = 'pending', finished_at = NULL WHERE id = 1$a$,
    -- forge an outbox event
    $a$INSERT INTO send_job_events (job_id, kind, claim_generation) VALUES (2, 'sent', 1)$a$,
    -- enqueue a job that is already sent, or with an id of one's choosing
    $a$INSERT INTO send_jobs (payload, status, finished_at) VALUES ('{}', 'sent', now())$a$,
    $a$INSERT INTO send_jobs (id, payload) OVERRIDING SYSTEM VALUE VALUES (1000, '{}')$a$,
    $a$DELETE FROM send_jobs$a$,
    $a$DELETE FROM send_job_events$a$,
    $a$TRUNCATE send_jobs CASCADE$a$,
    $a$UPDATE sendjobs_transaction_link SET on_sent = 'failed'$a$,
    -- turn wake-ups on, or make a pending job look like a redrive of another
    $a$INSERT INTO sendjobs_queues VALUES ('default', true)$a$,
    $a$UPDATE send_jobs SET redrive_of = 1 WHERE id = 2$a$,
    $a$SELECT setval('send_jobs_id_seq', 1)$a$,
    -- through the finished jobs' table: forge a finished job, revive or rewrite one
    $a$INSERT INTO send_jobs_finished (payload, status, finished_at) VALUES ('{}', 'sent', now())$a$,
    $a$UPDATE send_jobs_finished SET last_error = 'forged' WHERE id = 1$a$,
    $a$DELETE FROM send_jobs_finished$a$,
    -- take an idempotency key, or free one that a job holds
    $a$INSERT INTO send_job_keys VALUES ('k-attack', 1)$a$,
    $a$DELETE FROM send_job_keys$a$]) AS attack
 ORDER BY 1, 2;
SELECT state = pg_temp.queue_state() AS nothing_changed FROM before;
-- The holder of job 2 still finishes it.
SET ROLE sj_worker;
SELECT sendjobs_finalize(2, 1, 'failed', 'HTTP 410');
RESET ROLE;
-- Ids are GENERATED ALWAYS: not even the owner sets one by accident.
INSERT INTO send_jobs (id, payload) VALUES (1000, '{}');

-------------------------------------------------------------------------------------
-- 3. Functions and operators planted on the search_path never run
-------------------------------------------------------------------------------------

-- An attacker with CREATE on a schema plants, with bodies that record each call:
--   better-match variants, which beat pg_catalog's wherever they are on the path:
--     count(text), oid = regclass, float8 / numeric, name = text;
--   exact-type variants, which win where the schema comes before pg_catalog:
--     bigint = bigint, text = text (each answering true), and a table named send_jobs.
CREATE ROLE sj_attacker;
CREATE SCHEMA planted AUTHORIZATION sj_attacker;
GRANT USAGE ON SCHEMA planted TO PUBLIC;
CREATE TABLE planted.send_jobs (LIKE public.send_jobs);
ALTER TABLE planted.send_jobs OWNER TO sj_attacker;
GRANT ALL ON planted.send_jobs TO PUBLIC;
SET ROLE sj_attacker;
CREATE TABLE planted.hits (what text);
GRANT INSERT, SELECT ON planted.hits TO PUBLIC;
CREATE FUNCTION planted.hit(what text) RETURNS boolean LANGUAGE sql AS
    $$ INSERT INTO planted.hits VALUES (what) RETURNING true $$;
CREATE FUNCTION planted.count(text) RETURNS bigint LANGUAGE sql AS
    $$ SELECT CASE WHEN planted.hit('count(text)') THEN 0::bigint END $$;
CREATE FUNCTION planted.oid_eq_regclass(oid, regclass) RETURNS boolean LANGUAGE sql AS
    $$ SELECT planted.hit('oid = regclass') AND $1 OPERATOR(pg_catalog.=) $2::oid $$;
CREATE OPERATOR planted.= (FUNCTION = planted.oid_eq_regclass, LEFTARG = oid, RIGHTARG = regclass);
CREATE FUNCTION planted.float8_div_numeric(float8, numeric) RETURNS float8 LANGUAGE sql AS
    $$ SELECT CASE WHEN planted.hit('float8 / numeric') THEN 0::float8 END $$;
CREATE OPERATOR planted./ (FUNCTION = planted.float8_div_numeric, LEFTARG = float8, RIGHTARG = numeric);
CREATE FUNCTION planted.name_eq_text(name, text) RETURNS boolean LANGUAGE sql AS
    $$ SELECT planted.hit('name = text') AND $1::text OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR planted.= (FUNCTION = planted.name_eq_text, LEFTARG = name, RIGHTARG = text);
CREATE FUNCTION planted.bigint_eq(bigint, bigint) RETURNS boolean LANGUAGE sql AS
    $$ SELECT planted.hit('bigint = bigint') $$;
CREATE OPERATOR planted.= (FUNCTION = planted.bigint_eq, LEFTARG = bigint, RIGHTARG = bigint);
CREATE FUNCTION planted.text_eq(text, text) RETURNS boolean LANGUAGE sql AS
    $$ SELECT planted.hit('text = text') $$;
CREATE OPERATOR planted.= (FUNCTION = planted.text_eq, LEFTARG = text, RIGHTARG = text);
RESET ROLE;

-- Every function, called by a fresh session (no plan kept from before) whose search_path
-- puts the planted schema first, before pg_catalog; then, in another fresh session,
-- with the planted schema as a shared schema after it. Each call's answer is the one
-- the untouched extension gives: a bogus generation stays stale, a running lease is not
-- reclaimed, the backoff is the configured one. The business table here has an integer
-- key (before 0.2.1 the business-row stamp ran with the caller's own search_path, where
-- text = text would have been the caller's planted operator; it now runs with the path
-- of the table's schema and types, and the key could be text as well).
CREATE TABLE shop.orders (id int PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
INSERT INTO shop.orders (id) VALUES (1), (2), (3);
SELECT sendjobs_enqueue('{}', transaction_id => '1') AS job_a \gset
\c
SET search_path = planted, pg_catalog, public;
SELECT sendjobs_link_transactions('shop.orders');
SELECT sendjobs_guard_terminal('shop.orders');
SELECT sendjobs_enqueue('{}', transaction_id => '2') AS job_b \gset
SELECT id - :job_a AS nth, claim_generation FROM sendjobs_claim(10, '1 hour') ORDER BY id;
SELECT count(*) AS reclaimed_while_leased FROM sendjobs_claim(10, '1 hour');
SELECT sendjobs_finalize(:job_a, 99, 'sent') AS bogus_generation;
SELECT sendjobs_heartbeat(:job_a, 99) AS bogus_heartbeat;
SELECT id - :job_a AS nth, result FROM sendjobs_finalize_batch(ARRAY[:job_a, :job_b]::int8[], ARRAY[99, 99], 'sent');
SET sendjobs.retry_backoff_base = '10s';
SELECT sendjobs_finalize(:job_a, 1, 'retry');
SELECT sendjobs_finalize(:job_b, 1, 'sent');
UPDATE shop.orders SET status = 'failed' WHERE id OPERATOR(pg_catalog.=) 2;  -- the guard refuses
\c
SET search_path = public, planted;
SELECT sendjobs_enqueue('{}', transaction_id => '3', idempotency_key => 'k') AS job_c \gset
SELECT sendjobs_enqueue('{}', idempotency_key => 'k') = :job_c AS job_c_again;  -- (takes an id of the identity)
SELECT id - :job_a AS nth, claim_generation FROM sendjobs_claim(10, '1 hour');
SELECT sendjobs_finalize(:job_c, 1, 'retry');
SELECT sendjobs_unlink_transactions();
RESET search_path;
SELECT id - :job_a AS nth, status, attempts, claim_generation,
       next_attempt_at - clock_timestamp() > interval '5 seconds' AS backed_off
  FROM send_jobs WHERE id IN (:job_a, :job_b, :job_c) ORDER BY id;
SELECT id, status FROM shop.orders ORDER BY id;
SELECT count(*) AS planted_calls FROM planted.hits;
SELECT count(*) AS rows_in_the_planted_table FROM planted.send_jobs;

-------------------------------------------------------------------------------------
-- 4. Hostile identifiers
-------------------------------------------------------------------------------------

CREATE TABLE "odd ""table""; DROP TABLE x; --" (
    "key'); DROP TABLE x; --" text PRIMARY KEY,
    "st""at us" text NOT NULL DEFAULT 'pending');
INSERT INTO "odd ""table""; DROP TABLE x; --" VALUES ('it''s');
SELECT sendjobs_guard_terminal('"odd ""table""; DROP TABLE x; --"', 'st"at us');
SELECT sendjobs_link_transactions('"odd ""table""; DROP TABLE x; --"', 'key''); DROP TABLE x; --', 'st"at us');
SELECT sendjobs_enqueue('{}', transaction_id => 'it''s') AS job;
SELECT sendjobs_finalize(id, claim_generation, 'sent') FROM sendjobs_claim(1, '1 minute');
SELECT * FROM "odd ""table""; DROP TABLE x; --";
SELECT sendjobs_unlink_transactions();

-------------------------------------------------------------------------------------
-- 5. Settings
-------------------------------------------------------------------------------------

-- A worker may choose its own lease and backoff, not the limits set on it.
SET ROLE sj_worker;
SET sendjobs.default_lease = '30s';
SET sendjobs.retry_backoff_base = '1s';
SET sendjobs.max_batch = 5000;            -- 42501
SET sendjobs.min_lease = 0;               -- 42501
SET sendjobs.max_lease = '1d';            -- 42501
SET sendjobs.guard_action = error;        -- 42501
RESET ROLE;
RESET sendjobs.default_lease;
RESET sendjobs.retry_backoff_base;
-- Bad values and misspelled names fail at SET time (the library is loaded here).
SET sendjobs.guard_action = 'bogus';      -- 22023
\set VERBOSITY sqlstate
SET sendjobs.default_lease = '-1s';       -- 22023 (18's message names the units: errors.sql)
\set VERBOSITY default
SET sendjobs.max_batch = 0;               -- 22023
SET sendjobs.defualt_lease = '1s';        -- 42602: the prefix is reserved
-- An operator's floor on leases: shorter ones are refused, also by default.
SET sendjobs.min_lease = '10s';
SELECT sendjobs_enqueue('{}') AS job;
SELECT * FROM sendjobs_claim(1, '1 second');   -- 22023
SET sendjobs.default_lease = '5s';
SELECT * FROM sendjobs_claim(1);               -- 22023
RESET sendjobs.default_lease;
RESET sendjobs.min_lease;
-- And its ceiling (1 hour by default): longer leases are refused, among them a bare
-- number meant as milliseconds, which Postgres reads as seconds (node-postgres sends a
-- lease of 5000 as the text '5000': 83 minutes).
SELECT * FROM sendjobs_claim(1, '5000');       -- 22023
SELECT sendjobs_heartbeat(1, 1, '2 hours');    -- 22023
SET sendjobs.default_lease = '2h';
SELECT * FROM sendjobs_claim(1);               -- 22023
RESET sendjobs.default_lease;
BEGIN;
SET LOCAL sendjobs.max_lease = '2h';
SELECT count(*) AS claimed_for_83_minutes FROM sendjobs_claim(1, '5000');
ROLLBACK;
-- With the library preloaded, a bad value fails at SET time as a session's first
-- statement too (without it, Postgres would keep it as a placeholder until the load).
SELECT 'sendjobs-' || extversion AS library FROM pg_extension WHERE extname = 'sendjobs' \gset
ALTER DATABASE :"DBNAME" SET session_preload_libraries = :'library';
\c
SET sendjobs.guard_action = 'bogus';      -- 22023
SET sendjobs.max_batch = 5000;            -- allowed here: we are a superuser
SET ROLE sj_worker;
SET sendjobs.max_batch = 6000;            -- 42501
RESET ROLE;
ALTER DATABASE :"DBNAME" RESET session_preload_libraries;
\c

-------------------------------------------------------------------------------------
-- 6. A renamed extension schema
-------------------------------------------------------------------------------------

SET client_min_messages = warning;
DROP EXTENSION sendjobs CASCADE;
RESET client_min_messages;
CREATE SCHEMA q;
CREATE EXTENSION sendjobs SCHEMA q;
SELECT q.sendjobs_enqueue('{}') AS job;
ALTER SCHEMA q RENAME TO q2;
-- The same session goes on: its kept plans follow the schema.
SELECT id, claim_generation FROM q2.sendjobs_claim(1, '1 minute');
SELECT q2.sendjobs_finalize(1, 1, 'sent');

-- A producer may withdraw a send it enqueued (sendjobs_cancel).
GRANT USAGE ON SCHEMA q2 TO sj_producer;
SELECT q2.sendjobs_grant('sj_producer', 'producer');
SET ROLE sj_producer;
SELECT q2.sendjobs_cancel(q2.sendjobs_enqueue('{}'));
RESET ROLE;

-- A quote in the schema's name: no statement of ours puts the schema into a literal
-- (the keyed enqueue's sequence, the stats' table and the access levels' privileges
-- are passed as oids or put in as identifiers).
ALTER SCHEMA q2 RENAME TO "it's";
SELECT "it's".sendjobs_enqueue('{}', idempotency_key => 'k') =
       "it's".sendjobs_enqueue('{}', idempotency_key => 'k') AS same_job;
SELECT count(*) AS queues FROM "it's".sendjobs_stats();
SELECT "it's".sendjobs_grant('sj_monitor', 'monitor');
SET ROLE sj_monitor;
SELECT count(*) AS jobs FROM "it's".send_jobs;
RESET ROLE;

-- Leave no role behind (roles are cluster-wide).
SET client_min_messages = warning;
DROP EXTENSION sendjobs CASCADE;
DROP SCHEMA planted, shop, "it's" CASCADE;
DROP TABLE "odd ""table""; DROP TABLE x; --";
DROP VIEW sendjobs_objects;
DROP TABLE before;
DO $$ DECLARE r text; BEGIN
  FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'sj\_%' LOOP
    EXECUTE format('DROP OWNED BY %I; DROP ROLE %I', r, r);
  END LOOP;
END $$;
RESET client_min_messages;
