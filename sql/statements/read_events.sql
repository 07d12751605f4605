--- params: consumer text, max int8, now timestamptz
--- columns: job_id, transaction_id, kind, claim_generation, created_at, queue
-- sendjobs_read_events (src/verbs/outbox.rs), second statement: up to $2 events of the
-- consumer's batch after its read position, and the position moved past them. A batch
-- is the events visible in `batch` and not in `passed` (the last batch's), so each event
-- is in exactly one batch whatever order their transactions committed in (decision
-- 0011). No batch open: this statement's snapshot is taken as one, with the caller's own
-- transaction counted as in progress (tests/isolation/specs/outbox-own-transaction.spec).
-- A call that reads fewer than $2 ends the batch: it becomes `passed`.
WITH reader AS MATERIALIZED (
    SELECT consumer, passed,
           coalesce(batch, (SELECT (least(pg_catalog.pg_snapshot_xmin(now.s), coalesce(now.own, pg_catalog.pg_snapshot_xmin(now.s)))::pg_catalog.text OPERATOR(pg_catalog.||) ':'
                 OPERATOR(pg_catalog.||) pg_catalog.pg_snapshot_xmax(now.s)::pg_catalog.text OPERATOR(pg_catalog.||) ':'
                 OPERATOR(pg_catalog.||) coalesce((SELECT pg_catalog.string_agg(x::pg_catalog.text, ',' ORDER BY x)
                                                     FROM (SELECT pg_catalog.pg_snapshot_xip(now.s) AS x
                                                           UNION SELECT now.own WHERE now.own < pg_catalog.pg_snapshot_xmax(now.s)) AS xs
                                                    WHERE x IS NOT NULL), ''))::pg_catalog.pg_snapshot
           FROM (SELECT pg_catalog.pg_current_snapshot() AS s, pg_catalog.pg_current_xact_id_if_assigned() AS own) AS now)) AS batch,
           coalesce(read_xid, '0'::pg_catalog.xid8) AS read_xid,
           coalesce(read_id, 0) AS read_id
      FROM @extschema@.sendjobs_consumers WHERE consumer = $1
),
events AS MATERIALIZED (
    SELECT job.id, job.transaction_id, job.status, job.claim_generation, job.finished_at,
           job.queue, job.event_xid
      FROM reader
     CROSS JOIN LATERAL (
           SELECT job.* FROM @extschema@.send_jobs_finished AS job
            WHERE job.event_xid >= greatest(pg_catalog.pg_snapshot_xmin(reader.passed), reader.read_xid)
              AND job.event_xid < pg_catalog.pg_snapshot_xmax(reader.batch)
              AND (job.event_xid, job.id) > (reader.read_xid, reader.read_id)
              AND pg_catalog.pg_visible_in_snapshot(job.event_xid, reader.batch)
              AND NOT pg_catalog.pg_visible_in_snapshot(job.event_xid, reader.passed)
            ORDER BY job.event_xid, job.id
            LIMIT $2) AS job
),
last AS (
    SELECT event_xid, id, (SELECT pg_catalog.count(*) FROM events) < $2 AS batch_done
      FROM events ORDER BY event_xid DESC, id DESC LIMIT 1
),
moved AS (
    UPDATE @extschema@.sendjobs_consumers AS c
       SET passed = CASE WHEN coalesce(last.batch_done, true) THEN r.batch ELSE c.passed END,
           batch = CASE WHEN coalesce(last.batch_done, true) THEN NULL ELSE r.batch END,
           read_xid = CASE WHEN coalesce(last.batch_done, true) THEN NULL ELSE last.event_xid END,
           read_id = CASE WHEN coalesce(last.batch_done, true) THEN NULL ELSE last.id END,
           read_at = $3
      FROM reader AS r
      LEFT JOIN last ON true
     WHERE c.consumer = r.consumer
)
SELECT id AS job_id, transaction_id, status AS kind, claim_generation,
       finished_at AS created_at, queue
  FROM events
 ORDER BY event_xid, id
