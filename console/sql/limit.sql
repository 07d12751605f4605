SELECT @extschema@.sendjobs_limit($1::text, $2::integer, $3::float8, $4::integer)
