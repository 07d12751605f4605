-- One job by id (both tables, each by its primary key), payload left out: the monitor
-- level may not read it (payload.sql, when the role may).
SELECT id, queue, status, transaction_id, idempotency_key, attempts, max_attempts,
       claim_generation, to_char(next_attempt_at, 'YYYY-MM-DD HH24:MI:SS') AS next_attempt_at,
       to_char(claimed_at, 'YYYY-MM-DD HH24:MI:SS') AS claimed_at,
       to_char(lease_expires_at, 'YYYY-MM-DD HH24:MI:SS') AS lease_expires_at,
       lease_expires_at < now() AS lease_expired,
       last_error, to_char(created_at, 'YYYY-MM-DD HH24:MI:SS') AS created_at,
       to_char(finished_at, 'YYYY-MM-DD HH24:MI:SS') AS finished_at, redrive_of, ordering_key, priority
  FROM @extschema@.send_jobs
 WHERE id = $1
