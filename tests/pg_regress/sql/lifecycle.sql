-- The lifecycle of 0.2.0: jobs that give up after their last attempt, sendjobs_cancel,
-- sendjobs_redrive, sendjobs_purge, wake-ups (sendjobs_notify) and sendjobs_stats.
-- Leases of '0 seconds' expire at once, so a second claim stands for "the worker died".

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
-- Finished jobs stay as they are: job 1 failed, job 3 sent.
SELECT sendjobs_finalize(3, 1, 'sent');
SELECT sendjobs_cancel(1), sendjobs_cancel(3);
SELECT id, status FROM send_jobs WHERE id IN (1, 3) ORDER BY id;

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
SELECT job_id = :redriven AS redriven_job, kind FROM send_job_events WHERE job_id IN (1, :redriven) ORDER BY id;
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
UPDATE ONLY send_jobs SET status = 'cancelled', finished_at = now() WHERE id = :job8 + 1;
INSERT INTO send_jobs_finished (payload) VALUES ('{}');
\set VERBOSITY default

-------------------------------------------------------------------------------------
-- sendjobs_purge
-------------------------------------------------------------------------------------

-- Nothing finished an hour ago: nothing goes.
SELECT sendjobs_purge('1 hour');
-- Everything finished before now goes, 3 at a time, with its events; unfinished jobs
-- stay, and so do their (absent) events.
SELECT count(*) FILTER (WHERE finished_at IS NOT NULL) AS finished,
       count(*) FILTER (WHERE finished_at IS NULL) AS unfinished,
       (SELECT count(*) FROM send_job_events) AS events
  FROM send_jobs;
SELECT sendjobs_purge('0 seconds', 3);
SELECT sendjobs_purge('0 seconds', 100);
SELECT sendjobs_purge('0 seconds', 100);
SELECT count(*) FILTER (WHERE finished_at IS NOT NULL) AS finished,
       count(*) FILTER (WHERE finished_at IS NULL) AS unfinished,
       (SELECT count(*) FROM send_job_events) AS events
  FROM send_jobs;
-- A purged job's idempotency key goes with it: the key is free again.
SELECT count(*) AS keys_left FROM send_job_keys;
SELECT sendjobs_enqueue('{"n": 11}', idempotency_key => 'k9') <> :job9 AS a_new_job;
SELECT sendjobs_cancel(id) FROM send_jobs WHERE idempotency_key = 'k9';
SELECT sendjobs_purge('0 seconds', 100);

-------------------------------------------------------------------------------------
-- sendjobs_notify and sendjobs_stats
-------------------------------------------------------------------------------------

SELECT sendjobs_notify('partner-a', true);
SELECT sendjobs_notify('partner-b', true);
SELECT sendjobs_notify('partner-b', false);
SELECT * FROM sendjobs_queues ORDER BY queue;

-- Queue 'stats': one job sent and one cancelled just now, one in flight, one whose lease
-- expired on its last attempt (no claim has come by since), then 3 ready and 1 scheduled.
SELECT sendjobs_enqueue('{}', 'stats', run_at => now() - interval '5 minutes');
SELECT sendjobs_enqueue('{}', 'stats', run_at => now() - interval '4 minutes');
SELECT sendjobs_finalize(id, claim_generation, 'sent') FROM sendjobs_claim(1, '1 hour', 'stats');
SELECT count(*) AS in_flight FROM sendjobs_claim(1, '1 hour', 'stats');
SELECT sendjobs_cancel(sendjobs_enqueue('{}', 'stats'));
SELECT sendjobs_enqueue('{}', 'stats', run_at => now() - interval '3 minutes', max_attempts => 1);
SELECT count(*) AS expiring FROM sendjobs_claim(1, '0 seconds', 'stats');
SELECT count(sendjobs_enqueue('{}', 'stats')) AS ready FROM generate_series(1, 3);
SELECT sendjobs_enqueue('{}', 'stats', run_at => now() + interval '1 hour') > 0 AS scheduled;
SELECT queue, ready, scheduled, in_flight, expired, at_last_attempt,
       oldest_ready_age >= '0 seconds' AS oldest_ready_age_known, sent_5m, failed_5m, cancelled_5m,
       estimated, dead_tuples >= 0 AS dead_tuples_known
  FROM sendjobs_stats() WHERE queue = 'stats';

