-- A job's payload, read only when has_column_privilege says the role may.
SELECT payload::text AS payload FROM @extschema@.send_jobs WHERE id = $1
