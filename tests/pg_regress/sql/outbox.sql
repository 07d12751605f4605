-- The outbox: a finished job's row is its event (send_job_events, a view of them), and
-- sendjobs_read_events reads them for named consumers, each from its own position, in
-- commit order (docs/contract.md, invariant 15). Out-of-order commits under a concurrent
-- reader: tests/isolation/specs/outbox-commit-order.spec.

SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP ROLE IF EXISTS outbox_relay;
DROP ROLE IF EXISTS outbox_monitor;
DROP ROLE IF EXISTS outbox_worker;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never

-------------------------------------------------------------------------------------
-- One row per finished job
-------------------------------------------------------------------------------------

-- Three jobs finish (sent, failed, cancelled), one is retried: three events, each the
-- job's own finished row, none for the retried one.
SELECT sendjobs_enqueue('{"n": 1}', transaction_id => 't1'), sendjobs_enqueue('{"n": 2}'),
       sendjobs_enqueue('{"n": 3}'), sendjobs_enqueue('{"n": 4}');
SELECT count(*) AS claimed FROM sendjobs_claim(3, '1 hour');
SELECT sendjobs_finalize(1, 1, 'sent'), sendjobs_finalize(2, 1, 'failed', 'HTTP 410'),
       sendjobs_finalize(3, 1, 'retry'), sendjobs_cancel(4);
SELECT e.job_id, e.transaction_id, e.kind, e.claim_generation, e.created_at = j.finished_at AS at_finish
  FROM send_job_events AS e JOIN send_jobs AS j ON j.id = e.job_id ORDER BY job_id;
-- The event is the row: nothing else was written for it.
SELECT relkind FROM pg_class WHERE oid = 'send_job_events'::regclass;

-------------------------------------------------------------------------------------
-- Consumers
-------------------------------------------------------------------------------------

-- A consumer reads what finishes after it was created; one created from_start reads
-- every event kept.
SELECT sendjobs_create_consumer('relay');
SELECT sendjobs_create_consumer('audit', from_start => true);
SELECT job_id, kind FROM sendjobs_read_events('relay');
SELECT job_id, kind, queue FROM sendjobs_read_events('audit');
-- Read to the end: nothing more.
SELECT count(*) AS more FROM sendjobs_read_events('audit');

-- New events: each consumer reads them once, from its own position; a batch is read in
-- pages of max (here 2), in (transaction, job id) order.
SELECT sendjobs_enqueue('{"n": 5}'), sendjobs_enqueue('{"n": 6}'), sendjobs_enqueue('{"n": 7}');
SELECT count(*) AS claimed FROM sendjobs_claim(3, '1 hour', 'default');
SELECT * FROM sendjobs_finalize_batch(ARRAY[5, 6, 7], ARRAY[1, 1, 1], 'sent');
SELECT job_id FROM sendjobs_read_events('relay', 2);
SELECT job_id FROM sendjobs_read_events('relay', 2);
SELECT count(*) AS more FROM sendjobs_read_events('relay', 2);
SELECT job_id FROM sendjobs_read_events('audit');

-- A read rolled back did not happen: the next read returns the same events again.
SELECT sendjobs_enqueue('{"n": 8}');
SELECT sendjobs_finalize(id, claim_generation, 'sent') FROM sendjobs_claim(1, '1 hour');
BEGIN;
SELECT job_id FROM sendjobs_read_events('relay');
ROLLBACK;
SELECT job_id FROM sendjobs_read_events('relay');
SELECT count(*) AS more FROM sendjobs_read_events('relay');

-- Positions: between batches, only passed; inside one, the batch and the read position.
SELECT consumer, batch IS NULL AS between_batches, read_xid IS NULL AS no_read_position
  FROM sendjobs_consumers ORDER BY consumer;

-------------------------------------------------------------------------------------
-- Purge keeps what a consumer has not passed
-------------------------------------------------------------------------------------

