SELECT @extschema@.sendjobs_resume($1::text)
