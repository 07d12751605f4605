--- params: queue text
--- columns: wake
-- A place freed in queue $1: whether its workers are woken (a cap and wake-ups on:
-- decision 0013). No row: no.
SELECT max_in_flight IS NOT NULL AND notify AS wake
  FROM @extschema@.sendjobs_queues
 WHERE queue = $1
