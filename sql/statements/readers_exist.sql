--- params: none
--- columns: readers
-- After a job finished (src/machinery/wakeup.rs): does the outbox have consumers that asked
-- to be woken (sendjobs_create_consumer's wake)?
SELECT EXISTS (SELECT FROM @extschema@.sendjobs_consumers WHERE wake) AS readers
