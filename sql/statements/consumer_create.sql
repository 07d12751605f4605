--- params: consumer text, from_start bool, now timestamptz, reader oid, wake bool
--- columns: consumer
-- sendjobs_create_consumer (src/verbs/outbox.rs): a consumer that has passed every event
-- visible now, or none ('1:1:') with from_start; as read_events.sql takes a batch.
INSERT INTO @extschema@.sendjobs_consumers (consumer, passed, created_at, reader, wake)
VALUES ($1, CASE WHEN $2 THEN '1:1:'::pg_catalog.pg_snapshot
                ELSE (SELECT (least(pg_catalog.pg_snapshot_xmin(now.s), coalesce(now.own, pg_catalog.pg_snapshot_xmin(now.s)))::pg_catalog.text OPERATOR(pg_catalog.||) ':'
                 OPERATOR(pg_catalog.||) pg_catalog.pg_snapshot_xmax(now.s)::pg_catalog.text OPERATOR(pg_catalog.||) ':'
                 OPERATOR(pg_catalog.||) coalesce((SELECT pg_catalog.string_agg(x::pg_catalog.text, ',' ORDER BY x)
                                                     FROM (SELECT pg_catalog.pg_snapshot_xip(now.s) AS x
                                                           UNION SELECT now.own WHERE now.own < pg_catalog.pg_snapshot_xmax(now.s)) AS xs
                                                    WHERE x IS NOT NULL), ''))::pg_catalog.pg_snapshot
           FROM (SELECT pg_catalog.pg_current_snapshot() AS s, pg_catalog.pg_current_xact_id_if_assigned() AS own) AS now) END, $3, $4, $5)
ON CONFLICT (consumer) DO NOTHING
RETURNING consumer