-- Above 10,000 a count is an estimate, and the row says so. Queue 'big': 15,000 ready
-- jobs; 12,000 jobs finished in the last 5 minutes, 300 of them failed (written
-- directly: the test is about counting them). The estimates' error is about
-- 1/sqrt(hits) of the sample (here 2-3%): the test allows 10%. The failed ones, fewer
-- than 10,000, are counted exactly through their own index.
INSERT INTO send_jobs (payload, queue, next_attempt_at)
SELECT '{}', 'big', now() - interval '1 hour' FROM generate_series(1, 15000);
WITH finished AS (
    INSERT INTO send_jobs_finished (payload, queue, status, attempts, claim_generation, claimed_at, finished_at)
    SELECT '{}', 'big', CASE WHEN g % 40 = 0 THEN 'failed' ELSE 'sent' END, 1, 1,
           now() - interval '2 minutes', now() - interval '1 minute'
      FROM generate_series(1, 12000) g
    RETURNING id, queue, status, finished_at)
INSERT INTO send_job_events (job_id, kind, claim_generation, created_at, queue)
SELECT id, status, 1, finished_at, queue FROM finished ORDER BY id;
SELECT queue, estimated, ready BETWEEN 13500 AND 16500 AS ready_within_10_percent, scheduled,
       sent_5m BETWEEN 10500 AND 12800 AS sent_within_10_percent, failed_5m, cancelled_5m
  FROM sendjobs_stats() WHERE queue = 'big';
-- The 'stats' queue's own counts are still exact; its row is flagged for the sent ones.
SELECT queue, ready, scheduled, failed_5m, cancelled_5m, estimated
  FROM sendjobs_stats() WHERE queue = 'stats';
DELETE FROM send_job_events WHERE queue = 'big';
DELETE FROM send_jobs WHERE queue = 'big';

-- A job due at -infinity or +infinity, which sendjobs_enqueue has refused since 0.2.1 but
-- an earlier release (or a direct insert) may have left: the stats still answer, for
-- every queue (before 0.2.1 every call failed with 22008 until the job was claimed). The
-- one due at -infinity is as old as the earliest timestamp there is.
INSERT INTO send_jobs (payload, queue, next_attempt_at)
VALUES ('{}', 'infinite', '-infinity'), ('{}', 'infinite', 'infinity');
SELECT queue, ready, scheduled, oldest_ready_age > interval '6000 years' AS oldest_ready_age_very_long
  FROM sendjobs_stats() WHERE queue IN ('infinite', 'stats') ORDER BY queue;
DELETE FROM send_jobs WHERE queue = 'infinite';

-------------------------------------------------------------------------------------
-- The invariants, over everything this file did
-------------------------------------------------------------------------------------

-- Every terminal job (sent, failed, cancelled) has exactly one event of its kind; no
-- other job has one; no job was claimed more than max_attempts times.
SELECT count(*) FILTER (WHERE s.status IN ('sent', 'failed', 'cancelled')) AS terminal,
       count(*) FILTER (WHERE s.status IN ('sent', 'failed', 'cancelled')
                          AND (SELECT count(*) FROM send_job_events e
                                WHERE e.job_id = s.id AND e.kind = s.status) = 1)
         AS terminal_with_one_event,
       (SELECT count(*) FROM send_job_events e JOIN send_jobs j ON j.id = e.job_id
         WHERE j.status NOT IN ('sent', 'failed', 'cancelled')) AS events_of_unfinished_jobs,
       count(*) FILTER (WHERE s.attempts > s.max_attempts) AS over_max_attempts
  FROM send_jobs s;

DROP TABLE payments;
DROP EXTENSION sendjobs;
