
-- P: sendjobs_claim in PL/pgSQL (src/claim.rs: claim()).
CREATE FUNCTION bench_p.sendjobs_claim(p_batch int DEFAULT 1, p_lease interval DEFAULT NULL,
                                   p_queue text DEFAULT NULL)
RETURNS SETOF bench_p.send_jobs
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $fn$
DECLARE
    v_max   int := coalesce(current_setting('sendjobs.max_batch', true)::int, 1000);
    v_lease interval := p_lease;
    v_batch bigint;
    v_now   timestamptz;
BEGIN
    IF p_batch IS NULL THEN
        RAISE EXCEPTION 'batch must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_batch < 1 OR p_batch > v_max THEN
        RAISE EXCEPTION 'batch must be between 1 and % (sendjobs.max_batch), got %', v_max, p_batch
              USING ERRCODE = '22023';
    END IF;
    IF v_lease IS NULL THEN
        v_lease := coalesce(current_setting('sendjobs.default_lease', true), '90s')::interval;
    END IF;
    IF v_lease < interval '0' THEN
        RAISE EXCEPTION 'lease must not be negative' USING ERRCODE = '22023';
    END IF;
    v_batch := p_batch;
    v_now := clock_timestamp();   -- the wall clock, read once per call (src/clock.rs)
    IF p_queue IS NULL THEN
        RETURN QUERY
WITH pending AS MATERIALIZED (
                SELECT id, next_attempt_at FROM bench_p.send_jobs
                 WHERE status = 'pending' AND next_attempt_at <= v_now AND p_queue::text IS NULL  ORDER BY next_attempt_at, id
                 LIMIT v_batch
                 FOR UPDATE SKIP LOCKED
            ),
            expired AS MATERIALIZED (
                SELECT id, next_attempt_at FROM bench_p.send_jobs
                 WHERE status = 'in_flight' AND lease_expires_at <= v_now
                   AND lease_expires_at IS NOT NULL AND p_queue::text IS NULL  ORDER BY next_attempt_at, id
                 LIMIT v_batch
                 FOR UPDATE SKIP LOCKED
            ),
            picked AS MATERIALIZED (
                SELECT id, next_attempt_at FROM pending
                UNION ALL
                SELECT id, next_attempt_at FROM expired
                ORDER BY next_attempt_at, id
                LIMIT v_batch
            ),
            claimed AS (
                UPDATE bench_p.send_jobs AS job
                   SET status = 'in_flight',
                       attempts = job.attempts + 1,
                       claimed_at = v_now,
                       lease_expires_at = v_now + v_lease,
                       claim_generation = job.claim_generation + 1
                  FROM picked
                 WHERE job.id = picked.id
             RETURNING job, job.next_attempt_at, job.id
            )
            SELECT (job).* FROM claimed ORDER BY next_attempt_at, id;
    ELSE
        RETURN QUERY
WITH pending AS MATERIALIZED (
                SELECT id, next_attempt_at FROM bench_p.send_jobs
                 WHERE status = 'pending' AND next_attempt_at <= v_now AND queue = p_queue  ORDER BY next_attempt_at, id
                 LIMIT v_batch
                 FOR UPDATE SKIP LOCKED
            ),
            expired AS MATERIALIZED (
                SELECT id, next_attempt_at FROM bench_p.send_jobs
                 WHERE status = 'in_flight' AND lease_expires_at <= v_now
                   AND lease_expires_at IS NOT NULL AND queue = p_queue  ORDER BY next_attempt_at, id
                 LIMIT v_batch
                 FOR UPDATE SKIP LOCKED
            ),
            picked AS MATERIALIZED (
                SELECT id, next_attempt_at FROM pending
                UNION ALL
                SELECT id, next_attempt_at FROM expired
                ORDER BY next_attempt_at, id
                LIMIT v_batch
            ),
            claimed AS (
                UPDATE bench_p.send_jobs AS job
                   SET status = 'in_flight',
                       attempts = job.attempts + 1,
                       claimed_at = v_now,
                       lease_expires_at = v_now + v_lease,
                       claim_generation = job.claim_generation + 1
                  FROM picked
                 WHERE job.id = picked.id
             RETURNING job, job.next_attempt_at, job.id
            )
            SELECT (job).* FROM claimed ORDER BY next_attempt_at, id;
    END IF;
