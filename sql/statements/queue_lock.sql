--- params: queue text
--- columns: paused, max_in_flight, rate, burst, tokens, tokens_at
-- sendjobs_claim (src/flow.rs): the flow-control settings of queue $1, its row locked
-- until the claim's transaction ends, so that the claims of a queue with flow control
-- take turns (the count of its jobs in flight and its tokens are read after the lock, in
-- a statement of their own). No row: the queue has no settings (any more).
SELECT paused, max_in_flight, rate, burst, tokens, tokens_at
  FROM @extschema@.sendjobs_queues WHERE queue = $1
--- variant wait
   FOR UPDATE
--- variant skip
-- A claim from any queue skips a queue whose row another claim holds, rather than wait:
-- it locks several, in name order, and must not wait on one while holding another.
   FOR UPDATE SKIP LOCKED
--- end
