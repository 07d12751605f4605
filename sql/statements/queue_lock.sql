--- params: queue text
--- columns: paused, max_in_flight, rate, burst, tokens, tokens_at
-- sendjobs_claim (src/flow/allowance.rs): queue $1's flow-control settings, its row locked
-- until the claim's transaction ends, so its claims take turns. No row: no settings.
SELECT paused, max_in_flight, rate, burst, tokens, tokens_at
  FROM @extschema@.sendjobs_queues WHERE queue = $1
--- variant wait
   FOR UPDATE
--- variant skip
-- a claim from any queue locks several, in name order, and so skips a held one
   FOR UPDATE SKIP LOCKED
--- end
