-- A finished job's outbox event (the view over send_jobs_finished, by its primary key).
SELECT kind, claim_generation, to_char(created_at, 'YYYY-MM-DD HH24:MI:SS.MS') AS created_at,
       event_xid::text AS event_xid
  FROM @extschema@.send_job_events
 WHERE job_id = $1
