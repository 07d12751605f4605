SELECT @extschema@.sendjobs_pause($1::text)
