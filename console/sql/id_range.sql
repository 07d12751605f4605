-- The lowest and highest job ids (each table's primary key, both ends).
SELECT min(id) AS low, max(id) AS high FROM @extschema@.send_jobs
