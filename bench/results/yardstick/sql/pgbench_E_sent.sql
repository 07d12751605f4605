SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(claim_generation), '{}') AS gens FROM bench_e.sendjobs_claim(:batch, :lease) \gset
BEGIN;
SELECT id, result FROM bench_e.sendjobs_finalize_batch(:ids, :gens, :outcome);
INSERT INTO bench_e.send_jobs (payload, max_attempts) SELECT :payload::jsonb, 2147483647 FROM generate_series(1, cardinality(:ids::int8[]));
COMMIT;
