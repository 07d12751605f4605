--- params: none
--- columns: readers
-- After a job finished (src/wakeup.rs): does the outbox have consumers to wake?
SELECT EXISTS (SELECT FROM @extschema@.sendjobs_consumers) AS readers
