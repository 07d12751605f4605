-- The current link (src/link.rs), as what stamping needs: the stamp statement, built from
-- the catalog at each use so a renamed table still works; on_sent and on_failed; the
-- table's name and a missing column's name (a dropped or renamed column is reported,
-- not ignored); the key column's type (to check a transaction_id at enqueue); on_redrive.
SELECT pg_catalog.format('UPDATE %s SET %I = CAST($1 AS %s) WHERE %I = CAST($2 AS %s)',
           link.tbl, link.status_column,
           pg_catalog.format_type(status_col.atttypid, status_col.atttypmod),
           link.key_column,
           pg_catalog.format_type(key_col.atttypid, key_col.atttypmod)),
       link.on_sent,
       link.on_failed,
       link.tbl::pg_catalog.text,
       CASE WHEN status_col.attnum IS NULL THEN link.status_column::pg_catalog.text
            WHEN key_col.attnum IS NULL THEN link.key_column::pg_catalog.text END,
       pg_catalog.format_type(key_col.atttypid, key_col.atttypmod),
       link.on_redrive
  FROM @extschema@.sendjobs_transaction_link AS link
  LEFT JOIN pg_catalog.pg_attribute AS status_col
         ON status_col.attrelid = link.tbl AND status_col.attname = link.status_column
        AND NOT status_col.attisdropped
  LEFT JOIN pg_catalog.pg_attribute AS key_col
         ON key_col.attrelid = link.tbl AND key_col.attname = link.key_column
        AND NOT key_col.attisdropped
