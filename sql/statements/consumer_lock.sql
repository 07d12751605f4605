--- params: consumer text
--- columns: consumer, reader
-- sendjobs_read_events (src/verbs/outbox.rs), first: lock the consumer, so its readers take
-- turns and the next statement's snapshot sees the position the last one left (under
-- REPEATABLE READ a moved position fails here, 40001); and who may read it.
SELECT consumer, reader FROM @extschema@.sendjobs_consumers WHERE consumer = $1 FOR UPDATE
