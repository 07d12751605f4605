--- params: consumer text, from_start bool, now timestamptz
--- columns: consumer
-- sendjobs_create_consumer (src/outbox.rs): a new consumer of the outbox. It has passed
-- every event visible now (from_start: none, so it reads every event kept). '1:1:' is
-- the snapshot in which no transaction is visible.
INSERT INTO @extschema@.sendjobs_consumers (consumer, passed, created_at)
VALUES ($1, CASE WHEN $2 THEN '1:1:'::pg_catalog.pg_snapshot ELSE pg_catalog.pg_current_snapshot() END, $3)
ON CONFLICT (consumer) DO NOTHING
RETURNING consumer