-- 'audit' has not read job 8: a purge of everything finished keeps it, and takes the rest.
SELECT sendjobs_purge('0 seconds');
SELECT job_id FROM send_job_events ORDER BY job_id;
SELECT job_id FROM sendjobs_read_events('audit');
SELECT count(*) AS more FROM sendjobs_read_events('audit');
SELECT sendjobs_purge('0 seconds');
SELECT count(*) AS events FROM send_job_events;
-- An abandoned consumer holds every later event back until it is dropped.
SELECT sendjobs_enqueue('{"n": 9}');
SELECT sendjobs_finalize(id, claim_generation, 'sent') FROM sendjobs_claim(1, '1 hour');
SELECT count(*) FROM sendjobs_read_events('relay');
SELECT sendjobs_purge('0 seconds') AS purged_while_audit_lags;
SELECT sendjobs_drop_consumer('audit');
SELECT sendjobs_purge('0 seconds') AS purged_once_dropped;

-------------------------------------------------------------------------------------
-- Bad input: a clear error, and nothing changes
-------------------------------------------------------------------------------------

\set VERBOSITY sqlstate
SELECT sendjobs_create_consumer('relay');
SELECT sendjobs_create_consumer(NULL);
SELECT sendjobs_create_consumer('');
SELECT sendjobs_create_consumer(repeat('x', 129));
SELECT sendjobs_create_consumer('x', NULL);
SELECT * FROM sendjobs_read_events('nobody');
SELECT * FROM sendjobs_read_events(NULL);
SELECT * FROM sendjobs_read_events('relay', 0);
SELECT * FROM sendjobs_read_events('relay', NULL);
SELECT sendjobs_drop_consumer('nobody');
SELECT sendjobs_drop_consumer(NULL);
\set VERBOSITY default
SELECT consumer FROM sendjobs_consumers ORDER BY consumer;

-------------------------------------------------------------------------------------
-- Access: relay reads, monitor looks, nobody else does either
-------------------------------------------------------------------------------------

CREATE ROLE outbox_relay;
CREATE ROLE outbox_monitor;
CREATE ROLE outbox_worker;
SELECT sendjobs_grant('outbox_relay', 'relay'), sendjobs_grant('outbox_monitor', 'monitor'),
       sendjobs_grant('outbox_worker', 'worker');
SET ROLE outbox_relay;
SELECT count(*) AS read FROM sendjobs_read_events('relay');
\set VERBOSITY sqlstate
SELECT sendjobs_create_consumer('mine');
SELECT count(*) FROM send_job_events;
UPDATE sendjobs_consumers SET passed = '1:1:';
SET ROLE outbox_monitor;
SELECT consumer FROM sendjobs_consumers;
SELECT count(*) AS events FROM send_job_events;
SELECT count(*) FROM sendjobs_read_events('relay');
SET ROLE outbox_worker;
SELECT count(*) FROM sendjobs_read_events('relay');
SELECT count(*) FROM sendjobs_consumers;
\set VERBOSITY default
RESET ROLE;

-- A consumer with a reader role is read by that role's members only, even among relays:
-- another relay gets 42501 and its position stays (without the test, any relay moved it).
CREATE ROLE outbox_own_relay;
SELECT sendjobs_grant('outbox_own_relay', 'relay');
SELECT sendjobs_create_consumer('owned', reader => 'outbox_own_relay');
SELECT sendjobs_enqueue('{}', 'owned-q') > 0 AS enqueued;
SELECT sendjobs_finalize(id, claim_generation, 'sent') FROM sendjobs_claim(1, queue => 'owned-q');
SELECT consumer, reader::regrole, wake FROM sendjobs_consumers WHERE consumer = 'owned';
SET ROLE outbox_relay;
\set VERBOSITY sqlstate
SELECT count(*) FROM sendjobs_read_events('owned');
\set VERBOSITY default
SELECT count(*) FROM sendjobs_read_events('owned');
RESET ROLE;
SELECT consumer, batch IS NULL AS no_batch_taken, read_at IS NULL AS never_read FROM sendjobs_consumers WHERE consumer = 'owned';
SET ROLE outbox_own_relay;
SELECT queue, kind FROM sendjobs_read_events('owned');
RESET ROLE;
SELECT consumer, read_at IS NOT NULL AS read FROM sendjobs_consumers WHERE consumer = 'owned';
\set VERBOSITY sqlstate
SELECT sendjobs_create_consumer('nobody', reader => '-');
\set VERBOSITY default
SELECT sendjobs_drop_consumer('owned');

DROP EXTENSION sendjobs;
REVOKE USAGE ON SCHEMA public FROM outbox_relay, outbox_monitor, outbox_worker, outbox_own_relay;
DROP ROLE outbox_relay, outbox_monitor, outbox_worker, outbox_own_relay;
