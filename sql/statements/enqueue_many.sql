--- params: payloads jsonb[], queues text[], run_at timestamptz[], transaction_ids text[], idempotency_keys text[], max_attempts int4[], ordering_keys text[], priorities int4[], id_sequence oid, now timestamptz, default_max_attempts int4
--- columns: ids, taken_keys
-- sendjobs_enqueue_many (src/verbs/enqueue.rs): the jobs of $1, each as enqueue.sql adds
-- one, ids drawn in $1's order, which jobs sharing an ordering key keep (decision 0023).
-- $2-$8 hold one value per job or one for all.
-- A job whose key is taken is not inserted: its id is NULL, its key in taken_keys.
WITH job AS MATERIALIZED (
    SELECT pg_catalog.nextval($9::pg_catalog.regclass) AS id, given.ord, given.payload,
           CASE WHEN pg_catalog.cardinality($2) = 1 THEN $2[1] ELSE given.queue END AS queue,
           coalesce(CASE WHEN pg_catalog.cardinality($3) = 1 THEN $3[1] ELSE given.run_at END, $10) AS run_at,
           CASE WHEN pg_catalog.cardinality($4) = 1 THEN $4[1] ELSE given.transaction_id END AS transaction_id,
           CASE WHEN pg_catalog.cardinality($5) = 1 THEN $5[1] ELSE given.idempotency_key END AS idempotency_key,
           coalesce(CASE WHEN pg_catalog.cardinality($6) = 1 THEN $6[1] ELSE given.max_attempts END, $11) AS max_attempts,
           CASE WHEN pg_catalog.cardinality($7) = 1 THEN $7[1] ELSE given.ordering_key END AS ordering_key,
           (CASE WHEN pg_catalog.cardinality($8) = 1 THEN $8[1] ELSE given.priority END)::int2 AS priority
      FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4),
                      pg_catalog.unnest($5), pg_catalog.unnest($6), pg_catalog.unnest($7), pg_catalog.unnest($8))
           WITH ORDINALITY
           AS given (payload, queue, run_at, transaction_id, idempotency_key, max_attempts, ordering_key, priority, ord)
), key AS (
    INSERT INTO @extschema@.send_job_keys (idempotency_key, job_id)
    SELECT job.idempotency_key, job.id FROM job WHERE job.idempotency_key IS NOT NULL ORDER BY job.ord
    ON CONFLICT (idempotency_key) DO NOTHING
 RETURNING job_id
), inserted AS (
    INSERT INTO @extschema@.send_jobs
           (id, payload, queue, next_attempt_at, transaction_id, idempotency_key, max_attempts, ordering_key, priority)
           OVERRIDING SYSTEM VALUE
    SELECT job.id, job.payload, job.queue, job.run_at, job.transaction_id, job.idempotency_key,
           job.max_attempts, job.ordering_key, job.priority
      FROM job
     WHERE job.idempotency_key IS NULL OR job.id IN (SELECT key.job_id FROM key)
     ORDER BY job.ord
 RETURNING id
)
SELECT pg_catalog.array_agg(inserted.id ORDER BY job.ord) AS ids,
       pg_catalog.array_agg(job.idempotency_key ORDER BY job.ord) FILTER (WHERE inserted.id IS NULL) AS taken_keys
  FROM job LEFT JOIN inserted ON inserted.id = job.id