END
$fn$;

-- P: sendjobs_finalize_batch in PL/pgSQL (src/finalize.rs: batch_claims() + finalize()).
CREATE FUNCTION bench_p.sendjobs_finalize_batch(p_ids bigint[], p_generations bigint[], p_outcome text,
                                            p_error text DEFAULT NULL,
                                            p_retry_at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint, result text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $fn$
#variable_conflict use_column
DECLARE
    v_now          timestamptz;
    v_backoff_base float8;
    v_backoff_max  float8;
    v_null_ids     bigint;
    v_distinct_ids bigint;
    v_null_gens    bigint;
    v_neg_gens     bigint;
    v_id           bigint;
    v_status       text;
    v_txn          text;
    v_known        boolean;
    v_stamp_status text[] := '{}';
    v_stamp_txn    text[] := '{}';
    v_stamp_sql    text;
    v_on_sent      text;
    v_on_failed    text;
    v_table        text;
    v_missing      text;
BEGIN
    IF p_ids IS NULL THEN
        RAISE EXCEPTION 'ids must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_generations IS NULL THEN
        RAISE EXCEPTION 'generations must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF cardinality(p_ids) <> cardinality(p_generations) THEN
        RAISE EXCEPTION 'ids and generations must have the same length, got % and %',
              cardinality(p_ids), cardinality(p_generations) USING ERRCODE = '22023';
    END IF;
    SELECT count(*) FILTER (WHERE u.i IS NULL), count(DISTINCT u.i),
           count(*) FILTER (WHERE u.g IS NULL), count(*) FILTER (WHERE u.g < 0)
      INTO v_null_ids, v_distinct_ids, v_null_gens, v_neg_gens
      FROM unnest(p_ids, p_generations) AS u(i, g);
    IF v_null_ids > 0 THEN
        RAISE EXCEPTION 'an element of ids must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF v_distinct_ids <> cardinality(p_ids) THEN
        RAISE EXCEPTION 'a job appears twice in ids' USING ERRCODE = '22023';
    END IF;
    IF v_null_gens > 0 THEN
        RAISE EXCEPTION 'generation must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF v_neg_gens > 0 THEN
        RAISE EXCEPTION 'generation must not be negative' USING ERRCODE = '22023';
    END IF;
    IF p_outcome IS NULL THEN
        RAISE EXCEPTION 'outcome must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_outcome NOT IN ('sent', 'failed', 'retry') THEN
        RAISE EXCEPTION 'unknown outcome %', p_outcome USING ERRCODE = '22023';
    END IF;
    IF p_retry_at IS NOT NULL AND p_outcome <> 'retry' THEN
        RAISE EXCEPTION 'retry_at is only accepted with outcome ''retry''' USING ERRCODE = '22023';
    END IF;
    IF p_error IS NOT NULL AND p_outcome = 'sent' THEN
        RAISE EXCEPTION 'error is only accepted with outcome ''failed'' or ''retry''' USING ERRCODE = '22023';
    END IF;
    IF cardinality(p_ids) = 0 THEN
        RETURN;
    END IF;
    v_now := clock_timestamp();   -- the wall clock, read once per call (src/clock.rs)
    v_backoff_base := coalesce(extract(epoch FROM current_setting('sendjobs.retry_backoff_base', true)::interval) * 1000, 10000);
    v_backoff_max := coalesce(extract(epoch FROM current_setting('sendjobs.retry_backoff_max', true)::interval) * 1000, 3600000);

    IF cardinality(p_ids) = 1 THEN   -- src/finalize.rs: one claim, FINALIZE_ONE_SQL
        FOR v_id, v_status, v_txn, v_known IN

    WITH 
    done AS (
        UPDATE bench_p.send_jobs AS job
           SET status = CASE WHEN p_outcome <> 'retry' THEN p_outcome
                             WHEN job.attempts < job.max_attempts THEN 'pending'
                             ELSE 'failed' END,
               next_attempt_at = CASE
                   WHEN p_outcome = 'retry' AND job.attempts < job.max_attempts
                   THEN coalesce(p_retry_at, v_now + pg_catalog.make_interval(secs =>
                            least(v_backoff_max, v_backoff_base * pg_catalog.power(2::float8, least(job.attempts - 1, 40))) / 1000.0))
                   ELSE job.next_attempt_at END,
               finished_at = CASE WHEN p_outcome = 'retry' AND job.attempts < job.max_attempts
                                  THEN NULL ELSE v_now END,
               lease_expires_at = NULL,
               last_error = coalesce(p_error, job.last_error)
         WHERE job.id = (p_ids::int8[])[1] AND job.status = 'in_flight'
           AND job.claim_generation = (p_generations::int8[])[1]
     RETURNING job.id, job.status, job.transaction_id, job.claim_generation
    ),
    event AS (
        INSERT INTO bench_p.send_job_events (job_id, transaction_id, kind, claim_generation, created_at)
        SELECT id, transaction_id, status, claim_generation, v_now
          FROM done
         WHERE status IN ('sent', 'failed')
    )
    SELECT (p_ids::int8[])[1], done.status, done.transaction_id,
           CASE WHEN done.id IS NOT NULL THEN true
                ELSE EXISTS (SELECT FROM bench_p.send_jobs known WHERE known.id = (p_ids::int8[])[1]) END
      FROM (SELECT) AS one LEFT JOIN done ON true
        LOOP
            IF v_known IS DISTINCT FROM true THEN
                RAISE EXCEPTION 'job % does not exist', v_id USING ERRCODE = 'P0002';
            END IF;
            id := v_id;
            IF v_status IS NULL THEN
                result := 'stale';
            ELSE
                IF v_txn IS NOT NULL AND v_status IN ('sent', 'failed') THEN
                    v_stamp_status := v_stamp_status || v_status;
                    v_stamp_txn := v_stamp_txn || v_txn;
                END IF;
                result := 'applied';
            END IF;
            RETURN NEXT;
        END LOOP;
    ELSE
        FOR v_id, v_status, v_txn, v_known IN

    WITH claim AS (
        SELECT * FROM ROWS FROM (pg_catalog.unnest(p_ids::int8[]), pg_catalog.unnest(p_generations::int8[]))
                      WITH ORDINALITY AS c(id, generation, ord)
    ),
    done AS (
        UPDATE bench_p.send_jobs AS job
           SET status = CASE WHEN p_outcome <> 'retry' THEN p_outcome
                             WHEN job.attempts < job.max_attempts THEN 'pending'
                             ELSE 'failed' END,
               next_attempt_at = CASE
                   WHEN p_outcome = 'retry' AND job.attempts < job.max_attempts
                   THEN coalesce(p_retry_at, v_now + pg_catalog.make_interval(secs =>
                            least(v_backoff_max, v_backoff_base * pg_catalog.power(2::float8, least(job.attempts - 1, 40))) / 1000.0))
                   ELSE job.next_attempt_at END,
               finished_at = CASE WHEN p_outcome = 'retry' AND job.attempts < job.max_attempts
                                  THEN NULL ELSE v_now END,
               lease_expires_at = NULL,
               last_error = coalesce(p_error, job.last_error)
         FROM claim
         WHERE job.id = claim.id AND job.status = 'in_flight' AND job.claim_generation = claim.generation
     RETURNING job.id, job.status, job.transaction_id, job.claim_generation
    ),
    event AS (
        INSERT INTO bench_p.send_job_events (job_id, transaction_id, kind, claim_generation, created_at)
        SELECT id, transaction_id, status, claim_generation, v_now
          FROM done
         WHERE status IN ('sent', 'failed')
    )
    SELECT claim.id, done.status, done.transaction_id,
           CASE WHEN done.id IS NOT NULL THEN true
                ELSE EXISTS (SELECT FROM bench_p.send_jobs known WHERE known.id = claim.id) END
      FROM claim LEFT JOIN done ON done.id = claim.id
     ORDER BY claim.ord
        LOOP
            IF v_known IS DISTINCT FROM true THEN
                RAISE EXCEPTION 'job % does not exist', v_id USING ERRCODE = 'P0002';
            END IF;
            id := v_id;
            IF v_status IS NULL THEN
                result := 'stale';
            ELSE
                IF v_txn IS NOT NULL AND v_status IN ('sent', 'failed') THEN
                    v_stamp_status := v_stamp_status || v_status;
                    v_stamp_txn := v_stamp_txn || v_txn;
                END IF;
                result := 'applied';
            END IF;
            RETURN NEXT;
        END LOOP;
    END IF;

    IF cardinality(v_stamp_txn) > 0 THEN   -- src/link.rs: TransactionLink::current + stamp
        FOR v_stamp_sql, v_on_sent, v_on_failed, v_table, v_missing IN

    SELECT pg_catalog.format('UPDATE %s SET %I = CAST($1 AS %s) WHERE %I = CAST($2 AS %s)',
               link.tbl, link.status_column,
               pg_catalog.format_type(status_col.atttypid, status_col.atttypmod),
               link.key_column,
               pg_catalog.format_type(key_col.atttypid, key_col.atttypmod)),
           link.on_sent,
           link.on_failed,
           link.tbl::pg_catalog.text,
           CASE WHEN status_col.attnum IS NULL THEN link.status_column::pg_catalog.text
                WHEN key_col.attnum IS NULL THEN link.key_column::pg_catalog.text END,
           pg_catalog.format_type(key_col.atttypid, key_col.atttypmod)
      FROM bench_p.sendjobs_transaction_link AS link
      LEFT JOIN pg_catalog.pg_attribute AS status_col
             ON status_col.attrelid = link.tbl AND status_col.attname = link.status_column
            AND NOT status_col.attisdropped
      LEFT JOIN pg_catalog.pg_attribute AS key_col
             ON key_col.attrelid = link.tbl AND key_col.attname = link.key_column
            AND NOT key_col.attisdropped
        LOOP
            IF v_missing IS NOT NULL THEN
                RAISE EXCEPTION 'column % of % does not exist', v_missing, v_table USING ERRCODE = '42703';
            END IF;
            FOR i IN 1 .. cardinality(v_stamp_txn) LOOP
                EXECUTE v_stamp_sql USING CASE WHEN v_stamp_status[i] = 'sent' THEN v_on_sent ELSE v_on_failed END,
                                          v_stamp_txn[i];
            END LOOP;
            EXIT;
        END LOOP;
    END IF;
END
$fn$;

-- P: sendjobs_finalize (one claim), as the extension's wrapper does it.
CREATE FUNCTION bench_p.sendjobs_finalize(p_id bigint, p_generation bigint, p_outcome text,
                                      p_error text DEFAULT NULL, p_retry_at timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $fn$
DECLARE
    v_result text;
BEGIN
    IF p_id IS NULL THEN
        RAISE EXCEPTION 'id must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_generation IS NULL THEN
        RAISE EXCEPTION 'generation must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_generation < 0 THEN
        RAISE EXCEPTION 'generation must not be negative' USING ERRCODE = '22023';
    END IF;
    SELECT f.result INTO v_result
      FROM bench_p.sendjobs_finalize_batch(ARRAY[p_id], ARRAY[p_generation], p_outcome, p_error, p_retry_at) AS f;
    RETURN coalesce(v_result, 'stale');
END
$fn$;
