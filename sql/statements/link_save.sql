--- params: tbl regclass, key_column text, status_column text, on_sent text, on_failed text, on_redrive text, linked_by oid
--- columns: none
-- sendjobs_link_transactions (src/verbs/link.rs): declare (or replace) the one link.
-- $7 is the role that links it: the caller; stamps run as it.
INSERT INTO @extschema@.sendjobs_transaction_link
       (tbl, key_column, status_column, on_sent, on_failed, on_redrive, linked_by)
VALUES ($1, $2::name, $3::name, $4, $5, $6, $7::pg_catalog.regrole)
ON CONFLICT (singleton) DO UPDATE
   SET tbl = EXCLUDED.tbl, key_column = EXCLUDED.key_column,
       status_column = EXCLUDED.status_column,
       on_sent = EXCLUDED.on_sent, on_failed = EXCLUDED.on_failed,
       on_redrive = EXCLUDED.on_redrive, linked_by = EXCLUDED.linked_by
