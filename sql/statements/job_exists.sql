--- params: id int8
--- columns: job_exists
-- After a fenced update that matched nothing: does job $1 exist ('stale') or not (P0002)?
-- Not ONLY: a finished job is in send_jobs_finished.
SELECT EXISTS (SELECT FROM @extschema@.send_jobs WHERE id = $1) AS job_exists
