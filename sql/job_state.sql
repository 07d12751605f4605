-- The CHECKs of send_jobs and send_jobs_finished (src/guards/job_state.rs), added once
-- their function exists: one per table, each keeping its rows in their table (a statement
-- that finished a job in place fails) and their columns in agreement with their status. The
-- history's also says its statuses as a list, which the planner reads: a query of
-- send_jobs for status 'pending' or 'in_flight' skips send_jobs_finished (constraint
-- exclusion: tests/pg_regress/sql/vacuum.sql; decision 0014).
ALTER TABLE ONLY @extschema@.send_jobs ADD CONSTRAINT send_jobs_live_check
    CHECK (@extschema@.sendjobs_job_state_is_valid(status, attempts, max_attempts,
               claim_generation, claimed_at, lease_expires_at, finished_at, true)) NO INHERIT;
ALTER TABLE @extschema@.send_jobs_finished ADD CONSTRAINT send_jobs_finished_check
    CHECK (status OPERATOR(pg_catalog.=) ANY (ARRAY['sent', 'failed', 'cancelled'])
           AND @extschema@.sendjobs_job_state_is_valid(status, attempts, max_attempts,
               claim_generation, claimed_at, lease_expires_at, finished_at, false));
