--- params: id int8, error text
--- columns: none
-- sendjobs_claim (src/verbs/claim.rs): job $1 gave up, but its business row could not be
-- stamped (error $2): say so in last_error. The job stays failed, in send_jobs_finished.
UPDATE @extschema@.send_jobs
   SET last_error = pg_catalog.concat(last_error, '; its business row was not stamped: ', $2)
 WHERE id = $1
