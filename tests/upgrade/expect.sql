-- The checks of tests/upgrade/verify.sql and major-verify.sql: psql stops at the first
-- error, and pg_temp.expect(ok, what) raises one (and so fails the test) when ok is not
-- true.
\set ON_ERROR_STOP on
\set SHOW_CONTEXT never
SET client_min_messages = error;
CREATE FUNCTION pg_temp.expect(ok boolean, what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'upgrade: % does not hold', what;
    END IF;
END $$;
