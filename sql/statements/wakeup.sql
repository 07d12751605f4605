--- params: queue text
--- columns: notified
-- sendjobs_enqueue and sendjobs_resume (src/machinery/wakeup.rs): wake the workers of queue
-- $1, at commit.
SELECT pg_catalog.pg_notify('sendjobs_wakeup', $1) AS notified
