-- Vacuum keeps the claim order clean however long the history (sql/schema.sql: send_jobs
-- is vacuumed by churn, with index cleanup on). Every claim leaves a dead entry in
-- send_jobs_pending_idx where the claim order starts, and every later claim steps over
-- it until a vacuum removes it. By default a VACUUM that finds dead rows on under 2% of
-- the table's pages skips the indexes: with a large backlog of jobs that are not due yet,
-- that is every vacuum, and the dead entries stay. (A long history no longer weighs on
-- send_jobs: finished jobs move to send_jobs_finished.)

-- Start afresh, whatever an earlier test may have left behind.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
RESET client_min_messages;
CREATE EXTENSION sendjobs;

-- Buffers read by the claim's pending scan (in claim order, as claim.sql reads it) when
-- no job is due: up to 4 (the metapage, the root, an inner page, a leaf) when the index
-- holds no dead entries, one more per page of them (23 here without the cleanup, seen
-- with vacuum_index_cleanup = auto).
CREATE FUNCTION pg_temp.pages_read_to_find_no_due_job() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
             SELECT id FROM send_jobs
              WHERE status = ''pending''
                AND timezone(interval ''0'', next_attempt_at) - make_interval(mins => priority) <= timezone(interval ''0'', now())
                AND next_attempt_at <= now()
              ORDER BY timezone(interval ''0'', next_attempt_at) - make_interval(mins => priority), id LIMIT 1' INTO plan;
    RETURN (plan -> 0 -> 'Plan' ->> 'Shared Hit Blocks')::int
         + (plan -> 0 -> 'Plan' ->> 'Shared Read Blocks')::int;
END $$;

-- A backlog of 250,000 jobs due tomorrow, then 2,000 due jobs claimed and sent: their
-- dead row versions lie on about 1.3% of the table's pages.
INSERT INTO send_jobs (payload, next_attempt_at)
SELECT '{}', now() + interval '1 day' FROM generate_series(1, 250000);
INSERT INTO send_jobs (payload, next_attempt_at)
SELECT '{}', now() - interval '1 hour' FROM generate_series(1, 2000);
SELECT count(*) AS sent
  FROM generate_series(1, 2),
       LATERAL (SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations
                  FROM sendjobs_claim(1000, '1 minute')) AS claimed,
       LATERAL sendjobs_finalize_batch(claimed.ids, claimed.generations, 'sent') AS finalized
 WHERE finalized.result = 'applied';

VACUUM send_jobs;
SELECT pg_temp.pages_read_to_find_no_due_job() <= 4 AS no_dead_entry_left;

-- The settings behind it, as the catalog holds them.
SELECT reloptions FROM pg_class WHERE oid = 'send_jobs'::regclass;
