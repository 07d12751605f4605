-- The state rule of send_jobs (src/job_state.rs), added once its function exists.
ALTER TABLE @extschema@.send_jobs ADD CONSTRAINT send_jobs_state_check
    CHECK (@extschema@.sendjobs_job_state_is_valid(status, attempts, max_attempts,
               claim_generation, claimed_at, lease_expires_at, finished_at));
