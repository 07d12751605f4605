-- The answers of sendjobs_finalize and sendjobs_finalize_batch say what happened
-- (docs/decisions/0012-answers-that-say-what-happened.md): what the job became and its
-- attempt, and a finalize made again of a claim already finalized with the same outcome
-- (its answer lost) answers applied, as a repeat that changes nothing; every other
-- finalize that does not apply is stale and changes nothing (invariant 3).
-- The lost answer across a dropped connection: tests/answers/lost_answer.py.

SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP TABLE IF EXISTS payments;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never
CREATE TABLE payments (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
INSERT INTO payments SELECT 'p' || g FROM generate_series(1, 9) g;
SELECT sendjobs_guard_terminal('payments');
SELECT sendjobs_link_transactions('payments');
-- A trigger counting the stamps of the business rows: a repeat stamps nothing again.
CREATE TABLE stamps (payment text, status text);
CREATE FUNCTION count_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO stamps VALUES (NEW.id, NEW.status); RETURN NEW; END $$;
CREATE TRIGGER count_stamp AFTER UPDATE ON payments FOR EACH ROW EXECUTE FUNCTION count_stamp();

-- Jobs 1-7, one payment each; jobs 4 and 5 have one attempt only.
SELECT sendjobs_enqueue('{}', transaction_id => 'p' || g,
                        max_attempts => CASE WHEN g IN (4, 5) THEN 1 ELSE 3 END)
  FROM generate_series(1, 7) g;
SELECT id, claim_generation, attempts FROM sendjobs_claim(7);

-------------------------------------------------------------------------------------
-- What each applied finalize made of its job
-------------------------------------------------------------------------------------

SELECT * FROM sendjobs_finalize_batch(ARRAY[1], ARRAY[1], 'sent');
SELECT * FROM sendjobs_finalize_batch(ARRAY[2], ARRAY[1], 'failed', 'HTTP 400');
-- A retry with attempts left: pending again (retried), at its first attempt.
SELECT * FROM sendjobs_finalize_batch(ARRAY[3], ARRAY[1], 'retry', 'HTTP 503');
-- A retry on the last attempt: applied, and the job is failed (not retried).
SELECT * FROM sendjobs_finalize_batch(ARRAY[4], ARRAY[1], 'retry', 'HTTP 503');
-- The finished rows record the outcome that finished them.
SELECT id, status, outcome FROM send_jobs_finished ORDER BY id;

-------------------------------------------------------------------------------------
-- The same finalize again: a repeat, applied, nothing changes
-------------------------------------------------------------------------------------

SELECT xmin AS before_xmin FROM send_jobs_finished WHERE id = 1 \gset
SELECT * FROM sendjobs_finalize_batch(ARRAY[1, 2, 3, 4], ARRAY[1, 1, 1, 1], 'sent');
SELECT * FROM sendjobs_finalize_batch(ARRAY[2], ARRAY[1], 'failed', 'another text');
SELECT * FROM sendjobs_finalize_batch(ARRAY[3, 4], ARRAY[1, 1], 'retry');
SELECT sendjobs_finalize(1, 1, 'sent') AS sent_again, sendjobs_finalize(2, 1, 'failed') AS failed_again,
       sendjobs_finalize(3, 1, 'retry') AS retry_again, sendjobs_finalize(4, 1, 'retry') AS last_retry_again;
-- Nothing was written: the rows as they were, one event each, one stamp each, the
-- error of the first call kept.
SELECT xmin = :'before_xmin' AS row_untouched FROM send_jobs_finished WHERE id = 1;
SELECT id, status, attempts, claim_generation, last_error FROM send_jobs WHERE id <= 4 ORDER BY id;
SELECT job_id, count(*) AS events FROM send_job_events GROUP BY job_id ORDER BY job_id;
SELECT payment, status FROM stamps ORDER BY payment;

-------------------------------------------------------------------------------------
-- Stale: the claim is not the job's any more, or was finished otherwise
-------------------------------------------------------------------------------------

-- 'failed' for jobs finished otherwise (1 sent, 4 by a retry) is stale; for job 2 a repeat.
SELECT * FROM sendjobs_finalize_batch(ARRAY[1, 2, 4], ARRAY[1, 1, 1], 'failed');
-- A generation that was never the job's, or 0 (no claim has it).
SELECT * FROM sendjobs_finalize_batch(ARRAY[1, 6], ARRAY[2, 0], 'sent');
-- A retried job claimed again: its earlier claim's repeat is stale, the new claim holds it.
UPDATE send_jobs SET next_attempt_at = now() - interval '1 second' WHERE id = 3;
SELECT id, claim_generation FROM sendjobs_claim(1);
SELECT * FROM sendjobs_finalize_batch(ARRAY[3], ARRAY[1], 'retry');
-- A cancelled job (cancelled in flight): no finalize finished it.
SELECT sendjobs_cancel(6);
SELECT * FROM sendjobs_finalize_batch(ARRAY[6], ARRAY[1], 'sent');
-- A job that gave up (its lease expired on its last attempt): failed, but no finalize
-- of that claim applied, so a late 'failed' is stale, not a repeat.
SELECT sendjobs_heartbeat(5, 1, '0 seconds');
SELECT count(*) AS claimed FROM sendjobs_claim(1);
SELECT id, status, outcome, claim_generation FROM send_jobs_finished WHERE id = 5;
SELECT * FROM sendjobs_finalize_batch(ARRAY[5], ARRAY[1], 'failed');
-- A job still held by another claim (job 7 in flight at generation 1; a claim 2 never was).
SELECT * FROM sendjobs_finalize_batch(ARRAY[7], ARRAY[2], 'sent');

-------------------------------------------------------------------------------------
-- A batch mixing every answer, in input order; an unknown id still fails the call
-------------------------------------------------------------------------------------

SELECT * FROM sendjobs_finalize_batch(ARRAY[7, 1, 6, 3], ARRAY[1, 1, 1, 2], 'sent');
SELECT * FROM sendjobs_finalize_batch(ARRAY[1, 99], ARRAY[1, 1], 'sent');
SELECT sendjobs_finalize(99, 1, 'sent');
