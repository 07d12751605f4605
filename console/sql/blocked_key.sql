-- Whether an ordering key is stopped, and by which job: its primary key.
SELECT b.ordering_key, b.job_id, to_char(b.blocked_at, 'YYYY-MM-DD HH24:MI:SS') AS blocked_at
  FROM @extschema@.sendjobs_blocked_keys AS b
 WHERE b.ordering_key = $1
