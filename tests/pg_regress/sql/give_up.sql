-- Giving up: a job is claimed at most max_attempts times, whatever fails (invariant 8 of
-- docs/contract.md). Leases of '0 seconds' expire at once, so a second claim stands for
-- "the worker died".

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

-------------------------------------------------------------------------------------
-- A job is claimed at most max_attempts times, whatever fails
-------------------------------------------------------------------------------------

-- Job 1 (max_attempts 2, payment p1): its worker dies twice (leases expire unreported).
SELECT sendjobs_enqueue('{"n": 1}', transaction_id => 'p1', max_attempts => 2);
SELECT id, attempts, claim_generation FROM sendjobs_claim(1, '0 seconds');
SELECT id, attempts, claim_generation FROM sendjobs_claim(1, '0 seconds');
-- The third claim meets the expired lease of the last attempt: the job gives up. It is
-- not handed out; it is failed, with its event and its payment stamped.
SELECT count(*) AS claimed FROM sendjobs_claim(1, '0 seconds');
SELECT id, status, attempts, claim_generation, last_error, finished_at IS NOT NULL AS finished,
       lease_expires_at IS NULL AS no_lease
  FROM send_jobs WHERE id = 1;
SELECT job_id, transaction_id, kind, claim_generation, queue FROM send_job_events WHERE job_id = 1;
SELECT status FROM payments WHERE id = 'p1';
-- The worker of the last attempt reports late: stale, nothing changes.
SELECT sendjobs_finalize(1, 2, 'sent');
SELECT sendjobs_heartbeat(1, 2);
SELECT status FROM send_jobs WHERE id = 1;

-- A job that gave up takes no place in the batch: the claim fills it with other work.
SELECT sendjobs_enqueue('{"n": 2}', max_attempts => 1);
SELECT id, attempts FROM sendjobs_claim(1, '0 seconds');
SELECT sendjobs_enqueue('{"n": 3}');
SELECT id, attempts FROM sendjobs_claim(1, '1 hour');
SELECT id, status FROM send_jobs WHERE id IN (2, 3) ORDER BY id;

-- A finalize that can never apply (the guard in error mode refuses the stamp: payment
-- p4 is already 'success') rolls back every time; the job must still give up, and the
-- refused stamp must not keep it alive: it fails with a WARNING, the reason in last_error.
UPDATE payments SET status = 'success' WHERE id = 'p4';
SELECT sendjobs_enqueue('{"n": 4}', transaction_id => 'p4', max_attempts => 1);
SELECT id, attempts FROM sendjobs_claim(1, '0 seconds');
SET sendjobs.guard_action = error;
SELECT sendjobs_finalize(4, 1, 'failed');
SELECT count(*) AS claimed FROM sendjobs_claim(1, '1 hour');
RESET sendjobs.guard_action;
SELECT id, status, last_error FROM send_jobs WHERE id = 4;
SELECT job_id, kind FROM send_job_events WHERE job_id = 4;
SELECT status FROM payments WHERE id = 'p4';

-- The same with a link that cannot stamp at all (its status column renamed).
SELECT sendjobs_enqueue('{"n": 5}', transaction_id => 'p5', max_attempts => 1);
SELECT id, attempts FROM sendjobs_claim(1, '0 seconds');
ALTER TABLE payments RENAME COLUMN status TO state;
SELECT count(*) AS claimed FROM sendjobs_claim(1, '1 hour');
ALTER TABLE payments RENAME COLUMN state TO status;
SELECT id, status, last_error FROM send_jobs WHERE id = 5;

-------------------------------------------------------------------------------------
-- The invariants, over everything this file did
-------------------------------------------------------------------------------------

-- tests/pg_regress/include/invariants.psql
\getenv abs_srcdir PG_ABS_SRCDIR
\set invariants :abs_srcdir '/include/invariants.psql'
\i :invariants

DROP TABLE payments;
DROP EXTENSION sendjobs;
