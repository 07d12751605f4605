-- A tour of the sendjobs API: enqueue, claim, finalize, heartbeat, the events outbox,
-- the terminal guard and the transaction link. Timestamps vary from run to run, so
-- this file never prints one: it prints intervals and booleans computed from them.

-- Start afresh, whatever an earlier test may have left behind.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP TABLE IF EXISTS payments, orders;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
-- WARNINGs raised inside the extension's own statements would carry a CONTEXT line.
\set SHOW_CONTEXT never

-------------------------------------------------------------------------------------
-- Enqueue
-------------------------------------------------------------------------------------

-- Only the payload is required. The defaults: queue 'default', due at once,
-- max_attempts from sendjobs.default_max_attempts (5), no business transaction and no
-- idempotency key. The new job's id is returned.
SELECT sendjobs_enqueue('{"to": "alice"}');
SELECT id, queue, payload, transaction_id, idempotency_key, status, attempts, max_attempts,
       claim_generation, next_attempt_at <= now() AS due_now,
       claimed_at IS NULL AND lease_expires_at IS NULL AND finished_at IS NULL AS untouched
  FROM send_jobs;

-- Every argument, by name: a queue (one per partner), a run_at in the future, the
-- business transaction the send belongs to, an idempotency key and an attempt budget.
SELECT sendjobs_enqueue('{"to": "bob"}',
                        queue           => 'partner-b',
                        run_at          => now() + interval '1 hour',
                        transaction_id  => 'tx-2',
                        idempotency_key => 'order-2',
                        max_attempts    => 3);
SELECT id, queue, payload, transaction_id, idempotency_key, status, max_attempts,
       next_attempt_at - now() > interval '59 minutes' AS due_in_an_hour
  FROM send_jobs WHERE id = 2;

