--- params: queue text, block bool
--- columns: none
-- sendjobs_block_keys (src/flow/blocked_keys.rs): whether a job of queue $1 that fails for
-- good stops the rest of its ordering key ($2).
INSERT INTO @extschema@.sendjobs_queues (queue, block_keys) VALUES ($1, $2)
    ON CONFLICT (queue) DO UPDATE SET block_keys = EXCLUDED.block_keys
