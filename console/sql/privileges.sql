-- What the console's role may do, asked of the database with each function's full
-- signature ($1: the extension's schema, quoted): the pages show only the actions it
-- allows, and the columns and tables it may read.
SELECT current_user::text AS role,
       has_function_privilege(format('%s.sendjobs_stats()', $1::text), 'EXECUTE') AS stats,
       has_function_privilege(format('%s.sendjobs_queue_limits(text)', $1::text), 'EXECUTE') AS queue_limits,
       has_function_privilege(format('%s.sendjobs_redrive(bigint[])', $1::text), 'EXECUTE') AS redrive,
       has_function_privilege(format('%s.sendjobs_cancel(bigint)', $1::text), 'EXECUTE') AS cancel,
       has_function_privilege(format('%s.sendjobs_pause(text)', $1::text), 'EXECUTE') AS pause,
       has_function_privilege(format('%s.sendjobs_resume(text)', $1::text), 'EXECUTE') AS resume,
       has_function_privilege(format('%s.sendjobs_unblock_key(text)', $1::text), 'EXECUTE') AS unblock,
       has_function_privilege(format('%s.sendjobs_limit(text, integer, double precision, integer)', $1::text), 'EXECUTE') AS limit,
       has_column_privilege(format('%s.send_jobs', $1::text), 'payload', 'SELECT') AS payload,
       has_table_privilege(format('%s.send_job_keys', $1::text), 'SELECT') AS keys,
       has_table_privilege(format('%s.sendjobs_transaction_link', $1::text), 'SELECT') AS link,
       has_table_privilege(format('%s.sendjobs_blocked_keys', $1::text), 'SELECT') AS blocked,
       has_column_privilege(format('%s.send_jobs_finished', $1::text), 'status', 'SELECT') AS finished,
       has_table_privilege(format('%s.send_job_attempts', $1::text), 'SELECT') AS attempts
