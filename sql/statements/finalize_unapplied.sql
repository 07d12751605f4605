--- params: ids int8[], generations int8[], outcome text
--- columns: id, status, attempts, repeated
-- sendjobs_finalize and sendjobs_finalize_batch (src/finalize.rs), for the claims
-- ($1[i], $2[i]) whose fenced finish (finalize.sql) did not apply with outcome $3: what
-- each job is now (status NULL: no such job, in either table), and whether this claim
-- was already finalized with this outcome ("repeated": a finalize made again, say after
-- its answer was lost, that answers applied and changes nothing;
-- docs/decisions/0012-answers-that-say-what-happened.md). In input order.
-- Run as a statement of its own, so in READ COMMITTED it has a snapshot of its own,
-- taken after the finish: a repeat that waited on the row lock of its own first call,
-- still committing, sees that call's finished row (race12-repeated-finalize.spec).
-- Which rows tell a repeat, at the claim's own generation (a later claim, or a give-up
-- or cancel, makes every earlier claim stale):
--   sent: only a finalize 'sent' makes a job sent (finished before 0.3.0 too);
--   failed: the finished row's outcome says which finalize, if any ('failed', or 'retry'
--           on the last attempt; NULL when the job gave up or was cancelled);
--   pending: only a finalize 'retry' puts a claimed job (generation > 0) back, until
--           its next claim.
SELECT claim.id, job.status, job.attempts,
       coalesce(job.claim_generation = claim.generation AND claim.generation > 0
                AND (job.status = 'sent' AND $3 = 'sent'
                     OR job.status = 'failed' AND job.outcome = $3
                     OR job.status = 'pending' AND $3 = 'retry'), false) AS repeated
  FROM ROWS FROM (pg_catalog.unnest($1::int8[]), pg_catalog.unnest($2::int8[]))
       WITH ORDINALITY AS claim(id, generation, ord)
  LEFT JOIN LATERAL (
        SELECT live.status, live.attempts, live.claim_generation, NULL::text AS outcome
          FROM ONLY @extschema@.send_jobs AS live WHERE live.id = claim.id
        UNION ALL
        SELECT finished.status, finished.attempts, finished.claim_generation, finished.outcome
          FROM @extschema@.send_jobs_finished AS finished WHERE finished.id = claim.id
       ) AS job ON true
 ORDER BY claim.ord
