-- Flow control and its use, of every queue that has some ($1 NULL) or of one.
SELECT queue, paused, max_in_flight, in_flight, rate, burst, tokens, limited,
       round(extract(epoch FROM retry_after), 1)::text AS retry_after_s
  FROM @extschema@.sendjobs_queue_limits($1::text)
 ORDER BY queue
