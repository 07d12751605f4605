SELECT @extschema@.sendjobs_cancel($1::bigint) AS result