-- The same idempotency key again returns the existing job's id; nothing is created
-- and the existing job is left exactly as it was (its payload is still bob's).
SELECT sendjobs_enqueue('{"to": "mallory"}', 'partner-b', idempotency_key => 'order-2');
SELECT count(*) AS jobs, (SELECT payload FROM send_jobs WHERE id = 2) AS payload_of_2
  FROM send_jobs;

-- The default attempt budget is a setting.
-- (The new job is 4: the refused duplicate spent id 3, as any INSERT ... ON CONFLICT
-- DO NOTHING spends a sequence value.)
SET sendjobs.default_max_attempts = 2;
SELECT sendjobs_enqueue('{"to": "carol"}', 'partner-c');
SELECT id, max_attempts FROM send_jobs WHERE queue = 'partner-c';
RESET sendjobs.default_max_attempts;

-------------------------------------------------------------------------------------
-- Claim
-------------------------------------------------------------------------------------

-- sendjobs_claim(batch, lease, queue) takes up to `batch` due jobs of `queue` (NULL: any
-- queue). Each claimed job becomes in_flight with attempts + 1, claim_generation + 1 and
-- a lease of sendjobs.default_lease (90 s) starting now. Job 2 is not due for an hour.
SELECT id, queue, status, attempts, claim_generation,
       lease_expires_at - claimed_at AS lease
  FROM sendjobs_claim(10);
-- Nothing else is due: an empty result, not an error.
SELECT count(*) AS claimed FROM sendjobs_claim(10);

-- The lease is stamped with the server's clock at the moment of the claim, not with the
-- start of the caller's transaction: a claim made late in a transaction still gets its
-- whole lease.
SELECT sendjobs_enqueue('{"to": "dave"}', 'late');
BEGIN;
SELECT pg_sleep(0.2);
SELECT claimed_at - now() >= interval '0.2 seconds' AS claimed_at_is_the_claim_time,
       lease_expires_at - claimed_at AS lease
  FROM sendjobs_claim(1, queue => 'late');
COMMIT;

-- The lease can be given per call, or changed for the session with the setting.
SELECT sendjobs_enqueue('{"n": 1}', 'lease'), sendjobs_enqueue('{"n": 2}', 'lease');
SELECT payload, lease_expires_at - claimed_at AS lease
  FROM sendjobs_claim(1, interval '30 seconds', 'lease');
SET sendjobs.default_lease = '5min';
SELECT payload, lease_expires_at - claimed_at AS lease
  FROM sendjobs_claim(1, queue => 'lease');
RESET sendjobs.default_lease;

-- Claim order: oldest next_attempt_at first, ties broken by id; `batch` caps the count.
SELECT sendjobs_enqueue(payload, 'order', run_at)
  FROM (VALUES ('{"n": 1}'::jsonb, '2000-01-03 00:00+00'::timestamptz),
               ('{"n": 2}', '2000-01-01 00:00+00'),
               ('{"n": 3}', '2000-01-02 00:00+00'),
               ('{"n": 4}', '2000-01-01 00:00+00')) AS jobs (payload, run_at);
SELECT id, payload FROM sendjobs_claim(2, queue => 'order');
SELECT id, payload FROM sendjobs_claim(2, queue => 'order');

-- A job whose lease has expired is claimed again: by the next claim, with a new
-- generation and one more attempt. Whether a lease has expired is judged by the lease its
-- holder asked for, here 0 seconds, never by the lease of the reclaimer. The expired job
-- keeps its place by next_attempt_at, ahead of newer pending work.
SELECT sendjobs_enqueue('{"n": 5}', 'expiry', '2000-01-01 00:00+00'),
       sendjobs_enqueue('{"n": 6}', 'expiry', '2000-01-02 00:00+00');
SELECT id, payload, attempts, claim_generation
  FROM sendjobs_claim(1, interval '0 seconds', 'expiry');
SELECT id, payload, attempts, claim_generation, lease_expires_at - claimed_at AS lease
  FROM sendjobs_claim(1, interval '1 hour', 'expiry');
SELECT id, payload, attempts, claim_generation
  FROM sendjobs_claim(1, queue => 'expiry');
-- Both leases are live now: nothing to claim.
SELECT count(*) AS claimed FROM sendjobs_claim(10, queue => 'expiry');

-------------------------------------------------------------------------------------
-- Finalize
-------------------------------------------------------------------------------------

-- sendjobs_finalize(id, generation, outcome, error, retry_at) records the outcome of one
-- claim. It applies only while that claim is the current one of an in_flight job
-- (status in_flight and claim_generation = generation) and says 'applied'; otherwise it
-- changes nothing and says 'stale'.
SELECT sendjobs_enqueue(payload, 'fin', transaction_id => tx, max_attempts => attempts)
  FROM (VALUES ('{"to": "a"}'::jsonb, 'tx-a', 5),
               ('{"to": "b"}', 'tx-b', 5),
               ('{"to": "c"}', 'tx-c', 5),
               ('{"to": "d"}', 'tx-d', 2)) AS jobs (payload, tx, attempts);
SELECT id, payload, claim_generation FROM sendjobs_claim(10, queue => 'fin');

-- 'sent': terminal. finished_at is stamped, the lease is dropped, and one 'sent' event is
-- staged in send_job_events, in the caller's transaction.
SELECT sendjobs_finalize(14, 1, 'sent');
SELECT id, status, attempts, claim_generation, lease_expires_at IS NULL AS lease_dropped,
       finished_at IS NOT NULL AS finished
  FROM send_jobs WHERE id = 14;
SELECT job_id, transaction_id, kind, claim_generation FROM send_job_events;

-- A second finalize of the same claim changes nothing, and no second event is staged:
-- with the outcome that applied it is a repeat and answers applied again (answers.sql);
-- with another outcome it is stale (the job is no longer in_flight).
SELECT sendjobs_finalize(14, 1, 'sent') AS again_sent,
       sendjobs_finalize(14, 1, 'failed', 'late') AS again_failed,
       sendjobs_finalize(14, 1, 'retry') AS again_retry;
SELECT s.status, s.last_error, (SELECT count(*) FROM send_job_events e WHERE e.job_id = s.id) AS events
  FROM send_jobs s WHERE id = 14;

-- 'failed': terminal too, with the error text kept in last_error and a 'failed' event.
SELECT sendjobs_finalize(15, 1, 'failed', 'HTTP 400: unknown recipient');
SELECT id, status, last_error, finished_at IS NOT NULL AS finished
  FROM send_jobs WHERE id = 15;
SELECT job_id, transaction_id, kind, claim_generation FROM send_job_events WHERE job_id = 15;

-- A generation other than the current one is stale and changes nothing.
SELECT sendjobs_finalize(16, 0, 'sent') AS older_generation,
       sendjobs_finalize(16, 2, 'sent') AS newer_generation;
SELECT status, claim_generation FROM send_jobs WHERE id = 16;

-- 'retry' with retry_at: back to pending, due at retry_at; no event, not finished.
SELECT sendjobs_finalize(16, 1, 'retry', 'HTTP 503', '2000-01-01 00:00+00');
SELECT status, attempts, claim_generation, last_error,
       next_attempt_at = '2000-01-01 00:00+00' AS due_at_retry_at,
       lease_expires_at IS NULL AS lease_dropped, finished_at IS NULL AS not_finished,
       (SELECT count(*) FROM send_job_events WHERE job_id = 16) AS events
  FROM send_jobs WHERE id = 16;

-- 'retry' without retry_at: an exponential backoff, sendjobs.retry_backoff_base doubled
-- for every attempt already made (base * 2^(attempts - 1)), capped by
-- sendjobs.retry_backoff_max. Job 16 is claimed for its second attempt, job 17 is still
-- on its first.
SET sendjobs.retry_backoff_base = '1min';
SELECT id, attempts, claim_generation FROM sendjobs_claim(1, queue => 'fin');
SELECT sendjobs_finalize(16, 2, 'retry') AS second_attempt,
       sendjobs_finalize(17, 1, 'retry', 'timeout') AS first_attempt;
SELECT id, status, attempts,
       round(extract(epoch FROM next_attempt_at - now()) / 60, 1) AS backoff_minutes
  FROM send_jobs WHERE id IN (16, 17) ORDER BY id;
-- The cap: with a maximum of 90 seconds the third attempt would wait 1.5 minutes, not 4.
SET sendjobs.retry_backoff_max = '90s';
UPDATE send_jobs SET next_attempt_at = now() WHERE id = 16;  -- pretend the wait is over
SELECT id, attempts, claim_generation FROM sendjobs_claim(1, queue => 'fin');
SELECT sendjobs_finalize(16, 3, 'retry');
SELECT round(extract(epoch FROM next_attempt_at - now()) / 60, 1) AS backoff_minutes
  FROM send_jobs WHERE id = 16;
RESET sendjobs.retry_backoff_base;
RESET sendjobs.retry_backoff_max;

-- A retry once attempts >= max_attempts is a terminal 'failed' instead, with its event.
-- Job 17 may be attempted twice: its second attempt ends it.
UPDATE send_jobs SET next_attempt_at = now() WHERE id = 17;  -- pretend the wait is over
SELECT id, attempts, max_attempts, claim_generation FROM sendjobs_claim(1, queue => 'fin');
SELECT sendjobs_finalize(17, 2, 'retry', 'timeout again');
SELECT status, attempts, last_error, finished_at IS NOT NULL AS finished
  FROM send_jobs WHERE id = 17;
SELECT job_id, transaction_id, kind, claim_generation FROM send_job_events WHERE job_id = 17;

-------------------------------------------------------------------------------------
-- Heartbeat
-------------------------------------------------------------------------------------

-- sendjobs_heartbeat(id, generation, lease) extends the lease of a claim the caller still
-- holds to now + lease (default sendjobs.default_lease). It changes neither the
-- generation nor the attempts.
SELECT sendjobs_enqueue('{"to": "hb"}', 'hb');
SELECT id, claim_generation, lease_expires_at - claimed_at AS lease
  FROM sendjobs_claim(1, interval '10 seconds', 'hb');
SELECT sendjobs_heartbeat(18, 1, interval '1 hour');
SELECT round(extract(epoch FROM lease_expires_at - now()) / 60) AS lease_left_minutes,
       attempts, claim_generation
  FROM send_jobs WHERE id = 18;
SET sendjobs.default_lease = '5min';
SELECT sendjobs_heartbeat(18, 1);
SELECT round(extract(epoch FROM lease_expires_at - now()) / 60) AS lease_left_minutes
  FROM send_jobs WHERE id = 18;
RESET sendjobs.default_lease;
-- 'stale' tells a worker it has lost the job and must stop: another generation, or a
-- job that is no longer in_flight. A stale heartbeat changes nothing.
SELECT sendjobs_heartbeat(18, 0) AS older_generation;
SELECT sendjobs_finalize(18, 1, 'sent');
SELECT sendjobs_heartbeat(18, 1) AS after_finalize;
SELECT status, lease_expires_at IS NULL AS no_lease FROM send_jobs WHERE id = 18;

-------------------------------------------------------------------------------------
-- The events outbox
-------------------------------------------------------------------------------------

-- Exactly one event per job that reached sent or failed through an applied finalize,
-- with the generation of the claim that finished it.
SELECT e.job_id, e.transaction_id, e.kind, e.claim_generation, s.status
  FROM send_job_events e JOIN send_jobs s ON s.id = e.job_id
 ORDER BY e.job_id;
SELECT count(*) FILTER (WHERE status IN ('sent', 'failed')) AS terminal_jobs,
       (SELECT count(*) FROM send_job_events) AS events
  FROM send_jobs;

-------------------------------------------------------------------------------------
-- The terminal guard and the transaction link
-------------------------------------------------------------------------------------

-- The business table the sends belong to.
CREATE TABLE payments (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
INSERT INTO payments (id) VALUES ('pay-1'), ('pay-2'), ('pay-3');

-- The guard makes the terminal statuses absorbing (defaults: column status, terminal
-- {success,failed}, the one exit failed -> pending).
SELECT sendjobs_guard_terminal('payments');
-- The link: an applied sent/failed finalize of a job whose transaction_id names a
-- payment sets that payment's status (defaults: key column id, status column status,
-- 'success' on sent, 'failed' on failed), in the same transaction, through the guard.
SELECT sendjobs_link_transactions('payments');

SELECT sendjobs_enqueue(format('{"payment": "%s"}', id)::jsonb, 'pay', transaction_id => id)
  FROM payments ORDER BY id;
SELECT id, transaction_id, claim_generation FROM sendjobs_claim(10, queue => 'pay');
SELECT sendjobs_finalize(19, 1, 'sent') AS pay_1, sendjobs_finalize(20, 1, 'failed', 'declined') AS pay_2;
SELECT * FROM payments ORDER BY id;
SELECT job_id, transaction_id, kind FROM send_job_events WHERE job_id IN (19, 20, 21) ORDER BY job_id;

-- A stale finalize stamps nothing: payment pay-3 stays pending.
SELECT sendjobs_finalize(21, 7, 'sent');
SELECT status FROM payments WHERE id = 'pay-3';

-- The guard refuses to move a terminal payment to another value. With the default
-- sendjobs.guard_action = skip the row is left as it was, the statement goes on (UPDATE 0)
-- and a WARNING names the table, the key and the refused transition.
UPDATE payments SET status = 'failed' WHERE id = 'pay-1';
UPDATE payments SET status = 'pending' WHERE id = 'pay-1';
-- With sendjobs.guard_action = error the statement fails with SQLSTATE 23514.
SET sendjobs.guard_action = error;
UPDATE payments SET status = 'failed' WHERE id = 'pay-1';
SELECT :'SQLSTATE' AS sqlstate;
RESET sendjobs.guard_action;
-- Same-value updates and the declared exit (failed -> pending) pass.
UPDATE payments SET status = 'success' WHERE id = 'pay-1';
UPDATE payments SET status = 'pending' WHERE id = 'pay-2';
SELECT * FROM payments ORDER BY id;

-- A job's finalize stamps the payment through the guard: here a second send for the
-- already successful pay-1 fails. The job's own finalize applies (its 'failed' event is
-- staged) but the payment keeps 'success', with the guard's WARNING.
SELECT sendjobs_enqueue('{"payment": "pay-1", "resend": true}', 'pay', transaction_id => 'pay-1');
SELECT id, claim_generation FROM sendjobs_claim(1, queue => 'pay');
SELECT sendjobs_finalize(22, 1, 'failed', 'duplicate');
SELECT (SELECT status FROM send_jobs WHERE id = 22) AS job,
       (SELECT kind FROM send_job_events WHERE job_id = 22) AS event,
       (SELECT status FROM payments WHERE id = 'pay-1') AS payment;
