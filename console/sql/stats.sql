-- The queues page: sendjobs_stats(), one row per queue with work or recent events.
SELECT queue, ready, scheduled, in_flight, expired, at_last_attempt,
       date_trunc('second', oldest_ready_age)::text AS oldest_ready_age,
       sent_5m, failed_5m, cancelled_5m, estimated, dead_tuples,
       date_trunc('second', oldest_xmin_age)::text AS oldest_xmin_age, paused
  FROM @extschema@.sendjobs_stats()
 ORDER BY queue
