--- params: ids int8[]
--- columns: id
-- sendjobs_redrive (src/redrive.rs), first of two statements: lock each failed job among
-- $1, in id order, by an UPDATE that changes nothing. A redrive of the same job
-- in another transaction waits here until that one ends; then, under READ COMMITTED, the
-- next statement's snapshot sees the job it created (in send_jobs or, already finished,
-- in send_jobs_finished), and under REPEATABLE READ or SERIALIZABLE this update fails
-- with 40001 (the row changed since the snapshot). A SELECT ... FOR UPDATE would not
-- fail there, and no unique index spans the two tables that the new job may be in.
-- Failed jobs are all in send_jobs_finished (its CHECK).
UPDATE @extschema@.send_jobs_finished AS job
   SET status = job.status
  FROM (SELECT id FROM @extschema@.send_jobs_finished
         WHERE id = ANY ($1) AND status = 'failed'
         ORDER BY id
           FOR UPDATE) AS locked
 WHERE job.id = locked.id
RETURNING job.id
