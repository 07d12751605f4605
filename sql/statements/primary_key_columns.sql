--- params: tbl oid
--- columns: attnum, attname
-- The primary key columns of table $1, in key order (src/guards/guard.rs: names a refused row).
SELECT a.attnum::int4 AS attnum, a.attname::text AS attname
  FROM pg_catalog.pg_index i
  JOIN pg_catalog.pg_attribute a
    ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey::int2[])
 WHERE i.indrelid = $1 AND i.indisprimary
 ORDER BY pg_catalog.array_position(i.indkey::int2[], a.attnum)
