--- params: queue text, now timestamptz
--- columns: queue, paused, max_in_flight, in_flight, rate, burst, tokens, limited, retry_after
-- sendjobs_queue_limits (src/flow/settings.rs): the flow control of queue $1 (NULL: each
-- queue that has some) at $2, the first limit that holds now, and when it may lift by itself.
SELECT q.queue, q.paused, q.max_in_flight, f.in_flight, q.rate, q.burst, b.tokens,
       CASE WHEN q.paused THEN 'paused'
            WHEN f.in_flight >= q.max_in_flight THEN 'max_in_flight'
            WHEN b.tokens < 1 THEN 'rate' END AS limited,
       CASE WHEN q.paused THEN NULL
            WHEN f.in_flight >= q.max_in_flight THEN f.first_end - $2
            WHEN b.tokens < 1 THEN pg_catalog.make_interval(secs => (1 - b.tokens) / q.rate) END AS retry_after
  FROM @extschema@.sendjobs_queues AS q
 CROSS JOIN LATERAL (
       SELECT count(*) AS in_flight, min(j.lease_expires_at) AS first_end
         FROM ONLY @extschema@.send_jobs AS j
        WHERE j.lease_expires_at > $2 AND j.lease_expires_at IS NOT NULL AND j.queue = q.queue) AS f
 CROSS JOIN LATERAL (
       SELECT least(q.burst, q.tokens + q.rate
                    * greatest(0, pg_catalog.date_part('epoch', $2 - q.tokens_at))) AS tokens) AS b
 WHERE (q.queue = $1 OR $1 IS NULL)
   AND (q.paused OR q.max_in_flight IS NOT NULL OR q.rate IS NOT NULL)
 ORDER BY q.queue COLLATE "C"
