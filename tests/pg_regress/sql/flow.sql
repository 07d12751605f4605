-- Flow control per queue, enforced by sendjobs_claim (docs/decisions/0013-flow-control-
-- in-the-claim.md): pause and resume, a cap on the jobs in flight, a rate with bursts;
-- sendjobs_queue_limits tells a short claim's "limited" from "empty"; bad settings get
-- 22004 or 22023 and change nothing. The races: tests/isolation/specs/flow-*.spec.

SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never

-- Jobs 1-12 for the partner, 13-14 for another queue.
SELECT count(*) AS enqueued FROM (
    SELECT sendjobs_enqueue(jsonb_build_object('n', g), CASE WHEN g <= 12 THEN 'partner' ELSE 'other' END)
      FROM generate_series(1, 14) g) AS e;

-------------------------------------------------------------------------------------
-- Pause and resume
-------------------------------------------------------------------------------------

SELECT sendjobs_pause('partner');
-- A paused queue hands out nothing, asked by name or not; the others go on.
SELECT count(*) AS claimed FROM sendjobs_claim(10, queue => 'partner');
SELECT id, queue FROM sendjobs_claim(10) ORDER BY id;
SELECT queue, paused, max_in_flight, in_flight, rate, limited, retry_after FROM sendjobs_queue_limits('partner');
-- A queue without flow control has no row (its claims are never limited).
SELECT count(*) AS rows FROM sendjobs_queue_limits('other');
SELECT sendjobs_resume('partner');
SELECT count(*) AS rows FROM sendjobs_queue_limits();
SELECT id FROM sendjobs_claim(2, '1 minute', 'partner') ORDER BY id;

-------------------------------------------------------------------------------------
-- A cap on the jobs in flight
-------------------------------------------------------------------------------------

-- Jobs 1 and 2 are in flight; a cap of 3 leaves room for one more, whatever the batch.
SELECT sendjobs_limit('partner', max_in_flight => 3);
SELECT id FROM sendjobs_claim(10, '1 minute', 'partner') ORDER BY id;
SELECT count(*) AS claimed FROM sendjobs_claim(10, '1 minute', 'partner');
SELECT queue, paused, max_in_flight, in_flight, limited,
       retry_after BETWEEN interval '50 seconds' AND interval '1 minute' AS until_a_lease_ends
  FROM sendjobs_queue_limits('partner');
-- sendjobs_stats shows each queue's flow control beside its counts.
SELECT queue, ready, in_flight, paused, max_in_flight, rate, tokens FROM sendjobs_stats() ORDER BY queue;
-- A finished job frees its place; a claim from any queue obeys the cap too.
SELECT sendjobs_finalize(1, 1, 'sent');
SELECT id, queue FROM sendjobs_claim(10, '1 minute') ORDER BY id;
SELECT count(*) AS claimed FROM sendjobs_claim(10);
-- A job whose lease expired does not count: job 2's lease ends now, and a claim takes
-- its place (it reclaims job 2 itself, which is due first).
SELECT sendjobs_heartbeat(2, 1, '0 seconds');
SELECT id, claim_generation FROM sendjobs_claim(10, '1 minute', 'partner') ORDER BY id;
-- A heartbeat extends a lease, and never makes room for more.
SELECT sendjobs_heartbeat(3, 1, '2 minutes');
SELECT count(*) AS claimed FROM sendjobs_claim(10, '1 minute', 'partner');
-- Nor does it revive a lease that expired: the cap's count left that job out, and a
-- claim may have taken its place (elsewhere, an expired lease nobody reclaimed may be
-- extended). Its finalize still applies.
SELECT sendjobs_heartbeat(2, 2, '0 seconds') AS expires_now;
SELECT sendjobs_heartbeat(2, 2, '1 minute') AS revived;
SELECT sendjobs_finalize(2, 2, 'retry', NULL, now() + interval '1 hour') AS finalized;

