--- params: queue text
--- columns: wake
-- A finish or a cancel of a job in flight in queue $1 frees a place: whether that wakes
-- its workers (a cap on its jobs in flight, and wake-ups on: sendjobs_notify;
-- docs/decisions/0013-flow-control-in-the-claim.md). No row: no.
SELECT max_in_flight IS NOT NULL AND notify AS wake
  FROM @extschema@.sendjobs_queues
 WHERE queue = $1
