-- A job's earlier attempts (send_job_attempts; docs/decisions/0022-a-jobs-earlier-attempts.md):
-- each claim that ended without finishing its job, retried by its worker or taken by
-- another claim after its lease expired, is kept, the latest 20 a job; a job sent at its
-- first attempt leaves nothing; the attempt that finished a job is its own row; a purge
-- takes them with their job. Leases of '0 seconds' expire at once ("the worker died").

SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never

-- Job 1: retried with an error, then its worker dies, then it is sent.
SELECT sendjobs_enqueue('{"n": 1}', max_attempts => 5);
SELECT id, attempts, claim_generation FROM sendjobs_claim(1, '1 minute');
SELECT sendjobs_finalize(1, 1, 'retry', 'partner answered 503', retry_at => now());
SELECT id, attempts, claim_generation FROM sendjobs_claim(1, '0 seconds');
SELECT id, attempts, claim_generation FROM sendjobs_claim(1, '1 minute');
SELECT sendjobs_finalize(1, 3, 'sent');
SELECT job_id, claim_generation, attempt, ended, error,
       ended_at >= claimed_at AS ended_after_claimed
  FROM send_job_attempts ORDER BY job_id, claim_generation;

-- Job 2: sent at its first attempt; job 3: a heartbeat, then failed: nothing kept.
SELECT sendjobs_enqueue('{"n": 2}'), sendjobs_enqueue('{"n": 3}');
SELECT id, claim_generation FROM sendjobs_claim(2, '1 minute') ORDER BY id;
SELECT sendjobs_heartbeat(3, 1, '2 minutes');
SELECT sendjobs_finalize(2, 1, 'sent'), sendjobs_finalize(3, 1, 'failed', 'no such account');
-- A stale finalize of job 1's first claim changes nothing, here too.
SELECT sendjobs_finalize(1, 1, 'retry', 'late');
SELECT job_id, count(*) FROM send_job_attempts GROUP BY job_id ORDER BY job_id;

-- Job 4: 25 claims whose leases expire: the latest 20 ended attempts are kept (5 to 24);
-- the 25th is in flight.
SELECT sendjobs_enqueue('{"n": 4}', max_attempts => 30);
DO $$ BEGIN FOR i IN 1..25 LOOP PERFORM sendjobs_claim(1, '0 seconds'); END LOOP; END $$;
SELECT count(*) AS kept, min(claim_generation), max(claim_generation),
       bool_and(ended = 'lease expired' AND error IS NULL) AS all_expired
  FROM send_job_attempts WHERE job_id = 4;

-- Jobs 5 and 6: a retry batch writes one row a job, with the batch's error.
SELECT sendjobs_enqueue('{"n": 5}', 'batch'), sendjobs_enqueue('{"n": 6}', 'batch');
SELECT result FROM sendjobs_finalize_batch(
    (SELECT array_agg(id ORDER BY id) FROM sendjobs_claim(2, '1 minute', 'batch')),
    ARRAY[1, 1]::bigint[], 'retry', 'timeout');
SELECT job_id, attempt, ended, error FROM send_job_attempts WHERE job_id IN (5, 6) ORDER BY job_id;

-- The purge of the finished jobs takes their attempts; the unfinished ones keep theirs.
SELECT sendjobs_purge('0 seconds');
SELECT job_id, count(*) FROM send_job_attempts GROUP BY job_id ORDER BY job_id;

-- No role writes the table: the trigger does, as the extension's owner.
CREATE ROLE sj_attempts_admin;
SELECT sendjobs_grant('sj_attempts_admin', 'admin');
SET ROLE sj_attempts_admin;
SELECT count(*) FROM send_job_attempts;
INSERT INTO send_job_attempts VALUES (1, 9, 9, now(), now(), 'retry', 'forged');  -- 42501
DELETE FROM send_job_attempts;                                                       -- 42501
RESET ROLE;
DROP OWNED BY sj_attempts_admin;
DROP ROLE sj_attempts_admin;
