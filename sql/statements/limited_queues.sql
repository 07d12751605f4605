--- params: none
--- columns: queue
-- sendjobs_claim from any queue (src/claim.rs): the queues with flow control, which the
-- claim left out and now takes from one by one, in name order (the order it locks them in).
SELECT queue FROM @extschema@.sendjobs_queues
 WHERE paused OR max_in_flight IS NOT NULL OR rate IS NOT NULL
 ORDER BY queue COLLATE "C"
