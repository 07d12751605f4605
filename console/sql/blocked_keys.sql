-- A queue's ordering keys stopped by a failure, the most recently stopped first: the
-- few rows of sendjobs_blocked_keys (one per stopped key), read whole.
SELECT b.ordering_key, b.job_id, to_char(b.blocked_at, 'YYYY-MM-DD HH24:MI:SS') AS blocked_at
  FROM @extschema@.sendjobs_blocked_keys AS b
 WHERE b.queue = $1
 ORDER BY b.blocked_at DESC, b.ordering_key
 LIMIT $2
