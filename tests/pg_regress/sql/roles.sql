-- Roles: what PostgreSQL's role model lets a role do around the access levels, on every
-- supported major. 16 gave membership its INHERIT and SET options and narrowed what
-- CREATEROLE may grant; 17 added the MAINTAIN privilege and pg_maintain. The levels give
-- exactly their functions whatever the major: a role gets them only by a grant, or as a
-- member of a role that holds one (as Postgres's membership rules decide), and no level,
-- membership or predefined role lets it write the queue tables. Each check raises when it
-- does not hold, so the output is the same on every major; a check of a later major's
-- feature is made there only.

-- Start afresh, whatever an earlier test may have left behind.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DO $$ DECLARE r text; BEGIN
  FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'sjr\_%' ORDER BY rolname DESC LOOP
    EXECUTE format('DROP OWNED BY %I; DROP ROLE %I', r, r);
  END LOOP;
END $$;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never
SELECT sendjobs_enqueue('{}') AS job;

-- As role `who`, `call` fails with SQLSTATE `want` ('00000': it succeeds). As its session
-- user (SET SESSION AUTHORIZATION): SET ROLE is checked against the session user, which
-- would otherwise be this superuser.
CREATE FUNCTION pg_temp.check_as(who text, call text, want text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    got text := '00000';
BEGIN
    EXECUTE format('SET SESSION AUTHORIZATION %I', who);
    BEGIN
        EXECUTE call;
    EXCEPTION WHEN OTHERS THEN
        got := SQLSTATE;
    END;
    RESET SESSION AUTHORIZATION;
    IF got <> want THEN
        RAISE EXCEPTION 'roles: as %, "%" gave %, expected %', who, call, got, want;
    END IF;
END $$;
CREATE FUNCTION pg_temp.major() RETURNS int LANGUAGE sql AS
    $$ SELECT current_setting('server_version_num')::int / 10000 $$;
-- Every direct write on the queue tables, as `who`: each refused (42501).
CREATE FUNCTION pg_temp.no_writes(who text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_temp.check_as(who, 'INSERT INTO send_jobs (payload) VALUES (''{}'')', '42501');
    PERFORM pg_temp.check_as(who, 'UPDATE send_jobs SET claim_generation = 0', '42501');
    PERFORM pg_temp.check_as(who, 'DELETE FROM send_jobs', '42501');
    PERFORM pg_temp.check_as(who, 'DELETE FROM send_jobs_finished', '42501');
    PERFORM pg_temp.check_as(who, 'INSERT INTO send_job_events (job_id, kind, claim_generation) VALUES (1, ''sent'', 1)', '42501');
    PERFORM pg_temp.check_as(who, 'TRUNCATE send_jobs, send_jobs_finished, send_job_keys, send_job_events', '42501');
    PERFORM pg_temp.check_as(who, 'DELETE FROM sendjobs_transaction_link', '42501');
END $$;

-- A group role holds the worker level; its members inherit it (every major).
CREATE ROLE sjr_workers NOLOGIN;
SELECT sendjobs_grant('sjr_workers', 'worker');
CREATE ROLE sjr_member LOGIN;
GRANT sjr_workers TO sjr_member;
DO $$ BEGIN
    PERFORM pg_temp.check_as('sjr_member', 'SELECT count(*) FROM sendjobs_claim(1, ''1 minute'')', '00000');
    PERFORM pg_temp.check_as('sjr_member', 'SELECT sendjobs_enqueue(''{}'')', '42501');
    PERFORM pg_temp.no_writes('sjr_member');
    PERFORM pg_temp.no_writes('sjr_workers');
END $$;

-- 16 and later: a membership WITH INHERIT FALSE gives the level only after SET ROLE; one
-- WITH SET FALSE gives it by inheritance and refuses SET ROLE.
DO $$ BEGIN
    IF pg_temp.major() >= 16 THEN
        CREATE ROLE sjr_no_inherit LOGIN;
        EXECUTE 'GRANT sjr_workers TO sjr_no_inherit WITH INHERIT FALSE';
        PERFORM pg_temp.check_as('sjr_no_inherit', 'SELECT count(*) FROM sendjobs_claim(1)', '42501');
        PERFORM pg_temp.check_as('sjr_no_inherit', 'SET ROLE sjr_workers', '00000');
        CREATE ROLE sjr_no_set LOGIN;
        EXECUTE 'GRANT sjr_workers TO sjr_no_set WITH INHERIT TRUE, SET FALSE';
        PERFORM pg_temp.check_as('sjr_no_set', 'SELECT count(*) FROM sendjobs_claim(1)', '00000');
        PERFORM pg_temp.check_as('sjr_no_set', 'SET ROLE sjr_workers', '42501');
        PERFORM pg_temp.no_writes('sjr_no_inherit');
        PERFORM pg_temp.no_writes('sjr_no_set');
    END IF;
END $$;

-- CREATEROLE: a role that may create roles cannot give one a level: it may not call
-- sendjobs_grant, nor GRANT EXECUTE on a function it does not own (42501).
-- On 16 and later it cannot even make a role a member of one holding a level (it needs
-- ADMIN on it); on 15 it could (CREATEROLE then managed every non-superuser role, a
-- PostgreSQL 15 rule: give CREATEROLE there only to those you would make admins).
CREATE ROLE sjr_creator CREATEROLE LOGIN;
DO $$ BEGIN
    PERFORM pg_temp.check_as('sjr_creator', 'CREATE ROLE sjr_made', '00000');
    PERFORM pg_temp.check_as('sjr_creator', 'SELECT sendjobs_grant(''sjr_made'', ''worker'')', '42501');
    PERFORM pg_temp.check_as('sjr_creator',
        'GRANT EXECUTE ON FUNCTION sendjobs_claim(integer, interval, text) TO sjr_made', '42501');
    IF has_function_privilege('sjr_made', 'sendjobs_claim(integer, interval, text)', 'EXECUTE') THEN
        RAISE EXCEPTION 'roles: a CREATEROLE role gave a role EXECUTE on sendjobs_claim';
    END IF;
    PERFORM pg_temp.check_as('sjr_creator', 'GRANT sjr_workers TO sjr_made',
                             CASE WHEN pg_temp.major() >= 16 THEN '42501' ELSE '00000' END);
    PERFORM pg_temp.no_writes('sjr_creator');
END $$;

-- 17 and later: pg_maintain (MAINTAIN on every table) may vacuum, analyze, reindex and
-- lock the queue tables, and may not write them nor call a function.
DO $$ BEGIN
    IF pg_temp.major() >= 17 THEN
        CREATE ROLE sjr_maintainer LOGIN;
        EXECUTE 'GRANT pg_maintain TO sjr_maintainer';
        PERFORM pg_temp.no_writes('sjr_maintainer');
        PERFORM pg_temp.check_as('sjr_maintainer', 'SELECT count(*) FROM sendjobs_claim(1)', '42501');
        PERFORM pg_temp.check_as('sjr_maintainer', 'SELECT payload FROM send_jobs', '42501');
        PERFORM pg_temp.check_as('sjr_maintainer', 'ANALYZE send_jobs', '00000');
        CREATE ROLE sjr_table_maintainer LOGIN;
        EXECUTE 'GRANT MAINTAIN ON send_jobs TO sjr_table_maintainer';
        PERFORM pg_temp.no_writes('sjr_table_maintainer');
    END IF;
END $$;

-- Nothing above changed the queue: the one job, still pending or held by the claims above.
SELECT count(*) AS jobs, count(*) FILTER (WHERE claim_generation <= 2) AS generations_in_range FROM send_jobs;

SET client_min_messages = warning;
DO $$ DECLARE r text; BEGIN
  FOR r IN SELECT rolname FROM pg_roles WHERE rolname LIKE 'sjr\_%' ORDER BY rolname DESC LOOP
    EXECUTE format('DROP OWNED BY %I; DROP ROLE %I', r, r);
  END LOOP;
END $$;
DROP EXTENSION sendjobs;
RESET client_min_messages;
