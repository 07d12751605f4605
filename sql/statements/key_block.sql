--- params: keys text[], ids int8[], queues text[], now timestamptz
--- columns: none
-- After jobs with an ordering key failed for good ($1[i], job $2[i] of queue $3[i]), in
-- the transaction that finished them (src/flow.rs): the keys whose queue blocks its keys
-- (sendjobs_block_keys) stop at that job (sendjobs_blocked_keys; claim.sql reads it). One
-- job of a key is in flight at a time, so one failure a key a call; a key stopped before
-- stops again at its newest failure.
INSERT INTO @extschema@.sendjobs_blocked_keys AS blocked (ordering_key, job_id, queue, blocked_at)
SELECT failed.ordering_key, failed.id, failed.queue, $4
  FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::int8[]), pg_catalog.unnest($3::text[]))
       AS failed(ordering_key, id, queue)
 WHERE EXISTS (SELECT FROM @extschema@.sendjobs_queues AS settings
                WHERE settings.queue = failed.queue AND settings.block_keys)
    ON CONFLICT (ordering_key) DO UPDATE
   SET job_id = EXCLUDED.job_id, queue = EXCLUDED.queue, blocked_at = EXCLUDED.blocked_at
