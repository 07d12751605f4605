-- Bad input: every function of sendjobs rejects it with a clear message and a documented
-- SQLSTATE, and changes nothing.
--
-- After each rejected call, `sqlstate` is psql's :SQLSTATE of that call, and
-- `nothing_changed` compares everything the calls could touch (the queue, the events,
-- the link, the identity sequence, the business table and its triggers) with a snapshot
-- taken before the first bad call.

-- Start afresh, whatever an earlier test may have left behind.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP SCHEMA IF EXISTS shop CASCADE;
DROP TABLE IF EXISTS misuse, baseline;
DROP FUNCTION IF EXISTS nothing_changed(), test_state();
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never

-- The fixture: a guarded, linked business table (in its own schema, shop); job 1
-- in_flight under generation 1 (linked to payment p1), job 2 pending with an
-- idempotency key.
CREATE SCHEMA shop;
CREATE TABLE shop.payments (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
INSERT INTO shop.payments VALUES ('p1');
CREATE VIEW shop.payments_view AS SELECT * FROM shop.payments;
CREATE TYPE shop.payment_status AS ENUM ('pending', 'success', 'failed');
CREATE TABLE shop.typed_payments (id int PRIMARY KEY, status shop.payment_status NOT NULL DEFAULT 'pending');
SELECT sendjobs_guard_terminal('shop.payments');
SELECT sendjobs_link_transactions('shop.payments');
SELECT sendjobs_enqueue('{"n": 1}', transaction_id => 'p1');
SELECT id, claim_generation FROM sendjobs_claim(1);
SELECT sendjobs_enqueue('{"n": 2}', idempotency_key => 'k2');

CREATE FUNCTION test_state() RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'jobs',     (SELECT jsonb_agg(to_jsonb(j) ORDER BY j.id) FROM send_jobs j),
    'events',   (SELECT jsonb_agg(to_jsonb(e) ORDER BY e.job_id) FROM send_job_events e),
    'link',     (SELECT jsonb_agg(to_jsonb(l)) FROM sendjobs_transaction_link l),
    'queues',   (SELECT jsonb_agg(to_jsonb(q) ORDER BY q.queue) FROM sendjobs_queues q),
    'next_id',  (SELECT last_value FROM send_jobs_id_seq),
    'payments', (SELECT jsonb_agg(to_jsonb(p) ORDER BY p.id) FROM shop.payments p),
    'triggers', (SELECT jsonb_agg(t.tgname || ' ' || encode(t.tgargs, 'escape') ORDER BY t.tgname)
                   FROM pg_trigger t
                  WHERE t.tgrelid IN ('shop.payments'::regclass, 'shop.typed_payments'::regclass)
                    AND NOT t.tgisinternal))
$$;
CREATE TABLE baseline AS SELECT test_state() AS state;
CREATE FUNCTION nothing_changed() RETURNS boolean LANGUAGE sql AS $$
  SELECT test_state() = state FROM baseline
$$;

-------------------------------------------------------------------------------------
-- sendjobs_enqueue
-------------------------------------------------------------------------------------

