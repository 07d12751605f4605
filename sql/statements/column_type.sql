-- The SQL type of live column $2 of table $1, as format_type spells it (src/catalog.rs).
SELECT pg_catalog.format_type(atttypid, atttypmod)
  FROM pg_catalog.pg_attribute
 WHERE attrelid = $1 AND attname = $2 AND attnum > 0 AND NOT attisdropped
