-- sendjobs_link_transactions (src/link.rs): declare (or replace) the one link.
-- $1 tbl (regclass), $2 key_column, $3 status_column, $4 on_sent, $5 on_failed,
-- $6 on_redrive, $7 the role that links it (the caller: stamps run as it).
INSERT INTO @extschema@.sendjobs_transaction_link
       (tbl, key_column, status_column, on_sent, on_failed, on_redrive, linked_by)
VALUES ($1, $2::name, $3::name, $4, $5, $6, $7::pg_catalog.regrole)
ON CONFLICT (singleton) DO UPDATE
   SET tbl = EXCLUDED.tbl, key_column = EXCLUDED.key_column,
       status_column = EXCLUDED.status_column,
       on_sent = EXCLUDED.on_sent, on_failed = EXCLUDED.on_failed,
       on_redrive = EXCLUDED.on_redrive, linked_by = EXCLUDED.linked_by
