--- params: keys text[]
--- columns: none
-- After jobs of ordering keys $1 finished or went back to pending, or a key was let go
-- (src/key_waits.rs): the jobs of those keys that may be free now wait no more, and the
-- claims read them again (decision 0020). Of each key, the first job that waits (a free
-- job of a key is its oldest unfinished one) and the job that stops the key
-- (sendjobs_blocked_keys: a redrive goes before the older jobs). Locked in id order, so
-- that two finishes of the same keys wait for each other rather than deadlock.
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
