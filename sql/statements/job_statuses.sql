--- params: ids int8[]
--- columns: id, status
-- The status of each job of $1 that exists (sendjobs_redrive's errors).
SELECT id, status FROM @extschema@.send_jobs WHERE id = ANY ($1) ORDER BY id
