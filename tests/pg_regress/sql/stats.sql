-- sendjobs_stats: one row per queue, what an operator watches; exact up to 10,000, then
-- estimated and flagged.

SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP TABLE IF EXISTS payments;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never

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
INSERT INTO send_jobs_finished (payload, queue, status, attempts, claim_generation, claimed_at, finished_at)
SELECT '{}', 'big', CASE WHEN g % 40 = 0 THEN 'failed' ELSE 'sent' END, 1, 1,
       now() - interval '2 minutes', now() - interval '1 minute'
  FROM generate_series(1, 12000) g;
SELECT queue, estimated, ready BETWEEN 13500 AND 16500 AS ready_within_10_percent, scheduled,
       sent_5m BETWEEN 10500 AND 12800 AS sent_within_10_percent, failed_5m, cancelled_5m
  FROM sendjobs_stats() WHERE queue = 'big';
-- The 'stats' queue's own counts are still exact; its row is flagged for the sent ones.
SELECT queue, ready, scheduled, failed_5m, cancelled_5m, estimated
  FROM sendjobs_stats() WHERE queue = 'stats';
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

DROP EXTENSION sendjobs;
