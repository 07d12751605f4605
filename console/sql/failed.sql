-- A queue's failed jobs, most recently failed first, after the keyset ($2, $3) =
-- (finished_at, id) of the previous page's last row: send_jobs_finished_failed_queue_idx,
-- read backwards, in the finished jobs' own table (a read through send_jobs would scan
-- every unfinished job too). Whether each was redriven already: the redrive_of indexes.
SELECT j.id, j.attempts, j.claim_generation, j.transaction_id,
       to_char(j.finished_at, 'YYYY-MM-DD HH24:MI:SS') AS finished_at,
       j.finished_at::text AS cursor_at,
       left(j.last_error, 160) AS last_error,
       (SELECT r.id FROM @extschema@.send_jobs AS r WHERE r.redrive_of = j.id) AS redriven_as
  FROM @extschema@.send_jobs_finished AS j
 WHERE j.status = 'failed' AND j.queue = $1
   AND ($2::text IS NULL OR (j.finished_at, j.id) < ($2::text::timestamptz, $3::bigint))
 ORDER BY j.finished_at DESC, j.id DESC
 LIMIT $4
