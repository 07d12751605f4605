-- The upgrade window (tests/upgrade/scenario.sh): this release's files are installed and
-- the database is still at the previous release's catalog. A role with no privilege may
-- do nothing with the queue (each call gets 42501, as the previous release gives it),
-- and the previous release's functions work for those who may call them: the catalog
-- keeps the library of its own release (docs/decisions/0001-a-library-per-release.md).
\set ON_ERROR_STOP on
\set SHOW_CONTEXT never
SET client_min_messages = error;
DROP ROLE IF EXISTS window_nobody;
CREATE ROLE window_nobody LOGIN;
GRANT USAGE ON SCHEMA public TO window_nobody;
SET ROLE window_nobody;
CREATE FUNCTION pg_temp.expect_denied(call text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE call;
    RAISE EXCEPTION 'upgrade window: % ran for a role with no privilege', call;
EXCEPTION WHEN insufficient_privilege THEN
    NULL;
END $$;
SELECT pg_temp.expect_denied('SELECT * FROM sendjobs_claim(10, ''1 minute'')');
SELECT pg_temp.expect_denied('SELECT sendjobs_finalize(3, 1, ''sent'')');
SELECT pg_temp.expect_denied('SELECT sendjobs_heartbeat(3, 1, ''1 minute'')');
SELECT pg_temp.expect_denied('SELECT sendjobs_enqueue(''{}'')');
SELECT pg_temp.expect_denied('SELECT sendjobs_unlink_transactions()');
SELECT pg_temp.expect_denied('SELECT sendjobs_link_transactions(''transactions'', ''id'', ''status'', ''fired'')');
SELECT pg_temp.expect_denied('SELECT payload FROM send_jobs');
RESET ROLE;
DROP OWNED BY window_nobody;
DROP ROLE window_nobody;
-- Its owner's admin functions work, as the previous release made them (before 0.2.1 the
-- new library served them and failed with XX000).
SELECT sendjobs_link_transactions('transactions', 'id', 'status');
SELECT 'upgrade window checks passed' AS result;
