WITH pending AS MATERIALIZED (
                SELECT id, next_attempt_at FROM @extschema@.send_jobs
                 WHERE status = 'pending' AND next_attempt_at <= $1 AND queue = $4  ORDER BY next_attempt_at, id
                 LIMIT $2
                 FOR UPDATE SKIP LOCKED
            ),
            expired AS MATERIALIZED (
                SELECT id, next_attempt_at FROM @extschema@.send_jobs
                 WHERE status = 'in_flight' AND lease_expires_at <= $1
                   AND lease_expires_at IS NOT NULL AND queue = $4  ORDER BY next_attempt_at, id
                 LIMIT $2
                 FOR UPDATE SKIP LOCKED
            ),
            picked AS MATERIALIZED (
                SELECT id, next_attempt_at FROM pending
                UNION ALL
                SELECT id, next_attempt_at FROM expired
                ORDER BY next_attempt_at, id
                LIMIT $2
            ),
            claimed AS (
                UPDATE @extschema@.send_jobs AS job
                   SET status = 'in_flight',
                       attempts = job.attempts + 1,
                       claimed_at = $1,
                       lease_expires_at = $1 + $3,
                       claim_generation = job.claim_generation + 1
                  FROM picked
                 WHERE job.id = picked.id
             RETURNING job, job.next_attempt_at, job.id
            )
            SELECT job FROM claimed ORDER BY next_attempt_at, id
