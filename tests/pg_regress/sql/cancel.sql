-- sendjobs_cancel: a job that has not finished becomes cancelled, terminal like sent and
-- failed, with one 'cancelled' event; its business row is not stamped.

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
-- sendjobs_cancel
-------------------------------------------------------------------------------------

-- A pending job: cancelled, with one 'cancelled' event; its payment is not stamped.
SELECT sendjobs_enqueue('{"n": 6}', transaction_id => 'p6') AS pending_job \gset
SELECT sendjobs_cancel(:pending_job);
SELECT status, finished_at IS NOT NULL AS finished FROM send_jobs WHERE id = :pending_job;
SELECT kind, transaction_id FROM send_job_events WHERE job_id = :pending_job;
SELECT status FROM payments WHERE id = 'p6';
-- Never claimed again; cancelling it again is stale.
SELECT count(*) AS claimed FROM sendjobs_claim(10, '1 hour');
SELECT sendjobs_cancel(:pending_job);
-- An in_flight job: its holder's heartbeat and finalize are stale afterwards.
SELECT sendjobs_enqueue('{"n": 7}') AS held_job \gset
SELECT id, claim_generation FROM sendjobs_claim(1, '1 hour');
SELECT sendjobs_cancel(:held_job);
SELECT sendjobs_heartbeat(:held_job, 1);
SELECT sendjobs_finalize(:held_job, 1, 'sent');
SELECT status, lease_expires_at IS NULL AS no_lease FROM send_jobs WHERE id = :held_job;
-- Finished jobs stay as they are: one failed, one sent.
SELECT sendjobs_enqueue('{"n": 8}') AS failed_job \gset
SELECT sendjobs_finalize(id, claim_generation, 'failed') FROM sendjobs_claim(1, '1 hour');
SELECT sendjobs_enqueue('{"n": 9}') AS sent_job \gset
SELECT sendjobs_finalize(id, claim_generation, 'sent') FROM sendjobs_claim(1, '1 hour');
SELECT sendjobs_cancel(:failed_job) AS failed_job, sendjobs_cancel(:sent_job) AS sent_job;
SELECT id = :failed_job AS failed_job, status FROM send_jobs
 WHERE id IN (:failed_job, :sent_job) ORDER BY id;

-------------------------------------------------------------------------------------
-- The invariants, over everything this file did
-------------------------------------------------------------------------------------

-- tests/pg_regress/include/invariants.psql
\getenv abs_srcdir PG_ABS_SRCDIR
\set invariants :abs_srcdir '/include/invariants.psql'
\i :invariants

DROP TABLE payments;
DROP EXTENSION sendjobs;