-- In error mode the refused stamp aborts the whole finalize instead: the job stays
-- in_flight under its claim, no event is staged.
SELECT sendjobs_enqueue('{"payment": "pay-1", "resend": 2}', 'pay', transaction_id => 'pay-1');
SELECT id, claim_generation FROM sendjobs_claim(1, queue => 'pay');
SET sendjobs.guard_action = error;
SELECT sendjobs_finalize(23, 1, 'failed', 'duplicate');
SELECT :'SQLSTATE' AS sqlstate;
RESET sendjobs.guard_action;
SELECT (SELECT status FROM send_jobs WHERE id = 23) AS job,
       (SELECT count(*) FROM send_job_events WHERE job_id = 23) AS events,
       (SELECT status FROM payments WHERE id = 'pay-1') AS payment;
SELECT sendjobs_finalize(23, 1, 'sent');  -- the same value passes the guard

-- A job whose transaction_id names no payment finalizes normally; nothing is stamped.
SELECT sendjobs_enqueue('{"payment": "nope"}', 'pay', transaction_id => 'pay-404');
SELECT id, claim_generation FROM sendjobs_claim(1, queue => 'pay');
SELECT sendjobs_finalize(24, 1, 'sent');
SELECT count(*) AS payments, count(*) FILTER (WHERE id = 'pay-404') AS pay_404 FROM payments;

