--- params: ids int8[]
--- columns: id
-- sendjobs_redrive (src/verbs/redrive.rs), first: lock each failed job of $1, in id order,
-- by an UPDATE that changes nothing: a concurrent redrive waits, then sees the new job
-- (READ COMMITTED) or fails with 40001, which FOR UPDATE alone would not; no unique
-- index spans the two tables the new job may be in.
UPDATE @extschema@.send_jobs_finished AS job
   SET status = job.status
  FROM (SELECT id FROM @extschema@.send_jobs_finished
         WHERE id = ANY ($1) AND status = 'failed'
         ORDER BY id
           FOR UPDATE) AS locked
 WHERE job.id = locked.id
RETURNING job.id
