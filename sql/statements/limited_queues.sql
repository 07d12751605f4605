--- params: none
--- columns: queue, paused
-- The queues with flow control, in name order (the order a claim from any queue locks
-- them in), and whether each is paused (a claim from any queue passes over a paused one:
-- src/claim.rs): src/flow.rs reads them for sendjobs_claim and keeps them until a change.
SELECT queue, paused FROM @extschema@.sendjobs_queues
 WHERE paused OR max_in_flight IS NOT NULL OR rate IS NOT NULL
 ORDER BY queue COLLATE "C"
