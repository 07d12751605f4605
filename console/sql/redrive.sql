-- A bulk redrive, with each failed job's queue (the new job's too) for the action log:
-- the failed rows are committed, so the statement's snapshot sees them (the new jobs,
-- inserted by the function within this statement, it would not).
SELECT r.id, r.new_id, failed.queue
  FROM @extschema@.sendjobs_redrive($1::bigint[]) AS r
  JOIN @extschema@.send_jobs AS failed ON failed.id = r.id