-- 22004 null_value_not_allowed: the payload is required, and so is a queue.
SELECT sendjobs_enqueue(NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue('{}', queue => NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023 invalid_parameter_value: an empty queue name, an attempt budget below 1.
SELECT sendjobs_enqueue('{}', queue => '');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue('{}', max_attempts => 0);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue('{}', max_attempts => -3);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: a queue name over 128 bytes (its wake-up's NOTIFY payload must fit); 128 is fine.
SELECT sendjobs_enqueue('{}', queue => repeat('q', 129));
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue('{}', queue => repeat('é', 65));
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: a new queue's name that draws as something else or as nothing (decision 0018):
-- a control character, a format character (zero-width space, right-to-left override),
-- a character drawn as nothing (a variation selector, a Hangul filler: since 0.4.0),
-- white space at an end; also where a queue's settings would make it (a pause).
SELECT sendjobs_enqueue('{}', queue => E'acme\nINFO forged');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue('{}', queue => 'acme' || chr(8203));
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue('{}', queue => chr(8238) || 'emca');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue('{}', queue => 'acme' || chr(65039));
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue('{}', queue => 'ac' || chr(12644) || 'me');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue('{}', queue => 'acme ');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_pause('acme' || chr(65039));
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: run_at must be finite: a job due at -infinity would stay first in the claim
-- order forever, and before 0.2.1 it made every sendjobs_stats call fail.
SELECT sendjobs_enqueue('{}', run_at => '-infinity');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue('{}', run_at => 'infinity');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- and from the year 1 on: a time near the earliest Postgres holds (4714 BC) made the
-- claim order's subtraction of a head start fail (22008).
SELECT sendjobs_enqueue('{}', run_at => '4714-11-24 00:30:00+00 BC', priority => 60);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- A payload that is not JSON never reaches the function (22P02 from jsonb itself).
SELECT sendjobs_enqueue('not json');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();

-------------------------------------------------------------------------------------
-- sendjobs_enqueue_many: each job's checks as sendjobs_enqueue's, all before anything is
-- added (the sequence of ids included); the array that fails, by name and position.
-------------------------------------------------------------------------------------

-- 22004: payloads, queues and priorities are required, and so is each of their elements.
SELECT sendjobs_enqueue_many(NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', NULL]::jsonb[]);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], '{a,NULL}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], priorities => '{0,NULL}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], priorities => NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: an array of neither one value nor one per job; a bad value in the second job
-- (the first one is good: neither is added).
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], '{a,b,c}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], idempotency_keys => '{x,y,z}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], '{a,""}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], ARRAY['a', E'b\nINFO forged']);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], run_at => '{2030-01-01,infinity}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], max_attempts => '{1,0}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], ordering_keys => ARRAY['k', '']);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], priorities => '{0,61}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();

-------------------------------------------------------------------------------------
-- sendjobs_claim
-------------------------------------------------------------------------------------

