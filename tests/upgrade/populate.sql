-- A database at the previous release with jobs in every state, before the upgrade.
-- Every job's id is fixed (an empty table counts from 1), and verify.sql checks each.
\set ON_ERROR_STOP on
CREATE EXTENSION sendjobs;
CREATE TABLE transactions (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
SELECT sendjobs_guard_terminal('transactions');
SELECT sendjobs_link_transactions('transactions', 'id', 'status');
INSERT INTO transactions SELECT 'tx-' || g FROM generate_series(1, 6) g;

-- 1, 2: finished (sent, then failed through retry past max_attempts), with their events.
SELECT sendjobs_enqueue('{"n": 1}', transaction_id => 'tx-1', run_at => now() - interval '6 minutes');
SELECT sendjobs_enqueue('{"n": 2}', transaction_id => 'tx-2', run_at => now() - interval '5 minutes', max_attempts => 1);
SELECT sendjobs_finalize(id, claim_generation, 'sent') FROM sendjobs_claim(1, '1 minute');
SELECT sendjobs_finalize(id, claim_generation, 'retry', 'boom') FROM sendjobs_claim(1, '1 minute');
-- 3: in flight under a lease that runs for an hour (generation 1).
SELECT sendjobs_enqueue('{"n": 3}', transaction_id => 'tx-3', run_at => now() - interval '4 minutes');
SELECT id, claim_generation FROM sendjobs_claim(1, '1 hour');
-- 4: in flight under a lease that has expired (generation 1).
SELECT sendjobs_enqueue('{"n": 4}', transaction_id => 'tx-4', run_at => now() - interval '3 minutes');
SELECT id, claim_generation FROM sendjobs_claim(1, '0 seconds');
-- 5: pending and due; 6: scheduled an hour from now; both with idempotency keys.
SELECT sendjobs_enqueue('{"n": 5}', transaction_id => 'tx-5', idempotency_key => 'k5');
SELECT sendjobs_enqueue('{"n": 6}', transaction_id => 'tx-6', idempotency_key => 'k6',
                        run_at => now() + interval '1 hour');
-- 7: scheduled a day ahead, in a queue whose name 0.4.0 refuses for a new queue (a
-- variation selector: drawn as nothing); the update keeps the name usable.
-- From 0.4.0 on, a new queue may not be so named: the queue is as the update to 0.4.0
-- left it, with a settings row.
SELECT extversion <> ALL (ARRAY['0.1.0', '0.2.0', '0.2.1', '0.3.0', '0.3.1']) AS refuses_name
  FROM pg_extension WHERE extname = 'sendjobs' \gset
\if :refuses_name
INSERT INTO sendjobs_queues (queue) VALUES ('acme' || chr(65039));
\endif
SELECT sendjobs_enqueue('{"n": 7}', queue => 'acme' || chr(65039), run_at => now() + interval '1 day');
SELECT id, status, claim_generation, lease_expires_at > now() AS leased FROM send_jobs ORDER BY id;
