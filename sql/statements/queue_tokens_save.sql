--- params: queue text, tokens float8, tokens_at timestamptz
--- columns: none
-- sendjobs_claim (src/flow/allowance.rs), under the queue's lock: queue $1's bucket, $2
-- tokens at $3, an instant read after the lock (back in time only with the clock).
UPDATE @extschema@.sendjobs_queues
   SET tokens = $2, tokens_at = $3
 WHERE queue = $1
