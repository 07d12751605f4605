SELECT id, new_id FROM @extschema@.sendjobs_redrive($1::bigint[])
