--- params: queue text
--- columns: notify
-- sendjobs_enqueue (src/machinery/wakeup.rs): are wake-ups on for queue $1? (No row: off.)
SELECT notify FROM @extschema@.sendjobs_queues WHERE queue = $1
