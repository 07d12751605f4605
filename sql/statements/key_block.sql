--- params: keys text[], ids int8[], queues text[], now timestamptz
--- columns: none
-- After jobs with an ordering key failed for good ($1[i], job $2[i] of queue $3[i]), in
-- the transaction that finished them (src/flow.rs): the keys whose queue blocks its keys
-- (sendjobs_block_keys) stop at that job (sendjobs_blocked_keys; claim.sql reads it). A
-- key stopped before stops again at its newest failure. One job of a key is in flight at
-- a time, so one failure a key a call; should two come (a key spread over queues with and
-- without flow control), the newer job stops it. In key order: concurrent calls lock the
-- stops in one order.
INSERT INTO @extschema@.sendjobs_blocked_keys AS blocked (ordering_key, job_id, queue, blocked_at)
SELECT DISTINCT ON (failed.ordering_key) failed.ordering_key, failed.id, failed.queue, $4
  FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::int8[]), pg_catalog.unnest($3::text[]))
       AS failed(ordering_key, id, queue)
 WHERE EXISTS (SELECT FROM @extschema@.sendjobs_queues AS settings
                WHERE settings.queue = failed.queue AND settings.block_keys)
 ORDER BY failed.ordering_key, failed.id DESC
    ON CONFLICT (ordering_key) DO UPDATE
   SET job_id = EXCLUDED.job_id, queue = EXCLUDED.queue, blocked_at = EXCLUDED.blocked_at
