--- params: queue text, enabled bool
--- columns: none
-- sendjobs_notify (src/verbs/notify.rs): wake-ups on ($2) or off for queue $1.
INSERT INTO @extschema@.sendjobs_queues (queue, notify) VALUES ($1, $2)
    ON CONFLICT (queue) DO UPDATE SET notify = EXCLUDED.notify
