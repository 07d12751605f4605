-- The console test's database (tests/console/run.sh), run as a superuser: the
-- extension, a linked business table, the console's two roles, and a small workload:
-- a failing queue (acme) with failed jobs, a queue with jobs in flight and sent ones
-- (globex), and a queue of pending jobs (initech).
\set ON_ERROR_STOP on
CREATE EXTENSION sendjobs;
CREATE TABLE transactions (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
SELECT sendjobs_guard_terminal('transactions');
SELECT sendjobs_link_transactions('transactions', 'id', 'status');

-- The console's roles: one that may act (monitor and admin, and read the business
-- table), one that may only look.
CREATE ROLE console_admin LOGIN;
SELECT sendjobs_grant('console_admin', 'monitor');
SELECT sendjobs_grant('console_admin', 'admin');
GRANT SELECT ON transactions TO console_admin;
-- Every statement of the consoles that run as console_admin, in the server's log: the
-- browser test counts their reads of sendjobs_stats there.
ALTER ROLE console_admin SET log_statement = 'all';
CREATE ROLE console_monitor LOGIN;
SELECT sendjobs_grant('console_monitor', 'monitor');

INSERT INTO transactions SELECT 'tx-' || n FROM generate_series(1, 20) AS n;

-- acme: 6 jobs, each failed on its one attempt.
SELECT count(sendjobs_enqueue(jsonb_build_object('to', 'acme', 'n', n), 'acme',
                              transaction_id => 'tx-' || n, idempotency_key => 'acme/' || n,
                              max_attempts => 1))
  FROM generate_series(1, 6) AS n;
SELECT count(sendjobs_finalize(id, claim_generation, 'failed', 'partner answered 503'))
  FROM sendjobs_claim(6, '1 minute', 'acme');

-- And one acme job with earlier attempts (send_job_attempts): retried after a timeout, then
-- lost with its worker (a lease of 0 seconds, taken back by the next claim), then retried
-- after a 500, due again in an hour.
SELECT sendjobs_enqueue('{"to": "acme"}', 'acme', idempotency_key => 'acme/retried', max_attempts => 5);
SELECT sendjobs_finalize(id, claim_generation, 'retry', 'timeout after 30 s', retry_at => now())
  FROM sendjobs_claim(1, '1 minute', 'acme');
SELECT count(*) FROM sendjobs_claim(1, '0 seconds', 'acme');
SELECT sendjobs_finalize(id, claim_generation, 'retry', 'partner answered 500', retry_at => now() + interval '1 hour')
  FROM sendjobs_claim(1, '1 minute', 'acme');

-- globex: 4 sent, 3 in flight under a long lease, 2 pending.
SELECT count(sendjobs_enqueue(jsonb_build_object('to', 'globex', 'n', n), 'globex',
                              transaction_id => 'tx-' || (6 + n)))
  FROM generate_series(1, 4) AS n;
SELECT count(sendjobs_finalize(id, claim_generation, 'sent')) FROM sendjobs_claim(4, '1 minute', 'globex');
SELECT count(sendjobs_enqueue(jsonb_build_object('to', 'globex', 'n', n), 'globex',
                              transaction_id => 'tx-' || (10 + n)))
  FROM generate_series(1, 5) AS n;
SELECT count(*) FROM sendjobs_claim(3, '30 minutes', 'globex');
-- ledger: its keys stopped by a failure; acct-9's first job failed, its second waits.
SELECT sendjobs_block_keys('ledger', true);
SELECT count(sendjobs_enqueue(jsonb_build_object('n', n), 'ledger', ordering_key => 'acct-9', max_attempts => 1))
  FROM generate_series(1, 2) AS n;
SELECT count(sendjobs_finalize(id, claim_generation, 'failed', 'HTTP 422'))
  FROM sendjobs_claim(1, '1 minute', 'ledger');

-- A partner that allows one request a minute, and 3 at once (all 3 in flight: limited now).
SELECT sendjobs_limit('globex', max_in_flight => 3, rate => 1.0 / 60, burst => 1);

-- initech: 4 pending.
SELECT count(sendjobs_enqueue(jsonb_build_object('to', 'initech', 'n', n), 'initech'))
  FROM generate_series(1, 4) AS n;

-- Hostile names (docs/console.md, "Names as they are"): queues made before 0.3.1 may
-- have names 0.4.0 refuses, written here past sendjobs_enqueue as such a queue's jobs
-- were, each with the settings row the update to 0.3.1 gave it. One holds a line break and what looks like a line of the action log; the others
-- look like acme: a zero-width space, a right-to-left override, a space at either end, a
-- Cyrillic a. Each has one pending job; ` acme` has three.
INSERT INTO send_jobs (queue, payload)
SELECT name, jsonb_build_object('to', name)
  FROM unnest(ARRAY[E'forged\n2026-01-01T00:00:00.000000Z  INFO action remote=10.0.0.9:1 operator=bob action="cancel" job=1',
                    E'acme\u200b', E'\u202eemca', ' acme', 'acme ', E'\u0430cme']) AS name;
INSERT INTO send_jobs (queue, payload) SELECT ' acme', '{}' FROM generate_series(1, 2);
INSERT INTO sendjobs_queues (queue)
SELECT DISTINCT queue FROM send_jobs WHERE queue NOT IN ('acme', 'globex', 'initech', 'ledger');
-- Names 0.4.0 accepts that HTML would draw alike: one space, and two.
SELECT sendjobs_enqueue('{}', 'acme corp');
SELECT sendjobs_enqueue('{}', 'acme  corp');
-- A payload with a right-to-left override, drawn reversed as it is.
SELECT sendjobs_enqueue(jsonb_build_object('to', E'\u202eevil.example'), 'initech', idempotency_key => 'reversed');
-- A key of digits only, which is no job's id.
SELECT sendjobs_enqueue('{}', 'initech', idempotency_key => '424242');
