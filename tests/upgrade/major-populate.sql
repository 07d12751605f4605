-- pg_upgrade from one major to another (tests/upgrade/major.sh): a database on the older
-- major with jobs in every state, a linked and guarded business table, wake-ups on, an
-- access level granted and settings made per database and role. Every id is fixed (an
-- empty table counts from 1); major.sh compares what major-state.sql prints before and
-- after, and major-verify.sql finishes the work on the newer major.
\set ON_ERROR_STOP on
CREATE EXTENSION sendjobs;
CREATE TABLE transactions (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
SELECT sendjobs_guard_terminal('transactions');
SELECT sendjobs_link_transactions('transactions', 'id', 'status');
INSERT INTO transactions SELECT 'tx-' || g FROM generate_series(1, 9) g;
SELECT sendjobs_notify('default', true);
CREATE ROLE major_worker LOGIN;
SELECT sendjobs_grant('major_worker', 'worker');
ALTER DATABASE major SET sendjobs.default_lease = '42s';
ALTER ROLE major_worker IN DATABASE major SET sendjobs.retry_backoff_base = '3s';

-- 1 sent; 2 failed; 3 failed, then redriven as 9 (pending); 4 cancelled.
SELECT sendjobs_enqueue('{"n": 1}', transaction_id => 'tx-1', run_at => now() - interval '9 minutes');
SELECT sendjobs_enqueue('{"n": 2}', transaction_id => 'tx-2', run_at => now() - interval '8 minutes');
SELECT sendjobs_enqueue('{"n": 3}', transaction_id => 'tx-3', run_at => now() - interval '7 minutes');
SELECT sendjobs_finalize(id, claim_generation, 'sent') FROM sendjobs_claim(1, '1 minute');
SELECT sendjobs_finalize(id, claim_generation, 'failed', 'partner said no') FROM sendjobs_claim(1, '1 minute');
SELECT sendjobs_finalize(id, claim_generation, 'failed', 'partner down') FROM sendjobs_claim(1, '1 minute');
SELECT sendjobs_cancel(sendjobs_enqueue('{"n": 4}', transaction_id => 'tx-4'));
-- 5: in flight under a lease that runs for an hour; 6: under one that has expired.
SELECT sendjobs_enqueue('{"n": 5}', transaction_id => 'tx-5', run_at => now() - interval '6 minutes');
SELECT id, claim_generation FROM sendjobs_claim(1, '1 hour');
SELECT sendjobs_enqueue('{"n": 6}', transaction_id => 'tx-6', run_at => now() - interval '5 minutes');
SELECT id, claim_generation FROM sendjobs_claim(1, '0 seconds');
-- 7: pending with a key; 8: scheduled an hour ahead, with a key.
SELECT sendjobs_enqueue('{"n": 7}', transaction_id => 'tx-7', idempotency_key => 'k7', run_at => now() - interval '4 minutes');
SELECT sendjobs_enqueue('{"n": 8}', transaction_id => 'tx-8', idempotency_key => 'k8', run_at => now() + interval '1 hour');
SELECT new_id FROM sendjobs_redrive(ARRAY[3]::int8[]);
-- A consumer of the outbox halfway through a batch: it has read jobs 1 and 2 of the four
-- finished ones (its position: the batch's snapshot and the last event read).
SELECT sendjobs_create_consumer('relay', from_start => true);
SELECT string_agg(job_id::text, ',') AS read FROM sendjobs_read_events('relay', 2);
