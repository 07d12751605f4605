-- sql/statements/queue_lock.sql, variant skip, as the server runs it: written by
-- SENDJOBS_BLESS=1 from the source, which is the one to edit.
SELECT paused, max_in_flight, rate, burst, tokens, tokens_at
  FROM @extschema@.sendjobs_queues WHERE queue = $1
   FOR UPDATE SKIP LOCKED
