-- sql/statements/enqueue.sql, variant no_key, as the server runs it: written by
-- SENDJOBS_BLESS=1 from the source, which is the one to edit.
INSERT INTO @extschema@.send_jobs
       (payload, queue, next_attempt_at, transaction_id, idempotency_key, max_attempts, ordering_key, priority)
VALUES ($1, $2, $3, $4, $5, $6, $8, $9)
RETURNING id
