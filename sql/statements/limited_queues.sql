--- params: none
--- columns: queue, paused
-- The queues with flow control, in the name order claims lock them in, and whether each
-- is paused: src/flow/limited.rs keeps the list for sendjobs_claim until a change.
SELECT queue, paused FROM @extschema@.sendjobs_queues
 WHERE paused OR max_in_flight IS NOT NULL OR rate IS NOT NULL
 ORDER BY queue COLLATE "C"
