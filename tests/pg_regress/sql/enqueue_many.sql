-- sendjobs_enqueue_many (docs/decisions/0023-enqueue-many.md): many jobs in one call, each
-- as sendjobs_enqueue adds one; ids in the payloads' order; one value for all or one per
-- job. Its bad input, which adds none: errors.sql.

SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never
\set VERBOSITY sqlstate

-- Ids in order; one queue for all; defaults as sendjobs_enqueue's.
SELECT sendjobs_enqueue_many(ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}']::jsonb[], '{acme}');
SELECT id, queue, payload, status, max_attempts, priority, ordering_key, idempotency_key,
       transaction_id, next_attempt_at <= pg_catalog.clock_timestamp() AS due
  FROM send_jobs ORDER BY id;

-- The same job through both functions: every column but id and the times alike.
SELECT sendjobs_enqueue('{"n": 4}', 'zeta', run_at => '2030-01-01', transaction_id => 't-4',
                        idempotency_key => 'single', max_attempts => 2, ordering_key => 'line', priority => 7) AS single \gset
SELECT (sendjobs_enqueue_many(ARRAY['{"n": 4}']::jsonb[], '{zeta}', '{2030-01-01}', '{t-4}', '{many}',
                              '{2}', '{line}', '{7}'))[1] AS many \gset
SELECT a.payload = b.payload AND a.queue = b.queue AND a.next_attempt_at = b.next_attempt_at
       AND a.transaction_id = b.transaction_id AND a.max_attempts = b.max_attempts
       AND a.ordering_key = b.ordering_key AND a.priority = b.priority AND a.status = b.status
       AND a.waits_for_key = b.waits_for_key AS alike
  FROM send_jobs AS a, send_jobs AS b WHERE a.id = :single AND b.id = :many;

-- One value per job; NULL elements where sendjobs_enqueue takes NULL.
SELECT sendjobs_enqueue_many(ARRAY['{"n": 5}', '{"n": 6}']::jsonb[], '{acme,beta}',
                             ARRAY['2031-01-01', NULL]::timestamptz[], '{t-5,NULL}', NULL,
                             '{NULL,9}', '{NULL,k}', '{0,60}') AS ids \gset
SELECT id, queue, next_attempt_at > '2030-12-31' AS later, transaction_id, max_attempts, ordering_key, priority
  FROM send_jobs WHERE id = ANY (:'ids'::bigint[]) ORDER BY id;

-- Idempotency keys: a key taken before gives its job; a key twice in one call, the first
-- job's id; nothing else about either job changes.
SELECT sendjobs_enqueue_many(ARRAY['{"n": 7}', '{"n": 8}', '{"n": 9}', '{"n": 10}']::jsonb[],
                             idempotency_keys => '{single,k-8,k-8,k-10}') AS ids \gset
SELECT ids[1] = :single AS taken_key_gives_its_job, ids[2] = ids[3] AS twice_gives_the_first,
       ids[4] NOT IN (ids[1], ids[2]) AS new_key_new_job
  FROM (SELECT :'ids'::bigint[] AS ids) AS answer;
SELECT payload, queue FROM send_jobs WHERE idempotency_key IN ('single', 'k-8', 'k-10') ORDER BY id;

-- Jobs sharing an ordering key are claimed in the order of payloads, one at a time.
SELECT sendjobs_enqueue_many(ARRAY['{"n": "first"}', '{"n": "second"}', '{"n": "third"}']::jsonb[],
                             '{ordered}', ordering_keys => '{one-line}');
SELECT payload FROM sendjobs_claim(10, '1 minute', 'ordered');
SELECT sendjobs_finalize(id, claim_generation, 'sent') FROM send_jobs WHERE queue = 'ordered' AND status = 'in_flight';
SELECT payload FROM sendjobs_claim(10, '1 minute', 'ordered');

-- None: an empty array adds nothing and answers an empty one.
SELECT sendjobs_enqueue_many('{}');

-- A transaction id the linked table's key cannot take is refused, every job with it.
SET client_min_messages = warning;
DROP EXTENSION sendjobs CASCADE;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
CREATE TABLE payments (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'pending');
SELECT sendjobs_link_transactions('payments', 'id', 'status', 'success', 'failed', 'pending');
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], transaction_ids => '{1,p-2}');
SELECT sendjobs_enqueue_many(ARRAY['{}', '{}']::jsonb[], transaction_ids => '{1}') IS NOT NULL AS linked_ids_taken;

SELECT count(*) AS jobs FROM send_jobs;
