--- params: keys text[]
--- columns: none
-- After jobs of keys $1 finished or went back, or a key was let go (src/flow/key_waits.rs):
-- each key's first waiting job and its stopping job wait no more (decision 0020); in id
-- order, so two such calls wait rather than deadlock.
WITH freed AS MATERIALIZED (
    SELECT job.ctid AS tid
      FROM ONLY @extschema@.send_jobs AS job
     WHERE job.id IN (SELECT first.id
                        FROM pg_catalog.unnest($1::text[]) AS key(ordering_key)
                       CROSS JOIN LATERAL (
                            SELECT waiting.id FROM ONLY @extschema@.send_jobs AS waiting
                             WHERE waiting.ordering_key = key.ordering_key AND waiting.waits_for_key
                             ORDER BY waiting.id LIMIT 1) AS first
                      UNION
                      SELECT blocked.job_id
                        FROM @extschema@.sendjobs_blocked_keys AS blocked
                       WHERE blocked.ordering_key = ANY ($1::text[]))
       AND job.waits_for_key
     ORDER BY job.id
       FOR UPDATE
)
UPDATE ONLY @extschema@.send_jobs AS job
   SET waits_for_key = false
 WHERE job.ctid = ANY (ARRAY(SELECT freed.tid FROM freed))
