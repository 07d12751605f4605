-- A job's earlier attempts (send_job_attempts, by its primary key): each claim that ended
-- without finishing it, oldest first; the latest 20 are kept.
SELECT claim_generation, attempt,
       to_char(claimed_at, 'YYYY-MM-DD HH24:MI:SS') AS claimed_at,
       to_char(ended_at, 'YYYY-MM-DD HH24:MI:SS') AS ended_at,
       ended, left(error, 500) AS error
  FROM @extschema@.send_job_attempts
 WHERE job_id = $1
 ORDER BY claim_generation
