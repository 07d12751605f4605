SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(claim_generation), '{}') AS gens FROM bench_e.sendjobs_claim(:batch, :lease) \gset
SELECT id, result FROM bench_e.sendjobs_finalize_batch(:ids, :gens, :outcome, NULL, now());
