-- The job search: a page of at most $8 jobs, newest id first, among the ids in
-- [$2, $1) (keyset pagination on id: both tables' primary keys, read backwards from $1;
-- the window bounds what one page reads whatever the filters match). A status filter
-- leaves one table out (send_jobs_live_check, send_jobs_finished_check). Empty filters
-- are NULL.
SELECT id, queue, status, attempts, max_attempts, claim_generation, transaction_id,
       to_char(created_at, 'YYYY-MM-DD HH24:MI:SS') AS created_at,
       to_char(finished_at, 'YYYY-MM-DD HH24:MI:SS') AS finished_at,
       left(last_error, 120) AS last_error
  FROM @extschema@.send_jobs
 WHERE id < $1 AND id >= $2
   AND ($3::text IS NULL OR queue = $3::text)
   AND ($4::text IS NULL OR status = $4::text)
   AND ($5::text IS NULL OR transaction_id = $5::text)
   AND ($6::text IS NULL OR created_at >= $6::text::timestamptz)
   AND ($7::text IS NULL OR created_at < $7::text::timestamptz)
 ORDER BY id DESC
 LIMIT $8
