SELECT id, new_id FROM sendjobs_redrive($1::bigint[])