-- Other column names and values: a link with every argument given. Calling it again
-- replaces the link (there is at most one).
CREATE TABLE orders (order_no int PRIMARY KEY, state text NOT NULL DEFAULT 'open');
INSERT INTO orders VALUES (7);
-- The link is refused while unfinished jobs carry transaction_ids that cannot be keys
-- of the new table (an int here): they could never stamp their rows.
SELECT sendjobs_link_transactions('orders', 'order_no', 'state', 'delivered', 'undeliverable');
SELECT id, transaction_id, status FROM send_jobs
 WHERE status IN ('pending', 'in_flight') AND transaction_id IS NOT NULL ORDER BY id;
-- An operator detaches them, and the link is accepted.
UPDATE send_jobs SET transaction_id = NULL
 WHERE status IN ('pending', 'in_flight') AND transaction_id !~ '^[0-9]+$';
SELECT sendjobs_link_transactions('orders', 'order_no', 'state', 'delivered', 'undeliverable');
-- From now on a job must name a valid key when it is enqueued.
SELECT sendjobs_enqueue('{"order": "ORD-8"}', 'orders', transaction_id => 'ORD-8');
SELECT tbl, key_column, status_column, on_sent, on_failed FROM sendjobs_transaction_link;
SELECT sendjobs_enqueue('{"order": 7}', 'orders', transaction_id => '7');
SELECT id, claim_generation FROM sendjobs_claim(1, queue => 'orders');
SELECT sendjobs_finalize(25, 1, 'failed', 'no such address');
SELECT * FROM orders;

