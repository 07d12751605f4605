-- The split history: a finished job leaves send_jobs itself for its child table
-- send_jobs_finished (docs/decisions), and SELECT ... FROM send_jobs still reads both.

SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP TABLE IF EXISTS payments;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never

-- One job in each status: pending, in_flight, sent, failed, cancelled.
SELECT sendjobs_enqueue('{"n": 1}') AS pending_job \gset
SELECT sendjobs_enqueue('{"n": 2}', run_at => now() - interval '1 hour');
SELECT sendjobs_enqueue('{"n": 3}', run_at => now() - interval '1 hour');
SELECT sendjobs_enqueue('{"n": 4}', run_at => now() - interval '1 hour');
SELECT count(*) AS claimed FROM sendjobs_claim(3, '1 hour');
SELECT sendjobs_finalize(2, 1, 'sent'), sendjobs_finalize(3, 1, 'failed');
SELECT sendjobs_cancel(sendjobs_enqueue('{"n": 5}'));

-------------------------------------------------------------------------------------
-- Finished jobs leave send_jobs itself for send_jobs_finished
-------------------------------------------------------------------------------------

-- Every finished job is in send_jobs_finished, every unfinished one in send_jobs itself;
-- SELECT ... FROM send_jobs reads both.
SELECT tableoid::regclass AS in_table, status, count(*) FROM send_jobs GROUP BY 1, 2 ORDER BY 1, 2;
-- An idempotency key stays taken when its job finishes: enqueueing it again returns the
-- finished job and creates nothing.
SELECT sendjobs_enqueue('{"n": 9}', idempotency_key => 'k9') AS job9 \gset
SELECT sendjobs_cancel(:job9);
SELECT sendjobs_enqueue('{"n": 10}', idempotency_key => 'k9') = :job9 AS same_job,
       (SELECT count(*) FROM send_jobs WHERE idempotency_key = 'k9') AS jobs_with_k9;
-- A job deleted by hand, not by sendjobs_purge, leaves its key: enqueueing the key then
-- fails (55000) rather than return an id that no longer exists.
BEGIN;
DELETE FROM send_jobs WHERE id = :job9;
SELECT sendjobs_enqueue('{"n": 10}', idempotency_key => 'k9');
ROLLBACK;
-- Not even the owner finishes a job in place, nor keeps a live one among the finished.
\set VERBOSITY terse
UPDATE ONLY send_jobs SET status = 'cancelled', finished_at = now() WHERE id = :pending_job;
INSERT INTO send_jobs_finished (payload) VALUES ('{}');
\set VERBOSITY default

-------------------------------------------------------------------------------------
-- The invariants, over everything this file did
-------------------------------------------------------------------------------------

-- tests/pg_regress/include/invariants.psql
\getenv abs_srcdir PG_ABS_SRCDIR
\set invariants :abs_srcdir '/include/invariants.psql'
\i :invariants

DROP EXTENSION sendjobs;
