-- sendjobs_purge: retention. Finished jobs go with their events and keys, a bounded batch
-- a call; unfinished jobs never do.

SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP TABLE IF EXISTS payments;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never

-- Five finished jobs (sent, failed, cancelled; one holds the idempotency key k9) and two
-- unfinished ones.
SELECT sendjobs_enqueue('{"n": 1}', run_at => now() - interval '1 hour');
SELECT sendjobs_enqueue('{"n": 2}', run_at => now() - interval '1 hour');
SELECT sendjobs_enqueue('{"n": 3}', run_at => now() - interval '1 hour');
SELECT sendjobs_finalize(id, claim_generation, CASE id WHEN 2 THEN 'failed' ELSE 'sent' END)
  FROM sendjobs_claim(3, '1 hour');
SELECT sendjobs_cancel(sendjobs_enqueue('{"n": 4}'));
SELECT sendjobs_enqueue('{"n": 5}', idempotency_key => 'k9') AS job9 \gset
SELECT sendjobs_cancel(:job9);
SELECT sendjobs_enqueue('{"n": 6}');
SELECT sendjobs_enqueue('{"n": 7}', run_at => now() - interval '1 hour');
SELECT count(*) AS claimed FROM sendjobs_claim(1, '1 hour');

-------------------------------------------------------------------------------------
-- sendjobs_purge
-------------------------------------------------------------------------------------

-- Nothing finished an hour ago: nothing goes.
SELECT sendjobs_purge('1 hour');
-- Everything finished before now goes, 3 at a time, with its events; unfinished jobs
-- stay, and so do their (absent) events.
SELECT count(*) FILTER (WHERE finished_at IS NOT NULL) AS finished,
       count(*) FILTER (WHERE finished_at IS NULL) AS unfinished,
       (SELECT count(*) FROM send_job_events) AS events
  FROM send_jobs;
SELECT sendjobs_purge('0 seconds', 3);
SELECT sendjobs_purge('0 seconds', 100);
SELECT sendjobs_purge('0 seconds', 100);
SELECT count(*) FILTER (WHERE finished_at IS NOT NULL) AS finished,
       count(*) FILTER (WHERE finished_at IS NULL) AS unfinished,
       (SELECT count(*) FROM send_job_events) AS events
  FROM send_jobs;
-- A purged job's idempotency key goes with it: the key is free again.
SELECT count(*) AS keys_left FROM send_job_keys;
SELECT sendjobs_enqueue('{"n": 11}', idempotency_key => 'k9') <> :job9 AS a_new_job;
SELECT sendjobs_cancel(id) FROM send_jobs WHERE idempotency_key = 'k9';
SELECT sendjobs_purge('0 seconds', 100);

-------------------------------------------------------------------------------------
-- The invariants, over everything this file did
-------------------------------------------------------------------------------------

-- tests/pg_regress/include/invariants.psql
\getenv abs_srcdir PG_ABS_SRCDIR
\set invariants :abs_srcdir '/include/invariants.psql'
\i :invariants

DROP EXTENSION sendjobs;
