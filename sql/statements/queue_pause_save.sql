--- params: queue text, paused bool
--- columns: none
-- sendjobs_pause and sendjobs_resume (src/flow/settings.rs): queue $1 paused ($2) or not.
INSERT INTO @extschema@.sendjobs_queues (queue, paused) VALUES ($1, $2)
    ON CONFLICT (queue) DO UPDATE SET paused = EXCLUDED.paused
