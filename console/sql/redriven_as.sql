-- The job that redrives $1, if any (send_jobs_redrive_of_idx, send_jobs_finished_redrive_of_idx).
SELECT id, status FROM @extschema@.send_jobs WHERE redrive_of = $1
