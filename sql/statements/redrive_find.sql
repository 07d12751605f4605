-- sendjobs_redrive: the job that redrove job $1 (committed after the redrive's snapshot).
SELECT id FROM @extschema@.send_jobs WHERE redrive_of = $1