-- 22004: batch is required (lease NULL means the default lease, queue NULL any queue).
SELECT * FROM sendjobs_claim(NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: batch below 1 or above sendjobs.max_batch (1000 by default).
SELECT * FROM sendjobs_claim(0);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_claim(-1);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_claim(1001);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SET sendjobs.max_batch = 2;
SELECT * FROM sendjobs_claim(3);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
RESET sendjobs.max_batch;
-- 22023: a negative lease.
SELECT * FROM sendjobs_claim(1, interval '-1 second');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_claim(1, interval '1 hour ago');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- A lease is compared as Postgres compares intervals (a day is 24 hours here), so
-- '1 day -25 hours' is negative too.
SELECT * FROM sendjobs_claim(1, interval '1 day -25 hours');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();

-------------------------------------------------------------------------------------
-- sendjobs_finalize
-------------------------------------------------------------------------------------

-- 22004: id, generation and outcome are required.
SELECT sendjobs_finalize(NULL, 1, 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_finalize(1, NULL, 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_finalize(1, 1, NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: a negative generation.
SELECT sendjobs_finalize(1, -1, 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: an unknown outcome (outcomes are lower case: sent, failed, retry).
SELECT sendjobs_finalize(1, 1, 'done');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_finalize(1, 1, 'SENT');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: an error text with 'sent'; a retry_at with anything but 'retry'.
SELECT sendjobs_finalize(1, 1, 'sent', 'why an error?');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_finalize(1, 1, 'sent', retry_at => now());
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_finalize(1, 1, 'failed', 'boom', now());
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: retry_at must be finite.
SELECT sendjobs_finalize(1, 1, 'retry', 'boom', '-infinity');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_finalize(1, 1, 'retry', 'boom', 'infinity');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_finalize_batch(ARRAY[1], ARRAY[1], 'retry', 'boom', '-infinity');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- P0002 no_data_found: a job id that does not exist. (A job that exists but is not held
-- under that generation is not an error: the call returns 'stale'.)
SELECT sendjobs_finalize(999, 1, 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_finalize(2, 1, 'sent') AS pending_job, sendjobs_finalize(1, 2, 'sent') AS other_generation;
SELECT nothing_changed();

-------------------------------------------------------------------------------------
-- sendjobs_finalize_batch
-------------------------------------------------------------------------------------

-- 22004: ids, generations and every element of them are required.
SELECT * FROM sendjobs_finalize_batch(NULL, ARRAY[1], 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_finalize_batch(ARRAY[1], NULL, 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_finalize_batch(ARRAY[1, NULL], ARRAY[1, 1], 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_finalize_batch(ARRAY[1, 2], ARRAY[1, NULL], 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: arrays of different lengths, an id twice, a negative generation, an unknown
-- outcome.
SELECT * FROM sendjobs_finalize_batch(ARRAY[1], ARRAY[1, 1], 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_finalize_batch(ARRAY[1, 1], ARRAY[1, 1], 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_finalize_batch(ARRAY[1], ARRAY[-1], 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_finalize_batch(ARRAY[1], ARRAY[1], 'nope');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- P0002: one id that does not exist fails the whole batch, the claims that would have
-- applied included (job 1 under generation 1 is current).
SELECT * FROM sendjobs_finalize_batch(ARRAY[1, 999], ARRAY[1, 1], 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();

-------------------------------------------------------------------------------------
-- sendjobs_heartbeat
-------------------------------------------------------------------------------------

-- 22004: id and generation are required (lease NULL means the default lease).
SELECT sendjobs_heartbeat(NULL, 1);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_heartbeat(1, NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: a negative generation or lease.
SELECT sendjobs_heartbeat(1, -1);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_heartbeat(1, 1, interval '-5 minutes');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- P0002: a job id that does not exist; a known job not held under that generation is 'stale'.
SELECT sendjobs_heartbeat(999, 1);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_heartbeat(1, 5) AS other_generation;
SELECT nothing_changed();

-------------------------------------------------------------------------------------
-- sendjobs_guard_terminal
-------------------------------------------------------------------------------------

-- 22004: the table is required; so are the column, the terminal list and the exits
-- (an empty exits list is fine: no exits).
SELECT sendjobs_guard_terminal(NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_guard_terminal('shop.payments', NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_guard_terminal('shop.payments', 'status', NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_guard_terminal('shop.payments', 'status', '{success,NULL}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_guard_terminal('shop.payments', 'status', '{success,failed}', NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 42P01: a table that does not exist is refused by the regclass argument itself.
SELECT sendjobs_guard_terminal('no_such_table');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 42809 wrong_object_type: not a table.
SELECT sendjobs_guard_terminal('shop.payments_view');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_guard_terminal('shop.payments_pkey');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 42703 undefined_column: a status column the table does not have.
SELECT sendjobs_guard_terminal('shop.payments', 'state');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: no terminal status, an empty one, or an exit that is not "terminal:other".
SELECT sendjobs_guard_terminal('shop.payments', 'status', '{}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_guard_terminal('shop.payments', 'status', '{success,""}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_guard_terminal('shop.payments', 'status', '{success,failed}', '{failed}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_guard_terminal('shop.payments', 'status', '{success,failed}', '{pending:failed}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_guard_terminal('shop.payments', 'status', '{success,failed}', '{failed:failed}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_guard_terminal('shop.payments', 'status', '{success,failed}', '{failed:}');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();

-------------------------------------------------------------------------------------
-- sendjobs_link_transactions
-------------------------------------------------------------------------------------

-- 22004: every argument is required.
SELECT sendjobs_link_transactions(NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_link_transactions('shop.payments', NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_link_transactions('shop.payments', 'id', NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_link_transactions('shop.payments', on_sent => NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_link_transactions('shop.payments', on_failed => NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 42P01 and 42809: no such table, not a table.
SELECT sendjobs_link_transactions('no_such_table');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_link_transactions('shop.payments_view');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 42703: a key or status column the table does not have.
SELECT sendjobs_link_transactions('shop.payments', 'payment_id');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_link_transactions('shop.payments', 'id', 'state');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- The stamp values must be valid for the status column now, not at the first finalize:
-- 'sent' is not a shop.payment_status (22P02 from the enum's input function).
SELECT sendjobs_link_transactions('shop.typed_payments', on_sent => 'sent');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();

-------------------------------------------------------------------------------------
-- Settings
-------------------------------------------------------------------------------------

-- The settings refuse values out of their range (22023), like any other setting. (The
-- message of a range error names the units from PostgreSQL 18 on, "0 ms .. 2147483647 ms":
-- the SQLSTATE alone is shown for it.)
SET sendjobs.guard_action = 'ignore';
SELECT :'SQLSTATE' AS sqlstate;
SET sendjobs.max_batch = 0;
SELECT :'SQLSTATE' AS sqlstate;
\set VERBOSITY sqlstate
SET sendjobs.default_lease = -1;
\set VERBOSITY default
SELECT :'SQLSTATE' AS sqlstate;
SET sendjobs.default_max_attempts = 0;
SELECT :'SQLSTATE' AS sqlstate;
SELECT current_setting('sendjobs.guard_action') AS guard_action,
       current_setting('sendjobs.max_batch') AS max_batch,
       current_setting('sendjobs.default_lease') AS default_lease,
       current_setting('sendjobs.default_max_attempts') AS default_max_attempts,
       current_setting('sendjobs.retry_backoff_base') AS retry_backoff_base,
       current_setting('sendjobs.retry_backoff_max') AS retry_backoff_max;

-------------------------------------------------------------------------------------
-- The guard's trigger function attached the wrong way
-------------------------------------------------------------------------------------

-- sendjobs_guard_terminal_trigger must fire BEFORE UPDATE ... FOR EACH ROW; anything
-- else fails the statement with 39P01 trigger_protocol_violated, as do more than three
-- arguments. Arguments it cannot use fail the same way as in sendjobs_guard_terminal.
CREATE TABLE misuse (id int PRIMARY KEY, status text);
INSERT INTO misuse VALUES (1, 'success');
CREATE TRIGGER guard AFTER UPDATE ON misuse
  FOR EACH ROW EXECUTE FUNCTION sendjobs_guard_terminal_trigger();
UPDATE misuse SET status = 'failed';
SELECT :'SQLSTATE' AS sqlstate, status FROM misuse;
DROP TRIGGER guard ON misuse;
CREATE TRIGGER guard BEFORE UPDATE ON misuse
  FOR EACH STATEMENT EXECUTE FUNCTION sendjobs_guard_terminal_trigger();
UPDATE misuse SET status = 'failed';
SELECT :'SQLSTATE' AS sqlstate, status FROM misuse;
DROP TRIGGER guard ON misuse;
CREATE TRIGGER guard BEFORE INSERT ON misuse
  FOR EACH ROW EXECUTE FUNCTION sendjobs_guard_terminal_trigger();
INSERT INTO misuse VALUES (2, 'failed');
SELECT :'SQLSTATE' AS sqlstate, count(*) AS rows FROM misuse;
DROP TRIGGER guard ON misuse;
CREATE TRIGGER guard BEFORE UPDATE ON misuse
  FOR EACH ROW EXECUTE FUNCTION sendjobs_guard_terminal_trigger('status', '{success}', '{}', 'extra');
UPDATE misuse SET status = 'failed';
SELECT :'SQLSTATE' AS sqlstate, status FROM misuse;
DROP TRIGGER guard ON misuse;
-- A column the table does not have: 42703.
CREATE TRIGGER guard BEFORE UPDATE ON misuse
  FOR EACH ROW EXECUTE FUNCTION sendjobs_guard_terminal_trigger('state');
UPDATE misuse SET status = 'failed';
SELECT :'SQLSTATE' AS sqlstate, status FROM misuse;
DROP TRIGGER guard ON misuse;
-- A terminal list that is not an array literal: 22P02 from the array input function.
CREATE TRIGGER guard BEFORE UPDATE ON misuse
  FOR EACH ROW EXECUTE FUNCTION sendjobs_guard_terminal_trigger('status', 'success');
UPDATE misuse SET status = 'failed';
SELECT :'SQLSTATE' AS sqlstate, status FROM misuse;
DROP TRIGGER guard ON misuse;
-- An exit that is not "terminal:other": 22023.
CREATE TRIGGER guard BEFORE UPDATE ON misuse
  FOR EACH ROW EXECUTE FUNCTION sendjobs_guard_terminal_trigger('status', '{success}', '{success}');
UPDATE misuse SET status = 'failed';
SELECT :'SQLSTATE' AS sqlstate, status FROM misuse;
DROP TRIGGER guard ON misuse;

-------------------------------------------------------------------------------------
-- sendjobs_cancel, sendjobs_redrive, sendjobs_purge, sendjobs_notify
-------------------------------------------------------------------------------------

-- 22004: the id is required; P0002: a job that does not exist.
SELECT sendjobs_cancel(NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_cancel(999);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22004: the ids, and each of them, are required; 22023: an id twice.
SELECT * FROM sendjobs_redrive(NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_redrive(ARRAY[NULL]::bigint[]);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_redrive(ARRAY[2, 2]);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 55000 object_not_in_prerequisite_state: only failed jobs can be redriven (job 1 is
-- in flight, job 2 pending); P0002: an unknown one. One bad id fails the whole call.
SELECT * FROM sendjobs_redrive(ARRAY[1]);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_redrive(ARRAY[2]);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT * FROM sendjobs_redrive(ARRAY[999]);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22004: both arguments are required; 22023: a negative age, a batch out of range.
SELECT sendjobs_purge(NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_purge('1 day', NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_purge('-1 second');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_purge('1 day', 0);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_purge('1 day', 100001);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: an interval positive as a whole (30 days, months counted as 30 days) whose cutoff,
-- on the calendar, lies ahead of now: it would delete history seconds old.
SELECT '-10 years 3630 days'::interval > '0 seconds' AS positive_as_a_whole;
SELECT sendjobs_purge('-10 years 3630 days');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22004: queue and enabled are required; 22023: an empty queue name.
SELECT sendjobs_notify(NULL, true);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_notify('default', NULL);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_notify('', true);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
SELECT sendjobs_notify(repeat('q', 129), true);
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22023: a role that is no role ('-' as regrole).
SELECT sendjobs_grant('-', 'worker');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();
-- 22P02 (the enum's own input error): on_redrive must fit the status column too.
SELECT sendjobs_link_transactions('shop.typed_payments', on_redrive => 'again');
SELECT :'SQLSTATE' AS sqlstate, nothing_changed();

-- After all of the above, the fixture is exactly as it was.
SELECT nothing_changed();

-- A queue that sendjobs_queues names keeps its name (an update gives one to each queue
-- made before its rule): its jobs are enqueued.
INSERT INTO sendjobs_queues (queue) VALUES ('acme' || chr(65039));
SELECT sendjobs_enqueue('{}', queue => 'acme' || chr(65039)) > 0 AS enqueued;

DROP TABLE misuse, baseline;
DROP VIEW shop.payments_view;
DROP TABLE shop.payments, shop.typed_payments;
DROP TYPE shop.payment_status;
DROP SCHEMA shop;
DROP FUNCTION nothing_changed(), test_state();
DROP EXTENSION sendjobs;
