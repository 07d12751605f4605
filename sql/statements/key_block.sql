--- params: keys text[], ids int8[], queues text[], now timestamptz
--- columns: none
-- After jobs with an ordering key failed for good ($1[i], job $2[i] of queue $3[i]), in
-- their transaction (src/flow/blocked_keys.rs): a key whose queue blocks its keys stops at
-- its newest failure (sendjobs_blocked_keys), locked in key order.
INSERT INTO @extschema@.sendjobs_blocked_keys AS blocked (ordering_key, job_id, queue, blocked_at)
SELECT DISTINCT ON (failed.ordering_key) failed.ordering_key, failed.id, failed.queue, $4
  FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::int8[]), pg_catalog.unnest($3::text[]))
       AS failed(ordering_key, id, queue)
 WHERE EXISTS (SELECT FROM @extschema@.sendjobs_queues AS settings
                WHERE settings.queue = failed.queue AND settings.block_keys)
 ORDER BY failed.ordering_key, failed.id DESC
    ON CONFLICT (ordering_key) DO UPDATE
   SET job_id = EXCLUDED.job_id, queue = EXCLUDED.queue, blocked_at = EXCLUDED.blocked_at
