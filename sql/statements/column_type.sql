--- params: tbl oid, column_name text
--- columns: sql_type
-- The SQL type of live column $2 of table $1, as format_type spells it (src/guards/catalog.rs).
SELECT pg_catalog.format_type(atttypid, atttypmod) AS sql_type
  FROM pg_catalog.pg_attribute
 WHERE attrelid = $1 AND attname = $2 AND attnum > 0 AND NOT attisdropped
