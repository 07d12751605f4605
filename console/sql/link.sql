-- The business table the finalizes stamp (read only when the role may read the link),
-- whether the role may read its key and status, and the statement that reads one row's
-- status: identifiers from the catalog, quoted by format's %I and regclass's output; the
-- transaction id is the statement's parameter, cast to the key's type so that the key's
-- index serves it.
SELECT l.tbl::text AS tbl, l.key_column::text AS key_column, l.status_column::text AS status_column,
       has_column_privilege(l.tbl, l.key_column, 'SELECT')
           AND has_column_privilege(l.tbl, l.status_column, 'SELECT') AS readable,
       format('SELECT %I::text FROM %s WHERE %I = $1::text::%s',
              l.status_column, l.tbl, l.key_column, format_type(a.atttypid, a.atttypmod)) AS statement
  FROM @extschema@.sendjobs_transaction_link AS l
  JOIN pg_attribute AS a ON a.attrelid = l.tbl AND a.attname = l.key_column