-- sendjobs_unlink_transactions() removes the link: finalizes stamp nothing any more.
SELECT sendjobs_unlink_transactions();
UPDATE orders SET state = 'open';
SELECT sendjobs_enqueue('{"order": 7}', 'orders', transaction_id => '7');
SELECT id, claim_generation FROM sendjobs_claim(1, queue => 'orders');
SELECT sendjobs_finalize(26, 1, 'sent');
SELECT * FROM orders;
SELECT count(*) AS links FROM sendjobs_transaction_link;

-------------------------------------------------------------------------------------
-- Finalize in batches
-------------------------------------------------------------------------------------

-- sendjobs_finalize_batch(ids, generations, outcome, error, retry_at) finalizes many
-- claims in one call, all with one outcome, each fenced on its own as sendjobs_finalize
-- fences one. One row per claim, in input order, says whether it applied; the terminal
-- ones that applied stage their events and stamp their business rows.
INSERT INTO payments (id) VALUES ('pay-4'), ('pay-5'), ('pay-6');
SELECT sendjobs_link_transactions('payments');
SELECT sendjobs_enqueue(format('{"payment": "%s"}', id)::jsonb, 'batch', transaction_id => id)
  FROM payments WHERE id IN ('pay-4', 'pay-5', 'pay-6') ORDER BY id;
SELECT id, transaction_id, claim_generation FROM sendjobs_claim(3, queue => 'batch');
-- Job 28 is given a generation that is not its claim's (2, not 1): that one is stale.
SELECT * FROM sendjobs_finalize_batch(ARRAY[29, 27, 28], ARRAY[1, 1, 2], 'sent');
SELECT * FROM payments WHERE id IN ('pay-4', 'pay-5', 'pay-6') ORDER BY id;
SELECT id, status FROM send_jobs WHERE id IN (27, 28, 29) ORDER BY id;
SELECT job_id, transaction_id, kind FROM send_job_events WHERE job_id IN (27, 28, 29) ORDER BY job_id;
-- An empty batch finalizes nothing and returns no rows.
SELECT count(*) AS results FROM sendjobs_finalize_batch('{}', '{}', 'sent');
SELECT sendjobs_unlink_transactions();

-------------------------------------------------------------------------------------
-- The invariants, over everything this file did
-------------------------------------------------------------------------------------

-- Every terminal job has exactly one event, whose generation is the job's; no other job
-- has one; no in_flight job lacks a lease; no job is neither terminal nor claimable.
SELECT count(*) FILTER (WHERE s.status IN ('sent', 'failed')) AS terminal,
       count(*) FILTER (WHERE s.status IN ('sent', 'failed')
                          AND (SELECT count(*) FROM send_job_events e
                                WHERE e.job_id = s.id AND e.claim_generation = s.claim_generation) = 1)
         AS terminal_with_one_event,
       (SELECT count(*) FROM send_job_events e JOIN send_jobs j ON j.id = e.job_id
         WHERE j.status NOT IN ('sent', 'failed')) AS events_of_unfinished_jobs,
       count(*) FILTER (WHERE s.status = 'in_flight' AND s.lease_expires_at IS NULL) AS in_flight_without_lease,
       count(*) FILTER (WHERE s.status NOT IN ('pending', 'in_flight', 'sent', 'failed')) AS other
  FROM send_jobs s;

DROP TABLE payments, orders;
DROP EXTENSION sendjobs;
