-- The install and update scripts are immune to planted objects: every operator and
-- function they use resolves in pg_catalog, whatever the extension's schema holds.
-- A role with CREATE on that schema could otherwise plant an operator or function that
-- matches better than pg_catalog's (=(oid, regclass) beats =(oid, oid), which needs a
-- cast) and have CREATE EXTENSION or ALTER EXTENSION ... UPDATE run it as the superuser.
-- Here the schema is planted with an operator for every operator name and pair of types
-- the scripts could compare, and a function for every name the scripts call, with one and
-- two arguments of those types; each writes to a log when it runs. Run on a fresh install
-- (this release's script) and, by tests/upgrade/upgrade.sh, on one created at the oldest
-- release and updated along every update script.

-- A database of its own, dropped at the end: thousands of planted objects are more than
-- one DROP SCHEMA ... CASCADE can lock.
\set regress_db :DBNAME
SET client_min_messages = warning;
DROP DATABASE IF EXISTS sendjobs_trap;
RESET client_min_messages;
CREATE DATABASE sendjobs_trap TEMPLATE template0;
\c sendjobs_trap
CREATE TABLE trap_fired (what text);
CREATE SCHEMA trap;
-- The types the scripts' expressions can hold, and the polymorphic ones.
CREATE TEMP TABLE trap_types (t text);
INSERT INTO trap_types VALUES ('oid'), ('regclass'), ('regproc'), ('regrole'),
    ('regnamespace'), ('name'), ('text'), ('"char"'), ('smallint'), ('integer'), ('bigint'),
    ('boolean'), ('timestamptz'), ('timestamp'), ('interval'), ('jsonb'), ('text[]'), ('anyelement');
-- Every name the installed scripts call without a schema (a name written after a "." is
-- qualified, and so immune): before a "(", but the extension's own. The look-behind keeps
-- matches from overlapping, so a call nested in another's arguments is seen too.
CREATE TEMP TABLE trap_names AS
SELECT DISTINCT lower(m[1]) AS name
  FROM pg_ls_dir((SELECT setting FROM pg_config WHERE name = 'SHAREDIR') || '/extension') AS f,
       LATERAL pg_read_file((SELECT setting FROM pg_config WHERE name = 'SHAREDIR') || '/extension/' || f) AS script,
       LATERAL regexp_matches(script, '(?<![.A-Za-z_0-9"$])([A-Za-z_][A-Za-z_0-9$]*)\s*\(', 'g') AS m
 WHERE f LIKE 'sendjobs--%.sql' AND lower(m[1]) NOT LIKE 'sendjobs%';
DO $$
DECLARE
    op text;
    l text;
    r text;
    fn text;
    n int := 0;
BEGIN
    FOR l IN SELECT t FROM trap_types LOOP
        FOR r IN SELECT t FROM trap_types LOOP
            n := n + 1;
            EXECUTE format('CREATE FUNCTION trap.trap_op_%s(%s, %s) RETURNS boolean LANGUAGE plpgsql
                            AS $f$BEGIN INSERT INTO public.trap_fired VALUES (%L); RETURN false; END$f$',
                           n, l, r, format('operator(%s, %s)', l, r));
            FOREACH op IN ARRAY ARRAY['=', '<>', '<', '>', '<=', '>=', '-', '+', '||', '~~', '!~~', '@>', '<@', '&&'] LOOP
                EXECUTE format('CREATE OPERATOR trap.%s (FUNCTION = trap.trap_op_%s, LEFTARG = %s, RIGHTARG = %s)',
                               op, n, l, r);
            END LOOP;
            FOR fn IN SELECT name FROM trap_names LOOP
                EXECUTE format('CREATE FUNCTION trap.%I(%s, %s) RETURNS boolean LANGUAGE plpgsql
                                AS $f$BEGIN INSERT INTO public.trap_fired VALUES (%L); RETURN false; END$f$',
                               fn, l, r, format('%s(%s, %s)', fn, l, r));
            END LOOP;
        END LOOP;
        FOR fn IN SELECT name FROM trap_names LOOP
            EXECUTE format('CREATE FUNCTION trap.%I(%s) RETURNS boolean LANGUAGE plpgsql
                            AS $f$BEGIN INSERT INTO public.trap_fired VALUES (%L); RETURN false; END$f$',
                           fn, l, format('%s(%s)', fn, l));
        END LOOP;
    END LOOP;
    FOR fn IN SELECT name FROM trap_names LOOP
        EXECUTE format('CREATE FUNCTION trap.%I() RETURNS boolean LANGUAGE plpgsql
                        AS $f$BEGIN INSERT INTO public.trap_fired VALUES (%L); RETURN false; END$f$',
                       fn, format('%s()', fn));
    END LOOP;
END $$;
-- Enough was planted to catch what 0.2.0's scripts did.
SELECT count(*) > 1000 AS operators_planted FROM pg_operator WHERE oprnamespace = 'trap'::regnamespace;
SELECT count(*) > 10 AS names_planted FROM trap_names;

CREATE EXTENSION sendjobs SCHEMA trap;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'sendjobs') AS at_this_release
  FROM pg_extension WHERE extname = 'sendjobs';
-- None ran.
SELECT what FROM trap_fired ORDER BY what;
-- The functions run as they should in that schema (their statements pin their own path).
SELECT trap.sendjobs_enqueue('{}') AS enqueued;
SELECT id, claim_generation FROM trap.sendjobs_claim(1);
SELECT trap.sendjobs_finalize(1, 1, 'sent');
SELECT what FROM trap_fired ORDER BY what;

\c :regress_db
DROP DATABASE sendjobs_trap;
