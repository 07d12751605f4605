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
