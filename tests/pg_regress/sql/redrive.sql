-- sendjobs_redrive: a failed job is sent again as a new job; the failed one stays as
-- history, with its event.

SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP TABLE IF EXISTS payments;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never
CREATE TABLE payments (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
INSERT INTO payments SELECT 'p' || g FROM generate_series(1, 6) g;
SELECT sendjobs_guard_terminal('payments');
SELECT sendjobs_link_transactions('payments');

-- Job 1 (payment p1) fails.
SELECT sendjobs_enqueue('{"n": 1}', transaction_id => 'p1', max_attempts => 2);
SELECT sendjobs_finalize(id, claim_generation, 'failed', 'HTTP 410')
  FROM sendjobs_claim(1, '1 hour');
SELECT id, status, last_error FROM send_jobs WHERE id = 1;
SELECT status FROM payments WHERE id = 'p1';

-------------------------------------------------------------------------------------
-- sendjobs_redrive
-------------------------------------------------------------------------------------

-- Job 1 failed (payment p1 'failed'): sent again as a new job, due now, same payload,
-- transaction and max_attempts; the failed job and its event stay. The payment goes
-- failed -> pending through the guard's declared exit.
SELECT id, new_id AS redriven FROM sendjobs_redrive(ARRAY[1]) \gset
SELECT :id AS id, :redriven - :id > 0 AS new_job;
SELECT id, status, payload, transaction_id, max_attempts, attempts, redrive_of, idempotency_key
  FROM send_jobs WHERE id IN (1, :redriven) ORDER BY id;
SELECT status FROM payments WHERE id = 'p1';
-- Redriving it again returns the same new job and creates nothing.
SELECT new_id = :redriven AS same_job, (SELECT count(*) FROM send_jobs) AS jobs
  FROM sendjobs_redrive(ARRAY[1]);
-- The new job runs like any other: claimed, sent, its own one event; p1 becomes success.
SELECT id = :redriven AS redriven_job, claim_generation FROM sendjobs_claim(1, '1 hour');
SELECT sendjobs_finalize(:redriven, 1, 'sent');
SELECT job_id = :redriven AS redriven_job, kind FROM send_job_events WHERE job_id IN (1, :redriven) ORDER BY job_id;
SELECT status FROM payments WHERE id = 'p1';
-- Its new job has finished, and so left send_jobs itself for send_jobs_finished:
-- redriving job 1 again still returns it, and creates nothing.
SELECT new_id = :redriven AS same_job, (SELECT count(*) FROM send_jobs) AS jobs
  FROM sendjobs_redrive(ARRAY[1]);
-- A guard without the exit keeps the payment failed (WARNING); the job is redriven.
UPDATE payments SET status = 'failed' WHERE id = 'p2';
SELECT sendjobs_enqueue('{"n": 8}', transaction_id => 'p2', max_attempts => 1) AS job8 \gset
SELECT id FROM sendjobs_claim(1, '1 hour');
SELECT sendjobs_finalize(:job8, 1, 'failed', 'partner said no');
DROP TRIGGER zz_sendjobs_guard_terminal ON payments;
SELECT sendjobs_guard_terminal('payments', exits => '{}');
SELECT count(*) AS redriven FROM sendjobs_redrive(ARRAY[:job8]);
SELECT status FROM payments WHERE id = 'p2';

-------------------------------------------------------------------------------------
-- The invariants, over everything this file did
-------------------------------------------------------------------------------------

-- tests/pg_regress/include/invariants.psql
\getenv abs_srcdir PG_ABS_SRCDIR
\set invariants :abs_srcdir '/include/invariants.psql'
\i :invariants

DROP TABLE payments;
DROP EXTENSION sendjobs;
