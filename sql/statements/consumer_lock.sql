--- params: consumer text
--- columns: consumer, reader
-- sendjobs_read_events (src/outbox.rs), first of two statements: lock the consumer, so
-- that its readers take turns. The second statement's snapshot is taken after the lock
-- is held, so it sees the position the last reader left (under READ COMMITTED; under
-- REPEATABLE READ a position moved since the snapshot fails the lock with 40001). And
-- the role whose members may read it (src/outbox.rs checks the caller against it).
SELECT consumer, reader FROM @extschema@.sendjobs_consumers WHERE consumer = $1 FOR UPDATE
