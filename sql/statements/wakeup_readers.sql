--- params: none
--- columns: notified
-- Wake the outbox's consumers (src/machinery/wakeup.rs), at commit: NOTIFY sendjobs_events.
SELECT pg_catalog.pg_notify('sendjobs_events', '') AS notified