-------------------------------------------------------------------------------------
-- A rate with bursts (a token bucket on the claims' clock)
-------------------------------------------------------------------------------------

-- One claim every 10 seconds, bursts of 3, no cap (the limit replaces the cap): the
-- full bucket lets 3 through at once, then none.
SELECT sendjobs_limit('partner', rate => 0.1, burst => 3);
SELECT id FROM sendjobs_claim(10, '1 minute', 'partner') ORDER BY id;
SELECT queue, max_in_flight, rate, burst, tokens < 1 AS empty_bucket, limited,
       retry_after <= interval '10 seconds' AS next_token_within_10_seconds
  FROM sendjobs_queue_limits('partner');
SELECT count(*) AS claimed FROM sendjobs_claim(10, '1 minute', 'partner');
-- 20 seconds later (the bucket's clock moved back, as a test may): 2 tokens, 2 claims.
UPDATE sendjobs_queues SET tokens_at = tokens_at - interval '20 seconds' WHERE queue = 'partner';
SELECT id FROM sendjobs_claim(10, '1 minute', 'partner') ORDER BY id;
-- A long quiet time refills the bucket to its burst, not beyond.
UPDATE sendjobs_queues SET tokens_at = tokens_at - interval '1 hour' WHERE queue = 'partner';
SELECT tokens AS refilled_to_burst FROM sendjobs_queue_limits('partner');
SELECT queue, paused, max_in_flight, rate, tokens FROM sendjobs_stats() WHERE queue = 'partner';
-- The clock stepped back an hour (a failover to a server whose clock is behind): an empty
-- bucket dated ahead of the clock refills from now on, not from its date (decision
-- 0026), so 20 seconds later it has 2 tokens. Dated from its date, the queue would stop
-- for the hour.
UPDATE sendjobs_queues SET tokens = 0, tokens_at = clock_timestamp() + interval '1 hour' WHERE queue = 'partner';
SELECT count(*) AS claimed_without_tokens FROM sendjobs_claim(10, '1 minute', 'partner');
SELECT tokens_at <= clock_timestamp() AS dated_back_to_the_clock FROM sendjobs_queues WHERE queue = 'partner';
UPDATE sendjobs_queues SET tokens_at = tokens_at - interval '20 seconds' WHERE queue = 'partner';
SELECT count(*) AS claimed_20_seconds_later FROM sendjobs_claim(10, '1 minute', 'partner');
-- A claim from any queue too: a bucket dated ahead, with its tokens, lets the queue have
-- its share (the walk tested it against its date, and passed over the queue). And jobs
-- left for the limits' lifting below, more than the limits would let through.
SELECT count(sendjobs_enqueue('{}', 'partner')) AS more_partner_jobs FROM generate_series(1, 4);
SELECT count(sendjobs_enqueue('{}', 'zz-backlog')) AS backlog FROM generate_series(1, 5);
UPDATE sendjobs_queues SET tokens = 3, tokens_at = clock_timestamp() + interval '1 hour' WHERE queue = 'partner';
SELECT queue, count(*) AS claimed FROM sendjobs_claim(4, '1 minute') GROUP BY queue ORDER BY queue;
-- Without a burst, one second's worth (at least 1).
SELECT sendjobs_limit('partner', rate => 0.5);
SELECT rate, burst FROM sendjobs_queues WHERE queue = 'partner';

-------------------------------------------------------------------------------------
-- Lifting the limits
-------------------------------------------------------------------------------------

SELECT sendjobs_limit('partner');
SELECT count(*) AS rows FROM sendjobs_queue_limits('partner');
SELECT id FROM sendjobs_claim(10, '1 minute', 'partner') ORDER BY id;
SELECT queue, notify, paused, max_in_flight, rate, burst, tokens, tokens_at FROM sendjobs_queues ORDER BY queue;

-------------------------------------------------------------------------------------
-- Bad settings: an error, and nothing changes
-------------------------------------------------------------------------------------

SELECT sendjobs_limit('partner', max_in_flight => 2);
\set VERBOSITY sqlstate
SELECT sendjobs_pause(NULL);
SELECT sendjobs_resume('');
SELECT sendjobs_limit(NULL, 1);
SELECT sendjobs_limit('partner', max_in_flight => 0);
SELECT sendjobs_limit('partner', rate => 0);
SELECT sendjobs_limit('partner', rate => -1);
SELECT sendjobs_limit('partner', rate => 'NaN');
SELECT sendjobs_limit('partner', rate => 'Infinity');
SELECT sendjobs_limit('partner', rate => 2000000);
SELECT sendjobs_limit('partner', burst => 3);
SELECT sendjobs_limit('partner', rate => 1, burst => 0);
SELECT sendjobs_limit(repeat('q', 129), 1);
\set VERBOSITY default
SELECT sendjobs_limit('partner', max_in_flight => 0);
SELECT queue, paused, max_in_flight, rate, burst FROM sendjobs_queues ORDER BY queue;

-------------------------------------------------------------------------------------
-- Ordered keys: of the jobs that share one, only the oldest unfinished one is claimed
-------------------------------------------------------------------------------------

-- Account a1's payment, its refund and a later payment; account a2's; one unordered.
SELECT sendjobs_enqueue(jsonb_build_object('job', name), 'ledger', ordering_key => key) AS id, name
  FROM (VALUES ('a1-pay', 'a1'), ('a1-refund', 'a1'), ('a1-pay-2', 'a1'), ('a2-pay', 'a2'),
               ('loose', NULL)) AS v(name, key);
CREATE TEMP VIEW ledger AS
    SELECT id, payload->>'job' AS job, status, attempts FROM send_jobs WHERE queue = 'ledger';
-- One job of each key at a time, whatever the batch.
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(10, '1 minute', 'ledger') AS c ORDER BY c.id;
SELECT count(*) AS claimed FROM sendjobs_claim(10, '1 minute', 'ledger');
-- A retry with attempts left keeps its place: the refund still waits for the payment.
SELECT sendjobs_finalize(id, 1, 'retry', 'HTTP 503', now()) FROM ledger WHERE job = 'a1-pay';
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(10, '1 minute', 'ledger') AS c ORDER BY c.id;
-- Sent: the next of its key goes.
SELECT sendjobs_finalize(id, 2, 'sent') FROM ledger WHERE job = 'a1-pay';
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(10, '1 minute', 'ledger') AS c ORDER BY c.id;
-- Failed for good: the next of its key goes too (the failed job leaves the line).
SELECT sendjobs_finalize(id, 1, 'failed', 'HTTP 400') FROM ledger WHERE job = 'a1-refund';
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(10, '1 minute', 'ledger') AS c ORDER BY c.id;
SELECT job, status, attempts FROM ledger ORDER BY id;
-- A job of a key waits while another of its key is in flight, even a younger one (a job
-- whose enqueueing transaction committed after the younger one's: here an id made older
-- by hand).
SELECT sendjobs_enqueue('{"job": "a3-second"}', 'ledger', ordering_key => 'a3') IS NOT NULL AS enqueued;
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(10, '1 minute', 'ledger') AS c ORDER BY c.id;
INSERT INTO send_jobs (id, payload, queue, ordering_key) OVERRIDING SYSTEM VALUE
VALUES (0, '{"job": "a3-first"}', 'ledger', 'a3');
SELECT count(*) AS claimed FROM sendjobs_claim(10, '1 minute', 'ledger');
-- The key goes with the job into its history, and with a redrive into the new job.
SELECT job, ordering_key FROM ledger JOIN send_jobs USING (id) WHERE job = 'a1-refund';
SELECT new_id IS NOT NULL AS redriven FROM sendjobs_redrive(ARRAY(SELECT id FROM ledger WHERE job = 'a1-refund'));
SELECT payload->>'job' AS job, ordering_key, redrive_of IS NOT NULL AS a_redrive
  FROM ONLY send_jobs WHERE queue = 'ledger' AND status = 'pending' ORDER BY id;
\set VERBOSITY sqlstate
SELECT sendjobs_enqueue('{}', 'ledger', ordering_key => '');
SELECT sendjobs_enqueue('{}', 'ledger', ordering_key => repeat('k', 257));
\set VERBOSITY default
SELECT sendjobs_enqueue('{}', 'ledger', ordering_key => '');

-------------------------------------------------------------------------------------
-- Priorities: minutes of head start in the claim order
-------------------------------------------------------------------------------------

-- Due 30 and 5 minutes ago without priority; due now with 10 and 60 minutes of head
-- start; due in a minute with 60.
SELECT count(*) AS enqueued FROM (
    SELECT sendjobs_enqueue(jsonb_build_object('job', name), 'prio', run_at => now() + due, priority => head_start)
      FROM (VALUES ('old', interval '-30 minutes', 0), ('recent', '-5 minutes', 0),
                   ('urgent-10', '0', 10), ('urgent-60', '0', 60), ('later-60', '1 minute', 60))
           AS v(name, due, head_start)) AS e;
CREATE TEMP VIEW prio AS
    SELECT id, payload->>'job' AS job, status, priority FROM send_jobs WHERE queue = 'prio';
-- The claim order is the due time less the head start: urgent-60 (60 minutes ahead of
-- now), old (30), urgent-10 (10), recent (5). A head start never makes a job due early:
-- later-60 stays. And it is bounded: old, due for longer than urgent-10's head start,
-- goes before it (no job waits behind newer ones for longer than their head start).
SELECT n, c.payload->>'job' AS claimed, c.priority
  FROM sendjobs_claim(10, '1 minute', 'prio') WITH ORDINALITY AS c(id, queue, payload, transaction_id, idempotency_key, status, attempts, max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation, last_error, created_at, finished_at, redrive_of, ordering_key, priority, waits_for_key, n)
 ORDER BY n;
-- later-60's claim order is before now, its due time is not: scheduled, not ready.
SELECT queue, ready, scheduled, in_flight FROM sendjobs_stats() WHERE queue = 'prio';
-- An expired lease keeps its place: urgent-10's goes before a job due now.
SELECT sendjobs_heartbeat(id, 1, '0 seconds') AS expires_now FROM prio WHERE job = 'urgent-10';
SELECT sendjobs_enqueue('{"job": "fresh"}', 'prio') IS NOT NULL AS enqueued;
SELECT n, c.payload->>'job' AS claimed, c.claim_generation
  FROM sendjobs_claim(10, '1 minute', 'prio') WITH ORDINALITY AS c(id, queue, payload, transaction_id, idempotency_key, status, attempts, max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation, last_error, created_at, finished_at, redrive_of, ordering_key, priority, waits_for_key, n)
 ORDER BY n;
-- A retry keeps its head start, a capped queue obeys it, and so does the claim from any
-- queue: urgent-60, retried due now, goes before fresh, retried due 5 minutes ago.
SELECT sendjobs_finalize(id, 1, 'retry', 'HTTP 503', now()) FROM prio WHERE job = 'urgent-60';
SELECT sendjobs_finalize(id, 1, 'retry', 'HTTP 503', now() - interval '5 minutes') FROM prio WHERE job = 'fresh';
SELECT sendjobs_limit('prio', max_in_flight => 10);
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(1, '1 minute', 'prio') AS c;
SELECT sendjobs_limit('prio');
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(1, '1 minute') AS c;
-- Ordered jobs: within a key, id order whatever the priority; across keys, claim order.
SELECT count(*) AS enqueued FROM (
    SELECT sendjobs_enqueue(jsonb_build_object('job', name), 'prio-keyed', ordering_key => key, priority => head_start)
      FROM (VALUES ('k1-first', 'k1', 0), ('k1-second', 'k1', 60), ('k2-only', 'k2', 0), ('k3-only', 'k3', 60))
           AS v(name, key, head_start)) AS e;
SELECT n, c.payload->>'job' AS claimed
  FROM sendjobs_claim(10, '1 minute', 'prio-keyed') WITH ORDINALITY AS c(id, queue, payload, transaction_id, idempotency_key, status, attempts, max_attempts, next_attempt_at, claimed_at, lease_expires_at, claim_generation, last_error, created_at, finished_at, redrive_of, ordering_key, priority, waits_for_key, n)
 ORDER BY n;
-- The priority goes with the job into its history, and with a redrive into the new job.
SELECT sendjobs_finalize(id, 2, 'failed', 'HTTP 400') FROM prio WHERE job = 'urgent-10';
SELECT job, status, priority FROM prio WHERE job = 'urgent-10';
SELECT new_id IS NOT NULL AS redriven FROM sendjobs_redrive(ARRAY(SELECT id FROM prio WHERE job = 'urgent-10'));
SELECT job, status, priority FROM prio WHERE job = 'urgent-10' AND status = 'pending';
-- Bad priorities: 0 to 60 minutes.
\set VERBOSITY sqlstate
SELECT sendjobs_enqueue('{}', 'prio', priority => -1);
SELECT sendjobs_enqueue('{}', 'prio', priority => 61);
SELECT sendjobs_enqueue('{}', 'prio', priority => NULL);
\set VERBOSITY default
SELECT sendjobs_enqueue('{}', 'prio', priority => 61);
SELECT count(*) AS jobs FROM prio;

-- ----------------------------------------------------------------------------
-- Isolation: a claim that takes a turn needs READ COMMITTED
-- ----------------------------------------------------------------------------
-- Under REPEATABLE READ a claim of a queue with flow control, or of ordered jobs, is
-- refused (0A000) and changes nothing: its snapshot may predate the claims before its
-- turn (flow-cap-repeatable-read.spec). A queue without either claims as before.
SELECT sendjobs_enqueue('{}', 'rr-capped') > 0 AS enqueued, sendjobs_enqueue('{}', 'rr-keyed', ordering_key => 'k') > 0 AS keyed,
       sendjobs_enqueue('{}', 'rr-plain') > 0 AS plain;
SELECT sendjobs_limit('rr-capped', max_in_flight => 5);
BEGIN ISOLATION LEVEL REPEATABLE READ;
\set VERBOSITY sqlstate
SELECT count(*) FROM sendjobs_claim(1, '1 minute', 'rr-capped');
\set VERBOSITY default
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT count(*) FROM sendjobs_claim(1, '1 minute', 'rr-keyed');
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) AS claimed FROM sendjobs_claim(1, '1 minute', 'rr-plain');
COMMIT;
SELECT queue, status, count(*) FROM send_jobs WHERE queue LIKE 'rr-%' GROUP BY 1, 2 ORDER BY 1, 2;

-- ----------------------------------------------------------------------------
-- The backend's list of limited queues (src/flow/limited.rs, decision 0013)
-- ----------------------------------------------------------------------------
-- A claim keeps the list of queues with flow control from one call to the next; a change
-- in this session's own transaction is seen by its next claim, and forgotten when the
-- transaction rolls back (here: claims before, during and after a pause rolled back).
SELECT sendjobs_enqueue('{}', 'own-pause') > 0 AS a, sendjobs_enqueue('{}', 'own-pause') > 0 AS b;
SELECT count(*) AS before_pause FROM sendjobs_claim(1, '1 minute', 'own-pause');
BEGIN;
SELECT sendjobs_pause('own-pause');
SELECT count(*) AS while_paused FROM sendjobs_claim(1, '1 minute', 'own-pause');
SELECT count(*) AS while_paused_any FROM sendjobs_claim(10, '1 minute') WHERE queue = 'own-pause';
ROLLBACK;
SELECT count(*) AS after_rollback FROM sendjobs_claim(1, '1 minute', 'own-pause');
-- A transaction that changed a queue's pause or limits cannot be prepared (0A000): its
-- change would reach the other backends' lists at COMMIT PREPARED without the lock that
-- orders it before their claims. Nothing changes.
BEGIN;
SELECT sendjobs_pause('own-pause');
\set VERBOSITY sqlstate
PREPARE TRANSACTION 'sendjobs-pause';
\set VERBOSITY default
SELECT paused FROM sendjobs_queues WHERE queue = 'own-pause';

-- ----------------------------------------------------------------------------
-- A queue that blocks its keys: a job that fails for good stops the rest of its key
-- ----------------------------------------------------------------------------
-- sendjobs_block_keys: from then on, a job of the queue with an ordering key that fails
-- for good (a failed finalize, a retry on its last attempt, a lease expired on its last
-- attempt) stops its key: no job of the key is claimed but the failed job's redrive,
-- which goes first, until that redrive was sent or cancelled, or sendjobs_unblock_key.
SELECT sendjobs_block_keys('strict', true);
SELECT sendjobs_enqueue(jsonb_build_object('job', name), 'strict', ordering_key => key, max_attempts => 1) > 0 AS enqueued
  FROM (VALUES ('b1-first', 'b1'), ('b1-second', 'b1'), ('b1-third', 'b1'), ('b2-first', 'b2'),
               ('b2-second', 'b2'), ('b3-first', 'b3'), ('b3-second', 'b3'), ('b4-first', 'b4'),
               ('b4-second', 'b4')) AS v(name, key);
CREATE TEMP VIEW strict AS
    SELECT id, payload->>'job' AS job, status FROM send_jobs WHERE queue = 'strict';
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(10, '1 minute', 'strict') AS c ORDER BY c.id;
-- b1 fails, b2 is sent, b3 retries on its last attempt (so fails), b4's lease expires on
-- its last attempt (so it gives up at the next claim).
SELECT sendjobs_finalize(id, 1, 'failed', 'HTTP 400') FROM strict WHERE job = 'b1-first';
SELECT sendjobs_finalize(id, 1, 'sent') FROM strict WHERE job = 'b2-first';
SELECT sendjobs_finalize(id, 1, 'retry', 'HTTP 503') FROM strict WHERE job = 'b3-first';
UPDATE send_jobs SET lease_expires_at = now() - interval '1 second' WHERE id = (SELECT id FROM strict WHERE job = 'b4-first');
-- Only b2 goes on, here and from any queue.
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(10, '1 minute', 'strict') AS c ORDER BY c.id;
SELECT sendjobs_finalize(id, 1, 'sent') FROM strict WHERE job = 'b2-second';
SELECT count(*) AS claimed FROM sendjobs_claim(10, '1 minute') WHERE queue = 'strict';
SELECT b.ordering_key, s.job, s.status FROM sendjobs_blocked_keys AS b JOIN strict AS s ON s.id = b.job_id ORDER BY 1;
-- A redrive of b1's failed job goes first, before the older jobs of its key; once it was
-- sent, the rest of the key goes in order.
SELECT new_id > 0 AS redriven FROM sendjobs_redrive(ARRAY(SELECT id FROM strict WHERE job = 'b1-first'));
SELECT c.payload->>'job' AS claimed, c.redrive_of IS NOT NULL AS a_redrive FROM sendjobs_claim(10, '1 minute', 'strict') AS c ORDER BY c.id;
SELECT sendjobs_finalize(c.id, c.claim_generation, 'sent')
  FROM send_jobs AS c WHERE c.queue = 'strict' AND c.status = 'in_flight';
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(10, '1 minute', 'strict') AS c ORDER BY c.id;
-- sendjobs_unblock_key lets b3 go on (true: it was stopped; false: it no longer is).
SELECT sendjobs_unblock_key('b3') AS was_stopped, sendjobs_unblock_key('b3') AS again;
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(10, '1 minute', 'strict') AS c ORDER BY c.id;
-- A cancel of the redrive that holds b4 lets the rest of b4 go.
SELECT new_id > 0 AS redriven FROM sendjobs_redrive(ARRAY(SELECT id FROM strict WHERE job = 'b4-first'));
SELECT sendjobs_cancel(id) FROM ONLY send_jobs WHERE queue = 'strict' AND redrive_of IS NOT NULL AND status = 'pending';
SELECT c.payload->>'job' AS claimed FROM sendjobs_claim(10, '1 minute', 'strict') AS c ORDER BY c.id;
-- The purge keeps a failed job while it stops its key, and drops the stops that their job
-- no longer holds.
SELECT sendjobs_finalize(c.id, c.claim_generation, 'failed')
  FROM send_jobs AS c WHERE c.queue = 'strict' AND c.status = 'in_flight' AND c.payload->>'job' = 'b1-second';
SELECT sendjobs_purge('0 seconds', 1000) > 0 AS purged;
SELECT b.ordering_key, s.job, s.status FROM sendjobs_blocked_keys AS b JOIN strict AS s ON s.id = b.job_id ORDER BY 1;
SELECT count(*) AS kept FROM send_jobs_finished WHERE queue = 'strict';
-- Off again: a failure lets the next of its key go, as in a queue that never blocked.
SELECT sendjobs_block_keys('strict', false);
SELECT block_keys FROM sendjobs_queues WHERE queue = 'strict';
\set VERBOSITY sqlstate
SELECT sendjobs_block_keys(NULL, true);
SELECT sendjobs_block_keys('', true);
SELECT sendjobs_block_keys('strict', NULL);
SELECT sendjobs_unblock_key(NULL);
\set VERBOSITY default
