--- params: none
--- columns: stamp_sql, on_sent, on_failed, tbl, missing_column, key_type, on_redrive, linked_by, linker_exists, search_path
-- The current link (src/verbs/link.rs), as stamping needs it: the stamp statement, built
-- from the catalog at each use (a renamed table still works), a dropped or renamed column
-- named, the linker, and the search_path the stamp runs with: pg_catalog, the schemas of
-- the table and of its two columns' types, pg_temp; never the caller's (decision 0005).
SELECT pg_catalog.format('UPDATE %s SET %I = CAST($1 AS %s) WHERE %I = CAST($2 AS %s)',
           link.tbl, link.status_column,
           pg_catalog.format_type(status_col.atttypid, status_col.atttypmod),
           link.key_column,
           pg_catalog.format_type(key_col.atttypid, key_col.atttypmod)) AS stamp_sql,
       link.on_sent,
       link.on_failed,
       link.tbl::pg_catalog.text AS tbl,
       CASE WHEN status_col.attnum IS NULL THEN link.status_column::pg_catalog.text
            WHEN key_col.attnum IS NULL THEN link.key_column::pg_catalog.text END AS missing_column,
       pg_catalog.format_type(key_col.atttypid, key_col.atttypmod) AS key_type,
       link.on_redrive,
       link.linked_by::pg_catalog.oid AS linked_by,
       EXISTS (SELECT FROM pg_catalog.pg_roles AS r WHERE r.oid = link.linked_by::pg_catalog.oid) AS linker_exists,
       (SELECT pg_catalog.concat_ws(', ', 'pg_catalog', pg_catalog.string_agg(pg_catalog.quote_ident(s.nspname), ', ' ORDER BY s.rank), 'pg_temp')
          FROM (SELECT n.nspname, pg_catalog.min(schemas.rank) AS rank
                  FROM (VALUES (1, (SELECT c.relnamespace FROM pg_catalog.pg_class AS c WHERE c.oid = link.tbl)),
                               (2, (SELECT t.typnamespace FROM pg_catalog.pg_type AS t WHERE t.oid = key_col.atttypid)),
                               (3, (SELECT t.typnamespace FROM pg_catalog.pg_type AS t WHERE t.oid = status_col.atttypid)))
                       AS schemas (rank, namespace)
                  JOIN pg_catalog.pg_namespace AS n ON n.oid = schemas.namespace
                 WHERE n.nspname <> 'pg_catalog'
                 GROUP BY n.nspname) AS s) AS search_path
  FROM @extschema@.sendjobs_transaction_link AS link
  LEFT JOIN pg_catalog.pg_attribute AS status_col
         ON status_col.attrelid = link.tbl AND status_col.attname = link.status_column
        AND NOT status_col.attisdropped
  LEFT JOIN pg_catalog.pg_attribute AS key_col
         ON key_col.attrelid = link.tbl AND key_col.attname = link.key_column
        AND NOT key_col.attisdropped
