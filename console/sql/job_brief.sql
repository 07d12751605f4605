-- A job of a redrive chain: its status and what it redrives (primary keys).
SELECT id, status, redrive_of FROM @extschema@.send_jobs WHERE id = $1
