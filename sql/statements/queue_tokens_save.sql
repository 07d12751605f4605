--- params: queue text, tokens float8, tokens_at timestamptz
--- columns: none
-- sendjobs_claim (src/flow/allowance.rs), under the queue's lock: queue $1's bucket, $2
-- tokens at $3; its time never goes back (a claim that waited for the lock has an older instant).
UPDATE @extschema@.sendjobs_queues
   SET tokens = $2, tokens_at = greatest(tokens_at, $3)
 WHERE queue = $1
