--- params: queue text
--- columns: known
-- Whether queue $1 has a settings row (src/queue_names.rs): a name that is refused for a
-- new queue still names the queue it named before 0.3.1 (the update gave each such queue
-- its row).
SELECT EXISTS (SELECT FROM @extschema@.sendjobs_queues WHERE queue = $1) AS known
