SELECT @extschema@.sendjobs_unblock_key($1::text) AS was_stopped
