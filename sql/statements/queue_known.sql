--- params: queue text
--- columns: known
-- Whether queue $1 has a settings row (src/machinery/queue_names.rs): a name refused for a
-- new queue still names one from before 0.3.1 (decision 0018).
SELECT EXISTS (SELECT FROM @extschema@.sendjobs_queues WHERE queue = $1) AS known
