--- params: consumer text
--- columns: consumer
-- sendjobs_drop_consumer (src/verbs/outbox.rs): the consumer goes; sendjobs_purge no longer
-- keeps events for it.
DELETE FROM @extschema@.sendjobs_consumers WHERE consumer = $1
RETURNING consumer
