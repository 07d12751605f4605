--- params: ids int8[], generations int8[], outcome text
--- columns: id, status, attempts, repeated
-- sendjobs_finalize and sendjobs_finalize_batch (src/verbs/finalize.rs), for the claims
-- ($1[i], $2[i]) that finalize.sql did not apply with outcome $3: what each job is now
-- (status NULL: no such job), and whether this claim was already finalized so
-- ("repeated"), in input order (decision 0012). A statement of its own, so that in READ
-- COMMITTED its snapshot sees a first call it waited for (race12-repeated-finalize.spec).
-- A repeat, at the claim's own generation: sent by 'sent'; failed by the outcome its
-- finished row records; pending by 'retry' (generation > 0).
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
