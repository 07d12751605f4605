--- params: queue text, max_in_flight int4, rate float8, burst int4, now timestamptz
--- columns: none
-- sendjobs_limit (src/flow/settings.rs): queue $1's concurrency cap ($2) and rate ($3 a
-- second, bursts of $4), NULL for none. A rate starts with a full bucket at $5.
INSERT INTO @extschema@.sendjobs_queues (queue, max_in_flight, rate, burst, tokens, tokens_at)
VALUES ($1, $2, $3, $4, $4, CASE WHEN $3 IS NOT NULL THEN $5 END)
    ON CONFLICT (queue) DO UPDATE
   SET max_in_flight = EXCLUDED.max_in_flight, rate = EXCLUDED.rate, burst = EXCLUDED.burst,
       tokens = EXCLUDED.tokens, tokens_at = EXCLUDED.tokens_at
